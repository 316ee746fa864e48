"""Loading fitted models and data files safely, with fingerprints for caching.

- :mod:`.models`: :func:`load_model` (skops against a reviewed allow-list; pickles only
  when the operator trusts them; every model's trees validated before use);
- :mod:`.skops_archive`: sizes and object counts of a .skops archive, checked before
  skops reads it;
- :mod:`.data`: :func:`load_data` and :class:`Dataset` (CSV/Parquet checked against
  the model, within the limits of :mod:`explainers.limits`), :func:`peek_columns`;
- :mod:`._files`: paths, bytes or file objects in; :func:`fingerprint`.
"""
from ._files import fingerprint
from .data import (
    DATA_SUFFIXES,
    Dataset,
    categorical_features,
    check_parquet_limits,
    expected_features,
    load_data,
    peek_columns,
)
from .models import MODEL_SUFFIXES, SKOPS_ALLOWED_FUNCTIONS, SKOPS_ALLOWED_TYPES, load_model
from .skops_archive import check_skops_archive

__all__ = [
    "load_model",
    "load_data",
    "Dataset",
    "fingerprint",
    "SKOPS_ALLOWED_TYPES",
    "SKOPS_ALLOWED_FUNCTIONS",
    "MODEL_SUFFIXES",
    "DATA_SUFFIXES",
    "expected_features",
    "categorical_features",
    "peek_columns",
    "check_skops_archive",
    "check_parquet_limits",
]
