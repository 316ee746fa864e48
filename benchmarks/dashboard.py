"""Time from navigation to the first chart on each page, per demo model, in a real browser.

Playwright drives Debian's Chromium against the real server. For each demo
model the pages are visited by clicking the sidebar, as a user does: "cold" is
the first visit of that page for that model (nothing cached yet), "warm" the
visit after going to the Model page and back. The time runs from the click to
the page's first chart drawn (its first table on the Model page).

    python benchmarks/dashboard.py [--models diabetes_forest,wine_gb] [--repeats 3]

Prints a table of medians; goals: cold under 3 s, warm under 0.5 s.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from demo_models.build import DEMO_NAMES, ensure_built  # noqa: E402
from tests.e2e.conftest import CHROMIUM_ARGS, start_server, stop_server  # noqa: E402

PAGES = [  # sidebar link, heading on the page, what marks "first chart"
    ("PDP / ICE / ALE", "How does the prediction move with a feature?", ".js-plotly-plot .main-svg"),
    ("SHAP", "Why this prediction?", ".js-plotly-plot .main-svg"),
    ("Importance", "Which features matter?", ".js-plotly-plot .main-svg"),
    ("What if?", "What if?", ".js-plotly-plot .main-svg"),
]


def _idle(page, timeout=180_000):
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=timeout)


def _visit(page, link: str, heading: str, marker: str) -> float:
    t0 = time.perf_counter()
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=link).click()
    try:
        page.get_by_role("heading", name=heading).wait_for(timeout=60_000)
    except Exception:
        page.screenshot(path="/tmp/dashbench_fail.png")
        raise
    page.locator(f'[data-testid="stPlotlyChart"] {marker}').first.wait_for(state="visible", timeout=180_000)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(DEMO_NAMES))
    ap.add_argument("--repeats", type=int, default=3, help="warm visits per page (median)")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    cards = {c["name"]: c for c in ensure_built()}
    proc, url = start_server()
    rows = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            t0 = time.perf_counter()
            page.goto(url)
            _idle(page)
            page.get_by_test_id("stDataFrame").first.wait_for(timeout=180_000)
            print(f"first page load of a fresh server (Model page): {time.perf_counter() - t0:.2f} s")
            for name in args.models.split(","):
                if page.get_by_test_id("stSidebarNav").count():  # back to the Model page first
                    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Model").click()
                    _idle(page)
                for attempt in range(3):  # a dropdown click can land before the list opens
                    page.get_by_test_id("stSidebar").get_by_role("combobox", name="Model").click()
                    page.get_by_role("option", name=cards[name]["title"], exact=True).click()
                    try:
                        page.get_by_role("heading", name=cards[name]["title"]).wait_for(timeout=20_000)
                        break
                    except Exception:
                        if attempt == 2:
                            raise
                _idle(page)
                for link, heading, marker in PAGES:
                    cold = _visit(page, link, heading, marker)
                    warm = []
                    for _ in range(args.repeats):
                        page.get_by_test_id("stSidebarNav").get_by_role("link", name="Model").click()
                        page.get_by_role("heading", name=cards[name]["title"]).wait_for(timeout=60_000)
                        _idle(page)
                        warm.append(_visit(page, link, heading, marker))
                    rows.append((name, link, cold, statistics.median(warm)))
                    print(f"{name:<24} {link:<16} cold {cold:6.2f} s   warm {statistics.median(warm):6.2f} s",
                          flush=True)
            browser.close()
    finally:
        stop_server(proc)
    colds = [r[2] for r in rows]
    warms = [r[3] for r in rows]
    print(f"\nmedian cold {statistics.median(colds):.2f} s (max {max(colds):.2f}); "
          f"median warm {statistics.median(warms):.2f} s (max {max(warms):.2f})")
    print(f"pages under goal: cold<3 s {sum(c < 3 for c in colds)}/{len(colds)}, "
          f"warm<0.5 s {sum(w < 0.5 for w in warms)}/{len(warms)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
