"""Structural checks of the trees inside a fitted model, before anything walks them.

A ``.skops`` file may hold scikit-learn's ``Tree`` and HistGradientBoosting's
``TreePredictor``, and both accept whatever node arrays the file gives them.
scikit-learn's compiled prediction code trusts those arrays: a child or feature
index out of range reads (or writes) outside memory and kills the process, a
child pointing back up the tree loops forever, and a stored ``max_depth``
smaller than the real depth overflows buffers sized from it (scikit-learn's
``decision_path``, and any walk stack). So every loaded model is checked here,
with vectorised numpy, before it is returned:

- each tree is a proper binary tree from node 0: both children -1 (a leaf) or
  both inside the tree, every other node the child of exactly one node, every
  node reached from the root (no cycle, no sharing, no stray node);
- internal nodes split on a feature the model receives, at a threshold that is
  not NaN (``+inf`` is what scikit-learn stores for "missing values one way,
  the rest the other"); leaf values and node weights are finite;
- the depth is computed from the children, never read from the file, and the
  depth the file states must agree with it;
- HistGradientBoosting categorical splits name bitsets that exist, on features
  the model's binner knows as categorical;
- the counts (trees, nodes, depth, features) stay within
  :mod:`explainers.limits`, which the operator can raise.

:func:`validate_model` walks a whole model (pipelines, column transformers,
meta-estimators, anything holding estimators); :func:`check_trees` is the
vectorised core, also used by the flat tree reader to compute depths.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import limits
from ..errors import InvalidModelError

__all__ = ["validate_model", "check_trees", "ModelStats", "HINT"]

HINT = (
    "The file was altered or damaged: save the model again from the fitted estimator "
    "(skops.io.dump(model, 'model.skops')) and upload that file."
)

#: nodes checked together in one vectorised pass (bounds the temporary arrays)
_BATCH_NODES = 1 << 21
#: nesting of estimators / containers followed inside a model
_MAX_NESTING = 200


@dataclass(frozen=True)
class ModelStats:
    """What :func:`validate_model` counted (a tree repeated in one ensemble counted per use)."""

    trees: int = 0
    nodes: int = 0
    max_depth: int = 0


def _refuse(msg: str) -> InvalidModelError:
    return InvalidModelError(f"{msg} {HINT}")


# ----------------------------------------------------------------- the core
def check_trees(left, right, offsets, *, where, feature=None, n_features=None,
                threshold=None, max_depth=None) -> np.ndarray:
    """Check concatenated trees are proper binary trees; return each tree's depth.

    Parameters
    ----------
    left, right : int arrays of shape (n_nodes,)
        Child indices local to each tree, -1 at leaves.
    offsets : int array of shape (n_trees + 1,)
        Where each tree starts in the node arrays; the last entry is n_nodes.
    where : callable (tree, node) -> str
        Names a node in messages ("RandomForestRegressor.estimators_[3], node 17").
    feature, n_features : optional
        Split features, checked in ``[0, n_features)`` at internal nodes.
    threshold : optional float array
        Split thresholds, refused where NaN or -inf at internal nodes.
    max_depth : int, optional
        Deepest level allowed; default the GLASSBOX_MAX_TREE_DEPTH limit.

    Returns
    -------
    ndarray of shape (n_trees,), dtype=int64
        Depth of the deepest leaf of each tree (a lone root has depth 0).

    Raises
    ------
    InvalidModelError
        Naming the tree and node that is wrong.
    """
    left, right, offsets, n_total = _child_arrays(left, right, offsets, where)
    tree_of, start, n_of = _tree_of_nodes(offsets, where)
    at = _node_namer(where, tree_of, start)
    internal, g_left, g_right = _check_children(left, right, start, n_of, at)
    roots = offsets[:-1]
    _check_parents(internal, g_left, g_right, roots, n_total, at)
    _check_splits(internal, feature, n_features, threshold, at)
    depth = _depths(internal, g_left, g_right, roots, n_total, max_depth, at)
    return np.maximum.reduceat(depth, roots)


# ----------------------------------------------------------- the core's steps
def _child_arrays(left, right, offsets, where):
    """Return (left, right, offsets, n_total) as int64 arrays, the child arrays one entry a node."""
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    n_total = int(offsets[-1])
    if len(left) != n_total or len(right) != n_total:
        raise _refuse(f"{where(0, None)}: the child arrays do not match the number of nodes.")
    return left, right, offsets, n_total


def _tree_of_nodes(offsets, where):
    """Return (tree_of, start, n_of): each node's tree, its tree's first node and its tree's size."""
    sizes = np.diff(offsets)
    if (sizes < 1).any():
        t = int(np.flatnonzero(sizes < 1)[0])
        raise _refuse(f"{where(t, None)} has no nodes.")
    n_trees = len(sizes)
    tree_of = np.repeat(np.arange(n_trees), sizes)
    return tree_of, offsets[:-1][tree_of], sizes[tree_of]


