"""Every scikit-learn classifier and regressor an analyst fits with default settings
loads from a .skops file and is explained (issue #23).

For each estimator of ``sklearn.utils.all_estimators()`` that can be built with its
defaults (meta-estimators that need a base estimator aside), fitted on a small numeric
table and, where it takes one, through a ColumnTransformer on a mixed table:

- ``skops.io.dumps`` then :func:`load_model` reads it (the reviewed allow-list, with
  neighbour indexes rebuilt and training state left out);
- the loaded model predicts exactly what the original does on the same rows;
- ``explain`` holds local accuracy (base + contributions = prediction, 1e-9
  relative) and its prediction is the original model's own output on that scale
  (probability, decision function or value);
- ``partial_dependence`` (brute) equals scikit-learn's on the same grid.

A classifier without predict_proba (SVC, LinearSVC, RidgeClassifier...) is
explained on its decision function, named "margin".
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.utils import all_estimators

from explainers import ModelAdapter, load_model
from explainers.pdp import partial_dependence
from explainers.shap import explain

#: built with defaults, but fitting needs an estimator given by the user
_NEEDS_BASE = {"SelfTrainingClassifier"}
#: targets of several columns (the multi-task models refuse one)
_MULTI_TARGET = {"MultiTaskElasticNet", "MultiTaskElasticNetCV", "MultiTaskLasso", "MultiTaskLassoCV"}
#: the data's one component: these decompositions cap n_components at the target's columns
_ONE_COMPONENT = {"CCA", "PLSCanonical"}
#: need counts (non-negative) or categories (small non-negative integers)
_NON_NEGATIVE = {"ComplementNB", "MultinomialNB"}
_CATEGORIES = {"CategoricalNB"}
_POSITIVE_TARGET = {"PoissonRegressor", "GammaRegressor", "TweedieRegressor"}
_ONE_FEATURE = {"IsotonicRegression"}
#: predict only where a training row lies within radius 1: the table is drawn in a box small
#: enough that every row an explanation mixes from it has one (see the test of the message below)
_RADIUS = {"RadiusNeighborsClassifier", "RadiusNeighborsRegressor"}


def _estimators():
    out = []
    for kind in ("classifier", "regressor"):
        for name, cls in all_estimators(type_filter=kind):
            if name in _NEEDS_BASE:
                continue
            try:
                cls()
            except TypeError:  # a meta-estimator: its base estimator has no default
                continue
            out.append(pytest.param(kind, name, cls, id=name))
    return out


ESTIMATORS = _estimators()


def _table(name: str, kind: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(80, 4)), columns=["a", "b", "c", "d"])
    yr = 2 * X.a + X.b - X.c * X.d + rng.normal(scale=0.1, size=80)
    y = (X.a + X.b > 0).astype(int) if kind == "classifier" else yr
    if name in _POSITIVE_TARGET:
        y = np.exp(yr / 3)
    if name in _MULTI_TARGET:
        y = np.column_stack([yr, X.a - X.d])
    if name in _NON_NEGATIVE:
        X = X.abs() + 0.1
    if name in _CATEGORIES:
        X = ((X > 0).astype(int) + (X > 1).astype(int)).astype(float)  # scikit-learn PD refuses int columns
    if name in _ONE_FEATURE:
        X = X[["a"]]
    if name in _RADIUS:
        X = X.apply(lambda c: 0.6 * (c - c.min()) / (c.max() - c.min()))
    return X, y


def _build(cls, name):
    est = cls(n_components=1) if name in _ONE_COMPONENT else cls()
    if "random_state" in est.get_params():
        est.set_params(random_state=0)
    return est


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of default settings on 80 rows
        return est.fit(X, y)


def _own_output(model, output: str, X) -> np.ndarray:
    """The original model's own numbers on the scale a ShapResult names."""
    if output == "raw":
        out = np.asarray(model.predict(X), dtype=float)
    elif output == "proba":
        out = np.asarray(model.predict_proba(X), dtype=float)
    elif output == "margin" or (output == "log_odds" and hasattr(model, "decision_function")):
        # a logistic model's decision function is its log-odds, unclipped
        out = np.asarray(model.decision_function(X), dtype=float)
    else:
        p = np.clip(np.asarray(model.predict_proba(X), dtype=float), 1e-15, 1 - 1e-15)
        out = np.log(p) - np.log1p(-p)
        if out.shape[1] == 2:
            out = out[:, 1]
    if out.ndim == 2 and out.shape[1] == 1:
        out = out[:, 0]
    return out


