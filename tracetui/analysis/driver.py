"""The answers of a driver-call trace (issue 13): calls, launches, allocations, transfers,
synchronisation, ioctls, iterations, idle time after synchronize, compute vs transfer and
the pipeline phases, as one JSON-ready dict (:func:`driver_summary`, the ``driver`` key of
``tracetui summary --json``).

Every number is computed with numpy over the driver columns of a
:class:`~tracetui.driver.trace.DriverTrace` (``first .. first + n_driver``: the Kineto
events of a merged trace are never counted); the only Python loops run per distinct name,
per process or per phase.  Times are µs from the trace origin, sizes bytes.  The rules
(what a call does, iterations, phases) are ``tracetui/driver/pipeline.py``'s; every key,
its unit and its definition: ``docs/driver.md``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..driver.pairing import Flag
from ..driver.pipeline import CallClass, call_class, copy_direction, iterations, phase_of, phases
from ..driver.schema import DIRECTION_CODES, What, api_of, call_family
from ..driver.trace import NO_VALUE, DriverTrace, event_counts

#: points of the allocation timeline at most (evenly spaced, plus the peak)
TIMELINE_POINTS = 200
#: kernel launch configurations listed (most frequent first)
TOP_CONFIGS = 10

LAUNCH_RECORDS = "launch records"
LAUNCH_CALLS = "launch calls"
ALLOC_RECORDS = "alloc records"
ALLOC_CALLS = "alloc calls"
TRANSFER_RECORDS = "transfer records"
COPY_CALLS = "copy calls"
#: "H2D" -> 1 ... (the ``direction`` column's codes)
_DIRECTION_CODE = {name: code for code, name in DIRECTION_CODES.items()}


def _us(v: float) -> float:
    """µs rounded to the ns (sums of float times carry noise below that)."""
    return round(float(v), 3)


def _hex(cmd: int) -> str | None:
    return f"0x{cmd:08x}" if cmd >= 0 else None


class _View:
    """The driver events of a trace as local columns (index ``i`` = event ``first + i``)."""

    def __init__(self, trace: DriverTrace) -> None:
        f, n = trace.first, trace.n_driver
        self.trace = trace
        self.n = n
        self.ts = np.asarray(trace.ts[f:f + n], dtype=np.float64)
        self.dur = np.asarray(trace.dur[f:f + n], dtype=np.float64)
        self.end = self.ts + self.dur
        self.what = trace.what
        self.name_id = np.asarray(trace.name_id[f:f + n], dtype=np.int64)
        self.names = trace.names
        lane = np.asarray(trace.lane_of[f:f + n], dtype=np.int64)
        # processes: the pid of each event's lane (lines without a pid are one process)
        pids = [ln.pid for ln in trace.lanes]
        codes: dict[object, int] = {}
        lane_proc = np.array([codes.setdefault(p, len(codes)) for p in pids] or [0], dtype=np.int64)
        self.proc = lane_proc[lane] if n else np.zeros(0, np.int64)
        self.pid_of_proc = list(codes)
        self.lane = lane
        self.cls_of_name = np.array([int(call_class(nm)) for nm in self.names] or [0], dtype=np.uint8)
        self.is_call = (self.what == What.CALL) | (self.what == What.ENTRY)
        self.cls = np.where(self.is_call, self.cls_of_name[self.name_id], CallClass.OTHER).astype(np.uint8)
        self.launch_call = self.is_call & ((self.cls == CallClass.LAUNCH) | (self.cls == CallClass.GRAPH_LAUNCH))
        self.sync_call = self.is_call & (self.cls == CallClass.SYNC)

    def sel(self, w: What) -> np.ndarray:
        return np.flatnonzero(self.what == w)


def driver_summary(trace: DriverTrace) -> dict[str, Any]:
    """Every answer of a driver-call trace as one JSON-ready dict (see ``docs/driver.md``)."""
    v = _View(trace)
    launches_from = LAUNCH_RECORDS if (v.what == What.LAUNCH).any() else LAUNCH_CALLS
    counts = event_counts(trace)
    out: dict[str, Any] = {
        "kineto_events": counts.kineto,
        "events": counts.driver,
        "event_counts": {"calls": counts.calls, "ioctls": counts.ioctls, "records": counts.records,
                         "phases": counts.phases},
        "events_by_what": _by_what(v),
        "span_us": _us(v.end.max() - v.ts.min()) if v.n else 0.0,
        "processes": int(np.unique(v.proc).size),
        "threads": int(np.unique(v.lane).size),
        "lines": _lines(trace),
        "layouts": dict(trace.layouts),
        "calls": _calls(v),
    }
    out["call_families"] = _families(out["calls"])
    launches = _launches(v, launches_from)
    out["kernel_launches"] = launches.pop("kernel_launches")
    out["kernel_launches_from"] = launches_from
    out.update(launches)
    out["allocations"] = _allocations(v)
    transfers, transfers_from, copies_unknown = _transfers(v)
    out["transfers"] = transfers
    out["transfers_from"] = transfers_from
    out["copy_calls_without_direction"] = copies_unknown
    out["sync"] = _sync(v)
    out["ioctls"] = _ioctls(v)
    out["syscall_ioctls"] = _syscall_ioctls(v)
    out["iterations"] = _iterations(v)
    out["idle_after_sync"] = _idle_after_sync(v)
    out["compute_vs_transfer"] = _compute_vs_transfer(v, transfers)
    out["phases"] = _phases(v, launches_from)
    flags = trace.flags
    paired = (v.what == What.CALL) | (v.what == What.IOCTL)
    out["unfinished_calls"] = int((paired & ((flags & Flag.UNFINISHED) != 0)).sum())
    out["calls_without_begin"] = int((paired & ((flags & Flag.NO_BEGIN) != 0)).sum())
    out["names_inferred"] = int((paired & ((flags & Flag.NAME_INFERRED) != 0)).sum())
    out["warnings"] = [{"kind": w.kind, "message": w.message, "count": int(w.count)} for w in trace.warnings]
    return out


# ---- lines, calls, families ----------------------------------------------------------------

def _by_what(v: _View) -> dict[str, int]:
    counts = np.bincount(v.what, minlength=len(What))
    return {w.name.lower(): int(counts[w]) for w in What if counts[w]}


def _lines(trace: DriverTrace) -> dict[str, Any]:
    st = trace.lines
    return {"total": int(st.total), "json": int(st.json), "skipped": int(st.skipped_total),
            "skipped_by_reason": {str(r): int(c) for r, c in st.skipped.most_common()}}


def _calls(v: _View) -> list[dict[str, Any]]:
    """API calls (and sidecar entries) by name: count, time, errors (an end line with a
    non-zero return value); most frequent first."""
    idx = np.flatnonzero(v.is_call)
    if not idx.size:
        return []
    nid = v.name_id[idx]
    m = len(v.names)
    count = np.bincount(nid, minlength=m)
    total = np.bincount(nid, weights=v.dur[idx], minlength=m)
    ret = v.trace.retval[idx]
    err = np.bincount(nid, weights=((ret != NO_VALUE) & (ret != 0)).astype(np.float64), minlength=m)
    rows = []
    for k in np.flatnonzero(count).tolist():
        c = int(count[k])
        rows.append({"name": v.names[k], "count": c, "total_us": _us(total[k]), "mean_us": _us(total[k] / c),
                     "errors": int(err[k]), "class": CallClass(int(v.cls_of_name[k])).name.lower(),
                     "api": api_of(v.names[k])})
    rows.sort(key=lambda r: (-r["count"], -r["total_us"], r["name"]))
    return rows


def _families(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Calls grouped by API family (``cuMemAlloc`` holds ``cuMemAlloc_v2`` ...)."""
    fam: dict[str, dict[str, Any]] = {}
    for r in calls:
        f = fam.setdefault(call_family(r["name"]), {"family": call_family(r["name"]), "count": 0, "total_us": 0.0,
                                                    "names": []})
        f["count"] += r["count"]
        f["total_us"] += r["total_us"]
        f["names"].append(r["name"])
    rows = list(fam.values())
    for f in rows:
        f["total_us"] = _us(f["total_us"])
    rows.sort(key=lambda f: (-f["count"], -f["total_us"], f["family"]))
    return rows


