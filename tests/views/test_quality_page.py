"""The Quality page through AppTest: its figures carry explainers.quality's numbers (and
scikit-learn's), the threshold moves the confusion matrix and stays in the URL, a cell lists
exactly its rows and opens one on the SHAP page, and data without a target says what to do."""
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve
from sklearn.linear_model import LogisticRegression

from dashboard import state
from dashboard.messages import PYTHON_NAMES
from explainers.quality import quality
from tests.plotly_json import array, figures
from tests.views._app import load_demo, open_page

PAGE = "views/quality.py"
TOL = dict(rtol=1e-12, atol=1e-12)


def _fig(at, title_start: str) -> dict:
    found = [f for f in figures(at) if f["layout"]["title"]["text"].startswith(title_start)]
    assert found, [f["layout"]["title"]["text"] for f in figures(at)]
    return found[0]


def _confusion(at) -> np.ndarray:
    return array(_fig(at, "Confusion matrix")["data"][0]["z"]).astype(int)


def _rows_table(at) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if d.key == "quality_rows_table" or "row" in d.value.columns)


@pytest.fixture(scope="module")
def cancer():
    model, ds, _ = load_demo("breast_cancer_logistic")
    return model, ds.X, ds.y


def test_binary_figures_carry_the_numbers(cancer):
    model, X, y = cancer
    at = open_page(PAGE, demo="breast_cancer_logistic")
    assert at.slider(key="quality_threshold").value == 0.5
    q = quality(model, X, y)
    np.testing.assert_array_equal(_confusion(at), q.confusion.matrix)
    proba = model.predict_proba(X)[:, 1]
    hit = (y.to_numpy() == model.classes_[1]).astype(int)
    np.testing.assert_array_equal(_confusion(at), skm.confusion_matrix(hit, (proba >= 0.5).astype(int)))
    roc = _fig(at, "ROC curve")["data"][1]
    fpr, tpr, _ = skm.roc_curve(hit, proba)
    np.testing.assert_allclose(array(roc["x"]).astype(float), fpr, **TOL)
    np.testing.assert_allclose(array(roc["y"]).astype(float), tpr, **TOL)
    assert f"AUC {float(skm.roc_auc_score(hit, proba)):.4g}" in roc["name"]
    pr = _fig(at, "Precision and recall")["data"][0]
    prec, rec, _ = skm.precision_recall_curve(hit, proba)
    np.testing.assert_allclose(array(pr["x"]).astype(float), rec, **TOL)
    np.testing.assert_allclose(array(pr["y"]).astype(float), prec, **TOL)
    cal = _fig(at, "Calibration")["data"]
    prob_true, prob_pred = calibration_curve(hit, proba, n_bins=10)
    np.testing.assert_allclose(array(cal[2]["x"]).astype(float), prob_pred, **TOL)
    np.testing.assert_allclose(array(cal[2]["y"]).astype(float), prob_true, **TOL)
    assert array(cal[1]["y"]).astype(int).sum() == len(X)  # rows per bin
    gains = _fig(at, "Cumulative gains")["data"][1]
    np.testing.assert_allclose(array(gains["y"]).astype(float), q.gains[0].gains, **TOL)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Recall"] == f"{skm.recall_score(hit, proba >= 0.5):.4g}"
    assert metrics["Accuracy"] == f"{skm.accuracy_score(hit, proba >= 0.5):.4g}"


def test_the_threshold_moves_the_confusion_matrix_and_stays_in_the_url(cancer):
    model, X, y = cancer
    proba = model.predict_proba(X)[:, 1]
    pos = y.to_numpy() == model.classes_[1]
    at = open_page(PAGE, demo="breast_cancer_logistic")
    before = _confusion(at)
    at.slider(key="quality_threshold").set_value(0.05).run()
    assert not at.exception, at.exception
    pred = proba >= 0.05
    want = [[int((~pos & ~pred).sum()), int((~pos & pred).sum())], [int((pos & ~pred).sum()), int((pos & pred).sum())]]
    np.testing.assert_array_equal(_confusion(at), want)
    assert not np.array_equal(_confusion(at), before)
    assert _fig(at, "Confusion matrix")["layout"]["title"]["text"] == "Confusion matrix at threshold 0.05"
    assert at.query_params["threshold"] in ("0.05", ["0.05"])
    # the metrics follow it
    assert {m.label: m.value for m in at.metric}["Recall"] == f"{(pos & pred).sum() / pos.sum():.4g}"
    # the What-if page gives its verdict at that threshold
    at.switch_page("views/whatif.py").run()
    assert not at.exception, at.exception
    verdict = next(m.value for m in at.markdown if m.value.startswith("Verdict at threshold"))
    want_class = model.classes_[1] if proba[0] >= 0.05 else model.classes_[0]
    assert verdict.startswith(f"Verdict at threshold 0.05: **{want_class}**"), verdict
    # back on the Quality page, the slider is where it was left
    at.switch_page(PAGE).run()
    assert at.slider(key="quality_threshold").value == 0.05


