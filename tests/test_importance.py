"""Tests for explainers.importance: oracles are scikit-learn's own numbers."""
import pickle
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification, make_friedman1
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
from sklearn.inspection import permutation_importance as sk_permutation_importance
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import make_scorer, mean_absolute_error
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler
from sklearn.tree import DecisionTreeRegressor

from explainers.errors import (
    ExplainerError,
    InvalidDataError,
    InvalidModelError,
    InvalidParameterError,
)
from explainers.importance import (
    ImportanceComparison,
    ImportanceResult,
    compare_importances,
    mdi,
    oob_permutation_importance,
    oob_sample_indices,
    permutation_importance,
    shap_importance,
)


# ------------------------------------------------------------------------------ data
@pytest.fixture(scope="module")
def friedman():
    X, y = make_friedman1(n_samples=240, n_features=7, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def rf_reg(friedman):
    X, y = friedman
    return RandomForestRegressor(n_estimators=15, max_depth=5, oob_score=True, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def binary():
    X, y = make_classification(n_samples=240, n_features=5, n_informative=3, n_redundant=0,
                               random_state=0)
    return X, np.where(y == 1, "yes", "no")


@pytest.fixture(scope="module")
def multiclass():
    X, y = make_classification(n_samples=240, n_features=5, n_informative=3, n_redundant=0,
                               n_classes=3, n_clusters_per_class=1, random_state=1)
    return X, y


@pytest.fixture(scope="module")
def rf_bin(binary):
    X, y = binary
    return RandomForestClassifier(n_estimators=15, max_depth=5, oob_score=True, random_state=0).fit(X, y)


def _invariants(res: ImportanceResult):
    p = len(res.feature_names)
    assert res.importances.shape == (p,) and res.std.shape == (p,)
    assert res.raw.ndim == 2 and res.raw.shape[0] == p
    np.testing.assert_allclose(res.std, res.raw.std(axis=1), atol=1e-15)
    np.testing.assert_allclose(res.importances, res.raw.mean(axis=1), rtol=1e-12, atol=1e-15)
    assert res.description


# ------------------------------------------------------------------------------- MDI
@pytest.mark.parametrize(
    "make",
    [
        lambda: RandomForestRegressor(n_estimators=8, max_depth=4, random_state=0),
        lambda: ExtraTreesRegressor(n_estimators=8, max_depth=4, random_state=0),
        lambda: GradientBoostingRegressor(n_estimators=10, max_depth=2, random_state=0),
        lambda: DecisionTreeRegressor(max_depth=4, random_state=0),
    ],
    ids=["rf", "et", "gb", "tree"],
)
def test_mdi_equals_feature_importances_regression(make, friedman):
    X, y = friedman
    model = make().fit(X, y)
    res = mdi(model)
    np.testing.assert_allclose(res.importances, model.feature_importances_, rtol=1e-12, atol=1e-15)
    _invariants(res)
    assert res.method == "mdi" and res.feature_names == [f"x{i}" for i in range(X.shape[1])]


@pytest.mark.parametrize(
    "make",
    [
        lambda: RandomForestClassifier(n_estimators=8, max_depth=4, random_state=0),
        lambda: ExtraTreesClassifier(n_estimators=8, max_depth=4, random_state=0),
        lambda: GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0),
    ],
    ids=["rf", "et", "gb"],
)
def test_mdi_equals_feature_importances_multiclass(make, multiclass):
    X, y = multiclass
    model = make().fit(X, y)
    res = mdi(model)
    np.testing.assert_allclose(res.importances, model.feature_importances_, rtol=1e-12, atol=1e-15)
    _invariants(res)
    if hasattr(model, "estimators_") and isinstance(model, RandomForestClassifier):
        assert res.raw.shape == (X.shape[1], 8)  # one column per tree


@pytest.mark.parametrize("cls", [HistGradientBoostingRegressor, HistGradientBoostingClassifier])
def test_mdi_hist_gradient_boosting_from_split_gains(cls, friedman, multiclass):
    X, y = friedman if cls is HistGradientBoostingRegressor else multiclass
    model = cls(max_iter=5, max_leaf_nodes=6, random_state=0).fit(X, y)
    res = mdi(model)
    # oracle: sum of split gains per feature over every tree, as a share of the total
    total = np.zeros(X.shape[1])
    for stage in model._predictors:
        for pred in stage:
            for node in pred.nodes:
                if not node["is_leaf"]:
                    total[node["feature_idx"]] += node["gain"]
    np.testing.assert_allclose(res.importances, total / total.sum(), rtol=1e-12)
    np.testing.assert_allclose(res.importances.sum(), 1.0)
    _invariants(res)
    n_trees = sum(len(s) for s in model._predictors)
    assert res.raw.shape == (X.shape[1], n_trees)


def test_mdi_pipeline_names_the_input_columns():
    """A one-hot group is one feature: MDI names the data's columns (summed over what each is made into);
    with explicit feature_names the transformed columns stay as they are."""
    X = pd.DataFrame({"num": np.arange(60.0) % 7, "cat": list("abc") * 20})
    y = X["num"] * 2 + (X["cat"] == "b")
    pipe = make_pipeline(
        ColumnTransformer([("oh", OneHotEncoder(), ["cat"])], remainder="passthrough"),
        RandomForestRegressor(n_estimators=5, random_state=0),
    ).fit(X, y)
    fi = pipe[-1].feature_importances_  # oh__cat_a, oh__cat_b, oh__cat_c, remainder__num
    res = mdi(pipe)
    assert res.feature_names == ["num", "cat"]
    np.testing.assert_allclose(res.importances, [fi[3], fi[:3].sum()], rtol=1e-12)
    names = ["oh__cat_a", "oh__cat_b", "oh__cat_c", "remainder__num"]
    res = mdi(pipe, feature_names=names)
    assert res.feature_names == names
    np.testing.assert_allclose(res.importances, fi, rtol=1e-12)


# ------------------------------------------------------------------ out-of-bag rows
def _oob_average(forest, X, rows_per_tree, proba):
    """sklearn's accumulation, redone from our regenerated rows."""
    X32 = np.asarray(X, dtype=np.float32)
    k = forest.n_classes_ if proba else 1
    acc = np.zeros((len(X32), k))
    cnt = np.zeros((len(X32), 1))
    for tree, rows in zip(forest.estimators_, rows_per_tree):
        pred = tree.predict_proba(X32[rows], check_input=False) if proba else \
            tree.predict(X32[rows], check_input=False)[:, None]
        acc[rows] += pred
        cnt[rows] += 1
    cnt[cnt == 0] = 1
    return acc / cnt


@pytest.mark.parametrize("max_samples", [None, 0.6, 100])
def test_oob_rows_reproduce_oob_prediction_regressor(max_samples, friedman):
    X, y = friedman
    rf = RandomForestRegressor(n_estimators=12, max_depth=4, oob_score=True, max_samples=max_samples,
                               random_state=3).fit(X, y)
    rows = oob_sample_indices(rf)
    np.testing.assert_array_equal(_oob_average(rf, X, rows, proba=False)[:, 0], rf.oob_prediction_)
    # and they are exactly the complement of the in-bag rows scikit-learn reports
    for r, inbag in zip(rows, rf.estimators_samples_):
        np.testing.assert_array_equal(r, np.setdiff1d(np.arange(len(X)), inbag))


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"max_samples": 0.5}, {"max_samples": 90}, {"class_weight": "balanced"}],
    ids=["default", "frac", "int", "class_weight"],
)
def test_oob_rows_reproduce_oob_decision_function_classifier(kwargs, multiclass):
    X, y = multiclass
    y = np.where(y == 2, 1, y)[:200] if "class_weight" in kwargs else y  # imbalanced
    X = X[: len(y)]
    rf = RandomForestClassifier(n_estimators=12, max_depth=4, oob_score=True, random_state=5,
                                **kwargs).fit(X, y)
    rows = oob_sample_indices(rf)
    np.testing.assert_array_equal(_oob_average(rf, X, rows, proba=True), rf.oob_decision_function_)


