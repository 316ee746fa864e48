"""The output directory of a batch run: its manifest, which files are the run's, resuming, and checking.

``OUT/_manifest.json`` records the model and data fingerprints and every option
that changes the numbers (the run's identity) and a run id, random per run and
kept when the run is resumed. Each chunk writes one part file atomically (a
temporary file renamed into place), tagged with the run id and its chunk (Parquet
key-value metadata, or fields of the JSON part). So a part always says which run
wrote it, and:

* rerunning the same command keeps the finished parts of the same run id;
  another identity is refused unless ``overwrite``;
* ``overwrite`` deletes only the files the previous run wrote (its manifest, the
  parts its manifest lists or that carry its run id, its background and
  ``importance.csv``), never files that merely look like ours; a directory that
  also holds files no run wrote is refused;
* a finished manifest lists its parts, and readers (:func:`_finished_manifest`)
  refuse an unfinished run, a missing part, a part of another run or an extra one;
* while a run is not finished, ``OUT/INCOMPLETE.txt`` makes ``pandas.read_parquet(OUT)``
  fail instead of reading a partial result as if it were whole.

One run at a time writes to a directory: see :mod:`.lock`.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
from datetime import datetime, timezone
from pathlib import Path

from ..errors import ExplainerError, InvalidDataError
from .lock import LOCK, _lock_holder, _describe

MANIFEST = "_manifest.json"
BACKGROUND = "_background.parquet"
IMPORTANCE_CSV = "importance.csv"
#: present while a run is not finished: not Parquet, so dataset readers of OUT fail on it
INCOMPLETE = "INCOMPLETE.txt"
FORMAT = "glassbox-batch"
#: 1 throughout: version-1 folders written before run locks carry the same part tags and are
#: checked the same way (their parts are found by number instead of from a list)
FORMAT_VERSION = 1
_PART_RE = re.compile(r"^part-(\d{6,})\.(parquet|json)$")
_TMP_RE = re.compile(r"^\.(.+)\.\d+\.tmp$")
_INCOMPLETE_SIGNATURE = "glassbox-batch: incomplete output"
_INCOMPLETE_TEXT = (
    f"{_INCOMPLETE_SIGNATURE}\n\n"
    "This folder holds a Glassbox batch run that has not finished: a run is writing it now, or it was\n"
    "interrupted. Its part files are not the whole result. Rerun the same `python -m explainers`\n"
    "command to finish it; this file is removed when the run completes.\n"
)


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


def _is_tmp(name: str) -> bool:
    """A temporary file of an atomic write of one of our files (left by a killed process)."""
    m = _TMP_RE.match(name)
    return bool(m) and (m.group(1) in (MANIFEST, BACKGROUND, IMPORTANCE_CSV) or bool(_PART_RE.match(m.group(1))))


def _is_incomplete_marker(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(_INCOMPLETE_SIGNATURE)).decode(errors="replace") == _INCOMPLETE_SIGNATURE
    except OSError:
        return False


def _mark_incomplete(out: Path) -> None:
    _atomic_write_bytes(out / INCOMPLETE, _INCOMPLETE_TEXT.encode())


def _unmark_incomplete(out: Path) -> None:
    if _is_incomplete_marker(out / INCOMPLETE):
        with contextlib.suppress(FileNotFoundError):
            (out / INCOMPLETE).unlink()


def _run_scaffolding(path: Path) -> bool:
    """Files any run leaves in passing and may remove: the lock, our temporary files, our marker."""
    return path.name == LOCK or _is_tmp(path.name) or (path.name == INCOMPLETE and _is_incomplete_marker(path))


def _part_tag(path: Path, kind: str) -> dict | None:
    """The run id, chunk, first row and rows a part records; None when it is unreadable or untagged."""
    try:
        if kind == "shap":
            import pyarrow.parquet as pq

            meta = pq.read_metadata(path)
            kv = {k.decode(): v.decode() for k, v in (meta.metadata or {}).items()}
            return {"run_id": kv["glassbox.run_id"], "chunk": int(kv["glassbox.chunk"]),
                    "start": int(kv["glassbox.start"]), "rows": int(meta.num_rows)}
        stats = json.loads(path.read_text())
        return {"run_id": str(stats["run_id"]), "chunk": int(stats["chunk"]), "start": int(stats["start"]),
                "rows": int(stats["n"])}
    except Exception:  # noqa: BLE001 - anything unreadable is simply not a tagged part
        return None


# ==================================================================== manifest
def _run_identity(kind: str, model_sha: str, data_sha: str, opts: dict) -> dict:
    """What an existing output must match to be resumed."""
    return {"kind": kind, "model": {"sha256": model_sha}, "data": {"sha256": data_sha}, "options": opts}


def _new_run_id() -> str:
    """A run's id: random, so two runs never share one (a resumed run keeps its own)."""
    return secrets.token_hex(10)


