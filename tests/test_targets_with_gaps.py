"""The data check asks the model what it accepts; targets with empty cells; a feature chosen as target."""
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor, make_column_selector
from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor
from sklearn.impute import SimpleImputer
from sklearn.inspection import permutation_importance as sk_permutation_importance
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

from explainers import InvalidDataError, load_data, load_model
from explainers.importance import oob_permutation_importance, permutation_importance
from explainers.io.data import categorical_features
from explainers.pdp import partial_dependence
from explainers.shap import explain


def _houses(n=160, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "lot size": rng.normal(1500, 300, n).round(),
        "neighborhood": rng.choice(["Old Town", "Riverside", "Hills"], n),
        "year built": rng.integers(1950, 2020, n).astype(float),
    })
    X.loc[::13, "year built"] = np.nan
    price = 100 * X["lot size"] + 30_000 * (X.neighborhood == "Hills") + rng.normal(0, 5_000, n)
    return X, price.round()


def _ttr_model():
    """The reproduction: a text column one-hot encoded inside a log-target regressor."""
    X, y = _houses()
    X = X[["lot size", "neighborhood"]]
    model = TransformedTargetRegressor(
        Pipeline([("pre", ColumnTransformer([("hood", OneHotEncoder(handle_unknown="ignore"), ["neighborhood"])],
                                            remainder="passthrough")),
                  ("gb", GradientBoostingRegressor(n_estimators=20, random_state=0))]),
        func=np.log1p, inverse_func=np.expm1).fit(X, y)
    return load_model(sio.dumps(model), filename="m.skops"), X, y


# ------------------------------------------------------- the model says where text goes
def test_transformed_target_regressor_with_text_column_loads_and_explains():
    model, X, y = _ttr_model()
    csv = X.assign(price=y).to_csv(index=False).encode()
    ds = load_data(csv, model=model, target="price", filename="houses.csv")
    assert not any("numeric" in n for n in ds.notices), ds.notices
    assert list(ds.X.columns) == ["lot size", "neighborhood"]
    assert ds.X["neighborhood"].tolist() == X["neighborhood"].tolist()
    np.testing.assert_allclose(model.predict(ds.X), model.predict(X))
    res = explain(model, ds.X.iloc[:5], background=ds.X.iloc[:40])
    np.testing.assert_allclose(res.base_values + res.values.sum(axis=1), res.predictions, atol=1e-6)
    pd_res = partial_dependence(model, ds.X, ["neighborhood"])
    assert sorted(map(str, pd_res.grid[0])) == ["Hills", "Old Town", "Riverside"]
    imp = permutation_importance(model, ds.X, ds.y)
    sk = sk_permutation_importance(model, X, y, n_repeats=5, random_state=0)
    np.testing.assert_allclose(imp.importances, sk.importances_mean, rtol=1e-9, atol=1e-12)
    assert imp.feature_names == ["lot size", "neighborhood"]


_SELECTED = ColumnTransformer([
    ("text", OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_exclude=np.number)),
    ("num", make_pipeline(SimpleImputer(), StandardScaler()), make_column_selector(dtype_include=np.number))])


@pytest.mark.parametrize("make, columns, text_cols", [
    # a pipeline whose first step encodes text
    (lambda: make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression()),
     ["neighborhood"], {"neighborhood"}),
    # an imputer before the encoder keeps the text in place
    (lambda: make_pipeline(ColumnTransformer([
        ("hood", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder()), ["neighborhood"]),
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["lot size", "year built"])]),
        LogisticRegression()), None, {"neighborhood"}),
    # columns picked by a selector: read from the fitted transformers_
    (lambda: make_pipeline(clone(_SELECTED), LogisticRegression()), None, {"neighborhood"}),
    # columns by position, inside a nested pipeline
    (lambda: Pipeline([("outer", Pipeline([("ct", ColumnTransformer(
        [("o", OrdinalEncoder(), [1])], remainder=SimpleImputer()))])), ("rf", RandomForestClassifier(5))]),
     None, {"neighborhood"}),
    # a scaler first: the model reads numbers
    (lambda: make_pipeline(ColumnTransformer([("s", StandardScaler(), ["lot size"])]), LogisticRegression()),
     None, set()),
])
def test_categorical_features_asks_the_model(make, columns, text_cols):
    X, y = _houses()
    X = X if columns is None else X[columns]
    model = make().fit(X, (y > y.median()).astype(int))
    assert categorical_features(model) == text_cols


def test_categorical_features_through_a_transformed_target_regressor():
    X, y = _houses()
    ttr = TransformedTargetRegressor(Pipeline([("inner", make_pipeline(clone(_SELECTED))), ("ridge", Ridge())]),
                                     func=np.log1p, inverse_func=np.expm1).fit(X, y)
    assert categorical_features(ttr) == {"neighborhood"}
    csv = X.assign(price=y).to_csv(index=False).encode()
    ds = load_data(csv, model=ttr, target="price", filename="houses.csv")
    np.testing.assert_allclose(ttr.predict(ds.X), ttr.predict(X))


