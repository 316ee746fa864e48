"""Brute-force partial dependence with a shared first affine layer.

For an MLP or a linear model (bare, or behind column-wise scalers in a
Pipeline) the brute-force PD/ICE is still the brute-force definition
``f(v, x_{i,C})`` for every row i and grid point v, but the model's first affine
layer need not be recomputed from scratch for every grid point: with
``Xs`` the scaled rows and ``A0 = Xs @ W + b`` (computed once), overwriting
feature j by v only changes column j of ``Xs`` to ``s_j(v)`` (the scalers act
column by column), so the first pre-activation is the rank-1 update::

    A(v) = A0 + (s_j(v) - Xs[:, j]) * W[j]

(two rank-1 updates for two features). The rest of the network (hidden
activations, further layers, output activation or link) is then run with the
same scikit-learn functions as ``predict``/``predict_proba``, so the values
match scikit-learn's ``partial_dependence(method="brute")`` to rounding
(~1e-15). Anything not covered returns ``None`` from :func:`first_layer_plan`
and the generic brute path is used instead.

ReLU networks go one layer further. For one row, each first-layer unit
``a_k + v w_k`` is affine in the grid value v, so over the grid it is either
never positive (ReLU gives 0 everywhere), always positive (ReLU is the
identity), or it changes sign once. The next layer's pre-activation over the
whole grid is then::

    Z(v) = b + sum_{k always on} (a_k + v w_k) W[k] + sum_{k switching} relu(a_k + v w_k) W[k]
         = C + v D + (a few switching units)

with ``C`` and ``D`` computed once per row, instead of one full
``(H x H')`` product per grid point. :func:`_relu_next_layer` does this for a
block of rows (compiled); deeper layers and the output head run as before.
The sums are regrouped, so values agree with scikit-learn to rounding
(~1e-13), not bit for bit.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

#: values held per activation buffer (rows x units) in one pass of the network
_BLOCK_VALUES = 262_144
_EPS = 1e-15


def _types():
    from sklearn.linear_model import (
        ElasticNet,
        Lasso,
        LinearRegression,
        LogisticRegression,
        Ridge,
        SGDRegressor,
    )
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, RobustScaler, StandardScaler

    scalers = (StandardScaler, MinMaxScaler, MaxAbsScaler, RobustScaler)
    mlps = (MLPRegressor, MLPClassifier)
    linear_reg = (LinearRegression, Ridge, Lasso, ElasticNet, SGDRegressor)
    return scalers, mlps, linear_reg, LogisticRegression


class _Plan:
    """What the shared-first-layer evaluation needs (all float64 arrays)."""

    def __init__(self, pre, W0, b0, layers, hidden, head, select, relu=False, activation=None):
        self.pre = pre          # list of fitted column-wise scalers, applied in order
        self.W0 = W0            # (p, H) first-layer weights
        self.b0 = b0            # (H,) first-layer bias
        self.layers = layers    # [(W, b), ...] further layers (MLP only)
        self.hidden = hidden    # in-place hidden activation (MLP only)
        self.head = head        # (rows, last width) pre-output -> (rows, adapter columns)
        self.select = select    # class_index or None
        self.relu = relu        # hidden activation is ReLU: the second layer is piecewise affine
        self.activation = activation  # the MLP's hidden activation name (None: no hidden layer)


def _f64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def first_layer_plan(adapter, frame, grids):
    """A :class:`_Plan` when the shared-first-layer brute path applies, else None."""
    from ..model import ModelAdapter

    if type(adapter) is not ModelAdapter:  # a subclass may predict differently
        return None
    if not all(frame[c].dtype == np.float64 for c in frame.columns):
        return None
    if not all(np.asarray(g).dtype.kind in "fiub" for g in grids):
        return None
    try:
        scalers, mlps, linear_reg, logistic = _types()
    except ImportError:  # pragma: no cover
        return None
    split = _split_scalers(adapter.model, scalers)
    if split is None:
        return None
    pre, final = split
    if type(final) in mlps:
        parts = _mlp_parts(final, adapter)
    elif type(final) in linear_reg:
        parts = _linear_parts(final, adapter)
    elif type(final) is logistic:
        parts = _logistic_parts(final, adapter)
    else:
        return None
    if parts is None:
        return None
    W0, b0, layers, hidden, head, relu, activation = parts
    W0 = _f64(W0)
    b0 = _f64(b0)
    if W0.ndim != 2 or W0.shape[0] != frame.shape[1]:
        return None
    return _Plan(pre, W0, b0, layers, hidden, head, adapter.class_index, relu, activation)


def _split_scalers(model, scalers):
    """(column-wise scalers in order, final estimator), or None if another step comes first."""
    from sklearn.pipeline import Pipeline

    if type(model) is not Pipeline:
        return [], model
    pre = []
    steps = [est for _, est in model.steps]
    for est in steps[:-1]:
        if est is None or (isinstance(est, str) and est == "passthrough"):
            continue
        if type(est) not in scalers:
            return None
        pre.append(est)
    return pre, steps[-1]


def _mlp_parts(final, adapter):
    """First layer, further layers, activations and output head of an MLP, or None."""
    from sklearn.neural_network._base import ACTIVATIONS

    coefs, inter = list(final.coefs_), list(final.intercepts_)
    if any(np.asarray(c).dtype != np.float64 for c in coefs + inter):
        return None
    out_act = ACTIVATIONS[final.out_activation_]
    if adapter.task == "regression":
        if final.out_activation_ not in ("identity", "exp"):  # exp: poisson loss
            return None

        def head(A):
            out_act(A)
            return A
    else:
        k = len(adapter.classes)
        if final.out_activation_ == "logistic" and final.n_outputs_ == 1 and k == 2:
            def proba(A):
                out_act(A)
                y = A.ravel()
                return np.vstack([1 - y, y]).T
        elif final.out_activation_ == "softmax" and final.n_outputs_ == k:
            def proba(A):
                out_act(A)
                return A
        else:  # multilabel or something unexpected
            return None
        # an MLPClassifier has no decision function: ModelAdapter refuses output="raw" for it
        head = _classifier_head(proba, None, adapter.output, k)
        if head is None:
            return None
    layers = list(zip(coefs[1:], inter[1:]))
    hidden = ACTIVATIONS[final.activation]
    return coefs[0], inter[0], layers, hidden, head, final.activation == "relu", final.activation


def _linear_parts(final, adapter):
    """The one affine layer of a linear regressor, or None for a classifier."""
    if adapter.task != "regression":
        return None
    coef = _f64(final.coef_)
    W0 = coef.reshape(-1, 1) if coef.ndim == 1 else coef.T
    b0 = np.broadcast_to(_f64(final.intercept_), (W0.shape[1],))

    def head(A):
        return A

    return W0, b0, [], None, head, False, None


def _logistic_parts(final, adapter):
    """The affine layer and probability head of a logistic regression, or None."""
    if adapter.task == "regression":
        return None
    from scipy.special import expit
    from sklearn.utils.extmath import softmax

    k = len(adapter.classes)
    coef = _f64(final.coef_)
    if coef.ndim != 2 or coef.shape[0] != (1 if k == 2 else k):
        return None
    W0 = coef.T
    b0 = np.broadcast_to(_f64(final.intercept_), (W0.shape[1],))
    if k == 2:  # LinearClassifierMixin._predict_proba_lr
        def proba(A):
            y = expit(A.ravel())
            return np.stack([1 - y, y], axis=1)
    else:  # LogisticRegression.predict_proba: softmax of the decision function
        def proba(A):
            return softmax(A, copy=False)
    head = _classifier_head(proba, lambda A: A, adapter.output, k)
    if head is None:
        return None
    return W0, b0, [], None, head, False, None


def _classifier_head(proba, margin, output, k):
    """The adapter's classifier output (ModelAdapter._output_function) from the last layer."""
    if output == "raw" and margin is not None:
        return margin  # decision_function: one column (binary) or k columns
    if output == "log_odds":
        def log_odds(A):
            pr = np.clip(proba(A), _EPS, 1 - _EPS)
            return np.log(pr) - np.log1p(-pr)

        return log_odds
    if output in ("auto", "proba", "raw"):
        return proba
    return None


