"""Decode Kineto JSON bytes into flat columns (one row per event, no per-event dicts).

Fast path: msgspec decodes every event into a small typed struct, leaving ``ts`` and
``args`` as raw JSON bytes.  Timestamps are parsed exactly (see ``timestamps.py``); the
few args fields the linker needs (correlation, External id, stream ...) are decoded in
one batch; all other args stay as raw JSON in one byte blob and are decoded lazily,
one event at a time, when the UI or the API asks (``args_blob`` + ``args_offsets``).

Tolerant path: when the typed decode rejects the file (a field of an unexpected type,
NaN written as a string, a number beyond the float range ...), the events are decoded
again in chunks; only a chunk that fails is decoded one event at a time.  A field of
the wrong type is coerced and counted (a *repair*, reported as a warning); an element
that is not an event at all (not a JSON object) is *rejected with a reason* and counted,
never silently dropped.  Invalid UTF-8 is replaced byte for byte with ``?`` (byte
offsets in messages stay exact) and reported.  That code lives in ``tolerant.py``,
imported only on those paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from ..errors import LoadWarning, TraceFormatError, WrongTraceKindError
from ..io.files import kind_of_keys
from ..io.heap import release_freed_memory
from ..io.jsonrecover import replace_lone_surrogates
from . import columns as _columns_module
from .columns import (
    COL_CHUNK,
    LENIENT,
    ArgsMap,
    Columns,
    DecodedEvents,
    DecodeProgress,
    Tally,
    allocate_columns,
    lenient_decode,
)
from .schema import Event

__all__ = ["DecodedEvents", "DecodedTrace", "DecodeProgress", "as_format_error", "decode_events", "lenient_decode"]


@dataclass
class DecodedTrace:
    events: DecodedEvents
    metadata: dict[str, Any]
    warnings: list[LoadWarning]
    form: str  #: "object" or "array"


def _decode_error_position(exc: Exception) -> str | None:
    msg = str(exc)
    if "(byte " in msg:
        return "byte " + msg.rsplit("(byte ", 1)[1].rstrip(")")
    return None


def _validation_position(exc: Exception) -> str | None:
    """``"... - at `$[12].name`"`` -> ``"traceEvents[12]"``."""
    msg = str(exc)
    if " - at `$[" in msg:
        idx = msg.rsplit(" - at `$[", 1)[1].split("]", 1)[0]
        if idx.isdigit():
            return f"traceEvents[{idx}]"
    return None


def _kind_name(raw: msgspec.Raw) -> str:
    head = bytes(memoryview(raw)[:1])
    return {b"{": "an object", b'"': "a string", b"n": "null", b"t": "a boolean", b"f": "a boolean"}.get(
        head, "a number")


def _leading_space(data: bytes) -> int:
    """How many whitespace bytes (as ``bytes.lstrip`` strips them) start ``data``, without
    copying it: Kineto writes a newline before its ``{``, and ``data.lstrip()`` would copy the
    whole document (37 ms and 51 MB for a 216k-event trace)."""
    head = data[:64]
    n = len(head) - len(head.lstrip())
    if n < len(head):
        return n
    return len(data) - len(data.lstrip()) if len(data) > len(head) else len(data)


def _split_top(path: str, data: bytes) -> tuple[msgspec.Raw, dict[str, Any], str]:
    """Split the document into the raw events array and the other top-level keys."""
    lead = _leading_space(data)
    if lead == len(data):
        raise TraceFormatError(path, "file is empty")
    first = data[lead:lead + 1]
    if first == b"[":
        return msgspec.Raw(data), {}, "array"
    if first != b"{":
        raise TraceFormatError(path, "not JSON: expected '{' or '[' at the start", position=f"byte {lead}")
    top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    if "traceEvents" not in top:
        if kind_of_keys(False, "nodes" in top, "schema" in top) == "et":
            raise WrongTraceKindError(path, "this is a PyTorch Execution Trace (ET), not a Kineto trace; "
                                            "open it with --et or together with its Kineto trace")
        keys = ", ".join(sorted(top)[:6]) or "none"
        raise TraceFormatError(path, f"not a Kineto/Chrome trace: no 'traceEvents' key (keys: {keys})")
    meta: dict[str, Any] = {}
    for k, v in top.items():
        if k == "traceEvents":
            continue
        try:
            meta[k] = LENIENT.decode(v)
        except msgspec.DecodeError:
            meta[k] = bytes(v).decode("utf-8", "replace")
    events = top["traceEvents"]
    if bytes(memoryview(events)[:1]) != b"[":
        raise TraceFormatError(path, f"'traceEvents' is {_kind_name(events)}, not a list of events")
    return events, meta, "object"


def decode_events(path: str, data: bytes, progress: DecodeProgress | None = None) -> DecodedTrace:
    """Decode a whole Kineto document.  Raises TraceFormatError on bytes that are not a trace.

    Three repairs are tried before giving up, each reported as a warning: invalid UTF-8 is
    replaced byte for byte by ``?``; lone UTF-16 surrogate escapes (``\\ud800``) by
    ``\\ufffd``; bare ``NaN``/``Infinity`` tokens (not JSON, but written by Python's
    ``json``) are read as the strings "NaN"/"Infinity".
    """
    warnings: list[LoadWarning] = []
    utf8_fixed = nan_fixed = surrogates_fixed = False
    first_error: TraceFormatError | None = None
    while True:
        try:
            return _decode(path, data, warnings, progress)
        except UnicodeDecodeError as exc:
            if utf8_fixed:  # pragma: no cover - sanitized data is valid UTF-8
                raise TraceFormatError(path, f"invalid UTF-8 ({exc.reason})") from None
            from .tolerant import sanitize_utf8

            data, count, first = sanitize_utf8(data)
            utf8_fixed = True
            warnings.append(LoadWarning("invalid_utf8", f"{count:,} bytes of invalid UTF-8 replaced by '?' "
                                        f"(first at byte {first})", count))
        except TraceFormatError as exc:
            from .tolerant import bare_constant_at, quote_bare_constants

            if not surrogates_fixed:
                surrogates_fixed = True
                data, count, first = replace_lone_surrogates(data)
                if count:
                    warnings.append(LoadWarning("lone_surrogate", f"{count:,} lone UTF-16 surrogate escapes (such as "
                                                f"\\ud800, half of a pair) read as U+FFFD (first at byte {first})",
                                                count))
                    continue
            if nan_fixed or not bare_constant_at(data, exc):
                raise (first_error or exc) from None
            first_error = exc
            data, count = quote_bare_constants(data)
            nan_fixed = True
            if not count:
                raise exc from None
            warnings.append(LoadWarning("bare_constant", f"{count:,} bare NaN/Infinity tokens (not valid JSON; "
                                        f"first at {exc.position}) read as the strings \"NaN\"/\"Infinity\"",
                                        count))


def _decode(path: str, data: bytes, warnings: list[LoadWarning], progress: DecodeProgress | None) -> DecodedTrace:
    try:
        events_raw, meta, form = _split_top(path, data)
    except msgspec.DecodeError as exc:
        raise as_format_error(path, exc) from None
    rejected = Tally()
    fast = _columns_chunked(events_raw, progress)
    if fast is not None:
        cols, repaired = fast
        cols.n_elements = len(cols.ph)
        if repaired:
            warnings.append(_repaired_warning(repaired))
        return DecodedTrace(cols, meta, warnings + _duplicates(events_raw, cols), form)
    repaired = Tally()
    file_index = None
    try:
        evs: list[Event] = msgspec.json.decode(events_raw, type=list[Event])
        n_elements = len(evs)
    except msgspec.ValidationError:
        try:
            raws = msgspec.json.decode(events_raw, type=list[msgspec.Raw])
        except msgspec.ValidationError as exc:
            if form == "array":
                raise TraceFormatError(path, f"not a Chrome trace: the top-level array does not hold events ({exc})",
                                       position=_validation_position(exc)) from None
            raise TraceFormatError(path, f"'traceEvents' is not a list of events ({exc})") from None
        except msgspec.DecodeError as exc:
            raise as_format_error(path, exc) from None
        n_elements = len(raws)
        from .tolerant import decode_events_tolerant

        evs, file_index = decode_events_tolerant(raws, rejected, repaired)
        del raws
    except msgspec.DecodeError as exc:
        raise as_format_error(path, exc) from None
    if n_elements and not evs:
        raise TraceFormatError(path, f"no usable events: every element of traceEvents was rejected "
                                     f"({rejected.describe()})")
    cols = _columns(evs, file_index, repaired)
    del evs
    cols.rejected = rejected.counts
    cols.rejected_first = rejected.first
    cols.n_elements = n_elements
    if repaired:
        warnings.append(_repaired_warning(repaired))
    return DecodedTrace(cols, meta, warnings + _duplicates(events_raw, cols), form)


def _duplicates(events_raw: msgspec.Raw, cols: DecodedEvents) -> list[LoadWarning]:
    """The warning for events holding a key twice (``duplicates.py``), as a list."""
    from .duplicates import duplicate_key_warning

    found = duplicate_key_warning(events_raw, cols)
    return [found] if found is not None else []


def _repaired_warning(repaired: Tally) -> LoadWarning:
    total = sum(repaired.counts.values())
    return LoadWarning("repaired", f"{total:,} fields of an unexpected type were coerced (events kept): "
                                   f"{repaired.describe()}", total)


def as_format_error(path: str, exc: Exception) -> TraceFormatError:
    """A msgspec decode error as a one-line TraceFormatError with its byte position."""
    pos = _decode_error_position(exc)
    msg = str(exc).split(" (byte ")[0]
    if msg == "Input data was truncated":
        msg = "the file ends in the middle of the JSON document"
    return TraceFormatError(path, f"not valid JSON ({msg})", position=pos)


def _columns(evs: list[Event], file_index: np.ndarray | None, repaired: Tally) -> DecodedEvents:
    cols = Columns(allocate_columns(len(evs)), file_index, repaired)
    for s in range(0, len(evs), COL_CHUNK):
        cols.add(evs[s:s + COL_CHUNK])
    return cols.finish()


#: events arrays up to this size are typed-decoded in one call (their structs fit in a few
#: hundred MB, and a trace this small, under about 300k events, is decoded by one process
#: anyway): no split into raw elements and re-join per chunk, about 0.15 s of 0.7 s saved
#: on a 216k-event trace; bigger ones take the chunked (and parallel) path, bounded memory
WHOLE_DECODE_BYTES = 64 * 2**20


def _columns_whole(events_raw: msgspec.Raw, progress: DecodeProgress | None) -> tuple[DecodedEvents, Tally] | None:
    """The events array typed-decoded at once, columns filled in chunks of ``COL_CHUNK``."""
    try:
        evs = msgspec.json.decode(events_raw, type=list[Event])
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    repaired = Tally()
    cols = Columns(allocate_columns(len(evs)), None, repaired)
    for s in range(0, len(evs), COL_CHUNK):
        cols.add(evs[s:s + COL_CHUNK])
        if progress is not None:
            progress(min(1.0, (s + COL_CHUNK) / len(evs)))
    del evs
    return cols.finish(), repaired


def _columns_chunked(events_raw: msgspec.Raw, progress: DecodeProgress | None = None
                     ) -> tuple[DecodedEvents, Tally] | None:
    """Fast path: cut the events array into runs of ``COL_CHUNK`` whole events
    (:func:`chunk_spans`), then typed decode + columns run by run (bounded memory), in
    parallel worker processes for big traces (``parallel.py``); the args go straight into
    one map (:class:`~.columns.ArgsMap`).  None when any chunk is refused (the caller then
    takes the whole-array path, which reports exactly what is wrong)."""
    if len(events_raw) <= WHOLE_DECODE_BYTES:
        return _columns_whole(events_raw, progress)
    chunk = _columns_module.COL_CHUNK
    try:
        cut = chunk_spans(events_raw, chunk)
    except msgspec.DecodeError:
        return None
    if cut is None:
        return None
    spans, n = cut
    # chunk_spans freed its 2.4M element objects and their list (11x tiling: ~45-65 MB of
    # heap), but glibc keeps the pages: hand them back before the columns are filled.
    # Forked decode workers would otherwise hold them too, as shared pages that each
    # process copies when it reuses them (the cold open's peak is at the end of this decode:
    # 1233 -> 1168-1188 MB tree PSS on the 11x tiling)
    release_freed_memory()
    from .parallel import columns_parallel, decode_workers

    repaired = Tally()
    workers = decode_workers(n)
    try:
        if workers > 1:
            cols = columns_parallel(events_raw, spans, chunk, n, workers,
                                    Columns(allocate_columns(n, shared=True), None, repaired), progress)
        else:
            args = ArgsMap([spans[-1][1] - spans[0][0]])
            cols = Columns(allocate_columns(n), None, repaired, blobs=args.regions[0], args_map=args)
            cols.add_spans(events_raw, spans, progress)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    return cols.finish(), repaired


def _address(buf: Any) -> int:
    return int(np.frombuffer(buf, dtype=np.uint8).ctypes.data)


def chunk_spans(events_raw: msgspec.Raw, chunk: int) -> tuple[list[tuple[int, int]], int] | None:
    """(byte spans of ``events_raw`` holding ``chunk`` whole events each (the last: the rest),
    the number of events).  The array is split into raw elements once (msgspec checks the
    JSON and finds each element), then only the first and last element of each run are kept
    as offsets: the element objects (one per event) are freed before any column is filled
    and never reach the decode workers.  Raises msgspec.DecodeError on bad JSON;
    None when the elements do not lie in ``events_raw`` (they are views into it)."""
    raws = msgspec.json.decode(events_raw, type=list[msgspec.Raw])
    n = len(raws)
    if not n:
        return None
    base, size = _address(events_raw), len(events_raw)
    spans = []
    for s in range(0, n, chunk):
        first, last = raws[s], raws[min(s + chunk, n) - 1]
        a, b = _address(first) - base, _address(last) - base + len(last)
        if not (0 < a < b < size):
            return None
        spans.append((a, b))
    view = memoryview(events_raw)
    if any(view[a:a + 1] != memoryview(raws[s * chunk])[:1] for s, (a, _) in enumerate(spans)):
        return None  # pragma: no cover - the elements are views into the array
    return spans, n
