"""What the segment modules share: the bounds on what a segment (or its token) may hold, the
checks and the formatting of its values, how a column is classed, and the model adapter."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..errors import InvalidParameterError
from ..model import ModelAdapter

#: longest token :meth:`Segment.from_token` reads (and :meth:`Segment.to_token` writes)
MAX_TOKEN_CHARS = 8_000
#: conditions per segment, values per set, characters per name: bounds on what a token can ask for
MAX_CONDITIONS = 50
MAX_VALUES = 1_000
MAX_NAME_CHARS = 200
MAX_FEATURE_CHARS = 1_000
#: how a row's error is measured; "auto": absolute error for a regressor, 1 - p(true class)
#: for a classifier with predict_proba, else 0/1 misclassification
ERROR_KINDS = ("auto", "absolute", "proba", "misclassified")
_ERROR_WORDS = {"auto": "error", "absolute": "absolute error", "proba": "1 − p(true class)",
                "misclassified": "misclassification (0/1)"}
_MAX_SET_INT = 2 ** 53  # integers beyond this do not survive a trip through a browser's JSON


# ---------------------------------------------------------------- value checks
def _check_text(value, what: str, limit: int) -> str:
    if not isinstance(value, str) or not value or len(value) > limit:
        raise InvalidParameterError(
            f"The {what} must be non-empty text of at most {limit} characters. Got {_short(value)} instead."
        )
    return value


def _check_bound(value, what: str) -> float | None:
    """A range or error-band end: None (open) or a finite number, kept as float."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidParameterError(f"The {what} must be a finite number or None (open). Got {_short(value)} instead.")
    try:
        out = float(value)
    except (OverflowError, ValueError):
        out = math.inf
    if not math.isfinite(out):
        raise InvalidParameterError(f"The {what} must be a finite number or None (open). Got {_short(value)} instead.")
    return out


def _check_flag(value, what: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError(f"The {what} must be True or False. Got {_short(value)} instead.")
    return bool(value)


def _check_value(value, what: str):
    """One member of a set: text, a bool, an int within 2**53 or a finite float (numpy scalars
    become Python ones, so sets compare and serialise the same way)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, str):
        if len(value) > MAX_FEATURE_CHARS:
            raise InvalidParameterError(f"A value of the {what} is longer than {MAX_FEATURE_CHARS} characters.")
        return value
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if abs(value) > _MAX_SET_INT:
            raise InvalidParameterError(f"A value of the {what} is an integer beyond ±2**53: {_short(value)}.")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidParameterError(
                f"The {what} holds {value!r}; give empty cells with include_empty=True, and only finite numbers."
            )
        return value
    raise InvalidParameterError(
        f"The {what} may hold text, numbers and True/False only. Got {_short(value)} "
        f"({type(value).__name__}) instead."
    )


def _check_values(values, what: str) -> frozenset:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InvalidParameterError(
            f"The {what} must be a collection of values (a list or set). Got {_short(values)} instead.")
    out = []
    for i, v in enumerate(values):
        if i >= MAX_VALUES:
            raise InvalidParameterError(f"The {what} holds more than {MAX_VALUES} values; give fewer.")
        if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
            raise InvalidParameterError(f"The {what} holds an empty value; use include_empty=True for empty cells.")
        out.append(_check_value(v, what))
    if not out:
        raise InvalidParameterError(f"The {what} is empty: give at least one value.")
    return frozenset(out)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _sorted_values(values) -> list:
    """A set's values in one fixed order (by type, then value): stable tokens and text."""
    order = {bool: 0, int: 1, float: 1, str: 2}
    return sorted(values, key=lambda v: (order.get(type(v), 3), v if not isinstance(v, bool) else int(v)))


def _fmt_num(v: float) -> str:
    """A bound as a person writes it: 40 rather than 40.0, the shortest exact decimal otherwise."""
    if float(v).is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(float(v))


def _fmt_value(v) -> str:
    return _fmt_num(v) if isinstance(v, float) else str(v)


def _fmt_set(values, limit: int = 12) -> str:
    vals = [_fmt_value(v) for v in _sorted_values(values)]
    if len(vals) > limit:
        vals = vals[:limit] + [f"… {len(vals) - limit} more"]
    return "{" + ", ".join(vals) + "}"


def _fmt_band(name: str, lo, hi) -> str:
    if lo is not None and hi is not None:
        return f"{_fmt_num(lo)} ≤ {name} < {_fmt_num(hi)}"
    if lo is not None:
        return f"{name} ≥ {_fmt_num(lo)}"
    return f"{name} < {_fmt_num(hi)}"


def _check_ends(lo, hi, what: str, allow_both_open: bool) -> None:
    if lo is None and hi is None and not allow_both_open:
        raise InvalidParameterError(f"The {what} needs lo, hi or both (an end set to None is open).")
    if lo is not None and hi is not None and not lo < hi:
        raise InvalidParameterError(
            f"The {what} needs lo < hi (it selects lo <= x < hi). Got lo={_fmt_num(lo)}, hi={_fmt_num(hi)}."
        )


def _is_numeric(col: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(col.dtype) and not isinstance(col.dtype, pd.CategoricalDtype)


def _kind_words(col: pd.Series) -> str:
    if isinstance(col.dtype, pd.CategoricalDtype):
        return "categories"
    if pd.api.types.is_datetime64_any_dtype(col.dtype):
        return "dates"
    return "text"


def _adapter(model) -> ModelAdapter:
    if isinstance(model, ModelAdapter):
        return model if model.output == "auto" and model.class_index is None else model.with_output("auto", None)
    return ModelAdapter(model)