def test_oob_rows_with_sample_weight(friedman):
    X, y = friedman
    w = np.random.default_rng(0).uniform(0.2, 3.0, len(y))
    rf = RandomForestRegressor(n_estimators=10, max_depth=4, oob_score=True, random_state=1).fit(
        X, y, sample_weight=w)
    rows = oob_sample_indices(rf)
    np.testing.assert_array_equal(_oob_average(rf, X, rows, proba=False)[:, 0], rf.oob_prediction_)


# ------------------------------------------------------------- out-of-bag importance
def _mda_oracle(forest, X, y, random_state, clf):
    """Per-tree loop of the textbook MDA (seed 004), one predict per feature."""
    X32 = np.asarray(X, dtype=np.float32)
    rng = np.random.default_rng(random_state)
    p = X.shape[1]
    out = []
    for tree, rows in zip(forest.estimators_, oob_sample_indices(forest)):
        m = len(rows)
        perms = rng.permuted(np.tile(np.arange(m), (p, 1)), axis=1)
        Xo, yo = X32[rows], y[rows]

        def score(A):
            if clf:
                pred = forest.classes_[np.argmax(tree.predict_proba(A, check_input=False), axis=1)]
                return np.mean(pred == yo)
            return -np.mean((tree.predict(A, check_input=False) - yo) ** 2)

        base = score(Xo)
        col = []
        for j in range(p):
            A = Xo.copy()
            A[:, j] = Xo[perms[j], j]
            col.append(base - score(A))
        out.append(col)
    return np.array(out).T


