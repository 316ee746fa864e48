"""Nearest counterfactuals of a tree ensemble, exactly: a mixed-integer program over the
trees' leaves (Parmentier & Vidal, "Optimal Counterfactual Explanations in Tree
Ensembles", ICML 2021), solved by HiGHS.

Variables, for one row:

- ``mu[j, c]`` (binary): feature ``j`` takes the point of its cell ``c``
  (:mod:`._cells`); exactly one cell per feature;
- ``z[l]`` (in [0, 1]): the row reaches leaf ``l``; exactly one leaf per tree.

For every split node on feature ``j``, the leaves below its left child may be reached only
if the chosen cell goes left there, and likewise on the right::

    sum(z[l] for l under left(n))  <= sum(mu[j, c] for c going left at n)
    sum(z[l] for l under right(n)) <= sum(mu[j, c] for c going right at n)

With binary ``mu`` these force ``z`` onto the one leaf per tree the row reaches, so the
raw prediction ``base + scale * sum(z[l] * value[l])`` is linear in ``z`` and the target
(a class winning the argmax, the sign of a margin, an interval of outputs) is a set of
linear constraints. The objective is the distance ``sum(cost[j, c] * mu[j, c])``, plus a
tie-breaker of ``1e-6`` per changed feature. For a numeric feature whose cells a split
cuts into a prefix and a suffix (every plain threshold split), the sum over the prefix is
one running-total variable (a chain of one link per cell), so each split costs one constraint
of its leaves plus one.

Further answers add, for each answer found so far with changed features S, "at least one
feature of S keeps its value", so every answer changes a different set of features.

A single tree needs no solver: each of its leaves that reaches the target is a box, and the
nearest point of a box is the cheapest allowed cell per feature; enumerating the leaves is
exact.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ._cells import Cells
from ._problem import diverse

#: tie-breaker per changed feature: far below any distance step that matters
TIE = 1e-6


@dataclass
class Layout:
    """Leaves in depth-first order, so the leaves under a node are one contiguous range."""

    leaves: np.ndarray          # global node index of each leaf, depth-first per tree
    tree_of: np.ndarray         # tree of each leaf
    span: dict                  # internal node -> (first leaf, end leaf) of its subtree


def layout(ens) -> Layout:
    leaves, tree_of, span = [], [], {}
    left, right = ens.left, ens.right
    for t, root in enumerate(ens.roots):
        stack = [(int(root), False)]
        first = {}
        while stack:
            node, done = stack.pop()
            if left[node] < 0:
                leaves.append(node)
                tree_of.append(t)
                continue
            if done:
                span[node] = (first[node], len(leaves))
                continue
            first[node] = len(leaves)
            stack.append((node, True))
            stack.append((int(right[node]), False))
            stack.append((int(left[node]), False))
    return Layout(np.asarray(leaves, np.int64), np.asarray(tree_of, np.int64), span)


@dataclass
class Goal:
    """The target as linear conditions on the raw outputs: ``rows`` of (weights over the
    raw columns, lower bound) meaning ``weights @ raw >= lower``; for "any class but p"
    one of several such rows must hold (``any_of``)."""

    rows: list = field(default_factory=list)
    any_of: list = field(default_factory=list)
    upper: list = field(default_factory=list)   # (weights, upper): weights @ raw <= upper


def goal_for(ens, target, eps: float) -> Goal:
    """Translate the target into conditions on the ensemble's raw outputs."""
    k = ens.n_raw
    g = Goal()
    if target.kind == "interval":
        lo, hi = target.lo, target.hi
        if ens.transform == "exp":
            lo = np.log(lo) if lo > 0 else -np.inf
            hi = np.log(hi) if hi > 0 else -np.inf
        w = np.eye(k)[0]
        if np.isfinite(lo):
            g.rows.append((w, lo))
        if np.isfinite(hi) or hi == -np.inf:
            g.upper.append((w, hi))
        return g
    if ens.transform == "sigmoid" and k == 1:
        # class 1 when the margin is above 0; class 0 at 0 or below (argmax picks the first)
        want = target.index if target.kind == "class" else 1 - target.index
        g.rows.append((np.array([1.0]), eps) if want == 1 else (np.array([-1.0]), eps))
        return g
    # argmax picks the first of equal outputs: a class needs a margin over the classes before
    # it, but only a tie with those after it (a tie is common in a forest's averaged
    # probabilities); a retry (a larger eps, after predict disagreed) asks for the margin
    tie = 0.0 if eps <= 1e-7 else eps
    def beats(a: int, b: int):  # output a above output b: (a - b, the margin argmax needs)
        w = np.zeros(k)
        w[a], w[b] = 1.0, -1.0
        return w, (eps if b < a else tie)

    c = target.index
    if target.kind == "class":
        g.rows.extend(beats(c, o) for o in range(k) if o != c)
    else:
        g.any_of.extend(beats(o, c) for o in range(k) if o != c)
    return g


