"""The values a feature can usefully take in a tree model: one *cell* per stretch of values
that every split of the trees sends the same way.

A numeric feature's cells are the intervals between consecutive thresholds of the
splits on it (``x <= t`` goes left, so the cells are ``(t_k, t_k+1]``), cut to the
allowed range; a categorical feature's cells are its allowed categories. Inside a cell
every tree routes a row alike, so a counterfactual needs only the cell's point nearest
to the original value: the original itself when it lies in the cell, else the cell's
near end (rounded to a short decimal a thousandth of the feature's scale inside it, an
integer for integer features). The distance of a cell is that point's distance.

How every node routes every cell is read from the trees' own rule
(:meth:`~explainers.trees.TreeEnsemble.goes_left`) on the cell's point as the trees see
it (rounded to float32 where the model does so), so the routing is the model's by
construction, categorical and zero-as-missing rules included.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._problem import Feature


@dataclass
class Cells:
    """The cells of one feature for one row."""

    values: list            # the point of each cell, in the data's own terms (label or number)
    coded: np.ndarray       # the same points as the trees compare them
    cost: np.ndarray        # distance of each cell from the row's own value
    origin: int             # the cell holding the row's own value


def _prep(ens, v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, np.float64)
    if ens.float32_inputs:
        with np.errstate(over="ignore"):
            v = v.astype(np.float32).astype(np.float64)
    if ens.missing_value is not None:
        mv = float(np.float32(ens.missing_value)) if ens.float32_inputs else float(ens.missing_value)
        v = np.where(v == mv, np.nan, v)
    return v


def feature_thresholds(ens, j: int) -> np.ndarray:
    """Sorted distinct thresholds of the numeric splits on feature ``j`` (with the bounds of
    the zero-as-missing band where a rule reads zero as missing)."""
    from ..trees.ensemble import RULE_CATEGORICAL, RULE_ZERO_MISSING, ZERO_MISSING_EPS

    on = ens.feature == j
    start = ens.cat_start[on]
    flags = np.zeros(len(start), np.int64)
    flags[start >= 0] = ens.cat_bits[start[start >= 0] + 1]
    numeric = (flags & RULE_CATEGORICAL) == 0
    t = ens.threshold[on][numeric]
    extra = []
    if ((flags & RULE_ZERO_MISSING) != 0).any():
        extra = [np.nextafter(-ZERO_MISSING_EPS, -np.inf), ZERO_MISSING_EPS]
    return np.unique(np.concatenate([t[np.isfinite(t)], extra]))


def _step(scale: float) -> float:
    return 10.0 ** math.floor(math.log10(scale * 1e-3)) if scale > 0 else 1e-6


def _tidy(v: float, step: float) -> float:
    digits = max(0, -int(round(math.log10(step))))
    return float(round(v, min(digits, 15)))


def _point(f: Feature, ens, x: float, a: float, b: float):
    """The point of the cell ``(a, b]`` (cut to the allowed range) nearest to ``x``, or None
    when the cell holds no allowed value (no integer, or outside the range). The row's own
    cell (where the trees see ``x``) is not asked: its point is ``x`` itself."""
    lo, lo_open = (a, True) if a >= f.lo else (f.lo, False)
    hi = min(b, f.hi)
    integer = f.kind == "integer"
    step = _step(f.scale)

    def inside(v) -> bool:
        p = float(_prep(ens, [v])[0])
        if not np.isfinite(v) or np.isnan(p):
            return False
        return (p > a) and (p <= b) and (v > lo if lo_open else v >= lo) and v <= hi

    going_up = np.isnan(x) or x <= a
    if integer:
        v = (math.floor(lo) + 1 if lo_open and float(lo).is_integer() else math.ceil(lo)) if going_up \
            else math.floor(hi)
        if not np.isfinite(v):
            return None
        return float(v) if inside(float(v)) else None
    if going_up:
        if not np.isfinite(lo):
            return None
        tries = [_tidy((math.floor(lo / step) + 1) * step, step) if lo_open else lo]
        tries.append(float(np.nextafter(lo, np.inf)) if lo_open else lo)
        if ens.float32_inputs and lo_open:
            tries.append(float(np.nextafter(np.float32(lo), np.float32(np.inf))))
    else:
        if not np.isfinite(hi):
            return None
        tries = [_tidy(math.floor(hi / step) * step, step), hi]
        if ens.float32_inputs:
            tries.append(float(np.nextafter(np.float32(hi), np.float32(-np.inf))))
    for v in tries:
        if inside(v):
            return v
    return None


def numeric_cells(f: Feature, ens, j: int, x: float) -> Cells:
    """Cells of a numeric feature for the row's value ``x`` (as in the data; NaN for an empty
    cell). The row's own cell holds ``x`` itself at no cost."""
    t = feature_thresholds(ens, j)
    edges = np.concatenate([[-np.inf], t, [np.inf]])
    seen = float(_prep(ens, [x])[0])
    values, costs, coded, origin = [], [], [], -1
    for a, b in zip(edges[:-1], edges[1:]):
        if not np.isnan(seen) and a < seen <= b:
            origin = len(values)
            values.append(x)
            costs.append(0.0)
            coded.append(seen)
            continue
        v = _point(f, ens, x, float(a), float(b))
        if v is None:
            continue
        values.append(v)
        costs.append(abs(v - x) / f.scale if not np.isnan(x) else 1.0)
        coded.append(float(_prep(ens, [v])[0]))
    if origin < 0:  # an empty cell (or one the model reads as missing): the row keeps it at no cost
        origin = len(values)
        values.append(x)
        costs.append(0.0)
        coded.append(seen)
    return Cells(values, np.asarray(coded, float), np.asarray(costs, float), origin)


def category_cells(f: Feature, known, x_label, x_code: float) -> Cells:
    """Cells of a categorical feature: each allowed category; ``known`` is the model's list of
    categories (codes are positions in it) or None where the values are the codes."""
    values, coded, costs, origin = [], [], [], -1
    for a in f.allowed:
        if known is None:
            code = float(a)
        else:
            code = next((float(i) for i, c in enumerate(known) if c == a or str(c) == str(a)), np.nan)
            if np.isnan(code):
                continue
        same = (not np.isnan(x_code) and code == x_code)
        if same:
            origin = len(values)
        values.append(a)
        coded.append(code)
        costs.append(0.0 if same else 1.0)
    if origin < 0:
        origin = len(values)
        values.append(x_label)
        coded.append(x_code)
        costs.append(0.0)
    return Cells(values, np.asarray(coded, float), np.asarray(costs, float), origin)
