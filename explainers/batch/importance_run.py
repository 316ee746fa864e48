"""Holdout permutation importance over a whole file: :func:`importance_file`.

Each chunk's columns are shuffled within the chunk and scored by a worker (one
JSON part per chunk, see :mod:`.run`); :func:`_combine_importance` combines the
chunks' scores, in chunk order, into the score over the whole file, both for a
finished run and when a finished output is opened again (:func:`load_importance`).
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

from ..errors import ExplainerError, InvalidDataError, param_error
from .backends import _warmed
from .lock import _locked
from .manifest import (IMPORTANCE_CSV, _atomic_write_bytes, _check_not_foreign, _cleanup_on_error, _finish,
                       _finished_manifest, _finished_ok, _mark_complete, _mark_incomplete, _new_manifest, _new_run_id,
                       _part_name, _prepare_out, _remove_tmp, _run_identity, _write_manifest)
from .options import _CHUNK_METRIC, BATCH_SCORING, DEFAULT_CHUNK_ROWS, _check_common, _check_int
from .run import ProgressCallback, _run, _Spec
from .sources import (_Columns, _hash_source, _iter_frames, _open_model, _open_source, _resolve_columns, _Source,
                      require_model_file)


def importance_file(
    model: str | os.PathLike,
    data: str | os.PathLike,
    out: str | os.PathLike,
    *,
    target: str,
    n_repeats: int = 5,
    scoring: str | None = None,
    random_state: int = 0,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    n_jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    connect_timeout: float = 10.0,
    overwrite: bool = False,
    trusted: bool = False,
    progress: ProgressCallback | None = None,
):
    """Holdout permutation importance over a whole data file, chunk by chunk.

    Each chunk's feature columns are shuffled within the chunk (``n_repeats``
    times, seeded from ``random_state`` and the chunk index) and scored with
    :func:`explainers.importance.permutation_importance`; the per-chunk scores
    are combined into the score over the whole file (means weighted by rows;
    R² from the pooled squared errors and the file's variance). Shuffling
    within chunks equals shuffling the whole column when the rows are in no
    particular order; sort-ordered files should be shuffled first.

    Parameters
    ----------
    model, data, out : str or Path
        As in :func:`explain_file`.
    target : str
        The target column of the file.
    n_repeats : int, default=5
    scoring : {"neg_log_loss", "accuracy", "r2", "neg_mean_squared_error", "neg_root_mean_squared_error", \
"neg_mean_absolute_error"}, default=None
        None: log loss for a classifier with probabilities (else accuracy), R² for a regressor.
    random_state : int, default=0
    chunk_rows : int, default=20000
        Rows per chunk: also the span of each shuffle (recorded in the manifest).
    n_jobs, backend, scheduler, connect_timeout, overwrite, trusted, progress
        As in :func:`explain_file`.

    Returns
    -------
    ImportanceResult
        ``raw`` has shape (n_features, n_repeats); ``params`` holds the
        baseline score, the number of rows and the output directory. Also
        written to ``out/importance.csv``.

    Raises
    ------
    ExplainerError
        As :func:`explain_file`; also for a scoring that cannot be combined over chunks.
    """
    func = "importance_file"
    chunk_rows, _, n_jobs, random_state = _check_common(
        func, chunk_rows=chunk_rows, block_rows=1, n_jobs=n_jobs, backend=backend,
        random_state=random_state, connect_timeout=connect_timeout)
    n_repeats = _check_int(n_repeats, "n_repeats", func, 1)
    if not isinstance(target, str) or not target:
        raise param_error("target", func, "the name of the target column", target)
    out = Path(out).expanduser().resolve()
    _check_not_foreign(out)  # before the lock file is created in it
    require_model_file(model, func)  # before the workers start
    with _locked(out) as claim, _warmed(backend, n_jobs, scheduler, connect_timeout) as warmup:
        model_path, model_sha, est = _open_model(model, trusted, func)
        scoring = _check_scoring(scoring, est, func)
        src = _open_source(data)
        cols = _resolve_columns(src, est, target, func)
        notices = list(cols.notices)
        _probe(src, cols, est, scoring)
        data_sha, total_rows = _hash_source(src)
        opts = {"target": target, "scoring": scoring, "n_repeats": n_repeats, "random_state": random_state,
                "chunk_rows": chunk_rows}
        resume = _prepare_out(out, _run_identity("importance", model_sha, data_sha, opts), overwrite)
        if resume is not None and resume.get("status") == "complete" and _finished_ok(out, resume, notices):
            result = _combine_importance(out, resume)
            if not (out / IMPORTANCE_CSV).is_file():
                _write_importance_csv(out, result)
            return result
        run_id = resume["run_id"] if resume is not None else _new_run_id()
        with _cleanup_on_error(out, claim.created, "importance", run_id):
            _remove_tmp(out)
            _mark_incomplete(out)
            man = {**_new_manifest("importance", run_id, resume, model_path, model_sha, trusted, src, data_sha,
                                   total_rows, chunk_rows),
                   "options": opts, "features": list(cols.features), "notices": notices}
            _write_manifest(out, man)
            spec = _Spec(kind="importance", run_id=run_id, out=str(out), model_path=str(model_path),
                         model_sha=model_sha, trusted=bool(trusted), random_state=random_state,
                         scoring=scoring, n_repeats=n_repeats)
            st = _run(out, resume, spec, src, cols, chunk_rows, total_rows, progress, lambda: (est, None), warmup)
            _mark_complete(man, st)
            _finish(out, man, "batch-importance", notices)
            # written after the manifest (a rerun writes it if a crash came between)
            result = _combine_importance(out, man)
            _write_importance_csv(out, result)
        return result


def _check_scoring(scoring: str | None, est, func: str) -> str:
    """The scoring to combine over chunks: the one given, or the model's own; it must suit the task."""
    from ..model import detect_task

    task = detect_task(est)
    if scoring is None:
        scoring = "r2" if task == "regression" else "neg_log_loss" if hasattr(est, "predict_proba") else "accuracy"
    if scoring not in BATCH_SCORING:
        raise param_error(
            "scoring", func,
            f"one of {list(BATCH_SCORING)}: scores that can be combined over chunks", scoring)
    if (task == "regression") != (scoring not in ("accuracy", "neg_log_loss")):
        raise param_error("scoring", func, "'neg_log_loss' or 'accuracy' for a classifier" if task != "regression"
                          else "a regression metric for a regressor", scoring)
    if scoring == "neg_log_loss" and not hasattr(est, "predict_proba"):
        raise param_error("scoring", func, "'accuracy' (this classifier gives no probabilities)", scoring)
    return scoring


def _probe(src: _Source, cols: _Columns, est, scoring: str) -> None:
    """Score the first rows once: the columns, the target labels and the model all work."""
    for _, _, frame, y in _iter_frames(src, cols, 64):
        from ..importance import permutation_importance

        permutation_importance(est, frame.reset_index(drop=True), y.reset_index(drop=True),
                               n_repeats=1, scoring=_CHUNK_METRIC[scoring], random_state=0)
        break


def _write_importance_csv(out: Path, result) -> None:
    """``importance.csv``: the importance table, then one column per repeat."""
    frame = result.to_frame()
    for r in range(result.raw.shape[1]):
        frame[f"repeat_{r}"] = result.raw[:, r]
    _atomic_write_bytes(out / IMPORTANCE_CSV, frame.to_csv().encode())


# ================================================================= combining
def _combine_importance(out: Path, man: dict):
    """Combine the per-chunk scores, in chunk order (so every backend gives the same bits)."""
    from ..importance.result import make_result

    opts = man["options"]
    scoring = opts["scoring"]
    parts = _read_parts(out, int(man["n_chunks"]))
    b, s, N = _file_scores(parts, scoring)
    raw = b - s
    params = {"n_repeats": opts["n_repeats"], "scoring": scoring, "scoring_name": scoring,
              "random_state": opts["random_state"], "baseline_score": float(b), "n_rows": int(N),
              "chunk_rows": opts["chunk_rows"], "source": str(out), "shuffled_within": "chunks"}
    desc = (f"Permutation importance over {int(N):,} rows: how much {scoring} drops when a feature's "
            f"values are shuffled within chunks of {opts['chunk_rows']:,} rows "
            f"({opts['n_repeats']} shuffles per feature).")
    return make_result(man["features"], raw, "permutation", params, desc)


def _read_parts(out: Path, n_chunks: int) -> list[dict]:
    """The chunks' scores, in chunk order."""
    parts = []
    for i in range(n_chunks):
        path = out / _part_name(i, "importance")
        try:
            parts.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            raise ExplainerError(
                f"The part {path.name!r} of {str(out)!r} is missing or unreadable. Rerun the same "
                "batch-importance command to recompute it."
            ) from None
    return parts


def _file_scores(parts: list[dict], scoring: str):
    """The baseline and the permuted scores (features, repeats) over the whole file, and its rows."""
    n = np.array([p["n"] for p in parts], dtype=float)
    N = n.sum()
    base = np.array([p["baseline"] for p in parts])
    perm = np.array([p["permuted"] for p in parts])  # (chunks, p, r)
    base_mean = float((n * base).sum() / N)
    perm_mean = np.tensordot(n, perm, axes=(0, 0)) / N  # (p, r)
    if scoring in ("neg_log_loss", "accuracy", "neg_mean_squared_error", "neg_mean_absolute_error"):
        return base_mean, perm_mean, N
    if scoring == "neg_root_mean_squared_error":
        return -math.sqrt(-base_mean), -np.sqrt(-perm_mean), N
    # r2 from the pooled squared errors and the whole file's variance
    sst = _target_sum_of_squares(parts)
    if sst <= 0:
        raise InvalidDataError("The target is constant over the file, so R² is undefined; use scoring='neg_mean_squared_error'.")
    return 1.0 - (-base_mean * N) / sst, 1.0 - (-perm_mean * N) / sst, N


def _target_sum_of_squares(parts: list[dict]) -> float:
    """The target's squared deviations from its mean over the file, merged from the chunks' (Chan et al.)."""
    cnt, mean, m2 = 0.0, 0.0, 0.0
    for p in parts:
        nb, mb, m2b = float(p["n"]), float(p["y_mean"]), float(p["y_m2"])
        delta = mb - mean
        tot = cnt + nb
        m2 = m2 + m2b + delta * delta * cnt * nb / tot
        mean = mean + delta * nb / tot
        cnt = tot
    return m2


def load_importance(path: str | os.PathLike):
    """Open a finished :func:`importance_file` run as an :class:`~explainers.importance.ImportanceResult`.

    Raises
    ------
    ExplainerError
        If ``path`` holds no finished importance run, or its parts do not agree with
        its manifest (as :func:`~explainers.batch.load_attributions`).
    """
    out = Path(path).expanduser().resolve()
    man = _finished_manifest(out, "importance", "batch-importance")
    return _combine_importance(out, man)
