"""A segment chosen in the sidebar, compared with the rest on the Quality, PDP, SHAP and
Importance pages (AppTest): the segment's and the rest's numbers on each figure and table
equal explainers' own results on those rows; a segment of 5 rows says it is too small
instead of drawing; with no segment the pages draw what they drew before."""
import numpy as np
import pytest

from dashboard.state.rows import _nested_rows
from dashboard.state.segments import SEGMENT_ON, SEGMENTS
from explainers.importance import permutation_importance
from explainers.pdp import partial_dependence
from explainers.quality import classification_quality, regression_quality
from explainers.segments import Range, Segment
from explainers.shap import explain
from tests.plotly_json import array, figures
from tests.views._app import load_demo, open_page

TOL = dict(rtol=1e-10, atol=1e-12)
DIABETES = "diabetes_forest"
CANCER = "breast_cancer_logistic"
#: bmi >= 27: about a third of the diabetes rows (and of its held-out rows)
HEAVY = Segment("Heavier", [Range("bmi", lo=27.0)])
#: mean radius >= 15: about a quarter of the breast cancer rows
LARGE = Segment("Large tumours", [Range("mean radius", lo=15.0)])


@pytest.fixture(scope="module")
def diabetes():
    model, ds, card = load_demo(DIABETES)
    return model, ds.X, ds.y, card


@pytest.fixture(scope="module")
def cancer():
    model, ds, card = load_demo(CANCER)
    return model, ds.X, ds.y, card


def _tiny(X, feature: str) -> Segment:
    """A segment of exactly 5 rows: the 5 largest values of ``feature``."""
    lo = float(np.sort(X[feature].to_numpy())[-5])
    seg = Segment("Tiny", [Range(feature, lo=lo)])
    assert int(seg.mask(None, X).sum()) == 5
    return seg


def _open(page: str, demo: str, segment: Segment | None):
    at = open_page(None, demo=demo)
    if segment is not None:
        at.session_state[SEGMENTS] = [segment.to_token()]
        at.session_state[SEGMENT_ON] = segment.name
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def _titled(at, start: str) -> list[dict]:
    return [f for f in figures(at) if f["layout"]["title"]["text"].startswith(start)]


def _by_name(fig: dict) -> dict:
    return {t["name"]: t for t in fig["data"]}


def _infos(at) -> str:
    return " ".join(i.value for i in at.info)


# -------------------------------------------------------------------- Quality
def test_quality_regression_segment_against_rest(diabetes):
    model, X, y, _ = diabetes
    at = _open("views/quality.py", DIABETES, HEAVY)
    mask = HEAVY.mask(model, X)
    pred = model.predict(X)
    q_seg, q_rest = regression_quality(y[mask], pred[mask]), regression_quality(y[~mask], pred[~mask])
    table = next(d.value for d in at.dataframe if "Rest" in d.value.columns)
    seg_col = table["Segment: Heavier"]
    assert seg_col["Rows scored"] == mask.sum() and table["Rest"]["Rows scored"] == (~mask).sum()
    for label, key in (("R²", "r2"), ("MAE", "mae"), ("RMSE", "rmse"), ("Max error", "max_error")):
        assert seg_col[label] == pytest.approx(q_seg.metrics[key], rel=1e-12)
        assert table["Rest"][label] == pytest.approx(q_rest.metrics[key], rel=1e-12)
    (fig,) = _titled(at, "Predicted against actual: segment")
    traces = _by_name(fig)
    for name, q, rows in (("Segment: Heavier", q_seg, np.flatnonzero(mask)), ("Rest", q_rest, np.flatnonzero(~mask))):
        np.testing.assert_allclose(array(traces[name]["x"]).astype(float), q.y_true, **TOL)
        np.testing.assert_allclose(array(traces[name]["y"]).astype(float), q.y_pred, **TOL)
        np.testing.assert_array_equal(array(traces[name]["customdata"]).astype(int), rows)  # rows of the data


