"""The What-if page's cached computations: an edited row, its SHAP values, and its verdict
at the Quality page's threshold.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .attribution import explain_on_scale, shap_setting, with_note
from .cache import result_cache
from .context import ModelContext
from .outputs import class_index


def edited_row(ctx: ModelContext, values: tuple) -> tuple[pd.DataFrame, tuple]:
    """One edited row as a frame with the data's column types, and its cache key values.

    A blank value (None or NaN) stays blank: NaN in the row, whatever the column's type;
    blanks enter the key as None (NaN != NaN), so an unchanged row finds its result again.
    """
    blank = tuple(v is None or (not isinstance(v, str) and bool(pd.isna(v))) for v in values)
    row = pd.DataFrame([[np.nan if b else v for v, b in zip(values, blank)]], columns=list(ctx.X.columns))
    for col, dtype in ctx.X.dtypes.items():
        try:
            row[col] = row[col].astype(dtype)
        except (TypeError, ValueError):  # a blank in an integer column stays a float NaN
            pass
    return row, tuple(None if b else v for v, b in zip(values, blank))


def explain_edited(ctx: ModelContext, values: tuple, missing: tuple[str, ...], empty_as_missing: bool = False):
    """SHAP values (automatic method, on the sidebar's Scale) of one edited row (:func:`edited_row`),
    cached by its values, mask and output."""
    row, key_values = edited_row(ctx, values)
    output, note = shap_setting(ctx, "auto")

    def compute():
        return explain_on_scale(ctx, row, "auto", missing, empty_as_missing, output)

    return with_note(result_cache().get_or_compute(
        ("whatif", ctx.model_key, ctx.data_key, key_values, missing, bool(empty_as_missing), output), compute), note)


def verdict(ctx: ModelContext, values: tuple, at: float) -> tuple[str, float] | None:
    """(class, probability of the sidebar's class) of one edited row at threshold ``at``, for a
    binary classifier with probabilities; None otherwise. The row is predicted the sidebar's
    class when that probability is at least ``at``."""
    if ctx.task != "binary" or not hasattr(ctx.model, "predict_proba"):
        return None

    pos = class_index(ctx)
    row, key_values = edited_row(ctx, values)

    def compute():
        return ctx.adapter.with_output("proba", class_index=None).predict(row)[0]

    proba = result_cache().get_or_compute(("verdict", ctx.model_key, ctx.data_key, key_values), compute)
    p = float(proba[pos])
    classes = ctx.classes
    return (classes[pos] if p >= at else classes[1 - pos]), p


def predicted_class(ctx: ModelContext, values: tuple) -> str | None:
    """The class a classifier predicts for one edited row (its own predict); None for a regressor."""
    if ctx.task == "regression":
        return None
    row, key_values = edited_row(ctx, values)
    return result_cache().get_or_compute(("whatif_class", ctx.model_key, ctx.data_key, key_values),
                                         lambda: str(ctx.adapter.predict_labels(row)[0]))

