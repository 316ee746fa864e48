"""Exact Tree SHAP for scikit-learn tree models, compiled with numba.

:class:`TreeShap` explains what the trees themselves add up to (shap's
``model_output="raw"``): the regression value, the class probabilities of a
forest, the log-odds (margin) of a boosting classifier. Two value functions:

* ``mode="path_dependent"``: a missing feature is integrated out by following
  both children of its splits, weighted by the training cover (Lundberg et al.
  2020, Algorithm 2; the seed's worked example ``f_S = 10/80 * 27 + 70/80 * 39``).
  No background data.
* ``mode="interventional"``: a missing feature takes the values of background
  rows, ``f_S(x_S) = mean_b f(x_S, b_C)`` (eq. 16 of the SHAP seed), the same game
  as :class:`~explainers.shap.ExactShap` with that background.

Most trees go through per-leaf tables over the subsets of the leaf's path
features, built once per model (see :mod:`explainers.shap._tree_kernels`);
trees whose tables would be too large fall back, one tree at a time, to the
textbook recursion. Rows run in parallel threads (the kernels release the GIL).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from ..description import describe
from ..trees import TreeEnsemble, flatten_model
from ..trees.library import native_form
from ..trees.inputs import tree_inputs
from ..errors import InvalidModelError, OutOfReachError, param_error
from ..model import ModelAdapter
from . import _linear_kernels as LK
from . import _tree_kernels as K
from ._common import (
    resolve_nan_is_missing,
    Progress,
    as_frame,
    check_background_columns,
    check_int,
    check_progress,
    check_random_state,
    make_adapter,
    missing_mask,
    output_label,
    pattern_groups,
    prepare_background,
    shape_output,
)
from .result import ShapResult

__all__ = ["TreeShap", "MODES", "ALGORITHMS", "pd_tree_work"]

MODES = ("path_dependent", "interventional")
#: how trees are walked: the cost model's choice per tree, leaf tables wherever they
#: fit, the linear walk everywhere (path-dependent), or the textbook recursion
ALGORITHMS = ("auto", "tables", "linear", "textbook")
#: cost of one leaf-table look-up (a random read) in steps of the linear walk (one
#: node, one quadrature point, one row): at least this, and TABLE_LOOKUP_SLOPE * m - 0.3
#: for a table over m features (bigger tables miss the cache); measured by
#: benchmarks/treeshap_depth.py --calibrate
TABLE_LOOKUP_STEPS = 1.5
TABLE_LOOKUP_SLOPE = 0.45
#: cost of building one table entry, in the same steps
TABLE_BUILD_STEPS = 14.0
#: a cached plan is rebuilt for a call with this many times the rows it was costed for
#: (tables that did not pay for a few rows may pay for many)
REPLAN_ROWS_FACTOR = 8
#: most distinct features on one leaf's path for which a leaf table is built
MAX_TABLE_BITS = 14
#: largest table of one tree, in entries (8 bytes each, per table column)
MAX_TREE_TABLE_ENTRIES = 2**18
#: rows that share a missing pattern before that pattern gets its own tables;
#: below it the rows go through the textbook recursion (no table build)
MIN_PATTERN_ROWS = 16
#: rows per thread task (a multiple of the kernels' row block)
CHUNK_ROWS = 8 * K.BLOCK
#: below this many (row, leaf) visits a call stays on one thread: starting
#: threads costs more than it saves on small work
MIN_PARALLEL_WORK = 2_000_000


@dataclass(eq=False)
class _Plan:
    """Everything the kernels need for one missing-feature pattern."""

    masked: np.ndarray  # (p,) bool
    table_trees: np.ndarray  # trees done with leaf tables
    text_trees: np.ndarray  # trees done with the textbook recursion
    node_bit: np.ndarray
    leaf_m: np.ndarray
    leaf_foff: np.ndarray
    flat_feat: np.ndarray
    flat_coef: np.ndarray
    leaf_toff: np.ndarray
    leaf_lw: np.ndarray
    table: np.ndarray  # (n_columns, n_entries): K, or R0 R1 G
    pair: np.ndarray  # (n_nodes,) uint8: parents whose two leaves share merged tables
    # path-dependent trees done by the linear walk, their quadrature points and the
    # Gauss-Legendre rules (see _linear_kernels.gauss_points)
    linear_trees: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tree_points: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    gl_t: np.ndarray = field(default_factory=lambda: np.zeros((1, 1)))
    gl_w: np.ndarray = field(default_factory=lambda: np.zeros((1, 1)))
    n_rows: int = 0  # rows the cost model weighed the tables' build against

    @property
    def nbytes(self) -> int:
        return int(self.table.nbytes)


def pd_tree_work(nodes: dict, leaf_m: np.ndarray, pair: np.ndarray, n_raw: int):
    """``(table_rows, table_build, linear_rows)`` per tree, in steps of the linear walk:
    the cost model that gives a path-dependent tree leaf tables or the linear walk.

    Tables: a look-up per path feature per leaf and row (one per merged sibling
    pair), whose cost grows with the table's size (cache misses: ``s(m)`` steps),
    plus the walk; building them, once, ``TABLE_BUILD_STEPS`` per entry. Linear:
    per node and row, the quadrature points plus the point ``t = 1``, once down
    and once up per output column. Steps calibrated by benchmarks/treeshap_depth.py.
    """
    left = nodes["left"]
    starts = nodes["node_offsets"][:-1]
    is_leaf = left < 0
    m = np.where(is_leaf, np.maximum(leaf_m, 1), 0).astype(np.float64)
    entries = np.where(is_leaf, 2.0 ** np.minimum(np.maximum(leaf_m, 0), 40), 0.0)
    right_of_pair = nodes["right"][np.flatnonzero(pair)]
    m[right_of_pair] = 0.0  # a merged pair: the left leaf's look-ups serve both
    entries[nodes["left"][np.flatnonzero(pair)]] *= 2.0
    entries[right_of_pair] *= 2.0
    lookup = m * np.maximum(TABLE_LOOKUP_STEPS, TABLE_LOOKUP_SLOPE * m - 0.3)
    max_m = np.maximum.reduceat(np.where(is_leaf, leaf_m, 0), starts)
    n_nodes = np.diff(nodes["node_offsets"]).astype(np.float64)
    single = nodes["tree_output"] >= 0
    outputs = np.where(single | (n_raw == 1), 1.0, float(n_raw))
    table_rows = np.add.reduceat(lookup, starts) * outputs + n_nodes
    table_build = TABLE_BUILD_STEPS * np.add.reduceat(entries, starts)
    points = np.maximum(1, -(-max_m // 2)) + 1.0
    linear_rows = n_nodes * points * (1.0 + outputs)
    return table_rows, table_build, linear_rows


def _n_jobs(n_jobs: int | None) -> int:
    if n_jobs is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - not on Linux
            return max(1, os.cpu_count() or 1)
    return int(n_jobs)


class TreeShap:
    """Exact SHAP values of a scikit-learn tree model, path-dependent or interventional.

    Parameters
    ----------
    model : estimator or ModelAdapter
        A fitted DecisionTree*, ExtraTree*, RandomForest*, ExtraTrees*,
        GradientBoosting* or HistGradientBoosting* model (regressor or
        classifier, binary or multiclass, single output; trees trained on data
        with NaN included).
    background : DataFrame or array-like of shape (n_background, n_features), default=None
        Rows that stand in for missing features in ``mode="interventional"``;
        ``None`` draws a seeded sample of up to 100 complete rows of the X passed
        to :meth:`explain`. Not used in path-dependent mode.
    mode : {"path_dependent", "interventional"}, default="path_dependent"
        The value function: cover-weighted (no data needed) or the mean over
        background rows.
    output : {"auto", "raw", "proba", "log_odds"}, default="auto"
        ``"auto"`` and ``"raw"`` explain what the trees add up to: the
        regression value, the class probabilities of a forest or single tree,
        the margin (log-odds) of a boosting classifier. ``"proba"`` for forests
        and trees means the same; for a boosting classifier in
        ``mode="interventional"`` it explains the probabilities exactly, by the
        game of each (row, background row) pair (see
        :mod:`explainers.shap._proba_game`: exponential only in the features on
        which the two rows take different branches, at most 16). ``"log_odds"``
        is accepted for binary boosting (its margin).
    class_index : int, default=None
        Explain only this output column.
    feature_names : sequence of str, default=None
        Feature names when the model does not carry them.
    n_jobs : int, default=None
        Threads over rows (and over trees when building tables); ``None`` uses
        every available core.
    max_table_mb : float, default=64
        Memory for the leaf tables of one missing pattern. Trees beyond it (and
        trees whose paths hold more than 14 distinct features) use the
        linear walk (path-dependent) or the textbook recursion (interventional),
        which are exact too.
    algorithm : {"auto", "tables", "linear", "textbook"}, default="auto"
        How the trees are walked. ``"auto"``: per tree, leaf tables or the
        linear walk (:mod:`explainers.shap._linear_kernels`: cost linear in
        depth), whichever the cost model (:func:`pd_tree_work`) finds cheaper;
        interventional trees take tables where they fit. ``"tables"``: tables
        wherever they fit. ``"linear"``: the linear walk for every tree
        (path-dependent only). ``"textbook"``: the recursion of Lundberg et al.
        for every tree. All give the same values to rounding.

    Attributes
    ----------
    ensemble : TreeEnsemble
        The flattened trees.

    See Also
    --------
    ExactShap : the interventional definition for any model (2**p coalitions).

    Notes
    -----
    Features marked missing (``missing=``, or NaN while ``nan_is_missing``) are
    left out of the game: their attribution is exactly 0 and
    ``base_values + values.sum(1)`` equals the prediction with them
    integrated out. With ``nan_is_missing=False`` a NaN is a value and follows
    each split's learned missing-value direction, as ``predict`` does.

    Examples
    --------
    >>> res = TreeShap(forest).explain(X_test[:5])
    >>> res.check_additivity()
    >>> TreeShap(forest, X_train[:100], mode="interventional").explain(X_test[:5], ["age"])
    """

    method = "tree"
    _func = "TreeShap"

    def __init__(
        self,
        model,
        background=None,
        mode: str = "path_dependent",
        *,
        output: str = "auto",
        class_index: int | None = None,
        feature_names: Sequence[str] | None = None,
        n_jobs: int | None = None,
        max_table_mb: float = 64.0,
        algorithm: str = "auto",
    ):
        if mode not in MODES:
            raise param_error("mode", "TreeShap", f"one of {list(MODES)}", mode)
        if algorithm not in ALGORITHMS:
            raise param_error("algorithm", "TreeShap", f"one of {list(ALGORITHMS)}", algorithm)
        if algorithm == "linear" and mode == "interventional":
            raise param_error("algorithm", "TreeShap in mode='interventional'",
                              "'auto', 'tables' or 'textbook' (the linear walk plays the path-dependent game)",
                              algorithm)
        if n_jobs is not None:
            check_int(n_jobs, "n_jobs", "TreeShap", 1)
        number = isinstance(max_table_mb, (int, float)) and not isinstance(max_table_mb, bool)
        if not number or not max_table_mb >= 0:
            raise param_error("max_table_mb", "TreeShap", "a number >= 0", max_table_mb)
        # a ModelAdapter holds the native form already; a library object is read here
        est = model.model if isinstance(model, ModelAdapter) else native_form(model)
        model = model if isinstance(model, ModelAdapter) else est
        if not describe(est).tree:
            raise InvalidModelError(
                f"TreeShap explains tree models (scikit-learn's DecisionTree, RandomForest, "
                f"ExtraTrees, GradientBoosting, HistGradientBoosting; XGBoost, LightGBM and CatBoost "
                f"models; pipelines that fold into their trees); got {type(est).__name__}. "
                "Use ExactShap or KernelShap, or explain(method='auto')."
            )
        ens = flatten_model(est)
        #: the probabilities of a boosting classifier: the exact game of each background pair
        self.probability_game = output == "proba" and ens.transform in ("sigmoid", "softmax")
        if self.probability_game and mode != "interventional":
            raise param_error(
                "output", f"TreeShap for {type(est).__name__} in mode={mode!r}",
                "'auto' or 'raw' (the path-dependent game explains the margin its trees add up to; "
                "probabilities are explained exactly in mode='interventional', against a background)",
                output)
        adapter_output = "proba" if self.probability_game else self._adapter_output(est, ens, output)
        self.adapter = make_adapter(
            model, feature_names=feature_names, output=adapter_output, class_index=class_index
        )
        if self.adapter._n_cols != (ens.n_outputs if self.probability_game else ens.n_raw):  # pragma: no cover - a flatten/adapter mismatch
            raise InvalidModelError(
                f"TreeShap cannot line up the {ens.n_raw} tree outputs of this "
                f"{type(est).__name__} with its {self.adapter._n_cols} prediction columns."
            )
        check_background_columns(self.adapter, background)
        self.model = est
        self.ensemble: TreeEnsemble = ens
        self.mode = mode
        self.output = output
        self.background = background
        self.n_jobs = _n_jobs(n_jobs)
        self.max_table_mb = float(max_table_mb)
        self.algorithm = algorithm
        # contiguous int64 / float64 copies, so every kernel compiles for one signature
        self._nodes = dict(
            feature=np.ascontiguousarray(ens.feature, np.int64),
            threshold=np.ascontiguousarray(ens.threshold, np.float64),
            left=np.ascontiguousarray(ens.left, np.int64),
            right=np.ascontiguousarray(ens.right, np.int64),
            missing_left=np.ascontiguousarray(ens.missing_go_left, np.int64),
            cat_start=np.ascontiguousarray(ens.cat_start, np.int64),
            cat_bits=np.ascontiguousarray(ens.cat_bits, np.int64),
            cover=np.ascontiguousarray(ens.cover, np.float64),
            value=np.ascontiguousarray(ens.value, np.float64),
            node_offsets=np.ascontiguousarray(ens.node_offsets, np.int64),
            tree_output=np.ascontiguousarray(ens.tree_output, np.int64),
        )
        self._n_leaves = int((ens.left < 0).sum())
        self._tree_of_node = np.repeat(np.arange(ens.n_trees), np.diff(ens.node_offsets))
        self._leaves_per_tree = np.bincount(self._tree_of_node[ens.left < 0], minlength=ens.n_trees)
        self._plans: dict[bytes, _Plan] = {}  # missing pattern -> tables (this background)
        self._bg_key = None

    # ------------------------------------------------------------ model checks
    @staticmethod
    def supports(model) -> bool:
        """True if TreeShap can take this model (used by :func:`~explainers.shap.explain`)."""
        est = model.model if isinstance(model, ModelAdapter) else model
        # multi-output regressors flatten to one raw column per target; multi-output
        # classifiers (a list of class arrays) are refused by the adapter
        return describe(est).tree

    @staticmethod
    def _adapter_output(est, ens: TreeEnsemble, output: str) -> str:
        """The ModelAdapter output whose columns are the trees' own (raw) output."""
        outputs = ("auto", "raw", "proba", "log_odds")
        if output not in outputs:
            raise param_error("output", "TreeShap", f"one of {list(outputs)}", output)
        from sklearn.base import is_classifier

        clf = is_classifier(est)
        forest_like = ens.transform == "identity" and clf  # averages class fractions
        if output == "proba" and not forest_like:
            raise param_error(
                "output",
                f"TreeShap for {type(est).__name__}",
                "'auto' or 'raw' (its trees add up to a margin, and probabilities are a "
                "nonlinear function of it; use ExactShap or KernelShap to explain them)",
                output,
            )
        if output == "log_odds" and ens.transform != "sigmoid":
            raise param_error(
                "output",
                f"TreeShap for {type(est).__name__}",
                "'auto' or 'raw' (only a binary boosting classifier's trees add up to log-odds; "
                "use ExactShap or KernelShap for other outputs)",
                output,
            )
        # a forest has no decision_function, so "raw" gives its probabilities
        return "raw"

    # ------------------------------------------------------------------ plans
    def _budget_entries(self, ncols: int) -> int:
        return int(self.max_table_mb * 2**20 / 8 / ncols)

    def _build_plan(self, masked: np.ndarray, bg: np.ndarray | None, use_tables: bool, n_rows: int) -> _Plan:
        """Leaf tables for one missing pattern (``masked``) on the trees the cost model
        gives them; the other trees go to the linear walk (path-dependent) or the
        textbook recursion (interventional, or ``algorithm="textbook"``)."""
        nd = self._nodes
        ens = self.ensemble
        n_trees = ens.n_trees
        iv = self.mode == "interventional"
        ncols = 3 if iv else 1
        i64 = lambda n: np.zeros(n, np.int64)  # noqa: E731
        if not use_tables or self.algorithm in ("linear", "textbook"):
            plan = _Plan(masked, i64(0), i64(0), i64(1), i64(1), i64(1), i64(1), np.zeros(1), i64(1),
                         np.zeros(1), np.zeros((ncols, 1)), np.zeros(1, np.uint8))
            return self._with_walks(plan, np.arange(n_trees, dtype=np.int64), self._leaf_counts(masked))
        node_bit, leaf_m, leaf_lw, leaf_foff, flat_feat, flat_z = self._leaf_paths(masked)
        is_leaf = nd["left"] < 0
        tree_of_node = self._tree_of_node
        ok, entries, parents = self._table_choice(leaf_m, node_bit, flat_z, ncols, n_rows)
        table_trees = np.flatnonzero(ok).astype(np.int64)
        in_table = is_leaf & ok[tree_of_node]
        sizes = np.where(in_table, entries, 0)
        leaf_toff = np.cumsum(sizes) - sizes
        total = int(sizes.sum())
        table = np.zeros((ncols, max(total, 1)))
        leaves = np.flatnonzero(in_table).astype(np.int64)
        flat_coef = np.zeros(len(flat_z))
        if len(leaves):
            bits = int(min(MAX_TABLE_BITS, max(1, leaf_m[leaves].max())))
            if iv:
                c, cp = K.shapley_iv_weights(bits)
                counts = np.zeros(table.shape[1])
                # trees split among threads: each writes only its own leaves' entries
                chunks = [a for a in np.array_split(table_trees, self.n_jobs * 4) if len(a)]
                build_work = float(len(bg)) * len(leaves) + total
                self._map(
                    lambda tr: K.build_iv_tables(
                        tr, nd["node_offsets"], nd["feature"], nd["threshold"], nd["left"],
                        nd["right"], nd["missing_left"], nd["cat_start"], nd["cat_bits"], node_bit, leaf_m, leaf_toff, bg,
                        int(ens.max_depth), c, cp, counts, table, leaf_lw),
                    chunks,
                    build_work,
                )
            else:
                z = flat_z
                np.divide(1.0 - z, z, out=flat_coef, where=z > 0)
                w = K.shapley_pd_weights(bits)
                chunks = [a for a in np.array_split(leaves, self.n_jobs * 4) if len(a)]
                self._map(
                    lambda lv: K.build_pd_tables(lv, leaf_m, leaf_foff, flat_z, leaf_lw,
                                                 leaf_toff, w, bits, table),
                    chunks,
                    float(total) * bits,
                )
            # single-output trees: fold each leaf's value into its table, saving the
            # kernel a multiplication per look-up (multi-output trees keep value rows)
            col = nd["tree_output"][tree_of_node[leaves]]
            single = (col >= 0) | (ens.n_raw == 1)
            v0 = np.where(single, nd["value"][leaves, np.maximum(col, 0)], 1.0)
            table[:, :total] *= np.repeat(v0, sizes[leaves])[None, :]
            leaf_lw[leaves] *= v0
        parents &= ok[tree_of_node]
        if parents.any():
            K.merge_pd_pairs(np.flatnonzero(parents).astype(np.int64), nd["left"], nd["right"], node_bit,
                             leaf_m, leaf_foff, flat_coef, leaf_toff, table)
        plan = _Plan(masked, table_trees, i64(0), node_bit, leaf_m, leaf_foff, flat_feat,
                     flat_coef, leaf_toff, leaf_lw, table, parents.astype(np.uint8))
        plan.n_rows = n_rows
        return self._with_walks(plan, np.flatnonzero(~ok).astype(np.int64), leaf_m)

    def _table_choice(self, leaf_m: np.ndarray, node_bit: np.ndarray, flat_z: np.ndarray, ncols: int,
                      n_rows: int):
        """``(ok, entries, parents)``: which trees get leaf tables (within the limits, the
        memory budget, and, path-dependent, where the cost model finds them cheaper than
        the linear walk), each leaf's table entries, and the parents of merged leaf pairs."""
        nd = self._nodes
        ens = self.ensemble
        iv = self.mode == "interventional"
        is_leaf = nd["left"] < 0
        m_leaf = np.where(is_leaf, leaf_m, 0)
        starts = nd["node_offsets"][:-1]
        tree_of_node = self._tree_of_node
        max_m = np.maximum.reduceat(m_leaf, starts)
        # (capped: such leaves fail MAX_TABLE_BITS anyway, and 2**m must not overflow)
        entries = np.where(is_leaf, np.left_shift(1, np.minimum(m_leaf, 40)), 0)
        # path-dependent sibling leaves of a single-output tree share merged
        # tables (half the look-ups per row, twice the entries); see merge_pd_pairs
        lc, rc = nd["left"], nd["right"]
        parents = np.zeros(ens.n_nodes, bool)
        if not iv:
            single_tree = (nd["tree_output"] >= 0) | (ens.n_raw == 1)
            parents = ~is_leaf & (node_bit >= 0) & single_tree[tree_of_node]
            parents[parents] &= is_leaf[lc[parents]] & is_leaf[rc[parents]]
            entries[lc[parents]] *= 2
            entries[rc[parents]] *= 2
        tree_entries = np.add.reduceat(entries, starts)
        ok = (max_m <= MAX_TABLE_BITS) & (tree_entries <= MAX_TREE_TABLE_ENTRIES)
        if not iv:
            # a zero cover ratio would need a division by zero in the table formula
            zero_leaf = np.zeros(ens.n_nodes, bool)
            zero_leaf[np.repeat(np.arange(ens.n_nodes), m_leaf)[flat_z == 0]] = True
            ok &= ~np.logical_or.reduceat(zero_leaf, starts)
            if self.algorithm == "auto":
                table_rows, table_build, linear_rows = pd_tree_work(nd, leaf_m, parents, ens.n_raw)
                ok &= table_build / max(n_rows, 1) + table_rows <= linear_rows
        # the tables fill the memory budget in tree order; later trees fall back
        used = np.cumsum(np.where(ok, tree_entries, 0))
        ok &= used <= self._budget_entries(ncols)
        return ok, entries, parents

    def _with_walks(self, plan: _Plan, trees: np.ndarray, leaf_m: np.ndarray) -> _Plan:
        """``plan`` with ``trees`` (those without tables) given to the linear walk, or, in
        interventional mode and with ``algorithm="textbook"``, to the textbook recursion."""
        if self.mode == "interventional" or self.algorithm == "textbook":
            plan.text_trees = trees
            return plan
        plan.linear_trees = trees
        plan.tree_points, plan.gl_t, plan.gl_w = LK.tree_quadrature(
            leaf_m, self._nodes["left"], self._nodes["node_offsets"], trees)
        return plan

    def _leaf_counts(self, masked: np.ndarray) -> np.ndarray:
        """Each leaf's number of distinct unmasked path features (-1 at internal nodes)."""
        nd = self._nodes
        n_nodes = self.ensemble.n_nodes
        leaf_m = np.full(n_nodes, -1, np.int64)
        K.leaf_paths(nd["feature"], nd["left"], nd["right"], nd["cover"], nd["node_offsets"], masked,
                     int(self.ensemble.max_depth), False, np.zeros(n_nodes, np.int64),
                     np.full(n_nodes, -1, np.int64), leaf_m, np.ones(n_nodes), np.zeros(0, np.int64), np.zeros(0))
        return leaf_m

    def _leaf_paths(self, masked: np.ndarray):
        """Each leaf's path features: (node_bit, leaf_m, leaf_lw, leaf_foff, flat_feat, flat_z),
        counted in a first pass and filled in a second (see ``K.leaf_paths``)."""
        nd = self._nodes
        n_nodes = self.ensemble.n_nodes
        node_bit = np.full(n_nodes, -1, np.int64)
        leaf_m = np.full(n_nodes, -1, np.int64)
        leaf_lw = np.ones(n_nodes)
        leaf_foff = np.zeros(n_nodes, np.int64)
        args = (nd["feature"], nd["left"], nd["right"], nd["cover"], nd["node_offsets"], masked,
                int(self.ensemble.max_depth))
        K.leaf_paths(*args, False, leaf_foff, node_bit, leaf_m, leaf_lw, np.zeros(0, np.int64), np.zeros(0))
        m_leaf = np.where(nd["left"] < 0, leaf_m, 0)
        leaf_foff[:] = np.cumsum(m_leaf) - m_leaf
        flat_feat = np.zeros(int(m_leaf.sum()), np.int64)
        flat_z = np.zeros(len(flat_feat))
        K.leaf_paths(*args, True, leaf_foff, node_bit, leaf_m, leaf_lw, flat_feat, flat_z)
        return node_bit, leaf_m, leaf_lw, leaf_foff, flat_feat, flat_z

    def _plan_for(self, masked: np.ndarray, n_rows: int, bg: np.ndarray | None) -> _Plan:
        if not masked.any():
            key = masked.tobytes()
            plan = self._plans.get(key)
            replan = (plan is not None and self.algorithm == "auto" and len(plan.linear_trees) > 0
                      and n_rows >= REPLAN_ROWS_FACTOR * max(plan.n_rows, 1))
            if plan is None or replan:
                self._plans[key] = self._build_plan(masked, bg, True, n_rows)
            return self._plans[key]
        # rare patterns: building tables would cost more than the rows they serve
        return self._build_plan(masked, bg, n_rows >= MIN_PATTERN_ROWS, n_rows)

    # ------------------------------------------------------------------- runs
    def _map(self, fn, items, work: float = float("inf")) -> None:
        if self.n_jobs == 1 or len(items) <= 1 or work < MIN_PARALLEL_WORK:
            for it in items:
                fn(it)
            return
        with ThreadPoolExecutor(max_workers=self.n_jobs) as pool:
            for _ in pool.map(fn, items):
                pass

    def _run_rows(self, plan: _Plan, X: np.ndarray, rows: np.ndarray, bg, out, pred, tick) -> None:
        """Every tree's contributions to ``X[rows]`` into ``out`` and ``pred``: threads split
        the rows, or, when the rows are too few to go round, the trees (each thread then
        adds into arrays of its own, summed at the end)."""
        per = max(K.BLOCK, min(CHUNK_ROWS, -(-len(rows) // self.n_jobs)))
        chunks = [rows[s : s + per] for s in range(0, len(rows), per)]
        # rough cost: every row visits every leaf (the walks cost more per leaf)
        leaves = self._n_leaves * (1 if not len(plan.text_trees) else 8)
        if len(plan.linear_trees):
            leaves += int(self._leaves_per_tree[plan.linear_trees] @ (plan.tree_points + 1))
        if self.n_jobs == 1 or len(rows) * leaves < MIN_PARALLEL_WORK:
            for ch in chunks:
                tick(self._walk(plan, X, ch, bg, out, pred, plan))
            return
        if len(chunks) >= self.n_jobs:
            with ThreadPoolExecutor(max_workers=self.n_jobs) as pool:
                for done in pool.map(lambda ch: self._walk(plan, X, ch, bg, out, pred, plan), chunks):
                    tick(done)
            return
        Xr = np.ascontiguousarray(X[rows])
        local = np.arange(len(rows), dtype=np.int64)
        parts = [self._tree_part(plan, j, self.n_jobs) for j in range(self.n_jobs)]
        sums = [(np.zeros((len(rows),) + out.shape[1:]), np.zeros((len(rows),) + pred.shape[1:])) for _ in parts]
        with ThreadPoolExecutor(max_workers=self.n_jobs) as pool:
            list(pool.map(lambda j: self._walk(plan, Xr, local, bg, sums[j][0], sums[j][1], parts[j]),
                          range(len(parts))))
        for o, pr in sums:
            out[rows] += o
            pred[rows] += pr
        tick(len(rows))

    @staticmethod
    def _tree_part(plan: _Plan, j: int, k: int) -> _Plan:
        """The ``j``-th of ``k`` interleaved shares of ``plan``'s trees (tables unchanged)."""
        c = np.ascontiguousarray  # (strided arrays would compile the kernels once more)
        return replace(plan, table_trees=c(plan.table_trees[j::k]), text_trees=c(plan.text_trees[j::k]),
                       linear_trees=c(plan.linear_trees[j::k]), tree_points=c(plan.tree_points[j::k]))

    def _walk(self, plan: _Plan, X, chunk, bg, out, pred, trees: _Plan) -> int:
        """The rows ``chunk`` through the trees of ``trees`` (a share of ``plan``'s)."""
        nd = self._nodes
        md = int(self.ensemble.max_depth)
        iv = self.mode == "interventional"
        if len(trees.table_trees):
            K.table_rows(
                X, chunk, trees.table_trees, nd["node_offsets"], nd["feature"],
                nd["threshold"], nd["left"], nd["right"], nd["missing_left"], nd["cat_start"], nd["cat_bits"],
                plan.node_bit, plan.leaf_m, plan.leaf_foff, plan.flat_feat, plan.flat_coef, plan.leaf_toff,
                plan.leaf_lw, plan.table[0], plan.table[min(1, len(plan.table) - 1)],
                plan.table[-1], iv, plan.pair, nd["value"], nd["tree_output"], md, out, pred)
        if len(trees.linear_trees):
            LK.linear_pd_rows(
                X, chunk, trees.linear_trees, nd["node_offsets"], nd["feature"], nd["threshold"],
                nd["left"], nd["right"], nd["missing_left"], nd["cat_start"], nd["cat_bits"], nd["cover"],
                plan.masked, nd["value"], nd["tree_output"], md, trees.tree_points, plan.gl_t, plan.gl_w,
                out, pred)
        if len(trees.text_trees) and iv:
            c, cp = K.shapley_iv_weights(md + 1)
            K.textbook_iv_rows(
                X, chunk, trees.text_trees, nd["node_offsets"], nd["feature"],
                nd["threshold"], nd["left"], nd["right"], nd["missing_left"], nd["cat_start"], nd["cat_bits"],
                plan.masked, bg, nd["value"], nd["tree_output"], md, c, cp, out, pred)
        elif len(trees.text_trees):
            K.textbook_pd_rows(
                X, chunk, trees.text_trees, nd["node_offsets"], nd["feature"],
                nd["threshold"], nd["left"], nd["right"], nd["missing_left"], nd["cat_start"], nd["cat_bits"],
                nd["cover"], plan.masked, nd["value"], nd["tree_output"], md, out, pred)
        return len(chunk)

    def _expected_value_pd(self) -> np.ndarray:
        """Cover-weighted mean of the raw output: each leaf weighs cover / root cover."""
        ens = self.ensemble
        nd = self._nodes
        tree_of_node = np.repeat(np.arange(ens.n_trees), np.diff(nd["node_offsets"]))
        root_cover = nd["cover"][nd["node_offsets"][:-1]][tree_of_node]
        leaf = nd["left"] < 0
        w = np.where(leaf, np.divide(nd["cover"], root_cover, out=np.zeros(ens.n_nodes),
                                     where=root_cover > 0), 0.0)
        return ens.base + ens.scale * (w[:, None] * nd["value"]).sum(axis=0)

    def explain(
        self,
        X,
        missing=None,
        *,
        nan_is_missing: bool | str = "auto",
        progress: Progress | None = None,
        random_state: int | None = 0,
    ) -> ShapResult:
        """Explain rows of X.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_rows, n_features)
        missing : bool array of shape (n_features,) or (n_rows, n_features), or feature names, default=None
            Features to leave out of the game. Their attribution is exactly 0 and
            the explained prediction integrates them out (over cover, or over
            the background in interventional mode).
        nan_is_missing : bool, default=True
            Treat NaN cells of X as missing. With False a NaN is a value that
            follows the trees' learned missing-value routing.
        progress : callable(done_rows, total_rows), default=None
            Called after each chunk of rows.
        random_state : int, default=0
            Seed of the background sample (interventional mode without a
            background only).

        Returns
        -------
        ShapResult
            ``values`` of shape (n_rows, n_features), or (n_rows, n_features,
            n_outputs) for several outputs (forest classifiers, multiclass
            boosting); ``base_values + values.sum(1) == predictions``.

        Raises
        ------
        InvalidDataError, InvalidFeatureError
            For data that does not fit the model, non-numeric columns, or a bad mask.
        """
        func = "TreeShap.explain"
        progress = check_progress(progress, func)
        adapter = self.adapter
        ens = self.ensemble
        frame = as_frame(adapter, X)
        nan_is_missing, nan_reason = resolve_nan_is_missing(adapter, frame, nan_is_missing)
        mask = missing_mask(adapter, frame, missing, nan_is_missing)
        Xp = tree_inputs(ens, frame, "X")
        n, p = Xp.shape
        params = {"mode": self.mode, "nan_is_missing": bool(nan_is_missing), "nan_reason": nan_reason,
                  "class_index": adapter.class_index, "link": ens.transform, "reason": "requested"}
        bg, base_raw = self._background_rows(frame, random_state, params)

        state = {"done": 0}

        def tick(m: int) -> None:
            state["done"] += m
            if progress is not None:
                progress(state["done"], n)

        if self.probability_game:
            values, base, preds = self._probability_values(Xp, mask, bg, tick, frame, params)
        else:
            values, preds = self._margin_values(Xp, mask, bg, tick, params)
            base = np.repeat(base_raw[None, :], n, axis=0)
        # masked features are not players: make their zero exact (no -0.0 or round-off)
        values[np.broadcast_to(mask[:, :, None], values.shape)] = 0.0
        ci = adapter.class_index
        if ci is not None:
            values, base, preds = values[:, :, ci : ci + 1], base[:, ci : ci + 1], preds[:, ci : ci + 1]
        multi = adapter.n_outputs > 1
        label = output_label(adapter)
        if ens.transform == "exp":
            label = "margin"  # a log-link regressor's trees add up to log(prediction)
        return ShapResult(
            values=shape_output(values, multi),
            base_values=shape_output(base, multi),
            predictions=shape_output(preds, multi),
            feature_names=list(adapter.feature_names),
            missing=mask,
            method=self.method,
            output=label,
            output_names=list(adapter.output_names),
            data=frame.copy(),
            params=params,
        )

    def _background_rows(self, frame, random_state, params: dict):
        """(background rows or None, the raw base value): the interventional game's rows (a new
        background clears the leaf tables, which hold its counts), or the trees' cover."""
        ens = self.ensemble
        if self.mode != "interventional":
            note = "given but not used" if self.background is not None else "none"
            params.update(n_background=0, background=f"{note} (path-dependent: tree cover)")
            return None, self._expected_value_pd()
        seed = check_random_state(random_state, "TreeShap.explain")
        bg_frame, source = prepare_background(
            self.adapter, self.background, frame, random_state=seed, func=self._func
        )
        bg = tree_inputs(ens, bg_frame, "The background")
        key = (source, bg.shape, hash(bg.tobytes()))
        if key != self._bg_key:  # tables hold background counts: new rows, new tables
            self._plans.clear()
            self._bg_key = key
        params.update(n_background=len(bg), background=source)
        return bg, ens.predict_raw(bg).mean(axis=0)

    def _margin_values(self, Xp: np.ndarray, mask: np.ndarray, bg, tick, params: dict):
        """(values, predictions) of what the trees add up to, by leaf tables or the textbook
        recursion, per missing pattern."""
        ens = self.ensemble
        n, p = Xp.shape
        out = np.zeros((n, p, ens.n_raw))
        pred = np.zeros((n, ens.n_raw))
        n_table = n_text = n_linear = 0
        groups = pattern_groups(mask) if mask.any() else [(np.arange(p), np.arange(n))]
        for present, rows in groups:
            masked = np.ones(p, dtype=bool)
            masked[present] = False
            plan = self._plan_for(masked, len(rows), bg)
            n_table = max(n_table, len(plan.table_trees))
            n_text = max(n_text, len(plan.text_trees))
            n_linear = max(n_linear, len(plan.linear_trees))
            self._run_rows(plan, Xp, rows.astype(np.int64), bg, out, pred, tick)
        params.update(
            n_trees=ens.n_trees,
            trees_with_tables=int(n_table),
            trees_textbook=int(n_text),
            trees_linear=int(n_linear),
            table_mb=round(sum(pl.nbytes for pl in self._plans.values()) / 2**20, 3),
        )
        return ens.scale * out, ens.base[None, :] + ens.scale * pred

    def _probability_values(self, Xp: np.ndarray, mask: np.ndarray, bg, tick, frame, params: dict):
        """(values, base values, predictions) of the probability game (see _proba_game)."""
        from ._proba_game import MAX_PAIR_BITS, TooManyPlayers, probability_values

        try:
            values, base, preds, players = probability_values(self, Xp, mask, bg, tick)
        except TooManyPlayers as exc:
            raise OutOfReachError(
                f"Probability-scale SHAP values of row {frame.index[exc.args[0]]!r} are out of reach: "
                f"against a background row it takes different branches on more than {MAX_PAIR_BITS} "
                f"features, so its exact game has over 2**{MAX_PAIR_BITS} coalitions.",
                "Explain the margin (log-odds) instead (output='raw', exact by Tree SHAP), or use fewer features."
            ) from None
        params.update(n_trees=self.ensemble.n_trees, game="probability (exact, per background row)",
                      players_max=int(players.max(initial=0)))
        return values, base, preds

    def interactions(
        self,
        X,
        missing=None,
        *,
        nan_is_missing: bool | str = "auto",
        progress: Progress | None = None,
        random_state: int | None = 0,
    ):
        """SHAP interaction values of rows of X (Lundberg et al. 2020), exact.

        Parameters are those of :meth:`explain`. Off the diagonal, ``values[r, i, j]``
        is half the Shapley interaction index of features i and j in this
        explainer's game (path-dependent or interventional); the diagonal holds
        what is left of each SHAP value, so each matrix row sums to
        ``explain(X, missing).values``. Missing features have zero rows and columns.

        Returns
        -------
        ShapInteractionResult
            ``values`` of shape (n_rows, n_features, n_features), or
            (n_rows, n_features, n_features, n_outputs) for several outputs.

        See Also
        --------
        explainers.shap.interactions : the algorithm (compiled leaf tables).
        """
        from .interactions import tree_interactions

        if self.probability_game:
            raise param_error("output", "TreeShap.interactions", "'auto' or 'raw' (interaction values "
                              "are those of the margin the trees add up to)", "proba")
        return tree_interactions(self, X, missing, nan_is_missing=nan_is_missing,
                                 progress=progress, random_state=random_state)
