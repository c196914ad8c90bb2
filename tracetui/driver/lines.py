"""Driver-call trace bytes -> the fields of every JSON object line, as columns, with every
line that is not one counted.

Only lines that are JSON objects are events.  The object lines are found with numpy (no
Python step per line), joined chunk by chunk into a JSON array and decoded by msgspec into
:class:`~tracetui.driver.schema.Line` structs, whose fields go straight into columns
(:class:`~tracetui.driver.fields.FieldColumns`) before the next chunk is decoded: a million
lines never exist as a million structs at once.  A chunk that does not decode as a whole is
decoded line by line, so one bad line costs only itself.  What is skipped is counted by
reason, with the number of the first such line (1-based, as editors count).
"""

from __future__ import annotations

import gc
import logging
import os
import pickle
from dataclasses import dataclass

import msgspec
import numpy as np

from ..kineto.parallel import decode_workers
from .fields import FieldColumns, merge_fields
from .schema import Line
from .sniff import BAD_JSON, TOO_DEEP, as_object
from .trace import LineStats

log = logging.getLogger(__name__)

_CHUNK = 1 << 17  #: lines decoded at once
_SMALL = 4096  #: a chunk that fails is retried in pieces of this many lines, then line by line
_DECODER = msgspec.json.Decoder(list[Line])
_ONE = msgspec.json.Decoder(Line)

#: reasons a non-blank line is not an event (shown in the warnings with their counts)
NOT_JSON = "text lines (banners, heartbeats, summaries, map dumps)"
CUT_LAST = "a last line cut short (the tracer was stopped while writing)"
#: fields that did not have the documented type on an object line (the line is kept)
BAD_FIELDS = "fields of an unexpected type (left out of the line's event)"


class PartialLine(Line, gc=False):
    """A line kept without the fields that did not have the documented type."""


@dataclass
class DecodedLines:
    """The JSON object lines of a file: line ``i`` is ``data[start[i]:end[i]]``, number
    ``line_no[i]`` in the file; ``fields`` holds its decoded fields (one column each)."""

    data: bytes
    start: np.ndarray  #: int64 byte offsets
    end: np.ndarray
    line_no: np.ndarray  #: int64, 1-based
    fields: dict[str, np.ndarray | list]
    stats: LineStats

    def __len__(self) -> int:
        return int(self.start.size)

    def raw(self, i: int) -> bytes:
        return self.data[int(self.start[i]):int(self.end[i])]

    def raw_many(self, rows: np.ndarray) -> list[bytes]:
        """The bytes of several lines (one C-level slice each)."""
        return list(map(self.data.__getitem__, map(slice, self.start[rows].tolist(), self.end[rows].tolist())))


