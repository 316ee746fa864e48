"""TreeShap against shap.TreeExplainer: time, peak memory, agreement, compile time.

Both sides run in this one process on the same fitted model and rows. Two
timings: end to end (build the explainer, i.e. ours flattens the trees and
shap parses the model, then explain the rows) and explain only (the explainer
built beforehand; ours still builds its leaf tables inside the call, so no
work is cached between repeats). Times are medians of repeats, calling the
sides in turn so load drifts hit both alike; the ratio is ours / shap's
(goal: <= 0.1 everywhere, <= 0.05 on workload a). Ours runs on one thread and
on every core (shap's TreeExplainer uses one).

Workloads (from the Tree SHAP issue):
  a. RandomForestRegressor 100 trees, max_depth 8, make_friedman1 5,000 x 10, 1,000 rows
  b. GradientBoostingClassifier 200 trees, depth 3, make_classification 5,000 x 20, 1,000 rows
  c. HistGradientBoostingRegressor 200 iterations on the data of a, 1,000 rows
  d. interventional on a with 100 background rows, 200 rows

Peak memory is the rise of the process's resident set (VmHWM, reset through
/proc/self/clear_refs before each call) during one call, so compiled and C++
allocations count as well as numpy's.

Compile time: a fresh interpreter with an empty numba cache (NUMBA_CACHE_DIR set
to a new folder) runs workload a once (cold: compiles and writes the cache),
then a second fresh interpreter runs it again (warm: loads the cache).

Run:  python benchmarks/treeshap.py [--quick] [--repeats 5] [--workloads a,b,c,d]
      [--threads N] [--no-compile]
(--quick: one repeat, no compile-time runs; about half a minute here)
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
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

# ------------------------------------------------------------------ memory
_STATUS = Path("/proc/self/status")
_CLEAR = Path("/proc/self/clear_refs")


def _kb(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def peak_rise_mb(fn) -> float:
    """Rise of the resident-set high-water mark during fn(), in MB (NaN if unsupported)."""
    try:
        _CLEAR.write_text("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
    except OSError:
        return float("nan")
    before = _kb("VmRSS")
    fn()
    return (_kb("VmHWM") - before) / 1024


# --------------------------------------------------------------- workloads
def workloads() -> dict:
    """name -> (description, model, rows, background or None)."""
    Xa, ya = make_friedman1(5000, 10, random_state=0)
    Xb, yb = make_classification(5000, 20, random_state=0)
    rf = RandomForestRegressor(100, max_depth=8, random_state=0, n_jobs=-1).fit(Xa, ya)
    gb = GradientBoostingClassifier(n_estimators=200, max_depth=3, random_state=0).fit(Xb, yb)
    hgb = HistGradientBoostingRegressor(max_iter=200, random_state=0).fit(Xa, ya)
    return {
        "a": ("RandomForestRegressor 100 trees depth 8, friedman1, 1000 rows", rf, Xa[:1000], None),
        "b": ("GradientBoostingClassifier 200 trees depth 3, 20 features, 1000 rows", gb, Xb[:1000], None),
        "c": ("HistGradientBoostingRegressor 200 iterations, friedman1, 1000 rows", hgb, Xa[:1000], None),
        "d": ("interventional on a, 100 background rows, 200 rows", rf, Xa[1000:1200], Xa[:100]),
    }


def _ours_explainer(model, bg, n_jobs):
    from explainers.shap import TreeShap

    if bg is None:
        return TreeShap(model, n_jobs=n_jobs)
    return TreeShap(model, bg, mode="interventional", n_jobs=n_jobs)


def _shap_explainer(shap, model, bg):
    if bg is None:
        return shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
    return shap.TreeExplainer(model, bg, feature_perturbation="interventional")


def _ours(model, rows, bg, n_jobs):
    return _ours_explainer(model, bg, n_jobs).explain(rows).values


def _shap(shap, model, rows, bg):
    return np.asarray(_shap_explainer(shap, model, bg).shap_values(rows, check_additivity=False))


def _median_times(cases, repeats):
    """Median time of each (setup, run) case; setup is not timed, run(setup()) is."""
    times = [[] for _ in cases]
    for _ in range(repeats):
        for i, (setup, run) in enumerate(cases):
            state = setup()
            t0 = time.perf_counter()
            run(state)
            times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def compile_times() -> tuple[float, float]:
    """First call of workload a in fresh interpreters: cold numba cache, then warm."""
    code = (
        "import sys, time; sys.path.insert(0, %r)\n"
        "from sklearn.datasets import make_friedman1\n"
        "from sklearn.ensemble import RandomForestRegressor\n"
        "X, y = make_friedman1(5000, 10, random_state=0)\n"
        "m = RandomForestRegressor(100, max_depth=8, random_state=0, n_jobs=-1).fit(X, y)\n"
        "from explainers.shap import TreeShap\n"
        "t = time.perf_counter(); TreeShap(m).explain(X[:1000])\n"
        "print(time.perf_counter() - t)\n"
    ) % str(ROOT)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        out = []
        for _ in range(2):
            res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            out.append(float(res.stdout.strip().splitlines()[-1]))
    return out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="one repeat and no compile-time runs (same workloads, so the same ratios)")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--workloads", default="a,b,c,d")
    ap.add_argument("--threads", type=int, default=None,
                    help="TreeShap threads (default: every core); a 1-thread run is always shown too")
    ap.add_argument("--no-compile", action="store_true", help="skip the cold/warm compile measurement")
    args = ap.parse_args()
    repeats = args.repeats or (1 if args.quick else 5)

    if not (args.no_compile or args.quick):
        cold, warm = compile_times()
        print(f"first call of workload a: cold numba cache {cold:.2f} s (compiles, writes the cache); "
              f"warm cache {warm:.2f} s\n")

    import shap  # noqa: E402  (benchmark only: explainers/ never imports shap)

    from explainers.shap.tree import _n_jobs

    threads = _n_jobs(args.threads)
    wl = workloads()
    print(f"median of {repeats} repeats; ratio = ours / shap; TreeShap on 1 thread and on {threads}")
    print("end to end = build the explainer (ours: flatten the trees; shap: parse the model) and "
          "explain;\nexplain only = the explainer is built beforehand (ours then still builds its "
          "leaf tables in the call)")
    print(f"{'':3s}{'--------------- end to end ---------------':>44s}  {'---------- explain only ----------':>36s}")
    print(f"{'':3s}{'shap s':>9s}{'ours(1) s':>11s}{'ratio':>7s}{'ours s':>9s}{'ratio':>7s}  "
          f"{'shap s':>9s}{'ours s':>9s}{'ratio':>7s}{'ratio(1)':>9s}"
          f"{'max|diff|':>10s}{'shap MB':>8s}{'ours MB':>8s}  workload")
    for name in args.workloads.split(","):
        desc, model, rows, bg = wl[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = _shap(shap, model, rows, bg)  # warm both (shap's parser, our compiled kernels)
            ours = _ours(model, rows, bg, threads)
            diff = float(np.abs(ours - ref.reshape(ours.shape)).max())
            none = lambda: None  # noqa: E731
            t = _median_times(
                [
                    (none, lambda _: _shap(shap, model, rows, bg)),
                    (none, lambda _: _ours(model, rows, bg, 1)),
                    (none, lambda _: _ours(model, rows, bg, threads)),
                    (lambda: _shap_explainer(shap, model, bg),
                     lambda e: e.shap_values(rows, check_additivity=False)),
                    (lambda: _ours_explainer(model, bg, threads), lambda e: e.explain(rows)),
                    (lambda: _ours_explainer(model, bg, 1), lambda e: e.explain(rows)),
                ],
                repeats,
            )
            m_shap = peak_rise_mb(lambda: _shap(shap, model, rows, bg))
            m_ours = peak_rise_mb(lambda: _ours(model, rows, bg, threads))
        print(f"{name:3s}{t[0]:9.3f}{t[1]:11.4f}{t[1] / t[0]:7.3f}{t[2]:9.4f}{t[2] / t[0]:7.3f}  "
              f"{t[3]:9.3f}{t[4]:9.4f}{t[4] / t[3]:7.3f}{t[5] / t[3]:9.3f}"
              f"{diff:10.1e}{m_shap:8.1f}{m_ours:8.1f}  {desc}")


if __name__ == "__main__":
    main()
