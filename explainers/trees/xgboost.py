"""Read an XGBoost model file (JSON or UBJSON) as plain data into a :class:`NativeTreeModel`.

XGBoost saves a booster as one JSON document (``Booster.save_model("m.json")``,
``XGBClassifier.save_model``) or as the same document in UBJSON, the binary
default of XGBoost 2 and 3 (``.ubj``). Both are parsed here without XGBoost: the
JSON with :mod:`json` (after a nesting check, so no deep file reaches its
recursion), the UBJSON with the small iterative decoder of :mod:`._xgboost_ubjson`
(typed arrays of numbers become numpy arrays; every count is compared with the bytes
left before anything is allocated).

How XGBoost routes a row (``src/predictor/predict_fn.h``, ``GetNextNode``), and how
it is expressed in the :class:`~.ensemble.TreeEnsemble`:

- inputs are float32; a numeric split sends ``x < split_condition`` left. The
  ensemble sends ``x <= t`` left, so ``t`` is the largest float32 below the
  split condition (with ``float32_inputs=True`` the rows are rounded the same way);
- a missing value (NaN) follows ``default_left``;
- a categorical split (``split_type`` 1) lists categories in ``categories``
  (``categories_nodes``, ``categories_segments``, ``categories_sizes`` say which
  node owns which run). ``common::Decision`` (``src/common/categorical.h``) sends a
  listed category RIGHT and everything else LEFT: an unlisted code, a code past the
  node's bit field, a negative code or one too large to be a category. The
  ensemble keeps the codes that go left, so a node gets the complement of its
  list over its bit field's words plus ``RULE_OTHER_LEFT`` for every code beyond;
  the float input is truncated to an integer code on both sides.

Leaf values are ``split_conditions`` at the leaves; ``sum_hessian`` is the cover
XGBoost's own Tree SHAP (``pred_contribs``) weighs paths with. ``base_score`` is
stored in the output space and turned into a margin as the objective does
(``ProbToMargin``: logit for logistic objectives, log for log-link ones; XGBoost 3.2
leaves binary:logitraw's base_score as it is).

Decisions: ``reg:logistic`` is read as a binary classifier (its prediction is
``predict_proba[:, 1]``); ``binary:logitraw`` and ``rank:*`` as regressors of the
margin; ``booster="dart"`` by scaling each tree's leaves by its ``weight_drop``
(XGBoost's prediction); nodes the pruner left unreachable are dropped. A file the
scikit-learn wrapper wrote with ``best_iteration`` is read up to that round (as
``XGBRegressor.load_model(file).predict``), a plain Booster's file in full (as
``Booster.predict``). Refused: gblinear, multi-target models, binary:hinge and
unknown objectives.
"""
from __future__ import annotations

import json
import re

import numpy as np

from .. import limits
from ..errors import InvalidModelError
from .ensemble import (MAX_CATEGORY_CODE, RULE_CATEGORICAL, RULE_OTHER_LEFT, assemble,
                       check_structure, rule_record)
from ._xgboost_ubjson import HINT, MAX_NESTING, _bad, decode_ubjson  # noqa: F401 (HINT kept importable)
from .native import NativeTreeClassifier, NativeTreeModel, file_bytes, native_model

__all__ = ["read_xgboost", "xgboost_from_object", "decode_ubjson"]

#: objective -> (task, transform, link applied to base_score by XGBoost's ProbToMargin)
_OBJECTIVES = {
    "reg:squarederror": ("regression", "identity", "identity"),
    "reg:linear": ("regression", "identity", "identity"),
    "reg:squaredlogerror": ("regression", "identity", "identity"),
    "reg:absoluteerror": ("regression", "identity", "identity"),
    "reg:pseudohubererror": ("regression", "identity", "identity"),
    "reg:quantileerror": ("regression", "identity", "identity"),
    "reg:expectileerror": ("regression", "identity", "identity"),
    "binary:logitraw": ("regression", "identity", "identity"),
    "binary:logistic": ("classification", "sigmoid", "logit"),
    "reg:logistic": ("classification", "sigmoid", "logit"),
    "multi:softprob": ("classification", "softmax", "identity"),
    "multi:softmax": ("classification", "softmax", "identity"),
    "count:poisson": ("regression", "exp", "log"),
    "reg:gamma": ("regression", "exp", "log"),
    "reg:tweedie": ("regression", "exp", "log"),
    "survival:cox": ("regression", "exp", "log"),
    "survival:aft": ("regression", "exp", "log"),
    "rank:pairwise": ("regression", "identity", "identity"),
    "rank:ndcg": ("regression", "identity", "identity"),
    "rank:map": ("regression", "identity", "identity"),
}


