"""Importance page: every available method side by side, and where they disagree."""
import streamlit as st

from dashboard import figures, state

ctx = state.current()
st.title("Which features matter?")
st.caption("Each method answers a different question; where they disagree, the reason is named.")

with st.expander("Settings", expanded=False):
    c1, c2, c3 = st.columns(3)
    n_repeats = c1.number_input("Permutation repeats", 1, 50, 5, key="imp_repeats")
    max_rows = c2.number_input("Rows used (permutation, SHAP)", 50, 20_000, 1_000, step=50, key="imp_rows",
                               help="A seeded sample bounds the time of the slow methods.")
    with_shap = c3.checkbox("Include mean |SHAP|", value=state.shap_is_fast(ctx), key="imp_shap",
                            help="On by default where SHAP is fast (linear and tree models).")

methods = ["mdi", "oob", "permutation"] + (["shap"] if with_shap else [])
bar = st.progress(0.0, text="Computing importances…")
results, skipped = state.importances(ctx, methods, int(n_repeats), int(max_rows), bar)
bar.empty()
for label, reason in skipped:
    st.caption(f"**{label}** not shown: {reason}")
if not results:
    st.warning("No importance method applies to this model and data; see the reasons above.")
    st.stop()

for r in results:
    st.markdown(f"- **{r.label}** — {r.description}")

if len(results) >= 2:
    comp = state.comparison(ctx.model_key, ctx.data_key, tuple(r.label for r in results), results, ctx.X)
    state.valid_choice("imp_sort", ["mean of methods"] + comp.methods)
    sort_by = st.selectbox("Sort by", ["mean of methods"] + comp.methods, key="imp_sort")
    st.plotly_chart(figures.importance_bars_figure(comp, sort_by=None if sort_by == "mean of methods" else sort_by),
                    key="imp_bars")
    left, right = st.columns(2)
    with left:
        st.subheader("Shares and ranks")
        st.dataframe(comp.table, width="stretch")
        st.download_button("Download the table (CSV)", comp.table.to_csv().encode(),
                           file_name=f"importance_{ctx.name}.csv", mime="text/csv")
    with right:
        kind = st.radio("Rank agreement", ["spearman", "kendall"], horizontal=True, key="imp_agree")
        st.plotly_chart(figures.agreement_heatmap_figure(comp, kind=kind), key="imp_heat")
    if len(comp.flags):
        st.subheader("Where the methods disagree")
        for _, f in comp.flags.iterrows():
            st.markdown(f"- **{f['feature']}** ({f['reason'].replace('_', ' ')}): {f['detail']}")
    for note in comp.notes:
        st.caption(note)
else:
    st.plotly_chart(figures.importance_bars_figure(results[0]), key="imp_bars")
    st.download_button("Download (CSV)", results[0].to_frame().to_csv().encode(),
                       file_name=f"importance_{ctx.name}.csv", mime="text/csv")
