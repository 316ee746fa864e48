"""The Importance page's cached computations: which methods apply to a model and their names,
each method's result, the comparison table, the segment's and the rest's importances, and the
notices for rows left out.
"""
from __future__ import annotations

import dataclasses

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
    (X_tr, y_tr), (X_ho, y_ho) = split_rows(ctx)
    if method == "mdi":
        # a model that recorded no column names: name its importances after the data's columns
        names = None if hasattr(ctx.model, "steps") else list(ctx.X.columns)
        return imp.mdi(ctx.model, feature_names=names)
    if method == "oob":
        if y_tr is None:
            raise ExplainerError("Out-of-bag importance needs the target: pick the target column on the Model page.")
        return imp.oob_permutation_importance(ctx.model, X_tr, y_tr, progress=progress)
    if method == "permutation":
        if y_ho is None:
            raise ExplainerError("Permutation importance needs the target: pick the target column on the Model page.")
        # rows with an empty target have no true value to score: the sample is drawn from the others
        from explainers.importance._common import missing_target, rows_left_out_note

        has = ~missing_target(y_ho.to_numpy())
        if not has.any():
            raise ExplainerError("Permutation importance needs true values, but the target column is empty in "
                                 "every row: pick the column the model predicts on the Model page.")
        X_ok, y_ok = X_ho[has], y_ho[has]
        take = _seeded_rows(len(X_ok), max_rows)
        res = imp.permutation_importance(ctx.model, X_ok.iloc[take], y_ok.iloc[take], n_repeats=n_repeats,
                                         random_state=0, progress=progress, class_index=_held(ctx),
                                         scoring=scoring)
        left_out = int((~has).sum())
        if left_out:
            res = dataclasses.replace(res, params={**res.params, "n_rows_left_out": left_out},
                                      description=f"{res.description} {rows_left_out_note(left_out, len(y_ho))}")
        return res
    if method == "shap":
        return imp.shap_importance(explain_sample(ctx, max_rows, "auto", progress))
    raise KeyError(method)


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


@st.cache_data(max_entries=32, show_spinner=False)
def comparison(model_key: str, data_key: str, labels: tuple, _results: list, _X):
    from explainers.importance import compare_importances

    return compare_importances(_results, X=_X)


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
