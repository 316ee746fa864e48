"""User text shown literally: in Streamlit's Markdown, in Plotly figures and in CSV downloads.

File names, column names, category values, class names and error messages that
quote them come from uploads. Every place that shows them goes through one of
these helpers, so a name like ``**x**``, ``[x](http://…)`` or ``<b>x</b>`` reads as
typed instead of turning into formatting, a link or a spreadsheet formula:

- :func:`md`: for Streamlit elements that render Markdown (st.markdown, st.caption,
  st.title, st.info/warning/error, widget and metric labels). Selectbox and
  multiselect *options* and dataframe cells are shown as plain text already: do not
  escape them (the backslashes would show).
- :func:`code`: a Markdown inline code span (monospace, nothing inside is interpreted).
- :func:`plot` / :func:`plot_values`: for Plotly titles, axis titles, tick labels,
  legend names, annotations, hover texts and hover templates (Plotly renders a
  subset of HTML there and fills ``%{…}`` in hover templates).
- :func:`csv_text`: every CSV download (cells a spreadsheet would run as a formula
  get a leading single quote; numbers stay numbers).
- :func:`file_name`: a download's file name built from user text.

Pure functions: no Streamlit import, so the figures and the report use them too.
"""
from __future__ import annotations

import html
import re

import pandas as pd

#: U+2060 WORD JOINER: invisible, no line break; splits a sequence Streamlit's
#: Markdown would otherwise turn into a link (``http://``, ``www.``, ``a@b.c``)
#: or an icon/emoji/colour directive (``:smile:``, ``:material/home:``, ``:red[x]``),
#: which it recognises in the text after backslash escapes were applied.
WORD_JOINER = "\u2060"

# Markdown characters that start formatting anywhere in a line: escaped with a backslash
_MD_ALWAYS = re.compile(r"([\\`*~\[\]<>$&#])")
# bidirectional overrides would show the text in another order than it was typed
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_COLON_OR_AT = re.compile(r"([:@])(?=\S)")
_WWW = re.compile(r"(?i)(www)(?=\.)")
_LIST_START = re.compile(r"^([-+=])|^(\d{1,9})([.)])(?=\s|$)")


def _one_line(text) -> str:
    """The text on one line (Markdown would read a line break as a new block), bidi controls shown."""
    s = "" if text is None else str(text)
    s = " ".join(s.splitlines())
    return _BIDI.sub("\ufffd", s).strip()


def _escape_underscores(s: str) -> str:
    """Escape ``_`` unless it sits between two letters or digits (``snake_case`` never starts emphasis)."""
    out = []
    for i, ch in enumerate(s):
        if ch == "_" and not (0 < i < len(s) - 1 and s[i - 1].isalnum() and s[i + 1].isalnum()):
            out.append("\\_")
        else:
            out.append(ch)
    return "".join(out)


def md(text) -> str:
    """``text`` escaped for Streamlit Markdown: it renders exactly as typed, on one line.

    Backslash-escapes the characters that start emphasis, code, links, images,
    strikethrough, HTML, entities, LaTeX (``$``) and headings; a list or heading
    marker at the start; and splits ``http://``, ``www.``, ``a@b`` and ``:name``
    with an invisible word joiner so no link, emoji, icon or colour directive appears.
    """
    s = _one_line(text)
    s = _MD_ALWAYS.sub(r"\\\1", s)
    s = _escape_underscores(s)
    s = _COLON_OR_AT.sub(r"\1" + WORD_JOINER, s)
    s = _WWW.sub(r"\1" + WORD_JOINER, s)
    return _LIST_START.sub(lambda m: "\\" + m.group(1) if m.group(1) else m.group(2) + "\\" + m.group(3), s)


def code(text) -> str:
    """``text`` as a Markdown inline code span: monospace, shown as typed (any backticks included)."""
    s = _COLON_OR_AT.sub(r"\1" + WORD_JOINER, _one_line(text))
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or (s.startswith(" ") and s.endswith(" ")) else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def plot(text) -> str:
    """``text`` escaped for Plotly: ``& < >`` as entities (no tags, no links), ``{ }`` too
    (no ``%{…}`` substitution in hover templates). Plotly shows the entities as the characters."""
    s = html.escape(_BIDI.sub("\ufffd", "" if text is None else str(text)), quote=False)
    return s.replace("{", "&#123;").replace("}", "&#125;")


