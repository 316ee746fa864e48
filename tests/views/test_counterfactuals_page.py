"""What-if page: "What would change the prediction?" finds counterfactuals of the row, shows only
their changed cells, and loads one into the editor, whose prediction then reaches the target."""
import numpy as np

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
