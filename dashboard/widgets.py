"""Streamlit elements the pages share: the running indicator of a slow call, the error box,
the empty-cells switch and caption, the compared segment's notice and the sidebar's
segment picker, and the Quality page's threshold slider.

Everything here draws on the page; :mod:`dashboard.state` computes and keeps state, and
never draws (``tests/test_layout.py`` checks both, and that neither imports in a cycle).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from explainers import ExplainerError

from dashboard.safe_text import md, shown_frame
from dashboard.state.context import ModelContext, error_message
from dashboard import state
from dashboard.state.quality import DEFAULT_THRESHOLD, THRESHOLD_STEP, THRESHOLD_WIDGET, threshold, valid_threshold
from dashboard.state.segments import NO_SEGMENT, SEGMENT_ON, active_segment, saved_segments, segments_to_url


class Working:
    """A running indicator for one slow call, drawn where the page creates it: nothing for
    a call done within 0.1 s, else a spinning status line with the seconds waited, removed
    when the call returns."""

    def __init__(self, text: str):
        self.text = text
        self._slot = st.empty()

    def __call__(self, seconds: float) -> None:
        # every call reaches Streamlit, which is where a Stop or a rerun takes effect
        self._slot.status(f"{self.text} {seconds:.1f} s", state="running", expanded=False)

    def done(self) -> None:
        self._slot.empty()


def table(frame: pd.DataFrame, where=st, **kwargs):
    """``where.dataframe(frame, **kwargs)`` with the frame as tables show it
    (:func:`~dashboard.safe_text.shown_frame`: no text from a file reads backwards)."""
    return where.dataframe(shown_frame(frame), **kwargs)


def show_error(exc: BaseException) -> None:
    """The exception's sentence as an error box; any user text in it (names, values) shown literally."""
    st.error(md(error_message(exc)), icon=":material/error:")


def empty_cells_toggle(ctx: ModelContext, key: str) -> bool:
    """The page's switch for empty cells, shown only when the data has some: off
    (the default) explains the model's own prediction, empty cells being values it
    receives; on, they become missing features (the seeds' masks)."""
    if not bool(ctx.X.isna().to_numpy().any()):
        return False
    return st.toggle("Treat empty cells as missing features", **state.bind(key, False, options=(True, False)),
                     help="Off: an empty cell is a value the model receives (an imputer fills it, "
                          "HistGradientBoosting routes it) and its own prediction is explained. On: empty "
                          "cells leave the game like features you mark missing, get exactly 0, and the "
                          "prediction explained is the one with them averaged out.")


def empty_cells_caption(ctx: ModelContext, res, row: int, chosen: bool) -> None:
    """Say how this row's empty cells were explained, and which prediction is the model's."""
    blanks = [str(c) for c in ctx.X.columns if pd.isna(ctx.X.iloc[row][c])]
    if not blanks:
        return
    names = ", ".join(md(c) for c in blanks[:8]) + (" …" if len(blanks) > 8 else "")
    if res.params.get("nan_is_missing"):
        why = "as you chose" if chosen else "because this model cannot take empty cells"
        st.caption(f"Empty cells of row {row} ({names}) are treated as missing features, {why}: the prediction "
                   "explained averages them out, and the model's own prediction is the one marked *model*.")
    else:
        st.caption(f"Empty cells of row {row} ({names}) are values the model receives: the prediction explained "
                   "is the model's own. Switch on *Treat empty cells as missing features* to explain them as masks.")


def every_row_switch(what: str, n_rows: int, key: str, seconds_left, rows_done: int = 0, *, help: str) -> bool:
    """A switch for ``what`` on every row of a large table; while it is off, a caption under it with
    the time the rows left take (``seconds_left()``, called only then) and the rows already done. The
    time is not in the switch's label: a label is drawn before the work it announces, and would still
    say "about 2 min" beside the finished chart."""
    on = st.toggle(f"{what} of every row ({n_rows:,})", help=help, **state.bind(key, False, options=(True, False)))
    if not on:
        try:
            left = seconds_left()
        except Exception:  # noqa: BLE001 - the computation itself will say what is wrong
            left = 0.0
        if left >= 1 and 0 < rows_done < n_rows:
            st.caption(f"{rows_done:,} of the {n_rows:,} rows are done (kept from a Stop); the rest take about "
                       f"{state.fmt_seconds(left)}.")
        elif left >= 1:
            st.caption(f"Every row takes about {state.fmt_seconds(left)}.")
    return on


def compared_segment(ctx: ModelContext):
    """The sidebar's segment when it can be compared with the rest, else None.

    When a segment is chosen but cannot be compared (too few rows in it or in the
    rest, or it does not apply to this model and data), says why with ``st.info``
    and returns None: the page then draws its all-rows view.
    """
    try:
        active = active_segment(ctx)
    except ExplainerError as exc:
        st.info(md(str(exc)), icon=":material/info:")
        return None
    if active is not None and active.problem:
        st.info(f"{md(active.problem)} The page shows every row.", icon=":material/info:")
        return None
    return active


def segment_picker(ctx: ModelContext) -> None:
    """The sidebar's "Compare a segment" picker, with the segment's rule and size."""
    segments = saved_segments()
    if not segments:
        return
    names = [NO_SEGMENT] + [s.name for s in segments]
    st.selectbox("Compare a segment", names,
                 help="Pages show this segment beside the rest of the rows. Define segments on the Segments page.",
                 **state.bind(SEGMENT_ON, NO_SEGMENT, options=names, on_change=segments_to_url))
    try:
        active = active_segment(ctx)
    except ExplainerError as exc:
        st.caption(md(str(exc)))
        return
    if active is not None:
        n = int(active.mask.sum())
        st.caption(f"{md(active.segment.describe())}: {n:,} of {len(active.mask):,} rows")


def threshold_slider(container=st) -> float:
    """The Quality page's slider, bound to the kept threshold (the URL's too)."""
    container.slider("Threshold", 0.0, 1.0, step=THRESHOLD_STEP, format="%.2f",
                     help="A row is predicted the chosen class when its probability of that class is at "
                          "least this. The confusion matrix and the metrics follow it; the What if? page "
                          "gives its verdict at this threshold too.",
                     **state.bind(THRESHOLD_WIDGET, DEFAULT_THRESHOLD, valid=valid_threshold))
    return threshold()


def share_box(ctx: ModelContext) -> None:
    """The sidebar's word on links: what this page's address opens for someone else, and, for
    the uploader of a shared upload, the button that deletes it from the server."""
    from dashboard.state import uploads

    if ctx.name != state.UPLOADED:
        st.caption("The address bar's link opens this view (page, model, controls, segments) for anyone "
                   "who can reach this server.")
        return
    up = st.session_state.get(state.UPLOAD) or {}
    if not up.get("ws"):
        st.caption("This upload lives in your browser session only: a link to this page opens a demo for others.")
        return
    st.caption("The address bar's link opens this view, with your uploaded model and data, for anyone you send "
               "it to; without the link nobody can find it.")
    if uploads.owns_shared_upload():
        st.button("Delete the shared upload", key="ws_delete", icon=":material/delete:", on_click=uploads.on_delete_shared,
                  help="Removes the model and data files from the server: the link opens nothing any more.")
        with st.expander("Your link to manage it"):
            st.caption("Keep this link for yourself: it opens the upload with the right to delete it (after a "
                       "reload too). Send the address bar's link to others, not this one.")
            st.code(uploads.manage_link(), language=None, wrap_lines=True)