def plot_values(values):
    """Data values Plotly shows as categories (tick labels, hover ``%{x}``): strings escaped
    with :func:`plot`, numbers and everything else unchanged."""
    return [plot(v) if isinstance(v, str) else v for v in values]


# ------------------------------------------------------------------------ tables
def no_bidi(text: str) -> str:
    """``text`` with its bidirectional controls shown as U+FFFD (a column named with U+202E
    would otherwise read backwards)."""
    return _BIDI.sub("\ufffd", text)


def _bidi_labels(labels: pd.Index) -> pd.Index:
    if isinstance(labels, pd.MultiIndex):
        return pd.MultiIndex.from_tuples([tuple(no_bidi(v) if isinstance(v, str) else v for v in t) for t in labels],
                                         names=labels.names)
    if any(isinstance(v, str) and _BIDI.search(v) for v in labels):
        return pd.Index([no_bidi(v) if isinstance(v, str) else v for v in labels], name=labels.name, dtype=object)
    return labels


def shown_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as a table shows it: bidirectional controls neutralised in column names, index
    labels and text cells (the frame itself is left alone; a copy only where one is needed)."""
    out = frame
    for axis in ("columns", "index"):
        labels = getattr(frame, axis)
        fixed = _bidi_labels(labels)
        if fixed is not labels:
            out = out.set_axis(fixed, axis=axis)
    for j, dtype in enumerate(out.dtypes):
        if dtype == object or pd.api.types.is_string_dtype(dtype):
            col = out.iloc[:, j]
            has = col.map(lambda v: isinstance(v, str) and _BIDI.search(v) is not None)
            if bool(has.any()):
                if out is frame:
                    out = frame.copy()
                out.isetitem(j, col.map(lambda v: no_bidi(v) if isinstance(v, str) else v))
    return out


# --------------------------------------------------------------------------- CSV
#: a cell starting with one of these is run as a formula by spreadsheet programs
#: (OWASP "CSV injection"); full-width forms are converted by some locales
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value):
    """A cell for a CSV download: a string a spreadsheet would run as a formula gets a leading ``'``.

    Only strings change: numbers (a float ``-3.5``, or the text ``"-3.5"``, which a
    spreadsheet reads as the number) stay as they are.
    """
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def _safe_index(index: pd.Index) -> pd.Index:
    if isinstance(index, pd.MultiIndex):
        return pd.MultiIndex.from_tuples([tuple(csv_cell(v) for v in t) for t in index],
                                         names=[csv_cell(n) for n in index.names])
    if index.dtype == object or pd.api.types.is_string_dtype(index):
        return pd.Index([csv_cell(v) for v in index], name=csv_cell(index.name), dtype=object)
    return index.rename(csv_cell(index.name))


def csv_text(frame: pd.DataFrame, *, index: bool = True) -> str:
    """``frame`` as CSV text that is safe to open in a spreadsheet.

    Text cells, header names and index labels that start like a formula
    (``= + - @``, tab, carriage return) get a leading single quote; numeric
    columns are written unchanged. Use it for every CSV download.
    """
    df = frame.copy()
    for i in range(df.shape[1]):
        col = df.iloc[:, i]
        if col.dtype == object or pd.api.types.is_string_dtype(col) or isinstance(col.dtype, pd.CategoricalDtype):
            df.isetitem(i, col.astype(object).map(csv_cell))
    df.columns = _safe_index(df.columns)
    if index:
        df.index = _safe_index(df.index)
    return df.to_csv(index=index)


def file_name(text: str, max_length: int = 120) -> str:
    """A download file name from user text: letters, digits, ``. _ -`` only (others become ``_``)."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("._") or "download"
    if len(s) > max_length:
        stem, dot, ext = s.rpartition(".")
        s = (stem[: max_length - len(ext) - 1] + "." + ext) if dot and len(ext) <= 8 else s[:max_length]
    return s
