"""Categorical splits in the shared tree representation, on scikit-learn's
HistGradientBoosting with native categorical features (pandas categories and text).

Every engine against its definition: predictions against the model's own
predict / predict_proba, path-dependent Tree SHAP against a brute-force Shapley
sum over the cover-weighted game (routed by ``TreeEnsemble.goes_left``),
interventional Tree SHAP against ExactShap on the same background, tree PD
against brute force, masks (exact zeros, local accuracy), interaction rows
against SHAP values.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

from explainers.interactions import h_statistic
from explainers.pdp import partial_dependence
from explainers.shap import ExactShap, TreeShap, explain
from explainers.trees import flatten_model
from explainers.trees.ensemble import RULE_CATEGORICAL, rule_record

from ._tree_oracles import brute_path_dependent

N = 500


def _table(seed=0, n=N):
    """A mixed table as users have them: a pandas category, a text column with
    empty cells, numbers with empty cells."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "Age (years)": rng.normal(40, 10, n).round(),
        "Town": pd.Categorical(rng.choice(["Busan", "Anyang", "Cheongju", "Daegu", "Eumseong"], n)),
        "Score": rng.normal(size=n),
        "Pet": rng.choice(["cat", "dog", None], n),
    })
    df.loc[rng.random(n) < 0.1, "Age (years)"] = np.nan
    df["Pet"] = df["Pet"].astype("category")
    y = (2.0 * df["Town"].isin(["Anyang", "Cheongju"]) + np.nan_to_num(df["Age (years)"] / 10)
         + (df["Pet"] == "dog") * df["Score"] + rng.normal(size=n) * 0.1)
    return df, y.to_numpy()


@pytest.fixture(scope="module")
def models():
    df, y = _table()
    reg = HistGradientBoostingRegressor(max_iter=15, max_depth=4, categorical_features="from_dtype",
                                        random_state=0).fit(df, y)
    binary = HistGradientBoostingClassifier(max_iter=15, max_depth=4, categorical_features="from_dtype",
                                            random_state=0).fit(df, y > np.median(y))
    multi = HistGradientBoostingClassifier(max_iter=8, max_depth=3, categorical_features="from_dtype",
                                           random_state=0).fit(df, np.digitize(y, np.quantile(y, [0.33, 0.66])))
    return df, dict(reg=reg, binary=binary, multi=multi)


def _new_rows(df):
    """Rows the model has not seen: an unknown town, empty category cells, all empty."""
    rows = df.iloc[:8].copy()
    rows["Town"] = rows["Town"].cat.add_categories(["Seoul"])
    rows.iloc[0, rows.columns.get_loc("Town")] = "Seoul"
    rows.iloc[1, rows.columns.get_loc("Town")] = np.nan
    rows.iloc[2, :] = np.nan
    return rows


@pytest.mark.parametrize("name", ["reg", "binary", "multi"])
def test_predictions_equal_the_model(models, name):
    df, ms = models
    m = ms[name]
    ens = flatten_model(m)
    assert ens.has_rules and ens.categories[1] == ("Anyang", "Busan", "Cheongju", "Daegu", "Eumseong")
    assert ens.categorical_features() == [1, 3]
    for rows in (df, _new_rows(df)):
        want = m.predict(rows)[:, None] if name == "reg" else m.predict_proba(rows)
        np.testing.assert_allclose(ens.predict(rows), want, rtol=0, atol=1e-12)
        # the numpy walk (apply) and the compiled one agree leaf for leaf
        np.testing.assert_allclose(ens.value[ens.apply(rows)].sum(1) * ens.scale + ens.base,
                                   ens.predict_raw(rows), atol=1e-12)


@pytest.mark.parametrize("name", ["reg", "binary", "multi"])
def test_path_dependent_equals_brute_force(models, name):
    df, ms = models
    m = ms[name]
    ens = flatten_model(m)
    rows = _new_rows(df).iloc[:5]
    ours = TreeShap(m, output="raw").explain(rows, nan_is_missing=False)
    want = brute_path_dependent(ens, ens.prepare_inputs(rows))
    got = ours.values if ours.values.ndim == 3 else ours.values[..., None]
    np.testing.assert_allclose(got, want, atol=1e-10)
    ours.check_additivity(atol=1e-9)


