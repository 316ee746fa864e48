"""TreeShap: elementwise against shap.TreeExplainer and against the definition.

Oracles: shap's TreeExplainer (path-dependent and interventional, raw output);
where shap has no answer (multiclass GradientBoosting, masked features) or a
wrong one (interventional ExtraTrees trained on NaN), the definition: a
brute-force Shapley sum over all coalitions of the cover-weighted value
function, or ExactShap with the same background.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import Ridge
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from explainers import ModelAdapter
from explainers.trees import flatten_model
from explainers.errors import ExplainerError, InvalidModelError, InvalidParameterError
from explainers.shap import ExactShap, TreeShap, explain

import shap  # noqa: E402  (test-only oracle, in requirements-dev.txt)

P = 5
ATOL = 1e-6


# ------------------------------------------------------------------ helpers
def _data(nan: bool, n: int = 150, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, P))
    X[:, 4] = np.round(X[:, 4])  # a few distinct values: ties and thresholds on .5
    y = X[:, 0] + X[:, 1] * X[:, 2] + (X[:, 3] > 0) + 0.1 * rng.normal(size=n)
    if nan:
        X[rng.random(X.shape) < 0.12] = np.nan
    return X, y


def _classes(y, k):
    return np.digitize(y, np.quantile(y, np.linspace(0, 1, k + 1)[1:-1]))


MODELS = {
    "tree_reg": lambda d: DecisionTreeRegressor(max_depth=d, random_state=0),
    "tree_clf3": lambda d: DecisionTreeClassifier(max_depth=d, random_state=0),
    "rf_reg": lambda d: RandomForestRegressor(4, max_depth=d, random_state=0),
    "rf_clf2": lambda d: RandomForestClassifier(4, max_depth=d, random_state=0),
    "et_reg": lambda d: ExtraTreesRegressor(4, max_depth=d, random_state=0),
    "et_clf3": lambda d: ExtraTreesClassifier(4, max_depth=d, random_state=0),
    "gb_reg": lambda d: GradientBoostingRegressor(n_estimators=5, max_depth=d, random_state=0),
    "gb_clf2": lambda d: GradientBoostingClassifier(n_estimators=5, max_depth=d, random_state=0),
    "hgb_reg": lambda d: HistGradientBoostingRegressor(max_iter=5, max_depth=d + 1, random_state=0),
    "hgb_clf2": lambda d: HistGradientBoostingClassifier(max_iter=5, max_depth=d + 1, random_state=0),
    "hgb_clf3": lambda d: HistGradientBoostingClassifier(max_iter=4, max_depth=d + 1, random_state=0),
}
N_CLASSES = {"tree_clf3": 3, "rf_clf2": 2, "et_clf3": 3, "gb_clf2": 2, "hgb_clf2": 2, "hgb_clf3": 3}
NO_NAN = {"gb_reg", "gb_clf2"}  # GradientBoosting does not take NaN


def _fit(name: str, depth: int, nan: bool):
    X, y = _data(nan)
    k = N_CLASSES.get(name)
    return MODELS[name](depth).fit(X, y if k is None else _classes(y, k)), X


def _shap_values(explainer, X):
    sv = explainer.shap_values(X, check_additivity=False)
    return np.stack(sv, axis=-1) if isinstance(sv, list) else np.asarray(sv)


def _pd_value(ens, x, present):
    """f_S(x_S) by the seed's walk: a missing feature averages its children by cover."""
    xw = ens.prepare_inputs(x[None, :])[0]

    def g(node):
        if ens.left[node] < 0:
            return ens.value[node]
        f = ens.feature[node]
        l, r = ens.left[node], ens.right[node]
        if f in present:
            v = xw[f]
            go_left = bool(ens.missing_go_left[node]) if np.isnan(v) else v <= ens.threshold[node]
            return g(l if go_left else r)
        return (ens.cover[l] * g(l) + ens.cover[r] * g(r)) / ens.cover[node]

    return ens.base + ens.scale * sum(g(root) for root in ens.roots)


