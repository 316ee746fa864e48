"""Reader for LightGBM's text model file (``booster.save_model("m.txt")``,
``booster.model_to_string()``), parsed as plain data into a :class:`TreeEnsemble`.

The file is read line by line with our own small parser; LightGBM is never
imported (it need not be installed) and nothing in the file is run. Layout::

    tree
    version=v4
    num_class=1
    num_tree_per_iteration=1
    label_index=0
    max_feature_idx=3
    objective=binary sigmoid:1
    [average_output]                      (random forest mode)
    feature_names=a b c cat
    feature_infos=[-3.7:3.0] none -1:3:0:1:2 ...
    tree_sizes=563 564 565

    Tree=0
    num_leaves=4
    num_cat=0
    split_feature=0 0 0
    split_gain=... threshold=... decision_type=8 10 10
    left_child=1 -1 -2                    (a negative child c is leaf ~c)
    right_child=2 -3 -4
    leaf_value=... leaf_weight=... leaf_count=...
    internal_value=... internal_weight=... internal_count=...
    [cat_boundaries=... cat_threshold=...]
    is_linear=0
    shrinkage=1

    ...
    end of trees

    feature_importances: ...
    parameters: [boosting: gbdt] ... end of parameters
    pandas_categorical:[["w", "x", "y", "z"]]

Routing is LightGBM's ``Tree::NumericalDecision`` / ``CategoricalDecision``
(include/LightGBM/tree.h) on float64 inputs. ``decision_type`` holds the
categorical flag (bit 0), the default direction (bit 1, left) and the missing
type (bits 2-3: None, Zero, NaN):

- numeric, missing type NaN: NaN goes the default way, other values ``x <= threshold``;
- numeric, missing type None: NaN is replaced by 0.0, so it goes where 0 goes;
- numeric, missing type Zero: NaN (made 0.0) and ``|x| <= 1e-35`` go the default
  way (the ensemble's ``RULE_ZERO_MISSING``);
- categorical: the node's ``threshold`` indexes ``cat_boundaries``; the uint32
  words ``cat_threshold[b[i]:b[i + 1]]`` form the bitset of category codes that
  go left. NaN, negative values and codes beyond the bitset go right, whatever
  the missing type.

Leaf values already include the shrinkage and the init score (LightGBM adds
``boost_from_average``'s score into the first trees), so the base is 0. The node
cover is the data count (``internal_count`` / ``leaf_count``), which is what
LightGBM's own ``pred_contrib`` Tree SHAP weighs by.
"""
from __future__ import annotations

import json
import math
import re

import numpy as np

from .. import limits
from ..errors import InvalidModelError
from .ensemble import RULE_CATEGORICAL, RULE_ZERO_MISSING, assemble, check_structure, rule_record
from .native import NativeTreeModel, file_bytes, native_model

__all__ = ["read_lightgbm", "lightgbm_from_object"]

HINT = ("Save the model again with booster.save_model('model.txt') (or "
        "booster.model_to_string()) and upload that file unchanged.")

#: decision_type bits (LightGBM's kCategoricalMask, kDefaultLeftMask, missing type)
_CATEGORICAL_MASK = 1
_DEFAULT_LEFT_MASK = 2
_MISSING_NONE, _MISSING_ZERO, _MISSING_NAN = 0, 1, 2

#: objectives whose prediction is the raw score
_IDENTITY = {"regression", "regression_l1", "huber", "fair", "quantile", "mape",
             "lambdarank", "rank_xendcg"}
#: objectives with a log link: prediction = exp(raw score)
_EXP = {"poisson", "gamma", "tweedie"}
_RANKING = {"lambdarank", "rank_xendcg"}

_DEFAULT_NAME = re.compile(r"Column_(\d+)")


def _damaged(msg: str) -> InvalidModelError:
    return InvalidModelError(f"{msg} The LightGBM model file is damaged or not a LightGBM text model. {HINT}")


# --------------------------------------------------------------- the parser
def _decode(data, label: str) -> str:
    if isinstance(data, str):
        text = data
    else:
        data = file_bytes(data, "LightGBM", "read_lightgbm")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise _damaged(f"{label} is not UTF-8 text.") from None
    if len(text) > limits.limit("model_bytes"):
        raise InvalidModelError(f"{label} has {len(text):,} characters, {limits.over('model_bytes')}.")
    return text


