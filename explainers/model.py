"""One prediction function over any fitted model.

:class:`ModelAdapter` hides the differences between regressors, binary and
multiclass classifiers, scikit-learn Pipelines and plain objects with a
``predict`` method: every explainer calls ``adapter.predict(X)`` and gets one
ndarray back, shaped the same way for every model of the same task.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .errors import InvalidDataError, InvalidFeatureError, InvalidModelError, InvalidParameterError, param_error

__all__ = ["ModelAdapter", "detect_task", "mix_rows", "DEFAULT_CHUNK_ROWS"]

#: rows sent to the model in one predict call; keeps memory bounded for big data
DEFAULT_CHUNK_ROWS = 65_536
_OUTPUTS = ("auto", "raw", "proba", "log_odds")
_EPS = 1e-15


def _final_step(model):
    """The estimator that makes the predictions: a Pipeline's last step, else the model."""
    steps = getattr(model, "steps", None)
    return steps[-1][1] if steps else model


def _estimator_type(est) -> str | None:
    """scikit-learn's estimator type of a bare estimator ("classifier", "regressor",
    "clusterer", "outlier_detector") or None."""
    own = type(est).__module__.startswith("explainers.")  # ours (a library's file) says it itself
    if hasattr(est, "__sklearn_tags__") and not own:  # scikit-learn is not imported for these
        try:
            from sklearn.utils import get_tags

            kind = get_tags(est).estimator_type
            if kind is not None:
                return kind
        except Exception:  # an old or a broken estimator: fall back on attributes
            pass
    kind = getattr(est, "_estimator_type", None)
    return kind if isinstance(kind, str) else None


def is_sklearn(est, name: str) -> bool:
    """Whether ``est`` is an instance of scikit-learn's class ``name`` (a subclass too), told by
    the names of its classes: scikit-learn is not imported for a model that is none of its own
    (with SciPy, about a second of a fresh server's first page)."""
    return any(c.__name__ == name and c.__module__.startswith("sklearn.") for c in type(est).__mro__)


def _unsupervised_refusal(model) -> str | None:
    """Why a fitted model has no supervised prediction to explain (None when it has one)."""
    est = _final_step(model)
    name = type(est).__name__
    if _estimator_type(est) == "clusterer" or is_sklearn(est, "ClusterMixin"):
        return (f"{name} is a clustering model: it has no prediction to explain (its labels are "
                "cluster numbers, not a regression value or a class). Explain a regressor or "
                "classifier, e.g. one fitted to predict the cluster labels.")
    if not hasattr(est, "predict") and (
            is_sklearn(est, "TransformerMixin") or hasattr(est, "transform")):
        return (f"{name} is a transformer: it has no prediction to explain (it only transforms "
                "data). Explain a fitted regressor or classifier, or a Pipeline that ends in one.")
    return None


def _n_targets(model) -> int:
    """Number of target columns a regressor was fitted on (its prediction columns)."""
    est = _final_step(model)
    n = getattr(est, "n_outputs_", None)
    if isinstance(n, (int, np.integer)):
        return int(n)
    name = type(est).__name__
    if name in ("MultiOutputRegressor", "RegressorChain") and hasattr(est, "estimators_"):
        return len(est.estimators_)
    coef = getattr(est, "coef_", None)
    if isinstance(coef, np.ndarray) and coef.ndim == 2:
        return int(coef.shape[0])
    fitted_y = getattr(est, "_y", None)  # nearest-neighbour regressors keep their targets
    if isinstance(fitted_y, np.ndarray) and fitted_y.ndim == 2:
        return int(fitted_y.shape[1])
    return 1


def is_isolation_forest(model) -> bool:
    """True for a scikit-learn IsolationForest (alone or ending a Pipeline)."""
    return is_sklearn(_final_step(model), "IsolationForest")


def _is_anomaly_model(model) -> bool:
    """An outlier detector: its predict gives -1/1 labels, its score is what is explained."""
    est = _final_step(model)
    return _estimator_type(est) == "outlier_detector" and hasattr(model, "score_samples")


