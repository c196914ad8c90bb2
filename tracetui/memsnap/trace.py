"""A snapshot as a trace in the Kineto model (:class:`SnapshotTrace`), so the browser, ``info``,
``summary`` and the memory answers open it like any trace.

Why this model: a snapshot's history can hold tens of millions of entries; a Kineto event per
entry would cost ~300 bytes (columns, JSON args) and a tree build, while the memory answers read
the allocation model (:class:`~tracetui.analysis.memory.MemoryModel`: ~110 bytes a row).  So:

- the **events** of the trace are what a timeline shows: one lane per device (``cuda:0
  allocator``), a span over its history (``Trace`` category), the profiler's annotations
  (``external_annotations``: ``ProfilerStep#N``, ``forward`` ... as ``user_annotation`` spans)
  and the allocator's rare actions as instants (``segment_alloc``, ``segment_free``,
  ``segment_map``, ``segment_unmap``, ``oom``, ``snapshot``, with ``Addr``, ``Bytes``,
  ``Stream``, ``Device Free`` args);
- **every history entry is one row of the memory model**, given as columns
  (:meth:`SnapshotTrace.memory_columns`): ``alloc`` +size and ``free_completed`` -size (as a
  Kineto ``[memory]`` event's ``Bytes``), every other action 0 bytes, each with the bytes
  allocated and reserved on its device just after it (:func:`~.model.totals`), so the peak,
  the blocks live at a time, the pairing and the owners by annotation have Kineto's
  definitions unchanged;
- the snapshot's own columns (frames, stacks, segments, blocks, the ``oom`` entries) stay on
  the trace (``snapshot``) for what only a snapshot answers.

Times: µs relative to ``origin_us`` (the first entry's or annotation's ``time_us``).  An
entry whose time is missing or before the entry before it is shown at that entry's time
(history order is the allocator's: it is kept), counted in the warnings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ..errors import LoadWarning
from ..io.formats import Progress
from ..kineto import schema as ks
from ..kineto.build import build_trace
from ..kineto.columns import DecodedEvents, Interned
from ..kineto.decode import DecodedTrace
from ..kineto.schema import KEY_DEFAULTS, KEY_FIELDS
from ..kineto.trace import KinetoTrace
from .model import ACTIONS, OOM, SEGMENT_ALLOC, SEGMENT_UNMAP, SNAPSHOT, MemorySnapshot, Totals, totals
from .sniff import FORMAT_NAME

#: c10::DeviceType of CUDA (what a Kineto ``[memory]`` event's ``Device Type`` says)
CUDA_DEVICE_TYPE = 1
#: the instants of the trace: the actions a timeline marks
INSTANT_ACTIONS = tuple(range(SEGMENT_ALLOC, SEGMENT_UNMAP + 1)) + (SNAPSHOT, OOM)
_HISTORY_SPAN = "allocator history"


def device_name(device: int) -> str:
    """``cuda:0``: a snapshot's devices are CUDA ordinals (ROCm builds name theirs the same)."""
    return f"cuda:{device}"


@dataclass
class SnapshotTrace(KinetoTrace):
    """A :class:`~tracetui.kineto.trace.KinetoTrace` of a snapshot (see the module docstring)."""

    source_format: str = FORMAT_NAME
    snapshot: MemorySnapshot | None = None
    #: per history entry: µs relative to ``origin_us`` (repaired: never before the entry before)
    entry_ts: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: per history entry: the bytes allocated and reserved just after it
    sums: Totals | None = None
    #: device -> index of its lane in ``lanes``
    device_lane: dict[int, int] = field(default_factory=dict)

    def memory_columns(self) -> dict[str, np.ndarray]:
        """Every history entry as a row of the memory model: ``entry``, ``lane``, ``ts``,
        ``addr``, ``nbytes``, ``device_type``, ``device_id``, ``allocated``, ``reserved``."""
        snap, h = self.snapshot, self.snapshot.history
        sign = np.zeros(len(ACTIONS) + 1, dtype=np.int64)
        sign[[0, 2]] = (1, -1)  # alloc, free_completed
        lane = np.full(h.n, -1, dtype=np.int32)  # int32 like the history's device column: inputs only
        for d, k in self.device_lane.items():
            lane[snap.entries_of(d)] = k
        return {"entry": np.arange(h.n, dtype=np.int64), "lane": lane, "ts": self.entry_ts, "addr": h.addr,
                "nbytes": sign[h.action] * np.maximum(h.size, 0),
                "device_type": np.broadcast_to(np.int64(CUDA_DEVICE_TYPE), (h.n,)),  # one value, no array
                "device_id": h.device, "allocated": self.sums.allocated,
                "reserved": self.sums.reserved}


