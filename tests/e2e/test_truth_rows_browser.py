"""Rows the pages show, in a real browser (issue #16): the what-if editors follow their row.

Streamlit's browser keeps a widget's value by the widget's identity: an editor
that keeps its identity across rows shows the previous row's value while the
server starts from the new row, and the next edit sends the stale values back.
Only a real browser shows this (AppTest has no browser-side widget state).
"""
import re

from playwright.sync_api import expect

from tests.views._app import load_demo

from .conftest import pick_option, settle, wait_idle


def _set(page, label, value):
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    settle(page)


def _changed(page):
    return page.get_by_test_id("stCaptionContainer").filter(has_text=re.compile("^Changed: "))


def test_whatif_editors_follow_the_row(page, app_url, demo_cards):
    _, ds, _ = load_demo("diabetes_forest")
    X = ds.X
    a, b = 3, 7
    assert X.bmi[a] != X.bmi[b] and X.age[a] != X.age[b]
    page.goto(f"{app_url}/what-if")
    wait_idle(page)
    row_box = page.get_by_label(re.compile(r"^Row \(0"))
    row_box.fill(str(a))
    row_box.press("Enter")
    settle(page)
    expect(page.get_by_label("bmi", exact=True)).to_have_value(f"{X.bmi[a]:g}", timeout=60_000)
    # row A: one edit
    _set(page, "bmi", 30)
    expect(_changed(page)).to_have_text(f"Changed: bmi: {X.bmi[a]:g} → 30", timeout=60_000)
    # row B: the editors show B's values, and nothing is changed yet
    row_box.fill(str(b))
    row_box.press("Enter")
    settle(page)
    for col in ("bmi", "age", "bp"):
        expect(page.get_by_label(col, exact=True)).to_have_value(f"{X[col][b]:g}", timeout=60_000)
    expect(_changed(page)).to_have_count(0)
    # one edit of B: exactly that field is named, with B's old value
    _set(page, "age", 50)
    expect(_changed(page)).to_have_text(f"Changed: age: {X.age[b]:g} → 50", timeout=60_000)
    expect(page.get_by_test_id("stMetric").filter(has_text="Features changed")).to_contain_text("1")
    # the page names the row it shows
    expect(page.get_by_text(f"Row {b} as in the data", exact=True)).to_be_visible()
    expect(page.get_by_text(f"Row {b} with your edits", exact=True)).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_report_preview_before_the_download(page, app_url):
    page.goto(f"{app_url}/report")
    wait_idle(page, timeout=120_000)
    expect(page.get_by_role("heading", name="What the report will contain")).to_be_visible(timeout=120_000)
    for heading in ("Model summary", "Partial dependence and ICE: age", "Why row 0 gets its prediction"):
        expect(page.get_by_role("strong").filter(has_text=heading).first).to_be_visible()
    expect(page.get_by_role("button", name="Download the report (HTML)")).to_be_visible()
    # the file itself, shown on the page with its figures drawn
    page.get_by_text("Show the report itself here").click()
    frame = page.frame_locator("iframe").first
    expect(frame.get_by_role("heading", name="Why row 0 gets its prediction")).to_be_visible(timeout=60_000)
    expect(frame.locator(".js-plotly-plot .main-svg").first).to_be_visible(timeout=60_000)
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_whatif_row_picker_follows_the_model(page, app_url, demo_cards):
    """Row 300 of one model, then a model with 178 rows: the box and the page both show row 0."""
    page.goto(f"{app_url}/what-if")
    wait_idle(page)
    row_box = page.get_by_label(re.compile(r"^Row \(0"))
    row_box.fill("300")
    row_box.press("Enter")
    settle(page)
    expect(page.get_by_text("Row 300 as in the data", exact=True)).to_be_visible(timeout=60_000)
    pick_option(page, "Model", demo_cards["wine_gb"]["title"], page.get_by_test_id("stSidebar"))
    settle(page)
    expect(page.get_by_text("Row 0 as in the data", exact=True)).to_be_visible(timeout=60_000)
    expect(page.get_by_label(re.compile(r"^Row \(0 – 177\)"))).to_have_value("0")
    expect(page.get_by_test_id("stException")).to_have_count(0)
