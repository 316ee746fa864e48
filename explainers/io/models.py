"""Loading fitted models safely.

A model file is untrusted input. ``.skops`` files are read by skops, which
refuses to build any type that is not on its own safe list or on our reviewed
allow-list below, after :mod:`.skops_archive` has checked the archive's sizes.
Pickle and joblib files run arbitrary code when loaded, so they are refused
unless the caller (the operator, never the uploader) says the file is trusted.
Every loaded model's trees are validated (:mod:`explainers.trees.validate`)
before anything walks them. Compiled state a .skops file could forge (a neighbour
model's KDTree / BallTree) is never read from it: :mod:`.skops_rebuild` leaves it
out and rebuilds it from the model's checked training rows.
"""
from __future__ import annotations

import io
import pickletools
from pathlib import Path


from ..errors import InvalidModelError, UnsafeModelError
from ._files import _read_input
from .skops_archive import checked_schema
from .skops_rebuild import check_loaded, node_name, schema_nodes, strip_schema

#: Types that skops does not trust by default but that we reviewed. Each is either
#: a plain container of numbers or a class object that is only compared against,
#: never called with data from the file. Found with ``skops.io.get_untrusted_types``
#: on files dumped from scikit-learn's own estimators (tests/test_io_allowlist.py).
SKOPS_ALLOWED_TYPES = frozenset(
    {
        # Stacking / Voting estimators' named_estimators_: a dict whose keys read as attributes
        # (no method of it runs anything from the file; the estimators in it are checked as usual)
        "sklearn.utils._bunch.Bunch",
        # OutputCodeClassifier's stand-in for a code column with one class: it repeats its stored
        # label (y_, a number) for every row
        "sklearn.multiclass._ConstantPredictor",
        # node arrays of every DecisionTree, forest and GradientBoosting; their
        # contents are checked by explainers.trees.validate before any walk
        "sklearn.tree._tree.Tree",
        # HistGradientBoosting's trees: a structured array of nodes (validated too)
        "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
        # a dtype object (SimpleImputer, OrdinalEncoder and other transformers that keep one)
        "numpy.dtype",
        # make_column_selector: the ColumnTransformer's column picker, a plain object
        # holding a regex pattern and dtype filters. It is called only by fit; a fitted
        # ColumnTransformer (and explainers.io.data.categorical_features) reads the
        # column lists of transformers_, so the file's pattern is never run here
        "sklearn.compose._column_transformer.make_column_selector",
        # dtype filters of make_column_selector(dtype_include=object / np.number):
        # the class objects themselves, only passed to select_dtypes
        "builtins.object",
        "numpy.number",
        # a partial is only as safe as the function it wraps: allowed only where every
        # partial in the file wraps a function of SKOPS_ALLOWED_FUNCTIONS (checked from
        # the file's schema by _refused_skops_names). HistGradientBoosting with
        # categorical features keeps partial(check_array, dtype=..., ...) in its
        # preprocessor.
        "functools.partial",
        # GLM losses skops does not list itself: TweedieRegressor's (log link, or identity for
        # power <= 0). Inert data: a compiled loss (CyHalfTweedieLoss*, on skops' own list,
        # rebuilt by its LossNode from one number, power) and a link skops trusts. Predict reads
        # only the link's inverse; explainers.io.skops_checks.check_glm checks that the loss and
        # link are the ones the estimator's own power / link give (Poisson / Gamma's load already)
        "sklearn._loss.loss.HalfTweedieLoss",
        "sklearn._loss.loss.HalfTweedieLossIdentity",
        # Gaussian process kernels whose hyperparameters are plain numbers (or a length scale per
        # feature), and the operators combining them; pure numpy, nothing called from the file.
        # explainers.io.skops_checks.check_kernel checks each is finite, and positive where
        # scikit-learn needs it (length scales, constant, noise level, alpha, periodicity, nu).
        # Not PairwiseKernel (its metric may be a function), CompoundKernel or any other kernel
        "sklearn.gaussian_process.kernels.RBF",
        "sklearn.gaussian_process.kernels.ConstantKernel",
        "sklearn.gaussian_process.kernels.WhiteKernel",
        "sklearn.gaussian_process.kernels.Matern",
        "sklearn.gaussian_process.kernels.RationalQuadratic",
        "sklearn.gaussian_process.kernels.ExpSineSquared",
        "sklearn.gaussian_process.kernels.DotProduct",
        "sklearn.gaussian_process.kernels.Sum",
        "sklearn.gaussian_process.kernels.Product",
        "sklearn.gaussian_process.kernels.Exponentiation",
        # GaussianProcessClassifier's binary model (one, or one per class / pair of classes in a
        # OneVsRest / OneVsOne classifier): training rows and Laplace-approximation vectors,
        # checked by check_binary_gpc
        "sklearn.gaussian_process._gpc._BinaryGaussianProcessClassifierLaplace",
        # CalibratedClassifierCV's fitted parts: a classifier with its calibrators (checked by
        # check_calibrated), and the sigmoid (two numbers a_, b_) and temperature (one number,
        # beta_) calibrators. Isotonic calibration uses IsotonicRegression, which skops trusts;
        # its thresholds are checked too (check_isotonic)
        "sklearn.calibration._CalibratedClassifier",
        "sklearn.calibration._SigmoidCalibration",
        "sklearn.calibration._TemperatureScaling",
        # Never listed, though scikit-learn's neighbour models and MLPs hold them: a KDTree /
        # BallTree and its DistanceMetric (compiled code over node arrays from the file) and an
        # MLP's optimizer (training state). explainers.io.skops_rebuild leaves them out of the
        # schema before skops reads it and rebuilds the index from the checked training rows
    }
)
#: Functions a .skops file may name (as FunctionTransformer's func, a
#: TransformedTargetRegressor's func / inverse_func, or inside a functools.partial).
#: skops names a function by its module and name ("numpy.log1p"). Only pure
#: numerical functions that take arrays and return arrays: none of them imports,
#: evaluates, opens or calls anything given by the file. numpy's ufuncs (log1p,
#: expm1, log, exp, sqrt, square, ...) are trusted by skops itself and added below.
SKOPS_ALLOWED_FUNCTIONS = frozenset(
    {
        # the input check HistGradientBoosting's categorical preprocessor wraps in a partial
        "sklearn.utils.validation.check_array",
        # numpy functions that are not ufuncs but are as plain: element-wise arithmetic
        "numpy.clip",
        "numpy.nan_to_num",
        "numpy.round",
        "numpy.around",
    }
)
_PARTIAL = "functools.partial"


