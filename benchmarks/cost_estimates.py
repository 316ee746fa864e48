"""Benchmark: the dashboard's cost estimates against the measured time of the work they estimate.

Before a slow view runs, a page estimates its cost (``dashboard/state/costs.py``,
``dashboard/state/interactions.py``) and, above ``SLOW_VIEW_S`` (10 s), runs it only on
request. This script checks each estimate against the computation the page then runs,
with the page's own arguments, on a few demo models and two "uploaded" models built
here in a temporary folder:

- ``upload_pipeline``: a scikit-learn Pipeline (ColumnTransformer: OneHotEncoder on two
  text columns, SimpleImputer on 8 numeric columns with ~10% empty cells) into a
  RandomForestClassifier (100 trees, default depth), 5,000 seeded rows; saved with
  skops, data as CSV with its target column;
- ``upload_xgb``: an XGBoost classifier (200 trees, depth 6) saved as .json, on a
  numeric CSV of 5,000 seeded rows and 12 features.

Both are loaded as the Model page loads an upload (``load_upload``).

What each line measures (estimate first, then the work, as the page does):

- ``shap:<method>``: the SHAP page's "Across many rows" view. Rows: the page's default
  (``default_shap_rows``); estimate: ``sample_cost(ctx, method, rows, output)`` with
  ``output`` from ``shap_setting``; work: ``explain_sample(ctx, rows, method)``.
  Methods: tree (tree models), auto, exact (where 2**p x background fits ExactShap's
  max_evals) and kernel.
- ``ia:<measure>``: the Interactions page, for each measure it offers, default rows and
  heatmap size. Estimate: ``interaction_cost(ctx, measure, rows, k)``; work: what the
  page runs, ``shap_interactions(ctx, rows)`` where the model gets SHAP interaction
  values (whichever measure is shown) and then ``heatmap_features(ctx, measure, ...)``.
- ``imp:permutation`` / ``imp:shap`` / ``imp:oob``: the Importance page's methods at its
  full defaults (5 repeats, 1,000 rows; the page starts on fewer where those take more than
  about 3 s). Estimate: ``importance_cost(ctx, [method], 5, 1000)`` (holdout permutation by
  a line measured on the computation, out-of-bag by timing a few trees; it counts nothing
  for MDI and the libraries' own importances); work:
  ``importance(ctx, method, 5, 1000)``. ``imp:page``: the methods the page runs by default
  (mean |SHAP| only where SHAP is fast), estimated together against the sum of their
  measured times. Where mean |SHAP| is off by default (slow SHAP) its line takes the
  rows the page's "Use N rows" button offers (at least 50).

Every (estimate, work) pair starts from an empty result cache, so the work reuses
nothing measured before it (only what its own estimate left there, as on the page; the
explainers' own per-model tables may stay warm across lines of one model, as they do
in a server). "probe s" is the time the estimate itself took (its probes of the
model's speed), not part of "measured s". A computation that reports progress is
stopped after ``--limit`` seconds and its time extrapolated from the share done
(marked ``~``). Verdict: ``ok`` when 0.5 <= estimate / measured <= 2, else ``OFF``;
"10 s gate": whether estimate and measurement fall on the same side of SLOW_VIEW_S
(MISSED: the page runs it unasked and it takes longer; NEEDLESS: a warning for a quick
view). Times from a busy machine are noisy: the load average is printed with each model.

Run from the repository root (the disk cache off, so nothing comes from an earlier run)::

    GLASSBOX_RESULT_CACHE=off python benchmarks/cost_estimates.py [--quick] [--contexts a,b] [--limit 90]

``--quick`` caps the rows (200 for fast SHAP, 10 for slow) and the time limit (20 s).
Contexts: diabetes_forest, diabetes_linear, breast_cancer_hgb, upload_pipeline,
upload_xgb (any other demo name works too). About 5-10 minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import math
import os
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_CONTEXTS = ("diabetes_forest", "diabetes_linear", "breast_cancer_hgb", "upload_pipeline", "upload_xgb")
#: the Importance page's defaults (dashboard/views/importance.py)
IMP_REPEATS, IMP_ROWS = 5, 1_000


# ------------------------------------------------------------------ uploads
def _pipeline_files(folder: Path) -> tuple[Path, Path]:
    """A Pipeline(ColumnTransformer(one-hot 2 text, impute 8 numeric), RandomForestClassifier) and its CSV."""
    import skops.io as sio
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    n = 5_000
    num = rng.normal(size=(n, 8))
    frame = pd.DataFrame(num, columns=[f"x{i}" for i in range(8)])
    frame["colour"] = rng.choice(["red", "green", "blue", "grey"], n)
    frame["city"] = rng.choice(["Oslo", "Lima", "Pune", "Kyiv", "Baku", "Doha"], n)
    logit = (num[:, 0] - 0.8 * num[:, 1] + 0.5 * num[:, 2] * num[:, 3] + (frame["colour"] == "red") * 1.0
             - (frame["city"] == "Lima") * 0.7)
    y = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    for c in frame.columns[:8]:  # ~10% empty cells in each numeric column
        frame.loc[rng.uniform(size=n) < 0.1, c] = np.nan
    numeric = [f"x{i}" for i in range(8)]
    pre = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), ["colour", "city"]),
                             ("num", SimpleImputer(), numeric)])
    model = Pipeline([("pre", pre), ("forest", RandomForestClassifier(n_estimators=100, random_state=0))])
    model.fit(frame, y)
    frame["target"] = y
    model_path, data_path = folder / "pipeline_rf.skops", folder / "pipeline_rf.csv"
    sio.dump(model, model_path)
    frame.to_csv(data_path, index=False)
    return model_path, data_path


def _xgb_files(folder: Path) -> tuple[Path, Path]:
    """An XGBoost classifier (200 trees, depth 6) as .json, and its numeric CSV."""
    import xgboost as xgb
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=5_000, n_features=12, n_informative=6, random_state=0)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(12)])
    model = xgb.XGBClassifier(n_estimators=200, max_depth=6, random_state=0, n_jobs=2).fit(frame, y)
    frame["target"] = y
    model_path, data_path = folder / "xgb_clf.json", folder / "xgb_clf.csv"
    model.save_model(model_path)
    frame.to_csv(data_path, index=False)
    return model_path, data_path


UPLOADS = {"upload_pipeline": _pipeline_files, "upload_xgb": _xgb_files}


def load_context(name: str, folder: Path):
    """The ModelContext of a demo, or of one of the uploads above (built into ``folder``)."""
    from dashboard.state.context import demo_context, load_upload

    if name not in UPLOADS:
        return demo_context(name)
    model_path, data_path = UPLOADS[name](folder)
    return load_upload(model_path.read_bytes(), model_path.name, data_path.read_bytes(), data_path.name, "target")


# ------------------------------------------------------------------ timing
class _OverTime(BaseException):
    """Raised from a progress callback to stop a computation past the time limit
    (a BaseException: the code it passes through catches Exception)."""


class Deadline:
    """A progress callback that remembers the share done and stops the work after ``limit`` s."""

    def __init__(self, limit: float):
        self.limit, self.t0, self.done, self.total = limit, time.perf_counter(), 0, 0

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        if total and 0 < done < total and time.perf_counter() - self.t0 > self.limit:
            raise _OverTime


def _wait_for_workers() -> None:
    """Let a stopped SHAP sample's worker thread finish its block (it would share the cores)."""
    for t in threading.enumerate():
        if t is not threading.current_thread() and t.name.startswith("glassbox-") and t.is_alive():
            t.join(600)


