"""explain(): pick a SHAP method for a model and say why.

The choice is an explicit dispatch dict (no class switching): ``"linear"``,
``"exact"``, ``"kernel"``, and ``"tree"`` when :mod:`explainers.shap.tree`
exists. ``method="auto"`` prefers the cheapest exact method:

1. TreeShap for tree models (exact, polynomial time), when available;
2. LinearShap for linear models (closed form), unless probabilities were asked for;
3. ExactShap when all 2**p coalitions cost no more than KernelShap's budget;
4. KernelShap otherwise.
"""
from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Sequence

from ..errors import ExplainerError, OutOfReachError, param_error
from ..description import describe
from ._common import Progress, as_frame, check_int, make_adapter
from .exact import MAX_EXACT_EVALS, ExactShap
from .kernel import KernelShap
from .linear import LinearShap
from .result import ShapResult

__all__ = ["explain", "EXPLAINERS", "register_explainer", "choose_method"]

#: method name -> explainer class; TreeShap is added when tree.py is present
EXPLAINERS: dict[str, type] = {"linear": LinearShap, "exact": ExactShap, "kernel": KernelShap}


def register_explainer(name: str, cls: type) -> None:
    """Add or replace a method in the dispatch dict (TreeShap uses this)."""
    EXPLAINERS[name] = cls


def _call(cls: type, model, background, options: dict, X, missing, nan_is_missing, progress):
    """Build and run an explainer, passing only the options its signature takes."""
    init = inspect.signature(cls.__init__).parameters
    kwargs = {k: v for k, v in options.items() if k in init}
    explainer = cls(model, background, **kwargs)
    run = inspect.signature(explainer.explain).parameters
    ekw = {"nan_is_missing": nan_is_missing}
    if "progress" in run:
        ekw["progress"] = progress
    if "random_state" in run and "random_state" not in init:
        ekw["random_state"] = options.get("random_state", 0)
    return explainer.explain(X, missing, **ekw)


def choose_method(
    model,
    n_features: int,
    n_background: int,
    *,
    output: str = "auto",
    n_samples: int = 2048,
    max_evals: int = MAX_EXACT_EVALS,
    allow_tree: bool = True,
) -> tuple[str, str]:
    """Return (method, reason) for ``method="auto"``; see the module docstring.

    The model's :func:`~explainers.description.describe` decides which exact engine applies.
    """
    desc = describe(model)
    if allow_tree and "tree" in EXPLAINERS and desc.tree:
        return "tree", f"{type(model).__name__} is a tree model: TreeShap is exact and fast"
    if desc.linear:
        if output in ("auto", "raw"):
            space = "prediction" if desc.task == "regression" else "decision-function (log-odds)"
            return "linear", f"{type(model).__name__} is linear: closed form in its {space} space"
        linear_note = f"linear model, but output={output!r} is not linear in the features; "
    else:
        linear_note = desc.fold_note
    coalitions = 2**n_features
    evals = coalitions * n_background
    if coalitions - 2 <= n_samples and evals <= max_evals:
        return "exact", (
            f"{linear_note}{n_features} features: all {coalitions} coalitions fit in "
            f"n_samples={n_samples}, so the exact definition costs no more than KernelShap"
        )
    return "kernel", (
        f"{linear_note}{n_features} features: 2**{n_features} = {coalitions:,} coalitions is "
        f"more than n_samples={n_samples}, so KernelShap samples them"
    )


