"""The Quality page in a real browser: the rows of the largest residual band, and one of
them opened on the SHAP page (the button must carry the model and the row across)."""
import re

from playwright.sync_api import expect

from .conftest import settle, wait_idle


def test_quality_rows_open_on_the_shap_page(page, app_url, demo_cards):
    page.goto(f"{app_url}/quality")
    wait_idle(page)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_test_id("stPlotlyChart").first.locator(".js-plotly-plot")).to_be_visible(timeout=60_000)
    box = page.get_by_role("combobox", name="Row", exact=True)
    expect(box).to_be_visible(timeout=60_000)
    text = box.input_value()  # the picked row, as the box shows it
    found = re.search(r"\d+", text)
    assert found, text
    row = int(found.group())
    page.get_by_role("button", name="Open this row on the SHAP page").click()
    settle(page)
    expect(page.get_by_role("heading", name="Why this prediction?")).to_be_visible(timeout=60_000)
    chart = page.get_by_test_id("stPlotlyChart").first
    expect(chart).to_contain_text(f"Row {row}", timeout=60_000)
    # the same model as before: the default demo
    expect(page.get_by_text(demo_cards["diabetes_forest"]["title"]).first).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
