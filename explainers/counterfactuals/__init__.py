"""What would change the prediction: counterfactual rows, provably nearest for tree models.

>>> from explainers.counterfactuals import counterfactuals
>>> res = counterfactuals(model, X, rows=[3], fixed=["age"], n=3)      # doctest: +SKIP
>>> res.counterfactuals[0]; res.distances[0]; res.optimal[0]           # doctest: +SKIP

- Tree models (every family :func:`explainers.trees.flatten_model` reads, pipelines folded
  into their trees included): a compiled branch and bound over the trees' cells
  (:mod:`._bnb`), or on request the mixed-integer program over the leaves solved by HiGHS
  (:mod:`._trees`); ``optimal`` is True where the solver proves the answer nearest. A single
  tree is solved by enumerating its leaves' boxes.
- Other models: a seeded search (:mod:`._search`), ``optimal`` False.

Distance: the sum over features of ``|change| / MAD`` (a category change counts 1), the
number of changed features breaking ties; the answers for one row each change a
different set of features. Every answer is checked with the model's own ``predict``
before it is returned.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import InvalidModelError, InvalidParameterError, param_error
from ..model import ModelAdapter
from ._problem import Problem, Target, build_problem, diverse, parse_target, same_value

__all__ = ["counterfactuals", "CounterfactualResult", "same_value"]

#: rows one call may ask for (each is a solve of up to ``time_limit`` seconds)
MAX_ROWS = 1000


@dataclass
class CounterfactualResult:
    """Counterfactuals of each requested row, in the order of ``rows``.

    Attributes
    ----------
    rows : list of int
        Positions in X of the rows explained.
    counterfactuals : list of DataFrame
        Per row: up to n rows in X's columns, nearest first (empty when none was found).
    predictions : list of ndarray
        The model's own ``predict`` on each counterfactual (labels of a classifier).
    outputs : list of ndarray
        The explained output on each (class probabilities of a classifier, the value of a
        regressor).
    distances : list of ndarray
        Sum of ``|change| / scale`` per feature (a category change = 1).
    n_changed : list of ndarray of int
    optimal : list of bool
        Per row: the first answer is proven nearest (tree models).
    gaps : list of float
        Per row: the solver's relative gap on the first answer (0 when proven, NaN for the search).
    messages : list of str
        Per row: why nothing was returned, or "" when something was.
    targets : list of str
        Per row, in words: what the counterfactuals reach.
    method : str
        "tree branch and bound", "tree MILP (HiGHS)", "tree enumeration" or "search".
    scales : dict
        The distance's unit per numeric feature (its MAD in X).
    notes : list of str
    seconds : list of float
        Time spent per row.
    """

    rows: list
    counterfactuals: list
    predictions: list
    outputs: list
    distances: list
    n_changed: list
    optimal: list
    gaps: list
    messages: list
    targets: list
    method: str
    scales: dict
    notes: list = field(default_factory=list)
    seconds: list = field(default_factory=list)
    params: dict = field(default_factory=dict)


def _rows(rows, n: int) -> list[int]:
    if isinstance(rows, (int, np.integer)):
        rows = [rows]
    try:
        out = [int(r) for r in rows]
        whole = all(float(r) == o for r, o in zip(rows, out))  # 2.5 is no position (not row 2)
    except (TypeError, ValueError):
        whole = False
    if not whole:
        raise param_error("rows", "counterfactuals", "row positions (an int or a list of ints)", rows) from None
    if not out:
        raise InvalidParameterError("rows is empty: give the positions of the rows to explain.")
    if len(out) > MAX_ROWS:
        raise InvalidParameterError(f"rows asks for {len(out):,} rows; at most {MAX_ROWS:,} per call.")
    bad = [r for r in out if not 0 <= r < n]
    if bad:
        raise InvalidParameterError(f"rows {bad[:5]} are outside the data's {n:,} rows (positions 0 to {n - 1}).")
    return out


def _tree_ensemble(adapter, frame: pd.DataFrame):
    """The flattened trees the exact solver reads, or (None, why not)."""
    from ..description import describe
    from ..trees import flatten_model

    model = adapter.model
    if not describe(model).tree:
        return None, f"{type(model).__name__} is not a tree model"
    try:
        ens = flatten_model(model)
    except InvalidModelError as exc:
        return None, str(exc)
    if ens.n_features != frame.shape[1]:
        return None, "the data and the trees have different numbers of columns"
    if adapter.task == "regression" and ens.n_raw != 1:
        return None, "the trees predict several outputs"
    if adapter.task != "regression" and ens.n_raw not in (1, len(adapter.classes)):
        return None, "the trees' outputs do not line up with the classes"
    for j, cats in enumerate(ens.categories):
        col = frame.iloc[:, j]
        if cats is None and not pd.api.types.is_numeric_dtype(col.dtype):
            return None, f"column '{frame.columns[j]}' holds text the trees do not read as categories"
    return ens, ""


def _model_categories(ens, frame: pd.DataFrame) -> list:
    """Per column, the categories the trees know; for a categorical split on numeric codes
    with no list, the codes seen in the data."""
    from ..trees.ensemble import codes_given

    cat_feats = set(ens.categorical_features())
    out = []
    for j, cats in enumerate(ens.categories):
        col = frame.iloc[:, j]
        if cats is not None and ens.numeric_codes and len(cats) and codes_given(col, cats):
            cats = None  # the column holds the codes themselves
            out.append(tuple(float(v) for v in np.unique(col.dropna().to_numpy(float))))
        elif cats is not None:
            out.append(tuple(cats))
        elif j in cat_feats:
            out.append(tuple(float(v) for v in np.unique(col.dropna().to_numpy(float))))
        else:
            out.append(None)
    return out


def _validate(problem: Problem, cands: pd.DataFrame, target: Target):
    """(reaches the target, the model's predict, its explained output) of each candidate: the
    one check by the model's own predict every answer passes."""
    labels, outputs = problem.predict(cands)
    ok = target.reached(labels, outputs)
    return ok, labels, outputs


def counterfactuals(model, X, rows, *, target=None, fixed=(), ranges=None, n: int = 3,
                    time_limit: float = 10.0, random_state=0, progress=None,
                    solver: str = "auto") -> CounterfactualResult:
    """Counterfactual rows: the nearest changes of a row that the model predicts as ``target``.

    Parameters
    ----------
    model : fitted model (or ModelAdapter)
    X : DataFrame or array
        The data; its observed values bound where features may move, and its median
        absolute deviations are the distance's units.
    rows : int or list of int
        Positions in X of the rows to change.
    target : class label, (lo, hi), or None
        Classifiers: the class to reach (default: any class but the predicted one).
        Regressors: the interval the prediction must reach (required).
    fixed : feature names that never change.
    ranges : dict, optional
        ``{feature: (lo, hi)}`` or ``{feature: [allowed categories]}``; default the values
        observed in X (categories: those the model knows, for tree models).
    n : int
        Counterfactuals per row, each changing a different set of features.
    time_limit : float
        Seconds per row; the solver returns its best answer and gap when it stops.
    random_state : int
        Seeds the model-agnostic search.
    progress : callable, optional
        Called as ``progress(done, total)`` after each row.
    solver : {"auto", "bnb", "milp", "search"}
        Tree models: "bnb", the compiled branch and bound over the trees' cells; "milp", the
        mixed-integer program solved by HiGHS (both exact); "auto" (the default), the branch
        and bound, and HiGHS, started from its best answer, where it has not proven an answer
        in a fifth of the time (HiGHS is the faster on boosting over many features); "search",
        the model-agnostic search. Other models always use "search".
    """
    if solver not in ("auto", "bnb", "milp", "search"):
        raise param_error("solver", "counterfactuals", "'auto', 'bnb', 'milp' or 'search'", solver)
    if not isinstance(n, (int, np.integer)) or not 1 <= n <= 20:
        raise param_error("n", "counterfactuals", "an int between 1 and 20", n)
    if not isinstance(time_limit, (int, float)) or not time_limit > 0 or not np.isfinite(time_limit):
        raise param_error("time_limit", "counterfactuals", "a number of seconds > 0", time_limit)
    from ..shap._common import as_frame

    adapter = model if isinstance(model, ModelAdapter) else ModelAdapter(model)
    if adapter.output != "auto" or adapter.class_index is not None:
        adapter = adapter.with_output("auto", None)
    frame = as_frame(adapter, X)
    rows = _rows(rows, len(frame))
    ens, why = _tree_ensemble(adapter, frame) if solver != "search" else (None, "asked for the search")
    if ens is None and solver in ("bnb", "milp"):
        raise InvalidParameterError(f"solver={solver!r} solves tree models; {why}. Use solver='auto'.")
    problem = build_problem(adapter, frame, fixed, ranges, _model_categories(ens, frame) if ens is not None else None)
    exact = solver if solver in ("bnb", "milp") else "auto"
    method = "search" if ens is None else ("tree enumeration" if ens.n_trees == 1 else
                                           "tree MILP (HiGHS)" if exact == "milp" else "tree branch and bound")
    notes = list(problem.notes)
    if ens is None:
        notes.append(f"Model-agnostic search ({why}): the answers are not proven nearest.")
    rng = np.random.default_rng(random_state)
    res = CounterfactualResult(rows, [], [], [], [], [], [], [], [], [], method,
                               {f.name: f.scale for f in problem.features if f.kind != "categorical"}, notes,
                               params={"n": int(n), "time_limit": float(time_limit), "fixed": list(fixed or ()),
                                       "ranges": dict(ranges or {}), "random_state": random_state})
    lay = None
    if ens is not None:
        from ._trees import layout

        lay = layout(ens)
    used: set = set()
    for done, row in enumerate(rows):
        t0 = time.perf_counter()
        _one_row(problem, ens, lay, row, target, n, float(time_limit), rng, res, (exact, used))
        res.seconds.append(time.perf_counter() - t0)
        if progress is not None:
            progress(done + 1, len(rows))
    if exact == "auto" and "milp" in used:
        res.method = "tree branch and bound, then MILP (HiGHS)"
        res.notes.append("HiGHS's mixed-integer program took over where the branch and bound had not proven an "
                         "answer in a fifth of the time limit, starting from its best answer.")
    return res


def _one_row(problem: Problem, ens, lay, row: int, target, n: int, time_limit: float, rng, res, exact):
    x_frame = problem.frame.iloc[[row]]
    labels, outputs = problem.predict(x_frame)
    goal = parse_target(problem.adapter, target, labels[0])
    res.targets.append(goal.describe())
    empty = problem.frame.iloc[[]]
    if goal.reached(labels, outputs)[0]:
        _store(res, empty, [], [], [], [], False, np.nan,
               f"Row {row} is already predicted as {goal.describe()}: nothing needs to change.")
        return
    free = [f for f in problem.features if not f.fixed]
    if not free:
        _store(res, empty, [], [], [], [], False, np.nan,
               "Every feature is fixed: no change is allowed, so the prediction cannot change. "
               "Untick some fixed features.")
        return
    optimal, gap = False, np.nan
    if ens is not None:
        cands, lab, out, optimal, gap = _tree_answers(problem, ens, lay, row, goal, n, time_limit, exact)
    else:
        cands, lab, out = _search_answers(problem, row, goal, n, time_limit, rng)
    if not len(cands):
        why = ("no allowed change reaches it (proven)" if optimal
               else f"none was found in {time_limit:g} s")
        _store(res, empty, [], [], [], [], False, gap,
               f"No counterfactual for row {row} reaches {goal.describe()}: {why}. "
               "Free more features or widen their ranges.")
        return
    dist, changed = problem.distance(problem.frame.iloc[row], cands)
    _store(res, cands.reset_index(drop=True), lab, out, dist, changed, optimal, gap, "")


def _store(res, cands, labels, outputs, dist, changed, optimal, gap, message):
    res.counterfactuals.append(cands)
    res.predictions.append(np.asarray(labels))
    res.outputs.append(np.asarray(outputs, float))
    res.distances.append(np.asarray(dist, float))
    res.n_changed.append(np.asarray(changed, int))
    res.optimal.append(bool(optimal))
    res.gaps.append(float(gap))
    res.messages.append(message)


def _row_cells(problem: Problem, ens, row: int) -> dict:
    """Cells of every feature the trees split on (a fixed one: its own value only)."""
    from ..shap.tree import tree_inputs
    from ._cells import Cells, category_cells, numeric_cells

    frame = problem.frame
    coded = tree_inputs(ens, frame.iloc[[row]], "X")[0]
    cats = problem.model_categories
    cells = {}
    for j in np.unique(ens.feature[ens.feature >= 0]):
        j = int(j)
        f = problem.features[j]
        label = frame.iat[row, j]
        if f.fixed:
            cells[j] = Cells([label], np.asarray([coded[j]]), np.zeros(1), 0)
        elif f.kind == "categorical":
            known = ens.categories[j] if (ens.categories[j] is not None and cats[j] is not None
                                          and tuple(ens.categories[j]) == cats[j]) else None
            cells[j] = category_cells(f, known, label, float(coded[j]))
        else:
            cells[j] = numeric_cells(f, ens, j, float(label) if not pd.isna(label) else np.nan)
    return cells


def _apply(problem: Problem, row: int, cells: dict, chosen: dict) -> dict:
    from ._search import frame_like

    x = problem.frame.iloc[row]
    cols = {name: np.asarray([x[name]], dtype=object) for name in problem.frame.columns}
    for j, i in chosen.items():
        if i != cells[j].origin:
            cols[problem.frame.columns[j]] = np.asarray([cells[j].values[i]], dtype=object)
    for f in problem.features:
        if f.kind != "categorical":
            cols[f.name] = pd.to_numeric(pd.Series(cols[f.name]), errors="coerce").to_numpy(float)
    return frame_like(problem, cols)


def _tree_answers(problem: Problem, ens, lay, row: int, goal: Target, n: int, time_limit: float, exact: tuple):
    """(valid answers, their predict, their outputs, first proven nearest, gap) of one row."""
    from ._trees import solve_row

    cells = _row_cells(problem, ens, row)
    eps = 1e-7
    t0 = time.perf_counter()
    for attempt in range(3):
        left = time_limit - (time.perf_counter() - t0)
        answers, none = solve_row(ens, lay, cells, goal, n, max(left, 0.05), eps, *exact)
        if not answers:
            return problem.frame.iloc[[]], [], [], none, 0.0 if none else np.nan
        frames = [_apply(problem, row, cells, chosen) for chosen, _, _ in answers]
        cands = pd.concat(frames, ignore_index=True)
        ok, labels, outputs = _validate(problem, cands, goal)
        if ok[0] or attempt == 2:
            return (cands.loc[ok], labels[ok], outputs[ok], bool(answers[0][1]) and bool(ok[0]),
                    float(answers[0][2]))
        eps *= 1e3  # an answer on a tie of the outputs: ask for a clearer margin


def _search_answers(problem: Problem, row: int, goal: Target, n: int, time_limit: float, rng):
    """(the n nearest valid, diverse answers of the search, their predict, their outputs).

    A first search gives the nearest answers that change different sets of features; while
    fewer than n, the search runs again with one feature of each answer so far held at the
    row's own value (each answer's least-used feature first), as the tree solver's rule asks."""
    from dataclasses import replace

    from ._search import reached, search_row

    x = problem.frame.iloc[row]
    t0 = time.perf_counter()
    cands, sets, nearest = problem.frame.iloc[[]], [], 0.0
    for attempt in range(n + 1):  # a first search, then at most n more
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0 or len(sets) >= n:
            break
        hold = _held(sets, attempt)
        sub = problem if not hold else replace(problem, features=[
            replace(f, fixed=True) if f.name in hold else f for f in problem.features])
        # a later round's answers lie farther than the nearest so far: its spheres start there
        found = search_row(sub, row, goal, left, rng, radius=max(0.25, nearest))
        if not len(found):
            if not sets:
                break
            continue
        found = found.loc[reached(problem, goal, found)]
        # the answers so far and the new ones, nearest first, each keeping a feature of every earlier one
        pool = pd.concat([cands, found], ignore_index=True)
        steps, flags = problem.changes(x, pool)
        order = np.lexsort((flags.sum(axis=1), steps.sum(axis=1)))
        names = [f.name for f in problem.features]
        moved = [{names[k] for k in np.flatnonzero(flags[i])} for i in order]
        keep = diverse(moved, n)
        cands = pool.iloc[order[keep]].reset_index(drop=True)
        nearest = float(steps.sum(axis=1)[order[keep[0]]]) if keep else 0.0
        sets = [moved[k] for k in keep]
    if not len(cands):
        return problem.frame.iloc[[]], [], []
    # the answers' own predict (a model's float results can depend on the batch they are in)
    ok, labels, outputs = _validate(problem, cands, goal)
    return cands.loc[ok], labels[ok], outputs[ok]


def _held(sets: list, attempt: int) -> set:
    """One feature of each earlier answer's changed set to hold at the row's value: the one the
    answers change least (ties by name), rotated by ``attempt`` among a set's features."""
    count: dict = {}
    for moved in sets:
        for name in moved:
            count[name] = count.get(name, 0) + 1
    hold: set = set()
    for moved in sets:
        if moved & hold:
            continue
        names = sorted(moved, key=lambda m: (count[m], str(m)))
        hold.add(names[attempt % len(names)])
    return hold
