"""Hostile upload files (issue #28's reproductions) fed to Glassbox's upload readers as the
dashboard feeds them, with what each costs.

Each reproduction is re-created as a file, crafted the way the tests craft it (their helpers
are imported where they are importable), and read by ``explainers.io.isolated``:
``load_model_isolated(data, filename=...)`` for a model and ``load_data_isolated(data,
model=..., filename=...)`` for data, each of which reads the file in a child Python with a
CPU and memory budget (``GLASSBOX_MAX_PARSE_SECONDS`` / ``GLASSBOX_MAX_PARSE_BYTES``).

One row per reproduction:

  size        the file's size. Every reproduction runs at the report's size (none was too slow
              on 2 cores): 3c is the full depth 24 (96 MiB), 3d/3d2 are 92 MB and 180 MB of
              trees; 3a is the test's 5,000 trees (2.2 MB) and 3a2 the report's ~886 KB (2,600
              tighter trees: under the memory limit, refused as 1,500 times its size); 4a/4b/4c have as many trees
              as bring them near the report's 104 KB / 122 KB / 3.8 MB; 2b and 5b add the tests'
              larger sizes
  expect      what the fix should do: ``refused`` (a clear message) or ``loaded`` (quickly;
              loaded models with a check are compared with the library or the definition)
  outcome     loaded / refused, then the first ~120 characters of the message (or what was
              read); ``!`` marks an outcome other than the expected one, ``!!`` a peak over 1 GB
  reader MB   the peak RSS (VmHWM) of the child that read the file, and of any process it
              started (the .cbm converter), polled every 5 ms from /proc while it runs
  maxrss MB   ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` read by the calling process after the
              call (its only child is the reader). Linux carries a process's ru_maxrss over
              fork and exec (a child starts at its parent's figure), so this column never reads
              below the caller's own size at the fork: imports plus the file's bytes (measured:
              a process of 800 MB running a 13 MB child reads 813 MB here). ``reader MB`` is the
              reader's own figure.
  caller +MB  growth of the calling process's own peak RSS (its VmHWM, which starts afresh at
              exec) over the call: what the server pays, the unpickled result included
  cpu s       user+sys CPU of the calling process's children (the reader, the converter)
  wall s      wall time of the call

Each case runs in processes of its own: ``--craft NAME DIR`` writes the file (its memory is
not counted anywhere), then ``--one NAME DIR`` reads it as the server would and reports the
figures above (the process that waited for the reader is the one whose RUSAGE_CHILDREN covers
the reader alone; this script's own RUSAGE_CHILDREN is a running maximum over every child,
crafting included, so it cannot tell one case from the next). Both steps are bounded by
``--timeout`` (the reader itself by its own wall limit, 2 x the CPU budget + 60 s). The footer
gives this process's own peak RSS growth over the run.

``--fuzz N``: tests/test_fuzz_formats.py's seeded mutants (its ``_files``, ``_mutants``, its
``OURS`` reader script and ``LIBRARY`` script), N per format, read by Glassbox's readers
in a 3 GB process and by the library in another; a reader process that dies is counted as a
crash and restarted after that mutant. Per format: refused, read, compared with the library,
crashes, disagreements (and the rest: hangs, refusals that were not an ExplainerError,
non-finite predictions, and of the mutants Glassbox read and predicted, those the library's
own process died or hung on).

    python benchmarks/hostile_files.py                 # the table (about 2.5 minutes on 2 cores)
    python benchmarks/hostile_files.py --only 3c,5a    # some rows
    python benchmarks/hostile_files.py --list
    python benchmarks/hostile_files.py --fuzz 32
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SCRIPT = str(Path(__file__).resolve())
_MB = 1 << 20


# ------------------------------------------------------------------ crafting
def _xgb_train(params, X, y, rounds, **dm):
    import xgboost as xgb

    return xgb.train({"max_depth": 3, "seed": 0, **params}, xgb.DMatrix(X, y, **dm), rounds)


def _baseline_model():
    X = np.random.default_rng(0).normal(size=(300, 3))
    b = _xgb_train({"max_depth": 3}, X, X[:, 0] + X[:, 1] * X[:, 2], 4)
    return dict(data=bytes(b.save_raw("json")), filename="model.json", note="4 trees of depth 3, as XGBoost saves")


def _baseline_data():
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(1000, 3)), columns=list("abc"))
    return dict(data=frame.to_csv(index=False).encode(), filename="data.csv", note="1,000 rows x 3 columns")


def _cbm_crasher(k):
    def craft():
        from tests.test_cbm_process import CRASHERS, _cbm

        pos, byte = CRASHERS[k]
        with tempfile.TemporaryDirectory() as tmp:
            data = bytearray(_cbm(Path(tmp)))
            data[pos] = byte
            path = os.path.join(tmp, "m.cbm")
            with open(path, "wb") as fh:
                fh.write(data)
            # catboost itself on it, in a process of its own: load, predict, save as JSON
            steps = ("import sys, numpy, catboost; m = catboost.CatBoost(); m.load_model(sys.argv[1], format='cbm'); "
                     "print('load_model', flush=True); m.predict(numpy.zeros((2, 3))); print('predict', flush=True); "
                     "m.save_model(sys.argv[1] + '.json', format='json'); print('save_model', flush=True)")
            proc = subprocess.run([sys.executable, "-c", steps, path], capture_output=True, text=True, timeout=120,
                                  check=False)
        done = proc.stdout.split()
        if proc.returncode < 0:
            import signal

            step = next(s for s in ("load_model", "predict", "save_model") if s not in done)
            lib = f"catboost itself dies of {signal.Signals(-proc.returncode).name} in {step}"
        elif proc.returncode == 0:
            lib = "catboost itself loads, predicts and saves it"
        else:
            lib = f"catboost itself refuses it after {done[-1] if done else 'nothing'}"
        return dict(data=bytes(data), filename="model.cbm", note=f"byte {pos} set to {byte}; {lib}")
    return craft


def _escaped_quotes(n_bytes):
    def craft():
        body = b'{"learner": {}, "x": "' + b'\\"' * (n_bytes // 2)
        return dict(data=body, filename="model.json", note="an unterminated string of \\\" (tests/test_hostile_text.py)")
    return craft


def _xgb_65536_classes(n_trees=5_000, compact=False):
    def craft():
        """tests/test_structure_limits.py's craft (5,000 one-node trees, a value per class in each).
        ``compact``: the same trees without the empty category fields, written without spaces, and a
        scalar base_score as XGBoost 2 wrote it: the report's ~886 KB holds about 2,600 of them."""
        import xgboost as xgb

        rng = np.random.default_rng(0)
        X = rng.normal(size=(90, 2))
        b = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 1},
                      xgb.DMatrix(X, np.arange(90) % 3), 1)
        doc = json.loads(bytes(b.save_raw("json")))
        learner = doc["learner"]
        learner["learner_model_param"]["num_class"] = "65536"
        model = learner["gradient_booster"]["model"]
        leaf = copy.deepcopy(model["trees"][0])
        leaf["tree_param"]["num_nodes"] = "1"
        for key in ("left_children", "right_children", "parents", "split_indices", "split_conditions",
                    "split_type", "default_left", "base_weights", "loss_changes", "sum_hessian"):
            if key in leaf:
                leaf[key] = [leaf[key][0]] if key not in ("left_children", "right_children") else [-1]
        leaf["parents"] = [2147483647]
        if compact:
            learner["learner_model_param"]["base_score"] = "5E-1"
            for key in ("categories", "categories_nodes", "categories_segments", "categories_sizes"):
                leaf.pop(key, None)
        model["trees"] = [dict(leaf, id=t) for t in range(n_trees)]
        model["tree_info"] = list(range(n_trees))
        model["gbtree_model_param"]["num_trees"] = str(n_trees)
        if "iteration_indptr" in model:
            model["iteration_indptr"] = [0, n_trees]
        from explainers.trees.ensemble import structure_bytes

        stated = structure_bytes(n_trees, 65536) / (1 << 30)
        data = json.dumps(doc, separators=(",", ":") if compact else None).encode()
        return dict(data=data, filename="model.json",
                    note=f"{n_trees:,} one-node trees x 65,536 values: {stated:.2f} GB stated"
                         + ("; compact, base_score scalar" if compact else ""))
    return craft


