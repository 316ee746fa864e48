"""The rest of the model zoo (issue #13, point 6): each model explained, or refused
with a clear ExplainerError, never a numpy error.

- multi-output regressors: one output at a time, like classes; Tree SHAP equals
  shap's TreeExplainer on multi-output forests, tree PD equals brute PD;
- IsolationForest: its mean path length, flattened exactly, explained by Tree SHAP;
- models fitted on numpy arrays or on frames with non-text column labels;
- clusterers and bare transformers refused;
- method="recursion" refused for a HistGradientBoosting fitted with sample weights.
"""
import itertools
import math

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.datasets import make_friedman1

from explainers import ExplainerError, ModelAdapter, load_model
from explainers.errors import InvalidModelError, InvalidParameterError
from explainers.importance import permutation_importance
from explainers.pdp import partial_dependence
from explainers.shap import ExactShap, TreeShap, explain
from explainers.trees import flatten_model


@pytest.fixture(scope="module")
def data():
    X, y = make_friedman1(160, n_features=5, random_state=0)
    Y = np.column_stack([y, 3 * X[:, 0] - X[:, 1] * X[:, 2]])
    return X, Y


def _multi_trees(X, Y):
    from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    return [RandomForestRegressor(8, max_depth=5, random_state=0).fit(X, Y),
            ExtraTreesRegressor(8, max_depth=5, random_state=0).fit(X, Y),
            DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, Y)]


# ------------------------------------------------------------- multi-output
def test_multi_output_forest_flattens_each_target(data):
    X, Y = data
    for model in _multi_trees(X, Y):
        ens = flatten_model(model)
        assert ens.n_raw == 2 and ens.transform == "identity"
        np.testing.assert_allclose(ens.predict(X), model.predict(X), rtol=0, atol=1e-12)


def test_multi_output_tree_shap_equals_shap(data):
    import shap

    X, Y = data
    for model in _multi_trees(X, Y):
        res = TreeShap(model).explain(X[:20])
        assert res.values.shape == (20, 5, 2)
        assert res.output_names == ["output 0", "output 1"]
        ref = shap.TreeExplainer(model)
        np.testing.assert_allclose(res.values, ref.shap_values(X[:20]), atol=1e-9)
        np.testing.assert_allclose(res.base_values[0], np.ravel(ref.expected_value), atol=1e-9)
        np.testing.assert_allclose(res.predictions, model.predict(X[:20]), atol=1e-9)
        one = TreeShap(model, class_index=1).explain(X[:20])
        np.testing.assert_array_equal(one.values, res.values[:, :, 1])
        assert one.output_names == ["output 1"]


def test_multi_output_interventional_equals_exact(data):
    X, Y = data
    model = _multi_trees(X, Y)[0]
    tree = TreeShap(model, X[:12], mode="interventional").explain(X[:6])
    exact = ExactShap(model, X[:12]).explain(X[:6])
    np.testing.assert_allclose(tree.values, exact.values, atol=1e-9)


@pytest.mark.parametrize("features", [[0], [1, 2]])
def test_multi_output_tree_pd_equals_brute(data, features):
    X, Y = data
    for model in _multi_trees(X, Y):
        tree = partial_dependence(model, X, features, grid_resolution=9, method="tree")
        brute = partial_dependence(model, X, features, grid_resolution=9, method="brute")
        assert tree.output_names == ["output 0", "output 1"]
        np.testing.assert_allclose(tree.individual, brute.individual, atol=1e-9)
        np.testing.assert_allclose(tree.average, brute.average, atol=1e-9)
        one = partial_dependence(model, X, features, grid_resolution=9, method="tree", class_index=1)
        np.testing.assert_allclose(one.average, brute.average[..., 1], atol=1e-9)
        rec = partial_dependence(model, X, features, grid_resolution=9, method="recursion", kind="average",
                                 class_index=1)
        assert rec.output_names == ["output 1"]