def _split_file(text: str, label: str):
    """The file's sections: header dict, tree blocks, parameters dict, pandas_categorical text."""
    if not re.search(r"(?m)^end of trees\r?$", text):
        raise _damaged(f"{label} has no 'end of trees' line: the file is truncated.")
    lines = text.split("\n")
    n = len(lines)
    i = 0
    while i < n and not lines[i].strip():
        i += 1
    if i >= n or lines[i].strip() != "tree":
        first = lines[i].strip()[:40] if i < n else ""
        raise InvalidModelError(
            f"{label} does not start with LightGBM's 'tree' line (found {first!r}): it is not a "
            f"LightGBM text model. {HINT}"
        )
    i += 1
    header: dict[str, str] = {}
    while i < n:
        line = lines[i].rstrip("\r")
        if line.startswith("Tree=") or line == "end of trees":
            break
        if line.strip():
            key, _, value = line.partition("=")
            header[key.strip()] = value
        i += 1
    max_trees = limits.limit("trees")
    blocks: list[tuple[int, dict[str, str]]] = []
    ended = False
    while i < n:
        line = lines[i].rstrip("\r")
        i += 1
        if not line.strip():
            continue
        if line == "end of trees":
            ended = True
            break
        if not line.startswith("Tree="):
            raise _damaged(
                f"{label}: line {i} ({line[:40]!r}) is neither a 'Tree=' block nor 'end of trees': "
                "the trees are cut short or the file was altered."
            )
        if len(blocks) >= max_trees:
            raise InvalidModelError(f"{label} has more than {max_trees:,} trees, {limits.over('trees')}.")
        start = i
        block: dict[str, str] = {}
        while i < n:
            entry = lines[i].rstrip("\r")
            if not entry.strip():
                break
            if entry.startswith("Tree=") or entry == "end of trees":
                break
            key, eq, value = entry.partition("=")
            if not eq:
                raise _damaged(f"{label}: line {i + 1} of {line} has no '=' ({entry[:40]!r}).")
            block[key.strip()] = value
            i += 1
        blocks.append((start, block))
        if line[5:].strip() != str(len(blocks) - 1):
            raise _damaged(f"{label}: the {len(blocks)}th tree block is headed {line[:40]!r}, not 'Tree={len(blocks) - 1}'.")
    if not ended:
        raise _damaged(f"{label} ends before its 'end of trees' line: the file is truncated.")
    params: dict[str, str] = {}
    pandas_categorical = None
    in_params = False
    while i < n:
        line = lines[i].rstrip("\r").strip()
        i += 1
        if line == "parameters:":
            in_params = True
        elif line == "end of parameters":
            in_params = False
        elif in_params and line.startswith("[") and line.endswith("]") and ":" in line:
            key, _, value = line[1:-1].partition(":")
            params[key.strip()] = value.strip()
        elif line.startswith("pandas_categorical:"):
            pandas_categorical = line[len("pandas_categorical:"):]
    if in_params:
        raise _damaged(f"{label} ends inside its parameters block (no 'end of parameters'): the file is truncated.")
    return header, blocks, params, pandas_categorical


def _int(text, what: str, label: str) -> int:
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        raise _damaged(f"{label}: {what} is {str(text)[:40]!r}, not a whole number.") from None


def _array(block: dict, key: str, n: int, dtype, where: str, *, required: bool = True):
    """``n`` numbers of the block's line ``key`` (a missing optional line gives None)."""
    text = block.get(key)
    if text is None:
        if required:
            raise _damaged(f"{where} has no {key} line.")
        return None
    tokens = text.split()
    if len(tokens) != n:
        raise _damaged(f"{where}: {key} holds {len(tokens):,} numbers, but the tree needs {n:,}.")
    try:
        arr = np.array(tokens, dtype=np.float64) if dtype is float else np.array(tokens, dtype=np.int64)
    except (ValueError, OverflowError):
        bad = next((t for t in tokens if not _is_number(t, dtype)), tokens[0] if tokens else "")
        raise _damaged(f"{where}: {key} holds {bad[:30]!r}, not a number.") from None
    return arr


