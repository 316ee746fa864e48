"""Batch explanations of large files: chunked, resumable, parallel on loky or Dask.

The dashboard explores a sample; this module explains every row of a CSV or
Parquet file (or a directory of Parquet parts) without ever holding the whole
table in memory:

* The input is streamed with pyarrow in chunks of ``chunk_rows`` rows.
* Each chunk is one joblib task. A worker loads the model from its file once
  (cached per worker process), explains the chunk and writes its own part file
  atomically (a temporary file renamed into place), so the parent process only
  ever holds the few chunks in flight (``2 * n_jobs``) and never the results.
* ``OUT/_manifest.json`` records the model and data fingerprints and every
  option that changes the numbers. Rerunning the same command after an
  interruption skips the finished parts and computes the rest: nothing is lost
  or duplicated. A different model, data file or option is refused unless
  ``overwrite=True``.
* Rows are explained in blocks of ``block_rows`` aligned on absolute row
  positions, with one BLAS thread, from a background drawn once from the whole
  file and stored in ``OUT/_background.parquet``. The numbers therefore do not
  depend on the backend, the number of workers, or ``chunk_rows`` (any multiple
  of ``block_rows``): they are equal bit for bit.

The output directory reads as one Parquet dataset (``pandas.read_parquet(OUT)``;
files starting with ``_`` or ``.`` are skipped by pyarrow): one row per input
row, in input order, with the columns ``row``, ``shap_<feature>`` (or
``shap_<feature>__<class>`` for several outputs), ``base_value`` and
``prediction`` (likewise per class).

:func:`importance_file` computes holdout permutation importance the same way
(the shuffles stay within each chunk), and :func:`load_attributions` opens a
finished run as a :class:`~explainers.shap.ShapResult` on a sample of its rows,
for the dashboard's global views.
"""
from __future__ import annotations

import contextlib
import csv
import hashlib
import inspect
import json
import math
import numbers
import os
import re
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from .errors import ExplainerError, InvalidDataError, InvalidModelError, param_error
from .io import (_coerce_numeric, categorical_features, expected_features, fingerprint, load_model,
                 match_columns, parquet_schema)

__all__ = [
    "explain_file",
    "importance_file",
    "load_attributions",
    "load_importance",
    "load_background",
    "BatchReport",
    "BatchProgress",
    "DEFAULT_CHUNK_ROWS",
    "DEFAULT_BLOCK_ROWS",
    "BATCH_METHODS",
    "BATCH_SCORING",
]

#: rows per chunk: the unit of reading, of one parallel task and of one part file
DEFAULT_CHUNK_ROWS = 20_000
#: rows per explain() call inside a chunk, aligned on absolute row positions;
#: fixing it makes the numbers independent of ``chunk_rows`` and the backend
DEFAULT_BLOCK_ROWS = 1_000
#: methods accepted by :func:`explain_file`
BATCH_METHODS = ("auto", "tree", "kernel", "exact", "linear")
#: TreeShap's value functions
TREE_MODES = ("path_dependent", "interventional")
#: scoring names whose value over the whole file can be combined from chunks
BATCH_SCORING = (
    "accuracy",
    "r2",
    "neg_mean_squared_error",
    "neg_root_mean_squared_error",
    "neg_mean_absolute_error",
)
#: the per-chunk metric each scoring is combined from (a mean over rows)
_CHUNK_METRIC = {
    "accuracy": "accuracy",
    "r2": "neg_mean_squared_error",
    "neg_mean_squared_error": "neg_mean_squared_error",
    "neg_root_mean_squared_error": "neg_mean_squared_error",
    "neg_mean_absolute_error": "neg_mean_absolute_error",
}

MANIFEST = "_manifest.json"
BACKGROUND = "_background.parquet"
IMPORTANCE_CSV = "importance.csv"
FORMAT = "glassbox-batch"
FORMAT_VERSION = 1
_PART_RE = re.compile(r"^part-(\d{6,})\.(parquet|json)$")
_HASH_BLOCK = 1 << 22
_CSV_BLOCK = 1 << 22

ProgressCallback = Callable[["BatchProgress"], None]


