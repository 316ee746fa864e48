"""Variable importance, four ways, and a comparison of them.

* :func:`mdi` -- mean decrease in impurity (seed 004, "MDI"): how much the splits
  on a feature reduced the training criterion, averaged over the trees.
* :func:`oob_permutation_importance` -- mean decrease in accuracy on each tree's
  out-of-bag rows (seed 004, "MDA", Breiman 2001): the rows a tree never saw are
  its own hold-out set.
* :func:`permutation_importance` -- hold-out permutation importance, equal to
  :func:`sklearn.inspection.permutation_importance` for the same seed, but with
  the permuted copies predicted in batches.
* :func:`shap_importance` -- mean absolute SHAP value.

:func:`compare_importances` puts any of them side by side: shares of the total,
ranks, rank agreement (Spearman, Kendall) and flags where methods disagree.

Every method returns an :class:`ImportanceResult` with the same fields and
shapes, and ``importances == raw.mean(axis=1)``, ``std == raw.std(axis=1)``.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from .errors import InvalidDataError, InvalidFeatureError, InvalidModelError, param_error
from .trees import tree_families
from .model import ModelAdapter, detect_task

__all__ = [
    "ImportanceResult",
    "ImportanceComparison",
    "mdi",
    "oob_permutation_importance",
    "oob_sample_indices",
    "permutation_importance",
    "shap_importance",
    "compare_importances",
    "SUPPORTED_SCORING",
]

#: cells (rows x columns) of permuted copies built and predicted at once; bounds memory
DEFAULT_MAX_CELLS = 2**23
Progress = Callable[[int, int], None]


_LABELS = {"mdi": "MDI", "oob_permutation": "OOB permutation", "permutation": "Holdout permutation",
           "shap": "Mean |SHAP|"}
_SCORING_LABELS = {"r2": "R²", "neg_mean_squared_error": "MSE", "neg_mean_absolute_error": "MAE",
                   "neg_root_mean_squared_error": "RMSE", "accuracy": "accuracy",
                   "balanced_accuracy": "balanced accuracy", "roc_auc": "ROC AUC", "neg_log_loss": "log loss"}


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True, eq=False)
class ImportanceResult:
    """Importance of each feature by one method.

    Attributes
    ----------
    feature_names : list of str
        One name per feature, in the model's order.
    importances : ndarray of shape (n_features,)
        The importance of each feature (mean of ``raw`` over its second axis).
    std : ndarray of shape (n_features,)
        Standard deviation of ``raw`` over its second axis (ddof=0): spread across
        trees, repeats or rows, depending on the method.
    raw : ndarray of shape (n_features, n_draws)
        Per-tree (MDI, out-of-bag), per-repeat (permutation) or per-row (SHAP) values.
    method : str
        ``"mdi"``, ``"oob_permutation"``, ``"permutation"`` or ``"shap"``.
    params : dict
        The options the method ran with (scoring, n_repeats, random_state, ...).
    description : str
        One sentence on what the numbers measure, for captions.
    by_output : DataFrame or None
        Only for SHAP on several outputs: mean |phi| per feature (rows) and class
        (columns); ``importances`` is then the mean over the columns.
    """

    feature_names: list
    importances: np.ndarray
    std: np.ndarray
    raw: np.ndarray
    method: str
    params: dict = field(default_factory=dict)
    description: str = ""
    by_output: pd.DataFrame | None = None

    @property
    def label(self) -> str:
        """Short readable name for tables and legends, e.g. ``Holdout permutation (R²)``."""
        name = _LABELS.get(self.method, self.method)
        scoring = self.params.get("scoring_name")
        return f"{name} ({_SCORING_LABELS.get(scoring, scoring)})" if scoring else name

    def to_frame(self) -> pd.DataFrame:
        """Return a DataFrame indexed by feature with ``importance`` and ``std``."""
        return pd.DataFrame(
            {"importance": self.importances, "std": self.std},
            index=pd.Index(self.feature_names, name="feature"),
        )

    def __repr__(self) -> str:
        return (
            f"ImportanceResult(method={self.method!r}, n_features={len(self.feature_names)}, "
            f"n_draws={self.raw.shape[1]})"
        )


def _result(names, raw, method, params, description, *, importances=None, by_output=None):
    raw = np.asarray(raw, dtype=float)
    return ImportanceResult(
        feature_names=[str(n) for n in names],
        importances=raw.mean(axis=1) if importances is None else np.asarray(importances, float),
        std=raw.std(axis=1),
        raw=raw,
        method=method,
        params=params,
        description=description,
        by_output=by_output,
    )


# --------------------------------------------------------------------------------- MDI
def _split_pipeline(model):
    """Return (preprocessor or None, final estimator)."""
    try:
        from sklearn.pipeline import Pipeline
    except ImportError:  # pragma: no cover
        return None, model
    if isinstance(model, Pipeline):
        return (model[:-1] if len(model.steps) > 1 else None), model[-1]
    return None, model


def _final_feature_names(model, preprocessor, estimator, feature_names) -> list[str]:
    p = int(estimator.n_features_in_)
    if feature_names is not None:
        names = [str(f) for f in feature_names]
    elif preprocessor is not None and hasattr(preprocessor, "get_feature_names_out"):
        try:
            names = [str(f) for f in preprocessor.get_feature_names_out()]
        except Exception:  # a step without get_feature_names_out: fall back on positions
            names = [f"x{i}" for i in range(p)]
    elif hasattr(estimator, "feature_names_in_"):
        names = [str(f) for f in estimator.feature_names_in_]
    else:
        names = [f"x{i}" for i in range(p)]
    if len(names) != p:
        raise InvalidFeatureError(
            f"{len(names)} feature names were given but the model's trees use {p} features."
        )
    return names


def mdi(model, *, feature_names: Sequence[str] | None = None) -> ImportanceResult:
    """Mean decrease in impurity of a tree model, with its spread across trees.

    For a feature j, each tree's score is the weighted impurity decrease of the
    splits on j, ``sum_t p(t) Delta i(s_t, t)`` (seed 004). Forests average the
    per-tree normalised scores, gradient boosting the raw ones; either way the
    result equals the model's ``feature_importances_``. HistGradientBoosting has
    no ``feature_importances_``: its trees' split gains (the loss reduction of
    each split) play the role of the impurity decrease.

    Parameters
    ----------
    model : fitted tree model or Pipeline ending in one
        DecisionTree*, ExtraTree*, RandomForest*, ExtraTrees*, GradientBoosting*
        or HistGradientBoosting* (classifier or regressor).
    feature_names : sequence of str, default=None
        Names of the columns the trees split on. Taken from the Pipeline's
        preprocessing (``get_feature_names_out``) or ``feature_names_in_`` when
        not given.

    Returns
    -------
    ImportanceResult
        ``importances`` sums to 1 (unless no tree has a split). ``raw`` has one
        column per tree that has a split: the tree's normalised importances for
        forests, its share of the ensemble's mean decrease for boosting, so that
        ``raw.mean(axis=1) == importances`` either way.

    Raises
    ------
    InvalidModelError
        If the model has no trees.

    Notes
    -----
    MDI is measured on the training data: it rewards features with many
    distinct values (many candidate thresholds) even when they carry no signal.
    Compare it with a permutation importance before trusting it.

    Examples
    --------
    >>> from sklearn.datasets import make_friedman1
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> X, y = make_friedman1(n_samples=200, random_state=0)
    >>> rf = RandomForestRegressor(n_estimators=10, random_state=0).fit(X, y)
    >>> bool(np.allclose(mdi(rf).importances, rf.feature_importances_))
    True
    """
    preprocessor, est = _split_pipeline(model)
    from sklearn.base import BaseEstimator
    from sklearn.tree import BaseDecisionTree

    fam = tree_families()
    forests, boosting, hist = fam["forest"], fam["gb"], fam["hgb"]
    if not isinstance(est, (BaseDecisionTree, *forests, *boosting, *hist)):
        raise InvalidModelError(
            f"mdi needs a scikit-learn tree model (a decision tree, random forest, extra "
            f"trees or gradient boosting); a {type(est).__name__} has no trees, so it has no "
            "impurity decrease. Use permutation_importance or shap_importance instead."
        )
    if isinstance(est, BaseEstimator):
        ModelAdapter(est)  # raises InvalidModelError with a fix when not fitted
    names = _final_feature_names(model, preprocessor, est, feature_names)
    p = len(names)
    desc = (
        "Mean decrease in impurity: how much the splits on each feature reduced the "
        "training criterion, as a share of the total (measured on training data)."
    )
    params: dict[str, Any] = {"model": type(est).__name__}

    if isinstance(est, BaseDecisionTree):
        raw = est.tree_.compute_feature_importances()[:, None]
        return _result(names, raw, "mdi", params, desc, importances=raw[:, 0])

    if isinstance(est, forests):
        trees = [t for t in est.estimators_ if t.tree_.node_count > 1]
        if not trees:
            return _result(names, np.zeros((p, 1)), "mdi", params, desc)
        per_tree = np.array([t.tree_.compute_feature_importances() for t in trees])
        # The same operations as the forest's feature_importances_, so they agree exactly
        mean = np.mean(per_tree, axis=0, dtype=np.float64)
        return _result(names, per_tree.T, "mdi", params, desc, importances=mean / mean.sum())

    if isinstance(est, boosting):
        trees = [t for stage in est.estimators_ for t in stage if t.tree_.node_count > 1]
        if not trees:
            return _result(names, np.zeros((p, 1)), "mdi", params, desc)
        per_tree = np.array([t.tree_.compute_feature_importances(normalize=False) for t in trees])
        mean = np.mean(per_tree, axis=0, dtype=np.float64)
        total = mean.sum()
        return _result(names, per_tree.T / total, "mdi", params, desc, importances=mean / total)

    # HistGradientBoosting: one predictor per iteration and output
    if not hasattr(est, "_predictors"):
        raise InvalidModelError(
            f"This {type(est).__name__} has no trees to read (no '_predictors'): fit it first."
        )
    gains = []
    for stage in est._predictors:
        for pred in stage:
            nodes = pred.nodes
            split = ~nodes["is_leaf"].astype(bool)
            gains.append(
                np.bincount(
                    nodes["feature_idx"][split].astype(np.intp),
                    weights=nodes["gain"][split].astype(float),
                    minlength=p,
                )[:p]
            )
    per_tree = np.array(gains) if gains else np.zeros((1, p))
    mean = per_tree.mean(axis=0)
    total = mean.sum()
    if total <= 0:
        return _result(names, np.zeros((p, per_tree.shape[0])), "mdi", params, desc)
    params["source"] = "split gains"
    return _result(names, per_tree.T / total, "mdi", params, desc, importances=mean / total)


# ----------------------------------------------------------------------------- targets
def _check_y(y, n_rows: int, task: str, classes, func: str) -> np.ndarray:
    """Validate the target once at the entry point; return a 1-D array."""
    if y is None:
        raise InvalidDataError(
            f"{func} needs the target y (the true values for the rows of X) to score the "
            "model; pass y, or pick the target column when loading the data."
        )
    if isinstance(y, pd.DataFrame):
        if y.shape[1] != 1:
            raise InvalidDataError(
                f"{func} takes one target column; y has {y.shape[1]} columns. Pass one column."
            )
        y = y.iloc[:, 0]
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise InvalidDataError(
            f"{func} takes a 1-D target; y has shape {arr.shape}. Pass one column."
        )
    if len(arr) != n_rows:
        raise InvalidDataError(
            f"y has {len(arr)} values but X has {n_rows} rows; pass the target of the same rows."
        )
    if task == "regression":
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            try:
                arr = arr.astype(float)
            except (TypeError, ValueError):
                raise InvalidDataError(
                    f"The model is a regressor but y is not numeric (dtype {arr.dtype}, e.g. "
                    f"{arr[0]!r}); pass the numeric target column."
                ) from None
        if np.isnan(arr.astype(float)).any():
            raise InvalidDataError("y contains NaN; drop those rows before scoring.")
        return arr
    known = set(np.asarray(classes).tolist())
    unknown = [v for v in pd.unique(arr).tolist() if v not in known]
    if unknown:
        raise InvalidDataError(
            f"y contains {len(unknown)} label(s) the classifier does not know "
            f"(e.g. {unknown[:3]!r}); its classes are {sorted(map(str, known))[:10]}. "
            "Pass the target column the model was trained on."
        )
    return arr


# ------------------------------------------------------------------------------ scoring
@dataclass(frozen=True)
class _Metric:
    """One scikit-learn scorer, computed from predictions we already have."""

    func: Callable
    sign: float
    response: str  # "predict" | "proba" | "threshold" (decision_function, else proba)
    kwargs: tuple = ()


def _metrics() -> dict[str, _Metric]:
    from sklearn import metrics as m

    return {
        "accuracy": _Metric(m.accuracy_score, 1.0, "predict"),
        "balanced_accuracy": _Metric(m.balanced_accuracy_score, 1.0, "predict"),
        "f1": _Metric(m.f1_score, 1.0, "predict", (("average", "binary"),)),
        "precision": _Metric(m.precision_score, 1.0, "predict", (("average", "binary"),)),
        "recall": _Metric(m.recall_score, 1.0, "predict", (("average", "binary"),)),
        "r2": _Metric(m.r2_score, 1.0, "predict"),
        "explained_variance": _Metric(m.explained_variance_score, 1.0, "predict"),
        "neg_mean_squared_error": _Metric(m.mean_squared_error, -1.0, "predict"),
        "neg_root_mean_squared_error": _Metric(m.root_mean_squared_error, -1.0, "predict"),
        "neg_mean_absolute_error": _Metric(m.mean_absolute_error, -1.0, "predict"),
        "neg_median_absolute_error": _Metric(m.median_absolute_error, -1.0, "predict"),
        "neg_mean_absolute_percentage_error": _Metric(
            m.mean_absolute_percentage_error, -1.0, "predict"
        ),
        "neg_log_loss": _Metric(m.log_loss, -1.0, "proba"),
        "roc_auc": _Metric(m.roc_auc_score, 1.0, "threshold"),
    }


#: scoring names computed from batched predictions; any other scikit-learn scorer
#: (or a callable) still works, one predict call per permuted copy
SUPPORTED_SCORING = tuple(sorted(_metrics()))


def _default_scoring_name(est) -> str | None:
    """The name equal to ``estimator.score``, or None if score is custom."""
    from sklearn.base import ClassifierMixin, RegressorMixin

    score = getattr(type(est), "score", None)
    if score is ClassifierMixin.score:
        return "accuracy"
    if score is RegressorMixin.score:
        return "r2"
    return None


class _Scorer:
    """Score many permuted copies from batched predictions, exactly as sklearn would."""

    def __init__(self, model, adapter: ModelAdapter, scoring, y, sample_weight, func: str):
        self.model = model
        self.adapter = adapter
        self.y = y
        self.sample_weight = sample_weight
        task = adapter.task
        _, est = _split_pipeline(model)
        if scoring is None:
            name = _default_scoring_name(est)
            self.name = name or "score"
        elif isinstance(scoring, str):
            name = scoring
            self.name = scoring
        elif callable(scoring):
            name = None
            self.name = getattr(scoring, "__name__", type(scoring).__name__)
        else:
            raise param_error(
                "scoring", func, "None, a scoring name (str) or a scorer callable", scoring
            )
        table = _metrics()
        self.metric = table.get(name) if name is not None else None
        if self.metric is not None:
            if task == "regression" and self.metric.response != "predict":
                raise param_error("scoring", func, "a regression metric for a regressor", scoring)
            if self.metric.response == "threshold" and task != "binary":
                # roc_auc on several classes needs options sklearn's name does not carry
                self.metric = None
            elif self.metric.response == "threshold" and not (
                hasattr(model, "decision_function") or hasattr(model, "predict_proba")
            ):
                self.metric = None
        if self.metric is None:
            from sklearn.metrics import check_scoring

            try:
                self.sk_scorer = check_scoring(model, scoring=scoring)
            except (ValueError, TypeError) as exc:
                raise param_error(
                    "scoring", func,
                    f"a scikit-learn scoring name (fast ones: {', '.join(SUPPORTED_SCORING)}) "
                    "or a scorer callable", scoring,
                ) from exc
        # adapters for the responses, made once
        if self.metric is not None and task != "regression":
            if self.metric.response == "proba":
                self._resp = adapter.with_output("proba", None)
            elif self.metric.response == "threshold":
                # sklearn tries decision_function first, then predict_proba
                out = "raw" if hasattr(model, "decision_function") else "proba"
                self._resp = adapter.with_output(out, None)

    @property
    def batched(self) -> bool:
        return self.metric is not None

    def responses(self, frame: pd.DataFrame) -> np.ndarray:
        """Model responses for the rows of ``frame`` (canonical columns)."""
        metric, ad = self.metric, self.adapter
        if ad.task == "regression":
            return ad.predict(frame)
        if metric.response == "predict":
            # labels come from the model's own predict (argmax of proba may break ties
            # differently, e.g. SVC), in the adapter's input convention
            inp = ad._model_input(frame)
            return np.asarray(self.model.predict(inp))
        out = self._resp.predict(frame)
        if metric.response == "proba" and ad.task == "binary":
            return out[:, 1]  # sklearn scores binary probabilities of classes_[-1]
        if metric.response == "threshold" and out.ndim == 2:
            return out[:, 1]
        return out

    def from_output(self, out: np.ndarray) -> np.ndarray:
        """Metric response from regression values or class probabilities (n, k)."""
        if self.adapter.task == "regression":
            return out
        if self.metric.response == "predict":
            return self.adapter.classes.take(np.argmax(out, axis=1))  # as forests predict
        if self.adapter.task == "binary":
            return out[:, 1]
        return out

    def score(self, resp: np.ndarray, idx=None) -> float:
        y = self.y if idx is None else self.y[idx]
        kw = dict(self.metric.kwargs)
        if self.sample_weight is not None:
            kw["sample_weight"] = self.sample_weight if idx is None else self.sample_weight[idx]
        return float(self.metric.sign * self.metric.func(y, resp, **kw))

    def score_estimator(self, X, idx=None) -> float:
        """Fallback: sklearn's scorer on one copy (one predict call)."""
        y = self.y if idx is None else self.y[idx]
        if self.sample_weight is not None:
            sw = self.sample_weight if idx is None else self.sample_weight[idx]
            return float(self.sk_scorer(self.model, X, y, sample_weight=sw))
        return float(self.sk_scorer(self.model, X, y))


