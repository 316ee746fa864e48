"""Accumulated local effects."""
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures
from sklearn.linear_model import LinearRegression

from explainers.ale import AleResult, ale
from explainers.errors import InvalidFeatureError, InvalidParameterError


@pytest.fixture(scope="module")
def additive():
    """y = x0^2 + 3 x1 exactly, with x0 and x1 strongly correlated."""
    rng = np.random.default_rng(0)
    x0 = rng.uniform(-2, 2, 300)
    x1 = 0.8 * x0 + rng.normal(0, 0.3, 300)
    X = pd.DataFrame({"x0": x0, "x1": x1, "x2": rng.normal(size=300)})
    y = X.x0**2 + 3 * X.x1
    model = make_pipeline(PolynomialFeatures(2), LinearRegression()).fit(X, y)
    return model, X


def test_ale_recovers_additive_function(additive):
    model, X = additive
    r = ale(model, X, "x0", n_bins=15)
    z = r.grid[0]
    truth = z**2
    # equal up to a constant
    np.testing.assert_allclose(r.effect - r.effect[0], truth - truth[0], atol=1e-8)
    r1 = ale(model, X, 1)
    z1 = r1.grid[0]
    np.testing.assert_allclose(r1.effect - r1.effect[0], 3 * (z1 - z1[0]), atol=1e-8)
    # the feature the model ignores has no effect
    assert np.abs(ale(model, X, "x2").effect).max() < 1e-8


def test_ale_centring_counts_and_fields(additive):
    model, X = additive
    r = ale(model, X, "x0", n_bins=10)
    assert isinstance(r, AleResult) and r.feature_names == ("x0",)
    B = len(r.grid[0]) - 1
    assert B == 10 and r.effect.shape == (B + 1,) and r.local_effects.shape == (B,)
    assert r.counts.sum() == len(X) and np.all(r.counts > 0)
    mid = (r.effect[1:] + r.effect[:-1]) / 2
    assert abs(np.sum(r.counts * mid)) < 1e-9  # centred: data-weighted mean is 0
    assert r.deciles[0].shape == (9,)
    pickle.loads(pickle.dumps(r))


def test_ale_with_repeated_values_and_classifier():
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.integers(0, 4, 200).astype(float), rng.normal(size=200)])
    y = np.digitize(X[:, 0] + X[:, 1], [1.0, 3.0])
    clf = LogisticRegression(max_iter=500).fit(X, y)
    r = ale(clf, X, 0, n_bins=20)
    assert len(r.grid[0]) == 4  # duplicate quantile edges merged
    assert r.counts.sum() == 200 and r.effect.shape == (4, 3)
    # class probabilities sum to 1, so their local effects sum to 0
    np.testing.assert_allclose(r.effect.sum(axis=1), 0, atol=1e-12)
    one = ale(clf, X, 0, class_index=2)
    np.testing.assert_allclose(one.effect, r.effect[:, 2], atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(feature="nope"), InvalidFeatureError, "Unknown feature"),
        (dict(feature="c"), InvalidFeatureError, "not numeric"),
        (dict(feature="k"), InvalidFeatureError, "constant"),
        (dict(feature="a", n_bins=0), InvalidParameterError, "'n_bins' parameter of ale"),
    ],
)
def test_ale_bad_input(kwargs, err, match):
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"a": rng.normal(size=50), "c": rng.choice(["u", "v"], 50), "k": 1.0})

    class Model:  # any object with predict
        def predict(self, X):
            return X["a"].to_numpy() * 2

    with pytest.raises(err, match=match):
        ale(Model(), X, **kwargs)
