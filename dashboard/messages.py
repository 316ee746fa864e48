"""Messages for analysts: the dashboard's wording of what :mod:`explainers` says to programmers.

An :class:`~explainers.ExplainerError` says what is wrong in the words of the Python
API ("Use ExactShap or KernelShap, or explain(method='auto')"), which is right in a
notebook and wrong on a page, where the fix is a widget to click. :func:`for_page`
turns the known messages into page wording, naming what to click on that page, and
rewrites any Python name left in an unknown one; :func:`reason` does the same for the
"why this method" notes of SHAP results. Everything the dashboard shows from an
exception goes through here (the one table of translations), so the library keeps its
own wording and the command line its own (``explainers/__main__.py``).

Pages: ``"shap"``, ``"importance"``, ``"model"``, ``"whatif"``, ``"pdp"``, ``"report"``;
any other name gets the wording that fits every page.
"""
from __future__ import annotations

import re
from typing import Callable

__all__ = ["for_page", "reason", "error_text", "PYTHON_NAMES"]

#: what the SHAP page's Method selectbox offers, as the page shows it
_SHAP_PICK = {
    "shap": "pick auto, exact or kernel under Method",
    "whatif": "the What if? page always picks the method for this model",
    "report": "the report always picks the method for this model",
}
_SHAP_PICK_DEFAULT = "on the SHAP page, pick auto, exact or kernel under Method"
_TREE_PICK = {"shap": "pick kernel under Method (or tree, for a tree model)"}

#: Python names that must never reach a page: tests check for these
PYTHON_NAMES = (
    "permutation_importance", "oob_permutation_importance", "shap_importance", "ExactShap",
    "KernelShap", "TreeShap", "LinearShap", "explain(", "method='", "max_evals", "n_samples",
    "nan_is_missing", "check_oob", "bootstrap=", "max_samples", "decision_function",
    "predict_proba", "output='",
)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _shap_pick(page: str) -> str:
    return _SHAP_PICK.get(page, _SHAP_PICK_DEFAULT)


def _holdout(page: str) -> str:
    if page == "importance":
        return "The holdout permutation (and mean |SHAP|, under Settings) on this page work for any model."
    return "The Importance page's holdout permutation works for any model."


def _load_page(page: str) -> str:
    return "below" if page == "model" else "on the Model page"


# (pattern, builder(match, page) -> sentence): the known messages of explainers/
_Rule = tuple[re.Pattern, Callable[[re.Match, str], str]]
_RULES: list[_Rule] = [
    # -------------------------------------------------------------- SHAP methods
    (re.compile(r"TreeShap explains tree models \([^)]*\); got (?P<m>[^.\s]+)\."),
     lambda m, p: (f"The tree method explains tree models only (decision trees, random forests, extra "
                   f"trees, gradient boosting, XGBoost, LightGBM and CatBoost models, and pipelines that "
                   f"fold into their trees); this model is a {m['m']}. {_cap(_shap_pick(p))}.")),
    (re.compile(r"LinearShap needs a linear model .*?; got (?P<m>[^.\s]+)\."),
     lambda m, p: (f"The linear method explains linear models only (a linear or logistic regression, "
                   f"optionally after a scaler); this model is a {m['m']}. {_cap(_shap_pick(p))}.")),
    (re.compile(r"LinearShap can fold only affine scalers .*? the pipeline step (?P<s>'[^']*') is a (?P<t>\w+)\."),
     lambda m, p: (f"The linear method sees through scalers only, and this pipeline's step {m['s']} is a "
                   f"{m['t']}. {_cap(_shap_pick(p))}.")),
    (re.compile(r"The model's outputs differ from its linear coefficients by up to (?P<e>\S+) on the "
                r"background, so it is not linear in its inputs here\."),
     lambda m, p: (f"The model's outputs differ from its linear coefficients by up to {m['e']}, so it is "
                   f"not linear here and the linear method does not apply. {_cap(_shap_pick(p))}.")),
    (re.compile(r"ExactShap needs 2\*\*(?P<p>\d+) coalitions x (?P<b>\d+) background rows = (?P<n>[\d,]+) "
                r"model evaluations per explained row, more than max_evals=(?P<mx>[\d,]+)\."),
     lambda m, p: (f"The exact method would need {m['n']} model evaluations per row (2^{m['p']} feature "
                   f"combinations × {m['b']} background rows), more than its limit of {m['mx']}. "
                   f"{_cap(_TREE_PICK.get(p, 'use the kernel method (sampled combinations)'))}.")),
    # ---------------------------------------------------------------- importance
    (re.compile(r"mdi (?:needs|reads) .*?scikit-learn tree model.*?; an? (?P<m>\w+) "),
     lambda m, p: (f"MDI reads the splits stored in scikit-learn tree models (decision trees, random "
                   f"forests, extra trees, gradient boosting); this model ({m['m']}) is not one. "
                   f"{_holdout(p)}")),
    (re.compile(r"\w+ needs a bagged forest \(RandomForest or ExtraTrees, classifier or regressor\); "
                r"got an? (?P<m>\w+)\."),
     lambda m, p: (f"Out-of-bag importance needs a bagged forest (random forest or extra trees); this "
                   f"model is a {m['m']}. {_holdout(p)}")),
    (re.compile(r"This (?P<m>\w+) was fit with bootstrap=False"),
     lambda m, p: (f"This {m['m']} was trained without bootstrap samples, so every tree saw every row "
                   f"and there are no out-of-bag rows. {_holdout(p)}")),
    (re.compile(r"No tree has out-of-bag rows"),
     lambda m, p: f"No tree of this forest left rows out of its sample, so there are no out-of-bag rows. {_holdout(p)}"),
    (re.compile(r"The forest was fit on (?P<a>[\d,]+) rows but X has (?P<b>[\d,]+)"),
     lambda m, p: (f"Out-of-bag importance needs the forest's own training rows: it was trained on "
                   f"{m['a']} rows and this data has {m['b']}. Load the training data, complete and in "
                   f"its original order, {_load_page(p)}. {_holdout(p)}")),
    (re.compile(r"do not reproduce the forest's stored oob predictions"),
     lambda m, p: (f"This data is not the forest's training data in its original order, so its "
                   f"out-of-bag rows cannot be found. Load the training data {_load_page(p)}. {_holdout(p)}")),
    # ------------------------------------------------------------------- outputs
    (re.compile(r"output='raw' is the decision function \(margin\) of a classifier, which this (?P<m>\w+) "
                r"does not have"),
     lambda m, p: f"This {m['m']} has no decision function (margin) to explain; its class probabilities can be."),
    (re.compile(r"output='(?:proba|log_odds)' needs predict_proba, which this (?P<m>\w+) does not have"),
     lambda m, p: f"This {m['m']} gives no class probabilities; only its decision function (margin) can be explained."),
]

