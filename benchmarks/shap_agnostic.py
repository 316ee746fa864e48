"""ExactShap and KernelShap against shap's ExactExplainer and KernelExplainer.

Both sides run in this one process on the same model, background and rows;
times are medians of repeats, and the printed ratio is ours / shap's (below
0.5 meets the goal). Kernel errors are measured against exact values (our
ExactShap, itself checked against shap's ExactExplainer here).

Run:  python benchmarks/shap_agnostic.py [--repeats 3] [--models hgb,mlp] [--threads 1]

Native thread pools (OpenMP, BLAS, and numba's) are limited to ``--threads`` for both
sides: on a shared, loaded machine oversubscribed OpenMP threads make the
model's predict time vary several-fold between calls, which would swamp the
comparison.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import shap  # noqa: E402  (benchmark only: explainers/ never imports shap)
from sklearn.datasets import make_friedman1  # noqa: E402
from sklearn.ensemble import HistGradientBoostingRegressor  # noqa: E402
from sklearn.neural_network import MLPRegressor  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from explainers.shap import ExactShap, KernelShap  # noqa: E402

N_FEATURES, N_BACKGROUND, N_ROWS, N_SAMPLES = 10, 100, 20, 256
N_ERROR_SEEDS = 5  # errors of sampled runs are averaged over these seeds


def _models():
    return {
        # model-bound: predicting the 0.5-2 M synthetic rows dominates both sides
        "hgb": HistGradientBoostingRegressor(max_iter=100, random_state=0),
        # cheap model: the explainer's own overhead dominates
        "mlp": MLPRegressor(hidden_layer_sizes=(32,), max_iter=400, random_state=0),
    }


def _interleaved_medians(fns: list, repeats: int) -> tuple[list[float], list]:
    """Median time of each function, calling them in turn so load drifts hit all alike."""
    times = [[] for _ in fns]
    outs = [None] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            outs[i] = fn()
            times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times], outs


def run(model_name: str, repeats: int) -> dict:
    X, y = make_friedman1(n_samples=700, n_features=N_FEATURES, noise=0.5, random_state=0)
    model = _models()[model_name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MLP convergence chatter
        model.fit(X[:500], y[:500])
    bg, rows = X[500:500 + N_BACKGROUND], X[600:600 + N_ROWS]
    f = model.predict
    masker = shap.maskers.Independent(bg, max_samples=N_BACKGROUND)
    # warm both sides once (numba compilation in shap, BLAS/OpenMP start-up)
    shap.ExactExplainer(f, masker)(rows[:1], max_evals=2**N_FEATURES + 1, silent=True)
    ExactShap(model, bg).explain(rows[:1])

    (t_ours_e, t_shap_e), (ours_e, shap_e) = _interleaved_medians(
        [
            lambda: ExactShap(model, bg).explain(rows),
            lambda: shap.ExactExplainer(f, masker)(rows, max_evals=2**N_FEATURES + 1, silent=True),
        ],
        repeats,
    )
    exact = ours_e.values
    agree = float(np.abs(exact - shap_e.values).max())

    def shap_kernel(l1_reg, seed=0):
        np.random.seed(seed)  # KernelExplainer draws from numpy's global state
        return shap.KernelExplainer(f, bg).shap_values(rows, nsamples=N_SAMPLES, l1_reg=l1_reg, silent=True)

    def ours_kernel(n_samples, seed=0):
        return KernelShap(model, bg, n_samples=n_samples, random_state=seed).explain(rows).values

    def errs(fn):
        """(max |err|, mean |err|) against exact values, averaged over seeds."""
        d = [np.abs(np.asarray(fn(seed)) - exact) for seed in range(N_ERROR_SEEDS)]
        return float(np.mean([x.max() for x in d])), float(np.mean([x.mean() for x in d]))

    cases = [
        ("shap KernelExplainer (default l1_reg)", lambda seed=0: shap_kernel("num_features(10)", seed)),
        ("shap KernelExplainer (l1_reg=False)", lambda seed=0: shap_kernel(False, seed)),
        (f"KernelShap n_samples={N_SAMPLES}", lambda seed=0: ours_kernel(N_SAMPLES, seed)),
        (f"KernelShap n_samples={N_SAMPLES // 2}", lambda seed=0: ours_kernel(N_SAMPLES // 2, seed)),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        times, _ = _interleaved_medians([fn for _, fn in cases], repeats)
        kernel = [(label, t, *errs(fn)) for (label, fn), t in zip(cases, times)]

    return {
        "model": model_name,
        "exact": (t_ours_e, t_shap_e, agree),
        "kernel": kernel,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", default="hgb,mlp")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    import numba

    # our compiled kernels' threads too (numba's pool is not a native pool threadpoolctl sees)
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    with threadpool_limits(args.threads):
        report(args)


def report(args) -> None:
    print(
        f"{N_FEATURES} features, {N_BACKGROUND} background rows, {N_ROWS} rows; "
        f"median of {args.repeats} repeats; {args.threads} native thread(s); ratio = ours / shap"
    )
    for name in args.models.split(","):
        r = run(name, args.repeats)
        t_o, t_s, agree = r["exact"]
        print(f"\n== model: {name}")
        print(
            f"Exact : ExactShap {t_o:6.3f} s | shap.ExactExplainer {t_s:6.3f} s | "
            f"ratio {t_o / t_s:5.2f} | max |diff| {agree:.1e}"
        )
        ref_time = r["kernel"][0][1]
        print(
            f"Kernel (sampled regime; |error| vs exact values, averaged over {N_ERROR_SEEDS} seeds):"
        )
        for label, t, emax, emean in r["kernel"]:
            print(
                f"  {label:40s} {t:6.3f} s  ratio {t / ref_time:5.2f}  "
                f"max err {emax:.4f}  mean err {emean:.4f}"
            )


if __name__ == "__main__":
    main()