def _node_namer(where, tree_of, start):
    """A function naming a node, by its index in the concatenated arrays, in messages."""
    def at(i):
        i = int(i)
        return where(int(tree_of[i]), i - int(start[i]))

    return at


def _check_children(left, right, start, n_of, at):
    """Return (internal, g_left, g_right): the splits and their children's global indices (-1 at leaves)."""
    leaf = left == -1
    mixed = leaf != (right == -1)
    if mixed.any():
        i = int(np.flatnonzero(mixed)[0])
        raise _refuse(
            f"{at(i)} has one child missing (left {int(left[i])}, right {int(right[i])}); a leaf "
            "has both children -1 and a split has both inside the tree."
        )
    internal = ~leaf
    for side, child in (("left", left), ("right", right)):
        bad = internal & ((child < 0) | (child >= n_of))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _refuse(
                f"{at(i)} has {side} child {int(child[i])}, outside the tree's nodes "
                f"0..{int(n_of[i]) - 1}."
            )
    g_left = np.where(internal, left + start, -1)
    g_right = np.where(internal, right + start, -1)
    return internal, g_left, g_right


def _check_parents(internal, g_left, g_right, roots, n_total: int, at) -> None:
    """Refuse a root that is some node's child, and a node with no parent or more than one."""
    indegree = np.bincount(np.concatenate([g_left[internal], g_right[internal]]), minlength=n_total)
    if indegree[roots].any():
        t = int(np.flatnonzero(indegree[roots])[0])
        parent = int(np.flatnonzero(internal & ((g_left == roots[t]) | (g_right == roots[t])))[0])
        raise _refuse(f"{at(parent)} points back to the root (node 0): the tree has a cycle.")
    indegree[roots] = 1
    if (indegree != 1).any():
        i = int(np.flatnonzero(indegree != 1)[0])
        if indegree[i] == 0:
            raise _refuse(f"{at(i)} is not the child of any node: the tree is not connected.")
        raise _refuse(
            f"{at(i)} is the child of {int(indegree[i])} nodes: a tree node has exactly one parent."
        )


def _check_splits(internal, feature, n_features, threshold, at) -> None:
    """Refuse a split on a feature outside ``[0, n_features)`` or on a threshold no value passes."""
    if feature is not None:
        feature = np.asarray(feature)
        bad = internal & ((feature < 0) | (feature >= n_features))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _refuse(
                f"{at(i)} splits on feature {int(feature[i])}, but the model receives "
                f"{int(n_features)} features (0..{int(n_features) - 1})."
            )
    if threshold is not None:
        threshold = np.asarray(threshold, dtype=np.float64)
        bad = internal & (np.isnan(threshold) | (threshold == -np.inf))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _refuse(f"{at(i)} has the split threshold {float(threshold[i])}, which no value passes.")


def _depths(internal, g_left, g_right, roots, n_total: int, max_depth, at) -> np.ndarray:
    """Each node's depth, within the depth limit; a node never reached is refused."""
    # breadth first from every root at once: with one parent per node each node
    # is reached at most once, so this ends; a node never reached is in a cycle
    limit = limits.limit("tree_depth") if max_depth is None else int(max_depth)
    depth = np.full(n_total, -1, np.int64)
    frontier = roots
    level = 0
    while frontier.size:
        depth[frontier] = level
        frontier = frontier[internal[frontier]]
        if frontier.size and level >= limit:
            i = int(frontier[0])
            if max_depth is not None:
                raise _refuse(f"{at(i)} lies deeper than {limit} levels.")
            raise InvalidModelError(
                f"{at(i)} is at depth {level} and still splits: the tree is more than {limit} "
                f"levels deep, {limits.over('tree_depth')}."
            )
        frontier = np.concatenate([g_left[frontier], g_right[frontier]])
        level += 1
    if (depth < 0).any():
        i = int(np.flatnonzero(depth < 0)[0])
        raise _refuse(f"{at(i)} cannot be reached from the root: the tree has a cycle.")
    return depth


