"""Models named by the operator (``glassbox serve``, ``show()``) in the app, through AppTest."""
import json
import os
import time

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LinearRegression

from dashboard import served, state
from demo_models import build

from tests.views._app import open_page


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("served")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(150, 3)), columns=["speed", "load", "temp"])
    y = 3 * X.speed - X.load + rng.normal(0, 0.1, 150)
    sio.dump(LinearRegression().fit(X, y), d / "engine.skops")
    X.assign(wear=y).to_parquet(d / "engine.parquet", index=False)
    label = np.where(X.speed > 0, "fast", "slow")
    sio.dump(RandomForestClassifier(10, max_depth=3, random_state=0).fit(X, label), d / "pump.skops")
    X.assign(kind=label, note="x").to_csv(d / "pump.csv", index=False)
    return d


def _entries(d):
    return [{"model": str(d / "engine.skops"), "data": str(d / "engine.parquet"), "target": "wear",
             "name": "Engine wear"},
            {"model": str(d / "pump.skops"), "data": str(d / "pump.csv"), "target": "kind", "name": "Pump"}]


def test_served_models_come_first_and_the_first_is_active(files, monkeypatch, demo_cards):
    monkeypatch.setenv(served.SERVE_ENV, json.dumps(_entries(files)))
    at = open_page()
    picker = at.sidebar.selectbox(key=state.ACTIVE)
    assert picker.options[:2] == ["Engine wear", "Pump"]
    assert picker.options[2:] == [demo_cards[n]["title"] for n in build.DEMO_NAMES]
    assert picker.value == "Engine-wear"
    assert at.title[0].value == "Engine wear"
    assert {m.label: m.value for m in at.metric} == {"Task": "regression", "Rows": "150", "Features": "3"}
    assert at.query_params["model"] in ("Engine-wear", ["Engine-wear"])

    picker.set_value("Pump").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Pump"
    assert at.sidebar.selectbox(key=state.CLASS_INDEX).options == ["fast", "slow"]
    assert any("note" in i.value for i in at.info)  # the extra column dropped, with a notice

    at.switch_page("views/pdp.py").run()  # a page computes on the served model
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) >= 1


def test_url_opens_a_served_model(files, monkeypatch, demo_cards):
    monkeypatch.setenv(served.SERVE_ENV, json.dumps(_entries(files)))
    at = open_page(query={"model": "Pump"})
    assert at.title[0].value == "Pump"
    at = open_page(query={"model": "no-such-model"})  # a stale link: the first served model
    assert at.title[0].value == "Engine wear"


def test_missing_file_is_a_sentence_on_the_page(files, monkeypatch, demo_cards):
    entries = _entries(files)
    entries[0]["data"] = str(files / "gone.parquet")
    monkeypatch.setenv(served.SERVE_ENV, json.dumps(entries))
    at = open_page()
    assert not at.exception
    assert any("gone.parquet" in e.value and "cannot be read any more" in e.value for e in at.error)


def test_manifest_is_reread_when_it_changes(files, tmp_path, monkeypatch, demo_cards):
    manifest = tmp_path / "manifest.json"
    monkeypatch.setenv(served.MANIFEST_ENV, str(manifest))
    served.write_manifest(str(manifest), served.parse_entries(_entries(files)[:1], "test"))
    at = open_page()
    assert at.sidebar.selectbox(key=state.ACTIVE).options[:2] == ["Engine wear", demo_cards[build.DEMO_NAMES[0]]["title"]]

    time.sleep(0.01)
    served.write_manifest(str(manifest), served.parse_entries(_entries(files), "test"))
    at.run()  # the next run of the same session sees the new model
    assert at.sidebar.selectbox(key=state.ACTIVE).options[:2] == ["Engine wear", "Pump"]
    os.remove(manifest)  # the show() session ended: back to the demos
    at = open_page()
    assert at.title[0].value == demo_cards[state.DEFAULT_DEMO]["title"]


