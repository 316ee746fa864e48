"""Compiled (numba) kernels behind :class:`explainers.shap.TreeShap`.

Two exact algorithms, chosen per tree by :mod:`explainers.shap.tree`:

**Leaf tables** (fast path, in the spirit of FastTreeSHAP v2). Fix a leaf ``l``
whose root path splits on the distinct (unmasked) features ``D`` (``m = |D|``,
features repeated on the path count once). For a row ``x`` let ``T`` be the set
of path features whose split ``x`` does *not* follow (a bitmask over ``D``, in
the order the features first appear on the path). Everything the leaf
contributes to the row's SHAP values depends on ``x`` only through ``T``:

* path-dependent (Lundberg et al. 2020, Alg. 2): with ``z_d`` the product of the
  cover ratios of the path's nodes on feature ``d`` and ``w(s) = s!(m-s-1)!/m!``,
  the leaf adds ``-v K(T)`` to every ``i`` in ``T`` and
  ``v (1 - z_i) / z_i K(T + i)`` to every other ``i`` in ``D``, where
  ``K(T) = Z(T) sum_{S subset of D\\T} w(|S|) Z(D\\T\\S)`` and ``Z(A)`` is the
  product of ``z`` over ``A``;
* interventional: a background row ``b`` has its own set ``Y`` of path features
  it does not follow. The pair (x, b) reaches the leaf for the coalitions that
  take every feature of ``T`` from ``b`` and every feature of ``Y`` from ``x``
  (``T`` and ``Y`` must be disjoint), a game whose Shapley values are
  ``c(|Y|, |T|) = (|Y|-1)! |T|! / (|Y|+|T|)!`` for features in ``Y`` and
  ``-c'(|Y|, |T|) = -|Y|! (|T|-1)! / (|Y|+|T|)!`` for features in ``T``.
  Summing over the background once, per ``T``, gives three tables
  ``R0(T) - R1(T + i)`` (features ``x`` follows) and ``-G(T)`` (features in ``T``),
  so a row costs the same whatever the background size.

So each leaf gets a table of ``2**m`` entries, built once per model (and per
missing-feature pattern). A row then walks each tree once, carrying ``T`` down
both children of every node (a row block of 128 rows at a time, so the tree and
its tables stay in cache), and does ``m`` table look-ups per leaf: O(L m) per
row and tree instead of the O(L D**2) of the textbook recursion. Two sibling
leaves of a single-output tree share their path features, so their
path-dependent tables are merged into one pair table (:func:`merge_pd_pairs`):
``m`` look-ups serve both leaves.

**Textbook recursion** (fallback, for trees whose tables would be too big):
Algorithm 2 of Lundberg et al. for path-dependent values and the per
(row, background row) recursion for interventional values, both written without
recursion so numba compiles them quickly. The interventional walk and table
builder are shared with the interaction values (:mod:`explainers.shap._walk_kernels`).

Masked (missing) features are not players: a path-dependent row goes down both
children of a node that splits on one, weighted by cover; an interventional row
follows the background row there. All kernels add into caller-owned arrays,
write only the rows they are given (threads split the rows), and release the GIL.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..trees.walks import goes_left
from ._walk_kernels import (build_iv_count_tables, iv_pair_walk, load_block, pop, push_children, tree_root,
                            walk_stack)

__all__ = [
    "BLOCK",
    "leaf_paths",
    "build_pd_tables",
    "build_iv_tables",
    "merge_pd_pairs",
    "table_rows",
    "textbook_pd_rows",
    "textbook_iv_rows",
    "shapley_pd_weights",
    "shapley_iv_weights",
]

#: rows processed together per tree by the table kernel
BLOCK = 128


def shapley_pd_weights(max_m: int) -> np.ndarray:
    """``w[m, s] = s! (m-s-1)! / m!`` for 0 <= s < m <= max_m (0 elsewhere)."""
    from math import factorial

    w = np.zeros((max_m + 1, max_m + 1))
    for m in range(1, max_m + 1):
        for s in range(m):
            w[m, s] = factorial(s) * factorial(m - s - 1) / factorial(m)
    return w


def shapley_iv_weights(max_m: int) -> tuple[np.ndarray, np.ndarray]:
    """``c[a, t] = (a-1)! t! / (a+t)!`` (a >= 1) and ``cp[a, t] = a! (t-1)! / (a+t)!`` (t >= 1).

    The Shapley values of the game "1 if every feature of A comes from x and
    every feature of B from the background row" for a feature of A (``c``) and,
    negated, for a feature of B (``cp``), with ``a = |A|``, ``t = |B|``.
    """
    from math import factorial

    c = np.zeros((max_m + 1, max_m + 1))
    cp = np.zeros((max_m + 1, max_m + 1))
    for a in range(max_m + 1):
        for t in range(max_m + 1 - a):
            if a >= 1:
                c[a, t] = factorial(a - 1) * factorial(t) / factorial(a + t)
            if t >= 1:
                cp[a, t] = factorial(a) * factorial(t - 1) / factorial(a + t)
    return c, cp


@njit(cache=True, nogil=True, inline="always")
def _decisions(xf, nb, node, threshold, missing_left, cat_start, cat_bits, out):
    """``out[r]`` = 0.0 where row r goes left at ``node``, 1.0 where it goes right.

    A categorical rule takes a loop without data-dependent branches: the code is
    clamped into the set's range before its bit is read, and selects pick the
    answer for NaN and for codes outside the set's words.
    """
    s = cat_start[node]
    flags = cat_bits[s + 1]
    if flags & 1:
        k = cat_bits[s]
        lim = 64.0 * k
        top = 64 * k - 1
        miss = 0.0 if missing_left[node] != 0 else 1.0
        other = 0.0 if (flags & 2) != 0 else 1.0
        for r in range(nb):
            x = xf[r]
            inside = (x >= 0.0) & (x < lim)  # False for NaN
            c = np.int64(min(max(x, 0.0), top)) if x == x else 0
            bit = (cat_bits[s + 2 + (c >> 6)] >> (c & 63)) & 1
            d = 1.0 - bit if inside else other
            out[r] = miss if x != x else d
        return
    for r in range(nb):
        out[r] = 0.0 if goes_left(xf[r], node, threshold, missing_left, cat_start, cat_bits) else 1.0


@njit(cache=True, nogil=True, inline="always")
def row_bits(bl, bp, nb, bit, xf, node, threshold, missing_left, cat_start, cat_bits, is_left):
    """T of a child from its parent's for a block of rows: add the parent's bit
    (``node`` is the parent) where the row goes the other way than this child."""
    if bit < 0:
        for r in range(nb):
            bl[r] = bp[r]
        return
    mask = np.int64(1) << bit
    if cat_start[node] < 0:  # a plain split: branch-free, so the loop vectorises
        thr = threshold[node]
        ml = missing_left[node] != 0
        for r in range(nb):
            x = xf[r]
            gl = ml if x != x else x <= thr
            bl[r] = bp[r] | (0 if gl == is_left else mask)
    else:
        # the rule's decisions first (0 left, 1 right; reusing bl as scratch is not
        # possible: bp may alias it), then the same branch-free update
        dec = np.empty(nb)
        _decisions(xf, nb, node, threshold, missing_left, cat_start, cat_bits, dec)
        want = 0.0 if is_left else 1.0
        for r in range(nb):
            bl[r] = bp[r] | (0 if dec[r] == want else mask)


# --------------------------------------------------------------- leaf paths
@njit(cache=True, nogil=True)
def leaf_paths(feature, left, right, cover, node_offsets, masked, max_depth, fill,
               leaf_foff, node_bit, leaf_m, leaf_lw, flat_feat, flat_z):
    """Walk every tree once and describe each leaf's root path.

    With ``fill=False`` it writes ``node_bit`` (the bit of a node's split feature
    among its path's distinct unmasked features, -1 on a masked feature),
    ``leaf_m`` (number of distinct unmasked features on a leaf's path, -1 at
    internal nodes) and ``leaf_lw`` (product of the cover ratios of the masked
    nodes on the path). With ``fill=True`` it also writes, from ``leaf_foff[leaf]``
    on, each leaf's features (``flat_feat``) and their cover-ratio products ``z``
    (``flat_z``).
    """
    tree_leaf_paths(0, node_offsets.shape[0] - 1, False, feature, left, right, cover, node_offsets, masked,
                    max_depth, fill, leaf_foff, node_bit, leaf_m, leaf_lw, flat_feat, flat_z)


@njit(cache=True, nogil=True, inline="always")
def tree_leaf_paths(t0, t1, relative, feature, left, right, cover, node_offsets, masked, max_depth, fill,
                    leaf_foff, node_bit, leaf_m, leaf_lw, flat_feat, flat_z):
    """:func:`leaf_paths` for the trees ``t0 .. t1 - 1``; with ``relative`` the per-node
    outputs are indexed by the node's place in its tree (``node - node_offsets[t]``)."""
    D = max_depth + 2
    lv_feat = np.empty((D, D), np.int64)
    lv_z = np.empty((D, D))
    lv_m = np.zeros(D, np.int64)
    lv_lw = np.ones(D)
    st_node = np.empty(2 * D + 2, np.int64)
    st_lvl = np.empty(2 * D + 2, np.int64)
    st_par = np.empty(2 * D + 2, np.int64)
    for t in range(t0, t1):
        o0 = node_offsets[t] if relative else 0
        st_node[0] = node_offsets[t]
        st_lvl[0] = 0
        st_par[0] = -1
        sp = 1
        while sp > 0:
            sp, node, L = pop(st_node, st_lvl, sp)
            par = st_par[sp]
            if L == 0:
                lv_m[0] = 0
                lv_lw[0] = 1.0
            else:
                mm = lv_m[L - 1]
                for i in range(mm):
                    lv_feat[L, i] = lv_feat[L - 1, i]
                    lv_z[L, i] = lv_z[L - 1, i]
                lv_lw[L] = lv_lw[L - 1]
                r = cover[node] / cover[par] if cover[par] > 0 else 0.0
                f = feature[par]
                if masked[f]:
                    lv_lw[L] *= r
                else:
                    j = node_bit[par - o0]
                    if j == mm:
                        lv_feat[L, mm] = f
                        lv_z[L, mm] = r
                        mm += 1
                    else:
                        lv_z[L, j] *= r
                lv_m[L] = mm
            if left[node] < 0:
                mm = lv_m[L]
                leaf_m[node - o0] = mm
                leaf_lw[node - o0] = lv_lw[L]
                if fill:
                    o = leaf_foff[node - o0]
                    for i in range(mm):
                        flat_feat[o + i] = lv_feat[L, i]
                        flat_z[o + i] = lv_z[L, i]
            else:
                f = feature[node]
                if masked[f]:
                    node_bit[node - o0] = -1
                else:
                    mm = lv_m[L]
                    j = 0
                    while j < mm and lv_feat[L, j] != f:
                        j += 1
                    node_bit[node - o0] = j
                st_node[sp] = right[node]
                st_lvl[sp] = L + 1
                st_par[sp] = node
                st_node[sp + 1] = left[node]
                st_lvl[sp + 1] = L + 1
                st_par[sp + 1] = node
                sp += 2


# ------------------------------------------------------------ table builders
@njit(cache=True, nogil=True)
def build_pd_tables(leaves, leaf_m, leaf_foff, flat_z, leaf_lw, leaf_toff, wtab, max_m, table):
    """Fill ``table[0, toff + T] = lw Z(T) H(D \\ T)`` for the given leaves.

    ``H(Q) = sum_{S subset of Q} w(|S|) Z(Q \\ S)`` comes from the coefficients of
    ``prod_{d in Q} (z_d + y)``, built for every subset from the subset less its
    lowest bit.
    """
    size_max = 1 << max_m
    E = np.zeros((size_max, max_m + 1))
    Zq = np.empty(size_max)
    H = np.empty(size_max)
    for li in range(leaves.shape[0]):
        leaf = leaves[li]
        m = leaf_m[leaf]
        fo = leaf_foff[leaf]
        to = leaf_toff[leaf]
        size = 1 << m
        full = size - 1
        Zq[0] = 1.0
        E[0, 0] = 1.0
        for s in range(1, m + 1):
            E[0, s] = 0.0
        H[0] = wtab[m, 0]
        for Q in range(1, size):
            low = Q & (-Q)
            i = 0
            while (low >> i) != 1:
                i += 1
            par = Q ^ low
            z = flat_z[fo + i]
            Zq[Q] = Zq[par] * z
            h = 0.0
            E[Q, 0] = E[par, 0] * z
            h += wtab[m, 0] * E[Q, 0]
            for s in range(1, m + 1):
                e = E[par, s] * z + E[par, s - 1]
                E[Q, s] = e
                h += wtab[m, s] * e
            H[Q] = h
        lw = leaf_lw[leaf]
        for T in range(size):
            table[0, to + T] = lw * Zq[T] * H[full ^ T]


@njit(cache=True, nogil=True)
def merge_pd_pairs(parents, left, right, node_bit, leaf_m, leaf_foff, flat_coef, leaf_toff, table):
    """Merge the K tables of sibling leaves into one pair table P and a bit table Q.

    Both leaves of a parent that splits on the path bit ``b`` share their path
    features and the row's T except on bit ``b``: with ``T1`` the left leaf's T
    and ``T2`` the right one's, ``U = T1 + 2**m [b in T2]`` names every possible
    pair. ``P[U] = K1(T1) + K2(T2)`` serves the other features exactly as one
    leaf's K does (adding a feature to U adds it to both T), and ``Q[U]`` is the
    pair's attribution to the split feature itself. P replaces the left leaf's
    table and Q the right one's; each region holds ``2**(m+1)`` entries, and
    the values must already be folded in (single-output trees only).
    """
    for pi in range(parents.shape[0]):
        node = parents[pi]
        ln = left[node]
        rn = right[node]
        m = leaf_m[ln]
        b = node_bit[node]
        bb = 1 << b
        size = 1 << m
        tl = leaf_toff[ln]
        tr = leaf_toff[rn]
        k1 = table[0, tl : tl + size].copy()
        k2 = table[0, tr : tr + size].copy()
        c1 = flat_coef[leaf_foff[ln] + b]
        c2 = flat_coef[leaf_foff[rn] + b]
        for U in range(2 * size):
            T1 = U & (size - 1)
            t2b = U >> m
            if ((T1 >> b) & 1) == 0 and t2b == 0:
                table[0, tl + U] = 0.0  # never reached: one of the two leaves is x's
                table[0, tr + U] = 0.0
                continue
            T2 = (T1 & ~bb) | (t2b << b)
            table[0, tl + U] = k1[T1] + k2[T2]
            q1 = -k1[T1] if (T1 >> b) & 1 else c1 * k1[T1 | bb]
            q2 = -k2[T2] if t2b else c2 * k2[T2 | bb]
            table[0, tr + U] = q1 + q2


@njit(cache=True, nogil=True)
def build_iv_tables(trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                    node_bit, leaf_m, leaf_toff, bg, max_depth, ctab, cptab, counts,
                    table, leaf_lw):
    """Count background rows per (leaf, T) and fold the counts into R0, R1, G.

    ``counts`` must be zero on the table entries of ``trees``; ``table`` gets
    ``[R0, R1, G] / B`` and ``leaf_lw`` the share of background rows that agree
    with the leaf on the masked features (:func:`._walk_kernels.build_iv_count_tables`, order 1).
    """
    build_iv_count_tables(trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                          node_bit, leaf_m, leaf_toff, bg, max_depth, np.int64(1), ctab, cptab, ctab, counts, table,
                          leaf_lw)


# --------------------------------------------------------------- row kernel
@njit(cache=True, nogil=True)
def table_rows(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
               node_bit, leaf_m, leaf_foff, flat_feat, flat_coef, leaf_toff, leaf_lw,
               tab0, tab1, tab2, interventional, pair, value, tree_output, max_depth, out, pred):
    """Add the table-tree contributions of ``X[rows]`` into ``out[rows]`` and ``pred[rows]``.

    ``out`` has shape (n, p, n_raw) and ``pred`` (n, n_raw); both receive raw,
    unscaled tree sums. ``tab0`` is K (path-dependent) or R0, ``tab1`` R1 and
    ``tab2`` G (interventional; path-dependent runs pass K three times).
    ``flat_coef`` holds ``(1 - z) / z`` for path-dependent tables (unused for
    interventional ones). A node with ``pair[node]`` set has two leaf children
    whose tables :func:`merge_pd_pairs` merged: it is done as one leaf (at a rule
    node, its decisions for the block are first turned into 0/1 against 0.5, so the
    same branch-free comparison serves it). Single-output trees have their
    leaf value folded into the table already (``leaf_lw`` too); multi-output
    trees multiply by the leaf's value row here.

    Loops run over the rows of a block innermost and without branches on the
    data (a feature is in T for about half the rows: a branch on it would be
    mispredicted half the time), so they vectorise.
    """
    p = X.shape[1]
    n_raw = value.shape[1]
    D = max_depth + 2
    buf = np.zeros((D, BLOCK), np.int64)
    xb = np.empty((p, BLOCK))
    st_node, st_lvl, st_par, st_left = walk_stack(D)
    acc = np.zeros((n_raw, p, BLOCK))
    pacc = np.zeros((n_raw, BLOCK))
    sv = np.empty(BLOCK)
    rx_own = np.empty(BLOCK)  # a rule node's decisions for the block (0 left, 1 right)
    rx_par = np.empty(BLOCK)
    nr = rows.shape[0]
    # buf[0] (T at a root) stays 0: nothing writes it
    for b0 in range(0, nr, BLOCK):
        nb = min(BLOCK, nr - b0)
        load_block(X, rows, b0, nb, xb)
        acc[:, :, :] = 0.0
        pacc[:, :] = 0.0
        for ti in range(trees.shape[0]):
            single, c0, sp = tree_root(trees, ti, node_offsets, tree_output, n_raw, st_node, st_lvl, st_par, st_left)
            while sp > 0:
                sp, node, L = pop(st_node, st_lvl, sp)
                # a pair node folds its own T into the pass that indexes its tables
                if L > 0 and not (pair[node] and node_bit[st_par[sp]] >= 0):
                    par = st_par[sp]
                    row_bits(buf[L], buf[L - 1], nb, node_bit[par], xb[feature[par]], par, threshold,
                             missing_left, cat_start, cat_bits, st_left[sp])
                if pair[node]:
                    # two sibling leaves at once: P and Q indexed by T of the left
                    # leaf plus, on top, whether the right leaf has the split bit
                    lnode = left[node]
                    m = leaf_m[lnode]
                    fo = leaf_foff[lnode]
                    tp = tab0[leaf_toff[lnode]:]
                    tq = tab0[leaf_toff[right[node]]:]
                    b = node_bit[node]
                    bb = np.int64(1) << b
                    top = np.int64(1) << m
                    xf = xb[feature[node]]
                    thr = threshold[node]
                    ml = missing_left[node] != 0
                    if cat_start[node] >= 0:
                        # a rule: its decisions as 0 (left) / 1 (right) against 0.5, so
                        # the branch-free loop below serves it unchanged
                        _decisions(xf, nb, node, threshold, missing_left, cat_start, cat_bits, rx_own)
                        xf = rx_own
                        thr = 0.5
                        ml = False
                    ix = buf[L + 1]
                    lw1 = leaf_lw[lnode]
                    lw2 = leaf_lw[right[node]]
                    pa = pacc[c0]
                    # this node's own T: 0 at a root, else from the parent's split
                    if L == 0:
                        pmask = np.int64(0)
                        bp = buf[0]
                        pxf = xf
                        pthr = 0.0
                        pml = False
                        pleft = True
                    else:
                        par = st_par[sp]
                        pbit = node_bit[par]
                        bp = buf[L - 1]
                        pmask = (np.int64(1) << pbit) if pbit >= 0 else np.int64(0)
                        pxf = xb[feature[par]]
                        pthr = threshold[par]
                        pml = missing_left[par] != 0
                        pleft = st_left[sp]
                        if cat_start[par] >= 0:
                            _decisions(pxf, nb, par, threshold, missing_left, cat_start, cat_bits, rx_par)
                            pxf = rx_par
                            pthr = 0.5
                            pml = False
                    for r in range(nb):
                        px = pxf[r]
                        pgl = pml if px != px else px <= pthr
                        T = bp[r] | (0 if pgl == pleft else pmask)
                        x = xf[r]
                        gl = ml if x != x else x <= thr
                        t2 = ((T >> b) & 1) | (1 if gl else 0)
                        U = (T | (0 if gl else bb)) | (t2 << m)
                        ix[r] = U
                        # x reaches the left leaf iff T1 = 0, the right one iff T2 = 0
                        pa[r] += (lw1 if U == top else 0.0) + (lw2 if U == bb else 0.0)
                    for i in range(m):
                        f = flat_feat[fo + i]
                        a = acc[c0, f]
                        if i == b:
                            for r in range(nb):
                                a[r] += tq[ix[r]]
                            continue
                        bm = np.uint64(1) << np.uint64(i)
                        ci = flat_coef[fo + i]
                        cneg = -1.0 - ci
                        for r in range(nb):
                            U = np.uint64(ix[r])
                            inb = (U >> np.uint64(i)) & np.uint64(1)
                            a[r] += tp[U | bm] * (ci + (cneg if inb else 0.0))
                    continue
                if left[node] >= 0:
                    sp = push_children(st_node, st_lvl, st_par, st_left, sp, node, L, left, right)
                    continue
                # leaf: m table look-ups per row
                m = leaf_m[node]
                fo = leaf_foff[node]
                to = leaf_toff[node]
                bl = buf[L]
                for i in range(m):
                    bm = np.uint64(1) << np.uint64(i)
                    f = flat_feat[fo + i]
                    ci = flat_coef[fo + i]
                    if interventional:
                        t0 = tab0[to:]
                        t1 = tab1[to:]
                        t2 = tab2[to:]
                        for r in range(nb):
                            T = np.uint64(bl[r])
                            inb = (T >> np.uint64(i)) & np.uint64(1)
                            # in T: -G(T); else R0(T) - R1(T + i)
                            sv[r] = -t2[T] if inb else t0[T] - t1[T | bm]
                    else:
                        t0 = tab0[to:]
                        cneg = -1.0 - ci
                        for r in range(nb):
                            T = np.uint64(bl[r])
                            inb = (T >> np.uint64(i)) & np.uint64(1)
                            # K(T + i) is K(T) when i is in T already
                            sv[r] = t0[T | bm] * (ci + (cneg if inb else 0.0))
                    if single:
                        a = acc[c0, f]
                        for r in range(nb):
                            a[r] += sv[r]
                    else:
                        for c in range(n_raw):
                            vc = value[node, c]
                            for r in range(nb):
                                acc[c, f, r] += sv[r] * vc
                lw = leaf_lw[node]
                if single:
                    for r in range(nb):
                        pacc[c0, r] += lw if buf[L, r] == 0 else 0.0
                else:
                    for c in range(n_raw):
                        lv = lw * value[node, c]
                        for r in range(nb):
                            pacc[c, r] += lv if buf[L, r] == 0 else 0.0
        for r in range(nb):
            row = rows[b0 + r]
            for j in range(p):
                for c in range(n_raw):
                    out[row, j, c] += acc[c, j, r]
            for c in range(n_raw):
                pred[row, c] += pacc[c, r]


# -------------------------------------------------------- textbook fallbacks
@njit(cache=True, nogil=True, inline="always")
def _extend(pf, pz, po, pw, L, d, zf, of, feat):
    pf[L, d] = feat
    pz[L, d] = zf
    po[L, d] = of
    pw[L, d] = 1.0 if d == 0 else 0.0
    for i in range(d - 1, -1, -1):
        pw[L, i + 1] += of * pw[L, i] * (i + 1) / (d + 1)
        pw[L, i] = zf * pw[L, i] * (d - i) / (d + 1)


@njit(cache=True, nogil=True, inline="always")
def _unwind(pf, pz, po, pw, L, d, k):
    of = po[L, k]
    zf = pz[L, k]
    nxt = pw[L, d]
    for i in range(d - 1, -1, -1):
        if of != 0.0:
            tmp = pw[L, i]
            pw[L, i] = nxt * (d + 1) / ((i + 1) * of)
            nxt = tmp - pw[L, i] * zf * (d - i) / (d + 1)
        else:
            pw[L, i] = (pw[L, i] * (d + 1)) / (zf * (d - i))
    for i in range(k, d):
        pf[L, i] = pf[L, i + 1]
        pz[L, i] = pz[L, i + 1]
        po[L, i] = po[L, i + 1]


@njit(cache=True, nogil=True, inline="always")
def _unwound_sum(pz, po, pw, L, d, k):
    of = po[L, k]
    zf = pz[L, k]
    nxt = pw[L, d]
    total = 0.0
    for i in range(d - 1, -1, -1):
        if of != 0.0:
            tmp = nxt * (d + 1) / ((i + 1) * of)
            total += tmp
            nxt = pw[L, i] - tmp * zf * (d - i) / (d + 1)
        elif zf != 0.0:
            total += (pw[L, i] / zf) / ((d - i) / (d + 1))
    return total


@njit(cache=True, nogil=True)
def textbook_pd_rows(X, rows, trees, node_offsets, feature, threshold, left, right,
                     missing_left, cat_start, cat_bits, cover, masked, value, tree_output, max_depth, out, pred):
    """Path-dependent Tree SHAP (Lundberg et al. 2020, Algorithm 2) without recursion.

    Each tree level owns a copy of the unique path (feature, zero fraction,
    one fraction, permutation weight); a node copies its parent's and extends
    it, so a depth-first stack of (node, parent path length, fractions) is all
    the recursion needed. A node on a masked feature passes its parent's path
    down unchanged to both children and scales them by cover (``mult``).
    """
    n_raw = value.shape[1]
    D = max_depth + 3
    pf = np.empty((D, D), np.int64)
    pz = np.empty((D, D))
    po = np.empty((D, D))
    pw = np.empty((D, D))
    S = 2 * D + 2
    st_node = np.empty(S, np.int64)
    st_lvl = np.empty(S, np.int64)
    st_pud = np.empty(S, np.int64)  # parent's unique depth (after its unwind)
    st_zf = np.empty(S)
    st_of = np.empty(S)
    st_feat = np.empty(S, np.int64)
    st_ext = np.empty(S, np.bool_)
    st_mult = np.empty(S)
    for ri in range(rows.shape[0]):
        row = rows[ri]
        for ti in range(trees.shape[0]):
            t = trees[ti]
            col = tree_output[t]
            st_node[0] = node_offsets[t]
            st_lvl[0] = 0
            st_pud[0] = -1
            st_zf[0] = 1.0
            st_of[0] = 1.0
            st_feat[0] = -1
            st_ext[0] = True
            st_mult[0] = 1.0
            sp = 1
            while sp > 0:
                sp, node, L = pop(st_node, st_lvl, sp)
                pud = st_pud[sp]
                mult = st_mult[sp]
                # copy the parent's path (level L-1, entries 0..pud) to level L
                if L > 0:
                    for i in range(pud + 1):
                        pf[L, i] = pf[L - 1, i]
                        pz[L, i] = pz[L - 1, i]
                        po[L, i] = po[L - 1, i]
                        pw[L, i] = pw[L - 1, i]
                if st_ext[sp]:
                    ud = pud + 1
                    _extend(pf, pz, po, pw, L, ud, st_zf[sp], st_of[sp], st_feat[sp])
                else:
                    ud = pud
                if left[node] < 0:
                    hot = 1.0
                    for i in range(1, ud + 1):
                        w = _unwound_sum(pz, po, pw, L, ud, i)
                        s = w * (po[L, i] - pz[L, i]) * mult
                        hot *= po[L, i]
                        f = pf[L, i]
                        if col >= 0:
                            out[row, f, col] += s * value[node, col]
                        else:
                            for c in range(n_raw):
                                out[row, f, c] += s * value[node, c]
                    if hot != 0.0:
                        if col >= 0:
                            pred[row, col] += mult * value[node, col]
                        else:
                            for c in range(n_raw):
                                pred[row, c] += mult * value[node, c]
                    continue
                f = feature[node]
                cn = cover[node]
                lc = left[node]
                rc = right[node]
                if masked[f]:
                    # not a player: both children, weighted by cover, same path
                    for child in (rc, lc):
                        st_node[sp] = child
                        st_lvl[sp] = L + 1
                        st_pud[sp] = ud
                        st_ext[sp] = False
                        st_mult[sp] = mult * (cover[child] / cn if cn > 0 else 0.0)
                        sp += 1
                    continue
                if goes_left(X[row, f], node, threshold, missing_left, cat_start, cat_bits):
                    hot_c = lc
                    cold_c = rc
                else:
                    hot_c = rc
                    cold_c = lc
                izf = 1.0
                iof = 1.0
                k = 1
                while k <= ud and pf[L, k] != f:
                    k += 1
                if k <= ud:
                    izf = pz[L, k]
                    iof = po[L, k]
                    _unwind(pf, pz, po, pw, L, ud, k)
                    ud -= 1
                hz = cover[hot_c] / cn if cn > 0 else 0.0
                cz = cover[cold_c] / cn if cn > 0 else 0.0
                # a child with zero and one fractions both 0 (no cover, x not there)
                # weighs 0 in every coalition: skip it (unwinding it would divide by 0)
                for child, zf_c, of_c in ((cold_c, cz * izf, 0.0), (hot_c, hz * izf, iof)):
                    if zf_c == 0.0 and of_c == 0.0:
                        continue
                    st_node[sp] = child
                    st_zf[sp] = zf_c
                    st_of[sp] = of_c
                    st_lvl[sp] = L + 1
                    st_pud[sp] = ud
                    st_feat[sp] = f
                    st_ext[sp] = True
                    st_mult[sp] = mult
                    sp += 1


@njit(cache=True, nogil=True)
def textbook_iv_rows(X, rows, trees, node_offsets, feature, threshold, left, right,
                     missing_left, cat_start, cat_bits, masked, bg, value, tree_output, max_depth, ctab, cptab,
                     out, pred):
    """Interventional Tree SHAP by brute recursion over (row, background row) pairs.

    Walking a tree for the pair, a node where the two rows part ways makes its
    feature a player: one branch takes it from x (set A), the other from the
    background row (set B); a feature already assigned keeps its side. A leaf
    reached with |A| = a, |B| = t adds ``v c(a, t)`` to A's features and
    ``-v c'(a, t)`` to B's (see :func:`shapley_iv_weights`), divided by B
    (:func:`._walk_kernels.iv_pair_walk`, order 1).
    """
    iv_pair_walk(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start, cat_bits,
                 masked, bg, value, tree_output, max_depth, np.int64(1), ctab, cptab, ctab, out, pred,
                 np.zeros((1, 1, 1, 1)))
