"""A million rows: start-up, first chart on every page, and peak memory, in a real browser.

Issue #31: with a large served data file the dashboard must start, and every page must
draw its first chart, in seconds, with memory that stays bounded. This script builds its
own inputs in a temporary folder (seeded, nothing downloaded): an XGBoost classifier
(200 trees, depth 6) trained on 50,000 rows and saved with ``save_model`` as .json, and a
data file of ``--rows`` rows (Parquet by default, or CSV) with 30 columns: 24 float
columns (4 of them with about 5% empty cells), 4 integer-coded columns (the model's 28
features) and 2 text columns the model does not use (the dashboard drops them, with a
notice), plus the binary target column ``target``.

It then starts the server as a user does, ``python -m dashboard.cli serve --model M
--data D --target target --port P`` (with GLASSBOX_RESULT_CACHE=off, so no result
cached on disk by an earlier run is reused), and measures

- start-to-listen: from the process start until ``/_stcore/health`` answers ``ok``;
- start-to-first-page: until the Model page shows its title and features table in
  Chromium (headless, driven by Playwright) and the script run is over;
- per page (Model, Quality, Segments, PDP / ICE / ALE, Interactions, SHAP, What if?,
  Importance), visited by clicking the sidebar as a user does: "cold" is the first visit
  of the page, "warm" the second, after the other pages. Each time runs from the click to
  the page's first Plotly chart drawn ("chart"; a table where the page has no chart:
  "table"), or to a cost warning with a "Compute anyway" button, which is not pressed
  ("warning"), or to an error on the page ("error"); "idle" is when the script run
  ended. A chart, table or error counts from the animation frame in which the browser first
  drew it (its own record, on the machine's clock), not from when Playwright's polling saw
  it: in a renderer busy with plotly.js that came up to a second later. The Model page's cold visit is the session's first page, timed from the browser's
  first request (the server already listening; ``--first-visit-after S`` waits S seconds
  first, as a visitor who comes once the server has read its model and data). Every wait is bounded by ``--timeout`` (a
  page past it reads "timeout", and the next page starts from a fresh load);
- the peak resident memory of the server and its child processes, sampled every 0.2 s
  (psutil), after the first page and over the whole run, with the main process's own
  high-water mark (VmHWM).

The same run on the default demo model (``python -m dashboard.cli serve --port P``)
follows, for comparison. The load average is printed at the start and the end (the
machine is shared: a high one inflates every time).

    python benchmarks/million_rows.py [--rows 1000000] [--format parquet|csv]
        [--pages Model,SHAP,...] [--timeout 300] [--demo-only | --skip-demo] [--keep DIR]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

try:  # the browser tests' settings, where their conftest imports outside pytest
    from tests.e2e.conftest import CHROMIUM_ARGS
except Exception:  # noqa: BLE001
    CHROMIUM_ARGS = [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage",
    ]

#: sidebar link -> the page's title (None: the model's own title, on the Model page)
PAGES = {
    "Model": None,
    "Quality": "How good is the model?",
    "Segments": "Segments: groups of rows to compare",
    "PDP / ICE / ALE": "How does the prediction move with a feature?",
    "Interactions": "Which features act together?",
    "SHAP": "Why this prediction?",
    "What if?": "What if?",
    "Importance": "Which features matter?",
    "Compare models": "Which model is better, and where?",  # not in the default list
    "Report": "Share a report",  # not in the default list
}
DEFAULT_PAGES = list(PAGES)[:8]
PAGE_ALIASES = {"PDP": "PDP / ICE / ALE", "What-if": "What if?", "Whatif": "What if?"}

N_FLOAT, N_NAN, N_CODED = 24, 4, 4
TRAIN_ROWS = 50_000
LIVE = '[data-testid="stElementContainer"]:not([data-stale="true"])'
CHART = f'{LIVE} [data-testid="stPlotlyChart"] .js-plotly-plot .main-svg'
TABLE = f'{LIVE} [data-testid="stDataFrame"], {LIVE} [data-testid="stTable"]'
EXCEPTION = f'{LIVE} [data-testid="stException"]'
#: the browser's own record of when each chart, table or error was first drawn: every animation
#: frame, the time (Date.now(), the machine's clock) at which an element of a kind first has a size
#: and is not stale. Playwright's polling reads the page from outside: in a renderer busy parsing
#: plotly.js it answered up to a second after the table was on the screen.
FRAME_CLOCK_JS = """
(() => {
  const kinds = {chart: '[data-testid="stPlotlyChart"] .js-plotly-plot .main-svg',
                 table: '[data-testid="stDataFrame"], [data-testid="stTable"]',
                 error: '[data-testid="stException"]'};
  const shown = new WeakMap();
  window.__gbDrawn = [];
  const frame = () => {
    const now = Date.now();
    for (const [kind, sel] of Object.entries(kinds)) {
      for (const el of document.querySelectorAll(sel)) {
        const box = el.getBoundingClientRect();
        const on = box.width > 0 && box.height > 0 && !el.closest('[data-stale="true"]');
        if (on && !shown.get(el)) window.__gbDrawn.push([kind, now]);
        shown.set(el, on);
      }
    }
    if (window.__gbDrawn.length > 4000) window.__gbDrawn.splice(0, 2000);
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
})();
"""
ALERT = f'[data-testid="stMain"] {LIVE} [data-testid="stAlert"]'


# ------------------------------------------------------------------ inputs
def make_frame(n: int, seed: int):
    """n rows: 24 floats (4 with ~5% NaN), 4 integer codes, 2 text columns, and the target."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n, 6)).astype(np.float32)
    mix = np.random.default_rng(12345).standard_normal((6, N_FLOAT)).astype(np.float32) * 0.6
    floats = latent @ mix + rng.standard_normal((n, N_FLOAT), dtype=np.float32)  # correlated features
    cols = {f"x{i:02d}": floats[:, i].astype(np.float64) for i in range(N_FLOAT)}
    codes = {f"code{j}": rng.integers(0, k, n) for j, k in enumerate((3, 5, 8, 12))}
    logit = (1.2 * floats[:, 0] - 0.8 * floats[:, 1] + 0.5 * floats[:, 2] * floats[:, 3]
             + np.sin(floats[:, 4]) + 0.4 * (codes["code1"] - 2) - 0.3 * (codes["code2"] % 3)
             + 0.2 * floats[:, 5] ** 2 - 0.5)
    target = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    for i in range(N_NAN):  # empty cells after the target is drawn: the model sees them as missing
        col = cols[f"x{i:02d}"]
        col[rng.random(n) < 0.05] = np.nan
    frame = pd.DataFrame({**cols, **codes})
    frame["region"] = pd.Categorical.from_codes(rng.integers(0, 6, n),
                                                ["north", "south", "east", "west", "centre", "islands"]).astype(str)
    frame["note"] = np.char.add("id-", (rng.integers(0, 10**6, n)).astype(str))
    frame["target"] = target
    return frame


def build_inputs(folder: Path, rows: int, fmt: str) -> tuple[Path, Path, dict]:
    import xgboost

    t0 = time.perf_counter()
    train = make_frame(TRAIN_ROWS, seed=1)
    features = [c for c in train.columns if c.startswith(("x", "code"))]
    model = xgboost.XGBClassifier(n_estimators=200, max_depth=6, n_jobs=2, random_state=0,
                                  tree_method="hist", eval_metric="logloss")
    model.fit(train[features], train["target"])
    model_path = folder / "million_xgb.json"
    model.save_model(model_path)
    t_model = time.perf_counter() - t0
    t0 = time.perf_counter()
    data = make_frame(rows, seed=2)
    data_path = folder / f"million_rows.{fmt}"
    if fmt == "parquet":
        data.to_parquet(data_path, engine="pyarrow", index=False)
    else:
        data.to_csv(data_path, index=False)
    info = {"features": len(features), "columns": data.shape[1], "rows": len(data),
            "model_s": t_model, "data_s": time.perf_counter() - t0,
            "model_mb": model_path.stat().st_size / 1e6, "data_mb": data_path.stat().st_size / 1e6,
            "positives": float(data["target"].mean())}
    del data, train
    return model_path, data_path, info


# ------------------------------------------------------------------ memory
class RssSampler(threading.Thread):
    """Peak RSS of a process and all its descendants (their sum), sampled every ``every`` s."""

    def __init__(self, pid: int, every: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.peak = 0  # bytes, peak of the sum over the tree
        self.peak_at = 0.0
        self.main_hwm = 0  # the main process's own VmHWM, bytes
        self.max_children = 0
        self._halt = threading.Event()

    def mark(self) -> int:
        """The peak so far (read at a moment worth naming, e.g. after the first page)."""
        self._sample()
        return self.peak

    def _tree(self):
        try:
            import psutil
        except ImportError:
            return None
        try:
            p = psutil.Process(self.pid)
            return [p] + p.children(recursive=True)
        except psutil.Error:
            return []

    def _sample(self) -> None:
        procs = self._tree()
        total = 0
        if procs is None:  # no psutil: /proc
            pids = [self.pid] + _proc_children(self.pid)
            for pid in pids:
                total += _proc_status(pid, "VmRSS")
            self.max_children = max(self.max_children, len(pids) - 1)
        else:
            for p in procs:
                with contextlib.suppress(Exception):  # it ended between listing and reading
                    total += p.memory_info().rss
            self.max_children = max(self.max_children, len(procs) - 1)
        self.main_hwm = max(self.main_hwm, _proc_status(self.pid, "VmHWM"))
        if total > self.peak:
            self.peak, self.peak_at = total, time.monotonic()

    def run(self) -> None:
        while not self._halt.is_set():
            self._sample()
            self._halt.wait(self.every)

    def stop(self) -> None:
        self._halt.set()
        self.join(2)


def _proc_status(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _proc_children(pid: int) -> list[int]:
    out = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            kids = (task / "children").read_text().split()
            for k in kids:
                out.append(int(k))
                out.extend(_proc_children(int(k)))
    except OSError:
        pass
    return out


# ------------------------------------------------------------------ server
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args: list[str], log):
    """``python -m dashboard.cli serve ARGS`` in its own process group; (process, start time)."""
    env = {**os.environ, "GLASSBOX_RESULT_CACHE": "off", "PYTHONUNBUFFERED": "1"}
    env.pop("GLASSBOX_TRUST_PICKLES", None)
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "dashboard.cli", "serve", *args], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, t0


def wait_listening(proc, url: str, timeout: float) -> float | None:
    """Seconds (monotonic clock) when /_stcore/health answered ok, or None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return time.monotonic()
        except OSError:
            time.sleep(0.1)
    return None


def stop_server(proc) -> None:
    """End the server and its children (its own process group, started for it)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, 15)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
    try:  # children left behind in the group (a worker)
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        pass


