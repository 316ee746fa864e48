"""The cached computations the pages call: PDP/ALE, SHAP, importance and the report.

Pages never compute: they call these, whose cache keys are the model and data
fingerprints plus every setting. Long results (with a progress bar) go through
:func:`~dashboard.state.cache.result_cache`; quick ones through ``st.cache_data``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from explainers import ExplainerError

from .cache import result_cache
from .context import ModelContext, error_message, feature_summary
from .session import batch_roots, pdp_class, shap_class


# ----------------------------------------------------------------- data rows
def split_rows(ctx: ModelContext) -> tuple[tuple, tuple]:
    """((X_train, y_train), (X_holdout, y_holdout)) for this model's data.

    Demo data stores the training rows first (the card says how many); for an
    upload the file is taken as the training data for out-of-bag importance
    (the check against the forest's own out-of-bag predictions tells when it is
    not) and as held-out data for permutation importance.
    """
    n_train = ctx.card.get("n_train")
    if n_train:
        tr = (ctx.X.iloc[:n_train], None if ctx.y is None else ctx.y.iloc[:n_train])
        ho = (ctx.X.iloc[n_train:], None if ctx.y is None else ctx.y.iloc[n_train:])
        return tr, ho
    both = (ctx.X, ctx.y)
    return both, both


def _seeded_rows(n_total: int, n: int) -> np.ndarray:
    """Positions of a seeded sample of n rows (all rows when there are no more), in data order."""
    if n_total <= n:
        return np.arange(n_total)
    return np.sort(np.random.default_rng(0).choice(n_total, n, replace=False))


def sample_rows(ctx: ModelContext, n_rows: int) -> pd.DataFrame:
    """A seeded sample of the data's rows (the global views, the 2D data overlay)."""
    return ctx.X.iloc[_seeded_rows(len(ctx.X), n_rows)]


def background(ctx: ModelContext, n: int = 100) -> pd.DataFrame:
    """A seeded sample of the data as the SHAP background (training rows where known)."""
    (X_tr, _), _ = split_rows(ctx)
    return X_tr.iloc[_seeded_rows(len(X_tr), n)]


class ProgressBar:
    """A progress callback for st.progress that also estimates the time left."""

    def __init__(self, bar, label: str):
        import time

        self._time = time.perf_counter
        self._start = self._time()
        self.bar = bar
        self.label = label

    def __call__(self, done: int, total: int) -> None:
        frac = min(done / total, 1.0) if total else 1.0
        elapsed = self._time() - self._start
        text = f"{self.label}: {done:,} of {total:,}"
        if 0 < frac < 1 and elapsed > 0.5:
            text += f" · about {elapsed * (1 - frac) / frac:.0f} s left"
        self.bar.progress(frac, text=text)


# ------------------------------------------------------------------------- PDP
PDP_MAX_ROWS = 2_000  # rows behind a PDP/ICE on the page; a seeded sample above that


def pdp(ctx: ModelContext, features: tuple[str, ...], grid_resolution: int, percentiles: tuple[float, float],
        max_rows: int = PDP_MAX_ROWS):
    """Partial dependence (and ICE for one feature), cached per model, data and settings."""
    sample = max_rows if len(ctx.X) > max_rows else None

    def compute():
        from explainers.pdp import partial_dependence

        return partial_dependence(
            ctx.model, ctx.X, list(features), grid_resolution=grid_resolution, percentiles=percentiles,
            kind="both" if len(features) == 1 else "average", sample=sample, random_state=0,
        )

    key = ("pdp", ctx.model_key, ctx.data_key, features, grid_resolution, percentiles, sample)
    return result_cache().get_or_compute(key, compute)


def ale(ctx: ModelContext, feature, n_bins: int):
    """ALE of one numeric feature (a name), or second-order ALE of two (a tuple), cached."""
    def compute():
        from explainers.ale import ale as ale_fn

        return ale_fn(ctx.model, ctx.X, list(feature) if isinstance(feature, tuple) else feature,
                      n_bins=n_bins)

    return result_cache().get_or_compute(("ale", ctx.model_key, ctx.data_key, feature, n_bins), compute)


# ------------------------------------------------------------------------ SHAP
SHAP_METHODS = ("auto", "linear", "exact", "kernel", "tree")