@pytest.mark.parametrize("name", ["reg", "multi"])
def test_interventional_equals_exact(models, name):
    df, ms = models
    m = ms[name]
    rows, bg = _new_rows(df), df.iloc[200:240]
    ours = TreeShap(m, bg, mode="interventional", output="raw").explain(rows, nan_is_missing=False)
    ref = ExactShap(m, bg, output="raw").explain(rows, nan_is_missing=False)
    np.testing.assert_allclose(ours.values, ref.values, atol=1e-12)
    np.testing.assert_allclose(ours.predictions, ref.predictions, atol=1e-12)


def test_masks_give_zero_and_local_accuracy(models):
    df, ms = models
    m = ms["reg"]
    rows, bg = df.iloc[:12], df.iloc[300:330]
    mask = np.zeros(rows.shape, bool)
    mask[:, 1] = True  # Town missing
    mask[::2, 3] = True
    for mode, background in (("path_dependent", None), ("interventional", bg)):
        res = TreeShap(m, background, mode=mode).explain(rows, mask, nan_is_missing=False)
        assert np.all(res.values[mask] == 0.0)
        np.testing.assert_allclose(res.values.sum(1) + res.base_values, res.predictions, atol=1e-9)
    want = brute_path_dependent(flatten_model(m), flatten_model(m).prepare_inputs(rows), mask)[..., 0]
    got = TreeShap(m).explain(rows, mask, nan_is_missing=False).values
    np.testing.assert_allclose(got, want, atol=1e-10)


@pytest.mark.parametrize("features", [["Town"], ["Pet"], ["Age (years)"], ["Town", "Score"], ["Pet", "Town"], ["Score", "Pet"]])
@pytest.mark.parametrize("name", ["reg", "binary"])
def test_tree_pd_equals_brute(models, name, features):
    df, ms = models
    m = ms[name]
    data = df.iloc[:150]
    tree = partial_dependence(m, data, features, method="tree", kind="both")
    brute = partial_dependence(m, data, features, method="brute", kind="both")
    assert tree.method == "tree"
    np.testing.assert_allclose(np.asarray(tree.average, float), np.asarray(brute.average, float), atol=1e-12)
    np.testing.assert_allclose(np.asarray(tree.individual, float), np.asarray(brute.individual, float), atol=1e-12)


def test_interaction_rows_sum_to_shap_values(models):
    df, ms = models
    m = ms["reg"]
    rows = df.iloc[:6]
    ts = TreeShap(m)
    inter = ts.interactions(rows, nan_is_missing=False)
    np.testing.assert_allclose(inter.values.sum(axis=2), ts.explain(rows, nan_is_missing=False).values, atol=1e-10)


def test_explain_auto_uses_tree_shap_and_h_statistic_runs(models):
    df, ms = models
    res = explain(ms["binary"], df.iloc[:20], method="auto")
    assert res.method == "tree"
    h = h_statistic(ms["reg"], df.iloc[:60], pairs=[("Town", "Pet")])
    assert np.all(np.isfinite(np.asarray(h.values, float)))


def test_rule_records_route_as_documented():
    """A hand-built categorical rule: the set goes left, codes past the set go
    where RULE_OTHER_LEFT says, NaN follows missing_go_left."""
    from explainers.trees.ensemble import RULE_OTHER_LEFT, assemble

    leaf = lambda v: v  # noqa: E731
    feature = np.array([0, -1, -1])
    threshold = np.array([0.0, np.nan, np.nan])
    left, right = np.array([1, -1, -1]), np.array([2, -1, -1])
    value = np.array([[0.0], [leaf(1.0)], [leaf(2.0)]])
    for flags, other in ((RULE_CATEGORICAL, 2.0), (RULE_CATEGORICAL | RULE_OTHER_LEFT, 1.0)):
        part = (feature, threshold, left, right, np.array([1, 0, 0], np.uint8), value, np.ones(3), -1,
                {0: rule_record(flags, [0, 3, 70])})
        ens = assemble([part], [-1], base=[0.0], scale=1.0, transform="identity", float32_inputs=False,
                       n_features=1, model_name="hand")
        x = np.array([[0.0], [3.0], [70.0], [1.0], [64.0], [np.nan], [-1.0], [128.0], [3.7]])
        want = [1.0, 1.0, 1.0, 2.0, 2.0, 1.0, other, other, 1.0]
        np.testing.assert_array_equal(ens.predict(x)[:, 0], want)
        np.testing.assert_array_equal(ens.value[ens.apply(x)][:, 0, 0], want)