def detect_task(model) -> str:
    """Return ``"regression"``, ``"binary"`` or ``"multiclass"`` for a fitted model.

    An outlier detector (IsolationForest...) counts as a regression of its anomaly
    score. A clustering model, a bare transformer and a multi-output classifier
    raise :class:`~explainers.errors.InvalidModelError`.
    """
    refusal = _unsupervised_refusal(model)
    if refusal:
        raise InvalidModelError(refusal)
    classes = getattr(model, "classes_", None)
    if isinstance(classes, list):  # one array of classes per target column
        raise InvalidModelError(
            f"This {type(_final_step(model)).__name__} classifies several target columns at once "
            "(multi-output classification), which Glassbox does not explain. Fit one classifier "
            "per target column and explain each."
        )
    is_clf = _estimator_type(model) == "classifier"  # scikit-learn's is_classifier, by its tags
    if not is_clf and classes is not None and hasattr(model, "predict_proba"):
        is_clf = True
    if not is_clf:
        return "regression"
    if classes is None:
        raise InvalidModelError(
            f"{type(model).__name__} looks like a classifier but has no 'classes_' "
            "attribute: fit it before explaining it."
        )
    return "binary" if len(classes) == 2 else "multiclass"


def _raw_is_proba(model) -> bool:
    """Whether a classifier's raw output is its probabilities: a scikit-learn decision tree,
    random forest or extra trees (alone or ending a Pipeline), whose trees average class
    fractions. shap's TreeExplainer calls that output "raw" too."""
    est = model.steps[-1][1] if hasattr(model, "steps") and model.steps else model
    try:
        from .trees.sklearn import tree_families
    except ImportError:  # pragma: no cover - scikit-learn is a core dependency
        return False
    fam = tree_families()
    return isinstance(est, fam["tree"] + fam["forest"])


def _offered(model, task: str) -> str:
    """The outputs a fitted model can give, as ``output=`` values with what they mean."""
    if task == "regression":
        return "output='auto' or 'raw' (the predicted value)"
    proba = hasattr(model, "predict_proba")
    raw = ("output='raw' (decision function)" if hasattr(model, "decision_function")
           else "output='raw' (its trees' class probabilities)" if _raw_is_proba(model) else None)
    parts = ["output='auto' (class probabilities)" if proba else None, raw,
             "output='proba'" if proba else None, "output='log_odds'" if proba else None]
    parts = [p for p in parts if p]
    if not parts:
        return "no output that can be explained (it has neither predict_proba nor decision_function)"
    return ", ".join(parts)


def _resolved_output(model, task: str, output: str) -> str:
    """The output ``output="auto"`` stands for, decided once from the model: class
    probabilities where the classifier has predict_proba, else its decision function
    (the margin: SVC, LinearSVC, RidgeClassifier, SGDClassifier with hinge loss...).
    A classifier with neither is refused here, never at predict time."""
    if output != "auto" or task == "regression" or hasattr(model, "predict_proba"):
        return output
    if hasattr(model, "decision_function"):
        return "raw"
    raise InvalidModelError(
        f"This {type(_final_step(model)).__name__} classifier has neither predict_proba nor "
        "decision_function, so there is no score to explain (only its predicted labels). Fit a "
        "classifier that gives probabilities or a decision function.")


