"""Command line: batch explanations of large files.

``python -m explainers batch``            SHAP attributions of every row, to Parquet parts
``python -m explainers batch-importance`` holdout permutation importance over a whole file

Both stream the data in chunks, run on joblib's loky backend (this machine) or on
a dask.distributed cluster, and resume where an interrupted run stopped when the
same command is run again. See :mod:`explainers.batch`.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from typing import Sequence, TextIO

from .batch import (
    BATCH_METHODS,
    BATCH_SCORING,
    DEFAULT_BLOCK_ROWS,
    DEFAULT_CHUNK_ROWS,
    TREE_MODES,
    BatchProgress,
    explain_file,
    importance_file,
)
from .errors import ExplainerError

__all__ = ["main", "build_parser", "cli_message"]

_EPILOG = (
    "An interrupted run (Ctrl-C, a killed job) keeps its finished parts: run the same command "
    "again to resume. One run at a time writes to an OUT folder; a second one fails at once. "
    "Exit status: 0 done, 2 bad input, options or a busy OUT, 130 interrupted."
)


# ------------------------------------------------------------------ messages
#: the batch functions' parameters that are flags of this command (the rest are not offered here)
_FLAGS = ("chunk_rows", "block_rows", "n_jobs", "background", "output", "class_index", "n_samples", "method",
          "mode", "missing", "scoring", "n_repeats", "target", "random_state", "connect_timeout", "backend",
          "scheduler", "model", "data", "out")
_FLAG = "|".join(_FLAGS)
#: what the library says in Python, and what the command line says instead
_CLI_WORDING = [
    # pickles: the library's own hint speaks of the dashboard's operator
    (re.compile(r"ask the operator to start the dashboard with --trust-pickles\s*\(or GLASSBOX_TRUST_PICKLES=1\)"),
     "add --trust-pickles to this command (or set GLASSBOX_TRUST_PICKLES=1)"),
    (re.compile(r"when the operator allows pickles"), "with --trust-pickles"),
    (re.compile(r"\btrusted=True\b"), "--trust-pickles"),
    (re.compile(r"\.joblib/\.pkl if trusted"), ".joblib/.pkl with --trust-pickles"),
    # "The 'chunk_rows' parameter of explain_file must be X. Got 0 instead."
    (re.compile(rf"The '({_FLAG})' parameter of [\w.]+(?: with [^ ]+)? must be (.*?)\. Got (.*?) instead\.", re.S),
     lambda m: f"--{m[1].replace('_', '-')} must be {m[2]}; got {m[3]}."),
    # the explainers' advice about other methods
    (re.compile(r"Use ExactShap or KernelShap, or explain\(method='auto'\)\."),
     "Use --method exact or --method kernel, or --method auto."),
    (re.compile(r"Use ExactShap or KernelShap(?:, which work for any model)?\."),
     "Use --method exact or --method kernel, which work for any model."),
    (re.compile(r"Use KernelShap \(sampled coalitions\) instead, or TreeShap for a tree model; or pass a smaller "
                r"background, or raise max_evals\."),
     "Use --method kernel (sampled coalitions) instead, or --method tree for a tree model; or a smaller --background."),
    (re.compile(r"\buse KernelShap\b"), "use --method kernel"),
    (re.compile(r"\bmax_evals=([\d,]+)"), r"the limit of \1"),
    (re.compile(r"\bpermutation_importance\b(?: on held-out rows)?"), "the batch-importance command on held-out rows"),
    (re.compile(r"\b(method|output|scoring|mode)='(\w+)'"), lambda m: f"--{m[1]} {m[2]}"),
    (re.compile(rf"\b({_FLAG})=(\S+?)(?=[,;.)\s]|$)"), lambda m: f"--{m[1].replace('_', '-')} {m[2]}"),
    (re.compile(rf"\bset ({_FLAG}) too"), lambda m: f"set --{m[1].replace('_', '-')} too"),
    (re.compile(r"\bnan_is_missing=False\b"), "--no-nan-missing"),
]


def cli_message(exc: BaseException) -> str:
    """An error of the batch functions in this command's words: flags, not Python calls."""
    text = str(exc)
    for pattern, repl in _CLI_WORDING:
        text = pattern.sub(repl, text)
    return text


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _n_jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number (or -1 for every core), got {text!r}") from None
    if value == 0 or value < -1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, or -1 for every core; got {value}")
    return value


