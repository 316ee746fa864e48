"""The Model page through Streamlit's AppTest: demo models, uploads, bad uploads."""
import pickle

import numpy as np
import pytest
import skops.io as sio
from sklearn.ensemble import RandomForestClassifier

from demo_models import build
from dashboard import state

from tests.views._app import open_page


def _app():
    return open_page(timeout=60)


def _metrics(at):
    return {m.label: m.value for m in at.metric}


@pytest.fixture(scope="module")
def uploaded_model():
    """A user's own classifier, its CSV (with a target and an extra column)."""
    rng = np.random.default_rng(0)
    import pandas as pd

    X = pd.DataFrame(rng.normal(size=(120, 3)), columns=["height", "weight", "age"])
    y = np.where(X.height + X.weight > 0, "tall", "short")
    model = RandomForestClassifier(20, max_depth=4, random_state=0).fit(X, y)
    csv = X.assign(label=y, note="x").to_csv(index=False).encode()
    return sio.dumps(model), csv


def test_opens_with_a_demo_model(demo_cards):
    at = _app()
    card = demo_cards[state.DEFAULT_DEMO]
    assert at.title[0].value == card["title"]
    m = _metrics(at)
    assert any("**Model:** `RandomForestRegressor`" in md.value for md in at.markdown)
    assert m["Task"] == "regression"
    assert m["Rows"] == f"{card['n_rows']:,}" and m["Features"] == str(len(card["features"]))
    assert any("R² (held out)" in md.value for md in at.markdown)
    table = at.dataframe[0].value
    assert list(table.feature) == [f["name"] for f in card["features"]]
    np.testing.assert_allclose(table["min"], [f["min"] for f in card["features"]])


@pytest.mark.parametrize("name", build.DEMO_NAMES)
def test_each_demo_model_from_the_sidebar(demo_cards, name):
    at = _app()
    at.sidebar.selectbox(key=state.ACTIVE).set_value(name).run()
    assert not at.exception, at.exception
    card = demo_cards[name]
    assert at.title[0].value == card["title"]
    assert _metrics(at)["Task"] == card["task"]
    if card["classes"]:
        assert at.sidebar.selectbox(key=state.CLASS_INDEX).options == card["classes"]
        assert any(", ".join(f"`{c}`" for c in card["classes"]) in md.value for md in at.markdown)


def test_demo_picker_on_the_page(demo_cards):
    at = _app()
    at.selectbox(key=state.DEMO_PICK).set_value("wine_gb").run()
    assert not at.exception
    assert at.title[0].value == demo_cards["wine_gb"]["title"]
    assert at.sidebar.selectbox(key=state.ACTIVE).value == "wine_gb"


