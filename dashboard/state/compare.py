"""The Compare page's models and cached computations.

The active model (the sidebar's) is compared with the models picked on the page, on the
active model's rows: each other model is put on those rows as a context of its own
(:func:`on_rows`: its model, the active data's columns it needs, the same target), so the
quality, importance and SHAP caches every page uses serve the comparison too, and a model
already explained on the same data costs nothing more.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from explainers import ExplainerError, ModelAdapter

from .cache import result_cache
from .context import ModelContext, context_for, model_options
from .session import value

#: the page's multiselect of the models compared with the active one (kept in the URL)
COMPARE_WITH = "compare_with"
#: paired bootstrap replicates behind each interval
N_BOOT = 1_000
#: at most this many disagreement rows are listed
N_DISAGREE = 50
#: rows scored at most (a seeded sample beyond): the bootstrap's work is replicates x rows
MAX_ROWS = 50_000


def candidates(ctx: ModelContext) -> dict[str, str]:
    """The models the active one can be compared with: key -> label (every other loaded model)."""
    return {k: v for k, v in model_options().items() if k != ctx.name}


def picked(ctx: ModelContext) -> list[str]:
    """The keys of the models picked for comparison that are still loaded."""
    options = candidates(ctx)
    chosen = value(COMPARE_WITH) or []
    return [k for k in chosen if k in options]


def on_rows(other: ModelContext, ctx: ModelContext) -> ModelContext:
    """``other``'s model on the active model's rows: the columns it needs from ``ctx.X`` (by
    name), the same target. Refused, naming the columns, when the data lacks some."""
    names = list(other.adapter.feature_names or other.X.columns)
    missing = [c for c in names if c not in ctx.X.columns]
    if missing:
        shown = ", ".join(repr(c) for c in missing[:5]) + (" …" if len(missing) > 5 else "")
        raise ExplainerError(f"{other.title} needs {len(missing)} column(s) the data of {ctx.title} does not have "
                             f"({shown}): the models can be compared only on rows that both can predict.")
    X = ctx.X[names]
    adapter = ModelAdapter(other.model, feature_names=names)
    return dataclasses.replace(other, X=X, y=ctx.y, data_key=ctx.data_key, adapter=adapter, notices=[])


def contexts(ctx: ModelContext, keys: list[str]) -> tuple[dict, list[str]]:
    """``({label: context on the active rows}, [problems])``: the active model first, then each
    picked model that can be put on its rows; the others are named in the problems."""
    labels = model_options()
    out = {_short(labels.get(ctx.name, ctx.title)): ctx}
    problems = []
    for key in keys:
        try:
            other = context_for(key)
            if other is None:
                continue
            out[_unique(_short(labels.get(key, other.title)), out)] = on_rows(other, ctx)
        except ExplainerError as exc:
            problems.append(str(exc))
    return out, problems


def _short(label: str) -> str:
    """A model's label without the long description after its dash (for legends)."""
    return label.split(" — ", 1)[-1] if " — " in label else label


def _unique(label: str, taken) -> str:
    n, out = 2, label
    while out in taken:
        out, n = f"{label} #{n}", n + 1
    return out


def scored_rows(ctx: ModelContext, ctxs: dict, segment_rows=None, segment_name: str = "") -> tuple[np.ndarray | None,
                                                                                                     str]:
    """``(positions or None for all, what they are)``: the rows the models are scored on. A demo's
    data keeps its training rows first (its card says how many): they are left out when every
    compared model was fitted on the same ones, since a model scores better on rows it was fitted
    to. A segment's rows are intersected with them."""
    n_train = ctx.card.get("n_train")
    same = n_train and all(c.card.get("n_train") == n_train for c in ctxs.values())
    rows = np.arange(int(n_train), len(ctx.X)) if same else None
    words = f"the {len(ctx.X) - int(n_train):,} held-out rows (the training rows left out)" if same else "every row"
    if segment_rows is not None:
        seg = np.asarray(segment_rows)
        rows = seg if rows is None else np.intersect1d(seg, rows)
        words = f"the {len(rows):,} rows of segment {segment_name}" + (" (held-out rows only)" if same else "")
    n = len(ctx.X) if rows is None else len(rows)
    if n > MAX_ROWS:  # a seeded sample bounds the bootstrap (intervals from it are, if anything, wider)
        pool = np.arange(len(ctx.X)) if rows is None else rows
        rows = np.sort(np.random.default_rng(0).choice(pool, MAX_ROWS, replace=False))
        words = f"a seeded sample of {MAX_ROWS:,} of {words}"
    return rows, words


