"""Hostile model files: no crafted .skops file crashes, hangs or exhausts the server (issue #15).

Every file here is crafted by the test: a small model is fitted, saved with
skops, and its archive edited (node arrays rewritten, schema entries repeated).
scikit-learn's compiled tree code trusts the node arrays it is given, so the
crafted files would kill the process that predicts with them: everything that
could crash runs in a subprocess, which reports back on stdout.
"""
from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
import skops.io as sio
from sklearn.ensemble import (ExtraTreesClassifier, ExtraTreesRegressor, GradientBoostingClassifier,
                              GradientBoostingRegressor, HistGradientBoostingClassifier,
                              HistGradientBoostingRegressor, RandomForestClassifier,
                              RandomForestRegressor)
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor, ExtraTreeRegressor

from explainers import InvalidModelError, load_model
from explainers.io import SKOPS_ALLOWED_FUNCTIONS, SKOPS_ALLOWED_TYPES, check_skops_archive
from explainers.trees import flatten_model
from explainers.trees.validate import check_trees, validate_model

ROOT = Path(__file__).resolve().parents[1]
FIX = "save the model again from the fitted estimator"


# ------------------------------------------------------------------ crafting
def _data(n=200, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, p))
    return X, X[:, 0] + 0.5 * X[:, 1] * X[:, 2]


def edit_skops(data: bytes, nodes=None, schema=None, extra=None) -> bytes:
    """Rewrite a .skops archive.

    ``nodes(name, array)`` may return a replacement for any .npy member;
    ``schema(dict)`` edits schema.json in place; ``extra`` maps new member
    names to bytes (or to a callable writing into the open member).
    """
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            raw = src.read(info.filename)
            if info.filename == "schema.json" and schema is not None:
                doc = json.loads(raw)
                schema(doc)
                raw = json.dumps(doc).encode()
            elif info.filename.endswith(".npy") and nodes is not None:
                arr = np.load(io.BytesIO(raw), allow_pickle=False)
                new = nodes(info.filename, arr)
                if new is not None:
                    buf = io.BytesIO()
                    np.save(buf, new, allow_pickle=False)
                    raw = buf.getvalue()
            dst.writestr(info.filename, raw)
        for name, content in (extra or {}).items():
            if callable(content):
                info = zipfile.ZipInfo(name)
                info.compress_type = zipfile.ZIP_DEFLATED
                with dst.open(info, "w", force_zip64=True) as fh:
                    content(fh)
            else:
                dst.writestr(name, content)
    return out.getvalue()


def _is_sk_nodes(arr):
    return arr.dtype.names is not None and "left_child" in arr.dtype.names


def _is_hgb_nodes(arr):
    return arr.dtype.names is not None and "is_leaf" in arr.dtype.names


def set_node(field, node, value, which=_is_sk_nodes):
    """A ``nodes`` editor: ``array[field][node] = value`` in the first node array of the file.

    ``node`` may be a callable giving the index from the array.
    """
    seen = []

    def edit(name, arr):
        if not which(arr) or seen:
            return None
        seen.append(name)
        arr = arr.copy()
        arr[field][node(arr) if callable(node) else node] = value
        return arr

    return edit


def root_left(arr):
    """The root's left child (an internal node in the models fitted here)."""
    child = int(arr["left_child" if _is_sk_nodes(arr) else "left"][0])
    assert (arr["left_child"][child] != -1) if _is_sk_nodes(arr) else not arr["is_leaf"][child]
    return child


def chain_tree(n_internal=50, n_features=3, stated_depth=3, seed=0):
    """A valid 2*n_internal+1 node chain (depth n_internal) that states ``stated_depth``."""
    from sklearn.tree._tree import NODE_DTYPE, Tree

    n = 2 * n_internal + 1
    nodes = np.zeros(n, dtype=NODE_DTYPE)
    nodes["left_child"] = nodes["right_child"] = -1
    nodes["feature"] = -2
    nodes["threshold"] = -2.0
    nodes["weighted_n_node_samples"] = nodes["n_node_samples"] = 1
    for k in range(n_internal):
        i = 2 * k
        nodes[i]["left_child"], nodes[i]["right_child"] = i + 1, i + 2
        nodes[i]["feature"] = k % n_features
        nodes[i]["threshold"] = (k + 1) / (n_internal + 2)
        nodes[i]["weighted_n_node_samples"] = nodes[i]["n_node_samples"] = n_internal - k + 1
    values = np.random.default_rng(seed).normal(size=(n, 1, 1))
    tree = Tree(n_features, np.array([1], dtype=np.intp), 1)
    tree.__setstate__({"max_depth": stated_depth, "node_count": n, "nodes": nodes, "values": values})
    X, y = _data(p=n_features)
    est = DecisionTreeRegressor(max_depth=2).fit(X, y)
    est.tree_ = tree
    return est


