"""Partial dependence and ICE: brute equals scikit-learn, tree equals brute."""
import itertools
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.decomposition import PCA
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_friedman1
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
from sklearn.inspection import partial_dependence as sk_pd
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from explainers import ModelAdapter
from explainers.errors import InvalidFeatureError, InvalidParameterError
from explainers.pdp import PartialDependenceResult, partial_dependence

TOL = dict(rtol=0, atol=1e-10)


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def num_data():
    X, y = make_friedman1(160, n_features=5, random_state=0)
    score = X[:, 0] + X[:, 1] - X[:, 3]
    y2 = (score > np.median(score)).astype(int)
    y3 = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))
    return X, y, y2, y3


@pytest.fixture(scope="module")
def mixed_data():
    """A DataFrame with a categorical column, for Pipelines."""
    rng = np.random.default_rng(3)
    n = 150
    X = pd.DataFrame(
        {
            "size": rng.normal(10, 2, n),
            "colour": rng.choice(["red", "green", "blue"], n),
            "age": rng.uniform(0, 5, n),
        }
    )
    y = X["size"] + X["colour"].map({"red": 2.0, "green": -1.0, "blue": 0.0}) * X["age"]
    pre = ColumnTransformer(
        [("cat", OneHotEncoder(), ["colour"]), ("num", StandardScaler(), ["size", "age"])]
    )
    reg = make_pipeline(pre, Ridge(alpha=0.1)).fit(X, y)
    clf = make_pipeline(pre, LogisticRegression(max_iter=500)).fit(X, (y > y.median()).astype(int))
    return X, reg, clf


def _sk(model, X, feats, grid, **kw):
    """scikit-learn's brute result on our grid: (average, individual) with classes last."""
    names = list(X.columns) if isinstance(X, pd.DataFrame) else None
    idx = [names.index(f) if names else f for f in feats]
    custom = {f: g for f, g in zip(idx, grid)}
    cat = [i for f, i, g in zip(feats, idx, grid) if g.dtype == object] or None
    r = sk_pd(model, X, idx, method="brute", kind="both", custom_values=custom,
              categorical_features=cat, **kw)
    return np.moveaxis(r["average"], 0, -1), np.moveaxis(r["individual"], 0, -1)


# --------------------------------------------------------- brute vs sklearn
@pytest.mark.parametrize("feats", [[0], [1, 3]])
@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
def test_brute_equals_sklearn(num_data, task, feats):
    X, y, y2, y3 = num_data
    if task == "regression":
        model = make_pipeline(StandardScaler(), Ridge()).fit(X, y)
    else:
        model = LogisticRegression(max_iter=500).fit(X, y2 if task == "binary" else y3)
    r = partial_dependence(model, X, feats, grid_resolution=7, method="brute")
    assert r.method == "brute"
    avg, ice = _sk(model, X, feats, r.grid)
    if task == "binary":  # scikit-learn keeps the positive class only
        np.testing.assert_allclose(r.average[..., 1], avg[..., 0], **TOL)
        np.testing.assert_allclose(r.individual[..., 1], ice[..., 0], **TOL)
    elif task == "regression":
        np.testing.assert_allclose(r.average, avg[..., 0], **TOL)
        np.testing.assert_allclose(r.individual, ice[..., 0], **TOL)
    else:
        np.testing.assert_allclose(r.average, avg, **TOL)
        np.testing.assert_allclose(r.individual, ice, **TOL)


