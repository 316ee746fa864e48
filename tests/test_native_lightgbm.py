"""LightGBM text model files read as plain data (explainers.trees.lightgbm), checked
against LightGBM itself: predict, pred_contrib Tree SHAP, and hostile files."""
import json
import re
import subprocess
import sys
import warnings

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_friedman1

from explainers.errors import InvalidModelError
from explainers.pdp import partial_dependence
from explainers.shap import ExactShap, TreeShap
from explainers.trees.lightgbm import lightgbm_from_object, read_lightgbm
from tests._work_bounds import file_budget, peak_allocation

warnings.filterwarnings("ignore", message=".*[Ff]ound.*", category=UserWarning)

P = dict(verbose=-1, min_data_in_leaf=5, num_leaves=8, seed=0, deterministic=True, num_threads=1)


def _data(n=300, p=5, seed=0):
    X, y = make_friedman1(n, n_features=p, random_state=seed)
    X[::5, 1] = np.nan
    X[3::13, 0] = np.nan
    X[::11, 2] = 0.0
    return X, y


@pytest.fixture(scope="module")
def data():
    return _data()


def _train(params, X, y, rounds=12, **ds):
    return lgb.train({**P, **params}, lgb.Dataset(X, y, **ds), rounds)


def _read(booster):
    return read_lightgbm(booster.model_to_string().encode())


# name -> (params, target maker, rounds)
MODELS = {
    "regression": ({"objective": "regression"}, lambda y: y, 12),
    "regression_l1": ({"objective": "regression_l1"}, lambda y: y, 12),
    "huber": ({"objective": "huber"}, lambda y: y, 12),
    "fair": ({"objective": "fair"}, lambda y: y, 12),
    "quantile": ({"objective": "quantile", "alpha": 0.7}, lambda y: y, 12),
    "mape": ({"objective": "mape"}, lambda y: y + 1, 12),
    "poisson": ({"objective": "poisson"}, lambda y: np.exp(y / 10), 12),
    "gamma": ({"objective": "gamma"}, lambda y: np.exp(y / 10), 12),
    "tweedie": ({"objective": "tweedie", "tweedie_variance_power": 1.3}, lambda y: np.exp(y / 10), 12),
    "binary": ({"objective": "binary"}, lambda y: (y > 14).astype(int), 12),
    "binary_sigmoid2": ({"objective": "binary", "sigmoid": 2.0}, lambda y: (y > 14).astype(int), 12),
    "cross_entropy": ({"objective": "cross_entropy"}, lambda y: (y > 14).astype(int), 12),
    "multiclass": ({"objective": "multiclass", "num_class": 3}, lambda y: np.digitize(y, [11, 17]), 8),
    "zero_as_missing": ({"objective": "regression", "zero_as_missing": True}, lambda y: y, 12),
    "use_missing_false": ({"objective": "regression", "use_missing": False}, lambda y: y, 12),
    "dart": ({"objective": "regression", "boosting": "dart", "drop_rate": 0.3}, lambda y: y, 12),
    "goss": ({"objective": "regression", "data_sample_strategy": "goss"}, lambda y: y, 12),
    "bagging": ({"objective": "regression", "bagging_freq": 1, "bagging_fraction": 0.6}, lambda y: y, 12),
    "rf": ({"objective": "regression", "boosting": "rf", "bagging_freq": 1, "bagging_fraction": 0.6}, lambda y: y, 10),
    "rf_binary": ({"objective": "binary", "boosting": "rf", "bagging_freq": 1, "bagging_fraction": 0.6},
                  lambda y: (y > 14).astype(int), 10),
    "single_tree": ({"objective": "regression"}, lambda y: y, 1),
    "deep": ({"objective": "regression", "num_leaves": 255, "max_depth": -1, "min_data_in_leaf": 1,
              "min_data_in_bin": 1, "min_sum_hessian_in_leaf": 0}, lambda y: y, 3),
}


@pytest.fixture(scope="module")
def boosters(data):
    X, y = data
    out = {name: _train(params, X, target(y), rounds) for name, (params, target, rounds) in MODELS.items()}
    groups = [30] * 10
    for name in ("lambdarank", "rank_xendcg"):
        out[name] = _train({"objective": name}, X, np.digitize(y, [11, 17]), 12, group=groups)

    def l2(preds, ds):
        return preds - ds.get_label(), np.ones_like(preds)

    out["custom"] = _train({"objective": l2}, X, y, 12)
    return out


