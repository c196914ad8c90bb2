"""Load a CUDA memory snapshot: the pickle read as plain data (:mod:`.unpickle`), its columns
(:mod:`.reader`), the trace (:mod:`.trace`)."""

from __future__ import annotations

import gc
import os

from ..io.files import trace_path
from ..io.formats import Progress, no_progress
from .reader import read_snapshot
from .trace import SnapshotTrace, snapshot_trace
from .unpickle import load_plain


def load_memsnap(path: str | os.PathLike[str], progress: Progress | None = None) -> SnapshotTrace:
    """The :class:`~.trace.SnapshotTrace` of the snapshot at ``path``.  Raises
    :class:`~tracetui.errors.TraceError` (one line) for anything that is not a readable
    snapshot; nothing in the file runs (docs/security.md)."""
    p = trace_path(path)
    report = progress or no_progress
    report("reading the pickle (plain data only)", 0.0)
    plain = load_plain(p)
    report("columns", 0.5)
    was_enabled = gc.isenabled()
    gc.disable()  # millions of dicts are freed as their columns are made: nothing for the collector
    try:
        snap = read_snapshot(p, plain)
        del plain
    finally:
        if was_enabled:
            gc.enable()
    report("building", 0.9)
    return snapshot_trace(snap, report)
