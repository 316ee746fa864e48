"""Linear SHAP: the closed form phi_j = b_j (x_j - mean_background(x_j)).

For ``f(x) = b_0 + sum_j b_j x_j`` the interventional value function is
additive, so every marginal contribution of feature j is the same
``b_j (x_j - mean_b x_j)`` and that is its Shapley value (eq. 22 of the SHAP
seed). Classifiers are explained in their decision-function space, where they
are linear: the log-odds for a binary logistic regression, one column per
class for a multiclass one. A Pipeline of affine scalers followed by a linear
model is folded into one set of coefficients on the original features.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import InvalidDataError, InvalidModelError, param_error
from ..linear import is_linear_model, linear_coefficients
from ..model import ModelAdapter, detect_task
from ._common import (
    resolve_nan_is_missing,
    DEFAULT_BATCH_ROWS,
    Progress,
    as_frame,
    check_background_columns,
    check_int,
    check_progress,
    check_random_state,
    is_logistic,
    make_adapter,
    missing_mask,
    prepare_background,
    row_chunks,
    shape_output,
)
from .result import ShapResult

__all__ = ["LinearShap", "is_linear_model", "linear_coefficients"]

class LinearShap:
    """Exact SHAP values of a linear model in closed form.

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted linear model, or a Pipeline of affine scalers ending in one
        (see :func:`linear_coefficients`).
    background : DataFrame or array-like of shape (n_background, n_features), default=None
        Rows whose mean stands in for missing features. ``None`` draws a
        seeded sample of up to 100 complete rows of the X passed to :meth:`explain`.
    class_index : int, default=None
        For a multiclass classifier, explain only this decision column; for
        a binary one, 1 (the default) explains the log-odds of ``classes_[1]``
        and 0 those of ``classes_[0]`` (the same values negated).
    feature_names : sequence of str, default=None
    batch_rows : int, default=2**18
        Synthetic rows per model call when rows with missing features are
        predicted (marginalised over the background).

    Notes
    -----
    Regressors are explained in their prediction (``output="raw"``);
    classifiers in their decision function: the log-odds of the positive class
    for a binary logistic model (``output="log_odds"``), one column per class
    for a multiclass one (``output="margin"``). Probabilities are not linear
    in the features: use ExactShap or KernelShap for them.

    Examples
    --------
    >>> res = LinearShap(LinearRegression().fit(X, y), X).explain(X[:3])
    """

    method = "linear"

    def __init__(
        self,
        model,
        background=None,
        *,
        class_index: int | None = None,
        feature_names: Sequence[str] | None = None,
        batch_rows: int = DEFAULT_BATCH_ROWS,
    ):
        base_model = model.model if isinstance(model, ModelAdapter) else model
        coef, intercept = linear_coefficients(base_model)
        # a binary model has one decision column, the log-odds of classes_[1];
        # class_index=0 asks for the other class: the same column negated
        self._sign = 1.0
        self._binary_class = None
        if detect_task(base_model) == "binary" and class_index is not None:
            if isinstance(class_index, bool) or class_index not in (0, 1):
                raise param_error("class_index", "LinearShap", "0 or 1 for a binary model", class_index)
            self._sign = 1.0 if class_index == 1 else -1.0
            self._binary_class = int(class_index)
            class_index = None
        self.adapter = make_adapter(model, feature_names=feature_names, output="raw", class_index=class_index)
        if self.adapter.feature_names is not None and coef.shape[1] != len(self.adapter.feature_names):
            raise InvalidModelError(
                f"The model has {coef.shape[1]} coefficients but {len(self.adapter.feature_names)} "
                "input features."
            )
        if self.adapter.class_index is not None:
            coef, intercept = coef[[self.adapter.class_index]], intercept[[self.adapter.class_index]]
        coef, intercept = coef * self._sign, intercept * self._sign
        self.coef, self.intercept = coef, intercept
        self.batch_rows = check_int(batch_rows, "batch_rows", "LinearShap", 1)
        check_background_columns(self.adapter, background)
        self.background = background

    def _output(self) -> str:
        a = self.adapter
        if a.task == "regression":
            return "raw"
        if a.task == "binary" and is_logistic(a.model):
            return "log_odds"
        return "margin"

    def explain(
        self,
        X,
        missing=None,
        *,
        nan_is_missing: bool | str = "auto",
        progress: Progress | None = None,
        random_state: int | None = 0,
    ) -> ShapResult:
        """Explain rows of X.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_rows, n_features)
        missing : bool array of shape (n_features,) or (n_rows, n_features), or feature names, default=None
            Features to leave out: their attribution is exactly 0 and the
            explained prediction is f_S(x_S), marginalised over the background.
        nan_is_missing : bool, default=True
            Also treat NaN cells of X as missing.
        progress : callable(done_rows, total_rows), default=None
        random_state : int, default=0
            Seed of the background sample when no background was given.

        Returns
        -------
        ShapResult

        Raises
        ------
        InvalidDataError
            Non-numeric columns, NaN in the background, or NaN in X while
            ``nan_is_missing=False``.
        InvalidModelError
            If the model's predictions are not the linear form read from it.
        """
        progress = check_progress(progress, "LinearShap.explain")
        seed = check_random_state(random_state, "LinearShap.explain")
        adapter = self.adapter
        frame = as_frame(adapter, X)
        nan_is_missing, nan_reason = resolve_nan_is_missing(adapter, frame, nan_is_missing)
        mask = missing_mask(adapter, frame, missing, nan_is_missing)
        bg, source = prepare_background(
            adapter, self.background, frame, random_state=seed, func="LinearShap", warn_large=False
        )
        xa = _numeric(frame, "X")
        ba = _numeric(bg, "The background")
        if np.isnan(ba).any():
            raise InvalidDataError(
                "The background has NaN values; a linear model cannot average them. Drop or "
                "impute those rows."
            )
        bad = np.isnan(xa) & ~mask
        if bad.any():
            r, j = np.argwhere(bad)[0]
            raise InvalidDataError(
                f"X has NaN in {int(bad.sum())} cells that are not marked missing (first: row "
                f"{r}, feature {adapter.feature_names[j]!r}). Pass nan_is_missing=True to leave "
                "them out of the game, or impute them."
            )
        bg_pred = self._sign * adapter.predict(bg).reshape(len(bg), -1)
        self._check_linear(ba, bg_pred)
        base = bg_pred.mean(axis=0)  # (k,)
        mu = ba.mean(axis=0)
        contrib = (xa - mu)[:, :, None] * self.coef.T[None, :, :]  # (n, p, k)
        # where() rather than multiply: a NaN x must give exactly 0.0, not NaN
        values = np.where(mask[:, :, None], 0.0, contrib)
        n, k = len(frame), len(base)
        preds = np.empty((n, k))
        per_chunk = max(1, self.batch_rows // len(bg))
        done = 0
        for chunk in row_chunks(np.arange(n), per_chunk):
            m = mask[chunk]
            full = ~m.any(axis=1)
            if full.any():
                preds[chunk[full]] = self._sign * adapter.predict(frame.iloc[chunk[full]]).reshape(-1, k)
            if not full.all():
                part = chunk[~full]
                preds[part] = self._sign * adapter.predict_masked(frame.iloc[part], m[~full], bg).reshape(-1, k)
            done += len(chunk)
            if progress is not None:
                progress(done, n)
        multi = adapter.n_outputs > 1
        return ShapResult(
            values=shape_output(values, multi),
            base_values=shape_output(np.repeat(base[None, :], n, axis=0), multi),
            predictions=shape_output(preds, multi),
            feature_names=list(adapter.feature_names),
            missing=mask,
            method=self.method,
            output=self._output(),
            output_names=self._output_names(),
            data=frame.copy(),
            params={
                "n_background": len(bg),
                "background": source,
                "nan_is_missing": bool(nan_is_missing), "nan_reason": nan_reason,
                "class_index": adapter.class_index if self._binary_class is None else self._binary_class,
                "reason": "requested",
            },
        )

    def _output_names(self) -> list[str]:
        a = self.adapter
        if a.task == "binary":
            return [str(a.classes[1 if self._binary_class is None else self._binary_class])]
        return list(a.output_names)

    def _check_linear(self, ba: np.ndarray, pred: np.ndarray) -> None:
        """Refuse a model whose predict is not the linear form read from its coefficients."""
        lin = ba @ self.coef.T + self.intercept
        err = np.abs(lin - pred)
        tol = 1e-6 * (1.0 + np.abs(pred))
        if (err > tol).any():
            raise InvalidModelError(
                f"The model's outputs differ from its linear coefficients by up to "
                f"{err.max():.3g} on the background, so it is not linear in its inputs here. "
                "Use ExactShap or KernelShap."
            )


def _numeric(frame: pd.DataFrame, what: str) -> np.ndarray:
    try:
        return frame.to_numpy(dtype=float)
    except (TypeError, ValueError):
        bad = [c for c, t in frame.dtypes.items() if not pd.api.types.is_numeric_dtype(t)]
        raise InvalidDataError(
            f"{what} has non-numeric columns ({', '.join(map(str, bad[:5]))}); LinearShap "
            "needs numbers. Encode them in a Pipeline and use ExactShap or KernelShap."
        ) from None
