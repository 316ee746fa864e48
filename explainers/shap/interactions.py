"""SHAP interaction values: Tree SHAP (compiled) and the exact coalition game.

The SHAP interaction value of features i != j (Lundberg et al. 2020, eq. 8) is
half the Shapley interaction index of the game ``v``::

    Phi_ij = sum_{S subset of N minus {i, j}} |S|! (M-|S|-2)! / (2 (M-1)!) *
             [v(S+i+j) - v(S+i) - v(S+j) + v(S)]

so that ``Phi_ij = Phi_ji`` and, with the main effect ``Phi_ii = phi_i -
sum_{j != i} Phi_ij`` on the diagonal, every row of a row's matrix sums to its
SHAP value ``phi_i`` and the whole matrix to ``prediction - base value``.

- :func:`tree_interactions` (``TreeShap(model).interactions``) plays the tree
  explainer's own game, path-dependent (cover-weighted) or interventional
  (mean over background rows), with the leaf-table kernels of
  :mod:`explainers.shap._interaction_kernels`: O(leaves x m**2) per row and tree
  (``m`` distinct features on a leaf's path) instead of shap's ``2 p + 1`` Tree
  SHAP passes.
- :func:`exact_interactions` (``ExactShap(model, background).interactions``)
  evaluates the interventional game on all ``2**M`` coalitions, for any model
  with few features.

Missing features (``missing=``, or NaN cells while ``nan_is_missing``) are not
players: their rows and columns are exactly 0 and the rest sums to the masked
SHAP values of ``explain(X, missing=...)``.
"""
from __future__ import annotations

import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..errors import ExplainerError, InvalidParameterError, param_error
from ..trees.inputs import tree_inputs
from . import _interaction_kernels as IK
from . import _linear_kernels as LK
from . import _tree_kernels as K
from ._common import (
    resolve_nan_is_missing,
    CoalitionGame,
    Progress,
    as_frame,
    check_progress,
    check_random_state,
    lift,
    missing_mask,
    output_label,
    pattern_groups,
    prepare_background,
    row_chunks,
    shape_output,
    shapley_weight_matrix,
    subsets_matrix,
)

__all__ = [
    "ShapInteractionResult",
    "tree_interactions",
    "exact_interactions",
    "MAX_EXACT_INTERACTION_FEATURES",
]

#: most distinct features on one leaf's path for which an interaction table is built
MAX_TABLE_BITS = 14
#: largest interaction table of one tree, in entries (per table row)
MAX_TREE_TABLE_ENTRIES = 2**18
#: rows that share a missing pattern before the pattern gets its own tables
MIN_PATTERN_ROWS = 16
#: accumulator of one row block, in floats (p x p x outputs x rows)
BLOCK_FLOATS = 2**17
#: rows per thread task
CHUNK_ROWS = 1024
#: below this many (row, leaf, pair) updates a call stays on one thread
MIN_PARALLEL_WORK = 4_000_000
#: most present features ExactShap.interactions takes (its weight matrices grow as 2**M x M)
MAX_EXACT_INTERACTION_FEATURES = 16


# ----------------------------------------------------------------- result
def _check_output(class_index, k: int, func: str) -> int:
    """``k``, where ``class_index`` is an int in [0, k - 1] (an output of a result of ``k``); else
    the error naming ``func``."""
    ok = isinstance(class_index, (int, np.integer)) and not isinstance(class_index, bool)
    if not ok or not 0 <= class_index < k:
        raise param_error("class_index", func, f"an int in [0, {k - 1}]", class_index)
    return k


