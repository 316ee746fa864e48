"""The bit-mask walk of tree PD (explainers.trees.mask_walk) against the group walk and brute force.

The mask walk must add the same leaves, in the same order, as the group walk: the kernels'
sums are compared bit for bit on every block; the partial dependence (ICE, averages, one
and two features, every transform) against brute force and against the group walk forced
by hand. Where the walk does not apply (a tree of more than 64 reachable leaves, a rule on
another feature) the plan says so and the group walk runs.
"""
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_friedman1
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestRegressor

import explainers.effects.pdp as pdp_module
import explainers.effects.tree_pd as tree_pd
import explainers.trees.mask_walk as mask_walk
from explainers.interactions import h_statistic
from explainers.pdp import partial_dependence
from explainers.trees import flatten_model
from explainers.trees.inputs import grid_codes
from explainers.trees.walks import grid_slices, rules_of

TOL = dict(rtol=0, atol=1e-10)


def _data(n=300, seed=0):
    X, y = make_friedman1(n, n_features=6, random_state=seed)
    X = X.copy()
    X[::7, 2] = np.nan  # NaN in a non-target column: each split's missing direction
    X[::11, 4] = np.nan
    return pd.DataFrame(X, columns=[f"f{i}" for i in range(6)]), y


@pytest.fixture(scope="module")
def fits():
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    X, y = _data()
    y3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    y2 = (y > np.median(y)).astype(int)
    out = {
        "xgb_reg": xgb.XGBRegressor(n_estimators=30, max_depth=6, n_jobs=1).fit(X, y),
        # XGBoost's default: missing values learned per split, both directions occur
        "xgb_3class": xgb.XGBClassifier(n_estimators=15, max_depth=5, n_jobs=1).fit(X, y3),
        "lgb_bin": lgb.LGBMClassifier(n_estimators=20, num_leaves=63, min_child_samples=3, verbose=-1,
                                      n_jobs=1).fit(X, y2),
        "lgb_pois": lgb.LGBMRegressor(n_estimators=20, num_leaves=15, objective="poisson", verbose=-1,
                                      n_jobs=1).fit(X, y),
        "rf_small": RandomForestRegressor(8, max_leaf_nodes=40, random_state=0).fit(X.fillna(0), y),
    }
    return X, out


def _group_walk_only(monkeypatch):
    monkeypatch.setattr(mask_walk, "walk_plan", lambda *a, **k: mask_walk.no_plan())


def _plan_of(model, X, f1, f2=-1, grid=None):
    ens = flatten_model(model)
    Xw = ens.prepare_inputs(X)
    g1 = np.linspace(np.nanmin(Xw[:, f1]), np.nanmax(Xw[:, f1]), 9) if grid is None else grid
    (pos1, G1, _), = grid_slices(ens, f1, grid_codes(ens, f1, g1))
    if f2 >= 0:
        g2 = np.linspace(np.nanmin(Xw[:, f2]), np.nanmax(Xw[:, f2]), 5)
        (pos2, G2, _), = grid_slices(ens, f2, grid_codes(ens, f2, g2))
    else:
        pos2, G2 = np.zeros(len(ens.feature), np.int64), 1
    return ens, Xw, pos1, pos2, G1, G2, mask_walk.walk_plan(ens, f1, f2, pos1, pos2, G1, G2)


