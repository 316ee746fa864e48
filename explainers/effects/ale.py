"""Accumulated local effects (ALE), the remedy for correlated features.

Partial dependence overwrites a feature for every row, so with correlated
features it averages the model over combinations that never occur (the
"Nevada" problem of the PDP seed). ALE (Apley & Zhu, 2020) only looks at
*local* changes, inside the data: the feature's range is cut into quantile
bins; for the rows in each bin the prediction is evaluated at the bin's upper
and lower edge with every other feature kept as it is, and the mean
difference is that bin's local effect. Accumulating the local effects bin by
bin gives the ALE curve, which is then centred so its mean over the data is 0::

    ALE(z_j) = sum_{b <= j} mean_{i in bin b} [f(z_b, x_{i,C}) - f(z_{b-1}, x_{i,C})] - c

For an additive model ``f = g(x_j) + h(x_C)`` this recovers ``g`` up to a constant.

Second order (two features j, k): the grid is the product of both features'
quantile bins; in each cell the rows' mixed second differences

    f(z_a, z_b, x_C) - f(z_{a-1}, z_b, x_C) - f(z_a, z_{b-1}, x_C) + f(z_{a-1}, z_{b-1}, x_C)

are averaged (a cell without rows takes the value of the nearest cell with
rows, as in Apley's ALEPlot), accumulated over both axes, and the first-order
effects of j and of k that the accumulation still holds are removed, then the
surface is centred. What is left is the pure interaction: zero everywhere for
a model without a j-k interaction, ``(x_j - c_j)(x_k - c_k)`` up to the
main-effect terms for ``f = x_j x_k``.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import InvalidFeatureError, param_error
from ..model import ModelAdapter
from .grid import as_adapter, feature_names_from_list

__all__ = ["ale", "AleResult"]


@dataclass(frozen=True, eq=False)
class AleResult:
    """Accumulated local effects of one numeric feature, or (second order) of two.

    ``k`` is the number of model outputs, present as a last axis only when
    ``len(output_names) > 1``. For two features the first axes are
    (feature 1, feature 2), as in ``grid``.

    Attributes
    ----------
    feature_names : tuple of str
        The feature (one name), or the two features.
    grid : list of ndarray
        ``grid[i]``: the bin edges ``z_0 < ... < z_B`` of feature i (quantiles).
    effect : ndarray of shape (B + 1,) or (B + 1, k); (B1 + 1, B2 + 1[, k]) for two
        The centred ALE at each edge (each grid corner for two features: the
        pure interaction, first-order effects removed).
    local_effects : ndarray of shape (B,) or (B, k); (B1, B2[, k]) for two
        Mean prediction change across each bin (mean mixed second difference
        in each cell, empty cells filled from the nearest cell with rows).
    counts : ndarray of int64, shape (B,); (B1, B2) for two
        Rows in each bin or cell (the first bin includes its lower edge); they
        add up to the rows with a value for the feature(s).
    deciles : list of ndarray
        Deciles of the feature, for a rug.
    output_names : list of str
    task : {"regression", "binary", "multiclass"}
    params : dict
    """

    feature_names: tuple
    grid: list
    effect: np.ndarray
    local_effects: np.ndarray
    counts: np.ndarray
    deciles: list
    output_names: list
    task: str
    params: dict = field(default_factory=dict)


def ale(
    model,
    X,
    feature,
    *,
    n_bins: int = 20,
    class_index: int | None = None,
) -> AleResult:
    """Accumulated local effects of one numeric feature, or of two (second order).

    Parameters
    ----------
    model : estimator or ModelAdapter
        A fitted model.
    X : DataFrame or array-like of shape (n_samples, n_features)
        The data; its rows give both the bins and the local differences.
    feature : str or int, or a pair of them
        Column name or position; must be numeric. Two features give the
        second-order ALE (their interaction alone).
    n_bins : int, default=20
        Number of quantile bins per feature (fewer when a feature has repeated
        values, since duplicate edges are merged).
    class_index : int, default=None
        For classifiers, keep only this class's probability.

    Returns
    -------
    AleResult

    Raises
    ------
    InvalidFeatureError
        Unknown, non-numeric or constant feature; more than two features, or
        the same feature twice.
    InvalidParameterError
        ``n_bins`` not an int >= 1.

    Notes
    -----
    Bin edges are the ``inverted_cdf`` quantiles (data values), so every bin
    holds at least one row. Rows exactly at an inner edge belong to the bin
    below it, rows at the minimum to the first bin. The curve is centred so
    that its count-weighted mean over the bins (each bin's value being the
    mean of its two edges) is zero.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> lr = LinearRegression().fit(X, 3 * X[:, 0] + X[:, 1])
    >>> r = ale(lr, X, 0, n_bins=5)
    >>> bool(np.allclose(np.diff(r.effect), 3 * np.diff(r.grid[0])))
    True
    """
    func = "ale"
    if not isinstance(n_bins, numbers.Integral) or isinstance(n_bins, bool) or n_bins < 1:
        raise param_error("n_bins", func, "an int >= 1", n_bins)
    adapter = as_adapter(model, class_index)
    frame = adapter.to_frame(X)
    names = _feature_names(frame, feature)
    xs = [_numeric_values(frame, name) for name in names]
    if len(names) == 2:
        return _ale_2d(adapter, frame, names, xs, int(n_bins), class_index)
    name, x = names[0], xs[0]
    rows = np.flatnonzero(~np.isnan(x))
    edges, idx = _bins(x[rows], n_bins)
    effect, local, counts = _first_order(adapter, frame, name, rows, edges, idx)
    return AleResult(
        feature_names=(name,),
        grid=[edges],
        effect=effect,
        local_effects=local,
        counts=counts,
        deciles=[np.percentile(x[rows], np.arange(10, 100, 10))],
        output_names=list(adapter.output_names),
        task=adapter.task,
        params=dict(feature=name, n_bins=int(n_bins), class_index=class_index,
                    n_samples=int(len(frame)), model=type(adapter.model).__name__),
    )


def _feature_names(frame: pd.DataFrame, feature) -> list[str]:
    """The one or two (different) column names ``feature`` means."""
    if not isinstance(feature, (str, numbers.Integral, list, tuple)):
        raise InvalidFeatureError(
            f"feature must be a column name, an index, or a pair of them; got {feature!r}."
        )
    names = feature_names_from_list(frame, feature)
    if len(names) > 2:
        raise InvalidFeatureError(
            f"ale takes one feature (first order) or two (second order); got {len(names)}. "
            "Pick one or two features."
        )
    if len(names) == 2 and names[0] == names[1]:
        raise InvalidFeatureError(
            f"The two features are the same ({names[0]!r}); pick two different features."
        )
    return names


def _first_order(adapter: ModelAdapter, frame: pd.DataFrame, name: str, rows, edges, idx):
    """Centred accumulated effect at the edges, the mean local difference and the row count per bin."""
    B = len(edges) - 1
    work = frame.iloc[rows]
    j = frame.columns.get_loc(name)
    both = _stack([_with_values(work, [j], [edges[idx]]), _with_values(work, [j], [edges[idx + 1]])])
    # one predict call (chunked inside the adapter) for both edges of every row
    pred = np.asarray(adapter.predict(both), dtype=np.float64)
    n = len(rows)
    diff = pred[n:] - pred[:n]
    K = 1 if diff.ndim == 1 else diff.shape[1]
    diff2 = diff.reshape(n, K)
    counts = np.bincount(idx, minlength=B).astype(np.int64)
    sums = np.zeros((B, K))
    np.add.at(sums, idx, diff2)
    local = sums / np.maximum(counts, 1)[:, None]
    acc = np.vstack([np.zeros((1, K)), np.cumsum(local, axis=0)])
    mid = (acc[1:] + acc[:-1]) / 2
    effect = acc - (counts[:, None] * mid).sum(axis=0) / counts.sum()
    if diff.ndim == 1:
        effect, local = effect[:, 0], local[:, 0]
    return effect, local, counts


def _numeric_values(frame: pd.DataFrame, name: str) -> np.ndarray:
    """The feature as float64 (NaN where missing), checked numeric and not constant."""
    s = frame[name]
    if not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        raise InvalidFeatureError(
            f"Feature {name!r} is not numeric ({s.dtype}); ALE needs ordered numeric values. "
            "Use partial_dependence for categorical features."
        )
    x = s.to_numpy(dtype=np.float64)
    if len(np.unique(x[~np.isnan(x)])) < 2:
        raise InvalidFeatureError(
            f"Feature {name!r} is constant (or missing) in every row, so it has no local "
            "effect to accumulate. Pick a feature that varies."
        )
    return x


def _bins(xk: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Quantile edges (duplicates merged) and each value's bin: bin b covers
    (z_b, z_{b+1}]; the minimum joins the first bin."""
    edges = np.unique(np.quantile(xk, np.linspace(0, 1, n_bins + 1), method="inverted_cdf"))
    B = len(edges) - 1
    return edges, np.clip(np.searchsorted(edges, xk, side="left") - 1, 0, B - 1)


