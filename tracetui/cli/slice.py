"""``tracetui slice``: write a smaller, valid trace (one step, a window, a subtree) or job
folder (some ranks, each optionally cut the same way); see :mod:`tracetui.slicing`."""

from __future__ import annotations

import argparse

from ..errors import TraceError, one_line
from ..slicing import Cut, parse_ranks, parse_window, slice_job, slice_linked


def slice_command(args: argparse.Namespace) -> int:
    """Run ``tracetui slice`` with parsed ``args``; prints one line per file written."""
    from ..job import looks_like_job

    cut = Cut(step=args.step, window=parse_window(args.window) if args.window else None, select=args.select)
    inputs = [args.trace] + list(args.more)
    ranks = parse_ranks(args.ranks) if args.ranks else None
    if looks_like_job(inputs):
        if args.et:
            raise TraceError(args.et, "a job's ETs are found in its folder; --et is for one trace")
        report = slice_job(inputs, ranks, cut, args.output, use_cache=not args.no_cache)
    else:
        if ranks is not None:
            raise TraceError(args.trace, "--ranks needs a job (a folder, a glob or several rank files)")
        if cut == Cut():
            raise TraceError(args.trace, "say what to keep: --step N, --window START:END or --select SELECTOR")
        from ..store.traces import load_cached

        linked = load_cached(inputs + ([args.et] if args.et else []), use_cache=not args.no_cache)
        report = slice_linked(linked, cut, args.output)
    for path, what in report.files.items():
        print(one_line(f"{path}: {what}"))
    return 0
