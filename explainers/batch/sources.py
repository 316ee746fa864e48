"""The inputs of a batch run, read without ever holding the whole table.

The model file (checked and fingerprinted); the data file, a CSV or Parquet file
or a directory of Parquet parts: opened, hashed, matched to the model's columns,
streamed in chunks of exactly ``chunk_rows`` rows, read at given row positions;
and the background, a seeded sample of the whole file drawn in one pass.
"""
from __future__ import annotations

import csv
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from ..errors import InvalidDataError, InvalidModelError, param_error
from ..io import fingerprint, load_model
from ..io._files import guess_delimiter
from ..io.data import _coerce_numeric, categorical_features, expected_features, match_columns, parquet_schema
from .options import DEFAULT_CHUNK_ROWS

_HASH_BLOCK = 1 << 22
_CSV_BLOCK = 1 << 22


# ======================================================================== model
def require_model_file(model, func: str) -> Path:
    """The model's path, checked to be a file: before any worker starts (a run that fails on
    its model path must not leave starting workers behind)."""
    if not isinstance(model, (str, os.PathLike)):
        raise param_error("model", func, "the path of a saved model file (.skops, or .joblib/.pkl if trusted)", type(model).__name__)
    path = Path(model).expanduser().resolve()
    if not path.is_file():
        raise InvalidModelError(f"The model file {str(path)!r} does not exist. Check the path.")
    return path


def _open_model(model, trusted: bool, func: str) -> tuple[Path, str, object]:
    path = require_model_file(model, func)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidModelError(f"Could not read the model file {str(path)!r}: {exc.strerror or exc}.") from None
    return path, fingerprint(data), load_model(data, trusted=trusted, filename=path.name)


# ========================================================================= data
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
    sep = guess_delimiter(header_line)
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



def _file_sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_HASH_BLOCK):
            h.update(block)
    return h.hexdigest()


# ====================================================================== columns
@dataclass(frozen=True)
class _Columns:
    """Which file columns feed the model, and how to read them."""

    features: list
    text_ok: frozenset
    target: str | None
    target_type: str | None  # how CSV reads it: "float" | "string" | None
    target_cast: str | None  # numpy dtype of the classifier's labels, when numeric
    notices: list
    #: model column -> the file's column, where they differ only by spaces read as "_" (LightGBM)
    file_names: dict = field(default_factory=dict)

    def in_file(self, name: str) -> str:
        """The file's name of a model column."""
        return self.file_names.get(name, name)


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
    from ..model import loose_renames

    renames = loose_renames(present, names)  # file column -> model name
    if renames:
        present = [renames.get(c, c) for c in present]
        notices.append("Columns matched to the model's names with spaces read as underscores (as LightGBM writes "
                       "them): " + ", ".join(f"{a!r} as {b!r}" for a, b in list(renames.items())[:10]) + ".")
    match_columns(present, names, notices)
    return _Columns(list(names), frozenset(categorical_features(model)), target, target_type, target_cast, notices,
                    {model_name: file_name for file_name, model_name in renames.items()})



# ====================================================================== reading
def _iter_arrow(src: _Source, cols: _Columns, batch_rows: int):
    """Yield pyarrow RecordBatches of the needed columns, in file order."""
    import pyarrow as pa

    needed = [cols.in_file(c) for c in cols.features] + ([cols.target] if cols.target else [])
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

    types = {cols.in_file(c): (pa.string() if c in cols.text_ok else pa.float64()) for c in cols.features}
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
    if cols.file_names:
        frame = frame.rename(columns={f: m for m, f in cols.file_names.items()})
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
            "Fill the missing values, or use method='tree' (path-dependent), which needs no background."
        )
    order = np.argsort(best_pos, kind="stable")
    return best_rows.iloc[order].reset_index(drop=True), best_pos[order]
