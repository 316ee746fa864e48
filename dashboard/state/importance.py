"""The Importance page's cached computations: which methods apply to a model and their names,
each method's result, the comparison table, the segment's and the rest's importances, and the
notices for rows left out.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import streamlit as st

from explainers import ExplainerError

from .attribution import explain_sample, split_sample
from .cache import result_cache
from .context import ModelContext, error_message
from .outputs import target_output
from .rows import _seeded_rows, split_rows
from .worker import ProgressBar


IMPORTANCE_METHODS = {
    "mdi": "Mean decrease in impurity (MDI)",
    "oob": "Out-of-bag permutation (MDA)",
    "permutation": "Holdout permutation",
    "shap": "Mean |SHAP|",
}

#: a boosting library's own importance is method "library:<kind>" (kind: gain, cover, split count)
LIBRARY_METHOD = "library:"

#: the holdout permutation's scores, the default first: log loss and R² weigh every row's
#: prediction (accuracy barely moves on a rare class); the control's key (a URL parameter)
CLASSIFIER_SCORINGS = ("neg_log_loss", "roc_auc", "balanced_accuracy", "accuracy")
REGRESSOR_SCORINGS = ("r2", "neg_mean_absolute_error", "neg_root_mean_squared_error")
SCORING = "imp_scoring"

#: why MDI and out-of-bag importance do not apply to a model read from a library's file, in page words
_NATIVE_SKIPS = {
    "mdi": ("MDI reads the impurity decrease stored in scikit-learn's trees; this model comes from {lib}"
            "'s own model file, whose splits store its {kinds} instead. {counterpart}"),
    "oob": ("Out-of-bag importance needs a bagged forest (random forest or extra trees), whose trees each "
            "leave rows out; this model is {lib} boosting, read from its model file. The holdout "
            "permutation works for any model."),
}


def _library(ctx: ModelContext) -> str | None:
    """"XGBoost", "LightGBM" or "CatBoost" for a model read from a library's file, else None."""
    from explainers.importance.result import library_label
    from explainers.trees import NativeTreeModel

    return library_label(ctx.model.library) if isinstance(ctx.model, NativeTreeModel) else None


def importance_methods(ctx: ModelContext, with_shap: bool = False) -> list[str]:
    """The methods the Importance page and the report try, in order: MDI (or, for a model read
    from a boosting library's file, that library's gain, cover and split count beside it),
    out-of-bag and holdout permutation, and mean |SHAP| when asked for."""
    from explainers.importance import library_importance_kinds

    native = [LIBRARY_METHOD + kind for kind in library_importance_kinds(ctx.model)]
    return ["mdi", *native, "oob", "permutation"] + (["shap"] if with_shap else [])


def importance_label(ctx: ModelContext, method: str) -> str:
    """The method's name on the page: "XGBoost gain" for ``library:gain`` of an XGBoost model."""
    if method.startswith(LIBRARY_METHOD):
        return f"{_library(ctx)} {method[len(LIBRARY_METHOD):]}"
    return IMPORTANCE_METHODS[method]


def scoring_choices(ctx: ModelContext) -> list[str]:
    """The scores the holdout permutation offers for this model, its default first: log loss
    needs probabilities and ROC AUC two classes (else balanced accuracy leads)."""
    if ctx.task == "regression":
        return list(REGRESSOR_SCORINGS)
    proba = hasattr(ctx.model, "predict_proba")
    return [s for s in CLASSIFIER_SCORINGS
            if (s != "neg_log_loss" or proba) and (s != "roc_auc" or (ctx.task == "binary" and (
                proba or hasattr(ctx.model, "decision_function"))))]


def scoring_label(scoring: str) -> str:
    """A score's name on the page: "log loss" for ``neg_log_loss``."""
    from explainers.importance.scoring import SCORING_LABELS

    return SCORING_LABELS.get(scoring, scoring)


def permutation_scoring(ctx: ModelContext) -> str:
    """The score the session's holdout permutation uses (the Importance page's setting)."""
    from .session import value

    choices = scoring_choices(ctx)
    picked = value(SCORING)
    return picked if picked in choices else choices[0]


def importance(ctx: ModelContext, method: str, n_repeats: int, max_rows: int, progress=None):
    """One importance result, cached per model, data, method and settings (the permutation's
    score: :func:`permutation_scoring`)."""
    scoring = permutation_scoring(ctx) if method == "permutation" else None
    key = ("importance", ctx.model_key, ctx.data_key, method, n_repeats if method == "permutation" else 0,
           max_rows if method in ("permutation", "shap") else 0, target_output(ctx) if method == "permutation" else 0,
           scoring)
    return result_cache().get_or_compute(
        key, lambda: _importance(ctx, method, n_repeats, max_rows, progress, scoring))


