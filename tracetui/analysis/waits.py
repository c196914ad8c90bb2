"""GPU idle seen from the host: what a synchronising host event cost, and the GPU idle inside
host spans.  The two measures behind the findings ``blocking_sync``, ``scalar_sync`` and
``input_stall`` (docs/findings.md), defined once here.

**Whose GPU.**  A host event's GPUs are the devices its thread launched work to (any time in
the trace); a thread that launched nothing gets the devices of its process's threads, and a
process that launched nothing every device of the trace.  *Busy* is the union of every GPU
work event (kernel, memcpy, memset) on those devices, all streams together; *idle* is the rest.

**GPU idle after a synchronising event** (:func:`gpu_idle_after`; not the *host sync wait*
of :mod:`tracetui.analysis.syncs`, which is how long the host waited for the GPU event it
synchronised with): a synchronize call, or an op that synchronises (``aten::item``), blocks its thread
until the GPU has drained the queue.  If the GPU goes idle while the call runs (a busy run
ends between the call's start and its end, give or take :data:`DRAIN_TOLERANCE_US` for the
skew of the host and GPU clocks), the GPU stays idle until the host launches the next work:
that idle gap, from the drain to the next GPU work, is the idle after the call.  A call
during which the GPU did not drain (it was already idle, or still busy when the call
returned) gets 0, and so does a drain followed by no GPU work at all (the trace ends: the
length is unknown).  It is an upper bound of what removing the sync saves: the host may have
had other work to do before its next launch.

**GPU idle within spans** (:func:`gpu_idle_within`): the parts of host spans (e.g.
DataLoader iterations) during which those GPUs run nothing; nested or overlapping spans of one
process count once.

Times are µs relative to the trace origin, as in the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kineto.trace import KinetoTrace
from .frames import gpu_work_events, per_trace
from .intervals import union_intervals

#: µs by which the GPU's drain may lie outside its synchronising call (host/GPU clock skew,
#: the wake-up of the waiting thread)
DRAIN_TOLERANCE_US = 20.0


@dataclass(frozen=True)
class IdleAfter:
    """Per host event (same order as given): ``idle_us`` (GPU idle after it, µs, 0 when
    none), ``idle_start``/``idle_end`` (the idle gap, NaN when none) and ``next_gpu`` (the
    GPU event that ended the idle gap, -1 when none)."""

    idle_us: np.ndarray
    idle_start: np.ndarray
    idle_end: np.ndarray
    next_gpu: np.ndarray

    def union_us(self) -> float:
        """Total GPU idle after the events, each gap counted once (several calls may close
        the same gap)."""
        ok = self.idle_us > 0
        if not ok.any():
            return 0.0
        s, e = union_intervals(self.idle_start[ok], self.idle_end[ok])
        return float((e - s).sum())


class _Devices:
    """GPU work per device, and the devices of each host lane (see the module docstring)."""

    def __init__(self, trace: KinetoTrace) -> None:
        gpu = gpu_work_events(trace)
        gpu = gpu[trace.lane_of[gpu] >= 0]
        lane_pid = [ln.pid for ln in trace.lanes]
        codes: dict[object, int] = {}
        lane_dev = np.array([codes.setdefault(p, len(codes)) if ln.is_gpu else -1
                             for p, ln in zip(lane_pid, trace.lanes)] or [-1], dtype=np.int64)
        self.dev = lane_dev[trace.lane_of[gpu]] if gpu.size else np.zeros(0, np.int64)
        self.gpu = gpu
        self.n_dev = len(codes)
        launch = trace.launch_of[gpu].astype(np.int64)
        ok = launch >= 0
        host_lane = trace.lane_of[launch[ok]].astype(np.int64)
        pairs = np.unique(np.stack([host_lane, self.dev[ok]]), axis=1) if ok.any() else np.zeros((2, 0), np.int64)
        by_lane: dict[int, set[int]] = {}
        for ln, d in pairs.T.tolist():
            if ln >= 0:
                by_lane.setdefault(ln, set()).add(d)
        by_pid: dict[object, set[int]] = {}
        for ln, ds in by_lane.items():
            by_pid.setdefault(lane_pid[ln], set()).update(ds)
        self.lane_pid = lane_pid
        self.by_lane = {ln: tuple(sorted(ds)) for ln, ds in by_lane.items()}
        self.by_pid = {p: tuple(sorted(ds)) for p, ds in by_pid.items()}
        self.all = tuple(range(self.n_dev))
        # never a reference to the trace here: per_trace drops this with the trace (a weak reference)
        self._ts = trace.ts[gpu]
        self._end = trace.ts[gpu] + trace.dur[gpu]
        self._runs: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def of_lane(self, lane: int) -> tuple[int, ...]:
        if lane in self.by_lane:
            return self.by_lane[lane]
        if 0 <= lane < len(self.lane_pid) and self.lane_pid[lane] in self.by_pid:
            return self.by_pid[self.lane_pid[lane]]
        return self.all

    def runs(self, devices: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Busy runs of the union of ``devices``: (starts, ends, the GPU event starting each run)."""
        got = self._runs.get(devices)
        if got is None:
            pos = np.flatnonzero(np.isin(self.dev, devices))
            pos = pos[np.argsort(self._ts[pos], kind="stable")]
            ts = self._ts[pos]
            s, e = union_intervals(ts, self._end[pos], presorted=True)
            first = self.gpu[pos[np.searchsorted(ts, s, side="left")]] if pos.size else np.zeros(0, np.int64)
            got = self._runs[devices] = (s, e, first.astype(np.int64))
        return got


