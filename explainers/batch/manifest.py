"""The output directory of a batch run, and resuming it.

``OUT/_manifest.json`` records the model and data fingerprints and every option
that changes the numbers (the run's identity); each chunk writes one part file
atomically (a temporary file renamed into place). Rerunning the same command
keeps the finished parts of the same identity; another identity is refused
unless ``overwrite``, which clears only the files a batch run writes.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path

from ..errors import ExplainerError

MANIFEST = "_manifest.json"
BACKGROUND = "_background.parquet"
IMPORTANCE_CSV = "importance.csv"
FORMAT = "glassbox-batch"
FORMAT_VERSION = 1
_PART_RE = re.compile(r"^part-(\d{6,})\.(parquet|json)$")


# ======================================================================= files
def _part_name(index: int, kind: str) -> str:
    return f"part-{index:06d}.{'parquet' if kind == 'shap' else 'json'}"


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _write_table_atomic(table, path: Path) -> None:
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ==================================================================== manifest
def _run_identity(kind: str, model_sha: str, data_sha: str, opts: dict) -> tuple[dict, str]:
    """What an existing output must match to be resumed, and the run id derived from it."""
    identity = {"kind": kind, "model": {"sha256": model_sha}, "data": {"sha256": data_sha}, "options": opts}
    return identity, hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]


def _new_manifest(kind: str, run_id: str, resume: dict | None, model_path: Path, model_sha: str,
                  trusted: bool, src, data_sha: str) -> dict:
    """The fields every run's manifest starts with, status "running" (``src``: the opened data)."""
    return {
        "format": FORMAT, "version": FORMAT_VERSION, "kind": kind, "run_id": run_id,
        "status": "running", "created": (resume or {}).get("created", _now()), "updated": _now(),
        "model": {"path": str(model_path), "sha256": model_sha, "trusted": bool(trusted)},
        "data": {"path": src.path, "sha256": data_sha, "format": src.kind,
                 "files": [Path(f).name for f in src.files]},
    }


def _mark_complete(man: dict, stats) -> None:
    """Record a finished chunk loop (``stats``: its _RunStats) in the manifest; the caller writes it."""
    man.update(status="complete", n_rows=stats.n_rows, n_chunks=stats.n_chunks, updated=_now(), finished=_now())


def _read_manifest(out: Path) -> dict | None:
    path = out / MANIFEST
    if not path.is_file():
        return None
    try:
        man = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ExplainerError(
            f"{str(path)!r} is not a readable batch manifest ({exc}). Pass --overwrite to start "
            "over, or choose another --out."
        ) from None
    if not isinstance(man, dict) or man.get("format") != FORMAT:
        raise ExplainerError(
            f"{str(path)!r} was not written by a Glassbox batch run. Choose another --out."
        )
    return man


def _write_manifest(out: Path, man: dict) -> None:
    _atomic_write_bytes(out / MANIFEST, (json.dumps(man, indent=2, sort_keys=True) + "\n").encode())



def _finished_manifest(out: Path, kind: str, command: str) -> dict:
    if out.is_file() and out.name == MANIFEST:
        out = out.parent
    if not out.is_dir():
        raise ExplainerError(f"{str(out)!r} is not a batch output directory. Give the --out directory of a batch run.")
    man = _read_manifest(out)
    if man is None:
        raise ExplainerError(
            f"{str(out)!r} has no {MANIFEST}, so it is not the output of a batch run. Give the --out "
            "directory of `python -m explainers batch`."
        )
    if man.get("kind") != kind:
        raise ExplainerError(f"{str(out)!r} holds a {man.get('kind')!r} run, not {kind!r}.")
    if man.get("status") != "complete":
        raise ExplainerError(
            f"The batch run in {str(out)!r} has not finished. Rerun the same `python -m explainers "
            f"{command}` command: it resumes where it stopped."
        )
    return man


# ==================================================================== resuming
def _ours(name: str) -> bool:
    return (name in (MANIFEST, BACKGROUND, IMPORTANCE_CSV) or bool(_PART_RE.match(name))
            or (name.startswith(".") and name.endswith(".tmp")))


