"""Compiled (numba) group walks of blocks of rows down a :class:`TreeEnsemble`.

The walk behind exact tree partial dependence and the SHAP coalition game's
compiled predict. Instead of walking a tree once per (row, grid point), a row
walks each tree once while carrying a *range* of grid indices ``[lo, hi)`` per
target feature. At a node that splits on a target feature the range is cut in
two (the grid is sorted, so the grid values that go left form a prefix, whose
length ``pos[node]`` is precomputed by :func:`split_positions`); at any other node
the row's own value picks one child. At a leaf the leaf value is added to every
grid cell of the range rectangle through a 2-D difference array, so a leaf costs
O(n_raw) however wide its range is; one prefix sum per row then gives the tree
sums at every grid point.

Rows do not walk one at a time: a block of rows goes down each tree together
(:func:`_walk_group`), partitioned at each split like a tree being grown. A
row-at-a-time walk is bound by one mispredicted branch per node; a group is
split by one branch-free pass in which every row makes the same comparison.

A 1-D grid is the 2-D case with ``G2 = 1`` and ``f2 = -1``; a plain predict
(:func:`tree_sums_kernel`) is a one-point grid with no target feature.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["split_positions", "grid_slices", "pack_nodes", "tree_sums_kernel", "predict_block_rows", "walk_block", "prefix_sum", "prefix_sums", "goes_left",
           "rule_left", "rules_of"]


def rules_of(ens):
    """The ensemble's node rules as the kernels take them: (cat_start, cat_bits), int64."""
    return (np.ascontiguousarray(ens.cat_start, np.int64), np.ascontiguousarray(ens.cat_bits, np.int64))


@njit(cache=True, nogil=True, inline="always")
def rule_left(x, node, threshold, missing_left, cat_start, cat_bits):  # pragma: no cover - compiled
    """Routing at a node with a rule (``cat_start[node] >= 0``), for a non-NaN ``x``.

    Categorical: the code's bit in the node's set (left when set); codes outside
    the set's words go where RULE_OTHER_LEFT says. Zero-as-missing numeric: a
    zero goes the missing way. See :mod:`explainers.trees.ensemble`.
    """
    s = cat_start[node]
    flags = cat_bits[s + 1]
    if flags & 1:
        k = cat_bits[s]
        if x >= 0.0 and x < 64.0 * k:
            c = np.int64(x)
            return ((cat_bits[s + 2 + (c >> 6)] >> (c & 63)) & 1) != 0
        return (flags & 2) != 0
    if (flags & 4) and abs(x) <= 1e-35:
        return missing_left[node] != 0
    return x <= threshold[node]


@njit(cache=True, nogil=True, inline="always")
def goes_left(x, node, threshold, missing_left, cat_start, cat_bits):  # pragma: no cover - compiled
    """Whether value ``x`` goes to the left child at ``node`` (every rule of the ensemble):
    NaN follows the learned routing, a value equal to the threshold goes left."""
    if x != x:
        return missing_left[node] != 0
    if cat_start[node] >= 0:
        return rule_left(x, node, threshold, missing_left, cat_start, cat_bits)
    return x <= threshold[node]


def split_positions(feature: np.ndarray, threshold: np.ndarray, f: int, grid_cmp: np.ndarray) -> np.ndarray:
    """For each node that splits on ``f``: how many (sorted) grid values go left.

    ``grid_cmp`` is the sorted grid as the trees compare it (rounded through
    float32 for scikit-learn trees). A value equal to the threshold goes left,
    hence ``side="right"``. Other nodes get 0 (never read). Only for plain
    splits: a rule's left set is not a prefix of the grid, so callers walk a
    feature with rules (:meth:`TreeEnsemble.rule_features`) as a plain column,
    one grid value at a time.
    """
    pos = np.zeros(len(feature), dtype=np.int64)
    if f < 0:
        return pos
    on_f = feature == f
    pos[on_f] = np.searchsorted(grid_cmp, threshold[on_f], side="right")
    return pos


