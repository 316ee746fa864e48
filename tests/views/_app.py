"""What every page test needs: the app under AppTest, on a page, with a demo model."""
import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard import state
from demo_models import build
from explainers import load_data, load_model

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


def open_page(path: str | None = None, demo: str = state.DEFAULT_DEMO, query: dict | None = None,
              timeout: float = 180) -> AppTest:
    """Run the app (with URL query parameters, if given), pick a demo model, go to a page.

    ``path`` is relative to app.py, e.g. ``"views/pdp.py"``; None stays on the Model page.
    """
    at = AppTest.from_file(APP, default_timeout=timeout)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    if demo != state.DEFAULT_DEMO and not query:
        at.sidebar.selectbox(key=state.ACTIVE).set_value(demo).run()
    if path is not None:
        at.switch_page(path).run()
    assert not at.exception, at.exception
    return at


def compute_anyway(at: AppTest) -> AppTest:
    """Approve a slow view's estimated cost ("Compute anyway"), where the page asks: the
    estimate rests on the model's speed measured now, which a loaded machine slows. For
    tests of what a page shows; the cost gate itself is tested with a fixed speed."""
    go = [b for b in at.button if b.label == "Compute anyway"]
    if go:
        go[0].click().run()
        assert not at.exception, at.exception
    return at


def load_demo(name: str):
    """(model, Dataset, card) of a built demo model, loaded as the dashboard loads it."""
    p = build.paths(name)
    card = json.loads(p["json"].read_text())
    model = load_model(p["model"])  # .skops, or an XGBoost / LightGBM demo's own file
    return model, load_data(p["parquet"], model=model, target=card["target"]), card
