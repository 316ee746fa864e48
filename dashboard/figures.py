"""Result object -> Plotly figure: pure functions, testable without a browser.

Each function takes a result from :mod:`explainers` and returns a
``plotly.graph_objects.Figure``; display-only transforms (picking a class,
centring, ICE subsampling, hiding empty cells) happen here, never in the
compute modules. Colours come from the Okabe-Ito colour-blind-safe palette
and the Viridis colour scale.

Sections: partial dependence / ICE / ALE (``pdp_figure``, ``pdp2d_figure``,
``ale_figure``, ``ale2d_figure``, ``pdp_to_csv``); SHAP (``waterfall_figure``, ``force_figure``,
``beeswarm_figure``, ``mean_abs_figure``, ``dependence_figure``); variable
importance (``importance_bars_figure``, ``agreement_heatmap_figure``).
"""
from __future__ import annotations

import io as _io
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explainers.errors import InvalidParameterError, param_error
from explainers.importance import ImportanceComparison, ImportanceResult, compare_importances
from explainers.shap import ShapResult

# ============================================================================
# Partial dependence, ICE and ALE
# ============================================================================

# ============================================================================
# One look for every figure
# ============================================================================

#: Okabe-Ito palette (colour-blind safe): one colour per class, method or category
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=14, color="#222222")
PDP_COLOURS = PALETTE
PDP_LINE = "#000000"  # the partial dependence line: black, bold, drawn on top
PDP_ICE = "#0072B2"  # ICE lines: thin, translucent blue
PDP_EMPTY = "#9E9E9E"  # shade over grid cells with no data behind them
_PDP_SCALE = "Viridis"


def _pdp_fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return "NA" if np.isnan(v) else f"{v:.4g}"
    return str(v)


def _pdp_pick_output(result, class_index, func: str):
    """Return (output position or None for all, label) for a result's outputs.

    One output: None. Several and no class_index: the positive class of a
    binary model, or every class (k > 2) for 1-D line plots to draw together.
    """
    names = list(result.output_names)
    k = len(names)
    if class_index is not None:
        if k == 1:
            if class_index not in (0, None):
                raise param_error("class_index", func, "None (the result has one output)", class_index)
            return None, names[0]
        if not isinstance(class_index, (int, np.integer)) or not 0 <= class_index < k:
            raise param_error("class_index", func, f"None or an int in [0, {k - 1}]", class_index)
        return int(class_index), names[int(class_index)]
    if k == 1:
        return None, names[0]
    if k == 2:
        return 1, names[1]
    return "all", "all classes"


def _pdp_need_features(result, n: int, func: str, instead: str) -> None:
    """A clear error when a result has the wrong number of features for this figure."""
    if len(result.feature_names) != n:
        raise InvalidParameterError(
            f"{func} draws {('one', 'two')[n - 1]} feature{'s' * (n > 1)}; this result has "
            f"{len(result.feature_names)}. Use {instead} for {('two', 'one')[n - 1]}."
        )


def _pdp_take(arr, pos):
    if arr is None or pos is None:
        return arr
    return arr[..., pos]


def _pdp_layout(fig: go.Figure, title: str, xtitle: str, ytitle: str, height: int = 480) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0.01, xanchor="left"),
        font=FONT,
        template="plotly_white",
        height=height,
        # the legend sits in its own band under the x-axis title, so it never runs
        # into the title however narrow the column (and the margins stay fixed)
        margin=dict(l=70, r=30 if "yaxis3" not in fig.layout else 70, t=50,
                    b=110 if any(t.type not in ("heatmap", "contour") and t.showlegend is not False for t in fig.data) else 60),
        hoverlabel=dict(font_size=13),
        legend=dict(orientation="h", yref="container", yanchor="bottom", y=0.0, xanchor="left", x=0.0),
    )
    fig.update_xaxes(title_text=xtitle, showline=True, linecolor="#444444")
    # only the main y axis: a second one (ALE's rows per bin) keeps its own title
    fig.update_layout(yaxis=dict(title_text=ytitle, showline=True, linecolor="#444444", zeroline=False))
    return fig


def _pdp_ice_rows(n: int, max_lines: int) -> np.ndarray:
    """Evenly spread rows, so the same result always shows the same lines."""
    if n <= max_lines:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_lines).round().astype(int))


def _pdp_colour_values(result, color_by, shown: np.ndarray):
    """Values of the colour-by feature for the shown ICE rows, and its name."""
    values, name = color_by
    values = np.asarray(values.to_numpy() if isinstance(values, pd.Series) else values)
    rows = np.asarray(result.row_indices)
    if len(values) == len(rows):
        aligned = values
    elif len(values) > rows.max(initial=-1):
        aligned = values[rows]  # values for every row of the original data
    else:
        raise InvalidParameterError(
            f"color_by has {len(values)} values, but the result has {len(rows)} ICE rows "
            f"drawn from data of at least {rows.max() + 1} rows. Pass one value per row of "
            "the data (or per ICE row)."
        )
    return aligned[shown], str(name)


def _pdp_viridis(t: np.ndarray) -> list[str]:
    from plotly.colors import sample_colorscale

    return sample_colorscale(_PDP_SCALE, np.clip(np.nan_to_num(t, nan=0.0), 0, 1).tolist())