def grid_slices(ens, f: int, grid_cmp: np.ndarray):
    """How a walk covers a target feature's grid: a list of ``(pos, G, part)``.

    A plain feature is one walk over the whole sorted grid (``pos`` from
    :func:`split_positions`). A feature that some rule splits on is walked one
    grid value at a time: a one-point grid whose ``pos[node]`` is 1 where that
    value goes left, 0 where it goes right; so is a grid that is not sorted (the
    category codes of a categorical column come in the data's order), and so is
    each NaN point at the end of a sorted grid (NaN follows each split's missing
    direction, not an order; the numbers before it take one walk). ``part`` is the
    slice of the grid each walk fills. ``f < 0`` (no target): one point.
    """
    n = len(ens.feature)
    if f < 0:
        return [(np.zeros(n, np.int64), 1, slice(0, 1))]
    on = ens.nodes_on(f)
    ruled = ens.cat_start[on] >= 0
    grid_cmp = np.asarray(grid_cmp, np.float64)
    # NaN at the end of a sorted grid (it follows each split's missing direction, not an
    # order): the numbers in one walk, each NaN point in a walk of its own
    nums = len(grid_cmp) - int(np.isnan(grid_cmp[::-1]).cumprod().sum())
    head = grid_cmp[:nums]
    unsorted = np.isnan(head).any() or (nums > 1 and not np.all(np.diff(head) >= 0))  # category grids: data order
    out, first = [], 0
    if not ruled.any() and not unsorted:
        if nums:
            pos = np.zeros(n, dtype=np.int64)
            pos[on] = np.searchsorted(head, ens.threshold[on], side="right")  # as split_positions
            out.append((pos, nums, slice(0, nums)))
        first = nums
    for a in range(first, len(grid_cmp)):
        pos = np.zeros(n, np.int64)
        pos[on] = ens.goes_left(np.full(len(on), grid_cmp[a]), on)
        out.append((pos, 1, slice(a, a + 1)))
    return out


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
def _partition(xf, idx, tmp, a, b, t, nan_left):  # pragma: no cover - compiled
    """Rows ``idx[a:b]`` going left at a plain split (``x <= t``; NaN left where ``nan_left``)
    packed at ``idx[a:]`` in order, those going right into ``tmp``: (left, right) counts.
    Inlined with a constant ``nan_left``, so each call site compiles one comparison."""
    nl = 0
    nr = 0
    for j in range(a, b):
        row = idx[j]
        x = xf[row]
        gl = np.int64(not x > t) if nan_left else np.int64(x <= t)
        idx[a + nl] = row  # a + nl <= j: never overwrites an unread row
        tmp[nr] = row
        nl += gl
        nr += 1 - gl
    return nl, nr


@njit(cache=True, nogil=True, inline="always")
def _add_rows(d, idx, a, b, v):  # pragma: no cover - compiled
    for j in range(a, b):
        d[idx[j]] += v