def _brute_pd(model, X, missing=None):
    """Shapley values of the path-dependent game by summing over all coalitions."""
    ens = flatten_model(model)
    n, p = X.shape
    missing = np.zeros((n, p), bool) if missing is None else np.broadcast_to(missing, (n, p))
    vals = np.zeros((n, p, ens.n_raw))
    preds = np.zeros((n, ens.n_raw))
    for r in range(n):
        players = [j for j in range(p) if not missing[r, j]]
        M = len(players)
        cache = {}

        def v(S):
            key = frozenset(S)
            if key not in cache:
                cache[key] = _pd_value(ens, X[r], key)
            return cache[key]

        for i in players:
            others = [j for j in players if j != i]
            for s in range(M):
                w = math.factorial(s) * math.factorial(M - s - 1) / math.factorial(M)
                for S in itertools.combinations(others, s):
                    vals[r, i] += w * (v(S + (i,)) - v(S))
        preds[r] = v(tuple(players))
    return vals, preds, _pd_value(ens, X[0], frozenset())


# --------------------------------------------------------- shap, every model
# (model, trained with NaN): GradientBoosting does not take NaN
ZOO = [(name, nan) for name in MODELS for nan in (False, True) if not (nan and name in NO_NAN)]
ZOO_IDS = [f"{name}-{'nan' if nan else 'clean'}" for name, nan in ZOO]


@pytest.mark.parametrize("depth", [1, 4, 12])
@pytest.mark.parametrize("name, nan", ZOO, ids=ZOO_IDS)
def test_path_dependent_equals_shap(name, nan, depth):
    model, X = _fit(name, depth, nan)
    rows = X[:25]
    ours = TreeShap(model).explain(rows, nan_is_missing=False)
    ref = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")
    np.testing.assert_allclose(ours.values, _shap_values(ref, rows).reshape(ours.values.shape), atol=ATOL)
    expected = np.reshape(ref.expected_value, -1)
    np.testing.assert_allclose(
        ours.base_values.reshape(len(rows), -1), np.tile(expected, (len(rows), 1)), atol=ATOL
    )
    ours.check_additivity(atol=1e-9)
    # unmasked rows: the prediction is the model's own raw output
    np.testing.assert_allclose(
        ours.predictions.reshape(len(rows), -1), flatten_model(model).predict_raw(rows), atol=1e-12
    )


@pytest.mark.parametrize("name, nan", ZOO, ids=ZOO_IDS)
def test_interventional_equals_shap(name, nan):
    model, X = _fit(name, 6, nan)
    rows, bg = X[:20], _data(False, 40, seed=1)[0]
    ours = TreeShap(model, bg, mode="interventional").explain(rows, nan_is_missing=False)
    if nan and name.startswith("et_"):
        # shap routes NaN wrongly for ExtraTrees here: use the definition instead
        ref = ExactShap(model, bg, output="raw").explain(rows, nan_is_missing=False).values
        np.testing.assert_allclose(ours.values, ref, atol=1e-10)
    else:
        ref = shap.TreeExplainer(model, bg, feature_perturbation="interventional")
        # shap's interventional sums carry float32-level round-off: scale the tolerance
        np.testing.assert_allclose(ours.values, _shap_values(ref, rows).reshape(ours.values.shape),
                                   atol=ATOL, rtol=1e-6)
    ours.check_additivity(atol=1e-9)


# ----------------------------------------------------- the definition itself
def test_multiclass_gradient_boosting_brute_force():
    X, y = _data(False, 120)
    model = GradientBoostingClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, _classes(y, 3))
    rows = X[:6]
    ours = TreeShap(model).explain(rows)
    vals, preds, base = _brute_pd(model, rows)
    np.testing.assert_allclose(ours.values, vals, atol=1e-12)
    np.testing.assert_allclose(ours.predictions, model.decision_function(rows), atol=1e-12)
    np.testing.assert_allclose(ours.base_values[0], base, atol=1e-12)
    assert ours.output == "margin" and ours.values.shape == (6, P, 3)
    # interventional: the same game as ExactShap over the decision function
    bg = X[60:80]
    iv = TreeShap(model, bg, mode="interventional").explain(rows)
    ex = ExactShap(model, bg, output="raw").explain(rows)
    np.testing.assert_allclose(iv.values, ex.values, atol=1e-12)
    np.testing.assert_allclose(iv.base_values, ex.base_values, atol=1e-12)


