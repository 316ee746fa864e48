"""Variable importance, five ways, and a comparison of them.

* :func:`mdi` (:mod:`.mdi`) -- mean decrease in impurity (seed 004, "MDI"): how
  much the splits on a feature reduced the training criterion, averaged over the trees.
* :func:`oob_permutation_importance` (:mod:`.oob`) -- mean decrease in accuracy on
  each tree's out-of-bag rows (seed 004, "MDA", Breiman 2001): the rows a tree
  never saw are its own hold-out set. :func:`oob_sample_indices` gives those rows.
* :func:`permutation_importance` (:mod:`.permutation`) -- hold-out permutation
  importance, equal to :func:`sklearn.inspection.permutation_importance` for the
  same seed, but with the permuted copies predicted in batches.
* :func:`shap_importance` (:mod:`.shap_importance`) -- mean absolute SHAP value.
* :func:`library_importance` (:mod:`.native`) -- a boosting library's own gain, cover
  or split count, read from its model file (XGBoost, LightGBM, CatBoost): MDI's
  counterpart for models that are not scikit-learn's.

:func:`compare_importances` (:mod:`.comparison`) puts any of them side by side:
shares of the total, ranks, rank agreement (Spearman, Kendall) and flags where
methods disagree.

Every method returns an :class:`ImportanceResult` (:mod:`.result`) with the same
fields and shapes, and ``importances == raw.mean(axis=1)``, ``std == raw.std(axis=1)``.
:mod:`.scoring` computes scikit-learn's metrics from batched predictions
(:data:`SUPPORTED_SCORING`); :mod:`._common` holds the shared input checks.
"""
from ._common import DEFAULT_MAX_CELLS, Progress
from .comparison import ImportanceComparison, compare_importances
from .mdi import mdi
from .native import LIBRARY_KINDS, library_importance, library_importance_kinds
from .oob import oob_permutation_importance, oob_sample_indices
from .permutation import permutation_importance
from .result import ImportanceResult
from .scoring import SUPPORTED_SCORING
from .shap_importance import shap_importance

__all__ = [
    "ImportanceResult",
    "ImportanceComparison",
    "mdi",
    "library_importance",
    "library_importance_kinds",
    "LIBRARY_KINDS",
    "oob_permutation_importance",
    "oob_sample_indices",
    "permutation_importance",
    "shap_importance",
    "compare_importances",
    "SUPPORTED_SCORING",
]

