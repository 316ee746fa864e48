"""The linear-in-depth path-dependent Tree SHAP walk (explainers/shap/_linear_kernels.py).

Checked on deep trees (depth 20 and more) against shap's TreeExplainer, the
libraries' own contributions, the textbook recursion and brute-force Shapley
sums of the path-dependent game (tests/_tree_oracles.py), ungrouped and grouped
(a pipeline folded into its trees: one-hot groups as categorical rules), with
NaN routing, native categorical splits, missing-feature masks and zero cover.
The cost model's choice between leaf tables and the walk is checked by its
counts, not by time.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder
from sklearn.tree import DecisionTreeRegressor

from explainers.errors import InvalidParameterError
from explainers.shap import TreeShap
from explainers.shap import _linear_kernels as LK
from explainers.shap.tree import pd_tree_work
from explainers.trees import flatten_model

from ._tree_oracles import brute_path_dependent

import shap  # noqa: E402  (test-only oracle)


def _deep_data(n=1500, p=8, seed=0, nan=True):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = np.sin(2 * X[:, 0]) * X[:, 1] + (X[:, 2] > 0) * X[:, 3] + 0.3 * rng.normal(size=n)
    if nan:
        X[rng.random((n, p)) < 0.08] = np.nan
    return X, y


def _algorithms(model, rows, **kw):
    return {alg: TreeShap(model, algorithm=alg).explain(rows, nan_is_missing=False, **kw)
            for alg in ("linear", "textbook", "auto")}


@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_deep_forest_equals_shap_and_textbook(kind):
    X, y = _deep_data()
    if kind == "regressor":
        model = RandomForestRegressor(6, random_state=0).fit(X, y)
    else:
        model = RandomForestClassifier(6, random_state=0).fit(X, np.digitize(y, [-0.5, 0.5]))
    ens = flatten_model(model)
    assert ens.max_depth >= 20
    rows = X[:40]
    res = _algorithms(model, rows)
    assert res["linear"].params["trees_linear"] == 6 and res["linear"].params["trees_with_tables"] == 0
    assert res["textbook"].params["trees_textbook"] == 6
    assert res["auto"].params["trees_linear"] + res["auto"].params["trees_with_tables"] == 6
    ref = np.asarray(shap.TreeExplainer(model).shap_values(rows, check_additivity=False))
    ref = ref if ref.ndim == 3 else ref[..., None]
    for alg, r in res.items():
        got = r.values if r.values.ndim == 3 else r.values[..., None]
        np.testing.assert_allclose(got, ref, atol=1e-10, err_msg=alg)
        np.testing.assert_allclose(r.predictions, res["textbook"].predictions, atol=1e-12, err_msg=alg)
    res["linear"].check_additivity(atol=1e-10)


def _zigzag_tree(depth_at_least=20):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.sin(6 * np.nan_to_num(X[:, 0])) + np.nan_to_num(X[:, 1]) * np.nan_to_num(X[:, 2]) + rng.normal(0, .1, 3000)
    model = DecisionTreeRegressor(random_state=0).fit(X, y)
    assert model.get_depth() >= depth_at_least
    return model, X


def test_depth_20_brute_force_with_nan_and_masks():
    """Five players on a tree over 20 levels deep (features repeat on every path):
    the Shapley sums over all coalitions, NaN following the learned routing."""
    model, X = _zigzag_tree()
    ens = flatten_model(model)
    rows = np.vstack([X[:5], [[np.nan, 0.3, np.nan, -1.0, 2.0]]])
    lin = TreeShap(model, algorithm="linear").explain(rows, nan_is_missing=False)
    brute = brute_path_dependent(ens, rows)
    np.testing.assert_allclose(lin.values, brute[..., 0], atol=1e-10)
    missing = np.zeros(rows.shape, bool)
    missing[::2, 0] = True
    missing[1, [2, 4]] = True
    lin = TreeShap(model, algorithm="linear").explain(rows, missing, nan_is_missing=False)
    np.testing.assert_allclose(lin.values, brute_path_dependent(ens, rows, missing)[..., 0], atol=1e-10)
    assert np.all(lin.values[missing] == 0.0)
    lin.check_additivity(atol=1e-10)


@pytest.mark.parametrize("n_rows", [6, 40])  # a rare pattern (no tables) and a tabled one
def test_masks_equal_textbook(n_rows):
    X, y = _deep_data(seed=1)
    model = RandomForestRegressor(4, min_samples_leaf=2, random_state=1).fit(X, y)
    rows = X[:n_rows]
    mask = np.zeros(rows.shape, bool)
    mask[:, 1] = True
    mask[::3, 4] = True
    res = _algorithms(model, rows, missing=mask)
    for alg in ("linear", "auto"):
        np.testing.assert_allclose(res[alg].values, res["textbook"].values, atol=1e-11, err_msg=alg)
        np.testing.assert_allclose(res[alg].predictions, res["textbook"].predictions, atol=1e-12, err_msg=alg)


def _deep_pipe_table(n=2500, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "town": rng.choice(["Busan", "Anyang", "Cheongju", "Daegu", "Eumseong", "Jeju"], n),
        "pet": rng.choice(["cat", "dog", "fish", "hamster"], n),
        "income": rng.lognormal(8, 0.6, n),
        "age": rng.normal(40, 12, n),
    })
    y = (np.log(df.income) + 1.5 * df.town.isin(["Anyang", "Daegu"]) + (df.pet == "dog") * df.age / 20
         + rng.normal(0, 0.5, n))
    return df, y.to_numpy()


@pytest.mark.parametrize("final", ["onehot_forest", "hgb_categorical"])
def test_grouped_pipeline_deep_equals_brute_force(final):
    """A pipeline folded into its trees: a one-hot group (or a native categorical
    split) is one player; its rules route through the walk like any split."""
    df, y = _deep_pipe_table()
    if final == "onehot_forest":
        ct = ColumnTransformer([("oh", OneHotEncoder(handle_unknown="ignore"), ["town", "pet"])],
                               remainder="passthrough")
        pipe = make_pipeline(ct, RandomForestRegressor(3, random_state=0))
    else:
        ct = ColumnTransformer([("cats", OrdinalEncoder(), ["town", "pet"])], remainder="passthrough")
        pipe = make_pipeline(ct, HistGradientBoostingRegressor(max_iter=4, max_leaf_nodes=None, max_depth=None,
                                                               min_samples_leaf=2, categorical_features=[0, 1],
                                                               random_state=0))
    pipe.fit(df, y)
    ens = flatten_model(pipe)
    assert ens.max_depth >= 20 and len(ens.rule_features()) > 0
    rows = df.iloc[:4]
    res = _algorithms(pipe, rows)
    brute = brute_path_dependent(ens, ens.prepare_inputs(rows))[..., 0]
    for alg, r in res.items():
        np.testing.assert_allclose(r.values, brute, atol=1e-9, err_msg=alg)
    assert list(res["linear"].feature_names) == list(df.columns)


def test_zero_cover_child_equals_textbook():
    """A child no training row reached (cover 0): the walk's divisions stay finite."""
    X, y = _deep_data(seed=2, nan=False)
    model = RandomForestRegressor(2, random_state=2).fit(X, y)
    rows = X[:30]
    out = {}
    for alg in ("linear", "textbook"):
        ts = TreeShap(model, algorithm=alg)
        cover = ts._nodes["cover"]
        leaves = np.flatnonzero(ts._nodes["left"] < 0)
        cover[leaves[::7]] = 0.0  # some leaves (and their weight) vanish from the game
        out[alg] = ts.explain(rows)
    assert np.isfinite(out["linear"].values).all()
    np.testing.assert_allclose(out["linear"].values, out["textbook"].values, atol=1e-11)
    np.testing.assert_allclose(out["linear"].predictions, out["textbook"].predictions, atol=1e-12)


