"""The rest of the model zoo on the dashboard's pages (issue #13, point 6), through AppTest.

- a multi-output regressor gets an "Output" picker in the sidebar (where a
  classifier has its class picker), and every page explains the picked output;
- an IsolationForest's pages explain its mean path length, and say so;
- a model fitted on a numpy array is matched to the file's columns by position;
- a clustering model is refused at upload with a message, not a traceback.
"""
import numpy as np
import pandas as pd
import pytest
import skops.io as sio

from dashboard import state
from tests.plotly_json import array, figures
from tests.views._app import open_page

PAGES = ["views/pdp.py", "views/shap.py", "views/importance.py", "views/whatif.py", "views/interactions.py",
         "views/report.py"]


def _data(n=160, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.uniform(0, 1, n), "b": rng.uniform(0, 1, n), "c": rng.normal(size=n),
                      "d": rng.integers(0, 5, n).astype(float)})
    y1 = 3 * X.a + X.b ** 2 + 0.1 * rng.normal(size=n)
    y2 = -2 * X.c + X.d
    return X, y1, y2


def _upload(model, data: pd.DataFrame, target: str | None, page: str | None = None, expect_error=False):
    at = open_page(timeout=180)
    at.file_uploader(key=state.MODEL_FILE).set_value(("zoo.skops", sio.dumps(model), "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("zoo.csv", data.to_csv(index=False).encode(), "text/csv"))
    at.run()
    at.selectbox(key=state.TARGET_COL).set_value(target or state.NO_TARGET).run()
    at.button[0].click().run()
    assert not at.exception, at.exception
    if expect_error:
        return at
    assert not at.error, [e.value for e in at.error]
    if page:
        at.switch_page(page).run()
        assert not at.exception, at.exception
    return at


@pytest.fixture(scope="module")
def multi_forest():
    from sklearn.ensemble import RandomForestRegressor

    X, y1, y2 = _data()
    model = RandomForestRegressor(12, max_depth=4, random_state=0).fit(X, np.column_stack([y1, y2]))
    return model, X.assign(y1=y1)


def test_multi_output_sidebar_offers_outputs(multi_forest):
    model, data = multi_forest
    at = _upload(model, data, None, page="views/pdp.py")
    picker = at.sidebar.selectbox(key=state.CLASS_INDEX)
    assert picker.label == "Output"
    assert list(picker.options) == ["output 0", "output 1"]
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("page", PAGES)
def test_multi_output_pages_follow_the_output(multi_forest, page):
    model, data = multi_forest
    at = _upload(model, data, None, page=page)
    assert not at.error, [e.value for e in at.error]
    before = [f for f in figures(at)]
    at.sidebar.selectbox(key=state.CLASS_INDEX).set_value("output 1").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    after = [f for f in figures(at)]
    if page != "views/report.py":  # the report draws its figures when asked to
        assert after, f"{page} draws no figure for output 1"
    if page == "views/pdp.py":  # the curves are those of the other target
        assert before != after


def test_multi_output_pdp_is_the_picked_outputs(multi_forest):
    from explainers.pdp import partial_dependence

    model, data = multi_forest
    at = _upload(model, data, None, page="views/pdp.py")
    at.sidebar.selectbox(key=state.CLASS_INDEX).set_value("output 1").run()
    shown = figures(at)[0]
    ys = [np.asarray(array(t["y"]), float).ravel() for t in shown["data"] if t.get("y") is not None]
    X = data.drop(columns="y1")
    feature = at.selectbox(key="pdp_f1").value
    ref = partial_dependence(model, X, [feature], grid_resolution=40, class_index=1, kind="average")
    assert any(len(y) == len(ref.average) and np.allclose(y, ref.average, atol=1e-9) for y in ys)


def _texts(at) -> str:
    return " ".join(x.value for kind in ("caption", "markdown", "info", "warning") for x in getattr(at, kind))


def test_multi_output_with_one_target_scores_the_output_it_holds(multi_forest):
    """One target column for a model of two outputs: nothing is scored until the sidebar says
    which output the column holds; then quality, the Model page's score, the SHAP page's errors
    and permutation importance all score that output, against scikit-learn."""
    from sklearn.metrics import r2_score

    model, data = multi_forest
    X, y1 = data.drop(columns="y1"), data.y1.to_numpy()
    at = _upload(model, data, "y1", page="views/model.py")
    assert not at.error, [e.value for e in at.error]
    held = at.sidebar.selectbox(key=state.TARGET_OUTPUT)
    assert list(held.options) == ["output 0", "output 1", "none of them"] and held.value == "none of them"
    assert "which output it holds the true values of" in _texts(at) and "R²" not in _texts(at)
    at.switch_page("views/quality.py").run()
    assert not at.metric and "say in the sidebar which output" in _texts(at)
    at.sidebar.selectbox(key=state.TARGET_OUTPUT).set_value("output 0").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    r2 = r2_score(y1, model.predict(X)[:, 0])
    assert {m.label: m.value for m in at.metric}["R²"] == f"{r2:.4g}"
    at.switch_page("views/model.py").run()
    assert f"{r2:.4g}" in _texts(at) or f"{r2:.3f}" in _texts(at)
    at.switch_page("views/importance.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "say in the sidebar which output" not in _texts(at)
    at.sidebar.selectbox(key=state.TARGET_OUTPUT).set_value("none of them").run()
    assert "say in the sidebar which output" in _texts(at)  # permutation is skipped, and says why


@pytest.fixture(scope="module")
def iforest():
    from sklearn.ensemble import IsolationForest

    X, _, _ = _data()
    return IsolationForest(n_estimators=25, max_samples=64, random_state=0).fit(X), X


@pytest.mark.parametrize("page", ["views/pdp.py", "views/shap.py", "views/whatif.py"])
def test_isolation_forest_pages_explain_path_length(iforest, page):
    model, X = iforest
    at = _upload(model, X, None, page=page)
    assert not at.error, [e.value for e in at.error]
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "mean path length" in captions
    assert figures(at)


def test_numpy_fitted_model_reads_columns_by_position():
    from sklearn.ensemble import GradientBoostingRegressor

    X, y1, _ = _data()
    model = GradientBoostingRegressor(n_estimators=20, max_depth=2, random_state=0).fit(X.to_numpy(), y1)
    for page in ("views/pdp.py", "views/shap.py", "views/importance.py"):
        at = _upload(model, X.assign(y1=y1), "y1", page=page)
        assert not at.error, [e.value for e in at.error]
        assert figures(at)


def test_clusterer_upload_is_refused_with_a_message():
    from sklearn.cluster import KMeans

    X, _, _ = _data()
    at = _upload(KMeans(3, n_init=2, random_state=0).fit(X), X, None, expect_error=True)
    errors = " ".join(e.value for e in at.error)
    assert "clustering model" in errors


# -------------------------------------- classifiers without probabilities (issue #23)
ALL_PAGES = ["views/quality.py", "views/segments.py", *PAGES]


@pytest.fixture(scope="module")
def margin_models():
    from sklearn.linear_model import RidgeClassifier
    from sklearn.svm import SVC

    X, _, _ = _data()
    y2 = np.where(X.a + X.c > 0.5, "yes", "no")
    y3 = np.select([X.a < 0.3, X.a < 0.6], ["lo", "mid"], "hi")
    return {"svc": (SVC().fit(X, y2), X.assign(t=y2)), "ridge": (RidgeClassifier().fit(X, y3), X.assign(t=y3))}


@pytest.mark.parametrize("name", ["svc", "ridge"])
def test_margin_classifier_pages_explain_the_decision_function(margin_models, name):
    """Every page draws for a classifier without predict_proba, on its margin, and says so."""
    model, data = margin_models[name]
    at = _upload(model, data, "t")
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "decision function (margin)" in captions and "no probabilities" in captions
    pickers = [s for s in at.sidebar.selectbox if s.key == state.CLASS_INDEX]
    # a binary SVC has one margin (of 'yes'): nothing to pick; three classes have one margin each
    assert (not pickers) if name == "svc" else list(pickers[0].options) == ["hi", "lo", "mid"]
    for page in ALL_PAGES:
        at.switch_page(page).run()
        go = [b for b in at.button if b.label == "Compute anyway"]
        if go:
            go[0].click().run()
        assert not at.exception, (page, at.exception)
        assert not at.error, (page, [e.value for e in at.error])
        if page in ("views/pdp.py", "views/shap.py", "views/whatif.py", "views/quality.py"):
            assert figures(at), f"{page} draws no figure"
    at.switch_page("views/quality.py").run()
    infos = " ".join(i.value for i in at.info)
    assert "nothing to calibrate" in infos
    assert not [s for s in at.slider if s.label == "Threshold"]  # the model's own rule, not a probability cut
    at.switch_page("views/shap.py").run()
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert any("margin of" in t for t in titles) and not any("margin(" in t or "probability" in t for t in titles)
    predicted = model.predict(data.drop(columns="t").iloc[[0]])[0]
    assert f"Predicted class of row 0: **{predicted}**" in " ".join(c.value for c in at.caption)
    at.switch_page("views/whatif.py").run()
    assert f"Predicted class of the edited row: **{predicted}**" in " ".join(m.value for m in at.markdown)