@pytest.mark.parametrize("name", ["xgb_reg", "xgb_3class", "lgb_bin", "lgb_pois", "rf_small"])
@pytest.mark.parametrize("f1,f2", [(0, -1), (2, -1), (1, 3), (4, 0)])
def test_kernel_sums_equal_the_group_walk_bit_for_bit(fits, name, f1, f2):
    """Every block's per-row sums and summed rows are those of the group walk, exactly."""
    X, models = fits
    ens, Xw, pos1, pos2, G1, G2, plan = _plan_of(models[name], X, f1, f2)
    assert plan[0], "these trees have at most 64 reachable leaves and no rules: the mask walk applies"
    nodes, thr = ens.packed_nodes
    cs, cb = rules_of(ens)
    T = len(ens.roots)
    for start, stop in [(0, len(Xw)), (5, 6), (17, 130)]:
        for per_row in (True, False):
            for trees in (np.arange(T), np.arange(T)[1::3]):
                got, want = [np.zeros((G1, G2, ens.n_raw, stop - start if per_row else 1)) for _ in range(2)]
                args = (Xw, start, stop, f1, f2, pos1, pos2, G1, G2, nodes, thr, ens.missing_go_left, cs, cb,
                        ens.value, ens.roots, trees, ens.max_depth + 2)
                mask_walk.walk_trees(*args, got, per_row, plan)
                mask_walk.walk_trees(*args, want, per_row, mask_walk.no_plan())
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["xgb_reg", "xgb_3class", "lgb_bin", "lgb_pois", "rf_small"])
@pytest.mark.parametrize("feats", [["f0"], ["f2"], ["f1", "f3"]])
def test_partial_dependence_equals_brute_and_the_group_walk(fits, name, feats, monkeypatch):
    X, models = fits
    model = models[name]
    Xm = X.fillna(0) if name == "rf_small" else X
    used = []
    real = mask_walk.walk_plan
    monkeypatch.setattr(mask_walk, "walk_plan", lambda *a: used.append(real(*a)[0]) or real(*a))
    t = partial_dependence(model, Xm, feats, grid_resolution=8, method="tree", kind="both")
    a = partial_dependence(model, Xm, feats, grid_resolution=8, method="tree", kind="average")
    assert used and all(used)  # the mask walk ran
    b = partial_dependence(model, Xm, feats, grid_resolution=8, method="brute", kind="both")
    np.testing.assert_allclose(t.individual, b.individual, **TOL)
    np.testing.assert_allclose(t.average, b.average, **TOL)
    np.testing.assert_allclose(a.average, b.average, **TOL)
    _group_walk_only(monkeypatch)
    g = partial_dependence(model, Xm, feats, grid_resolution=8, method="tree", kind="both")
    # the same sums per block (test above); the blocks and tree parts differ, so the last bit may
    np.testing.assert_allclose(t.individual, g.individual, rtol=0, atol=1e-12)


@pytest.mark.parametrize("block,parts", [(7, 1), (1, 1), (300, 2), (64, 3), (1000, 5)])
def test_any_blocks_and_tree_parts_give_the_same_numbers(fits, block, parts, monkeypatch):
    X, models = fits
    model = models["xgb_3class"]
    b = partial_dependence(model, X, ["f0", "f2"], grid_resolution=6, method="brute")
    monkeypatch.setattr(tree_pd, "walk_layout", lambda *a, **k: (block, parts))
    monkeypatch.setattr(tree_pd, "ONE_THREAD_WORK", 0)  # every thread, small as the work is
    t = partial_dependence(model, X, ["f0", "f2"], grid_resolution=6, method="tree")
    a = partial_dependence(model, X, ["f0"], grid_resolution=6, method="tree", kind="average")
    ref = partial_dependence(model, X, ["f0"], grid_resolution=6, method="brute", kind="average")
    np.testing.assert_allclose(t.individual, b.individual, **TOL)
    np.testing.assert_allclose(a.average, ref.average, **TOL)


