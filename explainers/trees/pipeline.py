"""Pipelines whose column-wise preprocessing folds into their final tree model.

A scikit-learn ``Pipeline([preprocessing..., tree model])`` predicts ``f(g(x))``.
When every column ``g`` makes (a *derived* column) depends on one original
column, each tree node that splits on a derived column is rewritten here as a
node on the original column that sends every value the same way::

    derived column of a categorical original column (OneHotEncoder, OrdinalEncoder,
    TargetEncoder, after an optional SimpleImputer and before any column-wise map):
        the column takes finitely many values - one per encoder category, one for
        every unknown category, one for an empty cell - so the node becomes a
        category rule (RULE_CATEGORICAL): the set of categories whose derived value
        goes left, RULE_OTHER_LEFT where unknown categories go left, and
        missing_go_left where an empty cell goes;
    derived column of a numeric original column (scalers, monotone numpy ufuncs,
    SimpleImputer, its missing indicator, KBinsDiscretizer(encode="ordinal")...):
        the derived value is a monotone function of x, so the values of x that go
        left form a down-set or an up-set of the finite float64 numbers; its end is
        found *exactly* by a search over the ordered float64 bit patterns, running
        the pipeline's own ``transform`` and the final model's own comparison
        (float32 rounding for scikit-learn trees) at every step. An up-set swaps
        the node's children. NaN routes as the pipeline routes NaN. (Values outside
        a numpy function's domain, e.g. below -1 for np.log1p, may route as the
        domain's end: :func:`fold_notes` says where.)

The folded :class:`~explainers.trees.ensemble.TreeEnsemble` reads the pipeline's
own input columns (``categories[j]`` are the encoder's categories of a text
column) and compares float64 values, so every tree engine explains the pipeline
in its original columns with no change: path-dependent Tree SHAP gives the
Shapley values of the game whose players are the original columns (every node on
a derived column splits on its original column's player), interventional Tree
SHAP equals ExactShap on the pipeline, tree PD equals brute force.

Steps that mix columns (PCA, PolynomialFeatures, SplineTransformer...) or that
are not known to be column-wise and monotone are refused with a reason
(:func:`fold_refusal`); such pipelines are explained with model-agnostic methods.
"""
from __future__ import annotations

import warnings
import weakref
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidModelError
from ._float_keys import _KMAX, _KMIN, _bisect, _from_key
from .ensemble import RULE_CATEGORICAL, RULE_OTHER_LEFT, TreeEnsemble, rule_record

__all__ = ["is_foldable_pipeline", "flatten_pipeline", "fold_refusal", "fold_notes", "original_groups",
           "mdi_by_original_column"]


class _Refuse(Exception):
    """The pipeline does not fold; the message says why (shown to the user)."""


# ---------------------------------------------------------------- column states
# A derived column is described by the original column it comes from and a state:
RAW = "raw"    # the original value itself (possibly with NaN filled)
NUM = "num"    # a monotone function of the original number
CAT = "cat"    # a function of (encoder category | unknown | empty) of the original column
FLAG = "flag"  # a function of "is the original value missing" only


@dataclass(frozen=True)
class _Col:
    origin: int
    state: str
    categories: tuple | None = None  # the encoder's categories (CAT only), empty markers included


#: numpy ufuncs that are monotone non-decreasing (or non-increasing) over the reals where defined;
#: where they are undefined they give NaN on one end of the line, which the fold handles
_MONOTONE_UFUNCS = {
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "arcsinh", "arctan",
    "tanh", "negative", "positive", "rint", "floor", "ceil", "trunc", "sign", "fix",
}

#: steps known to mix columns, with the phrase that says so
_MIXERS = {
    "PCA": "mixes columns", "IncrementalPCA": "mixes columns", "KernelPCA": "mixes columns",
    "TruncatedSVD": "mixes columns", "FastICA": "mixes columns", "NMF": "mixes columns",
    "FactorAnalysis": "mixes columns", "PolynomialFeatures": "multiplies columns together",
    "SplineTransformer": "turns each column into several non-monotone basis functions",
    "Normalizer": "rescales each row by its norm, which mixes columns",
    "Nystroem": "mixes columns", "RBFSampler": "mixes columns",
    "IterativeImputer": "fills a column from the other columns",
    "KNNImputer": "fills a column from the other columns",
}


def _name(obj) -> str:
    return type(obj).__name__


def _is_nan(v) -> bool:
    try:
        return bool(v != v)
    except (TypeError, ValueError):
        return False


def _is_missing_marker(v) -> bool:
    import pandas as pd

    return v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and np.isnan(v))


