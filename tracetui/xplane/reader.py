"""Read an XSpace (the bytes of a ``*.xplane.pb``) into columns: its planes, their lines, every
event of every line and every stat of every event, without a Python object per event.

The few big messages (the space, each plane, each line) are walked field by field
(:func:`~.wire.walk`: a line's events are one repeated field, a chain of lengths); the many
small ones -- the metadata entries of each plane, every event, every stat -- are read with numpy
across all of them at once (:func:`~.wire.scan`).  Names (event and stat metadata) become
Python strings once per metadata entry; the events and stats keep integer codes into those
tables.  Strings of stats stay where they are in the file (offset and length) until the builder
writes them.  Bytes that are not an XSpace raise :class:`~.wire.WireError` with the offset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..io.formats import Progress, no_progress
from . import schema as s
from .wire import Fields, WireError, scan, signed, walk


@dataclass
class Plane:
    """One XPlane: ``index`` in the file, ``id``, ``name``; its own stats by name (few: device
    properties, process id); its metadata tables as sorted ids and codes into the space's
    :attr:`Space.names` / :attr:`Space.stat_names`; ``meta_stats``: event metadata entries that
    carry stats of their own (not read)."""

    index: int
    id: int
    name: str
    stats: dict[str, Any]
    event_ids: np.ndarray
    event_codes: np.ndarray
    stat_ids: np.ndarray
    stat_codes: np.ndarray
    meta_stats: int = 0


@dataclass
class Lines:
    """Every line of every plane, in file order: ``plane`` (int32 index), ``id`` (int64),
    ``name`` and ``display`` (display_name, "" when none), ``ts_ns`` (int64 ns: the start its
    events' offsets count from)."""

    plane: np.ndarray
    id: np.ndarray
    name: list[str]
    display: list[str]
    ts_ns: np.ndarray

    @property
    def n(self) -> int:
        return int(self.id.size)


@dataclass
class Events:
    """Every event of every line, in file order (a line's events together): ``line`` (int32),
    ``name`` (int32 into :attr:`Space.names`, -1: its metadata id has no entry), ``offset_ps``,
    ``dur_ps`` (int64 picoseconds), ``occurrences`` (int64: an aggregated event's count; such an
    event has no time), ``first_stat`` (int64, len n + 1: event i's stats are rows
    ``first_stat[i]:first_stat[i + 1]`` of :class:`Stats`)."""

    line: np.ndarray
    name: np.ndarray
    offset_ps: np.ndarray
    dur_ps: np.ndarray
    occurrences: np.ndarray
    first_stat: np.ndarray

    @property
    def n(self) -> int:
        return int(self.line.size)


@dataclass
class Stats:
    """Every stat of every event, by event, in file order within an event: ``event`` (int64),
    ``key`` (int32 into :attr:`Space.stat_names`, -1: unknown metadata id), ``kind`` (uint8
    ``schema.V_*``), ``raw`` (uint64: the varint or the double's bits; for a ref, the code of
    the stat name it names, -1 when none), ``pos``/``length`` (int64: a string's or bytes'
    place in the file)."""

    event: np.ndarray
    key: np.ndarray
    kind: np.ndarray
    raw: np.ndarray
    pos: np.ndarray
    length: np.ndarray

    @property
    def n(self) -> int:
        return int(self.event.size)


@dataclass
class Space:
    """An XSpace read into columns.  ``u8``: the file's bytes (numpy view); ``names`` /
    ``stat_names``: every event / stat metadata name (a name once, first-seen order);
    ``bad_utf8``: names and texts with bytes that are not UTF-8 (read with U+FFFD)."""

    data: bytes
    u8: np.ndarray
    planes: list[Plane]
    lines: Lines
    events: Events
    stats: Stats
    names: list[str]
    stat_names: list[str]
    hostnames: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    bad_utf8: int = 0
    unknown_metadata: int = 0

    def stat_code(self, name: str) -> int:
        """The code of a stat name, -1 when no plane has it."""
        try:
            return self.stat_names.index(name)
        except ValueError:
            return -1

    def text(self, pos: int, length: int) -> str:
        """A string of the file, read as UTF-8 (bad bytes as U+FFFD)."""
        return self.data[pos:pos + length].decode("utf-8", "replace")


class _Texts:
    """A table of distinct strings (names), grown as planes are read."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self.at: dict[str, int] = {}
        self.bad = 0

    def code(self, raw: bytes) -> int:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
            self.bad += 1
        k = self.at.get(text)
        if k is None:
            k = self.at[text] = len(self.values)
            self.values.append(text)
        return k


def read_space(data: bytes, progress: Progress = no_progress) -> Space:
    """The columns of the XSpace ``data``.  Raises :class:`~.wire.WireError`."""
    u8 = np.frombuffer(data, dtype=np.uint8)
    top = walk(data, 0, len(data), "XSpace")
    names, stat_names = _Texts(), _Texts()
    planes: list[Plane] = []
    line_parts: list[tuple[int, Fields]] = []
    space_texts: dict[int, list[str]] = {s.SPACE_HOSTNAMES: [], s.SPACE_ERRORS: [], s.SPACE_WARNINGS: []}
    plane_fields = top.of(s.SPACE_PLANES)
    for k, (pos, length) in enumerate(zip(top.pos[plane_fields].tolist(), top.value[plane_fields].tolist())):
        progress("reading planes", 0.02 + 0.1 * k / max(plane_fields.size, 1))
        plane, lines = _plane(data, u8, pos, pos + int(length), len(planes), names, stat_names)
        planes.append(plane)
        line_parts += [(plane.index, f) for f in lines]
    for num, out in space_texts.items():
        for i in top.of(num).tolist():
            out.append(_decoded(data[int(top.pos[i]):int(top.pos[i]) + int(top.value[i])], names))
    progress("reading lines", 0.15)
    lines, ev_start, ev_end, ev_line = _lines(data, line_parts, names)
    progress("reading events", 0.25)
    events, st_start, st_end, st_event = _events(u8, ev_start, ev_end, ev_line, lines, planes)
    progress("reading stats", 0.4)
    stats, unknown_stats = _stats(u8, st_start, st_end, st_event, events, lines, planes)
    unknown_events = int((events.name < 0).sum())
    return Space(data=data, u8=u8, planes=planes, lines=lines, events=events, stats=stats, names=names.values,
                 stat_names=stat_names.values, hostnames=space_texts[s.SPACE_HOSTNAMES],
                 errors=space_texts[s.SPACE_ERRORS], warnings=space_texts[s.SPACE_WARNINGS],
                 bad_utf8=names.bad + stat_names.bad, unknown_metadata=unknown_events + unknown_stats)


def _decoded(raw: bytes, counter: _Texts) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        counter.bad += 1
        return raw.decode("utf-8", "replace")


def _last_int(f: Fields, num: int) -> int:
    """The value of a singular int64 field (the last one written wins), 0 when absent."""
    at = f.of(num)
    return int(signed(f.value[at[-1:]])[0]) if at.size else 0


def _last_text(data: bytes, f: Fields, num: int, counter: _Texts) -> str:
    at = f.of(num)
    if not at.size:
        return ""
    p, n = int(f.pos[at[-1]]), int(f.value[at[-1]])
    return _decoded(data[p:p + n], counter)


def _plane(data: bytes, u8: np.ndarray, start: int, end: int, index: int, names: _Texts,
           stat_names: _Texts) -> tuple[Plane, list[Fields]]:
    """One plane: its fields walked, its metadata tables read across their entries, its own
    stats; and the fields of each of its lines (walked: one step per event)."""
    f = walk(data, start, end, "XPlane")
    name = _last_text(data, f, s.PLANE_NAME, names)
    event_ids, event_codes, meta_stats = _metadata(data, u8, f, s.PLANE_EVENT_METADATA, "XEventMetadata",
                                                   s.EMETA_NAME, names)
    stat_ids, stat_codes, _ = _metadata(data, u8, f, s.PLANE_STAT_METADATA, "XStatMetadata", s.SMETA_NAME, stat_names)
    plane = Plane(index=index, id=_last_int(f, s.PLANE_ID), name=name, stats={}, event_ids=event_ids,
                  event_codes=event_codes, stat_ids=stat_ids, stat_codes=stat_codes, meta_stats=meta_stats)
    own = f.of(s.PLANE_STATS)
    if own.size:
        plane.stats = _plane_stats(data, u8, f.pos[own], f.pos[own] + f.value[own].astype(np.int64), plane, stat_names)
    lines = [walk(data, int(p), int(p) + int(n), "XLine", s.LINE_EVENTS, u8)
             for p, n in zip(f.pos[f.of(s.PLANE_LINES)].tolist(), f.value[f.of(s.PLANE_LINES)].tolist())]
    return plane, lines


def _metadata(data: bytes, u8: np.ndarray, f: Fields, num: int, message: str, name_field: int,
              texts: _Texts) -> tuple[np.ndarray, np.ndarray, int]:
    """A plane's map of metadata (``num``: event or stat metadata) read across its entries:
    (int64 ids sorted, int32 name codes, entries with stats of their own).  The map's key is
    the id (the entry's own ``id`` field repeats it)."""
    at = f.of(num)
    n = at.size
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int32), 0
    start = f.pos[at]
    end = start + f.value[at].astype(np.int64)
    key = np.zeros(n, dtype=np.int64)
    v_pos = np.zeros(n, dtype=np.int64)
    v_len = np.zeros(n, dtype=np.int64)
    for r in scan(u8, start, end, "map entry"):
        k = r.of(s.MAP_KEY)
        key[r.msg[k]] = signed(r.value[k])
        v = r.of(s.MAP_VALUE)
        v_pos[r.msg[v]], v_len[r.msg[v]] = r.pos[v], r.value[v].astype(np.int64)
    n_pos = np.zeros(n, dtype=np.int64)
    n_len = np.zeros(n, dtype=np.int64)
    with_stats = np.zeros(n, dtype=bool)
    for r in scan(u8, v_pos, v_pos + v_len, message):
        k = r.of(name_field)
        n_pos[r.msg[k]], n_len[r.msg[k]] = r.pos[k], r.value[k].astype(np.int64)
        with_stats[r.msg[r.of(s.EMETA_STATS)]] = message == "XEventMetadata"
    codes = np.fromiter((texts.code(data[p:p + m]) for p, m in zip(n_pos.tolist(), n_len.tolist())),
                        dtype=np.int32, count=n)
    order = np.argsort(key, kind="stable")
    # a key written twice: the last entry wins, as protobuf's map does
    last = np.ones(n, dtype=bool)
    ks = key[order]
    last[:-1] = ks[1:] != ks[:-1]
    keep = order[last]
    return key[keep], codes[keep], int(with_stats.sum())


def _plane_stats(data: bytes, u8: np.ndarray, start: np.ndarray, end: np.ndarray, plane: Plane,
                 stat_names: _Texts) -> dict[str, Any]:
    """A plane's own stats as Python values by name (a few: device properties, process id)."""
    st = _stat_columns(u8, start, end, np.zeros(start.size, dtype=np.int64), [plane],
                       np.full(start.size, plane.index, dtype=np.int32))[0]
    out: dict[str, Any] = {}
    for i in range(st.n):
        if st.key[i] >= 0:
            out[stat_names.values[st.key[i]]] = stat_value(data, st, i, stat_names.values)
    return out


def stat_value(data: bytes, st: Stats, i: int, stat_names: list[str]) -> Any:
    """The Python value of stat row ``i`` (a ref as the name it names)."""
    kind, raw = int(st.kind[i]), st.raw[i:i + 1]
    if kind == s.V_DOUBLE:
        return float(raw.view(np.float64)[0])
    if kind == s.V_UINT:
        return int(raw[0])
    if kind == s.V_INT:
        return int(raw.view(np.int64)[0])
    if kind in (s.V_STR, s.V_BYTES):
        b = data[int(st.pos[i]):int(st.pos[i]) + int(st.length[i])]
        return b.decode("utf-8", "replace") if kind == s.V_STR else b
    if kind == s.V_REF:
        code = int(raw.view(np.int64)[0])
        return stat_names[code] if code >= 0 else ""
    return None


def _lines(data: bytes, parts: list[tuple[int, Fields]], names: _Texts
           ) -> tuple[Lines, np.ndarray, np.ndarray, np.ndarray]:
    """The lines' columns, and every event's (start, end, line) in file order."""
    n = len(parts)
    plane = np.zeros(n, dtype=np.int32)
    ids = np.zeros(n, dtype=np.int64)
    ts = np.zeros(n, dtype=np.int64)
    line_names: list[str] = []
    display: list[str] = []
    starts, ends, owner = [], [], []
    for k, (pi, f) in enumerate(parts):
        plane[k] = pi
        ids[k] = _last_int(f, s.LINE_ID)
        ts[k] = _last_int(f, s.LINE_TIMESTAMP_NS)
        line_names.append(_last_text(data, f, s.LINE_NAME, names))
        display.append(_last_text(data, f, s.LINE_DISPLAY_NAME, names))
        ev = f.of(s.LINE_EVENTS)
        starts.append(f.pos[ev])
        ends.append(f.pos[ev] + f.value[ev].astype(np.int64))
        owner.append(np.full(ev.size, k, dtype=np.int32))
    cat = (lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dt))  # noqa: E731
    return (Lines(plane, ids, line_names, display, ts), cat(starts, np.int64), cat(ends, np.int64),
            cat(owner, np.int32))


