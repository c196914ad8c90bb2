"""load_nsys(path): an Nsight Systems SQLite export as a
:class:`~tracetui.kineto.trace.KinetoTrace` (``source_format`` ``nsys``).

Bad input -- a report not yet exported, a file that is no SQLite database or no export, an
export schema of another major version, a table without the columns it must have, a corrupt
page -- raises one :class:`~tracetui.errors.TraceFormatError` line naming the file; an
event table that is absent is simply empty (docs/formats.md)."""

from __future__ import annotations

import os

from ..io.files import trace_path
from ..io.formats import Progress
from ..io.heap import release_freed_memory
from ..kineto.trace import KinetoTrace
from .builder import build
from .reader import open_export, reading


def load_nsys(path: str | os.PathLike[str], *, progress: Progress | None = None) -> KinetoTrace:
    """Read the export at ``path`` (read-only, immutable: the file is never written)."""
    p = trace_path(path)
    report = progress or (lambda msg, frac: None)
    report("opening the SQLite export", 0.0)
    ex = open_export(p)
    try:
        with reading(p):
            trace = build(ex, report)
    finally:
        ex.close()
    release_freed_memory()
    report("ready", 1.0)
    return trace
