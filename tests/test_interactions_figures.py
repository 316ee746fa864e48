"""Interaction figures checked on their data: the heatmap holds the result's mean |interaction|
matrix, the dependence scatter the data and the interaction values, the table both measures."""
import io

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor

from dashboard.figures.interactions import (
    interaction_dependence_figure,
    interaction_heatmap_figure,
    interaction_pairs_frame,
    interaction_strength,
    output_label,
    pair_from_selection,
    top_features,
)
from dashboard.safe_text import csv_text, plot
from explainers.errors import InvalidFeatureError
from explainers.interactions import h_statistic
from explainers.shap import ExactShap, TreeShap


@pytest.fixture(scope="module")
def reg():
    """y = 0.5 a - 0.3 b + 2 c d: c and d interact, nothing else does (the trees add a little noise)."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(400, 5)), columns=["a", "b", "c", "d", "e"])
    y = 0.5 * X.a - 0.3 * X.b + 2 * X.c * X.d + rng.normal(0, 0.05, 400)
    model = GradientBoostingRegressor(n_estimators=60, max_depth=3, random_state=0).fit(X, y)
    return model, X, TreeShap(model).interactions(X.iloc[:120])


@pytest.fixture(scope="module")
def multi():
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(240, 4)), columns=["p", "q", "r", "s"])
    y = np.digitize(X.p * X.q + X.r, [-0.5, 0.5])
    model = GradientBoostingClassifier(n_estimators=30, max_depth=2, random_state=0).fit(X, y)
    return model, X, TreeShap(model).interactions(X.iloc[:80])


def _off_diagonal(mat):
    out = np.array(mat, dtype=float)
    np.fill_diagonal(out, np.nan)
    return out


# ----------------------------------------------------------------- heatmap
def test_heatmap_equals_the_mean_abs_interaction_matrix(reg):
    _, _, res = reg
    fig = interaction_heatmap_figure(res)
    heat = fig.data[0]
    feats = list(heat.x)
    assert list(heat.y) == feats and sorted(feats) == sorted(res.feature_names)
    pos = [res.feature_names.index(f) for f in feats]
    # the pair's whole interaction, |phi_ij + phi_ji| averaged over rows: twice mean_abs() off the diagonal
    expected = _off_diagonal(2 * res.mean_abs()[np.ix_(pos, pos)])
    z = np.array(heat.z, dtype=float)
    np.testing.assert_array_equal(np.isnan(z), np.isnan(expected))
    off = ~np.eye(len(feats), dtype=bool)
    np.testing.assert_allclose(z[off], expected[off], rtol=1e-13, atol=0)
    v = res.values
    by_rows = np.abs(v + v.transpose(0, 2, 1)).mean(axis=0)[np.ix_(pos, pos)]
    np.testing.assert_allclose(z[off], by_rows[off], rtol=1e-13, atol=0)
    # c x d is the one interaction of y, and the strongest features come first
    assert set(feats[:2]) == {"c", "d"}
    assert np.nanargmax(z) in (1, len(feats))  # cell (0, 1) or (1, 0)
    # and it matches to_frame's symmetric pair totals
    frame = res.to_frame()
    cd = frame[(frame.feature == "c") & (frame.other == "d")].value.abs().mean()
    assert z[0, 1] == pytest.approx(cd, rel=1e-12)


def test_heatmap_follows_given_features_and_cells_are_clickable(reg):
    _, _, res = reg
    feats = ["e", "c", "a", "d"]
    fig = interaction_heatmap_figure(res, features=feats, highlight=("c", "d"))
    z = np.array(fig.data[0].z, dtype=float)
    pos = [res.feature_names.index(f) for f in feats]
    expected = _off_diagonal(2 * res.mean_abs()[np.ix_(pos, pos)])
    off = ~np.eye(4, dtype=bool)
    np.testing.assert_allclose(z[off], expected[off], rtol=1e-13, atol=0)
    cells = fig.data[1]
    assert len(cells.x) == 4 * 3  # every off-diagonal cell
    for x, y, cd in zip(cells.x, cells.y, cells.customdata):
        assert (y, x) == (feats[int(cd[0])], feats[int(cd[1])])
        assert cd[2] == pytest.approx(z[int(cd[0]), int(cd[1])])
    # a click on cell (row "c", column "d") picks that pair; the diagonal and junk pick nothing
    point = {"x": "d", "y": "c", "customdata": [1, 3, z[1, 3]], "point_index": 5}
    assert pair_from_selection([point], feats) == ("c", "d")
    assert pair_from_selection([{"customdata": [2, 2]}], feats) is None
    assert pair_from_selection([{"x": "a"}], feats) is None and pair_from_selection(None, feats) is None
    # both cells of the highlighted pair are outlined
    rects = [(s.x0 + 0.5, s.y0 + 0.5) for s in fig.layout.shapes]
    assert sorted(rects) == sorted([(3.0, 1.0), (1.0, 3.0)])
    with pytest.raises(InvalidFeatureError):
        interaction_heatmap_figure(res, features=["a", "zz"])


@pytest.mark.parametrize("which", ["reg", "multi"])
def test_means_added_block_by_block_draw_the_heatmap_of_every_row(which, request):
    """A MeanInteraction added from blocks of rows (the every-row view of a large table) draws the
    heatmap the rows' own result draws: the same matrix, cell texts, scale and title, for each class."""
    from explainers.shap import MeanInteraction

    model, X, _ = request.getfixturevalue(which)
    full = TreeShap(model).interactions(X)
    sums, like = None, None
    for start in range(0, len(X), 70):  # blocks that do not divide the rows
        part = TreeShap(model).interactions(X.iloc[start:start + 70])
        got = part.pair_abs_sums()
        sums = got if sums is None else tuple(a + b for a, b in zip(sums, got))
        like = like or part
    mean = MeanInteraction.from_sums(*sums, len(X), like)
    assert mean.n_rows == len(X) and mean.n_outputs == full.n_outputs
    for ci in ([None] if full.n_outputs == 1 else [None, *range(full.n_outputs)]):
        np.testing.assert_allclose(interaction_strength(mean, class_index=ci).to_numpy(),
                                   interaction_strength(full, class_index=ci).to_numpy(), rtol=1e-12, atol=1e-15)
        a = interaction_heatmap_figure(mean, class_index=ci, highlight=tuple(X.columns[:2]))
        b = interaction_heatmap_figure(full, class_index=ci, highlight=tuple(X.columns[:2]))
        assert list(a.data[0].x) == list(b.data[0].x)
        np.testing.assert_allclose(np.array(a.data[0].z, float), np.array(b.data[0].z, float), rtol=1e-12)
        assert a.data[0].text == b.data[0].text and a.layout.title.text == b.layout.title.text
        assert a.data[0].zmax == pytest.approx(b.data[0].zmax, rel=1e-12)
        assert output_label(mean, ci) == output_label(full, ci)
    with pytest.raises(Exception, match="class_index"):
        mean.select(full.n_outputs)