def timed(work, limit: float) -> tuple[float, bool]:
    """(seconds, extrapolated): ``work(progress)`` run and timed; stopped past ``limit`` seconds
    where it reports progress, the time then extrapolated from the share done."""
    deadline = Deadline(limit)
    t0 = time.perf_counter()
    try:
        work(deadline)
    except _OverTime:
        took = time.perf_counter() - t0
        _wait_for_workers()
        return took * deadline.total / max(deadline.done, 1), True
    return time.perf_counter() - t0, False


@dataclass
class Line:
    context: str
    method: str
    rows: int | str
    probe_s: float
    estimate_s: float
    measured_s: float
    extrapolated: bool = False
    note: str = ""

    @property
    def ratio(self) -> float:
        if not math.isfinite(self.measured_s):
            return math.nan
        if self.measured_s <= 0:
            return math.inf if self.estimate_s > 0 else 1.0
        return self.estimate_s / self.measured_s

    @property
    def gate(self) -> str:
        """Whether the estimate puts the view on the same side of the page's 10 s gate as the
        measured time: "same", "MISSED" (runs unasked, takes longer) or "NEEDLESS" (a warning for a
        view that is quick)."""
        from dashboard.state.costs import SLOW_VIEW_S

        if not math.isfinite(self.measured_s):
            return "-"
        slow_est, slow_real = self.estimate_s > SLOW_VIEW_S, self.measured_s > SLOW_VIEW_S
        return "same" if slow_est == slow_real else ("MISSED" if slow_real else "NEEDLESS")

    @property
    def verdict(self) -> str:
        if not math.isfinite(self.ratio):
            return "-" if math.isnan(self.ratio) else "OFF"
        return "ok" if 0.5 <= self.ratio <= 2 else "OFF"


