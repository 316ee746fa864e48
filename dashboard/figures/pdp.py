"""Partial dependence, ICE and ALE figures, and the PDP values as CSV.

``pdp_figure`` (one feature: PD line with ICE curves), ``pdp2d_figure`` (two
features: heatmap or contour), ``ale_figure`` and ``ale2d_figure``, and
``pdp_to_csv``. Display-only transforms (picking a class, centring, ICE
subsampling, hiding empty cells) happen here, never in :mod:`explainers`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explainers.errors import InvalidParameterError, param_error

from dashboard.safe_text import csv_text, plot, plot_values

from .style import FONT, PDP_COLOURS, PDP_EMPTY, PDP_ICE, PDP_LINE, PDP_SCALE, d3_format, fmt_value, scale_of, short_labels


# ============================================================================
# Shared steps
# ============================================================================

def _pick_output(result, class_index, func: str):
    """Return (output position or None for all, label) for a result's outputs.

    One output: None. Several and no class_index: the positive class of a
    binary model, or every class (k > 2) for 1-D line plots to draw together.
    The label is escaped for Plotly (class names are user text).
    """
    names = [plot(n) for n in result.output_names]
    k = len(names)
    if k == 1 and str(result.output_names[0]).strip() in ("", "0", "output", "y"):
        names = ["prediction"]  # a regressor's one output has no name of its own ("0" read as a title)
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


def _pick_one_output(result, class_index, func: str):
    """Like :func:`_pick_output`, but a multiclass overview falls back to the first class (2-D figures)."""
    pos, label = _pick_output(result, class_index, func)
    if pos == "all":
        return 0, plot(result.output_names[0])
    return pos, label


def _need_features(result, n: int, func: str, instead: str) -> None:
    """A clear error when a result has the wrong number of features for this figure."""
    if len(result.feature_names) != n:
        raise InvalidParameterError(
            f"{func} draws {('one', 'two')[n - 1]} feature{'s' * (n > 1)}; this result has "
            f"{len(result.feature_names)}. Use {instead} for {('two', 'one')[n - 1]}."
        )


def _spec(*values) -> str:
    """The Plotly number format for values of this scale (see :func:`~.style.d3_format`)."""
    try:
        return d3_format(scale_of(*values))
    except (TypeError, ValueError):  # text values: no number format
        return ""


def _number_axes(fig: go.Figure, x=None, y=None) -> None:
    """Tick formats on the data's own scale (``192.6k``, never ``1.926e+05``) for numeric axes."""
    if x is not None:
        fig.update_xaxes(tickformat=_spec(x))
    if y is not None:
        fig.update_layout(yaxis=dict(tickformat=_spec(y)))


def _take(arr, pos):
    if arr is None or pos is None:
        return arr
    return arr[..., pos]


def _axis_values(grid, categorical: bool):
    """Grid values as plotted: strings (escaped for Plotly) for a categorical feature, floats otherwise."""
    return [plot(v) for v in grid] if categorical else np.asarray(grid, dtype=float)


def _layout(fig: go.Figure, title: str, xtitle: str, ytitle: str, height: int = 480) -> go.Figure:
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


def _short_pair(result) -> tuple[str, str]:
    """The two features' names for titles and axis titles, long ones shortened (the hover keeps them whole)."""
    sx, sy = short_labels(list(result.feature_names)[:2], 32)
    return plot(sx), plot(sy)


def _heatmap_layout(fig: go.Figure, title: str, fx: str, fy: str) -> go.Figure:
    """The layout of a two-feature heatmap: no grid lines over the cells."""
    fig = _layout(fig, title, fx, fy, height=540)
    fig.update_yaxes(zeroline=False, showgrid=False)
    fig.update_xaxes(showgrid=False)
    return fig


def _shade_empty(fig: go.Figure, x, y, empty: np.ndarray, hovertemplate: str) -> None:
    """Grey over the cells with no data rows behind them."""
    fig.add_trace(go.Heatmap(
        x=x, y=y, z=np.where(empty, 1.0, np.nan), colorscale=[[0, PDP_EMPTY], [1, PDP_EMPTY]],
        showscale=False, opacity=0.75, hoverongaps=False, name="no data",
        hovertemplate=hovertemplate,
    ))


