"""Batch outputs on a shared server (issue #15): one run per folder, parts tagged with their run,
readers that refuse anything but one complete run, --overwrite that deletes only what a run wrote,
and workers that end with their run.

Each test builds its own small reproduction; the process tests start ``python -m explainers``.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import skops.io as sio
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import LinearRegression

from explainers.batch import (
    explain_file,
    importance_file,
    load_attributions,
    load_background,
    load_importance,
)
from explainers.batch.lock import LOCK, _lock_holder, _locked
from explainers.errors import ExplainerError, InvalidDataError
from tests._batch_models import SlowLinearRegressor

ROOT = Path(__file__).resolve().parents[1]
FEATURES = ["a", "b", "c"]
KW = dict(method="tree", chunk_rows=100, block_rows=100)  # 6 parts of 100 rows


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("integrity")
    rng = np.random.default_rng(7)
    X = pd.DataFrame(rng.normal(size=(600, 3)), columns=FEATURES)
    y = X.a - 2 * X.b + X.a * X.c
    sio.dump(RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y), d / "rf.skops")
    sio.dump(RandomForestRegressor(n_estimators=5, max_depth=3, random_state=1).fit(X, -y), d / "rf2.skops")
    sio.dump(LinearRegression().fit(X, y), d / "lin.skops")
    X.assign(y=y).to_parquet(d / "data.parquet")
    # a slow model over more rows, for runs that are still going when the test acts
    big = pd.DataFrame(rng.normal(size=(2000, 3)), columns=FEATURES)
    joblib.dump(SlowLinearRegressor(delay=0.03).fit(big, big.a - big.b), d / "slow.joblib")
    big.to_parquet(d / "big.parquet")
    return d


def _tags(out):
    return {p.name: pq.read_metadata(p).metadata[b"glassbox.run_id"].decode()
            for p in sorted(out.glob("part-*.parquet"))}


def _run_id(out):
    return json.loads((out / "_manifest.json").read_text())["run_id"]


def _slow_args(d, out, *extra):
    return ["batch", "--model", d / "slow.joblib", "--trust-pickles", "--data", d / "big.parquet", "--out", out,
            "--method", "exact", "--background", "10", "--chunk-rows", "20", "--block-rows", "10", *extra]


def _popen(args):
    return subprocess.Popen(
        [sys.executable, "-m", "explainers", *map(str, args)], cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _wait_for_parts(proc, out, n, timeout=60):
    deadline = time.monotonic() + timeout
    while len(list(out.glob("part-*.parquet"))) < n:
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the batch run wrote no parts"
        time.sleep(0.05)


def _kill_and_time_descendants(proc, timeout=30.0):
    """SIGKILL the run's process only (not its workers) and time how long its descendants outlive it."""
    import psutil

    kids = psutil.Process(proc.pid).children(recursive=True)
    assert kids, "the run started no worker processes"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    t0 = time.monotonic()
    alive = kids
    while alive and time.monotonic() - t0 < timeout:
        alive = [k for k in alive if k.is_running() and k.status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.05)
    took = time.monotonic() - t0
    for k in alive:  # do not leave them behind when the test fails
        k.kill()
    return kids, alive, took


# ------------------------------------------------ reproduction 7: one run per folder
def test_second_run_on_a_locked_folder_fails_at_once(files, tmp_path, monkeypatch):
    from explainers.batch import explain as explain_module

    out = tmp_path / "out"
    explain_file(files / "rf.skops", files / "data.parquet", out, **KW)
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    opened = []  # "at once": refused at the lock, before the model or the data is opened
    for name in ("_open_model", "_open_source"):
        real = getattr(explain_module, name)
        monkeypatch.setattr(explain_module, name,
                            lambda *a, _real=real, _name=name, **k: opened.append(_name) or _real(*a, **k))
    with _locked(out):  # another run holds the folder
        with pytest.raises(ExplainerError, match=rf"Another batch run is writing to '{out}' \(pid {os.getpid()}, "
                                                 r"started .*\); wait for it to finish or choose another --out"):
            explain_file(files / "rf2.skops", files / "data.parquet", out, overwrite=True, **KW)
        assert opened == []
        # and it wrote nothing: every file of the first run is as it was
        assert {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name != LOCK} == before
        # a reader is told that the folder is being written
        (out / "part-000001.parquet").unlink()
        with pytest.raises(InvalidDataError, match=f"is writing to '{out}' now: wait for it to finish"):
            load_attributions(out)
    assert not (out / LOCK).exists()  # released, and removed
    assert {p.name for p in out.iterdir()} == set(before) - {"part-000001.parquet"}


