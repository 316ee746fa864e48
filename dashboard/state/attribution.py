"""The SHAP page's cached computations: one row's SHAP values (with masks), a seeded
sample's (explained block by block in a worker thread, kept row by row), the sample
split by a segment, the per-row prediction table, and the lines that read a result
(additivity, what the numbers are).
"""
from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import replace

import numpy as np
import pandas as pd

from .cache import result_cache
from .context import ModelContext
from .costs import (first_block, next_block, out_of_reach_note as _out_of_reach_note, proba_reach as _reach,
                    shap_fixed_seconds, shap_is_fast, shap_seconds_per_row, slow_by_kind)
from .outputs import adapter_output, log_odds_output, shap_output, target_output
from .predictions import all_labels, all_predictions
from .rows import _nested_rows, _RowStore, background, explain_into
from .worker import _POLL_S, in_worker


SHAP_METHODS = ("auto", "linear", "exact", "kernel", "tree")


def _with_model_prediction(ctx: ModelContext, res, frame: pd.DataFrame):
    """The result with the model's own prediction of ``frame`` in its params
    (``model_prediction``, shape like ``res.predictions``), in the result's output
    space: masks (or empty cells taken as missing) change what is explained, never
    what the model predicts."""
    out = {"margin": "raw", "raw": "raw", "proba": "proba", "log_odds": "log_odds"}.get(res.output, "auto")
    try:
        adapter = ctx.adapter.with_output(out, class_index=None)
        pred = np.asarray(adapter.predict(frame), dtype=float).reshape(len(frame), -1)
        want = np.shape(res.predictions)
        if len(want) == 1 and pred.shape[1] > 1:  # one class explained: that class's column
            names = [str(n) for n in adapter.output_names]
            named = str(res.output_names[0]) if res.output_names else None
            pred = pred[:, names.index(named) if named in names else -1]
        pred = pred.reshape(want)
    except Exception:  # noqa: BLE001 - the line then shows the explained prediction only
        return res
    return replace(res, params={**res.params, "model_prediction": pred})


def shap_setting(ctx: ModelContext, method: str) -> tuple[str, str | None]:
    """(explain's output, a note or None) for the SHAP views of this model, method and Scale."""
    output, note = shap_output(ctx, method, len(background(ctx)))
    if output == "proba" and _reach(ctx, method).get("note"):
        return log_odds_output(ctx), _reach(ctx, method)["note"]
    return output, note


def _noted(res, note: str | None):
    return res if not note else replace(res, params={**res.params, "scale_note": note})


def explain_on_scale(ctx: ModelContext, frame: pd.DataFrame, method: str, missing: tuple[str, ...],
                     empty_as_missing: bool, output: str):
    """SHAP values of the rows ``frame`` with ``explain``'s ``output`` (from :func:`shap_setting`);
    a probability game out of reach is explained on log-odds, ``params["scale_note"]`` saying why.
    The model's own prediction is added (:func:`_with_model_prediction`)."""
    from explainers.errors import OutOfReachError
    from explainers.shap import explain

    def run(out):
        return explain(ctx.model, frame, background=background(ctx), method=method, missing=list(missing) or None,
                       output=out, nan_is_missing=True if empty_as_missing else "auto")

    why = None
    try:
        res = run(output)
    except OutOfReachError as exc:
        if output != "proba":
            raise
        res, why = run(log_odds_output(ctx)), _out_of_reach_note(exc)
        res = replace(res, params={**res.params, "scale_fallback": True})
    return _with_model_prediction(ctx, _noted(res, why), frame)


def with_note(res, note: str | None):
    """A cached result with the setting's note (kept out of the cache: two settings share it)."""
    return _noted(res, note) if note and not res.params.get("scale_note") else res


