"""Issue #24 in a real browser: the sidebar's Scale follows the user from page to page and
through a reload, every figure names it, and no page asks an outside server for anything
(offline, a request that leaves the machine fails on every load)."""
from urllib.parse import urlparse

from playwright.sync_api import expect

from .conftest import wait_idle
from .test_state_browser import _figure, _nav, _no_exception, _radio, _radio_checked, _until

#: every page's url path
PATHS = ["", "quality", "segments", "effects", "interactions", "attribution", "what-if",
         "importance-comparison", "compare", "report"]


def test_no_page_requests_anything_from_outside(page, app_url):
    outside = []

    def seen(request):
        host = urlparse(request.url).hostname
        if request.url.startswith(("http:", "https:", "ws:", "wss:")) and host not in ("127.0.0.1", "localhost"):
            outside.append(request.url)

    page.on("request", seen)
    for path in PATHS:
        page.goto(f"{app_url}/{path}?model=wine_gb")
        wait_idle(page, 180_000)
        _no_exception(page)
        assert page.get_by_text("Page not found").count() == 0, path  # every path is a page
        page.wait_for_timeout(500)  # late requests (icons, fonts) of the drawn page
    assert outside == []


def test_scale_stays_across_pages_and_reloads_and_names_every_figure(page, app_url):
    page.goto(f"{app_url}/attribution?model=wine_gb")
    wait_idle(page, 180_000)
    expect(_radio_checked(page, "Scale", "probability")).to_be_checked()
    _until(page, lambda p: _assert_has(_figure(p, 0)["title"], "P(", "probability"))
    _radio(page, "Scale", "log-odds")
    _until(page, lambda p: _assert_has(_figure(p, 0)["title"], "margin"))
    assert "scale=log-odds" in page.url
    _nav(page, "PDP / ICE / ALE")
    expect(_radio_checked(page, "Scale", "log-odds")).to_be_checked()
    _until(page, lambda p: _assert_has(p.get_by_test_id("stPlotlyChart").nth(0).locator(".ytitle").first
                                       .text_content(timeout=60_000), "log-odds("))
    page.reload()
    wait_idle(page, 180_000)
    expect(_radio_checked(page, "Scale", "log-odds")).to_be_checked()
    _nav(page, "SHAP")
    expect(_radio_checked(page, "Scale", "log-odds")).to_be_checked()
    _until(page, lambda p: _assert_has(_figure(p, 0)["title"], "margin"))
    _no_exception(page)


def _assert_has(text: str, *words: str) -> None:
    assert any(w in (text or "") for w in words), f"{text!r} names none of {words}"
