"""Tests for explainers.batch: the batch output equals in-memory explain() on the same rows.

Runs in this process (n_jobs=1) on small files; the parallel, Dask, CLI and
kill-and-resume tests are in test_batch_cli.py.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.linear_model import LinearRegression

from explainers.batch import (
    explain_file,
    importance_file,
    load_attributions,
    load_background,
    load_importance,
)
from explainers.batch.run import _chunk_seed
from explainers.batch.sources import _iter_tables, _open_source, _resolve_columns
from explainers.errors import ExplainerError, InvalidDataError, InvalidParameterError
from explainers.importance import permutation_importance
from explainers.shap import explain

FEATURES = ["a", "b", "c", "d"]


def _frame(n, seed=0, nan_every=None):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, len(FEATURES))), columns=FEATURES)
    if nan_every:
        X.iloc[::nan_every, 2] = np.nan
    return X


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A forest regressor, a forest classifier, a linear model, and 600 rows as CSV and Parquet."""
    d = tmp_path_factory.mktemp("batch")
    X = _frame(600, nan_every=17)
    Xf = X.fillna(0.0)
    y = 2 * Xf.a - Xf.b + Xf.c * Xf.d
    labels = pd.Series(np.digitize(Xf.a - Xf.b, [-0.7, 0.7])).map({0: "lo", 1: "mid", 2: "hi"})
    rf = RandomForestRegressor(n_estimators=8, max_depth=4, random_state=0).fit(Xf, y)
    clf = RandomForestClassifier(n_estimators=6, max_depth=3, random_state=0).fit(Xf, labels)
    lin = LinearRegression().fit(Xf, y)
    for name, m in (("rf", rf), ("clf", clf), ("lin", lin)):
        sio.dump(m, d / f"{name}.skops")
    data = X.assign(extra=1.0, y=y, label=labels)
    data.to_parquet(d / "data.parquet", index=False)
    data.to_csv(d / "data.csv", index=False)
    return {"dir": d, "X": X, "y": y, "labels": labels, "rf": rf, "clf": clf, "lin": lin}


def _read(out):
    return pd.read_parquet(out)


def _shap(frame, features=FEATURES):
    return frame[[f"shap_{f}" for f in features]].to_numpy()


# ----------------------------------------------------------------- equality
def test_tree_output_equals_explain(files, tmp_path):
    d = files["dir"]
    rep = explain_file(d / "rf.skops", d / "data.parquet", tmp_path / "out", method="tree",
                       chunk_rows=200, block_rows=100)
    assert (rep.n_rows, rep.n_chunks, rep.chunks_computed, rep.method) == (600, 3, 3, "tree")
    assert any("extra" in n for n in rep.notices)  # unused columns dropped, and said so
    out = _read(tmp_path / "out")
    assert list(out.columns) == ["row", *[f"shap_{f}" for f in FEATURES], "base_value", "prediction"]
    np.testing.assert_array_equal(out["row"], np.arange(600))
    X = files["X"]
    # explain() over the same blocks of rows gives the same bits ...
    blocks = [explain(files["rf"], X.iloc[s : s + 100], method="tree") for s in range(0, 600, 100)]
    np.testing.assert_array_equal(_shap(out), np.concatenate([b.values for b in blocks]))
    np.testing.assert_array_equal(out["prediction"], np.concatenate([b.predictions for b in blocks]))
    np.testing.assert_array_equal(out["base_value"], np.concatenate([b.base_values for b in blocks]))
    # ... and one call over every row agrees to rounding (TreeShap picks per-pattern
    # tables or the recursion by how many rows share a NaN pattern)
    whole = explain(files["rf"], X, method="tree")
    np.testing.assert_allclose(_shap(out), whole.values, rtol=1e-12, atol=1e-12)
    # the forest takes NaN, so by default ("auto") empty cells are values it receives, as in explain()
    assert any("values the model receives" in n for n in rep.notices)
    assert np.all(_shap(out)[::17, 2] != 0.0)
    # asked, they are missing features: exactly 0, as explain(nan_is_missing=True) gives
    explain_file(d / "rf.skops", d / "data.parquet", tmp_path / "masked", method="tree", nan_is_missing=True)
    masked = _read(tmp_path / "masked")
    np.testing.assert_array_equal(_shap(masked)[::17, 2], 0.0)
    np.testing.assert_allclose(_shap(masked), explain(files["rf"], X, method="tree", nan_is_missing=True).values,
                               rtol=1e-12, atol=1e-12)


