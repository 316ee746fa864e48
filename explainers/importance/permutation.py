"""Hold-out permutation importance, equal to scikit-learn's, computed in batches.

The shuffles are drawn as :func:`sklearn.inspection.permutation_importance`
draws them; the permuted copies of many (feature, repeat) pairs are then scored
from one predict call per batch. Plain scikit-learn forests on numeric data
skip even that: :class:`_ForestPredictor` walks again only the rows whose
permuted value leaves their leaf.
"""
from __future__ import annotations

import numbers
from typing import Callable

import numpy as np
import pandas as pd

from ..errors import InvalidDataError, param_error
from ..model import ModelAdapter, detect_task
from ..trees import tree_families
from ._common import (DEFAULT_MAX_CELLS, Progress, check_int, check_progress, check_X, check_y, missing_rows,
                      rows_left_out_note, stack_copies)
from .result import ImportanceResult, make_result
from .scoring import SCORING_LABELS, SUPPORTED_SCORING, Scorer

__all__ = ["permutation_importance"]


def permutation_importance(
    model,
    X,
    y,
    *,
    n_repeats: int = 5,
    scoring: str | Callable | None = None,
    random_state: int | np.random.RandomState | None = 0,
    sample_weight=None,
    max_samples: float | int = 1.0,
    max_cells: int = DEFAULT_MAX_CELLS,
    progress: Progress | None = None,
    class_index: int | None = None,
) -> ImportanceResult:
    """Hold-out permutation importance, equal to scikit-learn's, computed in batches.

    For each feature j and repeat r, column j of X is shuffled and the model is
    scored again; the importance is the drop from the baseline score. The
    shuffles are drawn exactly as :func:`sklearn.inspection.permutation_importance`
    draws them, so both give the same numbers for the same ``random_state``
    (to rounding). The difference is speed: the permuted copies of many
    (feature, repeat) pairs are stacked and sent to the model in one predict call,
    and the metric is computed from those predictions.

    Parameters
    ----------
    model : fitted estimator or Pipeline
    X : DataFrame or array-like of shape (n_samples, n_features)
        Rows the model did not train on, ideally.
    y : array-like of shape (n_samples,), or (n_samples, n_targets) for a regressor of several targets
        Their true target values (class labels for classifiers). Rows whose
        target is empty (NaN, None, blank text) are left out before anything is
        drawn or scored; ``params["n_rows_left_out"]`` and the description say
        how many.
    n_repeats : int, default=5
        Shuffles per feature.
    scoring : str, callable or None, default=None
        None uses the model's ``score`` (accuracy or R^2). The names in
        :data:`SUPPORTED_SCORING` are computed from batched predictions; any
        other scikit-learn scoring name or scorer callable is evaluated per copy.
    random_state : int, RandomState or None, default=0
        Seeds the shuffles, as in scikit-learn.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights used in scoring.
    max_samples : int or float, default=1.0
        Rows drawn (without replacement) for the permuted scores, as in scikit-learn.
    max_cells : int, default=2**23
        Upper bound on rows x columns of permuted copies built at once.
    progress : callable(done, total), default=None
        Called after each batch with the number of (feature, repeat) copies scored.
    class_index : int, default=None
        For a regressor of several targets: score only this output, against y's
        column ``class_index`` (or a 1-D y holding that target). None scores all
        outputs against y of shape (n, k), as scikit-learn does.

    Returns
    -------
    ImportanceResult
        ``raw`` has shape (n_features, n_repeats): baseline minus permuted score.

    Raises
    ------
    InvalidDataError
        If y is missing, empty in every row, of the wrong length or of the wrong kind.
    InvalidParameterError
        If an option is out of range.

    See Also
    --------
    oob_permutation_importance : the out-of-bag variant for bagged forests.

    Notes
    -----
    For a plain scikit-learn RandomForest / ExtraTrees on numeric data the copies
    skip the model's predict: in each tree, a row whose permuted value stays
    inside its leaf's box keeps its leaf, and only the other rows are walked
    again. Leaf values are summed in the forest's order, so the predictions are
    bitwise those of ``predict`` / ``predict_proba``. Other models go through
    :class:`~explainers.model.ModelAdapter` in batches.

    Examples
    --------
    >>> from sklearn.datasets import make_friedman1
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> X, y = make_friedman1(n_samples=200, random_state=0)
    >>> rf = RandomForestRegressor(n_estimators=10, random_state=0).fit(X, y)
    >>> permutation_importance(rf, X, y, n_repeats=2).raw.shape
    (10, 2)
    """
    func = "permutation_importance"
    n_repeats, max_cells, progress = _check_options(n_repeats, max_cells, progress, func)
    model, adapter, frame, X, y_arr, sw, n_given = _scored_rows(model, X, y, class_index, scoring, sample_weight, func)
    rows, perms, sub = _plan_shuffles(max_samples, random_state, len(frame), n_repeats, func)
    scorer = Scorer(model, adapter, scoring, y_arr, sw, func)
    baseline, scores = _scores(model, X, frame, scorer, rows, perms, sub, max_cells, progress)
    params, desc = _describe(adapter, scorer, scoring, n_repeats, random_state, max_samples, baseline,
                             len(frame), n_given, class_index)
    return make_result(adapter.feature_names, baseline - scores, "permutation", params, desc)


