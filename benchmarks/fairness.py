"""How a light page fares while other users run heavy views on the same server, in real browsers.

One dashboard server on loopback (its disk cache of results off, so nothing computed by an
earlier run is reused), driven by Playwright and Debian's Chromium:

- the **light user**, one browser context, loads the Quality page of ``breast_cancer_xgb``
  (a binary classifier no heavy user touches) by URL, each time with a decision threshold
  not computed yet (``?threshold=0.31``, ``0.32``, ... alone; ``0.61``, ... under load).
  The model, its data and its predictions are cached by a warm-up visit first (not
  counted), so each repetition is a
  *warm page in a new session* whose threshold-level numbers (confusion matrix, metrics,
  curves) are computed cold. The time runs from ``page.goto`` to the first chart drawn
  (``.js-plotly-plot .main-svg``, the confusion matrix). It is measured ``--repeats`` times
  ALONE (no other users, server idle), then ``--repeats`` times UNDER LOAD;
- the **heavy users**, ``--users`` more browser contexts (default 6), open a heavy view
  each by URL, all at once, right before the light user's first repetition under load
  (the views are listed in :data:`HEAVY`: kernel SHAP beeswarms, Friedman's H over 25
  features, permutation importance with mean |SHAP|, a 2-D PDP). A page that asks
  "Compute anyway" (its cost warning) gets the button clicked. Each heavy user's time runs
  from its ``goto`` to its own chart drawn; after ``--heavy-timeout`` seconds it counts as
  not finished. More users than views repeat the list: a repeated view then shares its
  computation with the first (the server computes one key once), so it is no extra load;
- the server's ``GET /_stcore/health`` is sampled every 0.5 s (5 s timeout) throughout:
  its latency says whether the server's event loop still answers at all.

    python benchmarks/fairness.py [--repeats 3] [--heavy-timeout 180] [--users 6]

How to read it: "ratio" is the light page's median (and worst) time under load over its
median alone: 1x would be perfect isolation; on a machine with C cores and U heavy users
each holding a core (or the GIL), something near (U + 1) / C is what plain time-sharing
gives. The heavy users' times are wall-clock times while sharing the machine with each
other and the light user, not their cost alone. The browsers run on the same machine as
the server, so part of any slowdown is Chromium's own work (seven pages drawing progress
bars). Nothing here asserts on time: quote medians and ratios, and the machine's cores.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from demo_models.build import DEMO_NAMES, ensure_built  # noqa: E402
from tests.e2e.conftest import CHROMIUM_ARGS, start_server, stop_server  # noqa: E402

#: a page in a context that is not focused must not have its timers throttled: the heavy
#: pages' watchers (below) time their charts with them
LAUNCH_ARGS = CHROMIUM_ARGS + ["--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                               "--disable-backgrounding-occluded-windows"]
LIGHT_MODEL = "breast_cancer_xgb"
FIRST_CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot .main-svg'
ERRORS = '[data-testid="stException"], [data-testid="stAlertContentError"]'
HEALTH_EVERY_S, HEALTH_TIMEOUT_S = 0.5, 5.0
VIEWPORT = {"width": 1400, "height": 1000}


@dataclass(frozen=True)
class HeavyView:
    label: str
    path: str  # page url path and query (the state model's URL parameters)
    chart_key: str  # the st.plotly_chart key whose chart marks "done" (class st-key-<key>)


#: the heavy views, heaviest first (``--users 3`` takes the first three). Each one alone, on a
#: shared 2-core machine when this was written: about 32, 32, 48, 8, 9 and 4 s.
HEAVY = [
    HeavyView("SHAP beeswarm, kernel, diabetes_forest, 442 rows",
              "attribution?model=diabetes_forest&global=1&method=kernel&sample=442", "shap_beeswarm"),
    HeavyView("Interactions, Friedman's H, breast_cancer_logistic, 25 features, 300 rows",
              "interactions?model=breast_cancer_logistic&measure=H+statistic&features=25&rows=300",
              "interactions_heatmap"),
    HeavyView("SHAP beeswarm, kernel, wine_gb, 178 rows",
              "attribution?model=wine_gb&global=1&method=kernel&sample=178", "shap_beeswarm"),
    HeavyView("Importance, permutation x50 + mean |SHAP|, breast_cancer_hgb, 569 rows",
              "importance-comparison?model=breast_cancer_hgb&repeats=50&rows=569&shap=1", "imp_bars"),
    HeavyView("SHAP beeswarm, kernel, housing_gb, 1000 rows",
              "attribution?model=housing_gb&global=1&method=kernel&sample=1000", "shap_beeswarm"),
    HeavyView("PDP 2-D longitude x latitude, grid 150, housing_lgbm, 2000 rows",
              "effects?model=housing_lgbm&feature=longitude&feature2=latitude&grid2=150&rows=2000", "pdp_2d"),
]

#: runs in every heavy page: reports its chart (or an error) through the exposed binding,
#: and clicks "Compute anyway" when the page asks (at most 3 times, 3 s apart: a click that
#: lands while the page redraws may be lost)
WATCHER = """
(() => {
  const key = %r;
  const f = {reported: false, clicks: 0, last: 0};
  setInterval(() => {
    if (f.reported || !document.body) return;
    if (document.querySelector('.st-key-' + key + ' .js-plotly-plot .main-svg')) {
      f.reported = true; window.__fairReport({kind: 'done', t: Date.now() / 1000, clicks: f.clicks}); return;
    }
    const err = document.querySelector(%r);
    if (err) {
      f.reported = true;
      window.__fairReport({kind: 'error', t: Date.now() / 1000, text: (err.innerText || '').slice(0, 300)});
      return;
    }
    // only once the run that drew the button is over: while the next one runs, the old button
    // stays on the page (stale), and a click on it would interrupt that run
    const idle = document.querySelector('[data-testid="stApp"][data-test-script-state="notRunning"]');
    for (const b of idle ? document.querySelectorAll('button') : []) {
      if (b.innerText.trim() === 'Compute anyway' && !b.disabled && f.clicks < 3 && Date.now() - f.last > 3000) {
        b.click(); f.clicks += 1; f.last = Date.now();
      }
    }
  }, 100);
})();
"""


# --------------------------------------------------------------------- health
class HealthSampler:
    """GET /_stcore/health every HEALTH_EVERY_S in a thread; latencies by phase (None: failed)."""

    def __init__(self, url: str):
        self.url = f"{url}/_stcore/health"
        self.phase = "idle"
        self.samples: dict[str, list] = {}
        self.stalls: list[tuple[float, float | None]] = []  # (time.time() at the request, latency or None)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fairness-health", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            t0 = time.perf_counter()
            try:
                with urllib.request.urlopen(self.url, timeout=HEALTH_TIMEOUT_S) as r:
                    ok = r.read().strip() == b"ok"
            except OSError:
                ok = False
            took = time.perf_counter() - t0
            self.samples.setdefault(self.phase, []).append(took if ok else None)
            if not ok or took > 1.0:
                self.stalls.append((time.time() - took, took if ok else None))
            self._stop.wait(max(0.0, HEALTH_EVERY_S - took))

    def stop(self):
        self._stop.set()
        self._thread.join(HEALTH_TIMEOUT_S + 1)

    def line(self, phase: str) -> str:
        got = self.samples.get(phase, [])
        ok = [s for s in got if s is not None]
        if not ok:
            return f"no answer in {len(got)} samples"
        failed = len(got) - len(ok)
        return (f"{len(got)} samples, median {statistics.median(ok) * 1000:.0f} ms, worst {max(ok) * 1000:.0f} ms"
                + (f", {failed} failed or over {HEALTH_TIMEOUT_S:.0f} s" if failed else ", none failed"))


# ---------------------------------------------------------------- light user
def _cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) the process used so far; None where /proc is not there."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _server_idle(pid: int, limit_s: float = 60.0) -> float:
    """Wait (at most ``limit_s``) until the server uses under 5 % of a core over a second (the
    background kernel warm-up after the first page); return the seconds waited."""
    stat = Path(f"/proc/{pid}/stat")
    t0 = time.perf_counter()
    if not stat.exists():
        time.sleep(10)
        return time.perf_counter() - t0

    def cpu() -> float:
        return _cpu_seconds(pid) or 0.0

    while time.perf_counter() - t0 < limit_s:
        before = cpu()
        time.sleep(1.0)
        if cpu() - before < 0.05:
            break
    return time.perf_counter() - t0


def light_visit(page, url: str, threshold: float, timeout_s: float) -> tuple[float | None, str]:
    """Seconds from goto to the Quality page's first chart at ``threshold`` (None: not drawn
    within ``timeout_s``), and a note (an error shown on the page)."""
    t0 = time.perf_counter()
    try:
        page.goto(f"{url}/quality?model={LIGHT_MODEL}&threshold={threshold:.2f}", wait_until="commit",
                  timeout=timeout_s * 1000)
        page.locator(FIRST_CHART).first.wait_for(state="visible", timeout=timeout_s * 1000)
        took, note = time.perf_counter() - t0, ""
    except Exception as exc:  # noqa: BLE001 - a timeout is a result here
        took, note = None, f"not drawn: {type(exc).__name__}"
        page.screenshot(path="/tmp/fairness_light_fail.png")
    if page.locator(ERRORS).count():
        note += " page shows an error: " + page.locator(ERRORS).first.inner_text()[:200].replace("\n", " ")
    return took, note.strip()


# ---------------------------------------------------------------- heavy users
@dataclass
class HeavyUser:
    view: HeavyView
    context: object = None
    started: float = 0.0  # time.time() before its goto
    outcome: str = "running"  # running, done, error
    seconds: float | None = None
    note: str = ""
    clicks: int = 0
    extra: dict = field(default_factory=dict)

    def report(self, _source, payload: dict) -> None:
        if self.outcome != "running":
            return
        self.outcome = payload["kind"]
        self.seconds = float(payload["t"]) - self.started
        self.clicks = int(payload.get("clicks", 0))
        if self.outcome == "error":
            self.note = " ".join(str(payload.get("text", "")).split())


def open_heavy(browser, url: str, users: list[HeavyUser]) -> None:
    """A context per heavy user with its watcher, all pages opened at once (goto returns on commit)."""
    for u in users:
        u.context = browser.new_context(viewport=VIEWPORT)
        u.context.expose_binding("__fairReport", u.report)
        u.context.add_init_script(script=WATCHER % (u.view.chart_key, ERRORS))
    pages = [u.context.new_page() for u in users]
    for u, page in zip(users, pages):
        u.started = time.time()
        try:
            page.goto(f"{url}/{u.view.path}", wait_until="commit", timeout=60_000)
        except Exception as exc:  # noqa: BLE001 - recorded, the others go on
            u.outcome, u.note = "error", f"navigation failed: {type(exc).__name__}"


def wait_heavy(users: list[HeavyUser], pump_page, timeout_s: float) -> None:
    """Let the heavy users finish, each at most ``timeout_s`` after its start (reports arrive while
    Playwright waits: ``pump_page.wait_for_timeout``)."""
    while any(u.outcome == "running" and time.time() - u.started < timeout_s for u in users):
        pump_page.wait_for_timeout(250)
    for u in users:
        if u.outcome == "running":
            u.outcome, u.note = "not finished", f"no chart after {timeout_s:.0f} s"


def running(users: list[HeavyUser]) -> int:
    return sum(u.outcome == "running" for u in users)


# ----------------------------------------------------------------------- run
def _fmt(xs: list) -> str:
    return ", ".join("—" if x is None else f"{x:.2f}" for x in xs)


def print_results(args, alone, loaded, load_running, users, health, load_start: float | None) -> None:
    ok_alone = [t for t in alone if t is not None]
    ok_load = [t for t in loaded if t is not None]
    print(f"\n== light user: Quality page of {LIGHT_MODEL}, new session, threshold not computed yet; "
          f"goto -> first chart ({os.cpu_count()} CPUs) ==")
    med_alone = statistics.median(ok_alone) if ok_alone else None
    if med_alone is not None:
        print(f"  alone:       median {med_alone:6.2f} s   (each: {_fmt(alone)})")
    if ok_load:
        med, worst = statistics.median(ok_load), max(ok_load)
        print(f"  under load:  median {med:6.2f} s, worst {worst:6.2f} s   (each: {_fmt(loaded)}; "
              f"heavy users still running at each start: {', '.join(map(str, load_running))})")
        if med_alone:
            print(f"  ratio under load / alone: median {med / med_alone:.1f}x, worst {worst / med_alone:.1f}x")
    missing = (len(alone) - len(ok_alone)) + (len(loaded) - len(ok_load))
    if missing:
        print(f"  {missing} visit(s) drew no chart in time")
    print(f"\n== heavy users ({len(users)} contexts, opened at once; timeout {args.heavy_timeout:.0f} s) ==")
    for i, u in enumerate(users, 1):
        what = (f"{u.seconds:7.1f} s" if u.outcome == "done" else
                f"error after {u.seconds:.1f} s" if u.outcome == "error" and u.seconds is not None else u.outcome)
        extra = f"  [clicked Compute anyway x{u.clicks}]" if u.clicks else ""
        print(f"  {i}. {u.view.label:<76} {what}{extra}" + (f"\n       {u.note}" if u.note and u.outcome != "done" else ""))
    print(f"\n== server health, GET /_stcore/health every {HEALTH_EVERY_S} s ==")
    print(f"  alone (light user only): {health.line('alone')}")
    print(f"  under load:              {health.line('load')}")
    if health.stalls and load_start:
        print("  answers over 1 s (or none), seconds after the heavy users started: " + ", ".join(
            f"+{t - load_start:.0f} s: " + ("failed" if s is None else f"{s:.1f} s") for t, s in health.stalls))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="light-page visits per phase (median); at most 25")
    ap.add_argument("--heavy-timeout", type=float, default=180.0, help="seconds a heavy user may take")
    ap.add_argument("--users", type=int, default=6, help="heavy users (browser contexts)")
    args = ap.parse_args(argv)
    if not 1 <= args.repeats <= 25 or args.users < 0 or args.heavy_timeout <= 0:
        ap.error("--repeats must be 1..25, --users at least 0, --heavy-timeout positive")
    chromium = shutil.which("chromium")
    if chromium is None:
        print("No chromium on PATH (Debian: apt-get install -y chromium); this benchmark never downloads one.")
        return 2
    assert LIGHT_MODEL in DEMO_NAMES and all(v.path.split("model=")[1].split("&")[0] in DEMO_NAMES for v in HEAVY)
    from playwright.sync_api import sync_playwright

    ensure_built()
    users = [HeavyUser(HEAVY[i % len(HEAVY)]) for i in range(args.users)]
    alone, loaded, load_running = [], [], []
    t_start = time.perf_counter()
    load_before, server_cpu = _load(), None
    proc, url = start_server({"GLASSBOX_RESULT_CACHE": "off"})
    health = HealthSampler(url).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=LAUNCH_ARGS)
            try:
                light = browser.new_context(viewport=VIEWPORT).new_page()
                warm, note = light_visit(light, url, 0.5, args.heavy_timeout)
                waited = _server_idle(proc.pid)
                print(f"warm-up visit (not counted): {_fmt([warm])} s {note}; server idle after {waited:.0f} s more",
                      flush=True)
                health.phase = "alone"
                for i in range(args.repeats):
                    took, note = light_visit(light, url, 0.31 + i / 100, args.heavy_timeout)
                    alone.append(took)
                    print(f"  alone #{i + 1}: {_fmt([took])} s {note}", flush=True)
                health.phase = "load"
                cpu0, wall0 = _cpu_seconds(proc.pid), time.perf_counter()
                open_heavy(browser, url, users)
                light.wait_for_timeout(2000)  # their scripts are running before the first light visit
                for i in range(args.repeats):
                    load_running.append(running(users))
                    at = time.time() - (users[0].started if users else time.time())
                    took, note = light_visit(light, url, 0.61 + i / 100, args.heavy_timeout)
                    loaded.append(took)
                    print(f"  under load #{i + 1}, from +{at:.0f} s: {_fmt([took])} s "
                          f"({load_running[-1]} heavy running) {note}", flush=True)
                wait_heavy(users, light, args.heavy_timeout)
                health.phase = "after"
                cpu1, wall1 = _cpu_seconds(proc.pid), time.perf_counter()
                if cpu0 is not None and cpu1 is not None:
                    server_cpu = (cpu1 - cpu0, wall1 - wall0)
            finally:
                for u in users:
                    if u.context is not None:
                        u.context.close()
                browser.close()
    finally:
        health.stop()
        stop_server(proc)
    print_results(args, alone, loaded, load_running, users, health, users[0].started if users else None)
    print(f"\n== machine: {os.cpu_count()} CPUs; load average (1, 5, 15 min) before {load_before}, after {_load()} ==")
    if server_cpu:
        print(f"  the server used {server_cpu[0]:.0f} CPU-s in the {server_cpu[1]:.0f} s of load "
              f"({server_cpu[0] / server_cpu[1]:.2f} cores on average)")
    print("  (other programs running on the machine meanwhile make every number here larger)")
    print(f"\n(total {time.perf_counter() - t_start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
