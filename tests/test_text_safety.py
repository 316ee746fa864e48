"""User text shown literally (issue #15): Markdown and Plotly escaping, CSV formula cells,
download file names, and the figures built from hostile names."""
import csv
import io
import json
import re

import numpy as np
import pandas as pd
import pytest

from dashboard import figures
from dashboard.safe_text import WORD_JOINER, code, csv_cell, csv_text, file_name, md, plot

#: names a hostile upload may carry: Markdown, HTML, links, formulas, emoji/icon/colour codes, LaTeX
PAYLOADS = [
    "**bold**",
    "__main__.Evil",
    "[x](http://evil.example/)",
    '=HYPERLINK("http://evil.example/")',
    "<b>tag</b> <a href='http://evil.example'>a</a>",
    ":smile: :material/home: :red[red] :streamlit:",
    "$x^2$",
    "www.evil.example a@b.example",
    "<http://evil.example>",
    "`code` ~~strike~~ ~one~",
    "&amp; &lt;b&gt;",
    "1. list",
    "- item",
    "# head",
    "%{x} {y}",
    "back\\slash *a* _b_",
]


def _unescape_md(s: str) -> str:
    """What Markdown shows for md()'s output: backslash escapes and word joiners removed."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", s).replace(WORD_JOINER, "")


@pytest.mark.parametrize("text", PAYLOADS)
def test_md_escapes_every_markdown_trigger(text):
    out = md(text)
    assert _unescape_md(out) == text  # shows as typed
    bare = re.sub(r"\\.", "", out)  # what is left unescaped
    assert not re.search(r"[*`~\[\]<>$&#\\]", bare), out
    assert not re.search(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", bare), out  # no _ that could start emphasis
    assert "://" not in out and not re.search(r"(?i)www\.", out) and not re.search(r"@\w", out)
    assert not re.search(r":[\w/+-]", out), out  # no :smile:, :material/…:, :red[…]
    assert not re.match(r"\s*([-+]|\d+[.)])(\s|$)", out)  # no list marker at the start


def test_md_keeps_plain_names_readable():
    # snake_case, colons before a space and numbers stay as they are in the Markdown source
    for text in ["class_0", "od280/od315_of_diluted_wines", "lacks 1 column(s) the model needs: age", "1.5 x"]:
        assert md(text) == text
    assert md("line\nbreak") == "line break"  # one line: a newline would start a Markdown block


def test_code_span_holds_backticks():
    assert code("RandomForestRegressor") == "`RandomForestRegressor`"
    assert code("a`b") == "``a`b``"
    assert code("`x`") == "`` `x` ``"
    assert code(":material/home:") == f"`:{WORD_JOINER}material/home:`"


def test_plot_escapes_html_and_templates():
    assert plot("<b>x</b> & %{y}") == "&lt;b&gt;x&lt;/b&gt; &amp; %&#123;y&#125;"
    assert plot("plain name") == "plain name"


@pytest.mark.parametrize("cell, want", [
    ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
    ("+1+2", "'+1+2"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"), ("\rx", "'\rx"),
    ("-3.5", "-3.5"), ("+1e3", "+1e3"), ("ok", "ok"), (-3.5, -3.5), (None, None),
])
def test_csv_cell(cell, want):
    assert csv_cell(cell) == want


def test_csv_text_escapes_text_cells_and_names_only():
    frame = pd.DataFrame(
        {"=HYPERLINK(\"http://evil.example\")": ["=cmd|' /C calc'!A0", "ok"], "num": [-3.5, 2.0],
         "mixed": [-1.5, "@x"]},
        index=pd.Index(["-a", "b"], name="+idx"),
    )
    rows = list(csv.reader(io.StringIO(csv_text(frame))))
    assert rows[0] == ["'+idx", "'=HYPERLINK(\"http://evil.example\")", "num", "mixed"]
    assert rows[1] == ["'-a", "'=cmd|' /C calc'!A0", "-3.5", "-1.5"]
    assert rows[2] == ["b", "ok", "2.0", "'@x"]
    back = pd.read_csv(io.StringIO(csv_text(frame, index=False)))
    assert back["num"].tolist() == [-3.5, 2.0]  # numbers stay numbers


def test_file_name():
    assert file_name("pdp___uploaded___=x/../<b>.csv") == "pdp___uploaded____x_.._b_.csv"
    assert file_name("importance_wine_gb.csv") == "importance_wine_gb.csv"


# --------------------------------------------------------------------- figures
NAME = "<b>x</b><a href='http://evil.example'>y</a>"
CATS = ["=cmd|' /C calc'!A0", "<i>low</i>", "%{evil}"]


@pytest.fixture(scope="module")
def hostile():
    """A classifier whose feature names, category values and class names are HTML payloads."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    X = pd.DataFrame({NAME: rng.normal(size=200), "cat <b>": rng.choice(CATS, 200), "z": rng.normal(size=200)})
    y = np.where(X[NAME] + (X["cat <b>"] == CATS[0]) > 0.3, "<b>yes</b>", "no & {x}")
    pre = ColumnTransformer([("c", OneHotEncoder(), ["cat <b>"])], remainder="passthrough")
    model = make_pipeline(pre, RandomForestClassifier(20, max_depth=3, random_state=0)).fit(X, y)
    return model, X


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


