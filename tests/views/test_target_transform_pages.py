"""A regressor fitted on log(price) (issue #24): the user says so on the Model page (or
``glassbox serve --target-transform``, ``show(..., target_transform=)``); quality, PDP and
What-if then read in the target's original units, or on the model's own scale, whichever
scale the data's target column holds."""
import json

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.metrics import mean_absolute_error, mean_absolute_percentage_error, r2_score
from streamlit.testing.v1 import AppTest

from dashboard import served, state
from explainers.target_scale import InOriginalUnits, forward, inverse, target_holds
from tests.plotly_json import array, figures
from tests.views._app import APP, open_page


def _houses(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"sqft": rng.uniform(500, 4000, n).round(), "age": rng.integers(0, 80, n).astype(float),
                      "rooms": rng.integers(1, 7, n).astype(float)})
    price = np.exp(11 + 0.0004 * X.sqft - 0.004 * X.age + 0.05 * X.rooms + rng.normal(0, 0.15, n)).round()
    model = HistGradientBoostingRegressor(max_iter=40, random_state=0).fit(X, np.log(price))
    return X, price, model


def _upload(X, target_values, model) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.file_uploader(key=state.MODEL_FILE).set_value(("houses.skops", sio.dumps(model), "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(
        ("houses.csv", X.assign(price=target_values).to_csv(index=False).encode(), "text/csv"))
    at.run()
    at.selectbox(key=state.TARGET_COL).set_value("price").run()
    next(b for b in at.button if b.label == "Load model and data").click().run()
    assert not at.exception, at.exception
    return at


def _metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def _num(text: str) -> float:
    """A number as the pages write it: "15.26k", "1.2M", "22.7%", "−3.1"."""
    t = str(text).replace(",", "").replace("%", "").replace("−", "-")
    scale = {"k": 1e3, "M": 1e6, "B": 1e9}.get(t[-1:], 1.0)
    return float(t[:-1] if scale != 1.0 else t) * scale


@pytest.mark.parametrize("column", ["original", "model"])
def test_quality_and_pdp_in_original_units_and_on_the_model_scale(column):
    X, price, model = _houses()
    at = _upload(X, price if column == "original" else np.log(price), model)
    at.selectbox(key=state.TARGET_TRANSFORM).set_value("log").run()
    assert not at.exception, at.exception
    words = "price in its original units" if column == "original" else "log(price), as the model predicts it"
    assert any(words in c.value for c in at.caption), [c.value for c in at.caption]
    assert at.sidebar.radio(key=state.SCALE).options == [state.ORIGINAL, state.MODEL_SCALE]

    pred = model.predict(X)
    at.switch_page("views/quality.py").run()
    m = _metrics(at)
    assert _num(m["R²"]) == pytest.approx(r2_score(price, np.exp(pred)), rel=1e-3)
    assert _num(m["MAE"]) == pytest.approx(mean_absolute_error(price, np.exp(pred)), rel=1e-3)
    assert _num(m["MAPE"]) == pytest.approx(100 * mean_absolute_percentage_error(price, np.exp(pred)), abs=0.05)
    at.sidebar.radio(key=state.SCALE).set_value(state.MODEL_SCALE).run()
    m = _metrics(at)
    assert _num(m["MAE"]) == pytest.approx(mean_absolute_error(np.log(price), pred), rel=1e-3)
    assert _num(m["R²"]) == pytest.approx(r2_score(np.log(price), pred), rel=1e-3)

    at.sidebar.radio(key=state.SCALE).set_value(state.ORIGINAL).run()
    at.switch_page("views/pdp.py").run()
    assert not at.exception, at.exception
    fig = figures(at)[0]
    assert "price (original units)" in fig["layout"]["yaxis"]["title"]["text"]
    line = next(t for t in fig["data"] if t.get("name") == "partial dependence")
    feature = at.selectbox(key="pdp_f1").value
    for gx, gy in list(zip(array(line["x"]).astype(float), array(line["y"]).astype(float)))[::7]:
        Z = X.copy()
        Z[feature] = gx
        assert gy == pytest.approx(float(np.exp(model.predict(Z)).mean()), rel=1e-9)

    at.switch_page("views/whatif.py").run()
    assert not at.exception, at.exception
    line = next(md.value for md in at.markdown if "original units" in md.value)
    shown = line.split("original **")[1].split("**")[0]
    assert _num(shown) == pytest.approx(float(np.exp(pred[0])), rel=1e-3)
    assert at.query_params["transform"] == "log"


def test_another_model_starts_without_the_transform():
    X, price, model = _houses()
    at = _upload(X, price, model)
    at.selectbox(key=state.TARGET_TRANSFORM).set_value("log").run()
    at.sidebar.selectbox(key=state.ACTIVE).set_value("diabetes_forest").run()
    assert not at.exception and state.SCALE not in [r.key for r in at.sidebar.radio]
    assert at.selectbox(key=state.TARGET_TRANSFORM).value == state.NO_TRANSFORM


def test_a_served_model_comes_with_its_transform(tmp_path, monkeypatch):
    X, price, model = _houses()
    sio.dump(model, tmp_path / "m.skops")
    X.assign(price=price).to_csv(tmp_path / "d.csv", index=False)
    entry = served.ServedModel(key="houses", name="houses", model=str(tmp_path / "m.skops"),
                               data=str(tmp_path / "d.csv"), target="price", target_transform="log")
    assert served.parse_entries([entry.to_json()], "test")[0].target_transform == "log"
    monkeypatch.setenv(served.SERVE_ENV, json.dumps([entry.to_json()]))
    at = open_page("views/quality.py")
    assert at.sidebar.radio(key=state.SCALE).value == state.ORIGINAL
    assert _num(_metrics(at)["MAE"]) == pytest.approx(mean_absolute_error(price, np.exp(model.predict(X))), rel=1e-3)
    with pytest.raises(served.ServeConfigError, match="target_transform"):
        served.parse_entries([{**entry.to_json(), "target_transform": "exp"}], "test")


def test_the_library_pieces():
    X, price, model = _houses()
    pred = model.predict(X)
    assert target_holds("log", price, pred) == "original" and target_holds("log", np.log(price), pred) == "model"
    assert target_holds("log", np.log(price) - 20, pred) == "model"  # negatives: never original prices
    np.testing.assert_allclose(InOriginalUnits(model, "log").predict(X), np.exp(pred), rtol=1e-15)
    for name, f, g in (("log1p", np.log1p, np.expm1), ("sqrt", np.sqrt, np.square)):
        np.testing.assert_allclose(forward(name, price), f(price), rtol=1e-15)
        np.testing.assert_allclose(inverse(name, pred), g(pred), rtol=1e-15)
    assert np.isnan(forward("log", np.array([-1.0, 0.0]))).all()
