"""Exact interventional SHAP values of a boosting classifier's probabilities.

A boosting classifier's trees add up to a margin; its probability is the
sigmoid (or softmax) of that sum, which no tree-by-tree recursion can split.
The interventional game on probabilities is still a mean over background rows
b of one game per pair (x, b): ``v_b(S) = sigma(margin(x_S, b_~S))``, and
Shapley values are linear in the game, so ``phi = mean_b phi(v_b)``.

In the game of one pair only the features on which x and b take different
branches somewhere on the trees' hybrid paths are players; the others are null
players (exactly 0). With d such features a pair's game has ``2**d``
coalitions: each tree, walked once for the pair, following both branches
where x and b part (a feature keeps the side it took higher up), leaves a
record per reachable leaf (the features that must come from x, those that must
come from b); each coalition's margin is the sum of the records it is
consistent with, and the Shapley values follow from the definition on the
``2**d`` probabilities. That is exact, and polynomial in the trees: the cost
grows only with ``2**d``, which :data:`MAX_PAIR_BITS` caps (a pair with more
players is reported, not approximated). shap's ``model_output="probability"``
instead rescales the margin's attributions of each pair to the probability
difference; that is not the Shapley value of this game once a pair has two or
more players.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..trees.walks import goes_left

#: most players one (row, background row) game may have: its 2**d coalitions
#: are all evaluated (2**16 = 65,536 per pair)
MAX_PAIR_BITS = 16


def shapley_weights(max_bits: int) -> np.ndarray:
    """``W[d, s] = s! (d - s - 1)! / d!``: the weight of a coalition of size s
    among d players in player j's marginal contribution (j not in it)."""
    W = np.zeros((max_bits + 1, max_bits + 1))
    for d in range(1, max_bits + 1):
        w = 1.0 / d  # s = 0: 0! (d-1)! / d!
        for s in range(d):
            W[d, s] = w
            w = w * (s + 1) / (d - s - 1) if s + 1 < d else w
    return W


@njit(cache=True, nogil=True, inline="always")
def _walk_pair(gx, gb, masked, t, node_offsets, feature, left, right, feat_bit, dfeat, nd,
               max_bits, st_node, st_in, st_out, rec_in, rec_out, rec_leaf,
               n_rec):  # pragma: no cover - compiled
    """Records of tree t for the pair (x, b), from the sides x and b take at each node
    (``gx``, ``gb``: 1 for left); new players get the next bits.

    Returns the record count, or -1 when the pair has more than ``max_bits`` players.
    """
    sp = 1
    st_node[0] = node_offsets[t]
    st_in[0] = 0
    st_out[0] = 0
    while sp > 0:
        sp -= 1
        node = st_node[sp]
        inm = st_in[sp]
        outm = st_out[sp]
        while left[node] >= 0:
            xl = gx[node]
            bl = gb[node]
            if xl == bl:
                node = left[node] if xl else right[node]
                continue
            f = feature[node]
            if masked[f]:
                node = left[node] if bl else right[node]
                continue
            bit = feat_bit[f]
            if bit < 0:
                if nd[0] >= max_bits:
                    return -1
                bit = nd[0]
                feat_bit[f] = bit
                dfeat[bit] = f
                nd[0] += 1
            one = np.int64(1) << bit
            if inm & one:
                node = left[node] if xl else right[node]
            elif outm & one:
                node = left[node] if bl else right[node]
            else:
                st_node[sp] = left[node] if bl else right[node]  # the b side, for later
                st_in[sp] = inm
                st_out[sp] = outm | one
                sp += 1
                node = left[node] if xl else right[node]
                inm = inm | one
        rec_in[n_rec] = inm
        rec_out[n_rec] = outm
        rec_leaf[n_rec] = node
        n_rec += 1
    return n_rec


