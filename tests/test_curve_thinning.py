"""Curves of many rows are drawn through a bounded number of their own points (issue #31):
a ROC or precision-recall curve of a million rows has up to a million points, tens of MB
sent to the browser; the figure keeps each run's ends per cell of a fine grid."""
import numpy as np
import pytest

from dashboard.figures.quality import CURVE_CELLS, _run_ends, thin_curve


def _cells(v, cells):
    lo, hi = v.min(), v.max()
    return np.floor((v - lo) / ((hi - lo) or 1.0) * (cells - 1) + 0.5).astype(int)


@pytest.mark.parametrize("kind", ["roc", "pr", "noisy"])
def test_thinned_curve_keeps_its_ends_and_stays_within_a_cell(kind):
    rng = np.random.default_rng(0)
    n = 300_000
    if kind == "roc":  # monotone in both coordinates
        x, y = np.sort(rng.uniform(size=n)), np.sort(rng.uniform(size=n) ** 0.3)
    elif kind == "pr":  # recall monotone, precision wandering
        x = np.sort(rng.uniform(size=n))
        y = np.clip(1 - 0.5 * x + 0.02 * np.cumsum(rng.normal(size=n)) / np.sqrt(n), 0, 1)
    else:
        x, y = np.cumsum(rng.uniform(size=n)), np.sin(np.linspace(0, 20, n))
    cells = CURVE_CELLS
    k = thin_curve(x, y)
    assert k[0] == 0 and k[-1] == n - 1 and np.all(np.diff(k) > 0)
    assert len(k) <= 8 * CURVE_CELLS
    while not np.array_equal(_run_ends(x, y, cells), k):  # the cells it settled on (coarser: a wandering curve)
        cells //= 2
        assert cells >= 16
    cx, cy = _cells(x, cells), _cells(y, cells)
    # a point left out shares its cell with both kept points around it (it lies inside their run)
    pos = np.searchsorted(k, np.arange(n))
    dropped = np.setdiff1d(np.arange(n), k)
    before, after = k[pos[dropped] - 1], k[pos[dropped]]
    assert np.all((cx[dropped] == cx[before]) & (cy[dropped] == cy[before]))
    assert np.all((cx[dropped] == cx[after]) & (cy[dropped] == cy[after]))
    if kind == "roc":  # a monotone curve visits at most 2 x cells cells: two points each
        assert len(k) <= 4 * cells


def test_short_curves_are_drawn_whole():
    x = np.linspace(0, 1, 4 * CURVE_CELLS)
    assert np.array_equal(thin_curve(x, x ** 2), np.arange(len(x)))


def test_roc_and_pr_figures_draw_thinned_curves_of_their_own_points():
    from sklearn.metrics import roc_auc_score

    from dashboard.figures.quality import _curves, pr_figure, roc_figure
    from explainers.quality import quality

    rng = np.random.default_rng(1)
    n = 200_000
    y = rng.integers(0, 2, n)
    p = np.clip(0.3 * y + rng.uniform(size=n) * 0.7, 0, 1)
    proba = np.column_stack([1 - p, p])

    class M:  # a fitted binary classifier that returns these probabilities
        classes_ = np.array([0, 1])

        def predict_proba(self, X):
            return proba[np.asarray(X)[:, 0].astype(int)]

        def predict(self, X):
            return self.predict_proba(X).argmax(1)

        def fit(self):
            return self

    X = np.arange(n, dtype=float)[:, None]
    q = quality(M(), X, y)
    (c,) = _curves(q, None)
    r, pr_curve = q.roc[c], q.pr[c]
    assert r.auc == pytest.approx(roc_auc_score(y, p), abs=1e-12)  # the numbers use every point
    roc = roc_figure(q)
    line = [t for t in roc.data if t.mode == "lines" and t.name != "guessing"][0]
    assert len(line.x) <= 4 * CURVE_CELLS < len(r.fpr)
    k = thin_curve(r.fpr, r.tpr)  # every point drawn is a point of the curve, with its own threshold
    assert np.array_equal(line.x, r.fpr[k]) and np.array_equal(line.y, r.tpr[k])
    assert np.array_equal(line.customdata, np.asarray(r.thresholds)[k])
    pr = pr_figure(q)
    pline = [t for t in pr.data if t.mode == "lines" and "AP" in t.name][0]
    k = thin_curve(pr_curve.recall, pr_curve.precision)
    assert len(pline.x) == len(k) < len(pr_curve.recall) // 10
    assert np.array_equal(pline.x, np.asarray(pr_curve.recall)[k])
    assert np.array_equal(pline.y, np.asarray(pr_curve.precision)[k])
