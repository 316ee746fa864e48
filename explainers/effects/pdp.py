"""Partial dependence (PDP) and individual conditional expectation (ICE).

For a feature set S (one or two features) and a grid of values v, the partial
dependence is the average prediction with ``x_S`` overwritten by v while every
other feature keeps each row's own value (eq. 3 of the PDP seed)::

    PD(v) = 1/n * sum_i f(v, x_{i,C})          ICE_i(v) = f(v, x_{i,C})

so the ICE curves always average to the PDP over the same rows. Three ways to
compute it (``method=``; ``"auto"`` takes tree where it applies, else brute):

- ``"brute"``: any model. Rows are copied once per grid point, many grid points
  per predict call, and the predictions averaged: the same numbers as
  scikit-learn's ``partial_dependence(method="brute")``. For an MLP or a linear
  model (LinearRegression, Ridge, Lasso, ElasticNet, SGDRegressor,
  LogisticRegression), bare or after Standard/MinMax/MaxAbs/RobustScaler steps in
  a Pipeline, with all columns float, the first layer's pre-activation is computed
  once and updated per grid point (rank-1, see :mod:`explainers.effects._layers`):
  still the brute-force definition, to rounding. ``params["brute_path"]`` says
  which way was taken ("first-layer" or "generic").
- ``"tree"``: scikit-learn tree models (DecisionTree*, ExtraTree*, RandomForest*,
  ExtraTrees*, GradientBoosting* with a constant init, HistGradientBoosting*
  without categorical splits), given as the bare model with numeric data: the
  same values as brute, PD and ICE over the data rows, from one compiled walk per
  row and tree that carries the whole grid down the tree (see
  :mod:`explainers.effects._tree_kernels`), in the model's prediction space
  (boosting probabilities are computed per row and grid point from the summed
  margin before averaging).
- ``"recursion"``: scikit-learn's cover-weighted tree recursion, averages only
  (``kind="average"``), on the raw scale (margins for boosting classifiers, class
  fractions for forest classifiers), *including* the init/baseline term that
  scikit-learn leaves out for boosting models. Recursion does not average over X:
  at a split on another feature it weights both children by the share of
  *training* samples that reached them. Those shares were counted among training
  samples that already passed the splits above, including splits on the chosen
  feature, so with correlated features they follow the training distribution of
  the other features *given* the chosen feature's region, not their marginal
  distribution as brute does; the two then differ (brute extrapolates into unseen
  combinations, recursion mixes in a conditional expectation). With independent
  features and X the training data they agree closely.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import InvalidFeatureError, InvalidParameterError, param_error
from ..model import ModelAdapter
from .grid import (
    as_adapter,
    categories,
    custom_grid,
    deciles,
    feature_kind,
    feature_names_from,
    feature_names_from_list,
    grid_counts,
    is_numeric,
    numeric_grid,
)
from .tree_pd import _finish_outputs, _recursion_average, _tree_ice, _tree_plan, threads_for

__all__ = ["partial_dependence", "PartialDependenceResult"]

_KINDS = ("average", "individual", "both")
_METHODS = ("auto", "brute", "tree", "recursion")
#: at most this many rows per predict call in the brute method
_BRUTE_ROWS = 32_768


@dataclass(frozen=True, eq=False)
class PartialDependenceResult:
    """Partial dependence and ICE of one or two features.

    Shapes below use ``G = (len(grid[0]),)`` for one feature and
    ``G = (len(grid[0]), len(grid[1]))`` for two; ``k`` is the number of model
    outputs, present as a last axis only when ``len(output_names) > 1``
    (multiclass or binary probabilities with ``class_index=None``).

    Attributes
    ----------
    feature_names : tuple of str
        The one or two features, as column names.
    feature_kinds : tuple of str
        ``"numeric"`` or ``"categorical"`` per feature.
    grid : list of ndarray
        Grid values per feature: sorted floats for numeric features, the
        categories (object array, data order) for categorical ones.
    average : ndarray of shape G or (*G, k)
        Partial dependence: the mean of the ICE curves (centred when ``centered``).
    individual : ndarray of shape (n_rows, *G) or (n_rows, *G, k), or None
        ICE curves, one per row in ``row_indices``; None when ``kind="average"``.
    counts : ndarray of int64, shape G
        Rows of the full data in each grid cell: for numeric features the cells
        are bounded by the midpoints between grid values (the outer cells extend
        half a step beyond the end points); for categorical features a cell is
        the rows equal to the category. Zero marks points with no data behind them.
    deciles : list of ndarray
        Deciles (10%..90%) of each numeric feature in the full data, for a rug;
        an empty array for categorical features.
    row_indices : ndarray of int64, shape (n_rows,)
        Positions (0-based) in X of the rows averaged over (all rows unless sampled).
    kind : {"average", "individual", "both"}
    method : {"brute", "tree", "recursion"}
        The method actually used ("auto" resolved).
    centered : bool
        True when every ICE curve (and the PDP) has been shifted to 0 at the
        first grid point.
    output_names : list of str
        One label per output (class names, or "prediction").
    task : {"regression", "binary", "multiclass"}
    params : dict
        The inputs that produced the result (grid_resolution, percentiles, ...).
    """

    feature_names: tuple
    feature_kinds: tuple
    grid: list
    average: np.ndarray
    individual: np.ndarray | None
    counts: np.ndarray
    deciles: list
    row_indices: np.ndarray
    kind: str
    method: str
    centered: bool
    output_names: list
    task: str
    params: dict = field(default_factory=dict)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(len(g) for g in self.grid)

    @property
    def n_outputs(self) -> int:
        return len(self.output_names)


def _tiled_frame(frame: pd.DataFrame, names, point_values, reps: int) -> pd.DataFrame:
    """``reps`` stacked copies of a mixed-dtype frame, copy j with the target
    features set to grid point j (dtypes kept, categoricals rebuilt from codes)."""
    n = len(frame)
    data = {}
    for c in frame.columns:
        s = frame[c]
        if c in names:
            vals = point_values[names.index(c)]
            if isinstance(s.dtype, pd.CategoricalDtype):
                data[c] = pd.Categorical(np.repeat(np.asarray(vals, dtype=object), n), dtype=s.dtype)
            else:
                rep = np.repeat(np.asarray(vals, dtype=object if isinstance(vals, list) else None), n)
                data[c] = rep.astype(np.float64) if rep.dtype == object and is_numeric(s) else rep
        elif isinstance(s.dtype, pd.CategoricalDtype):
            data[c] = pd.Categorical.from_codes(np.tile(s.cat.codes.to_numpy(), reps), dtype=s.dtype)
        else:
            data[c] = np.tile(s.to_numpy(), reps)
    return pd.DataFrame(data, columns=frame.columns)


def _brute(adapter: ModelAdapter, frame: pd.DataFrame, names, grids, keep_ice: bool):
    """Replace the features by each grid point for all rows, many points per predict call."""
    n = len(frame)
    shape = tuple(len(g) for g in grids)
    points = np.asarray(list(np.ndindex(*shape)), dtype=np.int64).reshape(-1, len(grids))
    m = len(points)
    K = adapter.n_outputs
    # Several grid points per call, so that per-call overhead (validation,
    # pipelines) is paid a few times instead of once per grid point, but no more
    # rows than _BRUTE_ROWS: bigger batches fall out of cache and get slower per row.
    per_call = max(1, min(adapter.chunk_rows, _BRUTE_ROWS) // max(n, 1))
    per_call = min(per_call, m)
    numeric_fast = all(frame[c].dtype == np.float64 for c in frame.columns)
    cols = [frame.columns.get_loc(nm) for nm in names]
    if numeric_fast:
        # One stacked buffer for the whole run: the other columns never change,
        # only the target columns are overwritten for each batch of grid points.
        buffer = np.tile(frame.to_numpy(dtype=np.float64), (per_call, 1))
    ice = np.empty((n, m, K)) if keep_ice else None
    total = np.zeros((m, K))
    for s in range(0, m, per_call):
        pts = points[s : s + per_call]
        b = len(pts)
        if numeric_fast:
            view = buffer[: b * n]
            for j, col in enumerate(cols):
                view[:, col] = np.repeat(np.asarray(grids[j], dtype=np.float64)[pts[:, j]], n)
            # copy=False: the adapter and the model read the buffer itself
            big = pd.DataFrame(view, columns=frame.columns, copy=False)
        else:
            vals = []
            for j, g in enumerate(grids):
                picked = g[pts[:, j]]
                vals.append(list(picked) if g.dtype == object else picked)
            big = _tiled_frame(frame, names, vals, b)
        pred = np.asarray(adapter.predict(big), dtype=np.float64).reshape(b, n, K)
        if keep_ice:
            ice[:, s : s + b] = pred.transpose(1, 0, 2)
        total[s : s + b] = pred.mean(axis=1)
    if keep_ice:
        return ice.reshape(n, *shape, K), ice.mean(axis=0).reshape(*shape, K)
    return None, total.reshape(*shape, K)


# ---------------------------------------------------------------- public API
def partial_dependence(
    model,
    X,
    features: Sequence[str | int] | str | int,
    *,
    grid_resolution: int = 50,
    percentiles: tuple[float, float] = (0.05, 0.95),
    custom_values: Mapping[str | int, Sequence[Any]] | None = None,
    categorical_features: Sequence[str | int] | None = None,
    kind: str = "both",
    centered: bool = False,
    method: str = "auto",
    class_index: int | None = None,
    sample: int | None = None,
    random_state: int | None = 0,
) -> PartialDependenceResult:
    """Partial dependence and ICE of one or two features.

    Parameters
    ----------
    model : estimator or ModelAdapter
        A fitted model (scikit-learn estimator, Pipeline, or anything :class:`~explainers.ModelAdapter`
        takes). An adapter passes its output choice (e.g. ``output="raw"`` for margins) through.
    X : DataFrame or array-like of shape (n_samples, n_features)
        Rows to average over (and to build the grid and counts from).
    features : str, int, or list of one or two of them
        Column names or positions.
    grid_resolution : int, default=50
        Grid points per numeric feature (fewer if the feature has fewer
        distinct values: then those values are the grid, as in scikit-learn).
    percentiles : tuple of float, default=(0.05, 0.95)
        Numeric grids run evenly between these empirical percentiles.
    custom_values : dict, default=None
        ``{feature: values}``: your own grid for some features (numbers for a numeric
        feature, categories for a categorical one; numeric grids sorted, de-duplicated).
    categorical_features : list of str or int, default=None
        Features to treat as categorical. By default a feature is categorical when its
        dtype is not numeric (object, category, string, bool) or it holds at most 10
        distinct integer values. A categorical grid is every observed category, in data
        order (declared order for a category dtype, ascending for numbers, else first seen).
    kind : {"average", "individual", "both"}, default="both"
        ``"average"`` leaves ``individual`` as None; the others keep the ICE curves.
    centered : bool, default=False
        Shift every ICE curve to 0 at the first grid point (for two features,
        the first cell); the PDP is then the mean of the centred curves.
    method : {"auto", "brute", "tree", "recursion"}, default="auto"
        ``"brute"``: any model, as scikit-learn's ``method="brute"``. ``"tree"``: tree
        models, the same values from one compiled walk per row and tree. ``"recursion"``:
        scikit-learn's cover-weighted recursion (averages only, raw scale; it differs from
        brute for correlated features). ``"auto"``: tree where it applies, else brute.
        The module :mod:`explainers.effects.pdp` says what each computes and takes.
    class_index : int, default=None
        For classifiers, keep only this class (position in ``classes_``);
        None keeps every class (both columns for a binary model).
    sample : int, default=None
        Use a random subset of this many rows (for ICE plots of big data);
        the PDP is then averaged over the same rows.
    random_state : int, default=0
        Seed of the row sample.

    Returns
    -------
    PartialDependenceResult

    Raises
    ------
    InvalidFeatureError
        Unknown feature, more than two features, a constant feature.
    InvalidParameterError
        A bad option value, a grid that does not fit the feature (numbers for a
        categorical feature), ``method="tree"``/``"recursion"`` where it does not apply.

    See Also
    --------
    explainers.ale.ale : accumulated local effects, for correlated features.

    Examples
    --------
    >>> from sklearn.datasets import make_friedman1
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> X, y = make_friedman1(200, random_state=0)
    >>> rf = RandomForestRegressor(20, max_depth=4, random_state=0).fit(X, y)
    >>> r = partial_dependence(rf, X, [0], grid_resolution=10)
    >>> r.method, r.average.shape, r.individual.shape
    ('tree', (10,), (200, 10))
    """
    lo_p, hi_p = _check_options(grid_resolution, percentiles, kind, method, centered, sample)
    adapter, frame = _adapter_and_frame(model, X, class_index)
    names, categorical, custom = _features(frame, features, categorical_features, custom_values)
    kinds, grids = _grids(adapter.model, frame, names, categorical, custom, grid_resolution, (lo_p, hi_p))
    rows, work = _sample_rows(frame, sample, random_state)
    used, plan = _choose_method(adapter, frame, kinds, grids, method)
    ice, avg, output_names, brute_path = _curves(used, plan, adapter, frame, work, names, grids, kind, centered)
    params = dict(
        features=list(names), grid_resolution=int(grid_resolution), percentiles=(lo_p, hi_p),
        custom_values={k: list(np.asarray(v, dtype=object).tolist()) for k, v in custom.items()},
        categorical_features=None if categorical is None else sorted(categorical), kind=kind, centered=bool(centered),
        method=method, class_index=class_index, sample=sample, random_state=random_state, n_samples=len(frame),
        model=type(adapter.model).__name__, brute_path=brute_path)
    return _assemble(adapter, frame, names, kinds, grids, rows, ice, avg, used, output_names, params)


# ------------------------------------------------------------ the steps
def _check_options(grid_resolution, percentiles, kind, method, centered, sample) -> tuple[float, float]:
    """Validate the options of :func:`partial_dependence`; return the percentile pair."""
    func = "partial_dependence"
    if not isinstance(grid_resolution, numbers.Integral) or isinstance(grid_resolution, bool) or grid_resolution < 2:
        raise param_error("grid_resolution", func, "an int >= 2", grid_resolution)
    try:
        lo_p, hi_p = (float(p) for p in percentiles)
    except (TypeError, ValueError):
        raise param_error("percentiles", func, "a pair of floats in [0, 1]", percentiles) from None
    if not (0 <= lo_p < hi_p <= 1):
        raise param_error("percentiles", func, "a pair (low, high) with 0 <= low < high <= 1", percentiles)
    if kind not in _KINDS:
        raise param_error("kind", func, f"one of {list(_KINDS)}", kind)
    if method not in _METHODS:
        raise param_error("method", func, f"one of {list(_METHODS)}", method)
    if not isinstance(centered, (bool, np.bool_)):
        raise param_error("centered", func, "a bool", centered)
    if sample is not None and (
        not isinstance(sample, numbers.Integral) or isinstance(sample, bool) or sample < 1
    ):
        raise param_error("sample", func, "None or an int >= 1", sample)
    if method == "recursion" and kind != "average":
        raise InvalidParameterError(
            "method='recursion' computes averages only (kind='average'); use method='tree' "
            f"or 'brute' for ICE curves. Got kind={kind!r}."
        )
    return lo_p, hi_p


def _adapter_and_frame(model, X, class_index) -> tuple[ModelAdapter, pd.DataFrame]:
    """The model as an adapter for the wanted class, and X as its input frame (not empty)."""
    adapter = as_adapter(model, class_index)
    frame = adapter.to_frame(X)
    if len(frame) == 0:
        from ..errors import InvalidDataError

        raise InvalidDataError("X has no rows; pass at least one row to average over.")
    return adapter, frame


def _features(frame: pd.DataFrame, features, categorical_features, custom_values):
    """The features' column names, the declared categorical ones (or None) and the custom grids by name."""
    names = feature_names_from(frame, features)
    categorical = None
    if categorical_features is not None:
        categorical = set(feature_names_from_list(frame, categorical_features))
    custom = {feature_names_from(frame, [key])[0]: vals for key, vals in (custom_values or {}).items()}
    return names, categorical, custom