def _check_nan_missing(step):
    mv = getattr(step, "missing_values", np.nan)
    if not (isinstance(mv, (float, np.floating)) and np.isnan(mv)):
        raise _Refuse(f"{_name(step)}(missing_values={mv!r}) replaces a value that is not NaN, "
                      "which is not a monotone map of the column")


def _mono(cols):
    out = []
    for c in cols:
        out.append(_Col(c.origin, NUM if c.state == RAW else c.state, c.categories))
    return out


def _propagate(step, cols: list[_Col]) -> list[_Col]:
    """The derived columns a fitted column-wise step makes from its input columns."""
    from sklearn.base import TransformerMixin
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_selection._base import SelectorMixin
    from sklearn.pipeline import FeatureUnion, Pipeline
    from sklearn.preprocessing import (
        Binarizer, FunctionTransformer, KBinsDiscretizer, MaxAbsScaler, MinMaxScaler, OneHotEncoder,
        OrdinalEncoder, PowerTransformer, QuantileTransformer, RobustScaler, StandardScaler, TargetEncoder,
    )
    from sklearn.impute import MissingIndicator, SimpleImputer

    if step is None or (isinstance(step, str) and step == "passthrough"):
        return list(cols)
    if isinstance(step, str) and step == "drop":
        return []
    name = _name(step)
    if name in _MIXERS:
        raise _Refuse(f"{name} {_MIXERS[name]}")
    if isinstance(step, Pipeline):
        for _, sub in step.steps:
            cols = _propagate(sub, cols)
        return cols
    if isinstance(step, ColumnTransformer):
        return _column_transformer(step, cols)
    if isinstance(step, FeatureUnion):
        raise _Refuse("FeatureUnion is not folded (its parts are not traced column by column)")
    if isinstance(step, SelectorMixin):
        return [cols[i] for i in np.flatnonzero(step.get_support())]
    if isinstance(step, SimpleImputer):
        _check_nan_missing(step)
        stats = np.asarray(step.statistics_, dtype=object)
        keep = np.ones(len(cols), bool) if step.keep_empty_features else ~np.array(
            [_is_nan(s) for s in stats], bool)
        out = [c for c, k in zip(cols, keep) if k]
        if step.add_indicator and step.indicator_ is not None:
            out += [_flag(cols[i]) for i in step.indicator_.features_]
        return out
    if isinstance(step, MissingIndicator):
        _check_nan_missing(step)
        return [_flag(cols[i]) for i in step.features_]
    if isinstance(step, (StandardScaler, MinMaxScaler, RobustScaler, MaxAbsScaler, QuantileTransformer,
                         Binarizer)):
        return _mono(cols)
    if isinstance(step, PowerTransformer):
        if step.method != "yeo-johnson":
            raise _Refuse("PowerTransformer(method='box-cox') is undefined for values <= 0")
        return _mono(cols)
    if isinstance(step, KBinsDiscretizer):
        if step.encode != "ordinal":
            raise _Refuse(f"KBinsDiscretizer(encode={step.encode!r}) makes one column per bin, and a "
                          "split on a bin is not a threshold on the original column")
        return _mono(cols)
    if isinstance(step, FunctionTransformer):
        func = step.func
        if func is None:
            return list(cols)
        if not (isinstance(func, np.ufunc) and func.__name__ in _MONOTONE_UFUNCS) or step.kw_args:
            fname = getattr(func, "__name__", repr(func))
            raise _Refuse(f"FunctionTransformer({fname}) is not a known monotone column-wise function "
                          f"(known: numpy's {', '.join(sorted(_MONOTONE_UFUNCS))})")
        return _mono(cols)
    if isinstance(step, (OneHotEncoder, OrdinalEncoder, TargetEncoder)):
        return _encoder(step, cols)
    if isinstance(step, TransformerMixin) or hasattr(step, "transform"):
        raise _Refuse(f"{name} is not a step known to work column by column")
    raise _Refuse(f"{name} is not a transformer")


def _flag(c: _Col) -> _Col:
    return _Col(c.origin, FLAG if c.state == RAW else c.state, c.categories)


def _encoder(enc, cols):
    from sklearn.preprocessing import OneHotEncoder, TargetEncoder

    name = _name(enc)
    if isinstance(enc, OneHotEncoder):
        counts = list(enc._n_features_outs)
    elif isinstance(enc, TargetEncoder):
        k = len(enc.classes_) if enc.target_type_ == "multiclass" else 1
        counts = [k] * len(cols)
    else:
        counts = [1] * len(cols)
    out = []
    for c, cats, n in zip(cols, enc.categories_, counts):
        if c.state == NUM:
            raise _Refuse(f"a numeric transform comes before {name}, so the encoder's categories are not "
                          "values of the original column")
        if c.state == RAW:
            c = _Col(c.origin, CAT, tuple(cats.tolist()))
        out += [c] * int(n)
    return out


