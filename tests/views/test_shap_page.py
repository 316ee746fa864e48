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
