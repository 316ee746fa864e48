"""Segments: named groups of rows stated as rules, and the rules where a model fails most.

A :class:`Segment` is a name and a conjunction of conditions:

- :class:`Range` — ``lo <= x < hi`` on a numeric column (either end open);
- :class:`Categories` — the value is one of a set (text, pandas categories, numbers, booleans);
- :class:`Empty` — the cell is empty (or, with ``empty=False``, not empty);
- :class:`PredictedClass` — the classifier's predicted label is one of a set;
- :class:`ErrorBand` — ``lo <= error < hi``, the row's error against its true value
  (absolute error for regressors; ``1 - p(true class)`` or 0/1 misclassification for
  classifiers). It needs the target.

An empty cell never matches a range or a set of values unless the condition says
``include_empty=True``. ``Segment.mask(model, X, y)`` gives the rows; ``describe()``
the readable rule (``"age ≥ 40 and town in {Busan, Daegu}"``); ``to_token()`` and
:meth:`Segment.from_token` a compact URL-safe string, validated on parse, so the
dashboard keeps segments in the URL. The token is canonical (the same segment always
gives the same token), so it also serves as the segment's cache key.

:func:`propose_segments` fits a shallow decision tree to the per-row error and states
its leaves as segments on the original columns and values, with their size and
error against the rest. :func:`split_rows` and :func:`too_small` are what a page
needs to compare a segment with the rest.

The package's modules: ``_conditions`` (the conditions, :class:`Segment` and its token),
``_errors`` (:func:`row_errors`), ``_proposals`` (the error tree), ``_masks`` (segment vs
rest), and ``_common`` (the bounds, value checks and formatting they share).
"""
from ._common import (  # noqa: F401 (the bounds, read as attributes of the package)
    ERROR_KINDS,
    MAX_CONDITIONS,
    MAX_FEATURE_CHARS,
    MAX_NAME_CHARS,
    MAX_TOKEN_CHARS,
    MAX_VALUES,
)
from ._conditions import Categories, Condition, Empty, ErrorBand, PredictedClass, Range, Segment
from ._errors import row_errors
from ._masks import split_rows, too_small
from ._proposals import MIN_SPLIT_GAIN, ProposedSegment, propose_segments  # noqa: F401

# private names the tests read, kept where they were before the package was split
from ._conditions import _MAX_JSON_DEPTH, _condition_from_json, _json_depth  # noqa: F401
from ._proposals import _error_tree  # noqa: F401

__all__ = [
    "Range",
    "Categories",
    "Empty",
    "PredictedClass",
    "ErrorBand",
    "Condition",
    "Segment",
    "ProposedSegment",
    "ERROR_KINDS",
    "MAX_TOKEN_CHARS",
    "row_errors",
    "propose_segments",
    "split_rows",
    "too_small",
]
