"""Compiled (numba) kernels behind exact tree partial dependence and ICE.

They run the group walk of :mod:`explainers.trees.walks` over a sorted grid on one
or two target features and turn the summed leaf values into ICE curves
(:func:`ice_tree_kernel`) or straight into the average: for an identity
transform by :func:`pd_sum_kernel` (a leaf then costs one update per row group
rather than one per row), for any other by :func:`ice_tree_kernel` with ``mean``
(per row, with no ICE array written). :func:`recursion_kernel` is scikit-learn's weighted
(``method="recursion"``) tree traversal.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..trees.mask_walk import walk_trees
from ..trees.walks import prefix_sum, prefix_sums

__all__ = ["ice_tree_kernel", "pd_sum_kernel", "recursion_kernel"]

#: rows whose outputs are written together when ICE is finished from the sums
_TILE = 16


@njit(parallel=True, cache=True, nogil=True)
def ice_tree_kernel(
    Xw, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits, value, roots,
    base, scale, tcode, max_depth, block, parts, out, mean, plan,
):  # pragma: no cover - compiled
    """Exact ICE of every row of ``Xw`` over a G1 x G2 grid, or (``mean``) its sum per block.

    Writes ``out[i, a, b, :] = transform(base + scale * sum_t value_t(leaf))``
    for row i with its target features set to grid point (a, b). ``out`` has
    shape (n, G1, G2, K) with K = 2 for the sigmoid transform, else n_raw. With
    ``mean`` (the average of a non-identity transform, no ICE kept) ``out`` has
    shape (n_blocks, G1, G2, K) and block ``blk`` adds its rows' outputs into
    ``out[blk]`` instead. tcode: 0 identity, 1 exp, 2 sigmoid, 3 softmax. Rows are taken in blocks
    (in parallel); within a block each tree is walked by all rows together
    before the next tree, so the tree's nodes stay in cache. With ``parts`` > 1
    (fewer blocks than threads) each block's trees are split in that many parts,
    walked in parallel, and their sums added before the outputs are made.
    """
    n = Xw.shape[0]
    depth = max_depth + 2
    n_blocks = (n + block - 1) // block
    Ds = _walked_parts(Xw, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits, value,
                       roots, depth, block, parts, True, plan)
    if parts > 1:  # fewer blocks than threads: each block's outputs are made by all threads
        for blk in range(n_blocks):
            start = blk * block
            stop = min(n, start + block)
            D = _block_walked(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start,
                              cat_bits, value, roots, depth, Ds, blk, parts, plan)
            for ab in prange(G1 * G2):
                a = ab // G2
                b = ab % G2
                if mean:
                    _block_mean_into(D[a, b], stop - start, base, scale, tcode, out[blk, a, b])
                else:
                    for i in range(stop - start):
                        _transform_into(D[a, b], i, base, scale, tcode, out[start + i, a, b])
        return
    for blk in prange(n_blocks):
        start = blk * block
        stop = min(n, start + block)
        m = stop - start
        D = _block_walked(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start,
                          cat_bits, value, roots, depth, Ds, blk, parts, plan)
        if mean:
            for a in range(G1):
                for b in range(G2):
                    _block_mean_into(D[a, b], m, base, scale, tcode, out[blk, a, b])
            continue
        for i0 in range(0, m, _TILE):  # a few rows at a time: their outputs stay in cache
            for a in range(G1):
                for b in range(G2):
                    Dab = D[a, b]
                    for i in range(i0, min(m, i0 + _TILE)):
                        _transform_into(Dab, i, base, scale, tcode, out[start + i, a, b])


@njit(parallel=True, cache=True, nogil=True)
def _walked_parts(Xw, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits, value, roots, depth,
                  block, parts, per_row, plan):  # pragma: no cover - compiled
    """The walk's sums of each block of rows over each part of the trees, in parallel:
    shape (n_blocks * parts, G1, G2, R, block or 1); job ``blk * parts + part``. Nothing
    (an empty array) for one part: each block is then walked where it is used."""
    n = Xw.shape[0]
    R = value.shape[1]
    n_blocks = (n + block - 1) // block
    if parts <= 1:
        return np.zeros((0, G1, G2, R, 1))
    Ds = np.zeros((n_blocks * parts, G1, G2, R, block if per_row else 1))
    for job in prange(n_blocks * parts):
        blk = job // parts
        part = job % parts
        start = blk * block
        stop = min(n, start + block)
        walk_trees(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits, value,
                   roots, np.arange(roots.shape[0])[part::parts], depth, Ds[job], per_row, plan)
    return Ds


@njit(cache=True, nogil=True)
def _block_walked(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits, value,
                  roots, depth, Ds, blk, parts, plan):  # pragma: no cover - compiled
    """Block ``blk``'s per-row tree sums (G1, G2, R, rows) after the prefix sums: its parts
    of :func:`_walked_parts` added, or (one part) its rows walked down every tree here."""
    if parts > 1:
        D = _added_parts(Ds, blk, parts)
    else:
        D = np.zeros((G1, G2, value.shape[1], stop - start))
        walk_trees(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits,
                   value, roots, np.arange(roots.shape[0]), depth, D, True, plan)
    prefix_sums(D)
    return D


@njit(cache=True, nogil=True)
def _added_parts(Ds, blk, parts):  # pragma: no cover - compiled
    """Block ``blk``'s sums over all tree parts, added into its first part's array (returned)."""
    D = Ds[blk * parts]
    flat = D.reshape(D.size)
    for part in range(1, parts):
        other = Ds[blk * parts + part].reshape(D.size)
        for q in range(D.size):
            flat[q] += other[q]
    return D


@njit(cache=True, nogil=True)
def _block_mean_into(Dab, m, base, scale, tcode, acc):  # pragma: no cover - compiled
    """Adds the outputs of a block's ``m`` rows at one grid point (tree sums ``Dab``) into ``acc``."""
    K = acc.shape[0]
    cell = np.empty(K)
    total = np.zeros(K)  # summed here, added to acc once
    for i in range(m):
        _transform_into(Dab, i, base, scale, tcode, cell)
        for k in range(K):
            total[k] += cell[k]
    for k in range(K):
        acc[k] += total[k]


