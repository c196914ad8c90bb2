"""A snapshot's plain data (what :mod:`.unpickle` built) as columns (:mod:`.model`), read in
its known shape only and freed as it goes: each device's history list is dropped once its
columns are made, so the dicts never live beside all the columns.

What is read (``../shared/FORMATS.md``): every field the model names, typed (an integer must
be an int, a name a str); a value of another type, or missing, is -1 (or "?") and counted in
the warnings by field; an element of a list that is not a dict is counted and left out.
SnapshotFrames are interned twice: a frame dict or a frames list seen before (the pickler writes a
shared object once) is found by identity, then every frame by its (filename, line, name) and
every stack by its frames.  Nothing here recurses into the data.
"""

from __future__ import annotations

from collections import Counter
from itertools import repeat
from typing import Any

import numpy as np

from .. import names as name_rules
from ..errors import LoadWarning, TraceFormatError
from .model import (
    ACTION_CODE,
    BLOCK_STATES,
    OOM,
    OTHER_ACTION,
    OTHER_STATE,
    SEGMENT_TYPES,
    SNAPSHOT,
    MemorySnapshot,
    SnapshotAnnotations,
    SnapshotBlocks,
    SnapshotFrames,
    SnapshotHistory,
    SnapshotSegments,
    SnapshotStacks,
)
from .unpickle import Plain

#: what marks a frames list emptied by :meth:`Interner.release`
GONE = object()
#: values whose frames are interned together (bounds what is kept per frames list)
CHUNK = 1 << 16
#: streamed batches whose columns are joined into one part (1,000 entries a batch: ~12 MB of columns)
MERGE_BATCHES = 256
#: the top-level keys read
KNOWN_KEYS = ("segments", "device_traces", "allocator_settings", "external_annotations")
#: most characters of a setting's value or of a name kept: a longer one is kept as its head and
#: the cut mark every screen draws (``… (+10 MB)``, :func:`tracetui.names.shown`), and counted
MAX_TEXT = name_rules.NAME_WORK_CHARS
#: the warning's words for those
CUT_TEXTS = f"names and setting values longer than {MAX_TEXT:,} characters (kept cut, the rest not read)"
_I64 = (-(2**63), 2**63)


def _is_int(v: Any) -> bool:
    return type(v) is int and _I64[0] <= v < _I64[1]


