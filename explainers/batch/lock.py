"""One batch run at a time per output directory: the run lock.

A run holds ``fcntl.flock`` on ``OUT/_batch.lock`` for its whole duration,
through an open file handle: the kernel releases it when the process ends, even
by SIGKILL, so a crashed run leaves no stale lock. The file records who holds it
(pid, host, start time) for the message a second run gets, and is removed when
the run ends.

Removing a lock file is safe only with a check: a process that opened the file
just before it was unlinked may then lock the unlinked inode. So after taking
the lock a run checks that the path still names the inode it locked, and starts
over otherwise.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..errors import ExplainerError

LOCK = "_batch.lock"
#: how long a run waits for a lock held for an instant (a reader probing it) before giving up
_LOCK_PATIENCE_S = 0.5


@dataclass
class _Claim:
    """An output directory held by this run: ``created`` when this run made the directory."""

    out: Path
    created: bool
    fd: int


def _holder(fd: int) -> dict:
    """What the lock file says about the run holding it ({} when unreadable or empty)."""
    try:
        raw = os.pread(fd, 4096, 0)
        info = json.loads(raw.decode() or "{}")
        return info if isinstance(info, dict) else {}
    except (OSError, ValueError):
        return {}


def _describe(info: dict) -> str:
    bits = [f"pid {info.get('pid', '?')}"]
    if info.get("host") and info["host"] != socket.gethostname():
        bits[0] += f" on {info['host']}"
    if info.get("started"):
        bits.append(f"started {info['started']}")
    return ", ".join(bits)


def _busy_error(out: Path, info: dict) -> ExplainerError:
    return ExplainerError(
        f"Another batch run is writing to {str(out)!r} ({_describe(info)}); wait for it to finish "
        "or choose another --out."
    )


def _open_locked(out: Path) -> int | None:
    """Open ``OUT/_batch.lock`` and take the lock: the fd, or None when the path moved under us."""
    path = out / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except FileNotFoundError:  # the directory was removed meanwhile
        return None
    except OSError as exc:
        raise ExplainerError(f"Cannot write to --out {str(out)!r} ({exc.strerror or exc}). "
                             "Choose a directory you can write to.") from None
    deadline = time.monotonic() + _LOCK_PATIENCE_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise ExplainerError(
                    f"Cannot lock --out {str(out)!r} ({exc.strerror or exc}): its file system does not support "
                    "file locks, which keep two runs from writing to one folder. Choose a local directory."
                ) from None
            if time.monotonic() > deadline:
                info = _holder(fd)
                os.close(fd)
                raise _busy_error(out, info) from None
            time.sleep(0.05)
    try:
        same = os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        same = False
    if not same:  # the run before us removed the file we locked: lock the new one
        os.close(fd)
        return None
    return fd


def _acquire(out: Path) -> _Claim:
    created = False
    for _ in range(100):
        if not out.is_dir():
            if out.exists():
                raise ExplainerError(f"--out {str(out)!r} is a file; give a directory path (it will hold part files).")
            try:
                out.mkdir(parents=True)
                created = True
            except FileExistsError:
                pass
            except OSError as exc:
                raise ExplainerError(f"Cannot create --out {str(out)!r} ({exc.strerror or exc}). "
                                     "Choose a directory you can write to.") from None
        fd = _open_locked(out)
        if fd is not None:
            info = {"pid": os.getpid(), "host": socket.gethostname(),
                    "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
            return _Claim(out, created, fd)
    raise ExplainerError(f"Could not lock --out {str(out)!r}: it keeps changing. Choose another --out.")


def _release(claim: _Claim) -> None:
    """Remove the lock file (still holding the lock, see the module doc), then let go;
    remove the directory too if this run created it and left nothing in it."""
    with contextlib.suppress(OSError):
        os.unlink(claim.out / LOCK)
    os.close(claim.fd)
    if claim.created:
        with contextlib.suppress(OSError):
            claim.out.rmdir()


@contextlib.contextmanager
def _locked(out: Path):
    """Hold the run lock of ``out`` (created if missing) for the block; yields the _Claim."""
    claim = _acquire(out)
    try:
        yield claim
    finally:
        _release(claim)


def _lock_holder(out: Path) -> dict | None:
    """Who writes to ``out`` now: the lock file's record when a run holds the lock, else None.

    Takes no lock that a run would notice for more than an instant, and writes nothing.
    """
    try:
        fd = os.open(out / LOCK, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return _holder(fd) or {"pid": "?"}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
