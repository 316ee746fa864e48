"""Compiled (numba) walks shared by the SHAP value and SHAP interaction kernels.

:mod:`explainers.shap._tree_kernels` (order 1: SHAP values) and
:mod:`explainers.shap._interaction_kernels` (order 2: interaction values) walk the
trees the same way and differ only in what a leaf adds:

* :func:`iv_pair_walk`: the interventional walk of every (row, background row)
  pair, for trees without tables (``textbook_iv_rows`` and ``iv_direct_rows``);
* :func:`build_iv_count_tables`: the background rows counted per (leaf, set of
  path features they do not follow), folded into the interventional leaf
  tables of either order (``build_iv_tables`` and ``build_iv_interaction_tables``);
* inline pieces of the row-block kernels: their work arrays, loading a block
  of rows, the explicit depth-first stack, a block of leaf sums added to one
  output column or all of them, a block's pair sums added into ``out``.

``order`` is 1 or 2; arrays an order does not use are passed as small dummies.
Callers pass flags as ``np.int64`` / ``np.bool_`` values, not literals: numba would
compile a literal argument into a specialisation of its own, one per order.

An inline helper that takes arrays and branches (or loops inside a branch)
keeps numba from pruning the reference counting of those arrays: each call
then costs atomic increments, several times the work of a small helper. Such
helpers here run once per tree or work on a whole block of rows per call; the
code a walk runs per node, or per leaf and row, is written out in the walk.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..trees.walks import goes_left

__all__ = [
    "iv_pair_walk",
    "build_iv_count_tables",
    "popcount",
    "walk_stack",
    "load_block",
    "tree_root",
    "pop",
    "push_children",
    "add_block",
    "scatter_pairs",
]


# ------------------------------------------------------------ small pieces
@njit(cache=True, nogil=True, inline="always")
def popcount(x):
    """Number of set bits of ``x >= 0``."""
    k = 0
    while x:
        x &= x - 1
        k += 1
    return k


@njit(cache=True, nogil=True, inline="always")
def walk_stack(D):
    """An explicit depth-first stack for trees of depth ``D - 2``: node, level, parent,
    and whether the node is its parent's left child."""
    S = 2 * D + 2
    return np.empty(S, np.int64), np.empty(S, np.int64), np.empty(S, np.int64), np.empty(S, np.bool_)


@njit(cache=True, nogil=True, inline="always")
def load_block(X, rows, b0, nb, xb):
    """``xb[j, r] = X[rows[b0 + r], j]``: the block's rows feature-major, so each node
    reads one contiguous run."""
    for r in range(nb):
        row = rows[b0 + r]
        for j in range(X.shape[1]):
            xb[j, r] = X[row, j]


@njit(cache=True, nogil=True, inline="always")
def tree_root(trees, ti, node_offsets, tree_output, n_raw, st_node, st_lvl, st_par, st_left):
    """Put tree ``trees[ti]``'s root on the stack: ``(single, c0, sp)``.

    ``single``: one value column serves the tree's leaves (``c0``, its column).
    """
    t = trees[ti]
    col = tree_output[t]
    st_node[0] = node_offsets[t]
    st_lvl[0] = 0
    st_par[0] = -1
    st_left[0] = True
    return col >= 0 or n_raw == 1, (col if col >= 0 else 0), 1


@njit(cache=True, nogil=True, inline="always")
def pop(st_node, st_lvl, sp):
    """Take the top of a depth-first stack: ``(sp - 1, node, level)``."""
    sp -= 1
    return sp, st_node[sp], st_lvl[sp]


@njit(cache=True, nogil=True, inline="always")
def push_children(st_node, st_lvl, st_par, st_left, sp, node, L, left, right):
    """Push ``node``'s children (the left one on top); returns the new stack size."""
    st_node[sp] = right[node]
    st_lvl[sp] = L + 1
    st_par[sp] = node
    st_left[sp] = False
    st_node[sp + 1] = left[node]
    st_lvl[sp + 1] = L + 1
    st_par[sp + 1] = node
    st_left[sp + 1] = True
    return sp + 2