def _check(model, original, X):
    # exactly the original's predictions
    np.testing.assert_array_equal(ModelAdapter(model).predict(X), ModelAdapter(original).predict(X))
    # local accuracy, on the model's own scale
    res = explain(model, X.iloc[:3], background=X.iloc[:30])
    total = res.base_values + res.values.sum(axis=1)
    np.testing.assert_allclose(total, res.predictions, rtol=1e-9, atol=1e-9)
    own = _own_output(original, res.output, X.iloc[:3])
    if res.values.ndim == 2 and own.ndim == 2 and own.shape[1] == 2:  # binary: the positive class
        own = own[:, 1]
    np.testing.assert_allclose(res.predictions, own, rtol=1e-9, atol=1e-9)
    # partial dependence = scikit-learn's brute force on the same grid
    from sklearn.inspection import partial_dependence as sk_pd

    feature = X.columns[0]
    ours = partial_dependence(model, X, [feature], grid_resolution=6, kind="average", method="brute")
    grid = ours.grid[0]
    theirs = sk_pd(original, X, [feature], custom_values={feature: grid}, kind="average", method="brute")
    ref = np.moveaxis(np.asarray(theirs["average"]), 0, -1)  # (grid, outputs)
    avg = np.asarray(ours.average).reshape(len(grid), -1)
    if ref.shape[1] == 1 and avg.shape[1] == 2:  # scikit-learn keeps a binary model's positive class
        avg = avg[:, 1:]
    np.testing.assert_allclose(avg, ref, rtol=1e-9, atol=1e-9)
    return res


@pytest.mark.parametrize("kind, name, cls", ESTIMATORS)
def test_numeric_table(kind, name, cls):
    X, y = _table(name, kind)
    est = _fit(_build(cls, name), X, y)
    model = load_model(sio.dumps(est), filename="model.skops")
    res = _check(model, est, X)
    if kind == "classifier" and not hasattr(est, "predict_proba"):
        assert res.output == "margin" or res.output == "log_odds"


def _mixed(name: str, kind: str):
    X, y = _table(name, kind)
    rng = np.random.default_rng(1)
    X = X.assign(k=rng.choice(["red", "green", "blue"], size=len(X)))
    if kind == "classifier":
        y = ((X.a + X.b + (X.k == "red")) > 0.5).astype(int)
    return X, y


def _pipeline(est):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder

    pre = ColumnTransformer([("num", MinMaxScaler(), ["a", "b", "c", "d"]),
                             ("cat", OneHotEncoder(drop="first", sparse_output=False), ["k"])])
    return make_pipeline(pre, est)


#: these take one column (Isotonic) or category codes (CategoricalNB), not a transformed table
_NO_TRANSFORMER = _ONE_FEATURE | _CATEGORIES


@pytest.mark.parametrize("kind, name, cls", [p for p in ESTIMATORS if p.values[1] not in _NO_TRANSFORMER])
def test_mixed_table_through_column_transformer(kind, name, cls):
    X, y = _mixed(name, kind)
    est = _fit(_pipeline(_build(cls, name)), X, y)
    model = load_model(sio.dumps(est), filename="model.skops")
    _check(model, est, X)


