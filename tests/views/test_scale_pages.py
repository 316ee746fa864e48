"""The sidebar's Scale (issue #24): a classifier with probabilities is explained on the
probability or the log-odds scale on every page that explains a prediction; the pick
stays across pages and in the link, and every figure names its scale."""
import numpy as np
import pytest

from dashboard import state
from explainers import ModelAdapter
from explainers.shap import TreeShap
from tests.plotly_json import array, figures
from tests.views._app import load_demo, open_page


def _background(ds, card):
    bg = ds.X.iloc[: card["n_train"]]
    take = np.sort(np.random.default_rng(0).choice(len(bg), 100, replace=False)) if len(bg) > 100 else None
    return bg if take is None else bg.iloc[take]


def _bars(at):
    bar = figures(at)[0]["data"][0]
    return array(bar["customdata"]).astype(int), array(bar["x"]).astype(float), figures(at)[0]


def test_shap_row_on_each_scale_equals_the_exact_values(demo_cards):
    name = "wine_gb"  # 13 features: the probability game is exact and affordable
    at = open_page("views/shap.py", name)
    model, ds, _ = load_demo(name)
    bg = _background(ds, demo_cards[name])
    ci = demo_cards[name]["classes"].index(at.sidebar.selectbox(key=state.CLASS_INDEX).value)
    proba = TreeShap(model, bg, mode="interventional", output="proba").explain(ds.X.iloc[[0]])
    idx, x, fig = _bars(at)
    for j, v in zip(idx, x):
        if j >= 0:
            assert v == pytest.approx(proba.values[0, j, ci], abs=1e-9)
    assert float(array(fig["data"][0]["base"])[0]) + x.sum() == pytest.approx(proba.predictions[0, ci], abs=1e-9)
    assert "probability" in fig["layout"]["title"]["text"].lower() or "P(" in fig["layout"]["title"]["text"]
    assert at.query_params.get("scale") in (None, "probability")

    at.sidebar.radio(key=state.SCALE).set_value(state.LOG_ODDS).run()
    assert not at.exception and at.query_params["scale"] == state.LOG_ODDS
    margin = TreeShap(model, bg, mode="interventional").explain(ds.X.iloc[[0]])
    idx, x, fig = _bars(at)
    for j, v in zip(idx, x):
        if j >= 0:
            assert v == pytest.approx(margin.values[0, j, ci], abs=1e-9)
    assert "margin" in fig["layout"]["title"]["text"]
    # the row picker lists the predictions on the chart's scale
    at.radio(key="shap_pick").set_value("highest prediction").run()
    box = at.selectbox(key="shap_row_sorted")
    top = int(box.value)
    raw = ModelAdapter(model).with_output("raw").predict(ds.X)[:, ci]
    assert top == int(np.argmax(raw))
    shown = float(str(box.options[0]).split("prediction ")[1].split(",")[0].replace("−", "-"))
    assert shown == pytest.approx(raw[top], rel=1e-3)  # the margin, not the probability
    at.radio(key="shap_pick").set_value("index").run()

    # the pick stays after a page switch and back, and in the link
    at.switch_page("views/pdp.py").run()
    assert at.sidebar.radio(key=state.SCALE).value == state.LOG_ODDS
    at.switch_page("views/shap.py").run()
    assert at.sidebar.radio(key=state.SCALE).value == state.LOG_ODDS
    _, x2, _ = _bars(at)
    np.testing.assert_allclose(np.sort(x2), np.sort(x), atol=1e-12)


def test_a_link_opens_the_log_odds_view():
    at = open_page("views/shap.py", query={"model": "wine_gb", "scale": state.LOG_ODDS})
    assert at.sidebar.radio(key=state.SCALE).value == state.LOG_ODDS
    assert "margin" in figures(at)[0]["layout"]["title"]["text"]


