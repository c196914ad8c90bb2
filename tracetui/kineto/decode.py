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

import codecs
import mmap
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Union

import msgspec
import numpy as np

from ..errors import LoadWarning, TraceFormatError, WrongTraceKindError

_EMPTY = msgspec.Raw(b"")
#: called with the fraction (0..1) of the events decoded so far (fast path only)
DecodeProgress = Callable[[float], None]
#: events per msgspec call on the tolerant path
_CHUNK = 4096
#: events per typed decode on the fast path (a multiple of _CHUNK; bounds peak memory)
_COL_CHUNK = 16 * _CHUNK
#: untyped decoder that turns numbers beyond the float range into +-inf instead of failing
_LENIENT = msgspec.json.Decoder(float_hook=float)
#: decode any JSON value; numbers beyond the float range become +-inf (raises msgspec.DecodeError)
lenient_decode = _LENIENT.decode


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: Union[int, str] = 0
    tid: Union[int, str] = 0
    ts: msgspec.Raw = _EMPTY
    dur: float = 0.0
    id: Union[int, str, None] = None
    bp: Union[str, None] = None
    args: msgspec.Raw = _EMPTY


class _KeyArgs(msgspec.Struct, gc=False):
    """The args fields that linking needs; every other field stays raw."""

    correlation: int = -1
    external_id: int = msgspec.field(default=-1, name="External id")
    external_id_old: int = msgspec.field(default=-1, name="external id")
    stream: int = -1
    device: int = -1
    rf_id: int = msgspec.field(default=0, name="Record function id")
    seq: int = msgspec.field(default=-1, name="Sequence number")
    fwd_tid: int = msgspec.field(default=-1, name="Fwd thread id")


_KEY_FIELDS = ("correlation", "external_id", "external_id_old", "stream", "device", "rf_id", "seq", "fwd_tid")


