"""Regressors fitted on a transformed target: ``log(price)``, ``log1p(count)``, ``sqrt(y)``.

Such a model predicts ``f(target)``; its errors and effects read best in the target's own
units, ``f^-1(prediction)``. :class:`InOriginalUnits` is the model seen that way (any
explainer takes it: PDP, ICE, ALE, H statistic), and :func:`target_holds` says which scale a
data file's target column is on, so the two are never compared across scales.
"""
from __future__ import annotations

import numpy as np

from .errors import param_error

#: name -> (f, its inverse, the values f takes, in words)
TRANSFORMS = {
    "log": (np.log, np.exp, "positive"),
    "log1p": (np.log1p, np.expm1, "above -1"),
    "sqrt": (np.sqrt, np.square, "at least 0"),
}


def check_transform(name: str | None, func: str) -> str | None:
    """``name`` if it is a known transform (or None / "none": no transform)."""
    if name in (None, "none", ""):
        return None
    if name not in TRANSFORMS:
        raise param_error("target_transform", func, f"one of {['none', *TRANSFORMS]}", name)
    return name


def forward(name: str, y) -> np.ndarray:
    """``f(y)``: the target on the model's scale (NaN where f is not defined)."""
    y = np.asarray(y, dtype=float)
    ok = _in_domain(name, y)
    out = np.full(y.shape, np.nan)
    out[ok] = TRANSFORMS[name][0](y[ok])
    return out


def inverse(name: str, z) -> np.ndarray:
    """``f^-1(z)``: a prediction on the model's scale in the target's original units."""
    return TRANSFORMS[name][1](np.asarray(z, dtype=float))


def _in_domain(name: str, y: np.ndarray) -> np.ndarray:
    finite = np.isfinite(y)
    if name == "log":
        return finite & (y > 0)
    if name == "log1p":
        return finite & (y > -1)
    return finite & (y >= 0)


def target_holds(name: str, y, prediction) -> str:
    """Which scale the target column ``y`` is on: ``"model"`` (it holds f(target), as the
    predictions) or ``"original"`` (the target's own units).

    A column with values outside f's domain (a log target below 0) can only be on the model's
    scale; otherwise the scale whose values lie nearer the predictions (median absolute
    difference) is the one the column holds.
    """
    y = np.asarray(y, dtype=float)
    pred = np.asarray(prediction, dtype=float).reshape(-1)
    known = np.isfinite(y) & np.isfinite(pred)
    if not known.any() or not _in_domain(name, y[known]).all():
        return "model"
    as_model = np.median(np.abs(pred[known] - y[known]))
    as_original = np.median(np.abs(pred[known] - forward(name, y[known])))
    return "original" if as_original < as_model else "model"


class InOriginalUnits:
    """A regressor fitted on ``f(target)``, predicting ``f^-1`` of its prediction.

    Everything else (fitted attributes, feature names) is the model's own, so explainers
    read it as the regressor it is; only ``predict`` changes scale.
    """

    _estimator_type = "regressor"

    def __init__(self, model, transform: str):
        self.model = model
        self.transform = check_transform(transform, "InOriginalUnits")
        if self.transform is None:
            raise param_error("transform", "InOriginalUnits", f"one of {list(TRANSFORMS)}", transform)

    def predict(self, X):
        return inverse(self.transform, self.model.predict(X))

    def __sklearn_tags__(self):
        tags = self.model.__sklearn_tags__()
        return tags

    def __getattr__(self, name):
        if name in ("model", "transform") or name.startswith("__"):
            raise AttributeError(name)
        if name in ("predict_proba", "decision_function", "steps"):  # never a classifier's or a pipeline's
            raise AttributeError(name)
        return getattr(self.model, name)

    def __repr__(self) -> str:
        return f"InOriginalUnits({type(self.model).__name__}, {self.transform!r})"