def test_out_of_reach_probabilities_say_so_and_show_log_odds(demo_cards):
    name = "breast_cancer_hgb"  # 30 features: a row and a background row part on more than 16
    at = open_page("views/shap.py", name)
    notes = [i.value for i in at.info if "out of reach" in i.value]
    assert notes and "log-odds" in notes[0]
    model, ds, _ = load_demo(name)
    margin = TreeShap(model, _background(ds, demo_cards[name]), mode="interventional").explain(ds.X.iloc[[0]])
    idx, x, fig = _bars(at)
    vals = margin.values[0] if margin.values.ndim == 2 else margin.values[0, :, -1]
    for j, v in zip(idx, x):
        if j >= 0:
            assert v == pytest.approx(vals[j], abs=1e-9)
    assert "log-odds" in fig["layout"]["title"]["text"] or "margin" in fig["layout"]["title"]["text"]


def test_linear_model_probabilities_are_not_swapped_for_an_estimate():
    at = open_page("views/shap.py", "breast_cancer_logistic")
    assert any("sampled estimate" in i.value for i in at.info)
    assert any("Method: linear" in c.value for c in at.caption)
    at.selectbox(key="shap_method").set_value("kernel").run()  # asked for: the estimate on probabilities
    assert not at.exception
    assert not any("sampled estimate" in i.value for i in at.info)
    assert any("output: proba" in c.value for c in at.caption)


def test_pdp_on_log_odds_is_the_definition(demo_cards):
    name = "breast_cancer_logistic"
    at = open_page("views/pdp.py", name)
    assert "P(" in figures(at)[0]["layout"]["yaxis"]["title"]["text"]
    at.sidebar.radio(key=state.SCALE).set_value(state.LOG_ODDS).run()
    assert not at.exception
    fig = figures(at)[0]
    assert "log-odds(" in fig["layout"]["yaxis"]["title"]["text"]
    model, ds, _ = load_demo(name)
    feature = at.selectbox(key="pdp_f1").value
    ci = demo_cards[name]["classes"].index(at.sidebar.selectbox(key=state.CLASS_INDEX).value)
    line = [t for t in fig["data"] if t.get("name") in ("partial dependence", "average", "PD")] or fig["data"][-2:]
    xs = array(line[0]["x"]).astype(float)
    ys = array(line[0]["y"]).astype(float)
    X = ds.X if len(ds.X) <= 2000 else None
    assert X is not None
    for gx, gy in list(zip(xs, ys))[:: max(1, len(xs) // 4)]:
        Z = X.copy()
        Z[feature] = gx
        p = np.clip(model.predict_proba(Z)[:, ci], 1e-15, 1 - 1e-15)
        assert gy == pytest.approx(float(np.mean(np.log(p) - np.log1p(-p))), abs=1e-8)


def test_a_forest_on_log_odds_is_not_swapped_for_an_estimate():
    import pandas as pd
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier
    from streamlit.testing.v1 import AppTest

    from tests.views._app import APP

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 14)), columns=[f"f{i}" for i in range(14)])
    y = np.where(X.f0 + X.f1 > 0, "yes", "no")
    forest = RandomForestClassifier(30, max_depth=5, random_state=0).fit(X, y)
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.file_uploader(key=state.MODEL_FILE).set_value(("rf.skops", sio.dumps(forest), "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("d.csv", X.assign(t=y).to_csv(index=False).encode(), "text/csv"))
    at.run()
    at.selectbox(key=state.TARGET_COL).set_value("t").run()
    next(b for b in at.button if b.label == "Load model and data").click().run()
    at.switch_page("views/shap.py").run()
    at.sidebar.radio(key=state.SCALE).set_value(state.LOG_ODDS).run()
    assert not at.exception, at.exception
    assert any("sampled estimate" in i.value and "probability" in i.value for i in at.info)
    assert any("output: proba" in c.value for c in at.caption)  # the forest's exact Tree SHAP
    at.selectbox(key="shap_method").set_value("kernel").run()  # asked for: the estimate on log-odds
    assert any("output: log_odds" in c.value for c in at.caption)