ALL = list(MODELS) + ["lambdarank", "rank_xendcg", "custom"]


def _margin_factor(name, booster):
    """Our raw margin = factor * LightGBM's raw_score (sigmoid parameter; rf averages)."""
    if name == "binary_sigmoid2":
        return 2.0
    if name.startswith("rf"):
        return 1.0 / booster.num_trees()
    return 1.0


def _explained(native, X):
    """The model's own prediction in LightGBM's predict() shape."""
    if native._estimator_type == "classifier":
        proba = native.predict_proba(X)
        return proba[:, 1] if proba.shape[1] == 2 else proba
    return native.predict(X)


# ------------------------------------------------------------------ predict
@pytest.mark.parametrize("name", ALL)
def test_predict_matches_lightgbm(boosters, data, name):
    X, _ = data
    b = boosters[name]
    native = _read(b)
    np.testing.assert_allclose(_explained(native, X), b.predict(X), rtol=1e-6, atol=1e-12)
    raw = b.predict(X, raw_score=True).reshape(len(X), -1)
    np.testing.assert_allclose(native.predict_raw(X), _margin_factor(name, b) * raw, rtol=1e-9, atol=1e-9)
    assert native.library == "lightgbm" and native.source_format == "lightgbm text"
    assert native.ensemble.float32_inputs is False


def test_model_facts(boosters):
    deep = _read(boosters["deep"])
    assert deep.ensemble.max_depth > 8
    assert boosters["deep"].dump_model()["tree_info"][0]["num_leaves"] == 255
    single = _read(boosters["single_tree"])
    assert single.ensemble.n_trees == 1
    multi = _read(boosters["multiclass"])
    assert multi.ensemble.transform == "softmax" and multi.ensemble.n_raw == 3
    assert list(multi.ensemble.tree_output[:6]) == [0, 1, 2, 0, 1, 2]
    assert _read(boosters["poisson"]).ensemble.transform == "exp"
    assert _read(boosters["cross_entropy"]).ensemble.transform == "sigmoid"
    assert _read(boosters["regression"]).ensemble.base.tolist() == [0.0]
    assert any("sigmoid=2" in n for n in _read(boosters["binary_sigmoid2"]).notes)
    assert any("average" in n for n in _read(boosters["rf"]).notes)


def test_one_leaf_trees():
    # a constant target: every tree is a single leaf (LightGBM's expected value is the leaf)
    X = np.random.default_rng(0).normal(size=(100, 3))
    b = _train({"objective": "regression"}, X, np.full(100, 3.0), 3)
    assert "num_leaves=1" in b.model_to_string()
    native = _read(b)
    np.testing.assert_allclose(native.predict(X), b.predict(X), rtol=1e-12)
    res = TreeShap(native).explain(X[:10])
    c = b.predict(X[:10], pred_contrib=True)
    np.testing.assert_allclose(res.values, c[:, :-1], atol=1e-12)
    np.testing.assert_allclose(res.base_values, c[:, -1], atol=1e-12)


