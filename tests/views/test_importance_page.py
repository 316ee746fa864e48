"""The importance page through AppTest: figures carry the oracle's numbers."""
import json

import numpy as np
import pandas as pd
import pytest
from sklearn.inspection import permutation_importance as sk_permutation_importance
from streamlit.testing.v1 import AppTest

from dashboard import state
from tests.plotly_json import array, figures
from tests.views._app import APP, load_demo, open_page

_figures = figures


def _page(demo):
    return open_page("views/importance.py", demo)


def _demo(name, card):
    model, ds, _ = load_demo(name)
    return model, ds


def test_forest_shows_three_methods_with_oracle_values(demo_cards):
    name = "diabetes_forest"
    at = _page(name)
    bars = _figures(at)[0]
    names = [t["name"] for t in bars["data"]]
    from explainers.shap import EXPLAINERS

    # mean |SHAP| joins by default where SHAP is fast (TreeShap for this forest)
    assert names == ["MDI", "OOB permutation (MSE)", "Holdout permutation (R²)"] + (
        ["Mean |SHAP|"] if "tree" in EXPLAINERS else [])
    model, ds = _demo(name, demo_cards[name])
    n = demo_cards[name]["n_train"]
    # MDI shares are scikit-learn's feature_importances_
    mdi = dict(zip(array(bars["data"][0]["y"]), array(bars["data"][0]["x"])))
    want = dict(zip(ds.X.columns, model.feature_importances_ / model.feature_importances_.sum()))
    for f in want:
        assert mdi[f] == pytest.approx(want[f], rel=1e-9, abs=1e-12)
    # holdout permutation shares come from scikit-learn's permutation_importance on the held-out rows
    sk = sk_permutation_importance(model, ds.X.iloc[n:], ds.y.iloc[n:], n_repeats=5, random_state=0)
    clipped = np.clip(sk.importances_mean, 0, None)
    want = dict(zip(ds.X.columns, clipped / clipped.sum()))
    got = dict(zip(array(bars["data"][2]["y"]), array(bars["data"][2]["x"])))
    for f in want:
        assert got[f] == pytest.approx(want[f], rel=1e-9, abs=1e-12)
    heat = _figures(at)[1]
    assert heat["data"][0]["type"] == "heatmap"
    np.testing.assert_allclose(np.diag(array(heat["data"][0]["z"]).astype(float)), 1.0)
    # sorting by a method reorders the bars by that method
    at.selectbox(key="imp_sort").set_value("Holdout permutation (R²)").run()
    bars = _figures(at)[0]
    x = array(bars["data"][2]["x"]).astype(float)
    assert list(x) == sorted(x, reverse=True)
    assert any(b.label == "Download the table (CSV)" for b in at.get("download_button"))


def test_the_bars_follow_the_rows_used():
    """Fewer rows give other permutation results: the bars (the comparison) are those results',
    never the comparison of the earlier setting's (it was cached by model and labels only)."""
    from dashboard.state.context import demo_context
    from dashboard.state.importance import importance

    at = _page("diabetes_forest")

    def holdout():
        bars = _figures(at)[0]
        i = [t["name"] for t in bars["data"]].index("Holdout permutation (R²)")
        return dict(zip(array(bars["data"][i]["y"]), array(bars["data"][i]["x"]).astype(float)))

    def shares(res):
        clipped = np.clip(res.importances, 0, None)
        return dict(zip(res.feature_names, clipped / clipped.sum()))

    ctx = demo_context("diabetes_forest")
    before = holdout()
    rows = at.number_input(key="imp_rows").value
    at.number_input(key="imp_rows").set_value(50).run()
    assert not at.exception
    after = holdout()
    want_before, want_after = shares(importance(ctx, "permutation", 5, rows)), shares(importance(ctx, "permutation", 5, 50))
    assert max(abs(want_before[f] - want_after[f]) for f in want_after) > 1e-3  # the setting matters here
    for f in want_after:
        assert before[f] == pytest.approx(want_before[f], rel=1e-9, abs=1e-12)
        assert after[f] == pytest.approx(want_after[f], rel=1e-9, abs=1e-12)


