"""Every demo model builds, loads safely, and predicts identically after the round trip."""
import json
import sys

import numpy as np
import pandas as pd
import pytest
import skops.io as sio

from demo_models import build
from explainers import ModelAdapter, load_data, load_model


SKOPS_DEMOS = [s for s in build.DEMOS if s.model_format == "skops"]
NATIVE_DEMOS = [s for s in build.DEMOS if s.model_format != "skops"]


@pytest.mark.parametrize("spec", SKOPS_DEMOS, ids=[s.name for s in SKOPS_DEMOS])
def test_demo_round_trip(demo_cards, spec):
    card = demo_cards[spec.name]
    paths = build.paths(spec.name)
    assert paths["model"] == paths["skops"] and paths["model"].suffix == ".skops"
    loaded = load_model(paths["skops"])  # the safe path: no trusted flag
    ds = load_data(paths["parquet"], model=loaded, target=card["target"])
    assert ds.notices == []
    assert list(ds.X.columns) == [f["name"] for f in card["features"]]
    assert len(ds.X) == card["n_rows"] and 0 < card["n_train"] < card["n_rows"]
    # retrain in memory: deterministic, and the saved model predicts exactly the same
    model, frame, fresh_card = build.train_demo(spec)
    X = frame.drop(columns=card["target"])
    np.testing.assert_array_equal(ds.X.to_numpy(), X.to_numpy())
    a_saved, a_fresh = ModelAdapter(loaded), ModelAdapter(model)
    # retraining is deterministic up to BLAS summation order (linear solvers)
    np.testing.assert_allclose(a_saved.predict(ds.X), a_fresh.predict(X), rtol=1e-10, atol=1e-12)
    # the round trip through a .skops file itself is exact
    again = load_model(sio.dumps(model), filename="m.skops")
    np.testing.assert_array_equal(ModelAdapter(again).predict(X), a_fresh.predict(X))
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    assert fresh_card["metric"]["value"] == pytest.approx(card["metric"]["value"], rel=1e-9)
    assert card["task"] == a_saved.task
    if card["task"] != "regression":
        assert card["classes"] == [str(c) for c in loaded.classes_]


@pytest.mark.parametrize("spec", NATIVE_DEMOS, ids=[s.name for s in NATIVE_DEMOS])
def test_native_demo_round_trip(demo_cards, spec, tmp_path, monkeypatch):
    """An XGBoost / LightGBM demo is the library's own file, read without the library."""
    card = demo_cards[spec.name]
    paths = build.paths(spec.name)
    assert "skops" not in paths
    assert paths["model"].name == card["model_file"] == spec.name + {"xgboost": ".model.json",
                                                                     "lightgbm": ".model.txt"}[spec.model_format]
    # the library is not needed to read or predict: hide it while loading
    monkeypatch.setitem(sys.modules, spec.model_format, None)
    loaded = load_model(paths["model"])  # the safe path: no trusted flag
    assert loaded.library == spec.model_format
    ds = load_data(paths["parquet"], model=loaded, target=card["target"])
    assert ds.notices == []
    assert list(ds.X.columns) == [f["name"] for f in card["features"]]
    assert len(ds.X) == card["n_rows"] and 0 < card["n_train"] < card["n_rows"]
    saved_pred = ModelAdapter(loaded).predict(ds.X)
    monkeypatch.undo()
    # retrain in memory: deterministic, and the library's predictions agree with the file's
    model, frame, fresh_card = build.train_demo(spec)
    X = frame.drop(columns=card["target"])
    assert X.dtypes.equals(ds.X.dtypes)
    assert X.astype(object).equals(ds.X.astype(object))
    own = model.predict_proba(X) if card["task"] != "regression" else model.predict(X)
    np.testing.assert_allclose(saved_pred, own, rtol=1e-6, atol=1e-7)  # float32 inside the libraries
    # saving the retrained model again gives a file that predicts exactly as the built one
    again = tmp_path / paths["model"].name
    build.save_model(model, spec, again)
    np.testing.assert_array_equal(ModelAdapter(load_model(again)).predict(X), saved_pred)
    assert fresh_card["metric"]["value"] == pytest.approx(card["metric"]["value"], rel=1e-9)
    assert fresh_card["model_type"] == card["model_type"] == loaded.ensemble.model_name
    assert card["task"] == ModelAdapter(loaded).task
    if card["task"] != "regression":
        assert card["classes"] == [str(c) for c in loaded.classes_] == ["0", "1"]
    # small enough to keep the first start quick: the work of building, not its seconds, is bounded
    n_trees = len(loaded.ensemble.node_offsets) - 1
    assert 1 <= n_trees <= 200 and loaded.ensemble.node_offsets[-1] <= 200 * 31  # <= 15 leaves a tree
    assert card["n_rows"] <= 2_000 and len(card["features"]) <= 30


