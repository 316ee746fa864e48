"""SHAP attributions without the black box.

``LinearShap`` (closed form), ``ExactShap`` (the definition, all coalitions),
``KernelShap`` (weighted least squares over sampled coalitions) and, once
``tree.py`` exists, ``TreeShap``; :func:`explain` picks one and records why.
``TreeShap.interactions`` and ``ExactShap.interactions`` give SHAP interaction
values (:class:`ShapInteractionResult`, see :mod:`.interactions`).
Every explainer returns a :class:`ShapResult` with the same fields, supports
missing-feature masks, and satisfies base + sum(values) == prediction.
"""
from .auto import EXPLAINERS, choose_method, explain, register_explainer
from .exact import MAX_EXACT_EVALS, ExactShap
from .interactions import MeanInteraction, ShapInteractionResult
from .kernel import KernelShap
from .linear import LinearShap, is_linear_model
from .result import ShapResult

__all__ = [
    "LinearShap",
    "ExactShap",
    "KernelShap",
    "explain",
    "ShapResult",
    "ShapInteractionResult",
    "MeanInteraction",
    "EXPLAINERS",
    "MAX_EXACT_EVALS",
    "choose_method",
    "is_linear_model",
    "register_explainer",
]

try:  # TreeShap lives in its own module, written separately; optional until then
    from .tree import TreeShap
except ImportError as _exc:  # only a missing tree.py is expected; re-raise real errors
    if getattr(_exc, "name", None) != f"{__name__}.tree":
        raise
else:
    register_explainer("tree", TreeShap)
    __all__.append("TreeShap")
