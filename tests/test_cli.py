"""The ``glassbox`` command line: help, packaging, and bad input as one line without a traceback."""
import os
import pickle
import re
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import RandomForestRegressor

import dashboard

ROOT = Path(__file__).resolve().parents[1]


def glassbox(*args, env=None, cwd=ROOT, timeout=120):
    """Run ``python -m dashboard.cli ARGS`` (what the ``glassbox`` script runs)."""
    full_env = {k: v for k, v in os.environ.items() if k != "GLASSBOX_TRUST_PICKLES"}
    full_env["PYTHONPATH"] = str(ROOT)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "dashboard.cli", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd, timeout=timeout)


# ----------------------------------------------------------------- help
def test_help_names_every_command():
    r = glassbox("--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: glassbox")
    for cmd in ("serve", "batch", "batch-importance"):
        assert re.search(rf"^\s+{cmd}\s+\S", r.stdout, re.M), cmd
    assert "show(model, X, y)" in r.stdout
    assert glassbox().stdout == r.stdout  # no command: the same help


def test_subcommand_help_and_version():
    r = glassbox("serve", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: glassbox serve")
    for opt in ("--model", "--data", "--target", "--name", "--port", "--host", "--trust-pickles"):
        assert opt in r.stdout
    assert "--manifest" not in r.stdout and "--parent-pid" not in r.stdout  # show()'s own
    for cmd in ("batch", "batch-importance"):
        r = glassbox(cmd, "--help")
        assert r.returncode == 0 and r.stdout.startswith(f"usage: glassbox {cmd}"), r.stdout[:200]
    r = glassbox("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"glassbox {dashboard.__version__}"


def test_batch_is_the_explainers_batch_command(tmp_path, files):
    r = glassbox("batch", "--model", str(files / "m.skops"), "--data", str(files / "d.csv"), "--out",
                 str(tmp_path / "out"), "--n-jobs", "1", "--quiet", "--chunk-rows", "1000")
    assert r.returncode == 0, r.stderr
    assert "Wrote SHAP values of 120 rows" in r.stdout
    r = glassbox("batch", "--model", str(tmp_path / "none.skops"), "--data", str(files / "d.csv"),
                 "--out", str(tmp_path / "out2"), "--quiet")
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr


# ------------------------------------------------------------- packaging
def _requirements(name: str) -> set[str]:
    from packaging.requirements import Requirement

    out = set()
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-r"):
            out.add(str(Requirement(line)))
    return out


def test_pyproject_declares_the_script_the_version_and_requirements(monkeypatch):
    """pyproject.toml as setuptools reads it (what ``pip install .`` builds from)."""
    import warnings

    from packaging.requirements import Requirement
    from setuptools.dist import Distribution

    monkeypatch.chdir(ROOT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "[tool.setuptools] is beta" on older setuptools
        dist = Distribution()
        dist.parse_config_files()
    assert dist.get_name() == "glassbox"
    assert dist.get_version() == dashboard.__version__  # the one place of the version
    assert dist.entry_points == {"console_scripts": ["glassbox = dashboard.cli:main"]}
    # setuptools files a requirement with an environment marker under the extra ":<marker>"
    marked = {str(Requirement(f"{r}; {key[1:]}")) for key, reqs in dist.extras_require.items()
              if key.startswith(":") for r in reqs}
    assert {str(Requirement(r)) for r in dist.install_requires} | marked == _requirements("requirements.txt")
    assert {str(Requirement(r)) for r in dist.extras_require["test"]} == _requirements("requirements-dev.txt")
    assert {"explainers", "dashboard", "dashboard.views", "demo_models"} <= set(dist.packages)


def test_built_package_runs_the_console_script(tmp_path):
    """Build the installable tree offline (setuptools build_py: the files pip would install) and
    run its ``glassbox`` entry point from another folder, with the checkout off the path."""
    lib = tmp_path / "lib"
    lib.mkdir()
    build = (
        "import sys\n"
        "from setuptools.dist import Distribution\n"
        "d = Distribution(); d.script_name = 'setup.py'; d.parse_config_files()\n"
        f"d.get_command_obj('egg_info').egg_base = {str(lib)!r}\n"
        f"d.get_command_obj('build_py').build_lib = {str(lib)!r}\n"
        "d.run_command('egg_info'); d.run_command('build_py')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", build], cwd=ROOT, capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (lib / "dashboard" / ".streamlit" / "config.toml").is_file()
    assert {p.name for p in (lib / "dashboard" / "views").glob("*.py")} >= {"model.py", "pdp.py", "shap.py"}
    for pkg in ("explainers/io", "explainers/shap", "dashboard/state", "dashboard/figures", "demo_models"):
        assert (lib / pkg / "__init__.py").is_file(), pkg
    assert not list(lib.glob("tests*")) and not (lib / "demo_models" / "built").exists()
    run = (
        "import sys\n"
        "from importlib.metadata import entry_points, version\n"
        "(ep,) = entry_points(group='console_scripts', name='glassbox')\n"
        "import dashboard, explainers\n"
        f"assert dashboard.__file__.startswith({str(lib)!r}), dashboard.__file__\n"
        f"assert explainers.__file__.startswith({str(lib)!r}), explainers.__file__\n"
        "print('version', version('glassbox'))\n"
        "sys.argv = ['glassbox', '--help']\n"
        "sys.exit(ep.load()())\n"
    )
    r = subprocess.run([sys.executable, "-c", run], cwd=tmp_path, capture_output=True, text=True,
                       env={**env, "PYTHONPATH": str(lib)}, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"version {dashboard.__version__}" in r.stdout and "usage: glassbox" in r.stdout


# ---------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("serve")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(120, 3)), columns=["a", "b", "c"])
    y = X.a * 2 - X.b
    model = RandomForestRegressor(10, max_depth=3, random_state=0).fit(X, y)
    sio.dump(model, d / "m.skops")
    (d / "m.pkl").write_bytes(pickle.dumps(model))
    (d / "broken.skops").write_bytes(b"not a zip")
    X.assign(y=y).to_csv(d / "d.csv", index=False)
    X.drop(columns="c").to_csv(d / "short.csv", index=False)
    return d


def _busy_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


BAD = {
    "missing model": (["--model", "{d}/none.skops", "--data", "{d}/d.csv"], "model file .*none.skops does not exist"),
    "missing data": (["--model", "{d}/m.skops", "--data", "{d}/none.csv"], "data file .*none.csv does not exist"),
    "data is a folder": (["--model", "{d}/m.skops", "--data", "{d}"], "is not a file"),
    "pickle without --trust-pickles": (["--model", "{d}/m.pkl", "--data", "{d}/d.csv"],
                                       "Pickle and joblib model files are refused"),
    "broken model": (["--model", "{d}/broken.skops", "--data", "{d}/d.csv"], "not a readable .skops model"),
    "bad target": (["--model", "{d}/m.skops", "--data", "{d}/d.csv", "--target", "price"],
                   "target column 'price' is not in .*d.csv; its columns are: a, b, c, y"),
    "data lacks a column": (["--model", "{d}/m.skops", "--data", "{d}/short.csv"], "lacks 1 column"),
    "second pair bad": (["--model", "{d}/m.skops", "--data", "{d}/d.csv", "--model", "{d}/m.skops",
                         "--data", "{d}/short.csv"], r"\(model 2 of 2\)"),
    "data without model": (["--data", "{d}/d.csv"], "one --data per --model"),
    "targets miscounted": (["--model", "{d}/m.skops", "--data", "{d}/d.csv", "--model", "{d}/m.skops",
                            "--data", "{d}/d.csv", "--target", "y", "--target", "y", "--target", "y"],
                           "--target once for every model or once per model"),
    "transforms miscounted": (["--model", "{d}/m.skops", "--data", "{d}/d.csv", "--model", "{d}/m.skops",
                               "--data", "{d}/d.csv", "--target-transform", "log", "--target-transform", "log",
                               "--target-transform", "log"], "--target-transform once for every model"),
    "unknown transform": (["--target-transform", "exp"], "argument --target-transform: invalid choice"),
    "port 0": (["--port", "0"], "argument --port: expected a port number"),
    "port not a number": (["--port", "http"], "argument --port: expected a port number"),
    "port too large": (["--port", "70000"], "argument --port: expected a port number"),
    "port in use": (["--model", "{d}/m.skops", "--data", "{d}/d.csv", "--port", "{busy}"],
                    "port {busy} on 127.0.0.1 is not free"),
    "unknown host": (["--host", "no-such-host.invalid"], "cannot listen on 'no-such-host.invalid'"),
    "unknown option": (["--modle", "x"], "unrecognized arguments"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_and_exit_2(files, case):
    args, pattern = BAD[case]
    busy = _busy_port()
    try:
        port = busy.getsockname()[1]
        args = [a.format(d=files, busy=port) for a in args]
        r = glassbox("serve", *args, timeout=120)
    finally:
        busy.close()
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("glassbox serve: error: "), lines[0]
    assert re.search(pattern.format(busy=port), lines[0]), lines[0]
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_serve_without_models_starts_on_the_demos(demo_cards):
    """No --model: the dashboard as before (the demo models), on the given port."""
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("GLASSBOX_TRUST_PICKLES", "GLASSBOX_SERVE_MODELS")}
    proc = subprocess.Popen([sys.executable, "-m", "dashboard.cli", "serve", "--port", str(port)], cwd=ROOT,
                            env={**env, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with opener.open(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                    if r.read() == b"ok":
                        break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail(f"no health answer; output: {proc.stdout.read().decode(errors='replace')[-2000:]}")
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert f"http://127.0.0.1:{port}" in proc.stdout.read().decode(errors="replace")


def test_serve_entries_carry_the_target_transform(tmp_path):
    from dashboard import cli, served

    args = cli.build_parser().parse_args(["serve", "--model", "a.skops", "--data", "a.csv", "--model", "b.skops",
                                          "--data", "b.csv", "--target-transform", "log", "--target-transform", "none"])
    entries = cli._pairs(args)
    assert entries[0]["target_transform"] == "log" and "target_transform" not in entries[1]
    parsed = served.parse_entries(entries, "test")
    assert [e.target_transform for e in parsed] == ["log", None]


def test_a_large_data_file_is_checked_by_its_columns_before_the_server_starts(files, monkeypatch, capsys):
    """Issue #31: the server listens at once whatever the data's size; a file over FULL_CHECK_BYTES
    is read once, by the server, so the command checks the model and the target column only."""
    from dashboard import cli

    entry = {"model": str(files / "m.skops"), "data": str(files / "short.csv"), "target": None, "name": "m"}
    with pytest.raises(cli.UsageError, match="lacks 1 column"):
        cli.check_entry(entry, trusted=False)  # a small file: read and checked in full
    monkeypatch.setattr(cli, "FULL_CHECK_BYTES", 10)
    cli.check_entry(entry, trusted=False)  # the same file counted as large: its full check is the server's
    assert "is read and checked against the model when the dashboard first shows it" in capsys.readouterr().err
    with pytest.raises(cli.UsageError, match="target column 'price' is not in"):
        cli.check_entry({**entry, "target": "price"}, trusted=False)  # the columns are still read
    with pytest.raises(cli.UsageError, match="not a readable .skops model"):
        cli.check_entry({**entry, "model": str(files / "broken.skops")}, trusted=False)