def _grids(model, frame: pd.DataFrame, names, categorical, custom, grid_resolution, pct):
    """Kind ("numeric" or "categorical") and grid of each feature (categories in the model's order)."""
    kinds, grids = [], []
    for name in names:
        s = frame[name]
        kind_f = feature_kind(s, name, categorical)
        if name in custom and kind_f == "categorical" and categorical is None and is_numeric(s):
            # A numeric column auto-detected as categorical (few integer values):
            # a custom grid of other numbers makes it numeric again.
            wanted = set(np.asarray(custom[name], dtype=object).tolist())
            if not wanted <= set(categories(s, True).tolist()):
                kind_f = "numeric"
        cats = categories(s, is_numeric(s)) if kind_f == "categorical" else None
        if name in custom:
            grid = custom_grid(custom[name], s, name, kind_f, cats)
        elif kind_f == "categorical":
            if len(cats) < 2:
                raise InvalidFeatureError(
                    f"Feature {name!r} is constant (it has the single category "
                    f"{cats.tolist()[:1]!r}); its partial dependence is a single point. Pick a "
                    "feature that varies."
                )
            grid = cats
        else:
            grid = numeric_grid(s.to_numpy(dtype=np.float64), name, grid_resolution, pct)
        kinds.append(kind_f)
        grids.append(grid)
    return kinds, _in_model_order(model, frame, names, kinds, grids)


