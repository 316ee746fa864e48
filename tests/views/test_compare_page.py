"""The Compare page (issue #26) through AppTest: the sidebar's model beside others on the same
held-out rows, every number against scikit-learn or the definition, and its refusals."""
import numpy as np
import pytest
from sklearn import metrics as skm

from dashboard import state
from dashboard.state import compare as cs
from explainers.pdp import partial_dependence
from tests.plotly_json import array, figures
from tests.views._app import load_demo, open_page

PAGE = "views/compare.py"


def _figure(at, title_start: str) -> dict:
    found = [f for f in figures(at) if (f["layout"].get("title") or {}).get("text", "").startswith(title_start)]
    assert found, [(f["layout"].get("title") or {}).get("text") for f in figures(at)]
    return found[0]


@pytest.fixture(scope="module")
def diabetes():
    at = open_page(PAGE, demo="diabetes_forest", timeout=300)
    return at


def test_default_partner_and_held_out_scores_equal_scikit_learn(diabetes):
    at = diabetes
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.multiselect(key=cs.COMPARE_WITH).value == ["diabetes_linear"]
    forest, ds, card = load_demo("diabetes_forest")
    linear, _, _ = load_demo("diabetes_linear")
    held = slice(card["n_train"], None)
    X, y = ds.X.iloc[held], ds.y.iloc[held].to_numpy(float)
    table = at.dataframe[0].value.set_index("model")
    for name, model in (("random forest", forest), ("linear regression", linear)):
        pred = model.predict(X)
        assert table.loc[name, "R²"] == f"{skm.r2_score(y, pred):.4g}"
        assert table.loc[name, "MAE"] == f"{skm.mean_absolute_error(y, pred):.4g}"
        assert table.loc[name, "RMSE"] == f"{skm.root_mean_squared_error(y, pred):.4g}"
    captions = " ".join(c.value for c in at.caption)
    assert f"the {len(X):,} held-out rows" in captions


def test_overlays_are_each_models_own_numbers(diabetes):
    at = diabetes
    forest, ds, card = load_demo("diabetes_forest")
    linear, _, _ = load_demo("diabetes_linear")
    pdp = _figure(at, "Partial dependence on")
    feature = at.selectbox(key="compare_feature").value
    grid = np.asarray(array(pdp["data"][0]["x"]), float)
    for trace, model in zip(pdp["data"], (forest, linear)):
        ref = partial_dependence(model, ds.X, [feature], custom_values={feature: grid}, kind="average",
                                 method="brute")
        np.testing.assert_allclose(np.asarray(array(trace["y"]), float), ref.average, rtol=1e-9, atol=1e-9)
    # predicted against actual: each model's own predictions on the held-out rows
    pa = _figure(at, "Predicted against actual")
    X = ds.X.iloc[card["n_train"]:]
    for trace, model in zip(pa["data"][:2], (forest, linear)):
        np.testing.assert_allclose(np.asarray(array(trace["y"]), float), model.predict(X), rtol=1e-12)


def test_disagreement_rows_are_the_largest_differences(diabetes):
    at = diabetes
    forest, ds, card = load_demo("diabetes_forest")
    linear, _, _ = load_demo("diabetes_linear")
    X = ds.X.iloc[card["n_train"]:]
    gap = np.abs(forest.predict(X) - linear.predict(X))
    table = at.dataframe[-1].value
    expected = card["n_train"] + np.argsort(-gap, kind="stable")[:len(table)]
    assert sorted(table.row.tolist()[:10]) == sorted(expected.tolist()[:10])
    assert np.all(np.diff(np.abs(table["difference"].to_numpy(float))) <= 1e-12)


def test_open_a_disagreement_row_on_the_shap_page_with_the_other_model(diabetes):
    at = diabetes
    table = at.dataframe[-1].value
    row = int(table.row.iloc[0])
    at.selectbox(key="compare_row").set_value(row).run()
    at.radio(key="compare_open_with").set_value("linear regression").run()
    at.button(key="compare_open").click().run()
    assert not at.exception
    assert at.sidebar.selectbox(key=state.ACTIVE).value == "diabetes_linear"
    assert "Why this prediction?" in [t.value for t in at.title]
    assert at.number_input(key="shap_row").value == row


@pytest.mark.parametrize("demo, other, words", [
    ("breast_cancer_hgb", "diabetes_linear", "needs 10 column(s) the data of"),
    ("breast_cancer_hgb", "breast_cancer_xgb", "The classifiers predict different classes"),
    ("housing_gb", "housing_lgbm", "needs 1 column(s) the data of"),
])
def test_models_that_cannot_be_compared_say_why(demo, other, words):
    at = open_page(PAGE, demo=demo, timeout=300)
    at.multiselect(key=cs.COMPARE_WITH).set_value([other]).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(words in i.value for i in at.info), [i.value for i in at.info]