# ---- launches, allocations, transfers, sync, ioctls ----------------------------------------

def _launches(v: _View, launches_from: str) -> dict[str, Any]:
    rec = v.sel(What.LAUNCH)
    calls = v.is_call & (v.cls == CallClass.LAUNCH)
    graph = v.is_call & (v.cls == CallClass.GRAPH_LAUNCH)
    n = int(rec.size) if launches_from == LAUNCH_RECORDS else int(calls.sum())
    configs: list[dict[str, Any]] = []
    if rec.size:
        gb = np.concatenate((v.trace.grid[rec], v.trace.block[rec]), axis=1)
        code = np.zeros(rec.size, np.int64)
        for j in range(gb.shape[1]):  # one dense code per distinct row, column by column (no row sort)
            col_u, col_code = np.unique(gb[:, j], return_inverse=True)
            _, code = np.unique(code * col_u.size + col_code.reshape(-1), return_inverse=True)
            code = code.reshape(-1)
        counts = np.bincount(code)
        first = np.full(counts.size, rec.size, np.int64)
        np.minimum.at(first, code, np.arange(rec.size))
        for k in np.lexsort((first, -counts))[:TOP_CONFIGS].tolist():
            g, b = gb[first[k], :3].tolist(), gb[first[k], 3:].tolist()
            threads = int(np.prod(g) * np.prod(b)) if min(g + b) >= 0 else None
            configs.append({"grid": g, "block": b, "threads": threads, "count": int(counts[k])})
    runtime = np.array([nm.startswith("cuda") for nm in v.names] or [False])[v.name_id] & calls
    return {"kernel_launches": n, "launch_calls": int(calls.sum()), "graph_launch_calls": int(graph.sum()),
            "launch_calls_by_api": {"driver": int(calls.sum() - runtime.sum()), "runtime": int(runtime.sum())},
            "launch_records": int(rec.size), "launch_configs": configs}


