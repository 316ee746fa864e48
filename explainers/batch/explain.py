"""SHAP over a whole file: :func:`explain_file`.

It reads as: check the options; enter the backend (its workers warm up meanwhile);
open the model and the data; plan on the first rows (the method, the explainer's
options, the output columns); hash the data and decide between a fresh run and a
resume; draw or keep the background; write the manifest; run the chunk loop.
"""
from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import ExplainerError, InvalidDataError, param_error
from .backends import _warmed
from .lock import _locked
from .manifest import (BACKGROUND, _check_not_foreign, _cleanup_on_error, _finish, _finished_ok, _mark_complete,
                       _mark_incomplete, _new_manifest, _new_run_id, _prepare_out, _remove_tmp, _run_identity,
                       _write_manifest, _write_table_atomic)
from .options import BATCH_METHODS, DEFAULT_BLOCK_ROWS, DEFAULT_CHUNK_ROWS, TREE_MODES, _check_common, _check_int
from .results import _read_background
from .run import BatchReport, ProgressCallback, _build_explainer, _run, _run_explainer, _Spec
from .sources import (_Columns, _file_sha, _hash_source, _iter_frames, _open_model, _open_source, require_model_file,
                      _resolve_columns, _sample_background, _Source)


@dataclass(frozen=True)
class _ShapArgs:
    """The options of :func:`explain_file` that change the numbers, checked."""

    method: str
    mode: str
    background: int
    missing: tuple | None
    nan_is_missing: bool
    output: str
    class_index: int | None
    n_samples: int
    random_state: int
    chunk_rows: int
    block_rows: int


@dataclass(frozen=True)
class _ShapPlan:
    """What the first rows decided: the method and why, the explainer's options, the output's layout."""

    method: str
    reason: str
    options: dict  # the explainer's constructor options
    needs_background: bool
    outputs: list
    multi: bool
    output_kind: str
    columns: list  # the part files' columns


