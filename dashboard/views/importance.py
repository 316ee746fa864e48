"""Importance page: every available method side by side, and where they disagree."""
import streamlit as st

from dashboard import figures, messages, state, widgets
from dashboard.safe_text import csv_text, file_name, md
from dashboard.figures.importance import segment_importance_figure
from dashboard.state.importance import (IMPORTANCE_MAX_ROWS, IMPORTANCE_ROWS, SCORING, importance_methods,
                                        importances_by_segment, left_out_notices, scoring_choices, scoring_label)
from dashboard.widgets import compared_segment

ctx = state.current()
st.title("Which features matter?")
st.caption("Each method answers a different question; where they disagree, the reason is named.")
seg = compared_segment(ctx)  # None: every row (a segment too small to compare says so)

default_shap = state.shap_is_fast(ctx)
with st.spinner("Measuring how long the model takes…"):
    try:  # the first view: as many rows as fit in about 3 s with the default settings
        start_rows = state.default_importance_rows(ctx, importance_methods(ctx, default_shap))
    except Exception:  # noqa: BLE001 - the computation itself will say what is wrong
        start_rows = IMPORTANCE_ROWS
with st.expander("Settings", expanded=False):
    c1, c2, c3, c4 = st.columns(4)
    n_repeats = c1.number_input("Permutation repeats", 1, 50, **state.bind("imp_repeats", 5, valid=lambda v: 1 <= v <= 50))
    most = max(IMPORTANCE_MAX_ROWS, len(ctx.X))  # a large table: every row, on request
    max_rows = c2.number_input("Rows used (permutation, SHAP)", 50, most, step=50,
                               help="A seeded sample bounds the time of the slow methods.",
                               **state.bind("imp_rows", start_rows, valid=lambda v: 50 <= v <= most))
    with_shap = c3.checkbox("Include mean |SHAP|", help="On by default where SHAP is fast (linear and tree models).",
                            **state.bind("imp_shap", default_shap, options=(True, False)))
    scorings = scoring_choices(ctx)
    c4.selectbox("Permutation scored by", scorings, format_func=scoring_label,
                 help="How much this score drops when a feature's values are shuffled. Log loss and R² weigh "
                      "every row's prediction; accuracy barely moves when one class is rare.",
                 **state.bind(SCORING, scorings[0], options=scorings))

# MDI, or for a model read from an XGBoost / LightGBM / CatBoost file that library's gain, cover, split count
methods = importance_methods(ctx, with_shap)
with st.spinner("Measuring how long the model takes…"):
    try:
        cost, fits = state.importance_cost(ctx, methods, int(n_repeats), int(max_rows))
    except Exception:  # noqa: BLE001 - the computation itself will say what is wrong
        cost, fits = 0.0, int(max_rows)
if cost > state.SLOW_VIEW_S and not st.session_state.get("imp_go_for") == (ctx.key, int(n_repeats), int(max_rows)):
    fewer = (f"About {fits:,} rows take {state.fmt_seconds(state.SLOW_VIEW_S)}." if fits >= 50 else
             "Fewer permutation repeats, or leaving out mean |SHAP|, make it shorter.")
    st.warning(f"With {int(max_rows):,} rows and {int(n_repeats)} permutation repeats this takes about "
               f"**{state.fmt_seconds(cost)}** (measured on a few rows). {fewer}", icon=":material/timer:")
    c1, c2 = st.columns(2)
    if fits >= 50:
        c1.button(f"Use {fits:,} rows", key="imp_fewer", on_click=state.set_value, args=("imp_rows", fits))
    c2.button("Compute anyway", key="imp_go", on_click=st.session_state.__setitem__,
              args=("imp_go_for", (ctx.key, int(n_repeats), int(max_rows))))
    st.stop()
if int(max_rows) == start_rows < IMPORTANCE_ROWS:
    st.caption(f"Permutation and SHAP started on {start_rows:,} rows, which take about "
               f"{state.fmt_seconds(state.START_VIEW_S)} for this model; {IMPORTANCE_ROWS:,} give steadier numbers.")
    st.button(f"Use {IMPORTANCE_ROWS:,} rows", key="imp_more", on_click=state.set_value,
              args=("imp_rows", IMPORTANCE_ROWS))
