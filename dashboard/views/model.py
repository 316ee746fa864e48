"""Model page: what the active model is, and loading another one."""
import streamlit as st

from dashboard import figures, messages, state, widgets
from dashboard.safe_text import code, md
from dashboard.state import context
from dashboard.state import quality as qs
from dashboard.state import uploads

ctx = state.current()
st.title(md(ctx.title), anchor=False)
st.caption(md(ctx.card.get("description", "")))

st.markdown(f"**Model:** {code(ctx.card.get('model_type', ''))}")
cols = st.columns(3)
cols[0].metric("Task", ctx.task)
cols[1].metric("Rows", f"{len(ctx.X):,}")
cols[2].metric("Features", ctx.X.shape[1])
if ctx.classes is not None:
    st.markdown("**Classes:** " + ", ".join(code(c) for c in ctx.classes))
metric = ctx.card.get("metric")
if metric:
    st.markdown(f"**{metric['name']}:** {metric['value']:.3f}"
                + (f" · ROC AUC {metric['roc_auc']:.3f}" if "roc_auc" in metric else ""))
elif ctx.y is not None:
    # filled at the end of the page: on a large table the rest shows while every row is predicted
    score_slot = st.empty()
else:
    st.caption("No target column was given, so no score is shown.")
for notice in ctx.notices:
    st.info(md(notice), icon=":material/info:")
if k := context.unnamed_class_count(ctx):  # a model file that names no classes: the user may
    st.text_input(
        f"Class names (the model file numbers its classes 0 to {k - 1})",
        placeholder=", ".join(f"name of class {i}" for i in range(min(k, 3))) + (", …" if k > 3 else ""),
        help="One name per class, in the order of the class numbers, separated by commas: every page, "
             "score and link then uses them (a target column holding the numbers 0 to k-1 is read with them).",
        **state.bind(state.CLASS_NAMES, ""),
    )
    if problem := context.class_names_problem(ctx, state.value(state.CLASS_NAMES, "")):
        st.warning(problem, icon=":material/warning:")
if (transforms := state.transform_choices(ctx)) is not None:  # a regressor: fitted on log(target)?
    target = state.target_name(ctx)
    st.selectbox(
        "The model predicts", transforms,
        format_func=lambda t: f"{target} itself" if t == state.NO_TRANSFORM else f"{t}({target})",
        help="A model fitted on log(price) (or log1p, sqrt) predicts that: say so, and the pages offer "
             f"{target} in its original units too (the sidebar's Scale): errors, partial dependence, What-if.",
        **state.bind(state.TARGET_TRANSFORM, state.default_transform(ctx), options=transforms),
    )
    if state.target_transform(ctx) and ctx.y is not None:
        holds = qs.target_column_scale(ctx)
        st.caption(f"The target column {md(target)} holds "
                   + (f"{md(state.transformed_name(ctx))}, as the model predicts it" if holds == "model"
                      else f"{md(target)} in its original units")
                   + " (read from how near its values lie to the predictions).")

st.subheader("Features")
features = state.feature_summary(ctx.data_key, ctx.X)
# every feature in view (a table that scrolls after ten rows hides the rest), up to about fifty
widgets.table(features, hide_index=True, width="stretch", height=min(38 + 35 * len(features), 1800))

if not metric and ctx.y is not None:
    # scored on the model's own scale (a column in a log target's original units is converted)
    with score_slot, st.spinner(f"Scoring the model on {len(ctx.X):,} rows…"):
        score = state.data_score(ctx, qs.target_on_scale(ctx, "model"), state.target_output(ctx),
                                 state.target_transform(ctx))
    if score:
        left_out = score.get("n_left_out", 0)  # rows with an empty target are not scored
        score_slot.markdown(f"**{score['name']} on the uploaded data:** {score['value']:.3f} "
                            + (f"on the {score['n_rows']:,} rows with a target ({left_out:,} with an empty "
                               "target left out) " if left_out else "")
                            + "(held out only if these rows were not used for training)")
    else:
        score_slot.empty()
try:
    spread = qs.prediction_spread(ctx)
except Exception as exc:  # noqa: BLE001 - said on the page, the rest of it kept
    spread = None
    widgets.show_error(exc)
if spread is not None:
    regression = ctx.task == "regression"
    st.plotly_chart(figures.distribution_figure(spread, by_class=not regression), key="model_spread")
    st.caption(("How the predictions spread beside the target's values" if regression else
                "Each class's rows by the probability the model gives the sidebar's class: the further apart, "
                "the better the model tells them apart")
               + f", over the {int(spread.counts[0].sum() if regression else spread.counts.sum()):,} rows"
               + (f" ({spread.left_out:,} without a usable target left out)." if spread.left_out else ".")
               + " The Quality page has the curves and the confusion matrix.")

st.subheader("Switch model")
left, right = st.columns(2)
with left:
    st.markdown("**A demo model**")
    names = list(state.demo_cards())
    # shows the demo the pages show, and nothing while an upload or a served model is shown
    st.session_state[state.DEMO_PICK] = ctx.name if ctx.name in names else None
    st.selectbox("Demo model", names, format_func=lambda n: state.demo_cards()[n]["title"], key=state.DEMO_PICK,
                 on_change=state.on_pick_demo, placeholder="Pick a demo model…")
with right:
    st.markdown("**Your own model**")
    # pickles are accepted by the uploader so that refusing one can say why and what to do
    st.file_uploader("Fitted model (.skops; XGBoost .json / .ubj, LightGBM .txt, CatBoost .json / .cbm; "
                     ".joblib / .pkl only where the operator allows them)",
                     type=["skops", "json", "ubj", "txt", "cbm", "joblib", "pkl", "pickle"], key=state.MODEL_FILE,
                     help="A scikit-learn model: skops.io.dump(model, 'model.skops'). XGBoost, LightGBM or "
                          "CatBoost: the library's own save_model ('model.json', 'model.ubj', 'model.txt'; "
                          "CatBoost with format='json'). These files are read as data, never run. Pickle "
                          "files run code when loaded, so they are accepted only when the operator allows them.")
    st.file_uploader("Data (.csv or .parquet)", type=["csv", "parquet"], key=state.DATA_FILE)
    # files chosen before the user went to another page: Streamlit emptied the uploaders, we kept them
    kept = {slot: f for slot, f in uploads.chosen_files().items()
            if f is not None and st.session_state.get(state.MODEL_FILE if slot == "model" else state.DATA_FILE) is None}
    if kept:
        st.caption("Chosen before you left this page: " + ", ".join(f"**{md(f.name)}**" for f in kept.values())
                   + ". **Load model and data** loads them; a file chosen above takes its place.")
    try:
        columns = uploads.chosen_columns()
    except Exception as exc:
        columns = []
        st.error(md(messages.for_page(exc, "model")), icon=":material/error:")
    if state.TARGET_COL not in st.session_state and uploads.chosen_target() in columns:
        st.session_state[state.TARGET_COL] = uploads.chosen_target()  # the pick made with the kept file
    st.selectbox("Target column", [state.NO_TARGET] + columns, key=state.TARGET_COL,
                 help="Split off the true values, for scores and importance.")
    st.button("Load model and data", type="primary", on_click=uploads.on_load_chosen)
    if st.session_state.get(state.LAST_ERROR):
        st.error(md(messages.for_page(st.session_state[state.LAST_ERROR], "model")), icon=":material/error:")
        st.caption(f"Still showing: {md(ctx.title)}")