def test_default_grid_matches_sklearn(num_data):
    X, y, *_ = num_data
    model = Ridge().fit(X, y)
    r = partial_dependence(model, X, [2], grid_resolution=9, percentiles=(0.1, 0.8), kind="average")
    sk = sk_pd(model, X, [2], grid_resolution=9, percentiles=(0.1, 0.8), method="brute")
    np.testing.assert_allclose(r.grid[0], sk["grid_values"][0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(r.average, sk["average"][0], **TOL)
    assert r.individual is None


@pytest.mark.parametrize("feats", [["colour"], ["colour", "age"], ["size", "age"]])
@pytest.mark.parametrize("which", ["reg", "clf"])
def test_brute_pipeline_with_categorical_equals_sklearn(mixed_data, feats, which):
    X, reg, clf = mixed_data
    model = reg if which == "reg" else clf
    r = partial_dependence(model, X, feats, grid_resolution=6)
    assert r.method == "brute"  # a Pipeline never takes the tree path
    avg, ice = _sk(model, X, feats, r.grid)
    got_avg = r.average[..., 1] if which == "clf" else r.average
    got_ice = r.individual[..., 1] if which == "clf" else r.individual
    np.testing.assert_allclose(got_avg, avg[..., 0], **TOL)
    np.testing.assert_allclose(got_ice, ice[..., 0], **TOL)


def test_categorical_grid_in_the_models_order_with_counts(mixed_data):
    """The encoder's categories give the order, whatever the rows' or a category dtype's."""
    X, reg, _ = mixed_data
    r = partial_dependence(reg, X, ["colour"])
    assert r.feature_kinds == ("categorical",)
    assert list(r.grid[0]) == list(reg[0].named_transformers_["cat"].categories_[0]) == ["blue", "green", "red"]
    assert r.counts.tolist() == [int((X["colour"] == c).sum()) for c in r.grid[0]]
    assert r.counts.sum() == len(X) and r.deciles[0].size == 0
    Xc = X.assign(colour=pd.Categorical(X["colour"], categories=["red", "green", "blue"]))
    rc = partial_dependence(reg, Xc, ["colour"], kind="average")
    assert list(rc.grid[0]) == ["blue", "green", "red"]



# ------------------------------------------------------------- ICE identities
@pytest.mark.parametrize("method", ["brute", "tree"])
def test_ice_mean_is_pdp_and_centering(num_data, method):
    X, y, *_ = num_data
    rf = RandomForestRegressor(5, max_depth=4, random_state=0).fit(X, y)
    r = partial_dependence(rf, X, [0], grid_resolution=8, method=method, sample=40, random_state=1)
    assert r.individual.shape == (40, 8) and len(r.row_indices) == 40
    np.testing.assert_allclose(r.individual.mean(axis=0), r.average, rtol=0, atol=1e-12)
    # the same rows through brute give the same curves
    sub = partial_dependence(rf, X[r.row_indices], [0], custom_values={0: r.grid[0]}, method="brute")
    np.testing.assert_allclose(sub.individual, r.individual, **TOL)
    c = partial_dependence(rf, X, [0], grid_resolution=8, method=method, centered=True, sample=40, random_state=1)
    assert c.centered and np.all(c.individual[:, 0] == 0)
    np.testing.assert_allclose(c.individual, r.individual - r.individual[:, :1], **TOL)
    np.testing.assert_allclose(c.average, c.individual.mean(axis=0), rtol=0, atol=1e-12)
    c2 = partial_dependence(rf, X, [0, 1], grid_resolution=5, method=method, centered=True)
    assert np.all(c2.individual[:, 0, 0] == 0) and c2.average[0, 0] == 0


# ------------------------------------------------------------ tree vs brute
def _tree_models():
    return [
        ("tree_reg", DecisionTreeRegressor(max_depth=5, random_state=0), "y"),
        ("tree_clf", DecisionTreeClassifier(max_depth=5, random_state=0), "y3"),
        ("rf_reg", RandomForestRegressor(5, max_depth=5, random_state=0), "y"),
        ("rf_clf", RandomForestClassifier(5, max_depth=5, random_state=0), "y2"),
        ("et_reg", ExtraTreesRegressor(5, max_depth=5, random_state=0), "y"),
        ("et_clf", ExtraTreesClassifier(5, max_depth=5, random_state=0), "y3"),
        ("gb_reg", GradientBoostingRegressor(n_estimators=10, max_depth=3, random_state=0), "y"),
        ("gb_clf2", GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0), "y2"),
        ("gb_clf3", GradientBoostingClassifier(n_estimators=6, max_depth=3, random_state=0), "y3"),
        ("hgb_reg", HistGradientBoostingRegressor(max_iter=10, random_state=0), "y"),
        ("hgb_clf2", HistGradientBoostingClassifier(max_iter=10, random_state=0), "y2"),
        ("hgb_clf3", HistGradientBoostingClassifier(max_iter=6, random_state=0), "y3"),
    ]


@pytest.fixture(scope="module")
def tree_fits(num_data):
    X, y, y2, y3 = num_data
    # NaN in a non-target column exercises the missing-value routing
    XN = X.copy()
    XN[::9, 2] = np.nan
    targets = dict(y=y, y2=y2, y3=y3)
    out = {}
    for name, model, t in _tree_models():
        Xf = XN if name.startswith(("hgb", "rf", "tree", "et")) else X
        out[name] = (model.fit(Xf, targets[t]), Xf)
    return out


@pytest.mark.parametrize("feats", [[0], [3, 1]])
@pytest.mark.parametrize("name", [m[0] for m in _tree_models()])
def test_tree_equals_brute(tree_fits, name, feats):
    model, Xf = tree_fits[name]
    t = partial_dependence(model, Xf, feats, grid_resolution=9, method="auto")
    assert t.method == "tree"
    b = partial_dependence(model, Xf, feats, grid_resolution=9, method="brute")
    assert t.individual.shape == b.individual.shape
    np.testing.assert_allclose(t.individual, b.individual, **TOL)
    np.testing.assert_allclose(t.average, b.average, **TOL)
    # kind="average" takes the chunked path and gives the same numbers
    a = partial_dependence(model, Xf, feats, grid_resolution=9, method="tree", kind="average")
    np.testing.assert_allclose(a.average, b.average, **TOL)


@pytest.mark.parametrize("name", ["hgb_reg", "rf_clf", "gb_clf3", "tree_reg"])
def test_tree_blocks_of_rows(tree_fits, name, monkeypatch):
    """Rows walk the trees in blocks (a partial last block, one-row blocks): same numbers."""
    model, Xf = tree_fits[name]
    b = partial_dependence(model, Xf, [0, 2], grid_resolution=7, method="brute")
    for ice_rows, sum_rows in [(7, 13), (1, 1), (len(Xf) - 1, len(Xf) + 5)]:
        monkeypatch.setattr(tree_pd, "_TREE_BLOCK_ROWS", (ice_rows, ice_rows, 10**9))
        monkeypatch.setattr(tree_pd, "_TREE_SUM_BLOCK_ROWS", (sum_rows, sum_rows, 10**12))
        t = partial_dependence(model, Xf, [0, 2], grid_resolution=7, method="tree")
        a = partial_dependence(model, Xf, [0, 2], grid_resolution=7, method="tree", kind="average")
        np.testing.assert_allclose(t.individual, b.individual, **TOL)
        np.testing.assert_allclose(a.average, b.average, **TOL)


@pytest.mark.parametrize("name", ["hgb_reg", "rf_clf", "gb_clf3"])
def test_tree_parts_split_the_trees(tree_fits, name, monkeypatch):
    """Where there are fewer blocks of rows than threads, the trees of a block are walked in
    parts and added: any number of parts (more than the trees too) gives the same numbers."""
    model, Xf = tree_fits[name]
    b = partial_dependence(model, Xf, [0, 2], grid_resolution=7, method="brute")
    one = None
    from explainers.trees import flatten_model

    n_trees = len(flatten_model(model).roots)
    blocks = [tree_pd._TREE_BLOCK_ROWS, (7, 7, 10**9)]  # one block, and several (a partial last one)
    for parts, bounds in itertools.product((1, 2, 3, n_trees + 5), blocks):  # more parts than trees too
        monkeypatch.setattr(tree_pd, "tree_parts", lambda n, block, n_trees, k=parts: k)
        monkeypatch.setattr(tree_pd, "_TREE_BLOCK_ROWS", bounds)
        monkeypatch.setattr(tree_pd, "ONE_THREAD_WORK", 0)  # every thread, small as the work is
        monkeypatch.setattr(mask_walk, "walk_plan", lambda *a, **k: mask_walk.no_plan())  # the group walk's parts
        t = partial_dependence(model, Xf, [0, 2], grid_resolution=7, method="tree")
        a = partial_dependence(model, Xf, [0], grid_resolution=9, method="tree", kind="average")
        np.testing.assert_allclose(t.individual, b.individual, **TOL)
        np.testing.assert_allclose(t.average, b.average, **TOL)
        if one is None:
            one = a
        np.testing.assert_allclose(a.average, one.average, rtol=1e-12, atol=1e-12)


def test_ice_block_rows_bounds():
    """Blocks are balanced over threads and bounded by rows and by values held."""
    import numba

    lo, hi, values = tree_pd._TREE_BLOCK_ROWS
    before = numba.get_num_threads()
    try:
        for threads in range(1, min(4, numba.config.NUMBA_NUM_THREADS) + 1):
            numba.set_num_threads(threads)
            for n in (1, 31, 1000, 4097, 100_000):
                for per_row in (1, 150, 7500, 10**7):
                    b = tree_pd.ice_block_rows(n, per_row)
                    n_blocks = -(-n // b)
                    assert lo <= b <= hi
                    assert b == lo or b * per_row <= values
                    # whole rounds of blocks over the threads, unless a block is at its floor
                    assert b == lo or n_blocks % threads == 0 or n_blocks < threads
    finally:
        numba.set_num_threads(before)


def test_tree_grid_points_on_thresholds(tree_fits):
    """Grid values exactly on split thresholds (float32 rounding, ties go left)."""
    model, Xf = tree_fits["rf_reg"]
    thr = np.concatenate([e.tree_.threshold[e.tree_.feature == 0] for e in model.estimators_])
    grid = np.unique(np.concatenate([thr[:15], np.nextafter(thr[:5], np.inf)]))
    t = partial_dependence(model, Xf, [0], custom_values={0: grid}, method="tree")
    b = partial_dependence(model, Xf, [0], custom_values={0: grid}, method="brute")
    np.testing.assert_allclose(t.individual, b.individual, **TOL)


def test_tree_class_index_and_raw_margin(tree_fits):
    model, Xf = tree_fits["gb_clf3"]
    t = partial_dependence(model, Xf, [0], grid_resolution=5, class_index=2)
    b = partial_dependence(model, Xf, [0], grid_resolution=5, class_index=2, method="brute")
    assert t.method == "tree" and t.average.shape == (5,) and t.output_names == ["2"]
    np.testing.assert_allclose(t.individual, b.individual, **TOL)
    raw = ModelAdapter(model, output="raw")
    tr = partial_dependence(raw, Xf, [0], grid_resolution=5)
    br = partial_dependence(raw, Xf, [0], grid_resolution=5, method="brute")
    assert tr.method == "tree"
    np.testing.assert_allclose(tr.individual, br.individual, **TOL)


# ---------------------------------------------------------------- recursion
@pytest.mark.parametrize("name", ["tree_reg", "rf_reg", "gb_reg", "gb_clf2", "gb_clf3", "hgb_reg", "hgb_clf3"])
@pytest.mark.parametrize("feats", [[0], [0, 3]])
def test_recursion_equals_sklearn(num_data, name, feats):
    X, y, y2, y3 = num_data
    model = dict((n, m) for n, m, _ in _tree_models())[name]
    target = dict((n, t) for n, _, t in _tree_models())[name]
    model.fit(X, dict(y=y, y2=y2, y3=y3)[target])
    r = partial_dependence(model, X, feats, grid_resolution=7, method="recursion", kind="average")
    assert r.method == "recursion" and r.individual is None
    sk = sk_pd(model, X, feats, method="recursion", kind="average", custom_values=dict(zip(feats, r.grid)))
    sk_avg = np.moveaxis(sk["average"], 0, -1)
    # ours includes the boosting init / baseline that scikit-learn leaves out
    from explainers.trees import flatten_model

    base = flatten_model(model).base if name.startswith(("gb", "hgb")) else np.zeros(1)
    expected = sk_avg + base if sk_avg.shape[-1] > 1 else sk_avg[..., 0] + base[0]
    np.testing.assert_allclose(r.average, expected, rtol=0, atol=1e-10)


def test_recursion_differs_from_brute_on_correlated_data():
    rng = np.random.default_rng(0)
    x0 = rng.uniform(0, 1, 300)
    x1 = x0 + rng.normal(0, 0.05, 300)  # nearly a copy of x0
    kw = dict(grid_resolution=10, kind="average")

    def gap(X):
        rf = RandomForestRegressor(20, max_depth=6, random_state=0).fit(X, 4 * X[:, 0] * X[:, 1])
        rec = partial_dependence(rf, X, [0], method="recursion", **kw).average
        brute = partial_dependence(rf, X, [0], method="brute", **kw).average
        tree = partial_dependence(rf, X, [0], method="tree", **kw).average
        np.testing.assert_allclose(tree, brute, **TOL)
        return np.abs(rec - brute).max(), np.ptp(rec) - np.ptp(brute)

    # Brute keeps each row's own x1 (the marginal distribution). Recursion weights
    # the x1 splits below an x0 split by the training rows in that x0 region, so it
    # follows x1 given x0 and picks up x1's effect too: a much steeper curve.
    corr_gap, steeper = gap(np.column_stack([x0, x1]))
    assert corr_gap > 0.3 and steeper > 0.4, (corr_gap, steeper)
    # with independent features the two agree closely
    indep_gap, _ = gap(np.column_stack([x0, rng.permutation(x1)]))
    assert indep_gap < 0.1, indep_gap


# ------------------------------------------------------------- result shape
def test_result_fields_and_pickle(tree_fits):
    model, Xf = tree_fits["hgb_clf3"]
    r = partial_dependence(model, Xf, [0, 1], grid_resolution=6, kind="both")
    assert isinstance(r, PartialDependenceResult)
    assert r.feature_names == ("x0", "x1") and r.feature_kinds == ("numeric", "numeric")
    assert r.average.shape == (6, 6, 3) and r.individual.shape == (len(Xf), 6, 6, 3)
    assert r.counts.shape == (6, 6) and r.counts.dtype == np.int64
    assert r.output_names == ["0", "1", "2"] and r.task == "multiclass"
    assert [d.shape for d in r.deciles] == [(9,), (9,)]
    assert r.params["grid_resolution"] == 6 and r.grid_shape == (6, 6)
    back = pickle.loads(pickle.dumps(r))
    np.testing.assert_array_equal(back.individual, r.individual)
    a = partial_dependence(model, Xf, [0, 1], grid_resolution=6, kind="average", class_index=0)
    assert a.average.shape == (6, 6) and a.individual is None


def test_counts_1d_and_2d():
    rng = np.random.default_rng(1)
    x0 = rng.uniform(0, 1, 250)
    X = np.column_stack([x0, x0 + rng.normal(0, 0.02, 250), rng.normal(size=250)])
    rf = RandomForestRegressor(3, max_depth=3, random_state=0).fit(X, X[:, 0])
    r = partial_dependence(rf, X, [0], custom_values={0: [0.0, 0.5, 1.0]}, kind="average")
    # bins: [-0.25, 0.25), [0.25, 0.75), [0.75, 1.25]
    expected = [np.sum(x0 < 0.25), np.sum((x0 >= 0.25) & (x0 < 0.75)), np.sum(x0 >= 0.75)]
    assert r.counts.tolist() == expected and r.counts.sum() == 250
    r2 = partial_dependence(rf, X, [0, 1], grid_resolution=6, kind="average")
    assert r2.counts.shape == (6, 6)
    # correlated pair: the off-diagonal corners have no data behind them
    assert r2.counts[0, -1] == 0 and r2.counts[-1, 0] == 0 and np.trace(r2.counts) > 0


def test_auto_picks_brute_for_pipeline_and_tree_for_bare_model(num_data):
    X, y, *_ = num_data
    # PCA mixes columns: the pipeline does not fold into its trees (a scaler would)
    pipe = make_pipeline(PCA(n_components=2), DecisionTreeRegressor(max_depth=3)).fit(X, y)
    assert partial_dependence(pipe, X, [0], grid_resolution=4).method == "brute"
    folded = make_pipeline(StandardScaler(), DecisionTreeRegressor(max_depth=3)).fit(X, y)
    assert partial_dependence(folded, X, [0], grid_resolution=4).method == "tree"
    with pytest.raises(InvalidParameterError, match="method='tree' does not apply"):
        partial_dependence(pipe, X, [0], method="tree")


# -------------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def small_model(mixed_data):
    X, reg, _ = mixed_data
    Xc = X.assign(const=1.5)
    # the ColumnTransformer drops 'const', but the model still takes it as input
    return clone(reg).fit(Xc, Xc["size"]), Xc


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(features=["nope"]), InvalidFeatureError, "Unknown feature 'nope'"),
        (dict(features=[7]), InvalidFeatureError, "out of range"),
        (dict(features=["size", "age", "colour"]), InvalidFeatureError, "one or two features"),
        (dict(features=["size", "size"]), InvalidFeatureError, "the same"),
        (dict(features=["size"], grid_resolution=1), InvalidParameterError,
         r"'grid_resolution' parameter of partial_dependence must be an int >= 2\. Got 1"),
        (dict(features=["const"]), InvalidFeatureError, "'const' is constant"),
        (dict(features=["colour"], custom_values={"colour": [0.5, 1.0]}), InvalidParameterError,
         "'colour' is categorical.*not a numeric grid"),
        (dict(features=["size"], custom_values={"size": ["a"]}), InvalidParameterError, "non-numeric"),
        (dict(features=["size"], kind="all"), InvalidParameterError, "'kind' parameter"),
        (dict(features=["size"], method="fast"), InvalidParameterError, "'method' parameter"),
        (dict(features=["size"], percentiles=(0.9, 0.1)), InvalidParameterError, "'percentiles'"),
        (dict(features=["size"], sample=0), InvalidParameterError, "'sample'"),
        (dict(features=["size"], method="recursion"), InvalidParameterError, "averages only"),
        (dict(features=["size"], method="recursion", kind="average"), InvalidParameterError,
         "does not apply"),
    ],
)
def test_bad_input(small_model, kwargs, err, match):
    model, X = small_model
    with pytest.raises(err, match=match):
        partial_dependence(model, X, **kwargs)


