"""``glassbox``: the dashboard and the batch command from a terminal.

::

    glassbox serve                                        # the demo models
    glassbox serve --model model.skops --data data.parquet --target y
    glassbox serve --model a.skops --data a.csv --model b.skops --data b.csv --target y --port 8502
    glassbox batch --model model.skops --data big.parquet --out shap_out
    glassbox batch-importance --model model.skops --data holdout.parquet --target y --out imp_out

``serve`` checks every file before the server starts (it exists, ``load_model`` reads
it, ``load_data`` reads the data against it, the target is a column), so a bad path is
one line on stderr and exit status 2, never a traceback. The server then reads the same
files from disk by their paths (no upload, no upload limit) through the same loaders.
``batch`` and ``batch-importance`` are ``python -m explainers`` under another name.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from pathlib import Path
from typing import Sequence

from dashboard import __version__
from dashboard.served import MANIFEST_ENV, SERVE_ENV

PROG = "glassbox"
DEFAULT_PORT = 8501
TRUST_ENV = "GLASSBOX_TRUST_PICKLES"
BATCH_COMMANDS = {
    "batch": "SHAP attributions of every row of a large file, to Parquet parts (resumable)",
    "batch-importance": "holdout permutation importance over a whole file",
}


class UsageError(Exception):
    """A bad option or input file: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is one line (no usage block) and exit status 2."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")


def _one_line(text) -> str:
    return " ".join(str(text).split())


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number (1-65535), got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number (1-65535), got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Glassbox: a browser dashboard that explains trained machine-learning models "
                    "(partial dependence, ICE, ALE, SHAP, variable importance), and batch explanations "
                    "of large files.",
        epilog=f"Run '{PROG} COMMAND --help' for a command's options. From Python: "
               "'from dashboard import show; show(model, X, y)'.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    s = sub.add_parser(
        "serve", help="start the dashboard, optionally on your own models and data",
        description="Start the dashboard in this terminal (Ctrl-C stops it). With --model/--data it opens on "
                    "your model: the files are checked first, then read by the server from their paths with "
                    "the same safe loaders as uploads (.skops, XGBoost .json/.ubj, LightGBM .txt, CatBoost "
                    ".json/.cbm; pickles only with --trust-pickles). Repeat "
                    "--model/--data (in order) for several models: they all appear in the model picker, the "
                    "first one active. Without them it shows the demo models.",
        epilog="Example: glassbox serve --model model.skops --data data.parquet --target price",
    )
    s.add_argument("--model", action="append", default=[], metavar="MODEL",
                   help="saved model file (.skops, XGBoost .json/.ubj, LightGBM .txt, CatBoost .json/.cbm; "
                        ".joblib/.pkl only with --trust-pickles); repeatable")
    s.add_argument("--data", action="append", default=[], metavar="DATA",
                   help="CSV or Parquet file with the model's columns, one per --model, in the same order")
    s.add_argument("--target", action="append", default=[], metavar="COL",
                   help="target column in the data (for scores and importance): once for every model, or "
                        "once per model in order (--target= for none)")
    s.add_argument("--target-transform", action="append", default=[], metavar="F", choices=["none", "log", "log1p", "sqrt"],
                   help="the model predicts F(target) (fitted on log(price), say): log, log1p, sqrt or none; once "
                        "for every model or once per model. The pages then offer the target's original units too")
    s.add_argument("--name", action="append", default=[], metavar="NAME",
                   help="label in the model picker, one per --model (default: the model file's name)")
    s.add_argument("--port", type=_port, default=None, metavar="N",
                   help=f"port to serve on (default {DEFAULT_PORT}, or a free one when that is taken)")
    s.add_argument("--host", default="127.0.0.1", metavar="ADDRESS",
                   help="address to listen on (default 127.0.0.1: this machine only). Another address "
                        "serves everyone who can reach it, with no login: put a proxy with "
                        "authentication in front")
    s.add_argument("--trust-pickles", action="store_true",
                   help="allow pickle/joblib model files, which run code when loaded, here and in "
                        f"uploads (also {TRUST_ENV}=1)")
    s.add_argument("--data-dir", metavar="DIR",
                   help="folder for shared uploads (the workspace store behind ?ws= links) and cached results "
                        "(default: GLASSBOX_DATA_DIR, else ~/.local/share/glassbox); also "
                        "GLASSBOX_WORKSPACE_MAX_BYTES (2GB) and GLASSBOX_WORKSPACE_DAYS (30, after the last visit)")
    s.add_argument("--no-sharing", action="store_true",
                   help="keep uploads in their browser session only: no link opens them for someone else "
                        "(also GLASSBOX_SHARING=off)")
    s.add_argument("--batch-root", action="append", default=[], metavar="DIR",
                   help="let the SHAP page open precomputed batch runs inside DIR (repeatable)")
    # used by show(): the models come from a manifest file it rewrites; the server ends with its process
    s.add_argument("--manifest", help=argparse.SUPPRESS)
    s.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    parser.serve_parser = s  # unknown options are reported by the command they were given to
    for name, text in BATCH_COMMANDS.items():
        sub.add_parser(name, help=text, add_help=False,
                       description=f"{text}. Same as 'python -m explainers {name}'.")
    return parser