def _lgb_classes_as_trees():
    """tests/test_structure_limits.py's craft (20,000 one-leaf trees, num_class=20,000)."""
    k = 20_000
    head = ["tree", "version=v4", f"num_class={k}", f"num_tree_per_iteration={k}", "label_index=0",
            "max_feature_idx=1", "objective=multiclass num_class=" + str(k), "feature_names=a b",
            "feature_infos=[-1:1] [-1:1]", ""]
    body = []
    for t in range(k):
        body += [f"Tree={t}", "num_leaves=1", "num_cat=0", "leaf_value=0.5", "leaf_weight=1", "leaf_count=1",
                 "shrinkage=1", ""]
    return dict(data=("\n".join(head + body) + "\nend of trees\n").encode(), filename="model.txt",
                note=f"num_class={k:,} and {k:,} one-leaf trees")


def _catboost_json(model, pool=None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.json")
        model.save_model(path, format="json", pool=pool)
        with open(path) as fh:
            return json.load(fh)


def _catboost_deep(depth):
    def craft():
        """tests/test_structure_limits.py's craft at the report's depth; leaves 0 and weights 1
        written as integers give the report's 96 MiB at depth 24."""
        import catboost as cb

        X = np.random.default_rng(0).normal(size=(200, 2))
        model = cb.CatBoostRegressor(iterations=1, depth=2, verbose=0, allow_writing_files=False).fit(X, X[:, 0])
        doc = _catboost_json(model)
        tree = doc["oblivious_trees"][0]
        split = tree["splits"][0]
        tree["splits"] = [dict(split) for _ in range(depth)]
        tree["leaf_values"] = [0] * (1 << depth)
        tree["leaf_weights"] = [1] * (1 << depth)
        return dict(data=json.dumps(doc).encode(), filename="model.json",
                    note=f"one oblivious tree of depth {depth} ({1 << depth:,} leaves)")
    return craft


def _xgb_many_trees(n_trees=24_000, depth=5):
    def craft():
        """More trees than GLASSBOX_MAX_TREES (20,000): a trained model's depth-5 trees repeated."""
        rng = np.random.default_rng(0)
        X = rng.normal(size=(4000, 8))
        b = _xgb_train({"max_depth": depth, "min_child_weight": 0}, X, X @ rng.normal(size=8) + np.sin(3 * X[:, 0]), 16)
        doc = json.loads(bytes(b.save_raw("json")))
        model = doc["learner"]["gradient_booster"]["model"]
        base = model["trees"]
        model["trees"] = [dict(base[t % len(base)], id=t) for t in range(n_trees)]
        model["tree_info"] = [0] * n_trees
        model["gbtree_model_param"]["num_trees"] = str(n_trees)
        model["iteration_indptr"] = list(range(n_trees + 1))
        nodes = sum(int(t["tree_param"]["num_nodes"]) for t in model["trees"])
        return dict(data=json.dumps(doc).encode(), filename="model.json",
                    note=f"{n_trees:,} trees of depth {depth} ({nodes:,} nodes)")
    return craft


def _xgb_code_65535(n_estimators=128):
    def craft():
        """tests/test_structure_limits.py's craft (there with 60 trees, 49 KB; the report's file was
        ~104 KB): every categorical set names code 65535."""
        import pandas as pd
        import xgboost as xgb

        rng = np.random.default_rng(0)
        X = pd.DataFrame({"k": pd.Categorical(rng.choice(list("abcd"), 400)), "x": rng.normal(size=400)})
        y = (X.k == "b") * 2.0 + X.x
        b = xgb.XGBRegressor(n_estimators=n_estimators, max_depth=2, enable_categorical=True, tree_method="hist",
                             max_cat_to_onehot=1).fit(X, y).get_booster()
        doc = json.loads(bytes(b.save_raw("json")))
        n_sets = 0
        for tree in doc["learner"]["gradient_booster"]["model"]["trees"]:
            if tree.get("categories"):
                tree["categories"] = [65535 for _ in tree["categories"]]
                n_sets += len(tree["categories_nodes"])
        data = json.dumps(doc).encode()
        lib = xgb.Booster()
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "m.json"), "wb") as fh:
                fh.write(data)
            lib.load_model(os.path.join(tmp, "m.json"))
        codes = np.column_stack([np.array([0, 1, 2, 3, 65535, 65534], float), np.zeros(6)])
        dm = xgb.DMatrix(codes, feature_names=["k", "x"], feature_types=["c", "q"], enable_categorical=True)
        return dict(data=data, filename="model.json", note=f"{n_sets} category sets naming code 65535",
                    check=dict(rows=codes.tolist(), want=lib.predict(dm).tolist(), tol=1e-6, rtol=1e-6,
                               what="XGBoost's predict"))
    return craft


