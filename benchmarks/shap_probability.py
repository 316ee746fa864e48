"""Probability-scale Tree SHAP of boosting classifiers against shap's model_output="probability".

Both sides run in this process on the same fitted model, background (100 rows) and
explained rows (50), interventional. Times are medians of repeats, the sides called in
turn so load drifts hit both alike; the ratio is ours / shap's. Ours uses every core
(shap's TreeExplainer one) and is also timed on one thread.

What is compared is not the same number: ours are the Shapley values of the probability
game (checked against the definition, ExactShap, to 1e-9 in tests/test_shap_probability.py);
shap rescales each background pair's margin attributions to the pair's probability
difference, which is the Shapley value only when the pair parts on one feature. The
largest difference between the two, and ours against the definition where p is small
enough for ExactShap, are printed too.

Our cost grows with 2**d, d the features on which a row and a background row take
different branches (at most the number of features the trees use): the workloads run
p = 5, 8, 10 and 12 features.

Run:  python benchmarks/shap_probability.py [--repeats 3] [--features 5,8,10,12]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
warnings.filterwarnings("ignore")


def _models(p: int):
    import lightgbm
    import numpy as np
    import xgboost
    from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, p))
    y = (X[:, 0] * X[:, 1] + X[:, 2] - X[:, 3] + rng.normal(size=len(X)) > 0).astype(int)
    return X, {
        "sklearn GradientBoosting (100 x depth 3)": GradientBoostingClassifier(random_state=0).fit(X, y),
        "sklearn HistGradientBoosting (100 x 31 leaves)": HistGradientBoostingClassifier(random_state=0).fit(X, y),
        "XGBoost (100 x depth 4)": xgboost.XGBClassifier(n_estimators=100, max_depth=4, n_jobs=1).fit(X, y),
        "LightGBM (100 x 31 leaves)": lightgbm.LGBMClassifier(n_estimators=100, verbose=-1, n_jobs=1).fit(X, y),
    }


def _once(fn):
    """(seconds, result) of one call."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    import numpy as np
    import shap

    from explainers.shap import ExactShap, TreeShap

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--features", default="5,8,10,12")
    args = ap.parse_args()
    print(f"{'model':48s} {'p':>3s} {'d max':>5s} {'ours s':>8s} {'1 thread':>8s} {'shap s':>8s} "
          f"{'ratio':>6s} {'|ours-shap|':>11s} {'|ours-exact|':>12s}")
    for p in [int(v) for v in args.features.split(",")]:
        X, models = _models(p)
        bg, rows = X[:100], X[1000:1050]
        for name, model in models.items():
            ours = TreeShap(model, bg, mode="interventional", output="proba")
            one = TreeShap(model, bg, mode="interventional", output="proba", n_jobs=1)
            ours.explain(rows[:2])  # compile outside the timing
            theirs = shap.TreeExplainer(model, bg, model_output="probability",
                                        feature_perturbation="interventional")
            t_ours = []
            t_shap = []
            t_one = []
            for _ in range(args.repeats):  # in turn, so load drifts hit both
                t, res = _once(lambda: ours.explain(rows))
                t_ours.append(t)
                t, sv = _once(lambda: theirs.shap_values(rows))
                t_shap.append(t)
                t, _ = _once(lambda: one.explain(rows))
                t_one.append(t)
            sv = np.asarray(sv)
            sv = sv[..., 1] if sv.ndim == 3 else sv
            vs_shap = float(np.abs(res.values[:, :, 1] - sv).max())
            exact = "-"
            if p <= 8:
                ref = ExactShap(model, bg[:30], output="proba").explain(rows[:5])
                mine = TreeShap(model, bg[:30], mode="interventional", output="proba").explain(rows[:5])
                exact = f"{float(np.abs(mine.values - ref.values).max()):.1e}"
            mo, ms, m1 = (statistics.median(t_ours), statistics.median(t_shap), statistics.median(t_one))
            print(f"{name:48s} {p:3d} {res.params['players_max']:5d} {mo:8.3f} {m1:8.3f} {ms:8.3f} "
                  f"{mo / ms:6.2f} {vs_shap:11.4f} {exact:>12s}", flush=True)


if __name__ == "__main__":
    main()