# ------------------------------------------------------------------ serve
def _trusted(args) -> bool:
    env = os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return bool(args.trust_pickles) or env


def _pairs(args) -> list[dict]:
    """The --model/--data/--target/--name options as one entry per model (paths made absolute)."""
    models, data, targets, names = args.model, args.data, args.target, args.name
    if len(models) != len(data):
        raise UsageError(f"give one --data per --model, in the same order (got {len(models)} --model "
                         f"and {len(data)} --data)")
    if not models and (targets or names):
        raise UsageError("--target and --name need --model and --data")
    if len(targets) not in (0, 1, len(models)):
        raise UsageError(f"give --target once for every model or once per model (got {len(targets)} for "
                         f"{len(models)} models)")
    if len(names) not in (0, len(models)):
        raise UsageError(f"give --name once per --model (got {len(names)} for {len(models)} models)")
    transforms = args.target_transform
    if len(transforms) not in (0, 1, len(models)):
        raise UsageError(f"give --target-transform once for every model or once per model (got {len(transforms)} "
                         f"for {len(models)} models)")
    if len(transforms) == 1:
        transforms = transforms * len(models)
    if len(targets) == 1:
        targets = targets * len(models)
    entries = []
    for i, (m, d) in enumerate(zip(models, data)):
        entries.append({
            "model": str(Path(m).expanduser().resolve()), "data": str(Path(d).expanduser().resolve()),
            "target": (targets[i] or None) if targets else None,
            "name": names[i] if names else Path(m).stem,
        })
        if transforms and transforms[i] != "none":
            entries[-1]["target_transform"] = transforms[i]
    return entries


#: data files larger than this are checked by their columns only before the server starts (the
#: model is loaded, the target looked for); the server reads them once, when first shown
FULL_CHECK_BYTES = 32_000_000


