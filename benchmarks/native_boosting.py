"""XGBoost and LightGBM models: our Tree SHAP and tree PD beside the library's own.

Both sides run in this one process on the same fitted booster and rows. Ours
reads the booster into a TreeEnsemble (``xgboost_from_object`` /
``lightgbm_from_object``) and explains it with :class:`explainers.shap.TreeShap`
(path-dependent) and ``partial_dependence(method="tree")``; theirs is the
library's own exact Tree SHAP (``booster.predict(DMatrix(X), pred_contribs=True)``,
``booster.predict(X, pred_contrib=True)``) and brute-force PD with the library's
own predict (X stacked once per grid value, the feature set to that value, one
predict call, averaged per grid value).

Workloads (from the native-boosting issue), make_friedman1 with 10 features:
  a. XGBoost regressor, 500 trees depth 6, 10,000 rows explained (its training rows)
  b. LightGBM regressor, 500 trees 63 leaves, the same 10,000 rows
  c. XGBoost 3-class (multi:softprob; the friedman1 target cut at its terciles),
     200 rounds depth 6, 1,000 rows
PD: feature 0, grid 50 (5%-95% percentiles), all explained rows;
``kind="average"`` (the ratio the goal is about) and ``kind="both"`` (ICE kept;
brute force gets ICE for free, it is its reshaped predictions).

Threads: each thread count runs on both sides alike: xgboost ``nthread`` (booster
and DMatrix), lightgbm ``num_threads``, our ``n_jobs`` and
``numba.set_num_threads`` (tree PD's kernels are numba ``prange`` loops).

Timed region: the explain / PD call only. Ours reuses one TreeShap per thread
count whose leaf tables were built by a warm-up call, so "ours s" excludes the
table build; "ours+plan" times a fresh TreeShap built and called in each repeat
(init + plan/table build + rows), printed as a second ratio. One-time costs are
reported apart: booster -> TreeEnsemble conversion and reading the saved file,
the first call in this process (numba cache load, or compile when the cache is
cold; workload a pays it, b and c find the kernels loaded), and, without
--quick, compiling in a fresh interpreter with an empty numba cache.

Times are medians of repeats, the sides called in turn inside each repeat so
load drifts hit both; the ratio is ours / theirs. Goals: SHAP ratio <= 0.2 on
the same threads (5x faster); tree PD 1D at least 30x faster than brute force
(ratio <= 0.033). Agreement: max |ours - theirs| over values (and base values)
must be <= 1e-5 x the range of the library's raw output over the rows (PD: of
its predictions); XGBoost computes in float32, so its differences sit below 1e-6
of the range, LightGBM's near 1e-14.

Run:  python benchmarks/native_boosting.py [--quick] [--threads 1,2]
      [--repeats 5] [--their-repeats 2] [--workloads a,b,c] [--no-compile]
(--quick: 1,000 rows for a and b, 3 repeats of ours and 1 of theirs, no
cold-compile run; about two minutes on a shared 2-core machine. The full run takes
about 11 minutes there, most of it the libraries' own SHAP: LightGBM's takes ~7 ms
per row on one thread. On a busy machine compare the cpu column too.)
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numba  # noqa: E402
import lightgbm as lgb  # noqa: E402  (benchmark only: explainers/ never imports them)
import xgboost as xgb  # noqa: E402
from sklearn.datasets import make_friedman1  # noqa: E402

from explainers.pdp import partial_dependence  # noqa: E402
from explainers.shap import TreeShap  # noqa: E402
from explainers.trees.lightgbm import lightgbm_from_object, read_lightgbm  # noqa: E402
from explainers.trees.xgboost import read_xgboost, xgboost_from_object  # noqa: E402

SHAP_GOAL = 0.2  # ours / theirs, same threads
PD_GOAL = 30.0  # speed-up over brute force with the library's predict
TOL = 1e-5  # max |diff| / range of the library's raw output
GRID = 50
FEATURE = 0


# --------------------------------------------------------------- workloads
@dataclass
class Workload:
    name: str
    desc: str
    booster: object
    X: np.ndarray  # the explained rows (and the PD rows)
    from_object: Callable  # booster -> our model
    file_bytes: bytes  # the saved model file
    read_file: Callable  # bytes -> our model
    set_threads: Callable  # n -> None (the library's side)
    shap: Callable  # (X, n) -> (values (n, p, k), base (n, k)) from the library
    predict: Callable  # (X, n) -> (n, k) predictions in the model's output space
    margin: Callable  # X -> raw margin (n, k), for the range
    model: object = None  # ours, converted once
    one_time: dict = field(default_factory=dict)


def _xgb_threads(booster):
    def set_threads(n: int) -> None:
        booster.set_param({"nthread": n})

    return set_threads


def _xgb_shap(booster):
    def run(X, n):
        c = booster.predict(xgb.DMatrix(X, nthread=n), pred_contribs=True)
        if c.ndim == 2:  # (rows, p + 1): one output
            c = c[:, None, :]
        # (rows, k, p + 1) -> values (rows, p, k), base (rows, k)
        return np.transpose(c[:, :, :-1], (0, 2, 1)), c[:, :, -1]

    return run


def _xgb_predict(booster):
    def run(X, n):
        p = booster.predict(xgb.DMatrix(X, nthread=n))
        return p.reshape(len(X), -1)

    return run


def _xgb_margin(booster):
    def run(X):
        return booster.predict(xgb.DMatrix(X), output_margin=True).reshape(len(X), -1)

    return run


def _lgb_margin(booster):
    def run(X):
        return booster.predict(X, raw_score=True).reshape(len(X), -1)

    return run


def _lgb_shap(booster):
    def run(X, n):
        c = booster.predict(X, pred_contrib=True, num_threads=n)
        return c[:, :-1, None], c[:, -1:]

    return run


def _lgb_predict(booster):
    def run(X, n):
        return booster.predict(X, num_threads=n).reshape(len(X), -1)

    return run


def _save(booster, path: Path) -> bytes:
    booster.save_model(str(path))
    return path.read_bytes()


def workloads(names, rows_ab: int, rows_c: int, threads: int, tmp: Path) -> list[Workload]:
    X, y = make_friedman1(10_000, 10, random_state=0)
    out = []
    if "a" in names:
        bst = xgb.train({"max_depth": 6, "eta": 0.1, "nthread": threads, "seed": 0},
                        xgb.DMatrix(X, label=y), 500)
        out.append(Workload(
            "a", f"XGBoost regressor 500 trees depth 6, friedman1, {rows_ab} rows", bst, X[:rows_ab],
            xgboost_from_object, _save(bst, tmp / "a.json"),
            lambda b: read_xgboost(b, name="a.json"), _xgb_threads(bst), _xgb_shap(bst),
            _xgb_predict(bst), _xgb_margin(bst)))
    if "b" in names:
        bst = lgb.train({"num_leaves": 63, "num_threads": threads, "verbose": -1, "seed": 0},
                        lgb.Dataset(X, y), 500)
        out.append(Workload(
            "b", f"LightGBM regressor 500 trees 63 leaves, friedman1, {rows_ab} rows", bst, X[:rows_ab],
            lightgbm_from_object, _save(bst, tmp / "b.txt"),
            lambda b: read_lightgbm(b, name="b.txt"), lambda n: None, _lgb_shap(bst),
            _lgb_predict(bst), _lgb_margin(bst)))
    if "c" in names:
        Xc, yc = X[:1000], y[:1000]
        label = np.digitize(yc, np.quantile(yc, [1 / 3, 2 / 3]))
        bst = xgb.train({"max_depth": 6, "eta": 0.3, "objective": "multi:softprob", "num_class": 3,
                         "nthread": threads, "seed": 0}, xgb.DMatrix(Xc, label=label), 200)
        out.append(Workload(
            "c", f"XGBoost 3-class 200 rounds depth 6, friedman1 terciles, {rows_c} rows", bst,
            Xc[:rows_c], xgboost_from_object, _save(bst, tmp / "c.json"),
            lambda b: read_xgboost(b, name="c.json"), _xgb_threads(bst), _xgb_shap(bst),
            _xgb_predict(bst), _xgb_margin(bst)))
    return out


# ------------------------------------------------------------------ timing
def _once(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


@dataclass
class Case:
    """A timed call; repeats stop early once ``budget`` seconds are spent (one run at least).

    Wall time is the measure; the process's CPU time (all its threads) is kept
    beside it, since on a shared machine a single-threaded call's wall time also
    counts the time it waited for a core.
    """

    fn: Callable
    repeats: int
    budget: float = float("inf")
    times: list = field(default_factory=list)
    cpu: list = field(default_factory=list)
    out: object = None

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)


#: pause before each timed call: the libraries' OpenMP threads spin for a while after a call of
#: theirs, and took the cores from whichever call came next (ours, 4 ms slower on a 10 ms call).
#: A busy pause: after an idle one (time.sleep) a 6 ms call of ours took 8-9 ms, and on two
#: threads 15-18 ms (a parked core wakes slowly on these machines)
SETTLE_S = 0.05


def _settle(seconds: float = SETTLE_S) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def run_interleaved(cases: list[Case]) -> None:
    for i in range(max(c.repeats for c in cases)):
        for c in cases:
            if i < c.repeats and (i == 0 or sum(c.times) < c.budget):
                _settle()
                c0 = time.process_time()
                t, c.out = _once(c.fn)
                c.cpu.append(time.process_time() - c0)
                c.times.append(t)


def _median_of(fn, k: int = 3) -> float:
    return statistics.median(_once(fn)[0] for _ in range(k))


# ------------------------------------------------------------- the pieces
def _ours_shap(model, X, n):
    r = TreeShap(model, n_jobs=n).explain(X)
    return r


def _values(res) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(res.values)
    b = np.asarray(res.base_values)
    if v.ndim == 2:
        v, b = v[:, :, None], b.reshape(len(b), 1)
    return v, b


def _pd_grid(X) -> np.ndarray:
    """partial_dependence's default grid: evenly spaced between the 5% and 95% percentiles."""
    lo, hi = np.quantile(X[:, FEATURE], [0.05, 0.95])
    return np.linspace(lo, hi, GRID)


