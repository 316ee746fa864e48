"""SHAP figures: one row (``waterfall_figure``, ``force_figure``) and many rows
(``beeswarm_figure``, ``mean_abs_figure``, ``dependence_figure``).

Vermillion raises the output, blue lowers it, grey marks a masked feature
(attribution 0); see :mod:`dashboard.figures.style`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explainers.errors import param_error
from explainers.shap import ShapResult

from dashboard.safe_text import plot, plot_values

from .style import (FONT, MISSING, NEGATIVE, PALETTE, POSITIVE, VALUE_SCALE, d3_format, fmt_number, fmt_signed,
                    fmt_value, nice_ticks, output_words, scale_of, short_category_axis, short_labels)


# -------------------------------------------------------------------- helpers
def _one_output(result: ShapResult, class_index: int | None, func: str) -> tuple[ShapResult, str]:
    """The result for one output, and a label for titles (escaped for Plotly).

    With several outputs and no class_index, the positive class of a binary
    model (index 1) or the first class otherwise is shown.
    """
    if result.n_outputs == 1:
        result._check_class(class_index, func)
        return result, plot(result.output_names[0]) if result.output_names else ""
    k = result._check_class(class_index, func)
    if k is None:
        k = 1 if result.n_outputs == 2 else 0
    return result.select(k), plot(result.output_names[k])


def _check_max_display(max_display, func: str, least: int) -> None:
    if isinstance(max_display, bool) or not isinstance(max_display, (int, np.integer)) or max_display < least:
        raise param_error("max_display", func, f"an int >= {least}", max_display)


def _one_row(result: ShapResult, row: int, class_index: int | None, max_display, func: str, *,
             min_display: int):
    """One row of one output, checked: (res, label, i, phi, missing, base, pred, values, names).

    ``label`` and ``names`` are escaped for Plotly (user text)."""
    res, label = _one_output(result, class_index, func)
    i = res._check_row(row, func)
    _check_max_display(max_display, func, min_display)
    return (res, label, i, res.values[i], res.missing[i], float(res.base_values[i]),
            float(res.predictions[i]), res.data.iloc[i], [plot(n) for n in res.feature_names])


def row_label_of(result: ShapResult, i: int) -> str:
    """The label of the i-th explained row: its index label in the data it came from
    (``result.data``), else its position in the result."""
    data = getattr(result, "data", None)
    if isinstance(data, pd.DataFrame) and len(data.index) == result.n_rows:
        label = data.index[i]
        if isinstance(label, (np.integer, int)) and not isinstance(label, bool):
            return str(int(label))
        return plot(label)
    return str(i)


def _row_title(result: ShapResult, i: int, row_label) -> str:
    """"Row 123" for the title of a one-row figure (escaped for Plotly).

    ``row_label``: None takes the row's label from the result's data; an int (or
    integer-like) is the row of the caller's data ("Row 123"); any other text is used as
    given ("Edited row 123")."""
    if row_label is None:
        return f"Row {row_label_of(result, i)}"
    if isinstance(row_label, (int, np.integer)) and not isinstance(row_label, bool):
        return f"Row {int(row_label)}"
    return plot(row_label)


def _row_labels(result: ShapResult, rows) -> list[str]:
    """Data labels of the given result positions (for hover text)."""
    data = getattr(result, "data", None)
    if isinstance(data, pd.DataFrame) and len(data.index) == result.n_rows:
        idx = data.index
        return [str(int(v)) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else plot(v)
                for v in idx[np.asarray(rows, dtype=int)]]
    return [str(int(r)) for r in rows]


def _value_column(fig: go.Figure, positions, texts: list[str]) -> None:
    """The numbers of a horizontal bar chart as a column of tick labels on the right.

    Tick labels sit outside the plot area and Plotly's automargin makes room for them,
    so they never overlap a bar, a feature label or each other, and are never cut off,
    however narrow the column (text beside a bar's end needs room the axis range cannot
    know in advance). The second y axis follows the first (``matches``); one invisible
    point per bar anchors it.
    """
    positions = list(positions)
    fig.add_trace(go.Scatter(
        x=[None] * len(positions), y=positions, yaxis="y2", mode="markers", marker=dict(opacity=0),
        hoverinfo="skip", showlegend=False, name="values",
    ))
    fig.update_layout(yaxis2=dict(
        overlaying="y", side="right", matches="y", tickmode="array", tickvals=positions, ticktext=texts,
        showgrid=False, zeroline=False, automargin=True, ticks="", fixedrange=True,
    ))


def _line_labels(fig: go.Figure, marks: list[tuple[float, str]], lo: float, hi: float) -> None:
    """Labels of vertical lines (base value, prediction), each on its own row above the plot
    and anchored towards the middle of the x range, so they neither overlap each other or the
    title nor run past the figure's edge."""
    mid = (lo + hi) / 2
    for k, (xv, text) in enumerate(marks):
        fig.add_annotation(
            x=xv, y=1.0, yref="paper", yanchor="bottom", yshift=4 + 22 * k, text=text, showarrow=False,
            xanchor="left" if xv <= mid else "right", font=dict(size=13),
        )


