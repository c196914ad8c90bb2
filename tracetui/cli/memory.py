"""``tracetui memory TRACE [--et ET] [--json] [--top N]``: where the memory went.

Per device: allocations and frees, the peak of allocated bytes (when, and the blocks live
then grouped by the op that allocated them), the peak of reserved bytes, the ops that
allocate most, overall and per profiler step (docs/memory.md).  ``--json`` prints
:func:`tracetui.analysis.memory_doc.memory_document`.

A CUDA memory snapshot (``torch.cuda.memory._dump_snapshot``), alone or beside a Kineto trace
of the same run (``tracetui memory TRACE SNAPSHOT``), answers instead, its owners being stack
frames (``--by frame|file|stack|annotation``, ``--at MS``), with its segments, fragmentation
and out-of-memory entries (:func:`tracetui.analysis.memsnap_doc.snapshot_document`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .. import units
from ..io import jsonout
from .common import add_inputs, paths

NAME = "memory"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="allocations per device, the peak and the ops that own it "
                                         "(profile_memory=True)")
    add_inputs(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables (docs/memory.md)")
    p.add_argument("--top", type=int, default=10, help="rows in the owner and op tables (default 10)")
    p.add_argument("--by", choices=("frame", "file", "stack", "annotation"), default="frame",
                   help="a CUDA memory snapshot: group live blocks by their innermost user frame (default), its "
                        "file, the whole stack, or the profiler annotation open then")
    p.add_argument("--at", type=float, default=None, metavar="MS",
                   help=f"a CUDA memory snapshot: also the blocks live at this time ({units.MS} after its first entry)")


def run(args: argparse.Namespace) -> int:
    return memory_command(paths(args), use_cache=not args.no_cache, as_json=args.json, top=args.top, by=args.by,
                          at_ms=args.at)


def memory_command(paths: list[str], *, use_cache: bool, as_json: bool, top: int, by: str = "frame",
                   at_ms: float | None = None) -> int:
    """Print the memory answers of ``paths`` (a Kineto trace, optionally with its ET; or a CUDA
    memory snapshot, alone or beside its Kineto trace).  Raises TraceError for bad input."""
    from ..errors import WrongTraceKindError
    from ..store.traces import load_cached

    linked = load_cached(paths, use_cache=use_cache)
    if linked.kineto is None:
        raise WrongTraceKindError(linked.et.path if linked.et else None,
                                  "`memory` needs a Kineto trace (this is an Execution Trace only)")
    if linked.snapshot_trace is not None:
        from ..analysis.memsnap_doc import snapshot_document

        doc = snapshot_document(linked, top=max(top, 0), by=by, at_us=None if at_ms is None else at_ms * 1e3)
    else:
        from ..analysis.memory_doc import memory_document

        doc = memory_document(linked, top=max(top, 0))
    if as_json:
        sys.stdout.write(jsonout.dumps(doc, indent=True).decode() + "\n")
        return 0
    from .summary_render import console_out

    if linked.snapshot_trace is not None:
        from .memsnap_text import print_snapshot

        print_snapshot(console_out(), doc)
        return 0
    from .memory_render import print_memory

    print_memory(console_out(), doc)
    return 0
