"""The flat tree representation reproduces every supported model's predictions."""
import pickle

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor, ExtraTreeRegressor

from explainers.trees import TreeEnsemble, flatten_model, is_tree_model
from explainers.errors import InvalidModelError


def _data():
    rng = np.random.RandomState(0)
    X, y3 = make_classification(200, 5, n_informative=3, n_classes=3, random_state=0)
    Xr, yr = make_regression(200, 5, noise=1.0, random_state=0)
    nan = rng.rand(*X.shape) < 0.1
    return X, y3, (y3 == 1).astype(int), Xr, yr, nan


X, Y3, Y2, XR, YR, NAN = _data()
XN = np.where(NAN, np.nan, X)  # with missing values, for models that route NaN
XRN = np.where(NAN, np.nan, XR)

CASES = [
    ("tree_reg", DecisionTreeRegressor(max_depth=5, random_state=0), XRN, YR),
    ("extra_tree_reg", ExtraTreeRegressor(max_depth=5, random_state=0), XR, YR),
    ("tree_clf3", DecisionTreeClassifier(max_depth=5, random_state=0), XN, Y3),
    ("tree_clf2", DecisionTreeClassifier(max_depth=5, random_state=0), X, Y2),
    ("rf_reg", RandomForestRegressor(6, max_depth=5, random_state=0), XRN, YR),
    ("rf_clf3", RandomForestClassifier(6, max_depth=5, random_state=0), XN, Y3),
    ("rf_clf2", RandomForestClassifier(6, max_depth=5, random_state=0), X, Y2),
    ("et_reg", ExtraTreesRegressor(6, max_depth=5, random_state=0), XR, YR),
    ("et_clf3", ExtraTreesClassifier(6, max_depth=5, random_state=0), XN, Y3),
    ("gb_reg", GradientBoostingRegressor(n_estimators=8, max_depth=3, random_state=0), XR, YR),
    ("gb_clf2", GradientBoostingClassifier(n_estimators=8, max_depth=3, random_state=0), X, Y2),
    ("gb_clf3", GradientBoostingClassifier(n_estimators=8, max_depth=3, random_state=0), X, Y3),
    ("gb_zero", GradientBoostingRegressor(n_estimators=5, init="zero", random_state=0), XR, YR),
    ("hgb_reg", HistGradientBoostingRegressor(max_iter=8, random_state=0), XRN, YR),
    ("hgb_poisson", HistGradientBoostingRegressor(max_iter=8, loss="poisson", random_state=0), XN, np.abs(YR) + 1),
    ("hgb_clf2", HistGradientBoostingClassifier(max_iter=8, random_state=0), XN, Y2),
    ("hgb_clf3", HistGradientBoostingClassifier(max_iter=8, random_state=0), XN, Y3),
]


@pytest.fixture(scope="module")
def fitted():
    return {name: (model.fit(Xf, yf), Xf) for name, model, Xf, yf in CASES}


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_reconstruction_matches_model(fitted, name):
    model, Xf = fitted[name]
    ens = flatten_model(model)
    got = ens.predict(Xf)
    if hasattr(model, "predict_proba"):
        ref = model.predict_proba(Xf)
    else:
        ref = model.predict(Xf).reshape(-1, 1)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    if hasattr(model, "decision_function"):
        margin = model.decision_function(Xf).reshape(len(Xf), -1)
        np.testing.assert_allclose(ens.predict_raw(Xf), margin, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_structure_is_consistent(fitted, name):
    model, _ = fitted[name]
    e = flatten_model(model)
    leaf = e.left < 0
    assert np.array_equal(leaf, e.right < 0)
    assert np.all(e.feature[leaf] == -1) and np.all(e.feature[~leaf] >= 0)
    assert e.node_offsets[0] == 0 and e.node_offsets[-1] == e.n_nodes
    # children stay inside their own tree, and covers split exactly
    tree_of = np.repeat(np.arange(e.n_trees), np.diff(e.node_offsets))
    inner = np.flatnonzero(~leaf)
    assert np.array_equal(tree_of[e.left[inner]], tree_of[inner])
    np.testing.assert_allclose(e.cover[e.left[inner]] + e.cover[e.right[inner]], e.cover[inner], rtol=1e-9)
    assert e.value.shape == (e.n_nodes, e.n_raw) and e.base.shape == (e.n_raw,)
    assert e.transform in ("identity", "exp", "sigmoid", "softmax")
    pickle.loads(pickle.dumps(e))


def test_threshold_ties_go_left_after_float32_rounding(fitted):
    model, Xf = fitted["rf_reg"]
    e = flatten_model(model)
    inner = np.flatnonzero(e.left >= 0)[:50]
    Xt = np.repeat(np.nan_to_num(XR[:1]), len(inner), axis=0)
    # put each row exactly on a threshold of the node's feature (float32 rounding applies)
    Xt[np.arange(len(inner)), e.feature[inner]] = e.threshold[inner]
    np.testing.assert_allclose(e.predict(Xt)[:, 0], model.predict(Xt), rtol=1e-12, atol=1e-12)


def test_model_metadata(fitted):
    assert flatten_model(fitted["gb_clf2"][0]).transform == "sigmoid"
    assert flatten_model(fitted["gb_clf3"][0]).transform == "softmax"
    assert flatten_model(fitted["hgb_poisson"][0]).transform == "exp"
    hgb = flatten_model(fitted["hgb_reg"][0])
    assert not hgb.float32_inputs and hgb.scale == 1.0
    rf = flatten_model(fitted["rf_reg"][0])
    assert rf.float32_inputs and rf.scale == pytest.approx(1 / 6)
    gb3 = flatten_model(fitted["gb_clf3"][0])
    assert gb3.n_trees == 8 * 3 and list(gb3.tree_output[:3]) == [0, 1, 2]


def test_unsupported_models_are_refused():
    lin = LinearRegression().fit(XR, YR)
    # PCA mixes columns, so this pipeline does not fold into its trees
    pipe = make_pipeline(PCA(n_components=2), DecisionTreeRegressor(max_depth=2)).fit(XR, YR)
    assert not is_tree_model(lin) and not is_tree_model(pipe)
    with pytest.raises(InvalidModelError, match="not a tree model Glassbox reads"):
        flatten_model(pipe)
    gb = GradientBoostingRegressor(n_estimators=3, init=LinearRegression()).fit(XR, YR)
    with pytest.raises(InvalidModelError, match="non-constant init"):
        flatten_model(gb)
    # multi-output regression trees flatten (one raw column per target, tests/test_model_zoo.py);
    # multi-output classifiers do not
    from sklearn.tree import DecisionTreeClassifier

    multi = DecisionTreeClassifier(max_depth=2).fit(XR, np.column_stack([YR > 0, YR > 1]))
    with pytest.raises(InvalidModelError, match="multi-output"):
        flatten_model(multi)


def test_dataclass_is_frozen(fitted):
    e = flatten_model(fitted["tree_reg"][0])
    assert isinstance(e, TreeEnsemble)
    with pytest.raises(Exception):
        e.scale = 2.0


def test_flatten_is_reused_until_the_model_is_refit():
    from sklearn.ensemble import GradientBoostingRegressor

    from explainers.trees import flatten_model

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = X[:, 0] - X[:, 1]
    model = GradientBoostingRegressor(n_estimators=5, random_state=0).fit(X, y)
    first = flatten_model(model)
    assert flatten_model(model) is first
    model.set_params(n_estimators=7).fit(X, y)
    again = flatten_model(model)
    assert again is not first and again.n_trees == 7
    np.testing.assert_allclose(again.predict(X)[:, 0], model.predict(X), rtol=1e-12)