def _column_transformer(ct, cols):
    total = max((s.stop for s in ct.output_indices_.values()), default=0)
    out: list = [None] * total
    for name, trans, _ in ct.transformers_:
        idx = ct._transformer_to_input_indices.get(name, [])
        sl = ct.output_indices_[name]
        made = _propagate(trans, [cols[i] for i in idx]) if len(idx) else []
        if len(made) != sl.stop - sl.start:
            raise _Refuse(f"the ColumnTransformer part {name!r} makes {sl.stop - sl.start} columns where "
                          f"{len(made)} were traced")
        out[sl] = made
    if any(c is None for c in out):  # pragma: no cover - output_indices_ always covers the output
        raise _Refuse("the ColumnTransformer's output columns could not all be traced")
    return out


# ---------------------------------------------------------------- the plan
@dataclass
class _Plan:
    pre: object                 # the preprocessing (pipeline[:-1])
    final: object               # the final tree model
    final_ens: TreeEnsemble
    derived: list               # _Col per derived column
    kinds: list                 # per original column: "cat", "num" or "dropped"
    categories: list            # per original column: tuple of categories (markers removed) or None
    missing_marker: list        # per original column: the value that stands for an empty cell
    names: list | None          # the pipeline's feature_names_in_, or None
    n_features: int
    notes: list = field(default_factory=list)  # where the fold is exact only on a domain


def _final_step(model):
    from sklearn.compose import TransformedTargetRegressor

    from .native import NativeTreeModel
    from .sklearn import flatten_sklearn, is_sklearn_tree_model

    final = model.steps[-1][1]
    if isinstance(final, TransformedTargetRegressor):
        raise _Refuse("its final step is a TransformedTargetRegressor, whose prediction is not the trees' sum")
    if isinstance(final, NativeTreeModel):
        return final, final.ensemble
    if not is_sklearn_tree_model(final):
        raise _Refuse(f"its final step ({_name(final)}) is not a tree model")
    try:
        return final, flatten_sklearn(final)
    except InvalidModelError as exc:
        raise _Refuse(str(exc)) from None


def _plan(model) -> _Plan:
    from sklearn.pipeline import Pipeline

    if not isinstance(model, Pipeline):
        raise _Refuse(f"{_name(model)} is not a Pipeline")
    if len(model.steps) < 2:
        raise _Refuse("the Pipeline has no preprocessing step")
    final, fens = _final_step(model)
    n_in = getattr(model, "n_features_in_", None)
    if n_in is None:
        raise _Refuse("the Pipeline does not record how many input columns it was fitted on")
    n_in = int(n_in)
    derived = [_Col(j, RAW) for j in range(n_in)]
    for _, step in model.steps[:-1]:
        derived = _propagate(step, derived)
    if len(derived) != fens.n_features:
        raise _Refuse(f"the preprocessing was traced to {len(derived)} columns but the final model reads "
                      f"{fens.n_features}")
    kinds, categories, markers = [], [], []
    for j in range(n_in):
        mine = [c for c in derived if c.origin == j]
        states = {c.state for c in mine}
        if not mine:
            kinds.append("dropped")
            categories.append(())
            markers.append(np.nan)
            continue
        if CAT in states:
            if states - {CAT, FLAG}:
                raise _Refuse(f"input column {j} feeds both an encoder and a numeric transform")
            cat_lists = {c.categories for c in mine if c.state == CAT}
            if len(cat_lists) > 1:
                raise _Refuse(f"input column {j} feeds two encoders with different categories")
            cats = next(iter(cat_lists))
            kept = [c for c in cats if not _is_missing_marker(c)]
            marks = [c for c in cats if _is_missing_marker(c)]
            if len(marks) > 1:
                raise _Refuse(f"the encoder of input column {j} knows both None and NaN as categories")
            kinds.append("cat")
            categories.append(tuple(c.item() if hasattr(c, "item") else c for c in kept))
            markers.append(marks[0] if marks and marks[0] is None else np.nan)
        else:
            kinds.append("num")
            categories.append(None)
            markers.append(np.nan)
    for d, c in enumerate(derived):
        if fens.categories[d] is not None and c.state != CAT:
            raise _Refuse(f"the final model treats derived column {d} as categorical, but it is a number "
                          "made from the original column")
    rule_nodes = np.flatnonzero(fens.cat_start >= 0)
    for i in rule_nodes:
        if derived[int(fens.feature[i])].state != CAT:
            raise _Refuse("the final model has a rule split on a numeric derived column")
    names = getattr(model, "feature_names_in_", None)
    return _Plan(model[:-1], final, fens, derived, kinds, categories, markers,
                 None if names is None else list(names), n_in)


