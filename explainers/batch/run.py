"""The chunk loop shared by SHAP and importance runs.

Each chunk is one task: a small :class:`_Spec` (sent with every task) and the
chunk's rows. A worker loads the model once per run (:func:`_worker_state`),
explains or scores the chunk with one BLAS thread and writes its own part file,
so the parent only holds the few chunks in flight. :class:`_Tracker` counts the
finished rows and reports :class:`BatchProgress`; :func:`_run` is the loop.
"""
from __future__ import annotations

import contextlib
import inspect
import json
import os
import threading
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..errors import InvalidDataError, InvalidModelError
from ..io import fingerprint, load_model
from .backends import _Warmup
from .manifest import _atomic_write_bytes, _done_parts, _drop_parts_from, _part_name, _write_table_atomic
from .options import _CHUNK_METRIC, DEFAULT_BLOCK_ROWS
from .sources import _Columns, _iter_tables, _Source, _to_frame

ProgressCallback = Callable[["BatchProgress"], None]


# ============================================================== results, progress
@dataclass(frozen=True)
class BatchProgress:
    """Where a batch run stands; passed to the ``progress`` callback after each chunk, and
    within chunks as the workers report their rows (about every second, and at least every
    few seconds while a row takes longer).

    Attributes
    ----------
    done_rows : int
        Rows finished, including those of parts kept from an earlier run and the rows
        already done inside the chunks being computed.
    total_rows : int or None
        Rows in the file: exact for Parquet, estimated from line breaks for CSV.
    computed_rows : int
        Rows computed by this run (excludes the kept parts; includes the rows done so
        far inside the chunks being computed).
    elapsed_s : float
        Seconds since this run started computing.
    rows_per_s : float
        ``computed_rows / elapsed_s``.
    eta_s : float or None
        Estimated seconds left, when the total is known.
    chunks_done, chunks_skipped : int
        Parts finished in all, and parts kept from an earlier run.
    """

    done_rows: int
    total_rows: int | None
    computed_rows: int
    elapsed_s: float
    rows_per_s: float
    eta_s: float | None
    chunks_done: int
    chunks_skipped: int


@dataclass(frozen=True)
class BatchReport:
    """What a finished batch run did.

    Attributes
    ----------
    out : Path
        The output directory.
    kind : {"shap", "importance"}
    n_rows, n_chunks : int
        Rows and part files in the output.
    chunks_computed, chunks_skipped : int
        Parts computed by this run, and parts kept from an earlier run.
    seconds : float
        Wall time of this run.
    rows_per_s : float
        Rows computed by this run per second of computing.
    method : str
        The SHAP method used (``"permutation"`` for importance).
    reason : str
        Why this method was chosen.
    notices : list of str
        What was dropped, converted or ignored on the way.
    """

    out: Path
    kind: str
    n_rows: int
    n_chunks: int
    chunks_computed: int
    chunks_skipped: int
    seconds: float
    rows_per_s: float
    method: str
    reason: str
    notices: list = field(default_factory=list)



# ===================================================================== explainers
def _explainer_classes() -> dict:
    from ..shap import EXPLAINERS

    return EXPLAINERS


def _build_explainer(method: str, model, background, options: dict):
    """Build an explainer, passing only the options its constructor takes."""
    cls = _explainer_classes()[method]
    init = inspect.signature(cls.__init__).parameters
    kwargs = {k: v for k, v in options.items() if k in init}
    if "n_jobs" in init:
        # one thread per task: the batch's own workers are the parallelism, and a
        # worker that also spawned a thread per core would oversubscribe the cores
        kwargs["n_jobs"] = 1
    return cls(model, background, **kwargs)


def _run_explainer(explainer, X: pd.DataFrame, missing, nan_is_missing: bool, random_state: int,
                   progress=None):
    run = inspect.signature(explainer.explain).parameters
    kw = {"nan_is_missing": nan_is_missing}
    if "random_state" in run:
        kw["random_state"] = random_state
    if progress is not None and "progress" in run:
        kw["progress"] = progress
    return explainer.explain(X, missing, **kw)


# ============================================================ progress within chunks
#: seconds between a worker's reports of the rows it finished inside a chunk
REPORT_EVERY_S = 1.0


class _RowReporter:
    """Sends "chunk ``index`` has ``rows`` rows done" to the parent, at most every
    :data:`REPORT_EVERY_S` seconds. Picklable: the target is a queue (a thread queue
    in-process, a multiprocessing manager's queue for loky and Dask workers), and a
    queue that cannot be reached (a remote Dask worker) only loses these reports."""

    def __init__(self, queue):
        self.queue = queue

    def __call__(self, index: int, rows: int, force: bool = False) -> None:
        now = time.monotonic()
        last = _LAST_REPORT.get(index)
        if not force and last is not None and now - last < REPORT_EVERY_S:
            return
        _LAST_REPORT[index] = now
        try:
            self.queue.put_nowait((index, int(rows)))
        except Exception:  # progress is a courtesy: never fail a chunk over it
            pass


