"""The coalition game of small networks and linear models without synthetic rows
(explainers.shap._layer_game) equals the synthetic-row game it replaces."""
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_friedman1
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler

import explainers.shap._layer_game as layer_game
from explainers.shap import ExactShap, KernelShap
from explainers.shap._common import CoalitionGame

TOL = dict(rtol=0, atol=1e-10)


def _models():
    return {
        "mlp_relu": (lambda: MLPRegressor(hidden_layer_sizes=(16,), max_iter=300, random_state=0), "y"),
        "mlp_tanh": (lambda: MLPRegressor(hidden_layer_sizes=(8,), activation="tanh", max_iter=300, random_state=0), "y"),
        "mlp_logistic_bin": (lambda: MLPClassifier(hidden_layer_sizes=(6,), activation="logistic", max_iter=300,
                                                   random_state=0), "y2"),
        "mlp_identity_3": (lambda: MLPClassifier(hidden_layer_sizes=(5,), activation="identity", max_iter=300,
                                                 random_state=0), "y3"),
        "scaler_mlp": (lambda: make_pipeline(StandardScaler(), MLPRegressor(hidden_layer_sizes=(7,), max_iter=300,
                                                                            random_state=0)), "y"),
        "minmax_logreg_3": (lambda: make_pipeline(MinMaxScaler(), LogisticRegression()), "y3"),
        "linreg": (lambda: LinearRegression(), "y"),
    }


@pytest.fixture(scope="module")
def fits():
    X, y = make_friedman1(120, n_features=6, random_state=1)
    score = X[:, 0] + X[:, 1] - X[:, 3]
    targets = {"y": y, "y2": (score > np.median(score)).astype(int),
               "y3": np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))}
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MLP convergence
        for name, (make, t) in _models().items():
            out[name] = make().fit(frame, targets[t])
    return frame, out


def _without_layers(monkeypatch):
    monkeypatch.setattr(layer_game.LayerGame, "build", classmethod(lambda cls, *a, **k: None))


@pytest.mark.parametrize("name", list(_models()))
def test_layer_game_equals_synthetic_rows(fits, name, monkeypatch):
    frame, models = fits
    model = models[name]
    bg, rows = frame.iloc[:25], frame.iloc[100:104]
    game = CoalitionGame(ExactShap(model, bg).adapter, bg, 2**18)
    assert game.layers is not None
    ex = ExactShap(model, bg).explain(rows)
    assert ex.params["evaluation"].startswith("network layers")
    ke = KernelShap(model, bg, n_samples=40, random_state=3).explain(rows)
    # the game in small pieces: one background row per pass
    ex_small = ExactShap(model, bg, batch_rows=1).explain(rows)
    _without_layers(monkeypatch)
    assert CoalitionGame(ExactShap(model, bg).adapter, bg, 2**18).layers is None
    ref = ExactShap(model, bg).explain(rows)
    assert ref.params["evaluation"] == "model predict on synthetic rows"
    ref_k = KernelShap(model, bg, n_samples=40, random_state=3).explain(rows)
    for got in (ex, ex_small):
        np.testing.assert_allclose(got.values, ref.values, **TOL)
        np.testing.assert_allclose(got.base_values, ref.base_values, **TOL)
        np.testing.assert_allclose(got.predictions, ref.predictions, **TOL)
    np.testing.assert_allclose(ke.values, ref_k.values, **TOL)


def test_layer_game_masks_and_class_index(fits, monkeypatch):
    frame, models = fits
    model = models["mlp_identity_3"]
    bg, rows = frame.iloc[:20], frame.iloc[100:106].copy()
    rows.iloc[1, 2] = np.nan  # a missing cell: that row plays a smaller game
    mask = np.zeros((6, 6), dtype=bool)
    mask[3, [0, 4]] = True
    got = ExactShap(model, bg, class_index=2).explain(rows, missing=mask)
    _without_layers(monkeypatch)
    ref = ExactShap(model, bg, class_index=2).explain(rows, missing=mask)
    np.testing.assert_allclose(got.values, ref.values, **TOL)
    np.testing.assert_allclose(got.predictions, ref.predictions, **TOL)
    assert got.values[1, 2] == 0.0 and (got.values[3, [0, 4]] == 0.0).all()


def test_deeper_networks_and_other_models_use_synthetic_rows(fits):
    frame = fits[0]
    bg = frame.iloc[:10]
    deep = MLPRegressor(hidden_layer_sizes=(5, 4), max_iter=50, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        deep.fit(frame, frame["f0"])
    assert CoalitionGame(ExactShap(deep, bg).adapter, bg, 2**18).layers is None
    # integer columns are not the float64 data the compiled pass reads
    ints = frame.round().astype(np.int64)
    lin = LinearRegression().fit(ints, frame["f0"])
    assert CoalitionGame(ExactShap(lin, ints.iloc[:10]).adapter, ints.iloc[:10], 2**18).layers is None


def test_parents_cover_the_lattice():
    Z = ((np.arange(16)[:, None] >> np.arange(4)) & 1).astype(bool)
    parent, added, order = layer_game._parents(Z)
    for q in range(1, 16):
        par = parent[q]
        assert par >= 0 and Z[par].sum() == Z[q].sum() - 1 and Z[q, added[q]] and not Z[par, added[q]]
        assert (Z[par] | np.eye(4, dtype=bool)[added[q]] == Z[q]).all()
        assert list(order).index(par) < list(order).index(q)
    assert parent[0] == -1
    # sampled coalitions: a parent only when it is there
    Zs = Z[[6, 7, 12]]  # {1,2}, {0,1,2}, {2,3}: only {0,1,2} less player 0 is there
    parent, _, _ = layer_game._parents(Zs)
    assert list(parent) == [-1, 0, -1]
