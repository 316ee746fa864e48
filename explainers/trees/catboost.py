"""Read a CatBoost model from its JSON file (``model.save_model("m.json", format="json")``).

The file is parsed as plain data with :mod:`json`; CatBoost itself is never
imported here, except by :func:`cbm_to_json` (a ``.cbm`` file, converted by the
catboost package when it is installed) and :func:`catboost_from_object`.

CatBoost grows *oblivious* trees: every node of level ``l`` tests the same
condition, and a row's leaf is ``sum_l bit_l << l`` where ``bit_l`` is 1 when the
condition of ``splits[l]`` holds. Each tree of depth ``d`` becomes an ordinary
full binary tree of ``2**d`` leaves, with the *last* split at the root (so the
leaves come out in the file's own order); a true condition goes right:

- ``FloatFeature``: CatBoost compares the float32 input ``x > border``; here
  ``x <= border`` goes left with ``float32_inputs=True``. A NaN input goes right
  only where the feature's ``nan_value_treatment`` is ``AsTrue``
  (``nan_mode="Max"``); ``AsFalse`` (``nan_mode="Min"``) and ``AsIs`` (a feature
  without NaN in training, where ``NaN > border`` is false) send it left.
- ``OneHotFeature``: the category whose hash equals ``value`` goes right, every
  other category left. The hash of a category is CatBoost's CityHash of its
  text; the file maps hashes back to values only when it was saved with the
  training pool (``save_model(..., format="json", pool=Pool(X, y, cat_features=...))``,
  which writes ``features_info.cat_features_hash``). The column's categories are
  the values its one-hot splits name; any other value goes where CatBoost sends
  it, left, as an unknown code.
- ``OnlineCtr`` (target statistics of categorical columns): refused, see
  :data:`CTR_MESSAGE`.

Node covers are CatBoost's ``leaf_weights`` (the training weight in each leaf),
summed up the tree: the weights CatBoost's own ``ShapValues`` use (an empty leaf
counts as 1e-12 of its tree's weight, see :func:`_floor_weights`). With the last
split at the root, path-dependent Tree SHAP equals CatBoost's ``ShapValues``
(its default ``shap_calc_type="Regular"``). Raw predictions are
``bias + scale * sum of leaf values`` (``scale_and_bias``).
"""
from __future__ import annotations

import json
import math
import os
import tempfile

import numpy as np

from .. import limits
from .._child import CPU_SIGNALS, child_env, set_limits, signal_name
from ..errors import InvalidModelError
from .ensemble import RULE_CATEGORICAL, RULE_OTHER_LEFT, assemble, check_structure, rule_record
from .native import NativeTreeModel, file_bytes, native_model

__all__ = ["read_catboost", "cbm_to_json", "catboost_from_object", "CTR_MESSAGE"]

CTR_MESSAGE = (
    "This CatBoost model uses CTR (target statistics) features for its categorical columns "
    "({features}): their values come from tables of target counts that Glassbox does not "
    "evaluate. Retrain with one_hot_max_size larger than the number of categories of each "
    "categorical column (every categorical split is then a one-hot split), or without cat_features."
)
_SAVE_HINT = "Save the model again with model.save_model('model.json', format='json') and upload that file."
#: the magic bytes at the start of a .cbm file
CBM_MAGIC = b"CBM1"

#: loss -> (task, transform); losses not listed give identity regression
_SIGMOID = {"Logloss", "CrossEntropy"}
_EXP = {"Poisson", "Tweedie"}
#: losses whose prediction is the raw sum (regression, ranking)
_IDENTITY = {"RMSE", "MAE", "Quantile", "Expectile", "LogLinQuantile", "MAPE", "Huber", "Lq", "LogCosh",
             "Cox", "FairLoss", "SMAPE", "R2", "MSLE", "MedianAbsoluteError", "NumErrors", "YetiRank",
             "YetiRankPairwise", "PairLogit", "PairLogitPairwise", "QueryRMSE", "QuerySoftMax",
             "QueryCrossEntropy", "StochasticFilter", "StochasticRank", "LambdaMart", "GroupQuantile"}
#: multi-output losses: several independent outputs that no transform here combines
_MULTI_OUTPUT = {"MultiRMSE", "MultiLogloss", "MultiCrossEntropy", "RMSEWithUncertainty",
                 "MultiQuantile", "MultiClassOneVsAll", "SurvivalAft"}