def _is_number(token: str, dtype) -> bool:
    try:
        v = float(token) if dtype is float else int(token)
    except ValueError:
        return False
    return dtype is float or abs(v) < 2**63


# ----------------------------------------------------------- the objective
def _objective(header: dict, params: dict, n_class: int, per_iter: int, label: str):
    """(transform, task, margin factor, notes) for the file's objective line."""
    text = header.get("objective")
    notes: list[str] = []
    if text is None or not text.strip():
        if per_iter != 1:
            raise InvalidModelError(
                f"{label} has no objective (a custom objective function) and {per_iter} trees per "
                "iteration: its raw scores are not a prediction Glassbox can name. Retrain with a "
                "built-in objective such as objective='multiclass'."
            )
        notes.append("The model was trained with a custom objective: it is explained on LightGBM's raw score.")
        return "identity", "regression", 1.0, "custom", notes
    tokens = text.split()
    name = tokens[0]
    opts: dict[str, str] = {}
    for tok in tokens[1:]:
        key, colon, value = tok.partition(":")
        opts[key] = value if colon else ""
    if "sqrt" in opts:
        raise InvalidModelError(
            f"This LightGBM model uses reg_sqrt=True (objective {text!r}): it predicts the square of "
            "its raw score, which is not a sum of tree values through a link Glassbox supports. "
            "Retrain with reg_sqrt=False."
        )
    if per_iter < 1 or n_class < 1:
        raise _damaged(f"{label} states num_class={n_class} and num_tree_per_iteration={per_iter}.")
    if name == "multiclass":
        k = _int(opts.get("num_class", n_class), "the objective's num_class", label)
        if not (k == n_class == per_iter and k >= 2):
            raise _damaged(
                f"{label}: objective {text!r} disagrees with num_class={n_class} and "
                f"num_tree_per_iteration={per_iter}."
            )
        return "softmax", "classification", 1.0, name, notes
    if name == "multiclassova":
        raise InvalidModelError(
            "This LightGBM model uses objective='multiclassova' (one-vs-all): its class "
            "probabilities are separate sigmoids that do not sum to 1, which Glassbox does not "
            "represent. Retrain with objective='multiclass'."
        )
    if name == "cross_entropy_lambda":
        raise InvalidModelError(
            "This LightGBM model uses objective='cross_entropy_lambda', whose prediction "
            "log(1 + exp(score)) is not a link Glassbox supports. Retrain with objective='cross_entropy'."
        )
    if n_class != 1 or per_iter != 1:
        raise _damaged(
            f"{label}: objective {name!r} has one output, but the file states num_class={n_class} "
            f"and num_tree_per_iteration={per_iter}."
        )
    if name == "binary":
        s = opts.get("sigmoid", "1")
        try:
            factor = float(s)
        except ValueError:
            raise _damaged(f"{label}: the objective's sigmoid parameter is {s!r}.") from None
        if not (math.isfinite(factor) and factor > 0):
            raise _damaged(f"{label}: the objective's sigmoid parameter is {s!r}; it must be a positive number.")
        if factor != 1.0:
            notes.append(
                f"The model uses sigmoid={s}: its probability is 1 / (1 + exp(-{s} * score)), so the "
                f"margin explained here is LightGBM's raw score times {s} (the log-odds)."
            )
        return "sigmoid", "classification", factor, name, notes
    if name == "cross_entropy":
        notes.append("objective='cross_entropy': the model's probability is column 1 of predict_proba.")
        return "sigmoid", "classification", 1.0, name, notes
    if name in _EXP:
        return "exp", "regression", 1.0, name, notes
    if name in _IDENTITY:
        if name in _RANKING:
            notes.append(f"objective={name!r}: the explained output is the ranking score.")
        return "identity", "regression", 1.0, name, notes
    if name == "custom":
        notes.append("The model was trained with a custom objective: it is explained on LightGBM's raw score.")
        return "identity", "regression", 1.0, name, notes
    raise InvalidModelError(
        f"This LightGBM model uses objective {name!r}, which Glassbox does not read. Supported: "
        "regression, regression_l1, huber, fair, quantile, mape, binary, multiclass, "
        "cross_entropy, poisson, gamma, tweedie, lambdarank, rank_xendcg."
    )