@njit(cache=True, nogil=True)
def _margins(d, n_rec, rec_in, rec_out, rec_leaf, rec_tree, tree_output, value, scale, base,
             m, pop):  # pragma: no cover - compiled
    """``m[S]``: the margin of every coalition S of the d players, from the records.

    A record (players A from x, B from the background, leaf value w) adds
    ``w [A subset of S] [B disjoint from S]`` to each coalition. Its Moebius coefficients
    are ``w (-1)**|C|`` on ``A | C`` for every C within B (and 0 elsewhere); the records'
    coefficients are summed, and one sum over subsets (d passes over the 2**d coalitions)
    turns them into the margins: ``m[S] = sum of the coefficients of the subsets of S``.
    """
    n_raw = m.shape[0]
    n_s = np.int64(1) << d
    for c in range(n_raw):
        for s in range(n_s):
            m[c, s] = 0.0
        m[c, 0] = base[c]
    for r in range(n_rec):
        node = rec_leaf[r]
        col = tree_output[rec_tree[r]]
        c0 = col if col >= 0 else 0
        c1 = col + 1 if col >= 0 else n_raw
        inm = rec_in[r]
        outm = rec_out[r]
        sub = outm
        while True:
            s = inm | sub
            sign = -scale if pop[sub] & 1 else scale
            for c in range(c0, c1):
                m[c, s] += sign * value[node, c]
            if sub == 0:
                break
            sub = (sub - 1) & outm
    for c in range(n_raw):  # the sum over subsets, one player at a time (contiguous runs)
        mc = m[c]
        one = np.int64(1)
        while one < n_s:
            for hi in range(0, n_s, 2 * one):
                for lo in range(hi, hi + one):
                    mc[lo + one] += mc[lo]
            one <<= 1


@njit(cache=True, nogil=True)
def proba_rows(X, rows, bg_left, masked, node_offsets, feature, threshold, left, right, missing_left,
               cat_start, cat_bits, value, tree_output, base, scale, softmax, max_bits, max_depth,
               W, out, pred, basev, players):  # pragma: no cover - compiled
    """Probability-game SHAP values of ``rows`` of X, accumulated into ``out`` (n, p, k),
    ``pred`` and ``basev`` (n, k): k = 2 columns (1 - p, p) for a sigmoid, else the
    classes. ``masked`` (n, p): features out of the game (they follow the background).
    ``players[row]``: the most players of the row's pairs, or -1 once a pair has more
    than ``max_bits`` (the row is then left unfinished)."""
    n_trees = node_offsets.shape[0] - 1
    n_raw = value.shape[1]
    k_out = out.shape[2]
    p = X.shape[1]
    B = bg_left.shape[0]
    inv_b = 1.0 / B
    n_nodes = left.shape[0]
    gx = np.zeros(n_nodes, np.uint8)
    S = 2 * (max_depth + 2)
    st_node = np.empty(S, np.int64)
    st_in = np.empty(S, np.int64)
    st_out = np.empty(S, np.int64)
    rec_in = np.empty(n_nodes, np.int64)
    rec_out = np.empty(n_nodes, np.int64)
    rec_leaf = np.empty(n_nodes, np.int64)
    rec_tree = np.empty(n_nodes, np.int64)
    feat_bit = np.full(p, -1, np.int64)
    dfeat = np.zeros(max_bits + 1, np.int64)
    nd = np.zeros(1, np.int64)
    full_n = np.int64(1) << max_bits
    m = np.empty((n_raw, full_n))
    v = np.empty((k_out, full_n))
    wv = np.empty(full_n)
    pop = np.zeros(full_n, np.int64)
    for s in range(1, full_n):
        pop[s] = pop[s >> 1] + (s & 1)
    phi = np.zeros((max_bits, k_out))
    for ri in range(rows.shape[0]):
        row = rows[ri]
        x = X[row]
        mrow = masked[row]
        for node in range(n_nodes):
            f = feature[node]
            if f >= 0:
                gx[node] = goes_left(x[f], node, threshold, missing_left, cat_start, cat_bits)
        most = 0
        for bi in range(B):
            gb = bg_left[bi]
            nd[0] = 0
            n_rec = 0
            for t in range(n_trees):
                start = n_rec
                n_rec = _walk_pair(gx, gb, mrow, t, node_offsets, feature, left, right, feat_bit,
                                   dfeat, nd, max_bits, st_node, st_in, st_out, rec_in, rec_out,
                                   rec_leaf, n_rec)
                if n_rec < 0:
                    break
                for r in range(start, n_rec):
                    rec_tree[r] = t
            d = nd[0]
            for j in range(d):
                feat_bit[dfeat[j]] = -1
            if n_rec < 0:
                most = -1
                break
            most = max(most, d)
            n_s = np.int64(1) << d
            full = n_s - 1
            # the margin of every coalition (see _margins)
            _margins(d, n_rec, rec_in, rec_out, rec_leaf, rec_tree, tree_output, value, scale, base,
                     m, pop)
            # the game's values: probabilities of each coalition
            if softmax:
                for s in range(n_s):
                    top = -np.inf
                    for c in range(n_raw):
                        if m[c, s] > top:
                            top = m[c, s]
                    tot = 0.0
                    for c in range(n_raw):
                        e = np.exp(m[c, s] - top)
                        v[c, s] = e
                        tot += e
                    for c in range(n_raw):
                        v[c, s] /= tot
            else:
                v0 = v[0]
                v1 = v[1]
                m0 = m[0]
                for s in range(n_s):
                    z = m0[s]
                    if z >= 0:
                        q = 1.0 / (1.0 + np.exp(-z))
                    else:
                        e = np.exp(z)
                        q = e / (1.0 + e)
                    v0[s] = 1.0 - q
                    v1[s] = q
            for c in range(k_out):
                basev[row, c] += inv_b * v[c, 0]
                pred[row, c] += inv_b * v[c, full]
            if d == 0:
                continue
            # phi_j = sum over S without j of W(|S|) (v(S + j) - v(S)), in contiguous runs;
            # a sigmoid's two columns are 1 - p and p: the first's values are the second's negated
            for s in range(n_s):
                wv[s] = W[d, pop[s]]
            c_lo = 0 if softmax else 1
            for c in range(c_lo, k_out):
                vc = v[c]
                for j in range(d):
                    one = np.int64(1) << j
                    acc = 0.0
                    for hi in range(0, n_s, 2 * one):
                        for lo in range(hi, hi + one):
                            acc += wv[lo] * (vc[lo + one] - vc[lo])
                    phi[j, c] = acc
            for j in range(d):
                f = dfeat[j]
                if not softmax:
                    phi[j, 0] = -phi[j, 1]
                for c in range(k_out):
                    out[row, f, c] += inv_b * phi[j, c]
        players[row] = most


