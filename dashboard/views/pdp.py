"""PDP / ICE / ALE page: how the prediction moves with one or two features."""
from dataclasses import replace

import streamlit as st

from dashboard import figures, state, widgets
from dashboard.figures.pdp import pdp_segment_figure
from dashboard.safe_text import file_name, md
from dashboard.state.effects import pdp_by_segment
from dashboard.widgets import compared_segment

ctx = state.current()
st.title("How does the prediction move with a feature?")
cols = list(ctx.X.columns)
numeric = [c for c in cols if ctx.X[c].dtype.kind in "biuf"]
n_rows = len(ctx.X)
if n_rows < 2:
    st.info(f"Partial dependence and ALE need at least 2 rows whose feature values differ; this data has "
            f"{n_rows} row. Load a data file with more rows on the Model page.", icon=":material/info:")
    st.stop()

c1, c2, c3, c4, c5 = st.columns([2, 2, 1, 2, 1])
f1 = c1.selectbox("Feature", cols, **state.bind("pdp_f1", cols[0], options=cols))
seconds = ["(none)"] + [c for c in cols if c != f1]
f2 = c2.selectbox("Second feature (2D)", seconds, **state.bind("pdp_f2", "(none)", options=seconds))
two_d = f2 != "(none)"
grid = c3.number_input("Grid points", 2, 200, **state.bind("pdp_grid2" if two_d else "pdp_grid", 20 if two_d else 40,
                                                            valid=lambda v: 2 <= v <= 200))
lo, hi = c4.slider("Percentile range", 0, 100,
                   **state.bind("pdp_pct", (5, 95), valid=lambda v: 0 <= v[0] <= v[1] <= 100))
# bounds from the data: a small file has fewer rows than the usual least sample (50)
rows_hi = min(n_rows, 100_000)
rows_lo = min(50, rows_hi)
max_rows = int(c5.number_input("Rows", rows_lo, rows_hi, step=100 if rows_hi >= 1_000 else 10 if rows_hi >= 100 else 1,
                               help=f"A seeded sample of this many rows (of {n_rows:,}) lies behind the curves; "
                               "fewer rows, a faster first view.",
                               **state.bind("pdp_rows", min(n_rows, state.PDP_MAX_ROWS),
                                            valid=lambda v: rows_lo <= v <= rows_hi)))
features = (f1, f2) if two_d else (f1,)


def _ale_on_every_row() -> bool:
    """On a table larger than the ALE's sample: whether the user asked for the ALE of every row."""
    if not state.ale_sampled(ctx):
        return False
    return st.toggle(f"ALE on every row ({n_rows:,})",
                     help=f"The ALE starts from a seeded sample of {state.ale_rows(ctx):,} rows, which draws in "
                          "about a second; every row predicts each one at its bin's edges (a few seconds per "
                          "million rows and feature). A Stop (top right) ends the wait.",
                     **state.bind("pdp_ale_all", False, options=(True, False)))


def _ale_notice(all_rows: bool):
    return widgets.Working(f"ALE on every one of the {n_rows:,} rows…") if all_rows else None


ci = state.pdp_class(ctx)
seg = compared_segment(ctx)  # None: every row (a segment too small to compare says so)

try:
    with st.spinner("Computing partial dependence…"):
        res = state.pdp(ctx, features, int(grid), (lo / 100, hi / 100), max_rows)
except Exception as exc:
    widgets.show_error(exc)
    st.stop()
sample_res, pd_every = res, False  # the sample's result; the charts' (its average of every row, on request)
if max_rows < n_rows:
    pd_every = widgets.every_row_switch(
        "Partial dependence", n_rows, "pdp_every", lambda: state.pdp_every_row_seconds(ctx, sample_res),
        help="The curve (or map) averages over every row instead of the sample; the ICE curves stay the sample's. "
             "Tree models walk their trees (a few seconds per million rows); other models predict every row at "
             "each grid point. A Stop (top right) ends the wait.")
if pd_every:
    try:
        every = state.pdp_every_row(ctx, features, int(grid), (lo / 100, hi / 100),
                                    widgets.Working(f"Partial dependence of every one of the {n_rows:,} rows…"))
        res = replace(res, average=every.average)
    except Exception as exc:
        widgets.show_error(exc)
        pd_every = False

if seg is not None and two_d:
    st.info("The segment is compared with the rest for one feature: pick no second feature to see its curve "
            "against the rest's. Below, every row.", icon=":material/info:")
