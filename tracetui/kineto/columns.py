"""Columns of decoded Kineto events: one row per event, strings interned to int32 codes,
the linking args as int64 columns, every other arg kept as raw JSON in one blob.

:class:`Columns` fills rows chunk by chunk from typed events (:mod:`.decode` serially,
:mod:`.parallel` in forked workers); :class:`DecodedEvents` is the result.  Times are
microseconds.  Also here: the per-reason :class:`Tally` of repairs and rejections, and the
key-args decoding (one batch; per event with coercion when a value is odd).
"""

from __future__ import annotations

import codecs
import math
import mmap
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from operator import attrgetter, itemgetter
from typing import Any, Union

import msgspec
import numpy as np

from ..io.interning import Codes
from .flow_ids import FlowIds
from .schema import KEY_DEFAULTS, KEY_FIELDS, KEY_JSON, Event, KeyArgs

#: called with the fraction (0..1) of the events decoded so far (fast path only)
DecodeProgress = Callable[[float], None]
#: events per msgspec call on the tolerant path
CHUNK = 4096
#: events per typed decode on the fast path (a multiple of CHUNK; bounds peak memory).  Each
#: chunk's structs, joined text and key-args batch are ~55 MB of transient heap at 65,536
#: events, held in every decode process at once at the cold open's peak (the end of the
#: decode); 16,384 events: ~14 MB, and no slower (216k trace, serial columns: 0.23-0.26 s
#: CPU against 0.34-0.38 s at 65,536; the chunk's arrays stay in cache).  11x tiling, tree
#: PSS of the cold open: 1293 -> 1233 MB
COL_CHUNK = 4 * CHUNK
#: untyped decoder that turns numbers beyond the float range into +-inf instead of failing
LENIENT = msgspec.json.Decoder(float_hook=float)
#: decode any JSON value; numbers beyond the float range become +-inf (raises msgspec.DecodeError)
lenient_decode = LENIENT.decode


#: repairs of a number written as a string (``"dur": "10"``, ``"ts": "5"``): read as the number it holds
STRING_DUR = "'dur' a string (read as the number it holds)"
STRING_TS = "'ts' a string (read as the number it holds)"


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


_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def coerce_int(v: Any) -> int | None:
    """An integer id from a JSON value, or None when it is not a 64-bit integer."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if _I64_MIN <= v <= _I64_MAX else None
    if isinstance(v, float):
        return int(v) if math.isfinite(v) and v.is_integer() and _I64_MIN <= v <= _I64_MAX else None
    if isinstance(v, str):
        t = v.strip()
        try:
            c = int(t, 16) if t[:2].lower() == "0x" else int(t)
        except ValueError:
            return None
        return c if _I64_MIN <= c <= _I64_MAX else None
    return None


def key_args_batch(raws: list[msgspec.Raw], lens: np.ndarray | None = None) -> dict[str, np.ndarray] | None:
    """Decode the linking fields of all args in one msgspec call; None if any is odd.

    Only events with args are decoded (flows, a third of a trace, have none): their raws are
    picked by one ``itemgetter`` call and their fields scattered into default-filled columns.
    ``lens``: the raws' lengths when the caller has them."""
    n = len(raws)
    has = np.flatnonzero(lens if lens is not None else np.fromiter(map(len, raws), dtype=np.int64, count=n))
    if has.size == n:
        some = raws
    elif has.size > 1:
        some = itemgetter(*has.tolist())(raws)
    else:
        some = [raws[i] for i in has.tolist()]
    doc = b"[" + b",".join(some) + b"]"
    try:
        parsed = msgspec.json.decode(doc, type=list[Union[KeyArgs, None]])
    except msgspec.DecodeError:
        return None
    del doc, some
    if len(parsed) != has.size:  # pragma: no cover - one raw per element
        return None
    if None in parsed:  # "args": null
        none = KeyArgs()
        parsed = [p if p is not None else none for p in parsed]
    out = {}
    try:
        for f in KEY_FIELDS:
            vals = np.fromiter(map(attrgetter(f), parsed), dtype=np.int64, count=has.size)
            if has.size == n:
                out[f] = vals
            else:
                out[f] = np.full(n, KEY_DEFAULTS[f], dtype=np.int64)
                out[f][has] = vals
    except OverflowError:
        return None
    return out


