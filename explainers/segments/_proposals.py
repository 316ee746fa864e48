"""The segments where a model fails most: :func:`propose_segments` fits a shallow tree to the
rows' errors and states its leaves as segments on the original columns and values."""
from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

import numpy as np
import pandas as pd

from ..errors import ExplainerError, InvalidDataError, param_error
from ._common import MAX_VALUES, _adapter, _check_value, _is_numeric
from ._conditions import Categories, Empty, Range, Segment
from ._errors import _resolve_error, _row_errors

#: the least share of the error's variance a split of the error tree must explain
MIN_SPLIT_GAIN = 1e-3


@dataclass(frozen=True)
class ProposedSegment:
    """One leaf of the error tree, as a segment.

    Attributes
    ----------
    segment : Segment
        Its rule on the original columns and values; ``segment.mask(model, X)`` selects
        exactly the leaf's rows of the data it was proposed on.
    n_rows : int
        Rows of the segment with a target (the leaf's size).
    mean_error : float
        Their mean error.
    rest_n_rows : int
        Rows with a target outside the segment.
    rest_mean_error : float
        Their mean error (NaN when there are none).
    error : str
        The error measured: "absolute", "proba" or "misclassified".
    leaf : int
        The leaf's node id in the fitted tree.
    """

    segment: Segment
    n_rows: int
    mean_error: float
    rest_n_rows: int
    rest_mean_error: float
    error: str
    leaf: int

    @property
    def rule(self) -> str:
        return self.segment.describe()


def _categorical_codes(col: pd.Series, err: np.ndarray, smooth: float, max_levels: int):
    """Codes of a non-numeric column for the tree: its values ordered by their (smoothed) mean
    error, so one threshold separates the high-error values from the rest (the best subset
    split for a squared-error tree). Returns ``(codes with NaN where empty, values in code
    order)``, or None when the column cannot be stated as a set of values."""
    values = col.to_numpy(dtype=object)
    empty = np.asarray(pd.isna(col), dtype=bool)
    idx, uniques = pd.factorize(values[~empty], use_na_sentinel=True)
    if len(uniques) == 0 or len(uniques) > max_levels:
        return None
    try:
        levels = [_check_value(v, "column") for v in uniques]
    except ExplainerError:  # dates, objects: not a set of plain values
        return None
    if len(set(levels)) != len(levels):  # values equal as Python scalars (1 and 1.0, 1 and True)
        return None
    sums = np.bincount(idx, weights=err[~empty], minlength=len(levels))
    counts = np.bincount(idx, minlength=len(levels))
    # shrunk towards the overall mean, so a rare value's chance high error does not lead
    score = (sums + smooth * float(np.mean(err))) / (counts + smooth)
    order = sorted(range(len(levels)), key=lambda i: (score[i], type(levels[i]).__name__, str(levels[i])))
    rank = np.empty(len(levels))
    rank[order] = np.arange(len(levels), dtype=float)
    out = np.full(len(values), np.nan)
    out[~empty] = rank[idx]
    return out, [levels[i] for i in order]


def _nice_cut(a: float, b: float) -> float:
    """The shortest decimal t with a < t <= b: splits the data's values as the tree's
    threshold does (a, the largest value on the left; b, the smallest on the right)."""
    exact = Decimal(repr(b))  # the shortest decimal that is b
    span = max(abs(a), abs(b), 1e-300)
    top = int(math.floor(math.log10(span))) + 1
    for e in range(top, max(top - 18, -20), -1):
        step = Decimal(1).scaleb(e)
        t = float((exact / step).to_integral_value(rounding=ROUND_FLOOR) * step)
        if a < t <= b:
            return t
    return float(b)


def _error_tree(sub: pd.DataFrame, err: np.ndarray, *, max_depth: int, min_rows: int, max_levels: int,
                random_state: int):
    """Fit the error tree: ``(tree, Z, names, cols, levels)`` or None when nothing splits.

    Z holds the tree's inputs (float32, as the tree reads them): numbers as they are,
    other columns as codes ordered by error, whose values ``levels[j]`` lists (None
    for a numeric column); ``cols`` the same columns in float64.
    """
    from sklearn.tree import DecisionTreeRegressor

    names, cols, levels = [], [], []
    for c in sub.columns:
        col = sub[c]
        if _is_numeric(col) and not pd.api.types.is_bool_dtype(col.dtype):
            x = col.to_numpy(dtype=float, na_value=np.nan)
            if np.isinf(x).any():
                continue  # the tree takes no infinite values, and a rule could not state them
            names.append(str(c)), cols.append(x), levels.append(None)
        elif pd.api.types.is_datetime64_any_dtype(col.dtype):
            continue
        else:
            coded = _categorical_codes(col, err, float(min_rows), max_levels)
            if coded is not None:
                names.append(str(c)), cols.append(coded[0]), levels.append(coded[1])
    if not cols:
        return None
    Z = np.column_stack(cols).astype(np.float32)
    # a split must explain at least 0.1% of the error's variance: no rules carved from rounding noise
    tree = DecisionTreeRegressor(max_depth=int(max_depth), min_samples_leaf=int(min_rows),
                                 min_impurity_decrease=MIN_SPLIT_GAIN * float(np.var(err)),
                                 random_state=int(random_state)).fit(Z, err)
    if tree.tree_.node_count == 1:
        return None
    return tree, Z, names, cols, levels


