"""Exact SHAP values from the definition (eq. 17 of the SHAP seed).

Each row's game is evaluated on all 2**M coalitions of its M present
features at once, with the interventional value function over the
background (eq. 16); the Shapley weights are then applied as one matrix
product instead of one loop per feature as in the seed. Rows that share a
missing pattern share the coalition and weight matrices.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import InvalidParameterError
from ._common import (
    DEFAULT_BATCH_ROWS,
    BackgroundExplainer,
    CoalitionGame,
    Progress,
    check_int,
    check_random_state,
    lift,
    shapley_weight_matrix,
    subsets_matrix,
)
from .result import ShapResult

__all__ = ["ExactShap", "MAX_EXACT_EVALS", "shapley_weight_matrix"]

#: Largest 2**n_features x n_background (model evaluations per explained row)
#: ExactShap accepts by default: 15 features with 100 background rows pass
#: (3.3 M), 16 do not. Beyond it use KernelShap, or TreeShap for tree models.
MAX_EXACT_EVALS = 2**22


class ExactShap(BackgroundExplainer):
    """Exact interventional SHAP values for any model, by enumerating coalitions.

    Parameters
    ----------
    model : object
        A fitted model (see :class:`~explainers.ModelAdapter`).
    background : DataFrame or array-like of shape (n_background, n_features), default=None
        Rows that stand in for missing features. ``None`` draws a seeded
        sample of up to 100 complete rows of the X passed to :meth:`explain`.
    output : {"auto", "raw", "proba", "log_odds"}, default="auto"
        What to explain (see :class:`~explainers.ModelAdapter`); for
        classifiers ``"auto"`` explains each class probability.
    class_index : int, default=None
        Explain only this output column (class position).
    feature_names : sequence of str, default=None
        Feature names when the model does not carry them.
    max_evals : int, default=MAX_EXACT_EVALS
        Refuse when 2**n_features x n_background exceeds this.
    batch_rows : int, default=2**18
        Synthetic rows per model call (bounds memory).

    See Also
    --------
    KernelShap : sampled coalitions, for more features.
    LinearShap : closed form for linear models.

    Examples
    --------
    >>> res = ExactShap(model, X_train[:100]).explain(X_test[:5])
    >>> res.check_additivity()
    """

    method = "exact"
    _func = "ExactShap"

    def __init__(
        self,
        model,
        background=None,
        *,
        output: str = "auto",
        class_index: int | None = None,
        feature_names: Sequence[str] | None = None,
        max_evals: int = MAX_EXACT_EVALS,
        batch_rows: int = DEFAULT_BATCH_ROWS,
    ):
        self.max_evals = check_int(max_evals, "max_evals", "ExactShap", 1)
        super().__init__(
            model,
            background,
            output=output,
            class_index=class_index,
            feature_names=feature_names,
            batch_rows=batch_rows,
        )
        names = self.adapter.feature_names
        if background is not None and names is not None:
            self._check_cost(len(names), len(self.adapter.to_frame(background)))
        self._weights: dict[int, np.ndarray] = {}

    def _check_cost(self, p: int, B: int) -> None:
        evals = 2**p * B
        if evals > self.max_evals:
            raise InvalidParameterError(
                f"ExactShap needs 2**{p} coalitions x {B} background rows = {evals:,} model "
                f"evaluations per explained row, more than max_evals={self.max_evals:,}. "
                "Use KernelShap (sampled coalitions) instead, or TreeShap for a tree model; "
                "or pass a smaller background, or raise max_evals."
            )

    def _plan(self, present: np.ndarray, p: int):
        M = len(present)
        if M not in self._weights:
            self._weights[M] = shapley_weight_matrix(M)
        return lift(subsets_matrix(M), present, p), self._weights[M]

    def _n_coalitions(self, plan) -> int:
        return len(plan[0])

    def _solve(self, plan, game: CoalitionGame, x: pd.DataFrame):
        Z, W = plan
        v = game.values(x, Z)  # (r, 2**M, k)
        phi = np.einsum("rsk,si->rik", v, W)
        # the last subset is the full coalition of present features: f_S(x_S)
        return phi, v[:, -1, :]

    def _params(self) -> dict:
        return {"max_evals": self.max_evals}

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
            Features to leave out of the game. Their attribution is exactly 0
            and the explained prediction is f_S(x_S), marginalised over the
            background.
        nan_is_missing : bool, default=True
            Also treat NaN cells of X as missing.
        progress : callable(done_rows, total_rows), default=None
            Called after each chunk of rows.
        random_state : int, default=0
            Seed of the background sample when no background was given.

        Returns
        -------
        ShapResult

        Raises
        ------
        InvalidParameterError
            If 2**n_features x n_background exceeds ``max_evals``.
        InvalidFeatureError, InvalidDataError
            For a bad mask or data that does not fit the model.
        """
        seed = check_random_state(random_state, "ExactShap.explain")
        return self._run(X, missing, nan_is_missing, progress, seed)

    def interactions(
        self,
        X,
        missing=None,
        *,
        nan_is_missing: bool | str = "auto",
        progress: Progress | None = None,
        random_state: int | None = 0,
    ):
        """SHAP interaction values of the interventional game, from all coalitions.

        Parameters are those of :meth:`explain`. For at most 16 present features
        (and 2**features x n_background <= ``max_evals``).

        Returns
        -------
        ShapInteractionResult
            ``values`` of shape (n_rows, n_features, n_features[, n_outputs]);
            each matrix row sums to ``explain(X, missing).values``.

        Raises
        ------
        InvalidParameterError
            For too many features: use ``TreeShap(model).interactions`` for tree models.
        """
        from .interactions import exact_interactions

        return exact_interactions(self, X, missing, nan_is_missing=nan_is_missing,
                                  progress=progress, random_state=random_state)