def key_args_columns(raws: list[msgspec.Raw], base: int, file_index: np.ndarray | None,
                      repaired: Tally, lens: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Key args of rows ``base`` ...: one batch; on odd values, per 4096 rows, per event where needed."""
    whole = key_args_batch(raws, lens)
    if whole is not None:
        return whole
    parts = []
    for s in range(0, len(raws), CHUNK):
        part = raws[s:s + CHUNK]
        if (batch := key_args_batch(part)) is None:
            batch = key_args_slow(part, base + s, file_index, repaired)
        parts.append(batch)
    return {f: np.concatenate([p[f] for p in parts]) for f in KEY_FIELDS}


def key_args_slow(raws: list[msgspec.Raw], base: int, file_index: np.ndarray | None,
                  repaired: Tally) -> dict[str, np.ndarray]:
    """Per-event decode of args (rows ``base`` ...), coercing ids and counting repairs."""
    n = len(raws)
    out = {f: np.full(n, KEY_DEFAULTS[f], dtype=np.int64) for f in KEY_FIELDS}
    for i, r in enumerate(raws):
        if not len(r):
            continue
        src = int(file_index[base + i]) if file_index is not None else base + i
        try:
            obj = LENIENT.decode(r)
        except msgspec.DecodeError:
            repaired.add("'args' undecodable (kept as text)", src)
            continue
        if not isinstance(obj, dict):
            repaired.add("'args' not an object", src)
            continue
        for f in KEY_FIELDS:
            v = obj.get(KEY_JSON[f])
            if v is None:
                continue
            c = coerce_int(v)
            if c is None:
                repaired.add(f"'{KEY_JSON[f]}' not a 64-bit integer (kept in args, not used for linking)", src)
            else:
                out[f][i] = c
    return out


def is_ascii(buf: bytes | mmap.mmap) -> bool:
    """``buf.isascii()``; a memory map (no isascii) is checked in 16 MiB slices."""
    if isinstance(buf, bytes):
        return buf.isascii()
    step = 1 << 24
    return all(buf[s:s + step].isascii() for s in range(0, len(buf), step))


def validate_utf8(buf: bytes | mmap.mmap) -> None:
    """Raise UnicodeDecodeError if ``buf`` is not UTF-8 (checked in chunks: bounded memory)."""
    dec = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(buf)
    step = 1 << 24
    for s in range(0, len(buf), step):
        dec.decode(view[s:s + step])
    dec.decode(b"", final=True)


INTERNED = ("ph", "cat", "name", "pid", "tid")
_INTERNED_TUPLE = attrgetter(*INTERNED)


#: dtype of every column that ``Columns`` fills row by row
COLUMN_DTYPES: dict[str, Any] = {**{f: np.int32 for f in INTERNED}, **{f: np.int64 for f in KEY_FIELDS},
                                  "ts_int": np.int64, "ts_frac": np.float64, "dur": np.float64,
                                  "args_len": np.int64}


def allocate_columns(n: int, shared: bool = False) -> dict[str, np.ndarray]:
    """Empty columns for ``n`` rows; ``shared``: in one anonymous shared memory map, so that
    forked decode workers write their rows in place (``parallel.py``)."""
    if not shared or n == 0:
        return {f: np.empty(n, dtype=dt) for f, dt in COLUMN_DTYPES.items()}
    sizes = [np.dtype(dt).itemsize * n for dt in COLUMN_DTYPES.values()]
    mm = mmap.mmap(-1, sum(sizes))
    out, at = {}, 0
    for (f, dt), size in zip(COLUMN_DTYPES.items(), sizes):
        out[f] = np.frombuffer(mm, dtype=dt, count=n, offset=at)
        at += size
    return out


class Columns:
    """Columns built chunk by chunk from typed events, so that the structs of the whole
    trace never exist at once.  Strings and pids/tids are interned into int32 codes.

    The numeric columns are allocated once for all ``len(columns["ph"])`` rows of the
    trace; this object fills rows ``base`` ... in order (a decode worker fills a slice).
    """

    def __init__(self, columns: dict[str, np.ndarray], file_index: np.ndarray | None, repaired: Tally,
                 base: int = 0, blobs: Any = None, args_map: ArgsMap | None = None) -> None:
        self.columns = columns
        self.file_index = file_index
        self.repaired = repaired
        self.base = base  #: row number of this object's first row in the whole trace
        self.index: dict[str, Codes] = {f: Codes() for f in INTERNED}
        #: (ph, cat, name, pid, tid) -> code, and per column the code of each distinct tuple
        self.tuples: Codes = Codes()
        self.tuple_luts: dict[str, list[int]] = {f: [] for f in INTERNED}
        self.per_column = False
        #: where the args bytes of each chunk go: a list of bytes, or this process's region
        #: of an :class:`ArgsMap` (anything with ``append``)
        self.blobs: Any = [] if blobs is None else blobs
        #: the map holding every process's args (big traces): the blob is made of it in place
        self.args_map = args_map
        self.flow_id = FlowIds()  #: compact until :meth:`finish` makes it a list
        self.rows = 0

    def add(self, evs: list[Event]) -> None:
        """Fill the next ``len(evs)`` rows with the columns of ``evs``."""
        from .timestamps import parse_timestamps

        n = len(evs)
        lo = self.base + self.rows
        hi = lo + n
        cols = self.columns
        self._intern(evs, lo, hi)
        quoted: list[int] = []
        cols["ts_int"][lo:hi], cols["ts_frac"][lo:hi] = parse_timestamps(list(map(attrgetter("ts"), evs)), quoted)
        if quoted:
            first = lo + quoted[0]
            self.repaired.add(STRING_TS, int(self.file_index[first]) if self.file_index is not None else first,
                              len(quoted))
        cols["dur"][lo:hi] = np.fromiter(map(attrgetter("dur"), evs), dtype=np.float64, count=n)
        raws = list(map(attrgetter("args"), evs))
        cols["args_len"][lo:hi] = np.fromiter(map(len, raws), dtype=np.int64, count=n)
        self.blobs.append(b"".join(raws))
        for f, col in key_args_columns(raws, lo, self.file_index, self.repaired, cols["args_len"][lo:hi]).items():
            cols[f][lo:hi] = col
        self.flow_id.extend(list(map(attrgetter("id"), evs)))
        self.rows += n

    def _intern(self, evs: list[Event], lo: int, hi: int) -> None:
        """Rows ``lo:hi`` of the interned columns, codes in first-seen order per column.

        One dict lookup per event on the (ph, cat, name, pid, tid) tuple, then each column's
        code through a table over the distinct tuples (a few hundred in a real trace): about
        half the time of one lookup per column and event.  The codes are those of interning
        each column on its own: a value first appears in the first event of some tuple, so
        the distinct tuples in first-seen order meet the values in first-seen order too.
        A chunk with many distinct tuples (names unique per event) is interned per column.
        """
        n = hi - lo
        cols = self.columns
        seen = len(self.tuples)
        if self.per_column or not n:
            for f in INTERNED:
                # codes in first-seen order; C-level loop, Python runs only for a new value
                cols[f][lo:hi] = np.fromiter(map(self.index[f].__getitem__, map(attrgetter(f), evs)),
                                             dtype=np.int32, count=n)
            return
        codes = np.fromiter(map(self.tuples.__getitem__, map(_INTERNED_TUPLE, evs)), dtype=np.int32, count=n)
        new = list(islice(self.tuples, seen, None))
        for j, f in enumerate(INTERNED):
            index = self.index[f]
            lut = self.tuple_luts[f]
            lut.extend(map(index.__getitem__, map(itemgetter(j), new)))
            cols[f][lo:hi] = np.asarray(lut, dtype=np.int32)[codes]
        if len(new) * 4 > n:  # mostly new tuples: the per-column lookups are cheaper
            self.per_column = True

    def add_spans(self, text: Any, spans: list[tuple[int, int]], progress: DecodeProgress | None = None) -> None:
        """Typed-decode the events of each span of ``text`` (the bytes of a run of whole
        events of the events array, commas between them) and fill the next rows;
        ``progress(fraction of spans done)`` after each.

        Raises msgspec.DecodeError or UnicodeDecodeError when the fast path refuses them."""
        view = memoryview(text)
        for k, (a, b) in enumerate(spans):
            evs = msgspec.json.decode(b"".join((b"[", view[a:b], b"]")), type=list[Event])
            self.add(evs)
            del evs
            if progress is not None:
                progress((k + 1) / len(spans))

    def export(self) -> dict[str, Any]:
        """What a decode worker sends back (``parallel.py``); its rows are already in the
        shared columns, with interned codes of its own (``values``)."""
        return {"values": {f: list(self.index[f]) for f in INTERNED}, "blobs": self.blobs,
                "flow_id": self.flow_id, "rows": self.rows,
                "repaired": (dict(self.repaired.counts), self.repaired.first)}

    def absorb(self, part: dict[str, Any]) -> None:
        """Take over the next rows, filled by a worker that sent ``part`` (its :meth:`export`)."""
        lo = self.base + self.rows
        hi = lo + part["rows"]
        for f in INTERNED:
            values = part["values"][f]
            # the worker's codes -> this object's codes (new values get the next codes,
            # in the worker's first-seen order: the same codes a serial decode gives)
            lut = np.fromiter(map(self.index[f].__getitem__, values), dtype=np.int32, count=len(values))
            if hi > lo:
                self.columns[f][lo:hi] = lut[self.columns[f][lo:hi]]
        if isinstance(part["blobs"], tuple):  # ("region", start, used): written into the args map
            self.args_map.written(part["blobs"][1], part["blobs"][2])
        else:
            self.blobs.extend(part["blobs"])
        self.flow_id.absorb(part["flow_id"])
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
        blob = self.args_map.finish() if self.args_map is not None else join_releasing(self.blobs)
        if not is_ascii(blob):
            validate_utf8(blob)  # args stay raw; make sure decoding them later cannot fail
        col = {f: Interned(c[f], list(self.index[f])) for f in INTERNED}
        return DecodedEvents(
            **col, ts_int=c["ts_int"], ts_frac=c["ts_frac"], dur=c["dur"],
            flow_id=self.flow_id.to_list(), args_blob=blob, args_offsets=offsets,
            key_args={f: c[f] for f in KEY_FIELDS}, file_index=self.file_index, n_elements=n)


class ArgsRegion:
    """Where one process's args bytes go: appended in order into ``[start, end)`` of an
    :class:`ArgsMap`'s shared map (takes the place of the ``blobs`` list of its ``Columns``)."""

    def __init__(self, mm: mmap.mmap, start: int, size: int) -> None:
        self.mm, self.start, self.end, self.at = mm, start, start + size, start

    def append(self, data: bytes) -> None:
        n = len(data)
        if self.at + n > self.end:  # pragma: no cover - args are a part of the raw events
            raise ValueError("args bytes exceed the raw events they come from")
        self.mm[self.at:self.at + n] = data
        self.at += n

    def describe(self) -> tuple[str, int, int]:
        return ("region", self.start, self.at - self.start)


class ArgsMap:
    """The args bytes of a big trace's events, written where they end up: one anonymous
    shared map (forked decode workers write into it too: :mod:`.parallel`) with a region per
    process in row order, each as big as its events' raw text (args are a part of it; pages
    never written cost nothing), closed up at the end by a few ``memmove`` calls.  The
    pieces and their join never exist at once."""

    def __init__(self, sizes: list[int]) -> None:
        self.mm = mmap.mmap(-1, max(1, sum(sizes)))
        starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).tolist()
        self.regions = [ArgsRegion(self.mm, a, n) for a, n in zip(starts, sizes)]

    def written(self, start: int, used: int) -> None:
        """The region at ``start`` holds ``used`` bytes (written by another process)."""
        region = next(r for r in self.regions if r.start == start)
        if used > region.end - region.start:  # pragma: no cover - a worker stays in its region
            raise ValueError("a decode worker wrote past its region")
        region.at = start + used

    def finish(self) -> bytes | mmap.mmap:
        """The blob: every region's bytes in order, moved together in place (bytes when small,
        as :func:`join_releasing` gives)."""
        write = 0
        for r in self.regions:
            used = r.at - r.start
            if used and r.start > write:
                self.mm.move(write, r.start, used)
            write += used
        mm, self.mm, self.regions = self.mm, None, []
        if write < (1 << 24):
            out = mm[:write]
            mm.close()
            return out
        mm.resize(write)
        return mm


