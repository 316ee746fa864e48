"""Size limits on uploaded models and data files, in one place.

Every file the dashboard reads is untrusted input: a few kilobytes can
decompress to gigabytes or describe a forest of a million trees. Each limit
below is checked before the work it bounds, and each can be raised by the
operator through the environment variable named beside it (read when the check
runs, so a changed environment takes effect without a restart of Python).

The defaults suit a machine of about 24 GB serving a few users at once.

=============================  ===========================  ==================
limit                          environment variable         default
=============================  ===========================  ==================
trees in one model             GLASSBOX_MAX_TREES           20,000
tree nodes in one model        GLASSBOX_MAX_NODES           50,000,000
depth of one tree              GLASSBOX_MAX_TREE_DEPTH      1,000
features / data columns        GLASSBOX_MAX_FEATURES        100,000
model file, unpacked           GLASSBOX_MAX_MODEL_BYTES     2 GB
trees' memory / file size      GLASSBOX_MAX_MODEL_EXPANSION 200 (past 256 MB)
objects a .skops file builds   GLASSBOX_MAX_MODEL_OBJECTS   5,000,000
files inside a .skops archive  GLASSBOX_MAX_MODEL_FILES     250,000
schema.json of a .skops file   GLASSBOX_MAX_SCHEMA_BYTES    256 MB
data rows                      GLASSBOX_MAX_DATA_ROWS       5,000,000
data, unpacked                 GLASSBOX_MAX_DATA_BYTES      2 GB
CSV header line                GLASSBOX_MAX_HEADER_BYTES    8 MB
CPU to read one uploaded model GLASSBOX_MAX_PARSE_SECONDS   120
memory to read one upload      GLASSBOX_MAX_PARSE_BYTES     6 GB
=============================  ===========================  ==================

Sizes accept a plain number of bytes or a suffix: ``GLASSBOX_MAX_MODEL_BYTES=4GB``.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import re

__all__ = ["LIMITS", "limit", "over", "fmt", "reading_file", "file_bytes", "EXPANSION_FLOOR"]

_KB, _MB, _GB = 1 << 10, 1 << 20, 1 << 30

#: name -> (environment variable, default, what it counts, is a byte size)
LIMITS: dict[str, tuple[str, int, str, bool]] = {
    "trees": ("GLASSBOX_MAX_TREES", 20_000, "trees in one model", False),
    "nodes": ("GLASSBOX_MAX_NODES", 50_000_000, "tree nodes in one model", False),
    "tree_depth": ("GLASSBOX_MAX_TREE_DEPTH", 1_000, "levels of one tree", False),
    "features": ("GLASSBOX_MAX_FEATURES", 100_000, "features (columns)", False),
    "model_bytes": ("GLASSBOX_MAX_MODEL_BYTES", 2 * _GB, "bytes of unpacked model arrays", True),
    # a boosting file's trees take about its own size once read (a multiclass one: a value per class
    # per node); one that states hundreds of times its size is made to exhaust memory (886 KB stating
    # 65,536 classes took 1.3 GB). Past EXPANSION_FLOOR only: a small model never meets it
    "model_expansion": ("GLASSBOX_MAX_MODEL_EXPANSION", 200, "times its file's size a model's trees may take",
                        False),
    # about 55 schema objects per forest tree and 140 per gradient-boosting tree; skops
    # walks them all (shared ones once per use) in a few microseconds each
    "model_objects": ("GLASSBOX_MAX_MODEL_OBJECTS", 5_000_000, "objects built from a .skops file", False),
    "model_files": ("GLASSBOX_MAX_MODEL_FILES", 250_000, "files inside a .skops archive", False),
    # skops writes about 15 KB of schema per forest tree and 40 KB per gradient-boosting
    # tree; parsing it takes about ten times that in memory
    "schema_bytes": ("GLASSBOX_MAX_SCHEMA_BYTES", 256 * _MB, "bytes of a .skops schema.json", True),
    # a CatBoost .cbm file is converted to JSON by catboost in a disposable process, never in the
    # server's: its CPU seconds and memory are capped (a damaged file crashed catboost's loader)
    "convert_seconds": ("GLASSBOX_MAX_CONVERT_SECONDS", 60, "CPU seconds to convert a .cbm file", False),
    "convert_bytes": ("GLASSBOX_MAX_CONVERT_BYTES", 4 * _GB, "bytes of memory to convert a .cbm file", True),
    # an uploaded model file is read in a child process (explainers.io.isolated), never in the
    # server's: its CPU seconds and the memory it may add are capped
    "parse_seconds": ("GLASSBOX_MAX_PARSE_SECONDS", 120, "CPU seconds to read one uploaded model", False),
    "parse_bytes": ("GLASSBOX_MAX_PARSE_BYTES", 6 * _GB, "bytes of memory to read one uploaded model", True),
    "data_rows": ("GLASSBOX_MAX_DATA_ROWS", 5_000_000, "data rows", False),
    "data_bytes": ("GLASSBOX_MAX_DATA_BYTES", 2 * _GB, "bytes of unpacked data", True),
    "header_bytes": ("GLASSBOX_MAX_HEADER_BYTES", 8 * _MB, "bytes of a CSV header line", True),
}

_SUFFIX = {"": 1, "b": 1, "k": _KB, "kb": _KB, "kib": _KB, "m": _MB, "mb": _MB, "mib": _MB,
           "g": _GB, "gb": _GB, "gib": _GB, "t": _GB << 10, "tb": _GB << 10, "tib": _GB << 10}


def _parse(text: str, var: str) -> int:
    m = re.fullmatch(r"\s*([0-9][0-9_,]*(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", text)
    if m and m.group(2).lower() in _SUFFIX:
        number = float(m.group(1).replace("_", "").replace(",", ""))
        return int(number * _SUFFIX[m.group(2).lower()])
    from .errors import InvalidParameterError

    raise InvalidParameterError(
        f"The environment variable {var}={text!r} is not a number (e.g. 20000, or 4GB for a size)."
    )


def limit(name: str) -> int:
    """The current value of limit ``name`` (a key of :data:`LIMITS`)."""
    var, default, _, _ = LIMITS[name]
    raw = os.environ.get(var)
    return default if raw is None or not raw.strip() else _parse(raw, var)


def _size(n: int) -> str:
    for unit, scale in (("GB", _GB), ("MB", _MB), ("KB", _KB)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,} bytes"


def fmt(name: str, n: int) -> str:
    """``n`` written in the unit of limit ``name`` (bytes as KB/MB/GB)."""
    return _size(int(n)) if LIMITS[name][3] else f"{int(n):,}"


def over(name: str) -> str:
    """The end of a refusal message: the limit and the variable that raises it."""
    var = LIMITS[name][0]
    return (f"over the limit of {fmt(name, limit(name))} (the operator can raise it with the "
            f"environment variable {var})")


#: the trees of a model may take this much memory whatever its file's size
EXPANSION_FLOOR = 256 * _MB

_FILE_BYTES: contextvars.ContextVar = contextvars.ContextVar("glassbox_file_bytes", default=None)


@contextlib.contextmanager
def reading_file(n_bytes: int):
    """While a model file of ``n_bytes`` is read: the structure checks weigh what it states against its size."""
    token = _FILE_BYTES.set(int(n_bytes))
    try:
        yield
    finally:
        _FILE_BYTES.reset(token)


def file_bytes() -> int | None:
    """The size of the model file being read (:func:`reading_file`), or None."""
    return _FILE_BYTES.get()