class _Builder:
    """Columns and rows of the program, gathered before one pass to HiGHS."""

    def __init__(self):
        self.lb, self.ub, self.cost, self.integer = [], [], [], []
        self.rows = []   # (lower, upper, indices, values)

    def col(self, lb, ub, cost=0.0, integer=False) -> int:
        self.lb.append(lb)
        self.ub.append(ub)
        self.cost.append(cost)
        self.integer.append(integer)
        return len(self.lb) - 1

    def row(self, lower, upper, idx, val):
        self.rows.append((lower, upper, np.asarray(idx, np.int32), np.asarray(val, np.float64)))


_HIGHS_QUIET: list = []


def _quiet_highs(highspy):
    """A Highs object; the first of the process is made with the standard output closed, as it
    prints a banner there whatever its options (later ones print nothing)."""
    if _HIGHS_QUIET:
        return highspy.Highs()
    import os
    import sys

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    _HIGHS_QUIET.append(True)
    return h


class TreeProgram:
    """The program of one row; :meth:`solve` returns the next answer (or None)."""

    def __init__(self, ens, lay: Layout, cells: dict, target, eps: float):
        import highspy

        self.ens, self.lay, self.cells = ens, lay, cells
        self.h = _quiet_highs(highspy)
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("mip_rel_gap", 1e-7)
        self.h.setOptionValue("mip_abs_gap", 1e-9)
        self.h.setOptionValue("primal_feasibility_tolerance", 1e-9)
        self.h.setOptionValue("mip_feasibility_tolerance", 1e-9)
        self.h.setOptionValue("threads", 1)
        self._build(target, eps)

    def _build(self, target, eps):
        ens, lay, cells = self.ens, self.lay, self.cells
        b = _Builder()
        free = {j: c for j, c in cells.items() if len(c.values) > 1}
        self.mu = {}
        for j, c in free.items():
            idx = [b.col(0.0, 1.0, float(c.cost[i]) + (TIE if i != c.origin else 0.0), True)
                   for i in range(len(c.values))]
            self.mu[j] = np.asarray(idx)
            b.row(1.0, 1.0, idx, np.ones(len(idx)))
        # which leaves stay reachable with the features that cannot move
        reach = np.ones(len(lay.leaves), bool)
        go = {}
        for node, (s, e) in lay.span.items():
            j = int(ens.feature[node])
            pts = cells[j].coded
            left = np.asarray(ens.goes_left(pts, np.full(len(pts), node)), bool)
            if j not in free:
                # the left subtree's leaves are the first part of [s, e)
                cut = _left_end(ens, lay, node)
                if left[0]:
                    reach[cut:e] = False
                else:
                    reach[s:cut] = False
                continue
            go[node] = left
        self.z0 = len(b.lb)
        for i in range(len(lay.leaves)):
            b.col(0.0, 1.0 if reach[i] else 0.0)
        z0 = self.z0
        for t in range(ens.n_trees):
            sel = np.nonzero(lay.tree_of == t)[0]
            b.row(1.0, 1.0, z0 + sel, np.ones(len(sel)))
        running = {}
        for node, left in go.items():
            j = int(ens.feature[node])
            s, e = lay.span[node]
            cut = _left_end(ens, lay, node)
            mu = self.mu[j]
            for lo_leaf, hi_leaf, way in ((s, cut, left), (cut, e, ~left)):
                zs = z0 + np.arange(lo_leaf, hi_leaf)
                zs = zs[reach[lo_leaf:hi_leaf]]
                if len(zs) == 0:
                    continue
                if way.all():
                    continue
                if not way.any():  # no allowed value goes this way: its leaves are out of reach
                    b.row(-np.inf, 0.0, zs, np.ones(len(zs)))
                    continue
                k = _prefix_length(way)
                if k is not None and 0 < k < len(way):
                    y = _running(b, running, j, mu, k)
                    b.row(-np.inf, 0.0, np.concatenate([zs, [y]]), np.concatenate([np.ones(len(zs)), [-1.0]]))
                    continue
                k = _prefix_length(~way)
                if k is not None and 0 < k < len(way):
                    y = _running(b, running, j, mu, k)
                    b.row(-np.inf, 1.0, np.concatenate([zs, [y]]), np.ones(len(zs) + 1))
                    continue
                # sum z <= sum mu[way]  <=>  sum z + sum mu[not way] <= 1
                other = mu[~way]
                b.row(-np.inf, 1.0, np.concatenate([zs, other]), np.ones(len(zs) + len(other)))
        self._target(b, target, eps, reach)
        self._pass(b)

    def _raw_terms(self, w: np.ndarray, reach):
        """(leaf columns, coefficients, constant) of ``w @ raw``."""
        ens, lay = self.ens, self.lay
        vals = ens.value[lay.leaves] @ w * ens.scale
        keep = reach & (vals != 0)
        return self.z0 + np.nonzero(keep)[0], vals[keep], float(ens.base @ w)

    def _target(self, b: _Builder, target, eps, reach):
        g = goal_for(self.ens, target, eps)
        for w, lower in g.rows:
            idx, val, const = self._raw_terms(w, reach)
            b.row(lower - const, np.inf, idx, val)
        for w, upper in g.upper:
            idx, val, const = self._raw_terms(w, reach)
            b.row(-np.inf, upper - const, idx, val)
        if g.any_of:
            picks = []
            for w, lower in g.any_of:
                idx, val, const = self._raw_terms(w, reach)
                low = const + self._lowest(w, reach)
                big = max(lower - low, 0.0) + 1.0
                pick = b.col(0.0, 1.0, 0.0, True)
                picks.append(pick)
                # w @ raw >= lower when picked: w @ raw - const - big * pick >= lower - const - big
                b.row(lower - const - big, np.inf, np.concatenate([idx, [pick]]),
                      np.concatenate([val, [-big]]))
            b.row(1.0, 1.0, picks, np.ones(len(picks)))

    def _lowest(self, w, reach) -> float:
        ens, lay = self.ens, self.lay
        vals = ens.value[lay.leaves] @ w * ens.scale
        total = 0.0
        for t in range(ens.n_trees):
            sel = (lay.tree_of == t) & reach
            if sel.any():
                total += float(vals[sel].min())
        return total

    def _pass(self, b: _Builder):
        import highspy

        h = self.h
        n = len(b.lb)
        h.addVars(n, np.asarray(b.lb, float), np.asarray(b.ub, float))
        h.changeColsCost(n, np.arange(n, dtype=np.int32), np.asarray(b.cost, float))
        ints = np.nonzero(b.integer)[0].astype(np.int32)
        if len(ints):
            h.changeColsIntegrality(len(ints), ints, np.full(len(ints), highspy.HighsVarType.kInteger))
        lower = np.asarray([r[0] for r in b.rows], float)
        upper = np.asarray([r[1] for r in b.rows], float)
        starts = np.cumsum([0] + [len(r[2]) for r in b.rows[:-1]]).astype(np.int32)
        idx = np.concatenate([r[2] for r in b.rows]).astype(np.int32)
        val = np.concatenate([r[3] for r in b.rows])
        inf = highspy.kHighsInf
        lower[~np.isfinite(lower)] = -inf
        upper[~np.isfinite(upper)] = inf
        h.addRows(len(b.rows), lower, upper, len(idx), starts, idx, val)
        self.size = (n, len(b.rows), len(idx))

    def seed(self, chosen: dict):
        """Start the solver from an answer (its cells; HiGHS completes the leaves)."""
        idx, val = [], []
        for j, cols in self.mu.items():
            idx.extend(int(c) for c in cols)
            val.extend(1.0 if i == chosen[j] else 0.0 for i in range(len(cols)))
        if idx:
            self.h.setSolution(len(idx), np.asarray(idx, np.int32), np.asarray(val, np.float64))

    def forbid(self, changed: list[int]):
        """Later answers keep at least one of these features at its own value."""
        import highspy

        idx = [int(self.mu[j][self.cells[j].origin]) for j in changed if j in self.mu]
        if idx:
            self.h.addRow(1.0, highspy.kHighsInf, len(idx), np.asarray(idx, np.int32),
                          np.ones(len(idx)))

    def solve(self, seconds: float):
        """(chosen cells, proven optimal, gap) or None, and whether the program is proven
        infeasible (or this answer optimal)."""
        import highspy

        h = self.h
        h.setOptionValue("time_limit", max(0.05, float(seconds)))
        h.run()
        status = h.getModelStatus()
        info = h.getInfo()
        if info.primal_solution_status != 2:  # no feasible point found
            return None, status == highspy.HighsModelStatus.kInfeasible
        x = np.asarray(h.getSolution().col_value)
        chosen = {}
        for j, c in self.cells.items():
            chosen[j] = int(np.argmax(x[self.mu[j]])) if j in self.mu else c.origin
        gap = float(info.mip_gap) if np.isfinite(info.mip_gap) else np.inf
        optimal = status == highspy.HighsModelStatus.kOptimal
        return (chosen, optimal, 0.0 if optimal else gap), optimal


