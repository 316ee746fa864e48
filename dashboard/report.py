"""A self-contained HTML report of the current views, for readers without Python.

Pure: takes figures and tables, returns one HTML string with plotly.js inlined
once, so the file opens offline in any browser with interactive figures.
"""
from __future__ import annotations

import datetime as _dt
import html
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from dashboard.safe_text import no_bidi, shown_frame


def _esc(text: str) -> str:
    """Text for the report's HTML: escaped, bidirectional controls shown (never reversed)."""
    return html.escape(no_bidi(text))

_CSS = """
body { font-family: Inter, 'Segoe UI', Helvetica, Arial, sans-serif; color: #222; margin: 2rem auto;
       max-width: 1100px; padding: 0 1rem; line-height: 1.45; }
h1 { font-size: 1.9rem; margin-bottom: .2rem; } h2 { font-size: 1.35rem; margin-top: 2.2rem;
     border-bottom: 1px solid #ddd; padding-bottom: .3rem; }
.meta { color: #666; font-size: .9rem; } .caption { color: #555; font-size: .92rem; }
table { border-collapse: collapse; font-size: .9rem; margin: .6rem 0; }
th, td { border: 1px solid #ddd; padding: .25rem .55rem; text-align: right; }
th { background: #f4f6f8; } td:first-child, th:first-child { text-align: left; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2rem 1rem; } dt { font-weight: 600; }
"""


@dataclass(frozen=True)
class Section:
    """One part of the report: a heading, a sentence, and a figure and/or a table."""

    heading: str
    caption: str = ""
    figure: go.Figure | None = None
    table: pd.DataFrame | None = None


@dataclass(frozen=True)
class Built:
    """A report ready to download, and what the page says about it before the download."""

    html: str
    #: (heading, what it shows) of every part, in the report's order: the page's preview
    outline: tuple = ()
    #: one sentence per ticked part that was left out, saying why (also listed in the report)
    notices: tuple = ()
    #: number of sections with a figure or a table
    n_sections: int = 0


def build_report(title: str, summary: dict, sections: list[Section], notices: list[str] | tuple = ()) -> str:
    """Return the report as one HTML document.

    Parameters
    ----------
    title : str
    summary : dict
        Label -> value lines for the model summary at the top.
    sections : list of Section
    notices : list of str, default=()
        Parts asked for but left out, each with the reason: listed under the summary.

    Returns
    -------
    str
        A complete HTML file; plotly.js is embedded with the first figure.
    """
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        f"<p class='meta'>Glassbox report · {_dt.datetime.now():%Y-%m-%d %H:%M}</p>",
        "<dl>" + "".join(f"<dt>{_esc(str(k))}</dt><dd>{_esc(str(v))}</dd>"
                         for k, v in summary.items()) + "</dl>",
    ]
    if notices:
        parts.append("<p class='caption'>Left out of this report:</p><ul class='caption'>"
                     + "".join(f"<li>{_esc(str(n))}</li>" for n in notices) + "</ul>")
    plotly_js_included = False
    for sec in sections:
        parts += _section_html(sec, include_plotlyjs=not plotly_js_included)
        plotly_js_included = plotly_js_included or sec.figure is not None
    parts.append(_END)
    return "\n".join(parts)


_END = "</body></html>"


def _section_html(sec: Section, *, include_plotlyjs: bool) -> list[str]:
    """One section's HTML: its heading, caption, figure (with plotly.js if asked) and table."""
    parts = [f"<h2>{_esc(sec.heading)}</h2>"]
    if sec.caption:
        parts.append(f"<p class='caption'>{_esc(sec.caption)}</p>")
    if sec.figure is not None:
        parts.append(sec.figure.to_html(full_html=False, include_plotlyjs=include_plotlyjs,
                                        config={"displaylogo": False, "responsive": True}))
    if sec.table is not None:
        parts.append(shown_frame(sec.table).to_html(float_format=_cell, na_rep="", border=0))
    return parts


def _cell(v: float) -> str:
    """A number in a report table as the pages write it: six significant digits, thousands
    separated, no scientific notation for values of the data's size ("338,400"); empty blank."""
    from dashboard.figures.style import fmt_number

    return "" if v != v else fmt_number(v, digits=6)


def add_sections(built: Built, sections: list[Section]) -> Built:
    """``built`` with ``sections`` appended at the end of the report (and of its outline).

    For parts that change without the report's own choices changing (the session's
    segments): the report is cached per choice, these are added to it afterwards.
    Tables only: plotly.js may be in the report already, or not at all.
    """
    if not sections:
        return built
    if any(sec.figure is not None for sec in sections):
        raise ValueError("add_sections adds tables and text only; put figures in build_report's sections.")
    extra = "\n".join(part for sec in sections for part in _section_html(sec, include_plotlyjs=False))
    head, end, tail = built.html.rpartition(_END)
    doc = f"{head}{extra}\n{end}{tail}" if end else f"{built.html}\n{extra}"
    return Built(doc, built.outline + tuple((sec.heading, sec.caption) for sec in sections), built.notices,
                 built.n_sections + len(sections))