# ------------------------------------------------------------------ browser
def _state(page) -> str | None:
    try:
        return page.locator('[data-testid="stApp"]').get_attribute("data-test-script-state", timeout=2_000)
    except Exception:  # noqa: BLE001
        return None


def _visible(page, selector: str) -> bool:
    try:
        return page.locator(selector).first.is_visible()
    except Exception:  # noqa: BLE001
        return False


def _heading(page, title: str | None):
    scope = page.locator(f'[data-testid="stMain"] {LIVE}')
    if title is None:
        return scope.locator("h1").first
    return scope.get_by_role("heading", name=title).first


def demo_title() -> str | None:
    """The title of the demo model a fresh session opens on (its Model page's heading)."""
    import ast

    name = "diabetes_forest"
    with contextlib.suppress(Exception):  # read, not imported: that would start Streamlit's caches
        tree = ast.parse((ROOT / "dashboard" / "state" / "session.py").read_text())
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "DEFAULT_DEMO" for t in node.targets):
                name = ast.literal_eval(node.value)
    try:
        from demo_models.build import DEMOS
    except Exception:  # noqa: BLE001 - then any first heading marks the Model page
        return None
    return next((d.title for d in DEMOS if d.name == name), None)


def click_link(page, link: str) -> None:
    nav = page.get_by_test_id("stSidebarNav")
    target = nav.get_by_role("link", name=link, exact=True)
    if not target.count() or not target.first.is_visible():
        more = page.get_by_test_id("stSidebarNavViewButton")
        if more.count() and "more" in (more.first.inner_text() or ""):
            more.first.click()
    target.first.click(timeout=30_000)