def explain_file(
    model: str | os.PathLike, data: str | os.PathLike, out: str | os.PathLike, *,
    method: str = "auto", mode: str = "path_dependent", background: int = 100,
    missing: Sequence[str] | None = None, nan_is_missing: bool | str = "auto", output: str = "auto",
    class_index: int | None = None, n_samples: int = 2048, random_state: int = 0,
    chunk_rows: int = DEFAULT_CHUNK_ROWS, block_rows: int = DEFAULT_BLOCK_ROWS, n_jobs: int = 1,
    backend: str = "loky", scheduler: str | None = None, connect_timeout: float = 10.0,
    overwrite: bool = False, trusted: bool = False, progress: ProgressCallback | None = None,
) -> BatchReport:
    """Explain every row of a data file with SHAP, writing Parquet parts to ``out``.

    Parameters
    ----------
    model : str or Path
        The saved model file (``.skops``; ``.joblib`` / ``.pkl`` only with ``trusted``). Workers
        load it from this path, so with a remote Dask cluster it must be on storage every worker sees.
    data : str or Path
        A CSV file, a Parquet file or a directory of Parquet parts (read in file-name order).
        Columns the model does not use are dropped.
    out : str or Path
        Output directory (created if missing): ``part-NNNNNN.parquet``, ``_manifest.json``, ``_background.parquet``.
    method : {"auto", "tree", "kernel", "exact", "linear"}, default="auto"
        As :func:`explainers.shap.explain`; resolved once, recorded in the manifest.
    mode : {"path_dependent", "interventional"}, default="path_dependent"
        TreeShap's value function (used when the method is ``"tree"``).
    background : int, default=100
        Rows of background, a seeded sample of the complete rows of the whole file (not needed,
        so not drawn, for path-dependent TreeShap).
    missing : sequence of str, default=None
        Features to mark missing in every row (attribution 0).
    nan_is_missing : bool or "auto", default="auto"
        Treat NaN cells as missing features. "auto": only when the model cannot take them
        (decided once for the run, on its first rows, and said in a notice).
    output : {"auto", "raw", "proba", "log_odds"}, default="auto"
    class_index : int, default=None
        Explain one output column only.
    n_samples : int, default=2048
        KernelShap's coalition budget.
    random_state : int, default=0
        Seeds the background sample and KernelShap's draws (the same for every row).
    chunk_rows : int, default=20000
        Rows per chunk (one task, one part file); a multiple of ``block_rows``.
    block_rows : int, default=1000
        Rows per explain call, aligned on absolute row positions.
    n_jobs : int, default=1
        Parallel workers (-1: every core); with ``backend="dask"`` and no scheduler, the number
        of LocalCluster worker processes.
    backend : {"loky", "dask"}, default="loky"
    scheduler : str, default=None
        Address of a running dask.distributed scheduler (``tcp://host:8786``).
    connect_timeout : float, default=10.0
        Seconds to wait for the scheduler.
    overwrite : bool, default=False
        Replace the results in ``out`` when they come from another model, data or options
        (otherwise refused), or start a finished run over.
    trusted : bool, default=False
        Allow pickle / joblib model files (they run code when loaded).
    progress : callable(BatchProgress), default=None
        Called after each chunk.

    Returns
    -------
    BatchReport

    Raises
    ------
    ExplainerError
        For a bad model, data file, option, output directory or scheduler, with a message that
        says what to fix. A fresh run that fails leaves no files behind; a resumed one keeps its finished parts.

    See Also
    --------
    load_attributions : open the result for the dashboard's global views.
    explainers.shap.explain : the same numbers for rows in memory.

    Examples
    --------
    >>> explain_file("model.skops", "big.parquet", "shap_out", n_jobs=2)  # doctest: +SKIP
    >>> pd.read_parquet("shap_out").head()  # doctest: +SKIP
    """
    func = "explain_file"
    t0 = time.perf_counter()
    args, n_jobs = _check_options(
        func, method=method, mode=mode, background=background, missing=missing, nan_is_missing=nan_is_missing,
        output=output, class_index=class_index, n_samples=n_samples, random_state=random_state,
        chunk_rows=chunk_rows, block_rows=block_rows, n_jobs=n_jobs, backend=backend,
        connect_timeout=connect_timeout)
    out = Path(out).expanduser().resolve()
    _check_not_foreign(out)  # before the lock file is created in it
    require_model_file(model, func)  # before the workers start

    with _locked(out) as claim, _warmed(backend, n_jobs, scheduler, connect_timeout) as warmup:
        run = _open_and_plan(out, model, data, args, trusted, overwrite, func)
        st = None if run.finished else _compute(out, claim.created, run, trusted, args.chunk_rows, args.block_rows,
                                                args.random_state, progress, warmup)
        return _report(out, run, st, time.perf_counter() - t0)


# ======================================================================== steps
@dataclass
class _Opened:
    """What :func:`explain_file` knows once the model and data are open and the run is planned."""

    model_path: Path
    model_sha: str
    est: object
    src: _Source
    cols: _Columns
    notices: list
    args: _ShapArgs
    plan: _ShapPlan
    data_sha: str
    total_rows: int
    opts: dict
    resume: dict | None
    finished: bool


def _open_and_plan(out: Path, model, data, args: _ShapArgs, trusted: bool, overwrite: bool, func: str) -> _Opened:
    """Open the model and the data, plan on the first rows, hash the data and decide between a
    fresh run and a resume (``finished``: the output is already complete and sound)."""
    model_path, model_sha, est = _open_model(model, trusted, func)
    src = _open_source(data)
    cols = _resolve_columns(src, est, None, func)
    notices = list(cols.notices)
    args = _resolve_nan_is_missing(est, src, cols, args, notices)
    plan = _plan(est, src, cols, args, notices)
    data_sha, total_rows = _hash_source(src)
    opts = _manifest_options(args, plan)
    resume = _prepare_out(out, _run_identity("shap", model_sha, data_sha, opts), overwrite)
    finished = resume is not None and resume.get("status") == "complete" and _finished_ok(out, resume, notices)
    return _Opened(model_path, model_sha, est, src, cols, notices, args, plan, data_sha, total_rows, opts, resume,
                   bool(finished))


