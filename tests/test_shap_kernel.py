"""The coalition plan of KernelShap: enumeration, pairing, strata weights."""
import math

import numpy as np
import pytest

from explainers.shap import ExactShap, KernelShap
from explainers.shap.exact import shapley_weight_matrix
from explainers.shap.kernel import kernel_coalitions


def _mass(M, s):
    return (M - 1) / (s * (M - s))


@pytest.mark.parametrize("M, n", [(5, 30), (4, 14), (2, 2), (3, 6)])
def test_full_enumeration_when_it_fits(M, n):
    Z, w, exact = kernel_coalitions(M, n, np.random.default_rng(0))
    assert exact and len(Z) == 2**M - 2
    s = Z.sum(1)
    np.testing.assert_allclose(w, [(M - 1) / (math.comb(M, k) * k * (M - k)) for k in s])


@pytest.mark.parametrize("M, n", [(6, 20), (7, 50), (8, 100), (10, 256), (11, 300), (30, 200), (40, 64)])
def test_sampled_plan_is_paired_distinct_and_stratified(M, n):
    Z, w, exact = kernel_coalitions(M, n, np.random.default_rng(1))
    assert not exact and len(Z) <= n
    keys = {z.tobytes() for z in Z}
    assert len(keys) == len(Z)  # no coalition twice
    assert all((~z).tobytes() in keys for z in Z)  # each with its complement
    sizes = Z.sum(1)
    assert sizes.min() >= 1 and sizes.max() <= M - 1
    # every size present carries exactly its total kernel mass
    for s in np.unique(sizes):
        np.testing.assert_allclose(w[sizes == s].sum(), _mass(M, s), rtol=1e-12)
    # the outermost sizes are enumerated first when their share of the budget
    # covers them: for 10 features and 256 draws, sizes 1 and 9 (shap's rule);
    # the rest is spread by kernel mass: 43 pairs of sizes 2/8, 33 of 3/7...
    if (M, n) == (10, 256):
        counts = {s: int((sizes == s).sum()) for s in range(1, 10)}
        assert counts == {1: 10, 2: 43, 3: 33, 4: 28, 5: 28, 6: 28, 7: 33, 8: 43, 9: 10}
        assert len(Z) == 256


def test_plan_is_deterministic_per_seed():
    a = kernel_coalitions(9, 100, np.random.default_rng(5))
    b = kernel_coalitions(9, 100, np.random.default_rng(5))
    c = kernel_coalitions(9, 100, np.random.default_rng(6))
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])


@pytest.mark.parametrize("M", [1, 2, 3, 6])
def test_shapley_weight_matrix_rows(M):
    """Each feature's weights: +w over coalitions with it, -w without; sums to 0."""
    W = shapley_weight_matrix(M)
    assert W.shape == (2**M, M)
    np.testing.assert_allclose(W.sum(axis=0), 0.0, atol=1e-12)
    # v = indicator of the full coalition: each player gets 1/M
    v = np.zeros(2**M)
    v[-1] = 1.0
    np.testing.assert_allclose(W.T @ v, 1.0 / M)


def test_many_features_kernel_runs_and_is_additive():
    """30 features: exact is refused by cost, kernel samples (rejection path)."""
    rng = np.random.default_rng(0)

    class Model:
        n_features_in_ = 30
        coef = rng.normal(size=30)

        def predict(self, X):
            X = np.asarray(X)
            return X @ self.coef + X[:, 0] * X[:, 1]

    bg, X = rng.normal(size=(5, 30)), rng.normal(size=(2, 30))
    res = KernelShap(Model(), bg, n_samples=200).explain(X, ["x3"])
    res.check_additivity(atol=1e-9)
    assert np.all(res.values[:, 3] == 0.0) and not res.params["enumerated"]
    # linear part is exact for kernel SHAP whatever the sample: check a linear-only feature
    np.testing.assert_allclose(res.values[:, 10], Model.coef[10] * (X[:, 10] - bg[:, 10].mean()), atol=1e-8)
    with pytest.raises(ValueError, match="KernelShap"):
        ExactShap(Model(), bg)
