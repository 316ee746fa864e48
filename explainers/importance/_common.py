"""Input checks and helpers shared by the importance methods.

The checks run once, at the public entry points, and raise the package's errors
with a fix in the message; :func:`stack_copies` builds the permuted copies of
rows that the permutation methods score.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..cells import missing_target
from ..errors import InvalidDataError, param_error
from ..model import ModelAdapter

__all__ = [
    "DEFAULT_MAX_CELLS",
    "Progress",
    "split_pipeline",
    "check_X",
    "check_y",
    "missing_target",
    "rows_left_out_note",
    "check_int",
    "check_progress",
    "stack_copies",
]

#: cells (rows x columns) of permuted copies built and predicted at once; bounds memory
DEFAULT_MAX_CELLS = 2**23
Progress = Callable[[int, int], None]


def split_pipeline(model):
    """Return (preprocessor or None, final estimator)."""
    try:
        from sklearn.pipeline import Pipeline
    except ImportError:  # pragma: no cover
        return None, model
    if isinstance(model, Pipeline):
        return (model[:-1] if len(model.steps) > 1 else None), model[-1]
    return None, model


# ------------------------------------------------------------------------------ inputs
def check_X(adapter: ModelAdapter, X, func: str) -> pd.DataFrame:
    if X is None:
        raise InvalidDataError(f"{func} needs X, the rows to compute importance on.")
    frame = adapter.to_frame(X)
    if len(frame) < 2:
        raise InvalidDataError(
            f"{func} needs at least 2 rows of X to permute a column; got {len(frame)}."
        )
    return frame


def rows_left_out_note(n_left_out: int, n_rows: int) -> str:
    """The sentence that says how many rows were left out for an empty target."""
    return (f"{n_left_out:,} of {n_rows:,} rows left out: the target is empty there, so there is "
            "no true value to score them against.")


def missing_rows(y) -> np.ndarray:
    """Rows with an empty target cell (any of its columns, for a target of several columns)."""
    mask = missing_target(y)
    return mask.any(axis=1) if mask.ndim == 2 else mask


def check_y(y, n_rows: int, task: str, classes, func: str, *, allow_missing: bool = False,
            n_targets: int = 1) -> np.ndarray:
    """Validate the target once at the entry point; return a 1-D array (or, for a
    regressor of ``n_targets`` > 1 outputs given all its target columns, (n_rows, n_targets)).

    With ``allow_missing`` empty target cells (see :func:`missing_target`) are
    kept in the returned array, for the caller to leave those rows out; only the
    other values are checked. Without it they are an error.
    """
    if y is None:
        raise InvalidDataError(
            f"{func} needs the target y (the true values for the rows of X) to score the "
            "model; pass y, or pick the target column when loading the data."
        )
    if n_targets > 1 and np.ndim(y) == 2 and np.shape(y)[1] == n_targets:
        return _check_target_columns(np.asarray(y), n_rows, func, allow_missing)
    if isinstance(y, pd.DataFrame):
        if y.shape[1] != 1:
            raise InvalidDataError(
                f"{func} takes one target column; y has {y.shape[1]} columns. Pass one column."
            )
        y = y.iloc[:, 0]
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise InvalidDataError(
            f"{func} takes a 1-D target; y has shape {arr.shape}. Pass one column."
        )
    if len(arr) != n_rows:
        raise InvalidDataError(
            f"y has {len(arr)} values but X has {n_rows} rows; pass the target of the same rows."
        )
    empty = missing_target(arr)
    n_empty = int(empty.sum())
    if n_empty == n_rows:
        raise InvalidDataError(
            f"The target is empty in every row ({n_rows:,}), so {func} has no true values to score "
            "the model against. Pick the column that holds the true values."
        )
    if n_empty and not allow_missing:
        raise InvalidDataError(
            f"The target is empty in {n_empty:,} of {n_rows:,} rows; {func} needs a true value "
            "for every row it uses. Drop those rows, or use permutation_importance, which "
            "leaves them out."
        )
    if not n_empty:
        if task == "regression":
            return _check_regression_target(arr)
        return _check_class_labels(arr, classes)
    if task == "regression":
        out = np.full(n_rows, np.nan)
        out[~empty] = _check_regression_target(arr[~empty]).astype(float)
        return out
    _check_class_labels(arr[~empty], classes)
    return arr


def _check_target_columns(arr: np.ndarray, n_rows: int, func: str, allow_missing: bool) -> np.ndarray:
    """All the target columns of a regressor of several outputs, as floats (n_rows, k)."""
    if len(arr) != n_rows:
        raise InvalidDataError(
            f"y has {len(arr)} rows but X has {n_rows}; pass the targets of the same rows.")
    empty = missing_rows(arr)
    if empty.all() or (empty.any() and not allow_missing):
        raise InvalidDataError(
            f"A target is empty in {int(empty.sum()):,} of {n_rows:,} rows; {func} needs every target of a "
            "row to score it. Drop those rows.")
    out = np.full(arr.shape, np.nan)
    out[~empty] = _check_regression_target(np.asarray(arr[~empty])).astype(float)
    return out


def _check_regression_target(arr: np.ndarray) -> np.ndarray:
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError):
            raise InvalidDataError(
                f"The model is a regressor but y is not numeric (dtype {arr.dtype}, e.g. "
                f"{arr[0]!r}); pass the numeric target column."
            ) from None
    if np.isnan(arr.astype(float)).any():
        raise InvalidDataError("y contains NaN; drop those rows before scoring.")
    return arr


def _check_class_labels(arr: np.ndarray, classes) -> np.ndarray:
    known = set(np.asarray(classes).tolist())
    unknown = [v for v in pd.unique(arr).tolist() if v not in known]
    if unknown:
        raise InvalidDataError(
            f"y contains {len(unknown)} label(s) the classifier does not know "
            f"(e.g. {unknown[:3]!r}); its classes are {sorted(map(str, known))[:10]}. "
            "Pass the target column the model was trained on."
        )
    return arr


def check_int(value, name: str, func: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise param_error(name, func, f"an int >= {low}", value)
    return int(value)


def check_progress(progress, func: str):
    if progress is not None and not callable(progress):
        raise param_error("progress", func, "None or a callable(done, total)", progress)
    return progress


# ---------------------------------------------------------------------- permuted copies
def stack_copies(frame: pd.DataFrame, rows: np.ndarray, perms: Sequence[tuple[int, np.ndarray]]):
    """Stack copies of ``frame.iloc[rows]``; in copy c, column j_c is taken at perm_c.

    ``perms`` holds (column position, row positions into ``frame``) pairs. Built
    column by column with one ``take`` each, which keeps every dtype
    (categoricals included) as the model saw it.
    """
    n = len(rows)
    data = {}
    for j, name in enumerate(frame.columns):
        idx = np.tile(rows, len(perms))
        for c, (jc, perm) in enumerate(perms):
            if jc == j:
                idx[c * n : (c + 1) * n] = perm
        col = frame.iloc[:, j]
        if isinstance(col.dtype, np.dtype):
            data[name] = col.to_numpy()[idx]
        else:
            data[name] = col.array.take(idx)
    return pd.DataFrame(data, columns=frame.columns)
