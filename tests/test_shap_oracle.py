"""Elementwise agreement with the shap package (same background), and Kernel vs Exact."""
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from explainers.shap import ExactShap, KernelShap, LinearShap

import shap  # noqa: E402  (test-only oracle, in requirements-dev.txt)
pytestmark = pytest.mark.filterwarnings("ignore:X does not have valid feature names")

P = 4


def _data(seed, n=70):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, P)) * [1, 2, 0.5, 1] + [0, 1, -1, 3], columns=list("abcd"))
    score = X.a - 0.5 * X.b + X.c * X.d
    return X, score


@pytest.fixture(scope="module")
def models():
    X, score = _data(11)
    cls3 = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))
    out = {
        "regressor": GradientBoostingRegressor(n_estimators=12, max_depth=3, random_state=0).fit(X, score),
        "binary": GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0).fit(X, score > 0),
        "multiclass": GradientBoostingClassifier(n_estimators=8, max_depth=2, random_state=0).fit(X, cls3),
    }
    return out, X.iloc[:15], X.iloc[50:56]


def _f(model):
    return model.predict if not hasattr(model, "predict_proba") else model.predict_proba


# ------------------------------------------------------------------ linear
@pytest.fixture(scope="module")
def linear_models():
    X, score = _data(12)
    cls3 = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))
    return {
        "regressor": LinearRegression().fit(X, score),
        "binary": LogisticRegression().fit(X, score > 0),
        "multiclass": LogisticRegression(max_iter=500).fit(X, cls3),
    }, X.iloc[:20], X.iloc[40:47]


@pytest.mark.parametrize("kind", ["regressor", "binary", "multiclass"])
def test_linear_matches_shap_linear_explainer(linear_models, kind):
    models, bg, X = linear_models
    model = models[kind]
    ours = LinearShap(model, bg).explain(X)
    ref = shap.LinearExplainer(model, bg.to_numpy())
    ref_values = np.asarray(ref.shap_values(X.to_numpy()))
    np.testing.assert_allclose(ours.values, ref_values, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.base_values, np.broadcast_to(ref.expected_value, ours.base_values.shape), rtol=1e-10)
    assert ours.output == {"regressor": "raw", "binary": "log_odds", "multiclass": "margin"}[kind]
    ours.check_additivity(atol=1e-9)
    if kind == "binary":
        np.testing.assert_allclose(ours.predictions, model.decision_function(X), rtol=1e-12)


def test_linear_pipeline_folds_the_scaler(linear_models):
    """Pipeline(StandardScaler, LogisticRegression): phi on raw features equals
    shap's on the scaled features (the scaler is affine per feature)."""
    _, bg, X = linear_models
    Xall, score = _data(12)
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(Xall, score > 0.3)
    ours = LinearShap(pipe, bg).explain(X)
    scaler, lr = pipe[0], pipe[-1]
    ref = shap.LinearExplainer(lr, scaler.transform(bg))
    np.testing.assert_allclose(ours.values, ref.shap_values(scaler.transform(X)), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.base_values, ref.expected_value, rtol=1e-10)
    np.testing.assert_allclose(ours.predictions, pipe.decision_function(X), rtol=1e-12)


# ------------------------------------------------------------------ exact
@pytest.mark.parametrize("kind", ["regressor", "binary", "multiclass"])
def test_exact_matches_shap_exact_explainer(models, kind):
    fitted, bg, X = models
    model = fitted[kind]
    ours = ExactShap(model, bg).explain(X)
    masker = shap.maskers.Independent(bg.to_numpy(), max_samples=len(bg))
    ref = shap.ExactExplainer(_f(model), masker)(X.to_numpy())
    np.testing.assert_allclose(ours.values, ref.values, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.base_values, ref.base_values, rtol=1e-12, atol=1e-12)
    ours.check_additivity(atol=1e-10)


