"""Memory from structure the file-size limits do not count (issue #28, item 3).

A small file can state a large model: one-node trees for 65,536 classes (every node holds a
value per class), an oblivious tree 24 levels deep. The readers compute the flattened size
from what the file states (nodes x outputs) and refuse, naming the limit, before any array
is built; the peak memory of the refusal stays within what the file's own bytes account for.
"""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from explainers import InvalidModelError
from explainers.trees.catboost import read_catboost
from explainers.trees.ensemble import structure_bytes
from explainers.trees.lightgbm import read_lightgbm
from explainers.trees.xgboost import read_xgboost
from tests._work_bounds import file_budget, peak_allocation

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
cb = pytest.importorskip("catboost")


def _refused(read, data, match="would take"):
    with peak_allocation() as mem, pytest.raises(InvalidModelError, match=match) as err:
        read(data)
    # the parsed JSON itself takes up to ~30 bytes a byte (Python objects); the stated structure,
    # gigabytes, is never allocated
    assert mem.peak < file_budget(data, per_byte=32), (mem, len(data))
    assert "GLASSBOX_MAX_MODEL_BYTES" in str(err.value)
    return str(err.value)


def _xgb_classes_doc(n_trees: int, k: int = 65_536) -> bytes:
    """An XGBoost multi:softprob JSON of n_trees one-node trees for k classes."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 2))
    b = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 1}, xgb.DMatrix(X, np.arange(90) % 3), 1)
    doc = json.loads(bytes(b.save_raw("json")))
    learner = doc["learner"]
    learner["learner_model_param"]["num_class"] = str(k)
    learner["learner_model_param"]["base_score"] = "5E-1"  # one value for every class (XGBoost 3 writes k)
    model = learner["gradient_booster"]["model"]
    leaf = copy.deepcopy(model["trees"][0])
    tp = leaf["tree_param"]
    tp["num_nodes"] = "1"
    for key in ("left_children", "right_children", "parents", "split_indices", "split_conditions",
                "split_type", "default_left", "base_weights", "loss_changes", "sum_hessian"):
        if key in leaf:
            leaf[key] = [leaf[key][0]] if key not in ("left_children", "right_children") else [-1]
    leaf["parents"] = [2147483647]
    trees = []
    for t in range(n_trees):
        tree = dict(leaf)
        tree["id"] = t
        trees.append(tree)
    model["trees"] = trees
    model["tree_info"] = list(range(n_trees))
    model["gbtree_model_param"]["num_trees"] = str(n_trees)
    if "iteration_indptr" in model:
        model["iteration_indptr"] = [0, n_trees]
    return json.dumps(doc).encode()


def test_xgboost_65536_classes_of_one_node_trees():
    # under the tree-count limit: 5,000 one-node trees, a value for each class in each
    data = _xgb_classes_doc(5_000)
    assert len(data) < 30 << 20
    message = _refused(read_xgboost, data)
    assert "5,000 tree nodes with 65,536 output(s)" in message


def test_lightgbm_as_many_classes_as_one_leaf_trees():
    k = 20_000
    head = ["tree", "version=v4", f"num_class={k}", f"num_tree_per_iteration={k}", "label_index=0",
            "max_feature_idx=1", "objective=multiclass num_class=" + str(k), "feature_names=a b",
            "feature_infos=[-1:1] [-1:1]", ""]
    body = []
    for t in range(k):
        body += [f"Tree={t}", "num_leaves=1", "num_cat=0", "leaf_value=0.5", "leaf_weight=1", "leaf_count=1",
                 "shrinkage=1", ""]
    data = ("\n".join(head + body) + "\nend of trees\n").encode()
    message = _refused(read_lightgbm, data)
    assert f"{k:,} tree nodes with {k:,} output(s)" in message


def test_catboost_deep_oblivious_tree(monkeypatch):
    """Depth 16 under an 8 MB limit stands for the report's depth 24 (96 MiB of JSON) under 2 GB."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    model = cb.CatBoostRegressor(iterations=1, depth=2, verbose=0, allow_writing_files=False).fit(X, X[:, 0])
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.json")
        model.save_model(path, format="json")
        doc = json.load(open(path))
    depth = 16
    tree = doc["oblivious_trees"][0]
    split = tree["splits"][0]
    tree["splits"] = [dict(split) for _ in range(depth)]
    tree["leaf_values"] = [0.0] * (1 << depth)
    tree["leaf_weights"] = [1.0] * (1 << depth)
    data = json.dumps(doc).encode()
    monkeypatch.setenv("GLASSBOX_MAX_MODEL_BYTES", str(8 << 20))
    assert structure_bytes((2 << depth) - 1, 1) > 8 << 20
    _refused(read_catboost, data)
    monkeypatch.setenv("GLASSBOX_MAX_MODEL_BYTES", str(64 << 20))  # the same file under a higher limit reads
    assert read_catboost(data).ensemble.max_depth == depth


