"""The batch options: their defaults, the values they accept, and the argument checks
shared by :func:`~explainers.batch.explain_file` and :func:`~explainers.batch.importance_file`."""
from __future__ import annotations

import numbers
import os

from ..errors import param_error

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
    "neg_log_loss",
    "accuracy",
    "r2",
    "neg_mean_squared_error",
    "neg_root_mean_squared_error",
    "neg_mean_absolute_error",
)
#: the per-chunk metric each scoring is combined from (a mean over rows)
_CHUNK_METRIC = {
    "neg_log_loss": "neg_log_loss",
    "accuracy": "accuracy",
    "r2": "neg_mean_squared_error",
    "neg_mean_squared_error": "neg_mean_squared_error",
    "neg_root_mean_squared_error": "neg_mean_squared_error",
    "neg_mean_absolute_error": "neg_mean_absolute_error",
}


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

