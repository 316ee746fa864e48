"""SHAP page: why one row gets its prediction, and which features drive many rows."""
import streamlit as st

from dashboard import figures, messages, state, widgets
from dashboard.figures.style import fmt_number
from dashboard.safe_text import code, csv_text, file_name, md
from dashboard.figures.shap import mean_abs_segment_figure
from dashboard.state.attribution import attributions_frame, shap_sample_by_segment
from dashboard.widgets import Working, compared_segment


def show_error(exc: BaseException) -> None:
    """The exception in this page's words (what to click here), shown literally."""
    st.error(md(messages.for_page(exc, "shap")), icon=":material/error:")


def every_row_view(ctx, method: str, glob, gci) -> None:
    """On request, the mean |SHAP| of every row of the table (the charts above: the sample's)."""
    from dashboard.state.every_row import every_row_seconds, mean_abs_every_row, rows_added

    n = len(ctx.X)
    if not widgets.every_row_switch(
            "Mean |SHAP|", n, "shap_every", lambda: every_row_seconds(ctx, method, glob.output),
            rows_added(ctx, method, glob.output),
            help="Adds up every row's |SHAP value| block by block, with progress. A Stop (top right) keeps the "
                 "rows done so far: turning it on again goes on from there."):
        return
    bar = st.progress(0.0, text="Explaining every row…")
    try:
        every = mean_abs_every_row(ctx, method, glob.output, state.ProgressBar(bar, "Rows explained"))
    except Exception as exc:
        bar.empty()
        show_error(exc)
        return
    bar.empty()
    if every.params.get("scale_note"):
        st.info(every.params["scale_note"], icon=":material/info:")
    st.plotly_chart(figures.mean_abs_figure(every, class_index=gci if every.n_outputs == glob.n_outputs else None),
                    key="shap_meanabs_every")
    st.caption(f"Mean |SHAP value| of every one of the {n:,} rows; the charts above show the sample of "
               f"{len(glob.values):,}.")


ctx = state.current()
st.title("Why this prediction?")

c1, c2, c3 = st.columns([2, 2, 1])
method = c3.selectbox("Method", state.SHAP_METHODS, **state.bind("shap_method", "auto", options=state.SHAP_METHODS))
output, _ = state.shap_setting(ctx, method)  # the sidebar's Scale, as this method can give it
picks = (["index", "highest prediction", "lowest prediction"]
         + (["largest error"] if state.row_errors_listed(ctx, state.class_index(ctx)) else []))
pick_by = c1.radio("Pick a row by", picks, horizontal=True, **state.bind("shap_pick", "index", options=picks))
last = len(ctx.X) - 1
if pick_by == "index":  # every row's prediction is needed only to sort them
    row = int(c2.number_input(f"Row (0 – {last})", 0, last, **state.bind("shap_row", 0, valid=lambda v: 0 <= v <= last)))
else:
    table = state.row_table(ctx.model_key, ctx.data_key, state.class_index(ctx), ctx,
                            notice=Working("Predicting every row…"), output=output)
    col, asc = {"highest prediction": ("prediction", False), "lowest prediction": ("prediction", True),
                "largest error": ("error", False)}[pick_by]
    top = table.sort_values(col, ascending=asc, kind="stable").head(50).row.tolist()
    row = int(c2.selectbox("Row", top, format_func=lambda r: f"row {r}: prediction {fmt_number(table.prediction[r])}"
                           + (f", error {fmt_number(table.error[r])}" if "error" in table else ""),
                           **state.bind("shap_row_sorted", top[0], options=top)))
masked = st.multiselect("Treat as missing", list(ctx.X.columns),
                        help="A missing feature leaves the game: it gets exactly 0 and the prediction "
                             "is averaged over the background for it.",
                        **state.bind("shap_mask", [], options=list(ctx.X.columns)))
empty_missing = widgets.empty_cells_toggle(ctx, "shap_empty_missing")
views = ["waterfall", "force"]
view = st.radio("View", views, horizontal=True, **state.bind("shap_view", views[0], options=views))

