"""The Importance page's cost before work (issue #29): holdout permutation follows a line
measured on the computation itself (two probes of one repeat), out-of-bag permutation times
a few trees and counts the rest, and the page starts on the rows that fit in about 3 s.
The clock is replaced by one that advances with the work done, so the checks count work,
not time."""
import importlib

import pytest

from dashboard.state import costs
from dashboard.state.cache import ResultCache
from dashboard.state.context import demo_context
from tests.views.test_tree_costs import _Clock  # a clock that moves only with the work counted

imp_state = importlib.import_module("dashboard.state.importance")  # the package's `importance` is a function


@pytest.fixture
def fresh_cache(monkeypatch):
    cache = ResultCache()
    monkeypatch.setattr(imp_state, "result_cache", lambda: cache)
    monkeypatch.setattr(costs, "result_cache", lambda: cache)
    return cache


def test_permutation_line_from_three_probes(monkeypatch, fresh_cache):
    """permutation_importance costs 0.2 s a call plus, for each of its p x repeats + 1 copies,
    0.001 s and 0.0002 s per row on the fake clock: the three probes find those parts, and the
    estimate of five repeats counts 5p + 1 copies."""
    import explainers.importance as imp

    ctx = demo_context("diabetes_forest")
    p = ctx.X.shape[1]
    clock, calls = _Clock(), []
    real = imp.permutation_importance

    def permutation_importance(model, X, y, **kw):
        calls.append((len(X), kw["n_repeats"]))
        clock.now += 0.2 + (p * kw["n_repeats"] + 1) * (0.001 + 0.0002 * len(X))
        return real(model, X, y, **kw)

    monkeypatch.setattr(imp, "permutation_importance", permutation_importance)
    monkeypatch.setattr(imp_state, "time", clock)
    monkeypatch.setattr(imp_state, "oob_seconds", lambda ctx: 0.0)
    fixed, per_row = imp_state.permutation_line(ctx)
    held = len(imp_state.split_rows(ctx)[1][0])  # every held-out row has a target here
    small, big = imp_state.PERM_PROBE_ROWS[0], min(held, imp_state.PERM_PROBE_ROWS[1])
    # a warm-up, then the best of two of each probe
    assert calls == [(small, 1)] * 3 + [(big, 1)] * 2 + [(small, imp_state.PERM_PROBE_REPEATS)] * 2
    assert fixed == pytest.approx(0.2 + (p + 1) * 0.001) and per_row == pytest.approx((p + 1) * 0.0002)
    assert imp_state.permutation_line(ctx, n_repeats=5) == pytest.approx((0.2 + (5 * p + 1) * 0.001,
                                                                          (5 * p + 1) * 0.0002))
    assert len(calls) == 7  # measured once

    cost, fits = imp_state.importance_cost(ctx, ["permutation"], 5, 1000)
    assert cost == pytest.approx(0.2 + (5 * p + 1) * (0.001 + 0.0002 * min(1000, held)))
    assert fits == 1000 or 0.2 + (5 * p + 1) * (0.001 + 0.0002 * min(fits + 50, held)) > costs.SLOW_VIEW_S


def test_oob_probe_times_four_trees_and_counts_the_rest(monkeypatch, fresh_cache):
    """Each tree costs 1 s on the fake clock (the set-up 2 s more): the probe stops after the
    first tree and OOB_PROBE_TREES more, and counts the forest's other trees at their pace."""
    import explainers.importance as imp

    ctx = demo_context("diabetes_forest")
    n_trees = len(ctx.model.estimators_)
    clock, seen = _Clock(), []
    real = imp.oob_permutation_importance

    def oob_permutation_importance(model, X, y, progress=None, **kw):
        clock.now += 2.0  # the set-up: the training rows through the model's input

        def counted(done, total):
            clock.now += 1.0
            seen.append(done)
            progress(done, total)

        return real(model, X, y, progress=counted, **kw)

    monkeypatch.setattr(imp, "oob_permutation_importance", oob_permutation_importance)
    monkeypatch.setattr(imp_state, "time", clock)
    assert n_trees > imp_state.OOB_PROBE_TREES + 1
    seconds = imp_state.oob_seconds(ctx)
    assert seen == list(range(1, imp_state.OOB_PROBE_TREES + 2))
    assert seconds == pytest.approx(2.0 + n_trees)
    # the page's estimate counts it whatever the rows
    assert imp_state.importance_cost(ctx, ["oob"], 5, 50)[0] == pytest.approx(2.0 + n_trees)


def test_oob_probe_costs_nothing_where_the_method_does_not_apply(fresh_cache):
    ctx = demo_context("diabetes_linear")
    assert imp_state.oob_seconds(ctx) == 0.0


def test_default_rows_fit_in_three_seconds(monkeypatch, fresh_cache):
    ctx = demo_context("diabetes_forest")
    held = len(imp_state.split_rows(ctx)[1][0])
    monkeypatch.setattr(imp_state, "oob_seconds", lambda ctx: 0.0)
    p = ctx.X.shape[1]
    for parts, want in [((0.0, 0.0, 1e-8), 1000), ((0.5, 0.001, 0.0002), None), ((5.0, 0.0, 0.0), 50)]:
        monkeypatch.setattr(imp_state, "_permutation_costs", lambda ctx, scoring, parts=parts: parts)
        got = imp_state.default_importance_rows(ctx, ["permutation"])
        if want is None:  # the most rows (in steps of 50) whose 5 repeats fit in 3 s
            c0, a, b = parts
            want = max(m for m in range(50, 1001, 50)
                       if c0 + (5 * p + 1) * (a + b * min(m, held)) <= costs.START_VIEW_S)
        assert got == want
