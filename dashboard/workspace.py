"""Shared workspaces: an uploaded model and data file kept on the server behind a link.

A user who uploads a model and a data file can send a colleague a link
(``?ws=<token>``) that opens the same upload. This module keeps those uploads;
it has no Streamlit in it, so it can be tested and reused on its own.

Layout under the store's root (created with mode ``0o700``)::

    workspaces.sqlite3       one row per workspace, keyed by sha256(token)
    files/<key_hash>.model   the model file as uploaded
    files/<key_hash>.data    the data file as uploaded
    tmp/                     partial writes; emptied whenever a store is opened

Tokens are never stored, only their sha256, so neither the database nor any
method here can list the links. Each token carries 192 random bits, so
guessing one is hopeless.

A workspace is written in this order: both files into ``tmp/`` (each fsynced),
renamed into ``files/``, the directory fsynced, and only then the row inserted
in one transaction. A workspace therefore exists exactly when its row does, and
a process killed at any point leaves only files without a row, which the sweep
run by every :class:`WorkspaceStore` constructor deletes.

One server process should own a root: the sweep cannot see creates that are in
flight in another process (it does see those of its own process). Open one
store per process and share it (it is thread-safe: every operation opens its
own SQLite connection).

=============================  ============================  =========================
setting                        environment variable          default
=============================  ============================  =========================
sharing on or off              GLASSBOX_SHARING              on (0/off/false/no: off)
directory                      GLASSBOX_WORKSPACE_DIR        see :func:`default_root`
bytes kept in all workspaces   GLASSBOX_WORKSPACE_MAX_BYTES  2,000,000,000
days kept after last opened    GLASSBOX_WORKSPACE_DAYS       30
=============================  ============================  =========================
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import math
import os
import re
import secrets
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from explainers import ExplainerError

__all__ = [
    "PARAM",
    "NOT_FOUND",
    "Created",
    "Workspace",
    "WorkspaceError",
    "WorkspaceStore",
    "default_root",
    "not_found_message",
    "sharing_enabled",
    "store_from_env",
]

logger = logging.getLogger(__name__)

#: The URL query parameter that carries a workspace token: ``?ws=<token>``.
PARAM = "ws"

#: Template of the message shown for a link that opens nothing; fill it with
#: :func:`not_found_message`, which puts in the store's retention period.
NOT_FOUND = (
    "This link does not open a shared workspace: it may be mistyped, deleted by its owner, "
    "or expired (workspaces are kept {kept} after they were last opened). Ask whoever sent "
    "it for a new link, or load the model on the Model page."
)

SHARING_ENV = "GLASSBOX_SHARING"
DIR_ENV = "GLASSBOX_WORKSPACE_DIR"
MAX_BYTES_ENV = "GLASSBOX_WORKSPACE_MAX_BYTES"
DAYS_ENV = "GLASSBOX_WORKSPACE_DAYS"
DATA_DIR_ENV = "GLASSBOX_DATA_DIR"

DEFAULT_MAX_BYTES = 2_000_000_000
DEFAULT_DAYS = 30.0

_ON = ("", "1", "on", "true", "yes")
_OFF = ("0", "off", "false", "no")

#: secrets.token_urlsafe(24): 24 random bytes (192 bits) in unpadded urlsafe
#: base64, which is always exactly 32 characters.
_TOKEN_BYTES = 24
_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{32}")
_KEY_RE = re.compile(r"([0-9a-f]{64})\.(model|data)")
_DAY = 86_400.0
_SIZE_UNITS = {"": 1, "b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS workspaces (
    key_hash   TEXT PRIMARY KEY,
    created    REAL NOT NULL,
    opened     REAL NOT NULL,
    model_name TEXT NOT NULL,
    data_name  TEXT NOT NULL,
    target     TEXT NULL,
    model_sha  TEXT NOT NULL,
    data_sha   TEXT NOT NULL,
    model_size INTEGER NOT NULL,
    data_size  INTEGER NOT NULL,
    owner_hash TEXT NOT NULL,
    extra      TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS workspaces_opened ON workspaces (opened);
"""

