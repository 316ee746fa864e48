"""Counterfactuals (explainers.counterfactuals), checked against oracles written here:

1. exactness: on integer data the allowed changes are a finite grid, so the nearest
   counterfactual (and every later, diverse one) is a brute-force minimum over the grid,
   judged by the model's own predict, with the distance's scale recomputed from its
   definition;
2. validity and constraints on every model family (scikit-learn, XGBoost, LightGBM,
   CatBoost, a folded pipeline, non-tree models): the model's own predict, fixed features,
   ranges, integers, categories, diversity, the reported distances;
3. the exact answer against the model-agnostic search on continuous features;
4. messages and refusals; 5. a time limit; 6. the branch and bound prunes (a count).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import (
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPRegressor
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from explainers.counterfactuals import counterfactuals
from explainers.errors import ExplainerError, InvalidFeatureError, InvalidParameterError

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # feature-name notes of the libraries


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Predicting a row or three with OpenMP threads on a busy machine costs more than the
    trees themselves (HistGradientBoosting): one thread, as the results do not depend on it."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


#: the solver's tie-breaker per changed feature (explainers.counterfactuals._trees.TIE)
TIE = 1e-6


@pytest.fixture(autouse=True)
def _no_answer_rejected(monkeypatch):
    """The final check by predict (and the solver's retry with a wider margin) would hide a
    solver whose routing disagrees with the model: every candidate either method makes must
    already be valid, and the exact solver must never need its retry."""
    import explainers.counterfactuals as api
    import explainers.counterfactuals._trees as trees

    seen = {"rejected": 0, "rows": 0, "solves": 0}
    validate, answers, solve = api._validate, api._tree_answers, trees.solve_row

    def counted_validate(*a, **k):
        ok, labels, outputs = validate(*a, **k)
        seen["rejected"] += int((~np.asarray(ok, bool)).sum())
        return ok, labels, outputs

    def counted_answers(*a, **k):
        seen["rows"] += 1
        return answers(*a, **k)

    def counted_solve(*a, **k):
        seen["solves"] += 1
        return solve(*a, **k)

    monkeypatch.setattr(api, "_validate", counted_validate)
    monkeypatch.setattr(api, "_tree_answers", counted_answers)
    monkeypatch.setattr(trees, "solve_row", counted_solve)
    yield
    assert seen["rejected"] == 0, f"{seen['rejected']} candidates rejected by the model's predict"
    assert seen["solves"] == seen["rows"], f"the exact solver retried: {seen}"


# ------------------------------------------------------------------ oracles
def mad(values) -> float:
    """The distance's unit, from its definition: the median absolute deviation; the mean
    absolute deviation about the median where that is 0; else 1."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return 1.0
    med = np.median(v)
    m = float(np.median(np.abs(v - med)))
    if m > 0:
        return m
    m = float(np.mean(np.abs(v - med)))
    return m if m > 0 else 1.0


def is_cat(col: pd.Series) -> bool:
    """Categories: a category, boolean or text column (a change counts 1)."""
    return (isinstance(col.dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(col.dtype)
            or not pd.api.types.is_numeric_dtype(col.dtype))


def scales_of(X: pd.DataFrame) -> dict:
    return {c: mad(X[c].to_numpy(float)) for c in X.columns if not is_cat(X[c])}


def distance(X: pd.DataFrame, x: pd.Series, cf: pd.DataFrame):
    """(plain distance, changed-feature mask) of each row of cf from x."""
    sc = scales_of(X)
    dist = np.zeros(len(cf))
    changed = np.zeros((len(cf), X.shape[1]), bool)
    for j, c in enumerate(X.columns):
        if c in sc:
            new, old = cf[c].to_numpy(float), float(x[c])
            nan_new, nan_old = np.isnan(new), np.isnan(old)
            # an empty cell given a value (or a value emptied) counts 1, as a category change
            changed[:, j] = np.where(nan_new | nan_old, nan_new != nan_old, new != old)
            step = np.where(nan_new | nan_old, 1.0, np.abs(new - old) / sc[c])
            dist += np.where(changed[:, j], step, 0.0)
        else:
            changed[:, j] = np.asarray([str(v) != str(x[c]) for v in cf[c]], bool)
            dist += changed[:, j]
    return dist, changed


def reached_fn(model, X, row, target):
    """The target, judged on the model's own predict outputs."""
    if isinstance(target, tuple):
        return lambda p: (np.asarray(p, float) >= target[0]) & (np.asarray(p, float) <= target[1])
    if target is None:
        own = np.asarray(model.predict(X.iloc[[row]])).ravel()[0]
        return lambda p: np.asarray(p).ravel() != own
    return lambda p: np.asarray(p).ravel() == target


def cat_levels(col: pd.Series) -> list:
    """The categories a column may take: its dtype's categories, else its distinct values."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return list(col.cat.categories)
    return sorted(set(col.dropna()))


def grid_of(X: pd.DataFrame, row: int, fixed=(), ranges=None) -> pd.DataFrame:
    """Every allowed point for row: each free integer feature over the integers of its range
    (default the observed one) and its own value, each free category over its categories
    (or those ranges allows, and its own); a fixed feature at its own value."""
    ranges = ranges or {}
    x = X.iloc[row]
    axes = []
    for c in X.columns:
        if c in fixed:
            axes.append(np.asarray([x[c]], dtype=object))
        elif is_cat(X[c]):
            levels = list(ranges.get(c, cat_levels(X[c])))
            axes.append(np.asarray(levels + [x[c]] * (x[c] not in levels), dtype=object))
        else:
            lo, hi = ranges.get(c, (X[c].min(), X[c].max()))
            axes.append(np.union1d(np.arange(math.ceil(lo), math.floor(hi) + 1), [x[c]]))
    idx = np.meshgrid(*[np.arange(len(a)) for a in axes], indexing="ij")
    frame = pd.DataFrame({c: a[i.ravel()] for c, a, i in zip(X.columns, axes, idx)})
    for c in X.columns:
        frame[c] = frame[c].astype(X[c].dtype) if not is_cat(X[c]) or isinstance(X[c].dtype, pd.CategoricalDtype) \
            else frame[c].astype(object)
    return frame


# ------------------------------------------------------------------ data
def _int_data(n=300, seed=0):
    """Three integer features on 0..20; 'c' is mostly 0 (its MAD is 0: the mean absolute
    deviation is its unit)."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.integers(0, 21, n), "b": rng.integers(0, 21, n),
                      "c": np.where(rng.random(n) < 0.7, 0, rng.integers(0, 21, n))}).astype("int64")
    s = X.a - X.b + 0.5 * X.c + rng.normal(0, 3, n)
    return X, (s > 0).astype(int).to_numpy(), np.digitize(s, [-4, 4]), s.to_numpy()


XI, Y2, Y3, YR = _int_data()


