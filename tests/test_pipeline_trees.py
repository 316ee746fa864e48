"""Pipelines ending in a tree model, folded into one TreeEnsemble over the ORIGINAL columns.

Every engine against its definition, on a table as users have it (text with empty
cells, a pandas category, numbers with empty cells, names with spaces and units):
the folded trees against the pipeline's own predict / predict_proba (unknown
categories, empty cells, rows exactly at and next to every folded threshold);
path-dependent Tree SHAP against two brute-force Shapley sums of the grouped
cover-weighted game - one over the folded ensemble, one walking the final
estimator's own fitted arrays with derived columns grouped by original column;
interventional Tree SHAP against ExactShap on the pipeline; tree PD against brute
force; pipelines that mix columns are refused with a reason and still explained.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor, make_column_selector
from sklearn.decomposition import PCA
from sklearn.ensemble import (
    GradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestRegressor,
)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import KFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    KBinsDiscretizer,
    MinMaxScaler,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
    RobustScaler,
    SplineTransformer,
    StandardScaler,
    TargetEncoder,
)
from sklearn.tree import DecisionTreeClassifier

from explainers.pdp import partial_dependence
from explainers.shap import ExactShap, TreeShap, explain
from explainers.trees import flatten_model, is_tree_model
from explainers.trees.pipeline import (
    fold_notes,
    fold_refusal,
    is_foldable_pipeline,
    mdi_by_original_column,
    original_groups,
)

from ._tree_oracles import brute_path_dependent, shapley

N = 300
INCOME, TOWN, PET, AGE, SCORE = "Monthly Income ($)", "Town of residence", "Pet kind", "Age (years)", "Score"


def _table(seed=0, n=N):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        INCOME: rng.lognormal(8, 0.6, n).round(2),
        TOWN: rng.choice(["Busan", "Anyang", "Cheongju", "Daegu", "Eumseong", None], n,
                         p=[.3, .2, .2, .15, .05, .1]),
        PET: pd.Categorical(rng.choice(["cat", "dog", "fish", "hamster"], n, p=[.4, .4, .15, .05])),
        AGE: rng.normal(40, 12, n).round(),
        SCORE: rng.normal(size=n),
    })
    df.loc[rng.random(n) < 0.12, AGE] = np.nan
    df.loc[rng.random(n) < 0.05, INCOME] = np.nan
    y = (np.log1p(df[INCOME].fillna(3000)) + 1.5 * df[TOWN].isin(["Anyang", "Daegu"])
         + np.nan_to_num(df[AGE], nan=55.0) / 15 + (df[PET] == "dog") * df[SCORE] + rng.normal(0, 0.2, n))
    return df, y.to_numpy()


def _rf_pipe():
    ct = ColumnTransformer([
        ("town", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
         [TOWN]),
        ("pet", OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_include="category")),
        ("income", make_pipeline(SimpleImputer(strategy="median"), FunctionTransformer(np.log1p)), [INCOME]),
        ("age", make_pipeline(SimpleImputer(add_indicator=True), StandardScaler()), [AGE]),
    ], remainder="passthrough")
    return make_pipeline(ct, RandomForestRegressor(n_estimators=12, max_depth=6, random_state=0))


def _gb_pipe():
    ct = ColumnTransformer([
        ("town", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1, encoded_missing_value=-2),
         [1]),
        ("pet", OneHotEncoder(drop="first", handle_unknown="ignore"), [2]),
        ("income", make_pipeline(SimpleImputer(), StandardScaler()), [0]),
        ("age", make_pipeline(SimpleImputer(strategy="constant", fill_value=-5.0), RobustScaler()), [3]),
    ], remainder="drop", verbose_feature_names_out=False)
    return make_pipeline(ct, GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0))


def _tree_pipe():
    ct = ColumnTransformer([
        ("town", make_pipeline(SimpleImputer(strategy="constant", fill_value="(none)"),
                               TargetEncoder(cv=KFold(5, shuffle=True, random_state=0))), [TOWN]),
        ("pet", OneHotEncoder(min_frequency=20, handle_unknown="infrequent_if_exist"), [PET]),
        ("age", make_pipeline(SimpleImputer(), MinMaxScaler()), [AGE]),
        ("score", KBinsDiscretizer(n_bins=6, encode="ordinal", quantile_method="averaged_inverted_cdf"), [SCORE]),
    ], remainder="passthrough")
    return make_pipeline(ct, DecisionTreeClassifier(max_depth=6, min_samples_leaf=5, random_state=0))


def _hgb_pipe(categorical: bool):
    ct = ColumnTransformer([
        ("cats", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan), [TOWN, PET]),
    ], remainder=StandardScaler())
    hgb = HistGradientBoostingRegressor(max_iter=20, max_depth=4, random_state=0,
                                        categorical_features=[0, 1] if categorical else None)
    return make_pipeline(ct, hgb)


@pytest.fixture(scope="module")
def fitted():
    df, y = _table()
    classes = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    return df, dict(
        rf=_rf_pipe().fit(df, y),
        gb=_gb_pipe().fit(df, y > np.median(y)),
        tree=_tree_pipe().fit(df, classes),
        hgb=_hgb_pipe(False).fit(df, y),
        hgb_cat=_hgb_pipe(True).fit(df, y),
    )


def _predict(pipe, rows):
    return pipe.predict_proba(rows) if hasattr(pipe, "predict_proba") else pipe.predict(rows)[:, None]


def _new_rows(df):
    """Unknown town and pet, empty cells everywhere, all empty."""
    rows = df.iloc[:10].copy()
    rows[PET] = rows[PET].cat.add_categories(["parrot"])
    rows.iloc[0, 1] = "Seoul"
    rows.iloc[1, 2] = "parrot"
    rows.iloc[2, [0, 1, 3]] = np.nan
    rows.iloc[3, 2] = np.nan
    rows.iloc[4, :4] = np.nan
    return rows


def _threshold_rows(ens, df, pipe):
    """Rows with a numeric column set exactly at, just below and just above each folded threshold."""
    out = []
    base = df.iloc[:1]
    for j in range(ens.n_features):
        if ens.categories[j] is not None:
            continue
        on = (ens.feature == j) & (ens.left >= 0) & (ens.cat_start < 0) & np.isfinite(ens.threshold)
        for t in np.unique(ens.threshold[on]):
            for x in (np.nextafter(t, -np.inf), t, np.nextafter(t, np.inf)):
                r = base.copy()
                r.iloc[0, j] = x
                out.append(r)
    rows = pd.concat(out, ignore_index=True)
    if PET in rows:
        rows[PET] = rows[PET].astype(df[PET].dtype)
    # np.log1p is undefined below -1 (the fold's documented domain); a folded threshold there is only a boundary
    return rows[~(rows[INCOME] < -1)] if "income" in str(pipe) else rows


# ------------------------------------------------------------------ (1) predictions
@pytest.mark.parametrize("name", ["rf", "gb", "tree", "hgb", "hgb_cat"])
def test_folded_predictions_equal_the_pipeline(fitted, name):
    df, pipes = fitted
    pipe = pipes[name]
    assert is_foldable_pipeline(pipe) and is_tree_model(pipe) and fold_refusal(pipe) is None
    ens = flatten_model(pipe)
    assert ens.n_features == df.shape[1] and not ens.float32_inputs
    for rows in (df, _new_rows(df), _threshold_rows(ens, df, pipe)):
        np.testing.assert_allclose(ens.predict(rows), _predict(pipe, rows), rtol=0, atol=1e-12)


def test_folded_columns_are_the_original_ones(fitted):
    df, pipes = fitted
    ens = flatten_model(pipes["rf"])
    assert ens.categories[1] == ("Anyang", "Busan", "Cheongju", "Daegu", "Eumseong")
    assert ens.categories[2] == ("cat", "dog", "fish", "hamster")
    assert ens.categories[0] is None and ens.categories[3] is None
    groups = original_groups(pipes["rf"])
    assert groups == [[9], [0, 1, 2, 3, 4], [5, 6, 7, 8], [10, 11], [12]]
    names, mdi = mdi_by_original_column(pipes["rf"])
    assert names == list(df.columns)
    np.testing.assert_allclose(mdi.sum(), 1.0)
    final = pipes["rf"][-1].feature_importances_
    np.testing.assert_allclose(mdi[1], final[[0, 1, 2, 3, 4]].sum())
    # the dropped column (remainder="drop") has no derived column and no importance
    assert original_groups(pipes["gb"])[4] == []


def test_exact_at_float32_rounding_of_a_scaled_column():
    """A column whose scaled values fall on float32 rounding edges: the folded
    threshold is the last float64 whose float32(transform(x)) goes left."""
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"x (m)": rng.normal(1e4, 1.0, 400), "z": rng.normal(size=400)})
    y = (X["x (m)"] > 1e4).astype(float) + X["z"]
    pipe = make_pipeline(StandardScaler(), DecisionTreeClassifier(max_depth=5, random_state=0)).fit(X, y > 0.5)
    ens = flatten_model(pipe)
    rows = _threshold_rows(ens, X, pipe)
    np.testing.assert_allclose(ens.predict(rows), pipe.predict_proba(rows), atol=1e-12)
    # between the float64 steps of a folded threshold, one value goes each way
    pre, tree = pipe[0], pipe[-1]
    for i in np.flatnonzero((ens.left >= 0) & (ens.feature == 0)):
        t = ens.threshold[i]
        d = pre.transform(pd.DataFrame({"x (m)": [t, np.nextafter(t, np.inf)], "z": [0.0, 0.0]}))[:, 0]
        d32 = d.astype(np.float32)
        thr = tree.tree_.threshold[i]
        assert d32[0] <= thr < d32[1] or (ens.left[i] != tree.tree_.children_left[i])


def test_numpy_input_pipeline_and_log1p_domain_note():
    from explainers.trees.pipeline import _result

    rng = np.random.default_rng(4)
    X = np.column_stack([rng.lognormal(3, 1, 300), rng.uniform(0, 3, 300)])
    y = np.log1p(X[:, 0]) + X[:, 1]
    pipe = make_pipeline(FunctionTransformer(np.log1p), RandomForestRegressor(n_estimators=5, random_state=0))
    pipe.fit(X, y)
    ens = flatten_model(pipe)
    inside = np.column_stack([np.r_[X[:50, 0], -0.999, 0.0, np.nan], np.r_[X[:50, 1], 0.0, np.nan, 1.0]])
    np.testing.assert_allclose(ens.predict(inside)[:, 0], pipe.predict(inside), atol=1e-12)
    # a split whose NaN side differs from both ends of log1p's domain sends the values
    # below -1 (NaN after log1p) as -1 goes; the notes say so
    notes = fold_notes(pipe)
    assert notes == tuple(_result(pipe)[2].notes) and notes and all("below -1.0" in n for n in notes)
    below = np.array([[-3.0, 1.0], [-1e300, 2.0]])
    at_edge = np.array([[-0.999999, 1.0], [-0.999999, 2.0]])
    np.testing.assert_allclose(ens.predict(below), ens.predict(at_edge), atol=1e-12)


# ------------------------------------------------------------------ (2) path-dependent SHAP
def _final_trees(final):
    """(list of (node arrays), base raw vector, scale, compare_float32) read from the final estimator itself."""
    if isinstance(final, HistGradientBoostingRegressor):
        trees = []
        for (pred,) in final._predictors:
            nd = pred.nodes
            trees.append(dict(left=nd["left"].astype(int), right=nd["right"].astype(int),
                              leaf=nd["is_leaf"].astype(bool), feature=nd["feature_idx"].astype(int),
                              threshold=nd["num_threshold"].astype(float), miss=nd["missing_go_to_left"].astype(bool),
                              value=nd["value"].astype(float)[:, None], cover=nd["count"].astype(float)))
        return trees, np.atleast_1d(final._baseline_prediction).astype(float).reshape(-1), 1.0, False
    if isinstance(final, GradientBoostingClassifier):
        ests, scale = [e[0] for e in final.estimators_], final.learning_rate
        base = np.asarray(final._raw_predict_init(np.zeros((1, final.n_features_in_))))[0]
    elif isinstance(final, DecisionTreeClassifier):
        ests, scale, base = [final], 1.0, np.zeros(final.n_classes_)
    else:
        ests, scale, base = list(final.estimators_), 1.0 / len(final.estimators_), np.zeros(1)
    trees = []
    for e in ests:
        t = e.tree_
        val = t.value[:, 0, :] if t.value.shape[2] > 1 else t.value[:, 0, :1]
        trees.append(dict(left=t.children_left, right=t.children_right, leaf=t.children_left < 0,
                          feature=t.feature, threshold=t.threshold, miss=t.missing_go_to_left.astype(bool),
                          value=val, cover=t.weighted_n_node_samples))
    return trees, base, scale, True


def _grouped_game_shap(pipe, rows):
    """Independent oracle: Shapley values over the ORIGINAL columns of the cover-weighted
    game on the final estimator's own arrays, a derived column present iff its original is."""
    Xd = np.asarray(pipe[:-1].transform(rows), float)
    owner = {d: j for j, g in enumerate(original_groups(pipe)) for d in g}
    trees, base, scale, f32 = _final_trees(pipe[-1])
    p = rows.shape[1]
    out = np.zeros((len(rows), p, len(base)))
    for r in range(len(rows)):
        x = Xd[r].astype(np.float32).astype(float) if f32 else Xd[r]

        def walk(t, node, S):
            if t["leaf"][node]:
                return t["value"][node]
            d = t["feature"][node]
            lc, rc = t["left"][node], t["right"][node]
            if owner[d] in S:
                v = x[d]
                go_left = t["miss"][node] if np.isnan(v) else v <= t["threshold"][node]
                return walk(t, lc if go_left else rc, S)
            return (t["cover"][lc] * walk(t, lc, S) + t["cover"][rc] * walk(t, rc, S)) / t["cover"][node]

        phi = shapley(lambda S: base + scale * sum(walk(t, 0, S) for t in trees), range(p))
        for j, v in phi.items():
            out[r, j] = v
    return out


