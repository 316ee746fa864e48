"""Compare page: the sidebar's model beside others, scored on the same rows."""
import streamlit as st

from dashboard import figures, state, widgets
from dashboard.figures import compare as cfig
from dashboard.safe_text import md
from dashboard.state import compare as cs
from dashboard.state.importance import importance_methods

cs.go_to_shap()  # a row's button below was pressed: its row on the SHAP page, with the chosen model
ctx = state.current()
st.title("Which model is better, and where?")
st.caption("The model picked in the sidebar beside others, on its rows: each metric's difference with a paired "
           "bootstrap interval (the same resampled rows for every model), the curves, the partial dependence and "
           "the importances, and the rows where the models disagree most.")
options = cs.candidates(ctx)
keys = list(options)
picked = st.multiselect("Compare with", keys, format_func=lambda k: options.get(k, k),
                        help="Other loaded models: the demos, the served ones, your upload. They are scored on the "
                             "sidebar model's rows; each needs the columns it was fitted on.",
                        **state.bind(cs.COMPARE_WITH, cs.default_pick(ctx, keys), options=keys))
if not picked:
    st.info("Pick one or more models to compare with the sidebar's model.", icon=":material/info:")
    st.stop()
seg = widgets.compared_segment(ctx)  # compare the models on a segment's rows
ctxs, problems = cs.contexts(ctx, picked)
for problem in problems:
    st.info(md(problem), icon=":material/info:")
if len(ctxs) < 2:
    st.stop()
if problem := cs.compare_problem(ctx, ctxs):
    st.info(md(problem), icon=":material/info:")
    st.stop()
rows, where = cs.scored_rows(ctx, ctxs, None if seg is None else seg.rows, "" if seg is None else md(seg.name))
try:
    with st.spinner(f"Scoring {len(ctxs)} models on {where} ({cs.N_BOOT:,} paired bootstrap replicates)…"):
        cmp = cs.comparison(ctx, ctxs, rows)
except Exception as exc:
    widgets.show_error(exc)
    st.stop()

st.subheader("Scores")
st.caption(f"Scored on {where}: {cmp.params.get('n_rows', 0):,} rows with a target.")
widgets.table(cs.metrics_frame(cmp), key="compare_metrics", hide_index=True)
for note in cmp.notes:
    st.caption(md(note))
st.plotly_chart(cfig.differences_figure(cmp.differences, cs.METRIC_LABELS), key="compare_differences")
real = cmp.differences[cmp.differences["significant"]]
st.markdown(cs.verdict(cmp, real))
if caption := cs.mcnemar_caption(cmp):
    st.caption(md(caption))

quality = cs.qualities(ctxs, rows)
if ctx.task == "regression":
    st.plotly_chart(cfig.predicted_actual_overlay_figure(quality, target=ctx.card.get("target") or "target"),
                    key="compare_pred_actual")
else:
    ci = state.class_index(ctx)
    c1, c2 = st.columns(2)
    c1.plotly_chart(cfig.roc_overlay_figure(quality, class_index=ci), key="compare_roc")
    c2.plotly_chart(cfig.pr_overlay_figure(quality, class_index=ci), key="compare_pr")

st.subheader("Partial dependence, one grid")
names = [c for c in ctx.X.columns if all(c in other.X.columns for other in ctxs.values())]
feature = st.selectbox("Feature", names, **state.bind("compare_feature", names[0], options=names))
try:
    curves, label = cs.pdp_curves(ctx, ctxs, feature)
except Exception as exc:
    widgets.show_error(exc)
else:
    st.plotly_chart(cfig.pdp_overlay_figure(curves, feature, label), key="compare_pdp")

st.subheader("Importance")
methods = [m for m in importance_methods(ctx, with_shap=True) if m in ("permutation", "shap")]
with st.spinner("Measuring how long the models take…"):
    try:
        cost = cs.importances_cost(ctxs, methods)
    except Exception:  # noqa: BLE001 - the computation itself will say what is wrong
        cost = 0.0
approved = st.session_state.get("compare_imp_go") == tuple(c.key for c in ctxs.values())
if cost > state.SLOW_VIEW_S and not approved:
    st.warning(f"The importances of {len(ctxs)} models take about **{state.fmt_seconds(cost)}** (measured on a few "
               "rows; fewer rows or repeats on the Importance page's settings make it shorter).",
               icon=":material/timer:")
    st.button("Compute anyway", key="compare_imp_button", on_click=st.session_state.__setitem__,
              args=("compare_imp_go", tuple(c.key for c in ctxs.values())))
    results, skipped = [], []
else:
    bar = st.progress(0.0, text="Importances…")
    results, skipped = cs.importances(ctxs, methods, bar)
    bar.empty()
for label, reason in skipped:
    st.caption(f"**{md(label)}** not shown: {md(reason)}")
if len(results) >= 2:
    comp = cs.importance_comparison(ctx, results)
    st.plotly_chart(figures.importance_bars_figure(comp, title="Importance of each model (15 largest)", top_k=15),
                    key="compare_imp")
    st.plotly_chart(figures.agreement_heatmap_figure(comp), key="compare_agree")

st.subheader("Where they disagree most")
table = cs.disagreement_frame(cmp, ctx)
st.caption(cs.disagreement_caption(ctx))
widgets.table(table, key="compare_disagree", hide_index=True)
if len(table):
    listed = table.row.tolist()
    c1, c2 = st.columns([1, 2])
    row = c1.selectbox("Row", listed, key="compare_row")
    openable = cs.openable(ctx, ctxs)
    who = c2.radio("Open on the SHAP page with", list(openable), horizontal=True, key="compare_open_with")
    st.button(f"Open row {row} on the SHAP page", icon=":material/waterfall_chart:", key="compare_open",
              on_click=cs.open_on_shap, args=(openable[who], int(row)))
