"""The Quality page's cached calls, its threshold (kept in the URL and offered to the What-if
page) and the tables of rows it lists.

The predictions over every row are computed once per model and data; the numbers at a
threshold (confusion matrix, metrics) once per model, data, threshold and class, in the
process-wide :func:`~dashboard.state.cache.result_cache`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from explainers.model import _is_anomaly_model
from explainers.quality import classification_quality, regression_quality, residual_bands  # noqa: F401

from .cache import result_cache
from .context import ModelContext
from .outputs import ORIGINAL, class_index, output_scale, target_output, target_transform
from .predictions import all_predictions
from .session import set_value, value

#: the Quality page's slider (its value is kept by the state model: Quality and What-if read it)
THRESHOLD_WIDGET = "quality_threshold"
DEFAULT_THRESHOLD = 0.5
#: the slider's step: thresholds are kept (and cached) at this resolution
THRESHOLD_STEP = 0.01
N_BINS = 10
#: at most this many rows are listed under "show me the rows"
MAX_LISTED = 500


def quality_problem(ctx: ModelContext) -> str | None:
    """Why quality cannot be shown for this model and data (in page words), or None."""
    if ctx.adapter.explained is not None or _is_anomaly_model(ctx.model):
        return ("This model is an outlier detector: it gives an anomaly score, not a prediction of a target, "
                "so model quality does not apply. The other pages explain its score.")
    if ctx.task == "regression" and getattr(ctx.adapter, "n_targets", 1) > 1 and target_output(ctx) is None:
        return (f"This model predicts {ctx.adapter.n_targets} targets at once, and the data gives one target "
                "column: say in the sidebar which output it holds the true values of, and its quality is shown "
                "here. The other pages explain each output (pick it under Output in the sidebar).")
    if ctx.y is None or not ctx.y.notna().any():
        return ("Model quality needs the target column: this data was loaded without one, so there is nothing "
                "to compare the predictions with. On the Model page, pick the column under **Target column** "
                "when you choose the data file, then press **Load model and data**.")
    return None


def on_margin(ctx: ModelContext) -> bool:
    """A classifier without probabilities: its quality is read from its decision function."""
    return ctx.task != "regression" and not hasattr(ctx.model, "predict_proba")


# ------------------------------------------------------------------ threshold
def valid_threshold(t) -> bool:
    """Whether ``t`` can be the slider's value (a link may carry anything)."""
    return isinstance(t, (int, float)) and 0.0 <= float(t) <= 1.0


def threshold() -> float:
    """The threshold picked on the Quality page (a bound control: a link's ``?threshold=`` too),
    at the slider's resolution."""
    t = value(THRESHOLD_WIDGET, DEFAULT_THRESHOLD)
    t = float(t) if valid_threshold(t) else DEFAULT_THRESHOLD
    return round(round(t / THRESHOLD_STEP) * THRESHOLD_STEP, 2)


# --------------------------------------------------------------- computations
def _predictions(ctx: ModelContext) -> np.ndarray:
    """Class probabilities (n, k) of a classifier (its decision function where it has no
    probabilities), predictions (n,) of a regressor: every row."""
    if ctx.task == "regression":  # of several outputs, the one the target column holds
        return all_predictions(ctx, "auto", target_output(ctx))
    return all_predictions(ctx, "raw" if on_margin(ctx) else "proba", None)


def _regression_pair(ctx: ModelContext) -> tuple[pd.Series, np.ndarray]:
    """(target, predictions) of a regressor, both on the sidebar's Scale: for a model fitted on
    log(target) (or log1p, sqrt) the original units or the model's scale, whichever scale the
    target column holds (:func:`target_column_scale`)."""
    pred = _predictions(ctx)
    transform = target_transform(ctx)
    if transform is None:
        return ctx.y, pred
    from explainers.target_scale import inverse

    if output_scale(ctx) == ORIGINAL:
        return target_on_scale(ctx, "original"), inverse(transform, pred)
    return target_on_scale(ctx, "model"), pred


def target_on_scale(ctx: ModelContext, scale: str) -> pd.Series:
    """The target column on ``scale`` ("model": f(target), as the model predicts it; "original":
    the target's own units), converted from whichever scale it holds; the column itself for a
    model without a target transform."""
    y, transform = ctx.y, target_transform(ctx)
    if transform is None or target_column_scale(ctx) == scale:
        return y
    from explainers.target_scale import forward, inverse

    convert = inverse if scale == "original" else forward
    return pd.Series(convert(transform, y.to_numpy(dtype=float)), index=y.index, name=y.name)


