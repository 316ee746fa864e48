"""Fitted state that a .skops file may not supply, left out before skops reads it and rebuilt.

Two kinds of stored objects are never built from the file:

- a neighbour model's search index (``_tree``: a KDTree or BallTree, with its
  DistanceMetric). It is compiled code over node arrays read from the file, which it
  indexes without bounds checks: the same risk as the tree arrays that crashed the
  server before. Its entry is removed from ``schema.json``, and once the model is
  loaded the index is built again by scikit-learn from the stored training rows
  (``_fit_X``), after they and the targets (``_y``) are checked (:func:`rebuild_neighbours`);
- an MLP's optimizer (``_optimizer``): training state that predict never reads.

:func:`strip_schema` rewrites the archive (only when it holds such entries);
:func:`check_loaded` then walks the loaded model, pipelines and meta-estimators included,
and rebuilds or checks (:mod:`.skops_checks`) every estimator of :data:`CHECKS`.
"""
from __future__ import annotations

import io
import json
import warnings

import numpy as np

from .. import limits
from ..errors import InvalidModelError
from . import skops_checks as sc
from .skops_checks import (
    check_array,
    check_choice,
    check_count,
    check_number,
    refuse,
)

#: schema entries left out before skops builds anything: class -> attribute
DROPPED_STATE = {
    "sklearn.neighbors._classification.KNeighborsClassifier": "_tree",
    "sklearn.neighbors._classification.RadiusNeighborsClassifier": "_tree",
    "sklearn.neighbors._regression.KNeighborsRegressor": "_tree",
    "sklearn.neighbors._regression.RadiusNeighborsRegressor": "_tree",
    "sklearn.neural_network._multilayer_perceptron.MLPClassifier": "_optimizer",
    "sklearn.neural_network._multilayer_perceptron.MLPRegressor": "_optimizer",
}
#: nesting of estimators / containers followed inside a model (as explainers.trees.validate)
_MAX_NESTING = 200
_SCALARS = (int, float, complex, bool, str, bytes, np.generic)
_SKOPS_HINT = "Save the model again with skops.io.dump(model, 'model.skops')."


def schema_nodes(schema, key: str = "__class__"):
    """Every node (a dict with ``key``: ``__class__``, or ``__loader__``) of a parsed skops
    schema, iteratively."""
    stack = [schema]
    while stack:
        obj = stack.pop()
        if isinstance(obj, dict):
            if key in obj:
                yield obj
            stack.extend(v for v in obj.values() if isinstance(v, (dict, list)))
        elif isinstance(obj, list):
            stack.extend(v for v in obj if isinstance(v, (dict, list)))


def node_name(node) -> str:
    return f"{node.get('__module__')}.{node.get('__class__')}"


def strip_schema(data: bytes, schema) -> tuple[bytes, frozenset]:
    """The archive with the :data:`DROPPED_STATE` entries left out, and the class names its
    schema names (which tell :func:`check_loaded` what to look for).

    ``schema`` is the archive's parsed schema.json, as
    :func:`~explainers.io.skops_archive.checked_schema` accepted it (edited in place).
    Returns ``data`` itself when nothing is left out.
    """
    nodes = list(schema_nodes(schema))
    names = frozenset(node_name(n) for n in nodes)
    dropped = [_drop_attribute(n, DROPPED_STATE[node_name(n)]) for n in nodes
               if node_name(n) in DROPPED_STATE and n.get("__loader__") == "ObjectNode"]
    if not any(dropped):
        return data, names
    return _with_schema(data, schema), names


def _drop_attribute(node, attr: str) -> bool:
    """Remove ``attr`` from an object node's attribute dict (and its key type); True if it was there."""
    state = node.get("content")
    attrs = state.get("content") if isinstance(state, dict) and state.get("__loader__") == "DictNode" else None
    if not isinstance(attrs, dict) or attr not in attrs:
        return False
    types = state.get("key_types")
    keys = (types or {}).get("content") if isinstance(types, dict) else None
    if isinstance(keys, list) and len(keys) == len(attrs):
        del keys[list(attrs).index(attr)]  # skops pairs key types with keys by position
        del attrs[attr]
    else:  # not as skops writes it: keep the positions, store None
        attrs[attr] = {"__class__": "str", "__module__": "builtins", "__loader__": "JsonNode",
                       "content": "null", "is_json": True}
    return True