def fresh_cache() -> None:
    """Forget every result in memory (the disk layer is off: GLASSBOX_RESULT_CACHE=off)."""
    from dashboard.state.cache import result_cache

    result_cache().clear()
    _wait_for_workers()


# ------------------------------------------------------------------ the pages
def shap_methods(ctx) -> list[str]:
    """The SHAP page's methods benchmarked here: tree (tree models), auto, exact where ExactShap's
    max_evals allows it with the page's background, kernel."""
    from dashboard.state.rows import background
    from explainers.shap.exact import MAX_EXACT_EVALS

    out = (["tree"] if ctx.description.tree else []) + ["auto"]
    if 2 ** ctx.X.shape[1] * len(background(ctx)) <= MAX_EXACT_EVALS:
        out.append("exact")
    return out + ["kernel"]


def bench_shap(name: str, ctx, method: str, args) -> Line:
    from dashboard.state import costs
    from dashboard.state.attribution import explain_sample, shap_setting

    fresh_cache()
    t0 = time.perf_counter()
    output, _ = shap_setting(ctx, method)
    try:
        rows = costs.default_shap_rows(ctx, method, output)
        fast = costs.shap_is_fast(ctx, method, output)
        if args.quick:
            rows = min(rows, 200 if fast else 10)
        rows = min(rows, len(ctx.X))
        cost, _fits = costs.sample_cost(ctx, method, rows, output)
        fixed, per_row = costs.shap_fixed_seconds(ctx, method, output), costs.shap_seconds_per_row(ctx, method, output)
        note = f"output {output}, fixed {fixed:.3g} s + {per_row:.3g} s/row" + ("" if fast else ", slow")
    except Exception as exc:  # noqa: BLE001 - the page shows no estimate then
        rows, cost, note = min(10, len(ctx.X)), 0.0, f"the estimate raised {_error(exc)}"
    probe = time.perf_counter() - t0
    got = {}
    try:
        measured, extra = timed(lambda p: got.setdefault("res", explain_sample(ctx, rows, method, p)), args.limit)
    except Exception as exc:  # noqa: BLE001 - said in the table
        measured, extra, note = math.nan, False, f"{note}; error: {type(exc).__name__}: {str(exc)[:80]}"
    res = got.get("res")
    if res is not None and res.params.get("scale_note"):
        note += f"; ran as {res.method} on {res.output} (the probability game out of reach: the page fell back)"
    return Line(name, f"shap:{method}", rows, probe, cost, measured, extra, note)