# ------------------------------------------------------------------------------ steps
def _check_options(n_repeats, max_cells, progress, func: str):
    """The checked ``n_repeats``, ``max_cells`` and ``progress``."""
    n_repeats = check_int(n_repeats, "n_repeats", func, 1)
    max_cells = check_int(max_cells, "max_cells", func, 1)
    return n_repeats, max_cells, check_progress(progress, func)


def _scored_rows(model, X, y, class_index, scoring, sample_weight, func: str):
    """Return (model, adapter, frame, X, y, sample_weight, n_given): the rows with a true value, checked."""
    adapter = ModelAdapter(model)
    model = adapter.model  # a library object (XGBoost...) in the form the adapter explains
    frame = check_X(adapter, X, func)
    n_given = len(frame)
    adapter, y_arr = _targets(adapter, y, n_given, class_index, scoring, func)
    sw = _check_sample_weight(sample_weight, n_given)
    # rows without a true value cannot be scored: leave them out, and say so
    keep = ~missing_rows(y_arr)
    n_left_out = n_given - int(keep.sum())
    if n_left_out:
        frame = frame[keep].reset_index(drop=True)
        y_arr = y_arr[keep]
        sw = None if sw is None else sw[keep]
        X = X[keep] if isinstance(X, pd.DataFrame) else np.asarray(X)[keep]
        check_X(adapter, frame, func)
    return model, adapter, frame, X, y_arr, sw, n_given


def _plan_shuffles(max_samples, random_state, n: int, n_repeats: int, func: str):
    """Return (rows, perms, sub): the rows drawn, the shuffles, and the rows scored (None for all)."""
    m = _rows_drawn(max_samples, n, func)
    rows, perms = _draw_shuffles(random_state, n, m, n_repeats)
    sub = None if m == n else rows  # the rows the permuted scores are taken on
    return rows, perms, sub


def _scores(model, X, frame, scorer: Scorer, rows, perms, sub, max_cells: int, progress):
    """Baseline and permuted scores (p, n_repeats), batched where the scorer allows it."""
    if scorer.batched:
        return _batched_scores(model, frame, scorer, rows, perms, sub, max_cells, progress)
    return _per_copy_scores(X, frame.shape[1], scorer, rows, perms, sub, progress)


