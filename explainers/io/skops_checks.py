"""Checks of the fitted state of estimators loaded from a .skops file, before anything uses it.

skops builds only reviewed types, but it cannot tell whether their arrays and numbers
make sense together: a layer of an MLP whose weights do not chain, a Gaussian process
kernel with a negative length scale, a calibrator whose thresholds are NaN. scikit-learn
would compute garbage with them, or fail deep inside predict with a message that names
nothing the user saved. Each check below reads one estimator's fitted attributes (the
ones its ``predict`` reads) and refuses the model, naming the attribute, when they are
not what ``fit`` writes. :func:`explainers.io.skops_rebuild.check_loaded` finds the
estimators (inside pipelines and meta-estimators too) and calls these.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import InvalidModelError
from ..trees.validate import HINT


def refuse(msg: str) -> InvalidModelError:
    """An InvalidModelError saying ``msg`` and how to get a good file."""
    return InvalidModelError(f"{msg} {HINT}")


def what(value) -> str:
    """``value`` described for a message: its type, and an array's shape and dtype."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    return f"a {type(value).__name__}"


def _shape_text(shape) -> str:
    return "(" + ", ".join("any" if s is None else str(s) for s in shape) + (",)" if len(shape) == 1 else ")")


def check_array(value, label: str, *, ndim=(1, 2), kinds="f", shape=None, finite=True) -> np.ndarray:
    """``value`` if it is a numeric ndarray of one of ``ndim`` dimensions, dtype kind among
    ``kinds``, the ``shape`` given (None: any length) and finite; else a refusal naming ``label``."""
    dims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if not isinstance(value, np.ndarray) or value.ndim not in dims or value.dtype.kind not in kinds:
        kind = "numbers" if set(kinds) - {"f"} else "floating-point numbers"
        want = " or ".join(f"{d}-D" for d in dims)
        raise refuse(f"{label} is not a {want} array of {kind} (got {what(value)}).")
    if shape is not None and (len(shape) != value.ndim
                              or any(w is not None and w != s for w, s in zip(shape, value.shape))):
        raise refuse(f"{label} has shape {value.shape}; the model needs {_shape_text(shape)}.")
    if finite and value.dtype.kind in "fc" and not np.isfinite(value).all():
        bad = int(np.count_nonzero(~np.isfinite(value)))
        raise refuse(f"{label} holds values that are not finite (NaN or infinite): {bad:,} of {value.size:,}.")
    return value


def is_number(value) -> bool:
    """A real number (Python or numpy), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_number(value, label: str, *, low=None, strict=True, allow_inf=False) -> float:
    """``value`` as a float when it is a real number (finite unless ``allow_inf``), above
    ``low`` (or at least ``low`` when not ``strict``); else a refusal naming ``label``."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]  # a number stored as a 0-d array
    if not is_number(value):
        raise refuse(f"{label} is not a number (got {what(value)}).")
    x = float(value)
    if np.isnan(x) or (np.isinf(x) and not allow_inf):
        raise refuse(f"{label} is {x}, not a finite number.")
    if low is not None and (x <= low if strict else x < low):
        raise refuse(f"{label} is {x:g}; it must be {'>' if strict else '>='} {low:g}.")
    return x


def check_count(value, label: str, *, low=1) -> int:
    """``value`` as an int when it is an integer >= ``low``; else a refusal naming ``label``."""
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)) or value < low:
        raise refuse(f"{label} is {value!r}; it must be an integer >= {low}.")
    return int(value)


def check_choice(value, label: str, options) -> str:
    """``value`` when it is one of the names ``options``; else a refusal naming ``label``."""
    if not isinstance(value, str) or value not in options:
        raise refuse(f"{label} is {what(value) if not isinstance(value, str) else repr(value)}; "
                     f"scikit-learn knows {', '.join(map(repr, sorted(options)))}.")
    return value


