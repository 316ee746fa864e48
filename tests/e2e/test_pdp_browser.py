"""The PDP page in a real browser: 1D with ICE and ALE, then the 2D figures (PDP and ALE)."""
import pandas as pd
from playwright.sync_api import expect

from .conftest import pick_option, settle, wait_idle


def test_pdp_1d_then_2d(page, app_url, tmp_path):
    page.goto(f"{app_url}/effects")
    wait_idle(page)
    expect(page.get_by_role("heading", name="How does the prediction move with a feature?")).to_be_visible()
    charts = page.get_by_test_id("stPlotlyChart")
    expect(charts).to_have_count(2, timeout=60_000)  # PDP with ICE, ALE beside it
    expect(charts.nth(0).locator(".js-plotly-plot")).to_be_visible(timeout=30_000)
    # the CSV is built when the button is clicked: it arrives, with the curve and the ICE rows
    with page.expect_download(timeout=60_000) as dl:
        page.get_by_role("button", name="Download the values (CSV)").click()
    path = tmp_path / "pdp.csv"
    dl.value.save_as(path)
    csv = pd.read_csv(path)
    assert list(csv.columns[:3]) == ["age", "partial_dependence", "rows"] and len(csv) == 40
    assert sum(c.startswith("ice_row_") for c in csv.columns) == 442  # an ICE column per data row
    settle(page)
    # after a download Chromium may only focus the select on the first click: typing opens it
    page.get_by_role("combobox", name="Second feature (2D)").click()
    page.keyboard.type("bmi")
    page.get_by_role("option", name="bmi", exact=True).click()
    settle(page)
    expect(charts).to_have_count(2, timeout=60_000)  # 2D PDP, second-order ALE beside it
    for k in range(2):
        expect(charts.nth(k).locator(".js-plotly-plot .heatmaplayer, .js-plotly-plot .hm")).not_to_have_count(
            0, timeout=30_000)
    expect(page.get_by_text("Interaction of age and bmi (second-order ALE)")).to_be_visible()
    expect(page.get_by_text("cells have no data rows behind them")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_switching_between_classifiers_keeps_pages_working(page, app_url, demo_cards):
    """Binary then 3-class model in one session: the class picker follows (a regression test)."""
    page.goto(f"{app_url}/effects?model=breast_cancer_hgb")
    wait_idle(page)
    sidebar = page.get_by_test_id("stSidebar")
    # the positive class (classes_[1]) by default, as scikit-learn counts it
    expect(sidebar.get_by_role("combobox", name="Class")).to_have_value(demo_cards["breast_cancer_hgb"]["classes"][1])
    for name in ("wine_gb", "breast_cancer_logistic", "diabetes_forest"):
        pick_option(page, "Model", demo_cards[name]["title"], sidebar)
        settle(page)
        expect(page.get_by_role("heading", name="How does the prediction move with a feature?")).to_be_visible()
        expect(page.get_by_test_id("stPlotlyChart").first.locator(".js-plotly-plot")).to_be_visible(timeout=60_000)
        expect(page.get_by_test_id("stException")).to_have_count(0)
        expect(page.get_by_text("This app has encountered an error")).to_have_count(0)
