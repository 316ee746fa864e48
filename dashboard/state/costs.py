"""What a view costs before it runs: the model's seconds per row (predict, SHAP), measured
once on a small probe and cached per model and data, and the estimates the pages compare
with :data:`SLOW_VIEW_S` to run a slow view only on request.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd

from explainers.errors import ExplainerError

from .cache import result_cache
from .context import ModelContext
from .rows import _nested_rows, _RowStore, background, explain_into, sample_rows
from .warmup import wait_for_warmup


#: rows the cost probe explains, and the seconds above which a view runs only on request with a warning
COST_PROBE_ROWS, SLOW_VIEW_S = 2, 10.0
#: rows a "fast" SHAP method explains within SLOW_VIEW_S (the global views' and importance's default)
FAST_ROWS = 1_000
#: seconds of work a slow view starts with (it offers more)
START_VIEW_S = 3.0
#: seconds one block of SHAP rows should take (long enough to share work within the block, short
#: enough for the bar to move and a Stop to stop soon), and a fast method's first block
BLOCK_S, FIRST_FAST_BLOCK, MAX_BLOCK = 0.5, 256, 4096
#: the two probes of a tree model's SHAP cost (a line: fixed cost + rows x cost per row)
TREE_PROBE_ROWS = (4, 32)
#: the larger probe grows (fourfold, up to MAX_PROBE_ROWS rows) while its rows add less than
#: PROBE_SPREAD_S to the smaller one's time: a few milliseconds are the machine's noise (a slope
#: of 0 there made 569 rows of a boosting model's tree SHAP cost its fixed part alone, 0.41x)
PROBE_SPREAD_S, MAX_PROBE_ROWS = 0.01, 1024


def _by_kind_fast(ctx: ModelContext, method: str, output: str) -> bool | None:
    """Fast by what the method is (linear on what the model adds up to: True; exact and
    kernel: False); None where it must be measured: tree SHAP (its cost grows with the
    trees' leaves and depth, and against a background with its size) and the
    probabilities of a boosting model, whose exact game grows with 2**d, d the features
    on which a row and a background row part."""
    from .outputs import _margin_is_native

    if method in ("exact", "kernel"):
        return False
    if output == "proba" and _margin_is_native(ctx):
        return None
    if method == "tree":
        return None
    if method == "linear":
        return True
    try:
        from explainers.shap import auto

        chosen, _ = auto.choose_method(ctx.model, ctx.X.shape[1], 100, output=output)
    except Exception:
        return False
    return None if chosen == "tree" else chosen == "linear"


def slow_by_kind(ctx: ModelContext, method: str, output: str) -> bool:
    """Whether this SHAP is slow by what the method is (exact, kernel): the SHAP worker then
    starts at one row without probing its cost."""
    return _by_kind_fast(ctx, method, output) is False


def _output(ctx: ModelContext, method: str, output: str | None) -> str:
    from .outputs import shap_output

    return shap_output(ctx, method, len(background(ctx)))[0] if output is None else output


def shap_is_fast(ctx: ModelContext, method: str = "auto", output: str | None = None) -> bool:
    """Whether SHAP with this method and output (None: the one the sidebar's Scale asks for) is a
    fast one: linear on what the model adds up to, or measured (tree SHAP, the probabilities
    of a boosting model) to explain FAST_ROWS rows within SLOW_VIEW_S."""
    output = _output(ctx, method, output)
    fast = _by_kind_fast(ctx, method, output)
    if fast is None:
        fixed, per_row = shap_cost_line(ctx, method, output)
        return fixed + per_row * FAST_ROWS <= SLOW_VIEW_S
    return fast


def shap_seconds_per_row(ctx: ModelContext, method: str, output: str | None = None) -> float:
    """Seconds one more row of SHAP takes with this method and output, measured once on a
    small probe (cached per model, data, method and output; 0 for the linear method)."""
    return shap_cost_line(ctx, method, output)[1]


def shap_cost_line(ctx: ModelContext, method: str, output: str | None = None) -> tuple[float, float]:
    """(seconds a call costs whatever its rows, seconds per row) of SHAP with this method and
    output: on the line through two probes (tree SHAP: the fixed part is the leaf tables each
    call builds; the linear method, fast by kind, whose milliseconds are mostly a call's own);
    else the per-row time of a small probe. Where the probability game is out of reach, the
    cost of the log-odds the page explains instead."""
    output = _output(ctx, method, output)
    if _on_line(ctx, method, output):
        line = _shap_line(ctx, method, output)
    else:
        line = 0.0, _probe_seconds(ctx, method, output)
    if line == (0.0, 0.0) and output == "proba":
        # the probability game is out of reach: the page explains the log-odds instead, and so costs that
        from .outputs import log_odds_output

        return shap_cost_line(ctx, method, log_odds_output(ctx))
    return line


#: a boosting model's probability game gets the line's probes (1 + 2 x (4 + 32) rows) where the
#: two-row probe says they take at most this long; a slower game keeps the two-row figure
LINE_PROBE_BUDGET_S = 1.5


def _on_line(ctx: ModelContext, method: str, output: str) -> bool:
    """Whether this SHAP's cost is the line (fixed + per row through two probes), not a per-row
    probe: tree and linear SHAP; a boosting model's probability game, exact and kernel SHAP where the
    two-row probe finds the line's probes cheap (their cost per row can be large; on a cheap
    one the two-row figure carries the call's fixed cost: 3x the measured time on a 200-tree
    XGBoost's probabilities, 2.5x for kernel SHAP on the diabetes ridge model)."""
    from .outputs import _margin_is_native

    by_kind = _by_kind_fast(ctx, method, output)
    if by_kind is True:  # linear: cheap to probe, and a call's fixed cost is most of its time
        return True
    if by_kind is None and not (output == "proba" and _margin_is_native(ctx)):
        return True
    rows = 1 + 2 * sum(TREE_PROBE_ROWS)
    return _probe_seconds(ctx, method, output) * rows <= LINE_PROBE_BUDGET_S


def shap_fixed_seconds(ctx: ModelContext, method: str, output: str | None = None) -> float:
    """Seconds a SHAP call costs whatever its rows (tree SHAP's leaf tables, a cheap game's set-up
    on the line; else 0)."""
    return shap_cost_line(ctx, method, output)[0]


def default_shap_rows(ctx: ModelContext, method: str, output: str | None = None) -> int:
    """The SHAP sample a view starts with: FAST_ROWS where they fit in SLOW_VIEW_S, else as many
    rows as fit in about START_VIEW_S (at least 10, in steps of 10); more are offered."""
    if shap_is_fast(ctx, method, output):
        return FAST_ROWS
    fixed, per_row = shap_fixed_seconds(ctx, method, output), shap_seconds_per_row(ctx, method, output)
    if per_row <= 0:
        return FAST_ROWS
    return int(min(FAST_ROWS, max(10, (START_VIEW_S - fixed) / per_row // 10 * 10)))


def _shap_line(ctx: ModelContext, method: str, output: str) -> tuple[float, float]:
    """(fixed seconds, seconds per row) of SHAP by this method and output, from :func:`probe_line`."""
    def run(rows):
        # as the SHAP sample does: a worker thread started, its block's values kept row by row, then
        # stacked. On a fast game that is much of the time: linear SHAP of 442 rows took 4.3 ms for
        # the values and 7 ms for the view, 3 ms of which starting the worker (a core waking up)
        store, positions, box = _RowStore(), list(range(len(rows))), {}

        def block():
            try:
                explain_into(ctx, rows, positions, store, method, output, background(ctx))
                store.stacked(positions)
            except BaseException as exc:  # noqa: BLE001 - raised in the probe's thread
                box["error"] = exc

        with _noting_out_of_reach(ctx, method):
            worker = threading.Thread(target=block, name="glassbox-cost-probe", daemon=True)
            worker.start()
            worker.join()
            if "error" in box:
                raise box["error"]

    return probe_line(ctx, ("shap_line", ctx.model_key, ctx.data_key, method, output), run)


def best_of_two(run, rows) -> float:
    """Seconds of the faster of two runs of ``run(rows)`` (a shared machine only ever makes a run slower)."""
    best = np.inf
    for _ in range(2):
        t0 = time.perf_counter()
        run(rows)
        best = min(best, time.perf_counter() - t0)
    return best


def probe_line(ctx: ModelContext, key: tuple, run) -> tuple[float, float]:
    """(fixed seconds per call, seconds per row) of ``run(rows)``, cached under ``key``: after a
    one-row warm-up (kernels load), the best of two runs of TREE_PROBE_ROWS[0] rows and of
    TREE_PROBE_ROWS[1] rows (a shared machine only ever makes a run slower; the larger grows
    while it is within PROBE_SPREAD_S of the smaller); the line through them. (0, 0) where the
    work is out of reach (the page falls back, and says so)."""
    def probe() -> tuple[float, float]:
        wait_for_warmup()
        small, big = TREE_PROBE_ROWS
        rows = sample_rows(ctx, big)

        try:
            run(rows.iloc[:1])
            t_small = best_of_two(run, rows.iloc[:small])
            if len(rows) <= small:
                return 0.0, t_small / max(1, len(rows))
            t_big = best_of_two(run, rows)
            # rows that cost less than the machine's noise: more rows until their cost shows
            while t_big - t_small < PROBE_SPREAD_S and len(rows) < min(len(ctx.X), MAX_PROBE_ROWS):
                rows = sample_rows(ctx, min(len(ctx.X), MAX_PROBE_ROWS, 4 * len(rows)))
                t_big = best_of_two(run, rows)
        except ExplainerError:
            return 0.0, 0.0
        per_row = max(0.0, (t_big - t_small) / (len(rows) - small))
        return max(0.0, t_small - small * per_row), per_row

    return tuple(result_cache().get_or_compute(key, probe))


class _noting_out_of_reach:
    """Around a cost probe: a probability game out of reach on the probe's rows is out of reach on
    every sample that holds them (the samples are nested), so the global views go to log-odds at
    once instead of paying for the failed attempt first (``sample_note`` of :func:`proba_reach`)."""

    def __init__(self, ctx: ModelContext, method: str):
        self.ctx, self.method = ctx, method

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        from explainers.errors import OutOfReachError

        if isinstance(exc, OutOfReachError):
            # (the one-row views still try the probabilities: a row of their own may be within reach)
            proba_reach(self.ctx, self.method).setdefault("sample_note", out_of_reach_note(exc))
        return False


def proba_reach(ctx: ModelContext, method: str) -> dict:
    """Per model, data and method: the notes of a probability game found out of reach, so later
    runs go to log-odds at once: ``note`` (a sample's pair that parts on too many features: every
    SHAP view) and ``sample_note`` (a cost probe's rows: the samples of the global views)."""
    return result_cache().get_or_compute(("proba_reach", ctx.model_key, ctx.data_key, method), dict)


def out_of_reach_note(exc: BaseException) -> str:
    """The page's note for a probability game out of reach: the library's reason, and what the page does."""
    return f"{getattr(exc, 'reason', exc)} Shown on the **log-odds** scale instead, where Tree SHAP is exact."


def _probe_seconds(ctx: ModelContext, method: str, output: str) -> float:
    """Seconds per row of SHAP by this method and output: a one-row call first (kernels load,
    a first call pays once), then COST_PROBE_ROWS rows timed."""
    def probe() -> float:
        from explainers.shap import explain

        wait_for_warmup()
        rows = sample_rows(ctx, COST_PROBE_ROWS)
        bg = background(ctx)
        try:
            with _noting_out_of_reach(ctx, method):
                explain(ctx.model, rows.iloc[:1], background=bg, method=method, output=output)
                t0 = time.perf_counter()
                explain(ctx.model, rows, background=bg, method=method, output=output)
        except ExplainerError:  # out of reach on this scale: the page falls back, and says so
            return 0.0
        return (time.perf_counter() - t0) / max(1, len(rows))

    return float(result_cache().get_or_compute(("shap_cost", ctx.model_key, ctx.data_key, method, output), probe))


def sample_cost(ctx: ModelContext, method: str, n_rows: int, output: str | None = "auto") -> tuple[float, int]:
    """(estimated seconds for the rows of a sample not yet explained, rows that fit in SLOW_VIEW_S)."""
    per_row = shap_seconds_per_row(ctx, method, output)
    fixed = shap_fixed_seconds(ctx, method, output)
    if per_row <= 0 and fixed <= 0:
        return 0.0, n_rows
    first = first_block(shap_is_fast(ctx, method, output), fixed, per_row)
    store = result_cache().get_or_compute(("shap_rows", ctx.model_key, ctx.data_key, method, output), _RowStore)
    positions = _nested_rows(len(ctx.X), n_rows)
    left = len(positions) - store.done(positions)
    cost = blocks_seconds(left, first, fixed, per_row)  # rows that cost nothing more still pay each call
    if per_row <= 0:
        return cost, n_rows
    return cost, max(10, int(max(SLOW_VIEW_S - fixed, per_row) / per_row) // 10 * 10)


def most_within(cost, lo: int, hi: int, budget: float) -> int:
    """The largest n in [lo, hi] with ``cost(n) <= budget``, for a cost that grows with n (``lo``
    where none above it fits): ``hi`` first, then halving the range (a view's cost function runs a
    handful of times, not once per candidate)."""
    if cost(hi) <= budget:
        return hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if cost(mid) <= budget else (lo, mid - 1)
    return lo


def block_seconds(fixed: float) -> float:
    """Seconds one block of SHAP rows should take: BLOCK_S, or four times a call's fixed cost
    (tree SHAP builds its leaf tables per call) so that the rows, not the calls, take the time."""
    return max(BLOCK_S, 4.0 * fixed)


def first_block(fast: bool, fixed: float, per_row: float) -> int:
    """Rows in the SHAP worker's first block: FIRST_FAST_BLOCK for a fast method, else the rows
    that fill :func:`block_seconds` by the cost line."""
    if fast:
        return FIRST_FAST_BLOCK
    if per_row <= 0:
        return 1
    return int(min(MAX_BLOCK, max(1, (block_seconds(fixed) - fixed) / per_row)))


def next_block(block: int, took: float, fixed: float) -> int:
    """The next block's rows after one of ``block`` rows took ``took`` seconds: twice as many
    under half the block time, half as many over twice it."""
    target = block_seconds(fixed)
    if took < target / 2:
        return min(block * 2, MAX_BLOCK)
    if took > 2 * target and block > 1:
        return max(1, block // 2)
    return block


def blocks_seconds(rows: int, first: int, fixed: float, per_row: float) -> float:
    """Seconds to explain ``rows`` rows block by block as the SHAP worker does (each call pays
    ``fixed``; blocks grow and shrink by :func:`next_block`)."""
    total, block, left = 0.0, max(1, int(first)), int(rows)
    while left > 0:
        took = fixed + per_row * min(block, left)
        total += took
        left -= block
        block = next_block(block, took, fixed)
    return total


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


def fmt_seconds(s: float) -> str:
    """A duration in words: '8 s', '3 min', '2.5 h'."""
    if s < 90:
        return f"{max(1, round(s))} s"
    if s < 5400:
        return f"{round(s / 60)} min"
    return f"{s / 3600:.1f} h"
