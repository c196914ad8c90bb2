"""Load a driver-call trace (JSON Lines, plain or gzip) into a
:class:`~tracetui.driver.trace.DriverTrace`."""

from __future__ import annotations

import os
from collections.abc import Callable

from ..errors import LoadWarning, TraceFormatError
from ..io.files import FileBytes, padding_warning, read_trace_bytes, trace_path
from .build import build_driver_trace
from .lines import decode_lines
from .trace import DriverTrace

Progress = Callable[[str, float], None]


def load_driver(path: str | os.PathLike[str], *, file_bytes: FileBytes | None = None,
                progress: Progress | None = None) -> DriverTrace:
    """Read, decode and build a driver-call trace.  A file with no JSON object line, or whose
    JSON lines are none of them an event (no layout's keys, no time), raises
    :class:`~tracetui.errors.TraceFormatError` ("not a driver-call trace")."""
    p = trace_path(path)
    report = progress or (lambda msg, frac: None)
    fb = file_bytes if file_bytes is not None else read_trace_bytes(p)
    report("decoding lines", 0.1)
    dec = decode_lines(fb.data)
    if not len(dec):
        what = f"{dec.stats.total:,} non-blank lines" if dec.stats.total else "no non-blank line"
        raise TraceFormatError(p, f"not a driver-call trace: no line is a JSON object ({what})")
    warnings: list[LoadWarning] = padding_warning(fb)
    if fb.gzip_truncated:
        warnings.append(LoadWarning("truncated", f"the {fb.compression} stream ends early after "
                                    f"{fb.gzip_bytes_read:,} of {fb.file_size:,} compressed bytes; every complete "
                                    "line before the cut is kept", 1))
    report("pairing calls", 0.5)
    trace = build_driver_trace(p, dec, warnings)
    if not trace.n_driver:  # JSON lines, but none of a layout with a time: nothing to show
        why = "; ".join(w.message for w in trace.warnings if w.kind == "unread_lines")
        raise TraceFormatError(p, f"not a driver-call trace: none of its {len(dec):,} JSON object lines is an event "
                                  f"({why or 'no line names a layout'})")
    report("ready", 1.0)
    return trace