# ======================================================================== JSON
def _json_depth(data: bytes) -> int:
    """Deepest nesting of objects and arrays in JSON text (brackets inside strings not counted).

    One linear pass (vectorised): a quote is escaped when an odd run of backslashes ends
    just before it; the brackets counted are those after an even number of unescaped
    quotes. No regular expression, so no backtracking on hostile text (an unterminated
    string of ``\\"`` took a quadratic expression seconds per 40 KB). Outside strings a
    backslash is not JSON, and the parser stops there before any nesting that follows.
    """
    arr = np.frombuffer(data, dtype=np.uint8)
    if not len(arr):
        return 0
    # memory in proportion to the backslashes, quotes and brackets, not to the file (a 92 MB file
    # took 2.5 GB with an index per byte)
    quotes = np.flatnonzero(arr == ord('"'))
    slashes = np.flatnonzero(arr == ord("\\"))
    run = np.zeros(len(quotes), dtype=np.int64)  # backslashes right before each quote
    if slashes.size and quotes.size:
        starts = np.ones(len(slashes), bool)
        starts[1:] = slashes[1:] != slashes[:-1] + 1
        run_start = np.maximum.accumulate(np.where(starts, slashes, 0))  # where each backslash's run starts
        before = quotes - 1
        at = np.minimum(np.searchsorted(slashes, before), len(slashes) - 1)
        hit = slashes[at] == before
        run[hit] = before[hit] - run_start[at[hit]] + 1
    real = quotes[run % 2 == 0]
    brackets = np.flatnonzero((arr == ord("{")) | (arr == ord("[")) | (arr == ord("}")) | (arr == ord("]")))
    if not brackets.size:
        return 0
    outside = np.searchsorted(real, brackets) % 2 == 0  # an even number of quotes before it
    brackets = brackets[outside]
    if not brackets.size:
        return 0
    opens = (arr[brackets] == ord("{")) | (arr[brackets] == ord("["))
    return int(np.cumsum(np.where(opens, 1, -1)).max())


def _parse_json(data: bytes):
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _bad("The JSON model file is not UTF-8 text.") from None
    # every tree holds one "split_indices" key: counted in the bytes, before json.loads builds
    # a Python object per number (a 180 MB file of 47,000 trees took 5 GB to be refused after it)
    n_trees = data.count(b'"split_indices"')
    if n_trees > limits.limit("trees"):
        raise InvalidModelError(f"This XGBoost model has {n_trees:,} trees, {limits.over('trees')}.")
    depth = _json_depth(data)
    if depth > MAX_NESTING:
        raise _bad(f"The JSON model file nests objects more than {MAX_NESTING} levels deep "
                   f"({depth}); an XGBoost model never does.")
    try:
        return json.loads(text)
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise _bad("The JSON model file nests objects too deeply.") from None
    except ValueError as exc:
        raise _bad(f"The JSON model file is not valid JSON ({exc}).") from None


def _looks_like_json(data: bytes, name: str) -> bool:
    """JSON text has '{' then whitespace, '"' or '}'; UBJSON has '{' then a type marker."""
    head = data.lstrip(b" \t\r\n\xef\xbb\xbf")
    if not head.startswith(b"{"):
        if head[:1] in (b"[",):
            return True
        raise _bad("This is not an XGBoost model file: it does not start with '{' (JSON or UBJSON).")
    nxt = head[1:].lstrip(b" \t\r\n")[:1]
    if nxt == b'"':
        return True
    if nxt in (b"i", b"U", b"I", b"l", b"L", b"$", b"#", b"N"):
        return False
    return not name.lower().endswith(".ubj")


# ============================================================ model structure
def _obj(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise _bad(f"In the XGBoost model file, {where} is not an object.")
    return value


def _field(obj: dict, key: str, where: str):
    if key not in obj:
        raise _bad(f"The XGBoost model file has no {where}.{key}.")
    return obj[key]


def _int(value, where: str, lo: int = 0, hi: int | None = None) -> int:
    """An integer written as a number or a string (XGBoost writes parameters as strings)."""
    if isinstance(value, (bool, np.bool_)):
        raise _bad(f"In the XGBoost model file, {where} is {value!r}, not an integer.")
    if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]{1,19}\s*", value):
        v = int(value)
    elif isinstance(value, (int, np.integer)):
        v = int(value)
    elif isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer():
        v = int(value)
    else:
        raise _bad(f"In the XGBoost model file, {where} is {str(value)[:40]!r}, not an integer.")
    if v < lo or (hi is not None and v > hi):
        raise _bad(f"In the XGBoost model file, {where} is {v}, outside {lo}..{hi if hi is not None else ''}.")
    return v


def _floats(value, where: str) -> np.ndarray:
    """base_score: a number, a numeric string, or (XGBoost 3) a string "[a,b,...]"."""
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        return np.asarray([float(value)])
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        parts = [p for p in text.split(",") if p.strip()]
        if 0 < len(parts) <= 1_000_000:
            try:
                return np.asarray([float(p) for p in parts])
            except ValueError:
                pass
    raise _bad(f"In the XGBoost model file, {where} is {str(value)[:40]!r}, not a number.")


