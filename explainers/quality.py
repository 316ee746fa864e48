"""How good a fitted model is on data with a target: the numbers behind quality figures.

Classifiers: the confusion matrix at a threshold (binary) or by the most probable class
(multiclass), ROC and precision-recall curves with their areas, the calibration
(reliability) curve with the rows in each bin, cumulative gains and lift, and the metrics
that follow the threshold; one-vs-rest curves and a per-class table for several classes.
Regressors: predicted against actual, residuals (actual - predicted), their quantiles,
and R², MAE, RMSE, MAPE (where no target is 0), median and max absolute error.

scikit-learn's metric functions compute every number; this module picks the rows (those
with a target), lines the predictions up with the classes and packs the results in small
frozen dataclasses. Predictions come from :class:`~explainers.model.ModelAdapter`.

>>> from explainers.quality import quality
>>> q = quality(model, X, y, threshold=0.4)          # doctest: +SKIP
>>> q.confusion.to_frame(); q.roc[0].auc; q.metrics   # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .errors import ExplainerError, InvalidDataError, InvalidModelError, InvalidParameterError, param_error
from .model import ModelAdapter, _is_anomaly_model


class _Metrics:
    """``sklearn.metrics``, imported on first use: scikit-learn and SciPy take about a second to
    import, and the Model page of a model read from a library's file needs neither."""

    def __getattr__(self, name: str):
        from sklearn import metrics

        return getattr(metrics, name)


skm = _Metrics()

__all__ = [
    "quality", "classification_quality", "regression_quality", "target_rows",
    "confusion", "roc", "precision_recall", "calibration", "gains", "threshold_metrics",
    "class_table", "regression_metrics", "residual_quantiles", "residual_bands",
    "ConfusionResult", "RocCurve", "PrCurve", "CalibrationCurve", "GainsCurve",
    "ClassificationQuality", "RegressionQuality", "NO_TARGET_MESSAGE",
]

NO_TARGET_MESSAGE = ("Model quality needs the target column: the data has no target, so there is nothing to "
                     "compare the predictions with. Load the data with its target column (name it as the "
                     "target when loading) to see how good the model is.")

#: residual quantiles reported by default
QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)


# --------------------------------------------------------------------- results
@dataclass(frozen=True)
class ConfusionResult:
    """Counts of actual (rows) against predicted (columns) classes.

    matrix : ndarray of shape (k, k), int; ``matrix[i, j]`` rows of class ``labels[i]``
        predicted as ``labels[j]``.
    threshold : the probability of ``labels[positive]`` from which a row is predicted
        positive (binary), or None (multiclass: the most probable class).
    """

    labels: list
    matrix: np.ndarray
    threshold: float | None = None
    positive: int | None = None

    def to_frame(self) -> pd.DataFrame:
        idx = pd.Index([str(c) for c in self.labels], name="actual")
        cols = pd.Index([str(c) for c in self.labels], name="predicted")
        return pd.DataFrame(self.matrix, index=idx, columns=cols)


@dataclass(frozen=True)
class RocCurve:
    """ROC curve of one class against the rest: scikit-learn's ``roc_curve`` and its area."""

    label: object
    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray
    auc: float

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"threshold": self.thresholds, "fpr": self.fpr, "tpr": self.tpr})


@dataclass(frozen=True)
class PrCurve:
    """Precision-recall curve of one class against the rest, with average precision and the
    share of positive rows (the precision of a model that guesses)."""

    label: object
    precision: np.ndarray
    recall: np.ndarray
    thresholds: np.ndarray
    average_precision: float
    prevalence: float

    def to_frame(self) -> pd.DataFrame:
        # scikit-learn's last point (recall 0, precision 1) has no threshold
        return pd.DataFrame({"threshold": np.append(self.thresholds, np.nan), "precision": self.precision,
                             "recall": self.recall})


@dataclass(frozen=True)
class CalibrationCurve:
    """Reliability curve: per non-empty bin of predicted probability, the mean predicted
    probability, the observed share of positives and the number of rows.

    ``bin_edges`` are the ``n_bins + 1`` edges (uniform on [0, 1]); ``bins`` the index of
    each reported bin among them (empty bins are left out, as scikit-learn does).
    """

    label: object
    prob_pred: np.ndarray
    prob_true: np.ndarray
    counts: np.ndarray
    bins: np.ndarray
    bin_edges: np.ndarray
    brier: float

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"bin_low": self.bin_edges[self.bins], "bin_high": self.bin_edges[self.bins + 1],
                             "mean_predicted": self.prob_pred, "observed": self.prob_true, "rows": self.counts})


@dataclass(frozen=True)
class GainsCurve:
    """Cumulative gains and lift: rows sorted by the class's probability, highest first.

    fraction : share of rows taken (0 ... 1); gains : share of all positive rows among
    them; lift : gains / fraction (NaN at fraction 0); ``rows`` the number of rows taken.
    """

    label: object
    rows: np.ndarray
    fraction: np.ndarray
    gains: np.ndarray
    lift: np.ndarray
    prevalence: float

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"rows": self.rows, "fraction": self.fraction, "gains": self.gains, "lift": self.lift})