# ---------------------------------------------------------------- evaluation
def _base_row(plan: _Plan) -> list:
    row = []
    for kind, cats in zip(plan.kinds, plan.categories):
        if kind == "cat":
            row.append(cats[0] if cats else plan.missing_marker[len(row)])
        elif kind == "num":
            row.append(1.0)
        else:
            row.append(np.nan)
    return row


def _numeric_column(plan: _Plan, j: int) -> bool:
    """Whether column j is given to the preprocessing as float64 (else as objects)."""
    if plan.kinds[j] != "cat":
        return True
    return all(isinstance(c, (int, float, np.number)) and not isinstance(c, (bool, np.bool_))
               for c in plan.categories[j])


def _frame(plan: _Plan, columns: list):
    """Rows for the preprocessing: ``columns[j]`` is a list of values of column j."""
    numeric = [_numeric_column(plan, j) for j in range(len(columns))]
    if plan.names is None:
        if all(numeric):
            return np.column_stack([np.asarray(c, np.float64) for c in columns])
        arr = np.empty((len(columns[0]), len(columns)), dtype=object)
        for j, c in enumerate(columns):
            arr[:, j] = c
        return arr
    import pandas as pd

    return pd.DataFrame({name: pd.Series(col, dtype=np.float64 if num else object, copy=False)
                         for name, col, num in zip(plan.names, columns, numeric)})


def _transform(plan: _Plan, columns: list) -> np.ndarray:
    X = _frame(plan, columns)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        out = plan.pre.transform(X)
    if hasattr(out, "toarray"):
        out = out.toarray()
    return np.asarray(out, dtype=np.float64)


def _probe(plan: _Plan, changes=None, *, js=None, values=None) -> np.ndarray:
    """Derived rows of the base row with column j set to v, one row per change
    ``(j, v)`` (or per entry of the arrays ``js``, ``values``)."""
    if changes is not None:
        js = np.array([j for j, _ in changes], np.int64)
        values = [v for _, v in changes]
    n = len(js)
    columns = []
    for j, b in enumerate(_base_row(plan)):
        numeric = _numeric_column(plan, j)
        col = np.full(n, b, dtype=np.float64 if numeric else object)
        sel = np.flatnonzero(js == j)
        if len(sel):
            if isinstance(values, np.ndarray):
                col[sel] = values[sel]
            else:
                for r in sel:
                    col[r] = values[r]
        columns.append(col)
    return _transform(plan, columns)


def _probe_each(plan: _Plan, changes):
    """Like :func:`_probe`, but a row whose transform raises comes back as None
    (the pipeline cannot predict it, so any routing is right)."""
    try:
        rows = _probe(plan, changes)
        return [rows[r] for r in range(len(changes))]
    except Exception:  # noqa: BLE001 - any failure means: this value does not pass the pipeline
        pass
    out = []
    for ch in changes:
        try:
            out.append(_probe(plan, [ch])[0])
        except Exception:  # noqa: BLE001
            out.append(None)
    return out