def _pdp_rug(fig: go.Figure, result, pos: int = 0) -> None:
    dec = np.asarray(result.deciles[pos])
    if dec.size == 0:
        return
    fig.add_trace(
        go.Scatter(
            x=dec,
            y=np.zeros(dec.size),
            yaxis="y2",
            mode="markers",
            marker=dict(symbol="line-ns-open", size=14, color="#444444", line=dict(width=2)),
            name="deciles of the data",
            customdata=np.arange(10, 100, 10),
            hovertemplate=f"{result.feature_names[pos]}: %{{x:.4g}}<br>decile %{{customdata}}%<extra></extra>",
        )
    )
    fig.update_layout(yaxis2=dict(overlaying="y", range=[0, 1], visible=False, fixedrange=True))


def pdp_figure(
    result,
    *,
    centered: bool = False,
    show_ice: bool = True,
    max_ice_lines: int = 100,
    color_by: tuple | None = None,
    show_rug: bool = True,
    class_index: int | None = None,
) -> go.Figure:
    """Partial dependence of one feature, with ICE curves.

    Parameters
    ----------
    result : PartialDependenceResult
        A one-feature result of :func:`explainers.pdp.partial_dependence`.
    centered : bool, default=False
        Shift every ICE curve and the PDP to 0 at the first grid value (a
        display transform; a result computed with ``centered=True`` already is).
    show_ice : bool, default=True
        Draw ICE curves (numeric feature) or points (categorical feature) when
        the result has them.
    max_ice_lines : int, default=100
        At most this many ICE curves, spread evenly over the rows.
    color_by : tuple (values, name), default=None
        Colour the ICE curves by another feature: one value per data row (or
        per ICE row). Numbers use the Viridis scale, other values one colour per category.
    show_rug : bool, default=True
        Mark the deciles of the feature along the x axis.
    class_index : int, default=None
        Output to show; by default the positive class of a binary model, or
        every class (PD lines only) for a multiclass model.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces: ICE (one legend group "ice", toggled together from the
        legend), the PD line (or bars for a categorical feature) and the rug.
    """
    func = "pdp_figure"
    if len(result.feature_names) != 1:
        raise InvalidParameterError(
            f"pdp_figure draws one feature; this result has {len(result.feature_names)}. "
            "Use pdp2d_figure for two features."
        )
    if not isinstance(max_ice_lines, (int, np.integer)) or max_ice_lines < 0:
        raise param_error("max_ice_lines", func, "an int >= 0", max_ice_lines)
    pos, label = _pdp_pick_output(result, class_index, func)
    name = result.feature_names[0]
    grid = result.grid[0]
    categorical = result.feature_kinds[0] == "categorical"
    x = [str(v) for v in grid] if categorical else np.asarray(grid, dtype=float)
    counts = np.asarray(result.counts)
    fig = go.Figure()
    shift = centered and not result.centered
    ytitle = ("Centred " if (centered or result.centered) else "") + f"partial dependence: {label}"

    if pos == "all":  # multiclass overview: one PD line per class, no ICE
        for k, cname in enumerate(result.output_names):
            avg = result.average[..., k]
            avg = avg - avg[0] if shift else avg
            colour = PDP_COLOURS[k % len(PDP_COLOURS)]
            if categorical:
                fig.add_trace(go.Bar(x=x, y=avg, name=str(cname), marker_color=colour,
                                     customdata=counts,
                                     hovertemplate=f"{name}: %{{x}}<br>PD ({cname}): %{{y:.4g}}<br>rows: %{{customdata}}<extra></extra>"))
            else:
                fig.add_trace(go.Scatter(x=x, y=avg, mode="lines", name=str(cname),
                                         line=dict(color=colour, width=3), customdata=counts,
                                         hovertemplate=f"{name}: %{{x:.4g}}<br>PD ({cname}): %{{y:.4g}}<br>rows near: %{{customdata}}<extra></extra>"))
        if show_rug and not categorical:
            _pdp_rug(fig, result)
        return _pdp_layout(fig, f"Partial dependence on {name}", name, ytitle)

    avg = np.asarray(_pdp_take(result.average, pos), dtype=float)
    ice = _pdp_take(result.individual, pos)
    if shift:
        avg = avg - avg[0]
        ice = None if ice is None else ice - ice[:, :1]

    if show_ice and ice is not None and max_ice_lines > 0:
        shown = _pdp_ice_rows(ice.shape[0], int(max_ice_lines))
        lines = ice[shown]
        row_ids = np.asarray(result.row_indices)[shown]
        groups = [(None, np.arange(len(shown)), PDP_ICE)]  # (legend name, positions, colour)
        per_line_colours = None
        cname = None
        if color_by is not None:
            cvals, cname = _pdp_colour_values(result, color_by, shown)
            if pd.api.types.is_numeric_dtype(np.asarray(cvals).dtype):
                cv = np.asarray(cvals, dtype=float)
                lo, hi = np.nanmin(cv), np.nanmax(cv)
                per_line_colours = _pdp_viridis((cv - lo) / (hi - lo) if hi > lo else cv * 0)
                groups = [(None, np.array([i]), per_line_colours[i]) for i in range(len(shown))]
            else:
                cats = list(pd.unique(pd.Series(cvals).astype(str)))
                lab = pd.Series(cvals).astype(str).to_numpy()
                groups = [(c, np.flatnonzero(lab == c), PDP_COLOURS[i % len(PDP_COLOURS)]) for i, c in enumerate(cats)]
        first = True
        for gname, idx, colour in groups:
            # one trace per group: curves joined with gaps (None) so many lines stay light
            if categorical:
                xs = np.tile(np.asarray(x, dtype=object), len(idx))
                ys = lines[idx].reshape(-1)
                cd = np.repeat(row_ids[idx], len(x))
                mode = "markers"
            else:
                xs = np.concatenate([np.append(x, np.nan) for _ in idx]) if len(idx) else np.array([])
                ys = np.concatenate([np.append(lines[i], np.nan) for i in idx]) if len(idx) else np.array([])
                cd = np.repeat(row_ids[idx], len(x) + 1)
                mode = "lines"
            legend_name = f"ICE ({len(shown)} of {ice.shape[0]} rows)" if gname is None else f"ICE: {cname} = {gname}"
            hover_extra = f"<br>{cname}: {gname}" if gname is not None else ""
            if per_line_colours is not None:
                hover_extra = f"<br>{cname}: {_pdp_fmt(np.asarray(cvals, dtype=float)[idx[0]])}"
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode=mode,
                    name=legend_name,
                    legendgroup="ice",
                    showlegend=first or gname is not None,
                    opacity=0.35 if mode == "lines" else 0.45,
                    line=dict(color=colour, width=1),
                    marker=dict(color=colour, size=5),
                    customdata=cd,
                    hovertemplate=(f"{name}: %{{x" + ("" if categorical else ":.4g") + "}<br>prediction: %{y:.4g}"
                                   f"<br>row %{{customdata}}{hover_extra}<extra>ICE</extra>"),
                )
            )
            first = False
        if per_line_colours is not None:
            cv = np.asarray(cvals, dtype=float)
            # an invisible marker trace carries the colour bar of the ICE colouring
            fig.add_trace(go.Scatter(
                x=[None], y=[None], mode="markers", showlegend=False, hoverinfo="skip",
                marker=dict(colorscale=_PDP_SCALE, cmin=np.nanmin(cv), cmax=np.nanmax(cv), color=[np.nanmin(cv)],
                            showscale=True, colorbar=dict(title=dict(text=cname), thickness=14)),
            ))

    if categorical:
        fig.add_trace(go.Bar(
            x=x, y=avg, name="partial dependence", marker=dict(color=PDP_COLOURS[4], line=dict(color=PDP_LINE, width=1.5)),
            opacity=0.8, customdata=counts,
            hovertemplate=f"{name}: %{{x}}<br>partial dependence: %{{y:.4g}}<br>rows: %{{customdata}}<extra></extra>",
        ))
        fig.update_layout(barmode="overlay")
    else:
        fig.add_trace(go.Scatter(
            x=x, y=avg, mode="lines+markers", name="partial dependence",
            line=dict(color=PDP_LINE, width=4), marker=dict(size=5, color=PDP_LINE), customdata=counts,
            hovertemplate=f"{name}: %{{x:.4g}}<br>partial dependence: %{{y:.4g}}<br>rows near: %{{customdata}}<extra></extra>",
        ))
        if show_rug:
            _pdp_rug(fig, result)
    return _pdp_layout(fig, f"Partial dependence on {name}", name, ytitle)


