"""Tree SHAP's cost before work (issue #29): a line (a call's fixed cost, the leaf tables it
builds, plus a cost per row) from two probes, which decides whether the SHAP views start with
1,000 rows, how many rows a slow model starts with (about 3 s of work), and the estimate of
a sample. The clock is replaced by one that advances with the rows explained, so the checks
count work, not time."""
import pytest

from dashboard.state import costs
from dashboard.state.cache import ResultCache
from dashboard.state.context import demo_context


class _Clock:
    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now


@pytest.fixture
def ctx():
    return demo_context("diabetes_forest")


@pytest.fixture
def counted(monkeypatch):
    """explain() costs FIXED + PER_ROW x rows on the fake clock; the rows asked are recorded."""
    import explainers.shap as shap_mod

    clock, calls = _Clock(), []
    real = shap_mod.explain

    def explain(model, X, **kw):
        calls.append(len(X))
        clock.now += 0.25 + 0.004 * len(X)
        return real(model, X, **kw)

    monkeypatch.setattr(shap_mod, "explain", explain)
    monkeypatch.setattr(costs, "time", clock)
    monkeypatch.setattr(costs, "result_cache", lambda cache=ResultCache(): cache)
    return calls


def test_tree_line_from_two_probes(ctx, counted):
    fixed, per_row = costs.shap_cost_line(ctx, "tree", "raw")
    # one warm-up row, then the best of two runs of 4 rows and of 32 rows
    assert counted == [1, 4, 4, 32, 32]
    assert fixed == pytest.approx(0.25) and per_row == pytest.approx(0.004)
    # 0.25 + 1,000 x 0.004 = 4.25 s: fast
    assert costs.shap_is_fast(ctx, "tree", "raw") and costs.default_shap_rows(ctx, "tree", "raw") == 1000
    assert costs.shap_cost_line(ctx, "tree", "raw") == (fixed, per_row) and len(counted) == 5  # cached


def test_a_slow_tree_model_starts_with_three_seconds_of_rows(ctx, monkeypatch):
    monkeypatch.setattr(costs, "_shap_line", lambda ctx, method, output: (0.5, 0.02))
    monkeypatch.setattr(costs, "result_cache", lambda cache=ResultCache(): cache)
    assert not costs.shap_is_fast(ctx, "tree", "raw")  # 0.5 + 1,000 x 0.02 = 20.5 s
    assert costs.default_shap_rows(ctx, "tree", "raw") == 120  # (3 - 0.5) / 0.02 = 125, in steps of 10
    cost, fits = costs.sample_cost(ctx, "tree", 400, "raw")
    # none explained yet: blocks of 75 rows ((2 s - 0.5 s) / 0.02 s: a block takes four times a
    # call's fixed cost), six calls
    assert costs.first_block(False, 0.5, 0.02) == 75
    assert cost == pytest.approx(6 * 0.5 + 400 * 0.02)
    assert fits == 470  # (10 - 0.5) / 0.02 = 475, in steps of 10
    # auto on a tree model is tree SHAP, measured the same way
    assert not costs.shap_is_fast(ctx, "auto", "raw")


def test_linear_shap_is_fast_by_kind_and_costs_its_line(counted):
    """Linear SHAP is fast without a probe; its estimate is the line (a call's own fixed cost is
    most of its milliseconds: counted as free, 0 against 10-25 ms measured)."""
    ctx = demo_context("diabetes_linear")
    assert costs.shap_is_fast(ctx, "linear", "raw") and counted == []  # known by kind: no probe
    assert costs.default_shap_rows(ctx, "linear", "raw") == costs.FAST_ROWS and counted == []
    fixed, per_row = costs.shap_cost_line(ctx, "linear", "raw")
    assert counted == [1, 4, 4, 32, 32]
    assert fixed == pytest.approx(0.25) and per_row == pytest.approx(0.004)
    cost, _ = costs.sample_cost(ctx, "linear", 442, "raw")
    assert cost == pytest.approx(costs.blocks_seconds(442, costs.FIRST_FAST_BLOCK, 0.25, 0.004))