def _rug(fig: go.Figure, result, pos: int = 0) -> None:
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
            hovertemplate=f"{plot(result.feature_names[pos])}: %{{x:{_spec(dec)}}}<br>decile %{{customdata}}%<extra></extra>",
        )
    )
    fig.update_layout(yaxis2=dict(overlaying="y", range=[0, 1], visible=False, fixedrange=True))


# ============================================================================
# One feature: PD line and ICE curves
# ============================================================================

def _ice_rows(n: int, max_lines: int) -> np.ndarray:
    """Evenly spread rows, so the same result always shows the same lines."""
    if n <= max_lines:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_lines).round().astype(int))


def _colour_values(result, color_by, shown: np.ndarray):
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
    return aligned[shown], plot(name)


def _viridis(t: np.ndarray) -> list[str]:
    from plotly.colors import sample_colorscale

    return sample_colorscale(PDP_SCALE, np.clip(np.nan_to_num(t, nan=0.0), 0, 1).tolist())


def _ice_groups(result, color_by, shown: np.ndarray):
    """The ICE traces to draw, and the colour-by name and numbers (for a colour bar).

    Returns ([(legend name or None, positions in ``shown``, colour, hover extra)],
    cname, numbers): numbers are the colour-by values when they are numeric (one
    trace per line, Viridis), else None (one trace per category, or one in all).
    """
    if color_by is None:
        return [(None, np.arange(len(shown)), PDP_ICE, "")], None, None
    cvals, cname = _colour_values(result, color_by, shown)
    if pd.api.types.is_numeric_dtype(np.asarray(cvals).dtype):
        cv = np.asarray(cvals, dtype=float)
        lo, hi = np.nanmin(cv), np.nanmax(cv)
        colours = _viridis((cv - lo) / (hi - lo) if hi > lo else cv * 0)
        groups = [(None, np.array([i]), colours[i], f"<br>{cname}: {fmt_value(cv[i])}") for i in range(len(shown))]
        return groups, cname, cv
    cats = list(pd.unique(pd.Series(cvals).astype(str)))
    lab = pd.Series(cvals).astype(str).to_numpy()
    groups = [(plot(c), np.flatnonzero(lab == c), PDP_COLOURS[i % len(PDP_COLOURS)], f"<br>{cname}: {plot(c)}")
              for i, c in enumerate(cats)]
    return groups, cname, None


def _ice_points(x, lines: np.ndarray, row_ids: np.ndarray, idx: np.ndarray, categorical: bool):
    """(x, y, row ids, mode) of one ICE trace: curves joined with gaps (None) so many lines stay light."""
    if categorical:
        xs = np.tile(np.asarray(x, dtype=object), len(idx))
        ys = lines[idx].reshape(-1)
        return xs, ys, np.repeat(row_ids[idx], len(x)), "markers"
    xs = np.concatenate([np.append(x, np.nan) for _ in idx]) if len(idx) else np.array([])
    ys = np.concatenate([np.append(lines[i], np.nan) for i in idx]) if len(idx) else np.array([])
    return xs, ys, np.repeat(row_ids[idx], len(x) + 1), "lines"


def _add_ice(fig: go.Figure, result, ice: np.ndarray, x, name: str, categorical: bool,
             max_lines: int, color_by) -> None:
    """ICE curves (or points), one trace per colour group, toggled together from the legend."""
    shown = _ice_rows(ice.shape[0], max_lines)
    lines = ice[shown]
    row_ids = np.asarray(result.row_indices)[shown]
    groups, cname, numbers = _ice_groups(result, color_by, shown)
    xf, yf = ("" if categorical else _spec(x)), _spec(lines)
    for k, (gname, idx, colour, hover_extra) in enumerate(groups):
        xs, ys, cd, mode = _ice_points(x, lines, row_ids, idx, categorical)
        legend_name = f"ICE ({len(shown)} of {ice.shape[0]} rows)" if gname is None else f"ICE: {cname} = {gname}"
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode=mode,
                name=legend_name,
                legendgroup="ice",
                showlegend=k == 0 or gname is not None,
                opacity=0.35 if mode == "lines" else 0.45,
                line=dict(color=colour, width=1),
                marker=dict(color=colour, size=5),
                customdata=cd,
                hovertemplate=(f"{name}: %{{x" + ("" if categorical else f":{xf}") + f"}}<br>prediction: %{{y:{yf}}}"
                               f"<br>row %{{customdata}}{hover_extra}<extra>ICE</extra>"),
            )
        )
    if numbers is not None:
        # an invisible marker trace carries the colour bar of the ICE colouring
        fig.add_trace(go.Scatter(
            x=[None], y=[None], mode="markers", showlegend=False, hoverinfo="skip",
            marker=dict(colorscale=PDP_SCALE, cmin=np.nanmin(numbers), cmax=np.nanmax(numbers),
                        color=[np.nanmin(numbers)],
                        showscale=True, colorbar=dict(title=dict(text=cname, side="right"), thickness=14)),
        ))


