"""Checks on a .skops archive before skops reads it: member count and sizes, and the
objects, array bytes and trees its schema would build (shared objects counted at every use)."""
from __future__ import annotations

import io


from .. import limits
from ..errors import InvalidModelError


_SKOPS_HINT = "Save the model again with skops.io.dump(model, 'model.skops')."


def _zip_entry_count(data: bytes) -> int | None:
    """Entries the zip's central directory announces, read before zipfile parses them all."""
    import zipfile

    try:
        end = zipfile._EndRecData(io.BytesIO(data))  # noqa: SLF001 - the documented end record
        return None if not end else int(end[zipfile._ECD_ENTRIES_TOTAL])
    except Exception:  # noqa: BLE001 - zipfile reports a damaged archive itself
        return None


def check_skops_archive(data: bytes) -> dict:
    """Check a .skops archive against the model limits before skops reads any of it.

    A .skops file is a zip of ``schema.json`` and ``.npy`` members. skops reads
    a member once for every schema entry naming it, and builds an object once
    per ``__id__`` however often the schema refers to it, so a file of a few
    kilobytes can describe gigabytes of arrays or a forest of 100,000 copies of
    one tree. This counts, from the zip directory and the schema alone:

    - members (GLASSBOX_MAX_MODEL_FILES) and the size of ``schema.json``
      (GLASSBOX_MAX_SCHEMA_BYTES);
    - that every member unpacks to exactly its declared size (read in chunks,
      never more than declared);
    - with every shared object expanded at each place the schema refers to it:
      the objects built (GLASSBOX_MAX_MODEL_OBJECTS), the array bytes read
      (GLASSBOX_MAX_MODEL_BYTES) and the trees (GLASSBOX_MAX_TREES).

    Returns the expanded counts: ``{"objects", "bytes", "trees"}``.

    Raises
    ------
    InvalidModelError
        Naming the count, the limit and the environment variable that raises it.
    """
    return checked_schema(data)[0]


def checked_schema(data: bytes) -> tuple[dict, object]:
    """:func:`check_skops_archive`'s counts and the parsed schema.json it checked, so that
    the loader reads the schema once more only when it rewrites it."""
    import json
    import zipfile

    n_entries = _zip_entry_count(data)
    if n_entries is not None and n_entries > limits.limit("model_files"):
        raise InvalidModelError(
            f"The .skops file holds {n_entries:,} files, {limits.over('model_files')}."
        )
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except Exception as exc:  # noqa: BLE001
        raise InvalidModelError(
            f"The file is not a readable .skops model ({type(exc).__name__}: {exc}). {_SKOPS_HINT}"
        ) from None
    with zf:
        if len(infos) > limits.limit("model_files"):
            raise InvalidModelError(f"The .skops file holds {len(infos):,} files, {limits.over('model_files')}.")
        sizes: dict[str, int] = {}
        for info in infos:
            sizes[info.filename] = info.file_size
        total = sum(sizes.values())
        if total > limits.limit("model_bytes"):
            raise InvalidModelError(
                f"The .skops file unpacks to {limits.fmt('model_bytes', total)}, {limits.over('model_bytes')}."
            )
        schema_info = next((i for i in reversed(infos) if i.filename == "schema.json"), None)
        if schema_info is None:
            raise InvalidModelError(f"The file is not a .skops model: it has no schema.json. {_SKOPS_HINT}")
        if schema_info.file_size > limits.limit("schema_bytes"):
            raise InvalidModelError(
                f"The .skops file's schema.json is {limits.fmt('schema_bytes', schema_info.file_size)}, "
                f"{limits.over('schema_bytes')}."
            )
        schema_text = _read_member(zf, schema_info)
        try:
            schema = json.loads(schema_text)
        except RecursionError:
            raise InvalidModelError(f"The .skops schema nests too deeply to read. {_SKOPS_HINT}") from None
        except Exception as exc:  # noqa: BLE001
            raise InvalidModelError(
                f"The .skops schema is not valid JSON ({type(exc).__name__}: {exc}). {_SKOPS_HINT}"
            ) from None
        del schema_text
        counts = _expanded_schema_counts(schema, sizes)
        for key, name, what in (("trees", "trees", "trees"), ("objects", "model_objects", "objects"),
                                ("bytes", "model_bytes", None)):
            if counts[key] > limits.limit(name):
                found = limits.fmt(name, counts[key])
                text = f"unpacks to {found} of arrays" if what is None else f"builds {found} {what}"
                raise InvalidModelError(
                    f"The .skops file {text} once the objects it shares are counted at every use, "
                    f"{limits.over(name)}."
                )
        for info in infos:
            if info is not schema_info:
                _read_member(zf, info, keep=False)
    return counts, schema


