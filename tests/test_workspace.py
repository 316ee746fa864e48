"""Tests of dashboard.workspace: shared workspaces kept on disk behind a link token."""
import base64
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dashboard import workspace
from dashboard.workspace import (
    NOT_FOUND,
    PARAM,
    Created,
    WorkspaceError,
    WorkspaceStore,
    default_root,
    not_found_message,
    sharing_enabled,
    store_from_env,
)
from explainers import ExplainerError

REPO = Path(__file__).resolve().parents[1]
DAY = 86_400.0
MODEL, DATA = b"\x00model-bytes\xff" * 3, b"a,b,y\n1,2,3\n4,5,6\n"


def _key(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _paths(root: Path, token: str) -> list[Path]:
    return [root / "files" / f"{_key(token)}.{s}" for s in ("model", "data")]


@pytest.fixture
def clock(monkeypatch):
    """A settable clock in place of time.time() inside the module."""
    now = [1_700_000_000.0]
    monkeypatch.setattr(workspace, "_now", lambda: now[0])
    return now


@pytest.fixture
def root(tmp_path):
    return tmp_path / "ws"


@pytest.fixture
def store(root):
    return WorkspaceStore(root, max_bytes=10_000, retention_s=10 * DAY)


# -- round trip and tokens -------------------------------------------------------------

def test_round_trip_returns_the_upload(store):
    new = store.create(MODEL, "model.skops", bytearray(DATA), "data.csv", target="y",
                       extra={"output": "proba", "rows": [1, 2]})
    ws = store.open(new.token)
    assert ws.model_bytes == MODEL and ws.data_bytes == DATA
    assert (ws.model_name, ws.data_name, ws.target) == ("model.skops", "data.csv", "y")
    assert ws.model_sha == hashlib.sha256(MODEL).hexdigest()
    assert ws.data_sha == hashlib.sha256(DATA).hexdigest()
    assert ws.extra == {"output": "proba", "rows": [1, 2]}
    assert ws.created <= ws.opened
    assert store.total_bytes() == len(MODEL) + len(DATA)
    # the repr must not dump megabytes of file content into a log
    assert "model-bytes" not in repr(ws)


def test_target_none_and_memoryview_round_trip(store):
    new = store.create(memoryview(MODEL), "m.json", DATA, "d.parquet")
    ws = store.open(new.token)
    assert ws.target is None and ws.extra == {} and ws.model_bytes == MODEL


def test_tokens_are_long_random_and_distinct(store):
    a = store.create(MODEL, "m", DATA, "d")
    b = store.create(MODEL, "m", DATA, "d")
    for token in (a.token, a.owner, b.token, b.owner):
        assert len(token) == 32
        assert len(base64.urlsafe_b64decode(token)) * 8 >= 128
    assert len({a.token, a.owner, b.token, b.owner}) == 4
    assert a.owner not in repr(a)


def test_tokens_are_never_stored_on_disk(store, root):
    new = store.create(MODEL, "m", DATA, "d")
    blob = b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())
    assert _key(new.token).encode() in blob  # the hash is there ...
    assert new.token.encode() not in blob and new.owner.encode() not in blob  # ... not the secrets


def test_no_method_can_list_workspaces():
    public = {n for n in vars(WorkspaceStore) if not n.startswith("_")}
    assert public == {"create", "open", "exists", "is_owner", "delete", "purge_expired", "total_bytes"}


def test_uploaded_names_never_become_paths(store, root):
    new = store.create(MODEL, "../../evil.skops", DATA, "/etc/passwd")
    assert sorted(root.joinpath("files").iterdir()) == sorted(_paths(root, new.token))
    assert store.open(new.token).model_name == "../../evil.skops"


def test_layout_modes_and_wal(store, root):
    assert {p.name for p in root.iterdir()} >= {"workspaces.sqlite3", "files", "tmp"}
    if os.name == "posix":
        for d in (root, root / "files", root / "tmp"):
            assert d.stat().st_mode & 0o777 == 0o700
    with sqlite3.connect(root / "workspaces.sqlite3") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# -- tokens that open nothing ----------------------------------------------------------

@pytest.mark.parametrize("bad", [
    "", "abc", "A" * 31, "A" * 33, "A" * 31 + "=", "A" * 31 + "/", "A" * 31 + "+",
    "A" * 32 + "\n", "A" * 31 + "é", "A" * 16 + " " + "A" * 15, None, 123, b"A" * 32, ["A" * 32],
])
def test_malformed_tokens_open_nothing_without_touching_the_db(store, monkeypatch, bad):
    def no_db():
        raise AssertionError("the database was touched for a malformed token")

    monkeypatch.setattr(store, "_connect", no_db)
    monkeypatch.setattr(store, "_transaction", no_db)
    assert store.open(bad) is None
    assert store.exists(bad) is False
    assert store.delete(bad, bad) is False


