"""Hostile uploads and shared servers (issue #15) in a real browser.

- names that are Markdown/HTML payloads show as typed: no link, no bold from them;
- the server keeps its settings when started from another folder (loopback only,
  no error details, 100 MB uploads), and refuses to serve when it would listen on
  every interface without being asked to. Only 127.0.0.1 is ever contacted.
"""
import os
import sys
import textwrap
import time
import urllib.request

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from playwright.sync_api import expect

from .conftest import ROOT, _free_port, settle, stop_server, upload, wait_idle

WJ = "\u2060"
MODEL_FILE = "**evil** [x](evil.example) www.evil.example.skops"
DATA_FILE = "=cmd __main__.Evil <b>data.csv"
BOLD = "**bold**"
LINK = "[x](http://evil.example/)"
CATS = ["=cmd|' /C calc'!A0", "<b>low</b>", ":red[x] a@evil.example"]
CLASSES = ["<b>yes</b>", "__main__.Evil"]


@pytest.fixture(scope="module")
def hostile_files(tmp_path_factory):
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    d = tmp_path_factory.mktemp("hostile")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({BOLD: rng.normal(size=150), LINK: rng.normal(size=150), "kind": rng.choice(CATS, 150)})
    y = np.where(X[BOLD] + (X["kind"] == CATS[0]) > 0.4, CLASSES[0], CLASSES[1])
    pre = ColumnTransformer([("c", OneHotEncoder(handle_unknown="ignore"), ["kind"])], remainder="passthrough")
    model = make_pipeline(pre, RandomForestClassifier(20, max_depth=4, random_state=0)).fit(X, y)
    sio.dump(model, d / MODEL_FILE)
    X.assign(label=y).to_csv(d / DATA_FILE, index=False)
    return d


def _no_payload_markup(page):
    """No link to the payload's site, and no bold/italic made from a payload word, anywhere."""
    assert page.locator("a[href*='evil.example'], a[href^='mailto:']").count() == 0
    words = page.evaluate("""() => [...document.querySelectorAll('strong, b, em, i, del, code a, span.katex')]
                                   .map(e => e.textContent.trim())""")
    assert not set(words) & {"bold", "evil", "main", "yes", "low", "data"}, words
    assert page.locator("[data-testid='stMarkdown'] img, [data-testid='stCaptionContainer'] img").count() == 0


def _choose(page, label: str, option: str) -> None:
    """Pick an option of a select box (a click during a rerun may only focus it: open it again)."""
    box = page.get_by_role("combobox", name=label)
    wanted = page.get_by_role("option", name=option, exact=True)
    for _ in range(3):
        box.click()
        try:
            wanted.wait_for(timeout=5_000)
            break
        except Exception:  # noqa: BLE001 - not open yet
            page.keyboard.press("ArrowDown")
            settle(page)
    wanted.click()
    settle(page)


def _text(page) -> str:
    return page.locator("[data-testid='stApp']").inner_text().replace(WJ, "")


def test_hostile_upload_renders_literally(page, app_url, demo_cards, hostile_files):
    page.goto(app_url)
    wait_idle(page)
    upload(page, "model", hostile_files / MODEL_FILE)
    upload(page, "data", hostile_files / DATA_FILE)
    _choose(page, "Target column", "label")
    page.get_by_role("button", name="Load model and data").click()
    heading = page.get_by_role("heading", level=1).first
    expect(heading).to_contain_text("evil.example.skops", timeout=60_000)
    settle(page)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    assert heading.inner_text().replace(WJ, "") == f"Uploaded: {MODEL_FILE}"
    text = _text(page)
    for shown in (f"Your model {MODEL_FILE} with data {DATA_FILE}.", "__main__.Evil", "<b>yes</b>"):
        assert shown in text, shown
    _no_payload_markup(page)

    # the SHAP page: sentences and Plotly figures with the payload names, as typed
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="SHAP").click()
    wait_idle(page, timeout=120_000)
    chart = page.get_by_test_id("stPlotlyChart").first
    expect(chart.locator(".js-plotly-plot .main-svg").first).to_be_visible(timeout=90_000)
    _choose(page, "Treat as missing", BOLD)
    page.keyboard.press("Escape")
    expect(page.get_by_text(f"with {BOLD} missing", exact=False)).to_be_visible(timeout=60_000)
    settle(page)
    svg = chart.locator(".js-plotly-plot").first.inner_text() + " ".join(
        chart.locator(".js-plotly-plot text").all_text_contents())
    assert f"{BOLD} = NA (missing)" in svg and "__main__.Evil" in svg, svg
    expect(page.get_by_test_id("stException")).to_have_count(0)
    _no_payload_markup(page)


