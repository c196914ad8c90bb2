"""``tracetui memory TRACE [--et ET] [--json] [--top N]``: where the memory went.

Per device: allocations and frees, the peak of allocated bytes (when, and the blocks live
then grouped by the op that allocated them), the peak of reserved bytes, the ops that
allocate most, overall and per profiler step (docs/memory.md).  ``--json`` prints
:func:`tracetui.analysis.memory_doc.memory_document`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..io import jsonout
from .common import add_inputs, paths

NAME = "memory"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="allocations per device, the peak and the ops that own it "
                                         "(profile_memory=True)")
    add_inputs(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables (docs/memory.md)")
    p.add_argument("--top", type=int, default=10, help="rows in the owner and op tables (default 10)")


def run(args: argparse.Namespace) -> int:
    return memory_command(paths(args), use_cache=not args.no_cache, as_json=args.json, top=args.top)


def memory_command(paths: list[str], *, use_cache: bool, as_json: bool, top: int) -> int:
    """Print the memory answers of ``paths`` (a Kineto trace, optionally with its ET).
    Raises TraceError for bad input."""
    from ..analysis.memory_doc import memory_document
    from ..errors import WrongTraceKindError
    from ..store.traces import load_cached

    linked = load_cached(paths, use_cache=use_cache)
    if linked.kineto is None:
        raise WrongTraceKindError(linked.et.path if linked.et else None,
                                  "`memory` needs a Kineto trace (this is an Execution Trace only)")
    doc = memory_document(linked, top=max(top, 0))
    if as_json:
        sys.stdout.write(jsonout.dumps(doc, indent=True).decode() + "\n")
        return 0
    from .memory_render import print_memory
    from .summary_render import console_out

    print_memory(console_out(), doc)
    return 0