def explain_row(ctx: ModelContext, row: int, method: str, missing: tuple[str, ...], notice=None,
                empty_as_missing: bool = False):
    """SHAP values of one row with the given features masked, cached per setting.

    ``notice``: a :class:`Working` (or any callable of the seconds waited) that the
    page's script calls every quarter of a second while the row is computed in a
    worker thread: a slow model (Kernel SHAP on an SVC: seconds per row) shows that it
    runs, and Streamlit's Stop and any widget change take effect at once instead of
    after the computation. Empty cells are values the model receives unless
    ``empty_as_missing`` (or the model cannot take them: see ``params["nan_reason"]``).
    The sidebar's Scale picks the output (:func:`shap_setting`); a probability game out
    of reach for this row is explained on log-odds, with ``params["scale_note"]`` saying why.
    """
    output, note = shap_setting(ctx, method)

    def compute():
        res = explain_on_scale(ctx, ctx.X.iloc[[row]], method, missing, empty_as_missing, output)
        # the explained row keeps its number, so a figure of it says "Row 123" by itself
        return replace(res, data=res.data.set_axis(pd.Index([row])))

    key = ("shap_row", ctx.model_key, ctx.data_key, row, method, output, missing, bool(empty_as_missing))
    res = with_note(in_worker(key, compute, notice), note)
    if res.params.get("scale_fallback") and not missing:
        # this model's probability games are out of reach: the next runs go to log-odds at once
        # (the row picker and the sample with them)
        _reach(ctx, method).setdefault("note", res.params.get("scale_note"))
    return res


def _explain_rows(ctx: ModelContext, method: str, output: str, positions: np.ndarray, store: _RowStore,
                  cancel: threading.Event, state: dict, block: int, fixed: float) -> None:
    """Worker thread: explain the unclaimed rows of ``positions`` block by block into ``store``."""
    bg = background(ctx)
    try:
        while not cancel.is_set():
            rows = store.claim(positions, block)
            if not rows:
                return
            state["partial"] = 0
            t0 = time.perf_counter()
            try:
                explain_into(ctx, ctx.X.iloc[rows], rows, store, method, output, bg,
                             progress=lambda done, total: state.__setitem__("partial", done))
            except BaseException:
                store.release(rows)
                raise
            state["partial"] = 0
            block = next_block(block, time.perf_counter() - t0, fixed)
    except BaseException as exc:  # handed to the waiting script
        state["error"] = exc


def explain_sample(ctx: ModelContext, n_rows: int, method: str, progress=None):
    """SHAP values of a seeded sample of rows, for the global views.

    The rows (:func:`sample_rows`: the sample of n rows is part of every larger one)
    are explained in blocks in a worker thread and kept row by row (:class:`_RowStore`,
    per model, data and method), so changing the sample size, a Stop or a rerun never
    throws away rows already done; the page's script waits, calling ``progress(done,
    total)`` every quarter of a second (rows done, counting those inside a block).

    ``params["rows"]`` holds the sampled rows' positions in the data as loaded (as a
    batch run's sample does): see :func:`attributions_frame`; they are ``data``'s
    index too, so hover text names the rows as the row pickers do. The sidebar's Scale
    picks the output (:func:`shap_setting`); a probability game out of reach for a row
    of the sample puts the whole sample on log-odds, ``params["scale_note"]`` saying why.
    """
    from explainers.errors import OutOfReachError

    output, note = shap_setting(ctx, method)
    if output == "proba" and _reach(ctx, method).get("sample_note"):  # a cost probe's rows: out of reach
        output, note = log_odds_output(ctx), _reach(ctx, method)["sample_note"]
    try:
        return _noted(_explain_sample(ctx, n_rows, method, output, progress), note)
    except OutOfReachError as exc:
        if output != "proba":
            raise
        note = _reach(ctx, method).setdefault("note", _out_of_reach_note(exc))
        return _noted(_explain_sample(ctx, n_rows, method, log_odds_output(ctx), progress), note)


def _explain_sample(ctx: ModelContext, n_rows: int, method: str, output: str, progress=None):
    positions = _nested_rows(len(ctx.X), n_rows)
    store = result_cache().get_or_compute(("shap_rows", ctx.model_key, ctx.data_key, method, output), _RowStore)
    total = len(positions)
    if slow_by_kind(ctx, method, output):  # starts at one row, no probe: the page's estimate may not have run
        fixed, fast, block = 0.0, False, 1
    else:
        fixed = shap_fixed_seconds(ctx, method, output)
        fast = shap_is_fast(ctx, method, output)
        block = first_block(fast, fixed, shap_seconds_per_row(ctx, method, output)) if (fast or fixed > 0) else 1
    cancel = threading.Event()
    state: dict = {}
    worker = None
    try:
        while True:
            done = store.done(positions)
            if done == total:
                break
            if worker is None or not worker.is_alive():
                if "error" in state:
                    raise state["error"]
                worker = threading.Thread(target=_explain_rows, name="glassbox-shap-sample", daemon=True,
                                          args=(ctx, method, output, positions, store, cancel, state, block, fixed))
                worker.start()
            if progress is not None:
                progress(min(done + int(state.get("partial", 0)), total), total)
            worker.join(_POLL_S)
            if not worker.is_alive() and "error" not in state and store.done(positions) < total:
                time.sleep(_POLL_S)  # the rows left are another worker's (a rerun's, a session's): wait
    except BaseException:
        cancel.set()  # a Stop, a rerun, an error: the worker ends after its block (whose rows are kept)
        raise
    if progress is not None:
        progress(total, total)
    return _assemble(ctx, store, positions)