def _add_common(p: argparse.ArgumentParser) -> None:
    io = p.add_argument_group("input and output")
    io.add_argument("--model", required=True, metavar="M",
                    help="saved model file (.skops; .joblib/.pkl only with --trust-pickles)")
    io.add_argument("--data", required=True, metavar="D",
                    help="CSV file, Parquet file, or directory of Parquet parts")
    io.add_argument("--out", required=True, metavar="OUT",
                    help="output directory (part files + _manifest.json); created if missing")
    io.add_argument("--overwrite", action="store_true",
                    help="replace results in OUT made from another model, data or options (deletes only "
                         "the files that run wrote; a folder holding other files is refused)")
    io.add_argument("--trust-pickles", action="store_true",
                    default=os.environ.get("GLASSBOX_TRUST_PICKLES") == "1",
                    help="allow pickle/joblib model files, which run code when loaded "
                         "(also GLASSBOX_TRUST_PICKLES=1)")
    run = p.add_argument_group("execution")
    run.add_argument("--chunk-rows", type=_positive_int, default=DEFAULT_CHUNK_ROWS, metavar="N",
                     help=f"rows per chunk: one task and one part file (default {DEFAULT_CHUNK_ROWS:,})")
    run.add_argument("--n-jobs", type=_n_jobs, default=-1, metavar="N",
                     help="parallel workers, -1 for every core (default -1)")
    run.add_argument("--backend", choices=("loky", "dask"), default="loky",
                     help="loky: processes on this machine; dask: a dask.distributed cluster "
                          "(--scheduler) or a LocalCluster of --n-jobs workers")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="address of a running Dask scheduler, e.g. tcp://host:8786 (implies --backend dask)")
    run.add_argument("--connect-timeout", type=float, default=10.0, metavar="S",
                     help="seconds to wait for the scheduler (default 10)")
    run.add_argument("--random-state", type=int, default=0, metavar="SEED", help="seed (default 0)")
    run.add_argument("--quiet", action="store_true", help="no progress on stderr")


