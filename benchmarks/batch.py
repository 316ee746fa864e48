"""Benchmark: batch Tree SHAP over a large generated file (``python -m explainers batch``).

Run from the repository root::

    python benchmarks/batch.py [--rows 1000000] [--small-rows 100000]
                               [--speedup-rows 1000000] [--dask-rows 1000000]

Path-dependent Tree SHAP of a RandomForestRegressor (100 trees, depth 8, 10
features) over generated rows, each run in its own process like a user's
command. Reported per run:

* rows/s: rows computed / seconds of the chunk loop (excludes start-up, model
  loading and reading the file once to fingerprint it), and rows / total wall time;
* CPU: user + system seconds of the whole process tree (a check that is not
  disturbed by other work on the machine, unlike rows/s; the load average
  after each run is printed next to it);
* peak RSS: the largest sum of the resident memory of the run's whole process
  tree (parent + loky workers, or parent + Dask scheduler, nanny and workers),
  sampled every 50 ms.

Goals from the issue: peak RSS under 1.5 GB and flat from 100k to 1M rows;
two cores at least 1.8x one core; the Dask LocalCluster within 20% of loky.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N_FEATURES = 10

_CHILD = """
import json, sys
from explainers.batch import explain_file
kw = json.loads(sys.argv[4])
rep = explain_file(sys.argv[1], sys.argv[2], sys.argv[3], method="tree", mode="path_dependent", **kw)
print(json.dumps({"n_rows": rep.n_rows, "rows_per_s": rep.rows_per_s, "seconds": rep.seconds,
                  "n_chunks": rep.n_chunks}))
"""


def make_data(path: Path, n_rows: int, seed: int = 0, block: int = 100_000) -> None:
    """Write ``n_rows`` generated rows to Parquet, block by block (never all in memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    names = [f"x{i}" for i in range(N_FEATURES)]
    writer = None
    try:
        for s in range(0, n_rows, block):
            m = min(block, n_rows - s)
            arr = rng.uniform(size=(m, N_FEATURES))
            table = pa.table({n: arr[:, j] for j, n in enumerate(names)})
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table, row_group_size=50_000)
    finally:
        if writer is not None:
            writer.close()


def make_model(path: Path) -> None:
    import pandas as pd
    import skops.io as sio
    from sklearn.datasets import make_friedman1
    from sklearn.ensemble import RandomForestRegressor

    X, y = make_friedman1(n_samples=20_000, n_features=N_FEATURES, random_state=0)
    X = pd.DataFrame(X, columns=[f"x{i}" for i in range(N_FEATURES)])
    forest = RandomForestRegressor(n_estimators=100, max_depth=8, random_state=0, n_jobs=-1).fit(X, y)
    forest.set_params(n_jobs=None)
    sio.dump(forest, path)


