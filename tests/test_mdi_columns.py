"""MDI names the data's own columns (issue #14): a pipeline's one-hot group is one
feature, and HistGradientBoosting's internal reordering of categorical columns is undone."""
import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

from explainers.importance import compare_importances, mdi, permutation_importance


@pytest.fixture(scope="module")
def houses():
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"Living area (sqft)": rng.normal(1500, 300, n), "Neighborhood": rng.choice(list("abcd"), n),
                       "Year built": rng.integers(1950, 2020, n).astype(float)})
    y = 40.0 * df["Neighborhood"].isin(["b", "d"]) + df["Living area (sqft)"] / 50 + rng.normal(size=n)
    return df, y.to_numpy()


@pytest.mark.parametrize("encoder", [OrdinalEncoder(), OneHotEncoder(handle_unknown="ignore")])
def test_pipeline_mdi_names_input_columns(houses, encoder):
    df, y = houses
    pipe = Pipeline([("pre", ColumnTransformer([("hood", encoder, ["Neighborhood"])], remainder="passthrough")),
                     ("rf", RandomForestRegressor(n_estimators=20, random_state=0))]).fit(df, y)
    res = mdi(pipe)
    assert res.feature_names == list(df.columns)
    # the sums over each input column's derived columns of the forest's own importances
    derived = list(pipe[0].get_feature_names_out())
    fi = pipe[-1].feature_importances_
    want = [sum(fi[i] for i, d in enumerate(derived) if d.split("__", 1)[1].startswith(c) or d.split("__", 1)[1] == c)
            for c in df.columns]
    np.testing.assert_allclose(res.importances, want, atol=1e-12)
    assert res.importances.sum() == pytest.approx(1.0)
    # the Importance page compares it with permutation importance: same names now
    perm = permutation_importance(pipe, df, y, n_repeats=2, random_state=0)
    table = compare_importances([res, perm])
    assert sorted(table.shares.index) == sorted(df.columns) and not table.notes


def test_column_mixing_pipeline_keeps_transformed_names(houses):
    df, y = houses
    num = df.drop(columns="Neighborhood")
    pipe = Pipeline([("pca", PCA(n_components=2)), ("rf", RandomForestRegressor(n_estimators=5, random_state=0))])
    res = mdi(pipe.fit(num, y))
    assert res.feature_names == ["pca0", "pca1"]


def test_hgb_categorical_mdi_maps_back(houses):
    """Only the category (in the middle column) matters: its MDI must be named after it,
    although the model's internal encoder moves categorical columns first."""
    df, _ = houses
    rng = np.random.default_rng(1)
    X = df.assign(Neighborhood=df["Neighborhood"].astype("category"))
    y = 50.0 * X["Neighborhood"].isin(["b", "d"]).to_numpy() + rng.normal(size=len(X)) * 0.01
    model = HistGradientBoostingRegressor(max_iter=20, categorical_features="from_dtype", random_state=0).fit(X, y)
    res = mdi(model)
    assert res.feature_names == list(X.columns)
    assert res.importances[1] > 0.95