def test_walk_layout_deals_rows_to_threads_for_the_mask_walk():
    import numba

    before = numba.get_num_threads()
    try:
        numba.set_num_threads(2)
        assert tree_pd.walk_layout(1000, 150, 600, True) == (500, 1)
        assert tree_pd.walk_layout(1000, 150, 600, False) == (1000, 2)  # the group walk shares trees
        block, parts = tree_pd.walk_layout(10_000, 150, 600, True)
        assert parts == 1 and (-(-10_000 // block)) % 2 == 0
    finally:
        numba.set_num_threads(before)


def test_plan_refuses_trees_with_more_than_64_reachable_leaves(fits):
    X, _ = fits
    _, y = _data()
    deep = RandomForestRegressor(3, random_state=0).fit(X.fillna(0), y)  # hundreds of leaves a tree
    ens, *_, plan = _plan_of(deep, X.fillna(0), 0)
    assert not plan[0]
    # a grid cut down to one point keeps the leaves one value reaches: still too many here
    t = partial_dependence(deep, X.fillna(0), ["f0"], grid_resolution=6, method="tree")
    b = partial_dependence(deep, X.fillna(0), ["f0"], grid_resolution=6, method="brute")
    np.testing.assert_allclose(t.individual, b.individual, **TOL)


def test_plan_refuses_a_rule_on_another_feature_but_takes_one_on_the_target():
    rng = np.random.default_rng(0)
    n = 400
    X = pd.DataFrame({"colour": pd.Categorical(rng.choice(list("abcd"), n)), "x": rng.normal(size=n),
                      "z": rng.normal(size=n)})
    y = ((X["colour"].isin(["a", "c"])) ^ (X["x"] > 0)).astype(int)
    model = HistGradientBoostingClassifier(max_iter=10, max_leaf_nodes=15, categorical_features="from_dtype",
                                           random_state=0).fit(X, y)
    ens = flatten_model(model)
    assert ens.has_rules
    # target x: the categorical splits on colour are not for masks -> the group walk
    *_, plan = _plan_of(model, X, 1)
    assert not plan[0]
    # target colour: its rules are the grid's own (one walk per category), the rest plain
    used = []
    real = mask_walk.walk_plan
    try:
        mask_walk.walk_plan = lambda *a: used.append(real(*a)[0]) or real(*a)
        t = partial_dependence(model, X, ["colour"], method="tree")
    finally:
        mask_walk.walk_plan = real
    assert used and all(used)
    b = partial_dependence(model, X, ["colour"], method="brute")
    np.testing.assert_allclose(t.individual, b.individual, **TOL)


def test_leaf_boxes_and_masks_of_a_small_tree():
    """A split on the target at the root and one split on x1 below each side: the plan by hand."""
    from sklearn.tree import DecisionTreeRegressor

    X = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]] * 5)
    tree = DecisionTreeRegressor(max_depth=2).fit(X, 2 * X[:, 0] + X[:, 1])
    ens = flatten_model(tree)
    root = int(ens.roots[0])
    assert ens.feature[root] == 0
    grid = np.array([0.0, 0.25, 1.0])  # the split at 0.5 on x0: two grid points go left
    pos1 = grid_slices(ens, 0, grid_codes(ens, 0, grid))[0][0]
    ok, node_start, q_node, keep_right, keep_left, leaf_start, leaf_node, leaf_box = mask_walk.walk_plan(
        ens, 0, -1, pos1, np.zeros(len(ens.feature), np.int64), 3, 1)
    assert ok
    assert list(leaf_start) == [0, 4] and list(node_start) == [0, 2]
    # leaves left to right: x0 <= 0.5 holds grid points 0 and 1, x0 > 0.5 the last one
    np.testing.assert_array_equal(leaf_box, [[0, 2, 0, 1], [0, 2, 0, 1], [2, 3, 0, 1], [2, 3, 0, 1]])
    lc, rc = ens.left[root], ens.right[root]
    np.testing.assert_array_equal(leaf_node, [ens.left[lc], ens.right[lc], ens.left[rc], ens.right[rc]])
    masks = {int(q): (int(r), int(left)) for q, r, left in zip(q_node, keep_right, keep_left)}
    # going right clears the left leaf of its side, going left the right one
    assert masks == {int(lc): (0b1110, 0b1101), int(rc): (0b1011, 0b0111)}