def test_oob_permutation_importance_matches_textbook_loop_regressor(rf_reg, friedman):
    X, y = friedman
    res = oob_permutation_importance(rf_reg, X, y, random_state=4)
    np.testing.assert_allclose(res.raw, _mda_oracle(rf_reg, X, y, 4, clf=False), rtol=1e-12, atol=1e-12)
    _invariants(res)
    assert res.raw.shape == (X.shape[1], 15) and res.method == "oob_permutation"
    # friedman1: x0..x4 carry the signal, x5, x6 are noise
    assert res.importances[:5].min() > res.importances[5:].max()


def test_oob_permutation_importance_matches_textbook_loop_classifier(rf_bin, binary):
    X, y = binary
    calls = []
    res = oob_permutation_importance(rf_bin, X, y, random_state=2, max_cells=500,
                                     progress=lambda d, t: calls.append((d, t)))
    np.testing.assert_allclose(res.raw, _mda_oracle(rf_bin, X, y, 2, clf=True), rtol=1e-12, atol=1e-12)
    assert calls[-1] == (15, 15) and len(calls) == 15
    assert res.params["scoring"] == "accuracy"


def test_oob_permutation_importance_through_pipeline():
    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame({"a": rng.normal(size=n), "c": rng.choice(["u", "v", "w"], n),
                       "b": rng.normal(size=n)})
    y = df.a * 2 + (df.c == "v") * 3 + rng.normal(0, 0.1, n)
    enc = OrdinalEncoder()
    pipe = make_pipeline(ColumnTransformer([("o", enc, ["c"])], remainder="passthrough",
                                           verbose_feature_names_out=False),
                         RandomForestRegressor(n_estimators=6, random_state=0)).fit(df, y)
    res_pipe = oob_permutation_importance(pipe, df, y, random_state=0)
    # importance is reported per original column, the categorical one included
    assert res_pipe.feature_names == ["a", "c", "b"]
    assert res_pipe.importances[1] > 0.5 and res_pipe.importances[0] > res_pipe.importances[2]
    # exact equality on a forest where the column order is kept
    pipe2 = make_pipeline(StandardScaler(), RandomForestRegressor(n_estimators=6, random_state=0)).fit(
        df[["a", "b"]], y)
    plain2 = RandomForestRegressor(n_estimators=6, random_state=0).fit(pipe2[0].transform(df[["a", "b"]]), y)
    np.testing.assert_allclose(
        oob_permutation_importance(pipe2, df[["a", "b"]], y).raw,
        oob_permutation_importance(plain2, pipe2[0].transform(df[["a", "b"]]), y).raw,
        rtol=1e-12, atol=1e-12,
    )


def test_oob_check_catches_reordered_rows(rf_reg, friedman):
    X, y = friedman
    order = np.random.default_rng(0).permutation(len(X))
    with pytest.raises(InvalidDataError, match="not the training data in its original order"):
        oob_permutation_importance(rf_reg, X[order], y[order])


