"""The boosting libraries' own importances: XGBoost, LightGBM and CatBoost gain, cover and split count.

A model read from a library's file (:class:`~explainers.trees.NativeTreeModel`) keeps
no impurity decrease, so :func:`~.mdi.mdi` does not apply to it; the library's
gain (the training-loss reduction of each split, summed per feature) is MDI's
counterpart. The file's reader totals these numbers per input column as it parses
the trees (``model.importances``); this module wraps them in an
:class:`~.result.ImportanceResult` named the way the library names them.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import InvalidFeatureError, InvalidModelError, param_error
from .result import ImportanceResult, library_label, make_result

__all__ = ["library_importance", "library_importance_kinds", "LIBRARY_KINDS"]

#: the kinds, in the order pages show them
LIBRARY_KINDS = ("gain", "cover", "split count")

_ALIASES = {
    "gain": "gain", "total_gain": "gain",
    "cover": "cover", "total_cover": "cover",
    "split count": "split count", "split_count": "split count", "weight": "split count", "split": "split count",
}

# what each library calls the same numbers, for the captions
_OWN_NAMES = {
    ("xgboost", "gain"): 'get_score(importance_type="total_gain")',
    ("xgboost", "cover"): 'get_score(importance_type="total_cover")',
    ("xgboost", "split count"): 'get_score(importance_type="weight")',
    ("lightgbm", "gain"): 'feature_importance("gain")',
    ("lightgbm", "cover"): "the summed internal_count of each feature's splits",
    ("lightgbm", "split count"): 'feature_importance("split")',
    ("catboost", "cover"): "the summed leaf weights below each feature's splits",
    ("catboost", "split count"): "the number of tree levels that split on each feature",
}

_DESCRIPTIONS = {
    "gain": ("{lib} gain: the total reduction of the training loss by the splits on each feature, "
             "summed over the trees (the library's counterpart of MDI; measured on training data)."),
    "cover": ("{lib} cover: the total training weight of the rows reaching the splits on each feature "
              "(the hessian: the number of rows for squared error), summed over the trees."),
    "split count": "{lib} split count: how many splits in the trees use each feature.",
}


def _library(model) -> str | None:
    from ..trees import NativeTreeModel

    return model.library if isinstance(model, NativeTreeModel) else None


def _native(model):
    """A library object (an XGBClassifier from a notebook...) as its NativeTreeModel."""
    from ..trees.library import is_library_model, native_form

    return native_form(model) if is_library_model(model) else model


def library_importance_kinds(model) -> tuple[str, ...]:
    """The kinds of :func:`library_importance` that ``model`` offers, in :data:`LIBRARY_KINDS` order.

    Empty for a model not read from a boosting library's file; CatBoost files give
    no gain, and no cover when they hold no leaf weights.
    """
    model = _native(model)
    if _library(model) is None:
        return ()
    have = getattr(model, "importances", None) or {}
    return tuple(k for k in LIBRARY_KINDS if k in have)


def library_importance(model, kind: str = "gain", *,
                       feature_names: Sequence[str] | None = None) -> ImportanceResult:
    """A boosting library's own importance of each feature, read from its model file.

    Parameters
    ----------
    model : NativeTreeModel
        A model loaded from an XGBoost (.json, .ubj), LightGBM (.txt) or CatBoost
        (.json, .cbm) file by :func:`explainers.load_model`.
    kind : {"gain", "cover", "split count"}, default="gain"
        ``"gain"``: the loss reduction of the splits on each feature, summed
        (XGBoost ``total_gain``, LightGBM ``"gain"``); ``"cover"``: the training
        weight (hessian) of the rows reaching those splits, summed (XGBoost
        ``total_cover``); ``"split count"``: the number of splits (XGBoost
        ``"weight"``, LightGBM ``"split"``). The libraries' names are accepted too.
        CatBoost files give ``"split count"`` and ``"cover"`` only.
    feature_names : sequence of str, default=None
        Names of the model's input columns, in order. Default: the names in the
        file, else ``x0, x1, ...``.

    Returns
    -------
    ImportanceResult
        ``method`` is ``"<library>_<kind>"`` (``"xgboost_gain"``,
        ``"lightgbm_split_count"``...), ``label`` the library's name for it
        (``"XGBoost gain"``). ``importances`` are the library's totals, **not
        normalised** (``params["normalized"]`` is False): they equal the library's
        own numbers, and :func:`compare_importances` turns them into shares. A
        feature no split uses has 0. The file keeps totals only, so ``raw`` has
        one column (the totals) and ``std`` is 0.

    Raises
    ------
    InvalidModelError
        If the model was not read from a boosting library's file, or its file
        does not give this kind.
    InvalidParameterError
        If ``kind`` is not one of the kinds above.
    InvalidFeatureError
        If ``feature_names`` does not name every input column.

    See Also
    --------
    mdi : the same idea for scikit-learn's trees (impurity decrease).
    permutation_importance : measured on held-out rows; trust it over training-data importances.

    Examples
    --------
    >>> from explainers import load_model                      # doctest: +SKIP
    >>> model = load_model("model.json")                        # doctest: +SKIP
    >>> library_importance(model, "gain").label                 # doctest: +SKIP
    'XGBoost gain'
    """
    func = "library_importance"
    model = _native(model)
    canonical = _ALIASES.get(kind) if isinstance(kind, str) else None
    if canonical is None:
        raise param_error("kind", func, 'one of "gain", "cover", "split count"', kind)
    lib = _library(model)
    if lib is None:
        raise InvalidModelError(
            f"{func} reads the importances stored in an XGBoost, LightGBM or CatBoost model file; "
            f"a {type(model).__name__} is not one. Load the file with load_model, or use "
            "permutation_importance (any model) or mdi (scikit-learn trees) instead."
        )
    kinds = library_importance_kinds(model)
    if canonical not in kinds:
        raise InvalidModelError(
            f"This {library_label(lib)} model file gives no {canonical} (it gives "
            f"{', '.join(kinds) or 'no importances'}); choose kind={kinds[0]!r}." if kinds else
            f"This {library_label(lib)} model file gives no importances."
        )
    values = np.asarray(model.importances[canonical], dtype=float)
    p = int(model.n_features_in_)
    if values.shape != (p,):
        raise InvalidModelError(
            f"The {library_label(lib)} model's {canonical} importances have shape {values.shape}; "
            f"its trees read {p} columns. The file is damaged."
        )
    names = _names(model, feature_names, p)
    params = {"library": lib, "kind": canonical, "normalized": False,
              "library_name": _OWN_NAMES.get((lib, canonical), canonical)}
    method = f"{lib}_{canonical.replace(' ', '_')}"
    desc = _DESCRIPTIONS[canonical].format(lib=library_label(lib))
    return make_result(names, values[:, None], method, params, desc)


def _names(model, feature_names, p: int) -> list[str]:
    if feature_names is not None:
        names = [str(f) for f in feature_names]
    elif getattr(model, "feature_names_in_", None) is not None:
        names = [str(f) for f in model.feature_names_in_]
    else:
        names = [f"x{i}" for i in range(p)]
    if len(names) != p:
        raise InvalidFeatureError(
            f"{len(names)} feature names were given but the model's trees read {p} columns."
        )
    return names
