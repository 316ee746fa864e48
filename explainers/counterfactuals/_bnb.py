"""Nearest counterfactuals of a tree ensemble by branch and bound over the features' cells.

The same question as the mixed-integer program (:mod:`._trees`), answered by a compiled
search that knows its structure:

- a *box* gives each free feature a contiguous range of its cells (:mod:`._cells`);
- its distance is at least the sum, per feature, of the cheapest cell in its range;
- its outputs are at most, per target condition ``w @ raw >= lower``, the sum over trees of
  the best leaf the box can reach (a leaf is reachable when, at every split on its path,
  some cell of the range goes its way: one look-up in a running count per split);
- a box whose bound misses the target is dropped; a box whose cheapest point reaches the
  target is solved (nothing in it is nearer); any other box is cut in two on its widest range.

Boxes are searched depth first, the nearer half first, against the best answer so far;
when the stack empties, the answer is proven nearest. The search runs in slices of boxes,
so a time limit stops it between slices with the best answer and its gap (the smallest
bound left on the stack).
"""
from __future__ import annotations

import time

import numpy as np
from numba import njit

#: boxes searched per compiled slice (the time limit is checked between slices)
SLICE = 20000
#: deepest the stack may grow (two boxes per cut; cuts per feature ~ log2(cells))
STACK = 1 << 14


@njit(cache=True)
def _cheapest(lo, hi, cost_off, cost, pt):
    total = 0.0
    for f in range(lo.shape[0]):
        best = np.inf
        arg = lo[f]
        for k in range(lo[f], hi[f] + 1):
            c = cost[cost_off[f] + k]
            if c < best:
                best = c
                arg = k
        pt[f] = arg
        total += best
    return total


@njit(cache=True)
def _left_count(cum, off, lo, hi):
    return cum[off + hi + 1] - cum[off + lo]


@njit(cache=True)
def _meets(vals, lower, any_of):
    """Whether outputs ``vals`` meet the target rows: one of them (any_of) or all."""
    for r in range(vals.shape[0]):
        if any_of and vals[r] >= lower[r]:
            return True
        if not any_of and vals[r] < lower[r]:
            return False
    return not any_of


@njit(cache=True)
def _bound_ok(lo, hi, roots, left, right, slot, fixed_left, cum_off, cum, leaf_score, const, lower,
              any_of, ub, stack):
    R = const.shape[0]
    for r in range(R):
        ub[r] = const[r]
    best = np.empty(R)
    for t in range(roots.shape[0]):
        for r in range(R):
            best[r] = -np.inf
        sp = 0
        stack[sp] = roots[t]
        sp += 1
        while sp > 0:
            sp -= 1
            n = stack[sp]
            if left[n] < 0:
                for r in range(R):
                    if leaf_score[n, r] > best[r]:
                        best[r] = leaf_score[n, r]
                continue
            s = slot[n]
            if s < 0:
                stack[sp] = left[n] if fixed_left[n] else right[n]
                sp += 1
                continue
            cnt = _left_count(cum, cum_off[n], lo[s], hi[s])
            if cnt > 0:
                stack[sp] = left[n]
                sp += 1
            if cnt < hi[s] - lo[s] + 1:
                stack[sp] = right[n]
                sp += 1
        for r in range(R):
            ub[r] += best[r]
    return _meets(ub, lower, any_of)


@njit(cache=True)
def _point_ok(pt, roots, left, right, slot, fixed_left, cum_off, cum, leaf_score, const, lower, any_of, val):
    R = const.shape[0]
    for r in range(R):
        val[r] = const[r]
    for t in range(roots.shape[0]):
        n = roots[t]
        while left[n] >= 0:
            s = slot[n]
            if s < 0:
                n = left[n] if fixed_left[n] else right[n]
            elif _left_count(cum, cum_off[n], pt[s], pt[s]) > 0:
                n = left[n]
            else:
                n = right[n]
        for r in range(R):
            val[r] += leaf_score[n, r]
    return _meets(val, lower, any_of)


@njit(cache=True)
def _banned(lo, hi, origin, banned, n_banned):
    for b in range(n_banned):
        all_out = True
        for f in range(lo.shape[0]):
            if banned[b, f] and lo[f] <= origin[f] and origin[f] <= hi[f]:
                all_out = False
                break
        if all_out:
            return True
    return False


@njit(cache=True)
def _search(lo_st, hi_st, lb_st, sp_box, budget, best, best_pt, roots, left, right, slot, fixed_left,
            cum_off, cum, leaf_score, const, lower, any_of, cost_off, cost, origin, banned, n_banned):
    """Search up to ``budget`` boxes from the stack; return (new stack size, boxes searched)."""
    F = lo_st.shape[1]
    pt = np.empty(F, np.int64)
    ub = np.empty(const.shape[0])
    tree_stack = np.empty(left.shape[0] + 1, np.int64)
    sp = sp_box
    done = 0
    while sp > 0 and done < budget:
        sp -= 1
        if lb_st[sp] >= best[0]:
            continue
        done += 1
        lo = lo_st[sp].copy()
        hi = hi_st[sp].copy()
        if n_banned > 0 and _banned(lo, hi, origin, banned, n_banned):
            continue
        if not _bound_ok(lo, hi, roots, left, right, slot, fixed_left, cum_off, cum, leaf_score, const,
                         lower, any_of, ub, tree_stack):
            continue
        lb = _cheapest(lo, hi, cost_off, cost, pt)
        if _point_ok(pt, roots, left, right, slot, fixed_left, cum_off, cum, leaf_score, const, lower,
                     any_of, ub):
            if lb < best[0]:
                best[0] = lb
                best_pt[:] = pt
            continue
        wide = -1
        width = 0
        for f in range(F):
            if hi[f] - lo[f] > width:
                width = hi[f] - lo[f]
                wide = f
        if wide < 0:
            continue
        mid = (lo[wide] + hi[wide]) // 2
        # two halves; the nearer one is pushed last so it is searched first
        a_hi = hi.copy()
        a_hi[wide] = mid
        b_lo = lo.copy()
        b_lo[wide] = mid + 1
        lb_a = _cheapest(lo, a_hi, cost_off, cost, pt)
        lb_b = _cheapest(b_lo, hi, cost_off, cost, pt)
        if sp + 2 > lo_st.shape[0]:
            return -1, done
        if lb_a <= lb_b:
            lo_st[sp], hi_st[sp], lb_st[sp] = b_lo, hi, lb_b
            lo_st[sp + 1], hi_st[sp + 1], lb_st[sp + 1] = lo, a_hi, lb_a
        else:
            lo_st[sp], hi_st[sp], lb_st[sp] = lo, a_hi, lb_a
            lo_st[sp + 1], hi_st[sp + 1], lb_st[sp + 1] = b_lo, hi, lb_b
        sp += 2
    return sp, done


