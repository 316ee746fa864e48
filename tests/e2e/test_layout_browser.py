"""Issue #24 in a real browser: on every page, for the loan pipeline (text column, empty cells)
and for a model of 60 long-named columns, no legend box covers a plot area that holds traces
and no two tick labels overlap, read from the figures' own geometry at 1,400 px wide. The
checker itself is checked on figures built to fail."""
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
import skops.io as sio
from sklearn.ensemble import HistGradientBoostingClassifier

from .conftest import pick_option, settle, upload, wait_idle
from .layout_check import layout_faults
from .test_state_browser import _no_exception, loan_files  # noqa: F401 - the fixture

#: every page, the SHAP page with its global view and the Interactions page with 25 features
PATHS = ["", "quality", "segments", "effects", "interactions?features=25", "attribution?global=1",
         "what-if", "importance-comparison", "compare", "report"]


@pytest.fixture(scope="module")
def wide_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("wide")
    rng = np.random.default_rng(0)
    n = 600
    names = [f"customer_account_measurement_{i:02d}_{'ratio' if i % 3 else 'balance'}_last_quarter" for i in range(60)]
    X = pd.DataFrame(rng.normal(size=(n, 60)) * rng.uniform(1, 1000, 60), columns=names)
    score = X.iloc[:, 0] / X.iloc[:, 0].std() + X.iloc[:, 1] / X.iloc[:, 1].std() * (X.iloc[:, 2] > 0)
    y = np.where(score + rng.normal(0, 0.5, n) > 0.3, "churned", "stayed")
    model = HistGradientBoostingClassifier(max_iter=40, random_state=0).fit(X, y)
    sio.dump(model, d / "wide.skops")
    X.assign(outcome=y).to_csv(d / "wide.csv", index=False)
    return d


def _upload(page, url, model_path, data_path, target):
    page.goto(url)
    wait_idle(page)
    upload(page, "model", model_path)
    upload(page, "data", data_path)
    pick_option(page, "Target column", target, exact=True)
    settle(page)
    page.get_by_role("button", name="Load model and data").click()
    settle(page, 180_000)
    _no_exception(page)
    return page.url.split("?", 1)[1] if "?" in page.url else ""


def _every_page(page, base: str, query: str) -> dict:
    faults = {}
    for path in PATHS:
        sep = "&" if "?" in path else "?"
        page.goto(f"{base}/{path}{sep}{query}")
        wait_idle(page, 300_000)
        _no_exception(page)
        assert page.get_by_text("Page not found").count() == 0, path  # every path is a page
        page.wait_for_timeout(1_500)  # Plotly draws after the script run ends
        found = layout_faults(page)
        if found:
            faults[path] = found[:5]
    return faults


@pytest.mark.parametrize("which", ["loan", "wide"])
def test_no_legend_covers_a_plot_and_no_ticks_overlap(browser, app_url, loan_files, wide_files, which):  # noqa: F811
    context = browser.new_context(viewport={"width": 1400, "height": 2400})
    page = context.new_page()
    if which == "loan":
        query = _upload(page, app_url, loan_files / "loan.skops", loan_files / "loan.csv", "decision")
    else:
        query = _upload(page, app_url, wide_files / "wide.skops", wide_files / "wide.csv", "outcome")
    assert "model=" in query
    try:
        assert _every_page(page, app_url, query) == {}
    finally:
        context.close()


def test_the_checker_finds_what_it_looks_for(page, tmp_path):
    fig = go.Figure([go.Scatter(x=[1, 2, 3], y=[1, 3, 2], name="a"), go.Scatter(x=[1, 2, 3], y=[2, 1, 3], name="b")])
    fig.update_layout(width=600, height=400, legend=dict(x=0.4, y=0.6))
    ticks = go.Figure(go.Bar(x=[f"a very long category name {i}" for i in range(30)], y=list(range(30))))
    ticks.update_layout(width=500, height=400, xaxis=dict(tickangle=0))
    fine = go.Figure(fig).update_layout(legend=dict(orientation="h", x=0, y=-0.3))
    kinds = []
    for n, f in enumerate((fig, ticks, fine)):
        f.write_html(tmp_path / f"{n}.html", include_plotlyjs=True)
        page.goto((tmp_path / f"{n}.html").as_uri())
        page.wait_for_timeout(500)
        kinds.append(sorted({x["kind"] for x in layout_faults(page)}))
    assert kinds == [["legend covers the plot"], ["tick labels overlap"], []]
