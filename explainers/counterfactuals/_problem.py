"""What a counterfactual question is: the row, the target, which features may move and where,
and how far a change counts.

Shared by the exact tree solver (:mod:`._trees`) and the model-agnostic search
(:mod:`._search`): both return candidate rows in the data's own columns, and both are
judged here, by the model's own ``predict`` and by one distance::

    distance(x, x') = sum over numeric features j of |x'_j - x_j| / scale_j
                    + the number of categorical features whose value changed

``scale_j`` is the median absolute deviation of column ``j`` in the data (its mean
absolute deviation where the MAD is 0, else 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import InvalidFeatureError, InvalidParameterError, shown

#: an object column with more distinct values than this is free text: never changed
MAX_CATEGORIES = 200


@dataclass
class Feature:
    """One column of the data as the search sees it."""

    name: str
    kind: str                 # "numeric", "integer" or "categorical"
    scale: float              # distance of one unit of change (numeric); 1 for categories
    lo: float = -np.inf       # allowed range of a numeric feature
    hi: float = np.inf
    allowed: tuple = ()       # allowed values of a categorical feature
    fixed: bool = False
    why_fixed: str = ""


@dataclass
class Target:
    """What a counterfactual must reach: a class, any class but one, or an interval of outputs."""

    kind: str                 # "class", "not_class" or "interval"
    label: object = None      # the class (kind "class"), or the class to leave ("not_class")
    index: int = -1           # its position in the model's classes
    lo: float = -np.inf
    hi: float = np.inf

    def describe(self) -> str:
        if self.kind == "class":
            return f"class {shown(self.label)}"
        if self.kind == "not_class":
            return f"any class other than {shown(self.label)}"
        return f"an output in [{_num(self.lo)}, {_num(self.hi)}]"

    def reached(self, labels: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Which predictions (labels of a classifier, values of a regressor) reach the target."""
        if self.kind == "class":
            return np.asarray([_same(v, self.label) for v in labels], bool)
        if self.kind == "not_class":
            return ~np.asarray([_same(v, self.label) for v in labels], bool)
        v = np.asarray(values, float)
        return np.isfinite(v) & (v >= self.lo) & (v <= self.hi)


def _same(a, b) -> bool:
    return a == b or str(a) == str(b)


def _num(v: float) -> str:
    return f"{v:.6g}"


