"""Tree models' synthetic rows predicted by the compiled group walk
(explainers.shap._tree_game) equal the model's own predict / predict_proba /
decision_function, and ExactShap / KernelShap give the same values with it."""
import numpy as np
import pytest

import explainers.shap._tree_game as tree_game
from explainers.model import ModelAdapter
from explainers.shap import ExactShap, KernelShap
from explainers.shap._common import CoalitionGame

from .test_trees import CASES

TOL = dict(rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def fitted():
    return {name: (model.fit(Xf, yf), Xf) for name, model, Xf, yf in CASES}


def _outputs(model):
    if not hasattr(model, "classes_"):
        return [("auto", None)]
    return [("auto", None), ("proba", 1), ("log_odds", None), ("raw", None), ("raw", 0)]


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_predictor_equals_the_model(fitted, name, monkeypatch):
    model, Xf = fitted[name]
    monkeypatch.setattr(tree_game, "_BLOCK_ROWS", 37)  # several blocks, a partial last one
    for output, ci in _outputs(model):
        ad = ModelAdapter(model, output=output, class_index=ci)
        pred = tree_game.TreePredictor.build(ad)
        assert pred is not None, (name, output)
        got = pred.predict(Xf)
        if ci is not None:
            got = got[:, ci]
        want = ad.predict(Xf)
        np.testing.assert_allclose(got.reshape(want.shape), want, **TOL)


@pytest.mark.parametrize("name", ["rf_clf3", "gb_clf2", "hgb_reg", "hgb_poisson", "tree_reg"])
def test_explainers_agree_with_and_without_it(fitted, name, monkeypatch):
    model, Xf = fitted[name]
    bg = np.nan_to_num(Xf[:30])  # complete background rows
    rows = Xf[150:155]  # NaN cells here are missing features (nan_is_missing)
    game = CoalitionGame(ExactShap(model, bg).adapter, ExactShap(model, bg).adapter.to_frame(bg), 2**18)
    assert game.trees is not None
    ex = ExactShap(model, bg).explain(rows)
    assert ex.params["evaluation"] == "compiled tree walk"
    ex_cls = ExactShap(model, bg, class_index=0).explain(rows) if hasattr(model, "classes_") else None
    ke = KernelShap(model, bg, n_samples=20, random_state=1).explain(rows)
    monkeypatch.setattr(tree_game.TreePredictor, "build", classmethod(lambda cls, *a: None))
    ref = ExactShap(model, bg).explain(rows)
    ref_k = KernelShap(model, bg, n_samples=20, random_state=1).explain(rows)
    np.testing.assert_allclose(ex.values, ref.values, **TOL)
    np.testing.assert_allclose(ex.predictions, ref.predictions, **TOL)
    np.testing.assert_allclose(ke.values, ref_k.values, **TOL)
    if ex_cls is not None:
        ref_cls = ExactShap(model, bg, class_index=0).explain(rows)
        np.testing.assert_allclose(ex_cls.values, ref_cls.values, **TOL)


def test_not_for_column_mixing_pipelines_or_other_models():
    """A pipeline whose steps mix columns (PCA) is no tree model; one whose steps are
    column-wise (a scaler) folds into its trees, and the game then walks them."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeRegressor

    X = np.random.default_rng(0).normal(size=(40, 3))
    y = X[:, 0]
    pipe = make_pipeline(PCA(n_components=2), DecisionTreeRegressor(max_depth=3)).fit(X, y)
    assert tree_game.TreePredictor.build(ModelAdapter(pipe)) is None
    assert tree_game.TreePredictor.build(ModelAdapter(LinearRegression().fit(X, y))) is None
    folded = make_pipeline(StandardScaler(), DecisionTreeRegressor(max_depth=3)).fit(X, y)
    game = tree_game.TreePredictor.build(ModelAdapter(folded))
    assert game is not None
    np.testing.assert_allclose(game.predict(X)[:, 0], folded.predict(X), atol=1e-12)


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_game_values_equal_predictions_of_synthetic_rows(fitted, name):
    """The whole-game walk: every coalition x background row, NaN cells on both sides."""
    model, Xf = fitted[name]
    rng = np.random.default_rng(5)
    p = Xf.shape[1]
    Z = rng.random((40, p)) < 0.5
    Z[0], Z[1] = False, True  # the empty and the full coalition
    x, bg = Xf[150:153], Xf[:17]  # Xf holds NaN cells for the models that route them
    for output, ci in _outputs(model):
        ad = ModelAdapter(model, output=output, class_index=ci)
        pred = tree_game.TreePredictor.build(ad)
        got = pred.game_values(x, bg, Z)  # (r, c, B, n_cols)
        synth = np.where(Z[None, :, None, :], x[:, None, None, :], bg[None, None, :, :]).reshape(-1, p)
        want = ad._predict_frame(ad.to_frame(synth)).reshape(got.shape)
        np.testing.assert_allclose(got, want, **TOL)


def test_game_walk_is_what_exact_shap_uses(fitted, monkeypatch):
    """With the game walk forced on (and off), ExactShap gives the same values."""
    model, Xf = fitted["hgb_clf3"]
    bg, rows = np.nan_to_num(Xf[:20]), Xf[150:154]
    calls = []
    real = tree_game.TreePredictor.game_values
    monkeypatch.setattr(tree_game.TreePredictor, "game_fits", lambda self, c: True)
    monkeypatch.setattr(tree_game.TreePredictor, "game_values",
                        lambda self, *a: calls.append(1) or real(self, *a))
    on = ExactShap(model, bg, output="log_odds").explain(rows)
    assert calls
    monkeypatch.setattr(tree_game.TreePredictor, "game_fits", lambda self, c: False)
    off = ExactShap(model, bg, output="log_odds").explain(rows)
    np.testing.assert_allclose(on.values, off.values, **TOL)
    np.testing.assert_allclose(on.predictions, off.predictions, **TOL)
