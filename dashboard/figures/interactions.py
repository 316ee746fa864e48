"""Interaction figures: which pairs of features act together, and how.

- :func:`interaction_strength`: a feature x feature table of pair strengths, from SHAP
  interaction values (mean over rows of |phi_ij + phi_ji|, the pair's joint share of the
  prediction, as the dependence plot shows it) or from Friedman's H
- :func:`top_features`: the features with the largest total interaction
- :func:`interaction_heatmap_figure`: that table as a heatmap; every off-diagonal cell can be
  clicked (an invisible marker sits on it: Plotly heatmaps cannot be selected)
- :func:`interaction_dependence_figure`: one pair's SHAP interaction against a feature's
  value, coloured by the partner's value
- :func:`interaction_pairs_frame`: the ranked pairs with both measures (table and CSV)
- :func:`pair_from_selection`: the pair a click on the heatmap picked

Pure functions of result objects; user text (feature and class names) is escaped for
Plotly with :func:`dashboard.safe_text.plot`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explainers.errors import InvalidFeatureError, param_error

from dashboard.safe_text import plot, plot_values

from .style import (FONT, MISSING, PALETTE, POSITIVE, VALUE_SCALE, d3_format, fmt_number, output_words, scale_of,
                    short_labels)

#: sequential scale of interaction strength: white (none) to dark blue (strong)
INTERACTION_SCALE = "Blues"
SHAP_LABEL = "mean |SHAP interaction|"
H_LABEL = "H statistic"


# ------------------------------------------------------------------ helpers
def _kind(result) -> str:
    name = type(result).__name__
    if name == "ShapInteractionResult":
        return "shap"
    if name == "MeanInteraction":  # SHAP interaction means of rows not kept (every row of a large table)
        return "mean"
    if name == "HStatisticResult":
        return "h"
    raise TypeError(f"Expected a ShapInteractionResult, MeanInteraction or HStatisticResult, got {name}.")


def _output_pos(result, class_index) -> int | None:
    """The output a SHAP result's numbers are read from: None for a result of one output (no output
    axis), else ``class_index`` (default: the positive class of two, else the first)."""
    multi = result.pair.ndim == 3 if _kind(result) == "mean" else np.ndim(result.values) == 4
    if not multi:
        return None
    return (1 if result.n_outputs == 2 else 0) if class_index is None else int(class_index)


def _values(result, class_index, func: str) -> np.ndarray:
    """The (n, p, p) interaction values of one output."""
    vals = np.asarray(result.values, dtype=float)
    if vals.ndim == 3:
        if class_index not in (None, 0):
            raise param_error("class_index", func, "None (the result has one output)", class_index)
        return vals
    k = vals.shape[3]
    if class_index is None:
        class_index = 1 if k == 2 else 0
    if not isinstance(class_index, (int, np.integer)) or not 0 <= class_index < k:
        raise param_error("class_index", func, f"None or an int in [0, {k - 1}]", class_index)
    return vals[..., int(class_index)]


def output_label(result, class_index: int | None = None) -> str:
    """What a SHAP interaction result's numbers are in: 'prediction', 'P(class)', 'log-odds(class)'."""
    names = list(result.output_names)
    pos = _output_pos(result, class_index)
    name = str(names[pos or 0]) if names else ""
    if result.output == "raw" and pos is None:
        return "prediction"
    return output_words(result.output, name, compact=True)


def interaction_strength(result, *, class_index: int | None = None) -> pd.DataFrame:
    """A symmetric feature x feature table of how strongly each pair interacts (NaN on the diagonal).

    Parameters
    ----------
    result : ShapInteractionResult, MeanInteraction or HStatisticResult
    class_index : int, default=None
        Output of a SHAP result with several (default: the positive class of two, else the first).

    Returns
    -------
    DataFrame
        SHAP: ``mean over rows of |values[:, i, j] + values[:, j, i]|`` (twice
        ``result.mean_abs()`` off the diagonal: the pair's whole interaction, as
        :func:`interaction_dependence_figure` plots it); a MeanInteraction holds that mean
        already (``pair``). H: Friedman's H of the pair
        (``result.matrix()``), NaN for pairs not computed.
    """
    kind = _kind(result)
    if kind in ("shap", "mean"):
        if kind == "mean":
            pos = _output_pos(result, class_index)
            pair = np.array(result.pair if pos is None else result.select(pos).pair, dtype=float)
        else:
            v = _values(result, class_index, "interaction_strength")
            pair = np.abs(v + v.transpose(0, 2, 1)).mean(axis=0)
        np.fill_diagonal(pair, np.nan)
        names = [str(n) for n in result.feature_names]
        return pd.DataFrame(pair, index=names, columns=names)
    names = [str(n) for n in result.feature_names]
    in_pairs = [n for n in dict.fromkeys(str(x) for pr in result.pairs for x in pr)]
    names = names + [n for n in in_pairs if n not in names]
    mat = result.matrix().reindex(index=names, columns=names).astype(float)
    arr = mat.to_numpy(copy=True)
    np.fill_diagonal(arr, np.nan)
    return pd.DataFrame(arr, index=names, columns=names)


