"""Benchmark: explainers.compare.compare_models beside a naive paired bootstrap, in one process.

Run from the repository root::

    python benchmarks/compare_models.py [--repeats 5] [--anchor-repeats 1]

Two models, 10,000 rows, 1,000 replicates. The anchor is the loop one would write by hand:
per replicate, the same resampled rows (the same draws, in the same order), each metric of
each model by its scikit-learn function, then the percentiles of the differences. Ours
weights every replicate at once (``counts @ per-row loss``, a rank-based AUC). Prints the
medians, the ratio ours / anchor (lower is better) and the largest gap between the two
sets of intervals (they are the same numbers up to rounding).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sklearn import metrics as skm  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402

from explainers.compare import compare_models  # noqa: E402

N_ROWS, N_BOOT = 10_000, 1_000


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def naive(models, X, y, metric_fns, n_boot: int, seed: int = 0, confidence: float = 0.95) -> dict:
    """{metric: (low, high)} of the first pair's difference: one scikit-learn call per model,
    metric and replicate. Predictions are made once, as compare_models does."""
    (_, a), (_, b) = list(models.items())[:2]
    preds = [(m.predict_proba(X) if hasattr(m, "predict_proba") else None, m.predict(X)) for m in (a, b)]
    rng = np.random.default_rng(seed)
    diffs = {name: [] for name in metric_fns}
    for _ in range(n_boot):
        idx = rng.integers(0, len(y), size=len(y))
        for name, fn in metric_fns.items():
            va, vb = (fn(y[idx], p if p is None else p[idx], lab[idx]) for p, lab in preds)
            if np.isfinite(va - vb):
                diffs[name].append(va - vb)
    tail = 100 * (1 - confidence) / 2
    return {name: tuple(np.percentile(d, [tail, 100 - tail])) for name, d in diffs.items()}


CLASSIFICATION = {
    "roc_auc": lambda y, p, lab: skm.roc_auc_score(y, p[:, 1]),
    "log_loss": lambda y, p, lab: skm.log_loss(y, p, labels=[0, 1]),
    "accuracy": lambda y, p, lab: skm.accuracy_score(y, lab),
    "balanced_accuracy": lambda y, p, lab: skm.balanced_accuracy_score(y, lab),
    "brier": lambda y, p, lab: skm.brier_score_loss(y, p[:, 1], pos_label=1),
}
REGRESSION = {
    "r2": lambda y, p, lab: skm.r2_score(y, lab),
    "mae": lambda y, p, lab: skm.mean_absolute_error(y, lab),
    "rmse": lambda y, p, lab: skm.root_mean_squared_error(y, lab),
}


def run_case(title: str, models, X, y, metric_fns, repeats: int, anchor_repeats: int) -> None:
    compare_models(models, X[:200], y[:200], n_boot=10)  # warm the code path once
    t_ours, cmp = median_time(lambda: compare_models(models, X, y, n_boot=N_BOOT, random_state=0), repeats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_naive, ref = median_time(lambda: naive(models, X, y, metric_fns, N_BOOT), anchor_repeats)
    d = cmp.differences.set_index("metric")
    gap = max(abs(d.at[m, "low"] - lo) + abs(d.at[m, "high"] - hi) for m, (lo, hi) in ref.items())
    print(f"{title}: {N_ROWS:,} rows, 2 models, {N_BOOT:,} replicates, metrics {', '.join(metric_fns)}")
    print(f"  naive loop {t_naive:7.3f} s   ours {t_ours:7.3f} s   ratio {t_ours / t_naive:6.3f}"
          f"   (max |interval gap| {gap:.1e})")


def main(repeats: int = 5, anchor_repeats: int = 1) -> None:
    print(f"medians of {repeats} runs (ours, the whole compare_models call) and {anchor_repeats} (naive loop)")
    X, y = make_classification(n_samples=N_ROWS, n_features=10, n_informative=5, random_state=0)
    models = {"logistic": LogisticRegression().fit(X, y), "bayes": GaussianNB().fit(X, y)}
    run_case("binary classifiers", models, X, y, CLASSIFICATION, repeats, anchor_repeats)
    X, y = make_regression(n_samples=N_ROWS, n_features=10, noise=20.0, random_state=0)
    models = {"ols": LinearRegression().fit(X, y), "ridge": Ridge(alpha=1e4).fit(X, y)}
    run_case("regressors", models, X, y, REGRESSION, repeats, anchor_repeats)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--anchor-repeats", type=int, default=1)
    args = parser.parse_args()
    main(args.repeats, args.anchor_repeats)
