"""Variable importance figures: ``importance_bars_figure`` (methods side by side)
and ``agreement_heatmap_figure`` (rank agreement between methods)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explainers.importance import ImportanceComparison, ImportanceResult, compare_importances

from dashboard.safe_text import plot

from .style import FONT, PALETTE, d3_format, legend_below, scale_of, short_category_axis, short_labels


def _per_mean(r: ImportanceResult) -> float:
    """What turns a result's std over its repeats into the standard error of the bar (its mean)."""
    n = (r.params or {}).get("n_repeats")
    return 1.0 / np.sqrt(n) if isinstance(n, (int, np.integer)) and n > 1 else 1.0


def _one_method_data(r: ImportanceResult, normalised: bool):
    """(values, errors, order key, descriptions) of a single method; errors are standard errors."""
    idx = pd.Index(r.feature_names, name="feature")
    imp = np.clip(r.importances, 0, None)
    total = imp.sum() if imp.sum() > 0 else 1.0
    vals = pd.DataFrame({r.label: imp / total if normalised else r.importances}, index=idx)
    errs = pd.DataFrame({r.label: (r.std / total if normalised else r.std) * _per_mean(r)}, index=idx)
    return vals, errs, vals.iloc[:, 0], {r.label: r.description}


def _imp_bar_data(data, normalised: bool):
    """Return (values, errors, mean-share order key, descriptions), features x methods."""
    if isinstance(data, ImportanceResult):
        data = [data]
    if isinstance(data, ImportanceComparison):
        comp = data
    else:
        results = list(data)
        if not results or not all(isinstance(r, ImportanceResult) for r in results):
            raise ValueError(
                "importance_bars_figure takes an ImportanceComparison or a list of "
                "ImportanceResult objects."
            )
        if len(results) == 1:
            return _one_method_data(results[0], normalised)
        comp = compare_importances(results)
    desc = {lab: r.description for lab, r in zip(comp.methods, comp.results)}
    if normalised:
        ses = comp.stds * pd.Series({lab: _per_mean(r) for lab, r in zip(comp.methods, comp.results)})
        return comp.shares, ses, comp.shares.mean(axis=1), desc
    feats = list(comp.shares.index)
    vals, errs = {}, {}
    for lab, r in zip(comp.methods, comp.results):
        pos = [r.feature_names.index(f) for f in feats]
        vals[lab], errs[lab] = r.importances[pos], r.std[pos] * _per_mean(r)
    idx = comp.shares.index
    return pd.DataFrame(vals, index=idx), pd.DataFrame(errs, index=idx), comp.shares.mean(axis=1), desc


def _feature_order(vals: pd.DataFrame, key: pd.Series, sort_by: str | None, top_k: int | None) -> pd.Index:
    """Features most important first (by ``sort_by``'s column or the key), cut to ``top_k``."""
    if sort_by is not None:
        if sort_by not in vals.columns:
            raise ValueError(
                f"sort_by={sort_by!r} is not one of the methods shown: {list(vals.columns)}."
            )
        key = vals[sort_by]
    order = key.sort_values(ascending=False, kind="stable").index
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
            raise ValueError(f"top_k must be None or an int >= 1; got {top_k!r}.")
        order = order[: int(top_k)]
    return order


def _method_bar(i: int, method: str, vals: pd.DataFrame, errs: pd.DataFrame, fmt: str, desc: dict,
                floor: bool = False) -> go.Bar:
    """One method's bars; feature names and texts escaped for Plotly (user text)."""
    return go.Bar(
        name=plot(method),
        y=[plot(f) for f in vals.index],
        x=vals[method].to_numpy(),
        orientation="h",
        marker_color=PALETTE[i % len(PALETTE)],
        # the standard error of the bar (a permutation's mean over its repeats), never below 0 for a share
        error_x=dict(type="data", array=errs[method].to_numpy(), visible=True, color="#444444", thickness=1.2,
                     width=3, **({"arrayminus": np.minimum(errs[method].to_numpy(), vals[method].to_numpy())}
                                if floor else {})),
        hovertemplate=(
            f"<b>%{{y}}</b><br>{plot(method)}: %{{x:{fmt}}} ± %{{error_x.array:{fmt}}} (standard error)"
            f"<extra>{plot(desc.get(method, '')[:60])}</extra>"
        ),
    )