def _array(obj: dict, key: str, n: int, where: str, kind: str) -> np.ndarray:
    """The node array ``obj[key]`` as numbers, checked to hold ``n`` entries."""
    value = _field(obj, key, where)
    if isinstance(value, np.ndarray):
        arr = value
    elif isinstance(value, list):
        if len(value) != n:
            raise _bad(f"{where}.{key} has {len(value)} entries for {n} nodes.")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise _bad(f"{where}.{key} holds something that is not a number.")
        # an index list with a float in it is read as floats and checked to be whole below
        # (numpy would cut 1.5 to 1 without a word)
        floats = kind == "f" or any(isinstance(v, float) for v in value)
        try:
            arr = np.asarray(value, dtype=np.float64 if floats else np.int64)
        except (OverflowError, ValueError, TypeError):
            raise _bad(f"{where}.{key} holds numbers out of range.") from None
    else:
        raise _bad(f"{where}.{key} is not an array.")
    if arr.ndim != 1 or len(arr) != n:
        raise _bad(f"{where}.{key} has {arr.size} entries for {n} nodes.")
    if kind == "f":  # XGBoost keeps these as float32: JSON text is read as it reads them
        with np.errstate(over="ignore"):
            return arr.astype(np.float32).astype(np.float64)
    if arr.dtype.kind == "f":
        if not (np.isfinite(arr).all() and (arr == np.round(arr)).all()):
            raise _bad(f"{where}.{key} holds numbers that are not integers.")
    return arr.astype(np.int64)


def _reachable(left, right, where: str):
    """Nodes reached from the root, level by level; refuse cycles, shared nodes, bad children."""
    n = len(left)
    seen = np.zeros(n, bool)
    levels = []
    frontier = np.zeros(1, np.int64)
    depth_limit = limits.limit("tree_depth")
    while frontier.size:
        if len(levels) > depth_limit:
            raise InvalidModelError(f"{where} is more than {depth_limit} levels deep, "
                                    f"{limits.over('tree_depth')}.")
        if seen[frontier].any() or np.unique(frontier).size != frontier.size:
            node = int(frontier[seen[frontier]][0]) if seen[frontier].any() else int(frontier[0])
            raise _bad(f"{where}, node {node} is reached twice from the root: the tree has a cycle "
                       "or a shared node.")
        seen[frontier] = True
        levels.append(frontier)
        inner = frontier[left[frontier] != -1]
        kids = np.concatenate([left[inner], right[inner]])
        bad = (kids < 0) | (kids >= n)
        if bad.any():
            i = int(np.concatenate([inner, inner])[bad][0])
            raise _bad(f"{where}, node {i} has the child {int(kids[bad][0])}, outside the tree's "
                       f"nodes 0..{n - 1}.")
        frontier = kids
    return seen, levels


