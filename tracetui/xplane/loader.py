"""load_xplane(path): a JAX/XLA profile (``*.xplane.pb``, an XSpace protobuf) as a
:class:`~tracetui.kineto.trace.KinetoTrace` (``source_format`` ``xplane``).

Bad input -- a length declared beyond its message or the file, a varint over 10 bytes, a wire
type XPlane does not use, a known field of the wrong wire type, a file cut short -- raises one
:class:`~tracetui.errors.TraceFormatError` line naming the file and the byte; what is read but
not shown is counted in the trace's warnings (docs/formats.md, "JAX/XLA XPlane")."""

from __future__ import annotations

import os

from ..errors import LoadWarning, TraceFormatError
from ..io.files import read_trace_bytes, trace_path
from ..io.formats import Progress, no_progress
from ..io.heap import release_freed_memory
from ..kineto.build import build_trace
from ..kineto.trace import KinetoTrace
from .build import decoded
from .reader import read_space
from .sniff import FORMAT_NAME
from .wire import WireError


def load_xplane(path: str | os.PathLike[str], *, progress: Progress | None = None) -> KinetoTrace:
    """Read, decode and build an XPlane file."""
    p = trace_path(path)
    report = progress or no_progress
    report("reading", 0.0)
    fb = read_trace_bytes(p)
    data = fb.data if isinstance(fb.data, bytes) else bytes(fb.data)
    if not data:
        raise TraceFormatError(p, "file is empty")
    where = " (decompressed)" if fb.compressed else ""
    warnings = []
    if fb.gzip_truncated:
        warnings.append(LoadWarning("truncated", f"the gzip stream ends early after {fb.file_size:,} compressed "
                                    "bytes: what followed is lost", 0))
    fb = None
    try:
        space = read_space(data, report)
    except WireError as exc:
        raise TraceFormatError(p, f"not a valid XPlane: {exc.problem}",
                               position=f"byte {exc.offset:,}{where}") from None
    del data
    if not space.planes:
        raise TraceFormatError(p, "not a JAX/XLA profile: the XSpace holds no plane")
    dec = decoded(space, p, report)
    del space  # the file's bytes and columns: the decoded columns hold what the model needs
    report("building", 0.55)
    trace = build_trace(p, dec, progress=report, extra_warnings=warnings)
    del dec
    trace.source_format = FORMAT_NAME
    release_freed_memory()
    report("ready", 1.0)
    return trace