def _allocations(v: _View) -> dict[str, Any]:
    """Allocation records: count, bytes, and bytes allocated so far over time (the records'
    ``total_allocated`` where given, else the running sum of their sizes; per process, then
    added up over processes)."""
    tr = v.trace
    rec = v.sel(What.ALLOC)
    alloc_calls = int((v.is_call & (v.cls == CallClass.ALLOC)).sum())
    free_calls = int((v.is_call & (v.cls == CallClass.FREE)).sum())
    km = v.sel(What.KERNEL_MEMORY)
    out: dict[str, Any] = {
        "from": ALLOC_RECORDS if rec.size else ALLOC_CALLS,
        "count": int(rec.size) if rec.size else alloc_calls,
        "bytes": None, "peak_bytes": None, "timeline": [],
        "alloc_calls": alloc_calls, "free_calls": free_calls,
        "kernel_memory": {"count": int(km.size), "bytes": int(np.maximum(tr.size[km], 0).sum())},
    }
    if not rec.size:
        return out
    size = np.maximum(tr.size[rec], 0)
    out["bytes"] = int(size.sum())
    o = np.lexsort((rec, v.ts[rec], v.proc[rec]))
    r, size = rec[o], size[o]
    proc, tot = v.proc[r], tr.total_allocated[r]
    start = np.ones(r.size, dtype=bool)
    start[1:] = proc[1:] != proc[:-1]
    anchor = (tot >= 0) | start
    anchor_val = np.where(tot >= 0, tot, size)
    cum = np.cumsum(size)
    last = np.maximum.accumulate(np.where(anchor, np.arange(r.size), 0))
    value = anchor_val[last] + cum - cum[last]  # bytes allocated so far by the record's process
    delta = np.where(start, value, value - np.concatenate(([0], value[:-1])))
    t = v.ts[r]
    by_time = np.argsort(t, kind="stable")
    t, total = t[by_time], np.cumsum(delta[by_time])
    out["peak_bytes"] = int(total.max())
    keep = np.arange(t.size)
    if t.size > TIMELINE_POINTS:
        keep = np.unique(np.concatenate((np.linspace(0, t.size - 1, TIMELINE_POINTS - 1).round().astype(np.int64),
                                         [int(np.argmax(total))])))
    out["timeline"] = [[_us(a), int(b)] for a, b in zip(t[keep].tolist(), total[keep].tolist())]
    return out