# ------------------------------------------------------ scikit-learn Trees
def _tree_cls():
    from sklearn.tree._tree import Tree

    return Tree


def _sk_arrays(tree, label: str):
    """The node and value arrays of a scikit-learn Tree, after checking their sizes agree."""
    if not isinstance(tree, _tree_cls()):
        raise _refuse(f"{label} is a {type(tree).__name__}, not a scikit-learn Tree.")
    n, cap = int(tree.node_count), int(tree.capacity)
    if n < 1 or n > cap:
        raise _refuse(f"{label} claims {n} nodes but holds {cap}.")
    state = tree.__getstate__()
    nodes, values = state["nodes"], state["values"]
    if len(nodes) != n or values.shape[0] != n:
        raise _refuse(f"{label}: its node arrays have {len(nodes)} and {values.shape[0]} rows for {n} nodes.")
    return nodes, values


def _check_sk_trees(trees, labels, n_features: int, n_outputs: int | None) -> list[int]:
    """Check scikit-learn Trees that all receive ``n_features`` columns; return their node counts."""
    node_counts = []
    cache: dict[int, np.ndarray] = {}
    batch: list[int] = []
    batch_nodes = 0

    def flush():
        nonlocal batch, batch_nodes
        if not batch:
            return
        arrays = [cache.pop(i) for i in batch]
        offsets = np.concatenate([[0], np.cumsum([len(a) for a in arrays])])
        cat = lambda f: np.concatenate([a[f] for a in arrays])  # noqa: E731
        depths = check_trees(
            cat("left_child"), cat("right_child"), offsets,
            where=lambda t, node, b=batch: labels[b[t]] + ("" if node is None else f", node {node}"),
            feature=cat("feature"), n_features=n_features, threshold=cat("threshold"),
        )
        for j, i in enumerate(batch):
            tree = trees[i]
            if int(tree.max_depth) != int(depths[j]):
                raise _refuse(
                    f"{labels[i]} states max_depth {int(tree.max_depth)} but its nodes are "
                    f"{int(depths[j])} levels deep."
                )
        batch, batch_nodes = [], 0

    for i, tree in enumerate(trees):
        label = labels[i]
        nodes, values = _sk_arrays(tree, label)
        if int(tree.n_features) != int(n_features):
            raise _refuse(
                f"{label} was built for {int(tree.n_features)} features but the model receives {int(n_features)}."
            )
        if n_outputs is not None and int(tree.n_outputs) != int(n_outputs):
            raise _refuse(f"{label} has {int(tree.n_outputs)} outputs but the model {int(n_outputs)}.")
        leaf = nodes["left_child"] == -1
        vals = values.reshape(len(nodes), -1)
        if not np.isfinite(vals[leaf]).all():
            node = int(np.flatnonzero(leaf & ~np.isfinite(vals).all(axis=1))[0])
            raise _refuse(f"{label}, node {node}: the leaf value is not a finite number.")
        weights = nodes["weighted_n_node_samples"]
        if not np.isfinite(weights).all():
            node = int(np.flatnonzero(~np.isfinite(weights))[0])
            raise _refuse(f"{label}, node {node}: the sample weight is not a finite number.")
        node_counts.append(len(nodes))
        cache[i] = nodes
        batch.append(i)
        batch_nodes += len(nodes)
        if batch_nodes >= _BATCH_NODES:
            flush()
    flush()
    return node_counts