def _events(u8: np.ndarray, start: np.ndarray, end: np.ndarray, line: np.ndarray, lines: Lines,
            planes: list[Plane]) -> tuple[Events, np.ndarray, np.ndarray, np.ndarray]:
    """Every event's fields, read across all events at once; and every stat's (start, end,
    event), stats of an event in file order."""
    n = start.size
    mid = np.zeros(n, dtype=np.int64)
    offset = np.zeros(n, dtype=np.int64)
    dur = np.zeros(n, dtype=np.int64)
    occ = np.zeros(n, dtype=np.int64)
    st_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for r in scan(u8, start, end, "XEvent"):
        for num, col in ((s.EVENT_METADATA_ID, mid), (s.EVENT_OFFSET_PS, offset), (s.EVENT_DURATION_PS, dur),
                         (s.EVENT_NUM_OCCURRENCES, occ)):
            k = r.of(num)
            if k.size:
                col[r.msg[k]] = signed(r.value[k])
        k = r.of(s.EVENT_STATS)
        if k.size:
            st_parts.append((r.msg[k], r.pos[k], r.value[k].astype(np.int64)))
    st_start, st_end, st_event, first_stat = _placed(st_parts, n)
    name = np.full(n, -1, dtype=np.int32)
    ev_plane = lines.plane[line] if n else np.zeros(0, np.int32)
    for p in planes:
        sel = np.flatnonzero(ev_plane == p.index)
        if sel.size:
            name[sel] = _lookup(p.event_ids, p.event_codes, mid[sel])
    return (Events(line=line, name=name, offset_ps=offset, dur_ps=dur, occurrences=occ, first_stat=first_stat),
            st_start, st_end, st_event)