def _left_end(ens, lay: Layout, node: int) -> int:
    """End of the left child's leaves in depth-first order (the right child's start)."""
    lc = int(ens.left[node])
    if ens.left[lc] < 0:
        return _leaf_pos(lay, lc) + 1
    return lay.span[lc][1]


def _leaf_pos(lay: Layout, leaf: int) -> int:
    pos = getattr(lay, "_pos", None)
    if pos is None:
        pos = {int(n): i for i, n in enumerate(lay.leaves)}
        lay._pos = pos
    return pos[leaf]


def _prefix_length(mask: np.ndarray):
    """k when ``mask`` is k Trues then only Falses; None otherwise."""
    k = int(np.argmin(mask)) if not mask.all() else len(mask)
    return k if not mask[k:].any() else None


def _running(b: _Builder, running: dict, j: int, mu: np.ndarray, k: int) -> int:
    """The variable ``y[k] = sum(mu[:k])`` of feature ``j``: a chain ``y[k] = y[k-1] + mu[k-1]``
    built once per feature, three nonzeros a link."""
    chain = running.get(j)
    if chain is None:
        chain = [int(mu[0])]
        for i in range(1, len(mu) - 1):
            y = b.col(0.0, 1.0)
            b.row(0.0, 0.0, [y, chain[-1], int(mu[i])], [1.0, -1.0, -1.0])
            chain.append(y)
        running[j] = chain
    return chain[k - 1]