#: per process: chunk index -> time of its last report
_LAST_REPORT: dict[int, float] = {}


def _drain(queue, tracker: "_Tracker", stop: threading.Event) -> None:
    """Parent thread: pass the workers' row counts to the tracker, and report at least
    every second while nothing arrives (so a slow row still shows the time running)."""
    import queue as queue_mod

    while not stop.is_set():
        try:
            index, rows = queue.get(timeout=REPORT_EVERY_S)
        except (queue_mod.Empty, EOFError, OSError):
            if not stop.is_set():
                tracker.report()
            continue
        except Exception:  # the manager went away (the run is ending)
            return
        tracker.partial(index, rows)



# ====================================================================== the task
@dataclass(frozen=True)
class _Spec:
    """Everything a worker needs for a chunk; small, so it is sent with every task."""

    kind: str  # "shap" | "importance"
    run_id: str
    out: str
    model_path: str
    model_sha: str
    trusted: bool
    block_rows: int = DEFAULT_BLOCK_ROWS
    method: str = ""
    options: dict = field(default_factory=dict)
    background: pd.DataFrame | None = None
    missing: tuple | None = None
    nan_is_missing: bool | str = "auto"
    random_state: int = 0
    multi: bool = False
    columns: tuple = ()
    #: rows done inside a chunk go to the parent through this (None: no reports)
    reporter: _RowReporter | None = None
    # importance
    scoring: str = ""
    n_repeats: int = 5


#: per worker process: run id -> (model, explainer); a worker serves one run at a time
_WORKER_CACHE: dict = {}


def _worker_state(spec: _Spec):
    hit = _WORKER_CACHE.get(spec.run_id)
    if hit is not None:
        return hit
    try:
        data = Path(spec.model_path).read_bytes()
    except OSError as exc:
        raise InvalidModelError(
            f"A worker could not read the model file {spec.model_path!r} ({exc.strerror or exc}). "
            "With a remote Dask scheduler the model file and --out must be on storage every worker sees."
        ) from None
    if fingerprint(data) != spec.model_sha:
        raise InvalidModelError(
            f"The model file {spec.model_path!r} changed while the batch run was going. "
            "Leave it in place until the run ends, then rerun the command."
        )
    model = load_model(data, trusted=spec.trusted, filename=Path(spec.model_path).name)
    explainer = None
    if spec.kind == "shap":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the parent already warned once
            explainer = _build_explainer(spec.method, model, spec.background, spec.options)
    _WORKER_CACHE.clear()
    _WORKER_CACHE[spec.run_id] = (model, explainer)
    return model, explainer