def _dense(X, absent: float = 0.0) -> np.ndarray:
    """X as a numpy array: a scipy sparse matrix densified (its absent entries ``absent``:
    0 as scikit-learn and LightGBM read them, NaN for XGBoost, which reads them as
    missing values), within the data limits; an XGBoost DMatrix or LightGBM Dataset
    refused by name, since its values cannot be read back."""
    kind = type(X).__name__
    if type(X).__module__.split(".")[0] in ("xgboost", "lightgbm", "catboost"):
        raise InvalidDataError(
            f"X is a {type(X).__module__.split('.')[0]} {kind}, whose values cannot be read back; pass "
            "the DataFrame or array it was built from.")
    if hasattr(X, "tocsr") and hasattr(X, "toarray") and hasattr(X, "shape"):  # scipy.sparse
        from . import limits

        rows, cols = (int(d) for d in X.shape)
        if rows * cols * 8 > limits.limit("data_bytes"):
            raise InvalidDataError(
                f"X is a sparse {kind} of {rows:,} x {cols:,}; as the dense table explanations work on "
                f"it would need {limits.fmt('data_bytes', rows * cols * 8)}, {limits.over('data_bytes')}. "
                "Pass fewer rows.")
        if absent == 0.0:
            return np.asarray(X.toarray(), dtype=np.float64)
        coo = X.tocoo()
        out = np.full((rows, cols), absent, dtype=np.float64)
        out[coo.row, coo.col] = coo.data
        return out
    return np.asarray(X)


def _native_form(model):
    """An XGBoost / LightGBM / CatBoost object (or a pipeline ending in one) as the
    NativeTreeModel read from its own serialisation (:mod:`explainers.trees.library`)."""
    from .trees.library import native_form

    return native_form(model)


def _check_fitted(model) -> None:
    refusal = _unsupervised_refusal(model)
    if refusal:
        raise InvalidModelError(refusal)
    if not hasattr(model, "predict"):
        raise InvalidModelError(
            f"A {type(model).__name__} object has no 'predict' method, so it cannot be "
            "explained. Pass a fitted scikit-learn estimator or Pipeline, or an object "
            "with predict (and predict_proba for classifiers)."
        )
    if is_sklearn(model, "BaseEstimator"):  # scikit-learn is not imported for another object
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted

        try:
            check_is_fitted(model)
        except NotFittedError:
            raise InvalidModelError(
                f"This {type(model).__name__} is not fitted yet: call fit(X, y) on it "
                "(or upload the fitted model) before explaining it."
            ) from None


def loose_renames(present, names) -> dict:
    """Data columns to rename to the model's names they match once whitespace is read as
    "_" (LightGBM writes "Monthly income ($)" as "Monthly_income_($)" in its model file):
    ``{data column: model name}`` for each model name missing from the data that exactly
    one data column matches this way (and that is not itself a model name)."""
    import re

    present = [str(c) for c in present]
    names = [str(n) for n in names]
    loose = lambda c: re.sub(r"\s", "_", c)  # noqa: E731
    out = {}
    for name in names:
        if name in present:
            continue
        found = [c for c in present if c not in names and c not in out and loose(c) == loose(name)]
        if len(found) == 1:
            out[found[0]] = name
    return out


def mix_rows(x: pd.DataFrame, background: pd.DataFrame, from_x: np.ndarray) -> pd.DataFrame:
    """Synthetic rows: each row of x crossed with every background row.

    Parameters
    ----------
    x : DataFrame of shape (r, p)
    background : DataFrame of shape (B, p), same columns
    from_x : bool ndarray of shape (r or 1, c, p)
        True where a feature keeps x's value, False where it takes the
        background row's (c patterns per row: masks, or coalitions).

    Returns
    -------
    DataFrame of shape (r * c * B, p)
        Ordered by row, then pattern, then background row. Built column by
        column, so every dtype survives (categories included).
    """
    r, B = len(x), len(background)
    c = from_x.shape[1]
    data = {}
    for j, name in enumerate(x.columns):
        xj = x[name].to_numpy()
        keep = from_x[:, :, j]
        if keep.all():  # the common case of a column nobody masks
            data[name] = np.repeat(xj, c * B)
        else:
            bj = background[name].to_numpy()
            col = np.where(keep[:, :, None], xj[:, None, None], bj[None, None, :])
            data[name] = np.broadcast_to(col, (r, c, B)).reshape(-1)
    synth = pd.DataFrame(data, columns=x.columns)
    for name, dt in zip(x.columns, x.dtypes):
        if isinstance(dt, pd.CategoricalDtype):
            synth[name] = synth[name].astype(dt)
    return synth


