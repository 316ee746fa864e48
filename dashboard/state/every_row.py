"""Every row of a large table, summed block by block (issue #31): mean |SHAP| and mean |SHAP interaction|.

The SHAP and Interactions pages' global views start from a seeded sample; on request this
adds up every row's |SHAP value| (or |SHAP interaction value| of each pair) block by block in
a worker thread, with progress, and keeps the running sums per model, data and setting, so a
Stop (or a rerun) loses nothing: the next request goes on from the rows already added, and
sessions share the work. Only the sums are kept, never the rows' values (a million rows of 30
features would be 240 MB of SHAP values, 7 GB of interaction values), and a block's own
values are bounded (:data:`BLOCK_BYTES`).
"""
from __future__ import annotations

import threading
import time

import numpy as np

from .cache import result_cache
from .context import ModelContext
from .costs import (best_of_two, blocks_seconds, first_block, next_block, out_of_reach_note, shap_cost_line,
                    shap_is_fast)
from .rows import background
from .worker import _POLL_S  # seconds between the page's looks at the worker

#: the most bytes of values one block of rows may hold (a block of interaction values is rows x
#: features² x outputs numbers, and its sums need as much again)
BLOCK_BYTES = 64 * 2**20


class _Sums:
    """Rows ``0 .. done - 1`` of the data added: the running sums of their values (a tuple of
    arrays), shared by sessions."""

    def __init__(self):
        self.lock = threading.Lock()
        self.done = 0
        self.total = None  # a tuple of arrays
        self.like = None  # a small result naming the features and outputs
        self.worker = None
        self.error = None
        self.seconds = 0.0  # the worker's seconds on the rows added

    def seconds_left(self, n: int, estimate) -> float:
        """Seconds for rows ``done .. n - 1``: at the pace of the rows added so far once they took
        a second (what this machine and model really did), else ``estimate(rows left)``."""
        left = max(0, n - self.done)
        if not left:
            return 0.0
        if self.done and self.seconds >= 1.0:
            return left * self.seconds / self.done
        return estimate(left)


