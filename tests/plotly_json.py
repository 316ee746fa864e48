"""Read Plotly figure JSON as AppTest sees it (plotly>=6 packs arrays as base64)."""
import base64
import json

import numpy as np


def array(value) -> np.ndarray:
    """A trace field as an ndarray, whether a list or a packed {'dtype', 'bdata'} dict."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if shape:
            dims = [int(s) for s in str(shape).split(",")] if isinstance(shape, str) else list(shape)
            arr = arr.reshape(dims)
        return arr
    if isinstance(value, list) and value and isinstance(value[0], dict) and "bdata" in value[0]:
        return np.array([array(v) for v in value])
    return np.asarray(value, dtype=object if value and isinstance(value[0], str) else None)


def figures(at) -> list[dict]:
    """Every Plotly figure on an AppTest page, as dicts."""
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
