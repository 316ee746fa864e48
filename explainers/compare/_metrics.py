"""The metrics of :func:`~explainers.compare.compare_models`: on all rows, and per bootstrap replicate.

On all rows every metric is scikit-learn's own function (:func:`point`). A bootstrap
replicate is a multiset of the rows, so it is given as ``counts`` of shape (n_boot, n): how
often each row was drawn. Each metric is then a weighted version of the same formula,
computed for a block of replicates at once (:func:`replicates`): a mean of per-row losses
is ``counts @ loss / n``; ROC AUC is the Mann-Whitney statistic with tied scores counted
one half, from each replicate's weights summed over the distinct scores.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn import metrics as skm

CLASSIFICATION_METRICS = ("roc_auc", "log_loss", "accuracy", "balanced_accuracy", "brier")
REGRESSION_METRICS = ("r2", "mae", "rmse")


@dataclass(frozen=True)
class Truth:
    """The target on the rows scored.

    y : ndarray of shape (m,): the class position in ``classes`` of each row (int), or the
    regression target (float). rows : positions in X of the rows scored; index : their
    labels in X. n_left_out : rows without a target; n_unknown : rows whose label is no class.
    """

    task: str
    classes: list | None
    y: np.ndarray
    rows: np.ndarray
    index: object
    n_left_out: int = 0
    n_unknown: int = 0

    @property
    def onehot(self) -> np.ndarray:
        return (self.y[:, None] == np.arange(len(self.classes))[None, :]).astype(float)


@dataclass(frozen=True)
class Predictions:
    """One model's predictions on the rows scored, lined up with ``Truth.classes``.

    proba : ndarray (m, k) class probabilities, or None (no predict_proba); margin : the
    decision function ((m,) for two classes, of ``classes[1]``; (m, k)) when there are no
    probabilities; labels : ndarray (m,) the class position of the model's own ``predict``;
    value : ndarray (m,) a regressor's prediction.
    """

    name: str
    proba: np.ndarray | None = None
    margin: np.ndarray | None = None
    labels: np.ndarray | None = None
    value: np.ndarray | None = None

    def scores(self) -> np.ndarray | None:
        """What ROC AUC ranks rows by: (m,) for two classes (``classes[1]``), else (m, k)."""
        s = self.proba if self.proba is not None else self.margin
        if s is not None and s.ndim == 2 and s.shape[1] == 2:
            return s[:, 1]
        return s


# ------------------------------------------------------------------ all rows
def point(metric: str, p: Predictions, t: Truth) -> float:
    """``metric`` of one model on all rows scored: scikit-learn's function (NaN where undefined)."""
    y = t.y
    with warnings.catch_warnings():
        # one class only (AUC), predicted classes absent from y (balanced accuracy): NaN or the
        # documented value, not a warning per call
        warnings.simplefilter("ignore")
        if metric == "r2":
            return float(skm.r2_score(y, p.value)) if len(y) >= 2 else float("nan")
        if metric == "mae":
            return float(skm.mean_absolute_error(y, p.value))
        if metric == "rmse":
            return float(skm.root_mean_squared_error(y, p.value))
        if metric == "accuracy":
            return float(skm.accuracy_score(y, p.labels))
        if metric == "balanced_accuracy":
            return float(skm.balanced_accuracy_score(y, p.labels))
        if metric == "roc_auc":
            return _point_auc(p, t)
        if p.proba is None:
            return float("nan")
        k = len(t.classes)
        if metric == "log_loss":
            return float(skm.log_loss(y, p.proba, labels=np.arange(k)))
        if k == 2:  # brier
            return float(skm.brier_score_loss(y, p.proba[:, 1], pos_label=1))
        return float(skm.brier_score_loss(y, p.proba, labels=np.arange(k)))


def _point_auc(p: Predictions, t: Truth) -> float:
    s = p.scores()
    k = len(t.classes)
    if s is None or len(np.unique(t.y)) < 2:
        return float("nan")
    if s.ndim == 1:
        return float(skm.roc_auc_score(t.y, s))
    if p.proba is not None:
        return float(skm.roc_auc_score(t.y, s, multi_class="ovr", average="macro", labels=np.arange(k)))
    # a decision function is no probability, which roc_auc_score's multiclass path requires:
    # the same one-vs-rest macro average, class by class
    if len(np.unique(t.y)) < k:
        return float("nan")
    return float(np.mean([skm.roc_auc_score(t.y == c, s[:, c]) for c in range(k)]))


# ------------------------------------------------------------- per replicate
@dataclass(frozen=True)
class _Ranked:
    """One score column sorted once: the row order, where each run of tied scores ends (None:
    no ties), and whether each sorted row is positive."""

    order: np.ndarray
    ends: np.ndarray | None
    positive: np.ndarray