@pytest.mark.parametrize("name", ["rf", "gb", "tree", "hgb", "hgb_cat"])
def test_path_dependent_equals_grouped_brute_force(fitted, name):
    df, pipes = fitted
    pipe = pipes[name]
    rows = pd.concat([df.iloc[:3], _new_rows(df).iloc[:5]])
    res = TreeShap(pipe, output="raw").explain(rows, nan_is_missing=False)
    got = res.values if res.values.ndim == 3 else res.values[..., None]
    ens = flatten_model(pipe)
    np.testing.assert_allclose(got, brute_path_dependent(ens, ens.prepare_inputs(rows)), atol=1e-9)
    if name != "hgb_cat":  # the final model's own categorical bitsets: covered by the folded oracle
        np.testing.assert_allclose(got, _grouped_game_shap(pipe, rows), atol=1e-9)
    assert list(res.feature_names) == list(df.columns)
    res.check_additivity(atol=1e-9)


# ------------------------------------------------------------------ (3) interventional SHAP
@pytest.mark.parametrize("name", ["rf", "gb", "tree", "hgb_cat"])
def test_interventional_equals_exact_shap(fitted, name):
    df, pipes = fitted
    pipe = pipes[name]
    rows, bg = _new_rows(df).iloc[:6], df.iloc[100:130]
    ours = TreeShap(pipe, bg, mode="interventional", output="raw").explain(rows, nan_is_missing=False)
    ref = ExactShap(pipe, bg, output="raw").explain(rows, nan_is_missing=False)
    np.testing.assert_allclose(ours.values, ref.values, atol=1e-9)
    np.testing.assert_allclose(ours.predictions, ref.predictions, atol=1e-9)


