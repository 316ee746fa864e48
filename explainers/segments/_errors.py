"""Each row's error against its true value: :func:`row_errors`, and what a segment's error
band and the error tree measure."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InvalidDataError, InvalidParameterError, param_error
from ..model import ModelAdapter
from ._common import ERROR_KINDS, _adapter


def _resolve_error(adapter: ModelAdapter, kind: str, func: str) -> str:
    if not isinstance(kind, str) or kind not in ERROR_KINDS:
        raise param_error("error", func, f"one of {list(ERROR_KINDS)}", kind)
    if adapter.task == "regression":
        if adapter.explained is not None:
            raise InvalidParameterError(
                f"{func} measures errors against a target; this model gives an {adapter.explained.split(' (')[0]}, "
                "which has no true value to compare with."
            )
        if adapter.n_targets > 1:
            raise InvalidParameterError(
                f"{func} measures the error of one prediction per row; this regressor predicts "
                f"{adapter.n_targets} targets. Explain one target at a time."
            )
        if kind not in ("auto", "absolute"):
            raise InvalidParameterError(
                f"The error {kind!r} is for classifiers; a regressor's error is 'absolute' (or 'auto')."
            )
        return "absolute"
    if kind == "absolute":
        raise InvalidParameterError(
            "The error 'absolute' is for regressors; a classifier's error is 'proba' (1 - probability of the "
            "true class), 'misclassified' (0/1) or 'auto'."
        )
    has_proba = hasattr(adapter.model, "predict_proba")
    if kind == "proba" and not has_proba:
        raise InvalidParameterError(
            f"The error 'proba' needs predict_proba, which this {type(adapter.model).__name__} does not have; "
            "use error='misclassified'."
        )
    if kind == "auto":
        return "proba" if has_proba else "misclassified"
    return kind


#: what a ``predictions`` callable is asked for: the adapter's own predictions, the model's
#: labels, the class probabilities (of every row of X)
PREDICTION_KINDS = ("values", "labels", "proba")


def _predicted(adapter: ModelAdapter, frame: pd.DataFrame, what: str, predictions, func: str) -> np.ndarray:
    """The model's predictions of every row: from ``predictions(what)`` where the caller has them
    (a dashboard computes them once per model and data), else computed here."""
    if predictions is None:
        if what == "values":
            return adapter.predict(frame)
        if what == "labels":
            return adapter.predict_labels(frame)
        return adapter.with_output("proba", None).predict(frame)
    out = np.asarray(predictions(what))
    if len(out) != len(frame):
        raise InvalidParameterError(f"{func}: predictions({what!r}) gave {len(out):,} rows for the {len(frame):,} of X.")
    return out


def _row_errors(adapter: ModelAdapter, frame: pd.DataFrame, y, kind: str, func: str, predictions=None) -> np.ndarray:
    from ..importance._common import check_y, missing_target

    kind = _resolve_error(adapter, kind, func)
    y_arr = check_y(y, len(frame), adapter.task, adapter.classes, func, allow_missing=True)
    has_y = ~missing_target(y_arr)
    out = np.full(len(frame), np.nan)
    if not has_y.any():
        return out
    if kind == "absolute":
        pred = np.asarray(_predicted(adapter, frame, "values", predictions, func), dtype=float)
        out[has_y] = np.abs(y_arr[has_y].astype(float) - pred[has_y])
        return out
    if kind == "misclassified":
        labels = _predicted(adapter, frame, "labels", predictions, func)
        truth = pd.Series(y_arr[has_y], dtype=object)
        out[has_y] = (pd.Series(labels[has_y], dtype=object).to_numpy() != truth.to_numpy()).astype(float)
        return out
    proba = np.asarray(_predicted(adapter, frame, "proba", predictions, func), dtype=float).reshape(len(frame), -1)
    pos = {c: i for i, c in enumerate(adapter.classes.tolist())}
    idx = np.fromiter((pos[v] for v in pd.Series(y_arr[has_y], dtype=object).tolist()), dtype=np.intp,
                      count=int(has_y.sum()))
    out[has_y] = 1.0 - proba[has_y][np.arange(len(idx)), idx]
    return out


def row_errors(model, X, y, *, error: str = "auto", predictions=None) -> np.ndarray:
    """Each row's error against its true value.

    Parameters
    ----------
    model : fitted estimator, Pipeline or ModelAdapter
    X : DataFrame or array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        True values (class labels for classifiers); empty cells allowed.
    error : {"auto", "absolute", "proba", "misclassified"}, default="auto"
        ``"absolute"``: ``|y - prediction|`` (regressors). ``"proba"``: ``1 -`` the
        probability the classifier gives the true class. ``"misclassified"``: 1 where the
        predicted label is wrong, else 0. ``"auto"``: absolute for a regressor, proba
        for a classifier with ``predict_proba``, else misclassified.
    predictions : callable, default=None
        ``predictions(what)`` gives the model's predictions of every row of X, for
        ``what`` in :data:`PREDICTION_KINDS` ("values": the adapter's ``predict``,
        "labels": the model's ``predict``, "proba": class probabilities), where the
        caller already has them; None: they are computed.

    Returns
    -------
    ndarray of shape (n_samples,)
        NaN where the target is empty.

    Raises
    ------
    ExplainerError
        No target, a target of the wrong length or with labels the classifier does not
        know, or an error kind the model cannot give.
    """
    adapter = _adapter(model)
    frame = adapter.to_frame(X)
    if y is None:
        raise InvalidDataError("row_errors needs the target y (the true values of the rows of X).")
    return _row_errors(adapter, frame, y, error, "row_errors", predictions)
