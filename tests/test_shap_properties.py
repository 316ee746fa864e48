"""Shapley properties on random models and masks (seeded loops, no hypothesis).

Efficiency (base + sum = f_S(x_S)), missingness (masked -> exactly 0),
symmetry, dummy and linearity, for ExactShap and enumerating KernelShap;
efficiency and missingness also for sampled KernelShap.
"""
import numpy as np
import pytest

from explainers import ModelAdapter
from explainers.shap import ExactShap, KernelShap, LinearShap

N_CASES = 6


class RandomModel:
    """f(x) = a.x + sum_{i<j} B_ij x_i x_j + c.sin(x) + d.tanh(x)**2 with random terms.

    ``ignore`` features get no term (dummy players); ``twins`` = (i, j) makes
    f symmetric under swapping x_i and x_j.
    """

    def __init__(self, p, rng, ignore=(), twins=None):
        self.a = rng.normal(size=p)
        self.B = np.triu(rng.normal(size=(p, p)), 1)
        self.c = rng.normal(size=p)
        self.d = rng.normal(size=p)
        if twins is not None:
            i, j = twins
            for v in (self.a, self.c, self.d):
                v[j] = v[i]
            Bs = self.B + self.B.T
            Bs[j, :] = Bs[i, :]
            Bs[:, j] = Bs[:, i]
            Bs[i, j] = Bs[j, i] = rng.normal()
            np.fill_diagonal(Bs, 0)
            self.B = np.triu(Bs, 1)
        for k in ignore:
            self.a[k] = self.c[k] = self.d[k] = 0.0
            self.B[k, :] = self.B[:, k] = 0.0
        self.n_features_in_ = p

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        quad = np.einsum("ni,ij,nj->n", X, self.B, X)
        return X @ self.a + quad + np.sin(X) @ self.c + np.tanh(X) ** 2 @ self.d


class SumModel:
    def __init__(self, f, g):
        self.f, self.g, self.n_features_in_ = f, g, f.n_features_in_

    def predict(self, X):
        return self.f.predict(X) + self.g.predict(X)


def _case(seed):
    rng = np.random.default_rng(seed)
    p = int(rng.integers(3, 7))
    bg = rng.normal(size=(7, p))
    X = rng.normal(size=(5, p))
    mask = rng.random((5, p)) < 0.3
    return rng, p, bg, X, mask


EXPLAINERS = {
    "exact": lambda m, bg: ExactShap(m, bg),
    "kernel_enumerated": lambda m, bg: KernelShap(m, bg, n_samples=64),
    "kernel_sampled": lambda m, bg: KernelShap(m, bg, n_samples=6, random_state=1),
}


@pytest.mark.parametrize("name", list(EXPLAINERS))
def test_efficiency_and_missingness(name):
    for seed in range(N_CASES):
        rng, p, bg, X, mask = _case(seed)
        model = RandomModel(p, rng)
        res = EXPLAINERS[name](model, bg).explain(X, mask)
        expected = ModelAdapter(model).predict_masked(X, mask, bg)
        np.testing.assert_allclose(res.predictions, expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(res.base_values + res.values.sum(1), expected, rtol=1e-10, atol=1e-10)
        assert np.all(res.values[mask] == 0.0), seed
        np.testing.assert_allclose(res.base_values, model.predict(bg).mean(), rtol=1e-12)


@pytest.mark.parametrize("name", ["exact", "kernel_enumerated"])
def test_symmetry(name):
    for seed in range(N_CASES):
        rng, p, bg, X, mask = _case(100 + seed)
        i, j = 0, p - 1
        model = RandomModel(p, rng, twins=(i, j))
        bg[:, j] = bg[:, i]
        X[:, j] = X[:, i]
        mask[:, [i, j]] = False
        res = EXPLAINERS[name](model, bg).explain(X, mask)
        np.testing.assert_allclose(res.values[:, i], res.values[:, j], rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", ["exact", "kernel_enumerated"])
def test_dummy_player_gets_zero(name):
    for seed in range(N_CASES):
        rng, p, bg, X, mask = _case(200 + seed)
        model = RandomModel(p, rng, ignore=(1,))
        res = EXPLAINERS[name](model, bg).explain(X, mask)
        np.testing.assert_allclose(res.values[:, 1], 0.0, atol=1e-10)


@pytest.mark.parametrize("name", ["exact", "kernel_enumerated"])
def test_linearity_in_the_model(name):
    for seed in range(N_CASES):
        rng, p, bg, X, mask = _case(300 + seed)
        f, g = RandomModel(p, rng), RandomModel(p, rng)
        make = EXPLAINERS[name]
        both = make(SumModel(f, g), bg).explain(X, mask).values
        parts = make(f, bg).explain(X, mask).values + make(g, bg).explain(X, mask).values
        np.testing.assert_allclose(both, parts, rtol=1e-9, atol=1e-10)


def test_linear_equals_exact_on_random_linear_models():
    from sklearn.linear_model import LinearRegression

    for seed in range(N_CASES):
        rng, p, bg, X, mask = _case(400 + seed)
        model = LinearRegression().fit(rng.normal(size=(20, p)), rng.normal(size=20))
        lin = LinearShap(model, bg).explain(X, mask)
        exact = ExactShap(model, bg).explain(X, mask)
        np.testing.assert_allclose(lin.values, exact.values, atol=1e-10)
        np.testing.assert_allclose(lin.predictions, exact.predictions, atol=1e-10)
        assert np.all(lin.values[mask] == 0.0)
