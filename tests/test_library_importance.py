"""library_importance: the boosting libraries' own gain, cover and split count, read from their files.

Oracle: the library's own numbers for the same booster (XGBoost ``get_score`` with
``total_gain`` / ``total_cover`` / ``weight``; LightGBM ``feature_importance``), for
models saved to a file and read back without the library.
"""
import numpy as np
import pandas as pd
import pytest

from explainers import ExplainerError, load_model
from explainers.errors import InvalidModelError, InvalidParameterError
from explainers.importance import (compare_importances, library_importance, library_importance_kinds, mdi,
                                   permutation_importance)

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")

XGB_KINDS = {"gain": "total_gain", "cover": "total_cover", "split count": "weight"}
LGB_KINDS = {"gain": "gain", "split count": "split"}


def _frame(n=300, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, p)), columns=[f"f{j}" for j in range(p)])
    y = 2 * X.f0 + X.f1 * X.f2 + 0.5 * X.f3 + rng.normal(0, 0.1, n)
    return X, y


def _xgb_file(tmp_path, booster, suffix):
    path = tmp_path / f"m{suffix}"
    booster.save_model(str(path))
    return load_model(path)


def _xgb_oracle(booster, kind, names):
    score = booster.get_score(importance_type=XGB_KINDS[kind])
    return np.array([score.get(n, 0.0) for n in names])


@pytest.mark.parametrize("suffix", [".json", ".ubj"])
@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic", "multi:softprob"])
def test_xgboost_equals_get_score(tmp_path, suffix, objective):
    X, y = _frame()
    X["unused"] = 0.0  # never split on: importance 0 (get_score leaves it out)
    params = {"objective": objective, "max_depth": 4, "eta": 0.3, "seed": 0, "nthread": 1}
    if objective == "binary:logistic":
        y = (y > y.median()).astype(int)
    elif objective == "multi:softprob":
        y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
        params["num_class"] = 3
    booster = xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=15)
    model = _xgb_file(tmp_path, booster, suffix)
    assert library_importance_kinds(model) == ("gain", "cover", "split count")
    for kind in XGB_KINDS:
        res = library_importance(model, kind)
        expected = _xgb_oracle(booster, kind, list(X.columns))
        np.testing.assert_allclose(res.importances, expected, rtol=1e-6, atol=1e-9)
        assert res.importances[-1] == 0
        assert res.feature_names == list(X.columns)
        assert res.method == f"xgboost_{kind.replace(' ', '_')}"
        assert res.label == f"XGBoost {kind}"
        assert res.params["normalized"] is False
        assert res.raw.shape == (X.shape[1], 1) and not res.std.any()


def test_xgboost_sklearn_wrapper_file_with_missing_values(tmp_path):
    X, y = _frame(seed=1)
    X.loc[X.index[::7], "f1"] = np.nan
    clf = xgb.XGBRegressor(n_estimators=20, max_depth=3, n_jobs=1, random_state=0).fit(X, y)
    clf.save_model(str(tmp_path / "m.json"))
    model = load_model(tmp_path / "m.json")
    for kind in XGB_KINDS:
        expected = _xgb_oracle(clf.get_booster(), kind, list(X.columns))
        np.testing.assert_allclose(library_importance(model, kind).importances, expected, rtol=1e-6)


@pytest.mark.parametrize("objective", ["regression", "binary", "multiclass"])
def test_lightgbm_equals_feature_importance(tmp_path, objective):
    X, y = _frame(n=400, seed=2)
    X["colour"] = pd.Categorical(np.random.default_rng(3).choice(["red", "green", "blue"], len(X)))
    y = y + X.colour.map({"red": 1.0, "green": 0.0, "blue": -1.0}).astype(float)
    X.loc[X.index[::9], "f3"] = np.nan
    params = {"objective": objective, "num_leaves": 15, "learning_rate": 0.1, "verbose": -1,
              "num_threads": 1, "seed": 0, "min_data_per_group": 5, "cat_smooth": 1}
    if objective == "binary":
        y = (y > y.median()).astype(int)
    elif objective == "multiclass":
        y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
        params["num_class"] = 3
    booster = lgb.train(params, lgb.Dataset(X, label=y), num_boost_round=20)
    path = tmp_path / "m.txt"
    booster.save_model(str(path))
    model = load_model(path)
    assert model.library == "lightgbm"
    for kind, lib_kind in LGB_KINDS.items():
        res = library_importance(model, kind)
        np.testing.assert_allclose(res.importances, booster.feature_importance(lib_kind), rtol=1e-6, atol=1e-9)
        assert res.label == f"LightGBM {kind}"
        assert res.feature_names == list(X.columns)
    # the categorical column is split on, so it has a gain
    assert library_importance(model, "gain").importances[-1] > 0
    # the libraries' own names for the kinds are accepted
    np.testing.assert_array_equal(library_importance(model, "split").importances,
                                  booster.feature_importance("split"))


