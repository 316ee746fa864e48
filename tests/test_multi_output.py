"""Regressors of several targets, explained one output at a time or all at once (issue #23):
LinearShap, ExactShap, KernelShap, partial dependence and permutation importance take
the output position (``class_index``) the dashboard's Output picker gives, for linear
models, neighbours and MultiOutputRegressor alike; every number against its definition
or scikit-learn."""
import numpy as np
import pandas as pd
import pytest
from sklearn.inspection import partial_dependence as sk_pd
from sklearn.inspection import permutation_importance as sk_permutation
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.metrics import mean_absolute_error, r2_score
from sklearn.multioutput import MultiOutputRegressor
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from explainers import ModelAdapter
from explainers.errors import InvalidParameterError
from explainers.importance import permutation_importance
from explainers.pdp import partial_dependence
from explainers.shap import ExactShap, KernelShap, LinearShap, explain


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(70, 3)), columns=["a", "b", "c"])
    Y = np.column_stack([X.a + 2 * X.b, X.c - 3 * X.a + X.b * X.c]) + rng.normal(scale=0.1, size=(70, 2))
    return X, Y


def _models(X, Y):
    return {"linear": LinearRegression().fit(X, Y),
            "scaled ridge": make_pipeline(StandardScaler(), Ridge(alpha=0.5)).fit(X, Y),
            "neighbours": KNeighborsRegressor(5).fit(X, Y),
            "multi-output": MultiOutputRegressor(Ridge()).fit(X, Y)}


def test_linear_shap_of_several_targets_is_each_targets_closed_form(data):
    X, Y = data
    for name in ("linear", "scaled ridge"):
        model = _models(X, Y)[name]
        res = LinearShap(model, X).explain(X.iloc[:5])
        assert res.values.shape == (5, 3, 2) and res.output == "raw"
        pred = model.predict(X.iloc[:5])
        np.testing.assert_allclose(res.base_values + res.values.sum(axis=1), pred, rtol=1e-12, atol=1e-12)
        coef = model.coef_ if name == "linear" else model[-1].coef_ / model[0].scale_
        for k in range(2):  # phi_jk = coef_kj (x_j - mean_j), the definition for a linear model
            expected = (X.iloc[:5].to_numpy() - X.to_numpy().mean(0)) * coef[k]
            np.testing.assert_allclose(res.values[:, :, k], expected, rtol=1e-10, atol=1e-12)
            one = LinearShap(model, X, class_index=k).explain(X.iloc[:5])
            np.testing.assert_array_equal(one.values, res.values[:, :, k])
        assert explain(model, X.iloc[:2], background=X).method == "linear"


def test_exact_and_kernel_shap_pick_one_output(data):
    X, Y = data
    for name, model in _models(X, Y).items():
        full = ExactShap(model, X.iloc[:25]).explain(X.iloc[:4])
        assert full.values.shape == (4, 3, 2), name
        np.testing.assert_allclose(full.base_values + full.values.sum(axis=1), model.predict(X.iloc[:4]),
                                   rtol=1e-10, atol=1e-10)
        for k in range(2):
            one = ExactShap(model, X.iloc[:25], class_index=k).explain(X.iloc[:4])
            np.testing.assert_allclose(one.values, full.values[:, :, k], rtol=1e-12, atol=1e-12)
            kern = KernelShap(model, X.iloc[:25], class_index=k).explain(X.iloc[:4])
            # three features: the kernel regression enumerates every coalition, so it is exact
            np.testing.assert_allclose(kern.values, one.values, rtol=1e-8, atol=1e-8)


def test_partial_dependence_of_one_output_equals_scikit_learn(data):
    X, Y = data
    for name, model in _models(X, Y).items():
        ours = partial_dependence(model, X, ["b"], grid_resolution=7, kind="average", method="brute")
        theirs = sk_pd(model, X, ["b"], custom_values={"b": ours.grid[0]}, kind="average", method="brute")
        np.testing.assert_allclose(np.asarray(ours.average), np.asarray(theirs["average"]).T, rtol=1e-10,
                                   atol=1e-12, err_msg=name)
        one = partial_dependence(model, X, ["b"], grid_resolution=7, kind="average", method="brute",
                                 class_index=1)
        np.testing.assert_allclose(np.asarray(one.average), np.asarray(theirs["average"])[1], rtol=1e-10,
                                   atol=1e-12, err_msg=name)


def test_permutation_importance_of_several_targets_equals_scikit_learn(data):
    X, Y = data
    for name, model in _models(X, Y).items():
        ours = permutation_importance(model, X, Y, n_repeats=3, random_state=1)
        theirs = sk_permutation(model, X, Y, n_repeats=3, random_state=1)
        np.testing.assert_allclose(ours.raw, theirs.importances, rtol=1e-12, atol=1e-12, err_msg=name)
        for k in range(2):
            def r2_of(est, Xs, y, k=k):
                return r2_score(y, est.predict(Xs)[:, k])

            def mae_of(est, Xs, y, k=k):
                return -mean_absolute_error(y, est.predict(Xs)[:, k])

            ref = sk_permutation(model, X, Y[:, k], n_repeats=3, random_state=1, scoring=r2_of)
            one = permutation_importance(model, X, Y[:, k], n_repeats=3, random_state=1, class_index=k)
            np.testing.assert_allclose(one.raw, ref.importances, rtol=1e-12, atol=1e-12, err_msg=name)
            assert one.label == f"Holdout permutation (R², output {k})" and f"R² of output {k} drops" in one.description
            ref = sk_permutation(model, X, Y[:, k], n_repeats=3, random_state=1, scoring=mae_of)
            one = permutation_importance(model, X, Y, n_repeats=3, random_state=1, class_index=k,
                                         scoring="neg_mean_absolute_error")
            np.testing.assert_allclose(one.raw, ref.importances, rtol=1e-12, atol=1e-12, err_msg=name)


def test_permutation_importance_of_several_targets_refuses_what_it_cannot_score(data):
    X, Y = data
    model = _models(X, Y)["linear"]
    with pytest.raises(InvalidParameterError, match="class_index"):
        permutation_importance(model, X, Y, class_index=2)
    with pytest.raises(InvalidParameterError, match="scoring"):
        permutation_importance(model, X, Y, class_index=0, scoring="max_error")
    single = LinearRegression().fit(X, Y[:, 0])
    with pytest.raises(InvalidParameterError, match="one output"):
        permutation_importance(single, X, Y[:, 0], class_index=0)
    Y_gap = Y.copy()
    Y_gap[3, 1] = np.nan  # a row with one empty target is left out, and said so
    res = permutation_importance(model, X, Y_gap, n_repeats=2)
    assert res.params["n_rows_left_out"] == 1
    ref = sk_permutation(model, X.drop(index=3), np.delete(Y, 3, axis=0), n_repeats=2, random_state=0)
    np.testing.assert_allclose(res.raw, ref.importances, rtol=1e-12, atol=1e-12)
    assert ModelAdapter(model).all_output_names == ["output 0", "output 1"]