def _loan(n=300, seed=0):
    """Continuous and integer features, and a category column."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "income": np.round(rng.lognormal(10, 0.4, n), 2),
        "debt": rng.uniform(0, 1, n),
        "age": rng.integers(18, 70, n).astype("int64"),
        "late": rng.poisson(1.0, n).astype("int64"),
    })
    plan = rng.choice(["basic", "plus", "gold"], n)
    score = (np.log(X.income) - 10) * 2.5 - 2 * (X.debt - 0.5) - 0.4 * X.late + 0.02 * (X.age - 44) \
        + 0.6 * (plan == "gold") - 0.4 * (plan == "basic") + rng.logistic(0, 0.3, n)
    y = (score > 0).astype(int).to_numpy()
    return X, plan, y, score.to_numpy()


XL, PLAN, YL, SL = _loan()
XC = XL.assign(plan=pd.Categorical(PLAN, categories=["basic", "plus", "gold"]))
XT = XL.assign(plan=PLAN.astype(object))


def rows_not(model, X, target, k, start=0):
    """The first k rows (from start) the model does not predict as target."""
    p = np.asarray(model.predict(X)).ravel()
    if isinstance(target, tuple):
        bad = ~((p >= target[0]) & (p <= target[1]))
    elif target is None:
        bad = np.ones(len(p), bool)
    else:
        bad = p != target
    out = [int(i) for i in np.nonzero(bad)[0] if i >= start][:k]
    assert len(out) == k
    return out


# ------------------------------------------------------------------ 1. exactness vs brute force
def _check_exact(model, X, rows, target, res, fixed=(), ranges=None, n=3):
    sc = scales_of(X)
    assert res.scales == pytest.approx(sc, rel=1e-12, abs=0)
    for i, row in enumerate(rows):
        x = X.iloc[row]
        reached = reached_fn(model, X, row, target)
        grid = grid_of(X, row, fixed, ranges)
        ok = reached(model.predict(grid))
        gdist, gchanged = distance(X, x, grid)
        gobj = gdist + TIE * gchanged.sum(1)
        cf = res.counterfactuals[i]
        if not ok.any():
            assert len(cf) == 0 and "proven" in res.messages[i], (row, res.messages[i])
            continue
        assert res.optimal[i] is True, (row, res.messages[i])
        assert 1 <= len(cf) <= n, (row, res.messages[i])
        assert res.messages[i] == "" and res.gaps[i] == 0.0
        assert list(cf.columns) == list(X.columns) and (cf.dtypes == X.dtypes).all()
        dist, changed = distance(X, x, cf)
        np.testing.assert_allclose(res.distances[i], dist, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(res.n_changed[i], changed.sum(1))
        assert reached(model.predict(cf)).all()
        np.testing.assert_array_equal(np.asarray(res.predictions[i]).ravel(), np.asarray(model.predict(cf)).ravel())
        # every answer a grid point: integers inside the range, allowed categories (or the
        # row's own value)
        for c in X.columns:
            if is_cat(X[c]):
                allowed = set(map(str, (ranges or {}).get(c, cat_levels(X[c])))) | {str(x[c])}
                assert all(str(v) in allowed for v in cf[c]), (c, cf[c].tolist())
                if c in fixed:
                    assert all(str(v) == str(x[c]) for v in cf[c])
                continue
            lo, hi = (ranges or {}).get(c, (X[c].min(), X[c].max()))
            v = cf[c].to_numpy(float)
            assert np.all(v == np.round(v))
            assert np.all(((v >= lo) & (v <= hi)) | (v == float(x[c]))), (c, v)
            if c in fixed:
                assert np.all(v == float(x[c]))
        # answer k is the nearest grid point that keeps one feature of every earlier answer's
        # changed set (ties: any of the nearest); after the last one, none is left, or n were asked
        allowed = ok.copy()
        for k in range(len(cf)):
            best = gobj[allowed].min()
            mine = dist[k] + TIE * changed[k].sum()
            assert mine == pytest.approx(best, abs=1e-9), (row, k, mine, best)
            # the plain distance: never above the grid's plainest minimum by more than the tie-breaker
            assert dist[k] <= gdist[allowed].min() + TIE * X.shape[1] + 1e-12
            allowed &= ~gchanged[:, changed[k]].all(1)
        if len(cf) < n:
            assert not allowed.any(), (row, "a further diverse answer exists", grid[allowed].head())


def _exact(model, X, rows, target, solver="auto", fixed=(), ranges=None, n=3):
    res = counterfactuals(model, X, rows, target=target, solver=solver, fixed=fixed, ranges=ranges, n=n,
                          time_limit=60)
    _check_exact(model, X, rows, target, res, fixed, ranges, n)
    return res


@pytest.fixture(scope="module")
def rf3():
    return RandomForestClassifier(3, max_depth=5, random_state=0).fit(XI, Y2)


def test_single_tree_is_enumerated_exactly():
    tree = DecisionTreeClassifier(max_depth=5, random_state=0).fit(XI, Y2)
    for target in (1, 0):
        res = _exact(tree, XI, rows_not(tree, XI, target, 5), target)
        assert res.method == "tree enumeration"


@pytest.mark.parametrize("solver", ["bnb", "milp"])
def test_three_trees_exact(rf3, solver):
    for target in (1, 0):
        res = _exact(rf3, XI, rows_not(rf3, XI, target, 4), target, solver=solver)
        assert res.method == ("tree branch and bound" if solver == "bnb" else "tree MILP (HiGHS)")


def test_bnb_and_milp_agree(rf3):
    rows = rows_not(rf3, XI, 1, 4, start=20)
    a = counterfactuals(rf3, XI, rows, target=1, solver="bnb", time_limit=60)
    b = counterfactuals(rf3, XI, rows, target=1, solver="milp", time_limit=60)
    for i in range(len(rows)):
        np.testing.assert_allclose(a.distances[i] + TIE * a.n_changed[i],
                                   b.distances[i] + TIE * b.n_changed[i], atol=1e-9)
        assert a.optimal[i] and b.optimal[i]


def test_thirty_trees_exact():
    rf = RandomForestClassifier(30, max_depth=5, random_state=0).fit(XI, Y2)
    _exact(rf, XI, rows_not(rf, XI, 1, 4), 1)
    _exact(rf, XI, rows_not(rf, XI, 0, 3), 0)
    _exact(rf, XI, rows_not(rf, XI, 1, 1, start=40), 1, solver="milp", n=1)


def test_forest_probability_ties_reach_the_first_class():
    """Two trees' averaged probabilities tie often; predict gives a tie to the first class,
    so a tie is a valid counterfactual of class 0 (and, with three classes, of the earlier class)."""
    rf = RandomForestClassifier(2, max_depth=3, random_state=1).fit(XI, Y2)
    p = rf.predict_proba(grid_of(XI, 0))
    assert (p[:, 0] == p[:, 1]).any()  # the case this test is about
    _exact(rf, XI, rows_not(rf, XI, 0, 8), 0)
    _exact(rf, XI, rows_not(rf, XI, 0, 3), 0, solver="milp")
    rf3c = RandomForestClassifier(2, max_depth=3, random_state=1).fit(XI, Y3)
    _exact(rf3c, XI, rows_not(rf3c, XI, 0, 4), 0)
    _exact(rf3c, XI, rows_not(rf3c, XI, 1, 4), 1)
    _exact(rf3c, XI, list(range(6)), None)
    _exact(rf3c, XI, list(range(3)), None, solver="milp")
    tree = DecisionTreeClassifier(max_depth=4, min_samples_leaf=6, random_state=0).fit(XI, Y2)
    assert (tree.predict_proba(grid_of(XI, 0)).max(1) == 0.5).any()  # leaves of even counts
    _exact(tree, XI, rows_not(tree, XI, 0, 8), 0)


def test_target_conditions_match_argmax_with_ties():
    """The target as conditions on the raw outputs holds exactly where argmax (the first of
    equal outputs) reaches it: raw outputs drawn from a few values, so ties are everywhere."""
    from types import SimpleNamespace

    from explainers.counterfactuals._problem import Target
    from explainers.counterfactuals._trees import goal_for

    rng = np.random.default_rng(0)
    for k in (2, 3, 4):
        ens = SimpleNamespace(n_raw=k, transform="softmax" if k > 2 else "identity")
        raw = rng.integers(0, 3, size=(400, k)) / 4.0
        top = raw.argmax(1)
        for idx in range(k):
            for kind, want in (("class", top == idx), ("not_class", top != idx)):
                g = goal_for(ens, Target(kind, label=idx, index=idx), 1e-7)
                if g.any_of:
                    got = np.any([raw @ w >= lo for w, lo in g.any_of], axis=0)
                else:
                    got = np.all([raw @ w >= lo for w, lo in g.rows], axis=0)
                np.testing.assert_array_equal(got, want, err_msg=f"k={k} {kind} {idx}")
    # one margin (a sigmoid): class 1 above 0, class 0 below (0 itself differs between libraries)
    ens = SimpleNamespace(n_raw=1, transform="sigmoid")
    m = rng.normal(size=200)[:, None]
    for idx in (0, 1):
        g = goal_for(ens, Target("class", label=idx, index=idx), 1e-7)
        got = np.all([m @ w >= lo for w, lo in g.rows], axis=0)
        np.testing.assert_array_equal(got, (m[:, 0] > 0) == bool(idx))


def test_gradient_boosting_binary_exact():
    gb = GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0).fit(XI, Y2)
    for target in (1, 0):
        _exact(gb, XI, rows_not(gb, XI, target, 4), target)
    _exact(gb, XI, rows_not(gb, XI, 1, 2), 1, solver="milp")


def test_three_class_forest_exact():
    rf = RandomForestClassifier(5, max_depth=4, random_state=0).fit(XI, Y3)
    for target in (0, 2):
        _exact(rf, XI, rows_not(rf, XI, target, 4), target)
    _exact(rf, XI, list(range(6)), None)
    _exact(rf, XI, rows_not(rf, XI, 1, 2), 1, solver="milp")
    _exact(rf, XI, [6, 7], None, solver="milp")


def test_three_class_hist_gradient_boosting_exact():
    hgb = HistGradientBoostingClassifier(max_iter=10, max_depth=3, random_state=0).fit(XI, Y3)
    for target in (0, 2):
        _exact(hgb, XI, rows_not(hgb, XI, target, 4), target)
    _exact(hgb, XI, list(range(6)), None)
    _exact(hgb, XI, rows_not(hgb, XI, 0, 2), 0, solver="milp")
    _exact(hgb, XI, [0, 1], None, solver="milp")


def test_regressors_exact_with_an_interval():
    tree = DecisionTreeRegressor(max_depth=5, random_state=0).fit(XI, YR)
    target = (3.3, 8.1)
    res = _exact(tree, XI, rows_not(tree, XI, target, 5), target)
    assert res.method == "tree enumeration"
    gbr = GradientBoostingRegressor(n_estimators=15, max_depth=3, random_state=0).fit(XI, YR)
    _exact(gbr, XI, rows_not(gbr, XI, target, 4), target)
    _exact(gbr, XI, rows_not(gbr, XI, (-np.inf, -6.0), 3), (-np.inf, -6.0))
    _exact(gbr, XI, rows_not(gbr, XI, target, 2), target, solver="milp")


def test_fixed_features_and_ranges_exact():
    gbr = GradientBoostingRegressor(n_estimators=15, max_depth=3, random_state=0).fit(XI, YR)
    target = (3.3, 8.1)
    rows = rows_not(gbr, XI, target, 8)
    res = _exact(gbr, XI, rows, target, fixed=["a"])
    assert any(len(c) for c in res.counterfactuals) and any(not len(c) for c in res.counterfactuals)
    rf = RandomForestClassifier(5, max_depth=5, random_state=0).fit(XI, Y2)
    ranges = {"a": (4, 15), "c": (0, 6)}
    _exact(rf, XI, rows_not(rf, XI, 1, 5), 1, ranges=ranges)
    _exact(rf, XI, rows_not(rf, XI, 1, 3), 1, fixed=["b"], ranges=ranges, solver="milp")


def _int_and_category(seed=5):
    rng = np.random.default_rng(seed)
    X = XI[["a", "b"]].assign(k=pd.Categorical(rng.choice(["p", "q", "r", "s"], len(XI)),
                                                categories=["p", "q", "r", "s"]))
    y = ((X.a - X.b + 6 * (X.k == "r") - 4 * (X.k == "p") + rng.normal(0, 3, len(X))) > 0).astype(int).to_numpy()
    return X, y


def test_categories_exact_native_and_one_hot_pipeline():
    """A category change counts 1: with a category column the grid is its categories times
    the integers; both a model's own categorical splits and a one-hot pipeline folded into
    its trees are exact."""
    XK, yk = _int_and_category()
    hgb = HistGradientBoostingClassifier(max_iter=10, max_depth=3, categorical_features=["k"],
                                         random_state=0).fit(XK, yk)
    _exact(hgb, XK, rows_not(hgb, XK, 1, 5), 1)
    _exact(hgb, XK, rows_not(hgb, XK, 1, 4), 1, ranges={"k": ["q", "s"]})
    _exact(hgb, XK, rows_not(hgb, XK, 1, 2), 1, solver="milp")
    XS = XK.assign(k=XK.k.astype(str).astype(object))
    pipe = Pipeline([("pre", ColumnTransformer([("cat", OneHotEncoder(), ["k"])], remainder="passthrough")),
                     ("rf", RandomForestClassifier(5, max_depth=4, random_state=0))]).fit(XS, yk)
    res = _exact(pipe, XS, rows_not(pipe, XS, 1, 5), 1)
    assert res.method == "tree branch and bound"
    _exact(pipe, XS, rows_not(pipe, XS, 1, 3), 1, fixed=["a"], ranges={"k": ["p", "r"]})


def test_categories_exact_xgboost_and_lightgbm():
    import lightgbm as lgb
    import xgboost as xgb

    XK, yk = _int_and_category()
    booster = xgb.XGBClassifier(n_estimators=15, max_depth=3, enable_categorical=True, tree_method="hist",
                                max_cat_to_onehot=1, random_state=0, n_jobs=1).fit(XK, yk)
    _exact(booster, XK, rows_not(booster, XK, 1, 4), 1)
    gbm = lgb.LGBMClassifier(n_estimators=15, num_leaves=6, min_data_per_group=5, cat_smooth=1, verbose=-1,
                             random_state=0, n_jobs=1).fit(XK, yk)
    _exact(gbm, XK, rows_not(gbm, XK, 1, 4), 1)
    _exact(gbm, XK, rows_not(gbm, XK, 1, 2), 1, solver="milp", ranges={"k": ["q", "r", "s"]})


def test_string_classes_exact():
    ys = np.array(["hi", "lo", "mid"])[Y3]
    rf = RandomForestClassifier(3, max_depth=4, random_state=0).fit(XI, ys)
    for target in ("mid", "hi", None):
        res = _exact(rf, XI, rows_not(rf, XI, target, 4), target)
    assert res.targets[0].startswith("any class other than '")
    yb = np.where(Y2 == 1, "yes", "no")
    gb = GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(XI, yb)
    res = _exact(gb, XI, rows_not(gb, XI, "yes", 3), None)
    assert res.targets == ["class 'yes'"] * 3


def test_log_link_regressor_interval_exact():
    """A Poisson regressor's trees add up a log: an interval of outputs is an interval of logs."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    pois = HistGradientBoostingRegressor(loss="poisson", max_iter=10, max_depth=3, random_state=0)
    pois.fit(XI, np.exp(YR / 5))
    for target in ((3.0, 4.0), (20.0, np.inf), (0.0, 0.5)):
        res = _exact(pois, XI, rows_not(pois, XI, target, 3), target)
    assert all("proven" in m for m in res.messages)  # (0, 0.5): below every output the trees give


