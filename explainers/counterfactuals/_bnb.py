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

#: seconds per compiled slice of boxes (the time limit is checked between slices)
SLICE_SECONDS = 0.05
#: the first pass looks for answers nearer than this distance; each next pass allows this many times more
FIRST_CAP = 0.25
CAP_GROWTH = 1.5
#: deepest the stack may grow (two boxes per cut; cuts per feature ~ log2(cells))
STACK = 1 << 14


@njit(cache=True)
def _cheapest(lo, hi, cost_off, cost, origin, unimodal, pt):
    """The box's nearest point (its cells in ``pt``) and its distance."""
    total = 0.0
    for f in range(lo.shape[0]):
        if unimodal[f]:
            m = origin[f]
            arg = m if lo[f] <= m <= hi[f] else (hi[f] if hi[f] < m else lo[f])
            best = cost[cost_off[f] + arg]
        else:
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
def _meets(vals, lower, any_of):
    """Whether outputs ``vals`` meet the target rows: one of them (any_of) or all."""
    for r in range(vals.shape[0]):
        if any_of and vals[r] >= lower[r]:
            return True
        if not any_of and vals[r] < lower[r]:
            return False
    return not any_of


@njit(cache=True)
def _cmin(s, a, b, cost_off, cost, origin, unimodal):
    """The cheapest cell of slot ``s`` in cells ``a..b``: O(1) where the costs fall to the
    row's own cell and rise after it (every numeric and categorical feature), else a scan."""
    o = cost_off[s]
    if unimodal[s]:
        m = origin[s]
        if a <= m and m <= b:
            return cost[o + m]
        return cost[o + b] if b < m else cost[o + a]
    best = np.inf
    for k in range(a, b + 1):
        if cost[o + k] < best:
            best = cost[o + k]
    return best


@njit(cache=True)
def _bound_ok(lo, hi, budget, roots, left, right, slot, fixed_left, cum_off, cum, kind, cut, leaf_score,
              const, lower, any_of, ub, cost_off, cost, origin, unimodal, work):
    """Whether the box can reach the target with a point less than ``budget`` farther than its
    cheapest point: per tree, the best leaf whose region the box reaches within the budget
    (the extra distance of a leaf is what narrowing each feature to the leaf's cells costs
    over the box's cheapest point; a relaxation, as each tree may spend the whole budget)."""
    R = const.shape[0]
    for r in range(R):
        ub[r] = const[r]
    best = np.empty(R)
    st_node, st_depth, st_slot, st_lo, st_hi, log_slot, log_lo, log_hi = work
    st_acc = np.empty(st_node.shape[0])
    cur_lo = lo.copy()
    cur_hi = hi.copy()
    for t in range(roots.shape[0]):
        for r in range(R):
            best[r] = -np.inf
        top = 0
        st_node[0] = roots[t]
        st_depth[0] = 0
        st_slot[0] = -1
        st_acc[0] = 0.0
        sp = 1
        while sp > 0:
            sp -= 1
            n = st_node[sp]
            d = st_depth[sp]
            acc = st_acc[sp]
            while top > d:  # undo the narrowing of the nodes left behind
                top -= 1
                if log_slot[top] >= 0:
                    cur_lo[log_slot[top]] = log_lo[top]
                    cur_hi[log_slot[top]] = log_hi[top]
            s = st_slot[sp]
            log_slot[top] = s
            if s >= 0:
                log_lo[top] = cur_lo[s]
                log_hi[top] = cur_hi[s]
                cur_lo[s] = st_lo[sp]
                cur_hi[s] = st_hi[sp]
            top += 1
            if left[n] < 0:
                for r in range(R):
                    if leaf_score[n, r] > best[r]:
                        best[r] = leaf_score[n, r]
                continue
            s = slot[n]
            if s < 0:
                st_node[sp] = left[n] if fixed_left[n] else right[n]
                st_depth[sp] = top
                st_slot[sp] = -1
                st_acc[sp] = acc
                sp += 1
                continue
            a = cur_lo[s]
            b = cur_hi[s]
            if kind[n] == 0:  # a split whose left cells are no one stretch: reachability only
                cnt = cum[cum_off[n] + b + 1] - cum[cum_off[n] + a]
                for side in range(2):
                    if (side == 0 and cnt < b - a + 1) or (side == 1 and cnt > 0):
                        st_node[sp] = right[n] if side == 0 else left[n]
                        st_depth[sp] = top
                        st_slot[sp] = -1
                        st_acc[sp] = acc
                        sp += 1
                continue
            here = _cmin(s, a, b, cost_off, cost, origin, unimodal)
            c = cut[n]
            for side in range(2):  # side 0: cells below the cut, side 1: from the cut on
                na, nb = (a, min(b, c - 1)) if side == 0 else (max(a, c), b)
                if na > nb:
                    continue
                extra = acc + _cmin(s, na, nb, cost_off, cost, origin, unimodal) - here
                if extra > budget:
                    continue
                goes_left = (side == 0) == (kind[n] == 1)
                st_node[sp] = left[n] if goes_left else right[n]
                st_depth[sp] = top
                st_slot[sp] = s
                st_lo[sp] = na
                st_hi[sp] = nb
                st_acc[sp] = extra
                sp += 1
        while top > 0:
            top -= 1
            if log_slot[top] >= 0:
                cur_lo[log_slot[top]] = log_lo[top]
                cur_hi[log_slot[top]] = log_hi[top]
        for r in range(R):
            ub[r] += best[r]
    return _meets(ub, lower, any_of)


