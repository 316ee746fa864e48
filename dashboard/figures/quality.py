"""Model quality figures, from :mod:`explainers.quality` results.

Classifiers: :func:`confusion_figure` (every cell clickable: an invisible marker sits on it,
Plotly heatmaps cannot be selected), :func:`roc_figure`, :func:`pr_figure`,
:func:`calibration_figure`, :func:`gains_figure`; :func:`cell_from_selection` reads a click.
Regressors: :func:`predicted_actual_figure`, :func:`residuals_figure` (against the
prediction or a feature), :func:`residual_histogram_figure` (with its quantiles).

Pure functions of result objects; class and feature names are escaped for Plotly.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dashboard.safe_text import plot

from .style import FONT, MISSING, NEGATIVE, PALETTE, POSITIVE, d3_format, fmt_number, legend_below, scale_of

#: counts in the confusion matrix: white (none) to dark blue (many)
CONFUSION_SCALE = "Blues"
GUESS = dict(color=MISSING, dash="dash", width=1)  # what a model that guesses draws
#: at most this many points in a scatter of rows (a seeded sample beyond)
MAX_POINTS = 5_000


#: the width a chart's legend has (half a page), the pixels a legend row takes, and the width of an
#: entry: its symbol and gap, and a character of its name (Plotly puts entries side by side while they fit)
LEGEND_WIDTH_PX = 560
LEGEND_ROW_PX = 22
LEGEND_ENTRY_PX, LEGEND_CHAR_PX = 48, 7


def legend_rows(names: list[str]) -> int:
    """Rows a horizontal legend of these entries takes at :data:`LEGEND_WIDTH_PX`."""
    rows, used = 0, None
    for name in names:
        w = LEGEND_ENTRY_PX + LEGEND_CHAR_PX * len(name)
        if used is None or used + w > LEGEND_WIDTH_PX:
            rows, used = rows + 1, w
        else:
            used += w
    return rows


def _layout(fig: go.Figure, title: str, x: str, y: str, **kw) -> go.Figure:
    """Title, axes, and (unless ``showlegend=False``) the legend below the plot area, under the
    x axis's title, with the figure as much taller as its rows take: it never covers a curve."""
    height, bottom, top = kw.pop("height", 380), 50, 60
    names = [str(t.name or "") for t in fig.data if t.showlegend is not False and t.type not in ("heatmap", "contour")]
    if kw.get("showlegend", True) and names:
        rows = legend_rows(names)
        extra = 40 + LEGEND_ROW_PX * rows
        height, bottom = height + extra, bottom + extra
        kw["legend"] = legend_below(height, top, bottom, 56)
    fig.update_layout(title=dict(text=title), font=FONT, template="plotly_white", height=height,
                      margin=dict(l=60, r=60, t=top, b=bottom), xaxis_title=x, yaxis_title=y, **kw)
    return fig


def _curves(q, class_index: int | None):
    """The curves' positions to draw: the one of a binary model; one or every class of a multiclass."""
    if q.task == "binary":
        return [0]
    return list(range(len(q.classes))) if class_index is None else [int(class_index)]


# ------------------------------------------------------------ confusion matrix
def _decision_rule(q) -> str:
    """How the matrix's predictions were made, for its title."""
    if getattr(q, "scale", "proba") == "margin":
        return " (the model's own predictions)" if q.threshold in (None, 0.0) else f" at margin {q.threshold:.2f}"
    return f" at threshold {q.threshold:.2f}" if q.threshold is not None else " (most probable class)"


def _share(v: float) -> str:
    """A cell's share of its actual class: a small one keeps a decimal ("0.4%", not "0%")."""
    return f"{v:.1%}" if 0 < v < 0.095 else f"{v:.0%}"