# ------------------------------------------------------- holdout permutation importance
@pytest.mark.parametrize(
    "scoring, kwargs",
    [
        (None, {}),
        ("r2", {}),
        ("neg_mean_squared_error", {}),
        ("neg_mean_absolute_error", {"max_samples": 0.5}),
        ("neg_root_mean_squared_error", {"sample_weight": "w"}),
        ("neg_max_error", {}),  # not batched: sklearn's scorer per copy
        (make_scorer(mean_absolute_error, greater_is_better=False), {}),
    ],
    ids=["default", "r2", "mse", "mae_subsample", "rmse_weights", "fallback_name", "callable"],
)
def test_permutation_importance_equals_sklearn_regressor(scoring, kwargs, rf_reg, friedman):
    X, y = friedman
    if kwargs.get("sample_weight") == "w":
        kwargs = {"sample_weight": np.linspace(0.5, 2, len(y))}
    ours = permutation_importance(rf_reg, X, y, n_repeats=3, scoring=scoring, random_state=7,
                                  max_cells=4000, **kwargs)
    ref = sk_permutation_importance(rf_reg, X, y, n_repeats=3, scoring=scoring, random_state=7, **kwargs)
    np.testing.assert_allclose(ours.raw, ref.importances, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.importances, ref.importances_mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.std, ref.importances_std, rtol=0, atol=1e-12)
    _invariants(ours)


@pytest.mark.parametrize(
    "scoring", [None, "accuracy", "balanced_accuracy", "neg_log_loss", "roc_auc", "f1_weighted"]
)
def test_permutation_importance_equals_sklearn_binary(scoring, rf_bin, binary):
    X, y = binary
    ours = permutation_importance(rf_bin, X, y, n_repeats=2, scoring=scoring, random_state=1)
    ref = sk_permutation_importance(rf_bin, X, y, n_repeats=2, scoring=scoring, random_state=1)
    np.testing.assert_allclose(ours.raw, ref.importances, rtol=0, atol=1e-12)


@pytest.mark.parametrize("scoring", ["accuracy", "neg_log_loss", "f1_macro"])
def test_permutation_importance_equals_sklearn_multiclass_logistic(scoring, multiclass):
    X, y = multiclass
    model = LogisticRegression(max_iter=500).fit(X, y)
    rs = np.random.RandomState(3)
    ours = permutation_importance(model, X, y, n_repeats=3, scoring=scoring, random_state=rs)
    ref = sk_permutation_importance(model, X, y, n_repeats=3, scoring=scoring,
                                    random_state=np.random.RandomState(3))
    np.testing.assert_allclose(ours.raw, ref.importances, rtol=0, atol=1e-12)


def test_permutation_importance_equals_sklearn_pipeline_with_categoricals():
    rng = np.random.default_rng(2)
    n = 200
    X = pd.DataFrame({
        "size": rng.normal(size=n),
        "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n)),
        "city": rng.choice(["Seoul", "Busan", "Incheon", "Daegu"], n),
        "age": rng.integers(18, 80, n),
    })
    logit = X["size"] + (X["colour"] == "red") * 1.5 - (X["city"] == "Busan") + X["age"] / 40
    y = np.where(logit + rng.normal(0, 0.5, n) > 1.2, "buy", "skip")
    pipe = make_pipeline(
        ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["colour", "city"])],
                          remainder=StandardScaler()),
        LogisticRegression(max_iter=500),
    ).fit(X, y)
    for scoring in ("accuracy", "roc_auc", None):
        ours = permutation_importance(pipe, X, y, n_repeats=4, scoring=scoring, random_state=0,
                                      max_cells=2000)
        ref = sk_permutation_importance(pipe, X, y, n_repeats=4, scoring=scoring, random_state=0)
        np.testing.assert_allclose(ours.raw, ref.importances, rtol=0, atol=1e-12)
    assert ours.feature_names == ["size", "colour", "city", "age"]


def test_permutation_importance_forest_fast_path_with_nan_and_multiclass(multiclass):
    # The forest fast path re-walks only rows whose leaf can change; NaN values and
    # probabilities of several classes must still give scikit-learn's numbers exactly.
    X, y = multiclass
    X = X.copy()
    X[::7, 1] = np.nan
    X[::5, 3] = np.round(X[::5, 3])  # repeated values, thresholds between them
    for model in (RandomForestClassifier(n_estimators=8, random_state=0),
                  ExtraTreesClassifier(n_estimators=8, max_depth=6, random_state=0)):
        model.fit(X, y)
        for scoring in ("accuracy", "neg_log_loss"):
            ours = permutation_importance(model, X, y, n_repeats=3, scoring=scoring,
                                          random_state=0, max_cells=3000)
            ref = sk_permutation_importance(model, X, y, n_repeats=3, scoring=scoring, random_state=0)
            np.testing.assert_allclose(ours.raw, ref.importances, rtol=0, atol=1e-12)
    reg = RandomForestRegressor(n_estimators=8, random_state=0).fit(X, X[:, 0] + np.nan_to_num(X[:, 1]))
    yr = X[:, 0] + np.nan_to_num(X[:, 1])
    ours = permutation_importance(reg, X, yr, n_repeats=2, random_state=1, max_samples=100)
    ref = sk_permutation_importance(reg, X, yr, n_repeats=2, random_state=1, max_samples=100)
    np.testing.assert_allclose(ours.raw, ref.importances, rtol=0, atol=1e-12)