def _numpy_ufunc_names() -> frozenset:
    """numpy's public ufuncs, named as skops names them ("numpy.log1p"): pure arithmetic."""
    import numpy as np

    return frozenset(f"numpy.{n}" for n in dir(np) if isinstance(getattr(np, n, None), np.ufunc))


_node_name = node_name


def _refused_skops_names(schema, untrusted) -> list[str]:
    """The names in a .skops file's (parsed) schema that the reviewed lists do not allow, sorted.

    Types must be on :data:`SKOPS_ALLOWED_TYPES`. A reviewed function must be
    loaded as a function (never as a type to build). A ``functools.partial`` is
    allowed only when the function it wraps is a reviewed function or a numpy
    ufunc; otherwise it is refused as "functools.partial of <function>".
    """
    names = set(untrusted)
    refused = names - SKOPS_ALLOWED_TYPES - SKOPS_ALLOWED_FUNCTIONS
    if not names & (SKOPS_ALLOWED_FUNCTIONS | {_PARTIAL}):
        return sorted(refused)
    wrapped_ok = SKOPS_ALLOWED_FUNCTIONS | _numpy_ufunc_names()
    for node in schema_nodes(schema, "__loader__"):
        name = _node_name(node)
        if name in SKOPS_ALLOWED_FUNCTIONS and node.get("__loader__") != "FunctionNode":
            refused.add(f"{name} (as {node.get('__loader__')})")
        if node.get("__loader__") == "PartialNode" or name == _PARTIAL:
            func = (node.get("content") or {}).get("func") if isinstance(node.get("content"), dict) else None
            if not (isinstance(func, dict) and func.get("__loader__") == "FunctionNode"
                    and _node_name(func) in wrapped_ok):
                inner = _node_name(func) if isinstance(func, dict) else "an unknown object"
                refused.add(f"{_PARTIAL} of {inner}")
    return sorted(refused)


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
        with limits.reading_file(len(data)):
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
    """A pickled XGBoost / LightGBM / CatBoost model (wrapper or booster, alone or ending a
    Pipeline) in the form Glassbox explains (:func:`explainers.trees.library.native_form`:
    a NativeTreeModel, with the wrapper's ``missing`` and classes), or the model unchanged
    when it holds none of those."""
    from ..trees.library import native_form

    return native_form(model)


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


