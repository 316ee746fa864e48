"""Report page: export the current views as one HTML file with interactive figures."""
import streamlit as st

from dashboard import state
from dashboard.safe_text import file_name, md

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
want_pdp = c2.checkbox(f"PDP / ICE of {md(feature)}", True, key="rep_pdp")
want_shap = c3.checkbox(f"SHAP waterfall of row {row}", True, key="rep_shap")
want_imp = c4.checkbox("Importance comparison", True, key="rep_imp")

bar = st.progress(0.0, text="Preparing the report…")
try:
    html_doc, n_sections = state.report_html(ctx, feature, row, (want_summary, want_pdp, want_shap, want_imp), bar)
except Exception as exc:
    bar.empty()
    state.show_error(exc)
    st.stop()
bar.empty()
st.download_button("Download the report (HTML)", html_doc.encode("utf-8"), type="primary",
                   file_name=file_name(f"glassbox_report_{ctx.name}.html"), mime="text/html",
                   key="rep_download")
st.caption(f"{n_sections} section(s), {len(html_doc) / 1e6:.1f} MB (plotly.js is included once).")
