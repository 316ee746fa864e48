"""Loading data files (CSV, Parquet) checked against a model, within the size limits."""
from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from .. import limits
from ..errors import InvalidDataError
from ..model import is_sklearn
from ._files import _read_input, guess_delimiter

DATA_SUFFIXES = (".csv", ".parquet", ".pq")


@dataclass(frozen=True)
class Dataset:
    """A data file checked against a model.

    Attributes
    ----------
    X : DataFrame of shape (n_samples, n_features)
        The model's columns, in the model's order.
    y : Series or None
        The target column, when one was named.
    notices : list of str
        What was dropped, reordered or converted on the way.
    fingerprint : str
        sha256 of the file bytes (and of the chosen target).
    """

    X: pd.DataFrame
    y: pd.Series | None
    notices: list = field(default_factory=list)
    fingerprint: str = ""


def expected_features(model) -> list[str] | None:
    """The column names the model was fitted on, or None when it did not record them."""
    names = getattr(model, "feature_names_in_", None)
    return None if names is None else [str(c) for c in names]


def category_order(model, columns: Sequence[str]) -> dict[str, list]:
    """The categories the model knows for its categorical columns, in the model's order.

    From the flattened trees where the model is a tree model (a boosting library's
    file, HistGradientBoosting's categorical features, a pipeline folded into its
    trees), else from the one-hot / ordinal encoders of a pipeline. Pages list a
    column's categories in this order (PDP bars, What-if pickers), so they do not
    depend on the order of the rows or on the file format. Empty when unknown.
    """
    columns = [str(c) for c in columns]
    out: dict[str, list] = {}
    try:
        from ..trees import flatten_model, is_tree_model

        if is_tree_model(model):
            ens = flatten_model(model)
            if len(ens.categories) == len(columns):
                return {c: list(cats) for c, cats in zip(columns, ens.categories) if cats}
    except Exception:  # noqa: BLE001 - fall back on the encoders
        pass
    def encoder_of(trans):
        if is_sklearn(trans, "Pipeline"):
            for _, step in trans.steps:
                if hasattr(step, "categories_"):
                    return step
            return None
        return trans if hasattr(trans, "categories_") else None

    def visit(est):
        if is_sklearn(est, "Pipeline"):
            for _, step in est.steps:
                visit(step)
        elif is_sklearn(est, "ColumnTransformer"):
            for _, trans, cols in getattr(est, "transformers_", []):
                enc = encoder_of(trans) if not isinstance(trans, str) else None
                if enc is None:
                    continue
                cols = [cols] if isinstance(cols, (str, int, np.integer)) else list(np.atleast_1d(cols))
                names_in = getattr(est, "feature_names_in_", None)
                for c, cats in zip(cols, enc.categories_):
                    name = str(names_in[c]) if isinstance(c, (int, np.integer)) and names_in is not None else str(c)
                    if name in columns:
                        out[name] = [v for v in list(cats) if not (isinstance(v, float) and np.isnan(v))]

    visit(model)
    return out


