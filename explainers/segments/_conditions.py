"""Segments: named groups of rows stated as rules, and the rules where a model fails most.

A :class:`Segment` is a name and a conjunction of conditions:

- :class:`Range` — ``lo <= x < hi`` on a numeric column (either end open);
- :class:`Categories` — the value is one of a set (text, pandas categories, numbers, booleans);
- :class:`Empty` — the cell is empty (or, with ``empty=False``, not empty);
- :class:`PredictedClass` — the classifier's predicted label is one of a set;
- :class:`ErrorBand` — ``lo <= error < hi``, the row's error against its true value
  (absolute error for regressors; ``1 - p(true class)`` or 0/1 misclassification for
  classifiers). It needs the target.

An empty cell never matches a range or a set of values unless the condition says
``include_empty=True``. ``Segment.mask(model, X, y)`` gives the rows; ``describe()``
the readable rule (``"age ≥ 40 and town in {Busan, Daegu}"``); ``to_token()`` and
:meth:`Segment.from_token` a compact URL-safe string, validated on parse, so the
dashboard keeps segments in the URL. The token is canonical (the same segment always
gives the same token), so it also serves as the segment's cache key.

:func:`propose_segments` fits a shallow decision tree to the per-row error and states
its leaves as segments on the original columns and values, with their size and
error against the rest. :func:`split_rows` and :func:`too_small` are what a page
needs to compare a segment with the rest.
"""
from __future__ import annotations

import base64
import binascii
import json
import math
import re
from decimal import ROUND_FLOOR, Decimal
from dataclasses import dataclass, field
from typing import Union

import numpy as np
import pandas as pd

from ..errors import ExplainerError, InvalidDataError, InvalidFeatureError, InvalidParameterError, param_error
from ..model import ModelAdapter

__all__ = [
    "Range",
    "Categories",
    "Empty",
    "PredictedClass",
    "ErrorBand",
    "Condition",
    "Segment",
    "ProposedSegment",
    "ERROR_KINDS",
    "MAX_TOKEN_CHARS",
    "row_errors",
    "propose_segments",
    "split_rows",
    "too_small",
]

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
#: the least share of the error's variance a split of the error tree must explain
MIN_SPLIT_GAIN = 1e-3
_ERROR_WORDS = {"auto": "error", "absolute": "absolute error", "proba": "1 − p(true class)",
                "misclassified": "misclassification (0/1)"}
_TOKEN_VERSION = 1
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_-]*\Z")
_MAX_JSON_DEPTH = 6
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


# ------------------------------------------------------------------ conditions
@dataclass(frozen=True)
class Range:
    """``lo <= feature < hi`` on a numeric column; ``None`` leaves that end open.

    Parameters
    ----------
    feature : str
        Column name.
    lo, hi : float or None, default=None
        The ends (at least one). ``lo`` is included, ``hi`` excluded.
    include_empty : bool, default=False
        Whether rows with an empty cell (NaN, None) match too. By default they never do.
    """

    feature: str
    lo: float | None = None
    hi: float | None = None
    include_empty: bool = False
    kind = "range"

    def __post_init__(self):
        _check_text(self.feature, "feature of a Range", MAX_FEATURE_CHARS)
        object.__setattr__(self, "lo", _check_bound(self.lo, "'lo' of a Range"))
        object.__setattr__(self, "hi", _check_bound(self.hi, "'hi' of a Range"))
        object.__setattr__(self, "include_empty", _check_flag(self.include_empty, "'include_empty' of a Range"))
        _check_ends(self.lo, self.hi, f"Range on {self.feature!r}", allow_both_open=False)

    def describe(self) -> str:
        text = _fmt_band(self.feature, self.lo, self.hi)
        return text + " (or empty)" if self.include_empty else text

    def _to_json(self) -> dict:
        return {"k": self.kind, "f": self.feature, "lo": self.lo, "hi": self.hi, "m": self.include_empty}

    def _mask(self, ctx: "_Context") -> np.ndarray:
        col = ctx.column(self.feature)
        if not _is_numeric(col):
            raise InvalidFeatureError(
                f"A range needs a numeric column, but {self.feature!r} holds {_kind_words(col)}: "
                "state it as categories (the values it may take) instead."
            )
        x = col.to_numpy(dtype=float, na_value=np.nan)
        empty = np.isnan(x)
        with np.errstate(invalid="ignore"):
            keep = ~empty
            if self.lo is not None:
                keep &= x >= self.lo
            if self.hi is not None:
                keep &= x < self.hi
        return keep | empty if self.include_empty else keep