def n_features(est, label: str) -> int:
    """The number of features ``est`` was fitted on (its ``n_features_in_``)."""
    return check_count(getattr(est, "n_features_in_", None), f"{label}.n_features_in_")


# ------------------------------------------------------------------ MLP
def check_mlp(est, label: str) -> None:
    """An MLP's layers chain: ``coefs_[i]`` of shape (units i, units i+1), from the features to
    the outputs through ``hidden_layer_sizes``; biases to match; finite; known activations."""
    from sklearn.neural_network._base import ACTIVATIONS, DERIVATIVES

    coefs, intercepts = getattr(est, "coefs_", None), getattr(est, "intercepts_", None)
    if not isinstance(coefs, list) or not isinstance(intercepts, list) or not coefs:
        raise refuse(f"{label}.coefs_ and .intercepts_ are not lists of layer weights "
                     f"(got {what(coefs)} and {what(intercepts)}).")
    hidden = est.hidden_layer_sizes
    hidden = [hidden] if isinstance(hidden, numbers.Integral) else list(hidden) if isinstance(
        hidden, (list, tuple)) else None
    if hidden is None or not all(isinstance(h, numbers.Integral) and h >= 1 for h in hidden):
        raise refuse(f"{label}.hidden_layer_sizes is {est.hidden_layer_sizes!r}, not a list of layer sizes.")
    units = [n_features(est, label)] + [int(h) for h in hidden] + [
        check_count(getattr(est, "n_outputs_", None), f"{label}.n_outputs_")]
    if not len(coefs) == len(intercepts) == len(units) - 1:
        raise refuse(f"{label} has {len(coefs)} weight matrices and {len(intercepts)} bias vectors, but "
                     f"hidden_layer_sizes {tuple(hidden)} needs {len(units) - 1} of each.")
    n_layers = check_count(getattr(est, "n_layers_", None), f"{label}.n_layers_", low=2)
    if n_layers != len(units):
        raise refuse(f"{label}.n_layers_ is {n_layers}, but its {len(coefs)} weight matrices join {len(units)} layers.")
    sizes = (f"(n_features_in_ {units[0]}, hidden_layer_sizes {tuple(hidden)}, n_outputs_ {units[-1]})")
    for i, (w, b) in enumerate(zip(coefs, intercepts)):
        if check_array(w, f"{label}.coefs_[{i}]", ndim=2).shape != (units[i], units[i + 1]):
            raise refuse(f"{label}.coefs_[{i}] has shape {w.shape}, but layer {i} joins {units[i]} units "
                         f"to {units[i + 1]} {sizes}.")
        if check_array(b, f"{label}.intercepts_[{i}]", ndim=1).shape != (units[i + 1],):
            raise refuse(f"{label}.intercepts_[{i}] has {len(b)} values for the {units[i + 1]} units of "
                         f"layer {i + 1} {sizes}.")
    check_choice(est.activation, f"{label}.activation", DERIVATIVES)
    check_choice(getattr(est, "out_activation_", None), f"{label}.out_activation_", ACTIVATIONS)
    binarizer = getattr(est, "_label_binarizer", None)
    if binarizer is not None:  # a classifier: one output per class, or one for two classes
        classes = check_array(getattr(binarizer, "classes_", None), f"{label}._label_binarizer.classes_",
                              ndim=1, kinds="biufcUSO")
        want = 1 if getattr(binarizer, "y_type_", None) == "binary" else len(classes)
        if units[-1] != want:
            raise refuse(f"{label} has {units[-1]} outputs for {len(classes)} classes "
                         f"({binarizer.y_type_!r} target); fit writes {want}.")