@dataclass(frozen=True, eq=False)
class ShapInteractionResult:
    """SHAP interaction values for a set of rows.

    Attributes
    ----------
    values : ndarray of shape (n_rows, n_features, n_features[, n_outputs])
        ``values[r, i, j]`` (i != j) is half the Shapley interaction index of
        features i and j in row r (the same as ``values[r, j, i]``);
        ``values[r, i, i]`` is the main effect of i, what is left of its SHAP
        value. Rows and columns of missing features are exactly 0. The last
        axis exists only for several outputs, as in
        :class:`~explainers.shap.ShapResult`.
    base_values : ndarray of shape (n_rows,) or (n_rows, n_outputs)
        phi_0, as in ``explain``.
    predictions : ndarray of shape (n_rows,) or (n_rows, n_outputs)
        The explained prediction f_S(x_S) (missing features marginalised);
        ``base_values + values.sum((1, 2)) == predictions``.
    feature_names : list of str
    missing : ndarray of bool, shape (n_rows, n_features)
        True where a feature was left out of the game.
    method : str
        ``"tree"`` or ``"exact"``.
    output : str
        What was explained: ``"raw"``, ``"proba"``, ``"log_odds"`` or ``"margin"``.
    output_names : list of str
    data : DataFrame of shape (n_rows, n_features)
        The explained rows, as given.
    params : dict
        The options the explainer ran with.
    """

    values: np.ndarray
    base_values: np.ndarray
    predictions: np.ndarray
    feature_names: list
    missing: np.ndarray
    method: str
    output: str
    output_names: list
    data: pd.DataFrame
    params: dict = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.values.shape[1])

    @property
    def n_outputs(self) -> int:
        """Number of output columns; 1 when ``values`` is 3-D."""
        return 1 if self.values.ndim == 3 else int(self.values.shape[3])

    @property
    def shap_values(self) -> np.ndarray:
        """The SHAP values: ``values`` summed over the last feature axis.

        Returns
        -------
        ndarray of shape (n_rows, n_features) or (n_rows, n_features, n_outputs)
        """
        return self.values.sum(axis=2)

    def __len__(self) -> int:
        return self.n_rows

    def __repr__(self) -> str:
        return (
            f"ShapInteractionResult(method={self.method!r}, output={self.output!r}, "
            f"values.shape={self.values.shape}, n_missing={int(self.missing.sum())})"
        )

    def select(self, class_index: int) -> "ShapInteractionResult":
        """The result for one output column, with 3-D ``values``.

        Parameters
        ----------
        class_index : int
            Position of the output (class) in ``output_names``.
        """
        k = _check_output(class_index, self.n_outputs, "ShapInteractionResult.select")
        if k == 1:
            return self
        c = int(class_index)
        return replace(
            self,
            values=self.values[..., c],
            base_values=self.base_values[:, c],
            predictions=self.predictions[:, c],
            output_names=[self.output_names[c]],
            params={**self.params, "class_index": c},
        )

    def additivity_error(self) -> np.ndarray:
        """``base_values + values.sum((1, 2)) - predictions``, shaped like ``predictions``."""
        return self.base_values + self.values.sum(axis=(1, 2)) - self.predictions

    def check_additivity(self, atol: float = 1e-6, rtol: float = 1e-9) -> None:
        """Raise unless every matrix sums to its prediction minus the base value.

        Raises
        ------
        ExplainerError
            With the worst row and its numbers.
        """
        err = np.abs(self.additivity_error())
        bad = err > atol + rtol * np.abs(self.predictions)
        if not bad.any():
            return
        idx = np.unravel_index(int(np.argmax(np.where(bad, err, -np.inf))), err.shape)
        raise ExplainerError(
            f"Interaction values do not add up for {int(bad.sum())} of {bad.size} outputs: "
            f"in row {int(idx[0])} the error is {err[idx]:.3g} (> atol {atol:g}). The model's "
            "predictions may change between calls, or NaN inputs reach a model that cannot "
            "take them: mark them missing (nan_is_missing=True)."
        )

    def mean_abs(self) -> np.ndarray:
        """Mean |value| over the rows: a global interaction importance.

        Returns
        -------
        ndarray of shape (n_features, n_features) or (n_features, n_features, n_outputs)
        """
        return np.abs(self.values).mean(axis=0)

    def to_frame(self) -> pd.DataFrame:
        """One tidy row per (row, output, feature pair i <= j).

        Returns
        -------
        DataFrame
            Columns ``row``, ``output``, ``feature``, ``other``, ``value`` (the
            symmetric pair's total ``values[i, j] + values[j, i]`` off the
            diagonal, the main effect on it) and ``missing`` (either is missing).
        """
        n, p, k = self.n_rows, self.n_features, self.n_outputs
        vals = self.values.reshape(n, p, p, k)
        iu, ju = np.triu_indices(p)
        pair = vals[:, iu, ju, :] + np.where((iu != ju)[None, :, None], vals[:, ju, iu, :], 0.0)
        m = len(iu)
        rows = np.repeat(np.arange(n), m * k)
        pidx = np.tile(np.repeat(np.arange(m), k), n)
        outs = np.tile(np.arange(k), n * m)
        names = np.asarray(self.feature_names, dtype=object)
        return pd.DataFrame(
            {
                "row": rows,
                "output": np.asarray(self.output_names, dtype=object)[outs],
                "feature": names[iu[pidx]],
                "other": names[ju[pidx]],
                "value": pair.reshape(-1),
                "missing": self.missing[rows, iu[pidx]] | self.missing[rows, ju[pidx]],
            }
        )


    def pair_abs_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """(sum over the rows of ``|values[:, i, j] + values[:, j, i]|`` off the diagonal and of
        ``|values[:, i, i]|`` on it, sum over the rows of the mean |SHAP value| per output): what
        :meth:`MeanInteraction.from_sums` averages, added block by block over rows too many to hold.

        Returns
        -------
        (ndarray of shape (n_features, n_features[, n_outputs]), ndarray of shape (n_outputs,))
        """
        vals = self.values
        pair = vals + vals.swapaxes(1, 2)
        d = np.arange(vals.shape[1])
        pair[:, d, d] = vals[:, d, d]
        np.abs(pair, out=pair)
        shap = np.abs(vals.sum(axis=2)).mean(axis=1)  # (n,) or (n, k): each row's mean |phi|
        return pair.sum(axis=0), np.atleast_1d(shap.sum(axis=0)).astype(np.float64)