@dataclass(frozen=True)
class Categories:
    """The value of ``feature`` is one of ``values`` (text, pandas categories, numbers, booleans).

    Parameters
    ----------
    feature : str
        Column name.
    values : collection
        The values that match (at least one; stored as a frozenset). Compared as the
        column holds them: ``"1"`` and ``1`` differ.
    include_empty : bool, default=False
        Whether rows with an empty cell match too.
    """

    feature: str
    values: frozenset
    include_empty: bool = False
    kind = "in"

    def __post_init__(self):
        _check_text(self.feature, "feature of a Categories condition", MAX_FEATURE_CHARS)
        object.__setattr__(self, "values", _check_values(self.values, f"values of {self.feature!r}"))
        object.__setattr__(self, "include_empty", _check_flag(self.include_empty, "'include_empty' of Categories"))

    def describe(self) -> str:
        if len(self.values) == 1:
            text = f"{self.feature} = {_fmt_value(next(iter(self.values)))}"
        else:
            text = f"{self.feature} in {_fmt_set(self.values)}"
        return text + " (or empty)" if self.include_empty else text

    def _to_json(self) -> dict:
        return {"k": self.kind, "f": self.feature, "v": _sorted_values(self.values), "m": self.include_empty}

    def _mask(self, ctx: "_Context") -> np.ndarray:
        col = ctx.column(self.feature)
        empty = np.asarray(col.isna(), dtype=bool)
        keep = np.asarray(col.isin(list(self.values)), dtype=bool) & ~empty
        return keep | empty if self.include_empty else keep


@dataclass(frozen=True)
class Empty:
    """The cell of ``feature`` is empty (NaN, None); with ``empty=False``, it is not."""

    feature: str
    empty: bool = True
    kind = "empty"

    def __post_init__(self):
        _check_text(self.feature, "feature of an Empty condition", MAX_FEATURE_CHARS)
        object.__setattr__(self, "empty", _check_flag(self.empty, "'empty' of an Empty condition"))

    def describe(self) -> str:
        return f"{self.feature} is {'empty' if self.empty else 'not empty'}"

    def _to_json(self) -> dict:
        return {"k": self.kind, "f": self.feature, "e": self.empty}

    def _mask(self, ctx: "_Context") -> np.ndarray:
        empty = np.asarray(ctx.column(self.feature).isna(), dtype=bool)
        return empty if self.empty else ~empty


@dataclass(frozen=True)
class PredictedClass:
    """The classifier's predicted label (its own ``predict``) is one of ``classes``."""

    classes: frozenset
    kind = "pred"

    def __post_init__(self):
        object.__setattr__(self, "classes", _check_values(self.classes, "classes of a PredictedClass condition"))

    def describe(self) -> str:
        if len(self.classes) == 1:
            return f"predicted class = {_fmt_value(next(iter(self.classes)))}"
        return f"predicted class in {_fmt_set(self.classes)}"

    def _to_json(self) -> dict:
        return {"k": self.kind, "v": _sorted_values(self.classes)}

    def _mask(self, ctx: "_Context") -> np.ndarray:
        adapter = ctx.adapter("a predicted-class condition")
        if adapter.task == "regression":
            raise InvalidParameterError(
                "A predicted-class condition needs a classifier; this model is a regressor. "
                "Use an error band or a range on the features instead."
            )
        known = set(adapter.classes.tolist())
        unknown = [c for c in self.classes if c not in known]
        if unknown:
            raise InvalidParameterError(
                f"The segment asks for predicted class(es) {_fmt_set(unknown)}, which this classifier does not "
                f"have; its classes are {_fmt_set(known)}. Edit the segment."
            )
        return np.asarray(pd.Series(ctx.labels()).isin(list(self.classes)), dtype=bool)


@dataclass(frozen=True)
class ErrorBand:
    """``lo <= error < hi``: the row's error against its true value (needs the target).

    Parameters
    ----------
    lo, hi : float or None, default=None
        The ends (at least one; ``None`` is open). A classifier's ``"proba"`` error is
        at most 1, so ``lo=0.5, hi=None`` is "the true class got at most half".
    error : {"auto", "absolute", "proba", "misclassified"}, default="auto"
        How the error is measured; see :func:`row_errors`.

    Rows whose target is empty never match.
    """

    lo: float | None = None
    hi: float | None = None
    error: str = "auto"
    kind = "error"

    def __post_init__(self):
        object.__setattr__(self, "lo", _check_bound(self.lo, "'lo' of an ErrorBand"))
        object.__setattr__(self, "hi", _check_bound(self.hi, "'hi' of an ErrorBand"))
        if not isinstance(self.error, str) or self.error not in ERROR_KINDS:
            raise param_error("error", "ErrorBand", f"one of {list(ERROR_KINDS)}", self.error)
        _check_ends(self.lo, self.hi, "ErrorBand", allow_both_open=False)

    def describe(self) -> str:
        return _fmt_band(_ERROR_WORDS[self.error], self.lo, self.hi)

    def _to_json(self) -> dict:
        return {"k": self.kind, "lo": self.lo, "hi": self.hi, "e": self.error}

    def _mask(self, ctx: "_Context") -> np.ndarray:
        err = ctx.errors(self.error)
        with np.errstate(invalid="ignore"):
            keep = ~np.isnan(err)
            if self.lo is not None:
                keep &= err >= self.lo
            if self.hi is not None:
                keep &= err < self.hi
        return keep


