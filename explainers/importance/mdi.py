"""Mean decrease in impurity (MDI) of a tree model, with its spread across trees.

One reader per model family turns the fitted trees into per-tree scores:
single trees, forests (normalised per tree), gradient boosting (raw decreases)
and HistGradientBoosting (split gains).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import InvalidFeatureError, InvalidModelError
from ..model import ModelAdapter
from ..trees import tree_families
from ._common import split_pipeline
from .result import ImportanceResult, make_result

__all__ = ["mdi"]


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
        If the model has no trees, or its trees are not scikit-learn's (a model read
        from an XGBoost, LightGBM or CatBoost file: use :func:`library_importance`).

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
    preprocessor, est = split_pipeline(model)
    from sklearn.tree import BaseDecisionTree

    fam = tree_families()
    _check_tree_model(est, fam)
    names = _final_feature_names(preprocessor, est, feature_names)
    p = len(names)
    desc = (
        "Mean decrease in impurity: how much the splits on each feature reduced the "
        "training criterion, as a share of the total (measured on training data)."
    )
    params: dict[str, Any] = {"model": type(est).__name__}

    if isinstance(est, BaseDecisionTree):
        raw, importances = _decision_tree_mdi(est)
    elif isinstance(est, fam["forest"]):
        raw, importances = _forest_mdi(est, p)
    elif isinstance(est, fam["gb"]):
        raw, importances = _boosting_mdi(est, p)
    else:  # HistGradientBoosting: one predictor per iteration and output
        raw, importances = _hist_gradient_boosting_mdi(est, p)
        if importances is not None:
            params["source"] = "split gains"
    if preprocessor is not None and feature_names is None:
        names, raw, importances = _by_input_column(model, names, raw, importances, params)
    return make_result(names, raw, "mdi", params, desc, importances=importances)


def _by_input_column(pipeline, names, raw, importances, params):
    """A pipeline whose preprocessing is column-wise: each input column gets the sum
    over the columns made from it (a one-hot group is one feature), so MDI names the
    data's own columns as every other method does. Otherwise unchanged."""
    from ..trees.pipeline import is_foldable_pipeline, original_groups

    try:
        if not is_foldable_pipeline(pipeline):
            return names, raw, importances
        groups = original_groups(pipeline)
    except Exception:  # noqa: BLE001 - not traceable: keep the transformed columns
        return names, raw, importances
    inputs = getattr(pipeline, "feature_names_in_", None)
    inputs = [str(n) for n in inputs] if inputs is not None else [f"x{j}" for j in range(len(groups))]
    pick = lambda a: np.array([a[g].sum(axis=0) if g else np.zeros(a.shape[1:]) for g in groups])  # noqa: E731
    params["columns"] = "input columns (sums over the columns each one is made into)"
    return inputs, pick(raw), None if importances is None else pick(importances)


def _check_tree_model(est, fam) -> None:
    """Raise unless ``est`` is a fitted scikit-learn tree model."""
    from sklearn.base import BaseEstimator
    from sklearn.tree import BaseDecisionTree

    from ..trees import NativeTreeModel
    from .result import library_label

    forests, boosting, hist = fam["forest"], fam["gb"], fam["hgb"]
    if isinstance(est, NativeTreeModel):
        lib = library_label(est.library)
        raise InvalidModelError(
            f"mdi needs a scikit-learn tree model; this {lib} model was read from its own file, whose "
            f"splits store {lib}'s gain and cover, not an impurity decrease. Use "
            f"library_importance(model, kind='gain') ({lib} gain, MDI's counterpart) instead."
        )
    if not isinstance(est, (BaseDecisionTree, *forests, *boosting, *hist)):
        name = type(est).__name__
        if _foreign_trees(est):
            why = (f"a {name} keeps its trees in its own library's format, which mdi does not read "
                   "(its own feature_importances_ uses that library's definitions)")
        else:
            why = f"a {name} has no trees, so it has no impurity decrease"
        raise InvalidModelError(
            f"mdi needs a scikit-learn tree model (a decision tree, random forest, extra "
            f"trees or gradient boosting); {why}. Use permutation_importance or "
            "shap_importance instead."
        )
    if isinstance(est, BaseEstimator):
        ModelAdapter(est)  # raises InvalidModelError with a fix when not fitted


def _foreign_trees(est) -> bool:
    """Whether ``est`` is a tree ensemble of another library (XGBoost, LightGBM, CatBoost)."""
    module = type(est).__module__.split(".")[0]
    name = type(est).__name__
    return module in ("xgboost", "lightgbm", "catboost") or name.startswith(("XGB", "LGBM", "CatBoost"))


def _final_feature_names(preprocessor, estimator, feature_names) -> list[str]:
    """Names of the columns the trees split on (after the Pipeline's preprocessing)."""
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


# Each reader returns (raw of shape (p, n_trees), importances or None for raw's mean).
def _decision_tree_mdi(est):
    raw = est.tree_.compute_feature_importances()[:, None]
    return raw, raw[:, 0]


def _forest_mdi(est, p: int):
    trees = [t for t in est.estimators_ if t.tree_.node_count > 1]
    if not trees:
        return np.zeros((p, 1)), None
    per_tree = np.array([t.tree_.compute_feature_importances() for t in trees])
    # The same operations as the forest's feature_importances_, so they agree exactly
    mean = np.mean(per_tree, axis=0, dtype=np.float64)
    return per_tree.T, mean / mean.sum()


def _boosting_mdi(est, p: int):
    trees = [t for stage in est.estimators_ for t in stage if t.tree_.node_count > 1]
    if not trees:
        return np.zeros((p, 1)), None
    per_tree = np.array([t.tree_.compute_feature_importances(normalize=False) for t in trees])
    mean = np.mean(per_tree, axis=0, dtype=np.float64)
    total = mean.sum()
    return per_tree.T / total, mean / total


def _hist_gradient_boosting_mdi(est, p: int):
    """Split gains of every predictor, as shares of their mean total (None when no gain)."""
    if not hasattr(est, "_predictors"):
        raise InvalidModelError(
            f"This {type(est).__name__} has no trees to read (no '_predictors'): fit it first."
        )
    from ..trees.sklearn import _hgb_categories

    # with categorical features the predictors read the internal encoder's columns
    # (categorical ones first): map them back to the model's input columns
    cat_info, _ = _hgb_categories(est)
    to_original = None if cat_info is None else np.asarray(cat_info[0], np.intp)
    gains = []
    for stage in est._predictors:
        for pred in stage:
            nodes = pred.nodes
            split = ~nodes["is_leaf"].astype(bool)
            idx = nodes["feature_idx"][split].astype(np.intp)
            gains.append(
                np.bincount(
                    idx if to_original is None else to_original[idx],
                    weights=nodes["gain"][split].astype(float),
                    minlength=p,
                )[:p]
            )
    per_tree = np.array(gains) if gains else np.zeros((1, p))
    mean = per_tree.mean(axis=0)
    total = mean.sum()
    if total <= 0:
        return np.zeros((p, per_tree.shape[0])), None
    return per_tree.T / total, mean / total
