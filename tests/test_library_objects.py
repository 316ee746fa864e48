"""XGBoost, LightGBM and CatBoost objects straight from a notebook (issue #27).

Oracles: each library's own contributions (XGBoost ``pred_contribs``, LightGBM
``pred_contrib``, CatBoost ``ShapValues``) and predictions; and the same model saved
to its library's file and loaded with ``load_model`` (the upload path), which must
give the same numbers as the in-memory object.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.compose import TransformedTargetRegressor, make_column_transformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from explainers import InvalidDataError, ModelAdapter, load_model
from explainers.importance import library_importance, library_importance_kinds, permutation_importance
from explainers.pdp import partial_dependence
from explainers.shap import ExactShap, TreeShap, explain
from explainers.trees import NativeTreeModel, flatten_model, is_tree_model
from explainers.trees.library import native_form, save_native

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
cb = pytest.importorskip("catboost")

N = 240


def _data(seed=0, categorical=False):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=N), "b": rng.normal(size=N), "c": rng.uniform(-1, 1, N)})
    signal = 1.5 * X.a - X.b * X.c
    if categorical:
        X["k"] = pd.Categorical(rng.choice(["red", "green", "blue"], N), categories=["red", "green", "blue"])
        signal = signal + np.where(X.k == "green", 1.2, 0.0)
    return X, signal.to_numpy()


def _targets(signal, task):
    if task == "regression":
        return signal
    if task == "binary":
        return (signal > np.median(signal)).astype(int)
    return np.digitize(signal, np.quantile(signal, [1 / 3, 2 / 3]))


def _fit(library, task, categorical=False, dart=False):
    X, signal = _data(categorical=categorical)
    y = _targets(signal, task)
    if library == "xgboost":
        kw = dict(n_estimators=12, max_depth=3, learning_rate=0.3, enable_categorical=categorical,
                  tree_method="hist", booster="dart" if dart else "gbtree")
        model = (xgb.XGBRegressor if task == "regression" else xgb.XGBClassifier)(**kw)
    elif library == "lightgbm":
        kw = dict(n_estimators=12, num_leaves=8, min_child_samples=5, verbose=-1,
                  boosting_type="dart" if dart else "gbdt")
        model = (lgb.LGBMRegressor if task == "regression" else lgb.LGBMClassifier)(**kw)
    else:
        kw = dict(iterations=12, depth=3, verbose=0, random_seed=0, allow_writing_files=False)
        model = (cb.CatBoostRegressor if task == "regression" else cb.CatBoostClassifier)(**kw)
    return model.fit(X, y), X


def _library_contributions(model, X) -> np.ndarray:
    """(n, outputs, p + 1): each library's own SHAP values, the last column the expected value."""
    n = len(X)
    if isinstance(model, (xgb.XGBModel,)):
        c = model.get_booster().predict(xgb.DMatrix(X, enable_categorical=True), pred_contribs=True)
    elif isinstance(model, lgb.LGBMModel):
        c = model.predict(X, pred_contrib=True)
        if isinstance(c, list):
            c = np.stack([np.asarray(m) for m in c], axis=1)
    else:
        c = model.get_feature_importance(cb.Pool(X), type="ShapValues")
    c = np.asarray(c, dtype=float)
    if c.ndim == 2:
        p1 = X.shape[1] + 1
        c = c.reshape(n, -1, p1) if c.shape[1] != p1 else c[:, None, :]
    return c


def _ours(res) -> np.ndarray:
    values = np.asarray(res.values, dtype=float)
    base = np.asarray(res.base_values, dtype=float)
    if values.ndim == 2:
        return np.concatenate([values, base.reshape(-1, 1)], axis=1)[:, None, :]
    return np.concatenate([values.transpose(0, 2, 1), base.reshape(len(values), -1)[:, :, None]], axis=2)