Condition = Union[Range, Categories, Empty, PredictedClass, ErrorBand]
_CONDITIONS = (Range, Categories, Empty, PredictedClass, ErrorBand)


# --------------------------------------------------------------------- context
class _Context:
    """What the conditions of one mask call read: the columns, and predictions made once."""

    def __init__(self, model, X, y):
        self._model = model
        self._adapter = None
        if isinstance(X, pd.DataFrame):
            self.frame = X
        elif model is not None:
            self.frame = self.adapter("named columns").to_frame(X)
        else:
            from ..model import _dense

            arr = _dense(X)  # a scipy sparse matrix too
            if arr.ndim != 2:
                raise InvalidDataError(f"X must be 2-D (rows x features); got an array of shape {arr.shape}.")
            self.frame = pd.DataFrame(arr, columns=[f"x{i}" for i in range(arr.shape[1])])
        self.n = len(self.frame)
        self.y = y
        self._labels = None
        self._errors: dict[str, np.ndarray] = {}
        self._names = {}
        for c in self.frame.columns:
            self._names.setdefault(str(c), c)

    def column(self, feature: str) -> pd.Series:
        if feature not in self._names:
            cols = list(self._names)
            raise InvalidFeatureError(
                f"The segment names the column {feature!r}, which the data does not have. Its columns are: "
                f"{', '.join(cols[:15])}{' …' if len(cols) > 15 else ''}. Edit the segment."
            )
        col = self.frame[self._names[feature]]
        if isinstance(col, pd.DataFrame):
            raise InvalidDataError(f"The data has several columns named {feature!r}; give each column one name.")
        return col

    def adapter(self, needed_by: str) -> ModelAdapter:
        if self._adapter is None:
            if self._model is None:
                raise InvalidParameterError(
                    f"{needed_by[0].upper()}{needed_by[1:]} needs the model; pass it to mask().")
            self._adapter = _adapter(self._model)
        return self._adapter

    def labels(self) -> np.ndarray:
        if self._labels is None:
            self._labels = self.adapter("a predicted-class condition").predict_labels(self.frame)
        return self._labels

    def errors(self, kind: str) -> np.ndarray:
        if kind not in self._errors:
            if self.y is None:
                raise InvalidDataError(
                    "An error band needs the target (the true values) to measure each row's error; "
                    "pick the target column, or remove the error band from the segment."
                )
            self._errors[kind] = _row_errors(self.adapter("an error band"), self.frame, self.y, kind, "Segment.mask")
        return self._errors[kind]


def _adapter(model) -> ModelAdapter:
    if isinstance(model, ModelAdapter):
        return model if model.output == "auto" and model.class_index is None else model.with_output("auto", None)
    return ModelAdapter(model)


# ---------------------------------------------------------------------- errors
def _resolve_error(adapter: ModelAdapter, kind: str, func: str) -> str:
    if not isinstance(kind, str) or kind not in ERROR_KINDS:
        raise param_error("error", func, f"one of {list(ERROR_KINDS)}", kind)
    if adapter.task == "regression":
        if adapter.explained is not None:
            raise InvalidParameterError(
                f"{func} measures errors against a target; this model gives an {adapter.explained.split(' (')[0]}, "
                "which has no true value to compare with."
            )
        if adapter.n_targets > 1:
            raise InvalidParameterError(
                f"{func} measures the error of one prediction per row; this regressor predicts "
                f"{adapter.n_targets} targets. Explain one target at a time."
            )
        if kind not in ("auto", "absolute"):
            raise InvalidParameterError(
                f"The error {kind!r} is for classifiers; a regressor's error is 'absolute' (or 'auto')."
            )
        return "absolute"
    if kind == "absolute":
        raise InvalidParameterError(
            "The error 'absolute' is for regressors; a classifier's error is 'proba' (1 - probability of the "
            "true class), 'misclassified' (0/1) or 'auto'."
        )
    has_proba = hasattr(adapter.model, "predict_proba")
    if kind == "proba" and not has_proba:
        raise InvalidParameterError(
            f"The error 'proba' needs predict_proba, which this {type(adapter.model).__name__} does not have; "
            "use error='misclassified'."
        )
    if kind == "auto":
        return "proba" if has_proba else "misclassified"
    return kind


