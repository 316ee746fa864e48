"""What-if page: edit a row's feature values and see the prediction and its reasons move.

The editors belong to one row of one model: their widget keys carry a token of
(model, row). Streamlit's browser keeps a keyed widget's value by its key alone,
so an editor reused for another row would show the previous row's value while
the server starts from the new one; a new key per row gives fresh editors, and
the old row's keys (and their stored values, see ``dashboard.state.session``) are
dropped. A blank cell stays blank (an empty box) unless the user types a value.
"""
import hashlib

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import figures, state, widgets
from dashboard.figures.style import fmt_number
from dashboard.safe_text import md
from dashboard.state import counterfactuals as cf_state
from dashboard.state import quality as quality_state
from dashboard.state import whatif as whatif_state

EDITOR = "whatif_ed_"  # editor keys: whatif_ed_<token>_<column position>

ctx = state.current()
n_rows = len(ctx.X)
st.title("What if?")
st.caption("Take a row, change its values within the data's range, and compare it with the original.")

row = int(st.number_input(f"Row (0 – {n_rows - 1})", 0, n_rows - 1,
                          help="The row's position in the data file as loaded (0 is the first row).",
                          **state.bind("whatif_row", 0, valid=lambda v: 0 <= v < n_rows)))
original = ctx.X.iloc[row]
token = hashlib.sha256(f"{ctx.key}|{row}".encode()).hexdigest()[:12]
prefix = f"{EDITOR}{token}_"
if st.session_state.get("whatif_for") != token:
    # another row (or model): drop the editors of the row before, and their stored values
    for key in {k.split("::")[-1] for k in st.session_state.keys() if isinstance(k, str) and EDITOR in k
                and prefix not in k}:
        state.forget(key)
    st.session_state["whatif_for"] = token


def _missing(v) -> bool:
    return v is None or (not isinstance(v, str) and bool(pd.isna(v)))


def _same(a, b) -> bool:
    return (_missing(a) and _missing(b)) or (not _missing(a) and not _missing(b) and a == b)


def _shown(v) -> str:
    if _missing(v):
        return "blank"
    if isinstance(v, (float, np.floating, int, np.integer)) and not isinstance(v, bool):
        return f"{v:g}"
    return md(str(v))


edited = {}
with st.expander(f"Feature values of row {row}", expanded=True):
    if original.isna().any():
        st.caption("An empty box is a blank (missing) cell of the data: it stays blank unless you type "
                   "a value. Clear a box to make a value blank.")
    grid = st.columns(3)
    for i, col in enumerate(ctx.X.columns):
        series = ctx.X[col]
        box = grid[i % 3]
        value = original[col]
        if series.dtype.kind in "biuf":
            finite = series.to_numpy(dtype=float)
            finite = finite[np.isfinite(finite)]
            lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (None, None)
            step = float(10 ** np.floor(np.log10((hi - lo) / 100))) if lo is not None and hi > lo else 1.0
            start = None if _missing(value) else min(max(float(value), lo), hi)
            # value=None: a cleared box is a blank, not the column's minimum
            edited[col] = box.number_input(md(col), min_value=lo, max_value=hi, value=None, step=step, format="%g",
                                           placeholder="blank",
                                           **state.bind(f"{prefix}{i}", start, valid=lambda v, lo=lo, hi=hi: v is None
                                                        or (lo is not None and lo <= v <= hi)))
        else:
            options = state.category_options(ctx, col)  # the model's order, whatever the file
            start = None if _missing(value) or value not in options else value
            edited[col] = box.selectbox(md(col), options, placeholder="blank",
                                        **state.bind(f"{prefix}{i}", start, valid=lambda v, o=options: v is None or v in o))
missing = st.multiselect("Treat as missing", list(ctx.X.columns), **state.bind("whatif_mask", [], options=list(ctx.X.columns)))
empty_missing = widgets.empty_cells_toggle(ctx, "whatif_empty_missing")

values = tuple(np.nan if _missing(edited[c]) else edited[c] for c in ctx.X.columns)
try:
    before = state.explain_edited(ctx, tuple(original.tolist()), tuple(missing), empty_missing)
    after = state.explain_edited(ctx, values, tuple(missing), empty_missing)
except Exception as exc:
    widgets.show_error(exc)
    st.stop()
ci = state.shap_class(after, ctx)
if after.params.get("scale_note"):
    st.info(after.params["scale_note"], icon=":material/info:")
pick = (lambda a: float(a[0])) if ci is None else (lambda a: float(a[0, ci]))
label = state.output_label(after, ci)
changed = [c for c in ctx.X.columns if not _same(edited[c], original[c])]
m1, m2, m3 = st.columns(3)
p_before, p_after = (pick(r.params.get("model_prediction", r.predictions)) for r in (before, after))
m1.metric(f"Original {md(label)}", fmt_number(p_before), help=f"Row {row} as in the data: the model's prediction.")
m2.metric(f"Edited {md(label)}", fmt_number(p_after), delta=fmt_number(p_after - p_before, sign=True),
          help=f"Row {row} with your edits: the model's prediction.")
m3.metric("Features changed", len(changed))
if (transform := state.target_transform(ctx)) is not None:  # fitted on log(target): the original units too
    from explainers.target_scale import inverse

    o_before, o_after = (float(inverse(transform, v)) for v in (p_before, p_after))
    st.markdown(f"In {md(state.target_name(ctx))}'s original units: original **{fmt_number(o_before)}**, edited "
                f"**{fmt_number(o_after)}** ({fmt_number(o_after - o_before, sign=True)}); the model predicts "
                f"{md(state.transformed_name(ctx))}, which the figures below explain.")
