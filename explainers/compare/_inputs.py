"""Checks of :func:`~explainers.compare.compare_models`'s inputs, and the predictions it scores.

Every check runs once, at the entry point, and refuses with the package's errors: what
differs between the models (their kind, their classes, the columns one lacks) and how to
fix it.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..errors import (
    InvalidDataError,
    InvalidModelError,
    InvalidParameterError,
    param_error,
    shown,
)
from ..model import ModelAdapter, _is_anomaly_model
from ..quality import _encode, target_rows
from ._metrics import CLASSIFICATION_METRICS, REGRESSION_METRICS, Predictions, Truth

FUNC = "compare_models"
#: the most bootstrap work (replicates x rows) one call does
MAX_BOOT_CELLS = 200_000_000


# ------------------------------------------------------------------ models
def check_models(models) -> dict[str, ModelAdapter]:
    """{name: adapter} of at least two models of one kind (and, for classifiers, one set of classes)."""
    if not isinstance(models, Mapping):
        raise param_error("models", FUNC, "a dict {name: fitted model} of at least 2 models", models)
    if len(models) < 2:
        raise InvalidParameterError(
            f"compare_models compares at least 2 models; got {len(models)} ({', '.join(map(repr, models))}). "
            "Pass a dict {name: fitted model} with two or more models.")
    names = [str(k) for k in models]
    if len(set(names)) < len(names):
        raise InvalidParameterError(f"The model names {list(models)} repeat as text; give each model its own name.")
    adapters = {}
    for name, model in zip(names, models.values()):
        adapter = model.with_output("auto", None) if isinstance(model, ModelAdapter) else ModelAdapter(model)
        if adapter.explained is not None or _is_anomaly_model(adapter.model):
            raise InvalidModelError(f"Model {name!r} is an outlier detector: its anomaly score has no target to "
                                    "be scored against. Compare models that predict the target.")
        if adapter.task == "regression" and adapter.n_targets > 1:
            raise InvalidModelError(f"Model {name!r} predicts {adapter.n_targets} targets; compare_models scores "
                                    "one target. Compare models of a single output.")
        adapters[name] = adapter
    _check_same_kind(adapters)
    return adapters


def _check_same_kind(adapters: dict[str, ModelAdapter]) -> None:
    regressors = [n for n, a in adapters.items() if a.task == "regression"]
    if regressors and len(regressors) < len(adapters):
        classifiers = [n for n in adapters if n not in regressors]
        raise InvalidModelError(
            f"compare_models scores models of one kind on one target: {', '.join(map(repr, regressors))} "
            f"{'is a regressor' if len(regressors) == 1 else 'are regressors'} but "
            f"{', '.join(map(repr, classifiers))} {'is a classifier' if len(classifiers) == 1 else 'are classifiers'}"
            ". Compare regressors with regressors, classifiers with classifiers.")
    if regressors:
        return
    first, ref = next(iter(adapters.items()))
    ref_labels = [str(c) for c in ref.classes]
    for name, a in adapters.items():
        labels = [str(c) for c in a.classes]
        if sorted(labels) != sorted(ref_labels):
            raise InvalidModelError(
                f"Models {first!r} and {name!r} predict different classes: {first!r} has {ref_labels}, "
                f"{name!r} has {labels}. Compare classifiers trained on the same target with the same classes.")


def check_metrics(metrics, task: str) -> tuple[str, ...]:
    """The metric names asked for, in the order given (all of the task's by default)."""
    allowed = REGRESSION_METRICS if task == "regression" else CLASSIFICATION_METRICS
    if metrics is None:
        return allowed
    chosen = [metrics] if isinstance(metrics, str) else list(metrics) if np.iterable(metrics) else None
    if not chosen or any(m not in allowed for m in chosen) or len(set(chosen)) < len(chosen):
        kind = "a regressor" if task == "regression" else "a classifier"
        raise param_error("metrics", FUNC, f"None or a list of distinct names among {list(allowed)} (for {kind})",
                          metrics)
    return tuple(chosen)


def check_options(n_boot, random_state, confidence, n_disagree, pair, names) -> tuple:
    """(n_boot, confidence, n_disagree, pair) once checked."""
    def whole(value, name, low):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise param_error(name, FUNC, f"an int >= {low}", value)
        return int(value)

    n_boot, n_disagree = whole(n_boot, "n_boot", 0), whole(n_disagree, "n_disagree", 0)
    if random_state is not None:
        whole(random_state, "random_state", 0)
    if isinstance(confidence, bool) or not isinstance(confidence, (float, int, np.floating)) or not (
            0 < float(confidence) < 1):
        raise param_error("confidence", FUNC, "a float in (0, 1), e.g. 0.95", confidence)
    if pair is None:
        pair = tuple(names[:2])
    elif (isinstance(pair, str) or not np.iterable(pair) or len(pair) != 2 or str(pair[0]) == str(pair[1])
          or any(str(p) not in names for p in pair)):
        raise param_error("pair", FUNC, f"None or two different model names among {names}", pair)
    return n_boot, float(confidence), n_disagree, (str(pair[0]), str(pair[1]))


def check_budget(n_boot: int, n_rows: int) -> None:
    if n_boot * n_rows > MAX_BOOT_CELLS:
        raise InvalidParameterError(
            f"n_boot x rows = {n_boot:,} x {n_rows:,} = {n_boot * n_rows:,} row draws, more than compare_models' "
            f"bound of {MAX_BOOT_CELLS:,}. Lower n_boot to at most {MAX_BOOT_CELLS // max(n_rows, 1):,}, or "
            "compare on a sample of the rows.")


# ------------------------------------------------------------------ target
def read_target(y, X, task: str, classes) -> Truth:
    """The rows with a target and their targets (class positions in ``classes``, or floats)."""
    shape = getattr(X, "shape", None) if X is not None else None
    if shape is None and isinstance(X, (list, tuple)):
        shape = np.shape(X)
    if shape is None or len(shape) != 2:
        raise InvalidDataError(f"compare_models needs X, the rows to score the models on, as a 2-D table; "
                               f"got {type(X).__name__}{'' if shape is None else f' of shape {shape}'}.")
    n = shape[0]
    if y is None:
        raise InvalidDataError("compare_models scores the models against the target y: pass y (the true values "
                               "of X's rows), or pick the target column when loading the data.")
    if isinstance(y, pd.DataFrame):
        if y.shape[1] != 1:
            raise InvalidDataError(f"compare_models takes one target column; y has {y.shape[1]}. Pass one.")
        y = y.iloc[:, 0]
    if np.ndim(y) != 1 or len(y) != n:
        raise InvalidDataError(f"y has shape {np.shape(y)} but X has {n} rows: pass one target per row of X.")
    index = X.index if isinstance(X, pd.DataFrame) else pd.RangeIndex(n)
    if task == "regression":
        rows, n_blank = target_rows(y)
        values = pd.to_numeric(pd.Series(np.asarray(y, dtype=object)[rows]), errors="coerce").to_numpy(float)
        bad = ~np.isfinite(values)
        if bad.any():
            sample = ", ".join(shown(v) for v in np.asarray(y, dtype=object)[rows][bad][:3])
            raise InvalidDataError(f"The target of regression models must be numbers; {int(bad.sum())} cell(s) "
                                   f"are not (e.g. {sample}). Is the right column the target?")
        truth = Truth(task, None, values, rows, index[rows], n_blank)
    else:
        rows, y_idx, n_blank, n_unknown = _encode(y, list(classes))
        truth = Truth(task, list(classes), y_idx, rows, index[rows], n_blank, n_unknown)
    if len(truth.rows) < 2:
        raise InvalidDataError(
            f"compare_models needs at least 2 rows with a target; {len(truth.rows)} of {n} have one"
            + (f" ({truth.n_unknown} hold labels that are no class of the models: {[str(c) for c in classes]})"
               if truth.n_unknown else "") + ". Pass the target column of X's rows.")
    return truth


def take_rows(X, rows: np.ndarray):
    """X's rows at positions ``rows``, of X's own type."""
    if isinstance(X, pd.DataFrame):
        return X.iloc[rows]
    if hasattr(X, "tocsr"):
        return X.tocsr()[rows]
    return np.asarray(X)[rows]


# ------------------------------------------------------------- predictions
def predict(name: str, adapter: ModelAdapter, X, classes) -> Predictions:
    """One model's predictions on X, its classes lined up with ``classes`` (by text)."""
    try:
        frame = adapter.to_frame(X)
    except InvalidDataError as exc:
        raise InvalidDataError(f"Model {name!r} cannot be scored on X: {exc}") from None
    if adapter.task == "regression":
        return Predictions(name, value=np.asarray(adapter.predict(frame), dtype=float))
    own = [str(c) for c in adapter.classes]
    perm = np.array([own.index(str(c)) for c in classes])
    position = {str(c): i for i, c in enumerate(classes)}
    labels = np.array([position[str(v)] for v in adapter.predict_labels(frame)], dtype=int)
    if hasattr(adapter.model, "predict_proba"):
        proba = adapter.with_output("proba", None).predict(frame)
        return Predictions(name, proba=proba[:, perm], labels=labels)
    margin = adapter.with_output("raw", None).predict(frame)
    if margin.ndim == 2:
        margin = margin[:, perm]
    elif perm[0] == 1:  # two classes listed the other way round: the margin is of classes[0]
        margin = -margin
    return Predictions(name, margin=margin, labels=labels)
