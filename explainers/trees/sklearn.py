"""Reader for scikit-learn tree models: trees, forests, gradient boosting and
histogram gradient boosting, into the shared :class:`TreeEnsemble`."""
from __future__ import annotations

import warnings

import numpy as np

from ..errors import InvalidModelError
from .ensemble import TreeEnsemble, assemble

__all__ = ["flatten_sklearn", "is_sklearn_tree_model", "tree_families", "fitted_trees", "average_path_length"]


def _sk_tree_arrays(tree, column: int | None, n_raw: int):
    """Arrays of one scikit-learn ``Tree`` object.

    ``column`` puts a single-valued (boosting) tree in one raw column; None keeps
    the tree's own value row (regression value or class fractions).
    """
    t = tree
    left = t.children_left.astype(np.int64)
    right = t.children_right.astype(np.int64)
    leaf = left < 0
    feature = np.where(leaf, -1, t.feature).astype(np.int64)
    threshold = np.where(leaf, np.nan, t.threshold).astype(np.float64)
    missing = getattr(t, "missing_go_to_left", None)
    missing = np.zeros(len(left), np.uint8) if missing is None else np.asarray(missing, np.uint8)
    v = np.asarray(t.value, dtype=np.float64)  # (n_nodes, n_outputs, max_classes)
    if column is None and v.shape[1] > 1:
        # a multi-output regression tree: one raw column per target
        value = v[:, :n_raw, 0].copy()
    elif column is None:
        value = v[:, 0, :n_raw].copy()
    else:
        value = np.zeros((len(left), n_raw))
        value[:, column] = v[:, 0, 0]
    cover = np.asarray(t.weighted_n_node_samples, dtype=np.float64)
    # the depth (last entry) is computed from the children by assemble, never
    # read from the model: a stored max_depth may be wrong
    return feature, threshold, left, right, missing, value, cover, -1


def _hgb_tree_arrays(predictor, column: int, n_raw: int, cat_info=None):
    """Arrays of one HistGradientBoosting predictor.

    ``cat_info`` = (original column of each predictor column, known-category
    bitsets, feature -> bitset row map) for a model with categorical features:
    the predictor reads the columns of the model's internal encoder (categorical
    ones first), so features are mapped back to the user's columns here, and a
    categorical split becomes a rule over the encoder's category codes.
    """
    from .ensemble import RULE_CATEGORICAL, RULE_OTHER_LEFT, rule_record

    nodes = predictor.nodes
    leaf = nodes["is_leaf"].astype(bool)
    left = np.where(leaf, -1, nodes["left"].astype(np.int64))
    right = np.where(leaf, -1, nodes["right"].astype(np.int64))
    feature = np.where(leaf, -1, nodes["feature_idx"]).astype(np.int64)
    threshold = np.where(leaf, np.nan, nodes["num_threshold"]).astype(np.float64)
    missing = nodes["missing_go_to_left"].astype(np.uint8)
    value = np.zeros((len(nodes), n_raw))
    value[:, column] = nodes["value"]
    cover = nodes["count"].astype(np.float64)
    rules = {}
    is_cat = nodes["is_categorical"].astype(bool) & ~leaf
    if is_cat.any() and cat_info is None:
        raise InvalidModelError("This HistGradientBoosting model has categorical splits but no category encoder.")
    if cat_info is not None:
        to_original, known, f_idx_map = cat_info
        raw_bits = np.asarray(predictor.raw_left_cat_bitsets)
        codes = np.arange(256)
        for i in np.flatnonzero(is_cat):
            f = int(feature[i])
            words_left = raw_bits[int(nodes["bitset_idx"][i])]
            words_known = known[int(f_idx_map[f])]
            in_left = (words_left[codes >> 5] >> (codes & 31)) & 1
            is_known = (words_known[codes >> 5] >> (codes & 31)) & 1
            # unknown categories (and codes < 0) go the missing way, as scikit-learn's predictor does
            goes = (in_left == 1) | ((is_known == 0) & bool(missing[i]))
            flags = RULE_CATEGORICAL | (RULE_OTHER_LEFT if missing[i] else 0)
            rules[int(i)] = rule_record(flags, codes[goes])
            threshold[i] = 0.0
        feature = np.where(leaf, -1, np.asarray(to_original, np.int64)[np.maximum(feature, 0)])
    return feature, threshold, left, right, missing, value, cover, -1, rules


def _hgb_categories(model):
    """For a HistGradientBoosting with categorical features: (cat_info for
    :func:`_hgb_tree_arrays`, per-column category tuples); (None, None) without."""
    pre = getattr(model, "_preprocessor", None)
    if pre is None:
        return None, None
    is_cat = np.asarray(model.is_categorical_, bool)
    to_original = np.concatenate([np.flatnonzero(is_cat), np.flatnonzero(~is_cat)])
    encoder = pre.named_transformers_["encoder"]
    categories = [None] * len(is_cat)
    for j, cats in zip(np.flatnonzero(is_cat), encoder.categories_):
        import pandas as pd

        kept = [c for c in list(cats) if not (isinstance(c, float) and np.isnan(c)) and c is not pd.NA
                and c is not None]
        categories[int(j)] = tuple(c.item() if hasattr(c, "item") else c for c in kept)
    known, f_idx_map = model._bin_mapper.make_known_categories_bitsets()
    return (to_original, np.asarray(known), np.asarray(f_idx_map)), categories


