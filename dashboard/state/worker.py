"""Long computations off the page's script: :func:`in_worker` runs one in a worker thread
the script waits on (so a Stop or a widget change takes effect at once), and
:class:`ProgressBar` turns a computation's progress into a bar's text with the time left.
"""
from __future__ import annotations

import threading
import time

from .cache import result_cache


#: key -> (thread, {"error": exception}) of the computations running in worker threads
_RUNNING: dict = {}
_RUNNING_LOCK = threading.Lock()
#: seconds a call may take before the page shows that it runs, and between updates
_QUIET_S, _POLL_S = 0.1, 0.25


def in_worker(key: tuple, compute, notice=None):
    """``result_cache().get_or_compute(key, compute)`` in a worker thread, the page's
    script waiting on it and calling ``notice(seconds)`` meanwhile (after 0.1 s, every
    0.25 s). Two sessions (or two reruns) asking for the same key share one computation."""
    cache = result_cache()
    with _RUNNING_LOCK:
        running = _RUNNING.get(key)
        if running is None or not running[0].is_alive():
            box: dict = {}

            def work():
                try:
                    cache.get_or_compute(key, compute)
                except BaseException as exc:  # handed to the waiting script
                    box["error"] = exc
                finally:
                    with _RUNNING_LOCK:
                        if _RUNNING.get(key, (None,))[0] is threading.current_thread():
                            del _RUNNING[key]

            thread = threading.Thread(target=work, name="glassbox-shap-row", daemon=True)
            running = _RUNNING[key] = (thread, box)
            thread.start()
    thread, box = running
    start = time.perf_counter()
    thread.join(_QUIET_S)
    while thread.is_alive():
        if notice is not None:
            notice(time.perf_counter() - start)
        thread.join(_POLL_S)
    if notice is not None and hasattr(notice, "done"):
        notice.done()
    if "error" in box:
        raise box["error"]
    return cache.get_or_compute(key, compute)  # a hit (or a recompute had it been evicted)


class ProgressBar:
    """A progress callback for st.progress that also estimates the time left."""

    def __init__(self, bar, label: str):
        import time

        self._time = time.perf_counter
        self._start = self._time()
        self._first = None  # what was done at the first call (work resumed: done before this bar)
        self.bar = bar
        self.label = label

    def __call__(self, done: int, total: int) -> None:
        frac = min(done / total, 1.0) if total else 1.0
        elapsed = self._time() - self._start
        if self._first is None:
            self._first = done
        text = f"{self.label}: {done:,} of {total:,}"
        if frac < 1:
            text += f" · {elapsed:.1f} s"  # moves while a slow row is computed, too
            here = done - self._first  # the time left at this bar's own pace
            if here > 0 and elapsed > 0.5:
                text += f", about {elapsed * (total - done) / here:.0f} s left"
        self.bar.progress(frac, text=text)
