"""The cached computations the pages call: PDP/ALE, SHAP, importance and the report.

Pages never compute: they call these, whose cache keys are the model and data
fingerprints plus every setting. Long results (with a progress bar) go through
:func:`~dashboard.state.cache.result_cache`; quick ones through ``st.cache_data``.
"""
from __future__ import annotations

import dataclasses
import json
import os
import threading
from dataclasses import replace
import time
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from explainers import ExplainerError

from .cache import result_cache
from .context import ModelContext, error_message, feature_summary
from .session import batch_roots, pdp_class, shap_class


# ----------------------------------------------------------------- data rows
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


def _nested_rows(n_total: int, n: int) -> np.ndarray:
    """Positions of a seeded sample of n rows, in data order, nested: the sample of n rows
    is part of the sample of any larger n (the first n of one fixed shuffle), so a larger
    sample reuses every row a smaller one explained."""
    if n_total <= n:
        return np.arange(n_total)
    return np.sort(np.random.default_rng(0).permutation(n_total)[:n])


def sample_rows(ctx: ModelContext, n_rows: int) -> pd.DataFrame:
    """A seeded sample of the data's rows (the global views, the 2D data overlay);
    the sample of n rows is part of every larger one."""
    return ctx.X.iloc[_nested_rows(len(ctx.X), n_rows)]


def background(ctx: ModelContext, n: int = 100) -> pd.DataFrame:
    """A seeded sample of the data as the SHAP background (training rows where known)."""
    (X_tr, _), _ = split_rows(ctx)
    return X_tr.iloc[_seeded_rows(len(X_tr), n)]


class ProgressBar:
    """A progress callback for st.progress that also estimates the time left."""

    def __init__(self, bar, label: str):
        import time

        self._time = time.perf_counter
        self._start = self._time()
        self.bar = bar
        self.label = label

    def __call__(self, done: int, total: int) -> None:
        frac = min(done / total, 1.0) if total else 1.0
        elapsed = self._time() - self._start
        text = f"{self.label}: {done:,} of {total:,}"
        if frac < 1:
            text += f" · {elapsed:.1f} s"  # moves while a slow row is computed, too
            if frac > 0 and elapsed > 0.5:
                text += f", about {elapsed * (1 - frac) / frac:.0f} s left"
        self.bar.progress(frac, text=text)


# ------------------------------------------------------------------------- PDP
PDP_MAX_ROWS = 2_000  # rows behind a PDP/ICE on the page; a seeded sample above that


def pdp(ctx: ModelContext, features: tuple[str, ...], grid_resolution: int, percentiles: tuple[float, float],
        max_rows: int = PDP_MAX_ROWS):
    """Partial dependence (and ICE for one feature), cached per model, data and settings."""
    sample = max_rows if len(ctx.X) > max_rows else None

    def compute():
        from explainers.pdp import partial_dependence

        return partial_dependence(
            ctx.model, ctx.X, list(features), grid_resolution=grid_resolution, percentiles=percentiles,
            kind="both" if len(features) == 1 else "average", sample=sample, random_state=0,
        )

    key = ("pdp", ctx.model_key, ctx.data_key, features, grid_resolution, percentiles, sample)
    return result_cache().get_or_compute(key, compute)


def ale(ctx: ModelContext, feature, n_bins: int):
    """ALE of one numeric feature (a name), or second-order ALE of two (a tuple), cached."""
    def compute():
        from explainers.ale import ale as ale_fn

        return ale_fn(ctx.model, ctx.X, list(feature) if isinstance(feature, tuple) else feature,
                      n_bins=n_bins)

    return result_cache().get_or_compute(("ale", ctx.model_key, ctx.data_key, feature, n_bins), compute)


# ------------------------------------------------------------------------ SHAP
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


def explain_row(ctx: ModelContext, row: int, method: str, missing: tuple[str, ...], notice=None,
                empty_as_missing: bool = False):
    """SHAP values of one row with the given features masked, cached per setting.

    ``notice``: a :class:`Working` (or any callable of the seconds waited) that the
    page's script calls every quarter of a second while the row is computed in a
    worker thread: a slow model (Kernel SHAP on an SVC: seconds per row) shows that it
    runs, and Streamlit's Stop and any widget change take effect at once instead of
    after the computation. Empty cells are values the model receives unless
    ``empty_as_missing`` (or the model cannot take them: see ``params["nan_reason"]``).
    """
    def compute():

        from explainers.shap import explain

        res = explain(ctx.model, ctx.X.iloc[[row]], background=background(ctx),
                      method=method, missing=list(missing) or None,
                      nan_is_missing=True if empty_as_missing else "auto")
        res = _with_model_prediction(ctx, res, ctx.X.iloc[[row]])
        # the explained row keeps its number, so a figure of it says "Row 123" by itself
        return replace(res, data=res.data.set_axis(pd.Index([row])))

    key = ("shap_row", ctx.model_key, ctx.data_key, row, method, missing, bool(empty_as_missing))
    return in_worker(key, compute, notice)