def _rows_key(rows) -> str | None:
    """A cache key part for a choice of rows (None: every row), the same in every process (the
    disk cache outlives one): a digest of the positions, not Python's salted ``hash``."""
    import hashlib

    return None if rows is None else hashlib.sha256(np.asarray(rows, dtype=np.int64).tobytes()).hexdigest()


def _on(c: ModelContext, rows):
    """(X, y) of a context on ``rows`` (positions; None: every row)."""
    return (c.X, c.y) if rows is None else (c.X.iloc[rows], c.y.iloc[rows])


def comparison(ctx: ModelContext, ctxs: dict, rows: np.ndarray | None = None):
    """:func:`explainers.compare.compare_models` of the models on the active data's ``rows``
    (positions; None: every row), cached per model, data and rows."""
    from explainers.compare import compare_models

    def compute():
        X, y = _on(ctx, rows)
        return compare_models({n: c.model for n, c in ctxs.items()}, X, y, n_boot=N_BOOT, random_state=0,
                              n_disagree=N_DISAGREE)

    key = ("compare", tuple(c.model_key for c in ctxs.values()), tuple(ctxs), ctx.data_key, _rows_key(rows), N_BOOT)
    return result_cache().get_or_compute(key, compute)


def compare_problem(ctx: ModelContext, ctxs: dict) -> str | None:
    """Why the picked models cannot be scored side by side (in page words), or None."""
    if ctx.y is None or not ctx.y.notna().any():
        return ("Comparing models scores them against the target: this data was loaded without one. On the Model "
                "page, pick the target column when you choose the data file.")
    tasks = {n: c.task for n, c in ctxs.items()}
    if len({t == "regression" for t in tasks.values()}) > 1:
        kinds = ", ".join(f"{n} is a {'regressor' if t == 'regression' else 'classifier'}" for n, t in tasks.items())
        return f"A regressor and a classifier cannot be scored on one target ({kinds}). Pick models of one kind."
    classes = {n: c.classes for n, c in ctxs.items() if c.classes is not None}
    if len({tuple(v) for v in classes.values()}) > 1:
        listed = "; ".join(f"{n}: {', '.join(v)}" for n, v in classes.items())
        return f"The classifiers predict different classes ({listed}), so their scores are not comparable."
    return None


# ------------------------------------------------------------------ the pick
def default_pick(ctx: ModelContext, keys: list[str]) -> list[str]:
    """A demo's natural partner: the first other demo with the same target, task and classes
    whose columns the active data has; nothing for other models (the user picks)."""
    from demo_models import build as demo_build

    from .context import demo_cards

    if ctx.name not in demo_build.DEMO_NAMES:
        return []
    cards, mine = demo_cards(), ctx.card
    for key in keys:
        card = cards.get(key)
        if (card and card.get("target") == mine.get("target") and card.get("task") == mine.get("task")
                and card.get("classes") == mine.get("classes")
                and {str(f.get("name") if isinstance(f, dict) else f) for f in card.get("features") or []}
                <= set(map(str, ctx.X.columns))):
            return [key]
    return []


# -------------------------------------------------------------------- scores
#: the metrics as the page names them
METRIC_LABELS = {"roc_auc": "ROC AUC", "log_loss": "log loss", "accuracy": "accuracy",
                 "balanced_accuracy": "balanced accuracy", "brier": "Brier score", "r2": "R²", "mae": "MAE",
                 "rmse": "RMSE"}
#: metrics where less is better
LOWER_IS_BETTER = {"log_loss", "brier", "mae", "rmse"}


def metrics_frame(cmp):
    """The metrics table as the page shows it: one row per model, about four significant figures."""
    from dashboard.figures.style import fmt_number

    table = cmp.metrics.rename(columns=METRIC_LABELS)
    return table.apply(lambda col: col.map(lambda v: "not defined" if v != v else fmt_number(v))).rename_axis(
        "model").reset_index()