# the names left in a message nobody translated: a readable word for each
_GENERIC: list[tuple[re.Pattern, str]] = [
    (re.compile(r"explain\(method='auto'\)"), "the auto method"),
    (re.compile(r"oob_permutation_importance"), "out-of-bag importance"),
    (re.compile(r"permutation_importance"), "holdout permutation importance"),
    (re.compile(r"shap_importance"), "mean |SHAP| importance"),
    (re.compile(r"\b(Exact|Kernel|Tree|Linear)Shap\b"), lambda m: f"the {m[1].lower()} method"),
    (re.compile(r"\bmethod='(\w+)'"), lambda m: f"the {m[1]} method"),
    (re.compile(r"\boutput='(\w+)'"), lambda m: {"raw": "the raw output", "proba": "probabilities",
                                                 "log_odds": "log-odds", "auto": "the default output"}
     .get(m[1], m[1])),
    (re.compile(r"\bmax_evals=([\d,]+)"), r"its limit of \1"),
    (re.compile(r"\bn_samples=([\d,]+)"), r"a budget of \1 sampled combinations"),
    (re.compile(r"\bnan_is_missing=True"), "'Treat as missing'"),
    (re.compile(r"\bdecision_function\b"), "decision function"),
    (re.compile(r"\bpredict_proba\b"), "class probabilities"),
    (re.compile(r"\bmax_samples\b"), "the sample size"),
    (re.compile(r"\bbootstrap=(True|False)"), lambda m: "bootstrap samples" if m[1] == "True" else "no bootstrap samples"),
    (re.compile(r"\bcheck_oob=False\b"), "no check"),
    (re.compile(r"\bexplain\("), "explaining ("),
]


def _generic(text: str) -> str:
    for pattern, repl in _GENERIC:
        text = pattern.sub(repl, text)
    return text


def for_page(message, page: str = "") -> str:
    """The message (an exception or its text) as the given page should show it.

    Known messages of :mod:`explainers` become a sentence that names what to click on
    that page; any other message keeps its words, with Python names rewritten.
    """
    text = message if isinstance(message, str) else error_text(message)
    for pattern, build in _RULES:
        m = pattern.search(text)
        if m:
            return build(m, page)
    return _generic(text)


def error_text(exc: BaseException) -> str:
    """What an exception says: an ExplainerError's own sentence, else a short note."""
    from explainers import ExplainerError

    if isinstance(exc, ExplainerError):
        return str(exc)
    return (f"Something went wrong ({type(exc).__name__}: {exc}). Nothing was changed; "
            "check the inputs and try again.")


_REQUESTED = re.compile(r"method='(\w+)' was requested")
_DECLINED = re.compile(r"TreeShap declined \((?P<why>.*)\); (?P<rest>[^;]*)$", re.S)


def reason(text: str, page: str = "shap") -> str:
    """Why a SHAP method was used (``ShapResult.params['reason']``), in page words."""
    if not text:
        return ""
    m = _DECLINED.search(text)
    if m:
        why = for_page(m["why"], page).split(". ")[0]
        return f"the tree method does not apply ({why.rstrip('.')}); {reason(m['rest'], page)}"
    text = _REQUESTED.sub(lambda m: ("picked under Method" if page == "shap" else f"the {m[1]} method was asked for"),
                          text)
    text = re.sub(r"2\*\*(\d+) = ([\d,]+) coalitions", r"2^\1 = \2 feature combinations", text)
    text = re.sub(r"all (\d[\d,]*) coalitions", r"all \1 feature combinations", text)
    return _generic(text)