@dataclass(frozen=True)
class ClassificationQuality:
    """Quality of a classifier on the rows that have a target.

    rows : ndarray (m,) positions (0-based) in the data given of the rows used;
    y_true : ndarray (m,) index of each row's actual class in ``classes``;
    proba : ndarray (m, k) class probabilities; y_pred : ndarray (m,) predicted class index
    (threshold on ``classes[positive]`` for binary, argmax otherwise);
    roc, pr, calibration, gains : one curve per class (binary: the positive class only);
    metrics : overall numbers (threshold metrics for binary); per_class : precision,
    recall, F1, support, ROC AUC and average precision per class.
    """

    task: str
    classes: list
    positive: int
    threshold: float | None
    rows: np.ndarray
    y_true: np.ndarray
    proba: np.ndarray
    y_pred: np.ndarray
    confusion: ConfusionResult
    roc: list
    pr: list
    calibration: list
    gains: list
    metrics: dict
    per_class: pd.DataFrame
    n_left_out: int = 0
    n_unknown: int = 0
    params: dict = field(default_factory=dict)
    scale: str = "proba"

    def curve_index(self, class_index: int) -> int:
        """Position in ``roc``/``pr``/... of the curves of ``classes[class_index]``."""
        return 0 if self.task == "binary" else int(class_index)

    def rows_in_cell(self, actual, predicted) -> np.ndarray:
        """Positions (in the data given) of the rows of class ``actual`` predicted as
        ``predicted`` (labels or class indices): one cell of the confusion matrix."""
        a, p = self._class_pos(actual), self._class_pos(predicted)
        return self.rows[(self.y_true == a) & (self.y_pred == p)]

    def _class_pos(self, c) -> int:
        labels = [str(x) for x in self.classes]
        if str(c) in labels:
            return labels.index(str(c))
        if isinstance(c, (int, np.integer)) and 0 <= c < len(labels):
            return int(c)
        raise InvalidParameterError(f"{c!r} is not a class of this model; its classes are {labels}.")

    def to_frame(self) -> pd.DataFrame:
        """One line per row used: row, actual, predicted, the probability of each class."""
        labels = [str(c) for c in self.classes]
        out = pd.DataFrame({"row": self.rows, "actual": [labels[i] for i in self.y_true],
                            "predicted": [labels[i] for i in self.y_pred]})
        for j, c in enumerate(labels):
            out[f"P({c})"] = self.proba[:, j]
        return out


@dataclass(frozen=True)
class RegressionQuality:
    """Quality of a regressor on the rows that have a target.

    rows : ndarray (m,) positions in the data given; y_true, y_pred, residuals (actual -
    predicted) : ndarray (m,); metrics : r2, mae, rmse, mape (None where a target is 0),
    median_ae, max_error, mean_residual; quantiles : residual quantile -> value.
    """

    rows: np.ndarray
    y_true: np.ndarray
    y_pred: np.ndarray
    residuals: np.ndarray
    metrics: dict
    quantiles: dict
    n_left_out: int = 0
    params: dict = field(default_factory=dict)

    task = "regression"

    def rows_in_band(self, low: float | None, high: float | None) -> np.ndarray:
        """Positions of the rows whose residual is in [low, high) (None: open on that side)."""
        low, high = (None if v is None or pd.isna(v) else float(v) for v in (low, high))
        keep = np.ones(len(self.residuals), bool)
        if low is not None:
            keep &= self.residuals >= low
        if high is not None:
            keep &= self.residuals < high
        return self.rows[keep]

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"row": self.rows, "actual": self.y_true, "predicted": self.y_pred,
                             "residual": self.residuals})


# ------------------------------------------------------------------ the rows
def target_rows(y) -> tuple[np.ndarray, int]:
    """(positions of the rows with a target, number left out): NaN, None and blank text
    cells are no target."""
    from .cells import missing_target

    blank = missing_target(y.to_numpy() if isinstance(y, pd.Series) else np.asarray(y))
    return np.flatnonzero(~blank), int(blank.sum())


def _check_target(y, n: int):
    if y is None:
        raise ExplainerError(NO_TARGET_MESSAGE)
    if isinstance(y, pd.DataFrame):
        if y.shape[1] != 1:
            raise InvalidDataError(f"quality takes one target column; got {y.shape[1]} ({list(y.columns)}).")
        y = y.iloc[:, 0]
    if np.ndim(y) != 1:
        raise InvalidDataError(f"quality takes one target column (a 1-D y); got shape {np.shape(y)}.")
    if len(y) != n:
        raise InvalidDataError(f"y has {len(y)} rows but X has {n}: give one target per row of X.")
    return y


