"""Categories in the model's own order on every page, whether the data came as CSV or
Parquet (issue #14): PDP grids and What-if pickers follow the model, not the rows."""
import io
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from explainers import load_data
from explainers.io.data import category_order
from explainers.pdp import partial_dependence


@pytest.fixture(scope="module")
def towns():
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"Home town": rng.choice(["Seoul", "Busan", "Anyang", "Daegu"], n),
                       "Income (KRW)": rng.normal(3e7, 5e6, n).round()})
    y = df["Home town"].map({"Seoul": 3.0, "Busan": 1.0, "Anyang": 2.0, "Daegu": 0.5}) + df["Income (KRW)"] / 1e7
    return df, y.to_numpy()


def _csv_and_parquet(df, y):
    """The same table as CSV (strings, rows reversed) and as Parquet (a category column declared
    in yet another order)."""
    csv = df.iloc[::-1].assign(y=y[::-1]).to_csv(index=False).encode()
    pq = df.assign(**{"Home town": pd.Categorical(df["Home town"], categories=["Daegu", "Seoul", "Busan", "Anyang"])},
                   y=y)
    buf = io.BytesIO()
    pq.to_parquet(buf)
    return csv, buf.getvalue()


@pytest.mark.parametrize("kind", ["hgb", "onehot"])
def test_pdp_grid_in_the_models_order_for_csv_and_parquet(towns, kind):
    df, y = towns
    if kind == "hgb":
        model = HistGradientBoostingRegressor(max_iter=10, categorical_features="from_dtype").fit(
            df.assign(**{"Home town": df["Home town"].astype("category")}), y)
        want = ["Anyang", "Busan", "Daegu", "Seoul"]  # its encoder's (sorted) categories
    else:
        pre = ColumnTransformer([("oh", OneHotEncoder(categories=[["Seoul", "Busan", "Daegu", "Anyang"]]),
                                  ["Home town"])], remainder="passthrough")
        model = make_pipeline(pre, Ridge()).fit(df, y)
        want = ["Seoul", "Busan", "Daegu", "Anyang"]  # the order the encoder was given
    assert category_order(model, df.columns) == {"Home town": want}
    csv, parquet = _csv_and_parquet(df, y)
    grids = []
    for data, name in ((csv, "towns.csv"), (parquet, "towns.parquet")):
        ds = load_data(data, model=model, target="y", filename=name)
        res = partial_dependence(model, ds.X, ["Home town"])
        grids.append([str(v) for v in res.grid[0]])
        brute = partial_dependence(model, ds.X, ["Home town"], method="brute")
        np.testing.assert_allclose(np.asarray(res.average, float), np.asarray(brute.average, float), atol=1e-12)
    assert grids[0] == grids[1] == want


def test_whatif_picker_options_follow_the_model(towns):
    from dashboard.state.columns import category_options

    df, y = towns
    model = HistGradientBoostingRegressor(max_iter=5, categorical_features="from_dtype").fit(
        df.assign(**{"Home town": df["Home town"].astype("category")}), y)
    X = df.iloc[::-1].reset_index(drop=True)
    X.loc[0, "Home town"] = "Jeju"  # a value the model never saw: after the known ones
    ctx = SimpleNamespace(model=model, X=X, model_key="towns-hgb", data_key="towns-rev")
    assert category_options(ctx, "Home town") == ["Anyang", "Busan", "Daegu", "Seoul", "Jeju"]
