"""Compiled (numba) tree walks behind exact tree partial dependence.

Both kernels work on a :class:`explainers._trees.TreeEnsemble` and a sorted grid
over one or two target features. The trick that makes them fast: instead of
walking a tree once per (row, grid point), a row walks each tree once while
carrying a *range* of grid indices ``[lo, hi)`` per target feature. At a node
that splits on a target feature the range is cut in two (the grid is sorted, so
the grid values that go left form a prefix, whose length ``pos[node]`` is
precomputed); at any other node the row's own value picks one child. At a leaf
the leaf value is added to every grid cell of the range rectangle through a
2-D difference array, so a leaf costs O(n_raw) however wide its range is; one
prefix sum per row then gives the tree sums at every grid point.

A 1-D grid is the 2-D case with ``G2 = 1`` and ``f2 = -1``.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["ice_tree_kernel", "recursion_kernel", "split_positions", "pack_nodes"]


def split_positions(feature: np.ndarray, threshold: np.ndarray, f: int, grid_cmp: np.ndarray) -> np.ndarray:
    """For each node that splits on ``f``: how many (sorted) grid values go left.

    ``grid_cmp`` is the sorted grid as the trees compare it (rounded through
    float32 for scikit-learn trees). A value equal to the threshold goes left,
    hence ``side="right"``. Other nodes get 0 (never read).
    """
    pos = np.zeros(len(feature), dtype=np.int64)
    if f < 0:
        return pos
    on_f = feature == f
    pos[on_f] = np.searchsorted(grid_cmp, threshold[on_f], side="right")
    return pos


def pack_nodes(feature: np.ndarray, threshold: np.ndarray, left: np.ndarray, right: np.ndarray):
    """Pack the per-node arrays the row walk reads into one (n_nodes, 4) record array.

    Columns of the int64 array: feature, left, right, and the threshold's bits;
    the returned float64 view reads column 3 as the threshold. One cache line
    then serves a whole node, and ``nodes[node, 1 + (x > threshold)]`` picks
    the child without a data-dependent branch (mispredicted branches, not
    memory, bound a tree walk).
    """
    nodes = np.zeros((len(feature), 4), dtype=np.int64)
    nodes[:, 0] = feature
    nodes[:, 1] = left
    nodes[:, 2] = right
    thr = nodes.view(np.float64)
    thr[:, 3] = np.where(np.isnan(threshold), 0.0, threshold)
    return nodes, thr


@njit(cache=True, nogil=True, inline="always")
def _walk_row(
    Xw, i, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, value, root, D,
    s_node, s_lo1, s_hi1, s_lo2, s_hi2,
):  # pragma: no cover - compiled
    """Add one tree's leaf values for row ``i`` over the grid into difference array D."""
    R = value.shape[1]
    s_node[0] = root
    s_lo1[0] = 0
    s_hi1[0] = G1
    s_lo2[0] = 0
    s_hi2[0] = G2
    sp = 1
    while sp > 0:
        sp -= 1
        node = s_node[sp]
        lo1 = s_lo1[sp]
        hi1 = s_hi1[sp]
        lo2 = s_lo2[sp]
        hi2 = s_hi2[sp]
        while True:
            f = nodes[node, 0]
            if f < 0:  # leaf
                for r in range(R):
                    v = value[node, r]
                    D[lo1, lo2, r] += v
                    if hi2 < G2:
                        D[lo1, hi2, r] -= v
                    if hi1 < G1:
                        D[hi1, lo2, r] -= v
                        if hi2 < G2:
                            D[hi1, hi2, r] += v
                break
            if f == f1:
                p = pos1[node]
                if p <= lo1:
                    node = nodes[node, 2]
                elif p >= hi1:
                    node = nodes[node, 1]
                else:
                    # both children get part of the range: keep the right part for later
                    s_node[sp] = nodes[node, 2]
                    s_lo1[sp] = p
                    s_hi1[sp] = hi1
                    s_lo2[sp] = lo2
                    s_hi2[sp] = hi2
                    sp += 1
                    hi1 = p
                    node = nodes[node, 1]
            elif f == f2:
                p = pos2[node]
                if p <= lo2:
                    node = nodes[node, 2]
                elif p >= hi2:
                    node = nodes[node, 1]
                else:
                    s_node[sp] = nodes[node, 2]
                    s_lo1[sp] = lo1
                    s_hi1[sp] = hi1
                    s_lo2[sp] = p
                    s_hi2[sp] = hi2
                    sp += 1
                    hi2 = p
                    node = nodes[node, 1]
            else:
                x = Xw[i, f]
                if x != x:  # NaN (rare, so a predictable branch): the learned direction
                    node = nodes[node, 1] if missing_left[node] else nodes[node, 2]
                else:
                    node = nodes[node, 1 + np.int64(x > thr[node, 3])]


@njit(cache=True, nogil=True)
def _prefix_sum(D, G1, G2):  # pragma: no cover - compiled
    R = D.shape[2]
    for a in range(G1):
        for b in range(1, G2):
            for r in range(R):
                D[a, b, r] += D[a, b - 1, r]
    for a in range(1, G1):
        for b in range(G2):
            for r in range(R):
                D[a, b, r] += D[a - 1, b, r]