def _clear_ours(out: Path, remove_dir: bool) -> None:
    """Delete the files a batch run writes (and the directory, if then empty and asked)."""
    if not out.is_dir():
        return
    for p in out.iterdir():
        if p.is_file() and _ours(p.name):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
    if remove_dir:
        with contextlib.suppress(OSError):
            out.rmdir()


def _remove_tmp(out: Path) -> None:
    if out.is_dir():
        for p in out.iterdir():
            if p.name.startswith(".") and p.name.endswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()


def _identity_diff(old: dict, new: dict) -> list[str]:
    diffs = []
    if old.get("kind") != new["kind"]:
        diffs.append(f"it holds a {old.get('kind')!r} run, not {new['kind']!r}")
    if old.get("model", {}).get("sha256") != new["model"]["sha256"]:
        diffs.append(
            f"it was made from another model (sha256 {str(old.get('model', {}).get('sha256'))[:12]}…, "
            f"this model is {new['model']['sha256'][:12]}…)"
        )
    if old.get("data", {}).get("sha256") != new["data"]["sha256"]:
        diffs.append("it was made from other data (the data file's content differs)")
    oo, no = old.get("options", {}), new["options"]
    changed = sorted(k for k in set(oo) | set(no) if oo.get(k) != no.get(k))
    if changed:
        diffs.append("options differ: " + ", ".join(f"{k} {oo.get(k)!r} -> {no.get(k)!r}" for k in changed))
    return diffs


def _prepare_out(out: Path, identity: dict, overwrite: bool) -> tuple[bool, dict | None]:
    """Decide between a fresh run and a resume. Returns (created the dir, manifest to resume)."""
    if out.exists() and not out.is_dir():
        raise ExplainerError(f"--out {str(out)!r} is a file; give a directory path (it will hold part files).")
    if not out.exists():
        return True, None
    man = _read_manifest(out)
    if man is None:
        if any(out.iterdir()):
            raise ExplainerError(
                f"--out {str(out)!r} exists and holds files that no batch run wrote. Choose a new "
                "or empty directory (its files are never deleted, even with --overwrite)."
            )
        return False, None
    diffs = _identity_diff(man, identity)
    if diffs:
        if not overwrite:
            raise ExplainerError(
                f"--out {str(out)!r} already holds results that do not match this run: "
                + "; ".join(diffs)
                + ". Pass --overwrite to replace them, or choose another --out."
            )
        _clear_ours(out, remove_dir=False)
        return False, None
    if overwrite:
        _clear_ours(out, remove_dir=False)
        return False, None
    return False, man


def _done_parts(out: Path, kind: str, run_id: str) -> dict[int, int]:
    """Finished parts of this run: chunk index -> rows (a part written in full, by this run)."""
    import pyarrow.parquet as pq

    done: dict[int, int] = {}
    for p in out.iterdir():
        m = _PART_RE.match(p.name)
        if not m or (m.group(2) == "parquet") != (kind == "shap"):
            continue
        try:
            if kind == "shap":
                meta = pq.ParquetFile(p).metadata
                kv = {k.decode(): v.decode() for k, v in (meta.metadata or {}).items()}
                ok = kv.get("glassbox.run_id") == run_id
                rows = int(meta.num_rows)
            else:
                stats = json.loads(p.read_text())
                ok = stats.get("run_id") == run_id
                rows = int(stats["n"])
        except Exception:  # unreadable: recompute it
            ok = False
        if ok:
            done[int(m.group(1))] = rows
        else:
            p.unlink()
    return done


def _drop_parts_from(out: Path, n_chunks: int) -> None:
    """Delete the parts numbered ``n_chunks`` and up: past the end of the data, they cannot belong to it."""
    for p in out.iterdir():
        m = _PART_RE.match(p.name)
        if m and int(m.group(1)) >= n_chunks:
            p.unlink()


@contextlib.contextmanager
def _cleanup_on_error(out: Path, created: bool):
    """Bad input found mid-run: leave no partial output from a fresh run; keep resumable parts otherwise."""
    try:
        yield
    except ExplainerError:
        if created:
            _clear_ours(out, remove_dir=True)
        else:
            _remove_tmp(out)
        raise
    except BaseException:  # interrupted: the finished parts stay for the next run
        _remove_tmp(out)
        raise