# ---------------------------------------------------------------- one tree
def _categorical_sets(block: dict, n_cat: int, where: str):
    """The per-split category sets (list of code arrays) of a tree's bitsets."""
    if n_cat == 0:
        return []
    bounds = _array(block, "cat_boundaries", n_cat + 1, int, where)
    thr_text = block.get("cat_threshold")
    if thr_text is None:
        raise _damaged(f"{where} has no cat_threshold line.")
    n_words = len(thr_text.split())
    if bounds[0] != 0 or (np.diff(bounds) < 0).any() or bounds[-1] != n_words:
        raise _damaged(
            f"{where}: cat_boundaries ({' '.join(map(str, bounds[:6]))}{' ...' if len(bounds) > 6 else ''}) "
            f"must rise from 0 to the {n_words:,} words of cat_threshold."
        )
    words = _array(block, "cat_threshold", n_words, int, where)
    if ((words < 0) | (words >= 2**32)).any():
        raise _damaged(f"{where}: cat_threshold holds a value outside 32 bits.")
    sets = []
    bit = np.arange(32, dtype=np.int64)
    for c in range(n_cat):
        w = words[bounds[c]:bounds[c + 1]]
        on = (w[:, None] >> bit[None, :]) & 1
        sets.append(np.flatnonzero(on.reshape(-1)).astype(np.int64))
    return sets


def _tree_part(block: dict, t: int, n_raw: int, column: int, label: str):
    """(part tuple, split features, gains, split counts, number of internal nodes) of one tree."""
    where = f"{label}, tree {t}"
    n_leaves = _int(block.get("num_leaves"), f"tree {t}'s num_leaves", label) if "num_leaves" in block else None
    if n_leaves is None:
        raise _damaged(f"{where} has no num_leaves line.")
    if n_leaves < 1:
        raise _damaged(f"{where} states num_leaves={n_leaves}.")
    if 2 * n_leaves - 1 > limits.limit("nodes"):
        raise InvalidModelError(f"{where} states {n_leaves:,} leaves, {limits.over('nodes')}.")
    if _int(block.get("is_linear", "0"), f"tree {t}'s is_linear", label) != 0:
        raise InvalidModelError(
            "This LightGBM model uses linear_tree=True: its leaves hold linear models, not "
            "constants, which Glassbox does not represent. Retrain with linear_tree=False."
        )
    n_int = n_leaves - 1
    n = n_int + n_leaves
    leaf_value = _array(block, "leaf_value", n_leaves, float, where)
    if not np.isfinite(leaf_value).all():
        raise _damaged(f"{where}, leaf {int(np.flatnonzero(~np.isfinite(leaf_value))[0])}: the leaf value is not finite.")
    leaf_count = _counts(_array(block, "leaf_count", n_leaves, float, where), "leaf_count", where, 0)

    feature = np.full(n, -1, np.int64)
    threshold = np.full(n, np.nan)
    left = np.full(n, -1, np.int64)
    right = np.full(n, -1, np.int64)
    missing = np.zeros(n, np.uint8)
    value = np.zeros((n, n_raw))
    value[n_int:, column] = leaf_value
    cover = np.zeros(n)
    cover[n_int:] = leaf_count
    rules: dict[int, np.ndarray] = {}
    gains = np.zeros(0)
    if n_leaves == 1:
        # LightGBM's expected value of a one-leaf tree is its leaf value, whatever the count
        cover[0] = max(float(leaf_count[0]), 1.0)
        part = (feature, threshold, left, right, missing, value, cover, -1, rules)
        return part, feature[:0], gains, n_int

    split_feature = _array(block, "split_feature", n_int, int, where)
    thr = _array(block, "threshold", n_int, float, where)
    dtype = _array(block, "decision_type", n_int, int, where, required=False)
    if dtype is None:
        dtype = np.zeros(n_int, np.int64)
    lc = _array(block, "left_child", n_int, int, where)
    rc = _array(block, "right_child", n_int, int, where)
    internal_count = _array(block, "internal_count", n_int, float, where)
    gains = _array(block, "split_gain", n_int, float, where, required=False)
    if gains is None:
        gains = np.zeros(n_int)
    if not np.isfinite(gains).all():
        raise _damaged(f"{where}: split_gain holds a value that is not finite.")
    _counts(internal_count, "internal_count", where, 1)  # a split holds data
    for side, child in (("left", lc), ("right", rc)):
        bad = (child >= n_int) | (child < -n_leaves)
        if bad.any():
            node = int(np.flatnonzero(bad)[0])
            raise _damaged(
                f"{where}, node {node}: {side}_child is {int(child[node])}, outside the tree "
                f"(splits 0..{n_int - 1}, leaves -1..-{n_leaves})."
            )
    if ((dtype < 0) | (dtype > 127)).any():
        node = int(np.flatnonzero((dtype < 0) | (dtype > 127))[0])
        raise _damaged(f"{where}, node {node}: decision_type {int(dtype[node])} is not a LightGBM decision type.")
    n_cat = _int(block.get("num_cat", "0"), f"tree {t}'s num_cat", label)
    if n_cat < 0 or n_cat > n_int:
        raise _damaged(f"{where} states num_cat={n_cat} for {n_int} splits.")
    sets = _categorical_sets(block, n_cat, where)

    map_child = lambda c: np.where(c >= 0, c, n_int + ~c)  # noqa: E731
    left[:n_int] = map_child(lc)
    right[:n_int] = map_child(rc)
    feature[:n_int] = split_feature
    cover[:n_int] = internal_count
    is_cat = (dtype & _CATEGORICAL_MASK) != 0
    default_left = (dtype & _DEFAULT_LEFT_MASK) != 0
    miss_type = (dtype >> 2) & 3
    numeric = ~is_cat
    if (numeric & (miss_type == 3)).any():
        node = int(np.flatnonzero(numeric & (miss_type == 3))[0])
        raise _damaged(f"{where}, node {node}: decision_type {int(dtype[node])} names no missing-value type.")
    threshold[:n_int] = np.where(numeric, thr, 0.0)
    with np.errstate(invalid="ignore"):
        # missing type None: NaN becomes 0.0 and goes where 0 goes
        zero_left = 0.0 <= thr
    missing[:n_int] = np.where(
        is_cat, 0, np.where(miss_type == _MISSING_NONE, zero_left, default_left)
    ).astype(np.uint8)
    for node in np.flatnonzero(numeric & (miss_type == _MISSING_ZERO)):
        rules[int(node)] = rule_record(RULE_ZERO_MISSING)
    for node in np.flatnonzero(is_cat):
        idx = thr[node]
        if not (math.isfinite(idx) and idx == int(idx) and 0 <= idx < n_cat):
            raise _damaged(
                f"{where}, node {int(node)}: its threshold {idx!r} names no categorical bitset "
                f"(the tree has {n_cat})."
            )
        rules[int(node)] = rule_record(RULE_CATEGORICAL, sets[int(idx)])
    part = (feature, threshold, left, right, missing, value, cover, -1, rules)
    return part, split_feature, gains, n_int