def _repaired_times(snap: MemorySnapshot) -> tuple[np.ndarray, int, int]:
    """(absolute µs per entry, entries with a time before the entry before, entries without a
    time): per device, such an entry is shown at the time of the entry before it (a device
    with no time at all: at the snapshot's first time)."""
    h = snap.history
    t = h.time_us.copy()
    valid = t >= 0
    fallback = int(t[valid].min()) if valid.any() else 0
    moved = missing = 0
    for d in range(h.n_devices):
        s = snap.entries_of(d)
        part, ok = t[s], valid[s]
        missing += int((~ok).sum())
        if not ok.any():
            t[s] = fallback
            continue
        fixed = np.maximum.accumulate(np.where(ok, part, part[ok][0]))
        moved += int(((fixed != part) & ok).sum())
        t[s] = fixed
    return t, moved, missing


def _annotation_spans(snap: MemorySnapshot, warnings: list[LoadWarning]) -> list[tuple[int, int, int, int]]:
    """(device, start µs, end µs, name id) of the profiler's ranges: each END closes the last open
    START of its name on its device; a START never closed ends at its device's last time."""
    a = snap.annotations
    order = np.lexsort((np.arange(a.n), a.time_us, a.device))
    open_: dict[tuple[int, int], list[int]] = {}
    spans, unmatched = [], 0
    for i in order.tolist():
        key = (int(a.device[i]), int(a.name[i]))
        if a.start[i]:
            open_.setdefault(key, []).append(int(a.time_us[i]))
        elif open_.get(key):
            spans.append((key[0], open_[key].pop(), int(a.time_us[i]), key[1]))
        else:
            unmatched += 1
    last = {}
    for d in range(snap.history.n_devices):
        s = snap.entries_of(d)
        if s.stop > s.start:
            last[d] = int(snap.history.time_us[s].max())
    never = 0
    for (d, name), starts in open_.items():
        for t0 in starts:
            spans.append((d, t0, max(t0, last.get(d, t0)), name))
            never += 1
    if unmatched or never:
        warnings.append(LoadWarning("memsnap_annotations", f"{unmatched:,} annotation ENDs without a START (left out), "
                                    f"{never:,} STARTs without an END (kept, to the device's last entry)",
                                    unmatched + never))
    return spans


def _instant_args(snap: MemorySnapshot, e: int) -> bytes:
    h = snap.history
    args: dict[str, Any] = {ks.MEM_BYTES: int(h.size[e]), "Stream": int(h.stream[e]),
                            ks.MEM_DEVICE_ID: int(h.device[e])}
    if h.action[e] == OOM:
        args["Device Free"] = int(h.device_free[e])
    else:
        args[ks.MEM_ADDR] = int(h.addr[e])
    return json.dumps(args).encode()


