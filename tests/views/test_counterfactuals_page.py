"""What-if page: "What would change the prediction?" finds counterfactuals of the row, shows only
their changed cells, and loads one into the editor, whose prediction then reaches the target."""
from html.parser import HTMLParser

import numpy as np
import pandas as pd

from dashboard import state
from dashboard.state import counterfactuals as cf_state

from ._app import load_demo, open_page


def _find(at):
    go = [b for b in at.button if b.label == "Find counterfactuals"]
    assert go, [b.label for b in at.button]
    go[0].click().run()
    assert not at.exception, at.exception
    return at


def test_find_and_load_reaches_the_target():
    at = _find(open_page("views/whatif.py"))
    model, ds, card = load_demo(state.DEFAULT_DEMO)
    boxes = {w.key: w for w in list(at.number_input) + list(at.selectbox) if w.key}
    lo = next(w.value for k, w in boxes.items() if k.startswith("cf_lo_"))
    hi = next(w.value for k, w in boxes.items() if k.startswith("cf_hi_"))
    table = at.dataframe[-1].value
    assert len(table) >= 1 and {"distance", "features changed", "prediction"} <= set(table.columns)
    # the shown distances are nearest first
    assert np.all(np.diff(table["distance"].to_numpy()) >= -1e-12)
    # every changed cell reads "old → new"; unchanged ones are blank
    feats = [c for c in table.columns if c in set(ds.X.columns)]
    assert feats and all(v == "" or "→" in v for c in feats for v in table[c])
    at.button(key="cf_load_0").click().run()
    assert not at.exception, at.exception
    edited = [m for m in at.metric if m.label.startswith("Edited")][0]
    # the editor now holds the counterfactual: the model's own prediction of those values
    row = int(at.number_input(key="whatif_row").value)
    values = {ds.X.columns[int(w.key.rsplit("_", 1)[1])]: w.value
              for w in list(at.number_input) + list(at.selectbox) if w.key and w.key.startswith("whatif_ed_")}
    assert len(values) == ds.X.shape[1]
    frame = ds.X.iloc[[row]].copy()
    for c, v in values.items():
        frame[c] = v
    pred = float(np.asarray(model.predict(frame[ds.X.columns]))[0])
    assert lo <= pred <= hi
    assert float(edited.value.replace(",", "")) == float(f"{pred:.4g}")


def test_all_fixed_says_so():
    at = open_page("views/whatif.py")
    at.multiselect(key=cf_state.FIXED).set_value(list(at.multiselect(key=cf_state.FIXED).options)).run()
    at = _find(at)
    assert any("fixed" in i.value for i in at.info), [i.value for i in at.info]



def test_the_report_holds_the_rows_counterfactuals():
    """After a search on the What-if page, the report has a part with the same table (same row,
    settings and answers); before one, it has none."""
    at = open_page("views/report.py")
    assert not any("What would change the prediction" in m.value for m in at.markdown)
    at.switch_page("views/whatif.py").run()
    at = _find(at)
    shown = at.dataframe[-1].value
    at.switch_page("views/report.py").run()
    assert not at.exception, at.exception
    assert any("What would change the prediction of row 0" in m.value for m in at.markdown)
    at.toggle(key="rep_show").set_value(True).run()
    doc = at.get("iframe")[0].proto.srcdoc
    part = doc[doc.index("What would change the prediction of row 0"):]
    table = _html_table(part[:part.index("</table>") + 8])
    assert len(table) == len(shown)
    np.testing.assert_allclose(table["distance"].to_numpy(float), shown["distance"].to_numpy(float), rtol=1e-3)
    feats = [c for c in shown.columns if c not in ("#", "distance", "features changed", "prediction")]
    assert feats
    for c in feats:
        assert list(table[c]) == list(shown[c])


def _html_table(text: str) -> pd.DataFrame:
    """The first table of an HTML fragment (header cells, then body rows), by the standard library."""
    rows, cells = [], []

    class Reader(HTMLParser):
        cell = None

        def handle_starttag(self, tag, attrs):
            if tag in ("td", "th"):
                self.cell = ""

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data

        def handle_endtag(self, tag):
            if tag in ("td", "th"):
                cells.append(self.cell.strip())
                self.cell = None
            elif tag == "tr":
                rows.append(list(cells))
                cells.clear()

    Reader().feed(text)
    # (a frame's index name is a header row of its own, blank past the first cell)
    full = [r for r in rows if len(r) == max(map(len, rows)) and any(r[1:])]
    return pd.DataFrame(full[1:], columns=full[0])


def test_a_link_carries_the_ranges_and_the_search_keeps_to_them():
    """A link with a limited feature and its range opens the slider at that range, and every
    counterfactual found keeps that feature inside it (or at the row's own value)."""
    model, ds, card = load_demo(state.DEFAULT_DEMO)
    col = ds.X.columns[2]
    lo, hi = (float(v) for v in ds.X[col].quantile([0.3, 0.9]))
    query = {"model": state.DEFAULT_DEMO, "cf_limit": col, "cf_range_2": f"{lo!r}~{hi!r}", "cf": "1"}
    at = open_page("views/whatif.py", query=query)
    assert not at.exception, at.exception
    slider = at.slider(key="cf_range_2")
    assert tuple(slider.value) == (lo, hi)
    table = at.dataframe[-1].value
    assert len(table) >= 1
    own = float(ds.X[col].iloc[0])
    for cell in table.get(col, []):
        if cell:
            new = float(cell.split("→")[1].replace(",", ""))  # shown to 6 significant digits
            tol = 1e-5 * max(abs(lo), abs(hi))
            assert lo - tol <= new <= hi + tol or abs(new - own) <= tol, (cell, lo, hi)
    # and the page's own link still holds the range
    assert f"{lo!r}~{hi!r}" in (at.query_params["cf_range_2"], *list(at.query_params["cf_range_2"]))


def test_the_link_says_the_search_ran_after_a_page_switch():
    """Find sets the page's link (cf=1), and coming back from another page keeps it there: a
    link copied then opens the same answers."""
    at = _find(open_page("views/whatif.py"))
    assert at.query_params["cf"] in ("1", ["1"])
    at.switch_page("views/report.py").run()
    assert "cf" not in at.query_params  # another page's link holds its own controls
    at.switch_page("views/whatif.py").run()
    assert not at.exception, at.exception
    assert at.query_params["cf"] in ("1", ["1"])
    assert [b for b in at.button if b.key == "cf_load_0"]