def _assemble(ctx: ModelContext, store: _RowStore, positions: np.ndarray):
    """The sample's ShapResult from the kept rows."""
    from explainers.shap import ShapResult

    (values, base, preds, missing), meta = store.stacked(positions)
    return ShapResult(
        values=values, base_values=base, predictions=preds, feature_names=meta["feature_names"],
        missing=missing, method=meta["method"], output=meta["output"],
        output_names=meta["output_names"], data=ctx.X.iloc[positions].set_axis(pd.Index(positions)),
        params={**meta["params"], "rows": positions.tolist()},
    )


def attributions_frame(res) -> pd.DataFrame:
    """``res.to_frame()`` for a CSV, with ``row`` the row's position in the data file (0 is the first row).

    ``to_frame`` numbers the rows of the result (0, 1, ... of a sample); a sample
    (:func:`explain_sample`, or a batch run's) names its rows' positions in the
    file in ``params["rows"]``, the numbers the row pickers use.
    """
    frame = res.to_frame()
    rows = res.params.get("rows")
    if rows is not None and len(rows) == res.n_rows:
        frame["row"] = np.asarray(rows, dtype=np.int64)[frame["row"].to_numpy()]
    return frame


def row_table(model_key: str, data_key: str, class_index: int, _ctx: ModelContext, notice=None,
              output: str = "auto") -> pd.DataFrame:
    """Per row: the prediction (of the chosen class) and, with a target, the error.

    ``output``: the explanation's (``explain``'s output), so a row picker lists the
    predictions on the scale of the chart next to it. Cached per model, data, class and
    output; computed in a worker thread (:func:`in_worker`), ``notice`` showing that it
    runs when a slow model takes a while over every row.
    """
    key = ("row_table", model_key, data_key, class_index, target_output(_ctx), output)
    table = in_worker(key, lambda: _row_table(class_index, _ctx, output), notice)
    return table.copy()  # the cached one is shared by every session: never hand it out to be changed


def row_errors_listed(ctx: ModelContext, class_index: int) -> bool:
    """Whether :func:`row_table` has an error column (a target, and of several outputs the one
    it holds), known without predicting any row."""
    several = ctx.task == "regression" and getattr(ctx.adapter, "n_targets", 1) > 1
    return ctx.y is not None and (not several or target_output(ctx) == class_index)


def _scaled(ctx: ModelContext, output: str):
    """The adapter whose predictions are on the scale of ``explain``'s ``output``."""
    want = adapter_output(output, ctx)
    if want in ("auto", ctx.adapter.output):
        return ctx.adapter
    try:
        return ctx.adapter.with_output(want)
    except Exception:  # noqa: BLE001 - a margin the adapter cannot give: log-odds are the same for two classes
        return ctx.adapter.with_output("log_odds") if ctx.task == "binary" else ctx.adapter


def _row_table(class_index: int, _ctx: ModelContext, output: str = "auto") -> pd.DataFrame:
    scaled = _scaled(_ctx, output)
    pred = all_predictions(_ctx, scaled.output, scaled.class_index)  # shared with the other pages
    if pred.ndim == 2:
        pred = pred[:, min(class_index, pred.shape[1] - 1)]
    table = pd.DataFrame({"row": np.arange(len(_ctx.X)), "prediction": pred})
    if _ctx.task != "regression":  # the class the model predicts (a margin's sign or argmax is not shown)
        table["predicted"] = all_labels(_ctx).astype(str)
    if row_errors_listed(_ctx, class_index):
        # (of several outputs, only the one the target column holds has an error)
        if _ctx.task == "regression":
            table["error"] = np.abs(pred - _ctx.y.to_numpy(dtype=float))
        elif _ctx.adapter.output == "raw":  # a decision function: no probability to be wrong by
            wrong = table["predicted"].to_numpy() != _ctx.y.to_numpy().astype(str)
            table["error"] = np.where(_ctx.y.notna().to_numpy(), wrong.astype(float), np.nan)
        else:
            # error = 1 - probability given to the true class
            position = {str(c): i for i, c in enumerate(_ctx.adapter.classes)}
            idx = np.array([position.get(str(t), -1) for t in _ctx.y])
            proba = all_predictions(_ctx, _ctx.adapter.output, _ctx.adapter.class_index)
            table["error"] = np.where(idx >= 0, 1.0 - proba[np.arange(len(idx)), np.maximum(idx, 0)], np.nan)
        table["target"] = _ctx.y.to_numpy()
    return table


