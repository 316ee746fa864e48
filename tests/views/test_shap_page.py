"""The SHAP page through AppTest: waterfall, force, masks at 0, global views."""

import json

import numpy as np
import pytest

from dashboard import state
from demo_models import build
from explainers.shap import explain
from tests.plotly_json import array, figures
from tests.views._app import load_demo, open_page

def _page(demo=state.DEFAULT_DEMO):
    return open_page("views/shap.py", demo)


def _oracle(name, card, rows, method="auto", missing=None):
    model, ds, _ = load_demo(name)
    bg = ds.X.iloc[: card["n_train"]]
    take = np.sort(np.random.default_rng(0).choice(len(bg), 100, replace=False)) if len(bg) > 100 else None
    bg = bg if take is None else bg.iloc[take]
    return explain(model, ds.X.iloc[rows], background=bg, method=method, missing=missing), ds


def test_waterfall_carries_the_attributions(demo_cards):
    at = _page()
    fig = figures(at)[0]
    bar = fig["data"][0]
    res, ds = _oracle(state.DEFAULT_DEMO, demo_cards[state.DEFAULT_DEMO], [0])
    idx = array(bar["customdata"]).astype(int)
    x = array(bar["x"]).astype(float)
    phi = res.values[0]
    for j, v in zip(idx, x):
        if j >= 0:
            assert v == pytest.approx(phi[j], rel=1e-9, abs=1e-9)
    # the bars run from the base value to the prediction
    assert float(array(bar["base"])[0]) + x.sum() == pytest.approx(res.predictions[0], rel=1e-9)
    line = [m.value for m in at.markdown if "base " in m.value][0]
    assert f"{res.predictions[0]:.6g}" in line

    # the force view shows the same contributions
    at.radio(key="shap_view").set_value("force").run()
    assert not at.exception
    force = figures(at)[0]
    assert force["layout"]["title"] != fig["layout"]["title"]


def test_masked_feature_is_zero_and_masked_prediction_shown(demo_cards):
    at = _page()
    at.multiselect(key="shap_mask").set_value(["bmi"]).run()
    assert not at.exception
    bar = figures(at)[0]["data"][0]
    labels = list(figures(at)[0]["layout"]["yaxis"]["ticktext"])
    j = labels.index("bmi = NA (missing)")
    assert float(array(bar["x"])[j]) == 0.0
    res, _ = _oracle(state.DEFAULT_DEMO, demo_cards[state.DEFAULT_DEMO], [0], missing=["bmi"])
    assert res.values[0, 2] == 0.0
    text = " ".join(m.value for m in at.markdown)
    assert f"f_S(x_S) = {res.predictions[0]:.6g}" in text
    assert "with bmi missing" in text


def test_global_view_on_a_linear_classifier(demo_cards):
    name = "breast_cancer_logistic"
    at = _page(name)
    assert len(figures(at)) == 1  # the row's waterfall; the global view is one toggle away
    at.toggle(key="shap_global").set_value(True).run()
    assert not at.exception
    figs = figures(at)
    assert len(figs) == 4  # waterfall, beeswarm, mean |SHAP|, dependence
    n = 1_000
    X = state.sample_rows(_ctx(name), n)
    res, _ = _oracle(name, demo_cards[name], X.index.to_numpy())
    mean_abs = dict(zip(array(figs[2]["data"][0]["y"]), array(figs[2]["data"][0]["x"]).astype(float)))
    want = np.abs(res.values).mean(axis=0)
    for j, f in enumerate(res.feature_names):
        if f in mean_abs:
            assert mean_abs[f] == pytest.approx(want[j], rel=1e-9)


def _ctx(name):
    """Stands in for the page's context: sample_rows only reads its X."""
    class Ctx:
        X = load_demo(name)[1].X

    return Ctx()


def test_wrong_method_is_a_sentence():
    at = _page()
    at.selectbox(key="shap_method").set_value("linear").run()
    assert not at.exception
    assert at.error and "linear" in at.error[0].value.lower()