class BoxSearch:
    """The search of one row: the compiled arrays, built once; :meth:`solve` per answer."""

    def __init__(self, ens, cells: dict, goal_rows, any_of: bool, tie: float):
        free = [j for j, c in cells.items() if len(c.values) > 1]
        self.free = free
        self.cells = cells
        slot_of = {j: s for s, j in enumerate(free)}
        n_nodes = len(ens.feature)
        internal = ens.left >= 0
        self.slot = np.full(n_nodes, -1, np.int64)
        self.fixed_left = np.zeros(n_nodes, np.bool_)
        self.cum_off = np.zeros(n_nodes, np.int64)
        chunks, off = [], 0
        for node in np.nonzero(internal)[0]:
            j = int(ens.feature[node])
            c = cells[j]
            way = np.asarray(ens.goes_left(c.coded, np.full(len(c.coded), node)), bool)
            if j in slot_of:
                self.slot[node] = slot_of[j]
                self.cum_off[node] = off
                chunks.append(np.concatenate([[0], np.cumsum(way)]).astype(np.int64))
                off += len(way) + 1
            else:
                self.fixed_left[node] = bool(way[c.origin])
        self.cum = np.concatenate(chunks) if chunks else np.zeros(1, np.int64)
        W = np.asarray([w for w, _ in goal_rows], float).reshape(len(goal_rows), -1)
        self.lower = np.asarray([lo for _, lo in goal_rows], float)
        self.leaf_score = np.ascontiguousarray(ens.scale * (ens.value @ W.T))
        self.const = W @ ens.base
        self.any_of = bool(any_of)
        self.roots = np.asarray(ens.roots, np.int64)
        self.left = np.asarray(ens.left, np.int64)
        self.right = np.asarray(ens.right, np.int64)
        sizes = [len(cells[j].values) for j in free]
        self.cost_off = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if free \
            else np.zeros(0, np.int64)
        self.cost = np.concatenate(
            [cells[j].cost + np.where(np.arange(len(cells[j].cost)) == cells[j].origin, 0.0, tie)
             for j in free]) if free else np.zeros(0)
        self.origin = np.asarray([cells[j].origin for j in free], np.int64)
        self.ncell = np.asarray(sizes, np.int64)
        self.banned = np.zeros((0, len(free)), np.bool_)
        self.boxes = 0

    def forbid(self, changed: list[int]):
        row = np.asarray([j in changed for j in self.free], np.bool_)
        self.banned = np.vstack([self.banned, row[None, :]])

    def solve(self, seconds: float):
        """(chosen cells per feature, proven nearest, gap) or None when nothing reaches the target."""
        F = len(self.free)
        lo_st = np.zeros((STACK, F), np.int64)
        hi_st = np.zeros((STACK, F), np.int64)
        lb_st = np.zeros(STACK)
        hi_st[0] = self.ncell - 1
        lb_st[0] = 0.0
        sp = 1
        best = np.asarray([np.inf])
        best_pt = np.zeros(F, np.int64)
        banned = np.ascontiguousarray(self.banned) if len(self.banned) else np.zeros((1, F), np.bool_)
        args = (best, best_pt, self.roots, self.left, self.right, self.slot, self.fixed_left, self.cum_off,
                self.cum, self.leaf_score, self.const, self.lower, self.any_of, self.cost_off, self.cost,
                self.origin, banned, len(self.banned))
        _search(lo_st, hi_st, lb_st, 0, 0, *args)  # compiles on a first call: not time spent searching
        t0 = time.perf_counter()
        while sp > 0:
            sp, done = _search(lo_st, hi_st, lb_st, sp, SLICE, *args)
            self.boxes += done
            if sp < 0:  # pragma: no cover - the stack holds 2 boxes per cut; cuts are few
                raise RuntimeError("counterfactual search stack overflow")
            if sp > 0 and time.perf_counter() - t0 > seconds:
                break
        proven = sp == 0
        if not np.isfinite(best[0]):
            return None, proven
        if proven:
            gap = 0.0
        else:
            open_lb = lb_st[:sp].min() if sp else best[0]
            gap = max(0.0, (best[0] - open_lb) / max(best[0], 1e-12))
        chosen = {j: c.origin for j, c in self.cells.items()}
        for s, j in enumerate(self.free):
            chosen[j] = int(best_pt[s])
        return (chosen, proven, gap), proven