def top_features(strength: pd.DataFrame, k: int = 12) -> list[str]:
    """The ``k`` features with the largest total interaction (row sums, NaN as 0), strongest first."""
    total = np.nansum(strength.to_numpy(dtype=float), axis=1)
    order = np.argsort(-total, kind="stable")[: max(int(k), 0)]
    return [str(strength.index[i]) for i in order]


def _check_features(names: list[str], features, func: str) -> list[str]:
    for f in features:
        if str(f) not in names:
            raise InvalidFeatureError(
                f"{func}: unknown feature {f!r}. Known features: {', '.join(names[:20])}"
                f"{' …' if len(names) > 20 else ''}.")
    return [str(f) for f in features]


def noise_scale(result, class_index=None) -> float:
    """What a value is rounding noise against: mean |SHAP value| (SHAP) or 1 (H, a ratio)."""
    if _kind(result) == "h":
        return 1.0
    if _kind(result) == "mean":
        pos = _output_pos(result, class_index)
        return float(result.shap_scale[0] if pos is None else result.select(pos).shap_scale[0]) or 1.0
    v = _values(result, class_index, "interaction_heatmap_figure")
    return float(np.abs(v.sum(axis=2)).mean()) or 1.0


# ------------------------------------------------------------------ heatmap
#: characters of a feature name on the heatmap's axes
LABEL_CHARS = 22


def interaction_heatmap_figure(result, *, features=None, max_features: int = 12,
                               class_index: int | None = None, highlight: tuple | None = None) -> go.Figure:
    """Pair strengths of the strongest features as a heatmap (off-diagonal cells only).

    Parameters
    ----------
    result : ShapInteractionResult, MeanInteraction or HStatisticResult
    features : list of str, default=None
        The features (rows and columns, in this order); None: the ``max_features``
        with the largest total interaction (:func:`top_features`).
    class_index : int, default=None
        Output of a SHAP result with several.
    highlight : (str, str), default=None
        A pair to outline (both of its cells).

    Returns
    -------
    plotly.graph_objects.Figure
        ``data[0]`` is the heatmap: ``z[a][b]`` is ``interaction_strength(result)``
        at (features[a], features[b]), NaN on the diagonal; ``data[1]`` holds an
        invisible, clickable marker per off-diagonal cell with ``customdata`` =
        [row position, column position] in ``features``.
    """
    func = "interaction_heatmap_figure"
    kind = _kind(result)
    strength = interaction_strength(result, class_index=class_index)
    names = list(strength.index)
    feats = top_features(strength, max_features) if features is None else _check_features(names, features, func)
    mat = strength.loc[feats, feats].to_numpy(dtype=float)
    # long names keep their start and end (the hover gives the full name): the matrix keeps its width
    labels = [plot(f) for f in short_labels(feats, LABEL_CHARS)]  # cut the names, then escape them
    full = [plot(f) for f in feats]
    scale = noise_scale(result, class_index)
    # two significant digits in a cell (the hover and the pairs table give four): they fit and read
    text = [["" if not np.isfinite(v) else fmt_number(v, scale, digits=2) for v in row] for row in mat]
    finite = mat[np.isfinite(mat)]
    top = float(finite.max()) if finite.size else 0.0
    zmax = top if top > 1e-9 * scale else scale  # all rounding noise: draw it as the zero it is
    what = SHAP_LABEL if kind != "h" else H_LABEL
    unit = f" ({plot(output_label(result, class_index))})" if kind != "h" else ""
    fig = go.Figure(go.Heatmap(
        x=labels, y=labels, z=mat, zmin=0.0, zmax=zmax, colorscale=INTERACTION_SCALE, hoverinfo="skip",
        text=text, texttemplate="%{text}" if len(feats) <= 12 else None, hoverongaps=False,
        textfont=dict(size=12 if len(feats) <= 8 else 11),
        colorbar=dict(title=dict(text="H" if kind == "h" else "mean |φᵢⱼ+φⱼᵢ|", side="right"), thickness=12,
                      tickformat=d3_format(zmax)),
        name=what, xgap=1, ygap=1,
    ))
    cells = [(a, b) for a in range(len(feats)) for b in range(len(feats)) if a != b]
    fmt = d3_format(scale_of(finite) if finite.size else 1.0)
    fig.add_trace(go.Scatter(
        x=[labels[b] for _, b in cells], y=[labels[a] for a, _ in cells], mode="markers",
        customdata=[[a, b, mat[a, b], full[a], full[b]] for a, b in cells],
        marker=dict(symbol="square", size=max(12, min(60, 520 // max(len(feats), 1))), opacity=0.0,
                    color="#000000"),
        selected=dict(marker=dict(opacity=0.0)), unselected=dict(marker=dict(opacity=0.0)),
        hovertemplate=(f"%{{customdata[3]}} × %{{customdata[4]}}<br>{what}: %{{customdata[2]:{fmt}}}"
                       "<br>click to see this pair<extra></extra>"),
        showlegend=False, name="pick a pair",
    ))
    if highlight is not None:
        pos = {f: i for i, f in enumerate(feats)}
        a, b = (str(h) for h in highlight)
        if a in pos and b in pos:
            for r, c in ((pos[a], pos[b]), (pos[b], pos[a])):
                fig.add_shape(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5, xref="x", yref="y",
                              line=dict(color=POSITIVE, width=3), fillcolor="rgba(0,0,0,0)")
    title = (f"Mean |SHAP interaction| of feature pairs{unit}" if kind != "h"
             else "Friedman's H statistic of feature pairs")
    side = max(420, min(760, 160 + 40 * len(feats)))
    fig.update_layout(
        # the title under the band the Plotly toolbar takes at the top (it covered a long title)
        title=dict(text=title, x=0.01, xanchor="left", yref="container", y=1, yanchor="top", pad=dict(t=34)),
        font=FONT, template="plotly_white", height=side + 30,
        margin=dict(l=10, r=10, t=80, b=10), hoverlabel=dict(font_size=13), hovermode="closest",
    )
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=labels, tickangle=-40, showgrid=False,
                     zeroline=False, side="bottom")
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=labels, autorange="reversed",
                     showgrid=False, zeroline=False)
    return fig