def test_boolean_column_is_a_category_exact():
    X = XI.assign(flag=(XI.a % 2 == 0))
    y = ((X.a - X.b + 8 * X.flag + np.random.default_rng(0).normal(0, 3, len(X))) > 0).astype(int).to_numpy()
    rf = RandomForestClassifier(5, max_depth=4, random_state=0).fit(X, y)
    res = _exact(rf, X, rows_not(rf, X, 1, 4), 1)
    assert "flag" not in res.scales


def test_widened_and_fractional_ranges_exact():
    rf = RandomForestClassifier(5, max_depth=5, random_state=0).fit(XI, Y2)
    _exact(rf, XI, rows_not(rf, XI, 1, 4), 1, ranges={"a": (-5, 30), "b": (2.5, 11.5)})


# ------------------------------------------------------------------ 2. validity on every family
def _check_valid(res, X, rows, reached, *, predict, fixed=(), ranges=None, categories=None, n=3,
                 exact=True, found_all=True, proba=None):
    """Every answer: predicted as the target by ``predict`` (the model's own), fixed features
    unchanged, changed values inside the ranges (categories among ``categories``), integer
    columns whole, the answers diverse, the reported distances those of the rows."""
    ranges, categories = ranges or {}, categories or {}
    assert res.rows == list(rows) and len(res.counterfactuals) == len(rows)
    assert res.optimal == [bool(o) for o in res.optimal] and len(res.optimal) == len(rows)
    if not exact:
        assert res.method == "search" and not any(res.optimal)
        assert all(np.isnan(g) for g in res.gaps)
    found = 0
    for i, row in enumerate(rows):
        x = X.iloc[row]
        cf = res.counterfactuals[i]
        if not len(cf):
            assert res.messages[i], row
            assert not found_all, (row, res.messages[i])
            continue
        found += 1
        assert res.messages[i] == "" and len(cf) <= n
        assert list(cf.columns) == list(X.columns) and (cf.dtypes == X.dtypes).all(), (cf.dtypes, X.dtypes)
        pred = np.asarray(predict(cf)).ravel()
        assert reached(pred).all(), (row, pred)
        np.testing.assert_array_equal(np.asarray(res.predictions[i]).ravel(), pred)
        if proba is not None:  # the explained output: the class probabilities (a regressor's value)
            want = np.asarray(proba(cf))
            tol = 1e-6 if want.dtype == np.float32 else 1e-9  # XGBoost computes in float32
            np.testing.assert_allclose(res.outputs[i], want, rtol=tol, atol=tol * 1e-3)
        dist, changed = distance(X, x, cf)
        np.testing.assert_allclose(res.distances[i], dist, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(res.n_changed[i], changed.sum(1))
        assert changed.any(1).all()
        for j, c in enumerate(X.columns):
            col = cf[c]
            if c in fixed:
                assert all(v == x[c] or (pd.isna(v) and pd.isna(x[c])) for v in col), (c, col.tolist(), x[c])
                continue
            moved = changed[:, j]
            if is_cat(X[c]):
                allowed = categories.get(c, set(X[c].dropna().astype(str)))
                allowed = set(map(str, ranges.get(c, allowed)))
                assert all(str(v) in allowed for v in col[moved]), (c, col[moved].tolist(), allowed)
                continue
            v = col.to_numpy(float)[moved]
            lo, hi = ranges.get(c, (X[c].min(), X[c].max()))
            assert np.all((v >= lo) & (v <= hi)), (c, v, lo, hi)
            if pd.api.types.is_integer_dtype(X[c].dtype):
                assert np.all(v == np.round(v))
        # diversity: a later answer keeps at least one feature of every earlier one's changes
        for k in range(len(cf)):
            for m in range(k):
                assert not changed[k, changed[m]].all(), (row, changed)
        obj = dist + TIE * changed.sum(1)
        assert np.all(np.diff(obj) >= -1e-9), obj
        if exact:
            assert res.gaps[i] >= 0 and (res.gaps[i] == 0) == res.optimal[i]
    return found


def _classifier_case(model, X, target=None, k=4, predict=None, fixed=(), ranges=None, categories=None,
                     exact=True, found_all=True, n=3, **kw):
    proba = kw.pop("proba", getattr(model, "predict_proba", None) if predict is None else None)
    predict = predict or model.predict
    own = np.asarray(predict(X)).ravel()
    rows = [int(i) for i in np.nonzero(own != target)[0][:k]] if target is not None else list(range(k))
    res = counterfactuals(model, X, rows, target=target, fixed=fixed, ranges=ranges, n=n, time_limit=20, **kw)
    for i, row in enumerate(rows):
        want = reached_fn(model, X, row, target) if target is not None or predict is model.predict else \
            (lambda p, o=own[row]: np.asarray(p).ravel() != o)
        _check_valid(_one(res, i), X, [row], want, predict=predict, fixed=fixed, ranges=ranges,
                     categories=categories, exact=exact, found_all=found_all, n=n, proba=proba)
    return res


def _one(res, i):
    """Row i of a result, as a result of one row."""
    import copy

    r = copy.copy(res)
    for name in ("rows", "counterfactuals", "predictions", "outputs", "distances", "n_changed", "optimal",
                 "gaps", "messages", "targets"):
        setattr(r, name, [getattr(res, name)[i]])
    return r


def test_forest_continuous_with_fixed_and_ranges():
    rf = RandomForestClassifier(25, max_depth=6, random_state=0).fit(XL, YL)
    res = _classifier_case(rf, XL, target=1, k=5)
    assert res.method == "tree branch and bound" and all(res.optimal)
    assert res.targets == ["class 1"] * 5
    calls = []
    counterfactuals(rf, XL, [3, 5], target=1, n=1, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(1, 2), (2, 2)]
    ranges = {"income": (20000, 40000), "late": (0, 2)}
    res = _classifier_case(rf, XL, target=1, k=5, fixed=["age", "debt"], ranges=ranges, found_all=False)
    assert any(len(c) for c in res.counterfactuals)


def test_empty_cells_hist_gradient_boosting_and_xgboost():
    """Rows with empty cells (the models route NaN): the answers stay valid; a fixed empty
    cell stays empty; giving an empty cell a value counts 1."""
    import xgboost as xgb

    rng = np.random.default_rng(3)
    XN = XL.astype({"age": float, "late": float})
    XN = XN.mask(rng.random(XN.shape) < 0.15)
    hgb = HistGradientBoostingClassifier(max_iter=20, max_depth=4, random_state=0).fit(XN, YL)
    booster = xgb.XGBClassifier(n_estimators=20, max_depth=4, random_state=0, n_jobs=1).fit(XN, YL)
    for model in (hgb, booster):
        rows = [int(i) for i in np.nonzero((model.predict(XN) == 0) & XN.isna().any(axis=1).to_numpy())[0][:5]]
        for fixed in ((), ("income",)):
            res = counterfactuals(model, XN, rows, target=1, fixed=fixed, time_limit=20)
            assert all(o or "proven" in m for o, m in zip(res.optimal, res.messages)), res.messages
            found = _check_valid(res, XN, rows, reached_fn(model, XN, 0, 1), predict=model.predict, fixed=fixed,
                                 found_all=not fixed)
            assert found >= 3
            # some answer gives an empty cell a value, at a cost of exactly 1 for it
            if not fixed:
                filled = [(cf[XN.iloc[r].isna().index[XN.iloc[r].isna()]].notna().any(axis=1))
                          for r, cf in zip(rows, res.counterfactuals)]
                assert any(f.any() for f in filled)


def test_extra_trees_regressor_interval():
    et = ExtraTreesRegressor(20, max_depth=6, random_state=0).fit(XL, SL)
    target = (0.5, 2.0)
    rows = rows_not(et, XL, target, 4)
    res = counterfactuals(et, XL, rows, target=target, fixed=["age"], n=3, time_limit=20)
    _check_valid(res, XL, rows, reached_fn(et, XL, 0, target), predict=et.predict, fixed=["age"], proba=et.predict)
    assert all(res.optimal)


def test_gradient_boosting_three_classes():
    y3 = np.digitize(SL, [-0.5, 0.5])
    gb = GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0).fit(XL, y3)
    _classifier_case(gb, XL, target=2, k=3)
    _classifier_case(gb, XL, target=None, k=3)


