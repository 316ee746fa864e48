"""Tree models read from a boosting library's own file (XGBoost, LightGBM, CatBoost).

A reader (:mod:`.xgboost`, :mod:`.lightgbm`, :mod:`.catboost`) parses the file as
plain data, never running code from it, into a :class:`~.ensemble.TreeEnsemble`
and wraps it in a :class:`NativeTreeRegressor` or :class:`NativeTreeClassifier`:
a fitted-model object with ``predict`` (and ``predict_proba``) computed from the
parsed trees, so every explainer takes it like any other model and every tree
engine reads its ensemble directly. No boosting library is needed to explain it.
"""
from __future__ import annotations

import numpy as np

__all__ = ["NativeTreeModel", "NativeTreeRegressor", "NativeTreeClassifier", "native_model", "file_bytes"]


#: how each boosting library spells its name
LIBRARY_NAMES = {"xgboost": "XGBoost", "lightgbm": "LightGBM", "catboost": "CatBoost"}


def library_label(library: str) -> str:
    """How a boosting library spells its name (``"xgboost"`` -> ``"XGBoost"``)."""
    return LIBRARY_NAMES.get(library, library)


def file_bytes(data, library: str, reader: str) -> bytes:
    """A model file's bytes as a reader takes them: refused (InvalidModelError) when they
    are not bytes, or over the ``model_bytes`` limit, before anything parses them."""
    from .. import limits
    from ..errors import InvalidModelError

    if isinstance(data, str):
        data = data.encode("utf-8")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidModelError(f"{reader} reads the bytes of a {library} model file; got {type(data).__name__}.")
    if len(data) > limits.limit("model_bytes"):
        raise InvalidModelError(f"The {library} model file holds {limits.fmt('model_bytes', len(data))}, "
                                f"{limits.over('model_bytes')}.")
    return bytes(data)


class NativeTreeModel:
    """A tree ensemble read from a library's model file.

    Attributes
    ----------
    ensemble : TreeEnsemble
        The parsed trees; tree engines read it directly.
    library : str
        ``"xgboost"``, ``"lightgbm"`` or ``"catboost"``.
    objective : str
        The library's objective as written in the file (``"binary:logistic"``...).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only where the file names its features.
    importances : dict
        The library's own importances by name (``"gain"``, ``"cover"``,
        ``"split count"``), each an array over the input columns.
    notes : tuple of str
        What the reader wants the user to know (e.g. features named by position).
    source_format : str
        ``"xgboost json"``, ``"xgboost ubj"``, ``"lightgbm text"``, ``"catboost json"``...
    """

    _estimator_type = None

    def __init__(self, ensemble, *, library: str, objective: str, feature_names=None,
                 importances=None, notes=(), source_format: str = ""):
        self.ensemble = ensemble
        self.library = library
        self.objective = objective
        self.n_features_in_ = int(ensemble.n_features)
        if feature_names is not None:
            names = [str(n) for n in feature_names]
            if len(names) != self.n_features_in_:
                from ..errors import InvalidModelError

                raise InvalidModelError(
                    f"The {library} model file names {len(names)} features but its trees read "
                    f"{self.n_features_in_} columns; the file is damaged."
                )
            self.feature_names_in_ = np.asarray(names, dtype=object)
        self.importances = dict(importances or {})
        self.notes = tuple(notes)
        self.source_format = source_format

    def _inputs(self, X):
        if hasattr(X, "iloc"):
            return X
        arr = np.asarray(X)
        if arr.ndim != 2 or arr.shape[1] != self.n_features_in_:
            from ..errors import InvalidDataError

            raise InvalidDataError(
                f"This {self.library} model reads {self.n_features_in_} columns; got an array of shape {arr.shape}."
            )
        return arr

    def predict_raw(self, X) -> np.ndarray:
        """The raw margin: ``base + sum of leaf values``, shape (n, n_raw)."""
        return self.ensemble.predict_raw(self._inputs(X))

    @property
    def display_name(self) -> str:
        return self.ensemble.model_name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.ensemble.model_name}, objective={self.objective!r})"

    def __sklearn_is_fitted__(self) -> bool:
        return True

    def fit(self, *args, **kwargs):
        """Not here: the trees were read from the library's own model; fit in the library.
        (Present so that scikit-learn takes the model as a fitted estimator, e.g. as a
        Pipeline's last step.)"""
        from ..errors import InvalidModelError

        raise InvalidModelError(f"This {self.library} model was read from its saved trees and cannot be "
                                f"fitted here; fit the {self.library} model itself and explain that.")

    def __sklearn_tags__(self):
        """scikit-learn's tags (its is_classifier / is_regressor read them)."""
        from sklearn.utils import ClassifierTags, RegressorTags, Tags, TargetTags

        tags = Tags(estimator_type=self._estimator_type, target_tags=TargetTags(required=True))
        if self._estimator_type == "classifier":
            tags.classifier_tags = ClassifierTags()
        else:
            tags.regressor_tags = RegressorTags()
        return tags


class NativeTreeRegressor(NativeTreeModel):
    """A regression (or ranking, or log-link count) model from a library file."""

    _estimator_type = "regressor"

    def predict(self, X) -> np.ndarray:
        return self.ensemble.predict(self._inputs(X))[:, 0]


class NativeTreeClassifier(NativeTreeModel):
    """A binary or multiclass classifier from a library file."""

    _estimator_type = "classifier"

    def __init__(self, ensemble, *, classes, **kw):
        super().__init__(ensemble, **kw)
        self.classes_ = np.asarray(classes)
        if len(self.classes_) != ensemble.n_outputs:
            from ..errors import InvalidModelError

            raise InvalidModelError(
                f"The {self.library} model file lists {len(self.classes_)} classes but its trees give "
                f"{ensemble.n_outputs} outputs; the file is damaged."
            )

    def predict_proba(self, X) -> np.ndarray:
        return self.ensemble.predict(self._inputs(X))

    def predict(self, X) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def decision_function(self, X) -> np.ndarray:
        """The raw margin (log-odds for binary, one column per class for multiclass)."""
        raw = self.predict_raw(X)
        return raw[:, 0] if raw.shape[1] == 1 else raw


def native_model(ensemble, *, task: str, classes=None, **kw) -> NativeTreeModel:
    """Wrap a parsed ensemble: a classifier for ``task="classification"`` (with
    ``classes``, default ``0 .. n_outputs - 1``), a regressor otherwise."""
    if task == "classification":
        if classes is None:
            classes = np.arange(ensemble.n_outputs)
        return NativeTreeClassifier(ensemble, classes=classes, **kw)
    return NativeTreeRegressor(ensemble, **kw)
