"""Partial dependence by the compiled tree walk: the plan (whether the walk applies), the walks'
layout on numba's threads and the helper thread, and the ICE curves and averages they give
(:func:`_tree_ice`), and the recursion method's averages. :mod:`.pdp` chooses the method and
assembles the result; :mod:`.hstat` walks the same way."""
from __future__ import annotations

import threading
from contextlib import contextmanager

import numpy as np
import pandas as pd

from ..model import ModelAdapter

#: serialises compiled calls: numba's fallback "workqueue" threading layer may
#: not be entered from two threads at once (Streamlit runs sessions in threads)
_KERNEL_LOCK = threading.Lock()
#: rows walked together through one tree at a time, per ICE block: at least
#: the first, at most the second (bigger groups share each node's visit: 2,048
#: rows walk 1.45x faster than 256 on a 3-class XGBoost model); each row keeps its
#: own grid of sums, so the block's values (rows x grid points x outputs) are
#: also bounded by the third
_TREE_BLOCK_ROWS = (32, 2048, 2_000_000)
#: rows per block when only the row sum is wanted (one grid of sums per block, whatever its
#: rows): bounds as _TREE_BLOCK_ROWS (a 1,000-row average in blocks of 256 took 1.2x the ICE's time)
_TREE_SUM_BLOCK_ROWS = (32, 2048, 10**12)


def _tree_plan(adapter: ModelAdapter, frame: pd.DataFrame, kinds, grids):
    """Return (ensemble, transform) when the exact tree walk applies, else (None, reason)."""
    from ..description import describe
    from ..errors import InvalidModelError
    from ..trees import flatten_model

    model = adapter.model
    if not describe(model).tree:
        return None, (
            f"{type(model).__name__} is not a bare tree model (a Pipeline never is)"
        )
    try:
        ens = flatten_model(model)
    except InvalidModelError as exc:
        return None, str(exc)
    if ens.n_features != frame.shape[1]:
        return None, "the data and the model have different numbers of columns"
    coded = [ens.categories[j] is not None for j in range(ens.n_features)]
    if not all(coded[j] or pd.api.types.is_numeric_dtype(dt)  # bool included
               for j, dt in enumerate(frame.dtypes.tolist())):
        return None, "the data has non-numeric columns"
    if not all(g.dtype.kind in "fiub" for g in grids if g is not None) and not any(coded):
        return None, "a grid is not numeric"
    if adapter.output in ("auto", "proba"):
        transform = ens.transform
    elif adapter.output == "raw":
        has_margin = adapter.task != "regression" and hasattr(model, "decision_function")
        transform = "identity" if has_margin else ens.transform
    else:
        return None, f"output={adapter.output!r} is not the model's own prediction space"
    return (ens, transform), None


def _finish_outputs(arr: np.ndarray, adapter: ModelAdapter) -> np.ndarray:
    """Last axis holds all model columns: keep the chosen class, drop a single column."""
    if adapter.class_index is not None:
        return arr[..., adapter.class_index]
    if arr.shape[-1] == 1:
        return arr[..., 0]
    return arr


#: walk plans kept per ensemble (:func:`_grid_walks`), and the most bytes one may hold
_WALKS_KEPT = 8
_WALKS_MAX_BYTES = 8 << 20
_WALKS_LOCK = threading.Lock()