def _wait_quiet(page, deadline: float, quiet: float = 0.6) -> float | None:
    """When the script run ended: the start of a stretch of ``quiet`` s that reads notRunning (a
    single reading can be the moment between a click and its rerun)."""
    since = None
    while time.monotonic() < deadline:
        now = time.monotonic()
        if _state(page) == "notRunning":
            since = since or now
            if now - since >= quiet:
                return since
        else:
            since = None
        page.wait_for_timeout(100)
    return None


def _drawn_at(page, kind: str, since: float) -> float | None:
    """The machine-clock time (time.time()) at which the browser first drew an element of
    ``kind`` ("chart", "table", "error") at or after ``since`` (:data:`FRAME_CLOCK_JS`); None
    where it recorded none."""
    try:
        t = page.evaluate(
            "([kind, since]) => { const ts = (window.__gbDrawn || []).filter(([k, t]) => k === kind && t >= since)"
            ".map(([k, t]) => t); return ts.length ? Math.min(...ts) : null; }", [kind, since * 1000.0])
    except Exception:  # noqa: BLE001
        return None
    return None if t is None else t / 1000.0


def watch_page(page, title: str | None, t0: float, timeout: float, want_table: bool) -> dict:
    """From t0 (a click or a goto): what the page shows first, when, and when its run ends.

    A chart, a "Compute anyway" cost warning or an error ends the watch at once; a table does on
    the Model page (``want_table``), elsewhere only once the run is over with no chart drawn.
    """
    deadline = t0 + timeout
    wall0 = time.time() - (time.monotonic() - t0)  # t0 on the machine's clock, the browser's record's
    res = {"seen": "timeout", "first": None, "idle": None, "alerts": [], "error": ""}
    heading = _heading(page, title)
    titled = False
    t_table = None
    quiet_since = None
    while time.monotonic() < deadline:
        if not titled:
            try:
                titled = heading.is_visible()
            except Exception:  # noqa: BLE001
                titled = False
            if not titled:
                page.wait_for_timeout(100)
                continue
        now = time.monotonic()
        if _visible(page, EXCEPTION):
            res["seen"], res["first"] = "error", now - t0
            with contextlib.suppress(Exception):
                res["error"] = " ".join(page.locator(EXCEPTION).first.inner_text().split())[:300]
            break
        if _visible(page, CHART):
            res["seen"], res["first"] = "chart", now - t0
            break
        if _visible(page, f'{LIVE} button:has-text("Compute anyway")'):
            res["seen"], res["first"] = "warning", now - t0
            break
        if t_table is None and _visible(page, TABLE):
            t_table = now
            if want_table:
                res["seen"], res["first"] = "table", now - t0
                break
        if _state(page) == "notRunning":  # over with no chart: say what it shows after a quiet second
            quiet_since = quiet_since or now
            if now - quiet_since > 1.0:
                res["seen"], res["first"] = ("table", t_table - t0) if t_table else ("nothing", quiet_since - t0)
                res["idle"] = max(quiet_since - t0, res["first"])
                break
        else:
            quiet_since = None
        page.wait_for_timeout(100)
    if res["first"] is None:
        res["seen"] = "timeout" if titled else "timeout (no title)"
        return res
    if res["seen"] in ("chart", "table", "error"):  # when the browser drew it, where it recorded that
        drawn = _drawn_at(page, res["seen"], wall0)
        if drawn is not None:
            res["first"] = min(res["first"], max(0.0, drawn - wall0))
    if res["idle"] is None:
        end = _wait_quiet(page, deadline)
        res["idle"] = None if end is None else max(end - t0, res["first"])
    with contextlib.suppress(Exception):
        for el in page.locator(ALERT).all()[:8]:
            text = " ".join(el.inner_text().split())
            if text:
                res["alerts"].append(text[:200])
    return res


