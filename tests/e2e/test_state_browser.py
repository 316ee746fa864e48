"""Issue #22 in a real browser: a control shows the value its chart was computed from after
any page switch and reload, navigation never swaps the model, and a copied link opens the
same view for a colleague (an uploaded model too, through the workspace store).

Every page's main controls are set to values other than their defaults, two other pages are
visited, the page is opened again from the sidebar and then reloaded from its URL (a new
session): each time the boxes must show those values and the charts must be the ones for
them (read from the Plotly figures). The same on an uploaded pipeline with text and empty
cells, opened through its shared link.
"""
from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from .conftest import pick_option, settle, start_server, stop_server, upload, wait_idle

UPLOADED = "__uploaded__"


# ------------------------------------------------------------------ helpers
def _nav(page, title: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title, exact=True).click()
    settle(page)


def _figure(page, n: int = 0, timeout: float = 60_000) -> dict:
    """The n-th Plotly figure on the page: its title, axis titles and traces' names and groups.

    Streamlit replaces a chart's element on a rerun, and the element is there before Plotly
    has drawn into it: the locator is resolved again until an element with a layout answers."""
    plot = page.get_by_test_id("stPlotlyChart").nth(n).locator(".js-plotly-plot")
    deadline = time.monotonic() + timeout / 1000
    while True:
        plot.wait_for(timeout=timeout)
        try:
            got = plot.evaluate("""e => (e.layout && e.data) ? ({
                title: (e.layout.title && e.layout.title.text) || '',
                x: (e.layout.xaxis && e.layout.xaxis.title && e.layout.xaxis.title.text) || '',
                names: e.data.map(d => d.name || ''), groups: e.data.map(d => d.legendgroup || ''),
                xs: (e._fullData || e.data).map(d => d.x ? Array.from(d.x) : [])}) : null""", timeout=5_000)
        except PlaywrightError:  # the element went away under the rerun
            got = None
        if got is not None:
            return got
        assert time.monotonic() < deadline, f"chart {n} was not drawn within {timeout / 1000:.0f} s"
        page.wait_for_timeout(250)


