"""The result of every SHAP explainer: one frozen dataclass with fixed shapes."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ExplainerError, InvalidFeatureError, param_error

__all__ = ["ShapResult"]


@dataclass(frozen=True, eq=False)
class ShapResult:
    """SHAP attributions for a set of rows.

    The same fields, with the same meaning, come out of every explainer
    (:class:`~explainers.shap.LinearShap`, :class:`~explainers.shap.ExactShap`,
    :class:`~explainers.shap.KernelShap`, and TreeShap), so pages and checks
    never need to know which method ran.

    Attributes
    ----------
    values : ndarray of shape (n_rows, n_features) or (n_rows, n_features, n_outputs)
        Attributions phi_j. Exactly ``0.0`` where a feature is missing. The
        last axis exists only when the model has several outputs (class
        probabilities of a classifier, as shap does).
    base_values : ndarray of shape (n_rows,) or (n_rows, n_outputs)
        phi_0: the mean prediction over the background (the same for every row
        of one call, repeated so that shapes line up with ``values``).
    predictions : ndarray of shape (n_rows,) or (n_rows, n_outputs)
        The explained prediction f_S(x_S): the model output with the missing
        features marginalised over the background (the plain prediction when
        no feature is missing). ``base_values + values.sum(axis=1)`` equals it.
    feature_names : list of str
        One name per feature, in the model's order.
    missing : ndarray of bool, shape (n_rows, n_features)
        True where a feature was missing (masked out of the game).
    method : str
        ``"linear"``, ``"exact"``, ``"kernel"`` or ``"tree"``.
    output : str
        What was explained: ``"raw"`` (regression value), ``"proba"``,
        ``"log_odds"``, or ``"margin"`` (a decision function that is not a
        log-odds).
    output_names : list of str
        One label per output column (class labels for classifiers).
    data : DataFrame of shape (n_rows, n_features)
        The explained rows, as given (NaN kept), for labels and plots.
    params : dict
        The options the explainer ran with, and ``reason``: why this method
        was picked (see :func:`~explainers.shap.explain`).
    """

    values: np.ndarray
    base_values: np.ndarray
    predictions: np.ndarray
    feature_names: list
    missing: np.ndarray
    method: str
    output: str
    output_names: list
    data: pd.DataFrame
    params: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ shape
    @property
    def n_rows(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.values.shape[1])

    @property
    def n_outputs(self) -> int:
        """Number of output columns; 1 when ``values`` is 2-D."""
        return 1 if self.values.ndim == 2 else int(self.values.shape[2])

    def __len__(self) -> int:
        return self.n_rows

    def __repr__(self) -> str:
        return (
            f"ShapResult(method={self.method!r}, output={self.output!r}, "
            f"values.shape={self.values.shape}, n_missing={int(self.missing.sum())})"
        )

    # -------------------------------------------------------------- selection
    def _check_row(self, row: int, func: str = "ShapResult") -> int:
        if (
            isinstance(row, bool)
            or not isinstance(row, (int, np.integer))
            or not -self.n_rows <= row < self.n_rows
        ):
            raise param_error(
                "row", func, f"an int in [0, {self.n_rows - 1}] (one of the explained rows)", row
            )
        return int(row) % self.n_rows

    def _check_class(self, class_index: int | None, func: str = "ShapResult") -> int | None:
        if self.n_outputs == 1:
            if class_index not in (None, 0):
                raise param_error(
                    "class_index", func, "None or 0 for a result with one output", class_index
                )
            return None
        if class_index is None:
            return None
        if (
            isinstance(class_index, bool)
            or not isinstance(class_index, (int, np.integer))
            or not 0 <= class_index < self.n_outputs
        ):
            raise param_error(
                "class_index",
                func,
                f"an int in [0, {self.n_outputs - 1}] (outputs: {', '.join(self.output_names)})",
                class_index,
            )
        return int(class_index)

    def select(self, class_index: int) -> "ShapResult":
        """Return the result for one output column, with 2-D ``values``.

        Parameters
        ----------
        class_index : int
            Position of the output (class) in ``output_names``.

        Returns
        -------
        ShapResult
            ``values`` of shape (n_rows, n_features); ``self`` if there is
            only one output already.
        """
        if self.n_outputs == 1:
            self._check_class(class_index, "ShapResult.select")
            return self
        k = self._check_class(class_index, "ShapResult.select")
        if k is None:
            raise param_error(
                "class_index", "ShapResult.select", f"an int in [0, {self.n_outputs - 1}]", None
            )
        return replace(
            self,
            values=self.values[:, :, k],
            base_values=self.base_values[:, k],
            predictions=self.predictions[:, k],
            output_names=[self.output_names[k]],
            params={**self.params, "class_index": k},
        )

    def feature_index(self, feature: str | int) -> int:
        """Position of a feature given by name or index."""
        if isinstance(feature, (int, np.integer)) and not isinstance(feature, bool):
            if not 0 <= feature < self.n_features:
                raise InvalidFeatureError(
                    f"Feature index {feature} is out of range: the result has "
                    f"{self.n_features} features."
                )
            return int(feature)
        name = str(feature)
        if name not in self.feature_names:
            raise InvalidFeatureError(
                f"Unknown feature {name!r}. Known features: "
                f"{', '.join(self.feature_names[:20])}{' …' if self.n_features > 20 else ''}."
            )
        return self.feature_names.index(name)

    # ------------------------------------------------------------- invariants
    def additivity_error(self) -> np.ndarray:
        """``base_values + values.sum(1) - predictions``, shaped like ``predictions``."""
        return self.base_values + self.values.sum(axis=1) - self.predictions

    def check_additivity(self, atol: float = 1e-6, rtol: float = 1e-9) -> None:
        """Raise unless ``base_values + values.sum(1)`` equals ``predictions``.

        Parameters
        ----------
        atol, rtol : float
            Tolerances as in :func:`numpy.isclose` (relative to the prediction).

        Raises
        ------
        ExplainerError
            With the worst row, its numbers, and what to try.
        """
        err = np.abs(self.additivity_error())
        tol = atol + rtol * np.abs(self.predictions)
        bad = err > tol
        if not bad.any():
            return
        flat = int(np.argmax(np.where(bad, err, -np.inf)))
        idx = np.unravel_index(flat, err.shape)
        row = int(idx[0])
        total = self.base_values[idx] + self.values[(row, slice(None)) + tuple(idx[1:])].sum()
        where = f"row {row}" + (f", output {self.output_names[idx[1]]!r}" if len(idx) > 1 else "")
        raise ExplainerError(
            f"Additivity fails for {int(bad.sum())} of {bad.size} outputs: in {where} "
            f"base + sum(values) = {total:.10g} but the prediction is "
            f"{self.predictions[idx]:.10g} (error {err[idx]:.3g} > atol {atol:g}). "
            "Sampled KernelShap is only approximate in each phi but always additive, so this "
            "points at a model whose predictions change between calls, or at NaN inputs: "
            "check the model, or mark NaN features missing (nan_is_missing=True)."
        )

    # ----------------------------------------------------------- aggregation
    def mean_abs(self) -> np.ndarray:
        """Mean |phi| per feature over the rows: a global importance.

        Returns
        -------
        ndarray of shape (n_features,) or (n_features, n_outputs)
            Missing entries count as 0 (they are 0 in ``values``).
        """
        return np.abs(self.values).mean(axis=0)

    def to_frame(self) -> pd.DataFrame:
        """One tidy row per (row, output, feature), the same columns for every shape.

        Returns
        -------
        DataFrame
            Columns ``row``, ``output``, ``feature``, ``feature_value``,
            ``shap_value``, ``missing``, ``base_value``, ``prediction``.
        """
        n, p, k = self.n_rows, self.n_features, self.n_outputs
        vals = self.values.reshape(n, p, k)
        base = self.base_values.reshape(n, k)
        pred = self.predictions.reshape(n, k)
        # (n, p, k) order: row-major so that one row's features stay together
        rows = np.repeat(np.arange(n), p * k)
        feats = np.tile(np.repeat(np.arange(p), k), n)
        outs = np.tile(np.arange(k), n * p)
        fv = self.data.to_numpy(dtype=object)
        return pd.DataFrame(
            {
                "row": rows,
                "output": np.asarray(self.output_names, dtype=object)[outs],
                "feature": np.asarray(self.feature_names, dtype=object)[feats],
                "feature_value": fv[rows, feats],
                "shap_value": vals.reshape(-1),
                "missing": self.missing[rows, feats],
                "base_value": base[rows, outs],
                "prediction": pred[rows, outs],
            }
        )

    def to_csv(self, path_or_buf: Any = None, **kwargs) -> str | None:
        """Write :meth:`to_frame` as CSV (returns the text when no path is given)."""
        return self.to_frame().to_csv(path_or_buf, index=False, **kwargs)


@dataclass(frozen=True, eq=False)
class MeanAbsShap:
    """Mean |SHAP value| per feature over rows whose own values are not kept (every row of a
    large table, added up block by block): what :meth:`ShapResult.mean_abs` gives, for rows
    too many to hold.

    Attributes
    ----------
    mean : ndarray of shape (n_features,) or (n_features, n_outputs)
        Mean |phi| per feature (and output) over the rows.
    feature_names, output_names : list of str
    n_rows : int
        The rows averaged over.
    method, output : str
        As the results the means were added from.
    """

    mean: np.ndarray
    feature_names: list
    n_rows: int
    method: str
    output: str
    output_names: list = field(default_factory=list)
    params: dict = field(default_factory=dict)

    @property
    def n_outputs(self) -> int:
        return 1 if self.mean.ndim == 1 else int(self.mean.shape[1])

    _check_class = ShapResult._check_class

    def mean_abs(self) -> np.ndarray:
        return self.mean

    def select(self, class_index: int) -> "MeanAbsShap":
        """The means of one output column."""
        k = self._check_class(class_index, "MeanAbsShap.select")
        if k is None:
            return self
        return replace(self, mean=self.mean[:, k], output_names=[self.output_names[k]],
                       params={**self.params, "class_index": k})

    @classmethod
    def from_sum(cls, total: np.ndarray, n_rows: int, like: "ShapResult | MeanAbsShap") -> "MeanAbsShap":
        """The mean of ``total`` (sum of |values| over ``n_rows`` rows), named as ``like``."""
        return cls(mean=np.asarray(total, dtype=np.float64) / max(1, int(n_rows)), feature_names=list(like.feature_names),
                   n_rows=int(n_rows), method=like.method, output=like.output, output_names=list(like.output_names))