def test_concurrent_overwrite_refused_and_workers_exit_with_a_killed_run(files, tmp_path):
    """Reproductions 7 and 12: a second run with another model and --overwrite on a folder being
    written fails at once and touches nothing; SIGKILL on the first run ends its loky workers."""
    out = tmp_path / "out"
    proc = _popen(_slow_args(files, out, "--n-jobs", "2"))
    try:
        _wait_for_parts(proc, out, 2)
        run_id = _run_id(out)
        t0 = time.monotonic()
        second = subprocess.run(
            [sys.executable, "-m", "explainers", "batch", "--model", str(files / "lin.skops"), "--data",
             str(files / "big.parquet"), "--out", str(out), "--overwrite", "--chunk-rows", "20", "--block-rows", "10"],
            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
        print(f"second run refused after {time.monotonic() - t0:.1f} s (interpreter start included)")
        assert second.returncode == 2, second.stderr
        assert f"error: Another batch run is writing to '{out}' (pid {proc.pid}, started " in second.stderr
        assert "wait for it to finish or choose another --out" in second.stderr
        assert proc.poll() is None  # the first run goes on
        _wait_for_parts(proc, out, 4)
        kids, alive, took = _kill_and_time_descendants(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    print(f"{len(kids)} worker processes gone {took:.2f} s after the run was killed")
    assert not alive, f"{len(alive)} of {len(kids)} worker processes outlived the killed run by 30 s"
    # every part is the first run's, under its own manifest; the lock went with the run
    assert _run_id(out) == run_id and set(_tags(out).values()) == {run_id}
    assert _lock_holder(out) is None
    with pytest.raises(InvalidDataError, match=r"has not finished\. Rerun the same .* \(\d+ of 100 parts are done"):
        load_attributions(out)


def test_dask_local_cluster_workers_exit_with_a_killed_run(files, tmp_path):
    out = tmp_path / "out"
    proc = _popen(_slow_args(files, out, "--n-jobs", "2", "--backend", "dask"))
    try:
        _wait_for_parts(proc, out, 2)
        kids, alive, took = _kill_and_time_descendants(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    print(f"{len(kids)} Dask processes gone {took:.2f} s after the run was killed")
    assert not alive


def test_parts_of_another_run_missing_or_extra_are_refused_and_a_rerun_repairs(files, tmp_path):
    """The folder reproduction 7 left (parts of another run under the first run's manifest), a
    missing part and an extra file: the readers refuse each; rerunning the command repairs."""
    a, b = tmp_path / "a", tmp_path / "b"
    explain_file(files / "rf.skops", files / "data.parquet", a, **KW)
    explain_file(files / "rf2.skops", files / "data.parquet", b, **KW)
    good = pd.read_parquet(a)
    for name in ("part-000001.parquet", "part-000004.parquet"):
        shutil.copy(b / name, a / name)
    assert len(pd.read_parquet(a)) == 600  # pyarrow cannot tell
    with pytest.raises(InvalidDataError, match=r"does not hold one complete run: 'part-000001.parquet' comes from "
                                               rf"another run \(run id {_run_id(b)}, not {_run_id(a)}\); "
                                               r"'part-000004.parquet' comes from another run"):
        load_attributions(a)
    with pytest.raises(InvalidDataError, match="comes from another run"):
        load_background(a)
    # the same command recomputes exactly those parts
    rep = explain_file(files / "rf.skops", files / "data.parquet", a, **KW)
    assert (rep.chunks_computed, rep.chunks_skipped) == (2, 4)
    pd.testing.assert_frame_equal(pd.read_parquet(a), good, check_exact=True)
    assert load_attributions(a, sample=None).n_rows == 600
    # a missing part
    (a / "part-000002.parquet").unlink()
    with pytest.raises(InvalidDataError, match="'part-000002.parquet' is missing.*Rerun the same"):
        load_attributions(a)
    explain_file(files / "rf.skops", files / "data.parquet", a, **KW)
    # an extra part no run wrote
    good.iloc[:10].to_parquet(a / "part-000100.parquet")
    with pytest.raises(InvalidDataError, match=r"holds files its run did not write \('part-000100.parquet'\).*"
                                               "Move them out"):
        load_attributions(a)


def test_importance_part_of_another_run_refused(files, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    kw = dict(target="y", scoring="neg_mean_squared_error", n_repeats=2, chunk_rows=200)
    importance_file(files / "rf.skops", files / "data.parquet", a, **kw)
    importance_file(files / "lin.skops", files / "data.parquet", b, **kw)
    shutil.copy(b / "part-000002.json", a / "part-000002.json")
    with pytest.raises(InvalidDataError, match="'part-000002.json' comes from another run"):
        load_importance(a)


def test_half_finished_folder_refused_then_resumed_with_its_run_id(files, tmp_path):
    out = tmp_path / "out"

    def stop_after_two(p):
        if p.computed_rows >= 200:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        explain_file(files / "rf.skops", files / "data.parquet", out, progress=stop_after_two, **KW)
    run_id = _run_id(out)
    with pytest.raises(InvalidDataError, match=r"has not finished\. Rerun the same `python -m explainers batch` "
                                               r"command: it resumes where it stopped \(2 of 6 parts are done"):
        load_attributions(out)
    with pytest.raises(Exception, match="INCOMPLETE.txt"):
        pd.read_parquet(out)  # nor does a plain dataset reader take it for the whole result
    rep = explain_file(files / "rf.skops", files / "data.parquet", out, **KW)
    assert (rep.chunks_computed, rep.chunks_skipped) == (4, 2)
    assert _run_id(out) == run_id and set(_tags(out).values()) == {run_id}
    assert sorted(os.listdir(out)) == ["_manifest.json", *[f"part-{i:06d}.parquet" for i in range(6)]]
    assert load_attributions(out, sample=None).n_rows == 600 and len(pd.read_parquet(out)) == 600


# ------------------------------------------ reproduction 8: --overwrite deletes only ours
def test_overwrite_never_deletes_files_no_run_wrote(files, tmp_path):
    out = tmp_path / "out"
    explain_file(files / "rf.skops", files / "data.parquet", out, **KW)
    (out / "importance.csv").write_text("feature,importance\na,1\n")  # the user's, not a run's
    pd.DataFrame({"x": [1.0]}).to_parquet(out / "part-000100.parquet")
    before = sorted(os.listdir(out))
    with pytest.raises(ExplainerError, match=r"holds files that its batch run did not write \('importance.csv', "
                                             r"'part-000100.parquet'\).*nothing was deleted"):
        explain_file(files / "rf2.skops", files / "data.parquet", out, overwrite=True, **KW)
    assert sorted(os.listdir(out)) == before
    # without a manifest, nothing in the folder is a run's
    (out / "_manifest.json").unlink()
    with pytest.raises(ExplainerError, match=r"holds files that no batch run wrote \('importance.csv', "
                                             r"'part-000000.parquet', .* and \d+ more\)"):
        explain_file(files / "rf2.skops", files / "data.parquet", out, overwrite=True, **KW)
    assert sorted(os.listdir(out)) == sorted(set(before) - {"_manifest.json"})


def test_overwrite_deletes_what_the_previous_run_wrote(files, tmp_path):
    out = tmp_path / "out"
    importance_file(files / "rf.skops", files / "data.parquet", out, target="y", n_repeats=2, chunk_rows=200)
    assert sorted(os.listdir(out)) == ["_manifest.json", "importance.csv", *[f"part-{i:06d}.json" for i in range(3)]]
    explain_file(files / "lin.skops", files / "data.parquet", out, overwrite=True, background=20, **{
        **KW, "method": "linear"})
    assert sorted(os.listdir(out)) == ["_background.parquet", "_manifest.json",
                                       *[f"part-{i:06d}.parquet" for i in range(6)]]
    assert load_background(out).shape == (20, 3)
    # the same model, the same options: --overwrite starts over under a new run id
    old = _run_id(out)
    rep = explain_file(files / "lin.skops", files / "data.parquet", out, overwrite=True, background=20, **{
        **KW, "method": "linear"})
    assert rep.chunks_computed == 6 and _run_id(out) != old and set(_tags(out).values()) == {_run_id(out)}


def test_folder_of_an_earlier_version_still_reads_and_resumes(files, tmp_path):
    """Version-1 manifests (written before run locks) list no parts and have no expected counts."""
    out = tmp_path / "out"
    explain_file(files / "rf.skops", files / "data.parquet", out, **KW)
    man = json.loads((out / "_manifest.json").read_text())
    for key in ("parts", "expected_rows", "expected_rows_exact", "expected_chunks"):
        del man[key]
    (out / "_manifest.json").write_text(json.dumps(man))
    assert load_attributions(out, sample=None).n_rows == 600
    shutil.copy(out / "part-000000.parquet", out / "part-000003.parquet")  # chunk 0's rows in chunk 3's place
    with pytest.raises(InvalidDataError, match=r"'part-000003.parquet' holds chunk 0 \(100 rows from row 0\), "
                                               r"not chunk 3 \(100 rows from row 300\)"):
        load_attributions(out)
    man["status"] = "running"
    (out / "_manifest.json").write_text(json.dumps(man))
    with pytest.raises(InvalidDataError, match=r"resumes where it stopped \(5 parts are done"):
        load_attributions(out)
    rep = explain_file(files / "rf.skops", files / "data.parquet", out, **KW)
    assert (rep.chunks_computed, rep.chunks_skipped) == (1, 5) and _run_id(out) == man["run_id"]
    assert load_attributions(out, sample=None).n_rows == 600


@pytest.mark.parametrize("which", ["explain", "importance"])
def test_a_missing_model_is_refused_before_any_worker_starts(tmp_path, monkeypatch, which):
    """The workers were warmed up before the model path was read: a run refused on its path left
    starting loky workers, whose manager thread printed a traceback before "error:" at exit."""
    from explainers import InvalidModelError
    from explainers.batch import explain as explain_mod
    from explainers.batch import importance_run as importance_mod

    mod = explain_mod if which == "explain" else importance_mod

    def no_workers(*a, **k):
        raise AssertionError("workers started for a run whose model file does not exist")

    monkeypatch.setattr(mod, "_warmed", no_workers)
    data = tmp_path / "d.csv"
    data.write_text("a,b,y\n1,2,3\n")
    with pytest.raises(InvalidModelError, match="does not exist"):
        if which == "explain":
            explain_mod.explain_file(str(tmp_path / "none.skops"), str(data), str(tmp_path / "out"))
        else:
            importance_mod.importance_file(str(tmp_path / "none.skops"), str(data), str(tmp_path / "out"),
                                           target="y")