def _in_model_order(model, frame: pd.DataFrame, names, kinds, grids):
    """Categorical grids in the order of the model's own categories (where it knows
    them), values it does not know after them: the same bars whatever the row
    order or file format of the data."""
    if "categorical" not in kinds:
        return grids
    from ..io.data import category_order

    try:
        order = category_order(model, list(frame.columns))
    except Exception:  # noqa: BLE001 - keep the data's order
        return grids
    out = []
    for name, kind, grid in zip(names, kinds, grids):
        known = order.get(str(name))
        if kind == "categorical" and known:
            present = list(grid)
            rank = {v: i for i, v in enumerate(known)}
            rank.update({str(v): i for i, v in enumerate(known) if str(v) not in rank})
            key = lambda v: rank.get(v, rank.get(str(v), len(known)))  # noqa: E731
            grid = np.asarray(sorted(present, key=key), dtype=grid.dtype)
        out.append(grid)
    return out


def _sample_rows(frame: pd.DataFrame, sample, random_state) -> tuple[np.ndarray, pd.DataFrame]:
    """The rows to average over (positions, int64) and their frame: all, or a seeded sample."""
    n_all = len(frame)
    if sample is not None and sample < n_all:
        rng = np.random.default_rng(random_state)
        rows = np.sort(rng.choice(n_all, size=int(sample), replace=False))
        work = frame.iloc[rows]
    else:
        rows = np.arange(n_all)
        work = frame
    return rows.astype(np.int64), work