def test_quality_binary_confusion_matrices_follow_the_threshold(cancer):
    model, X, y, _ = cancer
    at = _open("views/quality.py", CANCER, LARGE)
    mask = LARGE.mask(model, X)
    proba = model.predict_proba(X)
    classes = list(model.classes_)
    for t in (0.5, 0.2):
        if t != 0.5:
            at.slider(key="quality_threshold").set_value(t).run()
            assert not at.exception, at.exception
        q_seg = classification_quality(y[mask], proba[mask], classes, threshold=t, class_index=1)
        q_rest = classification_quality(y[~mask], proba[~mask], classes, threshold=t, class_index=1)
        (fig,) = _titled(at, "Confusion matrix, segment against the rest")
        traces = _by_name(fig)
        np.testing.assert_array_equal(array(traces["Segment: Large tumours"]["z"]).astype(int), q_seg.confusion.matrix)
        np.testing.assert_array_equal(array(traces["Rest"]["z"]).astype(int), q_rest.confusion.matrix)
        table = next(d.value for d in at.dataframe if "Rest" in d.value.columns)
        for label, key in (("Accuracy", "accuracy"), ("Recall", "recall"), ("ROC AUC", "roc_auc")):
            assert table["Segment: Large tumours"][label] == pytest.approx(q_seg.metrics[key], rel=1e-12)
            assert table["Rest"][label] == pytest.approx(q_rest.metrics[key], rel=1e-12)


def test_quality_tiny_segment_says_so_and_none_leaves_the_page(cancer):
    model, X, _, _ = cancer
    at = _open("views/quality.py", CANCER, _tiny(X, "mean radius"))
    assert "The segment has 5 rows" in _infos(at)
    assert not _titled(at, "Confusion matrix, segment") and _titled(at, "Confusion matrix at threshold")
    plain = _open("views/quality.py", CANCER, None)
    assert [f["layout"]["title"]["text"] for f in figures(plain)] == [
        f["layout"]["title"]["text"] for f in figures(at)]
    assert not any("Rest" in d.value.columns for d in plain.dataframe)


# ------------------------------------------------------------------------ PDP
def test_pdp_segment_curve_against_the_rest(diabetes):
    model, X, _, _ = diabetes
    at = _open("views/pdp.py", DIABETES, HEAVY)
    at.selectbox(key="pdp_f1").set_value("age").run()
    assert not at.exception, at.exception
    mask = HEAVY.mask(model, X)
    whole = partial_dependence(model, X, ["age"], grid_resolution=40, percentiles=(0.05, 0.95), kind="both")
    (fig,) = _titled(at, "Partial dependence on age: segment against the rest")
    traces = _by_name(fig)
    assert list(traces) == ["Segment: Heavier", "Rest"]
    for name, rows in (("Segment: Heavier", mask), ("Rest", ~mask)):
        want = partial_dependence(model, X[rows], ["age"], custom_values={"age": whole.grid[0]},
                                  categorical_features=[], kind="average")
        np.testing.assert_allclose(array(traces[name]["x"]).astype(float), whole.grid[0], **TOL)
        np.testing.assert_allclose(array(traces[name]["y"]).astype(float), want.average, **TOL)
    assert traces["Segment: Heavier"]["line"]["color"] != traces["Rest"]["line"]["color"]
    at.selectbox(key="pdp_f2").set_value("bmi").run()  # 2-D: the segment view is 1-D, and says so
    assert not at.exception, at.exception
    assert "one feature" in _infos(at) and not _titled(at, "Partial dependence on age: segment")


def test_pdp_tiny_segment_and_no_segment(diabetes):
    model, X, _, _ = diabetes
    at = _open("views/pdp.py", DIABETES, _tiny(X, "bmi"))
    assert "The segment has 5 rows" in _infos(at)
    assert not [f for f in figures(at) if "segment" in f["layout"]["title"]["text"]]
    plain = _open("views/pdp.py", DIABETES, None)
    assert not plain.info
    assert [f["layout"]["title"]["text"] for f in figures(plain)] == [
        f["layout"]["title"]["text"] for f in figures(at)]


# ----------------------------------------------------------------------- SHAP
def _shap_global(demo: str, segment, n_rows: int = 200):
    at = _open("views/shap.py", demo, segment)
    at.number_input(key="shap_n").set_value(n_rows).run()
    at.toggle(key="shap_global").set_value(True).run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("demo, segment", [(DIABETES, HEAVY), (CANCER, LARGE)])
