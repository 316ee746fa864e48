"""Input handling shared by the SHAP explainers.

Everything here runs after the public entry point validated its options:
building the adapter, the background, the missing-feature mask, and the
batched evaluation of coalitions (the interventional value function of eq. 16
of the SHAP seed) that ExactShap and KernelShap both need.
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Callable, Iterator

import numpy as np
import pandas as pd

from ..errors import ExplainerError, InvalidDataError, InvalidParameterError, param_error
from ..model import ModelAdapter, mix_rows

#: default number of background rows drawn from X when no background is given
DEFAULT_BACKGROUND_ROWS = 100
#: above this many background rows the model-agnostic explainers warn: every
#: coalition costs one model evaluation per background row
LARGE_BACKGROUND_ROWS = 300
#: synthetic rows built and sent to the model per batch; bounds memory
#: (2**18 rows of 10 float features is about 20 MB)
DEFAULT_BATCH_ROWS = 2**18

Progress = Callable[[int, int], None]


# --------------------------------------------------------------------- checks
def check_int(value, name: str, func: str, low: int, high: int | None = None) -> int:
    """Validate an int option with the shared message template."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if ok and value >= low and (high is None or value <= high):
        return int(value)
    rng = f">= {low}" if high is None else f"in [{low}, {high}]"
    raise param_error(name, func, f"an int {rng}", value)


def check_progress(progress, func: str) -> Progress | None:
    if progress is not None and not callable(progress):
        raise param_error("progress", func, "None or a callable(done_rows, total_rows)", progress)
    return progress


def check_random_state(random_state, func: str) -> int:
    """Return an int seed; None draws one (so one call stays self-consistent)."""
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1)[0])
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state >= 0:
            return int(random_state)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**31 - 1))
    raise param_error(
        "random_state", func, "None, an int >= 0 or a numpy Generator", random_state
    )


def make_adapter(model, *, feature_names, output: str, class_index) -> ModelAdapter:
    """One adapter per explainer; an adapter passed in is re-wrapped with these options."""
    if isinstance(model, ModelAdapter):
        feature_names = model.feature_names if feature_names is None else feature_names
    return ModelAdapter(model, feature_names=feature_names, output=output, class_index=class_index)


def as_frame(adapter: ModelAdapter, X, what: str = "X") -> pd.DataFrame:
    """X as a DataFrame in the model's column order, rows renumbered 0..n-1."""
    try:
        frame = adapter.to_frame(X)
    except InvalidDataError as exc:
        raise InvalidDataError(f"{what}: {exc}") from None
    if len(frame) == 0:
        raise InvalidDataError(f"{what} has no rows; pass at least one row to explain.")
    return frame.reset_index(drop=True)


def resolve_nan_is_missing(adapter: ModelAdapter, frame: pd.DataFrame, nan_is_missing) -> tuple[bool, str]:
    """Decide whether empty cells become missing features; return (decision, why).

    ``True`` / ``False`` are taken as given. ``"auto"`` keeps empty cells as
    values the model receives (its own prediction is explained) when the model
    takes them, which :meth:`ModelAdapter.accepts_nan` checks on the rows that
    have them; a model that cannot take them has them masked instead.
    """
    if isinstance(nan_is_missing, str):
        if nan_is_missing != "auto":
            raise InvalidParameterError(
                f"nan_is_missing must be True, False or 'auto'; got {nan_is_missing!r}."
            )
        holes = frame.isna().to_numpy()
        if not holes.any():
            return False, "no empty cells"
        if adapter.accepts_nan(frame[holes.any(axis=1)]):
            return False, "the model takes empty cells itself: they are explained as values it receives"
        return True, "the model cannot take empty cells, so they are treated as missing features"
    if not isinstance(nan_is_missing, (bool, np.bool_)):
        raise InvalidParameterError(
            f"nan_is_missing must be True, False or 'auto'; got {nan_is_missing!r}."
        )
    return bool(nan_is_missing), "requested"


def missing_mask(adapter: ModelAdapter, frame: pd.DataFrame, missing, nan_is_missing) -> np.ndarray:
    """Combine an explicit mask and NaN cells into one (n, p) bool array
    (``nan_is_missing`` already resolved, see :func:`resolve_nan_is_missing`)."""
    mask = adapter.missing_mask(missing, len(frame))
    if nan_is_missing:
        mask |= frame.isna().to_numpy()
    return mask


