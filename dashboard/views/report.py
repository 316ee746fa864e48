"""Report page: export the current views as one HTML file with interactive figures.

Before the download the page says what the file will hold (each part's title and
what it shows) and, for every ticked part left out, why.
"""
import streamlit as st
import streamlit.components.v1 as components

from dashboard import state, widgets
from dashboard.safe_text import file_name, md

ctx = state.current()
st.title("Share a report")
st.caption("One self-contained HTML file (interactive figures, no Python needed) with the views "
           "chosen on the other pages.")

#: the SHAP page's ways of picking a row other than by its index: (column, ascending)
_SORTED_PICKS = {"highest prediction": ("prediction", False), "lowest prediction": ("prediction", True),
                 "largest error": ("error", False)}


def shap_page_row() -> int:
    """The row the SHAP page shows: picked by index, or from its sorted list (the same rules as that page)."""
    spec = _SORTED_PICKS.get(state.value("shap_pick", "index"))
    if spec is not None:
        table = state.row_table(ctx.model_key, ctx.data_key, state.class_index(ctx), ctx)
        if spec[0] in table:
            top = table.sort_values(spec[0], ascending=spec[1], kind="stable").head(50).row.tolist()
            picked = state.value("shap_row_sorted")
            return int(picked) if picked in top else int(top[0])
    picked = state.value("shap_row", 0)
    try:
        picked = int(picked)
    except (TypeError, ValueError):
        return 0
    return picked if 0 <= picked < len(ctx.X) else 0


feature = state.value("pdp_f1", ctx.X.columns[0])
feature = feature if feature in ctx.X.columns else ctx.X.columns[0]
row = shap_page_row()
c1, c6, c2, c3, c4, c5 = st.columns(6)
TICKS = (True, False)
want_summary = c1.checkbox("Model summary", **state.bind("rep_summary", True, options=TICKS))
want_quality = c6.checkbox("Model quality", help="The Quality page's metrics (at its threshold, for a binary "
                           "classifier).", **state.bind("rep_quality", True, options=TICKS))
want_pdp = c2.checkbox(f"PDP / ICE of {md(feature)}", help="The feature picked on the PDP / ICE / ALE page.",
                       **state.bind("rep_pdp", True, options=TICKS))
want_shap = c3.checkbox(f"SHAP waterfall of row {row}",
                        help="The row shown on the SHAP page (its position in the data, 0 is the first row).",
                        **state.bind("rep_shap", True, options=TICKS))
want_imp = c4.checkbox("Importance comparison", **state.bind("rep_imp", True, options=TICKS))
want_inter = c5.checkbox("Feature interactions", help="The heatmap and the strongest pairs of the Interactions page "
                         "(slower).", **state.bind("rep_inter", False, options=TICKS))

bar = st.progress(0.0, text="Preparing the report…")
try:
    built = state.report_html(ctx, feature, row, (want_summary, want_pdp, want_shap, want_imp, want_inter,
                                                  want_quality), bar)
except Exception as exc:
    bar.empty()
    widgets.show_error(exc)
    st.stop()
bar.empty()

st.subheader("What the report will contain")
if built.outline:
    st.markdown("\n".join(f"- **{md(heading)}**" + (f" — {md(text)}" if text else "")
                          for heading, text in built.outline))
for notice in built.notices:
    st.info(md(notice), icon=":material/info:")
st.download_button("Download the report (HTML)", built.html.encode("utf-8"), type="primary",
                   file_name=file_name(f"glassbox_report_{ctx.name}.html"), mime="text/html",
                   key="rep_download")
st.caption(f"{built.n_sections} section(s), {len(built.html) / 1e6:.1f} MB (plotly.js is included once).")
if st.toggle("Show the report itself here", help="The file as it will open in a browser (a few MB: off by default).",
             **state.bind("rep_show", False, options=TICKS)):
    components.html(built.html, height=900, scrolling=True)