def _brute_pd(predict, X, grid, n):
    """PD and ICE by the definition: one predict on len(grid) stacked copies of X."""
    stacked = np.tile(X, (len(grid), 1))
    stacked[:, FEATURE] = np.repeat(grid, len(X))
    ice = predict(stacked, n).reshape(len(grid), len(X), -1)
    return ice.mean(axis=1)  # (grid, k)


def _ours_pd(model, X, grid, kind):
    r = partial_dependence(model, X, [FEATURE], custom_values={FEATURE: grid}, method="tree", kind=kind)
    avg = np.asarray(r.average)
    return avg.reshape(len(grid), -1)


def compile_times() -> tuple[float, float]:
    """First Tree SHAP + tree PD call in fresh interpreters: empty numba cache, then warm."""
    code = (
        "import sys, time; sys.path.insert(0, %r)\n"
        "import xgboost as xgb\n"
        "from sklearn.datasets import make_friedman1\n"
        "from explainers.trees.xgboost import xgboost_from_object\n"
        "from explainers.shap import TreeShap\n"
        "from explainers.pdp import partial_dependence\n"
        "X, y = make_friedman1(500, 10, random_state=0)\n"
        "m = xgboost_from_object(xgb.train({'max_depth': 6, 'nthread': 1}, xgb.DMatrix(X, label=y), 20))\n"
        "t = time.perf_counter(); TreeShap(m, n_jobs=1).explain(X[:8])\n"
        "partial_dependence(m, X[:8], [0], grid_resolution=5, method='tree', kind='average')\n"
        "print(time.perf_counter() - t)\n"
    ) % str(ROOT)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        out = []
        for _ in range(2):
            res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                 check=True)
            out.append(float(res.stdout.strip().splitlines()[-1]))
    return out[0], out[1]