def _with_schema(data: bytes, schema) -> bytes:
    """The archive's members that ``schema`` still refers to (already size-checked), with
    ``schema`` as its schema.json, stored: the left-out index arrays never reach skops."""
    import zipfile

    files = {n.get("file") for n in schema_nodes(schema)}
    try:
        text = json.dumps(schema, separators=(",", ":")).encode()
    except (RecursionError, ValueError) as exc:
        raise InvalidModelError(
            f"The .skops schema cannot be rewritten ({type(exc).__name__}). {_SKOPS_HINT}") from None
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a repeated member name stays repeated, in order
        for info in src.infolist():
            if info.filename in files and info.filename != "schema.json":
                dst.writestr(info.filename, src.read(info))
        dst.writestr("schema.json", text)
    return out.getvalue()


# ------------------------------------------------------------------ neighbours
_NO_METRICS = {"pyfunc"}  # BallTree's name for a Python callable


def _valid_metrics(method: str) -> set:
    from sklearn.neighbors import BallTree, KDTree
    from sklearn.neighbors._base import VALID_METRICS

    if method == "brute":
        return set(VALID_METRICS["brute"]) - _NO_METRICS
    return set((KDTree if method == "kd_tree" else BallTree).valid_metrics) - _NO_METRICS


def _metric_name(value, label: str, example: str = "metric='minkowski'") -> str:
    """``value`` when it is a name; a function (numpy's ufuncs are the only ones a file may name
    here, everything else is refused by the allow-list) is refused, by name."""
    if callable(value):
        what = f"{getattr(value, '__module__', '')}.{getattr(value, '__name__', type(value).__name__)}"
        raise InvalidModelError(
            f"{label} is a function ({what.lstrip('.')}); only scikit-learn's named options are "
            f"supported. Fit the model with a name such as {example} and save it again."
        )
    if not isinstance(value, str):
        raise refuse(f"{label} is {sc.what(value)}, not a name.")
    return value


def _check_metric_params(params, label: str, n_features: int) -> dict:
    """Metric parameters: plain numbers; a weight vector (w, V) or inverse covariance (VI) sized to the features."""
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise refuse(f"{label} is {sc.what(params)}, not a dict of metric parameters.")
    arrays = {"w": (n_features,), "V": (n_features,), "VI": (n_features, n_features)}
    for key, value in params.items():
        if not isinstance(key, str):
            raise refuse(f"{label} has a parameter named {key!r}, not a text name.")
        if key in arrays and isinstance(value, np.ndarray):
            check_array(value, f"{label}[{key!r}]", ndim=len(arrays[key]), kinds="fiu", shape=arrays[key])
        elif not (value is None and key == "w"):
            check_number(value, f"{label}[{key!r}]", allow_inf=key == "p")
    return params


def _check_rows(est, label: str, allow_nan: bool) -> np.ndarray:
    """The training rows ``_fit_X``: a 2-D numeric array, one column per feature, as many rows
    as ``n_samples_fit_`` and within the data-row limit, finite (NaN allowed for nan_euclidean).
    (A model fitted on a sparse matrix is refused before: skops' sparse types are not listed.)"""
    p = sc.n_features(est, label)
    where = f"{label}._fit_X (the training rows it searches)"
    X = check_array(getattr(est, "_fit_X", None), where, ndim=2, kinds="biuf", finite=not allow_nan)
    if X.shape[1] != p:
        raise refuse(f"{where} has {X.shape[1]:,} columns but the model reads {p:,} features (n_features_in_).")
    if allow_nan and np.isinf(X).any():
        raise refuse(f"{where} holds infinite values.")
    n = X.shape[0]
    if not n:
        raise refuse(f"{where} holds no rows.")
    if n > limits.limit("data_rows"):
        raise InvalidModelError(f"{where} holds {n:,} rows, {limits.over('data_rows')}.")
    if check_count(getattr(est, "n_samples_fit_", None), f"{label}.n_samples_fit_") != n:
        raise refuse(f"{label}.n_samples_fit_ is {est.n_samples_fit_:,} but _fit_X holds {n:,} rows.")
    return X


