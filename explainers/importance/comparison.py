"""Importance methods side by side: shares, ranks, rank agreement and flags.

:func:`compare_importances` aligns the results on their common features,
puts each on the scale of a share of its total, ranks them, measures how far
the rankings agree (Spearman, Kendall) and flags the features where the methods
disagree, with the likely reason (high cardinality, correlation) when the data
give evidence for one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import InvalidFeatureError, param_error
from .result import ImportanceResult

__all__ = ["ImportanceComparison", "compare_importances"]


@dataclass(frozen=True, eq=False)
class ImportanceComparison:
    """Several importance methods side by side.

    Attributes
    ----------
    methods : list of str
        One label per compared result (columns of the frames below).
    shares : DataFrame (features x methods)
        Each method's importances as a share of its total (negative values
        clipped to 0 first: a shuffle that helps the model means "no importance").
    stds : DataFrame (features x methods)
        The std of each result on the same scale as ``shares``.
    ranks : DataFrame (features x methods)
        1 = most important; ties share the average rank.
    table : DataFrame
        Per feature: the shares, the ranks, ``mean_share``, ``rank_spread``
        (max - min rank) and ``flagged``; sorted by ``mean_share``.
    spearman, kendall : DataFrame (methods x methods)
        Rank agreement between each pair of methods.
    flags : DataFrame with columns ``feature``, ``reason``, ``detail``
        (a boosting library's gain, cover and split count count as MDI does here: they
        are read from the training splits)
        Features where the methods disagree, with the likely reason:
        ``"high_cardinality"``, ``"correlated"`` or ``"disagreement"``.
    notes : list of str
        What was dropped or assumed (e.g. features not in every result).
    """

    methods: list
    shares: pd.DataFrame
    stds: pd.DataFrame
    ranks: pd.DataFrame
    table: pd.DataFrame
    spearman: pd.DataFrame
    kendall: pd.DataFrame
    flags: pd.DataFrame
    notes: list = field(default_factory=list)
    results: list = field(default_factory=list, repr=False)


_KIND = {"mdi": "impurity", "permutation": "permutation", "oob_permutation": "permutation",
         "shap": "shap"}


def _kind(method: str) -> str:
    """The family of a method: a boosting library's own gain, cover or split count is, like MDI,
    read from the training splits ("impurity"), and shares MDI's bias towards many split points."""
    if method.startswith(("xgboost_", "lightgbm_", "catboost_")):
        return "impurity"
    return _KIND.get(method, method)


def compare_importances(
    results: Sequence[ImportanceResult],
    *,
    X=None,
    min_gap: float = 0.05,
    min_rank_spread: float = 2,
    correlation_threshold: float = 0.7,
) -> ImportanceComparison:
    """Put importance results side by side and flag where they disagree.

    Parameters
    ----------
    results : sequence of ImportanceResult
        At least two, over the same features (features missing from any result
        are left out, and said so in ``notes``).
    X : DataFrame or array-like, default=None
        The data, to give evidence for the flags: distinct values per feature
        (MDI favours high cardinality) and correlations (correlated features share
        permutation importance). Without it the reasons are stated as likely.
    min_gap : float, default=0.05
        A feature is flagged when its largest share exceeds its smallest by at
        least this much and by a factor of 2, and its ranks differ by at least
        ``min_rank_spread``; and by more than the permutations' own noise could:
        :data:`NOISE_Z` standard errors of the two shares' difference (a permutation
        share's standard error is its std over the repeats / sqrt(repeats); a negative
        permutation importance counts as the negative share it is).
    min_rank_spread : float, default=2
        Smallest difference between a feature's best and worst rank that counts
        as disagreement (shares alone differ in scale between methods).
    correlation_threshold : float, default=0.7
        |Pearson r| from which two numeric features count as correlated.

    Returns
    -------
    ImportanceComparison
    """
    results = _check_compare_args(results, min_gap, min_rank_spread, correlation_threshold)
    labels = _unique_labels(results)
    common, notes = _common_features(results)
    shares, stds = _shares(results, labels, common, notes)
    raw_imp = pd.DataFrame(
        {lab: r.importances[[r.feature_names.index(f) for f in common]] for lab, r in zip(labels, results)},
        index=pd.Index(common, name="feature"),
    )
    ranks = raw_imp.rank(ascending=False, method="average")
    spear, kend = _rank_agreement(raw_imp, labels)
    flags = _flags(common, labels, results, shares, _standard_errors(results, labels, stds), ranks, X, min_gap,
                   min_rank_spread, correlation_threshold)
    table = _table(shares, ranks, flags)
    return ImportanceComparison(
        methods=labels, shares=shares, stds=stds, ranks=ranks, table=table,
        spearman=spear, kendall=kend, flags=flags, notes=notes, results=results,
    )