def pair_from_selection(points, features: list[str]) -> tuple[str, str] | None:
    """The (feature, partner) of the heatmap cell a click selected, or None.

    ``points`` is ``event.selection.points`` of ``st.plotly_chart(on_select=...)``; the
    cell's positions travel in the marker's ``customdata`` ([row, column, value]).
    """
    for pt in points or ():
        get = pt.get if hasattr(pt, "get") else (lambda k, _pt=pt: getattr(_pt, k, None))
        cd = get("customdata")
        if cd is None or len(cd) < 2:
            continue
        try:
            a, b = int(cd[0]), int(cd[1])
        except (TypeError, ValueError):
            continue
        if 0 <= a < len(features) and 0 <= b < len(features) and a != b:
            return str(features[a]), str(features[b])
    return None


# --------------------------------------------------------------- dependence
def interaction_dependence_figure(result, feature: str, partner: str, *, class_index: int | None = None) -> go.Figure:
    """One pair's SHAP interaction per row against ``feature``'s value, coloured by ``partner``'s.

    Parameters
    ----------
    result : ShapInteractionResult
    feature, partner : str
        Two different features of the result.
    class_index : int, default=None
        Output of a result with several.

    Returns
    -------
    plotly.graph_objects.Figure
        ``data[0]`` holds the rows whose partner value is known, in the result's row
        order: ``x`` = ``result.data[feature]``, ``y`` = ``values[:, i, j] + values[:, j, i]``
        (the pair's whole interaction, as shap's dependence plot shows it), marker
        colour = ``result.data[partner]``. Rows with no partner value (or a text
        partner) follow in further traces.
    """
    func = "interaction_dependence_figure"
    if _kind(result) != "shap":
        raise TypeError(f"{func} draws SHAP interaction values; got {type(result).__name__}.")
    names = [str(n) for n in result.feature_names]
    feature, partner = _check_features(names, [feature, partner], func)
    if feature == partner:
        raise InvalidFeatureError(f"{func}: the pair ({feature!r}, {partner!r}) names one feature twice.")
    i, j = names.index(feature), names.index(partner)
    v = _values(result, class_index, func)
    y = v[:, i, j] + v[:, j, i]
    data = result.data
    x = data.iloc[:, i]
    c = data.iloc[:, j]
    x_numeric = pd.api.types.is_numeric_dtype(x.dtype) and not isinstance(x.dtype, pd.CategoricalDtype)
    c_numeric = pd.api.types.is_numeric_dtype(c.dtype) and not isinstance(c.dtype, pd.CategoricalDtype)
    fx, fp = plot(feature), plot(partner)
    sx, sp = (plot(n) for n in short_labels([feature, partner], LABEL_CHARS))  # for titles (the hover: full)
    label = plot(output_label(result, class_index))
    xs = x.to_numpy(dtype=float) if x_numeric else np.asarray(plot_values(list(x.astype(object))), dtype=object)
    yfmt = d3_format(scale_of(y))
    xfmt = d3_format(scale_of(xs)) if x_numeric else ""
    rows = np.arange(len(y))
    fig = go.Figure()
    if c_numeric:
        cv = c.to_numpy(dtype=float)
        known = np.isfinite(cv)
        cfmt = d3_format(scale_of(cv[known])) if known.any() else ""
        hover = (f"{fx}: %{{x:{xfmt}}}<br>{fp}: %{{marker.color:{cfmt}}}<br>interaction: %{{y:{yfmt}}}"
                 "<br>row %{customdata}<extra></extra>")
        fig.add_trace(go.Scatter(
            x=xs[known], y=y[known], mode="markers", customdata=rows[known], name=f"rows ({fp} known)",
            marker=dict(color=cv[known], colorscale=VALUE_SCALE, size=6, opacity=0.8, showscale=True,
                        line=dict(width=0), colorbar=dict(title=dict(text=sp, side="right"), thickness=12, tickformat=cfmt)),
            hovertemplate=hover, showlegend=False,
        ))
        if (~known).any():
            fig.add_trace(go.Scatter(
                x=xs[~known], y=y[~known], mode="markers", customdata=rows[~known], name=f"{fp} missing",
                marker=dict(color=MISSING, size=6, opacity=0.8),
                hovertemplate=f"{fx}: %{{x:{xfmt}}}<br>{fp}: missing<br>interaction: %{{y:{yfmt}}}<extra></extra>",
            ))
    else:
        cats = c.astype(object).where(c.notna(), None)
        counts = cats.value_counts(dropna=True)
        shown = list(counts.index[:7])
        groups = [(plot(v), (cats == v).to_numpy()) for v in shown]
        rest = ~cats.isin(shown).to_numpy()
        if rest.any():
            groups.append(("other / missing", rest))
        for g, (name, sel) in enumerate(groups):
            fig.add_trace(go.Scatter(
                x=xs[sel], y=y[sel], mode="markers", customdata=rows[sel], name=name,
                marker=dict(color=PALETTE[g % len(PALETTE)], size=6, opacity=0.8),
                hovertemplate=f"{fx}: %{{x}}<br>{fp}: {name}<br>interaction: %{{y:{yfmt}}}<extra></extra>",
            ))
    fig.add_hline(y=0.0, line=dict(color="#888888", width=1, dash="dot"))
    fig.update_layout(
        title=dict(text=f"SHAP interaction: {sx} × {sp}", x=0.01, xanchor="left"), font=FONT,
        template="plotly_white", height=480, margin=dict(l=70, r=20, t=50, b=60), hoverlabel=dict(font_size=13),
        legend=dict(orientation="h", yref="container", yanchor="bottom", y=0.0, xanchor="left", x=0.0),
    )
    fig.update_xaxes(title_text=sx, showline=True, linecolor="#444444", **({"tickformat": xfmt} if x_numeric else {}))
    fig.update_yaxes(title_text=f"SHAP interaction φᵢⱼ + φⱼᵢ ({label})", showline=True, linecolor="#444444",
                     zeroline=False, tickformat=yfmt)
    return fig


