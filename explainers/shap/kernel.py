"""Kernel SHAP: the weighted least squares of eqs. 24-27 of the SHAP seed.

phi_0 is fixed to the background mean and the last present feature's phi is
taken from the local-accuracy constraint, so the weighted least squares runs
over M - 1 unknowns without the infinite weights of the empty and full
coalitions (eq. 26-27), and base + sum(phi) equals the prediction exactly.

When all 2**M - 2 proper coalitions fit in ``n_samples`` they are all
enumerated with their exact Shapley-kernel weights, and the result equals
ExactShap. Otherwise the coalition sizes whose every coalition fits are
enumerated first, smallest and largest together (they carry most of the
kernel weight), and the rest of the budget is spread over the remaining sizes
in proportion to their kernel weight, drawing each coalition together with
its complement (paired sampling, which cancels the odd-order error terms) and
without repeats. Each size's drawn coalitions share that size's total kernel
weight (a stratified estimate). Coalitions depend only on the number of
present features and ``random_state``, so a row's values do not depend on
which other rows are explained with it or how they are chunked.
"""
from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np
import pandas as pd

from ._common import (
    DEFAULT_BATCH_ROWS,
    BackgroundExplainer,
    CoalitionGame,
    Progress,
    check_int,
    check_random_state,
    lift,
    subsets_matrix,
)
from .result import ShapResult

__all__ = ["KernelShap", "kernel_coalitions"]

#: enumerate a size's subsets to draw from (instead of rejection sampling)
#: when there are at most this many
_ENUMERATE_LIMIT = 200_000


def _size_mass(M: int, s: int) -> float:
    """Total Shapley-kernel weight of all coalitions of size s: (M-1) / (s (M-s))."""
    return (M - 1) / (s * (M - s))


def _all_of_size(M: int, s: int) -> np.ndarray:
    Z = np.zeros((math.comb(M, s), M), dtype=bool)
    for r, idx in enumerate(itertools.combinations(range(M), s)):
        Z[r, list(idx)] = True
    return Z


def _draw_of_size(M: int, s: int, count: int, rng: np.random.Generator, *, half: bool) -> np.ndarray:
    """``count`` distinct subsets of size s, uniformly; with ``half`` only those holding player 0.

    ``half`` is used for s == M/2, where a subset and its complement have the
    same size: drawing only subsets that contain player 0 picks distinct pairs.
    """
    if math.comb(M, s) <= _ENUMERATE_LIMIT:
        pool = _all_of_size(M, s)
        if half:
            pool = pool[pool[:, 0]]
        pick = np.sort(rng.choice(len(pool), size=count, replace=False))
        return pool[pick]
    # too many to list: draw random subsets and drop repeats (count << pool here)
    seen: set[bytes] = set()
    out = []
    while len(out) < count:
        keys = rng.random((2 * count, M))
        if half:
            keys[:, 0] = -1.0  # player 0 always among the s smallest keys
        ranks = np.argsort(keys, axis=1)[:, :s]
        Z = np.zeros((2 * count, M), dtype=bool)
        np.put_along_axis(Z, ranks, True, axis=1)
        for z in Z:
            key = np.packbits(z).tobytes()
            if key not in seen:
                seen.add(key)
                out.append(z)
                if len(out) == count:
                    break
    return np.array(out)


