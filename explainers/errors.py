"""Exceptions raised by :mod:`explainers`.

Every bad input raises :class:`ExplainerError` (a :class:`ValueError`) or a
subclass, with a message that says what is wrong and how to fix it, so callers
that already catch ``ValueError`` keep working.
"""


class ExplainerError(ValueError):
    """Base class of every error raised for bad input."""


class InvalidModelError(ExplainerError):
    """The model is not usable: not fitted, no predict method, wrong kind."""


class UnsafeModelError(InvalidModelError):
    """Loading the model file would run code or instantiate unreviewed types."""


class InvalidDataError(ExplainerError):
    """The data file or array cannot be used with the model."""


class InvalidFeatureError(ExplainerError):
    """A feature name or index does not exist or cannot be used here."""


class InvalidParameterError(ExplainerError):
    """A parameter value is out of range or of the wrong type."""


class OutOfReachError(ExplainerError):
    """The exact answer asked for costs more than the limit allows (the message says which
    question is exact and affordable instead); never answered by an estimate in its place.
    ``reason`` is the message without that advice (for a caller that acts on it itself)."""

    def __init__(self, reason: str, advice: str = ""):
        super().__init__(f"{reason} {advice}".strip())
        self.reason = reason


def param_error(name: str, func: str, expected: str, got) -> InvalidParameterError:
    """Build the one message template used for parameter errors.

    ``The 'grid_resolution' parameter of partial_dependence must be an int >= 2. Got 1 instead.``
    """
    return InvalidParameterError(
        f"The {name!r} parameter of {func} must be {expected}. Got {shown(got)} instead."
    )


def shown(value) -> str:
    """A value as a message prints it: ``repr``, but a numpy number as the number it is
    (``7.0``, not ``np.float64(7.0)``), and a long text cut."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a core dependency
        np = None
    if np is not None and isinstance(value, np.generic):
        value = value.item()
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."
