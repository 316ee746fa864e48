"""What a page needs to compare a segment with the rest: :func:`split_rows` and
:func:`too_small`."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InvalidParameterError, param_error


def split_rows(X, mask) -> tuple:
    """``(rows in the segment, the rest)`` of X by a boolean mask.

    Parameters
    ----------
    X : DataFrame or ndarray of shape (n_samples, ...)
        Also a Series or a 1-D array (the target, predictions).
    mask : array-like of bool, shape (n_samples,)

    Returns
    -------
    tuple of two objects of X's type
        Rows keep their order (and a frame's index).
    """
    m = _check_mask(mask, len(X), "split_rows")
    if isinstance(X, (pd.DataFrame, pd.Series)):
        return X.iloc[np.flatnonzero(m)], X.iloc[np.flatnonzero(~m)]
    arr = np.asarray(X)
    return arr[m], arr[~m]


def too_small(mask, min_rows: int = 20) -> str | None:
    """The message to show instead of a comparison drawn from too few rows, or None.

    Parameters
    ----------
    mask : array-like of bool, shape (n_samples,)
        The segment's rows.
    min_rows : int, default=20
        Rows needed on each side (the segment and the rest).

    Returns
    -------
    str or None
        e.g. ``"The segment has 7 rows; at least 20 are needed to compare it with the rest."``
    """
    if isinstance(min_rows, bool) or not isinstance(min_rows, (int, np.integer)) or min_rows < 1:
        raise param_error("min_rows", "too_small", "an int >= 1", min_rows)
    m = _check_mask(mask, None, "too_small")
    inside = int(m.sum())
    rest = len(m) - inside

    def rows(k: int) -> str:
        return f"{k:,} row{'' if k == 1 else 's'}"

    if inside < min_rows:
        return f"The segment has {rows(inside)}; at least {min_rows:,} are needed to compare it with the rest."
    if rest < min_rows:
        return (f"The rest (the rows outside the segment) has {rows(rest)}; at least {min_rows:,} are needed "
                "to compare the segment with it.")
    return None


def _check_mask(mask, n: int | None, func: str) -> np.ndarray:
    m = np.asarray(mask)
    if m.ndim != 1 or m.dtype != bool:
        raise InvalidParameterError(
            f"The 'mask' parameter of {func} must be a 1-D array of True/False (Segment.mask gives one). "
            f"Got an array of dtype {m.dtype} and shape {m.shape} instead."
        )
    if n is not None and len(m) != n:
        raise InvalidParameterError(f"The mask of {func} has {len(m):,} values but the data has {n:,} rows.")
    return m
