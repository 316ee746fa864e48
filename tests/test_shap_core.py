"""SHAP explainers on the seed's worked example, missing masks and ShapResult."""
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression

from explainers.errors import ExplainerError
from explainers.shap import ExactShap, KernelShap, LinearShap, ShapResult, explain

EXPLAINERS = [LinearShap, ExactShap, KernelShap]


@pytest.fixture(scope="module")
def seed_example():
    """The worked example of the seed (002, Linear SHAP section)."""
    x1 = np.array([3, 7, 3, 3, 6, 2, 9])
    x2 = np.array([1, 9, -5, 7, 10, -2, 5])
    y = 4 * x1 + 2 * x2 + 1
    X = np.column_stack([x1, x2])
    model = LinearRegression().fit(X, y)
    np.random.seed(10)
    background = X[np.random.choice(7, 5), :]
    return model, background


@pytest.fixture(scope="module")
def reg4():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(60, 4)), columns=["a", "b", "c", "d"])
    y = X.a * 2 - X.b + X.c * X.d
    from sklearn.ensemble import GradientBoostingRegressor

    model = GradientBoostingRegressor(n_estimators=15, max_depth=2, random_state=0).fit(X, y)
    return model, X.iloc[:12], X.iloc[40:52]


# ------------------------------------------------------------- seed example
@pytest.mark.parametrize("cls", EXPLAINERS)
def test_seed_example_no_missing(seed_example, cls):
    model, bg = seed_example
    res = cls(model, bg).explain(np.array([[2, 1]]))
    np.testing.assert_allclose(res.base_values, [31.8], atol=1e-10)
    np.testing.assert_allclose(res.values, [[-12.0, -8.8]], atol=1e-10)
    np.testing.assert_allclose(res.predictions, [11.0], atol=1e-10)
    res.check_additivity(atol=1e-10)
    assert res.method == cls.method


@pytest.mark.parametrize("cls", EXPLAINERS)
@pytest.mark.parametrize("how", ["nan", "names", "mask", "rowmask"])
def test_seed_example_x1_missing(seed_example, cls, how):
    model, bg = seed_example
    x = np.array([[2.0, 1.0]])
    missing = None
    if how == "nan":
        x = np.array([[np.nan, 1.0]])
    elif how == "names":
        missing = ["x0"]
    elif how == "mask":
        missing = np.array([True, False])
    else:
        missing = np.array([[True, False]])
    res = cls(model, bg).explain(x, missing)
    assert res.values[0, 0] == 0.0  # exactly, not approximately
    np.testing.assert_allclose(res.values, [[0.0, -8.8]], atol=1e-10)
    np.testing.assert_allclose(res.predictions, [23.0], atol=1e-10)
    np.testing.assert_allclose(res.base_values + res.values.sum(1), res.predictions, atol=1e-12)
    np.testing.assert_array_equal(res.missing, [[True, False]])


@pytest.mark.parametrize("cls", EXPLAINERS)
def test_all_missing_gives_zeros_and_base(seed_example, cls):
    model, bg = seed_example
    res = cls(model, bg).explain(np.array([[2, 1], [3, 3]]), np.array([True, True]))
    assert np.all(res.values == 0.0)
    np.testing.assert_allclose(res.predictions, res.base_values, atol=1e-12)
    np.testing.assert_allclose(res.base_values, 31.8, atol=1e-10)


def test_explain_auto_on_seed_is_linear(seed_example):
    model, bg = seed_example
    res = explain(model, np.array([[2, 1]]), background=bg)
    assert res.method == "linear" and "linear" in res.params["reason"]
    np.testing.assert_allclose(res.values, [[-12.0, -8.8]], atol=1e-10)


# ------------------------------------------------------------- masks
@pytest.mark.parametrize("cls", [ExactShap, KernelShap])
def test_mixed_masks_match_per_row_runs(reg4, cls):
    """Rows with different patterns in one call equal each row run alone."""
    model, bg, X = reg4
    rng = np.random.default_rng(0)
    mask = rng.random((6, 4)) < 0.35
    explainer = cls(model, bg)
    res = explainer.explain(X.iloc[:6], mask)
    for i in range(6):
        one = explainer.explain(X.iloc[[i]], mask[[i]])
        np.testing.assert_allclose(res.values[i], one.values[0], atol=1e-12)
        np.testing.assert_allclose(res.predictions[i], one.predictions[0], atol=1e-12)
    assert np.all(res.values[mask] == 0.0)
    res.check_additivity(atol=1e-9)