# ------------------------------------------------------------ one entry point
def quality(model, X, y, *, threshold: float | None = None, class_index: int | None = None, n_bins: int = 10,
            output_index: int | None = None) -> "ClassificationQuality | RegressionQuality":
    """The quality of a fitted model on ``X`` against its target ``y``.

    Parameters
    ----------
    model : fitted estimator or :class:`~explainers.model.ModelAdapter`
    X : DataFrame or array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Targets; rows without one (NaN, None, blank text) are left out and counted
        (``n_left_out``). Class labels are matched to the model's classes as text, so
        ``"1"`` in a CSV matches the class ``1``; labels the model does not know are
        left out too (``n_unknown``).
    threshold : float, default=None
        Binary classifiers: a row is predicted ``classes[positive]`` when its probability
        of that class is at least ``threshold`` (in [0, 1]; None: 0.5). A classifier without
        predict_proba is scored on its decision function: a row is predicted
        ``classes[positive]`` when that class's margin is above ``threshold`` (None: 0, the
        model's own rule). Ignored for several classes (most probable class; the model's own
        prediction for a decision function).
    class_index : int, default=None
        Binary: the positive class (default the second, ``classes[1]``). Multiclass: only
        recorded in ``params`` (every class gets its one-vs-rest curves).
    n_bins : int >= 2, default=10
        Bins of the calibration curve.
    output_index : int, default=None
        For a regressor with several outputs: the output ``y`` is the target of.

    Returns
    -------
    ClassificationQuality or RegressionQuality

    Raises
    ------
    ExplainerError
        No target (``y`` is None, or every cell is blank); an outlier detector (it has no
        target to compare with); a target the model cannot be scored on.
    """
    adapter = model if isinstance(model, ModelAdapter) else ModelAdapter(model)
    if adapter.explained is not None or _is_anomaly_model(adapter.model):
        raise InvalidModelError(
            f"Model quality compares predictions with a target; this {type(adapter.model).__name__} is an "
            "outlier detector whose anomaly score has no target to compare with.")
    y = _check_target(y, len(X))
    if adapter.task == "regression":
        pred = adapter.with_output("auto", class_index=None).predict(X)
        if pred.ndim == 2:
            k = pred.shape[1]
            if output_index is None:
                raise ExplainerError(
                    f"This model predicts {k} targets; quality compares one at a time: pass output_index "
                    f"(0 to {k - 1}) with that output's target column as y.")
            pred = pred[:, int(output_index)]
        return regression_quality(y, pred)
    if not hasattr(adapter.model, "predict_proba"):  # SVC, RidgeClassifier...: scored on the decision function
        scores = adapter.with_output("raw", class_index=None).predict(X)
        return classification_quality(y, scores, list(adapter.classes), threshold=threshold,
                                      class_index=class_index, n_bins=n_bins, scale="margin",
                                      labels=margin_labels(adapter, X))
    proba = adapter.with_output("proba", class_index=None).predict(X)
    return classification_quality(y, proba, list(adapter.classes), threshold=threshold,
                                  class_index=class_index, n_bins=n_bins)


def margin_labels(adapter: ModelAdapter, X) -> np.ndarray:
    """The positions in ``classes`` of a classifier's own predicted labels (its ``predict``)."""
    position = {str(c): i for i, c in enumerate(adapter.classes)}
    codes, uniques = pd.factorize(pd.Series(adapter.predict_labels(X), dtype=object), use_na_sentinel=False)
    return np.array([position[str(v)] for v in uniques], dtype=int)[codes]


