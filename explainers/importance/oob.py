"""Out-of-bag permutation importance of bagged forests (mean decrease in accuracy).

Each tree's bootstrap is drawn again from its own seed (:func:`oob_sample_indices`),
so the rows it never saw serve as its hold-out set; each feature is shuffled
among those rows and the tree scored again (Breiman 2001).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from ..errors import InvalidDataError, InvalidModelError, param_error
from ..model import ModelAdapter
from ..trees import tree_families
from ._common import (
    DEFAULT_MAX_CELLS,
    Progress,
    check_int,
    check_progress,
    check_X,
    check_y,
    split_pipeline,
    stack_copies,
)
from .result import ImportanceResult, make_result

__all__ = ["oob_permutation_importance", "oob_sample_indices"]


# ---------------------------------------------------------------------- OOB rows
def _forest_parts(model, func: str):
    """Return (preprocessor, forest) after checking the forest can give OOB rows."""
    preprocessor, est = split_pipeline(model)
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


# ------------------------------------------------------------------ OOB permutation
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
    max_cells = check_int(max_cells, "max_cells", func, 1)
    progress = check_progress(progress, func)
    adapter = ModelAdapter(forest)
    if adapter.task == "regression" and adapter.n_targets > 1:
        raise InvalidModelError(
            f"This {type(forest).__name__} predicts {adapter.n_targets} targets at once; out-of-bag "
            "importance scores one prediction against one target column. Use mean |SHAP| for one "
            "output, or fit one model per target."
        )
    frame = check_X(adapter, X, func)
    n = len(frame)
    _check_training_rows(est, n)
    y_arr = check_y(y, n, adapter.task, adapter.classes, func)
    is_clf = adapter.task != "regression"
    scoring = _oob_scoring(scoring, is_clf, func)

    plan = _plan(est, preprocessor, adapter, frame, y_arr, is_clf, scoring, max_cells)
    oob = oob_sample_indices(forest, n)
    raw, acc, counts = _oob_drops(est, oob, plan, random_state, progress)
    if check_oob:
        _check_stored_oob(est, is_clf, acc, counts)

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
    return make_result(adapter.feature_names, np.nan_to_num(raw), "oob_permutation", params, desc)


def _check_training_rows(est, n: int) -> None:
    n_fit = _forest_n_rows(est)
    if n_fit is not None and n_fit != n:
        raise InvalidDataError(
            f"The forest was fit on {n_fit} rows but X has {n}: out-of-bag rows are positions "
            "in the training data, so pass the training X and y, complete and in their "
            "original order (or use permutation_importance on held-out rows)."
        )


def _oob_scoring(scoring, is_clf: bool, func: str) -> str:
    """The scoring name, defaulted and checked against the ones scored per tree."""
    if scoring is None:
        scoring = "accuracy" if is_clf else "neg_mean_squared_error"
    ok = ("accuracy", "balanced_accuracy") if is_clf else ("r2", "neg_mean_squared_error", "neg_mean_absolute_error")
    if scoring not in ok:
        raise param_error("scoring", func, f"one of {list(ok)} for this forest", scoring)
    return scoring


@dataclass(frozen=True)
class _Plan:
    """What scoring every tree on its out-of-bag rows needs."""

    frame: pd.DataFrame  # the rows, canonical columns (for copies through the Pipeline's steps)
    X_t: np.ndarray  # their input to the trees
    y_code: np.ndarray  # the target in the trees' coding
    tree_input: Callable[[pd.DataFrame], np.ndarray]
    numeric_fast: bool  # permute columns of the float32 array directly
    is_clf: bool
    scoring: str
    max_cells: int


def _plan(est, preprocessor, adapter, frame, y_arr, is_clf, scoring, max_cells) -> _Plan:
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

    return _Plan(frame=frame, X_t=tree_input(frame), y_code=y_code, tree_input=tree_input,
                 numeric_fast=preprocessor is None, is_clf=is_clf, scoring=scoring,
                 max_cells=max_cells)


def _oob_drops(est, oob, plan: _Plan, random_state, progress):
    """Per-tree drop in OOB score, (p, n_trees), NaN for trees without OOB rows; and the
    trees' summed OOB outputs per row with their counts (for the stored-OOB check)."""
    n, p_in = plan.frame.shape
    rng = np.random.default_rng(random_state)
    T = len(est.estimators_)
    raw = np.full((p_in, T), np.nan)
    k = len(est.classes_) if plan.is_clf else 1
    acc = np.zeros((n, k))
    counts = np.zeros(n, dtype=np.int64)
    for t, (tree, rows) in enumerate(zip(est.estimators_, oob)):
        m = len(rows)
        if m > 0:
            out = _tree_output(tree, plan.X_t[rows], plan.is_clf)
            if plan.is_clf:
                acc[rows] += out
            else:
                acc[rows, 0] += out
            counts[rows] += 1
            perms = rng.permuted(np.tile(np.arange(m), (p_in, 1)), axis=1)
            raw[:, t] = _tree_drops(tree, rows, out, perms, plan)
        if progress is not None:
            progress(t + 1, T)
    return raw, acc, counts


