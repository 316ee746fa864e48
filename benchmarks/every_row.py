"""Every row of a large table on request: the estimate each switch shows against the time taken.

Issue #31: past a sample, the SHAP page (mean |SHAP| of every row), the Interactions page (mean
|SHAP interaction| of every row) and the PDP page (partial dependence of every row) offer the
computation on every row, saying how long it takes before it starts. This script builds the
inputs of ``million_rows.py`` (an XGBoost classifier, 200 trees of depth 6, and a ``--rows``-row
Parquet file; seeded, nothing downloaded), loads them as ``glassbox serve`` does, and for each
switch prints the estimate the page would show, the seconds the computation took (the same
calls as the page, in this process, with GLASSBOX_RESULT_CACHE=off), their ratio, and the
seconds the estimate's own probes took. The SHAP values' and interaction values' estimates come
from two block-sized probes; the PD's tree walk has no estimate (the page says "a few seconds per
million rows" in words), so its line prints the time alone.

    python benchmarks/every_row.py [--rows 1000000] [--keep DIR] [--only shap,interactions,pd]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "benchmarks"))  # million_rows (after the project: benchmarks/dashboard.py)

PARTS = ("shap", "interactions", "pd")


def _context(model_path: Path, data_path: Path):
    os.environ["GLASSBOX_SERVE_MODELS"] = json.dumps([{"model": str(model_path), "data": str(data_path),
                                                       "target": "target"}])
    os.environ["GLASSBOX_RESULT_CACHE"] = "off"
    from dashboard.state import context
    from dashboard.state.warmup import wait_for_warmup, warm_kernels_in_background

    ctx = context.context_for(context.default_model())
    warm_kernels_in_background()
    wait_for_warmup(300)  # the kernels' warm-up is the server's, not the switches'
    return ctx


def _line(name: str, estimate: float | None, probe_s: float | None, took: float) -> None:
    ratio = f"{estimate / took:6.2f}x" if estimate else "     - "
    est = f"{estimate:8.1f} s" if estimate is not None else "       - "
    probe = f"{probe_s:6.2f} s" if probe_s is not None else "     - "
    print(f"  {name:<40}{est}  {took:8.1f} s  {ratio}  {probe}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--keep", metavar="DIR", help="build the inputs in DIR and keep them (reused when there)")
    ap.add_argument("--only", default=",".join(PARTS), help=f"comma separated, of {','.join(PARTS)}")
    args = ap.parse_args(argv)
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="glassbox_every_row_"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        model_path, data_path = folder / "million_xgb.json", folder / "million_rows.parquet"
        if not (model_path.exists() and data_path.exists()):
            from million_rows import build_inputs

            model_path, data_path, _ = build_inputs(folder, args.rows, "parquet")
        ctx = _context(model_path, data_path)
        from dashboard import state
        from dashboard.state import every_row, interactions

        print(f"{len(ctx.X):,} rows x {ctx.X.shape[1]} features")
        print(f"  {'switch':<40}{'estimate':>10}  {'took':>10}  {'ratio':>7}  {'probes':>8}")
        if "shap" in parts:
            output, _ = state.shap_setting(ctx, "auto")
            t0 = time.perf_counter()
            est = every_row.every_row_seconds(ctx, "auto", output)
            probe = time.perf_counter() - t0
            t0 = time.perf_counter()
            every_row.mean_abs_every_row(ctx, "auto", output)
            _line("mean |SHAP| of every row", est, probe, time.perf_counter() - t0)
        if "interactions" in parts:
            interactions.shap_interactions(ctx, interactions.SHAP_ROWS)  # the page's sample, drawn first
            t0 = time.perf_counter()
            est = every_row.interactions_every_row_seconds(ctx)
            probe = time.perf_counter() - t0
            t0 = time.perf_counter()
            every_row.interactions_every_row(ctx)
            _line("mean |SHAP interaction| of every row", est, probe, time.perf_counter() - t0)
        if "pd" in parts:
            f1, f2 = ctx.X.columns[:2]
            for feats, grid in (((f1,), 40), ((f1, f2), 20)):
                sample = state.pdp(ctx, feats, grid, (0.05, 0.95))
                est = state.pdp_every_row_seconds(ctx, sample)
                t0 = time.perf_counter()
                state.pdp_every_row(ctx, feats, grid, (0.05, 0.95))
                _line(f"PD of every row, {len(feats)} feature(s) ({sample.method})", est or None, None,
                      time.perf_counter() - t0)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
