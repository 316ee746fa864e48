"""What-if and report pages, and query parameters, through AppTest."""

import pytest

from dashboard import report, state
from explainers import ModelAdapter
from tests.plotly_json import array, figures
from tests.views._app import load_demo, open_page

_page = open_page


def _model(name, card):
    model, ds, _ = load_demo(name)
    return model, ds.X


def test_whatif_edit_moves_the_prediction(demo_cards):
    name = state.DEFAULT_DEMO
    at = _page("views/whatif.py")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Original prediction"] == metrics["Edited prediction"]
    model, X = _model(name, demo_cards[name])
    next(w for w in at.number_input if w.label == "bmi").set_value(35.0).run()
    assert not at.exception
    edited = X.iloc[[0]].copy()
    edited["bmi"] = 35.0
    want = ModelAdapter(model).predict(edited)[0]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Edited prediction"] == f"{want:.4g}"
    assert metrics["Features changed"] == "1"
    # the edited waterfall ends at the edited prediction
    after = figures(at)[1]["data"][0]
    total = float(array(after["base"])[0]) + array(after["x"]).astype(float).sum()
    assert total == pytest.approx(want, rel=1e-9)
    # masking a feature there gives it a 0 bar
    at.multiselect(key="whatif_mask").set_value(["bmi"]).run()
    labels = list(figures(at)[1]["layout"]["yaxis"]["ticktext"])
    j = labels.index("bmi = NA (missing)")
    assert float(array(figures(at)[1]["data"][0]["x"])[j]) == 0.0


def test_whatif_bounds_come_from_the_data(demo_cards):
    at = _page("views/whatif.py", "wine_gb")
    box = next(w for w in at.number_input if w.label == "alcohol")
    feat = {f["name"]: f for f in demo_cards["wine_gb"]["features"]}["alcohol"]
    assert box.min == pytest.approx(feat["min"]) and box.max == pytest.approx(feat["max"])


def test_report_page_offers_a_self_contained_file():
    at = _page("views/report.py")
    buttons = at.get("download_button")
    assert len(buttons) == 1
    assert any("5 section(s)" in c.value for c in at.caption)  # features, quality, PDP, SHAP, importance


def test_build_report_embeds_plotly_once():
    import plotly.graph_objects as go

    fig = go.Figure(go.Bar(x=[1, 2], y=[3, 4]))
    doc = report.build_report("T <x>", {"Model": "m"}, [report.Section("A", "c", figure=fig),
                                                     report.Section("B", figure=fig)])
    assert doc.startswith("<!DOCTYPE html>") and "T &lt;x&gt;" in doc
    assert doc.count("Plotly.newPlot") == 2
    assert doc.count("plotly.js v") == 1  # the library itself, once


def test_query_parameters_select_model_feature_and_row():
    at = _page("views/pdp.py", query={"model": "housing_gb", "feature": "latitude", "feature2": "longitude"})
    assert at.sidebar.selectbox(key=state.ACTIVE).value == "housing_gb"
    assert at.selectbox(key="pdp_f1").value == "latitude"
    assert at.selectbox(key="pdp_f2").value == "longitude"
    assert at.query_params["model"] == ["housing_gb"] or at.query_params["model"] == "housing_gb"
    # a stale link never breaks the page
    at = _page("views/pdp.py", query={"model": "nope", "feature": "not_a_column", "row": "99999"})
    assert at.sidebar.selectbox(key=state.ACTIVE).value == state.DEFAULT_DEMO
    assert at.selectbox(key="pdp_f1").value == "age"


def test_report_tables_write_numbers_as_the_pages_do():
    """No scientific notation for values of the data's size, and an empty cell blank (not 'NaN')."""
    import numpy as np
    import pandas as pd

    table = pd.DataFrame({"min": [338_400.0, 0.5], "max": [np.nan, 1_250.25]}, index=["price", "rate"])
    html = report.build_report("t", {}, [report.Section("Features", table=table)])
    from dashboard.figures.style import fmt_number

    cells = [fmt_number(v, digits=6) for v in (338_400.0, 0.5, 1_250.25)]
    assert cells[0] == "338,400" and all(f"<td>{c}</td>" in html for c in cells), cells
    assert "e+05" not in html and "<td>NaN</td>" not in html and "<td></td>" in html
