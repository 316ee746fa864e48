"""The cached computations of the Interactions page: SHAP interaction values and Friedman's H.

Keyed like the other pages' calls by the model and data fingerprints plus every setting
(rows, measure, features, class), in the process-wide
:func:`~dashboard.state.cache.result_cache`, so a progress bar can be passed in.

- :func:`interaction_method`: which SHAP interaction values this model gets (Tree
  SHAP, exact SHAP for a few features, or none: the H statistic only), and why
- :func:`shap_interactions`: SHAP interaction values of a seeded sample of rows
- :func:`h_pairs` / :func:`h_overall`: Friedman's H for pairs of features / per feature
- :func:`strongest_partner`: the feature that interacts most with a given one (for
  the SHAP page's dependence plot)
- :func:`report_section`: the interactions part of the HTML report
- :func:`interaction_error`: an exception as a sentence for the page (no code names)
"""
from __future__ import annotations

import re
import time

import numpy as np

from explainers import ExplainerError

from .cache import result_cache
from .context import ModelContext, error_message
from .outputs import class_index, effects_model, output_index, scale_key
from .rows import background, sample_rows

#: SHAP interaction values on the page: rows in the seeded sample by default (tree models)
SHAP_ROWS = 500
#: rows by default when the values come from the exact game (every coalition of every row)
EXACT_ROWS = 200
#: most features for exact SHAP interaction values (2**p coalitions per row)
EXACT_MAX_FEATURES = 10
#: background rows of the exact game
EXACT_BACKGROUND = 30
#: model evaluations (rows x 2**p x background) the exact game may spend: fewer rows above that
EXACT_EVAL_BUDGET = 4_000_000
#: rows behind Friedman's H (brute force costs about rows**2 predictions per pair)
H_ROWS = 300
#: features on the heatmap (the strongest by total interaction)
MAX_FEATURES = 12
#: the most features the user may ask the heatmap for (a matrix past it cannot be read)
MAX_PICK_FEATURES = 25
#: the page's measures
SHAP_MEASURE = "SHAP interaction"
H_MEASURE = "H statistic"
MEASURES = (SHAP_MEASURE, H_MEASURE)


# ------------------------------------------------------------------- method
def interaction_method(ctx: ModelContext) -> tuple[str | None, str]:
    """("tree" | "exact" | None, a sentence for the page saying why).

    Tree models get Tree SHAP (path-dependent, exact and fast); other models with at
    most :data:`EXACT_MAX_FEATURES` features the exact coalition game over a small
    background; the rest no SHAP interaction values (the page shows the H statistic).
    """

    p = ctx.X.shape[1]
    if p < 2:
        return None, (f"Interactions need at least two features; this model has {p}.")
    if ctx.description.tree:  # categorical columns included: the trees encode them
        return "tree", "tree SHAP (exact for tree models; path-dependent, no background needed)"
    if p <= EXACT_MAX_FEATURES:
        return "exact", (f"exact SHAP: every coalition of the {p} features, with a background of "
                         f"{EXACT_BACKGROUND} rows standing in for absent features")
    return None, (f"SHAP interaction values are computed for tree models, or for models with at most "
                  f"{EXACT_MAX_FEATURES} features; this model has {p}. The page shows Friedman's H "
                  "statistic instead.")


