"""float64 values as int64 keys in the same order, and the b-ary search over them that the
pipeline folding (:mod:`explainers.trees.pipeline`) runs to find where a split's route changes."""
from __future__ import annotations

import numpy as np

_SIGN = np.int64(0x7FFFFFFFFFFFFFFF)


def _to_key(x: np.ndarray) -> np.ndarray:
    """float64 -> int64 keys in the same order (-0.0 just below +0.0)."""
    b = np.asarray(x, np.float64).view(np.int64)
    return b ^ ((b >> 63) & _SIGN)


def _from_key(k: np.ndarray) -> np.ndarray:
    k = np.asarray(k, np.int64)
    return (k ^ ((k >> 63) & _SIGN)).view(np.float64)


_KMIN = int(_to_key(np.array([-np.finfo(np.float64).max]))[0])
_KMAX = int(_to_key(np.array([np.finfo(np.float64).max]))[0])


#: rows one search step may send through the preprocessing (its per-call cost dominates below this)
_STEP_ROWS = 1 << 16


def _bisect(pred, lo: np.ndarray, hi: np.ndarray, lo_val: np.ndarray) -> np.ndarray:
    """Per entry: the last key in [lo, hi] whose predicate equals ``lo_val``, where
    ``pred(idx, keys)`` (entries ``idx``, one key each) equals lo_val from lo up to
    some key and not after it, and pred(hi) != lo_val.

    A b-ary search: each step tests b - 1 keys per entry in one call of ``pred``
    (one run of the preprocessing), so 64 bits take 64 / log2(b) calls.
    """
    lo, hi = lo.astype(np.int64), hi.astype(np.int64)
    while True:
        active = np.flatnonzero(hi - 1 > lo)  # (hi - lo may overflow int64)
        if not len(active):
            return lo
        b = int(max(2, min(256, _STEP_ROWS // len(active))))
        a = lo[active]
        span = hi[active].view(np.uint64) - a.view(np.uint64)  # exact modulo 2**64, < 2**64
        step = np.maximum(span // np.uint64(b), np.uint64(1))
        k = np.arange(1, b, dtype=np.uint64)
        offs = step[:, None] * k[None, :]  # <= span: no overflow
        keys = (a.view(np.uint64)[:, None] + offs).view(np.int64)
        inside = offs < span[:, None]      # strictly between lo and hi
        rows, cols = np.nonzero(inside)
        got = np.zeros(inside.shape, bool)
        got[rows, cols] = pred(active[rows], keys[rows, cols]) == lo_val[active[rows]]
        # monotone: the last tested key still equal to lo_val, and the first one after it
        n_same = np.where(inside, got, False).sum(1)
        new_lo = np.where(n_same > 0, keys[np.arange(len(active)), np.maximum(n_same - 1, 0)], a)
        n_in = inside.sum(1)
        new_hi = np.where(n_same < n_in, keys[np.arange(len(active)), np.minimum(n_same, b - 2)], hi[active])
        lo[active], hi[active] = new_lo, new_hi
