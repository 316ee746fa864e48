"""Predictions of a tree model on synthetic rows, by the compiled group walk.

ExactShap and KernelShap on a tree model spend their time predicting the
synthetic rows ``(x_S, b_~S)``. scikit-learn walks each row down each tree on
its own, one mispredicted branch per node; the flattened ensemble
(:func:`explainers.trees.flatten_model`) walks a block of rows down each
tree together, partitioning it at each split in one branch-free pass
(:meth:`explainers.trees.ensemble.TreeEnsemble.tree_sums`: the group walk, or the mask walk
where the trees fit it). Same trees, same routing
(NaN directions, float32 rounding of scikit-learn trees), the model's own
output link: the predictions agree with ``predict`` / ``predict_proba`` /
``decision_function`` to rounding (the tree sums are added in another order).

A whole game at once (:meth:`TreePredictor.game_values`) goes further: a tree
reads only the features it splits on, ``F_t``, so on the synthetic rows of one
explained row x and one background row b it takes at most ``2**|F_t|``
distinct paths, one per choice of x or b on each feature of ``F_t``. One walk
per (x, b, tree) follows both ways only where x and b part (the side taken
fixes that feature's choice), fills the leaf value of every choice, and each
coalition then reads its value by its choices on ``F_t``. Every coalition is
still evaluated on every background row, exactly; the model is simply not
asked ``2**p`` times for what it can only answer ``2**|F_t|`` ways.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..description import describe
from ..trees import flatten_model
from ..trees.walks import goes_left, rules_of
from ..errors import InvalidModelError
from ..model import ModelAdapter

_EPS = 1e-15  # ModelAdapter's clip for log-odds

#: rows walked down each tree together (one block per compiled task)
_BLOCK_ROWS = 2048
#: the whole-game walk is used when trees split on at most this many distinct features
_MAX_TREE_FEATURES = 16


class TreePredictor:
    """The adapter's output columns for numeric rows, from the flattened trees."""

    def __init__(self, ens, kind: str, n_cols: int):
        self.ens = ens
        self.kind = kind  # "value" | "margin" | "proba" | "log_odds"
        self.n_cols = n_cols
        self.nodes, self.thr = ens.packed_nodes
        # per tree: its distinct split features, and each feature's bit position in it
        T, p = ens.n_trees, ens.n_features
        self.n_tree_features = np.zeros(T, dtype=np.int64)
        self.bit = np.full((T, p), -1, dtype=np.int64)
        self.tree_features = []
        for t in range(T):
            f = ens.feature[ens.node_offsets[t] : ens.node_offsets[t + 1]]
            used = np.unique(f[f >= 0]).astype(np.int64)
            self.tree_features.append(used)
            self.n_tree_features[t] = len(used)
            self.bit[t, used] = np.arange(len(used))

    @classmethod
    def build(cls, adapter: ModelAdapter) -> TreePredictor | None:
        """A TreePredictor when the model is a supported tree model, else None."""
        model = adapter.model
        if type(adapter) is not ModelAdapter or not describe(model).tree:
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
        ens = self.ens
        raw = ens.base[None, :] + ens.scale * ens.tree_sums(ens.prepare_inputs(X), _BLOCK_ROWS)
        if self.kind == "margin":
            return raw
        out = ens.transform_raw(raw)
        if self.kind == "log_odds":
            pr = np.clip(out, _EPS, 1 - _EPS)
            return np.log(pr) - np.log1p(-pr)
        return out

    def game_fits(self, n_coalitions: int) -> bool:
        """Whether :meth:`game_values` pays off for this many coalitions."""
        # per (row, background row, tree): the walk fills 2**|F_t| choices and each
        # coalition reads one; predicting the synthetic rows walks each coalition's
        # row down the tree (about ten nodes) instead
        m = self.n_tree_features
        return (len(m) > 0 and int(m.max()) <= _MAX_TREE_FEATURES
                and float(np.mean(2.0 ** m)) <= 2 * n_coalitions)

    def game_values(self, x: np.ndarray, bg: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """Outputs on every synthetic row: shape (r, c, B, n_cols) for rows x (r, p),
        background bg (B, p) and coalitions Z (c, p; True takes x)."""
        ens = self.ens
        xw, bw = ens.prepare_inputs(x), ens.prepare_inputs(bg)
        T = ens.n_trees
        codes = np.zeros((T, len(Z)), dtype=np.int64)
        for t, used in enumerate(self.tree_features):
            if len(used):
                codes[t] = (Z[:, used].astype(np.int64) << np.arange(len(used), dtype=np.int64)).sum(axis=1)
        sums = np.zeros((len(xw), len(Z), len(bw), ens.n_raw))
        _game_sums(xw, bw, self.nodes, ens.threshold, ens.missing_go_left, *rules_of(ens), ens.value, ens.roots,
                   self.bit,
                   self.n_tree_features, codes, ens.max_depth, sums)
        raw = ens.base + ens.scale * sums
        if self.kind == "margin":
            return raw
        flat = ens.transform_raw(raw.reshape(-1, ens.n_raw))
        if self.kind == "log_odds":
            pr = np.clip(flat, _EPS, 1 - _EPS)
            flat = np.log(pr) - np.log1p(-pr)
        return flat.reshape(*sums.shape[:3], -1)


@njit(cache=True, nogil=True, parallel=True)
def _game_sums(xw, bw, nodes, threshold, missing_left, cat_start, cat_bits, value, roots, bit, tree_m, codes,
               max_depth, sums):  # pragma: no cover
    """``sums[i, q, b] += value_t(leaf of coalition q's synthetic row of x_i and b_b)`` over trees t."""
    r = xw.shape[0]
    B = bw.shape[0]
    c = codes.shape[1]
    R = value.shape[1]
    depth = max_depth + 2
    for job in prange(r * B):
        i = job // B
        b = job % B
        vals = np.empty((1 << tree_m.max(), R))
        s_node = np.empty(depth, np.int64)
        s_on = np.empty(depth, np.int64)
        s_off = np.empty(depth, np.int64)
        acc = np.zeros((c, R))  # this (x, b) pair's sums, contiguous
        for t in range(roots.shape[0]):
            s_node[0] = roots[t]
            s_on[0] = 0
            s_off[0] = 0
            sp = 1
            mask = (1 << tree_m[t]) - 1
            while sp > 0:
                sp -= 1
                node = s_node[sp]
                on = s_on[sp]  # choices fixed to x (bits of the tree's features)
                off = s_off[sp]  # choices fixed to the background row
                while True:
                    f = nodes[node, 0]
                    if f < 0:
                        # every choice u with on in u and off outside u lands here
                        free = ~(on | off) & mask
                        sub = free
                        while True:
                            u = on | sub
                            for k in range(R):
                                vals[u, k] = value[node, k]
                            if sub == 0:
                                break
                            sub = (sub - 1) & free
                        break
                    k = bit[t, f]
                    m = 1 << k
                    if on & m:
                        left = goes_left(xw[i, f], node, threshold, missing_left, cat_start, cat_bits)
                    elif off & m:
                        left = goes_left(bw[b, f], node, threshold, missing_left, cat_start, cat_bits)
                    else:
                        lx = goes_left(xw[i, f], node, threshold, missing_left, cat_start, cat_bits)
                        lb = goes_left(bw[b, f], node, threshold, missing_left, cat_start, cat_bits)
                        if lx == lb:
                            left = lx
                        else:  # x and b part here: follow both, fixing this feature's choice
                            s_node[sp] = nodes[node, 1] if lb else nodes[node, 2]
                            s_on[sp] = on
                            s_off[sp] = off | m
                            sp += 1
                            on = on | m
                            left = lx
                    node = nodes[node, 1] if left else nodes[node, 2]
            for q in range(c):
                u = codes[t, q]
                for k in range(R):
                    acc[q, k] += vals[u, k]
        for q in range(c):
            for k in range(R):
                sums[i, q, b, k] = acc[q, k]
