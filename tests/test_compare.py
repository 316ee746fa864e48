"""explainers.compare: every number against an oracle written here.

Metrics against scikit-learn's functions; the intervals against an independent paired
bootstrap (the draw order compare_models documents, one scikit-learn call per replicate);
McNemar against scipy's exact binomial test; the disagreement table by brute force.
"""
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest
from sklearn import metrics as skm
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.naive_bayes import GaussianNB
from sklearn.svm import SVC

from explainers import (
    ExplainerError,
    InvalidDataError,
    InvalidModelError,
    InvalidParameterError,
    ModelAdapter,
)
from explainers.compare import ComparisonResult, compare_models, mcnemar

TOL = dict(rtol=0, atol=1e-12)


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def binary():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(150, 4)), columns=list("abcd"),
                     index=pd.Index([f"r{i}" for i in rng.permutation(150)], name="id"))
    y = np.where(X.a - X.b + rng.normal(0, 0.9, 150) > 0, "yes", "no")
    models = {"logistic": LogisticRegression().fit(X, y),
              "forest": RandomForestClassifier(30, max_depth=3, random_state=0).fit(X, y),
              "bayes": GaussianNB().fit(X, y)}
    return models, X, y


@pytest.fixture(scope="module")
def three():
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(160, 3)), columns=list("abc"))
    s = X.a + 0.5 * X.b + rng.normal(0, 0.7, 160)
    y = np.where(s > 0.6, "high", np.where(s < -0.6, "low", "mid"))
    models = {"logistic": LogisticRegression(max_iter=500).fit(X, y), "bayes": GaussianNB().fit(X, y)}
    return models, X, y


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.normal(size=(140, 3)), columns=list("abc"))
    y = 2 * X.a - X.b + 0.5 * X.c**2 + rng.normal(0, 0.5, 140)
    models = {"ols": LinearRegression().fit(X, y), "ridge": Ridge(alpha=30).fit(X, y),
              "forest": RandomForestRegressor(20, max_depth=4, random_state=0).fit(X, y)}
    return models, X, y.to_numpy()


# -------------------------------------------------------------------- oracles
def sk_binary(metric, y, proba, labels, classes):
    """scikit-learn's metric on the original labels (classes sorted: classes[1] is positive)."""
    if metric == "roc_auc":
        return skm.roc_auc_score(y == classes[1], proba[:, 1]) if len(np.unique(y)) == 2 else np.nan
    if metric == "log_loss":
        return skm.log_loss(y, proba, labels=classes)
    if metric == "brier":
        return skm.brier_score_loss(y, proba[:, 1], pos_label=classes[1])
    return {"accuracy": skm.accuracy_score, "balanced_accuracy": skm.balanced_accuracy_score}[metric](y, labels)


def sk_multiclass(metric, y, proba, labels, classes):
    if metric == "roc_auc":
        return skm.roc_auc_score(y, proba, multi_class="ovr", average="macro", labels=classes)
    if metric == "brier":
        return skm.brier_score_loss(y, proba, labels=classes)
    return sk_binary(metric, y, proba, labels, classes)


def sk_regression(metric, y, pred, labels=None, classes=None):
    return {"r2": skm.r2_score, "mae": skm.mean_absolute_error, "rmse": skm.root_mean_squared_error}[metric](y, pred)


def oracle_interval(metric_fn, y, outputs_a, outputs_b, n_boot, seed, confidence=0.95):
    """The paired bootstrap by hand: replicate b draws ``rng.integers(0, n, size=n)``, in order;
    a replicate where the metric is NaN for either model is skipped and counted."""
    rng = np.random.default_rng(seed)
    n = len(y)
    diffs, skipped = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(n_boot):
            idx = rng.integers(0, n, size=n)
            d = metric_fn(y[idx], *[o[idx] for o in outputs_a]) - metric_fn(y[idx], *[o[idx] for o in outputs_b])
            if np.isnan(d):
                skipped += 1
            else:
                diffs.append(d)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(diffs, [tail, 100 - tail])
    return low, high, skipped