# ------------------------------------------------------------------ (4) partial dependence
@pytest.mark.parametrize("feature", [TOWN, AGE, INCOME, PET])
@pytest.mark.parametrize("name", ["rf", "gb", "hgb_cat"])
def test_tree_pd_equals_brute(fitted, name, feature):
    df, pipes = fitted
    pipe = pipes[name]
    data = df.iloc[:120]
    tree = partial_dependence(pipe, data, [feature], method="tree", kind="both")
    brute = partial_dependence(pipe, data, [feature], method="brute", kind="both")
    assert tree.method == "tree"
    np.testing.assert_allclose(np.asarray(tree.average, float), np.asarray(brute.average, float), atol=1e-9)
    np.testing.assert_allclose(np.asarray(tree.individual, float), np.asarray(brute.individual, float), atol=1e-9)


# ------------------------------------------------------------------ (5) refusals
@pytest.mark.parametrize("step, reason", [
    (PCA(n_components=1), "PCA mixes columns"),
    (PolynomialFeatures(2), "PolynomialFeatures multiplies columns"),
    (SplineTransformer(n_knots=4), "SplineTransformer"),
    (KBinsDiscretizer(n_bins=4, encode="onehot-dense", quantile_method="averaged_inverted_cdf"), "one column per bin"),
    (FunctionTransformer(np.square), "not a known monotone"),
])
def test_mixing_steps_are_refused_with_a_reason(step, reason):
    df, y = _table()
    X = df[[SCORE, AGE]].fillna(0.0)
    pipe = make_pipeline(StandardScaler(), step, RandomForestRegressor(n_estimators=3, random_state=0)).fit(X, y)
    assert not is_foldable_pipeline(pipe) and not is_tree_model(pipe)
    why = fold_refusal(pipe)
    assert reason in why and "model-agnostic" in why