def test_recursion_binary_margin_and_class_index(tree_fits):
    model, Xf = tree_fits["gb_clf2"]
    pos = partial_dependence(model, Xf, [0], grid_resolution=5, method="recursion", kind="average")
    neg = partial_dependence(model, Xf, [0], grid_resolution=5, method="recursion", kind="average",
                             class_index=0)
    assert pos.output_names == ["log-odds(1)"] and neg.output_names == ["log-odds(0)"]
    np.testing.assert_allclose(neg.average, -pos.average, rtol=0, atol=1e-12)


# ------------------------------------------- brute with a shared first layer
from sklearn.linear_model import LinearRegression  # noqa: E402
from sklearn.neural_network import MLPClassifier, MLPRegressor  # noqa: E402
from sklearn.preprocessing import MinMaxScaler  # noqa: E402

import explainers.effects.pdp as pdp_module  # noqa: E402
import explainers.effects.tree_pd as tree_pd  # noqa: E402
import explainers.trees.mask_walk as mask_walk  # noqa: E402


def _layer_models():
    return {
        "mlp_reg": (lambda: MLPRegressor(hidden_layer_sizes=(12, 6), max_iter=300, random_state=0), 0),
        "mlp_bin": (lambda: MLPClassifier(hidden_layer_sizes=(10,), max_iter=300, random_state=0), 1),
        # three ReLU layers: the second layer is not the output layer (no fused output)
        "mlp_deep": (lambda: MLPRegressor(hidden_layer_sizes=(9, 7, 5), max_iter=300, random_state=0), 0),
        "mlp_3": (lambda: MLPClassifier(hidden_layer_sizes=(10,), activation="tanh", max_iter=300,
                                        random_state=0), 2),
        "scaler_mlp": (lambda: make_pipeline(StandardScaler(), MLPRegressor(
            hidden_layer_sizes=(10,), max_iter=300, random_state=0)), 0),
        "scaler_logreg_bin": (lambda: make_pipeline(StandardScaler(), LogisticRegression()), 1),
        "scaler_logreg_3": (lambda: make_pipeline(StandardScaler(), LogisticRegression()), 2),
        "minmax_ridge": (lambda: make_pipeline(MinMaxScaler(), Ridge()), 0),
        "linreg": (lambda: LinearRegression(), 0),
    }