def test_blocks_follow_the_worker_policy():
    """The estimate walks the blocks the SHAP worker will take: each call pays the fixed cost."""
    # fast (first block 256 rows, 0.2 + 0.256 s: kept): 4 calls for 1,000 rows
    assert costs.blocks_seconds(1000, 256, 0.2, 0.001) == pytest.approx(4 * 0.2 + 1.0)
    # a quick block doubles: 256 (0.0256 s) -> 512 -> 232 left
    assert costs.blocks_seconds(1000, 256, 0.0, 0.0001) == pytest.approx(0.1)
    assert costs.next_block(256, 0.0256, 0.0) == 512
    # a slow block halves; a call whose fixed cost dominates grows
    assert costs.next_block(8, 1.5, 0.0) == 4
    assert costs.next_block(8, 1.1, 1.0) == 16  # target 4 s: 1.1 s is under half of it
    assert costs.first_block(True, 5.0, 1.0) == costs.FIRST_FAST_BLOCK


def test_tree_interactions_are_estimated(ctx, monkeypatch):
    """The Interactions page computes SHAP interaction values (tree: a line through two probes)
    whichever measure it shows, and H of the heatmap's pairs (tree walk: a power of the rows)."""
    from dashboard.state import interactions as ia

    monkeypatch.setattr(ia, "tree_interaction_line", lambda ctx: (1.0, 0.05))
    monkeypatch.setattr(ia, "h_walk_seconds", lambda ctx, n, overall_too, k=12: 0.01 * n)
    assert ia.interaction_method(ctx)[0] == "tree" and ia._h_by_tree_walk(ctx)
    want = 1.0 + 0.05 * ia.shap_rows_used(ctx, "tree", 300) + 0.01 * ia.h_rows_used(ctx, 300)
    for measure in (ia.SHAP_MEASURE, ia.H_MEASURE):
        cost, fits = ia.interaction_cost(ctx, measure, 300)
        assert cost == pytest.approx(want)
        assert fits == 150  # 1 s + 150 x (0.05 + 0.01) s = 10 s


class _Probe:
    def __init__(self, value):
        self.value = value

    def get_or_compute(self, key, compute):
        return self.value


@pytest.mark.parametrize("probe, want", [((1.0, 3.0, 20, 60, 0, 0), 3.0 + 2.0 / 40 * 240),  # the line on
                                         ((3.9, 3.5, 20, 60, 0, 0), 3.5)])  # a walk whose rows cost nothing: flat
def test_h_walk_follows_the_line_through_two_probes(ctx, monkeypatch, probe, want):
    from dashboard.state import interactions as ia

    monkeypatch.setattr(ia, "result_cache", lambda: _Probe(probe))
    assert ia.h_walk_seconds(ctx, 300, False) == pytest.approx(want)


@pytest.mark.parametrize("two_row_s, on_line", [(0.014, True), (0.05, False)])
def test_a_boosting_models_probability_game_gets_the_line_where_its_probes_are_cheap(monkeypatch, two_row_s,
                                                                                     on_line):
    """The probability game of a boosting model: the two-row probe decides whether the line's
    probes (73 rows) fit LINE_PROBE_BUDGET_S; then the estimate is the line, else the two-row figure."""
    ctx = demo_context("breast_cancer_xgb")
    monkeypatch.setattr(costs, "result_cache", lambda cache=ResultCache(): cache)
    monkeypatch.setattr(costs, "_probe_seconds", lambda ctx, method, output: two_row_s)
    monkeypatch.setattr(costs, "_shap_line", lambda ctx, method, output: (0.02, 0.004))
    assert (73 * two_row_s <= costs.LINE_PROBE_BUDGET_S) == on_line
    line = costs.shap_cost_line(ctx, "tree", "proba")
    assert line == ((0.02, 0.004) if on_line else (0.0, two_row_s))
    assert costs.shap_fixed_seconds(ctx, "tree", "proba") == (0.02 if on_line else 0.0)


@pytest.mark.parametrize("method", ["exact", "kernel"])
@pytest.mark.parametrize("two_row_s, on_line", [(0.006, True), (0.5, False)])
def test_a_cheap_exact_or_kernel_game_gets_the_line(monkeypatch, method, two_row_s, on_line):
    """Exact and kernel SHAP are slow by kind: where their two-row probe says the line's probes
    (73 rows) are cheap, the estimate is the line (the two-row figure carries the call's set-up),
    else the two-row figure; either way the views stay on the slow defaults."""
    ctx = demo_context("diabetes_linear")
    monkeypatch.setattr(costs, "result_cache", lambda cache=ResultCache(): cache)
    monkeypatch.setattr(costs, "_probe_seconds", lambda ctx, method, output: two_row_s)
    monkeypatch.setattr(costs, "_shap_line", lambda ctx, method, output: (0.3, 0.0025))
    line = costs.shap_cost_line(ctx, method, "raw")
    assert line == ((0.3, 0.0025) if on_line else (0.0, two_row_s))
    assert not costs.shap_is_fast(ctx, method, "raw")
    cost, _ = costs.sample_cost(ctx, method, 442, "raw")
    fixed, per_row = line
    assert cost == pytest.approx(costs.blocks_seconds(442, costs.first_block(False, fixed, per_row), fixed, per_row))


