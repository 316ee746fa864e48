"""``python -m dashboard [streamlit run options] [-- app options]``: serve the dashboard
with its server settings given explicitly (loopback address, 100 MB uploads, no
tracebacks on the page), whatever folder it is started from and whichever config
files Streamlit finds. An option given here wins over the default of the same name,
e.g. ``python -m dashboard --server.port 8502 -- --batch-root /data/shap``.
"""
from __future__ import annotations

import sys
from pathlib import Path

APP = Path(__file__).resolve().parent / "app.py"


def command(argv: list[str]) -> list[str]:
    """The ``streamlit`` command line: ``run``, the app, the defaults not overridden, then ``argv``."""
    from dashboard.server import START_FLAGS

    own = argv[: argv.index("--")] if "--" in argv else argv
    given = {a.split("=", 1)[0] for a in own if a.startswith("--")}
    return ["run", str(APP), *[f for f in START_FLAGS if f.split("=", 1)[0] not in given], *argv]


def main(argv: list[str] | None = None) -> None:
    from streamlit.web import cli

    args = command(list(sys.argv[1:] if argv is None else argv))
    sys.argv = ["streamlit", *args]
    sys.exit(cli.main())


if __name__ == "__main__":
    main()