@pytest.mark.parametrize("name, missing_type", [
    ("regression", 2), ("zero_as_missing", 1), ("use_missing_false", 0),
])
def test_each_missing_type_routes_as_lightgbm(boosters, name, missing_type):
    b = boosters[name]
    types = set()
    for line in b.model_to_string().splitlines():
        if line.startswith("decision_type="):
            types |= {(int(v) >> 2) & 3 for v in line.split("=")[1].split()}
    assert missing_type in types
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, size=(400, 5))
    # NaN, exact zeros, signed zeros and values just above LightGBM's zero band
    X[rng.random(X.shape) < 0.2] = np.nan
    X[rng.random(X.shape) < 0.1] = 0.0
    X[rng.random(X.shape) < 0.05] = -0.0
    X[rng.random(X.shape) < 0.05] = 1e-30
    native = _read(b)
    np.testing.assert_allclose(native.predict(X), b.predict(X), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ Tree SHAP
def _contrib(booster, X, k, p):
    c = booster.predict(X, pred_contrib=True).reshape(len(X), k, p + 1)
    return c[:, :, :p].transpose(0, 2, 1), c[:, :, p]


@pytest.mark.parametrize("name", [
    "regression", "binary", "binary_sigmoid2", "multiclass", "poisson", "zero_as_missing",
    "use_missing_false", "dart", "rf", "single_tree", "deep", "lambdarank",
])
def test_path_dependent_shap_equals_pred_contrib(boosters, data, name):
    X, _ = data
    X = X[:80]
    b = boosters[name]
    native = _read(b)
    k, p = native.ensemble.n_raw, X.shape[1]
    res = TreeShap(native).explain(X, nan_is_missing=False)
    values = res.values if res.values.ndim == 3 else res.values[:, :, None]
    base = np.asarray(res.base_values).reshape(len(X), k)
    phi, phi0 = _contrib(b, X, k, p)
    f = _margin_factor(name, b)
    tol = 1e-5 * max(1.0, np.ptp(phi0 + phi.sum(1)))
    np.testing.assert_allclose(values, f * phi, rtol=0, atol=tol)
    np.testing.assert_allclose(base, f * phi0, rtol=0, atol=tol)


def _dump_predict(node, x, masked):
    """f_S of one tree of LightGBM's dump_model(): a masked feature follows both
    children weighted by their data counts (the path-dependent value function)."""
    if "leaf_value" in node:
        return node["leaf_value"]
    left, right = node["left_child"], node["right_child"]
    count = lambda n: n.get("internal_count", n.get("leaf_count"))  # noqa: E731
    j = node["split_feature"]
    if masked[j]:
        w = count(left) + count(right)
        return (count(left) * _dump_predict(left, x, masked) + count(right) * _dump_predict(right, x, masked)) / w
    v = x[j]
    if node["decision_type"] == "==":
        cats = {int(c) for c in str(node["threshold"]).split("||")}
        go_left = (not np.isnan(v)) and v >= 0 and int(v) in cats
    else:
        mt = node["missing_type"]
        if np.isnan(v) and mt != "NaN":
            v = 0.0
        if (mt == "Zero" and abs(v) <= 1e-35) or (mt == "NaN" and np.isnan(v)):
            go_left = node["default_left"]
        else:
            go_left = v <= node["threshold"]
    return _dump_predict(left if go_left else right, x, masked)


@pytest.mark.parametrize("name", ["regression", "multiclass", "zero_as_missing"])
def test_masked_feature_gets_zero_and_sums_to_masked_prediction(boosters, data, name):
    X, _ = data
    X = X[:25]
    b = boosters[name]
    native = _read(b)
    k = native.ensemble.n_raw
    masked = np.array([False, True, False, True, False])
    res = TreeShap(native).explain(X, missing=masked, nan_is_missing=False)
    values = res.values if res.values.ndim == 3 else res.values[:, :, None]
    assert np.all(values[:, masked, :] == 0)
    trees = b.dump_model()["tree_info"]
    expect = np.zeros((len(X), k))
    for t, tree in enumerate(trees):
        for i, x in enumerate(X):
            expect[i, t % k] += _dump_predict(tree["tree_structure"], x, masked)
    total = np.asarray(res.base_values).reshape(len(X), k) + values.sum(1)
    np.testing.assert_allclose(total, expect, rtol=0, atol=1e-9)


class _RawColumn:
    """A regressor giving one column of a native model's raw margin (for ExactShap)."""

    _estimator_type = "regressor"

    def __init__(self, native, column):
        self.native, self.column = native, column
        self.n_features_in_ = native.n_features_in_

    def predict(self, X):
        return self.native.predict_raw(np.asarray(X, dtype=float))[:, self.column]

    def __sklearn_is_fitted__(self):
        return True


@pytest.mark.parametrize("name", ["regression", "binary", "multiclass", "use_missing_false"])
def test_interventional_shap_equals_exact(boosters, data, name):
    X, _ = data
    X = np.nan_to_num(X[:60], nan=0.5)
    bg, rows = X[:20], X[20:30]
    native = _read(boosters[name])
    res = TreeShap(native, bg, mode="interventional").explain(rows)
    values = res.values if res.values.ndim == 3 else res.values[:, :, None]
    for c in range(native.ensemble.n_raw):
        ex = ExactShap(_RawColumn(native, c), bg).explain(rows)
        np.testing.assert_allclose(values[:, :, c], ex.values, rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["regression", "binary", "multiclass", "poisson"])
def test_tree_pd_equals_brute(boosters, data, name):
    X, _ = data
    X = np.nan_to_num(X[:50], nan=0.5)
    native = _read(boosters[name])
    tree = partial_dependence(native, X, [0], method="tree", grid_resolution=8)
    brute = partial_dependence(native, X, [0], method="brute", grid_resolution=8)
    np.testing.assert_allclose(tree.average, brute.average, rtol=0, atol=1e-10)
    np.testing.assert_allclose(tree.individual, brute.individual, rtol=0, atol=1e-10)


# ---------------------------------------------------------------- categorical
@pytest.fixture(scope="module")
def cat_model():
    rng = np.random.default_rng(0)
    n = 300
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    X["colour"] = pd.Categorical(rng.choice(list("pqrstuvwxyz"), n))
    X["size"] = pd.Categorical(rng.choice([10, 20, 30], n))
    X.loc[::9, "colour"] = np.nan
    X.loc[::7, "a"] = np.nan
    effect = dict(zip("pqrstuvwxyz", rng.normal(size=11) * 2))
    y = (X.a.fillna(0) + X.colour.astype(object).map(effect).fillna(1.0).astype(float)
         + (X["size"] == 20) * 1.5 + rng.normal(size=n) * 0.1)
    model = lgb.LGBMRegressor(n_estimators=15, num_leaves=8, min_child_samples=5, min_data_per_group=5,
                              cat_smooth=1, max_cat_to_onehot=4, verbose=-1, random_state=0).fit(X, y)
    return model, X


def test_categorical_frame_predicts_as_lightgbm(cat_model):
    model, X = cat_model
    text = model.booster_.model_to_string()
    assert "cat_threshold=" in text and "pandas_categorical:[[" in text
    native = read_lightgbm(text.encode())
    ens = native.ensemble
    assert ens.categories[2] == tuple("pqrstuvwxyz") and ens.categories[3] == (10, 20, 30)
    assert ens.categorical_features() == [2, 3]
    np.testing.assert_allclose(native.predict(X), model.predict(X), rtol=1e-12)
    # an unseen category and NaN go where LightGBM sends them (right)
    unseen = X.copy()
    unseen["colour"] = unseen["colour"].cat.add_categories(["NEW"])
    unseen.loc[:30, "colour"] = "NEW"
    unseen.loc[31:40, "colour"] = np.nan
    np.testing.assert_allclose(native.predict(unseen), model.predict(unseen), rtol=1e-12)
    # the same values as plain strings, and as LightGBM's integer codes
    strings = X.copy()
    strings["colour"] = strings["colour"].astype(object)
    np.testing.assert_allclose(native.predict(strings), model.predict(X), rtol=1e-12)
    codes = X.copy()
    for col in ("colour", "size"):
        codes[col] = X[col].cat.codes.replace(-1, np.nan).astype(float)
    np.testing.assert_allclose(native.predict(codes.to_numpy()), model.predict(X), rtol=1e-12)


def test_categorical_shap_equals_pred_contrib(cat_model):
    model, X = cat_model
    native = lightgbm_from_object(model)
    res = TreeShap(native).explain(X, nan_is_missing=False)
    c = model.predict(X, pred_contrib=True)
    np.testing.assert_allclose(res.values, c[:, :-1], rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.base_values, c[:, -1], rtol=0, atol=1e-9)


def test_categorical_interventional_and_pd(cat_model):
    model, X = cat_model
    native = lightgbm_from_object(model)
    Xc = X.copy()
    Xc["a"] = Xc["a"].fillna(0.0)
    Xc["colour"] = Xc["colour"].fillna("p")
    bg, rows = Xc.iloc[:15], Xc.iloc[15:22]
    res = TreeShap(native, bg, mode="interventional").explain(rows)
    ex = ExactShap(native, bg).explain(rows)
    np.testing.assert_allclose(res.values, ex.values, rtol=0, atol=1e-9)
    tree = partial_dependence(native, Xc.iloc[:40], ["colour"], method="tree")
    brute = partial_dependence(native, Xc.iloc[:40], ["colour"], method="brute")
    np.testing.assert_allclose(tree.average, brute.average, rtol=0, atol=1e-10)
    np.testing.assert_allclose(tree.individual, brute.individual, rtol=0, atol=1e-10)


# ----------------------------------------------------------- file contents
def test_importances_and_names(boosters):
    b = boosters["regression"]
    text = b.model_to_string()
    native = read_lightgbm(text.encode())
    loaded = lgb.Booster(model_str=text)
    np.testing.assert_allclose(native.importances["gain"], loaded.feature_importance("gain"), rtol=1e-6)
    np.testing.assert_array_equal(native.importances["split count"], loaded.feature_importance("split"))
    cover = np.zeros(5)
    for tree in b.dump_model()["tree_info"]:
        stack = [tree["tree_structure"]]
        while stack:
            node = stack.pop()
            if "split_feature" in node:
                cover[node["split_feature"]] += node["internal_count"]
                stack += [node["left_child"], node["right_child"]]
    np.testing.assert_array_equal(native.importances["cover"], cover)
    assert not hasattr(native, "feature_names_in_")  # fitted on an array: Column_0 ...
    assert any("named by position" in n for n in native.notes)


def test_sklearn_wrappers_keep_classes_and_names():
    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.normal(size=(150, 3)), columns=["age", "income", "score"])
    y = np.where(X.age + X.income > 0, "yes", "no")
    clf = lgb.LGBMClassifier(n_estimators=8, num_leaves=4, verbose=-1).fit(X, y)
    native = lightgbm_from_object(clf)
    assert list(native.classes_) == ["no", "yes"]
    assert list(native.feature_names_in_) == ["age", "income", "score"]
    np.testing.assert_array_equal(native.predict(X), clf.predict(X))
    np.testing.assert_allclose(native.predict_proba(X), clf.predict_proba(X), rtol=1e-12)
    y3 = np.digitize(X.score, [-0.5, 0.5])
    clf3 = lgb.LGBMClassifier(n_estimators=5, num_leaves=4, verbose=-1).fit(X, np.array(["a", "b", "c"])[y3])
    np.testing.assert_allclose(lightgbm_from_object(clf3).predict_proba(X), clf3.predict_proba(X), rtol=1e-12)
    reg = lgb.LGBMRegressor(n_estimators=5, num_leaves=4, verbose=-1).fit(X, X.age * 2)
    np.testing.assert_allclose(lightgbm_from_object(reg).predict(X), reg.predict(X), rtol=1e-12)
    np.testing.assert_allclose(lightgbm_from_object(reg.booster_).predict(X), reg.predict(X), rtol=1e-12)
    with pytest.raises(InvalidModelError, match="not a fitted LightGBM"):
        lightgbm_from_object(object())