def _describe(adapter: ModelAdapter, scorer: Scorer, scoring, n_repeats: int, random_state, max_samples,
              baseline, n: int, n_given: int, class_index) -> tuple[dict, str]:
    """The result's params and description."""
    n_left_out = n_given - n
    params = {
        "n_repeats": n_repeats,
        "scoring": scoring if isinstance(scoring, str) or scoring is None else repr(scoring),
        "scoring_name": scorer.name,
        "random_state": random_state if not isinstance(random_state, np.random.RandomState) else "RandomState",
        "max_samples": max_samples,
        "baseline_score": baseline,
        "n_rows": n,
        "n_rows_left_out": n_left_out,
        "output": None if class_index is None else adapter.output_names[0],
    }
    of = "" if class_index is None else f" of {adapter.output_names[0]}"
    # a loss scored negated ("neg_log_loss") reads as the loss rising
    loss = scorer.name.startswith("neg_")
    name = SCORING_LABELS.get(scorer.name, scorer.name)
    desc = (
        f"Permutation importance: how much {name}{of} {'rises' if loss else 'drops'} when a feature's values are "
        f"shuffled among the rows given ({n_repeats} shuffles per feature)."
    )
    if n_left_out:
        desc += " " + rows_left_out_note(n_left_out, n_given)
    return params, desc


# ------------------------------------------------------------------------------ inputs
def _targets(adapter: ModelAdapter, y, n_rows: int, class_index, scoring, func: str):
    """The adapter that predicts what is scored, and the checked target.

    A regressor of several outputs is scored on all of them against y of shape
    (n, k) (scikit-learn's multi-output score), or with ``class_index=j`` on output
    j alone, against y's column j or a 1-D y (the true values of that output)."""
    k = adapter.n_targets if adapter.task == "regression" else 1
    if class_index is not None:
        if k == 1:
            raise param_error("class_index", func, "None for a model of one output", class_index)
        if scoring is not None and (not isinstance(scoring, str) or scoring not in SUPPORTED_SCORING):
            raise param_error("scoring", func, f"one of {list(SUPPORTED_SCORING)} or None when class_index "
                              "picks one output", scoring)
        adapter = adapter.with_output(None, class_index)
    y_arr = check_y(y, n_rows, adapter.task, adapter.classes, func, allow_missing=True, n_targets=k)
    if y_arr.ndim == 2 and class_index is not None:
        return adapter, y_arr[:, class_index]
    if k > 1 and class_index is None and y_arr.ndim == 1:
        raise InvalidDataError(
            f"This {type(adapter.model).__name__} predicts {k} targets ({', '.join(adapter.all_output_names)}) "
            f"and y gives one column. Pass all {k} target columns (y of shape (n, {k})), or class_index=j "
            "to score output j against this column.")
    return adapter, y_arr


def _check_sample_weight(sample_weight, n: int) -> np.ndarray | None:
    if sample_weight is None:
        return None
    sw = np.asarray(sample_weight, dtype=float)
    if sw.shape != (n,):
        raise InvalidDataError(
            f"sample_weight has shape {sw.shape}; it needs one weight per row of X ({n},)."
        )
    return sw


def _rows_drawn(max_samples, n: int, func: str) -> int:
    """Number of rows the permuted scores use, from ``max_samples`` as scikit-learn reads it."""
    if isinstance(max_samples, bool) or not isinstance(max_samples, numbers.Real):
        raise param_error("max_samples", func, "an int in [1, n_samples] or a float in (0, 1]", max_samples)
    if isinstance(max_samples, numbers.Integral):
        if not 1 <= max_samples <= n:
            raise param_error("max_samples", func, f"an int in [1, {n}]", max_samples)
        return int(max_samples)
    if not 0 < max_samples <= 1:
        raise param_error("max_samples", func, "a float in (0, 1]", max_samples)
    m = int(max_samples * n)
    if m < 1:
        raise param_error("max_samples", func, f"large enough to draw a row from {n}", max_samples)
    return m


# ------------------------------------------------------------------------------ shuffles
def _draw_shuffles(random_state, n: int, m: int, n_repeats: int) -> tuple[np.ndarray, list]:
    """Return (rows, perms): the rows drawn, and per repeat the positions (into rows)
    of the shuffled column.

    The RNG use mirrors sklearn: one seed drawn from random_state, then a fresh
    RandomState(seed) per feature. Every feature therefore gets the same row subset
    and the same shuffles, so they are drawn once.
    """
    from sklearn.utils import check_random_state

    rs = check_random_state(random_state)
    seed = rs.randint(np.iinfo(np.int32).max + 1)
    rs_col = np.random.RandomState(seed)
    if m < n:
        from sklearn.utils.random import sample_without_replacement

        rows = np.asarray(sample_without_replacement(n, m, random_state=rs_col))
    else:
        rows = np.arange(n)
    shuffling = np.arange(m)
    composed = np.arange(m)
    perms = []  # perms[r]: positions (into rows) of the column after repeat r
    for _ in range(n_repeats):
        rs_col.shuffle(shuffling)
        # sklearn shuffles the already-shuffled column again: compose the permutations
        composed = composed[shuffling]
        perms.append(composed.copy())
    return rows, perms