def _decoded(snap: MemorySnapshot, t_abs: np.ndarray, warnings: list[LoadWarning]) -> DecodedTrace:
    """The trace's events as Kineto's decoded columns (spans, annotations, instants, metadata)."""
    h = snap.history
    names: dict[str, int] = {}
    rows: list[tuple[str, str, str, int, int, int, bytes]] = []  # ph, cat, name, device, start, dur, args
    devices = sorted({int(d) for d in range(h.n_devices) if h.lo[d + 1] > h.lo[d]}
                     | {int(d) for d in np.unique(snap.segments.device).tolist() if d >= 0})
    for d in devices:
        s = snap.entries_of(d)
        if s.stop > s.start:
            t0, t1 = int(t_abs[s].min()), int(t_abs[s].max())
            rows.append(("X", "Trace", f"{device_name(d)} {_HISTORY_SPAN} ({s.stop - s.start:,} entries)", d, t0,
                         t1 - t0, b""))
    for d, t0, t1, nm in _annotation_spans(snap, warnings):
        rows.append(("X", "user_annotation", snap.annotations.names[nm], d, t0, t1 - t0, b""))
    for e in np.flatnonzero(np.isin(h.action, INSTANT_ACTIONS)).tolist():
        rows.append(("i", "cpu_instant_event", ACTIONS[h.action[e]], int(h.device[e]), int(t_abs[e]), 0,
                     _instant_args(snap, e)))
    lanes = devices or [0]
    for d in lanes:
        rows.append(("M", "", "process_name", d, 0, 0, json.dumps({ks.META_NAME: device_name(d)}).encode()))
        rows.append(("M", "", "thread_name", d, 0, 0,
                     json.dumps({ks.META_NAME: f"{device_name(d)} allocator"}).encode()))
    n = len(rows)
    name_code = np.fromiter((names.setdefault(r[2], len(names)) for r in rows), dtype=np.int32, count=n)
    cats: dict[str, int] = {}
    cat_code = np.fromiter((cats.setdefault(r[1], len(cats)) for r in rows), dtype=np.int32, count=n)
    phs = ["X", "i", "M"]
    start = np.fromiter((r[4] for r in rows), dtype=np.int64, count=n)
    dev = np.fromiter((r[3] for r in rows), dtype=np.int64, count=n)
    lens = np.fromiter((len(r[6]) for r in rows), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    uniq = sorted(set(dev.tolist()))
    ev = DecodedEvents(
        ph=Interned(np.fromiter((phs.index(r[0]) for r in rows), dtype=np.int32, count=n), phs),
        cat=Interned(cat_code, list(cats)), name=Interned(name_code, list(names)),
        pid=Interned(np.searchsorted(uniq, dev).astype(np.int32), uniq),
        tid=Interned(np.zeros(n, dtype=np.int32), [0]), ts_int=start, ts_frac=np.zeros(n),
        dur=np.fromiter((r[5] for r in rows), dtype=np.float64, count=n), flow_id=[None] * n,
        args_blob=b"".join(r[6] for r in rows), args_offsets=offsets,
        key_args={f: np.full(n, KEY_DEFAULTS[f], dtype=np.int64) for f in KEY_FIELDS}, n_elements=n)
    return DecodedTrace(ev, {"memory_snapshot": {"protocol": snap.protocol, "file_size": snap.file_size}},
                        warnings, "object")


def snapshot_trace(snap: MemorySnapshot, progress: Progress | None = None) -> SnapshotTrace:
    """The :class:`SnapshotTrace` of a read snapshot."""
    warnings = list(snap.warnings)
    t_abs, moved, missing = _repaired_times(snap)
    if moved or missing:
        warnings.append(LoadWarning("memsnap_times", f"{missing:,} history entries have no time and {moved:,} a time "
                                    "before the entry before them: shown at that entry's time (history order kept)",
                                    moved + missing))
    snap.time_repairs = moved
    sums = totals(snap)
    bad = np.flatnonzero(sums.baseline < 0)
    if bad.size:
        warnings.append(LoadWarning("memsnap_totals", f"the history frees more than the segments and the history "
                                    f"allocate on {', '.join(device_name(int(d)) for d in bad)}: bytes allocated "
                                    "read below 0 early in the history", int(bad.size)))
    kt = build_trace(snap.path, _decoded(snap, t_abs, warnings), progress=progress)
    base = {f.name: getattr(kt, f.name) for f in fields(KinetoTrace)}
    base["source_format"] = FORMAT_NAME
    lanes = {}
    for ln in kt.lanes:
        if not ln.is_gpu and isinstance(ln.pid, int):
            lanes.setdefault(int(ln.pid), ln.index)
    return SnapshotTrace(**base, snapshot=snap, entry_ts=(t_abs - kt.origin_us).astype(np.float64), sums=sums,
                         device_lane=lanes)
