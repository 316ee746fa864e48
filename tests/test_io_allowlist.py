"""The reviewed skops allow-list: what scikit-learn's own estimators need loads, nothing else does.

Each configuration is dumped with skops and loaded with :func:`explainers.load_model`;
the loaded model predicts exactly what the original does. Files naming any other
type or function (os.system, eval, a partial of an unreviewed function, a custom
class) are refused with :class:`UnsafeModelError`, naming it.
"""
import functools
import io
import json
import os
import zipfile

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor, make_column_selector
from sklearn.ensemble import (GradientBoostingRegressor, HistGradientBoostingClassifier,
                              HistGradientBoostingRegressor, RandomForestRegressor)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (FunctionTransformer, OneHotEncoder, OrdinalEncoder, StandardScaler,
                                   TargetEncoder)

from explainers import UnsafeModelError, load_model
from explainers.io.models import SKOPS_ALLOWED_FUNCTIONS, SKOPS_ALLOWED_TYPES


def _houses(n=240, seed=0):
    """A mixed table as people have it: text, a pandas category, empty cells, names with spaces."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "lot size": rng.normal(1500, 300, n).round(),
        "neighborhood": rng.choice(["Old Town", "Riverside", "Hills"], n),
        "house style": pd.Categorical(rng.choice(["ranch", "colonial", "split level"], n)),
        "year built": rng.integers(1950, 2020, n).astype(float),
    })
    X.loc[::9, "year built"] = np.nan
    price = (100 * X["lot size"] + 30_000 * (X.neighborhood == "Hills")
             + 10_000 * (X["house style"] == "colonial").astype(float) + rng.normal(0, 5_000, n))
    return X, price.round(), (price > price.median()).astype(int)


def _hgb_from_dtype():
    X, _, yc = _houses()
    X = X.assign(neighborhood=X.neighborhood.astype("category"))
    return HistGradientBoostingClassifier(categorical_features="from_dtype", max_iter=15, random_state=0).fit(X, yc), X


def _hgb_names():
    X, y, _ = _houses()
    X = X.assign(**{"house style": X["house style"].cat.codes}).drop(columns="neighborhood")
    return HistGradientBoostingRegressor(categorical_features=["house style"], max_iter=15,
                                         random_state=0).fit(X, y), X


def _hgb_mask():
    X, y, _ = _houses()
    X = X.assign(**{"house style": X["house style"].cat.codes}).drop(columns="neighborhood")
    return HistGradientBoostingRegressor(categorical_features=[False, True, False], max_iter=15,
                                         random_state=0).fit(X, y), X


def _hgb_pipeline():
    X, y, _ = _houses()
    X = X.drop(columns="house style")
    pre = ColumnTransformer([("hood", OrdinalEncoder(), ["neighborhood"])], remainder="passthrough",
                            verbose_feature_names_out=False)
    model = make_pipeline(pre, HistGradientBoostingRegressor(categorical_features=["neighborhood"], max_iter=15,
                                                             random_state=0)).set_output(transform="pandas")
    return model.fit(X, y), X


def _ttr():
    X, y, _ = _houses()
    X = X[["lot size", "neighborhood"]]
    model = TransformedTargetRegressor(
        Pipeline([("pre", ColumnTransformer([("hood", OneHotEncoder(handle_unknown="ignore"), ["neighborhood"])],
                                            remainder="passthrough")),
                  ("gb", GradientBoostingRegressor(n_estimators=20, random_state=0))]),
        func=np.log1p, inverse_func=np.expm1)
    return model.fit(X, y), X


def _encoders():
    X, y, _ = _houses()
    pre = ColumnTransformer([
        ("onehot", OneHotEncoder(handle_unknown="ignore"), ["house style"]),
        ("ordinal", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1), ["neighborhood"]),
        ("target", TargetEncoder(target_type="continuous"), ["neighborhood"]),
        ("impute", SimpleImputer(strategy="median", add_indicator=True), ["year built"]),
    ], remainder="passthrough")
    return make_pipeline(pre, RandomForestRegressor(10, random_state=0)).fit(X, y), X


def _text_imputer():
    X, _, yc = _houses()
    X = X.drop(columns="house style")
    X.loc[::11, "neighborhood"] = np.nan
    pre = ColumnTransformer([
        ("hood", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
         ["neighborhood"]),
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["lot size", "year built"]),
    ])
    return make_pipeline(pre, LogisticRegression(max_iter=500)).fit(X, yc), X


def _selector():
    X, _, yc = _houses()
    X = X.drop(columns="house style")
    pre = ColumnTransformer([
        ("text", OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_include=object)),
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), make_column_selector(dtype_include=np.number)),
    ])
    return make_pipeline(pre, LogisticRegression(max_iter=500)).fit(X, yc), X


def _numpy_functions():
    X, y, _ = _houses()
    X = X[["lot size", "year built"]].fillna(1980.0)
    pre = ColumnTransformer([
        ("log", FunctionTransformer(np.log1p, inverse_func=np.expm1), ["lot size"]),
        ("clip", FunctionTransformer(np.clip, kw_args={"a_min": 1960, "a_max": 2010}), ["year built"]),
        ("sqrt", FunctionTransformer(functools.partial(np.sqrt)), ["lot size"]),
    ])
    return make_pipeline(pre, Ridge()).fit(X, y), X


CONFIGS = {
    "hgb categorical from_dtype": _hgb_from_dtype,
    "hgb categorical names": _hgb_names,
    "hgb categorical mask": _hgb_mask,
    "hgb categorical after an encoder": _hgb_pipeline,
    "TransformedTargetRegressor log1p/expm1": _ttr,
    "OneHot, Ordinal, Target encoders and an imputer": _encoders,
    "imputer on text before one-hot": _text_imputer,
    "make_column_selector": _selector,
    "FunctionTransformer with numpy functions": _numpy_functions,
}


# pandas 3 warns that dtype_include=object will stop picking its str columns: the common spelling still
@pytest.mark.filterwarnings("ignore:For backward compatibility, 'str' dtypes")
@pytest.mark.parametrize("name", list(CONFIGS))
def test_scikit_learn_configurations_load_and_predict_the_same(name, tmp_path):
    model, X = CONFIGS[name]()
    path = tmp_path / "model.skops"
    sio.dump(model, path)
    # everything the file needs beyond skops' own trust is on the reviewed lists
    assert set(sio.get_untrusted_types(file=path)) <= SKOPS_ALLOWED_TYPES | SKOPS_ALLOWED_FUNCTIONS
    loaded = load_model(path)
    assert type(loaded) is type(model)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    if hasattr(model, "predict_proba"):
        np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    # bytes with a name load the same
    np.testing.assert_array_equal(load_model(path.read_bytes(), filename="m.skops").predict(X), model.predict(X))


def test_hgb_needs_the_partial_of_check_array():
    """The reproduction: these names were refused before; the partial wraps check_array."""
    model, _ = _hgb_from_dtype()
    assert {"functools.partial", "sklearn.utils.validation.check_array"} <= set(
        sio.get_untrusted_types(data=sio.dumps(model)))


# ------------------------------------------------------------------ refused
class _Custom(TransformerMixin, BaseEstimator):
    """A class of the user's own: not on any list."""

    def fit(self, X, y=None):
        self.fitted_ = True
        return self

    def transform(self, X):
        return X


