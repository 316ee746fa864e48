"""Loading fitted models safely.

A model file is untrusted input. ``.skops`` files are read by skops, which
refuses to build any type that is not on its own safe list or on our reviewed
allow-list below, after :mod:`.skops_archive` has checked the archive's sizes.
Pickle and joblib files run arbitrary code when loaded, so they are refused
unless the caller (the operator, never the uploader) says the file is trusted.
Every loaded model's trees are validated (:mod:`explainers.trees.validate`)
before anything walks them.
"""
from __future__ import annotations

import io
import pickletools
from pathlib import Path


from ..errors import InvalidModelError, UnsafeModelError
from ._files import _read_input
from .skops_archive import check_skops_archive

#: Types that skops does not trust by default but that we reviewed: plain
#: containers of numbers that scikit-learn's own trees and pipelines need.
SKOPS_ALLOWED_TYPES = frozenset(
    {
        "sklearn.tree._tree.Tree",  # every DecisionTree, forest and GradientBoosting
        "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
        "numpy.dtype",  # SimpleImputer and other transformers that keep a dtype
    }
)
#: the boosting libraries' own files, read as plain data (explainers.trees.xgboost / lightgbm / catboost)
NATIVE_SUFFIXES = (".json", ".ubj", ".txt", ".cbm")
MODEL_SUFFIXES = (".skops", ".joblib", ".pkl", ".pickle") + NATIVE_SUFFIXES
_PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")
TRUST_HINT = (
    "Save the model with skops instead (skops.io.dump(model, 'model.skops')), or, if you "
    "trust this file, ask the operator to start the dashboard with --trust-pickles "
    "(or GLASSBOX_TRUST_PICKLES=1)."
)


def _sniff_native(data: bytes) -> str | None:
    """The library of a boosting model file, from its content; None if none."""
    head = data[:4096].lstrip()
    if head.startswith(b"{"):
        # JSON text (XGBoost or CatBoost), or XGBoost's UBJSON (binary after '{')
        if b'"learner"' in data[:1 << 20] or head[1:2] in (b"L", b"i", b"U", b"I", b"l", b"$", b"#"):
            return "xgboost"
        if b'"oblivious_trees"' in data or b'"features_info"' in data[:1 << 20]:
            return "catboost"
        return None
    if head.startswith(b"tree\n") or head.startswith(b"tree\r\n") or head.startswith(b"version=v"):
        return "lightgbm"
    if data[:4] == b"CBM1":
        return "catboost"
    return None


def _model_format(data: bytes, name: str) -> str:
    for suffix in MODEL_SUFFIXES:
        if name.endswith(suffix) and suffix not in NATIVE_SUFFIXES:
            return "skops" if suffix == ".skops" else "pickle"
    if name and not name.endswith(NATIVE_SUFFIXES):
        raise InvalidModelError(
            f"{Path(name).name!r} is not a model file this tool reads: use a .skops file, an "
            "XGBoost (.json, .ubj), LightGBM (.txt) or CatBoost (.json, .cbm) model file "
            "(or .joblib / .pkl when the operator allows pickles)."
        )
    native = _sniff_native(data)
    if native is not None:
        return native
    if name:
        raise InvalidModelError(
            f"{Path(name).name!r} is not an XGBoost, LightGBM or CatBoost model file. Save the model "
            "with the library's own save_model ('model.json', 'model.ubj', 'model.txt'), or with skops."
        )
    # bytes without a name: sniff the content
    if data[:2] == b"PK":
        return "skops"
    if data[:1] == b"\x80" or data[:2] in (b"x\x9c", b"x\x01", b"x\xda"):
        return "pickle"
    raise InvalidModelError(
        "Could not tell the model format: pass filename='model.skops' (or .json / .ubj / .txt / "
        ".cbm for boosting libraries, .joblib / .pkl for pickles)."
    )


def _load_native(data: bytes, library: str, name: str):
    """Parse a boosting library's own model file into a NativeTreeModel (no code runs)."""
    from .. import limits

    if len(data) > limits.limit("model_bytes"):
        raise InvalidModelError(f"The model file is larger than {limits.fmt('model_bytes', limits.limit('model_bytes'))}.")
    if library == "xgboost":
        from ..trees.xgboost import read_xgboost as read
    elif library == "lightgbm":
        from ..trees.lightgbm import read_lightgbm as read
    else:
        from ..trees.catboost import read_catboost as read
    try:
        return read(data, name=name)
    except (InvalidModelError, UnsafeModelError):
        raise
    except (ValueError, KeyError, TypeError, IndexError, OverflowError, UnicodeDecodeError, RecursionError,
            MemoryError) as exc:
        raise InvalidModelError(
            f"Could not read the {library} model file ({type(exc).__name__}: {exc}). It may be damaged "
            "or written by an unsupported version; save it again with the library's save_model."
        ) from None


