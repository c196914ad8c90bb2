"""The linked model the UI, the CLI and the Python API share.

``load_trace(path)`` loads one file, detecting by *content* whether it is a Kineto trace
("GPU trace"), an Execution Trace ("CPU trace") or a driver-call trace (JSON Lines of an
eBPF or LD_PRELOAD tracer).  ``load_pair(a, b)`` loads both halves of a run, in either
order, and links them (see ``tracetui.link``); ``open_traces`` also takes a driver-call
trace beside a Kineto trace and links the two.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

import msgspec

from .driver.sniff import looks_like_driver_lines
from .driver.trace import DriverTrace
from .errors import LoadWarning, TraceFormatError, WrongTraceKindError
from .io.files import FileBytes, read_trace_bytes, sniff_head, trace_path
from .io.jsonrecover import content_end, nesting_error, only_padding_after
from .kineto import KinetoTrace, load_kineto
from .link import ETLink, link_et_kineto

if TYPE_CHECKING:
    from .et import ETTrace

Progress = Callable[[str, float], None]

_SNIFF = 1 << 16
#: top-level keys Kineto writes before its traceEvents array (an ET has schema/pid/time/start_ts)
_KINETO_KEYS = (b'"schemaVersion"', b'"deviceProperties"', b'"distributedInfo"', b'"record_shapes"',
                b'"cupti_version"', b'"roctracer_version"', b'"displayTimeUnit"', b'"baseTimeNanoseconds"')
_ET_KEYS = (b'"schema"', b'"start_ts"', b'"finish_ts"')


def detect_kind(fb: FileBytes) -> str:
    """"kineto", "et", "driver" or "unknown", from the content (never the file name)."""
    head = fb.data[:_SNIFF].lstrip()
    kind = sniff_head(head)
    if kind is not None:
        return kind
    if looks_like_driver_lines(fb.data[:_SNIFF]):
        return "driver"
    if head[:1] != b"{":
        return "unknown"
    try:
        top = msgspec.json.decode(fb.data, type=dict[str, msgspec.Raw])
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
        # truncated or odd: fall back to whichever key appears first
        i, j = fb.data.find(b'"traceEvents"'), fb.data.find(b'"nodes"')
        if i >= 0 and (j < 0 or i < j):
            return "kineto"
        if j >= 0:
            return "et"
        # neither array appears: a file cut inside its header; its visible keys tell the kind,
        # and the loader then says where the file ends
        if any(k in head for k in _KINETO_KEYS):
            return "kineto"
        if any(k in head for k in _ET_KEYS):
            return "et"
        return "kineto" if _cut_short(fb.data) else "unknown"
    if "traceEvents" in top:
        return "kineto"
    if "nodes" in top:
        return "et"
    return "unknown"


def _cut_short(data: bytes) -> bool:
    """Is ``data`` a JSON object cut short (msgspec reports truncation, or an invalid
    character/number with nothing but whitespace/NUL after it)?"""
    try:
        msgspec.json.decode(data, type=msgspec.Raw)
    except msgspec.DecodeError as exc:
        msg = str(exc)
        if "truncated" in msg:
            return True
        at = msg.rsplit("(byte ", 1)
        return len(at) == 2 and at[1].rstrip(")").isdigit() and only_padding_after(data, int(at[1].rstrip(")")))
    return False


def _load_any(path: str, progress: Progress | None = None) -> Union[KinetoTrace, "ETTrace"]:
    fb = read_trace_bytes(path)
    try:
        kind = detect_kind(fb)
    except RecursionError:  # no decoder reads it: say so in one line (exit 2), not a crash
        raise nesting_error(path, fb.data) from None
    if kind == "kineto":
        return load_kineto(path, file_bytes=fb, progress=progress, release_bytes=True)
    if kind == "et":
        from .et import load_et

        return load_et(path, file_bytes=fb)
    if kind == "driver" or path.endswith((".jsonl", ".jsonl.gz")):
        from .driver.loader import load_driver  # the reader loads when a driver-call trace is opened

        return load_driver(path, file_bytes=fb, progress=progress)
    if content_end(fb.data) == 0:
        raise TraceFormatError(path, "file is empty")
    raise TraceFormatError(path, "not a PyTorch profiler trace, Execution Trace or driver-call trace "
                                 "(no 'traceEvents', 'nodes' or JSON object line found)")


def load_trace(path: str | bytes | os.PathLike, progress: Progress | None = None) -> Union[KinetoTrace, "ETTrace"]:
    """Load a Kineto trace or an Execution Trace, whichever the file holds (``path``: a
    ``str``, ``bytes`` or ``os.PathLike``; anything else is a :class:`TraceFileError`)."""
    return _load_any(trace_path(path), progress)


@dataclass
class LinkedTrace:
    """A Kineto trace, optionally with its Execution Trace and the link between them.

    ``kineto`` may be a :class:`~tracetui.driver.trace.DriverTrace`: a driver-call trace
    alone, or a Kineto trace with a driver-call trace linked to it (``driver_link``)."""

    kineto: KinetoTrace | None
    et: "ETTrace | None" = None
    link: ETLink | None = None
    warnings: list[LoadWarning] = field(default_factory=list)

    @property
    def title(self) -> str:
        parts = [os.path.basename(t.path) for t in (self.kineto, self.et) if t is not None]
        drv = self.kineto if isinstance(self.kineto, DriverTrace) else None
        if drv is not None and drv.link is not None:
            parts.append(os.path.basename(drv.driver_path))
        return " + ".join(parts)

    def all_warnings(self) -> list[LoadWarning]:
        out: list[LoadWarning] = []
        if self.kineto is not None:
            out += self.kineto.warnings
        if self.et is not None:
            out += list(getattr(self.et, "warnings", []))
        if self.link is not None:
            out += self.link.warnings
        return out + self.warnings


def load_pair(et_path: str | os.PathLike[str], kineto_path: str | os.PathLike[str],
              progress: Progress | None = None) -> LinkedTrace:
    """Load an ET and its Kineto trace (either order: detected by content) and link them."""
    return open_traces([trace_path(et_path), trace_path(kineto_path)], progress)


def open_traces(paths: list[str], progress: Progress | None = None,
                load_one: Callable[[str, Progress], object] | None = None,
                link_one: Callable[["ETTrace", KinetoTrace], ETLink] | None = None) -> LinkedTrace:
    """Load one trace, or a Kineto trace with its ET and/or its driver-call trace (any
    order, detected by content) into a :class:`LinkedTrace`.

    ``load_one(path, progress)`` loads a single file (default: :func:`load_trace`);
    ``link_one(et, kineto)`` links an ET to its Kineto trace (default:
    :func:`~tracetui.link.link_et_kineto`); the cache passes its own of both, to serve
    Kineto traces and links from disk.
    """
    if not paths or len(paths) > 3:
        raise TraceFormatError(None, "give one trace file, or a Kineto trace with its Execution Trace and/or its "
                                     "driver-call trace")
    report = progress or (lambda msg, frac: None)
    loader = load_one or _load_any
    loaded = []
    scale = 1.0 / len(paths) if paths else 1.0
    for k, p in enumerate(paths):
        p = trace_path(p)

        def sub(msg: str, frac: float, k: int = k, p: str = p) -> None:
            report(f"{os.path.basename(p)}: {msg}", (k + frac) * scale)

        loaded.append(loader(p, sub))
    drivers = [t for t in loaded if isinstance(t, DriverTrace)]
    kin = [t for t in loaded if isinstance(t, KinetoTrace) and not isinstance(t, DriverTrace)]
    ets = [t for t in loaded if not isinstance(t, KinetoTrace)]
    if len(kin) > 1:
        raise WrongTraceKindError(paths[1], "both files are Kineto traces; give an Execution Trace as the other")
    if len(ets) > 1:
        raise WrongTraceKindError(paths[1], "both files are Execution Traces; give the Kineto trace of the same run")
    if len(drivers) > 1:
        raise WrongTraceKindError(paths[1], "both files are driver-call traces; give the Kineto trace of the same run")
    kt = kin[0] if kin else None
    et = ets[0] if ets else None
    if drivers and et is not None and kt is None:
        raise WrongTraceKindError(paths[0], "a driver-call trace links to a Kineto trace, not to an Execution Trace")
    link = None
    if kt is not None and et is not None:
        report("linking ET to Kineto", 0.99)
        link = (link_one or link_et_kineto)(et, kt)
    if drivers:
        if kt is None:
            kt = drivers[0]
        else:
            from .link.driver_merge import link_driver

            report("linking the driver calls to Kineto", 0.99)
            kt = link_driver(kt, drivers[0])
    report("ready", 1.0)
    return LinkedTrace(kt, et, link)