def _padded_range(*values, pad: float = 0.06) -> tuple[float, float]:
    """[lo, hi] over the finite values, widened by ``pad`` of the span on each side."""
    arr = np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in values])
    arr = arr[np.isfinite(arr)]
    lo, hi = (float(arr.min()), float(arr.max())) if arr.size else (0.0, 1.0)
    span = hi - lo or max(abs(hi), 1.0)
    return lo - pad * span, hi + pad * span


def _few_ticks(fig: go.Figure, lo: float, hi: float, scale: float, max_ticks: int = 5) -> None:
    """The x range and at most ``max_ticks`` round ticks on it, labelled like every number here:
    charts sit in half-width columns beside long feature names, where Plotly's own choice of
    ticks can put labels edge to edge."""
    ticks = nice_ticks(lo, hi, max_ticks)
    fig.update_xaxes(range=[lo, hi], tickmode="array", tickvals=ticks,
                     ticktext=[fmt_number(t, scale) for t in ticks])


def _layout(fig: go.Figure, title: str, xtitle: str, height: int) -> go.Figure:
    fig.update_layout(
        template="plotly_white",
        title=dict(text=title, x=0.01, xanchor="left"),
        font=FONT,
        height=height,
        margin=dict(l=10, r=30, t=60, b=50),
        showlegend=False,
        hoverlabel=dict(font_size=13),
    )
    fig.update_xaxes(title_text=xtitle, zeroline=False)
    return fig


def _output_title(res: ShapResult, label: str) -> str:
    return output_words(res.output, label) if res.output != "raw" else "prediction"


def _sign_colour(v: float) -> str:
    return POSITIVE if v >= 0 else NEGATIVE


# ------------------------------------------------------------------ waterfall
def _waterfall_items(phi, miss, values, names, max_display: int) -> list[tuple[str, float, str, int]]:
    """The bars bottom to top as (label, phi, colour, feature index): missing (0), "other",
    then increasing |phi| up to the largest."""
    present = np.flatnonzero(~miss)
    order = present[np.argsort(-np.abs(phi[present]), kind="stable")]
    if len(order) > max_display:
        shown, rest = order[: max_display - 1], order[max_display - 1 :]
    else:
        shown, rest = order, order[:0]
    items: list[tuple[str, float, str, int]] = []
    masked = np.flatnonzero(miss)
    if len(masked) > max_display:
        items.append((f"{len(masked)} missing features", 0.0, MISSING, -2))
    else:
        for j in masked[::-1]:
            items.append((f"{names[j]} = NA (missing)", 0.0, MISSING, int(j)))
    if len(rest):
        s = float(phi[rest].sum())
        items.append((f"{len(rest)} other features", s, _sign_colour(s), -1))
    for j in shown[::-1]:
        v = float(phi[j])
        items.append((f"{names[j]} = {fmt_value(values.iloc[j])}", v, _sign_colour(v), int(j)))
    return items


def _waterfall_bar(items, base: float, scale: float) -> go.Bar:
    """One horizontal bar per item, each starting where the previous one ended."""
    x = np.array([it[1] for it in items])
    bases = base + np.concatenate([[0.0], np.cumsum(x)[:-1]]) if len(x) else np.array([])
    return go.Bar(
        x=x,
        y=np.arange(len(items)),
        base=bases,
        orientation="h",
        marker=dict(color=[it[2] for it in items], line=dict(width=0)),
        customdata=[it[3] for it in items],
        hovertext=[
            f"<b>{it[0]}</b><br>SHAP value: {fmt_signed(it[1], scale)}<br>running total: "
            f"{fmt_number(b, scale)} → {fmt_number(b + it[1], scale)}"
            for it, b in zip(items, bases)
        ],
        hovertemplate="%{hovertext}<extra></extra>",
        name="contribution",
    )


