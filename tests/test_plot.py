"""``dashboard.figures.plot``: any result object -> the figure its page draws."""
import json

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

from dashboard import figures
from dashboard.figures import plot
from explainers.ale import ale
from explainers.importance import compare_importances, mdi, permutation_importance
from explainers.pdp import partial_dependence
from explainers.shap import explain


def same(a, b) -> bool:
    return json.loads(a.to_json()) == json.loads(b.to_json())


@pytest.fixture(scope="module")
def reg(reg_data):
    X, y = reg_data
    return RandomForestRegressor(20, max_depth=4, random_state=0).fit(X, y), X, y


@pytest.fixture(scope="module")
def clf(clf_data):
    X, _, y3 = clf_data
    return RandomForestClassifier(20, max_depth=4, random_state=0).fit(X, y3), X, y3


def test_partial_dependence_1d_and_2d(reg, clf):
    model, X, _ = reg
    r1 = partial_dependence(model, X, ["a"], grid_resolution=10)
    assert same(plot(r1), figures.pdp_figure(r1))
    assert same(plot(r1, centered=True, max_ice_lines=5), figures.pdp_figure(r1, centered=True, max_ice_lines=5))
    r2 = partial_dependence(model, X, ["a", "b"], grid_resolution=6, kind="average")
    assert same(plot(r2), figures.pdp2d_figure(r2))
    model, X, _ = clf
    r3 = partial_dependence(model, X, ["a"], grid_resolution=8)
    assert same(plot(r3, class_index=2), figures.pdp_figure(r3, class_index=2))


def test_ale_1d_and_2d(reg):
    model, X, _ = reg
    r1 = ale(model, X, "a", n_bins=8)
    assert same(plot(r1), figures.ale_figure(r1))
    r2 = ale(model, X, ["a", "b"], n_bins=5)
    assert same(plot(r2), figures.ale2d_figure(r2))


def test_shap_one_row_is_a_waterfall_many_rows_a_beeswarm(reg, clf):
    model, X, _ = reg
    many = explain(model, X.iloc[:40])
    assert same(plot(many), figures.beeswarm_figure(many))
    one = explain(model, X.iloc[[3]])
    assert same(plot(one), figures.waterfall_figure(one, 0))
    assert same(plot(many, kind="waterfall", row=5, max_display=3), figures.waterfall_figure(many, 5, max_display=3))
    assert same(plot(many, kind="force", row=1), figures.force_figure(many, 1))
    assert same(plot(many, kind="mean_abs"), figures.mean_abs_figure(many))
    assert same(plot(many, kind="dependence", feature="a", color_by="b"),
                figures.dependence_figure(many, "a", "b"))
    model, X, _ = clf
    multi = explain(model, X.iloc[:30])
    assert same(plot(multi, class_index=1), figures.beeswarm_figure(multi, class_index=1))


def test_importance_results_and_comparison(reg):
    model, X, y = reg
    imp = permutation_importance(model, X, y, n_repeats=2, random_state=0)
    imp_mdi = mdi(model)
    assert same(plot(imp), figures.importance_bars_figure(imp))
    assert same(plot([imp, imp_mdi]), figures.importance_bars_figure([imp, imp_mdi]))
    comp = compare_importances([imp, imp_mdi])
    assert same(plot(comp), figures.importance_bars_figure(comp))
    assert same(plot(comp, sort_by=comp.methods[1]), figures.importance_bars_figure(comp, sort_by=comp.methods[1]))
    assert same(plot(comp, kind="agreement"), figures.agreement_heatmap_figure(comp))
    assert same(plot(comp, kind="agreement", rank="kendall"), figures.agreement_heatmap_figure(comp, kind="kendall"))


def test_what_plot_refuses(reg):
    model, X, _ = reg
    with pytest.raises(TypeError, match="plot\\(\\) draws PartialDependenceResult.*got int"):
        plot(42)
    with pytest.raises(TypeError, match="got DataFrame"):
        plot(pd.DataFrame({"a": [1]}))
    res = explain(model, X.iloc[:5])
    with pytest.raises(ValueError, match="kind 'beeswarm' / 'waterfall'.*got 'heatmap'"):
        plot(res, kind="heatmap")
    with pytest.raises(ValueError, match="needs feature=NAME"):
        plot(res, kind="dependence")
    assert np.isfinite(res.values).all()