@njit(cache=True, nogil=True, inline="always")
def add_block(acc, idx, single, c0, sv, nb, value, node):
    """``acc[(c,) + idx][r] += sv[r]`` (times the leaf's value ``value[node, c]``
    unless ``single``: then its value is folded in and only column ``c0`` gets it)."""
    if single:
        ac = acc[(c0,) + idx]
        for r in range(nb):
            ac[r] += sv[r]
    else:
        for c in range(value.shape[1]):
            vc = value[node, c]
            ac = acc[(c,) + idx]
            for r in range(nb):
                ac[r] += sv[r] * vc


@njit(cache=True, nogil=True, inline="always")
def scatter_pairs(acc, rows, b0, nb, out):
    """``out[rows[b0 + r], i, j, c] += acc[c, i, j, r]`` for the block's rows."""
    p = acc.shape[1]
    n_raw = acc.shape[0]
    for r in range(nb):
        row = rows[b0 + r]
        for i in range(p):
            for j in range(p):
                for c in range(n_raw):
                    out[row, i, j, c] += acc[c, i, j, r]


# ---------------------------------------------------- (row, background) walk
@njit(cache=True, nogil=True, inline="always")
def _push_assigned(st_node, st_lvl, st_af, st_ak, sp, node, L, fa, side):
    """Push ``node`` at level ``L``, entered assigning feature ``fa`` (-1: none) to ``side``
    (1 from x, 2 from the background row); returns the new stack size."""
    st_node[sp] = node
    st_lvl[sp] = L
    st_af[sp] = fa
    st_ak[sp] = side
    return sp + 1