def run_py(code: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter at the repository root."""
    full_env = dict(os.environ, PYTHONPATH=str(ROOT))
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def _crash_report(proc) -> str:
    return f"returncode {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"


# ----------------------------------------------- 1 and 3: arrays that crash
@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    """Crafted files that loaded, then crashed or hung scikit-learn, and what their message names."""
    X, y = _data()
    dt = sio.dumps(DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y))
    rf = sio.dumps(RandomForestRegressor(4, max_depth=4, random_state=0).fit(X, y))
    gb = sio.dumps(GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0).fit(X, y > 0.6))
    hgb = sio.dumps(HistGradientBoostingRegressor(max_iter=4, random_state=0).fit(X, y))
    cases = {
        "dt_left_1e8": (edit_skops(dt, set_node("left_child", 0, 10**8)), r"left child 100000000"),
        "dt_feature_1e8": (edit_skops(dt, set_node("feature", 0, 10**8)), r"splits on feature 100000000"),
        "dt_feature_negative": (edit_skops(dt, set_node("feature", 0, -7)), r"splits on feature -7"),
        "rf_right_1e8": (edit_skops(rf, set_node("right_child", 0, 10**8)),
                         r"RandomForestRegressor.estimators_\[0\], node 0 has right child 100000000"),
        "gb_feature_1e8": (edit_skops(gb, set_node("feature", 0, 10**8)),
                           r"GradientBoostingClassifier.estimators_\[0,0\], node 0 splits on feature 100000000"),
        "hgb_left_1e8": (edit_skops(hgb, set_node("left", 0, 10**8, _is_hgb_nodes)),
                         r"HistGradientBoostingRegressor._predictors\[0\]\[0\], node 0 has left child 100000000"),
        "hgb_feature_1e8": (edit_skops(hgb, set_node("feature_idx", 0, 10**8, _is_hgb_nodes)), r"splits on feature 100000000"),
        "dt_cycle_to_root": (edit_skops(dt, set_node("right_child", root_left, 0)), r"points back to the root"),
        "hgb_cycle_to_root": (edit_skops(hgb, set_node("right", root_left, 0, _is_hgb_nodes)),
                              r"points back to the root"),
        "dt_threshold_nan": (edit_skops(dt, set_node("threshold", 0, np.nan)), r"threshold nan"),
        "dt_shared_node": (edit_skops(dt, set_node("right_child", 0, 2)), r"node 2 is the child of 2 nodes"),
    }
    folder = tmp_path_factory.mktemp("crafted")
    for name, (data, _) in cases.items():
        (folder / f"{name}.skops").write_bytes(data)
    return folder, {k: v[1] for k, v in cases.items()}, X


def test_crafted_files_do_crash_unprotected_sklearn(crafted):
    """The craft is real: read without our checks, scikit-learn dies on these files (or hangs)."""
    folder, _, _ = crafted
    for name, expect in (("dt_left_1e8", "crash"), ("hgb_feature_1e8", "crash"), ("dt_cycle_to_root", "hang")):
        code = f"""
            import numpy as np, skops.io as sio
            data = open({str(folder / (name + '.skops'))!r}, 'rb').read()
            m = sio.loads(data, trusted=sio.get_untrusted_types(data=data))
            X = np.random.default_rng(0).uniform(size=(50, 3))
            m.predict(X)
            print('survived')
        """
        try:
            proc = run_py(code, timeout=20 if expect == "crash" else 4)
        except subprocess.TimeoutExpired:
            assert expect == "hang", name
            continue
        assert expect == "crash" and proc.returncode < 0, f"{name}: {_crash_report(proc)}"


def test_crafted_tree_arrays_are_refused(crafted):
    """Each crafted file ends in InvalidModelError naming the estimator, tree and node; nothing crashes."""
    folder, messages, _ = crafted
    code = f"""
        import json, pathlib
        from explainers import load_model, InvalidModelError
        out = {{}}
        for path in sorted(pathlib.Path({str(folder)!r}).glob('*.skops')):
            try:
                m = load_model(path)
                out[path.stem] = 'LOADED'
            except InvalidModelError as exc:
                out[path.stem] = str(exc)
        print(json.dumps(out))
    """
    proc = run_py(code, timeout=120)
    assert proc.returncode == 0, _crash_report(proc)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(out) == set(messages)
    import re

    for name, pattern in messages.items():
        assert re.search(pattern, out[name]), (name, out[name])
        assert FIX in out[name], out[name]


# ------------------------------------------- 2: depth stored smaller than real
def test_stated_depth_smaller_than_real_is_refused_on_load():
    data = sio.dumps(chain_tree(stated_depth=3))
    with pytest.raises(InvalidModelError, match=r"states max_depth 3 but its nodes are 50 levels deep") as info:
        load_model(data, filename="chain.skops")
    assert FIX in str(info.value)


def test_flatten_computes_depth_from_children(tmp_path):
    """A model built in Python with a wrong max_depth: our kernels size their stacks from the real depth."""
    est = chain_tree(stated_depth=3)
    path = tmp_path / "chain.joblib"
    import joblib

    joblib.dump(est, path)
    code = f"""
        import joblib, numpy as np
        from explainers.trees import flatten_model
        from explainers.shap import TreeShap
        est = joblib.load({str(path)!r})
        assert est.tree_.max_depth == 3
        ens = flatten_model(est)
        assert ens.max_depth == 50, ens.max_depth
        X = np.random.default_rng(1).uniform(size=(64, 3))
        np.testing.assert_allclose(ens.predict(X)[:, 0], est.predict(X), rtol=1e-12)
        for mode, bg in (("path_dependent", None), ("interventional", X[:16])):
            res = TreeShap(est, bg, mode=mode).explain(X)
            total = np.asarray(res.base_values).reshape(-1) + np.asarray(res.values).sum(axis=1)
            np.testing.assert_allclose(total, est.predict(X), rtol=1e-9, atol=1e-9)
        print('ok')
    """
    proc = run_py(code, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), _crash_report(proc)


def test_programmatic_bad_tree_is_refused_by_flatten():
    """A model never loaded through load_model is still checked before our kernels walk it."""
    est = chain_tree(stated_depth=50)
    est.tree_.__getstate__()["nodes"]["left_child"][4] = 0  # the state arrays are views on the tree
    with pytest.raises(InvalidModelError, match="points back to the root"):
        flatten_model(est)


# --------------------------------------------- 4 and 5: archives that blow up
def _zeros_member(n_floats: int):
    def write(fh):
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (n_floats,)})
        fh.write(header.getvalue())
        block = bytes(1 << 20)
        left = n_floats * 8
        while left:
            fh.write(block[:min(left, len(block))])
            left -= min(left, len(block))
    return write


def repeated_zeros_file(n_floats=34_000_000, repeats=9) -> bytes:
    """A .skops whose schema reads one deflated member of zeros ``repeats`` times."""
    X, y = _data()
    data = sio.dumps(DecisionTreeRegressor(max_depth=2).fit(X, y))

    def schema(doc):
        state = doc["content"]
        for i in range(repeats):
            state["content"][f"junk{i}"] = {
                "__class__": "ndarray", "__module__": "numpy", "__loader__": "NdArrayNode",
                "type": "numpy", "file": "zeros.npy", "__id__": 10**15 + i,
            }
            state["key_types"]["content"].append(dict(state["key_types"]["content"][0]))

    return edit_skops(data, schema=schema, extra={"zeros.npy": _zeros_member(n_floats)})


def memoised_forest_file(n_trees=100_000) -> bytes:
    """A forest whose estimators_ repeat one memoised tree ``n_trees`` times."""
    X, y = _data()
    data = sio.dumps(RandomForestRegressor(1, max_depth=3, random_state=0).fit(X, y))

    def schema(doc):
        state = doc["content"]["content"]
        ests = state["estimators_"]
        first = ests["content"][0]
        stub = {k: first[k] for k in ("__class__", "__module__", "__loader__", "__id__")}
        ests["content"] = [first] + [stub] * (n_trees - 1)
        # a fresh id: skops would hand back the earlier node of the shared id of "1"
        state["n_estimators"] = dict(state["n_estimators"], content=str(n_trees), __id__=10**15 + 1)

    return edit_skops(data, schema=schema)


RSS_PROBE = """
    import json, sys
    import skops.io as sio
    from explainers import load_model, InvalidModelError
    # count what skops is asked to read: a file refused from its zip directory and schema alone
    # (check_skops_archive) never reaches skops, which would unpack and build what it describes
    skops_reads = []
    for name in ('loads', 'load', 'get_untrusted_types'):
        def spy(*a, _real=getattr(sio, name), _name=name, **k):
            skops_reads.append(_name)
            return _real(*a, **k)
        setattr(sio, name, spy)
    data = open(sys.argv[1], 'rb').read()
    try:
        load_model(data, filename='m.skops')
        msg = 'LOADED'
    except InvalidModelError as exc:
        msg = str(exc)
    print(json.dumps({'message': msg, 'skops_reads': skops_reads,
                      # VmHWM, not ru_maxrss: ru_maxrss keeps the parent's (pytest's) peak across vfork + exec
                      'peak_mb': int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) / 1024}))