# ---------------------------------------------------------------- classifiers
def _encode(y, classes) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(positions kept, class index of each kept row, n left out blank, n unknown labels)."""
    keep, n_blank = target_rows(y)
    values = np.asarray(y, dtype=object)[keep]
    lookup = {str(c): i for i, c in enumerate(classes)}
    # 1.0 read from a CSV with blanks is the class 1: numbers match by value too
    for i, c in enumerate(classes):
        if isinstance(c, (int, np.integer, float, np.floating)) and not isinstance(c, bool):
            lookup.setdefault(str(float(c)), i)
    # each distinct value's text looked up once (a million rows hold a few classes)
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
    idx = np.array([lookup.get(str(v), -1) for v in uniques], dtype=int)[codes] if len(values) else \
        np.zeros(0, dtype=int)
    known = idx >= 0
    return keep[known], idx[known], n_blank, int((~known).sum())


def classification_quality(y, proba, classes, *, threshold: float | None = None, class_index: int | None = None,
                           n_bins: int = 10, scale: str = "proba", labels=None,
                           reuse: "ClassificationQuality | None" = None) -> ClassificationQuality:
    """Quality of a classifier from its class probabilities ``proba`` (n, k) and targets ``y``.

    The work of :func:`quality` once the probabilities are known (the dashboard keeps them
    between threshold changes). Parameters as there, and:

    scale : {"proba", "margin"}
        ``"margin"``: ``proba`` is a decision function, (n,) for two classes (the margin of
        ``classes[1]``) or (n, k). Curves and AUC rank rows by it; the calibration curve,
        the Brier score and the log loss need probabilities and are left out (empty, NaN).
    labels : array of int, default=None
        With ``"margin"`` and several classes: the model's own predictions (positions in
        ``classes``); else the class of highest margin.
    reuse : ClassificationQuality, default=None
        This function's result for the same ``y``, ``proba``, class, scale and bins at another
        threshold: what does not depend on the threshold (the curves, their areas, the log
        loss, the per-class areas) is taken from it, not computed again (a threshold slider
        on a million rows). Ignored where it does not match.
    """
    classes = list(classes)
    k = len(classes)
    if scale not in ("proba", "margin"):
        raise param_error("scale", "quality", "'proba' or 'margin'", scale)
    margin = scale == "margin"
    proba = _scores(proba, k, margin)
    if threshold is None:
        threshold = 0.0 if margin else 0.5
    if not isinstance(threshold, (int, float, np.floating, np.integer)) or not (
            np.isfinite(threshold) if margin else 0 <= float(threshold) <= 1):
        raise param_error("threshold", "quality", "a finite float (a margin)" if margin else "a float in [0, 1]",
                          threshold)
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 2:
        raise param_error("n_bins", "quality", "an int >= 2", n_bins)
    y = _check_target(y, len(proba))
    rows, y_true, n_blank, n_unknown = _encode(y, classes)
    if len(rows) == 0:
        raise ExplainerError(NO_TARGET_MESSAGE if n_unknown == 0 else
                             f"None of the target's values is a class of this model ({[str(c) for c in classes]}): "
                             "is the right column the target?")
    p = proba[rows]
    binary = k == 2
    if binary:
        positive = 1 if class_index is None else int(class_index)
        if positive not in (0, 1):
            raise param_error("class_index", "quality", "0 or 1 for a binary classifier", class_index)
        threshold = float(threshold)
        # a decision function predicts the class above 0, as the model's predict does (0 itself:
        # classes[1]); a probability, the class at or above the threshold
        above = p[:, positive] > threshold if margin else p[:, positive] >= threshold
        y_pred = np.where(above, positive, 1 - positive)
    else:
        positive = 0 if class_index is None else int(class_index)
        threshold = None
        y_pred = np.asarray(labels)[rows] if margin and labels is not None else np.argmax(p, axis=1)
    counts = _counts(y_true, y_pred, k)
    conf = ConfusionResult(classes, counts if counts is not None else
                           skm.confusion_matrix(y_true, y_pred, labels=np.arange(k)), threshold,
                           positive if binary else None)
    curve_classes = [positive] if binary else list(range(k))
    reuse = reuse if (binary and reuse is not None and reuse.positive == positive and reuse.scale == scale
                      and reuse.params.get("n_bins") == n_bins and np.array_equal(reuse.rows, rows)) else None
    rocs, prs, cals, gs = ((list(reuse.roc), list(reuse.pr), list(reuse.calibration), list(reuse.gains))
                           if reuse is not None else _class_curves(y_true, p, classes, curve_classes, margin, n_bins))
    if binary:
        hit = (y_true == positive).astype(int)
        # the metrics of the predictions made above (a margin's rule is strict, a probability's is not):
        # as 0/1 scores, at 0.5 they are those predictions
        metrics = threshold_metrics(hit, (y_pred == positive).astype(float), 0.5)
        metrics["threshold"] = threshold
        metrics["roc_auc"] = rocs[0].auc
        metrics["average_precision"] = prs[0].average_precision
        metrics["brier"] = float("nan") if margin else cals[0].brier
    else:
        metrics = {
            "accuracy": float(skm.accuracy_score(y_true, y_pred)),
            "balanced_accuracy": float(skm.balanced_accuracy_score(y_true, y_pred)),
            "macro_f1": float(skm.f1_score(y_true, y_pred, labels=np.arange(k), average="macro", zero_division=0)),
            # one vs rest, macro: scikit-learn's multi_class="ovr" (which takes only probabilities) is
            # the mean of the classes' own AUCs, and so it is on margins
            "roc_auc_ovr": (float(np.mean([r.auc for r in rocs])) if margin else
                            float(skm.roc_auc_score(y_true, p, multi_class="ovr", labels=np.arange(k))))
                           if len(np.unique(y_true)) == k else float("nan"),
        }
    metrics["log_loss"] = (reuse.metrics["log_loss"] if reuse is not None else float("nan") if margin
                           else float(skm.log_loss(y_true, p, labels=np.arange(k))))
    metrics["rows"] = int(len(rows))
    return ClassificationQuality(
        task="binary" if binary else "multiclass", classes=classes, positive=positive, threshold=threshold,
        rows=rows, y_true=y_true, proba=p, y_pred=y_pred, confusion=conf, roc=rocs, pr=prs, calibration=cals,
        gains=gs, metrics=metrics,
        per_class=class_table(y_true, y_pred, p, classes, known=(
            {c: (r.auc, pr.average_precision) for c, r, pr in zip(curve_classes, rocs, prs)} if reuse is None else
            {c: (a, b) for c, (a, b) in enumerate(zip(reuse.per_class.roc_auc, reuse.per_class.average_precision))})),
        n_left_out=n_blank, n_unknown=n_unknown, params={"threshold": threshold, "class_index": class_index,
                                                          "n_bins": n_bins}, scale=scale)


def _class_curves(y_true, p, classes, curve_classes, margin: bool, n_bins: int) -> tuple[list, list, list, list]:
    """ROC, precision-recall, calibration (probabilities only) and gains curves of each class in
    ``curve_classes``, one against the rest."""
    rocs, prs, cals, gs = [], [], [], []
    for c in curve_classes:
        hit = (y_true == c).astype(int)
        ranking = _ranking(hit, p[:, c], None)  # one sort for the ROC, precision-recall and gains curves
        rocs.append(roc(hit, p[:, c], label=classes[c], ranking=ranking))
        prs.append(precision_recall(hit, p[:, c], label=classes[c], ranking=ranking))
        if not margin:  # a margin is no probability: there is nothing to calibrate
            cals.append(calibration(hit, p[:, c], n_bins=n_bins, label=classes[c]))
        gs.append(gains(hit, p[:, c], label=classes[c], ranking=ranking))
    return rocs, prs, cals, gs


def _scores(proba, k: int, margin: bool) -> np.ndarray:
    """Class probabilities (n, k), or margins: a binary decision function (n,) becomes the
    margins of both classes, (-s, s)."""
    proba = np.asarray(proba, dtype=float)
    if margin and k == 2 and (proba.ndim == 1 or (proba.ndim == 2 and proba.shape[1] == 1)):
        s = proba.reshape(-1)
        proba = np.column_stack([-s, s])
    if proba.ndim != 2 or proba.shape[1] != k:
        raise InvalidDataError(f"proba must have shape (n_samples, {k}) for {k} classes; got {proba.shape}.")
    return proba


def confusion(y_true, y_pred, labels) -> ConfusionResult:
    """Confusion matrix of class indices (or labels) ``y_true`` against ``y_pred`` over ``labels``."""
    return ConfusionResult(list(labels), skm.confusion_matrix(y_true, y_pred, labels=list(labels)))


def _binary(hit, score):
    hit = np.asarray(hit).astype(int)
    score = np.asarray(score, dtype=float)
    if hit.shape != score.shape or hit.ndim != 1:
        raise InvalidDataError(f"y_true and the scores must be 1-D of the same length; got {hit.shape}, {score.shape}.")
    return hit, score


@dataclass(frozen=True)
class _Ranking:
    """Rows ranked by one score, highest first (ties in data order): one sort shared by the ROC,
    precision-recall and gains curves. ``cum[i]``: positive rows among the first ``i``;
    ``tps``/``fps``/``thresholds``: the counts at each distinct score, as scikit-learn's
    ``confusion_matrix_at_thresholds`` gives them (the counts at the end of a run of tied
    scores do not depend on the order inside the run)."""

    order: np.ndarray
    cum: np.ndarray
    tps: np.ndarray
    fps: np.ndarray
    thresholds: np.ndarray

    @classmethod
    def of(cls, hit: np.ndarray, score: np.ndarray) -> "_Ranking":
        order = np.argsort(-score, kind="stable")
        ranked = score[order]
        cum = np.concatenate([[0], np.cumsum(hit[order])])
        ends = np.r_[np.flatnonzero(np.diff(ranked)), len(ranked) - 1] if len(ranked) else np.zeros(0, int)
        tps = cum[ends + 1].astype(np.float64)
        return cls(order, cum, tps, 1 + ends.astype(np.float64) - tps, ranked[ends])


def _ranking(hit, score, ranking: _Ranking | None) -> _Ranking:
    if ranking is None and not np.isfinite(score).all():
        raise InvalidDataError(f"The scores hold {int((~np.isfinite(score)).sum())} empty or infinite value(s): "
                               "a curve ranks rows by a finite score.")
    return ranking if ranking is not None else _Ranking.of(hit, score)


def roc(y_true, score, *, label=1, ranking: _Ranking | None = None) -> RocCurve:
    """ROC curve of 0/1 ``y_true`` against ``score`` (scikit-learn's ``roc_curve``), with its
    area (NaN when only one class is present). ``ranking``: the rows already ranked by ``score``."""
    hit, score = _binary(y_true, score)
    positives = int(hit.sum())
    if positives == 0 or positives == len(hit) or not ((hit == 0) | (hit == 1)).all():
        if positives == 0 or positives == len(hit):
            nan = np.array([np.nan])
            return RocCurve(label, nan, nan, nan, float("nan"))
        fpr, tpr, thr = skm.roc_curve(hit, score)  # not 0/1: scikit-learn says what is wrong
        return RocCurve(label, fpr, tpr, thr, float(skm.auc(fpr, tpr)))
    r = _ranking(hit, score, ranking)
    # roc_curve(drop_intermediate=True): the points between collinear ones are left out
    tps, fps, thr = r.tps, r.fps, r.thresholds
    if len(fps) > 2:
        corners = np.flatnonzero(np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True])
        tps, fps, thr = tps[corners], fps[corners], thr[corners]
    tps, fps = np.r_[0.0, tps], np.r_[0.0, fps]
    thr = np.r_[np.inf, thr.astype(np.float64)]
    fpr, tpr = fps / fps[-1], tps / tps[-1]
    return RocCurve(label, fpr, tpr, thr, float(skm.auc(fpr, tpr)))


def precision_recall(y_true, score, *, label=1, ranking: _Ranking | None = None) -> PrCurve:
    """Precision-recall curve (scikit-learn's ``precision_recall_curve``) and average precision
    (its ``average_precision_score``). ``ranking``: the rows already ranked by ``score``."""
    hit, score = _binary(y_true, score)
    prevalence = float(hit.mean()) if len(hit) else float("nan")
    if hit.sum() == 0:
        nan = np.array([np.nan])
        return PrCurve(label, nan, nan, nan, float("nan"), prevalence)
    if not ((hit == 0) | (hit == 1)).all():  # not 0/1: scikit-learn says what is wrong
        prec, rec, thr = skm.precision_recall_curve(hit, score)
        return PrCurve(label, prec, rec, thr, float(skm.average_precision_score(hit, score)), prevalence)
    r = _ranking(hit, score, ranking)
    ps = r.tps + r.fps  # never 0: each distinct score holds a row
    precision = np.r_[(r.tps / ps)[::-1], 1.0]
    recall = np.r_[(r.tps / r.tps[-1])[::-1], 0.0]
    # the step function's integral; -0.0 from rounding is clipped, as scikit-learn does
    ap = float(max(0.0, -np.sum(np.diff(recall) * precision[:-1])))
    return PrCurve(label, precision, recall, r.thresholds[::-1], ap, prevalence)


def calibration(y_true, score, *, n_bins: int = 10, label=1) -> CalibrationCurve:
    """Reliability curve over ``n_bins`` uniform bins of [0, 1] (scikit-learn's
    ``calibration_curve``), with the number of rows in each non-empty bin and the Brier score."""
    hit, score = _binary(y_true, score)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    # the same bin assignment as calibration_curve(strategy="uniform")
    binids = np.searchsorted(edges[1:-1], score)
    counts = np.bincount(binids, minlength=n_bins)
    bins = np.flatnonzero(counts)
    if len(np.unique(hit)) < 2:  # calibration_curve refuses one class; the shares are 0 or 1
        prob_true = np.full(len(bins), float(hit[0]) if len(hit) else np.nan)
        prob_pred = np.bincount(binids, weights=score, minlength=n_bins)[bins] / counts[bins]
    else:
        from sklearn.calibration import calibration_curve

        prob_true, prob_pred = calibration_curve(hit, score, n_bins=n_bins, strategy="uniform")
    return CalibrationCurve(label, prob_pred, prob_true, counts[bins], bins, edges,
                            float(skm.brier_score_loss(hit, score, pos_label=1)) if len(hit) else float("nan"))


def gains(y_true, score, *, label=1, max_points: int = 200, ranking: _Ranking | None = None) -> GainsCurve:
    """Cumulative gains and lift: rows by ``score`` highest first (ties in data order).

    At most ``max_points + 1`` points (every row for small data; evenly spaced row counts
    beyond), always from 0 to all rows. ``ranking``: the rows already ranked by ``score``.
    """
    hit, score = _binary(y_true, score)
    n = len(hit)
    cum = (ranking if ranking is not None else _Ranking.of(hit, score)).cum
    total = cum[-1]
    taken = np.unique(np.round(np.linspace(0, n, min(n, max_points) + 1)).astype(int))
    fraction = taken / n if n else taken.astype(float)
    g = cum[taken] / total if total else np.full(len(taken), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        lift = np.where(taken > 0, g / np.where(fraction > 0, fraction, 1), np.nan)
    return GainsCurve(label, taken, fraction, g, lift, float(total / n) if n else float("nan"))


def _counts(y_true, y_pred, k: int) -> np.ndarray | None:
    """The k x k confusion matrix of class indices (scikit-learn's ``confusion_matrix`` with
    labels 0..k-1) by one count; None where an index lies outside 0..k-1."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if len(y_true) and (min(y_true.min(), y_pred.min()) < 0 or max(y_true.max(), y_pred.max()) >= k
                        or y_true.dtype.kind not in "iub" or y_pred.dtype.kind not in "iub"):
        return None
    return np.bincount(y_true.astype(np.int64) * k + y_pred, minlength=k * k).reshape(k, k)


def _text_codes(values) -> tuple[np.ndarray, np.ndarray]:
    """(code of each value, the text of each code): ``values.astype(str)`` (a Series as pandas
    writes it, an array as numpy does) factorized, each distinct value's text formed once where
    values that compare equal read the same (not 1 and True in one column, nor 0.0 and -0.0)."""
    series = isinstance(values, pd.Series)
    a = values.to_numpy() if series and not isinstance(values.dtype, pd.CategoricalDtype) else values

    def text(v):
        return pd.Series(v).astype(str).to_numpy() if series else np.asarray(v).astype(str)

    kind = getattr(a, "dtype", np.dtype(object)).kind
    by_value = (kind in "iub" or isinstance(values.dtype if series else None, pd.CategoricalDtype)
                or (kind == "f" and not np.any(np.signbit(a) & (a == 0)))
                or (kind == "O" and pd.api.types.infer_dtype(a, skipna=False) == "string"))
    if not by_value:  # mixed types: the text of every row
        return pd.factorize(text(values), use_na_sentinel=False)
    codes, uniques = pd.factorize(values if series else np.asarray(values), use_na_sentinel=False)
    return codes, text(uniques)


def accuracy_as_text(y_true, y_pred) -> float:
    """The share of rows whose two labels read the same as text: scikit-learn's
    ``accuracy_score(y_true.astype(str), y_pred.astype(str))`` (a target read from a file as
    1.0 and a class 1 are compared as written), with each distinct value's text formed once
    (a million rows hold a few classes)."""
    if len(y_true) != len(y_pred):
        raise InvalidDataError(f"y_true and y_pred differ in length ({len(y_true)} and {len(y_pred)}).")
    if len(y_true) == 0:
        return float("nan")
    codes_t, text_t = _text_codes(y_true)
    codes_p, text_p = _text_codes(y_pred)
    same = np.asarray(text_t, dtype=object)[:, None] == np.asarray(text_p, dtype=object)[None, :]
    return float(np.mean(same[codes_t, codes_p]))


def _ratio(num, den) -> np.ndarray:
    """num / den, 0 where den is 0 (scikit-learn's zero_division=0)."""
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros_like(num), where=den != 0)