def test_permutation_importance_progress_and_batches(rf_reg, friedman):
    X, y = friedman
    calls = []
    res = permutation_importance(rf_reg, X, y, n_repeats=2, max_cells=X.size * 3,
                                 progress=lambda d, t: calls.append((d, t)))
    total = X.shape[1] * 2
    assert calls[-1] == (total, total) and len(calls) == int(np.ceil(total / 3))
    assert res.params["n_repeats"] == 2 and res.params["scoring_name"] == "r2"


# ----------------------------------------------------------------------------- SHAP
def test_shap_importance_regression_stand_in():
    vals = np.array([[1.0, -2.0, 0.0], [-3.0, 2.0, 0.5]])
    res = shap_importance(SimpleNamespace(values=vals, feature_names=["a", "b", "c"]))
    np.testing.assert_allclose(res.importances, [2.0, 2.0, 0.25])
    assert res.raw.shape == (3, 2) and res.by_output is None
    _invariants(res)


def test_shap_importance_per_class():
    rng = np.random.default_rng(0)
    vals = rng.normal(size=(10, 3, 2))
    stand_in = SimpleNamespace(values=vals, feature_names=["a", "b", "c"], output_names=["no", "yes"])
    res = shap_importance(stand_in)
    expected = np.abs(vals).mean(axis=0)  # (p, k)
    np.testing.assert_allclose(res.by_output.to_numpy(), expected)
    assert list(res.by_output.columns) == ["no", "yes"]
    np.testing.assert_allclose(res.importances, expected.mean(axis=1))
    one = shap_importance(stand_in, class_index=1)
    np.testing.assert_allclose(one.importances, expected[:, 1])
    assert one.params["class"] == "yes"


# ------------------------------------------------------------------------- compare
@pytest.fixture(scope="module")
def id_column_case():
    """Three weak signals, a low-cardinality noise feature and a random unique ID column."""
    rng = np.random.default_rng(0)
    n = 300
    X = pd.DataFrame({
        "x1": rng.normal(size=n),
        "x2": rng.normal(size=n),
        "flag": rng.integers(0, 2, n).astype(float),
        "group": rng.integers(0, 3, n).astype(float),
        "row_id": rng.permutation(n).astype(float),
    })
    y = np.where(X.x1 + 0.5 * X.x2 + (X.flag - 0.5) * 0.6 + rng.normal(0, 1.0, n) > 0, 1, 0)
    train, test = slice(0, 200), slice(200, None)
    rf = RandomForestClassifier(n_estimators=25, random_state=0).fit(X[train], y[train])
    res = [
        mdi(rf),
        permutation_importance(rf, X[test], y[test], n_repeats=5, random_state=0),
        oob_permutation_importance(rf, X[train], y[train], random_state=0),
    ]
    return X, res


def test_high_cardinality_id_gets_mdi_but_no_permutation_importance(id_column_case):
    X, (m, perm, oob) = id_column_case
    j = m.feature_names.index("row_id")
    # MDI puts the ID third of five, above two features that do carry signal
    assert m.importances[j] > 0.15 and (m.importances > m.importances[j]).sum() <= 2
    # ... while shuffling it barely changes accuracy, held out or out of bag
    assert abs(perm.importances[j]) < 0.05 and perm.importances[j] < 0.2 * m.importances[j]
    assert abs(oob.importances[j]) < 0.02
    comp = compare_importances([m, perm, oob], X=X)
    flagged = dict(zip(comp.flags.feature, comp.flags.reason))
    assert flagged.get("row_id") == "high_cardinality"
    assert "x1" not in flagged
    detail = comp.flags.set_index("feature").loc["row_id", "detail"]
    assert "300 distinct values" in detail
    assert bool(comp.table.loc["row_id", "flagged"])
    # without the data the reason is still given, as likely
    comp2 = compare_importances([m, perm, oob])
    assert dict(zip(comp2.flags.feature, comp2.flags.reason)).get("row_id") == "high_cardinality"


