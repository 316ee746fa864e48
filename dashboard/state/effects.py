"""The PDP page's cached computations: partial dependence and ICE, ALE, and partial
dependence over a segment's rows and the rest's.
"""
from __future__ import annotations

import numpy as np

from .cache import result_cache
from .context import ModelContext
from .outputs import effects_model, scale_key, scale_named
from .rows import view_rows


PDP_MAX_ROWS = 2_000  # rows behind a PDP/ICE on the page; a seeded sample above that


def pdp(ctx: ModelContext, features: tuple[str, ...], grid_resolution: int, percentiles: tuple[float, float],
        max_rows: int = PDP_MAX_ROWS):
    """Partial dependence (and ICE for one feature), cached per model, data and settings."""
    sample = max_rows if len(ctx.X) > max_rows else None
    kind = "both" if len(features) == 1 else "average"
    key = ("pdp", ctx.model_key, ctx.data_key, features, grid_resolution, percentiles, sample, scale_key(ctx))
    return result_cache().get_or_compute(
        key, lambda: _partial_dependence(ctx, features, grid_resolution, percentiles, kind, sample))


def _partial_dependence(ctx: ModelContext, features: tuple[str, ...], grid_resolution: int,
                        percentiles: tuple[float, float], kind: str, sample: int | None):
    """The pages' partial dependence: of the model on the sidebar's scale, seeded, named for the page."""
    from explainers.pdp import partial_dependence

    return scale_named(partial_dependence(
        effects_model(ctx), ctx.X, list(features), grid_resolution=grid_resolution, percentiles=percentiles,
        kind=kind, sample=sample, random_state=0,
    ), ctx)


def pdp_every_row(ctx: ModelContext, features: tuple[str, ...], grid_resolution: int,
                  percentiles: tuple[float, float], notice=None):
    """Partial dependence (the average alone, no ICE) over every row, on the grid :func:`pdp` uses
    (the grid is of every row whatever the sample); computed in a worker thread, ``notice(seconds)``
    showing that it runs and letting a Stop end the wait, and cached."""
    from .worker import in_worker

    return in_worker(("pdp_every", ctx.model_key, ctx.data_key, features, grid_resolution, percentiles, scale_key(ctx)),
                     lambda: _partial_dependence(ctx, features, grid_resolution, percentiles, "average", None), notice)


def pdp_every_row_seconds(ctx: ModelContext, sample) -> float:
    """Seconds the partial dependence of every row takes by brute force (``sample.method``, the page's
    result on a sample): every row predicted at each grid point (cell, for two features), by the
    predict's seconds per row. 0 for the tree walk, whose rows cost little (3-4 s a million rows for
    200 trees of depth 6, one feature or two)."""
    if sample.method != "brute":
        return 0.0
    from .costs import predict_seconds_per_row

    points = int(np.prod([len(g) for g in sample.grid]))
    return predict_seconds_per_row(ctx) * len(ctx.X) * points


#: rows behind an ALE curve: a seeded sample above that (view_rows: classes in proportion). ALE
#: predicts each row at its bin's two edges (four corners for two features): on a million rows
#: the Interactions page's second-order ALE alone took 10 s
ALE_MAX_ROWS = 50_000


def ale_rows(ctx: ModelContext, all_rows: bool = False) -> int:
    """The rows an ALE is computed on (``all_rows``: every row, as the user asked)."""
    return len(ctx.X) if all_rows else min(len(ctx.X), ALE_MAX_ROWS)


def ale_sampled(ctx: ModelContext) -> bool:
    """Whether the pages' ALE starts from a sample (the table is larger than ALE_MAX_ROWS)."""
    return len(ctx.X) > ALE_MAX_ROWS


def ale_caption(ctx: ModelContext, all_rows: bool = False) -> str | None:
    """What the pages say under an ALE computed on a sample (None: on every row)."""
    if all_rows and ale_sampled(ctx):
        return f"ALE on every one of the {len(ctx.X):,} rows."
    if not ale_sampled(ctx):
        return None
    return (f"ALE from a seeded sample of {ALE_MAX_ROWS:,} of the {len(ctx.X):,} rows "
            f"({'classes kept in proportion' if ctx.task != 'regression' and ctx.y is not None else 'drawn at random'}).")


def ale(ctx: ModelContext, feature, n_bins: int, all_rows: bool = False, notice=None):
    """ALE of one numeric feature (a name), or second-order ALE of two (a tuple), cached;
    on the seeded sample of :func:`ale_rows` rows, or on every row (``all_rows``: computed in
    a worker thread, ``notice(seconds)`` showing that it runs and letting a Stop end the wait)."""
    def compute():
        from explainers.ale import ale as ale_fn

        X = ctx.X if rows is None else ctx.X.iloc[rows]
        return scale_named(ale_fn(effects_model(ctx), X, list(feature) if isinstance(feature, tuple) else feature,
                                  n_bins=n_bins), ctx)

    n = ale_rows(ctx, all_rows)
    rows = None if n == len(ctx.X) else view_rows(ctx, n)
    key = ("ale", ctx.model_key, ctx.data_key, feature, n_bins, scale_key(ctx), n)
    if all_rows and ale_sampled(ctx):
        from .worker import in_worker

        return in_worker(key, compute, notice)
    return result_cache().get_or_compute(key, compute)


def pdp_by_segment(ctx: ModelContext, active, feature: str, grid_resolution: int,
                   percentiles: tuple[float, float], max_rows: int = PDP_MAX_ROWS):
    """Partial dependence of one feature over the segment's rows and over the rest's:
    ``(segment result, rest result)``, on the grid of every row (:func:`pdp`), so the two
    curves share their x values (a categorical feature: the categories each part has).

    Each part averages over its own rows (a seeded sample of ``max_rows`` above that),
    without ICE; cached per model, data, segment and settings.
    """
    base = pdp(ctx, (feature,), grid_resolution, percentiles, max_rows)
    categorical = base.feature_kinds[0] == "categorical"

    def part(rows: np.ndarray):
        from explainers.pdp import partial_dependence

        X = ctx.X.iloc[rows]
        grid = list(base.grid[0])
        if categorical:  # a category the part lacks has no rows to average there
            present = set(X[feature].dropna().tolist())
            grid = [v for v in grid if v in present]
        return scale_named(partial_dependence(
            effects_model(ctx), X, [feature], grid_resolution=grid_resolution, percentiles=percentiles,
            custom_values={feature: grid}, categorical_features=[feature] if categorical else [],
            kind="average", sample=max_rows if len(X) > max_rows else None, random_state=0), ctx)

    key = ("pdp_segment", ctx.model_key, ctx.data_key, active.key, feature, grid_resolution, percentiles, max_rows,
           scale_key(ctx))
    return result_cache().get_or_compute(key, lambda: (part(active.rows), part(active.rest)))
