"""The Interactions page through AppTest: the heatmap carries the explainers' numbers.

The page runs inside the real dashboard/app.py (tests/views/_interactions_app.py adds it
to the navigation until app.py registers it).
"""
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dashboard import state
from dashboard.state import interactions as ia
from explainers import ExplainerError
from explainers.interactions import h_statistic
from explainers.shap import TreeShap
from tests.plotly_json import array, figures
from tests.views._app import load_demo

ENTRY = str(Path(__file__).resolve().parent / "_interactions_app.py")
PAGE = "../../dashboard/views/interactions.py"  # relative to the entry script


def _open(demo: str, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(ENTRY, default_timeout=300)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    if demo != state.DEFAULT_DEMO and not (query and "model" in query):
        at.sidebar.selectbox(key=state.ACTIVE).set_value(demo).run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def _sample(demo: str, n: int):
    """The rows the page explains: the dashboard's seeded sample of this demo's data."""
    return state.sample_rows(state.demo_context(demo), n)


def _heatmap(at):
    fig = figures(at)[0]
    heat = fig["data"][0]
    assert heat["type"] == "heatmap"
    # the axes carry short names; the clickable cells carry [row, column, value, row name, column name]
    names = {}
    for a, b, _, fa, fb in fig["data"][1]["customdata"]:
        names[int(a)], names[int(b)] = str(fa), str(fb)
    feats = [names[i] for i in range(len(names))] if names else [str(v) for v in array(heat["x"])]
    return fig, feats, array(heat["z"]).astype(float)


def _texts(at) -> str:
    return " ".join(str(e.value) for kind in ("markdown", "caption", "info", "warning", "error") for e in at.get(kind))


def test_housing_latitude_longitude_is_the_strongest_pair(demo_cards):
    at = _open("housing_gb")
    fig, feats, z = _heatmap(at)
    model, ds, _ = load_demo("housing_gb")
    rows = _sample("housing_gb", ia.SHAP_ROWS)
    assert len(rows) == 500 and rows.equals(ds.X.loc[rows.index])
    res = TreeShap(model).interactions(rows)
    pos = [res.feature_names.index(f) for f in feats]
    expected = 2 * res.mean_abs()[np.ix_(pos, pos)]  # mean |phi_ij + phi_ji| over the 500 rows
    off = ~np.eye(len(feats), dtype=bool)
    np.testing.assert_allclose(z[off], expected[off], rtol=1e-12, atol=0)
    assert np.isnan(z[~off]).all()
    # latitude x longitude: the strongest pair by SHAP interaction, on the heatmap and in the table
    a, b = np.unravel_index(np.nanargmax(z), z.shape)
    assert {feats[a], feats[b]} == {"latitude", "longitude"}
    assert set(feats[:2]) == {"latitude", "longitude"}
    table = at.dataframe[0].value
    assert set(table.pair.iloc[0].split(" × ")) == {"latitude", "longitude"}
    assert table.mean_abs_shap_interaction.is_monotonic_decreasing
    assert table.mean_abs_shap_interaction.iloc[0] == pytest.approx(np.nanmax(z), rel=1e-12)
    # how many rows: 500 of the 2,000 for SHAP, 300 for H
    assert "a seeded sample of 500 of 2,000 rows" in _texts(at)
    assert "Friedman's H on a seeded sample of 300 of 2,000 rows" in _texts(at)
    # the strongest pair is picked by default: its dependence scatter, 2D PDP and ALE side by side
    assert {at.selectbox(key="ia_f1").value, at.selectbox(key="ia_f2").value} == {"latitude", "longitude"}
    figs = figures(at)
    assert len(figs) == 4
    assert [f["data"][0]["type"] for f in figs[1:]] == ["scatter", "heatmap", "heatmap"]
    assert "ALE" in figs[3]["layout"]["title"]["text"]
    assert "f1" not in at.query_params  # the default pair: the link needs no parameter to show it
    at.selectbox(key="ia_f1").set_value("median_income").run()
    assert at.query_params["f1"] == "median_income"


def test_pick_a_pair_shows_its_interaction_values(demo_cards):
    at = _open("housing_gb")
    at.selectbox(key="ia_f1").set_value("median_income").run()
    at.selectbox(key="ia_f2").set_value("house_age").run()
    assert not at.exception
    figs = figures(at)
    assert len(figs) == 4
    dep = figs[1]["data"][0]
    model, ds, _ = load_demo("housing_gb")
    rows = _sample("housing_gb", ia.SHAP_ROWS)
    res = TreeShap(model).interactions(rows)
    i, j = res.feature_names.index("median_income"), res.feature_names.index("house_age")
    np.testing.assert_array_equal(array(dep["x"]).astype(float), rows["median_income"].to_numpy())
    np.testing.assert_allclose(array(dep["y"]).astype(float), res.values[:, i, j] + res.values[:, j, i],
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(array(dep["marker"]["color"]).astype(float), rows["house_age"].to_numpy())
    # the picked pair is outlined on the heatmap, and kept in the URL
    fig, feats, _ = _heatmap(at)
    outlined = {(feats[int(s["y0"] + 0.5)], feats[int(s["x0"] + 0.5)]) for s in fig["layout"]["shapes"]}
    assert outlined == {("median_income", "house_age"), ("house_age", "median_income")}
    assert at.query_params["f1"] == "median_income" and at.query_params["f2"] == "house_age"
    # the 2D PDP and the ALE are those of the pair
    assert "median_income" in str(figs[2]["layout"]["xaxis"]["title"]) and "house_age" in str(figs[3]["layout"]["yaxis"]["title"])
    # picking the partner as the first feature moves the partner on, never a pair of one feature
    at.selectbox(key="ia_f1").set_value("house_age").run()
    assert not at.exception
    assert at.selectbox(key="ia_f2").value != "house_age"


def test_a_shared_link_opens_its_pair(demo_cards):
    at = _open("housing_gb", query={"model": "housing_gb", "f1": "rooms_per_household", "f2": "latitude"})
    assert at.selectbox(key="ia_f1").value == "rooms_per_household"
    assert at.selectbox(key="ia_f2").value == "latitude"
    assert "rooms_per_household" in figures(at)[1]["layout"]["title"]["text"]


def test_h_statistic_measure(demo_cards):
    at = _open("housing_gb")
    at.radio(key="ia_measure").set_value(ia.H_MEASURE).run()
    assert not at.exception
    fig, feats, z = _heatmap(at)
    assert "H statistic" in fig["layout"]["title"]["text"]
    model, ds, _ = load_demo("housing_gb")
    h = h_statistic(model, _sample("housing_gb", ia.H_ROWS), features=list(ds.X.columns), sample=None)
    m = h.matrix().loc[feats, feats].to_numpy(dtype=float)
    off = ~np.eye(len(feats), dtype=bool)
    np.testing.assert_allclose(z[off], m[off], rtol=1e-10, atol=1e-12)
    table = at.dataframe[0].value
    assert table.h_statistic.is_monotonic_decreasing
    assert set(table.pair.iloc[0].split(" × ")) == {"latitude", "longitude"}  # the strongest by H too


def test_classifier_follows_the_sidebar_class(demo_cards):
    at = _open("wine_gb")
    model, ds, card = load_demo("wine_gb")
    res = TreeShap(model).interactions(ds.X)  # all 178 rows
    for label in card["classes"]:
        at.sidebar.selectbox(key=state.CLASS_INDEX).set_value(label).run()
        assert not at.exception
        fig, feats, z = _heatmap(at)
        ci = card["classes"].index(label)
        pos = [res.feature_names.index(f) for f in feats]
        expected = 2 * res.mean_abs()[..., ci][np.ix_(pos, pos)]
        off = ~np.eye(len(feats), dtype=bool)
        np.testing.assert_allclose(z[off], expected[off], rtol=1e-12, atol=0)
        assert f"margin({label})" in fig["layout"]["title"]["text"]  # softmax scores
        assert len(feats) == ia.MAX_FEATURES  # 12 of the 13 features
        assert f"for the probability of {label}" in _texts(at)
    assert "all 178 rows" in _texts(at)
    # a binary boosting classifier: one output (log-odds of the positive class) and the H of its probability
    at.sidebar.selectbox(key=state.ACTIVE).set_value("breast_cancer_hgb").run()
    assert not at.exception
    assert "log-odds(malignant)" in _heatmap(at)[0]["layout"]["title"]["text"]
    assert len(figures(at)) == 4


def test_linear_model_has_no_interactions(demo_cards):
    at = _open("diabetes_linear")
    _, feats, z = _heatmap(at)
    assert len(feats) == 10 and np.nanmax(z) < 1e-9
    assert any("No interactions" in i.value for i in at.info)
    assert "exact SHAP" in _texts(at)
    at.radio(key="ia_measure").set_value(ia.H_MEASURE).run()
    assert not at.exception
    _, _, zh = _heatmap(at)
    assert np.nanmax(zh) < 1e-9
    assert any("No interactions" in i.value and "H statistic" in i.value for i in at.info)


def test_many_features_non_tree_model_shows_h_only(demo_cards):
    at = _open("breast_cancer_logistic")
    assert at.radio(key="ia_measure").options == [ia.H_MEASURE]
    assert any("this model has 30" in i.value for i in at.info)
    fig, feats, z = _heatmap(at)
    assert "H statistic" in fig["layout"]["title"]["text"] and len(feats) == ia.MAX_FEATURES
    assert np.nanmax(z) > 0.05  # probabilities of a logistic model do interact
    figs = figures(at)
    assert len(figs) == 3  # no SHAP scatter: the heatmap, the 2D PDP and the ALE
    assert "mean_abs_shap_interaction" not in at.dataframe[0].value.columns
    assert "TreeShap" not in _texts(at) and "ExactShap" not in _texts(at)


def test_a_failing_computation_says_what_to_click(demo_cards, monkeypatch):
    def refuse(*args, **kwargs):
        raise ExplainerError("TreeShap.interactions cannot take these rows. Use ExactShap(model).interactions(X).")

    monkeypatch.setattr(ia, "shap_interactions", refuse)
    at = _open("housing_gb")
    text = _texts(at)
    assert "TreeShap" not in text and "ExactShap" not in text and "(X)" not in text
    assert any("H statistic" in w.value for w in at.warning)
    fig, _, _ = _heatmap(at)
    assert "H statistic" in fig["layout"]["title"]["text"]  # the page goes on with H


def test_the_shap_heatmap_is_drawn_before_h_and_stays_when_h_fails(demo_cards, monkeypatch):
    """The SHAP measure's heatmap does not wait for Friedman's H (the table's second column): when
    H fails, the heatmap and the SHAP column stay, and the page says why H is missing."""
    def refuse(*args, **kwargs):
        raise ExplainerError("h_statistic cannot take these rows.")

    monkeypatch.setattr(ia, "h_pairs", refuse)
    at = _open("housing_gb")
    fig, feats, z = _heatmap(at)
    assert "SHAP" in fig["layout"]["title"]["text"] and len(feats) >= 2
    assert any("Friedman's H" not in e.value and e.value for e in at.error)  # said, in the page's words
    assert "h_statistic(" not in _texts(at)
    pairs = [t for t in at.dataframe if "mean_abs_shap_interaction" in t.value.columns]
    assert pairs and pairs[0].value["mean_abs_shap_interaction"].notna().all()
    assert "h_statistic" not in pairs[0].value.columns or pairs[0].value["h_statistic"].isna().all()


def test_strongest_partner_for_the_shap_dependence_plot(demo_cards):
    housing = state.demo_context("housing_gb")
    assert ia.strongest_partner(housing, "latitude") == "longitude"
    assert ia.strongest_partner(housing, "longitude") == "latitude"
    assert ia.strongest_partner(housing, "no such feature") is None
    assert ia.strongest_partner(state.demo_context("diabetes_linear"), "bmi") is None  # additive: no partner
    logistic = state.demo_context("breast_cancer_logistic")  # no SHAP interactions: by H
    partner = ia.strongest_partner(logistic, "mean radius")
    assert partner in logistic.X.columns and partner != "mean radius"


def test_report_section(demo_cards):
    from dashboard import report

    sec = ia.report_section(state.demo_context("housing_gb"))
    assert sec.heading == "Feature interactions" and "500 rows" in sec.caption
    assert list(sec.table.columns) == ["mean |SHAP interaction|", "H"] and len(sec.table) == 10
    assert set(sec.table.index[0].split(" × ")) == {"latitude", "longitude"}
    assert sec.figure.data[0].type == "heatmap"
    html = report.build_report("Glassbox", {"Model": "x"}, [sec])
    assert "Feature interactions" in html and ("latitude × longitude" in html or "longitude × latitude" in html)


def test_report_includes_interactions_when_ticked():
    """The report's "Feature interactions" part: off by default, in the preview once ticked."""
    from tests.views._app import open_page

    at = open_page("views/report.py", demo="housing_gb")
    assert not at.exception, at.exception
    preview = lambda: "\n".join(m.value for m in at.markdown)  # noqa: E731
    assert "Feature interactions" not in preview()
    at.checkbox(key="rep_inter").check().run()
    assert not at.exception, at.exception
    assert "**Feature interactions**" in preview(), preview()
    assert not [i.value for i in at.info if "interactions" in i.value.lower()]


def test_second_order_ale_on_every_row_when_asked(demo_cards, monkeypatch):
    """Above ALE_MAX_ROWS the pair's second-order ALE starts from the seeded sample and the page
    offers every row (issue #31): with the toggle on, the heatmap is the ALE of the whole table
    (computed in a worker thread) and the caption says so; within the sample size, no toggle."""
    from dashboard.state import effects
    from explainers.ale import ale

    at = _open("housing_gb")
    assert not [t for t in at.toggle if t.label.startswith("ALE on every row")]
    monkeypatch.setattr(effects, "ALE_MAX_ROWS", 300)
    at = _open("housing_gb")
    at.selectbox(key="ia_f1").set_value("median_income").run()
    at.selectbox(key="ia_f2").set_value("house_age").run()
    ctx = state.demo_context("housing_gb")

    def cells(res):
        f = np.asarray(res.effect, dtype=float)
        return ((f[:-1, :-1] + f[:-1, 1:] + f[1:, :-1] + f[1:, 1:]) / 4).T

    def shown():
        heat = [t for g in figures(at) for t in g["data"] if t.get("name") == "interaction (2nd-order ALE)"]
        assert len(heat) == 1
        return array(heat[0]["z"]).astype(float)

    sample = effects.ale(ctx, ("median_income", "house_age"), 10)
    assert int(sample.counts.sum()) <= 300
    np.testing.assert_allclose(shown(), cells(sample), rtol=0, atol=1e-12)
    assert any("seeded sample of 300 of the" in c.value for c in at.caption)
    toggle = [t for t in at.toggle if t.label.startswith("ALE on every row")]
    assert len(toggle) == 1 and toggle[0].value is False
    toggle[0].set_value(True).run()
    assert not at.exception
    want = effects.scale_named(ale(effects.effects_model(ctx), ctx.X, ["median_income", "house_age"], n_bins=10), ctx)
    assert int(want.counts.sum()) == len(ctx.X) > 300
    np.testing.assert_allclose(shown(), cells(want), rtol=0, atol=1e-12)
    assert any(f"ALE on every one of the {len(ctx.X):,} rows" in c.value for c in at.caption)


def test_every_row_heatmap_when_asked(demo_cards, monkeypatch):
    """A sample of a larger table offers the mean |SHAP interaction| of every row: its heatmap
    holds every row's means for the sample heatmap's features, and the link keeps the switch. The
    time it takes is said under the switch while it is off, never beside the finished chart."""
    from dashboard.state import every_row

    monkeypatch.setattr(every_row, "interactions_every_row_seconds", lambda ctx: 125.0)
    at = _open("housing_gb")
    _, feats, _ = _heatmap(at)
    toggle = [t for t in at.toggle if t.label == "Mean |SHAP interaction| of every row (2,000)"]
    assert len(toggle) == 1 and toggle[0].value is False
    assert "Every row takes about 2 min." in [c.value for c in at.caption]
    assert not any("every row" in json.dumps(f["layout"].get("title", "")) for f in figures(at))
    toggle[0].set_value(True).run()
    assert not at.exception, at.exception
    model, ds, _ = load_demo("housing_gb")
    full = TreeShap(model).interactions(ds.X, nan_is_missing="auto")  # every one of the 2,000 rows
    every = [f for f in figures(at) if "every row" in json.dumps(f["layout"].get("title", ""))]
    assert len(every) == 1
    heat = every[0]["data"][0]
    assert [str(v) for v in array(heat["x"])] == [str(v) for v in array(figures(at)[0]["data"][0]["x"])]
    pos = [full.feature_names.index(f) for f in feats]
    expected = 2 * full.mean_abs()[np.ix_(pos, pos)]
    z = array(heat["z"]).astype(float)
    off = ~np.eye(len(feats), dtype=bool)
    np.testing.assert_allclose(z[off], expected[off], rtol=1e-12, atol=0)
    assert np.isnan(z[~off]).all()
    assert any("every one of the 2,000 rows" in c.value for c in at.caption)
    assert not any("takes about" in c.value for c in at.caption)
    assert at.query_params.get("every") in (["true"], "true", ["1"], "1", ["True"], "True"), dict(at.query_params)


def test_every_row_switch_says_the_rows_kept_from_a_stop(monkeypatch):
    """Off, after a Stop: how many rows are done and what the rest take."""
    from dashboard.state import every_row

    monkeypatch.setattr(every_row, "interactions_every_row_seconds", lambda ctx: 89.0)
    monkeypatch.setattr(every_row, "interaction_rows_added", lambda ctx: 500)
    at = _open("housing_gb")
    assert "500 of the 2,000 rows are done (kept from a Stop); the rest take about 89 s." in [c.value for c in at.caption]


def test_a_table_the_sample_covers_offers_no_every_row(demo_cards):
    at = _open("wine_gb")  # 178 rows, all of them in the sample
    assert not [t for t in at.toggle if "every row" in t.label]


def test_every_row_interactions_stopped_midway_keep_their_rows_and_go_on(monkeypatch):
    """A Stop while every row's interaction values are added keeps the rows added: asking again goes
    on from there (no row explained twice), every output is kept, and the means are those of every
    row, in blocks no larger than BLOCK_BYTES allows."""
    import time

    import explainers.shap as shap_mod
    from dashboard.state import every_row
    from dashboard.state.cache import ResultCache
    from dashboard.state.context import demo_context
    from dashboard.figures.interactions import interaction_strength

    monkeypatch.setattr(every_row, "result_cache", lambda cache=ResultCache(): cache)
    monkeypatch.setattr(every_row, "first_block", lambda fast, fixed, per_row: 50)
    monkeypatch.setattr(every_row, "next_block", lambda block, took, fixed: block)
    monkeypatch.setattr(every_row, "_POLL_S", 0.01)
    ctx = demo_context("wine_gb")  # 178 rows, 13 features, 3 classes
    # at most 37 rows of 13 x 13 x 3 values (and as much again for their sums) per block
    monkeypatch.setattr(every_row, "BLOCK_BYTES", 37 * 2 * 8 * 13 * 13 * 3)
    assert every_row._interaction_plan(ctx, "tree")[2] == 37
    explained = []
    real = shap_mod.TreeShap.interactions

    def counted(self, X, **kw):  # slowed: the Stop comes while blocks are left
        explained.append(len(X))
        time.sleep(0.1)
        return real(self, X, **kw)

    monkeypatch.setattr(shap_mod.TreeShap, "interactions", counted)

    class Stop(Exception):
        pass

    def stop_after_a_block(done, total):
        if done >= 37:
            raise Stop

    with pytest.raises(Stop):
        every_row.interactions_every_row(ctx, stop_after_a_block)
    deadline = time.time() + 60
    while every_row._interaction_sums(ctx, "tree").worker.is_alive() and time.time() < deadline:
        time.sleep(0.01)
    kept = every_row.interaction_rows_added(ctx)
    assert 37 <= kept < 178 and kept % 37 == 0
    seen = []
    res = every_row.interactions_every_row(ctx, lambda done, total: seen.append((done, total)))
    assert sum(explained) == 178 and max(explained) == 37  # every row once, no block over the bound
    assert seen[0][0] == kept and seen[-1] == (178, 178)
    full = real(TreeShap(ctx.model), ctx.X, nan_is_missing="auto")
    assert res.n_rows == 178 and res.n_outputs == 3 and list(res.feature_names) == list(full.feature_names)
    for ci in range(3):
        got = interaction_strength(res, class_index=ci).to_numpy()
        want = interaction_strength(full, class_index=ci).to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        sel = full.select(ci)
        np.testing.assert_allclose(res.select(ci).shap_scale[0], np.abs(sel.shap_values).mean(), rtol=1e-12)
        np.testing.assert_allclose(np.diag(res.select(ci).pair), np.abs(np.diagonal(sel.values, axis1=1, axis2=2)).mean(0),
                                   rtol=1e-12)
    assert every_row.interactions_every_row_seconds(ctx) == 0.0


def test_time_left_follows_the_pace_of_rows_added():
    """Before any row, the estimate is the cost line's; once rows took a second, the rest is
    estimated at their pace (a line probed on a busy machine said 10 minutes for 2 of work)."""
    from dashboard.state.every_row import _Sums

    sums = _Sums()
    assert sums.seconds_left(1000, lambda left: 7.0 * left) == 7000.0
    sums.done, sums.seconds = 100, 0.5  # under a second: still the line's
    assert sums.seconds_left(1000, lambda left: 7.0 * left) == 6300.0
    sums.seconds = 2.0
    assert sums.seconds_left(1000, lambda left: 7.0 * left) == pytest.approx(18.0, rel=1e-12)
    sums.done = 1000
    assert sums.seconds_left(1000, lambda left: 7.0 * left) == 0.0


def test_every_row_estimate_from_block_sized_probes(monkeypatch):
    """The every-row estimate's line comes from two block-sized probes (256 and 1,024 rows, the best
    of two runs each), not from the few rows of the page's line; a model whose larger probe would be
    slow by that line keeps it, with the tree walk's rows shared among its threads."""
    from types import SimpleNamespace

    from dashboard.state import every_row
    from dashboard.state.cache import ResultCache
    from dashboard.state.context import demo_context
    from explainers.shap.interactions import interaction_threads

    cache = ResultCache()
    monkeypatch.setattr(every_row, "result_cache", lambda: cache)
    ctx = demo_context("housing_gb")  # 2,000 rows, a tree model
    clock = [0.0]
    calls = []

    def run(explainer, method, rows):  # a call costs 10 ms plus 0.1 ms a row (a run once 5 ms slower)
        calls.append(len(rows))
        clock[0] += 0.01 + 1e-4 * len(rows) + (0.005 if len(calls) % 2 else 0.0)

    monkeypatch.setattr(ia, "interactions_of", run)
    from dashboard.state import costs

    monkeypatch.setattr(costs, "time", SimpleNamespace(perf_counter=lambda: clock[0]))  # the probes' clock
    monkeypatch.setattr(ia, "shap_interaction_line", lambda ctx, method: (0.001, 1e-6))
    fixed, per_row = every_row.interaction_block_line(ctx, "tree")
    assert calls == [256, 256, 1024, 1024]
    assert fixed == pytest.approx(0.01, rel=1e-9) and per_row == pytest.approx(1e-4, rel=1e-9)
    first, _, most = every_row._interaction_plan(ctx, "tree")
    want = every_row.blocks_seconds(2000, min(first, most), fixed, per_row)
    assert every_row.interactions_every_row_seconds(ctx) == pytest.approx(want, rel=1e-12)
    # a slow model: no probe, the page's line (its rows shared among the threads a block uses)
    cache.clear()
    calls.clear()
    monkeypatch.setattr(ia, "shap_interaction_line", lambda ctx, method: (0.001, 1e-3))
    fixed, per_row = every_row.interaction_block_line(ctx, "tree")
    threads = interaction_threads(TreeShap(ctx.model), every_row._interaction_plan(ctx, "tree")[2])
    assert calls == [] and fixed == 0.001 and per_row == pytest.approx(1e-3 / threads, rel=1e-12)


def test_every_row_of_the_exact_game(monkeypatch):
    """A model without trees (the exact game over its background) gets every row's interactions too:
    the means equal those of ExactShap on every row, block by block."""
    from dashboard.state import every_row
    from dashboard.state.cache import ResultCache
    from dashboard.state.context import demo_context
    from dashboard.figures.interactions import interaction_strength
    from explainers.shap import ExactShap

    monkeypatch.setattr(every_row, "result_cache", lambda cache=ResultCache(): cache)
    monkeypatch.setattr(every_row, "first_block", lambda fast, fixed, per_row: 150)
    monkeypatch.setattr(every_row, "next_block", lambda block, took, fixed: block)
    ctx = demo_context("diabetes_linear")  # 442 rows, 10 features: the exact game, a sample of 200
    assert ia.interaction_method(ctx)[0] == "exact" and ia.shap_interactions(ctx, ia.EXACT_ROWS).n_rows < len(ctx.X)
    res = every_row.interactions_every_row(ctx)
    full = ExactShap(ctx.model, every_row.background(ctx, ia.EXACT_BACKGROUND)).interactions(ctx.X)
    assert res.n_rows == len(ctx.X) and res.method == "exact"
    np.testing.assert_allclose(interaction_strength(res).to_numpy(), interaction_strength(full).to_numpy(),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res.shap_scale[0], np.abs(full.shap_values).mean(), rtol=1e-12)
    assert every_row.interactions_every_row_seconds(ctx) == 0.0
    at = _open("diabetes_linear")
    assert [t for t in at.toggle if t.label == "Mean |SHAP interaction| of every row (442)"]
