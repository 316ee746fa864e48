"""The sidebar's class (or output) pick and what it means for each page's figures."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .session import CLASS_INDEX, TARGET_OUTPUT, value

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


#: the target output picker's choice for "the target column is none of the outputs"
NO_TARGET_OUTPUT = "none of them"


def target_output_choices(ctx: ModelContext) -> list[str] | None:
    """What the sidebar offers for a regressor of several outputs loaded with one target column:
    the outputs it may hold the true values of, and "none of them"; None for other models."""
    if ctx.task != "regression" or getattr(ctx.adapter, "n_targets", 1) < 2 or ctx.y is None:
        return None
    return [str(n) for n in ctx.adapter.all_output_names] + [NO_TARGET_OUTPUT]


def default_target_output(ctx: ModelContext) -> str:
    """The output named like the target column, else "none of them" (the user says which)."""
    choices = target_output_choices(ctx) or [NO_TARGET_OUTPUT]
    name = str((getattr(ctx, "card", None) or {}).get("target") or getattr(ctx.y, "name", "") or "")
    return name if name in choices[:-1] else NO_TARGET_OUTPUT


def target_output(ctx: ModelContext) -> int | None:
    """For a regressor of several outputs: the position of the output whose true values the
    target column holds (picked in the sidebar), or None (not said, or another model)."""
    choices = target_output_choices(ctx)
    if choices is None:
        return None
    label = value(TARGET_OUTPUT)
    label = str(label) if label is not None and str(label) in choices else default_target_output(ctx)
    return None if label == NO_TARGET_OUTPUT else choices.index(label)