def one_time_costs(w: Workload) -> None:
    """Conversion, file reading and the first call in this process (numba load / compile + plan)."""
    w.one_time["from object s"] = _median_of(lambda: w.from_object(w.booster))
    w.one_time["read file s"] = _median_of(lambda: w.read_file(w.file_bytes))
    w.model = w.from_object(w.booster)
    numba.set_num_threads(1)
    few = w.X[:8]
    w.one_time["1st SHAP call s"] = _once(lambda: TreeShap(w.model, n_jobs=1).explain(few))[0]
    w.one_time["1st PD call s"] = _once(lambda: partial_dependence(
        w.model, few, [FEATURE], grid_resolution=5, method="tree", kind="average"))[0]
    partial_dependence(w.model, few, [FEATURE], grid_resolution=5, method="tree", kind="both")
    w.set_threads(1)
    w.shap(few, 1)  # the library's own first call
    w.predict(few, 1)


# -------------------------------------------------------------------- main
def measure(w: Workload, n: int, repeats: int, their_repeats: int, budget: float) -> dict:
    numba.set_num_threads(n)
    w.set_threads(n)
    X = w.X
    # plan/table build: a fresh explainer's first call on one row (numba already warm)
    init_s = _median_of(lambda: TreeShap(w.model, n_jobs=n))
    plan_s = _median_of(lambda: TreeShap(w.model, n_jobs=n).explain(X[:1])) - init_s
    ts = TreeShap(w.model, n_jobs=n)
    ts.explain(X[:1])  # builds and keeps the leaf tables
    grid = _pd_grid(X)
    cases = {
        "theirs shap": Case(lambda: w.shap(X, n), their_repeats, budget),
        "ours shap": Case(lambda: ts.explain(X), repeats),
        "ours shap+plan": Case(lambda: _ours_shap(w.model, X, n), repeats),
        "brute pd": Case(lambda: _brute_pd(w.predict, X, grid, n), max(their_repeats, 3), budget),
        "ours pd": Case(lambda: _ours_pd(w.model, X, grid, "average"), repeats),
        "ours pd+ice": Case(lambda: _ours_pd(w.model, X, grid, "both"), repeats),
    }
    run_interleaved(list(cases.values()))

    res = cases["ours shap"].out
    v, b = _values(res)
    tv, tb = cases["theirs shap"].out
    rng = float(np.ptp(w.margin(X)))
    shap_diff = max(float(np.abs(v - tv).max()), float(np.abs(b - tb).max()))
    v2, _ = _values(cases["ours shap+plan"].out)
    if not np.array_equal(v, v2):  # self-check: cached and fresh tables give the same values
        raise RuntimeError(f"workload {w.name}: a fresh TreeShap gave other values than the cached one")
    brute = cases["brute pd"].out
    pd_range = float(np.ptp(w.predict(X, n)))
    pd_diff = max(float(np.abs(cases["ours pd"].out - brute).max()),
                  float(np.abs(cases["ours pd+ice"].out - brute).max()))
    return dict(
        cases=cases, init_s=init_s, plan_s=plan_s, shap_diff=shap_diff, rng=rng, pd_diff=pd_diff,
        pd_range=pd_range, tables=res.params["trees_with_tables"], textbook=res.params["trees_textbook"],
        table_mb=res.params["table_mb"],
    )