try:
    # a worker thread computes; the page shows that it runs (and Stop works) meanwhile
    res = state.explain_row(ctx, row, method, tuple(masked), notice=Working(f"Explaining row {row}…"),
                            empty_as_missing=empty_missing)
    full = (state.explain_row(ctx, row, method, (), notice=Working(f"Explaining row {row} without masks…"),
                              empty_as_missing=empty_missing)
            if masked else res)
except Exception as exc:
    show_error(exc)
    st.stop()
if res.params.get("scale_fallback") and state.shap_setting(ctx, method)[0] != output:
    st.rerun()  # the row picker listed probabilities: draw it again on the scale the chart is on
ci = state.shap_class(res, ctx)
if res.params.get("scale_note"):
    st.info(res.params["scale_note"], icon=":material/info:")
draw = figures.waterfall_figure if view == "waterfall" else figures.force_figure
st.plotly_chart(draw(res, 0, class_index=ci, max_display=12, row_label=row), key="shap_local")
st.markdown(f"**{state.additivity_line(res, 0, ci)}**")
if (label := state.predicted_label(ctx, row)) is not None:
    st.caption(f"Predicted class of row {row}: **{md(label)}** (the model's own prediction).")
widgets.empty_cells_caption(ctx, res, row, empty_missing)
if masked:
    pick = (lambda a: float(a[0])) if ci is None else (lambda a: float(a[0, ci]))
    scale = max(abs(pick(full.predictions)), abs(pick(res.predictions)))
    st.markdown(f"Full prediction f(x) = {fmt_number(pick(full.predictions), scale, digits=6)} · with "
                f"{md(', '.join(masked))} missing: f_S(x_S) = {fmt_number(pick(res.predictions), scale, digits=6)}")
st.caption(f"Method: {res.method} ({md(messages.reason(res.params.get('reason', ''), 'shap'))}); "
           f"output: {res.output}.")
row_frame = res.to_frame().assign(row=row)  # the row of the data, not 0 of this one-row result
st.download_button("Download this row's attributions (CSV)", csv_text(row_frame, index=False).encode(),
                   file_name=file_name(f"shap_{ctx.name}_row{row}.csv"), mime="text/csv")

st.divider()
st.subheader("Across many rows")
roots = state.batch_roots()  # the operator's folders for batch runs; none: the option is off
if roots:
    sources = ["a sample of the data", "a precomputed batch run"]
    source = st.radio("Attributions from", sources, horizontal=True,
                      **state.bind("shap_source", sources[0], options=sources), help="A batch run (`python -m explainers batch --out FOLDER`) covers "
                      "every row of a large file; the page shows a seeded sample of it.")
else:
    source = "a sample of the data"
    st.caption("Attributions from a precomputed batch run are off on this server: the operator turns them "
               f"on by naming the folders they may be read from, with `-- {state.BATCH_ROOT_FLAG} FOLDER` "
               f"at start (repeatable) or `{state.BATCH_ROOTS_ENV}`.")
g1, g2 = st.columns(2)
n_rows = int(g1.number_input("Rows in the sample", 10, 20_000, step=10,
                             **state.bind("shap_n", state.default_shap_rows(ctx, method, output),
                                          valid=lambda v: 10 <= v <= 20_000)))
if source == "a sample of the data":
    with st.spinner("Measuring how long a row takes…"):
        try:
            cost, fits = state.sample_cost(ctx, method, n_rows, output)
        except Exception:  # noqa: BLE001 - the run itself will say what is wrong
            cost, fits = 0.0, n_rows
    if cost > state.SLOW_VIEW_S:
        st.warning(f"Explaining {min(n_rows, len(ctx.X)):,} rows with this method takes about **{state.fmt_seconds(cost)}** "
                   f"(measured on a few rows). About {fits:,} rows take {state.fmt_seconds(state.SLOW_VIEW_S)}; "
                   "rows already explained are kept when you change the number.", icon=":material/timer:")
        st.button(f"Use {fits:,} rows", key="shap_fewer", on_click=state.set_value, args=("shap_n", fits))
    elif cost > 0:
        st.caption(f"About {state.fmt_seconds(cost)} for the rows not explained yet.")
    show = g2.toggle("Show the global view", **state.bind("shap_global", False, options=(True, False)),
                     help="Beeswarm, mean |SHAP| and dependence over the sample: about 0.1 s for "
                          "tree and linear models, longer for exact and kernel SHAP (the estimate is shown).")
