"""Fixtures for tests/test_native_xgboost.py: a UBJSON writer (to alter .ubj files) and hostile files."""
from __future__ import annotations

import copy
import json
import struct

import numpy as np

_TYPED = {np.dtype(np.float32): (b"d", ">f4"), np.dtype(np.float64): (b"D", ">f8"),
          np.dtype(np.int8): (b"i", ">i1"), np.dtype(np.uint8): (b"U", ">u1"),
          np.dtype(np.int16): (b"I", ">i2"), np.dtype(np.int32): (b"l", ">i4"),
          np.dtype(np.int64): (b"L", ">i8")}


def _int(v: int) -> bytes:
    for marker, fmt, lo, hi in ((b"i", ">b", -128, 127), (b"I", ">h", -2**15, 2**15 - 1),
                                (b"l", ">i", -2**31, 2**31 - 1)):
        if lo <= v <= hi:
            return marker + struct.pack(fmt, v)
    return b"L" + struct.pack(">q", v)


def _len(n: int) -> bytes:
    return b"L" + struct.pack(">q", n)


def ubj_dumps(obj) -> bytes:
    """Encode as XGBoost writes UBJSON: objects with an end marker, counted arrays, typed numeric arrays."""
    out = bytearray()

    def put(v):
        if isinstance(v, dict):
            out.extend(b"{")
            for k, x in v.items():
                kb = k.encode()
                out.extend(_len(len(kb)) + kb)
                put(x)
            out.extend(b"}")
        elif isinstance(v, np.ndarray):
            marker, dt = _TYPED[v.dtype]
            out.extend(b"[$" + marker + b"#" + _len(len(v)) + v.astype(dt).tobytes())
        elif isinstance(v, list):
            out.extend(b"[#" + _len(len(v)))
            for x in v:
                put(x)
        elif isinstance(v, bool):
            out.extend(b"T" if v else b"F")
        elif isinstance(v, int):
            out.extend(_int(v))
        elif isinstance(v, float):
            out.extend(b"d" + struct.pack(">f", v))
        elif isinstance(v, str):
            sb = v.encode()
            out.extend(b"S" + _len(len(sb)) + sb)
        elif v is None:
            out.extend(b"Z")
        else:  # pragma: no cover - test helper
            raise TypeError(type(v))

    put(obj)
    return bytes(out)


def first_tree(doc) -> dict:
    return doc["learner"]["gradient_booster"]["model"]["trees"][0]


def _set(arr, i, value):
    """Set entry i of a JSON list or a decoded numpy array (a numpy array keeps its dtype)."""
    arr[i] = value


def damaged(doc, kind: str):
    """A copy of a decoded model document with one kind of damage (both encodings use it)."""
    d = copy.deepcopy(doc)
    t = first_tree(d)
    if kind == "child_out_of_range":
        _set(t["left_children"], 0, 10_000)
    elif kind == "negative_child":
        _set(t["right_children"], 0, -7)
    elif kind == "cycle_to_root":
        leaf = int(np.flatnonzero(np.asarray(t["left_children"]) != -1)[-1])
        _set(t["left_children"], leaf, 0)
    elif kind == "nan_split":
        _set(t["split_conditions"], 0, float("nan"))
    elif kind == "inf_leaf":
        leaf = int(np.flatnonzero(np.asarray(t["left_children"]) == -1)[0])
        _set(t["split_conditions"], leaf, float("inf"))
    elif kind == "feature_out_of_range":
        _set(t["split_indices"], 0, 999)
    elif kind == "billion_nodes":
        t["tree_param"]["num_nodes"] = "1000000000"
    elif kind == "negative_nodes":
        t["tree_param"]["num_nodes"] = "-3"
    elif kind == "short_array":
        t["sum_hessian"] = t["sum_hessian"][:-1]
    elif kind == "trees_not_list":
        d["learner"]["gradient_booster"]["model"]["trees"] = {"0": t}
    elif kind == "no_learner":
        d = {"version": [3, 2, 0]}
    elif kind == "tree_count_mismatch":
        d["learner"]["gradient_booster"]["model"]["gbtree_model_param"]["num_trees"] = "7"
    elif kind == "huge_tree_count":
        d["learner"]["gradient_booster"]["model"]["gbtree_model_param"]["num_trees"] = str(10**12)
    elif kind == "string_in_array":
        t["split_conditions"] = ["x"] * len(t["split_conditions"])
    else:  # pragma: no cover
        raise ValueError(kind)
    return d


DAMAGE = ["child_out_of_range", "negative_child", "cycle_to_root", "nan_split", "inf_leaf",
          "feature_out_of_range", "billion_nodes", "negative_nodes", "short_array", "trees_not_list",
          "no_learner", "tree_count_mismatch", "huge_tree_count", "string_in_array"]


def to_json(doc) -> bytes:
    def plain(v):
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, np.ndarray):
            return v.tolist()
        return v

    return json.dumps(plain(doc)).encode()


def deep_json(depth: int = 10_000) -> bytes:
    return b'{"learner":' + b"[" * depth + b"]" * depth + b"}"


def deep_ubj(depth: int = 10_000) -> bytes:
    return b"{" + _len(7) + b"learner" + b"[" * depth + b"]" * depth + b"}"


def huge_count_ubj() -> bytes:
    """A typed float array claiming 10**12 elements."""
    return b"{" + _len(7) + b"learner" + b"[$d#" + _len(10**12) + b"\x00" * 64 + b"}"


def huge_count_untyped_ubj() -> bytes:
    return b"{" + _len(7) + b"learner" + b"[#" + _len(10**12) + b"i\x00" * 8 + b"}"
