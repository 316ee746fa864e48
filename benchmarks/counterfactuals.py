"""Counterfactuals: explainers.counterfactuals beside DiCE ("random" and "genetic"), in one process.

Run from the repository root::

    python benchmarks/counterfactuals.py [--repeats 3] [--time-limit 10] [--quick] [--solver milp]

DiCE is not a dependency of this project; install it for this script only, without its
dependencies (its metadata asks for xgboost, which would pull a second, GPU, wheel)::

    pip install --no-deps dice-ml raiutils
    pip install --no-deps tqdm jsonschema   # if missing; sklearn, pandas, lightgbm are here

Data: a synthetic loan table, seeded (5,000 rows: income, debt, age, years_employed,
late_payments; age and late_payments integers), ``approve`` = 1 when a score of
log-income, debt ratio, years employed, late payments and age plus logistic noise is
positive. Models, each fitted on the whole table:

  a. RandomForestClassifier, 50 trees, max_depth 6
  b. XGBClassifier, 100 rounds depth 4: saved to JSON and read back with
     ``explainers.io.load_model`` (ours explains the file; DiCE gets the xgboost object)
  c. LGBMClassifier, 100 rounds 15 leaves: saved to its text file and read back likewise
  d. StandardScaler + MLPClassifier(16, 8) in a Pipeline (ours: the model-agnostic search)

Rows: 12 rows every model predicts as deny (a seeded draw). Both sides ask for 3
counterfactuals of the other class with age fixed (DiCE: ``features_to_vary`` = all but
age) within the data's observed range of each feature (ours: its default ranges; DiCE:
``permitted_range`` = [min, max] of each feature). DiCE: ``dice_ml.Data`` with every
feature continuous, ``dice_ml.Model(backend="sklearn")``, ``desired_class="opposite"``,
``total_CFs=3``, its other settings default; seeded (``random_seed`` for "random",
``np.random.seed`` for "genetic").

Every metric is computed here, the same way for both sides, from the returned rows alone:

  found     rows (of 12) with at least one valid counterfactual
  valid %   returned counterfactuals that the library model's own ``predict`` puts in the
            target class (for b and c the xgboost / lightgbm object, not our file reader)
  bounds %  returned counterfactuals with age unchanged and every feature in its range
  dist      distance = sum over features of |x'_j - x_j| / MAD_j (MAD: median absolute
            deviation of column j over the 5,000 rows); "near" is the median over rows of
            the nearest valid counterfactual, "all" the median over every valid one
  changed   median number of features changed by the nearest valid counterfactual
  time      wall time for the 12 rows (one call each side), median of --repeats runs;
            a side whose first run takes over 10 s runs once (the "runs" column says);
            "cpu" the process cpu time of the same runs (compare it on a busy machine)

Ratios ours / DiCE-random for the distance (lower: ours are nearer) and for the time, and
"dice nearer": the rows where a DiCE answer (valid, in range) is nearer than our nearest, in
brackets those of them our solver claimed proven nearest (that would be a solver bug).
A second table times our solver per row as the forest grows (10, 50, 200 trees depth 6;
the 12 rows above where the forest denies them, others it denies drawn in their place; the
50-tree forest is the main table's, its run reused) and counts the rows proven nearest
(``res.optimal``). --quick: one run each side and no second table.
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import warnings
from contextlib import redirect_stderr, redirect_stdout
from importlib.metadata import PackageNotFoundError, version
from io import StringIO
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")  # DiCE draws a progress bar per call

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from explainers.counterfactuals import counterfactuals  # noqa: E402
from explainers.io import load_model  # noqa: E402

N_ROWS, N_EXPLAIN, N_CF, SEED = 5_000, 12, 3, 0
FIXED = "age"
OUTCOME = "approve"


# ----------------------------------------------------------------- data and models
def loan_table(n: int = N_ROWS, seed: int = SEED) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    age = rng.integers(21, 71, n)
    income = np.round(np.exp(rng.normal(np.log(52_000), 0.45, n)) * np.clip(1 + 0.01 * (age - 40), 0.7, None), -2)
    years = np.round(np.minimum(rng.gamma(2.0, 4.0, n), age - 18), 1)
    debt = np.round(income * rng.beta(2, 5, n) * 1.2, -2)
    late = np.minimum(rng.poisson(0.9, n), 12)
    score = (2.2 * np.log(income / 50_000) - 5.0 * (debt / income - 0.3) + 0.07 * years
             - 0.7 * late + 0.015 * (age - 40) + 0.6 + rng.logistic(0, 0.6, n))
    X = pd.DataFrame({"income": income, "debt": debt, "age": age.astype(np.int64),
                      "years_employed": years, "late_payments": late.astype(np.int64)})
    return X, (score > 0).astype(np.int64)


def fit_models(X, y, folder: Path) -> dict:
    """name -> (model ours explains, library model DiCE gets and every validity check uses)."""
    import lightgbm as lgb
    import xgboost as xgb

    out = {}
    rf = RandomForestClassifier(50, max_depth=6, random_state=SEED, n_jobs=1).fit(X, y)
    out["forest 50x6"] = (rf, rf)
    xg = xgb.XGBClassifier(n_estimators=100, max_depth=4, learning_rate=0.1, random_state=SEED,
                           n_jobs=1).fit(X, y)
    xg.save_model(folder / "loans_xgb.json")
    out["xgboost 100x4 (json)"] = (load_model(folder / "loans_xgb.json"), xg)
    lg = lgb.LGBMClassifier(n_estimators=100, num_leaves=15, learning_rate=0.1, random_state=SEED,
                            n_jobs=1, verbose=-1).fit(X, y)
    lg.booster_.save_model(str(folder / "loans_lgbm.txt"))
    out["lightgbm 100x15 (txt)"] = (load_model(folder / "loans_lgbm.txt"), lg)
    mlp = make_pipeline(StandardScaler(), MLPClassifier((16, 8), max_iter=600, random_state=SEED)).fit(X, y)
    out["mlp pipeline"] = (mlp, mlp)
    return out


def pick_rows(models, X, k: int = N_EXPLAIN, prefer=()) -> list[int]:
    """k positions every model predicts as deny (0): those of ``prefer`` first, then a seeded draw."""
    deny = np.ones(len(X), bool)
    for _, lib in models:
        deny &= np.asarray(lib.predict(X)) == 0
    first = [int(i) for i in prefer if deny[i]]
    order = np.random.default_rng(SEED + 1).permutation(np.flatnonzero(deny))
    return (first + [int(i) for i in order if int(i) not in first])[:k]


# ----------------------------------------------------------------- metrics (both sides alike)
def mad_scales(X: pd.DataFrame) -> np.ndarray:
    v = X.to_numpy(float)
    med = np.median(v, axis=0)
    mad = np.median(np.abs(v - med), axis=0)
    mean_ad = np.mean(np.abs(v - med), axis=0)
    return np.where(mad > 0, mad, np.where(mean_ad > 0, mean_ad, 1.0))


class Scorer:
    def __init__(self, X: pd.DataFrame):
        self.cols = list(X.columns)
        self.scale = mad_scales(X)
        self.lo, self.hi = X.min().to_numpy(float), X.max().to_numpy(float)
        self.fixed = self.cols.index(FIXED)

    def distances(self, X, row, cf) -> np.ndarray:
        v = cf[self.cols].apply(pd.to_numeric, errors="coerce").to_numpy(float)
        return (np.abs(v - X.iloc[row].to_numpy(float)) / self.scale).sum(axis=1)

    def score(self, lib, X, rows, cfs_per_row, target: int = 1) -> dict:
        """cfs_per_row: per explained row, a DataFrame of its counterfactuals (maybe empty)."""
        n_ret = n_valid = n_bounds = 0
        near, every, changed = [], [], []
        per_row = np.full(len(rows), np.inf)  # nearest valid distance of each row (inf: none)
        for i, (row, cf) in enumerate(zip(rows, cfs_per_row)):
            if cf is None or not len(cf):
                continue
            cf = cf[self.cols].apply(pd.to_numeric, errors="coerce")
            v = cf.to_numpy(float)
            x = X.iloc[row].to_numpy(float)
            valid = np.asarray(lib.predict(cf)) == target
            eps = 1e-9 * np.maximum(1.0, np.abs(x))
            moved = np.abs(v - x) > eps
            inside = (np.all((v >= self.lo - eps) & (v <= self.hi + eps), axis=1) & ~moved[:, self.fixed])
            n_ret += len(v)
            n_valid += int(valid.sum())
            n_bounds += int(inside.sum())
            if not valid.any():
                continue
            dist = (np.abs(v - x) / self.scale).sum(axis=1)
            if (valid & inside).any():
                per_row[i] = dist[valid & inside].min()
            d = dist[valid]
            every.extend(d)
            best = int(np.argmin(d))
            near.append(d[best])
            changed.append(int(moved[valid][best].sum()))
        med = (lambda a: float(np.median(a)) if len(a) else float("nan"))
        return {"found": len(near), "returned": n_ret, "per_row": per_row,
                "valid": 100.0 * n_valid / n_ret if n_ret else float("nan"),
                "bounds": 100.0 * n_bounds / n_ret if n_ret else float("nan"),
                "near": med(near), "all": med(every), "changed": med(changed)}


# ----------------------------------------------------------------- the two sides
OURS_OPTIONS: dict = {}  # --solver, when given


def ours(model, X, rows, time_limit: float):
    from explainers.trees import is_tree_model

    options = OURS_OPTIONS if is_tree_model(model) else {}  # solver= is for tree models only
    res = counterfactuals(model, X, rows, fixed=[FIXED], n=N_CF, time_limit=time_limit, random_state=SEED,
                          **options)
    return list(res.counterfactuals), res


class Dice:
    def __init__(self, X, y):
        import dice_ml

        self.dice_ml = dice_ml
        self.data = dice_ml.Data(dataframe=X.assign(**{OUTCOME: y}), continuous_features=list(X.columns),
                                 outcome_name=OUTCOME)
        self.vary = [c for c in X.columns if c != FIXED]
        self.ranges = {c: [float(X[c].min()), float(X[c].max())] for c in self.vary}

    def explainer(self, lib, method: str):
        m = self.dice_ml.Model(model=lib, backend="sklearn")
        return self.dice_ml.Dice(self.data, m, method=method)

    def run(self, lib, X, rows, method: str):
        exp = self.explainer(lib, method)
        np.random.seed(SEED)
        random.seed(SEED)
        kw = {"random_seed": SEED} if method == "random" else {}
        with redirect_stdout(StringIO()), redirect_stderr(StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = exp.generate_counterfactuals(X.iloc[rows], total_CFs=N_CF, desired_class="opposite",
                                             features_to_vary=self.vary, permitted_range=self.ranges, **kw)
        out = []
        for e in r.cf_examples_list:
            df = e.final_cfs_df
            out.append(None if df is None else df.drop(columns=[OUTCOME], errors="ignore"))
        return out, r


def timed(fn, repeats: int, once_over: float = 10.0):
    """(median wall s, median cpu s, runs, last output); a first run over ``once_over`` s is not repeated."""
    times, cpu, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        if times[0] > once_over:
            break
    return statistics.median(times), statistics.median(cpu), len(times), out


SHORT = {"tree MILP (HiGHS)": "MILP", "tree branch and bound": "b&b",
         "tree branch and bound, then MILP (HiGHS)": "b&b+MILP", "tree enumeration": "enum", "search": "search"}


# ----------------------------------------------------------------- tables
def fmt(v, spec):
    return "   -" if np.isnan(v) else format(v, spec)


def main_table(models, X, y, rows, repeats: int, time_limit: float) -> dict:
    """Prints the side-by-side table and the ratios; returns {model name: (our result, our seconds)}."""
    scorer, dice = Scorer(X), Dice(X, y)
    print(f"\n{len(rows)} denied rows, {N_CF} counterfactuals each, age fixed; ours time_limit={time_limit:g} s "
          f"per row, solver={OURS_OPTIONS.get('solver', 'default')}; time: all the rows, wall and process cpu, median of `runs` runs (a side over 10 s runs once)")
    head = (f"{'model':21} {'method':13} {'found':>5} {'ret':>4} {'valid%':>6} {'bounds%':>7} "
            f"{'dist near':>9} {'dist all':>8} {'changed':>7} {'time s':>7} {'cpu s':>7} {'runs':>4}")
    print(head)
    print("-" * len(head))
    summary, kept = [], {}
    for name, (model, lib) in models.items():
        ours(model, X, rows[:1], time_limit)  # warm the code path once
        t_ours, c_ours, runs, (cfs, res) = timed(lambda m=model: ours(m, X, rows, time_limit), repeats)
        kept[name] = (res, t_ours)
        # our own distances against this script's (the same MAD units, so the same numbers)
        dist_gap = max((float(np.max(np.abs(scorer.distances(X, r, c) - d)))
                        for r, c, d in zip(rows, cfs, res.distances) if len(c)), default=0.0)
        # b, c: do our file reader and the library give the returned rows the same class?
        reader_gap = sum(int(np.sum(np.asarray(model.predict(c)) != np.asarray(lib.predict(c))))
                         for c in cfs if len(c)) if model is not lib else 0
        lines = [(f"ours {SHORT.get(res.method, res.method)}", t_ours, c_ours, runs,
                  scorer.score(lib, X, rows, cfs))]
        for method in ("random", "genetic"):
            t, c, runs, (dcfs, _) = timed(lambda lib=lib, method=method: dice.run(lib, X, rows, method), repeats)
            lines.append((f"DiCE {method}", t, c, runs, scorer.score(lib, X, rows, dcfs)))
        for label, t, c, runs, s in lines:
            print(f"{name:21} {label[:13]:13} {s['found']:>5} {s['returned']:>4} {fmt(s['valid'], '6.1f')} "
                  f"{fmt(s['bounds'], '7.1f')} {fmt(s['near'], '9.3f')} {fmt(s['all'], '8.3f')} "
                  f"{fmt(s['changed'], '7.1f')} {t:7.2f} {c:7.2f} {runs:>4}")
        o, r = lines[0][4], lines[1][4]
        # rows where a DiCE answer (valid, in range, age kept) is nearer than our nearest; a row
        # our solver proved nearest must never be among them
        theirs = np.minimum(lines[1][4]["per_row"], lines[2][4]["per_row"])
        beaten = theirs < o["per_row"] * (1 - 1e-9) - 1e-12
        beaten_proven = int(np.sum(beaten & np.asarray(res.optimal, bool)))
        summary.append((name, o["near"] / r["near"], o["all"] / r["all"], lines[0][1] / lines[1][1],
                        sum(res.optimal), reader_gap, res.method, [m for m in res.messages if m], dist_gap,
                        max(res.seconds), int(beaten.sum()), beaten_proven))
    print("\nratios ours / DiCE-random (lower is better); optimal: rows whose nearest answer ours proved nearest")
    print("dice nearer: rows where a DiCE answer is nearer than our nearest (of them, rows ours proved nearest)")
    print(f"{'model':21} {'dist near':>9} {'dist all':>8} {'time':>7} {'optimal':>8} {'max s/row':>9} "
          f"{'dice nearer':>11}  notes")
    for name, rn, ra, rt, opt, gap, method, msgs, dgap, slow, beat, beat_proven in summary:
        note = f"{gap} returned rows where our file reader and the library disagree" if gap else ""
        if dgap > 1e-6:
            note += ("; " if note else "") + f"res.distances differ from this script's by up to {dgap:.3g}"
        if msgs:
            note += ("; " if note else "") + f"{len(msgs)} rows with a message: {msgs[0][:90]}"
        opt_s = "n/a" if method == "search" else f"{opt}/{len(rows)}"
        print(f"{name:21} {fmt(rn, '9.3f')} {fmt(ra, '8.3f')} {fmt(rt, '7.2f')} {opt_s:>8} {slow:9.2f} {f'{beat} ({beat_proven})':>11}  {note}")
    return kept


def scaling_table(X, y, rows, time_limit: float, reuse=None, sizes=(10, 50, 200)) -> None:
    """reuse: (result, seconds) of the 50-tree forest on ``rows`` from the main table."""
    print(f"\nours on a growing random forest (depth 6): {N_EXPLAIN} rows it denies (the rows above where it "
          f"denies them), n={N_CF}, time_limit={time_limit:g} s per row, 1 run")
    head = (f"{'trees':>5} {'leaves':>7} {'method':8} {'s/row med':>9} {'s/row max':>9} {'total s':>8} "
            f"{'optimal':>7} {'found':>5} {'same rows':>9}")
    print(head)
    print("-" * len(head))
    for k in sizes:
        rf = RandomForestClassifier(k, max_depth=6, random_state=SEED, n_jobs=1).fit(X, y)
        leaves = sum(int(t.tree_.n_leaves) for t in rf.estimators_)
        mine = pick_rows([(rf, rf)], X, prefer=rows)
        if k == 50 and reuse is not None and mine == list(rows):
            res, total = reuse  # the very forest and rows of the main table: its run, not a second one
        else:
            ours(rf, X, mine[:1], time_limit)
            t0 = time.perf_counter()
            _, res = ours(rf, X, mine, time_limit)
            total = time.perf_counter() - t0
        found = sum(1 for c in res.counterfactuals if len(c))
        same = len(set(mine) & set(rows))
        print(f"{k:>5} {leaves:>7} {SHORT.get(res.method, res.method)[:8]:8} {statistics.median(res.seconds):9.3f} "
              f"{max(res.seconds):9.3f} {total:8.2f} {sum(res.optimal):>4}/{len(mine):<2} {found:>5} "
              f"{same:>6}/{len(rows)}")


def versions() -> str:
    out = []
    for p in ("numpy", "pandas", "scikit-learn", "xgboost", "xgboost-cpu", "lightgbm", "highspy", "dice-ml"):
        try:
            out.append(f"{p} {version(p)}")
        except PackageNotFoundError:
            pass
    return ", ".join(out)


def main(repeats: int, time_limit: float, scaling: bool) -> None:
    t_start = time.perf_counter()
    warnings.filterwarnings("ignore", category=UserWarning)
    print(f"machine: {os.cpu_count()} cores ({len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}"
          f" usable), load average {os.getloadavg()[0]:.1f}, Python {platform.python_version()}")
    print(f"versions: {versions()}")
    X, y = loan_table()
    with tempfile.TemporaryDirectory() as tmp:
        models = fit_models(X, y, Path(tmp))
        rows = pick_rows(list(models.values()), X)
        print(f"data: {len(X):,} rows, approve rate {y.mean():.3f}; explained rows {rows}")
        kept = main_table(models, X, y, rows, repeats, time_limit)
    if scaling:
        scaling_table(X, y, rows, time_limit, reuse=kept.get("forest 50x6"))
    print(f"\nwhole script: {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per side and model (median)")
    parser.add_argument("--time-limit", type=float, default=10.0, help="our solver's seconds per row")
    parser.add_argument("--quick", action="store_true", help="1 run each side, no forest-size table")
    parser.add_argument("--solver", default=None, help="our solver for the tree models "
                        "(counterfactuals(solver=...), e.g. milp); default its own default")
    args = parser.parse_args()
    if args.solver:
        OURS_OPTIONS["solver"] = args.solver
    if args.quick:
        args.repeats = 1
    main(args.repeats, args.time_limit, scaling=not args.quick)
