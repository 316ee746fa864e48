"""Issue #16 in a real browser: slow work shows that it runs (and can be stopped), and the
SHAP figures' labels neither overlap nor get cut off on a large-valued regression."""
import time

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from playwright.sync_api import expect
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from .conftest import settle, upload, wait_idle


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("truth")
    rng = np.random.default_rng(0)
    # slow: k-nearest neighbours over 4,000 rows and 16 features, so one row of kernel SHAP
    # (2,048 coalitions x 100 background rows) takes several seconds
    X = pd.DataFrame(rng.normal(size=(4000, 16)), columns=[f"f{i}" for i in range(16)])
    y = np.where(X.f0 + X.f1 > 0, "yes", "no")
    sio.dump(make_pipeline(StandardScaler(), KNeighborsClassifier(algorithm="brute")).fit(X, y), d / "slow.skops")
    X.assign(label=y).to_csv(d / "slow.csv", index=False)
    # house prices around 200,000
    n = 400
    H = pd.DataFrame({"sqft": rng.uniform(500, 4000, n), "bedrooms": rng.integers(1, 6, n).astype(float),
                      "year_built": rng.integers(1900, 2020, n).astype(float),
                      "lot_size": rng.uniform(1_000, 20_000, n), "distance_to_city_centre_km": rng.uniform(0, 40, n)})
    price = (50_000 + 60 * H.sqft + 8_000 * H.bedrooms + 300 * (H.year_built - 1900) + 2 * H.lot_size
             - 1_500 * H.distance_to_city_centre_km)
    sio.dump(GradientBoostingRegressor(random_state=0).fit(H, price), d / "houses.skops")
    H.assign(price=price).to_csv(d / "houses.csv", index=False)
    return d


def _upload(page, app_url, model, data, target):
    page.goto(app_url)
    wait_idle(page)
    expect(page.get_by_text("Switch model")).to_be_visible(timeout=90_000)
    upload(page, "model", model)
    upload(page, "data", data)
    box = page.get_by_role("combobox", name="Target column")
    box.click()
    box.fill(target)  # a long list of columns: type to find it
    page.get_by_role("option", name=target, exact=True).click()
    settle(page)
    page.get_by_role("button", name="Load model and data").click()
    expect(page.get_by_role("heading", name=f"Uploaded: {model.name}")).to_be_visible(timeout=60_000)
    wait_idle(page)


#: records when the script starts running and when each sign of life first shows
WATCH = """() => {
  window.__seen = {};
  const t0 = performance.now();
  const app = document.querySelector('[data-testid="stApp"]');
  const note = (k) => { if (!(k in window.__seen)) window.__seen[k] = performance.now() - t0; };
  const ids = ['stExpanderIconSpinner', 'stSpinner', 'stProgress', 'stStatusWidget', 'stPlotlyChart'];
  // what the page before showed (the Model page's chart) is not what this page shows
  const before = new WeakSet(ids.flatMap(id => Array.from(document.querySelectorAll(`[data-testid="${id}"]`))));
  const check = () => {
    if (app.getAttribute('data-test-script-state') === 'running') note('running');
    for (const id of ids) {
      const shown = Array.from(document.querySelectorAll(`[data-testid="${id}"]`))
        .some(el => !before.has(el) && el.getBoundingClientRect().width > 0);
      if (shown) note(id);
    }
    const stop = document.querySelector('[data-testid="stStatusWidget"] button');
    if (stop && /stop/i.test(stop.innerText)) note('stop');
  };
  new MutationObserver(check).observe(document.body, {subtree: true, childList: true, attributes: true});
  check();
}"""


