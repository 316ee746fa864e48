"""What a model is, found out once: its task, classes, input columns and the engines that apply.

Every method and page asks the same questions of a model: is it a regression or
a classifier, which classes, which input columns, do its trees flatten (a
pipeline: does its preprocessing fold into them), are its coefficients linear,
is its own sum a margin (log-odds)? :func:`describe` answers them together the
first time a model is seen and keeps the answer with the model, so the method
choice and the pages read one description instead of probing the model again.

The description is kept weakly, per model object, together with the fitted
attributes it was read from (held, so their identity cannot be reused): a model
fitted again is described anew.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np

from .errors import ExplainerError
from .linear import is_linear_model
from .model import detect_task

__all__ = ["ModelDescription", "describe"]


@dataclass(frozen=True)
class ModelDescription:
    """The facts about a fitted model that choosing a method needs.

    Attributes
    ----------
    name : str
        The model's class name (the final step's, for a Pipeline).
    task : {"regression", "binary", "multiclass"} or None
        None when the model cannot be explained (``refusal`` says why).
    refusal : str or None
        Why the task could not be read (a clustering model, a multi-output classifier...).
    classes : tuple or None
        Class labels in the model's order (None for a regression).
    input_columns : tuple of str or None
        The columns the model was fitted on, where it recorded them.
    tree : bool
        Its trees flatten into one ensemble (a Pipeline: its preprocessing folds into them).
    tree_transform : str or None
        The flattened ensemble's link ("identity", "sigmoid", "softmax"); None when not a tree
        model, or when its trees are refused on reading (TreeShap then says why).
    fold_refusal : str or None
        For a Pipeline ending in a tree model that does not fold: why.
    linear : bool
        Its coefficients on the input columns are read in closed form (a linear model,
        optionally after affine scalers).
    decision_function : bool
        The model has a decision function (a margin of its own).
    """

    name: str
    task: str | None
    refusal: str | None
    classes: tuple | None
    input_columns: tuple | None
    tree: bool
    tree_transform: str | None
    fold_refusal: str | None
    linear: bool
    decision_function: bool

    @property
    def engine(self) -> str | None:
        """``"tree"``, ``"linear"`` or None: the exact engine that applies."""
        return "tree" if self.tree else "linear" if self.linear else None

    @property
    def margin_is_native(self) -> bool:
        """Whether the model's own sum is its log-odds: boosting trees, linear models, a decision function."""
        if self.tree:
            return self.tree_transform in ("sigmoid", "softmax")
        return self.linear or self.decision_function

    @property
    def fold_note(self) -> str:
        """Why a pipeline ending in trees is not explained by them, as a lead-in (``""`` if not)."""
        return f"{self.fold_refusal.rstrip('.')}; " if self.fold_refusal else ""


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _fitted_state(model) -> tuple:
    """The fitted attributes (names ending in ``_``) of the model and its pipeline steps: fitting
    again replaces them, so they tell a refit model from the one described."""
    parts = []
    for obj in [model] + [step for _, step in getattr(model, "steps", None) or []]:
        try:
            attrs = vars(obj)
        except TypeError:  # no __dict__: its identity is all there is
            parts.append(obj)
            continue
        parts.append(obj)
        parts.extend(value for key, value in attrs.items() if key.endswith("_") and not key.startswith("__"))
    return tuple(parts)


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def describe(model) -> ModelDescription:
    """The :class:`ModelDescription` of a fitted model, read once and kept with it.

    Pass the model in the form it is explained in (a library object's native
    form, as :class:`~explainers.ModelAdapter` holds it). Refitting the model
    gives a new description; a model that cannot be held weakly is described
    each time.
    """
    state = _fitted_state(model)
    try:
        with _LOCK:
            hit = _CACHE.get(model)
    except TypeError:  # not weak-referenceable or not hashable: no caching
        return _describe(model)
    if hit is not None and _same(hit[0], state):
        return hit[1]
    desc = _describe(model)
    try:
        with _LOCK:
            _CACHE[model] = (state, desc)
    except TypeError:
        pass
    return desc


def _describe(model) -> ModelDescription:
    """Read the description (no cache)."""
    steps = getattr(model, "steps", None)
    final = steps[-1][1] if steps else model
    try:
        task, refusal = detect_task(model), None
    except ExplainerError as exc:
        task, refusal = None, str(exc)
    classes = getattr(model, "classes_", None)
    names = getattr(model, "feature_names_in_", None)
    tree, transform, fold_why = _tree_engine(model, final)
    return ModelDescription(
        name=type(final).__name__,
        task=task,
        refusal=refusal,
        classes=None if task in (None, "regression") or classes is None else tuple(np.asarray(classes).tolist()),
        input_columns=None if names is None else tuple(str(c) for c in names),
        tree=tree,
        tree_transform=transform,
        fold_refusal=fold_why,
        linear=not tree and is_linear_model(model),
        decision_function=hasattr(model, "decision_function"),
    )


def _tree_engine(model, final) -> tuple[bool, str | None, str | None]:
    """(flattens into trees, the ensemble's link, why a tree pipeline does not fold)."""
    from .trees import flatten_model, is_tree_model

    if isinstance(getattr(model, "classes_", None), list):  # multi-output classification: not explained
        return False, None, None
    if is_tree_model(model):
        try:
            return True, flatten_model(model).transform, None
        except Exception:  # noqa: BLE001 - the reader refuses it: TreeShap says why when asked
            return True, None, None
    if not getattr(model, "steps", None) or not is_tree_model(final):
        return False, None, None
    from .trees.pipeline import fold_refusal

    try:
        return False, None, fold_refusal(model)
    except Exception:  # noqa: BLE001 - no reason to give
        return False, None, None
