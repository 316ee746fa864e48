"""Grids and feature handling shared by partial dependence and ALE.

Which columns a user means (names or positions), whether each is numeric or
categorical, the grid of values a curve is computed on, and how many data rows
back each grid cell (counts, deciles for a rug).
"""
from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from ..errors import InvalidFeatureError, InvalidParameterError
from ..model import ModelAdapter

#: numeric columns with at most this many distinct integer values count as categorical
MAX_AUTO_CATEGORIES = 10

__all__ = [
    "as_adapter", "feature_names_from", "feature_names_from_list", "is_numeric", "feature_kind", "categories",
    "numeric_grid", "custom_grid", "bin_index", "grid_counts", "deciles", "MAX_AUTO_CATEGORIES",
]


def feature_names_from(frame: pd.DataFrame, features) -> list[str]:
    cols = [str(c) for c in frame.columns]
    if isinstance(features, (str, numbers.Integral)):
        features = [features]
    try:
        features = list(features)
    except TypeError:
        raise InvalidFeatureError(
            f"features must be a column name, an index, or a list of one or two of them; "
            f"got {features!r}."
        ) from None
    if not 1 <= len(features) <= 2:
        raise InvalidFeatureError(
            f"Partial dependence takes one or two features; got {len(features)} "
            f"({', '.join(map(str, features))}). Pick one feature for a curve or two for a "
            "heatmap."
        )
    names = []
    for f in features:
        if isinstance(f, numbers.Integral) and not isinstance(f, bool):
            if not 0 <= int(f) < len(cols):
                raise InvalidFeatureError(
                    f"Feature index {f} is out of range: the data has {len(cols)} columns "
                    f"(0..{len(cols) - 1})."
                )
            names.append(cols[int(f)])
        else:
            name = str(f)
            if name not in cols:
                raise InvalidFeatureError(
                    f"Unknown feature {name!r}. Known features: "
                    f"{', '.join(cols[:20])}{' …' if len(cols) > 20 else ''}."
                )
            names.append(name)
    if len(names) == 2 and names[0] == names[1]:
        raise InvalidFeatureError(
            f"The two features are the same ({names[0]!r}); pick two different features."
        )
    return names


def is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(
        series.dtype
    )


def feature_kind(series: pd.Series, name: str, categorical: set[str] | None) -> str:
    if categorical is not None:
        if name in categorical or not is_numeric(series):
            return "categorical"
        return "numeric"
    if not is_numeric(series):
        return "categorical"
    values = series.dropna().to_numpy()
    uniq = np.unique(values)
    if len(uniq) <= MAX_AUTO_CATEGORIES and np.all(np.mod(uniq, 1) == 0):
        return "categorical"
    return "numeric"


def categories(series: pd.Series, kind_numeric_values: bool) -> np.ndarray:
    """Observed categories: numbers sorted, declared categories in their order,
    other values in order of first appearance."""
    s = series.dropna()
    if isinstance(series.dtype, pd.CategoricalDtype):
        present = set(s.unique().tolist())
        cats = [c for c in series.dtype.categories if c in present]
        return np.asarray(cats, dtype=object)
    if kind_numeric_values:
        return np.unique(s.to_numpy())
    if pd.api.types.is_bool_dtype(series.dtype):
        return np.asarray(sorted(s.unique().tolist()), dtype=object)
    return np.asarray(pd.unique(s), dtype=object)


def numeric_grid(values: np.ndarray, name: str, grid_resolution: int, percentiles) -> np.ndarray:
    """The grid scikit-learn builds: unique values if fewer than grid_resolution,
    else equally spaced between the empirical percentiles (mquantiles)."""
    from scipy.stats.mstats import mquantiles

    values = values[~np.isnan(values)]
    uniq = np.unique(values)
    if len(uniq) < 2:
        raise InvalidFeatureError(
            f"Feature {name!r} is constant (every row is {uniq[0] if len(uniq) else 'missing'}), "
            "so its partial dependence is a single point. Pick a feature that varies, or "
            "pass the values to evaluate in custom_values."
        )
    if len(uniq) < grid_resolution:
        return uniq.astype(np.float64)
    lo, hi = mquantiles(values, prob=percentiles, axis=0)
    if np.allclose(lo, hi):
        raise InvalidParameterError(
            f"The percentiles {tuple(percentiles)} of feature {name!r} are both {lo:g}, so no "
            "grid can be built between them. Widen the percentiles (e.g. (0, 1)) or pass "
            "custom_values."
        )
    return np.linspace(lo, hi, num=grid_resolution, endpoint=True)