def waterfall_figure(
    result: ShapResult, row: int, *, class_index: int | None = None, max_display: int = 10,
    row_label=None,
) -> go.Figure:
    """Waterfall of one row: from the base value, feature by feature, to the prediction.

    The largest |contributions| are drawn at the top; the rest are summed in
    one "N other features" bar at the bottom. Masked features are drawn as
    grey bars of length 0 labelled ``= NA (missing)``.

    Parameters
    ----------
    result : ShapResult
    row : int
        Position of the row in the result.
    class_index : int, default=None
        Output to show for multi-output results (default: positive class of a
        binary model, else the first).
    max_display : int, default=10
        Bars for present features, including the "other features" bar.
    row_label : int or str, default=None
        What the title calls the row: an int is the row of the caller's data
        ("Row 123"), other text is used as given; None takes the row's label in
        ``result.data`` (the index of the rows that were explained).

    Returns
    -------
    plotly.graph_objects.Figure
        ``data[0]`` is one horizontal Bar trace: ``x`` are the attributions,
        ``base`` the running total before each bar (bottom to top), so the top bar
        ends at the prediction. ``customdata`` holds the feature index (-1 for the
        "other" bar, -2 for the merged missing bar). The contributions are written
        as the tick labels of a right-hand axis (``layout.yaxis2.ticktext``).
    """
    res, label, i, phi, miss, base, pred, values, names = _one_row(
        result, row, class_index, max_display, "waterfall_figure", min_display=2)
    items = _waterfall_items(phi, miss, values, names, max_display)
    scale = scale_of(base, pred, np.abs(phi).sum())
    bar = _waterfall_bar(items, base, scale)
    fig = go.Figure(bar)
    pos = np.arange(len(items))
    fig.update_yaxes(tickvals=pos, ticktext=[it[0] for it in items], automargin=True,
                     range=[-0.6, len(items) - 0.4])
    _value_column(fig, pos, ["0 (missing)" if it[2] == MISSING else fmt_signed(it[1], scale) for it in items])
    ends = np.asarray(bar.base, dtype=float) + np.asarray(bar.x, dtype=float) if len(items) else np.array([])
    lo, hi = _padded_range(ends, bar.base if len(items) else [], [base, pred])
    for xv in (base, pred):
        fig.add_vline(x=xv, line=dict(color="#555555", width=1, dash="dot"))
    _line_labels(fig, [(base, f"E[f(X)] = {fmt_number(base, scale)}"), (pred, f"f(x) = {fmt_number(pred, scale)}")],
                 lo, hi)
    title = (f"{_row_title(res, i, row_label)}: {_output_title(res, label)} "
             f"{fmt_number(pred, scale)} (base {fmt_number(base, scale)})")
    fig = _layout(fig, title, _output_title(res, label), height=150 + 32 * max(len(items), 3))
    _few_ticks(fig, lo, hi, scale)
    fig.update_layout(margin=dict(t=100))
    return fig


# ---------------------------------------------------------------------- force
def _force_side(sign: int, colour: str, name: str, phi, miss, values, names, pred: float,
                max_display: int, scale: float) -> go.Bar:
    """The raising (sign 1) or lowering (-1) segments, largest next to f(x)."""
    idx = np.flatnonzero(~miss & (sign * phi > 0))
    idx = idx[np.argsort(-np.abs(phi[idx]), kind="stable")]
    segs = [(f"{names[j]} = {fmt_value(values.iloc[j])}", float(phi[j])) for j in idx[:max_display]]
    if len(idx) > max_display:
        segs.append((f"{len(idx) - max_display} other features", float(phi[idx[max_display:]].sum())))
    widths = np.abs([s[1] for s in segs])
    if sign > 0:
        # largest next to f(x): stack leftwards from the prediction
        right = pred - np.concatenate([[0.0], np.cumsum(widths)[:-1]])
        lefts = right - widths
    else:
        lefts = pred + np.concatenate([[0.0], np.cumsum(widths)[:-1]])
    return go.Bar(
        x=widths,
        y=[0] * len(segs),
        base=lefts,
        orientation="h",
        name=name,
        marker=dict(color=colour, line=dict(color="white", width=1)),
        customdata=[s[1] for s in segs],
        text=[s[0] for s in segs],
        textposition="inside",
        insidetextanchor="middle",
        constraintext="inside",
        hovertext=[f"<b>{s[0]}</b><br>SHAP value: {fmt_signed(s[1], scale)}" for s in segs],
        hovertemplate="%{hovertext}<extra></extra>",
    )


