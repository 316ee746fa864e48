"""``show(model, X, y)`` from Python: a server in a subprocess, its private folder, its cleanup.

The show() calls run in a separate Python process (tests/show_driver.py), as in a notebook.
"""
import html
import json
import os
import signal
import socket
import stat
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from dashboard import ShowError, show
from tests.show_driver import ShowSession

NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _get(url: str) -> tuple[int, str]:
    with NO_PROXY.open(url, timeout=10) as r:
        return r.status, r.read().decode(errors="replace")


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (not yet reaped by its parent) is gone too
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def _gone(info: dict, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(info["pid"]) and not Path(info["folder"]).exists() and not _listening(info["port"]):
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def session():
    s = ShowSession()
    yield s
    s.close()


def test_show_serves_adds_and_stops(session):
    first = session.send("show Forest_from_Python forest")
    url = urllib.parse.urlsplit(first["url"])
    assert url.hostname == "127.0.0.1" and url.path == "/"
    query = urllib.parse.parse_qs(url.query)
    assert query.keys() == {"model", "token"} and query["model"] == [first["key"]]
    assert len(query["token"][0]) >= 40  # an unguessable token the server requires (issue #28)
    assert _get(f"http://127.0.0.1:{first['port']}/_stcore/health") == (200, "ok")
    assert _get(first["url"])[0] == 200
    assert first["url"] in first["repr"] and "<iframe" in first["html"] and html.escape(first["url"]) in first["html"]

    # a private folder: the model as .skops, the data as Parquet, a manifest; nothing pickled
    folder = Path(first["folder"])
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert sorted(p.name for p in folder.iterdir() if p.name != "server.log") == [
        "data-1.parquet", "manifest.json", "model-1.skops"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert [(m["key"], m["name"], m["target"]) for m in manifest] == [(first["key"], "Forest from Python", "wear")]
    assert list(pd.read_parquet(folder / "data-1.parquet").columns) == ["speed", "load", "temp", "wear"]

    # a second show() reuses the server and adds its model, which its URL opens
    second = session.send("show Linear_from_Python linear")
    assert (second["port"], second["pid"], second["folder"]) == (first["port"], first["pid"], first["folder"])
    assert second["key"] != first["key"] and f"model={second['key']}" in second["url"]
    assert first["server_starts"] == second["server_starts"] == 1  # no second start, no second health wait
    manifest = json.loads((folder / "manifest.json").read_text())
    assert [m["name"] for m in manifest] == ["Forest from Python", "Linear from Python"]

    # stop(): the server ends, the port is free, the folder is gone
    out = session.send("stop")
    assert out["stopped"] and "stopped" in out["repr"]
    assert _gone(first), "the server or its folder outlived stop()"
    with socket.socket() as s:  # the port can be bound again (as a server binds it)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", first["port"]))


def test_show_serves_an_xgboost_object_from_its_own_file(session):
    """An XGBRegressor from the notebook: saved as XGBoost's own JSON (never pickled, not skops,
    which cannot hold it), served, and its page answers."""
    info = session.send("show Booster_from_Python xgboost")
    folder = Path(info["folder"])
    assert sorted(p.name for p in folder.iterdir() if p.name != "server.log") == [
        "data-1.parquet", "manifest.json", "model-1.json"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest[0]["parts"] == {"settings": {}} and manifest[0]["model"].endswith("model-1.json")
    assert json.loads((folder / "model-1.json").read_text())["learner"]["gradient_booster"]
    assert _get(info["url"])[0] == 200
    session.send("stop")
    assert _gone(info)


def test_interpreter_exit_ends_server_and_removes_folder(session):
    info = session.send("show m forest")
    session.send("exit")
    session.proc.wait(timeout=60)
    assert _gone(info), "atexit did not stop the server or remove the folder"


def test_killed_python_process_server_follows():
    """No atexit when the kernel is killed: the server notices its parent is gone."""
    s = ShowSession()
    try:
        info = s.send("show m linear")
        s.send("sleep")
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait(timeout=10)
        assert _gone(info, timeout=20), "the server outlived its killed parent"
    finally:
        s.close()


# ------------------------------------------------ refusals (no server starts)
@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(50, 2)), columns=["a", "b"])
    return X, X.a * 2 - X.b


def _no_folder_left(before: set) -> bool:
    import tempfile

    now = {p.name for p in Path(tempfile.gettempdir()).glob("glassbox-show-*")}
    return now <= before


def _folders() -> set:
    import tempfile

    return {p.name for p in Path(tempfile.gettempdir()).glob("glassbox-show-*")}


def test_model_skops_cannot_save_is_refused(small):
    X, y = small
    model = LinearRegression().fit(X, y)
    model.stream_ = (i for i in range(3))  # skops cannot save a generator (and show() never pickles)
    before = _folders()
    with pytest.raises(ShowError, match="skops cannot save this model.*never with pickle"):
        show(model, X, y)
    assert _no_folder_left(before)


def test_model_the_loader_refuses_is_refused(small):
    import threading

    X, y = small
    model = LinearRegression().fit(X, y)
    model.lock_ = threading.Lock()  # skops saves it, but the dashboard's loader refuses the type
    before = _folders()
    with pytest.raises(ShowError, match="dashboard would refuse this model.*_thread.lock"):
        show(model, X, y)
    assert _no_folder_left(before)


@pytest.mark.parametrize("bad, match", [
    (dict(y=np.zeros(3)), "y has 3 values but X has 50 rows"),
    (dict(X=np.zeros(5)), "X must be a table"),
    (dict(port=70000), "port must be a whole number from 1 to 65535, got 70000"),
    (dict(port="8501"), "port must be a whole number from 1 to 65535, got .8501."),
    (dict(X=pd.DataFrame({"a": [1.0], "z": [2.0]}), y=None), "dashboard would refuse this data.*b"),
])
def test_bad_arguments_are_refused(small, bad, match):
    X, y = small
    args = {"X": X, "y": y, **bad}
    before = _folders()
    with pytest.raises(ShowError, match=match):
        show(LinearRegression().fit(X, y), args.pop("X"), **args)
    assert _no_folder_left(before)


def test_show_refuses_an_unknown_target_transform():
    X = np.arange(20.0).reshape(10, 2)
    with pytest.raises(ShowError, match="target_transform"):
        show(LinearRegression().fit(X, X[:, 0]), X, target_transform="exp")
