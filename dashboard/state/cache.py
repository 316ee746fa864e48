"""The process-wide cache of long results, shared by every session."""
from __future__ import annotations

import threading
from collections import OrderedDict


class ResultCache:
    """A small LRU cache shared by every session, for long computations that report progress.

    st.cache_data cannot be used there: a progress bar created outside a cached
    function and updated inside it breaks Streamlit's replay of cached elements.
    Keys are built from the model and data fingerprints plus every setting; the
    values are immutable result dataclasses, so sharing them is safe.
    """

    def __init__(self, max_entries: int = 64):
        self._data: "OrderedDict[tuple, object]" = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key: tuple, compute):
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
            self.misses += 1
        value = compute()  # outside the lock: other sessions keep working meanwhile
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


#: the one instance: look it up through result_cache(), never copy it
_RESULTS = ResultCache()


def result_cache() -> ResultCache:
    """The process-wide cache of long results (one per server, shared by sessions)."""
    return _RESULTS
