"""A user's whole path on every demo model, in a real browser.

Pick the model, PDP with ICE, then 2D; SHAP for a row, mask a feature and see
its bar at 0; compare importances; edit a value on the what-if page; export the
report and open the file with its figures rendered. Every step checks that the
chart drew and that no exception shows.
"""
import pytest
from playwright.sync_api import expect

from demo_models.build import DEMO_NAMES

from .conftest import pick_option, settle, wait_idle


def _no_error(page):
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("Page not found")).to_have_count(0)


def _chart(page, n=0, timeout=90_000):
    chart = page.get_by_test_id("stPlotlyChart").nth(n)
    expect(chart.locator(".js-plotly-plot .main-svg").first).to_be_visible(timeout=timeout)
    return chart


def _nav(page, title):
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title).click()
    wait_idle(page, timeout=120_000)


def _pick(page, label, option, scope=None):
    pick_option(page, label, option, scope)
    settle(page)


@pytest.mark.parametrize("name", DEMO_NAMES)
def test_user_path(page, app_url, demo_cards, name, tmp_path):
    card = demo_cards[name]
    features = [f["name"] for f in card["features"]]
    page.goto(app_url)
    wait_idle(page)
    _pick(page, "Model", card["title"], scope=page.get_by_test_id("stSidebar"))
    expect(page.get_by_role("heading", name=card["title"])).to_be_visible(timeout=30_000)
    _no_error(page)

    # PDP with ICE, then 2D (the model stays chosen across pages)
    _nav(page, "PDP / ICE / ALE")
    _chart(page)
    expect(page.get_by_test_id("stSidebar").get_by_role("combobox", name="Model")).to_have_value(card["title"])
    _pick(page, "Second feature (2D)", features[1])
    _chart(page)
    expect(page.get_by_text("cells have no data rows behind them")).to_be_visible(timeout=60_000)
    _no_error(page)

    # SHAP for a row; mask the first feature and see its bar at 0
    _nav(page, "SHAP")
    chart = _chart(page)
    page.get_by_role("combobox", name="Treat as missing").click()
    page.get_by_role("option", name=features[0], exact=True).click()
    page.keyboard.press("Escape")
    expect(chart).to_contain_text(f"{features[0]} = NA (missing)", timeout=90_000)
    expect(chart).to_contain_text("0 (missing)")
    _no_error(page)

    # importance comparison
    _nav(page, "Importance")
    _chart(page, timeout=120_000)
    _no_error(page)

    # what-if: edit a value and see the edited prediction change
    _nav(page, "What if?")
    _chart(page)
    # the What-if page's own input (the SHAP page's mask tag of that name may linger while the page changes)
    box = page.locator(f'input[aria-label="{features[0]}"]')
    expect(box).to_be_visible(timeout=60_000)
    box.fill(str(card["features"][0]["max"]))
    box.press("Enter")
    expect(page.get_by_text("Changed: ")).to_be_visible(timeout=60_000)
    _chart(page, 1)
    _no_error(page)

    # report: download it and open the file with its figures rendered
    _nav(page, "Report")
    with page.expect_download(timeout=120_000) as dl:
        page.get_by_role("button", name="Download the report (HTML)").click()
    path = tmp_path / "report.html"
    dl.value.save_as(path)
    page.goto(path.as_uri())
    expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible(timeout=30_000)
    assert page.locator(".js-plotly-plot").count() >= 3
    expect(page.get_by_role("heading", name=f"Glassbox — {card['title']}")).to_be_visible()
