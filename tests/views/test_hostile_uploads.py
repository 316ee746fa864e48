"""Crafted model files uploaded through the Model page, as an attacker would (issue #15, items 1-3).

Before the checks these files loaded and then crashed the server (a segmentation fault in
scikit-learn's predict or our kernels) or spun one thread forever. Now the Model page says
what is wrong, keeps the model that was active, and the other pages still answer.
"""
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor

from dashboard import state
from demo_models import build
from tests.test_hostile_models import _data, _is_hgb_nodes, chain_tree, edit_skops, root_left, set_node
from tests.views._app import open_page


@pytest.fixture(scope="module")
def files():
    X, y = _data()
    rf = sio.dumps(RandomForestRegressor(4, max_depth=4, random_state=0).fit(X, y))
    hgb = sio.dumps(HistGradientBoostingRegressor(max_iter=4, random_state=0).fit(X, y))
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"]).assign(y=y)
    return {
        "child index 1e8": (edit_skops(rf, set_node("right_child", 0, 10**8)), "right child 100000000"),
        "feature index 1e8": (edit_skops(hgb, set_node("feature_idx", 0, 10**8, _is_hgb_nodes)),
                              "splits on feature 100000000"),
        "cycle to the root": (edit_skops(rf, set_node("right_child", root_left, 0)), "points back to the root"),
        "stated depth 3, real depth 50": (sio.dumps(chain_tree()), "states max_depth 3"),
    }, frame.to_csv(index=False).encode()


@pytest.mark.parametrize("case", ["child index 1e8", "feature index 1e8", "cycle to the root",
                                  "stated depth 3, real depth 50"])
def test_crafted_tree_upload_is_refused_and_the_server_lives(files, case):
    cases, csv = files
    blob, message = cases[case]
    at = open_page(timeout=120)
    at.file_uploader(key=state.MODEL_FILE).set_value(("crafted.skops", blob, "application/octet-stream"))
    at.file_uploader(key=state.DATA_FILE).set_value(("data.csv", csv, "text/csv"))
    at.run()
    at.selectbox(key=state.TARGET_COL).set_value("y").run()  # the reproduction used a target
    at.button[0].click().run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert any(message in e for e in errors), errors
    assert any("save the model again" in e.lower() for e in errors), errors
    assert at.title[0].value == build.DEMOS[0].title  # the model chosen before stays active
    # the server still serves: the SHAP page explains the active demo model
    at.switch_page("views/shap.py").run()
    assert not at.exception, at.exception
    assert at.get("plotly_chart"), "the SHAP page drew no chart after the refused upload"