@njit(parallel=True, cache=True, nogil=True)
def ice_tree_kernel(
    Xw, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, value, roots,
    base, scale, tcode, max_depth, block, out,
):  # pragma: no cover - compiled
    """Exact ICE of every row of ``Xw`` over a G1 x G2 grid.

    Writes ``out[i, a, b, :] = transform(base + scale * sum_t value_t(leaf))``
    for row i with its target features set to grid point (a, b). ``out`` has
    shape (n, G1, G2, K) with K = 2 for the sigmoid transform, else n_raw.
    tcode: 0 identity, 1 exp, 2 sigmoid, 3 softmax. Rows are taken in blocks
    (in parallel); within a block each tree is walked for every row before the
    next tree, so the tree's nodes stay in cache.
    """
    n = Xw.shape[0]
    R = value.shape[1]
    depth = max_depth + 2
    n_blocks = (n + block - 1) // block
    for blk in prange(n_blocks):
        start = blk * block
        stop = min(n, start + block)
        D = np.zeros((stop - start, G1, G2, R))
        s_node = np.empty(depth, np.int64)
        s_lo1 = np.empty(depth, np.int64)
        s_hi1 = np.empty(depth, np.int64)
        s_lo2 = np.empty(depth, np.int64)
        s_hi2 = np.empty(depth, np.int64)
        for t in range(roots.shape[0]):
            root = roots[t]
            for i in range(start, stop):
                _walk_row(Xw, i, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, value,
                          root, D[i - start], s_node, s_lo1, s_hi1, s_lo2, s_hi2)
        for i in range(start, stop):
            Di = D[i - start]
            _prefix_sum(Di, G1, G2)
            for a in range(G1):
                for b in range(G2):
                    if tcode == 0:
                        for r in range(R):
                            out[i, a, b, r] = base[r] + scale * Di[a, b, r]
                    elif tcode == 1:
                        for r in range(R):
                            out[i, a, b, r] = np.exp(base[r] + scale * Di[a, b, r])
                    elif tcode == 2:
                        p = 1.0 / (1.0 + np.exp(-(base[0] + scale * Di[a, b, 0])))
                        out[i, a, b, 0] = 1.0 - p
                        out[i, a, b, 1] = p
                    else:
                        m = -np.inf
                        for r in range(R):
                            z = base[r] + scale * Di[a, b, r]
                            out[i, a, b, r] = z
                            if z > m:
                                m = z
                        s = 0.0
                        for r in range(R):
                            e = np.exp(out[i, a, b, r] - m)
                            out[i, a, b, r] = e
                            s += e
                        for r in range(R):
                            out[i, a, b, r] /= s


@njit(cache=True, nogil=True)
def recursion_kernel(
    f1, f2, pos1, pos2, G1, G2, feature, left, right, cover, value, roots, max_depth,
):  # pragma: no cover - compiled
    """Cover-weighted partial dependence (scikit-learn's 'recursion') over the grid.

    Returns the unscaled tree sum ``sum_t E_cover[value_t]`` of shape (G1, G2, n_raw):
    at a split on a target feature the grid range is cut, at any other split
    both children are visited, weighted by their share of the training cover.
    """
    R = value.shape[1]
    D = np.zeros((G1, G2, R))
    depth = max_depth + 2
    s_node = np.empty(depth, np.int64)
    s_w = np.empty(depth, np.float64)
    s_lo1 = np.empty(depth, np.int64)
    s_hi1 = np.empty(depth, np.int64)
    s_lo2 = np.empty(depth, np.int64)
    s_hi2 = np.empty(depth, np.int64)
    for t in range(roots.shape[0]):
        s_node[0] = roots[t]
        s_w[0] = 1.0
        s_lo1[0] = 0
        s_hi1[0] = G1
        s_lo2[0] = 0
        s_hi2[0] = G2
        sp = 1
        while sp > 0:
            sp -= 1
            node = s_node[sp]
            w = s_w[sp]
            lo1 = s_lo1[sp]
            hi1 = s_hi1[sp]
            lo2 = s_lo2[sp]
            hi2 = s_hi2[sp]
            while True:
                lc = left[node]
                if lc < 0:
                    for r in range(R):
                        v = w * value[node, r]
                        D[lo1, lo2, r] += v
                        if hi2 < G2:
                            D[lo1, hi2, r] -= v
                        if hi1 < G1:
                            D[hi1, lo2, r] -= v
                            if hi2 < G2:
                                D[hi1, hi2, r] += v
                    break
                f = feature[node]
                rc = right[node]
                if f == f1 or f == f2:
                    if f == f1:
                        p = pos1[node]
                        lo, hi = lo1, hi1
                    else:
                        p = pos2[node]
                        lo, hi = lo2, hi2
                    if p <= lo:
                        node = rc
                    elif p >= hi:
                        node = lc
                    else:
                        s_node[sp] = rc
                        s_w[sp] = w
                        s_lo1[sp] = lo1
                        s_hi1[sp] = hi1
                        s_lo2[sp] = lo2
                        s_hi2[sp] = hi2
                        if f == f1:
                            s_lo1[sp] = p
                            hi1 = p
                        else:
                            s_lo2[sp] = p
                            hi2 = p
                        sp += 1
                        node = lc
                else:
                    # same arithmetic as scikit-learn: w * frac left, w * (1 - frac) right
                    frac = cover[lc] / cover[node]
                    s_node[sp] = rc
                    s_w[sp] = w * (1.0 - frac)
                    s_lo1[sp] = lo1
                    s_hi1[sp] = hi1
                    s_lo2[sp] = lo2
                    s_hi2[sp] = hi2
                    sp += 1
                    w = w * frac
                    node = lc
    _prefix_sum(D, G1, G2)
    return D