def _tree_part(tree, t: int, n_features: int, n_raw: int, column: int, weight: float,
               node_budget: int, gain, cover_imp, count_imp):
    """One tree as an assemble() part (nodes reached from the root only, renumbered)."""
    where = f"XGBoost tree {t}"
    tree = _obj(tree, f"trees[{t}]")
    tp = _obj(_field(tree, "tree_param", where), f"{where}.tree_param")
    n = _int(_field(tp, "num_nodes", f"{where}.tree_param"), f"{where}.tree_param.num_nodes", 1)
    if n > node_budget:
        raise InvalidModelError(f"{where} has {n:,} nodes, which takes the model "
                                f"{limits.over('nodes')}.")
    leaf_vec = _int(tp.get("size_leaf_vector", "1"), f"{where}.tree_param.size_leaf_vector", 0)
    if leaf_vec > 1:
        raise InvalidModelError(
            f"{where} is a multi-target tree (size_leaf_vector={leaf_vec}, from "
            "multi_strategy='multi_output_tree'); Glassbox reads one output per tree. Retrain with "
            "multi_strategy='one_output_per_tree'.")
    left = _array(tree, "left_children", n, where, "i")
    right = _array(tree, "right_children", n, where, "i")
    feat = _array(tree, "split_indices", n, where, "i")
    cond = _array(tree, "split_conditions", n, where, "f")
    dleft = _array(tree, "default_left", n, where, "i")
    hess = _array(tree, "sum_hessian", n, where, "f")
    loss = _array(tree, "loss_changes", n, where, "f")
    stype = _array(tree, "split_type", n, where, "i") if "split_type" in tree else np.zeros(n, np.int64)

    right = np.where(left == -1, -1, right)  # XGBoost's IsLeaf looks at the left child only
    seen, levels = _reachable(left, right, where)
    order = np.concatenate(levels)  # parents before children
    new = np.full(n, -1, np.int64)
    new[order] = np.arange(len(order))
    leaf = left[order] == -1
    m = len(order)

    f_ = np.where(leaf, -1, feat[order])
    inner = ~leaf
    if ((f_[inner] < 0) | (f_[inner] >= n_features)).any():
        i = int(order[inner][(f_[inner] < 0) | (f_[inner] >= n_features)][0])
        raise _bad(f"{where}, node {i} splits on feature {int(feat[i])}, but the model reads "
                   f"{n_features} features.")
    c32 = cond[order].astype(np.float32)
    if np.isnan(c32[inner]).any():
        i = int(order[inner][np.isnan(c32[inner])][0])
        raise _bad(f"{where}, node {i} has the split condition NaN, which no value passes.")
    if not np.isfinite(c32[leaf]).all():
        i = int(order[leaf][~np.isfinite(c32[leaf])][0])
        raise _bad(f"{where}, node {i}: the leaf value {float(cond[i])} is not a finite number.")
    cov = hess[order]
    if not (np.isfinite(cov).all() and (cov >= 0).all()):
        i = int(order[~(np.isfinite(cov) & (cov >= 0))][0])
        raise _bad(f"{where}, node {i}: the hessian sum {float(hess[i])} is not a finite weight.")
    bad_dl = (dleft[order] != 0) & (dleft[order] != 1)
    if bad_dl.any():
        raise _bad(f"{where}, node {int(order[bad_dl][0])}: default_left is not 0 or 1.")
    st = stype[order]
    if ((st != 0) & (st != 1) & inner).any():
        raise _bad(f"{where}: split_type holds a value other than 0 (numeric) or 1 (categorical).")
    is_cat = inner & (st == 1)

    with np.errstate(over="ignore"):
        thr = np.nextafter(c32, np.float32(-np.inf)).astype(np.float64)
    thr = np.where(leaf, np.nan, np.where(is_cat, 0.0, thr))
    lft = np.where(leaf, -1, new[np.where(leaf, 0, left[order])])
    rgt = np.where(leaf, -1, new[np.where(leaf, 0, right[order])])

    # leaf values, then cover-weighted means bottom-up (what XGBoost's Tree SHAP uses)
    leafv = np.where(leaf, c32.astype(np.float64), 0.0)
    if weight != 1.0:
        leafv = np.where(leaf, (c32 * np.float32(weight)).astype(np.float64), 0.0)
    vals = leafv.copy()
    for lev in reversed(levels):
        pos = new[lev]
        internal = pos[~leaf[pos]]
        if internal.size:
            l_, r_ = lft[internal], rgt[internal]
            cl, cr = cov[l_], cov[r_]
            tot = cl + cr
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(tot > 0, (cl * vals[l_] + cr * vals[r_]) / np.where(tot > 0, tot, 1),
                                0.5 * (vals[l_] + vals[r_]))
            vals[internal] = mean
    value = np.zeros((m, n_raw))
    if column < 0:
        value[:] = vals[:, None]
    else:
        value[:, column] = vals

    rules = {}
    if is_cat.any():
        rules = _cat_rules(tree, n, where, order, new, is_cat)
    fi = f_[inner]
    np.add.at(gain, fi, loss[order][inner])
    np.add.at(cover_imp, fi, cov[inner])
    np.add.at(count_imp, fi, 1.0)
    part = (f_.astype(np.int64), thr, lft.astype(np.int64), rgt.astype(np.int64),
            dleft[order].astype(np.uint8), value, cov.astype(np.float64), -1, rules)
    return part, m, bool(m < n)


def _cat_rules(tree, n: int, where: str, order, new, is_cat) -> dict:
    """Rule records of a tree's categorical nodes: the codes that go left (see the module doc)."""
    nodes_ = tree.get("categories_nodes", [])
    k = len(nodes_) if isinstance(nodes_, (list, np.ndarray)) else -1
    if k < 0:
        raise _bad(f"{where}.categories_nodes is not an array.")
    cnodes = _array(tree, "categories_nodes", k, where, "i")
    segs = _array(tree, "categories_segments", k, where, "i")
    sizes = _array(tree, "categories_sizes", k, where, "i")
    cats_v = tree.get("categories", [])
    if not isinstance(cats_v, (list, np.ndarray)):
        raise _bad(f"{where}.categories is not an array.")
    cats = _array(tree, "categories", len(cats_v), where, "i")
    if ((cnodes < 0) | (cnodes >= n)).any() or np.unique(cnodes).size != k:
        raise _bad(f"{where}.categories_nodes names nodes outside the tree or twice.")
    if ((segs < 0) | (sizes < 1) | (segs + sizes > len(cats))).any():
        raise _bad(f"{where}: categories_segments / categories_sizes point outside its categories.")
    seg_of = dict(zip(cnodes.tolist(), zip(segs.tolist(), sizes.tolist())))
    rules = {}
    for pos in np.flatnonzero(is_cat):
        node = int(order[pos])
        if node not in seg_of:
            raise _bad(f"{where}, node {node} is a categorical split without categories.")
        s, size = seg_of[node]
        listed = cats[s:s + size]
        if (listed < 0).any() or (listed >= MAX_CATEGORY_CODE).any():
            raise _bad(f"{where}, node {node} lists the category code "
                       f"{int(listed[(listed < 0) | (listed >= MAX_CATEGORY_CODE)][0])}; codes lie "
                       f"in 0..{MAX_CATEGORY_CODE - 1}.")
        words = int(listed.max()) // 64 + 1
        go_left = np.ones(64 * words, bool)
        go_left[listed] = False  # XGBoost sends listed categories right
        record = rule_record(RULE_CATEGORICAL | RULE_OTHER_LEFT, np.flatnonzero(go_left))
        if int(record[0]) < words:  # keep the whole bit field: codes up to 64 * words are decided by it
            record = np.concatenate([record, np.zeros(words - int(record[0]), np.uint64)])
            record[0] = words
        rules[int(pos)] = record
    return rules


