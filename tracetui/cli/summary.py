"""``tracetui summary``: print the whole-trace summary as rich tables or one JSON object (a whole
job: the cross-rank summary of :mod:`tracetui.cli.job`).

Kept apart from :mod:`tracetui.analysis.summary` so that answering from a stored summary
(:mod:`tracetui.store.summaries`) imports neither pandas nor the analysis code.
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any

from ..io import jsonout
from .common import add_inputs, add_job_options, paths

NAME = "summary"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="GPU time breakdown, kernel categories, top kernels/ops, streams, launches")
    add_inputs(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.add_argument("--rules", default=None, metavar="FILE",
                   help="kernel category rules (TOML) tried before the defaults; see docs/categories.md")
    p.add_argument("--top", type=int, default=15, help="rows in the kernel and op tables (default 15)")
    add_job_options(p)


def run(args: argparse.Namespace) -> int:
    from ..job import looks_like_job

    files = paths(args)
    if looks_like_job(files):
        from .job import job_summary_command

        return job_summary_command(files, use_cache=not args.no_cache, as_json=args.json, rules=args.rules,
                                   top=args.top, workers=args.workers, scheduler=args.scheduler,
                                   follow_links=args.follow_links)
    return summary_command(files, use_cache=not args.no_cache, as_json=args.json, rules=args.rules, top=args.top)


def _import_analysis() -> None:
    """Import what :func:`summary_command` needs after the load; a failure here is left to
    the import in the main thread, which raises it where it belongs."""
    try:
        from ..analysis import categories, summary  # noqa: F401
    except Exception:  # noqa: BLE001
        pass


def summary_command(paths: list[str], *, use_cache: bool, as_json: bool, rules: str | None, top: int) -> int:
    """Print the summary of ``paths`` (a Kineto trace, optionally with its ET).

    With ``use_cache``, an unchanged trace answers from the stored summary without being
    loaded; otherwise the traces are opened (through the trace cache when ``use_cache``),
    summarised, and the result stored.  Raises TraceError for bad input.
    """
    from ..store.summaries import read_summary, summary_key, write_summary

    top = max(top, 0)
    key = summary_key(paths, rules, top) if use_cache else None
    summary = read_summary(key) if key is not None else None
    if summary is None:
        from ..kineto import timestamps  # noqa: F401 -- the one module the load imports lazily
        from ..store.traces import load_cached

        # pandas and the analysis code (0.3-0.4 s of imports) load in a thread while the trace
        # loads: in parallel with a parse child (big traces), interleaved otherwise
        warm = threading.Thread(target=_import_analysis, name="tracetui-import-analysis", daemon=True)
        warm.start()
        pending: list = []
        try:
            linked = load_cached(paths, use_cache=use_cache, deferred_writes=pending)
        finally:
            warm.join()
        from ..analysis.categories import get_categorizer
        from ..analysis.summary import build_summary

        # the trace's cache entry is written (mostly file I/O) while the summary is computed
        writer = threading.Thread(target=lambda: [write() for write in pending], name="tracetui-cache-write")
        writer.start()
        try:
            built = build_summary(linked, get_categorizer(rules), top=top)
        finally:
            writer.join()
        # exactly what a stored summary gives back (JSON types: tuples become lists ...)
        summary = jsonout.loads(jsonout.dumps(built))
        if key is not None:
            write_summary(key, summary)
    if as_json:
        sys.stdout.write(jsonout.dumps(summary, indent=True).decode() + "\n")
        return 0
    from .summary_render import print_summary

    print_summary(summary)
    return 0
