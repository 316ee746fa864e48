"""The model's predictions of every row are computed once per model and data and shared by
the pages (issue #31): the Model page's score, Quality, Segments' errors and proposals, the
SHAP and What-if row pickers. Counted by the rows the model is asked to predict, not by time."""
import collections

import numpy as np
import pytest

from dashboard import state
from explainers.model import ModelAdapter
from tests.views._app import open_page


@pytest.fixture
def counted(monkeypatch):
    """Every predict call of every adapter, by (output, class index, rows)."""
    calls = collections.Counter()
    real_predict, real_labels = ModelAdapter.predict, ModelAdapter.predict_labels

    def predict(self, X):
        calls[("predict", self.output, self.class_index, len(X))] += 1
        return real_predict(self, X)

    def predict_labels(self, X):
        calls[("labels", None, None, len(X))] += 1
        return real_labels(self, X)

    monkeypatch.setattr(ModelAdapter, "predict", predict)
    monkeypatch.setattr(ModelAdapter, "predict_labels", predict_labels)
    cache = state.result_cache()
    monkeypatch.setattr(cache, "disk", None)  # nothing from an earlier run's files
    cache.clear()
    yield calls
    cache.clear()


@pytest.mark.parametrize("demo", ["breast_cancer_xgb", "housing_gb"])
def test_every_row_is_predicted_once_per_output_across_the_pages(counted, demo):
    from dashboard.state.context import demo_context

    at = open_page(demo=demo)
    n = len(demo_context(demo).X)
    for page in ["views/quality.py", "views/segments.py", "views/shap.py", "views/whatif.py", "views/quality.py",
                 "views/segments.py", "views/shap.py"]:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
    whole = {k: v for k, v in counted.items() if k[3] == n}
    assert whole, counted  # the pages did predict every row
    assert all(v == 1 for v in whole.values()), whole  # each output once, whatever the pages and visits


@pytest.mark.parametrize("demo", ["breast_cancer_xgb", "breast_cancer_hgb", "wine_gb", "diabetes_forest"])
def test_labels_from_the_shared_probabilities_equal_the_models_own(counted, demo):
    """For a classifier whose predict is the class of largest probability by its own code, the
    labels come from the shared probabilities: equal to predict, and no second pass over the rows."""
    from dashboard.state.context import demo_context
    from dashboard.state.predictions import _labels_are_argmax, all_labels

    ctx = demo_context(demo)
    if ctx.task == "regression":
        assert not _labels_are_argmax(ctx.model)
        return
    labels = all_labels(ctx)
    derived = _labels_are_argmax(ctx.model)
    assert derived == (demo != "wine_gb")  # GradientBoostingClassifier: its own predict is asked
    n = len(ctx.X)
    assert counted[("labels", None, None, n)] == (0 if derived else 1)
    counted.clear()
    assert np.array_equal(labels.astype(str), ctx.adapter.predict_labels(ctx.X).astype(str))
