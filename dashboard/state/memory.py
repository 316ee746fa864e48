"""The memory budget of the server's results (issue #31): what the in-memory result cache
may hold, set by the operator, and the estimate of a result's size it is counted in.

GLASSBOX_MEMORY_BUDGET (bytes; units KB, MB, GB, TB accepted) bounds the results kept in
memory, the loaded models and data among them; the least recently used are dropped
first (a later visit computes them again, or reads them from the disk layer). The default,
4 GB, leaves a 24 GB machine room for a few users' sessions and the computations in flight.
"""
from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Mapping

import numpy as np
import pandas as pd

MEMORY_ENV = "GLASSBOX_MEMORY_BUDGET"
DEFAULT_MEMORY_BYTES = 4 << 30
#: a text cell of a column of Python objects, counted without reading every one
_OBJECT_CELL_BYTES = 64
#: how deep the estimate follows containers and objects' attributes
_DEPTH = 6
#: items of a long list or dict looked at; the rest counted at their average
_ITEMS = 64


def memory_budget(environ: Mapping[str, str]) -> int:
    """The bytes of results kept in memory (GLASSBOX_MEMORY_BUDGET, default 4 GB).

    Raises ValueError naming the variable when it holds something else than a size.
    """
    from dashboard.workspace import _SIZE_UNITS

    raw = environ.get(MEMORY_ENV, "").strip()
    if not raw:
        return DEFAULT_MEMORY_BYTES
    m = re.fullmatch(r"([0-9][0-9_,]*)\s*([a-zA-Z]*)", raw)
    if m and m.group(2).lower() in _SIZE_UNITS:
        value = int(m.group(1).replace("_", "").replace(",", "")) * _SIZE_UNITS[m.group(2).lower()]
        if value > 0:
            return value
    raise ValueError(f"The environment variable {MEMORY_ENV}={raw!r} must be a number of bytes above 0, "
                     "optionally with a unit KB, MB, GB or TB (e.g. 8GB).")


def approx_bytes(value, _depth: int = _DEPTH, _seen: set | None = None) -> int:
    """About how many bytes ``value`` holds: arrays and frames by their buffers, containers,
    dataclasses and objects by what they hold (each object once); text cells at a flat rate."""
    seen = set() if _seen is None else _seen
    if id(value) in seen or _depth < 0:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        base = value.base if isinstance(value.base, np.ndarray) else None
        if base is not None and id(base) in seen:
            return 0
        n = value.nbytes
        return n + (value.size * _OBJECT_CELL_BYTES if value.dtype == object else 0)
    if isinstance(value, (pd.DataFrame, pd.Series)):
        frame = value.to_frame() if isinstance(value, pd.Series) else value
        n = int(frame.memory_usage(index=True, deep=False).sum())
        return n + sum(len(frame) * _OBJECT_CELL_BYTES for c in frame.columns if frame[c].dtype == object)
    if isinstance(value, (str, bytes, bytearray, int, float, complex, bool)) or value is None:
        return sys.getsizeof(value)
    if isinstance(value, Mapping):
        return _items(list(value.items()), _depth, seen)
    if isinstance(value, (list, tuple, set, frozenset)):
        return _items(list(value), _depth, seen)
    if type(value).__name__ == "Tree" and hasattr(value, "node_count") and hasattr(value, "value"):
        return int(value.node_count) * 64 + int(np.asarray(value.value).nbytes)  # scikit-learn's C tree
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return 64 + sum(approx_bytes(getattr(value, f.name, None), _depth - 1, seen) for f in dataclasses.fields(value))
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        return 64 + _items(list(attrs.values()), _depth, seen)
    return sys.getsizeof(value)


def _items(items: list, depth: int, seen: set) -> int:
    if not items:
        return 64
    head = items[:_ITEMS]
    counted = sum(approx_bytes(v, depth - 1, seen) for v in head)
    return 64 + counted * len(items) // len(head)