if IMPORTANCE_ROWS <= int(max_rows) < len(ctx.X):  # a sample of a larger table: every row is offered
    try:
        every_s, _ = state.importance_cost(ctx, methods, int(n_repeats), len(ctx.X), with_fits=False)
    except Exception:  # noqa: BLE001 - the computation itself will say what is wrong
        every_s = None
    e1, e2 = st.columns([3, 1])
    e1.caption(f"Permutation and SHAP use a seeded sample of {int(max_rows):,} of the {len(ctx.X):,} rows"
               + (f"; every row takes about {state.fmt_seconds(every_s)}" if every_s else "")
               + ", with progress, and Stop (top right) ends it.")
    e2.button(f"Use every row ({len(ctx.X):,})", key="imp_every", on_click=state.set_value,
              args=("imp_rows", len(ctx.X)))
bar = st.progress(0.0, text="Computing importances…")
results, skipped = state.importances(ctx, methods, int(n_repeats), int(max_rows), bar, page="importance")
bar.empty()
for label, reason in skipped:
    st.caption(f"**{md(label)}** not shown: {md(reason)}")
if not results:
    st.warning("No importance method applies to this model and data; see the reasons above.")
    st.stop()

for r in results:
    st.markdown(f"- **{md(r.label)}** — {md(r.description)}")
for notice in left_out_notices(results):  # rows with an empty target: scored without them
    st.info(md(notice), icon=":material/info:")

comp = None
if len(results) >= 2:
    try:
        comp = state.comparison(ctx.model_key, ctx.data_key, tuple(r.label for r in results), results, ctx.X)
    except Exception as exc:  # e.g. MDI of a Pipeline names the encoded columns, not the data's
        st.error(md(messages.for_page(exc, "importance")), icon=":material/error:")
if comp is not None:
    sorts = ["mean of methods"] + comp.methods
    sort_by = st.selectbox("Sort by", sorts, **state.bind("imp_sort", sorts[0], options=sorts))
    st.plotly_chart(figures.importance_bars_figure(comp, sort_by=None if sort_by == "mean of methods" else sort_by),
                    key="imp_bars")
    left, right = st.columns(2)
    with left:
        st.subheader("Shares and ranks")
        widgets.table(comp.table, width="stretch")
        st.download_button("Download the table (CSV)", csv_text(comp.table).encode(),
                           file_name=file_name(f"importance_{ctx.name}.csv"), mime="text/csv")
    with right:
        kinds = ["spearman", "kendall"]
        kind = st.radio("Rank agreement", kinds, horizontal=True, **state.bind("imp_agree", kinds[0], options=kinds))
        st.plotly_chart(figures.agreement_heatmap_figure(comp, kind=kind), key="imp_heat")
    if len(comp.flags):
        st.subheader("Where the methods disagree")
        for _, f in comp.flags.iterrows():
            st.markdown(f"- **{md(f['feature'])}** ({md(f['reason'].replace('_', ' '))}): {md(f['detail'])}")
    for note in comp.notes:
        st.caption(md(note))
else:  # one method, or methods that cannot be compared: each on its own
    for i, r in enumerate(results):
        st.plotly_chart(figures.importance_bars_figure(r, title=None if len(results) == 1 else r.label),
                        key="imp_bars" if i == 0 else f"imp_bars_{i}")
        st.download_button("Download (CSV)" if len(results) == 1 else f"Download {md(r.label)} (CSV)",
                           csv_text(r.to_frame()).encode(), key=f"imp_csv_{i}", mime="text/csv",
                           file_name=file_name(f"importance_{ctx.name}" + ("" if i == 0 else f"_{r.method}") + ".csv"))

if seg is not None:
    st.subheader(f"Segment {md(seg.name)} against the rest")
    st.caption("Holdout permutation and mean |SHAP| computed on the segment's rows and on the rest's, with the "
               "settings above; MDI and out-of-bag importance read the training split, not a segment.")
    bar = st.progress(0.0, text="Importance of the segment and of the rest…")
    pairs, skipped = importances_by_segment(ctx, seg, methods, int(n_repeats), int(max_rows), bar)
    bar.empty()
    for label, reason in skipped:
        st.caption(f"**{md(label)}** of the segment not shown: {md(reason)}")
    for i, (seg_res, rest_res) in enumerate(pairs):
        st.plotly_chart(segment_importance_figure(seg_res, rest_res, segment_name=seg.name), key=f"imp_segment_{i}")