def _line_bounds(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) byte offsets of every line (end excludes the newline and a CR before it)."""
    nl = np.flatnonzero(arr == 10)
    starts = np.concatenate(([0], nl + 1)).astype(np.int64)
    ends = np.concatenate((nl, [arr.size])).astype(np.int64)
    if starts[-1] == arr.size:  # the file ends with a newline: no line after it
        starts, ends = starts[:-1], ends[:-1]
    cr = (ends > starts) & (arr[np.maximum(ends - 1, 0)] == 13)
    return starts, ends - cr


def decode_lines(data: bytes) -> DecodedLines:
    """Split ``data`` into lines and decode the JSON object lines (see the module docstring)."""
    stats = LineStats()
    if not data:
        z = np.zeros(0, np.int64)
        return DecodedLines(data, z, z, z, FieldColumns().finish(), stats)
    arr = np.frombuffer(data, dtype=np.uint8)
    starts, ends = _line_bounds(arr)
    nonempty = ends > starts
    first = np.where(nonempty, arr[np.minimum(starts, arr.size - 1)], 0)
    is_obj = nonempty & (first == ord("{"))
    # lines that begin with blanks: look at their first other byte (rare: one step each)
    for i in np.flatnonzero(nonempty & np.isin(first, [32, 9])).tolist():
        text = data[starts[i]:ends[i]].lstrip(b" \t")
        if not text:
            nonempty[i] = False
        elif text[:1] == b"{":
            is_obj[i] = True
            starts[i] = ends[i] - len(text)
    stats.total = int(nonempty.sum())
    text_lines = np.flatnonzero(nonempty & ~is_obj)
    if text_lines.size:
        stats.skip(NOT_JSON, int(text_lines[0]) + 1, int(text_lines.size))
    obj = np.flatnonzero(is_obj)
    s_obj, e_obj = starts[obj], ends[obj]
    has_cr = b"\r" in data
    last_cut = obj.size and int(obj[-1]) == starts.size - 1 and not data.endswith(b"\n")
    bad = _not_utf8(arr, data, s_obj, e_obj)
    if bad.size:  # not JSON: left out before decoding (msgspec skips unknown keys unchecked)
        for k in bad.tolist():
            stats.skip(CUT_LAST if last_cut and k == obj.size - 1 else BAD_JSON, int(obj[k]) + 1)
        last_cut = last_cut and int(bad[-1]) != obj.size - 1
        ok = np.ones(obj.size, dtype=bool)
        ok[bad] = False
        obj, s_obj, e_obj = obj[ok], s_obj[ok], e_obj[ok]
    part = _decode_range(data, obj, s_obj, e_obj, has_cr, last_cut) if decode_workers(obj.size) <= 1 else \
        _decode_parallel(data, obj, s_obj, e_obj, has_cr, last_cut, decode_workers(obj.size))
    keep, skipped, bad_fields, fields = part
    for reason, line_no in skipped:
        stats.skip(reason, line_no)
    stats.bad_fields += bad_fields
    stats.json = int(keep.sum())
    return DecodedLines(data, s_obj[keep], e_obj[keep], obj[keep].astype(np.int64) + 1, fields, stats)


_Part = tuple[np.ndarray, list[tuple[str, int]], int, dict]


def _decode_range(data: bytes, obj: np.ndarray, s_obj: np.ndarray, e_obj: np.ndarray, has_cr: bool,
                  last_cut: bool) -> _Part:
    """Decode the object lines ``obj`` (line indices) into columns: (which were kept, the
    others' (reason, line number), lines kept without a bad field, the columns)."""
    cols = FieldColumns()
    keep = np.ones(obj.size, dtype=bool)
    skipped: list[tuple[str, int]] = []
    bad_fields = 0
    was = gc.isenabled()
    gc.disable()  # many small structs per chunk: the cyclic GC would rescan them again and again
    try:
        for c0 in range(0, obj.size, _CHUNK):
            c1 = min(c0 + _CHUNK, obj.size)
            decoded, whole = _decode_runs(data, obj[c0:c1], s_obj[c0:c1], e_obj[c0:c1], has_cr)
            if not whole:  # some lines are not events, or lost a field: look at each
                good = []
                for k, row in enumerate(decoded):
                    if isinstance(row, Line):
                        good.append(row)
                        bad_fields += type(row) is PartialLine
                        continue
                    keep[c0 + k] = False
                    reason = CUT_LAST if (row == BAD_JSON and last_cut and c0 + k == obj.size - 1) else row
                    skipped.append((reason, int(obj[c0 + k]) + 1))
                decoded = good
            cols.add(decoded)
            del decoded
    finally:
        if was:
            gc.enable()
    return keep, skipped, bad_fields, cols.finish()


def _decode_parallel(data: bytes, obj: np.ndarray, s_obj: np.ndarray, e_obj: np.ndarray, has_cr: bool,
                     last_cut: bool, workers: int) -> _Part:
    """:func:`_decode_range` over ``workers`` slices of the lines: forked workers decode all
    but the first slice (the file's bytes are shared copy-on-write) and send back their
    columns; the parent decodes the first meanwhile.  A worker that fails costs only time:
    its slice is decoded again here."""
    step = -(-obj.size // workers)
    slices = [(a, min(a + step, obj.size)) for a in range(0, obj.size, step)]
    children = []
    for a, b in slices[1:]:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: decode, send, leave without cleaning up the parent's state
            code = 1
            try:
                os.close(r)
                blob = pickle.dumps(_decode_range(data, obj[a:b], s_obj[a:b], e_obj[a:b], has_cr,
                                                  last_cut and b == obj.size), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(w, "wb") as fh:
                    fh.write(blob)
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        children.append((pid, r, a, b))
    parts = [_decode_range(data, obj[:slices[0][1]], s_obj[:slices[0][1]], e_obj[:slices[0][1]], has_cr,
                           last_cut and slices[0][1] == obj.size)]
    for pid, r, a, b in children:
        with os.fdopen(r, "rb") as fh:
            blob = fh.read()
        _, status = os.waitpid(pid, 0)
        try:
            part = pickle.loads(blob) if status == 0 else None
        except (pickle.UnpicklingError, EOFError, ValueError):
            part = None
        if part is None:
            log.warning("driver decode worker %d failed (status %s): its lines are decoded here", pid, status)
            part = _decode_range(data, obj[a:b], s_obj[a:b], e_obj[a:b], has_cr, last_cut and b == obj.size)
        parts.append(part)
    keep = np.concatenate([p[0] for p in parts])
    skipped = [x for p in parts for x in p[1]]
    return keep, skipped, sum(p[2] for p in parts), merge_fields([p[3] for p in parts])


def _decode_runs(data: bytes, idx: np.ndarray, start: np.ndarray, end: np.ndarray,
                 has_cr: bool) -> tuple[list[Line | str], bool]:
    """Decode the object lines ``idx`` (line numbers, ascending) of one chunk.

    Lines that follow each other in the file (no text line between) are one slice of the
    file with its newlines turned into commas: one copy per run of lines instead of one
    object per line.  Files with CR line ends take the line-by-line path."""
    if has_cr or not idx.size:
        return _decode_chunk(list(map(data.__getitem__, map(slice, start.tolist(), end.tolist()))))
    breaks = np.flatnonzero(np.diff(idx) != 1) + 1
    lo = np.concatenate(([0], breaks))
    hi = np.concatenate((breaks, [idx.size]))
    body = b",".join(data[int(start[a]):int(end[b - 1])].replace(b"\n", b",") for a, b in zip(lo.tolist(), hi.tolist()))
    try:
        rows = _DECODER.decode(b"[" + body + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return _decode_chunk(list(map(data.__getitem__, map(slice, start.tolist(), end.tolist()))))
    if len(rows) != idx.size:  # a line held two objects, or none: go line by line
        return _decode_chunk(list(map(data.__getitem__, map(slice, start.tolist(), end.tolist()))))
    return rows, True


def _not_utf8(arr: np.ndarray, data: bytes, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Indices of the lines ``data[start[i]:end[i]]`` that are not valid UTF-8 (JSON text must
    be): only lines holding a byte >= 0x80 are checked, one by one (none in ASCII traces)."""
    if not start.size or int(arr.max()) < 0x80:
        return np.zeros(0, np.int64)
    high = np.flatnonzero(arr >= 0x80)
    line = np.searchsorted(start, high, side="right") - 1
    inside = (line >= 0) & (high < end[np.maximum(line, 0)])
    out = []
    for i in np.unique(line[inside]).tolist():
        try:
            data[int(start[i]):int(end[i])].decode("utf-8")
        except UnicodeDecodeError:
            out.append(i)
    return np.asarray(out, dtype=np.int64)


def _decode_chunk(raw: list[bytes]) -> tuple[list[Line | str], bool]:
    """Decode ``raw`` lines as one array; on failure in smaller pieces, then one by one.
    Returns (one Line or the reason it is not an event per line, whether every line
    decoded whole as a Line)."""
    if not raw:
        return [], True
    try:
        return _DECODER.decode(b"[" + b",".join(raw) + b"]"), True
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
        if len(raw) > _SMALL:
            out: list[Line | str] = []
            for s in range(0, len(raw), _SMALL):
                out.extend(_decode_chunk(raw[s:s + _SMALL])[0])
            return out, False
    return [_decode_one(b) for b in raw], False


def _decode_one(line: bytes) -> Line | str:
    """One line: a Line, or the reason it is not an event.  A field of the wrong type is
    left out (``tid`` given as a string is converted where it holds a number)."""
    try:
        return _ONE.decode(line)
    except msgspec.ValidationError:
        pass
    except (msgspec.DecodeError, UnicodeDecodeError):
        return BAD_JSON
    except RecursionError:
        return TOO_DEEP
    obj = as_object(line)
    if isinstance(obj, str):
        return obj
    good = {}
    for k, v in obj.items():
        if k not in Line.__struct_fields__:
            continue
        try:
            msgspec.convert({k: v}, Line, strict=False)
        except msgspec.ValidationError:
            continue
        good[k] = v
    cls = PartialLine if len(good) < sum(1 for k in obj if k in Line.__struct_fields__) else Line
    return msgspec.convert(good, cls, strict=False)