class ModelAdapter:
    """Wrap a fitted model behind one ``predict`` with a fixed output convention.

    Parameters
    ----------
    model : object
        A fitted scikit-learn estimator or Pipeline, or any object with
        ``predict`` (and ``predict_proba`` plus ``classes_`` for classifiers).
    feature_names : sequence of str, default=None
        Names of the model's input columns, in order. Taken from the model's
        ``feature_names_in_`` when not given; failing that, from the first
        DataFrame passed to :meth:`predict`.
    output : {"auto", "raw", "proba", "log_odds"}, default="auto"
        ``"auto"``: the regression value, or the probability of each class.
        ``"raw"``: ``predict`` for regressors; ``decision_function`` (the margin,
        log-odds for boosting and logistic models) for classifiers; for scikit-learn
        tree and forest classifiers, whose trees average class fractions, their
        probabilities (shap's TreeExplainer convention). ``"proba"``:
        class probabilities. ``"log_odds"``: ``log(p / (1 - p))`` of each class
        probability. An output the model cannot give (``"raw"`` for a classifier
        without ``decision_function``, ``"proba"`` without ``predict_proba``) raises
        :class:`~explainers.errors.InvalidParameterError` naming what it offers;
        nothing is substituted.
    class_index : int, default=None
        Keep only this output column: a class position in ``classes_``, or the
        position of one target of a multi-output regressor.
    target_names : sequence of str, default=None
        Names of a multi-output regressor's targets (the columns of its ``y``),
        used as output names; "output 0", "output 1"... when not given.
    chunk_rows : int, default=65536
        Rows per predict call; bounds memory on large data.

    Notes
    -----
    A multi-output regressor (a forest or linear model fitted on a 2-D ``y``,
    ``MultiOutputRegressor``) has one output column per target, like a
    multiclass classifier has one per class; ``class_index`` picks one.

    An IsolationForest is explained through its anomaly score, never its -1/1
    labels: the output is the mean path length ``E[h(x)]`` over its trees
    (additive over trees, so Tree SHAP explains it exactly; shorter = more
    anomalous). Its ``score_samples`` is ``-2 ** (-E[h(x)] / c(max_samples))``,
    a monotone function of it. Other outlier detectors are explained through
    their ``score_samples`` (lower = more anomalous). Clustering models and bare
    transformers have no prediction to explain and are refused.

    Attributes
    ----------
    task : {"regression", "binary", "multiclass"}
        An outlier detector's score counts as a regression value.
    classes : ndarray or None
        Class labels, in the model's order.
    n_outputs : int
        Number of output columns of :meth:`predict` (1 means a 1-D result).
    output_names : list of str
        One label per output column.
    """

    def __init__(
        self,
        model,
        feature_names: Sequence[str] | None = None,
        output: str = "auto",
        class_index: int | None = None,
        *,
        target_names: Sequence[str] | None = None,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
    ):
        if isinstance(model, ModelAdapter):
            if target_names is None:
                target_names = model.target_names
            model = model.model
        model = _native_form(model)
        _check_fitted(model)
        if output not in _OUTPUTS:
            raise param_error("output", "ModelAdapter", f"one of {list(_OUTPUTS)}", output)
        if not isinstance(chunk_rows, (int, np.integer)) or chunk_rows < 1:
            raise param_error("chunk_rows", "ModelAdapter", "an int >= 1", chunk_rows)
        self.model = model
        self.task = detect_task(model)
        self.classes = None if self.task == "regression" else np.asarray(model.classes_)
        if output in ("proba", "log_odds") and self.task == "regression":
            raise param_error(
                "output", "ModelAdapter", "'auto' or 'raw' for a regression model", output
            )
        if output in ("proba", "log_odds") and not hasattr(model, "predict_proba"):
            raise InvalidParameterError(
                f"output={output!r} needs predict_proba, which this {type(model).__name__} does not "
                f"have. It offers: {_offered(model, self.task)}."
            )
        if (output == "raw" and self.task != "regression" and not hasattr(model, "decision_function")
                and not _raw_is_proba(model)):
            # a classifier's raw output is its decision function (margin); probabilities
            # are another output, never given in its place
            raise InvalidParameterError(
                f"output='raw' is the decision function (margin) of a classifier, which this "
                f"{type(model).__name__} does not have. It offers: {_offered(model, self.task)}."
            )
        self.output = _resolved_output(model, self.task, output)
        self.chunk_rows = int(chunk_rows)
        self.n_targets = _n_targets(model) if self.task == "regression" else 1
        self.target_names = None
        if target_names is not None:
            names = [str(t) for t in (target_names if not isinstance(target_names, str) else [target_names])]
            if len(names) != self.n_targets:
                raise InvalidParameterError(
                    f"target_names names {len(names)} target(s) but this {type(model).__name__} "
                    f"predicts {self.n_targets}: give one name per target column, in training order."
                )
            self.target_names = names
        self.explained = None
        if is_isolation_forest(model):
            self.explained = ("mean path length E[h(x)] over the trees (shorter = more anomalous; "
                              "score_samples = -2 ** (-E[h(x)] / c(max_samples)))")
        elif _is_anomaly_model(model):
            self.explained = "anomaly score (score_samples; lower = more anomalous)"
        self._fn, n_cols = self._output_function()
        if class_index is not None:
            if not isinstance(class_index, (int, np.integer)) or not 0 <= class_index < n_cols:
                raise param_error(
                    "class_index", "ModelAdapter", f"an int in [0, {n_cols - 1}]", class_index
                )
            class_index = int(class_index)
        self.class_index = class_index
        self._n_cols = n_cols
        if feature_names is None and hasattr(model, "feature_names_in_"):
            feature_names = list(model.feature_names_in_)
        self.feature_names = None if feature_names is None else [str(f) for f in feature_names]
        self._model_wants_names = hasattr(model, "feature_names_in_")
        n_in = getattr(model, "n_features_in_", None)
        # names made up here (the model recorded none and none were given): the
        # first data frame's own labels replace them
        self._placeholder_names = False
        if self.feature_names is None and n_in is not None:
            self.feature_names = [f"x{i}" for i in range(int(n_in))]
            self._placeholder_names = True
        if (
            self.feature_names is not None
            and n_in is not None
            and len(self.feature_names) != int(n_in)
        ):
            raise InvalidFeatureError(
                f"{len(self.feature_names)} feature names were given but the model was "
                f"fitted on {int(n_in)} features."
            )

    # ------------------------------------------------------------------ outputs
    def _output_function(self) -> tuple[Callable[[object], np.ndarray], int]:
        """Return (function from model input to 2-D output, number of columns)."""
        model = self.model
        if self.task == "regression":
            if is_isolation_forest(model):
                return self._path_length_function(), 1
            if _is_anomaly_model(model):
                return (lambda X: np.asarray(model.score_samples(X), dtype=float).reshape(-1, 1)), 1
            k = self.n_targets

            def regress(X):
                out = np.asarray(model.predict(X), dtype=float).reshape(len(X), -1)
                if out.shape[1] != k:
                    raise InvalidModelError(
                        f"This {type(model).__name__} predicts {out.shape[1]} values per row where "
                        f"{k} were expected from its fitted attributes; it cannot be explained as is."
                    )
                return out

            return regress, k
        k = len(self.classes)
        out = self.output
        if out == "raw" and hasattr(model, "decision_function"):
            if k == 2:
                # one margin for the positive class; keep it 1-column
                return (
                    lambda X: np.asarray(model.decision_function(X), dtype=float).reshape(-1, 1)
                ), 1
            return (lambda X: np.asarray(model.decision_function(X), dtype=float)), k
        if out == "log_odds":
            def log_odds(X):
                p = np.clip(np.asarray(model.predict_proba(X), dtype=float), _EPS, 1 - _EPS)
                return np.log(p) - np.log1p(-p)

            return log_odds, k
        return (lambda X: np.asarray(model.predict_proba(X), dtype=float)), k

    def _path_length_function(self) -> Callable[[object], np.ndarray]:
        """IsolationForest: the mean path length E[h(x)], from its own score_samples
        ``s = -2 ** (-E[h] / c)``, so ``E[h] = -c log2(-s)``."""
        from .trees.sklearn import average_path_length

        model = self.model
        c = float(average_path_length(_final_step(model).max_samples_))

        def path_length(X):
            s = -np.asarray(model.score_samples(X), dtype=float)
            return (-c * np.log2(s)).reshape(-1, 1)

        return path_length

    @property
    def n_outputs(self) -> int:
        return 1 if self.class_index is not None else self._n_cols

    @property
    def all_output_names(self) -> list[str]:
        """One label per model output column, whatever ``class_index`` keeps."""
        if self.task == "regression":
            if self.explained is not None:
                return ["mean path length" if is_isolation_forest(self.model) else "anomaly score"]
            if self.n_targets > 1:
                return list(self.target_names or [f"output {i}" for i in range(self.n_targets)])
            return list(self.target_names or ["prediction"])
        if self._n_cols == 1:
            return [f"margin({self.classes[1]})"]
        return [str(c) for c in self.classes]

    @property
    def output_names(self) -> list[str]:
        names = self.all_output_names
        if self.task == "regression" and self.n_targets == 1 and self.target_names is None:
            return names
        return [names[self.class_index]] if self.class_index is not None and len(names) > 1 else names

    def with_output(self, output: str | None = None, class_index: int | None = -1) -> "ModelAdapter":
        """Return a new adapter over the same model with another output or class."""
        return ModelAdapter(
            self.model,
            feature_names=self.feature_names,
            output=self.output if output is None else output,
            class_index=self.class_index if class_index == -1 else class_index,
            target_names=self.target_names,
            chunk_rows=self.chunk_rows,
        )

    # ------------------------------------------------------------------- inputs
    def to_frame(self, X) -> pd.DataFrame:
        """Return X as a DataFrame with the model's columns, in the model's order.

        A data frame's columns are matched by label, compared as text (a frame
        whose labels are ints or tuples matches names "0" or "('a', 1)"); when
        its labels do not all match but it has exactly the model's number of
        columns, they are taken by position if the model recorded no column
        names (fitted on an array, or on labels that are not text) or the frame's
        labels are not text. A frame with other text labels for a model that
        recorded its names is refused, naming the missing columns. The result's
        column labels are always the adapter's ``feature_names``.
        """
        if isinstance(X, pd.DataFrame):
            cols = [str(c) for c in X.columns]
            if self.feature_names is None or (
                    self._placeholder_names and len(cols) == len(self.feature_names)
                    and len(set(cols)) == len(cols)):
                # a model without recorded names: the first frame names its columns
                self.feature_names = cols
                self._placeholder_names = False
            if list(X.columns) == self.feature_names:
                return X
            if cols == self.feature_names:
                return X.set_axis(cols, axis=1)
            missing = [f for f in self.feature_names if f not in cols]
            if missing and (renames := loose_renames(cols, self.feature_names)):
                cols = [renames.get(c, c) for c in cols]  # "Monthly income ($)" for LightGBM's "Monthly_income_($)"
                missing = [f for f in self.feature_names if f not in cols]
            if not missing and len(set(cols)) == len(cols):
                return X.set_axis(cols, axis=1)[self.feature_names]
            named = getattr(self, "_model_wants_names", False) and all(isinstance(c, str) for c in X.columns)
            if X.shape[1] == len(self.feature_names) and not named:
                # same width, and the model or the frame names no columns: taken by position
                return X.set_axis(self.feature_names, axis=1)
            if missing:
                raise InvalidDataError(
                    f"The data lacks {len(missing)} of the model's columns: "
                    f"{', '.join(missing[:10])}{' …' if len(missing) > 10 else ''}. "
                    "Add them, or pick data made for this model."
                )
            raise InvalidDataError(
                "The data repeats column labels the model reads "
                f"({', '.join(sorted({c for c in cols if cols.count(c) > 1})[:10])}); give each column one name."
            )
        arr = _dense(X, np.nan if getattr(self.model, "library", None) == "xgboost" else 0.0)
        if arr.ndim == 1:
            arr = arr.reshape(1, -1)
        if arr.ndim != 2:
            raise InvalidDataError(
                f"X must be 2-D (rows x features); got an array of shape {arr.shape}."
            )
        if self.feature_names is None:
            self.feature_names = [f"x{i}" for i in range(arr.shape[1])]
        if arr.shape[1] != len(self.feature_names):
            raise InvalidDataError(
                f"X has {arr.shape[1]} columns but the model takes {len(self.feature_names)} "
                f"({', '.join(self.feature_names[:10])}{' …' if len(self.feature_names) > 10 else ''})."
            )
        return pd.DataFrame(arr, columns=self.feature_names)

    def _model_input(self, frame: pd.DataFrame):
        """What the model's predict expects: a DataFrame if fitted with names, else an array."""
        if self._model_wants_names:
            return frame
        if all(pd.api.types.is_numeric_dtype(t) for t in frame.dtypes):
            return frame.to_numpy(dtype=float)
        return frame.to_numpy()

    # -------------------------------------------------------------- predictions
    def _finish(self, out: np.ndarray) -> np.ndarray:
        if self.class_index is not None:
            return out[:, self.class_index]
        if out.shape[1] == 1:
            return out[:, 0]
        return out

    def _predict_frame(self, frame: pd.DataFrame) -> np.ndarray:
        """Predict a frame already in canonical form; returns 2-D (n, n_cols)."""
        n = len(frame)
        if n == 0:
            return np.empty((0, self._n_cols))
        if n <= self.chunk_rows:
            return self._call(self._model_input(frame))
        parts = [
            self._call(self._model_input(frame.iloc[s : s + self.chunk_rows]))
            for s in range(0, n, self.chunk_rows)
        ]
        return np.concatenate(parts, axis=0)

    def _call(self, inp) -> np.ndarray:
        """The output function on one chunk. A NaN output is refused here: every explanation
        averages predictions, and one NaN would silently spread to all of them. (The messages are
        built only on failure: this runs on every chunk every explainer predicts.)"""
        try:
            out = self._fn(inp)
        except ValueError as exc:
            if "No neighbors found" not in str(exc):
                raise
            raise InvalidModelError(f"This {self._name()} cannot predict some rows: "
                                    f"{str(exc).split(' array(')[0]}. {self._radius_hint()}") from None
        bad = np.isnan(out)
        if bad.any():
            name, rows = self._name(), int(bad.any(axis=1).sum())
            raise InvalidModelError(
                f"This {name} predicted NaN for {rows:,} of {len(out):,} rows, so nothing computed from them "
                "would be a number. " + (self._radius_hint() if "RadiusNeighbors" in name else
                                         "Check the rows it is given (empty cells the model cannot take?)."))
        return out

    def _name(self) -> str:
        return type(_final_step(self.model)).__name__

    def _radius_hint(self) -> str:
        return ("Explanations predict rows mixed from the data's own values; a radius-neighbours model "
                "finds no training row within its radius for some of them. Fit it with a larger radius"
                + (" or an outlier_label." if self.task != "regression" else "."))

    def predict(self, X) -> np.ndarray:
        """Predict X in row chunks.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for one output, (n_samples, k) for k outputs
        """
        return self._finish(self._predict_frame(self.to_frame(X)))

    __call__ = predict

    def accepts_nan(self, rows) -> bool:
        """Whether the model takes these rows as they are, empty cells included: it
        predicts finite values for them (an imputer fills the cells,
        HistGradientBoosting routes them). Checked on at most 8 rows."""
        import warnings

        frame = self.to_frame(rows).iloc[:8]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = self.predict(frame)
        except Exception:  # noqa: BLE001 - any refusal means it cannot take them
            return False
        return bool(np.all(np.isfinite(np.asarray(out, dtype=float))))

    def predict_labels(self, X) -> np.ndarray:
        """The model's own ``predict`` (class labels for classifiers), in row chunks."""
        frame = self.to_frame(X)
        parts = [
            np.asarray(self.model.predict(self._model_input(frame.iloc[s : s + self.chunk_rows])))
            for s in range(0, len(frame), self.chunk_rows)
        ]
        return np.concatenate(parts) if parts else np.empty(0)

    # ------------------------------------------------------------ missing masks
    def missing_mask(self, missing, n_rows: int) -> np.ndarray:
        """Normalise a missing-feature spec to a bool array of shape (n_rows, p).

        ``missing`` may be None, a bool array of shape (p,) or (n_rows, p), or a
        sequence of feature names (or integer positions).
        """
        p = len(self.feature_names)
        if missing is None:
            return np.zeros((n_rows, p), dtype=bool)
        arr = np.asarray(missing)
        if arr.dtype == bool:
            if arr.shape == (p,):
                return np.broadcast_to(arr, (n_rows, p)).copy()
            if arr.shape == (n_rows, p):
                return arr.copy()
            raise InvalidFeatureError(
                f"A missing-feature mask must have shape ({p},) or ({n_rows}, {p}); "
                f"got {arr.shape}."
            )
        if arr.ndim == 0:
            arr = arr.reshape(1)
        mask = np.zeros(p, dtype=bool)
        for item in arr.tolist():
            if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
                if not 0 <= item < p:
                    raise InvalidFeatureError(
                        f"Missing feature index {item} is out of range: the model has {p} features."
                    )
                mask[item] = True
            else:
                name = str(item)
                if name not in self.feature_names:
                    raise InvalidFeatureError(
                        f"Unknown feature {name!r} in the missing-feature list. Known features: "
                        f"{', '.join(self.feature_names[:20])}{' …' if p > 20 else ''}."
                    )
                mask[self.feature_names.index(name)] = True
        return np.broadcast_to(mask, (n_rows, p)).copy()

    def predict_masked(self, X, missing, background) -> np.ndarray:
        """Predict with the missing features marginalised over background rows.

        For each row x with missing features C and present features S this is
        ``f_S(x_S) = mean_i f(x_S, b_{i,C})`` over the background rows b_i
        (eq. 16 of the SHAP seed): the interventional expectation. Rows with no
        missing feature are predicted directly. The synthetic rows are built
        column by column for a whole chunk of rows and sent to the model in one
        call per chunk.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        missing : bool array of shape (n_features,) or (n_samples, n_features), or feature names
        background : DataFrame or array-like of shape (n_background, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, k), like :meth:`predict`
        """
        frame = self.to_frame(X)
        bg = self.to_frame(background)
        if len(bg) == 0:
            raise InvalidDataError("The background data has no rows; pass at least one row.")
        n, B = len(frame), len(bg)
        mask = self.missing_mask(missing, n)
        out = np.empty((n, self._n_cols))
        full = ~mask.any(axis=1)
        if full.any():
            out[full] = self._predict_frame(frame.iloc[np.flatnonzero(full)])
        todo = np.flatnonzero(~full)
        step = max(1, self.chunk_rows // B)
        for s in range(0, len(todo), step):
            rows = todo[s : s + step]
            synth = mix_rows(frame.iloc[rows], bg, ~mask[rows][:, None, :])
            pred = self._predict_frame(synth).reshape(len(rows), B, self._n_cols)
            out[rows] = pred.mean(axis=1)
        return self._finish(out)

    def __repr__(self) -> str:
        return (
            f"ModelAdapter({type(self.model).__name__}, task={self.task!r}, "
            f"output={self.output!r}, class_index={self.class_index!r})"
        )
