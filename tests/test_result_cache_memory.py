"""The memory budget of the result cache (issue #31): results are counted by their size and
the least recently used dropped past GLASSBOX_MEMORY_BUDGET. Counted in bytes held, not time."""
import numpy as np
import pandas as pd
import pytest

from dashboard.state.cache import ResultCache
from dashboard.state.memory import DEFAULT_MEMORY_BYTES, MEMORY_ENV, approx_bytes, memory_budget

MB = 1_000_000


def test_sizes_of_arrays_frames_and_what_holds_them():
    a = np.zeros(4 * MB // 8)
    assert approx_bytes(a) == 4 * MB
    assert approx_bytes([a, a, {"again": a}]) < 4 * MB + 1_000  # one array held three times counts once
    frame = pd.DataFrame({"x": np.zeros(100_000), "t": ["text"] * 100_000})
    assert approx_bytes(frame) >= 100_000 * 8 + 100_000 * 8  # numbers, and the text cells' pointers

    class Holder:
        def __init__(self):
            self.values = a
            self.name = "h"

    assert 4 * MB <= approx_bytes(Holder()) < 4 * MB + 1_000


def test_least_recently_used_go_first_past_the_budget():
    cache = ResultCache(max_entries=100, max_bytes=100 * MB)
    arrays = {k: np.full(30 * MB // 8, float(k)) for k in range(5)}
    for k in range(3):
        cache.get_or_compute(("a", k), lambda k=k: arrays[k])
    assert cache.bytes == pytest.approx(90 * MB, rel=1e-3)
    cache.get_or_compute(("a", 0), lambda: pytest.fail("in memory"))  # 0 is now the most recently used
    cache.get_or_compute(("a", 3), lambda: arrays[3])  # 120 MB: the least recently used (1) goes
    assert cache.bytes <= 100 * MB
    computed = []
    cache.get_or_compute(("a", 1), lambda: computed.append(1) or arrays[1])
    assert computed == [1]  # it had been dropped
    assert cache.get_or_compute(("a", 0), lambda: pytest.fail("kept")) is arrays[0] or True
    big = np.zeros(200 * MB // 8)
    assert cache.get_or_compute(("big",), lambda: big) is big  # the newest stays, however large
    assert len(cache._data) == 1 and cache.bytes == big.nbytes
    cache.clear()
    assert cache.bytes == 0


def test_budget_from_the_environment():
    assert memory_budget({}) == DEFAULT_MEMORY_BYTES
    assert memory_budget({MEMORY_ENV: "8GB"}) == 8 << 30  # the units of the other size settings: binary
    assert memory_budget({MEMORY_ENV: "1_500_000"}) == 1_500_000
    for bad in ("lots", "0", "-3GB", "2 parsecs"):
        with pytest.raises(ValueError, match=MEMORY_ENV):
            memory_budget({MEMORY_ENV: bad})


def test_a_key_asked_for_during_its_computation_waits_for_it_and_is_computed_once():
    import threading

    from dashboard.state.cache import ResultCache

    cache = ResultCache()
    started, release, calls, got = threading.Event(), threading.Event(), [], []

    def slow():
        calls.append(threading.get_ident())
        started.set()
        release.wait(10)
        return "value"

    first = threading.Thread(target=lambda: got.append(cache.get_or_compute(("k",), slow)))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: got.append(cache.get_or_compute(("k",), slow)))
    second.start()
    second.join(0.3)
    assert second.is_alive()  # waiting for the first thread's result, not computing it
    release.set()
    first.join(10), second.join(10)
    assert got == ["value", "value"] and len(calls) == 1
    assert (cache.misses, cache.shared) == (1, 1)


def test_a_failed_or_stopped_computation_is_tried_again_by_the_waiter():
    import threading

    from dashboard.state.cache import ResultCache

    cache = ResultCache()
    started, release, calls, got = threading.Event(), threading.Event(), [], []

    def stopped():
        calls.append("stopped")
        started.set()
        release.wait(10)
        raise KeyboardInterrupt  # a BaseException, as Streamlit's StopException is

    def fine():
        calls.append("fine")
        return 7

    def owner():
        try:
            cache.get_or_compute(("k",), stopped)
        except KeyboardInterrupt:
            got.append("owner stopped")

    first = threading.Thread(target=owner)
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: got.append(cache.get_or_compute(("k",), fine)))
    second.start()
    second.join(0.3)
    release.set()
    first.join(10), second.join(10)
    assert sorted(got, key=str) == [7, "owner stopped"] and calls == ["stopped", "fine"]
    assert cache.get_or_compute(("k",), fine) == 7 and calls == ["stopped", "fine"]  # kept


def test_waits_that_would_close_a_cycle_compute_instead_of_hanging():
    import threading

    from dashboard.state.cache import ResultCache

    cache = ResultCache()
    a_in, b_in = threading.Event(), threading.Event()
    out = {}

    def a():  # computes x, then needs y (which b computes, and b needs x)
        a_in.set()
        assert b_in.wait(10)
        return ("x", cache.get_or_compute(("y",), lambda: "y by a"))

    def b():
        b_in.set()
        assert a_in.wait(10)
        return ("y", cache.get_or_compute(("x",), lambda: "x by b"))

    ta = threading.Thread(target=lambda: out.setdefault("a", cache.get_or_compute(("x",), a)))
    tb = threading.Thread(target=lambda: out.setdefault("b", cache.get_or_compute(("y",), b)))
    ta.start(), tb.start()
    ta.join(10), tb.join(10)
    assert not ta.is_alive() and not tb.is_alive()
    assert set(out) == {"a", "b"}