def test_hist_gradient_boosting_with_a_category_column():
    hgb = HistGradientBoostingClassifier(max_iter=20, max_depth=4, categorical_features=["plan"],
                                         random_state=0).fit(XC, YL)
    res = _classifier_case(hgb, XC, target=1, k=5, categories={"plan": {"basic", "plus", "gold"}})
    assert res.method == "tree branch and bound"
    # a category change costs 1: the distance check in _check_valid holds it; restricted categories
    res = _classifier_case(hgb, XC, target=1, k=5, ranges={"plan": ["gold"]}, found_all=False)
    assert any(len(c) for c in res.counterfactuals)


def _xgb_data():
    import xgboost as xgb

    clf = xgb.XGBClassifier(n_estimators=30, max_depth=4, learning_rate=0.3, random_state=0, n_jobs=1).fit(XL, YL)
    return clf


def test_xgboost_object_and_json_file(tmp_path):
    from explainers.io import load_model

    clf = _xgb_data()
    res = _classifier_case(clf, XL, target=1, k=4)
    assert res.method == "tree branch and bound" and all(res.optimal)
    path = tmp_path / "m.json"
    clf.save_model(path)
    native = load_model(path)
    res = _classifier_case(native, XL, target=1, k=4)
    assert all(res.optimal)
    # the library's own predict agrees on the file's answers
    for cf in res.counterfactuals:
        assert (clf.predict(cf) == 1).all()
    res = _classifier_case(native, XL, target=1, k=2, solver="milp", n=2)
    for cf in res.counterfactuals:
        assert (clf.predict(cf) == 1).all()