def test_one_changed_character_opens_nothing(store):
    new = store.create(MODEL, "m", DATA, "d")
    for i in (0, 15, 31):
        changed = new.token[:i] + ("A" if new.token[i] != "A" else "B") + new.token[i + 1:]
        assert store.open(changed) is None and not store.exists(changed)
    assert store.open(new.token) is not None


def test_unknown_token_opens_nothing(store):
    store.create(MODEL, "m", DATA, "d")
    unknown = workspace.secrets.token_urlsafe(24)
    assert store.open(unknown) is None and store.exists(unknown) is False


def test_expired_workspace_opens_nothing_and_is_deleted(root, clock):
    store = WorkspaceStore(root, max_bytes=10_000, retention_s=60)
    new = store.create(MODEL, "m", DATA, "d")
    clock[0] += 59
    assert store.exists(new.token)
    clock[0] += 60 + 1  # 61 s after the open that exists() did not count
    assert not store.exists(new.token)
    assert store.open(new.token) is None
    assert not any(p.exists() for p in _paths(root, new.token))
    assert store.total_bytes() == 0


def test_expired_by_opened_time_in_the_database(store, root):
    new = store.create(MODEL, "m", DATA, "d")
    with sqlite3.connect(root / "workspaces.sqlite3") as conn:
        conn.execute("UPDATE workspaces SET opened = opened - ?", (11 * DAY,))
    assert store.open(new.token) is None


def test_retention_counts_from_the_last_opening(root, clock):
    store = WorkspaceStore(root, max_bytes=10_000, retention_s=10)
    new = store.create(MODEL, "m", DATA, "d")
    for _ in range(3):
        clock[0] += 8  # 24 s after the upload in all, never 10 s without an opening
        assert store.open(new.token) is not None
    clock[0] += 11
    assert store.open(new.token) is None


def test_purge_expired_counts_and_frees(root, clock):
    store = WorkspaceStore(root, max_bytes=10_000, retention_s=10)
    old = store.create(MODEL, "m", DATA, "d")
    clock[0] += 6
    fresh = store.create(MODEL, "m", DATA, "d")
    clock[0] += 6
    assert store.purge_expired() == 1
    assert store.purge_expired() == 0
    assert store.total_bytes() == len(MODEL) + len(DATA)
    assert not any(p.exists() for p in _paths(root, old.token))
    assert store.open(fresh.token) is not None


@pytest.mark.parametrize("which", [0, 1])
def test_corrupt_file_fails_integrity_and_is_deleted(store, root, which):
    new = store.create(MODEL, "m", DATA, "d")
    path = _paths(root, new.token)[which]
    raw = bytearray(path.read_bytes())
    raw[3] ^= 0xFF  # same size, so only the sha256 check can notice
    path.write_bytes(bytes(raw))
    assert store.exists(new.token)  # exists() reads no file
    assert store.open(new.token) is None
    assert not store.exists(new.token)
    assert not any(p.exists() for p in _paths(root, new.token))


# -- delete ----------------------------------------------------------------------------

def test_delete_needs_the_owner_secret(store, root):
    a = store.create(MODEL, "m", DATA, "d")
    b = store.create(MODEL, "m", DATA, "d")
    assert store.delete(a.token, b.owner) is False
    assert store.delete(b.token, a.owner) is False
    assert store.delete(a.owner, a.token) is False
    assert store.delete(a.token, a.token) is False
    assert store.open(a.token) is not None
    assert all(p.exists() for p in _paths(root, a.token))
    assert store.delete(a.token, a.owner) is True
    assert not any(p.exists() for p in _paths(root, a.token))
    assert store.open(a.token) is None
    assert store.delete(a.token, a.owner) is False
    assert store.open(b.token) is not None


def test_is_owner_knows_only_the_owner_secret(store):
    a = store.create(MODEL, "m", DATA, "d")
    b = store.create(MODEL, "m", DATA, "d")
    assert store.is_owner(a.token, a.owner) is True
    assert store.is_owner(a.token, b.owner) is False
    assert store.is_owner(a.owner, a.token) is False
    assert store.is_owner(a.token, "x" * 32) is False
    assert store.is_owner(a.token, None) is False
    assert store.delete(a.token, a.owner) is True
    assert store.is_owner(a.token, a.owner) is False  # gone: no owner any more