def test_upload_model_and_csv(uploaded_model):
    model_bytes, csv = uploaded_model
    at = _app()
    at.file_uploader(key=state.MODEL_FILE).set_value(("mine.skops", model_bytes, "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("mine.csv", csv, "text/csv"))
    at.run()
    target = at.selectbox(key=state.TARGET_COL)
    assert target.options == [state.NO_TARGET, "height", "weight", "age", "label", "note"]
    target.set_value("label").run()
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Uploaded: mine.skops"
    m = _metrics(at)
    assert any("`RandomForestClassifier`" in md.value for md in at.markdown)
    assert m["Task"] == "binary" and m["Rows"] == "120"
    assert any("Dropped 1 column(s) the model does not use: note" in i.value for i in at.info)
    assert any("accuracy on the uploaded data" in md.value for md in at.markdown)
    assert at.sidebar.selectbox(key=state.ACTIVE).value == state.UPLOADED
    # the upload stays available after switching to a demo and back
    at.sidebar.selectbox(key=state.ACTIVE).set_value("wine_gb").run()
    at.sidebar.selectbox(key=state.ACTIVE).set_value(state.UPLOADED).run()
    assert at.title[0].value == "Uploaded: mine.skops" and not at.exception


@pytest.mark.parametrize(
    "model_file, data_file, message",
    [
        (("evil.skops", pickle.dumps({"a": 1}), "application/octet-stream"), None,
         "not a readable .skops model"),
        ("ok", ("bad.csv", b"height,weight\n1,2\n", "text/csv"), "lacks 1 column(s) the model needs: age"),
        ("ok", ("bad.csv", b"height,weight,age\n1,2,tall\n", "text/csv"), "Column 'age' must be numeric"),
        ("ok", ("empty.csv", b"", "text/csv"), "The data file is empty"),
    ],
)
def test_bad_upload_keeps_the_model(uploaded_model, model_file, data_file, message):
    model_bytes, csv = uploaded_model
    at = _app()
    if model_file == "ok":
        model_file = ("mine.skops", model_bytes, "application/octet-stream")
    at.file_uploader(key=state.MODEL_FILE).set_value(model_file)
    at.file_uploader(key=state.DATA_FILE).set_value(data_file or ("mine.csv", csv, "text/csv"))
    at.run()
    at.button[0].click().run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert any(message in e for e in errors), errors
    assert at.title[0].value == build.DEMOS[0].title  # still the model chosen before
    assert at.sidebar.selectbox(key=state.ACTIVE).value == state.DEFAULT_DEMO


def test_load_without_files_says_what_to_do():
    at = _app()
    at.button[0].click().run()
    assert any("Choose both a model file and a data file" in e.value for e in at.error)


def test_pickle_refused_unless_operator_trusts(uploaded_model, monkeypatch, tmp_path):
    from sklearn.linear_model import LinearRegression
    import pandas as pd

    X = pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [0.0, 1, 0, 1]})
    model = LinearRegression().fit(X, X.a * 2 + X.b)
    blob = pickle.dumps(model)
    csv = X.to_csv(index=False).encode()
    at = _app()
    at.file_uploader(key=state.MODEL_FILE).set_value(("m.pkl", blob, "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("d.csv", csv, "text/csv"))
    at.run()
    at.button[0].click().run()
    assert any("Pickle and joblib model files are refused" in e.value for e in at.error)
    assert not any("allowed" in w.value for w in at.sidebar.warning)

    monkeypatch.setenv(state.TRUST_ENV, "1")
    at = _app()
    assert any("Pickle/joblib uploads are **allowed**" in w.value for w in at.sidebar.warning)
    at.file_uploader(key=state.MODEL_FILE).set_value(("m.pkl", blob, "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("d.csv", csv, "text/csv"))
    at.run()
    at.button[0].click().run()
    assert not at.exception
    assert at.title[0].value == "Uploaded: m.pkl"


def test_kernels_are_warmed_once_per_process(monkeypatch):
    import threading

    from dashboard import state
    from dashboard.state import warmup

    started = []
    # _WARM is looked up in dashboard.state.warmup: patch it there
    monkeypatch.setattr(warmup, "_WARM", {"started": False, "lock": threading.Lock()})
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(self.name))
    state.warm_kernels_in_background()
    state.warm_kernels_in_background()
    assert started == ["glassbox-warm-kernels"]
    warmup._warm_kernels()  # the warm-up itself runs clean (compiles or loads the kernels)


def test_the_warm_up_waits_for_the_first_page_unless_a_page_needs_it(monkeypatch):
    """The warm-up starts START_AFTER_S after the first page (the browser draws it meanwhile),
    or at once when a page asks for it: a cost estimate must not wait that long."""
    import threading

    from dashboard.state import warmup

    monkeypatch.setattr(warmup, "_WARM", {"started": False, "lock": threading.Lock()})
    monkeypatch.setattr(warmup, "START_AFTER_S", 600.0)
    monkeypatch.setattr(warmup, "OTHER_PAGES", ("json",))
    ran = threading.Event()
    monkeypatch.setattr(warmup, "_warm_kernels", ran.set)
    warmup.warm_kernels_in_background()
    assert not ran.wait(0.3)  # still waiting for its start
    warmup.wait_for_warmup(60)  # a page needs the kernels: it starts now, and is waited for
    assert ran.is_set() and not warmup._WARM["thread"].is_alive()


@pytest.mark.parametrize("demo", ["wine_gb", "breast_cancer_xgb", "diabetes_forest"])
def test_the_prediction_spread_chart_counts_every_row_as_the_definition(demo):
    """Under the score: a classifier's predicted probability of the sidebar's class, counted per
    actual class, or a regressor's predictions beside its target; the bars' heights equal the
    histogram of the model's own predictions on every row."""
    from explainers.quality import probability_distribution, value_distribution
    from tests.plotly_json import array, figures
    from tests.views._app import load_demo

    at = open_page(demo=demo, timeout=120)
    assert not at.exception
    charts = figures(at)
    assert len(charts) == 1
    bars = [t for t in charts[0]["data"] if t["type"] == "bar"]
    model, ds, card = load_demo(demo)
    if hasattr(model, "predict_proba"):
        classes = list(model.classes_)
        ci = len(classes) - 1 if len(classes) == 2 else 0  # the sidebar's default class
        want = probability_distribution(ds.y, model.predict_proba(ds.X), classes, ci)
        assert [b["name"] for b in bars] == [str(c) for c in classes]
    else:
        want = value_distribution({"predicted": model.predict(ds.X), "actual": ds.y.to_numpy(float)})
        assert [b["name"] for b in bars] == ["predicted", "actual"]
    for bar, counts in zip(bars, want.counts):
        np.testing.assert_array_equal(array(bar["y"]), counts)
    assert sum(array(b["y"]).sum() for b in bars) == want.counts.sum() > 0