def enumerate_tree(ens, lay: Layout, cells: dict, target, eps: float, n: int):
    """Answers of a single tree: its target leaves' boxes, nearest first, each changing a
    different set of features (the same rule as the program's). Returns a list of
    (chosen cells, distance) and always proves optimality."""
    goal = goal_for(ens, target, eps)
    raw = ens.base[None, :] + ens.scale * ens.value[lay.leaves]
    ok = np.ones(len(lay.leaves), bool)
    for w, lower in goal.rows:
        ok &= raw @ w >= lower
    for w, upper in goal.upper:
        ok &= raw @ w <= upper
    if goal.any_of:
        ok &= np.any([raw @ w >= lower for w, lower in goal.any_of], axis=0)
    allowed = {j: np.ones(len(c.values), bool) for j, c in cells.items()}
    boxes = []
    _walk_boxes(ens, lay, cells, int(ens.roots[0]), allowed, ok, boxes)
    scored = []
    for masks in boxes:
        chosen, cost = {}, 0.0
        for j, c in cells.items():
            m = masks[j]
            if m[c.origin]:
                chosen[j] = c.origin
                continue
            costs = np.where(m, c.cost, np.inf)
            i = int(np.argmin(costs))
            chosen[j] = i
            cost += float(costs[i]) + TIE
        scored.append((cost, chosen))
    scored.sort(key=lambda s: s[0])
    changed = [{j for j, i in chosen.items() if i != cells[j].origin} for _, chosen in scored]
    return [(scored[i][1], scored[i][0]) for i in diverse(changed, n)]


def _walk_boxes(ens, lay, cells, node, allowed, ok, boxes):
    if ens.left[node] < 0:
        if ok[_leaf_pos(lay, node)] and all(m.any() for m in allowed.values()):
            boxes.append({j: m.copy() for j, m in allowed.items()})
        return
    j = int(ens.feature[node])
    c = cells[j]
    left = np.asarray(ens.goes_left(c.coded, np.full(len(c.coded), node)), bool)
    for child, way in ((int(ens.left[node]), left), (int(ens.right[node]), ~left)):
        keep = allowed[j]
        allowed[j] = keep & way
        if allowed[j].any():
            _walk_boxes(ens, lay, cells, child, allowed, ok, boxes)
        allowed[j] = keep