def test_reader_works_without_lightgbm(boosters, tmp_path):
    path = tmp_path / "m.txt"
    boosters["multiclass"].save_model(str(path))
    code = (
        "import sys; sys.modules['lightgbm'] = None\n"
        "from explainers.trees.lightgbm import read_lightgbm\n"
        f"m = read_lightgbm(open({str(path)!r}, 'rb').read())\n"
        "assert 'lightgbm' not in [k for k, v in sys.modules.items() if v is not None]\n"
        "print(m.ensemble.n_trees)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(boosters["multiclass"].num_trees())


# ---------------------------------------------------------------- refusals
@pytest.mark.parametrize("params, match", [
    ({"objective": "regression", "linear_tree": True}, "linear_tree=True"),
    ({"objective": "multiclassova", "num_class": 3}, "multiclassova"),
    ({"objective": "regression", "reg_sqrt": True}, "reg_sqrt=True"),
    ({"objective": "cross_entropy_lambda"}, "cross_entropy_lambda"),
])
def test_unsupported_settings_are_refused(data, params, match):
    X, y = data
    target = np.digitize(y, [11, 17]) if "num_class" in params else (y > 14).astype(float)
    b = _train(params, np.nan_to_num(X), target, 3)
    with pytest.raises(InvalidModelError, match=match):
        _read(b)


# ------------------------------------------------------------ hostile files
@pytest.fixture(scope="module")
def text(data):
    X, y = data
    b = _train({"objective": "regression", "num_leaves": 4}, X, y, 3)
    return b.model_to_string()


def _first_tree_line(text, key, new):
    """Replace the value of ``key`` in the first tree block."""
    return re.sub(rf"(?m)^{key}=.*$", f"{key}={new}", text, count=1)


def _chain(n_leaves):
    """A one-tree model whose splits form a chain n_leaves - 1 deep."""
    n = n_leaves - 1
    right = " ".join(str(i + 1) for i in range(n - 1)) + f" {~(n_leaves - 1)}"
    return "\n".join([
        "tree", "version=v4", "num_class=1", "num_tree_per_iteration=1", "label_index=0",
        "max_feature_idx=0", "objective=regression", "feature_names=x", "feature_infos=[0:1]", "",
        "Tree=0", f"num_leaves={n_leaves}", "num_cat=0", "split_feature=" + " ".join(["0"] * n),
        "threshold=" + " ".join(str(i / n_leaves) for i in range(n)),
        "decision_type=" + " ".join(["2"] * n),
        "left_child=" + " ".join(str(~i) for i in range(n)), f"right_child={right}",
        "leaf_value=" + " ".join(["0.5"] * n_leaves), "leaf_count=" + " ".join(["1"] * n_leaves),
        "internal_count=" + " ".join(str(n_leaves - i) for i in range(n)), "is_linear=0", "shrinkage=1",
        "", "end of trees", "",
    ])


def _cat_tree(boundaries, words, threshold="0"):
    return "\n".join([
        "tree", "version=v4", "num_class=1", "num_tree_per_iteration=1", "label_index=0",
        "max_feature_idx=0", "objective=regression", "feature_names=x", "feature_infos=0:1:2", "",
        "Tree=0", "num_leaves=2", "num_cat=1", "split_feature=0", f"threshold={threshold}",
        "decision_type=1", "left_child=-1", "right_child=-2", "leaf_value=1 2", "leaf_count=3 4",
        "internal_count=7", f"cat_boundaries={boundaries}", f"cat_threshold={words}", "is_linear=0",
        "shrinkage=1", "", "end of trees", "",
    ])


def test_synthetic_files_read(text):
    native = read_lightgbm(_chain(30).encode())
    x = np.linspace(0, 1, 50)[:, None]
    assert native.ensemble.max_depth == 29
    np.testing.assert_allclose(native.predict(x), 0.5)
    cat = read_lightgbm(_cat_tree("0 1", "5").encode())  # codes 0 and 2 go left
    np.testing.assert_allclose(cat.predict(np.array([[0.0], [1.0], [2.0], [3.0], [np.nan], [-1.0], [99.0]])),
                               [1, 2, 1, 2, 2, 2, 2])


@pytest.mark.parametrize("make, match", [
    (lambda t: t[: len(t) // 2], "truncated"),
    (lambda t: t[: t.index("Tree=1") + 60], "truncated"),
    (lambda t: t.replace("end of trees", ""), "truncated"),
    (lambda t: t.replace("\nTree=1", "\nbogus\nTree=1"), "cut short"),
    (lambda t: b"\xff\xfe garbage", "UTF-8"),
    (lambda t: "{\"learner\": {}}", "not a LightGBM"),
    (lambda t: _first_tree_line(t, "num_leaves", 10**9), "limit|needs"),
    (lambda t: _first_tree_line(t, "num_leaves", -3), "num_leaves=-3"),
    (lambda t: _first_tree_line(t, "num_leaves", 5), "needs"),
    (lambda t: _first_tree_line(t, "left_child", "1 7 -2"), "outside the tree"),
    (lambda t: _first_tree_line(t, "right_child", "2 -3 -9"), "outside the tree"),
    (lambda t: _first_tree_line(t, "left_child", "1 0 -2"), "cycle|root"),
    (lambda t: _first_tree_line(t, "left_child", "1 2 -2"), "child of 2 nodes|cycle|connected"),
    (lambda t: _first_tree_line(t, "threshold", "nan 0.5 0.7"), "threshold"),
    (lambda t: _first_tree_line(t, "leaf_value", "1 inf 2 3"), "not finite"),
    (lambda t: _first_tree_line(t, "leaf_value", "1 x 2 3"), "not a number"),
    (lambda t: _first_tree_line(t, "leaf_count", "1 -5 2 3"), "negative"),
    (lambda t: _first_tree_line(t, "internal_count", "0 1 1"), "internal_count"),
    (lambda t: _first_tree_line(t, "split_feature", "0 9 1"), "feature 9"),
    (lambda t: _first_tree_line(t, "decision_type", "14 2 2"), "missing-value type"),
    (lambda t: _first_tree_line(t, "decision_type", "300 2 2"), "decision type"),
    (lambda t: _first_tree_line(t, "split_gain", "1 2"), "needs"),
    (lambda t: t.replace("Tree=1", "Tree=7"), "Tree=1"),
    (lambda t: t.replace("tree_sizes=", "tree_sizes=1 "), "tree sizes"),
    (lambda t: t.replace("max_feature_idx=4", "max_feature_idx=9"), "names 5 features"),
    (lambda t: t.replace("num_class=1", "num_class=x"), "whole number"),
    (lambda t: t.replace("objective=regression", "objective=mystery"), "mystery"),
    (lambda t: t.replace("objective=regression", "objective=binary sigmoid:-1"), "sigmoid"),
    (lambda t: t.replace("num_tree_per_iteration=1", "num_tree_per_iteration=2"), "num_tree_per_iteration"),
    (lambda t: t.rstrip() + "\npandas_categorical:[[1, 2\n", "JSON"),
    (lambda t: t.rstrip() + "\npandas_categorical:" + "[" * 100000 + "\n", "JSON"),
    (lambda t: t.rstrip() + "\npandas_categorical:[[{\"a\": 1}]]\n", "plain value"),
    (lambda t: _chain(1500), "levels deep|limit"),
    (lambda t: _cat_tree("0 1000000000", "5"), "cat_boundaries"),
    (lambda t: _cat_tree("0 2", "5 " * 3000000), "cat_boundaries"),
    (lambda t: _cat_tree("0 3000", " ".join(["4294967295"] * 3000)), "category code"),
    (lambda t: _cat_tree("0 1", "5", threshold="3"), "bitset"),
    (lambda t: _cat_tree("0 1", "-5"), "32 bits"),
    (lambda t: _cat_tree("1 1", "5"), "cat_boundaries"),
])
def test_hostile_files_are_refused_cheaply(text, make, match):
    bad = make(text)
    data = bad if isinstance(bad, bytes) else bad.encode()
    with peak_allocation() as mem, pytest.raises(InvalidModelError, match=match):
        read_lightgbm(data)
    # refused from what the file says, before allocating what it claims (10**9 leaves, 10**9 words)
    assert mem.peak < file_budget(data), (mem, len(data))


@pytest.mark.parametrize("var, value, match", [
    ("GLASSBOX_MAX_TREES", "2", "more than 2 trees"),
    ("GLASSBOX_MAX_NODES", "10", "tree nodes|limit"),
    ("GLASSBOX_MAX_FEATURES", "3", "5 features"),
    ("GLASSBOX_MAX_TREE_DEPTH", "1", "levels"),
])
def test_limits_apply(text, monkeypatch, var, value, match):
    monkeypatch.setenv(var, value)
    with pytest.raises(InvalidModelError, match=match):
        read_lightgbm(text.encode())


def test_truncated_pandas_categorical_is_refused(cat_model):
    text = cat_model[0].booster_.model_to_string().rstrip()
    with pytest.raises(InvalidModelError, match="JSON"):
        read_lightgbm(text[:-3].encode())


def test_pandas_categorical_that_does_not_fit_is_noted(cat_model):
    model, X = cat_model
    text = model.booster_.model_to_string()
    head, _, tail = text.rpartition("pandas_categorical:")
    extra = json.loads(tail) + [["u", "v"]]
    native = read_lightgbm((head + "pandas_categorical:" + json.dumps(extra) + "\n").encode())
    assert native.ensemble.categories is None or all(c is None for c in native.ensemble.categories)
    assert any("category codes" in n for n in native.notes)


def test_column_names_with_spaces_match_the_files_underscores():
    """LightGBM writes "Monthly income ($)" as "Monthly_income_($)": the user's data still matches."""
    import lightgbm as lgb

    from explainers import load_data, load_model
    from explainers.shap import explain

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"Monthly income ($)": rng.normal(3000, 500, 200), "Age (years)": rng.integers(18, 70, 200)
                       .astype(float), "Plan": pd.Categorical(rng.choice(["a", "b"], 200))})
    y = df["Monthly income ($)"] / 100 + (df["Plan"] == "b") * 5
    booster = lgb.LGBMRegressor(n_estimators=15, verbose=-1).fit(df, y).booster_
    model = load_model(booster.model_to_string().encode(), filename="spend.txt")
    assert list(model.feature_names_in_) == ["Monthly_income_($)", "Age_(years)", "Plan"]
    ds = load_data(df.assign(spend=y).to_csv(index=False).encode(), model=model, target="spend", filename="d.csv")
    assert any("spaces read as underscores" in n for n in ds.notices)
    np.testing.assert_allclose(model.predict(ds.X), booster.predict(df), rtol=1e-12)
    res = explain(model, df.iloc[:5])  # a frame with the user's own names, from Python
    np.testing.assert_allclose(res.values.sum(1) + res.base_values, booster.predict(df.iloc[:5]), atol=1e-9)


def test_batch_reads_a_file_whose_columns_have_spaces(tmp_path):
    """The batch command matches the file's "Monthly income ($)" to LightGBM's "Monthly_income_($)" too,
    and load_attributions reads the rows back with their data."""
    import lightgbm as lgb

    from explainers.batch import explain_file, load_attributions
    from explainers.shap import explain

    rng = np.random.default_rng(1)
    df = pd.DataFrame({"Monthly income ($)": rng.normal(3000, 500, 300), "Age (years)": rng.integers(18, 70, 300)
                       .astype(float)})
    y = df["Monthly income ($)"] / 100 - df["Age (years)"]
    booster = lgb.LGBMRegressor(n_estimators=10, verbose=-1).fit(df, y).booster_
    (tmp_path / "m.txt").write_text(booster.model_to_string())
    df.to_parquet(tmp_path / "d.parquet")
    rep = explain_file(tmp_path / "m.txt", tmp_path / "d.parquet", tmp_path / "out")
    assert any("spaces read as underscores" in n for n in rep.notices)
    out = pd.read_parquet(tmp_path / "out")
    assert list(out.columns[1:3]) == ["shap_Monthly_income_($)", "shap_Age_(years)"]
    np.testing.assert_allclose(out["prediction"], booster.predict(df), atol=1e-9)
    want = explain(read_lightgbm(booster.model_to_string().encode()), df).values
    np.testing.assert_allclose(out[["shap_Monthly_income_($)", "shap_Age_(years)"]].to_numpy(), want, atol=1e-12)
    res = load_attributions(tmp_path / "out", sample=20)
    assert res.params["data_source"] == "data file" and not res.data.isna().any().any()


def test_categorical_inputs_are_cut_toward_zero_as_lightgbm_does():
    """LightGBM casts a categorical input to int (−0.5 and −0.99 are category 0, 1.7 is 1);
    Glassbox sent (−1, 0) where unknown categories go (2.4008 against 1.1482 in the report)."""
    rng = np.random.default_rng(0)
    n = 2000
    X = pd.DataFrame({"c": rng.integers(0, 5, n).astype(float), "x": rng.normal(size=n)})
    y = np.where(X.c == 0, 2.0, np.where(X.c == 1, -1.0, 0.5)) + X.x * 0.1
    b = lgb.train({"verbose": -1, "min_data_per_group": 5, "cat_smooth": 1, "num_leaves": 8},
                  lgb.Dataset(X, y, categorical_feature=["c"]), 5)
    model = read_lightgbm(b.model_to_string().encode())
    vals = np.array([-0.5, -0.99, -1.0, -1.5, 0.5, 0.99, 1.7, 4.2, 5.0, 63.9, 64.0, 1e10, -1e10,
                     2.0 ** 31 + 0.5, np.nan, -0.0])
    rows = np.column_stack([vals, rng.normal(size=len(vals))])
    lib = b.predict(rows)
    assert lib[0] != b.predict(np.array([[-1.0, rows[0, 1]]]))[0]  # the case that differed
    np.testing.assert_allclose(model.predict(rows), lib, rtol=0, atol=1e-12)
    res = TreeShap(model).explain(rows)
    np.testing.assert_allclose(res.values.sum(axis=1) + res.base_values, lib, rtol=0, atol=1e-9)
    # a grid value goes down the trees as an input does (PD's grids hold categories, but the walk
    # takes any value)
    from explainers.trees.inputs import grid_codes

    assert list(grid_codes(model.ensemble, 0, np.array([-0.5, 1.7, -1.5]))) == [0.0, 1.0, -1.0]


@pytest.mark.parametrize("field, value", [("leaf_count", "inf"), ("internal_count", "5e-324"),
                                          ("leaf_count", "-1"), ("internal_count", "0"), ("leaf_count", "2.5"),
                                          ("internal_count", "nan")])
def test_counts_lightgbm_refuses_are_refused(field, value):
    """Counts LightGBM itself refuses loaded here and gave NaN/inf SHAP values without an error."""
    import re as _re

    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    b = lgb.train({"verbose": -1, "num_leaves": 4}, lgb.Dataset(X, X[:, 0]), 2)
    text = b.model_to_string()
    line = _re.search(rf"^{field}=(.*)$", text, flags=_re.M)
    numbers = line.group(1).split()
    numbers[0] = value
    bad = text.replace(line.group(0), f"{field}={' '.join(numbers)}", 1)
    with pytest.raises(InvalidModelError, match=f"{field} is .*whole number"):
        read_lightgbm(bad.encode())