def test_slow_shap_shows_it_runs_and_stops(page, app_url, files):
    _upload(page, app_url, files / "slow.skops", files / "slow.csv", "label")
    page.evaluate(WATCH)
    page.get_by_role("link", name="SHAP").click()
    expect(page.get_by_role("heading", name="Why this prediction?")).to_be_visible(timeout=30_000)
    # a spinner while the run goes on, and Streamlit's Stop in the header
    expect(page.get_by_test_id("stExpanderIconSpinner")).to_be_visible(timeout=10_000)
    expect(page.get_by_test_id("stStatusWidget").get_by_role("button", name="Stop")).to_be_visible(timeout=5_000)
    seen = page.evaluate("() => window.__seen")
    first = min(seen.get(k, 1e9) for k in ("stExpanderIconSpinner", "stSpinner", "stProgress"))
    # the order of what shows, not how many ms apart: a sign of life after the run starts and
    # before the row's chart, and Stop visible while the row is computed
    assert seen["running"] <= first < seen.get("stPlotlyChart", 1e9), seen
    assert seen["stop"] < seen.get("stPlotlyChart", 1e9), seen
    expect(page.get_by_text("Explaining row 0")).to_be_visible()
    # Stop ends the run at once (the row goes on in the background and is kept for later)
    t0 = time.monotonic()
    page.get_by_test_id("stStatusWidget").get_by_role("button", name="Stop").click()
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=10_000)
    took = time.monotonic() - t0
    print(f"spinner {first - seen['running']:.0f} ms after the run started; Stop took {took:.2f} s")
    # the run ended without drawing the row (printed above, not asserted: Stop's speed is no test's)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(0)
    # any click reruns the page: the row, computed on in the background meanwhile, is there
    page.get_by_text("force", exact=True).click()
    expect(page.get_by_test_id("stPlotlyChart").first).to_contain_text("Row 0:", timeout=60_000)
    wait_idle(page)
    # the global view of a slow method: a progress bar at once, its text moving before any row is done
    page.get_by_text("Show the global view").click()
    bar = page.get_by_test_id("stProgress")
    expect(bar).to_be_visible(timeout=10_000)
    first_text = bar.inner_text()
    expect(bar).not_to_have_text(first_text, timeout=2_000)
    assert "Rows explained: " in bar.inner_text()
    page.get_by_test_id("stStatusWidget").get_by_role("button", name="Stop").click()
    wait_idle(page)
    expect(page.get_by_test_id("stException")).to_have_count(0)


#: every visible SVG text of a chart: does any overlap another, or run past the figure?
OVERLAPS = """(root) => {
  const svg = root.querySelector('svg.main-svg');
  const box = svg.getBoundingClientRect();
  const texts = Array.from(root.querySelectorAll('svg text')).filter(t => {
    const r = t.getBoundingClientRect(), st = getComputedStyle(t);
    return t.textContent.trim() && r.width > 0 && r.height > 0 && st.visibility !== 'hidden' && st.display !== 'none'
      && st.opacity !== '0';
  }).map(t => { const r = t.getBoundingClientRect(); return {text: t.textContent, l: r.left, r: r.right, t: r.top, b: r.bottom}; });
  const clipped = texts.filter(a => a.l < box.left - 0.5 || a.r > box.right + 0.5 || a.t < box.top - 0.5
                                    || a.b > box.bottom + 0.5).map(a => a.text);
  const overlaps = [];
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
    const a = texts[i], c = texts[j];
    if (Math.min(a.r, c.r) - Math.max(a.l, c.l) > 1 && Math.min(a.b, c.b) - Math.max(a.t, c.t) > 1)
      overlaps.push([a.text, c.text]);
  }
  return {texts: texts.map(t => t.text), clipped, overlaps};
}"""


def _check_labels(chart) -> list[str]:
    expect(chart.locator(".js-plotly-plot")).to_be_visible(timeout=60_000)
    chart.page.wait_for_timeout(500)  # let Plotly finish its layout
    got = chart.evaluate(OVERLAPS)
    assert got["texts"], got
    assert not got["clipped"], got
    assert not got["overlaps"], got
    return got["texts"]


def test_waterfall_and_mean_abs_labels_do_not_collide(page, app_url, files):
    _upload(page, app_url, files / "houses.skops", files / "houses.csv", "price")
    page.get_by_role("link", name="SHAP").click()
    expect(page.get_by_role("heading", name="Why this prediction?")).to_be_visible(timeout=30_000)
    for row in ("123", "7"):
        box = page.get_by_role("spinbutton", name="Row (0 – 399)")
        box.fill(row)
        box.press("Enter")
        chart = page.get_by_test_id("stPlotlyChart").first
        expect(chart).to_contain_text(f"Row {row}:", timeout=60_000)
        texts = _check_labels(chart)
        assert not [t for t in texts if "e+" in t], texts
        assert any(t.startswith("f(x) = ") and t.endswith("k") for t in texts), texts
    page.get_by_text("Show the global view").click()
    charts = page.get_by_test_id("stPlotlyChart")
    expect(charts).to_have_count(4, timeout=60_000)
    texts = _check_labels(charts.nth(2))  # mean |SHAP|
    assert any(t.startswith("Mean |SHAP value|") for t in texts), texts
    _check_labels(charts.nth(1))  # beeswarm
    expect(page.get_by_test_id("stException")).to_have_count(0)