def categorical_features(model) -> set[str]:
    """The data's columns where the model accepts text: the columns it encodes itself.

    Asks the model rather than guessing from the data. Looks through
    a :class:`~sklearn.compose.TransformedTargetRegressor` (at its fitted
    ``regressor_``), Pipelines (nested too: the first step sees the data's
    columns; a SimpleImputer before an encoder keeps them), ColumnTransformers
    (with the column lists of the fitted ``transformers_``, so a
    ``make_column_selector`` counts by the columns it picked when fitted),
    encoders and vectorizers (OneHot, Ordinal, Target, ...), HistGradientBoosting's
    categorical features and the boosting libraries' categorical columns.
    """
    found: set[str] = set()

    def own_names(est, names):
        fitted = getattr(est, "feature_names_in_", None)
        if fitted is not None:
            return [str(c) for c in fitted]
        return None if names is None else list(names)

    def visit(est, names):
        """Add the columns (of ``names``, the columns ``est`` receives) where ``est`` takes text."""
        if is_sklearn(est, "TransformedTargetRegressor"):
            visit(getattr(est, "regressor_", est.regressor), own_names(est, names))
        elif is_sklearn(est, "Pipeline"):
            cur = own_names(est, names)
            for _, step in est.steps:
                if step is None or (isinstance(step, str) and step == "passthrough"):
                    continue
                visit(step, cur)
                # an imputer keeps each column in its place (text stays text with
                # strategy "most_frequent" / "constant"); any other step changes the columns
                if not is_sklearn(step, "SimpleImputer"):
                    break
        elif is_sklearn(est, "ColumnTransformer"):
            cur = own_names(est, names)
            for _, trans, cols in getattr(est, "transformers_", est.transformers):
                if isinstance(trans, str):  # "drop" / "passthrough": the final model gets the column
                    continue
                sub = _column_names(cols, cur)
                if sub:
                    visit(trans, sub)
        elif type(est).__name__.endswith(("Encoder", "Vectorizer")):
            cols = own_names(est, names)
            if cols is not None:
                found.update(cols)
        elif hasattr(est, "ensemble") and hasattr(est, "library"):  # a boosting library's file
            cols = own_names(est, names)
            for j, cats in enumerate(est.ensemble.categories):
                if cats is not None and cols is not None and j < len(cols):
                    found.add(str(cols[j]))
        elif type(est).__name__.startswith("HistGradientBoosting"):
            cats = getattr(est, "is_categorical_", None)
            cols = own_names(est, names)
            if cats is not None and cols is not None:
                found.update(str(n) for n, c in zip(cols, cats) if c)

    visit(model, None)
    return found


def _column_names(cols, names) -> list[str]:
    """A ColumnTransformer's column spec as column names (``names``: the columns it receives).

    The fitted ``transformers_`` hold names, positions, a boolean mask or a slice;
    a callable (a ``make_column_selector`` of an unfitted transformer) says nothing
    until fitted, so it gives no columns.
    """
    if callable(cols) or cols is None:
        return []
    if isinstance(cols, slice):
        by_label = isinstance(cols.start, str) or isinstance(cols.stop, str)
        return [] if names is None or by_label else list(names[cols])
    if isinstance(cols, (str, int, np.integer)):
        cols = [cols]
    arr = np.asarray(list(cols) if not isinstance(cols, np.ndarray) else cols)
    if arr.size == 0:
        return []
    if arr.dtype == bool:
        return [] if names is None else [names[i] for i in np.flatnonzero(arr) if i < len(names)]
    if np.issubdtype(arr.dtype, np.integer):
        return [] if names is None else [names[i] for i in arr.tolist() if -len(names) <= i < len(names)]
    return [str(c) for c in arr.tolist()]


def parquet_schema(source, name: str | None = None):
    """Open a Parquet file's metadata; return (ParquetFile, column names), the names unique.

    The names are checked before any data is read: pyarrow itself fails on
    duplicate names with a message about field references, not about the file.
    ``name`` labels the file in the messages.
    """
    import pyarrow.parquet as pq

    label = f" {name!r}" if name else ""
    try:
        pfile = pq.ParquetFile(source)
        names = [str(c) for c in pfile.schema_arrow.names]
    except Exception as exc:
        raise InvalidDataError(
            f"Could not read the Parquet file{label} ({type(exc).__name__}: {exc}). Check that it is "
            "a complete Parquet file, or export the data as CSV."
        ) from None
    seen: set = set()
    dups = sorted({c for c in names if c in seen or seen.add(c)})
    if dups:
        raise InvalidDataError(
            f"{repr(name) if name else 'The file'} has duplicate column names: {', '.join(dups)}. "
            "Rename them so each column is unique."
        )
    return pfile, names


def _check_data_name(data: bytes, name: str) -> bool:
    """Refuse an empty file or a name that is not CSV / Parquet; True for Parquet."""
    if not data or not data.strip():
        raise InvalidDataError("The data file is empty. Upload a CSV or Parquet file with a header row and data.")
    is_parquet = name.endswith((".parquet", ".pq")) or data[:4] == b"PAR1"
    if not is_parquet and name and not name.endswith(".csv") and not name.endswith(".txt"):
        raise InvalidDataError(
            f"{Path(name).name!r} is not a data file this tool reads: use CSV (.csv) or Parquet (.parquet)."
        )
    return is_parquet


