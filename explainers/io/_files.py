"""Reading an input given as a path, bytes or a file object; content fingerprints."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path


from ..errors import InvalidDataError


def fingerprint(data: bytes) -> str:
    """Return the sha256 hex digest of ``data``: the cache key of a file's content."""
    return hashlib.sha256(data).hexdigest()


def _read_input(path_or_bytes, filename: str | None, what: str) -> tuple[bytes, str]:
    """Return (content bytes, lower-case file name) from a path, bytes or a file object."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes), (filename or "").lower()
    if hasattr(path_or_bytes, "read"):
        data = path_or_bytes.read()
        name = filename or getattr(path_or_bytes, "name", "") or ""
        return bytes(data), str(name).lower()
    if isinstance(path_or_bytes, (str, os.PathLike)):
        path = Path(path_or_bytes)
        if not path.is_file():
            raise InvalidDataError(
                f"The {what} file {str(path)!r} does not exist or is not a file. Check the path."
            )
        return path.read_bytes(), (filename or path.name).lower()
    raise InvalidDataError(
        f"Pass the {what} as a file path, bytes or a file object; got {type(path_or_bytes).__name__}."
    )


#: the separators a CSV header is tried with, in order of preference on a tie
CSV_DELIMITERS = ",;\t|"


def guess_delimiter(header_line: str) -> str:
    """The separator of a CSV header line: the candidate of :data:`CSV_DELIMITERS` that occurs
    most often outside quoted names (a comma when none does).

    One linear pass (vectorised), unlike ``csv.Sniffer``, whose regular expressions backtrack
    quadratically on quotes (a 64 KB header of ``a,"a,"…`` cost it 13 s of CPU).
    """
    import numpy as np

    if not header_line:
        return ","
    arr = np.frombuffer(header_line.encode("utf-8", errors="replace"), dtype=np.uint8)
    outside = np.cumsum(arr == ord('"')) % 2 == 0  # "" inside a quoted name toggles twice
    counts = [int(np.count_nonzero((arr == ord(d)) & outside)) for d in CSV_DELIMITERS]
    best = int(np.argmax(counts))
    return CSV_DELIMITERS[best] if counts[best] > 0 else ","


# ------------------------------------------------------------- leftovers
def owner_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (one of another account counts as running)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_orphans(parent, prefix: str, *, min_age_s: float = 3600.0) -> list[str]:
    """Remove this account's folders ``parent/<prefix><pid>-…`` whose owner process is gone
    (a build or a show() server killed before it could clean up); a folder of that prefix
    without a readable pid only when older than ``min_age_s``. Returns the removed names."""
    import re
    import shutil
    import time

    removed = []
    try:
        entries = list(Path(parent).iterdir())
    except OSError:
        return removed
    uid = os.getuid() if hasattr(os, "getuid") else None
    pattern = re.compile(re.escape(prefix) + r"(\d+)-")
    for path in entries:
        if not path.name.startswith(prefix) or not path.is_dir() or path.is_symlink():
            continue
        try:
            info = path.stat()
        except OSError:
            continue
        if uid is not None and info.st_uid != uid:
            continue
        m = pattern.match(path.name)
        gone = (not owner_alive(int(m.group(1)))) if m else time.time() - info.st_mtime > min_age_s
        if gone:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    return removed
