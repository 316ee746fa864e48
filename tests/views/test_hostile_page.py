"""Hostile uploads and shared servers (issue #15), through AppTest.

- user text (file, column, category and class names, error messages) is shown literally;
- batch runs are opened only inside the folders the operator allows, with one refusal;
- the server settings travel with the app; the target picker reads only the header.
"""
import os
import re
import shutil
import sys

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from streamlit import config
from streamlit.config_option import ConfigOption
from streamlit.testing.v1 import AppTest

from dashboard import server, state
from dashboard.safe_text import code, md, plot
from explainers import ExplainerError
from tests.plotly_json import figures
from tests.views._app import APP, open_page

MODEL_NAME = "**evil**_[x](http://evil.example).skops"
DATA_NAME = "<b>data</b> __main__.Evil.csv"
BOLD = "**bold**"
LINK = "[x](http://evil.example/)"
FORMULA = '=HYPERLINK("http://evil.example/")'
CATS = ["=cmd|' /C calc'!A0", "<b>low</b>", ":red[x] www.evil.example"]
CLASSES = ["<b>yes</b>", "__main__.Evil"]
#: what only an unescaped payload can put into a Markdown source
RAW = ["**bold**", "**evil**", "[x](", "<b>", "__main__", "http://", "www.evil", ":red["]