def _choose_method(adapter: ModelAdapter, frame: pd.DataFrame, kinds, grids, method: str):
    """Resolve ``method`` ("auto" -> tree where it applies, else brute); return it and the tree plan."""
    if method == "brute":
        return "brute", None
    plan, reason = _tree_plan(adapter, frame, kinds, grids)
    if plan is None and method != "auto":
        raise InvalidParameterError(
            f"method={method!r} does not apply here: {reason}. Use method='brute' "
            "(or 'auto')."
        )
    if method == "recursion" and getattr(adapter.model, "_fitted_with_sw", False):
        # HistGradientBoosting's node counts ignore the weights, so the recursion's
        # cover-weighted average would be off (scikit-learn refuses it too)
        raise InvalidParameterError(
            "method='recursion' ignores the sample weights this model was fitted with (its trees "
            "keep unweighted sample counts); use method='tree' or 'brute'."
        )
    return ("brute" if plan is None else ("tree" if method == "auto" else method)), plan


def _curves(used: str, plan, adapter: ModelAdapter, frame: pd.DataFrame, work: pd.DataFrame, names, grids,
            kind: str, centered: bool):
    """ICE (or None), average, output names and brute path (None off brute) by the chosen method,
    centred if asked."""
    keep_ice = kind != "average"
    output_names, brute_path = list(adapter.output_names), None
    if used == "brute":
        ice, avg, brute_path = _brute_curves(adapter, work, names, grids, keep_ice)
    elif used == "tree":
        cols = [frame.columns.get_loc(nm) for nm in names]
        ice, avg = _tree_curves(plan, adapter, work, cols, grids, keep_ice)
    else:  # recursion: the raw (pre-transform) scale of the ensemble
        cols = [frame.columns.get_loc(nm) for nm in names]
        ice = None
        avg, output_names = _recursion_curves(plan, adapter, cols, grids)
    if centered:
        ice, avg = _center(ice, avg, len(names))
    return ice, avg, output_names, brute_path