def _held(ctx: ModelContext) -> int | None:
    """The output a multi-output regressor's target column holds (the sidebar says); refused when unsaid."""
    if ctx.task != "regression" or getattr(ctx.adapter, "n_targets", 1) < 2:
        return None
    if (held := target_output(ctx)) is None:
        raise ExplainerError(f"This model predicts {ctx.adapter.n_targets} targets and the data gives one target "
                             "column: say in the sidebar which output it holds the true values of, and the "
                             "permutation importance of that output is shown.")
    return held


def _scored_holdout(ctx: ModelContext):
    """(held-out rows, their target, rows left out): the rows holdout permutation scores, those
    with a true value (an empty target has none to score)."""
    from explainers.importance._common import missing_target

    _, (X_ho, y_ho) = split_rows(ctx)
    if y_ho is None:
        raise ExplainerError("Permutation importance needs the target: pick the target column on the Model page.")
    has = ~missing_target(y_ho.to_numpy())
    if not has.any():
        raise ExplainerError("Permutation importance needs true values, but the target column is empty in "
                             "every row: pick the column the model predicts on the Model page.")
    return X_ho[has], y_ho[has], int((~has).sum())


def _importance(ctx: ModelContext, method: str, n_repeats: int, max_rows: int, progress, scoring=None):
    from explainers import importance as imp

    lib = _library(ctx)
    if lib is not None and method in _NATIVE_SKIPS:
        kinds = imp.library_importance_kinds(ctx.model)
        counterpart = (f"{lib} gain, shown here, is MDI's counterpart." if "gain" in kinds else
                       f"{lib} gives no gain; its {' and '.join(kinds)}, shown here, stand in for it." if kinds
                       else "")
        raise ExplainerError(_NATIVE_SKIPS[method].format(
            lib=lib, kinds=", ".join(kinds) or "numbers", counterpart=counterpart).strip())
    if method.startswith(LIBRARY_METHOD):
        return imp.library_importance(ctx.model, method[len(LIBRARY_METHOD):], feature_names=list(ctx.X.columns))
    (X_tr, y_tr), _ = split_rows(ctx)
    if method == "mdi":
        # a model that recorded no column names: name its importances after the data's columns
        names = None if hasattr(ctx.model, "steps") else list(ctx.X.columns)
        return imp.mdi(ctx.model, feature_names=names)
    if method == "oob":
        if y_tr is None:
            raise ExplainerError("Out-of-bag importance needs the target: pick the target column on the Model page.")
        return imp.oob_permutation_importance(ctx.model, X_tr, y_tr, progress=progress)
    if method == "permutation":
        from explainers.importance._common import rows_left_out_note

        X_ok, y_ok, left_out = _scored_holdout(ctx)
        take = _seeded_rows(len(X_ok), max_rows)
        res = imp.permutation_importance(ctx.model, X_ok.iloc[take], y_ok.iloc[take], n_repeats=n_repeats,
                                         random_state=0, progress=progress, class_index=_held(ctx),
                                         scoring=scoring)
        if left_out:
            res = dataclasses.replace(res, params={**res.params, "n_rows_left_out": left_out},
                                      description=f"{res.description} {rows_left_out_note(left_out, len(y_ok) + left_out)}")
        return res
    if method == "shap":
        return imp.shap_importance(explain_sample(ctx, max_rows, "auto", progress))
    raise KeyError(method)


#: rows of the holdout permutation's two timed probes of one repeat (fewer where a predict is slow),
#: and the repeats of its third probe, on the fewer rows (the copies' own cost apart from the call's)
PERM_PROBE_ROWS, PERM_PROBE_REPEATS = (20, 200), 3
#: trees the out-of-bag probe times after the first (which carries the set-up)
OOB_PROBE_TREES = 3


class _Enough(Exception):
    """Raised from a progress callback to end a probe."""


def permutation_line(ctx: ModelContext, scoring: str | None = None, n_repeats: int = 1) -> tuple[float, float]:
    """(fixed seconds, seconds per held-out row) of holdout permutation with ``n_repeats``
    repeats, measured on the computation itself (stacked copies, predict, scoring): after a
    warm-up, the best of two runs of one repeat on each of PERM_PROBE_ROWS rows and of
    PERM_PROBE_REPEATS repeats on the fewer rows. Each repeat scores every feature's copy,
    and each copy costs something whatever its rows (its score, its slice of the predict): a
    call costs ``c0 + copies x (a + b x rows)`` with ``copies = features x repeats + 1``, and
    the three probes give c0, a and b. (0, 0) where it cannot run."""
    c0, a, b = _permutation_costs(ctx, permutation_scoring(ctx) if scoring is None else scoring)
    copies = int(n_repeats) * ctx.X.shape[1] + 1
    return c0 + copies * a, copies * b