def _until(page, check, timeout: float = 60.0) -> None:
    """Run ``check(page)`` until it passes (the last failure is raised after ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check(page)
        except (AssertionError, PlaywrightError):
            if time.monotonic() > deadline:
                raise
        page.wait_for_timeout(300)


def _no_exception(page) -> None:
    expect(page.get_by_test_id("stException")).to_have_count(0)


def _box(page, label: str):
    return page.get_by_role("combobox", name=label, exact=True)


def _number(page, label: str):
    return page.get_by_label(label, exact=True)


def _type_number(page, label: str, value) -> None:
    box = _number(page, label)
    box.fill(str(value))
    box.press("Enter")
    settle(page)


def _radio(page, group: str, option: str) -> None:
    page.get_by_role("radiogroup", name=group).get_by_text(option, exact=True).click()
    settle(page)


def _radio_checked(page, group: str, option: str):
    return page.get_by_role("radiogroup", name=group).get_by_role("radio", name=option, exact=True)


def _switch(page, label: str):
    return page.get_by_role("switch", name=label, exact=True)


def _slider(page, label: str):
    """(the thumb to focus and move with the arrow keys, the value it shows) of a slider."""
    box = page.get_by_test_id("stSlider").filter(has_text=label)
    return box.get_by_role("slider"), box.get_by_test_id("stSliderThumbValue")


def _away_and_back(page, title: str, away: tuple[str, str], check) -> None:
    """Check the page, visit two others, come back from the sidebar, check; reload the URL, check."""
    check(page)
    for other in away:
        _nav(page, other)
        _no_exception(page)
    _nav(page, title)
    check(page)
    url = page.url
    page.reload()
    wait_idle(page)
    assert page.url == url
    check(page)
    _no_exception(page)


# ------------------------------------------------------- pages, one by one
def _pdp_set(page):
    pick_option(page, "Feature", "bmi", exact=True)
    _type_number(page, "Grid points", 13)
    _switch(page, "ICE curves").uncheck(force=True)
    settle(page)


def _pdp_check(page):
    expect(_box(page, "Feature")).to_have_value("bmi", timeout=60_000)
    expect(_number(page, "Grid points")).to_have_value("13")
    expect(_switch(page, "ICE curves")).not_to_be_checked()
    fig = _figure(page)
    assert "bmi" in fig["title"] and fig["x"] == "bmi", fig
    assert "ice" not in fig["groups"], fig["groups"]  # no ICE lines drawn
    line = next(xs for xs, name in zip(fig["xs"], fig["names"]) if name == "partial dependence")
    assert len(line) == 13  # the grid the box shows


def _shap_set(page):
    _type_number(page, "Row (0 – 441)", 7)
    pick_option(page, "Method", "tree", exact=True)
    _radio(page, "View", "force")
    _switch(page, "Show the global view").check(force=True)
    settle(page)


def _shap_check(page):
    expect(_number(page, "Row (0 – 441)")).to_have_value("7", timeout=60_000)
    expect(_box(page, "Method")).to_have_value("tree")
    expect(_radio_checked(page, "View", "force")).to_be_checked()
    expect(_switch(page, "Show the global view")).to_be_checked()
    assert "Row 7" in _figure(page, 0)["title"]
    expect(page.get_by_text("Method: tree (")).to_be_visible()
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(4, timeout=90_000)  # + beeswarm, mean |SHAP|, dependence


def _whatif_set(page):
    _type_number(page, "Row (0 – 441)", 12)


def _whatif_check(page):
    expect(_number(page, "Row (0 – 441)")).to_have_value("12", timeout=60_000)
    expect(page.get_by_text("Row 12 as in the data")).to_be_visible()
    assert "Row 12" in _figure(page, 0)["title"]


def _importance_set(page):
    _radio(page, "Rank agreement", "kendall")


def _importance_check(page):
    expect(_radio_checked(page, "Rank agreement", "kendall")).to_be_checked(timeout=90_000)
    charts = page.get_by_test_id("stPlotlyChart")
    expect(charts).to_have_count(2, timeout=90_000)  # the bars and the agreement heatmap
    titles = [_figure(page, i)["title"] for i in range(2)]
    assert any("Rank agreement" in t and "τ" in t for t in titles), titles


def _interactions_set(page):
    _radio(page, "Measure", "H statistic")
    pick_option(page, "Feature", "bmi", exact=True)
    pick_option(page, "Interacting with", "s5", exact=True)


def _interactions_check(page):
    expect(_radio_checked(page, "Measure", "H statistic")).to_be_checked(timeout=90_000)
    expect(_box(page, "Feature")).to_have_value("bmi")
    expect(_box(page, "Interacting with")).to_have_value("s5")
    assert "Friedman's H" in _figure(page, 0)["title"], _figure(page, 0)["title"]
    expect(page.get_by_text("Compute anyway")).to_have_count(0)
    dep = _figure(page, 1)
    assert "bmi" in dep["title"] and "s5" in dep["title"], dep


def _segments_set(page):
    thumb, _ = _slider(page, "Conditions per rule")
    thumb.focus()
    page.keyboard.press("ArrowLeft")  # 3 -> 2 conditions per rule
    settle(page)


def _segments_check(page):
    _, shown = _slider(page, "Conditions per rule")
    expect(shown).to_have_text("2", timeout=60_000)
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible()


def _report_set(page):
    page.get_by_role("checkbox", name="Model summary").uncheck(force=True)
    settle(page)


def _report_check(page):
    expect(page.get_by_role("checkbox", name="Model summary")).not_to_be_checked(timeout=90_000)
    expect(page.get_by_text("What the report will contain")).to_be_visible()
    expect(page.get_by_text("Key facts at the top")).to_have_count(0)  # the summary is out of the outline


def _compare_set(page):
    pick_option(page, "Feature", "bmi", exact=True)


def _compare_check(page):
    expect(page.get_by_text("linear regression").first).to_be_visible(timeout=90_000)  # the default partner
    expect(_box(page, "Feature")).to_have_value("bmi", timeout=90_000)
    def pdp_shown(p):  # the charts: scores, predicted against actual, then the PDP (drawn once in view)
        p.get_by_test_id("stPlotlyChart").nth(2).scroll_into_view_if_needed(timeout=5_000)
        _assert_in("Partial dependence on bmi", _figure(p, 2, timeout=5_000)["title"])

    _until(page, pdp_shown, timeout=90)


PAGES = {  # url path: (sidebar title, set, check, two other pages)
    "effects": ("PDP / ICE / ALE", _pdp_set, _pdp_check, ("SHAP", "Quality")),
    "attribution": ("SHAP", _shap_set, _shap_check, ("PDP / ICE / ALE", "Model")),
    "what-if": ("What if?", _whatif_set, _whatif_check, ("SHAP", "Model")),
    "importance-comparison": ("Importance", _importance_set, _importance_check, ("Model", "Segments")),
    "interactions": ("Interactions", _interactions_set, _interactions_check, ("Model", "PDP / ICE / ALE")),
    "segments": ("Segments", _segments_set, _segments_check, ("Model", "Quality")),
    "report": ("Report", _report_set, _report_check, ("Model", "Segments")),
    "compare": ("Compare models", _compare_set, _compare_check, ("Model", "SHAP")),
}


@pytest.mark.parametrize("path", list(PAGES))
def test_controls_keep_their_values_across_pages_and_reloads(page, app_url, demo_cards, path):
    title, set_controls, check, away = PAGES[path]
    page.goto(f"{app_url}/{path}")
    wait_idle(page)
    _no_exception(page)
    set_controls(page)
    _away_and_back(page, title, away, check)
    expect(_box(page, "Model")).to_have_value(demo_cards["diabetes_forest"]["title"])


def test_quality_threshold_class_and_cell_follow_each_other(page, app_url, demo_cards):
    """Binary classifier: the threshold, the sidebar's class and the confusion cell, kept together;
    the cell's box counts its rows at the threshold the matrix is drawn at."""
    page.goto(f"{app_url}/quality?model=breast_cancer_logistic")
    wait_idle(page)
    pick_option(page, "Class", "benign", exact=True)
    thumb, shown = _slider(page, "Threshold")
    for _ in range(60):  # 0.50 -> 0.70, a step at a time: a key pressed during a rerun may be lost
        if shown.inner_text() == "0.70":
            break
        thumb.focus()
        page.keyboard.press("ArrowRight" if float(shown.inner_text()) < 0.70 else "ArrowLeft")
        settle(page)
    cell = _box(page, "Cell of the confusion matrix (or click one)")

    def cell_matches_caption(page):
        assert "threshold 0.7" in _figure(page, 0)["title"]
        label = cell.input_value()
        n = int(re.search(r"\(([\d,]+) rows?", label).group(1).replace(",", ""))
        caption = page.get_by_text(re.compile(r"^\d[\d,]* rows?(,| largest)")).first.inner_text()
        assert int(re.match(r"[\d,]+", caption).group().replace(",", "")) == n, (label, caption)

    def check(page):
        expect(shown).to_have_text("0.70", timeout=60_000)
        expect(_box(page, "Class")).to_have_value("benign")
        _until(page, cell_matches_caption)  # the page's rerun at 0.70 may still be drawing

    _away_and_back(page, "Quality", ("What if?", "SHAP"), check)
    expect(_box(page, "Model")).to_have_value(demo_cards["breast_cancer_logistic"]["title"])


