"""Reading an uploaded model file in a process of its own, with a CPU-time and memory budget.

:func:`load_model` is linear in the file's size and checks every count before it
allocates, but a large valid file still holds the interpreter for as long as it
parses, and a pickle the operator trusts runs whatever it holds. In a server every
other user waits on that. :func:`load_model_isolated` reads the file in a child
Python instead (``python -c``, so nothing of the server's main module runs there),
capped at ``parse_seconds`` of CPU and ``parse_bytes`` of memory beyond what its
imports take, with no core dump, in a private temporary folder removed afterwards.
The parsed model comes back as a pickle the child wrote: our own reader's output
(an untrusted file never runs code there; a trusted pickle already could). A child
that runs out of its budget, crashes or is killed is a refusal saying which; the
server itself never runs the parse.

The child gets the bytes and the ``GLASSBOX_*`` environment of the call (the limits
of :mod:`explainers.limits` are read there), nothing else of the session.
"""
from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import tempfile

from .. import errors, limits
from ..errors import InvalidModelError

__all__ = ["load_model_isolated"]

#: the package's folder, so the child imports this same explainers
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_CHILD = "import sys; from explainers.io.isolated import _child; _child(*sys.argv[1:])"


def _vm_size() -> int:
    """This process's virtual memory size in bytes (0 where /proc does not say)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _confine(cpu: int, memory: int) -> None:
    """In the child, once the readers are imported: the CPU and memory budget, and no core file."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not a POSIX system: the wall-clock limit still holds
        return
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = int(used.ru_utime + used.ru_stime) + 1
    for what, value in ((resource.RLIMIT_CPU, spent + cpu), (resource.RLIMIT_AS, _vm_size() + memory),
                        (resource.RLIMIT_CORE, 0)):
        try:
            resource.setrlimit(what, (value, value))
        except (ValueError, OSError):  # pragma: no cover - a hard limit below ours already holds
            pass


def _child(folder: str, trusted: str, filename: str, cpu: str, memory: str) -> None:
    """In the child: read ``folder/model``, write ("ok", model) or ("error", class name, message)."""
    from .models import load_model

    _confine(int(cpu), int(memory))
    with open(os.path.join(folder, "model"), "rb") as fh:
        data = fh.read()
    try:
        out = ("ok", load_model(data, trusted=trusted == "1", filename=filename or None))
    except MemoryError:
        out = ("memory",)
    except errors.ExplainerError as exc:  # a reader's refusal; one caused by the memory budget says so
        out = ("memory",) if isinstance(exc.__context__, MemoryError) else ("error", type(exc).__name__, str(exc))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as a refusal
        out = ("error", "InvalidModelError", f"Could not read the model file ({type(exc).__name__}: {exc}).")
    del data
    path = os.path.join(folder, "answer")
    try:
        with open(path, "wb") as fh:
            pickle.dump(out, fh, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        with open(path, "wb") as fh:
            pickle.dump(("memory",), fh)
    except Exception as exc:  # noqa: BLE001 - a model that cannot be handed back
        with open(path, "wb") as fh:
            pickle.dump(("error", "InvalidModelError", "The model was read but cannot be handed to the server "
                         f"({type(exc).__name__}: {exc})."), fh)


def load_model_isolated(data: bytes, trusted: bool = False, filename: str | None = None):
    """:func:`~explainers.io.load_model` of ``data`` in a child process with a CPU and memory budget.

    Returns what ``load_model`` returns; raises what it raises (the same class and
    message), and :class:`~explainers.errors.InvalidModelError` when the child used up
    ``parse_seconds`` of CPU (``GLASSBOX_MAX_PARSE_SECONDS``) or ``parse_bytes`` of memory
    (``GLASSBOX_MAX_PARSE_BYTES``), crashed, or did not finish within twice its CPU budget
    plus 60 s of wall time (the imports included).
    """
    cpu, memory = limits.limit("parse_seconds"), limits.limit("parse_bytes")
    env = {k: v for k, v in os.environ.items()
           if k.startswith("GLASSBOX_") or k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")}
    env["PYTHONPATH"] = os.pathsep.join([_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = "1"
    wall = 2 * cpu + 60
    with tempfile.TemporaryDirectory(prefix="glassbox-read-") as tmp:
        with open(os.path.join(tmp, "model"), "wb") as fh:
            fh.write(bytes(data))
        argv = [sys.executable, "-c", _CHILD, tmp, "1" if trusted else "0", filename or "", str(cpu), str(memory)]
        try:
            proc = subprocess.run(argv, cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, timeout=wall)
        except subprocess.TimeoutExpired:
            return _answer(("wall", wall), None, cpu, memory)
        answer = os.path.join(tmp, "answer")
        out = None
        if proc.returncode == 0 and os.path.isfile(answer):
            with open(answer, "rb") as fh:
                out = pickle.load(fh)  # noqa: S301 - written by our own reader in the child
        return _answer(out, proc.returncode, cpu, memory, proc.stderr)


def _answer(out, exitcode, cpu: int, memory: int, stderr: bytes = b""):
    """The model, or the refusal the child's message or its end says."""
    if out is not None and out[0] == "ok":
        return out[1]
    if out is not None and out[0] == "error":
        cls = getattr(errors, out[1], None)
        cls = cls if isinstance(cls, type) and issubclass(cls, errors.ExplainerError) else InvalidModelError
        try:
            exc = cls(out[2])
        except TypeError:  # an error class with arguments of its own
            exc = InvalidModelError(out[2])
        raise exc
    if out is not None and out[0] == "memory":
        raise InvalidModelError(
            f"Reading this model file needed more than {limits.fmt('parse_bytes', memory)} of memory "
            f"({limits.over('parse_bytes')}). The server was not affected.")
    if out is not None and out[0] == "wall":
        raise InvalidModelError(f"Reading this model file did not finish in {out[1]:.0f} s, so it was stopped. "
                                "The server was not affected.")
    sig = -exitcode if exitcode is not None and exitcode < 0 else None
    if sig in (signal.SIGXCPU, signal.SIGKILL):
        raise InvalidModelError(
            f"Reading this model file was stopped after {limits.fmt('parse_seconds', cpu)} CPU seconds, the limit "
            "for one upload (the operator can raise it with the environment variable GLASSBOX_MAX_PARSE_SECONDS). "
            "The server was not affected.")
    if sig is not None:
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
        raise InvalidModelError(f"Reading this model file crashed its reader ({name}): the file is damaged or "
                                "was made to crash a reader. The server was not affected.")
    said = stderr.decode("utf-8", "replace").strip().splitlines()
    if said and "MemoryError" in said[-1]:
        raise InvalidModelError(
            f"Reading this model file needed more than {limits.fmt('parse_bytes', memory)} of memory "
            f"({limits.over('parse_bytes')}). The server was not affected.")
    why = f": {said[-1][:300]}" if said else ""
    raise InvalidModelError(f"Reading this model file stopped without an answer (exit status {exitcode}{why}). "
                            "The server was not affected.")