else:
    folder = g2.text_input("Batch output folder on this server", **state.bind("shap_batch_dir", ""),
                           placeholder=f"e.g. {roots[0]}/shap_out",
                           help="The --out folder of a finished batch run, inside "
                                + " or ".join(code(r) for r in roots) + ".")
    show = bool(folder)
if show:
    bar = st.progress(0.0, text="Explaining the sample…")
    try:
        if source == "a sample of the data":
            glob = state.explain_sample(ctx, n_rows, method, state.ProgressBar(bar, "Rows explained"))
        else:
            glob, same_model = state.precomputed_attributions(ctx, folder, n_rows)
            total = glob.params.get("n_rows_total", len(glob.values))
            st.caption(f"{len(glob.values):,} of {total:,} precomputed rows ({glob.method}).")
            if not same_model:
                st.warning("This batch run was computed for another model file than the one chosen here.")
    except Exception as exc:
        bar.empty()
        show_error(exc)
        st.stop()
    bar.empty()
    gci = state.shap_class(glob, ctx)
    if glob.params.get("scale_note"):
        st.info(glob.params["scale_note"], icon=":material/info:")
    left, right = st.columns(2)
    left.plotly_chart(figures.beeswarm_figure(glob, class_index=gci), key="shap_beeswarm")
    right.plotly_chart(figures.mean_abs_figure(glob, class_index=gci), key="shap_meanabs")
    if source == "a sample of the data" and len(glob.values) < len(ctx.X):  # a sample of a larger table
        every_row_view(ctx, method, glob, gci)
    seg = compared_segment(ctx)  # None: every row (a segment too small to compare says so)
    if seg is not None and source != "a sample of the data":
        st.caption("The segment is compared with the rest on a sample of the data: pick it under "
                   "*Attributions from*.")
    elif seg is not None:
        parts = shap_sample_by_segment(ctx, seg, n_rows, method, glob)
        if parts.problem:
            st.info(parts.problem, icon=":material/info:")
        else:
            st.plotly_chart(mean_abs_segment_figure(parts.segment, parts.rest, segment_name=seg.name,
                                                    class_index=gci), key="shap_meanabs_segment")
            st.caption(f"Of the {len(glob.values):,} rows in the sample, {parts.n_segment:,} are in the segment "
                       f"{md(seg.name)} and {parts.n_rest:,} in the rest.")
    d1, d2 = st.columns(2)
    strongest = "(strongest interaction)"
    names = list(glob.feature_names)
    colour_options = ["(none)", strongest] + names
    feat = d1.selectbox("Dependence of", names, **state.bind("shap_dep", names[0], options=names))
    colour = d2.selectbox("Coloured by", colour_options, **state.bind("shap_dep_col", "(none)", options=colour_options),
                          help="(strongest interaction): the feature whose interaction with this one is largest.")
    if colour == strongest:
        try:
            colour = state.strongest_partner(ctx, feat)
        except Exception:  # noqa: BLE001 - no interaction values for this model: plain dots
            colour = None
        st.caption(f"Coloured by {md(colour)}, the feature that interacts most with {md(feat)}." if colour
                   else f"No feature interacts with {md(feat)}: the dots are not coloured.")
    st.plotly_chart(figures.dependence_figure(glob, feat, None if colour in (None, "(none)") else colour,
                                              class_index=gci), key="shap_dependence")
    st.download_button("Download the sample's attributions (CSV)",
                       csv_text(attributions_frame(glob), index=False).encode(),
                       file_name=file_name(f"shap_{ctx.name}_sample.csv"), mime="text/csv")
