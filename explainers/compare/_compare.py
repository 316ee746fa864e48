"""Several fitted models scored side by side on the same rows, with paired bootstrap intervals.

The metrics of each model on the rows with a target, the difference of every pair of models
with a paired bootstrap percentile interval (the same resampled rows for both models in each
replicate), McNemar's exact test for the difference in accuracy, and the rows on which two
models disagree most.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..importance._common import rows_left_out_note
from ._inputs import (
    check_budget,
    check_metrics,
    check_models,
    check_options,
    predict,
    read_target,
    take_rows,
)
from ._metrics import Plan, Predictions, Truth, point, replicates

#: replicates x rows of the bootstrap weights held at once: bounds memory (32 MiB of float64)
MAX_CELLS = 2**22


@dataclass(frozen=True)
class ComparisonResult:
    """Models scored side by side on the same rows.

    Attributes
    ----------
    metrics : DataFrame of shape (n_models, n_metrics)
        One row per model name (the index, in the order given), one column per metric:
        scikit-learn's value on the rows scored (NaN where undefined).
    differences : DataFrame
        One row per unordered pair of models (``model_a`` before ``model_b`` in the order
        given) and metric, pair by pair: ``model_a``, ``model_b``, ``metric``, ``difference``
        (a - b on the rows scored), ``low``, ``high`` (paired bootstrap percentile interval of
        the difference), ``p_value`` (McNemar's exact test for ``accuracy``, NaN otherwise),
        ``significant`` (the interval excludes 0) and ``skipped`` (replicates in which the
        metric was undefined, left out of the interval).
    disagreement : DataFrame
        Up to ``n_disagree`` rows of X (indexed by X's own labels), the rows on which the two
        models of ``params["pair"]`` differ most, largest ``|difference|`` first (ties in row
        order): ``prediction_<a>``, ``prediction_<b>``, ``difference`` (a - b), ``truth``.
    params : dict
        The options (``n_boot``, ``confidence``, ``random_state``, ``metrics``, ``pair``,
        ``n_disagree``) and the rows: ``n_rows`` scored, ``n_left_out`` (empty target),
        ``n_unknown`` (a label that is no class of the models).
    notes : list of str
        What the reader should know: rows left out, metrics a model cannot have, replicates skipped.
    task : {"regression", "binary", "multiclass"}
    classes : list or None
        The classes, in the first model's order (the other models' are lined up with them).
    """

    metrics: pd.DataFrame
    differences: pd.DataFrame
    disagreement: pd.DataFrame
    params: dict
    notes: list = field(default_factory=list)
    task: str = "regression"
    classes: list | None = None


def compare_models(models, X, y, *, metrics=None, n_boot: int = 1000, random_state: int | None = 0,
                   confidence: float = 0.95, n_disagree: int = 50, pair=None) -> ComparisonResult:
    """Score several fitted models on the same rows and compare every pair.

    Parameters
    ----------
    models : dict {name: fitted model}
        At least two scikit-learn estimators or Pipelines, or anything
        :class:`~explainers.model.ModelAdapter` accepts (an adapter too), of one kind:
        regressors, or classifiers of the same classes (lined up by their text). Each model
        reads its own columns of X (by name), so models fitted on different columns compare.
    X : DataFrame or array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        The target. Rows without one (NaN, None, blank text) are left out and counted;
        labels are matched to the classes as text (``"1"`` is the class ``1``), and labels
        that are no class are left out and counted too.
    metrics : list of str, default=None
        Classifiers: among ``roc_auc``, ``log_loss``, ``accuracy``, ``balanced_accuracy``,
        ``brier``; regressors: ``r2``, ``mae``, ``rmse``. None: all of them. Binary: ROC AUC and
        Brier of ``P(classes[1])``. Multiclass: ROC AUC one-vs-rest, macro-averaged, and the
        Brier score of ``brier_score_loss`` on all class probabilities (sum over classes of
        the squared error, in [0, 2]). Accuracy and balanced accuracy score each model's own
        ``predict``. A classifier without ``predict_proba`` is ranked by its decision function
        for ROC AUC, and its log loss and Brier score are NaN.
    n_boot : int >= 0, default=1000
        Bootstrap replicates (0: no intervals). ``n_boot`` times the rows scored is at most
        200,000,000.
    random_state : int or None, default=0
        Seed of ``rng = np.random.default_rng(random_state)``. Replicate ``b`` (in order,
        b = 0 ... n_boot - 1) draws its rows as ``rng.integers(0, n, size=n)``, one call per
        replicate, ``n`` the rows scored (positions among them, in X's order).
    confidence : float in (0, 1), default=0.95
        Of the percentile interval: ``np.percentile`` (linear) of the replicate differences
        at ``100 * (1 - confidence) / 2`` and ``100 * (1 + confidence) / 2``. A replicate in
        which a metric is undefined (one class only for ROC AUC, a constant target for R²) is
        left out of that metric's intervals and counted in ``skipped``.
    n_disagree : int >= 0, default=50
        Rows in the disagreement table.
    pair : tuple of two model names, default=None
        The models the disagreement table compares; None: the first two given. Predictions
        there are the probability of ``classes[1]`` (binary), the probability of the row's
        true class (multiclass) or the value (regression); a classifier without
        ``predict_proba`` counts as its predicted class (1 for it, 0 for the others).

    Returns
    -------
    ComparisonResult

    Raises
    ------
    InvalidParameterError
        Fewer than two models, an unknown metric, an option out of range, too much work.
    InvalidModelError
        Models of different kinds (regressor and classifier) or classes; an outlier detector.
    InvalidDataError
        A model needs columns X lacks (named); no target; a regression target not numbers.

    Examples
    --------
    >>> cmp = compare_models({"forest": forest, "logistic": logit}, X, y)   # doctest: +SKIP
    >>> cmp.metrics; cmp.differences.query("significant")                 # doctest: +SKIP
    """
    adapters = check_models(models)
    names = list(adapters)
    picked = pair is not None
    first = adapters[names[0]]
    chosen = check_metrics(metrics, first.task)
    n_boot, confidence, n_disagree, pair = check_options(n_boot, random_state, confidence, n_disagree, pair, names)
    truth = read_target(y, X, first.task, first.classes)
    check_budget(n_boot, len(truth.rows))
    rows = take_rows(X, truth.rows)
    preds = {name: predict(name, a, rows, truth.classes) for name, a in adapters.items()}
    table = pd.DataFrame({m: [point(m, preds[n], truth) for n in names] for m in chosen},
                         index=pd.Index(names, name="model"), columns=list(chosen), dtype=float)
    plans = {name: Plan(p, truth) for name, p in preds.items()}
    reps = _bootstrap(plans, chosen, n_boot, random_state, len(truth.rows))
    diffs = _differences(names, chosen, table, reps, plans, confidence)
    params = {"n_boot": n_boot, "confidence": confidence, "random_state": random_state, "metrics": list(chosen),
              "pair": pair, "n_disagree": n_disagree, "n_rows": len(truth.rows), "n_left_out": truth.n_left_out,
              "n_unknown": truth.n_unknown}
    notes = _notes(preds, truth, table, diffs, pair, n_boot, default_pair=not picked)
    return ComparisonResult(metrics=table, differences=diffs,
                            disagreement=_disagreement(preds[pair[0]], preds[pair[1]], truth, n_disagree),
                            params=params, notes=notes, task=first.task,
                            classes=None if truth.classes is None else list(truth.classes))


# ----------------------------------------------------------------- bootstrap
def _bootstrap(plans: dict, metrics, n_boot: int, random_state, n: int) -> dict:
    """{(model, metric): ndarray (n_boot,)} of the metric in each replicate, the replicates
    drawn as :func:`compare_models` documents and weighted in blocks of ``MAX_CELLS``."""
    rng = np.random.default_rng(random_state)
    out = {(name, m): np.empty(n_boot) for name in plans for m in metrics}
    block = max(1, MAX_CELLS // n)
    for start in range(0, n_boot, block):
        b = min(block, n_boot - start)
        counts = _counts(np.stack([rng.integers(0, n, size=n) for _ in range(b)]), n)
        for name, plan in plans.items():
            for m, values in replicates(metrics, plan, counts).items():
                out[name, m][start:start + b] = values
    return out


def _counts(idx: np.ndarray, n: int) -> np.ndarray:
    """How often each row is drawn in each replicate: ndarray (b, n) of float."""
    b = len(idx)
    flat = (idx + (np.arange(b) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n).astype(float)


def mcnemar(correct_a, correct_b) -> float:
    """McNemar's exact test of two classifiers on the same rows (bool arrays: row predicted right).

    Two-sided exact binomial test on the discordant rows: with ``b`` rows only a gets right
    and ``c`` only b does, ``p = min(1, 2 * P(X <= min(b, c)))``, ``X ~ Binomial(b + c, 1/2)``;
    1.0 when ``b + c == 0``.
    """
    from scipy.stats import binom

    a, o = np.asarray(correct_a, bool), np.asarray(correct_b, bool)
    b, c = int(np.sum(a & ~o)), int(np.sum(~a & o))
    if b + c == 0:
        return 1.0
    return float(min(1.0, 2.0 * binom.cdf(min(b, c), b + c, 0.5)))


def _differences(names, metrics, table: pd.DataFrame, reps: dict, plans: dict, confidence: float) -> pd.DataFrame:
    tail = 100.0 * (1.0 - confidence) / 2.0
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for m in metrics:
                d = reps[a, m] - reps[b, m]
                ok = np.isfinite(d)
                low, high = np.percentile(d[ok], [tail, 100.0 - tail]) if ok.any() else (np.nan, np.nan)
                p = mcnemar(plans[a].correct == 1, plans[b].correct == 1) if m == "accuracy" else np.nan
                out.append({"model_a": a, "model_b": b, "metric": m, "difference": table.at[a, m] - table.at[b, m],
                            "low": float(low), "high": float(high), "p_value": p,
                            "significant": bool(low > 0 or high < 0), "skipped": int((~ok).sum())})
    cols = ["model_a", "model_b", "metric", "difference", "low", "high", "p_value", "significant", "skipped"]
    return pd.DataFrame(out, columns=cols)


# -------------------------------------------------------------- disagreement
def _shown(p: Predictions, t: Truth) -> np.ndarray:
    """The prediction the disagreement table compares (see :func:`compare_models`'s ``pair``)."""
    if t.task == "regression":
        return p.value
    target = 1 if t.task == "binary" else t.y
    if p.proba is not None:
        return p.proba[:, 1] if t.task == "binary" else p.proba[np.arange(len(t.y)), t.y]
    return (p.labels == target).astype(float)


def _disagreement(pa: Predictions, pb: Predictions, t: Truth, n_disagree: int) -> pd.DataFrame:
    va, vb = _shown(pa, t), _shown(pb, t)
    diff = va - vb
    order = np.argsort(-np.abs(diff), kind="stable")[:n_disagree]
    truth = t.y if t.classes is None else np.asarray(t.classes)[t.y]
    return pd.DataFrame({f"prediction_{pa.name}": va[order], f"prediction_{pb.name}": vb[order],
                         "difference": diff[order], "truth": truth[order]}, index=t.index[order])


# --------------------------------------------------------------------- notes
def _notes(preds: dict, t: Truth, table: pd.DataFrame, diffs: pd.DataFrame, pair, n_boot: int, *,
           default_pair: bool) -> list:
    n_all = len(t.rows) + t.n_left_out + t.n_unknown
    notes = [rows_left_out_note(t.n_left_out, n_all)] if t.n_left_out else []
    if t.n_unknown:
        notes.append(f"{t.n_unknown:,} rows left out: their label is no class of the models "
                     f"({', '.join(map(str, t.classes))}).")
    for name, p in preds.items():
        if t.task != "regression" and p.proba is None:
            notes.append(f"{name!r} has no predict_proba: its log_loss and brier are NaN (they score probabilities), "
                         "its roc_auc ranks rows by its decision function, and in the disagreement table it counts "
                         "as its predicted class (1 for it, 0 for the others).")
    if "roc_auc" in table and table["roc_auc"].isna().all() and t.task != "regression":
        notes.append("roc_auc is undefined on these rows: "
                     + ("the target has one class only." if t.task == "binary" else "some class has no row."))
    if t.task == "multiclass":
        notes.append("The disagreement table compares the probability each model gives the row's true class.")
    if len(preds) > 2:
        notes.append(f"The disagreement table compares {pair[0]!r} and {pair[1]!r}"
                     + (", the first two models given (pass pair= to pick two others)." if default_pair else "."))
    if n_boot == 0:
        notes.append("n_boot=0: no bootstrap, so the intervals are NaN.")
    for m, s in diffs.groupby("metric", sort=False)["skipped"].max().items():
        if 0 < s < n_boot and m in ("roc_auc", "r2"):  # log_loss and brier: all or none (probabilities or not)
            notes.append(f"{m}: {s:,} of {n_boot:,} bootstrap replicates left out of its intervals, where it is "
                         "undefined (" + ("a class absent from the replicate)." if m == "roc_auc"
                                          else "a constant target)."))
    return notes