elif seg is not None:
    try:
        with st.spinner("Partial dependence of the segment and of the rest…"):
            seg_res, rest_res = pdp_by_segment(ctx, seg, f1, int(grid), (lo / 100, hi / 100), max_rows)
        st.plotly_chart(pdp_segment_figure(seg_res, rest_res, segment_name=seg.name, class_index=ci),
                        key="pdp_segment")
        st.caption(f"Segment {md(seg.name)}: {len(seg_res.row_indices):,} rows behind each point; the rest: "
                   f"{len(rest_res.row_indices):,}; on the grid of every row. Below, every row.")
    except Exception as exc:
        widgets.show_error(exc)

if two_d:
    o1, o2, o3 = st.columns(3)
    styles, empties = ["heatmap", "contour"], ["shade", "hide", "show"]
    style = o1.radio("Style", styles, horizontal=True, **state.bind("pdp_style", styles[0], options=styles))
    empty = o2.radio("Cells with no data", empties, horizontal=True,
                     help="The PDP averages over every row at every cell, including cells where no "
                          "real row lies: with correlated features those values are extrapolation.",
                     **state.bind("pdp_empty", empties[0], options=empties))
    points = o3.toggle("Overlay the data", **state.bind("pdp_points", False, options=(True, False)))
    fig = figures.pdp2d_figure(res, style=style, empty_cells=empty, class_index=ci,
                               points=state.sample_rows(ctx, 1_000)[list(features)] if points else None)
    if f1 in numeric and f2 in numeric:
        ale_all = _ale_on_every_row()
        left, right = st.columns(2)
        left.plotly_chart(fig, key="pdp_2d")
        with right:
            try:
                second = state.ale(ctx, features, 10, ale_all, _ale_notice(ale_all))
                st.plotly_chart(figures.ale2d_figure(second, class_index=ci, shade_empty=empty != "show",
                                                     reference=figures.pd_range(res, ci)), key="pdp_ale2d")
            except Exception as exc:
                widgets.show_error(exc)
        st.caption("The second-order ALE (right) shows the two features' interaction alone, from "
                   "changes within the data's own cells: each feature's own effect is removed, and "
                   "no row is moved to a corner where no data lies."
                   + (f" {state.ale_caption(ctx, ale_all)}" if state.ale_caption(ctx, ale_all) else ""))
    else:
        st.plotly_chart(fig, key="pdp_2d")
    st.caption(f"{int((res.counts == 0).sum())} of {res.counts.size} cells have no data rows behind them.")
else:
    o1, o2, o3, o4 = st.columns(4)
    show_ice = o1.toggle("ICE curves", **state.bind("pdp_ice", True, options=(True, False)))
    centered = o2.toggle("Centered ICE", **state.bind("pdp_centered", False, options=(True, False)))
    n_ice = o3.number_input("ICE lines", 1, 1_000, **state.bind("pdp_nice", 100, valid=lambda v: 1 <= v <= 1_000))
    colours = ["(none)"] + [c for c in cols if c != f1]
    colour = o4.selectbox("Colour ICE by", colours, **state.bind("pdp_colour", "(none)", options=colours))
    color_by = None if colour == "(none)" else (ctx.X[colour].to_numpy()[res.row_indices], colour)
    fig = figures.pdp_figure(res, centered=centered, show_ice=show_ice, max_ice_lines=int(n_ice),
                             color_by=color_by, class_index=ci)
    if f1 in numeric:
        ale_all = _ale_on_every_row()
        left, right = st.columns(2)
        left.plotly_chart(fig, key="pdp_1d")
        with right:
            try:
                st.plotly_chart(figures.ale_figure(state.ale(ctx, f1, 20, ale_all, _ale_notice(ale_all)),
                                                   class_index=ci), key="pdp_ale")
            except Exception as exc:
                widgets.show_error(exc)
        st.caption("ALE (right) accumulates local changes within the data's own bins, so unlike the "
                   "PDP it never evaluates the model on rows that cannot occur when features are correlated."
                   + (f" {state.ale_caption(ctx, ale_all)}" if state.ale_caption(ctx, ale_all) else ""))
    else:
        st.plotly_chart(fig, key="pdp_1d")
st.caption(f"Method: {res.method}; " + (
    f"the partial dependence of every one of the {n_rows:,} rows"
    + ("" if two_d else f", the ICE curves of a seeded sample of {len(sample_res.row_indices):,}") + "."
    if pd_every else f"{len(res.row_indices):,} rows behind each point."))
# the CSV is built when the button is clicked, not on every run of the page; a click does not rerun it
st.download_button("Download the values (CSV)", lambda: figures.pdp_to_csv(res, include_ice=not two_d).encode(),
                   file_name=file_name(f"pdp_{ctx.name}_{'_'.join(features)}.csv"), mime="text/csv",
                   on_click="ignore")