def test_xgboost_multiclass_object():
    import xgboost as xgb

    y3 = np.digitize(SL, [-0.5, 0.5])
    clf = xgb.XGBClassifier(n_estimators=10, max_depth=3, random_state=0, n_jobs=1).fit(XL, y3)
    _classifier_case(clf, XL, target=0, k=3)
    _classifier_case(clf, XL, target=None, k=3)


def test_lightgbm_object_and_text_file():
    import lightgbm as lgb

    from explainers.io import load_model

    clf = lgb.LGBMClassifier(n_estimators=30, num_leaves=8, verbose=-1, random_state=0, n_jobs=1).fit(XL, YL)
    res = _classifier_case(clf, XL, target=1, k=4)
    assert res.method == "tree branch and bound" and all(res.optimal)
    native = load_model(clf.booster_.model_to_string().encode(), filename="m.txt")
    res = _classifier_case(native, XL, target=1, k=4)
    for cf in res.counterfactuals:
        assert (clf.predict(cf) == 1).all()
    reg = lgb.LGBMRegressor(n_estimators=20, num_leaves=8, verbose=-1, random_state=0, n_jobs=1).fit(XL, SL)
    target = (0.5, 3.0)
    rows = rows_not(reg, XL, target, 3)
    res = counterfactuals(reg, XL, rows, target=target, time_limit=20)
    _check_valid(res, XL, rows, reached_fn(reg, XL, 0, target), predict=reg.predict)


def test_catboost_object_and_file(tmp_path):
    import catboost as cb

    from explainers.io import load_model

    clf = cb.CatBoostClassifier(iterations=30, depth=4, verbose=0, random_seed=0, allow_writing_files=False,
                                thread_count=1)
    clf.fit(XL, YL)
    predict = lambda d: np.asarray(clf.predict(d)).ravel().astype(int)
    res = _classifier_case(clf, XL, target=1, k=4, predict=predict)
    assert res.method == "tree branch and bound" and all(res.optimal)
    path = tmp_path / "m.json"
    clf.save_model(str(path), format="json")
    native = load_model(path)
    res = _classifier_case(native, XL, target=1, k=4)
    for cf in res.counterfactuals:
        assert (predict(cf) == 1).all()


def test_pipeline_with_text_categories_folds_into_trees():
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["plan"]),
                             ("num", StandardScaler(), ["income", "debt", "age", "late"])])
    pipe = Pipeline([("pre", pre), ("rf", RandomForestClassifier(20, max_depth=5, random_state=0))]).fit(XT, YL)
    cats = {"plan": set(pipe.named_steps["pre"].named_transformers_["cat"].categories_[0])}
    res = _classifier_case(pipe, XT, target=1, k=5, categories=cats)
    assert res.method == "tree branch and bound" and all(res.optimal)
    # a category the model reads: some answers change it (to one of the encoder's categories)
    res = _classifier_case(pipe, XT, target=1, k=5, categories=cats, fixed=["income", "debt"], found_all=False)
    assert any((cf["plan"] != XT["plan"].iloc[r]).any() for r, cf in zip(res.rows, res.counterfactuals))