def explain_row(ctx: ModelContext, row: int, method: str, missing: tuple[str, ...]):
    """SHAP values of one row with the given features masked, cached per setting."""
    def compute():
        from explainers.shap import explain

        return explain(ctx.model, ctx.X.iloc[[row]], background=background(ctx),
                       method=method, missing=list(missing) or None)

    return result_cache().get_or_compute(("shap_row", ctx.model_key, ctx.data_key, row, method, missing), compute)


def explain_sample(ctx: ModelContext, n_rows: int, method: str, progress=None):
    """SHAP values of a seeded sample of rows, for the global views."""
    def compute():
        from explainers.shap import explain

        X = sample_rows(ctx, n_rows)
        return explain(ctx.model, X, background=background(ctx),
                       method=method, progress=progress)

    return result_cache().get_or_compute(("shap_sample", ctx.model_key, ctx.data_key, n_rows, method), compute)


def explain_edited(ctx: ModelContext, values: tuple, missing: tuple[str, ...]):
    """SHAP values (automatic method) of one edited row, cached by its values and mask."""
    def compute():
        from explainers.shap import explain

        row = pd.DataFrame([list(values)], columns=list(ctx.X.columns)).astype(ctx.X.dtypes.to_dict())
        return explain(ctx.model, row, background=background(ctx),
                       missing=list(missing) or None)

    return result_cache().get_or_compute(("whatif", ctx.model_key, ctx.data_key, values, missing), compute)


def shap_is_fast(ctx: ModelContext) -> bool:
    """Whether the automatic SHAP method for this model is a fast one (linear or tree)."""
    try:
        from explainers.shap import auto
    except Exception:
        return False
    try:
        method, _ = auto.choose_method(ctx.model, ctx.X.shape[1], 100)
    except Exception:
        return False
    return method in ("linear", "tree")


@st.cache_data(max_entries=32, show_spinner=False)
def row_table(model_key: str, data_key: str, class_index: int, _ctx: ModelContext) -> pd.DataFrame:
    """Per row: the prediction (of the chosen class) and, with a target, the error."""
    pred = _ctx.adapter.predict(_ctx.X)
    if pred.ndim == 2:
        pred = pred[:, class_index]
    table = pd.DataFrame({"row": np.arange(len(_ctx.X)), "prediction": pred})
    if _ctx.y is not None:
        if _ctx.task == "regression":
            table["error"] = np.abs(pred - _ctx.y.to_numpy(dtype=float))
        else:
            # error = 1 - probability given to the true class
            position = {str(c): i for i, c in enumerate(_ctx.adapter.classes)}
            idx = np.array([position.get(str(t), -1) for t in _ctx.y])
            proba = _ctx.adapter.predict(_ctx.X)
            table["error"] = np.where(idx >= 0, 1.0 - proba[np.arange(len(idx)), np.maximum(idx, 0)], np.nan)
        table["target"] = _ctx.y.to_numpy()
    return table


def additivity_line(res, row: int, class_index: int | None) -> str:
    """'base + contributions = prediction' with the numbers of this row."""
    vals = res.values[row] if class_index is None else res.values[row, :, class_index]
    base = res.base_values[row] if class_index is None else res.base_values[row, class_index]
    pred = res.predictions[row] if class_index is None else res.predictions[row, class_index]
    total = float(np.sum(vals))
    return f"base {base:.6g} + contributions {total:+.6g} = prediction {float(base) + total:.6g} (model: {float(pred):.6g})"


def output_label(res, class_index: int | None) -> str:
    """What the numbers are: 'prediction', or 'P(class)' / 'log-odds(class)'."""
    if class_index is None and res.values.ndim == 2:
        name = res.output_names[0] if res.output_names else ""
        return {"raw": "prediction", "log_odds": f"log-odds({name})", "margin": f"margin({name})"}.get(
            res.output, "prediction")
    name = res.output_names[class_index]
    return {"proba": f"P({name})", "log_odds": f"log-odds({name})"}.get(res.output, f"{res.output}({name})")


#: the one answer for every path that cannot be opened: outside the allowed folders,
#: missing, or a file. It never says which, so the page cannot probe the server's files.
BATCH_REFUSED = (
    "No batch run can be opened from this path. Give the --out folder of a finished "
    "`python -m explainers batch` run inside the folders this server allows for batch runs."
)