# ------------------------------------------------ HistGradientBoosting trees
def _hgb_width(model, label: str) -> int:
    """Columns the predictors of a HistGradientBoosting model receive."""
    n_in = int(model.n_features_in_)
    pre = getattr(model, "_preprocessor", None)
    if pre is None:
        return n_in
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import FunctionTransformer, OrdinalEncoder

    if not isinstance(pre, ColumnTransformer) or not hasattr(pre, "transformers_"):
        raise _refuse(f"{label}: its internal preprocessor is a {type(pre).__name__}, not scikit-learn's.")
    width = 0
    for name, trans, cols in pre.transformers_:
        if isinstance(trans, str) and trans == "drop":
            continue
        if not (isinstance(trans, (OrdinalEncoder, FunctionTransformer)) or trans == "passthrough"):
            raise _refuse(f"{label}: its internal preprocessor step {name!r} is a {type(trans).__name__}.")
        if isinstance(cols, slice):
            width += len(range(n_in)[cols])
            continue
        arr = np.atleast_1d(np.asarray(cols))
        if arr.dtype == bool:
            if len(arr) != n_in:
                raise _refuse(f"{label}: its preprocessor step {name!r} selects columns of a different table.")
            width += int(arr.sum())
        else:
            width += len(arr)
    if width != n_in:
        raise _refuse(f"{label}: its preprocessor gives {width} columns for {n_in} features.")
    return width


def _check_hgb(model, label: str) -> tuple[int, int, int]:
    """Check a fitted HistGradientBoosting model; return (trees, nodes, depth)."""
    from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor

    n_features = _hgb_width(model, label)
    K = int(getattr(model, "n_trees_per_iteration_", 1))
    predictors = model._predictors
    if not isinstance(predictors, (list, tuple)):
        raise _refuse(f"{label}._predictors is a {type(predictors).__name__}, not a list of trees.")
    n_iter = getattr(model, "n_iter_", None)
    if n_iter is not None and int(n_iter) != len(predictors):
        raise _refuse(f"{label} states {int(n_iter)} iterations but holds {len(predictors)}.")
    n_trees = len(predictors) * K
    if n_trees > limits.limit("trees"):
        raise InvalidModelError(f"{label} has {n_trees:,} trees, {limits.over('trees')}.")
    binner = getattr(model, "_bin_mapper", None)
    cat_mask = None if binner is None else getattr(binner, "is_categorical_", None)
    if cat_mask is not None:
        cat_mask = np.asarray(cat_mask).astype(bool)
        if cat_mask.shape != (n_features,):
            raise _refuse(f"{label}: its binner describes {cat_mask.size} features, the model {n_features}.")
        for f in np.flatnonzero(cat_mask):
            known = np.asarray(binner.bin_thresholds_[f], dtype=np.float64)
            if not (np.isfinite(known).all() and (known == np.round(known)).all()
                    and ((known >= 0) & (known <= 255)).all()):
                raise _refuse(f"{label}: the known categories of feature {int(f)} are not codes 0..255.")

    flat, labels, node_total = [], [], 0
    for it, stage in enumerate(predictors):
        if not isinstance(stage, (list, tuple)) or len(stage) != K:
            raise _refuse(f"{label}._predictors[{it}] does not hold {K} tree(s).")
        for k, pred in enumerate(stage):
            lab = f"{label}._predictors[{it}][{k}]"
            if not isinstance(pred, TreePredictor):
                raise _refuse(f"{lab} is a {type(pred).__name__}, not a TreePredictor.")
            nodes = getattr(pred, "nodes", None)
            names = getattr(getattr(nodes, "dtype", None), "names", None) or ()
            need = ("value", "count", "feature_idx", "num_threshold", "missing_go_to_left", "left",
                    "right", "depth", "is_leaf", "is_categorical", "bitset_idx")
            if not isinstance(nodes, np.ndarray) or nodes.ndim != 1 or any(f not in names for f in need):
                raise _refuse(f"{lab}: its nodes are not the structured array scikit-learn stores.")
            node_total += len(nodes)
            if node_total > limits.limit("nodes"):
                raise InvalidModelError(
                    f"{label} has more than {node_total:,} tree nodes, {limits.over('nodes')}."
                )
            flat.append(pred)
            labels.append(lab)

    max_depth = 0
    start = 0
    while start < len(flat):
        stop, count = start, 0
        while stop < len(flat) and (count == 0 or count + len(flat[stop].nodes) <= _BATCH_NODES):
            count += len(flat[stop].nodes)
            stop += 1
        group = flat[start:stop]
        arrays = [p.nodes for p in group]
        offsets = np.concatenate([[0], np.cumsum([len(a) for a in arrays])])
        cat = lambda f: np.concatenate([a[f] for a in arrays])  # noqa: E731
        is_leaf = cat("is_leaf") != 0
        is_cat = (cat("is_categorical") != 0) & ~is_leaf
        left = np.where(is_leaf, -1, cat("left").astype(np.int64))
        right = np.where(is_leaf, -1, cat("right").astype(np.int64))
        where = lambda t, node, s=start: labels[s + t] + ("" if node is None else f", node {node}")  # noqa: E731
        # numeric splits: the threshold must let values through (NaN never does)
        thr = np.where(is_cat, 0.0, cat("num_threshold"))
        depths = check_trees(left, right, offsets, where=where, feature=cat("feature_idx"),
                             n_features=n_features, threshold=thr)
        values = cat("value")
        if not np.isfinite(values[is_leaf]).all():
            i = int(np.flatnonzero(is_leaf & ~np.isfinite(values))[0])
            t = int(np.searchsorted(offsets, i, side="right") - 1)
            raise _refuse(f"{where(t, i - int(offsets[t]))}: the leaf value is not a finite number.")
        for j, pred in enumerate(group):
            a, b = offsets[j], offsets[j + 1]
            if is_cat[a:b].any():
                _check_hgb_categorical(pred, is_cat[a:b], cat_mask, labels[start + j])
            stored = pred.nodes["depth"].astype(np.int64)
            if int(stored.max()) != int(depths[j]):
                raise _refuse(
                    f"{labels[start + j]} states depth {int(stored.max())} but its nodes are "
                    f"{int(depths[j])} levels deep."
                )
        max_depth = max(max_depth, int(depths.max()))
        start = stop
    return n_trees, node_total, max_depth