def test_a_sample_of_a_larger_table_offers_every_row():
    """Where the rows used are a sample of a larger table (issue #31), the page offers every row
    with its estimate; a click computes the importances of every row (mean |SHAP| over all
    2,000 rows here: the definition's numbers, not the 1,000-row sample's)."""
    from dashboard.state.context import demo_context

    at = _page("housing_gb")
    ctx = demo_context("housing_gb")
    assert at.number_input(key="imp_rows").value == 1000 < len(ctx.X) == 2000
    every = [b for b in at.button if b.label == "Use every row (2,000)"]
    assert every and any("seeded sample of 1,000 of the 2,000 rows" in c.value for c in at.caption)

    def shap_bars():
        bars = _figures(at)[0]
        i = [t["name"] for t in bars["data"]].index("Mean |SHAP|")
        return dict(zip(array(bars["data"][i]["y"]), array(bars["data"][i]["x"]).astype(float)))

    sample = shap_bars()
    every[0].click().run()
    assert not at.exception and at.number_input(key="imp_rows").value == 2000
    assert not [b for b in at.button if b.label.startswith("Use every row")]
    from dashboard.state.rows import background
    from explainers.shap import explain

    res = explain(ctx.model, ctx.X, background=background(ctx), method="auto")  # the page's SHAP, every row
    assert res.method == "tree"
    mean_abs = np.abs(res.values).mean(axis=0)
    want = dict(zip(ctx.X.columns, mean_abs / mean_abs.sum()))
    got = shap_bars()
    for f in want:
        assert got[f] == pytest.approx(want[f], rel=1e-9, abs=1e-12)
    assert max(abs(sample[f] - want[f]) for f in want) > 1e-6  # the sample's differ


def test_linear_model_says_why_methods_are_missing():
    at = _page("diabetes_linear")
    captions = " ".join(c.value for c in at.caption)
    assert "MDI" in captions and "not shown" in captions
    assert "OOB permutation" in captions or "Out-of-bag" in captions
    names = [t["name"] for t in _figures(at)[0]["data"]]
    assert "Holdout permutation (R²)" in names


def test_classifier_and_toggles():
    at = _page("wine_gb")
    names = [t["name"] for t in _figures(at)[0]["data"]]
    assert names[0] == "MDI" and "Holdout permutation (log loss)" in names  # the default score
    at.radio(key="imp_agree").set_value("kendall").run()
    assert not at.exception
    assert "Kendall" in json.dumps(_figures(at)[1]["layout"]["title"])


@pytest.mark.parametrize("scoring, label", [("neg_log_loss", "log loss"), ("roc_auc", "ROC AUC"),
                                            ("balanced_accuracy", "balanced accuracy"), ("accuracy", "accuracy")])
def test_permutation_scores_are_scikit_learns(demo_cards, scoring, label):
    """Each score the page offers a binary classifier: its holdout permutation shares are
    scikit-learn's permutation_importance with that scoring on the held-out rows, and the
    label, the link and the report name it."""
    name = "breast_cancer_hgb"
    at = _page(name)
    assert [o for o in at.selectbox(key="imp_scoring").options] == [
        "log loss", "ROC AUC", "balanced accuracy", "accuracy"]
    if scoring != "neg_log_loss":
        at.selectbox(key="imp_scoring").set_value(scoring).run()
        assert not at.exception, at.exception
        assert at.query_params["scoring"] in (scoring, [scoring])
    bars = _figures(at)[0]
    names = [t["name"] for t in bars["data"]]
    k = names.index(f"Holdout permutation ({label})")
    model, ds = _demo(name, demo_cards[name])
    n = demo_cards[name]["n_train"]
    sk = sk_permutation_importance(model, ds.X.iloc[n:], ds.y.iloc[n:], n_repeats=5, random_state=0, scoring=scoring)
    clipped = np.clip(sk.importances_mean, 0, None)
    want = dict(zip(ds.X.columns, clipped / clipped.sum()))
    got = dict(zip(array(bars["data"][k]["y"]), array(bars["data"][k]["x"]).astype(float)))
    for f in want:
        assert got[f] == pytest.approx(want[f], rel=1e-9, abs=1e-12), f
    at.switch_page("views/report.py").run()
    assert any(f"Holdout permutation ({label})" in m.value for m in at.markdown)


def test_upload_without_target_offers_what_it_can():
    rng = np.random.default_rng(0)
    from sklearn.ensemble import RandomForestRegressor
    import skops.io as sio

    X = pd.DataFrame(rng.normal(size=(80, 3)), columns=["a", "b", "c"])
    model = RandomForestRegressor(10, random_state=0).fit(X, X.a * 2 + X.b)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.file_uploader(key=state.MODEL_FILE).set_value(("m.skops", sio.dumps(model), "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("d.csv", X.to_csv(index=False).encode(), "text/csv"))
    at.run()
    at.button[0].click().run()
    at.switch_page("views/importance.py").run()
    assert not at.exception
    captions = " ".join(c.value for c in at.caption)
    assert "needs the target" in captions
    from explainers.shap import EXPLAINERS

    assert [t["name"] for t in _figures(at)[0]["data"]] == ["MDI"] + (["Mean |SHAP|"] if "tree" in EXPLAINERS else [])