def test_an_out_of_reach_probability_game_costs_the_log_odds_the_page_explains(monkeypatch):
    """Where the probability game is out of reach (its probes raise: (0, 0)), the page explains the
    log-odds instead (breast_cancer_hgb: HistGradientBoosting's margin), so the estimate is theirs."""
    ctx = demo_context("breast_cancer_hgb")
    monkeypatch.setattr(costs, "result_cache", lambda cache=ResultCache(): cache)
    monkeypatch.setattr(costs, "_probe_seconds", lambda ctx, method, output: 0.0)
    lines = {"proba": (0.0, 0.0), "auto": (0.1, 0.002)}
    monkeypatch.setattr(costs, "_shap_line", lambda ctx, method, output: lines[output])
    assert costs.shap_cost_line(ctx, "tree", "proba") == (0.1, 0.002)
    assert costs.shap_fixed_seconds(ctx, "tree", "proba") == 0.1
    assert costs.shap_seconds_per_row(ctx, "tree", "proba") == 0.002
    assert costs.sample_cost(ctx, "tree", 500, "proba")[0] > 0


def test_rows_that_cost_nothing_more_still_pay_each_call(ctx, monkeypatch):
    """A line whose rows cost nothing measurable (its 32-row probe no slower than its 4-row one)
    still costs its fixed part once per block the worker takes."""
    monkeypatch.setattr(costs, "_shap_line", lambda ctx, method, output: (0.03, 0.0))
    monkeypatch.setattr(costs, "result_cache", lambda cache=ResultCache(): cache)
    cost, fits = costs.sample_cost(ctx, "tree", 442, "raw")
    first = costs.first_block(costs.shap_is_fast(ctx, "tree", "raw"), 0.03, 0.0)
    assert cost == pytest.approx(costs.blocks_seconds(442, first, 0.03, 0.0)) and cost >= 0.03
    assert fits == 442


def test_exact_interactions_and_brute_h_of_a_fast_model_follow_their_probes(monkeypatch):
    """A fast model's exact SHAP interactions and brute-force H cost more than their predictions
    (the game's and the frames' own work): where the probes are cheap, a line through them."""
    from dashboard.state import interactions as ia

    ctx = demo_context("diabetes_linear")
    assert ia.interaction_method(ctx)[0] == "exact" and not ia._h_by_tree_walk(ctx)
    lines = []
    monkeypatch.setattr(costs, "predict_seconds_per_row", lambda ctx: 1e-8)  # 73 rows x 1,024 x 30: 22 ms
    monkeypatch.setattr(costs, "probe_line", lambda ctx, key, run: lines.append(key[0]) or (0.2, 0.003))
    # H's probes: 0.5 s on 20 rows (1,000 predictions), 0.9 s on 60 (5,000): 1e-4 s a prediction + 0.4 s
    monkeypatch.setattr(ia, "_h_probes", lambda ctx, overall_too, k, count=False: (0.5, 0.9, 20, 60, 1000, 5000))
    assert ia.exact_interaction_line(ctx) == (0.2, 0.003) and lines == ["interactions_exact_line"]
    fixed, per_pred = ia.h_brute_line(ctx, False)
    assert fixed == pytest.approx(0.4) and per_pred == pytest.approx(1e-4)
    n = 200
    want = (0.2 + 0.003 * ia.shap_rows_used(ctx, "exact", n)
            + 0.4 + 1e-4 * ia.h_predictions(ctx, ia.h_rows_used(ctx, n), False))
    assert ia.interaction_cost(ctx, ia.SHAP_MEASURE, n)[0] == pytest.approx(want)
    # a slow predict: no probes of the games (they would take long), the predictions counted
    monkeypatch.setattr(costs, "predict_seconds_per_row", lambda ctx: 1e-3)
    assert ia.exact_interaction_line(ctx) is None and ia.h_brute_line(ctx, False) is None
    want = (ia.shap_rows_used(ctx, "exact", n) * 1024 * 30 * 1e-3
            + 1e-3 * ia.h_predictions(ctx, ia.h_rows_used(ctx, n), False))
    assert ia.interaction_cost(ctx, ia.SHAP_MEASURE, n)[0] == pytest.approx(want)


