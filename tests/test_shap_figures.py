"""SHAP figures checked on their data: bars equal attributions, waterfall ends at f(x)."""
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression

from dashboard.figures import (
    MISSING,
    NEGATIVE,
    POSITIVE,
    beeswarm_figure,
    dependence_figure,
    force_figure,
    mean_abs_figure,
    waterfall_figure,
)
from explainers.errors import InvalidFeatureError, InvalidParameterError
from explainers.shap import ExactShap, LinearShap

P = 6


@pytest.fixture(scope="module")
def reg_result():
    rng = np.random.default_rng(8)
    X = pd.DataFrame(rng.normal(size=(40, P)), columns=[f"f{i}" for i in range(P)])
    model = LinearRegression().fit(X, X.to_numpy() @ (np.arange(1, P + 1) * np.array([1, -1, 1, -1, 1, -1])))
    rows = X.iloc[:8].copy()
    rows.iloc[0, 2] = np.nan  # masked via NaN
    missing = np.zeros((8, P), dtype=bool)
    missing[0, 4] = True
    return LinearShap(model, X.iloc[20:]).explain(rows, missing)


@pytest.fixture(scope="module")
def clf_result():
    rng = np.random.default_rng(9)
    X = pd.DataFrame(rng.normal(size=(60, 3)), columns=["x", "y", "z"])
    y = np.digitize(X.x + X.y, [-0.6, 0.6])
    model = LogisticRegression().fit(X, y)
    return ExactShap(model, X.iloc[:10]).explain(X.iloc[30:42])


# ------------------------------------------------------------------ waterfall
def test_waterfall_bars_are_the_attributions(reg_result):
    res = reg_result
    fig = waterfall_figure(res, 1, max_display=P)
    bar = fig.data[0]
    idx = np.asarray(bar.customdata)
    x, base = np.asarray(bar.x, dtype=float), np.asarray(bar.base, dtype=float)
    np.testing.assert_allclose(x, res.values[1, idx])
    # the bars chain: each starts where the last ended, from base to prediction
    np.testing.assert_allclose(base[0], res.base_values[1])
    np.testing.assert_allclose(base[1:], base[:-1] + x[:-1])
    np.testing.assert_allclose(base[-1] + x[-1], res.predictions[1], rtol=1e-12)
    # largest |phi| at the top (last), and colours by sign
    assert abs(bar.x[-1]) == np.abs(res.values[1]).max()
    assert list(bar.marker.color) == [POSITIVE if v >= 0 else NEGATIVE for v in bar.x]
    assert "f(x) = " in " ".join(a.text for a in fig.layout.annotations)


def test_waterfall_masked_bars_are_zero_and_grey(reg_result):
    res = reg_result
    fig = waterfall_figure(res, 0, max_display=3)
    bar = fig.data[0]
    labels = list(fig.layout.yaxis.ticktext)
    grey = [i for i, c in enumerate(bar.marker.color) if c == MISSING]
    assert sorted(labels[i] for i in grey) == ["f2 = NA (missing)", "f4 = NA (missing)"]
    assert all(bar.x[i] == 0.0 for i in grey)
    # top 2 present features + one "2 other features" bar holding the rest
    assert "2 other features" in labels
    other = labels.index("2 other features")
    present = np.flatnonzero(~res.missing[0])
    top = present[np.argsort(-np.abs(res.values[0, present]))]
    np.testing.assert_allclose(bar.x[other], res.values[0, top[2:]].sum())
    np.testing.assert_allclose(bar.base[-1] + bar.x[-1], res.predictions[0], rtol=1e-12)
    assert labels[-1].startswith(f"f{top[0]} = ")  # feature values in the labels


def test_waterfall_multiclass_and_bad_row(clf_result):
    fig = waterfall_figure(clf_result, 2, class_index=2)
    bar = fig.data[0]
    np.testing.assert_allclose(bar.base[-1] + bar.x[-1], clf_result.predictions[2, 2], rtol=1e-12)
    with pytest.raises(InvalidParameterError, match=r"'row' parameter of waterfall_figure must be an int in \[0, 11\]"):
        waterfall_figure(clf_result, 12)
    with pytest.raises(InvalidParameterError, match="'class_index' parameter of waterfall_figure"):
        waterfall_figure(clf_result, 0, class_index=3)
    with pytest.raises(InvalidParameterError, match="'max_display'"):
        waterfall_figure(clf_result, 0, max_display=1)


