"""Benchmark: explainers.importance beside scikit-learn, in one process.

Run from the repository root::

    python benchmarks/importance.py [--repeats 5]

Prints medians over repeats and the ratio ours / scikit-learn (lower is better;
the target for hold-out permutation importance is <= 0.5). Both sides run
single-process (scikit-learn with n_jobs=None, the forest with n_jobs=None).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sklearn.datasets import make_friedman1  # noqa: E402
from sklearn.ensemble import RandomForestRegressor  # noqa: E402
from sklearn.inspection import permutation_importance as sk_permutation_importance  # noqa: E402

from explainers.importance import (  # noqa: E402
    mdi,
    oob_permutation_importance,
    permutation_importance,
)


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(repeats: int = 5) -> None:
    X, y = make_friedman1(n_samples=5000, n_features=10, random_state=0)
    X_test, y_test = make_friedman1(n_samples=2000, n_features=10, random_state=1)
    forest = RandomForestRegressor(n_estimators=100, max_depth=8, random_state=0).fit(X, y)
    print(f"RandomForestRegressor(100 trees, depth 8), make_friedman1, {repeats} repeats, medians")

    # warm both code paths once (imports, first-call allocations)
    permutation_importance(forest, X_test[:50], y_test[:50], n_repeats=1)
    sk_permutation_importance(forest, X_test[:50], y_test[:50], n_repeats=1, random_state=0)

    t_sk, ref = median_time(
        lambda: sk_permutation_importance(forest, X_test, y_test, n_repeats=5, random_state=0),
        repeats,
    )
    t_ours, ours = median_time(
        lambda: permutation_importance(forest, X_test, y_test, n_repeats=5, random_state=0),
        repeats,
    )
    diff = float(np.max(np.abs(ours.raw - ref.importances)))
    print("hold-out permutation importance, 2,000 rows, n_repeats=5:")
    print(f"  scikit-learn {t_sk:7.3f} s   ours {t_ours:7.3f} s   ratio {t_ours / t_sk:5.2f}"
          f"   (target <= 0.50; max |difference| {diff:.1e})")

    t_oob, oob = median_time(lambda: oob_permutation_importance(forest, X, y, random_state=0), repeats)
    print(f"out-of-bag permutation importance, 5,000 training rows, 100 trees: {t_oob:7.3f} s"
          f"   (mean {oob.params['mean_oob_rows']:.0f} OOB rows per tree; no scikit-learn equivalent)")
    t_mdi, _ = median_time(lambda: mdi(forest), repeats)
    print(f"mdi: {t_mdi * 1000:7.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    main(parser.parse_args().repeats)