def _stored_categories(model: dict, n_features: int):
    """XGBoost 3.1+ keeps a DataFrame's categories (``cats.enc``): per feature a tuple or None."""
    cats = model.get("cats")
    if not isinstance(cats, dict):
        return None
    enc = cats.get("enc", [])
    if not isinstance(enc, list) or not enc:
        return None
    if len(enc) != n_features:
        raise _bad(f"The XGBoost model file stores categories for {len(enc)} features but reads {n_features}.")
    out = []
    for j, col in enumerate(enc):
        where = f"cats.enc[{j}]"
        col = _obj(col, where)
        vals = col.get("values", [])
        if not isinstance(vals, (list, np.ndarray)):
            raise _bad(f"{where}.values is not an array.")
        if "offsets" in col:  # strings: UTF-8 bytes cut at the offsets
            offs_v = col["offsets"]
            if not isinstance(offs_v, (list, np.ndarray)):
                raise _bad(f"{where}.offsets is not an array.")
            offs = _array(col, "offsets", len(offs_v), where, "i")
            raw = _array(col, "values", len(vals), where, "i")
            if not len(offs):
                out.append(None)
                continue
            if offs[0] != 0 or (np.diff(offs) < 0).any() or offs[-1] != len(raw):
                raise _bad(f"{where}: the category offsets do not cut its text.")
            if ((raw < -128) | (raw > 255)).any():
                raise _bad(f"{where}: the category text holds values that are not bytes.")
            blob = (raw & 0xFF).astype(np.uint8).tobytes()
            try:
                names = tuple(blob[a:b].decode("utf-8") for a, b in zip(offs[:-1], offs[1:]))
            except UnicodeDecodeError:
                raise _bad(f"{where}: a category name is not UTF-8.") from None
            out.append(names if names else None)
        else:
            codes = _array(col, "values", len(vals), where, "i")
            out.append(tuple(int(v) for v in codes) if len(codes) else None)
    return tuple(out) if any(c is not None for c in out) else None


def _iteration_indptr(model: dict, n_trees: int) -> np.ndarray | None:
    """Where each boosting round's trees start (XGBoost 2+), checked against the tree count."""
    raw = model.get("iteration_indptr")
    if raw is None:  # XGBoost 1.x files: no rounds recorded
        return None
    if not isinstance(raw, (list, np.ndarray)) or len(raw) < 2:
        raise _bad("gradient_booster.model.iteration_indptr is not an array of round boundaries.")
    indptr = _array(model, "iteration_indptr", len(raw), "gradient_booster.model", "i")
    if indptr[0] != 0 or indptr[-1] != n_trees or (np.diff(indptr) < 1).any():
        raise _bad("gradient_booster.model.iteration_indptr does not cut the trees into rounds.")
    return indptr


def _learner(doc) -> dict:
    doc = _obj(doc, "the document")
    if "learner" not in doc:
        raise _bad("This JSON is not an XGBoost model: it has no 'learner'.")
    return _obj(doc["learner"], "learner")


def _base_margin(base: np.ndarray, link: str, objective: str) -> np.ndarray:
    b = base.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        if link == "logit":
            if ((b < 0) | (b > 1)).any():
                raise _bad(f"base_score {float(b[0])} is not a probability, which {objective} needs.")
            eps = np.float32(1e-6)
            b = np.minimum(np.maximum(b, eps), np.float32(1) - eps)
            b = -np.log(np.float32(1) / b - np.float32(1))
        elif link == "log":
            if (b <= 0).any():
                raise _bad(f"base_score {float(b[0])} is not positive, which {objective} needs.")
            b = np.log(b)
    b = b.astype(np.float32).astype(np.float64)
    if not np.isfinite(b).all():
        raise _bad("base_score is not a finite number.")
    return b