"""


def _probe(path: Path, env=None) -> dict:
    full_env = dict(os.environ, PYTHONPATH=str(ROOT))
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(RSS_PROBE), str(path)], cwd=ROOT,
                          env=full_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, _crash_report(proc)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_member_read_many_times_is_refused_before_unpacking(tmp_path):
    path = tmp_path / "zeros.skops"
    path.write_bytes(repeated_zeros_file())
    assert path.stat().st_size < 400_000  # about 280 KB that skops would unpack to 2.4 GB
    got = _probe(path)
    assert "unpacks to 2.3 GB of arrays" in got["message"], got
    assert "GLASSBOX_MAX_MODEL_BYTES" in got["message"]
    assert got["peak_mb"] < 600, got  # not the 2.4 GB skops would reach
    assert got["skops_reads"] == [], got  # refused before skops unpacks a member


def test_memoised_forest_is_refused_before_it_is_built(tmp_path):
    path = tmp_path / "forest.skops"
    path.write_bytes(memoised_forest_file())
    assert path.stat().st_size < 100_000
    got = _probe(path)
    assert "builds 100,000 trees" in got["message"] and "GLASSBOX_MAX_TREES" in got["message"], got
    # counted from the schema alone: skops never builds (nor the validator walks) the 100,000 trees
    assert got["skops_reads"] == [], got


def test_limits_can_be_raised_by_the_operator(monkeypatch):
    """A forest of 2,000 references to one tree: refused under a low limit, loaded under a higher one."""
    data = memoised_forest_file(2_000)
    monkeypatch.setenv("GLASSBOX_MAX_TREES", "1000")
    with pytest.raises(InvalidModelError, match=r"builds 2,000 trees.*GLASSBOX_MAX_TREES"):
        load_model(data, filename="m.skops")
    monkeypatch.setenv("GLASSBOX_MAX_TREES", "5000")
    model = load_model(data, filename="m.skops")
    assert len(model.estimators_) == 2_000
    assert validate_model(model).trees == 2_000
    monkeypatch.setenv("GLASSBOX_MAX_NODES", "1000")
    with pytest.raises(InvalidModelError, match=r"tree nodes.*GLASSBOX_MAX_NODES"):
        validate_model(model)


def test_tree_depth_limit(monkeypatch):
    est = chain_tree(n_internal=50, stated_depth=50)
    assert validate_model(est).max_depth == 50
    monkeypatch.setenv("GLASSBOX_MAX_TREE_DEPTH", "20")
    with pytest.raises(InvalidModelError, match=r"more than 20 levels deep.*GLASSBOX_MAX_TREE_DEPTH"):
        validate_model(est)


def _patch_declared_size(data: bytes, member: str, delta: int) -> bytes:
    """Change the size the central directory declares for ``member``."""
    buf = bytearray(data)
    pos = buf.find(b"PK\x01\x02")
    while pos >= 0:
        name_len = struct.unpack_from("<H", buf, pos + 28)[0]
        name = bytes(buf[pos + 46:pos + 46 + name_len]).decode()
        if name == member:
            size = struct.unpack_from("<I", buf, pos + 24)[0]
            struct.pack_into("<I", buf, pos + 24, size + delta)
            return bytes(buf)
        pos = buf.find(b"PK\x01\x02", pos + 4)
    raise AssertionError(member)


@pytest.mark.parametrize("delta", [-100, 100])
def test_member_size_lie_is_refused(delta):
    X, y = _data()
    data = sio.dumps(DecisionTreeRegressor(max_depth=3).fit(X, y))
    npy = next(n for n in zipfile.ZipFile(io.BytesIO(data)).namelist() if n.endswith(".npy"))
    for member in (npy, "schema.json"):
        with pytest.raises(InvalidModelError, match="damaged"):
            load_model(_patch_declared_size(data, member, delta), filename="m.skops")


def test_schema_counts_expand_shared_objects():
    X, y = _data()
    plain = check_skops_archive(sio.dumps(RandomForestRegressor(3, max_depth=3).fit(X, y)))
    assert plain["trees"] == 3
    shared = check_skops_archive(memoised_forest_file(50))
    assert shared["trees"] == 50 and shared["objects"] > 50 * 40


# ----------------------------------------------------------------- the core
def test_check_trees_core():
    where = lambda t, node: f"tree {t}" + ("" if node is None else f", node {node}")  # noqa: E731
    # a stump (3 nodes) and a 5-node tree of depth 2, local child indices
    left = np.array([1, -1, -1, 1, -1, 3, -1, -1])
    right = np.array([2, -1, -1, 2, -1, 4, -1, -1])
    offsets = np.array([0, 3, 8])
    np.testing.assert_array_equal(check_trees(left, right, offsets, where=where), [1, 2])
    bad = left.copy()
    bad[7] = 1  # tree 1, node 4 (a leaf) gets one child
    with pytest.raises(InvalidModelError, match="tree 1, node 4 has one child missing"):
        check_trees(bad, right, offsets, where=where)
    # a detached loop 3 <-> 4: every node has one parent, but the root never reaches them
    l2, r2 = np.array([1, -1, -1, 4, 3, -1, -1]), np.array([2, -1, -1, 5, 6, -1, -1])
    with pytest.raises(InvalidModelError, match="tree 0, node 3 cannot be reached from the root"):
        check_trees(l2, r2, np.array([0, 7]), where=where)
    with pytest.raises(InvalidModelError, match="tree 0 has no nodes"):
        check_trees(np.array([-1]), np.array([-1]), np.array([0, 0, 1]), where=where)
    with pytest.raises(InvalidModelError, match="splits on feature 5, but the model receives 5"):
        check_trees(left, right, offsets, where=where, feature=np.array([5, -2, -2, 0, -2, 1, -2, -2]),
                    n_features=5)
    with pytest.raises(InvalidModelError, match="lies deeper than 1 levels"):
        check_trees(left, right, offsets, where=where, max_depth=1)


def test_hgb_categorical_bitset_out_of_range_is_refused():
    """A crafted HistGradientBoosting with categorical splits, as an operator-trusted pickle: checked too
    (as .skops it is validated the same way)."""
    import joblib

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(size=300), rng.integers(0, 5, 300)])
    y = X[:, 0] + (X[:, 1] == 2)
    model = HistGradientBoostingRegressor(max_iter=3, categorical_features=[1], random_state=0).fit(X, y)
    validate_model(model)
    nodes = model._predictors[0][0].nodes
    split = np.flatnonzero((nodes["is_categorical"] == 1) & (nodes["is_leaf"] == 0))[0]
    nodes["bitset_idx"][split] = 10**6
    buf = io.BytesIO()
    joblib.dump(model, buf)
    with pytest.raises(InvalidModelError, match=rf"_predictors\[0\]\[0\], node {split}: bitset 1000000 of \d+ does not exist"):
        load_model(buf.getvalue(), filename="m.joblib", trusted=True)
    nodes["bitset_idx"][split] = 0
    nodes["feature_idx"][split] = 1 - nodes["feature_idx"][split]  # a categorical split on a numeric feature
    with pytest.raises(InvalidModelError, match="which the model does not treat as categorical"):
        validate_model(model)


# ------------------------------------------------------ no false refusals
def _legit_models():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(300, 5))
    y = X[:, 0] + X[:, 1] * X[:, 2]
    yc = (y > 0.7).astype(int)
    y3 = np.digitize(y, [0.5, 1.0])
    Xn = X.copy()
    Xn[::4, 1] = np.nan
    Xc = X.copy()
    Xc[:, 4] = rng.integers(0, 6, 300)
    return [
        ("tree", DecisionTreeRegressor(random_state=0).fit(X, y), X),
        ("tree_nan", DecisionTreeRegressor(random_state=0).fit(Xn, y), Xn),
        ("tree_clf_best_first", DecisionTreeClassifier(max_leaf_nodes=12, random_state=0).fit(X, y3), X),
        ("tree_pruned", DecisionTreeRegressor(ccp_alpha=1e-3, random_state=0).fit(X, y), X),
        ("extra_tree", ExtraTreeRegressor(random_state=0).fit(X, y), X),
        ("forest", RandomForestRegressor(10, random_state=0).fit(X, y), X),
        ("forest_clf", RandomForestClassifier(10, random_state=0).fit(X, y3), X),
        ("forest_nan", RandomForestRegressor(5, random_state=0).fit(Xn, y), Xn),
        ("extra_trees", ExtraTreesRegressor(10, random_state=0).fit(X, y), X),
        ("extra_trees_clf", ExtraTreesClassifier(10, random_state=0).fit(X, yc), X),
        ("gb_binary", GradientBoostingClassifier(n_estimators=15, random_state=0).fit(X, yc), X),
        ("gb_multiclass", GradientBoostingClassifier(n_estimators=10, random_state=0).fit(X, y3), X),
        ("gb_regressor", GradientBoostingRegressor(n_estimators=15, random_state=0).fit(X, y), X),
        ("gb_early_stop", GradientBoostingRegressor(n_estimators=200, n_iter_no_change=2, random_state=0).fit(X, y), X),
        ("hgb", HistGradientBoostingRegressor(max_iter=15, random_state=0).fit(X, y), X),
        ("hgb_nan", HistGradientBoostingRegressor(max_iter=15, random_state=0).fit(Xn, y), Xn),
        ("hgb_multiclass", HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(Xn, y3), Xn),
        ("hgb_categorical", HistGradientBoostingClassifier(max_iter=10, categorical_features=[4],
                                                           random_state=0).fit(Xc, yc), Xc),
        ("pipeline", make_pipeline(SimpleImputer(), StandardScaler(),
                                   RandomForestRegressor(5, random_state=0)).fit(Xn, y), Xn),
    ]


@pytest.mark.parametrize("name, model, X", _legit_models(), ids=[m[0] for m in _legit_models()])
def test_every_legit_model_family_loads(name, model, X):
    import joblib

    stats = validate_model(model)
    assert stats.trees >= 1 and stats.nodes >= stats.trees
    data = sio.dumps(model)
    # every family, native categorical HistGradientBoosting included, is on the reviewed lists
    assert set(sio.get_untrusted_types(data=data)) <= SKOPS_ALLOWED_TYPES | SKOPS_ALLOWED_FUNCTIONS
    np.testing.assert_array_equal(load_model(data, filename="m.skops").predict(X), model.predict(X))
    buf = io.BytesIO()
    joblib.dump(model, buf)
    np.testing.assert_array_equal(load_model(buf.getvalue(), filename="m.joblib", trusted=True).predict(X),
                                  model.predict(X))


def test_demo_models_validate(demo_cards):
    from demo_models import build

    for spec in build.DEMOS:
        load_model(build.paths(spec.name)["model"])  # validated on the way (.skops, or a library's own file)


def test_validation_of_a_500_tree_forest_is_one_batched_pass(monkeypatch):
    """The structure checks run vectorised over batches of trees, each node once: not a pass per
    tree (500 of them), nor a tree's arrays read again for every other tree."""
    from explainers.trees import validate

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(1000, 10))
    y = X[:, 0] + rng.normal(size=1000)
    forest = RandomForestRegressor(500, max_depth=12, n_jobs=2, random_state=0).fit(X, y)
    passes, reads = [], []
    real_check, real_arrays = validate.check_trees, validate._sk_arrays

    def check_spy(left, right, offsets, **kw):
        passes.append((len(offsets) - 1, len(left)))
        return real_check(left, right, offsets, **kw)

    def arrays_spy(tree, label):
        reads.append(label)
        return real_arrays(tree, label)

    monkeypatch.setattr(validate, "check_trees", check_spy)
    monkeypatch.setattr(validate, "_sk_arrays", arrays_spy)
    stats = validate_model(forest)
    n_nodes = sum(t.tree_.node_count for t in forest.estimators_)
    assert (stats.trees, stats.nodes) == (500, n_nodes)
    assert len(reads) == len(set(reads)) == 500  # each tree's arrays read once
    # every node checked exactly once, in one pass over all 500 trees (they fit one batch)
    assert n_nodes < validate._BATCH_NODES
    assert passes == [(500, n_nodes)], passes