def test_rows_that_cost_less_than_the_noise_get_a_larger_probe(ctx, monkeypatch):
    """A slope read from 4 and 32 rows a few microseconds apart is noise (0 on a busy machine):
    the larger probe grows fourfold, up to the data's rows, until its rows add PROBE_SPREAD_S."""
    import explainers.shap as shap_mod

    clock, calls = _Clock(), []
    real = shap_mod.explain

    def explain(model, X, **kw):
        calls.append(len(X))
        clock.now += 0.25 + 1e-5 * len(X)
        return real(model, X, **kw)

    monkeypatch.setattr(shap_mod, "explain", explain)
    monkeypatch.setattr(costs, "time", clock)
    monkeypatch.setattr(costs, "result_cache", lambda cache=ResultCache(): cache)
    fixed, per_row = costs.shap_cost_line(ctx, "tree", "raw")
    # 28 rows add 0.28 ms, 124 rows 1.24 ms: below 10 ms; all 442 rows of the demo: the last probe
    assert calls == [1, 4, 4, 32, 32, 128, 128, 442, 442]
    assert fixed == pytest.approx(0.25) and per_row == pytest.approx(1e-5)


def test_h_walk_probes_grow_until_the_rows_cost_shows(ctx, monkeypatch):
    """H by the tree walk costs little per row: the larger probe grows fourfold up to H_ROWS while
    its rows add less than PROBE_SPREAD_S (noise), each quick probe the faster of two runs."""
    import explainers.interactions as ei
    from dashboard.state import interactions as ia

    clock, calls = _Clock(), []

    def h_statistic(model, X, **kw):
        calls.append(len(X))
        clock.now += 0.05 + 2e-5 * len(X)
        return None

    monkeypatch.setattr(ei, "h_statistic", h_statistic)
    monkeypatch.setattr(ia, "time", clock)
    monkeypatch.setattr(ia, "result_cache", lambda cache=ResultCache(): cache)
    t1, t2, n1, n2, _, _ = ia._h_probes(ctx, False, 12)
    # 40 more rows add 0.8 ms, 220 more 4.4 ms; the demo's H_ROWS (300): its rows are the last probe
    assert calls == [4, 20, 20, 60, 60, 240, 240, 300, 300]
    assert (n1, n2) == (20, 300)
    assert ia.h_walk_seconds(ctx, 300, False) == pytest.approx(0.05 + 2e-5 * 300)


def test_a_probe_that_finds_the_probability_game_out_of_reach_spares_the_sample_its_attempt(monkeypatch):
    """The probe's rows are part of every sample: where their probability game is out of reach the
    global view explains the sample on log-odds at once (it paid for a failed attempt first: the
    estimate, which counts the log-odds, was 0.41x), and says why; a single row still tries."""
    import explainers.shap as shap_mod
    from dashboard.state import attribution
    from dashboard.state.rows import background, sample_rows
    from explainers.errors import OutOfReachError

    ctx = demo_context("breast_cancer_hgb")
    monkeypatch.setattr(costs, "result_cache", lambda cache=ResultCache(): cache)
    monkeypatch.setattr(attribution, "result_cache", costs.result_cache)
    outputs = []
    real = shap_mod.explain

    def explain(model, X, **kw):
        outputs.append(kw.get("output"))
        return real(model, X, **kw)

    monkeypatch.setattr(shap_mod, "explain", explain)
    output, _ = attribution.shap_setting(ctx, "tree")
    assert output == "proba"
    with pytest.raises(OutOfReachError):
        real(ctx.model, sample_rows(ctx, 32), background=background(ctx), method="tree", output="proba")
    costs.sample_cost(ctx, "tree", 200, "proba")  # the probes meet the out-of-reach rows
    assert "proba" in outputs
    outputs.clear()
    res = attribution.explain_sample(ctx, 200, "tree")
    assert outputs and "proba" not in outputs  # no attempt on probabilities first: the log-odds at once
    assert "out of reach" in res.params["scale_note"]
    assert attribution.shap_setting(ctx, "tree")[0] == "proba"  # one-row views still try
