"""The sidebar's class (or output) pick and what it means for each page's figures."""
from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from .session import CLASS_INDEX, SCALE, TARGET_OUTPUT, TARGET_TRANSFORM, set_value, value

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


# ------------------------------------------------------------------ the scale
#: the sidebar's Scale for a classifier with probabilities: what every page explains
PROBABILITY, LOG_ODDS = "probability", "log-odds"
SCALES = (PROBABILITY, LOG_ODDS)


#: a regressor fitted on a transformed target: its Scale
ORIGINAL, MODEL_SCALE = "original units", "model's scale"
NO_TRANSFORM = "none"


def transform_choices(ctx: ModelContext) -> list[str] | None:
    """What the Model page offers for "the model predicts": a one-target regressor's target
    transforms ("none" first); None for other models."""
    from explainers.target_scale import TRANSFORMS

    if ctx.task != "regression" or getattr(ctx.adapter, "n_targets", 1) > 1 or ctx.adapter.explained is not None:
        return None
    return [NO_TRANSFORM, *TRANSFORMS]


def default_transform(ctx: ModelContext) -> str:
    """The transform a served model came with (``glassbox serve --target-transform``, ``show(...,
    target_transform=)``), else "none"."""
    given = (getattr(ctx, "card", None) or {}).get("target_transform")
    return given if given in (transform_choices(ctx) or [])[1:] else NO_TRANSFORM


def target_transform(ctx: ModelContext) -> str | None:
    """The transform the user said the model's target went through (None: the target itself)."""
    choices = transform_choices(ctx)
    picked = value(TARGET_TRANSFORM, default_transform(ctx))
    return picked if choices is not None and picked in choices[1:] else None


def follow_model(ctx: ModelContext) -> None:
    """When the session moves to another model, its target transform starts from that model's
    default (the one said for a model is not another's); a link's transform for the model it
    opens stays."""
    ss = st.session_state
    if ss.get("_transform_for") not in (None, ctx.model_key):
        set_value(TARGET_TRANSFORM, default_transform(ctx))
    ss["_transform_for"] = ctx.model_key


def transformed_name(ctx: ModelContext) -> str:
    """"log(price)": the target as the model predicts it."""
    return f"{target_transform(ctx)}({target_name(ctx)})"


def target_name(ctx: ModelContext) -> str:
    return str((getattr(ctx, "card", None) or {}).get("target") or getattr(ctx.y, "name", None) or "target")


def scale_choices(ctx: ModelContext) -> tuple[str, ...] | None:
    """The Scale choices: probability or log-odds for a classifier that gives probabilities,
    original units or the model's scale for a regressor fitted on a transformed target; None
    for any other model (a classifier with a decision function only: its margin is all it has)."""
    if ctx.task == "regression":
        return (ORIGINAL, MODEL_SCALE) if target_transform(ctx) else None
    if ctx.classes is None or ctx.adapter.output == "raw" or not hasattr(ctx.model, "predict_proba"):
        return None
    return SCALES


def output_scale(ctx: ModelContext) -> str | None:
    """The sidebar's Scale (probability unless the user picked log-odds); None where there is none."""
    choices = scale_choices(ctx)
    if choices is None:
        return None
    picked = value(SCALE)
    return picked if picked in choices else choices[0]


def scale_key(ctx: ModelContext) -> str:
    """The scale's part of a cache key ("" for a model without a Scale)."""
    return output_scale(ctx) or ""


def effects_model(ctx: ModelContext):
    """What PDP/ICE, ALE, H statistics and What-if predictions are computed on: the model
    itself (its probabilities, or its values), or an adapter giving each class's log-odds
    ``log(p / (1 - p))`` when the Scale says log-odds."""
    scale = output_scale(ctx)
    if scale == LOG_ODDS:
        return ctx.adapter.with_output("log_odds", class_index=None)
    if scale == ORIGINAL:
        from explainers.target_scale import InOriginalUnits

        return InOriginalUnits(ctx.model, target_transform(ctx))
    return ctx.model