@pytest.mark.parametrize("n_rows", [5, 40], ids=["textbook", "pattern_tables"])
@pytest.mark.parametrize("name", ["tree_reg", "rf_clf2", "gb_clf2", "hgb_clf3"])
def test_masked_path_dependent_brute_force(name, n_rows):
    """Fewer than 16 rows per pattern run the recursion, more build pattern tables."""
    model, X = _fit(name, 5, False)
    rows = X[:n_rows]
    mask = np.zeros((n_rows, P), bool)
    mask[:, 1] = True  # one pattern shared by every row
    mask[: n_rows // 2, 3] = True  # a second one
    ours = TreeShap(model).explain(rows, mask)
    vals, preds, base = _brute_pd(model, rows, mask)
    np.testing.assert_allclose(ours.values.reshape(vals.shape), vals, atol=1e-10)
    np.testing.assert_allclose(ours.predictions.reshape(preds.shape), preds, atol=1e-10)
    assert np.all(ours.values[mask] == 0.0)
    ours.check_additivity(atol=1e-9)


@pytest.mark.parametrize("n_rows", [5, 40], ids=["textbook", "pattern_tables"])
def test_masked_interventional_equals_exact(n_rows):
    model, X = _fit("rf_clf2", 6, False)
    rows, bg = X[:n_rows], X[100:130]
    mask = np.zeros((n_rows, P), bool)
    mask[:, [0, 2]] = True
    mask[::3, 4] = True
    ours = TreeShap(model, bg, mode="interventional").explain(rows, mask)
    ex = ExactShap(model, bg).explain(rows, mask)
    np.testing.assert_allclose(ours.values, ex.values, atol=1e-12)
    np.testing.assert_allclose(ours.predictions, ex.predictions, atol=1e-12)
    # ModelAdapter.predict_masked is the same marginalisation
    masked = ModelAdapter(model).predict_masked(rows, mask, bg)
    np.testing.assert_allclose(ours.predictions, masked, atol=1e-12)


def test_nan_cells_default_auto():
    """Empty cells: a model that takes them has its own prediction explained; asked
    (or for a model that cannot take them), they become missing features."""
    model, X = _fit("hgb_reg", 5, True)
    rows = X[:30]
    nanmask = np.isnan(rows)
    assert nanmask.any()
    ours = TreeShap(model).explain(rows)
    assert ours.params["nan_is_missing"] is False and "takes empty cells" in ours.params["nan_reason"]
    np.testing.assert_allclose(ours.predictions, model.predict(rows), atol=1e-10)
    vals, preds, _ = _brute_pd(model, rows)
    np.testing.assert_allclose(ours.values, vals[..., 0], atol=1e-10)

    masked = TreeShap(model).explain(rows, nan_is_missing=True)
    assert np.all(masked.values[nanmask] == 0.0)
    vals, preds, _ = _brute_pd(model, np.where(nanmask, 0.0, rows), nanmask)
    np.testing.assert_allclose(masked.values, vals[..., 0], atol=1e-10)
    np.testing.assert_allclose(masked.predictions, preds[:, 0], atol=1e-10)

    # GradientBoosting cannot take NaN: auto masks the cells and says why
    gb, Xc = _fit("gb_reg", 3, False)
    holed = Xc[:10].copy()
    holed[::2, 1] = np.nan
    res = TreeShap(gb).explain(holed)
    assert res.params["nan_is_missing"] is True and "cannot take empty cells" in res.params["nan_reason"]
    assert np.all(res.values[np.isnan(holed)] == 0.0)
    res.check_additivity(atol=1e-9)


@pytest.mark.parametrize("mode", ["path_dependent", "interventional"])
def test_textbook_fallback_equals_tables(mode):
    """max_table_mb=0 sends every tree past the tables: to the linear walk (path-dependent)
    or the textbook recursion (interventional); algorithm= forces each way."""
    model, X = _fit("rf_reg", 8, True)
    bg = _data(False, 30, seed=2)[0] if mode == "interventional" else None
    rows = X[:30]
    mask = np.zeros((30, P), bool)
    mask[:20, 2] = True  # 20 rows: pattern tables; 10 rows: no tables
    fast = TreeShap(model, bg, mode=mode, algorithm="tables").explain(rows, mask, nan_is_missing=False)
    slow = TreeShap(model, bg, mode=mode, max_table_mb=0).explain(rows, mask, nan_is_missing=False)
    text = TreeShap(model, bg, mode=mode, algorithm="textbook").explain(rows, mask, nan_is_missing=False)
    walked = "trees_linear" if mode == "path_dependent" else "trees_textbook"
    assert fast.params["trees_with_tables"] == 4 and slow.params[walked] == 4
    assert text.params["trees_textbook"] == 4 and text.params["trees_with_tables"] == 0
    for other in (slow, text):
        np.testing.assert_allclose(fast.values, other.values, atol=1e-12)
        np.testing.assert_allclose(fast.predictions, other.predictions, atol=1e-12)


def test_per_tree_fallback(monkeypatch):
    """Trees whose paths hold too many features take the linear walk, the rest tables."""
    import explainers.shap.tree as tree_mod

    model, X = _fit("rf_reg", 6, False)
    ref = TreeShap(model, algorithm="tables").explain(X[:20])
    assert ref.params["trees_linear"] == 0 and ref.params["trees_textbook"] == 0
    monkeypatch.setattr(tree_mod, "MAX_TABLE_BITS", 4)
    mixed = TreeShap(model, algorithm="tables").explain(X[:20])
    assert 0 < mixed.params["trees_linear"] < mixed.params["n_trees"]
    np.testing.assert_allclose(mixed.values, ref.values, atol=1e-12)
    np.testing.assert_allclose(mixed.predictions, ref.predictions, atol=1e-12)


def test_every_feature_missing_and_progress():
    model, X = _fit("gb_clf2", 3, False)
    seen = []
    res = TreeShap(model).explain(X[:300], np.ones(P, bool), progress=lambda d, n: seen.append((d, n)))
    assert np.all(res.values == 0.0) and seen[-1] == (150, 150)
    np.testing.assert_allclose(res.predictions, res.base_values, atol=1e-12)
    bg = X[:30]
    iv = TreeShap(model, bg, mode="interventional").explain(X[:5], np.ones(P, bool))
    np.testing.assert_allclose(iv.predictions, model.decision_function(bg).mean(), atol=1e-12)


# ----------------------------------------------- the seed's worked example
def _seed_tree():
    """The tree of the SHAP seed (Tree SHAP section), with x1..x4 as columns 0..3.

    root (160) x1 <= 4.5 -> A (80) x2 <= 5 -> A_L (25) x3 <= 5 -> 10 rows at 15, 15 at 28
                                           -> A_R (55) x4 <= 8 -> 30 rows at 12, 25 at 20
                         -> B (80) x3 <= 5 -> 10 rows at 27, 70 at 39
    """
    # node: left, right, feature, threshold, cover, value
    nodes = [
        (1, 8, 0, 4.5, 160, 0.0),  # 0 root
        (2, 5, 1, 5.0, 80, 0.0),  # 1 A
        (3, 4, 2, 5.0, 25, 0.0),  # 2 A_L
        (-1, -1, -2, -2.0, 10, 15.0),  # 3
        (-1, -1, -2, -2.0, 15, 28.0),  # 4
        (6, 7, 3, 8.0, 55, 0.0),  # 5 A_R
        (-1, -1, -2, -2.0, 30, 12.0),  # 6
        (-1, -1, -2, -2.0, 25, 20.0),  # 7
        (9, 10, 2, 5.0, 80, 0.0),  # 8 B
        (-1, -1, -2, -2.0, 10, 27.0),  # 9
        (-1, -1, -2, -2.0, 70, 39.0),  # 10
    ]
    model = DecisionTreeRegressor(max_depth=3).fit(np.random.default_rng(0).random((40, 4)), np.arange(40.0))
    state = model.tree_.__getstate__()
    arr = np.zeros(len(nodes), dtype=state["nodes"].dtype)
    for i, (l, r, f, t, c, _) in enumerate(nodes):
        arr[i] = (l, r, f, t, 0.0, c, c, 0)
    values = np.array([v for *_, v in nodes]).reshape(-1, 1, 1)
    for i in (8, 5, 2, 1, 0):  # internal values: cover-weighted means of the children
        l, r = nodes[i][0], nodes[i][1]
        values[i] = (nodes[l][4] * values[l] + nodes[r][4] * values[r]) / nodes[i][4]
    model.tree_.__setstate__({"max_depth": 3, "node_count": len(nodes), "nodes": arr, "values": values})
    return model


def test_seed_worked_example():
    model = _seed_tree()
    X = np.array([[8, 10, np.nan, 7], [1, np.nan, np.nan, 7], [1, 2, 3, 7.0]])
    res = TreeShap(model).explain(X, nan_is_missing=True)  # the seed's empty cells are masks
    np.testing.assert_allclose(res.predictions[:2], [37.5, 15.375], atol=1e-12)
    np.testing.assert_allclose(res.predictions[2], model.predict(X[2:])[0])
    assert np.all(res.values[np.isnan(X)] == 0.0)
    res.check_additivity(atol=1e-12)
    vals, preds, base = _brute_pd(model, np.nan_to_num(X), np.isnan(X))
    np.testing.assert_allclose(res.values, vals[..., 0], atol=1e-12)
    np.testing.assert_allclose(res.base_values, base[0], atol=1e-12)
    ref = shap.TreeExplainer(model)
    np.testing.assert_allclose(res.values[2], ref.shap_values(X[2:])[0], atol=1e-12)


# ------------------------------------------------------------- edge cases
def test_single_leaf_tree_and_constant_feature():
    X, _ = _data(False, 50)
    model = DecisionTreeRegressor().fit(X, np.full(50, 3.0))
    res = TreeShap(model).explain(X[:4])
    assert np.all(res.values == 0.0) and np.allclose(res.base_values, 3.0)
    np.testing.assert_allclose(res.predictions, 3.0)
    Xc = X.copy()
    Xc[:, 2] = 1.0  # never split on
    model = RandomForestRegressor(3, max_depth=5, random_state=0).fit(Xc, X[:, 0] + X[:, 1])
    for mode, bg in [("path_dependent", None), ("interventional", Xc[20:40])]:
        res = TreeShap(model, bg, mode=mode).explain(Xc[:10])
        assert np.all(res.values[:, 2] == 0.0)
        res.check_additivity(atol=1e-12)


def test_duplicated_feature_on_path():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 2))
    y = np.sin(3 * X[:, 0]) + 0.3 * X[:, 1]  # many splits on x0 down one path
    model = DecisionTreeRegressor(max_depth=10, random_state=0).fit(X, y)
    ens = flatten_model(model)
    rows = X[:8]
    res = TreeShap(model).explain(rows)
    ref = shap.TreeExplainer(model).shap_values(rows)
    np.testing.assert_allclose(res.values, ref, atol=1e-12)
    vals, _, _ = _brute_pd(model, rows)
    np.testing.assert_allclose(res.values, vals[..., 0], atol=1e-12)
    assert ens.max_depth == 10
    slow = TreeShap(model, max_table_mb=0).explain(rows)
    np.testing.assert_allclose(slow.values, res.values, atol=1e-12)