def _block_rows_cap(values_per_row: int) -> int:
    """The most rows a block may have when each row's values are ``values_per_row`` numbers."""
    return max(1, BLOCK_BYTES // (2 * 8 * max(1, int(values_per_row))))


def _every_row(sums: _Sums, n: int, add_block, plan, progress, name: str) -> None:
    """Wait while a worker thread adds rows ``sums.done .. n - 1`` block by block, calling
    ``progress(done, n)``; ``add_block(start, stop)`` returns a block's (sums, like), ``plan()``
    the (first block, fixed seconds per call, most rows per block). A Stop or an error stops the
    worker after its block (whose rows are kept)."""
    cancel = threading.Event()
    try:
        while True:
            with sums.lock:
                done, worker = sums.done, sums.worker
                if done >= n:
                    break
                if worker is None or not worker.is_alive():
                    if sums.error is not None:
                        error, sums.error = sums.error, None
                        raise error
                    worker = sums.worker = threading.Thread(
                        target=_add_blocks, args=(sums, n, add_block, plan, cancel), name=name, daemon=True)
                    worker.start()
            if progress is not None:
                progress(done, n)
            worker.join(_POLL_S)
    except BaseException:
        cancel.set()  # a Stop, a rerun, an error: the worker ends after its block (whose rows are kept)
        raise
    if progress is not None:
        progress(n, n)


def _add_blocks(sums: _Sums, n: int, add_block, plan, cancel: threading.Event) -> None:
    """Worker thread: the rows after ``sums.done`` in blocks, their sums added to ``sums.total``."""
    try:
        block, fixed, most = plan()
        block = min(block, most)
        while not cancel.is_set():
            start = sums.done
            if start >= n:
                return
            stop = min(n, start + block)
            t0 = time.perf_counter()
            parts, like = add_block(start, stop)
            with sums.lock:
                sums.total = parts if sums.total is None else tuple(a + b for a, b in zip(sums.total, parts))
                if sums.like is None:
                    sums.like = like
                sums.done = stop
                sums.seconds += time.perf_counter() - t0
            block = min(next_block(block, time.perf_counter() - t0, fixed), most)
    except BaseException as exc:  # handed to the waiting script
        sums.error = exc


# ------------------------------------------------------------- mean |SHAP|
def _sums(ctx: ModelContext, method: str, output: str) -> _Sums:
    return result_cache().get_or_compute(("shap_every_row", ctx.model_key, ctx.data_key, method, output), _Sums)


def rows_added(ctx: ModelContext, method: str, output: str) -> int:
    """Rows of the data whose |SHAP| the running sums hold already."""
    return _sums(ctx, method, output).done


def every_row_seconds(ctx: ModelContext, method: str, output: str) -> float:
    """Estimated seconds for the rows not added yet: by the line of block-sized calls
    (:func:`shap_block_line`) and the worker's blocks, or once some rows took a second, at their pace."""
    def estimate(left: int) -> float:
        fixed, per_row = shap_cost_line(ctx, method, output)
        first = first_block(shap_is_fast(ctx, method, output), fixed, per_row)
        fixed, per_row = shap_block_line(ctx, method, output)
        return blocks_seconds(left, first, fixed, per_row)

    return _sums(ctx, method, output).seconds_left(len(ctx.X), estimate)


def shap_block_line(ctx: ModelContext, method: str, output: str) -> tuple[float, float]:
    """(fixed seconds per call, seconds per row) of SHAP values in block-sized calls
    (:func:`_block_line`), cached; a slow model keeps the page's cost line (at a million rows that
    line said 98 s for 60 s of work: its few rows ran on one thread)."""
    def probe() -> tuple[float, float]:
        from explainers.errors import OutOfReachError
        from explainers.shap import explain

        from .outputs import log_odds_output

        bg = background(ctx)
        line = shap_cost_line(ctx, method, output)
        for out in (output, log_odds_output(ctx)):  # out of reach in probabilities: the log-odds explained instead
            try:
                return _block_line(ctx, line, lambda rows: explain(ctx.model, rows, background=bg, method=method,
                                                                   output=out)) or line
            except OutOfReachError:
                if out != "proba":
                    break
            except Exception:  # noqa: BLE001 - the computation itself will say what is wrong
                break
        return line

    return result_cache().get_or_compute(("shap_block_line", ctx.model_key, ctx.data_key, method, output), probe)


def mean_abs_every_row(ctx: ModelContext, method: str, output: str, progress=None):
    """Mean |SHAP value| per feature (and output) over every row: a
    :class:`~explainers.shap.result.MeanAbsShap`. ``output`` is the one the sample's views were
    explained with. The page's script waits, calling ``progress(done, total)``; a Stop raised
    there stops the worker after its block, and the rows added so far are kept. A probability
    game out of reach on some row puts every row on log-odds, ``params["scale_note"]`` saying why."""
    from dataclasses import replace

    from explainers.errors import OutOfReachError

    try:
        return _mean_abs(ctx, method, output, progress)
    except OutOfReachError as exc:
        if output != "proba":
            raise
        from .outputs import log_odds_output

        res = _mean_abs(ctx, method, log_odds_output(ctx), progress)
        return replace(res, params={**res.params, "scale_note": out_of_reach_note(exc)})


def _mean_abs(ctx: ModelContext, method: str, output: str, progress=None):
    from explainers.shap import explain
    from explainers.shap.result import MeanAbsShap

    def plan():
        fixed, per_row = shap_cost_line(ctx, method, output)
        return first_block(shap_is_fast(ctx, method, output), fixed, per_row), fixed, _block_rows_cap(ctx.X.shape[1] * 3)

    held = {}

    def add_block(start: int, stop: int):
        if "bg" not in held:  # in the worker: the page's script only waits
            held["bg"] = background(ctx)
        res = explain(ctx.model, ctx.X.iloc[start:stop], background=held["bg"], method=method, output=output)
        part = np.abs(res.values).sum(axis=0)
        return (part,), MeanAbsShap.from_sum(part, stop - start, res)

    sums = _sums(ctx, method, output)
    _every_row(sums, len(ctx.X), add_block, plan, progress, "glassbox-shap-every-row")
    return MeanAbsShap.from_sum(sums.total[0], len(ctx.X), sums.like)


# ------------------------------------------------- mean |SHAP interaction|
def _interaction_sums(ctx: ModelContext, method: str) -> _Sums:
    return result_cache().get_or_compute(("interactions_every_row", ctx.model_key, ctx.data_key, method), _Sums)


def _interaction_plan(ctx: ModelContext, method: str) -> tuple[int, float, int]:
    """(first block, fixed seconds per call, most rows per block) of SHAP interaction values:
    the block by the cost line, at most what :data:`BLOCK_BYTES` holds (features² per output)."""
    from .interactions import shap_interaction_line

    fixed, per_row = shap_interaction_line(ctx, method)
    outputs = len(ctx.classes) if ctx.classes is not None else 1
    return first_block(False, fixed, per_row), fixed, _block_rows_cap(ctx.X.shape[1] ** 2 * outputs)


def interaction_rows_added(ctx: ModelContext) -> int:
    """Rows of the data whose |SHAP interaction values| the running sums hold already."""
    from .interactions import interaction_method

    method, _ = interaction_method(ctx)
    return 0 if method is None else _interaction_sums(ctx, method).done


#: rows of the two probes of every row's interaction values (block-sized calls, threads and all)
EVERY_PROBE_ROWS = (256, 1024)
#: seconds the larger probe may take by the cost line of a few rows (it runs twice, the smaller too)
EVERY_PROBE_S = 0.2


def _block_line(ctx: ModelContext, line: tuple[float, float], run) -> tuple[float, float] | None:
    """(fixed seconds per call, seconds per row) of ``run(rows)`` in block-sized calls: the line
    through two probes of EVERY_PROBE_ROWS rows, the best of two runs each. None where the larger
    probe would take over EVERY_PROBE_S by ``line`` (the page's line of a few rows): a slow model,
    whose rows dominate its cost anyway."""
    from .rows import sample_rows

    fixed, per_row = line
    small, big = EVERY_PROBE_ROWS
    big = min(big, len(ctx.X), int((EVERY_PROBE_S - fixed) / per_row) if per_row > 0 else big)
    if big < 2 * small:
        return None
    rows = sample_rows(ctx, big)
    t_small, t_big = best_of_two(run, rows.iloc[:small]), best_of_two(run, rows)
    slope = max(0.0, (t_big - t_small) / (len(rows) - small))
    return max(0.0, t_small - slope * small), slope


def interaction_block_line(ctx: ModelContext, method: str) -> tuple[float, float]:
    """(fixed seconds per call, seconds per row) of SHAP interaction values in block-sized calls
    (:func:`_block_line`), cached. The page's cost line comes from a few rows on one thread, where
    a few milliseconds of noise swing the slope (at a million rows it said 35 s, then 12 min, for
    110 s of work), and a block's rows share the threads. A slow model keeps that line, the tree
    walk's rows shared among its threads."""
    from .interactions import interaction_explainer, interactions_of, shap_interaction_line

    def probe() -> tuple[float, float]:
        line = shap_interaction_line(ctx, method)
        explainer = interaction_explainer(ctx, method)
        try:
            got = _block_line(ctx, line, lambda rows: interactions_of(explainer, method, rows))
        except Exception:  # noqa: BLE001 - the computation itself will say what is wrong
            got = None
        if got is not None:
            return got
        threads = 1
        if method == "tree":
            from explainers.shap.interactions import interaction_threads

            threads = interaction_threads(explainer, _interaction_plan(ctx, method)[2])
        return line[0], line[1] / threads

    return result_cache().get_or_compute(("interactions_block_line", ctx.model_key, ctx.data_key, method), probe)


def interactions_every_row_seconds(ctx: ModelContext) -> float:
    """Estimated seconds for the rows not added yet: by the line of block-sized calls
    (:func:`interaction_block_line`) and the worker's blocks, or once some rows took a second, at
    their pace."""
    from .interactions import interaction_method

    method, _ = interaction_method(ctx)
    if method is None:
        return 0.0

    def estimate(left: int) -> float:
        fixed, per_row = interaction_block_line(ctx, method)
        first, _, most = _interaction_plan(ctx, method)
        return blocks_seconds(left, min(first, most), fixed, per_row)

    return _interaction_sums(ctx, method).seconds_left(len(ctx.X), estimate)


def interactions_every_row(ctx: ModelContext, progress=None):
    """How strongly each pair of features interacts over every row: a
    :class:`~explainers.shap.MeanInteraction` (mean |SHAP interaction value| of each pair, every
    output kept), from the SHAP interaction values the sample's heatmap has (tree SHAP, or the
    exact game over its background), explained block by block and never kept. The page's script
    waits, calling ``progress(done, total)``; a Stop raised there stops the worker after its
    block, and the rows added so far are kept. Raises ExplainerError where the model gets no SHAP
    interaction values."""
    from explainers import ExplainerError
    from explainers.shap import MeanInteraction

    from .interactions import interaction_explainer, interaction_method, interactions_of

    method, reason = interaction_method(ctx)
    if method is None:
        raise ExplainerError(reason)
    held = {}

    def add_block(start: int, stop: int):
        if "explainer" not in held:  # in the worker: the page's script only waits
            held["explainer"] = interaction_explainer(ctx, method)
        res = interactions_of(held["explainer"], method, ctx.X.iloc[start:stop])
        pair, scale = res.pair_abs_sums()
        return (pair, scale), MeanInteraction.from_sums(pair, scale, stop - start, res)

    sums = _interaction_sums(ctx, method)
    _every_row(sums, len(ctx.X), add_block, lambda: _interaction_plan(ctx, method), progress,
               "glassbox-interactions-every-row")
    return MeanInteraction.from_sums(*sums.total, len(ctx.X), sums.like)