@dataclass
class Problem:
    """The features of the data and the model's task, fixed once for all requested rows."""

    adapter: object
    frame: pd.DataFrame       # the data in the model's column order, rows 0..n-1
    features: list[Feature]
    notes: list[str] = field(default_factory=list)
    model_categories: list | None = None  # per column, a tree model's categories (see build_problem)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.features]

    def distance(self, x: pd.Series, cf: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(distance, number of features changed) of each counterfactual row from ``x``."""
        steps, moved = self.changes(x, cf)
        return steps.sum(axis=1), moved.sum(axis=1)

    def changes(self, x: pd.Series, cf: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Per counterfactual row and feature (in :attr:`features` order): the distance of its
        change and whether it changed."""
        steps = np.zeros((len(cf), len(self.features)))
        moved = np.zeros((len(cf), len(self.features)), bool)
        for k, f in enumerate(self.features):
            old = x[f.name]
            new = cf[f.name].to_numpy()
            if f.kind == "categorical":
                moved[:, k] = [not same_value(old, v) for v in new]
                steps[:, k] = moved[:, k]
            else:
                o = float(old) if not pd.isna(old) else np.nan
                nv = pd.to_numeric(pd.Series(new), errors="coerce").to_numpy(float)
                moved[:, k] = ~(np.isnan(nv) & np.isnan(o)) & ~(nv == o)
                step = np.where(np.isnan(nv) | np.isnan(o), 1.0, np.abs(nv - o) / f.scale)
                steps[:, k] = np.where(moved[:, k], step, 0.0)
        return steps, moved

    def predict(self, rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """(the model's own predict, its explained output) for rows in the data's columns."""
        labels = np.asarray(self.adapter.predict_labels(rows))
        if self.adapter.task == "regression":
            return labels, labels.astype(float)
        return labels, np.asarray(self.adapter.predict(rows), float)


def same_value(a, b) -> bool:
    """Whether two cells hold the same value: both blank, or equal as values, text or numbers."""
    if pd.isna(a) and pd.isna(b):
        return True
    if pd.isna(a) or pd.isna(b):
        return False
    try:
        return bool(_same(a, b)) or float(a) == float(b)
    except (TypeError, ValueError):
        return False


def diverse(changed: list[set], n: int) -> list[int]:
    """Positions of up to ``n`` answers, taken in order (nearest first), each keeping at least one
    feature of every earlier answer's changed set (answers changing nothing are skipped)."""
    keep, banned = [], []
    for i, moved in enumerate(changed):
        if not moved or any(b <= moved for b in banned):
            continue
        keep.append(i)
        banned.append(moved)
        if len(keep) >= n:
            break
    return keep


def robust_scale(col: np.ndarray) -> float:
    """Median absolute deviation of a numeric column; its mean absolute deviation where
    that is 0 (a column mostly at one value); 1 for a constant or empty column."""
    v = col[np.isfinite(col)]
    if v.size == 0:
        return 1.0
    med = np.median(v)
    mad = float(np.median(np.abs(v - med)))
    if mad > 0:
        return mad
    mean_abs = float(np.mean(np.abs(v - med)))
    return mean_abs if mean_abs > 0 else 1.0


def _is_categorical(col: pd.Series) -> bool:
    dt = col.dtype
    return (isinstance(dt, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dt)
            or not pd.api.types.is_numeric_dtype(dt))


def build_problem(adapter, frame: pd.DataFrame, fixed, ranges, model_categories=None) -> Problem:
    """Describe each column: its kind, its distance scale, where it may move, and whether it
    is fixed (asked so, free text, or a column the model does not read).

    ``model_categories``: per column, the categories a tree model knows (None where it
    has none): a categorical feature may take those; otherwise the data's observed values.
    """
    names = [str(c) for c in frame.columns]
    fixed = _names_list(fixed, "fixed", names)
    ranges = _check_ranges(ranges, names)
    feats, notes = [], []
    for j, name in enumerate(names):
        col = frame.iloc[:, j]
        known = None if model_categories is None else model_categories[j]
        if known is not None and len(known) == 0:
            feats.append(Feature(name, "categorical", 1.0, fixed=True, why_fixed="the model does not read it"))
            continue
        if known is not None or _is_categorical(col):
            observed = tuple(pd.unique(col.dropna()))
            allowed = tuple(known) if known is not None else observed
            f = Feature(name, "categorical", 1.0, allowed=allowed)
            if known is None and len(observed) > MAX_CATEGORIES:
                f.fixed, f.why_fixed = True, f"free text ({len(observed):,} distinct values)"
                notes.append(f"'{name}' is kept as it is: {f.why_fixed}.")
        else:
            v = pd.to_numeric(col, errors="coerce").to_numpy(float)
            finite = v[np.isfinite(v)]
            integer = finite.size > 0 and bool(np.all(finite == np.round(finite)))
            lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (-np.inf, np.inf)
            f = Feature(name, "integer" if integer else "numeric", robust_scale(v), lo=lo, hi=hi)
        if name in ranges:
            _apply_range(f, ranges[name])
        if name in fixed:
            f.fixed, f.why_fixed = True, "asked to stay fixed"
        feats.append(f)
    return Problem(adapter, frame, feats, notes, model_categories)


def _names_list(value, what: str, names: list[str]) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    out = [str(v) for v in value]
    unknown = [v for v in out if v not in names]
    if unknown:
        raise InvalidFeatureError(
            f"{what} names {', '.join(repr(u) for u in unknown)}, which the data does not have. "
            f"Its columns are: {', '.join(names)}.")
    return out


def _check_ranges(ranges, names: list[str]) -> dict:
    if ranges is None:
        return {}
    if not isinstance(ranges, dict):
        raise InvalidParameterError(
            "ranges must be a dict {feature: (lo, hi) or a list of allowed categories}; "
            f"got {type(ranges).__name__}.")
    _names_list(list(ranges), "ranges", names)
    return {str(k): v for k, v in ranges.items()}


def _apply_range(f: Feature, spec) -> None:
    if f.kind == "categorical":
        allowed = [spec] if isinstance(spec, str) or not np.iterable(spec) else list(spec)
        keep = tuple(a for a in f.allowed if any(_same(a, s) for s in allowed))
        unknown = [s for s in allowed if not any(_same(a, s) for a in f.allowed)]
        if unknown:
            raise InvalidParameterError(
                f"ranges['{f.name}'] lists {', '.join(shown(u) for u in unknown)}, not among its categories "
                f"({', '.join(shown(a) for a in f.allowed[:20])}{' …' if len(f.allowed) > 20 else ''}).")
        f.allowed = keep
        return
    try:
        lo, hi = (float(spec[0]), float(spec[1]))
    except (TypeError, ValueError, IndexError):
        raise InvalidParameterError(
            f"ranges['{f.name}'] must be (lo, hi) for a numeric feature; got {shown(spec)}.") from None
    if not (lo <= hi) or np.isnan(lo) or np.isnan(hi):
        raise InvalidParameterError(
            f"ranges['{f.name}'] = ({_num(lo)}, {_num(hi)}) is empty: give lo <= hi.")
    f.lo, f.hi = lo, hi


def parse_target(adapter, target, predicted_label) -> Target:
    """The target of a classifier (a class; default any other than the predicted one) or of
    a regressor (an interval ``(lo, hi)`` of outputs, required)."""
    if adapter.task == "regression":
        if getattr(adapter, "n_targets", 1) != 1:
            raise InvalidParameterError(
                "Counterfactuals of a multi-output regressor are not supported: explain one target "
                "with a model fitted on it alone.")
        if target is None:
            raise InvalidParameterError(
                "A regressor's counterfactual needs target=(lo, hi): the interval its prediction must "
                "reach, e.g. target=(200000, float('inf')).")
        try:
            lo, hi = float(target[0]), float(target[1])
        except (TypeError, ValueError, IndexError):
            raise InvalidParameterError(
                f"target must be (lo, hi) for a regressor; got {shown(target)}.") from None
        if np.isnan(lo) or np.isnan(hi) or lo > hi:
            raise InvalidParameterError(f"target=({_num(lo)}, {_num(hi)}) is empty: give lo <= hi.")
        return Target("interval", lo=lo, hi=hi)
    classes = list(adapter.classes)
    if target is None:
        idx = next(i for i, c in enumerate(classes) if _same(c, predicted_label))
        if len(classes) == 2:
            return Target("class", label=classes[1 - idx], index=1 - idx)
        return Target("not_class", label=classes[idx], index=idx)
    for i, c in enumerate(classes):
        if _same(c, target):
            return Target("class", label=c, index=i)
    raise InvalidParameterError(
        f"target={shown(target)} is not one of the model's classes: {', '.join(shown(c) for c in classes)}.")
