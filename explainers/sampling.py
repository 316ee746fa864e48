"""Seeded, stratified samples of rows: the same rows on every call, each stratum (a class,
an error band) kept in proportion. The bounded first views of large data start from them."""
from __future__ import annotations

import numpy as np

__all__ = ["stratified_rows"]


def stratified_rows(strata, n: int, seed: int = 0) -> np.ndarray:
    """Positions (ascending) of a seeded sample of ``n`` rows, stratified by ``strata``.

    Each stratum gets its share of ``n`` by largest remainders (so the shares sum to
    ``n`` and each is within one row of proportional), the rows within it drawn by a
    seeded shuffle. All rows where there are no more than ``n``.

    Parameters
    ----------
    strata : array-like of shape (n_rows,)
        A label per row (class, band); NaN or None is a stratum of its own.
    n : int
    seed : int, default=0

    >>> stratified_rows(["a"] * 6 + ["b"] * 2, 4).tolist()
    [1, 2, 3, 6]
    """
    import pandas as pd

    codes, _ = pd.factorize(pd.Series(np.asarray(strata)), use_na_sentinel=True)
    codes = np.asarray(codes, dtype=np.int64) + 1  # 0: an empty cell's stratum
    total = len(codes)
    if n >= total:
        return np.arange(total)
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    counts = np.bincount(codes)
    exact = counts * (n / total)
    take = np.floor(exact).astype(np.int64)
    left = n - int(take.sum())
    if left:
        order = np.lexsort((np.arange(len(counts)), -(exact - take)))  # largest remainder first, ties by stratum
        take[order[:left]] += 1
    key = np.random.default_rng(seed).random(total)
    by = np.lexsort((key, codes))  # rows by stratum, shuffled within each
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    out = [by[a:a + k] for a, k in zip(starts, take) if k]
    return np.sort(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)
