"""Tree models as one flattened ensemble, whatever library fitted them.

- :mod:`.ensemble`: :class:`TreeEnsemble`, the flat arrays every tree engine reads
  (exact tree PD/ICE, Tree SHAP, the coalition-game tree walks, OOB importance);
- one reader per model family, each a function ``model -> TreeEnsemble``
  registered in :data:`READERS`: :mod:`.sklearn` for scikit-learn's trees, and
  :mod:`.native` for the models read from XGBoost, LightGBM and CatBoost files
  (their file parsers :mod:`.xgboost`, :mod:`.lightgbm`, :mod:`.catboost` build
  the ensemble when the file is loaded);
- :mod:`.walks`: the compiled group walk of blocks of rows down the trees, shared
  by partial dependence and the SHAP coalition game.

:func:`flatten_model` picks the reader and caches its result per fitted model.
"""
from __future__ import annotations

import weakref

from ..errors import InvalidModelError
from .ensemble import TRANSFORMS, TreeEnsemble
from .native import NativeTreeModel
from .sklearn import fitted_trees, flatten_sklearn, is_sklearn_tree_model, tree_families

__all__ = ["TreeEnsemble", "TRANSFORMS", "flatten_model", "is_tree_model", "tree_families", "READERS",
           "NativeTreeModel"]


def _is_native(model) -> bool:
    return isinstance(model, NativeTreeModel)


def _native_ensemble(model) -> TreeEnsemble:
    return model.ensemble


def _is_foldable_pipeline(model) -> bool:
    from .pipeline import is_foldable_pipeline

    return is_foldable_pipeline(model)


def _flatten_pipeline(model) -> TreeEnsemble:
    from .pipeline import flatten_pipeline

    return flatten_pipeline(model)


def _is_library_tree_model(model) -> bool:
    """An XGBoost / LightGBM / CatBoost object, or a pipeline ending in one that folds."""
    from .library import has_library_model, native_form

    if not has_library_model(model):
        return False
    try:
        native = native_form(model)
    except Exception:  # noqa: BLE001 - not read (a gblinear booster...): not a tree model
        return False
    return any(accepts(native) for accepts, _ in READERS[:3])


def _flatten_library(model) -> TreeEnsemble:
    from .library import native_form

    return flatten_model(native_form(model))


#: (test, reader) pairs, tried in order: the first whose test accepts the model flattens it
READERS = [(is_sklearn_tree_model, flatten_sklearn), (_is_native, _native_ensemble),
           (_is_foldable_pipeline, _flatten_pipeline), (_is_library_tree_model, _flatten_library)]


def is_tree_model(model) -> bool:
    """True for a tree model that :func:`flatten_model` takes: a bare tree model, a
    model read from a boosting library's file, or a Pipeline whose column-wise
    preprocessing folds into its final tree model (:mod:`.pipeline`)."""
    return any(accepts(model) for accepts, _ in READERS)

_FLAT_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _flatten_model(model) -> TreeEnsemble:
    for accepts, reader in READERS:
        if accepts(model):
            return reader(model)
    raise InvalidModelError(
        f"{type(model).__name__} is not a tree model Glassbox reads (scikit-learn's DecisionTree, "
        "RandomForest, ExtraTrees, GradientBoosting, HistGradientBoosting, or a model loaded "
        "from an XGBoost, LightGBM or CatBoost file); use a model-agnostic method such as method='brute'."
    )


def flatten_model(model) -> TreeEnsemble:
    """Flatten a fitted tree model, reusing the result for the same fitted model.

    Explaining one model again and again (the dashboard does, row after row)
    then pays the per-tree conversion once. The cache holds the model weakly
    and is keyed by the identity of its fitted trees, so a refit model is
    flattened anew. See :func:`explainers.trees.sklearn.flatten_sklearn` for
    what each family's reader accepts.
    """
    if isinstance(model, NativeTreeModel):
        return model.ensemble
    trees = fitted_trees(model)
    try:
        hit = _FLAT_CACHE.get(model)
    except TypeError:  # not weak-referenceable or not hashable: no caching
        return _flatten_model(model)
    # compared by identity, with the old holder kept alive in the cache, so a
    # refit can never reuse its address and pass for the same trees
    if hit is not None and trees is not None and hit[0] is trees:
        return hit[1]
    ens = _flatten_model(model)
    try:
        _FLAT_CACHE[model] = (trees, ens)
    except TypeError:
        pass
    return ens