def confusion_figure(q, *, highlight: tuple[int, int] | None = None) -> go.Figure:
    """Counts of actual (rows) against predicted (columns) classes, with each cell's count and
    share of its actual class; ``highlight`` outlines one cell (actual, predicted)."""
    m = q.confusion.matrix
    labels = [plot(c) for c in q.classes]
    k = len(labels)
    totals = m.sum(axis=1, keepdims=True)
    share = np.divide(m, totals, out=np.zeros(m.shape, float), where=totals > 0)
    text = [[f"{int(m[i, j]):,}<br>({_share(share[i, j])})" for j in range(k)] for i in range(k)]
    fig = go.Figure(go.Heatmap(
        z=m, x=labels, y=labels, text=text, texttemplate="%{text}", colorscale=CONFUSION_SCALE, showscale=False,
        hovertemplate="actual %{y}, predicted %{x}: %{z:,} rows<extra></extra>", xgap=2, ygap=2))
    cells = [(i, j) for i in range(k) for j in range(k)]
    fig.add_trace(go.Scatter(
        x=[labels[j] for _, j in cells], y=[labels[i] for i, _ in cells], mode="markers", showlegend=False,
        customdata=[[i, j, int(m[i, j])] for i, j in cells],
        marker=dict(symbol="square", size=max(20, min(90, 360 // max(k, 1))), opacity=0.0),
        selected=dict(marker=dict(opacity=0.0)), unselected=dict(marker=dict(opacity=0.0)),
        hovertemplate="actual %{y}, predicted %{x}: %{customdata[2]:,} rows<br>click to list them<extra></extra>"))
    if highlight is not None:
        i, j = highlight
        fig.add_shape(type="rect", x0=j - 0.5, x1=j + 0.5, y0=i - 0.5, y1=i + 0.5,
                      line=dict(color=POSITIVE, width=3))
    title = "Confusion matrix" + _decision_rule(q)
    _layout(fig, title, "predicted", "actual", height=max(320, 90 * k + 120))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", side="bottom")
    return fig


def cell_from_selection(points, k: int) -> tuple[int, int] | None:
    """The (actual, predicted) cell a click on :func:`confusion_figure` selected, or None.

    ``points`` is ``event.selection.points`` of ``st.plotly_chart(on_select=...)``.
    """
    for pt in points or ():
        get = pt.get if hasattr(pt, "get") else (lambda key, _pt=pt: getattr(_pt, key, None))
        cd = get("customdata")
        if cd is None or len(cd) < 2:
            continue
        try:
            i, j = int(cd[0]), int(cd[1])
        except (TypeError, ValueError):
            continue
        if 0 <= i < k and 0 <= j < k:
            return i, j
    return None


# ------------------------------------------------------------------ curves
#: a curve is drawn through at most about 2 x this many of its points per axis cell row (see thin_curve)
CURVE_CELLS = 1000


def thin_curve(x, y, cells: int = CURVE_CELLS) -> np.ndarray:
    """Positions of the points of the curve (x, y) worth drawing: its two ends and, of every
    run of consecutive points in one cell of a ``cells`` x ``cells`` grid over the curve's
    range, the first and the last. Every point kept is one of the curve's own (with its
    threshold); a point left out lies in the cell of two kept neighbours, so the line drawn
    moves by less than a cell (a thousandth of the plot; a curve that would keep more than
    8 x CURVE_CELLS points takes cells twice as coarse, until it does not). A ROC or precision-recall curve
    of a million rows has up to a million points: 55 MB sent to the browser, unthinned.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) <= 4 * cells:
        return np.arange(len(x))
    while True:
        k = _run_ends(x, y, cells)
        # a curve that wanders across cells (precision at few positives) takes coarser cells
        if len(k) <= 8 * CURVE_CELLS or cells <= 16:
            return k
        cells //= 2


def _run_ends(x: np.ndarray, y: np.ndarray, cells: int) -> np.ndarray:
    """The ends of the curve and of each run of consecutive points in one grid cell."""
    def cell(v):
        v = np.nan_to_num(v, nan=0.0)
        lo, hi = float(v.min()), float(v.max())
        return np.floor((v - lo) / ((hi - lo) or 1.0) * (cells - 1) + 0.5).astype(np.int64)

    c = cell(x) * (cells + 1) + cell(y)
    keep = np.zeros(len(x), dtype=bool)
    keep[[0, -1]] = True
    change = c[1:] != c[:-1]
    keep[1:] |= change  # the first of a run
    keep[:-1] |= change  # the last of a run
    return np.flatnonzero(keep)


def roc_figure(q, *, class_index: int | None = None) -> go.Figure:
    """ROC curve(s) (one-vs-rest for several classes), the diagonal of guessing, and for a
    binary model the point of the current threshold."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=GUESS, name="guessing", hoverinfo="skip"))
    for n, c in enumerate(_curves(q, class_index)):
        r = q.roc[c]
        k = thin_curve(r.fpr, r.tpr)
        fig.add_trace(go.Scatter(
            x=r.fpr[k], y=r.tpr[k], mode="lines", name=f"{plot(r.label)} (AUC {fmt_number(r.auc)})",
            line=dict(color=PALETTE[(c if q.task != "binary" else n) % len(PALETTE)], width=2),
            customdata=np.asarray(r.thresholds)[k],
            hovertemplate="threshold %{customdata:.3g}<br>false positive rate %{x:.3f}<br>"
                          "true positive rate %{y:.3f}<extra></extra>"))
    if q.task == "binary":
        m = q.metrics
        fpr = 1 - m["specificity"] if np.isfinite(m["specificity"]) else np.nan
        fig.add_trace(go.Scatter(x=[fpr], y=[m["recall"]], mode="markers", name=f"threshold {q.threshold:.2f}",
                                 marker=dict(color=POSITIVE, size=11, symbol="circle-open", line=dict(width=3))))
    return _layout(fig, "ROC curve" + (" (one class against the rest)" if q.task != "binary" else ""),
                   "false positive rate", "true positive rate")


def pr_figure(q, *, class_index: int | None = None) -> go.Figure:
    """Precision against recall, the share of positives (a model that guesses), and for a
    binary model the point of the current threshold."""
    fig = go.Figure()
    for n, c in enumerate(_curves(q, class_index)):
        r = q.pr[c]
        colour = PALETTE[(c if q.task != "binary" else n) % len(PALETTE)]
        k = thin_curve(r.recall, r.precision)
        fig.add_trace(go.Scatter(
            x=np.asarray(r.recall)[k], y=np.asarray(r.precision)[k], mode="lines",
            line=dict(color=colour, width=2, shape="hv"),
            name=f"{plot(r.label)} (AP {fmt_number(r.average_precision)})",
            customdata=np.append(r.thresholds, np.nan)[k],
            hovertemplate="threshold %{customdata:.3g}<br>recall %{x:.3f}<br>precision %{y:.3f}<extra></extra>"))
        fig.add_trace(go.Scatter(x=[0, 1], y=[r.prevalence] * 2, mode="lines", line={**GUESS, "color": colour},
                                 name=f"guessing ({plot(r.label)}: {r.prevalence:.1%})", hoverinfo="skip",
                                 opacity=0.6))
    if q.task == "binary":
        m = q.metrics
        fig.add_trace(go.Scatter(x=[m["recall"]], y=[m["precision"]], mode="markers",
                                 name=f"threshold {q.threshold:.2f}",
                                 marker=dict(color=POSITIVE, size=11, symbol="circle-open", line=dict(width=3))))
    return _layout(fig, "Precision and recall", "recall", "precision")


def calibration_figure(q, *, class_index: int | None = None) -> go.Figure:
    """Reliability: the share of the class observed per bin of predicted probability (points
    sized by the bin's rows), the diagonal of perfect calibration, and the rows per bin (bars)."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=GUESS, name="perfectly calibrated",
                             hoverinfo="skip"))
    curves = _curves(q, class_index)
    for n, c in enumerate(curves):
        cal = q.calibration[c]
        colour = PALETTE[(c if q.task != "binary" else n) % len(PALETTE)]
        fig.add_trace(go.Bar(x=(cal.bin_edges[cal.bins] + cal.bin_edges[cal.bins + 1]) / 2, y=cal.counts,
                             width=np.diff(cal.bin_edges)[cal.bins] / len(curves), yaxis="y2", opacity=0.25,
                             marker_color=colour,
                             name="rows per bin" if q.task == "binary" else f"rows per bin ({plot(cal.label)})",
                             hovertemplate="%{y:,} rows<extra></extra>"))
        fig.add_trace(go.Scatter(
            x=cal.prob_pred, y=cal.prob_true, mode="lines+markers", line=dict(color=colour, width=2),
            name=f"{plot(cal.label)} (Brier {fmt_number(cal.brier)})", customdata=cal.counts,
            hovertemplate="mean predicted %{x:.3f}<br>observed %{y:.3f}<br>%{customdata:,} rows<extra></extra>"))
    fig = _layout(fig, "Calibration: predicted against observed", "mean predicted probability",
                  "observed share", barmode="overlay")
    most = max((int(np.max(q.calibration[c].counts)) for c in curves if len(q.calibration[c].counts)), default=1)
    # the rows axis from 0 (the bars' height is the count), ticks at whole rows
    fig.update_layout(yaxis=dict(range=[-0.02, 1.02]), xaxis=dict(range=[0, 1]),
                      yaxis2=dict(overlaying="y", side="right", showgrid=False, title="rows",
                                  range=[0, 1.05 * max(most, 1)], tickformat=",d", tickmode="auto", nticks=6))
    return fig


def gains_figure(q, *, class_index: int | None = None) -> go.Figure:
    """Cumulative gains: the share of the class's rows found among the rows with the highest
    probability of it, against the share of rows taken; the lift is in the hover."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=GUESS, name="guessing", hoverinfo="skip"))
    for n, c in enumerate(_curves(q, class_index)):
        g = q.gains[c]
        fig.add_trace(go.Scatter(
            x=g.fraction, y=g.gains, mode="lines", name=f"{plot(g.label)}",
            line=dict(color=PALETTE[(c if q.task != "binary" else n) % len(PALETTE)], width=2),
            customdata=np.column_stack([g.rows, g.lift]),
            hovertemplate="top %{x:.0%} of rows (%{customdata[0]:,})<br>%{y:.1%} of the class found<br>"
                          "lift %{customdata[1]:.2f}<extra></extra>"))
    fig = _layout(fig, "Cumulative gains", "share of rows (highest probability first)", "share of the class found")
    fig.update_xaxes(tickformat=".0%")
    fig.update_yaxes(tickformat=".0%")
    return fig


# --------------------------------------------------------------- regressors
def _sample(n: int) -> np.ndarray:
    if n <= MAX_POINTS:
        return np.arange(n)
    return np.sort(np.random.default_rng(0).choice(n, MAX_POINTS, replace=False))


def predicted_actual_figure(q, *, target: str = "target") -> go.Figure:
    """Each row's prediction against its target, with the line where they are equal."""
    s = _sample(len(q.rows))
    lo = float(min(q.y_true.min(), q.y_pred.min()))
    hi = float(max(q.y_true.max(), q.y_pred.max()))
    fmt = d3_format(scale_of(q.y_true, q.y_pred))
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=GUESS, name="predicted = actual",
                             hoverinfo="skip"))
    fig.add_trace(go.Scatter(
        x=q.y_true[s], y=q.y_pred[s], mode="markers", name="rows", customdata=q.rows[s],
        marker=dict(color=PALETTE[0], size=6, opacity=0.6),
        hovertemplate=f"row %{{customdata}}<br>actual %{{x:{fmt}}}<br>predicted %{{y:{fmt}}}<extra></extra>"))
    return _layout(fig, f"Predicted against actual (R² {fmt_number(q.metrics['r2'])})", f"actual {plot(target)}",
                   f"predicted {plot(target)}", showlegend=False)


def residuals_figure(q, x=None, *, x_name: str = "prediction", band: tuple | None = None) -> go.Figure:
    """Residuals (actual - predicted) against the prediction, or against ``x`` (a feature's
    values in the result's rows, named ``x_name``); ``band`` (low, high) shades a band of residuals."""
    s = _sample(len(q.rows))
    xs = q.y_pred if x is None else np.asarray(x)
    fmt = d3_format(scale_of(q.residuals))
    fig = go.Figure()
    colours = np.where(q.residuals[s] >= 0, NEGATIVE, POSITIVE)  # blue: predicted too low; vermillion: too high
    fig.add_trace(go.Scatter(
        x=xs[s], y=q.residuals[s], mode="markers", name="rows", customdata=q.rows[s],
        marker=dict(color=colours, size=6, opacity=0.6),
        hovertemplate=f"row %{{customdata}}<br>{plot(x_name)} %{{x}}<br>residual %{{y:{fmt}}}<extra></extra>"))
    fig.add_hline(y=0, line=GUESS)
    if band is not None:
        lo, hi = band
        r = q.residuals
        fig.add_hrect(y0=float(r.min()) if lo is None else lo, y1=float(r.max()) if hi is None else hi,
                      fillcolor=POSITIVE, opacity=0.12, line_width=0)
    return _layout(fig, f"Residuals against {plot(x_name)}", plot(x_name), "residual (actual − predicted)",
                   showlegend=False)


def residual_histogram_figure(q, *, quantiles=(0.05, 0.25, 0.5, 0.75, 0.95)) -> go.Figure:
    """How the residuals spread: a histogram with lines at their quantiles."""
    fig = go.Figure(go.Histogram(x=q.residuals, marker_color=PALETTE[0], opacity=0.75, name="rows",
                                 hovertemplate="residual %{x}<br>%{y:,} rows<extra></extra>"))
    scale = scale_of(q.residuals)
    values = [float(np.quantile(q.residuals, a)) for a in quantiles]
    for a, v in zip(quantiles, values):
        fig.add_vline(x=v, line=dict(color=POSITIVE if a != 0.5 else "#000000", dash="dot", width=1))
    # one label per group of quantiles too close to label apart (a long tail squeezes the middle ones
    # into a few pixels), the groups on two heights in turn: no label prints on another
    span = float(np.ptp(q.residuals)) or 1.0
    groups: list[list[int]] = []
    for i, v in enumerate(values):
        if groups and v - values[groups[-1][0]] < 0.12 * span:
            groups[-1].append(i)
        else:
            groups.append([i])
    for g, members in enumerate(groups):
        names = "/".join(f"{quantiles[i]:.0%}" for i in members)
        lo, hi = values[members[0]], values[members[-1]]
        shown = fmt_number(lo, scale) if len(members) == 1 else f"{fmt_number(lo, scale)} to {fmt_number(hi, scale)}"
        fig.add_annotation(x=(lo + hi) / 2, xref="x", y=1.0, yref="paper", yanchor="bottom", showarrow=False,
                           text=f"{names}: {shown}", font_size=11, yshift=4 + 16 * (g % 2))
    fig = _layout(fig, "Residuals (actual − predicted) and their quantiles", "residual", "rows", showlegend=False)
    fig.update_layout(margin=dict(t=110), title=dict(y=0.97, yanchor="top"))
    return fig


def distribution_figure(d, *, by_class: bool) -> go.Figure:
    """Rows per bin of an :class:`explainers.quality.Distribution`, one translucent bar series
    per name (``by_class``: the actual classes, by a class's predicted probability; else the
    predicted and actual values), the legend below the plot."""
    title = (f"{plot(d.what[:1].upper() + d.what[1:])}, by actual class" if by_class
             else "Predictions and the target, side by side")
    centres, width = (d.edges[:-1] + d.edges[1:]) / 2, float(d.edges[1] - d.edges[0])
    fig = go.Figure()
    for i, (name, counts) in enumerate(zip(d.names, d.counts)):
        fig.add_trace(go.Bar(x=centres, y=counts, width=width, name=plot(name), opacity=0.6,
                             marker_color=PALETTE[i % len(PALETTE)], customdata=np.c_[d.edges[:-1], d.edges[1:]],
                             hovertemplate=f"{plot(name)}<br>%{{customdata[0]:.3g}} to %{{customdata[1]:.3g}}"
                                           "<br>%{y:,} rows<extra></extra>"))
    fig = _layout(fig, title, plot(d.what), "rows", barmode="overlay", bargap=0)
    if by_class:
        fig.update_layout(legend_title_text="actual class")
    return fig


# ------------------------------------------------------- a segment and the rest
from .style import REST_COLOUR, SEGMENT_COLOUR  # noqa: E402  (the segment's and the rest's colours)


def segment_names(segment_name: str) -> tuple[str, str]:
    """The legend names of the segment and of the rest (escaped for Plotly)."""
    return f"Segment: {plot(segment_name)}", "Rest"


def confusion_segment_figure(q_segment, q_rest, *, segment_name: str) -> go.Figure:
    """The confusion matrix of the segment's rows beside the rest's: counts and each cell's
    share of its actual class, the segment in orange, the rest in blue."""
    from plotly.subplots import make_subplots

    labels = [plot(c) for c in q_segment.classes]
    k = len(labels)
    names = segment_names(segment_name)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=[
        f"{n} ({len(q.rows):,} rows)" for n, q in zip(names, (q_segment, q_rest))])
    for col, (q, name, colour) in enumerate(zip((q_segment, q_rest), names, (SEGMENT_COLOUR, REST_COLOUR)), start=1):
        m = q.confusion.matrix
        totals = m.sum(axis=1, keepdims=True)
        share = np.divide(m, totals, out=np.zeros(m.shape, float), where=totals > 0)
        text = [[f"{int(m[i, j]):,}<br>({_share(share[i, j])})" for j in range(k)] for i in range(k)]
        fig.add_trace(go.Heatmap(
            z=m, x=labels, y=labels, text=text, texttemplate="%{text}", name=name, showscale=False,
            colorscale=[[0.0, "#FFFFFF"], [1.0, colour]], xgap=2, ygap=2,
            hovertemplate=f"{name}<br>actual %{{y}}, predicted %{{x}}: %{{z:,}} rows<extra></extra>"), 1, col)
        fig.update_xaxes(type="category", title_text="predicted", row=1, col=col)
        fig.update_yaxes(type="category", autorange="reversed", title_text="actual" if col == 1 else None,
                         row=1, col=col)
    title = "Confusion matrix, segment against the rest," + _decision_rule(q_segment)
    fig.update_layout(title=dict(text=title), font=FONT, template="plotly_white", height=max(320, 90 * k + 140),
                      margin=dict(l=60, r=20, t=90, b=50))
    return fig