def target_column_scale(ctx: ModelContext) -> str:
    """Which scale the target column holds, for a model fitted on a transformed target:
    "model" (the transformed values) or "original" (see explainers.target_scale.target_holds)."""
    from explainers.target_scale import target_holds

    transform = target_transform(ctx)
    return result_cache().get_or_compute(
        ("target_holds", ctx.model_key, ctx.data_key, transform),
        lambda: target_holds(transform, ctx.y.to_numpy(dtype=float), _predictions(ctx)))


def _units(ctx: ModelContext) -> tuple:
    """The cache key's part for the regression scale (transform and Scale)."""
    return (target_transform(ctx), output_scale(ctx)) if ctx.task == "regression" else ()


def _labels(ctx: ModelContext) -> np.ndarray | None:
    """A margin classifier's own predictions (positions in its classes), every row; None otherwise."""
    if not on_margin(ctx):
        return None
    from explainers.quality import margin_labels

    return result_cache().get_or_compute(("quality_labels", ctx.model_key, ctx.data_key),
                                         lambda: margin_labels(ctx.adapter, ctx.X))


def _scored(ctx: ModelContext, rows, t: float | None, positive: int, reuse=None):
    """classification_quality of some rows (None: all), on the probabilities or the margins;
    ``reuse``: its result at another threshold (the curves do not depend on it)."""
    pred, labels = _predictions(ctx), _labels(ctx)
    y = ctx.y
    if rows is not None:
        pred, labels, y = pred[rows], None if labels is None else labels[rows], y.iloc[rows]
    margin = on_margin(ctx)
    return classification_quality(y, pred, list(ctx.adapter.classes), threshold=None if margin else t,
                                  class_index=positive, n_bins=N_BINS, scale="margin" if margin else "proba",
                                  labels=labels, reuse=reuse)


def model_quality(ctx: ModelContext, threshold: float | None = None, positive: int | None = None):
    """:func:`explainers.quality.quality` of the active model on its data, cached per model,
    data, threshold and class. ``positive``: the class whose probability the threshold is on
    (binary; default the sidebar's class)."""
    if ctx.task == "regression":
        return result_cache().get_or_compute(
            ("quality", ctx.model_key, ctx.data_key, target_output(ctx), *_units(ctx)),
            lambda: regression_quality(*_regression_pair(ctx)))
    positive = class_index(ctx) if positive is None else positive
    t = DEFAULT_THRESHOLD if threshold is None else round(float(threshold), 2)
    key = ("quality", ctx.model_key, ctx.data_key, t if ctx.task == "binary" else None, positive, N_BINS)

    def compute():
        # another threshold of a binary model: the default one's curves and areas, not computed again
        base = (model_quality(ctx, DEFAULT_THRESHOLD, positive)
                if ctx.task == "binary" and t != DEFAULT_THRESHOLD and not on_margin(ctx) else None)
        return _scored(ctx, None, t, positive, reuse=base)

    return result_cache().get_or_compute(key, compute)


def prediction_spread(ctx: ModelContext):
    """The Model page's chart under the score (an :class:`explainers.quality.Distribution`, or
    None where there is none): a classifier's predicted probability of the sidebar's class by
    actual class, a regressor's predictions beside its target on the sidebar's Scale; from the
    shared predictions of every row, cached."""
    from explainers.quality import probability_distribution, value_distribution

    if quality_problem(ctx) is not None or on_margin(ctx):
        return None  # no target, an outlier detector, an output not named; a margin is no probability
    if ctx.task == "regression":
        def spread():
            y, pred = _regression_pair(ctx)
            return value_distribution({"predicted": pred, "actual": pd.to_numeric(y, errors="coerce")},
                                      what=str(ctx.card.get("target") or ctx.y.name or "value"))

        return result_cache().get_or_compute(
            ("prediction_spread", ctx.model_key, ctx.data_key, target_output(ctx), *_units(ctx)), spread)
    ci = class_index(ctx)
    return result_cache().get_or_compute(
        ("prediction_spread", ctx.model_key, ctx.data_key, ci),
        lambda: probability_distribution(ctx.y, _predictions(ctx), list(ctx.adapter.classes), ci))


