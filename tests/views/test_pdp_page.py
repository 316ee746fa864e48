"""The PDP / ICE / ALE page through AppTest: figures carry scikit-learn's numbers."""

import numpy as np
import pytest
from sklearn.inspection import partial_dependence as sk_partial_dependence

from dashboard import state
from tests.plotly_json import array, figures
from tests.views._app import load_demo, open_page

def _page(demo=state.DEFAULT_DEMO):
    return open_page("views/pdp.py", demo)


def _model(name, card):
    model, ds, _ = load_demo(name)
    return model, ds.X


def _pd_trace(fig):
    """The partial-dependence line: the trace that is not ICE and not the rug."""
    for t in fig["data"]:
        if t.get("legendgroup") != "ice" and "rug" not in str(t.get("name", "")).lower() and t.get("mode") != "markers":
            return t
    raise AssertionError([t.get("name") for t in fig["data"]])


def test_1d_pdp_equals_scikit_learn_and_ale_beside_it(demo_cards):
    name = state.DEFAULT_DEMO
    at = _page()
    figs = figures(at)
    assert len(figs) == 2  # PDP + ALE
    model, X = _model(name, demo_cards[name])
    line = _pd_trace(figs[0])
    grid = array(line["x"]).astype(float)
    sk = sk_partial_dependence(model, X, ["age"], custom_values={"age": grid}, method="brute", kind="average")
    np.testing.assert_allclose(array(line["y"]).astype(float), sk["average"][0], rtol=1e-10, atol=1e-10)
    # ICE lines are there, and toggle off
    assert any(t.get("legendgroup") == "ice" for t in figs[0]["data"])
    at.toggle(key="pdp_ice").set_value(False).run()
    assert not any(t.get("legendgroup") == "ice" and t.get("visible", True) is True and
                   t.get("mode", "lines") == "lines" for t in figures(at)[0]["data"][1:])
    # centered ICE starts at 0
    at.toggle(key="pdp_ice").set_value(True).run()
    at.toggle(key="pdp_centered").set_value(True).run()
    assert not at.exception
    ice = [t for t in figures(at)[0]["data"] if t.get("legendgroup") == "ice"]
    first = [array(t["y"]).astype(float)[0] for t in ice if len(array(t["y"]))]
    np.testing.assert_allclose(first, 0.0, atol=1e-12)


def test_2d_marks_the_empty_corner_on_correlated_housing(demo_cards):
    at = _page("housing_gb")
    at.selectbox(key="pdp_f1").set_value("latitude").run()
    at.selectbox(key="pdp_f2").set_value("longitude").run()
    assert not at.exception
    fig = figures(at)[0]
    z = array(fig["data"][0]["z"]).astype(float)
    caption = [c.value for c in at.caption if "cells have no data" in c.value][0]
    n_empty = int(caption.split()[0])
    assert n_empty > 0.2 * z.size  # the coast leaves much of the box empty
    at.radio(key="pdp_empty").set_value("hide").run()
    z_hidden = array(figures(at)[0]["data"][0]["z"]).astype(float)
    assert int(np.isnan(z_hidden).sum()) == n_empty
    # lat high & lon high (north-east, inland) is the empty corner
    assert np.isnan(z_hidden[-1, -1])
    at.toggle(key="pdp_points").set_value(True).run()
    assert not at.exception and len(figures(at)[0]["data"]) >= 2


