"""Result object -> Plotly figure: pure functions, testable without a browser.

Each function takes a result from :mod:`explainers` and returns a
``plotly.graph_objects.Figure``. One module per kind of explanation:

- :mod:`.style`: palette, font, named colours, number formatting (one look for every figure)
- :mod:`.pdp`: partial dependence / ICE / ALE (``pdp_figure``, ``pdp2d_figure``,
  ``ale_figure``, ``ale2d_figure``) and ``pdp_to_csv``
- :mod:`.shap`: ``waterfall_figure``, ``force_figure``, ``beeswarm_figure``,
  ``mean_abs_figure``, ``dependence_figure``
- :mod:`.importance`: ``importance_bars_figure``, ``agreement_heatmap_figure``
"""
from .importance import agreement_heatmap_figure, importance_bars_figure
from .pdp import ale2d_figure, ale_figure, pdp2d_figure, pdp_figure, pdp_to_csv
from .shap import beeswarm_figure, dependence_figure, force_figure, mean_abs_figure, waterfall_figure
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

__all__ = [
    # style
    "PALETTE", "FONT", "PDP_COLOURS", "PDP_LINE", "PDP_ICE", "PDP_EMPTY",
    "POSITIVE", "NEGATIVE", "MISSING", "VALUE_SCALE",
    # partial dependence, ICE, ALE
    "pdp_figure", "pdp2d_figure", "ale_figure", "ale2d_figure", "pdp_to_csv",
    # SHAP
    "waterfall_figure", "force_figure", "beeswarm_figure", "mean_abs_figure", "dependence_figure",
    # variable importance
    "importance_bars_figure", "agreement_heatmap_figure",
]
