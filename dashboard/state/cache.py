"""The process-wide cache of long results, shared by every session.

:class:`ResultCache` is an in-memory LRU with an optional bounded on-disk layer
(:class:`DiskCache`), so results outlive a server restart and the second visitor of a
shared link gets its pages from the cache. :func:`result_cache` is the one instance;
it builds its disk layer from the environment the first time it is called:

================================  ==========================================================
environment variable              meaning
================================  ==========================================================
GLASSBOX_RESULT_CACHE_DIR         the folder (default ``<data dir>/results``, the data dir
                                  being GLASSBOX_DATA_DIR or the workspaces' default parent)
GLASSBOX_RESULT_CACHE_BYTES       bytes kept on disk (default 1,000,000,000; units KB, MB,
                                  GB, TB accepted; ``0`` turns the disk layer off)
GLASSBOX_RESULT_CACHE             ``off`` (or 0/false/no): no disk layer in the default
                                  folder. Under pytest the same holds: the disk layer is on
                                  there only where GLASSBOX_RESULT_CACHE_DIR is set.
GLASSBOX_MEMORY_BUDGET            bytes of results (loaded models and data included) kept in
                                  memory, least recently used dropped first (default 4 GB;
                                  see :mod:`dashboard.state.memory`)
================================  ==========================================================
"""
from __future__ import annotations

import hashlib
import logging
import os
import pickle
import re
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

log = logging.getLogger(__name__)

#: bumped whenever the layout of a disk entry changes: part of every file name's hash
DISK_FORMAT = 1

DIR_ENV = "GLASSBOX_RESULT_CACHE_DIR"
BYTES_ENV = "GLASSBOX_RESULT_CACHE_BYTES"
SWITCH_ENV = "GLASSBOX_RESULT_CACHE"
DEFAULT_DISK_BYTES = 1_000_000_000

#: kinds (first element of a key) whose values are plain results, safe to write to disk.
#: Not "context" (holds the live model), "shap_rows" (a _RowStore with a lock) or
#: "precomputed" (a batch folder read, keyed by its path: the folder is the cache), nor the
#: model's measured speed ("predict_cost", "shap_cost"): a measure of this machine now.
PERSISTED_KINDS = frozenset({
    "pdp", "ale", "pdp_segment", "shap_row", "whatif", "verdict", "all_predictions", "all_labels", "data_score",
    "quality",
    "quality_segment", "row_table", "row_errors", "importance", "importance_segment",
    "shap_segment", "segment_mask", "category_order", "report",
    "propose_segments", "compare", "compare_quality", "compare_pdp",
})
#: and every kind starting with one of these (the interactions: "interactions_h", ...)
PERSISTED_PREFIXES = ("ia_", "h_", "interactions_")

#: what DiskCache.get returns on a miss (None may be a cached value)
MISS = object()

_TMP_MAX_AGE_S = 3600.0  # a left-over temporary file older than this is from a crashed write


# ---------------------------------------------------------------------- keys
def _stable_repr(x) -> str | None:
    """``repr(x)`` for a plain value (str, int, float, bool, None, bytes, numpy scalars,
    tuples and frozensets of those), with a frozenset's elements sorted so that the text
    does not depend on the process's hash seed; None for anything else."""
    if x is None or isinstance(x, (str, bytes, bool, int, float)):
        return repr(x)
    if isinstance(x, tuple):
        parts = [_stable_repr(v) for v in x]
        if any(p is None for p in parts):
            return None
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if isinstance(x, frozenset):
        parts = [_stable_repr(v) for v in x]
        if any(p is None for p in parts):
            return None
        return "frozenset({" + ", ".join(sorted(parts)) + "})" if parts else "frozenset()"
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.generic) and x.dtype.kind in "biufcUSMm":
        return repr(x)  # np.int64(3): a row number or an edited value read from the data
    return None


