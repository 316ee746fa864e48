"""The Model page in a real browser: open, pick a demo model, upload a model and data."""
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from playwright.sync_api import expect
from sklearn.ensemble import GradientBoostingRegressor

from .conftest import pick_option, settle, upload, uploader, wait_idle


@pytest.fixture(scope="module")
def user_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("upload")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(150, 3)), columns=["speed", "load", "temp"])
    y = 3 * X.speed - X.load ** 2 + rng.normal(0, 0.1, 150)
    model = GradientBoostingRegressor(n_estimators=30, random_state=0).fit(X, y)
    sio.dump(model, d / "engine.skops")
    X.assign(wear=y).to_csv(d / "engine.csv", index=False)
    (d / "broken.csv").write_text("speed,load\n1,2\n")
    return d


def test_pick_demo_and_upload(page, app_url, demo_cards, user_files):
    page.goto(app_url)
    wait_idle(page)
    expect(page.get_by_role("heading", name=demo_cards["diabetes_forest"]["title"])).to_be_visible()
    expect(page.get_by_text("RandomForestRegressor", exact=True).first).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)

    # pick another demo model in the sidebar
    pick_option(page, "Model", demo_cards["wine_gb"]["title"], page.get_by_test_id("stSidebar"))
    expect(page.get_by_role("heading", name=demo_cards["wine_gb"]["title"])).to_be_visible(timeout=30_000)
    expect(page.get_by_text("multiclass", exact=True)).to_be_visible()
    expect(page.get_by_test_id("stSidebar").get_by_role("combobox", name="Class")).to_be_visible()
    settle(page)  # let the rerun finish before touching the uploaders

    # upload a model and a data file that lacks a column: a sentence, and the model stays
    upload(page, "model", user_files / "engine.skops")
    upload(page, "data", user_files / "broken.csv")
    data_up = uploader(page, "data")
    page.get_by_role("button", name="Load model and data").click()
    expect(page.get_by_text("lacks 1 column(s) the model needs: temp")).to_be_visible(timeout=30_000)
    expect(page.get_by_role("heading", name=demo_cards["wine_gb"]["title"])).to_be_visible()

    # now the right data file, with its target column
    data_up.get_by_test_id("stFileChipDeleteBtn").click()
    expect(data_up.get_by_test_id("stFileChipName")).to_have_count(0, timeout=30_000)
    settle(page)
    data_up.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(user_files / "engine.csv"))
    expect(data_up.get_by_test_id("stFileChipName")).to_have_text("engine.csv", timeout=30_000)
    settle(page)
    page.get_by_role("combobox", name="Target column").click()
    page.get_by_role("option", name="wear").click()
    settle(page)
    page.get_by_role("button", name="Load model and data").click()
    expect(page.get_by_role("heading", name="Uploaded: engine.skops")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("R² on the uploaded data")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    page.screenshot(path=str(user_files / "model_page.png"))