# ------------------------------------------------------------- an upload
@pytest.fixture(scope="module")
def loan_files(tmp_path_factory):
    """A pipeline with a text column and empty cells: imputer + one-hot encoder + random forest."""
    d = tmp_path_factory.mktemp("loan")
    rng = np.random.default_rng(0)
    n = 400
    X = pd.DataFrame({"income": rng.normal(50, 15, n), "debt": rng.normal(20, 8, n),
                      "age": rng.integers(20, 70, n).astype(float), "region": rng.choice(["north", "south", "east"], n)})
    y = np.where(X.income - X.debt + (X.region == "north") * 10 + rng.normal(0, 5, n) > 30, "approved", "denied")
    X.loc[rng.choice(n, 30, replace=False), "debt"] = np.nan
    pre = ColumnTransformer([("num", SimpleImputer(), ["income", "debt", "age"]),
                             ("cat", OneHotEncoder(handle_unknown="ignore"), ["region"])])
    model = make_pipeline(pre, RandomForestClassifier(n_estimators=30, max_depth=5, random_state=0)).fit(X, y)
    sio.dump(model, d / "loan.skops")
    X.assign(decision=y).to_csv(d / "loan.csv", index=False)
    return d


def _upload_loan(page, url: str, files: Path) -> str:
    """Upload the loan pipeline and its data (target: decision); returns the shared link's token."""
    page.goto(url)
    wait_idle(page)
    upload(page, "model", files / "loan.skops")
    upload(page, "data", files / "loan.csv")
    pick_option(page, "Target column", "decision", exact=True)
    settle(page)
    page.get_by_role("button", name="Load model and data").click()
    expect(page.get_by_role("heading", name="Uploaded: loan.skops")).to_be_visible(timeout=60_000)
    wait_idle(page)
    expect(page).to_have_url(re.compile(r"[?&]ws=[A-Za-z0-9_-]{32}"), timeout=30_000)
    return re.search(r"ws=([A-Za-z0-9_-]{32})", page.url).group(1)


