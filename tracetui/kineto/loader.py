"""load_kineto(path): read, decode (recovering truncated files), build the linked trace.

Recovery rules (``trace.warnings`` always says what happened, with byte counts):

* the JSON ends early (the profiler was killed while writing, or the gzip stream is cut):
  every complete event before the cut is kept; the partial one after it is counted in
  ``trace.bytes_lost``;
* the JSON document is complete but followed by other bytes (NUL padding, a second
  document appended): the document is loaded, the trailing bytes are counted as lost;
* anything else that is not valid JSON (a corrupt byte in the middle) is an error naming
  its byte offset: loading a prefix would silently hide everything after it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import msgspec

from ..errors import LoadWarning, TraceError, TraceFormatError
from ..io.files import FileBytes, padding_warning, read_trace_bytes, trace_path
from ..io.heap import release_freed_memory
from ..io.jsonrecover import content_end, content_start, nesting_error, only_padding_after, recover_truncated_json
from .build import build_trace
from .decode import DecodedTrace, decode_events
from .trace import KinetoTrace

Progress = Callable[[str, float], None]



def load_kineto(path: str | os.PathLike[str], *, file_bytes: FileBytes | None = None,
                progress: Progress | None = None, release_bytes: bool = False,
                adapt: Callable[[DecodedTrace], frozenset[str]] | None = None) -> KinetoTrace:
    """Load a Kineto (PyTorch profiler) trace: ``.json`` or gzip, object or bare-array form.

    A file cut short (gzip stream or JSON) still opens with every complete event before
    the cut; ``trace.warnings`` says how much was lost.  Raises a :class:`TraceError`
    subclass (one-line message with file and position) for anything that is not a trace.
    ``release_bytes=True`` empties ``file_bytes.data`` once decoded (the caller no longer
    needs the JSON text), so it is not held during the build.  ``adapt(decoded)``: another
    format's reading of the decoded columns (a Chrome trace JSON that is no PyTorch trace),
    changed in place before the build; it gives the categories that are plain spans by design.
    """
    report = progress or (lambda msg, frac: None)
    p = trace_path(path)
    report("reading", 0.0)
    fb = file_bytes or read_trace_bytes(p)
    warnings: list[LoadWarning] = padding_warning(fb)
    data = fb.data
    bytes_lost = 0
    if fb.gzip_truncated:
        warnings.append(LoadWarning("truncated", _gzip_message(fb), 0))
    trailing = getattr(fb, "gzip_trailing", 0)
    if trailing:
        warnings.append(LoadWarning("trailing_data", f"{trailing:,} bytes after the end of the {fb.compression} "
                                    f"stream are not {fb.compression} data and were ignored", trailing))
    report("decoding", 0.1)
    try:
        try:
            dec = decode_events(p, data, progress=lambda done: report("decoding", 0.1 + 0.4 * done))
        except TraceFormatError as exc:
            dec, warning, bytes_lost = _recover(p, data, exc, fb)
            warnings.append(warning)
    except RecursionError:  # the decoders stop near a thousand levels: one line, not a crash
        raise _locate(nesting_error(p, data), fb) from None
    if not dec.events.n_elements:
        what = "traceEvents array" if dec.form == "object" else "top-level array"
        raise TraceFormatError(p, f"no events: the trace is empty (its {what} holds nothing)")
    # the JSON text is not needed by the build: free it first when this call read it
    # (513 MB less at the peak for a 2M-event trace)
    if release_bytes and file_bytes is not None:
        file_bytes.data = b""
    data = fb = file_bytes = None
    plain = adapt(dec) if adapt is not None else frozenset()
    report("building", 0.5)
    trace = build_trace(p, dec, progress=report, extra_warnings=warnings, bytes_lost=bytes_lost,
                        plain_categories=plain)
    del dec
    # the decode's garbage is freed by now, but glibc keeps its pages: hand them back
    # (2.16M events: 850 -> 456 MB held)
    release_freed_memory()
    return trace


def _recover(p: str, data: bytes, exc: TraceFormatError, fb: FileBytes) -> tuple[DecodedTrace, LoadWarning, int]:
    """Decode the complete part of a document that failed with ``exc``; re-raise when there is none.

    Returns (decoded events, the warning saying what was lost, bytes lost).
    """
    cause = _recoverable(data)
    damaged_at = None
    if cause is None and getattr(fb, "gzip_error", None) and exc.position and exc.position[5:].isdigit():
        # corrupt gzip data inflates to garbage before zlib notices: keep what precedes it
        damaged_at = int(exc.position[5:])
        data = data[:damaged_at]
        cause = _recoverable(data)
    if cause is None:
        raise _locate(exc, fb) from None
    try:
        rec = recover_truncated_json(data, None if cause == "array" else "traceEvents", p)
    except TraceFormatError as rexc:
        raise _locate(rexc if "ends at byte" in rexc.problem else exc, fb) from None
    try:
        dec = decode_events(p, rec.data)
    except TraceFormatError:
        raise _locate(exc, fb) from None
    kept = dec.events.n_elements
    if data.startswith(rec.data):
        msg = (f"{rec.bytes_lost:,} bytes after the end of the JSON document were ignored "
               f"(from byte {len(rec.data):,}); kept all {kept:,} events")
    else:
        what = "damaged" if damaged_at is not None else "cut short"
        end = content_end(data)
        at = f"at byte {end:,}{' (decompressed)' if fb.compressed else ''}"
        if not kept:
            padding = len(data) - end + fb.padding
            raise TraceFormatError(p, f"no events: the file is {what} {at}, before its first complete event"
                                      f"{f', then {padding:,} bytes of padding' if padding else ''}")
        msg = f"file is {what} {at}: kept the {kept:,} complete events before the cut"
        if rec.bytes_lost:
            msg += f", dropped the last {rec.bytes_lost:,} bytes (an incomplete event)"
    return dec, LoadWarning("truncated", msg, rec.bytes_lost), rec.bytes_lost


def _gzip_message(fb: FileBytes) -> str:
    err = getattr(fb, "gzip_error", None)
    used = getattr(fb, "gzip_bytes_read", 0)
    if err:
        return (f"{fb.compression} data is corrupt near compressed byte {used:,} of {fb.file_size:,} ({err}): only "
                f"the first {len(fb.data):,} decompressed bytes could be read; the rest of the file is lost")
    return (f"{fb.compression} stream ends early (the file was cut off after {fb.file_size:,} compressed bytes): "
            f"only {len(fb.data):,} decompressed bytes could be read; the rest of the trace is lost")


def _locate(exc: TraceError, fb: FileBytes) -> TraceError:
    """Say that byte offsets of a gzip file count decompressed bytes."""
    if fb.compressed and exc.position and exc.position.startswith("byte ") and "decompressed" not in exc.position:
        return type(exc)(exc.path, exc.problem, position=f"{exc.position} (decompressed)")
    return exc


def _recoverable(data: bytes) -> str | None:
    """"object"/"array" when ``data`` is valid JSON cut short or followed by other bytes; else None.

    A document cut short makes the decoder report truncation, or an invalid character
    where the NUL padding behind the cut starts; a complete document followed by other
    bytes makes it report trailing characters.
    """
    start = content_start(data)
    first = data[start:start + 1]
    if first not in (b"{", b"["):
        return None
    form = "array" if first == b"[" else "object"
    try:
        # decoding as Raw checks the structure only (no objects built, strings not validated)
        msgspec.json.decode(data, type=msgspec.Raw)
    except msgspec.DecodeError as exc:
        msg = str(exc)
        if "truncated" in msg or "trailing characters" in msg:
            return form
        if "(byte " in msg:
            try:
                pos = int(msg.rsplit("(byte ", 1)[1].rstrip(")"))
            except ValueError:
                return None
            if only_padding_after(data, pos):
                return form
        return None
    return None