def test_names_by_position_when_the_file_has_none(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 3))
    y = X[:, 0] + rng.normal(0, 0.1, 200)
    booster = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1}, lgb.Dataset(X, y), 10)
    booster.save_model(str(tmp_path / "m.txt"))
    model = load_model(tmp_path / "m.txt")
    assert library_importance(model).feature_names == ["x0", "x1", "x2"]
    res = library_importance(model, feature_names=["a", "b", "c"])
    assert res.feature_names == ["a", "b", "c"]
    np.testing.assert_allclose(res.importances, booster.feature_importance("gain"), rtol=1e-6)
    with pytest.raises(ExplainerError, match="2 feature names were given but the model's trees read 3"):
        library_importance(model, feature_names=["a", "b"])


def test_catboost_gives_split_count_and_cover(tmp_path):
    cb = pytest.importorskip("catboost")
    X, y = _frame(n=200, seed=5)
    m = cb.CatBoostRegressor(iterations=10, depth=3, verbose=False, random_seed=0, thread_count=1,
                             allow_writing_files=False).fit(X, y)
    m.save_model(str(tmp_path / "m.json"), format="json")
    model = load_model(tmp_path / "m.json")
    assert library_importance_kinds(model) == ("cover", "split count")
    counts = library_importance(model, "split count")
    assert counts.label == "CatBoost split count"
    # oblivious trees: one split per level, 10 trees of depth 3
    assert counts.importances.sum() == 30
    with pytest.raises(InvalidModelError, match="gives no gain .*choose kind='cover'"):
        library_importance(model, "gain")


@pytest.mark.parametrize("kind, match", [
    ("entropy", "The 'kind' parameter of library_importance must be one of"),
    (None, "The 'kind' parameter of library_importance must be one of"),
])
def test_bad_kind(tmp_path, kind, match):
    X, y = _frame(n=100)
    booster = xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(X, label=y), 3)
    with pytest.raises(InvalidParameterError, match=match):
        library_importance(_xgb_file(tmp_path, booster, ".json"), kind)


def test_refuses_models_not_read_from_a_library_file(reg_data):
    from sklearn.ensemble import RandomForestRegressor

    X, y = reg_data
    rf = RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y)
    with pytest.raises(InvalidModelError, match="a RandomForestRegressor is not one"):
        library_importance(rf)
    assert library_importance_kinds(rf) == ()


def test_mdi_points_native_models_to_library_importance(tmp_path):
    X, y = _frame(n=100)
    booster = xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(X, label=y), 3)
    with pytest.raises(InvalidModelError, match=r"this XGBoost model was read from its own file.*"
                                                r"library_importance\(model, kind='gain'\)"):
        mdi(_xgb_file(tmp_path, booster, ".json"))


def test_compared_with_permutation_and_flagged_like_mdi(tmp_path):
    # an id-like noise column: many split points, no signal -> gain ranks it above permutation
    rng = np.random.default_rng(6)
    n = 400
    X = pd.DataFrame({"signal": rng.normal(size=n), "a": rng.integers(0, 3, n).astype(float),
                      "b": rng.integers(0, 3, n).astype(float), "noise_id": rng.permutation(n) / n})
    y = X.signal + 0.5 * X.a + 0.5 * X.b + rng.normal(0, 1.5, n)
    booster = xgb.train({"max_depth": 8, "eta": 0.3, "seed": 0, "nthread": 1, "min_child_weight": 1},
                        xgb.DMatrix(X.iloc[:300], label=y.iloc[:300]), 60)
    model = _xgb_file(tmp_path, booster, ".json")
    gain = library_importance(model, "gain")
    perm = permutation_importance(model, X.iloc[300:], y.iloc[300:], n_repeats=5, random_state=0)
    comp = compare_importances([gain, perm], X=X)
    assert comp.methods == ["XGBoost gain", "Holdout permutation (R²)"]
    np.testing.assert_allclose(comp.shares["XGBoost gain"].sum(), 1.0)
    np.testing.assert_allclose(comp.shares["XGBoost gain"].to_numpy(),
                               gain.importances / gain.importances.sum())
    flagged = comp.flags.set_index("feature")
    assert flagged.loc["noise_id", "reason"] == "high_cardinality"
    assert flagged.loc["noise_id", "detail"].startswith("XGBoost gain ranks 'noise_id' far above permutation")