def verdict(cmp, real) -> str:
    """Which differences are real (their interval leaves 0 out), in words, better model first."""
    from dashboard.figures.style import fmt_number

    from ..safe_text import md

    if real.empty:
        return ("No difference between the models is larger than the bootstrap's spread: on these rows neither is "
                "better on any metric.")
    lines = []
    for r in real.itertuples():
        a_better = (r.difference < 0) == (r.metric in LOWER_IS_BETTER)
        win, lose = (r.model_a, r.model_b) if a_better else (r.model_b, r.model_a)
        word = "lower" if (r.metric in LOWER_IS_BETTER) else "higher"
        lines.append(f"- **{md(win)}** is better than **{md(lose)}** on {METRIC_LABELS.get(r.metric, r.metric)} "
                     f"({word} by {fmt_number(abs(r.difference))}; interval of a − b: {fmt_number(r.low)} to "
                     f"{fmt_number(r.high)})")
    return "Differences whose interval leaves 0 out:\n" + "\n".join(lines)


def mcnemar_caption(cmp) -> str | None:
    """McNemar's exact test on accuracy for each pair, in words (None for regressors)."""
    from dashboard.figures.style import fmt_number

    acc = cmp.differences[cmp.differences.metric == "accuracy"]
    if acc.empty:
        return None
    parts = [f"{a} vs {b}: p = {fmt_number(p)}" for a, b, p in zip(acc.model_a, acc.model_b, acc.p_value)]
    return ("McNemar's exact test on the rows one model classifies right and the other wrong (accuracy): "
            + "; ".join(parts) + ". Below 0.05, the accuracies differ by more than chance would make them.")


def qualities(ctxs: dict, rows) -> dict:
    """:func:`explainers.quality.quality` of each model on the rows (a segment's, when given),
    cached per model, data and rows; a classifier at its default threshold."""
    from explainers.quality import quality

    part = _rows_key(rows)
    return {name: result_cache().get_or_compute(("compare_quality", c.model_key, c.data_key, part),
                                                lambda c=c: quality(c.adapter, *_on(c, rows)))
            for name, c in ctxs.items()}


# ------------------------------------------------------------------ effects
def pdp_curves(ctx: ModelContext, ctxs: dict, feature: str, grid_resolution: int = 30):
    """``({name: (grid, average)}, output label)``: each model's partial dependence on the active
    model's grid of ``feature`` (the sidebar's class for classifiers), cached per model."""
    from explainers.pdp import partial_dependence

    from ..figures.style import output_words
    from .outputs import pdp_class

    ci = pdp_class(ctx)
    first = None
    out = {}
    for name, c in ctxs.items():
        def compute(c=c, grid=None):
            values = None if grid is None else {feature: grid}
            return partial_dependence(c.model, c.X, [feature], grid_resolution=grid_resolution, kind="average",
                                      custom_values=values, sample=2_000 if len(c.X) > 2_000 else None,
                                      random_state=0)

        grid = None if first is None else first.grid[0]
        key = ("compare_pdp", c.model_key, c.data_key, feature, grid_resolution,
               None if grid is None else tuple(np.asarray(grid).tolist()))
        res = result_cache().get_or_compute(key, lambda c=c, g=grid: compute(c, g))
        first = first or res
        avg = np.asarray(res.average)
        out[name] = (res.grid[0], avg if avg.ndim == 1 else avg[:, min(ci or 0, avg.shape[1] - 1)])
    if ctx.task == "regression":
        return out, "prediction"
    outputs = {c.adapter.output for c in ctxs.values()}  # "auto" is a probability, "raw" a margin
    kind = "proba" if outputs <= {"auto", "proba"} else "margin" if outputs == {"raw"} else None
    if kind is None:
        return out, "prediction (probability or margin, by model)"
    return out, output_words(kind, ctx.classes[ci] if ci is not None else "")


# --------------------------------------------------------------- importance
def importances(ctxs: dict, methods: list[str], bar) -> tuple[list, list]:
    """Each model's permutation importance (and mean |SHAP| where it is fast), on the same rows,
    with the Importance page's settings; each result labelled with its model's name."""
    from .importance import importances as page_importances

    n_repeats, max_rows = _importance_settings()
    results, skipped = [], []
    for name, c in ctxs.items():
        got, why = page_importances(c, _fast_methods(c, methods), n_repeats, max_rows, bar, page="compare")
        results += [dataclasses.replace(r, params={**r.params, "compared_as": name}) for r in got]
        skipped += [(f"{name}: {label}", reason) for label, reason in why]
    return results, skipped


