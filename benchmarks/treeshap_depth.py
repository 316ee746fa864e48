"""Path-dependent Tree SHAP on deep trees: ours against shap and the libraries' own contributions.

Three parts, each run side by side in this one process on the same fitted model
and rows, calls taken in turn so load drifts hit all sides alike, medians of
repeats, the same threads on both sides (shap's TreeExplainer uses one thread;
ours runs with ``n_jobs`` = the library's threads):

  depth    RandomForestRegressor(20 trees, max_depth d) on 20,000 x 20 rows,
           d = 4, 8, 12, 16, 24, explaining 100 rows: ours (auto, and the linear
           walk alone) against shap.TreeExplainer, and each side's growth per level
  goals    the issue's models:
             rf    RandomForestClassifier(150, min_samples_leaf=5), make_classification
                   20,000 x 20 (trees of depth ~26), 150 rows, vs shap      (goal <= 0.1)
             xgb   XGBoost 1,000 trees depth 10, 50 rows, vs pred_contribs   (goal <= 0.2)
             lgb   LightGBM 300 trees of 255 leaves, 100 rows, vs pred_contrib (goal <= 0.2)
             cat   CatBoost 500 trees depth 8, 200 rows, vs ShapValues       (goal <= 0.2)
           on one thread and on two
  --calibrate   leaf tables against the linear walk on XGBoost trees of depth 3-14,
           both forced (no memory limit), and the steps per table look-up and per
           table entry built that explainers/shap/tree.py's cost model uses

Every timed call is checked against the other side (max |diff| / range).

Run:  python benchmarks/treeshap_depth.py [--parts depth,goals] [--models rf,xgb,lgb,cat]
      [--repeats 3] [--quick] [--calibrate]
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

from sklearn.datasets import make_classification  # noqa: E402
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor  # noqa: E402

from explainers.shap import TreeShap  # noqa: E402
from explainers.trees import flatten_model  # noqa: E402

GOALS = {"rf": 0.1, "xgb": 0.2, "lgb": 0.2, "cat": 0.2}


def _interleaved(sides: dict, repeats: int) -> dict:
    """Median seconds of each side, taking the sides in turn."""
    times = {k: [] for k in sides}
    for _ in range(repeats):
        for k, fn in sides.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def _ours(model, n_jobs, **kw):
    ts = TreeShap(model, n_jobs=n_jobs, **kw)
    return lambda X: ts.explain(X, nan_is_missing=False)


def _rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.ptp(b), 1e-300))


# ------------------------------------------------------------------ depth
def depth_curve(repeats: int, quick: bool) -> None:
    import shap

    rng = np.random.default_rng(0)
    n = 5000 if quick else 20_000
    X = rng.normal(size=(n, 20))
    y = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + X[:, 3:10].sum(1) + rng.normal(size=n)
    rows = X[:100]
    print(f"\n== time against depth: RandomForestRegressor 20 trees, {n:,} x 20, 100 rows, one thread ==")
    print(f"{'depth':>5} {'real':>5} {'leaves':>7} {'ours s':>8} {'linear s':>9} {'shap s':>8} "
          f"{'ours/shap':>9} {'growth ours':>11} {'growth shap':>11} {'ns/leaf ours':>12} {'ns/leaf shap':>12} "
          f"{'max rel diff':>12}")
    prev = None
    for d in (4, 8, 12, 16, 24):
        model = RandomForestRegressor(20, max_depth=d, random_state=0, n_jobs=-1).fit(X, y)
        ens = flatten_model(model)
        ours, lin = _ours(model, 1), _ours(model, 1, algorithm="linear")
        ex = shap.TreeExplainer(model)
        ours(rows[:4])
        lin(rows[:4])
        t = _interleaved({"ours": lambda: ours(rows), "lin": lambda: lin(rows),
                          "shap": lambda: ex.shap_values(rows, check_additivity=False)}, repeats)
        diff = _rel(ours(rows).values, ex.shap_values(rows, check_additivity=False))
        g = ("", "") if prev is None else (f"{(t['ours'] / prev['ours']) ** (1 / (d - prev['d'])):.2f}x",
                                           f"{(t['shap'] / prev['shap']) ** (1 / (d - prev['d'])):.2f}x")
        leaf_rows = float((ens.left < 0).sum()) * len(rows) / 1e9
        print(f"{d:>5} {ens.max_depth:>5} {int((ens.left < 0).sum()):>7} {t['ours']:>8.3f} {t['lin']:>9.3f} "
              f"{t['shap']:>8.3f} {t['ours'] / t['shap']:>9.3f} {g[0]:>11} {g[1]:>11} {t['ours'] / leaf_rows:>12.1f} "
              f"{t['shap'] / leaf_rows:>12.1f} {diff:>12.1e}", flush=True)
        prev = dict(t, d=d)
    print("(growth: the time's factor per level of depth since the row above; ns/leaf: nanoseconds per leaf and "
          "row explained: the cost of depth itself, the number of leaves set aside)")


# ------------------------------------------------------------------ goals
def _goal_models(names, quick: bool):
    X, y = make_classification(20_000, 20, n_informative=10, random_state=0)
    out = {}
    if "rf" in names:
        rf = RandomForestClassifier(150, min_samples_leaf=5, random_state=0, n_jobs=-1).fit(X, y)
        import shap

        ex = shap.TreeExplainer(rf)
        out["rf"] = ("RandomForestClassifier 150 trees, min_samples_leaf=5", rf, X[:150],
                     lambda R, n: np.asarray(ex.shap_values(R, check_additivity=False)), False)
    if "xgb" in names:
        import xgboost as xgb

        bst = xgb.train({"max_depth": 10, "eta": 0.05, "nthread": 2, "seed": 0}, xgb.DMatrix(X, label=y),
                        200 if quick else 1000)

        def xgb_contribs(R, n):
            bst.set_param({"nthread": n})
            return bst.predict(xgb.DMatrix(R), pred_contribs=True)[:, :-1]

        out["xgb"] = (f"XGBoost {bst.num_boosted_rounds()} trees depth 10", bst, X[:50], xgb_contribs, True)
    if "lgb" in names:
        import lightgbm as lgb

        lbst = lgb.train({"num_leaves": 255, "verbose": -1, "seed": 0, "num_threads": 2},
                         lgb.Dataset(X, y), 60 if quick else 300)

        def lgb_contribs(R, n):
            return lbst.predict(R, pred_contrib=True, num_threads=n)[:, :-1]

        out["lgb"] = (f"LightGBM {lbst.num_trees()} trees of 255 leaves", lbst, X[:100], lgb_contribs, True)
    if "cat" in names:
        import catboost

        cb = catboost.CatBoostRegressor(iterations=100 if quick else 500, depth=8, verbose=0, random_seed=0,
                                        thread_count=2).fit(X, y)

        def cat_contribs(R, n):
            return cb.get_feature_importance(catboost.Pool(R), type="ShapValues", thread_count=n)[:, :-1]

        out["cat"] = (f"CatBoost {cb.tree_count_} trees depth 8", cb, X[:200], cat_contribs, True)
    return out


def goals(names, repeats: int, quick: bool) -> None:
    print("\n== the issue's models: ours / theirs, same threads (values checked) ==")
    print(f"{'model':<44} {'rows':>5} {'depth':>5} {'thr':>3} {'ours s':>8} {'theirs s':>9} {'ratio':>6} "
          f"{'goal':>5} {'tables/linear':>13} {'max rel diff':>12}")
    for key, (desc, model, rows, theirs, raw) in _goal_models(names, quick).items():
        ens = flatten_model(model)
        for n_jobs in (1, 2):
            ours = _ours(model, n_jobs)
            res = ours(rows[:4])
            theirs(rows[:4], n_jobs)
            t = _interleaved({"ours": lambda: ours(rows), "theirs": lambda: theirs(rows, n_jobs)}, repeats)
            res = ours(rows)
            ref = theirs(rows, n_jobs)
            got = res.values
            if not raw and ref.ndim == 3:  # shap's forest classifier: (n, p, classes)
                got = got if got.ndim == 3 else got[..., None]
            split = f"{res.params['trees_with_tables']}/{res.params['trees_linear']}"
            ratio = t["ours"] / t["theirs"]
            print(f"{desc:<44} {len(rows):>5} {ens.max_depth:>5} {n_jobs:>3} {t['ours']:>8.3f} {t['theirs']:>9.3f} "
                  f"{ratio:>6.3f} {GOALS[key]:>5} {split:>13} {_rel(got, ref):>12.1e}", flush=True)


# -------------------------------------------------------------- calibrate
def calibrate(repeats: int) -> None:
    import xgboost as xgb

    import explainers.shap.tree as T

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 20))
    y = X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + X[:, 3:8].sum(1) + rng.normal(size=20_000)
    rows = X[:256]
    limit, T.MAX_TREE_TABLE_ENTRIES = T.MAX_TREE_TABLE_ENTRIES, 2**26
    print("\n== calibration: XGBoost 40 trees, 256 rows, one thread, tables forced without limits ==")
    print(f"{'depth':>5} {'mean m':>6} {'tables s':>9} {'linear s':>9} {'lin/tab':>7} {'steps/look-up':>13} "
          f"{'build s':>8} {'steps/entry':>11} {'model lin/tab':>13}")
    try:
        for d in (3, 4, 6, 8, 10, 12, 14):
            model = xgb.XGBRegressor(n_estimators=40, max_depth=d, nthread=2).fit(X, y)
            tab = TreeShap(model, algorithm="tables", n_jobs=1, max_table_mb=1e6)
            lin = TreeShap(model, algorithm="linear", n_jobs=1)
            tab.explain(rows[:5])
            lin.explain(rows[:5])
            t = _interleaved({"tab": lambda: tab.explain(rows), "lin": lambda: lin.explain(rows)}, repeats)
            masked = np.zeros(20, bool)
            t_build = _interleaved({"build": lambda: tab._build_plan(masked, None, True, len(rows))}, repeats)["build"]
            plan = tab._build_plan(masked, None, True, len(rows))
            table_rows, table_build, linear_rows = T.pd_tree_work(tab._nodes, plan.leaf_m, plan.pair, 1)
            nodes = float(len(tab._nodes["left"]))
            lm = plan.leaf_m
            right = tab._nodes["right"][np.flatnonzero(plan.pair)]
            looks = np.where(lm >= 0, np.maximum(lm, 1), 0).astype(float)
            looks[right] = 0.0
            step = t["lin"] / len(rows) / linear_rows.sum()  # seconds per walk step
            per_look = (t["tab"] / len(rows) / step - nodes) / looks.sum()
            per_entry = t_build / step / plan.table.shape[1]
            model_ratio = linear_rows.sum() / (table_rows.sum() + table_build.sum() / len(rows))
            print(f"{d:>5} {lm[lm >= 0].mean():>6.1f} {t['tab']:>9.4f} {t['lin']:>9.4f} {t['lin'] / t['tab']:>7.2f} "
                  f"{per_look:>13.2f} {t_build:>8.4f} {per_entry:>11.1f} {model_ratio:>13.2f}", flush=True)
    finally:
        T.MAX_TREE_TABLE_ENTRIES = limit
    print(f"(the cost model: max({T.TABLE_LOOKUP_STEPS}, {T.TABLE_LOOKUP_SLOPE} m - 0.3) steps per look-up, "
          f"{T.TABLE_BUILD_STEPS} per entry built; 'model lin/tab' includes the build over these 256 rows)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="depth,goals")
    ap.add_argument("--models", default="rf,xgb,lgb,cat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="smaller data and models, one repeat")
    ap.add_argument("--calibrate", action="store_true", help="only the cost model's calibration")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    repeats = 1 if args.quick else args.repeats
    if args.calibrate:
        calibrate(repeats)
        return
    parts = args.parts.split(",")
    if "depth" in parts:
        depth_curve(repeats, args.quick)
    if "goals" in parts:
        goals(args.models.split(","), repeats, args.quick)


if __name__ == "__main__":
    main()