def threshold_metrics(y_true, score, threshold: float) -> dict:
    """Metrics of the 0/1 predictions ``score >= threshold`` against 0/1 ``y_true``:
    tp, fp, tn, fn, accuracy, precision, recall, specificity, f1, balanced_accuracy,
    npv (negative predictive value) and the share predicted positive (scikit-learn's
    definitions, from the four counts)."""
    hit, score = _binary(y_true, score)
    pred = (score >= threshold).astype(int)
    both = _counts(hit, pred, 2) if ((hit == 0) | (hit == 1)).all() else None
    if both is None:  # not 0/1: scikit-learn's confusion matrix counts the 0/1 rows only
        both = skm.confusion_matrix(hit, pred, labels=[0, 1])
    tn, fp, fn, tp = (int(v) for v in both.ravel())
    n = tn + fp + fn + tp
    return {
        "threshold": float(threshold),
        "tp": tp, "fp": fp, "tn": tn, "fn": fn,
        "accuracy": float((tp + tn) / n) if n else float("nan"),
        "precision": float(_ratio(tp, tp + fp)),
        "recall": float(_ratio(tp, tp + fn)),
        "specificity": float(tn / (tn + fp)) if tn + fp else float("nan"),
        "f1": float(_ratio(2 * tp, (tp + fn) + (tp + fp))),
        "balanced_accuracy": float((tp / (tp + fn) + tn / (tn + fp)) / 2) if tp + fn and tn + fp else float("nan"),
        "npv": float(tn / (tn + fn)) if tn + fn else float("nan"),
        "predicted_positive": float(pred.mean()) if len(pred) else float("nan"),
    }