def build_parser(prog: str = "python -m explainers") -> argparse.ArgumentParser:
    """The argument parser of ``python -m explainers``."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Batch explanations of large data files, streamed to Parquet.",
        epilog=_EPILOG,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    b = sub.add_parser(
        "batch", help="SHAP attributions of every row of a file",
        description="Compute SHAP attributions for every row of a CSV or Parquet file and write them "
                    "to Parquet parts in OUT: one row per input row, in input order, with the columns "
                    "row, shap_<feature> (shap_<feature>__<class> for several outputs), base_value "
                    "and prediction.",
        epilog=_EPILOG,
    )
    _add_common(b)
    s = b.add_argument_group("explanation")
    s.add_argument("--method", choices=BATCH_METHODS, default="auto",
                   help="SHAP method (default auto: tree for tree models, else linear / exact / kernel)")
    s.add_argument("--mode", choices=TREE_MODES, default="path_dependent",
                   help="TreeShap value function (default path_dependent, which needs no background)")
    s.add_argument("--background", type=_positive_int, default=100, metavar="N",
                   help="background rows, a seeded sample of the whole file (default 100)")
    s.add_argument("--missing", metavar="FEATURES", default=None,
                   help="comma-separated features to mark missing in every row (attribution 0)")
    s.add_argument("--nan-missing", dest="nan_is_missing", action="store_const", const=True, default="auto",
                   help="treat empty (NaN) cells as missing features (default: only when the model cannot "
                        "take them; a model with an imputer or native missing-value handling receives them)")
    s.add_argument("--no-nan-missing", dest="nan_is_missing", action="store_const", const=False,
                   help="pass empty (NaN) cells to the model as values, always")
    s.add_argument("--output", choices=("auto", "raw", "proba", "log_odds"), default="auto",
                   help="what to explain (default auto: value, or class probabilities)")
    s.add_argument("--class-index", type=int, default=None, metavar="K",
                   help="explain one output column (class position) only")
    s.add_argument("--n-samples", type=_positive_int, default=2048, metavar="N",
                   help="KernelShap coalitions per row (default 2048)")
    s.add_argument("--block-rows", type=_positive_int, default=DEFAULT_BLOCK_ROWS, metavar="N",
                   help=f"rows per explain call, aligned on row positions; --chunk-rows must be a "
                        f"multiple (default {DEFAULT_BLOCK_ROWS:,})")

    i = sub.add_parser(
        "batch-importance", help="holdout permutation importance over a whole file",
        description="Holdout permutation importance over every row of a file: each chunk's columns "
                    "are shuffled within the chunk and scored; the scores are combined over the file. "
                    "Writes OUT/importance.csv.",
        epilog=_EPILOG,
    )
    _add_common(i)
    g = i.add_argument_group("importance")
    g.add_argument("--target", required=True, metavar="COLUMN", help="the target column of the file")
    g.add_argument("--scoring", choices=BATCH_SCORING, default=None,
                   help="metric (default: neg_log_loss for a classifier with probabilities, else accuracy; r2 for a regressor)")
    g.add_argument("--n-repeats", type=_positive_int, default=5, metavar="N",
                   help="shuffles per feature (default 5)")
    return parser


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h}h{m:02d}m"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"


class _ProgressPrinter:
    """Progress on stderr: one updating line on a terminal, a line every few seconds otherwise."""

    def __init__(self, label: str, stream: TextIO, every_s: float = 5.0):
        self.label = label
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.every_s = every_s
        self.last = 0.0
        self.shown = False
        self.final_shown = False

    def __call__(self, p: BatchProgress) -> None:
        now = time.monotonic()
        final = p.total_rows is not None and p.done_rows >= p.total_rows
        if final and self.final_shown:
            return  # the run reports its end once more after the last chunk
        if not self.tty and not final and now - self.last < self.every_s:
            return
        self.final_shown = final
        self.last = now
        if p.total_rows:
            pct = min(100.0, 100.0 * p.done_rows / p.total_rows)
            where = f"{p.done_rows:,}/{p.total_rows:,} rows ({pct:.1f}%)"
        else:
            where = f"{p.done_rows:,} rows"
        parts = [where, f"{p.rows_per_s:,.0f} rows/s"]
        if p.eta_s is not None and not final:
            parts.append(f"about {_duration(p.eta_s)} left")
        if p.chunks_skipped:
            parts.append(f"{p.chunks_skipped} part(s) kept from an earlier run")
        line = f"{self.label}: " + " | ".join(parts)
        if self.tty:
            self.stream.write("\r" + line.ljust(100)[:120])
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.tty and self.shown:
            self.stream.write("\n")
            self.stream.flush()


def main(argv: Sequence[str] | None = None, prog: str = "python -m explainers") -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.scheduler and args.backend != "dask":
        args.backend = "dask"
    printer = None if args.quiet else _ProgressPrinter(args.command, sys.stderr)
    common = dict(
        random_state=args.random_state, chunk_rows=args.chunk_rows, n_jobs=args.n_jobs,
        backend=args.backend, scheduler=args.scheduler, connect_timeout=args.connect_timeout,
        overwrite=args.overwrite, trusted=args.trust_pickles, progress=printer,
    )
    try:
        if args.command == "batch":
            report = explain_file(
                args.model, args.data, args.out, method=args.method, mode=args.mode,
                background=args.background, missing=args.missing, nan_is_missing=args.nan_is_missing,
                output=args.output, class_index=args.class_index, n_samples=args.n_samples,
                block_rows=args.block_rows, **common,
            )
            if printer:
                printer.close()
            for note in report.notices:
                print(f"note: {note}", file=sys.stderr)
            print(
                f"Wrote SHAP values of {report.n_rows:,} rows to {report.out} "
                f"({report.n_chunks} part(s); {report.chunks_computed} computed, "
                f"{report.chunks_skipped} kept) with method {report.method!r} ({report.reason}) "
                f"in {_duration(report.seconds)}"
                + (f", {report.rows_per_s:,.0f} rows/s." if report.chunks_computed else ".")
            )
        else:
            result = importance_file(
                args.model, args.data, args.out, target=args.target, n_repeats=args.n_repeats,
                scoring=args.scoring, **common,
            )
            if printer:
                printer.close()
            table = result.to_frame().sort_values("importance", ascending=False)
            print(f"Permutation importance ({result.params['scoring']}, baseline "
                  f"{result.params['baseline_score']:.6g}, {result.params['n_rows']:,} rows); "
                  f"written to {os.path.join(args.out, 'importance.csv')}")
            print(table.to_string())
    except ExplainerError as exc:
        if printer:
            printer.close()
        print(f"error: {cli_message(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if printer:
            printer.close()
        print(f"interrupted: the finished parts are kept in {args.out}; run the same command "
              "again to resume.", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through subprocess tests
    sys.exit(main())
