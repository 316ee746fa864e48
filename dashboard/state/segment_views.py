"""The Segments page's calls: a segment defined condition by condition, the proposed
segments where the model fails most, the saved segments' table, and the report's section.

The session's segments themselves (saved, added, removed, compared in the sidebar, kept
in the URL) live in :mod:`.segments`; this module builds on it. Every result is keyed by
the model and data fingerprints plus the segment's token (or the proposals' settings).
Widget callbacks never raise: a problem becomes a sentence the page shows on its next run.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from explainers import ExplainerError
from explainers.segments import (
    Categories,
    Empty,
    ErrorBand,
    PredictedClass,
    Range,
    Segment,
    propose_segments,
    row_errors,
)

from .cache import ResultCache, result_cache
from .context import ModelContext, error_message
from .predictions import prediction_source
from .session import forget, set_value, value
from .segments import NO_SEGMENT, SEGMENT_ON, add_segment, saved_segments, segment_mask

__all__ = ["DRAFT", "MESSAGE", "RANGE", "VALUES", "EMPTY", "ON_PRED", "ON_ERROR", "condition_targets",
           "target_label", "feature_kind", "ways", "error_words", "build_condition", "draft", "draft_segment",
           "row_count", "on_add_condition", "on_remove_condition", "on_clear_draft", "on_add_segment",
           "on_add_proposal", "on_compare", "on_remove", "take_message", "url_problem", "proposals",
           "proposals_frame", "saved_frame", "report_section"]

DRAFT = "seg_draft"  # session: the conditions of the segment being defined (plain state, kept across pages)
MESSAGE = "seg_message"  # session: (kind, sentence) a callback left for the page to show once
NAME = "seg_name"  # text input: the new segment's name
ON = "seg_on"  # selectbox: what the next condition is on, one of condition_targets()
HOW = "seg_how"  # radio: how a feature's condition selects rows (RANGE, VALUES or EMPTY)
WITH_EMPTY = "seg_with_empty"  # checkbox: empty cells match the range or values too
IS_EMPTY = "seg_is_empty"  # radio: "is empty" / "is not empty"
CLASSES = "seg_classes"  # multiselect: predicted classes
ERR_LO, ERR_HI = "seg_err_lo", "seg_err_hi"  # number inputs: the error band

RANGE, VALUES, EMPTY = "a range", "one of these values", "empty or not"
ON_PRED, ON_ERROR = ("pred",), ("error",)
_URL_READ = "_segments_url_read"  # app.py: what segments_from_url said about the link (once per session)

# previews of a segment still being defined: a cache of its own, so trying values on the page
# never pushes the long results (SHAP samples, importances) out of the shared one
_PREVIEWS = ResultCache(max_entries=64)


# ------------------------------------------------------------ the condition form
def condition_targets(ctx: ModelContext) -> list[tuple]:
    """What a condition can be on: each feature, then the predicted class (classifiers) and the
    error (with a target)."""
    out = [("feature", str(c)) for c in ctx.X.columns]
    if ctx.classes is not None:
        out.append(ON_PRED)
    if ctx.y is not None:
        out.append(ON_ERROR)
    return out


def target_label(target: tuple) -> str:
    """The condition picker's text for an option (plain text: selectbox options are not Markdown)."""
    if target == ON_PRED:
        return "predicted class (the model's own label)"
    if target == ON_ERROR:
        return "error of the model on the row"
    return target[1]


def feature_kind(ctx: ModelContext, feature: str) -> str:
    """``"numeric"`` (a range), ``"values"`` (a set of values) or ``"other"`` (dates: empty or not)."""
    col = ctx.X[feature]
    if pd.api.types.is_bool_dtype(col.dtype) or isinstance(col.dtype, pd.CategoricalDtype):
        return "values"
    if pd.api.types.is_numeric_dtype(col.dtype):
        return "numeric"
    if pd.api.types.is_datetime64_any_dtype(col.dtype):
        return "other"
    return "values"