if (verdict := whatif_state.verdict(ctx, values, t := quality_state.threshold())) is not None:
    st.markdown(f"Verdict at threshold {t:.2f}: **{md(verdict[0])}** (P({md(ctx.classes[state.class_index(ctx)])}) = "
                f"{fmt_number(verdict[1])}, edited row; the threshold is set on the Quality page)")
elif (predicted := whatif_state.predicted_class(ctx, values)) is not None:  # no probabilities to threshold
    st.markdown(f"Predicted class of the edited row: **{md(predicted)}** (the model's own prediction)")
if changed:
    st.caption("Changed: " + ", ".join(f"{md(c)}: {_shown(original[c])} → {_shown(edited[c])}" for c in changed))
left, right = st.columns(2)
left.markdown(f"**Row {row} as in the data**")
left.plotly_chart(figures.waterfall_figure(before, 0, class_index=ci, max_display=10, row_label=row),
                  key="whatif_before")
right.markdown(f"**Row {row} with your edits**")
right.plotly_chart(figures.waterfall_figure(after, 0, class_index=ci, max_display=10, row_label=f"Row {row}, edited"),
                   key="whatif_after")
st.markdown(f"**Row {row}, edited: {state.additivity_line(after, 0, ci)}**")

# ----------------------------------------------------------------- counterfactuals
st.divider()
st.subheader("What would change the prediction?")
st.caption(f"The nearest changes of row {row} (as in the data) that the model predicts differently: distance is "
           "the sum of each change divided by the feature's median absolute deviation (a category change counts "
           "1). Tree models are solved exactly; other models by a search.")
c1, c2, c3 = st.columns([2, 1, 1])
if ctx.task == "regression":
    lo0, hi0 = cf_state.regression_default(ctx, row)
    target = (c1.number_input("Prediction at least", value=None, format="%g", placeholder=f"{lo0:g}",
                              **state.bind(f"cf_lo_{token}", lo0)),
              c1.number_input("Prediction at most", value=None, format="%g", placeholder=f"{hi0:g}",
                              **state.bind(f"cf_hi_{token}", hi0)))
    target = (lo0 if target[0] is None else target[0], hi0 if target[1] is None else target[1])
else:
    choices = cf_state.target_choices(ctx, row)
    target = c1.selectbox(f"Reach (row {row} is predicted '{md(cf_state.predicted_label(ctx, row))}')", choices,
                          **state.bind(cf_state.TARGET, choices[0], options=choices))
n_cf = int(c2.number_input("How many", 1, 5, **state.bind(cf_state.COUNT, 3, valid=lambda v: 1 <= v <= 5)))
seconds = c3.selectbox("Time limit (s)", cf_state.TIME_LIMITS,
                       help="For the row's answers together: the search stops then and shows what it has "
                            "found.",
                       **state.bind(cf_state.SECONDS, 10, options=cf_state.TIME_LIMITS))
columns = list(ctx.X.columns)
fixed = st.multiselect("Keep fixed", columns, help="Features the counterfactuals never change (age, say).",
                       **state.bind(cf_state.FIXED, [], options=columns))
limited = st.multiselect("Limit the range of", [c for c in columns if c not in fixed],
                         help="By default a feature may take any value the data shows.",
                         **state.bind(cf_state.LIMITED, [], options=columns))
ranges = []
for i, col in enumerate(limited):
    series = ctx.X[col]
    if series.dtype.kind in "biuf":
        finite = series.to_numpy(dtype=float)
        finite = finite[np.isfinite(finite)]
        lo, hi = float(finite.min()), float(finite.max())
        if hi > lo:
            picked = st.slider(f"Range of {md(col)}", lo, hi, **state.bind(
                f"cf_range_{columns.index(col)}", (lo, hi),
                valid=lambda v, lo=lo, hi=hi: isinstance(v, (tuple, list)) and len(v) == 2 and lo <= v[0] <= v[1] <= hi))
            ranges.append((col, (float(picked[0]), float(picked[1]))))
    else:
        options = state.category_options(ctx, col)
        picked = st.multiselect(f"Allowed values of {md(col)}", options,
                                **state.bind(f"cf_range_{columns.index(col)}", list(options), options=options))
        ranges.append((col, tuple(picked)))
state.keep_in_url(cf_state.RUN, False)
if not state.value(cf_state.RUN, False):
    st.button("Find counterfactuals", type="primary",
              help=f"Searches up to {seconds} s for the row; tree models usually finish in well under a second.",
              on_click=state.set_value, args=(cf_state.RUN, True))
else:
    asked = (row, target if isinstance(target, str) else tuple(target), tuple(fixed), tuple(ranges), n_cf,
             float(seconds))
    try:
        cf = cf_state.find(ctx, *asked, notice=widgets.Working("Searching for counterfactuals…"))
    except Exception as exc:
        widgets.show_error(exc)
        st.stop()
    cf_state.remember(ctx, *asked)  # the report shows the same
    if cf.messages[0]:
        st.info(md(cf.messages[0]))
    else:
        st.markdown(f"To reach **{md(cf.targets[0])}**: " + cf_state.status_line(cf, seconds))
        widgets.table(cf_state.changes_frame(ctx, cf), hide_index=True)
        for note in cf.notes:
            st.caption(md(note))
        picks = st.columns(min(5, len(cf.counterfactuals[0])))
        for i, slot in enumerate(picks):
            slot.button(f"Load #{i + 1} into the editor", key=f"cf_load_{i}", on_click=cf_state.load,
                        args=(prefix, ctx, cf.counterfactuals[0].iloc[i].to_dict()))
        st.caption(f"Searched in {cf.seconds[0]:.2f} s · method: {md(cf.method)}.")