# ============================================================== results, progress
@dataclass(frozen=True)
class BatchProgress:
    """Where a batch run stands; passed to the ``progress`` callback after each chunk.

    Attributes
    ----------
    done_rows : int
        Rows finished, including those of parts kept from an earlier run.
    total_rows : int or None
        Rows in the file: exact for Parquet, estimated from line breaks for CSV.
    computed_rows : int
        Rows computed by this run (excludes the kept parts).
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


# ======================================================================== input
@dataclass(frozen=True)
class _Source:
    """A data file (CSV or Parquet) or a directory of Parquet parts, opened but not read."""

    path: str
    kind: str  # "csv" | "parquet"
    files: tuple
    columns: tuple
    delimiter: str = ","
    n_rows: int | None = None  # exact for Parquet; None for CSV until counted


def _open_source(data) -> _Source:
    """Check that ``data`` names a readable CSV / Parquet file or Parquet directory."""
    if not isinstance(data, (str, os.PathLike)):
        raise InvalidDataError(
            f"Pass the data as a file path (CSV, Parquet, or a directory of Parquet parts); "
            f"got {type(data).__name__}."
        )
    path = Path(data).expanduser().resolve()
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in (".parquet", ".pq")
                       and not p.name.startswith(("_", ".")))
        if not files:
            raise InvalidDataError(
                f"The directory {str(path)!r} holds no Parquet files (*.parquet). Point --data at a "
                "CSV or Parquet file, or at a directory of Parquet parts."
            )
        return _open_parquet(path, files)
    if not path.is_file():
        raise InvalidDataError(f"The data file {str(path)!r} does not exist. Check the path.")
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError as exc:
        raise InvalidDataError(f"Could not read the data file {str(path)!r}: {exc.strerror or exc}.") from None
    if not head.strip():
        raise InvalidDataError(
            f"The data file {path.name!r} is empty. Use a CSV or Parquet file with a header row and data."
        )
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")) or head[:4] == b"PAR1":
        return _open_parquet(path, [path])
    if not name.endswith((".csv", ".txt", ".tsv")):
        raise InvalidDataError(
            f"{path.name!r} is not a data file this tool reads: use CSV (.csv) or Parquet (.parquet)."
        )
    return _open_csv(path, head)


def _open_parquet(path: Path, files: list) -> _Source:
    columns = None
    n_rows = 0
    for f in files:
        meta, names = parquet_schema(f, f.name)
        n_rows += int(meta.metadata.num_rows)
        if columns is None:
            columns = names
        elif set(names) != set(columns):
            diff = sorted(set(names) ^ set(columns))
            raise InvalidDataError(
                f"The Parquet parts do not share one schema: {f.name!r} differs from {files[0].name!r} "
                f"in the columns {', '.join(diff[:10])}. Give every part the same columns."
            )
    return _Source(str(path), "parquet", tuple(str(f) for f in files), tuple(columns), n_rows=n_rows)


def _open_csv(path: Path, head: bytes) -> _Source:
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InvalidDataError(
            f"{path.name!r} is UTF-16 text; batch runs read UTF-8 CSV. Save it as 'CSV UTF-8' or as Parquet."
        )
    if b"\x00" in head:
        raise InvalidDataError(f"{path.name!r} contains NUL bytes, so it is not a text CSV. Use a CSV or Parquet file.")
    cut = head.find(b"\n")
    line = head if cut < 0 else head[:cut]
    try:
        header_line = line.decode("utf-8-sig").rstrip("\r")
    except UnicodeDecodeError as exc:
        raise InvalidDataError(
            f"The CSV header of {path.name!r} is not UTF-8 text (byte 0x{line[exc.start]:02x} at "
            f"position {exc.start}). Save the file as 'CSV UTF-8'."
        ) from None
    try:
        sep = csv.Sniffer().sniff(header_line, delimiters=",;\t|").delimiter
    except csv.Error:
        sep = ","
    header = [h.strip() for h in next(csv.reader([header_line], delimiter=sep))]
    if not header or all(h == "" for h in header):
        raise InvalidDataError(f"{path.name!r} has no header row. Put the column names on the first line.")
    dups = sorted({c for c in header if header.count(c) > 1})
    if dups:
        raise InvalidDataError(
            f"{path.name!r} has duplicate column names: {', '.join(dups)}. Rename them so each column is unique."
        )
    return _Source(str(path), "csv", (str(path),), tuple(header), delimiter=sep)


def _hash_source(src: _Source) -> tuple[str, int | None]:
    """sha256 of the file bytes (streamed), and for CSV the number of data lines.

    For a single file the digest equals :func:`explainers.fingerprint` of its
    bytes; for a directory it covers each part's name and bytes, in order.
    """
    h = hashlib.sha256()
    lines = 0
    last = b""
    for f in src.files:
        if len(src.files) > 1:
            h.update(Path(f).name.encode() + b"\x00")
        try:
            with open(f, "rb") as fh:
                while block := fh.read(_HASH_BLOCK):
                    h.update(block)
                    if src.kind == "csv":
                        lines += block.count(b"\n")
                        last = block[-1:]
        except OSError as exc:
            raise InvalidDataError(f"Could not read the data file {f!r}: {exc.strerror or exc}.") from None
    if src.kind != "csv":
        return h.hexdigest(), src.n_rows
    if last and last != b"\n":
        lines += 1  # no newline after the last row
    return h.hexdigest(), max(0, lines - 1)  # minus the header


@dataclass(frozen=True)
class _Columns:
    """Which file columns feed the model, and how to read them."""

    features: list
    text_ok: frozenset
    target: str | None
    target_type: str | None  # how CSV reads it: "float" | "string" | None
    target_cast: str | None  # numpy dtype of the classifier's labels, when numeric
    notices: list


def _resolve_columns(src: _Source, model, target: str | None, func: str) -> _Columns:
    """Match the file's columns to the model, with :func:`explainers.load_data`'s messages."""
    present = [c for c in src.columns]
    notices: list[str] = []
    target_type = target_cast = None
    if target is not None:
        if target not in present:
            raise InvalidDataError(
                f"The target column {target!r} is not in the file. Its columns are: "
                f"{', '.join(present[:20])}{' …' if len(present) > 20 else ''}."
            )
        present = [c for c in present if c != target]
        classes = getattr(model, "classes_", None)
        numeric_classes = classes is not None and np.issubdtype(np.asarray(classes).dtype, np.number)
        target_type = "string" if classes is not None and not numeric_classes else "float"
        if numeric_classes:
            target_cast = np.asarray(classes).dtype.str
    names = expected_features(model)
    n_in = getattr(model, "n_features_in_", None)
    if names is None and n_in is not None:
        if len(present) != int(n_in):
            raise InvalidDataError(
                f"The model was fitted on {int(n_in)} unnamed columns but the file has "
                f"{len(present)}{' (after removing the target)' if target else ''}. Use data with exactly "
                f"the model's {int(n_in)} feature columns, in training order."
            )
        notices.append("The model did not record its column names; the file's columns are used in file order.")
        names = list(present)
    if names is None:
        raise InvalidModelError(
            f"{func} cannot tell which columns the model reads: it records neither "
            "feature_names_in_ nor n_features_in_. Fit it on a DataFrame."
        )
    match_columns(present, names, notices)
    return _Columns(list(names), frozenset(categorical_features(model)), target, target_type, target_cast, notices)


def _iter_arrow(src: _Source, cols: _Columns, batch_rows: int):
    """Yield pyarrow RecordBatches of the needed columns, in file order."""
    import pyarrow as pa

    needed = list(cols.features) + ([cols.target] if cols.target else [])
    if src.kind == "parquet":
        import pyarrow.parquet as pq

        for f in src.files:
            name = Path(f).name
            try:
                # pre_buffer=False: with it, pyarrow keeps every row group it read in
                # memory until the file is done, so memory would grow with the file
                pf = pq.ParquetFile(f, pre_buffer=False)
                it = pf.iter_batches(batch_size=batch_rows, columns=needed)
                for batch in it:
                    yield batch
            except (OSError, pa.ArrowException) as exc:
                raise InvalidDataError(
                    f"Could not read the Parquet file {name!r} ({type(exc).__name__}: {exc}). Check that "
                    "it is a complete Parquet file."
                ) from None
        return
    import pyarrow.csv as pacsv

    types = {c: (pa.string() if c in cols.text_ok else pa.float64()) for c in cols.features}
    if cols.target:
        types[cols.target] = pa.string() if cols.target_type == "string" else pa.float64()
    try:
        reader = pacsv.open_csv(
            src.files[0],
            read_options=pacsv.ReadOptions(column_names=list(src.columns), skip_rows=1, block_size=_CSV_BLOCK),
            parse_options=pacsv.ParseOptions(delimiter=src.delimiter),
            convert_options=pacsv.ConvertOptions(include_columns=needed, column_types=types,
                                                 strings_can_be_null=True),
        )
        for batch in reader:
            yield batch
    except pa.ArrowInvalid as exc:
        raise InvalidDataError(_csv_error(str(exc), src)) from None
    except OSError as exc:
        raise InvalidDataError(f"Could not read the CSV file {src.path!r}: {exc}.") from None


def _csv_error(msg: str, src: _Source) -> str:
    m = re.search(r"CSV column #(\d+): CSV conversion error to (\w+): invalid value '([^']*)'", msg)
    if m:
        col = src.columns[int(m.group(1))]
        return (
            f"Column {col!r} must be numeric but holds text, e.g. {m.group(3)!r}. Fix or remove "
            "those values, or leave the cells empty to mark them missing."
        )
    m = re.search(r"Expected (\d+) columns, got (\d+)", msg)
    if m:
        return (
            f"A row of the CSV file has {m.group(2)} fields but the header has {m.group(1)} "
            f"({msg.strip().splitlines()[0]}). Check that every row has as many fields as the header."
        )
    return f"Could not parse the CSV file ({msg.strip().splitlines()[0]}). Check its format."


def _iter_tables(src: _Source, cols: _Columns, chunk_rows: int):
    """Yield (chunk index, first row, pyarrow Table) with exactly ``chunk_rows`` rows (the last fewer).

    Holds at most one chunk plus one read batch in memory.
    """
    import pyarrow as pa

    pending: list = []
    n_pending = 0
    index = 0
    start = 0
    for batch in _iter_arrow(src, cols, min(chunk_rows, 65_536)):
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        n_pending += batch.num_rows
        while n_pending >= chunk_rows:
            table = pa.Table.from_batches(pending)
            chunk = table.slice(0, chunk_rows).combine_chunks()
            rest = table.slice(chunk_rows)
            pending = rest.to_batches() if rest.num_rows else []
            n_pending = rest.num_rows
            yield index, start, chunk
            index += 1
            start += chunk_rows
    if n_pending:
        yield index, start, pa.Table.from_batches(pending).combine_chunks()


def _to_frame(table, cols: _Columns, start: int) -> tuple[pd.DataFrame, pd.Series | None]:
    """A chunk as the model's DataFrame (checked like load_data) and its target."""
    frame = table.to_pandas()
    y = frame.pop(cols.target) if cols.target else None
    if y is not None and cols.target_cast is not None and y.notna().all():
        # CSV labels come back as floats (1.0); give them the classifier's label type
        as_cast = y.to_numpy().astype(cols.target_cast)
        if (as_cast == y.to_numpy()).all():
            y = pd.Series(as_cast, name=y.name)
    frame = frame[list(cols.features)]
    try:
        frame = _coerce_numeric(frame, set(cols.text_ok), [])
    except InvalidDataError as exc:
        # the check numbers rows within the chunk: report the file's row instead
        msg = re.sub(r"in data row (\d+)", lambda m: f"in data row {int(m.group(1)) + start}", str(exc))
        raise InvalidDataError(msg) from None
    frame.index = pd.RangeIndex(start, start + len(frame))
    if y is not None:
        y.index = frame.index
    return frame, y


