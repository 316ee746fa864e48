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
would be too large, and rows of rare missing patterns go through
:func:`pd_direct_rows` instead, which evaluates the same formula per (row, leaf)
from the polynomial ``prod_{d not in T} (z_d + y)`` with no division by ``z``.

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
(row, background row) pair instead, for trees without tables.

All row kernels add raw (unscaled) tree sums into ``out[row, a, b, c]`` with
``(a, b)`` in path order, leaving the diagonal alone: the caller adds the
transpose. They write only the rows given (threads split the rows) and release
the GIL.
"""
from __future__ import annotations

from math import factorial

import numpy as np
from numba import njit

from ..trees.walks import goes_left
from ._tree_kernels import row_bits

__all__ = [
    "pd_interaction_weights",
    "iv_interaction_weights",
    "build_iv_interaction_tables",
    "pd_table_rows",
    "iv_table_rows",
    "pd_direct_rows",
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
    ``trees``; leaves with ``leaf_m < 2`` have no entries.
    """
    B = bg.shape[0]
    inv_b = 1.0 / B
    D = max_depth + 2
    st_node = np.empty(2 * D + 2, np.int64)
    st_t = np.empty(2 * D + 2, np.int64)
    for ti in range(trees.shape[0]):
        t = trees[ti]
        for b in range(B):
            st_node[0] = node_offsets[t]
            st_t[0] = 0
            sp = 1
            while sp > 0:
                sp -= 1
                node = st_node[sp]
                T = st_t[sp]
                if left[node] < 0:
                    if leaf_m[node] >= 2:
                        counts[leaf_toff[node] + T] += 1.0
                    continue
                gl = goes_left(bg[b, feature[node]], node, threshold, missing_left, cat_start, cat_bits)
                bit = node_bit[node]
                if bit < 0:
                    # masked: the background row decides, no player
                    st_node[sp] = left[node] if gl else right[node]
                    st_t[sp] = T
                    sp += 1
                else:
                    mask = np.int64(1) << bit
                    st_node[sp] = left[node]
                    st_t[sp] = T if gl else T | mask
                    st_node[sp + 1] = right[node]
                    st_t[sp + 1] = T | mask if gl else T
                    sp += 2
        for node in range(node_offsets[t], node_offsets[t + 1]):
            if left[node] >= 0 or leaf_m[node] < 2:
                continue
            m = leaf_m[node]
            to = leaf_toff[node]
            full = (1 << m) - 1
            for Y in range(full + 1):
                n = counts[to + Y]
                if n == 0.0:
                    continue
                a = 0
                y = Y
                while y:
                    y &= y - 1
                    a += 1
                comp = full ^ Y
                U = comp  # every U disjoint from Y: the submasks of its complement
                while True:
                    k = 0
                    u = U
                    while u:
                        u &= u - 1
                        k += 1
                    e = to + U
                    table[0, e] += n * c2[a, k]
                    table[3, e] += n * c3[a, k]
                    table[5, e] += n * c4[a, k]
                    if k >= 1:
                        table[1, e] += n * c2[a, k - 1]
                        table[4, e] += n * c3[a, k - 1]
                    if k >= 2:
                        table[2, e] += n * c2[a, k - 2]
                    if U == 0:
                        break
                    U = (U - 1) & comp
            for U in range(full + 1):
                for q in range(6):
                    table[q, to + U] *= inv_b


