"""Flatten scikit-learn tree models into one normalised set of arrays.

Every supported model (single trees, random forests, extra trees, gradient
boosting and histogram gradient boosting) becomes a :class:`TreeEnsemble`:
all nodes of all trees stored back to back in flat arrays, plus the few
ensemble-level numbers that turn summed leaf values into predictions::

    raw(x)    = base + scale * sum_t value_t[leaf_t(x)]          # (n_raw,)
    output(x) = transform(raw(x))                               # (n_outputs,)

The representation is what fast exact algorithms need (the tree walk behind
:func:`explainers.pdp.partial_dependence` with ``method="tree"``, and Tree SHAP):
numeric arrays only, so numba kernels can read them directly, and one routing
rule for every model::

    x = X[row, feature[node]]           (rounded to float32 first if float32_inputs)
    go left  if isnan(x) and missing_go_left[node]
    go right if isnan(x) and not missing_go_left[node]
    go left  if x <= threshold[node]    (a value equal to the threshold goes left)
    go right otherwise

:func:`flatten_model` checks the reconstruction rules against scikit-learn's own
``predict`` / ``predict_proba`` in the tests (to 1e-12) for every model type.
"""
from __future__ import annotations

import warnings
import weakref
from dataclasses import dataclass

import numpy as np

from .errors import InvalidModelError

__all__ = [
    "TreeEnsemble",
    "flatten_model",
    "is_tree_model",
    "TRANSFORMS",
]

#: output transforms, in the order of their integer codes (used by numba kernels)
TRANSFORMS = ("identity", "exp", "sigmoid", "softmax")


