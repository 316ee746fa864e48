"""What-if page in a real browser: find the counterfactuals of a row, load one into the
editor, and see the edited row's prediction reach the target class; the answer's values
are those the editor shows, and the model's own predict agrees.
"""
import re

import numpy as np
import pandas as pd
from playwright.sync_api import expect

from tests.views._app import load_demo

from .conftest import pick_option, settle, wait_idle

DEMO = "breast_cancer_hgb"


def test_find_load_and_the_prediction_flips(page, app_url, demo_cards):
    card = demo_cards[DEMO]
    model, ds, _ = load_demo(DEMO)
    page.goto(app_url)
    wait_idle(page)
    pick_option(page, "Model", card["title"], scope=page.get_by_test_id("stSidebar"))
    settle(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="What if?").click()
    wait_idle(page, timeout=120_000)
    row = int(page.get_by_role("spinbutton", name=re.compile(r"^Row \(0")).input_value())
    before = str(np.asarray(model.predict(ds.X.iloc[[row]]))[0])

    page.get_by_role("button", name="Find counterfactuals").click()
    load = page.get_by_role("button", name="Load #1 into the editor")
    expect(load).to_be_visible(timeout=120_000)
    reach = page.get_by_text(re.compile(r"^To reach ")).first
    target = re.match(r"To reach class '(.+?)':", reach.inner_text()).group(1)
    classes = [str(c) for c in model.classes_]
    assert target in classes and target != before, (target, before, classes)
    # how sure the first answer is: proven nearest, or the best found in the time limit
    expect(page.get_by_text(re.compile(r"The first is optimal|Best found in")).first).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)

    wait_idle(page, timeout=120_000)  # the page has finished drawing the answers: the click is not lost
    load.click()
    settle(page, timeout=120_000)
    expect(page.get_by_text("Changed: ")).to_be_visible(timeout=60_000)
    # the editor's boxes now hold the counterfactual; the model's own predict of them is the target
    values = {}
    for col in ds.X.columns:
        box = page.locator(f'input[aria-label="{col}"]').first
        values[col] = float(box.input_value())
    frame = pd.DataFrame([values])[list(ds.X.columns)]
    assert str(np.asarray(model.predict(frame))[0]) == target
    # and the page says so: the edited row's verdict is the target class
    verdict = page.get_by_text(re.compile(r"^(Verdict at threshold|Predicted class of the edited row)")).first
    expect(verdict).to_contain_text(target, timeout=60_000)
    expect(page.get_by_test_id("stException")).to_have_count(0)
