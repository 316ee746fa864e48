"""ModelAdapter: outputs, shapes, chunking and predict_masked against plain loops."""
import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import GradientBoostingClassifier, RandomForestRegressor
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from explainers import ExplainerError, ModelAdapter
from explainers.errors import InvalidFeatureError, InvalidModelError


@pytest.fixture(scope="module")
def models(reg_data, clf_data):
    X, y = reg_data
    Xc, y2, y3 = clf_data
    return {
        "forest": (RandomForestRegressor(20, max_depth=4, random_state=0).fit(X, y), X),
        "binary": (LogisticRegression().fit(Xc, y2), Xc),
        "multi": (GradientBoostingClassifier(n_estimators=10, random_state=0).fit(Xc, y3), Xc),
    }


def test_task_and_outputs(models):
    forest, X = models["forest"]
    a = ModelAdapter(forest)
    assert a.task == "regression" and a.classes is None and a.n_outputs == 1
    np.testing.assert_array_equal(a.predict(X), forest.predict(X))
    assert a.feature_names == ["a", "b", "c", "d"]

    lr, Xc = models["binary"]
    b = ModelAdapter(lr)
    assert b.task == "binary" and list(b.classes) == ["no", "yes"]
    np.testing.assert_array_equal(b.predict(Xc), lr.predict_proba(Xc))
    np.testing.assert_array_equal(ModelAdapter(lr, class_index=1).predict(Xc), lr.predict_proba(Xc)[:, 1])
    np.testing.assert_allclose(ModelAdapter(lr, output="raw").predict(Xc), lr.decision_function(Xc), rtol=0, atol=0)
    p = lr.predict_proba(Xc)
    np.testing.assert_allclose(ModelAdapter(lr, output="log_odds", class_index=1).predict(Xc),
                               np.log(p[:, 1] / (1 - p[:, 1])), rtol=1e-12)
    # for logistic regression the log-odds of the positive class are the margin
    np.testing.assert_allclose(ModelAdapter(lr, output="log_odds", class_index=1).predict(Xc),
                               lr.decision_function(Xc), rtol=1e-9, atol=1e-9)

    gb, Xc = models["multi"]
    m = ModelAdapter(gb)
    assert m.task == "multiclass" and m.n_outputs == 3 and m.output_names == ["hi", "lo", "mid"]
    np.testing.assert_array_equal(m.predict(Xc), gb.predict_proba(Xc))
    np.testing.assert_array_equal(ModelAdapter(gb, output="raw").predict(Xc), gb.decision_function(Xc))
    np.testing.assert_array_equal(ModelAdapter(gb, class_index=2).predict(Xc), gb.predict_proba(Xc)[:, 2])


def test_chunking_equals_one_call(models):
    gb, Xc = models["multi"]
    whole = ModelAdapter(gb).predict(Xc)
    chunked = ModelAdapter(gb, chunk_rows=7).predict(Xc)
    np.testing.assert_array_equal(whole, chunked)


def test_arrays_and_frames_agree(models):
    forest, X = models["forest"]
    a = ModelAdapter(forest)
    np.testing.assert_array_equal(a.predict(X.to_numpy()), a.predict(X))
    # columns in another order are put back in the model's order
    np.testing.assert_array_equal(a.predict(X[["d", "c", "b", "a"]]), a.predict(X))


def test_model_without_feature_names(reg_data):
    X, y = reg_data
    m = LinearRegression().fit(X.to_numpy(), y)
    a = ModelAdapter(m)
    assert a.feature_names == ["x0", "x1", "x2", "x3"]
    np.testing.assert_allclose(a.predict(X.to_numpy()), m.predict(X.to_numpy()))


class _DuckRegressor:
    """Any object with predict is a model."""

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        return X[:, 0] * 3 + X[:, 1]


def test_duck_typed_model(reg_data):
    X, _ = reg_data
    a = ModelAdapter(_DuckRegressor(), feature_names=list(X.columns))
    assert a.task == "regression"
    np.testing.assert_allclose(a.predict(X), X.a * 3 + X.b)


