"""XGBoost, LightGBM and CatBoost model objects from the user's own process, as Glassbox explains them.

A fitted object (``XGBClassifier``, ``lightgbm.Booster``, ``CatBoostRegressor``...),
alone or at the end of a scikit-learn Pipeline or inside a TransformedTargetRegressor,
is converted through its library's own serialisation (XGBoost JSON, LightGBM text,
CatBoost JSON), which the file readers parse and validate as they do an upload, into a
:class:`~.native.NativeTreeModel`. What the wrapper holds outside its booster is kept:
XGBoost's ``missing`` value, the classes, the feature names; the best iteration is in
what the libraries save (XGBoost's attributes, LightGBM's ``model_to_string``).

:func:`native_form` is called where a model enters (``ModelAdapter``, ``TreeShap``,
``flatten_model``), so every explainer takes these objects. Conversions are reused
while the fitted booster is the same (XGBoost and LightGBM make a new booster at every
fit; a CatBoost model is recognised by the hash of its saved JSON).
"""
from __future__ import annotations

import copy
import hashlib
import threading
import weakref

from ..errors import InvalidModelError

__all__ = ["is_library_model", "has_library_model", "native_form", "library_of"]

LIBRARIES = ("xgboost", "lightgbm", "catboost")

_MEMO: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # booster -> (fingerprint, native)
_WRAPPED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # pipeline -> (native step, copy)
_BY_HASH: dict[str, object] = {}  # CatBoost: sha256 of its JSON -> native (bounded)
_BY_HASH_MAX = 8
_LOCK = threading.Lock()


def library_of(model) -> str | None:
    """``"xgboost"``, ``"lightgbm"`` or ``"catboost"`` for one of their model objects, else None."""
    module = type(model).__module__.split(".")[0]
    if module not in LIBRARIES:
        return None
    return module if hasattr(model, "predict") else None


def is_library_model(model) -> bool:
    """True for a boosting library's model object (wrapper or booster)."""
    return library_of(model) is not None


def has_library_model(model) -> bool:
    """True for a library model object, or a Pipeline / TransformedTargetRegressor holding one."""
    return _inner(model) is not None


def _inner(model):
    """The library object a model is or ends in (a Pipeline's last step, a
    TransformedTargetRegressor's fitted regressor, nested), else None."""
    for _ in range(16):
        if is_library_model(model):
            return model
        steps = getattr(model, "steps", None)
        if isinstance(steps, list) and steps and isinstance(steps[-1], tuple) and len(steps[-1]) == 2:
            model = steps[-1][1]
        elif hasattr(model, "regressor_") and type(model).__name__ == "TransformedTargetRegressor":
            model = model.regressor_
        else:
            return None
    return None


def native_form(model):
    """The model as Glassbox explains it: a library object becomes a NativeTreeModel read
    from its own serialisation; a Pipeline or TransformedTargetRegressor ending in one
    becomes a shallow copy with that step replaced (the fitted preprocessing is shared;
    the same copy while the library object converts to the same model); any other model
    comes back unchanged."""
    if _inner(model) is None:
        return model
    if is_library_model(model):
        return _convert(model)
    steps = getattr(model, "steps", None)
    inner = native_form(steps[-1][1] if isinstance(steps, list) else model.regressor_)
    with _LOCK:
        try:
            hit = _WRAPPED.get(model)
        except TypeError:
            hit = None
    if hit is not None and hit[0] is inner:
        return hit[1]
    out = copy.copy(model)
    if isinstance(steps, list):
        out.steps = steps[:-1] + [(steps[-1][0], inner)]
    else:
        out.regressor_ = inner
    with _LOCK:
        try:
            _WRAPPED[model] = (inner, out)
        except TypeError:
            pass
    return out


def _convert(model):
    library = library_of(model)
    if library == "catboost":
        return _catboost(model)
    booster = _booster(model, library)
    classes = tuple(map(str, model.classes_)) if _has_classes(model) else None
    fingerprint = (library, _rounds(booster, library), str(getattr(model, "missing", None)), classes)
    with _LOCK:
        try:
            hit = _MEMO.get(booster)
        except TypeError:
            hit = None
        if hit is not None and hit[0] == fingerprint:
            return hit[1]
    native = _xgboost(model) if library == "xgboost" else _lightgbm(model)
    with _LOCK:
        try:
            _MEMO[booster] = (fingerprint, native)  # never the wrapper: it holds the key
        except TypeError:
            pass
    return native


def _has_classes(model) -> bool:
    """Whether the object lists class labels (a fitted classifier; CatBoost's regressors
    have an empty ``classes_``)."""
    try:
        classes = getattr(model, "classes_", None)
    except Exception:  # noqa: BLE001 - an unfitted wrapper raises on classes_
        return False
    return classes is not None and len(classes) > 0


def _booster(model, library: str):
    try:
        if library == "xgboost":
            return model.get_booster() if hasattr(model, "get_booster") else model
        return model if hasattr(model, "model_to_string") else model.booster_
    except Exception as exc:  # noqa: BLE001 - the libraries raise their own "not fitted" errors
        raise InvalidModelError(f"{type(model).__name__} is not fitted ({type(exc).__name__}: {exc}); "
                                "fit it before explaining it.") from None