def persistable(key) -> bool:
    """Whether a ResultCache key may go to disk: a tuple of plain values (see
    :func:`_stable_repr`) whose first element is a kind of :data:`PERSISTED_KINDS` or
    starts with one of :data:`PERSISTED_PREFIXES`."""
    if not isinstance(key, tuple) or not key or not isinstance(key[0], str):
        return False
    kind = key[0]
    if kind not in PERSISTED_KINDS and not kind.startswith(PERSISTED_PREFIXES):
        return False
    return _stable_repr(key) is not None


def _kind(key):
    """A key's kind, for a log line (the key itself may be long)."""
    return key[0] if isinstance(key, tuple) and key else type(key).__name__


_SALT: str | None = None


def _salt() -> str:
    """What, besides the key, names a disk entry: the entry format and the versions whose
    change could make an old pickle unreadable or its result out of date."""
    global _SALT
    if _SALT is None:
        from importlib import metadata

        from dashboard import __version__

        parts = [f"format={DISK_FORMAT}", f"glassbox={__version__}",
                 "python={}.{}".format(*sys.version_info[:2])]
        for dist in ("numpy", "pandas", "scikit-learn"):
            try:
                parts.append(f"{dist}={metadata.version(dist)}")
            except Exception:  # noqa: BLE001 - not installed: nothing to tell apart
                parts.append(f"{dist}=-")
        _SALT = "\0".join(parts)
    return _SALT