def _check_hgb_categorical(pred, is_cat, cat_mask, label: str) -> None:
    nodes = pred.nodes
    rows = []
    for name in ("raw_left_cat_bitsets", "binned_left_cat_bitsets"):
        bits = getattr(pred, name, None)
        if not isinstance(bits, np.ndarray) or bits.ndim != 2 or bits.shape[1] != 8 or bits.dtype != np.uint32:
            raise _refuse(f"{label}.{name} is not an array of 8-word bitsets.")
        rows.append(bits.shape[0])
    idx = nodes["bitset_idx"].astype(np.int64)
    bad = is_cat & (idx >= min(rows))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _refuse(f"{label}, node {i}: bitset {int(idx[i])} of {min(rows)} does not exist.")
    feats = nodes["feature_idx"].astype(np.int64)
    if cat_mask is None or not cat_mask[feats[is_cat]].all():
        i = int(np.flatnonzero(is_cat)[0]) if cat_mask is None else int(
            np.flatnonzero(is_cat & ~cat_mask[np.clip(feats, 0, len(cat_mask) - 1)])[0])
        raise _refuse(f"{label}, node {i}: a categorical split on feature {int(feats[i])}, which the "
                      "model does not treat as categorical.")


# ----------------------------------------------------------- the model walk
class _Walk:
    def __init__(self):
        self.memo: dict[int, tuple[object, int, int]] = {}
        self.active: set[int] = set()
        self.max_depth = 0

    def visit(self, obj, path: str, level: int) -> tuple[int, int]:
        """(trees, nodes) inside ``obj``, not counted again when met a second time."""
        if obj is None or isinstance(obj, (str, bytes, int, float, bool, complex, np.generic)):
            return 0, 0
        if isinstance(obj, np.ndarray) and obj.dtype != object:
            return 0, 0
        key = id(obj)
        if key in self.memo or key in self.active:
            # counted where first met: other references are aliases (a meta-estimator's
            # named_estimators_), while a forest's repeated trees are counted by _family
            return 0, 0
        if level > _MAX_NESTING:
            raise _refuse(f"The model nests estimators more than {_MAX_NESTING} levels deep (at {path}).")
        self.active.add(key)
        try:
            trees, nodes = self._visit(obj, path, level)
        finally:
            self.active.discard(key)
        self.memo[key] = (obj, trees, nodes)
        if trees > limits.limit("trees"):
            raise InvalidModelError(f"The model has {trees:,} trees (at {path}), {limits.over('trees')}.")
        if nodes > limits.limit("nodes"):
            raise InvalidModelError(
                f"The model has {nodes:,} tree nodes (at {path}), {limits.over('nodes')}."
            )
        return trees, nodes

    def _children(self, items, path, level, fmt):
        t = n = 0
        for k, v in items:
            a, b = self.visit(v, fmt(path, k), level + 1)
            t, n = t + a, n + b
        return t, n

    def _visit(self, obj, path, level):
        if isinstance(obj, (list, tuple)):
            return self._children(enumerate(obj), path, level, lambda p, k: f"{p}[{k}]")
        if isinstance(obj, dict):
            return self._children(obj.items(), path, level, lambda p, k: f"{p}[{k!r}]")
        if isinstance(obj, np.ndarray):  # object arrays (GradientBoosting's estimators_)
            return self._children(
                ((",".join(map(str, ix)), v) for ix, v in np.ndenumerate(obj)), path, level,
                lambda p, k: f"{p}[{k}]")
        if isinstance(obj, _tree_cls()):  # a Tree met outside its estimator: structure only
            (count,) = _check_sk_trees([obj], [path], int(obj.n_features), None)
            return 1, count
        module = type(obj).__module__ or ""
        if not module.startswith("sklearn") and not hasattr(obj, "get_params"):
            return 0, 0
        state = getattr(obj, "__dict__", None)
        if not isinstance(state, dict):
            return 0, 0
        trees, nodes, skip = self._family(obj, path)
        t, n = self._children(((k, v) for k, v in state.items() if k not in skip), path, level,
                              lambda p, k: f"{p}.{k}")
        if "estimators_" in skip and hasattr(obj, "_raw_predict_init"):
            _check_gb_init(obj, path)  # after the walk has checked the init estimator
        return trees + t, nodes + n

    def _family(self, est, path) -> tuple[int, int, tuple]:
        """Trees of a tree model, checked with what the model feeds them; the attributes done here."""
        from sklearn.ensemble._forest import BaseForest
        from sklearn.ensemble._gb import BaseGradientBoosting
        from sklearn.ensemble._hist_gradient_boosting.gradient_boosting import BaseHistGradientBoosting
        from sklearn.tree import BaseDecisionTree

        if isinstance(est, BaseDecisionTree) and "tree_" in vars(est):
            n_feat = _n_features(est, path, getattr(est.tree_, "n_features", None))
            (count,) = _check_sk_trees([est.tree_], [f"{_label(path, est)}.tree_"], n_feat,
                                       getattr(est, "n_outputs_", None))
            self.max_depth = max(self.max_depth, int(est.tree_.max_depth))
            return 1, count, ("tree_",)
        if isinstance(est, BaseHistGradientBoosting) and "_predictors" in vars(est):
            _n_features(est, path, None)
            trees, nodes, depth = _check_hgb(est, f"{_label(path, est)}")
            self.max_depth = max(self.max_depth, depth)
            return trees, nodes, ("_predictors",)
        if isinstance(est, (BaseForest, BaseGradientBoosting)) and "estimators_" in vars(est):
            ests = est.estimators_
            if isinstance(est, BaseGradientBoosting):
                K = int(getattr(est, "n_trees_per_iteration_", 1))
                if not (isinstance(ests, np.ndarray) and ests.ndim == 2 and ests.shape[1] == K):
                    raise _refuse(f"{_label(path, est)}.estimators_ is not an array of stages of {K} tree(s).")
                if int(getattr(est, "n_estimators_", ests.shape[0])) != ests.shape[0]:
                    raise _refuse(f"{_label(path, est)} states {int(est.n_estimators_)} stages but holds {ests.shape[0]}.")
                items = [(f"[{i},{k}]", ests[i, k]) for i in range(ests.shape[0]) for k in range(K)]
                n_outputs = 1
            else:
                if not isinstance(ests, list):
                    raise _refuse(f"{_label(path, est)}.estimators_ is not a list of trees.")
                if len(ests) != int(getattr(est, "n_estimators", len(ests))):
                    raise _refuse(
                        f"{_label(path, est)} states n_estimators={int(est.n_estimators)} but holds {len(ests)} trees."
                    )
                items = [(f"[{i}]", e) for i, e in enumerate(ests)]
                n_outputs = getattr(est, "n_outputs_", None)
            if len(items) > limits.limit("trees"):
                raise InvalidModelError(f"{_label(path, est)} has {len(items):,} trees, {limits.over('trees')}.")
            if not len(items):
                raise _refuse(f"{_label(path, est)} holds no trees.")
            n_feat = _n_features(est, path, None)
            unique: dict[int, int] = {}
            trees, labels = [], []
            for sub, tree_est in items:
                if not isinstance(tree_est, BaseDecisionTree) or "tree_" not in vars(tree_est):
                    raise _refuse(f"{_label(path, est)}.estimators_{sub} is a {type(tree_est).__name__}, "
                                  "not a fitted decision tree.")
                if id(tree_est.tree_) not in unique:
                    unique[id(tree_est.tree_)] = len(trees)
                    trees.append(tree_est.tree_)
                    labels.append(f"{_label(path, est)}.estimators_{sub}")
                own = getattr(tree_est, "n_features_in_", n_feat)
                if int(own) != n_feat:
                    raise _refuse(f"{_label(path, est)}.estimators_{sub} was fitted on {int(own)} features, "
                                  f"the model on {n_feat}.")
            counts = _check_sk_trees(trees, labels, n_feat, n_outputs)
            nodes = sum(counts[unique[id(e.tree_)]] for _, e in items)
            self.max_depth = max([self.max_depth] + [int(t.max_depth) for t in trees])
            if nodes > limits.limit("nodes"):
                raise InvalidModelError(f"{_label(path, est)} has {nodes:,} tree nodes, {limits.over('nodes')}.")
            return len(items), nodes, ("estimators_",)
        return 0, 0, ()


