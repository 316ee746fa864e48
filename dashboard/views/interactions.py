"""Interactions page: which pairs of features act together, and how one pair does."""
import streamlit as st

from dashboard import figures, state, widgets
from dashboard.figures import interactions as ifig
from dashboard.figures.style import output_words
from dashboard.safe_text import csv_text, file_name, md
from dashboard.state import interactions as ia



def every_row_view(ctx, feats: list[str], sci, picked: tuple[str, str]) -> None:
    """On request, the mean |SHAP interaction| of every row of the table, for the heatmap's features."""
    from dashboard.state.every_row import (interaction_rows_added, interactions_every_row,
                                           interactions_every_row_seconds)

    n = len(ctx.X)
    if not widgets.every_row_switch(
            "Mean |SHAP interaction|", n, "ia_every", lambda: interactions_every_row_seconds(ctx),
            interaction_rows_added(ctx),
            help="Adds up every row's |SHAP interaction values| block by block, with progress; the rows' own values "
                 "are not kept. A Stop (top right) keeps the rows done so far: turning it on again goes on from there."):
        return
    bar = st.progress(0.0, text="SHAP interaction values of every row…")
    try:
        every = interactions_every_row(ctx, state.ProgressBar(bar, "Rows explained"))
    except Exception as exc:
        bar.empty()
        st.error(md(ia.interaction_error(exc)), icon=":material/error:")
        return
    bar.empty()
    fig = ifig.interaction_heatmap_figure(every, features=feats, class_index=sci, highlight=picked)
    fig.update_layout(title_text=f"{fig.layout.title.text}, every row")
    st.plotly_chart(fig, key="interactions_heatmap_every")
    st.caption(f"Mean |SHAP interaction| of every one of the {n:,} rows, for the features of the heatmap above "
               "(which shows the sample's).")


ctx = state.current()
st.title("Which features act together?")
st.caption("Two features interact when the effect of one depends on the value of the other. The heatmap "
           "shows how strongly each pair of the most interacting features does; click a cell (or pick two "
           "features below) to see how.")

cols = list(ctx.X.columns)
if len(cols) < 2 or len(ctx.X) < 2:
    st.info(f"Interactions need at least two features and two rows; this data has {len(cols)} feature(s) and "
            f"{len(ctx.X)} row(s). Load another model or data file on the Model page.", icon=":material/info:")
    st.stop()

method, reason = ia.interaction_method(ctx)
c1, c2, c3 = st.columns([3, 1, 1])
measures = list(ia.MEASURES) if method is not None else [ia.H_MEASURE]
measure = c1.radio("Measure", measures, horizontal=True, **state.bind("ia_measure", measures[0], options=measures),
                   help="SHAP interaction: the mean size of each pair's joint share of the prediction "
                        "(in the model's output units). H statistic: the share of the pair's joint partial "
                        "dependence that their separate effects do not explain (0 = none, 1 = all).")
rows_hi = max(2, min(len(ctx.X), 5_000))
rows_lo = min(20, rows_hi)
k_hi = min(len(cols), ia.MAX_PICK_FEATURES)
with st.spinner("Measuring how long the model takes…"):
    try:  # the first view: as many rows as fit in about 3 s
        start_rows, full_rows = ia.default_rows(ctx, min(ia.MAX_FEATURES, k_hi))
    except Exception:  # noqa: BLE001 - the computation itself will say what is wrong
        start_rows = full_rows = min({"tree": ia.SHAP_ROWS, "exact": ia.EXACT_ROWS}.get(method, ia.H_ROWS), rows_hi)
n_rows = int(c2.number_input(
    "Rows in the sample", rows_lo, rows_hi, step=10 if rows_hi >= 100 else 1,
    **state.bind("ia_rows", start_rows, valid=lambda v: rows_lo <= v <= rows_hi), help=f"A seeded sample of this many rows (of {len(ctx.X):,}) lies behind the numbers; the H "
                       f"statistic uses at most {ia.H_ROWS} of them (it costs about rows² predictions per pair)."))