@dataclass(frozen=True, eq=False)
class TreeEnsemble:
    """All trees of a fitted model in flat, normalised arrays.

    Node ``i`` of the ensemble is described by entry ``i`` of every per-node
    array. Tree ``t`` owns nodes ``node_offsets[t]`` to ``node_offsets[t + 1] - 1``
    and its root is ``node_offsets[t]``. Child indices are global (already offset).

    Attributes
    ----------
    feature : ndarray of shape (n_nodes,), dtype=int32
        Input column a node splits on; -1 at leaves.
    threshold : ndarray of shape (n_nodes,), dtype=float64
        Split threshold: rows with ``x <= threshold`` go left. NaN at leaves.
    left, right : ndarray of shape (n_nodes,), dtype=int32
        Global index of each child; -1 at leaves.
    missing_go_left : ndarray of shape (n_nodes,), dtype=uint8
        1 where a NaN input goes to the left child, 0 where it goes right.
    value : ndarray of shape (n_nodes, n_raw), dtype=float64
        Node value before ``scale``: the mean target of a regression tree, the
        class fractions of a classification tree, the (learning-rate free for
        GradientBoosting, learning-rate included for HistGradientBoosting) leaf
        value of a boosting tree. A boosting tree that fits one class of a
        multiclass model has zeros in the other columns (see ``tree_output``).
        Defined at internal nodes too (the model's own internal value).
    cover : ndarray of shape (n_nodes,), dtype=float64
        Training weight that reached each node (``weighted_n_node_samples`` for
        scikit-learn trees, the sample ``count`` for HistGradientBoosting).
    node_offsets : ndarray of shape (n_trees + 1,), dtype=int64
        Where each tree starts in the node arrays; the last entry is n_nodes.
    tree_output : ndarray of shape (n_trees,), dtype=int64
        The raw column a tree contributes to, or -1 when it contributes a whole
        ``value`` row (forests, single-output boosting).
    base : ndarray of shape (n_raw,), dtype=float64
        Constant added to the scaled sum: the init raw prediction of gradient
        boosting, the baseline of histogram gradient boosting, 0 for forests.
    scale : float
        Multiplies the sum of leaf values: ``1 / n_trees`` for forests (their
        average), the learning rate for GradientBoosting, 1 otherwise.
    transform : {"identity", "exp", "sigmoid", "softmax"}
        Maps ``raw`` to the model's prediction: ``exp`` for log-link
        regressors (Poisson, Gamma), ``sigmoid`` for binary boosting (giving the
        two columns ``[1 - p, p]``), ``softmax`` for multiclass boosting.
    float32_inputs : bool
        True for scikit-learn trees, which round inputs to float32 before
        comparing them with the float64 thresholds; HistGradientBoosting
        compares float64 inputs.
    n_features : int
        Number of input columns the model expects.
    max_depth : int
        Depth of the deepest leaf over all trees (root at depth 0).
    model_name : str
        Class name of the flattened model.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    missing_go_left: np.ndarray
    value: np.ndarray
    cover: np.ndarray
    node_offsets: np.ndarray
    tree_output: np.ndarray
    base: np.ndarray
    scale: float
    transform: str
    float32_inputs: bool
    n_features: int
    max_depth: int
    model_name: str

    # ----------------------------------------------------------------- sizes
    @property
    def n_trees(self) -> int:
        return len(self.node_offsets) - 1

    @property
    def n_nodes(self) -> int:
        return len(self.feature)

    @property
    def n_raw(self) -> int:
        """Columns of the raw (pre-transform) prediction."""
        return self.value.shape[1]

    @property
    def n_outputs(self) -> int:
        """Columns of the transformed prediction (2 for a sigmoid model)."""
        return 2 if self.transform == "sigmoid" else self.n_raw

    @property
    def roots(self) -> np.ndarray:
        return self.node_offsets[:-1]

    @property
    def transform_code(self) -> int:
        """Integer code of :attr:`transform`, for numba kernels."""
        return TRANSFORMS.index(self.transform)

    # ---------------------------------------------------------- predictions
    def prepare_inputs(self, X) -> np.ndarray:
        """Return X as a C-contiguous float64 array, rounded through float32 if
        the model compares float32 inputs (so walks route rows as predict does)."""
        arr = np.asarray(X, dtype=np.float64)
        if self.float32_inputs:
            arr = arr.astype(np.float32).astype(np.float64)
        return np.ascontiguousarray(arr)

    def apply(self, X) -> np.ndarray:
        """Global leaf index reached by each row in each tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_trees), dtype=int64
        """
        Xw = self.prepare_inputs(X)
        n = Xw.shape[0]
        node = np.broadcast_to(self.roots, (n, self.n_trees)).astype(np.int64)
        rows = np.arange(n)[:, None]
        # All trees advance together, one level per pass: at most max_depth passes.
        for _ in range(self.max_depth):
            internal = self.left[node] >= 0
            if not internal.any():
                break
            f = np.where(internal, self.feature[node], 0)
            x = Xw[np.broadcast_to(rows, node.shape), f]
            go_left = np.where(
                np.isnan(x), self.missing_go_left[node] == 1, x <= self.threshold[node]
            )
            child = np.where(go_left, self.left[node], self.right[node])
            node = np.where(internal, child, node)
        return node

    def predict_raw(self, X) -> np.ndarray:
        """Raw prediction ``base + scale * sum of leaf values``.

        Returns
        -------
        ndarray of shape (n_samples, n_raw)
        """
        leaves = self.apply(X)
        total = self.value[leaves].sum(axis=1)
        return self.base[None, :] + self.scale * total

    def transform_raw(self, raw: np.ndarray) -> np.ndarray:
        """Apply the output transform to raw predictions of shape (n, n_raw)."""
        raw = np.asarray(raw, dtype=np.float64)
        if self.transform == "identity":
            return raw
        if self.transform == "exp":
            return np.exp(raw)
        if self.transform == "sigmoid":
            from scipy.special import expit

            p = expit(raw[:, 0])
            return np.column_stack([1.0 - p, p])
        shifted = raw - raw.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """The model's prediction: regression values or class probabilities.

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)
        """
        return self.transform_raw(self.predict_raw(X))


# --------------------------------------------------------------- flattening
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
    if column is None:
        value = v[:, 0, :n_raw].copy()
    else:
        value = np.zeros((len(left), n_raw))
        value[:, column] = v[:, 0, 0]
    cover = np.asarray(t.weighted_n_node_samples, dtype=np.float64)
    return feature, threshold, left, right, missing, value, cover, int(t.max_depth)


def _hgb_tree_arrays(predictor, column: int, n_raw: int):
    nodes = predictor.nodes
    if nodes["is_categorical"].any():
        raise InvalidModelError(
            "This HistGradientBoosting model has categorical splits, which the "
            "flat tree representation does not cover; use method='brute' instead."
        )
    leaf = nodes["is_leaf"].astype(bool)
    left = np.where(leaf, -1, nodes["left"].astype(np.int64))
    right = np.where(leaf, -1, nodes["right"].astype(np.int64))
    feature = np.where(leaf, -1, nodes["feature_idx"]).astype(np.int64)
    threshold = np.where(leaf, np.nan, nodes["num_threshold"]).astype(np.float64)
    missing = nodes["missing_go_to_left"].astype(np.uint8)
    value = np.zeros((len(nodes), n_raw))
    value[:, column] = nodes["value"]
    cover = nodes["count"].astype(np.float64)
    return feature, threshold, left, right, missing, value, cover, int(nodes["depth"].max())


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
    """scikit-learn's tree model classes by family: tree, forest, gb (GradientBoosting), hgb."""
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.tree import BaseDecisionTree

    return dict(
        tree=(BaseDecisionTree,),
        forest=(RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier, ExtraTreesRegressor),
        gb=(GradientBoostingClassifier, GradientBoostingRegressor),
        hgb=(HistGradientBoostingClassifier, HistGradientBoostingRegressor),
    )


def is_tree_model(model) -> bool:
    """True for a bare scikit-learn tree model that :func:`flatten_model` may take.

    A Pipeline is never a tree model here, even if it ends in one: its other
    steps change the inputs the trees see.
    """
    fam = tree_families()
    return isinstance(model, fam["tree"] + fam["forest"] + fam["gb"] + fam["hgb"])


_FLAT_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _fitted_trees(model):
    """The object holding the fitted trees: fitting again replaces it."""
    for attr in ("estimators_", "_predictors", "tree_"):
        if hasattr(model, attr):
            return getattr(model, attr)
    return None


