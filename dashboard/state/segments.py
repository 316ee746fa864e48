"""Segments in the session: the named segments a user defined (or took from the proposals),
kept in the session and the URL, and the one the sidebar compares with the rest.

Pages ask :func:`active_segment` for the segment chosen in the sidebar; it gives the
segment, its rows (a bool mask over ``ctx.X``, cached per model, data and segment)
and, when the segment or the rest is too small to compare, the sentence to show
instead of drawing noise. The segments themselves are :class:`explainers.segments.Segment`
objects; the session keeps their tokens (``Segment.to_token``), which are also what
the URL holds (``?seg=TOKEN.TOKEN&segon=NAME``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from explainers import ExplainerError
from explainers.segments import Segment, too_small

from .cache import result_cache
from .context import ModelContext
from .session import set_value, value

__all__ = ["SEGMENTS", "SEGMENT_ON", "NO_SEGMENT", "MAX_SEGMENTS", "MIN_SEGMENT_ROWS", "ActiveSegment",
           "saved_segments", "add_segment", "remove_segment", "segment_mask", "active_segment",
           "segments_from_url", "segments_to_url"]

SEGMENTS = "segments"  # session: list of segment tokens, in the order they were added
SEGMENT_ON = "segment_on"  # sidebar selectbox: the compared segment's name, or NO_SEGMENT
NO_SEGMENT = "(all rows)"
MAX_SEGMENTS = 12
MIN_SEGMENT_ROWS = 20


@dataclass(frozen=True)
class ActiveSegment:
    """The segment a page compares with the rest of the rows.

    Attributes
    ----------
    segment : Segment
    mask : ndarray of bool, shape (len(ctx.X),)
        Its rows in the data as loaded.
    problem : str or None
        Why it cannot be compared (too few rows in it or in the rest), to show instead.
    """

    segment: Segment
    mask: np.ndarray
    problem: str | None

    @property
    def name(self) -> str:
        return self.segment.name

    @property
    def rows(self) -> np.ndarray:
        """Positions of the segment's rows."""
        return np.flatnonzero(self.mask)

    @property
    def rest(self) -> np.ndarray:
        """Positions of the other rows."""
        return np.flatnonzero(~self.mask)

    @property
    def key(self) -> str:
        """Part of every cache key of a segment-aware result."""
        return self.segment.key


def saved_segments() -> list[Segment]:
    """The session's segments, in the order they were added (unreadable tokens dropped)."""
    out = []
    for token in st.session_state.get(SEGMENTS, []):
        try:
            out.append(Segment.from_token(token))
        except ExplainerError:
            continue
    return out


def add_segment(segment: Segment) -> None:
    """Keep a segment in the session (one of the same name is replaced) and compare it."""
    kept = [s for s in saved_segments() if s.name != segment.name]
    if len(kept) >= MAX_SEGMENTS:
        raise ExplainerError(f"At most {MAX_SEGMENTS} segments are kept; remove one first.")
    st.session_state[SEGMENTS] = [s.to_token() for s in kept] + [segment.to_token()]
    set_value(SEGMENT_ON, segment.name)
    segments_to_url()


def remove_segment(name: str) -> None:
    st.session_state[SEGMENTS] = [s.to_token() for s in saved_segments() if s.name != name]
    if value(SEGMENT_ON) == name:
        set_value(SEGMENT_ON, NO_SEGMENT)
    segments_to_url()


def segments_to_url() -> None:
    """Keep the segments (and the compared one) in the URL, so a shared link reopens them."""
    tokens = list(st.session_state.get(SEGMENTS, []))
    on = value(SEGMENT_ON)
    for param, text in (("seg", ".".join(tokens) if tokens else None),
                        ("segon", on if on and on != NO_SEGMENT else None)):
        if text is None:
            st.query_params.pop(param, None)
        elif st.query_params.get(param) != text:  # unchanged: nothing sent to the browser
            st.query_params[param] = text


def segments_from_url() -> str | None:
    """On a session's first run: the URL's segments into the session. Returns the
    sentence to show when a segment of the link cannot be read (the others are kept)."""
    raw = st.query_params.get("seg")
    if not raw:
        return None
    tokens, problem = [], None
    for token in str(raw).split(".")[:MAX_SEGMENTS]:
        try:
            tokens.append(Segment.from_token(token).to_token())
        except ExplainerError as exc:
            problem = str(exc)
    st.session_state[SEGMENTS] = tokens
    on = st.query_params.get("segon")
    names = [Segment.from_token(t).name for t in tokens]
    set_value(SEGMENT_ON, on if on in names else NO_SEGMENT)
    return problem


def segment_mask(ctx: ModelContext, segment: Segment) -> np.ndarray:
    """The segment's rows in ``ctx.X`` (cached per model, data and segment)."""
    def compute():
        y = ctx.y if segment.needs_target else None
        if segment.needs_target and y is None:
            raise ExplainerError(f"The segment {segment.name!r} uses the error, which needs the target column: "
                                 "pick it on the Model page.")
        return np.asarray(segment.mask(ctx.model, ctx.X, y), dtype=bool)

    return result_cache().get_or_compute(("segment_mask", ctx.model_key, ctx.data_key, segment.key), compute).copy()


def active_segment(ctx: ModelContext) -> ActiveSegment | None:
    """The segment the sidebar compares with the rest; None when all rows are shown.

    Raises ExplainerError (in page words) when the segment cannot be applied to this
    model and data (a column it names is not there, it needs the target...).
    """
    name = value(SEGMENT_ON, NO_SEGMENT)
    if not name or name == NO_SEGMENT:
        return None
    for segment in saved_segments():
        if segment.name == name:
            mask = segment_mask(ctx, segment)
            return ActiveSegment(segment, mask, too_small(mask, MIN_SEGMENT_ROWS))
    return None