def _transfers(v: _View) -> tuple[dict[str, Any], str, int]:
    """Per direction: count, bytes, time (µs) and GB/s, from the transfer records, else from
    the copy calls whose name gives the direction (no sizes: ``bytes`` is null)."""
    tr = v.trace
    rec = v.sel(What.TRANSFER)
    out: dict[str, Any] = {}
    if rec.size:
        d = tr.direction[rec]
        size = np.maximum(tr.size[rec], 0)
        for code, name in [*DIRECTION_CODES.items(), (0, "unknown")]:
            sel = d == code
            if code == 0 and not sel.any():
                continue
            b, us = int(size[sel].sum()), float(v.dur[rec][sel].sum())
            out[name] = {"count": int(sel.sum()), "bytes": b, "total_us": _us(us),
                         "gb_per_s": round(b / us / 1e3, 3) if us > 0 else None}
        return out, TRANSFER_RECORDS, 0
    copies = np.flatnonzero(v.is_call & (v.cls == CallClass.COPY))
    dir_of_name = np.array([_DIRECTION_CODE.get(copy_direction(nm), 0) for nm in v.names] or [0], np.uint8)
    d = dir_of_name[v.name_id[copies]]
    for code, name in DIRECTION_CODES.items():
        sel = d == code
        out[name] = {"count": int(sel.sum()), "bytes": None, "total_us": _us(v.dur[copies][sel].sum()),
                     "gb_per_s": None}
    return out, COPY_CALLS, int((d == 0).sum())


def _sync(v: _View) -> dict[str, Any]:
    """Blocking synchronize calls (stream, context, event, device): count and host time."""
    idx = np.flatnonzero(v.sync_call)
    by: list[dict[str, Any]] = []
    for k in np.unique(v.name_id[idx]).tolist():
        d = v.dur[idx][v.name_id[idx] == k]
        by.append({"name": v.names[k], "count": int(d.size), "total_us": _us(d.sum()), "max_us": _us(d.max())})
    by.sort(key=lambda r: (-r["total_us"], -r["count"], r["name"]))
    return {"count": int(idx.size), "total_us": _us(v.dur[idx].sum()),
            "max_us": _us(v.dur[idx].max()) if idx.size else 0.0, "by_name": by}


def _by_cmd(cmd: np.ndarray, dur: np.ndarray | None, ret: np.ndarray | None) -> list[dict[str, Any]]:
    if not cmd.size:
        return []
    uniq, inv, counts = np.unique(cmd, return_inverse=True, return_counts=True)
    rows = []
    total = np.bincount(inv, weights=dur, minlength=uniq.size) if dur is not None else None
    errs = np.bincount(inv, weights=((ret != NO_VALUE) & (ret != 0)).astype(np.float64), minlength=uniq.size) \
        if ret is not None else None
    for k, c in enumerate(uniq.tolist()):
        row: dict[str, Any] = {"cmd": _hex(int(c)), "count": int(counts[k])}
        if total is not None:
            row["total_us"] = _us(total[k])
            row["mean_us"] = _us(total[k] / counts[k])
        if errs is not None:
            row["errors"] = int(errs[k])
        rows.append(row)
    rows.sort(key=lambda r: (-r["count"], -r.get("total_us", 0.0), r["cmd"] or ""))
    return rows