@njit(cache=True, nogil=True)
def background_sides(bg, feature, threshold, missing_left, cat_start, cat_bits):  # pragma: no cover
    """(B, n_nodes) uint8: 1 where background row b goes left at the node."""
    out = np.zeros((bg.shape[0], feature.shape[0]), np.uint8)
    for b in range(bg.shape[0]):
        for node in range(feature.shape[0]):
            f = feature[node]
            if f >= 0:
                out[b, node] = goes_left(bg[b, f], node, threshold, missing_left, cat_start, cat_bits)
    return out


class TooManyPlayers(ValueError):
    """A (row, background row) pair parts on more features than the exact game allows."""


def probability_values(explainer, Xp: np.ndarray, mask: np.ndarray, bg: np.ndarray, tick,
                       max_bits: int | None = None):
    """(values (n, p, k), base (n, k), predictions (n, k), players (n,)) of the probability
    game of a TreeShap ``explainer`` whose trees add up to a sigmoid or softmax margin.

    Raises TooManyPlayers (with the row) where a pair has more than ``max_bits`` players.
    """
    nd = explainer._nodes
    ens = explainer.ensemble
    n, p = Xp.shape
    k = ens.n_outputs
    out = np.zeros((n, p, k))
    pred = np.zeros((n, k))
    basev = np.zeros((n, k))
    players = np.zeros(n, np.int64)
    max_bits = MAX_PAIR_BITS if max_bits is None else int(max_bits)
    W = shapley_weights(max_bits)
    masked = np.ascontiguousarray(mask, dtype=np.bool_)
    Xp = np.ascontiguousarray(Xp, np.float64)
    bg = np.ascontiguousarray(bg, np.float64)
    base = np.ascontiguousarray(ens.base, np.float64)
    softmax = ens.transform == "softmax"

    bg_left = background_sides(bg, nd["feature"], nd["threshold"], nd["missing_left"],
                               nd["cat_start"], nd["cat_bits"])

    def run(chunk: np.ndarray) -> int:
        proba_rows(Xp, chunk, bg_left, masked, nd["node_offsets"], nd["feature"], nd["threshold"],
                   nd["left"], nd["right"], nd["missing_left"], nd["cat_start"], nd["cat_bits"],
                   nd["value"], nd["tree_output"], base, float(ens.scale), softmax, int(max_bits),
                   int(ens.max_depth), W, out, pred, basev, players)
        return len(chunk)

    rows = np.arange(n, dtype=np.int64)
    per = max(1, min(64, -(-n // max(1, explainer.n_jobs))))
    chunks = [rows[s : s + per] for s in range(0, n, per)]
    work = float(n) * len(bg) * explainer._n_leaves * 4
    explainer._map(lambda ch: tick(run(ch)), chunks, work)
    over = np.flatnonzero(players < 0)
    if len(over):
        raise TooManyPlayers(int(over[0]))
    return out, basev, pred, players
