"""Compiled (numba) bit-mask walk of a block of rows over a grid: the tree PD walk for small trees.

The group walk of :mod:`explainers.trees.walks` partitions a block's rows at every
split they reach, one row at a time. Where each tree has at most 64 leaves that
the grid can reach (boosting trees of depth 6 or less: XGBoost's and CatBoost's
defaults, LightGBM's 31 leaves), this walk finds the same leaves by masks, as
QuickScorer does (Lucchese et al., SIGIR 2015), with every step a pass over all
rows of the block that the compiler turns into vector instructions:

- :func:`mask_plan` (once per call) numbers the leaves of each tree that the grid
  reaches, left to right, and gives each of them its rectangle of grid points
  ``[lo1, hi1) x [lo2, hi2)`` (cut at the splits on the target features, as the
  group walk cuts the rows' grid ranges). For every other split it keeps the
  leaves below each child as a mask.
- :func:`mask_walk_block`: a row starts from all of a tree's leaves; each split on
  another feature clears, by one AND, the leaves of the child the row does not take
  (a NaN goes where the split sends it). The leaves left are those whose path the
  row's own values follow; for each grid point exactly one of them holds it in its
  rectangle. Each leaf then adds its value over its rectangle to the rows that kept
  it, through the same difference array as the group walk.

The leaves are added in the group walk's order (left first), tree by tree, so the
two walks give the same sums, bit for bit. Nodes with a rule (categorical sets,
zero-as-missing) on a feature other than the targets, and trees with more than
64 reachable leaves, are not for this walk: :func:`mask_plan` then says so and the
caller takes the group walk.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros

from .walks import walk_block

__all__ = ["mask_plan", "mask_walk_block", "walk_plan", "no_plan", "walk_trees", "predict_plan", "mask_tree_sums_kernel",
           "MAX_MASK_LEAVES"]

#: leaves one mask holds
MAX_MASK_LEAVES = 64


@njit(cache=True, nogil=True)
def _bits(a, b):  # pragma: no cover - compiled
    """The mask of bits ``a .. b - 1`` (0 <= a <= b <= 64)."""
    if b - a >= 64:
        return np.uint64(0xFFFFFFFFFFFFFFFF)
    return np.uint64(((np.uint64(1) << np.uint64(b - a)) - np.uint64(1)) << np.uint64(a))


@njit(cache=True, nogil=True)
def mask_plan(nodes, cat_start, roots, f1, f2, pos1, pos2, G1, G2):  # pragma: no cover - compiled
    """The masks and leaf rectangles of every tree, or ``ok = False`` where a tree does not fit.

    Returns ``(ok, node_start, q_node, keep_right, keep_left, leaf_start, leaf_node,
    leaf_box)``: tree t's splits on other features are entries
    ``node_start[t]:node_start[t + 1]`` (their node, and the masks a row keeps when it goes
    right or left), its reachable leaves entries ``leaf_start[t]:leaf_start[t + 1]`` in the
    group walk's order (node and ``lo1, hi1, lo2, hi2``).
    """
    n_nodes = nodes.shape[0]
    T = roots.shape[0]
    node_start = np.zeros(T + 1, np.int64)
    leaf_start = np.zeros(T + 1, np.int64)
    q_node = np.empty(n_nodes, np.int64)
    keep_right = np.empty(n_nodes, np.uint64)
    keep_left = np.empty(n_nodes, np.uint64)
    leaf_node = np.empty(n_nodes, np.int64)
    leaf_box = np.empty((n_nodes, 4), np.int64)
    # one tree's visit in pre-order (left first): node, box, children's visit numbers, leaves below
    size = 1
    for t in range(T):  # the largest tree's nodes: the scratch arrays below are reused per tree
        size = max(size, (roots[t + 1] if t + 1 < T else n_nodes) - roots[t])
    v_node = np.empty(size, np.int64)
    v_box = np.empty((size, 4), np.int64)
    v_first = np.empty(size, np.int64)  # leaf number at entry
    v_count = np.zeros(size, np.int64)
    v_left = np.empty(size, np.int64)
    v_right = np.empty(size, np.int64)
    v_parent = np.empty(size, np.int64)
    v_side = np.empty(size, np.int64)  # 0 left child, 1 right child
    s_visit = np.empty(size + 1, np.int64)
    nq = 0
    nl = 0
    for t in range(T):
        nv = 0
        sp = 0
        # the stack holds visits prepared but not yet entered; the root first
        v_node[0] = roots[t]
        v_box[0, 0] = 0
        v_box[0, 1] = G1
        v_box[0, 2] = 0
        v_box[0, 3] = G2
        v_parent[0] = -1
        v_side[0] = 0
        s_visit[0] = 0
        sp = 1
        nv = 1
        leaves = 0
        while sp > 0:
            sp -= 1
            k = s_visit[sp]
            node = v_node[k]
            v_first[k] = leaves
            v_left[k] = -1
            v_right[k] = -1
            v_count[k] = 0
            par = v_parent[k]
            if par >= 0:
                if v_side[k] == 0:
                    v_left[par] = k
                else:
                    v_right[par] = k
            f = nodes[node, 0]
            if f < 0:
                leaves += 1
                v_count[k] = 1
                continue
            lo1 = v_box[k, 0]
            hi1 = v_box[k, 1]
            lo2 = v_box[k, 2]
            hi2 = v_box[k, 3]
            go_l = True
            go_r = True
            cut1 = -1
            cut2 = -1
            if f == f1:
                p = pos1[node]
                go_l = p > lo1
                go_r = p < hi1
                cut1 = p
            elif f == f2:
                p = pos2[node]
                go_l = p > lo2
                go_r = p < hi2
                cut2 = p
            elif cat_start[node] >= 0:
                return (False, node_start, q_node, keep_right, keep_left, leaf_start, leaf_node, leaf_box)
            # push right then left: the left child is entered first
            if nv + 2 > size:  # more visits than the largest tree has nodes: not a tree (never for a valid ensemble)
                return (False, node_start, q_node, keep_right, keep_left, leaf_start, leaf_node, leaf_box)
            for side in (1, 0):
                if (side == 1 and not go_r) or (side == 0 and not go_l):
                    continue
                c = nv
                nv += 1
                v_node[c] = nodes[node, 1 + side]
                v_box[c, 0] = lo1
                v_box[c, 1] = hi1
                v_box[c, 2] = lo2
                v_box[c, 3] = hi2
                # a one-sided split (every grid value of the range on one side) keeps the range
                if cut1 >= 0:
                    if side == 0:
                        v_box[c, 1] = min(hi1, cut1)
                    else:
                        v_box[c, 0] = max(lo1, cut1)
                if cut2 >= 0:
                    if side == 0:
                        v_box[c, 3] = min(hi2, cut2)
                    else:
                        v_box[c, 2] = max(lo2, cut2)
                v_parent[c] = k
                v_side[c] = side
                s_visit[sp] = c
                sp += 1
        if leaves > MAX_MASK_LEAVES:
            return (False, node_start, q_node, keep_right, keep_left, leaf_start, leaf_node, leaf_box)
        # leaves below each visit (children are visited after their parent)
        for k in range(nv - 1, -1, -1):
            if v_left[k] >= 0:
                v_count[k] += v_count[v_left[k]]
            if v_right[k] >= 0:
                v_count[k] += v_count[v_right[k]]
        # leaves at their number (left to right), splits on other features with their masks
        everything = _bits(0, leaves)
        for k in range(nv):
            node = v_node[k]
            f = nodes[node, 0]
            if f < 0:
                at = nl + v_first[k]
                leaf_node[at] = node
                for j in range(4):
                    leaf_box[at, j] = v_box[k, j]
            elif f != f1 and f != f2:
                first = v_first[k]
                n_left = v_count[v_left[k]] if v_left[k] >= 0 else 0
                n_right = v_count[v_right[k]] if v_right[k] >= 0 else 0
                q_node[nq] = node
                # going right clears the left child's leaves, going left the right child's
                keep_right[nq] = everything & ~_bits(first, first + n_left)
                keep_left[nq] = everything & ~_bits(first + n_left, first + n_left + n_right)
                nq += 1
        nl += leaves
        node_start[t + 1] = nq
        leaf_start[t + 1] = nl
    return (True, node_start, q_node[:nq], keep_right[:nq], keep_left[:nq], leaf_start, leaf_node[:nl],
            leaf_box[:nl])


@njit(cache=True, nogil=True)
def mask_walk_block(Xw, start, stop, nodes, thr, missing_left, value, node_start, q_node, keep_right, keep_left,
                    leaf_start, leaf_node, leaf_box, trees, G1, G2, D, per_row):  # pragma: no cover - compiled
    """Add the leaf values of trees ``trees`` for rows ``start:stop`` of ``Xw`` into D, as
    :func:`explainers.trees.walks.walk_block` does (D: (G1, G2, R, rows) with ``per_row``,
    else (G1, G2, R, 1)), from the plan of :func:`mask_plan`."""
    m = stop - start
    XbT = np.ascontiguousarray(Xw[start:stop].T)
    M = np.empty(m, np.uint64)
    for t in trees:
        _kept_leaves(XbT, M, t, nodes, thr, missing_left, node_start, q_node, keep_right, keep_left, leaf_start)
        _leaves_by_passes(M, leaf_start[t], leaf_start[t + 1], leaf_node, leaf_box, value, G1, G2, D, per_row)


@njit(cache=True, nogil=True, inline="always")
def _kept_leaves(XbT, M, t, nodes, thr, missing_left, node_start, q_node, keep_right, keep_left,
                 leaf_start):  # pragma: no cover - compiled
    """Each row's mask of tree t's leaves its path reaches (XbT: the rows' columns): all of them,
    then, split by split on another feature, one AND clearing those of the child it does not take."""
    m = M.shape[0]
    everything = _bits(0, leaf_start[t + 1] - leaf_start[t])
    for i in range(m):
        M[i] = everything
    for q in range(node_start[t], node_start[t + 1]):
        node = q_node[q]
        x = XbT[nodes[node, 0]]
        th = thr[node, 3]
        kr = keep_right[q]
        kl = keep_left[q]
        if missing_left[node]:  # NaN compares false: it goes left
            for i in range(m):
                M[i] &= kr if x[i] > th else kl
        else:
            for i in range(m):
                M[i] &= kl if x[i] <= th else kr


@njit(cache=True, nogil=True)
def _leaves_by_passes(M, l0, l1, leaf_node, leaf_box, value, G1, G2, D, per_row):  # pragma: no cover - compiled
    """Leaves ``l0:l1`` of a tree into D, each by a pass over every row: its value where the
    row kept it, 0.0 (which changes no sum) where not. (Adding row by row over each row's kept
    leaves, lowest bit first, was no faster on trees of 30-60 leaves.)"""
    m = M.shape[0]
    R = value.shape[1]
    one = np.uint64(1)
    for l in range(l0, l1):
        bit = np.uint64(l - l0)
        node = leaf_node[l]
        lo1 = leaf_box[l, 0]
        hi1 = leaf_box[l, 1]
        lo2 = leaf_box[l, 2]
        hi2 = leaf_box[l, 3]
        for r in range(R):
            v = value[node, r]
            if v == 0.0:
                continue  # a multiclass boosting tree fills one column of R
            if per_row:
                _add_kept(D[lo1, lo2, r], M, bit, v)
                if hi2 < G2:
                    _add_kept(D[lo1, hi2, r], M, bit, -v)
                if hi1 < G1:
                    _add_kept(D[hi1, lo2, r], M, bit, -v)
                    if hi2 < G2:
                        _add_kept(D[hi1, hi2, r], M, bit, v)
            else:
                c = 0
                for i in range(m):
                    c += np.int64((M[i] >> bit) & one)
                if c > 0:
                    _add_box(D, 0, lo1, hi1, lo2, hi2, r, v * c, G1, G2)


@njit(cache=True, nogil=True, inline="always")
def _add_box(D, i, lo1, hi1, lo2, hi2, r, w, G1, G2):  # pragma: no cover - compiled
    """``w`` over the grid rectangle [lo1, hi1) x [lo2, hi2) of column i, by its difference array's corners."""
    D[lo1, lo2, r, i] += w
    if hi2 < G2:
        D[lo1, hi2, r, i] -= w
    if hi1 < G1:
        D[hi1, lo2, r, i] -= w
        if hi2 < G2:
            D[hi1, hi2, r, i] += w


@njit(cache=True, nogil=True, inline="always")
def _add_kept(d, M, bit, v):  # pragma: no cover - compiled
    one = np.uint64(1)
    for i in range(d.shape[0]):
        d[i] += v if (M[i] >> bit) & one else 0.0


def no_plan():
    """A plan that sends every walk to the group walk (the types :func:`mask_plan` returns)."""
    e = np.zeros(0, np.int64)
    return (False, np.zeros(1, np.int64), e, np.zeros(0, np.uint64), np.zeros(0, np.uint64),
            np.zeros(1, np.int64), e, np.zeros((0, 4), np.int64))


def walk_plan(ens, f1: int, f2: int, pos1: np.ndarray, pos2: np.ndarray, G1: int, G2: int):
    """The mask walk's plan for these target features and grid positions, where every tree
    fits it (:func:`mask_plan`); else :func:`no_plan` (the group walk)."""
    nodes, _ = ens.packed_nodes
    plan = mask_plan(nodes, np.ascontiguousarray(ens.cat_start, np.int64), ens.roots, f1, f2, pos1, pos2, G1, G2)
    return plan if plan[0] else no_plan()


@njit(cache=True, nogil=True)
def walk_trees(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits, value,
               roots, trees, depth, D, per_row, plan):  # pragma: no cover - compiled
    """Trees ``trees`` (positions in ``roots``) for rows ``start:stop`` into D, by the mask walk
    where ``plan`` holds one, else by the group walk (:func:`explainers.trees.walks.walk_block`);
    the same sums either way."""
    if plan[0]:
        mask_walk_block(Xw, start, stop, nodes, thr, missing_left, value, plan[1], plan[2], plan[3], plan[4],
                        plan[5], plan[6], plan[7], trees, G1, G2, D, per_row)
    else:
        walk_block(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits,
                   value, roots[trees], depth, D, per_row)


def predict_plan(ens):
    """The mask plan of a plain predict (no target feature), kept on the ensemble; ``no_plan()``
    where a tree does not fit it (:func:`mask_plan`)."""
    plan = ens.__dict__.get("_predict_plan")  # a frozen dataclass: its dict, not setattr
    if plan is None:
        empty = np.zeros(len(ens.feature), np.int64)
        plan = ens.__dict__["_predict_plan"] = walk_plan(ens, -1, -1, empty, empty, 1, 1)
    return plan


@njit(parallel=True, cache=True, nogil=True)
def mask_tree_sums_kernel(Xw, nodes, thr, missing_left, value, plan, block, out):  # pragma: no cover - compiled
    """Unscaled tree sums ``out[i] = sum_t value_t(leaf_t(Xw[i]))`` by the masks of a
    :func:`predict_plan` (every split clears the leaves of the child a row does not take; the
    leaf left is the lowest bit), trees added in order: the group walk's
    (:func:`explainers.trees.walks.tree_sums_kernel`) sums, bit for bit. 1M rows of a 200-tree
    XGBoost model of depth 6: 0.5x the group walk's time."""
    n = Xw.shape[0]
    R = value.shape[1]
    node_start, q_node, keep_right, keep_left, leaf_start, leaf_node = plan[1], plan[2], plan[3], plan[4], plan[5], \
        plan[6]
    T = leaf_start.shape[0] - 1
    n_blocks = (n + block - 1) // block
    for blk in prange(n_blocks):
        start = blk * block
        stop = min(n, start + block)
        m = stop - start
        XbT = np.ascontiguousarray(Xw[start:stop].T)
        M = np.empty(m, np.uint64)
        D = np.zeros((R, m))
        for t in range(T):
            l0 = leaf_start[t]
            _kept_leaves(XbT, M, t, nodes, thr, missing_left, node_start, q_node, keep_right, keep_left, leaf_start)
            for r in range(R):
                d = D[r]
                for i in range(m):  # one leaf is left of each row's: its lowest bit
                    d[i] += value[leaf_node[l0 + trailing_zeros(M[i])], r]
        for i in range(m):
            for r in range(R):
                out[start + i, r] = D[r, i]
