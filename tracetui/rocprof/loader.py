"""load_rocprof(path): read a rocprofv3 JSON document (plain or gzip) or CSV kernel trace, decode
its records into columns, build the trace in the Kineto model.

Bad input is one line naming the file and the problem (:class:`~tracetui.errors.TraceError`):
a document that is not valid JSON (with its byte offset), one cut short, a record of the
wrong shape (with its place: ``rocprofiler-sdk-tool[0].buffer_records.kernel_dispatch[12]``).
What could not be read is counted in the trace's warnings.
"""

from __future__ import annotations

import os

from ..errors import LoadWarning, TraceError, TraceFormatError
from ..io.files import read_trace_bytes, trace_path
from ..io.formats import Progress, no_progress, read_head
from ..io.heap import release_freed_memory
from ..kineto.trace import KinetoTrace
from .sniff import is_csv


def load_rocprof(path: str | os.PathLike[str], progress: Progress | None = None) -> KinetoTrace:
    """The trace of a rocprofv3 JSON document, or of a CSV kernel trace with the files beside it."""
    report = progress or no_progress
    p = trace_path(path)
    if is_csv(read_head(p)):
        from .csv_files import load_csv

        return load_csv(p, report)
    report("reading", 0.0)
    fb = read_trace_bytes(p)
    warnings: list[LoadWarning] = []
    if fb.gzip_truncated:
        raise TraceFormatError(p, "the gzip stream ends early (the file was cut off): a rocprofv3 document is only "
                                  "read whole")
    from .builder import build
    from .records import decode_document

    report("decoding", 0.1)
    try:
        procs = decode_document(p, fb.data)
    except RecursionError:
        raise TraceFormatError(p, "JSON nested too deeply to read") from None
    except TraceError as exc:
        if fb.compressed and exc.position and exc.position.startswith("byte "):
            raise type(exc)(exc.path, exc.problem, position=f"{exc.position} (decompressed)") from None
        raise
    fb = None
    trace = build(p, procs, report, warnings)
    del procs
    release_freed_memory()
    return trace
