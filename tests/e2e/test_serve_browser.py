"""``glassbox serve`` and ``show()`` in a real browser: the operator's model opens first."""
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from playwright.sync_api import expect
from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier

from tests.show_driver import ShowSession

from .conftest import ROOT, stop_server, wait_idle

NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_health(proc, url: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"glassbox serve exited with {proc.returncode}:\n{proc.stdout.read()}", pytrace=False)
        try:
            with NO_PROXY.open(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.3)
    proc.kill()
    pytest.fail("glassbox serve did not answer /_stcore/health in time", pytrace=False)


@pytest.fixture(scope="module")
def served(tmp_path_factory, demo_cards):
    """``glassbox serve`` on two models from a temporary folder (not the checkout), on a free port."""
    d = tmp_path_factory.mktemp("serve_browser")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["speed", "load", "temp"])
    y = 3 * X.speed - X.load ** 2 + rng.normal(0, 0.1, 300)
    sio.dump(GradientBoostingRegressor(n_estimators=30, random_state=0).fit(X, y), d / "engine.skops")
    X.assign(wear=y).to_parquet(d / "engine.parquet", index=False)
    sio.dump(RandomForestClassifier(10, max_depth=3, random_state=0).fit(X, y > 0), d / "pump.skops")
    X.assign(broke=y > 0).to_csv(d / "pump.csv", index=False)
    proc, url = start_serve(d, ["--model", "engine.skops", "--data", "engine.parquet", "--target", "wear",
                                "--name", "Engine wear", "--model", "pump.skops", "--data", "pump.csv",
                                "--target", "broke", "--name", "Pump failure"])
    yield url
    stop_server(proc)


def start_serve(folder, args: list[str]):
    """``glassbox serve <args>`` run from ``folder`` on a free loopback port, once it answers:
    (process, base url)."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GLASSBOX_TRUST_PICKLES", None)
    proc = subprocess.Popen([sys.executable, "-m", "dashboard.cli", "serve", *args, "--port", str(port)],
                            cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    _wait_health(proc, url)
    return proc, url


def test_serve_opens_on_the_first_model(page, served, demo_cards):
    page.goto(served)
    wait_idle(page)
    expect(page.get_by_role("heading", name="Engine wear")).to_be_visible()
    expect(page.get_by_text("GradientBoostingRegressor", exact=True).first).to_be_visible()
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("combobox", name="Model")).to_have_value("Engine wear")
    expect(page.get_by_test_id("stException")).to_have_count(0)

    # the second model and the demos are in the picker
    box = sidebar.get_by_role("combobox", name="Model")
    box.click()
    box.fill(demo_cards["wine_gb"]["title"])  # typed: a long list draws only the options in view
    expect(page.get_by_role("option", name=demo_cards["wine_gb"]["title"])).to_be_visible()
    box.fill("Pump failure")
    page.get_by_role("option", name="Pump failure").click()
    expect(page.get_by_role("heading", name="Pump failure")).to_be_visible(timeout=30_000)
    expect(sidebar.get_by_role("combobox", name="Class")).to_be_visible()
    assert "model=Pump-failure" in page.url

    # a page draws a chart of the served model
    page.goto(f"{served}/effects?model=Engine-wear")
    wait_idle(page)
    expect(page.get_by_test_id("stPlotlyChart").first.locator(".js-plotly-plot")).to_be_visible(timeout=60_000)
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_show_from_python_then_a_second_model(page, demo_cards):
    session = ShowSession()
    try:
        t0 = time.perf_counter()
        first = session.send("show Forest_via_show forest")
        page.goto(first["url"].replace("/?", "/effects?"))
        wait_idle(page)
        expect(page.get_by_test_id("stPlotlyChart").first.locator(".js-plotly-plot")).to_be_visible(timeout=60_000)
        first_chart = time.perf_counter() - t0
        print(f"\nshow(): health OK after {first['seconds']:.1f} s, first chart after {first_chart:.1f} s")
        page.goto(first["url"])
        wait_idle(page)
        expect(page.get_by_role("heading", name="Forest via show")).to_be_visible()

        second = session.send("show Classifier_via_show classifier")
        assert second["port"] == first["port"]
        page.goto(second["url"])
        wait_idle(page)
        expect(page.get_by_role("heading", name="Classifier via show")).to_be_visible()
        sidebar = page.get_by_test_id("stSidebar")
        box = sidebar.get_by_role("combobox", name="Model")
        box.click()
        box.fill("via show")  # typed: a long list draws only the options in view
        expect(page.get_by_role("option", name="Forest via show")).to_be_visible()
        expect(page.get_by_role("option", name="Classifier via show")).to_be_visible()
        page.keyboard.press("Escape")
        expect(page.get_by_test_id("stException")).to_have_count(0)

        # the link carries a token; a page switch keeps it in the address bar, a reload opens again
        assert "token=" in first["url"] and "token=" in page.url
        page.get_by_test_id("stSidebarNav").get_by_role("link", name="Quality").click()
        wait_idle(page)
        expect(page).to_have_url(re.compile(r"/quality\?.*token="), timeout=30_000)
        page.reload()
        wait_idle(page)
        expect(page.get_by_text("opens only from the link")).to_have_count(0)
        expect(page.get_by_test_id("stSidebar").get_by_role("combobox", name="Model")).to_have_value(
            "Classifier via show", timeout=60_000)
        # without the token (another local account that found the port): nothing of the model
        stranger = page.context.browser.new_context().new_page()
        stranger.goto(f"http://127.0.0.1:{first['port']}/?model={first['key']}")
        expect(stranger.get_by_text("opens only from the link show() printed")).to_be_visible(timeout=60_000)
        expect(stranger.get_by_role("heading", name="Forest via show")).to_have_count(0)
        expect(stranger.get_by_test_id("stSidebar")).to_have_count(0)
        stranger.goto(f"http://127.0.0.1:{first['port']}/?model={first['key']}&token=guess")
        expect(stranger.get_by_text("opens only from the link show() printed")).to_be_visible(timeout=60_000)
        stranger.context.close()

        session.send("stop")
        assert not Path(first["folder"]).exists()
    finally:
        session.close()
