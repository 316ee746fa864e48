"""PDP / ICE / ALE figures, checked on their data (not pixels)."""
import io

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.linear_model import LinearRegression

from dashboard.figures import ale_figure, pdp2d_figure, pdp_figure, pdp_to_csv
from explainers.ale import ale
from explainers.errors import InvalidParameterError
from explainers.pdp import partial_dependence


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 120
    x0 = rng.uniform(0, 1, n)
    X = pd.DataFrame({
        "x0": x0,
        "x1": x0 + rng.normal(0, 0.05, n),  # correlated: empty corners in 2-D
        "x2": rng.normal(size=n),
        "grp": rng.integers(0, 3, n).astype(float),  # few values: categorical
    })
    y = 2 * X.x0 + X.x2 * X.grp
    reg = RandomForestRegressor(5, max_depth=4, random_state=0).fit(X, y)
    clf = RandomForestClassifier(5, max_depth=4, random_state=0).fit(X, np.digitize(y, [0.5, 1.5]))
    return X, reg, clf


def test_pdp_figure_numeric(data):
    X, reg, _ = data
    r = partial_dependence(reg, X, ["x0"], grid_resolution=10, sample=60)
    fig = pdp_figure(r, max_ice_lines=25)
    assert isinstance(fig, go.Figure)
    ice, pd_line, rug = fig.data
    assert ice.legendgroup == "ice" and ice.mode == "lines" and ice.opacity < 1
    # 25 curves of 10 points joined by gaps
    assert len(ice.x) == 25 * 11 and np.isnan(np.asarray(ice.y, dtype=float)).sum() == 25
    assert pd_line.name == "partial dependence" and pd_line.line.width >= 3
    np.testing.assert_allclose(pd_line.y, r.average)
    np.testing.assert_array_equal(pd_line.customdata, r.counts)
    assert len(rug.x) == 9 and rug.yaxis == "y2"
    assert fig.layout.xaxis.title.text == "x0"
    assert "partial dependence" in fig.layout.yaxis.title.text
    assert "x0" in pd_line.hovertemplate
    # no ICE, no rug
    assert len(pdp_figure(r, show_ice=False, show_rug=False).data) == 1


def test_pdp_figure_centered_and_color_by(data):
    X, reg, _ = data
    r = partial_dependence(reg, X, ["x0"], grid_resolution=8, sample=30)
    fig = pdp_figure(r, centered=True, color_by=(X["x2"].to_numpy(), "x2"), max_ice_lines=30)
    ice = [t for t in fig.data if t.legendgroup == "ice"]
    assert len(ice) == 30 and sum(bool(t.showlegend) for t in ice) == 1
    assert all(t.y[0] == 0 for t in ice)
    pd_line = next(t for t in fig.data if t.name == "partial dependence")
    np.testing.assert_allclose(pd_line.y, r.average - r.average[0], atol=1e-12)
    assert "Centred" in fig.layout.yaxis.title.text
    assert any(t.marker.showscale for t in fig.data if t.marker is not None)
    # categorical colouring: one trace per category
    figc = pdp_figure(r, color_by=(X["grp"].map({0.0: "a", 1.0: "b", 2.0: "c"}), "grp"))
    names = sorted(t.name for t in figc.data if t.legendgroup == "ice")
    assert names == ["ICE: grp = a", "ICE: grp = b", "ICE: grp = c"]
    with pytest.raises(InvalidParameterError, match="color_by has 5 values"):
        pdp_figure(r, color_by=(np.arange(5), "bad"))


def test_pdp_figure_categorical_levels(data):
    X, reg, _ = data
    r = partial_dependence(reg, X, ["grp"])
    assert r.feature_kinds == ("categorical",)
    fig = pdp_figure(r, max_ice_lines=10)
    kinds = [type(t).__name__ for t in fig.data]
    assert kinds == ["Scatter", "Scatter"]  # ICE points, the PD's level marks; no rug for categories
    assert fig.data[0].mode == "markers" and len(fig.data[0].x) == 10 * 3
    pd_marks = fig.data[1]
    assert pd_marks.name == "partial dependence" and pd_marks.marker.symbol == "line-ew"
    assert list(pd_marks.x) == [str(v) for v in r.grid[0]]
    np.testing.assert_allclose(pd_marks.y, r.average)
    assert fig.layout.yaxis.range is None  # the axis fits the levels: not bars from 0


