"""Quality page: how good the model is on its data, and which rows it gets wrong."""
import streamlit as st

from dashboard import state, widgets
from dashboard.figures import quality as qfig
from dashboard.safe_text import md
from dashboard.state import quality as qs
from dashboard.widgets import compared_segment, threshold_slider

qs.go_to_shap()  # the button below was pressed: its row on the SHAP page
ctx = state.current()
st.title("How good is the model?")
if problem := qs.quality_problem(ctx):
    st.info(problem, icon=":material/info:")
    st.stop()

classifier = ctx.task != "regression"
margin = qs.on_margin(ctx)
if margin:
    st.caption("This classifier gives no probabilities: it is scored on its own predictions, and its curves "
               "rank rows by its decision function (margin). Log loss, the Brier score and calibration need "
               "probabilities, so they are not shown.")
if ctx.task == "binary" and not margin:
    pos = state.class_index(ctx)
    st.caption(f"A row is predicted **{md(ctx.classes[pos])}** when its probability of that class is at least "
               "the threshold (the class is the one picked in the sidebar).")
    t = threshold_slider()
else:
    t = None
seg = compared_segment(ctx)  # None: every row (a segment too small to compare says so)
try:
    q = qs.model_quality(ctx, t)
except Exception as exc:
    widgets.show_error(exc)
    st.stop()
left_out = [f"{q.n_left_out:,} row(s) without a target" if q.n_left_out else "",
            f"{q.n_unknown:,} row(s) whose target is not a class of the model" if getattr(q, "n_unknown", 0) else ""]
if any(left_out):
    st.caption(f"Scored on {len(q.rows):,} rows; left out: {'; '.join(s for s in left_out if s)}.")

m = q.metrics
shown = qs.shown_metrics(ctx)
for col, (label, key) in zip(st.columns(len(shown)), shown.items()):
    col.metric(label, qs.metric_text(key, m[key]))
if ctx.task == "multiclass":
    widgets.table(qs.class_frame(q), hide_index=True, key="quality_per_class")
if not classifier and m["mape"] is None:
    st.caption("MAPE is not defined: some targets are 0.")
if seg is not None:
    st.subheader(f"Segment {md(seg.name)} against the rest")
    try:
        q_seg, q_rest = qs.segment_quality(ctx, seg, t)
    except Exception as exc:
        widgets.show_error(exc)
    else:
        table = qs.segment_metrics_frame(q_seg, q_rest, shown, seg.name)
        widgets.table(table, key="quality_segment_metrics",
                     column_config={c: st.column_config.NumberColumn(format="%.4g") for c in table.columns})
        st.plotly_chart(qfig.confusion_segment_figure(q_seg, q_rest, segment_name=seg.name) if classifier else
                        qfig.predicted_actual_segment_figure(q_seg, q_rest, segment_name=seg.name,
                                                             target=ctx.card.get("target") or "target"),
                        key="quality_segment_figure")

st.subheader("Show me the rows")
if classifier:
    cells = qs.cell_options(q)
    k = len(q.classes)

    def _on_click():
        event = st.session_state.get("quality_confusion")
        points = getattr(getattr(event, "selection", None), "points", None) if event is not None else None
        if points is None and isinstance(event, dict):
            points = event.get("selection", {}).get("points")
        if (cell := qfig.cell_from_selection(points, k)) is not None:
            state.set_value("quality_cell", cell)

    left, right = st.columns([2, 3])
    picked = state.value("quality_cell") if state.value("quality_cell") in cells else cells[0]
    left.plotly_chart(qfig.confusion_figure(q, highlight=picked), key="quality_confusion", on_select=_on_click,
                      selection_mode="points")
    # the labels carry each cell's count at this threshold: the box is drawn again with them on every run
    cell = right.selectbox("Cell of the confusion matrix (or click one)", cells, format_func=lambda c: qs.cell_label(q, c),
                           **state.bind("quality_cell", cells[0], options=cells))
    rows = qs.cell_rows(q, cell)
else:
    bands = qs.residual_bands(q)
    options = list(range(len(bands)))
    right = st
    band = st.selectbox("Residual band", options, format_func=lambda i: qs.band_label(bands.iloc[i]),
                        **state.bind("quality_band", options[-1], options=options))
    lo, hi = bands.low[band], bands.high[band]
    rows = qs.band_rows(q, lo, hi)
shown_rows = rows.head(qs.MAX_LISTED)
right.caption(qs.rows_count(len(rows)) + (f", the {qs.MAX_LISTED} largest errors shown" if len(rows) > qs.MAX_LISTED
                                       else "") + ", largest error first.")
widgets.table(shown_rows, right, hide_index=True, key="quality_rows_table")
if len(rows):
    o1, o2 = right.columns([1, 1])
    listed = shown_rows.row.tolist()
    row = o1.selectbox("Row", listed, **state.bind("quality_open_row", listed[0], options=listed))
    o2.button("Open this row on the SHAP page", key="quality_open", icon=":material/waterfall_chart:",
              on_click=qs.prepare_shap, args=(row,))

if classifier:
    st.subheader("Curves")
    c1, c2 = st.columns(2)
    c1.plotly_chart(qfig.roc_figure(q), key="quality_roc")
    c2.plotly_chart(qfig.pr_figure(q), key="quality_pr")
    c3, c4 = st.columns(2)
    if margin:
        c3.info("Calibration compares probabilities with how often each class occurs; this model gives no "
                "probabilities (only a decision function), so there is nothing to calibrate.",
                icon=":material/info:")
    else:
        c3.plotly_chart(qfig.calibration_figure(q), key="quality_calibration")
    c4.plotly_chart(qfig.gains_figure(q), key="quality_gains")
else:
    st.subheader("Predictions and residuals")
    target = ctx.card.get("target") or "target"
    c1, c2 = st.columns(2)
    c1.plotly_chart(qfig.predicted_actual_figure(q, target=target), key="quality_pred_actual")
    c2.plotly_chart(qfig.residuals_figure(q, band=(lo, hi)), key="quality_resid_pred")
    c3, c4 = st.columns(2)
    names = list(ctx.X.columns)
    feature = c3.selectbox("Residuals against", names, **state.bind("quality_feature", names[0], options=names))
    c3.plotly_chart(qfig.residuals_figure(q, qs.residual_feature(ctx, q, feature), x_name=feature, band=(lo, hi)),
                    key="quality_resid_feature")
    c4.plotly_chart(qfig.residual_histogram_figure(q), key="quality_resid_hist")
    widgets.table(qs.quantile_frame(q), c4, hide_index=True)
