"""Benchmark: explainers.pdp.partial_dependence beside scikit-learn's brute method.

Same model, data and grid in one process; prints medians of a few repeats and
the speed ratio (scikit-learn time / ours), and the largest difference between
the two results.

    python benchmarks/pdp.py            # full size (several minutes)
    python benchmarks/pdp.py --quick    # smaller data and models (under a minute)
    python benchmarks/pdp.py --models mlp,hgb   # some of rf, hgb, mlp, ridge
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sklearn.datasets import make_friedman1  # noqa: E402
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor  # noqa: E402
from sklearn.inspection import partial_dependence as sk_pd  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.neural_network import MLPRegressor  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from explainers.pdp import partial_dependence  # noqa: E402


def timed(fn, repeats: int, budget_s: float):
    """Median wall time of up to ``repeats`` calls (fewer once ``budget_s`` is spent)."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        if sum(times) > budget_s:
            break
    return statistics.median(times), len(times), out


def compare(label, model, X, feats, grid, kind, method, repeats, budget):
    custom = {f: g for f, g in zip(feats, grid)}
    sk_kind = "both" if kind == "both" else "average"

    def ours():
        return partial_dependence(model, X, feats, custom_values=custom, kind=kind, method=method)

    def theirs():
        return sk_pd(model, X, feats, custom_values=custom, kind=sk_kind, method="brute")

    t_ours, n_ours, r = timed(ours, repeats, budget)
    t_sk, n_sk, s = timed(theirs, repeats, budget)
    diff = np.abs(r.average - s["average"][0]).max()
    if kind == "both":
        diff = max(diff, np.abs(r.individual - s["individual"][0]).max())
    print(
        f"{label:<44} ours {t_ours:8.3f} s (x{n_ours})  sklearn {t_sk:8.3f} s (x{n_sk})  "
        f"speed-up {t_sk / t_ours:7.1f}x  ratio {t_ours / t_sk:6.3f}  "
        f"max|diff| {diff:.1e}  [{r.method}]",
        flush=True,
    )
    return t_sk / t_ours


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller data and models")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", default="rf,hgb,mlp,ridge", help="comma-separated: rf, hgb, mlp, ridge")
    ap.add_argument("--blas-threads", type=int, default=None,
                    help="limit BLAS/OpenMP threads (both sides) for steadier timings on a busy machine")
    args = ap.parse_args(argv)
    if args.blas_threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.blas_threads)

    n, n_ice, trees, depth, iters, g1, g2 = 10_000, 1_000, 100, 8, 200, 50, 20
    budget = 30.0
    if args.quick:
        n, n_ice, trees, depth, iters, g1, g2 = 2_000, 300, 30, 8, 50, 20, 10
        budget = 5.0
    X, y = make_friedman1(n, n_features=10, random_state=0)
    grid1 = [np.linspace(np.quantile(X[:, 0], 0.05), np.quantile(X[:, 0], 0.95), g1)]
    grid2 = [np.linspace(np.quantile(X[:, j], 0.05), np.quantile(X[:, j], 0.95), g2) for j in (0, 1)]
    print(f"make_friedman1: {n} rows x 10 features; grids {g1} and {g2}x{g2}; ICE on {n_ice} rows")

    wanted = set(args.models.split(","))
    models = {
        f"RandomForest {trees} trees depth {depth}": RandomForestRegressor(
            trees, max_depth=depth, random_state=0, n_jobs=1
        ),
        f"HistGradientBoosting {iters} iterations": HistGradientBoostingRegressor(
            max_iter=iters, random_state=0, early_stopping=False
        ),
    }
    # warm the compiled kernels once so the first timing is not a compile
    partial_dependence(RandomForestRegressor(2, max_depth=2).fit(X[:50], y[:50]), X[:50], [0, 1],
                       grid_resolution=3)
    keys = {"RandomForest": "rf", "HistGradientBoosting": "hgb", "MLP": "mlp", "Pipeline": "ridge"}

    def picked(name):
        return keys[name.split("(")[0].split()[0]] in wanted

    for name, model in models.items():
        if not picked(name):
            continue
        model.fit(X, y)
        print(f"-- {name}: method='tree' (exact) vs scikit-learn brute")
        compare("1D average", model, X, [0], grid1, "average", "tree", args.repeats, budget)
        compare("2D average", model, X, [0, 1], grid2, "average", "tree", args.repeats, budget)
        compare(f"1D kind='both' ({n_ice} rows)", model, X[:n_ice], [0], grid1, "both", "tree", args.repeats, budget)
        compare(f"2D kind='both' ({n_ice} rows)", model, X[:n_ice], [0, 1], grid2, "both", "tree", args.repeats, budget)

    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    others = {
        "MLP (64, 64), ndarray": (MLPRegressor(hidden_layer_sizes=(64, 64), max_iter=50, random_state=0), X),
        "Pipeline(StandardScaler, Ridge), ndarray": (make_pipeline(StandardScaler(), Ridge()), X),
        "Pipeline(StandardScaler, Ridge), DataFrame": (make_pipeline(StandardScaler(), Ridge()), frame),
    }
    for name, (model, data) in others.items():
        if not picked(name):
            continue
        model.fit(data, y)
        print(f"-- {name}: method='brute' vs scikit-learn brute (goal: ratio <= 0.7)")
        f1, f2 = ([0], [0, 1]) if isinstance(data, np.ndarray) else (["x0"], ["x0", "x1"])
        compare("1D average", model, data, f1, grid1, "average", "brute", args.repeats, budget)
        compare("2D average", model, data, f2, grid2, "average", "brute", args.repeats, budget)
        compare(f"1D kind='both' ({n_ice} rows)", model, data[:n_ice], f1, grid1, "both", "brute", args.repeats, budget)


if __name__ == "__main__":
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MLP convergence warnings at 50 iterations
        main()