def _brute_curves(adapter: ModelAdapter, work: pd.DataFrame, names, grids, keep_ice: bool):
    """ICE (or None) and average by the brute-force definition f(v, x_{i,C}); and which path ran.

    For MLPs and linear models (behind column-wise scalers) the first affine
    layer is shared across grid points (a rank-1 update per feature) instead of
    re-predicting stacked copies of X.
    """
    from ._layers import first_layer_brute, first_layer_plan

    res = None
    layer_plan = first_layer_plan(adapter, work, grids)
    if layer_plan is not None:
        res = first_layer_brute(layer_plan, adapter, work, names, grids, keep_ice)
    if res is not None:
        (ice, avg), path = res, "first-layer"
    else:
        (ice, avg), path = _brute(adapter, work, names, grids, keep_ice), "generic"
    if adapter.n_outputs == 1:
        # adapter.predict already picked the class; drop the single output axis
        ice = None if ice is None else ice[..., 0]
        avg = avg[..., 0]
    return ice, avg, path


def _tree_curves(plan, adapter: ModelAdapter, work: pd.DataFrame, cols, grids, keep_ice: bool):
    """ICE (or None) and average from the compiled tree walk, in the adapter's output space."""
    ens, transform = plan
    cells = int(np.prod([len(g) for g in grids])) * (2 if transform == "sigmoid" else ens.n_raw)
    with threads_for(len(work) * (len(ens.roots) + cells)) as shared:
        ice, avg = _tree_ice(ens, transform, work, cols, grids, keep_ice, shared)
    if len(cols) == 1:  # drop the unit second grid axis of the kernel
        ice = None if ice is None else ice[:, :, 0, :]
        avg = avg[:, 0, :]
    ice = None if ice is None else _finish_outputs(ice, adapter)
    return ice, _finish_outputs(avg, adapter)


