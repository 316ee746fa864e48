"""The Interactions page in a real browser: heatmap, pick a pair (selectboxes and a click on a
cell), three charts of the pair side by side, no exception.

Runs against dashboard/app.py once it registers the page (url path "interactions"); until then
against tests/views/_interactions_app.py, which adds the page to app.py's navigation.
"""
import os
import subprocess
import sys
import time
import urllib.request

import pytest
from playwright.sync_api import expect

from .conftest import ROOT, _free_port, settle, stop_server, wait_idle

#: where Plotly draws a heatmap cell (row, column) on the page, from the figure's own axes
_CELL_JS = """([row, col]) => {
  const gd = document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')[0];
  const fl = gd._fullLayout, xa = fl.xaxis, ya = fl.yaxis;
  const box = gd.getBoundingClientRect();
  return {x: box.left + fl._size.l + xa.l2p(xa._categories.indexOf(col)),
          y: box.top + fl._size.t + ya.l2p(ya._categories.indexOf(row))};
}"""


def _registered() -> bool:
    return "interactions.py" in (ROOT / "dashboard" / "app.py").read_text()


@pytest.fixture(scope="module")
def interactions_url(request, demo_cards):
    if _registered():
        yield request.getfixturevalue("app_url")
        return
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "GLASSBOX_TRUST_PICKLES"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "tests/views/_interactions_app.py", "--server.headless=true",
         "--server.address=127.0.0.1", f"--server.port={port}", "--browser.gatherUsageStats=false"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            pytest.fail(f"The dashboard exited with {proc.returncode}:\n{proc.stdout.read().decode(errors='replace')}",
                        pytrace=False)
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    break
        except OSError:
            if time.monotonic() > deadline:
                stop_server(proc)
                pytest.fail("The dashboard did not answer /_stcore/health in time.", pytrace=False)
            time.sleep(0.3)
    yield url
    stop_server(proc)


def test_pick_a_pair_and_see_its_three_charts(page, interactions_url, tmp_path):
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(f"{interactions_url}/interactions?model=housing_gb")
    wait_idle(page)
    expect(page.get_by_role("heading", name="Which features act together?")).to_be_visible()
    charts = page.get_by_test_id("stPlotlyChart")
    expect(charts).to_have_count(4, timeout=60_000)  # heatmap; the pair's SHAP scatter, 2D PDP, ALE
    heatmap = charts.nth(0)
    expect(heatmap.locator(".js-plotly-plot .hm, .js-plotly-plot .heatmaplayer")).not_to_have_count(0, timeout=30_000)
    expect(page.get_by_text("Mean |SHAP interaction| of feature pairs")).to_be_visible()
    # the strongest pair is shown first: latitude and longitude
    first = page.get_by_role("combobox", name="Feature", exact=True)
    partner = page.get_by_role("combobox", name="Interacting with")
    assert {first.input_value(), partner.input_value()} == {"latitude", "longitude"}
    heatmap.screenshot(path=str(tmp_path / "interactions_heatmap.png"))

    # pick a pair with the two selectboxes
    for box, name in ((first, "median_income"), (partner, "house_age")):
        box.click()
        page.keyboard.type(name)  # typing opens the list even where a click only focuses the select
        page.get_by_role("option", name=name, exact=True).click()
        settle(page)
    expect(page.get_by_text("SHAP interaction: median_income × house_age")).to_be_visible(timeout=60_000)
    expect(charts).to_have_count(4, timeout=60_000)
    for k in (1, 2, 3):
        expect(charts.nth(k).locator(".js-plotly-plot")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("2D partial dependence", exact=True)).to_be_visible()
    expect(page.get_by_text("Second-order ALE (the interaction alone)", exact=True)).to_be_visible()
    assert "f1=median_income" in page.url and "f2=house_age" in page.url

    # or click a cell of the heatmap: its pair becomes the picked one
    heatmap.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    cell = page.evaluate(_CELL_JS, ["rooms_per_household", "latitude"])
    page.mouse.move(cell["x"], cell["y"])
    page.mouse.click(cell["x"], cell["y"])
    expect(first).to_have_value("rooms_per_household", timeout=60_000)
    expect(partner).to_have_value("latitude", timeout=60_000)
    expect(page.get_by_text("SHAP interaction: rooms_per_household × latitude")).to_be_visible(timeout=60_000)
    expect(charts).to_have_count(4)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("This app has encountered an error")).to_have_count(0)
