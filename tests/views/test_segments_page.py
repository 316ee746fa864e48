"""The Segments page through AppTest: a segment defined on the page selects exactly the rows its
rule states, goes to the sidebar's picker and the URL (and a link reopens it), proposals are
the error tree's segments with their true sizes, bad input and bad links say so, and the
report lists the segments."""
import numpy as np
import pandas as pd
import pytest

from dashboard import report, state
from dashboard.safe_text import md
from explainers.segments import Categories, Range, Segment, propose_segments
from tests.views._app import load_demo, open_page

PAGE = "views/segments.py"


def _texts(at) -> list[str]:
    out = []
    for kind in ("title", "subheader", "markdown", "caption", "error", "warning", "info", "success"):
        out += [e.value for e in getattr(at, kind)]
    return out


def _picker(at):
    return at.sidebar.selectbox(key=state.SEGMENT_ON)


def _url(at, name: str) -> str | None:
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def _define_range(at, feature: str, lo=None, hi=None, name: str = "Older"):
    at.text_input(key="seg_name").set_value(name)
    at.selectbox(key="seg_on").set_value(("feature", feature)).run()
    if lo is not None:
        at.number_input(key=f"seg_lo::{feature}").set_value(lo)
    if hi is not None:
        at.number_input(key=f"seg_hi::{feature}").set_value(hi)
    at.run()
    at.button(key="seg_add_condition").click().run()
    assert not at.exception, at.exception


def test_a_range_segment_reaches_the_sidebar_the_url_and_a_new_session():
    _, ds, _ = load_demo(state.DEFAULT_DEMO)
    want = int(((ds.X.age >= 50) & (ds.X.age < 65)).sum())
    at = open_page(PAGE)
    _define_range(at, "age", 50, 65, name="Fifty to 64")
    # the rule and its size, live, before saving
    assert any(f"Rule: **{md('50 ≤ age < 65')}**" in m.value and f"**{want:,}** of {len(ds.X):,} rows" in m.value
               for m in at.markdown), [m.value for m in at.markdown]
    at.button(key="seg_add").click().run()
    assert not at.exception, at.exception
    assert _picker(at).value == "Fifty to 64"
    assert f"{md('50 ≤ age < 65')}: {want:,} of {len(ds.X):,} rows" in [c.value for c in at.sidebar.caption]
    saved = at.dataframe[-1].value
    assert saved.segment.tolist() == ["Fifty to 64"] and saved.rows.tolist() == [want]
    # the URL keeps it, and a fresh session opened with that link has it back, compared
    token, on = _url(at, "seg"), _url(at, "segon")
    assert Segment.from_token(token) == Segment("Fifty to 64", [Range("age", 50, 65)]) and on == "Fifty to 64"
    fresh = open_page(PAGE, query={"seg": token, "segon": on})
    assert _picker(fresh).value == "Fifty to 64"
    assert f"{md('50 ≤ age < 65')}: {want:,} of {len(ds.X):,} rows" in [c.value for c in fresh.sidebar.caption]
    assert fresh.dataframe[-1].value.rows.tolist() == [want]
    # removing it empties the picker and the URL
    fresh.button(key="seg_remove_0").click().run()
    assert not fresh.exception, fresh.exception
    assert not fresh.sidebar.selectbox or all(s.key != state.SEGMENT_ON for s in fresh.sidebar.selectbox)
    assert _url(fresh, "seg") is None and _url(fresh, "segon") is None
    assert any(c.value.startswith("No segment saved yet.") for c in fresh.caption)


def test_two_conditions_and_categories_select_the_rows_they_state():
    _, ds, _ = load_demo("housing_lgbm")
    X = ds.X
    at = open_page(PAGE, demo="housing_lgbm")
    at.selectbox(key="seg_on").set_value(("feature", "coast")).run()
    assert at.radio(key="seg_how").value == "one of these values"
    box = at.multiselect(key="seg_values::coast")
    assert box.options == ["ocean front", "near coast", "inland", "far inland"]  # the model's order
    box.set_value(["inland", "far inland"]).run()
    at.button(key="seg_add_condition").click().run()
    _define_range(at, "median_income", hi=3.0, name="Poor inland")
    at.button(key="seg_add").click().run()
    assert not at.exception, at.exception
    mask = X.coast.isin(["inland", "far inland"]).to_numpy() & (X.median_income < 3.0).to_numpy()
    seg = Segment("Poor inland", [Categories("coast", {"inland", "far inland"}), Range("median_income", hi=3.0)])
    assert Segment.from_token(_url(at, "seg")) == seg
    np.testing.assert_array_equal(seg.mask(None, X), mask)
    assert at.dataframe[-1].value.rows.tolist() == [int(mask.sum())]
    assert f"{md(seg.describe())}: {int(mask.sum()):,} of {len(X):,} rows" in [
        c.value for c in at.sidebar.caption]