# -------------------------------------------------------------- row kernels
@njit(cache=True, nogil=True)
def pd_table_rows(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                  node_bit, leaf_m, leaf_foff, flat_feat, flat_coef, leaf_toff, tab, value,
                  tree_output, max_depth, max_bits, block, out):
    """Path-dependent interaction values of ``X[rows]`` from the leaf tables K2.

    ``tab`` holds ``1/2 lw K2`` per leaf (times the leaf value for single-output
    trees); ``flat_coef`` holds ``(1 - z) / z``. Rows go through the trees in
    blocks of ``block``: every row carries its T down both children of every
    node (so it visits every leaf), and the loops over the rows of a block are
    branch-free so that they vectorise.
    """
    p = X.shape[1]
    n_raw = value.shape[1]
    D = max_depth + 2
    buf = np.zeros((D, block), np.int64)
    xb = np.empty((p, block))
    st_node = np.empty(2 * D + 2, np.int64)
    st_lvl = np.empty(2 * D + 2, np.int64)
    st_par = np.empty(2 * D + 2, np.int64)
    st_left = np.empty(2 * D + 2, np.bool_)
    acc = np.zeros((n_raw, p, p, block))
    g = np.empty((max_bits + 1, block))
    ta = np.empty((max_bits + 1, block), np.int64)
    sv = np.empty(block)
    nr = rows.shape[0]
    for b0 in range(0, nr, block):
        nb = min(block, nr - b0)
        for r in range(nb):
            row = rows[b0 + r]
            for j in range(p):
                xb[j, r] = X[row, j]
        acc[:, :, :, :] = 0.0
        for ti in range(trees.shape[0]):
            t = trees[ti]
            col = tree_output[t]
            single = col >= 0 or n_raw == 1
            c0 = col if col >= 0 else 0
            st_node[0] = node_offsets[t]
            st_lvl[0] = 0
            st_par[0] = -1
            st_left[0] = True
            sp = 1
            while sp > 0:
                sp -= 1
                node = st_node[sp]
                L = st_lvl[sp]
                if L > 0:
                    par = st_par[sp]
                    row_bits(buf[L], buf[L - 1], nb, node_bit[par], xb[feature[par]], par, threshold,
                             missing_left, cat_start, cat_bits, st_left[sp])
                if left[node] >= 0:
                    st_node[sp] = right[node]
                    st_lvl[sp] = L + 1
                    st_par[sp] = node
                    st_left[sp] = False
                    st_node[sp + 1] = left[node]
                    st_lvl[sp + 1] = L + 1
                    st_par[sp + 1] = node
                    st_left[sp + 1] = True
                    sp += 2
                    continue
                m = leaf_m[node]
                if m < 2:
                    continue
                fo = leaf_foff[node]
                tl = tab[leaf_toff[node]:]
                bl = buf[L]
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
                            for c in range(n_raw):
                                vc = value[node, c]
                                ac = acc[c, fa, fb]
                                for r in range(nb):
                                    ac[r] += sv[r] * vc
        for r in range(nb):
            row = rows[b0 + r]
            for i in range(p):
                for j in range(p):
                    for c in range(n_raw):
                        out[row, i, j, c] += acc[c, i, j, r]


@njit(cache=True, nogil=True)
def iv_table_rows(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                  node_bit, leaf_m, leaf_foff, flat_feat, leaf_toff, tab, value, tree_output,
                  max_depth, block, out):
    """Interventional interaction values of ``X[rows]`` from the six leaf tables.

    ``tab`` (6, n_entries) from :func:`build_iv_interaction_tables`, times the
    leaf value for single-output trees. For a row with set T and path features
    a, b::

        a, b not in T:  F0(T) - F1(T+a) - F1(T+b) + F2(T+a+b)
        a not in T, b in T:  G0(T) - G1(T+a)
        a, b in T:  E(T)
    """
    p = X.shape[1]
    n_raw = value.shape[1]
    D = max_depth + 2
    buf = np.zeros((D, block), np.int64)
    xb = np.empty((p, block))
    st_node = np.empty(2 * D + 2, np.int64)
    st_lvl = np.empty(2 * D + 2, np.int64)
    st_par = np.empty(2 * D + 2, np.int64)
    st_left = np.empty(2 * D + 2, np.bool_)
    acc = np.zeros((n_raw, p, p, block))
    sv = np.empty(block)
    nr = rows.shape[0]
    for b0 in range(0, nr, block):
        nb = min(block, nr - b0)
        for r in range(nb):
            row = rows[b0 + r]
            for j in range(p):
                xb[j, r] = X[row, j]
        acc[:, :, :, :] = 0.0
        for ti in range(trees.shape[0]):
            t = trees[ti]
            col = tree_output[t]
            single = col >= 0 or n_raw == 1
            c0 = col if col >= 0 else 0
            st_node[0] = node_offsets[t]
            st_lvl[0] = 0
            st_par[0] = -1
            st_left[0] = True
            sp = 1
            while sp > 0:
                sp -= 1
                node = st_node[sp]
                L = st_lvl[sp]
                if L > 0:
                    par = st_par[sp]
                    row_bits(buf[L], buf[L - 1], nb, node_bit[par], xb[feature[par]], par, threshold,
                             missing_left, cat_start, cat_bits, st_left[sp])
                if left[node] >= 0:
                    st_node[sp] = right[node]
                    st_lvl[sp] = L + 1
                    st_par[sp] = node
                    st_left[sp] = False
                    st_node[sp + 1] = left[node]
                    st_lvl[sp + 1] = L + 1
                    st_par[sp + 1] = node
                    st_left[sp + 1] = True
                    sp += 2
                    continue
                m = leaf_m[node]
                if m < 2:
                    continue
                fo = leaf_foff[node]
                to = leaf_toff[node]
                F0 = tab[0, to:]
                F1 = tab[1, to:]
                F2 = tab[2, to:]
                G0 = tab[3, to:]
                G1 = tab[4, to:]
                E = tab[5, to:]
                bl = buf[L]
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
                        if single:
                            ac = acc[c0, fa, fb]
                            for r in range(nb):
                                ac[r] += sv[r]
                        else:
                            for c in range(n_raw):
                                vc = value[node, c]
                                ac = acc[c, fa, fb]
                                for r in range(nb):
                                    ac[r] += sv[r] * vc
        for r in range(nb):
            row = rows[b0 + r]
            for i in range(p):
                for j in range(p):
                    for c in range(n_raw):
                        out[row, i, j, c] += acc[c, i, j, r]