def test_2d_second_order_ale_beside_the_pdp(demo_cards):
    from explainers.ale import ale

    at = _page("housing_gb")
    at.selectbox(key="pdp_f1").set_value("latitude").run()
    at.selectbox(key="pdp_f2").set_value("longitude").run()
    figs = figures(at)
    assert not at.exception and len(figs) == 2  # 2D PDP + second-order ALE
    heat = figs[1]["data"][0]
    model, X = _model("housing_gb", demo_cards["housing_gb"])
    r = ale(model, X, ["latitude", "longitude"], n_bins=10)
    np.testing.assert_allclose(array(heat["x"]).astype(float), r.grid[0], rtol=0, atol=1e-12)
    f = r.effect
    cells = ((f[:-1, :-1] + f[:-1, 1:] + f[1:, :-1] + f[1:, 1:]) / 4).T
    np.testing.assert_allclose(array(heat["z"]).astype(float), cells, rtol=0, atol=1e-10)
    # the correlated demo leaves empty cells: shaded over
    assert r.params["empty_cells"] > 0 and len(figs[1]["data"]) == 2
    at.radio(key="pdp_empty").set_value("show").run()
    assert len(figures(at)[1]["data"]) == 1


def test_classifier_class_switch_and_categorical(demo_cards):
    at = _page("wine_gb")
    before = _pd_trace(figures(at)[0])
    at.sidebar.selectbox(key=state.CLASS_INDEX).set_value("class_2").run()
    assert not at.exception
    after = _pd_trace(figures(at)[0])
    assert not np.allclose(array(before["y"]).astype(float), array(after["y"]).astype(float))
    # diabetes 'sex' has two values: shown as a categorical feature (a level mark per value)
    at = _page()
    at.selectbox(key="pdp_f1").set_value("sex").run()
    assert not at.exception
    marks = [t for t in figures(at)[0]["data"] if t.get("name") == "partial dependence"]
    assert marks and marks[0]["marker"]["symbol"] == "line-ew" and len(array(marks[0]["x"])) == 2


def test_returning_to_a_feature_is_cached():
    at = _page()
    at.selectbox(key="pdp_f1").set_value("bmi").run()
    at.selectbox(key="pdp_f1").set_value("age").run()
    cache = state.result_cache()
    misses = cache.misses
    at.selectbox(key="pdp_f1").set_value("bmi").run()
    assert not at.exception
    assert cache.misses == misses  # PDP and ALE of bmi came from the cache, nothing recomputed


def test_choices_survive_a_trip_to_another_page():
    at = _page()
    at.selectbox(key="pdp_f1").set_value("bmi").run()
    at.toggle(key="pdp_centered").set_value(True).run()
    at.switch_page("views/shap.py").run()
    at.multiselect(key="shap_mask").set_value(["s5"]).run()
    at.switch_page("views/pdp.py").run()
    assert not at.exception
    assert at.selectbox(key="pdp_f1").value == "bmi" and at.toggle(key="pdp_centered").value is True
    at.switch_page("views/shap.py").run()
    assert at.multiselect(key="shap_mask").value == ["s5"]


def test_model_switch_with_choices_from_the_old_model():
    at = _page()
    at.selectbox(key="pdp_colour").set_value("s5").run()
    at.switch_page("views/shap.py").run()
    at.multiselect(key="shap_mask").set_value(["bmi"]).run()
    at.radio(key="shap_pick").set_value("highest prediction").run()
    at.toggle(key="shap_global").set_value(True).run()
    at.selectbox(key="shap_dep").set_value("s5").run()
    at.switch_page("views/importance.py").run()
    at.selectbox(key="imp_sort").set_value(at.selectbox(key="imp_sort").options[1]).run()
    at.switch_page("views/whatif.py").run()
    at.multiselect(key="whatif_mask").set_value(["bmi"]).run()
    at.sidebar.selectbox(key=state.ACTIVE).set_value("wine_gb").run()
    for page in ("whatif", "importance", "shap", "pdp"):
        at.switch_page(f"views/{page}.py").run()
        assert not at.exception, (page, at.exception)
        assert not at.error, (page, [e.value for e in at.error])
    at.switch_page("views/shap.py").run()
    assert at.multiselect(key="shap_mask").value == []  # 'bmi' is not a wine feature


