"""Counterfactuals of any model: a seeded search over the allowed values, then a repair.

1. Growing spheres (Laugel et al., 2018) in the distance's own units: candidates are drawn
   at a growing radius (each changes a random set of features, the radius shared among
   them; a category change counts 1), until some reach the target.
2. The nearest of those are made sparser (each changed feature put back where the target
   still holds) and nearer (each remaining change bisected toward the row's own value until
   it is known to 0.5% of the feature's scale, keeping the target; the nearest two of each
   set of changed features, all candidates in one model call a step).
3. The answers are the nearest, each changing a different set of features (the tree
   solver's rule: a later answer keeps at least one feature of every earlier one); while
   fewer than asked, the search runs again holding one feature of each answer so far at
   the row's own value (``explainers.counterfactuals._search_answers``).

Every candidate is judged by the model's own ``predict``; nothing is proved nearest
(``optimal=False``).
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ._problem import Problem, Target

#: candidates drawn per radius
DRAWS = 400
#: valid candidates kept for the repair, and of them per set of changed features for the bisection
KEEP = 30
PER_SET = 2
#: bisection steps per changed feature at most (each one predict call on the candidates), and
#: where it stops sooner: the change known to this share of the feature's scale
STEPS = 10
TOLERANCE = 5e-3


def _free(problem: Problem):
    out = []
    for f in problem.features:
        if f.fixed:
            continue
        if f.kind == "categorical" and len(f.allowed) > 1:
            out.append(f)
        elif f.kind != "categorical" and np.isfinite(f.lo) and np.isfinite(f.hi) and f.hi > f.lo:
            out.append(f)
    return out


def reached(problem: Problem, target: Target, rows: pd.DataFrame) -> np.ndarray:
    """Which rows the model's own predict puts on the target."""
    if target.kind in ("class", "not_class"):  # a class: the model's own predict alone decides
        return target.reached(np.asarray(problem.adapter.predict_labels(rows)), None)
    labels, values = problem.predict(rows)
    return target.reached(labels, values)


def frame_like(problem: Problem, cols: dict) -> pd.DataFrame:
    """A data frame of the data's columns and dtypes from per-column arrays (integer columns
    hold whole numbers here; a column whose values no longer fit its dtype keeps theirs)."""
    out = pd.DataFrame({name: cols[name] for name in problem.frame.columns})
    for name, dt in problem.frame.dtypes.items():
        if out[name].dtype != dt:
            try:
                out[name] = out[name].astype(dt)
            except (TypeError, ValueError):
                pass
    return out


def _draw(problem, free, x: pd.Series, radius: float, rng, count: int) -> pd.DataFrame:
    """``count`` candidates around ``x``: each changes a random set of the free features, its
    radius (a random 50-100% of ``radius``) split among them by a flat Dirichlet draw, each
    numeric change up or down at random, each category change to another allowed category."""
    numeric = {f.name for f in problem.features if f.kind != "categorical"}
    cols = {}
    for name in problem.frame.columns:  # numbers as floats from the start; categories as objects
        if name in numeric:
            v = pd.to_numeric(pd.Series([x[name]]), errors="coerce").to_numpy(float)[0]
            cols[name] = np.full(count, v)
        else:
            cols[name] = np.repeat(np.asarray([x[name]], dtype=object), count)
    p = len(free)
    sizes = rng.integers(1, p + 1, size=count)
    # a random subset of each size: the features ranked first by a random permutation per row
    rank = np.argsort(rng.random((count, p)), axis=1).argsort(axis=1)
    picked = rank < sizes[:, None]
    weight = rng.exponential(1.0, (count, p)) * picked   # normalised: a flat Dirichlet over the picked
    share = weight / weight.sum(axis=1, keepdims=True) * (radius * rng.uniform(0.5, 1.0, count))[:, None]
    sign = rng.choice([-1.0, 1.0], size=(count, p))
    pick_other = rng.random((count, p))
    for k, f in enumerate(free):
        on = picked[:, k]
        if not on.any():
            continue
        old = x[f.name]
        if f.kind == "categorical":
            others = [a for a in f.allowed if not (a == old or str(a) == str(old))]
            if others:
                chosen = (pick_other[:, k] * len(others)).astype(int)
                col = cols[f.name]
                for i in np.flatnonzero(on):
                    col[i] = others[chosen[i]]
            continue
        base = (np.full(count, float(old)) if not pd.isna(old)
                else rng.uniform(f.lo, f.hi, count))
        v = np.clip(base + sign[:, k] * share[:, k] * f.scale, f.lo, f.hi)
        if f.kind == "integer":
            v = np.round(v)
        col = cols[f.name]
        col[on] = v[on]
    return frame_like(problem, cols)


def _put_back(problem, free, x, cand: pd.DataFrame, target) -> pd.DataFrame:
    """Features changed in a candidate put back to the row's own value where the target holds."""
    names = [f.name for f in problem.features]
    flags = problem.changes(x, cand)[1]  # a feature's column changes only in its own turn below
    for f in free:
        old = x[f.name]
        moved = flags[:, names.index(f.name)]
        if not moved.any():
            continue
        trial = cand.loc[moved].copy()
        trial[f.name] = pd.Series([old] * len(trial), index=trial.index, dtype=cand[f.name].dtype)
        ok = reached(problem, target, trial)
        idx = trial.index[ok]
        cand.loc[idx, f.name] = old
    return cand