# ---------------------------------------------------------------------- disk
class DiskCache:
    """A bounded folder of pickled results: ``root/<hash[:2]>/<hash>.pkl``.

    Each file holds ``pickle.dumps((repr(key), value), protocol=5)``; its name is the
    sha256 of the key's repr and a version salt (:data:`DISK_FORMAT`, the glassbox,
    Python, numpy, pandas and scikit-learn versions), so an upgrade never reads an old
    layout. Files are written atomically (a temporary file in ``root/tmp``, then
    ``os.replace``); a read updates the file's mtime, and when the folder grows past
    ``max_bytes`` the files least recently used are deleted until it is under 90% of it.
    A value whose pickle is over ``max_bytes / 4`` is not stored.

    SECURITY: entries are unpickled, and unpickling runs code. Only this server may
    write the folder (it is created with mode 0o700): never point it at a folder that
    an untrusted user can write, or share it between users.
    """

    def __init__(self, root: str | os.PathLike, max_bytes: int):
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise ValueError(f"The 'max_bytes' parameter of DiskCache must be an int > 0. Got {max_bytes!r} instead.")
        self.root = Path(root).expanduser().resolve()
        self.max_bytes = max_bytes
        self._tmp = self.root / "tmp"
        for d in (self.root, self._tmp):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._total = 0
        with self._lock:
            self._remove_stale_tmp()
            self._total = sum(size for _, size, _ in self._entries())
            if self._total > self.max_bytes:
                self._evict_locked()

    # -- files -------------------------------------------------------------------------
    def path(self, key) -> Path | None:
        """The file of a key (whether or not it exists); None for a key that is not plain."""
        text = _stable_repr(key)
        if text is None:
            return None
        digest = hashlib.sha256((_salt() + "\0" + text).encode("utf-8", "surrogatepass")).hexdigest()
        return self.root / digest[:2] / f"{digest}.pkl"

    def _entries(self):
        """(mtime, size, path) of every entry file."""
        out = []
        try:
            subdirs = [d for d in os.scandir(self.root) if d.is_dir() and re.fullmatch(r"[0-9a-f]{2}", d.name)]
        except OSError:
            return out
        for sub in subdirs:
            try:
                files = list(os.scandir(sub.path))
            except OSError:
                continue
            for f in files:
                if f.name.endswith(".pkl"):
                    try:
                        st = f.stat()
                    except OSError:  # deleted meanwhile
                        continue
                    out.append((st.st_mtime, st.st_size, Path(f.path)))
        return out

    def _remove_stale_tmp(self) -> None:
        cutoff = time.time() - _TMP_MAX_AGE_S
        try:
            for f in os.scandir(self._tmp):
                try:
                    if f.stat().st_mtime < cutoff:
                        os.unlink(f.path)
                except OSError:
                    pass
        except OSError:
            pass

    def _evict_locked(self) -> None:
        """Delete the least recently used files until the total is under 90% of max_bytes."""
        entries = sorted(self._entries(), key=lambda e: e[0])
        total = sum(size for _, size, _ in entries)
        target = 0.9 * self.max_bytes
        for _, size, path in entries:
            if total < target:
                break
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.debug("result cache: cannot delete %s: %s", path, exc)
                continue
            total -= size
        self._total = total

    # -- the cache ---------------------------------------------------------------------
    def get(self, key, default=MISS):
        """The stored value of ``key``, or ``default`` (a missing, unreadable or corrupt
        file, or one that holds another key, is a miss)."""
        path = self.path(key)
        if path is None:
            return default
        try:
            payload = path.read_bytes()
        except OSError:
            return default
        try:
            stored = pickle.loads(payload)
        except Exception as exc:  # noqa: BLE001 - truncated, or a class that moved: a miss
            log.debug("result cache: unreadable entry %s: %s", path, exc)
            return default
        if not (isinstance(stored, tuple) and len(stored) == 2 and stored[0] == _stable_repr(key)):
            return default
        try:
            os.utime(path)  # most recently used
        except OSError:
            pass
        return stored[1]

    def put(self, key, value) -> bool:
        """Store ``value`` under ``key``; whether it was stored. A key that is not plain, a
        value that cannot be pickled or is too large, and a failed write are not stored
        (logged at debug level), never raised."""
        path = self.path(key)
        if path is None:
            return False
        try:
            payload = pickle.dumps((_stable_repr(key), value), protocol=5)
        except Exception as exc:  # noqa: BLE001 - a lock, a lambda, a live model...
            log.debug("result cache: %r not stored, its value cannot be pickled: %s", _kind(key), exc)
            return False
        if len(payload) > self.max_bytes / 4:
            log.debug("result cache: %r not stored, %d bytes is over a quarter of %d",
                      _kind(key), len(payload), self.max_bytes)
            return False
        tmp = None
        try:
            path.parent.mkdir(mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=path.stem[:16] + ".", suffix=".part", dir=self._tmp)
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
            with self._lock:
                try:
                    old = path.stat().st_size
                except OSError:
                    old = 0
                os.replace(tmp, path)
                tmp = None
                self._total += len(payload) - old
                if self._total > self.max_bytes:
                    self._evict_locked()
        except OSError as exc:
            log.debug("result cache: %r not stored: %s", _kind(key), exc)
            return False
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        return True

    def total_bytes(self) -> int:
        """Bytes of the entry files, as tracked since the folder was scanned."""
        with self._lock:
            return self._total

    def clear(self) -> None:
        """Delete every entry."""
        with self._lock:
            for _, _, path in self._entries():
                try:
                    path.unlink()
                except OSError:
                    pass
            self._total = sum(size for _, size, _ in self._entries())


# ---------------------------------------------------------------------- memory
class _Pending:
    """A computation under way in one thread: the others asking for its key wait for ``done``."""

    __slots__ = ("owner", "done", "ok", "value")

    def __init__(self, owner: int):
        self.owner, self.done, self.ok, self.value = owner, threading.Event(), False, None