def test_heatmap_of_h_equals_the_h_matrix(reg):
    model, X, _ = reg
    h = h_statistic(model, X.iloc[:150], features=["a", "b", "c", "d"], sample=None)
    fig = interaction_heatmap_figure(h)
    feats = list(fig.data[0].x)
    z = np.array(fig.data[0].z, dtype=float)
    expected = _off_diagonal(h.matrix().loc[feats, feats].to_numpy(dtype=float))
    off = ~np.eye(len(feats), dtype=bool)
    np.testing.assert_allclose(z[off], expected[off], rtol=0, atol=0)
    assert set(feats[:2]) == {"c", "d"}
    assert "H statistic" in fig.layout.title.text


def test_multiclass_picks_the_class(multi):
    _, _, res = multi
    for ci in range(3):
        z = np.array(interaction_heatmap_figure(res, features=["p", "q", "r", "s"], class_index=ci).data[0].z, dtype=float)
        expected = _off_diagonal(2 * res.mean_abs()[..., ci])
        off = ~np.eye(4, dtype=bool)
        np.testing.assert_allclose(z[off], expected[off], rtol=1e-13, atol=0)
        assert output_label(res, ci) == f"margin({res.output_names[ci]})"  # softmax scores, not log-odds
    strength = interaction_strength(res, class_index=2)
    np.testing.assert_allclose(strength.to_numpy()[~np.eye(4, dtype=bool)],
                               (2 * res.mean_abs()[..., 2])[~np.eye(4, dtype=bool)], rtol=1e-13)


def test_additive_model_reads_zero(reg):
    from sklearn.linear_model import LinearRegression

    model, X, _ = reg
    lin = LinearRegression().fit(X, 2 * X.a - X.b + X.c)
    res = ExactShap(lin, X.iloc[:20]).interactions(X.iloc[:15])
    fig = interaction_heatmap_figure(res)
    z = np.array(fig.data[0].z, dtype=float)
    assert np.nanmax(z) < 1e-12
    assert fig.data[0].zmax > 1e-3  # rounding noise is not stretched over the whole colour scale
    assert {t for row in fig.data[0].text for t in row} <= {"", "0"}