def run(model: Path, data: Path, out: Path, **kw) -> dict:
    """One batch run in a child process; returns its report plus wall time and peak RSS."""
    import psutil

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(model), str(data), str(out), json.dumps(kw)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    peak = {"tree": 0, "parent": 0}
    cpu: dict[int, float] = {}  # pid -> last seen user + system CPU seconds
    stop = threading.Event()

    def sample():
        p = psutil.Process(proc.pid)
        while not stop.is_set():
            try:
                procs = [p, *p.children(recursive=True)]
                rss = []
                for q in procs:
                    try:
                        rss.append(q.memory_info().rss)
                        t = q.cpu_times()
                        cpu[q.pid] = t.user + t.system
                    except psutil.Error:
                        pass
                peak["tree"] = max(peak["tree"], sum(rss))
                peak["parent"] = max(peak["parent"], rss[0] if rss else 0)
            except psutil.Error:
                break
            time.sleep(0.05)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    stdout, stderr = proc.communicate()
    stop.set()
    th.join()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"batch run failed ({proc.returncode}):\n{stderr[-3000:]}")
    rep = json.loads(stdout.strip().splitlines()[-1])
    rep.update(wall_s=wall, wall_rows_per_s=rep["n_rows"] / wall, cpu_s=sum(cpu.values()),
               peak_rss_mb=peak["tree"] / 2**20, peak_parent_mb=peak["parent"] / 2**20,
               loadavg=os.getloadavg()[0])
    return rep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the large run (loky, 2 cores)")
    ap.add_argument("--small-rows", type=int, default=100_000, help="rows of the small run (memory)")
    ap.add_argument("--speedup-rows", type=int, default=None,
                    help="rows of the one-core vs two-core comparison (default --rows, as the issue "
                         "defines it: the loky workers' start-up, about 2 s of imports each, is then "
                         "spread over the same run)")
    ap.add_argument("--dask-rows", type=int, default=None, help="rows of the Dask run (default --rows)")
    ap.add_argument("--chunk-rows", type=int, default=20_000)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    dask_rows = args.dask_rows or args.rows
    args.speedup_rows = args.speedup_rows or args.rows
    work = Path(args.workdir or tempfile.mkdtemp(prefix="glassbox_batch_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    model = work / "forest.skops"
    if not model.exists():
        make_model(model)
    sizes = sorted({args.rows, args.small_rows, args.speedup_rows, dask_rows})
    for n in sizes:
        path = work / f"rows_{n}.parquet"
        if not path.exists():
            make_data(path, n)
    # compile (or load) the numba kernels once, so no run pays for compiling them
    warm = work / "warm.parquet"
    if not warm.exists():
        make_data(warm, 2_000, seed=1)
    subprocess.run([sys.executable, "-c", _CHILD, str(model), str(warm), str(work / "out"),
                    json.dumps({"chunk_rows": 1000, "overwrite": True})],
                   check=True, capture_output=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    print(f"RandomForestRegressor(100 trees, depth 8, {N_FEATURES} features), path-dependent TreeShap, "
          f"chunk_rows={args.chunk_rows:,}, {os.cpu_count()} CPUs; data in {work}")
    common = {"chunk_rows": args.chunk_rows}
    results, done = {}, {}

    def show(label, r):
        print(f"{label:<34} {r['n_rows']:>9,} rows  {r['rows_per_s']:>8,.0f} rows/s "
              f"(wall {r['wall_s']:7.1f} s, {r['wall_rows_per_s']:>7,.0f} rows/s)  "
              f"peak RSS {r['peak_rss_mb']:7.0f} MB (parent {r['peak_parent_mb']:.0f} MB)  "
              f"CPU {r['cpu_s']:6.1f} s  load {r['loadavg']:.1f}", flush=True)

    for label, n, kw in [
        ("one core (n_jobs=1)", args.speedup_rows, {"n_jobs": 1}),
        ("loky, 2 cores", args.speedup_rows, {"n_jobs": 2}),
        ("loky, 2 cores (small)", args.small_rows, {"n_jobs": 2}),
        ("loky, 2 cores (large)", args.rows, {"n_jobs": 2}),
        ("dask LocalCluster, 2 workers", dask_rows, {"n_jobs": 2, "backend": "dask"}),
    ]:
        key = (n, json.dumps(kw, sort_keys=True))
        if key in done:  # the same run under another label (e.g. --speedup-rows = --rows)
            results[label] = done[key]
            continue
        r = run(model, work / f"rows_{n}.parquet", work / "out", **common, **kw)
        results[label] = done[key] = r
        show(label, r)

    one, two = results["one core (n_jobs=1)"], results["loky, 2 cores"]
    big, small = results["loky, 2 cores (large)"], results["loky, 2 cores (small)"]
    dask = results["dask LocalCluster, 2 workers"]
    print()
    print(f"speed-up 2 cores / 1 core: {two['rows_per_s'] / one['rows_per_s']:.2f}x (goal >= 1.8x)")
    print(f"peak RSS: {small['peak_rss_mb']:.0f} MB at {small['n_rows']:,} rows, "
          f"{big['peak_rss_mb']:.0f} MB at {big['n_rows']:,} rows (goal < 1536 MB, flat)")
    print(f"dask / loky rows/s: {dask['rows_per_s'] / big['rows_per_s']:.2f} "
          f"(wall: {dask['wall_rows_per_s'] / big['wall_rows_per_s']:.2f}; goal >= 0.8)")
    shutil.rmtree(work / "out", ignore_errors=True)


if __name__ == "__main__":
    main()