def test_bad_input_says_what_to_fix():
    at = open_page(PAGE)
    at.selectbox(key="seg_on").set_value(("feature", "bmi")).run()
    # nothing given yet: a hint, and no condition to add
    assert any("a lower end, an upper end or both" in c.value for c in at.caption)
    assert at.button(key="seg_add_condition").disabled
    at.number_input(key="seg_lo::bmi").set_value(30.0)
    at.number_input(key="seg_hi::bmi").set_value(20.0).run()
    assert not at.exception, at.exception
    assert any("must be below its upper end" in c.value for c in at.caption), [c.value for c in at.caption]
    assert at.button(key="seg_add_condition").disabled and at.button(key="seg_add").disabled
    # an error band on a regressor: the page says what the error is
    at.selectbox(key="seg_on").set_value(("error",)).run()
    assert any("absolute error" in c.value for c in at.caption)
    at.number_input(key="seg_err_lo").set_value(50.0).run()
    at.button(key="seg_add_condition").click().run()
    at.text_input(key="seg_name").set_value("   ").run()
    at.button(key="seg_add").click().run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == ["Give the segment a name."]


def test_predicted_class_on_a_classifier():
    model, ds, _ = load_demo("wine_gb")
    at = open_page(PAGE, demo="wine_gb")
    at.selectbox(key="seg_on").set_value(("pred",)).run()
    at.multiselect(key="seg_classes").set_value(["class_1"]).run()
    want = int((model.predict(ds.X) == "class_1").sum())
    assert any(f"predicted class = class_1 · with it the segment holds **{want:,}**" in c.value for c in at.caption)
    at.selectbox(key="seg_on").set_value(("error",)).run()
    assert any("1 − the probability the model gives the row's true class" in c.value for c in at.caption)


def test_proposals_are_the_error_tree_segments_with_their_sizes():
    model, ds, _ = load_demo(state.DEFAULT_DEMO)
    at = open_page(PAGE)
    table = at.dataframe[0].value
    props = propose_segments(model, ds.X, ds.y, max_depth=3, min_rows=30)
    assert len(props) >= 2
    assert table.rule.tolist() == [p.rule for p in props]
    for p, rows, err in zip(props, table.rows, table["mean error"]):
        assert rows == p.n_rows == int(p.segment.mask(model, ds.X).sum())
        assert err == pytest.approx(p.mean_error, rel=1e-12)
    assert (table["mean error"] > table["mean error of the rest"]).iloc[0]
    # taking one: it is saved and compared, with the same rows
    at.button(key="seg_propose_add_0").click().run()
    assert not at.exception, at.exception
    assert _picker(at).value == props[0].segment.name
    assert f"{md(props[0].rule)}: {props[0].n_rows:,} of {len(ds.X):,} rows" in [c.value for c in at.sidebar.caption]
    # a shallower tree: other settings, other rules, never an exception
    at.select_slider(key="seg_prop_depth").set_value(1).run()
    assert not at.exception, at.exception
    assert all(r.count(" and ") == 0 for r in at.dataframe[0].value.rule)


def test_an_unreadable_link_says_so():
    good = Segment("Young", [Range("age", hi=30)]).to_token()
    at = open_page(PAGE, query={"seg": f"not*a*segment.{good}", "segon": "Young"})
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    assert any("cannot be read" in w for w in warnings), warnings
    assert _picker(at).value == "Young"  # the readable one is kept
    at = open_page(PAGE, query={"seg": "e30", "segon": "x"})
    assert not at.exception, at.exception
    assert any("cannot be read" in w.value for w in at.warning)