def class_table(y_true, y_pred, proba, classes, known: dict | None = None) -> pd.DataFrame:
    """Per class (one-vs-rest): precision, recall, F1, support, predicted count, ROC AUC and
    average precision (NaN for a class with no rows). ``known``: class -> (ROC AUC, average
    precision) already computed by the same functions (the curves'), not computed again."""
    k = len(classes)
    counts = _counts(y_true, y_pred, k)
    if counts is None:
        prec, rec, f1, sup = skm.precision_recall_fscore_support(y_true, y_pred, labels=np.arange(k),
                                                                 zero_division=0)
    else:  # precision_recall_fscore_support(zero_division=0) from the confusion matrix
        tp, predicted, sup = np.diag(counts), counts.sum(axis=0), counts.sum(axis=1)
        prec, rec, f1 = _ratio(tp, predicted), _ratio(tp, sup), _ratio(2 * tp, sup + predicted)
    aucs, aps = [], []
    for c in range(k):
        if known and c in known:
            aucs.append(float(known[c][0]))
            aps.append(float(known[c][1]))
            continue
        # roc_auc_score and average_precision_score (NaN where a class has no rows, or every row)
        hit = (np.asarray(y_true) == c).astype(int)
        ranking = _ranking(hit, np.asarray(proba[:, c], dtype=float), None) if len(hit) else None
        aucs.append(roc(hit, proba[:, c], ranking=ranking).auc)
        aps.append(precision_recall(hit, proba[:, c], ranking=ranking).average_precision)
    return pd.DataFrame({
        "class": [str(c) for c in classes], "precision": prec, "recall": rec, "f1": f1,
        "support": sup.astype(int), "predicted": np.bincount(np.asarray(y_pred, int), minlength=k),
        "roc_auc": aucs, "average_precision": aps,
    })