# ----------------------------------------------------------------- the fuzz
FUZZ = r"""
import io, json, sys, zipfile
import numpy as np, skops.io as sio
from sklearn.ensemble import (GradientBoostingClassifier, HistGradientBoostingRegressor,
                              RandomForestRegressor)
from sklearn.tree import DecisionTreeRegressor
from explainers import load_model, InvalidModelError
from explainers.trees import flatten_model

N_MUTANTS, SEED, PROGRESS = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(SEED)
X = rng.uniform(size=(300, 4)); y = X[:, 0] + X[:, 1] * X[:, 2]
Xn = X.copy(); Xn[::5, 2] = np.nan
bases = {
    "tree": (sio.dumps(DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y)), X),
    "forest": (sio.dumps(RandomForestRegressor(4, max_depth=4, random_state=0).fit(X, y)), X),
    "gb": (sio.dumps(GradientBoostingClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, y > 0.6)), X),
    "hgb": (sio.dumps(HistGradientBoostingRegressor(max_iter=4, random_state=0).fit(Xn, y)), Xn),
}

def node_members(data):
    z = zipfile.ZipFile(io.BytesIO(data))
    out = []
    for n in z.namelist():
        if n.endswith('.npy'):
            a = np.load(io.BytesIO(z.read(n)), allow_pickle=False)
            if a.dtype.names and ('left_child' in a.dtype.names or 'is_leaf' in a.dtype.names):
                out.append(n)
    return out

def rewrite(data, member, fn, schema_fn=None):
    src = zipfile.ZipFile(io.BytesIO(data)); out = io.BytesIO()
    with zipfile.ZipFile(out, 'w') as dst:
        for info in src.infolist():
            raw = src.read(info.filename)
            if info.filename == member:
                b = io.BytesIO(); np.save(b, fn(np.load(io.BytesIO(raw))), allow_pickle=False); raw = b.getvalue()
            elif info.filename == 'schema.json' and schema_fn is not None:
                doc = json.loads(raw); schema_fn(doc); raw = json.dumps(doc).encode()
            dst.writestr(info.filename, raw)
    return out.getvalue()

def mutate(arr, kind):
    a = arr.copy(); n = len(a); i = int(rng.integers(n))
    sk = 'left_child' in a.dtype.names
    L, R, F, T = ('left_child', 'right_child', 'feature', 'threshold') if sk else ('left', 'right', 'feature_idx', 'num_threshold')
    internal = np.flatnonzero(a[L] != -1) if sk else np.flatnonzero(a['is_leaf'] == 0)
    if len(internal) and kind not in ('truncate', 'leaf_flip'):
        i = int(rng.choice(internal))
    side = L if rng.random() < 0.5 else R
    if kind == 'child_random':
        a[side][i] = int(rng.integers(-2 if sk else 0, n + 3))
    elif kind == 'child_minus1':
        a[side][i] = -1 if sk else 0
    elif kind == 'child_self':
        a[side][i] = i
    elif kind == 'child_parent':
        parents = np.flatnonzero((a[L] == i) | (a[R] == i))
        a[side][i] = int(parents[0]) if len(parents) else 0
    elif kind == 'child_big':
        a[side][i] = 10**8
    elif kind == 'feature_big':
        a[F][i] = 10**8
    elif kind == 'feature_negative':
        a[F][i] = -int(rng.integers(1, 10**6))
    elif kind == 'feature_near':
        a[F][i] = int(rng.integers(0, 7))
    elif kind == 'threshold':
        a[T][i] = rng.choice([np.nan, np.inf, -np.inf])
    elif kind == 'value_nan':
        if sk:
            a['weighted_n_node_samples'][i] = np.nan
        else:
            a['value'][int(rng.integers(n))] = np.nan
    elif kind == 'truncate':
        a = a[: max(1, n - int(rng.integers(1, 4)))]
    elif kind == 'leaf_flip' and not sk:
        a['is_leaf'][i] = 1 - a['is_leaf'][i]
    elif kind == 'depth' and not sk:
        a['depth'][i] = int(rng.integers(0, 100))
    elif kind == 'categorical' and not sk:
        a['is_categorical'][i] = 1; a['bitset_idx'][i] = int(rng.integers(0, 5))
    return a

def depth_schema(doc):
    # a stored max_depth of every sklearn Tree set at random
    stack = [doc]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            if o.get('__class__') == 'Tree':
                o['content']['content']['max_depth']['content'] = str(int(rng.integers(0, 60)))
            stack.extend(o.values())
        elif isinstance(o, list):
            stack.extend(o)

KINDS = ['child_random', 'child_minus1', 'child_self', 'child_parent', 'child_big', 'feature_big',
         'feature_negative', 'feature_near', 'threshold', 'value_nan', 'truncate', 'leaf_flip', 'depth',
         'categorical', 'stored_depth']
names = list(bases)
members = {k: node_members(v[0]) for k, v in bases.items()}
stats = {'refused': 0, 'loaded_same': 0, 'mismatch': [], 'unexpected': []}
for m in range(N_MUTANTS):
    base = names[m % len(names)]
    data, Xe = bases[base]
    kinds = [str(k) for k in rng.choice(KINDS, size=int(rng.integers(1, 4)))]
    for kind in kinds:
        if kind == 'stored_depth':
            if base != 'hgb':
                data = rewrite(data, None, None, depth_schema)
            continue
        member = str(rng.choice(members[base]))
        data = rewrite(data, member, lambda a: mutate(a, kind))
    with open(PROGRESS, 'w') as fh:
        fh.write(json.dumps({'mutant': m, 'base': base, 'kinds': kinds}))
    try:
        model = load_model(data, filename='m.skops')
    except InvalidModelError as exc:
        stats['refused'] += 1
        continue
    except Exception as exc:
        stats['unexpected'].append([m, base, kinds, f'load: {type(exc).__name__}: {exc}'])
        continue
    try:
        if hasattr(model, 'predict_proba'):
            theirs = model.predict_proba(Xe)
        else:
            theirs = model.predict(Xe)[:, None]
        ours = flatten_model(model).predict(Xe)
        if not np.allclose(ours, theirs, rtol=1e-9, atol=1e-12, equal_nan=False):
            stats['mismatch'].append([m, base, kinds])
        else:
            stats['loaded_same'] += 1
    except Exception as exc:
        stats['unexpected'].append([m, base, kinds, f'predict: {type(exc).__name__}: {exc}'])
print(json.dumps(stats))
"""


def test_fuzzed_tree_arrays_never_crash(tmp_path):
    """200 seeded mutants of four tree families: each refused, or loaded and predicting like our walk."""
    progress = tmp_path / "progress.json"
    try:
        proc = subprocess.run([sys.executable, "-c", FUZZ, "200", "20260115", str(progress)], cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                              timeout=150)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung (killed after 150 s) at mutant {progress.read_text() if progress.exists() else '?'}")
    last = progress.read_text() if progress.exists() else "none"
    assert proc.returncode == 0, f"crashed (0 crashes expected) at mutant {last}\n{_crash_report(proc)}"
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"fuzz: 200 mutants, {stats['refused']} refused, {stats['loaded_same']} loaded and predicted "
          "like the flat walk, 0 crashes")
    assert stats["unexpected"] == [], stats["unexpected"]
    assert stats["mismatch"] == [], stats["mismatch"]
    assert stats["refused"] + stats["loaded_same"] == 200
    assert stats["refused"] >= 100 and stats["loaded_same"] >= 10, stats