def check_entry(entry: dict, trusted: bool, label: str = "") -> None:
    """Load the model and its data as the server will; raise UsageError with one line when that fails."""
    from explainers import ExplainerError, load_data, load_model
    from explainers.io import peek_columns

    where = f" ({label})" if label else ""
    for what in ("model", "data"):
        p = Path(entry[what])
        if not p.exists():
            raise UsageError(f"the {what} file {p} does not exist{where}")
        if not p.is_file():
            raise UsageError(f"the {what} path {p} is not a file{where}")
        if not os.access(p, os.R_OK):
            raise UsageError(f"the {what} file {p} cannot be read (permissions){where}")
    try:
        model = load_model(entry["model"], trusted=trusted)
    except ExplainerError as exc:
        raise UsageError(f"cannot load the model {entry['model']}{where}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any failure is one line, never a traceback
        raise UsageError(f"cannot load the model {entry['model']}{where}: {type(exc).__name__}: {exc}") from None
    try:
        columns = peek_columns(entry["data"])
        target = entry.get("target")
        if target is not None and target not in columns:
            shown = ", ".join(columns[:20]) + (" …" if len(columns) > 20 else "")
            raise UsageError(f"the target column {target!r} is not in {entry['data']}{where}; its columns "
                             f"are: {shown}")
        if Path(entry["data"]).stat().st_size > FULL_CHECK_BYTES:
            # a large file is read once, by the server, behind a spinner: it listens at once
            print(f"note: {entry['data']} ({Path(entry['data']).stat().st_size / 1e6:,.0f} MB) is read and checked "
                  "against the model when the dashboard first shows it.", file=sys.stderr)
            return
        load_data(entry["data"], model=model, target=target)
    except UsageError:
        raise
    except ExplainerError as exc:
        raise UsageError(f"cannot use the data {entry['data']}{where}: {exc}") from None
    except Exception as exc:  # noqa: BLE001
        raise UsageError(f"cannot use the data {entry['data']}{where}: {type(exc).__name__}: {exc}") from None


def port_problem(host: str, port: int) -> str | None:
    """Why the server could not listen on host:port (in use, unknown address), or None."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"cannot listen on {host!r}: {exc.strerror or exc}"
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as s:
        if os.name != "nt":  # as Tornado binds: a port in TIME_WAIT is free
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as exc:
            return f"port {port} on {host} is not free ({exc.strerror or exc}); pick another with --port"
    return None


def _free_port(host: str) -> int:
    if port_problem(host, DEFAULT_PORT) is None:
        return DEFAULT_PORT
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _watch_parent(pid: int, folder: str | None) -> None:
    """End this server (and remove show()'s folder) when the Python process that started it is gone."""
    import shutil
    import threading
    import time

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != pid:
                if folder:
                    shutil.rmtree(folder, ignore_errors=True)
                os._exit(0)

    threading.Thread(target=watch, name="glassbox-parent-watch", daemon=True).start()


def serve(args) -> int:
    entries = _pairs(args)
    trusted = _trusted(args)
    for i, entry in enumerate(entries, 1):
        check_entry(entry, trusted, f"model {i} of {len(entries)}" if len(entries) > 1 else "")
    for root in args.batch_root:
        if not Path(root).expanduser().is_dir():
            raise UsageError(f"the batch folder {root} does not exist or is not a folder")
    if args.port is not None:
        problem = port_problem(args.host, args.port)
        if problem:
            raise UsageError(problem)
        port = args.port
    else:
        problem = port_problem(args.host, 0)
        if problem:
            raise UsageError(problem)
        port = _free_port(args.host)

    if args.data_dir:
        data_dir = Path(args.data_dir).expanduser().resolve()
        if data_dir.exists() and not data_dir.is_dir():
            raise UsageError(f"the data folder {data_dir} is not a folder")
        os.environ["GLASSBOX_DATA_DIR"] = str(data_dir)
    if args.no_sharing:
        os.environ["GLASSBOX_SHARING"] = "off"
    os.environ.pop(SERVE_ENV, None)
    os.environ.pop(MANIFEST_ENV, None)
    if entries:
        os.environ[SERVE_ENV] = json.dumps(entries)
    if args.manifest:
        os.environ[MANIFEST_ENV] = str(Path(args.manifest).resolve())
    if args.parent_pid:
        _watch_parent(args.parent_pid, str(Path(args.manifest).resolve().parent) if args.manifest else None)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"note: serving on {args.host}: everyone who can reach this address can use the dashboard "
              "(there is no login).", file=sys.stderr)
    app_args = (["--trust-pickles"] if args.trust_pickles else [])
    for root in args.batch_root:
        app_args += ["--batch-root", str(Path(root).expanduser().resolve())]
    flags = [f"--server.address={args.host}", f"--server.port={port}", "--server.fileWatcherType=none"]
    from dashboard.__main__ import main as run_dashboard

    run_dashboard(flags + (["--", *app_args] if app_args else []))  # exits with Streamlit's status
    return 0


# ------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    """Run ``glassbox``; returns the exit status (0 done, 2 bad options or files)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in BATCH_COMMANDS:
        from explainers.__main__ import main as batch_main

        return batch_main(argv, prog=PROG)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        (parser.serve_parser if args.command == "serve" else parser).error(
            f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return serve(args)
    except UsageError as exc:
        print(f"{PROG} serve: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