def _load_skops(data: bytes):
    """The object in a .skops file, read with the reviewed allow-list (no code runs).

    The archive's sizes are checked first (:func:`check_skops_archive`); state that is never
    built from a file (neighbour search indexes, MLP optimizers) is left out of its schema
    (:func:`~explainers.io.skops_rebuild.strip_schema`); once loaded, the neighbour indexes
    are rebuilt from the checked training rows and the fitted state of MLPs, Gaussian
    processes, GLMs and calibrators is checked (:func:`~explainers.io.skops_rebuild.check_loaded`).
    """
    import skops.io as sio

    _, schema = checked_schema(data)  # check_skops_archive, keeping the schema it parsed
    try:
        # neighbour indexes and MLP optimizers are left out here, never built from the file
        data, names = strip_schema(data, schema)  # edits schema in place: it is the archive's now
        untrusted = sio.get_untrusted_types(data=data)
    except InvalidModelError:
        raise
    except Exception as exc:
        raise InvalidModelError(
            f"The file is not a readable .skops model ({type(exc).__name__}: {exc}). "
            "Save the model with skops.io.dump(model, 'model.skops')."
        ) from None
    try:
        refused = _refused_skops_names(schema, untrusted)
        del schema  # bounded, but not kept while skops builds the model
    except Exception as exc:  # noqa: BLE001 - a schema skops read but we cannot
        raise InvalidModelError(
            f"The file is not a readable .skops model ({type(exc).__name__}: {exc}). "
            "Save the model with skops.io.dump(model, 'model.skops')."
        ) from None
    if refused:
        raise UnsafeModelError(
            "The .skops file contains types or functions that are not on the reviewed allow-list: "
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
    check_loaded(model, names)  # rebuilds the neighbour indexes; checks MLP, GP, GLM, calibration
    return model


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
        model = _load_skops(data)
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


def load_model_parts(preprocessing, final, settings: dict | None = None, step: str = "model"):
    """A model saved in parts by ``show()``: a Pipeline ending in an XGBoost, LightGBM or
    CatBoost model, whose preprocessing was saved with skops and whose final model in its
    library's own file (neither is a pickle), plus the settings the library file does not
    hold (:func:`explainers.trees.library.apply_settings`).

    ``preprocessing`` is a .skops file of a Pipeline of fitted transformers, or None when
    the model is the library model alone; ``final`` the library's file. Each part is read
    by the same safe loader as an upload.
    """
    from sklearn.pipeline import Pipeline

    from ..trees.library import apply_settings
    from ..trees.native import NativeTreeModel

    native = load_model(final)
    if not isinstance(native, NativeTreeModel):
        raise InvalidModelError("The final model of a model saved in parts must be an XGBoost, LightGBM or "
                                f"CatBoost file; got a {type(native).__name__}.")
    native = apply_settings(native, settings)
    if preprocessing is None:
        return native
    data, _ = _read_input(preprocessing, None, "model")
    prep = _load_skops(data)
    if not isinstance(prep, Pipeline) or not prep.steps:
        raise InvalidModelError("The preprocessing of a model saved in parts must be a Pipeline of fitted "
                                f"transformers; got a {type(prep).__name__}.")
    model = Pipeline(list(prep.steps) + [(str(step), native)], memory=prep.memory, verbose=prep.verbose)
    from ..model import _check_fitted
    from ..trees.validate import validate_model

    _check_fitted(model)
    validate_model(model, type(model).__name__)
    return model