# ==================================================================== a chunk
def _run_chunk(spec: _Spec, index: int, start: int, X: pd.DataFrame, y) -> dict:
    """Compute one chunk and write its part file; runs in a worker (or in-process)."""
    from joblib import parallel_config
    from threadpoolctl import threadpool_limits

    t0 = time.perf_counter()
    _LAST_REPORT.pop(index, None)  # the chunk's first rows are reported at once
    # One BLAS thread and no nested joblib parallelism, in every kind of worker: a
    # forest's predict sums its trees in thread-completion order when it runs threads
    # (a Dask worker hands nested joblib calls its own threads), and BLAS splits sums
    # by thread count, so either would change the last bits from run to run.
    with threadpool_limits(limits=1), parallel_config(backend="sequential"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, explainer = _worker_state(spec)
        if spec.kind == "shap":
            _shap_chunk(spec, explainer, index, start, X)
        else:
            _importance_chunk(spec, model, index, start, X, y)
    return {"index": index, "rows": len(X), "seconds": time.perf_counter() - t0, "pid": os.getpid()}



def _shap_chunk(spec: _Spec, explainer, index: int, start: int, X: pd.DataFrame) -> None:
    import pyarrow as pa

    n = len(X)
    values, base_values, predictions = _explain_blocks(spec, explainer, X.reset_index(drop=True), index)
    cols = _part_columns(spec, start, n, values, base_values, predictions)
    table = pa.table(cols).replace_schema_metadata(
        {"glassbox.run_id": spec.run_id, "glassbox.chunk": str(index), "glassbox.start": str(start)}
    )
    _write_table_atomic(table, Path(spec.out) / _part_name(index, "shap"))


def _explain_blocks(spec: _Spec, explainer, X: pd.DataFrame, index: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SHAP values, base values and predictions of the chunk's rows, explained in blocks;
    the rows done inside the chunk go to ``spec.reporter`` as the explainer reports them."""
    missing = None if spec.missing is None else list(spec.missing)
    vals, base, pred = [], [], []
    report = spec.reporter
    # blocks start at absolute multiples of block_rows (chunk starts are multiples too)
    for s in range(0, len(X), spec.block_rows):
        progress = None if report is None else (lambda done, total, s=s: report(index, s + done))
        res = _run_explainer(explainer, X.iloc[s : s + spec.block_rows], missing,
                             spec.nan_is_missing, spec.random_state, progress)
        vals.append(res.values)
        base.append(res.base_values)
        pred.append(res.predictions)
    return np.concatenate(vals), np.concatenate(base), np.concatenate(pred)


def _part_columns(spec: _Spec, start: int, n: int, values: np.ndarray, base_values: np.ndarray,
                  predictions: np.ndarray) -> dict:
    """The part's columns, named as in ``spec.columns``: row, SHAP values, base values, predictions."""
    cols: dict = {"row": np.arange(start, start + n, dtype=np.int64)}
    if spec.multi:
        p, k = values.shape[1], values.shape[2]
        flat = values.reshape(n, p * k)
        shap_cols = spec.columns[1 : 1 + p * k]
        for j, name in enumerate(shap_cols):
            cols[name] = flat[:, j]
        for o in range(k):
            cols[spec.columns[1 + p * k + o]] = base_values[:, o]
        for o in range(k):
            cols[spec.columns[1 + p * k + k + o]] = predictions[:, o]
    else:
        p = values.shape[1]
        for j in range(p):
            cols[spec.columns[1 + j]] = values[:, j]
        cols[spec.columns[-2]] = base_values
        cols[spec.columns[-1]] = predictions
    return cols


def _chunk_seed(random_state: int, index: int) -> int:
    """The shuffles of chunk ``index``: from the global seed and the index only."""
    return int(np.random.SeedSequence([random_state, index]).generate_state(1)[0])


def _importance_chunk(spec: _Spec, model, index: int, start: int, X: pd.DataFrame, y) -> None:
    from ..importance import permutation_importance

    metric = _CHUNK_METRIC[spec.scoring]
    n = len(X)
    report = spec.reporter
    # the chunk's share done, as rows: (features x repeats) shuffles scored of all
    progress = None if report is None else (lambda done, total: report(index, n * done // max(total, 1)))
    res = permutation_importance(model, X.reset_index(drop=True), y.reset_index(drop=True),
                                 n_repeats=spec.n_repeats, scoring=metric,
                                 random_state=_chunk_seed(spec.random_state, index), progress=progress)
    base = float(res.params["baseline_score"])
    perm = (base - res.raw).tolist()  # permuted scores, (p, n_repeats)
    stats = {"run_id": spec.run_id, "chunk": index, "start": start, "n": len(X),
             "metric": metric, "baseline": base, "permuted": perm}
    if spec.scoring == "r2":
        yv = np.asarray(y, dtype=float)
        mean = float(yv.mean())
        stats.update(y_mean=mean, y_m2=float(((yv - mean) ** 2).sum()))
    path = Path(spec.out) / _part_name(index, "importance")
    _atomic_write_bytes(path, json.dumps(stats).encode())


# ===================================================================== the loop
class _Tracker:
    """Counts finished rows and chunks and reports progress (thread-safe: joblib reads
    the input, and so counts kept parts, in its dispatch thread)."""

    def __init__(self, total: int | None, progress):
        self.total = total
        self.done_rows = 0
        self.computed = 0
        self.chunks_done = 0
        self.skipped = 0
        self.progress = progress
        self.lock = threading.Lock()
        self.report_lock = threading.Lock()  # one report at a time (the drain thread reports too)
        self.inflight: dict[int, int] = {}  # chunk index -> rows done inside it, while it runs
        self.finished: set[int] = set()
        self.t0 = time.perf_counter()

    def partial(self, index: int, rows: int) -> None:
        """A worker's count of the rows done inside chunk ``index`` (late reports of a
        finished chunk are ignored: its rows are counted by :meth:`add`)."""
        with self.lock:
            if index in self.finished:
                return
            self.inflight[index] = max(rows, self.inflight.get(index, 0))
        self.report()

    def skip(self, rows: int) -> None:
        with self.lock:
            self.done_rows += rows
            self.chunks_done += 1
            self.skipped += 1

    def add(self, res: dict) -> None:
        with self.lock:
            self.done_rows += res["rows"]
            self.computed += res["rows"]
            self.chunks_done += 1
            self.finished.add(res["index"])
            self.inflight.pop(res["index"], None)
        self.report()

    def report(self) -> None:
        if self.progress is None:
            return
        with self.report_lock:
            with self.lock:
                inside = sum(self.inflight.values())
                done, computed = self.done_rows + inside, self.computed + inside
                el = max(time.perf_counter() - self.t0, 1e-9)
                rate = computed / el
                eta = None
                if self.total is not None and rate > 0:
                    eta = max(0.0, (self.total - done) / rate)
                event = BatchProgress(done, self.total, computed, el, rate, eta, self.chunks_done, self.skipped)
            self.progress(event)


@dataclass(frozen=True)
class _RunStats:
    n_rows: int
    n_chunks: int
    chunks_computed: int
    chunks_skipped: int
    rows_computed: int
    seconds: float


def _run(out: Path, resume: dict | None, spec: _Spec, src: _Source, cols: _Columns, chunk_rows: int,
         total_rows, progress, prime, warmup: _Warmup) -> _RunStats:
    """The chunk loop shared by SHAP and importance runs."""
    warmup.wait()
    done = _done_parts(out, spec.kind, spec.run_id) if resume is not None else {}
    tracker = _Tracker(total_rows, progress)
    state = {"n_rows": 0, "n_chunks": 0}
    with _row_reports(spec, tracker, warmup.jobs) as spec:
        return _loop(out, spec, src, cols, chunk_rows, done, tracker, state, prime, warmup)


@contextlib.contextmanager
def _row_reports(spec: _Spec, tracker: _Tracker, jobs: int):
    """``spec`` with a reporter of the rows done inside chunks, and the parent thread that
    reads them, while the chunk loop runs (nothing when nobody watches the progress)."""
    if tracker.progress is None:
        yield spec
        return
    import queue as queue_mod

    manager = None
    if jobs == 1:
        queue = queue_mod.Queue()
    else:
        # workers are other processes: a manager's queue reaches them (and a local Dask cluster);
        # its server process ends soon after this one, however this one ends (a SIGKILL too)
        from multiprocessing.managers import SyncManager

        from .backends import _exit_with_parent

        manager = SyncManager()
        manager.start(initializer=_exit_with_parent, initargs=(os.getpid(),))
        queue = manager.Queue()
    stop = threading.Event()
    drain = threading.Thread(target=_drain, args=(queue, tracker, stop), name="glassbox-batch-progress", daemon=True)
    drain.start()
    try:
        yield replace(spec, reporter=_RowReporter(queue))
    finally:
        stop.set()
        drain.join(timeout=5)
        if manager is not None:
            manager.shutdown()


def _loop(out: Path, spec: _Spec, src: _Source, cols: _Columns, chunk_rows: int, done: dict, tracker: _Tracker,
          state: dict, prime, warmup: _Warmup) -> _RunStats:

    def tasks():
        for index, start, table in _iter_tables(src, cols, chunk_rows):
            state["n_rows"] = start + table.num_rows
            state["n_chunks"] = index + 1
            if done.get(index) == table.num_rows:  # finished by an earlier run
                tracker.skip(table.num_rows)
                continue
            X, y = _to_frame(table, cols, start)
            yield spec, index, start, X, y

    _compute(tasks(), spec, prime, tracker, warmup.jobs)
    if state["n_rows"] == 0:
        raise InvalidDataError("The data file has a header but no data rows. Use a file with at least one row.")
    # parts past the end cannot belong to this data; never leave them behind
    _drop_parts_from(out, spec.kind, spec.run_id, state["n_chunks"])
    tracker.total = state["n_rows"]
    tracker.report()
    return _RunStats(state["n_rows"], state["n_chunks"], state["n_chunks"] - tracker.skipped,
                     tracker.skipped, tracker.computed, time.perf_counter() - tracker.t0)


def _compute(tasks, spec: _Spec, prime, tracker: _Tracker, jobs: int) -> None:
    """Run the chunk tasks: in this process for one job, else on the backend's workers."""
    if jobs == 1:
        # in this process: no pickling, and the model already loaded here is used
        _WORKER_CACHE.clear()
        _WORKER_CACHE[spec.run_id] = prime()
        for args in tasks:
            tracker.add(_run_chunk(*args))
        return
    from joblib import Parallel, delayed

    # batch_size=1: joblib would otherwise group quick tasks and read many chunks
    # ahead; pre_dispatch bounds the chunks in flight (results are tiny: the
    # workers write the parts themselves)
    par = Parallel(n_jobs=jobs, return_as="generator_unordered", batch_size=1,
                   pre_dispatch="2*n_jobs")
    for res in par(delayed(_run_chunk)(*args) for args in tasks):
        tracker.add(res)
