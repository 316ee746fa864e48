"""Cost before work (issue #14): a view that would take more than about 10 s says how
long, offers fewer rows, and runs only on request. The model's speed is measured on a
probe; here the probe is replaced by a slow figure so that a fast demo model looks slow."""
import importlib

import pytest

from dashboard.state import costs

imp_state = importlib.import_module("dashboard.state.importance")  # the package's `importance` is a function
from tests.views._app import load_demo, open_page


@pytest.fixture(autouse=True)
def own_results(monkeypatch):
    """A result cache of this module's own: what a page computes here under a faked model speed
    (a start of 50 rows, a sample's size) must not be found by a later test of the real one."""
    from dashboard.state import cache

    monkeypatch.setattr(cache, "_RESULTS", cache.ResultCache())


@pytest.fixture
def slow(monkeypatch):
    monkeypatch.setattr(costs, "predict_seconds_per_row", lambda ctx: 0.001)  # 1,000 rows/s
    # permutation of 10 features: each held-out row predicted 10 x repeats + 1 times at 1,000 rows/s
    monkeypatch.setattr(imp_state, "permutation_line",
                        lambda ctx, scoring=None, n_repeats=1: (0.0, (10 * n_repeats + 1) * 0.001))
    monkeypatch.setattr(imp_state, "oob_seconds", lambda ctx: 0.0)
    monkeypatch.setattr(costs, "shap_seconds_per_row", lambda ctx, method, output="auto": 0.01)
    monkeypatch.setattr(costs, "shap_fixed_seconds", lambda ctx, method, output="auto": 0.0)


def _warnings(at):
    return [w.value for w in at.warning]


def test_importance_page_waits_for_a_slow_model(slow):
    at = open_page("views/importance.py")
    # it starts on the rows that fit in about 3 s (at least 50: 50 x 0.051 s + 50 x 0.01 s) and offers 1,000
    assert at.number_input(key="imp_rows").value == 50
    assert any("started on 50 rows" in c.value for c in at.caption)
    assert at.get("plotly_chart") and not at.exception
    more = [b for b in at.button if b.label == "Use 1,000 rows"]
    assert more
    more[0].click().run()
    assert at.number_input(key="imp_rows").value == 1000
    # the demo's held-out rows x (5 repeats x 10 features + 1) predictions at 1,000 rows/s,
    # and its 442 rows of SHAP at 0.01 s a row
    from dashboard.state import DEFAULT_DEMO
    from dashboard.state.context import demo_context
    from dashboard.state.rows import split_rows

    ctx = demo_context(DEFAULT_DEMO)
    held, n = len(split_rows(ctx)[1][0]), len(ctx.X)
    assert (held, n) == (111, 442)

    def cost(m):
        return min(m, held) * 51 * 0.001 + min(m, n) * 0.01

    assert any(f"takes about **{costs.fmt_seconds(cost(1000))}**" in w for w in _warnings(at)), _warnings(at)
    assert not at.get("plotly_chart")  # nothing computed yet
    fits = max(m for m in range(50, 1001, 50) if cost(m) <= 10)
    fewer = [b for b in at.button if b.label.startswith("Use ")]
    assert fits == 400 and fewer and fewer[0].label == "Use 400 rows"  # 5.7 s + 400 x 0.01 s
    fewer[0].click().run()
    assert at.number_input(key="imp_rows").value == 400
    assert not _warnings(at) or not any("takes about" in w for w in _warnings(at))
    assert at.get("plotly_chart") and not at.exception


def test_importance_page_computes_anyway_on_request(slow):
    at = open_page("views/importance.py")
    at.number_input(key="imp_rows").set_value(1000).run()
    go = [b for b in at.button if b.label == "Compute anyway"]
    assert go and not at.get("plotly_chart")
    go[0].click().run()
    assert at.get("plotly_chart") and not at.exception


def test_shap_global_view_estimates_and_offers_fewer_rows(slow):
    at = open_page("views/shap.py")
    at.selectbox(key="shap_method").set_value("kernel").run()
    at.number_input(key="shap_n").set_value(5000).run()  # more than the data has: all 442 rows
    assert not any("Explaining" in w for w in _warnings(at))  # 442 x 0.01 s: under 10 s
    costs.shap_seconds_per_row = lambda ctx, method, output="auto": 0.05  # (undone by the fixture's monkeypatch)
    at.run()
    assert any("Explaining 442 rows" in w and "**22 s**" in w for w in _warnings(at)), _warnings(at)
    fewer = [b for b in at.button if b.label.startswith("Use ")]
    assert fewer and fewer[0].label == "Use 200 rows"  # 10 s / 0.05 s a row
    fewer[0].click().run()
    assert at.number_input(key="shap_n").value == 200 and not at.exception


def _h_predictions(rows) -> int:
    """Brute-force H's predictions on ``rows``, from the definition: one per row, one per row
    and distinct value of each feature, one per row and distinct value pair of each pair."""
    n, cols = len(rows), list(rows.columns)
    pairs = [(a, b) for i, a in enumerate(cols) for b in cols[i + 1:]]
    return n * (1 + sum(rows[c].nunique(dropna=False) for c in cols)
                + sum(len(rows[[a, b]].drop_duplicates()) for a, b in pairs))


def test_interactions_page_waits_for_a_slow_model(monkeypatch):
    """Exact SHAP interactions of a 10-feature model: every coalition (1,024) of every row over
    30 background rows, 0.31 s a row at 10 µs a prediction (130 rows: the exact game's budget);
    and the brute-force H of its 45 pairs and 10 features on 200 rows, counted on the sample's
    distinct values (sex has two: its ICE and pairs cost far less than 200 copies)."""
    from dashboard.state.rows import sample_rows

    monkeypatch.setattr(costs, "predict_seconds_per_row", lambda ctx: 1e-5)
    at = open_page("views/interactions.py", demo="diabetes_linear")
    model, data, _ = load_demo("diabetes_linear")

    class Ctx:  # what sample_rows reads
        X = data.X

    exact_s = 130 * 1024 * 30 * 1e-5

    def cost(n):
        return _h_predictions(sample_rows(Ctx, n)) * 1e-5 + min(n, 130) * 1024 * 30 * 1e-5

    expected = cost(200)
    assert expected == pytest.approx(exact_s + 17.192, abs=1e-9)  # fewer than 55 x 200² = 22 s of H
    # the page starts on the rows that fit in about 3 s (in steps of 10) and offers the 200 of exact SHAP
    start = max(n for n in range(2, 201) if cost(n) <= 3.0) // 10 * 10
    assert at.number_input(key="ia_rows").value == max(20, start)
    assert any(f"Started on {max(20, start)} rows" in c.value for c in at.caption)
    assert [b for b in at.button if b.label == "Use 200 rows"] and at.get("plotly_chart")
    at.number_input(key="ia_rows").set_value(200).run()
    assert any(f"takes about **{round(expected)} s**" in w for w in _warnings(at)), _warnings(at)
    assert not at.get("plotly_chart")
    fits = max(n for n in range(2, 201) if cost(n) <= 10.0)
    fewer = [b for b in at.button if b.label.startswith("Use ")]
    assert fewer and fewer[0].label == f"Use {max(20, fits)} rows"
    fewer[0].click().run()
    assert at.number_input(key="ia_rows").value == max(20, fits)
    assert at.get("plotly_chart") and not at.exception
