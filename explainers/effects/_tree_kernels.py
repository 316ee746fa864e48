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

__all__ = ["ice_tree_kernel", "ice_block", "pd_sum_kernel", "pd_sum_block", "recursion_kernel"]

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
    walked in parallel, and their sums added before the outputs are made. The outputs
    are made in place in the block's sums, a grid point at a time over all its rows
    (:func:`_outputs_in_place`: passes the compiler vectorises), then copied or added out.
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
            m = stop - start
            D = _block_walked(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start,
                              cat_bits, value, roots, depth, Ds, blk, parts, plan)
            for ab in prange(G1 * G2):
                a = ab // G2
                b = ab % G2
                _outputs_in_place(D[a, b], m, base, scale, tcode, np.empty(m), np.empty(m, np.int64))
                if mean:
                    _add_mean(D[a, b], m, tcode, out[blk, a, b])
                else:
                    for i in range(m):
                        _copy_out(D[a, b], i, tcode, out[start + i, a, b])
        return
    for blk in prange(n_blocks):
        start = blk * block
        stop = min(n, start + block)
        ice_block(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits,
                  value, roots, base, scale, tcode, depth, out[blk:blk + 1] if mean else out[start:stop], mean, plan)


@njit(cache=True, nogil=True)
def ice_block(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits, value,
              roots, base, scale, tcode, depth, out, mean, plan):  # pragma: no cover - compiled
    """One block of :func:`ice_tree_kernel` (one part), on the calling thread: rows ``start:stop``
    walked down every tree, their outputs written to ``out`` (stop - start, G1, G2, K): ICE, or,
    with ``mean``, added into ``out[0]``."""
    m = stop - start
    D = _block_walked(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start,
                      cat_bits, value, roots, depth, np.zeros((0, G1, G2, value.shape[1], 1)), 0, 1, plan)
    top = np.empty(m)
    bits = np.empty(m, np.int64)
    for a in range(G1):
        for b in range(G2):
            _outputs_in_place(D[a, b], m, base, scale, tcode, top, bits)
    if mean:
        for a in range(G1):
            for b in range(G2):
                _add_mean(D[a, b], m, tcode, out[0, a, b])
        return
    for i0 in range(0, m, _TILE):  # a few rows at a time: their outputs stay in cache
        for a in range(G1):
            for b in range(G2):
                Dab = D[a, b]
                for i in range(i0, min(m, i0 + _TILE)):
                    _copy_out(Dab, i, tcode, out[i, a, b])


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
def _outputs_in_place(Dab, m, base, scale, tcode, top, bits):  # pragma: no cover - compiled
    """The outputs of rows ``0:m`` at one grid point, in place of their tree sums ``Dab``
    (R, rows): ``base + scale * sums``, then the transform (tcode 0 identity, 1 exp, 2 sigmoid:
    the positive class's probability in row 0, 3 softmax). ``top`` (float) and ``bits``
    (int64) are scratch of m or more entries.
    """
    R = Dab.shape[0]
    if tcode == 2:
        z = Dab[0]
        for i in range(m):
            z[i] = -(base[0] + scale * z[i])
        exp_in_place(z, m, bits)
        for i in range(m):
            z[i] = 1.0 / (1.0 + z[i])
        return
    for r in range(R):
        z = Dab[r]
        for i in range(m):
            z[i] = base[r] + scale * z[i]
    if tcode == 1:
        for r in range(R):
            exp_in_place(Dab[r], m, bits)
    elif tcode == 3:
        for i in range(m):
            top[i] = -np.inf
        for r in range(R):
            z = Dab[r]
            for i in range(m):
                top[i] = max(top[i], z[i])
        for r in range(R):
            z = Dab[r]
            for i in range(m):
                z[i] -= top[i]  # the largest becomes exactly 0, its exp exactly 1
            exp_in_place(z, m, bits)
        for i in range(m):
            top[i] = 0.0
        for r in range(R):  # the total, summed over the classes in order
            z = Dab[r]
            for i in range(m):
                top[i] += z[i]
        for r in range(R):
            z = Dab[r]
            for i in range(m):
                z[i] /= top[i]


@njit(cache=True, nogil=True, inline="always")
def _copy_out(Dab, i, tcode, o):  # pragma: no cover - compiled
    """Row i's outputs (made by :func:`_outputs_in_place`) into ``o``; sigmoid: 1 - p, p."""
    if tcode == 2:
        p = Dab[0, i]
        o[0] = 1.0 - p
        o[1] = p
    else:
        for r in range(Dab.shape[0]):
            o[r] = Dab[r, i]


@njit(cache=True, nogil=True)
def _add_mean(Dab, m, tcode, acc):  # pragma: no cover - compiled
    """Adds the outputs of rows ``0:m`` at one grid point (made by :func:`_outputs_in_place`)
    into ``acc``, each output's rows summed first."""
    if tcode == 2:
        z = Dab[0]
        neg = 0.0
        pos = 0.0
        for i in range(m):
            neg += 1.0 - z[i]
            pos += z[i]
        acc[0] += neg
        acc[1] += pos
        return
    for r in range(Dab.shape[0]):
        z = Dab[r]
        total = 0.0
        for i in range(m):
            total += z[i]
        acc[r] += total


#: exp(x) = 2^k exp(r), x = k ln 2 + r with |r| <= ln 2 / 2: ln 2 in two parts (Cody and Waite),
#: exp(r) by its Taylor series to r^13 (the rest is below 1e-17 of it)
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_C = (1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320, 1.0 / 362880,
      1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800)


@njit(cache=True, nogil=True)
def exp_in_place(x, m, bits):  # pragma: no cover - compiled
    """``x[:m] = exp(x[:m])`` within one unit in the last place, by passes the compiler
    vectorises (numba's ``np.exp`` is a call per value, 4x slower here). Where some value
    is outside [-708, 709] (its exp not a normal number) or NaN, every value takes ``np.exp``.
    ``bits``: int64 scratch of m or more entries."""
    out_of_range = 0
    for i in range(m):
        out_of_range += 0 if (x[i] >= -708.0 and x[i] <= 709.0) else 1
    if out_of_range:
        for i in range(m):
            x[i] = np.exp(x[i])
        return
    for i in range(m):
        v = x[i]
        k = np.floor(v * _LOG2E + 0.5)
        r = (v - k * _LN2_HI) - k * _LN2_LO
        p = _C[13]
        for j in range(12, -1, -1):  # Horner's rule (unrolled by the compiler)
            p = p * r + _C[j]
        x[i] = p
        bits[i] = (np.int64(k) + 1023) << 52  # 2^k as a float64's bits
    two_k = bits[:m].view(np.float64)
    for i in range(m):
        x[i] *= two_k[i]


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
        pd_sum_block(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits,
                     value, roots, np.arange(roots.shape[0])[part::parts], depth, sums[job], plan)


@njit(cache=True, nogil=True)
def pd_sum_block(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits, value,
                 roots, trees, depth, D, plan):  # pragma: no cover - compiled
    """One job of :func:`pd_sum_kernel`, on the calling thread: the sum over rows ``start:stop``
    of trees ``trees``' unscaled sums into D (G1, G2, n_raw, 1), after the prefix sums."""
    walk_trees(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits,
               value, roots, trees, depth, D, False, plan)
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
