"""The memory answers of a CUDA memory snapshot as JSON-ready dicts: ``tracetui memory
SNAPSHOT --json`` (:func:`snapshot_document`), the ``memory`` key of ``tracetui summary``
(:func:`snapshot_summary`) and ``tracetui diff A.pickle B.pickle`` (:func:`snapshot_diff`).

The keys a Kineto trace's document has (:mod:`.memory_doc`) mean the same here, computed by
the same functions (:func:`~.memory_peak.peak`, :func:`~.memory_peak.live_rows`); the
snapshot's own are added (docs/memory.md, "CUDA memory snapshots").  Bytes are ints, times µs
relative to the snapshot's first entry (``origin_us``: its ``time_us``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..link.memsnap_kineto import ClockLink, link_clocks
from ..memsnap.model import ACTIONS, FREE_REQUESTED, SNAPSHOT
from ..memsnap.trace import SnapshotTrace
from ..session import LinkedTrace
from .memory import Device, MemoryModel, binned_max, memory_model
from .memory_peak import Peak, peak
from .memsnap import (
    SnapOwner,
    entry_index,
    live_at,
    ooms,
    op_at,
    owners_by,
    segment_stats,
    stack_frames,
)

#: blocks listed per owner (the largest) in the JSON
LARGEST_BLOCKS = 3
#: points of the allocated/reserved timeline in the JSON
TIMELINE_BINS = 20


class _Beside:
    """A Kineto trace of the same run and the measured clock link (or none)."""

    def __init__(self, linked: LinkedTrace) -> None:
        snap = linked.snapshot_trace
        self.kt = linked.kineto if linked.memory is not None else None
        self.clock: ClockLink | None = link_clocks(self.kt, snap.snapshot) if self.kt is not None else None
        self.origin = snap.origin_us

    def op(self, ts_us: float) -> dict[str, Any] | None:
        """The op open in the trace at a snapshot time (µs from the snapshot's origin)."""
        if self.clock is None:
            return None
        t = float(self.clock.to_trace(self.origin + ts_us))
        ev = op_at(self.kt, t)
        return None if ev < 0 else {"event": ev, "name": self.kt.name(ev), "ts_us": t}

    def json(self) -> dict[str, Any] | None:
        if self.kt is None:
            return None
        c = self.clock
        if c is None:
            return {"trace": self.kt.path, "linked": False,
                    "why": "the snapshot and the trace share fewer than 2 profiler annotations: times not aligned"}
        return {"trace": self.kt.path, "linked": True, "offset_us": c.offset_us, "pairs": c.pairs, "names": c.names,
                "spread_us": c.spread_us, "candidates": c.candidates, "trace_base_us": c.base_us,
                "clock_difference_us": c.clock_difference_us}


def _owner_json(kt: SnapshotTrace, m: MemoryModel, o: SnapOwner, beside: _Beside | None) -> dict[str, Any]:
    snap, h = kt.snapshot, kt.snapshot.history
    frame = None
    if o.frame >= 0:
        file, line, name = snap.frames.text(o.frame)
        frame = {"filename": file, "line": line, "name": name}
    largest = []
    for r in o.rows[:LARGEST_BLOCKS].tolist():
        e = int(m.entry[r])
        block = {"bytes": int(m.nbytes[r]), "ts_us": float(m.ts[r]), "entry": entry_index(kt, m, r),
                 "addr": int(m.addr[r]), "stream": int(h.stream[e]), "frames": stack_frames(snap, int(h.stack[e]))}
        if beside is not None and beside.kt is not None:
            block["op"] = beside.op(float(m.ts[r]))
        largest.append(block)
    return {"owner": o.label, "bytes": o.bytes, "count": o.count, "frame": frame, "largest": largest}


def _owners(kt: SnapshotTrace, m: MemoryModel, rows: np.ndarray, by: str, top: int,
            beside: _Beside | None) -> list[dict[str, Any]]:
    return [_owner_json(kt, m, o, beside) for o in owners_by(kt, m, rows, by)[:top]]


def _peak_keys(kt: SnapshotTrace, m: MemoryModel, p: Peak | None, by: str, top: int, beside: _Beside | None,
               reserved: bool) -> dict[str, Any]:
    names = (("peak_reserved_bytes", "peak_reserved_ts_us", "peak_reserved_event", "peak_reserved_entry",
              "live_at_reserved_peak_bytes", "live_at_reserved_peak_blocks", "before_trace_at_reserved_peak_bytes",
              "owners_at_reserved_peak") if reserved else
             ("peak_allocated_bytes", "peak_ts_us", "peak_event", "peak_entry", "live_at_peak_bytes",
              "live_at_peak_blocks", "before_trace_bytes", "owners_at_peak"))
    if p is None:
        return dict(zip(names, [None] * 7 + [[]]))
    out = dict(zip(names, (p.value, p.ts, None, entry_index(kt, m, p.row), p.live_bytes, int(p.live.size),
                           p.before_trace_bytes, _owners(kt, m, p.live, by, top, beside))))
    if reserved:
        out["allocated_at_reserved_peak_bytes"] = p.allocated
    return out


def _timeline(m: MemoryModel, d: Device, start_reserved: int, bins: int) -> list[dict[str, Any]]:
    """The highest bytes allocated and reserved in each of ``bins`` equal spans of the history."""
    s = m.rows_of(d)
    ts = m.ts[s]
    if not ts.size or bins <= 0:
        return []
    lo, hi = float(ts[0]), float(ts[-1])
    hi = hi if hi > lo else lo + 1.0
    alloc = binned_max(ts, m.allocated[s], d.baseline, lo, hi, bins)
    res = binned_max(ts, m.reserved[s], start_reserved, lo, hi, bins)
    edges = np.linspace(lo, hi, bins + 1)
    return [{"ts_us": float(edges[i]), "allocated_bytes": int(alloc[i]), "reserved_bytes": int(res[i])}
            for i in range(bins)]


def _at(kt: SnapshotTrace, m: MemoryModel, d: Device, t: float, by: str, top: int,
        beside: _Beside | None) -> dict[str, Any]:
    rows = live_at(m, d, t)
    k = int(np.searchsorted(m.ts[d.lo:d.hi], t, side="right"))
    alloc = d.baseline if k == 0 else int(m.allocated[d.lo + k - 1])
    res = int(m.reserved[d.lo + max(k - 1, 0)]) if d.hi > d.lo else 0
    return {"ts_us": t, "allocated_bytes": alloc, "reserved_bytes": res, "live_blocks": int(rows.size),
            "live_bytes": int(m.nbytes[rows].sum()), "before_trace_bytes": alloc - int(m.nbytes[rows].sum()),
            "owners": _owners(kt, m, rows, by, top, beside)}


def device_json(kt: SnapshotTrace, m: MemoryModel, d: Device, *, by: str = "frame", top: int = 10,
                beside: _Beside | None = None, at_us: float | None = None, bins: int = TIMELINE_BINS,
                full: bool = True) -> dict[str, Any]:
    """One device's answers (docs/memory.md lists every key); ``full`` False: the short form of
    ``summary``."""
    snap, h = kt.snapshot, kt.snapshot.history
    s = m.rows_of(d)
    b = m.nbytes[s]
    entries = m.entry[s]
    act = h.action[entries]
    out: dict[str, Any] = {"device": d.name, "device_type": d.device_type, "device_id": d.device_id,
                           "entries": int(d.hi - d.lo), "allocations": int((b > 0).sum()), "frees": int((b < 0).sum())}
    out.update(_peak_keys(kt, m, peak(m, d, "allocated"), by, top, beside, reserved=False))
    res = _peak_keys(kt, m, peak(m, d, "reserved"), by, top, beside, reserved=True)
    seg = segment_stats(snap, d.device_id)
    segs = {"count": seg.segments, "reserved_bytes": seg.reserved, "allocated_bytes": seg.allocated,
            "free_bytes": seg.free, "largest_free_block_bytes": seg.largest_free, "fragmentation": seg.fragmentation,
            "expandable": seg.expandable, "by_pool": seg.by_pool}
    if not full:
        out.update({"peak_reserved_bytes": res["peak_reserved_bytes"], "segments": segs,
                    "ooms": len(ooms_of(kt, m, d))})
        return out
    out.update(res)
    before, never = m.before_trace[s], m.never_freed()[s]
    start_res = int(kt.sums.reserved_baseline[d.device_id]) if d.device_id < kt.sums.reserved_baseline.size else 0
    snap_rows = np.flatnonzero(act == SNAPSHOT)
    out.update({
        "actions": {ACTIONS[c]: int(n) for c, n in enumerate(np.bincount(act, minlength=len(ACTIONS))[:len(ACTIONS)])
                    if n},
        "free_requested": int((act == FREE_REQUESTED).sum()),
        "allocated_bytes": int(b[b > 0].sum()), "freed_bytes": int(-b[b < 0].sum()),
        "start_allocated_bytes": d.baseline, "end_allocated_bytes": int(m.allocated[d.hi - 1]) if d.hi > d.lo else 0,
        "start_reserved_bytes": start_res,
        "end_reserved_bytes": int(m.reserved[d.hi - 1]) if d.hi > d.lo else start_res,
        "frees_before_trace": {"count": int(before.sum()), "bytes": int(-b[before].sum())},
        "never_freed": {"count": int(never.sum()), "bytes": int(b[never].sum())},
        "snapshot_entry_bytes": int(h.size[entries[snap_rows[-1]]]) if snap_rows.size else None,
        "segments": segs,
        "timeline": _timeline(m, d, start_res, bins),
        "ooms": [_oom_json(kt, m, o, by, top, beside) for o in ooms_of(kt, m, d)],
    })
    if at_us is not None:
        out["at"] = _at(kt, m, d, at_us, by, top, beside)
    return out


def ooms_of(kt: SnapshotTrace, m: MemoryModel, d: Device) -> list:
    return [o for o in ooms(kt, m) if o.device.index == d.index]


def _oom_json(kt: SnapshotTrace, m: MemoryModel, o, by: str, top: int, beside: _Beside | None) -> dict[str, Any]:
    return {"entry": o.entry, "ts_us": o.ts, "requested_bytes": o.requested,
            "device_free_bytes": o.device_free if o.device_free >= 0 else None, "allocated_bytes": o.allocated,
            "reserved_bytes": o.reserved, "stream": o.stream, "frames": stack_frames(kt.snapshot, o.stack),
            "live_blocks": int(o.live.size), "live_bytes": int(m.nbytes[o.live].sum()),
            "owners": _owners(kt, m, o.live, by, top, beside),
            "op": beside.op(o.ts) if beside is not None and beside.kt is not None else None}


def snapshot_document(linked: LinkedTrace, *, top: int = 10, by: str = "frame", at_us: float | None = None,
                      bins: int = TIMELINE_BINS) -> dict[str, Any]:
    """``tracetui memory SNAPSHOT --json`` (docs/memory.md)."""
    kt = linked.snapshot_trace
    m = memory_model(kt)
    snap = kt.snapshot
    beside = _Beside(linked)
    return {"source": linked.title, "format": kt.source_format, "origin_us": kt.origin_us,
            "protocol": snap.protocol, "file_size": snap.file_size, "group_by": by,
            "entries": snap.history.n, "actions": snap.action_counts(), "memory_events": m.n_rows,
            "unreadable_events": m.unreadable,
            "irregular": {"reallocated_live": m.reallocated_live, "unmatched_frees": m.unmatched_frees,
                          "size_mismatches": m.size_mismatches},
            "devices": [device_json(kt, m, d, by=by, top=top, beside=beside, at_us=at_us, bins=bins)
                        for d in m.devices],
            "allocator_settings": snap.allocator_settings, "beside": beside.json(),
            "warnings": [w.message for w in kt.warnings]}


def snapshot_summary(linked: LinkedTrace, top: int = 5) -> dict[str, Any] | None:
    """The ``memory`` key of ``summary`` for a snapshot: the short form per device."""
    kt = linked.snapshot_trace
    if kt is None:
        return None
    m = memory_model(kt)
    return {"memory_events": m.n_rows, "format": kt.source_format,
            "devices": [device_json(kt, m, d, top=top, full=False) for d in m.devices]}


def peak_owners(linked: LinkedTrace, by: str = "frame") -> dict[str, dict[str, int]]:
    """Per device: owner label -> bytes live at the allocated peak (for the diff)."""
    kt = linked.snapshot_trace
    m = memory_model(kt)
    out = {}
    for d in m.devices:
        p = peak(m, d, "allocated")
        out[d.name] = {o.label: o.bytes for o in owners_by(kt, m, p.live, by)} if p is not None else {}
        if p is not None and p.before_trace_bytes:
            out[d.name]["(allocated before the history)"] = p.before_trace_bytes
    return out


def snapshot_diff(a: LinkedTrace, b: LinkedTrace, *, by: str = "frame", top: int = 20) -> dict[str, Any]:
    """``tracetui diff A.pickle B.pickle``: per device, the peak of each side and the bytes live at
    it by owner, A / B / delta (B - A), largest |delta| first."""
    pa, pb = peak_owners(a, by), peak_owners(b, by)
    ma, mb = memory_model(a.snapshot_trace), memory_model(b.snapshot_trace)
    devices = []
    for name in sorted(set(pa) | set(pb)):
        oa, ob = pa.get(name, {}), pb.get(name, {})
        rows = [{"owner": k, "a_bytes": oa.get(k, 0), "b_bytes": ob.get(k, 0),
                 "delta_bytes": ob.get(k, 0) - oa.get(k, 0)} for k in set(oa) | set(ob)]
        rows.sort(key=lambda r: (-abs(r["delta_bytes"]), -max(r["a_bytes"], r["b_bytes"]), r["owner"]))
        peaks = []
        for m in (ma, mb):
            dev = next((d for d in m.devices if d.name == name), None)
            p = peak(m, dev, "allocated") if dev is not None else None
            peaks.append((p.value, p.ts) if p is not None else (None, None))
        devices.append({"device": name, "a_peak_allocated_bytes": peaks[0][0], "a_peak_ts_us": peaks[0][1],
                        "b_peak_allocated_bytes": peaks[1][0], "b_peak_ts_us": peaks[1][1],
                        "delta_peak_bytes": (peaks[1][0] or 0) - (peaks[0][0] or 0),
                        "owners": rows[:top], "owners_total": len(rows)})
    return {"a": a.title, "b": b.title, "group_by": by, "devices": devices}
