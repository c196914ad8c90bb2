"""``tracetui slice``: write a smaller, valid trace (one step, a window, a subtree) or job
folder (some ranks, each optionally cut the same way); see :mod:`tracetui.slicing`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

from .. import units
from ..errors import TraceError, one_line
from .common import add_follow_links

NAME = "slice"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="write a smaller, valid trace: one step, a time window, a subtree, "
                                         "some ranks")
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
                   help="the output file (a job: a folder); .gz compresses; - writes the slice's JSON to stdout")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache of parsed traces")
    add_follow_links(p)


def run(args: argparse.Namespace) -> int:
    """Run ``tracetui slice`` with parsed ``args`` (one trace or a job); prints one line per file written."""
    from ..job import looks_like_job
    from ..slicing import Cut, parse_ranks, parse_window, slice_job, slice_linked, slice_pieces

    cut = Cut(step=args.step, window=parse_window(args.window) if args.window else None, select=args.select)
    inputs = [args.trace] + list(args.more)
    ranks = parse_ranks(args.ranks) if args.ranks else None
    to_stdout = args.output == "-"
    if looks_like_job(inputs):
        if to_stdout:
            raise TraceError(args.trace, "a job's slice is a folder of files: give -o a folder, not - (stdout)")
        if args.et:
            raise TraceError(args.et, "a job's ETs are found in its folder; --et is for one trace")
        report = slice_job(inputs, ranks, cut, args.output, use_cache=not args.no_cache,
                           follow_links=args.follow_links)
    else:
        if ranks is not None:
            raise TraceError(args.trace, "--ranks needs a job (a folder, a glob or several rank files)")
        if cut == Cut():
            raise TraceError(args.trace, "say what to keep: --step N, --window START:END or --select SELECTOR")
        if to_stdout and args.et:
            raise TraceError(args.et, "the ET's slice is written beside OUT: give -o a file name, not - (stdout)")
        from ..store.traces import load_cached

        linked = load_cached(inputs + ([args.et] if args.et else []), use_cache=not args.no_cache)
        if to_stdout:
            return _to_stdout(slice_pieces(linked, cut))
        report = slice_linked(linked, cut, args.output)
    for w in report.warnings:
        print(f"tracetui: warning: {one_line(w)}", file=sys.stderr)
    for path, what in report.files.items():
        print(one_line(f"{path}: {what}"))
    return 0


def _to_stdout(pieces: Iterator[bytes]) -> int:
    """``-o -``: the slice's plain JSON on stdout, exactly (a pipe, a file); on a terminal with
    its control characters written as JSON escapes (the same document, docs/security.md)."""
    out = sys.stdout.buffer
    sys.stdout.flush()
    if sys.stdout.isatty():
        from ..io.jsonout import escape_controls

        out.write(escape_controls(b"".join(pieces)))
    else:
        for piece in pieces:
            out.write(piece)
    out.flush()
    return 0