k = int(c3.number_input(
    "Features in the heatmap", 2, k_hi, **state.bind("ia_k", min(ia.MAX_FEATURES, k_hi), valid=lambda v: 2 <= v <= k_hi),
    help=f"The heatmap shows the features with the largest total interaction (at most {ia.MAX_PICK_FEATURES}: a "
         "larger matrix cannot be read); the table lists every pair among them."))
if method is None:
    st.info(md(reason), icon=":material/info:")

with st.spinner("Measuring how long the model takes…"):
    try:
        cost, fits = ia.interaction_cost(ctx, measure, n_rows, k)
    except Exception:  # noqa: BLE001 - the computation itself will say what is wrong
        cost, fits = 0.0, n_rows
# "Compute anyway" approves a cost for these rows: a switch to work that costs no more (the other
# measure, whose numbers the first run computed too) does not ask again
approved = st.session_state.setdefault("ia_go_for", {})
if cost > state.SLOW_VIEW_S and approved.get((ctx.key, n_rows), -1.0) < cost:
    st.warning(f"With {n_rows:,} rows this takes about **{state.fmt_seconds(cost)}** for this model (measured on "
               f"a few rows). About {fits:,} rows take {state.fmt_seconds(state.SLOW_VIEW_S)}.",
               icon=":material/timer:")
    g1, g2 = st.columns(2)
    if fits < n_rows:
        g1.button(f"Use {fits:,} rows", key="ia_fewer", on_click=state.set_value, args=("ia_rows", fits))
    g2.button("Compute anyway", key="ia_go", on_click=approved.__setitem__, args=((ctx.key, n_rows), cost))
    st.stop()

if n_rows == start_rows < full_rows:
    st.caption(f"Started on {n_rows:,} rows, which take about {state.fmt_seconds(state.START_VIEW_S)} for this "
               f"model; {full_rows:,} give steadier numbers.")
    st.button(f"Use {full_rows:,} rows", key="ia_more", on_click=state.set_value, args=("ia_rows", full_rows))
bar = st.progress(0.0, text="Computing interactions…")
shap_res = None
if method is not None:
    try:
        shap_res = ia.shap_interactions(ctx, n_rows, state.ProgressBar(bar, "SHAP interaction values: rows"))
    except Exception as exc:
        st.warning(md(ia.interaction_error(exc, fallback=True)), icon=":material/warning:")
if shap_res is None and measure == ia.SHAP_MEASURE:
    measure = ia.H_MEASURE
# the SHAP measure's heatmap is drawn first, Friedman's H of its pairs (the table's second column)
# after it: at a million rows H took about a second of the first chart's wait
h_later = measure == ia.SHAP_MEASURE and shap_res is not None
h_res = None
if h_later:
    feats = ia.shap_heatmap_features(ctx, shap_res, k)
else:
    bar.progress(0.8, text="Friedman's H statistic of the pairs…")
    try:
        feats, h_res = ia.heatmap_features(ctx, measure, shap_res, n_rows, k)
    except Exception as exc:
        bar.empty()
        st.error(md(ia.interaction_error(exc)), icon=":material/error:")
        st.stop()
bar.empty()

sci = ia.interaction_class(shap_res, ctx) if shap_res is not None else None
shown = shap_res if measure == ia.SHAP_MEASURE else h_res
table = ifig.interaction_pairs_frame(shap_res, h_res, feats, class_index=sci, sort_by=measure)

# ------------------------------------------------------------ the pair picked
F1, F2 = "ia_f1", "ia_f2"
strength_all = ifig.interaction_strength(shown, class_index=sci if shown is shap_res else None)


def best_partner(first: str) -> str:
    """The feature that interacts most with ``first`` (the pair shown until the user picks one)."""
    partners = [c for c in cols if c != first]
    best = None
    if first in strength_all.index:
        row = strength_all.loc[first].drop(first, errors="ignore").astype(float).dropna()
        best = str(row.idxmax()) if len(row) else None
    return best if best in partners else partners[0]


