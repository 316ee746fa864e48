"""``python -m dashboard [streamlit run options] [-- app options]``: serve the dashboard
with its server settings given explicitly (loopback address, 100 MB uploads, no
tracebacks on the page), whatever folder it is started from and whichever config
files Streamlit finds. An option given here wins over the default of the same name,
e.g. ``python -m dashboard --server.port 8502 -- --batch-root /data/shap``.
"""
from __future__ import annotations

import importlib
import socket
import sys
import threading
import time
from pathlib import Path

APP = Path(__file__).resolve().parent / "app.py"

#: what the first page's script imports (the app, the Model page, a .skops model's reader, the
#: figures): imported once the server listens, so the first visitor does not wait for them
#: (about 1.5 s of a fresh server's first page)
PRELOAD = ("dashboard.state", "dashboard.widgets", "dashboard.messages", "dashboard.figures",
           "explainers.quality", "explainers.summary", "skops.io", "plotly.graph_objects")


def command(argv: list[str]) -> list[str]:
    """The ``streamlit`` command line: ``run``, the app, the defaults not overridden, then ``argv``."""
    from dashboard.server import START_FLAGS

    own = argv[: argv.index("--")] if "--" in argv else argv
    given = {a.split("=", 1)[0] for a in own if a.startswith("--")}
    return ["run", str(APP), *[f for f in START_FLAGS if f.split("=", 1)[0] not in given], *argv]


#: the preload thread's name (dashboard.state.preload keeps Streamlit's warnings of it out of the log)
PRELOAD_THREAD = "glassbox-preload"


def _flag(argv: list[str], name: str, default: str) -> str:
    """The value of Streamlit's option ``--name`` (``--name=v`` or ``--name v``), the last one given."""
    own = argv[: argv.index("--")] if "--" in argv else argv
    value = default
    for i, a in enumerate(own):
        if a.startswith(f"--{name}="):
            value = a.split("=", 1)[1]
        elif a == f"--{name}" and i + 1 < len(own):
            value = own[i + 1]
    return value


def _listen_address(argv: list[str]) -> tuple[str, int]:
    """Where the server will answer: its address (this machine's loopback for "every
    interface") and port (Streamlit's 8501 when none is named)."""
    host = _flag(argv, "server.address", "127.0.0.1")
    return ("127.0.0.1" if host in ("", "0.0.0.0", "::") else host), int(_flag(argv, "server.port", "8501"))


def preload_after_listening(address: tuple[str, int], modules=PRELOAD, wait: float = 120.0,
                            then=None) -> threading.Thread:
    """Once the server's ``(host, port)`` accepts a connection (not before: the server's own start
    would share the interpreter with them), call ``then()`` (the default model's data and
    predictions: what the first page waits for), then import ``modules``, in a background thread.
    A module that fails to import is left to the page, which says why. (The modules the first page
    draws with come last: its own script imports them meanwhile, while the data is read. Importing
    them first held the data back: a fresh million-row server showed its first table 7 s after
    the first request.)"""
    def run():
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(address, timeout=0.5):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            return
        if then is not None:
            then()
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the page imports it again and reports the failure
                pass

    thread = threading.Thread(target=run, name=PRELOAD_THREAD, daemon=True)
    thread.start()
    return thread


def _preload_default_model() -> None:
    from dashboard.state.preload import default_model

    default_model()


def main(argv: list[str] | None = None) -> None:
    from streamlit.web import cli

    args = command(list(sys.argv[1:] if argv is None else argv))
    try:
        preload_after_listening(_listen_address(args), then=_preload_default_model)
    except ValueError:  # a port Streamlit will refuse with its own message
        pass
    sys.argv = ["streamlit", *args]
    sys.exit(cli.main())


if __name__ == "__main__":
    main()