def bench_interactions(name: str, ctx, measure: str, args) -> Line:
    from dashboard.state import interactions as ia

    method, _ = ia.interaction_method(ctx)
    default = {"tree": ia.SHAP_ROWS, "exact": ia.EXACT_ROWS}.get(method, ia.H_ROWS)
    n_rows = min(default, max(2, min(len(ctx.X), 5_000)))
    k = min(ia.MAX_FEATURES, len(ctx.X.columns), ia.MAX_PICK_FEATURES)
    fresh_cache()
    t0 = time.perf_counter()
    parts = {}
    try:
        cost, _fits = ia.interaction_cost(ctx, measure, n_rows, k)
    except Exception as exc:  # noqa: BLE001 - the page then runs without a warning (cost 0)
        cost, parts["estimate_error"] = 0.0, _error(exc)
    probe = time.perf_counter() - t0

    def work(progress):
        shap_res = None
        if method is not None:
            t = time.perf_counter()
            try:
                shap_res = ia.shap_interactions(ctx, n_rows, progress)
            except Exception as exc:  # noqa: BLE001 - the page goes on with H
                parts["shap_error"] = type(exc).__name__
            parts["shap"] = time.perf_counter() - t
        shown = measure if shap_res is not None or measure != ia.SHAP_MEASURE else ia.H_MEASURE
        t = time.perf_counter()
        ia.heatmap_features(ctx, shown, shap_res, n_rows, k)
        parts["h"] = time.perf_counter() - t

    walk = ia._h_by_tree_walk(ctx)
    try:
        measured, extra = timed(work, args.limit)
    except Exception as exc:  # noqa: BLE001 - said in the table
        measured, extra = math.nan, False
        parts["error"] = f"{type(exc).__name__}: {str(exc)[:80]}"
    bits = [f"SHAP interactions ({method}) {parts['shap']:.2f} s" if "shap" in parts else "no SHAP interactions",
            f"H ({'tree walk' if walk else 'brute force'}) {parts['h']:.2f} s" if "h" in parts else "H not reached"]
    if "estimate_error" in parts:
        bits.insert(0, f"the estimate raised {parts['estimate_error']}")
    if "shap_error" in parts:
        bits.append(f"SHAP failed: {parts['shap_error']}")
    if "error" in parts:
        bits.append(f"error: {parts['error']}")
    label = "ia:shap" if measure == ia.SHAP_MEASURE else "ia:H"
    return Line(name, label, f"{n_rows}, k={k}", probe, cost, measured, extra, "; ".join(bits))


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:80]}"


def _importance_cost(ctx, methods, n_repeats: int, rows: int) -> tuple[float, int, str]:
    """importance_cost, and what it raised ("" if nothing): the page then shows no warning (cost 0)."""
    from dashboard.state.importance import importance_cost

    try:
        return (*importance_cost(ctx, methods, n_repeats, rows), "")
    except Exception as exc:  # noqa: BLE001
        return 0.0, rows, _error(exc)


def _importance_module():
    # dashboard.state's __init__ exports a function named importance over the submodule's name
    return importlib.import_module("dashboard.state.importance")


