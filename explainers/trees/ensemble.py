"""The flattened tree ensemble: every tree model, one set of flat arrays.

Each model family has a reader (:mod:`explainers.trees.sklearn` today) that turns a
fitted model into a :class:`TreeEnsemble`: all nodes of all trees stored back to
back in flat arrays, plus the few ensemble-level numbers that turn summed leaf
values into predictions::

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

The tests check each reader's reconstruction against the library's own
``predict`` / ``predict_proba`` (to 1e-12) for every model type.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TreeEnsemble", "TRANSFORMS", "assemble"]

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


def assemble(parts, tree_output, *, base, scale, transform, float32_inputs, n_features, model_name) -> TreeEnsemble:
    """Join per-tree arrays into one :class:`TreeEnsemble`.

    ``parts`` holds one tuple per tree, as a reader produces it:
    ``(feature, threshold, left, right, missing_go_left, value, cover, max_depth)``
    with child indices local to the tree (-1 at leaves); they are offset here to
    global node indices.
    """
    offsets = [0]
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
        model_name=model_name,
    )