# --------------------------------------------------------- prediction spread
@dataclass(frozen=True)
class Distribution:
    """Rows counted in bins of equal width, one series per name: ``counts[i, b]`` rows of
    series ``names[i]`` in ``[edges[b], edges[b + 1])`` (the last bin closed, as numpy's
    ``histogram``); ``left_out``: rows in no series (an empty or unknown target, a value that
    is not finite)."""

    edges: np.ndarray
    names: list[str]
    counts: np.ndarray
    left_out: int
    what: str = ""

    def to_frame(self) -> pd.DataFrame:
        frame = pd.DataFrame({"bin_low": self.edges[:-1], "bin_high": self.edges[1:]})
        for name, row in zip(self.names, self.counts):
            frame[name] = row
        return frame


def _bin_of(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bin of each value among ``edges`` as numpy's histogram puts it (the last bin closed)."""
    return np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)


def probability_distribution(y, proba, classes, class_index: int, *, bins: int = 20) -> Distribution:
    """How the predicted probability of class ``class_index`` spreads over [0, 1] (``bins``
    equal bins), one series per actual class: the rows of each class where the target names
    one; a model that separates the classes puts them apart."""
    k = len(classes)
    p = _scores(proba, k, False)[:, int(class_index)]
    rows, y_true, _, _ = _encode(_check_target(y, len(p)), classes)
    edges = np.linspace(0.0, 1.0, bins + 1)
    counts = np.bincount(y_true * bins + _bin_of(p[rows], edges), minlength=k * bins).reshape(k, bins)
    return Distribution(edges, [str(c) for c in classes], counts, int(len(p) - len(rows)),
                        f"predicted probability of {classes[int(class_index)]}")