# ------------------------------------------------------------------------ alignment
def _check_compare_args(results, min_gap, min_rank_spread, correlation_threshold) -> list:
    func = "compare_importances"
    results = list(results) if results is not None else []
    if len(results) < 2 or not all(isinstance(r, ImportanceResult) for r in results):
        raise param_error("results", func, "a sequence of at least 2 ImportanceResult objects",
                          [type(r).__name__ for r in results])
    if not 0 <= min_gap < 1:
        raise param_error("min_gap", func, "a float in [0, 1)", min_gap)
    if not min_rank_spread >= 0:
        raise param_error("min_rank_spread", func, "a number >= 0", min_rank_spread)
    if not 0 < correlation_threshold <= 1:
        raise param_error("correlation_threshold", func, "a float in (0, 1]", correlation_threshold)
    return results


def _unique_labels(results) -> list[str]:
    """Each result's label, numbered ``#2``, ``#3``, ... where it repeats."""
    labels: list[str] = []
    for r in results:
        lab, i = r.label, 2
        while lab in labels:
            lab, i = f"{r.label} #{i}", i + 1
        labels.append(lab)
    return labels


def _common_features(results) -> tuple[list, list[str]]:
    """The features in every result (in the first one's order), and a note on the others."""
    notes: list[str] = []
    common = [f for f in results[0].feature_names if all(f in r.feature_names for r in results[1:])]
    if len(common) < 2:
        raise InvalidFeatureError(
            "The results share fewer than 2 feature names, so they cannot be compared. "
            "Compute them on the same model and columns (MDI of a Pipeline names the "
            "transformed columns; compare it with results on the same columns)."
        )
    dropped = sorted({f for r in results for f in r.feature_names} - set(common))
    if dropped:
        notes.append(f"Left out {len(dropped)} feature(s) not in every result: {', '.join(dropped[:10])}.")
    return common, notes


def _shares(results, labels, common, notes) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Importances and stds as shares of each result's clipped total; notes negative ones."""
    shares, stds = {}, {}
    for lab, r in zip(labels, results):
        pos = {f: i for i, f in enumerate(r.feature_names)}
        idx = [pos[f] for f in common]
        imp = np.clip(r.importances[idx], 0, None)
        total = imp.sum()
        if (r.importances[idx] < 0).any():
            notes.append(f"{lab}: negative importances counted as 0 in the shares.")
        shares[lab] = imp / total if total > 0 else np.zeros(len(common))
        stds[lab] = r.std[idx] / total if total > 0 else np.zeros(len(common))
    index = pd.Index(common, name="feature")
    return pd.DataFrame(shares, index=index), pd.DataFrame(stds, index=index)


def _rank_agreement(raw_imp: pd.DataFrame, labels) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Spearman and Kendall correlation of each pair of methods' importances."""
    from scipy.stats import kendalltau, spearmanr

    spear = pd.DataFrame(np.eye(len(labels)), index=labels, columns=labels)
    kend = spear.copy()
    for a in range(len(labels)):
        for b in range(a + 1, len(labels)):
            xa, xb = raw_imp.iloc[:, a].to_numpy(), raw_imp.iloc[:, b].to_numpy()
            if np.ptp(xa) == 0 or np.ptp(xb) == 0:
                rho = tau = np.nan  # a constant ranking agrees with nothing
            else:
                rho = float(spearmanr(xa, xb).statistic)
                tau = float(kendalltau(xa, xb).statistic)
            spear.iloc[a, b] = spear.iloc[b, a] = rho
            kend.iloc[a, b] = kend.iloc[b, a] = tau
    return spear, kend


def _table(shares: pd.DataFrame, ranks: pd.DataFrame, flags: pd.DataFrame) -> pd.DataFrame:
    table = pd.concat(
        {"share": shares, "rank": ranks}, axis=1
    )
    table.columns = [f"{a}: {b}" for a, b in table.columns]
    table["mean_share"] = shares.mean(axis=1)
    table["rank_spread"] = ranks.max(axis=1) - ranks.min(axis=1)
    table["flagged"] = table.index.isin(flags["feature"])
    return table.sort_values("mean_share", ascending=False)


# ---------------------------------------------------------------------------- flags
#: a gap between two methods' shares counts only beyond this many standard errors of their
#: difference (a permutation's mean over n repeats: std / sqrt(n); the other methods: 0)
NOISE_Z = 3.0


def _standard_errors(results, labels, stds: pd.DataFrame) -> pd.DataFrame:
    """The standard error of each share: a permutation's spread over its repeats, else 0."""
    out = stds.copy()
    for lab, r in zip(labels, results):
        repeats = r.params.get("n_repeats") if _kind(r.method) == "permutation" else None
        out[lab] = stds[lab] / np.sqrt(repeats) if repeats else 0.0
    return out


