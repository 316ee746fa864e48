"""Loading fitted models and data files safely, with fingerprints for caching.

A model file is untrusted input. ``.skops`` files are read by skops, which
refuses to build any type that is not on its own safe list or on our reviewed
allow-list below. Pickle and joblib files run arbitrary code when loaded, so
they are refused unless the caller (the operator, never the uploader) says the
file is trusted.
"""
from __future__ import annotations

import csv
import hashlib
import io
import os
import pickletools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from .errors import InvalidDataError, InvalidModelError, UnsafeModelError

__all__ = [
    "load_model",
    "load_data",
    "Dataset",
    "fingerprint",
    "SKOPS_ALLOWED_TYPES",
    "MODEL_SUFFIXES",
    "DATA_SUFFIXES",
    "expected_features",
    "categorical_features",
    "peek_columns",
]

#: Types that skops does not trust by default but that we reviewed: plain
#: containers of numbers that scikit-learn's own trees and pipelines need.
SKOPS_ALLOWED_TYPES = frozenset(
    {
        "sklearn.tree._tree.Tree",  # every DecisionTree, forest and GradientBoosting
        "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
        "numpy.dtype",  # SimpleImputer and other transformers that keep a dtype
    }
)
MODEL_SUFFIXES = (".skops", ".joblib", ".pkl", ".pickle")
DATA_SUFFIXES = (".csv", ".parquet", ".pq")
_PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")
TRUST_HINT = (
    "Save the model with skops instead (skops.io.dump(model, 'model.skops')), or, if you "
    "trust this file, ask the operator to start the dashboard with --trust-pickles "
    "(or GLASSBOX_TRUST_PICKLES=1)."
)


def fingerprint(data: bytes) -> str:
    """Return the sha256 hex digest of ``data``: the cache key of a file's content."""
    return hashlib.sha256(data).hexdigest()