def batch_folder(folder: str, roots: list[str]) -> str:
    """The real path of ``folder`` when it is an existing folder inside one of ``roots``.

    Symlinks and ``..`` are resolved first (os.path.realpath), then the folder
    must lie inside a root (whole path components compared). A relative path
    is taken inside each root in turn. Anything else raises ExplainerError with
    :data:`BATCH_REFUSED`, the same message whether the path is outside, missing
    or a file.
    """
    try:
        text = os.path.expanduser(str(folder).strip())
        if not text or "\x00" in text:
            raise ValueError(folder)
        candidates = [text] if os.path.isabs(text) else [os.path.join(root, text) for root in roots]
        for candidate in candidates:
            real = os.path.realpath(candidate)
            # inside first: nothing about a path outside the roots is looked up
            if any(_inside(real, root) for root in roots) and os.path.isdir(real):
                return real
    except (OSError, ValueError):
        pass
    raise ExplainerError(BATCH_REFUSED)


def _inside(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or below it, comparing whole path components (both resolved)."""
    return Path(os.path.normcase(path)).is_relative_to(Path(os.path.normcase(root)))


def precomputed_attributions(ctx: ModelContext, folder: str, n_rows: int):
    """A seeded sample of a finished ``python -m explainers batch`` run, and whether it is this model's.

    Only folders inside the operator's batch roots (:func:`~.session.batch_roots`)
    are opened. Returns (ShapResult, same_model). Raises ExplainerError with
    :data:`BATCH_REFUSED` for a path outside the roots (or missing, or a file),
    and the batch reader's own message for a folder inside them that holds no
    finished run.
    """
    from explainers.batch import MANIFEST, load_attributions

    path = batch_folder(folder, batch_roots())
    manifest = Path(path) / MANIFEST
    try:
        stamp = manifest.stat().st_mtime_ns
    except OSError:
        stamp = None
    if stamp is None:  # no run here: the reader says what is wrong
        res = load_attributions(path, sample=n_rows)
    else:
        res = result_cache().get_or_compute(("precomputed", path, stamp, n_rows),
                                            lambda: load_attributions(path, sample=n_rows))
    try:
        sha = json.loads(manifest.read_text()).get("model", {}).get("sha256")
    except (OSError, ValueError, AttributeError):
        sha = None
    return res, sha == ctx.model_key


# ------------------------------------------------------------------ importance
IMPORTANCE_METHODS = {
    "mdi": "Mean decrease in impurity (MDI)",
    "oob": "Out-of-bag permutation (MDA)",
    "permutation": "Holdout permutation",
    "shap": "Mean |SHAP|",
}


def importance(ctx: ModelContext, method: str, n_repeats: int, max_rows: int, progress=None):
    """One importance result, cached per model, data, method and settings."""
    key = ("importance", ctx.model_key, ctx.data_key, method, n_repeats if method == "permutation" else 0,
           max_rows if method in ("permutation", "shap") else 0)
    return result_cache().get_or_compute(key, lambda: _importance(ctx, method, n_repeats, max_rows, progress))


def _importance(ctx: ModelContext, method: str, n_repeats: int, max_rows: int, progress):
    from explainers import importance as imp

    (X_tr, y_tr), (X_ho, y_ho) = split_rows(ctx)
    if method == "mdi":
        return imp.mdi(ctx.model)
    if method == "oob":
        if y_tr is None:
            raise ExplainerError("Out-of-bag importance needs the target: pick the target column on the Model page.")
        return imp.oob_permutation_importance(ctx.model, X_tr, y_tr, progress=progress)
    if method == "permutation":
        if y_ho is None:
            raise ExplainerError("Permutation importance needs the target: pick the target column on the Model page.")
        take = _seeded_rows(len(X_ho), max_rows)
        return imp.permutation_importance(ctx.model, X_ho.iloc[take], y_ho.iloc[take], n_repeats=n_repeats,
                                          random_state=0, progress=progress)
    if method == "shap":
        return imp.shap_importance(explain_sample(ctx, max_rows, "auto", progress))
    raise KeyError(method)


def importances(ctx: ModelContext, methods: list[str], n_repeats: int, max_rows: int, bar) -> tuple[list, list]:
    """Compute (cached) each method that applies; return (results, [(label, reason)] skipped)."""
    results, skipped = [], []
    for i, method in enumerate(methods):
        label = IMPORTANCE_METHODS[method]

        progress = ProgressBar(bar, label)
        bar.progress(i / len(methods), text=f"{label}…")
        try:
            results.append(importance(ctx, method, n_repeats, max_rows, progress))
        except ExplainerError as exc:
            skipped.append((label, str(exc)))
        except Exception as exc:  # never a traceback on the page
            skipped.append((label, error_message(exc)))
    return results, skipped


@st.cache_data(max_entries=32, show_spinner=False)
def comparison(model_key: str, data_key: str, labels: tuple, _results: list, _X):
    from explainers.importance import compare_importances

    return compare_importances(_results, X=_X)


# --------------------------------------------------------------------- report
def report_html(ctx: ModelContext, feature: str, row: int, wanted: tuple[bool, bool, bool, bool],
                bar) -> tuple[str, int]:
    """The report as one HTML document and its number of sections, built once per choice.

    ``wanted`` says which parts to include: summary, PDP/ICE, SHAP waterfall,
    importance comparison.
    """
    ci = pdp_class(ctx)
    key = ("report", ctx.model_key, ctx.data_key, feature, row, ci, wanted)
    return result_cache().get_or_compute(key, lambda: _build_report(ctx, feature, row, wanted, ci, bar))


def _build_report(ctx: ModelContext, feature: str, row: int, wanted, ci, bar) -> tuple[str, int]:
    from dashboard import figures, report

    want_summary, want_pdp, want_shap, want_imp = wanted
    sections = []
    if want_summary:
        sections.append(report.Section("Features", "Types, ranges and missing values of the data.",
                                       table=feature_summary(ctx.data_key, ctx.X).set_index("feature")))
    bar.progress(0.25, text="Partial dependence…")
    if want_pdp:
        res = pdp(ctx, (feature,), 40, (0.05, 0.95))
        sections.append(report.Section(f"Partial dependence and ICE: {feature}",
                                       "The bold line is the average effect; thin lines are single rows.",
                                       figure=figures.pdp_figure(res, class_index=ci)))
    bar.progress(0.5, text="SHAP…")
    if want_shap:
        sres = explain_row(ctx, row, "auto", ())
        sci = shap_class(sres, ctx)
        sections.append(report.Section(f"Why row {row} gets its prediction", additivity_line(sres, 0, sci),
                                       figure=figures.waterfall_figure(sres, 0, class_index=sci, max_display=12)))
    bar.progress(0.75, text="Importance…")
    if want_imp:
        sections += _importance_sections(ctx, bar)
    summary = _report_summary(ctx) if want_summary else {}
    html_doc = report.build_report(f"Glassbox — {ctx.title}", summary, sections)
    return html_doc, len(sections)


def _importance_sections(ctx: ModelContext, bar) -> list:
    """The report's importance section: methods compared when two or more apply."""
    from dashboard import figures, report

    results, _ = importances(ctx, ["mdi", "oob", "permutation"], 5, 1_000, bar)
    if len(results) >= 2:
        comp = comparison(ctx.model_key, ctx.data_key, tuple(r.label for r in results), results, ctx.X)
        return [report.Section("Variable importance, compared",
                               " ".join(f"{r.label}: {r.description}" for r in results),
                               figure=figures.importance_bars_figure(comp))]
    if results:
        return [report.Section("Variable importance", results[0].description,
                               figure=figures.importance_bars_figure(results[0]))]
    return []


def _report_summary(ctx: ModelContext) -> dict:
    """The report's key facts about the model and data."""
    summary = {"Model": ctx.card.get("model_type", ""), "Task": ctx.task, "Rows": f"{len(ctx.X):,}",
               "Features": ctx.X.shape[1]}
    if ctx.classes:
        summary["Classes"] = ", ".join(ctx.classes)
    if ctx.card.get("metric"):
        summary[ctx.card["metric"]["name"]] = f"{ctx.card['metric']['value']:.3f}"
    return summary