def _loop_masked(predict, X, mask, bg):
    """The definition, one background row at a time: mean_i f(x_S, b_i,C)."""
    X = np.asarray(X, dtype=object if X.dtypes.eq(object).any() else float) if isinstance(X, pd.DataFrame) else X
    out = []
    for r in range(len(X)):
        preds = []
        for i in range(len(bg)):
            z = X[r].copy()
            z[mask[r]] = np.asarray(bg)[i][mask[r]]
            preds.append(predict(z.reshape(1, -1))[0])
        out.append(np.mean(preds, axis=0))
    return np.array(out)


@pytest.mark.parametrize("name", ["forest", "multi"])
def test_predict_masked_equals_loop(models, name):
    model, X = models[name]
    a = ModelAdapter(model, chunk_rows=50)  # small chunks: exercise the chunk loop
    rows, bg = X.iloc[:12], X.iloc[20:35]
    rng = np.random.default_rng(3)
    mask = rng.random((12, 4)) < 0.4
    mask[0] = False  # a row with nothing missing
    mask[1] = True  # a row with everything missing
    got = a.predict_masked(rows, mask, bg)
    want = _loop_masked(lambda z: a.predict(pd.DataFrame(z, columns=X.columns)), rows, mask, bg)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # everything missing is the mean prediction over the background
    np.testing.assert_allclose(got[1], a.predict(bg).mean(axis=0), rtol=1e-12)
    # nothing missing is the plain prediction
    np.testing.assert_allclose(got[0], a.predict(rows.iloc[[0]])[0], rtol=0, atol=0)
    # a shared mask by name equals the same boolean mask per row
    shared = a.predict_masked(rows, ["b", "d"], bg)
    per_row = a.predict_masked(rows, np.tile([False, True, False, True], (12, 1)), bg)
    np.testing.assert_array_equal(shared, per_row)


def test_predict_masked_with_categorical_pipeline():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"num": rng.normal(size=60), "cat": rng.choice(["x", "y", "z"], 60)})
    y = X.num + X.cat.map({"x": 0.0, "y": 1.0, "z": 3.0})
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["cat"]), remainder="passthrough"),
                         LinearRegression()).fit(X, y)
    a = ModelAdapter(pipe)
    got = a.predict_masked(X.iloc[:5], ["cat"], X.iloc[10:20])
    want = [np.mean([pipe.predict(X.iloc[[r]].assign(cat=X.cat.iloc[i]))[0] for i in range(10, 20)])
            for r in range(5)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"output": "probs"}, ExplainerError, "'output' parameter of ModelAdapter must be one of"),
        ({"class_index": 5}, ExplainerError, r"'class_index' parameter of ModelAdapter must be an int in \[0, 2\]"),
        ({"chunk_rows": 0}, ExplainerError, "'chunk_rows' parameter"),
        ({"feature_names": ["a"]}, InvalidFeatureError, "1 feature names were given but the model was fitted on 4"),
    ],
)
def test_adapter_bad_params(models, kwargs, err, match):
    gb, _ = models["multi"]
    with pytest.raises(err, match=match):
        ModelAdapter(gb, **kwargs)


def test_adapter_bad_models_and_masks(models):
    with pytest.raises(InvalidModelError, match="not fitted yet"):
        ModelAdapter(LinearRegression())
    with pytest.raises(InvalidModelError, match="no 'predict' method"):
        ModelAdapter(object())
    forest, X = models["forest"]
    with pytest.raises(ExplainerError, match="'auto' or 'raw' for a regression model"):
        ModelAdapter(forest, output="proba")
    a = ModelAdapter(forest)
    with pytest.raises(InvalidFeatureError, match="Unknown feature 'zz'"):
        a.predict_masked(X.iloc[:2], ["zz"], X)
    with pytest.raises(InvalidFeatureError, match="must have shape"):
        a.predict_masked(X.iloc[:2], np.zeros(3, bool), X)
    with pytest.raises(ExplainerError, match="lacks 1 of the model's columns: d"):
        a.predict(X.drop(columns="d"))
    with pytest.raises(ExplainerError, match="X has 3 columns but the model takes 4"):
        a.predict(X.to_numpy()[:, :3])