def _iter_frames(src: _Source, cols: _Columns, chunk_rows: int) -> Iterator[tuple[int, int, pd.DataFrame, pd.Series | None]]:
    for index, start, table in _iter_tables(src, cols, chunk_rows):
        frame, y = _to_frame(table, cols, start)
        yield index, start, frame, y


def _read_rows(src: _Source, cols: _Columns, rows: np.ndarray, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> pd.DataFrame:
    """The given sorted row positions of the file, read in one streaming pass."""
    parts = []
    for _, start, table in _iter_tables(src, cols, chunk_rows):
        lo, hi = np.searchsorted(rows, [start, start + table.num_rows])
        if hi > lo:
            frame, _ = _to_frame(table.take(rows[lo:hi] - start), cols, 0)
            parts.append(frame)
        if hi == len(rows):
            break
    if not parts:
        return pd.DataFrame(columns=cols.features)
    return pd.concat(parts, ignore_index=True)


# ==================================================================== background
def _sample_background(src: _Source, cols: _Columns, n: int, seed: int, chunk_rows: int) -> tuple[pd.DataFrame, np.ndarray]:
    """A seeded uniform sample of ``n`` complete rows of the whole file, in one pass.

    Every row gets a uniform key from one random stream (the same stream
    whatever the chunking), rows with a missing value get +inf, and the ``n``
    smallest keys win (bottom-k sampling). Returns (rows, their positions).
    """
    rng = np.random.default_rng(seed)
    best_keys = np.empty(0)
    best_pos = np.empty(0, dtype=np.int64)
    best_rows: pd.DataFrame | None = None
    for _, start, frame, _ in _iter_frames(src, cols, chunk_rows):
        keys = rng.random(len(frame))
        keys[frame.isna().any(axis=1).to_numpy()] = np.inf
        take = np.flatnonzero(np.isfinite(keys))
        if len(take) > n:
            take = take[np.argpartition(keys[take], n - 1)[:n]]
        cand = frame.iloc[take]
        keys_all = np.concatenate([best_keys, keys[take]])
        pos_all = np.concatenate([best_pos, start + take])
        rows_all = cand if best_rows is None else pd.concat([best_rows, cand])
        if len(keys_all) > n:
            keep = np.argpartition(keys_all, n - 1)[:n]
            keys_all, pos_all, rows_all = keys_all[keep], pos_all[keep], rows_all.iloc[keep]
        best_keys, best_pos, best_rows = keys_all, pos_all, rows_all
    if best_rows is None or len(best_rows) == 0:
        raise InvalidDataError(
            "Every row of the data has a missing value, so none can serve as background. "
            "Fill the missing values, or use --method tree (path-dependent) which needs no background."
        )
    order = np.argsort(best_pos, kind="stable")
    return best_rows.iloc[order].reset_index(drop=True), best_pos[order]


# ===================================================================== explainers
def _explainer_classes() -> dict:
    from .shap import EXPLAINERS

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


def _run_explainer(explainer, X: pd.DataFrame, missing, nan_is_missing: bool, random_state: int):
    run = inspect.signature(explainer.explain).parameters
    kw = {"nan_is_missing": nan_is_missing}
    if "random_state" in run:
        kw["random_state"] = random_state
    return explainer.explain(X, missing, **kw)


def _needs_background(method: str, mode: str) -> bool:
    return not (method == "tree" and mode == "path_dependent")


def _output_columns(features: Sequence[str], outputs: Sequence[str], multi: bool) -> list[str]:
    if multi:
        shap = [f"shap_{f}__{o}" for f in features for o in outputs]
        return ["row", *shap, *[f"base_value__{o}" for o in outputs], *[f"prediction__{o}" for o in outputs]]
    return ["row", *[f"shap_{f}" for f in features], "base_value", "prediction"]


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
    nan_is_missing: bool = True
    random_state: int = 0
    multi: bool = False
    columns: tuple = ()
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


def _part_name(index: int, kind: str) -> str:
    return f"part-{index:06d}.{'parquet' if kind == 'shap' else 'json'}"


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _write_table_atomic(table, path: Path) -> None:
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _run_chunk(spec: _Spec, index: int, start: int, X: pd.DataFrame, y) -> dict:
    """Compute one chunk and write its part file; runs in a worker (or in-process)."""
    from joblib import parallel_config
    from threadpoolctl import threadpool_limits

    t0 = time.perf_counter()
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
    X = X.reset_index(drop=True)
    missing = None if spec.missing is None else list(spec.missing)
    vals, base, pred = [], [], []
    # blocks start at absolute multiples of block_rows (chunk starts are multiples too)
    for s in range(0, n, spec.block_rows):
        res = _run_explainer(explainer, X.iloc[s : s + spec.block_rows], missing,
                             spec.nan_is_missing, spec.random_state)
        vals.append(res.values)
        base.append(res.base_values)
        pred.append(res.predictions)
    values = np.concatenate(vals)
    base_values = np.concatenate(base)
    predictions = np.concatenate(pred)
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
    table = pa.table(cols).replace_schema_metadata(
        {"glassbox.run_id": spec.run_id, "glassbox.chunk": str(index), "glassbox.start": str(start)}
    )
    _write_table_atomic(table, Path(spec.out) / _part_name(index, "shap"))


def _chunk_seed(random_state: int, index: int) -> int:
    """The shuffles of chunk ``index``: from the global seed and the index only."""
    return int(np.random.SeedSequence([random_state, index]).generate_state(1)[0])


def _importance_chunk(spec: _Spec, model, index: int, start: int, X: pd.DataFrame, y) -> None:
    from .importance import permutation_importance

    metric = _CHUNK_METRIC[spec.scoring]
    res = permutation_importance(model, X.reset_index(drop=True), y.reset_index(drop=True),
                                 n_repeats=spec.n_repeats, scoring=metric,
                                 random_state=_chunk_seed(spec.random_state, index))
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


# ================================================================== output dir
def _read_manifest(out: Path) -> dict | None:
    path = out / MANIFEST
    if not path.is_file():
        return None
    try:
        man = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ExplainerError(
            f"{str(path)!r} is not a readable batch manifest ({exc}). Pass --overwrite to start "
            "over, or choose another --out."
        ) from None
    if not isinstance(man, dict) or man.get("format") != FORMAT:
        raise ExplainerError(
            f"{str(path)!r} was not written by a Glassbox batch run. Choose another --out."
        )
    return man


def _write_manifest(out: Path, man: dict) -> None:
    _atomic_write_bytes(out / MANIFEST, (json.dumps(man, indent=2, sort_keys=True) + "\n").encode())


def _ours(name: str) -> bool:
    return (name in (MANIFEST, BACKGROUND, IMPORTANCE_CSV) or bool(_PART_RE.match(name))
            or (name.startswith(".") and name.endswith(".tmp")))


def _clear_ours(out: Path, remove_dir: bool) -> None:
    """Delete the files a batch run writes (and the directory, if then empty and asked)."""
    if not out.is_dir():
        return
    for p in out.iterdir():
        if p.is_file() and _ours(p.name):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
    if remove_dir:
        with contextlib.suppress(OSError):
            out.rmdir()


def _remove_tmp(out: Path) -> None:
    if out.is_dir():
        for p in out.iterdir():
            if p.name.startswith(".") and p.name.endswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()


def _identity_diff(old: dict, new: dict) -> list[str]:
    diffs = []
    if old.get("kind") != new["kind"]:
        diffs.append(f"it holds a {old.get('kind')!r} run, not {new['kind']!r}")
    if old.get("model", {}).get("sha256") != new["model"]["sha256"]:
        diffs.append(
            f"it was made from another model (sha256 {str(old.get('model', {}).get('sha256'))[:12]}…, "
            f"this model is {new['model']['sha256'][:12]}…)"
        )
    if old.get("data", {}).get("sha256") != new["data"]["sha256"]:
        diffs.append("it was made from other data (the data file's content differs)")
    oo, no = old.get("options", {}), new["options"]
    changed = sorted(k for k in set(oo) | set(no) if oo.get(k) != no.get(k))
    if changed:
        diffs.append("options differ: " + ", ".join(f"{k} {oo.get(k)!r} -> {no.get(k)!r}" for k in changed))
    return diffs


def _prepare_out(out: Path, identity: dict, overwrite: bool) -> tuple[bool, dict | None]:
    """Decide between a fresh run and a resume. Returns (created the dir, manifest to resume)."""
    if out.exists() and not out.is_dir():
        raise ExplainerError(f"--out {str(out)!r} is a file; give a directory path (it will hold part files).")
    if not out.exists():
        return True, None
    man = _read_manifest(out)
    if man is None:
        if any(out.iterdir()):
            raise ExplainerError(
                f"--out {str(out)!r} exists and holds files that no batch run wrote. Choose a new "
                "or empty directory (its files are never deleted, even with --overwrite)."
            )
        return False, None
    diffs = _identity_diff(man, identity)
    if diffs:
        if not overwrite:
            raise ExplainerError(
                f"--out {str(out)!r} already holds results that do not match this run: "
                + "; ".join(diffs)
                + ". Pass --overwrite to replace them, or choose another --out."
            )
        _clear_ours(out, remove_dir=False)
        return False, None
    if overwrite:
        _clear_ours(out, remove_dir=False)
        return False, None
    return False, man


def _done_parts(out: Path, kind: str, run_id: str) -> dict[int, int]:
    """Finished parts of this run: chunk index -> rows (a part written in full, by this run)."""
    import pyarrow.parquet as pq

    done: dict[int, int] = {}
    for p in out.iterdir():
        m = _PART_RE.match(p.name)
        if not m or (m.group(2) == "parquet") != (kind == "shap"):
            continue
        try:
            if kind == "shap":
                meta = pq.ParquetFile(p).metadata
                kv = {k.decode(): v.decode() for k, v in (meta.metadata or {}).items()}
                ok = kv.get("glassbox.run_id") == run_id
                rows = int(meta.num_rows)
            else:
                stats = json.loads(p.read_text())
                ok = stats.get("run_id") == run_id
                rows = int(stats["n"])
        except Exception:  # unreadable: recompute it
            ok = False
        if ok:
            done[int(m.group(1))] = rows
        else:
            p.unlink()
    return done


# ==================================================================== parallel
def _warm_worker() -> int:
    """Import what a chunk needs (scikit-learn, skops, the compiled kernels); runs in a worker."""
    import sklearn.ensemble  # noqa: F401  (most of a worker's start-up)
    import skops.io  # noqa: F401

    from .shap import tree  # noqa: F401

    return os.getpid()


class _Warmup:
    """Workers started while the parent still sets up (reads the model, probes the
    data, hashes the file): their imports then use the core the parent leaves
    idle, and the chunk loop starts with ready workers. loky: joblib hands the
    same workers to the chunk loop (one reusable executor per configuration);
    Dask: the cluster is up and every worker has run the imports."""

    def __init__(self, backend: str, jobs: int):
        self.jobs = jobs  # what the chunk loop passes to joblib
        self.pids: set[int] = set()
        self._gen = self._futures = None
        if backend == "dask":
            from distributed import get_client

            client = get_client()
            self._futures = [client.submit(_warm_worker, pure=False, workers=[w], allow_other_workers=False)
                             for w in client.scheduler_info()["workers"]]
            return
        if jobs == 1:
            return
        from joblib import Parallel, delayed, effective_n_jobs

        if effective_n_jobs(jobs) > 1:
            self._gen = Parallel(n_jobs=jobs, return_as="generator_unordered", batch_size=1)(
                delayed(_warm_worker)() for _ in range(effective_n_jobs(jobs)))

    def wait(self) -> None:
        """Collect the warm-up (before another Parallel call starts)."""
        if self._gen is not None:
            gen, self._gen = self._gen, None
            self.pids.update(gen)
        if self._futures is not None:
            futures, self._futures = self._futures, None
            self.pids.update(f.result() for f in futures)

    def close(self) -> None:
        """Drop a warm-up still pending (an error before the chunk loop): nothing waits for it."""
        gen, self._gen = self._gen, None
        futures, self._futures = self._futures, None
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # joblib: "tasks executed but not used"
            if gen is not None:
                gen.close()
            for f in futures or ():
                f.cancel()


@contextlib.contextmanager
def _warmed(backend: str, n_jobs: int, scheduler: str | None, connect_timeout: float):
    """The parallel backend, entered before the set-up (an unreachable scheduler fails
    first), with its workers warming up meanwhile."""
    with _backend(backend, n_jobs, scheduler, connect_timeout) as jobs:
        warmup = _Warmup(backend, jobs)
        try:
            yield warmup
        finally:
            warmup.close()


@contextlib.contextmanager
def _backend(backend: str, n_jobs: int, scheduler: str | None, connect_timeout: float):
    """Yield the joblib n_jobs to use, inside the chosen backend's context."""
    if backend == "loky":
        yield n_jobs
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - dask is in requirements.txt
        raise ExplainerError(
            "--backend dask needs dask.distributed: pip install 'dask[distributed]'."
        ) from None
    from joblib import parallel_config
    import logging

    with contextlib.ExitStack() as stack:
        if scheduler:
            try:
                client = Client(scheduler, timeout=connect_timeout, set_as_default=True)
            except (OSError, TimeoutError, ValueError) as exc:
                raise ExplainerError(
                    f"Could not reach the Dask scheduler at {scheduler!r} within {connect_timeout:g} s "
                    f"({type(exc).__name__}: {exc}). Check the address (e.g. tcp://host:8786) and that the "
                    "scheduler is running, or leave out --scheduler to run on this machine."
                ) from None
            stack.enter_context(client)
        else:
            cluster = stack.enter_context(
                LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=True,
                             dashboard_address=None, silence_logs=logging.ERROR)
            )
            stack.enter_context(Client(cluster, set_as_default=True))
        stack.enter_context(parallel_config(backend="dask"))
        yield -1


