"""Mean absolute SHAP value of each feature, from any SHAP result."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import InvalidDataError, param_error
from .result import ImportanceResult, make_result

__all__ = ["shap_importance"]


def shap_importance(shap_result, *, class_index: int | None = None) -> ImportanceResult:
    """Mean absolute SHAP value of each feature.

    Parameters
    ----------
    shap_result : ShapResult or any object with ``values``, ``feature_names``
        (and ``output_names`` for several outputs)
        ``values`` of shape (n_rows, n_features) or (n_rows, n_features, n_outputs).
    class_index : int, default=None
        For several outputs: use only this output. None averages |phi| over the
        outputs (per-output means are kept in ``by_output``).

    Returns
    -------
    ImportanceResult
        ``raw`` has shape (n_features, n_rows): |phi| of each row.
    """
    func = "shap_importance"
    for attr in ("values", "feature_names"):
        if not hasattr(shap_result, attr):
            raise InvalidDataError(
                f"{func} needs a ShapResult (an object with 'values' and 'feature_names'); "
                f"a {type(shap_result).__name__} has no {attr!r}."
            )
    vals = np.asarray(shap_result.values, dtype=float)
    names = [str(f) for f in shap_result.feature_names]
    if vals.ndim not in (2, 3) or vals.shape[1] != len(names) or vals.shape[0] == 0:
        raise InvalidDataError(
            f"SHAP values must have shape (n_rows, {len(names)}) or (n_rows, {len(names)}, "
            f"n_outputs) with n_rows >= 1; got {vals.shape}."
        )
    absv = np.abs(vals)
    by_output = None
    params: dict[str, Any] = {"method": getattr(shap_result, "method", None), "n_rows": vals.shape[0]}
    if vals.ndim == 3:
        k = vals.shape[2]
        outs = list(getattr(shap_result, "output_names", None) or [f"output {i}" for i in range(k)])
        by_output = pd.DataFrame(absv.mean(axis=0), index=pd.Index(names, name="feature"),
                                 columns=[str(o) for o in outs])
        if class_index is not None:
            if isinstance(class_index, bool) or not isinstance(class_index, (int, np.integer)) \
                    or not 0 <= class_index < k:
                raise param_error("class_index", func, f"None or an int in [0, {k - 1}]", class_index)
            absv = absv[:, :, class_index]
            params["class"] = str(outs[class_index])
        else:
            absv = absv.mean(axis=2)
    elif class_index is not None:
        raise param_error("class_index", func, "None for single-output SHAP values", class_index)
    params["class_index"] = class_index
    desc = "Mean |SHAP value|: the average size of each feature's contribution to a prediction."
    return make_result(names, absv.T, "shap", params, desc, by_output=by_output)