def _final_left(plan: _Plan, nodes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Whether derived values go to the left child of final-model nodes, as the final model routes them."""
    fens = plan.final_ens
    nodes = np.asarray(nodes, np.int64)
    x = np.asarray(values, np.float64).copy()
    feats = fens.feature[nodes]
    for d in np.unique(feats):
        cats = fens.categories[int(d)]
        if cats is None:
            continue
        lookup = {float(c): float(i) for i, c in enumerate(cats)}
        sel = feats == d
        x[sel] = [np.nan if v != v else lookup.get(float(v), -1.0) for v in x[sel]]
    if fens.float32_inputs:
        with np.errstate(over="ignore"):
            x = x.astype(np.float32).astype(np.float64)
    return fens.goes_left(x, nodes)


# ---------------------------------------------------------------- folding
@dataclass
class _Rewrite:
    threshold: float
    swap: bool
    missing_left: bool
    rule: np.ndarray | None = None


#: Fold an encoded column's split into a plain threshold on the category code where
#: its left set is a run of codes (OrdinalEncoder splits). Off: the tree PD walk
#: (walks.grid_slices) compares a plain column's grid as if sorted, and a
#: categorical grid is in data order, so only rule nodes are walked value by value.
_PLAIN_CODE_SPLITS = True


def _fold_categorical(plan: _Plan, j: int, nodes: np.ndarray, out: dict):
    cats = plan.categories[j]
    K = len(cats)
    fens = plan.final_ens
    derived = np.array([int(fens.feature[i]) for i in nodes])
    known = _probe(plan, [(j, c) for c in cats]) if K else np.zeros((0, fens.n_features))
    unknown = _unknown_value(cats)
    extra = _probe_each(plan, [(j, unknown), (j, plan.missing_marker[j])])
    n = len(nodes)
    # (node, probe) matrix of derived values, routed by the final model in one call
    vals = known[:, derived].T if K else np.zeros((n, 0))
    left_known = _final_left(plan, np.repeat(nodes, K), vals.ravel()).reshape(n, K)
    routes = []
    for row in extra:
        if row is None:
            routes.append(np.zeros(n, bool))
        else:
            routes.append(_final_left(plan, nodes, row[derived]))
    # over the codes in their order (-1: unknown, then 0 .. K-1), a left set that is a
    # prefix or a suffix is a plain threshold on the code, which Tree SHAP walks about
    # twice as fast as a rule (see _PLAIN_CODE_SPLITS)
    order = np.column_stack([routes[0], left_known])
    n_left = order.sum(1)
    prefix = order[np.arange(n)[:, None], np.arange(K + 1)[None, :]] == (np.arange(K + 1)[None, :] < n_left[:, None])
    prefix = prefix.all(1)
    suffix = (order == (np.arange(K + 1)[None, :] >= (K + 1 - n_left)[:, None])).all(1)
    for r, i in enumerate(nodes):
        miss = bool(routes[1][r])
        if _PLAIN_CODE_SPLITS and prefix[r]:  # codes -1 .. n_left - 2 go left
            out[int(i)] = _Rewrite(float(n_left[r] - 2) if n_left[r] <= K else np.inf, False, miss)
        elif _PLAIN_CODE_SPLITS and suffix[r]:  # codes K - n_left .. K-1 go left: swap, the old right is a prefix
            out[int(i)] = _Rewrite(float(K - n_left[r] - 1), True, not miss)
        else:
            flags = RULE_CATEGORICAL | (RULE_OTHER_LEFT if routes[0][r] else 0)
            out[int(i)] = _Rewrite(0.0, False, miss, _rule(flags, np.flatnonzero(left_known[r]), K))


def _rule(flags: int, codes: np.ndarray, n_categories: int) -> np.ndarray:
    """A rule record whose set spans every category code (0 .. n_categories - 1):
    a code past the set's last word would count as an unknown category."""
    rec = rule_record(flags, codes)
    k = max(1, (n_categories + 63) // 64)
    if rec[0] >= k:
        return rec
    return np.concatenate([[k, flags], rec[2:], np.zeros(k - rec[0], np.int64)]).astype(np.int64)


def _unknown_value(cats):
    if cats and all(isinstance(c, (int, float, np.number)) and not isinstance(c, bool) for c in cats):
        return float(max(cats)) + 1.5
    taken = set(map(str, cats))
    v = "\u2400glassbox-unknown"
    while v in taken:
        v += "\u2400"
    return v


def _fold_numeric(plan: _Plan, nodes: np.ndarray, out: dict):
    """Exact thresholds on original numeric columns by bisection over float64 keys."""
    u_nodes, u_d, u_j, inverse = _distinct_splits(plan, nodes)
    lo, hi = _domains(plan, u_d)
    empty = lo > hi
    nan_route, miss_route = _nan_routes(plan, u_nodes, u_d, u_j)
    at_lo, change, edge = _edges(plan, u_nodes, u_d, u_j, lo, hi, empty)
    order = np.argsort(inverse, kind="stable")  # each split's nodes, found once (not a scan per split):
    bounds = np.searchsorted(inverse[order], np.arange(len(u_nodes) + 1))  # order[bounds[i]:bounds[i + 1]]
    for i in range(len(u_nodes)):
        inside, outside = _left_intervals(lo[i], hi[i], empty[i], change[i], at_lo[i], edge[i], nan_route[i])
        rw = _as_threshold(inside + outside, bool(miss_route[i]))
        if rw is None:
            rw = _stretched(plan, inside, lo[i], hi[i], bool(miss_route[i]), int(u_j[i]))
        for r in order[bounds[i]:bounds[i + 1]]:
            out[int(nodes[r])] = rw


def _distinct_splits(plan: _Plan, nodes: np.ndarray):
    """Return (u_nodes, u_d, u_j, inverse): each distinct split's node, derived and original column; each node's."""
    fens = plan.final_ens
    derived = np.array([int(fens.feature[i]) for i in nodes], np.int64)
    origin = np.array([plan.derived[d].origin for d in derived], np.int64)
    # duplicates (same derived column, threshold and missing route) fold once
    key = np.column_stack([derived, fens.threshold[nodes].view(np.int64),
                           fens.missing_go_left[nodes].astype(np.int64)])
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    return nodes[first], derived[first], origin[first], inverse


def _domains(plan: _Plan, u_d: np.ndarray):
    """Return (lo, hi): per split, the keys where its derived value is a number (lo > hi: none)."""
    # where the derived value is NaN for finite x (a ufunc outside its domain), per
    # derived column: a prefix or a suffix of the line
    cols = np.unique(u_d)
    col_j = np.array([plan.derived[d].origin for d in cols])
    ends = np.array([_KMIN, _KMAX])
    idx = np.arange(len(cols))
    vals = np.column_stack([_probe(plan, [(int(col_j[i]), float(_from_key(np.array([k]))[0])) for i in idx])
                            [idx, cols] for k in ends])
    isn = np.isnan(vals)
    dom_lo = np.full(len(cols), _KMIN, np.int64)
    dom_hi = np.full(len(cols), _KMAX, np.int64)
    dom_lo[isn[:, 0] & isn[:, 1]], dom_hi[isn[:, 0] & isn[:, 1]] = 1, 0  # NaN everywhere: empty domain
    one_end = np.flatnonzero(isn[:, 0] != isn[:, 1])
    if len(one_end):
        def isnan_at(ii, keys):
            c = one_end[ii]
            rows = _probe(plan, js=col_j[c], values=_from_key(keys))
            return np.isnan(rows[np.arange(len(c)), cols[c]])

        n1 = len(one_end)
        below = isn[one_end, 0]
        edge = _bisect(isnan_at, np.full(n1, _KMIN, np.int64), np.full(n1, _KMAX, np.int64), below)
        dom_lo[one_end[below]] = edge[below] + 1   # NaN up to edge
        dom_hi[one_end[~below]] = edge[~below]     # a number up to edge
    pos = {int(d): c for c, d in enumerate(cols)}
    c_of = np.array([pos[int(d)] for d in u_d])
    return dom_lo[c_of], dom_hi[c_of]


def _nan_routes(plan: _Plan, u_nodes: np.ndarray, u_d: np.ndarray, u_j: np.ndarray):
    """Return (nan_route, miss_route): per split, whether a NaN derived value and a missing input go left."""
    m = len(u_nodes)
    # route of NaN derived values (the region outside the domain)
    nan_route = _final_left(plan, u_nodes, np.full(m, np.nan))
    # route of a missing input
    miss_rows = _probe_each(plan, [(int(j), np.nan) for j in range(plan.n_features)])
    miss_route = np.zeros(m, bool)
    passes = np.array([miss_rows[int(j)] is not None for j in u_j], bool)
    if passes.any():
        miss_vals = np.array([miss_rows[int(j)][d] for j, d in zip(u_j[passes], u_d[passes])])
        miss_route[passes] = _final_left(plan, u_nodes[passes], miss_vals)
    return nan_route, miss_route


def _edges(plan: _Plan, u_nodes: np.ndarray, u_d: np.ndarray, u_j: np.ndarray, lo, hi, empty):
    """Return (at_lo, change, edge): per split, the route at lo, whether hi's differs, the last key routed as lo."""
    def derived_at(idx, keys):
        xs = _from_key(keys)
        rows = _probe(plan, js=u_j[idx], values=xs)
        return rows[np.arange(len(idx)), u_d[idx]]

    def left_at(idx, keys):
        return _final_left(plan, u_nodes[idx], derived_at(idx, keys))

    m = len(u_nodes)
    ok = ~empty
    at_lo = np.zeros(m, bool)
    at_hi = np.zeros(m, bool)
    at_lo[ok] = left_at(np.flatnonzero(ok), lo[ok])
    at_hi[ok] = left_at(np.flatnonzero(ok), hi[ok])
    change = ok & (at_lo != at_hi)
    edge = lo.copy()
    if change.any():
        ci = np.flatnonzero(change)
        # a guess with no run of the preprocessing (a column passed through unchanged: the final model's
        # own edge, in [lo, hi - 1]), checked by two probes; only the splits it misses are searched
        guess = _bisect(lambda a, k: _final_left(plan, u_nodes[ci[a]], _from_key(k)), lo[ci], hi[ci], at_lo[ci])
        hit = (left_at(ci, guess) == at_lo[ci]) & (left_at(ci, guess + 1) != at_lo[ci])
        edge[ci[hit]] = guess[hit]
        if len(miss := ci[~hit]):
            edge[miss] = _bisect(lambda a, k: left_at(miss[a], k), lo[miss], hi[miss], at_lo[miss])
    return at_lo, change, edge


def _left_intervals(lo, hi, empty, change, at_lo, edge, nan_route):
    """Return (inside, outside): one split's left set over finite keys, as intervals."""
    # the domain's part, then the part where the derived value is NaN (outside a ufunc's domain)
    inside = []
    if not empty:
        if not change:
            if at_lo:
                inside.append((lo, hi))
        elif at_lo:
            inside.append((lo, edge))
        else:
            inside.append((edge + 1, hi))
    outside = []
    if nan_route:
        if empty:
            outside.append((_KMIN, _KMAX))
        else:
            if lo > _KMIN:
                outside.append((_KMIN, lo - 1))
            if hi < _KMAX:
                outside.append((hi + 1, _KMAX))
    return inside, outside


def _stretched(plan: _Plan, inside: list, lo, hi, miss_left: bool, j: int) -> "_Rewrite | None":
    """The rewrite of a split whose left set is no threshold: the domain's ends stretched, said in a note."""
    # values outside the ufunc's domain (NaN there, with a RuntimeWarning) go the
    # other way from both ends of the domain: exact on the domain, and below
    # (above) it the values route as the domain's end does
    stretched = [(_KMIN if a == lo else a, _KMAX if b == hi else b) for a, b in inside]
    rw = _as_threshold(stretched, miss_left)
    name = plan.names[j] if plan.names else f"column {j}"
    bound = float(_from_key(np.array([lo if lo > _KMIN else hi]))[0])
    side = "below" if lo > _KMIN else "above"
    note = (f"{name!r}: the preprocessing gives NaN for values {side} {bound!r} (outside a numpy "
            f"function's domain); there the folded trees route such values as {bound!r}, "
            "where the pipeline itself sends NaN to the trees")
    if note not in plan.notes:
        plan.notes.append(note)
    return rw


def _as_threshold(parts, miss_left: bool) -> "_Rewrite | None":
    """A node rewrite for a left set given as key intervals, or None if it is not a
    down-set or an up-set of the finite numbers."""
    parts = sorted(parts)
    merged = []
    for a, b in parts:
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    if not merged:  # nothing finite goes left: swap, everything finite goes "left" = the old right
        return _Rewrite(np.inf, True, not miss_left)
    if len(merged) > 1:
        return None
    a, b = merged[0]
    if (a, b) == (_KMIN, _KMAX):
        return _Rewrite(np.inf, False, miss_left)
    if a == _KMIN:
        return _Rewrite(float(_from_key(np.array([b]))[0]), False, miss_left)
    if b == _KMAX:  # an up-set: swap the children, the old right is the down-set
        return _Rewrite(float(_from_key(np.array([a - 1]))[0]), True, not miss_left)
    return None


def _fold(plan: _Plan) -> TreeEnsemble:
    fens = plan.final_ens
    internal = np.flatnonzero(fens.left >= 0)
    origin = np.array([plan.derived[int(d)].origin for d in fens.feature[internal]], np.int64)
    rewrites: dict = {}
    for j in range(plan.n_features):
        if plan.kinds[j] == "cat":
            sel = internal[origin == j]
            if len(sel):
                _fold_categorical(plan, j, sel, rewrites)
    num = internal[np.array([plan.kinds[j] == "num" for j in origin], bool)] if len(internal) else internal
    if len(num):
        _fold_numeric(plan, num, rewrites)

    feature = fens.feature.copy()
    threshold = fens.threshold.copy()
    left, right = fens.left.copy(), fens.right.copy()
    missing = fens.missing_go_left.copy()
    feature[internal] = origin
    cat_start = np.full(fens.n_nodes, -1, np.int64)
    records, used = [], 0
    for i in internal:
        rw = rewrites[int(i)]
        threshold[i] = rw.threshold
        missing[i] = 1 if rw.missing_left else 0
        if rw.swap:
            left[i], right[i] = fens.right[i], fens.left[i]
        if rw.rule is not None:
            cat_start[i] = used
            records.append(rw.rule)
            used += len(rw.rule)
    cat_bits = np.concatenate(records).astype(np.int64) if records else np.zeros(0, np.int64)
    categories = tuple(c if k != "num" else None for c, k in zip(plan.categories, plan.kinds))
    return TreeEnsemble(
        feature=feature.astype(np.int32), threshold=threshold.astype(np.float64),
        left=left.astype(np.int32), right=right.astype(np.int32), missing_go_left=missing.astype(np.uint8),
        value=fens.value, cover=fens.cover, node_offsets=fens.node_offsets, tree_output=fens.tree_output,
        base=fens.base, scale=fens.scale, transform=fens.transform, float32_inputs=False,
        n_features=plan.n_features, max_depth=fens.max_depth, model_name=fens.model_name,
        cat_start=cat_start, cat_bits=cat_bits, categories=categories,
    )


# ---------------------------------------------------------------- cache + API
_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _result(model):
    """(ensemble or None, refusal reason or None, plan or None), cached per fitted pipeline."""
    from .sklearn import fitted_trees

    trees = fitted_trees(model) if hasattr(model, "steps") else None
    try:
        hit = _CACHE.get(model)
    except TypeError:
        hit = None
    if hit is not None and trees is not None and hit[0] is trees:
        return hit[1]
    try:
        plan = _plan(model)
        res = (_fold(plan), None, plan)
    except _Refuse as exc:
        res = (None, f"{exc}, so the pipeline is explained with the model-agnostic methods", None)
    except Exception as exc:  # noqa: BLE001 - the preprocessing failed on a probe value: do not fold
        res = (None, f"running the preprocessing on probe values failed ({type(exc).__name__}: {exc}), "
                     "so the pipeline is explained with the model-agnostic methods", None)
    try:
        _CACHE[model] = (trees, res)
    except TypeError:
        pass
    return res


def fold_refusal(model) -> str | None:
    """Why a Pipeline's preprocessing does not fold into its final tree model (None if it folds).

    Examples
    --------
    >>> fold_refusal(make_pipeline(PCA(2), RandomForestRegressor()).fit(X, y))
    'PCA mixes columns, so the pipeline is explained with the model-agnostic methods'
    """
    from sklearn.pipeline import Pipeline

    if not isinstance(model, Pipeline):
        return f"{_name(model)} is not a Pipeline"
    return _result(model)[1]


def fold_notes(model) -> tuple[str, ...]:
    """Where a folded pipeline is exact only on part of a column's values.

    A numpy function outside its domain (``np.log1p`` below -1, ``np.sqrt`` below
    0) gives NaN, and the final model sends NaN its own way; where that way differs
    from both ends of the domain, one threshold cannot say it, and the folded trees
    route those values as the domain's end does. Each note names the column.
    Empty for an exact fold (and for a pipeline that does not fold).
    """
    plan = _result(model)[2] if is_foldable_pipeline(model) else None
    return tuple(plan.notes) if plan is not None else ()


def is_foldable_pipeline(model) -> bool:
    """True for a fitted Pipeline of column-wise steps ending in a tree model that
    :func:`flatten_pipeline` folds into one :class:`TreeEnsemble` over the pipeline's input columns."""
    from sklearn.pipeline import Pipeline

    if not isinstance(model, Pipeline):
        return False
    return _result(model)[0] is not None


def flatten_pipeline(model) -> TreeEnsemble:
    """The pipeline's final tree model with its preprocessing folded in.

    Returns
    -------
    TreeEnsemble
        Over the pipeline's input columns (``n_features_in_``, in order);
        ``categories[j]`` holds the encoder's categories of an encoded column, an
        empty tuple for a column the pipeline drops. Thresholds compare float64
        values of the original columns (``float32_inputs`` is False).

    Raises
    ------
    InvalidModelError
        If the pipeline does not fold (:func:`fold_refusal` says why).
    """
    ens, reason, _ = _result(model)
    if ens is None:
        raise InvalidModelError(f"This pipeline's preprocessing does not fold into its trees: {reason}.")
    return ens


def original_groups(pipeline) -> list[list[int]]:
    """For each input column of the pipeline, the final model's input columns made from it.

    Raises
    ------
    InvalidModelError
        If the pipeline does not fold (then derived columns may mix input columns).
    """
    ens, reason, plan = _result(pipeline)
    if plan is None:
        raise InvalidModelError(f"This pipeline's columns cannot be traced: {reason}.")
    groups: list[list[int]] = [[] for _ in range(plan.n_features)]
    for d, c in enumerate(plan.derived):
        groups[c.origin].append(d)
    return groups


def mdi_by_original_column(pipeline) -> tuple[list[str], np.ndarray]:
    """The final model's impurity importance (MDI) summed over the derived columns
    of each input column.

    Returns
    -------
    names : list of str
        The pipeline's input column names (``x0``, ``x1``... without names).
    values : ndarray of shape (n_features_in_,)
    """
    groups = original_groups(pipeline)
    final = pipeline.steps[-1][1]
    imp = getattr(final, "feature_importances_", None)
    if imp is None:
        raise InvalidModelError(f"{_name(final)} has no impurity importance (feature_importances_).")
    imp = np.asarray(imp, np.float64)
    names = getattr(pipeline, "feature_names_in_", None)
    names = [str(n) for n in names] if names is not None else [f"x{j}" for j in range(len(groups))]
    return names, np.array([imp[g].sum() if g else 0.0 for g in groups])