# ================================================================= validation
def _check_int(value, name: str, func: str, low: int) -> int:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low:
        return int(value)
    raise param_error(name, func, f"an int >= {low}", value)


def _check_common(func: str, *, chunk_rows, block_rows, n_jobs, backend, random_state, connect_timeout):
    chunk_rows = _check_int(chunk_rows, "chunk_rows", func, 1)
    block_rows = _check_int(block_rows, "block_rows", func, 1)
    if chunk_rows % block_rows:
        lo = max(block_rows, chunk_rows // block_rows * block_rows)
        raise param_error(
            "chunk_rows", func,
            f"a multiple of block_rows={block_rows} (so blocks line up whatever the chunking), "
            f"e.g. {lo} or {lo + block_rows}; or set block_rows too", chunk_rows,
        )
    if backend not in ("loky", "dask"):
        raise param_error("backend", func, "'loky' or 'dask'", backend)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0 or n_jobs < -1:
        raise param_error("n_jobs", func, "an int >= 1, or -1 for every core", n_jobs)
    if n_jobs == -1:
        try:
            n_jobs = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not Linux
            n_jobs = os.cpu_count() or 1
    random_state = _check_int(random_state, "random_state", func, 0)
    if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, numbers.Real) or connect_timeout <= 0:
        raise param_error("connect_timeout", func, "a number of seconds > 0", connect_timeout)
    return chunk_rows, block_rows, int(n_jobs), random_state