def segment_quality(ctx: ModelContext, active, threshold: float | None = None, positive: int | None = None):
    """``(segment's quality, rest's quality)``: :func:`model_quality` computed on the segment's
    rows and on the others' (same threshold and class), from the cached predictions; cached
    per model, data, segment, threshold and class. The results' ``rows`` are positions in
    the data as loaded, as the all-rows result's are."""
    from dataclasses import replace

    pred = _predictions(ctx)
    y = ctx.y
    if ctx.task == "regression":
        y, pred = _regression_pair(ctx)

        def part(rows):
            q = regression_quality(y.iloc[rows], pred[rows])
            return replace(q, rows=rows[q.rows])

        key = ("quality_segment", ctx.model_key, ctx.data_key, active.key, target_output(ctx), *_units(ctx))
    else:
        positive = class_index(ctx) if positive is None else positive
        t = DEFAULT_THRESHOLD if threshold is None else round(float(threshold), 2)

        def part(rows):
            q = _scored(ctx, rows, t, positive)
            return replace(q, rows=rows[q.rows])

        key = ("quality_segment", ctx.model_key, ctx.data_key, active.key, t if ctx.task == "binary" else None,
               positive, N_BINS)
    return result_cache().get_or_compute(key, lambda: (part(active.rows), part(active.rest)))


def segment_metrics_frame(q_segment, q_rest, shown: dict, segment_name: str) -> pd.DataFrame:
    """The metrics ``shown`` ({label: key of ``q.metrics``}) of the segment and of the rest,
    side by side (one row per metric, "rows" first); a metric not defined is empty."""
    def column(q):
        return [float(len(q.rows))] + [np.nan if q.metrics.get(k) is None else float(q.metrics[k])
                                       for k in shown.values()]

    return pd.DataFrame({f"Segment: {segment_name}": column(q_segment), "Rest": column(q_rest)},
                        index=pd.Index(["Rows scored", *shown], name="metric"))


def residual_feature(ctx: ModelContext, q, feature: str) -> np.ndarray:
    """The values of ``feature`` in the rows the quality result used (for residuals against it)."""
    return ctx.X[feature].to_numpy()[q.rows]


# ------------------------------------------------------------ rows listed
def cell_options(q) -> list[tuple[int, int]]:
    """The confusion matrix's cells (actual, predicted), mistakes first, then the rest;
    most rows first within each."""
    k = len(q.classes)
    m = q.confusion.matrix
    cells = [(i, j) for i in range(k) for j in range(k)]
    return sorted(cells, key=lambda c: (c[0] == c[1], -int(m[c])))


def cell_label(q, cell: tuple[int, int]) -> str:
    i, j = cell
    n = int(q.confusion.matrix[i, j])
    kind = "right" if i == j else "wrong"
    return f"actual {q.classes[i]}, predicted {q.classes[j]} ({n:,} rows, {kind})"


def cell_rows(q, cell: tuple[int, int]) -> pd.DataFrame:
    """The rows of one confusion-matrix cell: row, actual, predicted, the probability the
    model gives the actual class and the error (1 - that probability), largest error first."""
    i, j = cell
    mask = (q.y_true == i) & (q.y_pred == j)
    labels = [str(c) for c in q.classes]
    p_true = q.proba[mask, i]
    frame = pd.DataFrame({"row": q.rows[mask], "actual": labels[i], "predicted": labels[j]})
    word = "margin" if q.scale == "margin" else "P"
    if q.task == "binary":
        frame[f"{word}({labels[q.positive]})"] = q.proba[mask, q.positive]
    else:
        frame[f"{word}(predicted)"] = q.proba[mask, j]
    frame[f"{word}(actual)"] = p_true
    # the error: what the model falls short of the actual class by (a margin against it)
    frame["error"] = -p_true if q.scale == "margin" else 1.0 - p_true
    return frame.sort_values("error", ascending=False, kind="stable").reset_index(drop=True)


def band_rows(q, low: float | None, high: float | None) -> pd.DataFrame:
    """The rows whose residual (actual - predicted) is in [low, high): row, prediction, target,
    residual and the absolute error, largest error first."""
    keep = np.isin(q.rows, q.rows_in_band(low, high))
    frame = pd.DataFrame({"row": q.rows[keep], "prediction": q.y_pred[keep], "target": q.y_true[keep],
                          "residual": q.residuals[keep], "error": np.abs(q.residuals[keep])})
    return frame.sort_values("error", ascending=False, kind="stable").reset_index(drop=True)


