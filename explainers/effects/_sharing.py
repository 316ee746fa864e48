"""Small compiled work shared with a helper thread that may wake late.

On these shared two-core machines a second core that has been idle for a fraction of a
second took about 10 ms to start work (numba's second thread on a 5 ms tree PD call:
15-18 ms). A parallel loop waits for every thread it starts, so small calls ran on one
thread. :func:`share` splits such a call into a few pieces instead: the calling thread takes
pieces one after the other while a helper thread, woken at the start, takes the next free
piece whenever it runs. A helper that wakes at once halves the time; one that wakes late
finds nothing left, and the call has waited for no more than a piece it took.

The pieces must be independent (each writes its own part of the output) and release the
GIL while they run (numba's ``nogil`` kernels); which thread ran a piece never changes the
result.
"""
from __future__ import annotations

import itertools
import queue
import threading

__all__ = ["share"]


class _Helper:
    """One daemon thread running the jobs it is given, in order."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, job) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                # it never ends: not named "glassbox-..." (threads the benchmarks wait for)
                self._thread = threading.Thread(target=self._run, name="tree-pd-share", daemon=True)
                self._thread.start()
        self._jobs.put(job)

    def _run(self) -> None:
        while True:
            self._jobs.get()()  # a job keeps its own errors (share's work never raises)


_HELPER = _Helper()


def share(run, n: int) -> None:
    """Call ``run(k)`` once for every k in ``range(n)``, on this thread and the helper thread;
    return when every call has returned, raising the first error one raised."""
    if n <= 1:
        for k in range(n):
            run(k)
        return
    claim = itertools.count()  # next() on it is atomic under the GIL
    done = threading.Condition()
    state = {"left": n, "error": None}

    def work() -> None:
        while True:
            k = next(claim)
            if k >= n:
                return
            try:
                run(k)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                with done:
                    state["error"] = state["error"] or exc
            with done:
                state["left"] -= 1
                if state["left"] == 0:
                    done.notify_all()

    _HELPER.submit(work)
    work()
    with done:
        while state["left"]:
            done.wait()
    if state["error"] is not None:
        raise state["error"]