def _open_model(model, trusted: bool, func: str) -> tuple[Path, str, object]:
    if not isinstance(model, (str, os.PathLike)):
        raise param_error("model", func, "the path of a saved model file (.skops, or .joblib/.pkl if trusted)", type(model).__name__)
    path = Path(model).expanduser().resolve()
    if not path.is_file():
        raise InvalidModelError(f"The model file {str(path)!r} does not exist. Check the path.")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidModelError(f"Could not read the model file {str(path)!r}: {exc.strerror or exc}.") from None
    return path, fingerprint(data), load_model(data, trusted=trusted, filename=path.name)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class _Tracker:
    """Counts finished rows and chunks and reports progress (thread-safe: joblib reads
    the input, and so counts kept parts, in its dispatch thread)."""

    def __init__(self, total: int | None, progress):
        import threading

        self.total = total
        self.done_rows = 0
        self.computed = 0
        self.chunks_done = 0
        self.skipped = 0
        self.progress = progress
        self.lock = threading.Lock()
        self.t0 = time.perf_counter()

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
        self.report()

    def report(self) -> None:
        if self.progress is None:
            return
        with self.lock:
            el = max(time.perf_counter() - self.t0, 1e-9)
            rate = self.computed / el
            eta = None
            if self.total is not None and rate > 0:
                eta = max(0.0, (self.total - self.done_rows) / rate)
            event = BatchProgress(self.done_rows, self.total, self.computed, el, rate, eta,
                                  self.chunks_done, self.skipped)
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

    def tasks():
        for index, start, table in _iter_tables(src, cols, chunk_rows):
            state["n_rows"] = start + table.num_rows
            state["n_chunks"] = index + 1
            if done.get(index) == table.num_rows:  # finished by an earlier run
                tracker.skip(table.num_rows)
                continue
            X, y = _to_frame(table, cols, start)
            yield spec, index, start, X, y

    jobs = warmup.jobs
    if jobs == 1:
        # in this process: no pickling, and the model already loaded here is used
        _WORKER_CACHE.clear()
        _WORKER_CACHE[spec.run_id] = prime()
        for args in tasks():
            tracker.add(_run_chunk(*args))
    else:
        from joblib import Parallel, delayed

        # batch_size=1: joblib would otherwise group quick tasks and read many chunks
        # ahead; pre_dispatch bounds the chunks in flight (results are tiny: the
        # workers write the parts themselves)
        par = Parallel(n_jobs=jobs, return_as="generator_unordered", batch_size=1,
                       pre_dispatch="2*n_jobs")
        for res in par(delayed(_run_chunk)(*args) for args in tasks()):
            tracker.add(res)
    if state["n_rows"] == 0:
        raise InvalidDataError("The data file has a header but no data rows. Use a file with at least one row.")
    # parts past the end cannot belong to this data; never leave them behind
    for p in out.iterdir():
        m = _PART_RE.match(p.name)
        if m and int(m.group(1)) >= state["n_chunks"]:
            p.unlink()
    tracker.total = state["n_rows"]
    tracker.report()
    return _RunStats(state["n_rows"], state["n_chunks"], state["n_chunks"] - tracker.skipped,
                     tracker.skipped, tracker.computed, time.perf_counter() - tracker.t0)


@contextlib.contextmanager
def _cleanup_on_error(out: Path, created: bool):
    """Bad input found mid-run: leave no partial output from a fresh run; keep resumable parts otherwise."""
    try:
        yield
    except ExplainerError:
        if created:
            _clear_ours(out, remove_dir=True)
        else:
            _remove_tmp(out)
        raise
    except BaseException:  # interrupted: the finished parts stay for the next run
        _remove_tmp(out)
        raise