def force_figure(
    result: ShapResult, row: int, *, class_index: int | None = None, max_display: int = 10,
    row_label=None,
) -> go.Figure:
    """Push/pull bar of one row: what raises the output against what lowers it.

    Positive contributions are stacked left of the prediction (they push it
    up from the base value), negative ones right of it (they pull it down);
    both stacks meet at f(x), and the far ends sit at ``pred - sum(pos)``
    and ``pred + sum(|neg|)``, whose difference is ``pred - base``.

    Parameters
    ----------
    result : ShapResult
    row : int
    class_index : int, default=None
    max_display : int, default=10
        Labelled segments per side; smaller ones merge into one "other" segment.
    row_label : int or str, default=None
        What the title calls the row (see :func:`waterfall_figure`).

    Returns
    -------
    plotly.graph_objects.Figure
        Two Bar traces ("raise" and "lower"): ``x`` are |phi| widths,
        ``base`` their left ends; ``customdata`` the signed phi.
    """
    res, label, i, phi, miss, base, pred, values, names = _one_row(
        result, row, class_index, max_display, "force_figure", min_display=1)
    scale = scale_of(base, pred, np.abs(phi).sum())
    fig = go.Figure()
    for sign, colour, name in ((1, POSITIVE, "raise"), (-1, NEGATIVE, "lower")):
        fig.add_trace(_force_side(sign, colour, name, phi, miss, values, names, pred, max_display, scale))
    fig.update_layout(barmode="overlay", bargap=0.35, uniformtext=dict(minsize=10, mode="hide"))
    fig.update_yaxes(visible=False, range=[-0.8, 0.8])
    edges = [np.asarray(t.base, dtype=float) for t in fig.data if len(t.x)]
    edges += [np.asarray(t.base, dtype=float) + np.asarray(t.x, dtype=float) for t in fig.data if len(t.x)]
    lo, hi = _padded_range(*edges, [base, pred])
    for xv in (base, pred):
        fig.add_vline(x=xv, line=dict(color="#333333", width=1.5 if xv == pred else 1, dash=None if xv == pred else "dot"))
    _line_labels(fig, [(base, f"base value {fmt_number(base, scale)}"), (pred, f"<b>f(x) = {fmt_number(pred, scale)}</b>")],
                 lo, hi)
    masked = [names[j] for j in np.flatnonzero(miss)]
    note = f" · missing: {', '.join(masked[:8])}{' …' if len(masked) > 8 else ''}" if masked else ""
    title = f"{_row_title(res, i, row_label)}: forces on the {_output_title(res, label)}{note}"
    fig = _layout(fig, title, _output_title(res, label), height=270)
    _few_ticks(fig, lo, hi, scale)
    fig.update_layout(showlegend=True, legend=dict(orientation="h", y=-0.35), margin=dict(t=100))
    return fig


# ------------------------------------------------------------------- beeswarm
def _scaled_colour(col: pd.Series) -> np.ndarray:
    """Feature values -> [0, 1] by 5th-95th percentile (NaN for non-numbers)."""
    v = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
    if np.isnan(v).all():
        return v
    lo, hi = np.nanpercentile(v, [5, 95])
    if hi <= lo:
        lo, hi = np.nanmin(v), np.nanmax(v)
    if hi <= lo:
        return np.where(np.isnan(v), np.nan, 0.5)
    return np.clip((v - lo) / (hi - lo), 0.0, 1.0)


def _top_features(res: ShapResult, max_display: int) -> np.ndarray:
    imp = np.abs(res.values).mean(axis=0)
    return np.argsort(-imp, kind="stable")[:max_display]