@pytest.mark.parametrize("cls", EXPLAINERS)
def test_prediction_is_predict_masked(reg4, cls):
    model, bg, X = reg4
    if cls is LinearShap:
        model = LinearRegression().fit(bg, bg.a - 2 * bg.c)
    mask = np.zeros((5, 4), dtype=bool)
    mask[1, 2] = mask[3, [0, 3]] = True
    res = cls(model, bg).explain(X.iloc[:5], mask)
    from explainers import ModelAdapter

    expected = ModelAdapter(model).predict_masked(X.iloc[:5], mask, bg)
    np.testing.assert_allclose(res.predictions, expected, rtol=1e-12, atol=1e-12)


def test_nan_not_missing_when_disabled(reg4):
    """nan_is_missing=False (and "auto", for a model that takes NaN) passes NaN to the model."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    _, bg, X = reg4
    model = HistGradientBoostingRegressor(max_iter=10).fit(bg, bg.a)
    Xn = X.iloc[:2].copy()
    Xn.iloc[0, 0] = np.nan
    res = ExactShap(model, bg).explain(Xn, nan_is_missing=False)
    assert not res.missing.any()
    np.testing.assert_allclose(res.predictions, model.predict(Xn), atol=1e-12)
    # the default ("auto"): HistGradientBoosting takes NaN, so the cell stays a value it receives
    res_a = ExactShap(model, bg).explain(Xn)
    assert not res_a.missing.any() and res_a.params["nan_is_missing"] is False
    np.testing.assert_allclose(res_a.values, res.values, atol=1e-12)
    res_m = ExactShap(model, bg).explain(Xn, nan_is_missing=True)
    assert res_m.missing[0, 0] and res_m.values[0, 0] == 0.0


def test_progress_and_chunking_do_not_change_values(reg4):
    model, bg, X = reg4
    calls = []
    small = ExactShap(model, bg, batch_rows=16 * len(bg)).explain(X, progress=lambda d, t: calls.append((d, t)))
    big = ExactShap(model, bg).explain(X)
    np.testing.assert_allclose(small.values, big.values, atol=1e-12)
    assert len(calls) == len(X) and calls[-1] == (len(X), len(X))
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    k1 = KernelShap(model, bg, n_samples=6, batch_rows=7 * len(bg)).explain(X)
    k2 = KernelShap(model, bg, n_samples=6).explain(X)
    np.testing.assert_allclose(k1.values, k2.values, atol=1e-12)


def test_default_background_is_a_seeded_sample(reg4):
    model, _, X = reg4
    res = ExactShap(model).explain(X)
    assert res.params["background"] == "sample of X" and res.params["n_background"] == len(X)
    again = ExactShap(model).explain(X)
    np.testing.assert_array_equal(res.values, again.values)


def test_large_background_warns(reg4):
    model, _, X = reg4
    big = pd.concat([X] * 30, ignore_index=True)
    with pytest.warns(UserWarning, match="background of 360 rows"):
        KernelShap(model, big, n_samples=4).explain(X.iloc[:1])


# ------------------------------------------------------------- result
@pytest.fixture(scope="module")
def multi_result():
    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.normal(size=(40, 3)), columns=["u", "v", "w"])
    y = np.digitize(X.u + X.v, [-0.5, 0.5])
    model = LogisticRegression().fit(X, y)
    Xe = X.iloc[:4].copy()
    Xe.iloc[1, 2] = np.nan
    return ExactShap(model, X.iloc[20:30]).explain(Xe)


def test_result_shapes_multiclass(multi_result):
    res = multi_result
    assert res.values.shape == (4, 3, 3)
    assert res.base_values.shape == res.predictions.shape == (4, 3)
    assert res.output == "proba" and res.output_names == ["0", "1", "2"]
    assert res.n_outputs == 3 and len(res) == 4
    np.testing.assert_allclose(res.predictions.sum(axis=1), 1.0, atol=1e-12)
    # attributions of all class probabilities add up to zero per feature
    np.testing.assert_allclose(res.values.sum(axis=2), 0.0, atol=1e-12)
    res.check_additivity(atol=1e-12)


def test_result_select_mean_abs_and_frame(multi_result):
    res = multi_result
    one = res.select(2)
    np.testing.assert_array_equal(one.values, res.values[:, :, 2])
    np.testing.assert_array_equal(one.mean_abs(), np.abs(res.values[:, :, 2]).mean(0))
    assert res.mean_abs().shape == (3, 3)
    frame = res.to_frame()
    assert len(frame) == 4 * 3 * 3
    sub = frame[(frame.row == 1) & (frame.output == "1")]
    np.testing.assert_array_equal(sub.shap_value, res.values[1, :, 1])
    assert sub.missing.tolist() == [False, False, True]
    text = res.to_csv()
    assert text.splitlines()[0] == "row,output,feature,feature_value,shap_value,missing,base_value,prediction"


def test_result_pickles(multi_result):
    back = pickle.loads(pickle.dumps(multi_result))
    assert isinstance(back, ShapResult)
    np.testing.assert_array_equal(back.values, multi_result.values)
    pd.testing.assert_frame_equal(back.data, multi_result.data)
    assert back.params == multi_result.params


def test_check_additivity_reports_numbers(multi_result):
    from dataclasses import replace

    broken = replace(multi_result, predictions=multi_result.predictions + np.array([0, 0, 0.5]))
    with pytest.raises(ExplainerError, match=r"Additivity fails for 4 of 12 outputs: in row 0, output '2'.*\(error 0\.5"):
        broken.check_additivity()


def test_class_index_gives_2d(reg4):
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(30, 3)), columns=list("abc"))
    model = LogisticRegression().fit(X, X.a > 0)
    res = KernelShap(model, X.iloc[:8], class_index=1).explain(X.iloc[8:11])
    full = KernelShap(model, X.iloc[:8]).explain(X.iloc[8:11])
    assert res.values.shape == (3, 3) and res.output_names == ["True"]
    np.testing.assert_allclose(res.values, full.values[:, :, 1], atol=1e-12)
    lo = KernelShap(model, X.iloc[:8], output="log_odds").explain(X.iloc[8:11])
    assert lo.output == "log_odds" and lo.values.shape == (3, 3, 2)
    np.testing.assert_allclose(lo.values[:, :, 0], -lo.values[:, :, 1], atol=1e-9)


def test_categorical_pipeline_exact_equals_kernel():
    """String columns go through the per-column path and keep their values."""
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from explainers import ModelAdapter

    rng = np.random.default_rng(6)
    X = pd.DataFrame(
        {"num": rng.normal(size=50), "colour": rng.choice(["red", "green", "blue"], 50), "z": rng.normal(size=50)}
    )
    y = X.num * 2 + X.colour.map({"red": 1.0, "green": -1.0, "blue": 0.0}) * X.z
    pipe = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["colour"]), remainder="passthrough"),
        GradientBoostingRegressorSmall(),
    ).fit(X, y)
    mask = np.zeros((4, 3), dtype=bool)
    mask[2, 1] = True
    exact = ExactShap(pipe, X.iloc[:10]).explain(X.iloc[20:24], mask)
    kern = KernelShap(pipe, X.iloc[:10], n_samples=6).explain(X.iloc[20:24], mask)
    np.testing.assert_allclose(kern.values, exact.values, atol=1e-10)
    expected = ModelAdapter(pipe).predict_masked(X.iloc[20:24], mask, X.iloc[:10])
    np.testing.assert_allclose(exact.predictions, expected, atol=1e-12)
    assert exact.values[2, 1] == 0.0 and exact.data.colour.tolist() == X.colour.iloc[20:24].tolist()


def GradientBoostingRegressorSmall():
    from sklearn.ensemble import GradientBoostingRegressor

    return GradientBoostingRegressor(n_estimators=10, max_depth=2, random_state=0)