def pdp2d_figure(
    result,
    *,
    style: str = "heatmap",
    empty_cells: str = "shade",
    points=None,
    class_index: int | None = None,
) -> go.Figure:
    """Two-feature partial dependence as a heatmap or contour plot.

    Parameters
    ----------
    result : PartialDependenceResult
        A two-feature result; the first feature is on x, the second on y.
    style : {"heatmap", "contour"}, default="heatmap"
    empty_cells : {"shade", "hide", "show"}, default="shade"
        Cells with no data rows behind them (``result.counts == 0``): grey them
        over, leave them blank (NaN in z), or draw them like the others.
    points : DataFrame or array of shape (n, 2), default=None
        Data to overlay as a scatter: a DataFrame with both feature columns, or
        two columns (x, y).
    class_index : int, default=None
        Output to show; by default the positive class of a binary model or
        the first class of a multiclass one.

    Returns
    -------
    plotly.graph_objects.Figure
        ``data[0]`` is the heatmap/contour with ``z[j][i]`` the PD at
        ``(grid[0][i], grid[1][j])``; then the shade layer and the points.
    """
    func = "pdp2d_figure"
    _pdp_need_features(result, 2, func, "pdp_figure")
    if style not in ("heatmap", "contour"):
        raise param_error("style", func, "one of ['heatmap', 'contour']", style)
    if empty_cells not in ("shade", "hide", "show"):
        raise param_error("empty_cells", func, "one of ['shade', 'hide', 'show']", empty_cells)
    pos, label = _pdp_pick_output(result, class_index, func)
    if pos == "all":
        pos, label = 0, result.output_names[0]
    fx, fy = result.feature_names
    gx, gy = result.grid
    cat_x, cat_y = (k == "categorical" for k in result.feature_kinds)
    x = [str(v) for v in gx] if cat_x else np.asarray(gx, dtype=float)
    y = [str(v) for v in gy] if cat_y else np.asarray(gy, dtype=float)
    z = np.asarray(_pdp_take(result.average, pos), dtype=float).T.copy()  # rows = y
    counts = np.asarray(result.counts).T
    empty = counts == 0
    if empty_cells == "hide":
        z[empty] = np.nan
    hover = (f"{fx}: %{{x}}<br>{fy}: %{{y}}<br>partial dependence: %{{z:.4g}}"
             "<br>rows in cell: %{customdata}<extra></extra>")
    title = ("Centred p" if result.centered else "P") + f"artial dependence: {label}"
    common = dict(x=x, y=y, z=z, customdata=counts, hovertemplate=hover, colorscale=_PDP_SCALE,
                  colorbar=dict(title=dict(text=label), thickness=14), name="partial dependence")
    if style == "heatmap":
        fig = go.Figure(go.Heatmap(**common, hoverongaps=False))
    else:
        fig = go.Figure(go.Contour(**common, connectgaps=False, contours=dict(showlabels=True)))
    if empty_cells == "shade" and empty.any():
        fig.add_trace(go.Heatmap(
            x=x, y=y, z=np.where(empty, 1.0, np.nan), colorscale=[[0, PDP_EMPTY], [1, PDP_EMPTY]],
            showscale=False, opacity=0.75, hoverongaps=False, name="no data",
            hovertemplate=f"{fx}: %{{x}}<br>{fy}: %{{y}}<br>no data rows in this cell<extra></extra>",
        ))
    if points is not None:
        if isinstance(points, pd.DataFrame):
            px, py = points[fx].to_numpy(), points[fy].to_numpy()
        else:
            arr = np.asarray(points)
            px, py = arr[:, 0], arr[:, 1]
        fig.add_trace(go.Scatter(
            x=px, y=py, mode="markers", name="data",
            marker=dict(size=4, color="rgba(0,0,0,0.35)", line=dict(width=0)),
            hovertemplate=f"{fx}: %{{x}}<br>{fy}: %{{y}}<extra>data</extra>",
        ))
    fig = _pdp_layout(fig, f"Partial dependence on {fx} and {fy}", fx, fy, height=540)
    fig.update_yaxes(zeroline=False, showgrid=False)
    fig.update_xaxes(showgrid=False)
    if title:
        fig.update_layout(title_text=f"{title} by {fx} and {fy}")
    return fig