def row(cmp, a, b, metric):
    d = cmp.differences
    hit = d[(d.model_a == a) & (d.model_b == b) & (d.metric == metric)]
    assert len(hit) == 1
    return hit.iloc[0]


# -------------------------------------------------------------------- metrics
def test_binary_metrics_equal_sklearn(binary):
    models, X, y = binary
    cmp = compare_models(models, X, y, n_boot=20)
    assert isinstance(cmp, ComparisonResult) and cmp.task == "binary" and cmp.classes == ["no", "yes"]
    assert list(cmp.metrics.index) == list(models)
    assert list(cmp.metrics.columns) == ["roc_auc", "log_loss", "accuracy", "balanced_accuracy", "brier"]
    for name, m in models.items():
        for metric in cmp.metrics.columns:
            want = sk_binary(metric, y, m.predict_proba(X), m.predict(X), list(m.classes_))
            np.testing.assert_allclose(cmp.metrics.at[name, metric], want, **TOL, err_msg=f"{name} {metric}")


def test_multiclass_metrics_equal_sklearn(three):
    models, X, y = three
    cmp = compare_models(models, X, y, n_boot=20)
    assert cmp.task == "multiclass"
    for name, m in models.items():
        for metric in cmp.metrics.columns:
            want = sk_multiclass(metric, y, m.predict_proba(X), m.predict(X), list(m.classes_))
            np.testing.assert_allclose(cmp.metrics.at[name, metric], want, **TOL, err_msg=f"{name} {metric}")


def test_regression_metrics_equal_sklearn(regression):
    models, X, y = regression
    cmp = compare_models(models, X, y, n_boot=20)
    assert list(cmp.metrics.columns) == ["r2", "mae", "rmse"] and cmp.classes is None
    for name, m in models.items():
        for metric in cmp.metrics.columns:
            np.testing.assert_allclose(cmp.metrics.at[name, metric], sk_regression(metric, y, m.predict(X)), **TOL)


def test_metrics_subset_keeps_the_order_given(regression):
    models, X, y = regression
    cmp = compare_models(models, X, y, metrics=["rmse", "r2"], n_boot=10)
    assert list(cmp.metrics.columns) == ["rmse", "r2"]
    assert list(cmp.differences.metric.unique()) == ["rmse", "r2"]


# ------------------------------------------------------------------ bootstrap
@pytest.mark.parametrize("metric", ["roc_auc", "log_loss", "accuracy", "balanced_accuracy", "brier"])
def test_binary_intervals_equal_an_independent_paired_bootstrap(binary, metric):
    models, X, y = binary
    cmp = compare_models(models, X, y, n_boot=150, random_state=7, confidence=0.9)
    classes = list(models["logistic"].classes_)
    outs = {n: (m.predict_proba(X), m.predict(X), np.array([classes] * len(y))) for n, m in models.items()}
    fn = _first_classes(lambda yy, p, lab, c: sk_binary(metric, yy, p, lab, c))
    for a, b in [("logistic", "forest"), ("logistic", "bayes"), ("forest", "bayes")]:
        low, high, skipped = oracle_interval(fn, y, outs[a], outs[b], 150, 7, 0.9)
        r = row(cmp, a, b, metric)
        np.testing.assert_allclose([r.low, r.high], [low, high], **TOL)
        assert r.skipped == skipped == 0
        assert r.significant == (low > 0 or high < 0)
        np.testing.assert_allclose(r.difference, cmp.metrics.at[a, metric] - cmp.metrics.at[b, metric], **TOL)


def _first_classes(fn):
    """A metric on (y, proba, labels) for the binary oracle's fixed class list."""
    return lambda yy, p, lab, c: fn(yy, p, lab, list(c[0]))