@pytest.fixture(scope="module")
def loan_token(browser, app_url, loan_files):
    context = browser.new_context()
    token = _upload_loan(context.new_page(), app_url, loan_files)
    context.close()
    return token


UPLOAD_PAGES = {
    "effects": ("PDP / ICE / ALE", lambda p: pick_option(p, "Feature", "region", exact=True),
                lambda p: (expect(_box(p, "Feature")).to_have_value("region", timeout=60_000),
                           # the box shows the pick at once; the chart follows when the rerun ends
                           _until(p, lambda q: _assert_in("region", _figure(q)["title"])))),
    "attribution": ("SHAP", lambda p: _type_number(p, "Row (0 – 399)", 21),
                    lambda p: (expect(_number(p, "Row (0 – 399)")).to_have_value("21", timeout=60_000),
                               _until(p, lambda q: _assert_in("Row 21", _figure(q)["title"])))),
    "what-if": ("What if?", lambda p: _type_number(p, "Row (0 – 399)", 33),
                lambda p: (expect(_number(p, "Row (0 – 399)")).to_have_value("33", timeout=60_000),
                           expect(p.get_by_text("Row 33 as in the data")).to_be_visible())),
}


def _assert_in(part: str, text: str) -> None:
    assert part in text, (part, text)


@pytest.mark.parametrize("path", list(UPLOAD_PAGES))
def test_an_uploaded_pipeline_keeps_its_controls_and_stays_the_model(page, app_url, loan_token, path):
    title, set_controls, check = UPLOAD_PAGES[path]
    page.goto(f"{app_url}/{path}?model={UPLOADED}&ws={loan_token}")
    wait_idle(page)
    expect(_box(page, "Model")).to_have_value("Uploaded: loan.skops", timeout=60_000)
    set_controls(page)
    _away_and_back(page, title, ("Quality", "Model"), check)
    expect(_box(page, "Model")).to_have_value("Uploaded: loan.skops")
    assert f"ws={loan_token}" in page.url