def test_pdp_figure_classes(data):
    X, _, clf = data
    r = partial_dependence(clf, X, ["x0"], grid_resolution=6, kind="average")
    fig = pdp_figure(r)
    assert [t.name for t in fig.data[:3]] == ["0", "1", "2"]  # one PD line per class
    one = pdp_figure(r, class_index=2, show_rug=False)
    np.testing.assert_allclose(one.data[0].y, r.average[:, 2])
    with pytest.raises(InvalidParameterError, match="class_index"):
        pdp_figure(r, class_index=5)
    r2 = partial_dependence(clf, X, ["x0", "x1"], grid_resolution=4)
    with pytest.raises(InvalidParameterError, match="pdp2d_figure"):
        pdp_figure(r2)


@pytest.mark.parametrize("style", ["heatmap", "contour"])
def test_pdp2d_figure_empty_cells(data, style):
    X, reg, _ = data
    r = partial_dependence(reg, X, ["x0", "x1"], grid_resolution=6, kind="average")
    empty = r.counts.T == 0
    assert empty.any() and (~empty).any()
    hidden = pdp2d_figure(r, style=style, empty_cells="hide")
    z = np.asarray(hidden.data[0].z, dtype=float)
    assert z.shape == (6, 6) and len(hidden.data) == 1
    assert np.all(np.isnan(z[empty])) and not np.isnan(z[~empty]).any()
    np.testing.assert_allclose(z[~empty], r.average.T[~empty])
    shaded = pdp2d_figure(r, style=style, empty_cells="shade", points=X)
    assert len(shaded.data) == 3
    main, shade, pts = shaded.data
    np.testing.assert_allclose(np.asarray(main.z, dtype=float), r.average.T)
    shade_z = np.asarray(shade.z, dtype=float)
    assert np.array_equal(~np.isnan(shade_z), empty) and shade.showscale is False
    assert len(pts.x) == len(X) and pts.mode == "markers"
    shown = pdp2d_figure(r, style=style, empty_cells="show")
    assert len(shown.data) == 1 and not np.isnan(np.asarray(shown.data[0].z, dtype=float)).any()
    assert shaded.layout.xaxis.title.text == "x0" and shaded.layout.yaxis.title.text == "x1"
    assert "x0" in main.hovertemplate and "x1" in main.hovertemplate


def test_pdp2d_figure_bad_options(data):
    X, reg, _ = data
    r = partial_dependence(reg, X, ["x0", "x1"], grid_resolution=4, kind="average")
    with pytest.raises(InvalidParameterError, match="'style' parameter of pdp2d_figure"):
        pdp2d_figure(r, style="surface")
    with pytest.raises(InvalidParameterError, match="'empty_cells'"):
        pdp2d_figure(r, empty_cells="blank")


def test_ale_figure(data):
    X, reg, _ = data
    r = ale(reg, X, "x0", n_bins=8)
    fig = ale_figure(r)
    line, bars, rug = fig.data
    np.testing.assert_allclose(line.y, r.effect)
    np.testing.assert_array_equal(bars.y, r.counts)
    assert bars.yaxis == "y3" and len(rug.x) == 9
    assert fig.layout.xaxis.title.text == "x0" and "ALE" in fig.layout.yaxis.title.text


def test_pdp_to_csv(data):
    X, reg, clf = data
    r = partial_dependence(reg, X, ["x0", "grp"], grid_resolution=5, sample=7)
    table = pd.read_csv(io.StringIO(pdp_to_csv(r, include_ice=True)))
    assert list(table.columns[:4]) == ["x0", "grp", "partial_dependence", "rows"]
    assert len(table) == 5 * 3 and table["rows"].sum() == r.counts.sum()
    assert table.shape[1] == 4 + 7
    np.testing.assert_allclose(table["partial_dependence"], r.average.reshape(-1))
    rc = partial_dependence(clf, X, ["x0"], grid_resolution=4, kind="average")
    tc = pd.read_csv(io.StringIO(pdp_to_csv(rc)))
    assert list(tc.columns) == ["x0", "output", "partial_dependence", "rows"] and len(tc) == 12