class ResultCache:
    """A small LRU cache shared by every session, for long computations that report progress.

    st.cache_data cannot be used there: a progress bar created outside a cached
    function and updated inside it breaks Streamlit's replay of cached elements.
    Keys are built from the model and data fingerprints plus every setting; the
    values are immutable result dataclasses, so sharing them is safe.

    With a ``disk`` layer, a result of a :func:`persistable` key missing from memory is
    looked up there before it is computed, and written there once computed.

    A key asked for while another thread computes it waits for that result instead of computing
    it again (two sessions opening the same page of a large table, or a page and the server's
    preload); where the other computation fails or is stopped, the waiter computes it itself, and
    a wait that would close a cycle (A computes x and waits on y while B computes y and waits on x)
    computes at once.

    Counters: ``hits`` (found in memory), ``disk_hits`` (found on disk), ``misses``
    (computed), ``shared`` (handed over by another thread's computation).
    """

    def __init__(self, max_entries: int = 64, disk: DiskCache | None = None, max_bytes: int | None = None):
        self._data: "OrderedDict[tuple, object]" = OrderedDict()
        self._sizes: dict[tuple, int] = {}
        self._lock = threading.Lock()
        self.max_entries = max_entries
        self.max_bytes = max_bytes  # None: bounded by the count only
        self.bytes = 0  # the estimated size of what is held (memory.approx_bytes)
        self.disk = disk
        self.hits = 0
        self.disk_hits = 0
        self.misses = 0
        self.shared = 0
        self._pending: dict[tuple, _Pending] = {}  # key -> the computation under way
        self._waits: dict[int, tuple] = {}  # thread id -> the key it waits for

    def _remember(self, key, value) -> None:  # under self._lock
        from .memory import approx_bytes

        self.bytes -= self._sizes.pop(key, 0)
        self._data[key] = value
        self._data.move_to_end(key)
        self._sizes[key] = size = approx_bytes(value)
        self.bytes += size
        # the least recently used go first; the newest stays, however large
        while len(self._data) > 1 and (len(self._data) > self.max_entries
                                       or (self.max_bytes is not None and self.bytes > self.max_bytes)):
            old, _ = self._data.popitem(last=False)
            self.bytes -= self._sizes.pop(old, 0)

    def get_or_compute(self, key: tuple, compute):
        me = threading.get_ident()
        while True:
            with self._lock:
                if key in self._data:
                    self._data.move_to_end(key)
                    self.hits += 1
                    return self._data[key]
                pending = self._pending.get(key)
                if pending is None:
                    mine = self._pending[key] = _Pending(me)
                    break
                if self._closes_cycle(pending.owner, me):
                    mine = None  # computed here too: waiting would never end
                    break
                self._waits[me] = key
            try:
                pending.done.wait()
            finally:
                with self._lock:
                    self._waits.pop(me, None)
            if pending.ok:
                with self._lock:
                    self.shared += 1
                return pending.value
            # the other computation failed or was stopped: this thread tries it (again)
        try:
            value = self._load_or_compute(key, compute)
        except BaseException:
            if mine is not None:
                self._settle(key, mine, False, None)
            raise
        if mine is not None:
            self._settle(key, mine, True, value)
        return value

    def _closes_cycle(self, owner: int, me: int) -> bool:  # under self._lock
        """Whether ``me`` waiting on a computation of ``owner`` would close a cycle of waits."""
        seen = set()
        while owner not in seen:
            if owner == me:
                return True
            seen.add(owner)
            waited = self._waits.get(owner)
            pending = self._pending.get(waited) if waited is not None else None
            if pending is None:
                return False
            owner = pending.owner
        return False

    def _settle(self, key, pending: "_Pending", ok: bool, value) -> None:
        with self._lock:
            if self._pending.get(key) is pending:
                del self._pending[key]
        pending.ok, pending.value = ok, value
        pending.done.set()

    def _load_or_compute(self, key: tuple, compute):
        disk = self.disk
        persist = disk is not None and persistable(key)
        if persist:
            try:
                value = disk.get(key)
            except Exception as exc:  # noqa: BLE001 - the disk layer never breaks a page
                log.debug("result cache: disk read failed for %r: %s", _kind(key), exc)
                value = MISS
            if value is not MISS:
                with self._lock:
                    self.disk_hits += 1
                    self._remember(key, value)
                return value
        with self._lock:
            self.misses += 1
        value = compute()  # outside the lock: other sessions keep working meanwhile
        with self._lock:
            self._remember(key, value)
        if persist:
            try:
                disk.put(key, value)
            except Exception as exc:  # noqa: BLE001 - the disk layer never breaks a page
                log.debug("result cache: disk write failed for %r: %s", _kind(key), exc)
        return value

    def clear(self) -> None:
        """Forget the results in memory (the disk layer keeps its files: :meth:`clear_disk`)."""
        with self._lock:
            self._data.clear()
            self._sizes.clear()
            self.bytes = 0

    def clear_disk(self) -> None:
        """Delete the disk layer's files (if there is one)."""
        if self.disk is not None:
            self.disk.clear()


