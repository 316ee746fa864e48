"""Per-column summary of a data table (the Model page's features table and the report's):
type, range, mean, distinct values and empty cells of every column."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

#: columns summarised side by side in threads (pandas' hash tables and numpy's reductions
#: release the GIL): a million rows of 28 columns 0.85 s -> 0.45 s on two cores
MAX_THREADS = 4
#: below this many cells the threads cost more than they save
THREADS_FROM_CELLS = 200_000


def distinct_count(s: pd.Series) -> int:
    """``s.nunique(dropna=True)``: for a numeric column from one hash pass over its values
    (empty cells are one value there, taken off)."""
    if s.dtype.kind in "iub":
        return int(len(pd.unique(s.to_numpy())))
    if s.dtype.kind == "f":
        values = s.to_numpy()
        return int(len(pd.unique(values)) - bool(np.isnan(values).any()))
    return int(s.nunique(dropna=True))


def _column(name, s: pd.Series) -> dict:
    numeric = pd.api.types.is_numeric_dtype(s)
    return {
        "feature": name,
        "type": "numeric" if numeric else "categorical",
        "dtype": str(s.dtype),
        "min": float(s.min()) if numeric else None,
        "max": float(s.max()) if numeric else None,
        "mean": float(s.mean()) if numeric else None,
        "distinct": distinct_count(s),
        "missing": int(s.isna().sum()),
    }


def feature_summary(X: pd.DataFrame, threads: int | None = None) -> pd.DataFrame:
    """One row per column of ``X``: feature, type (numeric / categorical), dtype, min, max,
    mean (numeric columns), distinct (non-empty values), missing (empty cells). ``threads``:
    columns summarised at once (default: up to MAX_THREADS on a large table, one on a small)."""
    if threads is None:
        big = X.shape[0] * X.shape[1] >= THREADS_FROM_CELLS
        threads = min(MAX_THREADS, os.cpu_count() or 1, X.shape[1]) if big else 1
    columns = list(X.columns)
    if threads <= 1:
        rows = [_column(c, X[c]) for c in columns]
    else:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="glassbox-summary") as pool:
            rows = list(pool.map(lambda c: _column(c, X[c]), columns))
    return pd.DataFrame(rows, columns=["feature", "type", "dtype", "min", "max", "mean", "distinct", "missing"])