def _placed(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The stats found round by round (parts of (event, start, length), in file order within an
    event) put in event order without a sort: (start, end, event of each stat; int64 offsets of
    each event's first stat, length n + 1)."""
    counts = np.zeros(n, dtype=np.int64)
    for msg, _, _ in parts:
        if msg.size > 1 and not (np.diff(msg) > 0).all():
            np.add.at(counts, msg, 1)  # a walked round: several of a message
        else:
            counts[msg] += 1
    first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    total = int(first[-1])
    start = np.zeros(total, dtype=np.int64)
    end = np.zeros(total, dtype=np.int64)
    filled = np.zeros(n, dtype=np.int64)
    for msg, pos, length in parts:
        if msg.size > 1 and not (np.diff(msg) > 0).all():  # a walked round: several of a message, in order
            order = np.argsort(msg, kind="stable")
            msg, pos, length = msg[order], pos[order], length[order]
            head = np.concatenate(([True], msg[1:] != msg[:-1]))
            run_start = np.maximum.accumulate(np.where(head, np.arange(msg.size), 0))
            rank = np.arange(msg.size) - run_start
            slot = first[msg] + filled[msg] + rank
            np.add.at(filled, msg, 1)
        else:
            slot = first[msg] + filled[msg]
            filled[msg] += 1
        start[slot] = pos
        end[slot] = pos + length
    return start, end, np.repeat(np.arange(n, dtype=np.int64), counts), first


#: a metadata table whose ids span at most this many values is looked up by indexing a dense table
_DENSE_IDS = 1 << 22


def _lookup(ids: np.ndarray, codes: np.ndarray, want: np.ndarray) -> np.ndarray:
    """The codes of ids ``want`` in a sorted table (-1 where an id is not in it)."""
    if not ids.size:
        return np.full(want.size, -1, dtype=np.int32)
    lo, hi = int(ids[0]), int(ids[-1])
    if hi - lo < _DENSE_IDS:
        table = np.full(hi - lo + 2, -1, dtype=np.int32)
        table[ids - lo] = codes
        return table[np.clip(want - lo, -1, hi - lo + 1)]  # -1 and hi - lo + 1: the two -1 ends
    at = np.minimum(np.searchsorted(ids, want), ids.size - 1)
    return np.where(ids[at] == want, codes[at], -1).astype(np.int32)


def _stats(u8: np.ndarray, start: np.ndarray, end: np.ndarray, event: np.ndarray, events: Events, lines: Lines,
           planes: list[Plane]) -> tuple[Stats, int]:
    """Every stat's fields, read across all stats at once; their names and refs looked up in
    their plane's table.  Also the count of stats whose metadata id is not in it."""
    plane_of = lines.plane[events.line[event]] if event.size else np.zeros(0, np.int32)
    st, unknown = _stat_columns(u8, start, end, event, planes, plane_of)
    return st, unknown


def _stat_columns(u8: np.ndarray, start: np.ndarray, end: np.ndarray, event: np.ndarray, planes: list[Plane],
                  plane_of: np.ndarray) -> tuple[Stats, int]:
    n = start.size
    mid = np.zeros(n, dtype=np.int64)
    kind = np.zeros(n, dtype=np.uint8)
    raw = np.zeros(n, dtype=np.uint64)
    pos = np.zeros(n, dtype=np.int64)
    length = np.zeros(n, dtype=np.int64)
    for r in scan(u8, start, end, "XStat"):
        k = r.of(s.STAT_METADATA_ID)
        mid[r.msg[k]] = signed(r.value[k])
        for num, code in s.VALUE_OF_FIELD.items():
            k = r.of(num)
            if not k.size:
                continue
            m = r.msg[k]
            kind[m] = code  # the oneof: the last value written wins
            raw[m] = r.value[k]
            pos[m] = r.pos[k]
            length[m] = r.value[k].astype(np.int64) if code in (s.V_STR, s.V_BYTES) else 0
    key = np.full(n, -1, dtype=np.int32)
    for p in planes:
        sel = np.flatnonzero(plane_of == p.index)
        if not sel.size:
            continue
        key[sel] = _lookup(p.stat_ids, p.stat_codes, mid[sel])
        ref = sel[kind[sel] == s.V_REF]
        if ref.size:
            raw[ref] = _lookup(p.stat_ids, p.stat_codes, raw[ref].view(np.int64)).astype(np.int64).view(np.uint64)
    bad_ref = int(((kind == s.V_REF) & (raw.view(np.int64) < 0)).sum())
    return Stats(event=event, key=key, kind=kind, raw=raw, pos=pos, length=length), int((key < 0).sum()) + bad_ref


__all__ = ["Events", "Lines", "Plane", "Space", "Stats", "WireError", "read_space", "stat_value"]