def _row_errors(adapter: ModelAdapter, frame: pd.DataFrame, y, kind: str, func: str) -> np.ndarray:
    from ..importance._common import check_y, missing_target

    kind = _resolve_error(adapter, kind, func)
    y_arr = check_y(y, len(frame), adapter.task, adapter.classes, func, allow_missing=True)
    has_y = ~missing_target(y_arr)
    out = np.full(len(frame), np.nan)
    if not has_y.any():
        return out
    if kind == "absolute":
        pred = np.asarray(adapter.predict(frame), dtype=float)
        out[has_y] = np.abs(y_arr[has_y].astype(float) - pred[has_y])
        return out
    if kind == "misclassified":
        labels = adapter.predict_labels(frame)
        truth = pd.Series(y_arr[has_y], dtype=object)
        out[has_y] = (pd.Series(labels[has_y], dtype=object).to_numpy() != truth.to_numpy()).astype(float)
        return out
    proba = np.asarray(adapter.with_output("proba", None).predict(frame), dtype=float).reshape(len(frame), -1)
    pos = {c: i for i, c in enumerate(adapter.classes.tolist())}
    idx = np.fromiter((pos[v] for v in pd.Series(y_arr[has_y], dtype=object).tolist()), dtype=np.intp,
                      count=int(has_y.sum()))
    out[has_y] = 1.0 - proba[has_y][np.arange(len(idx)), idx]
    return out


def row_errors(model, X, y, *, error: str = "auto") -> np.ndarray:
    """Each row's error against its true value.

    Parameters
    ----------
    model : fitted estimator, Pipeline or ModelAdapter
    X : DataFrame or array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        True values (class labels for classifiers); empty cells allowed.
    error : {"auto", "absolute", "proba", "misclassified"}, default="auto"
        ``"absolute"``: ``|y - prediction|`` (regressors). ``"proba"``: ``1 -`` the
        probability the classifier gives the true class. ``"misclassified"``: 1 where the
        predicted label is wrong, else 0. ``"auto"``: absolute for a regressor, proba
        for a classifier with ``predict_proba``, else misclassified.

    Returns
    -------
    ndarray of shape (n_samples,)
        NaN where the target is empty.

    Raises
    ------
    ExplainerError
        No target, a target of the wrong length or with labels the classifier does not
        know, or an error kind the model cannot give.
    """
    adapter = _adapter(model)
    frame = adapter.to_frame(X)
    if y is None:
        raise InvalidDataError("row_errors needs the target y (the true values of the rows of X).")
    return _row_errors(adapter, frame, y, error, "row_errors")


