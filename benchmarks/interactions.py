"""SHAP interaction values against shap, and the H statistic's time.

Both sides run in this one process on the same fitted model and rows. Times
are medians of repeats, end to end (build the explainer, i.e. ours flattens the
trees and builds its leaf tables inside the call and shap parses the model,
then compute the interaction values), calling the sides in turn so that load
drifts hit both alike. Ours runs on one thread and with its default threads
(every core); shap's TreeExplainer computes interaction values on one thread,
its default. The ratio printed is shap's time / ours (goal: >= 20 on workload a)
and ``max|diff|`` the largest elementwise difference (goal: <= 1e-6).

Workloads:
  a. RandomForestRegressor 100 trees, max_depth 8, make_friedman1 5,000 x 10, 200 rows
  b. GradientBoostingClassifier 200 trees, depth 3, make_classification 5,000 x 20, 200 rows
  c. HistGradientBoostingRegressor 200 iterations on the data of a, 200 rows
  d. interventional on a, 100 background rows, 200 rows (shap has no interventional
     interaction values: checked against ExactShap.interactions on 3 rows instead)
  x. XGBoost: see the marked place in workloads(); skipped until native model
     files can be loaded (load_model of .json/.ubj)

Then Friedman's H statistic: all 45 pairs (and the 10 overall H_j) of the forest
of a on 1,000 rows (goal: < 2 s), with numba's default threads and on one.

Run:  python benchmarks/interactions.py [--quick] [--repeats 5] [--workloads a,b,c,d]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sklearn.datasets import make_classification, make_friedman1  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    GradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestRegressor,
)


def workloads() -> dict:
    """name -> (description, model, rows, background or None)."""
    Xa, ya = make_friedman1(5000, 10, random_state=0)
    Xb, yb = make_classification(5000, 20, random_state=0)
    rf = RandomForestRegressor(100, max_depth=8, random_state=0, n_jobs=-1).fit(Xa, ya)
    gb = GradientBoostingClassifier(n_estimators=200, max_depth=3, random_state=0).fit(Xb, yb)
    hgb = HistGradientBoostingRegressor(max_iter=200, random_state=0).fit(Xa, ya)
    wl = {
        "a": ("RandomForestRegressor 100 trees depth 8, friedman1, 200 rows", rf, Xa[:200], None),
        "b": ("GradientBoostingClassifier 200 trees depth 3, 20 features, 200 rows", gb, Xb[:200], None),
        "c": ("HistGradientBoostingRegressor 200 iterations, friedman1, 200 rows", hgb, Xa[:200], None),
        "d": ("interventional on a, 100 background rows, 200 rows", rf, Xa[1000:1200], Xa[:100]),
    }
    # ---- XGBoost (workload x) -------------------------------------------------------
    # Place for xgboost.XGBRegressor(n_estimators=100, max_depth=8) on the data of a,
    # loaded through explainers.load_model from its native .json file once the XGBoost
    # reader exists, against shap.TreeExplainer(booster).shap_interaction_values.
    # Skipped: no native-file reader yet.
    return wl


def _ours(model, rows, bg, n_jobs):
    from explainers.shap import TreeShap

    if bg is None:
        ts = TreeShap(model, n_jobs=n_jobs)
    else:
        ts = TreeShap(model, bg, mode="interventional", n_jobs=n_jobs)
    return ts.interactions(rows).values


def _shap(shap, model, rows):
    sv = shap.TreeExplainer(model).shap_interaction_values(rows)
    return np.stack(sv, axis=-1) if isinstance(sv, list) else np.asarray(sv)


def _median_times(fns, repeats):
    times = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def _h_times(repeats: int) -> None:
    import numba

    from explainers.interactions import h_statistic

    X, y = make_friedman1(5000, 10, random_state=0)
    rf = RandomForestRegressor(100, max_depth=8, random_state=0, n_jobs=-1).fit(X, y)
    rows = X[:1000]
    t0 = time.perf_counter()
    res = h_statistic(rf, rows)  # first call: compiles or loads the numba cache
    first = time.perf_counter() - t0
    default = numba.get_num_threads()
    t_def = _median_times([lambda: h_statistic(rf, rows)], repeats)[0]
    numba.set_num_threads(1)
    try:
        t_one = _median_times([lambda: h_statistic(rf, rows)], repeats)[0]
    finally:
        numba.set_num_threads(default)
    top = res.to_frame().iloc[0]
    print(f"\nH statistic, {len(res.pairs)} pairs + {len(res.overall)} overall H_j, forest of a, "
          f"{res.n_rows} rows, method={res.method!r} (goal: < 2 s)")
    print(f"  {default} numba threads: {t_def:.3f} s   1 thread: {t_one:.3f} s   "
          f"(first call, with compile/cache load: {first:.2f} s)")
    print(f"  strongest pair: {top.feature} x {top.other}  H = {top.H:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repeat")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--workloads", default="a,b,c,d")
    ap.add_argument("--no-h", action="store_true", help="skip the H statistic timing")
    args = ap.parse_args()
    repeats = args.repeats or (1 if args.quick else 5)

    import shap  # noqa: E402  (benchmark only: explainers/ never imports shap)

    from explainers.shap import ExactShap
    from explainers.shap.tree import _n_jobs

    threads = _n_jobs(None)
    wl = workloads()
    print(f"median of {repeats} repeats, end to end; ratio = shap s / ours s; ours on 1 thread "
          f"and on its default {threads}; shap on its default (one thread)")
    print(f"{'':3s}{'shap s':>9s}{'ours(1) s':>11s}{'ratio(1)':>9s}{'ours s':>9s}{'ratio':>8s}"
          f"{'max|diff|':>11s}  workload")
    for name in args.workloads.split(","):
        desc, model, rows, bg = wl[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = _ours(model, rows, bg, threads)  # warm: compile or load our kernels
            if bg is None:
                ref = _shap(shap, model, rows)
                diff = float(np.abs(ours - ref.reshape(ours.shape)).max())
                fns = [lambda: _shap(shap, model, rows)]
            else:
                ref = ExactShap(model, bg).interactions(rows[:3]).values
                diff = float(np.abs(ours[:3] - ref.reshape(ours[:3].shape)).max())
                fns = []
            fns += [lambda: _ours(model, rows, bg, 1), lambda: _ours(model, rows, bg, threads)]
            t = _median_times(fns, repeats)
        if bg is None:
            print(f"{name:3s}{t[0]:9.3f}{t[1]:11.4f}{t[0] / t[1]:9.1f}{t[2]:9.4f}{t[0] / t[2]:8.1f}"
                  f"{diff:11.1e}  {desc}")
        else:
            print(f"{name:3s}{'-':>9s}{t[0]:11.4f}{'-':>9s}{t[1]:9.4f}{'-':>8s}{diff:11.1e}  "
                  f"{desc} (diff vs ExactShap)")
    print("x  skipped: XGBoost interaction values need a native model-file reader (see workloads())")
    if not args.no_h:
        _h_times(repeats)


if __name__ == "__main__":
    main()
