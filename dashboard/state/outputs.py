"""The sidebar's class (or output) pick and what it means for each page's figures."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .session import CLASS_INDEX, value

if TYPE_CHECKING:
    from .context import ModelContext


def one_margin(ctx: ModelContext) -> bool:
    """A binary classifier without probabilities, explained on its decision function: one
    output, the margin of its second class (SVC, LinearSVC, RidgeClassifier...)."""
    adapter = ctx.adapter
    return ctx.task == "binary" and adapter.output == "raw" and adapter.n_outputs == 1


def margin_caption(ctx: ModelContext) -> str | None:
    """What a classifier explained on its decision function shows (None for probabilities)."""
    if ctx.classes is None or ctx.adapter.output != "raw":
        return None
    if one_margin(ctx):
        yes, no = ctx.classes[1], ctx.classes[0]
        return (f"decision function (margin) of '{yes}': above 0 the model predicts '{yes}', below 0 "
                f"'{no}'. This model gives no probabilities.")
    return ("decision function (margin) of the picked class: the class with the highest margin is "
            "predicted. This model gives no probabilities.")


def output_choices(ctx: ModelContext) -> list[str] | None:
    """What the sidebar's picker offers: the classes of a classifier, the targets of a
    multi-output regressor (each explained on its own), None for one output (a binary
    classifier's one margin among them)."""
    if ctx.classes is not None:
        return None if one_margin(ctx) else ctx.classes
    adapter = ctx.adapter
    if getattr(adapter, "n_targets", 1) > 1:
        return [str(n) for n in adapter.all_output_names]
    return None


def picker_label(ctx: ModelContext) -> str:
    """"Class" for a classifier, "Output" for a multi-output regressor."""
    return "Class" if ctx.classes is not None else "Output"


def class_index(ctx: ModelContext) -> int:
    """Position of the sidebar's class (or output) among the model's (0 when none is picked).

    The widget holds the label, not its position: when the model changes, a
    label the new model lacks simply falls back to the first one.
    """
    if one_margin(ctx):
        return 1  # the margin is that of the second class
    label = value(CLASS_INDEX)
    choices = output_choices(ctx)
    if choices is None or label is None:
        return 0
    return choices.index(str(label)) if str(label) in choices else 0


def pdp_class(ctx: ModelContext) -> int | None:
    """The sidebar's class or output for PDP/ALE figures (None for one output)."""
    return None if output_choices(ctx) is None else class_index(ctx)


def output_index(ctx: ModelContext, n_outputs: int | None) -> int | None:
    """The sidebar's class as an index among a result's ``n_outputs`` outputs (None: one output)."""
    if n_outputs is None:
        return None
    return min(class_index(ctx), n_outputs - 1)


def shap_class(res, ctx: ModelContext) -> int | None:
    """The sidebar's class as an output index of a SHAP result (None for one output)."""
    return output_index(ctx, None if res.values.ndim == 2 else res.values.shape[2])