def _ioctls(v: _View) -> list[dict[str, Any]]:
    """Kernel-space ioctls by command (the begin line's ``ioctl_cmd``; null when unknown)."""
    idx = v.sel(What.IOCTL)
    return _by_cmd(v.trace.ioctl_cmd[idx], v.dur[idx], v.trace.retval[idx])


def _syscall_ioctls(v: _View) -> list[dict[str, Any]]:
    """ioctl system call records by command (``cmd``)."""
    idx = v.sel(What.SYSCALL)
    return _by_cmd(v.trace.ioctl_cmd[idx], None, None)


# ---- iterations, idle after sync, compute vs transfer, phases --------------------------------

def _procs(v: _View) -> list[tuple[int, np.ndarray]]:
    """(process code, its API calls) per process, in order of first call."""
    calls = np.flatnonzero(v.is_call)
    out = []
    for p in np.unique(v.proc[calls]).tolist():
        out.append((p, calls[v.proc[calls] == p]))
    out.sort(key=lambda pc: float(v.ts[pc[1]].min()))
    return out


def _iter_stats(counts: np.ndarray) -> dict[str, Any]:
    if not counts.size:
        return {"count": 0, "launches_per_iteration": None, "min": None, "max": None, "mean": None}
    return {"count": int(counts.size), "launches_per_iteration": float(np.median(counts)),
            "min": int(counts.min()), "max": int(counts.max()), "mean": round(float(counts.mean()), 3)}


def _iterations(v: _View) -> dict[str, Any]:
    """Iterations (launches between two synchronize calls), per process, all counted."""
    parts, by_proc = [], []
    for p, calls in _procs(v):
        its = iterations(v.ts[calls], v.cls[calls])
        parts.append(its.launches)
        if its.launches.size:
            by_proc.append({"pid": v.pid_of_proc[p], **_iter_stats(its.launches)})
    out = _iter_stats(np.concatenate(parts) if parts else np.zeros(0, np.int64))
    out["by_process"] = by_proc
    return out


def _sync_gaps(v: _View) -> tuple[np.ndarray, np.ndarray]:
    """(local index of the synchronize call that opens each gap, gap µs): from the return of
    the last synchronize call before a kernel launch of the same process to that launch's
    start (consecutive synchronize calls end one gap, timed from the last to return; only
    gaps followed by a launch)."""
    s = np.flatnonzero(v.sync_call)
    la = np.flatnonzero(v.launch_call)
    key = np.concatenate((v.end[s], v.ts[la]))
    proc = np.concatenate((v.proc[s], v.proc[la]))
    idx = np.concatenate((s, la))
    is_launch = np.concatenate((np.zeros(s.size, bool), np.ones(la.size, bool)))
    o = np.lexsort((is_launch, key, proc))  # at one time a return comes before a launch
    key, proc, is_launch, idx = key[o], proc[o], is_launch[o], idx[o]
    hit = np.flatnonzero(is_launch[1:] & ~is_launch[:-1] & (proc[1:] == proc[:-1])) + 1
    return idx[hit - 1], key[hit] - key[hit - 1]


def sync_calls(trace: DriverTrace) -> np.ndarray:
    """Event ids of the blocking synchronize calls of a driver-call trace."""
    return np.flatnonzero(_View(trace).sync_call).astype(np.int64) + trace.first


def idle_after_sync_calls(trace: DriverTrace) -> tuple[np.ndarray, np.ndarray]:
    """GPU idle seen from the host after synchronize calls of a driver-call trace: (event ids
    of the synchronize calls that open a gap, gap µs); the definition of ``idle_after_sync``
    (:func:`_sync_gaps`)."""
    calls, gaps = _sync_gaps(_View(trace))
    return calls + trace.first, gaps