def test_deep_boosting_equals_library_contributions():
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    X, y = _deep_data(3000, seed=3)
    rows = X[:30]
    xm = xgb.XGBRegressor(n_estimators=5, max_depth=16, min_child_weight=0, nthread=1).fit(X, y)
    ref = xm.get_booster().predict(xgb.DMatrix(rows), pred_contribs=True)[:, :-1]
    lin = TreeShap(xm, algorithm="linear").explain(rows, nan_is_missing=False)
    assert flatten_model(xm).max_depth >= 15
    np.testing.assert_allclose(lin.values, ref, atol=2e-5 * np.abs(ref).max())  # XGBoost sums in float32
    Xc = np.column_stack([X, np.random.default_rng(0).integers(0, 12, len(X))])
    lm = lgb.LGBMRegressor(n_estimators=5, num_leaves=255, min_child_samples=2, verbose=-1,
                           categorical_feature=[Xc.shape[1] - 1]).fit(Xc, y + (Xc[:, -1] % 3))
    ref = lm.booster_.predict(Xc[:30], pred_contrib=True)[:, :-1]
    lin = TreeShap(lm, algorithm="linear").explain(Xc[:30], nan_is_missing=False)
    assert flatten_model(lm).max_depth >= 20
    np.testing.assert_allclose(lin.values, ref, atol=1e-9)


def test_cost_model_choice_by_counts():
    """auto gives a tree tables exactly where the counts say they cost less, their
    build spread over the call's rows, and they fit; a plan costed for few rows is
    costed again for many."""
    X, y = _deep_data(seed=5, nan=False)
    shallow = RandomForestRegressor(5, max_depth=4, random_state=0).fit(X, y)
    deep = RandomForestRegressor(5, min_samples_leaf=3, random_state=0).fit(X, y)
    masked = np.zeros(X.shape[1], bool)
    for model in (shallow, deep):
        ts = TreeShap(model, algorithm="tables")
        plan = ts._build_plan(masked, None, True, 1)
        table_rows, table_build, linear_rows = pd_tree_work(ts._nodes, plan.leaf_m, plan.pair, 1)
        fits = np.zeros(ts.ensemble.n_trees, bool)
        fits[plan.table_trees] = True
        auto = TreeShap(model)
        for n in (2, 20, 400):
            res = auto.explain(X[:n])
            want = int((fits & (table_build / n + table_rows <= linear_rows)).sum())
            assert res.params["trees_with_tables"] == want, (n, want)
            assert res.params["trees_linear"] == ts.ensemble.n_trees - want
    # building tables for two rows costs more than walking; for 400 rows of shallow trees it pays
    assert TreeShap(shallow).explain(X[:2]).params["trees_with_tables"] == 0
    assert TreeShap(shallow).explain(X[:400]).params["trees_with_tables"] == 5
    # the walk's count grows linearly with depth: nodes x (points + 1) x 2 per output
    assert [LK.points_for(m) for m in (1, 2, 3, 8, 9, 24)] == [1, 1, 2, 4, 5, 12]