def _lgb_full_bitsets(n_trees=5):
    def craft():
        """tests/test_native_lightgbm.py's one-split categorical tree (_cat_tree), with a full
        bitset of 2,048 words (codes 0..65535 all go left), repeated over ``n_trees`` trees."""
        import lightgbm as lgb

        words = " ".join(["4294967295"] * 2048)
        head = ["tree", "version=v4", "num_class=1", "num_tree_per_iteration=1", "label_index=0",
                "max_feature_idx=0", "objective=regression", "feature_names=x", "feature_infos=0:1:2", ""]
        body = []
        for t in range(n_trees):
            body += [f"Tree={t}", "num_leaves=2", "num_cat=1", "split_feature=0", "threshold=0", "decision_type=1",
                     "left_child=-1", "right_child=-2", f"leaf_value={t + 1} -{t + 1}", "leaf_count=3 4",
                     "internal_count=7", "cat_boundaries=0 2048", f"cat_threshold={words}", "is_linear=0",
                     "shrinkage=1", ""]
        text = "\n".join(head + body + ["end of trees", ""])
        rows = np.array([[0.0], [1.0], [65535.0], [65536.0], [-1.0], [np.nan], [1e9]])
        try:
            want = lgb.Booster(model_str=text).predict(rows).tolist()
            check = dict(rows=rows.tolist(), want=want, tol=1e-12, what="LightGBM's predict")
            lib = "LightGBM reads it"
        except Exception as exc:  # noqa: BLE001 - reported in the row
            check, lib = None, f"LightGBM refuses it ({type(exc).__name__})"
        return dict(data=text.encode(), filename="model.txt",
                    note=f"{n_trees} trees, each a 2,048-word bitset (codes 0..65535); {lib}", check=check)
    return craft