def test_pick_row_by_error_and_classifier_class():
    at = _page("wine_gb")
    at.radio(key="shap_pick").set_value("largest error").run()
    assert not at.exception
    at.sidebar.selectbox(key=state.CLASS_INDEX).set_value("class_2").run()
    assert not at.exception
    assert "class_2" in figures(at)[0]["layout"]["title"]["text"]


def test_global_view_from_a_precomputed_batch_run(tmp_path, demo_cards, monkeypatch):
    from explainers.batch import explain_file, load_attributions

    monkeypatch.setenv(state.BATCH_ROOTS_ENV, str(tmp_path))  # the operator allows this folder

    name = state.DEFAULT_DEMO
    p = build.paths(name)
    data = tmp_path / "rows.parquet"
    import pandas as pd

    pd.read_parquet(p["parquet"]).drop(columns=demo_cards[name]["target"]).to_parquet(data)
    out = tmp_path / "shap_out"
    explain_file(p["skops"], data, out, chunk_rows=1000, block_rows=1000)
    at = _page()
    at.radio(key="shap_source").set_value("a precomputed batch run").run()
    at.text_input(key="shap_batch_dir").set_value(str(out)).run()
    assert not at.exception, at.exception
    assert not at.warning  # the same model file
    want = load_attributions(out, sample=1_000)
    assert any(f"{len(want.values):,} of 442 precomputed rows" in c.value for c in at.caption)
    bars = figures(at)[2]["data"][0]
    got = dict(zip(array(bars["y"]), array(bars["x"]).astype(float)))
    mean_abs = np.abs(want.values).mean(axis=0)
    for j, f in enumerate(want.feature_names):
        if f in got:
            assert got[f] == pytest.approx(mean_abs[j], rel=1e-12)
    # a folder inside the allowed one without a run: the batch reader's sentence, not a traceback
    at.text_input(key="shap_batch_dir").set_value(str(tmp_path)).run()
    assert not at.exception and at.error
    assert "batch" in at.error[0].value and "No batch run can be opened" not in at.error[0].value


def test_dependence_coloured_by_the_strongest_interaction():
    """On the housing demo, longitude's strongest partner is latitude (the pair the Interactions page ranks first)."""
    at = _page("housing_gb")
    at.toggle(key="shap_global").set_value(True).run()
    assert not at.exception, at.exception
    at.selectbox(key="shap_dep").set_value("longitude").run()
    at.selectbox(key="shap_dep_col").set_value("(strongest interaction)").run()
    assert not at.exception, at.exception
    assert any("Coloured by latitude, the feature that interacts most with longitude" in c.value
               for c in at.caption), [c.value for c in at.caption]
    dep = figures(at)[-1]
    assert "latitude" in json.dumps(dep), "the dependence plot is not coloured by latitude"


def test_mean_abs_shap_of_every_row_of_a_larger_table(demo_cards):
    """The global views explain a sample; on a larger table the page offers the mean |SHAP| of
    every row (issue #31): the bars are the definition's over all 2,000 rows (the oracle's values
    with the page's background), not the sample's; the toggle travels in the link."""
    at = _page("housing_gb")
    at.toggle(key="shap_global").set_value(True).run()
    at.number_input(key="shap_n").set_value(300).run()
    assert not at.exception
    toggle = [t for t in at.toggle if t.label.startswith("Mean |SHAP| of every row (2,000")]
    assert len(toggle) == 1 and toggle[0].value is False
    toggle[0].set_value(True).run()
    assert not at.exception
    res, ds = _oracle("housing_gb", demo_cards["housing_gb"], list(range(2000)))
    want = dict(zip(ds.X.columns, np.abs(res.values).mean(axis=0)))
    every = [f for f in figures(at) if "2,000 rows" in json.dumps(f["layout"].get("title", ""))]
    assert len(every) == 1
    bar = every[0]["data"][0]
    got = dict(zip([str(v) for v in array(bar["y"])], array(bar["x"]).astype(float)))
    assert len(got) == len(want)
    for name, v in got.items():
        assert v == pytest.approx(want[name], rel=1e-9, abs=1e-12)
    assert any("every one of the 2,000 rows" in c.value for c in at.caption)
    assert at.query_params.get("every") in (["true"], "true", ["1"], "1", ["True"], "True"), dict(at.query_params)