def propose_segments(model, X, y, *, max_depth: int = 3, min_rows: int = 30, n: int = 5,
                     error: str = "auto", max_levels: int = 100, random_state: int = 0,
                     fit_rows: int | None = None, predictions=None) -> list[ProposedSegment]:
    """The segments where the model fails most: the leaves of a shallow tree fitted to the errors.

    A :class:`~sklearn.tree.DecisionTreeRegressor` (depth ``max_depth``, at least
    ``min_rows`` rows per leaf) is fitted on each row's error (:func:`row_errors`) over the
    model's columns. Text, category and boolean columns enter the tree as codes ordered by
    their mean error, so a split on them is a set of values; every rule is stated on the
    original columns and values ("town in {Busan, Daegu}", "age ≥ 51"), with the threshold
    written as the shortest number that splits the data as the tree does. Empty cells
    follow the tree's routing (a rule says "(or empty)" where they went its way).

    Parameters
    ----------
    model : fitted estimator, Pipeline or ModelAdapter
    X : DataFrame or array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        True values; rows where it is empty are left out.
    max_depth : int, default=3
        Depth of the tree (1 to 8): rules have at most this many conditions.
    min_rows : int, default=30
        Fewest rows (with a target) in a proposed segment.
    n : int, default=5
        Most segments returned.
    error : {"auto", "absolute", "proba", "misclassified"}, default="auto"
        How each row's error is measured; see :func:`row_errors`.
    max_levels : int, default=100
        Text or category columns with more distinct values than this (identifiers, free
        text) are left out of the tree.
    random_state : int, default=0
        The tree's seed: the same inputs give the same segments.
    fit_rows : int, default=None
        Fit the tree on a seeded sample of this many rows with a target, stratified by
        class (a classifier) or by error decile (a regressor), where there are more:
        the rules come from the sample, each segment's rows and mean error are counted
        on every row. None: every row.
    predictions : callable, default=None
        The model's predictions of every row, where the caller has them; see
        :func:`row_errors`.

    Returns
    -------
    list of ProposedSegment
        Sorted by mean error, highest first; named "Error segment 1", ...; empty when no
        split leaves ``min_rows`` rows on both sides.
    """
    func = "propose_segments"
    _check_options(y, max_depth=max_depth, min_rows=min_rows, n=n, max_levels=max_levels,
                   random_state=random_state, func=func)
    if fit_rows is not None and (isinstance(fit_rows, bool) or not isinstance(fit_rows, (int, np.integer))
                                 or fit_rows < 2 * min_rows):
        raise param_error("fit_rows", func, f"None or an int >= 2 x min_rows ({2 * min_rows})", fit_rows)
    adapter = _adapter(model)
    frame = adapter.to_frame(X)
    kind = _resolve_error(adapter, error, func)
    err_all = _row_errors(adapter, frame, y, kind, func, predictions)
    has_y = ~np.isnan(err_all)
    rows = np.flatnonzero(has_y)
    if len(rows) < 2 * min_rows:
        return []
    if fit_rows is not None and len(rows) > int(fit_rows):
        rows = rows[_fit_sample(adapter, y, err_all, rows, int(fit_rows), random_state)]
    err = err_all[rows]
    sub = frame.iloc[rows]

    fitted = _error_tree(sub, err, max_depth=max_depth, min_rows=min_rows, max_levels=max_levels,
                         random_state=random_state)
    if fitted is None:
        return []
    tree, Z, names, cols, levels = fitted
    leaves = _leaf_paths(tree.tree_, Z, cols, levels, len(rows))
    proposals = _leaf_segments(leaves, names, levels, frame, err_all, has_y, min_rows)
    return _ranked(proposals, n, kind)