def _label(path: str, est) -> str:
    """``path`` naming an estimator, with its class unless the path already is it."""
    name = type(est).__name__
    return path if path == name or path.endswith(f"({name})") else f"{path} ({name})"


def _n_features(est, path: str, fallback) -> int:
    n = getattr(est, "n_features_in_", fallback)
    if n is None:
        raise _refuse(f"{_label(path, est)} does not record how many features it was fitted on.")
    try:
        n = int(n)
    except (TypeError, ValueError):
        raise _refuse(f"{_label(path, est)}.n_features_in_ is not a number.") from None
    if n < 1:
        raise _refuse(f"{_label(path, est)} states {n} features.")
    if n > limits.limit("features"):
        raise InvalidModelError(
            f"{_label(path, est)} reads {n:,} features, {limits.over('features')}."
        )
    return n


def _check_gb_init(est, path: str) -> None:
    """GradientBoosting adds its trees into the init prediction's columns: they must agree."""
    import warnings

    ests = est.estimators_
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = est._raw_predict_init(np.zeros((1, int(est.n_features_in_)), dtype=np.float32))
    except Exception as exc:  # noqa: BLE001 - any failure of the init estimator is a bad model
        raise _refuse(f"{_label(path, est)}: its init estimator cannot predict "
                      f"({type(exc).__name__}: {exc}).") from None
    raw = np.asarray(raw)
    if raw.ndim != 2 or raw.shape[1] != ests.shape[1]:
        raise _refuse(f"{_label(path, est)}: its init prediction has shape {raw.shape}, but "
                      f"each stage holds {ests.shape[1]} tree(s).")