def _new_manifest(kind: str, run_id: str, resume: dict | None, model_path: Path, model_sha: str,
                  trusted: bool, src, data_sha: str, total_rows: int | None, chunk_rows: int) -> dict:
    """The fields every run's manifest starts with, status "running" (``src``: the opened data)."""
    man = {
        "format": FORMAT, "version": FORMAT_VERSION, "kind": kind, "run_id": run_id,
        "status": "running", "created": (resume or {}).get("created", _now()), "updated": _now(),
        "model": {"path": str(model_path), "sha256": model_sha, "trusted": bool(trusted)},
        "data": {"path": src.path, "sha256": data_sha, "format": src.kind,
                 "files": [Path(f).name for f in src.files]},
        # for the "k of n parts done" of an unfinished run (CSV: estimated from line breaks)
        "expected_rows": total_rows, "expected_rows_exact": src.kind != "csv",
        "expected_chunks": None if total_rows is None else max(1, math.ceil(total_rows / chunk_rows)),
    }
    if kind == "importance":
        man["importance_csv"] = IMPORTANCE_CSV  # the file this run writes at its end
    return man


def _mark_complete(man: dict, stats) -> None:
    """Record a finished chunk loop (``stats``: its _RunStats) in the manifest; the caller writes it."""
    man.update(status="complete", n_rows=stats.n_rows, n_chunks=stats.n_chunks, updated=_now(), finished=_now(),
               parts=[_part_name(i, man["kind"]) for i in range(stats.n_chunks)])


def _read_manifest(out: Path) -> dict | None:
    path = out / MANIFEST
    if not path.is_file():
        return None
    try:
        man = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ExplainerError(
            f"{str(path)!r} is not a readable batch manifest ({exc}), so which files its run wrote is "
            "unknown and none are deleted. Move the folder away, or choose another --out."
        ) from None
    if not isinstance(man, dict) or man.get("format") != FORMAT:
        raise ExplainerError(
            f"{str(path)!r} was not written by a Glassbox batch run. Choose another --out."
        )
    if not isinstance(man.get("version"), int) or man["version"] > FORMAT_VERSION:
        raise ExplainerError(
            f"{str(path)!r} was written by another version of Glassbox (batch format {man.get('version')!r}; "
            f"this one reads {FORMAT_VERSION}). Open it with that version, or choose another --out."
        )
    return man


def _write_manifest(out: Path, man: dict) -> None:
    _atomic_write_bytes(out / MANIFEST, (json.dumps(man, indent=2, sort_keys=True) + "\n").encode())


# =================================================================== ownership
def _listed_parts(man: dict) -> list[str]:
    """The part files a finished manifest lists (counted from n_chunks in version-1 manifests)."""
    if man.get("status") != "complete":
        return []
    if isinstance(man.get("parts"), list):
        return [str(p) for p in man["parts"] if isinstance(p, str) and _PART_RE.match(p)]
    return [_part_name(i, man.get("kind", "shap")) for i in range(int(man.get("n_chunks") or 0))]


def _owned_files(out: Path, man: dict) -> list[Path]:
    """The files the run of ``man`` wrote: its manifest, the parts it lists or that carry its run id,
    its background and importance.csv. Nothing is included for merely having one of our names."""
    kind = man.get("kind", "shap")
    owned = {MANIFEST, *_listed_parts(man)}
    if (man.get("background") or {}).get("file") == BACKGROUND:
        owned.add(BACKGROUND)
    if man.get("importance_csv") == IMPORTANCE_CSV or (kind == "importance" and man.get("status") == "complete"):
        owned.add(IMPORTANCE_CSV)  # (version-1 manifests did not say; a finished importance run wrote it)
    for p in out.iterdir():
        m = _PART_RE.match(p.name)
        if m and p.name not in owned and (m.group(2) == "parquet") == (kind == "shap"):
            tag = _part_tag(p, kind)
            if tag is not None and tag["run_id"] == man.get("run_id"):
                owned.add(p.name)
    return [out / name for name in sorted(owned)]


def _foreign_files(out: Path, owned: list[Path]) -> list[str]:
    """Entries of ``out`` that no run wrote: neither owned nor run scaffolding."""
    names = {p.name for p in owned}
    return sorted(p.name for p in out.iterdir() if p.name not in names and not _run_scaffolding(p))