def _idle_after_sync(v: _View) -> dict[str, Any]:
    """GPU idle seen from the host (:func:`_sync_gaps`): count, total, max, mean."""
    gaps = _sync_gaps(v)[1]
    return {"count": int(gaps.size), "total_us": _us(gaps.sum()), "max_us": _us(gaps.max()) if gaps.size else 0.0,
            "mean_us": _us(gaps.mean()) if gaps.size else 0.0}


def _compute_vs_transfer(v: _View, transfers: dict[str, Any]) -> dict[str, Any]:
    """compute = the host's wait in the synchronize calls that close iterations (the GPU
    runs the iteration's work) + the time of the kernel launch calls (the host feeding the
    GPU); transfer = the transfer records' durations, else the copy calls'.  See
    docs/driver.md for what this estimate can and cannot say."""
    wait = 0.0
    for _p, calls in _procs(v):
        its = iterations(v.ts[calls], v.cls[calls])
        wait += float(v.dur[calls[its.sync]].sum())
    launch = float(v.dur[v.launch_call].sum())
    transfer = float(sum(d["total_us"] for d in transfers.values()))
    compute = wait + launch
    return {"compute_us": _us(compute), "sync_wait_us": _us(wait), "launch_call_us": _us(launch),
            "transfer_us": _us(transfer), "ratio": round(compute / transfer, 3) if transfer > 0 else None}


def _phase_time(v: _View) -> np.ndarray:
    """Per driver event, the time that decides its phase: a call's start; for a record or
    an ioctl inside a call, that call's start (a record is printed while its call runs or
    as it returns: it is that call's); for any other record, when it was printed (a
    transfer record's start is its printed time minus its length, which can lie before
    its own call, in the phase before)."""
    tr = v.trace
    t = np.where(v.what == What.TRANSFER, v.end, v.ts)
    par = np.asarray(tr.parent[tr.first:tr.first + v.n], dtype=np.int64) - tr.first
    inside = np.flatnonzero(~v.is_call & (par >= 0) & (par < v.n))
    inside = inside[v.is_call[par[inside]]]
    t[inside] = v.ts[par[inside]]
    return t


def _phases(v: _View, launches_from: str) -> list[dict[str, Any]]:
    """Pipeline phases per process (``pipeline.phases``) and what happens in each: calls by
    their start, records and ioctls by :func:`_phase_time`."""
    tr = v.trace
    launch_ev = v.what == What.LAUNCH if launches_from == LAUNCH_RECORDS else v.is_call & (v.cls == CallClass.LAUNCH)
    transfer_rec = (v.what == What.TRANSFER).any()
    transfer_ev = v.what == What.TRANSFER if transfer_rec else v.is_call & (v.cls == CallClass.COPY)
    alloc_ev = v.what == What.ALLOC
    out: list[dict[str, Any]] = []
    for p, calls in _procs(v):
        plist = phases(v.ts[calls], v.end[calls], v.cls[calls])
        if not plist:
            continue
        mine = np.flatnonzero(v.proc == p)
        where = phase_of(_phase_time(v)[mine], plist)
        for k, ph in enumerate(plist):
            ev = mine[where == k]
            rows_call = ev[v.is_call[ev]]
            tx = ev[transfer_ev[ev]]
            al = ev[alloc_ev[ev]]
            out.append({
                "pid": v.pid_of_proc[p], "name": ph.name, "start_us": _us(ph.start), "end_us": _us(ph.end),
                "dur_us": _us(ph.end - ph.start), "calls": int(rows_call.size),
                "launches": int(launch_ev[ev].sum()), "syncs": int(v.sync_call[ev].sum()),
                "allocations": int(al.size), "alloc_bytes": int(np.maximum(tr.size[al], 0).sum()),
                "transfers": int(tx.size),
                "transfers_bytes": int(np.maximum(tr.size[tx], 0).sum()) if transfer_rec else None,
                "ioctls": int((v.what[ev] == What.IOCTL).sum()),
            })
    return out