# ----------------------------------------------------------- categories
def _categorical_columns(header: dict, params: dict, names: list[str], n_features: int) -> list[int]:
    """Input columns LightGBM treats as categorical, in column order."""
    spec = params.get("categorical_feature", "").strip()
    cols: set[int] = set()
    if spec:
        by_name = {n: j for j, n in enumerate(names)}
        for tok in spec.replace("name:", "").split(","):
            tok = tok.strip()
            if not tok:
                continue
            if tok.lstrip("-").isdigit():
                j = int(tok)
            elif tok in by_name:
                j = by_name[tok]
            else:
                return _categorical_from_infos(header, n_features)
            if 0 <= j < n_features:
                cols.add(j)
        return sorted(cols)
    return _categorical_from_infos(header, n_features)


def _categorical_from_infos(header: dict, n_features: int) -> list[int]:
    infos = header.get("feature_infos", "").split()
    out = []
    for j, info in enumerate(infos[:n_features]):
        if info == "none" or info.startswith("["):
            continue
        if all(p.lstrip("-").isdigit() for p in info.split(":")):
            out.append(j)
    return out


def _categories(header, params, pandas_text, names, n_features, tree_cat_features, label, notes):
    """Per-column tuple of category values from the pandas_categorical line, or None."""
    if pandas_text is None:
        return None
    pandas_text = pandas_text.strip()
    if pandas_text in ("", "null"):
        return None
    try:
        lists = json.loads(pandas_text)
    except (ValueError, RecursionError):
        raise _damaged(f"{label}: the pandas_categorical line is not valid JSON.") from None
    if not isinstance(lists, list) or not all(isinstance(c, list) for c in lists):
        raise _damaged(f"{label}: the pandas_categorical line is not a list of category lists.")
    if not lists:
        return None
    for cats in lists:
        if not all(isinstance(v, (str, int, float, bool)) for v in cats):
            raise _damaged(f"{label}: the pandas_categorical line holds a category that is not a plain value.")
    cols = _categorical_columns(header, params, names, n_features)
    if len(cols) != len(lists) or not set(tree_cat_features) <= set(cols):
        notes.append(
            f"The file lists the categories of {len(lists)} pandas column(s) but the model has "
            f"{len(cols)} categorical feature(s) (ordered pandas categories are numeric in "
            "LightGBM); pass category codes (positions in the training categories) for them."
        )
        return None
    categories: list = [None] * n_features
    for j, cats in zip(cols, lists):
        categories[j] = tuple(cats)
    return tuple(categories)


