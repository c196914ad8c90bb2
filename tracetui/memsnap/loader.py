"""Load a CUDA memory snapshot: the pickle read as plain data (:mod:`.unpickle`), its columns
(:mod:`.reader`), the trace (:mod:`.trace`)."""

from __future__ import annotations

import gc
import os

from ..io.files import trace_path
from ..io.formats import Progress, no_progress
from ..io.heap import release_freed_memory
from .reader import SnapshotReader
from .trace import SnapshotTrace, snapshot_trace
from .unpickle import load_plain


def load_memsnap(path: str | os.PathLike[str], progress: Progress | None = None) -> SnapshotTrace:
    """The :class:`~.trace.SnapshotTrace` of the snapshot at ``path``.  Raises
    :class:`~tracetui.errors.TraceError` (one line) for anything that is not a readable
    snapshot; nothing in the file runs (docs/security.md)."""
    p = trace_path(path)
    report = progress or no_progress
    report("reading the pickle (plain data only)", 0.0)
    reader = SnapshotReader()
    was_enabled = gc.isenabled()
    gc.disable()  # millions of dicts are made and freed: nothing for the collector
    try:
        plain = load_plain(p, stream=reader)
        report("columns", 0.5)
        snap = reader.read(p, plain)
        del plain, reader
    finally:
        if was_enabled:
            gc.enable()
    release_freed_memory()  # the history's batches leave the heap in holes: the arrays made next do not reuse them
    report("building", 0.9)
    trace = snapshot_trace(snap, report)
    release_freed_memory()
    return trace