@pytest.fixture(scope="module")
def hostile_files():
    """(model bytes, CSV bytes): names and values are Markdown/HTML payloads."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    n = 160
    X = pd.DataFrame({BOLD: rng.normal(size=n), LINK: rng.normal(size=n), FORMULA: rng.choice(CATS, n)})
    y = np.where(X[BOLD] + (X[FORMULA] == CATS[0]) > 0.4, CLASSES[0], CLASSES[1])
    pre = ColumnTransformer([("c", OneHotEncoder(handle_unknown="ignore"), [FORMULA])], remainder="passthrough")
    model = make_pipeline(pre, RandomForestClassifier(25, max_depth=4, random_state=0)).fit(X, y)
    return sio.dumps(model), X.assign(label=y).to_csv(index=False).encode()


def _rendered(at) -> list[str]:
    """Every string Streamlit renders as Markdown on the page (and sidebar)."""
    out = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "error", "warning", "info", "success"):
        out += [e.value for e in getattr(at, kind)]
    out += [m.label for m in at.metric]
    for kind in ("selectbox", "multiselect", "number_input", "checkbox", "toggle", "radio", "text_input"):
        out += [w.label for w in getattr(at, kind)]
    return out


def _assert_literal(at):
    for text in _rendered(at):
        text = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)  # inline code shows its text as it is
        for raw in RAW:
            assert raw not in text, (raw, text)


def _upload(at, model_bytes, csv, target="label"):
    at.file_uploader(key=state.MODEL_FILE).set_value((MODEL_NAME, model_bytes, "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value((DATA_NAME, csv, "text/csv"))
    at.run()
    at.selectbox(key=state.TARGET_COL).set_value(target).run()
    at.button[0].click().run()
    assert not at.exception, at.exception


def test_hostile_names_are_shown_literally_on_every_page(hostile_files):
    model_bytes, csv = hostile_files
    at = open_page(timeout=120)
    # options of a selectbox are plain text: the names are offered as they are
    at.file_uploader(key=state.DATA_FILE).set_value((DATA_NAME, csv, "text/csv")).run()
    assert at.selectbox(key=state.TARGET_COL).options == [state.NO_TARGET, BOLD, LINK, FORMULA, "label"]
    _upload(at, model_bytes, csv)

    # Model page: title, description, classes, notices
    assert at.title[0].value == md(f"Uploaded: {MODEL_NAME}")
    assert "\\*\\*evil\\*\\*\\_\\[x\\](http:\u2060//evil.example).skops" in at.title[0].value
    assert any(md(DATA_NAME) in c.value for c in at.caption)
    assert any(", ".join(code(c) for c in sorted(CLASSES)) in m.value for m in at.markdown)
    assert at.sidebar.selectbox(key=state.CLASS_INDEX).options == sorted(CLASSES)
    _assert_literal(at)

    # PDP page: the categorical payload feature, its figure escaped for Plotly
    at.switch_page("views/pdp.py").run()
    at.selectbox(key="pdp_f1").set_value(FORMULA).run()
    assert not at.exception, at.exception
    _assert_literal(at)
    fig = figures(at)[0]
    assert fig["layout"]["title"]["text"] == f"Partial dependence on {plot(FORMULA)}"
    assert plot(CATS[1]) in fig["data"][-1]["x"] and CATS[1] not in fig["data"][-1]["x"]

    # SHAP page: a masked payload feature in the sentence under the waterfall
    at.switch_page("views/shap.py").run()
    at.multiselect(key="shap_mask").set_value([BOLD]).run()
    assert not at.exception, at.exception
    assert any(f"with {md(BOLD)} missing" in m.value for m in at.markdown)
    assert any(plot(BOLD) + " = NA (missing)" in t for t in figures(at)[0]["layout"]["yaxis"]["ticktext"])
    _assert_literal(at)

    # What-if page: the editors are labelled with the column names
    at.switch_page("views/whatif.py").run()
    assert not at.exception, at.exception
    assert {w.label for w in at.number_input} >= {md(BOLD), md(LINK)}
    assert md(FORMULA) in {w.label for w in at.selectbox}
    assert md(CLASSES[1]) in " ".join(m.label for m in at.metric)
    _assert_literal(at)

    # Importance and report pages
    at.switch_page("views/importance.py").run()
    assert not at.exception, at.exception
    _assert_literal(at)
    at.switch_page("views/report.py").run()
    assert not at.exception, at.exception
    _assert_literal(at)


def test_error_text_quoting_a_hostile_name_is_literal(hostile_files):
    model_bytes, _ = hostile_files
    at = open_page(timeout=120)
    at.file_uploader(key=state.MODEL_FILE).set_value((MODEL_NAME, model_bytes, "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("d.csv", f'"{LINK}"\n1.0\n'.encode(), "text/csv"))
    at.run()
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert at.error, "the missing columns are reported"
    assert md(BOLD) in at.error[0].value or md(FORMULA) in at.error[0].value
    _assert_literal(at)


# ------------------------------------------------------------------ batch roots
@pytest.fixture(scope="module")
def batch_run(tmp_path_factory, demo_cards):
    """A finished batch run of the default demo, outside any allowed folder."""
    from demo_models import build
    from explainers.batch import explain_file

    base = tmp_path_factory.mktemp("batch")
    p = build.paths(state.DEFAULT_DEMO)
    data = base / "rows.parquet"
    pd.read_parquet(p["parquet"]).drop(columns=demo_cards[state.DEFAULT_DEMO]["target"]).to_parquet(data)
    out = base / "outside_run"
    explain_file(p["skops"], data, out, chunk_rows=1000, block_rows=1000)
    return out


def test_batch_runs_are_off_unless_the_operator_names_folders(monkeypatch):
    monkeypatch.delenv(state.BATCH_ROOTS_ENV, raising=False)
    monkeypatch.setattr(sys, "argv", ["app.py"])
    at = open_page("views/shap.py")
    assert "shap_source" not in [r.key for r in at.radio]
    assert not [t for t in at.text_input if t.key == "shap_batch_dir"]
    assert any(f"`-- {state.BATCH_ROOT_FLAG} FOLDER`" in c.value and state.BATCH_ROOTS_ENV in c.value
               for c in at.caption)


def test_batch_roots_from_flags_and_environment(monkeypatch, tmp_path):
    a, b, c = (tmp_path / n for n in "abc")
    monkeypatch.setenv(state.BATCH_ROOTS_ENV, f"{a}{os.pathsep}{os.pathsep}{b}/../b")
    monkeypatch.setattr(sys, "argv", ["app.py", "--trust-pickles", state.BATCH_ROOT_FLAG, str(c),
                                      f"{state.BATCH_ROOT_FLAG}={a}"])
    assert state.batch_roots() == [os.path.realpath(a), os.path.realpath(b), os.path.realpath(c)]


def test_every_path_outside_the_roots_gets_the_same_refusal(tmp_path, batch_run):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    inside = allowed / "run"
    shutil.copytree(batch_run, inside)
    (allowed / "notes.txt").write_text("x")
    (allowed / "link").symlink_to(batch_run, target_is_directory=True)
    (tmp_path / "allowed-but-not").mkdir()  # a sibling sharing the root's name as a prefix
    roots = [os.path.realpath(allowed)]

    assert state.batch_folder(str(inside), roots) == os.path.realpath(inside)
    assert state.batch_folder("run", roots) == os.path.realpath(inside)  # relative: inside the root
    for path in [str(batch_run), str(tmp_path / "missing"), str(allowed / "missing"), str(allowed / "notes.txt"),
                 str(inside / "_manifest.json"), f"{allowed}/../{batch_run.name}", str(allowed / "link"),
                 f"../{batch_run.parent.name}", str(tmp_path / "allowed-but-not"), "/", "", "a\x00b", "~"]:
        with pytest.raises(ExplainerError) as err:
            state.batch_folder(path, roots)
        assert str(err.value) == state.BATCH_REFUSED, path


def test_the_page_refuses_outside_paths_with_one_message(tmp_path, batch_run, monkeypatch):
    allowed = tmp_path / "allowed"
    shutil.copytree(batch_run, allowed / "run")
    monkeypatch.setenv(state.BATCH_ROOTS_ENV, str(allowed))
    at = open_page("views/shap.py")
    at.radio(key="shap_source").set_value("a precomputed batch run").run()
    seen = set()
    for path in [str(batch_run), str(tmp_path / "missing"), str(allowed / "run" / "_manifest.json"),
                 f"{allowed}/../{batch_run.name}"]:
        at.text_input(key="shap_batch_dir").set_value(path).run()
        assert not at.exception, at.exception
        assert len(at.error) == 1 and not figures(at)[1:], path
        seen.add(at.error[0].value)
    assert seen == {md(state.BATCH_REFUSED)}
    # inside the allowed folder the run opens (the batch readers check the folder itself)
    at.text_input(key="shap_batch_dir").set_value(str(allowed / "run")).run()
    assert not at.exception and not at.error
    assert len(figures(at)) == 4


# ------------------------------------------------------------- server settings
@pytest.fixture
def restore_config():
    """Put back the config options a test changes (they are process-wide)."""
    keys = ["server.address", *server.RUNTIME_SETTINGS]
    saved = {k: (config.get_option(k), config.get_where_defined(k)) for k in keys}
    yield
    for k, (value, where) in saved.items():
        config.set_option(k, value, where_defined=where)


def test_runtime_settings_fill_what_nobody_set(restore_config):
    default = ConfigOption.DEFAULT_DEFINITION
    config.set_option("client.showErrorDetails", "full", where_defined=default)
    config.set_option("server.maxUploadSize", 200, where_defined=default)
    config.set_option("client.toolbarMode", "developer", where_defined="command-line argument or environment variable")
    changed = server.apply_runtime_settings()
    assert "client.showErrorDetails" in changed and "server.maxUploadSize" in changed
    assert config.get_option("client.showErrorDetails") == "none"
    assert config.get_option("server.maxUploadSize") == 100
    assert config.get_option("client.toolbarMode") == "developer"  # the operator's flag wins


def test_exposed_server_refuses_to_serve(monkeypatch, restore_config):
    monkeypatch.setattr(server, "_served", lambda: True)
    config.set_option("server.address", None, where_defined=ConfigOption.DEFAULT_DEFINITION)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [server.EXPOSED_MESSAGE]
    assert "--server.address 127.0.0.1" in server.EXPOSED_MESSAGE
    assert not at.title and not at.sidebar.selectbox  # nothing else is served
    # an address the operator gave (flag, environment variable or config file) is served
    config.set_option("server.address", "0.0.0.0", where_defined="command-line argument or environment variable")
    assert server.exposure_problem() is None
    config.set_option("server.address", "127.0.0.1", where_defined=ConfigOption.DEFAULT_DEFINITION)
    assert server.exposure_problem() is None


def test_settings_match_the_config_files():
    tomllib = pytest.importorskip("tomllib")
    root = state.__file__.rsplit(os.sep, 3)[0]
    for path in (os.path.join(root, ".streamlit", "config.toml"),
                 os.path.join(root, "dashboard", ".streamlit", "config.toml")):
        with open(path, "rb") as f:
            toml = tomllib.load(f)
        for key, value in {**server.START_SETTINGS, **server.RUNTIME_SETTINGS}.items():
            section, name = key.split(".")
            assert toml[section][name] == value, (path, key)


def test_launcher_passes_the_settings_and_lets_flags_win():
    from dashboard.__main__ import APP, command

    cmd = command(["--server.port", "8502", "--server.maxUploadSize=50", "--", "--batch-root", "/data"])
    assert cmd[:2] == ["run", str(APP)]
    assert "--server.address=127.0.0.1" in cmd and "--client.showErrorDetails=none" in cmd
    assert "--server.maxUploadSize=100" not in cmd and "--server.maxUploadSize=50" in cmd
    assert cmd[-3:] == ["--", "--batch-root", "/data"]


# ---------------------------------------------------------------- target picker
def test_target_picker_reads_only_the_header(hostile_files, monkeypatch):
    import explainers

    calls = []

    def no_load(*args, **kwargs):
        calls.append(args)
        raise AssertionError("the whole table was loaded before Load")

    monkeypatch.setattr(explainers, "load_data", no_load)
    _, csv = hostile_files
    at = open_page(timeout=60)
    at.file_uploader(key=state.DATA_FILE).set_value(("picker.csv", csv + b"1,2,x,y\n", "text/csv")).run()
    assert not at.exception and not at.error
    assert at.selectbox(key=state.TARGET_COL).options == [state.NO_TARGET, BOLD, LINK, FORMULA, "label"]
    assert calls == []
