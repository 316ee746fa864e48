"""Seeded, stratified samples (issue #31): the same rows on every call, each stratum in
proportion (within one row), empty cells a stratum of their own; and the error tree of the
segment proposals fitted on such a sample, its segments counted on every row."""
import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LinearRegression

from explainers.errors import InvalidParameterError
from explainers.sampling import stratified_rows
from explainers.segments import propose_segments, row_errors


@pytest.mark.parametrize("n", [1, 7, 100, 999])
def test_stratified_rows_keep_each_stratum_in_proportion(n):
    rng = np.random.default_rng(0)
    strata = rng.choice(np.array(["a", "b", "c", None], dtype=object), 1000, p=[0.6, 0.25, 0.1, 0.05])
    rows = stratified_rows(strata, n)
    assert len(rows) == n == len(np.unique(rows)) and np.all(np.diff(rows) > 0)
    assert np.array_equal(rows, stratified_rows(strata, n))  # seeded: the same rows every time
    keys = pd.Series(strata).fillna("<empty>")
    total = keys.value_counts()
    got = keys.iloc[rows].value_counts().reindex(total.index, fill_value=0)
    assert np.all(np.abs(got - total * n / len(strata)) < 1.0)
    assert not np.array_equal(stratified_rows(strata, n, seed=1), rows) or n in (1, 999)


def test_stratified_rows_all_when_asked_for_more():
    assert np.array_equal(stratified_rows([1, 2, 3], 5), [0, 1, 2])
    assert len(stratified_rows([1, 2, 3], 0)) == 0


@pytest.fixture(scope="module")
def clf():
    rng = np.random.default_rng(0)
    n = 4000
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "town": rng.choice(["x", "y", "z"], n)})
    y = np.where(X.a + 0.5 * rng.normal(size=n) > 0, "yes", "no")
    model = RandomForestClassifier(20, max_depth=3, random_state=0).fit(X[["a", "b"]], y)
    return model, X[["a", "b"]], pd.Series(y)


def test_predictions_given_equal_predictions_computed(clf):
    model, X, y = clf
    cache = {"values": model.predict_proba(X), "labels": model.predict(X), "proba": model.predict_proba(X)}
    asked = []

    def predictions(what):
        asked.append(what)
        return cache[what]

    for error in ("proba", "misclassified"):
        np.testing.assert_array_equal(row_errors(model, X, y, error=error, predictions=predictions),
                                      row_errors(model, X, y, error=error))
    assert asked == ["proba", "labels"]
    with pytest.raises(InvalidParameterError, match="rows"):
        row_errors(model, X, y, predictions=lambda what: cache[what][:10])


def test_error_tree_on_a_sample_counts_its_segments_on_every_row(clf, monkeypatch):
    from sklearn.tree import DecisionTreeRegressor

    model, X, y = clf
    fitted = []
    real = DecisionTreeRegressor.fit
    monkeypatch.setattr(DecisionTreeRegressor, "fit", lambda self, Z, e, **kw: fitted.append(len(Z)) or real(self, Z, e, **kw))
    whole = propose_segments(model, X, y, max_depth=2, min_rows=50)
    same = propose_segments(model, X, y, max_depth=2, min_rows=50, fit_rows=len(X))  # no fewer rows: all of them
    sampled = propose_segments(model, X, y, max_depth=2, min_rows=50, fit_rows=1000)
    assert fitted == [len(X), len(X), 1000]
    assert [p.rule for p in same] == [p.rule for p in whole]
    err = row_errors(model, X, y)
    for p in sampled:  # counted on every row, not on the sample
        mask = p.segment.mask(None, X)
        assert p.n_rows == int(mask.sum()) and p.mean_error == pytest.approx(err[mask].mean(), rel=1e-12)
    with pytest.raises(InvalidParameterError):
        propose_segments(model, X, y, min_rows=50, fit_rows=60)


def test_regression_sample_keeps_error_deciles():
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"a": rng.normal(size=3000), "b": rng.normal(size=3000)})
    y = 2 * X.a + np.where(X.b > 1, 3.0, 0.0) * rng.normal(size=3000)
    model = LinearRegression().fit(X, y)
    props = propose_segments(model, X, y, max_depth=2, min_rows=40, fit_rows=600)
    assert props and "b" in props[0].rule  # the errors grow where b > 1: the sample finds it