@njit(cache=True)
def _point_ok(pt, roots, left, right, slot, fixed_left, cum_off, cum, kind, cut, leaf_score, const, lower,
              any_of, val):
    R = const.shape[0]
    for r in range(R):
        val[r] = const[r]
    for t in range(roots.shape[0]):
        n = roots[t]
        while left[n] >= 0:
            s = slot[n]
            if s < 0:
                n = left[n] if fixed_left[n] else right[n]
            elif kind[n] == 1:
                n = left[n] if pt[s] < cut[n] else right[n]
            elif kind[n] == 2:
                n = left[n] if pt[s] >= cut[n] else right[n]
            elif cum[cum_off[n] + pt[s] + 1] > cum[cum_off[n] + pt[s]]:
                n = left[n]
            else:
                n = right[n]
        for r in range(R):
            val[r] += leaf_score[n, r]
    return _meets(val, lower, any_of)


@njit(cache=True)
def _banned(lo, hi, origin, banned, n_banned):
    """Whether the box changes every feature of an earlier answer (diversity forbids it); where
    only one feature of an earlier answer can still keep its value, it is pinned to it."""
    for b in range(n_banned):
        keep = -1
        n_keep = 0
        for f in range(lo.shape[0]):
            if banned[b, f] and lo[f] <= origin[f] and origin[f] <= hi[f]:
                keep = f
                n_keep += 1
                if n_keep > 1:
                    break
        if n_keep == 0:
            return True
        if n_keep == 1:
            lo[keep] = origin[keep]
            hi[keep] = origin[keep]
    return False


@njit(cache=True)
def _search(lo_st, hi_st, lb_st, sp_box, budget, best, best_pt, roots, left, right, slot, fixed_left,
            cum_off, cum, kind, cut, leaf_score, const, lower, any_of, cost_off, cost, origin, unimodal,
            banned, n_banned):
    """Search up to ``budget`` boxes from the stack; return (new stack size, boxes searched)."""
    F = lo_st.shape[1]
    pt = np.empty(F, np.int64)
    ub = np.empty(const.shape[0])
    m = left.shape[0] + 1
    work = (np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64),
            np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64))
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
        lb = _cheapest(lo, hi, cost_off, cost, origin, unimodal, pt)
        if lb >= best[0]:
            continue
        if _point_ok(pt, roots, left, right, slot, fixed_left, cum_off, cum, kind, cut, leaf_score, const,
                     lower, any_of, ub):
            best[0] = lb
            best_pt[:] = pt
            continue
        room = best[0] - lb + 1e-9 * (1.0 + lb) if np.isfinite(best[0]) else np.inf
        if not _bound_ok(lo, hi, room, roots, left, right, slot, fixed_left, cum_off, cum, kind, cut,
                         leaf_score, const, lower, any_of, ub, cost_off, cost, origin, unimodal, work):
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
        lb_a = _cheapest(lo, a_hi, cost_off, cost, origin, unimodal, pt)
        lb_b = _cheapest(b_lo, hi, cost_off, cost, origin, unimodal, pt)
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


