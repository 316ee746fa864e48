"""The SHAP page in a real browser: waterfall, mask a feature, see it at 0."""
from playwright.sync_api import expect

from .conftest import settle, wait_idle


def test_shap_waterfall_and_mask(page, app_url):
    page.goto(f"{app_url}/attribution")
    wait_idle(page)
    expect(page.get_by_role("heading", name="Why this prediction?")).to_be_visible()
    chart = page.get_by_test_id("stPlotlyChart").first
    expect(chart.locator(".js-plotly-plot")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("base ", exact=False).first).to_be_visible()
    # mask bmi: its bar reads "0 (missing)" and the masked prediction is shown
    page.get_by_role("combobox", name="Treat as missing").click()
    page.get_by_role("option", name="bmi", exact=True).click()
    page.keyboard.press("Escape")
    expect(chart).to_contain_text("bmi = NA (missing)", timeout=60_000)
    expect(page.get_by_text("with bmi missing", exact=False)).to_be_visible()
    # the force view
    page.get_by_text("force", exact=True).click()
    settle(page)
    expect(page.get_by_test_id("stPlotlyChart").first.locator(".js-plotly-plot")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