def test_h_statistic_of_a_probability_model_is_unchanged_by_the_walk(fits, monkeypatch):
    """The H statistic's points kernel (a nonlinear transform) walks by masks too: same values."""
    X, models = fits
    model = models["xgb_3class"]
    rows = X.iloc[:80].fillna(0)  # no NaN: the pairs take the points kernel
    import explainers.effects._hstat_kernels as kernels

    calls = []
    real_kernel = kernels.pd2_points_kernel
    monkeypatch.setattr(kernels, "pd2_points_kernel", lambda *a: calls.append(a[-1][0]) or real_kernel(*a))
    h = h_statistic(model, rows, pairs=[("f0", "f1"), ("f1", "f3")], class_index=2)
    assert calls and all(calls)  # the points kernel ran, by masks
    _group_walk_only(monkeypatch)
    g = h_statistic(model, rows, pairs=[("f0", "f1"), ("f1", "f3")], class_index=2)
    assert len(calls) > 1 and not any(calls[len(calls) // 2:])
    assert h.method == g.method == "tree"
    np.testing.assert_allclose(h.h2, g.h2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h.overall_h2, g.overall_h2, rtol=1e-12, atol=1e-12)
    assert np.all(h.h2 > 0)


def test_nested_splits_on_the_target_keep_the_range_they_do_not_cut(tmp_path):
    """A CatBoost tree splits every node of a level alike, so a path can split the target twice
    with the second threshold outside the range the first left (x0 > 0.94, then x0 <= 0.47): the
    whole range goes right there and keeps its lower end (0.94's), not the second split's."""
    catboost = pytest.importorskip("catboost")
    from explainers.trees.catboost import read_catboost

    X, y = make_friedman1(300, n_features=5, random_state=0)
    model = catboost.CatBoostRegressor(iterations=30, depth=4, verbose=False, random_seed=0,
                                       thread_count=1).fit(X, y)
    model.save_model(str(tmp_path / "m.json"), format="json")
    ours = read_catboost((tmp_path / "m.json").read_bytes(), name="m.json")
    ens, Xw, pos1, pos2, G1, G2, plan = _plan_of(ours, X, 0, grid=np.linspace(0, 1, 41))
    assert plan[0]
    box = plan[7]
    assert np.all((0 <= box[:, 0]) & (box[:, 0] < box[:, 1]) & (box[:, 1] <= G1))  # no box empty
    nodes, thr = ens.packed_nodes
    cs, cb = rules_of(ens)
    got, want = np.zeros((G1, 1, 1, len(X))), np.zeros((G1, 1, 1, len(X)))
    args = (Xw, 0, len(X), 0, -1, pos1, pos2, G1, G2, nodes, thr, ens.missing_go_left, cs, cb, ens.value,
            ens.roots, np.arange(len(ens.roots)), ens.max_depth + 2)
    mask_walk.walk_trees(*args, got, True, plan)
    mask_walk.walk_trees(*args, want, True, mask_walk.no_plan())
    np.testing.assert_array_equal(got, want)
    t = partial_dependence(ours, X, [0], grid_resolution=41, method="tree")
    b = partial_dependence(ours, X, [0], grid_resolution=41, method="brute")
    np.testing.assert_allclose(t.individual, b.individual, **TOL)


def test_small_work_runs_on_one_thread_and_gives_the_threads_back(fits, monkeypatch):
    """Below ONE_THREAD_WORK the kernels run on one thread (numba's second thread woke too slowly
    for a few milliseconds of work; the blocks are shared with a helper thread instead, tests
    below), the caller's thread count restored after; above it, all threads."""
    import numba

    X, models = fits
    seen = []
    real = pdp_module._tree_ice
    monkeypatch.setattr(pdp_module, "_tree_ice", lambda *a: seen.append(numba.get_num_threads()) or real(*a))
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        want = numba.get_num_threads()
        partial_dependence(models["xgb_reg"], X, ["f0"], grid_resolution=8, method="tree")
        assert seen == [1] and numba.get_num_threads() == want
        monkeypatch.setattr(tree_pd, "ONE_THREAD_WORK", 0)
        partial_dependence(models["xgb_reg"], X, ["f0"], grid_resolution=8, method="tree")
        assert seen == [1, want] and numba.get_num_threads() == want
    finally:
        numba.set_num_threads(before)


def test_exp_in_place_is_within_one_unit_of_numpy_and_falls_back_outside_its_range():
    from explainers.effects._tree_kernels import exp_in_place

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-708, 709, 20_000), rng.uniform(-5, 5, 20_000),
                        [0.0, -0.0, 1.0, -1.0, 708.9, -707.9, 1e-300, -1e-300]])
    got = x.copy()
    exp_in_place(got, len(got), np.empty(len(got), np.int64))
    want = np.exp(x)
    assert np.all(np.abs(got - want) <= np.spacing(want))  # one unit in the last place
    assert got[40_000] == 1.0 and got[40_001] == 1.0  # exp(0) exactly 1: softmax's largest class
    # only the first m values change
    part = x.copy()
    exp_in_place(part, 10, np.empty(10, np.int64))
    np.testing.assert_array_equal(part[10:], x[10:])
    # outside [-708, 709], or NaN: every value by np.exp (inf, 0, nan as numpy gives them)
    for odd in (710.0, -800.0, np.nan, np.inf, -np.inf):
        y = np.array([0.5, odd, -2.0])
        exp_in_place(y, 3, np.empty(3, np.int64))
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(y, np.exp(np.array([0.5, odd, -2.0])))