def test_keys_are_unique_and_never_a_demo_name():
    raw = [{"model": "/m/a.skops", "data": "/d.csv"}, {"model": "/n/a.skops", "data": "/d.csv"},
           {"model": "/x.skops", "data": "/d.csv", "name": "diabetes_forest"},
           {"model": "/y.skops", "data": "/d.csv", "name": "a b/c?", "target": ""}]
    entries = served.parse_entries(raw, "test", reserved=build.DEMO_NAMES)
    assert [e.key for e in entries] == ["a", "a-2", "diabetes_forest-2", "a-b-c"]
    assert [e.name for e in entries] == ["a", "a", "diabetes_forest", "a b/c?"]
    assert entries[3].target is None
    with pytest.raises(served.ServeConfigError, match="needs \"model\" and \"data\""):
        served.parse_entries([{"model": "/m.skops"}], "test")
    with pytest.raises(served.ServeConfigError, match="not valid JSON"):
        served.served_models(environ={served.SERVE_ENV: "[{"})


def test_a_served_pickle_needs_the_servers_trust(files, tmp_path, monkeypatch, demo_cards):
    import pickle

    model = sio.load(files / "engine.skops", trusted=sio.get_untrusted_types(file=files / "engine.skops"))
    (tmp_path / "engine.pkl").write_bytes(pickle.dumps(model))
    entry = {**_entries(files)[0], "model": str(tmp_path / "engine.pkl")}
    monkeypatch.setenv(served.SERVE_ENV, json.dumps([entry]))
    monkeypatch.delenv(state.TRUST_ENV, raising=False)
    at = open_page()
    assert any("Pickle and joblib model files are refused" in e.value for e in at.error)
    monkeypatch.setenv(state.TRUST_ENV, "1")  # what glassbox serve --trust-pickles gives the server
    at = open_page()
    assert not at.error and at.title[0].value == "Engine wear"


# ------------------------------- library objects from a notebook (issue #27)
def _library_models():
    """(name, fitted object, X, y, the library's own raw margin of every row)."""
    import catboost as cb
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(3)
    X = pd.DataFrame({"speed": rng.normal(size=200), "load": rng.normal(size=200)})
    X.loc[rng.random(200) < 0.2, "load"] = 0.0  # XGBoost's missing=0.0 below: these are missing
    label = np.where(X.speed + (X.load == 0.0) > 0.4, "late", "on time")
    xclf = xgb.XGBClassifier(n_estimators=10, max_depth=3, missing=0.0).fit(X, (label == "late").astype(int))
    lclf = lgb.LGBMClassifier(n_estimators=10, num_leaves=6, verbose=-1).fit(X, label)
    creg = cb.CatBoostRegressor(iterations=10, depth=3, verbose=0, allow_writing_files=False).fit(X, X.speed * 2)
    Xk = X.assign(site=rng.choice(["north", "south"], 200))
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["site"]), remainder="passthrough"),
                         lgb.LGBMClassifier(n_estimators=10, num_leaves=6, verbose=-1)).fit(Xk, label)
    return [
        ("XGB", xclf, X, pd.Series((label == "late").astype(int), name="late"), xclf.predict(X, output_margin=True)),
        ("LGBM", lclf, X, pd.Series(label, name="status"), lclf.predict(X, raw_score=True)),
        ("CatBoost", creg, X, pd.Series(X.speed * 2, name="y"), creg.predict(X)),
        ("Pipeline", pipe, Xk, pd.Series(label, name="status"), pipe.predict(Xk, raw_score=True)),
    ]