def goal_rows(ens, target, eps: float):
    """The target as rows ``w @ raw >= lower`` and whether one of them suffices (any_of)."""
    g = goal_for(ens, target, eps)
    if g.any_of:
        return list(g.any_of), True
    return list(g.rows) + [(-w, -upper) for w, upper in g.upper], False


#: "auto": the branch and bound alone for this share of the time (at least AUTO_BNB_SECONDS);
#: unproven by then, HiGHS takes the rest, started from its best answer
AUTO_BNB_SHARE = 0.2
AUTO_BNB_SECONDS = 1.0
#: ... unless the ensemble has more leaves than this (deep forests: the program is then slower)
AUTO_MILP_LEAVES = 30_000


def _distance(cells: dict, chosen: dict) -> float:
    return float(sum(c.cost[chosen[j]] + (TIE if chosen[j] != c.origin else 0.0) for j, c in cells.items()))


def solve_row(ens, lay, cells: dict, target, n: int, time_limit: float, eps: float, solver: str = "auto",
              used: set | None = None):
    """Up to n answers for one row, and whether no answer at all is proven:
    (list of (chosen cells, optimal, gap), proven_none).

    ``solver``: "bnb", the compiled branch and bound (:mod:`._bnb`); "milp", the mixed-integer
    program solved by HiGHS; "auto", the branch and bound first (it is fastest on forests and on
    few features) and, where it has not proven an answer in its share of the time, HiGHS (fastest
    on boosting over many features) with the rest, seeded with the best answer so far. A single
    tree is always enumerated. ``used`` (a set) collects the kinds of solver that ran.
    """
    if ens.n_trees == 1:
        got = enumerate_tree(ens, lay, cells, target, eps, n)
        return [(chosen, True, 0.0) for chosen, _ in got], not got
    programs: dict = {}
    forbidden: list = []

    def program(kind: str):
        if kind not in programs:
            if kind == "bnb":
                from ._bnb import BoxSearch

                rows, any_of = goal_rows(ens, target, eps)
                programs[kind] = BoxSearch(ens, cells, rows, any_of, TIE)
                programs[kind].warm()
            else:
                programs[kind] = TreeProgram(ens, lay, cells, target, eps)
            for changed in forbidden:
                programs[kind].forbid(changed)
            if used is not None:
                used.add(kind)
        return programs[kind]

    if solver in ("auto", "bnb"):
        program("bnb")  # built, and its searches compiled, before the time limit starts
    out = []
    t0 = time.perf_counter()
    for _ in range(n):
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            break
        got, none = _answer(program, cells, solver, left, len(lay.leaves) > AUTO_MILP_LEAVES)
        if got is None:
            if not out:
                return out, none
            break
        out.append(got)
        chosen = got[0]
        changed = [j for j, i in chosen.items() if i != cells[j].origin]
        if not changed:
            break
        forbidden.append(changed)
        for prog in programs.values():
            prog.forbid(changed)
    return out, False


def _answer(program, cells: dict, solver: str, seconds: float, too_big: bool):
    """The next answer (chosen cells, optimal, gap) or None, and whether none is proven.
    ``too_big``: no hand-over to HiGHS (a program of that many leaves is slower than the
    branch and bound: deep forests)."""
    if solver != "auto":
        return program(solver).solve(seconds)
    t = time.perf_counter()
    got, none = program("bnb").solve(min(seconds, max(AUTO_BNB_SECONDS, AUTO_BNB_SHARE * seconds)))
    if none or (got is not None and got[1]) or seconds - (time.perf_counter() - t) < 0.1 or too_big:
        return got, none
    milp = program("milp")
    rest = seconds - (time.perf_counter() - t)  # building the program took some of it
    if rest < 0.1:
        return got, none
    if got is not None:
        milp.seed(got[0])
    other, none2 = milp.solve(rest)
    if other is None:
        return (got, False) if got is not None else (None, none2)
    if got is None or _distance(cells, other[0]) <= _distance(cells, got[0]) + 1e-12:
        return other, none2
    return got, False


__all__ = ["Cells", "layout", "solve_row", "enumerate_tree", "TreeProgram", "goal_for"]