def _signed_shares(results, labels, features) -> pd.DataFrame:
    """Each importance over its result's clipped total, a negative one kept negative (a
    permutation far below 0 is far from a method that gives the feature a share)."""
    out = {}
    for lab, r in zip(labels, results):
        imp = r.importances[[r.feature_names.index(f) for f in features]]
        total = np.clip(imp, 0, None).sum()
        out[lab] = imp / total if total > 0 else np.zeros(len(features))
    return pd.DataFrame(out, index=pd.Index(features, name="feature"))


def _flags(features, labels, results, shares, ses, ranks, X, min_gap, min_spread, corr_thr) -> pd.DataFrame:
    """One row per feature the methods disagree on, with the likely reason; a gap that the
    permutations' own noise could make (NOISE_Z standard errors) is no disagreement."""
    kinds = {lab: _kind(r.method) for lab, r in zip(labels, results)}
    signed = _signed_shares(results, labels, features)
    perm_cols = [lab for lab in labels if kinds[lab] == "permutation"]
    other_cols = [lab for lab in labels if kinds[lab] in ("impurity", "shap")]
    mdi_cols = [lab for lab in labels if kinds[lab] == "impurity"]
    n_rows, n_unique, corr = _data_evidence(X, features, results[0].feature_names)
    rows = []
    for f in features:
        s = shares.loc[f]
        hi, lo = float(s.max()), float(s.min())
        r = ranks.loc[f]
        if not (hi - lo >= min_gap and hi >= 2 * lo and r.max() - r.min() >= min_spread):
            continue
        a, b = s.idxmax(), s.idxmin()
        if signed.loc[f, a] - signed.loc[f, b] <= NOISE_Z * float(np.hypot(ses.loc[f, a], ses.loc[f, b])):
            continue
        rank_txt = ", ".join(f"{lab}: {s[lab]:.1%} (rank {r[lab]:g})" for lab in labels)
        perm = float(s[perm_cols].mean()) if perm_cols else None
        mdi_share = float(s[mdi_cols].max()) if mdi_cols else None
        mdi_label = str(s[mdi_cols].idxmax()) if mdi_cols else "MDI"
        other = float(s[other_cols].max()) if other_cols else None
        partner = _correlated_partner(f, corr, corr_thr)
        card = None if n_unique is None or f not in n_unique.index else int(n_unique[f])
        reason, detail = "disagreement", f"The methods disagree on {f!r}: {rank_txt}."
        if perm is not None and other is not None and other >= 2 * perm and other - perm >= min_gap:
            high_card = card is not None and card >= max(20, 0.5 * n_rows)
            if partner is not None and not (mdi_share is not None and high_card and mdi_share >= other - 1e-12):
                reason, detail = "correlated", _correlated_detail(f, partner, rank_txt)
            elif mdi_share is not None and mdi_share >= 2 * perm and (high_card or card is None):
                reason, detail = "high_cardinality", _high_cardinality_detail(f, card, n_rows, rank_txt, mdi_label)
        rows.append({"feature": f, "reason": reason, "detail": detail})
    return pd.DataFrame(rows, columns=["feature", "reason", "detail"])


def _data_evidence(X, features, names):
    """Return (n_rows, distinct values per feature, |correlation| of numeric features),
    each None when X is not given (correlation also with fewer than 2 numeric columns)."""
    if X is None:
        return None, None, None
    frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X), columns=None)
    if not isinstance(X, pd.DataFrame) and frame.shape[1] == len(names):
        frame.columns = names
    frame = frame[[f for f in features if f in frame.columns]]
    num = frame.select_dtypes("number")
    corr = num.corr().abs() if num.shape[1] >= 2 else None
    return len(frame), frame.nunique(), corr


def _correlated_partner(f, corr, corr_thr):
    """(name, |r|) of the feature most correlated with f, if at least corr_thr; else None."""
    if corr is not None and f in corr.columns:
        c = corr[f].drop(f)
        if len(c) and c.max() >= corr_thr:
            return (c.idxmax(), float(c.max()))
    return None


def _correlated_detail(f, partner, rank_txt: str) -> str:
    return (
        f"{f!r} is correlated with {partner[0]!r} (|r| = {partner[1]:.2f}): when one is "
        "shuffled the other still carries the signal, so permutation importance "
        f"understates both. {rank_txt}."
    )


def _high_cardinality_detail(f, card, n_rows, rank_txt: str, method: str = "MDI") -> str:
    card_txt = (f"it has {card} distinct values in {n_rows} rows; "
                if card is not None else "likely many distinct values; ")
    kind = "impurity importance" if method == "MDI" else "an importance read from the training splits"
    detail = (
        f"{method} ranks {f!r} far above permutation importance: {card_txt}{kind} "
        "rewards features with many split points even when they carry "
        "no signal (it is measured on training data). Trust the permutation "
        f"importance. {rank_txt}."
    )
    if card is None:
        detail += " (If it is correlated with another feature, that also lowers its permutation importance.)"
    return detail