@njit(cache=True, nogil=True)
def _walk_group(
    XbT, idx, tmp, m, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits, value, root, D,
    per_row, s_node, s_a, s_b, s_lo1, s_hi1, s_lo2, s_hi2,
):  # pragma: no cover - compiled
    """Add one tree's leaf values for rows ``idx[:m]`` of a block over the grid into D.

    ``XbT`` is the block transposed (features x rows): the rows of a group are
    read from one short column, which stays in the first-level cache.

    All rows go down the tree together. At a split on another feature the group
    is partitioned in place (a branch-free pass over the rows: every row makes
    the same comparison, so no per-row branch is mispredicted); at a split on
    a target feature the whole group follows both children with its grid range
    cut; at a leaf the value goes into the difference array, once per row
    (``per_row``: ``D[..., row]``) or once for the group weighted by its size
    (``D[..., 0]``). D has shape (G1, G2, R, rows): rows last, so the rows of a
    leaf's group land in one short stretch of memory (cached) whatever their
    order, and the prefix sums run along contiguous rows. Partitioning keeps the set of rows in ``idx[a:b]``, only its
    order changes, so a right child pushed earlier still finds its rows there.
    """
    R = value.shape[1]
    s_node[0] = root
    s_a[0] = 0
    s_b[0] = m
    s_lo1[0] = 0
    s_hi1[0] = G1
    s_lo2[0] = 0
    s_hi2[0] = G2
    sp = 1
    while sp > 0:
        sp -= 1
        node = s_node[sp]
        a = s_a[sp]
        b = s_b[sp]
        lo1 = s_lo1[sp]
        hi1 = s_hi1[sp]
        lo2 = s_lo2[sp]
        hi2 = s_hi2[sp]
        while b > a:
            f = nodes[node, 0]
            if f < 0:  # leaf
                for r in range(R):
                    v = value[node, r]
                    if v == 0.0:
                        continue  # a multiclass boosting tree fills one column of R
                    if per_row:
                        _add_rows(D[lo1, lo2, r], idx, a, b, v)
                        if hi2 < G2:
                            _add_rows(D[lo1, hi2, r], idx, a, b, -v)
                        if hi1 < G1:
                            _add_rows(D[hi1, lo2, r], idx, a, b, -v)
                            if hi2 < G2:
                                _add_rows(D[hi1, hi2, r], idx, a, b, v)
                    else:
                        w = v * (b - a)
                        D[lo1, lo2, r, 0] += w
                        if hi2 < G2:
                            D[lo1, hi2, r, 0] -= w
                        if hi1 < G1:
                            D[hi1, lo2, r, 0] -= w
                            if hi2 < G2:
                                D[hi1, hi2, r, 0] += w
                break
            if f == f1:
                p = pos1[node]
                if p <= lo1:
                    node = nodes[node, 2]
                elif p >= hi1:
                    node = nodes[node, 1]
                else:
                    # both children get the whole group, each with part of the range
                    s_node[sp] = nodes[node, 2]
                    s_a[sp] = a
                    s_b[sp] = b
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
                    s_a[sp] = a
                    s_b[sp] = b
                    s_lo1[sp] = lo1
                    s_hi1[sp] = hi1
                    s_lo2[sp] = p
                    s_hi2[sp] = hi2
                    sp += 1
                    hi2 = p
                    node = nodes[node, 1]
            else:
                t = thr[node, 3]
                ml = np.int64(missing_left[node])
                # rows going left are packed at idx[a:], rows going right into tmp
                nl = 0
                nr = 0
                if cat_start[node] < 0:
                    # NaN compares false: with missing going right it needs no test of its own
                    if ml == 0:
                        nl, nr = _partition(XbT[f], idx, tmp, a, b, t, False)
                    else:
                        nl, nr = _partition(XbT[f], idx, tmp, a, b, t, True)
                else:
                    for j in range(a, b):
                        row = idx[j]
                        gl = np.int64(goes_left(XbT[f, row], node, thr[:, 3], missing_left, cat_start, cat_bits))
                        idx[a + nl] = row
                        tmp[nr] = row
                        nl += gl
                        nr += 1 - gl
                mid = a + nl
                for j in range(nr):
                    idx[mid + j] = tmp[j]
                if nr > 0:
                    s_node[sp] = nodes[node, 2]
                    s_a[sp] = mid
                    s_b[sp] = b
                    s_lo1[sp] = lo1
                    s_hi1[sp] = hi1
                    s_lo2[sp] = lo2
                    s_hi2[sp] = hi2
                    sp += 1
                b = mid
                node = nodes[node, 1]