def _shared_case(fits, name, f1):
    X, models = fits
    ens, Xw, pos1, pos2, G1, G2, plan = _plan_of(models[name], X, f1)
    assert len(Xw) >= 2 * tree_pd._SHARED_BLOCK_ROWS  # two pieces
    from explainers.trees import TRANSFORMS

    return ens, Xw, pos1, pos2, G1, G2, plan, TRANSFORMS.index(ens.transform)


@pytest.mark.parametrize("name", ["xgb_3class", "lgb_bin", "lgb_pois"])
def test_shared_blocks_give_the_kernels_outputs(fits, name):
    """Walked in pieces by this thread and the helper: every row's ICE is the one-kernel ICE bit
    for bit; the block sums of the average add up to the kernel's."""
    ens, Xw, pos1, pos2, G1, G2, plan, tcode = _shared_case(fits, name, 0)
    K = 2 if tcode == 2 else ens.n_raw
    got, want = np.empty((len(Xw), G1, G2, K)), np.empty((len(Xw), G1, G2, K))
    args = (ens, Xw, 0, -1, pos1, pos2, G1, G2, tcode, plan)
    tree_pd._ice_blocks(*args, True, got, False)
    tree_pd._ice_blocks(*args, False, want, False)
    np.testing.assert_array_equal(got, want)
    sums = tree_pd._ice_blocks(*args, True, None, True)
    assert len(sums) == 2
    np.testing.assert_allclose(sums.sum(axis=0), want.sum(axis=0), rtol=1e-14, atol=1e-12)


def test_shared_tree_sums_add_up_to_the_kernels():
    """The average of an identity model, from two pieces' sums: the kernel's over every row."""
    pytest.importorskip("xgboost")
    import xgboost

    X, y = _data(600)
    model = xgboost.XGBRegressor(n_estimators=25, max_depth=5, n_jobs=1).fit(X, y)
    ens, Xw, pos1, pos2, G1, G2, plan = _plan_of(model, X, 1, 3)
    args = (ens, Xw, 1, 3, pos1, pos2, G1, G2, plan)
    got, want = tree_pd._tree_sums(*args, True), tree_pd._tree_sums(*args, False)
    assert got.shape == (G1, G2, 1)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-11)


def test_small_work_is_shared_and_a_late_helper_changes_nothing(fits, monkeypatch):
    """On several threads, small work goes to share(); a helper that never runs leaves every piece
    to the caller, with the same numbers."""
    import numba

    import explainers.effects._sharing as sharing

    X, models = fits
    model = models["xgb_3class"]
    pieces = []
    real = sharing.share
    monkeypatch.setattr(sharing, "share", lambda run, n: pieces.append(n) or real(run, n))
    b = partial_dependence(model, X, ["f0"], grid_resolution=8, method="brute")
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(2)
        t = partial_dependence(model, X, ["f0"], grid_resolution=8, method="tree")
        assert pieces == [2]
        monkeypatch.setattr(sharing._HELPER, "submit", lambda job: None)  # it never wakes
        late = partial_dependence(model, X, ["f0"], grid_resolution=8, method="tree")
    finally:
        numba.set_num_threads(before)
    np.testing.assert_allclose(t.individual, b.individual, **TOL)
    np.testing.assert_array_equal(late.individual, t.individual)
    np.testing.assert_array_equal(late.average, t.average)