def test_compare_importances_tables_and_agreement(id_column_case):
    X, (m, perm, oob) = id_column_case
    comp = compare_importances([m, perm, oob, perm])
    assert isinstance(comp, ImportanceComparison)
    assert comp.methods == ["MDI", "Holdout permutation (accuracy)", "OOB permutation (accuracy)",
                            "Holdout permutation (accuracy) #2"]
    np.testing.assert_allclose(comp.shares.sum(axis=0), 1.0)
    assert (comp.shares.to_numpy() >= 0).all()
    np.testing.assert_allclose(np.diag(comp.spearman), 1.0)
    assert comp.spearman.loc["Holdout permutation (accuracy)", "Holdout permutation (accuracy) #2"] == pytest.approx(1.0)
    np.testing.assert_allclose(comp.spearman.to_numpy(), comp.spearman.to_numpy().T)
    from scipy.stats import kendalltau
    tau = kendalltau(m.importances, oob.importances).statistic
    assert comp.kendall.loc["MDI", "OOB permutation (accuracy)"] == pytest.approx(tau)
    assert comp.ranks.loc["x1", "MDI"] == 1 or comp.ranks.loc["x1", "Holdout permutation (accuracy)"] == 1
    assert list(comp.table["mean_share"]) == sorted(comp.table["mean_share"], reverse=True)


def test_compare_flags_correlated_features():
    names = ["a", "a_copy", "b", "c"]
    mk = lambda imp, method: ImportanceResult(names, np.array(imp, float), np.zeros(4),
                                              np.array(imp, float)[:, None], method)
    rng = np.random.default_rng(0)
    a = rng.normal(size=100)
    X = pd.DataFrame({"a": a, "a_copy": a + rng.normal(0, 0.05, 100), "b": rng.normal(size=100),
                      "c": rng.normal(size=100)})
    shap = mk([0.30, 0.28, 0.25, 0.17], "shap")
    perm = mk([0.02, 0.01, 0.40, 0.30], "permutation")
    comp = compare_importances([shap, perm], X=X)
    reasons = dict(zip(comp.flags.feature, comp.flags.reason))
    assert reasons["a"] == "correlated" and "a_copy" in comp.flags.set_index("feature").loc["a", "detail"]
    assert comp.spearman.iloc[0, 1] < 0


def test_compare_leaves_out_features_not_in_every_result():
    r1 = ImportanceResult(["a", "b", "c"], np.array([1.0, 2, 3]), np.zeros(3), np.ones((3, 1)), "mdi")
    r2 = ImportanceResult(["a", "b", "d"], np.array([3.0, 2, 1]), np.zeros(3), np.ones((3, 1)), "shap")
    comp = compare_importances([r1, r2])
    assert list(comp.shares.index) == ["a", "b"] and "c" in comp.notes[0]
    assert comp.spearman.iloc[0, 1] == pytest.approx(-1.0)


def test_results_pickle(id_column_case):
    X, res = id_column_case
    comp = compare_importances(res, X=X)
    back = pickle.loads(pickle.dumps(comp))
    pd.testing.assert_frame_equal(back.table, comp.table)
    r = pickle.loads(pickle.dumps(res[0]))
    np.testing.assert_array_equal(r.raw, res[0].raw)
    with pytest.raises(AttributeError):
        res[0].method = "x"  # frozen