_NAN_TREATMENTS = ("AsIs", "AsFalse", "AsTrue")


def _bad(msg: str) -> InvalidModelError:
    return InvalidModelError(f"{msg} The CatBoost model file is damaged or not a CatBoost JSON model. {_SAVE_HINT}")


def _get(obj, key, kind, where, default=...):
    """``obj[key]`` checked to be of ``kind``; a missing key gives ``default`` when one is given."""
    if not isinstance(obj, dict):
        raise _bad(f"{where} is not a JSON object.")
    if key not in obj:
        if default is not ...:
            return default
        raise _bad(f"{where} has no {key!r} entry.")
    value = obj[key]
    ok = isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, float, (int, float)))
    if not ok:
        raise _bad(f"{where}: {key!r} is {type(value).__name__}, not {_kind_name(kind)}.")
    return value


def _kind_name(kind) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number",
             (int, float): "a number"}
    return names.get(kind, str(kind))


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(f"{where} is {type(value).__name__}, not a number.")
    try:
        out = float(value)
    except OverflowError:
        raise _bad(f"{where} is too large a number.") from None
    if not math.isfinite(out):
        raise _bad(f"{where} is {out}, not a finite number.")
    return out


def _index(value, where: str, upper: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < upper:
        raise _bad(f"{where} is {repr(value)[:20]}, not an index between 0 and {upper - 1}.")
    return int(value)


def _numbers(values, where: str) -> np.ndarray:
    """A JSON list of finite numbers as float64 (refusing strings, NaN, nesting)."""
    if not isinstance(values, list):
        raise _bad(f"{where} is not a list.")
    try:
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
            raise TypeError
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise _bad(f"{where} holds something other than numbers.") from None
    if not np.isfinite(arr).all():
        raise _bad(f"{where} holds NaN or infinite numbers.")
    return arr


# --------------------------------------------------------------------- parse
def _load_json(data: bytes) -> dict:
    data = file_bytes(data, "CatBoost", "read_catboost")
    if data[:4] == CBM_MAGIC:
        data = cbm_to_json(data)
    try:
        doc = json.loads(data)
    except RecursionError:
        raise _bad("The JSON nests too deeply.") from None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise _bad(f"It is not valid JSON ({exc}).") from None
    if not isinstance(doc, dict):
        raise _bad("The JSON is not an object.")
    return doc


def _loss(doc: dict) -> tuple[str, str]:
    """(loss name, full objective text with its parameters)."""
    info = _get(doc, "model_info", dict, "The file", {})
    params = _get(info, "params", dict, "model_info", {})
    loss = _get(params, "loss_function", dict, "model_info.params", None)
    if loss is None:
        return "RMSE", "RMSE"
    name = _get(loss, "type", str, "model_info.params.loss_function")
    extra = _get(loss, "params", dict, "model_info.params.loss_function", {})
    args = [f"{k}={v}" for k, v in extra.items() if not str(k).startswith("__") and isinstance(v, (str, int, float))]
    return name, name + (":" + ";".join(args) if args else "")


def _task(doc: dict, loss: str, k: int, label: str):
    """(task, transform, classes, notes) of the loss function; refuses multi-output losses."""
    if loss in _MULTI_OUTPUT or (k > 1 and loss != "MultiClass"):
        raise InvalidModelError(
            f"{label} is trained with loss_function={loss!r}, which gives {k} separate output(s); Glassbox "
            "reads single-output regressors, binary classifiers (Logloss, CrossEntropy) and multiclass "
            "classifiers (MultiClass). Retrain with one of these losses (one model per output)."
        )
    if loss in _SIGMOID:
        classes = _class_names(doc) or [0, 1]
        if len(classes) != 2:
            raise _bad(f"The binary ({loss}) model lists {len(classes)} classes.")
        return "classification", "sigmoid", classes, ()
    if loss == "MultiClass":
        classes = _class_names(doc) or list(range(k))
        if k < 2 or len(classes) != k:
            raise _bad(f"The MultiClass model lists {len(classes)} classes but its leaves hold {k} value(s).")
        return "classification", "softmax", classes, ()
    if loss in _EXP:
        return "regression", "exp", None, ()
    if loss in _IDENTITY:
        return "regression", "identity", None, ()
    return "regression", "identity", None, (
        f"Glassbox does not know CatBoost's loss_function {loss!r}; it explains the model's raw output "
        "(RawFormulaVal), which is what CatBoostRegressor.predict returns for most losses.",)


def _class_names(doc: dict):
    info = _get(doc, "model_info", dict, "The file", {})
    cp = _get(info, "class_params", dict, "model_info", {})
    names = _get(cp, "class_names", list, "model_info.class_params", None)
    if not names:
        params = _get(info, "params", dict, "model_info", {})
        dpo = _get(params, "data_processing_options", dict, "model_info.params", {})
        names = _get(dpo, "class_names", list, "model_info.params.data_processing_options", None)
    if not names:
        return None
    if any(isinstance(v, (list, dict)) or v is None for v in names):
        raise _bad("The class names are not plain values.")
    return names


def _features(doc: dict):
    """Columns of the model: per flat index its name, kind, NaN treatment; lookups of the splits' indices."""
    info = _get(doc, "features_info", dict, "The file")
    for key in ("text_features", "embedding_features"):
        if _get(info, key, list, "features_info", []):
            raise InvalidModelError(
                f"This CatBoost model has {key} ({len(info[key])}); Glassbox reads models of numeric and "
                "categorical columns only. Retrain without text_features / embedding_features."
            )
    floats = _get(info, "float_features", list, "features_info", [])
    cats = _get(info, "categorical_features", list, "features_info", [])
    max_features = limits.limit("features")
    if len(floats) + len(cats) > max_features:
        raise InvalidModelError(f"The CatBoost model reads {len(floats) + len(cats):,} features, "
                                f"{limits.over('features')}.")
    columns = {}  # flat index -> (name, kind)
    float_col, nan_right = {}, {}
    split_table: list = []  # split_index -> (float feature index, border): the borders in file order
    cat_col = {}
    for kind, items in (("float", floats), ("categorical", cats)):
        for i, f in enumerate(items):
            where = f"features_info.{kind}_features[{i}]"
            flat = _index(_get(f, "flat_feature_index", int, where), f"{where}.flat_feature_index", max_features)
            own = _index(_get(f, "feature_index", int, where), f"{where}.feature_index", max_features)
            if flat in columns:
                raise _bad(f"{where}: two features claim column {flat}.")
            name = f.get("feature_id") or f.get("feature_name") or ""
            if not isinstance(name, str):
                raise _bad(f"{where}: the feature name is not a string.")
            columns[flat] = (name, kind)
            if kind == "float":
                if own in float_col:
                    raise _bad(f"{where}: two float features have feature_index {own}.")
                float_col[own] = flat
                split_table.extend((own, b) for b in _borders(f, where))
                treat = _get(f, "nan_value_treatment", str, where, "AsIs")
                if treat not in _NAN_TREATMENTS:
                    raise _bad(f"{where}: nan_value_treatment {treat!r} is not one of {list(_NAN_TREATMENTS)}.")
                nan_right[own] = treat == "AsTrue"
            else:
                if own in cat_col:
                    raise _bad(f"{where}: two categorical features have feature_index {own}.")
                cat_col[own] = flat
                # one-hot splits' split_index counts on through each categorical feature's values
                values = _get(f, "values", list, where, [])
                split_table.extend(("one-hot", own, _get({"value": v}, "value", int, f"{where}.values[{j}]")
                                    & 0xFFFFFFFF) for j, v in enumerate(values))
    n_features = max(columns) + 1 if columns else 0
    if n_features == 0:
        raise _bad("features_info lists no features.")
    names = [columns.get(j, ("", "float"))[0] for j in range(n_features)]
    if any(names):
        names = [n or str(j) for j, n in enumerate(names)]
    else:
        names = None
    hashes = {}
    for i, item in enumerate(_get(info, "cat_features_hash", list, "features_info", [])):
        where = f"features_info.cat_features_hash[{i}]"
        h = _get(item, "hash", int, where)
        value = _get(item, "value", str, where)
        hashes[h & 0xFFFFFFFF] = value
    return n_features, names, float_col, nan_right, cat_col, hashes, split_table


def _borders(feature: dict, where: str) -> list:
    """A float feature's borders as listed (what the splits' ``split_index`` counts through)."""
    borders = _get(feature, "borders", list, where, [])
    return [_number(b, f"{where}.borders[{i}]") for i, b in enumerate(borders)]


def _check_split_index(s: dict, entry: tuple, split_table: list, where: str) -> None:
    """A split states what it tests twice: as ``float_feature_index`` / ``border`` (a one-hot
    split: ``cat_feature_index`` / ``value``) and as ``split_index`` into the features' borders
    and one-hot values, which CatBoost follows. The two must agree, or the file would be
    explained as a model CatBoost does not run."""
    one_hot = entry[0] == "one-hot"
    if "split_index" not in s or not any((e[0] == "one-hot") == one_hot for e in split_table):
        return
    idx = _get(s, "split_index", int, where)
    said = split_table[idx] if 0 <= idx < len(split_table) else None
    if said != entry:
        raise _bad(f"{where} says {_test(entry)} but its split_index {idx} names "
                   + (_test(said) if said else "no border or one-hot value of the file")
                   + "; CatBoost follows split_index, so the file is not one model.")


def _test(entry: tuple) -> str:
    """What a split table entry tests, in the file's words."""
    if entry[0] == "one-hot":
        return f"cat_feature_index={entry[1]}, value={entry[2]}"
    return f"float_feature_index={entry[0]}, border={entry[1]!r}"


def _splits(tree: dict, t: int, float_col, nan_right, cat_col, cat_values, split_table=()):
    """The levels of one oblivious tree: (column, threshold, NaN goes left, category hash or None)."""
    levels = []
    ctr = []
    for i, s in enumerate(_get(tree, "splits", list, f"oblivious_trees[{t}]")):
        where = f"oblivious_trees[{t}].splits[{i}]"
        kind = _get(s, "split_type", str, where)
        if kind == "FloatFeature":
            f = _get(s, "float_feature_index", int, where)
            if f not in float_col:
                raise _bad(f"{where} splits on float feature {str(f)[:20]}, which features_info does not list.")
            border = _number(_get(s, "border", (int, float), where), f"{where}.border")
            _check_split_index(s, (f, border), split_table, where)
            levels.append((float_col[f], border, not nan_right[f], None))
        elif kind == "OneHotFeature":
            f = _get(s, "cat_feature_index", int, where)
            if f not in cat_col:
                raise _bad(f"{where} splits on categorical feature {str(f)[:20]}, which features_info does not list.")
            h = _get(s, "value", int, where) & 0xFFFFFFFF
            _check_split_index(s, ("one-hot", f, h), split_table, where)
            levels.append((cat_col[f], 0.0, True, h))
            cat_values.setdefault(cat_col[f], {}).setdefault(h, None)
        elif kind in ("OnlineCtr", "Ctr"):
            ctr.append(s)
        else:
            raise InvalidModelError(
                f"{where} is a CatBoost split of type {kind!r}; Glassbox reads FloatFeature and "
                "OneHotFeature splits only (numeric columns, and categorical columns with one-hot splits)."
            )
    return levels, ctr


def _ctr_columns(doc, cat_col, names) -> str:
    """The categorical columns the file's CTR tables are computed from, for the refusal message."""
    cols = set()
    ctr_data = doc.get("ctr_data")
    for key in ctr_data if isinstance(ctr_data, dict) else ():
        try:
            ident = json.loads(key).get("identifier", [])
            cols.update(cat_col.get(item.get("cat_feature_index")) for item in ident)
        except (ValueError, AttributeError, TypeError, RecursionError):
            continue
    cols = sorted(c for c in cols if c is not None) or sorted(cat_col.values())
    return ", ".join(names[c] if names else f"column {c}" for c in cols) or "its categorical columns"


def _tree_parts(levels, leaf_values, leaf_weights, k: int, rules_of_level):
    """One oblivious tree as the arrays of a full binary tree, the *last* split at the root.

    Path-dependent Tree SHAP depends on the order of the levels; CatBoost's
    ShapValues take the last split first (checked against them to 1e-9). A
    leaf's path bits, the root's the highest, are then CatBoost's own leaf
    index ``sum_l bit_l << l`` (``bit_l``: the condition of ``splits[l]``), so
    the leaves come out in the file's order.
    """
    d = len(levels)
    n_leaves = 1 << d
    n_nodes = 2 * n_leaves - 1
    feature = np.full(n_nodes, -1, np.int64)
    threshold = np.full(n_nodes, np.nan)
    left = np.full(n_nodes, -1, np.int64)
    right = np.full(n_nodes, -1, np.int64)
    miss = np.ones(n_nodes, np.uint8)
    value = np.zeros((n_nodes, k))
    cover = np.zeros(n_nodes)
    rules = {}
    for level, (col, border, nan_left, _) in enumerate(levels[::-1]):
        nodes = np.arange((1 << level) - 1, (2 << level) - 1)
        feature[nodes] = col
        threshold[nodes] = border
        miss[nodes] = nan_left
        left[nodes] = 2 * nodes + 1
        right[nodes] = 2 * nodes + 2
        record = rules_of_level[d - 1 - level]
        if record is not None:
            for node in nodes.tolist():
                rules[node] = record
    first = n_leaves - 1
    value[first:] = leaf_values.reshape(n_leaves, k)
    cover[first:] = leaf_weights
    for level in range(d - 1, -1, -1):
        nodes = np.arange((1 << level) - 1, (2 << level) - 1)
        lc, rc = 2 * nodes + 1, 2 * nodes + 2
        c = cover[lc] + cover[rc]
        cover[nodes] = c
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (cover[lc, None] * value[lc] + cover[rc, None] * value[rc]) / c[:, None]
        value[nodes] = np.where(c[:, None] > 0, mean, 0.5 * (value[lc] + value[rc]))
    return (feature, threshold, left, right, miss, value, cover, -1, rules)


def read_catboost(data: bytes, *, name: str = "") -> NativeTreeModel:
    """Read a CatBoost model saved as JSON (or ``.cbm``, when the catboost package is installed).

    Parameters
    ----------
    data : bytes
        The file's bytes: ``model.save_model("model.json", format="json")``. A
        ``.cbm`` file is converted to JSON by the catboost package (see
        :func:`cbm_to_json`).
    name : str, default=""
        The file name, for messages.

    Returns
    -------
    NativeTreeRegressor or NativeTreeClassifier
        With ``ensemble`` (the trees), ``objective`` (the loss function),
        ``importances`` (``"split count"`` and ``"cover"`` per column) and
        ``classes_`` for a classifier.

    Raises
    ------
    InvalidModelError
        A damaged file, or a model Glassbox does not read: CTR (target
        statistics) splits, non-symmetric trees, multi-output losses, text or
        embedding features, one-hot splits without the category mapping.
    """
    doc = _load_json(data)
    label = f"The CatBoost model{f' {name!r}' if name else ''}"
    if "oblivious_trees" not in doc:
        if isinstance(doc.get("trees"), list):
            raise InvalidModelError(
                f"{label} has non-symmetric trees (grow_policy='Depthwise' or 'Lossguide'); Glassbox reads "
                "CatBoost's oblivious trees only. Retrain with grow_policy='SymmetricTree' (the default)."
            )
        raise _bad("The file has no 'oblivious_trees'.")
    loss, objective = _loss(doc)
    n_features, names, float_col, nan_right, cat_col, hashes, split_table = _features(doc)

    trees = _get(doc, "oblivious_trees", list, "The file")
    if not trees:
        raise _bad("The file holds no trees.")
    if len(trees) > limits.limit("trees"):
        raise InvalidModelError(f"{label} has {len(trees):,} trees, {limits.over('trees')}.")
    scale, bias = _scale_and_bias(doc)
    k = len(bias)
    task, transform, classes, notes = _task(doc, loss, k, label)
    per_tree, cat_values, total_nodes = _sized_trees(doc, trees, k, label, float_col, nan_right, cat_col,
                                                     split_table, names)
    categories, code_of = _category_codes(cat_col, cat_values, hashes, names, n_features, label)

    # one-hot rule records: a node at split l of a depth-d tree is one of 2**(d-1-l), each holding
    # the words of its set; counted before any is built (categories numbering in the thousands
    # made this grow with their square)
    rule_words = sum((1 << (len(levels) - 1 - l)) * (code_of[(col, h)] // 64 + 3)
                     for levels, _, _ in per_tree for l, (col, _, _, h) in enumerate(levels) if h is not None)
    check_structure(total_nodes, k, label, rule_words=rule_words)
    parts, has_weights, split_count, split_cover = _built_trees(per_tree, code_of, n_features, k)

    notes = list(notes)
    if not has_weights:
        notes.append("The CatBoost file holds no leaf weights: path-dependent Tree SHAP weighs every leaf "
                     "equally, not by its training data (use interventional SHAP with background data).")
    if any(c is not None for c in categories) and not cat_values:
        notes.append("The model's categorical columns are not used by any split.")
    importances = {"split count": split_count}
    if has_weights:
        importances["cover"] = split_cover
    ens = assemble(parts, [-1] * len(parts), base=bias, scale=scale, transform=transform,
                   float32_inputs=True, n_features=n_features,
                   model_name=f"CatBoost oblivious trees ({loss})", categories=categories)
    return native_model(ens, task=task, classes=classes, library="catboost", objective=objective,
                        feature_names=names, importances=importances, notes=tuple(notes),
                        source_format="catboost json")


def _scale_and_bias(doc: dict) -> tuple[float, np.ndarray]:
    """The file's ``scale_and_bias``: the scale and one bias per output (at least one)."""
    sb = _get(doc, "scale_and_bias", list, "The file", [1.0, [0.0]])
    if len(sb) != 2:
        raise _bad("scale_and_bias is not [scale, [bias, ...]].")
    scale = _number(sb[0], "scale_and_bias[0]")
    bias = _numbers(sb[1], "scale_and_bias[1]") if isinstance(sb[1], list) else np.array(
        [_number(sb[1], "scale_and_bias[1]")])
    if len(bias) < 1:
        raise _bad("scale_and_bias gives no bias.")
    return scale, bias


def _sized_trees(doc: dict, trees: list, k: int, label: str, float_col, nan_right, cat_col, split_table, names):
    """Every tree's splits, leaf values and weights, its sizes checked against the limits before any
    array is built: ``(per_tree, the category hashes each column's splits name, total nodes)``.
    CTR splits anywhere refuse the model."""
    max_depth = limits.limit("tree_depth")
    cat_values: dict[int, dict] = {}
    per_tree, ctr, total_nodes = [], [], 0
    for t, tree in enumerate(trees):
        where = f"oblivious_trees[{t}]"
        levels, ctr_t = _splits(tree, t, float_col, nan_right, cat_col, cat_values, split_table)
        ctr += ctr_t
        if ctr_t:
            continue
        d = len(levels)
        if d > max_depth:
            raise InvalidModelError(f"{label}: tree {t} is {d} levels deep, {limits.over('tree_depth')}.")
        values = _get(tree, "leaf_values", list, where)
        if len(values) != k << d:
            raise _bad(f"{where} has {len(values):,} leaf values; a tree of depth {d} with {k} output(s) "
                       f"has {k << d:,}.")
        weights = _get(tree, "leaf_weights", list, where, None)
        if weights is not None and len(weights) != 1 << d:
            raise _bad(f"{where} has {len(weights):,} leaf weights; a tree of depth {d} has {1 << d:,}.")
        total_nodes += (2 << d) - 1
        if total_nodes > limits.limit("nodes"):
            raise InvalidModelError(f"{label} has more than {total_nodes:,} tree nodes, {limits.over('nodes')}.")
        check_structure(total_nodes, k, label)  # an oblivious tree of depth d is 2**(d+1) - 1 nodes
        per_tree.append((levels, values, weights))
    if ctr:
        raise InvalidModelError(CTR_MESSAGE.format(features=_ctr_columns(doc, cat_col, names)))
    return per_tree, cat_values, total_nodes


def _category_codes(cat_col, cat_values, hashes, names, n_features: int, label: str):
    """One-hot categories: a column's codes are the positions of the values its splits name.
    ``(categories per column, {(column, hash): code})``."""
    categories = [None] * n_features
    for col in cat_col.values():
        categories[col] = ()
    code_of = {}
    for col, hs in cat_values.items():
        missing = [h for h in hs if h not in hashes]
        if missing:
            what = names[col] if names else f"column {col}"
            raise InvalidModelError(
                f"{label} has one-hot splits on the categorical column {what}, but the file does not say "
                "which category each split names (CatBoost stores categories as hashes). Save it with the "
                "training data: model.save_model('model.json', format='json', "
                "pool=Pool(X, y, cat_features=...)); the file then maps the hashes back to the categories."
            )
        ordered = list(hs)
        categories[col] = tuple(hashes[h] for h in ordered)
        if len(set(categories[col])) != len(ordered):
            raise _bad(f"features_info.cat_features_hash gives one category for two hashes of column {col}.")
        for code, h in enumerate(ordered):
            code_of[(col, h)] = code
    return categories, code_of


def _built_trees(per_tree: list, code_of: dict, n_features: int, k: int):
    """The trees' node arrays and the split count and cover per column:
    ``(parts, every tree has leaf weights, split_count, split_cover)``."""
    parts = []
    has_weights = True
    split_count = np.zeros(n_features)
    split_cover = np.zeros(n_features)
    for t, (levels, values, weights) in enumerate(per_tree):
        where = f"oblivious_trees[{t}]"
        lv = _numbers(values, f"{where}.leaf_values")
        if weights is None:
            has_weights = False
            lw = np.ones(1 << len(levels))
        else:
            lw = _numbers(weights, f"{where}.leaf_weights")
            if (lw < 0).any():
                raise _bad(f"{where}.leaf_weights holds a negative weight.")
        rules_of_level = []
        for col, _, _, h in levels:
            # CatBoost counts one split per level; every training row passes each level
            split_count[col] += 1
            split_cover[col] += float(lw.sum()) if weights is not None else 0.0
            if h is None:
                rules_of_level.append(None)
                continue
            code = code_of[(col, h)]
            # the named category goes right, every other code (and unknown ones) left
            go_left = np.delete(np.arange(64 * (code // 64 + 1)), code)
            rules_of_level.append(rule_record(RULE_CATEGORICAL | RULE_OTHER_LEFT, go_left))
        parts.append(_tree_parts(levels, lv, _floor_weights(lw), k, rules_of_level))
    return parts, has_weights, split_count, split_cover


def _floor_weights(weights: np.ndarray) -> np.ndarray:
    """Leaf weights with empty leaves given a negligible weight.

    A leaf no training row reached has weight 0 (and value 0). CatBoost's
    ShapValues skip such subtrees; the Tree SHAP and tree PD walks here divide
    by node covers, so an empty leaf counts as ``1e-12`` of the tree's weight
    instead: its contribution (value 0) stays 0 and the others move by about
    1e-12 relative.
    """
    total = float(weights.sum())
    if total <= 0:
        return np.ones_like(weights)
    return np.where(weights > 0, weights, total * 1e-12)


# ------------------------------------------------------- via the package
def cbm_to_json(data: bytes) -> bytes:
    """Convert a ``.cbm`` (CatBoost binary) model to the JSON text :func:`read_catboost` reads.

    The catboost package converts it, in a disposable process of its own, never in this
    one: its compiled loader trusts the file (one changed byte of a 7 KB file crashed it,
    and a crash in the server ends every user's session). The process gets the file in a
    private temporary folder (removed afterwards, whatever happens), at most
    ``convert_seconds`` of CPU and ``convert_bytes`` of memory, no core dump, and may write
    no more JSON than ``model_bytes``; a crash, a timeout or an error there is a refusal
    that says which.

    Raises
    ------
    InvalidModelError
        When catboost is not installed (then save the model with
        ``format='json'``), or cannot read the file.
    """
    try:
        import catboost  # noqa: F401 - only whether it is there: the file is read in another process
    except ImportError:
        raise InvalidModelError(
            "This is a CatBoost binary (.cbm) model, which Glassbox reads only through the catboost "
            "package, and catboost is not installed here. Save the model with format='json' "
            "(model.save_model('model.json', format='json')) and upload that file."
        ) from None
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "model.cbm"), os.path.join(tmp, "model.json")
        with open(src, "wb") as fh:
            fh.write(bytes(data))
        _convert_in_a_process(src, dst, tmp)
        with open(dst, "rb") as fh:
            return fh.read()


_CONVERT = """
import sys
from catboost import CatBoost
model = CatBoost()
try:
    model.load_model(sys.argv[1], format="cbm")
    model.save_model(sys.argv[2], format="json")
except Exception as exc:
    text = str(exc).strip().splitlines()
    sys.stderr.write((text[-1] if text else type(exc).__name__)[:300])
    sys.exit(3)
"""


def _convert_in_a_process(src: str, dst: str, tmp: str) -> None:
    import signal
    import subprocess
    import sys

    cpu = limits.limit("convert_seconds")
    memory = limits.limit("convert_bytes")
    out_bytes = limits.limit("model_bytes")

    def confine():  # in the child, before catboost starts
        set_limits(cpu, memory, file_bytes=out_bytes)

    env = child_env()
    try:
        proc = subprocess.run([sys.executable, "-c", _CONVERT, src, dst], cwd=tmp, env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              preexec_fn=confine if os.name == "posix" else None, timeout=2 * cpu + 30)
    except subprocess.TimeoutExpired:
        raise InvalidModelError(f"catboost did not finish reading this .cbm file in {2 * cpu + 30} s. "
                                f"{_SAVE_HINT}") from None
    if proc.returncode == 0 and os.path.isfile(dst):
        return
    said = proc.stderr.decode("utf-8", "replace").strip()[-300:]
    if proc.returncode < 0:
        sig = -proc.returncode
        name = signal_name(sig)
        if sig in CPU_SIGNALS:
            why = (f"it used up its {limits.fmt('convert_seconds', cpu)} CPU seconds ({name}; the operator can "
                   "raise this with the environment variable GLASSBOX_MAX_CONVERT_SECONDS)")
        elif sig == getattr(signal, "SIGXFSZ", -1):
            why = f"its JSON would exceed {limits.fmt('model_bytes', out_bytes)}"
        else:
            why = f"catboost crashed on it ({name}): the file is damaged or was made to crash a reader"
        raise InvalidModelError(f"This .cbm file could not be converted: {why}. The server was not affected. "
                                f"{_SAVE_HINT}")
    if "bad_alloc" in said or "MemoryError" in said or "memory" in said.lower():
        raise InvalidModelError(f"catboost needed more than {limits.fmt('convert_bytes', memory)} of memory to read "
                                f"this .cbm file ({limits.over('convert_bytes')}). {_SAVE_HINT}")
    raise InvalidModelError(f"catboost cannot read this .cbm file ({said or f'exit status {proc.returncode}'}). "
                            f"{_SAVE_HINT}")


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[-1] if text else type(exc).__name__)[:300]


def _save_json(model, tmp: str, pool=None) -> bytes:
    dst = os.path.join(tmp, "model.json")
    try:
        model.save_model(dst, format="json", pool=pool)
    except Exception as exc:  # noqa: BLE001 - catboost refuses some models as JSON (e.g. CTR without a pool)
        raise InvalidModelError(f"catboost cannot save this model as JSON ({_short(exc)}).") from None
    with open(dst, "rb") as fh:
        return fh.read()


def catboost_from_object(model, *, pool=None, name: str = "") -> NativeTreeModel:
    """Read a fitted CatBoost model object (one the operator allowed to be unpickled).

    The model is saved as JSON in a temporary folder and read with
    :func:`read_catboost`, so it is explained from the same plain data as an
    uploaded file; a classifier keeps its ``classes_``.

    Parameters
    ----------
    model : CatBoostClassifier, CatBoostRegressor or CatBoost
    pool : catboost.Pool, default=None
        The training data, for models with one-hot categorical splits: CatBoost
        needs it to map its category hashes back to the categories.
    name : str, default=""
        For messages.
    """
    return catboost_from_json(model, catboost_json(model, pool), name=name)


def catboost_json(model, pool=None) -> bytes:
    """A fitted CatBoost model object's own JSON (saved in a temporary folder)."""
    try:
        fitted = bool(model.is_fitted())
    except Exception:  # noqa: BLE001 - not a CatBoost object
        fitted = False
    if not fitted:
        raise InvalidModelError(f"{type(model).__name__} is not a fitted CatBoost model.")
    with tempfile.TemporaryDirectory() as tmp:
        return _save_json(model, tmp, pool)


def catboost_from_json(model, text: bytes, name: str = "") -> NativeTreeModel:
    """:func:`read_catboost` of the object's JSON; a classifier keeps the object's ``classes_``."""
    native = read_catboost(text, name=name)
    classes = getattr(model, "classes_", None) if getattr(native, "classes_", None) is not None else None
    if classes is not None and len(classes) == len(native.classes_):
        native.classes_ = np.asarray(classes)
    return native