strongest = str(table.feature.iloc[0]) if len(table) and str(table.feature.iloc[0]) in cols else cols[0]
picked1 = state.value(F1, strongest) if state.value(F1, strongest) in cols else strongest
picked2 = state.value(F2) if state.value(F2) in cols and state.value(F2) != picked1 else best_partner(picked1)


def _on_click(features=tuple(feats)):
    """A heatmap cell was clicked: its pair becomes the picked pair."""
    event = st.session_state.get("interactions_heatmap")
    points = getattr(getattr(event, "selection", None), "points", None) if event is not None else None
    if points is None and isinstance(event, dict):
        points = event.get("selection", {}).get("points")
    pair = ifig.pair_from_selection(points, list(features))
    if pair is not None:
        state.set_value(F1, pair[0])
        state.set_value(F2, pair[1])


def _rows(n: int) -> str:
    """How many of the data's rows a number rests on."""
    return f"all {n:,} rows" if n >= len(ctx.X) else f"a seeded sample of {n:,} of {len(ctx.X):,} rows"


# -------------------------------------------------------- heatmap and table
# the heatmap has the page's width (beside the table it was a sliver); the table under it
left = st.container()
heat = ifig.interaction_heatmap_figure(shown, features=feats, class_index=sci if shown is shap_res else None,
                                       highlight=(picked1, picked2))
left.plotly_chart(heat, key="interactions_heatmap", on_select=_on_click, selection_mode="points")
scale = (ifig.noise_scale(shap_res, sci) if shown is shap_res else 1.0)
strength_shown = ifig.interaction_strength(shown, class_index=sci if shown is shap_res else None).loc[feats, feats]
if ia.no_interactions(strength_shown.to_numpy(), scale):
    what = "SHAP interaction value" if shown is shap_res else "H statistic"
    left.info(f"No interactions: every pair's {what} is 0. This model adds up one separate effect per feature "
              "(it is additive, like a linear model), so no feature changes how another one acts.",
              icon=":material/info:")
h_problem = None
if h_later:  # the table's H column: H of the heatmap's pairs (what heatmap_features gives with them)
    with st.spinner("Friedman's H statistic of the pairs…"):
        try:
            h_res = ia.h_pairs(ctx, tuple(feats), n_rows)
        except Exception as exc:  # noqa: BLE001 - said under the table, the SHAP numbers kept
            h_problem = ia.interaction_error(exc)
    table = ifig.interaction_pairs_frame(shap_res, h_res, feats, class_index=sci, sort_by=measure)
right = st.container()
with right:
    st.markdown(f"**Pairs, strongest first** (by {measure})")
    # the numbers first: a long pair of names can never push them out of view
    shown_table = table[["mean_abs_shap_interaction", "h_statistic", "pair"]]
    if shap_res is None:
        shown_table = shown_table.drop(columns="mean_abs_shap_interaction")
    widgets.table(shown_table, hide_index=True, height=min(420, 38 + 35 * len(shown_table)),
                 column_config={
                     "pair": st.column_config.TextColumn("pair"),
                     "mean_abs_shap_interaction": st.column_config.NumberColumn(
                         "mean |interaction|", format="%.4g",
                         help="Mean over the rows of |φᵢⱼ + φⱼᵢ|: the pair's joint share of the prediction."),
                     "h_statistic": st.column_config.NumberColumn("H", format="%.3f",
                                                                  help="Friedman's H statistic of the pair."),
                 })
    if h_problem:
        st.error(md(h_problem), icon=":material/error:")
    st.download_button("Download the pairs (CSV)", csv_text(table, index=False).encode(),
                       file_name=file_name(f"interactions_{ctx.name}.csv"), mime="text/csv",
                       key="interactions_csv")