def _read_document(doc, fmt: str) -> NativeTreeModel:
    """The model of one parsed XGBoost document: every part checked in the order the file is read."""
    learner = _learner(doc)
    notes = []
    mparam = _obj(_field(learner, "learner_model_param", "learner"), "learner_model_param")
    n_features, num_class, objective = _model_params(learner, mparam)
    task, transform, link = _OBJECTIVES[objective]
    bname, model, weights = _booster(learner, notes)
    trees, tree_info, weights = _trees(model, weights)
    trees, tree_info, weights = _best_iteration(learner, model, trees, tree_info, weights, notes)
    n_trees = len(trees)
    n_raw = 1
    if transform == "softmax":
        if num_class < 2:
            raise _bad(f"The model's objective is {objective} but num_class is {num_class}.")
        n_raw = num_class
    if ((tree_info < 0) | (tree_info >= n_raw)).any():
        raise _bad(f"tree_info names an output outside 0..{n_raw - 1}.")
    tree_output = tree_info if n_raw > 1 else np.full(n_trees, -1, np.int64)
    names = _feature_names(learner, n_features, notes)
    ftypes = learner.get("feature_types") or None
    categories = _stored_categories(model, n_features)
    parts, importances = _tree_parts(trees, weights, tree_output, n_features, n_raw, notes)

    base = _floats(_field(mparam, "base_score", "learner_model_param"), "base_score")
    if len(base) not in (1, n_raw):
        raise _bad(f"base_score has {len(base)} values for {n_raw} outputs.")
    base = np.broadcast_to(_base_margin(base, link, objective), (n_raw,)).copy()
    notes += _reading_notes(objective, transform, categories is not None or bool(ftypes and "c" in ftypes))

    label = f"XGBoost {bname} ({objective})"
    ens = assemble(parts, tree_output, base=base, scale=1.0, transform=transform, float32_inputs=True,
                   n_features=n_features, model_name=label, categories=categories, numeric_codes=True)
    classes = None
    if task == "classification":  # XGBoost files keep no labels: classes are 0 .. k-1
        classes = np.arange(2 if transform == "sigmoid" else n_raw)
    return native_model(
        ens, task=task, classes=classes, library="xgboost", objective=objective,
        feature_names=names, importances=importances, notes=tuple(notes), source_format=fmt)


def _model_params(learner: dict, mparam: dict) -> tuple[int, int, str]:
    """``(n_features, num_class, objective)``, the objective one Glassbox reads for one target."""
    n_features = _int(_field(mparam, "num_feature", "learner_model_param"), "num_feature", 1,
                      limits.limit("features"))
    num_class = _int(mparam.get("num_class", "0"), "num_class", 0, MAX_CATEGORY_CODE)
    num_target = _int(mparam.get("num_target", "1"), "num_target", 0)
    objective = _field(_obj(_field(learner, "objective", "learner"), "objective"), "name", "learner.objective")
    if not isinstance(objective, str):
        raise _bad("learner.objective.name is not a string.")
    if num_target > 1:
        raise InvalidModelError(
            f"This XGBoost model predicts {num_target} targets (objective {objective!r}, num_target="
            f"{num_target}); Glassbox explains one output per model. Train one model per target.")
    if objective not in _OBJECTIVES:
        hint = (" It predicts hard 0/1 labels from the margin, not a sum of tree values; "
                "retrain with objective='binary:logistic'.") if objective == "binary:hinge" else ""
        raise InvalidModelError(
            f"This XGBoost model uses objective={objective!r}, which Glassbox does not read.{hint} "
            f"Readable objectives: {', '.join(sorted(_OBJECTIVES))}.")
    return n_features, num_class, objective


def _booster(learner: dict, notes: list):
    """``(booster name, its tree model object, DART tree weights or None)``."""
    booster = _obj(_field(learner, "gradient_booster", "learner"), "gradient_booster")
    bname = booster.get("name")
    weights = None
    if bname == "gblinear":
        raise InvalidModelError(
            "This XGBoost model uses booster='gblinear', a linear model, not trees. Explain it with "
            "a model-agnostic method, or retrain with booster='gbtree'.")
    if bname == "dart":
        # DART predicts with every tree scaled by its weight (weight_drop); scaled leaves do the same
        wd = _field(booster, "weight_drop", "gradient_booster")
        inner = _obj(_field(booster, "gbtree", "gradient_booster"), "gradient_booster.gbtree")
        model = _obj(_field(inner, "model", "gradient_booster.gbtree"), "gradient_booster.gbtree.model")
        n_wd = len(wd) if isinstance(wd, (list, np.ndarray)) else -1
        if n_wd < 0:
            raise _bad("gradient_booster.weight_drop is not an array.")
        weights = _array(booster, "weight_drop", n_wd, "gradient_booster", "f")
        if not np.isfinite(weights).all():
            raise _bad("A DART tree weight (weight_drop) is not a finite number.")
        notes.append("booster='dart': each tree's leaves are scaled by its DART weight, as XGBoost "
                     "predicts (no trees are dropped at prediction time).")
    elif bname == "gbtree":
        model = _obj(_field(booster, "model", "gradient_booster"), "gradient_booster.model")
    else:
        raise InvalidModelError(f"This XGBoost model uses booster={str(bname)[:40]!r}; Glassbox reads "
                                "booster='gbtree' (and 'dart').")
    return bname, model, weights