def _bisect(problem, free, x, cand: pd.DataFrame, target) -> pd.DataFrame:
    """Each numeric change moved toward the row's own value as far as the target allows.

    A candidate's changed features are bisected one after the other (in the features' order,
    each with the earlier ones already moved); all candidates go at once, each on its own k-th
    changed feature in phase k, so the model calls are STEPS per phase, not per feature."""
    numeric = [f for f in free if f.kind != "categorical" and not pd.isna(x[f.name])]
    if not numeric or not len(cand):
        return cand
    m = len(cand)
    old = np.asarray([float(x[f.name]) for f in numeric])
    # toward the row's own value (it does not reach, else it was put back), but no further than
    # the allowed range: a row outside its range moves into it
    stop = np.asarray([min(max(float(x[f.name]), f.lo), f.hi) for f in numeric])
    cur = np.column_stack([pd.to_numeric(cand[f.name], errors="coerce").to_numpy(float) for f in numeric])
    changed = [np.flatnonzero(cur[i] != old) for i in range(m)]
    integer = np.asarray([f.kind == "integer" for f in numeric])
    scale = np.asarray([f.scale for f in numeric])
    rows = np.arange(m)
    for k in range(max(len(c) for c in changed)):
        feat = np.asarray([c[k] if len(c) > k else -1 for c in changed])
        on = feat >= 0
        j = np.where(on, feat, 0)
        good = cur[rows, j].copy()            # reaches the target
        bad = stop[j].copy()
        for _ in range(STEPS):
            # done where the change is known to a thousandth of the feature's scale (an integer: to 1)
            on &= np.abs(good - bad) > np.where(integer[j], 1.0, TOLERANCE * scale[j])
            if not on.any():
                break
            mid = (good + bad) / 2
            mid = np.where(integer[j], np.where(good > bad, np.ceil(mid), np.floor(mid)), mid)
            ok = np.zeros(m, bool)
            ok[on] = reached(problem, target, _with(cand, numeric, feat, mid, on))
            good = np.where(on & ok, mid, good)
            bad = np.where(on & ~ok, mid, bad)
        moved = feat >= 0
        cur[rows[moved], j[moved]] = good[moved]
        cand = _with(cand, numeric, feat, good, np.ones(m, bool))
    return cand


def _with(cand: pd.DataFrame, numeric: list, feat: np.ndarray, values: np.ndarray, rows: np.ndarray) -> pd.DataFrame:
    """The candidates ``rows``, each with its feature ``feat`` (a position in ``numeric``, -1: none)
    set to its value in ``values``."""
    out = cand.loc[rows].copy()
    sub_feat, sub_vals = feat[rows], values[rows]
    for j, f in enumerate(numeric):
        at = sub_feat == j
        if at.any():
            col = out[f.name].to_numpy(dtype=float, na_value=np.nan, copy=True)
            col[at] = sub_vals[at]
            out[f.name] = _as_column(col, cand[f.name].dtype)
    return out


def _as_column(values: np.ndarray, dtype):
    """Numbers for a column of ``dtype``: whole numbers for an integer column."""
    if pd.api.types.is_integer_dtype(dtype):
        return np.round(values).astype(dtype)
    return values


def search_row(problem: Problem, row: int, target: Target, time_limit: float, rng, radius: float = 0.25):
    """Candidate counterfactuals of one row of the data, repaired (the caller checks them with
    the model's predict and picks the nearest diverse ones); the spheres grow from ``radius``."""
    x = problem.frame.iloc[row]
    free = _free(problem)
    if not free:
        return problem.frame.iloc[[]]
    t0 = time.perf_counter()
    span = sum((f.hi - f.lo) / f.scale if f.kind != "categorical" else 1.0 for f in free)
    found = []
    while radius <= 2 * span and time.perf_counter() - t0 < time_limit:
        cand = _draw(problem, free, x, radius, rng, DRAWS)
        ok = reached(problem, target, cand)
        if ok.any():
            found.append(cand.loc[ok])
            if sum(len(c) for c in found) >= KEEP:
                break
        radius *= 2
    if not found:
        return problem.frame.iloc[[]]
    cand = pd.concat(found, ignore_index=True)
    dist, _ = problem.distance(x, cand)
    cand = cand.iloc[np.argsort(dist, kind="stable")[:KEEP]].reset_index(drop=True)
    cand = _put_back(problem, free, x, cand, target)
    # the answers take one per changed set: the nearest PER_SET of each go on to the bisection
    # (a feature no kept candidate changes needs none)
    steps, moved = problem.changes(x, cand)
    per_set: dict = {}
    keep = []
    for i in np.argsort(steps.sum(axis=1), kind="stable"):
        n_seen = per_set[moved[i].tobytes()] = per_set.get(moved[i].tobytes(), 0) + 1
        if n_seen <= PER_SET:
            keep.append(i)
    return _bisect(problem, free, x, cand.iloc[sorted(keep)].reset_index(drop=True), target)
