"""The batch command line as users run it: parallel workers, Dask, and a run killed midway.

Each test starts real processes (loky workers, a Dask LocalCluster, or
``python -m explainers``), so the data stay small.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import RandomForestClassifier

from explainers.batch import explain_file, importance_file, load_background
from explainers.shap import explain
from tests._batch_models import SlowLinearRegressor

ROOT = Path(__file__).resolve().parents[1]
FEATURES = ["a", "b", "c"]


def _cli(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "explainers", *map(str, args)],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, **kw,
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("batch_cli")
    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.normal(size=(240, 3)), columns=FEATURES)
    y = pd.Series(np.where(X.a + 0.5 * X.b > 0, "yes", "no"), name="label")
    clf = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    sio.dump(clf, d / "clf.skops")
    X.assign(label=y).to_parquet(d / "data.parquet", row_group_size=70)
    slow = SlowLinearRegressor(delay=0.03).fit(X, X.a - 2 * X.b + 0.5 * X.c)
    joblib.dump(slow, d / "slow.joblib")
    return {"dir": d, "X": X, "y": y, "clf": clf, "slow": slow}


def test_dask_local_cluster_equals_loky_bit_for_bit(data, tmp_path):
    d = data["dir"]
    kw = dict(method="exact", background=25, block_rows=20, n_jobs=2)
    explain_file(d / "clf.skops", d / "data.parquet", tmp_path / "loky", chunk_rows=40, **kw)
    explain_file(d / "clf.skops", d / "data.parquet", tmp_path / "dask", chunk_rows=60, backend="dask", **kw)
    loky, dask = pd.read_parquet(tmp_path / "loky"), pd.read_parquet(tmp_path / "dask")
    pd.testing.assert_frame_equal(loky, dask, check_exact=True)
    ref = explain(data["clf"], data["X"], method="exact", background=load_background(tmp_path / "loky"))
    vals = loky[[f"shap_{f}__{c}" for f in FEATURES for c in ("no", "yes")]].to_numpy()
    np.testing.assert_array_equal(vals.reshape(240, 3, 2), ref.values)
    # importance: parallel workers give the numbers of one process
    a = importance_file(d / "clf.skops", d / "data.parquet", tmp_path / "ia", target="label",
                        chunk_rows=60, n_jobs=2)
    b = importance_file(d / "clf.skops", d / "data.parquet", tmp_path / "ib", target="label",
                        chunk_rows=60, n_jobs=1)
    np.testing.assert_array_equal(a.raw, b.raw)


def test_loky_workers_started_during_set_up_serve_the_chunks(data, tmp_path, monkeypatch):
    """The workers warmed while the parent sets up are the ones that compute the chunks."""
    import psutil

    from explainers.batch import backends, run
    from explainers.errors import ExplainerError

    warm, alive, chunk = set(), set(), set()
    real_wait, real_add = backends._Warmup.wait, run._Tracker.add

    def wait(self):
        real_wait(self)
        warm.update(self.pids)  # workers that ran a warm-up task (one may have run both)
        alive.update(p.pid for p in psutil.Process().children(recursive=True))

    def add(self, res):
        chunk.add(res["pid"])
        real_add(self, res)

    monkeypatch.setattr(backends._Warmup, "wait", wait)
    monkeypatch.setattr(run._Tracker, "add", add)
    d = data["dir"]
    explain_file(d / "clf.skops", d / "data.parquet", tmp_path / "o", method="exact", background=10,
                 block_rows=20, chunk_rows=40, n_jobs=2)
    # the chunk loop got the workers that were up when the warm-up ended: no new pool
    assert warm and chunk and warm <= alive and chunk <= alive and os.getpid() not in chunk
    # an error before the chunk loop comes out at once, the warm-up dropped
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"x": [1.0, 2.0]}).to_csv(bad, index=False)
    t0 = time.perf_counter()
    with pytest.raises(ExplainerError, match="lacks"):
        explain_file(d / "clf.skops", bad, tmp_path / "bad", n_jobs=2)
    print(f"error after {time.perf_counter() - t0:.2f} s")
    assert not (tmp_path / "bad").exists()


def test_killed_run_resumes_complete_and_equal(data, tmp_path):
    d = data["dir"]
    out = tmp_path / "out"
    args = ["batch", "--model", d / "slow.joblib", "--trust-pickles", "--data", d / "data.parquet",
            "--out", out, "--method", "exact", "--background", "10", "--chunk-rows", "20",
            "--block-rows", "10", "--n-jobs", "1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "explainers", *map(str, args)], cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, so the kill reaches only it
    )
    try:
        deadline = time.monotonic() + 60
        while len(list(out.glob("part-*.parquet"))) < 3 and proc.poll() is None:
            assert time.monotonic() < deadline, "the batch run wrote no parts"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)  # no chance to clean up: like a lost machine
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    parts_before = len(list(out.glob("part-*.parquet")))
    assert 3 <= parts_before < 12, "the run was not stopped midway"
    assert json.loads((out / "_manifest.json").read_text())["status"] == "running"

    res = _cli(*args)
    assert res.returncode == 0, res.stderr
    assert f"{parts_before} kept" in res.stdout
    out_frame = pd.read_parquet(out)
    np.testing.assert_array_equal(out_frame["row"], np.arange(240))  # nothing lost or duplicated
    assert json.loads((out / "_manifest.json").read_text())["status"] == "complete"
    ref = explain(data["slow"], data["X"], method="exact", background=load_background(out))
    np.testing.assert_array_equal(out_frame[[f"shap_{f}" for f in FEATURES]].to_numpy(), ref.values)
    np.testing.assert_array_equal(out_frame["prediction"], ref.predictions)
    assert not [p for p in os.listdir(out) if p.endswith(".tmp")]


def test_cli_errors_are_clear_and_exit_2(data, tmp_path):
    d = data["dir"]
    bad = tmp_path / "bad.csv"
    data["X"].drop(columns="c").to_csv(bad, index=False)
    res = _cli("batch", "--model", d / "clf.skops", "--data", bad, "--out", tmp_path / "o")
    assert res.returncode == 2
    assert "error: The data lacks 1 column(s) the model needs: c." in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "o").exists()
    res = _cli("batch", "--model", d / "slow.joblib", "--data", d / "data.parquet", "--out", tmp_path / "o")
    assert res.returncode == 2 and "--trust-pickles" in res.stderr
    res = _cli("batch", "--model", d / "clf.skops", "--data", d / "data.parquet", "--out", tmp_path / "o",
               "--chunk-rows", "0")
    assert res.returncode == 2 and "expected a number >= 1" in res.stderr