# ------------------------------------------------------------------ GLM
def check_glm(est, label: str) -> None:
    """A GLM keeps the loss (and link) its own parameters give: predict applies that link's
    inverse to ``X @ coef_ + intercept_``."""
    try:
        expected = est._get_loss()
    except Exception as exc:  # noqa: BLE001 - invalid stored parameters
        raise refuse(f"{label}'s parameters do not give a loss ({type(exc).__name__}: {exc}).") from None
    loss = getattr(est, "_base_loss", None)
    link = getattr(loss, "link", None)
    if type(loss) is not type(expected) or type(link) is not type(expected.link):
        raise refuse(f"{label} keeps the loss {type(loss).__name__} with the link {type(link).__name__}, but "
                     f"its parameters give {type(expected).__name__} with {type(expected.link).__name__}.")
    check_array(getattr(est, "coef_", None), f"{label}.coef_", ndim=1, shape=(n_features(est, label),))
    check_number(getattr(est, "intercept_", None), f"{label}.intercept_")


# ------------------------------------------------------------------ calibration
_CALIBRATORS = {"sigmoid": "_SigmoidCalibration", "isotonic": "IsotonicRegression",
                "temperature": "_TemperatureScaling"}


def check_calibrated_cv(est, label: str) -> None:
    """CalibratedClassifierCV: one or more calibrated classifiers over the same classes."""
    parts = getattr(est, "calibrated_classifiers_", None)
    if not isinstance(parts, list) or not parts:
        raise refuse(f"{label}.calibrated_classifiers_ is not a list of calibrated classifiers "
                     f"(got {what(parts)}).")
    classes = check_array(getattr(est, "classes_", None), f"{label}.classes_", ndim=1, kinds="biufUSO")
    for i, part in enumerate(parts):
        if type(part).__name__ != "_CalibratedClassifier":
            raise refuse(f"{label}.calibrated_classifiers_[{i}] is {what(part)}, not a calibrated classifier.")
        if not isinstance(part.classes, np.ndarray) or part.classes.shape != classes.shape:
            raise refuse(f"{label}.calibrated_classifiers_[{i}].classes does not match {label}.classes_.")


def check_calibrated(est, label: str) -> None:
    """_CalibratedClassifier: its method's calibrators, one per class (one for two classes)."""
    method = check_choice(getattr(est, "method", None), f"{label}.method", _CALIBRATORS)
    classes = check_array(getattr(est, "classes", None), f"{label}.classes", ndim=1, kinds="biufUSO")
    cals = getattr(est, "calibrators", None)
    if not isinstance(cals, list) or not cals:
        raise refuse(f"{label}.calibrators is not a list of calibrators (got {what(cals)}).")
    most = 1 if method == "temperature" or len(classes) <= 2 else len(classes)
    if len(cals) > most:
        raise refuse(f"{label} has {len(cals)} calibrators for {len(classes)} classes; fit writes at most {most}.")
    for i, cal in enumerate(cals):
        if type(cal).__name__ != _CALIBRATORS[method]:
            raise refuse(f"{label}.calibrators[{i}] is {what(cal)}; method {method!r} uses "
                         f"{_CALIBRATORS[method]}.")


def check_sigmoid(est, label: str) -> None:
    """_SigmoidCalibration predicts expit(-(a_ * f + b_)): two plain numbers."""
    check_number(getattr(est, "a_", None), f"{label}.a_")
    check_number(getattr(est, "b_", None), f"{label}.b_")


def check_temperature(est, label: str) -> None:
    """_TemperatureScaling divides the logits by a temperature: ``beta_``, its inverse, a number."""
    check_number(getattr(est, "beta_", None), f"{label}.beta_")


def check_isotonic(est, label: str) -> None:
    """IsotonicRegression interpolates between thresholds: finite, the X ones sorted."""
    xs = check_array(getattr(est, "X_thresholds_", None), f"{label}.X_thresholds_", ndim=1)
    check_array(getattr(est, "y_thresholds_", None), f"{label}.y_thresholds_", ndim=1, shape=(len(xs),))
    if not len(xs):
        raise refuse(f"{label} has no thresholds.")
    if (np.diff(xs) < 0).any():
        raise refuse(f"{label}.X_thresholds_ are not sorted in increasing order.")
    for name in ("X_min_", "X_max_"):
        check_number(getattr(est, name, None), f"{label}.{name}")
    check_choice(est.out_of_bounds, f"{label}.out_of_bounds", {"nan", "clip", "raise"})