def test_auc_replicates_with_one_class_are_skipped_and_counted():
    """30 rows with 3 positives: about one replicate in nine draws none of them."""
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(30, 2)), columns=["a", "b"])
    y = np.zeros(30, int)
    y[np.argsort(-X.a.to_numpy())[:3]] = 1
    models = {"lr": LogisticRegression().fit(X, y), "nb": GaussianNB().fit(X, y)}
    cmp = compare_models(models, X, y, n_boot=300, random_state=11)
    outs = [(m.predict_proba(X), m.predict(X), np.array([[0, 1]] * 30)) for m in models.values()]
    low, high, skipped = oracle_interval(_first_classes(lambda yy, p, lab, c: sk_binary("roc_auc", yy, p, lab, c)),
                                         y, *outs, 300, 11)
    r = row(cmp, "lr", "nb", "roc_auc")
    assert r.skipped == skipped and 10 < skipped < 100
    np.testing.assert_allclose([r.low, r.high], [low, high], **TOL)
    assert any("roc_auc" in n and f"{skipped:,} of 300" in n for n in cmp.notes)


@pytest.mark.parametrize("metric", ["roc_auc", "log_loss", "accuracy", "balanced_accuracy", "brier"])
def test_multiclass_intervals_equal_an_independent_paired_bootstrap(metric):
    """40 rows of 3 classes, one of them rare: AUC replicates missing it are skipped by both."""
    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.normal(size=(40, 2)), columns=["a", "b"])
    y = np.where(X.a > 1.2, "rare", np.where(X.b > 0, "up", "down"))
    models = {"lr": LogisticRegression(max_iter=500).fit(X, y), "nb": GaussianNB().fit(X, y)}
    classes = list(models["lr"].classes_)
    cmp = compare_models(models, X, y, n_boot=200, random_state=5)
    outs = [(m.predict_proba(X), m.predict(X), np.array([classes] * 40)) for m in models.values()]
    low, high, skipped = oracle_interval(_first_classes(lambda yy, p, lab, c: sk_multiclass(metric, yy, p, lab, c)),
                                         y, *outs, 200, 5)
    r = row(cmp, "lr", "nb", metric)
    np.testing.assert_allclose([r.low, r.high], [low, high], **TOL)
    assert r.skipped == skipped
    if metric == "roc_auc":
        assert skipped > 0


@pytest.mark.parametrize("metric", ["r2", "mae", "rmse"])
def test_regression_intervals_equal_an_independent_paired_bootstrap(regression, metric):
    models, X, y = regression
    cmp = compare_models(models, X, y, n_boot=200, random_state=3)
    preds = {n: (m.predict(X),) for n, m in models.items()}
    for a, b in [("ols", "ridge"), ("ols", "forest"), ("ridge", "forest")]:
        low, high, skipped = oracle_interval(lambda yy, p: sk_regression(metric, yy, p), y, preds[a], preds[b],
                                             200, 3)
        r = row(cmp, a, b, metric)
        np.testing.assert_allclose([r.low, r.high], [low, high], rtol=1e-10, atol=1e-12)
        assert r.skipped == skipped == 0


def test_r2_replicates_with_a_constant_target_are_skipped():
    """Four rows, three of one target value: some replicates draw only that value."""
    X = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0]})
    y = np.array([1.0, 1.0, 1.0, 5.0])
    models = {"ols": LinearRegression().fit(X, y), "mean": Ridge(alpha=1e6).fit(X, y)}
    cmp = compare_models(models, X, y, metrics=["r2"], n_boot=200, random_state=0)
    rng = np.random.default_rng(0)
    constant = sum(np.ptp(y[rng.integers(0, 4, size=4)]) == 0 for _ in range(200))
    assert row(cmp, "ols", "mean", "r2").skipped == constant > 0


