"""Path-dependent Tree SHAP in time linear in depth (the Linear TreeShap family).

Yu et al. (NeurIPS 2022) write a leaf's Shapley values as integrals of one
polynomial. Fix a leaf ``l`` with value ``v`` whose root path splits on the
distinct (unmasked) features ``D`` (``m = |D|``); for a row ``x`` and a feature
``d`` in ``D`` let ``z_d`` be the product of the cover ratios of the path's nodes
on ``d`` and ``o_d`` 1 if ``x`` follows all of them, else 0. The leaf's game is
``g(S) = v prod_{d in S} o_d prod_{d in D \\ S} z_d`` (Lundberg et al. 2020,
Alg. 2), and since ``s! (m-s-1)! / m! = int_0^1 t^s (1-t)^(m-s-1) dt``::

    phi_i = v (o_i - z_i) int_0^1 H(t) / h_i(t) dt,
    h_d(t) = z_d + (o_d - z_d) t,   H(t) = prod_{d in D} h_d(t).

``H / h_i`` is a polynomial of degree ``m - 1``, so Gauss-Legendre quadrature
with ``ceil(m / 2)`` points on (0, 1) integrates it exactly. A walk carries
``H`` at those points down the tree (one multiplication per node: the new
factor of the node's feature over the old one, where the feature repeats) and
sums the leaves' ``v H`` back up; on the way up, the edge into a node on
feature ``d`` adds ``sum_k w_k S(t_k) [(o - z) / h_d(t_k) - (o' - z') / h'_d(t_k)]``
to ``phi_d``, where ``S`` is the subtree's sum and the primed terms belong to the
previous split on ``d`` above it (none: ``z' = o' = 1``, the term is 0). For a leaf
whose path holds ``d`` several times the terms telescope to the one of its last
split on ``d``, which is the integral above. So a row costs
O(nodes x m / 2) per tree instead of the O(leaves x m**2) of the textbook
recursion, with nothing built per model: the cost grows linearly with depth.

One more point, ``t = 1`` with weight 0, carries ``prod o_d``: its subtree sum
is the row's prediction (masked features integrated out by cover).

Rows go through a tree a block at a time: every node is visited for every row
in this game (both children), so a block walks the tree once, the per-node
factors (which depend on ``z`` only) are computed once per block, and the row
loops (selecting by the row's 0/1 ``o`` without branches) vectorise.

Masked (missing) features are not players: their nodes scale the subtree by
the cover ratio. Categorical rules route as everywhere else (``_decisions``).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._tree_kernels import _decisions
from ._walk_kernels import load_block

__all__ = ["LINEAR_BLOCK", "gauss_points", "linear_pd_rows", "linear_pd_interaction_rows", "points_for",
           "tree_quadrature"]

#: rows per block of the linear walk
LINEAR_BLOCK = 64


def points_for(m: int) -> int:
    """Gauss-Legendre points that integrate a leaf polynomial of ``m`` players exactly."""
    return max(1, -(-int(m) // 2))


def tree_quadrature(leaf_m: np.ndarray, left: np.ndarray, node_offsets: np.ndarray, trees: np.ndarray):
    """``(points, gl_t, gl_w)`` for the walk of ``trees``: each tree's quadrature points
    (:func:`points_for` of its largest leaf's player count ``leaf_m``, -1 at internal nodes)
    and the rules of :func:`gauss_points` up to the largest."""
    max_m = np.maximum.reduceat(np.where(left < 0, leaf_m, 0), node_offsets[:-1])[trees]
    points = np.array([points_for(m) for m in max_m], np.int64)
    return (points, *gauss_points(int(points.max(initial=1))))


def gauss_points(max_points: int) -> tuple[np.ndarray, np.ndarray]:
    """``(t, w)`` of shape (max_points + 1, max_points + 1): row ``n`` holds the
    ``n``-point Gauss-Legendre rule on (0, 1) in columns ``0 .. n - 1`` and the
    point ``t = 1`` with weight 0 in column ``n``."""
    K = max_points + 1
    t = np.ones((K, K))
    w = np.zeros((K, K))
    for n in range(1, K):
        x, wx = np.polynomial.legendre.leggauss(n)
        t[n, :n] = (x + 1.0) / 2.0
        w[n, :n] = wx / 2.0
    return t, w


@njit(cache=True, nogil=True, inline="always")
def _sdiv(a, b):
    return a / b if b != 0.0 else 0.0


@njit(cache=True, nogil=True)
def _edge_factors(zp, ze, tk, n, R, C):
    """Per-point factors of an edge whose feature's cover product goes from ``zp`` to
    ``ze``, for the three (o before, o after) cases 11, 10, 00: ``R[c, k]`` multiplies
    ``H``, ``C[c, k]`` weighs the subtree sum into the feature's value."""
    for k in range(n + 1):
        t = tk[k]
        hp1 = zp + (1.0 - zp) * t
        hp0 = zp * (1.0 - t)
        he1 = ze + (1.0 - ze) * t
        he0 = ze * (1.0 - t)
        R[0, k] = _sdiv(he1, hp1)
        R[1, k] = _sdiv(he0, hp1)
        R[2, k] = _sdiv(he0, hp0)
        c1 = _sdiv(1.0 - zp, hp1)
        c0 = _sdiv(-zp, hp0)
        C[0, k] = _sdiv(1.0 - ze, he1) - c1
        C[1, k] = _sdiv(-ze, he0) - c1
        C[2, k] = _sdiv(-ze, he0) - c0
    # t = 1 is never integrated (weight 0); keep its coefficients finite
    C[0, n] = 0.0
    C[1, n] = 0.0
    C[2, n] = 0.0


@njit(cache=True, nogil=True)
def _follow(xf, nb, par, threshold, missing_left, cat_start, cat_bits, is_left, fo):
    """``fo[r]`` = 1.0 where row r takes the branch to this child at ``par``, else 0.0."""
    if cat_start[par] < 0:
        thr = threshold[par]
        ml = missing_left[par] != 0
        for r in range(nb):
            x = xf[r]
            gl = ml if x != x else x <= thr
            fo[r] = 1.0 if gl == is_left else 0.0
        return
    _decisions(xf, nb, par, threshold, missing_left, cat_start, cat_bits, fo)  # 0 left, 1 right
    if is_left:
        for r in range(nb):
            fo[r] = 1.0 - fo[r]


@njit(cache=True, nogil=True)
def linear_pd_rows(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start,
                   cat_bits, cover, masked, value, tree_output, max_depth, tree_points, gl_t, gl_w, out, pred):
    """Add the path-dependent SHAP values of ``X[rows]`` for ``trees`` into ``out`` and
    their predictions into ``pred`` (raw, unscaled tree sums, as the other kernels).

    ``tree_points[ti]`` is the number of quadrature points of tree ``trees[ti]``
    (:func:`points_for` of its largest leaf's player count); ``gl_t`` and ``gl_w``
    come from :func:`gauss_points`.
    """
    _linear_walk(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start,
                 cat_bits, cover, masked, value, tree_output, max_depth, tree_points, gl_t, gl_w, np.int64(1),
                 out, np.zeros((1, 1, 1, 1)), pred)


@njit(cache=True, nogil=True)
def linear_pd_interaction_rows(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left,
                               cat_start, cat_bits, cover, masked, value, tree_output, max_depth, tree_points,
                               gl_t, gl_w, out2):
    """Add half the path-dependent Shapley interaction index of every pair of features of
    ``X[rows]`` into ``out2[row, a, b, c]`` (one orientation per term; the caller adds
    the transpose and the diagonal), for ``trees``.

    For a leaf the pair's value is ``1/2 int_0^1 v H(t) c_a(t) c_b(t) dt`` with
    ``c_d = (o_d - z_d) / h_d`` (weights ``s! (m-s-2)! / (m-1)!``; degree ``m - 2``, so
    the SHAP values' points serve). Walking up, the edge into a node on feature ``b``
    adds its change of ``c_b`` times the current ``c_a`` of every other feature ``a``
    above it: along a path only one ``c`` changes per edge, so the sum of these
    changes of ``c_a c_b`` telescopes to the product at the leaf, features repeated
    below included.
    """
    _linear_walk(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start,
                 cat_bits, cover, masked, value, tree_output, max_depth, tree_points, gl_t, gl_w, np.int64(2),
                 np.zeros((1, 1, 1)), out2, np.zeros((1, 1)))


@njit(cache=True, nogil=True)
def _linear_walk(X, rows, trees, node_offsets, feature, threshold, left, right, missing_left, cat_start,
                 cat_bits, cover, masked, value, tree_output, max_depth, tree_points, gl_t, gl_w, order,
                 out, out2, pred):
    """The walk of :func:`linear_pd_rows` (``order`` 1) and :func:`linear_pd_interaction_rows` (2)."""
    p = X.shape[1]
    n_raw = value.shape[1]
    B = LINEAR_BLOCK
    D = max_depth + 2
    K = gl_t.shape[1]
    G = np.empty((D, K, B))
    A = np.empty((D, n_raw, K, B))
    R = np.empty((D, 3, K))
    C = np.empty((D, 3, K))
    op = np.empty((D, B))  # o of the node's feature above the edge into it
    oe = np.empty((D, B))  # ... and below it
    sav_f = np.empty(D, np.int64)
    sav_z = np.empty(D)
    sav_lat = np.empty(D, np.int64)
    lat = np.zeros(p, np.int64)  # level of a feature's latest split on the path (order 2)
    cv1 = np.zeros((D, K))  # c of the feature split at a level, for o = 1 and o = 0 (order 2)
    cv0 = np.zeros((D, K))
    Dk = np.empty((K, B))
    s1 = np.empty(B)
    s0 = np.empty(B)
    z_cur = np.ones(p)
    o_cur = np.ones((p, B))
    xb = np.empty((p, B))
    fo = np.empty(B)
    sv = np.empty(B)
    S = 3 * D + 3  # per level: a node waiting to be left and its pending sibling
    st_node = np.empty(S, np.int64)
    st_lvl = np.empty(S, np.int64)
    st_par = np.empty(S, np.int64)
    st_left = np.empty(S, np.bool_)
    st_exit = np.empty(S, np.bool_)
    nr = rows.shape[0]
    for b0 in range(0, nr, B):
        nb = min(B, nr - b0)
        load_block(X, rows, b0, nb, xb)
        for ti in range(trees.shape[0]):
            t = trees[ti]
            n = tree_points[ti]
            tk = gl_t[n]
            wk = gl_w[n]
            col = tree_output[t]
            single = col >= 0 or n_raw == 1
            c0 = col if col >= 0 else 0
            n_out = 1 if single else n_raw
            G[0, : n + 1, :nb] = 1.0
            st_node[0] = node_offsets[t]
            st_lvl[0] = 0
            st_par[0] = -1
            st_left[0] = True
            st_exit[0] = False
            sp = 1
            while sp > 0:
                sp -= 1
                node = st_node[sp]
                L = st_lvl[sp]
                if not st_exit[sp]:
                    if L > 0:
                        par = st_par[sp]
                        f = feature[par]
                        cp = cover[par]
                        ratio = cover[node] / cp if cp > 0 else 0.0
                        if masked[f]:
                            sav_f[L] = -1
                            for k in range(n + 1):
                                for r in range(nb):
                                    G[L, k, r] = G[L - 1, k, r] * ratio
                        else:
                            zp = z_cur[f]
                            ze = zp * ratio
                            _edge_factors(zp, ze, tk, n, R[L], C[L])
                            _follow(xb[f], nb, par, threshold, missing_left, cat_start, cat_bits, st_left[sp], fo)
                            for r in range(nb):
                                a = o_cur[f, r]
                                op[L, r] = a
                                oe[L, r] = a * fo[r]
                                o_cur[f, r] = a * fo[r]
                            sav_f[L] = f
                            sav_z[L] = zp
                            z_cur[f] = ze
                            sav_lat[L] = lat[f]
                            lat[f] = L
                            if order == 2:
                                for k in range(n):
                                    he1 = ze + (1.0 - ze) * tk[k]
                                    he0 = ze * (1.0 - tk[k])
                                    cv1[L, k] = _sdiv(1.0 - ze, he1)
                                    cv0[L, k] = _sdiv(-ze, he0)
                            for k in range(n + 1):
                                r11 = R[L, 0, k]
                                r10 = R[L, 1, k]
                                r00 = R[L, 2, k]
                                for r in range(nb):
                                    a = op[L, r]
                                    e = oe[L, r]
                                    G[L, k, r] = G[L - 1, k, r] * (e * r11 + (a - e) * r10 + (1.0 - a) * r00)
                    if left[node] >= 0:
                        A[L, :n_out, : n + 1, :nb] = 0.0
                        st_exit[sp] = True
                        sp += 1
                        for child, is_l in ((right[node], False), (left[node], True)):
                            st_node[sp] = child
                            st_lvl[sp] = L + 1
                            st_par[sp] = node
                            st_left[sp] = is_l
                            st_exit[sp] = False
                            sp += 1
                        continue
                    for c in range(n_out):
                        v = value[node, c0 if single else c]
                        for k in range(n + 1):
                            for r in range(nb):
                                A[L, c, k, r] = v * G[L, k, r]
                # leaving the node: its feature's share, restore, add into the parent
                if L == 0:
                    if order == 1:
                        for c in range(n_out):
                            cc = c0 if single else c
                            for r in range(nb):
                                pred[rows[b0 + r], cc] += A[0, c, n, r]
                    continue
                f = sav_f[L]
                if f >= 0:
                    for c in range(n_out):
                        cc = c0 if single else c
                        for r in range(nb):
                            sv[r] = 0.0
                        for k in range(n):
                            c11 = wk[k] * C[L, 0, k]
                            c10 = wk[k] * C[L, 1, k]
                            c00 = wk[k] * C[L, 2, k]
                            for r in range(nb):
                                a = op[L, r]
                                e = oe[L, r]
                                d = A[L, c, k, r] * (e * c11 + (a - e) * c10 + (1.0 - a) * c00)
                                Dk[k, r] = d
                                sv[r] += d
                        if order == 1:
                            for r in range(nb):
                                out[rows[b0 + r], f, cc] += sv[r]
                            continue
                        # order 2: this edge's change of c_f times the current c_g of each
                        # feature g above (its latest split on the path, at level i)
                        for i in range(1, L):
                            g = sav_f[i]
                            if g < 0 or g == f or lat[g] != i:
                                continue
                            for r in range(nb):
                                s1[r] = 0.0
                                s0[r] = 0.0
                            for k in range(n):
                                v1 = 0.5 * cv1[i, k]
                                v0 = 0.5 * cv0[i, k]
                                for r in range(nb):
                                    s1[r] += Dk[k, r] * v1
                                    s0[r] += Dk[k, r] * v0
                            for r in range(nb):
                                og = o_cur[g, r]
                                out2[rows[b0 + r], g, f, cc] += og * s1[r] + (1.0 - og) * s0[r]
                    z_cur[f] = sav_z[L]
                    lat[f] = sav_lat[L]
                    for r in range(nb):
                        o_cur[f, r] = op[L, r]
                for c in range(n_out):
                    for k in range(n + 1):
                        for r in range(nb):
                            A[L - 1, c, k, r] += A[L, c, k, r]