def _scaled(plan, frame, model_input):
    Xt = model_input
    for est in plan.pre:
        Xt = est.transform(Xt)
    return np.ascontiguousarray(_f64(Xt))


def finish_network(plan, A: np.ndarray, layers, bufs) -> np.ndarray:
    """Pre-activations A (rows, units) through ``layers`` (hidden activation, then
    the layer), the output head and the class pick: the adapter's columns, (rows, k).

    ``bufs`` are two flat buffers the layers write into in turn (None when
    ``layers`` is empty).
    """
    rows = A.shape[0]
    for li, (W, bias) in enumerate(layers):
        plan.hidden(A)
        nxt = bufs[(li + 1) % 2][: rows * W.shape[1]].reshape(rows, W.shape[1])
        A = np.matmul(A, W, out=nxt)
        A += bias
    Y = np.asarray(plan.head(A), dtype=np.float64).reshape(rows, -1)
    if plan.select is not None:
        Y = Y[:, plan.select : plan.select + 1]
    return Y


def first_layer_brute(plan, adapter, frame, names, grids, keep_ice: bool):
    """Exactly what ``pdp._brute`` returns, via a shared first affine layer.

    Returns ``(ice, average)`` with shapes ``(n, *grid_shape, K)`` and
    ``(*grid_shape, K)``, or None when the data are not finite (the generic
    path then lets the model raise its own error).
    """
    n = len(frame)
    cols = [frame.columns.get_loc(nm) for nm in names]
    X = frame.to_numpy(dtype=np.float64)
    gvals = [np.asarray(g, dtype=np.float64) for g in grids]
    if not np.isfinite(X).all() or not all(np.isfinite(g).all() for g in gvals):
        return None
    Xs = _scaled(plan, frame, adapter._model_input(frame))
    if Xs.shape != X.shape:
        return None
    # Each scaler maps column j on its own: the scaled grid value is column j of
    # the scaled copy of a few rows with column j set to the grid.
    sg = []
    for col, g in zip(cols, gvals):
        rows = frame.iloc[np.zeros(len(g), dtype=np.int64)].copy()
        rows.iloc[:, col] = g
        sg.append(_scaled(plan, rows, adapter._model_input(rows))[:, col].copy())

    W0, b0 = plan.W0, plan.b0
    A0 = Xs @ W0
    A0 += b0
    for col in cols:  # remove the features' own contribution: A0m + s(v) W[j] is A(v)
        A0 -= Xs[:, col : col + 1] * W0[col]
    shape = tuple(len(g) for g in grids)
    points = np.asarray(list(np.ndindex(*shape)), dtype=np.int64).reshape(-1, len(grids))
    m = len(points)
    K = adapter.n_outputs
    if plan.relu and plan.layers:
        P = np.ascontiguousarray(np.column_stack([sg[j][points[:, j]] for j in range(len(cols))]))
        ice, total = _relu_brute(plan, A0, P, np.ascontiguousarray(W0[cols]), K, keep_ice)
        if keep_ice:
            return ice.reshape(n, *shape, K), ice.mean(axis=0).reshape(*shape, K)
        return None, total.reshape(*shape, K)
    H = W0.shape[1]
    width = max([H] + [W.shape[1] for W, _ in plan.layers])
    # Blocks of rows x grid points small enough to stay in cache through the layers.
    rows_per = max(1, min(n, _BLOCK_VALUES // width))
    pts_per = max(1, rows_per // n) if rows_per >= n else 1
    ice = np.empty((n, m, K)) if keep_ice else None
    total = np.zeros((m, K))
    block = pts_per * min(n, rows_per) * width
    bufs = (np.empty(block), np.empty(block))
    for s in range(0, m, pts_per):
        pts = points[s : s + pts_per]
        b = len(pts)
        shift = np.zeros((b, H))
        for j, col in enumerate(cols):
            shift += sg[j][pts[:, j]][:, None] * W0[col]
        sums = np.zeros((b, K))
        for r in range(0, n, rows_per):
            r1 = min(n, r + rows_per)
            rows = b * (r1 - r)
            # reused buffers: no fresh allocation (and page faults) per block
            A = bufs[0][: rows * H].reshape(b, r1 - r, H)
            np.add(A0[None, r:r1, :], shift[:, None, :], out=A)
            Y = finish_network(plan, A.reshape(rows, H), plan.layers, bufs).reshape(b, r1 - r, K)
            if keep_ice:
                ice[r:r1, s : s + b] = Y.transpose(1, 0, 2)
            sums += Y.sum(axis=1)
        total[s : s + b] = sums / n
    if keep_ice:
        return ice.reshape(n, *shape, K), ice.mean(axis=0).reshape(*shape, K)
    return None, total.reshape(*shape, K)


def _relu_brute(plan, A0, P, Wv, K, keep_ice):
    """ICE (or None) and average over all grid points, through :func:`_relu_next_layer`.

    ``A0`` is the first pre-activation without the varied features' terms,
    ``P`` the (m, n_features) scaled grid points, ``Wv`` their first-layer weights.
    When the second layer is the output layer, the kernel applies it too, so no
    (rows x grid x units) buffer is written; deeper layers run as matrix products.
    """
    n, m = A0.shape[0], P.shape[0]
    W1, b1 = (np.ascontiguousarray(_f64(a)) for a in plan.layers[0])
    rest = plan.layers[1:]
    fuse = len(rest) == 1
    if fuse:
        WoT, bo = np.ascontiguousarray(_f64(rest[0][0]).T), np.ascontiguousarray(_f64(rest[0][1]))
        rest = []
    else:
        WoT, bo = np.zeros((1, 1)), np.zeros(1)
    first = WoT.shape[0] if fuse else W1.shape[1]
    width = max([first] + [W.shape[1] for W, _ in rest])
    rows_per = max(1, min(n, 4 * _BLOCK_VALUES // (m * width)))
    ice = np.empty((n, m, K)) if keep_ice else None
    total = np.zeros((m, K))
    bufs = (np.empty(rows_per * m * width), np.empty(rows_per * m * width))
    for r in range(0, n, rows_per):
        r1 = min(n, r + rows_per)
        rows = (r1 - r) * m
        A = bufs[0][: rows * first].reshape(r1 - r, m, first)
        _relu_next_layer(A0, r, r1, P, Wv, W1, b1, fuse, WoT, bo, A)
        Y = finish_network(plan, A.reshape(rows, first), rest, bufs).reshape(r1 - r, m, K)
        if keep_ice:
            ice[r:r1] = Y
        else:
            total += Y.sum(axis=0)
    return ice, total / n


@njit(cache=True, nogil=True, parallel=True, fastmath={"reassoc", "contract"})
def _relu_next_layer(A0, r0, r1, P, Wv, W1, b1, fuse, WoT, bo, out):  # pragma: no cover - compiled
    """Second-layer pre-activations of rows r0..r1 at every grid point (ReLU first layer).

    ``Z[i, g] = b1 + relu(A0[i] + P[g] @ Wv) @ W1``: units that are on over the
    whole grid (a box, so its corners bound each unit) are folded into
    ``C + P[g] @ D`` once per row; only the units that change sign inside the
    grid are added point by point. ``out[i - r0, g]`` receives ``Z[i, g]``, or
    with ``fuse`` the output layer's pre-activation ``bo + relu(Z[i, g]) @ WoT.T``.
    Sums may be regrouped (``reassoc``: vectorised dot products); inputs are
    finite here (the caller checks), so no other fast-math assumption is made.
    """
    m, nf = P.shape
    H = A0.shape[1]
    H2 = W1.shape[1]
    Ko = WoT.shape[0]
    pmin = np.empty(nf)
    pmax = np.empty(nf)
    for f in range(nf):
        pmin[f] = P[0, f]
        pmax[f] = P[0, f]
        for g in range(1, m):
            pmin[f] = min(pmin[f], P[g, f])
            pmax[f] = max(pmax[f], P[g, f])
    for i in prange(r0, r1):
        C = b1.copy()
        D = np.zeros((nf, H2))
        z2 = np.empty(H2)
        switching = np.empty(H, dtype=np.int64)
        ns = 0
        for k in range(H):
            a = A0[i, k]
            lo = a
            hi = a
            for f in range(nf):
                w = Wv[f, k]
                if w >= 0.0:
                    lo += pmin[f] * w
                    hi += pmax[f] * w
                else:
                    lo += pmax[f] * w
                    hi += pmin[f] * w
            if hi <= 0.0:
                continue  # off at every grid point
            if lo > 0.0:  # on at every grid point: affine in the grid value
                for c in range(H2):
                    C[c] += a * W1[k, c]
                for f in range(nf):
                    w = Wv[f, k]
                    for c in range(H2):
                        D[f, c] += w * W1[k, c]
            else:
                switching[ns] = k
                ns += 1
        o = out[i - r0]
        for g in range(m):
            for c in range(H2):
                z2[c] = C[c]
            for f in range(nf):
                v = P[g, f]
                for c in range(H2):
                    z2[c] += v * D[f, c]
            for s in range(ns):
                k = switching[s]
                z = A0[i, k]
                for f in range(nf):
                    z += P[g, f] * Wv[f, k]
                if z > 0.0:
                    for c in range(H2):
                        z2[c] += z * W1[k, c]
            if fuse:
                for q in range(Ko):
                    acc = bo[q]
                    for c in range(H2):
                        acc += max(z2[c], 0.0) * WoT[q, c]
                    o[g, q] = acc
            else:
                for c in range(H2):
                    o[g, c] = z2[c]