def flatten_model(model) -> TreeEnsemble:
    """Flatten a fitted tree model, reusing the result for the same fitted model.

    Explaining one model again and again (the dashboard does, row after row)
    then pays the per-tree conversion once. The cache holds the model weakly
    and is keyed by the identity of its fitted trees, so a refit model is
    flattened anew. See :func:`_flatten_model` for the details.
    """
    trees = _fitted_trees(model)
    try:
        hit = _FLAT_CACHE.get(model)
    except TypeError:  # not weak-referenceable or not hashable: no caching
        return _flatten_model(model)
    # compared by identity, with the old holder kept alive in the cache, so a
    # refit can never reuse its address and pass for the same trees
    if hit is not None and trees is not None and hit[0] is trees:
        return hit[1]
    ens = _flatten_model(model)
    try:
        _FLAT_CACHE[model] = (trees, ens)
    except TypeError:
        pass
    return ens


def _flatten_model(model) -> TreeEnsemble:
    """Flatten a fitted scikit-learn tree model into a :class:`TreeEnsemble`.

    Parameters
    ----------
    model : estimator
        A fitted DecisionTree*/ExtraTree* , RandomForest*, ExtraTrees*,
        GradientBoosting* (constant or zero ``init``) or HistGradientBoosting*
        (no categorical splits) model with a single output.

    Returns
    -------
    TreeEnsemble

    Raises
    ------
    InvalidModelError
        For any other model, a multi-output model, GradientBoosting with a
        non-constant ``init`` estimator, HistGradientBoosting with categorical
        features, or an output link without a transform here.
    """
    fam = tree_families()
    name = type(model).__name__
    if not is_tree_model(model):
        raise InvalidModelError(
            f"{name} is not a scikit-learn tree model (DecisionTree, RandomForest, "
            "ExtraTrees, GradientBoosting or HistGradientBoosting); use a model-agnostic "
            "method such as method='brute'."
        )
    from sklearn.base import is_classifier

    if getattr(model, "n_outputs_", 1) != 1:
        raise InvalidModelError(
            f"This {name} has {model.n_outputs_} outputs; only single-output models can be "
            "flattened. Explain one output at a time with a single-output model."
        )
    parts = []
    offsets = [0]
    tree_output = []
    n_features = int(model.n_features_in_)
    clf = is_classifier(model)

    if isinstance(model, fam["tree"] + fam["forest"]):
        trees = [model] if isinstance(model, fam["tree"]) else list(model.estimators_)
        n_raw = int(model.n_classes_) if clf else 1
        for est in trees:
            parts.append(_sk_tree_arrays(est.tree_, None, n_raw))
            tree_output.append(-1)
        base = np.zeros(n_raw)
        scale = 1.0 / len(trees)
        transform = "identity"
        float32_inputs = True
    elif isinstance(model, fam["gb"]):
        init = model.init_
        from sklearn.dummy import DummyClassifier, DummyRegressor

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
            base = np.asarray(model._raw_predict_init(np.zeros((1, n_features))), np.float64)[0]
        for stage in range(n_stages):
            for k in range(n_raw):
                parts.append(_sk_tree_arrays(model.estimators_[stage, k].tree_, k, n_raw))
                tree_output.append(k if n_raw > 1 else -1)
        scale = float(model.learning_rate)
        float32_inputs = True
    else:  # HistGradientBoosting
        if getattr(model, "_preprocessor", None) is not None:
            raise InvalidModelError(
                f"This {name} encodes categorical features internally, which the flat "
                "tree representation does not cover; use method='brute'."
            )
        transform = _link_transform(model)
        n_raw = int(model.n_trees_per_iteration_)
        base = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)
        for predictors in model._predictors:
            for k, predictor in enumerate(predictors):
                parts.append(_hgb_tree_arrays(predictor, k, n_raw))
                tree_output.append(k if n_raw > 1 else -1)
        scale = 1.0
        float32_inputs = False

    for p in parts:
        offsets.append(offsets[-1] + len(p[0]))
    shift = np.repeat(np.asarray(offsets[:-1], np.int64), [len(p[0]) for p in parts])
    cat = lambda i: np.concatenate([p[i] for p in parts])  # noqa: E731
    left, right = cat(2), cat(3)
    left = np.where(left >= 0, left + shift, -1)
    right = np.where(right >= 0, right + shift, -1)
    return TreeEnsemble(
        feature=cat(0).astype(np.int32),
        threshold=cat(1),
        left=left.astype(np.int32),
        right=right.astype(np.int32),
        missing_go_left=cat(4).astype(np.uint8),
        value=np.ascontiguousarray(np.concatenate([p[5] for p in parts], axis=0)),
        cover=cat(6),
        node_offsets=np.asarray(offsets, dtype=np.int64),
        tree_output=np.asarray(tree_output, dtype=np.int64),
        base=np.asarray(base, dtype=np.float64).reshape(-1),
        scale=float(scale),
        transform=transform,
        float32_inputs=float32_inputs,
        n_features=n_features,
        max_depth=max(p[7] for p in parts),
        model_name=name,
    )