# ------------------------------------------------------------------------------- scores
def _batched_scores(model, frame, scorer: Scorer, rows, perms, sub, max_cells: int, progress):
    """Baseline and permuted scores (p, n_repeats), one predict call per batch of copies."""
    m, p, n_repeats = len(rows), frame.shape[1], len(perms)
    total = p * n_repeats
    scores = np.empty((p, n_repeats))
    pairs = [(j, r) for j in range(p) for r in range(n_repeats)]
    per_batch = max(1, max_cells // max(1, m * p))
    # one predict call per batch: let the adapters take the whole stack at once
    for ad in scorer.adapters:
        ad.chunk_rows = max(ad.chunk_rows, per_batch * m)
    fast = _ForestPredictor.maybe(model, frame)
    if fast is not None:
        baseline = scorer.score(scorer.from_output(fast.predict()))
        leaves0 = [None] * len(model.estimators_)
    else:
        baseline = scorer.score(scorer.responses(frame))
    for s in range(0, total, per_batch):
        batch = pairs[s : s + per_batch]
        if fast is not None:
            cols = np.array([j for j, _ in batch])
            outs = fast.predict_copies(rows, cols, np.array([perms[r] for _, r in batch]), leaves0)
            for c, (j, r) in enumerate(batch):
                scores[j, r] = scorer.score(scorer.from_output(outs[c]), sub)
        else:
            copies = stack_copies(frame, rows, [(j, rows[perms[r]]) for j, r in batch])
            resp = scorer.responses(copies)
            for c, (j, r) in enumerate(batch):
                scores[j, r] = scorer.score(resp[c * m : (c + 1) * m], sub)
        if progress is not None:
            progress(min(s + per_batch, total), total)
    return baseline, scores


def _per_copy_scores(X, p: int, scorer: Scorer, rows, perms, sub, progress):
    """Baseline and permuted scores (p, n_repeats) from sklearn's scorer, one copy at a time."""
    # Copies in the user's own format (array or DataFrame), as sklearn's scorer sees them
    user_X = X if isinstance(X, pd.DataFrame) else np.asarray(X)
    baseline = scorer.score_estimator(user_X)
    sub_X = user_X.iloc[rows] if isinstance(user_X, pd.DataFrame) else user_X[rows]
    n_repeats = len(perms)
    total = p * n_repeats
    scores = np.empty((p, n_repeats))
    done = 0
    for j in range(p):
        for r in range(n_repeats):
            scores[j, r] = scorer.score_estimator(_permuted_copy(sub_X, j, perms[r]), sub)
            done += 1
            if progress is not None:
                progress(done, total)
    return baseline, scores


def _permuted_copy(sub_X, j: int, perm: np.ndarray):
    """A copy of ``sub_X`` (array or DataFrame) with column j taken at ``perm``."""
    Xp = sub_X.copy()
    if isinstance(Xp, pd.DataFrame):
        col = sub_X.iloc[perm, j]
        col.index = Xp.index
        Xp[Xp.columns[j]] = col
    else:
        Xp[:, j] = sub_X[perm, j]
    return Xp


# ------------------------------------------------------------- exact forest fast path
def _leaf_boxes(tree) -> tuple[np.ndarray, np.ndarray]:
    """Per node, the box (lo, hi] of feature values that reach it, shape (n_nodes, p).

    Built level by level (a few numpy operations per depth) rather than node by node.
    """
    n_nodes, p = tree.node_count, tree.n_features
    lo = np.full((n_nodes, p), -np.inf)
    hi = np.full((n_nodes, p), np.inf)
    left, right, feat, thr = tree.children_left, tree.children_right, tree.feature, tree.threshold
    frontier = np.array([0])
    while frontier.size:
        frontier = frontier[left[frontier] >= 0]  # split nodes only
        if not frontier.size:
            break
        f, t = feat[frontier], thr[frontier]
        lc, rc = left[frontier], right[frontier]
        lo[lc] = lo[frontier]
        hi[lc] = hi[frontier]
        lo[rc] = lo[frontier]
        hi[rc] = hi[frontier]
        hi[lc, f] = np.minimum(hi[lc, f], t)  # went left: x <= t
        lo[rc, f] = np.maximum(lo[rc, f], t)  # went right: x > t
        frontier = np.concatenate([lc, rc])
    return lo, hi


class _ForestPredictor:
    """Exact predictions of a scikit-learn forest on copies with one column permuted.

    A permuted copy differs from the original rows in one feature, so in each tree
    a row keeps its leaf whenever the new value stays inside the leaf's box on that
    feature (trees compare ``float32(x) <= threshold``). Only the other rows are
    walked again. Leaf values are then summed over trees in the forest's own
    order and divided by the number of trees, as ``predict`` / ``predict_proba``
    do, so the results are bitwise equal to theirs while most of the tree walks
    are skipped.
    """

    def __init__(self, est, X32: np.ndarray):
        self.est = est
        self.clf = detect_task(est) != "regression"
        self.tables = []
        for tree in est.estimators_:
            value = tree.tree_.value
            if self.clf:
                # DecisionTreeClassifier.predict_proba: normalise each leaf's counts
                proba = value[:, 0, : tree.n_classes_].copy()
                norm = proba.sum(axis=1)[:, None]
                norm[norm == 0.0] = 1.0
                proba /= norm
                self.tables.append(proba)
            else:
                self.tables.append(value[:, 0, 0])
        self.X32 = X32

    @staticmethod
    def maybe(model, frame: pd.DataFrame) -> "_ForestPredictor | None":
        if type(model) not in tree_families()["forest"] or getattr(model, "n_outputs_", 1) != 1:
            return None  # subclasses may override predict: use the generic path
        if not all(pd.api.types.is_numeric_dtype(t) for t in frame.dtypes):
            return None
        return _ForestPredictor(model, np.ascontiguousarray(frame.to_numpy(dtype=np.float32)))

    def _shape(self, *lead):
        return lead + ((self.tables[0].shape[1],) if self.clf else ())

    def predict(self, rows: np.ndarray | None = None) -> np.ndarray:
        X = self.X32 if rows is None else self.X32[rows]
        out = np.zeros(self._shape(len(X)))
        for tree, table in zip(self.est.estimators_, self.tables):
            out += table[tree.tree_.apply(X)]
        out /= len(self.est.estimators_)
        return out

    def predict_copies(self, rows: np.ndarray, cols: np.ndarray, perms: np.ndarray,
                       leaves0: list) -> np.ndarray:
        """Copies c of ``X32[rows]`` with column cols[c] taken at rows[perms[c]].

        Returns shape (n_copies, len(rows)) or (n_copies, len(rows), n_classes).
        """
        Xs = self.X32[rows]
        B, m = perms.shape
        V = self.X32[rows[perms], cols[:, None]]  # the permuted values, (B, m)
        out = np.zeros(self._shape(B, m))
        for t, (tree, table) in enumerate(zip(self.est.estimators_, self.tables)):
            tr = tree.tree_
            if leaves0[t] is None:
                leaves0[t] = tr.apply(Xs)
            L0 = leaves0[t]
            lo, hi = _leaf_boxes(tr)
            keep = (lo[L0][:, cols].T < V) & (V <= hi[L0][:, cols].T)  # NaN -> walk again
            cc, ii = np.nonzero(~keep)
            leaves = np.broadcast_to(L0, (B, m)).copy()
            if cc.size:
                A = Xs[ii]
                A[np.arange(cc.size), cols[cc]] = V[cc, ii]
                leaves[cc, ii] = tr.apply(A)
            out += table[leaves]
        out /= len(self.est.estimators_)
        return out
