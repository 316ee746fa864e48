"""Pages with an uploaded model whose data has empty target cells, or a feature chosen as the target."""
import re

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.inspection import permutation_importance as sk_permutation_importance
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from streamlit.testing.v1 import AppTest

from dashboard import state
from tests.plotly_json import array, figures
from tests.views._app import APP


@pytest.fixture(scope="module")
def sales():
    """A mixed table as people keep it: text, empty cells, names with spaces, 2 blank target cells."""
    rng = np.random.default_rng(3)
    n = 150
    X = pd.DataFrame({
        "living area": rng.normal(1400, 350, n).round(),
        "neighborhood": rng.choice(["Old Town", "Riverside", "Hills"], n),
        "garage type": rng.choice(["attached", "detached", "none"], n),
        "year built": rng.integers(1950, 2020, n).astype(float),
    })
    X.loc[::10, "year built"] = np.nan
    X.loc[5::17, "garage type"] = np.nan
    score = (X["living area"] - 1400) / 350 + (X.neighborhood == "Hills") + rng.normal(0, 0.5, n)
    band = pd.Series(np.where(score > 0.3, "high", "low"), name="sale band", dtype=object)
    pre = ColumnTransformer([
        ("text", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
         ["neighborhood", "garage type"]),
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["living area", "year built"]),
    ])
    model = make_pipeline(pre, LogisticRegression(max_iter=500)).fit(X, band)
    gappy = band.copy()
    gappy[[7, 88]] = np.nan  # two blank cells in the target column
    csv = X.assign(**{"sale band": gappy, "agent note": "ok"}).to_csv(index=False).encode()
    return model, X, band, gappy, sio.dumps(model), csv


def _upload(model_bytes, csv, target) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180).run()
    at.file_uploader(key=state.MODEL_FILE).set_value(("sales.skops", model_bytes, "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("sales.csv", csv, "text/csv"))
    at.run()
    at.selectbox(key=state.TARGET_COL).set_value(target).run()
    at.button[0].click().run()
    assert not at.exception, at.exception
    return at


def test_model_page_scores_the_rows_with_a_target(sales):
    model, X, band, gappy, model_bytes, csv = sales
    at = _upload(model_bytes, csv, "sale band")
    assert at.title[0].value == "Uploaded: sales.skops"
    infos = [i.value for i in at.info]
    assert any("empty in 2 of 150 rows" in i and "left out of scores" in i for i in infos), infos
    keep = gappy.notna().to_numpy()
    want = (model.predict(X[keep]) == band[keep]).mean()
    score = next(m.value for m in at.markdown if "accuracy on the uploaded data" in m.value)
    assert f"{want:.3f}" in score, score


def test_importance_page_with_two_blank_target_cells_shows_holdout_permutation(sales):
    model, X, band, gappy, model_bytes, csv = sales
    at = _upload(model_bytes, csv, "sale band")
    at.switch_page("views/importance.py").run()
    assert not at.exception, at.exception
    figs = figures(at)
    bars = figs[0]
    names = [t["name"] for t in bars["data"]]
    assert "Holdout permutation (log loss)" in names, names  # a classifier's default score
    captions = " ".join(c.value for c in at.caption)
    assert "target column the model was trained on" not in captions
    infos = [i.value for i in at.info]
    assert any(re.search(r"Holdout permutation \(log loss\): 2 row\(s\) with an empty target were left out; "
                         r"it is scored on 148 rows", i) for i in infos), infos
    # the numbers are scikit-learn's on the 148 rows with a target
    keep = gappy.notna().to_numpy()
    sk = sk_permutation_importance(model, X[keep], band[keep], n_repeats=5, random_state=0, scoring="neg_log_loss")
    trace = bars["data"][names.index("Holdout permutation (log loss)")]
    got = dict(zip(array(trace["y"]), array(trace["x"]).astype(float)))
    clipped = np.clip(sk.importances_mean, 0, None)
    want = dict(zip(X.columns, clipped / clipped.sum() if clipped.sum() else clipped))
    for f, v in want.items():
        assert got[f] == pytest.approx(v, rel=1e-9, abs=1e-12), (f, got, want)


def test_report_keeps_the_importance_section_and_says_what_was_left_out(sales):
    _, _, _, _, model_bytes, csv = sales
    at = _upload(model_bytes, csv, "sale band")
    at.switch_page("views/report.py").run()
    assert not at.exception, at.exception
    outline = " ".join(m.value for m in at.markdown)
    assert "Variable importance" in outline and "Holdout permutation" in outline, outline
    notices = [i.value for i in at.info]
    assert any("2 row(s) with an empty target were left out" in n for n in notices), notices
    # the methods that do not apply are named, not dropped silently
    assert any("MDI" in n for n in notices), notices
    download = next(b for b in at.get("download_button") if "report" in b.label.lower())
    assert download is not None


def test_model_page_feature_chosen_as_target_says_so(sales):
    _, _, _, _, model_bytes, csv = sales
    at = _upload(model_bytes, csv, "neighborhood")
    errors = [e.value for e in at.error]
    text = " ".join(errors).replace("\\", "")
    assert "'neighborhood' is one of the model's input features, so it cannot be the target; choose the " \
           "column the model predicts" in text, errors
    assert "'sale band'" in text and "lacks" not in text
    assert at.title[0].value != "Uploaded: sales.skops"  # the previous model stays


def test_forest_with_blank_targets_compares_mdi_and_holdout_and_names_what_is_left_out():
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(5)
    n = 140
    X = pd.DataFrame({"living area": rng.normal(1400, 350, n).round(), "lot depth": rng.normal(120, 20, n),
                      "year built": rng.integers(1950, 2020, n).astype(float)})
    X.loc[::9, "lot depth"] = np.nan  # the forest routes empty cells itself
    price = 100 * X["living area"] + 500 * X["year built"].sub(1950) + rng.normal(0, 5_000, n)
    model = RandomForestRegressor(15, random_state=0).fit(X, price)
    gappy = price.round().copy()
    gappy[[10, 20]] = np.nan
    csv = X.assign(**{"sale price": gappy}).to_csv(index=False).encode()
    at = _upload(sio.dumps(model), csv, "sale price")
    at.switch_page("views/importance.py").run()
    assert not at.exception, at.exception
    names = [t["name"] for t in figures(at)[0]["data"]]
    assert names[:2] == ["MDI", "Holdout permutation (R²)"], names
    captions = " ".join(c.value for c in at.caption)
    assert "Out-of-bag" in captions and "empty in 2 of 140 rows" in captions, captions
    at.switch_page("views/report.py").run()
    assert not at.exception, at.exception
    outline = " ".join(m.value for m in at.markdown)
    assert "Variable importance, compared" in outline, outline
    notices = " ".join(i.value for i in at.info)
    assert "Left out of the importance comparison: Out-of-bag permutation (MDA)" in notices, notices
    assert "Holdout permutation (R²): 2 row(s) with an empty target were left out" in notices, notices