def test_non_tree_models_use_the_search():
    lr = make_pipeline(StandardScaler(), LogisticRegression()).fit(XL, YL)
    res = _classifier_case(lr, XL, target=1, k=4, exact=False)
    assert "not proven" in " ".join(res.notes) or "search" in " ".join(res.notes).lower()
    knn = KNeighborsClassifier(15).fit(XL, YL)
    _classifier_case(knn, XL, target=1, k=3, exact=False, fixed=["age"], ranges={"income": (15000, 45000)},
                     found_all=False)
    # a text column: the search changes it only to values the data holds, within ranges
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["plan"]),
                             ("num", StandardScaler(), ["income", "debt", "age", "late"])])
    lr_text = Pipeline([("pre", pre), ("lr", LogisticRegression())]).fit(XT, YL)
    res = _classifier_case(lr_text, XT, target=1, k=4, exact=False, fixed=["income"],
                           ranges={"plan": ["plus", "gold"], "debt": (0.0, 0.5)}, found_all=False)
    assert any(len(c) for c in res.counterfactuals)
    mlp = make_pipeline(StandardScaler(), MLPRegressor(hidden_layer_sizes=(16,), max_iter=400, random_state=0)).fit(XL, SL)
    target = (0.5, 2.0)
    rows = rows_not(mlp, XL, target, 3)
    res = counterfactuals(mlp, XL, rows, target=target, n=3, time_limit=20)
    _check_valid(res, XL, rows, reached_fn(mlp, XL, 0, target), predict=mlp.predict, exact=False,
                 proba=mlp.predict)
    # the search is seeded: the same call gives the same rows
    again = counterfactuals(mlp, XL, rows, target=target, n=3, time_limit=20)
    for a, b in zip(res.counterfactuals, again.counterfactuals):
        pd.testing.assert_frame_equal(a, b)


def test_rows_are_positions_whatever_the_index():
    """rows are positions; an index of repeated labels changes nothing."""
    X = XL.set_axis([f"r{i % 7}" for i in range(len(XL))])
    rf = RandomForestClassifier(5, max_depth=4, random_state=0).fit(XL, YL)
    lr = make_pipeline(StandardScaler(), LogisticRegression()).fit(XL, YL)
    for model in (rf, lr):
        rows = rows_not(model, XL, 1, 3)
        a = counterfactuals(model, X, np.asarray(rows), target=1)
        b = counterfactuals(model, XL, rows, target=1)
        assert a.rows == rows
        for ca, cb, da, db in zip(a.counterfactuals, b.counterfactuals, a.distances, b.distances):
            pd.testing.assert_frame_equal(ca, cb)
            np.testing.assert_array_equal(da, db)


# ------------------------------------------------------------------ 3. exact vs search
@pytest.mark.parametrize("fixed, ranges", [((), None), (("age",), {"debt": (0.0, 0.5), "income": (15000, 60000)})])
def test_search_never_beats_the_exact_answer_beyond_the_cells_rounding(fixed, ranges):
    rf = RandomForestClassifier(20, max_depth=5, random_state=0).fit(XL, YL)
    rows = rows_not(rf, XL, 1, 6)
    kw = {"target": 1, "n": 1, "time_limit": 30, "fixed": fixed, "ranges": ranges}
    exact = counterfactuals(rf, XL, rows, **kw)
    search = counterfactuals(rf, XL, rows, solver="search", **kw)
    assert exact.method == "tree branch and bound" and search.method == "search"
    sc = scales_of(XL)
    # each changed numeric feature's point sits within one rounding step of its cell's near end
    slack = sum(10.0 ** math.floor(math.log10(1e-3 * s)) / s for s in sc.values()) + TIE * XL.shape[1]
    assert 0 < slack < 5e-3
    compared = 0
    for i, row in enumerate(rows):
        reached = reached_fn(rf, XL, row, 1)
        checks = {"predict": rf.predict, "n": 1, "fixed": fixed, "ranges": ranges}
        _check_valid(_one(exact, i), XL, [row], reached, found_all=False, **checks)
        _check_valid(_one(search, i), XL, [row], reached, exact=False, found_all=False, **checks)
        assert not search.optimal[i]
        if not len(exact.counterfactuals[i]):
            assert "proven" in exact.messages[i] and not len(search.counterfactuals[i])
            continue
        assert exact.optimal[i]
        if len(search.counterfactuals[i]):
            compared += 1
            d_exact = exact.distances[i][0] + TIE * exact.n_changed[i][0]
            d_search = search.distances[i][0] + TIE * search.n_changed[i][0]
            assert d_search >= d_exact - slack, (row, d_search, d_exact)
    assert compared >= 4


# ------------------------------------------------------------------ 4. messages and refusals
def test_all_fixed_says_so():
    rf = RandomForestClassifier(5, max_depth=4, random_state=0).fit(XI, Y2)
    for model, X in ((rf, XI), (make_pipeline(StandardScaler(), LogisticRegression()).fit(XI, Y2), XI)):
        row = rows_not(model, X, 1, 1)[0]
        res = counterfactuals(model, X, [row], target=1, fixed=list(X.columns))
        cf = res.counterfactuals[0]
        assert len(cf) == 0 and list(cf.columns) == list(X.columns)
        assert "fixed" in res.messages[0].lower() and not res.optimal[0]
        assert len(res.distances[0]) == 0 and len(res.predictions[0]) == 0


def test_unreachable_target_is_proven():
    rf = RandomForestClassifier(5, max_depth=4, random_state=0).fit(XI, Y2)
    proven = 0
    for row in rows_not(rf, XI, 1, 30):
        x = XI.iloc[row]
        ranges = {c: (x[c] - 1, x[c] + 1) for c in XI.columns}
        grid = grid_of(XI, row, ranges=ranges)
        if (rf.predict(grid) == 1).any():
            continue
        for solver in ("bnb", "milp"):
            res = counterfactuals(rf, XI, [row], target=1, ranges=ranges, solver=solver)
            assert len(res.counterfactuals[0]) == 0
            assert "proven" in res.messages[0] and "class 1" in res.messages[0], res.messages[0]
        proven += 1
        if proven == 2:
            break
    assert proven == 2
    # a single tree: its leaves' boxes say so too
    tree = DecisionTreeClassifier(max_depth=4, random_state=0).fit(XI, Y2)
    for row in rows_not(tree, XI, 1, 30):
        x = XI.iloc[row]
        ranges = {"c": (x["c"] - 2, x["c"] + 2)}
        if (tree.predict(grid_of(XI, row, fixed=["a", "b"], ranges=ranges)) == 1).any():
            continue
        res = counterfactuals(tree, XI, [row], target=1, fixed=["a", "b"], ranges=ranges)
        assert res.method == "tree enumeration"
        assert len(res.counterfactuals[0]) == 0 and "proven" in res.messages[0], res.messages[0]
        break
    else:
        pytest.fail("no row of the tree is unreachable with a and b fixed")


def test_search_says_none_was_found():
    lr = make_pipeline(StandardScaler(), LogisticRegression()).fit(XL, YL)
    fixed = ["income", "debt", "late"]
    checked = 0
    for row in rows_not(lr, XL, 1, 20):
        x = XL.iloc[row]
        ranges = {"age": (x["age"] - 1, x["age"] + 1)}
        grid = grid_of(XL, row, fixed=fixed, ranges=ranges)
        assert len(grid) == 3
        if (lr.predict(grid) == 1).any():
            continue
        res = counterfactuals(lr, XL, [row], target=1, fixed=fixed, ranges=ranges, time_limit=2)
        assert len(res.counterfactuals[0]) == 0 and not res.optimal[0]
        assert "none was found in 2 s" in res.messages[0], res.messages[0]
        checked += 1
        if checked == 2:
            break
    assert checked == 2


