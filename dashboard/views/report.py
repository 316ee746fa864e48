"""Report page: export the current views as one HTML file with interactive figures."""
import streamlit as st

from dashboard import figures, report, state

ctx = state.current()
st.title("Share a report")
st.caption("One self-contained HTML file (interactive figures, no Python needed) with the views "
           "chosen on the other pages.")

feature = st.session_state.get("pdp_f1", ctx.X.columns[0])
feature = feature if feature in ctx.X.columns else ctx.X.columns[0]
row = int(st.session_state.get("shap_row", 0))
row = row if 0 <= row < len(ctx.X) else 0
c1, c2, c3, c4 = st.columns(4)
want_summary = c1.checkbox("Model summary", True, key="rep_summary")
want_pdp = c2.checkbox(f"PDP / ICE of {feature}", True, key="rep_pdp")
want_shap = c3.checkbox(f"SHAP waterfall of row {row}", True, key="rep_shap")
want_imp = c4.checkbox("Importance comparison", True, key="rep_imp")

sections = []
bar = st.progress(0.0, text="Preparing the report…")
try:
    if want_summary:
        sections.append(report.Section("Features", "Types, ranges and missing values of the data.",
                                       table=state.feature_summary(ctx.data_key, ctx.X).set_index("feature")))
    bar.progress(0.25, text="Partial dependence…")
    ci = state.pdp_class(ctx)
    if want_pdp:
        res = state.pdp(ctx, (feature,), 40, (0.05, 0.95))
        sections.append(report.Section(f"Partial dependence and ICE: {feature}",
                                       "The bold line is the average effect; thin lines are single rows.",
                                       figure=figures.pdp_figure(res, class_index=ci)))
    bar.progress(0.5, text="SHAP…")
    if want_shap:
        sres = state.explain_row(ctx, row, "auto", ())
        sci = state.shap_class(sres, ctx)
        sections.append(report.Section(f"Why row {row} gets its prediction",
                                       state.additivity_line(sres, 0, sci),
                                       figure=figures.waterfall_figure(sres, 0, class_index=sci, max_display=12)))
    bar.progress(0.75, text="Importance…")
    if want_imp:
        results, skipped = state.importances(ctx, ["mdi", "oob", "permutation"], 5, 1_000, bar)
        if len(results) >= 2:
            comp = state.comparison(ctx.model_key, ctx.data_key, tuple(r.label for r in results), results, ctx.X)
            sections.append(report.Section("Variable importance, compared",
                                           " ".join(f"{r.label}: {r.description}" for r in results),
                                           figure=figures.importance_bars_figure(comp)))
        elif results:
            sections.append(report.Section("Variable importance", results[0].description,
                                           figure=figures.importance_bars_figure(results[0])))
except Exception as exc:
    bar.empty()
    state.show_error(exc)
    st.stop()
bar.empty()

summary = {"Model": ctx.card.get("model_type", ""), "Task": ctx.task, "Rows": f"{len(ctx.X):,}",
           "Features": ctx.X.shape[1]}
if ctx.classes:
    summary["Classes"] = ", ".join(ctx.classes)
if ctx.card.get("metric"):
    summary[ctx.card["metric"]["name"]] = f"{ctx.card['metric']['value']:.3f}"
html_doc = report.build_report(f"Glassbox — {ctx.title}", summary if want_summary else {}, sections)
st.download_button("Download the report (HTML)", html_doc.encode("utf-8"), type="primary",
                   file_name=f"glassbox_report_{ctx.name}.html", mime="text/html", key="rep_download")
st.caption(f"{len(sections)} section(s), {len(html_doc) / 1e6:.1f} MB (plotly.js is included once).")
