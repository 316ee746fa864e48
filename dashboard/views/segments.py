"""Segments page: define named groups of rows, take the ones where the model fails most,
and pick the one every page compares with the rest (the sidebar's picker)."""
import streamlit as st

from dashboard import state, widgets
from dashboard.figures.style import fmt_number
from dashboard.safe_text import md
from dashboard.state import segment_views as sv

ctx = state.current()
st.title("Segments: groups of rows to compare")
if problem := sv.url_problem():
    st.warning(md(problem), icon=":material/link_off:")
if said := sv.take_message():
    (st.success if said[0] == "success" else st.error)(md(said[1]))

st.subheader("Define a segment")
st.text_input("Name", max_chars=200, **state.bind(sv.NAME, sv.next_name()))
targets = sv.condition_targets(ctx)
target = st.selectbox("Condition on", targets, format_func=sv.target_label,
                      **state.bind(sv.ON, targets[0], options=targets))
if target == sv.ON_PRED:
    st.multiselect("Predicted class is one of", ctx.adapter.classes.tolist(), format_func=str,
                   **state.bind(sv.CLASSES, [], options=ctx.adapter.classes.tolist()))
elif target == sv.ON_ERROR:
    st.caption(f"The error of a row is the {md(sv.error_words(ctx))}. Rows kept: lower end ≤ error < upper end; "
               "leave an end empty to keep it open.")
    c1, c2 = st.columns(2)
    c1.number_input("Error from (included)", value=None, min_value=0.0, format="%g", **state.bind(sv.ERR_LO, None))
    c2.number_input("Error below (excluded)", value=None, min_value=0.0, format="%g", **state.bind(sv.ERR_HI, None))
else:
    feature = target[1]
    hows = sv.ways(ctx, feature)
    how = st.radio("Rows whose value is", hows, horizontal=True, **state.bind(sv.HOW, hows[0], options=hows))
    if how == sv.RANGE:
        lo_key, hi_key = sv.range_keys(feature)
        col = ctx.X[feature]
        st.caption(f"{md(feature)} runs from {fmt_number(col.min())} to {fmt_number(col.max())} in the data. "
                   "Rows kept: lower end ≤ value < upper end; leave an end empty to keep it open.")
        c1, c2 = st.columns(2)
        c1.number_input("From (included)", value=None, format="%g", **state.bind(lo_key, None))
        c2.number_input("Below (excluded)", value=None, format="%g", **state.bind(hi_key, None))
    elif how == sv.VALUES:
        values = state.category_options(ctx, feature)
        st.multiselect(f"{md(feature)} is one of", values, **state.bind(sv.values_key(feature), [], options=values))
    else:
        cells = ["is empty", "is not empty"]
        st.radio("The cell", cells, horizontal=True, **state.bind(sv.IS_EMPTY, cells[0], options=cells))
    if how != sv.EMPTY:
        st.checkbox("Include empty cells", help="Rows whose cell is empty match too.",
                    **state.bind(sv.WITH_EMPTY, False, options=(True, False)))

conditions = sv.draft()
try:
    pending = sv.build_condition(ctx, target)
    n = sv.row_count(ctx, sv.draft_segment(conditions + [pending]))
    st.caption(f"This condition: {md(pending.describe())} · with it the segment holds **{n:,}** of "
               f"{len(ctx.X):,} rows.")
except Exception as exc:
    pending = None
    st.caption(md(state.error_message(exc)))
st.button("Add this condition", key="seg_add_condition", on_click=sv.on_add_condition, args=(ctx, target),
          disabled=pending is None, icon=":material/add:")

if conditions:
    segment = sv.draft_segment(conditions, st.session_state.get(sv.NAME))
    try:
        rows = f"**{sv.row_count(ctx, segment):,}** of {len(ctx.X):,} rows"
    except Exception as exc:
        rows = md(state.error_message(exc))
    st.markdown(f"Rule: **{md(segment.describe())}** · {rows}")
    for i, cond in enumerate(conditions):
        c1, c2 = st.columns([6, 1])
        c1.caption(md(cond.describe()))
        c2.button("Remove", key=f"seg_drop_condition_{i}", on_click=sv.on_remove_condition, args=(i,))