# --------------------------------------------------------------- targets with gaps
def _classifier_with_gaps():
    X, y = _houses()
    X = X.drop(columns="neighborhood").fillna({"year built": 1990.0})
    label = pd.Series(np.where(y > y.median(), "pricey", "modest"), name="band", dtype=object)
    model = RandomForestClassifier(20, random_state=0).fit(X, label)
    gappy = label.copy()
    gappy[[4, 17]] = np.nan
    return model, X, label, gappy


def test_permutation_leaves_rows_without_target_out():
    model, X, label, gappy = _classifier_with_gaps()
    res = permutation_importance(model, X, gappy, n_repeats=4)
    keep = gappy.notna().to_numpy()
    sk = sk_permutation_importance(model, X[keep], label[keep], n_repeats=4, random_state=0)
    np.testing.assert_allclose(res.raw, sk.importances, rtol=1e-12, atol=1e-12)
    assert res.params["n_rows_left_out"] == 2 and res.params["n_rows"] == len(X) - 2
    assert "2 of 160 rows left out: the target is empty there" in res.description
    # blank text counts as empty too; the other labels are still checked
    blank = label.copy()
    blank[[4, 17]] = "  "
    np.testing.assert_allclose(permutation_importance(model, X, blank, n_repeats=4).raw, sk.importances)
    with pytest.raises(InvalidDataError, match=r"label\(s\) the classifier does not know"):
        permutation_importance(model, X, label.replace({"pricey": "lavish"}), n_repeats=1)


def test_permutation_with_gaps_regression_and_numeric_classes():
    X, y = _houses()
    X = X.drop(columns="neighborhood").fillna({"year built": 1990.0})
    reg = RandomForestRegressor(20, random_state=0).fit(X.to_numpy(), y)
    gappy = y.copy()
    gappy[[0, 9, 99]] = np.nan
    res = permutation_importance(reg, X.to_numpy(), gappy.to_numpy(), scoring="neg_mean_squared_error")
    keep = gappy.notna().to_numpy()
    sk = sk_permutation_importance(reg, X.to_numpy()[keep], y[keep], n_repeats=5, random_state=0,
                                   scoring="neg_mean_squared_error")
    np.testing.assert_allclose(res.importances, sk.importances_mean, rtol=1e-9)
    # 0/1 classes read back from a CSV with blanks come as floats with NaN
    yc = (y > y.median()).astype(int)
    clf = RandomForestClassifier(10, random_state=0).fit(X, yc)
    gappy_c = yc.astype(float)
    gappy_c[[3, 5]] = np.nan
    res = permutation_importance(clf, X, gappy_c)
    keep = gappy_c.notna().to_numpy()
    sk = sk_permutation_importance(clf, X[keep], yc[keep], n_repeats=5, random_state=0)
    np.testing.assert_allclose(res.importances, sk.importances_mean, rtol=1e-12)


def test_an_all_empty_target_and_oob_say_what_is_wrong():
    model, X, label, _ = _classifier_with_gaps()
    with pytest.raises(InvalidDataError, match="The target is empty in every row"):
        permutation_importance(model, X, pd.Series([np.nan] * len(X)))
    gappy = label.copy()
    gappy[[1]] = np.nan
    # out-of-bag importance needs every training row's target: unchanged, with a message that says so
    with pytest.raises(InvalidDataError, match=r"The target is empty in 1 of 160 rows"):
        oob_permutation_importance(model, X, gappy)
    assert oob_permutation_importance(model, X, label).importances.shape == (X.shape[1],)


def test_load_data_notice_counts_rows_without_target():
    model, X, label, gappy = _classifier_with_gaps()
    csv = X.assign(band=gappy).to_csv(index=False).encode()
    ds = load_data(csv, model=model, target="band", filename="houses.csv")
    assert ("The target 'band' is empty in 2 of 160 rows; those rows are left out of scores and holdout "
            "permutation importance.") in ds.notices
    assert int(ds.y.isna().sum()) == 2 and len(ds.X) == 160
    res = permutation_importance(model, ds.X, ds.y)
    assert res.params["n_rows_left_out"] == 2


# ------------------------------------------------------------ a feature as the target
def test_a_feature_chosen_as_target_says_so():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"age": rng.integers(18, 80, 120).astype(float),
                      "sex": rng.choice(["female", "male"], 120),
                      "hours per week": rng.integers(10, 60, 120).astype(float)})
    income = pd.Series(np.where(X.age + X["hours per week"] > 80, ">50K", "<=50K"))
    model = make_pipeline(ColumnTransformer([("sex", OneHotEncoder(), ["sex"])], remainder="passthrough"),
                          LogisticRegression(max_iter=500)).fit(X, income)
    csv = X.assign(income=income).to_csv(index=False).encode()
    with pytest.raises(InvalidDataError) as err:
        load_data(csv, model=model, target="sex", filename="adult.csv")
    text = str(err.value)
    assert text.startswith("'sex' is one of the model's input features, so it cannot be the target; "
                           "choose the column the model predicts")
    assert "'income'" in text and "lacks" not in text
    # the right column loads
    assert load_data(csv, model=model, target="income", filename="adult.csv").y.name == "income"
    # a file that holds the features only: no column can be the target
    with pytest.raises(InvalidDataError, match="every column of this file is a feature"):
        load_data(X.to_csv(index=False).encode(), model=model, target="age", filename="adult.csv")
