"""explainers.quality: every number against scikit-learn's own metric functions."""
import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve
from sklearn.ensemble import IsolationForest, RandomForestRegressor
from sklearn.linear_model import LinearRegression, LogisticRegression

from explainers import ExplainerError
from explainers.quality import (
    ClassificationQuality,
    RegressionQuality,
    calibration,
    gains,
    quality,
    residual_bands,
    threshold_metrics,
)

TOL = dict(rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def yes_no():
    """A binary model on text labels, and a target column with blanks (as read from a CSV)."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(180, 3)), columns=["income", "debt", "age"])
    y = np.where(X.income - X.debt + rng.normal(0, 0.8, 180) > 0, "yes", "no")
    model = LogisticRegression().fit(X, y)
    gappy = pd.Series(y, dtype=object)
    gappy[[3, 50, 51]] = np.nan
    gappy[77] = "  "  # a blank cell that is not NaN
    return model, X, y, gappy


@pytest.fixture(scope="module")
def three_classes():
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(200, 4)), columns=list("abcd"))
    score = X.a + 0.5 * X.b + rng.normal(0, 0.7, 200)
    y = np.where(score > 0.6, "high", np.where(score < -0.6, "low", "mid"))
    return LogisticRegression(max_iter=500).fit(X, y), X, y


@pytest.mark.parametrize("threshold", [0.5, 0.3, 0.8])
def test_binary_with_text_labels_and_blank_targets(yes_no, threshold):
    model, X, y, gappy = yes_no
    q = quality(model, X, gappy, threshold=threshold)
    assert isinstance(q, ClassificationQuality) and q.task == "binary"
    assert q.n_left_out == 4 and q.n_unknown == 0
    keep = np.array([i for i in range(len(X)) if i not in (3, 50, 51, 77)])
    np.testing.assert_array_equal(q.rows, keep)
    y_k = y[keep]
    p = model.predict_proba(X.iloc[keep])[:, 1]  # classes_ = ["no", "yes"]: "yes" is positive
    hit = (y_k == "yes").astype(int)
    pred = np.where(p >= threshold, "yes", "no")
    np.testing.assert_array_equal(q.confusion.matrix, skm.confusion_matrix(y_k, pred, labels=["no", "yes"]))
    assert q.confusion.to_frame().loc["yes", "no"] == ((y_k == "yes") & (pred == "no")).sum()
    fpr, tpr, thr = skm.roc_curve(hit, p)
    r = q.roc[0]
    np.testing.assert_allclose(r.fpr, fpr, **TOL)
    np.testing.assert_allclose(r.tpr, tpr, **TOL)
    np.testing.assert_allclose(r.thresholds, thr, **TOL)
    assert r.auc == pytest.approx(skm.roc_auc_score(hit, p), rel=1e-12)
    prec, rec, pthr = skm.precision_recall_curve(hit, p)
    np.testing.assert_allclose(q.pr[0].precision, prec, **TOL)
    np.testing.assert_allclose(q.pr[0].recall, rec, **TOL)
    np.testing.assert_allclose(q.pr[0].thresholds, pthr, **TOL)
    assert q.pr[0].average_precision == pytest.approx(skm.average_precision_score(hit, p), rel=1e-12)
    m = q.metrics
    assert m["accuracy"] == pytest.approx(skm.accuracy_score(y_k, pred), rel=1e-12)
    assert m["precision"] == pytest.approx(skm.precision_score(y_k, pred, pos_label="yes", zero_division=0))
    assert m["recall"] == pytest.approx(skm.recall_score(y_k, pred, pos_label="yes"))
    assert m["f1"] == pytest.approx(skm.f1_score(y_k, pred, pos_label="yes", zero_division=0))
    assert m["specificity"] == pytest.approx(skm.recall_score(y_k, pred, pos_label="no"))
    assert m["balanced_accuracy"] == pytest.approx(skm.balanced_accuracy_score(y_k, pred))
    assert m["brier"] == pytest.approx(skm.brier_score_loss(hit, p), rel=1e-12)
    assert m["log_loss"] == pytest.approx(skm.log_loss(y_k, model.predict_proba(X.iloc[keep])), rel=1e-12)
    assert (m["tp"], m["fp"], m["tn"], m["fn"]) == (
        int(((pred == "yes") & (hit == 1)).sum()), int(((pred == "yes") & (hit == 0)).sum()),
        int(((pred == "no") & (hit == 0)).sum()), int(((pred == "no") & (hit == 1)).sum()))


def test_the_threshold_moves_the_confusion_matrix_as_by_hand(yes_no):
    model, X, y, _ = yes_no
    p = model.predict_proba(X)[:, 1]
    seen = set()
    for t in (0.1, 0.5, 0.9):
        cm = quality(model, X, y, threshold=t).confusion.matrix
        tp = int(((p >= t) & (y == "yes")).sum())
        fn = int(((p < t) & (y == "yes")).sum())
        fp = int(((p >= t) & (y == "no")).sum())
        tn = int(((p < t) & (y == "no")).sum())
        np.testing.assert_array_equal(cm, [[tn, fp], [fn, tp]])
        seen.add(tuple(cm.ravel()))
    assert len(seen) == 3  # it really moved


def test_the_positive_class_can_be_the_first(yes_no):
    model, X, y, _ = yes_no
    q = quality(model, X, y, threshold=0.4, class_index=0)
    p0 = model.predict_proba(X)[:, 0]
    pred = np.where(p0 >= 0.4, "no", "yes")
    np.testing.assert_array_equal(q.confusion.matrix, skm.confusion_matrix(y, pred, labels=["no", "yes"]))
    assert q.roc[0].label == "no"
    assert q.roc[0].auc == pytest.approx(skm.roc_auc_score(y == "no", p0), rel=1e-12)


def test_calibration_against_scikit_learn_with_counts(yes_no):
    model, X, y, _ = yes_no
    p = model.predict_proba(X)[:, 1]
    hit = (y == "yes").astype(int)
    for n_bins in (5, 10, 13):
        c = quality(model, X, y, n_bins=n_bins).calibration[0]
        prob_true, prob_pred = calibration_curve(hit, p, n_bins=n_bins, strategy="uniform")
        np.testing.assert_allclose(c.prob_true, prob_true, **TOL)
        np.testing.assert_allclose(c.prob_pred, prob_pred, **TOL)
        edges = np.linspace(0, 1, n_bins + 1)
        # counts by hand: bin i holds edges[i] <= p < edges[i + 1] (the last bin includes 1)
        by_hand = np.array([((p >= edges[i]) & ((p < edges[i + 1]) if i < n_bins - 1 else (p <= 1))).sum()
                            for i in range(n_bins)])
        np.testing.assert_array_equal(c.counts, by_hand[by_hand > 0])
        assert c.counts.sum() == len(p)
        # the observed share is positives / rows in each bin
        obs = [hit[(p >= edges[b]) & ((p < edges[b + 1]) if b < n_bins - 1 else (p <= 1))].mean() for b in c.bins]
        np.testing.assert_allclose(c.prob_true, obs, **TOL)


def test_gains_and_lift_by_hand():
    score = np.array([0.3, 0.9, 0.6, 0.8, 0.1, 0.7, 0.2, 0.5, 0.4, 0.05])
    hit = np.array([0, 1, 1, 0, 0, 1, 0, 1, 0, 0])
    # by score, highest first: 0.9 (hit), 0.8, 0.7 (hit), 0.6 (hit), 0.5 (hit), then no more hits
    want = np.array([0, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4]) / 4
    g = gains(hit, score)
    np.testing.assert_array_equal(g.rows, np.arange(11))
    np.testing.assert_allclose(g.fraction, np.arange(11) / 10, **TOL)
    np.testing.assert_allclose(g.gains, want, **TOL)
    assert np.isnan(g.lift[0])
    np.testing.assert_allclose(g.lift[1:], want[1:] / (np.arange(1, 11) / 10), **TOL)
    assert g.lift[3] == pytest.approx(0.5 / 0.3) and g.lift[1] == pytest.approx(2.5)
    assert g.prevalence == 0.4 and g.gains[-1] == 1.0


def test_gains_on_large_data_keep_at_most_201_points():
    rng = np.random.default_rng(2)
    hit = rng.integers(0, 2, 5000)
    score = rng.random(5000)
    g = gains(hit, score)
    assert len(g.rows) == 201 and g.rows[0] == 0 and g.rows[-1] == 5000
    cum = np.concatenate([[0], np.cumsum(hit[np.argsort(-score)])])
    np.testing.assert_allclose(g.gains, cum[g.rows] / hit.sum(), **TOL)


def test_threshold_metrics_direct():
    hit = np.array([0, 0, 1, 1, 1, 0])
    score = np.array([0.1, 0.6, 0.7, 0.4, 0.9, 0.2])
    m = threshold_metrics(hit, score, 0.5)
    assert (m["tp"], m["fp"], m["tn"], m["fn"]) == (2, 1, 2, 1)
    assert m["precision"] == pytest.approx(2 / 3) and m["recall"] == pytest.approx(2 / 3)
    assert m["specificity"] == pytest.approx(2 / 3) and m["npv"] == pytest.approx(2 / 3)
    assert m["predicted_positive"] == pytest.approx(0.5)


def test_multiclass_with_string_classes(three_classes):
    model, X, y = three_classes
    q = quality(model, X, y)
    assert q.task == "multiclass" and q.threshold is None
    classes = list(model.classes_)
    assert q.classes == classes
    proba = model.predict_proba(X)
    pred = model.classes_[np.argmax(proba, axis=1)]
    np.testing.assert_array_equal(q.confusion.matrix, skm.confusion_matrix(y, pred, labels=classes))
    np.testing.assert_array_equal(np.asarray(classes)[q.y_pred], model.predict(X))
    assert len(q.roc) == len(q.pr) == len(q.calibration) == 3
    for c, label in enumerate(classes):
        hit = (y == label).astype(int)
        fpr, tpr, _ = skm.roc_curve(hit, proba[:, c])
        np.testing.assert_allclose(q.roc[c].fpr, fpr, **TOL)
        np.testing.assert_allclose(q.roc[c].tpr, tpr, **TOL)
        assert q.roc[c].label == label
        assert q.pr[c].average_precision == pytest.approx(skm.average_precision_score(hit, proba[:, c]), rel=1e-12)
    table = q.per_class.set_index("class")
    prec, rec, f1, sup = skm.precision_recall_fscore_support(y, pred, labels=classes, zero_division=0)
    np.testing.assert_allclose(table.precision, prec, **TOL)
    np.testing.assert_allclose(table.recall, rec, **TOL)
    np.testing.assert_allclose(table.f1, f1, **TOL)
    np.testing.assert_array_equal(table.support, sup)
    ovr = skm.roc_auc_score(y, proba, multi_class="ovr", labels=classes, average=None)
    np.testing.assert_allclose(table.roc_auc, ovr, **TOL)
    assert q.metrics["roc_auc_ovr"] == pytest.approx(skm.roc_auc_score(y, proba, multi_class="ovr"), rel=1e-12)
    assert q.metrics["accuracy"] == pytest.approx(skm.accuracy_score(y, pred))
    assert q.metrics["macro_f1"] == pytest.approx(skm.f1_score(y, pred, average="macro"))
    # one cell of the confusion matrix: exactly the rows of that class predicted as the other
    rows = q.rows_in_cell("high", "mid")
    np.testing.assert_array_equal(rows, np.flatnonzero((y == "high") & (pred == "mid")))
    np.testing.assert_array_equal(q.rows_in_cell("low", "low"), np.flatnonzero((y == "low") & (pred == "low")))


def test_labels_the_model_does_not_know_are_left_out(three_classes):
    model, X, y = three_classes
    odd = pd.Series(y, dtype=object)
    odd[[0, 1]] = "unheard"
    q = quality(model, X, odd)
    assert q.n_unknown == 2 and q.n_left_out == 0 and len(q.rows) == len(X) - 2


def test_numeric_classes_match_targets_read_as_floats():
    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.normal(size=(120, 2)), columns=["u", "v"])
    y = (X.u > 0).astype(int)
    model = LogisticRegression().fit(X, y)
    as_read = y.astype(float)
    as_read[[4, 9]] = np.nan  # a CSV column with blanks comes back as floats
    q = quality(model, X, as_read)
    assert q.n_left_out == 2 and q.n_unknown == 0 and len(q.rows) == 118


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(150, 3)), columns=["x1", "x2", "x3"])
    y = 3 * X.x1 - X.x2 + rng.normal(0, 0.5, 150) + 10
    return RandomForestRegressor(n_estimators=20, random_state=0).fit(X, y), X, y


def test_regression_against_scikit_learn_with_blank_targets(regression):
    model, X, y = regression
    gappy = y.astype(object)
    gappy[[0, 10]] = np.nan
    gappy[20] = ""
    q = quality(model, X, gappy)
    assert isinstance(q, RegressionQuality) and q.n_left_out == 3
    keep = np.setdiff1d(np.arange(len(X)), [0, 10, 20])
    np.testing.assert_array_equal(q.rows, keep)
    yt, yp = y.to_numpy()[keep], model.predict(X.iloc[keep])
    np.testing.assert_allclose(q.y_pred, yp, **TOL)
    np.testing.assert_allclose(q.residuals, yt - yp, **TOL)
    m = q.metrics
    assert m["r2"] == pytest.approx(skm.r2_score(yt, yp), rel=1e-12)
    assert m["mae"] == pytest.approx(skm.mean_absolute_error(yt, yp), rel=1e-12)
    assert m["rmse"] == pytest.approx(skm.root_mean_squared_error(yt, yp), rel=1e-12)
    assert m["mape"] == pytest.approx(skm.mean_absolute_percentage_error(yt, yp), rel=1e-12)
    assert m["median_ae"] == pytest.approx(skm.median_absolute_error(yt, yp), rel=1e-12)
    assert m["max_error"] == pytest.approx(skm.max_error(yt, yp), rel=1e-12)
    for a, v in q.quantiles.items():
        assert v == pytest.approx(np.quantile(yt - yp, a), rel=1e-12)
    bands = residual_bands(q)
    assert bands.rows.sum() == len(keep)
    lo, hi = bands.low[2], bands.high[2]
    np.testing.assert_array_equal(q.rows_in_band(lo, hi), keep[((yt - yp) >= lo) & ((yt - yp) < hi)])


def test_mape_is_left_out_when_a_target_is_zero():
    X = pd.DataFrame({"x": np.arange(10.0)})
    y = np.arange(10.0)  # the first target is 0
    q = quality(LinearRegression().fit(X, y + 0.1), X, y)
    assert q.metrics["mape"] is None


@pytest.mark.parametrize("y", [None, [np.nan] * 150, [""] * 150])
def test_no_target_says_quality_needs_it(regression, y):
    model, X, _ = regression
    with pytest.raises(ExplainerError, match="quality needs the target column"):
        quality(model, X, y)


@pytest.mark.parametrize("bad, match", [
    (dict(threshold=1.5), "'threshold' parameter of quality must be a float in \\[0, 1\\]"),
    (dict(n_bins=1), "'n_bins' parameter of quality must be an int >= 2"),
    (dict(class_index=2), "'class_index' parameter of quality must be 0 or 1"),
])
def test_parameter_errors(yes_no, bad, match):
    model, X, y, _ = yes_no
    with pytest.raises(ExplainerError, match=match):
        quality(model, X, y, **bad)


def test_text_target_for_a_regressor_is_refused(regression):
    model, X, y = regression
    with pytest.raises(ExplainerError, match="must be numbers"):
        quality(model, X, np.where(y > 10, "big", "small"))


def test_an_outlier_detector_has_no_quality(regression):
    _, X, y = regression
    with pytest.raises(ExplainerError, match="outlier detector"):
        quality(IsolationForest(random_state=0).fit(X), X, y)


def test_one_class_present_gives_nan_areas_not_errors(yes_no):
    model, X, y, _ = yes_no
    only = np.where(y == "yes")[0]
    q = quality(model, X.iloc[only], y[only])
    assert np.isnan(q.roc[0].auc)
    assert q.confusion.matrix[0].sum() == 0
    assert calibration(np.ones(4), np.array([0.1, 0.2, 0.8, 0.9]), n_bins=2).prob_true.tolist() == [1.0, 1.0]


def test_to_frame(yes_no, regression):
    model, X, y, _ = yes_no
    q = quality(model, X, y)
    f = q.to_frame()
    assert list(f.columns) == ["row", "actual", "predicted", "P(no)", "P(yes)"] and len(f) == len(X)
    assert list(q.roc[0].to_frame().columns) == ["threshold", "fpr", "tpr"]
    assert q.calibration[0].to_frame().rows.sum() == len(X)
    rm, rX, ry = regression
    assert list(quality(rm, rX, ry).to_frame().columns) == ["row", "actual", "predicted", "residual"]


# ------------------------------------------------- classifiers without probabilities
def _margin_models():
    from sklearn.linear_model import RidgeClassifier
    from sklearn.svm import SVC, LinearSVC

    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.normal(size=(220, 3)), columns=["a", "b", "c"])
    y2 = np.where(X.a + X.b + rng.normal(scale=0.6, size=220) > 0, "yes", "no")
    y3 = np.select([X.a < -0.4, X.a < 0.5], ["lo", "mid"], "hi")
    return X, [(SVC().fit(X, y2), y2), (LinearSVC().fit(X, y2), y2), (RidgeClassifier().fit(X, y3), y3),
               (SVC().fit(X, y3), y3)]


def test_margin_classifiers_are_scored_on_their_predictions_and_decision_function():
    """SVC, LinearSVC, RidgeClassifier: no predict_proba. Labels are the model's own predict,
    curves rank rows by its decision function, and nothing that needs probabilities is made up."""
    X, models = _margin_models()
    for model, y in models:
        q = quality(model, X, y)
        assert q.scale == "margin" and q.calibration == [] and np.isnan(q.metrics["log_loss"])
        labels = list(model.classes_)
        pred = model.predict(X)
        np.testing.assert_array_equal(q.confusion.matrix, skm.confusion_matrix(y, pred, labels=labels))
        assert q.metrics["accuracy"] == skm.accuracy_score(y, pred)
        df = model.decision_function(X)
        if len(labels) == 2:
            assert np.isnan(q.metrics["brier"])
            np.testing.assert_allclose(q.metrics["roc_auc"], skm.roc_auc_score(y == labels[1], df), **TOL)
            assert q.metrics["precision"] == skm.precision_score(y, pred, pos_label=labels[1])
            assert q.metrics["recall"] == skm.recall_score(y, pred, pos_label=labels[1])
            # the other class as the positive one: its margin is the decision function negated
            q0 = quality(model, X, y, class_index=0)
            np.testing.assert_allclose(q0.metrics["roc_auc"], skm.roc_auc_score(y == labels[0], -df), **TOL)
            np.testing.assert_array_equal(q0.confusion.matrix, q.confusion.matrix)
        else:
            aucs = [skm.roc_auc_score(y == c, df[:, i]) for i, c in enumerate(labels)]
            np.testing.assert_allclose(q.metrics["roc_auc_ovr"], np.mean(aucs), **TOL)
            np.testing.assert_allclose(q.per_class.roc_auc, aucs, **TOL)
            assert q.metrics["balanced_accuracy"] == skm.balanced_accuracy_score(y, pred)


def test_margin_threshold_moves_the_decision():
    X, models = _margin_models()
    model, y = models[0]
    df = model.decision_function(X)
    for t in (-0.5, 0.3):
        q = quality(model, X, y, threshold=t)
        expected = np.where(df > t, "yes", "no")
        np.testing.assert_array_equal(q.confusion.matrix, skm.confusion_matrix(y, expected, labels=["no", "yes"]))
    with pytest.raises(ExplainerError, match="threshold"):
        quality(model, X, y, threshold=float("nan"))


def test_another_threshold_reuses_the_curves_and_equals_a_fresh_computation():
    """A threshold slider on a large table (issue #31): the result at another threshold takes the
    curves, areas and log loss from the one it is given, and equals a fresh computation exactly."""
    from explainers.quality import classification_quality

    rng = np.random.default_rng(5)
    y = np.where(rng.uniform(size=3000) < 0.3, "yes", "no").astype(object)
    y[rng.choice(3000, 40, replace=False)] = None  # empty targets are left out alike
    p = np.clip(rng.beta(2, 5, 3000) + 0.3 * (y == "yes"), 0, 1)
    proba = np.column_stack([1 - p, p])
    base = classification_quality(y, proba, ["no", "yes"], threshold=0.5, class_index=1)
    for t in (0.1, 0.37, 0.9):
        fresh = classification_quality(y, proba, ["no", "yes"], threshold=t, class_index=1)
        again = classification_quality(y, proba, ["no", "yes"], threshold=t, class_index=1, reuse=base)
        assert again.roc[0] is base.roc[0] and again.pr[0] is base.pr[0]  # taken, not computed
        assert again.metrics == pytest.approx(fresh.metrics, nan_ok=True, rel=0, abs=0)
        np.testing.assert_array_equal(again.confusion.matrix, fresh.confusion.matrix)
        pd.testing.assert_frame_equal(again.per_class, fresh.per_class)
        np.testing.assert_array_equal(again.y_pred, fresh.y_pred)
    other = classification_quality(y, proba, ["no", "yes"], threshold=0.4, class_index=0, reuse=base)
    assert other.roc[0] is not base.roc[0]  # another class: nothing reused
    fresh = classification_quality(y, proba, ["no", "yes"], threshold=0.4, class_index=0)
    assert other.metrics == pytest.approx(fresh.metrics, nan_ok=True, rel=0, abs=0)


@pytest.mark.parametrize("ties", [None, 2, 50])
def test_one_sort_gives_scikit_learns_curves_areas_and_counts_exactly(ties):
    """The ROC and precision-recall curves, their areas, the threshold metrics and the per-class
    table come from one sort per class and counts (no scikit-learn call per curve); every value
    equals scikit-learn's, with scores tied in runs of every length (rounded to ``ties`` levels)."""
    from explainers.quality import class_table, precision_recall, roc

    rng = np.random.default_rng(7 if ties is None else ties)
    n = 3000
    score = rng.random(n)
    if ties is not None:
        score = np.round(score * ties) / ties
    hit = (rng.random(n) < score).astype(int)
    r = roc(hit, score)
    fpr, tpr, thr = skm.roc_curve(hit, score)
    for got, want in ((r.fpr, fpr), (r.tpr, tpr), (r.thresholds, thr)):
        np.testing.assert_array_equal(got, want)
    assert r.auc == skm.roc_auc_score(hit, score)
    pr = precision_recall(hit, score)
    prec, rec, thr = skm.precision_recall_curve(hit, score)
    for got, want in ((pr.precision, prec), (pr.recall, rec), (pr.thresholds, thr)):
        np.testing.assert_array_equal(got, want)
    assert pr.average_precision == skm.average_precision_score(hit, score)

    m = threshold_metrics(hit, score, 0.5)
    pred = (score >= 0.5).astype(int)
    assert m["accuracy"] == skm.accuracy_score(hit, pred)
    assert m["precision"] == skm.precision_score(hit, pred) and m["recall"] == skm.recall_score(hit, pred)
    assert m["f1"] == skm.f1_score(hit, pred)
    assert m["balanced_accuracy"] == skm.balanced_accuracy_score(hit, pred)

    # three classes, one of them never predicted, and a fourth with no rows
    y_true = np.minimum(2, (score * 3).astype(int))
    y_pred = np.where(rng.random(n) < 0.7, y_true, rng.integers(0, 2, n))
    proba = rng.dirichlet(np.ones(4), n)
    if ties is not None:
        proba = np.round(proba * ties) / ties
    t = class_table(y_true, y_pred, proba, ["a", "b", "c", "d"])
    want = skm.precision_recall_fscore_support(y_true, y_pred, labels=np.arange(4), zero_division=0)
    for col, w in zip(["precision", "recall", "f1", "support"], want):
        np.testing.assert_array_equal(t[col].to_numpy(), w)
    for c in range(3):
        assert t.roc_auc[c] == skm.roc_auc_score(y_true == c, proba[:, c])
        assert t.average_precision[c] == skm.average_precision_score(y_true == c, proba[:, c])
    assert np.isnan(t.roc_auc[3]) and np.isnan(t.average_precision[3])


def test_a_score_that_is_not_finite_is_refused_with_a_message():
    from explainers.quality import roc

    with pytest.raises(Exception, match="empty or infinite"):
        roc([0, 1, 1], [0.2, np.nan, 0.7])


@pytest.mark.parametrize("case", range(8))
def test_accuracy_as_text_equals_scikit_learn_on_the_texts(case):
    """The Model page's score compares labels as text, each distinct value's text formed once:
    equal to accuracy_score on the texts of every row, where equal values write differently too
    (1 and True, 0.0 and -0.0) and a float target meets integer classes."""
    from explainers.quality import accuracy_as_text

    rng = np.random.default_rng(case)
    y, p = [
        (pd.Series(rng.integers(0, 2, 500).astype(float)), rng.integers(0, 2, 500)),
        (pd.Series(np.where(rng.random(500) < .5, "yes", "no")), np.where(rng.random(500) < .5, "yes", "no")),
        (pd.Series(np.array([1, "1", 2.0, "x", True] * 20, dtype=object)), np.array([1, 2, 2, 1, 1] * 20)),
        (pd.Series(np.array([1, "1", 2.0, "x", True] * 20, dtype=object)),
         np.array([1, "1", 2, True, 1] * 20, dtype=object)),
        (pd.Series([0.1 + 0.2, 0.3, 1e20, -0.0, 0.0] * 5), np.array([0.30000000000000004, 0.3, 1e20, 0.0, 0.0] * 5)),
        (pd.Series(pd.Categorical(["a", "b"] * 10)), np.array(["a", "a"] * 10)),
        (pd.Series(pd.Categorical([1, 2] * 10)), np.array([1, 1] * 10)),
        (pd.Series([True, False] * 10), np.array(["True", "False"] * 5 + ["1", "0"] * 5)),
    ][case]
    assert accuracy_as_text(y, p) == skm.accuracy_score(y.astype(str), p.astype(str))


def test_probability_distribution_counts_each_actual_class_as_numpy_histogram(three_classes):
    from explainers.quality import probability_distribution

    model, X, y = three_classes
    proba = model.predict_proba(X)
    gappy = pd.Series(y, dtype=object)
    gappy[[0, 5]] = np.nan  # no target: in no series
    gappy[9] = "unknown"  # not a class of the model: in no series
    d = probability_distribution(gappy, proba, list(model.classes_), 1, bins=20)
    edges = np.linspace(0, 1, 21)
    np.testing.assert_array_equal(d.edges, edges)
    keep = ~gappy.isin([np.nan, "unknown"]).to_numpy() & gappy.notna().to_numpy()
    for i, c in enumerate(model.classes_):
        want, _ = np.histogram(proba[keep & (y == c), 1], bins=edges)
        np.testing.assert_array_equal(d.counts[i], want)
    assert d.left_out == 3 and d.counts.sum() == len(y) - 3
    assert d.names == [str(c) for c in model.classes_] and d.what == f"predicted probability of {model.classes_[1]}"
    assert list(d.to_frame().columns) == ["bin_low", "bin_high", *d.names]


def test_value_distribution_shares_its_bins_and_leaves_out_what_is_not_finite():
    from explainers.quality import value_distribution

    rng = np.random.default_rng(4)
    pred, actual = rng.normal(size=300), rng.normal(1, 2, size=300)
    actual[:4] = [np.nan, np.inf, 1.0, 7.5]
    d = value_distribution({"predicted": pred, "actual": actual}, bins=30)
    finite = actual[np.isfinite(actual)]
    lo, hi = min(pred.min(), finite.min()), max(pred.max(), finite.max())
    np.testing.assert_allclose(d.edges, np.linspace(lo, hi, 31), rtol=0, atol=0)
    np.testing.assert_array_equal(d.counts[0], np.histogram(pred, bins=d.edges)[0])
    np.testing.assert_array_equal(d.counts[1], np.histogram(finite, bins=d.edges)[0])
    assert d.left_out == 2 and d.counts[0].sum() == 300 and d.counts[1].sum() == 298
