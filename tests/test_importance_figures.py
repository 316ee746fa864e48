"""Figures of the importance page, tested on their data (no browser)."""
import json

import numpy as np
import pytest

from dashboard.figures import (
    PALETTE,
    agreement_heatmap_figure,
    importance_bars_figure,
)
from explainers.importance import ImportanceResult, compare_importances

NAMES = ["a", "b", "c", "d"]


def _res(imp, method, std=None, params=None):
    imp = np.asarray(imp, float)
    raw = np.c_[imp - (0 if std is None else std), imp + (0 if std is None else std)]
    return ImportanceResult(NAMES, raw.mean(1), raw.std(1), raw, method, params or {}, f"{method} desc")


@pytest.fixture(scope="module")
def comp():
    return compare_importances([
        _res([0.5, 0.3, 0.15, 0.05], "mdi", std=np.full(4, 0.01)),
        _res([0.02, 0.30, 0.10, 0.08], "permutation", std=np.full(4, 0.02),
             params={"scoring_name": "r2", "n_repeats": 2}),
        _res([0.4, 0.1, 0.3, 0.2], "shap"),
    ])


def test_bars_one_trace_per_method_with_shares_and_error_bars(comp):
    fig = importance_bars_figure(comp)
    assert [t.name for t in fig.data] == comp.methods == ["MDI", "Holdout permutation (R²)", "Mean |SHAP|"]
    order = list(comp.shares.mean(axis=1).sort_values(ascending=False).index)
    for t in fig.data:
        assert t.type == "bar" and t.orientation == "h"
        assert list(t.y) == order
        np.testing.assert_allclose(t.x, comp.shares.loc[order, t.name])
        # the standard error of each bar: a permutation's std / sqrt(repeats) (2 here: raw has 2 columns)
        se = comp.stds.loc[order, t.name] / (np.sqrt(2) if "permutation" in t.name else 1.0)
        np.testing.assert_allclose(t.error_x.array, se)
        np.testing.assert_allclose(t.error_x.arrayminus, np.minimum(se, comp.shares.loc[order, t.name]))
    assert [t.marker.color for t in fig.data] == PALETTE[:3]
    assert fig.layout.xaxis.title.text == "Share of total importance"
    assert fig.layout.yaxis.title.text == "Feature"
    assert fig.layout.barmode == "group"
    assert fig.layout.font.size >= 12
    json.loads(fig.to_json())  # serialisable for st.plotly_chart


def test_bars_sort_by_method_top_k_and_raw_units(comp):
    fig = importance_bars_figure(comp, sort_by="Holdout permutation (R²)", top_k=2, normalised=False)
    assert list(fig.data[0].y) == ["b", "c"]
    np.testing.assert_allclose(fig.data[0].x, [0.3, 0.15])  # mdi in its own units
    np.testing.assert_allclose(fig.data[1].error_x.array, [0.02 / np.sqrt(2)] * 2)
    assert fig.data[1].error_x.arrayminus is None  # own units: an importance may be negative
    assert "own units" in fig.layout.xaxis.title.text
    with pytest.raises(ValueError, match="sort_by='nope' is not one of the methods"):
        importance_bars_figure(comp, sort_by="nope")
    with pytest.raises(ValueError, match="top_k"):
        importance_bars_figure(comp, top_k=0)


def test_bars_from_results_list_and_single_result():
    r1, r2 = _res([3.0, 1.0, 0.0, 0.0], "mdi"), _res([1.0, 3.0, 0.0, -0.5], "permutation")
    fig = importance_bars_figure([r1, r2])
    assert len(fig.data) == 2 and list(fig.data[0].y)[:2] in (["a", "b"], ["b", "a"])
    one = importance_bars_figure(r2)
    assert len(one.data) == 1 and list(one.data[0].y) == ["b", "a", "c", "d"]
    np.testing.assert_allclose(one.data[0].x, [0.75, 0.25, 0.0, 0.0])  # negative clipped to 0
    with pytest.raises(ValueError, match="ImportanceComparison or a list"):
        importance_bars_figure([])


@pytest.mark.parametrize("kind, symbol", [("spearman", "Spearman"), ("kendall", "Kendall")])
def test_agreement_heatmap(comp, kind, symbol):
    fig = agreement_heatmap_figure(comp, kind=kind)
    assert len(fig.data) == 1 and fig.data[0].type == "heatmap"
    mat = getattr(comp, kind)
    np.testing.assert_allclose(np.array(fig.data[0].z, float), mat.to_numpy())
    assert list(fig.data[0].x) == comp.methods and list(fig.data[0].y) == comp.methods
    assert fig.data[0].zmin == -1 and fig.data[0].zmax == 1
    assert fig.data[0].text[0][0] == "1.00"
    assert symbol in fig.layout.title.text
    json.loads(fig.to_json())


def test_agreement_heatmap_nan_and_bad_kind():
    flat = _res([1.0, 1.0, 1.0, 1.0], "shap")
    comp = compare_importances([_res([1.0, 2, 3, 4], "mdi"), flat])
    fig = agreement_heatmap_figure(comp)
    assert fig.data[0].text[0][1] == "n/a"
    with pytest.raises(ValueError, match="kind must be"):
        agreement_heatmap_figure(comp, kind="pearson")
