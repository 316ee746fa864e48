"""The linear engine: a linear model's coefficients on its original inputs.

A scikit-learn linear model (``coef_``, ``intercept_``), alone or after affine
scalers in a Pipeline, is ``decision = X @ coef.T + intercept`` on the
pipeline's input columns: the scalers fold into the coefficients. Linear SHAP
(:mod:`explainers.shap.linear`) and the model description
(:mod:`explainers.description`) read it from here.
"""
from __future__ import annotations

import numpy as np

from .errors import InvalidModelError

__all__ = ["is_linear_model", "linear_coefficients"]

# models whose predict is not linear in coef_ (a log link), or that have no
# usable coef_ for prediction
_NOT_LINEAR = {"PoissonRegressor", "GammaRegressor", "TweedieRegressor", "SGDOneClassSVM"}
_LINEAR_MODULES = ("sklearn.linear_model", "sklearn.svm")


def _affine(step) -> tuple[np.ndarray | float, np.ndarray | float] | None:
    """(a, d) with step(x) = a * x + d elementwise, or None if not a known affine scaler."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return 1.0, 0.0
    name = type(step).__name__
    if name == "StandardScaler":
        mean = step.mean_ if step.with_mean else 0.0
        scale = step.scale_ if step.with_std else 1.0
        return 1.0 / np.asarray(scale, float), -np.asarray(mean, float) / np.asarray(scale, float)
    if name == "RobustScaler":
        center = step.center_ if step.with_centering else 0.0
        scale = step.scale_ if step.with_scaling else 1.0
        return 1.0 / np.asarray(scale, float), -np.asarray(center, float) / np.asarray(scale, float)
    if name == "MaxAbsScaler":
        return 1.0 / np.asarray(step.scale_, float), 0.0
    if name == "MinMaxScaler" and not getattr(step, "clip", False):
        return np.asarray(step.scale_, float), np.asarray(step.min_, float)
    if name == "FunctionTransformer" and step.func is None:
        return 1.0, 0.0
    return None


def linear_coefficients(model) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients of a linear model on its original inputs.

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted scikit-learn linear model (``coef_``, ``intercept_``), or a
        Pipeline of affine scalers (StandardScaler, RobustScaler,
        MaxAbsScaler, MinMaxScaler without clip, passthrough) ending in one.

    Returns
    -------
    coef : ndarray of shape (n_outputs, n_features)
    intercept : ndarray of shape (n_outputs,)
        ``decision = X @ coef.T + intercept`` (``predict`` for regressors).

    Raises
    ------
    InvalidModelError
        If the model is not of that form.
    """
    steps = list(model.steps) if hasattr(model, "steps") else [("model", model)]
    est = steps[-1][1]
    name = type(est).__name__
    if (
        not type(est).__module__.startswith(_LINEAR_MODULES)
        or name in _NOT_LINEAR
        or not hasattr(est, "coef_")
        or not hasattr(est, "intercept_")
    ):
        raise InvalidModelError(
            f"LinearShap needs a linear model (a scikit-learn linear_model or LinearSVC/SVR, "
            f"optionally after affine scalers in a Pipeline); got {name}. Use ExactShap or "
            "KernelShap, which work for any model."
        )
    coef = np.atleast_2d(np.asarray(est.coef_, dtype=float))
    intercept = np.broadcast_to(np.asarray(est.intercept_, dtype=float).reshape(-1), (len(coef),)).copy()
    # fold x -> a * x + d (applied last-to-first) into the coefficients
    for step_name, step in reversed(steps[:-1]):
        ad = _affine(step)
        if ad is None:
            raise InvalidModelError(
                f"LinearShap can fold only affine scalers (StandardScaler, RobustScaler, "
                f"MaxAbsScaler, MinMaxScaler without clip) into the model; the pipeline step "
                f"{step_name!r} is a {type(step).__name__}. Use ExactShap or KernelShap."
            )
        a, d = ad
        intercept = intercept + coef @ np.broadcast_to(d, coef.shape[1:])
        coef = coef * a
    return coef, intercept


def is_linear_model(model) -> bool:
    """True if :func:`linear_coefficients` can read the model (no exception)."""
    try:
        linear_coefficients(model)
    except (InvalidModelError, AttributeError, TypeError, ValueError):
        return False
    return True