# ------------------------------------------------------------------------ bad input
@pytest.fixture(scope="module")
def no_bootstrap(friedman):
    X, y = friedman
    return ExtraTreesRegressor(n_estimators=3, random_state=0).fit(X, y)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda m, X, y: permutation_importance(m, X, None), InvalidDataError, "needs the target y"),
        (lambda m, X, y: permutation_importance(m, X, y[:-3]), InvalidDataError, "y has 237 values but X has 240"),
        (lambda m, X, y: permutation_importance(m, X, np.c_[y, y]), InvalidDataError, "1-D target"),
        (lambda m, X, y: permutation_importance(m, X, np.array(["a"] * len(y), dtype=object)),
         InvalidDataError, "regressor but y is not numeric"),
        (lambda m, X, y: permutation_importance(m, X, y, n_repeats=0), InvalidParameterError,
         "'n_repeats' parameter of permutation_importance must be an int >= 1"),
        (lambda m, X, y: permutation_importance(m, X, y, scoring="no_such_metric"),
         InvalidParameterError, "'scoring' parameter"),
        (lambda m, X, y: permutation_importance(m, X, y, scoring="neg_log_loss"),
         InvalidParameterError, "regression metric"),
        (lambda m, X, y: permutation_importance(m, X, y, max_samples=0.0), InvalidParameterError,
         "max_samples"),
        (lambda m, X, y: permutation_importance(m, X[:, :3], y), InvalidDataError, "X has 3 columns"),
        (lambda m, X, y: oob_permutation_importance(m, X, None), InvalidDataError, "needs the target y"),
        (lambda m, X, y: oob_permutation_importance(m, X[:100], y[:100]), InvalidDataError,
         "fit on 240 rows but X has 100"),
        (lambda m, X, y: oob_permutation_importance(m, X, y, scoring="accuracy"),
         InvalidParameterError, "'scoring' parameter of oob_permutation_importance"),
        (lambda m, X, y: oob_permutation_importance(LinearRegression().fit(X, y), X, y),
         InvalidModelError, "needs a bagged forest"),
        (lambda m, X, y: mdi(LinearRegression().fit(X, y)), InvalidModelError,
         "LinearRegression has no trees"),
        (lambda m, X, y: mdi(RandomForestRegressor()), InvalidModelError, "not fitted"),
        (lambda m, X, y: compare_importances([mdi(m)]), InvalidParameterError, "at least 2"),
        (lambda m, X, y: shap_importance(object()), InvalidDataError, "needs a ShapResult"),
        (lambda m, X, y: shap_importance(SimpleNamespace(values=np.ones((3, 2)), feature_names=["a"])),
         InvalidDataError, "shape"),
        (lambda m, X, y: permutation_importance(m, X, y, progress=3), InvalidParameterError, "progress"),
    ],
)
def test_bad_input_regressor(call, exc, match, rf_reg, friedman):
    X, y = friedman
    with pytest.raises(exc, match=match):
        call(rf_reg, X, y)


def test_forest_without_bootstrap(no_bootstrap, friedman):
    X, y = friedman
    with pytest.raises(InvalidModelError, match="bootstrap=False.*no out-of-bag rows"):
        oob_permutation_importance(no_bootstrap, X, y)


def test_bad_classifier_target(rf_bin, binary):
    X, y = binary
    with pytest.raises(InvalidDataError, match="label\\(s\\) the classifier does not know"):
        permutation_importance(rf_bin, X, np.where(y == "yes", 1, 0))
    with pytest.raises(InvalidDataError, match="does not know"):
        oob_permutation_importance(rf_bin, X, np.where(y == "yes", "maybe", y))
    # every error is still a ValueError for callers that catch that
    with pytest.raises(ValueError):
        oob_permutation_importance(rf_bin, X, y, scoring="r2")
    assert issubclass(InvalidDataError, ExplainerError)


def test_compare_does_not_flag_what_permutation_noise_explains():
    """A gap between MDI and a permutation share is a disagreement only beyond NOISE_Z standard
    errors of the permutation's mean (its spread over the repeats / sqrt(repeats))."""
    from explainers.importance import compare_importances
    from explainers.importance.comparison import NOISE_Z
    from explainers.importance.result import make_result

    names = ["a", "b", "c", "d"]
    mdi = make_result(names, np.array([[0.40], [0.30], [0.20], [0.10]]), "mdi", {}, "")
    means = np.array([0.10, 0.30, 0.20, 0.40])  # 'a' and 'd' swap ends: a gap of 0.3 in share
    for spread, flagged in ((0.02, True), (1.5, False)):
        raw = means[:, None] + spread * np.array([[-1.0, 1.0]] * 4)  # 2 repeats, std = spread
        perm = make_result(names, raw, "permutation", {"n_repeats": 2}, "")
        comp = compare_importances([mdi, perm])
        se = spread / means.sum() / np.sqrt(2)   # the share's standard error
        gap = abs(comp.shares.loc["a"].iloc[0] - comp.shares.loc["a"].iloc[1])
        assert (gap > NOISE_Z * se) == flagged
        assert ("a" in set(comp.flags["feature"])) == flagged, comp.flags