#: key -> (thread, {"error": exception}) of the computations running in worker threads
_RUNNING: dict = {}
_RUNNING_LOCK = threading.Lock()
#: seconds a call may take before the page shows that it runs, and between updates
_QUIET_S, _POLL_S = 0.1, 0.25


def in_worker(key: tuple, compute, notice=None):
    """``result_cache().get_or_compute(key, compute)`` in a worker thread, the page's
    script waiting on it and calling ``notice(seconds)`` meanwhile (after 0.1 s, every
    0.25 s). Two sessions (or two reruns) asking for the same key share one computation."""
    cache = result_cache()
    with _RUNNING_LOCK:
        running = _RUNNING.get(key)
        if running is None or not running[0].is_alive():
            box: dict = {}

            def work():
                try:
                    cache.get_or_compute(key, compute)
                except BaseException as exc:  # handed to the waiting script
                    box["error"] = exc
                finally:
                    with _RUNNING_LOCK:
                        if _RUNNING.get(key, (None,))[0] is threading.current_thread():
                            del _RUNNING[key]

            thread = threading.Thread(target=work, name="glassbox-shap-row", daemon=True)
            running = _RUNNING[key] = (thread, box)
            thread.start()
    thread, box = running
    start = time.perf_counter()
    thread.join(_QUIET_S)
    while thread.is_alive():
        if notice is not None:
            notice(time.perf_counter() - start)
        thread.join(_POLL_S)
    if notice is not None and hasattr(notice, "done"):
        notice.done()
    if "error" in box:
        raise box["error"]
    return cache.get_or_compute(key, compute)  # a hit (or a recompute had it been evicted)


class Working:
    """A running indicator for one slow call, drawn where the page creates it: nothing for
    a call done within 0.1 s, else a spinning status line with the seconds waited, removed
    when the call returns."""

    def __init__(self, text: str):
        self.text = text
        self._slot = st.empty()

    def __call__(self, seconds: float) -> None:
        # every call reaches Streamlit, which is where a Stop or a rerun takes effect
        self._slot.status(f"{self.text} {seconds:.1f} s", state="running", expanded=False)

    def done(self) -> None:
        self._slot.empty()


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


#: seconds one block of rows should take: long enough to share work within the block,
#: short enough for the bar to move and a Stop to stop soon
_BLOCK_S = 0.5


