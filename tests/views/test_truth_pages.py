"""Pages that tell the truth (issue #16), through AppTest.

- the SHAP figures name the row of the file they explain, not "Row 0";
- every page says which model it shows, and that an upload chosen on the Model page
  waits to be loaded (and the Model page still loads it after a trip to another page);
- no message on any page speaks Python (``permutation_importance``, ``ExactShap``,
  ``method='...'``, ``explain(``): each names what to click on that page;
- a larger SHAP sample reuses the rows a smaller one explained;
- on-page numbers are on the data's own scale.
"""
import re

import numpy as np
import pandas as pd
import pytest
import skops.io as sio

from dashboard import state
from dashboard.messages import PYTHON_NAMES
from tests.plotly_json import figures
from tests.views._app import load_demo, open_page

PAGES = ["views/model.py", "views/quality.py", "views/segments.py", "views/pdp.py", "views/shap.py", "views/whatif.py",
         "views/importance.py", "views/report.py"]


def _texts(at) -> list[str]:
    """Every sentence AppTest sees on the page and in the sidebar."""
    out = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "error", "warning", "info", "success"):
        out += [e.value for e in getattr(at, kind)]
    return out


# ------------------------------------------------------------------ the row
def test_shap_figures_name_the_row_of_the_file():
    at = open_page("views/shap.py")
    at.number_input(key="shap_row").set_value(123).run()
    assert not at.exception, at.exception
    title = figures(at)[0]["layout"]["title"]["text"]
    assert title.startswith("Row 123:"), title
    _, ds, _ = load_demo(state.DEFAULT_DEMO)
    at.radio(key="shap_view").set_value("force").run()
    assert figures(at)[0]["layout"]["title"]["text"].startswith("Row 123:")
    # the row picked by prediction: its own number too
    at.radio(key="shap_pick").set_value("highest prediction").run()
    row = at.selectbox(key="shap_row_sorted").value
    assert figures(at)[0]["layout"]["title"]["text"].startswith(f"Row {row}:")
    assert row != 0 and len(ds.X) > row


def test_figure_functions_take_the_row_label():
    from dashboard.figures import force_figure, waterfall_figure
    from explainers.shap import explain

    # a row explained for a page (the SHAP page, the report) carries its number
    ctx = state.demo_context(state.DEFAULT_DEMO)
    assert waterfall_figure(state.explain_row(ctx, 123, "auto", ()), 0).layout.title.text.startswith("Row 123:")

    model, ds, _ = load_demo("diabetes_linear")
    res = explain(model, ds.X.iloc[[7]], background=ds.X.iloc[:50])
    assert waterfall_figure(res, 0, row_label=7).layout.title.text.startswith("Row 7:")
    assert force_figure(res, 0, row_label="Edited row 7").layout.title.text.startswith("Edited row 7:")
    assert waterfall_figure(res, 0).layout.title.text.startswith("Row 0:")  # the result's own row


# -------------------------------------------------------- the model in use
@pytest.mark.parametrize("page", PAGES)
def test_every_page_names_its_model(page, demo_cards):
    at = open_page(page)
    title = demo_cards[state.DEFAULT_DEMO]["title"]
    assert f"Model: **{title}** (demo)" in [c.value for c in at.caption]


@pytest.fixture(scope="module")
def small_upload():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(150, 3)), columns=["height", "weight", "age"])
    y = np.where(X.height + X.weight > 0, "tall", "short")
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression().fit(X, y)
    return sio.dumps(model), X.assign(label=y).to_csv(index=False).encode()