class Tally:
    """Counts per reason, with the traceEvents index of the first event of each reason."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.first: dict[str, int] = {}

    def add(self, reason: str, index: int, count: int = 1) -> None:
        self.counts[reason] += count
        self.first.setdefault(reason, index)

    def __bool__(self) -> bool:
        return bool(self.counts)

    def describe(self) -> str:
        """``"3 not a JSON object (first: traceEvents[12]); ..."``, most frequent first."""
        return "; ".join(f"{c:,} {r} (first: traceEvents[{self.first[r]}])" for r, c in self.counts.most_common())


@dataclass
class Interned:
    """A column of Python values stored as int32 codes into ``values`` (first-seen order)."""

    codes: np.ndarray  #: int32, one per row
    values: list[Any]  #: distinct values; row i holds values[codes[i]]

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    def __getitem__(self, row: int) -> Any:
        return self.values[self.codes[row]]

    def take(self, rows: np.ndarray) -> list[Any]:
        """The values of ``rows`` as a Python list."""
        if not self.values:
            return []
        vals = np.empty(len(self.values), dtype=object)
        vals[:] = self.values
        return vals[self.codes[rows]].tolist()


@dataclass
class DecodedEvents:
    """Columns of every usable event in file order (flows and metadata are split out later).

    Times are exact: integer microseconds plus a float64 fraction (see ``timestamps.py``).
    """

    ph: Interned  #: phase strings
    cat: Interned
    name: Interned
    pid: Interned  #: int or str values
    tid: Interned
    ts_int: np.ndarray  #: integer microseconds (absolute), int64
    ts_frac: np.ndarray  #: fractional microseconds, float64 (NaN = missing ts)
    dur: np.ndarray  #: microseconds, float64 (NaN = not a number in the file)
    flow_id: list[Any]  #: ``id`` of each event (flows link by it), None when absent
    args_blob: bytes
    args_offsets: np.ndarray  #: int64, len n+1; args of event i = blob[off[i]:off[i+1]] (b"" = none)
    key_args: dict[str, np.ndarray]  #: name -> int64 column, see _KeyArgs
    rejected: Counter = field(default_factory=Counter)  #: reason -> elements of traceEvents not used
    rejected_first: dict[str, int] = field(default_factory=dict)  #: reason -> traceEvents index of the first
    #: index in traceEvents of each row; None when no element was rejected (row i = traceEvents[i])
    file_index: np.ndarray | None = None
    #: traceEvents elements before rejection (= rows + sum(rejected))
    n_elements: int = 0

    def source_index(self, row: int) -> int:
        """The traceEvents index of decoded row ``row``."""
        return int(self.file_index[row]) if self.file_index is not None else int(row)


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


def _split_top(path: str, data: bytes) -> tuple[msgspec.Raw, dict[str, Any], str]:
    """Split the document into the raw events array and the other top-level keys."""
    stripped = data.lstrip()
    if not stripped:
        raise TraceFormatError(path, "file is empty")
    first = stripped[:1]
    if first == b"[":
        return msgspec.Raw(data), {}, "array"
    if first != b"{":
        raise TraceFormatError(path, "not JSON: expected '{' or '[' at the start",
                               position=f"byte {len(data) - len(stripped)}")
    top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    if "traceEvents" not in top:
        if "nodes" in top and "schema" in top:
            raise WrongTraceKindError(path, "this is a PyTorch Execution Trace (ET), not a Kineto trace; "
                                            "open it with --et or together with its Kineto trace")
        keys = ", ".join(sorted(top)[:6]) or "none"
        raise TraceFormatError(path, f"not a Kineto/Chrome trace: no 'traceEvents' key (keys: {keys})")
    meta: dict[str, Any] = {}
    for k, v in top.items():
        if k == "traceEvents":
            continue
        try:
            meta[k] = _LENIENT.decode(v)
        except msgspec.DecodeError:
            meta[k] = bytes(v).decode("utf-8", "replace")
    events = top["traceEvents"]
    if bytes(memoryview(events)[:1]) != b"[":
        raise TraceFormatError(path, f"'traceEvents' is {_kind_name(events)}, not a list of events")
    return events, meta, "object"


def _key_args_batch(raws: list[msgspec.Raw]) -> dict[str, np.ndarray] | None:
    """Decode the linking fields of all args in one msgspec call; None if any is odd."""
    doc = b"[" + b",".join([r if len(r) else b"{}" for r in raws]) + b"]"
    try:
        parsed = msgspec.json.decode(doc, type=list[Union[_KeyArgs, None]])
    except msgspec.DecodeError:
        return None
    del doc
    n = len(parsed)
    if None in parsed:  # "args": null
        none = _KeyArgs()
        parsed = [p if p is not None else none for p in parsed]
    out = {}
    try:
        for f in _KEY_FIELDS:
            out[f] = np.fromiter(map(attrgetter(f), parsed), dtype=np.int64, count=n)
    except OverflowError:
        return None
    return out


def _key_args_columns(raws: list[msgspec.Raw], base: int, file_index: np.ndarray | None,
                      repaired: Tally) -> dict[str, np.ndarray]:
    """Key args of rows ``base`` ...: one batch; on odd values, per 4096 rows, per event where needed."""
    whole = _key_args_batch(raws)
    if whole is not None:
        return whole
    parts = []
    for s in range(0, len(raws), _CHUNK):
        part = raws[s:s + _CHUNK]
        if (batch := _key_args_batch(part)) is None:
            from .tolerant import key_args_slow

            batch = key_args_slow(part, base + s, file_index, repaired)
        parts.append(batch)
    return {f: np.concatenate([p[f] for p in parts]) for f in _KEY_FIELDS}


def _is_ascii(buf: bytes | mmap.mmap) -> bool:
    """``buf.isascii()``; a memory map (no isascii) is checked in 16 MiB slices."""
    if isinstance(buf, bytes):
        return buf.isascii()
    step = 1 << 24
    return all(buf[s:s + step].isascii() for s in range(0, len(buf), step))


def _validate_utf8(buf: bytes | mmap.mmap) -> None:
    """Raise UnicodeDecodeError if ``buf`` is not UTF-8 (checked in chunks: bounded memory)."""
    dec = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(buf)
    step = 1 << 24
    for s in range(0, len(buf), step):
        dec.decode(view[s:s + step])
    dec.decode(b"", final=True)


def decode_events(path: str, data: bytes, progress: DecodeProgress | None = None) -> DecodedTrace:
    """Decode a whole Kineto document.  Raises TraceFormatError on bytes that are not a trace.

    Two repairs are tried before giving up, each reported as a warning: invalid UTF-8 is
    replaced byte for byte by ``?``; bare ``NaN``/``Infinity`` tokens (not JSON, but written
    by Python's ``json``) are read as the strings "NaN"/"Infinity".
    """
    warnings: list[LoadWarning] = []
    utf8_fixed = nan_fixed = False
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
        return DecodedTrace(cols, meta, warnings, form)
    repaired = Tally()
    file_index = None
    try:
        evs: list[_Event] = msgspec.json.decode(events_raw, type=list[_Event])
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
    return DecodedTrace(cols, meta, warnings, form)


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


_INTERNED = ("ph", "cat", "name", "pid", "tid")


class _Codes(dict):
    """value -> int code; a missing value gets the next code (one dict lookup per value)."""

    def __missing__(self, value: Any) -> int:
        code = self[value] = len(self)
        return code


#: dtype of every column that ``_Columns`` fills row by row
_COLUMN_DTYPES: dict[str, Any] = {**{f: np.int32 for f in _INTERNED}, **{f: np.int64 for f in _KEY_FIELDS},
                                  "ts_int": np.int64, "ts_frac": np.float64, "dur": np.float64,
                                  "args_len": np.int64}


def allocate_columns(n: int, shared: bool = False) -> dict[str, np.ndarray]:
    """Empty columns for ``n`` rows; ``shared``: in one anonymous shared memory map, so that
    forked decode workers write their rows in place (``parallel.py``)."""
    if not shared or n == 0:
        return {f: np.empty(n, dtype=dt) for f, dt in _COLUMN_DTYPES.items()}
    sizes = [np.dtype(dt).itemsize * n for dt in _COLUMN_DTYPES.values()]
    mm = mmap.mmap(-1, sum(sizes))
    out, at = {}, 0
    for (f, dt), size in zip(_COLUMN_DTYPES.items(), sizes):
        out[f] = np.frombuffer(mm, dtype=dt, count=n, offset=at)
        at += size
    return out


class _Columns:
    """Columns built chunk by chunk from typed events, so that the structs of the whole
    trace never exist at once.  Strings and pids/tids are interned into int32 codes.

    The numeric columns are allocated once for all ``len(columns["ph"])`` rows of the
    trace; this object fills rows ``base`` ... in order (a decode worker fills a slice).
    """

    def __init__(self, columns: dict[str, np.ndarray], file_index: np.ndarray | None, repaired: Tally,
                 base: int = 0) -> None:
        self.columns = columns
        self.file_index = file_index
        self.repaired = repaired
        self.base = base  #: row number of this object's first row in the whole trace
        self.index: dict[str, _Codes] = {f: _Codes() for f in _INTERNED}
        self.blobs: list[bytes] = []
        self.flow_id: list[Any] = []
        self.rows = 0

    def add(self, evs: list[_Event]) -> None:
        """Fill the next ``len(evs)`` rows with the columns of ``evs``."""
        from .timestamps import parse_timestamps

        n = len(evs)
        lo = self.base + self.rows
        hi = lo + n
        cols = self.columns
        for f in _INTERNED:
            # codes in first-seen order; C-level loop, Python runs only for a new value
            cols[f][lo:hi] = np.fromiter(map(self.index[f].__getitem__, map(attrgetter(f), evs)),
                                         dtype=np.int32, count=n)
        cols["ts_int"][lo:hi], cols["ts_frac"][lo:hi] = parse_timestamps(list(map(attrgetter("ts"), evs)))
        cols["dur"][lo:hi] = np.fromiter(map(attrgetter("dur"), evs), dtype=np.float64, count=n)
        raws = list(map(attrgetter("args"), evs))
        cols["args_len"][lo:hi] = np.fromiter(map(len, raws), dtype=np.int64, count=n)
        self.blobs.append(b"".join(raws))
        for f, col in _key_args_columns(raws, lo, self.file_index, self.repaired).items():
            cols[f][lo:hi] = col
        self.flow_id.extend(map(attrgetter("id"), evs))
        self.rows += n

    def add_raw(self, raws: list[msgspec.Raw], progress: DecodeProgress | None = None) -> None:
        """Typed-decode raw events (chunks of ``_COL_CHUNK``) and fill the next rows;
        ``progress(fraction of raws done)`` after each chunk.

        Raises msgspec.DecodeError or UnicodeDecodeError when the fast path refuses them."""
        for s in range(0, len(raws), _COL_CHUNK):
            evs = msgspec.json.decode(b"[" + b",".join(raws[s:s + _COL_CHUNK]) + b"]", type=list[_Event])
            self.add(evs)
            del evs
            if progress is not None:
                progress(min(1.0, (s + _COL_CHUNK) / len(raws)))

    def export(self) -> dict[str, Any]:
        """What a decode worker sends back (``parallel.py``); its rows are already in the
        shared columns, with interned codes of its own (``values``)."""
        return {"values": {f: list(self.index[f]) for f in _INTERNED}, "blobs": self.blobs,
                "flow_id": self.flow_id, "rows": self.rows,
                "repaired": (dict(self.repaired.counts), self.repaired.first)}

    def absorb(self, part: dict[str, Any]) -> None:
        """Take over the next rows, filled by a worker that sent ``part`` (its :meth:`export`)."""
        lo = self.base + self.rows
        hi = lo + part["rows"]
        for f in _INTERNED:
            values = part["values"][f]
            # the worker's codes -> this object's codes (new values get the next codes,
            # in the worker's first-seen order: the same codes a serial decode gives)
            lut = np.fromiter(map(self.index[f].__getitem__, values), dtype=np.int32, count=len(values))
            if hi > lo:
                self.columns[f][lo:hi] = lut[self.columns[f][lo:hi]]
        self.blobs.extend(part["blobs"])
        self.flow_id.extend(part["flow_id"])
        self.rows += part["rows"]
        counts, first = part["repaired"]
        for reason, count in counts.items():
            self.repaired.add(reason, first[reason], count)

    def finish(self) -> DecodedEvents:
        n = self.rows
        c = self.columns
        if n != len(c["ph"]):  # pragma: no cover - every row is filled before finishing
            raise AssertionError(f"{n} of {len(c['ph'])} rows decoded")
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(c["args_len"], out=offsets[1:])
        blob = _join_releasing(self.blobs)
        if not _is_ascii(blob):
            _validate_utf8(blob)  # args stay raw; make sure decoding them later cannot fail
        col = {f: Interned(c[f], list(self.index[f])) for f in _INTERNED}
        return DecodedEvents(
            **col, ts_int=c["ts_int"], ts_frac=c["ts_frac"], dur=c["dur"],
            flow_id=self.flow_id, args_blob=blob, args_offsets=offsets,
            key_args={f: c[f] for f in _KEY_FIELDS}, file_index=self.file_index, n_elements=n)


def _join_releasing(pieces: list[bytes]) -> bytes | mmap.mmap:
    """The pieces joined, emptying ``pieces`` as they are copied (peak: the result plus one
    piece).  Big results live in an anonymous memory map (slices give ``bytes``, as for a
    blob mapped from the cache)."""
    total = sum(map(len, pieces))
    if total < (1 << 24):
        out = b"".join(pieces)
        pieces.clear()
        return out
    mm = mmap.mmap(-1, total)
    pieces.reverse()
    while pieces:
        mm.write(pieces.pop())
    mm.seek(0)
    return mm


def _columns(evs: list[_Event], file_index: np.ndarray | None, repaired: Tally) -> DecodedEvents:
    cols = _Columns(allocate_columns(len(evs)), file_index, repaired)
    for s in range(0, len(evs), _COL_CHUNK):
        cols.add(evs[s:s + _COL_CHUNK])
    return cols.finish()


def _columns_chunked(events_raw: msgspec.Raw, progress: DecodeProgress | None = None
                     ) -> tuple[DecodedEvents, Tally] | None:
    """Fast path: split the events array into raw elements, then typed decode + columns in
    chunks of ``_COL_CHUNK`` events (bounded memory), in parallel worker processes for
    big traces (``parallel.py``).  None when any chunk is refused (the caller then takes
    the whole-array path, which reports exactly what is wrong)."""
    try:
        raws = msgspec.json.decode(events_raw, type=list[msgspec.Raw])
    except msgspec.DecodeError:
        return None
    from .parallel import columns_parallel, decode_workers

    repaired = Tally()
    workers = decode_workers(len(raws))
    try:
        if workers > 1:
            cols = columns_parallel(raws, workers, _Columns(allocate_columns(len(raws), shared=True), None, repaired),
                                    progress)
        else:
            cols = _Columns(allocate_columns(len(raws)), None, repaired)
            cols.add_raw(raws, progress)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    del raws
    return cols.finish(), repaired