def test_open_this_row_from_quality_and_back_ten_times(page, app_url, loan_token):
    """The jump to the SHAP page carries its row, never swaps the model, and Quality stays Quality."""
    page.goto(f"{app_url}/quality?model={UPLOADED}&ws={loan_token}")
    wait_idle(page)
    for i in range(10):
        expect(page.get_by_role("heading", name="How good is the model?")).to_be_visible(timeout=60_000)
        rows = _box(page, "Row")
        if i % 2:  # every other time, another row than the first of the list
            rows.click()
            for _ in range(i):
                page.keyboard.press("ArrowDown")
            page.keyboard.press("Enter")
            settle(page)
        row = rows.input_value()
        page.get_by_role("button", name="Open this row on the SHAP page").click()
        expect(page.get_by_role("heading", name="Why this prediction?")).to_be_visible(timeout=60_000)
        expect(_number(page, "Row (0 – 399)")).to_have_value(row, timeout=60_000)
        assert f"Row {row}" in _figure(page, 0)["title"]
        expect(_box(page, "Model")).to_have_value("Uploaded: loan.skops")
        _nav(page, "Quality")
    expect(page.get_by_role("heading", name="How good is the model?")).to_be_visible()
    expect(_box(page, "Model")).to_have_value("Uploaded: loan.skops")


# ---------------------------------------------------------------- sharing
def _workspace_dir() -> Path:
    return Path(os.environ["GLASSBOX_DATA_DIR"]) / "workspaces"


def _key_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _link_refused(page) -> None:
    """One clear message, the default demo shown, and no upload offered in the model picker."""
    alert = page.get_by_test_id("stAlert").filter(has_text="This link does not open a shared workspace")
    expect(alert).to_have_count(1, timeout=60_000)
    box = _box(page, "Model")
    expect(box).not_to_have_value(re.compile("Uploaded"))
    box.click()
    expect(page.get_by_role("option", name=re.compile("Uploaded"))).to_have_count(0)
    page.keyboard.press("Escape")


def test_a_shared_link_opens_the_same_view_and_nothing_else(browser, app_url, loan_files):
    owner = browser.new_context()
    page = owner.new_page()
    token = _upload_loan(page, app_url, loan_files)
    # a segment from the proposals, compared in the sidebar, then row 5 on the SHAP page
    _nav(page, "Segments")
    page.get_by_role("button", name="Add Error segment 1").click()
    settle(page)
    segment = _box(page, "Compare a segment").input_value()
    assert segment and segment != "(all rows)"
    _nav(page, "SHAP")
    _type_number(page, "Row (0 – 399)", 5)
    expect(page).to_have_url(re.compile(r"row=5"))
    link = page.url
    assert f"ws={token}" in link and "seg=" in link and "segon=" in link

    colleague = browser.new_context()  # fresh cookies: another person
    other = colleague.new_page()
    other.goto(link)
    wait_idle(other)
    expect(_box(other, "Model")).to_have_value("Uploaded: loan.skops", timeout=60_000)
    expect(_number(other, "Row (0 – 399)")).to_have_value("5", timeout=60_000)
    expect(_box(other, "Compare a segment")).to_have_value(segment)
    assert "Row 5" in _figure(other, 0)["title"]

    # one character of the id changed: the same message as for any id that opens nothing
    wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
    stranger = browser.new_context().new_page()
    stranger.goto(link.replace(token, wrong))
    wait_idle(stranger)
    _link_refused(stranger)

    # only the uploader may delete it: the colleague gets no such button
    expect(other.get_by_role("button", name="Delete the shared upload")).to_have_count(0)
    expect(page.get_by_role("button", name="Delete the shared upload")).to_have_count(1)
    # ... also after a reload, through the link to manage it the uploader keeps (never left in the URL)
    page.get_by_text("Your link to manage it").click()
    manage = page.get_by_test_id("stCode").inner_text().strip()
    assert f"ws={token}" in manage and "owner=" in manage
    manager = browser.new_context().new_page()
    manager.goto(manage)
    wait_idle(manager)
    expect(_box(manager, "Model")).to_have_value("Uploaded: loan.skops", timeout=60_000)
    expect(manager).not_to_have_url(re.compile("owner="), timeout=30_000)
    # the uploader deletes it: its files leave the disk, the link opens nothing
    files = [_workspace_dir() / "files" / f"{_key_hash(token)}.{part}" for part in ("model", "data")]
    assert all(f.is_file() for f in files)
    manager.get_by_role("button", name="Delete the shared upload").click()
    settle(manager)
    expect(manager.get_by_text("The shared upload is deleted from the server")).to_be_visible(timeout=30_000)
    assert not any(f.exists() for f in files)
    late = browser.new_context().new_page()
    late.goto(link)
    wait_idle(late)
    _link_refused(late)
    # the colleague's session keeps what it had open; nothing else changed for it
    expect(_box(other, "Model")).to_have_value("Uploaded: loan.skops")
    colleague.close()
    owner.close()