# -------------------------------------------------------------- internal values
def _counts(counts: np.ndarray, name: str, where: str, least: int) -> np.ndarray:
    """Row counts as LightGBM writes them: whole numbers from ``least`` up to 2**53, each
    finite (it refuses ``inf`` and ``5e-324``; Tree SHAP would give NaN from them)."""
    bad = ~np.isfinite(counts) | (counts < least) | (counts > 2.0 ** 53) | (counts != np.round(counts))
    if bad.any():
        node = int(np.flatnonzero(bad)[0])
        sign = "the negative count " if counts[node] < 0 else ""
        raise _damaged(f"{where}, node {node}: {name} is {sign}{counts[node]:g}; a count of rows is a whole "
                       f"number of at least {least}.")
    return counts


def _internal_values(parts, n_ints):
    """Fill each split's value with the count-weighted mean of its children (bottom up)."""
    sizes = [len(p[0]) for p in parts]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    shift = np.repeat(offsets[:-1], sizes)
    left = np.concatenate([p[2] for p in parts])
    right = np.concatenate([p[3] for p in parts])
    value = np.concatenate([p[5] for p in parts], axis=0)
    cover = np.concatenate([p[6] for p in parts])
    gl = np.where(left >= 0, left + shift, -1)
    gr = np.where(right >= 0, right + shift, -1)
    levels = []
    frontier = offsets[:-1]
    while frontier.size:  # the trees were checked: this ends within their depth
        frontier = frontier[gl[frontier] >= 0]
        if frontier.size:
            levels.append(frontier)
            frontier = np.concatenate([gl[frontier], gr[frontier]])
    for nodes in reversed(levels):
        wl, wr = cover[gl[nodes]], cover[gr[nodes]]
        total = wl + wr
        safe = np.where(total > 0, total, 1.0)
        mean = (wl[:, None] * value[gl[nodes]] + wr[:, None] * value[gr[nodes]]) / safe[:, None]
        plain = 0.5 * (value[gl[nodes]] + value[gr[nodes]])
        value[nodes] = np.where((total > 0)[:, None], mean, plain)
    out = []
    for t, p in enumerate(parts):
        out.append(p[:5] + (value[offsets[t]:offsets[t + 1]],) + p[6:])
    return out


