"""The importance page in a real browser: a deep link renders both charts."""
from playwright.sync_api import expect

from .conftest import settle, wait_idle


def test_importance_page_renders(page, app_url):
    page.goto(f"{app_url}/importance-comparison")
    wait_idle(page)
    expect(page.get_by_role("heading", name="Which features matter?")).to_be_visible()
    charts = page.get_by_test_id("stPlotlyChart")
    expect(charts).to_have_count(2, timeout=60_000)
    expect(charts.nth(0).locator(".js-plotly-plot")).to_be_visible(timeout=30_000)
    expect(charts.nth(0).locator("g.legend")).to_contain_text("Holdout permutation")
    expect(charts.nth(1).locator(".js-plotly-plot")).to_be_visible()
    expect(page.get_by_text("Page not found")).to_have_count(0)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    # switch the agreement measure: the heatmap redraws with Kendall's tau
    page.get_by_text("kendall", exact=True).click()
    expect(charts.nth(1)).to_contain_text("Kendall", timeout=30_000)
    settle(page)
    expect(page.get_by_test_id("stException")).to_have_count(0)
