"""The What-if page's counterfactuals: what would change a row's prediction, cached per
model, data, row and settings, computed in a worker thread (so Stop works).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from explainers.counterfactuals import same_value

from .context import ModelContext
from .session import set_value, value
from .worker import in_worker

#: the target of a multiclass classifier when no class is picked
ANY_OTHER = "any other class"
#: seconds each answer may search, as the page offers them
TIME_LIMITS = [2, 10, 30, 60]
#: what the page's controls are called (URL parameters in session.CONTROLS)
RUN, TARGET, FIXED, LIMITED, COUNT, SECONDS = ("cf_run", "cf_target", "cf_fixed", "cf_limit", "cf_n",
                                              "cf_seconds")
#: the search the What-if page last showed (model key, find's arguments): the report's section
LAST = "cf_last_shown"


def predicted_label(ctx: ModelContext, row: int) -> str | None:
    """The class the model predicts for a data row (its own predict); None for a regressor."""
    if ctx.task == "regression":
        return None
    from .cache import result_cache

    return result_cache().get_or_compute(
        ("cf_predicted", ctx.model_key, ctx.data_key, int(row)),
        lambda: str(ctx.adapter.predict_labels(ctx.X.iloc[[row]])[0]))


def target_choices(ctx: ModelContext, row: int) -> list[str]:
    """A classifier's targets for this row: the other classes (and "any other class" first
    for three or more)."""
    own = predicted_label(ctx, row)
    others = [c for c in ctx.classes if c != own]
    return ([ANY_OTHER] if len(others) > 1 else []) + others


def regression_default(ctx: ModelContext, row: int) -> tuple[float, float]:
    """A regressor's default target: a tenth of the predictions' spread above this row's
    prediction, up to the largest prediction plus that spread."""
    pred = predictions(ctx)
    own = float(pred[row])
    spread = float(np.nanmax(pred) - np.nanmin(pred)) or 1.0
    return _tidy(own + 0.1 * spread), _tidy(float(np.nanmax(pred)) + spread)


def _tidy(v: float) -> float:
    return float(f"{v:.4g}")


def predictions(ctx: ModelContext) -> np.ndarray:
    """The regressor's prediction of every row (its first output), from the shared predictions."""
    from .predictions import all_predictions

    pred = all_predictions(ctx, ctx.adapter.output, ctx.adapter.class_index)
    return np.asarray(pred, float).reshape(len(ctx.X), -1)[:, 0]


def _class_value(ctx: ModelContext, label: str):
    """The model's own class value of a label as the page shows it (classes are shown as text)."""
    for c in ctx.adapter.classes:
        if str(c) == label:
            return c
    return label


def find(ctx: ModelContext, row: int, target, fixed: tuple, ranges: tuple, n: int, seconds: float, notice=None):
    """The counterfactuals of data row ``row`` (:func:`explainers.counterfactuals.counterfactuals`).

    ``target``: a class label as shown, :data:`ANY_OTHER`, or (lo, hi) for a regressor;
    ``ranges``: ((feature, (lo, hi) or tuple of categories), ...).
    """
    if isinstance(target, str):
        goal = None if target == ANY_OTHER else _class_value(ctx, target)
    else:
        goal = (float(target[0]), float(target[1]))

    def compute():
        from explainers.counterfactuals import counterfactuals

        # a range is (lo, hi) of a numeric feature or the allowed values of a categorical one:
        # the engine reads each by the feature's kind
        return counterfactuals(ctx.model, ctx.X, [int(row)], target=goal, fixed=list(fixed),
                               ranges=dict(ranges) or None, n=int(n), time_limit=float(seconds))

    key = ("counterfactuals", ctx.model_key, ctx.data_key, int(row), str(target), tuple(fixed), ranges, int(n),
           float(seconds))
    return in_worker(key, compute, notice)


def remember(ctx: ModelContext, *args) -> None:
    """Note the search the What-if page shows (``find``'s arguments after ``ctx``), for the report."""
    set_value(LAST, (ctx.key, args))


def report_section(ctx: ModelContext):
    """The report's part for the counterfactuals the What-if page shows (its row and settings),
    or None when that page has shown none for this model."""
    from dashboard import report

    last = value(LAST)
    if not last or last[0] != ctx.key:
        return None
    row, target, fixed, ranges, n, seconds = last[1]
    res = find(ctx, row, target, fixed, ranges, n, seconds)
    if res.messages[0] or not len(res.counterfactuals[0]):
        return report.Section(f"What would change the prediction of row {row}",
                              res.messages[0] or "No counterfactual was found.")
    kept = f"; kept fixed: {', '.join(map(str, fixed))}" if fixed else ""
    caption = (f"To reach {res.targets[0]}{kept}. " + status_line(res, seconds).replace("**", "")
               + " Distance: the sum of each change divided by the feature's median absolute deviation.")
    return report.Section(f"What would change the prediction of row {row}", caption,
                          table=changes_frame(ctx, res).set_index("#"))


def _shown(v) -> str:
    from dashboard.figures.style import fmt_number

    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return "blank"
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return fmt_number(float(v), digits=6)
    return str(v)


def changes_frame(ctx: ModelContext, res) -> pd.DataFrame:
    """One line per counterfactual of the row: only the changed cells ("old → new"), then its
    distance, the features it changes and the model's prediction for it."""
    cands = res.counterfactuals[0]
    if not len(cands):
        return pd.DataFrame()
    original = ctx.X.iloc[res.rows[0]]
    changed_cols = [c for c in ctx.X.columns
                    if any(not same_value(original[c], cands[c].iloc[i]) for i in range(len(cands)))]
    lines = []
    for i in range(len(cands)):
        line = {"#": i + 1}
        for c in changed_cols:
            new = cands[c].iloc[i]
            line[str(c)] = "" if same_value(original[c], new) else f"{_shown(original[c])} → {_shown(new)}"
        line["distance"] = float(res.distances[0][i])
        line["features changed"] = int(res.n_changed[0][i])
        pred = res.predictions[0][i]
        line["prediction"] = _shown(pred) if ctx.task == "regression" else str(pred)
        lines.append(line)
    return pd.DataFrame(lines)


def status_line(res, seconds: float) -> str:
    """How sure the answers are: proven nearest, the best found in the time, or a search."""
    if res.method == "search":
        return ("Found by a model-agnostic search (growing spheres, then each change reduced while "
                "the prediction holds): valid, not proven nearest.")
    if res.optimal[0]:
        how = ("the tree's leaves enumerated" if res.method == "tree enumeration"
               else "proven by an exact search over the trees' cells")
        return (f"The first is **optimal**: no allowed change is nearer ({how}); each later one is the "
                "nearest that changes a different set of features.")
    gap = res.gaps[0]
    return (f"**Best found in {seconds:g} s**: the search stopped at its time limit"
            + (f" with a gap of at most {gap:.1%} to the nearest." if np.isfinite(gap) else "."))


def load(prefix: str, ctx: ModelContext, cf_row: dict) -> None:
    """Callback: put a counterfactual's values into the What-if editors (keys ``prefix`` + position)."""
    for i, col in enumerate(ctx.X.columns):
        v = cf_row[col]
        if v is None or (not isinstance(v, str) and pd.isna(v)):
            set_value(f"{prefix}{i}", None)
        elif ctx.X[col].dtype.kind in "biuf":
            set_value(f"{prefix}{i}", float(v))
        else:
            set_value(f"{prefix}{i}", v)