def test_every_row_stopped_midway_keeps_its_rows_and_goes_on(monkeypatch):
    """A Stop while every row is explained keeps the rows added: asking again goes on from there
    (no row explained twice), and the mean is that of every row."""
    from dashboard.state import costs, every_row
    from dashboard.state.cache import ResultCache
    from dashboard.state.context import demo_context
    from dashboard.state.rows import background

    monkeypatch.setattr(every_row, "result_cache", lambda cache=ResultCache(): cache)
    monkeypatch.setattr(every_row, "first_block", lambda fast, fixed, per_row: 300)
    monkeypatch.setattr(every_row, "next_block", lambda block, took, fixed: block)
    monkeypatch.setattr(every_row, "_POLL_S", 0.01)
    ctx = demo_context("housing_gb")
    output, _ = state.shap_setting(ctx, "auto")
    import explainers.shap as shap_mod

    explained = []
    real = shap_mod.explain
    monkeypatch.setattr(shap_mod, "explain", lambda model, X, **kw: explained.append(len(X)) or real(model, X, **kw))

    class Stop(Exception):
        pass

    def stop_after_a_block(done, total):
        if done >= 300:
            raise Stop

    with pytest.raises(Stop):
        every_row.mean_abs_every_row(ctx, "auto", output, stop_after_a_block)
    import time

    deadline = time.time() + 60
    while every_row._sums(ctx, "auto", output).worker.is_alive() and time.time() < deadline:
        time.sleep(0.01)
    kept = every_row.rows_added(ctx, "auto", output)
    assert 300 <= kept < 2000 and kept % 300 == 0
    res = every_row.mean_abs_every_row(ctx, "auto", output)
    assert sum(explained) == 2000  # every row once
    full = real(ctx.model, ctx.X, background=background(ctx), method="auto", output=output)
    np.testing.assert_allclose(res.mean, np.abs(full.values).mean(axis=0), rtol=1e-12, atol=1e-15)
    assert res.n_rows == 2000 and list(res.feature_names) == list(full.feature_names)
    assert costs.blocks_seconds(0, 300, 0.1, 0.01) == 0.0 and every_row.every_row_seconds(ctx, "auto", output) == 0.0


def test_every_row_estimate_probes_the_output_every_row_is_explained_in(monkeypatch):
    """The every-row estimate's block-sized probes explain what the rows will be explained in: the
    log-odds where the probability game is out of reach; the page's line where a probe fails."""
    import explainers.shap as shap_mod
    from dashboard.state import every_row
    from dashboard.state.cache import ResultCache
    from dashboard.state.context import demo_context
    from dashboard.state.outputs import log_odds_output
    from explainers.errors import OutOfReachError

    cache = ResultCache()
    monkeypatch.setattr(every_row, "result_cache", lambda: cache)
    monkeypatch.setattr(every_row, "shap_cost_line", lambda ctx, method, output: (0.5, 0.25))
    ctx = demo_context("breast_cancer_xgb")
    asked = []

    def explain(model, X, **kw):
        asked.append(kw["output"])
        if kw["output"] == "proba":
            raise OutOfReachError("out of reach")

    monkeypatch.setattr(shap_mod, "explain", explain)
    monkeypatch.setattr(every_row, "_block_line", lambda ctx, line, run: run(ctx.X.iloc[:3]) or (1.0, 2.0))
    assert every_row.shap_block_line(ctx, "auto", "proba") == (1.0, 2.0)
    assert asked == ["proba", log_odds_output(ctx)]

    def broken(model, X, **kw):
        raise ValueError("no")

    cache.clear()
    monkeypatch.setattr(shap_mod, "explain", broken)
    assert every_row.shap_block_line(ctx, "auto", "proba") == (0.5, 0.25)
