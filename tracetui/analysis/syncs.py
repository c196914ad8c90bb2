"""What host synchronisation calls and stream waits waited for (one definition, shared by
the critical path and the findings rules).

**Host sync wait** (:func:`host_sync_waits`): a *blocking* host call -- device, stream or
event synchronize (``cudaDeviceSynchronize``, ``cudaStreamSynchronize``,
``cudaEventSynchronize``, their HIP and driver-API names), a synchronous copy
(``cudaMemcpy``, ``hipMemcpyDtoH``, ...), or an asynchronous copy into pageable host
memory (``Memcpy DtoH (Device -> Pageable)``, synchronous in CUDA) that returned after its
copy finished -- waited for one GPU event, the
*waited* event.  Its **wait** is the time from the call's start until the waited event
ended, clipped to the call: ``clip(end(waited), call start, call end) - call start``
(0 when the GPU work was already done).  ``aten::item`` / ``aten::_local_scalar_dense``
wait through the calls nested in them (``op`` names the innermost cpu_op above a call).

Which GPU event a call waited for:

- stream synchronize: the last GPU event launched on that stream before the call started
  (GPU work on a stream runs in launch order).  The stream comes from the CUPTI record
  (``cuda_sync`` "Stream Sync", same correlation); without one it is **inferred**: of the
  last events launched before the call on every stream, the one that ended last but no
  later than the call's return (plus :data:`CLOCK_TOL_US`);
- device synchronize: the latest-ending of the last events launched before the call on
  every stream (exact);
- event synchronize: with the CUPTI "Event Sync" record, the last GPU event launched on
  the recorded stream before its ``cudaEventRecord`` call (exact); without, inferred as
  for a stream synchronize;
- a copy: the copy it launched (a synchronous copy: exact; an asynchronous one: inferred
  from its times).

**Stream wait** (:func:`stream_waits`): ``cudaStreamWaitEvent`` makes the next GPU event
launched on the waiting stream wait for the GPU work recorded before the
``cudaEventRecord`` it names.  Only the CUPTI "Stream Wait Event" record says which
streams and which record (Kineto writes them when CUDA sync events are enabled); waits
without one are counted in ``unresolved``.  Times are µs relative to the trace origin.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import msgspec
import numpy as np

from ..kineto import schema
from ..kineto.kinds import (
    BLOCKING_SYNC_RE,
    CUPTI_EVENT_SYNC,
    CUPTI_STREAM_SYNC,
    CUPTI_STREAM_WAIT,
    EVENT_RECORD_RE,
    GPU_WORK_KINDS,
    LAUNCH_KINDS,
    SYNC_COPY_RE,
    Kind,
    LaunchClass,
    launch_class_of_name,
)
from ..kineto.trace import KinetoTrace
from ..names import head
from .frames import per_trace

#: how far (µs) a GPU event may end after the host call that waited for it returned
#: (GPU and host timestamps are converted from two clocks)
CLOCK_TOL_US = 5.0


class SyncKind(IntEnum):
    """What a blocking host call waits for."""

    DEVICE = 0  #: every stream of the device
    STREAM = 1  #: one stream
    EVENT = 2  #: a recorded event
    COPY = 3  #: its own copy (synchronous copy, or a device-to-host copy into pageable memory)


@dataclass(frozen=True)
class SyncWaits:
    """One row per blocking host call (columns, in call start order)."""

    call: np.ndarray  #: int64 event id of the runtime/driver call
    kind: np.ndarray  #: uint8 :class:`SyncKind`
    waited: np.ndarray  #: int64 GPU event waited for, -1 when none was found
    wait_us: np.ndarray  #: float64 µs the host was blocked waiting for it (see the module docstring)
    inferred: np.ndarray  #: bool: the waited event is inferred (no CUPTI record named its stream/event)
    op: np.ndarray  #: int64 innermost cpu_op above the call (aten::item ...), -1 none

    def __len__(self) -> int:
        return int(self.call.shape[0])


@dataclass(frozen=True)
class StreamWaits:
    """One row per resolved ``cudaStreamWaitEvent``: GPU event ``waiting`` may start only
    after GPU event ``recorded`` ended."""

    call: np.ndarray  #: int64 the cudaStreamWaitEvent call
    recorded: np.ndarray  #: int64 last GPU event before the cudaEventRecord on the recorded stream
    waiting: np.ndarray  #: int64 first GPU event launched on the waiting stream after the call
    unresolved: int  #: stream-wait calls without a CUPTI record (streams unknown)


class _WaitArgs(msgspec.Struct, gc=False):
    wait_on_stream: int = msgspec.field(default=-1, name=schema.WAIT_ON_STREAM)
    record_corr: int = msgspec.field(default=-1, name=schema.WAIT_ON_EVENT_RECORD_CORR)


@dataclass(frozen=True)
class GpuLanes:
    """GPU work per stream lane, in start order: what the per-stream look-ups need."""

    key: dict  #: (device, stream) -> position in the lists below
    events: list  #: per stream: int64 event ids, start order
    launch_ts: list  #: per stream: running maximum of the launch call start (µs; the event's own start when unlinked)
    end: list  #: per stream: float64 event ends (µs)
    lane: list  #: per stream: the model's lane index


def gpu_lanes(trace: KinetoTrace) -> GpuLanes:
    """The :class:`GpuLanes` of a trace (computed once per trace)."""
    return per_trace(trace, "gpu_lanes", _gpu_lanes)


def _gpu_lanes(trace: KinetoTrace) -> GpuLanes:
    work = np.flatnonzero(np.isin(trace.kind, [int(k) for k in GPU_WORK_KINDS]) & (trace.lane_of >= 0))
    work = work[np.lexsort((work, trace.ts[work], trace.lane_of[work]))]
    lanes = trace.lane_of[work]
    cuts = np.flatnonzero(np.diff(lanes)) + 1
    lo = trace.launch_of[work]
    lts = np.where(lo >= 0, trace.ts[np.maximum(lo, 0)], trace.ts[work])
    key, events, launch_ts, end, lane_ids = {}, [], [], [], []
    for part, lts_part in zip(np.split(work, cuts), np.split(lts, cuts)):
        if not part.size:
            continue
        li = int(trace.lane_of[part[0]])
        lane = trace.lanes[li]
        key[(lane.pid, lane.tid)] = len(events)
        events.append(part)
        launch_ts.append(np.maximum.accumulate(lts_part))
        end.append(trace.ts[part] + trace.dur[part])
        lane_ids.append(li)
    return GpuLanes(key, events, launch_ts, end, lane_ids)


def last_launched_before(lanes: GpuLanes, t: np.ndarray) -> np.ndarray:
    """(len(t), streams) event ids: per stream, the last GPU event launched before each time (-1)."""
    out = np.full((t.size, len(lanes.events)), -1, dtype=np.int64)
    for j, (ev, lts) in enumerate(zip(lanes.events, lanes.launch_ts)):
        p = np.searchsorted(lts, t, side="left") - 1
        ok = p >= 0
        out[ok, j] = ev[p[ok]]
    return out


def _by_correlation(trace: KinetoTrace, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted correlations, events in that order) of ``events`` with a correlation."""
    events = events[trace.correlation[events] >= 0]
    o = np.argsort(trace.correlation[events], kind="stable")
    return trace.correlation[events][o], events[o]