def test_threshold_boundary_goes_left_float32():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    model = DecisionTreeRegressor().fit(X, [0.0, 0.0, 1.0, 1.0])
    assert model.tree_.threshold[0] == 1.5
    res = TreeShap(model).explain([[1.5]])
    assert res.predictions[0] == 0.0  # equal to the threshold: left
    np.testing.assert_allclose(res.values[0, 0], -0.5)
    # thresholds that float32 cannot hold: rows compare as float32, as predict does
    rng = np.random.default_rng(4)
    Xf = rng.random((60, 2)) / 10
    model = DecisionTreeRegressor(max_depth=6, random_state=0).fit(Xf, rng.random(60))
    thr = model.tree_.threshold[model.tree_.feature >= 0]
    feat = model.tree_.feature[model.tree_.feature >= 0]
    rows = np.tile(Xf[:1], (2 * len(thr), 1))
    rows[np.arange(len(thr)), feat] = thr  # the float64 threshold itself
    rows[len(thr) + np.arange(len(thr)), feat] = np.float32(thr)  # and its float32 rounding
    for mode, bg in [("path_dependent", None), ("interventional", rows[::-1])]:
        res = TreeShap(model, bg, mode=mode).explain(rows)
        np.testing.assert_allclose(res.predictions, model.predict(rows), atol=1e-12)
        res.check_additivity(atol=1e-12)
    ref = shap.TreeExplainer(model).shap_values(rows)
    np.testing.assert_allclose(TreeShap(model).explain(rows).values, ref, atol=1e-12)