def test_seed_reproduces_and_n_boot_zero_gives_no_interval(regression):
    models, X, y = regression
    one = compare_models(models, X, y, n_boot=50, random_state=9)
    pd.testing.assert_frame_equal(one.differences, compare_models(models, X, y, n_boot=50, random_state=9).differences)
    none = compare_models(models, X, y, n_boot=0)
    assert none.differences[["low", "high"]].isna().all().all() and not none.differences.significant.any()
    pd.testing.assert_frame_equal(none.metrics, one.metrics)
    assert any("n_boot=0" in n for n in none.notes)


# -------------------------------------------------------------------- McNemar
def test_mcnemar_is_the_exact_binomial_test(binary):
    models, X, y = binary
    cmp = compare_models(models, X, y, n_boot=10)
    for a, b in [("logistic", "forest"), ("logistic", "bayes"), ("forest", "bayes")]:
        ra, rb = models[a].predict(X) == y, models[b].predict(X) == y
        only_a, only_b = int(np.sum(ra & ~rb)), int(np.sum(~ra & rb))
        assert only_a + only_b > 0
        want = binomtest(min(only_a, only_b), only_a + only_b, 0.5).pvalue
        np.testing.assert_allclose(row(cmp, a, b, "accuracy").p_value, want, rtol=1e-12, atol=0)
    assert cmp.differences[cmp.differences.metric != "accuracy"].p_value.isna().all()


@pytest.mark.parametrize("a, b", [([1, 1, 0, 0, 1, 0, 1, 1], [0, 1, 0, 1, 1, 0, 0, 0]),
                                  ([1] * 30 + [0] * 5, [0] * 30 + [1] * 5), ([1, 0, 1], [1, 0, 1])])
def test_mcnemar_against_binomtest(a, b):
    a, b = np.array(a, bool), np.array(b, bool)
    only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
    want = 1.0 if only_a + only_b == 0 else binomtest(min(only_a, only_b), only_a + only_b, 0.5).pvalue
    np.testing.assert_allclose(mcnemar(a, b), want, rtol=1e-12, atol=0)


# --------------------------------------------------------------- disagreement
def brute_disagreement(va, vb, index, truth, n):
    order = sorted(range(len(va)), key=lambda i: (-abs(va[i] - vb[i]), i))[:n]
    return [index[i] for i in order], va[order], vb[order], truth[order]


def test_disagreement_binary_by_brute_force(binary):
    models, X, y = binary
    cmp = compare_models(models, X, y, n_boot=10, n_disagree=25, pair=("forest", "bayes"))
    va, vb = (models[n].predict_proba(X)[:, 1] for n in ("forest", "bayes"))
    idx, pa, pb, truth = brute_disagreement(va, vb, X.index, y, 25)
    d = cmp.disagreement
    assert list(d.columns) == ["prediction_forest", "prediction_bayes", "difference", "truth"]
    assert list(d.index) == idx and d.index.name == "id"
    np.testing.assert_allclose(d.prediction_forest, pa, **TOL)
    np.testing.assert_allclose(d.prediction_bayes, pb, **TOL)
    np.testing.assert_allclose(d.difference, pa - pb, **TOL)
    assert list(d.truth) == list(truth)
    assert cmp.params["pair"] == ("forest", "bayes")
    assert not any("pass pair=" in n for n in cmp.notes)
    assert any("'logistic' and 'forest'" in n for n in compare_models(models, X, y, n_boot=0).notes)


def test_disagreement_multiclass_uses_the_true_class_probability(three):
    models, X, y = three
    cmp = compare_models(models, X, y, n_boot=0, n_disagree=200)
    classes = list(models["logistic"].classes_)
    pos = np.array([classes.index(v) for v in y])
    va, vb = (models[n].predict_proba(X)[np.arange(len(y)), pos] for n in ("logistic", "bayes"))
    idx, pa, _, truth = brute_disagreement(va, vb, X.index, y, 200)
    assert len(cmp.disagreement) == len(y) and list(cmp.disagreement.index) == idx
    np.testing.assert_allclose(cmp.disagreement.prediction_logistic, pa, **TOL)
    assert list(cmp.disagreement.truth) == list(truth)
    assert any("true class" in n for n in cmp.notes)


