"""Quality figures a stakeholder can read: legends below the plot area (never over a curve),
the calibration's rows axis from 0, small confusion shares with a decimal, residual quantile
labels on alternating heights. Read from the figures' own layout."""
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression

from dashboard.figures import quality as qf
from explainers.quality import quality


def _binary():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(400, 3)), columns=["a", "b", "c"])
    y = np.where(X.a + rng.normal(0, 0.8, 400) > 1.8, "yes", "no")  # a rare class
    return quality(LogisticRegression().fit(X, y), X, y)


def _three():
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    s = X.a + rng.normal(0, 0.7, 300)
    y = np.where(s > 0.6, "high", np.where(s < -0.6, "low", "mid"))
    return quality(LogisticRegression(max_iter=500).fit(X, y), X, y)


def _plot_bottom_px(fig) -> float:
    """The legend's top edge, in pixels below the plot area's bottom (positive: below it)."""
    lay = fig.layout
    plot_px = lay.height - lay.margin.t - lay.margin.b
    assert lay.legend.yanchor == "top" and lay.legend.orientation == "h"
    return -lay.legend.y * plot_px


@pytest.mark.parametrize("make", [_binary, _three])
@pytest.mark.parametrize("figure", ["roc_figure", "pr_figure", "calibration_figure", "gains_figure"])
def test_every_legend_sits_below_the_plot_area_with_room_for_its_rows(make, figure):
    q = make()
    fig = getattr(qf, figure)(q)
    names = [t.name for t in fig.data if t.showlegend is not False]
    below = _plot_bottom_px(fig)
    # under the x tick labels and the axis title, and inside the figure with every row (entries
    # packed side by side while they fit the width, as Plotly places them)
    assert below >= 50
    rows = qf.legend_rows(names)
    assert rows >= -(-sum(qf.LEGEND_ENTRY_PX + qf.LEGEND_CHAR_PX * len(n) for n in names) // qf.LEGEND_WIDTH_PX)
    assert below + rows * qf.LEGEND_ROW_PX <= fig.layout.margin.b + 1e-9, (below, rows, fig.layout.margin.b)


def test_calibration_rows_axis_starts_at_zero_and_names_no_class_for_a_binary_model():
    q = _binary()
    fig = qf.calibration_figure(q)
    lo, hi = fig.layout.yaxis2.range
    counts = np.concatenate([c.counts for c in q.calibration])
    assert lo == 0 and hi >= counts.max() and fig.layout.yaxis2.tickformat == ",d"
    assert fig.layout.yaxis2.tickmode == "auto"  # round counts, not ticks synced to the left axis's grid
    assert [t.name for t in fig.data if t.type == "bar"] == ["rows per bin"]
    multi = qf.calibration_figure(_three())
    assert all("(" in t.name for t in multi.data if t.type == "bar")  # one per class: named


def test_small_confusion_shares_keep_a_decimal():
    assert qf._share(0.004) == "0.4%" and qf._share(0.0) == "0%" and qf._share(0.5) == "50%"
    assert qf._share(0.094) == "9.4%" and qf._share(0.12) == "12%"
    q = _binary()
    m = q.confusion.matrix
    share = m / m.sum(axis=1, keepdims=True)
    text = qf.confusion_figure(q).data[0].text
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            assert text[i][j] == f"{int(m[i, j]):,}<br>({qf._share(share[i, j])})"


def test_residual_quantile_labels_never_print_on_each_other():
    """Quantiles closer than an eighth of the residuals' range share one label (a long tail squeezes
    them into a few pixels); neighbouring labels sit on different heights; every quantile is named
    once, with its value."""
    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.normal(size=(300, 2)), columns=["a", "b"])
    for y in (X.a + rng.normal(size=300), X.a + rng.standard_t(1, 300)):  # plain, and a very long tail
        q = quality(LinearRegression().fit(X, y), X, y)
        fig = qf.residual_histogram_figure(q)
        labels = list(fig.layout.annotations)
        named = [n for a in labels for n in a.text.split(":")[0].split("/")]
        assert sorted(named) == sorted(["5%", "25%", "50%", "75%", "95%"])
        shifts = [a.yshift for a in labels]
        assert all(a != b for a, b in zip(shifts, shifts[1:]))
        span = float(np.ptp(q.residuals))
        xs = [a.x for a in labels]
        assert all(b - a >= 0.06 * span for a, b in zip(xs, xs[1:]))  # groups well apart on each height
        for a in labels:
            first = a.text.split(":")[0].split("/")[0]
            want = float(np.quantile(q.residuals, float(first.rstrip("%")) / 100))
            assert f"{want:.4g}"[:3].lstrip("-") in a.text.replace(",", "")
    assert len(labels) < 5  # the long tail's middle quantiles share a label