# Creates in flight in this process, per root: the sweep of a store opened meanwhile
# (another session's store, on another thread) must not take their files for orphans.
# The sweep holds _GUARD for its whole run and a create unregisters only after its row
# is committed, so every key the sweep meets is either in a row it read or in this set.
_GUARD = threading.Lock()
_INFLIGHT: dict[str, set[str]] = {}


class WorkspaceError(ExplainerError):
    """A shared-workspace setting or upload cannot be used (too large, bad setting)."""


@dataclass(frozen=True)
class Created:
    """The two secrets of a new workspace, returned only to the uploader.

    Attributes
    ----------
    token : str
        Opens the workspace; goes into the link as ``?ws=<token>``.
    owner : str
        Needed to delete the workspace; keep it in the uploader's session only.
    """

    token: str
    owner: str = field(repr=False)


@dataclass(frozen=True)
class Workspace:
    """A stored upload, as :meth:`WorkspaceStore.open` returns it.

    Attributes
    ----------
    model_bytes, data_bytes : bytes
        The files exactly as uploaded (checked against their sha256).
    model_name, data_name : str
        The uploaded file names (they tell the loaders the format).
    target : str or None
        The target column chosen at upload, if any.
    model_sha, data_sha : str
        Hex sha256 of the two files; usable as cache keys.
    created, opened : float
        Unix times of the upload and of this opening.
    extra : dict
        JSON-compatible settings stored with the upload.
    """

    model_bytes: bytes = field(repr=False)
    model_name: str
    data_bytes: bytes = field(repr=False)
    data_name: str
    target: str | None
    model_sha: str
    data_sha: str
    created: float
    opened: float
    extra: dict


def _now() -> float:
    # one place for the clock, so tests can move time without touching time.time
    return time.time()


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _valid_token(token: object) -> bool:
    return isinstance(token, str) and _TOKEN_RE.fullmatch(token) is not None