def _report(out: Path, run: _Opened, st, seconds: float) -> BatchReport:
    """The run's report; ``st`` None when the output was already complete (nothing recomputed)."""
    plan = run.plan
    if st is None:
        return BatchReport(out, "shap", int(run.resume["n_rows"]), int(run.resume["n_chunks"]), 0,
                           int(run.resume["n_chunks"]), seconds, 0.0, plan.method, plan.reason,
                           run.notices + ["The output was already complete; nothing was recomputed."])
    return BatchReport(out, "shap", st.n_rows, st.n_chunks, st.chunks_computed, st.chunks_skipped, seconds,
                       st.rows_computed / max(st.seconds, 1e-9), plan.method, plan.reason, run.notices)


def _compute(out: Path, created: bool, run: _Opened, trusted: bool, chunk_rows: int, block_rows: int,
             random_state: int, progress, warmup):
    """Write the manifest, draw or keep the background and run the chunk loop; the run's state.
    A fresh run that fails removes what it wrote."""
    plan, cols, args, resume = run.plan, run.cols, run.args, run.resume
    run_id = resume["run_id"] if resume is not None else _new_run_id()
    with _cleanup_on_error(out, created, "shap", run_id):
        _remove_tmp(out)
        _mark_incomplete(out)
        man = {**_new_manifest("shap", run_id, resume, run.model_path, run.model_sha, trusted, run.src,
                               run.data_sha, run.total_rows, chunk_rows),
               "options": run.opts, "reason": plan.reason, "features": list(cols.features),
               "outputs": plan.outputs, "multi_output": plan.multi, "columns": plan.columns,
               # claimed before it is written, so that no crash leaves a background no manifest owns
               "background": {"file": BACKGROUND} if plan.needs_background else None,
               "output_kind": plan.output_kind,
               "text_columns": sorted(cols.text_ok & set(cols.features)), "notices": run.notices,
               "file_columns": dict(cols.file_names)}
        _write_manifest(out, man)
        bg_frame, man["background"] = _prepare_background(out, resume, run.src, cols, args, plan, run.notices)
        _write_manifest(out, man)
        spec = _Spec(kind="shap", run_id=run_id, out=str(out), model_path=str(run.model_path),
                     model_sha=run.model_sha, trusted=bool(trusted), block_rows=block_rows, method=plan.method,
                     options=plan.options, background=bg_frame, missing=args.missing,
                     nan_is_missing=bool(args.nan_is_missing), random_state=random_state, multi=plan.multi,
                     columns=tuple(plan.columns))
        st = _run(out, resume, spec, run.src, cols, chunk_rows, run.total_rows, progress,
                  _in_process_state(run.est, plan, bg_frame), warmup)
        _mark_complete(man, st)
        _finish(out, man, "batch", run.notices)
    return st


# ====================================================================== checks
def _check_options(func: str, *, method, mode, background, missing, nan_is_missing, output, class_index,
                   n_samples, random_state, chunk_rows, block_rows, n_jobs, backend, connect_timeout):
    """Return (args, n_jobs): every option checked, those shared with importance runs first."""
    chunk_rows, block_rows, n_jobs, random_state = _check_common(
        func, chunk_rows=chunk_rows, block_rows=block_rows, n_jobs=n_jobs, backend=backend,
        random_state=random_state, connect_timeout=connect_timeout)
    args = _check_shap_args(func, method=method, mode=mode, background=background, missing=missing,
                            nan_is_missing=nan_is_missing, output=output, class_index=class_index,
                            n_samples=n_samples, random_state=random_state, chunk_rows=chunk_rows,
                            block_rows=block_rows)
    return args, n_jobs


def _check_shap_args(func: str, *, method, mode, background, missing, nan_is_missing, output, class_index,
                     n_samples, random_state: int, chunk_rows: int, block_rows: int) -> _ShapArgs:
    """Check the SHAP options (those shared with importance runs are checked by _check_common)."""
    if method not in BATCH_METHODS:
        raise param_error("method", func, f"one of {list(BATCH_METHODS)}", method)
    if mode not in TREE_MODES:
        raise param_error("mode", func, f"one of {list(TREE_MODES)}", mode)
    background = _check_int(background, "background", func, 1)
    n_samples = _check_int(n_samples, "n_samples", func, 1)
    if missing is not None:
        if isinstance(missing, str):
            missing = [m.strip() for m in missing.split(",") if m.strip()]
        missing = tuple(str(m) for m in missing) or None
    return _ShapArgs(method, mode, background, missing, nan_is_missing, output, class_index, n_samples,
                     random_state, chunk_rows, block_rows)