def test_a_row_already_at_the_target():
    rf = RandomForestClassifier(5, max_depth=4, random_state=0).fit(XI, Y2)
    row = 0
    own = rf.predict(XI.iloc[[row]])[0]
    res = counterfactuals(rf, XI, [row], target=own)
    assert len(res.counterfactuals[0]) == 0 and "already" in res.messages[0]
    gbr = GradientBoostingRegressor(n_estimators=10, random_state=0).fit(XI, YR)
    p = gbr.predict(XI.iloc[[row]])[0]
    res = counterfactuals(gbr, XI, [row], target=(p - 1, p + 1))
    assert len(res.counterfactuals[0]) == 0 and "already" in res.messages[0]


@pytest.mark.parametrize("kwargs, match, error", [
    ({"fixed": ["nope"]}, "nope", InvalidFeatureError),
    ({"ranges": {"nope": (0, 1)}}, "nope", InvalidFeatureError),
    ({"ranges": {"income": (5, 1)}}, "empty", InvalidParameterError),
    ({"ranges": {"plan": ["platinum"]}}, "platinum", InvalidParameterError),
    ({"ranges": ["income"]}, "dict", InvalidParameterError),
    ({"ranges": {"income": "high"}}, "lo, hi", InvalidParameterError),
    ({"target": "maybe"}, "not one of the model's classes", InvalidParameterError),
    ({"rows": [10_000]}, "outside", InvalidParameterError),
    ({"rows": [-1]}, "outside", InvalidParameterError),
    ({"rows": []}, "empty", InvalidParameterError),
    ({"rows": "x"}, "row positions", InvalidParameterError),
    ({"rows": [2.5]}, "row positions", InvalidParameterError),
    ({"n": 0}, "'n'", InvalidParameterError),
    ({"n": 2.5}, "'n'", InvalidParameterError),
    ({"n": 21}, "'n'", InvalidParameterError),
    ({"time_limit": 0}, "time_limit", InvalidParameterError),
    ({"time_limit": -1.0}, "time_limit", InvalidParameterError),
    ({"time_limit": float("nan")}, "time_limit", InvalidParameterError),
    ({"solver": "magic"}, "solver", InvalidParameterError),
])
def test_bad_inputs_raise_clear_errors(hgb_cat, kwargs, match, error):
    call = {"rows": [0], "target": 1, **kwargs}
    with pytest.raises(error, match=match) as info:
        counterfactuals(hgb_cat, XC, **call)
    assert isinstance(info.value, ExplainerError)




@pytest.fixture(scope="module")
def hgb_cat():
    return HistGradientBoostingClassifier(max_iter=5, categorical_features=["plan"], random_state=0).fit(XC, YL)


def test_refusals_of_the_task():
    gbr = GradientBoostingRegressor(n_estimators=5, random_state=0).fit(XI, YR)
    with pytest.raises(InvalidParameterError, match=r"target=\(lo, hi\)"):
        counterfactuals(gbr, XI, [0])
    with pytest.raises(InvalidParameterError, match="empty"):
        counterfactuals(gbr, XI, [0], target=(3.0, 1.0))
    with pytest.raises(InvalidParameterError, match="lo, hi"):
        counterfactuals(gbr, XI, [0], target="big")
    lr = make_pipeline(StandardScaler(), LogisticRegression()).fit(XI, Y2)
    for solver in ("milp", "bnb"):
        with pytest.raises(InvalidParameterError, match="solves tree models"):
            counterfactuals(lr, XI, [0], target=1, solver=solver)
    with pytest.raises(InvalidFeatureError, match="nope"):
        counterfactuals(lr, XI, [0], fixed="nope")


# ------------------------------------------------------------------ 5. time limit
@pytest.fixture(scope="module")
def big_forest():
    return RandomForestClassifier(200, max_depth=8, random_state=0, n_jobs=1).fit(XL, YL)


@pytest.mark.parametrize("solver", ["bnb", "milp"])
def test_a_tiny_time_limit_still_answers(big_forest, solver):
    rf = big_forest
    rows = rows_not(rf, XL, 1, 2)
    res = counterfactuals(rf, XL, rows, target=1, n=3, time_limit=1e-3, solver=solver)
    assert len(res.counterfactuals) == len(rows) == len(res.gaps) == len(res.messages)
    for i, row in enumerate(rows):
        cf = res.counterfactuals[i]
        if len(cf):
            _check_valid(_one(res, i), XL, [row], reached_fn(rf, XL, row, 1), predict=rf.predict)
            assert res.gaps[i] >= 0
            assert (res.gaps[i] == 0) == res.optimal[i]
        else:
            assert "none was found" in res.messages[i] and not res.optimal[i], res.messages[i]


# ------------------------------------------------------------------ 6. the branch and bound's work
def _box_search(model, X, row, target):
    from explainers.counterfactuals import _model_categories, _row_cells
    from explainers.counterfactuals._bnb import BoxSearch
    from explainers.counterfactuals._problem import build_problem, parse_target
    from explainers.counterfactuals._trees import TIE as tie
    from explainers.counterfactuals._trees import goal_rows
    from explainers.model import ModelAdapter
    from explainers.trees import flatten_model

    assert tie == TIE
    adapter = ModelAdapter(model)
    ens = flatten_model(model)
    problem = build_problem(adapter, X, (), None, _model_categories(ens, X))
    cells = _row_cells(problem, ens, row)
    goal = parse_target(adapter, target, model.predict(X.iloc[[row]])[0])
    rows_, any_of = goal_rows(ens, goal, 1e-7)
    return BoxSearch(ens, cells, rows_, any_of, TIE), cells


def test_branch_and_bound_prunes_and_matches_the_cells_brute_force():
    rf = RandomForestClassifier(4, max_depth=3, random_state=0).fit(XL, YL)
    for row in rows_not(rf, XL, 1, 3):
        bs, cells = _box_search(rf, XL, row, 1)
        free = bs.free
        total = int(np.prod(bs.ncell))
        # brute force over every combination of the cells' points, judged by the model's predict
        idx = np.stack(np.meshgrid(*[np.arange(len(cells[j].values)) for j in free], indexing="ij"), -1)
        idx = idx.reshape(-1, len(free))
        assert len(idx) == total
        pts = pd.DataFrame(np.repeat(XL.iloc[[row]].to_numpy(float), total, 0), columns=XL.columns)
        cost = np.zeros(total)
        for s, j in enumerate(free):
            c = cells[j]
            pts.iloc[:, j] = np.asarray(c.values, float)[idx[:, s]]
            cost += c.cost[idx[:, s]] + TIE * (idx[:, s] != c.origin)
        pts = pts.astype(XL.dtypes.to_dict())
        ok = rf.predict(pts) == 1
        changed_sets = []
        for k in range(3):
            got, proven = bs.solve(30)
            allowed = ok.copy()
            for S in changed_sets:
                allowed &= ~np.all([idx[:, free.index(j)] != cells[j].origin for j in S], axis=0)
            if got is None:
                assert proven and not allowed.any()
                break
            chosen, optimal, gap = got
            assert optimal and gap == 0
            mine = sum(cells[j].cost[i] + (TIE if i != cells[j].origin else 0) for j, i in chosen.items())
            assert mine == pytest.approx(cost[allowed].min(), abs=1e-12), (row, k)
            S = [j for j, i in chosen.items() if i != cells[j].origin]
            changed_sets.append(S)
            bs.forbid(S)
        # the work: far fewer boxes than the cells' combinations (about 30 of 1,320 here)
        assert 0 < bs.boxes < total / 4, (bs.boxes, total)
    assert total > 200