def _catboost_one_hot(n_cats):
    def craft():
        """tests/test_structure_limits.py's _one_hot_doc: tree t splits one-hot on category k<t>."""
        from tests.test_structure_limits import _one_hot_doc

        picks = [0, 1, 63, 64, n_cats // 2, n_cats - 1]
        return dict(data=json.dumps(_one_hot_doc(n_cats)).encode(), filename="model.json",
                    note=f"{n_cats:,} one-hot categories, a depth-1 tree each",
                    check=dict(rows=[[f"k{i}"] for i in picks] + [["unknown"]], columns=["c"],
                               want=[float(i) for i in picks] + [0.0], tol=1e-9, what="the definition (k<i> -> i)"))
    return craft


def _hostile_header(n_bytes):
    def craft():
        header = 'a,"a,"' * (n_bytes // 6)
        return dict(data=(header + "\n1,2\n").encode(), filename="data.csv",
                    note='header a,"a,"... (tests/test_hostile_text.py)')
    return craft


def _catboost_two_faced(change):
    def craft():
        """tests/test_native_catboost.py::test_two_faced_split_is_refused's craft."""
        import catboost as cb

        rng = np.random.default_rng(2)
        X = rng.normal(size=(300, 3))
        model = cb.CatBoostRegressor(iterations=4, depth=3, verbose=0, random_seed=0, allow_writing_files=False)
        model.fit(X, X[:, 0] + X[:, 1])
        doc = _catboost_json(model)
        split = doc["oblivious_trees"][0]["splits"][0]
        n_borders = sum(len(f["borders"]) for f in doc["features_info"]["float_features"])
        before = dict(split)
        if change == "split_index":
            split["split_index"] = (split["split_index"] + 1) % n_borders
        elif change == "border":
            split["border"] = split["border"] + 0.25
        else:
            split["float_feature_index"] = (split["float_feature_index"] + 1) % 3
        key = {"feature": "float_feature_index"}.get(change, change)
        return dict(data=json.dumps(doc).encode(), filename="model.json",
                    note=f"tree 0 split 0: {key} {before[key]} -> {split[key]}, the rest as saved")
    return craft


def _lgb_count(field_name, value):
    def craft():
        """tests/test_native_lightgbm.py::test_counts_lightgbm_refuses_are_refused's craft."""
        import lightgbm as lgb

        rng = np.random.default_rng(1)
        X = rng.normal(size=(300, 3))
        b = lgb.train({"verbose": -1, "num_leaves": 4}, lgb.Dataset(X, X[:, 0]), 2)
        text = b.model_to_string()
        line = re.search(rf"^{field_name}=(.*)$", text, flags=re.MULTILINE)
        numbers = line.group(1).split()
        numbers[0] = value
        bad = text.replace(line.group(0), f"{field_name}={' '.join(numbers)}", 1)
        return dict(data=bad.encode(), filename="model.txt", note=f"first {field_name} set to {value}")
    return craft


def _lgb_categorical_inputs():
    """tests/test_native_lightgbm.py::test_categorical_inputs_are_cut_toward_zero_as_lightgbm_does."""
    import lightgbm as lgb
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 2000
    X = pd.DataFrame({"c": rng.integers(0, 5, n).astype(float), "x": rng.normal(size=n)})
    y = np.where(X.c == 0, 2.0, np.where(X.c == 1, -1.0, 0.5)) + X.x * 0.1
    b = lgb.train({"verbose": -1, "min_data_per_group": 5, "cat_smooth": 1, "num_leaves": 8},
                  lgb.Dataset(X, y, categorical_feature=["c"]), 5)
    vals = np.array([-0.5, -0.99, -1.0, -1.5, 0.5, 0.99, 1.7, 4.2, 5.0, 63.9, 64.0, 1e10, -1e10,
                     2.0 ** 31 + 0.5, np.nan, -0.0])
    rows = np.column_stack([vals, rng.normal(size=len(vals))])
    return dict(data=b.model_to_string().encode(), filename="model.txt",
                note="a model LightGBM trained on category c; inputs -0.5, -0.99, 1.7, 1e10, NaN, ...",
                check=dict(rows=rows.tolist(), want=b.predict(rows).tolist(), tol=1e-12, what="LightGBM's predict",
                           first="c=-0.5"))


def _bidi_column():
    """tests/views/test_served_models.py's U+202E column, as an uploaded CSV with its model (.skops)."""
    import pandas as pd
    import skops.io as sio
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(0)
    evil = "\u202egnirts"
    X = pd.DataFrame({"speed": rng.normal(size=60), evil: rng.normal(size=60)})
    model = sio.dumps(LinearRegression().fit(X, X.speed))
    return dict(data=X.assign(y=X.speed).to_csv(index=False).encode(), filename="data.csv",
                companion=(model.hex(), "model.skops"), target="y",
                note="column '\\u202egnirts' (reads as 'string' reversed), with a LinearRegression on it")


def _xgb_fractional_child():
    """tests/test_native_xgboost.py::test_fractional_child_index_is_refused_not_truncated's craft."""
    from explainers.trees.xgboost import decode_ubjson
    from tests import _native_xgboost_files as F
    from tests.test_native_xgboost import XR, YR, _train

    doc = decode_ubjson(bytes(_train({"objective": "reg:squarederror"}, XR, YR, 2).save_raw("ubj")))
    tree = F.first_tree(doc)
    kids = [int(v) for v in tree["left_children"]]
    kids[0] = kids[0] + 0.5
    tree["left_children"] = kids
    return dict(data=F.to_json(doc), filename="model.json", note=f"tree 0: left_children[0] = {kids[0]}")


@dataclass
class Case:
    name: str
    what: str
    expect: str  # "refused" or "loaded"
    craft: object = None  # () -> dict(data, filename, note, [check, companion, target])
    reader: str = "model"
    skip: str = ""


CASES = [
    Case("0a", "baseline: a valid XGBoost JSON", "loaded", _baseline_model),
    Case("0b", "baseline: a valid CSV", "loaded", _baseline_data, reader="data"),
    Case("1a", "CatBoost .cbm, one byte changed (crasher 1 of 4)", "refused", _cbm_crasher(0)),
    Case("1b", "CatBoost .cbm, one byte changed (crasher 2 of 4)", "refused", _cbm_crasher(1)),
    Case("1c", "CatBoost .cbm, one byte changed (crasher 3 of 4)", "refused", _cbm_crasher(2)),
    Case("1d", "CatBoost .cbm, one byte changed (crasher 4 of 4)", "refused", _cbm_crasher(3)),
    Case("2a", 'XGBoost "JSON" {"learner": {}, "x": " + 160 KB of \\"', "refused", _escaped_quotes(160 << 10)),
    Case("2b", 'the same with 2 MB of \\" (the test\'s size)', "refused", _escaped_quotes(2 << 20)),
    Case("3a", "XGBoost multi:softprob num_class=65536, one-node trees", "refused", _xgb_65536_classes()),
    Case("3a2", "the same at the report's ~886 KB (fewer trees, tighter)", "refused",
         _xgb_65536_classes(2_600, compact=True)),
    Case("3b", "LightGBM multiclass, num_class = number of one-leaf trees", "refused", _lgb_classes_as_trees),
    Case("3c", "CatBoost JSON, one oblivious tree of depth 24", "refused", _catboost_deep(24)),
    Case("3d", "XGBoost JSON, more trees than GLASSBOX_MAX_TREES", "refused", _xgb_many_trees()),
    Case("3d2", "the same at the report's largest size, ~180 MB", "refused", _xgb_many_trees(47_000)),
    Case("4a", "XGBoost categorical splits naming code 65535", "loaded", _xgb_code_65535()),
    Case("4b", "LightGBM categorical splits with full bitsets", "loaded", _lgb_full_bitsets()),
    Case("4c", "CatBoost JSON, thousands of one-hot categories", "loaded", _catboost_one_hot(17_500)),
    Case("5a", 'CSV whose 64 KB header is a,"a,"...', "refused", _hostile_header(64 << 10), reader="data"),
    Case("5b", 'CSV whose 1 MB header is a,"a,"... (the test\'s size)', "refused", _hostile_header(1 << 20),
         reader="data"),
    Case("6a", "CatBoost float split: border disagrees with split_index", "refused", _catboost_two_faced("border")),
    Case("6b", "CatBoost float split: float_feature_index disagrees", "refused", _catboost_two_faced("feature")),
    Case("6c", "CatBoost float split: split_index names another border", "refused",
         _catboost_two_faced("split_index")),
    Case("6d", "LightGBM leaf_count=inf", "refused", _lgb_count("leaf_count", "inf")),
    Case("6e", "LightGBM internal_count=5e-324", "refused", _lgb_count("internal_count", "5e-324")),
    Case("7", "LightGBM categorical input -0.5 (a prediction check)", "loaded", _lgb_categorical_inputs),
    Case("9", "a model URL", "-", skip="skipped: a URL, not a file"),
    Case("10a", "a column named with U+202E (data file)", "loaded", _bidi_column, reader="data"),
    Case("10b", "XGBoost child index 1.5", "refused", _xgb_fractional_child),
]
BY_NAME = {c.name: c for c in CASES}


# ----------------------------------------------------------------- one case
def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _descendants(pid: int) -> list[int]:
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{p}/task/{tid}/children") as fh:
                    kids = [int(k) for k in fh.read().split()]
            except (OSError, ValueError):
                continue
            out += kids
            stack += kids
    return out


class _ReaderPeak(threading.Thread):
    """Polls the VmHWM (peak RSS) of this process's descendants while a read runs. A child
    between fork and exec still shows this process's memory; it is skipped (same cmdline)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak_kb = 0
        self.done = threading.Event()
        self.me = os.getpid()
        self.my_cmdline = _cmdline(self.me)

    def run(self):
        while not self.done.is_set():
            for pid in _descendants(self.me):
                if _cmdline(pid) != self.my_cmdline:
                    self.peak_kb = max(self.peak_kb, _status_kb(pid, "VmHWM"))
            self.done.wait(0.005)


def _describe(result, reader: str) -> str:
    if reader == "data":
        cols = [str(c) for c in result.X.columns]
        shown = ", ".join(ascii(c) for c in cols[:4]) + (", ..." if len(cols) > 4 else "")
        text = f"{len(result.X):,} rows x {len(cols)} columns [{shown}]"
        odd = [c for c in cols if any(unicodedata.category(ch) == "Cf" for ch in c)]
        if odd:  # what the dashboard's tables and Markdown show for such a name
            from dashboard.safe_text import md, shown_frame

            in_tables = next(iter(shown_frame(result.X[odd[:1]]).columns))
            text += f"; the dashboard shows {in_tables!a} in tables, {md(odd[0])!a} in text"
        return text
    ens = getattr(result, "ensemble", None)
    if ens is not None:
        return f"{type(result).__name__}: {ens.n_trees:,} trees, depth {ens.max_depth}"
    return type(result).__name__


def _check(model, check: dict) -> tuple[bool, str]:
    import pandas as pd

    rows = np.asarray(check["rows"], dtype=object if check.get("columns") else float)
    if check.get("columns"):
        rows = pd.DataFrame(rows, columns=check["columns"])
    got = np.asarray(model.predict(rows), dtype=float).reshape(-1)
    want = np.asarray(check["want"], dtype=float).reshape(-1)
    diff = float(np.max(np.abs(got - want))) if got.shape == want.shape else float("inf")
    ok = got.shape == want.shape and bool(np.all(np.abs(got - want) <= check["tol"] + check.get("rtol", 0) * np.abs(want)))
    text = f"max |ours - {check['what']}| = {diff:.3g} over {len(want)} rows"
    if check.get("first"):
        text += f" ({check['first']}: ours {got[0]:.6g}, theirs {want[0]:.6g})"
    return ok, text


def run_one(name: str, folder: str) -> dict:
    """In the case process: read the crafted file as the server does and measure the call."""
    case = BY_NAME[name]
    with open(os.path.join(folder, f"{name}.json")) as fh:
        meta = json.load(fh)
    with open(os.path.join(folder, f"{name}.bin"), "rb") as fh:
        data = fh.read()
    from explainers.errors import ExplainerError
    from explainers.io.isolated import load_data_isolated, load_model_isolated

    model = None
    if meta.get("companion"):  # the model the server already read, for a data file
        from explainers import load_model

        blob, fname = meta["companion"]
        model = load_model(bytes.fromhex(blob), filename=fname)
    self_before = _status_kb(os.getpid(), "VmHWM")
    kids_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    poll = _ReaderPeak()
    poll.start()
    t0 = time.perf_counter()
    out = {}
    try:
        if case.reader == "model":
            result = load_model_isolated(data, filename=meta["filename"])
        else:
            result = load_data_isolated(data, model=model, target=meta.get("target"), filename=meta["filename"])
        out["outcome"] = "loaded"
    except ExplainerError as exc:
        out.update(outcome="refused", message=f"{type(exc).__name__}: {exc}")
        result = None
    except Exception as exc:  # noqa: BLE001 - not a refusal the dashboard shows: reported as such
        out.update(outcome="ERROR", message=f"{type(exc).__name__}: {exc}")
        result = None
    out["wall_s"] = time.perf_counter() - t0
    poll.done.set()
    poll.join()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    out["reader_mb"] = poll.peak_kb / 1024
    out["maxrss_mb"] = kids.ru_maxrss / 1024
    out["cpu_s"] = (kids.ru_utime + kids.ru_stime) - (kids_before.ru_utime + kids_before.ru_stime)
    out["caller_growth_mb"] = (_status_kb(os.getpid(), "VmHWM") - self_before) / 1024
    out["caller_mb"] = _status_kb(os.getpid(), "VmHWM") / 1024
    if result is not None:  # described once the figures are taken
        out["message"] = _describe(result, case.reader)
    if result is not None and meta.get("check"):
        ok, text = _check(result, meta["check"])
        out["check_ok"] = ok
        out["message"] = text + "; " + out["message"]
    return out


def craft_one(name: str, folder: str) -> None:
    spec = BY_NAME[name].craft()
    data = spec.pop("data")
    with open(os.path.join(folder, f"{name}.bin"), "wb") as fh:
        fh.write(data)
    spec["size"] = len(data)
    with open(os.path.join(folder, f"{name}.json"), "w") as fh:
        json.dump(spec, fh)


# ------------------------------------------------------------------- table
def _size(n: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", _MB), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _plain(text: str, n: int) -> str:
    """One line of at most n characters, format and control characters escaped (a U+202E in a
    message would print the rest of the line reversed)."""
    s = " ".join(str(text).split())
    s = "".join(ch if ch.isprintable() and unicodedata.category(ch) != "Cf" else ascii(ch)[1:-1] for ch in s)
    return s if len(s) <= n else s[: n - 3] + "..."


HEAD = (f"{'#':<4} {'what':<58} {'size':>9} {'expect':<8} {'reader MB':>9} {'maxrss MB':>9} {'caller +MB':>10} "
        f"{'cpu s':>6} {'wall s':>6}  outcome")


def _row(case: Case, meta: dict, res: dict) -> str:
    flag = ""
    if res.get("outcome") != case.expect or res.get("check_ok") is False:
        flag += "!"
    if res.get("reader_mb", 0) > 1024:
        flag += "!!"
    what = case.what
    nums = (f"{res['reader_mb']:>9.0f} {res['maxrss_mb']:>9.0f} {res['caller_growth_mb']:>10.1f} "
            f"{res['cpu_s']:>6.1f} {res['wall_s']:>6.1f}") if "wall_s" in res else f"{'':>9} {'':>9} {'':>10} {'':>6} {'':>6}"
    outcome = f"{flag}{res.get('outcome', '?')}: {_plain(res.get('message', ''), 120)}"
    return (f"{case.name:<4} {_plain(what, 58):<58} {_size(meta['size']) if 'size' in meta else '-':>9} "
            f"{case.expect:<8} {nums}  {outcome}")


def _note(meta: dict) -> list[str]:
    """The crafted file's own description, on a line below its row."""
    return [f"{'':<5}  ({_plain(meta['note'], 200)})"] if meta.get("note") else []


def _child(args: list[str], timeout: float) -> tuple[int | None, str, str]:
    try:
        proc = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=timeout,
                              cwd=str(ROOT), check=False)
        return proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        return None, (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or ""), ""


def table(names: list[str], timeout: float) -> None:
    start_self = _status_kb(os.getpid(), "VmHWM")
    print(f"Glassbox hostile upload files, read by explainers.io.isolated (parse budget: "
          f"{os.environ.get('GLASSBOX_MAX_PARSE_SECONDS', '120')} CPU s, "
          f"{os.environ.get('GLASSBOX_MAX_PARSE_BYTES', '6GB')} memory; {os.cpu_count()} CPUs)")
    print(HEAD)
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="glassbox-hostile-") as folder:
        for name in names:
            case = BY_NAME[name]
            if case.skip:
                print(f"{case.name:<4} {_plain(case.what, 58):<58} {'-':>9} {case.expect:<8} "
                      f"{'':>9} {'':>9} {'':>10} {'':>6} {'':>6}  {case.skip}", flush=True)
                continue
            rc, _, err = _child(["--craft", name, folder], timeout)
            if rc != 0:
                why = "timed out" if rc is None else f"exit {rc}: {_plain(err.strip().splitlines()[-1] if err.strip() else '', 100)}"
                print(f"{case.name:<4} {_plain(case.what, 58):<58} {'-':>9} {case.expect:<8} "
                      f"{'':>9} {'':>9} {'':>10} {'':>6} {'':>6}  !crafting failed ({why})", flush=True)
                continue
            with open(os.path.join(folder, f"{name}.json")) as fh:
                meta = json.load(fh)
            t0 = time.perf_counter()
            rc, out, err = _child(["--one", name, folder], timeout)
            line = next((ln for ln in reversed(out.splitlines()) if ln.startswith("@@")), None)
            if line is None:
                why = "timed out" if rc is None else f"the calling process died (exit {rc})"
                res = dict(outcome="CALLER DIED", message=f"{why}, {time.perf_counter() - t0:.0f} s; "
                           + _plain(err.strip().splitlines()[-1] if err.strip() else "", 80))
            else:
                res = json.loads(line[2:])
            print(_row(case, meta, res), flush=True)
            for extra in _note(meta):
                print(extra, flush=True)
            os.remove(os.path.join(folder, f"{name}.bin"))
    growth = (_status_kb(os.getpid(), "VmHWM") - start_self) / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"this process (it crafts and reads nothing itself): peak RSS {_status_kb(os.getpid(), 'VmHWM') / 1024:.0f} MB, "
          f"growth over the run {growth:.1f} MB; all its children: {kids.ru_utime + kids.ru_stime:.0f} CPU s, "
          f"largest ru_maxrss {kids.ru_maxrss / 1024:.0f} MB (crafting included); {time.perf_counter() - t_all:.0f} s in all")