def importance_bars_figure(
    data: ImportanceComparison | Sequence[ImportanceResult] | ImportanceResult,
    *,
    sort_by: str | None = None,
    normalised: bool = True,
    top_k: int | None = None,
    title: str | None = None,
) -> go.Figure:
    """Grouped horizontal bars: one group per feature, one bar per method.

    Parameters
    ----------
    data : ImportanceComparison, list of ImportanceResult, or one ImportanceResult
    sort_by : str, default=None
        A method label (see ``comparison.methods``) to order the features by;
        None orders by the mean share over methods. Most important on top.
    normalised : bool, default=True
        True: each method as a share of its total, so methods with different
        units sit on one axis. False: each method in its own units.
    top_k : int, default=None
        Show only the first ``top_k`` features of that order.
    title : str, default=None

    Returns
    -------
    plotly.graph_objects.Figure
        One bar trace per method, error bars the standard error of each bar (a permutation's
        std over its repeats / sqrt(repeats)); a share's never reaches below 0.
    """
    vals, errs, key, desc = _imp_bar_data(data, normalised)
    order = _feature_order(vals, key, sort_by, top_k)
    vals, errs = vals.loc[order], errs.loc[order]
    fmt = ".1%" if normalised else d3_format(scale_of(vals.to_numpy(dtype=float), errs.to_numpy(dtype=float)))
    fig = go.Figure()
    for i, method in enumerate(vals.columns):
        fig.add_trace(_method_bar(i, method, vals, errs, fmt, desc, floor=normalised))
    n_feat, n_meth = len(vals.index), len(vals.columns)
    # the legend below the x axis, a row per two methods: it never covers the title or a bar
    bottom = 80 + 22 * ((n_meth + 1) // 2)
    height = int(min(2400, max(320, 60 + bottom + n_feat * (14 + 12 * n_meth))))
    fig.update_layout(
        template="plotly_white",
        barmode="group",
        title=plot(title) if title else ("Variable importance, compared" if n_meth > 1 else "Variable importance"),
        font=FONT,
        legend=legend_below(height, 60, bottom, 56),
        height=height,
        margin=dict(l=10, r=20, t=60, b=bottom),
        bargap=0.25,
    )
    fig.update_xaxes(
        title_text="Share of total importance" if normalised else "Importance (each method in its own units)",
        tickformat=".0%" if normalised else fmt,
        zeroline=True, zerolinecolor="#888888",
    )
    fig.update_yaxes(title_text="Feature", autorange="reversed", automargin=True)
    short_category_axis(fig, "y", list(vals.index))
    return fig


def agreement_heatmap_figure(comparison: ImportanceComparison, kind: str = "spearman") -> go.Figure:
    """Rank agreement between methods, as an annotated heatmap from -1 to 1.

    Parameters
    ----------
    comparison : ImportanceComparison
    kind : {"spearman", "kendall"}, default="spearman"

    Returns
    -------
    plotly.graph_objects.Figure
        One heatmap trace; ``z`` is the agreement matrix (NaN where a method gives
        every feature the same importance).
    """
    if not isinstance(comparison, ImportanceComparison):
        raise ValueError("agreement_heatmap_figure takes an ImportanceComparison.")
    if kind not in ("spearman", "kendall"):
        raise ValueError(f"kind must be 'spearman' or 'kendall'; got {kind!r}.")
    mat = comparison.spearman if kind == "spearman" else comparison.kendall
    z = mat.to_numpy(dtype=float)
    text = [["n/a" if np.isnan(v) else f"{v:.2f}" for v in row] for row in z]
    symbol = "Spearman ρ" if kind == "spearman" else "Kendall τ"
    # Diverging vermillion - light grey - blue: both ends distinguishable with
    # red-green colour blindness, and 0 (no agreement) is neutral.
    scale = [[0.0, "#D55E00"], [0.5, "#F2F2F2"], [1.0, "#0072B2"]]
    # long method names are shortened on the axes (a long label would run into the next one),
    # and given whole in the hover
    cols, rows = short_labels(mat.columns), short_labels(mat.index)
    full = [[f"{plot(r)} vs {plot(c)}" for c in mat.columns] for r in mat.index]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[plot(c) for c in cols],
            y=[plot(r) for r in rows],
            zmin=-1,
            zmax=1,
            colorscale=scale,
            text=text,
            texttemplate="%{text}",
            textfont=dict(size=15),
            customdata=full,
            colorbar=dict(title=dict(text=symbol, side="right")),
            hovertemplate="%{customdata}<br>" + symbol + " = %{text}<extra></extra>",
            xgap=2,
            ygap=2,
        )
    )
    side = int(min(900, max(320, 140 + 90 * len(mat))))
    fig.update_layout(
        template="plotly_white",
        title=f"Rank agreement between methods ({symbol})",
        font=FONT,
        height=side,
        margin=dict(l=10, r=10, t=70, b=10),
    )
    # upright labels' boxes never meet; slanted ones overlap their neighbours' boxes
    fig.update_xaxes(side="bottom", tickangle=-90 if max(map(len, cols)) > 8 else 0, automargin=True)
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig


