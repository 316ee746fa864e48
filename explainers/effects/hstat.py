"""Friedman's H statistic: how much of a model's variation is interaction.

For features j and k (Friedman & Popescu 2008, eqs. 44-46), with every partial
dependence function centred to mean 0 over the data points and evaluated there::

    H2_jk = sum_i [PD_jk(x_ij, x_ik) - PD_j(x_ij) - PD_k(x_ik)]**2 / sum_i PD_jk(x_ij, x_ik)**2

the share of the joint effect of j and k that their two main effects do not
explain, and for one feature against all others (eq. 20)::

    H2_j = sum_i [f(x_i) - PD_j(x_ij) - PD_-j(x_i,-j)]**2 / sum_i f(x_i)**2

where ``PD_-j(x_i,-j)`` is the mean over rows r of ``f(x_rj, x_i,-j)``: the mean
of row i's ICE curve over the data values of feature j. An additive model has
H = 0 everywhere; ``f = x1 x2`` has a large H for the pair.

Every PD value comes from the partial dependence machinery of
:mod:`explainers.effects.pdp`: for a scikit-learn tree model the exact compiled
tree walk (``method="tree"``, the same numbers as brute force), else the model's
predictions on stacked copies of the data (``method="brute"``, chunked).
The cost is about n**2 predictions per pair for brute force, so rows beyond
``sample`` are sampled (seeded, and stated in the result).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import InvalidDataError, InvalidFeatureError, InvalidParameterError, param_error
from ..model import ModelAdapter

__all__ = ["h_statistic", "HStatisticResult", "tree_walk_applies"]

_METHODS = ("auto", "tree", "brute")
#: rows per predict call of the brute method
_BRUTE_ROWS = 65_536
#: grid cells (x outputs x rows walked together) one compiled call may hold
_CELLS = 2**22
#: grid cells (x outputs x rows) one thread of the points kernel holds at a time
_ROW_CELLS = 2**21


@dataclass(frozen=True, eq=False)
class HStatisticResult:
    """Friedman's H statistic of feature pairs and of single features.

    Attributes
    ----------
    pairs : list of (str, str)
        The feature pairs, in the order asked for.
    values : ndarray of shape (n_pairs,)
        Pairwise H_jk (the square root of ``h2``): 0 when the pair's joint
        partial dependence is the sum of the two main effects.
    h2 : ndarray of shape (n_pairs,)
        H_jk squared: the share of the variance of the pair's joint partial
        dependence that is interaction. 0 where that joint partial dependence
        is constant.
    overall : ndarray of shape (n_features,)
        H_j per feature of ``feature_names``: how much of the prediction's
        variance comes from interactions of j with any other feature.
    overall_h2 : ndarray of shape (n_features,)
        H_j squared.
    feature_names : list of str
        The features of ``overall``.
    n_rows : int
        Data rows the statistic was computed on (after sampling).
    method : {"tree", "brute"}
        How the partial dependence values were computed.
    output_name : str
        The model output studied (regression value or one class probability).
    params : dict
        The inputs: sample, random_state, class_index, n_rows_total, sampled
        (bool), and a ``note`` saying how many rows were used.
    """

    pairs: list
    values: np.ndarray
    h2: np.ndarray
    overall: np.ndarray
    overall_h2: np.ndarray
    feature_names: list
    n_rows: int
    method: str
    output_name: str
    params: dict = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """The pairs as a table: columns ``feature``, ``other``, ``H``, ``H2``, strongest first."""
        df = pd.DataFrame(
            {
                "feature": [a for a, _ in self.pairs],
                "other": [b for _, b in self.pairs],
                "H": self.values,
                "H2": self.h2,
            }
        )
        return df.sort_values("H", ascending=False, kind="stable").reset_index(drop=True)

    def matrix(self) -> pd.DataFrame:
        """Pairwise H as a symmetric feature x feature table (NaN where not computed)."""
        names = list(dict.fromkeys([n for pr in self.pairs for n in pr]))
        out = pd.DataFrame(np.nan, index=names, columns=names)
        for (a, b), h in zip(self.pairs, self.values):
            out.loc[a, b] = out.loc[b, a] = h
        return out


# ------------------------------------------------------------ validation
def _feature_index(cols: list[str], f, what: str) -> int:
    if isinstance(f, numbers.Integral) and not isinstance(f, bool):
        if not 0 <= int(f) < len(cols):
            raise InvalidFeatureError(
                f"Feature index {f} in {what} is out of range: the data has {len(cols)} "
                f"columns (0..{len(cols) - 1})."
            )
        return int(f)
    name = str(f)
    if name not in cols:
        raise InvalidFeatureError(
            f"Unknown feature {name!r} in {what}. Known features: "
            f"{', '.join(cols[:20])}{' …' if len(cols) > 20 else ''}."
        )
    return cols.index(name)


def _check_pairs(cols: list[str], pairs, feats: list[int]) -> list[tuple[int, int]]:
    if pairs is None:
        return [(a, b) for x, a in enumerate(feats) for b in feats[x + 1 :]]
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__"):
        raise param_error("pairs", "h_statistic", "None or a list of (feature, feature) pairs",
                          pairs)
    out = []
    for pr in pairs:
        if isinstance(pr, (str, bytes)) or not hasattr(pr, "__len__") or len(pr) != 2:
            raise InvalidFeatureError(
                f"Each entry of pairs must be two features (names or indices); got {pr!r}."
            )
        a = _feature_index(cols, pr[0], "pairs")
        b = _feature_index(cols, pr[1], "pairs")
        if a == b:
            raise InvalidFeatureError(
                f"The pair ({cols[a]!r}, {cols[b]!r}) names one feature twice; an interaction "
                "needs two different features."
            )
        out.append((a, b))
    if not out:
        raise InvalidFeatureError("pairs is empty; pass at least one pair, or None for all pairs.")
    return out


def _adapter(model, class_index) -> ModelAdapter:
    if class_index is not None and (
        not isinstance(class_index, numbers.Integral) or isinstance(class_index, bool)
    ):
        raise param_error("class_index", "h_statistic", "None or an int", class_index)
    base = model if isinstance(model, ModelAdapter) else ModelAdapter(model)
    if base.task == "regression" and base.n_targets == 1:
        if class_index not in (None, 0):
            raise param_error("class_index", "h_statistic", "None for a regression model",
                              class_index)
        return base
    if class_index is None:
        class_index = base.class_index
    if class_index is None:
        if base.n_outputs == 1:
            return base
        if base.task == "binary":
            class_index = 1  # the positive class
        elif base.task == "regression":  # a multi-output regressor
            targets = ", ".join(f"{i}: {c}" for i, c in enumerate(base.all_output_names))
            raise InvalidParameterError(
                f"h_statistic studies one output at a time; this model predicts {base.n_targets} "
                f"targets ({targets}). Pass class_index=<position> to pick the target to study."
            )
        else:
            classes = ", ".join(f"{i}: {c}" for i, c in enumerate(base.classes))
            raise InvalidParameterError(
                f"h_statistic studies one output at a time; this multiclass model has "
                f"{len(base.classes)} classes ({classes}). Pass class_index=<position> to pick "
                "the class probability to study."
            )
    return base.with_output(class_index=int(class_index))


# ------------------------------------------------------------- evaluators
class _Brute:
    """Partial dependence values from the model's own predictions on stacked copies."""

    method = "brute"

    def __init__(self, adapter: ModelAdapter, work: pd.DataFrame):
        self.adapter = adapter
        self.work = work
        self.n = len(work)
        self.fast = all(work[c].dtype == np.float64 for c in work.columns)
        if self.fast:
            self.arr = work.to_numpy(dtype=np.float64)

    def _predict_copies(self, cols: list[int], values: list[np.ndarray]) -> np.ndarray:
        """Predictions of ``len(values[0])`` copies of the rows, shape (copies, n).

        Copy g has column ``cols[c]`` set to ``values[c][g]`` in every row.
        """
        from .pdp import _tiled_frame

        n = self.n
        G = len(values[0])
        out = np.empty((G, n))
        per = max(1, _BRUTE_ROWS // n)
        names = [self.work.columns[c] for c in cols]
        for s in range(0, G, per):
            vals = [v[s : s + per] for v in values]
            g = len(vals[0])
            if self.fast:
                big = np.tile(self.arr, (g, 1))
                for c, v in zip(cols, vals):
                    big[:, c] = np.repeat(np.asarray(v, dtype=np.float64), n)
                frame = pd.DataFrame(big, columns=self.work.columns, copy=False)
            else:
                vals = [list(v) if v.dtype == object else v for v in vals]
                frame = _tiled_frame(self.work, names, vals, g)
            out[s : s + g] = np.asarray(self.adapter.predict(frame), dtype=np.float64).reshape(g, n)
        return out

    def ice(self, j: int, grid: np.ndarray) -> np.ndarray:
        """(n, G): each row's prediction with feature j set to each grid value."""
        return self._predict_copies([j], [grid]).T

    def pd2(self, j: int, k: int, gj, gk, pj: np.ndarray, pk: np.ndarray) -> np.ndarray:
        """Mean prediction over the rows with (j, k) set to each point (gj[pj[q]], gk[pk[q]])."""
        return self._predict_copies([j, k], [gj[pj], gk[pk]]).mean(axis=1)


class _Tree:
    """Partial dependence values from the exact compiled tree walk."""

    method = "tree"

    def __init__(self, adapter: ModelAdapter, work: pd.DataFrame, ens, transform: str):
        self.adapter = adapter
        self.work = work
        self.ens = ens
        self.transform = transform
        self.n = len(work)
        self.Xw = ens.prepare_inputs(work)
        # features whose grid the points kernel cannot take (rules, categories, text, NaN):
        # their two-feature PD comes from the grid walk, which routes every value as predict does
        # features whose grid is their distinct values (rules, categories, text: no order)
        self.distinct = set(int(f) for f in ens.rule_features()) | set(ens.code_columns())
        self.distinct |= {j for j, c in enumerate(work.columns)
                          if not pd.api.types.is_numeric_dtype(work[c].dtype)
                          or isinstance(work[c].dtype, pd.CategoricalDtype)}
        # ... and, with those holding NaN (or the model's missing value), the features whose
        # two-feature PD the grid walk computes (the points kernel takes ordered grids only)
        self.special = self.distinct | set(np.flatnonzero(np.isnan(self.Xw).any(axis=0)).tolist())
        self.col = adapter.class_index if adapter.class_index is not None else 0
        self.nodes, self.thr = ens.packed_nodes
        self.R = ens.n_raw
        self.K = 2 if transform == "sigmoid" else ens.n_raw

    def _select(self, arr: np.ndarray) -> np.ndarray:
        from .tree_pd import _finish_outputs

        return _finish_outputs(arr, self.adapter)

    def ice(self, j: int, grid: np.ndarray) -> np.ndarray:
        from .tree_pd import _tree_ice

        G = len(grid)
        per = max(1, _CELLS // (G * self.K))
        out = np.empty((self.n, G))
        for s in range(0, self.n, per):
            part = self.work.iloc[s : s + per]
            ice, _ = _tree_ice(self.ens, self.transform, part, [j], [grid], True)
            out[s : s + len(part)] = self._select(ice[:, :, 0, :])
        return out

    def pd2(self, j, k, gj, gk, pj, pk) -> np.ndarray:
        """Partial dependence at the points (gj[pj[q]], gk[pk[q]]), grids sorted."""
        res = np.empty(len(pj))
        G2 = len(gk)
        n_blocks = -(-self.n // 2048)
        if self.transform == "identity":
            slab = max(1, _CELLS // (G2 * self.R * n_blocks))
        else:  # every thread holds a block of rows' grids: keep one row's grid small
            slab = max(1, _ROW_CELLS // (G2 * self.R))
        for s in range(0, len(gj), slab):
            sel = np.flatnonzero((pj >= s) & (pj < s + slab))
            if len(sel) == 0:
                continue
            sub = gj[s : s + slab]
            res[sel] = self._pd2_slab(j, k, sub, gk, pj[sel] - s, pk[sel])
        return res

    def _pd2_slab(self, j, k, gj, gk, pj, pk) -> np.ndarray:
        from .tree_pd import _KERNEL_LOCK, _tree_ice

        if self.transform == "identity" or j in self.special or k in self.special:
            _, avg = _tree_ice(self.ens, self.transform, self.work, [j, k], [gj, gk], False)
            return self._select(avg)[pj, pk] if avg.shape[-1] > 1 else avg[pj, pk, 0]
        from ._hstat_kernels import pd2_points_kernel
        from ..trees import TRANSFORMS
        from ..trees.mask_walk import walk_plan
        from ..trees.walks import rules_of, split_positions

        ens = self.ens
        g1 = np.asarray(gj, np.float64)
        g2 = np.asarray(gk, np.float64)
        if ens.float32_inputs:
            g1 = g1.astype(np.float32).astype(np.float64)
            g2 = g2.astype(np.float32).astype(np.float64)
        pos1 = split_positions(ens.feature, ens.threshold, j, g1)
        pos2 = split_positions(ens.feature, ens.threshold, k, g2)
        G1, G2 = len(g1), len(g2)
        plan = walk_plan(ens, j, k, pos1, pos2, G1, G2)
        block = int(max(1, min(64, _ROW_CELLS // (G1 * G2 * self.R))))
        n_blocks = -(-self.n // block)
        sums = np.zeros((n_blocks, len(pj)))
        with _KERNEL_LOCK:
            pd2_points_kernel(self.Xw, j, k, pos1, pos2, G1, G2, self.nodes, self.thr,
                              ens.missing_go_left, *rules_of(ens), ens.value, ens.roots, ens.base, ens.scale,
                              TRANSFORMS.index(self.transform), self.col, ens.max_depth, block,
                              np.ascontiguousarray(pj, np.int64),
                              np.ascontiguousarray(pk, np.int64), sums, plan)
        return sums.sum(axis=0) / self.n


# ------------------------------------------------------------------ grids
def _value_classes(ev, frame: pd.DataFrame, j: int):
    """(grid values, row -> grid position, rows per grid value) for feature j.

    Brute force: the distinct values. Tree walk: values the model cannot tell
    apart (no split threshold between them) share one grid point, the smallest
    of them, so the grids stay as small as the trees' own resolution, and the
    missing cells one more, last; a feature with rules, categories or text keeps
    its distinct values.
    """
    col = frame.iloc[:, j]
    if isinstance(ev, _Tree) and j not in ev.distinct:
        x = ev.Xw[:, j]
        ens = ev.ens
        thr = np.unique(ens.threshold[(ens.feature == j) & (ens.left >= 0)])
        cls = np.searchsorted(thr, x, side="left")
        cls[np.isnan(x)] = len(thr) + 1  # missing: a class of its own, last (its own walk)
        uniq, inv, cnt = np.unique(cls, return_inverse=True, return_counts=True)
        reps = np.full(len(uniq), np.inf)
        with np.errstate(invalid="ignore"):  # (the missing class's point is NaN)
            np.minimum.at(reps, inv, col.to_numpy(dtype=np.float64))
        return reps, inv.reshape(-1), cnt
    numeric = pd.api.types.is_numeric_dtype(col.dtype) and not isinstance(
        col.dtype, pd.CategoricalDtype)
    codes, uniq = pd.factorize(col, sort=numeric)
    grid = np.asarray(uniq, dtype=np.float64) if numeric else np.asarray(list(uniq), dtype=object)
    if (codes < 0).any():  # NaN: a value of its own, passed to the model as it is
        codes = np.where(codes < 0, len(grid), codes)
        grid = np.append(grid, np.array([np.nan], dtype=grid.dtype))
    return grid, codes.astype(np.int64), np.bincount(codes, minlength=len(grid))


def brute_force_predictions(X: pd.DataFrame, features, pairs=None) -> int:
    """How many model predictions :func:`h_statistic` makes by brute force on ``X``
    (already sampled): one per row, then one per row and distinct value of each
    feature, and one per row and distinct value pair of each pair. What a cost
    estimate multiplies by the model's seconds per prediction.

    ``features`` are column names; ``pairs`` None means every pair of them (as in
    :func:`h_statistic`).
    """
    frame = X.reset_index(drop=True)
    cols = [str(c) for c in frame.columns]
    feats = [_feature_index(cols, f, "features") for f in features]
    pair_idx = _check_pairs(cols, pairs, feats)
    n = len(frame)
    codes = {}
    for j in dict.fromkeys(feats + [c for pr in pair_idx for c in pr]):
        grid, inv, _ = _value_classes(None, frame, j)
        codes[j] = (inv, len(grid))
    total = n + sum(n * g for _, g in codes.values())
    for j, k in pair_idx:
        (inv_j, _), (inv_k, g_k) = codes[j], codes[k]
        total += n * len(np.unique(inv_j * g_k + inv_k))
    return int(total)


def _ratio(num: float, den: float, scale: float) -> float:
    """num / den, or 0 where den is round-off next to ``scale`` (a constant effect)."""
    if den <= 1e-20 * scale or den <= 0.0:
        return 0.0
    return float(num / den)


# -------------------------------------------------------------- public API
def h_statistic(
    model,
    X,
    pairs: Sequence[tuple[str | int, str | int]] | None = None,
    *,
    features: Sequence[str | int] | None = None,
    sample: int | None = 1000,
    random_state: int | None = 0,
    class_index: int | None = None,
    method: str = "auto",
) -> HStatisticResult:
    """Friedman's H statistic for feature pairs, and per feature against all others.

    Parameters
    ----------
    model : estimator or ModelAdapter
        A fitted model. Classifiers are studied on one class probability.
    X : DataFrame or array-like of shape (n_rows, n_features)
        Data the partial dependence is averaged over and evaluated at.
    pairs : list of (feature, feature), default=None
        Pairs by column name or index; ``None`` takes every pair of ``features``.
    features : list of str or int, default=None
        The features whose overall H_j is computed (and whose pairs are taken
        when ``pairs`` is None). ``None``: every feature (or, with ``pairs``
        given, the features in them).
    sample : int, default=1000
        Use a seeded random sample of this many rows when X has more; ``None``
        uses every row. Brute force costs about n**2 predictions per pair.
    random_state : int, default=0
        Seed of the row sample.
    class_index : int, default=None
        The class whose probability is studied: required for multiclass
        models, the positive class (1) by default for binary ones.
    method : {"auto", "tree", "brute"}, default="auto"
        ``"tree"``: the exact compiled tree walk (scikit-learn tree models on
        numeric data without NaN); ``"brute"``: model predictions on stacked
        copies of the data; ``"auto"``: tree where it applies.

    Returns
    -------
    HStatisticResult

    Raises
    ------
    InvalidFeatureError
        Fewer than two features, unknown features in ``pairs`` or ``features``,
        a pair naming one feature twice.
    InvalidParameterError
        A bad option; a multiclass model without ``class_index``;
        ``method="tree"`` where it does not apply.

    Examples
    --------
    >>> from sklearn.datasets import make_friedman1
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> X, y = make_friedman1(500, 5, random_state=0)
    >>> rf = RandomForestRegressor(50, max_depth=6, random_state=0).fit(X, y)
    >>> res = h_statistic(rf, X, [(0, 1), (2, 3)])
    >>> res.to_frame()  # x0 and x1 interact (sin(pi x0 x1)), x2 and x3 hardly
    """
    _check_options(method, sample, random_state)
    adapter = _adapter(model, class_index)
    frame, cols = _checked_frame(adapter, X)
    feats, pair_idx = _plan_features(cols, pairs, features)
    rows, work = _sample_rows(frame, sample, random_state)
    ev = _evaluator(adapter, work, method)
    fc = np.asarray(adapter.predict(work), dtype=np.float64).reshape(len(work))
    fc = fc - fc.mean()
    sum_f2 = float(fc @ fc)
    overall_h2, grids, invs, pd1 = _one_feature_effects(ev, work, fc, sum_f2, feats, pair_idx)
    h2 = _pair_h2(ev, pair_idx, grids, invs, pd1, sum_f2)
    n, n_all = len(work), len(frame)
    sampled = n < n_all
    note = (f"computed on a seeded sample of {n} of {n_all} rows" if sampled
            else f"computed on all {n} rows")
    params = {
        "sample": sample,
        "random_state": random_state,
        "class_index": adapter.class_index,
        "method": method,
        "n_rows_total": n_all,
        "sampled": sampled,
        "row_indices": rows,
        "note": note,
    }
    return HStatisticResult(
        pairs=[(cols[a], cols[b]) for a, b in pair_idx],
        values=np.sqrt(h2),
        h2=h2,
        overall=np.sqrt(overall_h2),
        overall_h2=overall_h2,
        feature_names=[cols[j] for j in feats],
        n_rows=n,
        method=ev.method,
        output_name=str(adapter.output_names[0]),
        params=params,
    )


# ------------------------------------------------------------ the steps
def _check_options(method: str, sample, random_state) -> None:
    """Validate the options of :func:`h_statistic`."""
    func = "h_statistic"
    if method not in _METHODS:
        raise param_error("method", func, f"one of {list(_METHODS)}", method)
    if sample is not None and (
        not isinstance(sample, numbers.Integral) or isinstance(sample, bool) or sample < 2
    ):
        raise param_error("sample", func, "None or an int >= 2", sample)
    if random_state is not None and (
        not isinstance(random_state, numbers.Integral)
        or isinstance(random_state, bool)
        or random_state < 0
    ):
        raise param_error("random_state", func, "None or an int >= 0", random_state)


def _checked_frame(adapter: ModelAdapter, X) -> tuple[pd.DataFrame, list[str]]:
    """X as the model's input frame (index reset) and its column names: two features and two rows at least."""
    frame = adapter.to_frame(X).reset_index(drop=True)
    cols = [str(c) for c in frame.columns]
    p = len(cols)
    if p < 2:
        raise InvalidFeatureError(
            f"The H statistic measures interactions between features; the data has {p} "
            "feature. Pass data with at least two features."
        )
    n_all = len(frame)
    if n_all < 2:
        raise InvalidDataError(
            f"X has {n_all} row; the H statistic compares effects across rows, so pass at "
            "least two."
        )
    return frame, cols


def _plan_features(cols: list[str], pairs, features) -> tuple[list[int], list[tuple[int, int]]]:
    """The features whose overall H is computed and the pairs, as column positions."""
    p = len(cols)
    if features is not None:
        if isinstance(features, (str, numbers.Integral)):
            features = [features]
        feats = list(dict.fromkeys(_feature_index(cols, f, "features") for f in features))
        if not feats:
            raise InvalidFeatureError("features is empty; pass at least one feature, or None.")
    else:
        feats = None
    pair_idx = _check_pairs(cols, pairs, feats if feats is not None else list(range(p)))
    if feats is None:
        in_pairs = list(dict.fromkeys(c for pr in pair_idx for c in pr))
        feats = list(range(p)) if pairs is None else in_pairs
    return feats, pair_idx


def _sample_rows(frame: pd.DataFrame, sample, random_state) -> tuple[np.ndarray, pd.DataFrame]:
    """The rows studied (positions) and their frame (index reset): all, or a seeded sample."""
    n_all = len(frame)
    if sample is not None and n_all > sample:
        rng = np.random.default_rng(random_state)
        rows = np.sort(rng.choice(n_all, size=int(sample), replace=False))
        work = frame.iloc[rows].reset_index(drop=True)
    else:
        rows = np.arange(n_all)
        work = frame
    return rows, work


def _one_feature_effects(ev, work: pd.DataFrame, fc: np.ndarray, sum_f2: float, feats, pair_idx):
    """Each needed feature's centred PD at the rows (with its grid and the rows' grid positions),
    and the overall H_j**2 of ``feats``: ``(overall_h2, grids, invs, pd1)``."""
    n = len(work)
    needed = list(dict.fromkeys(feats + [c for pr in pair_idx for c in pr]))
    grids, invs, pd1 = {}, {}, {}
    overall_h2 = np.zeros(len(feats))
    for j in needed:
        grid, inv, cnt = _value_classes(ev, work, j)
        ice = ev.ice(j, grid)  # (n, G)
        grids[j], invs[j] = grid, inv
        pdj = ice.mean(axis=0)[inv]
        pd1[j] = pdj - pdj.mean()
        if j in feats:
            pdmj = ice @ cnt / n  # PD_-j(x_i,-j): row i's ICE averaged over the data values of j
            pdmj = pdmj - pdmj.mean()
            resid = fc - pd1[j] - pdmj
            overall_h2[feats.index(j)] = _ratio(resid @ resid, sum_f2, sum_f2)
    return overall_h2, grids, invs, pd1


def _pair_h2(ev, pair_idx, grids, invs, pd1, sum_f2: float) -> np.ndarray:
    """H_jk**2 of each pair, from the two-feature PD at the pairs of values the rows hold."""
    h2 = np.zeros(len(pair_idx))
    for q, (j, k) in enumerate(pair_idx):
        code = invs[j] * len(grids[k]) + invs[k]
        uniq, back = np.unique(code, return_inverse=True)
        pj, pk = uniq // len(grids[k]), uniq % len(grids[k])
        pdjk = ev.pd2(j, k, grids[j], grids[k], pj, pk)[back.reshape(-1)]
        pdjk = pdjk - pdjk.mean()
        resid = pdjk - pd1[j] - pd1[k]
        h2[q] = _ratio(resid @ resid, pdjk @ pdjk, sum_f2)
    return h2


def tree_walk_applies(model, X) -> bool:
    """Whether ``h_statistic(model, X)`` takes the exact tree walk (a tree model, or a pipeline
    that folds into its trees, on data it takes: text, categories and empty cells included)
    rather than brute force's n**2 predictions per pair."""
    from ..errors import ExplainerError
    from .tree_pd import _tree_plan

    try:
        adapter = model if isinstance(model, ModelAdapter) else ModelAdapter(model)
        frame = adapter.to_frame(X.iloc[:2] if hasattr(X, "iloc") else X[:2])
        return _tree_plan(adapter, frame, None, [np.zeros(1)])[0] is not None
    except ExplainerError:
        return False


def _evaluator(adapter: ModelAdapter, work: pd.DataFrame, method: str):
    """The tree walk where it applies (and is wanted), else brute force."""
    if method == "brute":
        return _Brute(adapter, work)
    from .tree_pd import _tree_plan

    plan, reason = _tree_plan(adapter, work, None, [np.zeros(1)])
    if plan is None:
        if method == "tree":
            raise InvalidParameterError(
                f"method='tree' does not apply here: {reason}. Use method='brute' (or 'auto')."
            )
        return _Brute(adapter, work)
    ens, transform = plan
    return _Tree(adapter, work, ens, transform)