class WorkspaceStore:
    """Uploads kept on disk under ``root``, opened by the token of their link.

    Parameters
    ----------
    root : str or Path
        Directory of the store; created (mode ``0o700``) if missing.
    max_bytes : int
        Most bytes kept in all workspaces together; the least recently opened
        are evicted to make room, and a single larger upload is refused.
    retention_s : float
        Seconds a workspace is kept after it was last opened (or created).

    Raises
    ------
    WorkspaceError
        If ``max_bytes`` or ``retention_s`` is not a positive number.

    Notes
    -----
    Opening a store sweeps away what a killed process left behind: everything in
    ``tmp/``, files without a row, and rows whose files are missing or of the
    wrong size. Open one store per process and share it across threads.

    Examples
    --------
    >>> store = WorkspaceStore(tmp, max_bytes=10**9, retention_s=30 * 86400)  # doctest: +SKIP
    >>> new = store.create(model, "model.skops", data, "data.csv", target="y")  # doctest: +SKIP
    >>> store.open(new.token).model_name  # doctest: +SKIP
    'model.skops'
    """

    def __init__(self, root: str | Path, *, max_bytes: int, retention_s: float):
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise WorkspaceError(
                f"The 'max_bytes' parameter of WorkspaceStore must be an int > 0. Got {max_bytes!r} instead."
            )
        if (isinstance(retention_s, bool) or not isinstance(retention_s, (int, float))
                or not math.isfinite(retention_s) or retention_s <= 0):
            raise WorkspaceError(
                "The 'retention_s' parameter of WorkspaceStore must be a finite number > 0. "
                f"Got {retention_s!r} instead."
            )
        self.root = Path(root).expanduser().resolve()
        self.max_bytes = max_bytes
        self.retention_s = float(retention_s)
        self._db = self.root / "workspaces.sqlite3"
        self._files = self.root / "files"
        self._tmp = self.root / "tmp"
        for d in (self.root, self._files, self._tmp):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._init_db()
        self._sweep()

    # -- database ----------------------------------------------------------------------

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # A new connection per operation: Streamlit runs each session on its own thread,
        # and a sqlite3 connection must not be shared between threads.
        conn = sqlite3.connect(self._db, timeout=30.0, isolation_level=None)
        try:
            conn.execute("PRAGMA busy_timeout = 30000")
            # FULL: a committed row survives power loss, not only a killed process
            conn.execute("PRAGMA synchronous = FULL")
            yield conn
        finally:
            conn.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connect() as conn:
            # IMMEDIATE takes the write lock up front, so two creates cannot both
            # decide there is room and then both insert
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _init_db(self) -> None:
        with self._connect() as conn:
            # WAL lets readers (open, exists) go on while a create commits
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(_SCHEMA)

    # -- files -------------------------------------------------------------------------

    def _paths(self, key: str) -> tuple[Path, Path]:
        # names on disk come from the key hash only, never from the uploaded file names
        return self._files / f"{key}.model", self._files / f"{key}.data"

    def _unlink(self, keys: Iterable[str]) -> None:
        for key in keys:
            for path in self._paths(key):
                path.unlink(missing_ok=True)

    def _write_tmp(self, key: str, payload: bytes) -> Path:
        fd, name = tempfile.mkstemp(prefix=f"{key}.", suffix=".part", dir=self._tmp)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
        return Path(name)

    def _write_files(self, key: str, model: bytes, data: bytes) -> None:
        for path, payload in zip(self._paths(key), (model, data)):
            os.replace(self._write_tmp(key, payload), path)
        # the renames must be on disk before the row that points at them is
        _fsync_dir(self._files)

    # -- sweep -------------------------------------------------------------------------

    def _sweep(self) -> None:
        """Delete what a killed process left: tmp files, orphan files, rows without files."""
        with _GUARD:
            busy = set(_INFLIGHT.get(str(self.root), ()))
            for entry in self._tmp.iterdir():
                if entry.name.split(".", 1)[0] not in busy and entry.is_file():
                    entry.unlink(missing_ok=True)
            broken = self._broken_rows()
            if broken:
                self._delete_rows(broken)
            with self._connect() as conn:
                kept = {k for (k,) in conn.execute("SELECT key_hash FROM workspaces")}
            orphans = 0
            for entry in self._files.iterdir():
                m = _KEY_RE.fullmatch(entry.name)
                if m is None or (m.group(1) not in kept and m.group(1) not in busy):
                    if entry.is_file():
                        entry.unlink(missing_ok=True)
                        orphans += 1
        if broken or orphans:
            logger.warning("workspace sweep: removed %d broken workspaces and %d orphan files",
                           len(broken), orphans)

    def _broken_rows(self) -> list[str]:
        with self._connect() as conn:
            rows = conn.execute("SELECT key_hash, model_size, data_size FROM workspaces").fetchall()
        broken = []
        for key, *sizes in rows:
            for path, size in zip(self._paths(key), sizes):
                try:
                    ok = path.stat().st_size == size
                except FileNotFoundError:
                    ok = False
                if not ok:
                    broken.append(key)
                    break
        return broken

    def _delete_rows(self, keys: list[str]) -> None:
        # row first, files after: a crash in between leaves orphans, which the sweep removes
        with self._transaction() as conn:
            conn.executemany("DELETE FROM workspaces WHERE key_hash = ?", [(k,) for k in keys])
        self._unlink(keys)

    # -- public API --------------------------------------------------------------------

    def create(self, model_bytes: bytes, model_name: str, data_bytes: bytes, data_name: str,
               target: str | None = None, extra: dict | None = None) -> Created:
        """Store an upload and return the token of its link and the owner's secret.

        Parameters
        ----------
        model_bytes, data_bytes : bytes-like
            The uploaded model and data files.
        model_name, data_name : str
            Their file names (kept to tell the loaders the format; never used as paths).
        target : str or None, default=None
            The target column chosen at upload.
        extra : dict or None, default=None
            JSON-compatible settings to keep with the upload.

        Returns
        -------
        Created
            ``token`` for the link and ``owner`` for :meth:`delete`.

        Raises
        ------
        WorkspaceError
            If the upload is larger than ``max_bytes`` (GLASSBOX_WORKSPACE_MAX_BYTES),
            or an argument has the wrong type, or ``extra`` is not JSON-compatible.
        """
        model = _as_bytes(model_bytes, "model_bytes")
        data = _as_bytes(data_bytes, "data_bytes")
        _check_text(model_name, "model_name")
        _check_text(data_name, "data_name")
        if target is not None:
            _check_text(target, "target")
        extra_json = _encode_extra(extra)
        self._check_size(len(model) + len(data))
        token, owner = secrets.token_urlsafe(_TOKEN_BYTES), secrets.token_urlsafe(_TOKEN_BYTES)
        key = _sha(token)
        now = _now()
        row = (key, now, now, model_name, data_name, target, _sha(model), _sha(data),
               len(model), len(data), _sha(owner), extra_json)
        with _GUARD:
            _INFLIGHT.setdefault(str(self.root), set()).add(key)
        try:
            self._write_files(key, model, data)
            evicted = self._insert(row)
        except BaseException:
            self._unlink([key])
            raise
        finally:
            with _GUARD:
                _INFLIGHT[str(self.root)].discard(key)
        self._unlink(evicted)
        return Created(token=token, owner=owner)

    def _check_size(self, size: int) -> None:
        if size > self.max_bytes:
            raise WorkspaceError(
                f"This upload ({size:,} bytes for the model and data together) is larger than "
                f"the {self.max_bytes:,} bytes this server keeps for shared workspaces. Upload "
                f"smaller files, or ask the operator to raise {MAX_BYTES_ENV}."
            )

    def _insert(self, row: tuple) -> list[str]:
        """Make room, then insert ``row``, in one transaction; return the evicted keys."""
        need = row[8] + row[9]
        with self._transaction() as conn:
            evicted = [k for (k,) in conn.execute(
                "SELECT key_hash FROM workspaces WHERE opened < ?", (row[1] - self.retention_s,))]
            conn.executemany("DELETE FROM workspaces WHERE key_hash = ?", [(k,) for k in evicted])
            total = conn.execute(
                "SELECT COALESCE(SUM(model_size + data_size), 0) FROM workspaces").fetchone()[0]
            lru = conn.execute("SELECT key_hash, model_size + data_size FROM workspaces "
                               "ORDER BY opened, created").fetchall()
            for key, size in lru:
                if total + need <= self.max_bytes:
                    break
                evicted.append(key)
                total -= size
            conn.executemany("DELETE FROM workspaces WHERE key_hash = ?", [(k,) for k in evicted])
            conn.execute(f"INSERT INTO workspaces VALUES ({', '.join('?' * len(row))})", row)
        if evicted:
            logger.info("workspaces: removed %d expired or least recently opened to make room",
                        len(evicted))
        return evicted

    def open(self, token: object) -> Workspace | None:
        """The workspace of ``token``, or None if the link opens nothing.

        None is returned alike for a malformed, unknown, expired or deleted token and
        for a workspace whose files fail their sha256 check (that one is deleted), so
        a caller shows one message (:func:`not_found_message`) for all of them.
        Opening restarts the retention period.

        Parameters
        ----------
        token : str
            The ``ws`` query parameter of the link, as received (any value is safe).

        Returns
        -------
        Workspace or None

        Raises
        ------
        OSError, sqlite3.Error
            Only for faults of the server's disk, never for a bad token.
        """
        if not _valid_token(token):
            return None  # before any database access: junk in a URL costs nothing
        key = _sha(token)
        now = _now()
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT model_name, data_name, target, model_sha, data_sha, model_size, "
                "data_size, created, opened, extra FROM workspaces WHERE key_hash = ?",
                (key,)).fetchone()
            if row is not None and now - row[8] <= self.retention_s:
                conn.execute("UPDATE workspaces SET opened = ? WHERE key_hash = ?", (now, key))
        if row is None:
            return None
        if now - row[8] > self.retention_s:
            self._delete_rows([key])
            return None
        return self._read(key, row, now)

    def _read(self, key: str, row: tuple, now: float) -> Workspace | None:
        model_name, data_name, target, model_sha, data_sha, _, _, created, _, extra = row
        try:
            model, data = (p.read_bytes() for p in self._paths(key))
            extra_dict = json.loads(extra)
        except (FileNotFoundError, ValueError):
            model = data = extra_dict = None
        # compare_digest: how long the check takes says nothing about the stored hash
        if (model is None or not isinstance(extra_dict, dict)
                or not hmac.compare_digest(_sha(model), model_sha)
                or not hmac.compare_digest(_sha(data), data_sha)):
            logger.warning("workspace failed its integrity check and was deleted")
            self._delete_rows([key])
            return None
        return Workspace(model_bytes=model, model_name=model_name, data_bytes=data,
                         data_name=data_name, target=target, model_sha=model_sha,
                         data_sha=data_sha, created=created, opened=now, extra=extra_dict)

    def exists(self, token: object) -> bool:
        """Whether ``token`` names a stored, unexpired workspace (reads no file).

        Does not restart the retention period, and does not check the files' hashes
        (:meth:`open` does).
        """
        if not _valid_token(token):
            return False
        with self._connect() as conn:
            row = conn.execute("SELECT opened FROM workspaces WHERE key_hash = ?",
                               (_sha(token),)).fetchone()
        return row is not None and _now() - row[0] <= self.retention_s

    def is_owner(self, token: object, owner: object) -> bool:
        """Whether ``owner`` is the owner's secret of the stored workspace ``token`` (the uploader's
        link to manage it); False, alike, for an unknown token and for a wrong owner."""
        if not (_valid_token(token) and _valid_token(owner)):
            return False
        with self._connect() as conn:
            row = conn.execute("SELECT owner_hash FROM workspaces WHERE key_hash = ?", (_sha(token),)).fetchone()
        return row is not None and hmac.compare_digest(_sha(owner), row[0])

    def delete(self, token: object, owner: object) -> bool:
        """Delete the workspace of ``token`` if ``owner`` is its owner's secret.

        Parameters
        ----------
        token : str
            The workspace's token.
        owner : str
            :attr:`Created.owner`, returned by :meth:`create` to the uploader.

        Returns
        -------
        bool
            True if the workspace was deleted (its files are gone from disk); False,
            alike, for an unknown token and for a wrong owner.
        """
        if not (_valid_token(token) and _valid_token(owner)):
            return False
        key = _sha(token)
        with self._transaction() as conn:
            row = conn.execute("SELECT owner_hash FROM workspaces WHERE key_hash = ?",
                               (key,)).fetchone()
            if row is None or not hmac.compare_digest(_sha(owner), row[0]):
                return False
            conn.execute("DELETE FROM workspaces WHERE key_hash = ?", (key,))
        self._unlink([key])
        return True

    def purge_expired(self) -> int:
        """Delete workspaces not opened within ``retention_s``; return how many."""
        with self._transaction() as conn:
            keys = [k for (k,) in conn.execute(
                "SELECT key_hash FROM workspaces WHERE opened < ?", (_now() - self.retention_s,))]
            conn.executemany("DELETE FROM workspaces WHERE key_hash = ?", [(k,) for k in keys])
        self._unlink(keys)
        return len(keys)

    def total_bytes(self) -> int:
        """Bytes of all stored workspaces' files together."""
        with self._connect() as conn:
            return conn.execute(
                "SELECT COALESCE(SUM(model_size + data_size), 0) FROM workspaces").fetchone()[0]