@pytest.fixture(scope="module")
def layer_fits(num_data):
    import warnings

    X, y, y2, y3 = num_data
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MLP convergence
        for name, (make, target) in _layer_models().items():
            fits[name] = make().fit(X, (y, y2, y3)[target])
    return fits


def _sk_layout(sk_arr, ours):
    """sklearn puts outputs first (and keeps only the positive class for binary)."""
    arr = np.moveaxis(sk_arr, 0, -1)
    if arr.shape[-1] == 1:
        arr = arr[..., 0]
    if ours.shape != arr.shape and ours.shape[-1] == 2:  # binary: sklearn has class 1 only
        ours = ours[..., 1]
    return arr, ours


@pytest.mark.parametrize("name", list(_layer_models()))
@pytest.mark.parametrize("feats", [[0], [1, 3]])
def test_first_layer_brute_equals_sklearn_and_generic(layer_fits, num_data, monkeypatch, name, feats):
    X = num_data[0]
    model = layer_fits[name]
    r = partial_dependence(model, X, feats, grid_resolution=6, kind="both", method="brute")
    assert r.method == "brute" and r.params["brute_path"] == "first-layer"
    assert r.individual.shape[: 1 + len(feats)] == (len(X),) + r.grid_shape
    custom = {f: g for f, g in zip(feats, r.grid)}
    s = sk_pd(model, X, feats, custom_values=custom, kind="both", method="brute")
    avg, ours_avg = _sk_layout(s["average"], r.average)
    ind, ours_ind = _sk_layout(s["individual"], r.individual)
    np.testing.assert_allclose(ours_avg, avg, **TOL)
    np.testing.assert_allclose(ours_ind, ind, **TOL)
    # the generic brute path (first-layer plan disabled) gives the same numbers
    import explainers.effects._layers as layers

    monkeypatch.setattr(layers, "first_layer_plan", lambda *a, **k: None)
    g = partial_dependence(model, X, feats, grid_resolution=6, kind="both", method="auto")
    assert g.params["brute_path"] == "generic"
    np.testing.assert_allclose(r.average, g.average, **TOL)
    np.testing.assert_allclose(r.individual, g.individual, **TOL)


