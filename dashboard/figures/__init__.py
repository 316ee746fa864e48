"""Result object -> Plotly figure: pure functions, testable without a browser.

Each function takes a result from :mod:`explainers` and returns a
``plotly.graph_objects.Figure``. One module per kind of explanation:

- :mod:`.style`: palette, font, named colours, number formatting (one look for every figure)
- :mod:`.pdp`: partial dependence / ICE / ALE (``pdp_figure``, ``pdp2d_figure``,
  ``ale_figure``, ``ale2d_figure``) and ``pdp_to_csv``
- :mod:`.shap`: ``waterfall_figure``, ``force_figure``, ``beeswarm_figure``,
  ``mean_abs_figure``, ``dependence_figure``
- :mod:`.importance`: ``importance_bars_figure``, ``agreement_heatmap_figure``
- :mod:`.quality`: ``confusion_figure``, ``roc_figure``, ``pr_figure``, ``calibration_figure``,
  ``gains_figure``, ``predicted_actual_figure``, ``residuals_figure``, ``residual_histogram_figure``

:func:`plot` picks the figure for any result object, the one its page draws
(``from dashboard.figures import plot; plot(result)``), for notebooks and reports.
"""
import importlib

from .style import (
    FONT,
    MISSING,
    NEGATIVE,
    PALETTE,
    PDP_COLOURS,
    PDP_EMPTY,
    PDP_ICE,
    PDP_LINE,
    POSITIVE,
    VALUE_SCALE,
)

#: each figure function's module, imported on first use (``figures.roc_figure`` imports
#: ``.quality``): the Model page draws one figure, and the SHAP figures alone import the SHAP
#: engines (about 0.6 s of a fresh server's first page)
_HOMES = {
    "importance": ("agreement_heatmap_figure", "importance_bars_figure"),
    "interactions": ("interaction_dependence_figure", "interaction_heatmap_figure", "interaction_pairs_frame",
                     "interaction_strength"),
    "pdp": ("ale2d_figure", "ale_figure", "pd_range", "pdp2d_figure", "pdp_figure", "pdp_to_csv"),
    "quality": ("calibration_figure", "confusion_figure", "distribution_figure", "gains_figure", "pr_figure",
                "predicted_actual_figure", "residual_histogram_figure", "residuals_figure", "roc_figure"),
    "shap": ("beeswarm_figure", "dependence_figure", "force_figure", "mean_abs_figure", "waterfall_figure"),
    "compare": (),  # the Compare page's figures, used as ``figures.compare.<name>``
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str):
    """A figure function (or a figure module, ``figures.quality``), its module imported once."""
    if name in _HOME_OF:
        value = getattr(importlib.import_module(f".{_HOME_OF[name]}", __name__), name)
    elif name in _HOMES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_HOME_OF, *_HOMES})


__all__ = [
    "interaction_dependence_figure",
    "interaction_heatmap_figure",
    "interaction_pairs_frame",
    "interaction_strength",
    # any result -> its page's figure
    "plot",
    # style
    "PALETTE", "FONT", "PDP_COLOURS", "PDP_LINE", "PDP_ICE", "PDP_EMPTY",
    "POSITIVE", "NEGATIVE", "MISSING", "VALUE_SCALE",
    # partial dependence, ICE, ALE
    "pdp_figure", "pdp2d_figure", "ale_figure", "ale2d_figure", "pdp_to_csv", "pd_range",
    # SHAP
    "waterfall_figure", "force_figure", "beeswarm_figure", "mean_abs_figure", "dependence_figure",
    # variable importance
    "importance_bars_figure", "agreement_heatmap_figure",
    # model quality
    "confusion_figure", "roc_figure", "pr_figure", "calibration_figure", "gains_figure",
    "predicted_actual_figure", "residuals_figure", "residual_histogram_figure",
]


