"""What-if page: edit a row's feature values and see the prediction and its reasons move."""
import numpy as np
import streamlit as st

from dashboard import figures, state
from dashboard.safe_text import md

ctx = state.current()
st.title("What if?")
st.caption("Take a row, change its values within the data's range, and compare it with the original.")

state.valid_choice("whatif_row", list(range(len(ctx.X))))
row = int(st.number_input(f"Row (0 – {len(ctx.X) - 1})", 0, len(ctx.X) - 1, 0, key="whatif_row"))
original = ctx.X.iloc[row]
if st.session_state.get("whatif_for") != (ctx.key, row):
    # a new row (or model): start the editors from this row's values
    for col in ctx.X.columns:
        st.session_state.pop(f"whatif_{col}", None)
    st.session_state["whatif_for"] = (ctx.key, row)

edited = {}
with st.expander("Feature values", expanded=True):
    grid = st.columns(3)
    for i, col in enumerate(ctx.X.columns):
        series = ctx.X[col]
        box = grid[i % 3]
        if series.dtype.kind in "biuf":
            lo, hi = float(np.nanmin(series)), float(np.nanmax(series))
            start = float(original[col]) if not np.isnan(original[col]) else float(np.nanmedian(series))
            step = float(10 ** np.floor(np.log10((hi - lo) / 100))) if hi > lo else 1.0
            edited[col] = box.number_input(md(col), min_value=lo, max_value=hi, value=min(max(start, lo), hi),
                                           step=step, key=f"whatif_{col}", format="%g")
        else:
            options = list(series.dropna().unique())
            edited[col] = box.selectbox(md(col), options, index=options.index(original[col])
                                        if original[col] in options else 0, key=f"whatif_{col}")
state.valid_choices("whatif_mask", list(ctx.X.columns))
missing = st.multiselect("Treat as missing", list(ctx.X.columns), key="whatif_mask")

try:
    before = state.explain_edited(ctx, tuple(original.tolist()), tuple(missing))
    after = state.explain_edited(ctx, tuple(edited[c] for c in ctx.X.columns), tuple(missing))
except Exception as exc:
    state.show_error(exc)
    st.stop()
ci = state.shap_class(after, ctx)
pick = (lambda a: float(a[0])) if ci is None else (lambda a: float(a[0, ci]))
label = state.output_label(after, ci)
changed = [c for c in ctx.X.columns if edited[c] != original[c]]
m1, m2, m3 = st.columns(3)
m1.metric(f"Original {md(label)}", f"{pick(before.predictions):.4g}")
m2.metric(f"Edited {md(label)}", f"{pick(after.predictions):.4g}",
          delta=f"{pick(after.predictions) - pick(before.predictions):+.4g}")
m3.metric("Features changed", len(changed))
if changed:
    st.caption("Changed: " + ", ".join(f"{md(c)}: {original[c]:g} → {edited[c]:g}" if isinstance(edited[c], float)
                                       else f"{md(c)}: {md(original[c])} → {md(edited[c])}" for c in changed))
left, right = st.columns(2)
left.plotly_chart(figures.waterfall_figure(before, 0, class_index=ci, max_display=10), key="whatif_before")
right.plotly_chart(figures.waterfall_figure(after, 0, class_index=ci, max_display=10), key="whatif_after")
st.markdown(f"**Edited row: {state.additivity_line(after, 0, ci)}**")