def kernel_coalitions(M: int, n_samples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, bool]:
    """Coalitions and weights for Kernel SHAP over M players.

    Parameters
    ----------
    M : int
        Number of players (present features), >= 2.
    n_samples : int
        Budget of coalitions (the empty and the full one are not counted).
    rng : numpy Generator

    Returns
    -------
    Z : bool ndarray of shape (n_coalitions, M)
    weights : ndarray of shape (n_coalitions,)
        Shapley-kernel weights; the weights of all coalitions of one size sum
        to that size's kernel mass, whether enumerated or drawn.
    exact : bool
        True when every proper coalition was enumerated.
    """
    if 2**M - 2 <= n_samples:
        Z = subsets_matrix(M)[1:-1]
        s = Z.sum(axis=1)
        w = np.array([_size_mass(M, t) / math.comb(M, t) for t in range(1, M)])[s - 1]
        return Z, w, True

    half_sizes = range(1, M // 2 + 1)  # s and M - s form one stratum
    mass = {s: _size_mass(M, s) * (1 if 2 * s == M else 2) for s in half_sizes}
    count = {s: math.comb(M, s) * (1 if 2 * s == M else 2) for s in half_sizes}
    blocks, weights = [], []
    budget = n_samples
    remaining = list(half_sizes)
    # 1) enumerate whole strata, from the outside in, while each fits in its share
    while remaining:
        s = remaining[0]
        share = budget * mass[s] / sum(mass[t] for t in remaining)
        if share + 1e-8 < count[s]:
            break
        Zs = _all_of_size(M, s)
        w = _size_mass(M, s) / math.comb(M, s)
        blocks.append(Zs)
        weights.append(np.full(len(Zs), w))
        if 2 * s != M:
            blocks.append(~Zs)
            weights.append(np.full(len(Zs), w))
        budget -= count[s]
        remaining.pop(0)
    # 2) spread the rest over the remaining strata, in complementary pairs
    if remaining and budget >= 2:
        n_pairs = budget // 2
        cap = {s: count[s] // 2 for s in remaining}  # distinct (S, complement) pairs
        alloc = _allocate(n_pairs, {s: mass[s] for s in remaining}, cap)
        for s in remaining:
            a = alloc[s]
            if a == 0:
                continue
            Zs = _draw_of_size(M, s, a, rng, half=(2 * s == M))
            # each stratum's draws share its mass: a stratified estimate of its sum
            w = mass[s] / (2 * a)
            blocks += [Zs, ~Zs]
            weights += [np.full(a, w), np.full(a, w)]
    if not blocks:  # a budget of 1 with nothing enumerable: one pair anyway
        Zs = _draw_of_size(M, 1, 1, rng, half=(M == 2))
        blocks, weights = [Zs, ~Zs], [np.ones(1), np.ones(1)]
    return np.concatenate(blocks), np.concatenate(weights), False


def _allocate(total: int, mass: dict, cap: dict) -> dict:
    """Split ``total`` draws over strata in proportion to mass, capped (largest remainder)."""
    alloc = {s: 0 for s in mass}
    open_ = [s for s in mass if cap[s] > 0]
    left = min(total, sum(cap.values()))
    while left > 0 and open_:
        tot = sum(mass[s] for s in open_)
        quota = {s: left * mass[s] / tot for s in open_}
        give = {s: min(int(quota[s]), cap[s] - alloc[s]) for s in open_}
        spare = left - sum(give.values())
        # hand out the remainders, largest first
        for s in sorted(open_, key=lambda t: quota[t] - int(quota[t]), reverse=True):
            if spare == 0:
                break
            if alloc[s] + give[s] < cap[s]:
                give[s] += 1
                spare -= 1
        for s in open_:
            alloc[s] += give[s]
        left -= sum(give.values())
        open_ = [s for s in open_ if alloc[s] < cap[s]]
        if sum(give.values()) == 0:
            break
    return alloc


class KernelShap(BackgroundExplainer):
    """Kernel SHAP with the local-accuracy constraint eliminated exactly.

    Parameters
    ----------
    model : object
        A fitted model (see :class:`~explainers.ModelAdapter`).
    background : DataFrame or array-like of shape (n_background, n_features), default=None
        Rows that stand in for missing features. ``None`` draws a seeded
        sample of up to 100 complete rows of the X passed to :meth:`explain`.
    n_samples : int, default=2048
        Coalitions evaluated per row (besides the empty and full ones). With
        M present features and ``2**M - 2 <= n_samples`` every coalition is
        enumerated and the values are exact.
    random_state : int, None or Generator, default=0
        Seed of the coalition draws (and of the default background sample).
    output : {"auto", "raw", "proba", "log_odds"}, default="auto"
    class_index : int, default=None
    feature_names : sequence of str, default=None
    batch_rows : int, default=2**18
        Synthetic rows per model call (bounds memory).

    See Also
    --------
    ExactShap : all coalitions, exact.

    Examples
    --------
    >>> res = KernelShap(model, X_train[:100], n_samples=512).explain(X_test[:20])
    """

    method = "kernel"
    _func = "KernelShap"

    def __init__(
        self,
        model,
        background=None,
        *,
        n_samples: int = 2048,
        random_state: int | None = 0,
        output: str = "auto",
        class_index: int | None = None,
        feature_names: Sequence[str] | None = None,
        batch_rows: int = DEFAULT_BATCH_ROWS,
    ):
        self.n_samples = check_int(n_samples, "n_samples", "KernelShap", 1)
        self.random_state = check_random_state(random_state, "KernelShap")
        super().__init__(
            model,
            background,
            output=output,
            class_index=class_index,
            feature_names=feature_names,
            batch_rows=batch_rows,
        )
        self._plans: dict[int, tuple] = {}

    def _plan(self, present: np.ndarray, p: int):
        M = len(present)
        if M not in self._plans:
            # one seed per number of players: the draw does not depend on the
            # other rows of the call, nor on which features are missing
            rng = np.random.default_rng([self.random_state, M])
            if M == 1:
                Zp, w, exact = np.zeros((0, 1), dtype=bool), np.zeros(0), True
            else:
                Zp, w, exact = kernel_coalitions(M, self.n_samples, rng)
            self._plans[M] = (Zp, w, exact)
        Zp, w, exact = self._plans[M]
        full = np.ones((1, M), dtype=bool)
        # the full coalition goes last: it gives f_S(x_S) for the constraint
        return lift(np.vstack([Zp, full]), present, p), Zp, w

    def _n_coalitions(self, plan) -> int:
        return len(plan[0])

    def _solve(self, plan, game: CoalitionGame, x: pd.DataFrame):
        Z, Zp, w = plan
        base = game.base()
        v = game.values(x, Z)  # (r, c + 1, k)
        fx = v[:, -1, :]
        total = fx - base  # (r, k): what the phis must add up to
        r, k = total.shape
        M = Zp.shape[1]
        phi = np.empty((r, M, k))
        if M == 1:
            phi[:, 0, :] = total
            return phi, fx
        y = v[:, :-1, :] - base  # (r, c, k)
        last = Zp[:, -1].astype(float)
        # eq. 26: substitute phi_M = total - sum(other phis)
        Xm = Zp[:, :-1].astype(float) - last[:, None]  # (c, M-1)
        ym = y - last[None, :, None] * total[:, None, :]  # (r, c, k)
        sw = np.sqrt(w)[:, None]
        rhs = (sw * ym.transpose(1, 0, 2).reshape(len(w), r * k))
        # one least-squares solve for every row and output (eq. 27)
        sol = np.linalg.lstsq(sw * Xm, rhs, rcond=None)[0]  # (M-1, r*k)
        phi[:, :-1, :] = sol.reshape(M - 1, r, k).transpose(1, 0, 2)
        phi[:, -1, :] = total - phi[:, :-1, :].sum(axis=1)
        return phi, fx

    def _params(self) -> dict:
        used = getattr(self, "_sizes_used", set())
        return {
            "n_samples": self.n_samples,
            "random_state": self.random_state,
            # every coalition of every row was evaluated: the values are exact
            "enumerated": all(self._plans[M][2] for M in used),
        }

    def explain(
        self,
        X,
        missing=None,
        *,
        nan_is_missing: bool | str = "auto",
        progress: Progress | None = None,
    ) -> ShapResult:
        """Explain rows of X.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_rows, n_features)
        missing : bool array of shape (n_features,) or (n_rows, n_features), or feature names, default=None
            Features to leave out of the game: attribution exactly 0, and the
            explained prediction is f_S(x_S) marginalised over the background.
        nan_is_missing : bool, default=True
            Also treat NaN cells of X as missing.
        progress : callable(done_rows, total_rows), default=None
            Called after each chunk of rows.

        Returns
        -------
        ShapResult
            ``params["enumerated"]`` says whether every coalition was used
            (then the values are exact).
        """
        return self._run(X, missing, nan_is_missing, progress, self.random_state)