def default_background(frame: pd.DataFrame, random_state: int, max_rows: int = DEFAULT_BACKGROUND_ROWS) -> pd.DataFrame:
    """A seeded sample of the explained rows, without rows that hold NaN.

    Rows with NaN are dropped because their NaN would be fed to the model
    whenever the feature is marginalised.
    """
    complete = frame[~frame.isna().any(axis=1)]
    if len(complete) == 0:
        raise InvalidDataError(
            "No background was given and every row of X has a missing value, so none can "
            "serve as background. Pass background= with complete rows (e.g. training data)."
        )
    if len(complete) <= max_rows:
        return complete.reset_index(drop=True)
    rng = np.random.default_rng(random_state)
    idx = np.sort(rng.choice(len(complete), size=max_rows, replace=False))
    return complete.iloc[idx].reset_index(drop=True)


def prepare_background(
    adapter: ModelAdapter,
    background,
    X_frame: pd.DataFrame | None,
    *,
    random_state: int,
    func: str,
    warn_large: bool = True,
) -> tuple[pd.DataFrame, str]:
    """Return (background frame, where it came from)."""
    if background is None:
        if X_frame is None:
            raise ExplainerError(f"{func} needs a background or rows to sample one from.")
        return default_background(X_frame, random_state), "sample of X"
    try:
        bg = adapter.to_frame(background)
    except InvalidDataError as exc:
        raise InvalidDataError(
            f"The background data does not fit the model: {exc} The background must have "
            "the same columns as the explained rows."
        ) from None
    if len(bg) == 0:
        raise InvalidDataError("The background data has no rows; pass at least one row.")
    if warn_large and len(bg) > LARGE_BACKGROUND_ROWS:
        warnings.warn(
            f"{func}: a background of {len(bg)} rows costs {len(bg)} model evaluations per "
            "coalition and row. A sample of about 100 rows is usually enough, e.g. "
            "background.sample(100, random_state=0).",
            UserWarning,
            stacklevel=4,
        )
    return bg.reset_index(drop=True), "given"


def check_background_columns(adapter: ModelAdapter, background) -> None:
    """Fail early (at construction) if a background cannot fit the model."""
    if background is None:
        return
    try:
        adapter.to_frame(background)
    except InvalidDataError as exc:
        raise InvalidDataError(
            f"The background data does not fit the model: {exc} The background must have "
            "the same columns as the explained rows."
        ) from None