def test_exact_multiclass_equals_explain_with_stored_background(files, tmp_path):
    d = files["dir"]
    explain_file(d / "clf.skops", d / "data.csv", tmp_path / "out", method="exact", background=30,
                 chunk_rows=300, block_rows=100)
    out = _read(tmp_path / "out")
    bg = load_background(tmp_path / "out")
    assert bg.shape == (30, 4) and not bg.isna().any().any()
    classes = list(files["clf"].classes_)
    assert [c for c in out.columns if c.startswith("base_value")] == [f"base_value__{k}" for k in classes]
    X = pd.read_csv(d / "data.csv")[FEATURES]
    ref = explain(files["clf"], X, method="exact", background=bg)
    vals = out[[f"shap_{f}__{k}" for f in FEATURES for k in classes]].to_numpy().reshape(600, 4, 3)
    np.testing.assert_array_equal(vals, ref.values)
    np.testing.assert_array_equal(out[[f"prediction__{k}" for k in classes]].to_numpy(), ref.predictions)


def test_kernel_same_bits_whatever_the_chunking(files, tmp_path):
    d = files["dir"]
    kw = dict(method="kernel", background=20, n_samples=10, block_rows=50)
    explain_file(d / "rf.skops", d / "data.parquet", tmp_path / "a", chunk_rows=150, **kw)
    explain_file(d / "rf.skops", d / "data.parquet", tmp_path / "b", chunk_rows=600, **kw)
    a, b = _read(tmp_path / "a"), _read(tmp_path / "b")
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    ref = explain(files["rf"], files["X"], method="kernel", n_samples=10,
                  background=load_background(tmp_path / "a"))
    np.testing.assert_allclose(_shap(a), ref.values, rtol=1e-9, atol=1e-12)


def test_linear_with_missing_feature(files, tmp_path):
    d = files["dir"]
    explain_file(d / "lin.skops", d / "data.csv", tmp_path / "out", missing=["b"], chunk_rows=100,
                 block_rows=100)
    out = _read(tmp_path / "out")
    np.testing.assert_array_equal(out["shap_b"], 0.0)
    X = pd.read_csv(d / "data.csv")[FEATURES]
    ref = explain(files["lin"], X, missing=["b"], background=load_background(tmp_path / "out"))
    assert ref.method == "linear"
    np.testing.assert_allclose(_shap(out), ref.values, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["prediction"], ref.predictions, rtol=1e-12, atol=1e-12)
    # local accuracy holds row by row in the file
    np.testing.assert_allclose(out["base_value"] + _shap(out).sum(1), out["prediction"], atol=1e-9)


# ------------------------------------------------------------------- resume
def test_resume_recomputes_only_missing_parts(files, tmp_path):
    d = files["dir"]
    out = tmp_path / "out"
    kw = dict(method="tree", chunk_rows=100, block_rows=100)
    explain_file(d / "rf.skops", d / "data.parquet", out, **kw)
    before = _read(out)
    (out / "part-000002.parquet").unlink()  # lost
    (out / "part-000004.parquet").write_bytes(b"PAR1 torn write")  # unreadable
    (out / ".part-000005.parquet.123.tmp").write_bytes(b"half")  # left by a killed worker
    man = json.loads((out / "_manifest.json").read_text())
    man["status"] = "running"
    (out / "_manifest.json").write_text(json.dumps(man))
    rep = explain_file(d / "rf.skops", d / "data.parquet", out, **kw)
    assert (rep.chunks_computed, rep.chunks_skipped) == (2, 4)
    pd.testing.assert_frame_equal(_read(out), before, check_exact=True)
    assert not [p for p in os.listdir(out) if p.endswith(".tmp")]
    # a finished run is not computed again
    rep = explain_file(d / "rf.skops", d / "data.parquet", out, **kw)
    assert rep.chunks_computed == 0


