"""What the operator allowed at start: pickle uploads, folders for batch runs."""
from __future__ import annotations

import os
import sys

TRUST_FLAG = "--trust-pickles"
TRUST_ENV = "GLASSBOX_TRUST_PICKLES"
BATCH_ROOT_FLAG = "--batch-root"
BATCH_ROOTS_ENV = "GLASSBOX_BATCH_ROOTS"


def pickles_trusted() -> bool:
    """The operator allowed pickle/joblib uploads (a start flag or environment variable)."""
    env = os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return env or TRUST_FLAG in sys.argv[1:]


def batch_roots() -> list[str]:
    """The folders the operator lets users open batch runs from, resolved (symlinks, ``..``).

    Named after ``--`` at start (``-- --batch-root DIR``, repeatable, or
    ``--batch-root=DIR``) and in GLASSBOX_BATCH_ROOTS (folders separated by
    ``os.pathsep``). None named: the SHAP page offers no batch runs at all.
    """
    named = os.environ.get(BATCH_ROOTS_ENV, "").split(os.pathsep)
    args = sys.argv[1:]
    for i, arg in enumerate(args):
        if arg == BATCH_ROOT_FLAG and i + 1 < len(args):
            named.append(args[i + 1])
        elif arg.startswith(BATCH_ROOT_FLAG + "="):
            named.append(arg[len(BATCH_ROOT_FLAG) + 1:])
    roots = []
    for p in named:
        if p.strip():
            real = os.path.realpath(os.path.expanduser(p.strip()))
            if real not in roots:
                roots.append(real)
    return roots