def _devices(trace: KinetoTrace) -> _Devices:
    return per_trace(trace, "waits_devices", _Devices)


def _groups(trace: KinetoTrace, events: np.ndarray) -> dict[tuple[int, ...], np.ndarray]:
    """Positions in ``events`` grouped by the devices of their lane."""
    dev = _devices(trace)
    lanes = trace.lane_of[events].astype(np.int64) if events.size else np.zeros(0, np.int64)
    out: dict[tuple[int, ...], list[np.ndarray]] = {}
    for ln in np.unique(lanes).tolist():
        out.setdefault(dev.of_lane(ln), []).append(np.flatnonzero(lanes == ln))
    return {k: np.concatenate(v) for k, v in out.items()}


def gpu_idle_after(trace: KinetoTrace, events: np.ndarray,
                   tolerance_us: float = DRAIN_TOLERANCE_US) -> IdleAfter:
    """The GPU idle after each synchronising host event (see the module docstring).
    ``events``: event ids (sync calls, ops that synchronise)."""
    events = np.asarray(events, dtype=np.int64)
    n = events.size
    idle = np.zeros(n)
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    nxt = np.full(n, -1, dtype=np.int64)
    for devices, pos in _groups(trace, events).items():
        s, e, first = _devices(trace).runs(devices)
        if s.size < 2:
            continue
        ev = events[pos]
        a, b = trace.ts[ev], trace.ts[ev] + np.maximum(trace.dur[ev], 0.0)
        # the last run ending by the call's end (+ tolerance); runs' ends are sorted
        k = np.searchsorted(e, b + tolerance_us, side="right") - 1
        ok = (k >= 0) & (k + 1 < s.size)
        ks = np.clip(k, 0, s.size - 2)
        drained = ok & (e[ks] >= a - tolerance_us)
        gap_a, gap_b = e[ks], s[ks + 1]
        hit = pos[drained]
        idle[hit] = (gap_b - gap_a)[drained]
        start[hit] = gap_a[drained]
        end[hit] = gap_b[drained]
        nxt[hit] = first[ks + 1][drained]
    return IdleAfter(idle, start, end, nxt)


def gpu_idle_within(trace: KinetoTrace, events: np.ndarray) -> tuple[np.ndarray, float]:
    """GPU idle inside host spans: (µs per span, total µs with overlapping spans of one
    device group counted once).  ``events``: event ids of the spans."""
    events = np.asarray(events, dtype=np.int64)
    per = np.zeros(events.size)
    total = 0.0
    for devices, pos in _groups(trace, events).items():
        s, e, _ = _devices(trace).runs(devices)
        ev = events[pos]
        a, b = trace.ts[ev], trace.ts[ev] + np.maximum(trace.dur[ev], 0.0)
        per[pos] = (b - a) - _covered(s, e, a, b)
        us, ue = union_intervals(a, b)
        total += float(((ue - us) - _covered(s, e, us, ue)).sum())
    return per, total


def _covered(s: np.ndarray, e: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Length of [a_i, b_i] covered by the disjoint sorted runs [s, e] (vectorised)."""
    if not s.size:
        return np.zeros(a.shape)
    cum = np.concatenate(([0.0], np.cumsum(e - s)))

    def upto(t: np.ndarray) -> np.ndarray:
        # busy time before t: whole runs ending by t, plus the part of the run open at t
        k = np.searchsorted(s, t, side="right")  # runs starting at or before t
        part = np.where(k > 0, np.clip(t - s[np.maximum(k - 1, 0)], 0.0, (e - s)[np.maximum(k - 1, 0)]), 0.0)
        return cum[np.maximum(k - 1, 0)] * (k > 0) + part

    return np.maximum(upto(b) - upto(a), 0.0)
