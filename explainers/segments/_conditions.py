"""The conditions of a segment (range, values, empty, predicted class, error band), the
:class:`Segment` that joins them, and its URL token (written canonically, read with every
part checked)."""
from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Union

import numpy as np
import pandas as pd

from ..errors import (
    ExplainerError,
    InvalidDataError,
    InvalidFeatureError,
    InvalidParameterError,
    param_error,
)
from ..model import ModelAdapter
from ._common import (
    _ERROR_WORDS,
    ERROR_KINDS,
    MAX_CONDITIONS,
    MAX_FEATURE_CHARS,
    MAX_NAME_CHARS,
    MAX_TOKEN_CHARS,
    _adapter,
    _check_bound,
    _check_ends,
    _check_flag,
    _check_text,
    _check_values,
    _fmt_band,
    _fmt_set,
    _fmt_value,
    _is_numeric,
    _kind_words,
    _short,
    _sorted_values,
)
from ._errors import _row_errors

_TOKEN_VERSION = 1
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_-]*\Z")
_MAX_JSON_DEPTH = 6


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
