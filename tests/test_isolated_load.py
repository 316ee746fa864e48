"""explainers.io.isolated: an upload is read in a child process with a CPU and memory budget;
what it reads, refuses or dies of comes back as the same model or a clear refusal."""
import pickle
import tempfile

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import RandomForestRegressor

from explainers.errors import InvalidDataError, InvalidModelError, UnsafeModelError
from explainers.io import load_data, load_model
from explainers.io.isolated import load_data_isolated, load_model_isolated


class _Code:
    """A pickle that runs ``code`` when loaded (only a trusted pickle may)."""

    def __init__(self, code: str):
        self.code = code

    def __reduce__(self):
        return exec, (self.code,)


@pytest.fixture
def tmpdir_private(tmp_path, monkeypatch):
    """The temporary folders of this test, to see that the child's is removed."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import lightgbm
    import xgboost

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 4)), columns=list("abcd"))
    y = X.a * 2 - X.b + X.c * X.d
    out = tmp_path_factory.mktemp("models")
    xgb = xgboost.XGBRegressor(n_estimators=20, max_depth=3).fit(X, y)
    xgb.save_model(out / "m.json")
    lgb = lightgbm.LGBMRegressor(n_estimators=20, verbose=-1).fit(X, y)
    lgb.booster_.save_model(out / "m.txt")
    sio.dump(RandomForestRegressor(10, max_depth=4, random_state=0).fit(X, y), out / "m.skops")
    return X, {name: (out / name).read_bytes() for name in ("m.json", "m.txt", "m.skops")}


def test_a_model_read_in_the_child_predicts_as_one_read_here(files, tmpdir_private):
    X, blobs = files
    for name, data in blobs.items():
        here = load_model(data, filename=name)
        there = load_model_isolated(data, filename=name)
        assert type(there) is type(here), name
        np.testing.assert_array_equal(there.predict(X), here.predict(X), err_msg=name)
    assert list(tmpdir_private.iterdir()) == []  # the child's folder is gone


@pytest.mark.parametrize("data, name, cls", [
    (pickle.dumps({"a": 1}), "m.pkl", UnsafeModelError),
    (b'{"learner": {}, "x": "' + b'\\"' * 2000, "m.json", InvalidModelError),
    (b"not a model", "m.skops", InvalidModelError),
])
def test_a_refusal_in_the_child_is_the_same_refusal(data, name, cls, tmpdir_private):
    with pytest.raises(cls) as here:
        load_model(data, filename=name)
    with pytest.raises(cls) as there:
        load_model_isolated(data, filename=name)
    assert type(there.value) is type(here.value) and str(there.value) == str(here.value)
    assert list(tmpdir_private.iterdir()) == []


def test_a_reader_that_spins_is_stopped_by_its_cpu_budget(monkeypatch, tmpdir_private):
    monkeypatch.setenv("GLASSBOX_MAX_PARSE_SECONDS", "1")
    with pytest.raises(InvalidModelError, match="stopped after 1 CPU seconds.*GLASSBOX_MAX_PARSE_SECONDS"):
        load_model_isolated(pickle.dumps(_Code("while True: pass")), trusted=True, filename="m.pkl")
    assert list(tmpdir_private.iterdir()) == []


def test_a_reader_that_eats_memory_is_stopped_by_its_memory_budget(monkeypatch, tmpdir_private):
    monkeypatch.setenv("GLASSBOX_MAX_PARSE_BYTES", "512MB")
    eat = _Code("x = bytearray(4 * 2**30)")
    with pytest.raises(InvalidModelError, match="more than 512.0 MB of memory.*GLASSBOX_MAX_PARSE_BYTES"):
        load_model_isolated(pickle.dumps(eat), trusted=True, filename="m.pkl")


def test_a_reader_that_crashes_is_a_refusal_and_this_process_lives(tmpdir_private):
    crash = _Code("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    with pytest.raises(InvalidModelError, match=r"crashed its reader \(SIGSEGV\).*server was not affected"):
        load_model_isolated(pickle.dumps(crash), trusted=True, filename="m.pkl")
    assert list(tmpdir_private.iterdir()) == []


def test_data_read_in_the_child_is_the_data_read_here(files, tmpdir_private):
    X, blobs = files
    model = load_model(blobs["m.skops"], filename="m.skops")
    frame = X.assign(y=np.arange(len(X), dtype=float), a=X.a.where(X.index % 7 > 0))  # empty cells too
    import io

    parquet = io.BytesIO()
    frame.to_parquet(parquet)
    for name, data in (("d.csv", frame.to_csv(index=False).encode()), ("d.parquet", parquet.getvalue())):
        here = load_data(data, model=model, target="y", filename=name)
        there = load_data_isolated(data, model=model, target="y", filename=name)
        pd.testing.assert_frame_equal(there.X, here.X)
        pd.testing.assert_series_equal(there.y, here.y)
        assert there.fingerprint == here.fingerprint and list(there.notices) == list(here.notices)
    bad = b"a,b\n1,2\n"
    with pytest.raises(InvalidDataError) as here:
        load_data(bad, model=model, filename="d.csv")
    with pytest.raises(InvalidDataError) as there:
        load_data_isolated(bad, model=model, filename="d.csv")
    assert str(there.value) == str(here.value)
    assert list(tmpdir_private.iterdir()) == []


def test_the_dashboard_reads_uploads_in_the_child(monkeypatch, files):
    """An upload through the dashboard's loader: a trusted pickle that spins is stopped by the
    budget (read in the server, it would hold it), and a valid upload loads."""
    from dashboard.state import context

    X, blobs = files
    csv = X.assign(y=0.0).to_csv(index=False).encode()
    monkeypatch.setenv("GLASSBOX_TRUST_PICKLES", "1")
    monkeypatch.setenv("GLASSBOX_MAX_PARSE_SECONDS", "1")
    spin = pickle.dumps(_Code("while True: pass"))
    with pytest.raises(InvalidModelError, match="GLASSBOX_MAX_PARSE_SECONDS"):
        context.load_upload(spin, "spin.pkl", csv, "d.csv", "y")
    # a valid upload under the default budget: the child's imports alone take about a CPU second here
    monkeypatch.delenv("GLASSBOX_MAX_PARSE_SECONDS")
    calls = []
    for name in ("load_model_isolated", "load_data_isolated"):
        real = getattr(context, name)
        monkeypatch.setattr(context, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    ctx = context.load_upload(blobs["m.txt"], "m.txt", csv, "d.csv", "y")
    assert calls == ["load_model_isolated", "load_data_isolated"]
    np.testing.assert_array_equal(ctx.model.predict(X), load_model(blobs["m.txt"], filename="m.txt").predict(X))
