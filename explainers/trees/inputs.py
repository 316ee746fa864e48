"""Values as the trees compare them: rows of a frame (:func:`tree_inputs`) and a target
feature's grid (:func:`grid_codes`, partial dependence's grids go down the trees as inputs do).

Kept apart from :mod:`.walks`, which :mod:`.ensemble` imports for its predict: the grid
encoding reads :func:`.ensemble.encode_categories`, and the walks must not import back.
Tree SHAP values and interactions both read their rows through :func:`tree_inputs`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InvalidDataError
from .ensemble import TreeEnsemble, encode_categories

__all__ = ["tree_inputs", "grid_codes"]


def tree_inputs(ens: TreeEnsemble, frame: pd.DataFrame, what: str) -> np.ndarray:
    """The rows as the trees compare them: numbers, categorical columns as the
    model's category codes (where it knows its categories)."""
    try:
        if any(c is not None for c in ens.categories):
            return ens.prepare_inputs(frame)
        return ens.prepare_inputs(frame.to_numpy(dtype=float))
    except (TypeError, ValueError):
        bad = [c for j, (c, t) in enumerate(frame.dtypes.items())
               if not pd.api.types.is_numeric_dtype(t) and ens.categories[j] is None]
        raise InvalidDataError(
            f"{what} has non-numeric columns ({', '.join(map(str, bad[:5]))}); this model's "
            "trees take numbers there. Encode them first (the model was fitted on numbers)."
        ) from None


def grid_codes(ens, f: int, grid) -> np.ndarray:
    """A target feature's grid as the trees compare it: category codes for a
    categorical column with known categories, rounded through float32 where the
    model compares float32 inputs."""
    cats = ens.categories[f] if 0 <= f < len(ens.categories) else None
    if cats is not None:
        g = encode_categories(pd.DataFrame({0: list(grid)}), (cats,), ens.numeric_codes)[:, 0]
    else:
        g = np.asarray(grid, dtype=np.float64)
    if ens.float32_inputs:
        with np.errstate(over="ignore"):
            g = g.astype(np.float32).astype(np.float64)
    g = ens.as_missing(g)
    if ens.truncate_codes and f in ens.code_columns():
        g = np.trunc(g)
    return g
