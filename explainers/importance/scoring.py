"""Scores for the permutation methods: scikit-learn's metrics from batched predictions.

:class:`Scorer` gives exactly the score scikit-learn's scorer would, but from
predictions made for many permuted copies at once; names outside
:data:`SUPPORTED_SCORING` (and callables) fall back on scikit-learn's scorer,
one predict call per copy.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from ..errors import param_error
from ..model import ModelAdapter
from ._common import split_pipeline

__all__ = ["SUPPORTED_SCORING", "SCORING_LABELS", "Scorer", "default_scoring_name"]

#: short readable names of the common scoring names, for labels
SCORING_LABELS = {"r2": "R²", "neg_mean_squared_error": "MSE", "neg_mean_absolute_error": "MAE",
                  "neg_root_mean_squared_error": "RMSE", "accuracy": "accuracy",
                  "balanced_accuracy": "balanced accuracy", "roc_auc": "ROC AUC", "neg_log_loss": "log loss"}


@dataclass(frozen=True)
class _Metric:
    """One scikit-learn scorer, computed from predictions we already have."""

    func: Callable
    sign: float
    response: str  # "predict" | "proba" | "threshold" (decision_function, else proba)
    kwargs: tuple = ()


def _metrics() -> dict[str, _Metric]:
    from sklearn import metrics as m

    return {
        "accuracy": _Metric(m.accuracy_score, 1.0, "predict"),
        "balanced_accuracy": _Metric(m.balanced_accuracy_score, 1.0, "predict"),
        "f1": _Metric(m.f1_score, 1.0, "predict", (("average", "binary"),)),
        "precision": _Metric(m.precision_score, 1.0, "predict", (("average", "binary"),)),
        "recall": _Metric(m.recall_score, 1.0, "predict", (("average", "binary"),)),
        "r2": _Metric(m.r2_score, 1.0, "predict"),
        "explained_variance": _Metric(m.explained_variance_score, 1.0, "predict"),
        "neg_mean_squared_error": _Metric(m.mean_squared_error, -1.0, "predict"),
        "neg_root_mean_squared_error": _Metric(m.root_mean_squared_error, -1.0, "predict"),
        "neg_mean_absolute_error": _Metric(m.mean_absolute_error, -1.0, "predict"),
        "neg_median_absolute_error": _Metric(m.median_absolute_error, -1.0, "predict"),
        "neg_mean_absolute_percentage_error": _Metric(
            m.mean_absolute_percentage_error, -1.0, "predict"
        ),
        "neg_log_loss": _Metric(m.log_loss, -1.0, "proba"),
        "roc_auc": _Metric(m.roc_auc_score, 1.0, "threshold"),
    }


#: scoring names computed from batched predictions; any other scikit-learn scorer
#: (or a callable) still works, one predict call per permuted copy
SUPPORTED_SCORING = tuple(sorted(_metrics()))


def default_scoring_name(est) -> str | None:
    """The name equal to ``estimator.score``, or None if score is custom.

    A model read from a boosting library's file has no ``score``; it gets what the
    library's scikit-learn wrappers score with (accuracy, R²).
    """
    from sklearn.base import ClassifierMixin, RegressorMixin

    from ..trees import NativeTreeModel

    if isinstance(est, NativeTreeModel):
        return "accuracy" if est._estimator_type == "classifier" else "r2"
    score = getattr(type(est), "score", None)
    if score is ClassifierMixin.score:
        return "accuracy"
    if score is RegressorMixin.score:
        return "r2"
    return None


class Scorer:
    """Score many permuted copies from batched predictions, exactly as sklearn would."""

    def __init__(self, model, adapter: ModelAdapter, scoring, y, sample_weight, func: str):
        self.model = model
        self.adapter = adapter
        self.y = y
        self.sample_weight = sample_weight
        task = adapter.task
        _, est = split_pipeline(model)
        if scoring is None:
            name = default_scoring_name(est)
            self.name = name or "score"
        elif isinstance(scoring, str):
            name = scoring
            self.name = scoring
        elif callable(scoring):
            name = None
            self.name = getattr(scoring, "__name__", type(scoring).__name__)
        else:
            raise param_error(
                "scoring", func, "None, a scoring name (str) or a scorer callable", scoring
            )
        table = _metrics()
        self.metric = table.get(name) if name is not None else None
        if self.metric is not None:
            if task == "regression" and self.metric.response != "predict":
                raise param_error("scoring", func, "a regression metric for a regressor", scoring)
            if self.metric.response == "threshold" and task != "binary":
                # roc_auc on several classes needs options sklearn's name does not carry
                self.metric = None
            elif self.metric.response == "threshold" and not (
                hasattr(model, "decision_function") or hasattr(model, "predict_proba")
            ):
                self.metric = None
        if self.metric is None:
            from sklearn.metrics import check_scoring

            try:
                self.sk_scorer = check_scoring(model, scoring=scoring)
            except (ValueError, TypeError) as exc:
                raise param_error(
                    "scoring", func,
                    f"a scikit-learn scoring name (fast ones: {', '.join(SUPPORTED_SCORING)}) "
                    "or a scorer callable", scoring,
                ) from exc
        # adapters for the responses, made once
        if self.metric is not None and task != "regression":
            if self.metric.response == "proba":
                self._resp = adapter.with_output("proba", None)
            elif self.metric.response == "threshold":
                # sklearn tries decision_function first, then predict_proba
                out = "raw" if hasattr(model, "decision_function") else "proba"
                self._resp = adapter.with_output(out, None)

    @property
    def batched(self) -> bool:
        return self.metric is not None

    @property
    def adapters(self) -> list[ModelAdapter]:
        """The adapters that predict for the metric: the model's, and the response one if any."""
        return [ad for ad in (self.adapter, getattr(self, "_resp", None)) if ad is not None]

    def responses(self, frame: pd.DataFrame) -> np.ndarray:
        """Model responses for the rows of ``frame`` (canonical columns)."""
        metric, ad = self.metric, self.adapter
        if ad.task == "regression":
            return ad.predict(frame)
        if metric.response == "predict":
            # labels come from the model's own predict (argmax of proba may break ties
            # differently, e.g. SVC), in the adapter's input convention
            inp = ad._model_input(frame)
            return np.asarray(self.model.predict(inp))
        out = self._resp.predict(frame)
        if metric.response == "proba" and ad.task == "binary":
            return out[:, 1]  # sklearn scores binary probabilities of classes_[-1]
        if metric.response == "threshold" and out.ndim == 2:
            return out[:, 1]
        return out

    def from_output(self, out: np.ndarray) -> np.ndarray:
        """Metric response from regression values or class probabilities (n, k)."""
        if self.adapter.task == "regression":
            return out
        if self.metric.response == "predict":
            return self.adapter.classes.take(np.argmax(out, axis=1))  # as forests predict
        if self.adapter.task == "binary":
            return out[:, 1]
        return out

    def score(self, resp: np.ndarray, idx=None) -> float:
        y = self.y if idx is None else self.y[idx]
        kw = dict(self.metric.kwargs)
        if self.metric.response == "proba":  # log loss on rows that lack a class (a chunk of a file)
            kw["labels"] = self.adapter.classes
        if self.sample_weight is not None:
            kw["sample_weight"] = self.sample_weight if idx is None else self.sample_weight[idx]
        return float(self.metric.sign * self.metric.func(y, resp, **kw))

    def score_estimator(self, X, idx=None) -> float:
        """Fallback: sklearn's scorer on one copy (one predict call)."""
        y = self.y if idx is None else self.y[idx]
        if self.sample_weight is not None:
            sw = self.sample_weight if idx is None else self.sample_weight[idx]
            return float(self.sk_scorer(self.model, X, y, sample_weight=sw))
        return float(self.sk_scorer(self.model, X, y))