# ------------------------------------------------------------------ Gaussian processes
#: the reviewed kernels' hyperparameters: (lower bound, strictly above it). A length scale
#: may be one number or one per feature (anisotropic RBF / Matern); nu may be inf (= RBF)
KERNEL_PARAMETERS = {
    "RBF": {"length_scale": (0.0, True)},
    "Matern": {"length_scale": (0.0, True), "nu": (0.0, True)},
    "RationalQuadratic": {"length_scale": (0.0, True), "alpha": (0.0, True)},
    "ExpSineSquared": {"length_scale": (0.0, True), "periodicity": (0.0, True)},
    "DotProduct": {"sigma_0": (0.0, False)},
    "ConstantKernel": {"constant_value": (0.0, True)},
    "WhiteKernel": {"noise_level": (0.0, True)},
}
#: kernels built from other kernels, and the attributes holding them
KERNEL_OPERATORS = {"Sum": ("k1", "k2"), "Product": ("k1", "k2"), "Exponentiation": ("kernel",)}
#: parts of one kernel, counted at every use: a kernel sharing its parts (Sum(k, k), nested)
#: is evaluated once per use, so a few objects in the file could mean 2**30 evaluations
MAX_KERNEL_PARTS = 1_000
_KERNELS_MODULE = "sklearn.gaussian_process.kernels"


def check_kernel(kernel, label: str) -> None:
    """A kernel of reviewed parts (:data:`KERNEL_PARAMETERS`, :data:`KERNEL_OPERATORS`) whose
    hyperparameters are finite numbers within their bounds, of at most MAX_KERNEL_PARTS parts."""
    stack, parts = [(kernel, label)], 0
    while stack:
        k, where = stack.pop()
        parts += 1
        if parts > MAX_KERNEL_PARTS:
            raise refuse(f"{label} has more than {MAX_KERNEL_PARTS:,} parts (counted at every use).")
        name = type(k).__name__
        if type(k).__module__ != _KERNELS_MODULE or name not in KERNEL_PARAMETERS.keys() | KERNEL_OPERATORS.keys():
            raise refuse(f"{where} is {what(k)}, not one of the reviewed kernels "
                         f"({', '.join(sorted(KERNEL_PARAMETERS.keys() | KERNEL_OPERATORS.keys()))}).")
        if name == "Exponentiation":
            check_number(getattr(k, "exponent", None), f"{where}.exponent")
        stack.extend((getattr(k, attr, None), f"{where}.{attr}") for attr in KERNEL_OPERATORS.get(name, ()))
        for param, (low, strict) in KERNEL_PARAMETERS.get(name, {}).items():
            _check_hyperparameter(getattr(k, param, None), f"{where}.{param}", low, strict,
                                  allow_inf=param == "nu")


def _check_hyperparameter(value, label: str, low: float, strict: bool, allow_inf: bool) -> None:
    if isinstance(value, np.ndarray) and value.ndim and label.endswith("length_scale"):
        values = check_array(value, label, ndim=1, kinds="fiu")
        if not len(values) or (values <= low).any():
            raise refuse(f"{label} holds {values.tolist()!r}; every length scale must be > {low:g}.")
        return
    check_number(value, label, low=low, strict=strict, allow_inf=allow_inf)


def _training_rows(est, label: str, n_features_in=None) -> int:
    """The rows a Gaussian process kept (``X_train_``), checked: 2-D, finite."""
    X = check_array(getattr(est, "X_train_", None), f"{label}.X_train_", ndim=2, kinds="fiu",
                    shape=(None, n_features_in))
    if not X.shape[0]:
        raise refuse(f"{label}.X_train_ holds no rows.")
    return X.shape[0]