def _rounds(booster, library: str) -> int:
    try:
        return int(booster.num_boosted_rounds() if library == "xgboost" else booster.current_iteration())
    except Exception:  # noqa: BLE001
        return -1


def _xgboost(model):
    import math

    import numpy as np

    from .xgboost import xgboost_from_object

    native = xgboost_from_object(model)
    missing = getattr(model, "missing", None) if hasattr(model, "get_booster") else None
    if missing is not None:
        try:
            missing = float(missing)
        except (TypeError, ValueError):
            raise InvalidModelError(f"The XGBoost model's missing={missing!r} is not a number.") from None
        if not math.isnan(missing):
            _with_missing(native, missing)
    names = getattr(model, "feature_names_in_", None)
    if names is not None and getattr(native, "feature_names_in_", None) is None:
        if len(names) == native.n_features_in_:
            native.feature_names_in_ = np.asarray([str(n) for n in names], dtype=object)
    return native


def _with_missing(native, missing: float):
    """The model reads inputs equal to ``missing`` as missing values (XGBoost's ``missing=``)."""
    native.ensemble = native.ensemble.with_missing_value(missing)
    native.notes = tuple(native.notes) + (
        f"Values equal to missing={missing:g} are missing values, as XGBoost reads them.",)
    return native


def _lightgbm(model):
    from .lightgbm import lightgbm_from_object

    return lightgbm_from_object(model)


def _catboost(model):
    from .catboost import catboost_from_json, catboost_json

    text = catboost_json(model)
    classes = getattr(model, "classes_", None) if _has_classes(model) else None
    key = hashlib.sha256(text).hexdigest() + "|" + ",".join(map(str, classes if classes is not None else ()))
    with _LOCK:
        hit = _BY_HASH.get(key)
    if hit is not None:
        return hit
    native = catboost_from_json(model, text, name=type(model).__name__)
    with _LOCK:
        while len(_BY_HASH) >= _BY_HASH_MAX:
            _BY_HASH.pop(next(iter(_BY_HASH)))
        _BY_HASH[key] = native
    return native


# ------------------------------------------------------- saving for a server
#: the suffix each library's own file gets (the loaders read the format by it)
SUFFIXES = {"xgboost": ".json", "lightgbm": ".txt", "catboost": ".json"}


def save_native(model, path_stem) -> tuple[str, dict]:
    """Save a library object in its library's own file format (never a pickle); return
    (the file's path, the settings the file does not hold: ``missing`` for XGBoost, the
    wrapper's ``classes``), for :func:`apply_settings` after the file is read back."""
    import os

    library = library_of(model)
    if library is None:
        raise InvalidModelError(f"{type(model).__name__} is not an XGBoost, LightGBM or CatBoost model.")
    path = os.fspath(path_stem) + SUFFIXES[library]
    if library == "xgboost":  # the wrapper's own save_model marks its file (best_iteration applies)
        model.save_model(path)
    elif library == "lightgbm":
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(_booster(model, library).model_to_string())
    else:
        from .catboost import catboost_json

        with open(path, "wb") as fh:
            fh.write(catboost_json(model))
    return path, settings_of(model)


def settings_of(model) -> dict:
    """What a library object holds outside its saved file, as plain JSON values."""
    import math

    out = {}
    missing = getattr(model, "missing", None) if library_of(model) == "xgboost" else None
    if missing is not None and not (isinstance(missing, float) and math.isnan(missing)):
        out["missing"] = float(missing)
    if _has_classes(model):
        import numpy as np

        classes = np.asarray(model.classes_)
        if classes.dtype.kind in "iub":
            out["classes"] = [int(c) for c in classes]
        elif classes.dtype.kind == "f":
            out["classes"] = [float(c) for c in classes]
        else:
            out["classes"] = [str(c) for c in classes]
    return out


def apply_settings(native, settings: dict | None):
    """A NativeTreeModel read from a file saved by :func:`save_native`, given back the
    settings its object held (checked: a finite ``missing``, one class per output)."""
    import math

    import numpy as np

    if not settings:
        return native
    if not isinstance(settings, dict) or set(settings) - {"missing", "classes"}:
        raise InvalidModelError("The model's settings must be a JSON object with 'missing' and/or 'classes'.")
    missing = settings.get("missing")
    if missing is not None:
        if isinstance(missing, bool) or not isinstance(missing, (int, float)) or not math.isfinite(missing):
            raise InvalidModelError(f"The model's missing value must be a finite number, got {missing!r}.")
        _with_missing(native, float(missing))
    classes = settings.get("classes")
    if classes is not None:
        ok = isinstance(classes, list) and all(isinstance(c, (str, int, float)) and not isinstance(c, bool)
                                               for c in classes)
        have = getattr(native, "classes_", None)
        if not ok or have is None or len(classes) != len(have) or len(set(map(str, classes))) != len(classes):
            raise InvalidModelError(f"The model's classes must be a list of {0 if have is None else len(have)} "
                                    "distinct labels (one per output of its trees).")
        native.classes_ = np.asarray(classes)
    return native