def _csv_text(data: bytes) -> str:
    """Decode CSV bytes ourselves, so a wrong encoding is a clear message, not garbage."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise InvalidDataError(f"The CSV file is not valid UTF-16 ({exc}). Save it as UTF-8.") from None
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InvalidDataError(
                f"The CSV file is not UTF-8 text: byte 0x{data[exc.start]:02x} at position "
                f"{exc.start} cannot be decoded. Save the file as 'CSV UTF-8' and upload it again."
            ) from None
    if "\x00" in text:
        raise InvalidDataError(
            "The file contains NUL bytes, so it is not a text CSV. Upload a CSV or Parquet file."
        )
    return text


def _csv_header(data: bytes) -> tuple[str, list[str]]:
    """(separator, column names) from the header line of CSV bytes, checked."""
    header_line = _csv_head(data).decode("utf-8-sig", errors="replace").strip()
    sep = guess_delimiter(header_line)
    try:
        header = next(csv.reader([header_line], delimiter=sep)) if header_line else []
    except csv.Error:
        header = header_line.split(sep)
    header = [h.strip() for h in header]
    if not header or all(h == "" for h in header):
        raise InvalidDataError("The CSV file has no header row. Put the column names on the first line.")
    _check_columns(header, "The file")
    return sep, header


def _read_table(data: bytes, name: str) -> pd.DataFrame:
    if _check_data_name(data, name):
        return _read_parquet(data)
    if len(data) > limits.limit("data_bytes"):
        raise InvalidDataError(
            f"The CSV file is {limits.fmt('data_bytes', len(data))}, {limits.over('data_bytes')}. "
            "Upload a sample of the rows."
        )
    text = _csv_text(data)
    sep, _ = _csv_header(data)
    max_rows = limits.limit("data_rows")
    try:
        # one row past the limit tells a file over it without parsing the rest
        frame = pd.read_csv(io.StringIO(text), sep=sep, skipinitialspace=True, nrows=max_rows + 1)
    except Exception as exc:
        raise InvalidDataError(
            f"Could not parse the CSV file ({type(exc).__name__}: {exc}). Check that every row "
            "has the same number of fields as the header."
        ) from None
    if len(frame) > max_rows:
        raise InvalidDataError(
            f"The CSV file has more than {max_rows:,} data rows, {limits.over('data_rows')}. "
            "Upload a sample of the rows."
        )
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def _check_columns(names: Sequence[str], label: str) -> None:
    """Refuse duplicate column names and more columns than the features limit."""
    if len(names) > limits.limit("features"):
        raise InvalidDataError(
            f"{label} has {len(names):,} columns, {limits.over('features')}."
        )
    seen: set = set()
    dups = sorted({c for c in names if c in seen or seen.add(c)})
    if dups:
        raise InvalidDataError(
            f"{label} has duplicate column names: {', '.join(dups)}. Rename them so each column is unique."
        )


def check_parquet_limits(pfile, name: str | None = None) -> None:
    """Refuse a Parquet file whose metadata announces more rows, bytes or columns than the limits.

    Read from the footer only: a small file can decompress to tens of millions
    of rows. ``name`` labels the file in the messages.
    """
    label = repr(name) if name else "The Parquet file"
    meta = pfile.metadata
    if meta.num_rows > limits.limit("data_rows"):
        raise InvalidDataError(
            f"{label} has {meta.num_rows:,} rows, {limits.over('data_rows')}. Upload a sample of the rows."
        )
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if size > limits.limit("data_bytes"):
        raise InvalidDataError(
            f"{label} unpacks to {limits.fmt('data_bytes', size)}, {limits.over('data_bytes')}. "
            "Upload a sample of the rows."
        )
    if meta.num_columns > limits.limit("features"):
        raise InvalidDataError(f"{label} has {meta.num_columns:,} columns, {limits.over('features')}.")


def _read_parquet(data: bytes) -> pd.DataFrame:
    """Read a Parquet file within the data limits.

    Text columns are read as dictionaries (each distinct value once) and their
    unpacked size is summed from the dictionary before any value is repeated:
    a few megabytes of Parquet can hold one long string repeated on every row.
    Within the limit they are cast back, so the frame is what pyarrow gives.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    pfile, _ = parquet_schema(io.BytesIO(data))
    check_parquet_limits(pfile)
    text_types = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
    texts = [f.name for f in pfile.schema_arrow if any(t(f.type) for t in text_types)]
    try:
        table = pq.ParquetFile(io.BytesIO(data), read_dictionary=texts).read() if texts else pfile.read()
        size = table.nbytes
        for column in table.columns:  # text read as dictionaries, and the file's own dictionaries
            if not (pa.types.is_dictionary(column.type)
                    and any(t(column.type.value_type) for t in text_types)):
                continue
            for chunk in column.chunks:
                lengths = pc.binary_length(chunk.dictionary).to_numpy(zero_copy_only=False)
                codes = pc.fill_null(chunk.indices, 0).to_numpy(zero_copy_only=False)
                if len(lengths):
                    size += int(lengths[codes].sum(dtype=np.int64))
        if size > limits.limit("data_bytes"):
            raise InvalidDataError(
                f"The Parquet file unpacks to {limits.fmt('data_bytes', size)}, {limits.over('data_bytes')}. "
                "Upload a sample of the rows."
            )
        if texts:  # within the limit: back to the file's own types, as pyarrow reads them
            table = table.cast(pfile.schema_arrow)
        # each column its own block (no consolidating copy of the whole table), the Arrow buffers
        # released as they are converted: a 1M x 30 table loaded in half the memory
        frame = table.to_pandas(split_blocks=True, self_destruct=True)
        del table
    except InvalidDataError:
        raise
    except Exception as exc:
        raise InvalidDataError(
            f"Could not read the Parquet file ({type(exc).__name__}: {exc}). Check that it is "
            "a complete Parquet file, or export the data as CSV."
        ) from None
    return frame