def test_other_model_or_options_refused_unless_overwrite(files, tmp_path):
    d = files["dir"]
    out = tmp_path / "out"
    explain_file(d / "rf.skops", d / "data.parquet", out, method="tree", chunk_rows=200, block_rows=100)
    with pytest.raises(ExplainerError, match="another model.*--overwrite"):
        explain_file(d / "lin.skops", d / "data.parquet", out, chunk_rows=200, block_rows=100)
    with pytest.raises(ExplainerError, match="options differ: chunk_rows 200 -> 100"):
        explain_file(d / "rf.skops", d / "data.parquet", out, method="tree", chunk_rows=100, block_rows=100)
    assert len(_read(out)) == 600  # untouched
    explain_file(d / "lin.skops", d / "data.parquet", out, chunk_rows=100, block_rows=100, overwrite=True)
    out_lin = _read(out)
    assert len(out_lin) == 600 and len(list(out.glob("part-*.parquet"))) == 6


# ---------------------------------------------------------------- bad input
def _write(path, text):
    path.write_text(textwrap.dedent(text).lstrip())
    return path


@pytest.mark.parametrize(
    "case, err, match",
    [
        ("no_file", InvalidDataError, "does not exist"),
        ("empty", InvalidDataError, "is empty"),
        ("garbage_parquet", InvalidDataError, "Could not read the Parquet file"),
        ("missing_column", InvalidDataError, "lacks 1 column.*d"),
        ("text_late", InvalidDataError, "Column 'b' must be numeric but holds text, e.g. 'oops'"),
        ("chunk_not_multiple", InvalidParameterError, "multiple of block_rows=100"),
        ("foreign_dir", ExplainerError, "holds files that no batch run wrote"),
        ("scheduler", ExplainerError, "Could not reach the Dask scheduler"),
    ],
)
def test_bad_input_clear_error_and_nothing_left(files, tmp_path, case, err, match):
    d = files["dir"]
    data = d / "data.parquet"
    kw = dict(method="tree", chunk_rows=100, block_rows=100)
    out = tmp_path / "out"
    if case == "no_file":
        data = tmp_path / "nope.csv"
    elif case == "empty":
        data = _write(tmp_path / "e.csv", "")
    elif case == "garbage_parquet":
        data = tmp_path / "g.parquet"
        data.write_bytes(b"PAR1 this is not parquet")
    elif case == "missing_column":
        data = tmp_path / "m.csv"
        files["X"].drop(columns="d").to_csv(data, index=False)
    elif case == "text_late":
        # the bad value is in the fourth chunk: found mid-run, after parts were written
        frame = files["X"].copy().astype(object)
        frame.iloc[350, 1] = "oops"
        data = tmp_path / "t.csv"
        frame.to_csv(data, index=False)
    elif case == "chunk_not_multiple":
        kw["chunk_rows"] = 150
    elif case == "foreign_dir":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    elif case == "scheduler":
        kw.update(backend="dask", scheduler="tcp://127.0.0.1:9", connect_timeout=1)
    with pytest.raises(err, match=match):
        explain_file(d / "rf.skops", data, out, **kw)
    if case == "foreign_dir":
        assert os.listdir(out) == ["notes.txt"]  # never touched
    else:
        assert not out.exists()  # no partial garbage


