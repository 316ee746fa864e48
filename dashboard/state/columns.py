"""The data's columns as the pickers offer them (What-if and Segments pages)."""
from __future__ import annotations

from .cache import result_cache
from .context import ModelContext


def category_options(ctx: ModelContext, column: str) -> list:
    """A categorical column's values for a picker: the model's own categories first, in
    the model's order (the same for CSV and Parquet data), then values only the data has."""
    from explainers.io.data import category_order

    order = result_cache().get_or_compute(("category_order", ctx.model_key, ctx.data_key),
                                          lambda: category_order(ctx.model, list(ctx.X.columns)))
    present = list(ctx.X[column].dropna().unique())
    known = order.get(str(column))
    if not known:
        return present
    rank = {v: i for i, v in enumerate(known)}
    rank.update({str(v): i for i, v in enumerate(known) if str(v) not in rank})
    return sorted(present, key=lambda v: rank.get(v, rank.get(str(v), len(known))))