def test_rule_record_of_a_full_set_equals_the_definition():
    """A categorical set naming codes up to 65,535 (issue #28: a Python loop of that length per node
    cost 71 s for a 104 KB XGBoost file) sets exactly its codes' bits, in one vectorised pass."""
    from explainers.trees.ensemble import RULE_CATEGORICAL, rule_record

    rng = np.random.default_rng(0)
    for codes in (np.arange(0, 65536, 3), np.array([65535]), np.unique(rng.integers(0, 65536, 5000)),
                  np.array([0, 0, 63, 64, 64])):
        rec = rule_record(RULE_CATEGORICAL, codes)
        k = int(rec[0])
        assert k == int(codes.max()) // 64 + 1 and int(rec[1]) == RULE_CATEGORICAL
        words = rec[2:].view(np.uint64)
        want = [0] * k
        for c in set(int(c) for c in codes):
            want[c >> 6] |= 1 << (c & 63)
        assert [int(w) for w in words] == want


_ODD_CODES = np.array([-0.5, -0.99, -1, -1.5, 0, 0.5, 1.7, 2.5, 5.99, 6, 7, 63.9, 64, 1e10, -1e10,
                       2**31 + 0.5, np.nan, -0.0, 3.0000001])


def _integer_categories():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"c": rng.integers(0, 6, 2000), "x": rng.normal(size=2000)})
    y = np.array([0, 3, -1, 2, 5, -2])[X.c] + X.x
    return X, y, pd.DataFrame({"c": _ODD_CODES, "x": np.zeros(len(_ODD_CODES))})


def test_xgboost_reads_numbers_for_categories_0_to_k_as_it_does(tmp_path):
    """Categories that are the codes 0..k-1 themselves: a number in a plain column is read as
    XGBoost reads one (truncated; negative or out of range: where unknowns go), not looked up
    as a label (1.7 was 'unknown' here, category 1 in XGBoost: 4.8 against 2.96)."""
    import xgboost as xgb

    from explainers.io import load_model

    X, y, Q = _integer_categories()
    model = xgb.XGBRegressor(n_estimators=20, max_depth=3, enable_categorical=True, tree_method="hist",
                             max_cat_to_onehot=1).fit(X.assign(c=pd.Categorical(X.c)), y)
    model.save_model(tmp_path / "m.json")
    ours = load_model((tmp_path / "m.json").read_bytes(), filename="m.json")
    theirs = model.get_booster().predict(xgb.DMatrix(Q.to_numpy(), feature_names=["c", "x"],
                                                     feature_types=["c", "q"], enable_categorical=True))
    np.testing.assert_allclose(ours.predict(Q), theirs, rtol=0, atol=1e-5)
    res = TreeShap(ours).explain(Q)
    np.testing.assert_allclose(res.base_values + res.values.sum(axis=1), theirs, rtol=0, atol=1e-5)


def test_lightgbm_and_histgradientboosting_read_the_same_numbers_as_they_do(tmp_path):
    import lightgbm as lgb

    from explainers.io import load_model

    X, y, Q = _integer_categories()
    booster = lgb.LGBMRegressor(n_estimators=20, verbose=-1, min_data_per_group=5,
                                cat_smooth=1).fit(X.assign(c=pd.Categorical(X.c)), y).booster_
    booster.save_model(tmp_path / "m.txt")
    ours = load_model((tmp_path / "m.txt").read_bytes(), filename="m.txt")
    np.testing.assert_allclose(ours.predict(Q), booster.predict(Q.to_numpy()), rtol=0, atol=1e-9)
    hgb = HistGradientBoostingRegressor(max_iter=20, categorical_features=[0], random_state=0).fit(X, y)
    res = TreeShap(hgb).explain(Q)
    np.testing.assert_allclose(res.predictions, hgb.predict(Q), rtol=0, atol=1e-9)
