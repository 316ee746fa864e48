"""Fitted models compared on the same rows: metrics, paired bootstrap intervals of their
differences, McNemar's test, and the rows on which two models disagree most.

>>> from explainers.compare import compare_models
>>> cmp = compare_models({"forest": forest, "logistic": logit}, X, y)   # doctest: +SKIP
>>> cmp.metrics; cmp.differences; cmp.disagreement                   # doctest: +SKIP
"""
from ._compare import ComparisonResult, compare_models, mcnemar
from ._metrics import CLASSIFICATION_METRICS, REGRESSION_METRICS

__all__ = ["compare_models", "ComparisonResult", "mcnemar", "CLASSIFICATION_METRICS", "REGRESSION_METRICS"]
