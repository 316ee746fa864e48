"""Every demo model builds, loads safely, and predicts identically after the round trip."""
import json

import numpy as np
import pytest
import skops.io as sio

from demo_models import build
from explainers import ModelAdapter, load_data, load_model


@pytest.mark.parametrize("spec", build.DEMOS, ids=build.DEMO_NAMES)
def test_demo_round_trip(demo_cards, spec):
    card = demo_cards[spec.name]
    paths = build.paths(spec.name)
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


def test_cards_describe_models(demo_cards):
    assert set(demo_cards) == set(build.DEMO_NAMES)
    housing = demo_cards["housing_gb"]
    X, _ = build.housing_data()
    r = np.corrcoef(X.latitude, X.longitude)[0, 1]
    assert -0.95 < r < -0.85
    assert housing["metric"]["value"] > 0.8
    for card in demo_cards.values():
        assert card["metric"]["name"].endswith("(held out)")
        assert {"task", "target", "features", "metric", "versions"} <= set(card)


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
