"""The data rows behind the computations: the training and held-out split, seeded
samples (nested: a larger sample holds every smaller one), the SHAP background, and
:class:`_RowStore`, the per-row SHAP results a sample fills (shared by the SHAP
sample and its cost estimate).
"""
from __future__ import annotations

import functools
import threading

import numpy as np
import pandas as pd

from .context import ModelContext


def split_rows(ctx: ModelContext) -> tuple[tuple, tuple]:
    """((X_train, y_train), (X_holdout, y_holdout)) for this model's data.

    Demo data stores the training rows first (the card says how many); for an
    upload the file is taken as the training data for out-of-bag importance
    (the check against the forest's own out-of-bag predictions tells when it is
    not) and as held-out data for permutation importance.
    """
    n_train = ctx.card.get("n_train")
    if n_train:
        tr = (ctx.X.iloc[:n_train], None if ctx.y is None else ctx.y.iloc[:n_train])
        ho = (ctx.X.iloc[n_train:], None if ctx.y is None else ctx.y.iloc[n_train:])
        return tr, ho
    both = (ctx.X, ctx.y)
    return both, both


def _seeded_rows(n_total: int, n: int) -> np.ndarray:
    """Positions of a seeded sample of n rows (all rows when there are no more), in data order."""
    if n_total <= n:
        return np.arange(n_total)
    return np.sort(np.random.default_rng(0).choice(n_total, n, replace=False))


def view_rows(ctx: ModelContext, n: int) -> np.ndarray:
    """Positions (in data order) of the seeded sample of ``n`` rows a bounded view starts from:
    stratified by class where a classifier's target is known (each class in proportion), else
    a seeded draw; every row where there are no more. The same rows on every visit."""
    if len(ctx.X) <= n:
        return np.arange(len(ctx.X))
    if ctx.y is None or ctx.task == "regression":
        return _seeded_rows(len(ctx.X), n)
    from explainers.sampling import stratified_rows

    return stratified_rows(ctx.y.to_numpy(), n, seed=0)


def _nested_rows(n_total: int, n: int) -> np.ndarray:
    """Positions of a seeded sample of n rows, in data order, nested: the sample of n rows
    is part of the sample of any larger n (the first n of one fixed shuffle), so a larger
    sample reuses every row a smaller one explained."""
    if n_total <= n:
        return np.arange(n_total)
    return np.sort(_shuffle(n_total)[:n])


@functools.lru_cache(maxsize=4)
def _shuffle(n_total: int) -> np.ndarray:
    """The one fixed shuffle of ``n_total`` positions behind :func:`_nested_rows` (read-only; made once:
    a million rows took 15 ms a sample, and an estimate asks for a dozen)."""
    order = np.random.default_rng(0).permutation(n_total)
    order.flags.writeable = False
    return order


def sample_rows(ctx: ModelContext, n_rows: int) -> pd.DataFrame:
    """A seeded sample of the data's rows (the global views, the 2D data overlay);
    the sample of n rows is part of every larger one."""
    return ctx.X.iloc[_nested_rows(len(ctx.X), n_rows)]


def background(ctx: ModelContext, n: int = 100) -> pd.DataFrame:
    """A seeded sample of the data as the SHAP background (training rows where known)."""
    (X_tr, _), _ = split_rows(ctx)
    return X_tr.iloc[_seeded_rows(len(X_tr), n)]


class _RowStore:
    """Per-row SHAP results of one model, data and method, shared by sessions.

    A sample's rows are explained in blocks in a worker thread and kept here row by
    row, so a rerun (a larger sample, a Stop, another session) keeps every row already
    done; ``claimed`` rows are being computed by some worker right now.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.rows: dict[int, tuple] = {}  # position -> (values, base, prediction, missing)
        self.claimed: set[int] = set()
        self.meta: dict | None = None  # method, output, names, params of the first block

    def done(self, positions) -> int:
        with self.lock:
            return sum(1 for r in positions if r in self.rows)

    def claim(self, positions, n: int) -> list[int]:
        """Up to n of ``positions`` that nobody computed or is computing, now claimed."""
        with self.lock:
            got = [r for r in positions if r not in self.rows and r not in self.claimed][:n]
            self.claimed.update(got)
            return got

    def put(self, positions, res) -> None:
        with self.lock:
            for i, r in enumerate(positions):
                self.rows[r] = (res.values[i], res.base_values[i], res.predictions[i], res.missing[i])
            self.claimed.difference_update(positions)
            if self.meta is None:
                self.meta = dict(feature_names=list(res.feature_names), method=res.method, output=res.output,
                                 output_names=list(res.output_names), params=dict(res.params))

    def release(self, positions) -> None:
        with self.lock:
            self.claimed.difference_update(positions)

    def stacked(self, positions) -> tuple[tuple[np.ndarray, ...], dict]:
        """(values, base values, predictions, missing) of rows ``positions`` (kept), each stacked
        over the rows, and the store's meta."""
        with self.lock:
            parts = [self.rows[int(r)] for r in positions]
            meta = dict(self.meta)
        # np.array of the rows' equal-shaped arrays stacks them as np.stack does, 3x faster (442 rows: 0.14 ms -> 0.05)
        return tuple(np.array([p[k] for p in parts]) for k in range(4)), meta


def explain_into(ctx: ModelContext, frame: pd.DataFrame, positions, store: _RowStore, method: str, output: str,
                 bg: pd.DataFrame, progress=None) -> None:
    """SHAP values of the rows of ``frame`` (the data's rows ``positions``), kept row by row in ``store``:
    a block of the SHAP sample's worker, and the cost line's probe (which times the same)."""
    from explainers.shap import explain

    res = explain(ctx.model, frame, background=bg, method=method, output=output, progress=progress)
    store.put(positions, res)
