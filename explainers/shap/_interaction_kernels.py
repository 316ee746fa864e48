"""Compiled (numba) kernels behind SHAP interaction values of tree models.

SHAP interaction values (Lundberg et al. 2020) split the Shapley interaction
index in two halves, one for (i, j) and one for (j, i)::

    Phi_ij = 1/2 sum_{S subset of N minus {i, j}} w2(|S|) [v(S+i+j) - v(S+i) - v(S+j) + v(S)]
    w2(s)  = s! (M-s-2)! / (M-1)!

and put ``phi_i - sum_{j != i} Phi_ij`` on the diagonal (computed by the caller
from the SHAP values). As for :mod:`explainers.shap._tree_kernels`, every leaf is
a small game of its own path features and the row enters it only through the
set ``T`` of path features whose split the row does not follow:

**Path-dependent** (cover-weighted value function): a leaf with distinct path
features ``D`` (``m = |D|``), cover-ratio products ``z_d`` and value ``v`` is the
product game ``v_l(S) = v prod_{d in D} (o_d if d in S else z_d)`` with ``o_d = 0``
for ``d`` in ``T`` and 1 otherwise. Features off the path are null players and
drop out (the index keeps its form with ``m`` in place of ``M``), and
``(o_a - z_a)(o_b - z_b)`` factors out of the double difference, so::

    Phi_ab(T) = 1/2 gamma_a gamma_b K2(T + a + b),
    K2(U)     = Z(U) sum_{S subset of D minus U} w2_m(|S|) Z(D minus U minus S)
    gamma_a   = -1 if a in T else (1 - z_a) / z_a

One table ``K2`` of ``2**m`` entries per leaf (built by the same subset
recursion as the SHAP tables, with ``w2`` for weights), and ``m (m-1) / 2``
look-ups per row and leaf. Leaves with a zero cover ratio, trees whose tables
would be too large, and rows of rare missing patterns take the linear walk
instead (:func:`explainers.shap._linear_kernels.linear_pd_interaction_rows`:
the same values as integrals of one polynomial per leaf, cost linear in depth,
no division by ``z``).

**Interventional** (mean over background rows ``b``): the pair (x, b) reaches a
leaf for the coalitions that take every feature of ``T`` from ``b`` and every
feature of ``Y`` (the path features ``b`` does not follow) from ``x``: the game
``[Y subset of S][S and T disjoint]``, whose interaction index is, with
``a = |Y|``, ``t = |T|``::

    both in Y: 1/2 (a-2)! t! / (a+t-1)!      one in each: -1/2 (a-1)! (t-1)! / (a+t-1)!
    both in T: 1/2 a! (t-2)! / (a+t-1)!

Summed over the background per leaf and ``T`` (inclusion-exclusion over ``Y``
containing ``a`` and ``b``) it takes six tables ``F0 F1 F2 G0 G1 E``; a row then
costs the same whatever the background size. :func:`iv_direct_rows` walks each
(row, background row) pair instead, for trees without tables. Both walks are
those of the SHAP values (:mod:`explainers.shap._walk_kernels`, order 2).

All row kernels add raw (unscaled) tree sums into ``out[row, a, b, c]`` with
``(a, b)`` in path order, leaving the diagonal alone: the caller adds the
transpose. They write only the rows given (threads split the rows) and release
the GIL.
"""
from __future__ import annotations

from math import factorial

import numpy as np
from numba import njit

from ._tree_kernels import row_bits
from ._walk_kernels import (add_block, build_iv_count_tables, iv_pair_walk, load_block, pop, push_children,
                            scatter_pairs, tree_root, walk_stack)

__all__ = [
    "pd_interaction_weights",
    "iv_interaction_weights",
    "build_iv_interaction_tables",
    "pd_table_rows",
    "iv_table_rows",
    "iv_direct_rows",
]


def pd_interaction_weights(max_m: int) -> np.ndarray:
    """``w2[m, s] = 1/2 s! (m-s-2)! / (m-1)!`` for 0 <= s <= m-2 (0 elsewhere)."""
    w = np.zeros((max_m + 1, max_m + 1))
    for m in range(2, max_m + 1):
        for s in range(m - 1):
            w[m, s] = 0.5 * factorial(s) * factorial(m - s - 2) / factorial(m - 1)
    return w


