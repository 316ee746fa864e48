"""Loading a neighbour model from a .skops file: Glassbox's ``load_model`` (which leaves the
stored KDTree / BallTree out and rebuilds it from the checked training rows) against a
plain ``skops.io.loads(data, trusted=...)`` of the same file (which builds the stored
index as the file gives it), and the time of the index rebuild alone.

A KNeighborsRegressor on 100,000 rows x 10 features (kd_tree, then ball_tree); median of
``--repeat`` loads each. The loaded models' predictions are checked equal.

    python benchmarks/neighbour_rebuild.py [--rows 100000] [--repeat 7]
"""
from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv=None) -> None:
    import skops.io as sio
    from sklearn.neighbors import BallTree, KDTree, KNeighborsRegressor

    from explainers import load_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.rows, args.features))
    y = X[:, 0] + rng.normal(scale=0.1, size=args.rows)
    probe = X[:2_000]
    print(f"KNeighborsRegressor, {args.rows:,} rows x {args.features} features, median of {args.repeat}")
    for algorithm, index in (("kd_tree", KDTree), ("ball_tree", BallTree)):
        model = KNeighborsRegressor(algorithm=algorithm).fit(X, y)
        data = sio.dumps(model)
        trusted = sio.get_untrusted_types(data=data)
        ours = _median_seconds(partial(load_model, data, filename="m.skops"), args.repeat)
        plain = _median_seconds(partial(sio.loads, data, trusted=trusted), args.repeat)
        rebuild = _median_seconds(partial(index, X, model.leaf_size, metric=model.effective_metric_,
                                          **model.effective_metric_params_), args.repeat)
        same = np.array_equal(load_model(data, filename="m.skops").predict(probe), model.predict(probe))
        print(f"  {algorithm:9s} file {len(data) / 2**20:5.1f} MB   load_model {ours * 1e3:7.1f} ms   "
              f"skops.io.loads {plain * 1e3:7.1f} ms   ratio {ours / plain:5.1f}x   "
              f"index rebuild alone {rebuild * 1e3:7.1f} ms   predictions equal: {same}")

if __name__ == "__main__":
    main()