def join_releasing(pieces: list[bytes]) -> bytes | mmap.mmap:
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


def cut_args(ev: DecodedEvents, cut: np.ndarray) -> Any:
    """The args blob without the args of rows ``cut`` (metadata events: a few dozen).

    A blob in an anonymous memory map (every big trace) is compacted in place: a few
    ``memmove`` calls instead of two copies of the whole blob (52 ms and 2 x 180 MB on a
    2M-event trace).  It is then ``ev``'s no longer: ``ev.args_blob`` becomes None."""
    offs = ev.args_offsets
    spans = zip(offs[cut].tolist(), offs[cut + 1].tolist())
    blob = ev.args_blob
    if isinstance(blob, mmap.mmap):
        write = read = 0
        for a, b in spans:
            if a > read:
                blob.move(write, read, a - read)
                write += a - read
            read = b
        if len(blob) > read:
            blob.move(write, read, len(blob) - read)
            write += len(blob) - read
        ev.args_blob = None
        if not write:
            return b""
        try:
            blob.resize(write)
        except (BufferError, OSError, ValueError):  # pragma: no cover - a view of it still exists
            return blob[:write]
        return blob
    pieces = []
    at = 0
    for a, b in spans:
        pieces.append(blob[at:a])
        at = b
    pieces.append(blob[at:])
    return b"".join(pieces)