else:
    st.caption("Rule: all rows. Add conditions one by one; a row is in the segment when it meets all of them.")
c1, c2 = st.columns(2)
c1.button("Add segment", key="seg_add", type="primary", on_click=sv.on_add_segment, disabled=not conditions,
          icon=":material/save:")
c2.button("Start again", key="seg_clear", on_click=sv.on_clear_draft, disabled=not conditions)

st.subheader("Where does the model fail most?")
if ctx.y is None:
    st.info("Proposals need the target column (the true values), to measure each row's error. Pick it on the "
            "Model page when you load the data.", icon=":material/info:")
else:
    st.caption(f"A shallow decision tree fitted to each row's error ({md(sv.error_words(ctx))}); its leaves "
               "with the highest mean error, as rules on your columns.")
    c1, c2 = st.columns(2)
    depth = c1.select_slider("Conditions per rule (at most)", [1, 2, 3, 4],
                             **state.bind("seg_prop_depth", 3, options=[1, 2, 3, 4]))
    most = max(5, len(ctx.X) // 2)
    min_rows = c2.number_input("Fewest rows in a segment", 5, most,
                               **state.bind("seg_prop_min", min(30, max(5, len(ctx.X) // 4)),
                                            valid=lambda v: 5 <= v <= most))
    sampled = sv.proposal_fit_rows(ctx) is not None
    all_rows = sampled and st.toggle(
        "Fit the tree on every row", **state.bind("seg_prop_all", False, options=(True, False)),
        help=f"The tree is fitted on a seeded sample of {sv.SEGMENT_FIT_ROWS:,} rows (classes kept in proportion); "
             "every row takes longer and rarely moves a rule.")
    try:
        with st.spinner("Fitting a tree to the errors…"):
            props = sv.proposals(ctx, depth, min_rows, all_rows=bool(all_rows))
    except Exception as exc:
        widgets.show_error(exc)
        props = None
    if sampled and not all_rows and props is not None:
        st.caption(f"Rules found on a seeded sample of {sv.SEGMENT_FIT_ROWS:,} of the {len(ctx.X):,} rows "
                   f"({sv.sample_words(ctx)}); their rows and mean errors are counted on every row.")
    if props == []:
        st.info("No part of the data stands out: the model's errors are spread evenly.", icon=":material/info:")
    elif props:
        widgets.table(sv.proposals_frame(props), hide_index=True, key="seg_proposals")
        for i, (col, p) in enumerate(zip(st.columns(len(props)), props)):
            col.button(f"Add {md(p.segment.name)}", key=f"seg_propose_add_{i}", on_click=sv.on_add_proposal,
                       args=(p.segment.to_token(),), icon=":material/add:")

st.subheader("Saved segments")
saved, problems = sv.saved_frame(ctx)
if saved.empty:
    st.caption("No segment saved yet. Segments you add appear here and in the sidebar's *Compare a segment* picker.")
else:
    widgets.table(saved, hide_index=True, key="seg_saved")
    for problem in problems:
        st.warning(md(problem), icon=":material/warning:")
    for i, name in enumerate(saved.segment):
        c1, c2, c3 = st.columns([4, 1, 1])
        c1.markdown(f"**{md(name)}**" + (" · compared in the sidebar" if saved.compared[i] else ""))
        c2.button("Compare", key=f"seg_compare_{i}", on_click=sv.on_compare, args=(name,),
                  disabled=bool(saved.compared[i]))
        c3.button("Remove", key=f"seg_remove_{i}", on_click=sv.on_remove, args=(name,))
    st.caption("The link in the address bar keeps these segments and the one compared: copy it to share them.")