def peek_columns(path_or_bytes, filename: str | None = None) -> list[str]:
    """Column names of a CSV or Parquet file (to offer a target column before loading).

    Reads only what names the columns: a Parquet file's footer (with its row and
    size limits checked there), or a CSV's header line however long (up to
    GLASSBOX_MAX_HEADER_BYTES), never the rows.

    Raises :class:`InvalidDataError` for the same bad files as :func:`load_data`.
    """
    data, name = _read_input(path_or_bytes, filename, "data")
    if name.endswith((".parquet", ".pq")) or data[:4] == b"PAR1":
        _check_data_name(data, name)
        # the footer only: names, and the limits load_data would refuse
        pfile, names = parquet_schema(io.BytesIO(data))
        check_parquet_limits(pfile)
        try:  # a stored pandas index is not a column of the loaded frame
            index = (pfile.schema_arrow.pandas_metadata or {}).get("index_columns", [])
        except Exception:  # noqa: BLE001 - malformed pandas metadata: show every column
            index = []
        names = [c for c in names if c not in {i for i in index if isinstance(i, str)}]
        if not names:
            raise InvalidDataError("The data file has no columns. Upload a table with a header row.")
        return names
    _check_data_name(data, name)
    head = _csv_head(data)
    _csv_text(head)
    _, header = _csv_header(head)
    # the names pandas gives the columns (load_data's), without parsing any row
    return [h if h else f"Unnamed: {i}" for i, h in enumerate(header)]