# -------------------------------------------------------------------- table
def interaction_pairs_frame(shap_result, h_result, features: list[str], *, class_index: int | None = None,
                            sort_by: str = "SHAP interaction") -> pd.DataFrame:
    """Every pair of ``features`` with both measures, strongest first.

    Columns: ``pair`` ("a × b"), ``feature``, ``other``, ``mean_abs_shap_interaction``
    (:func:`interaction_strength` of ``shap_result``; NaN without one) and ``h_statistic``
    (Friedman's H of ``h_result``; NaN for pairs it does not hold). Sorted by H when
    ``sort_by`` is "H statistic" (or there is no SHAP result), else by the SHAP column.
    """
    feats = [str(f) for f in features]
    shap_m = interaction_strength(shap_result, class_index=class_index) if shap_result is not None else None
    h_m = interaction_strength(h_result) if h_result is not None else None

    def look(m, a, b):
        if m is None or a not in m.index or b not in m.columns:
            return np.nan
        return float(m.loc[a, b])

    rows = [(f"{a} × {b}", a, b, look(shap_m, a, b), look(h_m, a, b))
            for x, a in enumerate(feats) for b in feats[x + 1:]]
    frame = pd.DataFrame(rows, columns=["pair", "feature", "other", "mean_abs_shap_interaction", "h_statistic"])
    key = "h_statistic" if (sort_by == "H statistic" or shap_m is None) else "mean_abs_shap_interaction"
    return frame.sort_values(key, ascending=False, kind="stable", na_position="last").reset_index(drop=True)