def _read_input(path_or_bytes, filename: str | None, what: str) -> tuple[bytes, str]:
    """Return (content bytes, lower-case file name) from a path, bytes or a file object."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes), (filename or "").lower()
    if hasattr(path_or_bytes, "read"):
        data = path_or_bytes.read()
        name = filename or getattr(path_or_bytes, "name", "") or ""
        return bytes(data), str(name).lower()
    if isinstance(path_or_bytes, (str, os.PathLike)):
        path = Path(path_or_bytes)
        if not path.is_file():
            raise InvalidDataError(
                f"The {what} file {str(path)!r} does not exist or is not a file. Check the path."
            )
        return path.read_bytes(), (filename or path.name).lower()
    raise InvalidDataError(
        f"Pass the {what} as a file path, bytes or a file object; got {type(path_or_bytes).__name__}."
    )


# --------------------------------------------------------------------- models
def _model_format(data: bytes, name: str) -> str:
    for suffix in MODEL_SUFFIXES:
        if name.endswith(suffix):
            return "skops" if suffix == ".skops" else "pickle"
    if name:
        raise InvalidModelError(
            f"{Path(name).name!r} is not a model file this tool reads: use a .skops file "
            "(or .joblib / .pkl when the operator allows pickles)."
        )
    # bytes without a name: sniff the content
    if data[:2] == b"PK":
        return "skops"
    if data[:1] == b"\x80" or data[:2] in (b"x\x9c", b"x\x01", b"x\xda"):
        return "pickle"
    raise InvalidModelError(
        "Could not tell the model format: pass filename='model.skops' (or .joblib / .pkl)."
    )


def _pickle_globals(data: bytes) -> list[str]:
    """List the module.name globals a pickle would import, without loading it."""
    found = []
    try:
        for op, arg, _ in pickletools.genops(io.BytesIO(data)):
            if op.name in ("GLOBAL", "INST") and isinstance(arg, str):
                found.append(arg.replace(" ", "."))
    except Exception:
        pass
    return found


def load_model(path_or_bytes, trusted: bool = False, filename: str | None = None):
    """Load a fitted model from a file path or bytes, safely by default.

    Parameters
    ----------
    path_or_bytes : str, Path, bytes or file object
        The model file.
    trusted : bool, default=False
        Allow pickle / joblib files. Loading those runs whatever code the file
        contains, so only the operator may set this, never the uploader.
    filename : str, default=None
        Gives the format (by its suffix) when bytes are passed.

    Returns
    -------
    model : object
        The fitted estimator (it has a ``predict`` method).

    Raises
    ------
    UnsafeModelError
        A pickle while not trusted, or a .skops file with types outside the
        reviewed allow-list (the message names them).
    InvalidModelError
        An unreadable, empty or non-model file.
    """
    data, name = _read_input(path_or_bytes, filename, "model")
    if not data:
        raise InvalidModelError("The model file is empty (0 bytes). Upload the saved model file.")
    fmt = _model_format(data, name)
    if fmt == "pickle":
        if not trusted:
            raise UnsafeModelError(
                "Pickle and joblib model files are refused: loading one runs any code it "
                f"contains. {TRUST_HINT}"
            )
        import joblib

        try:
            model = joblib.load(io.BytesIO(data))
        except Exception as exc:
            raise InvalidModelError(
                f"Could not read the pickle/joblib model file ({type(exc).__name__}: {exc}). "
                "Check that it was saved with joblib.dump or pickle.dump by compatible "
                "library versions."
            ) from None
    else:
        import skops.io as sio

        try:
            untrusted = sio.get_untrusted_types(data=data)
        except Exception as exc:
            raise InvalidModelError(
                f"The file is not a readable .skops model ({type(exc).__name__}: {exc}). "
                "Save the model with skops.io.dump(model, 'model.skops')."
            ) from None
        refused = sorted(set(untrusted) - SKOPS_ALLOWED_TYPES)
        if refused:
            raise UnsafeModelError(
                "The .skops file contains types that are not on the reviewed allow-list: "
                f"{', '.join(refused)}. Loading them could run code, so the file is refused. "
                "Use a scikit-learn model built from standard estimators, or ask the "
                "operator to review these types."
            )
        try:
            model = sio.loads(data, trusted=list(untrusted))
        except Exception as exc:
            raise InvalidModelError(
                f"Could not load the .skops model ({type(exc).__name__}: {exc}). It may have "
                "been saved by an incompatible scikit-learn or skops version; save it again "
                "with the versions in requirements.txt."
            ) from None
    if not hasattr(model, "predict"):
        raise InvalidModelError(
            f"The file holds a {type(model).__name__}, not a fitted model with a predict "
            "method. Save the fitted estimator or Pipeline itself."
        )
    from .model import _check_fitted

    _check_fitted(model)
    return model


# ----------------------------------------------------------------------- data
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


def categorical_features(model) -> set[str]:
    """Columns a Pipeline / ColumnTransformer routes to an encoder, so text is allowed there."""
    found: set[str] = set()
    try:
        from sklearn.compose import ColumnTransformer
        from sklearn.pipeline import Pipeline
    except ImportError:  # pragma: no cover
        return found

    def visit(est):
        if isinstance(est, Pipeline):
            for _, step in est.steps:
                visit(step)
        elif isinstance(est, ColumnTransformer):
            transformers = getattr(est, "transformers_", est.transformers)
            for _, trans, cols in transformers:
                if trans in ("drop", "passthrough"):
                    continue
                names = type(trans).__name__
                inner = trans
                if isinstance(trans, Pipeline):
                    names = " ".join(type(s).__name__ for _, s in trans.steps)
                if "Encoder" in names or "Vectorizer" in names:
                    if isinstance(cols, str):
                        cols = [cols]
                    for c in np.atleast_1d(cols).tolist():
                        if isinstance(c, str):
                            found.add(c)
                        elif hasattr(est, "feature_names_in_") and isinstance(c, (int, np.integer)):
                            found.add(str(est.feature_names_in_[c]))
                visit(inner)
        elif type(est).__name__.endswith("Encoder") and hasattr(est, "feature_names_in_"):
            found.update(str(c) for c in est.feature_names_in_)
        elif type(est).__name__.startswith("HistGradientBoosting"):
            cats = getattr(est, "is_categorical_", None)
            names = getattr(est, "feature_names_in_", None)
            if cats is not None and names is not None:
                found.update(str(n) for n, c in zip(names, cats) if c)

    visit(model)
    return found


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
    dups = sorted({c for c in names if names.count(c) > 1})
    if dups:
        raise InvalidDataError(
            f"{repr(name) if name else 'The file'} has duplicate column names: {', '.join(dups)}. "
            "Rename them so each column is unique."
        )
    return pfile, names


def _read_table(data: bytes, name: str) -> pd.DataFrame:
    if not data or not data.strip():
        raise InvalidDataError("The data file is empty. Upload a CSV or Parquet file with a header row and data.")
    is_parquet = name.endswith((".parquet", ".pq")) or data[:4] == b"PAR1"
    if not is_parquet and name and not name.endswith(".csv") and not name.endswith(".txt"):
        raise InvalidDataError(
            f"{Path(name).name!r} is not a data file this tool reads: use CSV (.csv) or Parquet (.parquet)."
        )
    if is_parquet:
        pfile, _ = parquet_schema(io.BytesIO(data))
        try:
            return pfile.read().to_pandas()
        except Exception as exc:
            raise InvalidDataError(
                f"Could not read the Parquet file ({type(exc).__name__}: {exc}). Check that it is "
                "a complete Parquet file, or export the data as CSV."
            ) from None
    # CSV: decode ourselves so a wrong encoding is a clear message, not garbage
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
    lines = text.splitlines()
    header_line = next((ln for ln in lines if ln.strip()), "")
    try:
        dialect = csv.Sniffer().sniff(header_line, delimiters=",;\t|") if header_line else None
        sep = dialect.delimiter if dialect else ","
    except csv.Error:
        sep = ","
    header = next(csv.reader([header_line], delimiter=sep)) if header_line else []
    header = [h.strip() for h in header]
    if not header or all(h == "" for h in header):
        raise InvalidDataError("The CSV file has no header row. Put the column names on the first line.")
    dups = sorted({c for c in header if header.count(c) > 1})
    if dups:
        raise InvalidDataError(
            f"The file has duplicate column names: {', '.join(dups)}. Rename them so each column is unique."
        )
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, skipinitialspace=True)
    except Exception as exc:
        raise InvalidDataError(
            f"Could not parse the CSV file ({type(exc).__name__}: {exc}). Check that every row "
            "has the same number of fields as the header."
        ) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def peek_columns(path_or_bytes, filename: str | None = None) -> list[str]:
    """Column names of a CSV or Parquet file (to offer a target column before loading).

    Raises :class:`InvalidDataError` for the same bad files as :func:`load_data`.
    """
    data, name = _read_input(path_or_bytes, filename, "data")
    if name.endswith((".parquet", ".pq")) or data[:4] == b"PAR1":
        return [str(c) for c in _read_table(data, name).columns]
    # a CSV: parse just the first lines
    head = data[: 1 << 16]
    cut = head.rfind(b"\n")
    if cut > 0 and len(data) > len(head):
        head = head[: cut + 1]
    return [str(c) for c in _read_table(head, name).columns]


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
        With a message that says what is wrong and how to fix it.
    """
    data, name = _read_input(path_or_bytes, filename, "data")
    frame = _read_table(data, name)
    notices: list[str] = []
    if frame.shape[1] == 0:
        raise InvalidDataError("The data file has no columns. Upload a table with a header row.")
    if len(frame) == 0:
        raise InvalidDataError("The data file has a header but no data rows. Upload a file with at least one row.")
    y = None
    if target is not None:
        target = str(target)
        if target not in frame.columns:
            raise InvalidDataError(
                f"The target column {target!r} is not in the file. Its columns are: "
                f"{', '.join(map(str, frame.columns[:20]))}{' …' if frame.shape[1] > 20 else ''}."
            )
        y = frame.pop(target)
        if y.isna().any():
            notices.append(f"The target {target!r} is empty in {int(y.isna().sum())} rows.")
    names = list(feature_names) if feature_names is not None else None
    if names is None and model is not None:
        names = expected_features(model)
    n_in = getattr(model, "n_features_in_", None) if model is not None else None
    if names is None and n_in is not None:
        if frame.shape[1] != int(n_in):
            raise InvalidDataError(
                f"The model was fitted on {int(n_in)} unnamed columns but the file has "
                f"{frame.shape[1]} (after removing the target). Upload data with exactly "
                f"the model's {int(n_in)} feature columns, in training order."
            )
        notices.append(
            "The model did not record its column names; the file's columns are used in file order."
        )
        names = [str(c) for c in frame.columns]
    if names is not None:
        present = [str(c) for c in frame.columns]
        match_columns(present, names, notices)
        if [c for c in present if c in names] != list(names):
            notices.append("Columns were put in the model's order.")
        frame = frame[list(names)]
    if model is not None:
        frame = _coerce_numeric(frame, categorical_features(model), notices)
    if target is not None and y is not None and model is not None:
        _check_target(y, model)
    key = fingerprint(data + b"\x00target=" + str(target).encode())
    return Dataset(X=frame.reset_index(drop=True), y=None if y is None else y.reset_index(drop=True), notices=notices, fingerprint=key)


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
    result = pd.DataFrame(out, index=frame.index)
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
            if n_nan:
                notices.append(f"Column {col!r} is empty in {n_nan} row(s); those values count as missing.")
    return result


def _check_target(y: pd.Series, model) -> None:
    from .model import detect_task

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