def bench_importance(name: str, ctx, args) -> list[Line]:
    from dashboard.state import costs

    imp = _importance_module()
    page_methods = imp.importance_methods(ctx, costs.shap_is_fast(ctx))
    shown = ("permutation", "oob", "shap")  # a line each; MDI and the libraries' own only in imp:page
    lines, measured_by = [], {}
    for method in page_methods + ([] if "shap" in page_methods else ["shap"]):
        rows, note = IMP_ROWS, ""
        if method == "shap" and method not in page_methods:
            # off by default where SHAP is slow: ticked, the page warns and offers "Use N rows"
            fresh_cache()
            cost, fits = _importance_cost(ctx, [method], IMP_REPEATS, IMP_ROWS)[:2]
            if cost > costs.SLOW_VIEW_S:
                rows = max(50, fits)
            note = f"off by default (slow SHAP); {rows:,} rows (the page's 'Use N rows')" if rows != IMP_ROWS \
                else "off by default (slow SHAP)"
        fresh_cache()
        t0 = time.perf_counter()
        cost, _fits, failed = _importance_cost(ctx, [method], IMP_REPEATS, rows)
        probe = time.perf_counter() - t0
        try:
            measured, extra = timed(lambda p, m=method, n=rows: imp.importance(ctx, m, IMP_REPEATS, n, p), args.limit)
        except Exception as exc:  # noqa: BLE001 - the page skips the method and says why
            measured, extra = math.nan, False
            note = f"skipped by the page: {type(exc).__name__}"
        measured_by[method] = (measured, extra)
        if method == "permutation":
            (_, _), (X_ho, _) = imp.split_rows(ctx)
            note = (f"{min(len(X_ho), rows):,} held-out rows permuted, the estimate counts "
                    f"{min(len(ctx.X), rows):,}; " + note).rstrip("; ")
        if method == "shap":
            per_row = costs.shap_seconds_per_row(ctx, "auto")
            note = (f"{per_row:.3g} s/row, fixed {costs.shap_fixed_seconds(ctx, 'auto'):.3g} s; " + note).rstrip("; ")
        if failed:
            note = f"the estimate raised {failed}; {note}".rstrip("; ")
        if method in shown and math.isfinite(measured):
            lines.append(Line(name, f"imp:{method}", min(rows, len(ctx.X)), probe, cost, measured, extra, note))
    fresh_cache()
    t0 = time.perf_counter()
    cost, _fits, failed = _importance_cost(ctx, page_methods, IMP_REPEATS, IMP_ROWS)
    probe = time.perf_counter() - t0
    got = {m: measured_by[m] for m in page_methods if math.isfinite(measured_by[m][0])}
    total = sum(s for s, _ in got.values())
    note = ", ".join(f"{m} {s:.2f} s" for m, (s, _) in got.items())
    if failed:
        note = f"the estimate raised {failed}; {note}"
    skipped = [m for m in page_methods if m not in got]
    if skipped:
        note += f"; skipped (they raise): {', '.join(skipped)}"
    lines.append(Line(name, "imp:page", min(IMP_ROWS, len(ctx.X)), probe, cost, total,
                      any(e for _, e in got.values()), note))
    return lines


def bench_context(name: str, ctx, args) -> list[Line]:
    from dashboard.state import interactions as ia

    lines = []
    for method in shap_methods(ctx):
        lines.append(bench_shap(name, ctx, method, args))
        report(lines[-1:], header=False)
    method, _ = ia.interaction_method(ctx)
    for measure in (list(ia.MEASURES) if method is not None else [ia.H_MEASURE]):
        lines.append(bench_interactions(name, ctx, measure, args))
        report(lines[-1:], header=False)
    more = bench_importance(name, ctx, args)
    report(more, header=False)
    return lines + more


# ------------------------------------------------------------------ output
COLUMNS = ("context", "method", "rows", "probe s", "estimate s", "measured s", "ratio", "verdict", "10 s gate",
           "note")
WIDTHS = (16, 15, 10, 8, 10, 10, 6, 7, 9, 0)


def _num(x: float) -> str:
    if not math.isfinite(x):
        return "-" if math.isnan(x) else "inf"
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def report(lines, header: bool = True) -> None:
    if header:
        print("  ".join(c.ljust(w) if w else c for c, w in zip(COLUMNS, WIDTHS)))
        print("-" * 120)
    for ln in lines:
        cells = (ln.context, ln.method, str(ln.rows), _num(ln.probe_s), _num(ln.estimate_s),
                 ("~" if ln.extrapolated else "") + _num(ln.measured_s), _num(ln.ratio), ln.verdict, ln.gate, ln.note)
        print("  ".join(c.ljust(w) if w else c for c, w in zip(cells, WIDTHS)), flush=True)