def quantile_frame(q) -> pd.DataFrame:
    """The residual quantiles as a two-column table (quantile, residual)."""
    from dashboard.figures.style import fmt_number

    return pd.DataFrame({"quantile": [f"{a:.0%}" for a in q.quantiles],
                         "residual": [fmt_number(v) for v in q.quantiles.values()]})


def band_label(band) -> str:
    """A residual band as the page names it, with its bounds and size."""
    from dashboard.figures.style import fmt_number

    lo = "" if band.low is None or pd.isna(band.low) else fmt_number(band.low)
    hi = "" if band.high is None or pd.isna(band.high) else fmt_number(band.high)
    span = f"residual < {hi}" if not lo else f"residual ≥ {lo}" if not hi else f"{lo} ≤ residual < {hi}"
    return f"{band['name']}: {span} ({int(band.rows):,} rows)"


_GO_SHAP = "quality_go_shap"


def prepare_shap(row: int) -> None:
    """Callback of the "open on the SHAP page" button: the SHAP page will show ``row``, picked by
    its index. Only the SHAP page's controls change: the model, the class and the way back stay
    as they are (their values live in the state model, which a page switch never drops).
    :func:`go_to_shap` then switches, once."""
    set_value("shap_pick", "index")
    set_value("shap_row", int(row))
    st.session_state[_GO_SHAP] = True


def go_to_shap() -> None:
    """Switch to the SHAP page when :func:`prepare_shap` asked for it."""
    if st.session_state.pop(_GO_SHAP, False):
        st.switch_page("views/shap.py")


def rows_count(n: int) -> str:
    """'1 row', '12 rows'."""
    return f"{n:,} row" + ("" if n == 1 else "s")


def class_frame(q) -> pd.DataFrame:
    """The per-class table as the page shows it (one class against the rest)."""
    return q.per_class.rename(columns={"class": "class", "precision": "precision", "recall": "recall", "f1": "F1",
                                       "support": "rows of the class", "predicted": "rows predicted",
                                       "roc_auc": "ROC AUC", "average_precision": "average precision"})


def shown_metrics(ctx: ModelContext) -> dict[str, str]:
    """The metrics the Quality page (and the report) show for this model: label -> key of
    ``quality(...).metrics``; log loss only where the model gives probabilities."""
    if ctx.task == "binary":
        shown = {"Accuracy": "accuracy", "Precision": "precision", "Recall": "recall", "Specificity": "specificity",
                 "F1": "f1", "ROC AUC": "roc_auc"}
    elif ctx.task == "multiclass":
        shown = {"Accuracy": "accuracy", "Balanced accuracy": "balanced_accuracy", "Macro F1": "macro_f1",
                 "ROC AUC (one vs rest)": "roc_auc_ovr", "Log loss": "log_loss"}
    else:
        shown = {"R²": "r2", "MAE": "mae", "RMSE": "rmse", "MAPE": "mape", "Median abs. error": "median_ae",
                 "Max error": "max_error"}
    if on_margin(ctx):
        shown.pop("Log loss", None)  # needs probabilities
    return shown


def metric_text(key: str, value) -> str:
    """A metric as the pages write it: "not defined", a percentage (MAPE), else four significant figures."""
    from dashboard.figures.style import fmt_number

    return "not defined" if value is None else f"{value:.1%}" if key == "mape" else fmt_number(value)


def report_section(ctx: ModelContext):
    """The report's quality section: the Quality page's metrics at its threshold, as a table
    (None when the model cannot be scored: no target column)."""
    from dashboard import report

    if quality_problem(ctx) is not None:
        return None
    t = threshold() if ctx.task == "binary" and not on_margin(ctx) else None
    q = model_quality(ctx, t)
    table = pd.DataFrame({"metric": list(shown_metrics(ctx)),
                          "value": [metric_text(k, q.metrics[k]) for k in shown_metrics(ctx).values()]})
    where = f" at threshold {t:.2f} for {ctx.classes[class_index(ctx)]}" if t is not None else ""
    return report.Section("Model quality", f"Scored on {len(q.rows):,} rows of the data against its target"
                          f"{where}.", table=table.set_index("metric"))