def _csv_head(data: bytes) -> bytes:
    """The bytes of a CSV up to the end of its header line, however long that line is.

    The header is the first non-blank line; a line break inside double quotes
    does not end it. Reads at most GLASSBOX_MAX_HEADER_BYTES past the blank
    lines. A UTF-16 file's header comes back as UTF-8.
    """
    cap = limits.limit("header_bytes")
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        head = data[: 4 * cap + 2]
        text = head[: len(head) // 2 * 2].decode("utf-16", errors="ignore").encode("utf-8")
        return text[:_header_end(text, cap, complete=len(head) == len(data))]
    return data[:_header_end(data, cap)]


def _header_end(data: bytes, cap: int, complete: bool = True) -> int:
    """Offset just past the header line's line break (or the end of ``data``)."""
    start = 0
    n = len(data)
    while start < n and data[start:start + 1] in (b"\n", b"\r", b" ", b"\t"):
        start += 1
    window = np.frombuffer(data, dtype=np.uint8, count=min(n, start + cap + 1) - start, offset=start)
    newlines = np.flatnonzero((window == 10) | (window == 13))
    if len(newlines):
        # a newline ends the header when an even number of quotes precede it
        quotes = np.cumsum(window == 34)
        closed = newlines[(quotes[newlines] % 2) == 0]
        if len(closed):
            return start + int(closed[0]) + 1
    if n - start <= cap and complete:
        return n
    raise InvalidDataError(
        f"The CSV header line is longer than {limits.fmt('header_bytes', cap)}, "
        f"{limits.over('header_bytes')}. Check that the file is a CSV with one header line."
    )


def load_data(
    path_or_bytes,
    model=None,
    target: str | None = None,
    filename: str | None = None,
    *,
    feature_names: Sequence[str] | None = None,
) -> Dataset:
    """Read a CSV or Parquet file and check it against a model.

    Parameters
    ----------
    path_or_bytes : str, Path, bytes or file object
    model : fitted estimator, default=None
        When given, the data must hold its columns: missing ones are an error
        (named), extra ones are dropped with a notice, columns are put in the
        model's order, and text in a column the model reads as a number is an
        error that names the column, the row and the value.
    target : str, default=None
        Name of the target column to split off as ``y``.
    filename : str, default=None
        Gives the format (by its suffix) when bytes are passed.
    feature_names : sequence of str, default=None
        The model's columns when the model did not record them.

    Returns
    -------
    Dataset

    Raises
    ------
    InvalidDataError
        With a message that says what is wrong and how to fix it, or which limit
        of :mod:`explainers.limits` the file exceeds (rows, unpacked bytes,
        columns, header line) and the environment variable that raises it.
    """
    data, name = _read_input(path_or_bytes, filename, "data")
    frame = _read_table(data, name)
    digest = hashlib.sha256(data)  # the bytes and the target name, hashed without joining them in a copy
    digest.update(b"\x00target=" + str(target).encode())
    del data  # the file's bytes are not needed past here: a large file's memory goes back
    return _dataset(frame, model, target, feature_names, digest.hexdigest())


def refit_data(plain: Dataset, model, target: str | None, *, feature_names: Sequence[str] | None = None) -> Dataset:
    """What :func:`load_data` gives for ``model``, from what it gave for the same file and
    target with no model (``plain``): the file is not read again (a model whose classes are
    named from its target column needs the column first; a large file was read twice)."""
    frame = plain.X.copy(deep=False)
    if target is not None and plain.y is not None:
        frame[str(target)] = plain.y.to_numpy()
    return _dataset(frame, model, target, feature_names, plain.fingerprint)


def _dataset(frame: pd.DataFrame, model, target, feature_names, key: str) -> Dataset:
    """The Dataset of a table read from a file: the target split off, checked against the model."""
    notices: list[str] = []
    _check_not_empty(frame)
    names = _model_names(model, feature_names)
    y = None
    if target is not None:
        target = str(target)
        y = _pop_target(frame, target, names, notices)
    n_in = getattr(model, "n_features_in_", None) if model is not None else None
    if names is None and n_in is not None:
        names = _file_order_names(frame, int(n_in), notices)
    if names is not None:
        frame = _in_model_order(frame, names, notices)
    if model is not None:
        frame = _coerce_numeric(frame, categorical_features(model), notices)
        _code_notices(frame, model, notices)
    if target is not None and y is not None and model is not None:
        _check_target(y, model)
    return Dataset(X=_range_indexed(frame), y=None if y is None else _range_indexed(y), notices=notices,
                   fingerprint=key)


def _range_indexed(obj):
    """``obj`` indexed 0 .. n-1: as it is where it already is (reset_index would copy every column)."""
    if isinstance(obj.index, pd.RangeIndex) and obj.index.start == 0 and obj.index.step == 1:
        return obj
    return obj.reset_index(drop=True)


def _check_not_empty(frame: pd.DataFrame) -> None:
    """Refuse a table with no columns or no data rows."""
    if frame.shape[1] == 0:
        raise InvalidDataError("The data file has no columns. Upload a table with a header row.")
    if len(frame) == 0:
        raise InvalidDataError("The data file has a header but no data rows. Upload a file with at least one row.")


def _model_names(model, feature_names) -> list[str] | None:
    """The model's input columns: those given, else those the model records (None if neither)."""
    names = list(feature_names) if feature_names is not None else None
    if names is None and model is not None:
        names = expected_features(model)
    return names


def _pop_target(frame: pd.DataFrame, target: str, names, notices: list[str]) -> pd.Series:
    """Take the target column out of ``frame`` (in place), its blank cells made empty."""
    if target not in frame.columns:
        raise InvalidDataError(
            f"The target column {target!r} is not in the file. Its columns are: "
            f"{', '.join(map(str, frame.columns[:20]))}{' …' if frame.shape[1] > 20 else ''}."
        )
    if names is not None and target in names:
        others = [str(c) for c in frame.columns if str(c) not in names]
        hint = (f" (the file's columns that are not features: {', '.join(map(repr, others[:10]))}"
                f"{' …' if len(others) > 10 else ''})" if others else
                " (every column of this file is a feature: the file may not hold the target at all, "
                "so choose no target column)")
        raise InvalidDataError(
            f"{target!r} is one of the model's input features, so it cannot be the target; choose "
            f"the column the model predicts{hint}."
        )
    y = frame.pop(target)
    empty = _empty_cells(y)
    n_empty = int(empty.sum())
    if n_empty:  # blank text too: every later step sees one kind of empty cell
        y = y.where(~empty)
    if n_empty == len(y):
        raise InvalidDataError(
            f"The target column {target!r} is empty in every row, so there is nothing to score the "
            "model against. Choose the column the model predicts, or no target column."
        )
    if n_empty:
        notices.append(
            f"The target {target!r} is empty in {n_empty:,} of {len(y):,} rows; those rows are left "
            "out of scores and holdout permutation importance."
        )
    return y


def _file_order_names(frame: pd.DataFrame, n_in: int, notices: list[str]) -> list[str]:
    """The file's columns as the names of a model fitted on ``n_in`` unnamed columns."""
    if frame.shape[1] != n_in:
        raise InvalidDataError(
            f"The model was fitted on {n_in} unnamed columns but the file has "
            f"{frame.shape[1]} (after removing the target). Upload data with exactly "
            f"the model's {n_in} feature columns, in training order."
        )
    notices.append(
        "The model did not record its column names; the file's columns are used in file order."
    )
    return [str(c) for c in frame.columns]


def _in_model_order(frame: pd.DataFrame, names, notices: list[str]) -> pd.DataFrame:
    """The model's columns of ``frame`` in its order, loosely named ones renamed (each step in a notice)."""
    from ..model import loose_renames

    renames = loose_renames(frame.columns, names)
    if renames:
        frame = frame.rename(columns=renames)
        notices.append("Columns matched to the model's names with spaces read as underscores (as LightGBM "
                       "writes them): " + ", ".join(f"{a!r} as {b!r}" for a, b in list(renames.items())[:10])
                       + ("…" if len(renames) > 10 else "") + ".")
    present = [str(c) for c in frame.columns]
    match_columns(present, names, notices)
    if [c for c in present if c in names] != list(names):
        notices.append("Columns were put in the model's order.")
    return frame[list(names)]


def _code_notices(frame: pd.DataFrame, model, notices: list[str]) -> None:
    """Say where a categorical column holds numbers that an XGBoost or LightGBM model reads as
    its category codes (not as labels): the data check names the assumption."""
    from ..trees.ensemble import codes_given
    from ..trees.native import NativeTreeModel

    if not isinstance(model, NativeTreeModel) or not model.ensemble.numeric_codes:
        return
    if frame.shape[1] != len(model.ensemble.categories):
        return
    label = {"xgboost": "XGBoost", "lightgbm": "LightGBM"}.get(model.library, model.library)
    for j, cats in enumerate(model.ensemble.categories):
        if cats and codes_given(frame.iloc[:, j], cats):
            shown = ", ".join(f"{i} = {c!r}" for i, c in enumerate(cats[:3])) + (", …" if len(cats) > 3 else "")
            notices.append(f"Column {str(frame.columns[j])!r} holds numbers: they are read as the model's category "
                           f"codes ({shown}), as {label} reads numbers in a categorical feature.")


def _empty_cells(s: pd.Series) -> np.ndarray:
    """Empty cells of a column: missing values and blank text."""
    empty = s.isna().to_numpy().copy()
    if not pd.api.types.is_numeric_dtype(s):
        empty |= s.astype(str).str.strip().eq("").to_numpy() & s.notna().to_numpy()
    return empty


def match_columns(present: Sequence[str], names: Sequence[str], notices: list[str]) -> None:
    """Check a file's columns against the model's: a missing one is an error, an extra one a notice."""
    missing = [c for c in names if c not in present]
    if missing:
        raise InvalidDataError(
            f"The data lacks {len(missing)} column(s) the model needs: "
            f"{', '.join(missing[:15])}{' …' if len(missing) > 15 else ''}. Add them to the file "
            "(or choose the data the model was trained on)."
        )
    extra = [c for c in present if c not in names]
    if extra:
        notices.append(
            f"Dropped {len(extra)} column(s) the model does not use: "
            f"{', '.join(extra[:15])}{' …' if len(extra) > 15 else ''}."
        )


def _coerce_numeric(frame: pd.DataFrame, text_ok: set[str], notices: list[str]) -> pd.DataFrame:
    """Make the columns the model reads as numbers numeric, or say which value is wrong."""
    out = {}
    notes_before = len(notices)  # each conversion adds a notice
    for col in frame.columns:
        s = frame[col]
        if col in text_ok or pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            out[col] = s
            continue
        if pd.api.types.is_bool_dtype(s):
            out[col] = s.astype(float)
            notices.append(f"Column {col!r}: true/false converted to 1/0.")
            continue
        conv = pd.to_numeric(s, errors="coerce")
        bad = conv.isna() & s.notna() & (s.astype(str).str.strip() != "")
        if bad.any():
            first = int(np.flatnonzero(bad.to_numpy())[0])
            examples = sorted({str(v) for v in s[bad].head(50)})[:3]
            raise InvalidDataError(
                f"Column {col!r} must be numeric but holds text, e.g. {examples[0]!r} in data row "
                f"{first + 1} ({int(bad.sum())} such value(s): {', '.join(map(repr, examples))}). "
                "Fix or remove those values, or leave the cells empty to mark them missing."
            )
        out[col] = conv.astype(float)
        notices.append(f"Column {col!r}: text converted to numbers.")
    # every column as it was: the frame itself (a new one would copy every column: 0.5 s and
    # 224 MB more for a million rows of 28 numbers)
    unchanged = len(notices) == notes_before and frame.columns.is_unique
    result = frame if unchanged else pd.DataFrame(out, index=frame.index)
    for col in result.columns:
        s = result[col]
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            vals = s.to_numpy(dtype=float, na_value=np.nan)
            if np.isinf(vals).any():
                raise InvalidDataError(
                    f"Column {col!r} holds infinite values in {int(np.isinf(vals).sum())} row(s). "
                    "Replace them with finite numbers or leave the cells empty."
                )
            n_nan = int(np.isnan(vals).sum())
        else:  # a text or category column: an empty cell is a missing value too
            n_nan = int(s.isna().sum() + (s.astype(str).str.strip() == "").where(s.notna(), False).sum())
        if n_nan:
            notices.append(f"Column {col!r} is empty in {n_nan} row(s); the model receives those cells empty "
                           "(SHAP and What-if can treat empty cells as missing features instead).")
    return result


def _check_target(y: pd.Series, model) -> None:
    from ..model import detect_task

    task = detect_task(model)
    if task == "regression":
        if not pd.api.types.is_numeric_dtype(y):
            conv = pd.to_numeric(y, errors="coerce")
            if (conv.isna() & y.notna()).any():
                raise InvalidDataError(
                    f"The target {y.name!r} holds text but the model is a regressor that predicts "
                    "numbers. Choose the numeric target column."
                )
        return
    classes = {str(c) for c in np.asarray(model.classes_).tolist()}
    seen = {str(v) for v in pd.unique(y.dropna())}
    # integer classes read back from CSV may come as floats ("1.0")
    seen_norm = {s[:-2] if s.endswith(".0") else s for s in seen}
    unknown = sorted(seen_norm - classes)
    if unknown:
        raise InvalidDataError(
            f"The target {y.name!r} holds values the classifier does not know: "
            f"{', '.join(unknown[:10])}. The model's classes are: {', '.join(sorted(classes)[:10])}. "
            "Choose the right target column."
        )