# -------------------------------------------------------------------- fuzz
def _ours(script: str, library: str, mutants: list[bytes], probe: list, timeout: float) -> tuple[list, int, int]:
    """tests/test_fuzz_formats.py's OURS script over the mutants; a process that dies (or hangs)
    on a mutant counts it as a crash (or hang) and the next process starts after it."""
    results: list = []
    crashes = hangs = 0
    while len(results) < len(mutants):
        rest = mutants[len(results):]
        try:
            proc = subprocess.run([sys.executable, "-c", script, str(ROOT), library, json.dumps(probe)],
                                  input="\n".join(m.hex() for m in rest).encode(), capture_output=True,
                                  timeout=timeout, check=False)
            lines, dead, hung = proc.stdout.decode().splitlines(), proc.returncode != 0, False
        except subprocess.TimeoutExpired as exc:
            lines, dead, hung = (exc.stdout or b"").decode().splitlines(), True, True
        results += [json.loads(line) for line in lines if line.startswith("{")]
        if len(results) < len(mutants) and dead:
            results.append({"ok": False, "crash" if not hung else "hang": True})
            crashes += not hung
            hangs += hung
        elif len(results) < len(mutants):  # ended cleanly without answering: count the next as a crash
            results.append({"ok": False, "crash": True})
            crashes += 1
    return results, crashes, hangs


