"""The result every importance method returns: one frozen dataclass with fixed shapes."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..trees.native import LIBRARY_NAMES as _LIBRARIES
from ..trees.native import library_label
from .scoring import SCORING_LABELS

__all__ = ["ImportanceResult", "make_result", "library_label"]

_LABELS = {"mdi": "MDI", "oob_permutation": "OOB permutation", "permutation": "Holdout permutation",
           "shap": "Mean |SHAP|"}
# the boosting libraries' own importances (.native): "xgboost_gain" -> "XGBoost gain"
_LABELS.update({f"{lib}_{kind.replace(' ', '_')}": f"{name} {kind}"
                for lib, name in _LIBRARIES.items() for kind in ("gain", "cover", "split count")})


@dataclass(frozen=True, eq=False)
class ImportanceResult:
    """Importance of each feature by one method.

    Attributes
    ----------
    feature_names : list of str
        One name per feature, in the model's order.
    importances : ndarray of shape (n_features,)
        The importance of each feature (mean of ``raw`` over its second axis).
    std : ndarray of shape (n_features,)
        Standard deviation of ``raw`` over its second axis (ddof=0): spread across
        trees, repeats or rows, depending on the method.
    raw : ndarray of shape (n_features, n_draws)
        Per-tree (MDI, out-of-bag), per-repeat (permutation) or per-row (SHAP) values;
        one column of totals for a library's own importance (its file keeps no more).
    method : str
        ``"mdi"``, ``"oob_permutation"``, ``"permutation"``, ``"shap"``, or a boosting
        library's own importance, ``"<library>_<kind>"`` (``"xgboost_gain"``,
        ``"lightgbm_split_count"``, ``"catboost_cover"``...; see :mod:`.native`).
    params : dict
        The options the method ran with (scoring, n_repeats, random_state, ...).
    description : str
        One sentence on what the numbers measure, for captions.
    by_output : DataFrame or None
        Only for SHAP on several outputs: mean |phi| per feature (rows) and class
        (columns); ``importances`` is then the mean over the columns.
    """

    feature_names: list
    importances: np.ndarray
    std: np.ndarray
    raw: np.ndarray
    method: str
    params: dict = field(default_factory=dict)
    description: str = ""
    by_output: pd.DataFrame | None = None

    @property
    def label(self) -> str:
        """Short readable name for tables and legends, e.g. ``Holdout permutation (R²)``."""
        name = _LABELS.get(self.method, self.method)
        scoring = self.params.get("scoring_name")
        parts = [str(SCORING_LABELS.get(scoring, scoring))] if scoring else []
        if self.params.get("output") is not None:  # one output of a model of several targets
            parts.append(str(self.params["output"]))
        label = f"{name} ({', '.join(parts)})" if parts else name
        # results of several models side by side (the Compare page) say whose they are
        return f"{self.params['compared_as']}: {label}" if self.params.get("compared_as") else label

    def to_frame(self) -> pd.DataFrame:
        """Return a DataFrame indexed by feature with ``importance`` and ``std``."""
        return pd.DataFrame(
            {"importance": self.importances, "std": self.std},
            index=pd.Index(self.feature_names, name="feature"),
        )

    def __repr__(self) -> str:
        return (
            f"ImportanceResult(method={self.method!r}, n_features={len(self.feature_names)}, "
            f"n_draws={self.raw.shape[1]})"
        )


def make_result(names, raw, method, params, description, *, importances=None, by_output=None):
    """Build an :class:`ImportanceResult` from per-draw values.

    ``importances`` defaults to ``raw.mean(axis=1)``; ``std`` is always
    ``raw.std(axis=1)``.
    """
    raw = np.asarray(raw, dtype=float)
    return ImportanceResult(
        feature_names=[str(n) for n in names],
        importances=raw.mean(axis=1) if importances is None else np.asarray(importances, float),
        std=raw.std(axis=1),
        raw=raw,
        method=method,
        params=params,
        description=description,
        by_output=by_output,
    )