def explain(
    model,
    X,
    *,
    background=None,
    method: str = "auto",
    missing=None,
    nan_is_missing: bool | str = "auto",
    output: str = "auto",
    class_index: int | None = None,
    feature_names: Sequence[str] | None = None,
    n_samples: int = 2048,
    random_state: int | None = 0,
    max_evals: int = MAX_EXACT_EVALS,
    tree_mode: str | None = None,
    progress: Progress | None = None,
) -> ShapResult:
    """Explain rows of X with SHAP values, picking the method if asked.

    Parameters
    ----------
    model : object
        A fitted model (see :class:`~explainers.ModelAdapter`).
    X : DataFrame or array-like of shape (n_rows, n_features)
        Rows to explain.
    background : DataFrame or array-like, default=None
        Rows standing in for missing features; ``None`` draws a seeded sample
        of up to 100 complete rows of X.
    method : {"auto", "linear", "exact", "kernel", "tree"}, default="auto"
        ``"tree"`` only once :mod:`explainers.shap.tree` exists.
    missing : bool array of shape (n_features,) or (n_rows, n_features), or feature names, default=None
        Features to leave out of the game (attribution 0, prediction f_S(x_S)).
    nan_is_missing : bool, default=True
        Also treat NaN cells of X as missing.
    output : {"auto", "raw", "proba", "log_odds"}, default="auto"
        For classifiers ``"auto"`` means probabilities, except that a linear
        model is explained in its decision-function (log-odds) space by
        LinearShap; ask ``"proba"`` to explain probabilities instead.
    class_index : int, default=None
        Explain one output column only.
    feature_names : sequence of str, default=None
    n_samples : int, default=2048
        KernelShap's coalition budget (also decides Exact vs Kernel).
    random_state : int, default=0
        Seeds the background sample and KernelShap's draws.
    max_evals : int, default=MAX_EXACT_EVALS
        ExactShap's limit on 2**n_features x n_background.
    tree_mode : {"path_dependent", "interventional"} or None, default=None
        TreeShap's value function. None: ``"interventional"`` when a
        background is given (so Tree, Exact and Kernel answer the same
        question about the same background), ``"path_dependent"`` (training
        cover, no background) otherwise.
    progress : callable(done_rows, total_rows), default=None

    Returns
    -------
    ShapResult
        ``method`` names the explainer used and ``params["reason"]`` why.

    Raises
    ------
    InvalidParameterError
        For an unknown method (the message lists those available).
    """
    _check_request(method, n_samples, output)
    adapter = make_adapter(model, feature_names=feature_names, output=output, class_index=class_index)
    frame = as_frame(adapter, X)
    options = {
        "output": output,
        "class_index": class_index,
        "feature_names": adapter.feature_names,
        "n_samples": n_samples,
        "random_state": random_state,
        "max_evals": max_evals,
        # probabilities of a boosting model are a game against background rows (a sample of X when none is given)
        "mode": tree_mode or ("path_dependent" if background is None and output != "proba" else "interventional"),
    }
    if options["mode"] not in ("path_dependent", "interventional"):
        raise param_error("tree_mode", "explain", "'path_dependent', 'interventional' or None", tree_mode)
    choice = dict(output=output, n_samples=n_samples, max_evals=max_evals)
    if method == "auto":
        # the default background is a sample of at most 100 rows of X
        n_bg = min(100, len(frame)) if background is None else len(adapter.to_frame(background))
        chosen, reason = choose_method(adapter.model, frame.shape[1], n_bg, **choice)
    else:
        chosen, reason = method, f"method={method!r} was requested"
    run = (adapter.model, background, options, frame, missing, nan_is_missing, progress)
    try:
        res = _call(EXPLAINERS[chosen], *run)
    except ExplainerError as exc:
        # an exact answer out of reach is said, not swapped for KernelShap's estimate of it
        if method != "auto" or chosen != "tree" or isinstance(exc, OutOfReachError):
            raise
        # TreeShap declined this model: fall back to the model-agnostic choice
        chosen, reason2 = choose_method(adapter.model, frame.shape[1], n_bg, allow_tree=False, **choice)
        reason = f"TreeShap declined ({exc}); {reason2}"
        res = _call(EXPLAINERS[chosen], *run)
    if res.method == "tree":
        reason = f"{reason} ({options['mode'].replace('_', '-')} value function)"
    return replace(res, params={**res.params, "reason": reason, "method_requested": method})


def _check_request(method: str, n_samples, output: str) -> None:
    """The method, KernelShap's budget and the output, checked before any work."""
    if method != "auto" and method not in EXPLAINERS:
        raise param_error("method", "explain", f"one of {['auto', *EXPLAINERS]}", method)
    check_int(n_samples, "n_samples", "explain", 1)
    if method == "linear" and output not in ("auto", "raw"):
        raise param_error(
            "output",
            "explain with method='linear'",
            "'auto' or 'raw' (LinearShap explains the decision function; use method='exact' "
            "or 'kernel' for probabilities)",
            output,
        )