# ---------------------------------------------------------------------- settings
def _env_disk_bytes(environ: Mapping[str, str]) -> int:
    from dashboard.workspace import _SIZE_UNITS  # the units GLASSBOX_WORKSPACE_MAX_BYTES takes

    raw = environ.get(BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_DISK_BYTES
    m = re.fullmatch(r"([0-9][0-9_,]*)\s*([a-zA-Z]*)", raw)
    if m and m.group(2).lower() in _SIZE_UNITS:
        return int(m.group(1).replace("_", "").replace(",", "")) * _SIZE_UNITS[m.group(2).lower()]
    raise ValueError(
        f"The environment variable {BYTES_ENV}={raw!r} must be a whole number of bytes, "
        "optionally with a unit KB, MB, GB or TB (e.g. 1000000000 or 1GB), or 0 to keep "
        "results in memory only."
    )


def disk_from_env(environ: Mapping[str, str] | None = None) -> DiskCache | None:
    """The disk layer configured by the environment (see the module's docstring), or None.

    Raises
    ------
    ValueError
        If a variable holds a value it does not accept; the message names it.
    OSError
        If the folder cannot be created.
    """
    from dashboard.workspace import _OFF, _ON, default_root

    environ = os.environ if environ is None else environ
    max_bytes = _env_disk_bytes(environ)
    switch = environ.get(SWITCH_ENV, "").strip().lower()
    if switch not in _ON and switch not in _OFF:
        raise ValueError(
            f"The environment variable {SWITCH_ENV}={environ[SWITCH_ENV]!r} is not understood: "
            "set it to off (or 0, false, no) to keep results in memory only, or leave it unset."
        )
    if max_bytes == 0:
        return None
    raw_dir = environ.get(DIR_ENV, "").strip()
    if raw_dir:
        return DiskCache(Path(raw_dir).expanduser(), max_bytes)
    if switch in _OFF or environ.get("PYTEST_CURRENT_TEST"):
        return None  # the test suite never writes to the home folder
    return DiskCache(default_root(environ).parent / "results", max_bytes)


#: the one instance: look it up through result_cache(), never copy it (tests may patch it)
_RESULTS = ResultCache()

_CONFIGURED = False
_CONFIG_LOCK = threading.Lock()


def result_cache() -> ResultCache:
    """The process-wide cache of long results (one per server, shared by sessions).

    The first call gives it its disk layer (:func:`disk_from_env`); a setting it does
    not accept, or a folder it cannot create, is logged as a warning and leaves the
    results in memory only.
    """
    global _CONFIGURED
    if not _CONFIGURED:
        with _CONFIG_LOCK:
            if not _CONFIGURED:
                _CONFIGURED = True
                if _RESULTS.disk is None:
                    try:
                        _RESULTS.disk = disk_from_env()
                    except (ValueError, OSError) as exc:
                        log.warning("Glassbox keeps computed results in memory only: %s", exc)
                from .memory import DEFAULT_MEMORY_BYTES, memory_budget

                try:
                    _RESULTS.max_bytes = memory_budget(os.environ)
                except ValueError as exc:
                    log.warning("Glassbox keeps %s of results in memory: %s", f"{DEFAULT_MEMORY_BYTES:,} bytes", exc)
                    _RESULTS.max_bytes = DEFAULT_MEMORY_BYTES
    return _RESULTS