def _few(names: list[str], n: int = 5) -> str:
    shown = ", ".join(repr(x) for x in names[:n])
    return shown + (f" and {len(names) - n} more" if len(names) > n else "")


def _delete(paths: list[Path]) -> None:
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


# ==================================================================== resuming
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


def _check_not_foreign(out: Path) -> None:
    """Before touching ``out``: refuse an existing directory with no manifest that holds files no run wrote."""
    if out.exists() and not out.is_dir():
        raise ExplainerError(f"--out {str(out)!r} is a file; give a directory path (it will hold part files).")
    if out.is_dir() and not (out / MANIFEST).exists():
        foreign = _foreign_files(out, [])
        if foreign:
            raise ExplainerError(
                f"--out {str(out)!r} exists and holds files that no batch run wrote ({_few(foreign)}). "
                "Choose a new or empty directory (its files are never deleted, even with --overwrite)."
            )


def _prepare_out(out: Path, identity: dict, overwrite: bool) -> dict | None:
    """Decide between a fresh run and a resume, holding the run lock. Returns the manifest to resume.

    With ``overwrite`` (or another identity and ``overwrite``), the previous run's files are deleted,
    and only those; a directory that also holds files no run wrote is refused first.
    """
    man = _read_manifest(out)
    if man is None:
        _check_not_foreign(out)
        return None
    diffs = _identity_diff(man, identity)
    if diffs and not overwrite:
        raise ExplainerError(
            f"--out {str(out)!r} already holds results that do not match this run: "
            + "; ".join(diffs)
            + ". Pass --overwrite to replace them, or choose another --out."
        )
    if overwrite:
        owned = _owned_files(out, man)
        foreign = _foreign_files(out, owned)
        if foreign:
            raise ExplainerError(
                f"--out {str(out)!r} holds files that its batch run did not write ({_few(foreign)}). "
                "--overwrite deletes only the files the previous run wrote (its manifest lists them), so "
                "nothing was deleted: move those files away, or choose another --out."
            )
        _delete(owned)
        _remove_tmp(out)
        _unmark_incomplete(out)
        return None
    return man


def _remove_tmp(out: Path) -> None:
    if out.is_dir():
        for p in out.iterdir():
            if _is_tmp(p.name):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()


def _done_parts(out: Path, kind: str, run_id: str) -> dict[int, int]:
    """Finished parts of this run: chunk index -> rows (a part written in full, by this run).

    Other files are left alone: a part of another run, or an unreadable one, in a chunk this run
    computes is replaced when the chunk is written; anything else is reported by the final check.
    """
    done: dict[int, int] = {}
    for p in out.iterdir():
        m = _PART_RE.match(p.name)
        if not m or (m.group(2) == "parquet") != (kind == "shap"):
            continue
        tag = _part_tag(p, kind)
        index = int(m.group(1))
        if tag is not None and tag["run_id"] == run_id and tag["chunk"] == index:
            done[index] = tag["rows"]
    return done


def _drop_parts_from(out: Path, kind: str, run_id: str, n_chunks: int) -> None:
    """Delete this run's parts numbered ``n_chunks`` and up: past the end of the data, they cannot belong to it."""
    for p in out.iterdir():
        m = _PART_RE.match(p.name)
        if m and int(m.group(1)) >= n_chunks:
            tag = _part_tag(p, kind)
            if tag is not None and tag["run_id"] == run_id:
                p.unlink()


@contextlib.contextmanager
def _cleanup_on_error(out: Path, created: bool, kind: str, run_id: str):
    """Bad input found mid-run: leave no partial output from a fresh run in a directory it created
    (only this run's files are deleted); keep resumable parts otherwise."""
    try:
        yield
    except ExplainerError:
        if created:
            man = {"kind": kind, "run_id": run_id, "status": "running", "background": {"file": BACKGROUND},
                   "importance_csv": IMPORTANCE_CSV if kind == "importance" else None}
            _delete(_owned_files(out, man))
            _unmark_incomplete(out)
        _remove_tmp(out)
        raise
    except BaseException:  # interrupted: the finished parts stay for the next run
        _remove_tmp(out)
        raise


# ===================================================================== checking
def _expected_rows(man: dict, index: int) -> int:
    chunk = int(man["options"]["chunk_rows"])
    return min(chunk, int(man["n_rows"]) - index * chunk)