# --------------------------------------------------------------------- segment
@dataclass(frozen=True)
class Segment:
    """A named group of rows: the rows that meet every condition.

    Parameters
    ----------
    name : str
        Shown on pages and in the report (at most 200 characters).
    conditions : sequence of Range, Categories, Empty, PredictedClass, ErrorBand
        Joined with "and". No conditions: every row.

    Examples
    --------
    >>> seg = Segment("Older, south-east", [Range("age", lo=40), Categories("town", {"Busan", "Daegu"})])
    >>> seg.describe()
    'age ≥ 40 and town in {Busan, Daegu}'
    >>> Segment.from_token(seg.to_token()) == seg
    True
    """

    name: str
    conditions: tuple = field(default=())

    def __post_init__(self):
        _check_text(self.name, "segment name", MAX_NAME_CHARS)
        conds = self.conditions
        if isinstance(conds, _CONDITIONS):
            conds = (conds,)
        if isinstance(conds, (str, bytes, dict)) or not hasattr(conds, "__iter__"):
            raise InvalidParameterError(
                f"The conditions of a segment must be a list of Range, Categories, Empty, PredictedClass or "
                f"ErrorBand. Got {_short(conds)} instead."
            )
        conds = tuple(conds)
        if len(conds) > MAX_CONDITIONS:
            raise InvalidParameterError(f"A segment takes at most {MAX_CONDITIONS} conditions; got {len(conds)}.")
        for c in conds:
            if not isinstance(c, _CONDITIONS):
                raise InvalidParameterError(
                    "Each condition of a segment must be a Range, Categories, Empty, PredictedClass or "
                    f"ErrorBand. Got {_short(c)} instead."
                )
        object.__setattr__(self, "conditions", conds)

    # ------------------------------------------------------------------- rows
    def mask(self, model, X, y=None) -> np.ndarray:
        """The rows of X in the segment.

        Parameters
        ----------
        model : fitted estimator, Pipeline, ModelAdapter or None
            Needed only by predicted-class and error-band conditions.
        X : DataFrame or array-like of shape (n_samples, n_features)
            Columns are found by name (compared as text); an array gets the model's
            column names.
        y : array-like of shape (n_samples,), default=None
            True values; needed only by an error band.

        Returns
        -------
        ndarray of bool, shape (n_samples,)
        """
        ctx = _Context(model, X, y)
        out = np.ones(ctx.n, dtype=bool)
        for cond in self.conditions:
            out &= cond._mask(ctx)
        return out

    def describe(self) -> str:
        """The rule in words: ``"age ≥ 40 and town in {Busan, Daegu}"`` (``"all rows"`` without conditions)."""
        if not self.conditions:
            return "all rows"
        return " and ".join(c.describe() for c in self.conditions)

    @property
    def needs_target(self) -> bool:
        """Whether :meth:`mask` needs ``y`` (the segment has an error band)."""
        return any(isinstance(c, ErrorBand) for c in self.conditions)

    @property
    def needs_model(self) -> bool:
        """Whether :meth:`mask` needs the model (a predicted class or an error band)."""
        return any(isinstance(c, (ErrorBand, PredictedClass)) for c in self.conditions)

    @property
    def features(self) -> list[str]:
        """The columns the conditions read, in order of first use."""
        return list(dict.fromkeys(c.feature for c in self.conditions if hasattr(c, "feature")))

    # ------------------------------------------------------------------ token
    def to_token(self) -> str:
        """A compact URL-safe text (base64url of compact JSON) that :meth:`from_token` reads back.

        Canonical: equal segments give equal tokens, so the token is the segment's cache key.

        Raises
        ------
        InvalidParameterError
            The token would be longer than :data:`MAX_TOKEN_CHARS` (too many or too long values).
        """
        doc = {"v": _TOKEN_VERSION, "n": self.name, "c": [c._to_json() for c in self.conditions]}
        text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        token = base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")
        if len(token) > MAX_TOKEN_CHARS:
            raise InvalidParameterError(
                f"The segment {self.name!r} is too long to keep in the URL ({len(token):,} characters; at most "
                f"{MAX_TOKEN_CHARS:,}). Use fewer conditions or values."
            )
        return token

    @property
    def key(self) -> str:
        """The cache key of the segment: its token."""
        return self.to_token()

    @classmethod
    def from_token(cls, token: str) -> "Segment":
        """Read a segment from :meth:`to_token`'s text, checking every part of it.

        Anything else (garbage, an overlong text, wrong types, non-finite bounds, an
        unknown condition, deep nesting) raises :class:`~explainers.errors.ExplainerError`
        saying so; nothing in the text is run.
        """
        try:
            return cls._parse(token)
        except ExplainerError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError, OverflowError) as exc:
            raise _bad_token(f"it could not be read ({type(exc).__name__})") from None

    @classmethod
    def _parse(cls, token) -> "Segment":
        if not isinstance(token, str):
            raise _bad_token(f"it is a {type(token).__name__}, not text")
        if len(token) > MAX_TOKEN_CHARS:
            raise _bad_token(f"it is {len(token):,} characters long; at most {MAX_TOKEN_CHARS:,} are read")
        if not token or not _TOKEN_CHARS.match(token):
            raise _bad_token("it is not base64url text")
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            text = raw.decode("utf-8")
        except (binascii.Error, ValueError):
            raise _bad_token("it is not base64url-encoded UTF-8 text") from None
        if _json_depth(text) > _MAX_JSON_DEPTH:
            raise _bad_token("it nests deeper than a segment does")

        def no_constants(name):
            raise _bad_token(f"it holds {name}, which is not a number a segment takes")

        try:
            doc = json.loads(text, parse_constant=no_constants)
        except ExplainerError:
            raise
        except (ValueError, RecursionError):
            raise _bad_token("it is not JSON") from None
        _expect_keys(doc, {"v", "n", "c"}, "the segment")
        if doc["v"] != _TOKEN_VERSION or isinstance(doc["v"], bool):
            raise _bad_token(f"its version is {_short(doc['v'])}; this Glassbox reads version {_TOKEN_VERSION}")
        if not isinstance(doc["c"], list):
            raise _bad_token("its conditions are not a list")
        if len(doc["c"]) > MAX_CONDITIONS:
            raise _bad_token(f"it has {len(doc['c'])} conditions; at most {MAX_CONDITIONS}")
        conds = [_condition_from_json(c, i) for i, c in enumerate(doc["c"])]
        try:
            return cls(doc["n"], conds)
        except ExplainerError as exc:
            raise _bad_token(str(exc)) from None


def _bad_token(why: str) -> InvalidParameterError:
    return InvalidParameterError(
        f"The segment in the link cannot be read: {why}. Define the segment again, or open the page "
        "without it."
    )


