"""Segments: named groups of rows stated as rules, and the rules where a model fails most."""
from ._conditions import *  # noqa: F403
from ._conditions import (  # noqa: F401
    _MAX_JSON_DEPTH,
    MAX_CONDITIONS,
    MAX_FEATURE_CHARS,
    MAX_NAME_CHARS,
    MAX_VALUES,
    MIN_SPLIT_GAIN,
    __all__,
    _condition_from_json,
    _error_tree,
    _json_depth,
    json,
)