@njit(cache=True)
def _slack(pt, roots, left, right, slot, fixed_left, cum_off, cum, kind, cut, leaf_score, const, lower, any_of,
           val):
    """How far the point's outputs are past the target (>= 0: it is reached)."""
    _point_ok(pt, roots, left, right, slot, fixed_left, cum_off, cum, kind, cut, leaf_score, const, lower,
              any_of, val)
    out = -np.inf if any_of else np.inf
    for r in range(val.shape[0]):
        d = val[r] - lower[r]
        out = max(out, d) if any_of else min(out, d)
    return out


@njit(cache=True)
def _banned_point(pt, origin, banned, n_banned):
    """Whether the point changes every feature of an earlier answer (diversity forbids it)."""
    for b in range(n_banned):
        every = True
        for f in range(pt.shape[0]):
            if banned[b, f] and pt[f] == origin[f]:
                every = False
                break
        if every:
            return True
    return False


@njit(cache=True)
def _greedy(pt, ncell, roots, left, right, slot, fixed_left, cum_off, cum, kind, cut, leaf_score, const, lower,
            any_of, cost_off, cost, banned, n_banned, steps):
    """A first answer from the row's own cells (``pt``, changed in place): each step takes the
    one-feature move that reaches the target at least cost, else the one that gains the most
    per unit of cost; then each changed feature is moved back toward its own value as far as
    the target holds. Returns the answer's distance, or inf when the moves stall."""
    F = pt.shape[0]
    origin = pt.copy()
    val = np.empty(const.shape[0])
    now = _slack(pt, roots, left, right, slot, fixed_left, cum_off, cum, kind, cut, leaf_score, const, lower,
                 any_of, val)
    for _ in range(steps):
        if now >= 0:
            break
        reach_f, reach_k, reach_c = -1, -1, np.inf
        gain_f, gain_k, gain_r = -1, -1, 0.0
        for f in range(F):
            keep = pt[f]
            base = cost[cost_off[f] + keep]
            for k in range(ncell[f]):
                if k == keep:
                    continue
                pt[f] = k
                if n_banned > 0 and _banned_point(pt, origin, banned, n_banned):
                    continue
                sl = _slack(pt, roots, left, right, slot, fixed_left, cum_off, cum, kind, cut, leaf_score, const,
                            lower, any_of, val)
                dc = cost[cost_off[f] + k] - base
                if sl >= 0:
                    if dc < reach_c:
                        reach_f, reach_k, reach_c = f, k, dc
                elif sl > now:
                    r = (sl - now) / max(dc, 1e-12)
                    if r > gain_r:
                        gain_f, gain_k, gain_r = f, k, r
            pt[f] = keep
        if reach_f >= 0:
            pt[reach_f] = reach_k
        elif gain_f >= 0:
            pt[gain_f] = gain_k
        else:
            return np.inf
        now = _slack(pt, roots, left, right, slot, fixed_left, cum_off, cum, kind, cut, leaf_score, const, lower,
                     any_of, val)
    if now < 0:
        return np.inf
    for f in range(F):  # back toward the row's own value, nearest cell first, while the target holds
        if pt[f] == origin[f]:
            continue
        keep = pt[f]
        step = 1 if keep > origin[f] else -1
        k = origin[f]
        while k != keep:
            pt[f] = k
            if not (n_banned > 0 and _banned_point(pt, origin, banned, n_banned)) and _slack(
                    pt, roots, left, right, slot, fixed_left, cum_off, cum, kind, cut, leaf_score, const, lower,
                    any_of, val) >= 0:
                break
            k += step
        pt[f] = k
    total = 0.0
    for f in range(F):
        total += cost[cost_off[f] + pt[f]]
    return total