def custom_grid(values, series: pd.Series, name: str, kind: str, cats: np.ndarray | None) -> np.ndarray:
    arr = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=object)
    if arr.ndim != 1 or len(arr) == 0:
        raise InvalidParameterError(
            f"custom_values[{name!r}] must be a non-empty 1-D list of values; got {values!r}."
        )
    if kind == "categorical":
        known = set(cats.tolist())
        unknown = [v for v in arr.tolist() if v not in known]
        if unknown:
            shown = ", ".join(map(repr, cats.tolist()[:10]))
            raise InvalidParameterError(
                f"Feature {name!r} is categorical, but custom_values[{name!r}] holds values that "
                f"are not among its categories: {unknown[:5]!r}. A categorical feature takes a "
                f"grid of its categories ({shown}{' …' if len(cats) > 10 else ''}), not a numeric grid."
            )
        # keep data order, drop repeats
        order = {c: i for i, c in enumerate(cats.tolist())}
        chosen = sorted(set(arr.tolist()), key=order.__getitem__)
        out = np.empty(len(chosen), dtype=cats.dtype)
        out[:] = chosen
        return out
    try:
        num = np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"Feature {name!r} is numeric, but custom_values[{name!r}] holds non-numeric values "
            f"({arr[:5].tolist()!r}). Pass numbers."
        ) from None
    if not np.all(np.isfinite(num)):
        raise InvalidParameterError(
            f"custom_values[{name!r}] must be finite numbers; got {num.tolist()!r}."
        )
    return np.unique(num)


def bin_index(col: np.ndarray, grid: np.ndarray, kind: str) -> np.ndarray:
    """Cell of each row on one grid axis (-1: outside every cell)."""
    G = len(grid)
    if kind == "categorical":
        lookup = {v: i for i, v in enumerate(grid.tolist())}
        return np.asarray([lookup.get(v, -1) for v in col.tolist()], dtype=np.int64)
    x = np.asarray(col, dtype=np.float64)
    g = np.asarray(grid, dtype=np.float64)
    if G == 1:
        return np.where(x == g[0], 0, -1)
    mids = (g[1:] + g[:-1]) / 2
    edges = np.concatenate([[g[0] - (g[1] - g[0]) / 2], mids, [g[-1] + (g[-1] - g[-2]) / 2]])
    idx = np.searchsorted(edges, x, side="right") - 1
    idx[x == edges[-1]] = G - 1  # the outer edge itself belongs to the last cell
    idx[(idx < 0) | (idx >= G) | np.isnan(x)] = -1
    return idx


def grid_counts(frame: pd.DataFrame, names, grids, kinds) -> np.ndarray:
    shape = tuple(len(g) for g in grids)
    idx = [bin_index(frame[n].to_numpy(), g, k) for n, g, k in zip(names, grids, kinds)]
    ok = np.all([i >= 0 for i in idx], axis=0)
    flat = np.ravel_multi_index(tuple(i[ok] for i in idx), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(np.int64)


def deciles(series: pd.Series, kind: str) -> np.ndarray:
    if kind == "categorical":
        return np.empty(0)
    x = series.to_numpy(dtype=np.float64)
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return np.empty(0)
    return np.percentile(x, np.arange(10, 100, 10))


# ------------------------------------------------------------------- methods


def feature_names_from_list(frame: pd.DataFrame, feats) -> list[str]:
    if isinstance(feats, (str, numbers.Integral)):
        feats = [feats]
    out = []
    for f in feats:
        out.extend(feature_names_from(frame, [f]))
    return out


def as_adapter(model, class_index) -> ModelAdapter:
    """The model as a :class:`ModelAdapter` for the wanted class (an adapter keeps its output choice)."""
    if isinstance(model, ModelAdapter):
        return model if class_index is None else model.with_output(class_index=class_index)
    return ModelAdapter(model, class_index=class_index)