def shap_rows_used(ctx: ModelContext, method: str | None, n_rows: int) -> int:
    """Rows the SHAP interaction values are computed on: the sample asked for, all rows when there are
    fewer, and for the exact game no more than :data:`EXACT_EVAL_BUDGET` model evaluations allow."""
    n = min(int(n_rows), len(ctx.X))
    if method == "exact":
        per_row = 2 ** ctx.X.shape[1] * min(EXACT_BACKGROUND, len(ctx.X))
        n = min(n, max(20, EXACT_EVAL_BUDGET // per_row))
    return max(1, min(n, len(ctx.X)))


def _h_by_tree_walk(ctx: ModelContext) -> bool:
    """Whether Friedman's H takes the compiled tree walk here (else brute force): a tree
    model, or a pipeline that folds into its trees, on the data it takes."""
    from explainers.effects.hstat import tree_walk_applies

    return ctx.description.tree and tree_walk_applies(ctx.model, ctx.X)


def interaction_cost(ctx: ModelContext, measure: str, n_rows: int, k: int = MAX_FEATURES,
                     budget: float | None = None) -> tuple[float, int]:
    """(estimated seconds, rows that fit in ``budget``: SLOW_VIEW_S, about 10 s) of the page's computation.

    The page computes SHAP interaction values whichever measure it shows (the table has
    both) and Friedman's H of the heatmap's pairs. SHAP interactions follow a line measured on
    two probes (:func:`tree_interaction_line`, :func:`exact_interaction_line`; exact ones whose
    probes would be slow: every coalition of every row over the background, predicted);
    brute-force H predicts each row once per distinct value of each feature and per distinct
    value pair of each pair (counted on the sample itself, so a column of few values costs what
    it costs), at the seconds per prediction of two probes where they are cheap
    (:func:`h_brute_line`), else the predict's; H by the tree walk follows the rows on two probes
    (:func:`h_walk_seconds`).
    """
    from .costs import SLOW_VIEW_S, most_within, predict_seconds_per_row

    budget = SLOW_VIEW_S if budget is None else float(budget)
    method, _ = interaction_method(ctx)
    brute_h = not _h_by_tree_walk(ctx)
    exact, tree = method == "exact", method == "tree"
    per_pred = predict_seconds_per_row(ctx) if brute_h else 0.0
    fixed, per_row = shap_interaction_line(ctx, method) if (tree or exact) else (0.0, 0.0)
    h_overall_too = len(ctx.X.columns) > k and (measure != SHAP_MEASURE or method is None)
    h_fixed, h_per_pred = (h_brute_line(ctx, h_overall_too, k) or (0.0, per_pred)) if brute_h else (0.0, 0.0)

    def cost(n: int) -> float:
        n_h = h_rows_used(ctx, n)
        h = (h_fixed + h_predictions(ctx, n_h, h_overall_too, k) * h_per_pred if brute_h
             else h_walk_seconds(ctx, n_h, h_overall_too, k))
        shap_rows = shap_rows_used(ctx, method, n) if (exact or tree) else 0
        return h + ((fixed + per_row * shap_rows) if shap_rows else 0.0)

    # the most rows whose cost fits the budget (the cost grows with the rows: nested samples)
    return cost(int(n_rows)), max(20, most_within(cost, 2, max(2, min(int(n_rows), len(ctx.X))), budget))


def default_rows(ctx: ModelContext, k: int = MAX_FEATURES) -> tuple[int, int]:
    """(rows the page starts with, the full default): the full default (SHAP_ROWS for tree
    SHAP, EXACT_ROWS for exact, H_ROWS for H alone) where it fits in about START_VIEW_S,
    else as many rows as do (in steps of 10, at least 20); more are offered."""
    from .costs import START_VIEW_S

    method, _ = interaction_method(ctx)
    full = min({"tree": SHAP_ROWS, "exact": EXACT_ROWS}.get(method, H_ROWS), max(2, min(len(ctx.X), 5_000)))
    measure = MEASURES[0] if method is not None else H_MEASURE
    _, fits = interaction_cost(ctx, measure, full, k, budget=START_VIEW_S)
    start = full if fits >= full else max(min(20, full), fits // 10 * 10)
    return int(start), int(full)


#: rows of the two probes of H by the tree walk (the larger grows: :func:`_h_probes`)
H_PROBE_ROWS = (20, 60)
#: a probe of H quicker than this runs twice, the faster run counting
QUICK_PROBE_S = 0.2


def h_walk_seconds(ctx: ModelContext, n: int, overall_too: bool, k: int = MAX_FEATURES) -> float:
    """Seconds of H by the tree walk on ``n`` rows: the pairs of ``k`` features (for a wide model,
    the ``k`` with the most distinct values: an upper bound), and every feature's overall H
    when the features are ranked by it. The line through two probes (its slope at least 0):
    much of the walk's time does not grow with the rows (the grids are bounded by the trees'
    thresholds; each feature and pair costs a walk of every tree)."""
    t1, t2, n1, n2, _, _ = _h_probes(ctx, overall_too, k)
    slope = max(0.0, (t2 - t1) / (n2 - n1)) if n2 > n1 else 0.0
    return float(max(t2, 0.0) + slope * max(0, n - n2))


def h_brute_line(ctx: ModelContext, overall_too: bool, k: int = MAX_FEATURES) -> tuple[float, float] | None:
    """(fixed seconds, seconds per prediction) of brute-force H, from the two probes of the tree
    walk's line with their predictions counted, where the model's predict makes them cheap (at
    most LINE_PROBE_BUDGET_S); else None (the predictions times the predict's seconds per row).
    On a fast model the predict's own seconds miss most of H's time (frames built per feature
    and pair: 0.3x of the measured time on the diabetes ridge model)."""
    from .costs import LINE_PROBE_BUDGET_S, predict_seconds_per_row

    rows = sample_rows(ctx, H_PROBE_ROWS[1])
    feats = _h_probe_features(rows, k)
    if 2 * brute_probe_predictions(rows, feats, overall_too) * predict_seconds_per_row(ctx) > LINE_PROBE_BUDGET_S:
        return None
    t1, t2, _, _, p1, p2 = _h_probes(ctx, overall_too, k, count=True)
    if p2 <= p1:
        return None
    per_pred = max(0.0, (t2 - t1) / (p2 - p1))
    return max(0.0, t1 - per_pred * p1), per_pred


def brute_probe_predictions(rows, feats: list[str], overall_too: bool) -> int:
    """Predictions brute-force H makes on ``rows`` for the pairs of ``feats`` (and, with
    ``overall_too``, every feature's overall H)."""
    from explainers.effects.hstat import brute_force_predictions

    cols = [str(c) for c in rows.columns]
    count = brute_force_predictions(rows, feats)
    if overall_too:
        count += brute_force_predictions(rows, cols, pairs=[(cols[0], cols[1])])
    return int(count)


def _h_probe_features(rows, k: int) -> list[str]:
    cols = [str(c) for c in rows.columns]
    distinct = rows.nunique(dropna=False).to_numpy()
    return cols if len(cols) <= k else [cols[i] for i in np.argsort(-distinct, kind="stable")[:k]]


def _h_probes(ctx: ModelContext, overall_too: bool, k: int, count: bool = False):
    """(t1, t2, n1, n2, p1, p2): seconds of H on the first H_PROBE_ROWS[0] rows of a seeded sample
    and on all H_PROBE_ROWS[1] of them (after a 4-row warm-up: kernels load; without ``count``,
    the tree walk's probes, the larger grows fourfold up to H_ROWS while it is quick and within
    PROBE_SPREAD_S of the smaller: on a slower walk those milliseconds are a small share), and,
    with ``count``, the predictions brute force makes on each (else 0), cached."""
    from .costs import PROBE_SPREAD_S
    from .warmup import wait_for_warmup

    def probe():
        from explainers.interactions import h_statistic

        wait_for_warmup()
        rows = sample_rows(ctx, H_PROBE_ROWS[1])
        cols = [str(c) for c in rows.columns]
        feats = _h_probe_features(rows, k)
        model, ci = effects_model(ctx), h_class(ctx)

        def once(part) -> float:
            t0 = time.perf_counter()
            h_statistic(model, part, features=feats, sample=None, class_index=ci)
            if overall_too:
                h_statistic(model, part, pairs=[(cols[0], cols[1])], features=cols, sample=None, class_index=ci)
            return time.perf_counter() - t0

        def took(part) -> float:  # a quick run twice, the faster (a shared machine only slows a run)
            t = once(part)
            return min(t, once(part)) if t < QUICK_PROBE_S else t

        try:
            n1 = min(H_PROBE_ROWS[0], len(rows))
            once(rows.iloc[:min(4, len(rows))])  # kernels load
            t1, t2 = took(rows.iloc[:n1]), took(rows)
            # the walk's rows cost little against its grids: more rows until their cost shows (else
            # a few milliseconds of noise over 40 rows made a slope that tripled 500 rows' estimate)
            while (not count and t2 - t1 < PROBE_SPREAD_S and t2 < QUICK_PROBE_S
                   and len(rows) < min(len(ctx.X), H_ROWS)):
                rows = sample_rows(ctx, min(len(ctx.X), H_ROWS, 4 * len(rows)))
                t2 = took(rows)
            n2 = len(rows)
        except Exception:  # noqa: BLE001 - the computation itself will say what is wrong
            return 0.0, 0.0, 1, 1, 0, 0
        if not count:
            return t1, t2, n1, n2, 0, 0
        return (t1, t2, n1, n2, brute_probe_predictions(rows.iloc[:n1], feats, overall_too),
                brute_probe_predictions(rows, feats, overall_too))

    return result_cache().get_or_compute(("ia_h_line", ctx.model_key, ctx.data_key, bool(overall_too), int(k),
                                          bool(count), scale_key(ctx)), probe)


def exact_interaction_line(ctx: ModelContext) -> tuple[float, float] | None:
    """(fixed seconds, seconds per row) of exact SHAP interaction values from two probes, where the
    probes' rows of every coalition over the background are cheap by the model's predict (at most
    LINE_PROBE_BUDGET_S); else None (the coalitions times the predict's seconds per row, which on
    a fast model miss the game's own work: 0.2x of the measured time on the diabetes ridge model)."""
    from .costs import LINE_PROBE_BUDGET_S, TREE_PROBE_ROWS, predict_seconds_per_row, probe_line

    per_row = 2 ** ctx.X.shape[1] * min(EXACT_BACKGROUND, len(ctx.X)) * predict_seconds_per_row(ctx)
    if per_row * (1 + 2 * sum(TREE_PROBE_ROWS)) > LINE_PROBE_BUDGET_S:
        return None

    def run(rows):
        interactions_of(interaction_explainer(ctx, "exact"), "exact", rows)

    return probe_line(ctx, ("interactions_exact_line", ctx.model_key, ctx.data_key), run)


def shap_interaction_line(ctx: ModelContext, method: str) -> tuple[float, float]:
    """(fixed seconds, seconds per row) of SHAP interaction values by ``method`` ("tree" or
    "exact"): the line of two probes, or for an exact game whose probes would be slow, every
    coalition of a row over the background times the predict's seconds per row."""
    if method == "tree":
        return tree_interaction_line(ctx)
    from .costs import predict_seconds_per_row

    return exact_interaction_line(ctx) or (
        0.0, 2 ** ctx.X.shape[1] * min(EXACT_BACKGROUND, len(ctx.X)) * predict_seconds_per_row(ctx))


def tree_interaction_line(ctx: ModelContext) -> tuple[float, float]:
    """(fixed seconds, seconds per row) of tree SHAP interaction values, from two probes."""
    from .costs import probe_line

    def run(rows):
        interactions_of(interaction_explainer(ctx, "tree"), "tree", rows)

    return probe_line(ctx, ("interactions_line", ctx.model_key, ctx.data_key), run)


def interaction_explainer(ctx: ModelContext, method: str):
    """The explainer of the page's SHAP interaction values by ``method``: Tree SHAP ("tree"), or
    the exact game over :data:`EXACT_BACKGROUND` background rows ("exact")."""
    from explainers.shap import ExactShap, TreeShap

    return TreeShap(ctx.model) if method == "tree" else ExactShap(ctx.model, background(ctx, EXACT_BACKGROUND))


def interactions_of(explainer, method: str, rows, progress=None):
    """SHAP interaction values of ``rows`` by :func:`interaction_explainer`'s explainer (Tree SHAP
    with empty cells as the model takes them)."""
    if method == "tree":
        return explainer.interactions(rows, nan_is_missing="auto", progress=progress)
    return explainer.interactions(rows, progress=progress)


def h_predictions(ctx: ModelContext, n: int, overall_too: bool, k: int = MAX_FEATURES) -> int:
    """Model predictions brute-force H makes on the page's sample of ``n`` rows: the pairs of
    the heatmap's ``k`` features (for a wide model, the ``k`` with the most distinct values: an
    upper bound), and, when the features are ranked by it, every feature's overall H."""
    key = ("ia_h_predictions", ctx.model_key, ctx.data_key, int(n), bool(overall_too), int(k))
    return int(result_cache().get_or_compute(key, lambda: _count_h_predictions(ctx, n, overall_too, k)))


def _count_h_predictions(ctx: ModelContext, n: int, overall_too: bool, k: int = MAX_FEATURES) -> int:
    rows = sample_rows(ctx, n)
    # a model of at most k features ranks none by overall H: its pairs are every pair
    return brute_probe_predictions(rows, _h_probe_features(rows, k), overall_too and rows.shape[1] > k)


def h_rows_used(ctx: ModelContext, n_rows: int) -> int:
    """Rows behind the H statistic: the sample asked for, at most :data:`H_ROWS`."""
    return max(2, min(int(n_rows), H_ROWS, len(ctx.X)))


def h_class(ctx: ModelContext) -> int | None:
    """The sidebar's class as the H statistic's class_index (None for regression)."""
    from .outputs import output_choices

    return None if output_choices(ctx) is None else class_index(ctx)


# ---------------------------------------------------------- cached results
def shap_interactions(ctx: ModelContext, n_rows: int = SHAP_ROWS, progress=None):
    """SHAP interaction values (a ``ShapInteractionResult``) of a seeded sample of rows.

    Every output (class) is kept: pick one with ``result.select(class_index)``.
    Raises ExplainerError when the model gets no SHAP interaction values.
    """
    method, reason = interaction_method(ctx)
    if method is None:
        raise ExplainerError(reason)
    n = shap_rows_used(ctx, method, n_rows)

    def compute():
        return interactions_of(interaction_explainer(ctx, method), method, sample_rows(ctx, n), progress)

    return result_cache().get_or_compute(("interactions_shap", ctx.model_key, ctx.data_key, n, method), compute)


def h_pairs(ctx: ModelContext, features: tuple[str, ...], n_rows: int = H_ROWS):
    """Friedman's H of every pair of ``features`` (and each one's overall H), for the sidebar's class."""
    n = h_rows_used(ctx, n_rows)
    ci = h_class(ctx)

    def compute():
        from explainers.interactions import h_statistic

        return h_statistic(effects_model(ctx), sample_rows(ctx, n), features=list(features), sample=None, class_index=ci)

    return result_cache().get_or_compute(("interactions_h", ctx.model_key, ctx.data_key, n, ci, tuple(features), scale_key(ctx)),
                                         compute)


def h_overall(ctx: ModelContext, n_rows: int = H_ROWS):
    """Friedman's overall H of every feature (how much of it is interaction with any other), for ranking.

    Its ``pairs`` hold one pair only (the first two features): use :func:`h_pairs` for pairs.
    """
    n = h_rows_used(ctx, n_rows)
    ci = h_class(ctx)
    cols = list(ctx.X.columns)

    def compute():
        from explainers.interactions import h_statistic

        return h_statistic(effects_model(ctx), sample_rows(ctx, n), pairs=[(cols[0], cols[1])], features=cols,
                           sample=None, class_index=ci)

    return result_cache().get_or_compute(("interactions_h_overall", ctx.model_key, ctx.data_key, n, ci, scale_key(ctx)), compute)


def interaction_class(res, ctx: ModelContext) -> int | None:
    """The sidebar's class as an output index of a SHAP interaction result (None for one output)."""
    return output_index(ctx, None if res.values.ndim == 3 else res.values.shape[3])


def heatmap_features(ctx: ModelContext, measure: str, shap_res=None, n_rows: int = H_ROWS,
                     k: int = MAX_FEATURES) -> tuple[list[str], object]:
    """(the heatmap's features, strongest first; Friedman's H of their pairs), cached.

    SHAP measure (``shap_res`` from :func:`shap_interactions`): the ``k`` (default :data:`MAX_FEATURES`)
    features with the largest total SHAP interaction. H measure: those with the
    largest overall H (all of them when there are no more). H is computed for the
    pairs of the chosen features either way (the page's table shows both measures).
    """
    from dashboard.figures.interactions import interaction_strength, top_features

    cols = list(ctx.X.columns)
    if measure == SHAP_MEASURE and shap_res is not None:
        feats = shap_heatmap_features(ctx, shap_res, k)
    elif len(cols) <= k:
        feats = cols
    else:
        overall = h_overall(ctx, n_rows)
        order = np.argsort(-np.nan_to_num(overall.overall), kind="stable")[:k]
        feats = [overall.feature_names[i] for i in order]
    h_res = h_pairs(ctx, tuple(feats), n_rows)
    if measure != SHAP_MEASURE or shap_res is None:
        feats = top_features(interaction_strength(h_res), k)
    return feats, h_res


def shap_heatmap_features(ctx: ModelContext, shap_res, k: int = MAX_FEATURES) -> list[str]:
    """The ``k`` features with the largest total SHAP interaction (the SHAP measure's heatmap,
    which is drawn before Friedman's H of its pairs is computed)."""
    from dashboard.figures.interactions import interaction_strength, top_features

    return top_features(interaction_strength(shap_res, class_index=interaction_class(shap_res, ctx)), k)


def strongest_partner(ctx: ModelContext, feature: str, n_rows: int = SHAP_ROWS) -> str | None:
    """The feature whose interaction with ``feature`` is strongest, for the sidebar's class.

    By mean |SHAP interaction| where the model gets SHAP interaction values, else by
    Friedman's H of ``feature`` with each other feature. None when every interaction is 0
    (an additive model) or there is no other feature. Cached like the page's results.
    """
    from dashboard.figures.interactions import interaction_strength

    cols = list(ctx.X.columns)
    if feature not in cols or len(cols) < 2:
        return None
    method, _ = interaction_method(ctx)
    if method is not None:
        res = shap_interactions(ctx, n_rows)
        strength = interaction_strength(res, class_index=interaction_class(res, ctx))
        scale = _shap_scale(res, interaction_class(res, ctx))
    else:
        n = h_rows_used(ctx, n_rows)
        ci = h_class(ctx)

        def compute():
            from explainers.interactions import h_statistic

            return h_statistic(effects_model(ctx), sample_rows(ctx, n), pairs=[(feature, c) for c in cols if c != feature],
                               sample=None, class_index=ci)

        res = result_cache().get_or_compute(
            ("interactions_h_partner", ctx.model_key, ctx.data_key, n, ci, feature, scale_key(ctx)), compute)
        strength = interaction_strength(res)
        scale = 1.0
    row = strength.loc[feature].drop(feature).astype(float)
    if row.isna().all() or not (row.max() > 1e-9 * scale):
        return None
    return str(row.idxmax())


def _shap_scale(res, ci) -> float:
    """Mean |SHAP value| of the result's output: the scale an interaction is rounding noise against."""
    vals = res.shap_values if ci is None else res.shap_values[..., ci]
    return float(np.abs(vals).mean()) or 1.0


def no_interactions(strength, scale: float) -> bool:
    """Whether every off-diagonal value is rounding noise next to ``scale`` (an additive model)."""
    vals = np.asarray(strength, dtype=float)
    vals = vals[np.isfinite(vals)]
    return vals.size > 0 and float(np.abs(vals).max()) <= 1e-9 * max(scale, 1e-300)


# ------------------------------------------------------------------ report
def report_section(ctx: ModelContext, n_rows: int = SHAP_ROWS):
    """The report's interactions part: a :class:`dashboard.report.Section` with the heatmap
    (SHAP interaction where the model gets it, else H) and the ten strongest pairs.

    Raises what the computation raises; the report turns it into a notice.
    """
    from dashboard import report
    from dashboard.figures.interactions import interaction_heatmap_figure, interaction_pairs_frame

    method, _ = interaction_method(ctx)
    measure = SHAP_MEASURE if method is not None else H_MEASURE
    shap_res = shap_interactions(ctx, n_rows) if method is not None else None
    feats, h_res = heatmap_features(ctx, measure, shap_res)
    ci = interaction_class(shap_res, ctx) if shap_res is not None else None
    shown = shap_res if measure == SHAP_MEASURE else h_res
    fig = interaction_heatmap_figure(shown, features=feats, class_index=ci)
    table = interaction_pairs_frame(shap_res, h_res, feats, class_index=ci, sort_by=measure).head(10)
    table = table.drop(columns=["feature", "other"] + (["mean_abs_shap_interaction"] if shap_res is None else []))
    table = table.rename(columns={"mean_abs_shap_interaction": "mean |SHAP interaction|", "h_statistic": "H"})
    rows = (f"SHAP interaction values of {shap_res.n_rows:,} rows; " if shap_res is not None else "")
    caption = (f"How strongly pairs of features act together ({measure}): {rows}Friedman's H on "
               f"{h_res.n_rows:,} rows. The table lists the ten strongest pairs.")
    return report.Section("Feature interactions", caption, figure=fig, table=table.set_index("pair"))


# ------------------------------------------------------------------ errors
#: a call, a dotted name, a keyword argument or a CamelCase class name: Python, not words for the page
_CODE = re.compile(r"\w+\(|\w\.\w+|\w+=|\b[A-Z][a-z]+[A-Z]\w*|\*\*")


def plain_reason(exc: BaseException) -> str:
    """The sentences of an exception's message that name no Python code ('' when none is left).

    explainers' messages say how to call it from Python (``TreeShap(model).interactions(X)``);
    the page says what to click instead.
    """
    if not isinstance(exc, ExplainerError):
        return error_message(exc)
    sentences = re.split(r"(?<=[.!?])\s+", str(exc).strip())
    kept = [t for t in sentences if t and not _CODE.search(t)]
    return " ".join(kept)


def interaction_error(exc: BaseException, *, fallback: bool = False) -> str:
    """The exception as sentences for the page, saying what to click, never naming code.

    ``fallback``: the SHAP interaction values failed and the page goes on with the H statistic.
    """
    text = str(exc)
    if "coalitions" in text or "max_evals" in text:
        reason = "this model has too many features for exact SHAP interaction values."
    elif "numbers only" in text or "non-numeric" in text:
        reason = "SHAP interaction values need numeric columns, and this data has text columns."
    else:
        reason = plain_reason(exc) or "they cannot be computed for this model and data."
    if fallback:
        return f"No SHAP interaction values: {reason} The page shows Friedman's H statistic instead."
    return (f"The interactions cannot be computed: {reason} Pick fewer rows above, the other measure, or "
            "another model on the Model page.")