def test_ale_on_a_sample_equals_ale_of_the_sample_and_says_so(monkeypatch):
    """Above ALE_MAX_ROWS the ALE is computed on the seeded, class-stratified sample (issue #31):
    the same numbers as ALE of those rows, and the page says how many rows it used."""
    import numpy as np

    from dashboard.state import effects
    from dashboard.state.context import demo_context
    from dashboard.state.rows import view_rows
    from explainers.ale import ale

    monkeypatch.setattr(effects, "ALE_MAX_ROWS", 200)
    ctx = demo_context("breast_cancer_hgb")
    rows = view_rows(ctx, 200)
    assert len(rows) == 200 and np.array_equal(rows, view_rows(ctx, 200))
    share = ctx.y.value_counts(normalize=True)
    got = ctx.y.iloc[rows].value_counts(normalize=True)
    assert np.all(np.abs(got.reindex(share.index) - share) * 200 < 1.0)  # classes in proportion
    f = ctx.X.columns[0]
    res = effects.ale(ctx, f, 20)
    want = ale(effects.effects_model(ctx), ctx.X.iloc[rows], f, n_bins=20)
    want = effects.scale_named(want, ctx)
    np.testing.assert_allclose(res.effect, want.effect, rtol=0, atol=1e-12)
    assert np.array_equal(res.counts, want.counts) and int(res.counts.sum()) <= 200
    at = open_page("views/pdp.py", demo="breast_cancer_hgb")
    assert any(f"seeded sample of 200 of the {len(ctx.X):,} rows" in c.value for c in at.caption), \
        [c.value for c in at.caption]


def test_ale_on_every_row_when_asked_equals_the_exact_all_row_ale(monkeypatch):
    """Above ALE_MAX_ROWS the page offers the ALE of every row: with the toggle on, the chart's
    numbers are ALE of the whole table (computed in a worker thread), and the caption says so;
    on a table within the sample size there is no toggle."""
    import numpy as np

    from dashboard.state import effects
    from dashboard.state.context import demo_context
    from explainers.ale import ale
    from tests.plotly_json import array, figures

    at = open_page("views/pdp.py", demo="breast_cancer_hgb")
    assert not [t for t in at.toggle if t.label.startswith("ALE on every row")]
    monkeypatch.setattr(effects, "ALE_MAX_ROWS", 200)
    ctx = demo_context("breast_cancer_hgb")
    at = open_page("views/pdp.py", demo="breast_cancer_hgb")
    toggle = [t for t in at.toggle if t.label.startswith("ALE on every row")]
    assert len(toggle) == 1 and toggle[0].value is False
    toggle[0].set_value(True).run()
    assert not at.exception
    f = at.selectbox[[s.label for s in at.selectbox].index("Feature")].value
    want = effects.scale_named(ale(effects.effects_model(ctx), ctx.X, f, n_bins=20), ctx)
    effects_ = [want.effect] if want.effect.ndim == 1 else list(want.effect.T)  # the line of one class
    lines = [array(t["y"]) for g in figures(at) for t in g["data"] if t.get("name") == "ALE"]
    assert len(lines) == 1
    assert any(len(e) == len(lines[0]) and np.allclose(lines[0], e, rtol=0, atol=1e-12) for e in effects_)
    # the sample's ALE differs: the chart is not the first view's
    sample = effects.ale(ctx, f, 20)
    assert int(sample.counts.sum()) <= 200 < int(want.counts.sum()) == len(ctx.X)
    assert any(f"ALE on every one of the {len(ctx.X):,} rows" in c.value for c in at.caption), \
        [c.value for c in at.caption]