# -- size limits -----------------------------------------------------------------------

def test_eviction_removes_the_least_recently_opened(root, clock):
    store = WorkspaceStore(root, max_bytes=100, retention_s=DAY)
    a = store.create(b"a" * 20, "m", b"a" * 20, "d")
    clock[0] += 1
    b = store.create(b"b" * 20, "m", b"b" * 20, "d")
    clock[0] += 1
    assert store.open(a.token) is not None  # a is now more recent than b
    clock[0] += 1
    c = store.create(b"c" * 20, "m", b"c" * 20, "d")  # 120 > 100: one must go
    assert store.open(b.token) is None
    assert not any(p.exists() for p in _paths(root, b.token))
    assert store.open(a.token).model_bytes == b"a" * 20
    assert store.open(c.token).model_bytes == b"c" * 20
    assert store.total_bytes() == 80


def test_an_upload_of_exactly_max_bytes_evicts_everything_else(root):
    store = WorkspaceStore(root, max_bytes=100, retention_s=DAY)
    a = store.create(b"a", "m", b"a", "d")
    big = store.create(b"x" * 50, "m", b"y" * 50, "d")
    assert store.open(a.token) is None and store.open(big.token) is not None
    assert store.total_bytes() == 100


def test_too_big_upload_is_refused_naming_the_variable(root):
    store = WorkspaceStore(root, max_bytes=100, retention_s=DAY)
    kept = store.create(b"k" * 10, "m", b"k", "d")
    with pytest.raises(WorkspaceError, match="GLASSBOX_WORKSPACE_MAX_BYTES") as info:
        store.create(b"x" * 60, "m", b"y" * 41, "d")
    assert "101 bytes" in str(info.value) and "100 bytes" in str(info.value)
    assert list((root / "tmp").iterdir()) == []
    assert len(list((root / "files").iterdir())) == 2
    assert store.open(kept.token) is not None  # nothing was evicted for a refused upload


@pytest.mark.parametrize("args, err_msg", [
    (("text", "m", DATA, "d"), "'model_bytes' parameter of WorkspaceStore.create must be bytes"),
    ((MODEL, "m", None, "d"), "'data_bytes' parameter .* must be bytes"),
    ((MODEL, "", DATA, "d"), "'model_name' parameter .* non-empty str"),
    ((MODEL, "m", DATA, 5), "'data_name' parameter .* non-empty str"),
    ((MODEL, "m", DATA, "d", 3), "'target' parameter .* non-empty str"),
    ((MODEL, "m", DATA, "d", None, ["x"]), "'extra' parameter .* dict or None"),
    ((MODEL, "m", DATA, "d", None, {"x": object()}), "'extra' parameter .* only JSON values"),
    ((MODEL, "m", DATA, "d", None, {"x": float("nan")}), "'extra' parameter .* only JSON values"),
])
def test_create_rejects_bad_arguments(store, root, args, err_msg):
    with pytest.raises(WorkspaceError, match=err_msg):
        store.create(*args)
    assert list((root / "files").iterdir()) == []


@pytest.mark.parametrize("kwargs, err_msg", [
    ({"max_bytes": 0, "retention_s": 1}, "'max_bytes' parameter of WorkspaceStore must be an int > 0"),
    ({"max_bytes": 1.5, "retention_s": 1}, "'max_bytes' .* Got 1.5"),
    ({"max_bytes": True, "retention_s": 1}, "'max_bytes'"),
    ({"max_bytes": 10, "retention_s": 0}, "'retention_s' parameter .* finite number > 0"),
    ({"max_bytes": 10, "retention_s": float("inf")}, "'retention_s'"),
    ({"max_bytes": 10, "retention_s": "30"}, "'retention_s'"),
])
def test_store_rejects_bad_parameters(root, kwargs, err_msg):
    with pytest.raises(WorkspaceError, match=err_msg):
        WorkspaceStore(root, **kwargs)


def test_workspace_error_is_an_explainer_error():
    assert issubclass(WorkspaceError, ExplainerError) and issubclass(WorkspaceError, ValueError)


# -- settings from the environment -----------------------------------------------------