# -- helpers ---------------------------------------------------------------------------

def _fsync_dir(path: Path) -> None:
    if os.name != "posix":
        return  # Windows cannot open a directory for fsync; NTFS journals renames itself
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _as_bytes(value: object, name: str) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise WorkspaceError(
        f"The {name!r} parameter of WorkspaceStore.create must be bytes. "
        f"Got {type(value).__name__} instead."
    )


def _check_text(value: object, name: str) -> None:
    if not isinstance(value, str) or not value:
        raise WorkspaceError(
            f"The {name!r} parameter of WorkspaceStore.create must be a non-empty str. "
            f"Got {value!r} instead."
        )


def _encode_extra(extra: object) -> str:
    if extra is None:
        return "{}"
    if not isinstance(extra, dict):
        raise WorkspaceError(
            "The 'extra' parameter of WorkspaceStore.create must be a dict or None. "
            f"Got {type(extra).__name__} instead."
        )
    try:
        return json.dumps(extra, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise WorkspaceError(
            "The 'extra' parameter of WorkspaceStore.create must hold only JSON values "
            f"(str, int, float, bool, None, list, dict): {exc}"
        ) from None


# -- settings from the environment -----------------------------------------------------

def sharing_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether shared workspaces are on (GLASSBOX_SHARING; on unless set to 0/off/false/no).

    Raises
    ------
    WorkspaceError
        If GLASSBOX_SHARING holds anything else.
    """
    environ = os.environ if environ is None else environ
    raw = environ.get(SHARING_ENV, "").strip().lower()
    if raw in _ON:
        return True
    if raw in _OFF:
        return False
    raise WorkspaceError(
        f"The environment variable {SHARING_ENV}={environ[SHARING_ENV]!r} is not understood: "
        "set it to 1, on, true or yes to share workspaces, or 0, off, false or no to turn "
        "sharing off."
    )


def default_root(environ: Mapping[str, str] | None = None) -> Path:
    """The store's directory when GLASSBOX_WORKSPACE_DIR is not set.

    ``$GLASSBOX_DATA_DIR/workspaces`` if GLASSBOX_DATA_DIR is set, else
    ``$XDG_DATA_HOME/glassbox/workspaces`` (XDG_DATA_HOME only when absolute, as
    the XDG specification says), else ``~/.local/share/glassbox/workspaces``.
    """
    environ = os.environ if environ is None else environ
    data_dir = environ.get(DATA_DIR_ENV, "").strip()
    if data_dir:
        return Path(data_dir).expanduser() / "workspaces"
    xdg = environ.get("XDG_DATA_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "glassbox" / "workspaces"


def _env_bytes(environ: Mapping[str, str]) -> int:
    raw = environ.get(MAX_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    m = re.fullmatch(r"([0-9][0-9_,]*)\s*([a-zA-Z]*)", raw)
    unit = m.group(2).lower() if m else None
    if m and unit in _SIZE_UNITS and int(m.group(1).replace("_", "").replace(",", "")) > 0:
        return int(m.group(1).replace("_", "").replace(",", "")) * _SIZE_UNITS[unit]
    raise WorkspaceError(
        f"The environment variable {MAX_BYTES_ENV}={raw!r} must be a whole number of bytes "
        "> 0, optionally with a unit KB, MB, GB or TB (e.g. 2000000000 or 2GB)."
    )


def _env_days(environ: Mapping[str, str]) -> float:
    raw = environ.get(DAYS_ENV, "").strip()
    if not raw:
        return DEFAULT_DAYS
    try:
        days = float(raw)
    except ValueError:
        days = math.nan
    if not (math.isfinite(days) and days > 0):
        raise WorkspaceError(
            f"The environment variable {DAYS_ENV}={raw!r} must be a number of days > 0 "
            "(e.g. 30, or 0.5 for twelve hours): how long a workspace is kept after it was "
            "last opened."
        )
    return days


def store_from_env(environ: Mapping[str, str] | None = None) -> WorkspaceStore | None:
    """The store configured by the environment, or None when sharing is off.

    Reads GLASSBOX_SHARING, GLASSBOX_WORKSPACE_DIR (default :func:`default_root`),
    GLASSBOX_WORKSPACE_MAX_BYTES (default 2,000,000,000) and GLASSBOX_WORKSPACE_DAYS
    (default 30, counted from the last time a workspace was opened).

    Parameters
    ----------
    environ : mapping, default=os.environ

    Returns
    -------
    WorkspaceStore or None

    Raises
    ------
    WorkspaceError
        If a variable holds a value it does not accept; the message names it.
    """
    environ = os.environ if environ is None else environ
    if not sharing_enabled(environ):
        return None
    max_bytes, days = _env_bytes(environ), _env_days(environ)
    raw_dir = environ.get(DIR_ENV, "").strip()
    root = Path(raw_dir).expanduser() if raw_dir else default_root(environ)
    return WorkspaceStore(root, max_bytes=max_bytes, retention_s=days * _DAY)


def not_found_message(store: WorkspaceStore) -> str:
    """:data:`NOT_FOUND` with the store's retention period filled in."""
    for unit, seconds in (("day", _DAY), ("hour", 3600.0), ("minute", 60.0), ("second", 1.0)):
        count = store.retention_s / seconds
        if count >= 1 or unit == "second":
            break
    kept = f"{round(count, 2):g} {unit}" + ("" if count == 1 else "s")
    return NOT_FOUND.format(kept=kept)