def _beeswarm_points(res: ShapResult, top: np.ndarray, random_state: int):
    """Every present cell of the shown features: (x, y, colour, row, feature, hover text) arrays."""
    rng = np.random.default_rng(random_state)
    scale = scale_of(res.values)
    xs, ys, cs, rows, feats, texts = [], [], [], [], [], []
    n_feat = len(top)
    for rank, j in enumerate(top):
        keep = np.flatnonzero(~res.missing[:, j])
        col = res.data.iloc[:, j]
        scaled = _scaled_colour(col)
        xs.append(res.values[keep, j])
        # most important at the top; jitter within the band
        ys.append(n_feat - 1 - rank + rng.uniform(-0.3, 0.3, len(keep)))
        cs.append(scaled[keep])
        rows.append(keep)
        feats.append(np.full(len(keep), j))
        labels = _row_labels(res, keep)
        texts += [f"<b>{plot(res.feature_names[j])}</b> = {fmt_value(col.iloc[r])}<br>SHAP value: "
                  f"{fmt_signed(res.values[r, j], scale)}<br>row {lab}" for r, lab in zip(keep, labels)]
    x = np.concatenate(xs) if xs else np.array([])
    y = np.concatenate(ys) if ys else np.array([])
    c = np.concatenate(cs) if cs else np.array([])
    r = np.concatenate(rows) if rows else np.array([], dtype=int)
    f = np.concatenate(feats) if feats else np.array([], dtype=int)
    return x, y, c, r, f, np.asarray(texts, dtype=object)