def pattern_groups(mask: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Group rows by missing pattern: [(present feature indices, row indices)].

    Rows with the same pattern play the same game, so they share one
    coalition matrix and one weight matrix.
    """
    patterns, inverse = np.unique(mask, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    return [(np.flatnonzero(~pat), np.flatnonzero(inverse == g)) for g, pat in enumerate(patterns)]


def row_chunks(rows: np.ndarray, per_chunk: int) -> Iterator[np.ndarray]:
    for s in range(0, len(rows), per_chunk):
        yield rows[s : s + per_chunk]


def as_2d(out: np.ndarray) -> np.ndarray:
    """Adapter output (n,) or (n, k) -> (n, k)."""
    return out.reshape(len(out), -1)


def shape_output(arr: np.ndarray, multi: bool) -> np.ndarray:
    """(..., k) -> (...) when the model has one output."""
    return arr if multi else arr[..., 0]


# ----------------------------------------------------------- value function
class CoalitionGame:
    """Evaluate v(S) = mean_b f(x_S, b_~S) for many rows and coalitions at once.

    Parameters
    ----------
    adapter : ModelAdapter
    background : DataFrame of shape (B, p)
    batch_rows : int
        Synthetic rows per model call.
    """

    def __init__(self, adapter: ModelAdapter, background: pd.DataFrame, batch_rows: int):
        self.adapter = adapter
        self.bg = background
        self.B = len(background)
        self.batch_rows = int(batch_rows)
        self.names = list(background.columns)
        self.dtypes = list(background.dtypes)
        # numbers only: one vectorised np.where builds every synthetic row;
        # otherwise columns are built one by one so dtypes (categories) survive
        self.numeric = all(
            pd.api.types.is_numeric_dtype(t) and not isinstance(t, pd.CategoricalDtype)
            for t in self.dtypes
        )
        self.layers = self.trees = None
        if self.numeric:
            # C order: pandas hands out column-major arrays, and np.where
            # would then build the synthetic rows column-major too (a copy later)
            self.bg_arr = np.ascontiguousarray(background.to_numpy(dtype=float))
            # small networks and linear models: no synthetic rows (see _layer_game)
            from ._layer_game import LayerGame

            self.layers = LayerGame.build(adapter, background, self.batch_rows)
            if self.layers is None:  # tree models: a compiled predict (see _tree_game)
                from ._tree_game import TreePredictor

                self.trees = TreePredictor.build(adapter)
        self._base = None

    @property
    def evaluation(self) -> str:
        """How coalitions are evaluated: "network layers", "tree walk" or "predict"."""
        if self.layers is not None:
            return "network layers (no synthetic rows)"
        if self.trees is not None:
            return "compiled tree walk"
        return "model predict on synthetic rows"

    def base(self) -> np.ndarray:
        """phi_0 = mean over the background of f, shape (k,)."""
        if self._base is None:
            self._base = as_2d(self.adapter.predict(self.bg)).mean(axis=0)
        return self._base

    def rows_per_chunk(self, n_coalitions: int) -> int:
        return max(1, self.batch_rows // max(1, n_coalitions * self.B))

    def _synth(self, x: pd.DataFrame, x_arr, Z: np.ndarray) -> pd.DataFrame | np.ndarray:
        """Synthetic rows (r, c, B) flattened: x where Z is True, background elsewhere."""
        r, c, B = len(x), len(Z), self.B
        if self.numeric:
            arr = np.where(Z[None, :, None, :], x_arr[:, None, None, :], self.bg_arr[None, None, :, :])
            return pd.DataFrame(arr.reshape(r * c * B, -1), columns=self.names, copy=False)
        return mix_rows(x, self.bg, Z[None, :, :])

    def values(self, x: pd.DataFrame, Z: np.ndarray) -> np.ndarray:
        """v for every row of x and coalition row of Z.

        Parameters
        ----------
        x : DataFrame of shape (r, p)
        Z : bool ndarray of shape (c, p)
            True where the feature comes from x.

        Returns
        -------
        ndarray of shape (r, c, k)
        """
        r, c = len(x), len(Z)
        k = len(self.base())
        out = np.empty((r, c, k))
        count = Z.sum(axis=1)
        empty = count == 0
        full = count == Z.shape[1]
        # v(empty) is the base for every row; v(full) needs one row, not B
        out[:, empty, :] = self.base()
        if full.any():
            out[:, full, :] = as_2d(self.adapter.predict(x))[:, None, :]
        mid = np.flatnonzero(~empty & ~full)
        if len(mid) == 0:
            return out
        if self.layers is not None:
            v = self.layers.values(x, Z[mid])
            if v is not None:
                out[:, mid, :] = v
                return out
        x_arr = np.ascontiguousarray(x.to_numpy(dtype=float)) if self.numeric else None
        # coalitions per model call for one row; rows are split by the caller
        per_call = max(1, self.batch_rows // max(1, r * self.B))
        ci = self.adapter.class_index
        for s in range(0, len(mid), per_call):
            cols = mid[s : s + per_call]
            if self.trees is not None:  # all of the adapter's columns: pick the class here
                if self.trees.game_fits(len(cols)):
                    pred = self.trees.game_values(x_arr, self.bg_arr, Z[cols])
                else:
                    arr = np.where(Z[cols][None, :, None, :], x_arr[:, None, None, :], self.bg_arr[None, None, :, :])
                    pred = self.trees.predict(arr.reshape(r * len(cols) * self.B, -1))
                if ci is not None:
                    pred = pred[..., ci : ci + 1]
            else:
                pred = as_2d(self.adapter.predict(self._synth(x, x_arr, Z[cols])))
            out[:, cols, :] = pred.reshape(r, len(cols), self.B, k).mean(axis=2)
        return out


def subsets_matrix(M: int) -> np.ndarray:
    """All 2**M subsets of M players as a bool matrix (2**M, M), in binary order."""
    codes = np.arange(2**M, dtype=np.int64)
    return ((codes[:, None] >> np.arange(M, dtype=np.int64)[None, :]) & 1).astype(bool)


def lift(Zp: np.ndarray, present: np.ndarray, p: int) -> np.ndarray:
    """Coalitions over the present players -> bool matrix over all p features."""
    Z = np.zeros((len(Zp), p), dtype=bool)
    Z[:, present] = Zp
    return Z


def log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def shapley_weight_matrix(M: int) -> np.ndarray:
    """Matrix W of shape (2**M, M) with phi = W.T @ v for the subsets of :func:`subsets_matrix`
    (exact SHAP values and exact interaction values both read it).

    ``W[S, i] = |S-1|! (M-|S|)! / M!`` if i is in S (the coalition with i) and
    ``-|S|! (M-|S|-1)! / M!`` if not (the coalition without i), so that the
    product sums ``w(S) [v(S + i) - v(S)]`` over every S that lacks i.
    """
    Z = subsets_matrix(M)
    size = Z.sum(axis=1)
    # w(t) = t! (M-t-1)! / M! = 1 / (M * C(M-1, t)); logs avoid overflow for big M
    w = np.array([np.exp(-np.log(M) - log_comb(M - 1, t)) for t in range(M)])
    with_i = w[np.clip(size - 1, 0, M - 1)][:, None]
    without_i = w[np.clip(size, 0, M - 1)][:, None]
    return np.where(Z, with_i, -without_i)


def output_label(adapter: ModelAdapter) -> str:
    """What the adapter's numbers are: raw / proba / log_odds / margin."""
    if adapter.task == "regression":
        return "raw"
    if adapter.output in ("auto", "proba"):
        return "proba"
    if adapter.output == "log_odds":
        return "log_odds"
    # output="raw" on a classifier: decision_function when there is one
    if not hasattr(adapter.model, "decision_function"):
        return "proba"
    return "log_odds" if is_logistic(adapter.model) and adapter.task == "binary" else "margin"


def is_logistic(model) -> bool:
    """True if the model's decision_function is the log-odds of predict_proba."""
    est = model.steps[-1][1] if hasattr(model, "steps") else model
    name = type(est).__name__
    if name in ("LogisticRegression", "LogisticRegressionCV"):
        return True
    if name == "SGDClassifier" and getattr(est, "loss", None) == "log_loss":
        return True
    # boosting classifiers' decision_function is the raw log-odds score too
    return name in ("GradientBoostingClassifier", "HistGradientBoostingClassifier")


# ------------------------------------------------------------ base explainer
class BackgroundExplainer:
    """Shared set-up and row loop of the model-agnostic explainers.

    Subclasses define ``method``, ``_plan(present)`` (the coalitions and
    weights for one missing pattern) and ``_solve(plan, game, x)``.
    """

    method = ""
    _func = ""

    def __init__(self, model, background, *, output, class_index, feature_names, batch_rows):
        self.adapter = make_adapter(
            model, feature_names=feature_names, output=output, class_index=class_index
        )
        self.batch_rows = check_int(batch_rows, "batch_rows", self._func, 1)
        check_background_columns(self.adapter, background)
        self.background = background

    # hooks ---------------------------------------------------------------
    def _check_cost(self, p: int, B: int) -> None:  # pragma: no cover - overridden
        pass

    def _plan(self, present: np.ndarray, p: int):  # pragma: no cover - overridden
        raise NotImplementedError

    def _n_coalitions(self, plan) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def _solve(self, plan, game: CoalitionGame, x: pd.DataFrame):  # pragma: no cover
        raise NotImplementedError

    def _params(self) -> dict:
        return {}

    # driver --------------------------------------------------------------
    def _run(self, X, missing, nan_is_missing, progress, random_state: int):
        from .result import ShapResult

        func = f"{self._func}.explain"
        progress = check_progress(progress, func)
        adapter = self.adapter
        frame = as_frame(adapter, X)
        nan_is_missing, nan_reason = resolve_nan_is_missing(adapter, frame, nan_is_missing)
        mask = missing_mask(adapter, frame, missing, nan_is_missing)
        bg, source = prepare_background(
            adapter, self.background, frame, random_state=random_state, func=self._func
        )
        n, p = frame.shape
        self._check_cost(p, len(bg))
        game = CoalitionGame(adapter, bg, self.batch_rows)
        self._sizes_used: set[int] = set()  # player counts seen in this call (for params)
        base = game.base()
        k = len(base)
        values = np.zeros((n, p, k))
        preds = np.empty((n, k))
        done = 0
        for present, rows in pattern_groups(mask):
            if len(present) == 0:
                # nobody plays: no attribution, and f_S is the base value
                preds[rows] = base
                chunks = [rows]
            else:
                self._sizes_used.add(len(present))
                plan = self._plan(present, p)
                chunks = row_chunks(rows, game.rows_per_chunk(self._n_coalitions(plan)))
            for chunk in chunks:
                if len(present):
                    phi, pred = self._solve(plan, game, frame.iloc[chunk])
                    values[np.ix_(chunk, present)] = phi
                    preds[chunk] = pred
                done += len(chunk)
                if progress is not None:
                    progress(done, n)
        multi = adapter.n_outputs > 1
        params = {
            "n_background": len(bg),
            "background": source,
            "nan_is_missing": bool(nan_is_missing),
            "nan_reason": nan_reason,
            "class_index": adapter.class_index,
            "batch_rows": self.batch_rows,
            "evaluation": game.evaluation,
            "reason": "requested",
            **self._params(),
        }
        return ShapResult(
            values=shape_output(values, multi),
            base_values=shape_output(np.repeat(base[None, :], n, axis=0), multi),
            predictions=shape_output(preds, multi),
            feature_names=list(adapter.feature_names),
            missing=mask,
            method=self.method,
            output=output_label(adapter),
            output_names=list(adapter.output_names),
            data=frame.copy(),
            params=params,
        )