# ---------------------------------------------------------------------- permuted copies
def _stack_copies(frame: pd.DataFrame, rows: np.ndarray, perms: Sequence[tuple[int, np.ndarray]]):
    """Stack copies of ``frame.iloc[rows]``; in copy c, column j_c is taken at perm_c.

    ``perms`` holds (column position, row positions into ``frame``) pairs. Built
    column by column with one ``take`` each, which keeps every dtype
    (categoricals included) as the model saw it.
    """
    n = len(rows)
    data = {}
    for j, name in enumerate(frame.columns):
        idx = np.tile(rows, len(perms))
        for c, (jc, perm) in enumerate(perms):
            if jc == j:
                idx[c * n : (c + 1) * n] = perm
        col = frame.iloc[:, j]
        if isinstance(col.dtype, np.dtype):
            data[name] = col.to_numpy()[idx]
        else:
            data[name] = col.array.take(idx)
    return pd.DataFrame(data, columns=frame.columns)


def _check_X(adapter: ModelAdapter, X, func: str) -> pd.DataFrame:
    if X is None:
        raise InvalidDataError(f"{func} needs X, the rows to compute importance on.")
    frame = adapter.to_frame(X)
    if len(frame) < 2:
        raise InvalidDataError(
            f"{func} needs at least 2 rows of X to permute a column; got {len(frame)}."
        )
    return frame