@pytest.mark.parametrize("pipe, reason", [
    (make_pipeline(StandardScaler(), LinearRegression()), "not a tree model"),
    (make_pipeline(StandardScaler(), TransformedTargetRegressor(RandomForestRegressor(n_estimators=3),
                                                                func=np.log1p, inverse_func=np.expm1)),
     "TransformedTargetRegressor"),
])
def test_final_step_refusals(pipe, reason):
    df, y = _table()
    X = df[[SCORE, AGE]].fillna(0.0)
    pipe.fit(X, np.abs(y))
    assert reason in fold_refusal(pipe)


def test_refused_pipeline_is_still_explained():
    df, y = _table()
    X = df[[INCOME, AGE, SCORE]].fillna(0.0)
    pipe = Pipeline([("scale", StandardScaler()), ("pca", PCA(n_components=2)),
                     ("rf", RandomForestRegressor(n_estimators=5, random_state=0))]).fit(X, y)
    assert fold_refusal(pipe) == "PCA mixes columns, so the pipeline is explained with the model-agnostic methods"
    res = explain(pipe, X.iloc[:5], background=X.iloc[:40], method="auto")
    assert res.method != "tree"
    np.testing.assert_allclose(res.values.sum(1) + res.base_values, pipe.predict(X.iloc[:5]), atol=1e-6)