def ale_figure(result, *, class_index: int | None = None, show_counts: bool = True) -> go.Figure:
    """Accumulated local effects of one feature.

    Parameters
    ----------
    result : AleResult
    class_index : int, default=None
        Output to show; by default the positive class of a binary model, or
        every class for a multiclass model.
    show_counts : bool, default=True
        Bars of the rows per bin along the bottom (right-hand axis).

    Returns
    -------
    plotly.graph_objects.Figure
        The ALE line(s), then the bin-count bars, then the deciles rug.
    """
    func = "ale_figure"
    _pdp_need_features(result, 1, func, "ale2d_figure")
    pos, label = _pdp_pick_output(result, class_index, func)
    name = result.feature_names[0]
    edges = np.asarray(result.grid[0], dtype=float)
    fig = go.Figure()
    series = (
        [(k, str(c)) for k, c in enumerate(result.output_names)] if pos == "all" else [(pos, label)]
    )
    for i, (k, cname) in enumerate(series):
        eff = np.asarray(_pdp_take(result.effect, k), dtype=float)
        colour = PDP_LINE if len(series) == 1 else PDP_COLOURS[i % len(PDP_COLOURS)]
        fig.add_trace(go.Scatter(
            x=edges, y=eff, mode="lines+markers", name=f"ALE ({cname})" if len(series) > 1 else "ALE",
            line=dict(color=colour, width=3), marker=dict(size=5, color=colour),
            hovertemplate=f"{name}: %{{x:.4g}}<br>ALE ({cname}): %{{y:.4g}}<extra></extra>",
        ))
    if show_counts:
        centres = (edges[1:] + edges[:-1]) / 2
        fig.add_trace(go.Bar(
            x=centres, y=result.counts, width=np.diff(edges), yaxis="y3", name="rows per bin",
            marker=dict(color=PDP_EMPTY), opacity=0.35,
            customdata=np.column_stack([edges[:-1], edges[1:]]),
            hovertemplate=f"{name} in (%{{customdata[0]:.4g}}, %{{customdata[1]:.4g}}]<br>rows: %{{y}}<extra></extra>",
        ))
        fig.update_layout(yaxis3=dict(overlaying="y", side="right", range=[0, 4 * max(result.counts.max(), 1)],
                                      showgrid=False, title=dict(text="rows per bin"), rangemode="tozero",
                                      tickmode="auto", nticks=5, tickformat=",d"))
    _pdp_rug(fig, result)
    return _pdp_layout(fig, f"Accumulated local effects of {name}", name, f"ALE (centred): {label}")