class _Tally:
    """What could not be read, by (what, field)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def add(self, what: str, n: int = 1) -> None:
        if n:
            self.counts[what] += n


def _column(values: list[Any]) -> tuple[np.ndarray, np.ndarray | None]:
    """(int64 column of ``values``, where a value was no int64: None when none); such a value
    (missing, a float, a str, past 64 bits) is -1."""
    if not values:
        return np.zeros(0, dtype=np.int64), None
    try:
        arr = np.array(values)  # numpy infers int64 only when every value is an int that fits
    except (ValueError, OverflowError):
        arr = None
    if arr is not None and arr.dtype == np.int64 and arr.ndim == 1:
        return arr, None
    bad = np.fromiter((not _is_int(v) for v in values), dtype=bool, count=len(values))
    return np.fromiter((v if _is_int(v) else -1 for v in values), dtype=np.int64, count=len(values)), bad


def _ints(values: list[Any], tally: _Tally, what: str, expected: np.ndarray | None = None) -> np.ndarray:
    """:func:`_column`, its values that are no int64 counted under ``what`` (among ``expected`` rows only)."""
    arr, bad = _column(values)
    if bad is not None:
        tally.add(what, int((bad & expected).sum() if expected is not None else bad.sum()))
    return arr


def _text(v: str, tally: _Tally) -> str:
    """``v``, or when it is longer than :data:`MAX_TEXT` its head and cut mark (counted)."""
    if len(v) <= MAX_TEXT:
        return v
    tally.add(CUT_TEXTS)
    return name_rules.shown(v, MAX_TEXT)


def _text_id(table: dict[str, int], v: str, tally: _Tally) -> int:
    """The id of ``v`` in ``table`` (new ids in order); a text longer than :data:`MAX_TEXT` is
    kept cut, and counted once per distinct cut text (a frame's name is read once per frame
    dict, and a dict read again after the identity cache was dropped is the same name)."""
    if len(v) > MAX_TEXT:
        v = name_rules.shown(v, MAX_TEXT)
        if v not in table:
            tally.add(CUT_TEXTS)
    return table.setdefault(v, len(table))


class Interner:
    """SnapshotFrames and stacks, interned (see the module docstring)."""

    def __init__(self, tally: _Tally) -> None:
        self.tally = tally
        self.files: dict[str, int] = {}
        self.names: dict[str, int] = {}
        self.frame_ids: dict[tuple[int, int, int], int] = {}
        self.stack_ids: dict[tuple[int, ...], int] = {}
        self.by_id: dict[int, int] = {}  # id(frame dict) -> frame id, while ``alive`` holds it
        self.by_ids: dict[tuple[int, ...], int] = {}  # the frame dicts' ids of a list -> stack id, likewise
        self.alive: list[Any] = []
        #: per stack id, what a frames list emptied by :meth:`release` holds instead: (GONE, stack id)
        self.marks: dict[int, tuple[object, int]] = {}

    def forget_objects(self) -> None:
        """Drop the identity caches (before the objects they name are freed)."""
        self.by_id.clear()
        self.by_ids.clear()
        self.alive.clear()

    def _str_id(self, table: dict[str, int], v: Any, what: str) -> int:
        if type(v) is not str:
            self.tally.add(what)
            v = "?"
        return _text_id(table, v, self.tally)

    def frame(self, f: Any) -> int:
        got = self.by_id.get(id(f))
        if got is not None:
            return got
        if type(f) is not dict:
            self.tally.add("frames that are not dicts")
            key = (self._str_id(self.files, "?", ""), -1, self._str_id(self.names, "?", ""))
        else:
            line = f.get("line")
            if not _is_int(line):
                self.tally.add("frames without an integer line")
                line = -1
            key = (self._str_id(self.files, f.get("filename"), "frames without a filename"), line,
                   self._str_id(self.names, f.get("name"), "frames without a name"))
        fid = self.frame_ids.setdefault(key, len(self.frame_ids))
        self.by_id[id(f)] = fid
        self.alive.append(f)
        return fid

    def stack(self, frames: Any) -> int:
        """The stack id of a ``frames`` value (-1: absent; a value that is not a list counts)."""
        if type(frames) is not list:
            return -1  # counted by stacks_of, per value (this is called once per object)
        if len(frames) == 1 and type(frames[0]) is tuple and frames[0][:1] == (GONE,):
            return frames[0][1]  # emptied by release(), named again (by a block, a free's second entry)
        ids = tuple(map(id, frames))  # the frame dicts' identities (alive: ``alive`` holds them)
        sid = self.by_ids.get(ids)
        if sid is None:
            sid = self.by_ids[ids] = self.stack_ids.setdefault(tuple(map(self.frame, frames)), len(self.stack_ids))
        return sid

    def stacks_of(self, values: list[Any]) -> np.ndarray:
        """The stack id of each ``frames`` value; a list object seen shortly before (the pickler
        writes a shared list once: a free's ``free_requested`` and ``free_completed``) costs one
        lookup.  Nothing per frame is kept, and what is kept per list lasts :data:`CHUNK` values."""
        out = np.empty(len(values), dtype=np.int32)
        for lo in range(0, len(values), CHUNK):
            part = values[lo:lo + CHUNK]
            seen: dict[int, int] = {}  # id(list) -> stack id, valid while ``part`` holds the lists
            get = seen.get
            got = out[lo:lo + len(part)]
            got[:] = np.fromiter(
                (s if (s := get(id(v))) is not None else seen.setdefault(id(v), self.stack(v)) for v in part),
                dtype=np.int32, count=len(part))
            # -1: a value that is no list (a list, even empty or emptied, has a stack id); None is "absent"
            self.tally.add("frames values that are not lists", int((got < 0).sum()) - part.count(None))
        return out

    def release(self, entries: list[dict], stacks: np.ndarray) -> None:
        """Empty a streamed batch's entries and their frames lists (the unpickler's memo keeps
        the emptied objects).  A frames list keeps its stack id, ``(GONE, id)`` (one tuple per
        stack): the pickler writes a shared list once and names it again (a free's
        ``free_requested`` and ``free_completed``; a live block in ``segments`` and its ``alloc``)."""
        marks = self.marks
        for e, sid in zip(entries, stacks.tolist()):
            fl = e.get("frames")
            if type(fl) is list and sid >= 0:
                mark = marks.get(sid)
                if mark is None:
                    mark = marks[sid] = (GONE, sid)
                fl[:] = (mark,)
            e.clear()

    def tables(self) -> tuple[SnapshotFrames, SnapshotStacks]:
        keys = np.array(list(self.frame_ids), dtype=np.int64).reshape(-1, 3)
        frames = SnapshotFrames(keys[:, 0].astype(np.int32), keys[:, 1].copy(), keys[:, 2].astype(np.int32),
                        list(self.files), list(self.names))
        lens = np.fromiter(map(len, self.stack_ids), dtype=np.int64, count=len(self.stack_ids))
        start = np.zeros(lens.size + 1, dtype=np.int64)
        np.cumsum(lens, out=start[1:])
        flat = np.fromiter((f for k in self.stack_ids for f in k), dtype=np.int32, count=int(start[-1]))
        return frames, SnapshotStacks(start, flat)


def _dicts(items: Any, tally: _Tally, what: str) -> list[dict]:
    """The dicts of a list (anything else counted under ``what``)."""
    if type(items) is not list:
        if items is not None:
            tally.add(f"{what} values that are not lists")
        return []
    if all(type(x) is dict for x in items):
        return items
    out = [x for x in items if type(x) is dict]
    tally.add(f"{what} that are not dicts", len(items) - len(out))
    return out


def _field(items: list[dict], key: str) -> list[Any]:
    """``item.get(key)`` of every dict (in C: ``map``)."""
    return list(map(dict.get, items, repeat(key)))


class _Codes(dict):
    """Action name -> code; any other value -> :data:`OTHER_ACTION`."""

    def __missing__(self, key: Any) -> int:
        return OTHER_ACTION


_ACTIONS = _Codes(ACTION_CODE)


def _history(traces: Any, interner: Interner, tally: _Tally,
             streamed: tuple[int, list[dict[str, np.ndarray]]] | None = None) -> SnapshotHistory:
    """Every device's entries as columns; each device's list is freed once read (``streamed``:
    a device whose entries were read while unpickling, and their columns, batch by batch)."""
    if type(traces) is not list:
        if traces is not None:
            tally.add("device_traces values that are not lists")
        traces = []
    parts: list[dict[str, np.ndarray]] = []
    for d in range(len(traces)):
        if streamed is not None and d == streamed[0]:
            got = streamed[1]
            parts.append({k: np.concatenate([g[k] for g in got]) if got else np.zeros(0, np.int64)
                          for k in _COLUMNS})
            got.clear()
            continue
        entries = _dicts(traces[d], tally, "history entries")
        traces[d] = None
        part = _entries(entries, d, interner, tally)
        del entries
        interner.forget_objects()
        parts.append(part)
    lo = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([p["action"].size for p in parts], out=lo[1:])
    cols = {k: np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, np.int64) for k in _COLUMNS}
    return SnapshotHistory(cols["device"].astype(np.int32), cols["action"].astype(np.uint8), cols["addr"], cols["size"],
                   cols["stream"], cols["time_us"], cols["stack"].astype(np.int32), cols["device_free"], lo)


_COLUMNS = ("device", "action", "addr", "size", "stream", "time_us", "stack", "device_free")


def _entries(entries: list[dict], device: int, interner: Interner, tally: _Tally) -> dict[str, np.ndarray]:
    n = len(entries)
    actions = _field(entries, "action")
    try:
        code = np.array(list(map(_ACTIONS.__getitem__, actions)), dtype=np.uint8)
    except TypeError:  # an action that is not hashable
        code = np.fromiter((ACTION_CODE.get(a, OTHER_ACTION) if type(a) is str else OTHER_ACTION for a in actions),
                           dtype=np.uint8, count=n)
    tally.add("history entries with an action tracetui does not know (kept, counted nowhere)",
              int((code == OTHER_ACTION).sum()))
    del actions
    out = {"device": np.full(n, device, dtype=np.int32), "action": code}
    oom = code == OOM
    no_addr = oom | (code == SNAPSHOT)  # an oom has no address; a snapshot entry's is 0
    for key, expected in (("addr", ~no_addr), ("size", None), ("stream", None), ("time_us", None)):
        out[key] = _ints(_field(entries, key), tally, f"history entries without an integer {key} (read as -1)",
                         expected)
    out["device_free"] = np.full(n, -1, dtype=np.int64)
    if oom.any():
        rows = np.flatnonzero(oom)
        out["device_free"][rows] = _ints([entries[i].get("device_free") for i in rows.tolist()], tally,
                                         "oom entries without an integer device_free")
    out["stack"] = interner.stacks_of(_field(entries, "frames"))
    return out


def _segments(items: Any, interner: Interner, tally: _Tally) -> tuple[SnapshotSegments, SnapshotBlocks]:
    segs = _dicts(items, tally, "segments")
    n = len(segs)
    ints = {k: _ints(_field(segs, k), tally, f"segments without an integer {k}")
            for k in ("device", "address", "total_size", "stream")}
    opt = {k: np.fromiter((v if _is_int(v) else -1 for v in _field(segs, k)), dtype=np.int64, count=n)
           for k in ("allocated_size", "requested_size")}
    pool = np.fromiter((SEGMENT_TYPES.index(v) if v in SEGMENT_TYPES else len(SEGMENT_TYPES)
                        for v in _field(segs, "segment_type")), dtype=np.uint8, count=n)
    expandable = np.fromiter((v is True for v in _field(segs, "is_expandable")), dtype=bool, count=n)
    seg_stack = interner.stacks_of(_field(segs, "frames"))
    block_lists = [_dicts(s.get("blocks"), tally, "blocks") for s in segs]
    lens = np.fromiter(map(len, block_lists), dtype=np.int64, count=n)
    block_lo = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=block_lo[1:])
    blocks = [b for bl in block_lists for b in bl]
    states = np.fromiter((BLOCK_STATES.index(v) if v in BLOCK_STATES else OTHER_STATE
                          for v in _field(blocks, "state")), dtype=np.uint8, count=len(blocks))
    tally.add("blocks with a state tracetui does not know", int((states == OTHER_STATE).sum()))
    b = SnapshotBlocks(np.repeat(np.arange(n, dtype=np.int32), lens),
               _ints(_field(blocks, "address"), tally, "blocks without an integer address"),
               _ints(_field(blocks, "size"), tally, "blocks without an integer size"),
               np.fromiter((v if _is_int(v) else -1 for v in _field(blocks, "requested_size")), dtype=np.int64,
                           count=len(blocks)),
               states, interner.stacks_of(_field(blocks, "frames")))
    s = SnapshotSegments(ints["device"].astype(np.int32), ints["address"], ints["total_size"], opt["allocated_size"],
                 opt["requested_size"], ints["stream"], pool, expandable, seg_stack, block_lo)
    return s, b


def _annotations(items: Any, tally: _Tally) -> SnapshotAnnotations:
    marks = _dicts(items, tally, "external annotations")
    ok = [m for m in marks if m.get("stage") in ("START", "END") and type(m.get("name")) is str
          and _is_int(m.get("time_us"))]
    tally.add("external annotations without a stage, name or time", len(marks) - len(ok))
    names: dict[str, int] = {}
    n = len(ok)
    return SnapshotAnnotations(
        np.fromiter((m.get("device") if _is_int(m.get("device")) else 0 for m in ok), dtype=np.int32, count=n),
        np.fromiter((m["time_us"] for m in ok), dtype=np.int64, count=n),
        np.fromiter((m["stage"] == "START" for m in ok), dtype=bool, count=n),
        np.fromiter((_text_id(names, m["name"], tally) for m in ok), dtype=np.int32, count=n),
        list(names))


def _settings(value: Any, tally: _Tally) -> dict[str, Any]:
    """``allocator_settings`` as shown: str keys and scalar values (a dict value one level down,
    as ``roundup_power2_divisions``); anything else counted and left out."""
    if type(value) is not dict:
        if value is not None:
            tally.add("allocator_settings values that are not dicts")
        return {}
    out: dict[str, Any] = {}
    for k, v in value.items():
        if type(k) is not str:
            tally.add("allocator settings that are not named by a string")
        elif v is None or type(v) in (bool, int, float):
            out[_text(k, tally)] = v
        elif type(v) is str:
            out[_text(k, tally)] = _text(v, tally)
        elif type(v) is dict and all(type(a) is str and type(b) in (bool, int, float) for a, b in v.items()):
            out[_text(k, tally)] = {_text(a, tally): b for a, b in list(v.items())[:256]}
        else:
            tally.add("allocator settings of another shape")
    return out


class SnapshotReader:
    """Reads one snapshot: :meth:`consumer` is what :func:`~.unpickle.load_plain` streams a
    device's history to (each batch made columns, then emptied: :mod:`.stream`), :meth:`read`
    the rest once the pickle is read."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget what a streamed read made (the file is read again whole)."""
        self.tally = _Tally()
        self.interner = Interner(self.tally)
        self.streamed: list[dict[str, np.ndarray]] = []  #: parts of :data:`MERGE_BATCHES` batches each
        self.pending: list[dict[str, np.ndarray]] = []  #: batches not merged into a part yet

    def consumer(self, device: int):
        self.streamed.clear()
        self.pending.clear()

        def consume(items: list[Any]) -> None:
            entries = _dicts(items, self.tally, "history entries")
            part = _entries(entries, device, self.interner, self.tally)
            self.pending.append(part)
            self.interner.release(entries, part["stack"])
            if len(self.pending) >= MERGE_BATCHES:
                self._merge_pending()

        return consume

    def _merge_pending(self) -> None:
        """The pending batches' columns as one part (a batch's are a few kB each: thousands of
        them freed at the end would leave the heap in holes the process keeps)."""
        if self.pending:
            self.streamed.append({k: np.concatenate([g[k] for g in self.pending]) for k in _COLUMNS})
            self.pending.clear()

    def read(self, path: str, plain: Plain) -> MemorySnapshot:
        """The :class:`MemorySnapshot` of a pickle's plain data (consumed: its lists are emptied
        as they are read).  Raises :class:`~tracetui.errors.TraceFormatError` when the data is not
        a snapshot (not a dict with ``segments`` or ``device_traces``)."""
        top = plain.value
        if type(top) is not dict:
            raise TraceFormatError(path, f"a pickle of plain data, but a {type(top).__name__}, not a CUDA memory "
                                         "snapshot (a dict with 'segments' and 'device_traces')")
        if "segments" not in top and "device_traces" not in top:
            raise TraceFormatError(path, "a pickle of plain data, but not a CUDA memory snapshot (no 'segments' or "
                                         "'device_traces' key)")
        tally, interner = self.tally, self.interner
        self._merge_pending()
        streamed = (plain.streamed_device, self.streamed) if plain.streamed_device is not None else None
        history = _history(top.get("device_traces"), interner, tally, streamed)
        segments, blocks = _segments(top.get("segments"), interner, tally)
        interner.forget_objects()
        notes = _annotations(top.get("external_annotations"), tally)
        settings = _settings(top.get("allocator_settings"), tally)
        others = sorted(str(k) for k in top if k not in KNOWN_KEYS)[:32]
        top.clear()
        frames, stacks = interner.tables()
        warnings = [LoadWarning("memsnap_unread", f"{n:,} {what}", n) for what, n in sorted(tally.counts.items())]
        if plain.trailing:
            warnings.append(LoadWarning("memsnap_trailing", f"{plain.trailing:,} bytes after the pickle's end were "
                                                            "not read", plain.trailing))
        return MemorySnapshot(path, plain.protocol, plain.size, history, segments, blocks, frames, stacks, notes,
                              settings, others, warnings)


def read_snapshot(path: str, plain: Plain) -> MemorySnapshot:
    """:meth:`SnapshotReader.read` of a pickle read whole."""
    return SnapshotReader().read(path, plain)
