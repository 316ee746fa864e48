"""explainers.description: one description per fitted model, read by the method choice."""
import numpy as np
import pandas as pd
import pytest
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.ensemble import GradientBoostingClassifier, RandomForestRegressor
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import explainers.description as D
import explainers.trees.pipeline as P
from explainers import shap
from explainers.linear import is_linear_model
from explainers.model import detect_task
from explainers.trees import flatten_model, is_tree_model
from explainers.trees.pipeline import fold_refusal


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 4)), columns=["a", "b", "c", "d"])
    y = X.a + 2 * X.b - X.c * X.d
    return X, y


def _models(X, y):
    cls = (y > y.median()).astype(int)
    three = pd.cut(y, 3, labels=False)
    return {
        "forest": RandomForestRegressor(5, max_depth=3, random_state=0).fit(X, y),
        "boosting": GradientBoostingClassifier(n_estimators=5, random_state=0).fit(X, cls),
        "boosting3": GradientBoostingClassifier(n_estimators=5, random_state=0).fit(X, three),
        "scaled forest": make_pipeline(StandardScaler(), RandomForestRegressor(5, random_state=0)).fit(X, y),
        "pca forest": make_pipeline(PCA(2), RandomForestRegressor(5, random_state=0)).fit(X, y),
        "linear": make_pipeline(StandardScaler(), LinearRegression()).fit(X, y),
        "logistic": LogisticRegression().fit(X, cls),
        "knn": KNeighborsRegressor().fit(X, y),
    }


def test_each_fact_is_the_one_its_own_probe_reads(data):
    X, y = data
    for name, model in _models(X, y).items():
        d = D.describe(model)
        final = model.steps[-1][1] if hasattr(model, "steps") else model
        assert d.name == type(final).__name__, name
        assert d.task == detect_task(model), name
        assert d.refusal is None
        classes = getattr(model, "classes_", None)
        assert d.classes == (None if d.task == "regression" else tuple(classes.tolist())), name
        assert d.input_columns == ("a", "b", "c", "d"), name
        assert d.tree == is_tree_model(model), name
        assert d.tree_transform == (flatten_model(model).transform if d.tree else None), name
        expected_refusal = fold_refusal(model) if hasattr(model, "steps") and is_tree_model(final) else None
        assert d.fold_refusal == expected_refusal, name
        assert d.linear == (not d.tree and is_linear_model(model)), name
        assert d.engine == ("tree" if d.tree else "linear" if d.linear else None), name
    assert D.describe(_models(X, y)["pca forest"]).fold_refusal.startswith("PCA mixes columns")
    assert D.describe(_models(X, y)["boosting"]).margin_is_native
    assert not D.describe(_models(X, y)["forest"]).margin_is_native


def test_a_model_without_a_task_is_described_with_the_reason(data):
    X, _ = data
    d = D.describe(KMeans(2, n_init=1, random_state=0).fit(X))
    assert d.task is None and d.refusal and "cluster" in d.refusal.lower()
    assert (d.tree, d.linear, d.engine) == (False, False, None)


def _count(monkeypatch, module, name, calls):
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls[name] = calls.get(name, 0) + 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)


def test_explaining_again_reads_the_description_not_the_model(monkeypatch, data):
    """Three explains of a pipeline that does not fold and of a linear model: the task, the fold's
    refusal and the linear check are read once per model, not once per explain."""
    X, y = data
    models = _models(X, y)
    calls: dict[str, int] = {}
    _count(monkeypatch, D, "detect_task", calls)
    _count(monkeypatch, D, "is_linear_model", calls)
    _count(monkeypatch, P, "fold_refusal", calls)
    for _ in range(3):
        res = shap.explain(models["pca forest"], X.iloc[:3], background=X.iloc[:20], n_samples=64)
        assert res.method == "exact" and res.params["reason"].startswith("PCA mixes columns")
    assert calls == {"detect_task": 1, "is_linear_model": 1, "fold_refusal": 1}
    for _ in range(3):
        assert shap.explain(models["linear"], X.iloc[:3], background=X.iloc[:20]).method == "linear"
    assert calls == {"detect_task": 2, "is_linear_model": 2, "fold_refusal": 1}


def test_a_refit_model_is_described_anew(data):
    X, y = data
    model = LogisticRegression().fit(X, (y > y.median()).astype(int))
    assert D.describe(model).task == "binary"
    assert D.describe(model) is D.describe(model)
    model.fit(X, pd.cut(y, 3, labels=False))
    assert D.describe(model).task == "multiclass" and D.describe(model).classes == (0, 1, 2)
    pipe = make_pipeline(StandardScaler(), LinearRegression()).fit(X, y)
    assert D.describe(pipe).linear
    pipe.steps[-1] = ("model", KNeighborsRegressor().fit(X, y))  # a step swapped in place
    assert not D.describe(pipe).linear


class _Unhashable:
    """A model that cannot be held weakly or hashed: described every time, still right."""
    __slots__ = ("classes_",)
    __hash__ = None

    def predict(self, X):
        return np.zeros(len(X))


def test_a_model_that_cannot_be_kept_is_described_each_time():
    d = D.describe(_Unhashable())
    assert (d.task, d.tree, d.linear) == ("regression", False, False)