# ------------------------------------------------------------------ server settings
LAUNCHER = textwrap.dedent("""
    # Starts the dashboard the way `python -m streamlit run /abs/dashboard/app.py` does, from
    # another folder. Test-only changes, named by flags: --lose-config (Streamlit finds no
    # config.toml, as an older Streamlit or a moved script would) and --fault (every page
    # raises an exception at its end, whose message must not reach the browser).
    import sys
    sys.path.insert(0, {root!r})
    args = sys.argv[1:]
    if "--lose-config" in args:
        args.remove("--lose-config")
        from streamlit import config
        config.get_config_files = lambda file_name: []
    if "--fault" in args:
        args.remove("--fault")
        from dashboard import state

        def boom(*a, **k):
            raise RuntimeError("SECRET-DETAIL /etc/glassbox-secret")
        state.warm_kernels_in_background = boom
    from streamlit.web import cli
    sys.argv = ["streamlit", "run", {app!r}, *args]
    cli.main()
""")


def _serve(tmp_path, *args):
    """Start the app from ``tmp_path`` (not the repository); return (process, loopback url)."""
    import subprocess

    launcher = tmp_path / "launch.py"
    launcher.write_text(LAUNCHER.format(root=str(ROOT), app=str(ROOT / "dashboard" / "app.py")))
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMLIT_", "GLASSBOX_"))}
    proc = subprocess.Popen([sys.executable, str(launcher), f"--server.port={port}", *args], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"  # only ever loopback, whatever the server binds
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(proc.stdout.read().decode(errors="replace"), pytrace=False)
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return proc, url, port
        except OSError:
            time.sleep(0.3)
    stop_server(proc)
    pytest.fail("the server did not answer /_stcore/health on 127.0.0.1", pytrace=False)


def _listen_addresses(port: int) -> set[str]:
    """Local addresses of the sockets listening on ``port`` (Linux /proc), e.g. {'127.0.0.1'}."""
    import ipaddress

    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, p = local.split(":")
            if state != "0A" or int(p, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(addr)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # little-endian words
            found.add(str(ipaddress.ip_address(raw)))
    return found


def _check_served_safely(page, url):
    page.goto(url)
    wait_idle(page, timeout=120_000)
    # the upload limit the server enforces, as the uploader states it
    expect(page.get_by_text("100MB per file").first).to_be_visible(timeout=60_000)
    # the injected fault: an error box without the exception's message or traceback
    expect(page.get_by_test_id("stException")).to_have_count(1, timeout=60_000)
    shown = page.get_by_test_id("stException").inner_text()
    assert "SECRET-DETAIL" not in shown and "Traceback" not in shown and "RuntimeError" not in shown, shown
    assert "SECRET-DETAIL" not in page.content()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the listening sockets from /proc")
def test_started_from_another_folder_keeps_its_settings(page, tmp_path, demo_cards):
    proc, url, port = _serve(tmp_path, "--fault")
    try:
        assert _listen_addresses(port) == {"127.0.0.1"}
        _check_served_safely(page, url)
    finally:
        stop_server(proc)


def test_settings_hold_without_any_config_file(page, tmp_path, demo_cards):
    # an explicit loopback address, but no config.toml found: the app sets the rest itself
    proc, url, _ = _serve(tmp_path, "--lose-config", "--fault", "--server.address=127.0.0.1",
                          "--server.headless=true")
    try:
        _check_served_safely(page, url)
    finally:
        stop_server(proc)


def test_refuses_to_serve_on_every_interface_unless_asked(page, tmp_path, demo_cards):
    # no config file and no address: Streamlit binds every interface; the app serves nothing
    proc, url, _ = _serve(tmp_path, "--lose-config", "--server.headless=true")
    try:
        page.goto(url)
        wait_idle(page, timeout=120_000)
        alert = page.get_by_test_id("stAlert")
        expect(alert).to_contain_text("This dashboard is not serving", timeout=60_000)
        expect(alert).to_contain_text("--server.address 127.0.0.1")
        expect(page.get_by_test_id("stFileUploader")).to_have_count(0)
        expect(page.get_by_test_id("stSidebar")).to_have_count(0)
    finally:
        stop_server(proc)