parts = []
if shap_res is not None:
    parts.append(f"SHAP interaction values of {_rows(shap_res.n_rows)}, by {reason}; output: "
                 f"{md(ifig.output_label(shap_res, sci))}")
if h_res is not None:
    h_of = output_words("log_odds" if state.output_scale(ctx) == state.LOG_ODDS else "proba", str(h_res.output_name))
    parts.append(f"Friedman's H on {_rows(h_res.n_rows)}" + (f", for the {md(h_of)}" if ctx.classes is not None else ""))
st.caption(". ".join(parts) + f". {len(feats)} of {len(cols)} features shown: those with the largest total "
           "interaction.")
if shap_res is not None and shap_res.n_rows < len(ctx.X):  # a sample of a larger table: every row on request
    every_row_view(ctx, feats, sci, (picked1, picked2))

# ----------------------------------------------------------------- one pair
st.divider()
st.subheader("One pair")
p1, p2 = st.columns(2)
f1 = p1.selectbox("Feature", cols, **state.bind(F1, strongest, options=cols))
others = [c for c in cols if c != f1]
f2 = p2.selectbox("Interacting with", others, **state.bind(F2, best_partner(f1), options=others))
st.caption("Click a cell of the heatmap, or pick the two features here.")

d1, d2, d3 = st.columns(3)
with d1:
    if shap_res is not None:
        st.plotly_chart(ifig.interaction_dependence_figure(shap_res, f1, f2, class_index=sci),
                        key="interactions_dependence")
    else:
        st.info("The SHAP interaction plot needs SHAP interaction values, which this model does not get here "
                "(see above). The partial dependence and ALE of the pair are beside it.", icon=":material/info:")
ci = state.pdp_class(ctx)
pair_pd = None
with d2:
    try:
        pair_pd = state.pdp(ctx, (f1, f2), 20, (0.05, 0.95))
        pdp_fig = figures.pdp2d_figure(pair_pd, class_index=ci)
        pdp_fig.update_layout(title_text="2D partial dependence")  # the axes name the pair: a title that fits a third
        st.plotly_chart(pdp_fig, key="interactions_pdp")
    except Exception as exc:
        widgets.show_error(exc)
numeric = all(ctx.X[c].dtype.kind in "biuf" for c in (f1, f2))
ale_all = False
with d3:
    if numeric:
        if state.ale_sampled(ctx):  # a large table: the ALE starts from a sample, every row on request
            ale_all = st.toggle(f"ALE on every row ({len(ctx.X):,})",
                                help=f"The ALE starts from a seeded sample of {state.ale_rows(ctx):,} rows; every "
                                     "row predicts each one at its cell's four corners (several seconds per million "
                                     "rows). A Stop (top right) ends the wait.",
                                **state.bind("ia_ale_all", False, options=(True, False)))
        try:
            notice = widgets.Working(f"Second-order ALE on every one of the {len(ctx.X):,} rows…") if ale_all else None
            ale_fig = figures.ale2d_figure(state.ale(ctx, (f1, f2), 10, ale_all, notice), class_index=ci,
                                           reference=figures.pd_range(pair_pd, ci) if pair_pd is not None else None)
            ale_fig.update_layout(title_text="Second-order ALE (the interaction alone)")
            st.plotly_chart(ale_fig, key="interactions_ale")
        except Exception as exc:
            widgets.show_error(exc)
    else:
        st.info("The second-order ALE needs two numeric features; pick numeric features to see it.",
                icon=":material/info:")
st.caption("Left: each dot is a row; its height is the pair's SHAP interaction (φᵢⱼ + φⱼᵢ: what the two "
           "features add together beyond their separate effects), its colour the partner's value. Middle: "
           "the 2D partial dependence (both effects and their interaction). Right: the second-order ALE, the "
           "interaction alone, from changes within the data's own cells."
           + (f" {state.ale_caption(ctx, ale_all)}" if numeric and state.ale_caption(ctx, ale_all) else ""))
