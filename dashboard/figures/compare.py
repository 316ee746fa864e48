"""Figures of the Compare page: several models on the same rows, one colour per model.

- :func:`differences_figure`: each pair's metric difference with its paired bootstrap
  interval (a difference is real when its interval leaves 0 out);
- :func:`roc_overlay_figure`, :func:`pr_overlay_figure`: the models' curves on one chart
  (classifiers, one class against the rest);
- :func:`predicted_actual_overlay_figure`: predicted against actual (regressors);
- :func:`pdp_overlay_figure`: the partial dependence of each model on one grid.

Pure functions of result objects; model, class and feature names are escaped for Plotly.
Legends sit below the plot area, never over the data.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.safe_text import plot

from .style import FONT, MISSING, NEGATIVE, PALETTE, POSITIVE, d3_format, fmt_number, legend_below, scale_of

#: pixels between the bottom of the plot area and a legend below it (tick labels and the axis title)
LEGEND_GAP_PX = 62
#: room below the plot area for the tick labels, the axis title and a legend of two rows
BOTTOM_PX = 120
#: a chart's scatter of rows is sampled beyond this many points per model
MAX_POINTS = 3_000


def colour(i: int) -> str:
    """The colour of the i-th model, the same on every chart of the page."""
    return PALETTE[i % len(PALETTE)]


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 400) -> go.Figure:
    """Title, axes and a legend below the plot area, under the x axis's title: placed in pixels
    (as a share of the plot's own height), so it never covers the data or the axis title."""
    top = 60
    fig.update_layout(title=dict(text=title), font=FONT, template="plotly_white", height=height,
                      margin=dict(l=60, r=20, t=top, b=BOTTOM_PX), xaxis_title=x, yaxis_title=y,
                      legend=legend_below(height, top, BOTTOM_PX, LEGEND_GAP_PX))
    return fig


def differences_figure(differences: pd.DataFrame, metric_labels: dict | None = None) -> go.Figure:
    """Per pair and metric: the difference (a - b) as a dot with its interval as a bar; a
    difference whose interval leaves 0 out is drawn in colour (real), the others in grey."""
    labels = metric_labels or {}
    d = differences.reset_index(drop=True)
    rows = [f"{plot(labels.get(m, m))}: {plot(a)} − {plot(b)}" for a, b, m in zip(d.model_a, d.model_b, d.metric)]
    real = d["significant"].to_numpy(bool) if "significant" in d else np.zeros(len(d), bool)
    fig = go.Figure()
    for flag, name, col in ((True, "interval leaves 0 out", POSITIVE), (False, "interval holds 0", MISSING)):
        keep = np.flatnonzero(real == flag)
        if not len(keep):
            continue
        diff, lo, hi = (d[c].to_numpy(float)[keep] for c in ("difference", "low", "high"))
        fig.add_trace(go.Scatter(
            x=diff, y=[rows[i] for i in keep], mode="markers", name=name, marker=dict(color=col, size=10),
            error_x=dict(type="data", symmetric=False, array=hi - diff, arrayminus=diff - lo, color=col, width=4),
            customdata=np.column_stack([lo, hi]),
            hovertemplate="%{y}<br>difference %{x:.4g}<br>interval %{customdata[0]:.4g} to "
                          "%{customdata[1]:.4g}<extra></extra>"))
    fig.add_vline(x=0, line=dict(color=NEGATIVE, width=1, dash="dot"))
    fig.update_yaxes(autorange="reversed", automargin=True)
    return _layout(fig, "Differences between the models, with paired bootstrap intervals", "difference (a − b)",
                   "", height=140 + 34 * max(len(rows), 3))


def _curve_class(q, class_index: int | None) -> int:
    """The curve position of a quality result to overlay: the positive class of a binary
    model, else the picked class (default the first)."""
    return 0 if q.task == "binary" else (0 if class_index is None else int(class_index))


def roc_overlay_figure(qualities: dict, *, class_index: int | None = None) -> go.Figure:
    """The ROC curve of each model (``{name: ClassificationQuality}``), with its AUC."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color=MISSING, dash="dash", width=1),
                             name="guessing", hoverinfo="skip"))
    label = ""
    for i, (name, q) in enumerate(qualities.items()):
        r = q.roc[_curve_class(q, class_index)]
        label = plot(r.label)
        fig.add_trace(go.Scatter(x=r.fpr, y=r.tpr, mode="lines", line=dict(color=colour(i), width=2),
                                 name=f"{plot(name)} (AUC {fmt_number(r.auc)})",
                                 hovertemplate=f"{plot(name)}<br>false positive rate %{{x:.3f}}<br>"
                                               "true positive rate %{y:.3f}<extra></extra>"))
    return _layout(fig, f"ROC curves ({label} against the rest)", "false positive rate", "true positive rate")


def pr_overlay_figure(qualities: dict, *, class_index: int | None = None) -> go.Figure:
    """The precision-recall curve of each model, with its average precision."""
    fig = go.Figure()
    label = ""
    for i, (name, q) in enumerate(qualities.items()):
        r = q.pr[_curve_class(q, class_index)]
        label = plot(r.label)
        fig.add_trace(go.Scatter(x=r.recall, y=r.precision, mode="lines", line=dict(color=colour(i), width=2,
                                                                                     shape="hv"),
                                 name=f"{plot(name)} (AP {fmt_number(r.average_precision)})",
                                 hovertemplate=f"{plot(name)}<br>recall %{{x:.3f}}<br>precision %{{y:.3f}}"
                                               "<extra></extra>"))
    return _layout(fig, f"Precision and recall ({label})", "recall", "precision")


def predicted_actual_overlay_figure(qualities: dict, *, target: str = "target", seed: int = 0) -> go.Figure:
    """Predicted against actual values of each model (``{name: RegressionQuality}``), with the
    diagonal of a perfect model; at most :data:`MAX_POINTS` rows per model (a seeded sample)."""
    fig = go.Figure()
    lo, hi = np.inf, -np.inf
    for i, (name, q) in enumerate(qualities.items()):
        y, p = np.asarray(q.y_true, float), np.asarray(q.y_pred, float)
        take = np.arange(len(y))
        if len(y) > MAX_POINTS:
            take = np.sort(np.random.default_rng(seed).choice(len(y), MAX_POINTS, replace=False))
        lo, hi = min(lo, y.min(), p.min()), max(hi, y.max(), p.max())
        fig.add_trace(go.Scatter(x=y[take], y=p[take], mode="markers", name=plot(name),
                                 marker=dict(color=colour(i), size=5, opacity=0.55),
                                 hovertemplate=f"{plot(name)}<br>actual %{{x:.4g}}<br>predicted %{{y:.4g}}"
                                               "<extra></extra>"))
    if np.isfinite(lo):
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="perfect prediction",
                                 line=dict(color=MISSING, dash="dash", width=1), hoverinfo="skip"))
    spec = d3_format(scale_of(lo, hi)) if np.isfinite(lo) else None
    fig = _layout(fig, "Predicted against actual", f"actual {plot(target)}", f"predicted {plot(target)}")
    if spec:
        fig.update_xaxes(tickformat=spec)
        fig.update_yaxes(tickformat=spec)
    return fig


def pdp_overlay_figure(results: dict, feature: str, output_label: str = "prediction") -> go.Figure:
    """The partial dependence of each model (``{name: (grid, average)}``, one output each) on
    ``feature``, on one grid."""
    fig = go.Figure()
    numeric = True
    for i, (name, (grid, avg)) in enumerate(results.items()):
        grid = np.asarray(grid)
        numeric = numeric and grid.dtype.kind in "fiub"
        fig.add_trace(go.Scatter(x=grid if numeric else [plot(g) for g in grid], y=np.asarray(avg, float),
                                 mode="lines+markers" if not numeric or len(grid) < 15 else "lines",
                                 line=dict(color=colour(i), width=3), name=plot(name),
                                 hovertemplate=f"{plot(name)}<br>{plot(feature)} %{{x}}<br>"
                                               f"{plot(output_label)} %{{y:.4g}}<extra></extra>"))
    return _layout(fig, f"Partial dependence on {plot(feature)}", plot(feature),
                   f"partial dependence: {plot(output_label)}")