class Plan:
    """Per-row quantities of one model, computed once and weighted per replicate.

    ``linear`` holds, one column each, the per-row values whose weighted sums make the
    metrics (``columns`` names them), so one product ``counts @ linear`` serves them all.
    """

    def __init__(self, p: Predictions, t: Truth):
        self.p, self.t = p, t
        y = t.y
        cols: dict[str, np.ndarray] = {}
        self.ranked: list[_Ranked] = []
        if t.task == "regression":
            resid = y - p.value
            yc = y - y.mean()  # centred once: the sums of squares lose nothing to cancellation
            cols.update(abs_resid=np.abs(resid), sq_resid=resid**2, yc=yc, yc2=yc**2)
        else:
            correct = (p.labels == y).astype(float)
            onehot = t.onehot
            cols["correct"] = correct
            cols.update({f"support{c}": onehot[:, c] for c in range(onehot.shape[1])})
            cols.update({f"hit{c}": onehot[:, c] * correct for c in range(onehot.shape[1])})
            if p.proba is not None:
                eps = np.finfo(p.proba.dtype).eps
                cols["loss"] = -np.log(np.clip(p.proba[np.arange(len(y)), y], eps, 1 - eps))
                cols["brier"] = (((y == 1) - p.proba[:, 1]) ** 2 if onehot.shape[1] == 2
                                 else ((onehot - p.proba) ** 2).sum(axis=1))
            s = p.scores()
            scored = [] if s is None else [s] if s.ndim == 1 else [s[:, c] for c in range(s.shape[1])]
            hits = [y == 1] if len(scored) == 1 else [y == c for c in range(len(scored))]
            self.ranked = [_rank(c, h) for c, h in zip(scored, hits)]
        self.columns = {name: j for j, name in enumerate(cols)}
        self.linear = np.column_stack(list(cols.values()))
        self.correct = cols.get("correct")


def _rank(score: np.ndarray, positive: np.ndarray) -> _Ranked:
    order = np.argsort(score, kind="stable")
    s = score[order]
    ends = np.flatnonzero(np.r_[s[1:] != s[:-1], True])  # the last row of each run of tied scores
    return _Ranked(order, None if len(ends) == len(s) else ends, positive[order].astype(float))


def replicates(metrics, plan: Plan, counts: np.ndarray) -> dict[str, np.ndarray]:
    """{metric: ndarray (b,)} of one model in each replicate of ``counts`` (b, n): NaN where
    the metric is undefined (one class only for ROC AUC, a constant target for R²)."""
    n = counts.shape[1]
    sums = counts @ plan.linear
    col = {name: sums[:, j] for name, j in plan.columns.items()}
    out = {}
    for m in metrics:
        if m == "roc_auc":
            # macro average over classes: NaN when a class is absent, as roc_auc_score gives
            out[m] = (np.mean([_weighted_auc(counts, r) for r in plan.ranked], axis=0) if plan.ranked
                      else np.full(len(counts), np.nan))
        elif m == "balanced_accuracy":
            k = len(plan.t.classes)
            support = np.column_stack([col[f"support{c}"] for c in range(k)])
            hit = np.column_stack([col[f"hit{c}"] for c in range(k)])
            # balanced_accuracy_score averages the recall of the classes present in y_true
            out[m] = np.sum(hit / np.maximum(support, 1), axis=1) / np.sum(support > 0, axis=1)
        elif m == "r2":
            out[m] = _replicate_r2(plan, counts, col)
        elif m == "rmse":
            out[m] = np.sqrt(col["sq_resid"] / n)
        else:
            key = {"mae": "abs_resid", "accuracy": "correct", "log_loss": "loss", "brier": "brier"}[m]
            out[m] = col[key] / n if key in col else np.full(len(counts), np.nan)
    return out


def _replicate_r2(plan: Plan, counts: np.ndarray, col: dict) -> np.ndarray:
    n = counts.shape[1]
    ss_tot = col["yc2"] - col["yc"] ** 2 / n
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = 1.0 - col["sq_resid"] / ss_tot
    # a replicate that drew one target value only has no R²; rounding hides an exact 0 of
    # ss_tot, so the replicates with a tiny one are looked at row by row
    for b in np.flatnonzero(ss_tot <= 1e-9 * col["yc2"]):
        if np.ptp(plan.t.y[counts[b] > 0]) == 0:
            r2[b] = np.nan
    return r2


def _weighted_auc(counts: np.ndarray, r: _Ranked) -> np.ndarray:
    """ROC AUC of each replicate: P(score of a positive > score of a negative) + half the ties,
    over the drawn rows with their multiplicities. Weights are whole numbers, so the running
    sums are exact."""
    w = counts[:, r.order]
    cum_all = np.cumsum(w, axis=1)
    cum_pos = np.cumsum(w * r.positive, axis=1)
    if r.ends is not None:  # sums over each run of tied scores
        cum_all, cum_pos = cum_all[:, r.ends], cum_pos[:, r.ends]
    cum_neg = cum_all - cum_pos
    pos = np.diff(cum_pos, axis=1, prepend=0.0)
    neg = np.diff(cum_neg, axis=1, prepend=0.0)
    wins = (pos * (cum_neg - 0.5 * neg)).sum(axis=1)
    n_pos, n_neg = cum_pos[:, -1], cum_neg[:, -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((n_pos > 0) & (n_neg > 0), wins / (n_pos * n_neg), np.nan)