@njit(cache=True, nogil=True)
def iv_pair_walk(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start,
                 cat_bits, masked, bg, value, tree_output, max_depth, order, w1, w2, w3, out, pred, out2):
    """Walk every (row, background row) pair down ``trees`` (interventional, no tables).

    A node where the two rows part ways makes its feature a player: one branch
    takes it from x (set A), the other from the background row (set B); a
    feature already assigned keeps its side, and a masked feature follows the
    background row. A leaf reached with ``|A| = a``, ``|B| = t`` adds, divided
    by the background size, for ``order`` 1 ``v w1(a, t)`` to A's features and
    ``-v w2(a, t)`` to B's in ``out[row, f, c]`` and ``v`` to ``pred[row, c]``
    when B is empty; for ``order`` 2 ``v w1``, ``v w2`` or ``v w3(a, t)`` to
    ``out2[row, f1, f2, c]`` for each pair of players (both in A, one in each,
    both in B).
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
    lvl_f = np.full(D, -1, np.int64)  # feature assigned on entering the node at each level
    lvl_k = np.zeros(D, np.int64)
    state = np.zeros(p, np.int64)  # 0 free, 1 from x (A), 2 from background (B)
    for ri in range(rows.shape[0]):
        row = rows[ri]
        for ti in range(trees.shape[0]):
            t = trees[ti]
            col = tree_output[t]
            c_lo = col if col >= 0 else 0  # the tree's output columns
            c_hi = col + 1 if col >= 0 else n_raw
            for b in range(B):
                cur = -1
                na = 0
                nbk = 0
                sp = _push_assigned(st_node, st_lvl, st_af, st_ak, 0, node_offsets[t], 0, -1, 0)
                while sp > 0:
                    sp, node, L = pop(st_node, st_lvl, sp)
                    # undo the assignments of the levels being left
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
                        if order == 1:
                            if na + nbk > 0:
                                wa = w1[na, nbk] * inv_b
                                wb = -w2[na, nbk] * inv_b
                                for q in range(L + 1):
                                    fa = lvl_f[q]
                                    if fa < 0:
                                        continue
                                    s = wa if lvl_k[q] == 1 else wb
                                    for c in range(c_lo, c_hi):
                                        out[row, fa, c] += s * value[node, c]
                            if nbk == 0:
                                for c in range(c_lo, c_hi):
                                    pred[row, c] += inv_b * value[node, c]
                        elif na + nbk >= 2:
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
                                        w = w1[na, nbk]
                                    elif k1 == 2 and k2 == 2:
                                        w = w3[na, nbk]
                                    else:
                                        w = w2[na, nbk]
                                    w *= inv_b
                                    for c in range(c_lo, c_hi):
                                        out2[row, f1, f2, c] += w * value[node, c]
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
                    sp = _push_assigned(st_node, st_lvl, st_af, st_ak, sp, nxt_a, L + 1, fa, 1)
                    if nxt_b >= 0:
                        sp = _push_assigned(st_node, st_lvl, st_af, st_ak, sp, nxt_b, L + 1, fa, 2)
                # leave the state clean for the next pair
                while cur >= 0:
                    fa = lvl_f[cur]
                    if fa >= 0:
                        state[fa] = 0
                    cur -= 1


# ------------------------------------------------------- background counts
@njit(cache=True, nogil=True)
def build_iv_count_tables(trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                          node_bit, leaf_m, leaf_toff, bg, max_depth, order, w0, w1, w2, counts, table, leaf_lw):
    """Count background rows per (leaf, Y) and fold the counts into the leaf tables.

    Every entry ``U`` gets ``sum_{Y disjoint from U} n_Y w(|Y|, |U| - shift) / B`` for
    each (table, weights, shift) of the order: ``R0 R1 G`` = (c, 0), (c, 1), (c', 0)
    for order 1, ``F0 F1 F2 G0 G1 E`` = (c2, 0), (c2, 1), (c2, 2), (c3, 0), (c3, 1),
    (c4, 0) for order 2, with ``w0 w1 w2`` the order's weights in that order. Order 1
    also writes ``leaf_lw``, the share of background rows that agree with the
    leaf on the masked features; order 2 skips leaves with ``leaf_m < 2`` (no
    pairs, no entries). ``counts`` must be zero on the entries of ``trees``.
    """
    B = bg.shape[0]
    inv_b = 1.0 / B
    D = max_depth + 2
    min_m = 0 if order == 1 else 2
    n_tab = 3 if order == 1 else 6
    st_node = np.empty(2 * D + 2, np.int64)
    st_t = np.empty(2 * D + 2, np.int64)
    for ti in range(trees.shape[0]):
        t = trees[ti]
        for b in range(B):
            st_node[0] = node_offsets[t]
            st_t[0] = 0
            sp = 1
            while sp > 0:
                sp, node, T = pop(st_node, st_t, sp)
                if left[node] < 0:
                    if leaf_m[node] >= min_m:
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
            if left[node] >= 0 or leaf_m[node] < min_m:
                continue
            m = leaf_m[node]
            to = leaf_toff[node]
            full = (1 << m) - 1
            total = 0.0
            for Y in range(full + 1):
                n = counts[to + Y]
                if n == 0.0:
                    continue
                total += n
                a = popcount(Y)
                comp = full ^ Y
                U = comp  # every U disjoint from Y: the submasks of its complement
                while True:
                    # order 1: R0 R1 G (w0 = c, w1 = c'); order 2: F0 F1 F2 G0 G1 E (w0 = c2, w1 = c3, w2 = c4)
                    k = popcount(U)
                    e = to + U
                    table[0, e] += n * w0[a, k]
                    if k >= 1:
                        table[1, e] += n * w0[a, k - 1]
                    if order == 1:
                        table[2, e] += n * w1[a, k]
                    else:
                        table[3, e] += n * w1[a, k]
                        table[5, e] += n * w2[a, k]
                        if k >= 1:
                            table[4, e] += n * w1[a, k - 1]
                        if k >= 2:
                            table[2, e] += n * w0[a, k - 2]
                    if U == 0:
                        break
                    U = (U - 1) & comp
            for U in range(full + 1):
                for q in range(n_tab):
                    table[q, to + U] *= inv_b
            if order == 1:
                leaf_lw[node] = total * inv_b