def test_every_estimator_is_covered():
    """The survey's population: every default-built classifier and regressor."""
    names = {p.values[1] for p in ESTIMATORS}
    assert {"SVC", "LinearSVC", "RidgeClassifier", "KNeighborsClassifier", "MLPRegressor",
            "GaussianProcessClassifier", "TweedieRegressor", "MultiTaskLasso"} <= names
    assert len(names) >= 80


@pytest.mark.parametrize("name", sorted(_RADIUS))
def test_a_prediction_the_model_cannot_make_is_refused_with_a_reason(name):
    """Default radius-neighbours models on spread-out data find no training row near some of
    the rows an explanation mixes: the classifier raises, the regressor predicts NaN. Both are
    refused with one message, never a bare ValueError or a NaN explanation."""
    from sklearn import neighbors

    from explainers import ExplainerError

    kind = "classifier" if name.endswith("Classifier") else "regressor"
    X, y = _table("spread", kind)
    X = X * 3
    est = _fit(getattr(neighbors, name)(), X, y)
    model = load_model(sio.dumps(est), filename="model.skops")
    with pytest.raises(ExplainerError, match=rf"This {name} .*radius-neighbours model finds no training row"):
        explain(model, X.iloc[:3], background=X.iloc[:30])



def _meta_estimators():
    """Meta-estimators with a base estimator given, as an analyst builds them."""
    from sklearn import ensemble, model_selection, multiclass, multioutput, semi_supervised
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.tree import DecisionTreeClassifier

    two = [("lr", LogisticRegression()), ("tree", DecisionTreeClassifier(max_depth=3, random_state=0))]
    ridges = [("ridge", Ridge()), ("stiff", Ridge(alpha=5.0))]
    return {
        "StackingClassifier": (ensemble.StackingClassifier(two), "classifier"),
        "VotingClassifier": (ensemble.VotingClassifier(two, voting="soft"), "classifier"),
        "StackingRegressor": (ensemble.StackingRegressor(ridges), "regressor"),
        "VotingRegressor": (ensemble.VotingRegressor(ridges), "regressor"),
        "OneVsRestClassifier": (multiclass.OneVsRestClassifier(LogisticRegression()), "classifier"),
        "OneVsOneClassifier": (multiclass.OneVsOneClassifier(LogisticRegression()), "classifier"),
        "SelfTrainingClassifier": (semi_supervised.SelfTrainingClassifier(LogisticRegression()), "classifier"),
        "FixedThresholdClassifier": (model_selection.FixedThresholdClassifier(LogisticRegression(), threshold=0.3),
                                     "classifier"),
        "MultiOutputRegressor": (multioutput.MultiOutputRegressor(Ridge()), "MultiTaskLasso"),
        "RegressorChain": (multioutput.RegressorChain(Ridge()), "MultiTaskLasso"),
    }


@pytest.mark.parametrize("name", sorted(_meta_estimators()))
def test_meta_estimators_with_a_base_estimator(name):
    est, kind = _meta_estimators()[name]
    X, y = _table(kind, "regressor" if kind == "MultiTaskLasso" else kind)
    est = _fit(est, X, y)
    _check(load_model(sio.dumps(est), filename="model.skops"), est, X)


def test_label_only_and_unreviewed_meta_estimators_are_refused_by_name():
    """A hard-voting ensemble gives labels only: nothing to explain, and it says so; a tuned
    threshold keeps its scorer (functions not reviewed): refused naming them."""
    from sklearn import ensemble, model_selection
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC

    from explainers import ExplainerError

    X, y = _table("VotingClassifier", "classifier")
    hard = _fit(ensemble.VotingClassifier([("lr", LogisticRegression()), ("svc", SVC())]), X, y)
    with pytest.raises(ExplainerError, match="neither predict_proba nor decision_function"):
        explain(load_model(sio.dumps(hard), filename="model.skops"), X.iloc[:2], background=X)
    tuned = _fit(model_selection.TunedThresholdClassifierCV(LogisticRegression()), X, y)
    with pytest.raises(ExplainerError, match="_CurveScorer"):
        load_model(sio.dumps(tuned), filename="model.skops")