#: for each kind of result: the figures plot() can draw (the first is the default)
KINDS = {
    "PartialDependenceResult": ("pdp",),  # pdp2d for two features
    "AleResult": ("ale",),  # ale2d for two features
    "ShapResult": ("beeswarm", "waterfall", "force", "mean_abs", "dependence"),
    "ImportanceResult": ("bars",),
    "ImportanceComparison": ("bars", "agreement"),
}


def plot(result, kind: str | None = None, **kw):
    """The Plotly figure the dashboard draws for ``result``, outside the dashboard.

    ======================================  =========================================
    result                                   figure (``kind``)
    ======================================  =========================================
    PartialDependenceResult, 1 feature       :func:`pdp_figure` (PD + ICE)
    PartialDependenceResult, 2 features      :func:`pdp2d_figure` (heatmap)
    AleResult, 1 / 2 features                :func:`ale_figure` / :func:`ale2d_figure`
    ShapResult, one row                      :func:`waterfall_figure` of that row
    ShapResult, several rows                 :func:`beeswarm_figure`; ``kind`` = "waterfall" or
                                             "force" (with ``row=``), "mean_abs", "dependence"
                                             (with ``feature=``)
    ImportanceResult, or a list of them      :func:`importance_bars_figure`
    ImportanceComparison                     :func:`importance_bars_figure`; ``kind="agreement"``:
                                             :func:`agreement_heatmap_figure` (``rank="kendall"``
                                             for Kendall's tau)
    ======================================  =========================================

    Other keyword arguments go to that figure function (``class_index``,
    ``max_display``, ``centered``...). Returns a ``plotly.graph_objects.Figure``.
    """
    from explainers.ale import AleResult
    from explainers.importance import ImportanceComparison, ImportanceResult
    from explainers.pdp import PartialDependenceResult
    from explainers.shap import ShapResult

    from .importance import agreement_heatmap_figure, importance_bars_figure
    from .pdp import ale2d_figure, ale_figure, pdp2d_figure, pdp_figure
    from .shap import beeswarm_figure, dependence_figure, force_figure, mean_abs_figure, waterfall_figure

    if isinstance(result, (list, tuple)) and result and all(isinstance(r, ImportanceResult) for r in result):
        type_name = "ImportanceResult"
    else:
        type_name = type(result).__name__
    allowed = KINDS.get(type_name)
    if allowed is None or not isinstance(result, (list, tuple, PartialDependenceResult, AleResult, ShapResult,
                                                   ImportanceResult, ImportanceComparison)):
        raise TypeError(
            f"plot() draws {', '.join(KINDS)} (or a list of ImportanceResult), got {type(result).__name__}.")
    if kind is not None and kind not in allowed:
        raise ValueError(f"plot() of a {type_name} draws kind {' / '.join(map(repr, allowed))}, got {kind!r}.")
    if isinstance(result, PartialDependenceResult):
        return (pdp2d_figure if len(result.feature_names) == 2 else pdp_figure)(result, **kw)
    if isinstance(result, AleResult):
        return (ale2d_figure if len(result.feature_names) == 2 else ale_figure)(result, **kw)
    if isinstance(result, ShapResult):
        kind = kind or ("waterfall" if result.n_rows == 1 else "beeswarm")
        if kind in ("waterfall", "force"):
            row = kw.pop("row", 0)
            return (waterfall_figure if kind == "waterfall" else force_figure)(result, row, **kw)
        if kind == "dependence":
            if "feature" not in kw:
                raise ValueError('plot(result, kind="dependence") needs feature=NAME.')
            return dependence_figure(result, kw.pop("feature"), kw.pop("color_by", None), **kw)
        return (beeswarm_figure if kind == "beeswarm" else mean_abs_figure)(result, **kw)
    if kind == "agreement":  # the heatmap's own ``kind`` (spearman / kendall) is ``rank`` here
        return agreement_heatmap_figure(result, kw.pop("rank", "spearman"), **kw)
    return importance_bars_figure(list(result) if isinstance(result, tuple) else result, **kw)