def validate_model(model, name: str = "model") -> ModelStats:
    """Check every tree inside a fitted model before anything walks it.

    Walks pipelines, column transformers, meta-estimators and any estimator
    attribute holding estimators (or lists and arrays of them), and checks each
    scikit-learn ``Tree`` and HistGradientBoosting ``TreePredictor`` found (see
    the module docstring for what is checked).

    Returns
    -------
    ModelStats
        Trees and nodes (a shared tree counted once per use) and the deepest tree.

    Raises
    ------
    InvalidModelError
        What is wrong, where (estimator, tree, node), and how to fix it; or which
        limit of :mod:`explainers.limits` the model exceeds.
    """
    walk = _Walk()
    try:
        top = getattr(model, "n_features_in_", None)
    except Exception:  # noqa: BLE001 - a property of a half-fitted meta-estimator
        top = None
    if top is not None:
        try:
            n_top = int(top)
        except (TypeError, ValueError):
            raise _refuse(f"The {type(model).__name__}'s n_features_in_ is not a number.") from None
        if n_top > limits.limit("features"):
            raise InvalidModelError(
                f"The {type(model).__name__} reads {n_top:,} features, {limits.over('features')}."
            )
    try:
        trees, nodes = walk.visit(model, name, 0)
    except RecursionError:
        raise _refuse("The model nests objects too deeply to check.") from None
    return ModelStats(trees=trees, nodes=nodes, max_depth=walk.max_depth)