def _lookup(sorted_keys: np.ndarray, values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """values[i] where sorted_keys[i] == key, else -1 (per key)."""
    if not sorted_keys.size:
        return np.full(keys.shape, -1, dtype=np.int64)
    p = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return np.where((keys >= 0) & (sorted_keys[p] == keys), values[p], -1).astype(np.int64)


def _names_matching(trace: KinetoTrace, pattern) -> np.ndarray:
    return np.array([bool(pattern.search(head(n))) for n in trace.names] or [False], dtype=bool)


@dataclass(frozen=True)
class _Records:
    """CUPTI cuda_sync records, joined to their API call by correlation."""

    record_of_call: np.ndarray  #: per event: the cuda_sync record sharing its correlation, -1
    wait_stream: np.ndarray  #: per record row (same order as ``rows``): wait_on_stream
    record_corr: np.ndarray  #: per record row: the cudaEventRecord's correlation
    rows: np.ndarray  #: the records, sorted by event id


def _records(trace: KinetoTrace) -> _Records:
    return per_trace(trace, "cupti_sync_records", _compute_records)


def _compute_records(trace: KinetoTrace) -> _Records:
    rows = np.flatnonzero(trace.kind == int(Kind.SYNC))
    args = trace.args_batch(rows, _WaitArgs) if rows.size else []
    ws = np.array([a.wait_on_stream for a in args], dtype=np.int64)
    rc = np.array([a.record_corr for a in args], dtype=np.int64)
    calls = np.flatnonzero(np.isin(trace.kind, [int(k) for k in LAUNCH_KINDS]))
    rec_of = np.full(trace.n_events, -1, dtype=np.int64)
    keys, recs = _by_correlation(trace, rows)
    rec_of[calls] = _lookup(keys, recs, trace.correlation[calls])
    return _Records(rec_of, ws, rc, rows)


def _record_row(rec: _Records, record_event: np.ndarray) -> np.ndarray:
    return np.searchsorted(rec.rows, record_event)


def _gpu_of_lane(lanes: GpuLanes, device: np.ndarray, stream: np.ndarray) -> np.ndarray:
    """Stream position in ``lanes`` of each (device, stream), -1 when the stream ran no GPU work."""
    return np.array([lanes.key.get((d, s), -1) for d, s in zip(device.tolist(), stream.tolist())], dtype=np.int64)


def _recorded_work(trace: KinetoTrace, lanes: GpuLanes, rec: _Records, records: np.ndarray) -> np.ndarray:
    """For cuda_sync records naming a cudaEventRecord (by correlation) and its stream: the
    last GPU event launched on that stream before the cudaEventRecord call (-1)."""
    out = np.full(records.size, -1, dtype=np.int64)
    if not records.size:
        return out
    row = _record_row(rec, records)
    corr, stream = rec.record_corr[row], rec.wait_stream[row]
    is_rec = _names_matching(trace, EVENT_RECORD_RE)
    calls = np.flatnonzero(np.isin(trace.kind, [int(k) for k in LAUNCH_KINDS]) & is_rec[trace.name_id])
    keys, vals = _by_correlation(trace, calls)
    rcall = _lookup(keys, vals, corr)
    device = np.array([trace.pids[int(r)] for r in records.tolist()], dtype=object)
    pos = _gpu_of_lane(lanes, device, stream)
    for i in np.flatnonzero((rcall >= 0) & (pos >= 0)).tolist():
        lts, ev = lanes.launch_ts[pos[i]], lanes.events[pos[i]]
        p = int(np.searchsorted(lts, trace.ts[rcall[i]], side="left")) - 1
        if p >= 0:
            out[i] = ev[p]
    return out


def host_sync_waits(trace: KinetoTrace) -> SyncWaits:
    """Every blocking host call with the GPU event it waited for and its wait (module docstring).

    Computed once per trace; the arrays must not be modified."""
    return per_trace(trace, "host_sync_waits", _host_sync_waits)


def _host_sync_waits(trace: KinetoTrace) -> SyncWaits:
    lanes = gpu_lanes(trace)
    rec = _records(trace)
    calls = np.flatnonzero(np.isin(trace.kind, [int(k) for k in LAUNCH_KINDS]) & (trace.parent[: trace.n_events] >= 0))
    blocking = _names_matching(trace, BLOCKING_SYNC_RE)[trace.name_id[calls]]
    sync_copy = _names_matching(trace, SYNC_COPY_RE)[trace.name_id[calls]]
    names = np.asarray(trace.names, dtype=object)
    cls = np.array([int(launch_class_of_name(n)) for n in trace.names] or [0], dtype=np.int64)[trace.name_id[calls]]
    kind = np.full(calls.size, -1, dtype=np.int64)
    nm = names[trace.name_id[calls]]
    kind[blocking & np.array(["Device" in n or "Ctx" in n for n in nm], dtype=bool)] = int(SyncKind.DEVICE)
    kind[blocking & np.array(["StreamSynchronize" in n for n in nm], dtype=bool)] = int(SyncKind.STREAM)
    kind[blocking & np.array(["EventSynchronize" in n for n in nm], dtype=bool)] = int(SyncKind.EVENT)
    kind[sync_copy | (cls == int(LaunchClass.MEMCPY))] = int(SyncKind.COPY)
    sel = kind >= 0
    calls, kind = calls[sel], kind[sel]
    s = trace.ts[calls]
    e = s + trace.dur[calls]
    waited = np.full(calls.size, -1, dtype=np.int64)
    inferred = np.zeros(calls.size, dtype=bool)
    keep = np.ones(calls.size, dtype=bool)
    # copies: the copy the call launched (the latest-ending one when several)
    cp = np.flatnonzero(kind == int(SyncKind.COPY))
    if cp.size:
        own = _own_copy(trace, calls[cp])
        is_sync = _names_matching(trace, SYNC_COPY_RE)[trace.name_id[calls[cp]]]
        ends = np.where(own >= 0, trace.ts[np.maximum(own, 0)] + trace.dur[np.maximum(own, 0)], -np.inf)
        dtoh = np.array([own_i >= 0 and _is_pageable_dtoh(trace.names[trace.name_id[own_i]])
                         for own_i in own.tolist()], dtype=bool)
        # an asynchronous copy counts only when it is device-to-pageable-host (CUDA makes those
        # synchronous) and was done before the call returned
        observed = dtoh & (ends <= e[cp] + CLOCK_TOL_US) & (ends > s[cp])
        ok = is_sync | observed
        waited[cp] = np.where(ok, own, -1)
        inferred[cp] = ~is_sync
        keep[cp] = ok
    other = np.flatnonzero(kind != int(SyncKind.COPY))
    if other.size and lanes.events:
        last = last_launched_before(lanes, s[other])  # (calls, streams)
        lend = np.where(last >= 0, trace.ts[np.maximum(last, 0)] + trace.dur[np.maximum(last, 0)], -np.inf)
        rec_ev = rec.record_of_call[calls[other]]
        k = kind[other]
        # exact targets from the CUPTI records
        exact = np.full(other.size, -1, dtype=np.int64)
        has = rec_ev >= 0
        rnames = names[trace.name_id[np.maximum(rec_ev, 0)]]
        st = has & (k == int(SyncKind.STREAM)) & (rnames == CUPTI_STREAM_SYNC)
        if st.any():
            dev = np.array([trace.pids[int(r)] for r in rec_ev[st].tolist()], dtype=object)
            pos = _gpu_of_lane(lanes, dev, trace.stream[rec_ev[st]])
            rows = np.flatnonzero(st)
            good = pos >= 0
            exact[rows[good]] = last[rows[good], pos[good]]
        ev_rows = np.flatnonzero(has & (k == int(SyncKind.EVENT)) & (rnames == CUPTI_EVENT_SYNC))
        if ev_rows.size:
            exact[ev_rows] = _recorded_work(trace, lanes, rec, rec_ev[ev_rows])
        dev_rows = np.flatnonzero(k == int(SyncKind.DEVICE))
        if dev_rows.size:
            j = np.argmax(lend[dev_rows], axis=1)
            exact[dev_rows] = last[dev_rows, j]
        # inferred: the stream whose last launched event ended last, but before the call returned
        fit = np.where(lend <= e[other][:, None] + CLOCK_TOL_US, lend, -np.inf)
        j = np.argmax(fit, axis=1)
        guess = np.where(np.isfinite(fit[np.arange(other.size), j]), last[np.arange(other.size), j], -1)
        use_guess = (exact < 0) & (k != int(SyncKind.DEVICE))
        waited[other] = np.where(use_guess, guess, exact)
        inferred[other] = use_guess & (guess >= 0)
    calls, kind, waited, inferred = calls[keep], kind[keep], waited[keep], inferred[keep]
    s, e = s[keep], e[keep]
    wend = np.where(waited >= 0, trace.ts[np.maximum(waited, 0)] + trace.dur[np.maximum(waited, 0)], -np.inf)
    wait = np.clip(wend, s, e) - s
    o = np.argsort(s, kind="stable")
    return SyncWaits(calls[o], kind[o].astype(np.uint8), waited[o], wait[o], inferred[o],
                     trace.cpu_op_of[calls[o]].astype(np.int64))


def _is_pageable_dtoh(copy_name: str) -> bool:
    """``Memcpy DtoH (Device -> Pageable)``: the copies CUDA runs synchronously even when asked
    asynchronously."""
    return "DtoH" in copy_name and "Pageable" in copy_name


def _own_copy(trace: KinetoTrace, calls: np.ndarray) -> np.ndarray:
    """Per call: the latest-ending GPU copy it launched (-1 none)."""
    work = np.flatnonzero((trace.kind == int(Kind.MEMCPY)) & (trace.launch_of >= 0))
    out = np.full(calls.size, -1, dtype=np.int64)
    if not work.size:
        return out
    work = work[np.lexsort((trace.ts[work] + trace.dur[work], trace.launch_of[work]))]
    lo = trace.launch_of[work]
    last = np.concatenate((lo[1:] != lo[:-1], [True]))
    keys, vals = lo[last].astype(np.int64), work[last]
    return _lookup(keys, vals, calls)


def stream_waits(trace: KinetoTrace) -> StreamWaits:
    """Every ``cudaStreamWaitEvent`` resolved through its CUPTI record (module docstring)."""
    return per_trace(trace, "stream_waits", _stream_waits)


def _stream_waits(trace: KinetoTrace) -> StreamWaits:
    lanes = gpu_lanes(trace)
    rec = _records(trace)
    is_wait = np.array(["StreamWaitEvent" in head(n) for n in trace.names] or [False], dtype=bool)
    calls = np.flatnonzero(np.isin(trace.kind, [int(k) for k in LAUNCH_KINDS]) & is_wait[trace.name_id])
    r = rec.record_of_call[calls]
    names = np.asarray(trace.names, dtype=object)
    ok = (r >= 0) & (names[trace.name_id[np.maximum(r, 0)]] == CUPTI_STREAM_WAIT)
    calls_ok, r_ok = calls[ok], r[ok]
    recorded = _recorded_work(trace, lanes, rec, r_ok)
    dev = np.array([trace.pids[int(x)] for x in r_ok.tolist()], dtype=object)
    pos = _gpu_of_lane(lanes, dev, trace.stream[r_ok])
    waiting = np.full(calls_ok.size, -1, dtype=np.int64)
    for i in np.flatnonzero(pos >= 0).tolist():
        lts, ev = lanes.launch_ts[pos[i]], lanes.events[pos[i]]
        p = int(np.searchsorted(lts, trace.ts[calls_ok[i]], side="right"))
        if p < ev.size:
            waiting[i] = ev[p]
    good = (recorded >= 0) & (waiting >= 0)
    return StreamWaits(calls_ok[good], recorded[good], waiting[good], int(calls.size - good.sum()))