def importances_cost(ctxs: dict, methods: list[str]) -> float:
    """Estimated seconds of every model's importances (the Importance page's own estimate, summed;
    measured on a few rows of each model, cached per model)."""
    from .importance import importance_cost

    n_repeats, max_rows = _importance_settings()
    return sum(importance_cost(c, _fast_methods(c, methods), n_repeats, max_rows)[0] for c in ctxs.values())


def _importance_settings() -> tuple[int, int]:
    """(permutation repeats, rows used): the Importance page's settings."""
    return int(value("imp_repeats", 5)), int(value("imp_rows", 1_000))


def _fast_methods(c: ModelContext, methods: list[str]) -> list[str]:
    """The methods a model is compared on: mean |SHAP| only where it is fast for it."""
    from .costs import shap_is_fast

    return [m for m in methods if m != "shap" or shap_is_fast(c)]


def importance_comparison(ctx: ModelContext, results):
    """The importances side by side, with rank agreement (features every model has)."""
    from explainers.importance import compare_importances

    from .importance import evidence_rows

    return compare_importances(results, X=evidence_rows(ctx.X))


# ------------------------------------------------------------- disagreement
def disagreement_frame(cmp, ctx: ModelContext):
    """The rows where the models disagree most, with their position in the data (``row``)."""
    d = cmp.disagreement
    positions = ctx.X.index.get_indexer(d.index)
    return d.reset_index(drop=True).assign(row=positions)[["row", *d.columns]]


def disagreement_caption(ctx: ModelContext) -> str:
    what = ("the probability of the sidebar's positive class" if ctx.task == "binary" else
            "the probability each model gives the row's actual class" if ctx.task == "multiclass" else
            "the predicted value")
    return f"Ranked by how far apart the models' predictions are ({what}), largest first, with the truth."


def openable(ctx: ModelContext, ctxs: dict) -> dict[str, str]:
    """{name: model key} of the models whose SHAP page shows these rows under the same numbers:
    the active model, and each other one loaded with the same data."""
    out = {}
    for name, c in ctxs.items():
        own = context_for(c.name) if c is not ctx else ctx
        if own is not None and own.data_key == ctx.data_key:
            out[name] = c.name
    return out


def open_on_shap(key: str, row: int) -> None:
    """Callback: make ``key`` the sidebar's model and show ``row`` on its SHAP page."""
    from .quality import prepare_shap
    from .session import set_active_model

    set_active_model(key)
    prepare_shap(row)


def go_to_shap() -> None:
    from .quality import go_to_shap as go

    go()


# ------------------------------------------------------------------- report
def report_sections(ctx: ModelContext) -> list:
    """The report's comparison (when the Compare page has models picked): the metrics of each
    model and each difference with its interval, as tables; [] when nothing is picked or the
    models cannot be scored together (the page says why)."""
    from dashboard import report

    keys = picked(ctx)
    if not keys:
        return []
    ctxs, _ = contexts(ctx, keys)
    if len(ctxs) < 2 or compare_problem(ctx, ctxs):
        return []
    rows, where = scored_rows(ctx, ctxs)
    cmp = comparison(ctx, ctxs, rows)
    names = " and ".join(ctxs)
    diffs = cmp.differences.assign(metric=cmp.differences.metric.map(lambda m: METRIC_LABELS.get(m, m)))
    shown = diffs[["model_a", "model_b", "metric", "difference", "low", "high", "p_value", "significant"]]
    plain = verdict(cmp, cmp.differences[cmp.differences["significant"]]).replace("**", "")
    return [report.Section(f"Models compared: {names}", f"Scored on {where}.", table=metrics_frame(cmp)
                           .set_index("model")),
            report.Section("Differences between the models",
                           f"Paired bootstrap intervals ({cmp.params.get('n_boot', N_BOOT):,} replicates, the same "
                           f"resampled rows for every model); McNemar's exact p-value for accuracy. {plain}",
                           table=shown.reset_index(drop=True))]