def _flag(ok: bool) -> str:
    return "met" if ok else "MISSED"


def report(w: Workload, n: int, m: dict) -> None:
    c = m["cases"]
    shap_ok = m["shap_diff"] <= TOL * m["rng"]
    pd_ok = m["pd_diff"] <= TOL * m["pd_range"]
    rows = [("SHAP", "ours shap", "theirs shap", SHAP_GOAL, m["shap_diff"], m["rng"], shap_ok),
            ("PD avg", "ours pd", "brute pd", 1 / PD_GOAL, m["pd_diff"], m["pd_range"], pd_ok),
            ("PD+ICE", "ours pd+ice", "brute pd", 1 / PD_GOAL, m["pd_diff"], m["pd_range"], pd_ok)]
    for label, ours, theirs, goal, diff, rng, ok in rows:
        o, t = c[ours], c[theirs]
        r = o.median / t.median
        plan = f"{c['ours shap+plan'].median / t.median:7.4f}" if label == "SHAP" else f"{'':7s}"
        print(f"{n:>3} {w.name}  {label:7s}{o.median:9.4f} {f'(x{len(o.times)})':>5s}{t.median:9.3f} "
              f"{f'(x{len(t.times)})':>5s}{r:8.4f}{1 / r:7.1f}x {_flag(r <= goal):6s}"
              f"{o.cpu_median / t.cpu_median:8.4f} {plan}  {diff:8.1e} {diff / rng:8.1e} "
              f"{'ok' if ok else 'TOO BIG'}")
    sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="1,000 rows for a and b, fewer repeats, no cold-compile run (same models)")
    ap.add_argument("--threads", default="1,2",
                    help="comma-separated thread counts, each used on both sides (default 1,2)")
    ap.add_argument("--repeats", type=int, default=None, help="repeats of ours (>= 3; default 5, quick 3)")
    ap.add_argument("--their-repeats", type=int, default=None,
                    help="repeats of the library's SHAP and brute PD (default 2, quick 1; PD at least 3)")
    ap.add_argument("--their-budget", type=float, default=60.0,
                    help="seconds after which the library's side stops repeating (one run at least)")
    ap.add_argument("--rows", type=int, default=None, help="rows explained for a and b (default 10,000)")
    ap.add_argument("--workloads", default="a,b,c")
    ap.add_argument("--no-compile", action="store_true", help="skip the cold-cache compile measurement")
    args = ap.parse_args()
    repeats = max(3, args.repeats or (3 if args.quick else 5))
    their = args.their_repeats or (1 if args.quick else 2)
    rows_ab = args.rows or (1_000 if args.quick else 10_000)
    threads = [int(t) for t in args.threads.split(",")]
    if max(threads) > numba.config.NUMBA_NUM_THREADS:
        ap.error(f"--threads {max(threads)} is more than numba's NUMBA_NUM_THREADS="
                 f"{numba.config.NUMBA_NUM_THREADS}; set that variable first")

    compile_cold = None
    if not (args.quick or args.no_compile):
        compile_cold = compile_times()

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wl = workloads(args.workloads.split(","), rows_ab, 1_000, max(threads), Path(tmp))
        for w in wl:
            one_time_costs(w)

        load = os.getloadavg()[0]
        print(f"ours: median of {repeats} repeats; theirs: the library's own exact Tree SHAP "
              f"(median of up to {their}, fewer past {args.their_budget:.0f} s) and brute-force PD "
              f"(at least 3)\nratio = ours / theirs, wall time (SHAP goal <= {SHAP_GOAL}; PD goal: "
              f"speed-up >= {PD_GOAL:.0f}x); cpu = the same ratio of process CPU time; ours excludes "
              f"the\nleaf-table build, +plan = SHAP ratio with a fresh explainer per call (init + "
              f"table build included); |d| = max |ours - theirs|\n(values and base values; PD "
              f"average), /range = |d| / range of the library's raw output, must be <= {TOL:.0e}\n"
              f"load average at start: {load:.2f} on {os.cpu_count()} cores")
        print(f"{'thr':>3} wl {'what':7s}{'ours s':>9s} {'':5s}{'theirs s':>9s} {'':5s}{'ratio':>8s}"
              f"{'speedup':>8s} {'goal':6s}{'cpu':>8s} {'+plan':>7s}  {'|d|':>8s} {'/range':>8s}")
        results = {}
        for n in threads:
            for w in wl:
                m = measure(w, n, repeats, their, args.their_budget)
                results[(n, w.name)] = m
                report(w, n, m)

    print("\none-time costs (not in the timings above), seconds; plan = leaf-table build, from a "
          "fresh explainer's first call on 1 row\n(numba warm) less its init:")
    print(f"{'wl':3s}{'from object':>12s}{'read file':>10s}{'1st SHAP':>9s}{'1st PD':>8s}"
          + "".join(f"{f'init({n})':>9s}{f'plan({n})':>9s}" for n in threads)
          + f"{'tables/textbook trees':>23s}{'table MB':>9s}")
    for w in wl:
        o = w.one_time
        m1 = results[(threads[0], w.name)]
        print(f"{w.name:3s}{o['from object s']:12.3f}{o['read file s']:10.3f}{o['1st SHAP call s']:9.3f}"
              f"{o['1st PD call s']:8.3f}"
              + "".join(f"{results[(n, w.name)]['init_s']:9.4f}{results[(n, w.name)]['plan_s']:9.4f}"
                        for n in threads)
              + f"{m1['tables']:>15d}/{m1['textbook']:<7d}{m1['table_mb']:9.2f}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    print("(1st SHAP / 1st PD: the first call in this process on 8 rows, a fresh explainer: numba "
          "cache load (compile if cold) + plan;\n only the first workload loads the kernels)")
    if compile_cold is not None:
        print(f"fresh interpreter, first TreeShap + tree PD call: empty numba cache {compile_cold[0]:.2f} s "
              f"(compiles, writes the cache); warm cache {compile_cold[1]:.2f} s")


if __name__ == "__main__":
    main()