def _grid_walks(ens, f1: int, f2: int, grids) -> list:
    """The walks that cover a grid: ``(pos1, g1, part1, pos2, g2, part2, plan)`` for each pair of
    :func:`~explainers.trees.walks.grid_slices` of the two targets, with its mask plan
    (:func:`~explainers.trees.mask_walk.walk_plan`).

    They depend on the ensemble and the grid only, so the last few are kept on the ensemble
    (those of at most _WALKS_MAX_BYTES): a page asks for the same grid on other rows (ICE
    samples, segments, every row) and the 3-class XGBoost model's plan took a tenth of a
    1,000-row PD call."""
    from ..trees.inputs import grid_codes
    from ..trees.mask_walk import walk_plan
    from ..trees.walks import grid_slices

    codes1 = grid_codes(ens, f1, grids[0])
    codes2 = grid_codes(ens, f2, grids[1]) if f2 >= 0 else None
    key = (f1, f2, codes1.tobytes(), None if codes2 is None else codes2.tobytes())
    store = ens.__dict__.setdefault("_grid_walks", {})  # a frozen dataclass: its dict, not setattr
    with _WALKS_LOCK:
        walks = store.pop(key, None)
        if walks is not None:
            store[key] = walks  # the most recent last
            return walks
    walks = [(pos1, g1, part1, pos2, g2, part2, walk_plan(ens, f1, f2, pos1, pos2, g1, g2))
             for pos1, g1, part1 in grid_slices(ens, f1, codes1)
             for pos2, g2, part2 in grid_slices(ens, f2, codes2)]
    size = sum(w[0].nbytes + w[3].nbytes + sum(getattr(a, "nbytes", 0) for a in w[6]) for w in walks)
    if size <= _WALKS_MAX_BYTES:
        with _WALKS_LOCK:
            store[key] = walks
            while len(store) > _WALKS_KEPT:
                store.pop(next(iter(store)))
    return walks


def _tree_ice(ens, transform: str, frame: pd.DataFrame, cols: list[int], grids, keep_ice: bool,
              shared: bool = False):
    """ICE (or only its row sum) over a sorted grid, via the compiled walk.

    A target feature with categorical (rule) splits is walked one grid value at
    a time (:func:`~explainers.trees.walks.grid_slices`); a plain one in one walk.
    ``shared``: small work on one thread of several; its rows are shared with a helper thread
    (:func:`_ice_blocks`, :func:`_tree_sums`).
    """
    from ..trees import TRANSFORMS

    Xw = ens.prepare_inputs(frame)
    f1 = cols[0]
    f2 = cols[1] if len(cols) == 2 else -1
    G1 = len(grids[0])
    G2 = len(grids[1]) if len(cols) == 2 else 1
    walks = _grid_walks(ens, f1, f2, grids)
    K = 2 if transform == "sigmoid" else ens.n_raw
    n = Xw.shape[0]
    tcode = TRANSFORMS.index(transform)
    if not keep_ice and transform == "identity":
        # the average of base + scale * tree sums is base + scale * their row average
        total = np.zeros((G1, G2, ens.n_raw))
        for pos1, g1, part1, pos2, g2, part2, plan in walks:
            total[part1, part2] = _tree_sums(ens, Xw, f1, f2, pos1, pos2, g1, g2, plan, shared)
        return None, ens.base + ens.scale * (total / n)

    whole = len(walks) == 1
    if keep_ice:
        out = np.empty((n, G1, G2, K))
        for pos1, g1, part1, pos2, g2, part2, plan in walks:
            sub = out if whole else np.empty((n, g1, g2, K))
            _ice_blocks(ens, Xw, f1, f2, pos1, pos2, g1, g2, tcode, plan, shared, sub, False)
            if not whole:
                out[:, part1, part2] = sub
        return out, out.mean(axis=0)
    # Only the average is wanted: each block of rows adds its outputs into a grid of its own
    total = np.zeros((G1, G2, K))
    for pos1, g1, part1, pos2, g2, part2, plan in walks:
        total[part1, part2] = _ice_blocks(ens, Xw, f1, f2, pos1, pos2, g1, g2, tcode, plan, shared, None,
                                          True).sum(axis=0)
    return None, total / n


#: fewest rows per piece where a small walk is shared with a helper thread
_SHARED_BLOCK_ROWS = 128