# ================================================================ SHAP on a file
def explain_file(
    model: str | os.PathLike,
    data: str | os.PathLike,
    out: str | os.PathLike,
    *,
    method: str = "auto",
    mode: str = "path_dependent",
    background: int = 100,
    missing: Sequence[str] | None = None,
    nan_is_missing: bool = True,
    output: str = "auto",
    class_index: int | None = None,
    n_samples: int = 2048,
    random_state: int = 0,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    n_jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    connect_timeout: float = 10.0,
    overwrite: bool = False,
    trusted: bool = False,
    progress: ProgressCallback | None = None,
) -> BatchReport:
    """Explain every row of a data file with SHAP, writing Parquet parts to ``out``.

    Parameters
    ----------
    model : str or Path
        The saved model file (``.skops``; ``.joblib`` / ``.pkl`` only with ``trusted``).
        Workers load it from this path, so with a remote Dask cluster it must be
        on storage every worker sees.
    data : str or Path
        A CSV file, a Parquet file or a directory of Parquet parts (read in
        file-name order). Columns the model does not use are dropped.
    out : str or Path
        Output directory: ``part-NNNNNN.parquet`` files, ``_manifest.json`` and
        ``_background.parquet``. Created if missing.
    method : {"auto", "tree", "kernel", "exact", "linear"}, default="auto"
        As :func:`explainers.shap.explain`; resolved once, recorded in the manifest.
    mode : {"path_dependent", "interventional"}, default="path_dependent"
        TreeShap's value function (used when the method is ``"tree"``).
    background : int, default=100
        Rows of background, a seeded sample of the complete rows of the whole
        file (not needed, so not drawn, for path-dependent TreeShap).
    missing : sequence of str, default=None
        Features to mark missing in every row (attribution 0).
    nan_is_missing : bool, default=True
        Also treat NaN cells as missing.
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
        Parallel workers (-1: every core). With ``backend="dask"`` and no
        scheduler, the number of LocalCluster worker processes.
    backend : {"loky", "dask"}, default="loky"
    scheduler : str, default=None
        Address of a running dask.distributed scheduler (``tcp://host:8786``).
    connect_timeout : float, default=10.0
        Seconds to wait for the scheduler.
    overwrite : bool, default=False
        Replace the results in ``out`` when they come from another model, data
        or options (otherwise refused), or start a finished run over.
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
        For a bad model, data file, option, output directory or scheduler, with
        a message that says what to fix. A fresh run that fails leaves no files
        behind; a resumed one keeps its finished parts.

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
    chunk_rows, block_rows, n_jobs, random_state = _check_common(
        func, chunk_rows=chunk_rows, block_rows=block_rows, n_jobs=n_jobs, backend=backend,
        random_state=random_state, connect_timeout=connect_timeout)
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
    out = Path(out).expanduser().resolve()

    with _warmed(backend, n_jobs, scheduler, connect_timeout) as warmup:
        model_path, model_sha, est = _open_model(model, trusted, func)
        src = _open_source(data)
        cols = _resolve_columns(src, est, None, func)
        notices = list(cols.notices)

        # ---- probe: the first rows, to pick the method and fail early on bad input
        probe = None
        for _, _, frame, _ in _iter_frames(src, cols, min(block_rows, 64)):
            probe = frame.reset_index(drop=True)
            break
        if probe is None:
            raise InvalidDataError("The data file has a header but no data rows. Use a file with at least one row.")
        probe_bg = probe.dropna()
        options = {"output": output, "class_index": class_index, "feature_names": list(cols.features),
                   "n_samples": n_samples, "random_state": random_state, "mode": mode, "n_jobs": 1}
        from .shap.auto import choose_method

        if method == "auto":
            chosen, reason = choose_method(est, len(cols.features), background, output=output, n_samples=n_samples)
        else:
            chosen, reason = method, f"method={method!r} was requested"

        def probe_run(meth):
            bg = None if not _needs_background(meth, mode) else (probe_bg if len(probe_bg) else None)
            if bg is None and _needs_background(meth, mode):
                return None  # nothing complete to probe with; the sampled background will tell
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                e = _build_explainer(meth, est, bg, options)
                return _run_explainer(e, probe, list(missing) if missing else None, nan_is_missing, random_state)

        try:
            res = probe_run(chosen)
        except ExplainerError as exc:
            if method != "auto" or chosen != "tree":
                raise
            chosen2, reason2 = choose_method(est, len(cols.features), background, output=output,
                                             n_samples=n_samples, allow_tree=False)
            reason = f"TreeShap declined ({exc}); {reason2}"
            chosen = chosen2
            res = probe_run(chosen)
        if chosen != "tree" and mode != "path_dependent":
            notices.append(f"--mode {mode} applies to TreeShap only; the method is {chosen!r}.")
        needs_bg = _needs_background(chosen, mode)
        if not needs_bg and background != 100:
            notices.append("Path-dependent TreeShap needs no background; --background was ignored.")
        if res is not None:
            outputs, multi, output_kind = list(res.output_names), res.values.ndim == 3, res.output
        else:  # a model-agnostic method without a complete probe row: ask the adapter
            from .model import ModelAdapter
            from .shap._common import output_label

            adapter = ModelAdapter(est, feature_names=list(cols.features), output=output, class_index=class_index)
            outputs, multi, output_kind = list(adapter.output_names), adapter.n_outputs > 1, output_label(adapter)
        columns = _output_columns(cols.features, outputs, multi)

        data_sha, total_rows = _hash_source(src)
        opts = {"method": chosen, "method_requested": method, "mode": mode if chosen == "tree" else None,
                "background_rows": background if needs_bg else None, "missing": list(missing) if missing else None,
                "nan_is_missing": bool(nan_is_missing), "output": output, "class_index": class_index,
                "n_samples": n_samples if chosen == "kernel" else None, "random_state": random_state,
                "chunk_rows": chunk_rows, "block_rows": block_rows}
        identity = {"kind": "shap", "model": {"sha256": model_sha}, "data": {"sha256": data_sha}, "options": opts}
        run_id = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]

        created, resume = _prepare_out(out, identity, overwrite)
        if resume is not None and resume.get("status") == "complete":
            return BatchReport(out, "shap", int(resume["n_rows"]), int(resume["n_chunks"]), 0,
                               int(resume["n_chunks"]), time.perf_counter() - t0, 0.0, chosen, reason,
                               notices + ["The output was already complete; nothing was recomputed."])
        out.mkdir(parents=True, exist_ok=True)
        with _cleanup_on_error(out, created):
            _remove_tmp(out)
            bg_frame = None
            bg_info = None
            if needs_bg:
                bg_frame = _load_background_checked(out, resume) if resume is not None else None
                if bg_frame is None:
                    bg_frame, bg_pos = _sample_background(src, cols, background, random_state, chunk_rows)
                    import pyarrow as pa

                    bg_table = pa.Table.from_pandas(bg_frame.assign(_row=bg_pos), preserve_index=False)
                    _write_table_atomic(bg_table, out / BACKGROUND)
                bg_info = {"file": BACKGROUND, "rows": len(bg_frame),
                           "sha256": _file_sha(out / BACKGROUND)}
                if len(bg_frame) < background:
                    notices.append(f"Only {len(bg_frame)} complete rows could serve as background "
                                   f"(asked for {background}).")
            man = {
                "format": FORMAT, "version": FORMAT_VERSION, "kind": "shap", "run_id": run_id,
                "status": "running", "created": (resume or {}).get("created", _now()), "updated": _now(),
                "model": {"path": str(model_path), "sha256": model_sha, "trusted": bool(trusted)},
                "data": {"path": src.path, "sha256": data_sha, "format": src.kind,
                         "files": [Path(f).name for f in src.files]},
                "options": opts, "reason": reason, "features": list(cols.features), "outputs": outputs,
                "multi_output": multi, "columns": columns, "background": bg_info,
                "output_kind": output_kind, "text_columns": sorted(cols.text_ok & set(cols.features)),
                "notices": notices,
            }
            _write_manifest(out, man)
            spec = _Spec(kind="shap", run_id=run_id, out=str(out), model_path=str(model_path),
                         model_sha=model_sha, trusted=bool(trusted), block_rows=block_rows, method=chosen,
                         options=options, background=bg_frame, missing=missing,
                         nan_is_missing=bool(nan_is_missing), random_state=random_state, multi=multi,
                         columns=tuple(columns))
            def prime():  # the worker state of an in-process run, from the model loaded here
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return est, _build_explainer(chosen, est, bg_frame, options)

            st = _run(out, resume, spec, src, cols, chunk_rows, total_rows, progress, prime, warmup)
            man.update(status="complete", n_rows=st.n_rows, n_chunks=st.n_chunks, updated=_now(), finished=_now())
            _write_manifest(out, man)
        return BatchReport(out, "shap", st.n_rows, st.n_chunks, st.chunks_computed, st.chunks_skipped,
                           time.perf_counter() - t0, st.rows_computed / max(st.seconds, 1e-9), chosen,
                           reason, notices)


def _file_sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_HASH_BLOCK):
            h.update(block)
    return h.hexdigest()


def _load_background_checked(out: Path, man: dict) -> pd.DataFrame | None:
    info = (man or {}).get("background") or {}
    path = out / BACKGROUND
    if not info or not path.is_file() or _file_sha(path) != info.get("sha256"):
        return None
    return _read_background(path)


def _read_background(path: Path) -> pd.DataFrame:
    frame = pd.read_parquet(path)
    return frame.drop(columns=["_row"], errors="ignore")


# =========================================================== importance on a file
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
    scoring : {"accuracy", "r2", "neg_mean_squared_error", "neg_root_mean_squared_error", \
"neg_mean_absolute_error"}, default=None
        None uses the model's ``score`` (accuracy or R²).
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
    with _warmed(backend, n_jobs, scheduler, connect_timeout) as warmup:
        model_path, model_sha, est = _open_model(model, trusted, func)
        if scoring is None:
            from .importance import _default_scoring_name, _split_pipeline

            scoring = _default_scoring_name(_split_pipeline(est)[1])
            if scoring is None:
                raise param_error("scoring", func, f"one of {list(BATCH_SCORING)} (the model has a custom score)", None)
        if scoring not in BATCH_SCORING:
            raise param_error(
                "scoring", func,
                f"one of {list(BATCH_SCORING)}: scores that can be combined over chunks", scoring)
        from .model import detect_task

        task = detect_task(est)
        if (task == "regression") != (scoring != "accuracy"):
            raise param_error("scoring", func,
                              "'accuracy' for a classifier" if task != "regression" else "a regression metric for a regressor",
                              scoring)
        src = _open_source(data)
        cols = _resolve_columns(src, est, target, func)
        notices = list(cols.notices)
        # probe the first rows: columns, target labels and the model all work
        for _, _, frame, y in _iter_frames(src, cols, 64):
            from .importance import permutation_importance

            permutation_importance(est, frame.reset_index(drop=True), y.reset_index(drop=True),
                                   n_repeats=1, scoring=_CHUNK_METRIC[scoring], random_state=0)
            break
        data_sha, total_rows = _hash_source(src)
        opts = {"target": target, "scoring": scoring, "n_repeats": n_repeats, "random_state": random_state,
                "chunk_rows": chunk_rows}
        identity = {"kind": "importance", "model": {"sha256": model_sha}, "data": {"sha256": data_sha}, "options": opts}
        run_id = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]
        created, resume = _prepare_out(out, identity, overwrite)
        if resume is not None and resume.get("status") == "complete":
            return load_importance(out)
        out.mkdir(parents=True, exist_ok=True)
        with _cleanup_on_error(out, created):
            _remove_tmp(out)
            man = {
                "format": FORMAT, "version": FORMAT_VERSION, "kind": "importance", "run_id": run_id,
                "status": "running", "created": (resume or {}).get("created", _now()), "updated": _now(),
                "model": {"path": str(model_path), "sha256": model_sha, "trusted": bool(trusted)},
                "data": {"path": src.path, "sha256": data_sha, "format": src.kind,
                         "files": [Path(f).name for f in src.files]},
                "options": opts, "features": list(cols.features), "notices": notices,
            }
            _write_manifest(out, man)
            spec = _Spec(kind="importance", run_id=run_id, out=str(out), model_path=str(model_path),
                         model_sha=model_sha, trusted=bool(trusted), random_state=random_state,
                         scoring=scoring, n_repeats=n_repeats)
            st = _run(out, resume, spec, src, cols, chunk_rows, total_rows, progress, lambda: (est, None), warmup)
            man.update(status="complete", n_rows=st.n_rows, n_chunks=st.n_chunks, updated=_now(), finished=_now())
            result = _combine_importance(out, man)
            frame = result.to_frame()
            for r in range(result.raw.shape[1]):
                frame[f"repeat_{r}"] = result.raw[:, r]
            _atomic_write_bytes(out / IMPORTANCE_CSV, frame.to_csv().encode())
            _write_manifest(out, man)
        return result


def _combine_importance(out: Path, man: dict):
    """Combine the per-chunk scores, in chunk order (so every backend gives the same bits)."""
    from .importance import _result

    opts = man["options"]
    scoring = opts["scoring"]
    n_chunks = int(man["n_chunks"])
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
    n = np.array([p["n"] for p in parts], dtype=float)
    N = n.sum()
    base = np.array([p["baseline"] for p in parts])
    perm = np.array([p["permuted"] for p in parts])  # (chunks, p, r)
    base_mean = float((n * base).sum() / N)
    perm_mean = np.tensordot(n, perm, axes=(0, 0)) / N  # (p, r)
    if scoring in ("accuracy", "neg_mean_squared_error", "neg_mean_absolute_error"):
        b, s = base_mean, perm_mean
    elif scoring == "neg_root_mean_squared_error":
        b, s = -math.sqrt(-base_mean), -np.sqrt(-perm_mean)
    else:  # r2 from the pooled squared errors and the whole file's variance (Chan et al.)
        cnt, mean, m2 = 0.0, 0.0, 0.0
        for p in parts:
            nb, mb, m2b = float(p["n"]), float(p["y_mean"]), float(p["y_m2"])
            delta = mb - mean
            tot = cnt + nb
            m2 = m2 + m2b + delta * delta * cnt * nb / tot
            mean = mean + delta * nb / tot
            cnt = tot
        sst = m2
        if sst <= 0:
            raise InvalidDataError("The target is constant over the file, so R² is undefined; use scoring='neg_mean_squared_error'.")
        b, s = 1.0 - (-base_mean * N) / sst, 1.0 - (-perm_mean * N) / sst
    raw = b - s
    params = {"n_repeats": opts["n_repeats"], "scoring": scoring, "scoring_name": scoring,
              "random_state": opts["random_state"], "baseline_score": float(b), "n_rows": int(N),
              "chunk_rows": opts["chunk_rows"], "source": str(out), "shuffled_within": "chunks"}
    desc = (f"Permutation importance over {int(N):,} rows: how much {scoring} drops when a feature's "
            f"values are shuffled within chunks of {opts['chunk_rows']:,} rows "
            f"({opts['n_repeats']} shuffles per feature).")
    return _result(man["features"], raw, "permutation", params, desc)


def load_importance(path: str | os.PathLike):
    """Open a finished :func:`importance_file` run as an :class:`~explainers.importance.ImportanceResult`.

    Raises
    ------
    ExplainerError
        If ``path`` holds no finished importance run.
    """
    out = Path(path).expanduser().resolve()
    man = _finished_manifest(out, "importance", "batch-importance")
    return _combine_importance(out, man)


# ==================================================================== reading back
def _finished_manifest(out: Path, kind: str, command: str) -> dict:
    if out.is_file() and out.name == MANIFEST:
        out = out.parent
    if not out.is_dir():
        raise ExplainerError(f"{str(out)!r} is not a batch output directory. Give the --out directory of a batch run.")
    man = _read_manifest(out)
    if man is None:
        raise ExplainerError(
            f"{str(out)!r} has no {MANIFEST}, so it is not the output of a batch run. Give the --out "
            "directory of `python -m explainers batch`."
        )
    if man.get("kind") != kind:
        raise ExplainerError(f"{str(out)!r} holds a {man.get('kind')!r} run, not {kind!r}.")
    if man.get("status") != "complete":
        raise ExplainerError(
            f"The batch run in {str(out)!r} has not finished. Rerun the same `python -m explainers "
            f"{command}` command: it resumes where it stopped."
        )
    return man


def load_background(path: str | os.PathLike) -> pd.DataFrame | None:
    """The background rows a batch run used (None for path-dependent TreeShap)."""
    out = Path(path).expanduser().resolve()
    man = _read_manifest(out) if out.is_dir() else None
    if man is None or not man.get("background"):
        return None
    return _read_background(out / BACKGROUND)


def load_attributions(
    path: str | os.PathLike,
    *,
    sample: int | None = 2000,
    random_state: int = 0,
    with_data: bool = True,
):
    """Open a finished batch SHAP run as a :class:`~explainers.shap.ShapResult`.

    For the dashboard's global views (beeswarm, mean |SHAP|): a seeded uniform
    sample of the rows, read part by part, so a file of any size opens in
    bounded memory.

    Parameters
    ----------
    path : str or Path
        The ``--out`` directory of ``python -m explainers batch`` (or its manifest).
    sample : int or None, default=2000
        Rows to draw (all rows when None or when the file has fewer).
    random_state : int, default=0
        Seed of the sample.
    with_data : bool, default=True
        Read the sampled rows' feature values from the original data file
        (recorded in the manifest) for colouring; when it is gone or was
        changed, ``data`` holds NaN and ``params["data_source"]`` says why.

    Returns
    -------
    ShapResult
        Rows in file order; ``params["rows"]`` holds their positions in the
        file, ``params["n_rows_total"]`` the size of the file.

    Raises
    ------
    ExplainerError
        If ``path`` holds no finished SHAP run.

    Examples
    --------
    >>> res = load_attributions("shap_out", sample=1000)  # doctest: +SKIP
    >>> res.mean_abs()  # doctest: +SKIP
    """
    import pyarrow.parquet as pq

    from .shap.result import ShapResult

    func = "load_attributions"
    if sample is not None:
        sample = _check_int(sample, "sample", func, 1)
    random_state = _check_int(random_state, "random_state", func, 0)
    out = Path(path).expanduser().resolve()
    if out.is_file() and out.name == MANIFEST:
        out = out.parent
    man = _finished_manifest(out, "shap", "batch")
    n = int(man["n_rows"])
    chunk = int(man["options"]["chunk_rows"])
    if sample is None or sample >= n:
        rows = np.arange(n, dtype=np.int64)
    else:
        rng = np.random.default_rng(random_state)
        rows = np.sort(rng.choice(n, size=sample, replace=False)).astype(np.int64)
    columns = man["columns"]
    pieces = []
    for i in range(int(man["n_chunks"])):
        lo, hi = np.searchsorted(rows, [i * chunk, (i + 1) * chunk])
        if hi <= lo:
            continue
        part = out / _part_name(i, "shap")
        try:
            table = pq.read_table(part, columns=columns)
        except Exception as exc:
            raise ExplainerError(
                f"The part {part.name!r} of {str(out)!r} is missing or unreadable ({type(exc).__name__}). "
                "Rerun the batch command with --overwrite to recompute the output."
            ) from None
        pieces.append(table.take(rows[lo:hi] - i * chunk).to_pandas())
    frame = pd.concat(pieces, ignore_index=True)
    features = list(man["features"])
    outputs = list(man["outputs"])
    multi = bool(man["multi_output"])
    m, p, k = len(frame), len(features), len(outputs)
    shap_cols = columns[1 : 1 + p * k] if multi else columns[1 : 1 + p]
    values = frame[shap_cols].to_numpy(dtype=float)
    if multi:
        values = values.reshape(m, p, k)
        base = frame[columns[1 + p * k : 1 + p * k + k]].to_numpy(dtype=float)
        pred = frame[columns[1 + p * k + k :]].to_numpy(dtype=float)
    else:
        base = frame["base_value"].to_numpy(dtype=float)
        pred = frame["prediction"].to_numpy(dtype=float)
    opts = man["options"]
    data_note = "not read (with_data=False)"
    X = pd.DataFrame(np.nan, index=range(m), columns=features)
    if with_data:
        X, data_note = _data_for_rows(man, rows)
    mask = np.zeros((m, p), dtype=bool)
    if opts.get("missing"):
        mask[:, [features.index(f) for f in opts["missing"]]] = True
    if opts.get("nan_is_missing") and data_note == "data file":
        mask |= X.isna().to_numpy()
    params = {"source": str(out), "rows": frame["row"].to_numpy(), "n_rows_total": n,
              "sample": None if len(rows) == n else int(len(rows)), "random_state": random_state,
              "data_source": data_note, "reason": man.get("reason", ""), **{k2: v for k2, v in opts.items()}}
    return ShapResult(
        values=values, base_values=base, predictions=pred, feature_names=features, missing=mask,
        method=opts["method"], output=man.get("output_kind") or "raw", output_names=outputs,
        data=X, params=params,
    )


def _data_for_rows(man: dict, rows: np.ndarray) -> tuple[pd.DataFrame, str]:
    """Feature values of the given rows from the run's data file, if it is unchanged."""
    features = list(man["features"])
    blank = pd.DataFrame(np.nan, index=range(len(rows)), columns=features)
    info = man["data"]
    try:
        src = _open_source(info["path"])
    except ExplainerError:
        return blank, f"unavailable: {info['path']} is gone"
    # a cheap staleness check (a full hash would read the whole file again)
    if [Path(f).name for f in src.files] != info.get("files"):
        return blank, f"unavailable: the files in {info['path']} changed"
    if src.kind == "parquet" and src.n_rows != man["n_rows"]:
        return blank, f"unavailable: {info['path']} no longer has {man['n_rows']} rows"
    try:
        cols = _Columns(features, frozenset(man.get("text_columns") or ()), None, None, None, [])
        X = _read_rows(src, cols, rows)
    except ExplainerError as exc:
        return blank, f"unavailable: {exc}"
    if len(X) != len(rows):
        return blank, f"unavailable: {info['path']} has fewer rows than the run"
    return X, "data file"