@dataclass
class MeanInteraction:
    """How strongly pairs of features interact over rows whose own interaction values are not
    kept (every row of a large table, added up block by block).

    Attributes
    ----------
    pair : ndarray of shape (n_features, n_features) or (n_features, n_features, n_outputs)
        Off the diagonal, the mean over the rows of ``|values[:, i, j] + values[:, j, i]|`` (the
        pair's whole interaction); on it, the mean |main effect| ``|values[:, i, i]|``.
    shap_scale : ndarray of shape (n_outputs,)
        Mean |SHAP value| over the rows and features, per output: the scale an interaction is
        rounding noise against.
    feature_names, output_names : list of str
    n_rows : int
        The rows averaged over.
    method, output : str
        As the results the means were added from.
    """

    pair: np.ndarray
    shap_scale: np.ndarray
    feature_names: list
    n_rows: int
    method: str
    output: str
    output_names: list = field(default_factory=list)
    params: dict = field(default_factory=dict)

    @property
    def n_outputs(self) -> int:
        return 1 if self.pair.ndim == 2 else int(self.pair.shape[2])

    def select(self, class_index: int) -> "MeanInteraction":
        """The means of one output, with a 2-D ``pair``."""
        _check_output(class_index, self.n_outputs, "MeanInteraction.select")
        if self.pair.ndim == 2:
            return self
        c = int(class_index)
        return replace(self, pair=self.pair[..., c], shap_scale=self.shap_scale[c:c + 1],
                       output_names=[self.output_names[c]], params={**self.params, "class_index": c})

    @classmethod
    def from_sums(cls, pair_sum: np.ndarray, scale_sum: np.ndarray, n_rows: int,
                  like: ShapInteractionResult) -> "MeanInteraction":
        """The means of :meth:`ShapInteractionResult.pair_abs_sums` added over ``n_rows`` rows,
        named as ``like`` (a result of some of those rows)."""
        n = max(1, int(n_rows))
        return cls(pair=np.asarray(pair_sum, dtype=np.float64) / n, shap_scale=np.asarray(scale_sum, np.float64) / n,
                   feature_names=list(like.feature_names), n_rows=int(n_rows), method=like.method,
                   output=like.output, output_names=list(like.output_names))