# ------------------------------------------------------------------ public
def read_lightgbm(data: bytes, *, name: str = "") -> NativeTreeModel:
    """Read a LightGBM text model file into a native tree model.

    Parameters
    ----------
    data : bytes
        The file as written by ``booster.save_model(path)`` or
        ``booster.model_to_string()`` (str is accepted too).
    name : str, default=""
        File name used in messages.

    Returns
    -------
    NativeTreeRegressor or NativeTreeClassifier
        ``predict`` (and ``predict_proba``) equal LightGBM's; the ensemble is what
        Tree SHAP and tree partial dependence read.

    Raises
    ------
    InvalidModelError
        For a damaged or hostile file (naming the tree and node), a model over
        the limits of :mod:`explainers.limits`, or a setting Glassbox does not
        represent (linear_tree, multiclassova, reg_sqrt, cross_entropy_lambda).
    """
    label = f"The LightGBM model file {name!r}" if name else "The LightGBM model file"
    text = _decode(data, label)
    header, blocks, params, pandas_text = _split_file(text, label)
    n_class, per_iter, n_features, names = _check_header(header, params, label)
    transform, task, factor, obj_name, notes = _objective(header, params, n_class, per_iter, label)
    n_raw = _check_tree_count(header, blocks, n_class, per_iter, transform, obj_name, label)
    parts, n_ints, splits = _read_parts(blocks, n_raw, label)
    parts = _checked_parts(parts, n_ints, n_features, label)
    importances = _importances(splits, n_features)

    boosting = params.get("boosting", "gbdt") or "gbdt"
    scale = factor
    if "average_output" in header:
        # random forest mode: LightGBM averages the iterations' outputs
        scale = factor * per_iter / len(blocks)
        notes.append(f"Random forest mode (average_output): the {len(blocks) // per_iter} iterations are averaged.")
    tree_cat = _tree_cat_features(parts)
    categories = _categories(header, params, pandas_text, names, n_features, tree_cat, label, notes)
    default_names = all(_DEFAULT_NAME.fullmatch(nm) and int(nm[7:]) == j for j, nm in enumerate(names))
    if default_names:
        notes.append("The model was fitted without feature names: its features are named by position.")
    ensemble = assemble(
        parts, [t % n_raw for t in range(len(parts))], base=np.zeros(n_raw), scale=scale,
        transform=transform, float32_inputs=False, n_features=n_features,
        model_name=f"LightGBM {boosting} ({obj_name})", categories=categories, numeric_codes=True,
        truncate_codes=True,
    )
    classes = np.arange(2 if transform == "sigmoid" else n_raw) if task == "classification" else None
    return native_model(
        ensemble, task=task, classes=classes, library="lightgbm",
        objective=(header.get("objective") or obj_name).strip(),
        feature_names=None if default_names else names, importances=importances,
        notes=tuple(notes), source_format="lightgbm text",
    )


# ------------------------------------------------------------------ steps
def _check_header(header: dict, params: dict, label: str):
    """Return (n_class, per_iter, n_features, names) from the header, checked; linear_tree refused."""
    for key in ("num_class", "max_feature_idx", "feature_names", "feature_infos"):
        if key not in header:
            raise _damaged(f"{label} has no {key} line in its header.")
    n_class = _int(header["num_class"], "num_class", label)
    per_iter = _int(header.get("num_tree_per_iteration", n_class), "num_tree_per_iteration", label)
    n_features = _int(header["max_feature_idx"], "max_feature_idx", label) + 1
    if n_features < 1:
        raise _damaged(f"{label} states max_feature_idx={n_features - 1}.")
    if n_features > limits.limit("features"):
        raise InvalidModelError(f"{label} reads {n_features:,} features, {limits.over('features')}.")
    names = header["feature_names"].split()
    if len(names) != n_features:
        raise _damaged(f"{label} names {len(names)} features but states max_feature_idx={n_features - 1}.")
    if params.get("linear_tree", "0").strip() not in ("", "0", "false", "False"):
        raise InvalidModelError(
            "This LightGBM model uses linear_tree=True: its leaves hold linear models, not "
            "constants, which Glassbox does not represent. Retrain with linear_tree=False."
        )
    return n_class, per_iter, n_features, names


def _check_tree_count(header: dict, blocks, n_class: int, per_iter: int, transform: str, obj_name: str,
                      label: str) -> int:
    """The number of raw outputs, once the trees' count is checked against the header's."""
    if n_class > 1 and transform != "softmax":  # pragma: no cover - _objective refuses these
        raise _damaged(f"{label} states num_class={n_class} for objective {obj_name!r}.")
    if not blocks:
        raise _damaged(f"{label} holds no trees.")
    if "tree_sizes" in header and len(header["tree_sizes"].split()) != len(blocks):
        raise _damaged(
            f"{label} lists {len(header['tree_sizes'].split())} tree sizes but holds {len(blocks)} trees: "
            "the file is truncated or spliced."
        )
    if len(blocks) % per_iter:
        raise _damaged(f"{label} holds {len(blocks)} trees, not a multiple of num_tree_per_iteration={per_iter}.")
    return per_iter if transform == "softmax" else 1