@pytest.mark.parametrize("name", ["mlp_reg", "mlp_bin", "mlp_deep", "scaler_mlp"])
def test_relu_layer_path_with_wide_grids(layer_fits, num_data, name):
    """Grids far outside the data switch many ReLU units on and off inside the grid:
    the piecewise-affine second layer must still equal scikit-learn point by point."""
    X = num_data[0]
    model = layer_fits[name]
    rng = np.random.default_rng(7)
    for feats in ([2], [0, 4]):
        custom = {f: np.sort(rng.uniform(-6, 7, 9)) for f in feats}
        r = partial_dependence(model, X, feats, custom_values=custom, kind="both", method="brute")
        assert r.params["brute_path"] == "first-layer"
        s = sk_pd(model, X, feats, custom_values=custom, kind="both", method="brute")
        avg, ours_avg = _sk_layout(s["average"], r.average)
        ind, ours_ind = _sk_layout(s["individual"], r.individual)
        np.testing.assert_allclose(ours_avg, avg, **TOL)
        np.testing.assert_allclose(ours_ind, ind, **TOL)


def test_first_layer_skips_generic_brute(layer_fits, num_data, monkeypatch):
    X = num_data[0]
    calls = []
    real = pdp_module._brute
    monkeypatch.setattr(pdp_module, "_brute", lambda *a, **k: calls.append(1) or real(*a, **k))
    r = partial_dependence(layer_fits["mlp_reg"], X, [0], grid_resolution=5, kind="average")
    assert r.method == "brute" and r.params["brute_path"] == "first-layer" and calls == []
    # a model it does not cover still goes the generic way
    tree_pipe = make_pipeline(PCA(n_components=2), DecisionTreeRegressor(max_depth=2)).fit(X, num_data[1])
    r = partial_dependence(tree_pipe, X, [0], grid_resolution=5, kind="average")
    assert r.params["brute_path"] == "generic" and calls == [1]


@pytest.mark.parametrize("output, class_index", [("raw", None), ("log_odds", None), ("proba", 2)])
def test_first_layer_adapter_outputs(layer_fits, num_data, monkeypatch, output, class_index):
    X = num_data[0]
    import explainers.effects._layers as layers

    for name in ("scaler_logreg_bin", "scaler_logreg_3", "mlp_3"):
        if output == "raw" and name.startswith("mlp"):
            # an MLP classifier has no decision function: asking for it is an error, not probabilities
            with pytest.raises(InvalidParameterError, match="does not have"):
                ModelAdapter(layer_fits[name], output=output)
            continue
        ad = ModelAdapter(layer_fits[name], output=output)
        ci = None if (class_index is not None and len(ad.classes) <= class_index) else class_index
        r = partial_dependence(ad, X, [1, 2], grid_resolution=4, kind="both", class_index=ci)
        assert r.params["brute_path"] == "first-layer"
        with monkeypatch.context() as mp:
            mp.setattr(layers, "first_layer_plan", lambda *a, **k: None)
            g = partial_dependence(ad, X, [1, 2], grid_resolution=4, kind="both", class_index=ci)
        assert g.params["brute_path"] == "generic"
        assert r.average.shape == g.average.shape and r.output_names == g.output_names
        np.testing.assert_allclose(r.average, g.average, **TOL)
        np.testing.assert_allclose(r.individual, g.individual, **TOL)


def test_first_layer_sample_and_centered(layer_fits, num_data, monkeypatch):
    X = num_data[0]
    import explainers.effects._layers as layers

    monkeypatch.setattr(layers, "_BLOCK_VALUES", 64)  # many small row blocks
    kw = dict(grid_resolution=5, kind="both", sample=50, centered=True)
    r = partial_dependence(layer_fits["scaler_mlp"], X, [0, 4], **kw)
    a = partial_dependence(layer_fits["scaler_mlp"], X, [0, 4], **{**kw, "kind": "average"})
    monkeypatch.setattr(layers, "first_layer_plan", lambda *a, **k: None)
    g = partial_dependence(layer_fits["scaler_mlp"], X, [0, 4], **kw)
    assert r.params["brute_path"] == "first-layer" and g.params["brute_path"] == "generic"
    np.testing.assert_allclose(r.individual, g.individual, **TOL)
    np.testing.assert_allclose(r.average, g.average, **TOL)
    np.testing.assert_allclose(a.average, g.average, **TOL)
