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


# ------------------------------------------------------------------ second order
class _Fn:
    """A known function of the columns as a model."""

    def __init__(self, fn):
        self.fn = fn

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        return self.fn(X)


@pytest.fixture(scope="module")
def correlated():
    rng = np.random.default_rng(4)
    x0 = rng.uniform(-2, 2, 400)
    x1 = 0.7 * x0 + rng.normal(0, 0.6, 400)  # correlated: corner cells of the grid are empty
    return pd.DataFrame({"x0": x0, "x1": x1, "x2": rng.normal(size=400)})


def _mixed(surface):
    """Mixed second differences of a (B1 + 1, B2 + 1) surface, per cell."""
    return surface[1:, 1:] - surface[1:, :-1] - surface[:-1, 1:] + surface[:-1, :-1]


def _cell_means_by_definition(model, X, r):
    """Mean over each cell's rows of f at the cell's four corners (mixed difference)."""
    e1, e2 = r.grid
    x0, x1 = X.x0.to_numpy(), X.x1.to_numpy()
    a = np.clip(np.searchsorted(e1, x0, side="left") - 1, 0, len(e1) - 2)
    b = np.clip(np.searchsorted(e2, x1, side="left") - 1, 0, len(e2) - 2)
    out = np.full((len(e1) - 1, len(e2) - 1), np.nan)
    for i in range(len(e1) - 1):
        for j in range(len(e2) - 1):
            rows = X[(a == i) & (b == j)]
            if len(rows) == 0:
                continue
            vals = []
            for da, db, sign in [(1, 1, 1), (1, 0, -1), (0, 1, -1), (0, 0, 1)]:
                Z = rows.copy()
                Z["x0"], Z["x1"] = e1[i + da], e2[j + db]
                vals.append(sign * model.predict(Z))
            out[i, j] = np.mean(np.sum(vals, axis=0))
    return out


def test_ale2d_mixed_differences_equal_the_cell_means(correlated):
    X = correlated
    model = _Fn(lambda A: A[:, 0] * A[:, 1] + np.sin(A[:, 0]) * A[:, 1] ** 2 + A[:, 2])
    r = ale(model, X, ["x0", "x1"], n_bins=8)
    assert r.effect.shape == (len(r.grid[0]), len(r.grid[1]))
    assert r.counts.sum() == len(X) and r.counts.shape == r.local_effects.shape
    want = _cell_means_by_definition(model, X, r)
    filled = ~np.isnan(want)
    assert (~filled).sum() == r.params["empty_cells"] > 0  # the correlation leaves empty corners
    # main effects and the constant cancel in mixed differences: what is left is the data's own
    np.testing.assert_allclose(_mixed(r.effect)[filled], want[filled], rtol=0, atol=1e-10)
    np.testing.assert_allclose(r.local_effects[filled], want[filled], rtol=0, atol=1e-10)
    # an empty cell takes its nearest cell's value
    assert np.isfinite(r.local_effects).all()


def test_ale2d_first_order_removed_and_centred(correlated):
    X = correlated
    r = ale(_Fn(lambda A: A[:, 0] * A[:, 1] + A[:, 0] ** 3), X, [0, 1], n_bins=6)
    c = r.counts.astype(float)
    f = r.effect
    # no first-order effect left: each bin's count-weighted mean step along its own axis is 0
    step1 = f[1:] - f[:-1]
    np.testing.assert_allclose((c * (step1[:, :-1] + step1[:, 1:]) / 2).sum(axis=1), 0, atol=1e-10)
    step2 = f[:, 1:] - f[:, :-1]
    np.testing.assert_allclose((c * (step2[:-1] + step2[1:]) / 2).sum(axis=0), 0, atol=1e-10)
    cell = (f[:-1, :-1] + f[:-1, 1:] + f[1:, :-1] + f[1:, 1:]) / 4
    assert abs((c * cell).sum() / c.sum()) < 1e-12


def test_ale2d_additive_model_has_no_interaction(correlated, additive):
    r = ale(_Fn(lambda A: A[:, 0] ** 2 + 3 * A[:, 1] - A[:, 2]), correlated, ["x0", "x1"], n_bins=7)
    np.testing.assert_allclose(r.effect, 0, atol=1e-12)
    model, X = additive
    r = ale(model, X, ["x0", "x1"], n_bins=5)
    np.testing.assert_allclose(r.effect, 0, atol=1e-9)


def test_ale2d_classifier_outputs(correlated):
    X = correlated
    y = (X.x0 * X.x1 > 0).astype(int) + (X.x0 > 1).astype(int)
    clf = LogisticRegression(max_iter=500).fit(X.assign(p=X.x0 * X.x1), y)

    class Wrapped:  # the product feature inside, so the model has an interaction
        classes_ = clf.classes_

        def predict_proba(self, A):
            A = pd.DataFrame(np.asarray(A, dtype=float), columns=["x0", "x1", "x2"])
            return clf.predict_proba(A.assign(p=A.x0 * A.x1))

        def predict(self, A):
            return self.predict_proba(A).argmax(axis=1)

    r = ale(Wrapped(), X, ["x0", "x1"], n_bins=5)
    assert r.effect.shape == (len(r.grid[0]), len(r.grid[1]), 3)
    np.testing.assert_allclose(r.effect.sum(axis=2), 0, atol=1e-12)  # probabilities sum to 1
    one = ale(Wrapped(), X, ["x0", "x1"], n_bins=5, class_index=1)
    np.testing.assert_allclose(one.effect, r.effect[..., 1], atol=1e-12)


@pytest.mark.parametrize(
    "feature, match",
    [(["x0", "x1", "x2"], "one feature .* or two"), (["x0", "x0"], "the same"), (1.5, "column name"),
     (["x0", "c"], "not numeric")],
)
def test_ale2d_bad_input(correlated, feature, match):
    X = correlated.assign(c="u")
    with pytest.raises(InvalidFeatureError, match=match):
        ale(_Fn(lambda A: A[:, 0]), X, feature)
