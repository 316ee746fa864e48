"""What a view costs before it runs: the model's seconds per row (predict, SHAP), measured
once on a small probe and cached per model and data, and the estimates the pages compare
with :data:`SLOW_VIEW_S` to run a slow view only on request.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from explainers.errors import ExplainerError

from .cache import result_cache
from .context import ModelContext
from .rows import _nested_rows, _RowStore, background, sample_rows
from .warmup import wait_for_warmup


#: rows the cost probe explains, and the seconds above which a view runs only on request with a warning
COST_PROBE_ROWS, SLOW_VIEW_S = 2, 10.0
#: rows a "fast" SHAP method explains within SLOW_VIEW_S (the global views' and importance's default)
FAST_ROWS = 1_000


def _by_kind_fast(ctx: ModelContext, method: str, output: str) -> bool | None:
    """Fast by what the method is (linear, tree on what the trees add up to: True; exact and kernel:
    False); None for the probabilities of a boosting model, whose exact game must be measured."""
    from .outputs import _margin_is_native

    if method in ("exact", "kernel"):
        return False
    if output == "proba" and _margin_is_native(ctx):
        return None
    if method in ("tree", "linear"):
        return True
    try:
        from explainers.shap import auto

        chosen, _ = auto.choose_method(ctx.model, ctx.X.shape[1], 100, output=output)
    except Exception:
        return False
    return chosen in ("linear", "tree")


def _output(ctx: ModelContext, method: str, output: str | None) -> str:
    from .outputs import shap_output

    return shap_output(ctx, method, len(background(ctx)))[0] if output is None else output


def shap_is_fast(ctx: ModelContext, method: str = "auto", output: str | None = None) -> bool:
    """Whether SHAP with this method and output (None: the one the sidebar's Scale asks for) is a
    fast one: linear or tree on what the model adds up to, or (the probabilities of a boosting
    model, whose exact game grows with 2**d, d the features on which a row and a background row
    part) measured to explain FAST_ROWS rows within SLOW_VIEW_S."""
    output = _output(ctx, method, output)
    fast = _by_kind_fast(ctx, method, output)
    if fast is None:
        return _probe_seconds(ctx, method, output) * FAST_ROWS <= SLOW_VIEW_S
    return fast


def shap_seconds_per_row(ctx: ModelContext, method: str, output: str | None = None) -> float:
    """Seconds one row of SHAP takes with this method and output, measured once on a small
    probe (cached per model, data, method and output; 0 for the fast tree and linear methods)."""
    output = _output(ctx, method, output)
    return 0.0 if _by_kind_fast(ctx, method, output) else _probe_seconds(ctx, method, output)


def _probe_seconds(ctx: ModelContext, method: str, output: str) -> float:
    def probe() -> float:
        from explainers.shap import explain

        wait_for_warmup()
        rows = sample_rows(ctx, COST_PROBE_ROWS)
        try:
            if output == "proba":  # the probability game's kernels compile on their first call
                explain(ctx.model, rows.iloc[:1], background=background(ctx), method=method, output=output)
            t0 = time.perf_counter()
            explain(ctx.model, rows, background=background(ctx), method=method, output=output)
        except ExplainerError:  # out of reach on this scale: the page falls back, and says so
            return 0.0
        return (time.perf_counter() - t0) / max(1, len(rows))

    return float(result_cache().get_or_compute(("shap_cost", ctx.model_key, ctx.data_key, method, output), probe))


def sample_cost(ctx: ModelContext, method: str, n_rows: int, output: str = "auto") -> tuple[float, int]:
    """(estimated seconds for the rows of a sample not yet explained, rows that fit in SLOW_VIEW_S)."""
    per_row = shap_seconds_per_row(ctx, method, output)
    if per_row <= 0:
        return 0.0, n_rows
    store = result_cache().get_or_compute(("shap_rows", ctx.model_key, ctx.data_key, method, output), _RowStore)
    positions = _nested_rows(len(ctx.X), n_rows)
    left = len(positions) - store.done(positions)
    return per_row * left, max(10, int(SLOW_VIEW_S / per_row) // 10 * 10)


def predict_seconds_per_row(ctx: ModelContext) -> float:
    """Seconds one more row costs the model's predict (measured once, cached per model and
    data): what the pages multiply to know a view's cost.

    Measured as the computations predict, in large batches: the time of 256 rows against
    a batch of 2,048, grown eightfold while a batch takes under 0.1 s (a fast model's
    per-row cost keeps falling with the batch: threads, fixed costs per call), so a
    call's fixed cost is left out. The best of three runs, since a shared machine only
    ever makes a run slower.
    """
    def probe() -> float:
        wait_for_warmup()
        rows = sample_rows(ctx, min(256, len(ctx.X)))
        ctx.adapter.predict(rows.iloc[:2])  # a first call may pay one-time costs

        def took(frame) -> float:
            best = np.inf
            for _ in range(3):
                t0 = time.perf_counter()
                ctx.adapter.predict(frame)
                best = min(best, time.perf_counter() - t0)
            return best

        small = took(rows)
        size, per_row = 2048, None
        while True:
            big = pd.concat([rows] * max(1, size // len(rows)), ignore_index=True)
            large = took(big)
            if len(big) > len(rows):
                per_row = max(0.0, (large - small) / (len(big) - len(rows)))
            else:
                return large / len(big)
            if large >= 0.1 or size >= PROBE_MAX_ROWS:
                return per_row
            size *= 8

    return float(result_cache().get_or_compute(("predict_cost", ctx.model_key, ctx.data_key), probe))


#: the largest batch the predict probe grows to (the size the computations predict in)
PROBE_MAX_ROWS = 32_768


def importance_cost(ctx: ModelContext, methods, n_repeats: int, max_rows: int) -> tuple[float, int]:
    """(estimated seconds, rows that fit in SLOW_VIEW_S) of the Importance page's slow methods:
    holdout permutation predicts every row once per feature and repeat, mean |SHAP| explains
    every row; the training-split methods (MDI, the libraries' own) cost nothing."""
    rows = min(int(max_rows), len(ctx.X))
    per_row = 0.0
    if "permutation" in methods:
        per_row += (int(n_repeats) * ctx.X.shape[1] + 1) * predict_seconds_per_row(ctx)
    if "shap" in methods:
        per_row += shap_seconds_per_row(ctx, "auto")
    if per_row <= 0:
        return 0.0, rows
    return per_row * rows, int(SLOW_VIEW_S / per_row) // 50 * 50  # 0: even the fewest rows (50) take longer


def fmt_seconds(s: float) -> str:
    """A duration in words: '8 s', '3 min', '2.5 h'."""
    if s < 90:
        return f"{max(1, round(s))} s"
    if s < 5400:
        return f"{round(s / 60)} min"
    return f"{s / 3600:.1f} h"
