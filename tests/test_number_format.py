"""Numbers on the data's own scale (issue #16): one formatter, used by every figure.

Dollar-sized values read ``192.6k``, never ``1.926e+05``; rounding residue next to
numbers of order 1 reads ``0``; labels of a large-valued regression carry no exponent.
"""
import json
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import GradientBoostingRegressor

from dashboard.figures import (
    ale_figure,
    beeswarm_figure,
    dependence_figure,
    force_figure,
    importance_bars_figure,
    mean_abs_figure,
    pdp_figure,
    waterfall_figure,
)
from dashboard.figures.style import d3_format, fmt_number, fmt_signed, fmt_value, scale_of

EXPONENT = re.compile(r"\d[eE][+-]?\d")


@pytest.mark.parametrize("value, text", [
    (192_634.2, "192.6k"), (-34_000, "-34k"), (163.467, "163.5"), (97.891, "97.89"), (0.001234, "0.001234"),
    (1_234_567, "1.235M"), (3.2e9, "3.2G"), (999_960, "1M"), (1926.4, "1926"), (12_345, "12.35k"),
    (0, "0"), (0.5, "0.5"), (1.5e-7, "1.5e-7"), (float("nan"), "NA"), (np.float32(2.5), "2.5"), (7, "7"),
])
def test_four_significant_digits_and_si_suffixes(value, text):
    assert fmt_number(value) == text


def test_more_digits_write_out_the_whole_part_with_separators():
    assert fmt_number(192_634.2, digits=6) == "192,634"
    assert fmt_number(-32_787.6, digits=6) == "-32,787.6"
    assert fmt_number(1_234_567, digits=6) == "1.23457M"


def test_tiny_values_relative_to_the_scale_are_zero():
    assert fmt_number(-1.11022e-16, 0.5) == "0"
    assert fmt_number(3e-12, 200_000) == "0"
    assert fmt_number(-1.11022e-16) != "0"  # alone, a tiny number is shown as it is
    assert fmt_number(0.02, 200_000) == "0.02"  # small, but not rounding noise


def test_signs_and_values():
    assert fmt_signed(28_512.4) == "+28.51k" and fmt_signed(-12.61e3) == "-12.61k" and fmt_signed(0) == "0"
    assert fmt_value(2015.0) == "2015" and fmt_value(np.nan) == "NA" and fmt_value("<b>x</b>") != "<b>x</b>"
    assert scale_of([1.0, -5.0], np.array([[2e5, np.nan]])) == 2e5


def test_plotly_formats_follow_the_scale():
    assert d3_format(2e5) == ",.4~s" and d3_format(163.0) == ".4~g"
    assert d3_format(5e4, sign=True) == "+,.4~s"


# --------------------------------------------------- a large-valued regression
@pytest.fixture(scope="module")
def houses():
    """House prices around 200,000 from five features (sqft in the thousands)."""
    rng = np.random.default_rng(0)
    n = 400
    X = pd.DataFrame({"sqft": rng.uniform(500, 4000, n), "bedrooms": rng.integers(1, 6, n).astype(float),
                      "year_built": rng.integers(1900, 2020, n).astype(float),
                      "lot_size": rng.uniform(1_000, 20_000, n), "distance_km": rng.uniform(0, 40, n)})
    y = (50_000 + 60 * X.sqft + 8_000 * X.bedrooms + 300 * (X.year_built - 1900) + 2 * X.lot_size
         - 1_500 * X.distance_km)
    model = GradientBoostingRegressor(random_state=0).fit(X, y)
    return model, X, y


@pytest.fixture(scope="module")
def house_shap(houses):
    from explainers.shap import explain

    model, X, _ = houses
    return explain(model, X.iloc[:60], background=X.iloc[100:200])


def _strings(obj) -> list[str]:
    """Every string in a figure's JSON (labels, ticks, hover text, titles, annotations)."""
    out = []

    def walk(v):
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for k, w in v.items():
                if k not in ("bdata", "dtype", "font", "template", "colorscale", "marker"):
                    walk(w)
        elif isinstance(v, list):
            for w in v:
                walk(w)

    walk(json.loads(obj.to_json()))
    return out


