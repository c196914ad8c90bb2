"""load_kineto(path): read, decode (recovering truncated files), build the linked trace."""

from __future__ import annotations

import os
from collections.abc import Callable

import msgspec

from ..errors import LoadWarning, TraceFormatError
from ..fileio import FileBytes, read_trace_bytes
from .build import build_trace
from .decode import decode_events
from .trace import KinetoTrace

Progress = Callable[[str, float], None]


def load_kineto(path: str | os.PathLike[str], *, file_bytes: FileBytes | None = None,
                progress: Progress | None = None) -> KinetoTrace:
    """Load a Kineto (PyTorch profiler) trace: ``.json`` or gzip, object or bare-array form.

    A file cut short (gzip stream or JSON) still opens with every complete event before
    the cut; ``trace.warnings`` says how much was lost.
    """
    report = progress or (lambda msg, frac: None)
    p = os.fspath(path)
    report("reading", 0.0)
    fb = file_bytes or read_trace_bytes(p)
    warnings: list[LoadWarning] = []
    data = fb.data
    bytes_lost = 0
    if fb.gzip_truncated:
        warnings.append(LoadWarning("truncated", f"gzip stream ends early: only {len(data):,} decompressed "
                                    "bytes could be read", 0))
    report("decoding", 0.1)
    try:
        dec = decode_events(p, data)
    except TraceFormatError as exc:
        if not _looks_truncated(data):
            raise
        from ..jsonrecover import recover_truncated_json

        try:
            rec = recover_truncated_json(data, "traceEvents", p)
        except TraceFormatError:
            raise exc from None
        bytes_lost = rec.bytes_lost
        dec = decode_events(p, rec.data)
        warnings.append(LoadWarning(
            "truncated", f"file is cut short: kept {rec.elements_kept:,} complete events, "
            f"lost the last {rec.bytes_lost:,} bytes (a partial event)", rec.bytes_lost))
    report("building", 0.5)
    return build_trace(p, dec, progress=report, extra_warnings=warnings, bytes_lost=bytes_lost)


def _looks_truncated(data: bytes) -> bool:
    """Valid JSON prefix that ends early (as opposed to garbage)?"""
    stripped = data.lstrip()
    if not stripped or stripped[:1] not in (b"{", b"["):
        return False
    try:
        msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        return "truncated" in str(exc).lower() or "unexpected end" in str(exc).lower() or True
    return False
