"""Probability-scale Tree SHAP of boosting classifiers (issue #24): the exact Shapley values
of the interventional probability game, checked against ExactShap on ``predict_proba``
(the definition, all 2**p coalitions over the same background) and, where shap's rescaled
values are the Shapley values (one player per background row), against shap."""
import warnings

import lightgbm
import numpy as np
import pandas as pd
import pytest
import xgboost
from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier

from explainers.errors import InvalidParameterError, OutOfReachError
from explainers.shap import ExactShap, TreeShap, explain
from explainers.shap import _proba_game

warnings.filterwarnings("ignore", message=".*feature names.*", category=UserWarning)

P = 5


def _data(n=400, seed=0, nan=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, P))
    y2 = (X[:, 0] * X[:, 1] + X[:, 2] - 0.5 * X[:, 3] + 0.3 * rng.normal(size=n) > 0).astype(int)
    y3 = np.digitize(X[:, 0] + X[:, 3] * X[:, 1] + 0.3 * rng.normal(size=n), [-0.6, 0.6])
    if nan:
        X[::7, 1] = np.nan
        X[3::11, 4] = np.nan
    return X, y2, y3


MODELS = {
    "sklearn-gb": lambda X, y: GradientBoostingClassifier(n_estimators=25, max_depth=3, random_state=0).fit(X, y),
    "sklearn-hgb": lambda X, y: HistGradientBoostingClassifier(max_iter=20, max_depth=4, random_state=0).fit(X, y),
    "xgboost": lambda X, y: xgboost.XGBClassifier(n_estimators=20, max_depth=3, n_jobs=1).fit(X, y),
    "lightgbm": lambda X, y: lightgbm.LGBMClassifier(n_estimators=20, num_leaves=8, verbose=-1,
                                                     n_jobs=1).fit(X, y),
}


def _same(ours, ref, atol=1e-9):
    assert ours.values.shape == ref.values.shape
    np.testing.assert_allclose(ours.values, ref.values, rtol=0, atol=atol)
    np.testing.assert_allclose(ours.base_values, ref.base_values, rtol=0, atol=atol)
    np.testing.assert_allclose(ours.predictions, ref.predictions, rtol=0, atol=atol)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("classes", [2, 3])
def test_probability_values_equal_the_definition(name, classes):
    nan = name != "sklearn-gb"  # GradientBoostingClassifier takes no NaN
    X, y2, y3 = _data(nan=nan)
    model = MODELS[name](X, y2 if classes == 2 else y3)
    bg, rows = X[:15], X[200:208]
    ours = TreeShap(model, bg, mode="interventional", output="proba").explain(rows)
    ref = ExactShap(model, bg, output="proba").explain(rows)
    _same(ours, ref)
    assert ours.output == "proba" and ours.values.shape == (8, P, classes)
    np.testing.assert_allclose(ours.predictions, model.predict_proba(rows), rtol=0, atol=1e-6)
    assert ours.params["players_max"] >= 2  # the games are not trivial
    ours.check_additivity(atol=1e-12)


@pytest.mark.parametrize("name", ["sklearn-hgb", "xgboost"])
def test_masked_features_and_one_class(name):
    X, y2, _ = _data(nan=True)
    model = MODELS[name](X, y2)
    bg, rows = X[:12], X[100:106]
    kw = dict(missing=np.array([False, True, False, True, False]))
    ours = TreeShap(model, bg, mode="interventional", output="proba").explain(rows, **kw)
    ref = ExactShap(model, bg, output="proba").explain(rows, **kw)
    _same(ours, ref)
    assert np.all(ours.values[:, [1, 3], :] == 0.0)
    one = TreeShap(model, bg, mode="interventional", output="proba", class_index=1).explain(rows)
    np.testing.assert_allclose(one.values, ref_full(model, bg, rows)[:, :, 1], rtol=0, atol=1e-9)


def ref_full(model, bg, rows):
    return ExactShap(model, bg, output="proba").explain(rows).values


def test_categorical_splits():
    rng = np.random.default_rng(3)
    n = 500
    X = pd.DataFrame({"a": rng.normal(size=n), "c": pd.Categorical(rng.choice(list("pqrstu"), n)),
                      "b": rng.normal(size=n)})
    y = ((X.c.isin(["p", "r", "u"])) ^ (X.a > 0.3)).astype(int)
    model = HistGradientBoostingClassifier(max_iter=15, categorical_features="from_dtype", random_state=0).fit(X, y)
    bg, rows = X.iloc[:20], X.iloc[300:306]
    _same(TreeShap(model, bg, mode="interventional", output="proba").explain(rows),
          ExactShap(model, bg, output="proba").explain(rows))


def test_equals_shap_where_its_rescaling_is_the_shapley_value():
    """shap's model_output="probability" rescales each background pair's margin attributions to
    the probability difference: the Shapley value of the pair's game when it has one player.
    Background rows that differ from the explained row in one feature each make that so."""
    shap = pytest.importorskip("shap")
    X, y2, _ = _data()
    model = MODELS["xgboost"](X, y2)
    x = X[250:251]
    rng = np.random.default_rng(1)
    bg = np.repeat(x, 10, axis=0)
    for i in range(10):
        bg[i, i % P] = rng.normal() * 2
    ours = TreeShap(model, bg, mode="interventional", output="proba").explain(x)
    explainer = shap.TreeExplainer(model, bg, model_output="probability", feature_perturbation="interventional")
    theirs = np.asarray(explainer.shap_values(x))
    theirs = theirs[..., 1] if theirs.ndim == 3 else theirs
    assert ours.params["players_max"] == 1
    np.testing.assert_allclose(ours.values[:, :, 1], theirs, rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours.base_values[0, 1], float(np.ravel(explainer.expected_value)[-1]), atol=1e-6)


def test_explain_asks_for_probabilities_of_a_boosting_model():
    X, y2, _ = _data()
    model = MODELS["sklearn-gb"](X, y2)
    res = explain(model, X[:4], background=X[10:30], output="proba")
    assert res.method == "tree" and res.output == "proba"
    _same(res, ExactShap(model, X[10:30], output="proba").explain(X[:4]))
    # no background given: the probability game still needs one (a sample of X)
    res = explain(model, X[:4], output="proba")
    assert res.method == "tree" and res.params["mode"] == "interventional"


def test_too_many_players_is_refused_with_the_reason(monkeypatch):
    X, y2, _ = _data()
    model = MODELS["sklearn-gb"](X, y2)
    monkeypatch.setattr(_proba_game, "MAX_PAIR_BITS", 2)
    with pytest.raises(OutOfReachError, match=r"more than 2 features.*margin \(log-odds\)"):
        TreeShap(model, X[:10], mode="interventional", output="proba").explain(X[200:203])
    with pytest.raises(OutOfReachError):  # explain() says so too, instead of estimating it by KernelShap
        explain(model, X[200:203], background=X[:10], output="proba")
    with pytest.raises(InvalidParameterError, match="mode='interventional'"):
        TreeShap(model, output="proba")
    with pytest.raises(InvalidParameterError, match="interaction values"):
        TreeShap(model, X[:10], mode="interventional", output="proba").interactions(X[:2])


def test_shapley_weights_are_the_definition():
    from math import factorial

    W = _proba_game.shapley_weights(9)
    for d in range(1, 10):
        for s in range(d):
            assert W[d, s] == pytest.approx(factorial(s) * factorial(d - s - 1) / factorial(d), rel=1e-14)
