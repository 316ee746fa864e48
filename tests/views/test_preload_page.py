"""dashboard.state.preload: what a fresh server prepares before its first visitor is what the
Model page then uses: the page predicts no row itself (counted calls)."""
import threading

import pytest

from dashboard import state
from dashboard.state import preload
from explainers.model import ModelAdapter
from tests.views._app import open_page


@pytest.mark.parametrize("demo", ["diabetes_forest", "breast_cancer_xgb"])
def test_after_the_preload_the_model_page_predicts_no_row(demo, monkeypatch):
    monkeypatch.setattr(state.context, "default_model", lambda: demo)
    cache = state.result_cache()
    monkeypatch.setattr(cache, "disk", None)
    cache.clear()
    done = []
    thread = threading.Thread(target=lambda: done.append(preload.default_model()), name="glassbox-preload")
    thread.start()
    thread.join(120)
    assert done == [demo]
    calls, summaries = [], []
    real = ModelAdapter.predict
    monkeypatch.setattr(ModelAdapter, "predict", lambda self, X: calls.append(len(X)) or real(self, X))
    import explainers.summary

    real_summary = explainers.summary.feature_summary
    monkeypatch.setattr(explainers.summary, "feature_summary", lambda X: summaries.append(len(X)) or real_summary(X))
    at = open_page(demo=demo, timeout=120)
    assert not at.exception and at.get("plotly_chart")
    n = len(state.context.demo_context(demo).X)
    assert n not in calls, calls  # every row's predictions came from the preload
    assert n not in summaries, summaries  # and its features table (the preload ran outside any Streamlit run)


def test_a_preload_that_fails_leaves_the_page_to_say_why(monkeypatch):
    monkeypatch.setattr(state.context, "default_model", lambda: "diabetes_forest")

    def broken(key):
        raise state.ExplainerError("The data file cannot be read.")

    monkeypatch.setattr(state.context, "context_for", broken)
    assert preload.default_model() is None