def visit(page, link: str, title: str | None, timeout: float) -> dict:
    t0 = time.monotonic()
    try:
        click_link(page, link)
    except Exception as exc:  # noqa: BLE001
        return {"seen": f"no link ({type(exc).__name__})", "first": None, "idle": None, "alerts": [], "error": ""}
    return watch_page(page, title, t0, timeout, want_table=(link == "Model"))


# ------------------------------------------------------------------ one run
def run_one(label: str, serve_args: list[str], pages: list[str], model_title: str | None,
            timeout: float, folder: Path, settle: float = 0.0) -> dict:
    from playwright.sync_api import sync_playwright

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = folder / f"server_{label}.log"
    out = {"label": label, "pages": {}, "log": log_path, "settle": settle}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                    args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.add_init_script(FRAME_CLOCK_JS)
        log = open(log_path, "wb")  # noqa: SIM115 - the server writes it until stop_server
        proc, t_start = start_server([*serve_args, "--port", str(port)], log)
        sampler = RssSampler(proc.pid)
        sampler.start()
        try:
            t_listen = wait_listening(proc, url, timeout)
            out["listen"] = None if t_listen is None else t_listen - t_start
            if t_listen is None:
                out["failed"] = f"server did not answer (exit status {proc.poll()})"
                return out
            if settle:  # the first visitor comes this long after the server listens
                time.sleep(settle)
            t_goto = time.monotonic()
            page.goto(url, timeout=timeout * 1000)
            first = watch_page(page, model_title, t_goto, timeout, want_table=True)
            out["first_page"] = None if first["idle"] is None else t_goto + first["idle"] - t_start
            out["first_seen"] = first["seen"]
            out["rss_after_load"] = sampler.mark()
            out["model_alerts"] = first["alerts"]
            print(f"  [{label}] listening after {_s(out['listen'])}, first page after {_s(out['first_page'])} "
                  f"({first['seen']}), RSS so far {_mb(out['rss_after_load'])}", flush=True)
            current = "Model"
            for rnd in ("cold", "warm"):
                for link in pages:
                    if rnd == "cold" and link == "Model":
                        res = first  # the first page of the session is the Model page's cold visit
                    else:
                        if link == current:  # a warm visit comes from another page
                            other = "Quality" if link == "Model" else "Model"
                            visit(page, other, PAGES[other] if other != "Model" else model_title, timeout)
                        res = visit(page, link, PAGES[link] if link != "Model" else model_title, timeout)
                    current = link
                    out["pages"].setdefault(link, {})[rnd] = res
                    print(f"  [{label}] {rnd:<4} {link:<16} first {_s(res['first']):>8}  idle {_s(res['idle']):>8}"
                          f"  {res['seen']}  RSS peak {_mb(sampler.peak)}", flush=True)
                    if res["seen"].startswith("timeout"):  # let a stuck run end before the next page
                        page.goto(url, timeout=timeout * 1000)
                        watch_page(page, model_title, time.monotonic(), timeout, want_table=True)
            out["rss_peak"] = sampler.mark()
            out["main_hwm"] = sampler.main_hwm
            out["children"] = sampler.max_children
        finally:
            sampler.stop()
            stop_server(proc)
            log.close()
            browser.close()
    return out