def test_multi_output_linear_and_wrapped_models(data):
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.linear_model import LinearRegression, Ridge
    from sklearn.multioutput import MultiOutputRegressor

    X, Y = data
    models = [LinearRegression().fit(X, Y), Ridge().fit(X, Y),
              MultiOutputRegressor(GradientBoostingRegressor(n_estimators=10, random_state=0)).fit(X, Y)]
    for model in models:
        a = ModelAdapter(model, target_names=["y", "z"])
        assert (a.task, a.n_outputs, a.output_names) == ("regression", 2, ["y", "z"])
        np.testing.assert_allclose(a.predict(X[:5]), model.predict(X[:5]))
        b = a.with_output(class_index=1)
        assert b.output_names == ["z"]
        np.testing.assert_allclose(b.predict(X[:5]), model.predict(X[:5])[:, 1])
        res = explain(model, X[:4], background=X[:30])
        assert res.values.shape == (4, 5, 2)
        np.testing.assert_allclose(res.base_values + res.values.sum(1), res.predictions, atol=1e-9)
        pd_ = partial_dependence(model, X, [0], grid_resolution=5, class_index=0)
        assert pd_.average.shape == (5,)


def test_multi_output_class_index_out_of_range(data):
    X, Y = data
    with pytest.raises(InvalidParameterError, match=r"class_index.*\[0, 1\]"):
        ModelAdapter(_multi_trees(X, Y)[0], class_index=2)
    with pytest.raises(InvalidParameterError, match="target_names names 3"):
        ModelAdapter(_multi_trees(X, Y)[0], target_names=["a", "b", "c"])


def test_multi_output_permutation_importance_needs_every_target_or_one_output(data):
    X, Y = data
    with pytest.raises(ExplainerError, match=r"predicts 2 targets.*class_index=j"):
        permutation_importance(_multi_trees(X, Y)[0], X, Y[:, 0], n_repeats=2)


def test_multi_output_classifier_is_refused(data):
    from sklearn.ensemble import RandomForestClassifier

    X, Y = data
    clf = RandomForestClassifier(5, random_state=0).fit(X, (Y > np.median(Y, 0)).astype(int))
    with pytest.raises(InvalidModelError, match="several target columns"):
        ModelAdapter(clf)
    with pytest.raises(InvalidModelError, match="multi-output"):
        flatten_model(clf)


# ---------------------------------------------------------- IsolationForest
def _c(n):
    return 0.0 if n <= 1 else 1.0 if n == 2 else 2 * (math.log(n - 1) + np.euler_gamma) - 2 * (n - 1) / n


@pytest.fixture(scope="module", params=[1.0, 0.6])
def iforest(request, data):
    from sklearn.ensemble import IsolationForest

    X, _ = data
    return IsolationForest(n_estimators=15, max_samples=48, max_features=request.param,
                           random_state=0).fit(X), X


def test_isolation_forest_path_length_equals_sklearn(iforest):
    model, X = iforest
    ens = flatten_model(model)
    expected = -_c(model.max_samples_) * np.log2(-model.score_samples(X))  # E[h(x)]
    np.testing.assert_allclose(ens.predict_raw(X)[:, 0], expected, rtol=1e-12, atol=1e-12)
    a = ModelAdapter(model)
    assert a.output_names == ["mean path length"] and "shorter = more anomalous" in a.explained
    np.testing.assert_allclose(a.predict(X), expected, rtol=1e-12, atol=1e-12)
    # the explained output is the score, never predict's -1/1 labels
    assert set(np.unique(model.predict(X))) <= {-1, 1}
    assert len(np.unique(a.predict(X))) > 2


def test_isolation_forest_tree_shap(iforest):
    model, X = iforest
    res = TreeShap(model).explain(X[:25])
    np.testing.assert_allclose(res.base_values + res.values.sum(1), ModelAdapter(model).predict(X[:25]),
                               atol=1e-10)
    iv = TreeShap(model, X[:10], mode="interventional").explain(X[:5])
    exact = ExactShap(model, X[:10]).explain(X[:5])
    np.testing.assert_allclose(iv.values, exact.values, atol=1e-10)