def test_unreadable_model_and_pickle_refused(files, tmp_path):
    bad = tmp_path / "m.skops"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ExplainerError, match="not a readable .skops model"):
        explain_file(bad, files["dir"] / "data.parquet", tmp_path / "out")
    pkl = tmp_path / "m.pkl"
    pkl.write_bytes(b"\x80\x04N.")
    with pytest.raises(ExplainerError, match="Pickle and joblib model files are refused"):
        explain_file(pkl, files["dir"] / "data.parquet", tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ memory
def test_reader_holds_one_chunk_at_a_time(files, tmp_path):
    """Structural bound: chunks come out at exactly chunk_rows, from a file many times larger."""
    X = _frame(5000, seed=3)
    X.to_parquet(tmp_path / "big.parquet", row_group_size=700)  # row groups straddle chunks
    src = _open_source(tmp_path / "big.parquet")
    cols = _resolve_columns(src, files["rf"], None, "test")
    sizes, starts = [], []
    for _, start, table in _iter_tables(src, cols, 600):
        sizes.append(table.num_rows)
        starts.append(start)
    assert sizes == [600] * 8 + [200] and starts == list(range(0, 5000, 600))


_RSS_SCRIPT = """
import resource, sys
import numpy as np, pandas as pd
from explainers.batch import explain_file
explain_file(sys.argv[1], sys.argv[2], sys.argv[3], method="linear", chunk_rows=20000, block_rows=1000)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_peak_memory_flat_as_rows_grow(files, tmp_path):
    """Peak RSS of a run over 30x more rows grows by far less than the table would take."""
    rng = np.random.default_rng(0)
    p = 10
    names = [f"x{i}" for i in range(p)]
    big = pd.DataFrame(rng.normal(size=(600_000, p)), columns=names)
    model = LinearRegression().fit(big.iloc[:1000], big.iloc[:1000].sum(axis=1))
    sio.dump(model, tmp_path / "m.skops")
    big.to_parquet(tmp_path / "big.parquet", row_group_size=50_000)
    big.iloc[:20_000].to_parquet(tmp_path / "small.parquet")
    peaks = {}
    for name in ("small", "big"):
        res = subprocess.run(
            [sys.executable, "-c", _RSS_SCRIPT, str(tmp_path / "m.skops"), str(tmp_path / f"{name}.parquet"),
             str(tmp_path / f"out_{name}")],
            capture_output=True, text=True, check=True, cwd=os.getcwd(),
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        peaks[name] = int(res.stdout.split()[-1]) * 1024
    assert len(pd.read_parquet(tmp_path / "out_big", columns=["row"])) == 600_000
    # input + output of the whole file in memory: 600k x (10 + 12) float64 = 106 MB
    whole = 600_000 * (p + p + 2) * 8
    # (before pre_buffer=False the Parquet reader kept every row group: +75 MB here)
    assert peaks["big"] - peaks["small"] < whole / 3, peaks


# ------------------------------------------------------------ reading back
def test_load_attributions_samples_rows_with_their_data(files, tmp_path):
    d = files["dir"]
    out = tmp_path / "out"
    explain_file(d / "rf.skops", d / "data.parquet", out, method="tree", chunk_rows=200, block_rows=100,
                 nan_is_missing=True)
    full = _read(out)
    res = load_attributions(out, sample=50, random_state=1)
    rows = res.params["rows"]
    assert res.values.shape == (50, 4) and np.all(np.diff(rows) > 0) and res.params["n_rows_total"] == 600
    np.testing.assert_array_equal(res.values, _shap(full)[rows])
    np.testing.assert_array_equal(res.predictions, full["prediction"].to_numpy()[rows])
    pd.testing.assert_frame_equal(res.data, files["X"].iloc[rows].reset_index(drop=True))
    np.testing.assert_array_equal(res.missing, files["X"].iloc[rows].isna().to_numpy())
    assert res.method == "tree" and res.params["data_source"] == "data file"
    res.check_additivity()
    everything = load_attributions(out, sample=None, with_data=False)
    assert everything.n_rows == 600 and everything.data.isna().all().all()


def test_load_attributions_multiclass_and_unfinished(files, tmp_path):
    d = files["dir"]
    out = tmp_path / "out"
    explain_file(d / "clf.skops", d / "data.parquet", out, method="tree", chunk_rows=300, block_rows=100)
    res = load_attributions(out, sample=40)
    assert res.values.shape == (40, 4, 3) and res.output_names == list(files["clf"].classes_)
    assert res.select(1).values.shape == (40, 4)
    res.check_additivity()
    man = json.loads((out / "_manifest.json").read_text())
    man["status"] = "running"
    (out / "_manifest.json").write_text(json.dumps(man))
    with pytest.raises(ExplainerError, match="has not finished. Rerun the same"):
        load_attributions(out)
    with pytest.raises(ExplainerError, match="no _manifest.json"):
        load_attributions(tmp_path)


# ---------------------------------------------------------------- importance
def test_importance_one_chunk_equals_permutation_importance(files, tmp_path):
    d = files["dir"]
    res = importance_file(d / "rf.skops", d / "data.parquet", tmp_path / "out", target="y",
                          scoring="neg_mean_squared_error", n_repeats=3, chunk_rows=600)
    X = pd.read_parquet(d / "data.parquet")
    ref = permutation_importance(files["rf"], X[FEATURES], X["y"], n_repeats=3,
                                 scoring="neg_mean_squared_error", random_state=_chunk_seed(0, 0))
    np.testing.assert_allclose(res.raw, ref.raw, rtol=1e-12, atol=1e-12)
    assert (tmp_path / "out" / "importance.csv").is_file()
    np.testing.assert_array_equal(load_importance(tmp_path / "out").raw, res.raw)


def test_importance_r2_over_chunks_and_classifier_from_csv(files, tmp_path):
    d = files["dir"]
    r2 = importance_file(d / "rf.skops", d / "data.parquet", tmp_path / "r2", target="y", chunk_rows=150)
    assert r2.params["scoring"] == "r2" and r2.raw.shape == (4, 5)
    X = pd.read_parquet(d / "data.parquet")
    from sklearn.metrics import r2_score

    assert r2.params["baseline_score"] == pytest.approx(r2_score(X["y"], files["rf"].predict(X[FEATURES].fillna(np.nan))), rel=1e-12)
    assert r2.importances[0] > r2.importances[3]  # a matters, d only through c*d
    # a classifier: log loss by default, the chunks' row means pooled into the whole file's
    ll = importance_file(d / "clf.skops", d / "data.csv", tmp_path / "ll", target="label", chunk_rows=200)
    assert ll.params["scoring"] == "neg_log_loss" and ll.importances[:2].min() > ll.importances[2:].max()
    from sklearn.metrics import log_loss

    C = pd.read_csv(d / "data.csv")
    clf = files["clf"]
    want = -log_loss(C["label"], clf.predict_proba(C[FEATURES]), labels=clf.classes_)
    assert ll.params["baseline_score"] == pytest.approx(want, rel=1e-9)
    acc = importance_file(d / "clf.skops", d / "data.csv", tmp_path / "acc", target="label", chunk_rows=200,
                          scoring="accuracy")
    assert acc.params["scoring"] == "accuracy" and acc.importances[:2].min() > acc.importances[2:].max()
    with pytest.raises(InvalidParameterError, match="combined over chunks"):
        importance_file(d / "rf.skops", d / "data.csv", tmp_path / "x", target="y", scoring="roc_auc")
    with pytest.raises(InvalidDataError, match="target column 'nope' is not in the file"):
        importance_file(d / "rf.skops", d / "data.csv", tmp_path / "x", target="nope")
    assert not (tmp_path / "x").exists()


def test_directory_of_parquet_parts_reads_as_one_file(files, tmp_path):
    d = files["dir"]
    parts = tmp_path / "parts"
    parts.mkdir()
    full = pd.read_parquet(d / "data.parquet")
    full.iloc[:250].to_parquet(parts / "part-0.parquet")  # boundaries that straddle chunks
    full.iloc[250:].to_parquet(parts / "part-1.parquet")
    explain_file(d / "rf.skops", parts, tmp_path / "a", method="tree", chunk_rows=200, block_rows=100)
    explain_file(d / "rf.skops", d / "data.parquet", tmp_path / "b", method="tree", chunk_rows=200, block_rows=100)
    pd.testing.assert_frame_equal(_read(tmp_path / "a"), _read(tmp_path / "b"), check_exact=True)