# ---------------------------------------------------------------------- force
def test_force_segments_meet_at_prediction(reg_result):
    res = reg_result
    fig = force_figure(res, 0)
    up, down = fig.data
    phi = res.values[0]
    np.testing.assert_allclose(sorted(up.customdata), sorted(phi[phi > 0]))
    np.testing.assert_allclose(sorted(down.customdata), sorted(phi[phi < 0]))
    np.testing.assert_allclose(np.asarray(up.x), np.abs(up.customdata))
    pred, base = res.predictions[0], res.base_values[0]
    # raising segments end at f(x); lowering ones start there
    up_base, down_base = np.asarray(up.base, dtype=float), np.asarray(down.base, dtype=float)
    np.testing.assert_allclose(max(up_base + np.asarray(up.x)), pred)
    np.testing.assert_allclose(min(down_base), pred)
    # the far ends differ by exactly pred - base
    left = min(up_base)
    right = max(down_base + np.asarray(down.x))
    np.testing.assert_allclose((pred - left) - (right - pred), pred - base, atol=1e-12)
    assert "missing: f2, f4" in fig.layout.title.text


# ------------------------------------------------------------------- beeswarm
def test_beeswarm_points_are_the_values(reg_result):
    res = reg_result
    fig = beeswarm_figure(res, max_display=4)
    trace = fig.data[0]
    cd = np.asarray(trace.customdata, dtype=int)
    np.testing.assert_allclose(np.asarray(trace.x), res.values[cd[:, 0], cd[:, 1]])
    top = np.argsort(-np.abs(res.values).mean(0))[:4]
    assert set(cd[:, 1]) == set(top)
    # masked cells are left out: one point per present cell of the shown features
    assert len(trace.x) + len(fig.data[1].x) == int((~res.missing[:, top]).sum())
    assert list(fig.layout.yaxis.ticktext) == [res.feature_names[j] for j in top][::-1]
    assert trace.type == "scattergl"


# -------------------------------------------------------------- mean |phi|
def test_mean_abs_bars(reg_result, clf_result):
    fig = mean_abs_figure(reg_result)
    bar = fig.data[0]
    imp = reg_result.mean_abs()
    np.testing.assert_allclose(np.asarray(bar.x), [imp[reg_result.feature_names.index(n)] for n in bar.y])
    assert list(bar.x) == sorted(bar.x)  # largest at the top
    stacked = mean_abs_figure(clf_result)
    assert len(stacked.data) == 3 and stacked.layout.barmode == "stack"
    for k, tr in enumerate(stacked.data):
        np.testing.assert_allclose(
            np.asarray(tr.x), [clf_result.mean_abs()[clf_result.feature_names.index(n), k] for n in tr.y]
        )


# ---------------------------------------------------------------- dependence
def test_dependence_points(reg_result):
    res = reg_result
    fig = dependence_figure(res, "f2", color_by="f0")
    tr = fig.data[0]
    rows = np.asarray(tr.customdata, dtype=int)
    assert 0 not in rows  # row 0 has f2 missing
    np.testing.assert_allclose(np.asarray(tr.y), res.values[rows, 2])
    np.testing.assert_allclose(np.asarray(tr.x), res.data.iloc[rows, 2])
    assert fig.layout.yaxis.title.text == "SHAP value of f2"
    with pytest.raises(InvalidFeatureError, match="Unknown feature 'nope'"):
        dependence_figure(res, "nope")


def test_dependence_on_a_category_follows_the_models_order_else_the_alphabet():
    """Categories on the x axis in the column's own (the model's) order for a categorical column,
    alphabetical for text; never in the order the rows happen to come."""
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    plan = rng.choice(["silver", "gold", "bronze"], 60)
    plan[:3] = ["silver", "gold", "bronze"]  # the rows' order of first appearance: not sorted
    X = pd.DataFrame({"plan": plan, "x": rng.normal(size=60)})
    y = (plan == "gold") * 2.0 + X.x
    model = make_pipeline(make_column_transformer((OneHotEncoder(), ["plan"]), remainder="passthrough"),
                          LinearRegression()).fit(X, y)
    res = ExactShap(model, X.iloc[:20]).explain(X.iloc[:30])
    assert list(pd.unique(res.data["plan"])) == ["silver", "gold", "bronze"]
    fig = dependence_figure(res, "plan")
    assert list(fig.layout.xaxis.categoryarray) == ["bronze", "gold", "silver"]
    ordered = res.data.assign(plan=pd.Categorical(res.data["plan"], categories=["silver", "gold", "bronze"]))
    from dataclasses import replace

    fig = dependence_figure(replace(res, data=ordered), "plan")
    assert list(fig.layout.xaxis.categoryarray) == ["silver", "gold", "bronze"]