def _add_pd_line(fig: go.Figure, x, avg: np.ndarray, counts: np.ndarray, name: str, categorical: bool) -> None:
    """The partial dependence on top: a bold level mark per category for a categorical feature
    (bars from 0 would hide differences far from 0, log prices of 11-12 say), a bold line otherwise."""
    if categorical:
        fig.add_trace(go.Scatter(
            x=x, y=avg, mode="markers", name="partial dependence", customdata=counts,
            marker=dict(symbol="line-ew", size=36, line=dict(color=PDP_LINE, width=5)),
            hovertemplate=f"{name}: %{{x}}<br>partial dependence: %{{y:{_spec(avg)}}}<br>rows: %{{customdata}}<extra></extra>",
        ))
    else:
        fig.add_trace(go.Scatter(
            x=x, y=avg, mode="lines+markers", name="partial dependence",
            line=dict(color=PDP_LINE, width=4), marker=dict(size=5, color=PDP_LINE), customdata=counts,
            hovertemplate=f"{name}: %{{x:{_spec(x)}}}<br>partial dependence: %{{y:{_spec(avg)}}}<br>rows near: %{{customdata}}<extra></extra>",
        ))


def _add_class_lines(fig: go.Figure, result, x, counts: np.ndarray, name: str, categorical: bool,
                     shift: bool) -> None:
    """Multiclass overview: one PD line (or bar set) per class, no ICE."""
    for k, cname in enumerate(plot(c) for c in result.output_names):
        avg = result.average[..., k]
        avg = avg - avg[0] if shift else avg
        colour = PDP_COLOURS[k % len(PDP_COLOURS)]
        if categorical:  # level marks, as for one output: the classes' levels side by side
            fig.add_trace(go.Scatter(x=x, y=avg, mode="markers", name=str(cname), customdata=counts,
                                     marker=dict(symbol="line-ew", size=30, line=dict(color=colour, width=4)),
                                     hovertemplate=f"{name}: %{{x}}<br>PD ({cname}): %{{y:{_spec(avg)}}}<br>rows: %{{customdata}}<extra></extra>"))
        else:
            fig.add_trace(go.Scatter(x=x, y=avg, mode="lines", name=str(cname),
                                     line=dict(color=colour, width=3), customdata=counts,
                                     hovertemplate=f"{name}: %{{x:{_spec(x)}}}<br>PD ({cname}): %{{y:{_spec(avg)}}}<br>rows near: %{{customdata}}<extra></extra>"))