def _recursion_curves(plan, adapter: ModelAdapter, cols, grids):
    """scikit-learn's cover-weighted recursion average on the raw scale, and its output names."""
    ens, _ = plan
    raw = _recursion_average(ens, cols, grids)
    if len(cols) == 1:
        raw = raw[:, 0, :]
    output_names = _raw_output_names(adapter, ens)
    avg = _select_raw(raw, adapter)
    if len(output_names) > 1 and adapter.class_index is not None:
        output_names = [output_names[adapter.class_index]]
    elif ens.transform == "sigmoid" and adapter.class_index == 0:
        output_names = [f"log-odds({adapter.classes[0]})"]
    return avg, output_names


def _center(ice, avg, n_features: int):
    """Shift every ICE curve (and the average) to 0 at the first grid point."""
    first = (slice(None),) + (0,) * n_features
    if ice is not None:
        ice = ice - ice[first][(slice(None),) + (None,) * n_features]
        return ice, ice.mean(axis=0)
    return None, avg - avg[(0,) * n_features]


def _assemble(adapter: ModelAdapter, frame: pd.DataFrame, names, kinds, grids, rows, ice, avg, used: str,
              output_names, params: dict) -> PartialDependenceResult:
    """The result: curves as float64, the grids' counts and the features' deciles over all of X."""
    kind = params["kind"]
    return PartialDependenceResult(
        feature_names=tuple(names),
        feature_kinds=tuple(kinds),
        grid=list(grids),
        average=np.asarray(avg, dtype=np.float64),
        individual=None if (ice is None or kind == "average") else np.asarray(ice, dtype=np.float64),
        counts=grid_counts(frame, names, grids, kinds),
        deciles=[deciles(frame[n_], k_) for n_, k_ in zip(names, kinds)],
        row_indices=rows,
        kind=kind,
        method=used,
        centered=params["centered"],
        output_names=output_names,
        task=adapter.task,
        params=params,
    )


def _raw_output_names(adapter: ModelAdapter, ens) -> list[str]:
    if adapter.task == "regression":
        if ens.n_raw > 1:  # a multi-output regressor: one column per target
            return list(adapter.all_output_names)
        return ["log(prediction)"] if ens.transform == "exp" else list(adapter.all_output_names)
    classes = [str(c) for c in adapter.classes]
    if ens.transform == "sigmoid":
        return [f"log-odds({classes[1]})"]
    if ens.transform == "softmax":
        return [f"margin({c})" for c in classes]
    return classes  # forest / tree classifiers: averaged class fractions


def _select_raw(raw: np.ndarray, adapter: ModelAdapter) -> np.ndarray:
    ci = adapter.class_index
    if raw.shape[-1] == 1:
        if ci == 0:  # one log-odds column: the negative class is its mirror
            return -raw[..., 0]
        return raw[..., 0]
    if ci is not None:
        return raw[..., ci]
    return raw
