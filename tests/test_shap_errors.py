"""Bad input to the SHAP explainers raises clear ExplainerError subclasses."""
import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import LinearRegression, PoissonRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

from explainers.errors import (
    ExplainerError,
    InvalidDataError,
    InvalidFeatureError,
    InvalidModelError,
    InvalidParameterError,
)
from explainers.shap import ExactShap, KernelShap, LinearShap, explain


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"])
    y = X.a + 2 * X.b
    return LinearRegression().fit(X, y), X


@pytest.mark.parametrize("cls", [LinearShap, ExactShap, KernelShap])
@pytest.mark.parametrize(
    "missing, err, msg",
    [
        (["a", "zzz"], InvalidFeatureError, "Unknown feature 'zzz'.*Known features: a, b, c"),
        ([5], InvalidFeatureError, "index 5 is out of range"),
        (np.array([True, False]), InvalidFeatureError, r"shape \(3,\) or \(2, 3\)"),
    ],
)
def test_bad_missing_mask(fitted, cls, missing, err, msg):
    model, X = fitted
    with pytest.raises(err, match=msg):
        cls(model, X.iloc[:10]).explain(X.iloc[:2], missing)


@pytest.mark.parametrize("cls", [LinearShap, ExactShap, KernelShap])
def test_background_with_other_columns(fitted, cls):
    model, X = fitted
    other = X.rename(columns={"c": "z"})
    with pytest.raises(InvalidDataError, match="background data does not fit the model.*lacks 1 of the model's columns: c"):
        cls(model, other)
    with pytest.raises(InvalidDataError, match="background data does not fit.*has 2 columns but the model takes 3"):
        cls(model, X.iloc[:, :2].to_numpy())


@pytest.mark.parametrize("cls", [LinearShap, ExactShap, KernelShap])
def test_rows_with_wrong_columns(fitted, cls):
    model, X = fitted
    with pytest.raises(InvalidDataError, match="X: .*lacks 1 of the model's columns: b"):
        cls(model, X).explain(X.drop(columns="b"))
    with pytest.raises(InvalidDataError, match="X has no rows"):
        cls(model, X).explain(X.iloc[:0])


def test_too_many_features_for_exact():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 14))
    model = LinearRegression().fit(X, X[:, 0])
    with pytest.raises(InvalidParameterError, match=r"2\*\*14 coalitions x 30 background rows = 491,520.*max_evals=100,000.*KernelShap.*TreeShap"):
        ExactShap(model, X, max_evals=100_000)
    # without a background the check runs at explain time
    with pytest.raises(InvalidParameterError, match="Use KernelShap"):
        ExactShap(model, max_evals=100_000).explain(X)
    with pytest.raises(InvalidParameterError, match="Use KernelShap"):
        explain(model, X, background=X, method="exact", max_evals=100_000)


@pytest.mark.parametrize(
    "make, msg",
    [
        (lambda m, X: ExactShap(m, X, max_evals=0), "'max_evals' parameter of ExactShap must be an int >= 1. Got 0"),
        (lambda m, X: KernelShap(m, X, n_samples=0), "'n_samples' parameter of KernelShap must be an int >= 1"),
        (lambda m, X: KernelShap(m, X, n_samples=2.5), "'n_samples'.*Got 2.5 instead"),
        (lambda m, X: KernelShap(m, X, random_state="x"), "'random_state' parameter of KernelShap"),
        (lambda m, X: ExactShap(m, X, output="prob"), "'output' parameter of ModelAdapter"),
        (lambda m, X: ExactShap(m, X).explain(X, progress=3), "'progress' parameter of ExactShap.explain"),
        (lambda m, X: explain(m, X, method="magic"), r"'method' parameter of explain must be one of \['auto', 'linear'"),
    ],
)
def test_bad_parameters(fitted, make, msg):
    model, X = fitted
    with pytest.raises(InvalidParameterError, match=msg):
        make(model, X)


@pytest.mark.parametrize(
    "model, msg",
    [
        (RandomForestRegressor(n_estimators=2, random_state=0), "LinearShap needs a linear model.*RandomForestRegressor"),
        (PoissonRegressor(), "LinearShap needs a linear model.*PoissonRegressor"),
        (make_pipeline(PolynomialFeatures(), LinearRegression()), "pipeline step 'polynomialfeatures' is a PolynomialFeatures"),
    ],
)
def test_linear_refuses_non_linear_models(fitted, model, msg):
    _, X = fitted
    model.fit(X, np.abs(X.a) + 1)
    with pytest.raises(InvalidModelError, match=msg):
        LinearShap(model, X)


def test_linear_refuses_nan_not_marked_missing(fitted):
    model, X = fitted
    Xn = X.iloc[:3].copy()
    Xn.iloc[2, 1] = np.nan
    with pytest.raises(InvalidDataError, match=r"NaN in 1 cells .*row 2, feature 'b'.*nan_is_missing=True"):
        LinearShap(model, X).explain(Xn, nan_is_missing=False)
    assert LinearShap(model, X).explain(Xn).values[2, 1] == 0.0


def test_default_background_needs_complete_rows(fitted):
    model, X = fitted
    Xn = X.iloc[:3].copy()
    Xn.iloc[:, 0] = np.nan
    with pytest.raises(InvalidDataError, match="every row of X has a missing value.*Pass background="):
        ExactShap(model).explain(Xn)


def test_unfitted_model():
    with pytest.raises(InvalidModelError, match="not fitted"):
        ExactShap(LinearRegression(), np.zeros((3, 2)))


def test_errors_are_value_errors(fitted):
    model, X = fitted
    with pytest.raises(ValueError):
        KernelShap(model, X).explain(X, ["nope"])
    assert issubclass(InvalidParameterError, ExplainerError)


def test_result_row_out_of_range(fitted):
    model, X = fitted
    res = ExactShap(model, X.iloc[:5]).explain(X.iloc[:3])
    with pytest.raises(InvalidParameterError, match=r"'row' parameter of ShapResult must be an int in \[0, 2\].*Got 3"):
        res._check_row(3)
    with pytest.raises(InvalidFeatureError, match="Unknown feature 'q'"):
        res.feature_index("q")
    with pytest.raises(InvalidParameterError, match="'class_index'"):
        res.select(1)
