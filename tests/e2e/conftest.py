"""Real-browser fixtures: the dashboard served on loopback, driven by Debian's Chromium.

A missing browser is a failure, never a skip: CI installs chromium first.
"""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/e2e" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.e2e)


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("No Chromium found on PATH: install it (Debian: apt-get install -y chromium); "
                "the browser tests never download a browser.", pytrace=False)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": _chromium(), "args": CHROMIUM_ARGS}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(extra_env: dict | None = None, timeout: float = 90.0):
    """Start the dashboard on a free loopback port; return (process, base url)."""
    port = _free_port()
    env = {**os.environ, **(extra_env or {})}
    env.pop("GLASSBOX_TRUST_PICKLES", None) if not extra_env or "GLASSBOX_TRUST_PICKLES" not in extra_env else None
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "dashboard/app.py", "--server.headless=true",
         "--server.address=127.0.0.1", f"--server.port={port}", "--browser.gatherUsageStats=false"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace")
            pytest.fail(f"The dashboard server exited with {proc.returncode}:\n{out}", pytrace=False)
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    pytest.fail("The dashboard server did not answer /_stcore/health in time.", pytrace=False)


def stop_server(proc) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def app_url(demo_cards):
    proc, url = start_server()
    yield url
    stop_server(proc)


def wait_idle(page, timeout: float = 60_000) -> None:
    """Wait until the script run finished (use after navigation, not after a click)."""
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=timeout)


def uploader(page, which: str):
    """The Model page's model ("model") or data ("data") uploader, found by its label.

    Located by label, not by position: while a rerun redraws the page, the n-th
    uploader in the DOM can briefly be the other one.
    """
    label = {"model": "Fitted model", "data": "Data (.csv or .parquet)"}[which]
    box = page.get_by_test_id("stFileUploader").filter(has=page.get_by_text(label, exact=False))
    box.wait_for(timeout=90_000)
    return box


def upload(page, which: str, path) -> None:
    """Choose a file in one of the Model page's uploaders and wait until it is taken."""
    box = uploader(page, which)
    box.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(path))
    expect(box.get_by_test_id("stFileChipName")).to_have_attribute("title", path.name, timeout=30_000)
    settle(page)


def pick_option(page, label: str, option: str, scope=None, exact: bool = False) -> None:
    """Choose ``option`` in the select box ``label``: typed into the box first, so the option is
    drawn even when the list is long (the dropdown only draws the options in view)."""
    box = (scope or page).get_by_role("combobox", name=label, exact=exact)
    if box.input_value() == option:
        return  # already chosen
    wanted = page.get_by_role("option", name=option, exact=True)
    for attempt in range(3):  # a rerun may close the list while it opens: open it again
        box.click()
        box.fill(option)
        try:
            wanted.click(timeout=10_000)
            return
        except Exception:  # noqa: BLE001 - not drawn yet
            if attempt == 2:
                raise
            page.keyboard.press("Escape")
            page.wait_for_timeout(500)


def settle(page, timeout: float = 60_000) -> None:
    """After an upload or a click: let the rerun start, then wait for it to finish."""
    page.wait_for_timeout(400)
    wait_idle(page, timeout)
