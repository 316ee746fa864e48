"""Predictions of a tree model on synthetic rows, by the compiled group walk.

ExactShap and KernelShap on a tree model spend their time predicting the
synthetic rows ``(x_S, b_~S)``. scikit-learn walks each row down each tree on
its own, one mispredicted branch per node; the flattened ensemble
(:func:`explainers._trees.flatten_model`) walks a block of rows down each
tree together, partitioning it at each split in one branch-free pass
(:func:`explainers._pdp_kernels.tree_sums_kernel`). Same trees, same routing
(NaN directions, float32 rounding of scikit-learn trees), the model's own
output link: the predictions agree with ``predict`` / ``predict_proba`` /
``decision_function`` to rounding (the tree sums are added in another order).
"""
from __future__ import annotations

import numpy as np

from .._trees import flatten_model, is_tree_model
from ..errors import InvalidModelError
from ..model import ModelAdapter

_EPS = 1e-15  # ModelAdapter's clip for log-odds

#: rows walked down each tree together (one block per compiled task)
_BLOCK_ROWS = 2048


class TreePredictor:
    """The adapter's output columns for numeric rows, from the flattened trees."""

    def __init__(self, ens, kind: str, n_cols: int):
        from .._pdp_kernels import pack_nodes

        self.ens = ens
        self.kind = kind  # "value" | "margin" | "proba" | "log_odds"
        self.n_cols = n_cols
        self.nodes, self.thr = pack_nodes(ens.feature, ens.threshold, ens.left, ens.right)

    @classmethod
    def build(cls, adapter: ModelAdapter) -> TreePredictor | None:
        """A TreePredictor when the model is a supported tree model, else None."""
        model = adapter.model
        if type(adapter) is not ModelAdapter or not is_tree_model(model):
            return None
        try:
            ens = flatten_model(model)
        except InvalidModelError:
            return None
        n_cols = adapter._n_cols
        if adapter.task == "regression":
            kind = "value"
        elif adapter.output == "raw" and hasattr(model, "decision_function"):
            if ens.transform not in ("sigmoid", "softmax"):
                return None
            kind = "margin"  # boosting: decision_function is the raw score
        elif adapter.output == "log_odds":
            kind = "log_odds"
        else:
            kind = "proba"
        width = ens.n_raw if kind == "margin" else (2 if ens.transform == "sigmoid" else ens.n_raw)
        if width != n_cols:
            return None
        return cls(ens, kind, n_cols)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Outputs of shape (n, n_cols) for float rows in the model's column order."""
        from .._pdp_kernels import tree_sums_kernel

        ens = self.ens
        Xw = ens.prepare_inputs(X)
        sums = np.empty((len(Xw), ens.n_raw))
        tree_sums_kernel(Xw, self.nodes, self.thr, ens.missing_go_left, ens.value, ens.roots,
                         ens.max_depth, _BLOCK_ROWS, sums)
        raw = ens.base[None, :] + ens.scale * sums
        if self.kind == "margin":
            return raw
        out = ens.transform_raw(raw)
        if self.kind == "log_odds":
            pr = np.clip(out, _EPS, 1 - _EPS)
            return np.log(pr) - np.log1p(-pr)
        return out