def ways(ctx: ModelContext, feature: str) -> list[str]:
    """How a condition on this feature can select rows, the natural one first."""
    kind = feature_kind(ctx, feature)
    return [RANGE, EMPTY] if kind == "numeric" else [VALUES, EMPTY] if kind == "values" else [EMPTY]


def _has_proba(ctx: ModelContext) -> bool:
    return hasattr(getattr(ctx.adapter, "model", ctx.model), "predict_proba")


def error_words(ctx: ModelContext) -> str:
    """What a row's error is for this model (the error band's and the proposals' measure)."""
    if ctx.task == "regression":
        target = ctx.card.get("target") or "the target"
        return f"absolute error: |true value − prediction|, in the units of {target}"
    if _has_proba(ctx):
        return ("1 − the probability the model gives the row's true class: 0 when it is sure and right, "
                "near 1 when it is sure and wrong")
    return "misclassification: 1 when the predicted class is wrong, 0 when it is right"


def range_keys(feature: str) -> tuple[str, str]:
    """The number inputs of a feature's range: one pair per feature, so each keeps its own ends."""
    return f"seg_lo::{feature}", f"seg_hi::{feature}"


def values_key(feature: str) -> str:
    return f"seg_values::{feature}"


def _ends(lo, hi, what: str) -> None:
    """Page-word checks of a band's ends, before explainers' own (which speak of None and lo)."""
    if lo is None and hi is None:
        raise ExplainerError(f"Give {what} a lower end, an upper end or both (leave one empty for an open end).")
    if lo is not None and hi is not None and not lo < hi:
        raise ExplainerError(f"The lower end of {what} ({lo:g}) must be below its upper end ({hi:g}): "
                             "the rows kept are lower end ≤ value < upper end.")


def build_condition(ctx: ModelContext, target: tuple):
    """The condition the form describes now, from the widgets' values in the session.

    Raises ExplainerError (in page words) when the form is not complete or not valid.
    """
    ss = st.session_state
    if target == ON_PRED:
        picked = ss.get(CLASSES) or []
        if not picked:
            raise ExplainerError("Pick at least one predicted class.")
        return PredictedClass(picked)
    if target == ON_ERROR:
        lo, hi = ss.get(ERR_LO), ss.get(ERR_HI)
        _ends(lo, hi, "the error band")
        return ErrorBand(lo, hi)
    feature = target[1]
    how = ss.get(HOW)
    if how not in ways(ctx, feature):
        how = ways(ctx, feature)[0]
    if how == EMPTY:
        return Empty(feature, ss.get(IS_EMPTY, "is empty") == "is empty")
    with_empty = bool(ss.get(WITH_EMPTY, False))
    if how == RANGE:
        lo_key, hi_key = range_keys(feature)
        lo, hi = ss.get(lo_key), ss.get(hi_key)
        _ends(lo, hi, f"the range of {feature}")
        return Range(feature, lo, hi, include_empty=with_empty)
    picked = ss.get(values_key(feature)) or []
    if not picked:
        raise ExplainerError(f"Pick at least one value of {feature}.")
    return Categories(feature, picked, include_empty=with_empty)


def draft() -> list:
    """The conditions added so far to the segment being defined."""
    return list(st.session_state.get(DRAFT, []))


def draft_segment(conditions: list, name: str | None = None) -> Segment:
    return Segment(name or "New segment", conditions)


def row_count(ctx: ModelContext, segment: Segment) -> int:
    """How many rows of the data the segment holds (cached per model, data and segment)."""
    def compute() -> int:
        if segment.needs_target and ctx.y is None:
            raise ExplainerError("An error band needs the target column: pick it on the Model page.")
        y = ctx.y if segment.needs_target else None
        return int(np.count_nonzero(segment.mask(ctx.model if segment.needs_model else None, ctx.X, y)))

    return _PREVIEWS.get_or_compute(("rows", ctx.model_key, ctx.data_key, segment.key), compute)