def _fit_sample(adapter, y, err_all: np.ndarray, rows: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Positions into ``rows`` of the error tree's sample: stratified by class (a classifier),
    by error decile (a regressor)."""
    from ..sampling import stratified_rows

    if adapter.task == "regression":
        err = err_all[rows]
        strata = np.searchsorted(np.quantile(err, np.linspace(0.1, 0.9, 9)), err, side="right")
    else:
        strata = np.asarray(pd.Series(np.asarray(y, dtype=object)).iloc[rows].astype(str))
    return stratified_rows(strata, n, seed)


# ------------------------------------------------------------------------------ steps
def _check_options(y, *, max_depth, min_rows, n, max_levels, random_state, func: str) -> None:
    """Refuse a bad option, or no target y."""
    for name, value, low, high in (("max_depth", max_depth, 1, 8), ("min_rows", min_rows, 1, None),
                                   ("n", n, 1, None), ("max_levels", max_levels, 2, MAX_VALUES)):
        if (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low
                or (high is not None and value > high)):
            raise param_error(name, func, f"an int >= {low}" + (f" and <= {high}" if high else ""), value)
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)):
        raise param_error("random_state", func, "an int", random_state)
    if y is None:
        raise InvalidDataError(
            f"{func} needs the target y (the true values of the rows of X) to find where the model fails; "
            "pick the target column."
        )


def _leaf_paths(t, Z: np.ndarray, cols: list, levels: list, n_rows: int) -> list[tuple[int, list]]:
    """Each leaf of the fitted tree ``t`` with the sides its rows took from the root, in walk order."""
    go_left_if_empty = np.asarray(t.missing_go_to_left, dtype=bool)

    # walk the tree with the data's rows, collecting each leaf's rule on the original columns;
    # a side is (column, lo, hi, values, no_values, with_empty) for the rows that went that way
    leaves: list[tuple[int, list]] = []

    def walk(node: int, idx: np.ndarray, path: list) -> None:
        if t.children_left[node] == -1:
            leaves.append((node, path))
            return
        j = int(t.feature[node])
        z = Z[idx, j]
        empty = np.isnan(z)
        left = np.zeros(len(idx), dtype=bool)
        left[~empty] = z[~empty] <= t.threshold[node]
        left[empty] = go_left_if_empty[node]
        sides = []
        for side in (left, ~left):
            vals = side & ~empty
            sides.append({"j": j, "lo": None, "hi": None, "values": None, "none": not vals.any(),
                          "empty": bool((side & empty).any())})
        if levels[j] is None:
            x = cols[j][idx]
            if not (sides[0]["none"] or sides[1]["none"]):
                cut = _nice_cut(float(np.max(x[left & ~empty])), float(np.min(x[~left & ~empty])))
                sides[0]["hi"] = cut
                sides[1]["lo"] = cut
        else:
            for side, d in zip((left, ~left), sides):
                codes = np.unique(z[side & ~empty]).astype(int).tolist()
                d["values"] = {levels[j][k] for k in codes}
        for side, d, ch in zip((left, ~left), sides, (t.children_left[node], t.children_right[node])):
            walk(int(ch), idx[side], path + [d])

    walk(0, np.arange(n_rows), [])
    return leaves


def _leaf_segments(leaves: list, names: list[str], levels: list, frame: pd.DataFrame, err_all: np.ndarray,
                   has_y: np.ndarray, min_rows: int) -> list[tuple]:
    """``(mean error, leaf, segment, rows, rest rows, rest mean error)`` of each leaf with ``min_rows`` rows."""
    proposals = []
    for node, path in leaves:
        segment = Segment("Error segment", _merge_path(path, names, levels))
        inside = segment.mask(None, frame)
        in_y = inside & has_y
        k = int(in_y.sum())
        if k < min_rows:
            continue
        rest = has_y & ~inside
        proposals.append((float(err_all[in_y].mean()), node, segment, k, int(rest.sum()),
                          float(err_all[rest].mean()) if rest.any() else float("nan")))
    return proposals


def _ranked(proposals: list[tuple], n: int, kind: str) -> list[ProposedSegment]:
    """The ``n`` proposals of highest mean error (ties by leaf), named "Error segment 1", ..."""
    proposals.sort(key=lambda p: (-p[0], p[1]))
    out = []
    for rank, (mean_err, node, segment, k, k_rest, rest_err) in enumerate(proposals[:n], start=1):
        out.append(ProposedSegment(Segment(f"Error segment {rank}", segment.conditions), k, mean_err,
                                   k_rest, rest_err, kind, int(node)))
    return out


def _merge_path(path: list, names: list[str], levels: list) -> list:
    """The conditions of one root-to-leaf path, one per column, in order of first use: the
    intersection of the sides taken on that column."""
    merged: dict[int, dict] = {}
    for d in path:
        m = merged.setdefault(d["j"], {"lo": None, "hi": None, "values": None, "none": False, "empty": True})
        m["empty"] = m["empty"] and d["empty"]
        m["none"] = m["none"] or d["none"]
        if d["lo"] is not None:
            m["lo"] = d["lo"] if m["lo"] is None else max(m["lo"], d["lo"])
        if d["hi"] is not None:
            m["hi"] = d["hi"] if m["hi"] is None else min(m["hi"], d["hi"])
        if d["values"] is not None:
            m["values"] = set(d["values"]) if m["values"] is None else m["values"] & d["values"]
    out = []
    for j, m in merged.items():
        feature = names[j]
        if m["none"] or (m["values"] is not None and not m["values"]):
            out.append(Empty(feature, True))  # only empty cells went this way
        elif levels[j] is not None:
            out.append(Categories(feature, m["values"], include_empty=m["empty"]))
        elif m["lo"] is None and m["hi"] is None:
            if not m["empty"]:  # every value but no empty cell went this way
                out.append(Empty(feature, False))
        else:
            out.append(Range(feature, m["lo"], m["hi"], include_empty=m["empty"]))
    return out