def test_a_regressor_and_a_classifier_are_not_scored_together():
    from types import SimpleNamespace

    import pandas as pd

    def ctx(task, classes):
        return SimpleNamespace(task=task, classes=classes, y=pd.Series([1.0, 0.0]))

    reg, clf = ctx("regression", None), ctx("binary", ["no", "yes"])
    assert "A regressor and a classifier cannot be scored on one target" in cs.compare_problem(reg, {"a": reg, "b": clf})
    other = ctx("binary", ["0", "1"])
    assert "different classes (a: no, yes; b: 0, 1)" in cs.compare_problem(clf, {"a": clf, "b": other})
    assert cs.compare_problem(clf, {"a": clf, "b": ctx("binary", ["no", "yes"])}) is None


def test_the_report_holds_the_comparison():
    at = open_page(PAGE, demo="diabetes_forest", timeout=300)
    at.switch_page("views/report.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    outline = " ".join(m.value for m in at.markdown)
    assert "Models compared: random forest and linear regression" in outline
    assert "Differences between the models" in outline


def test_large_data_is_scored_on_a_seeded_sample(monkeypatch):
    from types import SimpleNamespace

    import pandas as pd

    monkeypatch.setattr(cs, "MAX_ROWS", 100)
    ctx = SimpleNamespace(card={}, X=pd.DataFrame({"a": np.arange(1_000)}))
    rows, words = cs.scored_rows(ctx, {"a": ctx, "b": ctx})
    assert len(rows) == 100 and len(set(rows)) == 100 and words == "a seeded sample of 100 of every row"
    again, _ = cs.scored_rows(ctx, {"a": ctx, "b": ctx})
    np.testing.assert_array_equal(rows, again)  # the same rows on every run: the cache and the link hold
    monkeypatch.setattr(cs, "MAX_ROWS", 50_000)
    demo = SimpleNamespace(card={"n_train": 400}, X=ctx.X)
    rows, words = cs.scored_rows(demo, {"a": demo, "b": demo}, segment_rows=np.arange(300, 700), segment_name="Young")
    np.testing.assert_array_equal(rows, np.arange(400, 700))
    assert words == "the 300 rows of segment Young (held-out rows only)"


def test_mcnemar_on_the_page_is_the_exact_binomial_test():
    from scipy.stats import binomtest

    at = open_page(PAGE, demo="breast_cancer_hgb", timeout=300)
    assert not at.exception and not at.error
    hgb, ds, card = load_demo("breast_cancer_hgb")
    logit, _, _ = load_demo("breast_cancer_logistic")
    X, y = ds.X.iloc[card["n_train"]:], ds.y.iloc[card["n_train"]:].to_numpy()
    right_a, right_b = hgb.predict(X) == y, logit.predict(X) == y
    b, c = int((right_a & ~right_b).sum()), int((~right_a & right_b).sum())
    p = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue
    caption = next(c.value for c in at.caption if "McNemar" in c.value)
    assert f"p = {p:.4g}" in caption, caption


def test_a_segment_compares_the_models_on_its_held_out_rows():
    from dashboard.state.segments import SEGMENT_ON, SEGMENTS
    from explainers.segments import Range, Segment

    heavy = Segment("Heavier", [Range("bmi", lo=27.0)])
    at = open_page(None, demo="diabetes_forest")
    at.session_state[SEGMENTS] = [heavy.to_token()]
    at.session_state[SEGMENT_ON] = "Heavier"
    at.switch_page(PAGE).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    forest, ds, card = load_demo("diabetes_forest")
    linear, _, _ = load_demo("diabetes_linear")
    held = np.arange(card["n_train"], len(ds.X))
    rows = held[heavy.mask(None, ds.X)[held]]
    X, y = ds.X.iloc[rows], ds.y.iloc[rows].to_numpy(float)
    table = at.dataframe[0].value.set_index("model")
    for name, model in (("random forest", forest), ("linear regression", linear)):
        assert table.loc[name, "R²"] == f"{skm.r2_score(y, model.predict(X)):.4g}"
    assert f"the {len(rows):,} rows of segment Heavier (held-out rows only)" in " ".join(c.value for c in at.caption)


def test_slow_importances_ask_first(monkeypatch):
    """The importances of several models are estimated before they run; over the page budget
    the page asks, and the rest of the comparison is drawn meanwhile."""
    monkeypatch.setattr(cs, "importances_cost", lambda ctxs, methods: 99.0)
    at = open_page(PAGE, demo="diabetes_forest", timeout=300)
    assert any("take about" in w.value for w in at.warning)
    assert not [f for f in figures(at) if "Importance of each model" in f["layout"]["title"]["text"]]
    assert [f for f in figures(at) if "Partial dependence" in f["layout"]["title"]["text"]]
    next(b for b in at.button if b.label == "Compute anyway").click().run()
    assert not at.exception
    assert [f for f in figures(at) if "Importance of each model" in f["layout"]["title"]["text"]]
