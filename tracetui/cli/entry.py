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
    tracetui critical-path TRACE_OR_JOB [--step N | --annotation NAME [--instance K]] [--json] [--shrink NAME=PCT]
    tracetui record [...]                    record a sample ET + Kineto pair (needs torch)
    tracetui DIR | GLOB | RANK_FILES...      a whole job: every rank (docs/jobs.md); also `summary`

Bad input prints one line ``tracetui: <file>: <problem>`` to stderr and exits 2.  A bug
(any other exception) prints one line naming what failed and the saved traceback file,
and exits 3 (:mod:`tracetui.crash`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import units
from ..errors import TraceError, one_line

SUBCOMMANDS = ("open", "summary", "memory", "export", "tree", "info", "check", "diff", "critical-path", "query",
               "slice", "record")
EXIT_BAD_INPUT = 2


def _add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", help="a Kineto trace (.json or .json.gz); an Execution Trace is detected by content")
    p.add_argument("second", nargs="?", default=None,
                   help="optional second file: the Execution Trace (or Kineto trace) of the same run")
    p.add_argument("--et", dest="et", default=None, metavar="ET_TRACE",
                   help="the PyTorch Execution Trace recorded in the same run")
    p.add_argument("--driver", dest="driver", default=None, metavar="DRIVER_TRACE",
                   help="a driver-call trace (JSON Lines of an eBPF or LD_PRELOAD tracer) of the same run: "
                        "its calls are linked to the Kineto trace's (docs/driver.md)")
    p.add_argument("more", nargs="*", default=[], help=argparse.SUPPRESS)
    p.add_argument("--no-cache", action="store_true",
                   help="do not read or write the on-disk cache of parsed traces")


def _add_job_options(p: argparse.ArgumentParser) -> None:
    """Options of a whole job (a folder, a glob, several rank files; see docs/jobs.md)."""
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="for a job: processes that load ranks in parallel (default: one per core)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="for a job: load and summarise ranks on this Dask scheduler (needs tracetui[cluster])")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tracetui",
        description="Keyboard-driven terminal browser for PyTorch profiler traces and Execution Traces.",
        epilog="Without a subcommand, `tracetui TRACE [ET]` opens the browser.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("open", help="open the terminal browser (the default)")
    _add_inputs(p)
    _add_job_options(p)

    p = sub.add_parser("summary", help="GPU time breakdown, kernel categories, top kernels/ops, streams, launches")
    _add_inputs(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.add_argument("--rules", default=None, metavar="FILE",
                   help="kernel category rules (TOML) tried before the defaults; see docs/categories.md")
    p.add_argument("--top", type=int, default=15, help="rows in the kernel and op tables (default 15)")
    _add_job_options(p)

    p = sub.add_parser("memory", help="allocations per device, the peak and the ops that own it (profile_memory=True)")
    _add_inputs(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables (docs/memory.md)")
    p.add_argument("--top", type=int, default=10, help="rows in the owner and op tables (default 10)")

    p = sub.add_parser("export", help="export the whole trace or one subtree as a report or a Chrome trace")
    _add_inputs(p)
    p.add_argument("--select", default=None, metavar="SELECTOR",
                   help="subtree root: ext:<External id>, et:<ET node id>, name:<op name>[#<n>] "
                        "(n-th in time order, from 1), or node:<node id>; default: the whole trace")
    p.add_argument("--format", "-f", required=True, choices=["md", "html", "csv", "json", "chrome"],
                   help="md (GitHub Markdown), html (self-contained), csv, json, chrome (Perfetto/tracetui)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output file ('-' for stdout)")
    p.add_argument("--rules", default=None, metavar="FILE", help="kernel category rules (TOML)")
    p.add_argument("--python-frames", action="store_true",
                   help="list python function frames among the report's host events (md, html, csv, json); "
                        "they are left out by default")

    p = sub.add_parser("tree", help="print the op tree as text")
    _add_inputs(p)
    p.add_argument("--depth", type=int, default=None, help="deepest level to print (lane roots are level 0)")
    p.add_argument("--select", default=None, metavar="SELECTOR", help="print only this subtree (see export)")
    p.add_argument("--hide-python", action="store_true", help="skip python_function levels")

    p = sub.add_parser("info", help="event counts, GPU link and ET link statistics, warnings")
    _add_inputs(p)
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("query", help="SQL over a trace or a whole job (tables: docs/query.md)")
    p.add_argument("trace", help="a Kineto trace (or a driver-call trace), or a job: a folder, a glob, rank files")
    p.add_argument("sql", nargs="?", default=None, help="the query (or --file)")
    p.add_argument("--file", default=None, metavar="Q.SQL", help="read the query from this file")
    p.add_argument("--et", dest="et", default=None, metavar="ET_TRACE", help="the Execution Trace of the same run")
    p.add_argument("--driver", dest="driver", default=None, metavar="DRIVER_TRACE",
                   help="a driver-call trace of the same run (adds the calls, records, ioctls, phases tables)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="print CSV (a header line, then every row)")
    fmt.add_argument("--json", action="store_true", help="print a JSON list of row objects")
    p.add_argument("--rules", default=None, metavar="FILE", help="kernel category rules (TOML)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache of parsed traces")
    _add_job_options(p)

    p = sub.add_parser("slice", help="write a smaller, valid trace: one step, a time window, a subtree, some ranks")
    p.add_argument("trace", help="a Kineto trace, or a job (a folder, a glob, rank files)")
    p.add_argument("more", nargs="*", default=[], help=argparse.SUPPRESS)
    what = p.add_mutually_exclusive_group()
    what.add_argument("--step", type=int, default=None, metavar="N",
                      help="the work of step N: ProfilerStep#N, else the N-th repeated top-level annotation")
    what.add_argument("--window", default=None, metavar="START:END",
                      help=f"what ran between START and END, {units.US} after the trace start (as the browser shows)")
    what.add_argument("--select", default=None, metavar="SELECTOR",
                      help="one subtree: ext:<External id>, et:<ET node id>, name:<op name>[#<n>], node:<id>")
    p.add_argument("--ranks", default=None, metavar="R",
                   help="for a job: the ranks to keep, e.g. 0,3-5 (the job's other ranks are left out)")
    p.add_argument("--et", dest="et", default=None, metavar="ET_TRACE",
                   help="the Execution Trace of the same run: written beside OUT, cut to the same ops")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="the output file (a job: a folder); .gz compresses")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache of parsed traces")

    p = sub.add_parser("check", help="findings: what is wrong with this run, with the time at stake and the "
                                     "evidence (docs/findings.md)")
    _add_inputs(p)
    p.add_argument("--json", action="store_true", help="print one JSON object (findings[], rules[], counts)")
    p.add_argument("--rules", default=None, metavar="FILE",
                   help="findings rules overrides (TOML: severities, thresholds, enabled); see docs/findings.md")
    p.add_argument("--categories", default=None, metavar="FILE",
                   help="kernel category rules (TOML) tried before the defaults; see docs/categories.md")
    p.add_argument("--fail-on", default=None, choices=["info", "warning", "error"],
                   help="exit 1 when a finding of this severity or above exists (a CI gate)")
    p.add_argument("--evidence", type=int, default=5, metavar="N", help="event ids listed per finding (default 5)")
    _add_job_options(p)

    from .diff import add_parser as add_diff_parser

    add_diff_parser(sub)
    p = sub.add_parser("critical-path", help="why a step took as long as it did: its critical path across "
                                             "threads, streams and ranks (docs/critical_path.md)")
    _add_inputs(p)
    _add_job_options(p)
    from .critical_path import add_arguments

    add_arguments(p)

    sub.add_parser("record", help="record a sample ET + Kineto pair with torch (pass --help for options)",
                   add_help=False)
    return parser


def _paths(args: argparse.Namespace) -> list[str]:
    if args.command == "diff":
        return [p for p in (args.a, args.b, args.et_a, args.et_b) if p]
    paths = [args.trace]
    if getattr(args, "second", None):
        paths.append(args.second)
    paths += getattr(args, "more", [])
    if args.et:
        paths.append(args.et)
    if getattr(args, "driver", None):
        paths.append(args.driver)
    return paths


def _open(args: argparse.Namespace):
    from ..store.traces import load_cached

    return load_cached(_paths(args), use_cache=not args.no_cache)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "record":
        from .record import main as record_main

        try:
            return record_main(argv[1:])
        except KeyboardInterrupt:
            return 130
        except Exception as exc:  # the error boundary, as below
            from ..crash import EXIT_INTERNAL_ERROR, report

            print(report(exc, "recording a sample").line(), file=sys.stderr)
            return EXIT_INTERNAL_ERROR
    if argv and argv[0] not in SUBCOMMANDS and not argv[0].startswith("-"):
        argv = ["open"] + argv
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        if args.command == "diff":
            from .diff import browse_request, diff_command

            request = browse_request(args)
            if request is not None:
                from ..ui.app import run_diff_app

                return run_diff_app(request)
            return diff_command(args)
        from ..job import looks_like_job

        # a folder, a glob, several ranks: a whole job, for the commands that take one (`info`,
        # `tree` and `export` take one rank's files and say what is wrong with the input)
        if args.command == "query":
            from .query import query_command, read_query

            sql = read_query(args.sql, args.file)
            fmt = "csv" if args.csv else "json" if args.json else "table"
            paths = _paths(args)
            return query_command(paths, sql, fmt=fmt, use_cache=not args.no_cache, job=looks_like_job(paths),
                                 rules=args.rules, **({"workers": args.workers, "scheduler": args.scheduler}
                                                      if looks_like_job(paths) else {}))
        if args.command == "slice":
            from .slice import slice_command

            return slice_command(args)
        if args.command in ("open", "summary", "check", "critical-path") and looks_like_job(_paths(args)):
            if args.command == "check":
                from .check import check_command

                return check_command(_paths(args), args, job=True)
            if args.command == "open":
                from ..ui.app import run_job_app

                return run_job_app(_paths(args), use_cache=not args.no_cache, workers=args.workers,
                                   scheduler=args.scheduler)
            if args.command == "critical-path":
                from .critical_path import job_critical_path_command

                return job_critical_path_command(_paths(args), args)
            from .job import job_command

            return job_command(args.command, _paths(args), args)
        if args.command == "open":
            from ..ui.app import run_app

            return run_app(_paths(args), use_cache=not args.no_cache)
        if args.command == "summary":
            from .summary import summary_command

            return summary_command(_paths(args), use_cache=not args.no_cache, as_json=args.json, rules=args.rules,
                                   top=args.top)
        if args.command == "check":
            from .check import check_command

            return check_command(_paths(args), args, job=False)
        if args.command == "memory":
            from .memory import memory_command

            return memory_command(_paths(args), use_cache=not args.no_cache, as_json=args.json, top=args.top)
        if args.command == "critical-path":
            from .critical_path import critical_path_command

            return critical_path_command(_paths(args), args)
        linked = _open(args)
        if args.command == "info":
            from .info import print_info

            return print_info(linked, as_json=args.json)
        if args.command == "tree":
            from .tree_text import print_tree_command

            return print_tree_command(linked, depth=args.depth, selector=args.select, hide_python=args.hide_python)
        if args.command == "export":
            from ..export import export_command

            return export_command(linked, selector=args.select, fmt=args.format, output=args.output,
                                  rules=args.rules, python_frames=args.python_frames)
    except TraceError as exc:
        print(f"tracetui: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except MemoryError:
        print(f"tracetui: {one_line(' + '.join(_paths(args)))}: not enough memory for this command", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # the error boundary: a bug ends in one line, never a traceback
        from ..crash import EXIT_INTERNAL_ERROR, report

        print(report(exc, f"running 'tracetui {args.command}' on", _paths(args)).line(), file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