def _link_transform(model) -> str:
    """Output transform of a model that has a scikit-learn ``_loss`` with a link."""
    link = type(model._loss.link).__name__
    mapping = {
        "IdentityLink": "identity",
        "LogLink": "exp",
        "LogitLink": "sigmoid",
        "MultinomialLogit": "softmax",
    }
    if link not in mapping:
        raise InvalidModelError(
            f"{type(model).__name__} uses a {link} output link, which the flat tree "
            "representation does not cover (e.g. loss='exponential'); use method='brute'."
        )
    return mapping[link]


def tree_families() -> dict:
    """scikit-learn's tree model classes by family: tree, forest, gb (GradientBoosting),
    hgb, iforest (IsolationForest)."""
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        IsolationForest,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.tree import BaseDecisionTree

    return dict(
        tree=(BaseDecisionTree,),
        forest=(RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier, ExtraTreesRegressor),
        gb=(GradientBoostingClassifier, GradientBoostingRegressor),
        hgb=(HistGradientBoostingClassifier, HistGradientBoostingRegressor),
        iforest=(IsolationForest,),
    )


def is_sklearn_tree_model(model) -> bool:
    """True for a bare scikit-learn tree model that :func:`flatten_model` may take.

    A Pipeline is never a tree model here, even if it ends in one: its other
    steps change the inputs the trees see.
    """
    fam = tree_families()
    return isinstance(model, fam["tree"] + fam["forest"] + fam["gb"] + fam["hgb"] + fam["iforest"])


def fitted_trees(model):
    """The object holding the fitted trees: fitting again replaces it (a
    Pipeline's: its final step's)."""
    steps = getattr(model, "steps", None)
    if steps:
        model = steps[-1][1]
    for attr in ("estimators_", "_predictors", "tree_", "ensemble"):  # ensemble: a NativeTreeModel's
        if hasattr(model, attr):
            return getattr(model, attr)
    return None


def flatten_sklearn(model) -> TreeEnsemble:
    """Flatten a fitted scikit-learn tree model into a :class:`TreeEnsemble`.

    Parameters
    ----------
    model : estimator
        A fitted DecisionTree*/ExtraTree* , RandomForest*, ExtraTrees*,
        GradientBoosting* (constant or zero ``init``), HistGradientBoosting*
        (with or without categorical features) or IsolationForest model.
        Regression trees and forests may have several outputs (fitted on a 2-D
        ``y``): the ensemble then has one raw column per target, and every tree
        contributes a whole value row to them, so each target is explained
        exactly as a single-output model would be.

    Returns
    -------
    TreeEnsemble
        For an IsolationForest, the raw output is the mean path length
        ``E[h(x)]`` (see :func:`_isolation_forest`).

    Raises
    ------
    InvalidModelError
        For a multi-output classifier, GradientBoosting with a non-constant
        ``init`` estimator, or an output link without a transform here.
    """
    name = type(model).__name__
    fam = tree_families()
    if getattr(model, "n_outputs_", 1) != 1 and (
            isinstance(getattr(model, "classes_", None), list) or not isinstance(model, fam["tree"] + fam["forest"])):
        raise InvalidModelError(
            f"This {name} classifies {model.n_outputs_} target columns at once; multi-output "
            "classifiers are not explained. Fit one classifier per target column."
        )
    if isinstance(model, fam["tree"] + fam["forest"]):
        read = _forest
    elif isinstance(model, fam["gb"]):
        read = _gradient_boosting
    elif isinstance(model, fam["iforest"]):
        read = _isolation_forest
    else:
        read = _hist_gradient_boosting
    parts, tree_output, ensemble = read(model, name)
    n_features = int(model.n_features_in_)
    return assemble(parts, tree_output, n_features=n_features, model_name=name, **ensemble)


def _forest(model, name):
    """A single tree or a forest: the average of per-tree values (class fractions for classifiers)."""
    from sklearn.base import is_classifier

    trees = [model] if isinstance(model, tree_families()["tree"]) else list(model.estimators_)
    n_raw = int(model.n_classes_) if is_classifier(model) else int(getattr(model, "n_outputs_", 1))
    parts = [_sk_tree_arrays(est.tree_, None, n_raw) for est in trees]
    ensemble = dict(base=np.zeros(n_raw), scale=1.0 / len(trees), transform="identity", float32_inputs=True)
    return parts, [-1] * len(trees), ensemble