def _tree_output(tree, data: np.ndarray, is_clf: bool) -> np.ndarray:
    """Class probabilities of a classifier's tree, predictions of a regressor's."""
    if is_clf:
        return tree.predict_proba(data, check_input=False)
    return tree.predict(data, check_input=False)


def _tree_drops(tree, rows, out, perms, plan: _Plan) -> np.ndarray:
    """Drop in one tree's score on its OOB rows when each feature is shuffled among them."""
    m, p_in = len(rows), plan.frame.shape[1]
    Xo = plan.X_t[rows]
    yo = plan.y_code[rows]
    base_pred = np.argmax(out, axis=1) if plan.is_clf else out
    base = _oob_scores(plan.scoring, base_pred[None, :], yo)[0]
    drops = np.empty(p_in)
    step = max(1, plan.max_cells // max(1, m * plan.X_t.shape[1]))
    for s in range(0, p_in, step):
        feats = np.arange(s, min(s + step, p_in))
        big = _permuted_copies(Xo, rows, perms, feats, plan)
        pred = _tree_output(tree, big, plan.is_clf)
        if plan.is_clf:
            pred = np.argmax(pred, axis=1)
        drops[feats] = base - _oob_scores(plan.scoring, pred.reshape(len(feats), m), yo)
    return drops


def _permuted_copies(Xo, rows, perms, feats, plan: _Plan) -> np.ndarray:
    """Tree input of the OOB rows, once per feature in feats with that feature shuffled."""
    m, p_in = len(rows), plan.frame.shape[1]
    if not plan.numeric_fast:
        return plan.tree_input(stack_copies(plan.frame, rows, [(j, rows[perms[j]]) for j in feats]))
    big = np.broadcast_to(Xo, (len(feats), m, p_in)).copy()
    big[np.arange(len(feats))[:, None], np.arange(m)[None, :], feats[:, None]] = Xo[
        perms[feats], feats[:, None]
    ]
    return big.reshape(-1, p_in)


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


def _check_stored_oob(est, is_clf: bool, acc: np.ndarray, counts: np.ndarray) -> None:
    """Raise when the trees' OOB outputs do not reproduce the forest's stored ones."""
    stored = getattr(est, "oob_decision_function_" if is_clf else "oob_prediction_", None)
    if stored is None:
        return
    mine = acc / np.maximum(counts, 1)[:, None]
    stored = np.asarray(stored, dtype=float).reshape(len(acc), -1)
    ok_rows = counts > 0
    if not np.allclose(mine[ok_rows], stored[ok_rows], rtol=1e-9, atol=1e-12):
        raise InvalidDataError(
            "The trees' predictions on their out-of-bag rows do not reproduce the "
            "forest's stored oob predictions, so X is not the training data in its "
            "original order. Pass exactly the rows the forest was fit on (or set "
            "check_oob=False to skip this check)."
        )