def test_share_runs_each_piece_once_and_raises_a_pieces_error():
    import threading

    from explainers.effects._sharing import share

    seen = []
    lock = threading.Lock()

    def run(k):
        with lock:
            seen.append(k)

    share(run, 7)
    assert sorted(seen) == list(range(7))

    def bad(k):
        if k == 3:
            raise ValueError("piece 3")

    with pytest.raises(ValueError, match="piece 3"):
        share(bad, 5)


@pytest.mark.parametrize("name", ["xgb_reg", "xgb_3class", "lgb_bin", "lgb_pois", "rf_small"])
def test_predict_by_masks_equals_the_group_walk_bit_for_bit(fits, name):
    """A plain predict by the masks (every tree fits a predict plan): the group walk's tree sums,
    exactly, on rows with NaN in both directions; predict_raw uses it."""
    from explainers.trees.walks import tree_sums_kernel

    X, models = fits
    ens = flatten_model(models[name])
    Xw = ens.prepare_inputs(X.fillna(0) if name == "rf_small" else X)
    plan = mask_walk.predict_plan(ens)
    assert plan[0] and mask_walk.predict_plan(ens) is plan  # kept on the ensemble
    nodes, thr = ens.packed_nodes
    for block in (1, 37, 300):
        got, want = np.empty((len(Xw), ens.n_raw)), np.empty((len(Xw), ens.n_raw))
        mask_walk.mask_tree_sums_kernel(Xw, nodes, thr, ens.missing_go_left, np.ascontiguousarray(ens.value), plan,
                                        block, got)
        tree_sums_kernel(Xw, nodes, thr, ens.missing_go_left, *rules_of(ens), np.ascontiguousarray(ens.value),
                         ens.roots, ens.max_depth, block, want)
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ens.tree_sums(Xw, 64), want)


def test_predict_takes_the_group_walk_where_a_tree_has_more_than_64_leaves():
    X, y = _data(400)
    rf = RandomForestRegressor(3, random_state=0).fit(X.fillna(0), y)  # unlimited depth: hundreds of leaves
    ens = flatten_model(rf)
    assert not mask_walk.predict_plan(ens)[0]
    np.testing.assert_allclose(ens.predict(X.fillna(0))[:, 0], rf.predict(X.fillna(0)), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["xgb_reg", "xgb_3class", "lgb_bin"])
def test_a_large_table_is_predicted_in_chunks_with_the_same_numbers(fits, name, monkeypatch):
    """predict_raw prepares and walks a large table a chunk of rows at a time (no float32-rounded
    copy of the whole table): the numbers of one pass, bit for bit, for a frame and an array,
    chunks that do not divide the rows included; the library's own predict agrees."""
    import explainers.trees.ensemble as ensemble_module

    X, models = fits
    ens = flatten_model(models[name])
    whole = ens.predict_raw(X)
    prepared = []
    real = ensemble_module.TreeEnsemble.prepare_inputs

    def counted(self, rows):
        prepared.append(len(rows))
        return real(self, rows)

    monkeypatch.setattr(ensemble_module, "PREDICT_CHUNK_ROWS", 64)
    monkeypatch.setattr(ensemble_module.TreeEnsemble, "prepare_inputs", counted)
    for rows in (X, X.to_numpy()):
        prepared.clear()
        np.testing.assert_array_equal(ens.predict_raw(rows), whole)
        assert prepared == [64] * (len(X) // 64) + [len(X) % 64]  # no chunk larger than the bound
    if name == "xgb_reg":
        np.testing.assert_allclose(ens.predict(X)[:, 0], models[name].predict(X), rtol=1e-6, atol=1e-6)