def test_ale2d_figure_cells_and_errors():
    import numpy as np
    import pandas as pd
    import pytest

    from dashboard.figures import ale2d_figure, ale_figure
    from explainers.ale import ale
    from explainers.errors import InvalidParameterError

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.uniform(size=120), "b": rng.uniform(size=120)})

    class Three:  # a 3-class "model": softmax of three interaction scores
        classes_ = np.array([0, 1, 2])

        def predict_proba(self, A):
            A = np.asarray(A, dtype=float)
            s = np.column_stack([A[:, 0] * A[:, 1], -A[:, 0] * A[:, 1], A[:, 0]])
            e = np.exp(s - s.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)

        def predict(self, A):
            return self.predict_proba(A).argmax(axis=1)

    r = ale(Three(), X, ["a", "b"], n_bins=4)
    for ci in (None, 2):
        fig = ale2d_figure(r, class_index=ci)
        f = r.effect[..., 0 if ci is None else ci]
        want = ((f[:-1, :-1] + f[:-1, 1:] + f[1:, :-1] + f[1:, 1:]) / 4).T
        np.testing.assert_allclose(np.asarray(fig.data[0].z, dtype=float), want, atol=1e-12)
        assert fig.data[0].zmid == 0.0
    with pytest.raises(InvalidParameterError, match="two features"):
        ale2d_figure(ale(Three(), X, "a", n_bins=4))
    with pytest.raises(InvalidParameterError, match="one feature"):
        ale_figure(r)


def test_a_regressors_one_output_is_called_the_prediction():
    """A regressor's single output has no name ("0"): titles and the colour bar say "prediction"."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(120, 3)), columns=["a", "b", "c"])
    model = LinearRegression().fit(X, X.a + X.b)
    from dataclasses import replace

    # as an uploaded file's regressor names its output (the issue saw "Partial dependence: 0 by ...")
    two = replace(partial_dependence(model, X, ["a", "b"], grid_resolution=5), output_names=["0"])
    fig = pdp2d_figure(two)
    assert fig.layout.title.text == "Partial dependence: prediction by a and b"
    assert fig.data[0].colorbar.title.text == "prediction"
    one = pdp_figure(replace(partial_dependence(model, X, ["a"], grid_resolution=5), output_names=["0"]))
    assert ": 0" not in (one.layout.title.text or "") and " 0 " not in (one.layout.yaxis.title.text or "")


def test_second_order_ale_is_read_against_the_pairs_effect():
    """A logistic model on log-odds has no interaction (rounding noise only) next to the pair's
    effect: drawn pale (the colours span a quarter of the 2-D partial dependence's range), not
    in full colour."""
    from sklearn.linear_model import LogisticRegression

    from dashboard.figures import ale2d_figure, pd_range
    from explainers import ModelAdapter
    from explainers.ale import ale
    from explainers.pdp import partial_dependence

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(400, 2)), columns=["a", "b"])
    fitted = LogisticRegression().fit(X, (X.a + X.b + rng.normal(0, 0.3, 400) > 0).astype(int))
    model = ModelAdapter(fitted, output="log_odds")
    inter = ale(model, X, ["a", "b"], n_bins=8)
    pd2 = partial_dependence(model, X, ["a", "b"], grid_resolution=8, kind="average")
    ref = pd_range(pd2, 1)
    own = ale2d_figure(inter, class_index=1).data[0]
    read = ale2d_figure(inter, class_index=1, reference=ref).data[0]
    assert own.zmax == pytest.approx(float(np.nanmax(np.abs(np.asarray(own.z, dtype=float)))))
    assert own.zmax < 1e-6 * ref  # the noise, drawn at full colour on its own scale
    assert read.zmax == pytest.approx(ref / 4)
    avg = np.asarray(pd2.average, dtype=float)[..., 1]
    assert ref == pytest.approx(float(avg.max() - avg.min()))
