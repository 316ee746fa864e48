"""A deliberately slow model for the batch kill-and-resume test.

It lives in an importable module so that a pickled instance loads in a
separate ``python -m explainers`` process (started from the repository root).
"""
import time

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin


class SlowLinearRegressor(RegressorMixin, BaseEstimator):
    """y = X @ coef, sleeping ``delay`` seconds per predict call.

    The sum is taken elementwise (not through BLAS), so each row's prediction
    does not depend on how many rows are predicted together.
    """

    def __init__(self, delay: float = 0.02):
        self.delay = delay

    def fit(self, X, y):
        Xa = np.asarray(X, dtype=float)
        self.coef_ = np.linalg.lstsq(Xa, np.asarray(y, dtype=float), rcond=None)[0]
        self.n_features_in_ = Xa.shape[1]
        if hasattr(X, "columns"):
            self.feature_names_in_ = np.asarray([str(c) for c in X.columns], dtype=object)
        return self

    def predict(self, X):
        time.sleep(self.delay)
        return (np.asarray(X, dtype=float) * self.coef_).sum(axis=1)