@pytest.mark.parametrize("case", range(4))
def test_show_saves_library_objects_in_their_own_format_and_explains_them(case, tmp_path, monkeypatch):
    """show() on an XGBoost / LightGBM / CatBoost object (or a Pipeline ending in one) saves it in
    the library's own file, never a pickle; the SHAP page then shows the library's own prediction
    (XGBoost's missing=0.0 and LightGBM's text labels kept)."""
    from dashboard import notebook

    name, model, X, y, margin = _library_models()[case]
    frame, target = notebook._frame(model, X, y)
    model_path, data_path, parts = notebook._save(model, frame, target, tmp_path, 1)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert not any(p.endswith((".pkl", ".joblib", ".pickle")) for p in written)
    if name == "Pipeline":
        assert written == ["data-1.parquet", "final-1.txt", "model-1.skops"] and parts["step"] == "lgbmclassifier"
    else:
        assert written == ["data-1.parquet", f"model-1.{'txt' if name == 'LGBM' else 'json'}"]
    entry = served.ServedModel(key=name, name=name, model=str(model_path), data=str(data_path), target=target,
                               parts=parts)
    monkeypatch.setenv(served.SERVE_ENV, json.dumps([entry.to_json()]))
    at = open_page()
    assert at.title[0].value == name
    if name in ("LGBM", "Pipeline"):
        assert at.sidebar.selectbox(key=state.CLASS_INDEX).options == ["late", "on time"]
        at.sidebar.selectbox(key=state.CLASS_INDEX).set_value("on time").run()
    at.switch_page("views/shap.py").run()
    assert not at.exception, at.exception
    from tests.plotly_json import array, figures

    if name != "CatBoost":  # a classifier: probabilities by default, the library's margin on log-odds
        bar = figures(at)[0]["data"][0]
        shown = float(array(bar["base"])[0]) + array(bar["x"]).astype(float).sum()
        cls = at.sidebar.selectbox(key=state.CLASS_INDEX).value
        proba = model.predict_proba(X.iloc[[0]])[0]
        assert shown == pytest.approx(float(proba[-1] if name == "XGB" else proba[list(model.classes_).index(cls)]),
                                      abs=1e-5), name
        at.sidebar.radio(key=state.SCALE).set_value(state.LOG_ODDS).run()
    for row in (0, int(np.flatnonzero(X.load.to_numpy() == 0.0)[0])):
        at.number_input(key="shap_row").set_value(row).run()
        assert not at.exception, at.exception
        bar = figures(at)[0]["data"][0]
        shown = float(array(bar["base"])[0]) + array(bar["x"]).astype(float).sum()
        assert shown == pytest.approx(float(np.asarray(margin)[row]), abs=1e-5), (name, row)


def test_a_show_server_opens_only_with_its_token(monkeypatch, demo_cards):
    """show()'s server (issue #28): without the link's token nothing of a model is read or shown."""
    from dashboard import server

    monkeypatch.setenv(server.ACCESS_ENV, "s3cret-token-of-this-notebook")
    for query in ({}, {"token": "guess"}, {"token": "s3cret-token-of-this-notebook-and-more"}):
        at = open_page(query=query or None)
        assert not at.exception, at.exception
        assert [e.value for e in at.error] == [server.ACCESS_MESSAGE]
        assert not at.title and not at.sidebar.selectbox  # no page, no model picker
    at = open_page(query={"token": "s3cret-token-of-this-notebook"})
    assert not at.error and at.title
    at.switch_page("views/pdp.py").run()  # the session keeps its access across pages
    assert not at.exception and not at.error and at.get("plotly_chart")
    assert at.query_params["token"] in ("s3cret-token-of-this-notebook", ["s3cret-token-of-this-notebook"])


def test_bidi_controls_in_file_text_never_reverse_a_table(tmp_path, monkeypatch, demo_cards):
    """A column named with U+202E read backwards in the features table (issue #28): every table
    shows the control as U+FFFD, names and cells, and the report's HTML too."""
    from dashboard.safe_text import shown_frame

    rng = np.random.default_rng(0)
    evil = "\u202egnirts"
    X = pd.DataFrame({"speed": rng.normal(size=60), evil: rng.normal(size=60)})
    sio.dump(LinearRegression().fit(X, X.speed), tmp_path / "m.skops")
    X.assign(y=X.speed).to_parquet(tmp_path / "d.parquet", index=False)
    monkeypatch.setenv(served.SERVE_ENV, json.dumps([{"model": str(tmp_path / "m.skops"),
                                                       "data": str(tmp_path / "d.parquet"), "target": "y"}]))
    at = open_page()
    assert not at.exception, at.exception
    shown = at.dataframe[0].value
    names = list(shown["feature"])
    assert "\ufffdgnirts" in names and evil not in names
    frame = pd.DataFrame({evil: ["a\u2066b", 1.5]}, index=["r\u202d", "s"])
    out = shown_frame(frame)
    assert list(out.columns) == ["\ufffdgnirts"] and list(out.index) == ["r\ufffd", "s"]
    assert list(out.iloc[:, 0]) == ["a\ufffdb", 1.5]
    assert list(frame.columns) == [evil]  # the frame itself is left alone