def test_ordinal_splits_as_plain_code_thresholds(monkeypatch):
    """With _PLAIN_CODE_SPLITS on, an OrdinalEncoder split whose left set is a run of
    codes becomes a plain threshold on the code: still exact for predictions and Tree SHAP."""
    from explainers.trees import pipeline as fold

    monkeypatch.setattr(fold, "_PLAIN_CODE_SPLITS", True)
    df, y = _table(seed=1)
    pipe = _gb_pipe().fit(df, y > np.median(y))
    ens = fold.flatten_pipeline(pipe)
    on_town = (ens.feature == 1) & (ens.left >= 0)
    assert on_town.any() and (ens.cat_start[on_town] < 0).all()
    for rows in (df, _new_rows(df)):
        np.testing.assert_allclose(ens.predict(rows), pipe.predict_proba(rows), atol=1e-12)
    rows = _new_rows(df).iloc[:5]
    got = TreeShap(pipe, output="raw").explain(rows, nan_is_missing=False).values
    np.testing.assert_allclose(got[..., None], _grouped_game_shap(pipe, rows), atol=1e-9)


def test_auto_says_why_a_column_mixing_tree_pipeline_is_not_explained_by_its_trees():
    from sklearn.decomposition import PCA
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline

    from explainers.shap import explain

    X = np.random.default_rng(0).normal(size=(80, 4))
    y = X[:, 0]
    res = explain(make_pipeline(PCA(n_components=2), RandomForestRegressor(n_estimators=5)).fit(X, y), X[:3])
    assert res.method == "exact" and res.params["reason"].startswith("PCA mixes columns")
    res = explain(make_pipeline(PCA(n_components=2), Ridge()).fit(X, y), X[:3])
    assert "mixes columns" not in res.params["reason"]


@pytest.mark.parametrize("scaled", [False, True])
def test_fold_checks_a_pass_through_edge_instead_of_searching(monkeypatch, scaled):
    """A column that passes through unchanged (an imputer) gets its edges from the final model's own
    splits, checked by two runs of the preprocessing, not by a search (counted runs, not time); a
    scaled column misses that guess and is searched: both fold to the pipeline's predictions."""
    import explainers.trees.pipeline as pl
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(600, 4)), columns=list("abcd"))
    X.iloc[rng.choice(600, 60, replace=False), 0] = np.nan
    y = (X.b.fillna(0) + X.c > 0).astype(int)
    steps = [SimpleImputer()] + ([StandardScaler()] if scaled else [])
    model = make_pipeline(*steps, RandomForestClassifier(20, random_state=0)).fit(X, y)
    runs = []
    real = pl._transform
    monkeypatch.setattr(pl, "_transform", lambda plan, cols: runs.append(len(cols[0])) or real(plan, cols))
    monkeypatch.setattr(pl, "_CACHE", type(pl._CACHE)())
    ens = pl.flatten_pipeline(model)
    np.testing.assert_allclose(ens.predict(X), model.predict_proba(X), rtol=0, atol=1e-12)
    searched = len(runs)
    if not scaled:
        assert searched <= 8, runs  # probes of the domain and routes, the edges' two checks (7)
    else:
        assert searched >= 12, runs  # the guess misses: the b-ary search runs (17)