def test_gauss_points_integrate_exactly():
    t, w = LK.gauss_points(6)
    for n in range(1, 7):
        assert t[n, n] == 1.0 and w[n, n] == 0.0
        for deg in range(2 * n):
            assert abs(np.sum(w[n, :n] * t[n, :n] ** deg) - 1.0 / (deg + 1)) < 1e-14


def test_algorithm_errors():
    X, y = _deep_data(200, seed=6, nan=False)
    model = DecisionTreeRegressor(max_depth=3).fit(X, y)
    with pytest.raises(InvalidParameterError, match="algorithm"):
        TreeShap(model, algorithm="fast")
    with pytest.raises(InvalidParameterError, match="path-dependent"):
        TreeShap(model, X[:20], mode="interventional", algorithm="linear")


# --------------------------------------------------------------- interactions
def _pd_interaction_index(ens, xw, players):
    """Half the Shapley interaction index of each pair, off the diagonal, from the
    path-dependent game's definition (tests/_tree_oracles.pd_value)."""
    from itertools import combinations, permutations
    from math import factorial

    from ._tree_oracles import pd_value

    cache = {}

    def v(S):
        if S not in cache:
            cache[S] = pd_value(ens, xw, S)
        return cache[S]

    M = len(players)
    out = np.zeros((xw.shape[0], xw.shape[0]) + ens.base.shape)
    for i, j in permutations(players, 2):
        others = [q for q in players if q not in (i, j)]
        for s in range(M - 1):
            w = factorial(s) * factorial(M - s - 2) / factorial(M - 1) / 2
            for S in combinations(others, s):
                S = frozenset(S)
                out[i, j] += w * (v(S | {i, j}) - v(S | {i}) - v(S | {j}) + v(S))
    return out


def test_deep_interactions_equal_definition_with_masks(monkeypatch):
    """Interaction values by the linear walk (trees past the tables) on a tree over 20
    levels deep equal the definition; rows still sum to the SHAP values."""
    import explainers.shap.interactions as inter_mod

    monkeypatch.setattr(inter_mod, "MAX_TABLE_BITS", 1)  # no tables: the walk
    model, X = _zigzag_tree()
    ens = flatten_model(model)
    rows = np.vstack([X[:3], [[np.nan, 0.3, np.nan, -1.0, 2.0]]])
    missing = np.zeros(rows.shape, bool)
    missing[1, 3] = True
    res = TreeShap(model).interactions(rows, missing, nan_is_missing=False)
    assert res.params["trees_linear"] == 1 and res.params["trees_with_tables"] == 0
    off = ~np.eye(5, dtype=bool)
    for r in range(len(rows)):
        players = [j for j in range(5) if not missing[r, j]]
        ref = _pd_interaction_index(ens, rows[r], players)[..., 0]
        np.testing.assert_allclose(res.values[r][off], ref[off], atol=1e-10)
    phi = TreeShap(model).explain(rows, missing, nan_is_missing=False).values
    np.testing.assert_allclose(res.values.sum(axis=2), phi, atol=1e-10)
    assert np.all(res.values[1, 3] == 0.0) and np.all(res.values[1, :, 3] == 0.0)


def test_deep_interactions_equal_shap_multi_output(monkeypatch):
    import explainers.shap.interactions as inter_mod

    X, y = _deep_data(800, p=6, seed=7)
    model = RandomForestClassifier(3, random_state=0).fit(X, np.digitize(y, [-0.5, 0.5]))
    rows = X[:8]
    fast = TreeShap(model).interactions(rows, nan_is_missing=False)
    monkeypatch.setattr(inter_mod, "MAX_TABLE_BITS", 1)  # every tree past the tables: the walk
    walked = TreeShap(model).interactions(rows, nan_is_missing=False)
    assert walked.params["trees_linear"] == 3 and fast.params["trees_with_tables"] == 3
    ref = np.asarray(shap.TreeExplainer(model).shap_interaction_values(rows))
    ref = np.moveaxis(ref, 0, -1) if ref.shape[0] == 3 and ref.ndim == 4 and ref.shape[1] == len(rows) else ref
    for res in (walked, fast):
        np.testing.assert_allclose(res.values, ref, atol=1e-10)
