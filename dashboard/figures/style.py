"""One look for every figure: palette, font, named colours and number formatting.

Colours come from the Okabe-Ito colour-blind-safe palette; continuous scales
are Viridis (PDP) or blue - light grey - vermillion (SHAP feature values).
Change a colour here and every page that uses it follows.
"""
from __future__ import annotations

import numpy as np

from dashboard.safe_text import plot

#: Okabe-Ito palette (colour-blind safe): one colour per class, method or category
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=14, color="#222222")

# ---------------------------------------------------------------- PDP / ICE / ALE
PDP_COLOURS = PALETTE
PDP_LINE = "#000000"  # the partial dependence line: black, bold, drawn on top
PDP_ICE = "#0072B2"  # ICE lines: thin, translucent blue
PDP_EMPTY = "#9E9E9E"  # shade over grid cells with no data behind them
PDP_SCALE = "Viridis"

# ---------------------------------------------------------------------------- SHAP
POSITIVE = "#D55E00"  # vermillion: pushes the output up
NEGATIVE = "#0072B2"  # blue: pushes it down
MISSING = "#9E9E9E"  # grey: masked feature (attribution 0)
#: low -> high feature value, colour-blind safe (blue, light grey, vermillion)
VALUE_SCALE = [[0.0, NEGATIVE], [0.5, "#DDDDDD"], [1.0, POSITIVE]]


def fmt_value(v) -> str:
    """A data value for hover text and labels: numbers to 4 significant digits, NaN as NA,
    text escaped for Plotly (shown as typed, never as HTML)."""
    if isinstance(v, (float, np.floating)):
        return "NA" if np.isnan(v) else f"{v:.4g}"
    return plot(v)