def _margin_is_native(ctx: ModelContext) -> bool:
    """Whether the model's own sum is its log-odds (margin): boosting trees, linear models."""
    return ctx.description.margin_is_native


def log_odds_output(ctx: ModelContext) -> str:
    """``explain``'s output for the log-odds scale: the model's own margin where its trees or
    coefficients add up to one ("auto": Tree SHAP, Linear SHAP, exact), each class's log-odds
    otherwise (a forest, a neural network)."""
    return "auto" if _margin_is_native(ctx) else "log_odds"


def shap_output(ctx: ModelContext, method: str, n_background: int) -> tuple[str, str | None]:
    """``explain``'s output for the sidebar's Scale and the SHAP method, and a note where the
    page must show another scale than the one picked (and why)."""
    scale = output_scale(ctx)
    if scale is None or scale == MODEL_SCALE:
        return "auto", None
    if scale == ORIGINAL:
        return "auto", (f"SHAP values are on the model's own scale, **{transformed_name(ctx)}**: there they add up "
                        f"exactly to the prediction, feature by feature. The prediction in {target_name(ctx)}'s "
                        "units is the inverse of their sum, which does not split into per-feature parts.")
    if scale == LOG_ODDS:
        out = log_odds_output(ctx)
        if out == "log_odds" and method == "auto":  # a forest or network: its log-odds are no sum of parts
            from explainers.shap.auto import choose_method

            # (Tree SHAP explains a forest's probabilities only: its log-odds go to the agnostic methods)
            chosen = choose_method(ctx.model, ctx.X.shape[1], n_background, output="log_odds", allow_tree=False)[0]
            if chosen == "kernel":
                return "auto", _estimate_note(ctx, "Log-odds", "probability", "log-odds")
        return out, None
    if method == "linear":
        return "auto", ("Linear SHAP explains the decision function: the values are on the log-odds scale. "
                        "Pick Method **exact** or **kernel** for probabilities.")
    if method in ("exact", "kernel", "tree"):
        return "proba", None
    from explainers.shap.auto import choose_method

    chosen, _ = choose_method(ctx.model, ctx.X.shape[1], n_background, output="proba")
    if chosen == "kernel":
        return log_odds_output(ctx), _estimate_note(ctx, "Probability-scale", "log-odds", "probabilities")
    return "proba", None


def _estimate_note(ctx: ModelContext, asked: str, shown: str, estimate_on: str) -> str:
    """Why the SHAP views show another scale than the one picked: there it would be an estimate."""
    return (f"{asked} SHAP values of this model would be a sampled estimate (Kernel SHAP: 2**{ctx.X.shape[1]} "
            f"coalitions are too many to evaluate); shown on the **{shown}** scale, where they are exact. Pick "
            f"Method **kernel** for the estimate on {estimate_on}.")


def adapter_output(explain_output: str, ctx: ModelContext) -> str:
    """The ModelAdapter output whose predictions match ``explain``'s output (for row pickers
    and the model's own prediction next to an explanation)."""
    if explain_output == "auto":
        return "raw" if _margin_is_native(ctx) else "auto"
    return explain_output


def scale_named(res, ctx: ModelContext):
    """An effect result (PDP, ALE) whose output names say the scale: "P(yes)" or "log-odds(yes)",
    so every title, axis and legend built from them names what the numbers are."""
    scale = output_scale(ctx)
    names = getattr(res, "output_names", None)
    if scale is None or not names:
        return res
    import dataclasses

    from dashboard.figures.style import output_words

    if scale == ORIGINAL:
        return dataclasses.replace(res, output_names=[f"{target_name(ctx)} (original units)"])
    if scale == MODEL_SCALE:
        return dataclasses.replace(res, output_names=[transformed_name(ctx)])
    kind = "proba" if scale == PROBABILITY else "log_odds"
    return dataclasses.replace(res, output_names=[output_words(kind, str(n), compact=True) for n in names])