def _check_int(value, name: str, func: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise param_error(name, func, f"an int >= {low}", value)
    return int(value)


def _check_progress(progress, func: str):
    if progress is not None and not callable(progress):
        raise param_error("progress", func, "None or a callable(done, total)", progress)
    return progress


# ------------------------------------------------------------- exact forest fast path
def _leaf_boxes(tree) -> tuple[np.ndarray, np.ndarray]:
    """Per node, the box (lo, hi] of feature values that reach it, shape (n_nodes, p).

    Built level by level (a few numpy operations per depth) rather than node by node.
    """
    n_nodes, p = tree.node_count, tree.n_features
    lo = np.full((n_nodes, p), -np.inf)
    hi = np.full((n_nodes, p), np.inf)
    left, right, feat, thr = tree.children_left, tree.children_right, tree.feature, tree.threshold
    frontier = np.array([0])
    while frontier.size:
        frontier = frontier[left[frontier] >= 0]  # split nodes only
        if not frontier.size:
            break
        f, t = feat[frontier], thr[frontier]
        lc, rc = left[frontier], right[frontier]
        lo[lc] = lo[frontier]
        hi[lc] = hi[frontier]
        lo[rc] = lo[frontier]
        hi[rc] = hi[frontier]
        hi[lc, f] = np.minimum(hi[lc, f], t)  # went left: x <= t
        lo[rc, f] = np.maximum(lo[rc, f], t)  # went right: x > t
        frontier = np.concatenate([lc, rc])
    return lo, hi


class _ForestPredictor:
    """Exact predictions of a scikit-learn forest on copies with one column permuted.

    A permuted copy differs from the original rows in one feature, so in each tree
    a row keeps its leaf whenever the new value stays inside the leaf's box on that
    feature (trees compare ``float32(x) <= threshold``). Only the other rows are
    walked again. Leaf values are then summed over trees in the forest's own
    order and divided by the number of trees, as ``predict`` / ``predict_proba``
    do, so the results are bitwise equal to theirs while most of the tree walks
    are skipped.
    """

    def __init__(self, est, X32: np.ndarray):
        self.est = est
        self.clf = detect_task(est) != "regression"
        self.tables = []
        for tree in est.estimators_:
            value = tree.tree_.value
            if self.clf:
                # DecisionTreeClassifier.predict_proba: normalise each leaf's counts
                proba = value[:, 0, : tree.n_classes_].copy()
                norm = proba.sum(axis=1)[:, None]
                norm[norm == 0.0] = 1.0
                proba /= norm
                self.tables.append(proba)
            else:
                self.tables.append(value[:, 0, 0])
        self.X32 = X32

    @staticmethod
    def maybe(model, frame: pd.DataFrame) -> "_ForestPredictor | None":
        if type(model) not in tree_families()["forest"] or getattr(model, "n_outputs_", 1) != 1:
            return None  # subclasses may override predict: use the generic path
        if not all(pd.api.types.is_numeric_dtype(t) for t in frame.dtypes):
            return None
        return _ForestPredictor(model, np.ascontiguousarray(frame.to_numpy(dtype=np.float32)))

    def _shape(self, *lead):
        return lead + ((self.tables[0].shape[1],) if self.clf else ())

    def predict(self, rows: np.ndarray | None = None) -> np.ndarray:
        X = self.X32 if rows is None else self.X32[rows]
        out = np.zeros(self._shape(len(X)))
        for tree, table in zip(self.est.estimators_, self.tables):
            out += table[tree.tree_.apply(X)]
        out /= len(self.est.estimators_)
        return out

    def predict_copies(self, rows: np.ndarray, cols: np.ndarray, perms: np.ndarray,
                       leaves0: list) -> np.ndarray:
        """Copies c of ``X32[rows]`` with column cols[c] taken at rows[perms[c]].

        Returns shape (n_copies, len(rows)) or (n_copies, len(rows), n_classes).
        """
        Xs = self.X32[rows]
        B, m = perms.shape
        V = self.X32[rows[perms], cols[:, None]]  # the permuted values, (B, m)
        out = np.zeros(self._shape(B, m))
        for t, (tree, table) in enumerate(zip(self.est.estimators_, self.tables)):
            tr = tree.tree_
            if leaves0[t] is None:
                leaves0[t] = tr.apply(Xs)
            L0 = leaves0[t]
            lo, hi = _leaf_boxes(tr)
            keep = (lo[L0][:, cols].T < V) & (V <= hi[L0][:, cols].T)  # NaN -> walk again
            cc, ii = np.nonzero(~keep)
            leaves = np.broadcast_to(L0, (B, m)).copy()
            if cc.size:
                A = Xs[ii]
                A[np.arange(cc.size), cols[cc]] = V[cc, ii]
                leaves[cc, ii] = tr.apply(A)
            out += table[leaves]
        out /= len(self.est.estimators_)
        return out


# ------------------------------------------------------------------ holdout permutation
def permutation_importance(
    model,
    X,
    y,
    *,
    n_repeats: int = 5,
    scoring: str | Callable | None = None,
    random_state: int | np.random.RandomState | None = 0,
    sample_weight=None,
    max_samples: float | int = 1.0,
    max_cells: int = DEFAULT_MAX_CELLS,
    progress: Progress | None = None,
) -> ImportanceResult:
    """Hold-out permutation importance, equal to scikit-learn's, computed in batches.

    For each feature j and repeat r, column j of X is shuffled and the model is
    scored again; the importance is the drop from the baseline score. The
    shuffles are drawn exactly as :func:`sklearn.inspection.permutation_importance`
    draws them, so both give the same numbers for the same ``random_state``
    (to rounding). The difference is speed: the permuted copies of many
    (feature, repeat) pairs are stacked and sent to the model in one predict call,
    and the metric is computed from those predictions.

    Parameters
    ----------
    model : fitted estimator or Pipeline
    X : DataFrame or array-like of shape (n_samples, n_features)
        Rows the model did not train on, ideally.
    y : array-like of shape (n_samples,)
        Their true target values (class labels for classifiers).
    n_repeats : int, default=5
        Shuffles per feature.
    scoring : str, callable or None, default=None
        None uses the model's ``score`` (accuracy or R^2). The names in
        :data:`SUPPORTED_SCORING` are computed from batched predictions; any
        other scikit-learn scoring name or scorer callable is evaluated per copy.
    random_state : int, RandomState or None, default=0
        Seeds the shuffles, as in scikit-learn.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights used in scoring.
    max_samples : int or float, default=1.0
        Rows drawn (without replacement) for the permuted scores, as in scikit-learn.
    max_cells : int, default=2**23
        Upper bound on rows x columns of permuted copies built at once.
    progress : callable(done, total), default=None
        Called after each batch with the number of (feature, repeat) copies scored.

    Returns
    -------
    ImportanceResult
        ``raw`` has shape (n_features, n_repeats): baseline minus permuted score.

    Raises
    ------
    InvalidDataError
        If y is missing, of the wrong length or of the wrong kind.
    InvalidParameterError
        If an option is out of range.

    See Also
    --------
    oob_permutation_importance : the out-of-bag variant for bagged forests.

    Notes
    -----
    For a plain scikit-learn RandomForest / ExtraTrees on numeric data the copies
    skip the model's predict: in each tree, a row whose permuted value stays
    inside its leaf's box keeps its leaf, and only the other rows are walked
    again. Leaf values are summed in the forest's order, so the predictions are
    bitwise those of ``predict`` / ``predict_proba``. Other models go through
    :class:`~explainers.model.ModelAdapter` in batches.

    Examples
    --------
    >>> from sklearn.datasets import make_friedman1
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> X, y = make_friedman1(n_samples=200, random_state=0)
    >>> rf = RandomForestRegressor(n_estimators=10, random_state=0).fit(X, y)
    >>> permutation_importance(rf, X, y, n_repeats=2).raw.shape
    (10, 2)
    """
    func = "permutation_importance"
    n_repeats = _check_int(n_repeats, "n_repeats", func, 1)
    max_cells = _check_int(max_cells, "max_cells", func, 1)
    progress = _check_progress(progress, func)
    adapter = ModelAdapter(model)
    frame = _check_X(adapter, X, func)
    n, p = frame.shape
    y_arr = _check_y(y, n, adapter.task, adapter.classes, func)
    sw = None
    if sample_weight is not None:
        sw = np.asarray(sample_weight, dtype=float)
        if sw.shape != (n,):
            raise InvalidDataError(
                f"sample_weight has shape {sw.shape}; it needs one weight per row of X ({n},)."
            )
    if isinstance(max_samples, bool) or not isinstance(max_samples, numbers.Real):
        raise param_error("max_samples", func, "an int in [1, n_samples] or a float in (0, 1]", max_samples)
    if isinstance(max_samples, numbers.Integral):
        if not 1 <= max_samples <= n:
            raise param_error("max_samples", func, f"an int in [1, {n}]", max_samples)
        m = int(max_samples)
    else:
        if not 0 < max_samples <= 1:
            raise param_error("max_samples", func, "a float in (0, 1]", max_samples)
        m = int(max_samples * n)
        if m < 1:
            raise param_error("max_samples", func, f"large enough to draw a row from {n}", max_samples)

    # The RNG use below mirrors sklearn: one seed drawn from random_state, then a fresh
    # RandomState(seed) per feature. Every feature therefore gets the same row subset and
    # the same shuffles, so they are drawn once.
    from sklearn.utils import check_random_state

    rs = check_random_state(random_state)
    seed = rs.randint(np.iinfo(np.int32).max + 1)
    rs_col = np.random.RandomState(seed)
    if m < n:
        from sklearn.utils.random import sample_without_replacement

        rows = np.asarray(sample_without_replacement(n, m, random_state=rs_col))
    else:
        rows = np.arange(n)
    shuffling = np.arange(m)
    composed = np.arange(m)
    perms = []  # perms[r]: positions (into rows) of the column after repeat r
    for _ in range(n_repeats):
        rs_col.shuffle(shuffling)
        # sklearn shuffles the already-shuffled column again: compose the permutations
        composed = composed[shuffling]
        perms.append(composed.copy())

    scorer = _Scorer(model, adapter, scoring, y_arr, sw, func)
    total = p * n_repeats
    scores = np.empty((p, n_repeats))
    pairs = [(j, r) for j in range(p) for r in range(n_repeats)]
    if scorer.batched:
        per_batch = max(1, max_cells // max(1, m * p))
        # one predict call per batch: let the adapters take the whole stack at once
        for ad in (scorer.adapter, getattr(scorer, "_resp", None)):
            if ad is not None:
                ad.chunk_rows = max(ad.chunk_rows, per_batch * m)
        sub = None if m == n else rows
        fast = _ForestPredictor.maybe(model, frame)
        if fast is not None:
            baseline = scorer.score(scorer.from_output(fast.predict()))
            leaves0 = [None] * len(model.estimators_)
        else:
            baseline = scorer.score(scorer.responses(frame))
        for s in range(0, total, per_batch):
            batch = pairs[s : s + per_batch]
            if fast is not None:
                cols = np.array([j for j, _ in batch])
                outs = fast.predict_copies(rows, cols, np.array([perms[r] for _, r in batch]), leaves0)
                for c, (j, r) in enumerate(batch):
                    scores[j, r] = scorer.score(scorer.from_output(outs[c]), sub)
            else:
                copies = _stack_copies(frame, rows, [(j, rows[perms[r]]) for j, r in batch])
                resp = scorer.responses(copies)
                for c, (j, r) in enumerate(batch):
                    scores[j, r] = scorer.score(resp[c * m : (c + 1) * m], sub)
            if progress is not None:
                progress(min(s + per_batch, total), total)
    else:
        # Copies in the user's own format (array or DataFrame), as sklearn's scorer sees them
        user_X = X if isinstance(X, pd.DataFrame) else np.asarray(X)
        baseline = scorer.score_estimator(user_X)
        sub_X = user_X.iloc[rows] if isinstance(user_X, pd.DataFrame) else user_X[rows]
        sub = None if m == n else rows
        done = 0
        for j in range(p):
            for r in range(n_repeats):
                Xp = sub_X.copy()
                if isinstance(Xp, pd.DataFrame):
                    col = sub_X.iloc[perms[r], j]
                    col.index = Xp.index
                    Xp[Xp.columns[j]] = col
                else:
                    Xp[:, j] = sub_X[perms[r], j]
                scores[j, r] = scorer.score_estimator(Xp, sub)
                done += 1
                if progress is not None:
                    progress(done, total)
    raw = baseline - scores
    params = {
        "n_repeats": n_repeats,
        "scoring": scoring if isinstance(scoring, str) or scoring is None else repr(scoring),
        "scoring_name": scorer.name,
        "random_state": random_state if not isinstance(random_state, np.random.RandomState) else "RandomState",
        "max_samples": max_samples,
        "baseline_score": baseline,
        "n_rows": n,
    }
    desc = (
        f"Permutation importance: how much {scorer.name} drops when a feature's values are "
        f"shuffled among the rows given ({n_repeats} shuffles per feature)."
    )
    return _result(adapter.feature_names, raw, "permutation", params, desc)


# ------------------------------------------------------------------------- out of bag
def _forest_parts(model, func: str):
    """Return (preprocessor, forest) after checking the forest can give OOB rows."""
    preprocessor, est = _split_pipeline(model)
    if not isinstance(est, tree_families()["forest"]):
        raise InvalidModelError(
            f"{func} needs a bagged forest (RandomForest or ExtraTrees, classifier or "
            f"regressor); got a {type(est).__name__}. Use permutation_importance on held-out "
            "rows instead."
        )
    ModelAdapter(est)  # not fitted -> InvalidModelError with a fix
    if not est.bootstrap:
        raise InvalidModelError(
            f"This {type(est).__name__} was fit with bootstrap=False, so every tree saw every "
            "row and there are no out-of-bag rows. Refit with bootstrap=True, or use "
            "permutation_importance on held-out rows."
        )
    if getattr(est, "n_outputs_", 1) != 1:
        raise InvalidModelError(
            f"{func} supports single-output forests; this one has {est.n_outputs_} outputs."
        )
    return preprocessor, est


def _n_samples_bootstrap(n: int, max_samples, sample_weight) -> int:
    """Bootstrap size, as scikit-learn computes it from max_samples."""
    if max_samples is None:
        return n
    if isinstance(max_samples, numbers.Integral):
        return int(max_samples)
    weighted = n if sample_weight is None else float(np.sum(sample_weight))
    return max(int(max_samples * weighted), 1)


def _unsampled(seed, n: int, n_boot: int, sample_weight) -> np.ndarray:
    """Rows a tree never drew: re-run its bootstrap draw from its own seed."""
    rs = np.random.RandomState(seed)
    if sample_weight is None:
        drawn = rs.randint(0, n, n_boot)
    else:
        drawn = rs.choice(n, n_boot, replace=True, p=sample_weight / np.sum(sample_weight))
    return np.flatnonzero(np.bincount(drawn, minlength=n) == 0)


def _forest_n_rows(est) -> int | None:
    n = getattr(est, "_n_samples", None)
    if n is not None:
        return int(n)
    for attr in ("oob_prediction_", "oob_decision_function_"):
        if hasattr(est, attr):
            return len(getattr(est, attr))
    return None


def oob_sample_indices(forest, n_samples: int | None = None) -> list[np.ndarray]:
    """Out-of-bag row positions of each tree of a bagged forest.

    Each tree's bootstrap is drawn again from the tree's own ``random_state``,
    with the forest's ``max_samples`` and (when the forest was fit with sample
    or class weights) the same weighted draw, as scikit-learn does in ``fit``.

    Parameters
    ----------
    forest : fitted RandomForest* / ExtraTrees* with bootstrap=True, or a Pipeline ending in one
    n_samples : int, default=None
        Rows the forest was fit on; read from the forest when not given.

    Returns
    -------
    list of ndarray of int, one per tree, sorted
    """
    _, est = _forest_parts(forest, "oob_sample_indices")
    if n_samples is None:
        n_samples = _forest_n_rows(est)
        if n_samples is None:
            raise param_error(
                "n_samples", "oob_sample_indices", "the number of training rows (the forest does not record it)", None
            )
    sw = getattr(est, "_sample_weight", None)  # weights the bootstrap used (sklearn >= 1.6)
    if sw is not None:
        sw = np.asarray(sw, dtype=float)
    n_boot = _n_samples_bootstrap(n_samples, est.max_samples, sw)
    return [_unsampled(t.random_state, n_samples, n_boot, sw) for t in est.estimators_]


_OOB_METRICS = {
    "accuracy": 1.0,
    "balanced_accuracy": 1.0,
    "r2": 1.0,
    "neg_mean_squared_error": -1.0,
    "neg_mean_absolute_error": -1.0,
}


def _oob_scores(name: str, pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Score each row of pred (copies x rows) against y, vectorised over copies."""
    if name == "accuracy":
        return (pred == y).mean(axis=1)
    if name == "balanced_accuracy":
        recalls = [((pred == c) & (y == c)).sum(axis=1) / (y == c).sum() for c in np.unique(y)]
        return np.mean(recalls, axis=0)
    err = pred - y
    if name == "neg_mean_squared_error":
        return -(err**2).mean(axis=1)
    if name == "neg_mean_absolute_error":
        return -np.abs(err).mean(axis=1)
    sst = ((y - y.mean()) ** 2).sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 - (err**2).sum(axis=1) / sst  # r2; NaN when the OOB target is constant


def oob_permutation_importance(
    forest,
    X,
    y,
    *,
    scoring: str | None = None,
    random_state: int | None = 0,
    check_oob: bool = True,
    max_cells: int = DEFAULT_MAX_CELLS,
    progress: Progress | None = None,
) -> ImportanceResult:
    """Out-of-bag permutation importance (mean decrease in accuracy, seed 004).

    For each tree: take the rows its bootstrap left out, score the tree on them,
    shuffle feature j among those rows, score again. The importance of j is the
    mean drop over trees (Breiman 2001; R's ``randomForest(importance=TRUE)``).
    No hold-out set is needed: X and y are the training data.

    Parameters
    ----------
    forest : fitted RandomForest* or ExtraTrees* with bootstrap=True, or a Pipeline ending in one
    X : DataFrame or array-like of shape (n_samples, n_features)
        The training rows, in the order the forest was fit on.
    y : array-like of shape (n_samples,)
        The training target.
    scoring : {"accuracy", "balanced_accuracy", "r2", "neg_mean_squared_error", \
"neg_mean_absolute_error"} or None, default=None
        None: accuracy for classifiers, mean squared error for regressors (so the
        importance of a regressor's feature is the rise in MSE).
    random_state : int or None, default=0
        Seeds the shuffles.
    check_oob : bool, default=True
        When the forest stored ``oob_prediction_`` / ``oob_decision_function_``
        (``oob_score=True``), check that the trees' predictions on the
        regenerated out-of-bag rows reproduce it: a mismatch means X is not the
        training data in its original order.
    max_cells : int, default=2**23
        Upper bound on rows x columns of permuted copies built at once.
    progress : callable(done, total), default=None
        Called after each tree.

    Returns
    -------
    ImportanceResult
        ``raw`` has shape (n_features, n_trees): per-tree drop in score.

    Raises
    ------
    InvalidModelError
        If the model is not a bagged forest, or was fit without bootstrap.
    InvalidDataError
        If X does not have the forest's training row count, or y is unusable.
    """
    func = "oob_permutation_importance"
    preprocessor, est = _forest_parts(forest, func)
    max_cells = _check_int(max_cells, "max_cells", func, 1)
    progress = _check_progress(progress, func)
    adapter = ModelAdapter(forest)
    frame = _check_X(adapter, X, func)
    n, p_in = frame.shape
    n_fit = _forest_n_rows(est)
    if n_fit is not None and n_fit != n:
        raise InvalidDataError(
            f"The forest was fit on {n_fit} rows but X has {n}: out-of-bag rows are positions "
            "in the training data, so pass the training X and y, complete and in their "
            "original order (or use permutation_importance on held-out rows)."
        )
    y_arr = _check_y(y, n, adapter.task, adapter.classes, func)
    is_clf = adapter.task != "regression"
    if scoring is None:
        scoring = "accuracy" if is_clf else "neg_mean_squared_error"
    ok = ("accuracy", "balanced_accuracy") if is_clf else ("r2", "neg_mean_squared_error", "neg_mean_absolute_error")
    if scoring not in ok:
        raise param_error("scoring", func, f"one of {list(ok)} for this forest", scoring)
    if is_clf:
        # trees predict class positions; compare with y in the same coding
        y_code = pd.Index(est.classes_).get_indexer(y_arr)
    else:
        y_code = y_arr.astype(float)

    # Input to the trees: float32 as the forest casts it; through the Pipeline's steps if any
    def tree_input(fr: pd.DataFrame) -> np.ndarray:
        data = preprocessor.transform(fr) if preprocessor is not None else adapter._model_input(fr)
        if hasattr(data, "toarray"):
            data = data.toarray()
        return np.ascontiguousarray(np.asarray(data, dtype=np.float32))

    X_t = tree_input(frame)
    numeric_fast = preprocessor is None  # permute columns of the float32 array directly
    oob = oob_sample_indices(forest, n)
    rng = np.random.default_rng(random_state)
    T = len(est.estimators_)
    raw = np.full((p_in, T), np.nan)
    k = len(est.classes_) if is_clf else 1
    acc = np.zeros((n, k))
    counts = np.zeros(n, dtype=np.int64)

    for t, (tree, rows) in enumerate(zip(est.estimators_, oob)):
        m = len(rows)
        if m == 0:
            if progress is not None:
                progress(t + 1, T)
            continue
        Xo = X_t[rows]
        if is_clf:
            proba = tree.predict_proba(Xo, check_input=False)
            acc[rows] += proba
            base_pred = np.argmax(proba, axis=1)
        else:
            base_pred = tree.predict(Xo, check_input=False)
            acc[rows, 0] += base_pred
        counts[rows] += 1
        yo = y_code[rows]
        base = _oob_scores(scoring, base_pred[None, :], yo)[0]
        perms = rng.permuted(np.tile(np.arange(m), (p_in, 1)), axis=1)
        step = max(1, max_cells // max(1, m * X_t.shape[1]))
        for s in range(0, p_in, step):
            feats = np.arange(s, min(s + step, p_in))
            if numeric_fast:
                big = np.broadcast_to(Xo, (len(feats), m, p_in)).copy()
                big[np.arange(len(feats))[:, None], np.arange(m)[None, :], feats[:, None]] = Xo[
                    perms[feats], feats[:, None]
                ]
                big = big.reshape(-1, p_in)
            else:
                big = tree_input(
                    _stack_copies(frame, rows, [(j, rows[perms[j]]) for j in feats])
                )
            if is_clf:
                pred = np.argmax(tree.predict_proba(big, check_input=False), axis=1)
            else:
                pred = tree.predict(big, check_input=False)
            raw[feats, t] = base - _oob_scores(scoring, pred.reshape(len(feats), m), yo)
        if progress is not None:
            progress(t + 1, T)

    if check_oob:
        stored = getattr(est, "oob_decision_function_" if is_clf else "oob_prediction_", None)
        if stored is not None:
            mine = acc / np.maximum(counts, 1)[:, None]
            stored = np.asarray(stored, dtype=float).reshape(n, -1)
            ok_rows = counts > 0
            if not np.allclose(mine[ok_rows], stored[ok_rows], rtol=1e-9, atol=1e-12):
                raise InvalidDataError(
                    "The trees' predictions on their out-of-bag rows do not reproduce the "
                    "forest's stored oob predictions, so X is not the training data in its "
                    "original order. Pass exactly the rows the forest was fit on (or set "
                    "check_oob=False to skip this check)."
                )
    used = ~np.isnan(raw).all(axis=0)
    raw = raw[:, used]
    params = {
        "scoring": scoring,
        "scoring_name": scoring,
        "random_state": random_state,
        "n_trees": int(used.sum()),
        "mean_oob_rows": float(np.mean([len(r) for r in oob])),
    }
    what = "accuracy" if scoring == "accuracy" else scoring.replace("neg_", "").replace("_", " ")
    desc = (
        f"Out-of-bag permutation importance: the mean drop in each tree's {what} on the rows "
        "its bootstrap left out, when a feature is shuffled among them."
    )
    if raw.shape[1] == 0:
        raise InvalidDataError("No tree has out-of-bag rows; use more rows or max_samples < n.")
    return _result(adapter.feature_names, np.nan_to_num(raw), "oob_permutation", params, desc)


# -------------------------------------------------------------------------------- SHAP
def shap_importance(shap_result, *, class_index: int | None = None) -> ImportanceResult:
    """Mean absolute SHAP value of each feature.

    Parameters
    ----------
    shap_result : ShapResult or any object with ``values``, ``feature_names``
        (and ``output_names`` for several outputs)
        ``values`` of shape (n_rows, n_features) or (n_rows, n_features, n_outputs).
    class_index : int, default=None
        For several outputs: use only this output. None averages |phi| over the
        outputs (per-output means are kept in ``by_output``).

    Returns
    -------
    ImportanceResult
        ``raw`` has shape (n_features, n_rows): |phi| of each row.
    """
    func = "shap_importance"
    for attr in ("values", "feature_names"):
        if not hasattr(shap_result, attr):
            raise InvalidDataError(
                f"{func} needs a ShapResult (an object with 'values' and 'feature_names'); "
                f"a {type(shap_result).__name__} has no {attr!r}."
            )
    vals = np.asarray(shap_result.values, dtype=float)
    names = [str(f) for f in shap_result.feature_names]
    if vals.ndim not in (2, 3) or vals.shape[1] != len(names) or vals.shape[0] == 0:
        raise InvalidDataError(
            f"SHAP values must have shape (n_rows, {len(names)}) or (n_rows, {len(names)}, "
            f"n_outputs) with n_rows >= 1; got {vals.shape}."
        )
    absv = np.abs(vals)
    by_output = None
    params: dict[str, Any] = {"method": getattr(shap_result, "method", None), "n_rows": vals.shape[0]}
    if vals.ndim == 3:
        k = vals.shape[2]
        outs = list(getattr(shap_result, "output_names", None) or [f"output {i}" for i in range(k)])
        by_output = pd.DataFrame(absv.mean(axis=0), index=pd.Index(names, name="feature"),
                                 columns=[str(o) for o in outs])
        if class_index is not None:
            if isinstance(class_index, bool) or not isinstance(class_index, (int, np.integer)) \
                    or not 0 <= class_index < k:
                raise param_error("class_index", func, f"None or an int in [0, {k - 1}]", class_index)
            absv = absv[:, :, class_index]
            params["class"] = str(outs[class_index])
        else:
            absv = absv.mean(axis=2)
    elif class_index is not None:
        raise param_error("class_index", func, "None for single-output SHAP values", class_index)
    params["class_index"] = class_index
    desc = "Mean |SHAP value|: the average size of each feature's contribution to a prediction."
    return _result(names, absv.T, "shap", params, desc, by_output=by_output)


# --------------------------------------------------------------------------- compare
@dataclass(frozen=True, eq=False)
class ImportanceComparison:
    """Several importance methods side by side.

    Attributes
    ----------
    methods : list of str
        One label per compared result (columns of the frames below).
    shares : DataFrame (features x methods)
        Each method's importances as a share of its total (negative values
        clipped to 0 first: a shuffle that helps the model means "no importance").
    stds : DataFrame (features x methods)
        The std of each result on the same scale as ``shares``.
    ranks : DataFrame (features x methods)
        1 = most important; ties share the average rank.
    table : DataFrame
        Per feature: the shares, the ranks, ``mean_share``, ``rank_spread``
        (max - min rank) and ``flagged``; sorted by ``mean_share``.
    spearman, kendall : DataFrame (methods x methods)
        Rank agreement between each pair of methods.
    flags : DataFrame with columns ``feature``, ``reason``, ``detail``
        Features where the methods disagree, with the likely reason:
        ``"high_cardinality"``, ``"correlated"`` or ``"disagreement"``.
    notes : list of str
        What was dropped or assumed (e.g. features not in every result).
    """

    methods: list
    shares: pd.DataFrame
    stds: pd.DataFrame
    ranks: pd.DataFrame
    table: pd.DataFrame
    spearman: pd.DataFrame
    kendall: pd.DataFrame
    flags: pd.DataFrame
    notes: list = field(default_factory=list)
    results: list = field(default_factory=list, repr=False)


_KIND = {"mdi": "impurity", "permutation": "permutation", "oob_permutation": "permutation",
         "shap": "shap"}


def compare_importances(
    results: Sequence[ImportanceResult],
    *,
    X=None,
    min_gap: float = 0.05,
    min_rank_spread: float = 2,
    correlation_threshold: float = 0.7,
) -> ImportanceComparison:
    """Put importance results side by side and flag where they disagree.

    Parameters
    ----------
    results : sequence of ImportanceResult
        At least two, over the same features (features missing from any result
        are left out, and said so in ``notes``).
    X : DataFrame or array-like, default=None
        The data, to give evidence for the flags: distinct values per feature
        (MDI favours high cardinality) and correlations (correlated features share
        permutation importance). Without it the reasons are stated as likely.
    min_gap : float, default=0.05
        A feature is flagged when its largest share exceeds its smallest by at
        least this much and by a factor of 2, and its ranks differ by at least
        ``min_rank_spread``.
    min_rank_spread : float, default=2
        Smallest difference between a feature's best and worst rank that counts
        as disagreement (shares alone differ in scale between methods).
    correlation_threshold : float, default=0.7
        |Pearson r| from which two numeric features count as correlated.

    Returns
    -------
    ImportanceComparison
    """
    func = "compare_importances"
    results = list(results) if results is not None else []
    if len(results) < 2 or not all(isinstance(r, ImportanceResult) for r in results):
        raise param_error("results", func, "a sequence of at least 2 ImportanceResult objects",
                          [type(r).__name__ for r in results])
    if not 0 <= min_gap < 1:
        raise param_error("min_gap", func, "a float in [0, 1)", min_gap)
    if not min_rank_spread >= 0:
        raise param_error("min_rank_spread", func, "a number >= 0", min_rank_spread)
    if not 0 < correlation_threshold <= 1:
        raise param_error("correlation_threshold", func, "a float in (0, 1]", correlation_threshold)
    labels: list[str] = []
    for r in results:
        lab, i = r.label, 2
        while lab in labels:
            lab, i = f"{r.label} #{i}", i + 1
        labels.append(lab)
    notes: list[str] = []
    common = [f for f in results[0].feature_names if all(f in r.feature_names for r in results[1:])]
    if len(common) < 2:
        raise InvalidFeatureError(
            "The results share fewer than 2 feature names, so they cannot be compared. "
            "Compute them on the same model and columns (MDI of a Pipeline names the "
            "transformed columns; compare it with results on the same columns)."
        )
    dropped = sorted({f for r in results for f in r.feature_names} - set(common))
    if dropped:
        notes.append(f"Left out {len(dropped)} feature(s) not in every result: {', '.join(dropped[:10])}.")
    shares, stds = {}, {}
    for lab, r in zip(labels, results):
        pos = {f: i for i, f in enumerate(r.feature_names)}
        idx = [pos[f] for f in common]
        imp = np.clip(r.importances[idx], 0, None)
        total = imp.sum()
        if (r.importances[idx] < 0).any():
            notes.append(f"{lab}: negative importances counted as 0 in the shares.")
        shares[lab] = imp / total if total > 0 else np.zeros(len(common))
        stds[lab] = r.std[idx] / total if total > 0 else np.zeros(len(common))
    index = pd.Index(common, name="feature")
    shares = pd.DataFrame(shares, index=index)
    stds = pd.DataFrame(stds, index=index)
    raw_imp = pd.DataFrame(
        {lab: r.importances[[r.feature_names.index(f) for f in common]] for lab, r in zip(labels, results)},
        index=index,
    )
    ranks = raw_imp.rank(ascending=False, method="average")

    from scipy.stats import kendalltau, spearmanr

    spear = pd.DataFrame(np.eye(len(labels)), index=labels, columns=labels)
    kend = spear.copy()
    for a in range(len(labels)):
        for b in range(a + 1, len(labels)):
            xa, xb = raw_imp.iloc[:, a].to_numpy(), raw_imp.iloc[:, b].to_numpy()
            if np.ptp(xa) == 0 or np.ptp(xb) == 0:
                rho = tau = np.nan  # a constant ranking agrees with nothing
            else:
                rho = float(spearmanr(xa, xb).statistic)
                tau = float(kendalltau(xa, xb).statistic)
            spear.iloc[a, b] = spear.iloc[b, a] = rho
            kend.iloc[a, b] = kend.iloc[b, a] = tau

    flags = _flags(common, labels, results, shares, ranks, X, min_gap, min_rank_spread,
                   correlation_threshold)
    table = pd.concat(
        {"share": shares, "rank": ranks}, axis=1
    )
    table.columns = [f"{a}: {b}" for a, b in table.columns]
    table["mean_share"] = shares.mean(axis=1)
    table["rank_spread"] = ranks.max(axis=1) - ranks.min(axis=1)
    table["flagged"] = table.index.isin(flags["feature"])
    table = table.sort_values("mean_share", ascending=False)
    return ImportanceComparison(
        methods=labels, shares=shares, stds=stds, ranks=ranks, table=table,
        spearman=spear, kendall=kend, flags=flags, notes=notes, results=results,
    )


def _flags(features, labels, results, shares, ranks, X, min_gap, min_spread, corr_thr) -> pd.DataFrame:
    kinds = {lab: _KIND.get(r.method, r.method) for lab, r in zip(labels, results)}
    perm_cols = [lab for lab in labels if kinds[lab] == "permutation"]
    other_cols = [lab for lab in labels if kinds[lab] in ("impurity", "shap")]
    mdi_cols = [lab for lab in labels if kinds[lab] == "impurity"]
    n_unique, corr = None, None
    if X is not None:
        frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X), columns=None)
        if not isinstance(X, pd.DataFrame) and frame.shape[1] == len(results[0].feature_names):
            frame.columns = results[0].feature_names
        frame = frame[[f for f in features if f in frame.columns]]
        n_rows = len(frame)
        n_unique = frame.nunique()
        num = frame.select_dtypes("number")
        if num.shape[1] >= 2:
            corr = num.corr().abs()
    rows = []
    for f in features:
        s = shares.loc[f]
        hi, lo = float(s.max()), float(s.min())
        r = ranks.loc[f]
        if not (hi - lo >= min_gap and hi >= 2 * lo and r.max() - r.min() >= min_spread):
            continue
        rank_txt = ", ".join(f"{lab}: {s[lab]:.1%} (rank {r[lab]:g})" for lab in labels)
        perm = float(s[perm_cols].mean()) if perm_cols else None
        mdi_share = float(s[mdi_cols].max()) if mdi_cols else None
        other = float(s[other_cols].max()) if other_cols else None
        partner = None
        if corr is not None and f in corr.columns:
            c = corr[f].drop(f)
            if len(c) and c.max() >= corr_thr:
                partner = (c.idxmax(), float(c.max()))
        card = None if n_unique is None or f not in n_unique.index else int(n_unique[f])
        reason, detail = "disagreement", f"The methods disagree on {f!r}: {rank_txt}."
        if perm is not None and other is not None and other >= 2 * perm and other - perm >= min_gap:
            high_card = card is not None and card >= max(20, 0.5 * n_rows)
            if partner is not None and not (mdi_share is not None and high_card and mdi_share >= other - 1e-12):
                reason = "correlated"
                detail = (
                    f"{f!r} is correlated with {partner[0]!r} (|r| = {partner[1]:.2f}): when one is "
                    "shuffled the other still carries the signal, so permutation importance "
                    f"understates both. {rank_txt}."
                )
            elif mdi_share is not None and mdi_share >= 2 * perm and (high_card or card is None):
                reason = "high_cardinality"
                card_txt = (f"it has {card} distinct values in {n_rows} rows; "
                            if card is not None else "likely many distinct values; ")
                detail = (
                    f"MDI ranks {f!r} far above permutation importance: {card_txt}impurity "
                    "importance rewards features with many split points even when they carry "
                    "no signal (it is measured on training data). Trust the permutation "
                    f"importance. {rank_txt}."
                )
                if card is None:
                    detail += " (If it is correlated with another feature, that also lowers its permutation importance.)"
        rows.append({"feature": f, "reason": reason, "detail": detail})
    return pd.DataFrame(rows, columns=["feature", "reason", "detail"])