def _check_targets(est, label: str, n: int) -> None:
    """``_y``: one target per training row. A classifier's are class indices, each within its
    output's classes (scikit-learn's compiled neighbour vote indexes a table with them)."""
    y = getattr(est, "_y", None)
    where = f"{label}._y (the training targets)"
    if not hasattr(est, "classes_"):
        y = check_array(y, where, ndim=(1, 2), kinds="biuf")
    else:
        two_d = getattr(est, "outputs_2d_", None)
        if not isinstance(two_d, (bool, np.bool_)):
            raise refuse(f"{label}.outputs_2d_ is {two_d!r}, not True or False.")
        classes = list(est.classes_) if two_d and isinstance(est.classes_, list) else [est.classes_]
        y = check_array(y, where, ndim=2 if two_d else 1, kinds="iu")
        columns = y.reshape(len(y), -1)
        if columns.shape[1] != len(classes):
            raise refuse(f"{where} has {columns.shape[1]} outputs but {label}.classes_ has {len(classes)}.")
        for k, cls in enumerate(classes):
            cls = check_array(cls, f"{label}.classes_" + (f"[{k}]" if two_d else ""), ndim=1, kinds="biufUSO")
            bad = columns[:, k][(columns[:, k] < 0) | (columns[:, k] >= len(cls))]
            if len(bad):
                raise refuse(f"{where} holds class index {int(bad[0])}, but there are {len(cls)} classes "
                             f"(indices 0 to {len(cls) - 1}).")
    if y.shape[0] != n:
        raise refuse(f"{where} holds {y.shape[0]:,} rows but _fit_X holds {n:,}: each training row needs its target.")


def _check_search(est, label: str) -> None:
    """The search settings predict reads: neighbours or radius, weights, the metric's p."""
    if type(est).__name__.startswith("Radius"):
        check_number(est.radius, f"{label}.radius", low=0.0, strict=False)
    else:
        check_count(est.n_neighbors, f"{label}.n_neighbors")
    weights = est.weights
    _metric_name(weights, f"{label}.weights", "weights='distance'")
    check_choice(weights, f"{label}.weights", {"uniform", "distance"})
    if est.p is not None:
        check_number(est.p, f"{label}.p", low=0.0, allow_inf=True)


def rebuild_neighbours(est, label: str) -> None:
    """Check a neighbour model's training rows, targets and metric, and build its search index
    (``_tree``) from them as ``fit`` does: a KDTree or BallTree of ``_fit_X`` with the stored
    ``leaf_size``, ``effective_metric_`` and ``effective_metric_params_``; None for brute force."""
    from sklearn.neighbors import BallTree, KDTree

    method = check_choice(getattr(est, "_fit_method", None), f"{label}._fit_method",
                          {"kd_tree", "ball_tree", "brute"})
    metric = _metric_name(getattr(est, "effective_metric_", None), f"{label}.effective_metric_")
    _metric_name(est.metric, f"{label}.metric")
    check_choice(metric, f"{label}.effective_metric_ (for algorithm {method!r})", _valid_metrics(method))
    known = set().union(*(_valid_metrics(m) for m in ("kd_tree", "ball_tree", "brute")))
    check_choice(est.metric, f"{label}.metric", known)
    X = _check_rows(est, label, allow_nan=metric == "nan_euclidean" and method == "brute")
    _check_targets(est, label, X.shape[0])
    _check_search(est, label)
    p = X.shape[1]
    _check_metric_params(est.metric_params, f"{label}.metric_params", p)
    params = _check_metric_params(getattr(est, "effective_metric_params_", None),
                                  f"{label}.effective_metric_params_", p)
    if method == "brute":
        est._tree = None
        return
    leaf_size = check_count(est.leaf_size, f"{label}.leaf_size")
    try:
        est._tree = (KDTree if method == "kd_tree" else BallTree)(X, leaf_size, metric=metric, **params)
    except (ValueError, TypeError) as exc:
        raise refuse(f"{label}'s search index cannot be rebuilt from its training rows "
                     f"({type(exc).__name__}: {exc}).") from None