def test_shap_mean_abs_of_the_split_sample(demo, segment, diabetes, cancer):
    model, X, _, card = diabetes if demo == DIABETES else cancer
    at = _shap_global(demo, segment)
    # the page's sample of 200 rows, explained again here, split by the segment's rows
    positions = _nested_rows(len(X), 200)
    mask = segment.mask(model, X)
    inside = mask[positions]
    (fig,) = _titled(at, "Mean |SHAP value|: segment")
    counts = f"segment ({inside.sum():,} rows) against the rest ({(~inside).sum():,} rows)"
    assert counts in fig["layout"]["title"]["text"]
    bg_rows = X.iloc[:card["n_train"]]  # the page's background: 100 seeded training rows
    bg = bg_rows.iloc[np.sort(np.random.default_rng(0).choice(len(bg_rows), 100, replace=False))]
    res = explain(model, X.iloc[positions], background=bg)
    vals = res.values if res.values.ndim == 2 else res.values[:, :, 1]  # the binary model's positive class
    traces = _by_name(fig)
    for name, keep in ((f"Segment: {segment.name}", inside), ("Rest", ~inside)):
        got = dict(zip(array(traces[name]["y"]), array(traces[name]["x"]).astype(float)))
        want = dict(zip(res.feature_names, np.abs(vals[keep]).mean(axis=0)))
        assert set(got) <= set(want) and len(got) == min(20, len(want))
        for f, v in got.items():
            assert v == pytest.approx(want[f], rel=1e-8, abs=1e-12)
    caption = " ".join(c.value for c in at.caption)
    assert f"{inside.sum():,} are in the segment" in caption and f"{(~inside).sum():,} in the rest" in caption


def test_shap_tiny_segment_and_no_segment(diabetes):
    model, X, _, _ = diabetes
    at = _shap_global(DIABETES, _tiny(X, "bmi"))
    assert "The segment has 5 rows" in _infos(at)
    assert not _titled(at, "Mean |SHAP value|: segment")
    plain = _shap_global(DIABETES, None)
    assert [f["layout"]["title"]["text"] for f in figures(plain)] == [
        f["layout"]["title"]["text"] for f in figures(at)]


# ----------------------------------------------------------------- Importance
def test_importance_segment_against_rest(diabetes):
    model, X, y, card = diabetes
    at = _open("views/importance.py", DIABETES, HEAVY)
    mask = HEAVY.mask(model, X)
    n = card["n_train"]
    held = np.arange(n, len(X))
    perm = _titled(at, "Holdout permutation (R²): segment against the rest")
    assert len(perm) == 1, [f["layout"]["title"]["text"] for f in figures(at)]
    traces = _by_name(perm[0])
    for name, rows in (("Segment: Heavier", held[mask[held]]), ("Rest", held[~mask[held]])):
        want = permutation_importance(model, X.iloc[rows], y.iloc[rows], n_repeats=5, random_state=0)
        got = dict(zip(array(traces[name]["y"]), array(traces[name]["x"]).astype(float)))
        assert set(got) == set(want.feature_names)
        for f, v in zip(want.feature_names, want.importances):
            assert got[f] == pytest.approx(v, rel=1e-9, abs=1e-12)
    from explainers.shap import EXPLAINERS

    if "tree" in EXPLAINERS:  # mean |SHAP| joins where SHAP is fast
        (fig,) = _titled(at, "Mean |SHAP|: segment against the rest")
        assert set(_by_name(fig)) == {"Segment: Heavier", "Rest"}


def test_importance_too_few_rows(diabetes):
    model, X, _, card = diabetes
    at = _open("views/importance.py", DIABETES, _tiny(X, "bmi"))
    assert "The segment has 5 rows" in _infos(at)
    assert not [f for f in figures(at) if "segment against" in f["layout"]["title"]["text"]]
    # enough rows in all, too few held out: permutation says so, mean |SHAP| still compares
    n = card["n_train"]
    lo = float(np.sort(X["bmi"].to_numpy()[n:])[-8])  # 7 held-out rows at or above it
    few = Segment("Few held out", [Range("bmi", lo=lo)])
    assert few.mask(None, X).sum() >= 20
    at = _open("views/importance.py", DIABETES, few)
    captions = " ".join(c.value for c in at.caption)
    assert "held-out row" in captions and "not shown" in captions
    assert not _titled(at, "Holdout permutation (R²): segment")
    plain = _open("views/importance.py", DIABETES, None)
    assert not [f for f in figures(plain) if "segment against" in f["layout"]["title"]["text"]]