def _library(script: str, library: str, fmt: str, mutants: list[bytes], probe: list, tmp: Path) -> tuple[list, int]:
    """tests/test_fuzz_formats.py's LIBRARY script: the library's predictions (None where it
    refuses), and how many mutants it died (or hung) on."""
    suffix = ".ubj" if fmt == "ubj" else ".txt" if library == "lightgbm" else ".json"
    paths = []
    for i, data in enumerate(mutants):
        path = tmp / f"mutant-{i}{suffix}"
        path.write_bytes(data)
        paths.append(str(path))
    out: list = []
    died = 0
    while len(out) < len(paths):
        try:
            proc = subprocess.run([sys.executable, "-c", script, library, json.dumps(probe), *paths[len(out):]],
                                  capture_output=True, timeout=120, check=False)
            lines = proc.stdout.decode().splitlines()
        except subprocess.TimeoutExpired as exc:
            lines = (exc.stdout or b"").decode().splitlines()
        out += [json.loads(line[2:]) for line in lines if line.startswith("@@")]
        if len(out) < len(paths):
            out.append(None)
            died += 1
    return out, died


def fuzz(n: int) -> None:
    import tests.test_fuzz_formats as tff

    tff.N_MUTANTS = n  # _mutants makes this many (the first 24 are the test's own)
    print(f"Mutation fuzz (tests/test_fuzz_formats.py's mutants, its seeds; {n} per format): Glassbox's readers "
          "in a 3 GB process (the test's OURS), the library in another (its LIBRARY); rtol=atol=1e-5")
    print(f"{'format':<14} {'mutants':>7} {'refused':>7} {'read':>5} {'compared':>8} {'crashes':>7} "
          f"{'disagree':>8} {'hangs':>5} {'unclean':>7} {'nonfinite':>9} {'lib died':>8} {'s':>5}")
    details = []
    with tempfile.TemporaryDirectory(prefix="glassbox-fuzz-") as tmp:
        files = tff._files(Path(tmp))
        for fmt in ["xgboost json", "xgboost ubj", "lightgbm text", "catboost json"]:
            t0 = time.perf_counter()
            library = fmt.split()[0]
            mutants = tff._mutants(files[fmt], seed=len(fmt) * 7919)
            results, crashes, hangs = _ours(tff.OURS, library, mutants, tff.PROBE, timeout=300)
            unclean = [(i, r["unclean"]) for i, r in enumerate(results) if "unclean" in r]
            loaded = [i for i, r in enumerate(results) if r["ok"]]
            refused = len(mutants) - len(loaded) - crashes - hangs - len(unclean)
            predicted = [i for i in loaded if results[i]["pred"] is not None]
            nonfinite = [i for i in predicted if not np.isfinite(results[i]["pred"]).all()]
            folder = Path(tmp) / fmt.replace(" ", "-")
            folder.mkdir()
            libs, died = _library(tff.LIBRARY, library, fmt.split()[1], [mutants[i] for i in predicted], tff.PROBE,
                                  folder)
            compared, disagree = 0, []
            for i, lib in zip(predicted, libs):
                if lib is not None and len(lib) == len(tff.PROBE):
                    compared += 1
                    ours = np.asarray(results[i]["pred"], float)
                    if not np.allclose(ours, lib, rtol=1e-5, atol=1e-5):
                        disagree.append(i)
                        details.append(f"  {fmt} mutant {i}: max |ours - library| = "
                                       f"{float(np.max(np.abs(ours - np.asarray(lib)))):.3g}")
            for i, text in unclean:
                details.append(f"  {fmt} mutant {i}: refused without an ExplainerError: {_plain(text, 160)}")
            print(f"{fmt:<14} {len(mutants):>7} {refused:>7} {len(loaded):>5} {compared:>8} {crashes:>7} "
                  f"{len(disagree):>8} {hangs:>5} {len(unclean):>7} {len(nonfinite):>9} {died:>8} "
                  f"{time.perf_counter() - t0:>5.0f}", flush=True)
    print("(read: loaded by Glassbox; compared: read with 3 features and read by the library too; lib died: "
          "of those Glassbox read and predicted, the mutants the library's process died or hung on)")
    for line in details:
        print(line)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated case names (see --list)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--timeout", type=float, default=600, help="seconds for crafting, and for reading, one case")
    ap.add_argument("--fuzz", type=int, metavar="N", help="N mutants per format of the format fuzz")
    ap.add_argument("--one", nargs=2, metavar=("NAME", "DIR"), help=argparse.SUPPRESS)
    ap.add_argument("--craft", nargs=2, metavar=("NAME", "DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.craft:
        craft_one(*args.craft)
    elif args.one:
        print("@@" + json.dumps(run_one(*args.one)), flush=True)
    elif args.list:
        for c in CASES:
            print(f"{c.name:<4} {c.expect:<8} {c.what}")
    elif args.fuzz:
        fuzz(args.fuzz)
    else:
        names = [n.strip() for n in args.only.split(",")] if args.only else [c.name for c in CASES]
        unknown = [n for n in names if n not in BY_NAME]
        if unknown:
            ap.error(f"unknown case(s) {unknown}; --list shows them")
        table(names, args.timeout)


if __name__ == "__main__":
    main()
