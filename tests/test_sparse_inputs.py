"""A scipy sparse matrix, or a DataFrame of sparse columns, is accepted wherever a model takes
one (issue #23): every explanation of it equals the same explanation of the dense table, and
one too large to densify is refused before any is built, with a message that says so."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

from explainers import ModelAdapter
from explainers.ale import ale
from explainers.errors import InvalidDataError
from explainers.importance import permutation_importance
from explainers.interactions import h_statistic
from explainers.pdp import partial_dependence
from explainers.shap import explain


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(90, 4))
    dense[dense < 0.4] = 0.0  # mostly zeros, as a sparse design matrix is
    y = (dense[:, 0] + dense[:, 1] > 0.5).astype(int)
    csr = sp.csr_matrix(dense)
    models = [LogisticRegression().fit(csr, y), RandomForestClassifier(8, max_depth=4, random_state=0).fit(csr, y)]
    return dense, csr, y, models


def _same(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("form", ["csr", "csc", "coo", "frame"])
def test_sparse_input_equals_dense_input(fitted, form):
    dense, csr, y, models = fitted

    def as_form(rows):
        part = sp.csr_matrix(rows)
        return (pd.DataFrame.sparse.from_spmatrix(part) if form == "frame" else
                {"csr": part, "csc": part.tocsc(), "coo": part.tocoo()}[form])

    given = as_form(dense)
    for model in models:
        _same(ModelAdapter(model).predict(given), ModelAdapter(model).predict(dense))
        _same(explain(model, as_form(dense[:3]), background=dense[:30]).values,
              explain(model, dense[:3], background=dense[:30]).values)
        _same(partial_dependence(model, given, [0], grid_resolution=5).average,
              partial_dependence(model, dense, [0], grid_resolution=5).average)
        _same(ale(model, given, [1]).effect, ale(model, dense, [1]).effect)
        _same(permutation_importance(model, given, y, n_repeats=2).raw,
              permutation_importance(model, dense, y, n_repeats=2).raw)
    h_sparse, h_dense = h_statistic(models[1], as_form(dense[:25])), h_statistic(models[1], dense[:25])
    _same(h_sparse.h2, h_dense.h2)
    _same(h_sparse.overall_h2, h_dense.overall_h2)


def test_sparse_input_too_large_to_densify_is_refused(fitted, monkeypatch):
    _, csr, _, models = fitted
    monkeypatch.setenv("GLASSBOX_MAX_DATA_BYTES", "1000")
    with pytest.raises(InvalidDataError, match=r"sparse csr_matrix of 90 x 4.*GLASSBOX_MAX_DATA_BYTES"):
        ModelAdapter(models[0]).predict(csr)


def test_segment_of_sparse_rows_equals_dense(fitted):
    from explainers.segments import Range, Segment, propose_segments, row_errors

    dense, csr, y, models = fitted
    seg = Segment("x0 high", (Range("x0", 0.5, None),))
    np.testing.assert_array_equal(seg.mask(None, csr), seg.mask(None, dense))
    np.testing.assert_array_equal(seg.mask(models[1], csr, y), seg.mask(models[1], dense, y))
    assert 0 < seg.mask(None, csr).sum() < len(dense)
    _same(row_errors(models[0], csr, y), row_errors(models[0], dense, y))
    got = propose_segments(models[1], csr, y, min_rows=10)
    want = propose_segments(models[1], dense, y, min_rows=10)
    assert [s.segment.describe() for s in got] == [s.segment.describe() for s in want]