def _check_pdp_args(result, max_ice_lines, func: str) -> None:
    if len(result.feature_names) != 1:
        raise InvalidParameterError(
            f"pdp_figure draws one feature; this result has {len(result.feature_names)}. "
            "Use pdp2d_figure for two features."
        )
    if not isinstance(max_ice_lines, (int, np.integer)) or max_ice_lines < 0:
        raise param_error("max_ice_lines", func, "an int >= 0", max_ice_lines)


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
        legend), the PD line (or a level mark per category for a categorical feature) and the rug.
    """
    func = "pdp_figure"
    _check_pdp_args(result, max_ice_lines, func)
    pos, label = _pick_output(result, class_index, func)
    name = plot(result.feature_names[0])
    categorical = result.feature_kinds[0] == "categorical"
    x = _axis_values(result.grid[0], categorical)
    counts = np.asarray(result.counts)
    fig = go.Figure()
    shift = centered and not result.centered
    ytitle = ("Centred " if (centered or result.centered) else "") + f"partial dependence: {label}"

    if pos == "all":
        _add_class_lines(fig, result, x, counts, name, categorical, shift)
    else:
        avg = np.asarray(_take(result.average, pos), dtype=float)
        ice = _take(result.individual, pos)
        if shift:
            avg = avg - avg[0]
            ice = None if ice is None else ice - ice[:, :1]
        if show_ice and ice is not None and max_ice_lines > 0:
            _add_ice(fig, result, ice, x, name, categorical, int(max_ice_lines), color_by)
        _add_pd_line(fig, x, avg, counts, name, categorical)
    if show_rug and not categorical:
        _rug(fig, result)
    fig = _layout(fig, f"Partial dependence on {name}", name, ytitle)
    ys = [t.y for t in fig.data if t.name != "deciles of the data" and t.y is not None]
    _number_axes(fig, None if categorical else x, [np.asarray(v, dtype=float) for v in ys] or None)
    return fig


# ============================================================================
# Two features
# ============================================================================

def _add_points(fig: go.Figure, points, fx: str, fy: str) -> None:
    """Overlay data rows as a light scatter: a DataFrame with both features, or two columns (x, y).

    ``fx`` and ``fy`` are the features' own names (to find the columns); text
    values are escaped like the categorical axes they sit on.
    """
    if isinstance(points, pd.DataFrame):
        px, py = points[fx].to_numpy(), points[fy].to_numpy()
    else:
        arr = np.asarray(points)
        px, py = arr[:, 0], arr[:, 1]
    if px.dtype == object:
        px = np.asarray(plot_values(px), dtype=object)
    if py.dtype == object:
        py = np.asarray(plot_values(py), dtype=object)
    fig.add_trace(go.Scatter(
        x=px, y=py, mode="markers", name="data",
        marker=dict(size=4, color="rgba(0,0,0,0.35)", line=dict(width=0)),
        hovertemplate=f"{plot(fx)}: %{{x}}<br>{plot(fy)}: %{{y}}<extra>data</extra>",
    ))


def _pdp2d_surface(result, pos, label: str, style: str, empty_cells: str):
    """The heatmap/contour figure of a two-feature PD; returns (figure, x, y, empty cells)."""
    fx, fy = (plot(n) for n in result.feature_names)
    cat_x, cat_y = (k == "categorical" for k in result.feature_kinds)
    x, y = _axis_values(result.grid[0], cat_x), _axis_values(result.grid[1], cat_y)
    z = np.asarray(_take(result.average, pos), dtype=float).T.copy()  # rows = y
    counts = np.asarray(result.counts).T
    empty = counts == 0
    if empty_cells == "hide":
        z[empty] = np.nan
    hover = (f"{fx}: %{{x}}<br>{fy}: %{{y}}<br>partial dependence: %{{z:{_spec(z)}}}"
             "<br>rows in cell: %{customdata}<extra></extra>")
    common = dict(x=x, y=y, z=z, customdata=counts, hovertemplate=hover, colorscale=PDP_SCALE,
                  colorbar=dict(title=dict(text=label, side="right"), thickness=14, tickformat=_spec(z)), name="partial dependence")
    if style == "heatmap":
        return go.Figure(go.Heatmap(**common, hoverongaps=False)), x, y, empty
    return go.Figure(go.Contour(**common, connectgaps=False, contours=dict(showlabels=True))), x, y, empty


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
    _need_features(result, 2, func, "pdp_figure")
    if style not in ("heatmap", "contour"):
        raise param_error("style", func, "one of ['heatmap', 'contour']", style)
    if empty_cells not in ("shade", "hide", "show"):
        raise param_error("empty_cells", func, "one of ['shade', 'hide', 'show']", empty_cells)
    pos, label = _pick_one_output(result, class_index, func)
    fig, x, y, empty = _pdp2d_surface(result, pos, label, style, empty_cells)
    fx, fy = (plot(n) for n in result.feature_names)
    if empty_cells == "shade" and empty.any():
        _shade_empty(fig, x, y, empty, f"{fx}: %{{x}}<br>{fy}: %{{y}}<br>no data rows in this cell<extra></extra>")
    if points is not None:
        _add_points(fig, points, *result.feature_names)  # the columns by their own names
    sx, sy = _short_pair(result)
    fig = _heatmap_layout(fig, f"Partial dependence on {sx} and {sy}", sx, sy)
    _number_axes(fig, None if result.feature_kinds[0] == "categorical" else x,
                 None if result.feature_kinds[1] == "categorical" else y)
    title = ("Centred p" if result.centered else "P") + f"artial dependence: {label}"
    fig.update_layout(title_text=f"{title} by {fx} and {fy}")
    return fig


# ============================================================================
# Accumulated local effects
# ============================================================================

def _add_bin_counts(fig: go.Figure, result, edges: np.ndarray, name: str) -> None:
    """Bars of the rows per bin along the bottom, on their own right-hand axis."""
    centres = (edges[1:] + edges[:-1]) / 2
    fig.add_trace(go.Bar(
        x=centres, y=result.counts, width=np.diff(edges), yaxis="y3", name="rows per bin",
        marker=dict(color=PDP_EMPTY), opacity=0.35,
        customdata=np.column_stack([edges[:-1], edges[1:]]),
        hovertemplate=(f"{name} in (%{{customdata[0]:{_spec(edges)}}}, %{{customdata[1]:{_spec(edges)}}}]"
                       "<br>rows: %{y:,d}<extra></extra>"),
    ))
    fig.update_layout(yaxis3=dict(overlaying="y", side="right", range=[0, 4 * max(result.counts.max(), 1)],
                                  showgrid=False, title=dict(text="rows per bin"), rangemode="tozero",
                                  tickmode="auto", nticks=5, tickformat=",d"))


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
    _need_features(result, 1, func, "ale2d_figure")
    pos, label = _pick_output(result, class_index, func)
    name = plot(result.feature_names[0])
    edges = np.asarray(result.grid[0], dtype=float)
    fig = go.Figure()
    series = (
        [(k, plot(c)) for k, c in enumerate(result.output_names)] if pos == "all" else [(pos, label)]
    )
    for i, (k, cname) in enumerate(series):
        eff = np.asarray(_take(result.effect, k), dtype=float)
        colour = PDP_LINE if len(series) == 1 else PDP_COLOURS[i % len(PDP_COLOURS)]
        fig.add_trace(go.Scatter(
            x=edges, y=eff, mode="lines+markers", name=f"ALE ({cname})" if len(series) > 1 else "ALE",
            line=dict(color=colour, width=3), marker=dict(size=5, color=colour),
            hovertemplate=f"{name}: %{{x:{_spec(edges)}}}<br>ALE ({cname}): %{{y:{_spec(eff)}}}<extra></extra>",
        ))
    if show_counts:
        _add_bin_counts(fig, result, edges, name)
    _rug(fig, result)
    fig = _layout(fig, f"Accumulated local effects of {name}", name, f"ALE (centred): {label}")
    _number_axes(fig, edges, np.asarray(result.effect, dtype=float))
    return fig


def ale2d_figure(result, *, class_index: int | None = None, shade_empty: bool = True,
                 reference: float | None = None) -> go.Figure:
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
    reference : float, default=None
        The size the interaction is read against (the pair's 2-D partial dependence range):
        the colours span at least a quarter of it, so an interaction thousands of times smaller
        than the pair's effect is drawn pale, not in full colour. None: the interaction's own
        largest value.

    Returns
    -------
    plotly.graph_objects.Figure
        ``data[0]`` is the heatmap over the bins (x and y are the bin edges):
        ``z[j][i]`` is the mean of the effect at the four corners of cell
        (i, j); then the shade layer.
    """
    func = "ale2d_figure"
    _need_features(result, 2, func, "ale_figure")
    pos, label = _pick_one_output(result, class_index, func)
    fx, fy = (plot(n) for n in result.feature_names)
    ex, ey = (np.asarray(g, dtype=float) for g in result.grid)
    f = np.asarray(_take(result.effect, pos), dtype=float)
    cells = ((f[:-1, :-1] + f[:-1, 1:] + f[1:, :-1] + f[1:, 1:]) / 4).T  # rows = y
    counts = np.asarray(result.counts).T
    bounds = np.dstack([np.broadcast_to(ex[:-1], counts.shape), np.broadcast_to(ex[1:], counts.shape),
                        np.broadcast_to(ey[:-1, None], counts.shape), np.broadcast_to(ey[1:, None], counts.shape),
                        counts])
    fxs, fys = _spec(ex), _spec(ey)
    hover = (f"{fx} in (%{{customdata[0]:{fxs}}}, %{{customdata[1]:{fxs}}}]<br>"
             f"{fy} in (%{{customdata[2]:{fys}}}, %{{customdata[3]:{fys}}}]<br>"
             f"interaction effect: %{{z:{_spec(cells)}}}<br>rows in cell: %{{customdata[4]}}<extra></extra>")
    span = float(np.nanmax(np.abs(cells)))
    if reference is not None and np.isfinite(reference):
        span = max(span, 0.25 * float(reference))
    span = span or 1.0
    fig = go.Figure(go.Heatmap(
        x=ex, y=ey, z=cells, customdata=bounds, hovertemplate=hover, colorscale="RdBu_r",
        zmid=0.0, zmin=-span, zmax=span, colorbar=dict(title=dict(text=label, side="right"), thickness=14, tickformat=_spec(cells)),
        name="interaction (2nd-order ALE)",
    ))
    empty = counts == 0
    if shade_empty and empty.any():
        _shade_empty(fig, ex, ey, empty, f"{fx}: %{{x}}<br>{fy}: %{{y}}<br>no data rows in this cell "
                                         "(value taken from the nearest cell with rows)<extra></extra>")
    sx, sy = _short_pair(result)
    fig = _heatmap_layout(fig, f"Interaction of {sx} and {sy} (second-order ALE)", sx, sy)
    _number_axes(fig, ex, ey)
    return fig