# ------------------------------------------------------------ API and errors
def test_result_fields_and_class_index():
    X, y = _data(False, 120)
    Xf = pd.DataFrame(X, columns=list("abcde"))
    model = RandomForestClassifier(3, max_depth=4, random_state=0).fit(Xf, _classes(y, 3))
    res = TreeShap(model).explain(Xf.iloc[:7], ["b"])
    assert res.method == "tree" and res.output == "proba"
    assert res.values.shape == (7, 5, 3) and res.base_values.shape == (7, 3)
    assert res.feature_names == list("abcde") and res.missing[:, 1].all()
    assert np.all(res.values[:, 1] == 0.0)
    one = TreeShap(model, class_index=2).explain(Xf.iloc[:7], ["b"])
    np.testing.assert_array_equal(one.values, res.values[:, :, 2])
    assert one.output_names == [res.output_names[2]]
    gb = GradientBoostingClassifier(n_estimators=3, random_state=0).fit(X, y > 0)
    r = TreeShap(gb).explain(X[:3])
    assert r.output == "log_odds" and r.values.shape == (3, P)
    np.testing.assert_allclose(r.predictions, gb.decision_function(X[:3]), atol=1e-12)


def test_explain_auto_picks_tree():
    model, X = _fit("hgb_reg", 4, False)
    res = explain(model, X[:5])
    assert res.method == "tree" and "tree model" in res.params["reason"]
    direct = TreeShap(model).explain(X[:5])
    np.testing.assert_array_equal(res.values, direct.values)


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"mode": "kernel"}, InvalidParameterError, "'mode' parameter of TreeShap"),
        ({"output": "proba", "model": "gb"}, InvalidParameterError, "exactly in mode='interventional'"),
        ({"output": "log_odds", "model": "rf"}, InvalidParameterError, "log-odds"),
        ({"n_jobs": 0}, InvalidParameterError, "'n_jobs'"),
        ({"model": "ridge"}, InvalidModelError, "Use ExactShap or KernelShap"),
    ],
)
def test_errors(kwargs, err, match):
    X, y = _data(False, 60)
    models = {
        "gb": GradientBoostingClassifier(n_estimators=2).fit(X, y > 0),
        "rf": RandomForestClassifier(2, max_depth=2).fit(X, y > 0),
        "ridge": Ridge().fit(X, y),
    }
    kwargs = dict(kwargs)
    model = models[kwargs.pop("model", "rf")]
    with pytest.raises(err, match=match):
        TreeShap(model, **kwargs)
    assert issubclass(err, ExplainerError)


def test_interventional_default_background_and_bad_data():
    model, X = _fit("rf_reg", 4, False)
    res = TreeShap(model, mode="interventional").explain(X[:120])
    assert res.params["background"] == "sample of X" and res.params["n_background"] == 100
    res.check_additivity(atol=1e-12)
    with pytest.raises(ExplainerError, match="columns"):
        TreeShap(model).explain(X[:3, :4])