def _read_parts(blocks, n_raw: int, label: str):
    """Return (parts, n_ints, splits): the trees read within the limits, and their splits' features, gains, covers."""
    stated = 0
    for t, (_, block) in enumerate(blocks):  # what the file says the trees hold, before any array
        if "num_leaves" in block:
            stated += 2 * max(1, _int(block.get("num_leaves"), f"tree {t}'s num_leaves", label)) - 1
    check_structure(stated, n_raw, label)
    parts, n_ints = [], []
    split_features, split_gains, split_covers = [], [], []
    total_nodes, rule_words = 0, 0
    for t, (_, block) in enumerate(blocks):
        part, feats, gains, n_int = _tree_part(block, t, n_raw, t % n_raw, label)
        rule_words += sum(len(r) for r in part[8].values()) if part[8] else 0
        check_structure(stated, n_raw, label, rule_words=rule_words)
        total_nodes += len(part[0])
        if total_nodes > limits.limit("nodes"):
            raise InvalidModelError(f"{label} has more than {total_nodes:,} tree nodes, {limits.over('nodes')}.")
        parts.append(part)
        n_ints.append(n_int)
        split_features.append(feats)
        split_gains.append(gains)
        split_covers.append(part[6][:n_int])
    return parts, n_ints, (split_features, split_gains, split_covers)


def _checked_parts(parts, n_ints, n_features: int, label: str):
    """The parts once checked as trees, with their depths and the splits' internal values."""
    from .validate import check_trees

    offsets = np.concatenate([[0], np.cumsum([len(p[0]) for p in parts])])
    cat = lambda i: np.concatenate([p[i] for p in parts])  # noqa: E731

    def where(t, node):
        if node is None:
            return f"{label}, tree {t}"
        if node < n_ints[t]:
            return f"{label}, tree {t}, node {node}"
        return f"{label}, tree {t}, leaf {node - n_ints[t]}"

    depths = check_trees(cat(2), cat(3), offsets, feature=cat(0), n_features=n_features,
                         threshold=cat(1), where=where)
    parts = [p[:7] + (int(d),) + p[8:] for p, d in zip(parts, depths)]
    return _internal_values(parts, n_ints)


def _importances(splits, n_features: int) -> dict:
    """LightGBM's importances (gain, cover, split count) per input column."""
    split_features, split_gains, split_covers = splits
    feats = np.concatenate(split_features).astype(np.int64)
    return {
        "gain": np.bincount(feats, weights=np.concatenate(split_gains), minlength=n_features).astype(float),
        "cover": np.bincount(feats, weights=np.concatenate(split_covers), minlength=n_features).astype(float),
        "split count": np.bincount(feats, minlength=n_features).astype(float),
    }


def _tree_cat_features(parts) -> list[int]:
    out = set()
    for p in parts:
        for node, record in p[8].items():
            if int(record[1]) & RULE_CATEGORICAL:
                out.add(int(p[0][node]))
    return sorted(out)


def lightgbm_from_object(model) -> NativeTreeModel:
    """A native model from a fitted LightGBM object (LGBMClassifier, LGBMRegressor,
    LGBMRanker or Booster) that the operator allowed to be unpickled.

    The booster's ``model_to_string()`` goes through :func:`read_lightgbm`, so the
    result is the same as reading the saved file; a classifier keeps its ``classes_``.
    """
    booster = getattr(model, "booster_", None) if not hasattr(model, "model_to_string") else model
    if booster is None or not hasattr(booster, "model_to_string"):
        raise InvalidModelError(
            f"{type(model).__name__} is not a fitted LightGBM model (no booster_ with model_to_string)."
        )
    text = booster.model_to_string()
    native = read_lightgbm(text.encode("utf-8"), name=type(model).__name__)
    classes = getattr(model, "classes_", None) if booster is not model else None
    if classes is not None and native._estimator_type == "classifier":
        classes = np.asarray(classes)
        if len(classes) != len(native.classes_):
            raise InvalidModelError(
                f"The {type(model).__name__} lists {len(classes)} classes but its booster gives "
                f"{len(native.classes_)} outputs."
            )
        native.classes_ = classes
    return native