@njit(cache=True, nogil=True)
def walk_block(
    Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits, value, roots,
    depth, D, per_row,
):  # pragma: no cover - compiled
    """Walk rows ``start:stop`` of ``Xw`` down every tree in turn (:func:`_walk_group`) into D.

    D: (G1, G2, R, stop - start) with ``per_row``, else (G1, G2, R, 1).
    """
    m = stop - start
    XbT = np.ascontiguousarray(Xw[start:stop].T)
    idx = np.arange(m).astype(np.int32)
    tmp = np.empty(m, np.int32)
    s_node = np.empty(depth, np.int64)
    s_a = np.empty(depth, np.int64)
    s_b = np.empty(depth, np.int64)
    s_lo1 = np.empty(depth, np.int64)
    s_hi1 = np.empty(depth, np.int64)
    s_lo2 = np.empty(depth, np.int64)
    s_hi2 = np.empty(depth, np.int64)
    for t in range(roots.shape[0]):
        _walk_group(XbT, idx, tmp, m, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits,
                    value, roots[t], D, per_row, s_node, s_a, s_b, s_lo1, s_hi1, s_lo2, s_hi2)


@njit(cache=True, nogil=True)
def prefix_sums(D):  # pragma: no cover - compiled
    """Prefix sums over the two grid axes of a walk's D (G1, G2, R, columns), in place."""
    G1, G2 = D.shape[0], D.shape[1]
    prefix_sum(D.reshape((G1, G2, D.shape[2] * D.shape[3])), G1, G2)


@njit(cache=True, nogil=True)
def prefix_sum(D, G1, G2):  # pragma: no cover - compiled
    """Prefix sums over the first two axes of D (G1, G2, C), in place."""
    R = D.shape[2]
    for a in range(G1):
        for b in range(1, G2):
            for r in range(R):
                D[a, b, r] += D[a, b - 1, r]
    for a in range(1, G1):
        for b in range(G2):
            for r in range(R):
                D[a, b, r] += D[a - 1, b, r]


#: rows a block of a plain predict walks together, at most (2,048 walk a 200-tree model 1.5x
#: faster than 256: each node's visit is shared by more rows)
PREDICT_BLOCK_ROWS = 2048


def predict_block_rows(n: int) -> int:
    """Rows per block of :func:`tree_sums_kernel` for ``n`` rows: as many as PREDICT_BLOCK_ROWS,
    in the same number of blocks on every thread (at least 64 rows)."""
    return balanced_block_rows(n, 64, PREDICT_BLOCK_ROWS)


def balanced_block_rows(n: int, lo: int, cap: int) -> int:
    """Rows per block for ``n`` rows: the same number of blocks on every thread, each as big
    as ``cap`` allows, at least ``lo`` rows."""
    import numba

    threads = numba.get_num_threads()
    n_blocks = threads * -(-max(1, n) // (threads * cap))
    return int(max(lo, min(cap, -(-max(1, n) // n_blocks))))


@njit(parallel=True, cache=True, nogil=True)
def tree_sums_kernel(Xw, nodes, thr, missing_left, cat_start, cat_bits, value, roots, max_depth, block, out):  # pragma: no cover - compiled
    """Unscaled tree sums ``out[i] = sum_t value_t(leaf_t(Xw[i]))`` (a plain predict).

    The group walk with no target feature (a one-point grid): each block of
    rows goes down each tree together, and trees are added in order.
    """
    n = Xw.shape[0]
    R = value.shape[1]
    depth = max_depth + 2
    n_blocks = (n + block - 1) // block
    empty = np.zeros(1, np.int64)
    for blk in prange(n_blocks):
        start = blk * block
        stop = min(n, start + block)
        m = stop - start
        D = np.zeros((1, 1, R, m))
        walk_block(Xw, start, stop, -1, -1, empty, empty, 1, 1, nodes, thr, missing_left, cat_start, cat_bits,
                   value, roots, depth, D, True)
        for i in range(m):
            for r in range(R):
                out[start + i, r] = D[0, 0, r, i]