def _json_depth(text: str) -> int:
    """Deepest nesting of brackets and braces outside strings (checked before json.loads,
    so a crafted token cannot make the parser recurse)."""
    depth = deepest = 0
    in_str = escaped = False
    for ch in text:
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > _MAX_JSON_DEPTH:
                    return deepest
        elif ch in "]}":
            depth -= 1
    return deepest


def _expect_keys(obj, keys: set, what: str) -> None:
    if not isinstance(obj, dict):
        raise _bad_token(f"{what} is a {type(obj).__name__}, not an object")
    if set(obj) != keys:
        extra = sorted(set(obj) - keys)
        lacking = sorted(keys - set(obj))
        parts = ([f"unknown field(s) {', '.join(map(repr, extra[:5]))}"] if extra else []) + (
            [f"no field(s) {', '.join(map(repr, lacking))}"] if lacking else [])
        raise _bad_token(f"{what} has {' and '.join(parts)}")


_KINDS = {"range": {"k", "f", "lo", "hi", "m"}, "in": {"k", "f", "v", "m"}, "empty": {"k", "f", "e"},
          "pred": {"k", "v"}, "error": {"k", "lo", "hi", "e"}}


def _condition_from_json(obj, i: int):
    what = f"condition {i + 1}"
    if not isinstance(obj, dict):
        raise _bad_token(f"{what} is a {type(obj).__name__}, not an object")
    kind = obj.get("k")
    if not isinstance(kind, str) or kind not in _KINDS:
        raise _bad_token(f"{what} is of unknown kind {_short(kind)} (known: {', '.join(_KINDS)})")
    _expect_keys(obj, _KINDS[kind], what)
    for key in ("v",):
        if key in obj and not isinstance(obj[key], list):
            raise _bad_token(f"the values of {what} are not a list")
    try:
        if kind == "range":
            return Range(obj["f"], obj["lo"], obj["hi"], include_empty=obj["m"])
        if kind == "in":
            return Categories(obj["f"], obj["v"], include_empty=obj["m"])
        if kind == "empty":
            return Empty(obj["f"], obj["e"])
        if kind == "pred":
            return PredictedClass(obj["v"])
        return ErrorBand(obj["lo"], obj["hi"], error=obj["e"])
    except ExplainerError as exc:
        raise _bad_token(f"{what}: {exc}") from None


# ------------------------------------------------------------------- comparing
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


# ------------------------------------------------------------------- proposals
@dataclass(frozen=True)
class ProposedSegment:
    """One leaf of the error tree, as a segment.

    Attributes
    ----------
    segment : Segment
        Its rule on the original columns and values; ``segment.mask(model, X)`` selects
        exactly the leaf's rows of the data it was proposed on.
    n_rows : int
        Rows of the segment with a target (the leaf's size).
    mean_error : float
        Their mean error.
    rest_n_rows : int
        Rows with a target outside the segment.
    rest_mean_error : float
        Their mean error (NaN when there are none).
    error : str
        The error measured: "absolute", "proba" or "misclassified".
    leaf : int
        The leaf's node id in the fitted tree.
    """

    segment: Segment
    n_rows: int
    mean_error: float
    rest_n_rows: int
    rest_mean_error: float
    error: str
    leaf: int

    @property
    def rule(self) -> str:
        return self.segment.describe()


