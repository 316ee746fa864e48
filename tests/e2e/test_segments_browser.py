"""Segments in a real browser: take the first proposed segment, see it compared on the
Quality page, and find it again in the URL (so a shared link keeps it)."""
import re
import urllib.parse

from playwright.sync_api import expect

from .conftest import settle, wait_idle


def test_proposed_segment_is_compared_on_the_quality_page(page, app_url):
    page.goto(f"{app_url}/segments")
    wait_idle(page)
    expect(page.get_by_role("heading", name="Where does the model fail most?")).to_be_visible(timeout=60_000)
    add = page.get_by_role("button", name=re.compile(r"^Add Error segment 1"))
    expect(add).to_be_visible(timeout=60_000)
    add.click()
    settle(page)
    # the sidebar compares it, and the URL keeps it
    expect(page.get_by_test_id("stSidebar").get_by_role("combobox", name="Compare a segment")).to_be_visible()
    query = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
    assert query.get("seg") and query.get("segon") == ["Error segment 1"], page.url
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Quality").click()
    wait_idle(page)
    expect(page.get_by_role("heading", name="Segment Error segment 1 against the rest")).to_be_visible(timeout=60_000)
    expect(page.get_by_test_id("stException")).to_have_count(0)
