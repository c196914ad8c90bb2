"""A small protobuf wire-format walker for XPlane files (``*.xplane.pb``), for tests.

Independent of tracetui and of any protobuf library: it reads the wire format (varints,
fixed 32/64-bit values, length-delimited fields) and knows only the field numbers of
``xplane.proto`` written down in ``../shared/FORMATS.md`` ("XPlane").  Tests count what an
XPlane file holds with it (``tests/core/test_sample_h200.py``); issue 38 compares tracetui's
XPlane reader to it.

    from xplane_walk import read_xspace
    space = read_xspace(path)            # an XSpace: planes, each with its lines and events
    space.plane("/device:GPU:0").lines   # XLine: name, timestamp_ns, events (XEvent)

Bad bytes raise ``ValueError`` naming the offset; nothing is guessed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

# wire types
VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5

# field numbers (../shared/FORMATS.md, "XPlane")
SPACE_PLANES, SPACE_ERRORS, SPACE_WARNINGS, SPACE_HOSTNAMES = 1, 2, 3, 4
PLANE_ID, PLANE_NAME, PLANE_LINES, PLANE_EVENT_METADATA, PLANE_STAT_METADATA, PLANE_STATS = 1, 2, 3, 4, 5, 6
LINE_ID, LINE_NAME, LINE_TIMESTAMP_NS, LINE_EVENTS, LINE_DURATION_PS = 1, 2, 3, 4, 9
LINE_DISPLAY_ID, LINE_DISPLAY_NAME = 10, 11
EVENT_METADATA_ID, EVENT_OFFSET_PS, EVENT_DURATION_PS, EVENT_STATS, EVENT_NUM_OCCURRENCES = 1, 2, 3, 4, 5
EMETA_ID, EMETA_NAME, EMETA_METADATA, EMETA_DISPLAY_NAME, EMETA_STATS, EMETA_CHILD_ID = 1, 2, 3, 4, 5, 6
STAT_METADATA_ID, STAT_DOUBLE, STAT_UINT64, STAT_INT64, STAT_STR, STAT_BYTES, STAT_REF = 1, 2, 3, 4, 5, 6, 7
SMETA_ID, SMETA_NAME = 1, 2
MAP_KEY, MAP_VALUE = 1, 2


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    start = pos
    while True:
        if pos >= len(buf):
            raise ValueError(f"varint cut short at byte {start}")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError(f"varint longer than 10 bytes at byte {start}")


def fields(buf: bytes, base: int = 0) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of each field of one message: ints for varints and
    fixed values (little-endian, unsigned), bytes for length-delimited ones."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wire = key >> 3, key & 7
        if wire == VARINT:
            value, pos = _varint(buf, pos)
        elif wire == FIXED64:
            value, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wire == FIXED32:
            value, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        elif wire == LEN:
            n, pos = _varint(buf, pos)
            if pos + n > len(buf):
                raise ValueError(f"field {num} at byte {base + pos} runs {pos + n - len(buf)} bytes past its message")
            value, pos = bytes(buf[pos:pos + n]), pos + n
        else:
            raise ValueError(f"wire type {wire} (field {num}) at byte {base + pos}")
        if pos > len(buf):
            raise ValueError(f"field {num} cut short at byte {base + pos}")
        yield num, wire, value


def _signed(v: int) -> int:
    """An int64 written as a varint (two's complement over 64 bits)."""
    return v - (1 << 64) if v >= 1 << 63 else v


@dataclass
class XEvent:
    metadata_id: int = 0
    offset_ps: int = 0
    duration_ps: int = 0
    num_occurrences: int = 0
    stats: list[tuple[int, object]] = field(default_factory=list)  #: (stat metadata id, value)


@dataclass
class XLine:
    id: int = 0
    name: str = ""
    display_name: str = ""
    timestamp_ns: int = 0
    duration_ps: int = 0
    events: list[XEvent] = field(default_factory=list)


@dataclass
class XPlane:
    id: int = 0
    name: str = ""
    lines: list[XLine] = field(default_factory=list)
    event_names: dict[int, str] = field(default_factory=dict)  #: event metadata id -> name
    event_display_names: dict[int, str] = field(default_factory=dict)
    stat_names: dict[int, str] = field(default_factory=dict)  #: stat metadata id -> name
    stats: list[tuple[int, object]] = field(default_factory=list)  #: the plane's own stats

    def line(self, name: str) -> XLine:
        return next(ln for ln in self.lines if ln.name == name)

    def event_name(self, ev: XEvent) -> str:
        return self.event_names.get(ev.metadata_id, "")

    def stat(self, ev: XEvent | None, name: str):
        """The value of the event's (None: the plane's own) stat called ``name`` (a ref_value read
        as its string), else None."""
        for mid, value in (self.stats if ev is None else ev.stats):
            if self.stat_names.get(mid) == name:
                return value
        return None


@dataclass
class XSpace:
    planes: list[XPlane] = field(default_factory=list)
    hostnames: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def plane(self, name: str) -> XPlane:
        return next(p for p in self.planes if p.name == name)


def _text(v: int | bytes) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _stat(buf: bytes) -> tuple[int, object]:
    mid, value = 0, None
    for num, wire, v in fields(buf):
        if num == STAT_METADATA_ID:
            mid = v
        elif num == STAT_DOUBLE and wire == FIXED64:
            value = struct.unpack("<d", v.to_bytes(8, "little"))[0]
        elif num == STAT_UINT64:
            value = v
        elif num == STAT_INT64:
            value = _signed(v)
        elif num == STAT_STR:
            value = _text(v)
        elif num == STAT_BYTES:
            value = v
        elif num == STAT_REF:
            value = ("ref", v)
    return mid, value


def _event(buf: bytes) -> XEvent:
    ev = XEvent()
    for num, _, v in fields(buf):
        if num == EVENT_METADATA_ID:
            ev.metadata_id = v
        elif num == EVENT_OFFSET_PS:
            ev.offset_ps = _signed(v)
        elif num == EVENT_NUM_OCCURRENCES:
            ev.num_occurrences = v
        elif num == EVENT_DURATION_PS:
            ev.duration_ps = _signed(v)
        elif num == EVENT_STATS:
            ev.stats.append(_stat(v))
    return ev


def _line(buf: bytes) -> XLine:
    ln = XLine()
    for num, _, v in fields(buf):
        if num == LINE_ID:
            ln.id = _signed(v)
        elif num == LINE_NAME:
            ln.name = _text(v)
        elif num == LINE_DISPLAY_NAME:
            ln.display_name = _text(v)
        elif num == LINE_TIMESTAMP_NS:
            ln.timestamp_ns = _signed(v)
        elif num == LINE_DURATION_PS:
            ln.duration_ps = _signed(v)
        elif num == LINE_EVENTS:
            ln.events.append(_event(v))
    return ln


def _map_entry(buf: bytes) -> tuple[int, bytes]:
    key, value = 0, b""
    for num, _, v in fields(buf):
        if num == MAP_KEY:
            key = _signed(v)
        elif num == MAP_VALUE:
            value = v
    return key, value


def _named(buf: bytes, id_field: int, name_field: int, display_field: int | None = None) -> tuple[int, str, str]:
    mid, name, display = 0, "", ""
    for num, _, v in fields(buf):
        if num == id_field:
            mid = _signed(v)
        elif num == name_field:
            name = _text(v)
        elif display_field is not None and num == display_field:
            display = _text(v)
    return mid, name, display


def _plane(buf: bytes) -> XPlane:
    pl = XPlane()
    for num, _, v in fields(buf):
        if num == PLANE_ID:
            pl.id = _signed(v)
        elif num == PLANE_NAME:
            pl.name = _text(v)
        elif num == PLANE_LINES:
            pl.lines.append(_line(v))
        elif num == PLANE_EVENT_METADATA:
            key, value = _map_entry(v)
            _, name, display = _named(value, EMETA_ID, EMETA_NAME, EMETA_DISPLAY_NAME)
            pl.event_names[key] = name
            if display:
                pl.event_display_names[key] = display
        elif num == PLANE_STAT_METADATA:
            key, value = _map_entry(v)
            pl.stat_names[key] = _named(value, SMETA_ID, SMETA_NAME)[1]
        elif num == PLANE_STATS:
            pl.stats.append(_stat(v))

    # a ref_value names a stat metadata entry whose name is the string
    def resolved(stats: list[tuple[int, object]]) -> list[tuple[int, object]]:
        return [(mid, pl.stat_names.get(val[1], "") if isinstance(val, tuple) else val) for mid, val in stats]

    pl.stats = resolved(pl.stats)
    for ln in pl.lines:
        for ev in ln.events:
            ev.stats = resolved(ev.stats)
    return pl


def parse_xspace(data: bytes) -> XSpace:
    space = XSpace()
    for num, _, v in fields(data):
        if num == SPACE_PLANES:
            space.planes.append(_plane(v))
        elif num == SPACE_HOSTNAMES:
            space.hostnames.append(_text(v))
        elif num == SPACE_ERRORS:
            space.errors.append(_text(v))
        elif num == SPACE_WARNINGS:
            space.warnings.append(_text(v))
    return space


def read_xspace(path: str | Path) -> XSpace:
    return parse_xspace(Path(path).read_bytes())
