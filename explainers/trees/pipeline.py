"""Pipelines whose preprocessing folds into their final tree model (placeholder: no pipeline folds yet)."""
from __future__ import annotations


def is_foldable_pipeline(model) -> bool:
    return False


def flatten_pipeline(model):  # pragma: no cover - nothing is accepted yet
    raise NotImplementedError