def _one_hot_doc(n_cats: int) -> dict:
    """A CatBoost JSON of n_cats depth-1 trees, tree t splitting one-hot on category k<t> with
    leaves [0, t]: a row of category k<i> predicts i (the matching leaf is index 1)."""
    hashes = [1_000_003 * (i + 1) % (2 ** 32 - 5) for i in range(n_cats)]
    return {
        "features_info": {
            "cat_features_hash": [{"hash": h, "value": f"k{i}"} for i, h in enumerate(hashes)],
            "categorical_features": [{"feature_id": "c", "feature_index": 0, "feature_name": "c",
                                      "flat_feature_index": 0, "values": hashes}],
        },
        "model_info": {"params": {"loss_function": {"type": "RMSE"}}},
        "oblivious_trees": [{"leaf_values": [0.0, float(t)], "leaf_weights": [1.0, 1.0],
                             "splits": [{"cat_feature_index": 0, "split_index": t, "split_type": "OneHotFeature",
                                         "value": h}]} for t, h in enumerate(hashes)],
        "scale_and_bias": [1.0, [0.0]],
    }


def test_catboost_thousands_of_one_hot_categories(monkeypatch):
    """4,000 one-hot categories (the report's 3.8 MB file took 218 s: a Python list of every
    other code per split, and a bit loop per code): read in vectorised passes and routed right."""
    import pandas as pd

    doc = _one_hot_doc(4_000)
    data = json.dumps(doc).encode()
    model = read_catboost(data)
    picks = [0, 1, 63, 64, 1999, 3999]
    rows = pd.DataFrame({"c": [f"k{i}" for i in picks] + ["unknown"]})
    np.testing.assert_allclose(model.predict(rows), picks + [0.0], rtol=0, atol=1e-9)
    # the category sets' words are counted before they are built: a low limit refuses by name
    monkeypatch.setenv("GLASSBOX_MAX_MODEL_BYTES", str(1536 << 10))  # the file fits, its sets do not
    _refused(read_catboost, data, match="words of category sets")


def test_xgboost_sets_naming_code_65535(monkeypatch, tmp_path):
    """Categorical splits naming code 65535 (a 104 KB file cost 71 s): each set is 1,026 words
    built from a few bytes of the file, routed as XGBoost routes it, and counted as it is built."""
    import pandas as pd

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"k": pd.Categorical(rng.choice(list("abcd"), 400)), "x": rng.normal(size=400)})
    y = (X.k == "b") * 2.0 + X.x
    b = xgb.XGBRegressor(n_estimators=60, max_depth=2, enable_categorical=True, tree_method="hist",
                         max_cat_to_onehot=1).fit(X, y).get_booster()
    doc = json.loads(bytes(b.save_raw("json")))
    n_sets = 0
    for tree in doc["learner"]["gradient_booster"]["model"]["trees"]:
        if tree.get("categories"):
            tree["categories"] = [65535 for _ in tree["categories"]]
            n_sets += len(tree["categories_nodes"])
    assert n_sets >= 30
    data = json.dumps(doc).encode()
    model = read_xgboost(data)
    lib = xgb.Booster()
    (tmp_path / "m.json").write_bytes(data)
    lib.load_model(str(tmp_path / "m.json"))
    codes = np.column_stack([np.array([0, 1, 2, 3, 65535, 65534], float), np.zeros(6)])
    dm = xgb.DMatrix(codes, feature_names=["k", "x"], feature_types=["c", "q"], enable_categorical=True)
    np.testing.assert_allclose(model.predict(codes), lib.predict(dm), rtol=1e-6, atol=1e-6)
    monkeypatch.setenv("GLASSBOX_MAX_MODEL_BYTES", str(200 << 10))  # the file fits; its sets do not
    assert len(data) < 200 << 10
    _refused(read_xgboost, data, match="words of category sets")