# ============================================================================
# CSV
# ============================================================================

def pdp_to_csv(result, *, include_ice: bool = False) -> str:
    """Partial dependence as CSV text: one row per grid point (and output).

    Columns: the feature(s), ``output`` (when there are several), ``partial_dependence``,
    ``rows`` (data rows in the grid cell) and, with ``include_ice``, one
    ``ice_row_<i>`` column per ICE row (``i`` = its position in the data).
    Text cells and names that start like a spreadsheet formula get a leading
    ``'`` (:func:`dashboard.safe_text.csv_text`); numbers are written as numbers.
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
    return csv_text(pd.concat(frames, ignore_index=True), index=False)


# ============================================================================
# A segment against the rest
# ============================================================================

def pdp_segment_figure(segment, rest, *, segment_name: str, class_index: int | None = None) -> go.Figure:
    """Partial dependence of one feature averaged over a segment's rows against the rest's.

    Parameters
    ----------
    segment, rest : PartialDependenceResult
        One-feature results over each part's rows, on one grid (see
        :func:`dashboard.state.compute.pdp_by_segment`).
    segment_name : str
        Named in the legend: "Segment: <name>" and "Rest".
    class_index : int, default=None
        Output to show; by default the positive class of a binary model, the first
        class of a multiclass one.

    Returns
    -------
    plotly.graph_objects.Figure
        Two traces (lines, or grouped bars for a categorical feature), segment first,
        whose ``y`` are each result's ``average``.
    """
    from .quality import REST_COLOUR, SEGMENT_COLOUR, segment_names

    func = "pdp_segment_figure"
    _check_pdp_args(segment, 0, func)
    pos, label = _pick_one_output(segment, class_index, func)
    name = plot(segment.feature_names[0])
    categorical = segment.feature_kinds[0] == "categorical"
    fig = go.Figure()
    ys = []
    for res, trace_name, colour in zip((segment, rest), segment_names(segment_name), (SEGMENT_COLOUR, REST_COLOUR)):
        x = _axis_values(res.grid[0], categorical)
        avg = np.asarray(_take(res.average, pos), dtype=float)
        ys.append(avg)
        n = len(res.row_indices)
        hover = (f"{trace_name} ({n:,} rows)<br>{name}: %{{x{'' if categorical else ':' + _spec(x)}}}<br>"
                 f"partial dependence: %{{y:{_spec(avg)}}}<br>rows of it here: %{{customdata}}<extra></extra>")
        if categorical:
            fig.add_trace(go.Bar(x=x, y=avg, name=trace_name, marker_color=colour, customdata=res.counts,
                                 hovertemplate=hover))
        else:
            fig.add_trace(go.Scatter(x=x, y=avg, mode="lines+markers", name=trace_name, customdata=res.counts,
                                     line=dict(color=colour, width=4), marker=dict(size=5, color=colour),
                                     hovertemplate=hover))
    if categorical:
        fig.update_layout(barmode="group")
    fig = _layout(fig, f"Partial dependence on {name}: segment against the rest", name,
                  f"partial dependence: {label}")
    _number_axes(fig, None if categorical else _axis_values(segment.grid[0], False), ys)
    return fig


def pd_range(result, class_index: int | None = None) -> float:
    """The range (max - min) of a partial dependence's average for one output: the size of the
    features' joint effect (what :func:`ale2d_figure` reads an interaction against)."""
    pos, _ = _pick_one_output(result, class_index, "pd_range")
    avg = np.asarray(_take(result.average, pos), dtype=float)
    return float(np.nanmax(avg) - np.nanmin(avg)) if np.isfinite(avg).any() else float("nan")
