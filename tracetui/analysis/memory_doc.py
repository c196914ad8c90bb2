"""The memory answers as JSON-ready dicts: ``tracetui memory --json`` (:func:`memory_document`),
the ``memory`` key of ``tracetui summary`` (:func:`memory_summary`) and the allocations of an
exported subtree (:func:`subtree_memory`).  Rules and units: docs/memory.md (bytes as ints,
times µs relative to the trace origin).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..kineto.trace import KinetoTrace
from ..session import LinkedTrace
from .memory import Device, MemoryModel, memory_model
from .memory_peak import OUTSIDE, Owner, Peak, allocating_ops, node_index, owners, peak, step_rows

#: blocks listed per owner (the largest) in the JSON
LARGEST_BLOCKS = 3


def _et_node(linked: LinkedTrace | None, op: int) -> int | None:
    """The id of the ET node linked to Kineto event ``op`` (None: no ET, no link)."""
    if linked is None or linked.et is None or linked.link is None or op < 0:
        return None
    k2e = linked.link.kineto_to_et
    if op >= k2e.size or k2e[op] < 0:
        return None
    return int(linked.et.ids[int(k2e[op])])


def _owner_json(m: MemoryModel, o: Owner, linked: LinkedTrace | None) -> dict[str, Any]:
    largest = [{"bytes": int(m.nbytes[r]), "ts_us": float(m.ts[r]), "event": int(m.event[r]),
                "op_event": int(op) if op >= 0 else None, "et_node": _et_node(linked, int(op))}
               for r, op in zip(o.rows[:LARGEST_BLOCKS].tolist(), o.op_events[:LARGEST_BLOCKS].tolist())]
    return {"op": o.op, "bytes": o.bytes, "count": o.count,
            "shapes": [{"shapes": s, "bytes": b, "count": c} for s, b, c in o.shapes],
            "callers": [{"op": s, "bytes": b, "count": c} for s, b, c in o.callers],
            "largest": largest}


def _peak_json(trace: KinetoTrace, m: MemoryModel, p: Peak | None, linked: LinkedTrace | None, top: int,
               reserved: bool) -> dict[str, Any]:
    """The keys of one peak: allocated (``peak_allocated_bytes``, ``peak_ts_us`` ...) or
    reserved (``peak_reserved_bytes``, ``peak_reserved_ts_us`` ...); values None without it."""
    names = (("peak_reserved_bytes", "peak_reserved_ts_us", "peak_reserved_event", "live_at_reserved_peak_bytes",
              "live_at_reserved_peak_blocks", "before_trace_at_reserved_peak_bytes", "owners_at_reserved_peak")
             if reserved else
             ("peak_allocated_bytes", "peak_ts_us", "peak_event", "live_at_peak_bytes", "live_at_peak_blocks",
              "before_trace_bytes", "owners_at_peak"))
    if p is None:
        return dict(zip(names, [None] * 6 + [[]]))
    out = dict(zip(names, (p.value, p.ts, p.event, p.live_bytes, int(p.live.size), p.before_trace_bytes,
                           [_owner_json(m, o, linked) for o in owners(trace, m, p.live, linked)[:top]])))
    if reserved:
        out["allocated_at_reserved_peak_bytes"] = p.allocated
    return out


def device_json(trace: KinetoTrace, m: MemoryModel, d: Device, linked: LinkedTrace | None = None,
                top: int = 10, full: bool = True) -> dict[str, Any]:
    """One device's answers (docs/memory.md lists every key); ``full`` False: the short form
    of ``summary`` (counts, the peaks and the owners at the allocated peak)."""
    s = m.rows_of(d)
    b = m.nbytes[s]
    allocs = np.flatnonzero(b > 0) + d.lo
    out: dict[str, Any] = {"device": d.name, "device_type": d.device_type, "device_id": d.device_id,
                           "allocations": int(allocs.size), "frees": int((b < 0).sum())}
    out.update(_peak_json(trace, m, peak(m, d, "allocated"), linked, top, reserved=False))
    res = _peak_json(trace, m, peak(m, d, "reserved"), linked, top, reserved=True)
    if not full:
        out["peak_reserved_bytes"] = res["peak_reserved_bytes"]
        return out
    out.update(res)
    before = m.before_trace[s]
    never = m.never_freed()[s]
    out.update({
        "events": int(d.hi - d.lo), "allocated_bytes": int(b[b > 0].sum()), "freed_bytes": int(-b[b < 0].sum()),
        "start_allocated_bytes": d.baseline, "end_allocated_bytes": int(m.allocated[d.hi - 1]),
        "frees_before_trace": {"count": int(before.sum()), "bytes": int(-b[before].sum())},
        "never_freed": {"count": int(never.sum()), "bytes": int(b[never].sum())},
        "totals_from": d.totals_from, "totals_mismatches": d.totals_mismatches,
        "top_ops": allocating_ops(trace, m, allocs)[:top],
        "by_step": step_rows(trace, m, d),
    })
    return out


def memory_document(linked: LinkedTrace, top: int = 10) -> dict[str, Any]:
    """``tracetui memory --json``: ``source``, ``origin_us``, ``memory_events``,
    ``unreadable_events``, ``irregular`` (counts of odd sequences), ``devices`` (one
    :func:`device_json` per device: GPUs by type and id, the CPU last)."""
    kt = linked.kineto
    m = memory_model(kt)
    return {"source": linked.title, "origin_us": kt.origin_us, "memory_events": m.n_rows + m.unreadable,
            "unreadable_events": m.unreadable,
            "irregular": {"reallocated_live": m.reallocated_live, "unmatched_frees": m.unmatched_frees,
                          "size_mismatches": m.size_mismatches},
            "devices": [device_json(kt, m, d, linked, top) for d in m.devices]}


def memory_summary(linked: LinkedTrace, top: int = 5) -> dict[str, Any] | None:
    """The ``memory`` key of ``summary``: ``devices`` in the short form of :func:`device_json`;
    None when the trace has no ``[memory]`` events."""
    kt = linked.kineto
    m = memory_model(kt)
    if not m.n_rows:
        return None
    return {"memory_events": m.n_rows + m.unreadable,
            "devices": [device_json(kt, m, d, linked, top, full=False) for d in m.devices]}


def subtree_memory(linked: LinkedTrace, root: int | None) -> dict[str, Any] | None:
    """What the subtree of ``root`` (None: the whole trace) allocated and freed: ``devices``
    (per device ``allocations``, ``allocated_bytes``, ``frees``, ``freed_bytes``,
    ``net_bytes``, ``transient``, ``transient_bytes``), ``allocations`` (every block
    allocated in it, by time: where, when, by which op, freed when and by what) and
    ``outside_frees`` (frees in it of blocks allocated outside it or before the trace).
    None when the trace has no ``[memory]`` events."""
    kt = linked.kineto
    m = memory_model(kt)
    if not m.n_rows:
        return None
    if root is None:
        rows = np.arange(m.n_rows)
        devices = []
        for d in m.devices:
            b = m.nbytes[m.rows_of(d)]
            paired = b[(b > 0) & (m.pair[m.rows_of(d)] >= 0)]
            devices.append({"device": d.name, "allocations": int((b > 0).sum()), "allocated_bytes": int(b[b > 0].sum()),
                            "frees": int((b < 0).sum()), "freed_bytes": int(-b[b < 0].sum()),
                            "transient": int(paired.size), "transient_bytes": int(paired.sum())})
    else:
        idx = node_index(kt)
        rows = idx.rows_under(root)
        devices = [{"device": nm.device, "allocations": nm.allocations, "allocated_bytes": nm.allocated_bytes,
                    "frees": nm.frees, "freed_bytes": nm.freed_bytes, "transient": nm.transient,
                    "transient_bytes": nm.transient_bytes} for nm in idx.query(root)]
    for d in devices:
        d["net_bytes"] = d["allocated_bytes"] - d["freed_bytes"]
    inside = np.zeros(m.n_rows, dtype=bool)
    inside[rows] = True
    rows = rows[np.lexsort((m.event[rows], m.ts[rows]))]  # by time, all devices together
    own = m.owner
    names = np.asarray(kt.names, dtype=object)

    def name(ev: int) -> str | None:
        return None if ev < 0 else str(names[kt.name_id[ev]])

    allocs, frees = [], []
    for r in rows.tolist():
        if m.nbytes[r] > 0:
            f = int(m.pair[r])
            allocs.append({"event": int(m.event[r]), "ts_us": float(m.ts[r]), "device": m.devices[m.dev[r]].name,
                           "bytes": int(m.nbytes[r]), "addr": int(m.addr[r]), "op": name(int(own[r])) or OUTSIDE,
                           "op_event": int(own[r]) if own[r] >= 0 else None, "et_node": _et_node(linked, int(own[r])),
                           "freed_ts_us": float(m.ts[f]) if f >= 0 else None,
                           "lifetime_us": float(m.ts[f] - m.ts[r]) if f >= 0 else None,
                           "freed_by": (name(int(own[f])) or OUTSIDE) if f >= 0 else None,
                           "freed_inside": bool(inside[f]) if f >= 0 else False})
        elif m.nbytes[r] < 0 and (m.pair[r] < 0 or not inside[m.pair[r]]):
            a = int(m.pair[r])
            frees.append({"event": int(m.event[r]), "ts_us": float(m.ts[r]), "device": m.devices[m.dev[r]].name,
                          "bytes": int(-m.nbytes[r]), "addr": int(m.addr[r]), "op": name(int(own[r])) or OUTSIDE,
                          "allocated_ts_us": float(m.ts[a]) if a >= 0 else None,
                          "allocated_by": (name(int(own[a])) or OUTSIDE) if a >= 0 else None,
                          "before_trace": bool(m.before_trace[r])})
    return {"devices": devices, "allocations": allocs, "outside_frees": frees}