def test_lightgbm_demo_has_a_native_categorical_feature(demo_cards):
    card = demo_cards["housing_lgbm"]
    X, y = build.housing_coast_data()
    assert isinstance(X["coast"].dtype, pd.CategoricalDtype)
    assert list(X["coast"].cat.categories) == list(build.COAST)
    assert X["coast"].value_counts().min() >= 100  # every category well populated
    assert card["features"][-1] == {"name": "coast", "dtype": "category", "min": None, "max": None,
                                    "unit": None, "categories": list(build.COAST)}
    model = load_model(build.paths("housing_lgbm")["model"])
    assert model.ensemble.categories[-1] == tuple(build.COAST)
    # the category column is split on (a set of categories per split)
    assert model.importances["split count"][-1] > 0
    assert card["metric"]["value"] > 0.9


def test_cards_describe_models(demo_cards):
    assert set(demo_cards) == set(build.DEMO_NAMES)
    housing = demo_cards["housing_gb"]
    X, _ = build.housing_data()
    r = np.corrcoef(X.latitude, X.longitude)[0, 1]
    assert -0.95 < r < -0.85
    assert housing["metric"]["value"] > 0.8
    for card in demo_cards.values():
        assert card["metric"]["name"].endswith("(held out)")
        assert {"task", "target", "features", "metric", "versions", "model_file"} <= set(card)
        assert build.paths(card["name"])["model"].name == card["model_file"]
    # one XGBoost and one LightGBM demo, saved as the libraries' own files
    formats = {s.name: s.model_format for s in build.DEMOS}
    assert formats["breast_cancer_xgb"] == "xgboost" and formats["housing_lgbm"] == "lightgbm"
    assert {"xgboost", "lightgbm"} <= set(demo_cards["housing_lgbm"]["versions"])


def test_rebuild_when_versions_change(tmp_path, monkeypatch):
    # a small stand-in list of demos keeps this fast
    monkeypatch.setattr(build, "DEMOS", build.DEMOS[4:5])
    monkeypatch.setattr(build, "DEMO_NAMES", build.DEMO_NAMES[4:5])
    out = tmp_path / "built"
    assert not build.is_current(out)
    build.build_all(out)
    assert build.is_current(out)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["versions"]["sklearn"] = "0.0.1"
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert not build.is_current(out)
    build.ensure_built(out)
    assert build.is_current(out)
    (out / "diabetes_linear.skops").unlink()
    assert not build.is_current(out)
    build.ensure_built(out)
    assert (out / "diabetes_linear.skops").is_file()


def test_native_demo_files_count_for_is_current(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "DEMOS", tuple(NATIVE_DEMOS))
    monkeypatch.setattr(build, "DEMO_NAMES", tuple(s.name for s in NATIVE_DEMOS))
    out = tmp_path / "built"
    build.build_all(out)
    assert build.is_current(out)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{s.name}{ext}" for s in NATIVE_DEMOS for ext in (s.model_suffix, ".parquet", ".json")) + ["manifest.json"]
    (out / "housing_lgbm.model.txt").unlink()
    assert not build.is_current(out)