def segment_importance_figure(segment: ImportanceResult, rest: ImportanceResult, *, segment_name: str) -> go.Figure:
    """One method's importance on a segment's rows beside the rest's, in the method's own units.

    Grouped horizontal bars, features ordered by the mean of the two (most important on
    top), error bars from each result's std.

    Returns
    -------
    plotly.graph_objects.Figure
        Two bar traces, "Segment: <name>" then "Rest", whose ``x`` are each result's
        ``importances`` for the features in ``y``.
    """
    from .quality import REST_COLOUR, SEGMENT_COLOUR, segment_names

    feats = list(segment.feature_names)
    rest_pos = [list(rest.feature_names).index(f) for f in feats]
    vals = [np.asarray(segment.importances, float), np.asarray(rest.importances, float)[rest_pos]]
    errs = [np.asarray(segment.std, float), np.asarray(rest.std, float)[rest_pos]]
    order = np.argsort(-(vals[0] + vals[1]), kind="stable")
    fmt = d3_format(scale_of(*vals, *errs))
    fig = go.Figure()
    for v, e, name, colour, r in zip(vals, errs, segment_names(segment_name), (SEGMENT_COLOUR, REST_COLOUR),
                                     (segment, rest)):
        n = r.params.get("n_rows")
        fig.add_trace(go.Bar(
            name=name, y=[plot(feats[j]) for j in order], x=v[order], orientation="h", marker_color=colour,
            error_x=dict(type="data", array=e[order], visible=True, color="#444444", thickness=1.2, width=3),
            hovertemplate=(f"<b>%{{y}}</b><br>{name}{f' ({n:,} rows)' if n else ''}: %{{x:{fmt}}} ± "
                           f"%{{error_x.array:{fmt}}}<extra></extra>")))
    fig.update_layout(
        template="plotly_white", barmode="group", font=FONT, bargap=0.25,
        title=f"{plot(segment.label)}: segment against the rest",
        legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0),
        height=int(min(2400, max(320, 120 + len(feats) * 38))), margin=dict(l=10, r=20, t=90, b=50))
    fig.update_xaxes(title_text=f"Importance ({plot(segment.label)})", tickformat=fmt, zeroline=True,
                     zerolinecolor="#888888")
    fig.update_yaxes(title_text="Feature", autorange="reversed", automargin=True)
    return fig