def _gradient_boosting(model, name):
    """GradientBoosting: the constant init plus learning_rate x the sum of tree values, through its link."""
    from sklearn.dummy import DummyClassifier, DummyRegressor

    init = model.init_
    if not (isinstance(init, str) and init == "zero") and not isinstance(
        init, (DummyClassifier, DummyRegressor)
    ):
        raise InvalidModelError(
            f"This {name} has a non-constant init estimator ({type(init).__name__}), so "
            "its raw prediction is not a sum of tree values plus a constant; use "
            "method='brute'."
        )
    transform = _link_transform(model)
    n_stages, n_raw = model.estimators_.shape
    # The constant init prediction; its X only needs the right width.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = np.asarray(model._raw_predict_init(np.zeros((1, int(model.n_features_in_)))), np.float64)[0]
    parts, tree_output = [], []
    for stage in range(n_stages):
        for k in range(n_raw):
            parts.append(_sk_tree_arrays(model.estimators_[stage, k].tree_, k, n_raw))
            tree_output.append(k if n_raw > 1 else -1)
    ensemble = dict(base=base, scale=float(model.learning_rate), transform=transform, float32_inputs=True)
    return parts, tree_output, ensemble


def _hist_gradient_boosting(model, name):
    """HistGradientBoosting: the baseline plus the sum of tree values (float64 inputs), through its link.

    Categorical features (native categorical splits) become rule nodes over the
    model's own category codes, with the categories kept so that a data frame of
    the user's values is encoded as the model's encoder does.
    """
    transform = _link_transform(model)
    n_raw = int(model.n_trees_per_iteration_)
    base = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)
    cat_info, categories = _hgb_categories(model)
    parts, tree_output = [], []
    for predictors in model._predictors:
        for k, predictor in enumerate(predictors):
            parts.append(_hgb_tree_arrays(predictor, k, n_raw, cat_info))
            tree_output.append(k if n_raw > 1 else -1)
    ensemble = dict(base=base, scale=1.0, transform=transform, float32_inputs=False, categories=categories)
    return parts, tree_output, ensemble


def average_path_length(n) -> np.ndarray:
    """c(n): the average path length of an unsuccessful search in a binary search tree
    of n points (Liu et al. 2008), as scikit-learn's IsolationForest computes it:
    0 for n <= 1, 1 for n == 2, ``2 (ln(n - 1) + gamma) - 2 (n - 1) / n`` otherwise."""
    n = np.asarray(n, dtype=np.float64)
    out = np.zeros(n.shape)
    big = n > 2
    out[n == 2] = 1.0
    nb = n[big]
    out[big] = 2.0 * (np.log(nb - 1.0) + np.euler_gamma) - 2.0 * (nb - 1.0) / nb
    return out


def _isolation_forest(model, name):
    """IsolationForest: the mean path length ``E[h(x)]`` over its trees.

    scikit-learn scores a row by ``score_samples(x) = -2 ** (-E[h(x)] / c(max_samples))``,
    where ``h`` is a tree's path length: the depth of the leaf the row reaches
    plus ``c(n)``, the average path length of the ``n`` training samples left
    unseparated in that leaf (``c`` from :func:`average_path_length`).
    Each node's value is therefore ``depth + c(n_node_samples)``, and with scale
    ``1 / n_trees`` the raw output is ``E[h(x)]``: a sum over trees, which Tree
    SHAP and the tree PD walk explain exactly (shorter = more anomalous). Trees
    grown on a subset of the features (``max_features < 1``) read the model's
    columns through ``estimators_features_``.
    """
    n_in = int(model.n_features_in_)
    parts = []
    for est, cols in zip(model.estimators_, model.estimators_features_):
        feature, threshold, left, right, missing, _, cover, depth = _sk_tree_arrays(est.tree_, None, 1)
        cols = np.asarray(cols, np.int64)
        inner = feature >= 0
        if inner.any() and (feature[inner].max() >= len(cols) or cols.min() < 0 or cols.max() >= n_in):
            raise InvalidModelError(
                f"{name}: a tree splits on a feature outside its feature subset; the model is damaged."
            )
        feature = np.where(inner, cols[np.maximum(feature, 0)] if len(cols) else -1, -1)
        node_depth = _node_depths(left, right)
        n_samples = np.asarray(est.tree_.n_node_samples, np.float64)
        value = (node_depth + average_path_length(n_samples)).reshape(-1, 1)
        parts.append((feature, threshold, left, right, missing, value, cover, depth))
    ensemble = dict(base=np.zeros(1), scale=1.0 / len(parts), transform="identity", float32_inputs=True)
    return parts, [-1] * len(parts), ensemble


def _node_depths(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Depth of every node of one tree (root 0), from its child arrays. Nodes come
    after their parent in scikit-learn's arrays; a damaged tree is caught by the
    structure check of :func:`~explainers.trees.ensemble.assemble`, so nodes that
    are never reached keep depth 0 here."""
    depth = np.zeros(len(left), np.float64)
    order = [0] if len(left) else []
    while order:
        nxt = []
        for node in order:
            for child in (left[node], right[node]):
                if 0 <= child < len(left) and child != node and depth[child] == 0:
                    depth[child] = depth[node] + 1
                    nxt.append(int(child))
        order = nxt
    return depth