def iv_interaction_weights(max_m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interaction index of the game ``[Y subset of S][S and T disjoint]``, halved.

    Returns ``(c2, c3, c4)`` indexed by ``[a, t]`` (``a = |Y|``, ``t = |T|``): for
    two features of Y, for one of Y and one of T (negative), and for two of T.
    Entries that no pair can use are 0.
    """
    c2 = np.zeros((max_m + 1, max_m + 1))
    c3 = np.zeros((max_m + 1, max_m + 1))
    c4 = np.zeros((max_m + 1, max_m + 1))
    for a in range(max_m + 1):
        for t in range(max_m + 1 - a):
            n = a + t
            if n < 2:
                continue
            den = factorial(n - 1)
            if a >= 2:
                c2[a, t] = 0.5 * factorial(a - 2) * factorial(t) / den
            if a >= 1 and t >= 1:
                c3[a, t] = -0.5 * factorial(a - 1) * factorial(t - 1) / den
            if t >= 2:
                c4[a, t] = 0.5 * factorial(a) * factorial(t - 2) / den
    return c2, c3, c4


# ------------------------------------------------------------ table builder
@njit(cache=True, nogil=True)
def build_iv_interaction_tables(trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                                node_bit, leaf_m, leaf_toff, bg, max_depth, c2, c3, c4, counts,
                                table):
    """Count background rows per (leaf, Y) and fold the counts into the six tables.

    ``table`` has shape (6, n_entries): ``F0 F1 F2 G0 G1 E`` with
    ``Fk(U) = sum_{Y disjoint from U} n_Y c2(|Y|, |U| - k) / B`` (likewise ``Gk``
    with ``c3``, ``E`` with ``c4``). ``counts`` must be zero on the entries of
    ``trees``; leaves with ``leaf_m < 2`` have no entries
    (:func:`._walk_kernels.build_iv_count_tables`, order 2).
    """
    build_iv_count_tables(trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                          node_bit, leaf_m, leaf_toff, bg, max_depth, np.int64(2), c2, c3, c4, counts, table,
                          np.ones(1))


# -------------------------------------------------------------- row kernels
@njit(cache=True, nogil=True)
def pd_table_rows(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                  node_bit, leaf_m, leaf_foff, flat_feat, flat_coef, leaf_toff, tab, value,
                  tree_output, max_depth, max_bits, block, out):
    """Path-dependent interaction values of ``X[rows]`` from the leaf tables K2.

    ``tab`` holds ``1/2 lw K2`` per leaf (times the leaf value for single-output
    trees); ``flat_coef`` holds ``(1 - z) / z``. See :func:`_pair_table_rows`.
    """
    _pair_table_rows(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start,
                     cat_bits, node_bit, leaf_m, leaf_foff, flat_feat, flat_coef, leaf_toff,
                     tab.reshape(1, tab.shape[0]), np.bool_(False), value, tree_output, max_depth, max_bits, block,
                     out)


@njit(cache=True, nogil=True)
def iv_table_rows(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                  node_bit, leaf_m, leaf_foff, flat_feat, leaf_toff, tab, value, tree_output,
                  max_depth, block, out):
    """Interventional interaction values of ``X[rows]`` from the six leaf tables.

    ``tab`` (6, n_entries) from :func:`build_iv_interaction_tables`, times the
    leaf value for single-output trees. See :func:`_pair_table_rows`.
    """
    _pair_table_rows(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start,
                     cat_bits, node_bit, leaf_m, leaf_foff, flat_feat, np.zeros(1), leaf_toff, tab, np.bool_(True), value,
                     tree_output, max_depth, np.int64(0), block, out)


@njit(cache=True, nogil=True)
def _pair_table_rows(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start,
                     cat_bits, node_bit, leaf_m, leaf_foff, flat_feat, flat_coef, leaf_toff, tab, interventional,
                     value, tree_output, max_depth, max_bits, block, out):
    """Interaction values of ``X[rows]`` from the leaf tables (``tab[0]``: K2, or the six of
    :func:`build_iv_interaction_tables` when ``interventional``).

    Rows go through the trees in blocks of ``block``: every row carries its T
    down both children of every node (so it visits every leaf), and the loops
    over the rows of a block are branch-free so that they vectorise. For a row
    with set T and path features a, b, path-dependent tables give
    ``gamma_a gamma_b K2(T + a + b)`` (``gamma = (1 - z) / z``, or -1 in T);
    interventional ones::

        a, b not in T:  F0(T) - F1(T+a) - F1(T+b) + F2(T+a+b)
        a not in T, b in T:  G0(T) - G1(T+a)
        a, b in T:  E(T)
    """
    p = X.shape[1]
    n_raw = value.shape[1]
    D = max_depth + 2
    buf = np.zeros((D, block), np.int64)
    xb = np.empty((p, block))
    st_node, st_lvl, st_par, st_left = walk_stack(D)
    acc = np.zeros((n_raw, p, p, block))
    g = np.empty((max_bits + 1, block))
    ta = np.empty((max_bits + 1, block), np.int64)
    sv = np.empty(block)
    nr = rows.shape[0]
    for b0 in range(0, nr, block):
        nb = min(block, nr - b0)
        load_block(X, rows, b0, nb, xb)
        acc[:, :, :, :] = 0.0
        for ti in range(trees.shape[0]):
            single, c0, sp = tree_root(trees, ti, node_offsets, tree_output, n_raw, st_node, st_lvl, st_par, st_left)
            while sp > 0:
                sp, node, L = pop(st_node, st_lvl, sp)
                if L > 0:
                    par = st_par[sp]
                    row_bits(buf[L], buf[L - 1], nb, node_bit[par], xb[feature[par]], par, threshold,
                             missing_left, cat_start, cat_bits, st_left[sp])
                if left[node] >= 0:
                    sp = push_children(st_node, st_lvl, st_par, st_left, sp, node, L, left, right)
                    continue
                m = leaf_m[node]
                if m < 2:
                    continue
                fo = leaf_foff[node]
                to = leaf_toff[node]
                bl = buf[L]
                if interventional:
                    F0 = tab[0, to:]
                    F1 = tab[1, to:]
                    F2 = tab[2, to:]
                    G0 = tab[3, to:]
                    G1 = tab[4, to:]
                    E = tab[5, to:]
                    for a in range(m - 1):
                        fa = flat_feat[fo + a]
                        ba = np.int64(1) << a
                        for b in range(a + 1, m):
                            fb = flat_feat[fo + b]
                            bb = np.int64(1) << b
                            for r in range(nb):
                                T = bl[r]
                                ia = (T & ba) != 0
                                ib = (T & bb) != 0
                                if ia:
                                    if ib:
                                        sv[r] = E[T]
                                    else:
                                        sv[r] = G0[T] - G1[T | bb]
                                elif ib:
                                    sv[r] = G0[T] - G1[T | ba]
                                else:
                                    sv[r] = F0[T] - F1[T | ba] - F1[T | bb] + F2[T | ba | bb]
                            add_block(acc, (fa, fb), single, c0, sv, nb, value, node)
                    continue
                tl = tab[0, to:]
                for a in range(m):
                    bm = np.int64(1) << a
                    ci = flat_coef[fo + a]
                    cneg = -1.0 - ci
                    ga = g[a]
                    tq = ta[a]
                    for r in range(nb):
                        T = bl[r]
                        ga[r] = ci + (cneg if (T >> a) & 1 else 0.0)
                        tq[r] = T | bm
                for a in range(m - 1):
                    fa = flat_feat[fo + a]
                    ga = g[a]
                    tq = ta[a]
                    for b in range(a + 1, m):
                        fb = flat_feat[fo + b]
                        bmb = np.int64(1) << b
                        gb = g[b]
                        if single:
                            ac = acc[c0, fa, fb]
                            for r in range(nb):
                                ac[r] += tl[tq[r] | bmb] * ga[r] * gb[r]
                        else:
                            for r in range(nb):
                                sv[r] = tl[tq[r] | bmb] * ga[r] * gb[r]
                            add_block(acc, (fa, fb), False, c0, sv, nb, value, node)
        scatter_pairs(acc, rows, b0, nb, out)


# ------------------------------------------------------------- direct paths
@njit(cache=True, nogil=True)
def iv_direct_rows(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                   masked, bg, value, tree_output, max_depth, c2, c3, c4, out):
    """Interventional interaction values by walking every (row, background row) pair.

    As :func:`explainers.shap._tree_kernels.textbook_iv_rows`: where the two rows
    part ways the feature becomes a player, taken from x on one branch (set Y,
    here ``A``) and from the background row on the other (set T, here ``B``).
    A leaf reached with ``|A| = a``, ``|B| = t`` adds ``v c2(a, t)``, ``v c3(a, t)``
    or ``v c4(a, t)`` (divided by the background size) to each pair of its
    players, by the sides they are on (:func:`._walk_kernels.iv_pair_walk`, order 2).
    """
    iv_pair_walk(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                 masked, bg, value, tree_output, max_depth, np.int64(2), c2, c3, c4, np.zeros((1, 1, 1)),
                 np.zeros((1, 1)), out)
