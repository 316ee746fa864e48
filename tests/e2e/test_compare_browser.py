"""The Compare page in a real browser (issue #26): a scikit-learn pipeline and an XGBoost model
file of the same table, served together, compared on the same rows; the numbers the page
draws are scikit-learn's, and no label of its charts covers another."""
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from playwright.sync_api import expect
from sklearn import metrics as skm

from .conftest import pick_option, settle, stop_server, wait_idle
from .test_serve_browser import start_serve
from .test_state_browser import _figure
from .test_truth_browser import _check_labels


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """``glassbox serve`` on a pipeline (.skops) and an XGBoost file (.json) of one table."""
    import xgboost as xgb
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    d = tmp_path_factory.mktemp("compare_browser")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(400, 4)), columns=["income", "debt", "age", "tenure"])
    y = (X.income - X.debt + 0.5 * X.age * X.tenure + rng.normal(0, 0.7, 400) > 0).astype(int)
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    boost = xgb.XGBClassifier(n_estimators=30, max_depth=3, random_state=0).fit(X, y)
    sio.dump(pipe, d / "pipe.skops")
    boost.save_model(d / "boost.json")
    X.assign(paid=y).to_csv(d / "loans.csv", index=False)
    proc, url = start_serve(d, ["--model", "pipe.skops", "--data", "loans.csv", "--target", "paid",
                                "--name", "Logistic pipeline", "--model", "boost.json", "--data", "loans.csv",
                                "--target", "paid", "--name", "XGBoost file"])
    yield url, X, y, pipe, boost
    stop_server(proc)


def test_compare_page_scores_both_models_on_the_same_rows(page, pair):
    url, X, y, pipe, boost = pair
    page.goto(f"{url}/compare?model=Logistic-pipeline")
    wait_idle(page, 120_000)
    expect(page.get_by_text("Pick one or more models to compare")).to_be_visible(timeout=60_000)
    pick_option(page, "Compare with", "XGBoost file")
    page.keyboard.press("Escape")  # a multiselect keeps its list open after a pick
    settle(page, 180_000)
    expect(page.get_by_role("heading", name="Scores")).to_be_visible(timeout=120_000)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    assert "models=XGBoost-file" in page.url  # the pick is in the link

    drawn = [_figure(page, i) for i in range(page.get_by_test_id("stPlotlyChart").count())]
    roc = next((f for f in drawn if "ROC curves" in f["title"]), None)
    assert roc is not None, [f["title"] for f in drawn]
    for name, model in (("Logistic pipeline", pipe), ("XGBoost file", boost)):
        auc = skm.roc_auc_score(y, model.predict_proba(X)[:, 1])
        assert f"{name} (AUC {auc:.4g})" in roc["names"], roc["names"]
    # every chart of the page: no label covers another, none is cut off
    charts = page.get_by_test_id("stPlotlyChart")
    for i in range(charts.count()):
        charts.nth(i).scroll_into_view_if_needed()
        _check_labels(charts.nth(i))