def value_distribution(series: dict, *, bins: int = 30, what: str = "") -> Distribution:
    """The finite values of each named series counted on ``bins`` common bins of equal width
    spanning all of them (a regressor's predictions beside its target)."""
    values = {name: np.asarray(v, dtype=float) for name, v in series.items()}
    finite = {name: v[np.isfinite(v)] for name, v in values.items()}
    seen = [v for v in finite.values() if len(v)]
    lo = min(float(v.min()) for v in seen) if seen else 0.0
    hi = max(float(v.max()) for v in seen) if seen else 1.0
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    counts = np.array([np.bincount(_bin_of(v, edges), minlength=bins) for v in finite.values()]).reshape(
        len(finite), bins)
    left_out = int(max(len(v) - len(finite[name]) for name, v in values.items())) if values else 0
    return Distribution(edges, list(finite), counts, left_out, what)


# ----------------------------------------------------------------- regressors
def regression_quality(y, y_pred, *, quantiles=QUANTILES) -> RegressionQuality:
    """Quality of a regressor from its predictions ``y_pred`` (n,) and targets ``y`` (n,)."""
    y_pred = np.asarray(y_pred, dtype=float)
    y = _check_target(y, len(y_pred))
    rows, n_blank = target_rows(y)
    if len(rows) == 0:
        raise ExplainerError(NO_TARGET_MESSAGE)
    values = pd.to_numeric(pd.Series(np.asarray(y, dtype=object)[rows]), errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        sample = [str(v) for v in np.asarray(y, dtype=object)[rows][bad][:3]]
        raise InvalidDataError(f"The target of a regression model must be numbers; {int(bad.sum())} cell(s) are "
                               f"not (e.g. {', '.join(sample)}). Is the right column the target?")
    pred = y_pred[rows]
    resid = values - pred
    return RegressionQuality(rows=rows, y_true=values, y_pred=pred, residuals=resid,
                             metrics=regression_metrics(values, pred),
                             quantiles=residual_quantiles(resid, quantiles), n_left_out=n_blank,
                             params={"quantiles": tuple(quantiles)})


def regression_metrics(y_true, y_pred) -> dict:
    """r2, mae, rmse, mape (None when a target is 0), median_ae, max_error, mean_residual
    (actual - predicted: positive means the model predicts too low on average), rows."""
    y_true, y_pred = np.asarray(y_true, float), np.asarray(y_pred, float)
    n = len(y_true)
    return {
        "r2": float(skm.r2_score(y_true, y_pred)) if n >= 2 else float("nan"),
        "mae": float(skm.mean_absolute_error(y_true, y_pred)),
        "rmse": float(np.sqrt(skm.mean_squared_error(y_true, y_pred))),
        "mape": None if np.any(y_true == 0) else float(skm.mean_absolute_percentage_error(y_true, y_pred)),
        "median_ae": float(skm.median_absolute_error(y_true, y_pred)),
        "max_error": float(skm.max_error(y_true, y_pred)),
        "mean_residual": float(np.mean(y_true - y_pred)),
        "rows": int(n),
    }


def residual_quantiles(residuals, q=QUANTILES) -> dict:
    """{quantile: value} of the residuals (numpy's default linear interpolation)."""
    r = np.asarray(residuals, float)
    return {float(a): float(v) for a, v in zip(q, np.quantile(r, q))}


def residual_bands(result: RegressionQuality, edges=(0.05, 0.25, 0.75, 0.95)) -> pd.DataFrame:
    """Bands of the residuals between quantiles: ``low`` (None: open), ``high`` (None: open),
    ``rows`` (how many), ``name``. The outer bands hold the largest errors both ways."""
    cuts = [float(v) for v in np.quantile(result.residuals, edges)]
    lows = [None] + cuts
    highs = cuts + [None]
    names = ([f"below the {edges[0]:.0%} quantile (predicted far too high)"]
             + [f"{a:.0%} to {b:.0%} quantile" for a, b in zip(edges[:-1], edges[1:])]
             + [f"above the {edges[-1]:.0%} quantile (predicted far too low)"])
    counts = [len(result.rows_in_band(lo, hi)) for lo, hi in zip(lows, highs)]
    return pd.DataFrame({"name": names, "low": pd.Series(lows, dtype=object), "high": pd.Series(highs, dtype=object),
                         "rows": counts})