def beeswarm_figure(
    result: ShapResult, *, class_index: int | None = None, max_display: int = 15, random_state: int = 0
) -> go.Figure:
    """Every row's attribution per feature, coloured by the feature's value.

    Features are ordered by mean |SHAP| (top ``max_display``), each a band of
    jittered points; masked cells (attribution 0 by construction) are left out.

    Parameters
    ----------
    result : ShapResult
    class_index : int, default=None
    max_display : int, default=15
    random_state : int, default=0
        Seed of the vertical jitter (display only).

    Returns
    -------
    plotly.graph_objects.Figure
        Scattergl traces: "values" (coloured by scaled value) and "no value"
        (non-numeric features, grey). ``customdata`` holds [row, feature index].
    """
    func = "beeswarm_figure"
    res, label = _one_output(result, class_index, func)
    _check_max_display(max_display, func, 1)
    top = _top_features(res, max_display)
    n_feat = len(top)
    x, y, c, r, f, texts = _beeswarm_points(res, top, random_state)
    has = ~np.isnan(c)
    fig = go.Figure()
    fig.add_trace(
        go.Scattergl(
            x=x[has], y=y[has], mode="markers", name="values",
            marker=dict(
                color=c[has], colorscale=VALUE_SCALE, cmin=0, cmax=1, size=6, opacity=0.85,
                colorbar=dict(title=dict(text="feature value", side="right"), tickvals=[0, 1], ticktext=["low", "high"],
                              thickness=12),
            ),
            customdata=np.column_stack([r[has], f[has]]),
            hovertext=texts[has], hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scattergl(
            x=x[~has], y=y[~has], mode="markers", name="no value",
            marker=dict(color=MISSING, size=6, opacity=0.85),
            customdata=np.column_stack([r[~has], f[~has]]),
            hovertext=texts[~has], hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    fig.add_vline(x=0, line=dict(color="#777777", width=1))
    fig.update_yaxes(
        tickvals=list(range(n_feat)), ticktext=[plot(n) for n in short_labels([res.feature_names[j] for j in top])][::-1],
        range=[-0.7, n_feat - 0.3], automargin=True, showgrid=False,
    )
    title = f"SHAP values per feature ({_output_title(res, label)}), {res.n_rows:,} rows"
    fig = _layout(fig, title, f"SHAP value (impact on {_output_title(res, label)})", height=120 + 34 * max(n_feat, 3))
    _few_ticks(fig, *_padded_range(x if len(x) else [0.0], pad=0.04), scale_of(x), max_ticks=4)
    return fig


# ------------------------------------------------------------------ mean |phi|
def _mean_abs_stacked(result: ShapResult, max_display: int) -> go.Figure:
    """One stacked bar colour per class, features ordered by the total."""
    imp = result.mean_abs()  # (p, k)
    order = np.argsort(-imp.sum(axis=1), kind="stable")[:max_display][::-1]
    fmt = d3_format(scale_of(imp.sum(axis=1)))
    fig = go.Figure()
    for k, name in enumerate(plot(n) for n in result.output_names):
        fig.add_trace(
            go.Bar(
                x=imp[order, k], y=[plot(result.feature_names[j]) for j in order], orientation="h",
                name=name, marker_color=PALETTE[k % len(PALETTE)],
                hovertemplate=f"<b>%{{y}}</b><br>class {name}: %{{x:{fmt}}}<extra></extra>",
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_xaxes(tickformat=fmt)
    short_category_axis(fig, "y", [result.feature_names[j] for j in order])
    fig = _layout(fig, f"Mean |SHAP value| per feature and class, {result.n_rows:,} rows",
                  f"mean |SHAP value| ({_output_title(result, '')})",
                  height=120 + 28 * max(len(order), 3))
    fig.update_layout(showlegend=True)
    fig.update_yaxes(automargin=True)
    return fig


def mean_abs_figure(
    result: ShapResult, *, class_index: int | None = None, max_display: int = 20
) -> go.Figure:
    """Global importance: mean |SHAP value| per feature, largest at the top.

    For a multi-output result with ``class_index=None`` the bars are stacked,
    one colour per class (ordered by the total); otherwise one bar per feature.

    Returns
    -------
    plotly.graph_objects.Figure
        Horizontal Bar traces whose ``x`` equal ``result.mean_abs()`` for the shown features.
    """
    func = "mean_abs_figure"
    _check_max_display(max_display, func, 1)
    if result.n_outputs > 1 and class_index is None:
        return _mean_abs_stacked(result, max_display)
    res, label = _one_output(result, class_index, func)
    imp = res.mean_abs()
    order = np.argsort(-imp, kind="stable")[:max_display][::-1]
    scale = scale_of(imp)
    names = [plot(res.feature_names[j]) for j in order]
    fig = go.Figure(
        go.Bar(
            x=imp[order], y=names, orientation="h", marker_color=NEGATIVE,
            hovertext=[f"<b>{n}</b><br>mean |SHAP|: {fmt_number(v, scale)}" for n, v in zip(names, imp[order])],
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    fig.update_yaxes(automargin=True)
    short_category_axis(fig, "y", [res.feature_names[j] for j in order])
    _value_column(fig, names, [fmt_number(v, scale) for v in imp[order]])
    fig = _layout(fig, f"Mean |SHAP value| per feature, {res.n_rows:,} rows",
                  f"mean |SHAP value| ({_output_title(res, label)})",
                  height=120 + 28 * max(len(order), 3))
    _few_ticks(fig, 0.0, (scale or 1.0) * 1.04, scale, max_ticks=4)
    return fig


# ------------------------------------------------------------------ dependence
def dependence_figure(
    result: ShapResult,
    feature: str | int,
    color_by: str | int | None = None,
    *,
    class_index: int | None = None,
) -> go.Figure:
    """SHAP value of one feature against its value, optionally coloured by another.

    Rows where the feature is masked are left out (no value, attribution 0).

    Parameters
    ----------
    result : ShapResult
    feature : str or int
    color_by : str or int, default=None
        Colour points by this feature's value (scaled low to high).
    class_index : int, default=None

    Returns
    -------
    plotly.graph_objects.Figure
        One Scattergl trace: ``x`` the feature values, ``y`` its SHAP values,
        ``customdata`` the row positions.
    """
    func = "dependence_figure"
    res, label = _one_output(result, class_index, func)
    j = res.feature_index(feature)
    keep = np.flatnonzero(~res.missing[:, j])
    xv = res.data.iloc[keep, j]
    yv = res.values[keep, j]
    name = plot(res.feature_names[j])
    marker = dict(color=NEGATIVE, size=7, opacity=0.8)
    scale = scale_of(yv)
    hover = [f"<b>{name}</b> = {fmt_value(a)}<br>SHAP value: {fmt_signed(b, scale)}<br>row {lab}"
             for a, b, lab in zip(xv, yv, _row_labels(res, keep))]
    if color_by is not None:
        c = res.feature_index(color_by)
        cname = plot(res.feature_names[c])
        scaled = _scaled_colour(res.data.iloc[:, c])[keep]
        marker = dict(
            color=np.where(np.isnan(scaled), 0.5, scaled), colorscale=VALUE_SCALE, cmin=0, cmax=1, size=7,
            opacity=0.85, colorbar=dict(title=dict(text=cname, side="right"), tickvals=[0, 1], ticktext=["low", "high"],
                              thickness=12),
        )
        hover = [h + f"<br>{cname} = {fmt_value(res.data.iloc[r, c])}" for h, r in zip(hover, keep)]
    fig = go.Figure(
        go.Scattergl(
            x=xv.to_numpy() if pd.api.types.is_numeric_dtype(xv) else plot_values(xv), y=yv, mode="markers",
            marker=marker, customdata=keep,
            hovertext=hover, hovertemplate="%{hovertext}<extra></extra>", name=name,
        )
    )
    fig.add_hline(y=0, line=dict(color="#777777", width=1))
    fig = _layout(fig, f"Dependence of {_output_title(res, label)} on {name}", name, height=420)
    fig.update_yaxes(title_text=f"SHAP value of {name}", tickformat=d3_format(scale))
    if pd.api.types.is_numeric_dtype(xv):
        fig.update_xaxes(tickformat=d3_format(scale_of(xv)))
    else:  # categories in the model's order (a categorical column's), else alphabetical; not as rows come
        col = res.data.iloc[:, j]
        shown = list(dict.fromkeys(xv.dropna().tolist()))
        if isinstance(col.dtype, pd.CategoricalDtype):
            rank = {str(c): i for i, c in enumerate(col.cat.categories)}
            shown.sort(key=lambda v: (rank.get(str(v), len(rank)), str(v)))
        else:
            shown.sort(key=str)
        fig.update_xaxes(type="category", categoryorder="array", categoryarray=plot_values(shown))
    return fig


# ------------------------------------------------------- a segment and the rest
def mean_abs_segment_figure(segment: ShapResult, rest: ShapResult, *, segment_name: str,
                            class_index: int | None = None, max_display: int = 20) -> go.Figure:
    """Mean |SHAP value| per feature over a segment's rows beside the rest's (grouped bars).

    Features are ordered by the mean of the two, largest at the top; the rows of each
    are in the title. For several outputs, ``class_index`` picks one (default: the
    positive class of a binary model, else the first).

    Returns
    -------
    plotly.graph_objects.Figure
        Two horizontal Bar traces, "Segment: <name>" then "Rest", whose ``x`` equal each
        result's ``mean_abs()`` for the shown features.
    """
    from .quality import REST_COLOUR, SEGMENT_COLOUR, segment_names

    func = "mean_abs_segment_figure"
    _check_max_display(max_display, func, 1)
    seg, label = _one_output(segment, class_index, func)
    rst, _ = _one_output(rest, class_index, func)
    imps = [seg.mean_abs(), rst.mean_abs()]
    order = np.argsort(-(imps[0] + imps[1]), kind="stable")[:max_display][::-1]
    scale = scale_of(*imps)
    names = [plot(seg.feature_names[j]) for j in order]
    fig = go.Figure()
    for imp, name, colour, n in zip(imps, segment_names(segment_name), (SEGMENT_COLOUR, REST_COLOUR),
                                    (seg.n_rows, rst.n_rows)):
        fig.add_trace(go.Bar(
            x=imp[order], y=names, orientation="h", marker_color=colour, name=name,
            hovertext=[f"<b>{f}</b><br>{name} ({n:,} rows): {fmt_number(v, scale)}" for f, v in zip(names, imp[order])],
            hovertemplate="%{hovertext}<extra></extra>"))
    fig.update_layout(barmode="group", legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0.0,
                                                   traceorder="normal"))
    fig.update_yaxes(automargin=True)
    short_category_axis(fig, "y", [seg.feature_names[j] for j in order])
    fig = _layout(fig, f"Mean |SHAP value|: segment ({seg.n_rows:,} rows) against the rest ({rst.n_rows:,} rows)",
                  f"mean |SHAP value| ({_output_title(seg, label)})", height=140 + 44 * max(len(order), 3))
    fig.update_layout(showlegend=True, margin=dict(t=90))
    _few_ticks(fig, 0.0, (scale or 1.0) * 1.04, scale, max_ticks=4)
    return fig
