"""Running a read of untrusted bytes in a child Python: its environment, its limits, how it ended.

Shared by the .cbm converter (:mod:`explainers.trees.catboost`, catboost's loader in a
disposable process) and the upload readers (:mod:`explainers.io.isolated`).
"""
from __future__ import annotations

import os
import signal

__all__ = ["child_env", "set_limits", "signal_name", "CPU_SIGNALS"]

#: a child ended by one of these ran out of CPU time (the soft limit's SIGXCPU, the hard one's SIGKILL)
CPU_SIGNALS = (signal.SIGXCPU, getattr(signal, "SIGKILL", 9))


def child_env(**extra: str) -> dict:
    """A child's environment: the search path, home, locale and temporary folder, the
    ``GLASSBOX_*`` settings (the limits are read there too), one thread for the numeric
    libraries, and ``extra``; nothing else of the server's."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("GLASSBOX_")}
    env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def set_limits(cpu_seconds: int, address_bytes: int, file_bytes: int | None = None) -> None:
    """In the child: cap its CPU seconds and address space, and, when given, the size of any
    file it writes; no core file. A hard limit already below one of these stays."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not a POSIX system: the caller's wall-clock limit still holds
        return
    pairs = [(resource.RLIMIT_CPU, cpu_seconds), (resource.RLIMIT_AS, address_bytes), (resource.RLIMIT_CORE, 0)]
    if file_bytes is not None:
        pairs.append((resource.RLIMIT_FSIZE, file_bytes))
    for what, value in pairs:
        try:
            resource.setrlimit(what, (value, value))
        except (ValueError, OSError):  # pragma: no cover - a hard limit below ours already holds
            pass


def signal_name(sig: int) -> str:
    """``SIGSEGV`` for 11, ``signal 99`` for a number no signal has."""
    return signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