def test_isolation_forest_path_dependent_equals_brute_force(data):
    """The cover-weighted game v(S), enumerated: Shapley values by their definition."""
    from sklearn.ensemble import IsolationForest

    X, _ = data
    X = X[:, :3]
    model = IsolationForest(n_estimators=3, max_samples=16, random_state=1).fit(X)
    ens = flatten_model(model)

    def v(x, S):
        total = 0.0
        for t in range(ens.n_trees):
            def walk(node, w):
                if ens.left[node] < 0:
                    return w * ens.value[node, 0]
                f = ens.feature[node]
                if f in S:
                    go = ens.left[node] if np.float32(x[f]) <= ens.threshold[node] else ens.right[node]
                    return walk(go, w)
                l, r = ens.left[node], ens.right[node]
                return (walk(l, w * ens.cover[l] / ens.cover[node]) + walk(r, w * ens.cover[r] / ens.cover[node]))
            total += walk(ens.node_offsets[t], 1.0)
        return ens.scale * total

    p = X.shape[1]
    res = TreeShap(model).explain(X[:4])
    for i, x in enumerate(X[:4]):
        phi = np.zeros(p)
        for j in range(p):
            others = [k for k in range(p) if k != j]
            for r in range(p):
                for S in itertools.combinations(others, r):
                    wgt = math.factorial(r) * math.factorial(p - r - 1) / math.factorial(p)
                    phi[j] += wgt * (v(x, set(S) | {j}) - v(x, set(S)))
        np.testing.assert_allclose(res.values[i], phi, atol=1e-10)


def test_isolation_forest_pd_tree_equals_brute(iforest):
    model, X = iforest
    tree = partial_dependence(model, X, [1], grid_resolution=7, method="tree")
    brute = partial_dependence(model, X, [1], grid_resolution=7, method="brute")
    np.testing.assert_allclose(tree.individual, brute.individual, atol=1e-10)
    assert tree.output_names == ["mean path length"]


def test_isolation_forest_loads_from_skops(iforest):
    model, X = iforest
    loaded = load_model(sio.dumps(model), filename="m.skops")
    np.testing.assert_allclose(ModelAdapter(loaded).predict(X), ModelAdapter(model).predict(X))


def test_other_outlier_detectors_explain_score_samples(data):
    from sklearn.svm import OneClassSVM

    X, _ = data
    model = OneClassSVM(gamma=0.5).fit(X)
    a = ModelAdapter(model)
    np.testing.assert_allclose(a.predict(X[:5]), model.score_samples(X[:5]))
    assert a.output_names == ["anomaly score"]


# ------------------------------------------------------- unnamed columns
@pytest.mark.parametrize("labels", ["numpy", "ints", "tuples"])
def test_models_without_text_column_names(data, labels):
    from sklearn.ensemble import RandomForestRegressor

    X, Y = data
    y = Y[:, 0]
    cols = {"numpy": None, "ints": list(range(5)), "tuples": [("g", i) for i in range(5)]}[labels]
    fit_X = X if cols is None else pd.DataFrame(X, columns=cols)
    model = RandomForestRegressor(8, max_depth=4, random_state=0).fit(fit_X, y)
    named = pd.DataFrame(X, columns=list("abcde"))
    for frame in (named, fit_X if cols is not None else pd.DataFrame(X)):
        res = explain(model, frame.iloc[:5])
        np.testing.assert_allclose(res.predictions, model.predict(X[:5]), atol=1e-9)
        first = res.feature_names[2]
        r = partial_dependence(model, frame, [first], grid_resolution=5)
        b = partial_dependence(model, X, [2], grid_resolution=5, method="brute")
        np.testing.assert_allclose(r.average, b.average, atol=1e-9)
        imp = permutation_importance(model, frame, y, n_repeats=2)
        assert list(imp.feature_names) == res.feature_names
    if cols is not None:  # labels match after str()
        assert explain(model, fit_X.iloc[:2]).feature_names == [str(c) for c in cols]