# ------------------------------------------------------------- direct paths
@njit(cache=True, nogil=True, inline="always")
def _h2(coef, deg, w2m):
    h = 0.0
    for s in range(deg + 1):
        h += w2m[s] * coef[s]
    return h


@njit(cache=True, nogil=True, inline="always")
def _divide(src, deg, z, dst):
    """``dst = src / (y + z)`` for a polynomial of degree ``deg`` that has the factor.

    Top down: the errors are multiplied by ``z <= 1`` at each step, so it is stable.
    """
    if deg == 0:
        return
    dst[deg - 1] = src[deg]
    for k in range(deg - 1, 0, -1):
        dst[k - 1] = src[k] - z * dst[k]


@njit(cache=True, nogil=True)
def pd_direct_rows(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                   cover, masked, value, tree_output, max_depth, w2, out):
    """Path-dependent interaction values per (row, leaf), without tables.

    Each row walks each tree depth first, keeping per level the distinct
    unmasked features of the path with their cover-ratio products ``z`` and
    whether the row follows all their splits (``o``); a masked feature only
    scales the path by its cover ratio. At a leaf with ``Q`` the features the
    row follows and ``P(y) = prod_{d in Q} (z_d + y)``, ``H2(R) = sum_s w2_m(s) [y^s] R``::

        a, b in Q:       1/2 (1 - z_a)(1 - z_b) Z(T) H2(P / ((y + z_a)(y + z_b)))
        a in Q, b in T:  -1/2 (1 - z_a) Z(T) H2(P / (y + z_a))
        a, b in T:       1/2 Z(T) H2(P)

    (``w2`` carries the 1/2.) O(m**3) per row and leaf: the fallback for large,
    zero-cover or rare-pattern cases.
    """
    n_raw = value.shape[1]
    D = max_depth + 2
    lv_feat = np.empty((D, D), np.int64)
    lv_z = np.empty((D, D))
    lv_o = np.empty((D, D), np.bool_)
    lv_m = np.zeros(D, np.int64)
    lv_lw = np.ones(D)
    st_node = np.empty(2 * D + 2, np.int64)
    st_lvl = np.empty(2 * D + 2, np.int64)
    st_par = np.empty(2 * D + 2, np.int64)
    qi = np.empty(D, np.int64)
    ti_ = np.empty(D, np.int64)
    P = np.zeros(D + 1)
    Ra = np.zeros(D + 1)
    Rab = np.zeros(D + 1)
    phi = np.empty((D, D))
    for ri in range(rows.shape[0]):
        row = rows[ri]
        for tt in range(trees.shape[0]):
            t = trees[tt]
            col = tree_output[t]
            st_node[0] = node_offsets[t]
            st_lvl[0] = 0
            st_par[0] = -1
            sp = 1
            while sp > 0:
                sp -= 1
                node = st_node[sp]
                L = st_lvl[sp]
                par = st_par[sp]
                if L == 0:
                    lv_m[0] = 0
                    lv_lw[0] = 1.0
                else:
                    mm = lv_m[L - 1]
                    for i in range(mm):
                        lv_feat[L, i] = lv_feat[L - 1, i]
                        lv_z[L, i] = lv_z[L - 1, i]
                        lv_o[L, i] = lv_o[L - 1, i]
                    lv_lw[L] = lv_lw[L - 1]
                    r = cover[node] / cover[par] if cover[par] > 0 else 0.0
                    f = feature[par]
                    if masked[f]:
                        lv_lw[L] *= r
                    else:
                        gl = goes_left(X[row, f], par, threshold, missing_left, cat_start, cat_bits)
                        follows = (node == left[par]) == gl
                        j = 0
                        while j < mm and lv_feat[L, j] != f:
                            j += 1
                        if j == mm:
                            lv_feat[L, mm] = f
                            lv_z[L, mm] = r
                            lv_o[L, mm] = follows
                            mm += 1
                        else:
                            lv_z[L, j] *= r
                            lv_o[L, j] = lv_o[L, j] and follows
                    lv_m[L] = mm
                if left[node] >= 0:
                    st_node[sp] = right[node]
                    st_lvl[sp] = L + 1
                    st_par[sp] = node
                    st_node[sp + 1] = left[node]
                    st_lvl[sp + 1] = L + 1
                    st_par[sp + 1] = node
                    sp += 2
                    continue
                m = lv_m[L]
                lw = lv_lw[L]
                if m < 2 or lw == 0.0:
                    continue
                w2m = w2[m]
                nq = 0
                nt = 0
                zt = 1.0
                P[0] = 1.0
                for i in range(m):
                    if lv_o[L, i]:
                        z = lv_z[L, i]
                        # multiply P (degree nq) by (y + z)
                        P[nq + 1] = P[nq]
                        for k in range(nq, 0, -1):
                            P[k] = P[k - 1] + z * P[k]
                        P[0] = z * P[0]
                        qi[nq] = i
                        nq += 1
                    else:
                        zt *= lv_z[L, i]
                        ti_[nt] = i
                        nt += 1
                hq = _h2(P, nq, w2m) * zt
                for x1 in range(nt):
                    for x2 in range(x1 + 1, nt):
                        phi[ti_[x1], ti_[x2]] = hq
                for x1 in range(nq):
                    a = qi[x1]
                    za = lv_z[L, a]
                    _divide(P, nq, za, Ra)
                    ca = (1.0 - za) * zt
                    ha = -ca * _h2(Ra, nq - 1, w2m)
                    for x2 in range(nt):
                        phi[a, ti_[x2]] = ha
                    for x2 in range(x1 + 1, nq):
                        b = qi[x2]
                        zb = lv_z[L, b]
                        _divide(Ra, nq - 1, zb, Rab)
                        phi[a, b] = ca * (1.0 - zb) * _h2(Rab, nq - 2, w2m)
                for a in range(m):
                    fa = lv_feat[L, a]
                    oa = lv_o[L, a]
                    for b in range(a + 1, m):
                        fb = lv_feat[L, b]
                        # mixed pairs were written as phi[followed, not followed]
                        s = lw * (phi[b, a] if (lv_o[L, b] and not oa) else phi[a, b])
                        if col >= 0:
                            out[row, fa, fb, col] += s * value[node, col]
                        else:
                            for c in range(n_raw):
                                out[row, fa, fb, c] += s * value[node, c]