def _trees(model: dict, weights):
    """``(trees, tree_info, weights)``: the trees' count checked against the limit and the file's own counts."""
    trees = _field(model, "trees", "gradient_booster.model")
    if not isinstance(trees, list):
        raise _bad("gradient_booster.model.trees is not an array.")
    n_trees = len(trees)
    if n_trees < 1:
        raise InvalidModelError("This XGBoost model has no trees (it was saved before training).")
    if n_trees > limits.limit("trees"):
        raise InvalidModelError(f"This XGBoost model has {n_trees:,} trees, {limits.over('trees')}.")
    gparam = model.get("gbtree_model_param", {})
    if isinstance(gparam, dict) and "num_trees" in gparam:
        stated = _int(gparam["num_trees"], "gbtree_model_param.num_trees", 0)
        if stated != n_trees:
            raise _bad(f"The XGBoost model file states {stated} trees but holds {n_trees}.")
    if weights is not None and len(weights) != n_trees:
        raise _bad(f"The DART model file has {len(weights)} tree weights for {n_trees} trees.")
    return trees, _array(model, "tree_info", n_trees, "gradient_booster.model", "i"), weights


def _best_iteration(learner: dict, model: dict, trees: list, tree_info, weights, notes: list):
    """The trees read after early stopping: the first ``best_iteration + 1`` rounds for a file the
    scikit-learn wrapper saved (as its predict does), all of them for a Booster (said in a note)."""
    n_trees = len(trees)
    attrs = learner.get("attributes") if isinstance(learner.get("attributes"), dict) else {}
    best = attrs.get("best_iteration")
    if best is None:
        return trees, tree_info, weights
    best = _int(best, "attributes.best_iteration", 0)
    indptr = _iteration_indptr(model, n_trees)
    n_rounds = n_trees if indptr is None else len(indptr) - 1
    if indptr is None:
        notes.append(f"The file records best_iteration={best} but not which trees make each "
                     f"round (an XGBoost 1.x file): Glassbox reads all {n_trees} trees.")
    elif "scikit_learn" in attrs and best + 1 < n_rounds:
        # what XGBRegressor / XGBClassifier.load_model(file).predict uses
        keep = int(indptr[best + 1])
        trees, tree_info = trees[:keep], tree_info[:keep]
        if weights is not None:
            weights = weights[:keep]
        notes.append(f"Early stopping: the file keeps {n_rounds} boosting rounds and records "
                     f"best_iteration={best}; like the scikit-learn wrapper's predict, Glassbox "
                     f"reads the first {best + 1} rounds ({keep} of {n_trees} trees).")
    elif best + 1 < n_rounds:
        notes.append(f"The file records best_iteration={best} (early stopping) for a Booster: "
                     f"Glassbox reads all {n_rounds} rounds, as Booster.predict does. Save "
                     f"booster[: {best + 1}] to explain the early-stopped model.")
    return trees, tree_info, weights


def _feature_names(learner: dict, n_features: int, notes: list) -> list | None:
    names = learner.get("feature_names") or None
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(s, str) for s in names):
            raise _bad("learner.feature_names is not a list of strings.")
        if len(names) != n_features:
            raise _bad(f"The XGBoost model file names {len(names)} features but reads {n_features}.")
    else:
        notes.append(f"The file does not name its features: they are named by position "
                     f"(x0..x{n_features - 1}), in the column order the model was trained on.")
    return names


