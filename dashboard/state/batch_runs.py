"""Precomputed batch runs (``python -m explainers batch``) for the SHAP page's global views,
opened only from inside the folders the operator allows.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from explainers import ExplainerError

from .cache import result_cache
from .context import ModelContext
from .operator import batch_roots


#: the one answer for every path that cannot be opened: outside the allowed folders,
#: missing, or a file. It never says which, so the page cannot probe the server's files.
BATCH_REFUSED = (
    "No batch run can be opened from this path. Give the --out folder of a finished "
    "`python -m explainers batch` run inside the folders this server allows for batch runs."
)


def batch_folder(folder: str, roots: list[str]) -> str:
    """The real path of ``folder`` when it is an existing folder inside one of ``roots``.

    Symlinks and ``..`` are resolved first (os.path.realpath), then the folder
    must lie inside a root (whole path components compared). A relative path
    is taken inside each root in turn. Anything else raises ExplainerError with
    :data:`BATCH_REFUSED`, the same message whether the path is outside, missing
    or a file.
    """
    try:
        text = os.path.expanduser(str(folder).strip())
        if not text or "\x00" in text:
            raise ValueError(folder)
        candidates = [text] if os.path.isabs(text) else [os.path.join(root, text) for root in roots]
        for candidate in candidates:
            real = os.path.realpath(candidate)
            # inside first: nothing about a path outside the roots is looked up
            if any(_inside(real, root) for root in roots) and os.path.isdir(real):
                return real
    except (OSError, ValueError):
        pass
    raise ExplainerError(BATCH_REFUSED)


def _inside(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or below it, comparing whole path components (both resolved)."""
    return Path(os.path.normcase(path)).is_relative_to(Path(os.path.normcase(root)))


def precomputed_attributions(ctx: ModelContext, folder: str, n_rows: int):
    """A seeded sample of a finished ``python -m explainers batch`` run, and whether it is this model's.

    Only folders inside the operator's batch roots (:func:`~.session.batch_roots`)
    are opened. Returns (ShapResult, same_model). Raises ExplainerError with
    :data:`BATCH_REFUSED` for a path outside the roots (or missing, or a file),
    and the batch reader's own message for a folder inside them that holds no
    finished run.
    """
    from explainers.batch import MANIFEST, load_attributions

    path = batch_folder(folder, batch_roots())
    manifest = Path(path) / MANIFEST
    try:
        stamp = manifest.stat().st_mtime_ns
    except OSError:
        stamp = None
    if stamp is None:  # no run here: the reader says what is wrong
        res = load_attributions(path, sample=n_rows)
    else:
        res = result_cache().get_or_compute(("precomputed", path, stamp, n_rows),
                                            lambda: load_attributions(path, sample=n_rows))
    try:
        sha = json.loads(manifest.read_text()).get("model", {}).get("sha256")
    except (OSError, ValueError, AttributeError):
        sha = None
    return res, sha == ctx.model_key
