"""The XGBoost and LightGBM demos (their own model files) on every page, through AppTest.

The Importance page shows the library's own gain, cover and split count beside the
holdout permutation, with the library's own numbers (read back by the library from
the same file), and says in page words why MDI is not there.
"""
import json

import numpy as np
import pytest

from dashboard import state
from dashboard.messages import PYTHON_NAMES
from dashboard.safe_text import code
from demo_models import build
from tests.plotly_json import array, figures
from tests.views._app import compute_anyway, open_page

NATIVE = ("breast_cancer_xgb", "housing_lgbm")
PAGES = ("views/pdp.py", "views/shap.py", "views/whatif.py", "views/importance.py",
         "views/interactions.py", "views/report.py")


def _library_numbers(name: str) -> dict[str, dict[str, float]]:
    """{label: {feature: value}} from the library itself, reading the demo's model file."""
    path = str(build.paths(name)["model"])
    if name == "breast_cancer_xgb":
        xgb = pytest.importorskip("xgboost")
        booster = xgb.Booster(model_file=path)
        return {f"XGBoost {kind}": booster.get_score(importance_type=lib_kind)
                for kind, lib_kind in (("gain", "total_gain"), ("cover", "total_cover"), ("split count", "weight"))}
    lgb = pytest.importorskip("lightgbm")
    booster = lgb.Booster(model_file=path)
    names = booster.feature_name()
    return {f"LightGBM {kind}": dict(zip(names, booster.feature_importance(lib_kind)))
            for kind, lib_kind in (("gain", "gain"), ("split count", "split"))}


@pytest.mark.parametrize("name", NATIVE)
def test_importance_page_shows_the_library_importances(demo_cards, name):
    at = open_page("views/importance.py", name)
    lib = "XGBoost" if name.endswith("xgb") else "LightGBM"
    bars = figures(at)[0]
    traces = {t["name"]: t for t in bars["data"]}
    assert [n for n in traces if n.startswith(lib)] == [f"{lib} gain", f"{lib} cover", f"{lib} split count"]
    assert any(n.startswith("Holdout permutation") for n in traces)
    assert "MDI" not in traces
    # the bars are the library's own numbers, as shares of their total
    for label, own in _library_numbers(name).items():
        got = dict(zip(array(traces[label]["y"]), array(traces[label]["x"]).astype(float)))
        total = sum(own.values())
        for feature in got:
            assert got[feature] == pytest.approx(own.get(feature, 0.0) / total, rel=1e-6, abs=1e-12)
    # why MDI is not there, in page words (not "has no trees", no Python names)
    mdi = next(c.value for c in at.caption if "(MDI)" in c.value)
    assert f"{lib}'s own model file" in mdi and f"{lib} gain" in mdi and "counterpart" in mdi
    assert "has no trees" not in mdi and not any(p in mdi for p in PYTHON_NAMES + ("library_importance",))
    oob = next(c.value for c in at.caption if "Out-of-bag" in c.value)
    assert "Native" not in oob and lib in oob
    # the table and the rank agreement carry the library's methods too
    assert f"share: {lib} gain" in at.dataframe[0].value.columns
    heat = figures(at)[1]["data"][0]
    assert f"{lib} split count" in list(heat["x"])


@pytest.mark.parametrize("name", NATIVE)
@pytest.mark.parametrize("page", PAGES)
def test_every_page_works(name, page):
    at = compute_anyway(open_page(page, name))
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    if page != "views/report.py":
        assert figures(at), f"no chart on {page}"


def test_model_page_lists_the_native_demos(demo_cards):
    at = open_page()
    titles = [demo_cards[n]["title"] for n in build.DEMO_NAMES]
    assert at.sidebar.selectbox(key=state.ACTIVE).options[-len(titles):] == titles
    assert at.selectbox(key=state.DEMO_PICK).options == titles  # the Model page's own demo picker
    for name in NATIVE:
        at.sidebar.selectbox(key=state.ACTIVE).set_value(name).run()
        assert not at.exception, at.exception
        assert at.title[0].value == demo_cards[name]["title"]
        assert f"**Model:** {code(demo_cards[name]['model_type'])}" in [m.value for m in at.markdown]


def test_report_includes_the_library_importances(demo_cards):
    name = "housing_lgbm"
    at = open_page("views/report.py", name)
    assert not at.exception
    ctx = state.demo_context(name)

    class _Bar:
        def progress(self, *a, **k):
            pass

    built = state.report_html(ctx, ctx.X.columns[0], 0, (False, False, False, True), _Bar())
    headings = [h for h, _ in built.outline]
    assert headings == ["Variable importance, compared"]
    caption = dict(built.outline)["Variable importance, compared"]
    for label in ("LightGBM gain", "LightGBM cover", "LightGBM split count", "Holdout permutation"):
        assert label in caption
    assert any("MDI" in n and "LightGBM's own model file" in n for n in built.notices)
    assert "LightGBM gain" in built.html


def test_categorical_feature_of_the_lightgbm_demo(demo_cards):
    card = demo_cards["housing_lgbm"]
    coast = {f["name"]: f for f in card["features"]}["coast"]
    assert coast["dtype"] == "category" and coast["categories"] == list(build.COAST)
    ctx = state.demo_context("housing_lgbm")
    assert str(ctx.X["coast"].dtype) == "category"
    # the split sets of the file: LightGBM splits on the category natively
    text = build.paths("housing_lgbm")["model"].read_text()
    assert "pandas_categorical:" in text and "cat_threshold=" in text
    # PDP of the category: one level mark per category, in the model's order, on the PDP page
    at = open_page("views/pdp.py", "housing_lgbm", query={"model": "housing_lgbm", "feature": "coast"})
    assert not at.exception
    marks = [t for t in figures(at)[0]["data"] if t.get("name") == "partial dependence"]
    assert marks and list(array(marks[0]["x"])) == list(build.COAST)
    json.dumps(card)  # the card stays plain JSON
    assert np.isfinite(card["metric"]["value"])


def test_uploaded_catboost_file_shows_split_count_and_cover(tmp_path):
    """CatBoost files give no gain: its split count and cover stand in for MDI, and the page says so."""
    cb = pytest.importorskip("catboost")
    import pandas as pd
    from streamlit.testing.v1 import AppTest

    from tests.views._app import APP

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"])
    y = (2 * X.a + X.b + rng.normal(0, 0.1, 200)).rename("y")
    model = cb.CatBoostRegressor(iterations=20, depth=3, verbose=False, random_seed=0, thread_count=1,
                                 allow_writing_files=False).fit(X, y)
    model.save_model(str(tmp_path / "m.json"), format="json")
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.file_uploader(key=state.MODEL_FILE).set_value(("m.json", (tmp_path / "m.json").read_bytes(),
                                                      "application/json"))
    at.file_uploader(key=state.DATA_FILE).set_value(("d.csv", X.assign(y=y).to_csv(index=False).encode(),
                                                     "text/csv"))
    at.run()
    at.selectbox(key=state.TARGET_COL).set_value("y").run()
    at.button[0].click().run()
    at.switch_page("views/importance.py").run()
    assert not at.exception, at.exception
    names = [t["name"] for t in figures(at)[0]["data"]]
    assert names[:2] == ["CatBoost cover", "CatBoost split count"]
    assert "Holdout permutation (R²)" in names
    mdi = next(c.value for c in at.caption if "(MDI)" in c.value)
    assert "CatBoost gives no gain" in mdi and "CatBoost's own model file" in mdi