def test_same_shape_frame_is_taken_by_position(data):
    from sklearn.linear_model import LinearRegression

    X, Y = data
    named = pd.DataFrame(X, columns=list("abcde"))
    model = LinearRegression().fit(named, Y[:, 0])
    other = pd.DataFrame(X[:, ::-1].copy(), columns=list("vwxyz"))
    a = ModelAdapter(model)
    # a model that recorded its names: other names are other columns, never taken by position
    with pytest.raises(ExplainerError, match="lacks 5 of the model's columns"):
        a.predict(other)
    shuffled = named[list("edcba")]  # the same labels in another order: by label
    np.testing.assert_allclose(a.predict(shuffled), model.predict(named))
    with pytest.raises(ExplainerError, match="lacks"):
        a.predict(named[["a", "b"]].rename(columns={"a": "q"}))
    # a model fitted on an array: a frame of the same width is taken by position, whatever its labels
    bare = LinearRegression().fit(X, Y[:, 0])
    np.testing.assert_allclose(ModelAdapter(bare).predict(other), bare.predict(X[:, ::-1]))
    # a frame whose labels are not text (ints) is taken by position too
    numbered = pd.DataFrame(X[:, ::-1].copy())
    np.testing.assert_allclose(ModelAdapter(model).predict(numbered), model.predict(pd.DataFrame(X[:, ::-1],
                                                                                              columns=list("abcde"))))


# ------------------------------------------------------------- refusals
@pytest.mark.parametrize("make", ["kmeans", "dbscan", "agglomerative", "pca", "scaler"])
def test_unsupervised_models_are_refused(data, make):
    from sklearn.cluster import DBSCAN, AgglomerativeClustering, KMeans
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import StandardScaler

    X, _ = data
    model = {"kmeans": KMeans(3, n_init=2, random_state=0), "dbscan": DBSCAN(),
             "agglomerative": AgglomerativeClustering(3), "pca": PCA(2),
             "scaler": StandardScaler()}[make].fit(X)
    what = "transformer" if make in ("pca", "scaler") else "clustering model"
    with pytest.raises(InvalidModelError, match=f"{type(model).__name__} is a {what}: it has no prediction to explain"):
        ModelAdapter(model)
    with pytest.raises(InvalidModelError):
        explain(model, X[:3], background=X[:10])
    with pytest.raises(InvalidModelError):
        partial_dependence(model, X, [0])


def test_kmeans_refused_at_load(data):
    from sklearn.cluster import KMeans
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, _ = data
    for model in (KMeans(3, n_init=2, random_state=0).fit(X),
                  make_pipeline(StandardScaler(), KMeans(3, n_init=2, random_state=0)).fit(X)):
        with pytest.raises(InvalidModelError, match="KMeans is a clustering model"):
            load_model(sio.dumps(model), filename="m.skops")


# ------------------------------------------------------- recursion + weights
def test_recursion_refused_for_hgb_with_sample_weight(data):
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.inspection import partial_dependence as sk_pd

    X, Y = data
    w = np.random.default_rng(0).uniform(0.1, 5, len(X))
    model = HistGradientBoostingRegressor(max_iter=15, random_state=0).fit(X, Y[:, 0], sample_weight=w)
    with pytest.raises((ValueError, NotImplementedError)):  # scikit-learn refuses it too
        sk_pd(model, X, [0], method="recursion")
    with pytest.raises(InvalidParameterError, match="ignores the sample weights"):
        partial_dependence(model, X, [0], method="recursion", kind="average")
    tree = partial_dependence(model, X, [0], grid_resolution=6, method="tree")
    brute = partial_dependence(model, X, [0], grid_resolution=6, method="brute")
    np.testing.assert_allclose(tree.average, brute.average, atol=1e-9)
    plain = HistGradientBoostingRegressor(max_iter=15, random_state=0).fit(X, Y[:, 0])
    partial_dependence(plain, X, [0], method="recursion", kind="average")