def predicted_actual_segment_figure(q_segment, q_rest, *, segment_name: str, target: str = "target") -> go.Figure:
    """Each row's prediction against its target, the segment's rows (orange, on top) over the
    rest's (blue), with the line where they are equal; R² of each in the legend."""
    lo = float(min(q.y_true.min() for q in (q_segment, q_rest)))
    lo = min(lo, float(min(q.y_pred.min() for q in (q_segment, q_rest))))
    hi = float(max(max(q.y_true.max(), q.y_pred.max()) for q in (q_segment, q_rest)))
    fmt = d3_format(scale_of(q_segment.y_true, q_rest.y_true, q_segment.y_pred, q_rest.y_pred))
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=GUESS, name="predicted = actual",
                             hoverinfo="skip"))
    names = segment_names(segment_name)
    for q, name, colour, opacity in ((q_rest, names[1], REST_COLOUR, 0.35), (q_segment, names[0], SEGMENT_COLOUR, 0.8)):
        s = _sample(len(q.rows))
        fig.add_trace(go.Scatter(
            x=q.y_true[s], y=q.y_pred[s], mode="markers", name=name, customdata=q.rows[s],
            marker=dict(color=colour, size=6, opacity=opacity),
            hovertemplate=f"{name}<br>row %{{customdata}}<br>actual %{{x:{fmt}}}<br>predicted %{{y:{fmt}}}"
                          "<extra></extra>"))
    return _layout(fig, f"Predicted against actual: segment (R² {fmt_number(q_segment.metrics['r2'])}) and rest "
                        f"(R² {fmt_number(q_rest.metrics['r2'])})", f"actual {plot(target)}",
                   f"predicted {plot(target)}")