def test_a_shared_link_opens_at_its_threshold(cancer):
    model, X, y = cancer
    at = open_page(PAGE, query={"model": "breast_cancer_logistic", "threshold": "0.9"})
    assert at.slider(key="quality_threshold").value == pytest.approx(0.9)
    np.testing.assert_array_equal(_confusion(at), quality(model, X, y, threshold=0.9).confusion.matrix)
    # and the What-if verdict of a fresh session opened there too
    at = open_page("views/whatif.py", query={"model": "breast_cancer_logistic", "threshold": "0.9"})
    assert any(m.value.startswith("Verdict at threshold 0.90: ") for m in at.markdown)


def test_a_cell_lists_exactly_its_rows_and_opens_one_on_the_shap_page(cancer):
    model, X, y = cancer
    at = open_page(PAGE, demo="breast_cancer_logistic")
    at.slider(key="quality_threshold").set_value(0.3).run()
    proba = model.predict_proba(X)[:, 1]
    benign, malignant = model.classes_
    cell = (0, 1)  # actual benign, predicted malignant
    at.selectbox(key="quality_cell").set_value(cell).run()
    assert not at.exception, at.exception
    table = _rows_table(at)
    want = np.flatnonzero((y.to_numpy() == benign) & (proba >= 0.3))
    assert len(want) > 0
    assert sorted(table.row.tolist()) == want.tolist()
    assert set(table.actual) == {benign} and set(table.predicted) == {malignant}
    np.testing.assert_allclose(table.set_index("row").sort_index()[f"P({malignant})"], proba[want], **TOL)
    # the matrix outlines the picked cell
    shapes = _fig(at, "Confusion matrix")["layout"]["shapes"]
    assert [(s["y0"] + 0.5, s["x0"] + 0.5) for s in shapes] == [cell]
    # the right cells too: one of them
    at.selectbox(key="quality_cell").set_value((1, 1)).run()
    assert sorted(_rows_table(at).row.tolist()) == np.flatnonzero((y.to_numpy() == malignant) & (proba >= 0.3)).tolist()
    # open a row on the SHAP page
    at.selectbox(key="quality_cell").set_value(cell).run()
    row = int(want[-1])
    at.selectbox(key="quality_open_row").set_value(row).run()
    at.button(key="quality_open").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Why this prediction?"  # the button went to the SHAP page
    assert at.sidebar.selectbox(key=state.ACTIVE).value == "breast_cancer_logistic"  # the same model
    assert at.number_input(key="shap_row").value == row
    assert at.radio(key="shap_pick").value == "index"
    assert figures(at)[0]["layout"]["title"]["text"].startswith(f"Row {row}:")


def test_a_click_on_a_cell_picks_it():
    from dashboard.figures.quality import cell_from_selection

    assert cell_from_selection([{"customdata": [1, 0, 5]}], 2) == (1, 0)
    assert cell_from_selection([{"customdata": [3, 0, 5]}], 2) is None
    assert cell_from_selection([{"x": 1}], 2) is None


def test_multiclass_figures_and_per_class_table():
    model, ds, _ = load_demo("wine_gb")
    at = open_page(PAGE, demo="wine_gb")
    assert not at.get("slider")  # no threshold for several classes
    X, y = ds.X, ds.y.to_numpy()
    proba = model.predict_proba(X)
    np.testing.assert_array_equal(_confusion(at), skm.confusion_matrix(y, model.classes_[proba.argmax(1)],
                                                                       labels=model.classes_))
    roc = _fig(at, "ROC curve")["data"]
    for c, label in enumerate(model.classes_):
        fpr, tpr, _ = skm.roc_curve(y == label, proba[:, c])
        np.testing.assert_allclose(array(roc[1 + c]["x"]).astype(float), fpr, **TOL)
        np.testing.assert_allclose(array(roc[1 + c]["y"]).astype(float), tpr, **TOL)
        assert roc[1 + c]["name"].startswith(str(label))
    table = next(d.value for d in at.dataframe if "ROC AUC" in d.value.columns)
    np.testing.assert_allclose(table["ROC AUC"], skm.roc_auc_score(y, proba, multi_class="ovr", average=None), **TOL)
    prec, rec, _, sup = skm.precision_recall_fscore_support(y, model.predict(X), labels=model.classes_)
    np.testing.assert_allclose(table.recall, rec, **TOL)
    np.testing.assert_array_equal(table["rows of the class"], sup)