def _routing(ens, coded: np.ndarray, nodes: np.ndarray):
    """How each split of ``nodes`` routes a feature's cells (points ``coded``, as the trees
    see them): (kind, cut, [(node, way)] for the splits of kind 0). Kind 1: the cells going
    left are the first ``cut``; 2: those from ``cut`` on; 0: neither (``way``, per cell).

    A plain threshold split on cells in increasing order sends a prefix left: its cut is a
    binary search. Any other split (categorical sets, zero read as missing, an empty cell
    among the points) is read cell by cell from the trees' own rule, in chunks."""
    kind = np.zeros(len(nodes), np.int64)
    cut = np.zeros(len(nodes), np.int64)
    ways = []
    C = len(coded)
    plain = ens.cat_start[nodes] < 0
    if not (np.all(np.isfinite(coded)) and np.all(np.diff(coded) > 0)):
        plain[:] = False
    kind[plain] = 1
    cut[plain] = np.searchsorted(coded, ens.threshold[nodes[plain]], side="right")
    rest = np.flatnonzero(~plain)
    step = max(1, 2_000_000 // max(C, 1))
    for i in range(0, len(rest), step):
        part = rest[i:i + step]
        W = np.asarray(ens.goes_left(np.tile(coded, len(part)), np.repeat(nodes[part], C)), bool)
        W = W.reshape(len(part), C)
        k = W.sum(axis=1)
        pos = np.arange(C)[None, :]
        pre = (W == (pos < k[:, None])).all(axis=1)
        suf = (W == (pos >= C - k[:, None])).all(axis=1)
        kind[part] = np.where(pre, 1, np.where(suf, 2, 0))
        cut[part] = np.where(pre, k, np.where(suf, C - k, 0))
        ways.extend((int(nodes[q]), W[r]) for r, q in enumerate(part) if not (pre[r] or suf[r]))
    return kind, cut, ways


def _unimodal(cost: np.ndarray, m: int) -> bool:
    """Whether the costs fall to cell ``m`` (the cheapest) and rise after it."""
    return bool(np.all(np.diff(cost[:m + 1]) <= 0) and np.all(np.diff(cost[m:]) >= 0)
                and cost[m] <= cost.min())


class BoxSearch:
    """The search of one row: the compiled arrays, built once; :meth:`solve` per answer."""

    def __init__(self, ens, cells: dict, goal_rows, any_of: bool, tie: float):
        free = [j for j, c in cells.items() if len(c.values) > 1]
        self.free = free
        self.cells = cells
        slot_of = {j: s for s, j in enumerate(free)}
        n_nodes = len(ens.feature)
        self.slot = np.full(n_nodes, -1, np.int64)
        self.fixed_left = np.zeros(n_nodes, np.bool_)
        self.cum_off = np.zeros(n_nodes, np.int64)
        self.kind = np.zeros(n_nodes, np.int64)  # 1: the left cells are a prefix, 2: a suffix, 0: neither
        self.cut = np.zeros(n_nodes, np.int64)   # where the prefix ends / the suffix starts
        chunks, off = [np.zeros(1, np.int64)], 1
        internal = np.flatnonzero(ens.left >= 0)
        on = ens.feature[internal]
        for j, c in cells.items():
            nodes = internal[on == j]
            if not len(nodes):
                continue
            if j not in slot_of:
                self.fixed_left[nodes] = ens.goes_left(np.full(len(nodes), c.coded[c.origin]), nodes)
                continue
            self.slot[nodes] = slot_of[j]
            kind, cut, ways = _routing(ens, c.coded, nodes)
            self.kind[nodes], self.cut[nodes] = kind, cut
            for node, way in ways:  # the few splits whose left cells are no one stretch
                self.cum_off[node] = off
                chunks.append(np.concatenate([[0], np.cumsum(way)]).astype(np.int64))
                off += len(way) + 1
        self.cum = np.concatenate(chunks)
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
        self.unimodal = np.asarray([_unimodal(self.cost[o:o + k], m) for o, k, m in
                                    zip(self.cost_off, sizes, self.origin)], np.bool_)
        self.ncell = np.asarray(sizes, np.int64)
        self.banned = np.zeros((0, len(free)), np.bool_)
        self.boxes = 0

    def _run(self, lo_st, hi_st, lb_st, args, t0: float, seconds: float):
        """Search the stack in slices until it empties or the time is up: (stack size, stopped)."""
        sp, size = 1, 256
        while sp > 0:
            t = time.perf_counter()
            sp, done = _search(lo_st, hi_st, lb_st, sp, size, *args)
            self.boxes += done
            if sp < 0:  # pragma: no cover - the stack holds 2 boxes per cut; cuts are few
                raise RuntimeError("counterfactual search stack overflow")
            now = time.perf_counter()
            if sp > 0 and now - t0 > seconds:
                return sp, True
            if done == size:  # slices of about SLICE_SECONDS, so the time limit is checked often
                size = int(min(max(size * SLICE_SECONDS / max(now - t, 1e-6), 64), 1 << 20))
        return sp, False

    def _routes(self) -> tuple:
        """The trees, their routing of the cells and the target, as the compiled searches take them."""
        return (self.roots, self.left, self.right, self.slot, self.fixed_left, self.cum_off, self.cum, self.kind,
                self.cut, self.leaf_score, self.const, self.lower, self.any_of)

    def warm(self):
        """Compile the searches (a first call in a process), so that is not time spent searching."""
        F = len(self.free)
        box = np.zeros((1, F), np.int64)
        no = np.zeros((1, F), np.bool_)
        _search(box, box, np.zeros(1), 0, 0, np.asarray([np.inf]), np.zeros(F, np.int64), *self._routes(),
                self.cost_off, self.cost, self.origin, self.unimodal, no, 0)
        _greedy(self.origin.copy(), self.ncell, *self._routes(), self.cost_off, self.cost, no, 0, 0)

    def forbid(self, changed: list[int]):
        row = np.asarray([j in changed for j in self.free], np.bool_)
        self.banned = np.vstack([self.banned, row[None, :]])

    def solve(self, seconds: float):
        """(chosen cells per feature, proven nearest, gap) or None when nothing reaches the target."""
        F = len(self.free)
        lo_st = np.zeros((STACK, F), np.int64)
        hi_st = np.zeros((STACK, F), np.int64)
        lb_st = np.zeros(STACK)
        best = np.asarray([np.inf])
        best_pt = np.zeros(F, np.int64)
        banned = np.ascontiguousarray(self.banned) if len(self.banned) else np.zeros((1, F), np.bool_)
        args = (best, best_pt, *self._routes(), self.cost_off, self.cost, self.origin, self.unimodal, banned,
                len(self.banned))
        t0 = time.perf_counter()
        # a first answer, quickly: greedy moves of one feature at a time (inf when they stall)
        g_pt = self.origin.copy()
        g_dist = _greedy(g_pt, self.ncell, *self._routes(), self.cost_off, self.cost, banned, len(self.banned),
                         4 * F + 8) if F else np.inf
        far = float(sum(self.cost[o:o + k].max() for o, k in zip(self.cost_off, self.ncell))) if F else 0.0
        cap = FIRST_CAP
        while True:
            # a pass: every box nearer than ``cap`` (an answer found lowers it); the bound's
            # budget makes a small cap cheap, and a pass that finds an answer proves it nearest.
            # The last pass starts from the greedy answer (or, without one, from no cap at all).
            last = cap >= g_dist or cap > far
            cap = g_dist if last else cap
            best[0] = cap
            if last and np.isfinite(g_dist):
                best_pt[:] = g_pt
            hi_st[0] = self.ncell - 1
            lo_st[0] = 0
            lb_st[0] = 0.0
            sp, stopped = self._run(lo_st, hi_st, lb_st, args, t0, seconds)
            if best[0] < cap or last or stopped:
                break
            cap *= CAP_GROWTH
        proven = sp == 0
        if not (best[0] < cap or (last and np.isfinite(g_dist))):
            if stopped and np.isfinite(g_dist):  # the time ran out before the passes reached it
                best[0] = g_dist
                best_pt[:] = g_pt
            else:
                return None, proven
        if proven:
            gap = 0.0
        else:
            open_lb = min(lb_st[:sp].min(), cap) if sp else min(best[0], cap)
            gap = max(0.0, (best[0] - open_lb) / max(best[0], 1e-12))
        chosen = {j: c.origin for j, c in self.cells.items()}
        for s, j in enumerate(self.free):
            chosen[j] = int(best_pt[s])
        return (chosen, proven, gap), proven
