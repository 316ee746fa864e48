"""``python -m dashboard [streamlit run options] [-- app options]``: serve the dashboard
with its server settings given explicitly (loopback address, 100 MB uploads, no
tracebacks on the page), whatever folder it is started from and whichever config
files Streamlit finds. An option given here wins over the default of the same name,
e.g. ``python -m dashboard --server.port 8502 -- --batch-root /data/shap``.
"""
from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path

APP = Path(__file__).resolve().parent / "app.py"

#: what the first page's script imports (the app, the Model page, its figure): imported by the
#: preload thread once the default model's data is read, where the first page has not yet (the
#: other pages' modules come with the kernels' warm-up: dashboard.state.warmup)
PRELOAD = ("dashboard.state", "dashboard.widgets", "dashboard.messages", "dashboard.figures.quality",
           "explainers.quality", "explainers.summary", "plotly.graph_objects")


def command(argv: list[str]) -> list[str]:
    """The ``streamlit`` command line: ``run``, the app, the defaults not overridden, then ``argv``."""
    from dashboard.server import START_FLAGS

    own = argv[: argv.index("--")] if "--" in argv else argv
    given = {a.split("=", 1)[0] for a in own if a.startswith("--")}
    return ["run", str(APP), *[f for f in START_FLAGS if f.split("=", 1)[0] not in given], *argv]


#: the preload thread's name (dashboard.state.preload keeps Streamlit's warnings of it out of the log)
PRELOAD_THREAD = "glassbox-preload"


def preload_in_background(then=None, modules=PRELOAD) -> threading.Thread:
    """Call ``then()`` (the default model's data and predictions: what the first page waits for),
    then import ``modules``, in a background thread started at once, beside the server's own start.

    Reading a large file is mostly pyarrow's and hashlib's work, outside the interpreter's lock: the
    server listened as soon (1.3-1.7 s) as when the thread waited for it, and a visitor who comes at
    once finds the data read a second sooner. A module that fails to import is left to the page,
    which says why. (The modules come after the data: importing them first held it back; the first
    page's own script imports what it needs meanwhile.)"""
    def run():
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
    preload_in_background(then=_preload_default_model)
    sys.argv = ["streamlit", *args]
    sys.exit(cli.main())


if __name__ == "__main__":
    main()