@pytest.mark.parametrize("value", ["0", "off", "False", " no "])
def test_sharing_off_gives_no_store(tmp_path, value):
    env = {"GLASSBOX_SHARING": value, "GLASSBOX_WORKSPACE_DIR": str(tmp_path / "ws")}
    assert store_from_env(env) is None
    assert sharing_enabled(env) is False
    assert not (tmp_path / "ws").exists()  # turning sharing off writes nothing


@pytest.mark.parametrize("value", [None, "", "1", "on", "TRUE", "yes"])
def test_sharing_on_gives_a_store_with_defaults(tmp_path, value):
    env = {"GLASSBOX_WORKSPACE_DIR": str(tmp_path / "ws")}
    if value is not None:
        env["GLASSBOX_SHARING"] = value
    store = store_from_env(env)
    assert sharing_enabled(env) is True
    assert store.root == (tmp_path / "ws").resolve()
    assert store.max_bytes == 2_000_000_000
    assert store.retention_s == 30 * DAY


def test_env_sizes_and_days_are_read(tmp_path):
    env = {"GLASSBOX_WORKSPACE_DIR": str(tmp_path / "ws"),
           "GLASSBOX_WORKSPACE_MAX_BYTES": "3GB", "GLASSBOX_WORKSPACE_DAYS": "0.5"}
    store = store_from_env(env)
    assert store.max_bytes == 3 << 30 and store.retention_s == DAY / 2
    env["GLASSBOX_WORKSPACE_MAX_BYTES"] = "1_000_000"
    assert store_from_env(env).max_bytes == 1_000_000


@pytest.mark.parametrize("var, value, accepts", [
    ("GLASSBOX_WORKSPACE_MAX_BYTES", "lots", "whole number of bytes"),
    ("GLASSBOX_WORKSPACE_MAX_BYTES", "-5", "whole number of bytes"),
    ("GLASSBOX_WORKSPACE_MAX_BYTES", "0", "> 0"),
    ("GLASSBOX_WORKSPACE_MAX_BYTES", "2 parsecs", "KB, MB, GB or TB"),
    ("GLASSBOX_WORKSPACE_DAYS", "soon", "number of days > 0"),
    ("GLASSBOX_WORKSPACE_DAYS", "0", "number of days > 0"),
    ("GLASSBOX_WORKSPACE_DAYS", "-1", "number of days > 0"),
    ("GLASSBOX_WORKSPACE_DAYS", "nan", "number of days > 0"),
    ("GLASSBOX_SHARING", "maybe", "0, off, false or no"),
])
def test_bad_env_values_name_the_variable(tmp_path, var, value, accepts):
    env = {"GLASSBOX_WORKSPACE_DIR": str(tmp_path / "ws"), var: value}
    with pytest.raises(WorkspaceError, match=f"{var}='{value}'") as info:
        store_from_env(env)
    assert accepts in str(info.value)