def additivity_line(res, row: int, class_index: int | None) -> str:
    """'base + contributions = prediction' with the numbers of this row, and the
    model's own prediction (``params["model_prediction"]`` where the page added it); where
    features are treated as missing the two differ, and the line names both.

    Six significant digits on the data's own scale (``192,634``, ``1.23457M``); a
    rounding residue like -1.1e-16 next to numbers of order 1 is written 0.
    """
    from dashboard.figures.style import fmt_number

    vals = res.values[row] if class_index is None else res.values[row, :, class_index]
    base = float(res.base_values[row] if class_index is None else res.base_values[row, class_index])
    own = (getattr(res, "params", None) or {}).get("model_prediction")  # the model's real output (masks change only what is explained)
    source = res.predictions if own is None else own
    pred = float(source[row] if class_index is None else source[row, class_index])
    total = float(np.sum(vals))
    scale = max(abs(base), abs(pred), abs(total), float(np.sum(np.abs(vals))))

    def f(v, sign=False):
        return fmt_number(v, scale, digits=6, sign=sign)

    start = f"base {f(base)} + contributions {f(total, True)}"
    if f(base + total) == f(pred):
        return f"{start} = prediction {f(base + total)} (model: {f(pred)})"
    # features taken out of the game (masked, or empty cells as missing): a different number, by design
    return (f"{start} = explained {f(base + total)} (features treated as missing) · "
            f"the model's own prediction {f(pred)}")


def output_label(res, class_index: int | None) -> str:
    """What the numbers are: 'prediction', or 'P(class)' / 'log-odds(class)'."""
    from dashboard.figures.style import output_words

    if class_index is None and res.values.ndim == 2:
        name = res.output_names[0] if res.output_names else ""
        return "prediction" if res.output == "raw" else output_words(res.output, name, compact=True)
    return output_words(res.output, res.output_names[class_index], compact=True)


def _shap_rows(res, keep: np.ndarray):
    """The rows ``keep`` (positions in the result) of a ShapResult."""
    rows = np.asarray(res.params.get("rows", np.arange(res.n_rows)))[keep]
    return replace(res, values=res.values[keep], base_values=res.base_values[keep],
                   predictions=res.predictions[keep], missing=res.missing[keep], data=res.data.iloc[keep],
                   params={**res.params, "rows": rows.tolist()})


@dataclasses.dataclass(frozen=True)
class SegmentSample:
    """A SHAP sample split by a segment: ``segment`` and ``rest`` (ShapResults, None when
    ``problem``), the rows of each in the sample, and why they cannot be compared."""

    segment: object
    rest: object
    n_segment: int
    n_rest: int
    problem: str | None


def split_sample(res, mask: np.ndarray, min_rows: int | None = None) -> SegmentSample:
    """Split a sample's SHAP values (``params["rows"]``: positions in the data) by a
    segment's mask over the data; too few rows on a side gives ``problem`` instead."""
    from .segments import MIN_SEGMENT_ROWS

    least = MIN_SEGMENT_ROWS if min_rows is None else min_rows
    rows = np.asarray(res.params.get("rows", np.arange(res.n_rows)), dtype=np.int64)
    inside = np.asarray(mask, dtype=bool)[rows]
    k, m = int(inside.sum()), int((~inside).sum())
    if k < least or m < least:
        return SegmentSample(None, None, k, m, (
            f"The sample of {len(rows):,} rows holds {k:,} of the segment's rows and {m:,} of the rest's; at "
            f"least {least:,} of each are needed to compare them. Raise the number of rows in the sample."))
    return SegmentSample(_shap_rows(res, np.flatnonzero(inside)), _shap_rows(res, np.flatnonzero(~inside)), k, m, None)


def shap_sample_by_segment(ctx: ModelContext, active, n_rows: int, method: str, sample) -> SegmentSample:
    """:func:`split_sample` of the page's SHAP sample (:func:`explain_sample` of ``n_rows``
    rows with ``method``), cached per model, data, segment and settings."""
    key = ("shap_segment", ctx.model_key, ctx.data_key, active.key, int(n_rows), method)
    return result_cache().get_or_compute(key, lambda: split_sample(sample, active.mask))