# -------------------------------------------------------------- dependence
def test_dependence_scatter_holds_the_data_and_the_interaction_values(reg):
    _, _, res = reg
    fig = interaction_dependence_figure(res, "c", "d")
    tr = fig.data[0]
    i, j = res.feature_names.index("c"), res.feature_names.index("d")
    np.testing.assert_array_equal(np.asarray(tr.x, dtype=float), res.data["c"].to_numpy())
    np.testing.assert_array_equal(np.asarray(tr.y, dtype=float), res.values[:, i, j] + res.values[:, j, i])
    np.testing.assert_array_equal(np.asarray(tr.marker.color, dtype=float), res.data["d"].to_numpy())
    np.testing.assert_array_equal(np.asarray(tr.y, dtype=float), 2 * res.values[:, i, j])
    # c * d: the interaction's sign follows the partner's sign along c
    y = np.asarray(tr.y, dtype=float)
    big = np.abs(res.data["c"].to_numpy()) > 1
    agree = np.sign(y[big]) == np.sign(res.data["c"].to_numpy()[big] * res.data["d"].to_numpy()[big])
    assert agree.mean() > 0.8
    assert "c" in fig.layout.title.text and "d" in fig.layout.title.text
    with pytest.raises(InvalidFeatureError):
        interaction_dependence_figure(res, "c", "c")
    with pytest.raises(InvalidFeatureError):
        interaction_dependence_figure(res, "c", "nope")


def test_dependence_with_missing_and_text_partners(multi):
    _, _, res = multi
    from dataclasses import replace

    data = res.data.copy()
    data.loc[data.index[:5], "q"] = np.nan
    fig = interaction_dependence_figure(replace(res, data=data), "p", "q", class_index=1)
    i, j = 0, 1
    y = res.values[:, i, j, 1] + res.values[:, j, i, 1]
    np.testing.assert_array_equal(np.asarray(fig.data[0].y, dtype=float), y[5:])
    np.testing.assert_array_equal(np.asarray(fig.data[1].y, dtype=float), y[:5])
    text = data.copy()
    text["q"] = np.where(res.data["q"] > 0, "<b>up</b>", "down")
    fig = interaction_dependence_figure(replace(res, data=text), "p", "q", class_index=1)
    names = {t.name for t in fig.data if t.type == "scatter"}
    assert names == {plot("<b>up</b>"), "down"}
    assert sum(len(t.x) for t in fig.data if t.type == "scatter") == res.n_rows


# ------------------------------------------------------------------ table
def test_pairs_table_holds_both_measures_and_downloads_safely(reg):
    model, X, res = reg
    h = h_statistic(model, X.iloc[:150], features=list(X.columns), sample=None)
    feats = top_features(interaction_strength(res), 5)
    table = interaction_pairs_frame(res, h, feats)
    assert len(table) == 10 and list(table.columns) == ["pair", "feature", "other", "mean_abs_shap_interaction",
                                                        "h_statistic"]
    assert set(table.iloc[0][["feature", "other"]]) == {"c", "d"}
    assert table.mean_abs_shap_interaction.is_monotonic_decreasing
    strength, hm = interaction_strength(res), h.matrix()
    for _, row in table.iterrows():
        assert row.mean_abs_shap_interaction == strength.loc[row.feature, row.other]
        assert row.h_statistic == hm.loc[row.feature, row.other]
    by_h = interaction_pairs_frame(res, h, feats, sort_by="H statistic")
    assert by_h.h_statistic.is_monotonic_decreasing
    only_h = interaction_pairs_frame(None, h, feats)
    assert only_h.mean_abs_shap_interaction.isna().all() and only_h.h_statistic.is_monotonic_decreasing
    back = pd.read_csv(io.StringIO(csv_text(table, index=False)))
    np.testing.assert_allclose(back.mean_abs_shap_interaction, table.mean_abs_shap_interaction, rtol=1e-12)


def test_user_text_is_escaped_in_figures_and_csv():
    rng = np.random.default_rng(3)
    names = ["=HYPERLINK(1)", "<b>bold</b>", "%{x}", "ok"]
    X = pd.DataFrame(rng.normal(size=(120, 4)), columns=names)
    model = GradientBoostingRegressor(n_estimators=20, max_depth=2, random_state=0).fit(X, X.iloc[:, 0] * X.iloc[:, 1])
    res = TreeShap(model).interactions(X.iloc[:30])
    fig = interaction_heatmap_figure(res)
    assert set(fig.data[0].x) == {plot(n) for n in names}
    assert "<b>" not in str(fig.data[0].x) and "%{x}" not in str(fig.data[0].x)
    dep = interaction_dependence_figure(res, names[1], names[2])
    assert "<b>bold</b>" not in dep.layout.title.text and plot("<b>bold</b>") in dep.layout.title.text
    table = interaction_pairs_frame(res, None, names)
    text = csv_text(table, index=False)
    assert "\n'=HYPERLINK(1)," in text or ",'=HYPERLINK(1)," in text