def _part_problems(out: Path, man: dict) -> tuple[list[str], list[str]]:
    """What is wrong with the parts of a finished run: (problems a rerun repairs, extra files).

    Every listed part must exist and carry the manifest's run id, its own chunk number, first row
    and number of rows. Extra: for SHAP, any other file a Parquet dataset reader of the folder would
    read (names not starting with ``_`` or ``.``); for importance, any other part file.
    """
    kind = man.get("kind", "shap")
    n_chunks = int(man["n_chunks"])
    names = [_part_name(i, kind) for i in range(n_chunks)]
    problems: list[str] = []
    if isinstance(man.get("parts"), list) and man["parts"] != names:
        problems.append(f"the manifest lists {len(man['parts'])} part(s) where {n_chunks} were written")
    chunk = int(man["options"]["chunk_rows"])
    for i, name in enumerate(names):
        path = out / name
        if not path.is_file():
            problems.append(f"{name!r} is missing")
            continue
        tag = _part_tag(path, kind)
        if tag is None:
            problems.append(f"{name!r} is unreadable or was not written by a batch run")
        elif tag["run_id"] != man.get("run_id"):
            problems.append(f"{name!r} comes from another run (run id {tag['run_id']}, not {man.get('run_id')})")
        elif (tag["chunk"], tag["start"], tag["rows"]) != (i, i * chunk, _expected_rows(man, i)):
            problems.append(f"{name!r} holds chunk {tag['chunk']} ({tag['rows']} rows from row {tag['start']}), "
                            f"not chunk {i} ({_expected_rows(man, i)} rows from row {i * chunk})")
    expected = set(names) | {IMPORTANCE_CSV if kind == "importance" else MANIFEST}
    extra = []
    for p in out.iterdir():
        if p.name in expected or _run_scaffolding(p):
            continue
        if kind == "shap" and not p.name.startswith(("_", ".")):
            extra.append(p.name)
        elif kind != "shap" and _PART_RE.match(p.name):
            extra.append(p.name)
    return problems, sorted(extra)


def _count_done(out: Path, man: dict) -> int:
    kind = man.get("kind", "shap")
    return len(_done_parts(out, kind, str(man.get("run_id"))))


def _finished_manifest(out: Path, kind: str, command: str) -> dict:
    """The manifest of a finished ``kind`` run in ``out`` whose parts all agree with it; else a clear error."""
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
    holder = _lock_holder(out)
    if man.get("status") != "complete":
        done, total = _count_done(out, man), man.get("expected_chunks")
        of = "" if total is None else (" of " if man.get("expected_rows_exact") else " of about ") + str(total)
        if holder is not None:
            raise InvalidDataError(
                f"A batch run ({_describe(holder)}) is writing to {str(out)!r} now ({done}{of} parts are done): "
                "wait for it to finish, then open the folder again."
            )
        raise InvalidDataError(
            f"The batch run in {str(out)!r} has not finished. Rerun the same `python -m explainers {command}` "
            f"command: it resumes where it stopped ({done}{of} parts are done; the folder is not read until then)."
        )
    busy = (f"A batch run ({_describe(holder)}) is writing to {str(out)!r} now: wait for it to finish. "
            if holder is not None else "")
    problems, extra = _part_problems(out, man)
    if problems:
        raise InvalidDataError(
            f"{busy}The batch output {str(out)!r} does not hold one complete run: " + "; ".join(problems[:5])
            + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
            + f". Rerun the same `python -m explainers {command}` command to recompute those parts, or "
            "rerun with --overwrite to start over."
        )
    if extra:
        raise InvalidDataError(
            f"{busy}The batch output {str(out)!r} holds files its run did not write ({_few(extra)}): they would "
            "be read with its parts. Move them out of the folder."
        )
    return man


def _extra_notice(out: Path, extra: list[str]) -> str:
    return (f"{str(out)!r} also holds files this run did not write ({_few(extra)}); readers of the folder "
            "refuse it until they are moved out.")


def _finished_ok(out: Path, man: dict, notices: list) -> bool:
    """Whether a finished run's parts all agree with its manifest, so a rerun has nothing to do
    (otherwise the rerun resumes it and recomputes the parts that are missing or not its own)."""
    problems, extra = _part_problems(out, man)
    if problems:
        return False
    _unmark_incomplete(out)
    if extra:
        notices.append(_extra_notice(out, extra))
    return True


def _finish(out: Path, man: dict, command: str, notices: list) -> None:
    """Check every part against the finished manifest, then write it and drop the incomplete marker."""
    problems, extra = _part_problems(out, man)
    if problems:
        raise InvalidDataError(
            f"Another process wrote to {str(out)!r} while this run was going (" + "; ".join(problems[:3])
            + "): an older Glassbox, or tasks of a killed run still running on a Dask cluster. Rerun the same "
            f"`python -m explainers {command}` command once it has stopped: it recomputes those parts."
        )
    if extra:
        notices.append(_extra_notice(out, extra))
    _write_manifest(out, man)
    _unmark_incomplete(out)