# ==================================================================== the plan
def _plan(est, src: _Source, cols: _Columns, args: _ShapArgs, notices: list) -> _ShapPlan:
    """Probe the first rows: pick the method, fail early on bad input, lay out the output columns.

    Appends to ``notices`` what the chosen method ignores.
    """
    probe = _probe_rows(src, cols, args.block_rows)
    options = {"output": args.output, "class_index": args.class_index, "feature_names": list(cols.features),
               "n_samples": args.n_samples, "random_state": args.random_state, "mode": args.mode, "n_jobs": 1}
    method, reason, res = _choose_method(est, cols, probe, args, options)
    if method != "tree" and args.mode != "path_dependent":
        notices.append(f"--mode {args.mode} applies to TreeShap only; the method is {method!r}.")
    needs_bg = _needs_background(method, args.mode)
    if not needs_bg and args.background != 100:
        notices.append("Path-dependent TreeShap needs no background; --background was ignored.")
    outputs, multi, output_kind = _output_layout(res, est, cols, args)
    return _ShapPlan(method, reason, options, needs_bg, outputs, multi, output_kind,
                     _output_columns(cols.features, outputs, multi))


def _resolve_nan_is_missing(est, src: _Source, cols: _Columns, args: _ShapArgs, notices: list) -> _ShapArgs:
    """Decide ``nan_is_missing="auto"`` once for the whole run (recorded in the manifest).

    Empty cells stay values the model receives when it takes them (checked on the
    first rows that have some, or on a row of empty cells), else they become
    missing features; a notice says which.
    """
    from dataclasses import replace

    from ..model import ModelAdapter

    if not isinstance(args.nan_is_missing, str):
        return replace(args, nan_is_missing=bool(args.nan_is_missing))
    probe = _probe_rows(src, cols, args.block_rows)
    holes = probe[probe.isna().any(axis=1)]
    if not len(holes):
        holes = probe.iloc[:1].copy()
        for c in holes.columns:
            holes[c] = np.nan
    try:
        takes = ModelAdapter(est, feature_names=list(cols.features)).accepts_nan(holes)
    except Exception:  # noqa: BLE001 - an adapter that cannot be built fails later with its own message
        takes = False
    notices.append("Empty cells are values the model receives (it takes them), as in the dashboard."
                   if takes else "Empty cells are treated as missing features: the model cannot take them.")
    return replace(args, nan_is_missing=not takes)


def _probe_rows(src: _Source, cols: _Columns, block_rows: int) -> pd.DataFrame:
    """The first rows of the file (at most 64)."""
    for _, _, frame, _ in _iter_frames(src, cols, min(block_rows, 64)):
        return frame.reset_index(drop=True)
    raise InvalidDataError("The data file has a header but no data rows. Use a file with at least one row.")


def _choose_method(est, cols: _Columns, probe: pd.DataFrame, args: _ShapArgs, options: dict):
    """The method, why, and its result on the probe rows (None when it had nothing to probe with).

    With ``method="auto"``, a TreeShap that declines the model hands over to the next choice.
    """
    from ..shap.auto import choose_method

    if args.method == "auto":
        chosen, reason = choose_method(est, len(cols.features), args.background, output=args.output,
                                       n_samples=args.n_samples)
    else:
        chosen, reason = args.method, f"method={args.method!r} was requested"
    try:
        res = _probe_run(chosen, est, probe, args, options)
    except ExplainerError as exc:
        if args.method != "auto" or chosen != "tree":
            raise
        chosen2, reason2 = choose_method(est, len(cols.features), args.background, output=args.output,
                                         n_samples=args.n_samples, allow_tree=False)
        reason = f"TreeShap declined ({exc}); {reason2}"
        chosen = chosen2
        res = _probe_run(chosen, est, probe, args, options)
    return chosen, reason, res