def _is_numeric(col: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(col.dtype) and not isinstance(col.dtype, pd.CategoricalDtype)


def _kind_words(col: pd.Series) -> str:
    if isinstance(col.dtype, pd.CategoricalDtype):
        return "categories"
    if pd.api.types.is_datetime64_any_dtype(col.dtype):
        return "dates"
    return "text"


def _categorical_codes(col: pd.Series, err: np.ndarray, smooth: float, max_levels: int):
    """Codes of a non-numeric column for the tree: its values ordered by their (smoothed) mean
    error, so one threshold separates the high-error values from the rest (the best subset
    split for a squared-error tree). Returns ``(codes with NaN where empty, values in code
    order)``, or None when the column cannot be stated as a set of values."""
    values = col.to_numpy(dtype=object)
    empty = np.asarray(pd.isna(col), dtype=bool)
    idx, uniques = pd.factorize(values[~empty], use_na_sentinel=True)
    if len(uniques) == 0 or len(uniques) > max_levels:
        return None
    try:
        levels = [_check_value(v, "column") for v in uniques]
    except ExplainerError:  # dates, objects: not a set of plain values
        return None
    if len(set(levels)) != len(levels):  # values equal as Python scalars (1 and 1.0, 1 and True)
        return None
    sums = np.bincount(idx, weights=err[~empty], minlength=len(levels))
    counts = np.bincount(idx, minlength=len(levels))
    # shrunk towards the overall mean, so a rare value's chance high error does not lead
    score = (sums + smooth * float(np.mean(err))) / (counts + smooth)
    order = sorted(range(len(levels)), key=lambda i: (score[i], type(levels[i]).__name__, str(levels[i])))
    rank = np.empty(len(levels))
    rank[order] = np.arange(len(levels), dtype=float)
    out = np.full(len(values), np.nan)
    out[~empty] = rank[idx]
    return out, [levels[i] for i in order]


def _nice_cut(a: float, b: float) -> float:
    """The shortest decimal t with a < t <= b: splits the data's values as the tree's
    threshold does (a, the largest value on the left; b, the smallest on the right)."""
    exact = Decimal(repr(b))  # the shortest decimal that is b
    span = max(abs(a), abs(b), 1e-300)
    top = int(math.floor(math.log10(span))) + 1
    for e in range(top, max(top - 18, -20), -1):
        step = Decimal(1).scaleb(e)
        t = float((exact / step).to_integral_value(rounding=ROUND_FLOOR) * step)
        if a < t <= b:
            return t
    return float(b)


def _error_tree(sub: pd.DataFrame, err: np.ndarray, *, max_depth: int, min_rows: int, max_levels: int,
                random_state: int):
    """Fit the error tree: ``(tree, Z, names, cols, levels)`` or None when nothing splits.

    Z holds the tree's inputs (float32, as the tree reads them): numbers as they are,
    other columns as codes ordered by error, whose values ``levels[j]`` lists (None
    for a numeric column); ``cols`` the same columns in float64.
    """
    from sklearn.tree import DecisionTreeRegressor

    names, cols, levels = [], [], []
    for c in sub.columns:
        col = sub[c]
        if _is_numeric(col) and not pd.api.types.is_bool_dtype(col.dtype):
            x = col.to_numpy(dtype=float, na_value=np.nan)
            if np.isinf(x).any():
                continue  # the tree takes no infinite values, and a rule could not state them
            names.append(str(c)), cols.append(x), levels.append(None)
        elif pd.api.types.is_datetime64_any_dtype(col.dtype):
            continue
        else:
            coded = _categorical_codes(col, err, float(min_rows), max_levels)
            if coded is not None:
                names.append(str(c)), cols.append(coded[0]), levels.append(coded[1])
    if not cols:
        return None
    Z = np.column_stack(cols).astype(np.float32)
    # a split must explain at least 0.1% of the error's variance: no rules carved from rounding noise
    tree = DecisionTreeRegressor(max_depth=int(max_depth), min_samples_leaf=int(min_rows),
                                 min_impurity_decrease=MIN_SPLIT_GAIN * float(np.var(err)),
                                 random_state=int(random_state)).fit(Z, err)
    if tree.tree_.node_count == 1:
        return None
    return tree, Z, names, cols, levels


def propose_segments(model, X, y, *, max_depth: int = 3, min_rows: int = 30, n: int = 5,
                     error: str = "auto", max_levels: int = 100, random_state: int = 0) -> list[ProposedSegment]:
    """The segments where the model fails most: the leaves of a shallow tree fitted to the errors.

    A :class:`~sklearn.tree.DecisionTreeRegressor` (depth ``max_depth``, at least
    ``min_rows`` rows per leaf) is fitted on each row's error (:func:`row_errors`) over the
    model's columns. Text, category and boolean columns enter the tree as codes ordered by
    their mean error, so a split on them is a set of values; every rule is stated on the
    original columns and values ("town in {Busan, Daegu}", "age ≥ 51"), with the threshold
    written as the shortest number that splits the data as the tree does. Empty cells
    follow the tree's routing (a rule says "(or empty)" where they went its way).

    Parameters
    ----------
    model : fitted estimator, Pipeline or ModelAdapter
    X : DataFrame or array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        True values; rows where it is empty are left out.
    max_depth : int, default=3
        Depth of the tree (1 to 8): rules have at most this many conditions.
    min_rows : int, default=30
        Fewest rows (with a target) in a proposed segment.
    n : int, default=5
        Most segments returned.
    error : {"auto", "absolute", "proba", "misclassified"}, default="auto"
        How each row's error is measured; see :func:`row_errors`.
    max_levels : int, default=100
        Text or category columns with more distinct values than this (identifiers, free
        text) are left out of the tree.
    random_state : int, default=0
        The tree's seed: the same inputs give the same segments.

    Returns
    -------
    list of ProposedSegment
        Sorted by mean error, highest first; named "Error segment 1", ...; empty when no
        split leaves ``min_rows`` rows on both sides.
    """
    func = "propose_segments"
    for name, value, low, high in (("max_depth", max_depth, 1, 8), ("min_rows", min_rows, 1, None),
                                   ("n", n, 1, None), ("max_levels", max_levels, 2, MAX_VALUES)):
        if (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low
                or (high is not None and value > high)):
            raise param_error(name, func, f"an int >= {low}" + (f" and <= {high}" if high else ""), value)
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)):
        raise param_error("random_state", func, "an int", random_state)
    if y is None:
        raise InvalidDataError(
            f"{func} needs the target y (the true values of the rows of X) to find where the model fails; "
            "pick the target column."
        )
    adapter = _adapter(model)
    frame = adapter.to_frame(X)
    kind = _resolve_error(adapter, error, func)
    err_all = _row_errors(adapter, frame, y, kind, func)
    has_y = ~np.isnan(err_all)
    rows = np.flatnonzero(has_y)
    if len(rows) < 2 * min_rows:
        return []
    err = err_all[rows]
    sub = frame.iloc[rows]

    fitted = _error_tree(sub, err, max_depth=max_depth, min_rows=min_rows, max_levels=max_levels,
                         random_state=random_state)
    if fitted is None:
        return []
    tree, Z, names, cols, levels = fitted
    t = tree.tree_
    go_left_if_empty = np.asarray(t.missing_go_to_left, dtype=bool)

    # walk the tree with the data's rows, collecting each leaf's rule on the original columns;
    # a side is (column, lo, hi, values, no_values, with_empty) for the rows that went that way
    leaves: list[tuple[int, list]] = []

    def walk(node: int, idx: np.ndarray, path: list) -> None:
        if t.children_left[node] == -1:
            leaves.append((node, path))
            return
        j = int(t.feature[node])
        z = Z[idx, j]
        empty = np.isnan(z)
        left = np.zeros(len(idx), dtype=bool)
        left[~empty] = z[~empty] <= t.threshold[node]
        left[empty] = go_left_if_empty[node]
        sides = []
        for side in (left, ~left):
            vals = side & ~empty
            sides.append({"j": j, "lo": None, "hi": None, "values": None, "none": not vals.any(),
                          "empty": bool((side & empty).any())})
        if levels[j] is None:
            x = cols[j][idx]
            if not (sides[0]["none"] or sides[1]["none"]):
                cut = _nice_cut(float(np.max(x[left & ~empty])), float(np.min(x[~left & ~empty])))
                sides[0]["hi"] = cut
                sides[1]["lo"] = cut
        else:
            for side, d in zip((left, ~left), sides):
                codes = np.unique(z[side & ~empty]).astype(int).tolist()
                d["values"] = {levels[j][k] for k in codes}
        for side, d, ch in zip((left, ~left), sides, (t.children_left[node], t.children_right[node])):
            walk(int(ch), idx[side], path + [d])

    walk(0, np.arange(len(rows)), [])

    proposals = []
    for node, path in leaves:
        segment = Segment("Error segment", _merge_path(path, names, levels))
        inside = segment.mask(None, frame)
        in_y = inside & has_y
        k = int(in_y.sum())
        if k < min_rows:
            continue
        rest = has_y & ~inside
        proposals.append((float(err_all[in_y].mean()), node, segment, k, int(rest.sum()),
                          float(err_all[rest].mean()) if rest.any() else float("nan")))
    proposals.sort(key=lambda p: (-p[0], p[1]))
    out = []
    for rank, (mean_err, node, segment, k, k_rest, rest_err) in enumerate(proposals[:n], start=1):
        out.append(ProposedSegment(Segment(f"Error segment {rank}", segment.conditions), k, mean_err,
                                   k_rest, rest_err, kind, int(node)))
    return out


