"""Empty cells explain the model's own prediction (issue #14), through AppTest.

The reproduction: a logistic-regression pipeline with an imputer, on rows with
empty cells. The SHAP page used to explain the masked prediction and call it the
model's (0.2031 against predict_proba's 0.2005; a fully blank row 0.4735 against
0.5866). Now the explained prediction is the model's own by default, and marking
empty cells as missing is one switch away, the page then showing both.
"""
import re

import numpy as np
import pandas as pd
import pytest
import skops.io as sio

from dashboard import state
from tests.views._app import open_page

TARGET = "Churned?"


@pytest.fixture(scope="module")
def members():
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(3)
    n = 240
    X = pd.DataFrame({
        "Monthly fee ($)": rng.gamma(3, 15, n).round(2),
        "Tenure (months)": rng.integers(1, 72, n).astype(float),
        "Plan": rng.choice(["basic", "plus", "pro"], n).astype(object),
    })
    X.loc[rng.choice(n, 50, replace=False), "Monthly fee ($)"] = np.nan
    X.loc[rng.choice(n, 30, replace=False), "Tenure (months)"] = np.nan
    X.loc[rng.choice(n, 20, replace=False), "Plan"] = np.nan
    X.loc[7, :] = np.nan  # a fully blank row
    X.loc[0, "Monthly fee ($)"] = np.nan
    X.loc[11, ["Tenure (months)", "Plan"]] = np.nan
    y = np.where(X["Monthly fee ($)"].fillna(40) / 20 - X["Tenure (months)"].fillna(30) / 25
                 + rng.normal(size=n) > 0.5, "yes", "no")
    pre = ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), ["Monthly fee ($)", "Tenure (months)"]),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")), ["Plan"]),
    ])
    model = make_pipeline(pre, LogisticRegression()).fit(X, y)
    return model, sio.dumps(model), X.assign(**{TARGET: y})


def _upload(model_bytes, data, page):
    at = open_page(timeout=180)
    at.file_uploader(key=state.MODEL_FILE).set_value(("members.skops", model_bytes, "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("members.csv", data.to_csv(index=False).encode(), "text/csv"))
    at.run()
    at.selectbox(key=state.TARGET_COL).set_value(TARGET).run()
    at.button[0].click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def _line(at) -> str:
    found = [m.value for m in at.markdown if "(model: " in m.value or "the model's own prediction" in m.value]
    assert len(found) == 1, [m.value for m in at.markdown]
    return found[0]


def _numbers(line: str) -> tuple[float, float]:
    m = (re.search(r"= prediction (-?[\d.,]+) \(model: (-?[\d.,]+)\)", line)
         or re.search(r"= explained (-?[\d.,]+) \(features treated as missing\) · the model's own prediction "
                      r"(-?[\d.,]+)", line))
    assert m, line
    return tuple(float(g.replace(",", "")) for g in m.groups())


@pytest.mark.parametrize("row", [0, 7, 11])
def test_shap_page_explains_the_models_own_prediction(members, row):
    model, model_bytes, data = members
    X = data.drop(columns=TARGET)
    assert X.iloc[[0, 7, 11]].isna().any(axis=1).all()
    proba = model.predict_proba(X.iloc[[row]])[0]
    at = _upload(model_bytes, data, "views/shap.py")
    at.number_input(key="shap_row").set_value(row).run()
    assert not at.exception, at.exception
    explained, own = _numbers(_line(at))
    # binary: the page explains P(yes) (the second class)
    assert own == pytest.approx(proba[1], abs=5e-6) and explained == pytest.approx(proba[1], abs=5e-6)
    assert any("are values the model receives" in c.value for c in at.caption)

    # one switch away: empty cells as missing features; the model's prediction is still shown as the model's
    at.toggle(key="shap_empty_missing").set_value(True).run()
    assert not at.exception, at.exception
    explained_masked, own_again = _numbers(_line(at))
    assert own_again == pytest.approx(proba[1], abs=5e-6)
    assert any("treated as missing features, as you chose" in c.value for c in at.caption)
    if row == 7:  # nothing plays: the masked prediction is the base value, not the model's
        assert explained_masked != pytest.approx(own_again, abs=1e-3)


def test_whatif_metrics_are_the_models_predictions(members):
    model, model_bytes, data = members
    X = data.drop(columns=TARGET)
    at = _upload(model_bytes, data, "views/whatif.py")
    at.number_input(key="whatif_row").set_value(7).run()
    metrics = {m.label: m.value for m in at.metric}
    original = [v for k, v in metrics.items() if k.startswith("Original")]
    assert len(original) == 1
    assert float(original[0].replace(",", "")) == pytest.approx(model.predict_proba(X.iloc[[7]])[0, 1], abs=1e-3)
    assert metrics["Features changed"] == "0"
