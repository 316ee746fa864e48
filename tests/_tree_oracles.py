"""Slow, obviously-right oracles over a TreeEnsemble, for tests of the compiled engines.

Routing goes through :meth:`TreeEnsemble.goes_left` (numpy, one node at a time),
so the oracles share no code with the kernels they check.
"""
from __future__ import annotations

import itertools
import math

import numpy as np


def pd_value(ens, xw: np.ndarray, present) -> np.ndarray:
    """The path-dependent game f_S(x): a feature outside S averages its children by cover."""

    def g(node):
        if ens.left[node] < 0:
            return ens.value[node]
        f = ens.feature[node]
        lc, rc = ens.left[node], ens.right[node]
        if f in present:
            left = ens.goes_left(np.array([xw[f]]), np.array([node]))[0]
            return g(lc if left else rc)
        return (ens.cover[lc] * g(lc) + ens.cover[rc] * g(rc)) / ens.cover[node]

    return ens.base + ens.scale * sum(g(root) for root in ens.roots)


def shapley(v, players) -> dict:
    """Shapley values of the set function ``v`` over ``players`` by every coalition."""
    players = list(players)
    M = len(players)
    cache = {}

    def val(S):
        key = frozenset(S)
        if key not in cache:
            cache[key] = v(key)
        return cache[key]

    out = {}
    for i in players:
        others = [j for j in players if j != i]
        total = 0.0
        for s in range(M):
            w = math.factorial(s) * math.factorial(M - s - 1) / math.factorial(M)
            for S in itertools.combinations(others, s):
                total = total + w * (val(S + (i,)) - val(S))
        out[i] = total
    return out


def brute_path_dependent(ens, Xw: np.ndarray, missing=None) -> np.ndarray:
    """Path-dependent Shapley values (n, p, n_raw) of rows already prepared for the trees."""
    n, p = Xw.shape
    vals = np.zeros((n, p, ens.n_raw))
    for r in range(n):
        players = [j for j in range(p) if missing is None or not missing[r, j]]
        phi = shapley(lambda S: pd_value(ens, Xw[r], S), players)
        for j, v in phi.items():
            vals[r, j] = v
    return vals