# ------------------------------------------------------------------ report
def _s(v) -> str:
    return "-" if v is None else f"{v:.1f} s"


def _mb(v) -> str:
    return "-" if not v else f"{v / 1e6:,.0f} MB"


def print_run(out: dict) -> None:
    print(f"\n=== {out['label']} ===")
    if out.get("failed"):
        print(f"  FAILED: {out['failed']}")
    print(f"  start to listen:      {_s(out.get('listen'))}")
    print(f"  start to first page:  {_s(out.get('first_page'))}  ({out.get('first_seen', '-')})"
          + (f", the first visit {out['settle']:.0f} s after the server listened" if out.get("settle") else ""))
    print(f"  {'page':<17}{'cold first':>11}{'cold idle':>11}  {'seen':<10}{'warm first':>11}{'warm idle':>11}  seen")
    for link, r in out["pages"].items():
        c, w = r.get("cold", {}), r.get("warm", {})
        print(f"  {link:<17}{_s(c.get('first')):>11}{_s(c.get('idle')):>11}  {c.get('seen', '-'):<10}"
              f"{_s(w.get('first')):>11}{_s(w.get('idle')):>11}  {w.get('seen', '-')}")
    print(f"  peak RSS (server + children, sampled): after the first page {_mb(out.get('rss_after_load'))}, "
          f"overall {_mb(out.get('rss_peak'))}; main process VmHWM {_mb(out.get('main_hwm'))}; "
          f"children seen at once: {out.get('children', '-')}")
    notes = []
    for text in out.get("model_alerts", []):
        notes.append(f"Model page: {text}")
    for link, r in out["pages"].items():
        for rnd, res in r.items():
            if res.get("error"):
                notes.append(f"{link} ({rnd}) error: {res['error']}")
            if rnd == "cold" and link != "Model":
                notes.extend(f"{link}: {t}" for t in res.get("alerts", []))
    if notes:
        print("  notices and alerts on the pages:")
        for n in dict.fromkeys(notes):
            print(f"    - {n}")
    try:
        log = Path(out["log"]).read_text(errors="replace")
    except OSError:
        log = ""
    tracebacks = log.count("Traceback")
    lines = [ln for ln in log.splitlines() if "Error" in ln or "Warning" in ln or "Traceback" in ln]
    print(f"  server log {out['log']}: {tracebacks} traceback(s)" + (":" if lines else ""))
    for ln in list(dict.fromkeys(lines))[:15]:
        print(f"    | {ln[:200]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows in the served data file")
    ap.add_argument("--format", choices=["parquet", "csv"], default="parquet")
    ap.add_argument("--pages", default=",".join(DEFAULT_PAGES), help="sidebar links, comma separated")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds allowed for each wait")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--demo-only", action="store_true", help="only the demo model's run")
    which.add_argument("--skip-demo", action="store_true", help="no demo run for comparison")
    ap.add_argument("--keep", metavar="DIR", help="build the inputs and logs in DIR and keep them")
    ap.add_argument("--first-visit-after", type=float, default=0.0, metavar="S",
                    help="seconds between the server listening and the first visit (0: at once, as the "
                         "start-to-first-page figure is measured; 10: a visitor who comes once the server "
                         "has read its model and data)")
    args = ap.parse_args(argv)
    pages = [PAGE_ALIASES.get(p.strip(), p.strip()) for p in args.pages.split(",") if p.strip()]
    unknown = [p for p in pages if p not in PAGES]
    if unknown:
        ap.error(f"unknown pages {unknown}; choose from {list(PAGES)}")

    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="glassbox_million_"))
    folder.mkdir(parents=True, exist_ok=True)
    runs = []
    try:
        if not args.demo_only:
            model_path, data_path, info = build_inputs(folder, args.rows, args.format)
            print(f"inputs in {folder}: model {info['model_mb']:.1f} MB ({info['features']} features, trained "
                  f"in {info['model_s']:.1f} s), data {info['rows']:,} rows x {info['columns']} columns "
                  f"({args.format}, {info['data_mb']:.0f} MB, written in {info['data_s']:.1f} s, "
                  f"{info['positives']:.0%} positive)", flush=True)
            runs.append(run_one(f"{args.rows:,} rows", ["--model", str(model_path), "--data", str(data_path),
                                                        "--target", "target"],
                                pages, model_path.stem, args.timeout, folder, args.first_visit_after))
        if not args.skip_demo:
            runs.append(run_one("demo model", [], pages, demo_title(), args.timeout, folder,
                                args.first_visit_after))
        for out in runs:
            print_run(out)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