# ---------------------------------------------------------------- callbacks
def _say(kind: str, text: str) -> None:
    st.session_state[MESSAGE] = (kind, text)


def take_message() -> tuple[str, str] | None:
    """What the last button's callback had to say (shown once)."""
    return st.session_state.pop(MESSAGE, None)


def url_problem() -> str | None:
    """Why a segment of the link this session was opened with could not be read, if one could not."""
    return st.session_state.get(_URL_READ) or None


def on_add_condition(ctx: ModelContext, target: tuple) -> None:
    try:
        cond = build_condition(ctx, target)
        conditions = draft()
        if cond in conditions:
            return
        draft_segment(conditions + [cond])  # checks the number of conditions
    except ExplainerError as exc:
        _say("error", error_message(exc))
        return
    st.session_state[DRAFT] = conditions + [cond]


def on_remove_condition(i: int) -> None:
    conditions = draft()
    if 0 <= i < len(conditions):
        del conditions[i]
    st.session_state[DRAFT] = conditions


def on_clear_draft() -> None:
    st.session_state[DRAFT] = []


def next_name() -> str:
    names = {s.name for s in saved_segments()}
    k = len(names) + 1
    while f"Segment {k}" in names:
        k += 1
    return f"Segment {k}"


def on_add_segment() -> None:
    name = (st.session_state.get(NAME) or "").strip()
    conditions = draft()
    if not name:
        _say("error", "Give the segment a name.")
        return
    if not conditions:
        _say("error", "Add at least one condition first (Add this condition).")
        return
    try:
        segment = Segment(name, conditions)
        add_segment(segment)
    except ExplainerError as exc:
        _say("error", error_message(exc))
        return
    st.session_state[DRAFT] = []
    forget(NAME)  # the name box starts again from the next free name
    _say("success", f"Saved {name}; the sidebar now compares it with the rest of the rows.")


def on_add_proposal(token: str) -> None:
    try:
        segment = Segment.from_token(token)
        add_segment(segment)
    except ExplainerError as exc:
        _say("error", error_message(exc))
        return
    _say("success", f"Saved {segment.name}; the sidebar now compares it with the rest of the rows.")


def on_compare(name: str) -> None:
    from .segments import segments_to_url

    set_value(SEGMENT_ON, name)
    segments_to_url()


def on_remove(name: str) -> None:
    from .segments import remove_segment

    remove_segment(name)


# ------------------------------------------------------------------- errors
def _errors(ctx: ModelContext) -> np.ndarray:
    """Each row's error (NaN without a target), cached per model and data."""
    def compute():
        return row_errors(ctx.model, ctx.X, ctx.y, predictions=prediction_source(ctx))

    return result_cache().get_or_compute(("row_errors", ctx.model_key, ctx.data_key), compute)


def _mean_errors(ctx: ModelContext, mask: np.ndarray) -> tuple[float, float]:
    """Mean error of the rows in the mask and of the rest (rows with a target only; NaN if none)."""
    err = _errors(ctx)
    has = ~np.isnan(err)
    inside, rest = has & mask, has & ~mask
    return (float(err[inside].mean()) if inside.any() else float("nan"),
            float(err[rest].mean()) if rest.any() else float("nan"))


# ---------------------------------------------------------------- proposals
#: the error tree is fitted on a seeded, stratified sample of this many rows where there are
#: more (a million rows: about 5 s of fitting, 0.5 s on the sample); its segments' rows and
#: errors are still counted on every row
SEGMENT_FIT_ROWS = 100_000


def proposal_fit_rows(ctx: ModelContext, all_rows: bool = False) -> int | None:
    """The rows the error tree is fitted on: SEGMENT_FIT_ROWS of a larger table, unless
    ``all_rows``; None: every row."""
    return None if all_rows or len(ctx.X) <= SEGMENT_FIT_ROWS else SEGMENT_FIT_ROWS


