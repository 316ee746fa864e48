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
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .errors import InvalidFeatureError, param_error
from .model import ModelAdapter

__all__ = ["ale", "AleResult"]


@dataclass(frozen=True, eq=False)
class AleResult:
    """First-order accumulated local effects of one numeric feature.

    ``k`` is the number of model outputs, present as a last axis only when
    ``len(output_names) > 1``.

    Attributes
    ----------
    feature_names : tuple of str
        The feature (one name).
    grid : list of ndarray
        ``grid[0]``: the bin edges ``z_0 < ... < z_B`` (quantiles of the feature).
    effect : ndarray of shape (B + 1,) or (B + 1, k)
        The centred ALE at each edge.
    local_effects : ndarray of shape (B,) or (B, k)
        Mean prediction change across each bin.
    counts : ndarray of int64, shape (B,)
        Rows in each bin (the first bin includes its lower edge); they add up
        to the rows with a value for the feature.
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
    feature: str | int,
    *,
    n_bins: int = 20,
    class_index: int | None = None,
) -> AleResult:
    """First-order accumulated local effects of one numeric feature.

    Parameters
    ----------
    model : estimator or ModelAdapter
        A fitted model.
    X : DataFrame or array-like of shape (n_samples, n_features)
        The data; its rows give both the bins and the local differences.
    feature : str or int
        Column name or position; must be numeric.
    n_bins : int, default=20
        Number of quantile bins (fewer when the feature has repeated values,
        since duplicate edges are merged).
    class_index : int, default=None
        For classifiers, keep only this class's probability.

    Returns
    -------
    AleResult

    Raises
    ------
    InvalidFeatureError
        Unknown, non-numeric or constant feature.
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
    if isinstance(model, ModelAdapter):
        adapter = model if class_index is None else model.with_output(class_index=class_index)
    else:
        adapter = ModelAdapter(model, class_index=class_index)
    frame = adapter.to_frame(X)
    from .pdp import _feature_names_from

    names = _feature_names_from(frame, [feature] if isinstance(feature, (str, numbers.Integral)) else feature)
    if len(names) != 1:
        raise InvalidFeatureError(
            "ale takes one feature (first-order ALE); got two. Compute one ALE per feature."
        )
    name = names[0]
    s = frame[name]
    if not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        raise InvalidFeatureError(
            f"Feature {name!r} is not numeric ({s.dtype}); ALE needs ordered numeric values. "
            "Use partial_dependence for categorical features."
        )
    x = s.to_numpy(dtype=np.float64)
    keep = ~np.isnan(x)
    if len(np.unique(x[keep])) < 2:
        raise InvalidFeatureError(
            f"Feature {name!r} is constant (or missing) in every row, so it has no local "
            "effect to accumulate. Pick a feature that varies."
        )
    rows = np.flatnonzero(keep)
    xk = x[rows]
    edges = np.unique(np.quantile(xk, np.linspace(0, 1, n_bins + 1), method="inverted_cdf"))
    B = len(edges) - 1
    # bin b covers (z_b, z_{b+1}]; the minimum joins the first bin
    idx = np.clip(np.searchsorted(edges, xk, side="left") - 1, 0, B - 1)

    work = frame.iloc[rows]
    j = frame.columns.get_loc(name)
    if all(work[c].dtype == np.float64 for c in work.columns):
        base = work.to_numpy(dtype=np.float64)
        lo, hi = base.copy(), base.copy()
        lo[:, j] = edges[idx]
        hi[:, j] = edges[idx + 1]
        both = np.concatenate([lo, hi])
    else:
        lo = work.copy()
        hi = work.copy()
        lo[name] = edges[idx]
        hi[name] = edges[idx + 1]
        both = pd.concat([lo, hi], ignore_index=True)
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
    deciles = [np.percentile(xk, np.arange(10, 100, 10))]
    return AleResult(
        feature_names=(name,),
        grid=[edges],
        effect=effect,
        local_effects=local,
        counts=counts,
        deciles=deciles,
        output_names=list(adapter.output_names),
        task=adapter.task,
        params=dict(feature=name, n_bins=int(n_bins), class_index=class_index,
                    n_samples=int(len(frame)), model=type(adapter.model).__name__),
    )