def _shared_rows(shared: bool, n: int, block: int, parts: int) -> int:
    """Rows per piece where a walk of ``n`` rows is shared with the helper thread (small work whose
    trees are not split in parts, at least _SHARED_BLOCK_ROWS rows a piece): two pieces, no larger
    than a block; 0 where it is not shared. (Two pieces: the helper wakes in about 0.1 ms; the
    3-class XGBoost model's 1,000 rows took 3.5 ms in two pieces, 3.8-4.0 in four, 4.0-4.4 in six.)"""
    if not shared or parts != 1 or n < 2 * _SHARED_BLOCK_ROWS:
        return 0
    return min(block, -(-n // 2))


def _tree_sums(ens, Xw, f1, f2, pos1, pos2, G1, G2, plan, shared: bool) -> np.ndarray:
    """The unscaled tree sums at every grid point, summed over the rows of ``Xw`` (G1, G2, n_raw),
    by :func:`~explainers.effects._tree_kernels.pd_sum_kernel`; ``shared``: in pieces
    (:func:`_shared_rows`), as :func:`_ice_blocks`."""
    from ..trees.walks import rules_of
    from ._sharing import share
    from ._tree_kernels import pd_sum_block, pd_sum_kernel

    n = Xw.shape[0]
    nodes, thr = ens.packed_nodes
    cat_start, cat_bits = rules_of(ens)
    block, parts = walk_layout(n, 1, len(ens.roots), plan[0], _TREE_SUM_BLOCK_ROWS)
    args = (f1, f2, pos1, pos2, G1, G2, nodes, thr, ens.missing_go_left, cat_start, cat_bits, ens.value, ens.roots)
    piece = _shared_rows(shared, n, block, parts)
    if piece:
        sums = np.zeros((-(-n // piece), G1, G2, ens.n_raw, 1))
        trees = np.arange(len(ens.roots))
        share(lambda k: pd_sum_block(Xw, k * piece, min(n, (k + 1) * piece), *args, trees, ens.max_depth + 2,
                                     sums[k], plan), len(sums))
    else:
        sums = np.zeros((-(-n // block) * parts, G1, G2, ens.n_raw, 1))
        with _KERNEL_LOCK:
            pd_sum_kernel(Xw, *args, ens.max_depth, block, parts, sums, plan)
    return sums.sum(axis=0)[..., 0]


def _ice_blocks(ens, Xw, f1, f2, pos1, pos2, G1, G2, tcode, plan, shared: bool, out, mean: bool):
    """One walk of :func:`ice_tree_kernel` over every row of ``Xw``: the outputs into ``out``
    (n, G1, G2, K), or (``mean``) returned summed per block of rows (n_blocks, G1, G2, K).

    ``shared`` (small work, on one thread of several): the rows are cut in pieces
    (:func:`_shared_rows`), walked by this thread and a helper thread
    (:func:`~explainers.effects._sharing.share`), each by
    :func:`~explainers.effects._tree_kernels.ice_block`, the loop body of the kernel: the same
    outputs, and the same block sums as a block of that size, whichever thread walks it.
    """
    from ..trees.walks import rules_of
    from ._sharing import share
    from ._tree_kernels import ice_block, ice_tree_kernel

    n = Xw.shape[0]
    K = 2 if tcode == 2 else ens.n_raw
    nodes, thr = ens.packed_nodes
    cat_start, cat_bits = rules_of(ens)
    block, parts = walk_layout(n, G1 * G2 * ens.n_raw, len(ens.roots), plan[0])
    piece = _shared_rows(shared, n, block, parts)
    block = piece or block
    n_blocks = -(-n // block)
    if mean:
        out = np.zeros((n_blocks, G1, G2, K))
    args = (f1, f2, pos1, pos2, G1, G2, nodes, thr, ens.missing_go_left, cat_start, cat_bits, ens.value,
            ens.roots, ens.base, ens.scale, tcode)
    if piece:
        def walk(k: int) -> None:
            start = k * block
            stop = min(n, start + block)
            ice_block(Xw, start, stop, *args, ens.max_depth + 2, out[k:k + 1] if mean else out[start:stop],
                      mean, plan)

        share(walk, n_blocks)
        return out
    with _KERNEL_LOCK:
        ice_tree_kernel(Xw, *args, ens.max_depth, block, parts, out, mean, plan)
    return out


def ice_block_rows(n: int, values_per_row: int, bounds=None) -> int:
    """Rows per block of the walk: one block where the rows fit in one, else the same number
    of blocks on every thread, each as big as ``bounds`` allow (rows at least, rows at most,
    values held at most; default _TREE_BLOCK_ROWS).

    >>> import numba; numba.set_num_threads(1)
    >>> ice_block_rows(1000, 150), ice_block_rows(10_000, 150), ice_block_rows(10_000, 7500)
    (1000, 2000, 264)
    """
    from ..trees.walks import balanced_block_rows

    lo, hi, values = _TREE_BLOCK_ROWS if bounds is None else bounds
    cap = max(lo, min(hi, values // max(1, values_per_row)))
    if n <= cap:  # one block: the threads share its trees instead (tree_parts)
        return int(max(lo, n))
    return balanced_block_rows(n, lo, cap)


#: work (rows x (trees + grid cells x outputs)) below which a tree PD call runs on numba's one thread:
#: waking its second thread after a pause took about 10 ms on these machines (the 3-class XGBoost's
#: 1,000 rows: 5 ms a call back to back on two threads, 15-18 ms after a pause, 7 ms on one thread),
#: more than a small walk saves. Such work is shared with a helper thread instead, which wakes in
#: about 0.1 ms; a call waits only for a piece it took (:mod:`explainers.effects._sharing`)
ONE_THREAD_WORK = 4_000_000


@contextmanager
def threads_for(work: int):
    """Run the block's compiled kernels on one thread where ``work`` is below ONE_THREAD_WORK
    (numba's thread count is the calling thread's own: other threads keep theirs). Yields
    whether it did so on a machine with more threads: such work may still be shared with a
    helper thread that wakes in time (:func:`~explainers.effects._sharing.share`)."""
    import numba

    before = numba.get_num_threads()
    if work >= ONE_THREAD_WORK or before == 1:
        yield False
        return
    numba.set_num_threads(1)
    try:
        yield True
    finally:
        numba.set_num_threads(before)


def walk_layout(n: int, values_per_row: int, n_trees: int, mask: bool, bounds=None) -> tuple[int, int]:
    """Rows per block and tree parts per block of a tree PD walk over ``n`` rows.

    The group walk (``mask`` False) keeps a few thousand rows in one block and shares its trees
    among the threads (:func:`tree_parts`): on fewer rows a group is split less often. The mask
    walk's passes run over every row of a block alike, so its rows are dealt to the threads
    instead (one part): no per-part sums to add, and each block's outputs are made where it
    was walked.

    >>> import numba; numba.set_num_threads(2)
    >>> walk_layout(1000, 150, 600, False), walk_layout(1000, 150, 600, True)
    ((1000, 2), (500, 1))
    """
    from ..trees.walks import balanced_block_rows

    if not mask:
        block = ice_block_rows(n, values_per_row, bounds)
        return block, tree_parts(n, block, n_trees)
    lo, hi, values = _TREE_BLOCK_ROWS if bounds is None else bounds
    return balanced_block_rows(n, lo, max(lo, min(hi, values // max(1, values_per_row)))), 1


def tree_parts(n: int, block: int, n_trees: int) -> int:
    """Parts the trees are split in per block of rows: where there are fewer blocks than
    threads (a few thousand rows), the threads share each block's trees instead of idling
    (1,000 rows of a 3-class XGBoost model on two threads: one block each walked 500 rows,
    1.5x the one-thread speed); 1 otherwise.

    >>> import numba; numba.set_num_threads(2)
    >>> tree_parts(1000, 1000, 600), tree_parts(4000, 2000, 600), tree_parts(1000, 1000, 1)
    (2, 1, 1)
    """
    import numba

    n_blocks = -(-n // max(1, block))
    threads = numba.get_num_threads()
    return int(max(1, min(n_trees, threads // n_blocks))) if n_blocks < threads else 1


def _recursion_average(ens, cols: list[int], grids):
    from ..trees.inputs import grid_codes
    from ..trees.walks import grid_slices
    from ._tree_kernels import recursion_kernel

    f1 = cols[0]
    f2 = cols[1] if len(cols) == 2 else -1
    G1 = len(grids[0])
    G2 = len(grids[1]) if len(cols) == 2 else 1
    slices1 = grid_slices(ens, f1, grid_codes(ens, f1, grids[0]))
    slices2 = grid_slices(ens, f2, grid_codes(ens, f2, grids[1]) if f2 >= 0 else None)
    D = np.zeros((G1, G2, ens.n_raw))
    for pos1, g1, part1 in slices1:
        for pos2, g2, part2 in slices2:
            D[part1, part2] = recursion_kernel(f1, f2, pos1, pos2, g1, g2, ens.feature, ens.left, ens.right,
                                               ens.cover, ens.value, ens.roots, ens.max_depth)
    return ens.base[None, None, :] + ens.scale * D
