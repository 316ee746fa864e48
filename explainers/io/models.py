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
MODEL_SUFFIXES = (".skops", ".joblib", ".pkl", ".pickle")
_PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")
TRUST_HINT = (
    "Save the model with skops instead (skops.io.dump(model, 'model.skops')), or, if you "
    "trust this file, ask the operator to start the dashboard with --trust-pickles "
    "(or GLASSBOX_TRUST_PICKLES=1)."
)


def _model_format(data: bytes, name: str) -> str:
    for suffix in MODEL_SUFFIXES:
        if name.endswith(suffix):
            return "skops" if suffix == ".skops" else "pickle"
    if name:
        raise InvalidModelError(
            f"{Path(name).name!r} is not a model file this tool reads: use a .skops file "
            "(or .joblib / .pkl when the operator allows pickles)."
        )
    # bytes without a name: sniff the content
    if data[:2] == b"PK":
        return "skops"
    if data[:1] == b"\x80" or data[:2] in (b"x\x9c", b"x\x01", b"x\xda"):
        return "pickle"
    raise InvalidModelError(
        "Could not tell the model format: pass filename='model.skops' (or .joblib / .pkl)."
    )


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
        The fitted estimator (it has a ``predict`` method).

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
    from ..model import _check_fitted

    _check_fitted(model)
    # scikit-learn's compiled tree code trusts the node arrays a file gives it:
    # check them before anything (ours or scikit-learn's predict) walks them
    from ..trees.validate import validate_model

    validate_model(model, type(model).__name__)
    return model