@njit(cache=True, nogil=True)
def iv_direct_rows(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                   masked, bg, value, tree_output, max_depth, c2, c3, c4, out):
    """Interventional interaction values by walking every (row, background row) pair.

    As :func:`explainers.shap._tree_kernels.textbook_iv_rows`: where the two rows
    part ways the feature becomes a player, taken from x on one branch (set Y,
    here ``A``) and from the background row on the other (set T, here ``B``).
    A leaf reached with ``|A| = a``, ``|B| = t`` adds ``v c2(a, t)``, ``v c3(a, t)``
    or ``v c4(a, t)`` (divided by the background size) to each pair of its
    players, by the sides they are on.
    """
    n_raw = value.shape[1]
    p = X.shape[1]
    B = bg.shape[0]
    inv_b = 1.0 / B
    D = max_depth + 2
    S = 2 * D + 2
    st_node = np.empty(S, np.int64)
    st_lvl = np.empty(S, np.int64)
    st_af = np.empty(S, np.int64)
    st_ak = np.empty(S, np.int64)
    lvl_f = np.full(D, -1, np.int64)
    lvl_k = np.zeros(D, np.int64)
    state = np.zeros(p, np.int64)  # 0 free, 1 from x (A), 2 from background (B)
    for ri in range(rows.shape[0]):
        row = rows[ri]
        for ti in range(trees.shape[0]):
            t = trees[ti]
            col = tree_output[t]
            for b in range(B):
                cur = -1
                na = 0
                nbk = 0
                st_node[0] = node_offsets[t]
                st_lvl[0] = 0
                st_af[0] = -1
                st_ak[0] = 0
                sp = 1
                while sp > 0:
                    sp -= 1
                    node = st_node[sp]
                    L = st_lvl[sp]
                    while cur >= L:
                        fa = lvl_f[cur]
                        if fa >= 0:
                            if lvl_k[cur] == 1:
                                na -= 1
                            else:
                                nbk -= 1
                            state[fa] = 0
                        cur -= 1
                    cur = L
                    lvl_f[L] = st_af[sp]
                    lvl_k[L] = st_ak[sp]
                    if st_af[sp] >= 0:
                        state[st_af[sp]] = st_ak[sp]
                        if st_ak[sp] == 1:
                            na += 1
                        else:
                            nbk += 1
                    if left[node] < 0:
                        if na + nbk >= 2:
                            for q1 in range(L + 1):
                                f1 = lvl_f[q1]
                                if f1 < 0:
                                    continue
                                k1 = lvl_k[q1]
                                for q2 in range(q1 + 1, L + 1):
                                    f2 = lvl_f[q2]
                                    if f2 < 0:
                                        continue
                                    k2 = lvl_k[q2]
                                    if k1 == 1 and k2 == 1:
                                        w = c2[na, nbk]
                                    elif k1 == 2 and k2 == 2:
                                        w = c4[na, nbk]
                                    else:
                                        w = c3[na, nbk]
                                    w *= inv_b
                                    if col >= 0:
                                        out[row, f1, f2, col] += w * value[node, col]
                                    else:
                                        for c in range(n_raw):
                                            out[row, f1, f2, c] += w * value[node, c]
                        continue
                    f = feature[node]
                    bl = goes_left(bg[b, f], node, threshold, missing_left, cat_start, cat_bits)
                    bchild = left[node] if bl else right[node]
                    if masked[f]:
                        nxt_a = bchild
                        nxt_b = -1
                        fa = -1
                    else:
                        xl = goes_left(X[row, f], node, threshold, missing_left, cat_start, cat_bits)
                        xchild = left[node] if xl else right[node]
                        if xl == bl or state[f] == 1:
                            nxt_a = xchild
                            nxt_b = -1
                            fa = -1
                        elif state[f] == 2:
                            nxt_a = bchild
                            nxt_b = -1
                            fa = -1
                        else:
                            nxt_a = xchild
                            nxt_b = bchild
                            fa = f
                    st_node[sp] = nxt_a
                    st_lvl[sp] = L + 1
                    st_af[sp] = fa
                    st_ak[sp] = 1
                    sp += 1
                    if nxt_b >= 0:
                        st_node[sp] = nxt_b
                        st_lvl[sp] = L + 1
                        st_af[sp] = fa
                        st_ak[sp] = 2
                        sp += 1
                while cur >= 0:
                    fa = lvl_f[cur]
                    if fa >= 0:
                        state[fa] = 0
                    cur -= 1
