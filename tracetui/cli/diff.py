"""``tracetui diff A B``: compare two runs (docs/diff.md).  On a terminal, without ``--text``,
``--json`` or ``--fail-above``, two runs open in the diff browser (:mod:`tracetui.ui.diff`);
otherwise the comparison is printed as text or JSON, or checked (:mod:`tracetui.cli.diff_text`).

One of the two command modules that import the browser (the other is :mod:`tracetui.cli.open`),
and only when the command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

NAME = "diff"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="compare two runs: steps paired, op trees aligned, A / B / Δ (docs/diff.md)")
    p.add_argument("a", metavar="A", help="a Kineto trace, a driver-call trace, a job folder or a CUDA memory snapshot "
                                          "(two snapshots: live bytes at the peak by owner)")
    p.add_argument("b", metavar="B", nargs="?", default=None, help="the run to compare with A (omit with --ranks)")
    p.add_argument("--et-a", default=None, metavar="ET", help="the Execution Trace of A's run")
    p.add_argument("--et-b", default=None, metavar="ET", help="the Execution Trace of B's run")
    p.add_argument("--step-a", type=int, default=None, metavar="N",
                   help="compare A's step N (ProfilerStep#N) instead of every step's mean")
    p.add_argument("--step-b", type=int, default=None, metavar="M", help="B's step (default: --step-a's number)")
    p.add_argument("--ranks", default=None, metavar="R[,S]",
                   help="a job: compare rank R with rank S (one job), or rank R (S) of A with rank S of B")
    p.add_argument("--text", action="store_true", help="print the comparison as text")
    p.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    p.add_argument("--fail-above", default=None, metavar="PCT",
                   help="exit 1 when the step time or GPU time per step regressed by more than PCT percent of A's")
    p.add_argument("--top", type=int, default=15, help="rows in the top-N tables (default 15)")
    p.add_argument("--by", choices=("frame", "file", "stack", "annotation"), default="frame",
                   help="two CUDA memory snapshots: group the live blocks by innermost user frame (default), file, "
                        "stack or annotation")
    p.add_argument("--rules", default=None, metavar="FILE", help="kernel category rules (TOML)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="two jobs: processes comparing ranks")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="two jobs: compare ranks on this Dask scheduler")


def paths(args: argparse.Namespace) -> list[str]:
    """The files given: A, B and their Execution Traces (for the error boundary's line)."""
    return [p for p in (args.a, args.b, args.et_a, args.et_b) if p]


def _snapshots(args: argparse.Namespace) -> bool:
    """A and B are both CUDA memory snapshots (compared by :mod:`tracetui.cli.memsnap_text`)."""
    from .. import formats
    from ..errors import TraceError
    from ..io.formats import FileRole

    if args.b is None:
        return False
    try:
        return all(formats.detect(p).role == FileRole.MEMORY for p in (args.a, args.b))
    except TraceError:
        return False


def run(args: argparse.Namespace) -> int:
    from .diff_text import browse_request, diff_command

    if _snapshots(args):
        from .memsnap_text import snapshot_diff_command

        return snapshot_diff_command(args)

    request = browse_request(args)
    if request is not None:
        from ..ui.app import run_diff_app

        return run_diff_app(request)
    return diff_command(args)