def test_default_root_order(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_root({}) == tmp_path / "home" / ".local/share/glassbox/workspaces"
    # a relative XDG_DATA_HOME is invalid by the XDG specification and ignored
    assert default_root({"XDG_DATA_HOME": "rel"}) == tmp_path / "home/.local/share/glassbox/workspaces"
    assert default_root({"XDG_DATA_HOME": str(tmp_path / "x")}) == tmp_path / "x/glassbox/workspaces"
    env = {"XDG_DATA_HOME": str(tmp_path / "x"), "GLASSBOX_DATA_DIR": str(tmp_path / "d")}
    assert default_root(env) == tmp_path / "d" / "workspaces"
    store = store_from_env(env)
    assert store.root == (tmp_path / "d" / "workspaces").resolve() and store.root.is_dir()


def test_not_found_message_fills_the_retention(root):
    assert PARAM == "ws"
    assert "{kept}" in NOT_FOUND
    msg = not_found_message(WorkspaceStore(root, max_bytes=10, retention_s=30 * DAY))
    assert "workspaces are kept 30 days after they were last opened" in msg
    assert msg.startswith("This link does not open a shared workspace")
    assert msg.endswith("or load the model on the Model page.")
    assert "kept 1 day after" in not_found_message(WorkspaceStore(root, max_bytes=10, retention_s=DAY))
    assert "kept 12 hours after" in not_found_message(
        WorkspaceStore(root, max_bytes=10, retention_s=DAY / 2))


# -- crash safety ----------------------------------------------------------------------

def test_sweep_removes_leftovers_and_broken_rows(store, root):
    good = store.create(MODEL, "m", DATA, "d")
    truncated = store.create(MODEL, "m", DATA, "d")
    missing = store.create(MODEL, "m", DATA, "d")
    _paths(root, truncated.token)[1].write_bytes(DATA[:-1])
    _paths(root, missing.token)[0].unlink()
    (root / "tmp" / "abc.part").write_bytes(b"half")
    orphan = root / "files" / f"{'0' * 64}.model"
    orphan.write_bytes(b"no row")
    (root / "files" / "junk.txt").write_bytes(b"?")
    fresh = WorkspaceStore(root, max_bytes=10_000, retention_s=DAY)
    assert list((root / "tmp").iterdir()) == []
    assert sorted((root / "files").iterdir()) == sorted(_paths(root, good.token))
    assert fresh.open(good.token) is not None
    assert not fresh.exists(truncated.token) and not fresh.exists(missing.token)
    assert fresh.total_bytes() == len(MODEL) + len(DATA)


# The child makes one workspace, then starts a second and stalls at `point`, touching
# the marker file so that the parent knows where to kill it.
CHILD = r"""
import os, sys, time
from pathlib import Path
from dashboard import workspace as w

root, marker, point = sys.argv[1:4]
store = w.WorkspaceStore(root, max_bytes=10**6, retention_s=3600)
print(store.create(b"m" * 10, "m.json", b"d" * 20, "d.csv", target="y").token, flush=True)

def stall(*args, **kwargs):
    Path(marker).touch()
    time.sleep(120)

real_replace, calls = os.replace, []
def replace(src, dst):
    calls.append(dst)
    if len(calls) == 2:
        stall()
    real_replace(src, dst)

if point == "write":       # first tmp file written and flushed, not yet fsynced
    os.fsync = stall
elif point == "replace":   # first file renamed into files/, second still in tmp/
    os.replace = replace
elif point == "insert":    # both files in files/, no row yet
    w.WorkspaceStore._insert = stall
store.create(b"M" * 300, "big.json", b"D" * 400, "big.csv")
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
@pytest.mark.parametrize("point, n_tmp, n_files", [
    ("write", 1, 2), ("replace", 1, 3), ("insert", 0, 4),
])
def test_killed_create_leaves_no_half_workspace(tmp_path, point, n_tmp, n_files):
    root, marker = tmp_path / "ws", tmp_path / "stalled"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(root), str(marker), point],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        token = proc.stdout.readline().strip()
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the child never reached the stall point"
            time.sleep(0.02)
        # the kill must strike mid-create: the new workspace is partly on disk
        assert len(list((root / "tmp").iterdir())) == n_tmp
        assert len(list((root / "files").iterdir())) == n_files
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    store = WorkspaceStore(root, max_bytes=10**6, retention_s=3600)
    assert list((root / "tmp").iterdir()) == []
    assert sorted((root / "files").iterdir()) == sorted(_paths(root, token))
    ws = store.open(token)
    assert (ws.model_bytes, ws.data_bytes, ws.target) == (b"m" * 10, b"d" * 20, "y")
    assert store.total_bytes() == 30


# -- threads ---------------------------------------------------------------------------

def test_threads_creating_at_once_all_succeed(store):
    n = 8
    barrier, results, errors = threading.Barrier(n), [None] * n, []

    def work(i):
        try:
            barrier.wait(10)
            results[i] = store.create(bytes([i]) * 100, f"m{i}", bytes([i]) * 50, f"d{i}")
            assert store.open(results[i].token).model_name == f"m{i}"
        except Exception as exc:  # noqa: BLE001 - reported below, with its thread
            errors.append((i, exc))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert all(isinstance(r, Created) for r in results)
    assert len({r.token for r in results}) == n
    assert store.total_bytes() == n * 150
    for i, r in enumerate(results):
        assert store.open(r.token).data_bytes == bytes([i]) * 50


def test_store_opened_during_a_create_keeps_its_files(store, root, monkeypatch):
    entered, release, result = threading.Event(), threading.Event(), {}
    real_insert = WorkspaceStore._insert

    def slow_insert(self, row):
        entered.set()
        assert release.wait(10)
        return real_insert(self, row)

    monkeypatch.setattr(WorkspaceStore, "_insert", slow_insert)
    t = threading.Thread(target=lambda: result.update(new=store.create(MODEL, "m", DATA, "d")))
    t.start()
    assert entered.wait(10)
    # another session's store sweeps while the files of the first create have no row yet
    WorkspaceStore(root, max_bytes=10_000, retention_s=DAY)
    assert len(list((root / "files").iterdir())) == 2
    release.set()
    t.join(10)
    assert store.open(result["new"].token).model_bytes == MODEL
