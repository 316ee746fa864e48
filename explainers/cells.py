"""What counts as an empty cell of a target column (no true value to score a row against): one
small module, which the Model and Quality pages read without importing the importance engines."""
from __future__ import annotations

import numpy as np
import pandas as pd


def missing_target(y) -> np.ndarray:
    """Boolean mask of the empty target cells: NaN, None, pd.NA, or blank text.

    A CSV with a blank cell in the target column gives NaN there (or an empty
    string in a text column read as such); those rows have no true value to score.
    """
    arr = np.asarray(y, dtype=object) if not isinstance(y, np.ndarray) else y
    if arr.dtype.kind in "biuc":
        return np.zeros(arr.shape, dtype=bool)
    if arr.dtype.kind in "fm":
        return np.isnan(arr) if arr.dtype.kind == "f" else np.isnat(arr)
    if arr.dtype.kind in "OUS" and arr.ndim == 1:
        # each distinct value looked at once (a million rows hold a few labels)
        codes, uniques = pd.factorize(pd.Series(arr, dtype=object), use_na_sentinel=True)
        blank = np.array([isinstance(v, str) and not v.strip() for v in uniques] + [True], dtype=bool)
        return blank[codes]  # code -1 (an empty cell) takes the last entry
    mask = np.asarray(pd.isna(arr), dtype=bool)
    if arr.dtype.kind in "OUS":
        mask |= np.fromiter((isinstance(v, str) and not v.strip() for v in arr.ravel()), bool,
                            count=arr.size).reshape(arr.shape)
    return mask