def ale2d_figure(result, *, class_index: int | None = None, shade_empty: bool = True) -> go.Figure:
    """Second-order ALE of two features: their interaction alone, as a heatmap.

    Parameters
    ----------
    result : AleResult
        A two-feature (second-order) result; the first feature is on x.
    class_index : int, default=None
        Output to show; by default the positive class of a binary model or
        the first class of a multiclass one.
    shade_empty : bool, default=True
        Grey over the cells with no data rows (their value is borrowed from
        the nearest cell with rows).

    Returns
    -------
    plotly.graph_objects.Figure
        ``data[0]`` is the heatmap over the bins (x and y are the bin edges):
        ``z[j][i]`` is the mean of the effect at the four corners of cell
        (i, j); then the shade layer.
    """
    func = "ale2d_figure"
    _pdp_need_features(result, 2, func, "ale_figure")
    pos, label = _pdp_pick_output(result, class_index, func)
    if pos == "all":
        pos, label = 0, result.output_names[0]
    fx, fy = result.feature_names
    ex, ey = (np.asarray(g, dtype=float) for g in result.grid)
    f = np.asarray(_pdp_take(result.effect, pos), dtype=float)
    cells = ((f[:-1, :-1] + f[:-1, 1:] + f[1:, :-1] + f[1:, 1:]) / 4).T  # rows = y
    counts = np.asarray(result.counts).T
    bounds = np.dstack([np.broadcast_to(ex[:-1], counts.shape), np.broadcast_to(ex[1:], counts.shape),
                        np.broadcast_to(ey[:-1, None], counts.shape), np.broadcast_to(ey[1:, None], counts.shape),
                        counts])
    hover = (f"{fx} in (%{{customdata[0]:.4g}}, %{{customdata[1]:.4g}}]<br>"
             f"{fy} in (%{{customdata[2]:.4g}}, %{{customdata[3]:.4g}}]<br>"
             "interaction effect: %{z:.4g}<br>rows in cell: %{customdata[4]}<extra></extra>")
    span = float(np.nanmax(np.abs(cells))) or 1.0
    fig = go.Figure(go.Heatmap(
        x=ex, y=ey, z=cells, customdata=bounds, hovertemplate=hover, colorscale="RdBu_r",
        zmid=0.0, zmin=-span, zmax=span, colorbar=dict(title=dict(text=label), thickness=14),
        name="interaction (2nd-order ALE)",
    ))
    empty = counts == 0
    if shade_empty and empty.any():
        fig.add_trace(go.Heatmap(
            x=ex, y=ey, z=np.where(empty, 1.0, np.nan), colorscale=[[0, PDP_EMPTY], [1, PDP_EMPTY]],
            showscale=False, opacity=0.75, hoverongaps=False, name="no data",
            hovertemplate=f"{fx}: %{{x}}<br>{fy}: %{{y}}<br>no data rows in this cell "
                          "(value taken from the nearest cell with rows)<extra></extra>",
        ))
    fig = _pdp_layout(fig, f"Interaction of {fx} and {fy} (second-order ALE)", fx, fy, height=540)
    fig.update_yaxes(zeroline=False, showgrid=False)
    fig.update_xaxes(showgrid=False)
    return fig


def pdp_to_csv(result, *, include_ice: bool = False) -> str:
    """Partial dependence as CSV text: one row per grid point (and output).

    Columns: the feature(s), ``output`` (when there are several), ``partial_dependence``,
    ``rows`` (data rows in the grid cell) and, with ``include_ice``, one
    ``ice_row_<i>`` column per ICE row (``i`` = its position in the data).
    """
    names = list(result.feature_names)
    mesh = np.meshgrid(*[np.arange(len(g)) for g in result.grid], indexing="ij")
    cells = [m.reshape(-1) for m in mesh]
    base = {n: np.asarray(g, dtype=object)[c] for n, g, c in zip(names, result.grid, cells)}
    counts = np.asarray(result.counts).reshape(-1)
    k = len(result.output_names)
    frames = []
    for j in range(k):
        part = dict(base)
        if k > 1:
            part["output"] = result.output_names[j]
        avg = result.average if k == 1 else result.average[..., j]
        part["partial_dependence"] = np.asarray(avg).reshape(-1)
        part["rows"] = counts
        if include_ice and result.individual is not None:
            ice = result.individual if k == 1 else result.individual[..., j]
            flat = np.asarray(ice).reshape(ice.shape[0], -1)
            for r, row in zip(result.row_indices, flat):
                part[f"ice_row_{int(r)}"] = row
        frames.append(pd.DataFrame(part))
    buf = _io.StringIO()
    pd.concat(frames, ignore_index=True).to_csv(buf, index=False)
    return buf.getvalue()


# ============================================================================
# SHAP
# ============================================================================

POSITIVE = "#D55E00"  # vermillion: pushes the output up
NEGATIVE = "#0072B2"  # blue: pushes it down
MISSING = "#9E9E9E"  # grey: masked feature (attribution 0)
#: low -> high feature value, colour-blind safe (blue, light grey, vermillion)
VALUE_SCALE = [[0.0, NEGATIVE], [0.5, "#DDDDDD"], [1.0, POSITIVE]]


# -------------------------------------------------------------------- helpers
def _shap_one_output(result: ShapResult, class_index: int | None, func: str) -> tuple[ShapResult, str]:
    """The result for one output, and a label for titles.

    With several outputs and no class_index, the positive class of a binary
    model (index 1) or the first class otherwise is shown.
    """
    if result.n_outputs == 1:
        result._check_class(class_index, func)
        return result, result.output_names[0] if result.output_names else ""
    k = result._check_class(class_index, func)
    if k is None:
        k = 1 if result.n_outputs == 2 else 0
    return result.select(k), result.output_names[k]


def _shap_row(result: ShapResult, row: int, class_index: int | None, max_display, func: str, *,
              min_display: int):
    """One row of one output, checked: (res, label, i, phi, missing, base, pred, values, names)."""
    res, label = _shap_one_output(result, class_index, func)
    i = res._check_row(row, func)
    if isinstance(max_display, bool) or not isinstance(max_display, (int, np.integer)) or max_display < min_display:
        raise param_error("max_display", func, f"an int >= {min_display}", max_display)
    return (res, label, i, res.values[i], res.missing[i], float(res.base_values[i]),
            float(res.predictions[i]), res.data.iloc[i], res.feature_names)


def _shap_fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        if np.isnan(v):
            return "NA"
        return f"{v:.4g}"
    return str(v)