def test_routing_of_every_split_is_the_trees_own_rule():
    """The branch and bound reads a plain threshold split as a prefix of the cells (a binary
    search) and any other (categorical sets, one-hot, missing values) cell by cell: for every
    split on a free feature, the cells it sends left are exactly those the trees' rule does."""
    import lightgbm as lgb
    import xgboost as xgb

    from explainers.trees import flatten_model

    XK, yk = _int_and_category()
    models = [
        (RandomForestClassifier(5, max_depth=6, random_state=0).fit(XL, YL), XL),
        (xgb.XGBClassifier(n_estimators=8, max_depth=3, enable_categorical=True, tree_method="hist",
                           max_cat_to_onehot=1, random_state=0, n_jobs=1).fit(XK, yk), XK),
        (lgb.LGBMClassifier(n_estimators=8, num_leaves=6, min_data_per_group=5, cat_smooth=1, verbose=-1,
                            random_state=0, n_jobs=1).fit(XK, yk), XK),
    ]
    kinds = set()
    for model, X in models:
        ens = flatten_model(model)
        for row in rows_not(model, X, 1, 2):
            bs, cells = _box_search(model, X, row, 1)
            for node in np.flatnonzero(ens.left >= 0):
                s = bs.slot[node]
                if s < 0:
                    continue
                c = cells[bs.free[s]]
                want = np.asarray(ens.goes_left(c.coded, np.full(len(c.coded), node)), bool)
                k, cut, pos = bs.kind[node], bs.cut[node], np.arange(len(want))
                got = (pos < cut if k == 1 else pos >= cut if k == 2 else
                       np.diff(bs.cum[bs.cum_off[node]:bs.cum_off[node] + len(want) + 1]) > 0)
                np.testing.assert_array_equal(got, want)
                kinds.add(int(k))
    assert {1, 2} <= kinds or {1, 0} <= kinds, kinds


def test_greedy_first_answer_is_valid_and_never_nearer_than_the_optimum():
    from explainers.counterfactuals._bnb import _greedy, _point_ok

    rf = RandomForestClassifier(20, max_depth=5, random_state=0).fit(XL, YL)
    seen = 0
    for row in rows_not(rf, XL, 1, 6):
        bs, cells = _box_search(rf, XL, row, 1)
        pt = bs.origin.copy()
        no = np.zeros((1, len(bs.free)), np.bool_)
        args = bs._routes()
        dist = _greedy(pt, bs.ncell, *args, bs.cost_off, bs.cost, no, 0, 4 * len(bs.free) + 8)
        got, _ = bs.solve(60)
        if not np.isfinite(dist):
            continue
        seen += 1
        assert _point_ok(pt, *args, np.empty(len(bs.const)))
        assert dist == pytest.approx(sum(bs.cost[o + k] for o, k in zip(bs.cost_off, pt)), abs=1e-12)
        chosen, optimal, _ = got
        best = sum(cells[j].cost[i] + (TIE if i != cells[j].origin else 0) for j, i in chosen.items())
        assert optimal and best <= dist + 1e-12
        # and the model's own predict agrees that the greedy point reaches the target
        x = XL.iloc[[row]].copy()
        for s, j in enumerate(bs.free):
            x.iloc[0, j] = cells[j].values[pt[s]]
        assert rf.predict(x.astype(XL.dtypes.to_dict()))[0] == 1
    assert seen >= 4


def test_a_search_stopped_at_once_returns_a_valid_answer_with_its_gap():
    """No time at all: the greedy answer comes back, not proven, with a gap in [0, 1]."""
    rf = RandomForestClassifier(30, max_depth=6, random_state=0).fit(XL, YL)
    for row in rows_not(rf, XL, 1, 4):
        bs, cells = _box_search(rf, XL, row, 1)
        got, proven = bs.solve(0.0)
        if got is None:
            continue
        chosen, optimal, gap = got
        assert optimal == proven and (gap == 0) == optimal and 0 <= gap <= 1
        x = XL.iloc[[row]].copy()
        for j, i in chosen.items():
            x.iloc[0, j] = cells[j].values[i]
        assert rf.predict(x.astype(XL.dtypes.to_dict()))[0] == 1


def test_auto_hands_an_unproven_answer_to_highs(monkeypatch):
    """A branch and bound stopped at once (its greedy answer only, unproven): "auto" gets its
    answers from HiGHS, seeded with that one; the same nearest distances as the branch and
    bound alone, every answer exact, and labelled so."""
    from explainers.counterfactuals import _bnb, _trees

    gb = GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(XI, Y2)
    rows = rows_not(gb, XI, 1, 3)
    alone = counterfactuals(gb, XI, rows, target=1, solver="bnb", time_limit=60)
    monkeypatch.setattr(_trees, "AUTO_BNB_SECONDS", 0.0)
    monkeypatch.setattr(_trees, "AUTO_BNB_SHARE", 0.0)
    monkeypatch.setattr(_bnb.BoxSearch, "_run", lambda self, *a: (1, True))  # stopped before any box
    auto = counterfactuals(gb, XI, rows, target=1, time_limit=60)
    assert auto.method == "tree branch and bound, then MILP (HiGHS)"
    assert any("HiGHS" in note for note in auto.notes)
    for i in range(len(rows)):
        assert alone.optimal[i] and auto.optimal[i]
        assert auto.distances[i][0] == pytest.approx(alone.distances[i][0], abs=1e-6)
    _check_exact(gb, XI, rows, 1, auto, (), None, 3)  # every answer, against brute force


def test_building_the_search_does_not_eat_its_time_limit(monkeypatch):
    """Compiling and setting up the branch and bound (seconds on a fresh install) happens
    before the time limit starts: a slow set-up still leaves every answer its time."""
    import time as _time

    from explainers.counterfactuals import _bnb

    rf = RandomForestClassifier(5, max_depth=4, random_state=0).fit(XL, YL)
    rows = rows_not(rf, XL, 1, 2)
    quick = counterfactuals(rf, XL, rows, target=1, n=3, time_limit=1.0)
    warm = _bnb.BoxSearch.warm
    monkeypatch.setattr(_bnb.BoxSearch, "warm", lambda self: (_time.sleep(1.2), warm(self)))
    slow = counterfactuals(rf, XL, rows, target=1, n=3, time_limit=1.0)
    for a, b in zip(quick.counterfactuals, slow.counterfactuals):
        assert len(a) >= 2
        pd.testing.assert_frame_equal(a, b)
    assert slow.optimal == quick.optimal