def _tree_parts(trees: list, weights, tree_output, n_features: int, n_raw: int, notes: list):
    """Each tree's node arrays, within the node budget and the structure limits (checked on the
    sizes the file states before any array is built), and the library importances."""
    stated_nodes = 0
    for t, tree in enumerate(trees):  # what the file says the trees hold, before any array is built
        tp = _obj(_field(_obj(tree, f"trees[{t}]"), "tree_param", f"XGBoost tree {t}"), f"XGBoost tree {t}.tree_param")
        stated_nodes += _int(_field(tp, "num_nodes", f"XGBoost tree {t}.tree_param"),
                             f"XGBoost tree {t}.tree_param.num_nodes", 1)
    check_structure(stated_nodes, n_raw, "The XGBoost model")
    gain, cover_imp, count_imp = (np.zeros(n_features) for _ in range(3))
    parts, budget, dropped, rule_words = [], limits.limit("nodes"), 0, 0
    for t, tree in enumerate(trees):
        w = 1.0 if weights is None else float(weights[t])
        part, used, pruned = _tree_part(tree, t, n_features, n_raw, int(tree_output[t]), w, budget,
                                        gain, cover_imp, count_imp)
        parts.append(part)
        budget -= used
        dropped += pruned
        rule_words += sum(len(r) for r in part[8].values()) if len(part) > 8 and part[8] else 0
        check_structure(stated_nodes, n_raw, "The XGBoost model", rule_words=rule_words)  # a set naming code
        # 65535 is 1,026 words built from six bytes of the file: counted as they are built
    if dropped:
        notes.append(f"{dropped} tree(s) hold nodes pruned away (unreachable from the root); they are left out.")
    return parts, {"gain": gain, "cover": cover_imp, "split count": count_imp}


def _reading_notes(objective: str, transform: str, categorical: bool) -> list[str]:
    """What the reading of this objective (and of categorical splits) means for the explanations."""
    notes = []
    if objective == "reg:logistic":
        notes.append("reg:logistic predicts a probability: it is read as a binary classifier whose "
                     "predict_proba[:, 1] is XGBoost's prediction.")
    if objective == "binary:logitraw":
        notes.append("binary:logitraw predicts the raw margin (log-odds): it is read as a regressor of "
                     "that margin.")
    if objective.startswith("rank:"):
        notes.append(f"{objective} is read as a regressor of the ranking score.")
    if transform == "exp":
        notes.append(f"{objective} predicts exp(margin): Tree SHAP explains the margin (log scale).")
    if categorical:
        notes.append("Categorical features: XGBoost sends the categories a split lists to the right; "
                     "unknown or negative codes go left (XGBoost itself refuses an unknown category "
                     "of a DataFrame).")
    return notes


def read_xgboost(data: bytes, *, name: str = "") -> NativeTreeModel:
    """Read an XGBoost model file (JSON or UBJSON) without XGBoost.

    Parameters
    ----------
    data : bytes
        The file's contents (``Booster.save_model`` / ``XGBModel.save_model``, ``.json`` or ``.ubj``).
    name : str, default=""
        The file name; its extension breaks a tie between JSON and UBJSON.

    Returns
    -------
    NativeTreeModel
        A regressor, or a classifier with classes ``0 .. k-1`` (XGBoost files keep no labels).

    Raises
    ------
    InvalidModelError
        For a damaged or hostile file, or a model Glassbox does not read (gblinear,
        multi-target trees, an objective such as binary:hinge), naming the setting.
    """
    if isinstance(data, str):
        raise InvalidModelError("read_xgboost takes the file's bytes, not a str.")
    data = file_bytes(data, "XGBoost", "read_xgboost")
    if _looks_like_json(data, name):
        return _read_document(_parse_json(data), "xgboost json")
    return _read_document(decode_ubjson(data), "xgboost ubj")


def xgboost_from_object(model) -> NativeTreeModel:
    """Read a fitted XGBoost object (XGBClassifier, XGBRegressor, XGBRanker, Booster) through its JSON.

    The booster's own JSON (``save_raw("json")``) goes through :func:`read_xgboost`, so the
    object's code is not trusted beyond that call; a classifier's ``classes_`` are kept.
    """
    booster = model
    if hasattr(model, "get_booster"):
        booster = model.get_booster()
    if not hasattr(booster, "save_raw"):
        raise InvalidModelError(f"{type(model).__name__} is not an XGBoost model or Booster.")
    raw = booster.save_raw("json")
    if not isinstance(raw, (bytes, bytearray)):
        raise InvalidModelError("The XGBoost object did not give its model as JSON bytes.")
    doc = _parse_json(bytes(raw))
    learner = doc.get("learner") if isinstance(doc, dict) else None
    if booster is not model and isinstance(learner, dict):
        # a scikit-learn wrapper predicts up to its best_iteration; its own save_model marks
        # the file so (the "scikit_learn" attribute), which the booster's JSON lacks
        attrs = learner.get("attributes")
        if not isinstance(attrs, dict):
            attrs = learner["attributes"] = {}
        attrs.setdefault("scikit_learn", "{}")
    out = _read_document(doc, "xgboost json")
    classes = getattr(model, "classes_", None) if booster is not model else None
    if classes is not None and isinstance(out, NativeTreeClassifier):
        classes = np.asarray(classes)
        if classes.ndim != 1 or len(classes) != len(out.classes_):
            raise InvalidModelError(f"The XGBoost classifier lists {classes.size} classes but its trees "
                                    f"give {len(out.classes_)} outputs.")
        out.classes_ = classes
    return out