# ------------------------------------------------------------------ the walk
_NEIGHBOURS = [k for k, v in DROPPED_STATE.items() if v == "_tree"]
#: estimator class -> the function that rebuilds or checks its fitted state in place
CHECKS = {
    **{name: rebuild_neighbours for name in _NEIGHBOURS},
    "sklearn.neural_network._multilayer_perceptron.MLPClassifier": sc.check_mlp,
    "sklearn.neural_network._multilayer_perceptron.MLPRegressor": sc.check_mlp,
    "sklearn.gaussian_process._gpr.GaussianProcessRegressor": sc.check_gpr,
    "sklearn.gaussian_process._gpc.GaussianProcessClassifier": sc.check_gpc,
    "sklearn.gaussian_process._gpc._BinaryGaussianProcessClassifierLaplace": sc.check_binary_gpc,
    **{f"sklearn.gaussian_process.kernels.{k}": sc.check_kernel
       for k in sc.KERNEL_PARAMETERS.keys() | sc.KERNEL_OPERATORS.keys()},
    **{f"sklearn.linear_model._glm.glm.{k}": sc.check_glm
       for k in ("PoissonRegressor", "GammaRegressor", "TweedieRegressor")},
    "sklearn.calibration.CalibratedClassifierCV": sc.check_calibrated_cv,
    "sklearn.calibration._CalibratedClassifier": sc.check_calibrated,
    "sklearn.calibration._SigmoidCalibration": sc.check_sigmoid,
    "sklearn.calibration._TemperatureScaling": sc.check_temperature,
    "sklearn.isotonic.IsotonicRegression": sc.check_isotonic,
}


#: fitted parts that exist only once fitted (checked wherever met); the estimators of CHECKS
#: are checked when scikit-learn would call them fitted, as their predict does first
_ALWAYS_FITTED = {name for name, check in CHECKS.items() if check is sc.check_kernel} | {
    "sklearn.calibration._CalibratedClassifier", "sklearn.calibration._SigmoidCalibration",
    "sklearn.calibration._TemperatureScaling"}


#: fitted state of a neighbour model that scikit-learn's fitted test does not look at (it
#: looks for public names ending in "_"): checked whenever present, never skipped
_FITTED_PRIVATE = ("_fit_X", "_fit_method", "_y")


def _is_fitted(est) -> bool:
    """scikit-learn's own test (``check_is_fitted``): an unfitted estimator (a meta-estimator's
    template, a pipeline's parameter) has nothing to check, and its predict refuses to run."""
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(est)
    except NotFittedError:
        return False
    return True


def _type_name(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__name__}"


def _label(path: str, obj) -> str:
    name = type(obj).__name__
    return path if path == name else f"{path} ({name})"


def _checked_parts(model) -> list:
    """(object, path) for every object of :data:`CHECKS` inside ``model``, each once."""
    found, seen = [], set()
    stack = [(model, type(model).__name__, 0)]
    while stack:
        obj, path, level = stack.pop()
        if obj is None or isinstance(obj, _SCALARS) or (
                isinstance(obj, np.ndarray) and obj.dtype != object) or id(obj) in seen:
            continue
        seen.add(id(obj))
        if level > _MAX_NESTING:
            raise refuse(f"The model nests estimators more than {_MAX_NESTING} levels deep (at {path}).")
        if isinstance(obj, (list, tuple)):
            items = ((f"{path}[{i}]", v) for i, v in enumerate(obj))
        elif isinstance(obj, dict):
            items = ((f"{path}[{k!r}]", v) for k, v in obj.items())
        elif isinstance(obj, np.ndarray):
            items = ((f"{path}[{','.join(map(str, ix))}]", v) for ix, v in np.ndenumerate(obj))
        elif (type(obj).__module__ or "").startswith("sklearn") and isinstance(getattr(obj, "__dict__", None), dict):
            if _type_name(obj) in CHECKS:
                found.append((obj, path))
            items = ((f"{path}.{k}", v) for k, v in vars(obj).items())
        else:
            continue
        stack.extend((v, p, level + 1) for p, v in reversed(list(items)))
    return found


def check_loaded(model, names: frozenset) -> None:
    """Rebuild or check, in place, every estimator of :data:`CHECKS` inside ``model`` (from a
    .skops file whose schema named the classes ``names``); refuse the model if one is wrong.

    Raises
    ------
    InvalidModelError
        Naming the estimator (its path inside the model) and the attribute that is wrong.
    """
    if not names & CHECKS.keys():
        return
    for obj, path in _checked_parts(model):
        name = _type_name(obj)
        if name in _ALWAYS_FITTED or _is_fitted(obj) or any(hasattr(obj, a) for a in _FITTED_PRIVATE):
            CHECKS[name](obj, _label(path, obj))