def test_the_report_lists_the_segments():
    _, ds, _ = load_demo(state.DEFAULT_DEMO)
    at = open_page(PAGE)
    _define_range(at, "bmi", lo=30, name="Obese <b>")
    at.button(key="seg_add").click().run()
    at.switch_page("views/report.py").run()
    assert not at.exception, at.exception
    outline = "\n".join(m.value for m in at.markdown)
    assert "**Segments** — 1 segment(s) defined on the Segments page" in outline, outline
    assert "The pages compared Obese" in outline
    assert any("6 section(s)" in c.value for c in at.caption)  # with the model quality section
    at.toggle(key="rep_show").set_value(True).run()
    doc = next(e.proto.srcdoc for e in at.get("iframe") if "Glassbox report" in e.proto.srcdoc)
    section = doc[doc.index("<h2>Segments</h2>"):]
    want = int((ds.X.bmi >= 30).sum())
    assert "Obese &lt;b&gt;" in section and "bmi ≥ 30" in section and f"<td>{want}</td>" in section, section
    assert "Mean error of the rest" in section and "absolute error" in section


def test_report_section_table_and_html():
    sec = report.Section("Segments", "c <i>", table=pd.DataFrame({"Rule": ["x < 1"], "Rows": [3]}, index=["A<b>"]))
    built = report.Built(report.build_report("T", {}, []), (("Model summary", "s"),), (), 0)
    out = report.add_sections(built, [sec])
    assert out.html.endswith("</body></html>") and out.html.count("</body></html>") == 1
    assert "<h2>Segments</h2>" in out.html and "A&lt;b&gt;" in out.html and "x &lt; 1" in out.html
    assert "c &lt;i&gt;" in out.html and out.n_sections == 1 and out.outline[-1] == ("Segments", "c <i>")
    assert report.add_sections(built, []) is built


def test_the_page_speaks_no_python_and_names_its_model(demo_cards):
    from dashboard.messages import PYTHON_NAMES

    at = open_page(PAGE, demo="breast_cancer_xgb")
    texts = _texts(at)
    assert f"Model: **{demo_cards['breast_cancer_xgb']['title']}** (demo)" in [c.value for c in at.caption]
    assert not [t for t in texts if any(n in t for n in PYTHON_NAMES) or "None" in t.split()], texts


def test_without_a_target_proposals_say_how_to_get_one():
    import skops.io as sio
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.normal(size=(120, 3)), columns=["a", "b", "c"])
    model = LinearRegression().fit(X, X.a - X.b)
    at = open_page()
    at.file_uploader(key=state.MODEL_FILE).set_value(("lin.skops", sio.dumps(model), "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("lin.csv", X.to_csv(index=False).encode(), "text/csv"))
    at.run()
    at.button[0].click().run()
    assert not at.exception, at.exception
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert any("Proposals need the target column" in i.value and "Model page" in i.value for i in at.info)
    # no error band without a target; a range still works
    assert at.selectbox(key="seg_on").options == ["a", "b", "c"]  # shown as text
    _define_range(at, "a", lo=0.0, name="Positive a")
    at.button(key="seg_add").click().run()
    assert at.dataframe[-1].value.rows.tolist() == [int((X.a >= 0).sum())]
    assert "mean error" not in at.dataframe[-1].value.columns


def test_errors_spread_evenly_say_so(monkeypatch):
    from dashboard.state import segment_views

    monkeypatch.setattr(segment_views, "propose_segments", lambda *a, **k: [])
    state.result_cache().clear()
    at = open_page(PAGE)
    assert "No part of the data stands out: the model's errors are spread evenly." in [i.value for i in at.info]
    state.result_cache().clear()


def test_proposals_on_a_sample_say_so_and_offer_every_row(monkeypatch):
    """Where the data has more rows than the error tree's sample, the page says how many rows it
    was fitted on and offers every row (issue #31); the demo stands in for a large table."""
    from dashboard.state import segment_views as sv

    monkeypatch.setattr(sv, "SEGMENT_FIT_ROWS", 200)
    at = open_page("views/segments.py")
    captions = [c.value for c in at.caption if "seeded sample of 200 of the 442 rows" in c.value]
    assert captions and "counted on every row" in captions[0]
    toggle = at.toggle(key="seg_prop_all")
    assert toggle.value is False
    toggle.set_value(True).run()
    assert not at.exception and not [c for c in at.caption if "seeded sample" in c.value]
    # the link keeps it: a colleague opening it gets the tree of every row
    assert at.query_params.get("every") in (["true"], "true", ["1"], "1", ["True"], "True"), dict(at.query_params)
