"""The model's predictions of every row, computed once per model and data and shared by the
pages (Quality, Segments, the row pickers, What-if, the Model page's score): at a million
rows one pass of a 200-tree model takes seconds, and each page ran its own."""
from __future__ import annotations

import numpy as np

from .cache import result_cache
from .context import ModelContext


def _frozen(a) -> np.ndarray:
    a = np.asarray(a)
    a.setflags(write=False)  # shared by every session: never changed in place
    return a


def all_predictions(ctx: ModelContext, output: str = "auto", class_index: int | None = None) -> np.ndarray:
    """``ctx.adapter.with_output(output, class_index).predict(ctx.X)``, cached (read-only)."""
    key = ("all_predictions", ctx.model_key, ctx.data_key, output, class_index)
    return result_cache().get_or_compute(
        key, lambda: _frozen(ctx.adapter.with_output(output, class_index).predict(ctx.X)))


def all_labels(ctx: ModelContext) -> np.ndarray:
    """The model's own ``predict`` of every row (class labels of a classifier), cached (read-only).

    For a classifier whose ``predict`` is by definition the class of largest probability
    (:func:`_labels_are_argmax`), taken from the shared probabilities: the same labels,
    without a second pass of the model over every row."""
    def compute() -> np.ndarray:
        if _labels_are_argmax(ctx.model):
            proba = np.asarray(all_predictions(ctx, "proba", None)).reshape(len(ctx.X), -1)
            return _frozen(np.asarray(ctx.model.classes_)[np.argmax(proba, axis=1)])
        return _frozen(ctx.adapter.predict_labels(ctx.X))

    return result_cache().get_or_compute(("all_labels", ctx.model_key, ctx.data_key), compute)


def _labels_are_argmax(model) -> bool:
    """Whether ``model.predict`` is ``classes_[argmax(predict_proba)]`` by its own code: a tree
    model read from a library file, scikit-learn's forests, trees and histogram boosting (or a
    Pipeline ending in one, whose steps do not change the rows)."""
    from explainers.trees.native import NativeTreeClassifier

    final = model.steps[-1][1] if hasattr(model, "steps") else model
    if type(final) is NativeTreeClassifier:  # scikit-learn is not imported for a library's file
        return hasattr(model, "classes_")
    if not type(final).__module__.startswith("sklearn."):
        return False
    from sklearn.ensemble import ExtraTreesClassifier, HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier, ExtraTreeClassifier

    exact = (RandomForestClassifier, ExtraTreesClassifier, DecisionTreeClassifier, ExtraTreeClassifier,
             HistGradientBoostingClassifier)
    return type(final) in exact and hasattr(model, "classes_")


def prediction_source(ctx: ModelContext):
    """The ``predictions`` callable of :func:`explainers.segments.row_errors`: the cached
    predictions of every row, as the segments' own adapter (output "auto", no class) makes them."""
    def predictions(what: str) -> np.ndarray:
        if what == "labels":
            return all_labels(ctx)
        return all_predictions(ctx, "proba" if what == "proba" else "auto", None)

    return predictions


def data_score(ctx: ModelContext, y, output: int | None = None, transform: str | None = None) -> dict | None:
    """R² or accuracy of the model on its data, from the shared predictions (None when the
    target is unusable). ``y``: the target on the model's scale; ``output``: for a regressor
    of several outputs, the one the target holds (None: no score); ``transform``: the target
    transform ``y`` was put on the model's scale with (a cache key only)."""
    key = ("data_score", ctx.model_key, ctx.data_key, output, transform)
    return result_cache().get_or_compute(key, lambda: _score(ctx, y, output))


def _score(ctx: ModelContext, y, output: int | None) -> dict | None:
    from sklearn.metrics import r2_score

    from explainers.quality import accuracy_as_text

    keep = y.notna().to_numpy()
    if keep.sum() < 2:
        return None
    rows = {"n_rows": int(keep.sum()), "n_left_out": int((~keep).sum())}
    adapter = ctx.adapter
    multi = adapter.task == "regression" and getattr(adapter, "n_targets", 1) > 1
    if multi and output is None:
        return None  # one target column cannot score a model of several targets (said in the notices)
    y = y[keep]
    if adapter.task == "regression":
        pred = all_predictions(ctx, adapter.output, output if multi else adapter.class_index)[keep]
        return {"name": "R²", "value": float(r2_score(y.astype(float), pred)), **rows}
    pred = all_labels(ctx)[keep]
    return {"name": "accuracy", "value": accuracy_as_text(y, pred), **rows}