def _with_values(work: pd.DataFrame, cols: list[int], values: list[np.ndarray]):
    """A copy of the rows with the given columns overwritten (array or frame)."""
    if all(work[c].dtype == np.float64 for c in work.columns):
        arr = work.to_numpy(dtype=np.float64, copy=True)
        for j, v in zip(cols, values):
            arr[:, j] = v
        return arr
    out = work.copy()
    for j, v in zip(cols, values):
        out[out.columns[j]] = v  # a new (float) column, whatever the old dtype
    return out


def _stack(parts: list):
    return np.concatenate(parts) if isinstance(parts[0], np.ndarray) else pd.concat(parts, ignore_index=True)


def _ale_2d(adapter: ModelAdapter, frame: pd.DataFrame, names, xs, n_bins: int, class_index) -> AleResult:
    """Second-order ALE (Apley & Zhu 2020, as ALEPlot computes it); see the module doc."""
    keep = ~np.isnan(xs[0]) & ~np.isnan(xs[1])
    rows = np.flatnonzero(keep)
    x1, x2 = xs[0][rows], xs[1][rows]
    for name, x in zip(names, (x1, x2)):
        if len(np.unique(x)) < 2:
            raise InvalidFeatureError(
                f"Feature {name!r} is constant in the rows where both features have a value; "
                "pick features that vary together in the data."
            )
    (e1, i1), (e2, i2) = _bins(x1, n_bins), _bins(x2, n_bins)
    B1, B2 = len(e1) - 1, len(e2) - 1
    work = frame.iloc[rows]
    cols = [frame.columns.get_loc(nm) for nm in names]
    corners = [(i1 + a, i2 + b) for a in (0, 1) for b in (0, 1)]  # 00, 01, 10, 11
    parts = [_with_values(work, cols, [e1[ia], e2[ib]]) for ia, ib in corners]
    both = _stack(parts)
    # one predict call (chunked inside the adapter) for the four corners of every row
    pred = np.asarray(adapter.predict(both), dtype=np.float64)
    n = len(rows)
    K = 1 if pred.ndim == 1 else pred.shape[1]
    f00, f01, f10, f11 = (pred[q * n : (q + 1) * n].reshape(n, K) for q in range(4))
    d = (f11 - f10) - (f01 - f00)
    counts = np.zeros((B1, B2), dtype=np.int64)
    np.add.at(counts, (i1, i2), 1)
    sums = np.zeros((B1, B2, K))
    np.add.at(sums, (i1, i2), d)
    delta = sums / np.maximum(counts, 1)[:, :, None]
    empty = counts == 0
    if empty.any():  # the nearest cell with rows, in units of the bin grid (ALEPlot)
        from scipy.spatial import cKDTree

        full = np.argwhere(~empty)
        holes = np.argwhere(empty)
        scale = np.array([1.0 / B1, 1.0 / B2])
        _, near = cKDTree(full * scale).query(holes * scale)
        delta[holes[:, 0], holes[:, 1]] = delta[full[near, 0], full[near, 1]]
    fJ = np.zeros((B1 + 1, B2 + 1, K))
    fJ[1:, 1:] = np.cumsum(np.cumsum(delta, axis=0), axis=1)
    c = counts[:, :, None].astype(np.float64)
    n1, n2 = counts.sum(axis=1)[:, None], counts.sum(axis=0)[:, None]
    # the first-order effect of feature 1 still in fJ: its steps along axis 0,
    # averaged over each feature-1 bin's rows (each cell by the mean of its two edges)
    step1 = fJ[1:] - fJ[:-1]  # (B1, B2 + 1, K)
    ave1 = (c * (step1[:, :-1] + step1[:, 1:]) / 2).sum(axis=1) / np.maximum(n1, 1)
    step2 = fJ[:, 1:] - fJ[:, :-1]  # (B1 + 1, B2, K)
    ave2 = (c * (step2[:-1] + step2[1:]) / 2).sum(axis=0) / np.maximum(n2, 1)
    fJ = fJ - np.vstack([np.zeros((1, K)), np.cumsum(ave1, axis=0)])[:, None, :]
    fJ = fJ - np.vstack([np.zeros((1, K)), np.cumsum(ave2, axis=0)])[None, :, :]
    cell_mean = (fJ[:-1, :-1] + fJ[:-1, 1:] + fJ[1:, :-1] + fJ[1:, 1:]) / 4
    fJ = fJ - (c * cell_mean).sum(axis=(0, 1)) / counts.sum()
    if pred.ndim == 1:
        fJ, delta = fJ[..., 0], delta[..., 0]
    return AleResult(
        feature_names=tuple(names),
        grid=[e1, e2],
        effect=fJ,
        local_effects=delta,
        counts=counts,
        deciles=[np.percentile(x1, np.arange(10, 100, 10)), np.percentile(x2, np.arange(10, 100, 10))],
        output_names=list(adapter.output_names),
        task=adapter.task,
        params=dict(features=list(names), order=2, n_bins=int(n_bins), class_index=class_index,
                    n_samples=int(len(frame)), empty_cells=int(empty.sum()),
                    model=type(adapter.model).__name__),
    )
