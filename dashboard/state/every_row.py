"""Mean |SHAP| of every row of a large table (issue #31).

The SHAP page's global views start from a seeded sample; on request this adds up every
row's |SHAP value| block by block in a worker thread, with progress, and keeps the running
sums per model, data, method and output, so a Stop (or a rerun) loses nothing: the next
request goes on from the rows already added, and sessions share the work. Only the sums
are kept, never the rows' values (a million rows of 30 features would be 240 MB).
"""
from __future__ import annotations

import threading
import time

import numpy as np

from .cache import result_cache
from .context import ModelContext
from .costs import blocks_seconds, first_block, next_block, out_of_reach_note, shap_cost_line, shap_is_fast
from .rows import background
from .worker import _POLL_S  # seconds between the page's looks at the worker


class _Sums:
    """Rows ``0 .. done - 1`` of the data added: the sum of their |SHAP values|, shared by sessions."""

    def __init__(self):
        self.lock = threading.Lock()
        self.done = 0
        self.total = None  # (p,) or (p, k)
        self.like = None  # a small result naming the features and outputs
        self.worker = None
        self.error = None


def _sums(ctx: ModelContext, method: str, output: str) -> _Sums:
    return result_cache().get_or_compute(("shap_every_row", ctx.model_key, ctx.data_key, method, output), _Sums)


def rows_added(ctx: ModelContext, method: str, output: str) -> int:
    """Rows of the data whose |SHAP| the running sums hold already."""
    return _sums(ctx, method, output).done


def every_row_seconds(ctx: ModelContext, method: str, output: str) -> float:
    """Estimated seconds for the rows not added yet, by the SHAP cost line and the worker's blocks."""
    fixed, per_row = shap_cost_line(ctx, method, output)
    left = len(ctx.X) - rows_added(ctx, method, output)
    return blocks_seconds(left, first_block(shap_is_fast(ctx, method, output), fixed, per_row), fixed, per_row)


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
    sums = _sums(ctx, method, output)
    n = len(ctx.X)
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
                        target=_add_rows, args=(ctx, method, output, sums, cancel), name="glassbox-shap-every-row",
                        daemon=True)
                    worker.start()
            if progress is not None:
                progress(done, n)
            worker.join(_POLL_S)
    except BaseException:
        cancel.set()  # a Stop, a rerun, an error: the worker ends after its block (whose rows are kept)
        raise
    if progress is not None:
        progress(n, n)
    from explainers.shap.result import MeanAbsShap

    return MeanAbsShap.from_sum(sums.total, n, sums.like)


def _add_rows(ctx: ModelContext, method: str, output: str, sums: _Sums, cancel: threading.Event) -> None:
    """Worker thread: explain the rows after ``sums.done`` in blocks, adding their |values|."""
    from explainers.shap import explain

    try:
        fixed, per_row = shap_cost_line(ctx, method, output)
        block = first_block(shap_is_fast(ctx, method, output), fixed, per_row)
        bg = background(ctx)
        n = len(ctx.X)
        while not cancel.is_set():
            start = sums.done
            if start >= n:
                return
            stop = min(n, start + block)
            t0 = time.perf_counter()
            res = explain(ctx.model, ctx.X.iloc[start:stop], background=bg, method=method, output=output)
            part = np.abs(res.values).sum(axis=0)
            with sums.lock:
                sums.total = part if sums.total is None else sums.total + part
                if sums.like is None:
                    from explainers.shap.result import MeanAbsShap

                    sums.like = MeanAbsShap.from_sum(part, stop - start, res)
                sums.done = stop
            block = next_block(block, time.perf_counter() - t0, fixed)
    except BaseException as exc:  # handed to the waiting script
        sums.error = exc