def test_regression_figures_and_residual_bands():
    model, ds, card = load_demo("diabetes_forest")
    X, y = ds.X, ds.y.to_numpy(dtype=float)
    pred = model.predict(X)
    at = open_page(PAGE, demo="diabetes_forest")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["R²"] == f"{skm.r2_score(y, pred):.4g}"
    assert metrics["MAE"] == f"{skm.mean_absolute_error(y, pred):.4g}"
    pa = _fig(at, "Predicted against actual")["data"][1]
    np.testing.assert_allclose(array(pa["x"]).astype(float), y, **TOL)
    np.testing.assert_allclose(array(pa["y"]).astype(float), pred, **TOL)
    rp = _fig(at, "Residuals against prediction")["data"][0]
    np.testing.assert_allclose(array(rp["y"]).astype(float), y - pred, **TOL)
    at.selectbox(key="quality_feature").set_value("bmi").run()
    rf = _fig(at, "Residuals against bmi")["data"][0]
    np.testing.assert_allclose(array(rf["x"]).astype(float), X["bmi"].to_numpy(), **TOL)
    # the largest under-predictions: exactly the rows above the 95% quantile of the residuals
    table = _rows_table(at)
    q95 = np.quantile(y - pred, 0.95)
    assert sorted(table.row.tolist()) == np.flatnonzero(y - pred >= q95).tolist()
    np.testing.assert_allclose(table.set_index("row").sort_index().residual,
                               (y - pred)[np.flatnonzero(y - pred >= q95)], **TOL)
    # the middle band
    at.selectbox(key="quality_band").set_value(2).run()
    lo, hi = np.quantile(y - pred, [0.25, 0.75])
    r = y - pred
    assert sorted(_rows_table(at).row.tolist()) == np.flatnonzero((r >= lo) & (r < hi)).tolist()


@pytest.fixture(scope="module")
def no_target_upload():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(120, 3)), columns=["height", "weight", "age"])
    y = np.where(X.height + X.weight > 0, "tall", "short")
    model = LogisticRegression().fit(X, y)
    gappy = pd.Series(y, dtype=object)
    gappy[[2, 40]] = np.nan
    return sio.dumps(model), X.to_csv(index=False).encode(), X.assign(label=gappy).to_csv(index=False).encode()


def _upload(at, model_bytes, csv, target=None):
    at.file_uploader(key=state.MODEL_FILE).set_value(("people.skops", model_bytes, "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("people.csv", csv, "text/csv"))
    at.run()
    if target is not None:
        at.selectbox(key=state.TARGET_COL).set_value(target).run()
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Uploaded: people.skops"


def test_no_target_says_quality_needs_it(no_target_upload):
    model_bytes, csv, _ = no_target_upload
    at = open_page()
    _upload(at, model_bytes, csv)
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    info = [i.value for i in at.info]
    assert any("Model quality needs the target column" in i and "Target column" in i and "Model page" in i
               for i in info), info
    assert not figures(at)


def test_blank_target_cells_are_left_out_and_counted(no_target_upload):
    model_bytes, _, csv = no_target_upload
    at = open_page()
    _upload(at, model_bytes, csv, target="label")
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert any("Scored on 118 rows; left out: 2 row(s) without a target" in c.value for c in at.caption)
    assert _confusion(at).sum() == 118


def test_the_page_names_its_model_and_speaks_no_python(demo_cards):
    for demo in ("breast_cancer_logistic", "wine_gb", "diabetes_forest"):
        at = open_page(PAGE, demo=demo)
        assert f"Model: **{demo_cards[demo]['title']}** (demo)" in [c.value for c in at.caption]
        texts = [e.value for kind in ("title", "subheader", "markdown", "caption", "info", "error", "warning")
                 for e in getattr(at, kind)]
        assert not [t for t in texts if any(n in t for n in PYTHON_NAMES)]


def test_models_quality_does_not_apply_to_say_so():
    from types import SimpleNamespace

    from sklearn.ensemble import IsolationForest, RandomForestRegressor

    from dashboard.state.quality import quality_problem
    from explainers import ModelAdapter

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "c"])
    y = pd.Series(X.a * 2)
    iso = IsolationForest(random_state=0).fit(X)
    two = RandomForestRegressor(n_estimators=5, random_state=0).fit(X, np.column_stack([X.a, X.b]))

    def ctx(model, target):
        adapter = ModelAdapter(model)
        return SimpleNamespace(model=model, adapter=adapter, task=adapter.task, y=target)

    assert "outlier detector" in quality_problem(ctx(iso, y))
    assert "predicts 2 targets" in quality_problem(ctx(two, y))
    assert "needs the target column" in quality_problem(ctx(RandomForestRegressor(n_estimators=2).fit(X, y), None))
    assert quality_problem(ctx(RandomForestRegressor(n_estimators=2).fit(X, y), y)) is None