def _read_member(zf, info, keep: bool = True) -> bytes:
    """Unpack one zip member in chunks, refusing it unless it is exactly its declared size.

    zipfile never returns more than the directory declares, so a member that
    claims less than it holds fails its CRC check, and one that claims more
    comes up short: both are forgeries (or damage).
    """
    got, chunks = 0, []
    try:
        with zf.open(info) as fh:
            while True:
                chunk = fh.read(1 << 20)
                if not chunk:
                    break
                got += len(chunk)
                if keep:
                    chunks.append(chunk)
    except Exception as exc:  # noqa: BLE001
        raise InvalidModelError(
            f"The .skops file is damaged: its member {info.filename!r} cannot be unpacked "
            f"({type(exc).__name__}: {exc}). {_SKOPS_HINT}"
        ) from None
    if got != info.file_size:
        raise InvalidModelError(
            f"The .skops file is damaged: its member {info.filename!r} unpacks to {got:,} bytes "
            f"but declares {info.file_size:,}. {_SKOPS_HINT}"
        )
    return b"".join(chunks)


_TREE_CLASSES = {"Tree", "TreePredictor"}
_SATURATE = 1 << 62


def _expanded_schema_counts(schema, sizes: dict) -> dict:
    """Objects, array bytes and trees a skops schema describes, shared objects expanded.

    A schema entry (a dict with ``__class__``) is a node; entries under it are its
    children. An entry whose ``__id__`` was met before is, to skops, the same
    object again. Here every entry with a given id counts as the largest of its
    occurrences, at every place it occurs: an upper bound on what walking the
    loaded model object by object costs. Iterative, so deep schemas cannot
    exhaust the stack.
    """
    # index the node entries and their nearest node children
    own: list[tuple[int, int, int]] = []
    ids: list = []
    children: list[list[int]] = []
    stack = [(schema, -1)]
    while stack:
        obj, parent = stack.pop()
        if isinstance(obj, dict):
            if "__class__" in obj or "__loader__" in obj:
                idx = len(own)
                f = obj.get("file")
                nbytes = int(sizes.get(f, 0)) if isinstance(f, str) else 0
                own.append((1, nbytes, int(obj.get("__class__") in _TREE_CLASSES)))
                ident = obj.get("__id__")
                ids.append(ident if isinstance(ident, (int, str)) and not isinstance(ident, bool) else None)
                children.append([])
                if parent >= 0:
                    children[parent].append(idx)
                parent = idx
            for v in obj.values():
                if isinstance(v, (dict, list)):
                    stack.append((v, parent))
        elif isinstance(obj, list):
            for v in obj:
                if isinstance(v, (dict, list)):
                    stack.append((v, parent))
    if not own:
        return {"objects": 0, "bytes": 0, "trees": 0}
    groups: dict = {}
    for i, ident in enumerate(ids):
        if ident is not None:
            groups.setdefault(ident, []).append(i)

    # items: ("o", index) an occurrence, its own counts plus its children's;
    # ("g", id) every occurrence of an id, the largest of them
    def deps(item):
        kind, key = item
        if kind == "g":
            return [("o", i) for i in groups[key]]
        return [("g", ids[c]) if ids[c] is not None else ("o", c) for c in children[key]]

    done: dict = {}
    active: set = set()
    cycle = (1, 0, 0)
    root = ("g", ids[0]) if ids[0] is not None else ("o", 0)
    work = [root]
    while work:
        item = work[-1]
        if item in done:
            work.pop()
            continue
        if item not in active:
            active.add(item)
            pending = [d for d in dict.fromkeys(deps(item)) if d not in done and d not in active]
            if pending:
                work.extend(pending)
                continue
        vals = [done.get(d, cycle) for d in deps(item)]
        if item[0] == "g":
            value = tuple(max(v[k] for v in vals) for k in range(3))
        else:
            base = own[item[1]]
            value = tuple(min(_SATURATE, base[k] + sum(v[k] for v in vals)) for k in range(3))
        done[item] = value
        active.discard(item)
        work.pop()
    objects, nbytes, trees = done[root]
    return {"objects": objects, "bytes": nbytes, "trees": trees}