def test_disagreement_regression_by_brute_force(regression):
    models, X, y = regression
    cmp = compare_models(models, X, y, n_boot=0, n_disagree=7, pair=["forest", "ols"])
    va, vb = models["forest"].predict(X), models["ols"].predict(X)
    idx, pa, pb, truth = brute_disagreement(va, vb, X.index, y, 7)
    assert list(cmp.disagreement.index) == idx
    np.testing.assert_allclose(cmp.disagreement.difference, pa - pb, **TOL)
    np.testing.assert_allclose(cmp.disagreement.truth.astype(float), truth, **TOL)
    assert compare_models(models, X, y, n_boot=0, n_disagree=0).disagreement.empty


# ------------------------------------------------------------------- refusals
@pytest.fixture(scope="module")
def mixed(binary, regression):
    (clf, Xc, yc), reg = binary, regression[0]
    other = np.where(Xc.a > 0, "up", "down")
    return {"clf": clf["logistic"], "reg": reg["ols"], "other_classes": LogisticRegression().fit(Xc, other),
            "narrow": LogisticRegression().fit(Xc[["a", "b"]], yc), "X": Xc, "y": yc}


@pytest.mark.parametrize("pick, err, match", [
    (["clf"], InvalidParameterError, r"at least 2 models; got 1"),
    (["clf", "reg"], InvalidModelError, r"'reg' is a regressor but 'clf' is a classifier"),
    (["clf", "other_classes"], InvalidModelError,
     (r"'clf' and 'other_classes' predict different classes: 'clf' has \['no', 'yes'\], 'other_classes' has "
      r"\['down', 'up'\]")),
])
def test_refusals_of_models(mixed, pick, err, match):
    with pytest.raises(err, match=match):
        compare_models({k: mixed[k] for k in pick}, mixed["X"], mixed["y"])


def test_refusal_of_missing_columns_names_them(mixed):
    X = mixed["X"].drop(columns=["c", "d"])
    with pytest.raises(InvalidDataError, match=r"Model 'clf' cannot be scored on X: .*lacks 2 .*c, d"):
        compare_models({"narrow": mixed["narrow"], "clf": mixed["clf"]}, X, mixed["y"])


