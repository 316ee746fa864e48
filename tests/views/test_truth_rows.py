"""The rows the pages show and what they say about them (issue #16), through AppTest.

- the what-if editors keep a blank cell blank, and count only the user's edits;
- the what-if page and the report name the row they show;
- the report says what it will hold before the download, with captions that match
  its figures, and why any ticked part is left out;
- the SHAP sample's CSV numbers rows as the file does;
- 1-row and 2-row data files keep the PDP, what-if and report pages working.

The editors following their row in a browser (widget values kept by the browser)
are checked in tests/e2e/test_truth_rows_browser.py.
"""
import io
import re

import numpy as np
import pandas as pd
import pytest
import skops.io as sio

from dashboard import state
from dashboard.safe_text import md
from tests.plotly_json import figures
from tests.views._app import load_demo, open_page

TARGET = "survived"


@pytest.fixture(scope="module")
def passengers():
    """(model bytes, data with the target): blanks in a number and a text column, a text feature."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    n = 300
    X = pd.DataFrame({
        "age": rng.uniform(1, 80, n).round(),
        "pclass": rng.integers(1, 4, n).astype(float),
        "fare": rng.gamma(2, 20, n).round(2),
        "sex": rng.choice(["male", "female"], n),
        "embarked": rng.choice(["C", "Q", "S"], n).astype(object),
    })
    X.loc[rng.choice(n, 40, replace=False), "age"] = np.nan
    X.loc[[1, 5, 9], "embarked"] = np.nan
    X.loc[[1, 5], "age"] = np.nan
    y = np.where((X.sex == "female") | (X.age.fillna(30) < 10), "yes", "no")
    pre = ColumnTransformer([("c", OneHotEncoder(handle_unknown="ignore"), ["sex", "embarked"])],
                            remainder="passthrough")
    model = make_pipeline(pre, HistGradientBoostingClassifier(max_iter=30, random_state=0)).fit(X, y)
    return sio.dumps(model), X.assign(**{TARGET: y})


def _upload(data: pd.DataFrame, model_bytes: bytes, target: str | None = TARGET, page: str | None = None):
    at = open_page(timeout=180)
    at.file_uploader(key=state.MODEL_FILE).set_value(("passengers.skops", model_bytes, "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("passengers.csv", data.to_csv(index=False).encode(), "text/csv"))
    at.run()
    at.selectbox(key=state.TARGET_COL).set_value(target or state.NO_TARGET).run()
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    if page:
        at.switch_page(page).run()
        assert not at.exception, at.exception
    return at


def _editor(at, name):
    """The what-if editor of one feature, found by its label (its key names the model and row)."""
    found = [w for w in list(at.number_input) + list(at.selectbox) if w.label == md(name)]
    assert len(found) == 1, (name, [w.label for w in found])
    return found[0]


def _metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def _changed(at) -> list[str]:
    return [c.value for c in at.caption if c.value.startswith("Changed: ")]


def _texts(at) -> str:
    return "\n".join([e.value for kind in ("title", "subheader", "markdown", "caption", "info") for e in getattr(at, kind)]
                     + [e.label for e in at.expander] + [c.label for c in at.checkbox])


# ------------------------------------------------------------------ what-if
def test_whatif_blank_cell_stays_blank(passengers):
    model_bytes, data = passengers
    at = _upload(data, model_bytes, page="views/whatif.py")
    at.number_input(key="whatif_row").set_value(1).run()
    row = data.iloc[1]
    assert np.isnan(row.age) and pd.isna(row.embarked)
    # the blanks stay blank: nothing is changed, both predictions are the same
    assert _editor(at, "age").value is None
    assert _editor(at, "embarked").value is None
    assert _editor(at, "fare").value == pytest.approx(row.fare)
    m = _metrics(at)
    assert m["Features changed"] == "0", m
    assert [v for k, v in m.items() if k.startswith("Original ")] == [v for k, v in m.items() if k.startswith("Edited ")]
    assert _changed(at) == []
    # one edit is one change, named with the row's value
    _editor(at, "fare").set_value(99.0).run()
    assert not at.exception, at.exception
    assert _changed(at) == [f"Changed: fare: {row.fare:g} → 99"]
    assert _metrics(at)["Features changed"] == "1"
    # a value typed into a blank is a change from "blank"
    _editor(at, "age").set_value(30.0).run()
    assert _changed(at) == [f"Changed: age: blank → 30, fare: {row.fare:g} → 99"]
    # and clearing it makes it blank again
    _editor(at, "age").set_value(None).run()
    assert _changed(at) == [f"Changed: fare: {row.fare:g} → 99"]


def test_whatif_switching_rows_starts_from_the_new_row(passengers):
    """Server side of the browser test: after an edit on row A, row B's editors hold B's values."""
    model_bytes, data = passengers
    a, b = np.flatnonzero(data.notna().all(axis=1).to_numpy())[[3, 7]]
    at = _upload(data, model_bytes, page="views/whatif.py")
    at.number_input(key="whatif_row").set_value(int(a)).run()
    _editor(at, "fare").set_value(99.0).run()
    at.number_input(key="whatif_row").set_value(int(b)).run()
    b = data.iloc[b]
    assert _editor(at, "fare").value == pytest.approx(b.fare)
    assert _editor(at, "age").value == pytest.approx(b.age)
    assert _changed(at) == []
    _editor(at, "pclass").set_value(2.0 if b.pclass != 2 else 1.0).run()
    assert _changed(at) == [f"Changed: pclass: {b.pclass:g} → {2 if b.pclass != 2 else 1}"]


def test_whatif_names_the_row_it_shows():
    at = open_page("views/whatif.py")
    at.number_input(key="whatif_row").set_value(123).run()
    assert not at.exception, at.exception
    text = _texts(at)
    assert "Row 123 as in the data" in text and "Row 123 with your edits" in text
    assert "Feature values of row 123" in text
    assert any(m.value.startswith("**Row 123, edited: base ") for m in at.markdown)
    assert "Row 0" not in text and "row 0" not in text
    before, after = (f["layout"]["title"]["text"] for f in figures(at))
    assert before.startswith("Row 123:") and after.startswith("Row 123, edited:"), (before, after)


# ------------------------------------------------------------------- report
def _report_html(downloads) -> str:
    return downloads[next(n for n in downloads if n and n.startswith("glassbox_report_"))].decode()


def test_report_names_the_row_the_shap_page_shows(downloads):
    at = open_page("views/shap.py")
    at.radio(key="shap_pick").set_value("highest prediction").run()
    options = at.selectbox(key="shap_row_sorted").options
    at.selectbox(key="shap_row_sorted").select_index(2).run()
    shown = int(re.match(r"row (\d+):", options[2]).group(1))
    assert shown != 0
    at.switch_page("views/report.py").run()
    assert not at.exception, at.exception
    assert at.checkbox(key="rep_shap").label == f"SHAP waterfall of row {shown}"
    assert f"Why row {shown} gets its prediction" in _texts(at)
    doc = _report_html(downloads)
    assert f"Why row {shown} gets its prediction" in doc and f'"text":"Row {shown}:' in doc
    assert '"text":"Row 0:' not in doc
    # picked by index: that row
    at.switch_page("views/shap.py").run()
    at.radio(key="shap_pick").set_value("index").run()
    at.number_input(key="shap_row").set_value(57).run()
    at.switch_page("views/report.py").run()
    assert at.checkbox(key="rep_shap").label == "SHAP waterfall of row 57"
    assert "Why row 57 gets its prediction" in _texts(at)


def test_report_previews_its_sections_before_the_download():
    at = open_page("views/report.py")
    assert not at.exception, at.exception
    assert [s.value for s in at.subheader] == ["What the report will contain"]
    preview = "\n".join(m.value for m in at.markdown)
    for heading in ("Model summary", "Features", "Partial dependence and ICE: age", "Why row 0 gets its prediction",
                    "Variable importance, compared"):
        assert f"**{md(heading)}**" in preview, (heading, preview)
    assert "The bold line is the average prediction" in preview and "Each thin line is one row" in preview
    assert not at.info
    # unticking a part takes it out of the preview
    at.checkbox(key="rep_pdp").uncheck().run()
    assert "Partial dependence" not in "\n".join(m.value for m in at.markdown)
    assert any("4 section(s)" in c.value for c in at.caption)


def test_report_caption_of_a_categorical_pdp_says_level_marks(passengers):
    model_bytes, data = passengers
    at = _upload(data, model_bytes, page="views/pdp.py")
    at.selectbox(key="pdp_f1").set_value("sex").run()
    assert not at.exception, at.exception
    at.switch_page("views/report.py").run()
    assert not at.exception, at.exception
    line = next(m.value for m in at.markdown if "Partial dependence and ICE: sex" in m.value)
    assert "Each bold mark is the average prediction" in line and "Each dot is one row" in line
    assert "thin line" not in line and "bold line" not in line


def test_report_says_why_importance_is_left_out(passengers):
    model_bytes, data = passengers
    at = _upload(data.drop(columns=TARGET), model_bytes, target=None, page="views/report.py")
    assert at.checkbox(key="rep_imp").value
    notes = [i.value for i in at.info]
    # mean |SHAP| needs no target: MDI and it are compared, and the permutation is named as left out
    assert any(n.startswith("Left out of the importance comparison") and "Permutation importance needs the target"
               in n for n in notes), [n[:80] for n in notes]
    preview = "\n".join(m.value for m in at.markdown)
    assert "**Variable importance, compared**" in preview and "Mean |SHAP|" in preview
    # without mean |SHAP| (switched off on the Importance page) MDI stands alone, named as it is
    at.session_state["v::imp_shap"] = False  # the store the Importance page's switch writes
    at.run()
    notes = [i.value for i in at.info]
    assert any(n.startswith("Importance comparison needs the target column: pick it on the Model page")
               for n in notes), [n[:80] for n in notes]
    preview = "\n".join(m.value for m in at.markdown)
    assert "Variable importance, compared" not in preview and "**Variable importance: MDI**" in preview


def test_report_keeps_the_other_parts_when_one_cannot_be_drawn(passengers):
    """The methods cannot be compared (MDI of a pipeline): each is shown alone, and the page says why."""
    model_bytes, data = passengers
    at = _upload(data, model_bytes, page="views/report.py")
    assert not at.error, [e.value for e in at.error]
    notes = " ".join(i.value for i in at.info)
    preview = "\n".join(m.value for m in at.markdown)
    if "Variable importance, compared" not in preview:
        assert "cannot be compared side by side" in notes or "alone" in notes, notes
    assert "Why row 0 gets its prediction" in preview and "Partial dependence and ICE: age" in preview


# --------------------------------------------------------------- SHAP sample
def test_shap_sample_csv_numbers_rows_as_the_file_does(downloads):
    files = downloads
    at = open_page("views/shap.py")
    at.number_input(key="shap_n").set_value(40).run()
    at.toggle(key="shap_global").set_value(True).run()
    assert not at.exception, at.exception
    name = next(n for n in files if n and n.endswith("_sample.csv"))
    csv = pd.read_csv(io.BytesIO(files[name]))
    _, ds, _ = load_demo(state.DEFAULT_DEMO)
    rows = sorted(csv.row.unique())
    assert len(rows) == 40 and 0 <= rows[0] and rows[-1] < len(ds.X)
    assert rows != list(range(40))  # positions in the file, not 0..39 of the sample
    # each row's feature values are that row's of the file
    for r, group in csv.groupby("row"):
        got = group.set_index("feature").feature_value.astype(float)
        np.testing.assert_allclose(got[ds.X.columns].to_numpy(), ds.X.iloc[r].to_numpy(dtype=float))


# ------------------------------------------------------------- small data
@pytest.mark.parametrize("n_rows", [1, 2])
def test_small_data_keeps_the_pages_working(passengers, n_rows):
    model_bytes, data = passengers
    at = _upload(data.iloc[[0, 2][:n_rows]], model_bytes, page="views/pdp.py")
    if n_rows == 1:
        assert any("need at least 2 rows" in i.value for i in at.info), [i.value for i in at.info]
    else:
        rows = at.number_input(key="pdp_rows")
        assert rows.value == 2 and rows.max == 2
        assert at.get("plotly_chart") or at.error  # a figure, or a sentence saying what it needs
    at.switch_page("views/whatif.py").run()
    assert not at.exception, at.exception
    assert at.number_input(key="whatif_row").max == n_rows - 1
    assert _metrics(at)["Features changed"] == "0"
    at.switch_page("views/report.py").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    preview = "\n".join(m.value for m in at.markdown)
    assert "Why row 0 gets its prediction" in preview
    if n_rows == 1:  # every feature is constant: the PDP part is left out, and the page says why
        assert any(i.value.startswith("Partial dependence of age left out:") for i in at.info)


def test_one_feature_data_keeps_the_pages_working():
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(3)
    X = pd.DataFrame({"x": rng.normal(size=80)})
    model = RandomForestRegressor(20, random_state=0).fit(X, 2 * X.x)
    at = _upload(X.assign(t=2 * X.x).head(3), sio.dumps(model), target="t", page="views/pdp.py")
    assert at.selectbox(key="pdp_f2").options == ["(none)"]
    for page in ("views/whatif.py", "views/report.py"):
        at.switch_page(page).run()
        assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