def _explain_rows(ctx: ModelContext, method: str, positions: np.ndarray, store: _RowStore, cancel: threading.Event,
                  state: dict, first_block: int) -> None:
    """Worker thread: explain the unclaimed rows of ``positions`` block by block into ``store``."""
    from explainers.shap import explain

    bg = background(ctx)
    block = first_block
    try:
        while not cancel.is_set():
            rows = store.claim(positions, block)
            if not rows:
                return
            state["partial"] = 0
            t0 = time.perf_counter()
            try:
                res = explain(ctx.model, ctx.X.iloc[rows], background=bg, method=method,
                              progress=lambda done, total: state.__setitem__("partial", done))
            except BaseException:
                store.release(rows)
                raise
            store.put(rows, res)
            state["partial"] = 0
            took = time.perf_counter() - t0
            if took < _BLOCK_S / 2:
                block = min(block * 2, 4096)
            elif took > 2 * _BLOCK_S and block > 1:
                block = max(1, block // 2)
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
    index too, so hover text names the rows as the row pickers do.
    """
    positions = _nested_rows(len(ctx.X), n_rows)
    store = result_cache().get_or_compute(("shap_rows", ctx.model_key, ctx.data_key, method), _RowStore)
    total = len(positions)
    fast = method in ("tree", "linear") or (method == "auto" and shap_is_fast(ctx))
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
                                          args=(ctx, method, positions, store, cancel, state, 256 if fast else 1))
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

    with store.lock:
        parts = [store.rows[int(r)] for r in positions]
        meta = dict(store.meta)
    return ShapResult(
        values=np.stack([p[0] for p in parts]), base_values=np.stack([p[1] for p in parts]),
        predictions=np.stack([p[2] for p in parts]), feature_names=meta["feature_names"],
        missing=np.stack([p[3] for p in parts]), method=meta["method"], output=meta["output"],
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


def edited_row(ctx: ModelContext, values: tuple) -> tuple[pd.DataFrame, tuple]:
    """One edited row as a frame with the data's column types, and its cache key values.

    A blank value (None or NaN) stays blank: NaN in the row, whatever the column's type;
    blanks enter the key as None (NaN != NaN), so an unchanged row finds its result again.
    """
    blank = tuple(v is None or (not isinstance(v, str) and bool(pd.isna(v))) for v in values)
    row = pd.DataFrame([[np.nan if b else v for v, b in zip(values, blank)]], columns=list(ctx.X.columns))
    for col, dtype in ctx.X.dtypes.items():
        try:
            row[col] = row[col].astype(dtype)
        except (TypeError, ValueError):  # a blank in an integer column stays a float NaN
            pass
    return row, tuple(None if b else v for v, b in zip(values, blank))


def explain_edited(ctx: ModelContext, values: tuple, missing: tuple[str, ...], empty_as_missing: bool = False):
    """SHAP values (automatic method) of one edited row (:func:`edited_row`), cached by its values and mask."""
    row, key_values = edited_row(ctx, values)

    def compute():
        from explainers.shap import explain

        res = explain(ctx.model, row, background=background(ctx), missing=list(missing) or None,
                      nan_is_missing=True if empty_as_missing else "auto")
        return _with_model_prediction(ctx, res, row)

    return result_cache().get_or_compute(
        ("whatif", ctx.model_key, ctx.data_key, key_values, missing, bool(empty_as_missing)), compute)


def shap_is_fast(ctx: ModelContext) -> bool:
    """Whether the automatic SHAP method for this model is a fast one (linear or tree)."""
    try:
        from explainers.shap import auto
    except Exception:
        return False
    try:
        method, _ = auto.choose_method(ctx.model, ctx.X.shape[1], 100)
    except Exception:
        return False
    return method in ("linear", "tree")


#: rows the cost probe explains, and the seconds above which a view runs only on request with a warning
COST_PROBE_ROWS, SLOW_VIEW_S = 2, 10.0


def shap_seconds_per_row(ctx: ModelContext, method: str) -> float:
    """Seconds one row of SHAP takes with this method, measured once on a small probe
    (cached per model, data and method; 0 for the fast tree and linear methods)."""
    if method in ("tree", "linear") or (method == "auto" and shap_is_fast(ctx)):
        return 0.0

    def probe() -> float:
        from explainers.shap import explain

        rows = sample_rows(ctx, COST_PROBE_ROWS)
        t0 = time.perf_counter()
        explain(ctx.model, rows, background=background(ctx), method=method)
        return (time.perf_counter() - t0) / max(1, len(rows))

    return float(result_cache().get_or_compute(("shap_cost", ctx.model_key, ctx.data_key, method), probe))


def sample_cost(ctx: ModelContext, method: str, n_rows: int) -> tuple[float, int]:
    """(estimated seconds for the rows of a sample not yet explained, rows that fit in SLOW_VIEW_S)."""
    per_row = shap_seconds_per_row(ctx, method)
    if per_row <= 0:
        return 0.0, n_rows
    store = result_cache().get_or_compute(("shap_rows", ctx.model_key, ctx.data_key, method), _RowStore)
    positions = _nested_rows(len(ctx.X), n_rows)
    left = len(positions) - store.done(positions)
    return per_row * left, max(10, int(SLOW_VIEW_S / per_row) // 10 * 10)


def predict_seconds_per_row(ctx: ModelContext) -> float:
    """Seconds one more row costs the model's predict (measured once: 256 rows against
    2,048, so a call's fixed cost is left out; cached per model and data): what the
    pages multiply to know a view's cost."""
    def probe() -> float:
        rows = sample_rows(ctx, min(256, len(ctx.X)))
        big = pd.concat([rows] * max(1, 2048 // len(rows)), ignore_index=True)
        ctx.adapter.predict(rows.iloc[:2])  # a first call may pay one-time costs

        def took(frame) -> float:
            best = np.inf
            for _ in range(2):
                t0 = time.perf_counter()
                ctx.adapter.predict(frame)
                best = min(best, time.perf_counter() - t0)
            return best

        # the cost of one more row (the computations predict in large batches), not of a call
        small, large = took(rows), took(big)
        if len(big) > len(rows):
            return max(0.0, (large - small) / (len(big) - len(rows)))
        return large / len(big)

    return float(result_cache().get_or_compute(("predict_cost", ctx.model_key, ctx.data_key), probe))


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


def row_table(model_key: str, data_key: str, class_index: int, _ctx: ModelContext, notice=None) -> pd.DataFrame:
    """Per row: the prediction (of the chosen class) and, with a target, the error.

    Cached per model, data and class; computed in a worker thread (:func:`in_worker`),
    ``notice`` showing that it runs when a slow model takes a while over every row.
    """
    table = in_worker(("row_table", model_key, data_key, class_index), lambda: _row_table(class_index, _ctx), notice)
    return table.copy()  # the cached one is shared by every session: never hand it out to be changed


def _row_table(class_index: int, _ctx: ModelContext) -> pd.DataFrame:
    pred = _ctx.adapter.predict(_ctx.X)
    if pred.ndim == 2:
        pred = pred[:, class_index]
    table = pd.DataFrame({"row": np.arange(len(_ctx.X)), "prediction": pred})
    if _ctx.y is not None:
        if _ctx.task == "regression":
            table["error"] = np.abs(pred - _ctx.y.to_numpy(dtype=float))
        else:
            # error = 1 - probability given to the true class
            position = {str(c): i for i, c in enumerate(_ctx.adapter.classes)}
            idx = np.array([position.get(str(t), -1) for t in _ctx.y])
            proba = _ctx.adapter.predict(_ctx.X)
            table["error"] = np.where(idx >= 0, 1.0 - proba[np.arange(len(idx)), np.maximum(idx, 0)], np.nan)
        table["target"] = _ctx.y.to_numpy()
    return table


def additivity_line(res, row: int, class_index: int | None) -> str:
    """'base + contributions = prediction' with the numbers of this row, and the
    model's own prediction (``params["model_prediction"]`` where the page added it).

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

    return (f"base {f(base)} + contributions {f(total, True)} = prediction {f(base + total)} "
            f"(model: {f(pred)})")


def output_label(res, class_index: int | None) -> str:
    """What the numbers are: 'prediction', or 'P(class)' / 'log-odds(class)'."""
    if class_index is None and res.values.ndim == 2:
        name = res.output_names[0] if res.output_names else ""
        return {"raw": "prediction", "log_odds": f"log-odds({name})", "margin": f"margin({name})"}.get(
            res.output, "prediction")
    name = res.output_names[class_index]
    return {"proba": f"P({name})", "log_odds": f"log-odds({name})"}.get(res.output, f"{res.output}({name})")


#: the one answer for every path that cannot be opened: outside the allowed folders,
#: missing, or a file. It never says which, so the page cannot probe the server's files.
BATCH_REFUSED = (
    "No batch run can be opened from this path. Give the --out folder of a finished "
    "`python -m explainers batch` run inside the folders this server allows for batch runs."
)


def batch_folder(folder: str, roots: list[str]) -> str:
    """The real path of ``folder`` when it is an existing folder inside one of ``roots``.

    Symlinks and ``..`` are resolved first (os.path.realpath), then the folder
    must lie inside a root (whole path components compared). A relative path
    is taken inside each root in turn. Anything else raises ExplainerError with
    :data:`BATCH_REFUSED`, the same message whether the path is outside, missing
    or a file.
    """
    try:
        text = os.path.expanduser(str(folder).strip())
        if not text or "\x00" in text:
            raise ValueError(folder)
        candidates = [text] if os.path.isabs(text) else [os.path.join(root, text) for root in roots]
        for candidate in candidates:
            real = os.path.realpath(candidate)
            # inside first: nothing about a path outside the roots is looked up
            if any(_inside(real, root) for root in roots) and os.path.isdir(real):
                return real
    except (OSError, ValueError):
        pass
    raise ExplainerError(BATCH_REFUSED)


def _inside(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or below it, comparing whole path components (both resolved)."""
    return Path(os.path.normcase(path)).is_relative_to(Path(os.path.normcase(root)))


def precomputed_attributions(ctx: ModelContext, folder: str, n_rows: int):
    """A seeded sample of a finished ``python -m explainers batch`` run, and whether it is this model's.

    Only folders inside the operator's batch roots (:func:`~.session.batch_roots`)
    are opened. Returns (ShapResult, same_model). Raises ExplainerError with
    :data:`BATCH_REFUSED` for a path outside the roots (or missing, or a file),
    and the batch reader's own message for a folder inside them that holds no
    finished run.
    """
    from explainers.batch import MANIFEST, load_attributions

    path = batch_folder(folder, batch_roots())
    manifest = Path(path) / MANIFEST
    try:
        stamp = manifest.stat().st_mtime_ns
    except OSError:
        stamp = None
    if stamp is None:  # no run here: the reader says what is wrong
        res = load_attributions(path, sample=n_rows)
    else:
        res = result_cache().get_or_compute(("precomputed", path, stamp, n_rows),
                                            lambda: load_attributions(path, sample=n_rows))
    try:
        sha = json.loads(manifest.read_text()).get("model", {}).get("sha256")
    except (OSError, ValueError, AttributeError):
        sha = None
    return res, sha == ctx.model_key


# ------------------------------------------------------------------ importance
IMPORTANCE_METHODS = {
    "mdi": "Mean decrease in impurity (MDI)",
    "oob": "Out-of-bag permutation (MDA)",
    "permutation": "Holdout permutation",
    "shap": "Mean |SHAP|",
}
#: a boosting library's own importance is method "library:<kind>" (kind: gain, cover, split count)
LIBRARY_METHOD = "library:"

#: why MDI and out-of-bag importance do not apply to a model read from a library's file, in page words
_NATIVE_SKIPS = {
    "mdi": ("MDI reads the impurity decrease stored in scikit-learn's trees; this model comes from {lib}"
            "'s own model file, whose splits store its {kinds} instead. {counterpart}"),
    "oob": ("Out-of-bag importance needs a bagged forest (random forest or extra trees), whose trees each "
            "leave rows out; this model is {lib} boosting, read from its model file. The holdout "
            "permutation works for any model."),
}


def _library(ctx: ModelContext) -> str | None:
    """"XGBoost", "LightGBM" or "CatBoost" for a model read from a library's file, else None."""
    from explainers.importance.result import library_label
    from explainers.trees import NativeTreeModel

    return library_label(ctx.model.library) if isinstance(ctx.model, NativeTreeModel) else None


def importance_methods(ctx: ModelContext, with_shap: bool = False) -> list[str]:
    """The methods the Importance page and the report try, in order: MDI (or, for a model read
    from a boosting library's file, that library's gain, cover and split count beside it),
    out-of-bag and holdout permutation, and mean |SHAP| when asked for."""
    from explainers.importance import library_importance_kinds

    native = [LIBRARY_METHOD + kind for kind in library_importance_kinds(ctx.model)]
    return ["mdi", *native, "oob", "permutation"] + (["shap"] if with_shap else [])


def importance_label(ctx: ModelContext, method: str) -> str:
    """The method's name on the page: "XGBoost gain" for ``library:gain`` of an XGBoost model."""
    if method.startswith(LIBRARY_METHOD):
        return f"{_library(ctx)} {method[len(LIBRARY_METHOD):]}"
    return IMPORTANCE_METHODS[method]


def importance(ctx: ModelContext, method: str, n_repeats: int, max_rows: int, progress=None):
    """One importance result, cached per model, data, method and settings."""
    key = ("importance", ctx.model_key, ctx.data_key, method, n_repeats if method == "permutation" else 0,
           max_rows if method in ("permutation", "shap") else 0)
    return result_cache().get_or_compute(key, lambda: _importance(ctx, method, n_repeats, max_rows, progress))


def _importance(ctx: ModelContext, method: str, n_repeats: int, max_rows: int, progress):
    from explainers import importance as imp

    lib = _library(ctx)
    if lib is not None and method in _NATIVE_SKIPS:
        kinds = imp.library_importance_kinds(ctx.model)
        counterpart = (f"{lib} gain, shown here, is MDI's counterpart." if "gain" in kinds else
                       f"{lib} gives no gain; its {' and '.join(kinds)}, shown here, stand in for it." if kinds
                       else "")
        raise ExplainerError(_NATIVE_SKIPS[method].format(
            lib=lib, kinds=", ".join(kinds) or "numbers", counterpart=counterpart).strip())
    if method.startswith(LIBRARY_METHOD):
        return imp.library_importance(ctx.model, method[len(LIBRARY_METHOD):], feature_names=list(ctx.X.columns))
    (X_tr, y_tr), (X_ho, y_ho) = split_rows(ctx)
    if method == "mdi":
        # a model that recorded no column names: name its importances after the data's columns
        names = None if hasattr(ctx.model, "steps") else list(ctx.X.columns)
        return imp.mdi(ctx.model, feature_names=names)
    if method == "oob":
        if y_tr is None:
            raise ExplainerError("Out-of-bag importance needs the target: pick the target column on the Model page.")
        return imp.oob_permutation_importance(ctx.model, X_tr, y_tr, progress=progress)
    if method == "permutation":
        if y_ho is None:
            raise ExplainerError("Permutation importance needs the target: pick the target column on the Model page.")
        # rows with an empty target have no true value to score: the sample is drawn from the others
        from explainers.importance._common import missing_target, rows_left_out_note

        has = ~missing_target(y_ho.to_numpy())
        if not has.any():
            raise ExplainerError("Permutation importance needs true values, but the target column is empty in "
                                 "every row: pick the column the model predicts on the Model page.")
        X_ok, y_ok = X_ho[has], y_ho[has]
        take = _seeded_rows(len(X_ok), max_rows)
        res = imp.permutation_importance(ctx.model, X_ok.iloc[take], y_ok.iloc[take], n_repeats=n_repeats,
                                         random_state=0, progress=progress)
        left_out = int((~has).sum())
        if left_out:
            res = dataclasses.replace(res, params={**res.params, "n_rows_left_out": left_out},
                                      description=f"{res.description} {rows_left_out_note(left_out, len(y_ho))}")
        return res
    if method == "shap":
        return imp.shap_importance(explain_sample(ctx, max_rows, "auto", progress))
    raise KeyError(method)


def importances(ctx: ModelContext, methods: list[str], n_repeats: int, max_rows: int, bar,
                page: str = "") -> tuple[list, list]:
    """Compute (cached) each method that applies; return (results, [(label, reason)] skipped).

    The reasons are worded for ``page`` (see :func:`dashboard.messages.for_page`): what to
    click there, never a Python call.
    """
    from dashboard.messages import for_page

    results, skipped = [], []
    for i, method in enumerate(methods):
        label = importance_label(ctx, method)

        progress = ProgressBar(bar, label)
        bar.progress(i / len(methods), text=f"{label}…")
        try:
            results.append(importance(ctx, method, n_repeats, max_rows, progress))
        except ExplainerError as exc:
            skipped.append((label, for_page(exc, page)))
        except Exception as exc:  # never a traceback on the page
            skipped.append((label, for_page(error_message(exc), page)))
    return results, skipped


@st.cache_data(max_entries=32, show_spinner=False)
def comparison(model_key: str, data_key: str, labels: tuple, _results: list, _X):
    from explainers.importance import compare_importances

    return compare_importances(_results, X=_X)


# -------------------------------------------------------------------- segments
def compared_segment(ctx: ModelContext):
    """The sidebar's segment when it can be compared with the rest, else None.

    When a segment is chosen but cannot be compared (too few rows in it or in the
    rest, or it does not apply to this model and data), says why with ``st.info``
    and returns None: the page then draws its all-rows view.
    """
    from dashboard.safe_text import md

    from .segments import active_segment

    try:
        active = active_segment(ctx)
    except ExplainerError as exc:
        st.info(md(str(exc)), icon=":material/info:")
        return None
    if active is not None and active.problem:
        st.info(f"{md(active.problem)} The page shows every row.", icon=":material/info:")
        return None
    return active


def pdp_by_segment(ctx: ModelContext, active, feature: str, grid_resolution: int,
                   percentiles: tuple[float, float], max_rows: int = PDP_MAX_ROWS):
    """Partial dependence of one feature over the segment's rows and over the rest's:
    ``(segment result, rest result)``, on the grid of every row (:func:`pdp`), so the two
    curves share their x values (a categorical feature: the categories each part has).

    Each part averages over its own rows (a seeded sample of ``max_rows`` above that),
    without ICE; cached per model, data, segment and settings.
    """
    base = pdp(ctx, (feature,), grid_resolution, percentiles, max_rows)
    categorical = base.feature_kinds[0] == "categorical"

    def part(rows: np.ndarray):
        from explainers.pdp import partial_dependence

        X = ctx.X.iloc[rows]
        grid = list(base.grid[0])
        if categorical:  # a category the part lacks has no rows to average there
            present = set(X[feature].dropna().tolist())
            grid = [v for v in grid if v in present]
        return partial_dependence(ctx.model, X, [feature], grid_resolution=grid_resolution, percentiles=percentiles,
                                  custom_values={feature: grid}, categorical_features=[feature] if categorical else [],
                                  kind="average", sample=max_rows if len(X) > max_rows else None, random_state=0)

    key = ("pdp_segment", ctx.model_key, ctx.data_key, active.key, feature, grid_resolution, percentiles, max_rows)
    return result_cache().get_or_compute(key, lambda: (part(active.rows), part(active.rest)))


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


#: the Importance page's methods that can be computed on a segment's rows (the others read the training split)
SEGMENT_IMPORTANCE_METHODS = ("permutation", "shap")


def _holdout_positions(ctx: ModelContext) -> np.ndarray:
    """Positions of the held-out rows (see :func:`split_rows`) in the data as loaded."""
    n_train = ctx.card.get("n_train")
    return np.arange(int(n_train), len(ctx.X)) if n_train else np.arange(len(ctx.X))


def _segment_importance(ctx: ModelContext, active, method: str, n_repeats: int, max_rows: int, progress):
    """(segment, rest) ImportanceResults of one method; ExplainerError when it cannot be compared."""
    from explainers import importance as imp

    from .segments import MIN_SEGMENT_ROWS

    if method == "shap":
        parts = split_sample(explain_sample(ctx, max_rows, "auto", progress), active.mask)
        if parts.problem:
            raise ExplainerError(parts.problem.replace("Raise the number of rows in the sample.",
                                                       "Raise the rows used (Settings)."))
        return imp.shap_importance(parts.segment), imp.shap_importance(parts.rest)
    if ctx.y is None:
        raise ExplainerError("Permutation importance needs the target: pick the target column on the Model page.")
    from explainers.importance._common import missing_target

    held = _holdout_positions(ctx)
    held = held[~missing_target(ctx.y.to_numpy()[held])]
    out = []
    for which, mask in (("segment", active.mask), ("rest", ~active.mask)):
        pos = held[mask[held]]
        if len(pos) < MIN_SEGMENT_ROWS:
            raise ExplainerError(
                f"The {which} has {len(pos):,} held-out row{'' if len(pos) == 1 else 's'} with a target; holdout "
                f"permutation needs at least {MIN_SEGMENT_ROWS:,} on each side to compare the segment with the rest.")
        pos = pos[_seeded_rows(len(pos), max_rows)]
        out.append(imp.permutation_importance(ctx.model, ctx.X.iloc[pos], ctx.y.iloc[pos], n_repeats=n_repeats,
                                              random_state=0, progress=progress))
    return tuple(out)


def importances_by_segment(ctx: ModelContext, active, methods, n_repeats: int, max_rows: int, bar,
                           page: str = "importance") -> tuple[list, list]:
    """Mean |SHAP| and holdout permutation on the segment's rows and on the rest's, with the
    same settings as the page's: ``([(segment result, rest result)], [(label, reason)] skipped)``.

    Cached per model, data, segment, method and settings; reasons worded for ``page``.
    """
    from dashboard.messages import for_page

    pairs, skipped = [], []
    wanted = [m for m in methods if m in SEGMENT_IMPORTANCE_METHODS]
    for i, method in enumerate(wanted):
        label = importance_label(ctx, method)
        progress = ProgressBar(bar, f"{label}, segment and rest")
        bar.progress(i / len(wanted), text=f"{label}, segment and rest…")
        key = ("importance_segment", ctx.model_key, ctx.data_key, active.key, method,
               n_repeats if method == "permutation" else 0, max_rows)
        try:
            pairs.append(result_cache().get_or_compute(
                key, lambda m=method, p=progress: _segment_importance(ctx, active, m, n_repeats, max_rows, p)))
        except ExplainerError as exc:
            skipped.append((label, for_page(exc, page)))
        except Exception as exc:  # never a traceback on the page
            skipped.append((label, for_page(error_message(exc), page)))
    return pairs, skipped


# --------------------------------------------------------------------- report
def report_html(ctx: ModelContext, feature: str, row: int, wanted: tuple[bool, ...], bar):
    """The report, built once per choice: a :class:`dashboard.report.Built` (the HTML document,
    an outline of its parts for the page's preview, and a notice for every ticked part left out).

    ``wanted`` says which parts to include: summary, PDP/ICE, SHAP waterfall,
    importance comparison and, if a fifth flag is given, feature interactions. ``row`` is the row's position in the data as loaded.
    """
    ci = pdp_class(ctx)
    key = ("report", ctx.model_key, ctx.data_key, feature, row, ci, wanted)
    built = result_cache().get_or_compute(key, lambda: _build_report(ctx, feature, row, wanted, ci, bar))
    return _with_segments(ctx, built, wanted)


def _with_segments(ctx: ModelContext, built, wanted):
    """The report with the session's segments added (unless nothing is ticked): outside the
    report's cache key, since segments are added and removed without its choices changing."""
    from dashboard import report

    from .segment_views import report_section

    if not any(wanted):
        return built
    try:
        section = report_section(ctx)
    except Exception as exc:
        notice = f"Segments left out: {error_message(exc)}"
        return report.Built(built.html, built.outline, built.notices + (notice,), built.n_sections)
    return report.add_sections(built, [section] if section is not None else [])


def _build_report(ctx: ModelContext, feature: str, row: int, wanted, ci, bar):
    """Every ticked part either goes in or gets a notice saying why it was left out."""
    from dashboard import figures, report

    want_summary, want_pdp, want_shap, want_imp, *rest = wanted
    want_inter = bool(rest and rest[0])
    sections, notices = [], []
    summary = _report_summary(ctx) if want_summary else {}
    if want_summary:
        sections.append(report.Section("Features", "Types, ranges and missing values of the data.",
                                       table=feature_summary(ctx.data_key, ctx.X).set_index("feature")))
    bar.progress(0.25, text="Partial dependence…")
    if want_pdp:
        try:
            fig = figures.pdp_figure(pdp(ctx, (feature,), 40, (0.05, 0.95)), class_index=ci)
            sections.append(report.Section(f"Partial dependence and ICE: {feature}", _pdp_caption(fig), figure=fig))
        except Exception as exc:
            notices.append(f"Partial dependence of {feature} left out: {error_message(exc)}")
    bar.progress(0.5, text="SHAP…")
    if want_shap:
        try:
            sres = explain_row(ctx, row, "auto", ())
            sci = shap_class(sres, ctx)
            sections.append(report.Section(
                f"Why row {row} gets its prediction",
                f"Row {row} of the data (0 is the first row): {additivity_line(sres, 0, sci)}",
                figure=figures.waterfall_figure(sres, 0, class_index=sci, max_display=12, row_label=row)))
        except Exception as exc:
            notices.append(f"SHAP waterfall of row {row} left out: {error_message(exc)}")
    bar.progress(0.75, text="Importance…")
    if want_imp:
        imp_sections, imp_notices = _importance_sections(ctx, bar)
        sections += imp_sections
        notices += imp_notices
    if want_inter:
        from .interactions import plain_reason, report_section

        bar.progress(0.9, text="Interactions…")
        try:
            sections.append(report_section(ctx))
        except Exception as exc:
            notices.append(f"Feature interactions left out: {plain_reason(exc) or error_message(exc)}")
    if not any(wanted):
        notices.append("Nothing is ticked: the report holds its title only.")
    html_doc = report.build_report(f"Glassbox — {ctx.title}", summary, sections, notices=notices)
    outline = [("Model summary", f"Key facts at the top: {', '.join(map(str, summary))}.")] if want_summary else []
    outline += [(sec.heading, sec.caption) for sec in sections]
    return report.Built(html_doc, tuple(outline), tuple(notices), len(sections))


def _pdp_caption(fig) -> str:
    """What the report's PDP figure draws, read from its traces (bars or a line, ICE lines or dots)."""
    import re

    bars = any(t.type == "bar" for t in fig.data)
    ice = [t for t in fig.data if getattr(t, "legendgroup", None) == "ice"]
    count = next((m.group(1) for t in ice if (m := re.search(r"\((\d[\d,]* of [\d,]+ rows)\)", t.name or ""))), None)
    ice_rows = f" (ICE, {count})" if count else " (ICE)"
    if bars:
        text = "Each bar is the average prediction with every row set to that category (partial dependence)."
        if ice:
            text += f" Each dot is one row's prediction at that category{ice_rows}."
        return text
    text = "The bold line is the average prediction as the feature moves (partial dependence)."
    if ice:
        text += f" Each thin line is one row{ice_rows}."
    if any(t.name == "deciles of the data" for t in fig.data):
        text += " Ticks along the x axis mark the deciles of the data."
    return text


def left_out_notices(results) -> list[str]:
    """Per result that left rows out for an empty target: a notice saying how many."""
    return [f"{r.label}: {r.params['n_rows_left_out']:,} row(s) with an empty target were left out; "
            f"it is scored on {r.params.get('n_rows', 0):,} rows that have one."
            for r in results if r.params.get("n_rows_left_out")]


def _importance_sections(ctx: ModelContext, bar) -> tuple[list, list[str]]:
    """The report's importance sections (methods compared when two or more apply) and notices.

    Never silent: every method left out, and every row left out for an empty
    target, gets a notice.
    """
    from dashboard import figures, report

    results, skipped = importances(ctx, importance_methods(ctx), 5, 1_000, bar, page="report")
    why = "; ".join(f"{label}: {reason}" for label, reason in skipped)
    if not results:
        if ctx.y is None:
            return [], ["Importance comparison needs the target column: pick it on the Model page. "
                        f"Left out ({why})."]
        return [], [f"Importance comparison left out: no importance method applies to this model and data ({why})."]
    notices = left_out_notices(results)
    if len(results) == 1:
        if ctx.y is None:
            notices.append("Importance comparison needs the target column: pick it on the Model page. "
                           f"Without it the report shows {results[0].label} alone ({why}).")
        else:
            notices.append(f"Importance comparison shows {results[0].label} alone: the other methods do not "
                           f"apply ({why}).")
    else:
        if skipped:
            notices.append(f"Left out of the importance comparison: {why.rstrip('.')}.")
        try:
            comp = comparison(ctx.model_key, ctx.data_key, tuple(r.label for r in results), results, ctx.X)
            return [report.Section("Variable importance, compared",
                                   " ".join(f"{r.label}: {r.description}" for r in results),
                                   figure=figures.importance_bars_figure(comp))], notices
        except Exception as exc:  # e.g. MDI of a Pipeline names the encoded columns, not the data's
            notices.append(f"The importance methods cannot be compared side by side ({error_message(exc)}); "
                           "the report shows each on its own.")
    return [report.Section(f"Variable importance: {r.label}", r.description, figure=figures.importance_bars_figure(r))
            for r in results], notices


def _report_summary(ctx: ModelContext) -> dict:
    """The report's key facts about the model and data."""
    summary = {"Model": ctx.card.get("model_type", ""), "Task": ctx.task, "Rows": f"{len(ctx.X):,}",
               "Features": ctx.X.shape[1]}
    if ctx.classes:
        summary["Classes"] = ", ".join(ctx.classes)
    if ctx.card.get("metric"):
        summary[ctx.card["metric"]["name"]] = f"{ctx.card['metric']['value']:.3f}"
    return summary


def empty_cells_toggle(ctx: ModelContext, key: str) -> bool:
    """The page's switch for empty cells, shown only when the data has some: off
    (the default) explains the model's own prediction, empty cells being values it
    receives; on, they become missing features (the seeds' masks)."""
    if not bool(ctx.X.isna().to_numpy().any()):
        return False
    return st.toggle("Treat empty cells as missing features", value=False, key=key,
                     help="Off: an empty cell is a value the model receives (an imputer fills it, "
                          "HistGradientBoosting routes it) and its own prediction is explained. On: empty "
                          "cells leave the game like features you mark missing, get exactly 0, and the "
                          "prediction explained is the one with them averaged out.")


def empty_cells_caption(ctx: ModelContext, res, row: int, chosen: bool) -> None:
    """Say how this row's empty cells were explained, and which prediction is the model's."""
    from dashboard.safe_text import md

    blanks = [str(c) for c in ctx.X.columns if pd.isna(ctx.X.iloc[row][c])]
    if not blanks:
        return
    names = ", ".join(md(c) for c in blanks[:8]) + (" …" if len(blanks) > 8 else "")
    if res.params.get("nan_is_missing"):
        why = "as you chose" if chosen else "because this model cannot take empty cells"
        st.caption(f"Empty cells of row {row} ({names}) are treated as missing features, {why}: the prediction "
                   "explained averages them out, and the model's own prediction is the one marked *model*.")
    else:
        st.caption(f"Empty cells of row {row} ({names}) are values the model receives: the prediction explained "
                   "is the model's own. Switch on *Treat empty cells as missing features* to explain them as masks.")


def category_options(ctx: ModelContext, column: str) -> list:
    """A categorical column's values for a picker: the model's own categories first, in
    the model's order (the same for CSV and Parquet data), then values only the data has."""
    from explainers.io.data import category_order

    order = result_cache().get_or_compute(("category_order", ctx.model_key, ctx.data_key),
                                          lambda: category_order(ctx.model, list(ctx.X.columns)))
    present = list(ctx.X[column].dropna().unique())
    known = order.get(str(column))
    if not known:
        return present
    rank = {v: i for i, v in enumerate(known)}
    rank.update({str(v): i for i, v in enumerate(known) if str(v) not in rank})
    return sorted(present, key=lambda v: rank.get(v, rank.get(str(v), len(known))))
