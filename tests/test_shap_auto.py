"""explain(): method choice, recorded reason, tree dispatch and fallback."""
import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import explainers.shap as shap_pkg
from explainers.errors import ExplainerError, InvalidModelError
from explainers.shap import EXPLAINERS, ExactShap, KernelShap, explain


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.normal(size=(50, 5)), columns=list("abcde"))
    y = X.a - X.b * X.c + X.e
    return X, y


@pytest.fixture(scope="module")
def forest(data):
    X, y = data
    return RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)


def test_auto_linear_for_scaled_logistic_pipeline(data):
    X, y = data
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y > 0)
    res = explain(pipe, X.iloc[:4], background=X.iloc[10:30])
    assert res.method == "linear" and res.output == "log_odds"
    assert "closed form" in res.params["reason"] and res.params["method_requested"] == "auto"
    np.testing.assert_allclose(res.predictions, pipe.decision_function(X.iloc[:4]), rtol=1e-12)
    proba = explain(pipe, X.iloc[:4], background=X.iloc[10:30], output="proba")
    assert proba.method == "exact" and proba.values.shape == (4, 5, 2)
    assert "not linear in the features" in proba.params["reason"]


def test_auto_exact_when_small_else_kernel(data, forest, monkeypatch):
    X, _ = data
    monkeypatch.delitem(EXPLAINERS, "tree", raising=False)  # the model-agnostic choice
    res = explain(forest, X.iloc[:3], background=X.iloc[10:20])
    assert res.method == "exact" and "all 32 coalitions fit in n_samples=2048" in res.params["reason"]
    res = explain(forest, X.iloc[:3], background=X.iloc[10:20], n_samples=20)
    assert res.method == "kernel" and "2**5 = 32 coalitions is more than n_samples=20" in res.params["reason"]
    assert res.params["n_samples"] == 20
    exact = ExactShap(forest, X.iloc[10:20]).explain(X.iloc[:3])
    np.testing.assert_allclose(res.values, exact.values, atol=0.2)


def test_explicit_method_and_options_pass_through(data, forest):
    X, _ = data
    seen = []
    res = explain(
        forest, X.iloc[:4], background=X.iloc[10:20], method="kernel", n_samples=12,
        random_state=3, missing=["b"], progress=lambda d, t: seen.append((d, t)),
    )
    assert res.method == "kernel" and res.params["reason"] == "method='kernel' was requested"
    direct = KernelShap(forest, X.iloc[10:20], n_samples=12, random_state=3).explain(X.iloc[:4], ["b"])
    np.testing.assert_array_equal(res.values, direct.values)
    assert np.all(res.values[:, 1] == 0.0) and seen[-1] == (4, 4)


def test_default_background_in_explain(data):
    X, y = data
    model = Ridge().fit(X, y)
    res = explain(model, X)
    assert res.params["background"] == "sample of X" and res.params["n_background"] == 50


class FakeTreeShap:
    """Stands in for explainers/shap/tree.py: declines models marked ``decline_me``."""

    method = "tree"

    @staticmethod
    def supports(model):
        return type(model).__name__.startswith("RandomForest")

    def __init__(self, model, background=None, mode="path_dependent"):
        if getattr(model, "decline_me", False):
            raise InvalidModelError("FakeTreeShap cannot read this model")
        self.inner = ExactShap(model, background)

    def explain(self, X, missing=None, nan_is_missing=True):
        res = self.inner.explain(X, missing, nan_is_missing=nan_is_missing)
        object.__setattr__(res, "method", "tree")
        return res


def test_tree_dispatch_and_fallback(data, forest, monkeypatch):
    X, _ = data
    monkeypatch.setitem(EXPLAINERS, "tree", FakeTreeShap)
    res = explain(forest, X.iloc[:2], background=X.iloc[10:20])
    assert res.method == "tree" and "tree model" in res.params["reason"]

    opaque = RandomForestRegressor(n_estimators=3, random_state=0).fit(X, X.a)
    opaque.decline_me = True
    res = explain(opaque, X.iloc[:2], background=X.iloc[10:20])
    assert res.method == "exact"
    assert res.params["reason"].startswith("TreeShap declined (FakeTreeShap cannot read this model)")


def test_package_imports_without_tree_module():
    assert {"linear", "exact", "kernel"} <= set(EXPLAINERS)
    assert {"LinearShap", "ExactShap", "KernelShap", "explain", "ShapResult"} <= set(shap_pkg.__all__)
    assert ("TreeShap" in shap_pkg.__all__) == hasattr(shap_pkg, "TreeShap")


def test_auto_tree_mode_follows_the_background(data, forest):
    X, _ = data
    bg = X.iloc[10:30]
    inter = explain(forest, X.iloc[:4], background=bg)
    assert inter.method == "tree" and "interventional" in inter.params["reason"]
    exact = ExactShap(forest, bg).explain(X.iloc[:4])
    np.testing.assert_allclose(inter.values, exact.values, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(inter.base_values, exact.base_values, rtol=1e-12)
    path = explain(forest, X.iloc[:4])
    assert path.method == "tree" and "path-dependent" in path.params["reason"]
    forced = explain(forest, X.iloc[:4], background=bg, tree_mode="path_dependent")
    np.testing.assert_allclose(forced.values, path.values, rtol=1e-12, atol=1e-12)
    with pytest.raises(ExplainerError, match="'tree_mode' parameter of explain"):
        explain(forest, X.iloc[:4], tree_mode="cover")