def _permutation_costs(ctx: ModelContext, scoring: str) -> tuple[float, float, float]:
    """(seconds per call, per copy, per copy and row) of holdout permutation (see
    :func:`permutation_line`), measured once per model, data and score."""
    def probe() -> tuple[float, float, float]:
        from explainers import importance as imp
        from .costs import predict_seconds_per_row
        from .warmup import wait_for_warmup

        wait_for_warmup()
        try:
            X_ok, y_ok, _ = _scored_holdout(ctx)
            held = _held(ctx)
        except ExplainerError:
            return 0.0, 0.0, 0.0
        p = ctx.X.shape[1]
        per_copy_row = predict_seconds_per_row(ctx) * (p + 1)
        small = min(PERM_PROBE_ROWS[0], len(X_ok))
        big = min(len(X_ok), max(2 * small, min(PERM_PROBE_ROWS[1], int(0.5 / max(per_copy_row, 1e-9)))))
        take = _seeded_rows(len(X_ok), big)
        rows, ys = X_ok.iloc[take], y_ok.iloc[take]

        def run(m: int, repeats: int = 1) -> float:
            t0 = time.perf_counter()
            imp.permutation_importance(ctx.model, rows.iloc[:m], ys.iloc[:m], n_repeats=repeats, random_state=0,
                                       class_index=held, scoring=scoring)
            return time.perf_counter() - t0

        try:
            run(small)  # warm-up: a first call may pay one-time costs
            t_small, t_big = min(run(small), run(small)), min(run(big), run(big))
            t_more = min(run(small, PERM_PROBE_REPEATS), run(small, PERM_PROBE_REPEATS))
        except Exception:  # noqa: BLE001 - too few rows of a class for the score: the page says so when it runs
            return 0.0, 0.0, 0.0
        if big <= small:
            return 0.0, 0.0, t_small / max(1, small) / (p + 1)
        b = max(0.0, (t_big - t_small) / (big - small)) / (p + 1)
        # the (PERM_PROBE_REPEATS - 1) x p copies the extra repeats add, less their rows
        a = max(0.0, (t_more - t_small) / ((PERM_PROBE_REPEATS - 1) * p) - b * small)
        return max(0.0, t_small - (p + 1) * (a + b * small)), a, b

    key = ("perm_costs", ctx.model_key, ctx.data_key, scoring, target_output(ctx))
    return tuple(result_cache().get_or_compute(key, probe))


def oob_seconds(ctx: ModelContext) -> float:
    """Seconds of out-of-bag permutation importance, measured: the set-up and first tree, then
    OOB_PROBE_TREES more trees timed, the rest of the forest at their pace (0 where the method
    does not apply to the model; the page says why when it runs it)."""
    def probe() -> float:
        from explainers import importance as imp
        from .warmup import wait_for_warmup

        wait_for_warmup()
        (X_tr, y_tr), _ = split_rows(ctx)
        if y_tr is None:
            return 0.0
        marks = []
        t0 = time.perf_counter()

        def progress(done: int, total: int) -> None:
            marks.append((done, total, time.perf_counter() - t0))
            if done > OOB_PROBE_TREES:
                raise _Enough

        try:
            imp.oob_permutation_importance(ctx.model, X_tr, y_tr, progress=progress)
        except _Enough:
            pass
        except Exception:  # noqa: BLE001 - not a bagged forest, no target: no cost here
            return 0.0
        if not marks:
            return 0.0
        done, total, t = marks[-1]
        if done >= total or done < 2:
            return t
        first = marks[0][2]
        return first + (t - first) / (done - 1) * (total - 1)

    return float(result_cache().get_or_compute(("oob_cost", ctx.model_key, ctx.data_key), probe))