def sample_words(ctx: ModelContext) -> str:
    """How the error tree's sample is stratified, in words."""
    return "each error decile kept in proportion" if ctx.task == "regression" else "classes kept in proportion"


def proposals(ctx: ModelContext, max_depth: int, min_rows: int, n: int = 5, all_rows: bool = False) -> list:
    """The segments where the model fails most (cached per model, data and settings), from the
    shared predictions; the tree fitted on :func:`proposal_fit_rows` rows."""
    fit = proposal_fit_rows(ctx, all_rows)
    key = ("propose_segments", ctx.model_key, ctx.data_key, int(max_depth), int(min_rows), int(n), fit)
    return result_cache().get_or_compute(
        key, lambda: propose_segments(ctx.model, ctx.X, ctx.y, max_depth=int(max_depth), min_rows=int(min_rows),
                                      n=int(n), fit_rows=fit, predictions=prediction_source(ctx)))


def proposals_frame(props: list) -> pd.DataFrame:
    """One line per proposal: its name, rule, rows and mean error against the rest's."""
    return pd.DataFrame({
        "segment": [p.segment.name for p in props],
        "rule": [p.rule for p in props],
        "rows": [p.n_rows for p in props],
        "mean error": [p.mean_error for p in props],
        "mean error of the rest": [p.rest_mean_error for p in props],
    })


# ---------------------------------------------------------------- the saved
def saved_frame(ctx: ModelContext) -> tuple[pd.DataFrame, list[str]]:
    """The saved segments as a table (name, rule, rows and, with a target, mean error against the
    rest's; which one the sidebar compares), and a sentence per segment that does not apply here."""
    on = value(SEGMENT_ON, NO_SEGMENT)
    rows, problems = [], []
    for seg in saved_segments():
        line = {"segment": seg.name, "rule": seg.describe(), "rows": None, "compared": seg.name == on}
        if ctx.y is not None:
            line["mean error"] = line["mean error of the rest"] = None
        try:
            mask = segment_mask(ctx, seg)
            line["rows"] = int(mask.sum())
            if ctx.y is not None:
                line["mean error"], line["mean error of the rest"] = _mean_errors(ctx, mask)
        except Exception as exc:  # a segment of another model's columns, a model that cannot predict here
            problems.append(f"{seg.name}: {error_message(exc)}")
        rows.append(line)
    frame = pd.DataFrame(rows)
    if len(frame):
        frame["rows"] = frame["rows"].astype("Int64")
    return frame, problems


def report_section(ctx: ModelContext):
    """The report's "Segments" section (None when no segment is saved): each segment's name,
    rule, rows and, with a target, its mean error against the rest's, and the one compared."""
    from dashboard import report

    segments = saved_segments()
    if not segments:
        return None
    frame, problems = saved_frame(ctx)
    frame = frame.rename(columns={"segment": "Segment", "rule": "Rule", "rows": "Rows",
                                  "mean error": "Mean error", "mean error of the rest": "Mean error of the rest",
                                  "compared": "Compared"})
    frame["Compared"] = frame["Compared"].map({True: "yes", False: ""})
    frame["Rows"] = frame["Rows"].astype(object).where(frame["Rows"].notna(), "—")
    on = value(SEGMENT_ON, NO_SEGMENT)
    caption = [f"{len(segments)} segment(s) defined on the Segments page, out of {len(ctx.X):,} rows."]
    if ctx.y is not None:
        caption.append(f"The error is the {error_words(ctx)}; the mean error of the rest is over the rows "
                       "outside the segment (rows without a target left out of both).")
    else:
        caption.append("Mean errors need the target column: pick it on the Model page.")
    caption.append(f"The pages compared {on} with the rest." if on in {s.name for s in segments}
                   else "No segment was compared: the pages showed all rows.")
    caption += [f"Not applied to this model and data: {p}" for p in problems]
    return report.Section("Segments", " ".join(caption), table=frame.set_index("Segment"))
