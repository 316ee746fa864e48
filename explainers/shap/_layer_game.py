"""The coalition game of a small network without building synthetic rows.

For an MLP with one hidden layer, or a linear / logistic model (bare, or behind
column-wise scalers in a Pipeline: :func:`explainers.effects._layers.first_layer_plan`),
the model's first pre-activation on the synthetic row ``(x_S, b_~S)`` is::

    A(S, b) = A(empty, b) + sum_{j in S} (xs_j - bs_j) W[j]

(``xs``, ``bs`` the scaled row and background row). A coalition and the same
coalition less one player differ by one term, so over the whole lattice of
ExactShap each ``A(S, b)`` costs one vector addition from its parent instead
of a full ``(p x H)`` product, and no synthetic row is ever materialised. The
hidden activation and the output layer are applied in the same compiled pass;
the output head (softmax, logistic, log-odds, class pick) then runs with
scikit-learn's own functions, as ``predict_proba`` does.

The value function is unchanged: ``v(S) = mean_b f(x_S, b_~S)`` for every
coalition and background row; only the arithmetic is regrouped, so values
agree with the synthetic-row path to rounding (~1e-14).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from numba import njit, prange

from ..effects._layers import _scaled, finish_network, first_layer_plan

#: hidden activations the compiled pass knows, by scikit-learn's names
_ACTIVATIONS = {"relu": 0, "tanh": 1, "logistic": 2, "identity": 3}


class LayerGame:
    """``v(S)`` for a network's coalitions, from its first layer (see module doc)."""

    def __init__(self, adapter, plan, background: pd.DataFrame, batch_rows: int):
        self.adapter = adapter
        self.batch_rows = int(batch_rows)
        self.plan = plan
        self.bs = _scaled(plan, background, adapter._model_input(background))
        self.W0 = np.ascontiguousarray(plan.W0)
        self.A_bg = self.bs @ self.W0 + plan.b0
        if plan.layers:
            W1, b1 = plan.layers[0]
            self.W1T = np.ascontiguousarray(np.asarray(W1, dtype=np.float64).T)
            self.b1 = np.ascontiguousarray(np.asarray(b1, dtype=np.float64))
            self.act = _ACTIVATIONS[plan.activation]
        else:  # a linear model: the first layer is the output
            self.W1T, self.b1, self.act = np.zeros((1, 1)), np.zeros(1), -1

    @classmethod
    def build(cls, adapter, background: pd.DataFrame, batch_rows: int) -> LayerGame | None:
        """A LayerGame when the model is covered (at most one hidden layer), else None."""
        plan = first_layer_plan(adapter, background, [])
        if plan is None or len(plan.layers) > 1:
            return None
        if plan.layers and plan.activation not in _ACTIVATIONS:
            return None
        if not np.isfinite(background.to_numpy(dtype=np.float64)).all():
            return None
        return cls(adapter, plan, background, batch_rows)

    def values(self, x: pd.DataFrame, Z: np.ndarray) -> np.ndarray | None:
        """``v`` of shape (r, c, k) for the rows of ``x`` and coalitions ``Z``; None if x does not fit."""
        if not all(x[col].dtype == np.float64 for col in x.columns):
            return None
        xs = _scaled(self.plan, x, self.adapter._model_input(x))
        if xs.shape[1] != self.W0.shape[0] or not np.isfinite(xs).all():
            return None
        Zb = np.ascontiguousarray(Z, dtype=np.uint8)
        parent, added, order = _parents(Z)
        r, c, B = len(xs), len(Z), len(self.bs)
        K1 = self.W1T.shape[0] if self.act >= 0 else self.W0.shape[1]
        # background rows per pass: at most batch_rows synthetic rows' outputs in memory
        per = max(1, min(B, self.batch_rows // max(1, r * c)))
        total = None
        for b0 in range(0, B, per):
            nb = min(B, b0 + per) - b0
            out = np.empty((r, c, nb, K1))
            _game_pass(xs, self.bs[b0 : b0 + nb], self.A_bg[b0 : b0 + nb], self.W0, Zb, parent, added,
                       order, self.act, self.W1T, self.b1, out)
            Y = finish_network(self.plan, out.reshape(-1, K1), [], None)
            part = Y.reshape(r, c, nb, -1).sum(axis=2)
            total = part if total is None else total + part
        return total / B


def _parents(Z: np.ndarray):
    """For each coalition: the index in Z of the same coalition less its lowest player
    (-1 if absent), that player, and an order in which parents come first."""
    c, p = Z.shape
    size = Z.sum(axis=1)
    order = np.argsort(size, kind="stable").astype(np.int64)
    parent = np.full(c, -1, dtype=np.int64)
    added = np.zeros(c, dtype=np.int64)
    if p <= 62:
        codes = (Z.astype(np.int64) << np.arange(p, dtype=np.int64)).sum(axis=1)
        low = codes & -codes
        index = {int(code): q for q, code in enumerate(codes)}
        for q in range(c):
            if low[q]:
                parent[q] = index.get(int(codes[q] ^ low[q]), -1)
                added[q] = int(low[q]).bit_length() - 1
    return parent, added, order


@njit(cache=True, nogil=True, inline="always")
def _activate(v, act):  # pragma: no cover - compiled
    if act == 0:
        return max(0.0, v)
    if act == 1:
        return np.tanh(v)
    if act == 2:
        return 1.0 / (1.0 + np.exp(-v))
    return v


@njit(cache=True, nogil=True, parallel=True, fastmath={"reassoc", "contract"})
def _game_pass(xs, bs, A_bg, W0, Zb, parent, added, order, act, W1T, b1, out):  # pragma: no cover - compiled
    """``out[i, z, b]``: the output layer's pre-activation (or, with ``act < 0``, the
    first layer's) on the synthetic row of x_i, coalition z and background row b."""
    r, p = xs.shape
    B = bs.shape[0]
    c = Zb.shape[0]
    H = W0.shape[1]
    K1 = W1T.shape[0]
    for job in prange(r * B):
        i = job // B
        b = job % B
        table = np.empty((c, H))
        d = np.empty(p)
        for j in range(p):
            d[j] = xs[i, j] - bs[b, j]
        for q in range(c):
            z = order[q]
            par = parent[z]
            row = table[z]
            if par >= 0:
                j = added[z]
                dj = d[j]
                prow = table[par]
                for h in range(H):
                    row[h] = prow[h] + dj * W0[j, h]
            else:
                for h in range(H):
                    row[h] = A_bg[b, h]
                for j in range(p):
                    if Zb[z, j]:
                        dj = d[j]
                        for h in range(H):
                            row[h] += dj * W0[j, h]
            if act >= 0:
                for k in range(K1):
                    acc = b1[k]
                    for h in range(H):
                        acc += _activate(row[h], act) * W1T[k, h]
                    out[i, z, b, k] = acc
            else:
                for h in range(H):
                    out[i, z, b, h] = row[h]
