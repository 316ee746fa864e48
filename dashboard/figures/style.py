"""One look for every figure: palette, font, named colours and number formatting.

Colours come from the Okabe-Ito colour-blind-safe palette; continuous scales
are Viridis (PDP) or blue - light grey - vermillion (SHAP feature values).
Change a colour here and every page that uses it follows.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

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


# ------------------------------------------------------------------ numbers
#: significant digits of every number on a figure (labels, hover text, ticks)
DIGITS = 4
#: a value smaller than this fraction of its scale is rounding noise: shown as 0
TINY = 1e-9
_SUFFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def _finite_abs_max(values) -> float:
    if isinstance(values, (list, tuple)) and any(np.ndim(v) > 0 for v in values):
        return max((_finite_abs_max(v) for v in values), default=0.0)  # ragged: one by one
    arr = np.abs(np.asarray(pd.to_numeric(pd.Series(np.ravel(np.asarray(values, dtype=object))),
                                          errors="coerce"), dtype=float))
    arr = arr[np.isfinite(arr)]
    return float(arr.max()) if arr.size else 0.0


def scale_of(*values) -> float:
    """The largest finite magnitude among ``values`` (numbers or arrays): the scale a set of
    numbers shown together is formatted against (0 when there is none)."""
    return max((_finite_abs_max(v) for v in values), default=0.0)


def _round_sig(a: float, digits: int) -> float:
    """``a`` (>= 0) rounded to ``digits`` significant digits, halves away from zero (as the
    browser's Plotly rounds: 12,345 is 12.35k on a tick and in a label alike)."""
    from decimal import ROUND_HALF_UP, Decimal

    d = Decimal(repr(float(a)))
    return float(d.quantize(Decimal(1).scaleb(d.adjusted() - digits + 1), rounding=ROUND_HALF_UP))


def _plain(r: float, digits: int) -> str:
    """A rounded magnitude in plain notation: ``digits`` significant digits, trailing zeros
    dropped, thousands separators when the whole part has five digits or more."""
    decimals = max(0, digits - 1 - int(np.floor(np.log10(r)))) if r > 0 else 0
    text = f"{r:,.{decimals}f}" if r >= 1e4 else f"{r:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def fmt_number(v, scale: float | None = None, *, digits: int = DIGITS, sign: bool = False) -> str:
    """A number as people read it, on the data's own scale.

    - ``digits`` significant digits (4 on figures), trailing zeros dropped:
      ``163.5``, ``97.89``, ``0.001234``;
    - large values with an SI suffix once the digits no longer cover the whole part:
      ``192.6k``, ``-34k``, ``1.25M``, ``3G``; with enough digits the whole part is written
      out with thousands separators (``192,634`` at 6 digits);
    - a value below ``TINY`` (1e-9) times ``scale`` (numbers shown together, e.g. the
      base value and the prediction) is rounding noise and shown as ``0``;
    - tiny values on a tiny scale in scientific notation (``1.5e-7``); NaN as ``NA``.

    ``sign=True`` writes ``+`` before positive values (contributions).
    """
    try:
        x = float(v)
    except (TypeError, ValueError):
        return plot(v)
    if np.isnan(x):
        return "NA"
    if np.isinf(x):
        return ("+" if sign else "") + "∞" if x > 0 else "-∞"
    ref = abs(float(scale)) if scale is not None and np.isfinite(scale) else 0.0
    ref = max(ref, abs(x))
    if x == 0 or abs(x) < TINY * ref:
        return "0"
    neg = x < 0
    a = abs(x)
    r = _round_sig(a, digits)  # rounded first, so 999,960 becomes 1M, not 1000k
    if r < 1e-4:
        mant, exp = f"{r:.{digits - 1}e}".split("e")
        mant = mant.rstrip("0").rstrip(".")
        text = f"{mant}e{int(exp)}"
    elif r < 1e4 or r < 10 ** digits:
        text = _plain(r, digits)
    else:
        div, suffix = next((d, s) for d, s in _SUFFIXES if r >= d)
        text = _plain(_round_sig(r / div, digits), digits) + suffix
    return ("-" if neg else "+" if sign else "") + text


def fmt_signed(v, scale: float | None = None, *, digits: int = DIGITS) -> str:
    """A contribution: :func:`fmt_number` with a ``+`` before positive values."""
    return fmt_number(v, scale, digits=digits, sign=True)


def d3_format(scale: float, *, digits: int = DIGITS, sign: bool = False) -> str:
    """The Plotly (d3-format) spec that writes numbers of this scale like :func:`fmt_number`:
    SI suffixes from 10,000 up (``192.6k``), else ``digits`` significant digits."""
    s = "+" if sign else ""
    if scale >= 1e4:
        return f"{s},.{digits}~s"
    return f"{s}.{digits}~g"


def fmt_value(v) -> str:
    """A data value for hover text and labels: numbers by :func:`fmt_number` (4 significant
    digits), NaN as NA, text escaped for Plotly (shown as typed, never as HTML)."""
    if isinstance(v, (bool, np.bool_)):
        return plot(v)
    if isinstance(v, (int, float, np.integer, np.floating)):
        return fmt_number(v)
    return plot(v)


def nice_ticks(lo: float, hi: float, max_ticks: int = 5) -> list[float]:
    """At most ``max_ticks`` round values (1, 2, 2.5 or 5 times a power of ten apart) within
    [lo, hi]: few enough that their labels fit side by side in a narrow column."""
    if not (np.isfinite(lo) and np.isfinite(hi)) or hi <= lo:
        return [float(lo)] if np.isfinite(lo) else []
    span = hi - lo
    base = 10 ** np.floor(np.log10(span / max_ticks))
    for mult in (1, 2, 2.5, 5, 10, 20, 25, 50):
        step = base * mult
        first = np.ceil(lo / step) * step
        ticks = np.arange(first, hi + step * 1e-9, step)
        if len(ticks) <= max_ticks:
            return [0.0 if abs(t) < step * 1e-9 else float(t) for t in ticks]
    return [float(lo), float(hi)]


def text_width_px(text: str, size: float = FONT["size"]) -> float:
    """A generous estimate of a label's width in pixels (no browser here to measure it)."""
    return 0.62 * size * len(str(text))

#: the compared segment and the rest of the rows, on every page's figures
SEGMENT_COLOUR = PALETTE[4]  # orange
REST_COLOUR = PALETTE[0]  # blue


def output_words(output: str, name: str = "", *, compact: bool = False) -> str:
    """What an explanation's numbers are, in words: "prediction", "probability of yes",
    "log-odds of yes", "margin of yes" (``compact``: "P(yes)", "log-odds(yes)",
    "margin(yes)"). ``name`` is the output's name (a class, a target); one already
    written as "margin(yes)" or "log-odds(yes)" gives its class."""
    inner = re.fullmatch(r"(?:margin|log_odds|log-odds)\((.*)\)", str(name))
    name = inner.group(1) if inner else str(name)
    kind = {"proba": "probability", "log_odds": "log-odds", "margin": "margin"}.get(output)
    if kind is None:  # a value (regression, anomaly score)
        return name if name and name != "prediction" else "prediction"
    if compact and name:
        return f"{'P' if output == 'proba' else kind}({name})"
    return f"{kind} of {name}" if name else kind


def legend_below(height: int, top: int, bottom: int, gap_px: int = 62) -> dict:
    """A horizontal legend ``gap_px`` below the plot area (under the x tick labels and axis title),
    placed in pixels as a share of the plot's own height, so it never covers the data, the axis
    title or the figure's title. ``bottom`` must leave room for it (about 22 px a row)."""
    plot_px = max(height - top - bottom, 60)
    return dict(orientation="h", x=0, xanchor="left", y=-gap_px / plot_px, yanchor="top")


def short_labels(names, max_chars: int = 28) -> list[str]:
    """Axis labels of at most ``max_chars`` characters (the full name goes in the hover). Names
    that share a long start or end ("customer_account_..._last_quarter") keep the part that tells
    them apart ("…01_ratio…"); any other long name keeps its start and its end around "…".
    Labels stay distinct, as a categorical axis merges equal ones."""
    import os

    names = [str(n) for n in names]
    long = [n for n in names if len(n) > max_chars]
    prefix = os.path.commonprefix(long) if len(long) > 1 else ""
    suffix = os.path.commonprefix([n[::-1] for n in long])[::-1] if len(long) > 1 else ""
    # cut at a word's edge ("measurement_0" -> "measurement_"), so a number or word stays whole
    prefix = prefix[: max((prefix.rfind(c) + 1 for c in "_ -./:"), default=0)]
    suffix = suffix[min((suffix.find(c) for c in "_ -./:" if c in suffix), default=len(suffix)):]
    out: list[str] = []
    for name in names:
        label = name
        if len(name) > max_chars:
            core = name[len(prefix):len(name) - len(suffix)] if len(prefix) + len(suffix) < len(name) else ""
            if (prefix or suffix) and 0 < len(core) <= max_chars - 2:
                label = ("…" if prefix else "") + core + ("…" if suffix else "")
            else:
                head = (max_chars - 1) // 2
                label = f"{name[:head].rstrip()}…{name[len(name) - (max_chars - 1 - head):].lstrip()}"
        n, base = 2, label
        while label in out:
            label, n = f"{base} ({n})", n + 1
        out.append(label)
    return out



def short_category_axis(fig, axis: str, names, max_chars: int = 28) -> None:
    """Show a categorical axis's categories (the raw ``names``, as the traces carry them escaped)
    by :func:`short_labels`: the data and the hover keep the full names, the axis the short ones."""
    names = [str(n) for n in names]
    if all(len(n) <= max_chars for n in names):
        return
    getattr(fig, f"update_{axis}axes")(tickmode="array", tickvals=[plot(n) for n in names],
                                        ticktext=[plot(n) for n in short_labels(names, max_chars)])
