"""Command line: ``tracetui TRACE [ET]`` opens the browser; subcommands run headless.

    tracetui TRACE [--et ET] [--driver FILE] open the terminal browser (TRACE: Kineto, ET or driver-call trace)
    tracetui summary TRACE [--et ET] [--json]
    tracetui export TRACE [--et ET] [--select SELECTOR] --format md|html|csv|json|chrome -o OUT [--python-frames]
    tracetui memory TRACE [--et ET] [--json]  allocations, the peak per device and the ops that own it
    tracetui tree TRACE [--et ET] [--depth N]
    tracetui info TRACE [--et ET]            counts, link statistics and warnings
    tracetui query TRACE_OR_JOB "SQL" [--csv | --json] [--file q.sql]   SQL over the trace (docs/query.md)
    tracetui slice TRACE --step N | --window A:B | --select SEL | --ranks R -o OUT   a smaller trace
    tracetui check TRACE_OR_JOB [--json] [--rules FILE] [--fail-on warning|error]
                                             what is wrong with this run (docs/findings.md)
    tracetui diff A B [--step-a N] [--text|--json] [--fail-above PCT]   compare two runs: the diff browser,
                                             or text / JSON / a CI check (docs/diff.md)
    tracetui follow DIR [--json] [--once] [--fail-above PCT] [--interval S] [--idle-exit S]
                                             follow a run while it trains: each new trace measured and
                                             compared with the one before; the follow screen (docs/follow.md)
    tracetui critical-path TRACE_OR_JOB [--step N | --annotation NAME [--instance K]] [--json] [--shrink NAME=PCT]
    tracetui mcp --root DIR [--root DIR ...]  answers for coding agents: an MCP server over stdio whose
                                             tools are these commands (needs tracetui[mcp]; docs/mcp.md)
    tracetui record [...]                    record a sample ET + Kineto pair (needs torch)
    tracetui DIR | GLOB | RANK_FILES...      a whole job: every rank (docs/jobs.md); also `summary`
    tracetui DIR --follow | FILE.jsonl --follow   the follow screen; a driver-call trace read again as it grows

Each command is a module of this package: ``NAME``, ``register(subparsers)`` (its subparser
and every argument) and ``run(args) -> int`` (which decides itself between one trace and a
whole job); :data:`COMMANDS` lists them once, in the order ``tracetui --help`` shows them.
Building the parser imports every command module, so a command module imports nothing heavy
until its ``run`` (``tests/core/test_startup_imports.py``).  A module may define ``paths(args)``,
the files its error line names (default: :func:`tracetui.cli.common.paths`).

Bad input prints one line ``tracetui: <file>: <problem>`` to stderr and exits 2.  A bug
(any other exception) prints one line naming what failed and the saved traceback file,
and exits 3 (:mod:`tracetui.crash`).  The one boundary is :func:`_guarded`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ..errors import TraceError, one_line
from . import check, critical_path, diff, export, follow, info, mcp, memory, query, record, summary, tree_text
from . import open as open_
from . import slice as slice_
from .common import paths

#: every command, in the order ``tracetui --help`` lists them
COMMANDS = (open_, summary, memory, export, tree_text, info, query, slice_, check, diff, follow, critical_path, mcp,
            record)
SUBCOMMANDS = tuple(c.NAME for c in COMMANDS)
EXIT_BAD_INPUT = 2


#: the packages whose versions a bug report needs (``tracetui --version``)
VERSION_PACKAGES = ("textual", "rich", "numpy", "pandas", "msgspec", "orjson", "isal", "duckdb")


def version_text() -> str:
    """``tracetui 0.1.0 (Python 3.11.7, Linux x86_64; textual 8.2.8, ...)``: what a bug report needs."""
    import importlib.metadata
    import platform

    from .. import __version__

    def version(name: str) -> str:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    deps = ", ".join(f"{name} {version(name)}" for name in VERSION_PACKAGES)
    return (f"tracetui {__version__} (Python {platform.python_version()}, {platform.system()} {platform.machine()}; "
            f"{deps})")


class _Version(argparse.Action):
    """``--version``: the versions, on stdout, exit 0 (computed only when asked)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the versions of tracetui, Python and the "
                                                              "libraries it uses (for a bug report), and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(version_text())
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tracetui",
        description="Keyboard-driven terminal browser for PyTorch profiler traces and Execution Traces.",
        epilog="Without a subcommand, `tracetui TRACE [ET]` opens the browser.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "record":  # record's own parser reads the rest of the line (record.build_parser)
        return _guarded(record.run, argparse.Namespace(command="record", argv=argv[1:]), "recording a sample", [])
    if argv and argv[0] not in SUBCOMMANDS and not argv[0].startswith("-"):
        argv = ["open"] + argv  # `tracetui TRACE`, `tracetui DIR`: the browser
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    command = COMMANDS[SUBCOMMANDS.index(args.command)]
    files = getattr(command, "paths", paths)(args)
    return _guarded(command.run, args, f"running 'tracetui {args.command}' on", files)


def _guarded(run: Callable[[argparse.Namespace], int], args: argparse.Namespace, doing: str,
             files: list[str]) -> int:
    """``run(args)`` inside the error boundary: bad input is one line and exit 2, a bug one line
    naming ``doing`` and ``files`` with the saved traceback (exit 3), never a traceback."""
    try:
        return run(args)
    except TraceError as exc:
        print(f"tracetui: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except MemoryError:
        named = f"{one_line(' + '.join(files))}: " if files else ""
        print(f"tracetui: {named}not enough memory for this command", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # the error boundary: a bug ends in one line, never a traceback
        from ..crash import EXIT_INTERNAL_ERROR, report

        print(report(exc, doing, files).line(), file=sys.stderr)
        return EXIT_INTERNAL_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