# ------------------------------------------------------------------ kernel
@pytest.mark.parametrize("kind", ["regressor", "binary", "multiclass"])
def test_kernel_matches_shap_kernel_explainer(models, kind):
    """All 2**4 - 2 coalitions fit: both enumerate them and agree elementwise."""
    fitted, bg, X = models
    model = fitted[kind]
    ours = KernelShap(model, bg, n_samples=2**P).explain(X)
    assert ours.params["enumerated"]
    ref = shap.KernelExplainer(_f(model), bg.to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref_values = np.asarray(ref.shap_values(X.to_numpy(), nsamples=2**P, l1_reg=False, silent=True))
    np.testing.assert_allclose(ours.values, ref_values, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ours.base_values, np.broadcast_to(ref.expected_value, ours.base_values.shape), rtol=1e-12)


@pytest.mark.parametrize("kind", ["regressor", "multiclass"])
def test_kernel_full_enumeration_equals_exact(models, kind):
    fitted, bg, X = models
    model = fitted[kind]
    mask = np.zeros((len(X), P), dtype=bool)
    mask[1, 0] = mask[2, [1, 3]] = True
    exact = ExactShap(model, bg).explain(X, mask)
    kern = KernelShap(model, bg, n_samples=2**P - 2).explain(X, mask)
    np.testing.assert_allclose(kern.values, exact.values, atol=1e-8)
    np.testing.assert_allclose(kern.predictions, exact.predictions, atol=1e-12)


@pytest.fixture(scope="module")
def eight_features():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(120, 8))
    y = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + X[:, 3] ** 2 - X[:, 4] + 0.5 * X[:, 5] * X[:, 6]
    model = GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0).fit(X, y)
    return model, X[:10], X[100:106]


def test_sampled_kernel_error_falls_with_n_samples(eight_features):
    model, bg, X = eight_features
    exact = ExactShap(model, bg).explain(X)

    def err(n, seed):
        res = KernelShap(model, bg, n_samples=n, random_state=seed).explain(X)
        assert not res.params["enumerated"]
        res.check_additivity(atol=1e-9)  # sampled, yet exactly additive
        return np.sqrt(np.mean((res.values - exact.values) ** 2))

    errs = [np.mean([err(n, s) for s in range(3)]) for n in (20, 60, 200)]
    assert errs[0] > errs[1] > errs[2] > 0
    # deterministic with random_state
    a = KernelShap(model, bg, n_samples=40, random_state=7).explain(X)
    b = KernelShap(model, bg, n_samples=40, random_state=7).explain(X)
    np.testing.assert_array_equal(a.values, b.values)


def test_sampled_kernel_no_worse_than_shap(eight_features):
    """Paired, stratified draws: mean error at most shap's at the same budget."""
    model, bg, X = eight_features
    exact = ExactShap(model, bg).explain(X).values
    ours = KernelShap(model, bg, n_samples=60, random_state=0).explain(X).values
    errs = []
    for seed in range(3):
        np.random.seed(seed)
        ref = shap.KernelExplainer(model.predict, bg)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            errs.append(np.abs(ref.shap_values(X, nsamples=60, l1_reg=False, silent=True) - exact).mean())
    assert np.abs(ours - exact).mean() <= np.mean(errs)


def test_linear_multiclass_class_index(linear_models):
    models, bg, X = linear_models
    model = models["multiclass"]
    full = LinearShap(model, bg).explain(X)
    one = LinearShap(model, bg, class_index=2).explain(X)
    assert one.values.shape == (len(X), P) and one.output_names == ["2"]
    np.testing.assert_allclose(one.values, full.values[:, :, 2], rtol=1e-12)
    np.testing.assert_allclose(one.predictions, model.decision_function(X)[:, 2], rtol=1e-12)


def test_linear_binary_class_index(linear_models):
    models, bg, X = linear_models
    model = models["binary"]
    pos = LinearShap(model, bg).explain(X)
    neg = LinearShap(model, bg, class_index=0).explain(X)
    assert pos.output_names == ["True"] and neg.output_names == ["False"]
    np.testing.assert_allclose(neg.values, -pos.values, rtol=1e-12)
    np.testing.assert_allclose(neg.predictions, -model.decision_function(X), rtol=1e-12)
    neg.check_additivity(atol=1e-10)
    from explainers.shap import explain

    res = explain(model, X, background=bg, class_index=1)
    assert res.method == "linear"
    np.testing.assert_allclose(res.values, pos.values, rtol=1e-12)