@njit(cache=True, nogil=True, inline="always")
def _transform_into(Dab, i, base, scale, tcode, o):  # pragma: no cover - compiled
    """Row i's outputs at one grid point from its tree sums ``Dab[:, i]`` into ``o``.

    tcode: 0 identity, 1 exp, 2 sigmoid (two columns: 1 - p, p), 3 softmax.
    """
    R = Dab.shape[0]
    if tcode == 0:
        for r in range(R):
            o[r] = base[r] + scale * Dab[r, i]
    elif tcode == 1:
        for r in range(R):
            o[r] = np.exp(base[r] + scale * Dab[r, i])
    elif tcode == 2:
        p = 1.0 / (1.0 + np.exp(-(base[0] + scale * Dab[0, i])))
        o[0] = 1.0 - p
        o[1] = p
    else:
        top = -np.inf
        arg = 0
        for r in range(R):
            z = base[r] + scale * Dab[r, i]
            o[r] = z
            if z > top:
                top = z
                arg = r
        total = 0.0
        for r in range(R):
            e = 1.0 if r == arg else np.exp(o[r] - top)  # exp(0) is exactly 1: one exp fewer
            o[r] = e
            total += e
        for r in range(R):
            o[r] /= total


@njit(parallel=True, cache=True, nogil=True)
def pd_sum_kernel(
    Xw, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits, value, roots, max_depth, block,
    parts, sums, plan,
):  # pragma: no cover - compiled
    """Sum over the rows of ``Xw`` of the unscaled tree sums at every grid point.

    ``sums`` has shape (n_blocks * parts, G1, G2, n_raw, 1); job ``blk * parts + part``
    receives the sum over block ``blk``'s rows of part ``part`` of the trees (after the
    prefix sums). For an identity transform the partial dependence is
    ``base + scale * sums.sum(0) / n``: a leaf then costs one update per row group,
    not one per row.
    """
    n = Xw.shape[0]
    depth = max_depth + 2
    n_blocks = (n + block - 1) // block
    for job in prange(n_blocks * parts):
        blk = job // parts
        part = job % parts
        start = blk * block
        stop = min(n, start + block)
        D = sums[job]
        walk_trees(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits,
                   value, roots, np.arange(roots.shape[0])[part::parts], depth, D, False, plan)
        prefix_sums(D)


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
    prefix_sum(D, G1, G2)
    return D