def test_an_expired_link_gets_the_same_message(browser, app_url, loan_files):
    from dashboard.workspace import WorkspaceStore

    root = _workspace_dir()
    store = WorkspaceStore(root, max_bytes=10**9, retention_s=30 * 86_400)
    created = store.create((loan_files / "loan.skops").read_bytes(), "loan.skops",
                           (loan_files / "loan.csv").read_bytes(), "loan.csv", "decision")
    with sqlite3.connect(root / "workspaces.sqlite3") as db:  # last opened 31 days ago
        db.execute("UPDATE workspaces SET opened = opened - 31 * 86400, created = created - 31 * 86400 "
                   "WHERE key_hash = ?", (_key_hash(created.token),))
    page = browser.new_context().new_page()
    page.goto(f"{app_url}/attribution?model={UPLOADED}&ws={created.token}&row=3")
    wait_idle(page)
    _link_refused(page)


def test_a_server_killed_while_loading_keeps_a_clean_store(browser, loan_files, tmp_path):
    """Kill the server while an upload is being loaded and kept, start it again on the same folder:
    no half-written workspace is left, and the one shared before opens as it did."""
    env = {"GLASSBOX_DATA_DIR": str(tmp_path)}
    proc, url = start_server(env)
    try:
        page = browser.new_context().new_page()
        token = _upload_loan(page, url, loan_files)
        upload(page, "model", loan_files / "loan.skops")  # the same pair again: a second workspace
        upload(page, "data", loan_files / "loan.csv")
        page.get_by_role("button", name="Load model and data").click()
        page.wait_for_timeout(150)
    finally:
        proc.kill()  # SIGKILL: no clean-up of any kind
        proc.wait()
    proc, url = start_server(env)
    try:
        page = browser.new_context().new_page()
        page.goto(f"{url}/attribution?model={UPLOADED}&ws={token}&row=2")
        wait_idle(page)
        expect(_box(page, "Model")).to_have_value("Uploaded: loan.skops", timeout=60_000)
        expect(_number(page, "Row (0 – 399)")).to_have_value("2")
        root = tmp_path / "workspaces"
        assert not any((root / "tmp").iterdir())
        with sqlite3.connect(root / "workspaces.sqlite3") as db:
            rows = {h for (h,) in db.execute("SELECT key_hash FROM workspaces")}
        on_disk = {p.name.rsplit(".", 1)[0] for p in (root / "files").iterdir()}
        assert _key_hash(token) in rows
        assert on_disk == rows  # every file has its row, every row its files
        for h in rows:
            assert {p.suffix for p in (root / "files").glob(f"{h}.*")} == {".model", ".data"}
    finally:
        stop_server(proc)
