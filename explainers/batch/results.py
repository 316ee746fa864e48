"""Reading a finished batch SHAP run back: :func:`load_attributions` (a seeded sample of
its rows as a :class:`~explainers.shap.ShapResult`, part by part, in bounded memory) and
:func:`load_background`. A finished importance run reopens with
:func:`~explainers.batch.load_importance` (in :mod:`.importance_run`)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ExplainerError, InvalidDataError
from .manifest import BACKGROUND, MANIFEST, _finished_manifest, _part_name
from .options import _check_int
from .sources import _Columns, _file_sha, _open_source, _read_rows


def load_background(path: str | os.PathLike) -> pd.DataFrame | None:
    """The background rows a finished batch SHAP run used (None for path-dependent TreeShap).

    Raises
    ------
    ExplainerError
        If ``path`` holds no finished SHAP run, or its background file is not the one the run used.
    """
    out = Path(path).expanduser().resolve()
    if out.is_file() and out.name == MANIFEST:
        out = out.parent
    man = _finished_manifest(out, "shap", "batch")
    info = man.get("background")
    if not info:
        return None
    bg = out / BACKGROUND
    if not bg.is_file() or (info.get("sha256") and _file_sha(bg) != info["sha256"]):
        raise InvalidDataError(
            f"The background file {BACKGROUND!r} of {str(out)!r} is missing or is not the one its run used. "
            "Rerun the batch command with --overwrite to recompute the output."
        )
    return _read_background(bg)


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
    InvalidDataError
        If the run has not finished (it says how far it got), or its parts do not
        agree with its manifest: one missing, one written by another run, or files
        among them that the run did not write.

    Examples
    --------
    >>> res = load_attributions("shap_out", sample=1000)  # doctest: +SKIP
    >>> res.mean_abs()  # doctest: +SKIP
    """
    from ..shap.result import ShapResult

    func = "load_attributions"
    if sample is not None:
        sample = _check_int(sample, "sample", func, 1)
    random_state = _check_int(random_state, "random_state", func, 0)
    out = Path(path).expanduser().resolve()
    if out.is_file() and out.name == MANIFEST:
        out = out.parent
    man = _finished_manifest(out, "shap", "batch")
    n = int(man["n_rows"])
    rows = _sample_rows(n, sample, random_state)
    frame = _read_output_rows(out, man, rows)
    values, base, pred = _unpack_columns(frame, man)
    X, mask, data_note = _data_and_missing(man, rows, len(frame), with_data)
    opts = man["options"]
    params = {"source": str(out), "rows": frame["row"].to_numpy(), "n_rows_total": n,
              "sample": None if len(rows) == n else int(len(rows)), "random_state": random_state,
              "data_source": data_note, "reason": man.get("reason", ""), **{k2: v for k2, v in opts.items()}}
    return ShapResult(
        values=values, base_values=base, predictions=pred, feature_names=list(man["features"]), missing=mask,
        method=opts["method"], output=man.get("output_kind") or "raw", output_names=list(man["outputs"]),
        data=X, params=params,
    )


def _sample_rows(n: int, sample: int | None, random_state: int) -> np.ndarray:
    """Sorted positions of a seeded uniform sample of ``sample`` of the ``n`` rows (all when None or more)."""
    if sample is None or sample >= n:
        return np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(random_state)
    return np.sort(rng.choice(n, size=sample, replace=False)).astype(np.int64)


def _read_output_rows(out: Path, man: dict, rows: np.ndarray) -> pd.DataFrame:
    """The given rows of the output, read from the parts that hold some of them."""
    import pyarrow.parquet as pq

    chunk = int(man["options"]["chunk_rows"])
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
    return pd.concat(pieces, ignore_index=True)


def _unpack_columns(frame: pd.DataFrame, man: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SHAP values (rows, features[, outputs]), base values and predictions from the output's columns."""
    columns = man["columns"]
    m, p, k = len(frame), len(man["features"]), len(man["outputs"])
    if not bool(man["multi_output"]):
        values = frame[columns[1 : 1 + p]].to_numpy(dtype=float)
        return values, frame["base_value"].to_numpy(dtype=float), frame["prediction"].to_numpy(dtype=float)
    values = frame[columns[1 : 1 + p * k]].to_numpy(dtype=float).reshape(m, p, k)
    base = frame[columns[1 + p * k : 1 + p * k + k]].to_numpy(dtype=float)
    pred = frame[columns[1 + p * k + k :]].to_numpy(dtype=float)
    return values, base, pred


def _data_and_missing(man: dict, rows: np.ndarray, m: int, with_data: bool) -> tuple[pd.DataFrame, np.ndarray, str]:
    """The rows' feature values (NaN when not read), which were missing, and where the values came from."""
    features = list(man["features"])
    opts = man["options"]
    data_note = "not read (with_data=False)"
    X = pd.DataFrame(np.nan, index=range(m), columns=features)
    if with_data:
        X, data_note = _data_for_rows(man, rows)
    mask = np.zeros((m, len(features)), dtype=bool)
    if opts.get("missing"):
        mask[:, [features.index(f) for f in opts["missing"]]] = True
    if opts.get("nan_is_missing") and data_note == "data file":
        mask |= X.isna().to_numpy()
    return X, mask, data_note


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
        file_columns = man.get("file_columns") or {}
        if not (isinstance(file_columns, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                        for k, v in file_columns.items())):
            return blank, "unavailable: the manifest's column names are damaged"
        cols = _Columns(features, frozenset(man.get("text_columns") or ()), None, None, None, [], file_columns)
        X = _read_rows(src, cols, rows)
    except ExplainerError as exc:
        return blank, f"unavailable: {exc}"
    if len(X) != len(rows):
        return blank, f"unavailable: {info['path']} has fewer rows than the run"
    return X, "data file"


def _read_background(path: Path) -> pd.DataFrame:
    frame = pd.read_parquet(path)
    return frame.drop(columns=["_row"], errors="ignore")