def check_gpr(est, label: str) -> None:
    """GaussianProcessRegressor: its training rows, weights (``alpha_``), targets and Cholesky
    factor (``L_``) agree in size and are finite; the target scaling is finite."""
    n = _training_rows(est, label, n_features(est, label))
    alpha = check_array(getattr(est, "alpha_", None), f"{label}.alpha_", ndim=(1, 2))
    if alpha.shape[0] != n:
        raise refuse(f"{label}.alpha_ has {alpha.shape[0]:,} rows for {n:,} training rows.")
    check_array(getattr(est, "y_train_", None), f"{label}.y_train_", ndim=alpha.ndim, kinds="fiu",
                shape=alpha.shape)
    check_array(getattr(est, "L_", None), f"{label}.L_", ndim=2, shape=(n, n))
    outputs = 1 if alpha.ndim == 1 else alpha.shape[1]
    for name in ("_y_train_mean", "_y_train_std"):
        value = getattr(est, name, None)
        value = np.asarray(value) if isinstance(value, np.generic) or is_number(value) else value
        check_array(value, f"{label}.{name}", ndim=(0, 1))
        if value.size not in (1, outputs):
            raise refuse(f"{label}.{name} has {value.size} values for {outputs} targets.")
    check_kernel(getattr(est, "kernel_", None), f"{label}.kernel_")


_BINARY_GPC = "_BinaryGaussianProcessClassifierLaplace"


def check_binary_gpc(est, label: str) -> None:
    """The Laplace-approximation binary classifier inside GaussianProcessClassifier: its
    training rows and the vectors and factor predict reads agree in size and are finite."""
    n = _training_rows(est, label)
    check_array(getattr(est, "y_train_", None), f"{label}.y_train_", ndim=1, kinds="biuf", shape=(n,))
    for name in ("pi_", "W_sr_", "f_cached"):
        check_array(getattr(est, name, None), f"{label}.{name}", ndim=1, shape=(n,))
    check_array(getattr(est, "L_", None), f"{label}.L_", ndim=2, shape=(n, n))
    check_array(getattr(est, "classes_", None), f"{label}.classes_", ndim=1, kinds="biufUSO", shape=(2,))
    check_kernel(getattr(est, "kernel_", None), f"{label}.kernel_")


def check_gpc(est, label: str) -> None:
    """GaussianProcessClassifier: one binary classifier for two classes, else one per class
    (one-vs-rest) or per pair of classes (one-vs-one), each fitted on the model's features."""
    p = n_features(est, label)
    classes = check_array(getattr(est, "classes_", None), f"{label}.classes_", ndim=1, kinds="biufUSO")
    k = check_count(getattr(est, "n_classes_", None), f"{label}.n_classes_", low=2)
    if k != len(classes):
        raise refuse(f"{label}.n_classes_ is {k} but it has {len(classes)} classes.")
    base = getattr(est, "base_estimator_", None)
    wants = {_BINARY_GPC: 1} if k == 2 else {"OneVsRestClassifier": k, "OneVsOneClassifier": k * (k - 1) // 2}
    kind = type(base).__name__
    binaries = [base] if kind == _BINARY_GPC else getattr(base, "estimators_", None)
    if kind not in wants or not isinstance(binaries, (list, tuple)) or len(binaries) != wants[kind]:
        raise refuse(f"{label}.base_estimator_ is {what(base)} for {k} classes; fit writes "
                     f"{' or '.join(f'{v} binary classifier(s) in a {n}' for n, v in wants.items())}.")
    for i, binary in enumerate(binaries):
        where = f"{label}.base_estimator_" + ("" if binary is base else f".estimators_[{i}]")
        if type(binary).__name__ != _BINARY_GPC:
            raise refuse(f"{where} is {what(binary)}, not a binary Gaussian process classifier.")
        _training_rows(binary, where, p)