def importance_cost(ctx: ModelContext, methods, n_repeats: int, max_rows: int,
                    budget: float | None = None, with_fits: bool = True) -> tuple[float, int]:
    """(estimated seconds, rows that fit in ``budget``: SLOW_VIEW_S) of the Importance page's slow
    methods, each measured on the computation itself: holdout permutation by the line of
    :func:`permutation_line` (each repeat permutes every feature of at most ``max_rows`` held-out
    rows), out-of-bag permutation by :func:`oob_seconds` (it does not depend on the rows), mean
    |SHAP| by the SHAP sample's estimate (blocks included). MDI and the libraries' own
    importances cost nothing here. ``with_fits=False``: the estimate alone (the rows returned
    are ``max_rows``)."""
    from .costs import (SLOW_VIEW_S, most_within, predict_seconds_per_row, sample_cost, shap_fixed_seconds,
                        shap_seconds_per_row)

    budget = SLOW_VIEW_S if budget is None else float(budget)
    perm_fixed = perm_row = 0.0
    p = ctx.X.shape[1]
    if "permutation" in methods:
        perm_fixed, perm_row = permutation_line(ctx, n_repeats=n_repeats)
        if perm_row <= 0 and perm_fixed <= 0:  # the probe could not run (too few rows of a class)
            perm_row = (int(n_repeats) * p + 1) * predict_seconds_per_row(ctx)  # predictions counted instead
    oob = oob_seconds(ctx) if "oob" in methods else 0.0
    shap = "shap" in methods and (shap_seconds_per_row(ctx, "auto") > 0 or shap_fixed_seconds(ctx, "auto") > 0)
    if perm_row <= 0 and perm_fixed <= 0 and not shap and oob <= 0:
        return 0.0, min(int(max_rows), len(ctx.X))
    held = len(split_rows(ctx)[1][0])

    def cost(m: int) -> float:
        perm = perm_fixed + perm_row * min(m, held)
        return oob + perm + (sample_cost(ctx, "auto", m, None)[0] if shap else 0.0)

    if not with_fits:
        return cost(int(max_rows)), int(max_rows)
    # the most rows, in steps of 50, whose cost fits the budget (the cost grows with the rows): halving
    # the range, not a step at a time (a table of a million rows took 13 s of estimates a page run);
    # 0: even the fewest rows (50) take longer
    return cost(int(max_rows)), 50 * most_within(lambda j: cost(50 * j), 0, max(50, int(max_rows)) // 50, budget)


#: the rows the Importance page uses unless told: fewer where they take longer than START_VIEW_S
IMPORTANCE_ROWS = 1_000
#: the most rows the page's box takes on a table of fewer (a larger table: up to every row)
IMPORTANCE_MAX_ROWS = 20_000


def default_importance_rows(ctx: ModelContext, methods) -> int:
    """The rows the Importance page starts with: IMPORTANCE_ROWS where the default settings fit
    in about START_VIEW_S, else as many as do (in steps of 50, at least 50); more are offered."""
    from .costs import START_VIEW_S

    _, fits = importance_cost(ctx, methods, 5, IMPORTANCE_ROWS, budget=START_VIEW_S)
    return int(min(IMPORTANCE_ROWS, max(50, fits)))


def importances(ctx: ModelContext, methods: list[str], n_repeats: int, max_rows: int, bar,
                page: str = "") -> tuple[list, list]:
    """Compute (cached) each method that applies; return (results, [(label, reason)] skipped).

    The reasons are worded for ``page`` (see :func:`dashboard.messages.for_page`): what to
    click there, never a Python call.
    """
    from dashboard.messages import for_page

    results, skipped = [], []
    for i, method in enumerate(methods):
        label = importance_label(ctx, method)

        progress = ProgressBar(bar, label)
        bar.progress(i / len(methods), text=f"{label}…")
        try:
            results.append(importance(ctx, method, n_repeats, max_rows, progress))
        except ExplainerError as exc:
            skipped.append((label, for_page(exc, page)))
        except Exception as exc:  # never a traceback on the page
            skipped.append((label, for_page(error_message(exc), page)))
    return results, skipped


#: rows the comparison reads the data's evidence from (distinct values, correlations): a seeded
#: sample above that (its criteria are shares of the rows, the same on a sample)
EVIDENCE_ROWS = 50_000


def comparison(model_key: str, data_key: str, labels: tuple, results: list, X):
    """The importances side by side with where they disagree and why; the data's evidence
    read from a seeded sample of EVIDENCE_ROWS rows of a larger table. Cached per model, data
    and the results' own numbers (other rows, repeats or scoring give other results: the
    comparison of the ones on the page, never of an earlier setting's)."""
    return _comparison(model_key, data_key, tuple(labels), results_digest(results), results, X)


def results_digest(results) -> str:
    """A fingerprint of importance results: their methods, features and every number."""
    import hashlib

    h = hashlib.sha256()
    for r in results:
        h.update(repr((r.label, r.method, list(r.feature_names))).encode())
        for arr in (r.importances, r.std, r.raw):
            if arr is not None:
                h.update(np.ascontiguousarray(np.asarray(arr, dtype=np.float64)).tobytes())
    return h.hexdigest()


@st.cache_data(max_entries=32, show_spinner=False)
def _comparison(model_key: str, data_key: str, labels: tuple, digest: str, _results: list, _X):
    from explainers.importance import compare_importances

    return compare_importances(_results, X=evidence_rows(_X))


def evidence_rows(X):
    """The rows the comparison of importances reads the data's evidence from (EVIDENCE_ROWS)."""
    from .rows import _seeded_rows

    return X if len(X) <= EVIDENCE_ROWS else X.iloc[_seeded_rows(len(X), EVIDENCE_ROWS)]


#: the Importance page's methods that can be computed on a segment's rows (the others read the training split)
SEGMENT_IMPORTANCE_METHODS = ("permutation", "shap")


def _holdout_positions(ctx: ModelContext) -> np.ndarray:
    """Positions of the held-out rows (see :func:`split_rows`) in the data as loaded."""
    n_train = ctx.card.get("n_train")
    return np.arange(int(n_train), len(ctx.X)) if n_train else np.arange(len(ctx.X))


def _segment_importance(ctx: ModelContext, active, method: str, n_repeats: int, max_rows: int, progress,
                        scoring=None):
    """(segment, rest) ImportanceResults of one method; ExplainerError when it cannot be compared."""
    from explainers import importance as imp

    from .segments import MIN_SEGMENT_ROWS

    if method == "shap":
        parts = split_sample(explain_sample(ctx, max_rows, "auto", progress), active.mask)
        if parts.problem:
            raise ExplainerError(parts.problem.replace("Raise the number of rows in the sample.",
                                                       "Raise the rows used (Settings)."))
        return imp.shap_importance(parts.segment), imp.shap_importance(parts.rest)
    if ctx.y is None:
        raise ExplainerError("Permutation importance needs the target: pick the target column on the Model page.")
    from explainers.importance._common import missing_target

    held = _holdout_positions(ctx)
    held = held[~missing_target(ctx.y.to_numpy()[held])]
    out = []
    for which, mask in (("segment", active.mask), ("rest", ~active.mask)):
        pos = held[mask[held]]
        if len(pos) < MIN_SEGMENT_ROWS:
            raise ExplainerError(
                f"The {which} has {len(pos):,} held-out row{'' if len(pos) == 1 else 's'} with a target; holdout "
                f"permutation needs at least {MIN_SEGMENT_ROWS:,} on each side to compare the segment with the rest.")
        pos = pos[_seeded_rows(len(pos), max_rows)]
        out.append(imp.permutation_importance(ctx.model, ctx.X.iloc[pos], ctx.y.iloc[pos], class_index=_held(ctx),
                                              n_repeats=n_repeats, random_state=0, progress=progress,
                                              scoring=scoring))
    return tuple(out)


def importances_by_segment(ctx: ModelContext, active, methods, n_repeats: int, max_rows: int, bar,
                           page: str = "importance") -> tuple[list, list]:
    """Mean |SHAP| and holdout permutation on the segment's rows and on the rest's, with the
    same settings as the page's: ``([(segment result, rest result)], [(label, reason)] skipped)``.

    Cached per model, data, segment, method and settings; reasons worded for ``page``.
    """
    from dashboard.messages import for_page

    pairs, skipped = [], []
    wanted = [m for m in methods if m in SEGMENT_IMPORTANCE_METHODS]
    for i, method in enumerate(wanted):
        label = importance_label(ctx, method)
        progress = ProgressBar(bar, f"{label}, segment and rest")
        bar.progress(i / len(wanted), text=f"{label}, segment and rest…")
        scoring = permutation_scoring(ctx) if method == "permutation" else None
        key = ("importance_segment", ctx.model_key, ctx.data_key, active.key, method,
               n_repeats if method == "permutation" else 0, max_rows, target_output(ctx), scoring)
        try:
            pairs.append(result_cache().get_or_compute(
                key, lambda m=method, p=progress, sc=scoring: _segment_importance(ctx, active, m, n_repeats, max_rows,
                                                                                  p, sc)))
        except ExplainerError as exc:
            skipped.append((label, for_page(exc, page)))
        except Exception as exc:  # never a traceback on the page
            skipped.append((label, for_page(error_message(exc), page)))
    return pairs, skipped


def left_out_notices(results) -> list[str]:
    """Per result that left rows out for an empty target: a notice saying how many."""
    return [f"{r.label}: {r.params['n_rows_left_out']:,} row(s) with an empty target were left out; "
            f"it is scored on {r.params.get('n_rows', 0):,} rows that have one."
            for r in results if r.params.get("n_rows_left_out")]