@pytest.mark.parametrize("kwargs, match", [
    (dict(metrics=["auc"]), (r"'metrics' parameter of compare_models must be None or a list of distinct names "
                             r"among \['roc_auc', 'log_loss', 'accuracy', 'balanced_accuracy', 'brier'\]")),
    (dict(metrics=["r2"]), r"among \['roc_auc'"),
    (dict(metrics=[]), r"'metrics' parameter"),
    (dict(n_boot=-1), r"'n_boot' parameter of compare_models must be an int >= 0. Got -1"),
    (dict(n_boot=2.5), r"'n_boot'"),
    (dict(confidence=1.0), r"'confidence' parameter of compare_models must be a float in \(0, 1\)"),
    (dict(n_disagree=-3), r"'n_disagree'"),
    (dict(random_state="x"), r"'random_state'"),
    (dict(pair=("clf", "clf")), r"'pair' parameter of compare_models must be None or two different model names"),
    (dict(pair=("clf", "nope")), r"'pair'"),
    (dict(n_boot=2_000_000), r"n_boot x rows = 2,000,000 x 150 = 300,000,000 .* at most 1,333,333"),
])
def test_refusals_of_options(mixed, kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        compare_models({"clf": mixed["clf"], "narrow": mixed["narrow"]}, mixed["X"], mixed["y"], **kwargs)


def test_refusals_of_data(mixed, regression):
    models = {"clf": mixed["clf"], "narrow": mixed["narrow"]}
    with pytest.raises(InvalidDataError, match="pass y"):
        compare_models(models, mixed["X"], None)
    with pytest.raises(InvalidDataError, match="one target per row"):
        compare_models(models, mixed["X"], mixed["y"][:-1])
    with pytest.raises(InvalidParameterError, match="dict"):
        compare_models([mixed["clf"], mixed["narrow"]], mixed["X"], mixed["y"])
    reg, X, y = regression
    with pytest.raises(InvalidDataError, match="must be numbers; 1 cell"):
        compare_models(reg, X, np.where(np.arange(len(y)) == 4, "n/a", y.astype(str)).astype(object))
    with pytest.raises(ExplainerError, match="at least 2 rows with a target"):
        compare_models(reg, X, np.full(len(y), np.nan))


# ---------------------------------------------------------- columns and rows
def test_models_on_different_columns_read_their_own(binary):
    _, X, y = binary
    wide = X.assign(extra=np.arange(len(X)))
    a = LogisticRegression().fit(X[["a", "b", "c"]], y)
    b = GaussianNB().fit(X[["d", "b"]], y)
    cmp = compare_models({"abc": a, "db": b}, wide, y, n_boot=0)
    for name, m, cols in [("abc", a, ["a", "b", "c"]), ("db", b, ["d", "b"])]:
        np.testing.assert_allclose(cmp.metrics.at[name, "log_loss"],
                                   skm.log_loss(y, m.predict_proba(X[cols]), labels=m.classes_), **TOL)
        np.testing.assert_allclose(cmp.metrics.at[name, "accuracy"], skm.accuracy_score(y, m.predict(X[cols])), **TOL)


def test_rows_with_an_empty_target_are_left_out(binary):
    models, X, y = binary
    gappy = pd.Series(y, dtype=object, index=X.index)
    gappy.iloc[[2, 40, 41]] = np.nan
    gappy.iloc[60] = None
    gappy.iloc[90] = "  "
    models = {k: models[k] for k in ("logistic", "bayes")}
    cmp = compare_models(models, X, gappy, n_boot=40, random_state=1, n_disagree=500)
    keep = np.setdiff1d(np.arange(len(X)), [2, 40, 41, 60, 90])
    assert cmp.params["n_rows"] == len(keep) and cmp.params["n_left_out"] == 5
    assert any("5 of 150 rows left out" in n for n in cmp.notes)
    for name, m in models.items():
        np.testing.assert_allclose(cmp.metrics.at[name, "roc_auc"],
                                   skm.roc_auc_score(y[keep] == "yes", m.predict_proba(X.iloc[keep])[:, 1]), **TOL)
    assert set(cmp.disagreement.index) == set(X.index[keep])
    outs = [(m.predict_proba(X.iloc[keep]), m.predict(X.iloc[keep]), np.array([["no", "yes"]] * len(keep)))
            for m in models.values()]
    low, high, _ = oracle_interval(_first_classes(lambda yy, p, lab, c: sk_binary("brier", yy, p, lab, c)),
                                   y[keep], *outs, 40, 1)
    np.testing.assert_allclose([row(cmp, "logistic", "bayes", "brier")[k] for k in ("low", "high")], [low, high],
                               **TOL)


def test_labels_match_classes_as_text():
    rng = np.random.default_rng(6)
    X = pd.DataFrame(rng.normal(size=(80, 2)), columns=["a", "b"])
    y = (X.a > 0).astype(int).to_numpy()
    models = {"lr": LogisticRegression().fit(X, y), "nb": GaussianNB().fit(X, y)}
    as_text = compare_models(models, X, y.astype(str), n_boot=30)
    pd.testing.assert_frame_equal(as_text.metrics, compare_models(models, X, y, n_boot=30).metrics)
    unknown = compare_models(models, X, np.where(np.arange(80) == 0, "maybe", y.astype(str)), n_boot=0)
    assert unknown.params["n_unknown"] == 1 and unknown.params["n_rows"] == 79


def test_classifier_without_predict_proba_next_to_one_with(binary):
    models, X, y = binary
    svc = SVC(random_state=0).fit(X, y)
    cmp = compare_models({"svc": svc, "logistic": models["logistic"]}, X, y, n_boot=60, random_state=2)
    assert np.isnan(cmp.metrics.at["svc", "log_loss"]) and np.isnan(cmp.metrics.at["svc", "brier"])
    np.testing.assert_allclose(cmp.metrics.at["svc", "roc_auc"], skm.roc_auc_score(y, svc.decision_function(X)), **TOL)
    np.testing.assert_allclose(cmp.metrics.at["svc", "accuracy"], skm.accuracy_score(y, svc.predict(X)), **TOL)
    assert any("'svc' has no predict_proba" in n for n in cmp.notes)
    r = row(cmp, "svc", "logistic", "log_loss")
    assert np.isnan(r.difference) and np.isnan(r.low) and not r.significant
    classes = np.array([["no", "yes"]] * len(y))
    outs = [(np.column_stack([-svc.decision_function(X), svc.decision_function(X)]), svc.predict(X), classes),
            (models["logistic"].predict_proba(X), models["logistic"].predict(X), classes)]
    low, high, _ = oracle_interval(_first_classes(lambda yy, p, lab, c: sk_binary("roc_auc", yy, p, lab, c)),
                                   y, *outs, 60, 2)
    r = row(cmp, "svc", "logistic", "roc_auc")
    np.testing.assert_allclose([r.low, r.high], [low, high], **TOL)
    # the disagreement table takes the SVC's predicted class as its probability of "yes"
    np.testing.assert_array_equal(cmp.disagreement.prediction_svc,
                                  (svc.predict(X.loc[cmp.disagreement.index]) == "yes").astype(float))


def test_multiclass_svc_auc_is_the_one_vs_rest_average_of_its_margins(three):
    models, X, y = three
    svc = SVC(random_state=0).fit(X, y)
    cmp = compare_models({"svc": svc, "bayes": models["bayes"]}, X, y, n_boot=10)
    margin = svc.decision_function(X)
    want = np.mean([skm.roc_auc_score(y == c, margin[:, j]) for j, c in enumerate(svc.classes_)])
    np.testing.assert_allclose(cmp.metrics.at["svc", "roc_auc"], want, **TOL)


class Reversed:
    """A classifier listing its classes the other way round from the model it wraps."""

    def __init__(self, model):
        self.model, self.classes_ = model, model.classes_[::-1]
        self.n_features_in_, self.feature_names_in_ = model.n_features_in_, model.feature_names_in_

    def predict(self, X):
        return self.model.predict(X)

    def predict_proba(self, X):
        return self.model.predict_proba(X)[:, ::-1]


def test_class_orders_are_lined_up_by_label(binary):
    models, X, y = binary
    cmp = compare_models({"lr": models["logistic"], "reversed": Reversed(models["logistic"]),
                          "adapter": ModelAdapter(models["logistic"])}, X, y, n_boot=30)
    for other in ("reversed", "adapter"):
        np.testing.assert_allclose(cmp.metrics.loc[other], cmp.metrics.loc["lr"], **TOL)
        assert (row(cmp, "lr", other, "roc_auc")[["difference", "low", "high"]] == 0).all()
        assert row(cmp, "lr", other, "accuracy").p_value == 1.0


def test_result_is_frozen_and_picklable(regression):
    models, X, y = regression
    cmp = compare_models(models, X, y, n_boot=20)
    with pytest.raises(AttributeError):
        cmp.notes = []
    back = pickle.loads(pickle.dumps(cmp))
    pd.testing.assert_frame_equal(back.differences, cmp.differences)
    assert set(cmp.params) >= {"n_boot", "confidence", "random_state", "n_rows", "n_left_out"}
    assert len(cmp.differences) == 3 * 3  # three pairs x three metrics
    assert list(cmp.differences[["model_a", "model_b"]].drop_duplicates().itertuples(index=False, name=None)) == [
        ("ols", "ridge"), ("ols", "forest"), ("ridge", "forest")]