def _no_exponents(fig) -> None:
    bad = [s for s in _strings(fig) if EXPONENT.search(s)]
    assert not bad, bad[:5]


def test_waterfall_labels_of_house_prices(house_shap):
    fig = waterfall_figure(house_shap, 3)
    _no_exponents(fig)
    base, pred = float(house_shap.base_values[3]), float(house_shap.predictions[3])
    notes = [a.text for a in fig.layout.annotations]
    assert f"E[f(X)] = {fmt_number(base)}" in notes and f"f(x) = {fmt_number(pred)}" in notes
    assert fmt_number(pred).endswith("k") and fmt_number(pred) in fig.layout.title.text
    # the contributions: a column of labels on the right axis, one per bar, never on the bars
    bar = fig.data[0]
    assert bar.text is None
    values = list(fig.layout.yaxis2.ticktext)
    scale = scale_of(base, pred, np.abs(house_shap.values[3]).sum())
    assert values == [fmt_signed(v, scale) for v in bar.x]
    ticks = list(fig.layout.xaxis.ticktext)
    assert 2 <= len(ticks) <= 5 and all(t.endswith("k") for t in ticks), ticks
    # the line labels sit above the plot, on their own rows, anchored towards the middle
    shifts = sorted(a.yshift for a in fig.layout.annotations)
    assert shifts[1] - shifts[0] >= 18 and all(a.y == 1.0 and a.yanchor == "bottom" for a in fig.layout.annotations)


def test_force_and_global_figures_of_house_prices(house_shap, houses):
    for fig in (force_figure(house_shap, 3), beeswarm_figure(house_shap), mean_abs_figure(house_shap),
                dependence_figure(house_shap, "sqft", "lot_size")):
        _no_exponents(fig)
    ma = mean_abs_figure(house_shap)
    imp = house_shap.mean_abs()
    order = np.argsort(-imp, kind="stable")[::-1]
    assert list(ma.layout.yaxis2.ticktext) == [fmt_number(v, imp.max()) for v in imp[order]]
    assert ma.data[0].text is None  # no text beside the bars to be cut off


def test_pdp_ale_and_importance_of_house_prices(houses):
    from explainers.ale import ale
    from explainers.importance import permutation_importance
    from explainers.pdp import partial_dependence

    model, X, y = houses
    pd_res = partial_dependence(model, X, ["lot_size"], grid_resolution=10)
    fig = pdp_figure(pd_res)
    _no_exponents(fig)
    assert fig.layout.yaxis.tickformat == ",.4~s" and fig.layout.xaxis.tickformat == ",.4~s"
    assert all(".4g" not in (t.hovertemplate or "") for t in fig.data)
    _no_exponents(ale_figure(ale(model, X, "lot_size", n_bins=8)))
    imp = permutation_importance(model, X.iloc[:200], y.iloc[:200], n_repeats=2, random_state=0,
                                 scoring="neg_mean_squared_error")
    bars = importance_bars_figure(imp, normalised=False)
    _no_exponents(bars)
    assert bars.layout.xaxis.tickformat == ",.4~s"


def test_short_labels_keep_what_tells_long_names_apart():
    from dashboard.figures.style import short_labels

    names = [f"customer_account_measurement_{i:02d}_{'ratio' if i % 3 else 'balance'}_last_quarter" for i in range(60)]
    short = short_labels(names, 22)
    assert short[:3] == ["…00_balance…", "…01_ratio…", "…02_ratio…"]
    assert len(set(short)) == 60 and all(len(s) <= 22 for s in short)
    assert short_labels(["bmi", "age"]) == ["bmi", "age"]  # short names stay as they are
    one = short_labels(["a" * 40])[0]
    assert len(one) == 28 and one.startswith("a" * 13) and "…" in one