def from_library_object(model):
    """A pickled XGBoost / LightGBM / CatBoost model (wrapper or booster) as a NativeTreeModel,
    or the model unchanged when it is none of those."""
    module = type(model).__module__.split(".")[0]
    if module == "xgboost":
        from ..trees.xgboost import xgboost_from_object as convert
    elif module == "lightgbm":
        from ..trees.lightgbm import lightgbm_from_object as convert
    elif module == "catboost":
        from ..trees.catboost import catboost_from_object as convert
    else:
        return model
    return convert(model)


def _pickle_globals(data: bytes) -> list[str]:
    """List the module.name globals a pickle would import, without loading it."""
    found = []
    try:
        for op, arg, _ in pickletools.genops(io.BytesIO(data)):
            if op.name in ("GLOBAL", "INST") and isinstance(arg, str):
                found.append(arg.replace(" ", "."))
    except Exception:
        pass
    return found


def load_model(path_or_bytes, trusted: bool = False, filename: str | None = None):
    """Load a fitted model from a file path or bytes, safely by default.

    Parameters
    ----------
    path_or_bytes : str, Path, bytes or file object
        The model file.
    trusted : bool, default=False
        Allow pickle / joblib files. Loading those runs whatever code the file
        contains, so only the operator may set this, never the uploader.
    filename : str, default=None
        Gives the format (by its suffix) when bytes are passed.

    Returns
    -------
    model : object
        The fitted estimator (it has a ``predict`` method). An XGBoost, LightGBM
        or CatBoost model file (or a pickled model of those libraries) comes back
        as a :class:`~explainers.trees.native.NativeTreeModel` that predicts from
        its parsed trees.

    Raises
    ------
    UnsafeModelError
        A pickle while not trusted, or a .skops file with types outside the
        reviewed allow-list (the message names them).
    InvalidModelError
        An unreadable, empty or non-model file; a .skops archive over the
        limits of :mod:`explainers.limits` (checked by
        :func:`check_skops_archive` before skops reads it); or a model whose
        trees fail :func:`explainers.trees.validate.validate_model` (children,
        features or depth that would crash or hang scikit-learn's predict).
    """
    data, name = _read_input(path_or_bytes, filename, "model")
    if not data:
        raise InvalidModelError("The model file is empty (0 bytes). Upload the saved model file.")
    fmt = _model_format(data, name)
    if fmt in ("xgboost", "lightgbm", "catboost"):
        # the trees were validated while the ensemble was assembled (explainers.trees.validate)
        return _load_native(data, fmt, name)
    if fmt == "pickle":
        if not trusted:
            raise UnsafeModelError(
                "Pickle and joblib model files are refused: loading one runs any code it "
                f"contains. {TRUST_HINT}"
            )
        import joblib

        try:
            model = joblib.load(io.BytesIO(data))
        except Exception as exc:
            raise InvalidModelError(
                f"Could not read the pickle/joblib model file ({type(exc).__name__}: {exc}). "
                "Check that it was saved with joblib.dump or pickle.dump by compatible "
                "library versions."
            ) from None
    else:
        import skops.io as sio

        check_skops_archive(data)
        try:
            untrusted = sio.get_untrusted_types(data=data)
        except Exception as exc:
            raise InvalidModelError(
                f"The file is not a readable .skops model ({type(exc).__name__}: {exc}). "
                "Save the model with skops.io.dump(model, 'model.skops')."
            ) from None
        refused = sorted(set(untrusted) - SKOPS_ALLOWED_TYPES)
        if refused:
            raise UnsafeModelError(
                "The .skops file contains types that are not on the reviewed allow-list: "
                f"{', '.join(refused)}. Loading them could run code, so the file is refused. "
                "Use a scikit-learn model built from standard estimators, or ask the "
                "operator to review these types."
            )
        try:
            model = sio.loads(data, trusted=list(untrusted))
        except Exception as exc:
            raise InvalidModelError(
                f"Could not load the .skops model ({type(exc).__name__}: {exc}). It may have "
                "been saved by an incompatible scikit-learn or skops version; save it again "
                "with the versions in requirements.txt."
            ) from None
    if not hasattr(model, "predict"):
        raise InvalidModelError(
            f"The file holds a {type(model).__name__}, not a fitted model with a predict "
            "method. Save the fitted estimator or Pipeline itself."
        )
    model = from_library_object(model)
    from ..model import _check_fitted

    _check_fitted(model)
    # scikit-learn's compiled tree code trusts the node arrays a file gives it:
    # check them before anything (ours or scikit-learn's predict) walks them
    from ..trees.validate import validate_model

    validate_model(model, type(model).__name__)
    return model
