"""Reading an uploaded file in a process of its own, with a CPU-time and memory budget.

:func:`load_model` and :func:`load_data` are linear in the file's size and check every
count before they allocate, but a large valid file still holds the interpreter for as
long as it parses, and a pickle the operator trusts runs whatever it holds. In a server
every other user waits on that. :func:`load_model_isolated` and :func:`load_data_isolated`
read the file in a child Python instead (``python -c``, so nothing of the server's main
module runs there), capped at ``parse_seconds`` of CPU and ``parse_bytes`` of memory
beyond what its imports take, with no core dump, in a private temporary folder removed
afterwards. The result comes back as a pickle the child wrote: our own reader's output
(an untrusted file never runs code there; a trusted pickle already could). A child that
runs out of its budget, crashes or is killed is a refusal saying which; the server itself
never runs the parse.

The child gets the bytes, the reader's options (for data: the model, already read) and the
``GLASSBOX_*`` environment of the call (the limits of :mod:`explainers.limits` are read
there), nothing else of the session.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile

from .. import errors, limits
from .._child import CPU_SIGNALS, child_env, set_limits, signal_name

__all__ = ["load_model_isolated", "load_data_isolated"]

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
    """In the child, once the readers are imported: ``cpu`` more CPU seconds, ``memory`` more
    bytes of address space, and no core file."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not a POSIX system: the wall-clock limit still holds
        return
    used = resource.getrusage(resource.RUSAGE_SELF)
    set_limits(int(used.ru_utime + used.ru_stime) + 1 + cpu, _vm_size() + memory)


def _child(folder: str, cpu: str, memory: str) -> None:
    """In the child: run the call in ``folder/call`` on the bytes in ``folder/file``; write
    ("ok", result) or ("error", class name, message) to ``folder/answer``."""
    import importlib

    with open(os.path.join(folder, "call"), "rb") as fh:
        # written by the parent (the reader's name, its options, and the parent's own model)
        module, name, kwargs, what = pickle.load(fh)  # noqa: S301
    reader = getattr(importlib.import_module(module), name)
    _confine(int(cpu), int(memory))
    with open(os.path.join(folder, "file"), "rb") as fh:
        data = fh.read()
    try:
        out = ("ok", reader(data, **kwargs))
    except MemoryError:
        out = ("memory",)
    except errors.ExplainerError as exc:  # a reader's refusal; one caused by the memory budget says so
        out = ("memory",) if isinstance(exc.__context__, MemoryError) else ("error", type(exc).__name__, str(exc))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as a refusal
        out = ("error", _ERROR[what], f"Could not read the {what} file ({type(exc).__name__}: {exc}).")
    del data
    path = os.path.join(folder, "answer")
    try:
        with open(path, "wb") as fh:
            pickle.dump(out, fh, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        with open(path, "wb") as fh:
            pickle.dump(("memory",), fh)
    except Exception as exc:  # noqa: BLE001 - a result that cannot be handed back
        with open(path, "wb") as fh:
            pickle.dump(("error", _ERROR[what], f"The {what} was read but cannot be handed to the server "
                         f"({type(exc).__name__}: {exc})."), fh)


#: the error class of a refusal, per kind of file
_ERROR = {"model": "InvalidModelError", "data": "InvalidDataError"}


def load_model_isolated(data: bytes, trusted: bool = False, filename: str | None = None):
    """:func:`~explainers.io.load_model` of ``data`` in a child process with a CPU and memory budget.

    Returns what ``load_model`` returns; raises what it raises (the same class and
    message), and :class:`~explainers.errors.InvalidModelError` when the child used up
    ``parse_seconds`` of CPU (``GLASSBOX_MAX_PARSE_SECONDS``) or ``parse_bytes`` of memory
    (``GLASSBOX_MAX_PARSE_BYTES``), crashed, or did not finish within twice its CPU budget
    plus 60 s of wall time (the imports included).
    """
    return _run("model", "explainers.io.models", "load_model", data,
                {"trusted": bool(trusted), "filename": filename})


def load_data_isolated(data: bytes, model=None, target: str | None = None, filename: str | None = None):
    """:func:`~explainers.io.load_data` of ``data`` in a child process, with the budget of
    :func:`load_model_isolated`; its refusals are :class:`~explainers.errors.InvalidDataError`.
    ``model`` (already read, by this process or its child) travels to the child as a pickle."""
    return _run("data", "explainers.io.data", "load_data", data,
                {"model": model, "target": target, "filename": filename})


def _run(what: str, module: str, name: str, data: bytes, kwargs: dict):
    """``module.name(data, **kwargs)`` in a child Python within the parse budget."""
    cpu, memory = limits.limit("parse_seconds"), limits.limit("parse_bytes")
    env = child_env(PYTHONPATH=os.pathsep.join(
        [_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    wall = 2 * cpu + 60
    with tempfile.TemporaryDirectory(prefix="glassbox-read-") as tmp:
        with open(os.path.join(tmp, "file"), "wb") as fh:
            fh.write(bytes(data))
        with open(os.path.join(tmp, "call"), "wb") as fh:
            pickle.dump((module, name, kwargs, what), fh, protocol=pickle.HIGHEST_PROTOCOL)
        argv = [sys.executable, "-c", _CHILD, tmp, str(cpu), str(memory)]
        try:
            proc = subprocess.run(argv, cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, timeout=wall)
        except subprocess.TimeoutExpired:
            return _answer(what, ("wall", wall), None, cpu, memory)
        answer = os.path.join(tmp, "answer")
        out = None
        if proc.returncode == 0 and os.path.isfile(answer):
            with open(answer, "rb") as fh:
                out = pickle.load(fh)  # noqa: S301 - written by our own reader in the child
        return _answer(what, out, proc.returncode, cpu, memory, proc.stderr)


def _answer(what: str, out, exitcode, cpu: int, memory: int, stderr: bytes = b""):
    """The result, or the refusal the child's message or its end says."""
    fallback = getattr(errors, _ERROR[what])
    if out is not None and out[0] == "ok":
        return out[1]
    if out is not None and out[0] == "error":
        cls = getattr(errors, out[1], None)
        cls = cls if isinstance(cls, type) and issubclass(cls, errors.ExplainerError) else fallback
        try:
            exc = cls(out[2])
        except TypeError:  # an error class with arguments of its own
            exc = fallback(out[2])
        raise exc
    said = stderr.decode("utf-8", "replace").strip().splitlines()
    memory_out = out is not None and out[0] == "memory" or bool(said and "MemoryError" in said[-1])
    raise fallback(f"Reading this {what} file {_why(out, exitcode, cpu, memory, memory_out, said)}. "
                   "The server was not affected.")


def _why(out, exitcode, cpu: int, memory: int, memory_out: bool, said: list) -> str:
    """How the child ended without a result, in words."""
    if memory_out:
        return f"needed more than {limits.fmt('parse_bytes', memory)} of memory ({limits.over('parse_bytes')})"
    if out is not None and out[0] == "wall":
        return f"did not finish in {out[1]:.0f} s, so it was stopped"
    sig = -exitcode if exitcode is not None and exitcode < 0 else None
    if sig in CPU_SIGNALS:
        return (f"was stopped after {limits.fmt('parse_seconds', cpu)} CPU seconds, the limit for one upload (the "
                "operator can raise it with the environment variable GLASSBOX_MAX_PARSE_SECONDS)")
    if sig is not None:
        return f"crashed its reader ({signal_name(sig)}): the file is damaged or was made to crash a reader"
    return f"stopped without an answer (exit status {exitcode}{f': {said[-1][:300]}' if said else ''})"