def test_partial_dependence_of_every_row_when_asked():
    """A sample smaller than the table offers the partial dependence of every row: with the switch on,
    the curve is the exact all-row PD (scikit-learn's, on the same grid), the ICE curves stay the
    sample's, the caption says both, and the 2D map too; with every row in the sample, no switch."""
    from sklearn.inspection import partial_dependence as sk_pd

    at = _page("housing_gb")  # 2,000 rows, all of them behind the first view
    assert not [t for t in at.toggle if "every row" in t.label and "Partial" in t.label]
    at.number_input(key="pdp_rows").set_value(300).run()
    assert not at.exception
    before = figures(at)[0]
    ice_before = [t for t in before["data"] if t.get("legendgroup") == "ice"]
    toggle = [t for t in at.toggle if t.label == "Partial dependence of every row (2,000)"]
    assert len(toggle) == 1 and toggle[0].value is False
    toggle[0].set_value(True).run()
    assert not at.exception, at.exception
    model, ds, _ = load_demo("housing_gb")
    f = at.selectbox(key="pdp_f1").value
    fig = figures(at)[0]
    line = _pd_trace(fig)
    grid = array(line["x"]).astype(float)
    np.testing.assert_array_equal(grid, array(_pd_trace(before)["x"]).astype(float))  # the sample's grid
    want = sk_pd(model, ds.X, [f], custom_values={f: grid}, method="brute", kind="average")["average"][0]
    np.testing.assert_allclose(array(line["y"]).astype(float), want, rtol=1e-10, atol=1e-10)
    assert not np.allclose(array(_pd_trace(before)["y"]).astype(float), want, rtol=1e-6)  # not the sample's
    ice = [t for t in fig["data"] if t.get("legendgroup") == "ice"]
    assert len(ice) == len(ice_before) > 0
    for a, b in zip(ice, ice_before):
        np.testing.assert_array_equal(array(a["y"]).astype(float), array(b["y"]).astype(float))
    assert any("the partial dependence of every one of the 2,000 rows, the ICE curves of a seeded sample of 300"
               in c.value for c in at.caption), [c.value for c in at.caption]
    assert at.query_params.get("every") in (["true"], "true", ["1"], "1", ["True"], "True"), dict(at.query_params)
    # two features: the map is every row's
    at.selectbox(key="pdp_f1").set_value("latitude").run()
    at.selectbox(key="pdp_f2").set_value("longitude").run()
    assert not at.exception
    heat = figures(at)[0]["data"][0]
    gx, gy = array(heat["x"]).astype(float), array(heat["y"]).astype(float)
    sk = sk_pd(model, ds.X, ["latitude", "longitude"], custom_values={"latitude": gx, "longitude": gy},
               method="brute", kind="average")["average"][0]
    np.testing.assert_allclose(array(heat["z"]).astype(float), sk.T, rtol=1e-10, atol=1e-10)
    assert any("the partial dependence of every one of the 2,000 rows." in c.value for c in at.caption)


def test_every_row_estimate_counts_the_brute_force_predictions():
    """Brute force predicts every row at each grid point (each cell for two features): the estimate
    is those predictions at the predict's seconds per row; the tree walk's is 0 (it says so in words)."""
    from dashboard.state import costs
    from dashboard.state.context import demo_context

    ctx = demo_context("diabetes_linear")
    one = state.pdp(ctx, ("bmi",), 20, (0.05, 0.95), 100)
    two = state.pdp(ctx, ("bmi", "age"), 7, (0.05, 0.95), 100)
    assert one.method == two.method == "brute"
    per_row = costs.predict_seconds_per_row(ctx)
    assert state.pdp_every_row_seconds(ctx, one) == pytest.approx(per_row * len(ctx.X) * len(one.grid[0]), rel=1e-12)
    assert state.pdp_every_row_seconds(ctx, two) == pytest.approx(
        per_row * len(ctx.X) * len(two.grid[0]) * len(two.grid[1]), rel=1e-12)
    assert per_row > 0
    tree = state.pdp(demo_context("housing_gb"), ("latitude",), 20, (0.05, 0.95), 100)
    assert tree.method == "tree" and state.pdp_every_row_seconds(demo_context("housing_gb"), tree) == 0.0
