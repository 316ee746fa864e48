"""Loading models safely and checking data files against them."""
import io
import pickle

import joblib
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.compose import make_column_transformer
from sklearn.ensemble import (GradientBoostingClassifier, HistGradientBoostingClassifier,
                              RandomForestRegressor)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from explainers import (ExplainerError, InvalidDataError, InvalidModelError, UnsafeModelError,
                        fingerprint, load_data, load_model)
from explainers.io import peek_columns


class _Doubler(RegressorMixin, BaseEstimator):
    """A custom estimator: its type is not on any allow-list."""

    def fit(self, X, y):
        self.coef_ = 2.0
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0] * self.coef_


class _Exploit:
    """Unpickling this writes a marker file: proof that loading ran code."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('pwned')",))


@pytest.fixture(scope="module")
def reg(reg_data):
    X, y = reg_data
    return RandomForestRegressor(10, max_depth=3, random_state=0).fit(X, y), X, y


@pytest.fixture(scope="module")
def clf(clf_data):
    X, y2, _ = clf_data
    return HistGradientBoostingClassifier(max_iter=10).fit(X, y2), X, y2


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


# ----------------------------------------------------------------- models
def test_pickle_refused_and_code_never_runs(tmp_path):
    marker = tmp_path / "marker.txt"
    payload = pickle.dumps(_Exploit(str(marker)))
    for name in ("model.pkl", "model.joblib", "model.pickle"):
        with pytest.raises(UnsafeModelError, match="Pickle and joblib model files are refused"):
            load_model(payload, filename=name)
        path = tmp_path / name
        path.write_bytes(payload)
        with pytest.raises(UnsafeModelError, match="runs any code"):
            load_model(path)
    # bytes without a name are sniffed as pickle and refused too
    with pytest.raises(UnsafeModelError):
        load_model(payload)
    assert not marker.exists()


def test_skops_unknown_type_refused_by_name(reg_data):
    X, y = reg_data
    data = sio.dumps(_Doubler().fit(X, y))
    with pytest.raises(UnsafeModelError, match=r"not on the reviewed allow-list: tests\.test_io\._Doubler"):
        load_model(data, filename="m.skops")


def test_trusted_joblib_loads_real_model(reg, tmp_path):
    model, X, _ = reg
    path = tmp_path / "forest.joblib"
    joblib.dump(model, path)
    loaded = load_model(path, trusted=True)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    buf = io.BytesIO()
    pickle.dump(model, buf)
    np.testing.assert_array_equal(load_model(buf.getvalue(), trusted=True, filename="m.pkl").predict(X),
                                  model.predict(X))


@pytest.mark.parametrize(
    "make",
    [
        lambda X, y: RandomForestRegressor(5, random_state=0).fit(X, y),
        lambda X, y: GradientBoostingClassifier(n_estimators=5).fit(X, y > y.median()),
        lambda X, y: HistGradientBoostingClassifier(max_iter=5).fit(X, y > 0),
        lambda X, y: make_pipeline(SimpleImputer(), LinearRegression()).fit(X, y),
    ],
)
def test_skops_allow_list_round_trip(reg_data, make):
    X, y = reg_data
    model = make(X, y)
    loaded = load_model(sio.dumps(model), filename="m.skops")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_skops_categorical_pipeline_round_trip(tmp_path):
    X = pd.DataFrame({"n": np.arange(30.0), "c": list("abc") * 10})
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["c"]), remainder="passthrough"),
                         LinearRegression()).fit(X, X.n * 2)
    path = tmp_path / "pipe.skops"
    sio.dump(pipe, path)
    np.testing.assert_allclose(load_model(path).predict(X), pipe.predict(X))


def test_fingerprint_is_sha256():
    import hashlib

    assert fingerprint(b"abc") == hashlib.sha256(b"abc").hexdigest()
    assert fingerprint(b"abc") != fingerprint(b"abd")


# ------------------------------------------------------------------ data
def test_load_data_checks_and_notices(reg):
    model, X, y = reg
    frame = X[["d", "b", "a", "c"]].assign(extra=1.0, target=y)
    ds = load_data(_csv(frame), model=model, target="target", filename="d.csv")
    assert list(ds.X.columns) == ["a", "b", "c", "d"]
    np.testing.assert_allclose(ds.X.to_numpy(), X.to_numpy(), rtol=1e-15)
    np.testing.assert_allclose(ds.y.to_numpy(), y.to_numpy(), rtol=1e-15)
    assert any("Dropped 1 column(s) the model does not use: extra" in n for n in ds.notices)
    assert any("model's order" in n for n in ds.notices)
    # same bytes, same fingerprint; another target, another key
    again = load_data(_csv(frame), model=model, target="target", filename="d.csv")
    assert again.fingerprint == ds.fingerprint
    assert load_data(_csv(frame), model=model, filename="d.csv").fingerprint != ds.fingerprint


def test_load_data_parquet_and_text_numbers(reg, tmp_path):
    model, X, _ = reg
    path = tmp_path / "d.parquet"
    X.to_parquet(path)
    ds = load_data(path, model=model)
    pd.testing.assert_frame_equal(ds.X, X)
    as_text = X.astype(str)
    ds2 = load_data(as_text.to_parquet(), model=model, filename="t.parquet")
    np.testing.assert_allclose(ds2.X.to_numpy(), X.to_numpy(), rtol=1e-15)
    assert any("text converted to numbers" in n for n in ds2.notices)


def test_load_data_semicolon_csv_and_blank_cells(reg):
    model, X, _ = reg
    frame = X.iloc[:5].copy()
    frame.iloc[2, 1] = np.nan
    ds = load_data(frame.to_csv(index=False, sep=";").encode(), model=model, filename="d.csv")
    assert np.isnan(ds.X.iloc[2, 1])
    assert any("empty in 1 row" in n for n in ds.notices)


def test_categorical_column_keeps_text():
    X = pd.DataFrame({"n": np.arange(12.0), "c": list("abc") * 4})
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["c"]), remainder="passthrough"),
                         LinearRegression()).fit(X, X.n)
    ds = load_data(_csv(X), model=pipe, filename="d.csv")
    assert ds.X.c.tolist() == X.c.tolist()


def test_peek_columns():
    assert peek_columns(b"x,y,z\n1,2,3\n", filename="a.csv") == ["x", "y", "z"]


def _dup_parquet() -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table([pa.array([1.0]), pa.array([2.0])], names=["a", "a"]), buf)
    return buf.getvalue()


class _Unfitted(LinearRegression):
    pass


BAD_INPUTS = [
    # (kind, payload factory, kwargs, error, message)
    ("model", lambda m, X: b"", {"filename": "m.skops"}, InvalidModelError, "model file is empty"),
    ("model", lambda m, X: sio.dumps(m), {"filename": "m.docx"}, InvalidModelError, "'m.docx' is not a model file"),
    ("model", lambda m, X: sio.dumps(m), {"filename": "m.txt"}, InvalidModelError,
     "'m.txt' is not an XGBoost, LightGBM or CatBoost model file"),
    ("model", lambda m, X: b"this is not a zip", {"filename": "m.skops"}, InvalidModelError, "not a readable .skops model"),
    ("model", lambda m, X: sio.dumps({"a": 1}), {"filename": "m.skops"}, InvalidModelError, "holds a dict, not a fitted model"),
    ("model", lambda m, X: sio.dumps(LinearRegression()), {"filename": "m.skops"}, InvalidModelError, "not fitted yet"),
    ("model", lambda m, X: b"\x80\x04garbage", {"filename": "m.pkl", "trusted": True}, InvalidModelError, "Could not read the pickle/joblib"),
    ("model", lambda m, X: b"plain text", {}, InvalidModelError, "Could not tell the model format"),
    ("model", lambda m, X: "/no/such/model.skops", {}, InvalidDataError, "does not exist"),
    ("data", lambda m, X: b"", {"filename": "d.csv"}, InvalidDataError, "The data file is empty"),
    ("data", lambda m, X: b"a,b,c,d\n", {"filename": "d.csv"}, InvalidDataError, "header but no data rows"),
    ("data", lambda m, X: _csv(X.drop(columns=["b", "d"])), {"filename": "d.csv"}, InvalidDataError,
     r"lacks 2 column\(s\) the model needs: b, d"),
    ("data", lambda m, X: _csv(X.assign(c=X.c.astype(object).where(X.index != 3, "unknown"))), {"filename": "d.csv"},
     InvalidDataError, r"Column 'c' must be numeric but holds text, e.g. 'unknown' in data row 4"),
    ("data", lambda m, X: b"a,b,a,d\n1,2,3,4\n", {"filename": "d.csv"}, InvalidDataError, "duplicate column names: a"),
    ("data", lambda m, X: _dup_parquet(), {"filename": "d.parquet"}, InvalidDataError, "duplicate column names: a"),
    ("data", lambda m, X: "a,b,c,d\n1,2,3,caf\u00e9\n".encode("latin-1"), {"filename": "d.csv"}, InvalidDataError,
     r"not UTF-8 text: byte 0xe9 at position 17"),
    ("data", lambda m, X: _csv(X), {"filename": "d.xlsx"}, InvalidDataError, "'d.xlsx' is not a data file"),
    ("data", lambda m, X: _csv(X), {"filename": "d.csv", "target": "price"}, InvalidDataError,
     "target column 'price' is not in the file"),
    ("data", lambda m, X: _csv(X.assign(t=["x"] * len(X))), {"filename": "d.csv", "target": "t"}, InvalidDataError,
     "holds text but the model is a regressor"),
    ("data", lambda m, X: _csv(X.assign(c=np.inf)), {"filename": "d.csv"}, InvalidDataError, "Column 'c' holds infinite values"),
    ("data", lambda m, X: b"PAR1 broken parquet", {"filename": "d.parquet"}, InvalidDataError, "Could not read the Parquet file"),
    ("data", lambda m, X: b"a,b,c,d\n1,2,3,4\n1,2,3,4,5,6\n", {"filename": "d.csv"}, InvalidDataError, "Could not parse the CSV"),
    ("data", lambda m, X: b"a,b,c,d\n1,2,\x00,4\n", {"filename": "d.csv"}, InvalidDataError, "NUL bytes"),
    ("data", lambda m, X: b"\n\n", {"filename": "d.csv"}, InvalidDataError, "The data file is empty"),
]


@pytest.mark.parametrize("kind, payload, kwargs, err, match", BAD_INPUTS,
                         ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD_INPUTS)])
def test_bad_inputs_have_clear_messages(reg, kind, payload, kwargs, err, match):
    model, X, _ = reg
    data = payload(model, X)
    with pytest.raises(err, match=match) as info:
        if kind == "model":
            load_model(data, **kwargs)
        else:
            load_data(data, model=model, **kwargs)
    assert isinstance(info.value, ExplainerError) and isinstance(info.value, ValueError)


def test_bad_classifier_target(clf):
    model, X, y = clf
    frame = X.assign(label=y.where(y.index != 5, "maybe"))
    with pytest.raises(InvalidDataError, match="values the classifier does not know: maybe"):
        load_data(_csv(frame), model=model, target="label", filename="d.csv")


def test_unnamed_model_column_count(reg_data):
    X, y = reg_data
    model = LinearRegression().fit(X.to_numpy(), y)
    with pytest.raises(InvalidDataError, match="fitted on 4 unnamed columns but the file has 3"):
        load_data(_csv(X.iloc[:, :3]), model=model, filename="d.csv")
    ds = load_data(_csv(X), model=model, filename="d.csv")
    assert any("did not record its column names" in n for n in ds.notices)


def test_empty_text_cells_get_the_same_notice_as_empty_numbers():
    """A text column's empty cells (blank or missing) are counted and said, as a number column's are."""
    from sklearn.compose import make_column_transformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from explainers import load_data

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=40), "t": rng.choice(["x", "y"], 40)})
    text = make_pipeline(SimpleImputer(strategy="constant", fill_value="missing"), OneHotEncoder(handle_unknown="ignore"))
    model = make_pipeline(make_column_transformer((text, ["t"]), remainder="passthrough"),
                          LinearRegression()).fit(df, df.a)
    gappy = df.copy()
    gappy.loc[[1, 5, 7], "t"] = None
    gappy.loc[9, "t"] = "  "
    gappy.loc[2, "a"] = np.nan
    ds = load_data(gappy.to_csv(index=False).encode(), model=model, filename="d.csv")
    said = {n.split("'")[1]: n for n in ds.notices if "is empty in" in n}
    assert set(said) == {"a", "t"}
    assert "empty in 1 row(s)" in said["a"]
    assert "empty in 4 row(s)" in said["t"]  # three missing, one blank (read as missing)
    assert int(ds.X["t"].isna().sum()) == 4