def _merge_path(path: list, names: list[str], levels: list) -> list:
    """The conditions of one root-to-leaf path, one per column, in order of first use: the
    intersection of the sides taken on that column."""
    merged: dict[int, dict] = {}
    for d in path:
        m = merged.setdefault(d["j"], {"lo": None, "hi": None, "values": None, "none": False, "empty": True})
        m["empty"] = m["empty"] and d["empty"]
        m["none"] = m["none"] or d["none"]
        if d["lo"] is not None:
            m["lo"] = d["lo"] if m["lo"] is None else max(m["lo"], d["lo"])
        if d["hi"] is not None:
            m["hi"] = d["hi"] if m["hi"] is None else min(m["hi"], d["hi"])
        if d["values"] is not None:
            m["values"] = set(d["values"]) if m["values"] is None else m["values"] & d["values"]
    out = []
    for j, m in merged.items():
        feature = names[j]
        if m["none"] or (m["values"] is not None and not m["values"]):
            out.append(Empty(feature, True))  # only empty cells went this way
        elif levels[j] is not None:
            out.append(Categories(feature, m["values"], include_empty=m["empty"]))
        elif m["lo"] is None and m["hi"] is None:
            if not m["empty"]:  # every value but no empty cell went this way
                out.append(Empty(feature, False))
        else:
            out.append(Range(feature, m["lo"], m["hi"], include_empty=m["empty"]))
    return out
