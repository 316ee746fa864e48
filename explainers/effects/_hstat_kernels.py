"""Compiled (numba) kernel behind :func:`explainers.effects.hstat.h_statistic`.

Two-feature partial dependence of a tree model at chosen grid points when the
model's prediction is a nonlinear function of the summed trees (a boosting
classifier's probability, a log-link regressor). The tree walk of
:mod:`explainers.trees.walks` gives each row's summed tree values over the whole
grid (a difference array and one prefix sum); the transform is then applied at
the few points wanted only, not at every grid cell. For an identity transform
the averaged walk of :func:`explainers.effects._tree_kernels.pd_sum_kernel` is
cheaper and used instead.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..trees.mask_walk import walk_trees
from ..trees.walks import prefix_sums

__all__ = ["pd2_points_kernel"]


@njit(cache=True, nogil=True, inline="always")
def _output(cell, base, scale, tcode, col):
    """One output column of ``transform(base + scale * cell)`` (codes as in TRANSFORMS)."""
    if tcode == 0:
        return base[col] + scale * cell[col]
    if tcode == 1:
        return np.exp(base[col] + scale * cell[col])
    if tcode == 2:
        p = 1.0 / (1.0 + np.exp(-(base[0] + scale * cell[0])))
        return p if col == 1 else 1.0 - p
    m = -np.inf
    R = cell.shape[0]
    for r in range(R):
        z = base[r] + scale * cell[r]
        if z > m:
            m = z
    s = 0.0
    for r in range(R):
        s += np.exp(base[r] + scale * cell[r] - m)
    return np.exp(base[col] + scale * cell[col] - m) / s


@njit(parallel=True, cache=True, nogil=True)
def pd2_points_kernel(Xw, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits, value, roots,
                      base, scale, tcode, col, max_depth, block, p1, p2,
                      sums, plan):  # pragma: no cover - compiled
    """Sum over the rows of ``Xw`` of one output at grid points ``(p1[q], p2[q])``.

    ``sums`` has shape (n_blocks, n_points); block ``b`` (rows ``b*block`` to
    ``(b+1)*block``) adds its rows' outputs into ``sums[b]``. ``plan``: the mask walk's
    (:func:`explainers.trees.mask_walk.walk_plan`), or none (the group walk).
    """
    n = Xw.shape[0]
    R = value.shape[1]
    depth = max_depth + 2
    n_blocks = (n + block - 1) // block
    P = p1.shape[0]
    for blk in prange(n_blocks):
        start = blk * block
        stop = min(n, start + block)
        m = stop - start
        D = np.zeros((G1, G2, R, m))
        walk_trees(Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, missing_left, cat_start, cat_bits, value,
                   roots, np.arange(roots.shape[0]), depth, D, True, plan)
        prefix_sums(D)
        acc = sums[blk]
        cell = np.empty(R)
        for q in range(P):
            Dq = D[p1[q], p2[q]]
            for i in range(m):
                for r in range(R):
                    cell[r] = Dq[r, i]
                acc[q] += _output(cell, base, scale, tcode, col)