_OWN_TAGS = re.compile(r"</?(b|br|extra)>")
_PLACEHOLDER = re.compile(r"%\{(x|y|z|text|hovertext|customdata(\[\d\])?|error_x\.array)(:[^}]*)?\}")


def _assert_escaped(fig):
    """No user text reaches Plotly as HTML or as a hover-template placeholder."""
    spec = json.loads(fig.to_json())
    texts = list(_strings(spec["data"])) + list(_strings(spec["layout"]))
    for s in texts:
        for raw in (NAME, "<b>yes</b>", "cat <b>", CATS[1], CATS[2], "no & {x}"):
            assert raw not in s, s
        assert "<" not in _OWN_TAGS.sub("", s), s  # only the figure's own tags
        assert "{" not in _PLACEHOLDER.sub("", s), s  # only the figure's own placeholders
    return "\n".join(texts)


def test_figures_escape_hostile_names(hostile):
    from explainers.pdp import partial_dependence
    from explainers.shap import explain

    model, X = hostile
    pd1 = partial_dependence(model, X, [NAME], grid_resolution=5, kind="both", sample=40, random_state=0)
    text = _assert_escaped(figures.pdp_figure(pd1, color_by=(X["cat <b>"], "cat <b>")))
    assert plot(NAME) in text and plot("no & {x}") in text and plot(CATS[1]) in text
    pdc = partial_dependence(model, X, ["cat <b>"], kind="both", sample=40, random_state=0)
    text = _assert_escaped(figures.pdp_figure(pdc))
    assert plot(CATS[2]) in text
    pd2 = partial_dependence(model, X, ["cat <b>", NAME], grid_resolution=4, sample=40, random_state=0)
    _assert_escaped(figures.pdp2d_figure(pd2, points=X.iloc[:30]))
    res = explain(model, X.iloc[:20], background=X.iloc[:30])
    for fig in (figures.waterfall_figure(res, 0), figures.force_figure(res, 0), figures.beeswarm_figure(res),
                figures.mean_abs_figure(res), figures.mean_abs_figure(res, class_index=0),
                figures.dependence_figure(res, "cat <b>", NAME), figures.dependence_figure(res, NAME, "cat <b>")):
        _assert_escaped(fig)


def test_importance_figures_escape_names(hostile):
    from explainers.importance import compare_importances, permutation_importance, shap_importance
    from explainers.shap import explain

    model, X = hostile
    y = model.predict(X)
    results = [permutation_importance(model, X, y, n_repeats=2, random_state=0),
               shap_importance(explain(model, X.iloc[:20], background=X.iloc[:30]))]
    comp = compare_importances(results, X=X)
    text = _assert_escaped(figures.importance_bars_figure(comp))
    assert plot(NAME) in text
    _assert_escaped(figures.agreement_heatmap_figure(comp))


def test_pdp_csv_keeps_numbers_and_quotes_formulas(hostile):
    from explainers.pdp import partial_dependence

    model, X = hostile
    X = X.assign(**{NAME: X[NAME] - 5})  # negative grid values
    r = partial_dependence(model, X, ["cat <b>"], kind="both", sample=20, random_state=0)
    rows = list(csv.reader(io.StringIO(figures.pdp_to_csv(r, include_ice=True))))
    body = [row[0] for row in rows[1:]]
    assert "'=cmd|' /C calc'!A0" in body and CATS[0] not in body
    rn = partial_dependence(model, X, [NAME], grid_resolution=5, sample=20, random_state=0)
    table = pd.read_csv(io.StringIO(figures.pdp_to_csv(rn)))
    assert table.columns[0] == NAME  # not a formula: unchanged
    assert (table[NAME] < 0).all() and table[NAME].dtype.kind == "f"  # negative numbers stay numbers
    outputs = {row[1] for row in list(csv.reader(io.StringIO(figures.pdp_to_csv(r))))[1:]}
    assert outputs == {"<b>yes</b>", "no & {x}"}  # plain text in a CSV; nothing to escape there


def test_every_csv_download_goes_through_csv_text():
    """One helper for every CSV the dashboard hands out (no bare DataFrame.to_csv)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "dashboard"
    n_csv = 0
    for path in root.rglob("*.py"):
        src = path.read_text()
        if path.name != "safe_text.py":
            assert ".to_csv(" not in src, path
        for start in [m.start() for m in re.finditer(r"download_button\(", src)]:
            call = src[start: src.index("mime=", start) + 20]
            if "text/csv" in call:
                n_csv += 1
                assert "csv_text(" in call or "pdp_to_csv(" in call, (path, call)
    assert n_csv >= 5