def _finish(inter: np.ndarray, phi: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Symmetric (n, p, p, k) off-diagonal values -> the full matrices.

    The diagonal gets ``phi_i - sum_{j != i} Phi_ij`` so that rows sum to phi,
    and missing features get exact zero rows and columns.
    """
    p = mask.shape[1]
    inter[mask] = 0.0  # rows of missing features
    inter.transpose(0, 2, 1, 3)[mask] = 0.0  # and their columns (a view: writes through)
    d = np.arange(p)
    inter[:, d, d, :] = 0.0
    diag = phi - inter.sum(axis=2)
    diag[mask] = 0.0
    inter[:, d, d, :] = diag
    return inter


# ------------------------------------------------------------- tree plans
@dataclass(eq=False)
class _Plan:
    """Tables (or none) for one missing pattern."""

    masked: np.ndarray
    table_trees: np.ndarray
    direct_trees: np.ndarray
    node_bit: np.ndarray
    leaf_m: np.ndarray
    leaf_foff: np.ndarray
    flat_feat: np.ndarray
    flat_coef: np.ndarray
    leaf_toff: np.ndarray
    table: np.ndarray
    bits: int
    # path-dependent trees without tables take the linear walk: its points per tree and rules
    tree_points: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    gl_t: np.ndarray = field(default_factory=lambda: np.zeros((1, 1)))
    gl_w: np.ndarray = field(default_factory=lambda: np.zeros((1, 1)))

    @property
    def nbytes(self) -> int:
        return int(self.table.nbytes)


_PLANS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def true_depth(ens) -> int:
    """Depth of the deepest leaf, counted from the arrays (not a stored number)."""
    left = np.asarray(ens.left, np.int64)
    right = np.asarray(ens.right, np.int64)
    frontier = np.asarray(ens.node_offsets[:-1], np.int64)
    depth = 0
    for _ in range(len(left) + 1):
        kids = np.concatenate([left[frontier], right[frontier]])
        kids = kids[kids >= 0]
        if len(kids) == 0:
            return depth
        frontier = kids
        depth += 1
    raise ExplainerError("The flattened trees hold a cycle; the model cannot be walked.")


def _map(fn, items, n_jobs: int, work: float) -> None:
    if n_jobs == 1 or len(items) <= 1 or work < MIN_PARALLEL_WORK:
        for it in items:
            fn(it)
        return
    with ThreadPoolExecutor(max_workers=n_jobs) as pool:
        for _ in pool.map(fn, items):
            pass


def _build_plan(ts, nd: dict, depth: int, masked: np.ndarray, bg, use_tables: bool) -> _Plan:
    """Leaf tables of one missing pattern (path-dependent K2 or interventional F/G/E)."""
    ens = ts.ensemble
    n_nodes, n_trees = ens.n_nodes, ens.n_trees
    iv = ts.mode == "interventional"
    nrows = 6 if iv else 1
    i64 = lambda n: np.zeros(n, np.int64)  # noqa: E731
    all_trees = np.arange(n_trees, dtype=np.int64)
    node_bit = np.full(n_nodes, -1, np.int64)
    leaf_m = np.full(n_nodes, -1, np.int64)
    leaf_lw = np.ones(n_nodes)
    leaf_foff = i64(n_nodes)
    args = (nd["feature"], nd["left"], nd["right"], nd["cover"], nd["node_offsets"], masked, depth)
    K.leaf_paths(*args, False, leaf_foff, node_bit, leaf_m, leaf_lw, i64(0), np.zeros(0))
    if not use_tables:
        return _with_points(_Plan(masked, i64(0), all_trees, node_bit, leaf_m, i64(n_nodes), i64(1),
                                  np.zeros(1), i64(n_nodes), np.zeros((nrows, 1)), 0), nd, iv)
    is_leaf = nd["left"] < 0
    m_leaf = np.where(is_leaf, leaf_m, 0)
    leaf_foff[:] = np.cumsum(m_leaf) - m_leaf
    flat_feat = i64(int(m_leaf.sum()))
    flat_z = np.zeros(len(flat_feat))
    K.leaf_paths(*args, True, leaf_foff, node_bit, leaf_m, leaf_lw, flat_feat, flat_z)

    starts = nd["node_offsets"][:-1]
    tree_of_node = np.repeat(np.arange(n_trees), np.diff(nd["node_offsets"]))
    max_m = np.maximum.reduceat(m_leaf, starts)
    has_pairs = is_leaf & (m_leaf >= 2)
    entries = np.where(has_pairs, np.left_shift(1, np.minimum(m_leaf, 40)), 0)
    tree_entries = np.add.reduceat(entries, starts)
    ok = (max_m <= MAX_TABLE_BITS) & (tree_entries <= MAX_TREE_TABLE_ENTRIES)
    if not iv:
        # gamma = (1 - z) / z needs z > 0: such trees take the direct path
        zero_leaf = np.zeros(n_nodes, bool)
        zero_leaf[np.repeat(np.arange(n_nodes), m_leaf)[flat_z == 0]] = True
        ok &= ~np.logical_or.reduceat(zero_leaf, starts)
    budget = int(ts.max_table_mb * 2**20 / 8 / nrows)
    used = np.cumsum(np.where(ok, tree_entries, 0))
    ok &= used <= budget
    table_trees = np.flatnonzero(ok).astype(np.int64)
    direct_trees = np.flatnonzero(~ok).astype(np.int64)

    in_table = has_pairs & ok[tree_of_node]
    sizes = np.where(in_table, entries, 0)
    leaf_toff = np.cumsum(sizes) - sizes
    total = int(sizes.sum())
    table = np.zeros((nrows, max(total, 1)))
    leaves = np.flatnonzero(in_table).astype(np.int64)
    flat_coef = np.zeros(len(flat_z))
    bits = int(max(2, m_leaf[leaves].max())) if len(leaves) else 0
    n_jobs = ts.n_jobs
    if len(leaves):
        if iv:
            c2, c3, c4 = IK.iv_interaction_weights(bits)
            counts = np.zeros(table.shape[1])
            # table leaves only: other trees' leaves have no entries (leaf_m < 2 skips)
            lm = np.where(in_table | ~is_leaf, leaf_m, 0)
            chunks = [a for a in np.array_split(table_trees, n_jobs * 4) if len(a)]
            _map(lambda tr: IK.build_iv_interaction_tables(
                tr, nd["node_offsets"], nd["feature"], nd["threshold"], nd["left"], nd["right"],
                nd["missing_left"], nd["cat_start"], nd["cat_bits"], node_bit, lm, leaf_toff, bg, depth, c2, c3, c4, counts, table),
                chunks, n_jobs, float(len(bg)) * len(leaves) + total * 4)
        else:
            z = flat_z
            np.divide(1.0 - z, z, out=flat_coef, where=z > 0)
            w2 = IK.pd_interaction_weights(bits)
            chunks = [a for a in np.array_split(leaves, n_jobs * 4) if len(a)]
            _map(lambda lv: K.build_pd_tables(lv, leaf_m, leaf_foff, flat_z, leaf_lw, leaf_toff,
                                              w2, bits, table), chunks, n_jobs, float(total) * bits)
        # single-output trees: fold the leaf value into the tables
        col = nd["tree_output"][tree_of_node[leaves]]
        single = (col >= 0) | (ens.n_raw == 1)
        v0 = np.where(single, nd["value"][leaves, np.maximum(col, 0)], 1.0)
        table[:, :total] *= np.repeat(v0, sizes[leaves])[None, :]
    return _with_points(_Plan(masked, table_trees, direct_trees, node_bit, leaf_m, leaf_foff, flat_feat,
                              flat_coef, leaf_toff, table, bits), nd, iv)


def _with_points(plan: _Plan, nd: dict, iv: bool) -> _Plan:
    """The quadrature points of the trees without tables (path-dependent: the linear walk)."""
    if iv or not len(plan.direct_trees):
        return plan
    plan.tree_points, plan.gl_t, plan.gl_w = LK.tree_quadrature(plan.leaf_m, nd["left"], nd["node_offsets"],
                                                                plan.direct_trees)
    return plan


def _plan_for(ts, nd, depth, masked, n_rows, bg, bg_key) -> _Plan:
    if masked.any():
        return _build_plan(ts, nd, depth, masked, bg, n_rows >= MIN_PATTERN_ROWS)
    cache = _PLANS.setdefault(ts, {})
    key = (ts.mode, bg_key, float(ts.max_table_mb))
    if key not in cache:
        cache.clear()  # one background (and table budget) at a time
        cache[key] = _build_plan(ts, nd, depth, masked, bg, True)
    return cache[key]


def _run_rows(ts, nd, depth, plan: _Plan, Xp, rows, bg, out, tick) -> None:
    ens = ts.ensemble
    iv = ts.mode == "interventional"
    n, p = Xp.shape
    block = _row_block(p, ens.n_raw)
    common = (nd["node_offsets"], nd["feature"], nd["threshold"], nd["left"], nd["right"],
              nd["missing_left"], nd["cat_start"], nd["cat_bits"])
    if len(plan.direct_trees) and iv:
        c2, c3, c4 = IK.iv_interaction_weights(depth + 1)

    def work(chunk):
        if len(plan.table_trees):
            if iv:
                IK.iv_table_rows(Xp, chunk, plan.table_trees, *common, plan.node_bit, plan.leaf_m,
                                 plan.leaf_foff, plan.flat_feat, plan.leaf_toff, plan.table,
                                 nd["value"], nd["tree_output"], depth, block, out)
            else:
                IK.pd_table_rows(Xp, chunk, plan.table_trees, *common, plan.node_bit, plan.leaf_m,
                                 plan.leaf_foff, plan.flat_feat, plan.flat_coef, plan.leaf_toff,
                                 plan.table[0], nd["value"], nd["tree_output"], depth,
                                 max(plan.bits, 1), block, out)
        if len(plan.direct_trees):
            if iv:
                IK.iv_direct_rows(Xp, chunk, plan.direct_trees, *common, plan.masked, bg,
                                  nd["value"], nd["tree_output"], depth, c2, c3, c4, out)
            else:
                LK.linear_pd_interaction_rows(Xp, chunk, plan.direct_trees, *common, nd["cover"], plan.masked,
                                              nd["value"], nd["tree_output"], depth, plan.tree_points, plan.gl_t,
                                              plan.gl_w, out)
        return len(chunk)

    per, threads = _row_chunks(ts, len(rows), p)
    chunks = [rows[s : s + per] for s in range(0, len(rows), per)]
    if threads == 1:
        for ch in chunks:
            tick(work(ch))
        return
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for done in pool.map(work, chunks):
            tick(done)


def _row_block(p: int, k: int) -> int:
    """Rows a kernel call accumulates at once: BLOCK_FLOATS of p x p x k values, 8 to 128."""
    return int(min(128, max(8, BLOCK_FLOATS // (p * p * k))))


def _row_chunks(ts, n_rows: int, p: int) -> tuple[int, int]:
    """(rows per thread task, threads) of :func:`_run_rows` on ``n_rows`` rows of ``p`` features:
    one thread below MIN_PARALLEL_WORK updates or for one task."""
    nd = ts._nodes
    depth = true_depth(ts.ensemble)
    per = max(_row_block(p, ts.ensemble.n_raw), min(CHUNK_ROWS, -(-int(n_rows) // ts.n_jobs)))
    tasks = -(-int(n_rows) // per)
    leaves = int((nd["left"] < 0).sum())
    work_est = float(n_rows) * leaves * max(depth, 1) ** 2 / 2
    if ts.n_jobs == 1 or tasks <= 1 or work_est < MIN_PARALLEL_WORK:
        return per, 1
    return per, min(ts.n_jobs, tasks)


def interaction_threads(ts, n_rows: int) -> int:
    """Threads :meth:`TreeShap.interactions` shares ``n_rows`` rows (of one missing pattern) among:
    a cost measured on a few rows, on one thread, is that many times what a large call's rows take."""
    return _row_chunks(ts, n_rows, int(ts.ensemble.n_features))[1]


# ------------------------------------------------------------------ tree
def tree_interactions(
    ts,
    X,
    missing=None,
    *,
    nan_is_missing: bool | str = "auto",
    progress: Progress | None = None,
    random_state: int | None = 0,
) -> ShapInteractionResult:
    """SHAP interaction values of rows of X for a :class:`~explainers.shap.TreeShap`.

    Called as ``TreeShap(model, ...).interactions(X, missing)``; see that
    method for the parameters. The explainer's mode, output and class choice
    apply as in :meth:`~explainers.shap.TreeShap.explain`.
    """
    func = "TreeShap.interactions"
    progress = check_progress(progress, func)
    seed = check_random_state(random_state, func)
    res = ts.explain(X, missing, nan_is_missing=nan_is_missing, random_state=seed)
    adapter, ens = ts.adapter, ts.ensemble
    frame, mask = res.data, res.missing
    Xp = tree_inputs(ens, frame, "X")
    n, p = Xp.shape
    iv = ts.mode == "interventional"
    bg = bg_key = None
    if iv:
        bg_frame, _ = prepare_background(adapter, ts.background, frame, random_state=seed,
                                         func=ts._func, warn_large=False)
        bg = tree_inputs(ens, bg_frame, "The background")
        bg_key = (bg.shape, hash(bg.tobytes()))
    nd = ts._nodes
    depth = true_depth(ens)
    k = ens.n_raw
    out = np.zeros((n, p, p, k))
    state = {"done": 0}

    def tick(m: int) -> None:
        state["done"] += m
        if progress is not None:
            progress(state["done"], n)

    n_table = n_direct = 0
    groups = pattern_groups(mask) if mask.any() else [(np.arange(p), np.arange(n))]
    for present, rows in groups:
        masked = np.ones(p, dtype=bool)
        masked[present] = False
        if len(present) < 2:  # no pairs: only the diagonal, from phi
            tick(len(rows))
            continue
        plan = _plan_for(ts, nd, depth, masked, len(rows), bg, bg_key)
        n_table = max(n_table, len(plan.table_trees))
        n_direct = max(n_direct, len(plan.direct_trees))
        _run_rows(ts, nd, depth, plan, Xp, rows.astype(np.int64), bg, out, tick)

    inter = out + out.transpose(0, 2, 1, 3)
    del out
    inter *= ens.scale
    ci = adapter.class_index
    if ci is not None:
        inter = inter[..., ci : ci + 1]
    kk = inter.shape[3]
    phi = res.values.reshape(n, p, kk)
    inter = _finish(inter, phi, mask)
    multi = adapter.n_outputs > 1
    params = {
        **res.params,
        "trees_with_tables": int(n_table),
        ("trees_direct" if ts.mode == "interventional" else "trees_linear"): int(n_direct),
        "interaction_table_mb": round(
            sum(pl.nbytes for pl in _PLANS.get(ts, {}).values()) / 2**20, 3),
    }
    params.pop("trees_textbook", None)
    params.pop("table_mb", None)
    if ts.mode == "interventional":
        params.pop("trees_linear", None)  # (the SHAP values' count; no walk here)
    return ShapInteractionResult(
        values=inter if multi else inter[..., 0],
        base_values=res.base_values,
        predictions=res.predictions,
        feature_names=list(res.feature_names),
        missing=mask,
        method="tree",
        output=res.output,
        output_names=list(res.output_names),
        data=frame,
        params=params,
    )


# ----------------------------------------------------------------- exact
def exact_interactions(
    es,
    X,
    missing=None,
    *,
    nan_is_missing: bool | str = "auto",
    progress: Progress | None = None,
    random_state: int | None = 0,
) -> ShapInteractionResult:
    """SHAP interaction values of the interventional game, from all coalitions.

    Called as ``ExactShap(model, background).interactions(X, missing)``; see
    that method for the parameters. ``phi`` (and so the diagonal) is computed
    exactly as :meth:`~explainers.shap.ExactShap.explain` computes it.
    """
    func = "ExactShap.interactions"
    progress = check_progress(progress, func)
    seed = check_random_state(random_state, func)
    adapter = es.adapter
    frame = as_frame(adapter, X)
    nan_is_missing, nan_reason = resolve_nan_is_missing(adapter, frame, nan_is_missing)
    mask = missing_mask(adapter, frame, missing, nan_is_missing)
    n, p = frame.shape
    M_max = int((~mask).sum(axis=1).max())
    if M_max > MAX_EXACT_INTERACTION_FEATURES:
        raise InvalidParameterError(
            f"ExactShap.interactions plays all 2**M coalitions and takes at most "
            f"{MAX_EXACT_INTERACTION_FEATURES} features; these rows have {M_max}. For tree "
            "models use Tree SHAP: TreeShap(model).interactions(X) is exact and fast for any "
            "number of features. Otherwise mark features missing to explain fewer at once."
        )
    bg, source = prepare_background(adapter, es.background, frame, random_state=seed, func=es._func)
    evals = 2**M_max * len(bg)
    if evals > es.max_evals:
        raise InvalidParameterError(
            f"ExactShap.interactions needs 2**{M_max} coalitions x {len(bg)} background rows = "
            f"{evals:,} model evaluations per explained row, more than max_evals="
            f"{es.max_evals:,}. For tree models use Tree SHAP: TreeShap(model).interactions(X) "
            "is exact and fast. Otherwise pass a smaller background or raise max_evals."
        )
    game = CoalitionGame(adapter, bg, es.batch_rows)
    base = game.base()
    k = len(base)
    phi = np.zeros((n, p, k))
    inter = np.zeros((n, p, p, k))
    preds = np.empty((n, k))
    done = 0
    for present, rows in pattern_groups(mask):
        M = len(present)
        if M == 0:
            preds[rows] = base
            done += len(rows)
            if progress is not None:
                progress(done, n)
            continue
        Z = lift(subsets_matrix(M), present, p)
        W = shapley_weight_matrix(M)
        codes = np.arange(2**M, dtype=np.int64)
        if M >= 2:
            W1 = shapley_weight_matrix(M - 1)
        for chunk in row_chunks(rows, game.rows_per_chunk(len(Z))):
            v = game.values(frame.iloc[chunk], Z)  # (r, 2**M, k)
            phi[np.ix_(chunk, present)] = np.einsum("rsk,si->rik", v, W)
            preds[chunk] = v[:, -1, :]
            for a in range(M if M >= 2 else 0):
                # Phi_a. = 1/2 the Shapley values of the game D_a(S) = v(S+a) - v(S)
                # over the other M-1 players (codes without bit a, in binary order)
                without = codes[((codes >> a) & 1) == 0]
                dv = v[:, without | (1 << a), :] - v[:, without, :]
                others = np.delete(present, a)
                part = 0.5 * np.einsum("rsk,si->rik", dv, W1)
                inter[chunk[:, None], present[a], others[None, :], :] = part
            done += len(chunk)
            if progress is not None:
                progress(done, n)
    inter = 0.5 * (inter + inter.transpose(0, 2, 1, 3))
    inter = _finish(inter, phi, mask)
    multi = adapter.n_outputs > 1
    params = {
        "n_background": len(bg),
        "background": source,
        "nan_is_missing": bool(nan_is_missing), "nan_reason": nan_reason,
        "class_index": adapter.class_index,
        "batch_rows": es.batch_rows,
        "evaluation": game.evaluation,
        "max_evals": es.max_evals,
    }
    return ShapInteractionResult(
        values=inter if multi else inter[..., 0],
        base_values=shape_output(np.repeat(base[None, :], n, axis=0), multi),
        predictions=shape_output(preds, multi),
        feature_names=list(adapter.feature_names),
        missing=mask,
        method="exact",
        output=output_label(adapter),
        output_names=list(adapter.output_names),
        data=frame.copy(),
        params=params,
    )