def _pipe(transformer):
    X, y, _ = _houses()
    return make_pipeline(transformer, Ridge()), X[["lot size"]], y


@pytest.mark.parametrize("transformer, named", [
    (FunctionTransformer(func=os.system), f"{os.system.__module__}.system"),
    (FunctionTransformer(func=eval), "builtins.eval"),
    (FunctionTransformer(func=functools.partial(os.system)), f"functools.partial of {os.system.__module__}.system"),
    (FunctionTransformer(func=functools.partial(print)), "functools.partial of builtins.print"),
    (FunctionTransformer(func=np.linalg.norm), "numpy.linalg.norm"),
    (_Custom(), "tests.test_io_allowlist._Custom"),
])
def test_any_other_function_or_type_is_refused_by_name(transformer, named):
    model, _, _ = _pipe(transformer)
    data = sio.dumps(model)  # unfitted is enough: the file names the function either way
    with pytest.raises(UnsafeModelError, match="not on the reviewed allow-list") as err:
        load_model(data, filename="m.skops")
    assert named in str(err.value)


def _rewrite_schema(data: bytes, edit) -> bytes:
    """The same .skops archive with its schema.json changed by ``edit(schema)``."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            payload = src.read(info.filename)
            if info.filename == "schema.json":
                schema = json.loads(payload)
                edit(schema)
                payload = json.dumps(schema).encode()
            dst.writestr(info.filename, payload)
    return out.getvalue()


def _nodes(obj, loader):
    if isinstance(obj, dict):
        if obj.get("__loader__") == loader:
            yield obj
        for v in obj.values():
            yield from _nodes(v, loader)
    elif isinstance(obj, list):
        for v in obj:
            yield from _nodes(v, loader)


@pytest.mark.parametrize("module, name", [
    ("posix", "system"),  # untrusted by skops as well
    ("numpy", "frompyfunc"),  # not a reviewed function
    ("scipy.special._special_ufuncs", "gamma"),  # trusted by skops, but not reviewed inside a partial
])
def test_a_crafted_partial_of_an_unreviewed_function_is_refused(module, name):
    model, X = _hgb_from_dtype()
    data = sio.dumps(model)

    def swap(schema):
        partials = list(_nodes(schema, "PartialNode"))
        assert partials
        for node in partials:
            node["content"]["func"].update({"__module__": module, "__class__": name})

    with pytest.raises(UnsafeModelError, match=rf"functools\.partial of {module}\.{name}"):
        load_model(_rewrite_schema(data, swap), filename="m.skops")
    # the untouched file loads
    np.testing.assert_array_equal(load_model(data, filename="m.skops").predict(X), model.predict(X))


def test_a_partial_of_a_partial_is_refused():
    model, _ = _hgb_from_dtype()

    def nest(schema):
        node = next(_nodes(schema, "PartialNode"))
        inner = json.loads(json.dumps(node))
        node["content"]["func"] = inner

    with pytest.raises(UnsafeModelError, match=r"functools\.partial of functools\.partial"):
        load_model(_rewrite_schema(sio.dumps(model), nest), filename="m.skops")


def test_a_reviewed_function_must_be_loaded_as_a_function():
    """check_array may be named as a function only, never as a type skops would build."""
    model, _ = _hgb_from_dtype()

    def as_object(schema):
        for node in _nodes(schema, "FunctionNode"):
            if node["__class__"] == "check_array":
                node["__loader__"] = "TypeNode"

    with pytest.raises(UnsafeModelError, match=r"sklearn\.utils\.validation\.check_array \(as TypeNode\)"):
        load_model(_rewrite_schema(sio.dumps(model), as_object), filename="m.skops")


def test_every_reviewed_function_is_plain_numerics():
    """The lists stay short and reviewed: no module that can import, evaluate or run."""
    for name in SKOPS_ALLOWED_FUNCTIONS | SKOPS_ALLOWED_TYPES:
        assert name.split(".")[0] in {"numpy", "sklearn", "functools", "builtins"}, name
    assert not {"builtins.eval", "builtins.exec", "builtins.getattr", "builtins.__import__",
                "builtins.open"} & (SKOPS_ALLOWED_FUNCTIONS | SKOPS_ALLOWED_TYPES)


def test_compiled_search_indexes_and_optimizers_are_never_listed():
    """A neighbour model's KDTree / BallTree and DistanceMetric run compiled code over the file's
    arrays, an MLP's optimizer is training state: neither is built from a file (issue #23).
    explainers.io.skops_rebuild leaves them out of the schema and rebuilds the index."""
    from explainers.io.skops_rebuild import DROPPED_STATE

    for name in SKOPS_ALLOWED_TYPES | SKOPS_ALLOWED_FUNCTIONS:
        assert not any(part in name for part in ("_kd_tree", "_ball_tree", "_dist_metrics",
                                                 "_stochastic_optimizers")), name
    assert set(DROPPED_STATE.values()) == {"_tree", "_optimizer"}