def _shap_layout(fig: go.Figure, title: str, xtitle: str, height: int) -> go.Figure:
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


def _shap_output_title(res: ShapResult, label: str) -> str:
    kind = {"raw": "prediction", "proba": "probability", "log_odds": "log-odds", "margin": "margin"}
    what = kind.get(res.output, res.output)
    return f"{what} of {label}" if res.output in ("proba", "log_odds", "margin") and label else what


# ------------------------------------------------------------------ waterfall
def waterfall_figure(
    result: ShapResult, row: int, *, class_index: int | None = None, max_display: int = 10
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

    Returns
    -------
    plotly.graph_objects.Figure
        One horizontal Bar trace: ``x`` are the attributions, ``base`` the
        running total before each bar (bottom to top), so the top bar ends at
        the prediction. ``customdata`` holds the feature index (-1 for the
        "other" bar, -2 for the merged missing bar).
    """
    res, label, i, phi, miss, base, pred, values, names = _shap_row(
        result, row, class_index, max_display, "waterfall_figure", min_display=2)

    present = np.flatnonzero(~miss)
    order = present[np.argsort(-np.abs(phi[present]), kind="stable")]
    if len(order) > max_display:
        shown, rest = order[: max_display - 1], order[max_display - 1 :]
    else:
        shown, rest = order, order[:0]
    # bottom-to-top: missing (0), "other", then increasing |phi| up to the largest
    items: list[tuple[str, float, str, int]] = []  # label, phi, colour, feature index
    masked = np.flatnonzero(miss)
    if len(masked) > max_display:
        items.append((f"{len(masked)} missing features", 0.0, MISSING, -2))
    else:
        for j in masked[::-1]:
            items.append((f"{names[j]} = NA (missing)", 0.0, MISSING, int(j)))
    if len(rest):
        s = float(phi[rest].sum())
        items.append((f"{len(rest)} other features", s, POSITIVE if s >= 0 else NEGATIVE, -1))
    for j in shown[::-1]:
        v = float(phi[j])
        items.append((f"{names[j]} = {_shap_fmt(values.iloc[j])}", v, POSITIVE if v >= 0 else NEGATIVE, int(j)))

    x = np.array([it[1] for it in items])
    # running total: each bar starts where the previous one ended
    bases = base + np.concatenate([[0.0], np.cumsum(x)[:-1]]) if len(x) else np.array([])
    y = np.arange(len(items))
    fig = go.Figure(
        go.Bar(
            x=x,
            y=y,
            base=bases,
            orientation="h",
            marker=dict(color=[it[2] for it in items], line=dict(width=0)),
            text=[("0 (missing)" if it[2] == MISSING else f"{it[1]:+.3g}") for it in items],
            textposition="outside",
            cliponaxis=False,
            customdata=[it[3] for it in items],
            hovertext=[
                f"<b>{it[0]}</b><br>SHAP value: {it[1]:+.4g}<br>running total: {b:.4g} → {b + it[1]:.4g}"
                for it, b in zip(items, bases)
            ],
            hovertemplate="%{hovertext}<extra></extra>",
            name="contribution",
        )
    )
    fig.update_yaxes(tickvals=y, ticktext=[it[0] for it in items], automargin=True)
    for xv, txt, pos in ((base, f"E[f(X)] = {base:.4g}", "bottom"), (pred, f"f(x) = {pred:.4g}", "top")):
        fig.add_vline(x=xv, line=dict(color="#555555", width=1, dash="dot"))
        fig.add_annotation(
            x=xv, y=1.0 if pos == "top" else 0.0, yref="paper", yanchor="bottom" if pos == "top" else "top",
            text=txt, showarrow=False, font=dict(size=13),
        )
    title = f"Row {i}: {_shap_output_title(res, label)} from base {base:.4g} to {pred:.4g}"
    return _shap_layout(fig, title, _shap_output_title(res, label), height=120 + 32 * max(len(items), 3))


# ---------------------------------------------------------------------- force
def force_figure(
    result: ShapResult, row: int, *, class_index: int | None = None, max_display: int = 10
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

    Returns
    -------
    plotly.graph_objects.Figure
        Two Bar traces ("raise" and "lower"): ``x`` are |phi| widths,
        ``base`` their left ends; ``customdata`` the signed phi.
    """
    res, label, i, phi, miss, base, pred, values, names = _shap_row(
        result, row, class_index, max_display, "force_figure", min_display=1)

    fig = go.Figure()
    for sign, colour, name in ((1, POSITIVE, "raise"), (-1, NEGATIVE, "lower")):
        idx = np.flatnonzero(~miss & (sign * phi > 0))
        idx = idx[np.argsort(-np.abs(phi[idx]), kind="stable")]
        segs = [(f"{names[j]} = {_shap_fmt(values.iloc[j])}", float(phi[j])) for j in idx[:max_display]]
        if len(idx) > max_display:
            segs.append((f"{len(idx) - max_display} other features", float(phi[idx[max_display:]].sum())))
        widths = np.abs([s[1] for s in segs])
        if sign > 0:
            # largest next to f(x): stack leftwards from the prediction
            right = pred - np.concatenate([[0.0], np.cumsum(widths)[:-1]])
            lefts = right - widths
        else:
            lefts = pred + np.concatenate([[0.0], np.cumsum(widths)[:-1]])
        fig.add_trace(
            go.Bar(
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
                hovertext=[f"<b>{s[0]}</b><br>SHAP value: {s[1]:+.4g}" for s in segs],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    fig.update_layout(barmode="overlay", bargap=0.35)
    fig.update_yaxes(visible=False, range=[-0.8, 0.8])
    for xv, txt in ((base, f"base value {base:.4g}"), (pred, f"<b>f(x) = {pred:.4g}</b>")):
        fig.add_vline(x=xv, line=dict(color="#333333", width=1.5 if xv == pred else 1, dash=None if xv == pred else "dot"))
        fig.add_annotation(x=xv, y=1.0, yref="paper", yanchor="bottom", text=txt, showarrow=False)
    masked = [names[j] for j in np.flatnonzero(miss)]
    note = f" · missing: {', '.join(masked[:8])}{' …' if len(masked) > 8 else ''}" if masked else ""
    title = f"Row {i}: higher ← vermillion raises, blue lowers → {_shap_output_title(res, label)}{note}"
    fig = _shap_layout(fig, title, _shap_output_title(res, label), height=230)
    fig.update_layout(showlegend=True, legend=dict(orientation="h", y=-0.35))
    return fig


# ------------------------------------------------------------------- beeswarm
def _shap_scaled_colour(col: pd.Series) -> np.ndarray:
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


def _shap_top_features(res: ShapResult, max_display: int) -> np.ndarray:
    imp = np.abs(res.values).mean(axis=0)
    return np.argsort(-imp, kind="stable")[:max_display]


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
    res, label = _shap_one_output(result, class_index, func)
    if isinstance(max_display, bool) or not isinstance(max_display, (int, np.integer)) or max_display < 1:
        raise param_error("max_display", func, "an int >= 1", max_display)
    top = _shap_top_features(res, max_display)
    rng = np.random.default_rng(random_state)
    xs, ys, cs, rows, feats, texts = [], [], [], [], [], []
    n_feat = len(top)
    for rank, j in enumerate(top):
        keep = np.flatnonzero(~res.missing[:, j])
        col = res.data.iloc[:, j]
        scaled = _shap_scaled_colour(col)
        xs.append(res.values[keep, j])
        # most important at the top; jitter within the band
        ys.append(n_feat - 1 - rank + rng.uniform(-0.3, 0.3, len(keep)))
        cs.append(scaled[keep])
        rows.append(keep)
        feats.append(np.full(len(keep), j))
        texts += [f"<b>{res.feature_names[j]}</b> = {_shap_fmt(col.iloc[r])}<br>SHAP value: {res.values[r, j]:+.4g}<br>row {r}" for r in keep]
    x = np.concatenate(xs) if xs else np.array([])
    y = np.concatenate(ys) if ys else np.array([])
    c = np.concatenate(cs) if cs else np.array([])
    r = np.concatenate(rows) if rows else np.array([], dtype=int)
    f = np.concatenate(feats) if feats else np.array([], dtype=int)
    texts = np.asarray(texts, dtype=object)
    has = ~np.isnan(c)
    fig = go.Figure()
    fig.add_trace(
        go.Scattergl(
            x=x[has], y=y[has], mode="markers", name="values",
            marker=dict(
                color=c[has], colorscale=VALUE_SCALE, cmin=0, cmax=1, size=6, opacity=0.85,
                colorbar=dict(title="feature value", tickvals=[0, 1], ticktext=["low", "high"], thickness=12),
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
        tickvals=list(range(n_feat)), ticktext=[res.feature_names[j] for j in top][::-1],
        range=[-0.7, n_feat - 0.3], automargin=True, showgrid=False,
    )
    title = f"SHAP values per feature ({_shap_output_title(res, label)}), {res.n_rows} rows"
    return _shap_layout(fig, title, f"SHAP value (impact on {_shap_output_title(res, label)})", height=120 + 34 * max(n_feat, 3))


# ------------------------------------------------------------------ mean |phi|
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
    if isinstance(max_display, bool) or not isinstance(max_display, (int, np.integer)) or max_display < 1:
        raise param_error("max_display", func, "an int >= 1", max_display)
    if result.n_outputs > 1 and class_index is None:
        imp = result.mean_abs()  # (p, k)
        order = np.argsort(-imp.sum(axis=1), kind="stable")[:max_display][::-1]
        fig = go.Figure()
        for k, name in enumerate(result.output_names):
            fig.add_trace(
                go.Bar(
                    x=imp[order, k], y=[result.feature_names[j] for j in order], orientation="h",
                    name=str(name), marker_color=PALETTE[k % len(PALETTE)],
                    hovertemplate=f"<b>%{{y}}</b><br>class {name}: %{{x:.4g}}<extra></extra>",
                )
            )
        fig.update_layout(barmode="stack")
        fig = _shap_layout(fig, f"Mean |SHAP value| per feature, stacked by class ({result.n_rows} rows)",
                      f"mean |SHAP value| ({_shap_output_title(result, '')})", height=120 + 28 * max(len(order), 3))
        fig.update_layout(showlegend=True)
        fig.update_yaxes(automargin=True)
        return fig
    res, label = _shap_one_output(result, class_index, func)
    imp = res.mean_abs()
    order = np.argsort(-imp, kind="stable")[:max_display][::-1]
    fig = go.Figure(
        go.Bar(
            x=imp[order], y=[res.feature_names[j] for j in order], orientation="h",
            marker_color=NEGATIVE, text=[f"{v:.3g}" for v in imp[order]], textposition="outside",
            cliponaxis=False, hovertemplate="<b>%{y}</b><br>mean |SHAP|: %{x:.4g}<extra></extra>",
        )
    )
    fig.update_yaxes(automargin=True)
    return _shap_layout(fig, f"Mean |SHAP value| per feature ({_shap_output_title(res, label)}, {res.n_rows} rows)",
                   "mean |SHAP value|", height=120 + 28 * max(len(order), 3))


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
    res, label = _shap_one_output(result, class_index, func)
    j = res.feature_index(feature)
    keep = np.flatnonzero(~res.missing[:, j])
    xv = res.data.iloc[keep, j]
    yv = res.values[keep, j]
    name = res.feature_names[j]
    marker = dict(color=NEGATIVE, size=7, opacity=0.8)
    hover = [f"<b>{name}</b> = {_shap_fmt(a)}<br>SHAP value: {b:+.4g}<br>row {r}" for a, b, r in zip(xv, yv, keep)]
    if color_by is not None:
        c = res.feature_index(color_by)
        cname = res.feature_names[c]
        scaled = _shap_scaled_colour(res.data.iloc[:, c])[keep]
        marker = dict(
            color=np.where(np.isnan(scaled), 0.5, scaled), colorscale=VALUE_SCALE, cmin=0, cmax=1, size=7,
            opacity=0.85, colorbar=dict(title=cname, tickvals=[0, 1], ticktext=["low", "high"], thickness=12),
        )
        hover = [h + f"<br>{cname} = {_shap_fmt(res.data.iloc[r, c])}" for h, r in zip(hover, keep)]
    fig = go.Figure(
        go.Scattergl(
            x=xv.to_numpy(), y=yv, mode="markers", marker=marker, customdata=keep,
            hovertext=hover, hovertemplate="%{hovertext}<extra></extra>", name=name,
        )
    )
    fig.add_hline(y=0, line=dict(color="#777777", width=1))
    fig = _shap_layout(fig, f"Dependence of {_shap_output_title(res, label)} on {name}", name, height=420)
    fig.update_yaxes(title_text=f"SHAP value of {name}")
    return fig


# ============================================================================
# Variable importance
# ============================================================================

__all__ = ["PALETTE", "importance_bars_figure", "agreement_heatmap_figure"]



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
            r = results[0]
            idx = pd.Index(r.feature_names, name="feature")
            imp = np.clip(r.importances, 0, None)
            total = imp.sum() if imp.sum() > 0 else 1.0
            vals = pd.DataFrame({r.label: imp / total if normalised else r.importances}, index=idx)
            errs = pd.DataFrame({r.label: r.std / total if normalised else r.std}, index=idx)
            key = vals.iloc[:, 0]
            return vals, errs, key, {r.label: r.description}
        comp = compare_importances(results)
    desc = {lab: r.description for lab, r in zip(comp.methods, comp.results)}
    if normalised:
        return comp.shares, comp.stds, comp.shares.mean(axis=1), desc
    feats = list(comp.shares.index)
    vals, errs = {}, {}
    for lab, r in zip(comp.methods, comp.results):
        pos = [r.feature_names.index(f) for f in feats]
        vals[lab], errs[lab] = r.importances[pos], r.std[pos]
    idx = comp.shares.index
    return pd.DataFrame(vals, index=idx), pd.DataFrame(errs, index=idx), comp.shares.mean(axis=1), desc


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
        One bar trace per method, error bars from the method's std.
    """
    vals, errs, key, desc = _imp_bar_data(data, normalised)
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
    vals, errs = vals.loc[order], errs.loc[order]
    fmt = ".1%" if normalised else ".4g"
    fig = go.Figure()
    for i, method in enumerate(vals.columns):
        fig.add_trace(
            go.Bar(
                name=method,
                y=[str(f) for f in vals.index],
                x=vals[method].to_numpy(),
                orientation="h",
                marker_color=PALETTE[i % len(PALETTE)],
                error_x=dict(type="data", array=errs[method].to_numpy(), visible=True,
                             color="#444444", thickness=1.2, width=3),
                hovertemplate=(
                    f"<b>%{{y}}</b><br>{method}: %{{x:{fmt}}} ± %{{error_x.array:{fmt}}}"
                    f"<extra>{desc.get(method, '')[:60]}</extra>"
                ),
            )
        )
    n_feat, n_meth = len(vals.index), len(vals.columns)
    fig.update_layout(
        template="plotly_white",
        barmode="group",
        title=title or ("Variable importance, compared" if n_meth > 1 else "Variable importance"),
        font=FONT,
        legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0),
        height=int(min(2400, max(320, 120 + n_feat * (14 + 12 * n_meth)))),
        margin=dict(l=10, r=20, t=90, b=50),
        bargap=0.25,
    )
    fig.update_xaxes(
        title_text="Share of total importance" if normalised else "Importance (each method in its own units)",
        tickformat=".0%" if normalised else None,
        zeroline=True, zerolinecolor="#888888",
    )
    fig.update_yaxes(title_text="Feature", autorange="reversed", automargin=True)
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
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(mat.columns),
            y=list(mat.index),
            zmin=-1,
            zmax=1,
            colorscale=scale,
            text=text,
            texttemplate="%{text}",
            textfont=dict(size=15),
            colorbar=dict(title=symbol),
            hovertemplate="%{y} vs %{x}<br>" + symbol + " = %{text}<extra></extra>",
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
    fig.update_xaxes(side="bottom", tickangle=-30, automargin=True)
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig
