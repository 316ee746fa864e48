"""SHAP interaction values and Friedman's H statistic.

Oracles: the definition (the Shapley interaction index summed over every
coalition of the path-dependent or interventional game, with v(S) for the
path-dependent game taken from TreeShap's masked predictions), shap's
``TreeExplainer.shap_interaction_values`` (test-only), and for H a hand
formula on ``f = x1 * x2`` and brute force against the tree walk.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import (
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression
from sklearn.neural_network import MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import explainers.shap.interactions as inter_mod
from explainers.errors import ExplainerError, InvalidFeatureError, InvalidParameterError
from explainers.interactions import HStatisticResult, h_statistic
from explainers.shap import ExactShap, TreeShap
from explainers.shap.interactions import ShapInteractionResult

import shap  # noqa: E402  (test-only oracle)

P = 5
NAMES = [f"f{i}" for i in range(P)]


# ------------------------------------------------------------------ helpers
def _data(n=200, seed=0, nan=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, P))
    X[:, 4] = np.round(X[:, 4])
    y = X[:, 0] + X[:, 1] * X[:, 2] + (X[:, 3] > 0) * X[:, 0] + 0.1 * rng.normal(size=n)
    if nan:
        X[rng.random(X.shape) < 0.12] = np.nan
    return X, y


def _classes(y, k):
    return np.digitize(y, np.quantile(y, np.linspace(0, 1, k + 1)[1:-1]))


def _index_from_game(v, players, k):
    """Interaction matrix (p, p, k) from the definition, given v(frozenset) -> (k,)."""
    M = len(players)
    out = np.zeros((P, P, k))
    for i, j in itertools.permutations(players, 2):
        others = [q for q in players if q not in (i, j)]
        for s in range(M - 1):
            w = math.factorial(s) * math.factorial(M - s - 2) / math.factorial(M - 1) / 2
            for S in itertools.combinations(others, s):
                S = frozenset(S)
                out[i, j] += w * (v(S | {i, j}) - v(S | {i}) - v(S | {j}) + v(S))
    for i in players:
        others = [q for q in players if q != i]
        phi = np.zeros(k)
        for s in range(M):
            w = math.factorial(s) * math.factorial(M - s - 1) / math.factorial(M)
            for S in itertools.combinations(others, s):
                S = frozenset(S)
                phi += w * (v(S | {i}) - v(S))
        out[i, i] = phi - out[i].sum(axis=0)
    return out


def _pd_game(ts, X, missing=None, nan_is_missing=False):
    """Every row's path-dependent game from TreeShap's masked predictions, v[r][S] -> (k,)."""
    n = len(X)
    base_mask = np.zeros((n, P), bool) if missing is None else np.broadcast_to(missing, (n, P))
    games = [dict() for _ in range(n)]
    for S in itertools.chain.from_iterable(itertools.combinations(range(P), s) for s in range(P + 1)):
        miss = np.ones(P, bool)
        miss[list(S)] = False
        res = ts.explain(X, np.broadcast_to(miss, (n, P)) | base_mask, nan_is_missing=nan_is_missing)
        pred = res.predictions.reshape(n, -1)
        for r in range(n):
            games[r][frozenset(S)] = pred[r]
    return games


def _brute_pd(ts, X, missing=None, nan_is_missing=False):
    games = _pd_game(ts, X, missing, nan_is_missing)
    n = len(X)
    mask = np.zeros((n, P), bool) if missing is None else np.broadcast_to(missing, (n, P))
    k = len(next(iter(games[0].values())))
    out = np.zeros((n, P, P, k))
    for r in range(n):
        players = [q for q in range(P) if not mask[r, q]]
        out[r] = _index_from_game(lambda S: games[r][S], players, k)
    return out


def _raw(model, Z):
    """What the trees add up to: class fractions, a margin, or the regression value."""
    if hasattr(model, "decision_function"):
        d = model.decision_function(Z)
        return d.reshape(len(Z), -1)
    if hasattr(model, "predict_proba"):
        return model.predict_proba(Z)
    return model.predict(Z).reshape(len(Z), 1)


def _brute_iv(model, X, bg, missing=None):
    n = len(X)
    mask = np.zeros((n, P), bool) if missing is None else np.broadcast_to(missing, (n, P))
    k = _raw(model, bg[:1]).shape[1]
    out = np.zeros((n, P, P, k))
    for r in range(n):
        cache = {}

        def v(S):
            if S not in cache:
                Z = bg.copy()
                Z[:, sorted(S)] = X[r, sorted(S)]
                cache[S] = _raw(model, Z).mean(axis=0)
            return cache[S]

        out[r] = _index_from_game(v, [q for q in range(P) if not mask[r, q]], k)
    return out


def _squeeze(a):
    return a[..., 0] if a.shape[-1] == 1 else a


def _check_properties(res, ex):
    """Rows sum to SHAP values, totals to prediction - base, symmetric, masks zero."""
    v = res.values
    np.testing.assert_array_equal(v, np.swapaxes(v, 1, 2))
    scale = np.abs(ex.values).max() + 1e-300
    np.testing.assert_allclose(res.shap_values, ex.values, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(res.base_values + v.sum(axis=(1, 2)), ex.predictions, atol=1e-10 * scale)
    m = res.missing
    assert np.all(v[m] == 0.0) and np.all(np.swapaxes(v, 1, 2)[m] == 0.0)
    res.check_additivity()


# ------------------------------------------------------------- definition
PD_MODELS = {
    "tree_reg": (lambda: DecisionTreeRegressor(max_depth=6, random_state=0), None, False),
    "rf_clf3": (lambda: RandomForestClassifier(3, max_depth=5, random_state=0), 3, False),
    "gb_clf3": (lambda: GradientBoostingClassifier(n_estimators=3, max_depth=3, random_state=0), 3, False),
    "hgb_nan": (lambda: HistGradientBoostingRegressor(max_iter=4, max_depth=4, random_state=0), None, True),
}


@pytest.mark.parametrize("name", list(PD_MODELS))
def test_path_dependent_equals_definition(name):
    make, k, nan = PD_MODELS[name]
    X, y = _data(nan=nan)
    model = make().fit(X, y if k is None else _classes(y, k))
    rows = X[:6]
    ts = TreeShap(model)
    res = ts.interactions(rows, nan_is_missing=False)  # NaN follows the learned routing
    ref = _brute_pd(ts, rows)
    np.testing.assert_allclose(res.values, _squeeze(ref), atol=1e-9)
    _check_properties(res, ts.explain(rows, nan_is_missing=False))


IV_MODELS = {
    "rf_reg": (lambda: RandomForestRegressor(3, max_depth=5, random_state=0), None, False),
    "rf_clf3": (lambda: RandomForestClassifier(3, max_depth=4, random_state=0), 3, False),
    "gb_clf3": (lambda: GradientBoostingClassifier(n_estimators=3, max_depth=3, random_state=0), 3, False),
    "hgb_nan": (lambda: HistGradientBoostingRegressor(max_iter=4, max_depth=4, random_state=0), None, True),
}


@pytest.mark.parametrize("name", list(IV_MODELS))
def test_interventional_equals_definition(name):
    make, k, nan = IV_MODELS[name]
    X, y = _data(nan=nan)
    model = make().fit(X, y if k is None else _classes(y, k))
    bg, rows = X[100:125], X[:5]
    ts = TreeShap(model, bg, mode="interventional")
    res = ts.interactions(rows, nan_is_missing=False)  # NaN cells are values, here and in bg
    np.testing.assert_allclose(res.values, _squeeze(_brute_iv(model, rows, bg)), atol=1e-9)
    _check_properties(res, ts.explain(rows, nan_is_missing=False))
    # the model-agnostic game over all coalitions says the same (ExactShap explains raw here)
    ex = ExactShap(model, bg, output="raw").interactions(rows, nan_is_missing=False)
    np.testing.assert_allclose(ex.values, res.values, atol=1e-9)


def test_masks_path_dependent_and_interventional():
    X, y = _data()
    model = RandomForestRegressor(4, max_depth=6, random_state=0).fit(X, y)
    rows, bg = X[:20], X[150:180]
    mask = np.zeros((20, P), bool)
    mask[:4, 1] = True  # a rare pattern (direct path)
    mask[4:6, [0, 3]] = True
    ts = TreeShap(model)
    res = ts.interactions(rows, mask)
    _check_properties(res, ts.explain(rows, mask))
    ref = np.zeros((20, P, P))
    games = _pd_game(ts, rows)
    for r in range(20):
        keep = [q for q in range(P) if not mask[r, q]]
        ref[r] = _index_from_game(lambda S: games[r][S], keep, 1)[..., 0]
    np.testing.assert_allclose(res.values, ref, atol=1e-9)
    # names broadcast to every row; 16+ rows of one pattern get their own tables
    by_name = ts.interactions(rows, ["x2"])
    assert np.all(by_name.values[:, 2, :] == 0) and np.all(by_name.values[:, :, 2] == 0)
    for r in range(20):
        ref = _index_from_game(lambda S: games[r][S], [0, 1, 3, 4], 1)[..., 0]
        np.testing.assert_allclose(by_name.values[r], ref, atol=1e-9)
    _check_properties(by_name, ts.explain(rows, ["x2"]))
    tsi = TreeShap(model, bg, mode="interventional")
    res = tsi.interactions(rows, mask)
    np.testing.assert_allclose(res.values, _brute_iv(model, rows, bg, mask)[..., 0], atol=1e-9)
    _check_properties(res, tsi.explain(rows, mask))


@pytest.mark.parametrize("multi", [False, True])
@pytest.mark.parametrize("mode", ["path_dependent", "interventional"])
def test_direct_path_equals_tables(monkeypatch, mode, multi):
    X, y = _data()
    if multi:  # forest classifier: every leaf holds a row of class fractions
        model = RandomForestClassifier(8, max_depth=5, random_state=0).fit(X, _classes(y, 3))
    else:
        model = GradientBoostingRegressor(n_estimators=8, max_depth=4, random_state=0).fit(X, y)
    bg = X[150:170] if mode == "interventional" else None
    fast = TreeShap(model, bg, mode=mode).interactions(X[:30])
    assert fast.params["trees_with_tables"] == 8
    monkeypatch.setattr(inter_mod, "MAX_TABLE_BITS", 2)
    mixed = TreeShap(model, bg, mode=mode).interactions(X[:30])
    assert mixed.params["trees_direct" if mode == "interventional" else "trees_linear"] > 0
    np.testing.assert_allclose(mixed.values, fast.values, atol=1e-12)


def test_threads_agree():
    X, y = _data(n=400)
    model = RandomForestRegressor(20, max_depth=8, random_state=0).fit(X, y)
    one = TreeShap(model, n_jobs=1).interactions(X)
    two = TreeShap(model, n_jobs=2).interactions(X)
    np.testing.assert_allclose(two.values, one.values, atol=1e-12)


# -------------------------------------------------------------------- shap
SHAP_MODELS = {
    "rf_reg": lambda: RandomForestRegressor(10, max_depth=6, random_state=0),
    "et_reg": lambda: ExtraTreesRegressor(5, max_depth=8, random_state=0),
    "gb_reg": lambda: GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0),
    "gb_clf2": lambda: GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0),
    "rf_clf2": lambda: RandomForestClassifier(5, max_depth=5, random_state=0),
    "hgb_clf2": lambda: HistGradientBoostingClassifier(max_iter=10, random_state=0),
}


@pytest.mark.parametrize("name", list(SHAP_MODELS))
def test_equals_shap(name):
    X, y = _data()
    model = SHAP_MODELS[name]().fit(X, y if name.endswith("reg") else (y > 0).astype(int))
    rows = X[:40]
    ref = shap.TreeExplainer(model).shap_interaction_values(rows)
    ref = np.stack(ref, axis=-1) if isinstance(ref, list) else np.asarray(ref)
    res = TreeShap(model).interactions(rows)
    assert res.values.shape == ref.shape
    np.testing.assert_allclose(res.values, ref, atol=1e-6)
    assert np.abs(res.values - ref).max() < 1e-9


def test_result_fields_class_index_and_dataframe():
    X, y = _data()
    frame = pd.DataFrame(X, columns=NAMES)
    model = RandomForestClassifier(4, max_depth=4, random_state=0).fit(frame, _classes(y, 3))
    res = TreeShap(model).interactions(frame.iloc[:7])
    assert isinstance(res, ShapInteractionResult)
    assert res.values.shape == (7, P, P, 3) and res.base_values.shape == (7, 3)
    assert res.feature_names == NAMES and res.method == "tree" and res.n_outputs == 3
    assert res.shap_values.shape == (7, P, 3) and res.missing.shape == (7, P)
    one = TreeShap(model, class_index=2).interactions(frame.iloc[:7])
    assert one.values.shape == (7, P, P)
    np.testing.assert_allclose(one.values, res.values[..., 2], atol=1e-15)
    np.testing.assert_allclose(res.select(2).values, one.values, atol=1e-15)
    tidy = one.to_frame()
    assert len(tidy) == 7 * P * (P + 1) // 2
    np.testing.assert_allclose(tidy.groupby("row")["value"].sum(), one.values.sum(axis=(1, 2)), atol=1e-12)
    calls = []
    TreeShap(model).interactions(frame.iloc[:7], progress=lambda d, t: calls.append((d, t)))
    assert calls[-1] == (7, 7)


# ------------------------------------------------------------------ exact
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_exact_agnostic_equals_definition_and_errors():
    X, y = _data(n=120)
    model = MLPRegressor(hidden_layer_sizes=(8,), max_iter=300, random_state=0).fit(X, y)
    bg, rows = X[:15], X[100:103]
    ex = ExactShap(model, bg)
    res = ex.interactions(rows, ["x4"])
    ref = _brute_iv(model, rows, bg, np.array([False] * 4 + [True]))[..., 0]
    np.testing.assert_allclose(res.values, ref, atol=1e-9)
    _check_properties(res, ex.explain(rows, ["x4"]))
    assert res.method == "exact"
    wide = np.random.default_rng(0).normal(size=(30, 20))
    lin = LinearRegression().fit(wide, wide.sum(axis=1))
    with pytest.raises(InvalidParameterError, match=r"TreeShap\(model\)\.interactions"):
        ExactShap(lin, wide[:2]).interactions(wide[:2])
    with pytest.raises(InvalidParameterError, match="Tree SHAP"):
        ExactShap(model, max_evals=1000).interactions(X[:100])


# ------------------------------------------------------------------------- H
def _hand_h(x1, x2, other):
    """H for f = x1 * x2 at the data points, from the closed-form PDs (all centred)."""
    f = x1 * x2
    m1, m2 = x1.mean(), x2.mean()
    c = lambda a: a - a.mean()  # noqa: E731
    pd12, pd1, pd2 = c(f), c(x1 * m2), c(m1 * x2)
    h2_pair = ((pd12 - pd1 - pd2) ** 2).sum() / (pd12**2).sum()
    # PD_-1(x_i) = mean_r x_r1 x_i2 = m1 x_i2, and likewise for x2
    fc = c(f)
    h2_1 = ((fc - pd1 - c(m1 * x2)) ** 2).sum() / (fc**2).sum()
    h2_2 = ((fc - pd2 - c(x1 * m2)) ** 2).sum() / (fc**2).sum()
    return h2_pair, h2_1, h2_2


class _Product:
    """f(x) = x0 * x1 (x2 is ignored)."""

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        return X[:, 0] * X[:, 1]


def test_h_known_value_for_product():
    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.uniform(0, 1, size=(150, 3)), columns=["a", "b", "c"])
    res = h_statistic(_Product(), X, sample=None)
    assert isinstance(res, HStatisticResult) and res.method == "brute"
    assert res.pairs == [("a", "b"), ("a", "c"), ("b", "c")]
    h2_pair, h2_1, h2_2 = _hand_h(X.a.to_numpy(), X.b.to_numpy(), X.c.to_numpy())
    np.testing.assert_allclose(res.h2[0], h2_pair, rtol=1e-9)
    np.testing.assert_allclose(res.values[0], np.sqrt(h2_pair), rtol=1e-9)
    np.testing.assert_allclose(res.overall_h2, [h2_1, h2_2, 0.0], rtol=1e-9, atol=1e-12)
    assert res.h2[1] < 1e-20 and res.h2[2] < 1e-20  # c has no effect: the joint PD is a main effect


def test_h_zero_for_additive_models():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = 2 * X[:, 0] + np.sin(X[:, 1]) + X[:, 2] ** 2
    lin = LinearRegression().fit(X, y)
    res = h_statistic(lin, X, sample=80)
    assert res.n_rows == 80 and res.params["sampled"] and "80 of 300" in res.params["note"]
    assert res.method == "brute" and len(res.pairs) == 6
    np.testing.assert_allclose(res.values, 0, atol=1e-6)
    np.testing.assert_allclose(res.overall, 0, atol=1e-6)
    stumps = GradientBoostingRegressor(n_estimators=40, max_depth=1, random_state=0).fit(X, y)
    res = h_statistic(stumps, X, sample=150)
    assert res.method == "tree"
    np.testing.assert_allclose(res.values, 0, atol=1e-6)
    np.testing.assert_allclose(res.overall, 0, atol=1e-6)


H_MODELS = {
    "rf_reg": (lambda: RandomForestRegressor(20, max_depth=6, random_state=0), None, None),
    "gb_clf2": (lambda: GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0), 2, None),
    "hgb_clf3": (lambda: HistGradientBoostingClassifier(max_iter=10, random_state=0), 3, 1),
}


@pytest.mark.parametrize("name", list(H_MODELS))
def test_h_tree_equals_brute(name):
    make, k, ci = H_MODELS[name]
    X, y = _data(n=300)
    frame = pd.DataFrame(X, columns=NAMES)
    model = make().fit(frame, y if k is None else _classes(y, k))
    tree = h_statistic(model, frame, sample=120, class_index=ci)
    brute = h_statistic(model, frame, sample=120, class_index=ci, method="brute")
    assert tree.method == "tree" and brute.method == "brute" and tree.n_rows == 120
    np.testing.assert_allclose(tree.h2, brute.h2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(tree.overall_h2, brute.overall_h2, rtol=1e-9, atol=1e-12)
    assert tree.h2.max() > 1e-3  # x1 * x2 in the target: something to find
    assert tree.to_frame().H.is_monotonic_decreasing


def _h_pipeline_table(n=400, seed=3):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(size=n).round(2), "b": rng.normal(size=n).round(2),
                       "c": rng.normal(size=n).round(1),
                       "town": rng.choice(["Busan", "Anyang", "Daegu", "Jeju"], n),
                       "plan": pd.Categorical(rng.choice(["basic", "plus", "pro"], n))})
    df.loc[rng.random(n) < 0.15, "b"] = np.nan
    y = df.a * np.nan_to_num(df.b) + (df.town == "Daegu") * df.c + (df.plan == "pro") + rng.normal(0, .2, n)
    return df, y.to_numpy()


@pytest.mark.parametrize("final", ["hgb_clf_native_categories", "rf_onehot", "xgb_nan"])
def test_h_tree_walk_on_pipelines_text_and_empty_cells(final):
    """A pipeline folded into its trees (one-hot groups and native categories as rules), text
    columns and empty cells: the tree walk, not n**2 predictions per pair, and the same H."""
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    from explainers.effects.hstat import tree_walk_applies

    df, y = _h_pipeline_table()
    if final == "hgb_clf_native_categories":
        ct = ColumnTransformer([("cats", OrdinalEncoder(), ["town", "plan"])], remainder="passthrough")
        model = make_pipeline(ct, HistGradientBoostingClassifier(max_iter=30, categorical_features=[0, 1],
                                                                 random_state=0)).fit(df, y > np.median(y))
    elif final == "rf_onehot":
        ct = ColumnTransformer([("oh", OneHotEncoder(handle_unknown="ignore"), ["town", "plan"])],
                               remainder=SimpleImputer())
        model = make_pipeline(ct, RandomForestRegressor(20, max_depth=8, random_state=0)).fit(df, y)
    else:
        xgb = pytest.importorskip("xgboost")
        df = df[["a", "b", "c"]]
        model = xgb.XGBRegressor(n_estimators=30, max_depth=4, nthread=1).fit(df, y)
    assert tree_walk_applies(model, df)
    tree = h_statistic(model, df, sample=150)
    brute = h_statistic(model, df, sample=150, method="brute")
    assert tree.method == "tree" and brute.method == "brute"
    np.testing.assert_allclose(tree.h2, brute.h2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(tree.overall_h2, brute.overall_h2, rtol=1e-9, atol=1e-12)
    assert tree.h2.max() > 1e-3


def test_h_pairs_features_and_errors():
    X, y = _data(n=200)
    frame = pd.DataFrame(X, columns=NAMES)
    rf = RandomForestRegressor(10, max_depth=5, random_state=0).fit(frame, y)
    res = h_statistic(rf, frame, [("f1", "f2"), (0, 3)])
    assert res.pairs == [("f1", "f2"), ("f0", "f3")]
    assert res.feature_names == ["f1", "f2", "f0", "f3"] and res.overall.shape == (4,)
    res_f = h_statistic(rf, frame, features=["f1", "f2", "f4"])
    assert res_f.pairs == [("f1", "f2"), ("f1", "f4"), ("f2", "f4")]
    np.testing.assert_allclose(res_f.h2[0], res.h2[0], rtol=1e-12)
    assert res.matrix().loc["f2", "f1"] == res.values[0]
    with pytest.raises(InvalidFeatureError, match="Unknown feature 'nope'"):
        h_statistic(rf, frame, [("f1", "nope")])
    with pytest.raises(InvalidFeatureError, match="one feature twice"):
        h_statistic(rf, frame, [("f1", "f1")])
    one = DecisionTreeRegressor(max_depth=2).fit(X[:, :1], y)
    with pytest.raises(InvalidFeatureError, match="at least two features"):
        h_statistic(one, X[:, :1])
    clf3 = DecisionTreeClassifier(max_depth=3).fit(X, _classes(y, 3))
    with pytest.raises(InvalidParameterError, match="class_index"):
        h_statistic(clf3, X)
    with pytest.raises(InvalidParameterError, match="'sample'"):
        h_statistic(rf, frame, sample=1)
    with pytest.raises(InvalidParameterError, match="method='tree' does not apply"):
        h_statistic(LinearRegression().fit(X, y), X, method="tree")
    with pytest.raises(ExplainerError):
        h_statistic(rf, frame, [("f1",)])


def test_h_small_memory_budget_same_values(monkeypatch):
    """Grids split into slabs (and one row per block) give the same numbers."""
    import explainers.effects.hstat as h_mod

    X, y = _data(n=200)
    rf = RandomForestRegressor(10, max_depth=6, random_state=0).fit(X, y)
    gb = GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(X, y > 0)
    ref = [h_statistic(m, X, sample=60) for m in (rf, gb)]
    monkeypatch.setattr(h_mod, "_CELLS", 64)
    monkeypatch.setattr(h_mod, "_ROW_CELLS", 64)
    for m, r in zip((rf, gb), ref):
        small = h_statistic(m, X, sample=60)
        np.testing.assert_allclose(small.h2, r.h2, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(small.overall_h2, r.overall_h2, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("pairs", [None, [("a", "c")]])
def test_brute_force_predictions_counts_what_h_predicts(pairs):
    """The count a cost estimate rests on equals the rows h_statistic actually sends to
    the model by brute force: columns with few values (a flag, a category, a repeated
    number, a NaN) cost fewer copies than rows."""
    from explainers.effects.hstat import brute_force_predictions

    rng = np.random.default_rng(0)
    n = 60
    X = pd.DataFrame({"a": rng.integers(0, 3, n).astype(float), "b": rng.normal(size=n),
                      "c": rng.choice([0.5, 1.5, np.nan], n), "d": rng.integers(0, 2, n).astype(float)})
    y = X.a * X.b + X.d

    fitted = make_pipeline(SimpleImputer(), LinearRegression()).fit(X, y)
    asked = []
    own_predict = fitted.predict
    fitted.predict = lambda rows: asked.append(len(rows)) or own_predict(rows)
    feats = ["a", "b", "c", "d"] if pairs is None else ["a", "b", "c"]
    h_statistic(fitted, X, pairs=pairs, features=feats, sample=None, method="brute")
    assert sum(asked) > 0
    assert brute_force_predictions(X, feats, pairs) == sum(asked)
    # against the definition, too
    pair_list = [(p, q) for i, p in enumerate(feats) for q in feats[i + 1:]] if pairs is None else pairs
    expected = n * (1 + sum(X[c].nunique(dropna=False) for c in feats)
                    + sum(len(X[[p, q]].drop_duplicates()) for p, q in pair_list))
    assert sum(asked) == expected


def test_interaction_threads_are_those_the_rows_are_shared_among(monkeypatch):
    """interaction_threads says how many threads a call's rows are shared among (the every-row
    estimate divides a one-thread probe's cost by it): counted on the thread pool itself."""
    from sklearn.ensemble import GradientBoostingRegressor as GBR

    X, y = _data(3000)
    model = GBR(n_estimators=200, max_depth=5, random_state=0).fit(X, y)
    pools = []
    real = inter_mod.ThreadPoolExecutor

    class Counted(real):
        def __init__(self, max_workers=None, **kw):
            pools.append(max_workers)
            super().__init__(max_workers=max_workers, **kw)

    monkeypatch.setattr(inter_mod, "ThreadPoolExecutor", Counted)
    for n_jobs in (1, 2, 3):
        ts = TreeShap(model, n_jobs=n_jobs)
        for n in (4, 32, 300, 3000):
            pools.clear()
            ts.interactions(X[:n])
            want = inter_mod.interaction_threads(ts, n)
            assert (max(pools) if pools else 1) == want, (n_jobs, n, pools)
            if n_jobs == 1 or n <= 32:
                assert want == 1
    assert inter_mod.interaction_threads(TreeShap(model, n_jobs=2), 3000) == 2