def _probe_run(method: str, est, probe: pd.DataFrame, args: _ShapArgs, options: dict):
    """Explain the probe rows, with their complete rows as background where one is needed."""
    bg = None
    if _needs_background(method, args.mode):
        bg = probe.dropna()
        if not len(bg):
            return None  # nothing complete to probe with; the sampled background will tell
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = _build_explainer(method, est, bg, options)
        return _run_explainer(e, probe, list(args.missing) if args.missing else None, args.nan_is_missing,
                              args.random_state)


def _needs_background(method: str, mode: str) -> bool:
    return not (method == "tree" and mode == "path_dependent")


def _output_columns(features: Sequence[str], outputs: Sequence[str], multi: bool) -> list[str]:
    if multi:
        shap = [f"shap_{f}__{o}" for f in features for o in outputs]
        return ["row", *shap, *[f"base_value__{o}" for o in outputs], *[f"prediction__{o}" for o in outputs]]
    return ["row", *[f"shap_{f}" for f in features], "base_value", "prediction"]


def _output_layout(res, est, cols: _Columns, args: _ShapArgs) -> tuple[list, bool, str]:
    """The output names, whether there are several, and what is explained (e.g. probabilities)."""
    if res is not None:
        return list(res.output_names), res.values.ndim == 3, res.output
    # a model-agnostic method without a complete probe row: ask the adapter
    from ..model import ModelAdapter
    from ..shap._common import output_label

    adapter = ModelAdapter(est, feature_names=list(cols.features), output=args.output, class_index=args.class_index)
    return list(adapter.output_names), adapter.n_outputs > 1, output_label(adapter)


def _manifest_options(args: _ShapArgs, plan: _ShapPlan) -> dict:
    """The options recorded in the manifest: those that change the numbers, None where unused."""
    chosen = plan.method
    return {"method": chosen, "method_requested": args.method, "mode": args.mode if chosen == "tree" else None,
            "background_rows": args.background if plan.needs_background else None,
            "missing": list(args.missing) if args.missing else None,
            "nan_is_missing": bool(args.nan_is_missing), "output": args.output, "class_index": args.class_index,
            "n_samples": args.n_samples if chosen == "kernel" else None, "random_state": args.random_state,
            "chunk_rows": args.chunk_rows, "block_rows": args.block_rows}


# ================================================================= the run
def _prepare_background(out: Path, resume: dict | None, src: _Source, cols: _Columns, args: _ShapArgs,
                        plan: _ShapPlan, notices: list) -> tuple[pd.DataFrame | None, dict | None]:
    """The background and its manifest entry: kept from the run being resumed, else drawn from
    the whole file and written to ``_background.parquet``; (None, None) when the method needs none."""
    if not plan.needs_background:
        return None, None
    bg_frame = _load_background_checked(out, resume) if resume is not None else None
    if bg_frame is None:
        bg_frame, bg_pos = _sample_background(src, cols, args.background, args.random_state, args.chunk_rows)
        import pyarrow as pa

        bg_table = pa.Table.from_pandas(bg_frame.assign(_row=bg_pos), preserve_index=False)
        _write_table_atomic(bg_table, out / BACKGROUND)
    bg_info = {"file": BACKGROUND, "rows": len(bg_frame), "sha256": _file_sha(out / BACKGROUND)}
    if len(bg_frame) < args.background:
        notices.append(f"Only {len(bg_frame)} complete rows could serve as background "
                       f"(asked for {args.background}).")
    return bg_frame, bg_info


def _load_background_checked(out: Path, man: dict) -> pd.DataFrame | None:
    info = (man or {}).get("background") or {}
    path = out / BACKGROUND
    if not info or not path.is_file() or _file_sha(path) != info.get("sha256"):
        return None
    return _read_background(path)


def _in_process_state(est, plan: _ShapPlan, bg_frame: pd.DataFrame | None):
    """The worker state of an in-process run, built from the model loaded here."""
    def prime():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return est, _build_explainer(plan.method, est, bg_frame, plan.options)

    return prime