def _tolerance(model, X) -> float:
    """XGBoost computes in float32: its contributions carry float32 round-off."""
    if isinstance(model, xgb.XGBModel):
        margin = model.predict(X, output_margin=True)
        return 1e-5 * max(1.0, float(np.abs(margin).max()))
    return 1e-9


CASES = [(lib, task, cat) for lib in ("xgboost", "lightgbm", "catboost")
         for task in ("regression", "binary", "multiclass")
         for cat in (False, True) if not (lib == "catboost" and cat)]


@pytest.mark.parametrize("library, task, categorical", CASES)
def test_tree_shap_of_the_object_equals_the_library_and_its_file(library, task, categorical, tmp_path):
    model, X = _fit(library, task, categorical)
    rows = X.iloc[:40]
    res = TreeShap(model).explain(rows)
    lib = _library_contributions(model, rows)
    np.testing.assert_allclose(_ours(res), lib, rtol=0, atol=_tolerance(model, rows))
    # explain() takes the tree path (not a slow model-agnostic fallback)
    auto = explain(model, rows)
    assert auto.method == "tree"
    np.testing.assert_allclose(np.asarray(auto.values), np.asarray(res.values), rtol=0, atol=1e-12)
    # the same model saved to its library's file and loaded as an upload: the same numbers
    path, settings = save_native(model, tmp_path / "model")
    loaded = load_model(path)
    assert isinstance(loaded, NativeTreeModel)
    from_file = TreeShap(loaded).explain(rows)
    np.testing.assert_allclose(np.asarray(from_file.values), np.asarray(res.values), rtol=0, atol=1e-12)
    # predictions of the converted model are the library's
    adapter = ModelAdapter(model)
    if task == "regression":
        np.testing.assert_allclose(adapter.predict(rows).reshape(-1), model.predict(rows), rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_allclose(adapter.with_output("proba", None).predict(rows), model.predict_proba(rows),
                                   rtol=1e-6, atol=1e-6)
        assert list(adapter.classes) == list(model.classes_)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_dart_objects_equal_the_library(library):
    model, X = _fit(library, "regression", dart=True)
    rows = X.iloc[:30]
    res = TreeShap(model).explain(rows)
    np.testing.assert_allclose(_ours(res), _library_contributions(model, rows), rtol=0,
                               atol=_tolerance(model, rows))


def test_boosters_too():
    X, signal = _data()
    xb = xgb.train({"max_depth": 3, "eta": 0.3}, xgb.DMatrix(X, signal), 10)
    lb = lgb.train({"verbose": -1, "num_leaves": 8}, lgb.Dataset(X, signal), 10)
    rows = X.iloc[:25]
    for booster, lib in ((xb, xb.predict(xgb.DMatrix(rows), pred_contribs=True)),
                         (lb, lb.predict(rows, pred_contrib=True))):
        assert is_tree_model(booster)
        res = TreeShap(booster).explain(rows)
        tol = 1e-4 if booster is xb else 1e-9
        np.testing.assert_allclose(_ours(res)[:, 0], lib, rtol=0, atol=tol)
        assert library_importance_kinds(booster)  # the library's own importances, from the object


def test_conversion_is_reused_until_the_model_is_refit():
    model, X = _fit("xgboost", "regression")
    first = native_form(model)
    assert native_form(model) is first  # explaining again does not read the model again
    assert flatten_model(model) is first.ensemble
    model.fit(X, -_data()[1])  # refit in place: a new booster, new trees
    second = native_form(model)
    assert second is not first
    np.testing.assert_allclose(second.predict(X), model.predict(X), rtol=1e-6, atol=1e-6)


def test_xgboost_missing_setting_is_kept():
    """XGBClassifier(missing=1e-8): every input equal to 1e-8 is a missing value, as XGBoost
    reads it (a pickle of the wrapper lost it: up to 7.84 apart in log-odds)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 4))
    X[rng.random(X.shape) < 0.25] = 1e-8
    y = (X[:, 0] + 2.0 * (X[:, 1] == 1e-8) + rng.normal(0, 0.1, 400) > 0.5).astype(int)
    clf = xgb.XGBClassifier(missing=1e-8, n_estimators=30, max_depth=3).fit(X, y)
    rows = X[:80]
    margin = clf.predict(rows, output_margin=True)
    res = TreeShap(clf).explain(rows)
    total = np.asarray(res.values).sum(axis=1).reshape(-1) + np.asarray(res.base_values).reshape(-1)
    np.testing.assert_allclose(total, margin, rtol=0, atol=1e-5)
    lib = clf.get_booster().predict(xgb.DMatrix(rows, missing=1e-8), pred_contribs=True)
    np.testing.assert_allclose(np.asarray(res.values).reshape(80, -1), lib[:, :-1], rtol=0, atol=1e-5)
    # partial dependence at the missing value itself follows the missing direction
    pd_res = partial_dependence(clf, rows, [1], custom_values={1: [1e-8, 0.5]}, kind="average")
    assert pd_res.method == "tree"
    copies = np.repeat(rows[None], 2, axis=0)
    copies[0, :, 1], copies[1, :, 1] = 1e-8, 0.5
    expected = [clf.predict_proba(c).mean(axis=0) for c in copies]
    got = np.asarray(pd_res.average)
    np.testing.assert_allclose(got, np.asarray(expected)[:, -got.shape[-1]:] if got.ndim == 2
                               else np.asarray(expected)[:, 1], rtol=0, atol=1e-6)


def test_category_codes_follow_the_library():
    """A model fitted on a pandas category column, given numeric codes: code 2 is the third
    category (XGBoost: [1.478, 1.0] in the report), never an unknown label."""
    model, X = _fit("xgboost", "regression", categorical=True)
    codes = X.assign(k=X.k.cat.codes.astype(float)).iloc[:30]
    dm = xgb.DMatrix(X.iloc[:30], enable_categorical=True)
    want = model.get_booster().predict(dm)
    res = TreeShap(model).explain(codes)
    total = np.asarray(res.values).sum(axis=1) + np.asarray(res.base_values).reshape(-1)
    np.testing.assert_allclose(total, want, rtol=0, atol=1e-5)
    arr = TreeShap(model).explain(codes.to_numpy())
    np.testing.assert_allclose(np.asarray(arr.values), np.asarray(res.values), rtol=0, atol=1e-12)
    # the labels themselves are looked up in the model's categories
    labels = TreeShap(model).explain(X.iloc[:30])
    np.testing.assert_allclose(np.asarray(labels.values), np.asarray(res.values), rtol=0, atol=1e-12)


def test_pipeline_ending_in_lgbm_with_one_hot_explained_in_original_columns():
    X, signal = _data(categorical=True)
    X = X.assign(k=X.k.astype(str))
    y = (signal > np.median(signal)).astype(int)
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["k"]), remainder="passthrough"),
                         lgb.LGBMClassifier(n_estimators=15, num_leaves=8, verbose=-1)).fit(X, y)
    rows = X.iloc[:40]
    res = explain(pipe, rows)
    assert res.method == "tree"
    assert list(res.feature_names) == ["a", "b", "c", "k"]  # the pipeline's own columns
    margin = pipe.predict_proba(rows)[:, 1]
    total = np.asarray(res.values).sum(axis=1).reshape(-1) + np.asarray(res.base_values).reshape(-1)
    np.testing.assert_allclose(1 / (1 + np.exp(-total)), margin, rtol=0, atol=1e-9)
    # the folded Tree SHAP (interventional, small background) is the Shapley value of the
    # pipeline's own game: ExactShap on the raw margin with the same background
    bg = X.iloc[100:130]
    tree = TreeShap(pipe, bg, mode="interventional", output="raw").explain(rows.iloc[:8])
    exact = ExactShap(pipe, bg, output="raw").explain(rows.iloc[:8])
    np.testing.assert_allclose(np.asarray(tree.values), np.asarray(exact.values), rtol=0, atol=1e-9)


def test_pipeline_and_scaled_xgboost_and_importances():
    X, signal = _data()
    pipe = make_pipeline(StandardScaler(), xgb.XGBRegressor(n_estimators=10, max_depth=3)).fit(X, signal)
    rows = X.iloc[:30]
    res = TreeShap(pipe).explain(rows)
    total = np.asarray(res.values).sum(axis=1) + np.asarray(res.base_values).reshape(-1)
    np.testing.assert_allclose(total, pipe.predict(rows), rtol=0, atol=1e-5)
    imp = permutation_importance(pipe, X, signal, n_repeats=2, random_state=0)
    assert len(imp.importances) == 3
    model, _ = _fit("lightgbm", "regression")
    gain = library_importance(model, "gain")
    booster_gain = model.booster_.feature_importance("gain")
    np.testing.assert_allclose(gain.importances, booster_gain, rtol=1e-7)  # the text file's digits


def test_transformed_target_with_a_library_model_is_explained_model_agnostically():
    X, signal = _data()
    ttr = TransformedTargetRegressor(xgb.XGBRegressor(n_estimators=8), func=np.exp, inverse_func=np.log)
    ttr.fit(X, signal)
    rows = X.iloc[:6]
    res = explain(ttr, rows, background=X.iloc[:20])
    assert res.method == "exact"  # its prediction is not the trees' sum
    total = np.asarray(res.values).sum(axis=1) + np.asarray(res.base_values).reshape(-1)
    np.testing.assert_allclose(total, ttr.predict(rows), rtol=1e-6, atol=1e-6)


def test_sparse_inputs_and_library_containers():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    X[X < 0.3] = 0.0
    y = X[:, 0] + X[:, 1]
    csr = sp.csr_matrix(X)
    for model in (xgb.XGBRegressor(n_estimators=6).fit(csr, y), lgb.LGBMRegressor(n_estimators=6, verbose=-1).fit(csr, y)):
        res = explain(model, csr[:50])
        total = np.asarray(res.values).sum(axis=1) + np.asarray(res.base_values).reshape(-1)
        # XGBoost reads a sparse matrix's absent entries as missing, LightGBM as zeros: both followed
        np.testing.assert_allclose(total, model.predict(csr[:50]), rtol=0, atol=1e-5)
    with pytest.raises(InvalidDataError, match="DMatrix.*DataFrame or array it was built from"):
        explain(xgb.XGBRegressor(n_estimators=2).fit(X, y), xgb.DMatrix(X[:5]))


def test_unfitted_objects_are_refused_with_a_message():
    from explainers import ExplainerError

    for model in (xgb.XGBRegressor(), lgb.LGBMClassifier(), cb.CatBoostRegressor()):
        with pytest.raises(ExplainerError, match="not (a )?fitted"):
            ModelAdapter(model)


@pytest.mark.parametrize("library, task", [("xgboost", "binary"), ("xgboost", "multiclass"),
                                           ("catboost", "regression"), ("catboost", "multiclass")])
def test_shap_interactions_of_the_object_equal_the_library(library, task):
    model, X = _fit(library, task)
    rows = X.iloc[:15]
    ours = np.asarray(TreeShap(model).interactions(rows).values, dtype=float)
    if library == "xgboost":
        lib = model.get_booster().predict(xgb.DMatrix(rows), pred_interactions=True)
    else:
        lib = np.asarray(model.get_feature_importance(cb.Pool(rows), type="ShapInteractionValues"))
    lib = np.asarray(lib, dtype=float)
    p = X.shape[1]
    if lib.ndim == 4:  # (n, K, p + 1, p + 1)
        lib = lib[:, :, :p, :p].transpose(0, 2, 3, 1)
    else:
        lib = lib[:, :p, :p]
    if ours.ndim == 3 and lib.ndim == 4:
        lib = lib[..., -1]
    np.testing.assert_allclose(ours, lib, rtol=0, atol=_tolerance(model, rows) * 10)


def test_data_check_says_numbers_are_read_as_category_codes(tmp_path):
    from explainers import load_data

    model, X = _fit("xgboost", "regression", categorical=True)
    path, _ = save_native(model, tmp_path / "model")
    loaded = load_model(path)
    X.assign(k=X.k.cat.codes).to_csv(tmp_path / "codes.csv", index=False)
    ds = load_data(tmp_path / "codes.csv", model=loaded)
    assert any("Column 'k' holds numbers: they are read as the model's category codes (0 = 'red', "
               "1 = 'green', 2 = 'blue'), as XGBoost reads" in n for n in ds.notices), ds.notices
    X.assign(k=X.k.astype(str)).to_csv(tmp_path / "labels.csv", index=False)
    labels = load_data(tmp_path / "labels.csv", model=loaded)
    assert not any("category codes" in n for n in labels.notices)
    np.testing.assert_allclose(loaded.predict(ds.X), loaded.predict(labels.X), rtol=0, atol=0)


def test_trusted_pickle_of_a_wrapper_keeps_its_missing_value(tmp_path):
    """The operator-trusted pickle path reads the wrapper as the in-memory path does."""
    import joblib

    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    X[rng.random(X.shape) < 0.3] = 1e-8
    y = (X[:, 0] + 3.0 * (X[:, 2] == 1e-8) > 0.5).astype(int)
    clf = xgb.XGBClassifier(missing=1e-8, n_estimators=20, max_depth=3).fit(X, y)
    joblib.dump(clf, tmp_path / "clf.joblib")
    loaded = load_model(tmp_path / "clf.joblib", trusted=True)
    assert isinstance(loaded, NativeTreeModel) and loaded.ensemble.missing_value == 1e-8
    np.testing.assert_allclose(loaded.predict_raw(X)[:, 0], clf.predict(X, output_margin=True), rtol=0, atol=1e-5)
    pipe = make_pipeline(StandardScaler(), xgb.XGBRegressor(n_estimators=5)).fit(X, X[:, 0])
    joblib.dump(pipe, tmp_path / "pipe.joblib")
    folded = load_model(tmp_path / "pipe.joblib", trusted=True)
    assert isinstance(folded.steps[-1][1], NativeTreeModel) and is_tree_model(folded)
    np.testing.assert_allclose(folded.predict(X), pipe.predict(X), rtol=1e-6, atol=1e-6)


def test_early_stopped_objects_explain_the_rounds_their_predict_uses(tmp_path):
    """An XGBRegressor / LGBMRegressor stopped early predicts with its best iteration; so do its
    explanation, its saved file (as show() saves it) and its importances' trees."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 4))
    y = X[:, 0] + rng.normal(size=600)
    fit, val = slice(0, 400), slice(400, None)
    xm = xgb.XGBRegressor(n_estimators=300, learning_rate=0.3, early_stopping_rounds=5)
    xm.fit(X[fit], y[fit], eval_set=[(X[val], y[val])], verbose=False)
    lm = lgb.LGBMRegressor(n_estimators=300, learning_rate=0.3, verbose=-1)
    lm.fit(X[fit], y[fit], eval_set=[(X[val], y[val])], callbacks=[lgb.early_stopping(5, verbose=False)])
    assert xm.best_iteration + 1 < xm.get_booster().num_boosted_rounds()  # stopped early, for real
    rows = X[val][:40]
    for model in (xm, lm):
        res = TreeShap(model).explain(rows)
        total = np.asarray(res.values).sum(axis=1) + np.asarray(res.base_values).reshape(-1)
        np.testing.assert_allclose(total, model.predict(rows), rtol=0, atol=1e-5)
        path, _ = save_native(model, tmp_path / type(model).__name__)
        np.testing.assert_allclose(load_model(path).predict(rows), model.predict(rows), rtol=0, atol=1e-5)
