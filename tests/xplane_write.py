"""Write XPlane files (``*.xplane.pb``) for tests and benchmarks: the protobuf wire format encoded
by hand, with the field numbers of ``../shared/FORMATS.md`` ("XPlane") -- no tracetui, no
protobuf library.  Reads with :mod:`xplane_walk`'s ``fields``.

    from xplane_write import rewrite, tile
    scaled = rewrite(data, event=lambda plane, line, fields, stat_names: ...)   # change events
    big = tile(data, copies=1000)        # every line's events repeated, shifted in time and ids

Both keep every other field as it was (re-encoded in order).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from xplane_walk import (
    EVENT_OFFSET_PS,
    EVENT_STATS,
    FIXED32,
    FIXED64,
    LEN,
    LINE_EVENTS,
    LINE_NAME,
    PLANE_LINES,
    PLANE_NAME,
    PLANE_STAT_METADATA,
    SMETA_NAME,
    SPACE_PLANES,
    STAT_INT64,
    STAT_METADATA_ID,
    STAT_UINT64,
    VARINT,
    fields,
)

Field = tuple[int, int, object]  # (number, wire type, int or bytes), as xplane_walk.fields gives


def varint(v: int) -> bytes:
    """A varint (negative values as 64-bit two's complement)."""
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(num: int, wire: int) -> bytes:
    return varint(num << 3 | wire)


def encode(flds: list[Field]) -> bytes:
    """The bytes of a message with these fields, in order."""
    out = []
    for num, wire, value in flds:
        if wire == VARINT:
            out.append(key(num, wire) + varint(value))
        elif wire == LEN:
            out.append(key(num, wire) + varint(len(value)) + value)
        elif wire == FIXED64:
            out.append(key(num, wire) + (value if isinstance(value, bytes) else struct.pack("<Q", value)))
        elif wire == FIXED32:
            out.append(key(num, wire) + (value if isinstance(value, bytes) else struct.pack("<I", value)))
        else:
            raise ValueError(f"wire type {wire}")
    return b"".join(out)


def _stat_names(plane: list[Field]) -> dict[int, str]:
    out = {}
    for num, _, v in plane:
        if num == PLANE_STAT_METADATA:
            k, name = 0, ""
            for en, _, ev in fields(v):
                if en == 1:
                    k = ev
                elif en == 2:
                    name = next((x.decode() for n, _, x in fields(ev) if n == SMETA_NAME), "")
            out[k] = name
    return out


def _text(plane_or_line: list[Field], num: int) -> str:
    return next((v.decode("utf-8", "replace") for n, _, v in plane_or_line if n == num), "")


EventFn = Callable[[str, str, list[Field], dict[int, str]], "list[Field] | None"]


def rewrite(data: bytes, event: EventFn | None = None) -> bytes:
    """``data`` (an XSpace) with each event's fields replaced by ``event(plane name, line name,
    fields, stat names by id)`` (None: the event is dropped)."""
    out = []
    for num, wire, value in fields(data):
        if num != SPACE_PLANES or event is None:
            out.append((num, wire, value))
            continue
        plane = list(fields(value))
        names, pname = _stat_names(plane), _text(plane, PLANE_NAME)
        new_plane = []
        for pn, pw, pv in plane:
            if pn == PLANE_LINES:
                line = list(fields(pv))
                lname = _text(line, LINE_NAME)
                new_line = []
                for ln, lw, lv in line:
                    if ln == LINE_EVENTS:
                        changed = event(pname, lname, list(fields(lv)), names)
                        if changed is None:
                            continue
                        lv = encode(changed)
                    new_line.append((ln, lw, lv))
                pv = encode(new_line)
            new_plane.append((pn, pw, pv))
        out.append((num, wire, encode(new_plane)))
    return encode(out)


def tile(data: bytes, copies: int, *, id_stats: tuple[str, ...] = ("correlation_id",)) -> bytes:
    """Every line's events repeated ``copies`` times: copy ``i`` shifted by ``i`` times the span of
    the whole space (plus 1 ms) and its ``id_stats`` values by ``i`` times (their largest + 1), so
    links stay one to one.  Planes without lines are kept once."""
    spans, top = [], 0
    for num, _, value in fields(data):
        if num != SPACE_PLANES:
            continue
        plane = list(fields(value))
        names = _stat_names(plane)
        for pn, _, pv in plane:
            if pn != PLANE_LINES:
                continue
            line = list(fields(pv))
            ts = next((v for n, _, v in line if n == 3), 0)
            for ln, _, lv in line:
                if ln == LINE_EVENTS:
                    ev = list(fields(lv))
                    off = next((v for n, _, v in ev if n == EVENT_OFFSET_PS), 0)
                    dur = next((v for n, _, v in ev if n == 3), 0)
                    spans.append((ts * 1000 + off, ts * 1000 + off + dur))
                    for sn, _, sv in ev:
                        if sn == EVENT_STATS:
                            st = list(fields(sv))
                            mid = next((v for n, _, v in st if n == STAT_METADATA_ID), 0)
                            if names.get(mid) in id_stats:
                                top = max(top, max((v for n, _, v in st if n in (STAT_UINT64, STAT_INT64)), default=0))
    period = (max(e for _, e in spans) - min(s for s, _ in spans) if spans else 0) + 1_000_000_000
    step = top + 1
    out = []
    for num, wire, value in fields(data):
        if num != SPACE_PLANES:
            out.append((num, wire, value))
            continue
        plane = list(fields(value))
        names = _stat_names(plane)
        ids = {k for k, nm in names.items() if nm in id_stats}
        new_plane = []
        for pn, pw, pv in plane:
            if pn == PLANE_LINES:
                pv = _tiled_line(list(fields(pv)), copies, period, step, ids)
            new_plane.append((pn, pw, pv))
        out.append((num, wire, encode(new_plane)))
    return encode(out)


def _tiled_line(line: list[Field], copies: int, period: int, step: int, ids: set[int]) -> bytes:
    """A line's bytes with its events repeated (see :func:`tile`): each event is cut once into
    the bytes before its offset, its offset, the bytes between and its id stats' values."""
    head = encode([f for f in line if f[0] != LINE_EVENTS])
    templates = []
    for n, _, lv in line:
        if n != LINE_EVENTS:
            continue
        parts: list = []  # bytes, or ("off", value), or ("id", num, value, stat prefix fields)
        for en, ew, ev in fields(lv):
            if en == EVENT_OFFSET_PS:
                parts.append(("off", ev))
            elif en == EVENT_STATS:
                st = list(fields(ev))
                mid = next((v for sn, _, v in st if sn == STAT_METADATA_ID), None)
                if mid in ids:
                    parts.append(("id", st))
                else:
                    parts.append(encode([(en, ew, ev)]))
            else:
                parts.append(encode([(en, ew, ev)]))
        templates.append(parts)
    out = [head]
    off_key, stat_key, ev_key = key(EVENT_OFFSET_PS, VARINT), key(EVENT_STATS, LEN), key(LINE_EVENTS, LEN)
    for i in range(copies):
        shift, bump = i * period, i * step
        for parts in templates:
            body = []
            for p in parts:
                if isinstance(p, bytes):
                    body.append(p)
                elif p[0] == "off":
                    body.append(off_key + varint(p[1] + shift))
                else:
                    st = encode([(sn, sw, sv + bump if sn in (STAT_UINT64, STAT_INT64) else sv) for sn, sw, sv in p[1]])
                    body.append(stat_key + varint(len(st)) + st)
            b = b"".join(body)
            out.append(ev_key + varint(len(b)) + b)
    return b"".join(out)