def _choose(at, model_bytes, csv, names=("mine.skops", "mine.csv")):
    at.file_uploader(key=state.MODEL_FILE).set_value((names[0], model_bytes, "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value((names[1], csv, "text/csv"))
    at.run()
    assert not at.exception, at.exception


def test_an_upload_waiting_is_named_on_every_page_and_loads_later(small_upload, demo_cards):
    model_bytes, csv = small_upload
    at = open_page()
    _choose(at, model_bytes, csv)
    at.selectbox(key=state.TARGET_COL).set_value("label").run()
    warn = [w.value for w in at.warning]
    assert any("An upload is waiting" in w and "mine.skops" in w and "**Load model and data** below" in w
               for w in warn), warn
    for page in PAGES[1:]:
        at.switch_page(page).run()
        at.run()  # a second run: Streamlit has forgotten the uploaders' values by now
        assert not at.exception, (page, at.exception)
        warn = [w.value for w in at.warning]
        assert any("An upload is waiting" in w and "on the Model page" in w for w in warn), (page, warn)
        assert f"Model: **{demo_cards[state.DEFAULT_DEMO]['title']}** (demo)" in [c.value for c in at.caption]
    # back on the Model page the uploaders are empty, but Load loads what was chosen
    at.switch_page("views/model.py").run()
    assert any("Chosen before you left this page" in c.value for c in at.caption)
    assert at.selectbox(key=state.TARGET_COL).value == "label"
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Uploaded: mine.skops"
    assert any(c.value.startswith("Model: **mine.skops** with data **mine.csv** (uploaded") for c in at.caption)
    assert not [w for w in at.warning if "An upload is waiting" in w.value]
    at.switch_page("views/pdp.py").run()
    assert not [w for w in at.warning if "An upload is waiting" in w.value]


# --------------------------------------------------------------- messages
def _python_names(text: str) -> list[str]:
    found = [n for n in PYTHON_NAMES if n in text]
    found += re.findall(r"\b[a-z]+_[a-z_]+\(", text)  # any call of a snake_case function
    return found


@pytest.fixture(scope="module")
def knn_upload():
    """A k-nearest-neighbours pipeline on 16 features: no trees, not linear, too many features
    for exact SHAP with 100 background rows; and no out-of-bag rows."""
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.normal(size=(150, 16)), columns=[f"f{i}" for i in range(16)])
    y = np.where(X.f0 + X.f1 > 0, "yes", "no")
    model = make_pipeline(StandardScaler(), KNeighborsClassifier(algorithm="brute")).fit(X, y)
    return sio.dumps(model), X.assign(label=y).to_csv(index=False).encode()


def test_no_page_speaks_python(knn_upload):
    model_bytes, csv = knn_upload
    at = open_page(timeout=300)
    _choose(at, model_bytes, csv, ("knn.skops", "knn.csv"))
    at.selectbox(key=state.TARGET_COL).set_value("label").run()
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Uploaded: knn.skops"
    seen = []
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        seen += _texts(at)
        if page == "views/shap.py":
            for method in ("tree", "linear", "exact"):
                at.selectbox(key="shap_method").set_value(method).run()
                assert not at.exception, at.exception
                errors = [e.value for e in at.error]
                assert errors and "under Method" in errors[0], (method, errors)
                seen += _texts(at)
            at.selectbox(key="shap_method").set_value("kernel").run()
            seen += _texts(at)
        if page == "views/importance.py":
            skipped = [c.value for c in at.caption if "not shown" in c.value]
            assert any("MDI" in c and "holdout permutation" in c for c in skipped), skipped
            assert any("Out-of-bag" in c for c in skipped), skipped
    bad = {t: _python_names(t) for t in seen if _python_names(t)}
    assert not bad, bad


def test_page_wording_of_the_known_messages():
    from dashboard.messages import for_page, reason
    from explainers.errors import InvalidModelError

    from sklearn.svm import SVC

    from explainers.shap import TreeShap

    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises(InvalidModelError) as got:  # the message TreeShap really gives
        TreeShap(SVC().fit(X, X[:, 0] > 0))
    assert for_page(got.value, "shap") == (
        "The tree method explains tree models only (decision trees, random forests, extra trees, gradient "
        "boosting, XGBoost, LightGBM and CatBoost models, and pipelines that fold into their trees); this "
        "model is a SVC. Pick auto, exact or kernel under Method.")
    mdi = InvalidModelError("mdi needs a scikit-learn tree model (a decision tree, random forest, extra trees or "
                            "gradient boosting); a XGBClassifier keeps its trees in its own library's format, which "
                            "mdi does not read. Use permutation_importance or shap_importance instead.")
    text = for_page(mdi, "importance")
    assert "XGBClassifier" in text and "has no trees" not in text and not _python_names(text)
    assert reason("method='exact' was requested", "shap") == "picked under Method"
    assert not _python_names(reason("10 features: 2**10 = 1,024 coalitions is more than n_samples=512, so "
                                    "KernelShap samples them"))
    # an unknown message keeps its words, its Python names rewritten
    assert not _python_names(for_page("Something about ExactShap and explain(method='auto') here."))


# ------------------------------------------------------- partial results
def test_a_larger_sample_reuses_the_rows_already_explained(monkeypatch, demo_cards):
    """Changing "Rows in the sample" mid-run (or after) keeps every row already done."""
    import explainers.shap as shap_pkg

    rows_explained = []
    real = shap_pkg.explain

    def counting(model, X, **kw):
        rows_explained.extend(X.index.tolist())
        return real(model, X, **kw)

    monkeypatch.setattr(shap_pkg, "explain", counting)
    state.result_cache().clear()
    ctx = state.demo_context("diabetes_linear")
    small = state.explain_sample(ctx, 20, "kernel")
    assert sorted(rows_explained) == sorted(small.data.index.tolist())
    rows_explained.clear()
    big = state.explain_sample(ctx, 30, "kernel")
    assert len(rows_explained) == 10  # only the new rows
    assert set(small.data.index) < set(big.data.index)
    # the same numbers as explaining the whole sample at once
    ref = real(ctx.model, ctx.X.iloc[big.params["rows"]], background=state.background(ctx), method="kernel")
    np.testing.assert_allclose(big.values, ref.values, rtol=1e-9, atol=1e-9)
    assert big.params["rows"] == sorted(big.params["rows"])


def test_sample_progress_moves_row_by_row_for_slow_methods():
    state.result_cache().clear()
    ctx = state.demo_context("diabetes_linear")
    seen = []
    state.explain_sample(ctx, 12, "kernel", progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (12, 12)
    assert all(t == 12 for _, t in seen) and [d for d, _ in seen] == sorted(d for d, _ in seen)


# ----------------------------------------------------------------- numbers
def test_additivity_line_on_the_data_scale():
    from types import SimpleNamespace

    res = SimpleNamespace(values=np.array([[0.25, -0.25 - 1.11022e-16]]), base_values=np.array([0.0]),
                          predictions=np.array([0.0]))
    line = state.additivity_line(res, 0, None)
    assert line == "base 0 + contributions 0 = prediction 0 (model: 0)", line
    big = SimpleNamespace(values=np.array([[28_512.4, -61_300.0]]), base_values=np.array([192_634.2]),
                          predictions=np.array([159_846.6]))
    line = state.additivity_line(big, 0, None)
    assert "e+" not in line and "192,634" in line and "-32,787.6" in line, line
    # a masked explanation: the explained prediction, and the model's own beside it
    masked = SimpleNamespace(values=np.array([[0.25, 0.5]]), base_values=np.array([1.0]),
                             predictions=np.array([1.75]), params={"model_prediction": np.array([2.125])})
    line = state.additivity_line(masked, 0, None)
    assert line == ("base 1 + contributions +0.75 = explained 1.75 (features treated as missing) · "
                    "the model's own prediction 2.125"), line