def _load() -> str:
    """The 1-minute load average: above the CPU count, other work shared the cores during the timing."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def _revision() -> str:
    """The commit measured, and the files of the computations changed since (the estimates in flux)."""
    import subprocess

    def git(*a) -> str:
        try:
            done = subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, timeout=10, check=False)
            return done.stdout.rstrip()
        except (OSError, subprocess.SubprocessError):
            return ""

    head = git("rev-parse", "--short", "HEAD").strip() or "?"
    dirty = [ln[3:] for ln in git("status", "--porcelain", "--", "dashboard", "explainers").splitlines()]
    return head + (f" with uncommitted changes to {', '.join(dirty)}" if dirty else "")


def quiet() -> None:
    """Streamlit's warnings about running without `streamlit run` (expected here) off."""
    import streamlit.logger

    streamlit.logger.set_log_level("error")
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rows and a shorter time limit")
    parser.add_argument("--contexts", default=",".join(DEFAULT_CONTEXTS),
                        help=f"comma-separated (default: {','.join(DEFAULT_CONTEXTS)})")
    parser.add_argument("--limit", type=float, default=None,
                        help="seconds after which a computation that reports progress is stopped and "
                             "extrapolated (default 90, 20 with --quick)")
    args = parser.parse_args(argv)
    args.limit = args.limit if args.limit is not None else (20.0 if args.quick else 90.0)
    if os.environ.get("GLASSBOX_RESULT_CACHE", "").lower() not in ("off", "0", "false", "no"):
        print("note: GLASSBOX_RESULT_CACHE is not off: an earlier run's results may come from the disk cache")
    quiet()
    from dashboard.state.warmup import wait_for_warmup, warm_kernels_in_background

    t_start = time.perf_counter()
    warm_kernels_in_background()  # as the server does at start: the probes wait for it
    wait_for_warmup(120)
    import numba

    print(f"{os.cpu_count()} CPUs, numba threads {numba.get_num_threads()}, limit {args.limit:g} s"
          f"{', quick' if args.quick else ''}; kernels warmed in {time.perf_counter() - t_start:.1f} s; "
          f"load average {_load()}")
    print(f"code: {_revision()}")
    names = [n.strip() for n in args.contexts.split(",") if n.strip()]
    report([], header=True)
    lines = []
    with tempfile.TemporaryDirectory(prefix="glassbox-costs-") as tmp:
        for name in names:
            t0 = time.perf_counter()
            ctx = load_context(name, Path(tmp))
            print(f"# {name}: {type(ctx.model).__name__}, {len(ctx.X):,} rows x {ctx.X.shape[1]} features, "
                  f"{ctx.task}, loaded in {time.perf_counter() - t0:.1f} s; load average {_load()}", flush=True)
            lines += bench_context(name, ctx, args)
    print()
    print("All lines:")
    report(lines)
    off = [ln for ln in lines if ln.verdict == "OFF"]
    big = [ln for ln in off if max(ln.estimate_s, ln.measured_s) >= 1.0]
    print(f"\n{len(lines) - len(off)} of {len(lines)} within a factor of 2.")
    print("OFF, estimate or measured over 1 s: "
          + (", ".join(f"{ln.context} {ln.method} ({_num(ln.ratio)}x)" for ln in big) or "none"))
    print("OFF, both under 1 s (no gate at stake): "
          + (", ".join(f"{ln.context} {ln.method} ({_num(ln.ratio)}x)" for ln in off if ln not in big) or "none"))
    gate = [ln for ln in lines if ln.gate not in ("same", "-")]
    print("On the wrong side of the 10 s gate: "
          + (", ".join(f"{ln.context} {ln.method} ({ln.gate})" for ln in gate) or "none"))
    print(f"total {time.perf_counter() - t_start:.0f} s; load average at the end {_load()} "
          f"(on {os.cpu_count()} CPUs: above that, other work shared the cores and the times are noisy)")


if __name__ == "__main__":
    main()