def _native_read(data: bytes, name: str):
    from explainers.io import load_model

    return load_model(data, filename=name)


def test_a_file_stating_hundreds_of_times_its_size_is_refused(monkeypatch):
    """886 KB stating 65,536 classes of one-node trees took 1.3 GB in the server, under the 2 GB
    limit on the trees' memory: a file may state at most GLASSBOX_MAX_MODEL_EXPANSION (200) times
    its size past 256 MB (lowered here to 1 MB, so the file can stay small)."""
    import explainers.limits as limits

    monkeypatch.setattr(limits, "EXPANSION_FLOOR", 1 << 20)
    data = _xgb_classes_doc(40)  # 40 one-node trees x 65,536 classes: 21 MB stated in ~20 KB
    need = structure_bytes(40, 65_536)
    with peak_allocation() as mem, pytest.raises(InvalidModelError, match="GLASSBOX_MAX_MODEL_EXPANSION") as err:
        _native_read(data, "model.json")
    assert mem.peak < file_budget(data, per_byte=32)
    assert f"{need / len(data):,.0f} times the file's" in str(err.value)
    monkeypatch.setenv("GLASSBOX_MAX_MODEL_EXPANSION", str(need // len(data) + 1))
    assert _native_read(data, "model.json").ensemble.n_raw == 65_536  # the operator may allow it


def test_models_the_libraries_train_expand_far_less(monkeypatch, tmp_path):
    """Multiclass models as the libraries save them state a few times their size at most
    (a value per class per node): the expansion limit, with no floor, never meets them."""
    import pandas as pd

    import explainers.limits as limits

    monkeypatch.setattr(limits, "EXPANSION_FLOOR", 0)
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(600, 6)), columns=list("abcdef"))
    y = (X.a * 3 + X.b).round().clip(-4, 5).astype(int) + 4  # 10 classes
    files = {}
    xgb.XGBClassifier(n_estimators=20, max_depth=4).fit(X, y).save_model(tmp_path / "x.json")
    files["x.json"] = (tmp_path / "x.json").read_bytes()
    lgb.LGBMClassifier(n_estimators=20, num_leaves=15, verbose=-1).fit(X, y).booster_.save_model(tmp_path / "l.txt")
    files["l.txt"] = (tmp_path / "l.txt").read_bytes()
    model = cb.CatBoostClassifier(iterations=20, depth=4, verbose=0, allow_writing_files=False).fit(X, y)
    model.save_model(str(tmp_path / "c.json"), format="json")
    files["c.json"] = (tmp_path / "c.json").read_bytes()
    for name, data in files.items():
        ens = _native_read(data, name).ensemble
        ratio = structure_bytes(ens.n_nodes, ens.n_raw) / len(data)
        assert ratio < limits.limit("model_expansion") / 10, (name, ratio)


def test_xgboost_trees_are_counted_before_the_json_is_parsed(monkeypatch):
    """A file with more trees than the limit is refused from the bytes: the 180 MB one took 5 GB
    (its JSON parsed, and the nesting check kept an index per byte) before the count refused it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    b = xgb.train({"max_depth": 3}, xgb.DMatrix(X, X[:, 0]), 1)
    doc = json.loads(bytes(b.save_raw("json")))
    model = doc["learner"]["gradient_booster"]["model"]
    model["trees"] = [dict(model["trees"][0], id=t) for t in range(3_000)]
    model["tree_info"] = [0] * 3_000
    model["gbtree_model_param"]["num_trees"] = "3000"
    model["iteration_indptr"] = list(range(3_001))
    data = json.dumps(doc).encode()
    monkeypatch.setenv("GLASSBOX_MAX_TREES", "2000")
    with peak_allocation() as mem, pytest.raises(InvalidModelError, match="3,000 trees.*GLASSBOX_MAX_TREES"):
        read_xgboost(data)
    assert mem.peak < file_budget(data, per_byte=1)  # no parse, and no index per byte
