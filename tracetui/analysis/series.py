"""The curves the plots draw, headless: step time per step and GPU busy over time per device.

* **Step time** (:func:`step_series`): the steps of :func:`tracetui.analysis.steps.find_steps`
  (``ProfilerStep#N``, else the repeated top-level annotation), each with its host duration
  (the annotation's ``dur``: the number the summary's "Profiler steps" table prints, in ms)
  and the GPU time launched inside it (the summed durations of the GPU events whose launch
  starts in the step: :func:`~tracetui.analysis.steps.gpu_events_by_step`); the slowest step
  (the longest host duration, the first of equals) is the one marked.
* **GPU busy** (:func:`busy_runs`): per device, the union of its GPU events (kernels,
  memcpys, memsets on every stream: the GPU timeline's ``busy``,
  :func:`tracetui.analysis.intervals.union_intervals`) kept as runs with their cumulative
  length, so the busy time of any bins is two binary searches each
  (:meth:`DeviceBusy.busy_in`): bins of any width add up to the device's busy time exactly
  (the GPU timeline table's ``busy``).  ``busy %`` of a bin is its busy time over its length.

Times are µs relative to the trace origin, as in the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kineto.kinds import GPU_WORK_KINDS
from ..kineto.trace import KinetoTrace
from .intervals import union_intervals
from .steps import find_steps, gpu_events_by_step

_GPU_WORK = np.array(sorted(int(k) for k in GPU_WORK_KINDS), dtype=np.uint8)


@dataclass(frozen=True)
class StepSeries:
    """Per step (time order): ``events`` (the annotation, -1 for the whole trace), ``names``,
    ``numbers``, ``start``/``dur`` (host, µs), ``gpu_us`` and ``gpu_events`` launched in it;
    ``how`` the steps were found and ``slowest`` (an index, -1 when there is no step)."""

    events: np.ndarray
    names: list[str]
    numbers: np.ndarray
    start: np.ndarray
    dur: np.ndarray
    gpu_us: np.ndarray
    gpu_events: np.ndarray
    how: str

    @property
    def n(self) -> int:
        return int(self.dur.size)

    @property
    def slowest(self) -> int:
        return int(np.argmax(self.dur)) if self.dur.size else -1


def step_series(kt: KinetoTrace) -> StepSeries:
    """The steps of ``kt`` with their host and GPU times (module docstring)."""
    steps = find_steps(kt)
    st = steps.steps
    ev, k = gpu_events_by_step(kt, steps)
    n = len(st)
    gpu_us = np.bincount(k, weights=kt.dur[ev], minlength=n)[:n] if ev.size else np.zeros(n)
    gpu_n = np.bincount(k, minlength=n)[:n] if ev.size else np.zeros(n, dtype=np.int64)
    return StepSeries(np.array([s.event for s in st], dtype=np.int64), [s.name for s in st],
                      np.array([s.number for s in st], dtype=np.int64), np.array([s.ts for s in st]),
                      np.array([s.dur for s in st]), gpu_us.astype(np.float64), gpu_n.astype(np.int64), steps.how)


@dataclass(frozen=True)
class DeviceBusy:
    """The union of one device's GPU events: runs ``starts``/``ends`` (µs, sorted, disjoint)
    and ``before`` (the busy time before each run); ``lo``/``hi``: the device's GPU window
    (first start, last end); ``events``: its GPU events (start order), ``ev_ts``/``ev_end``
    their spans."""

    device: int
    starts: np.ndarray
    ends: np.ndarray
    before: np.ndarray
    events: np.ndarray
    ev_ts: np.ndarray
    ev_end: np.ndarray

    @property
    def lo(self) -> float:
        return float(self.starts[0]) if self.starts.size else 0.0

    @property
    def hi(self) -> float:
        return float(self.ends[-1]) if self.ends.size else 0.0

    @property
    def busy(self) -> float:
        """The busy time (µs): the GPU timeline's ``busy`` of the device."""
        return float(self.before[-1] + self.ends[-1] - self.starts[-1]) if self.starts.size else 0.0

    def busy_until(self, t: np.ndarray) -> np.ndarray:
        """Busy time before each time in ``t``."""
        t = np.asarray(t, dtype=np.float64)
        k = np.searchsorted(self.starts, t, side="right") - 1
        kk = np.maximum(k, 0)
        inside = np.clip(t - self.starts[kk], 0.0, self.ends[kk] - self.starts[kk]) if self.starts.size else 0.0
        return np.where(k >= 0, self.before[kk] + inside, 0.0) if self.starts.size else np.zeros(t.shape)

    def busy_in(self, edges: np.ndarray) -> np.ndarray:
        """Busy time (µs) in each bin ``edges[i]..edges[i + 1]``."""
        return np.diff(self.busy_until(edges))

    def busy_pct(self, edges: np.ndarray) -> np.ndarray:
        """Busy % of each bin (0 for an empty bin)."""
        edges = np.asarray(edges, dtype=np.float64)
        width = np.diff(edges)
        return np.where(width > 0, 100.0 * self.busy_in(edges) / np.where(width > 0, width, 1.0), 0.0)

    def events_in(self, a: float, b: float) -> np.ndarray:
        """The device's GPU events running in ``[a, b)`` (start order)."""
        return self.events[(self.ev_ts < b) & (self.ev_end > a)]


def busy_runs(kt: KinetoTrace, events: np.ndarray | None = None) -> list[DeviceBusy]:
    """Per device (ascending), the union of its GPU events (``events``: a subset of the GPU
    events, default all of them)."""
    ev = np.flatnonzero(np.isin(kt.kind, _GPU_WORK)) if events is None else np.asarray(events, dtype=np.int64)
    out = []
    if not ev.size:
        return out
    dev = kt.device[ev]
    for d in np.unique(dev).tolist():
        mine = ev[dev == d]
        mine = mine[np.argsort(kt.ts[mine], kind="stable")]
        ts, end = kt.ts[mine], kt.ts[mine] + np.maximum(kt.dur[mine], 0.0)
        s, e = union_intervals(ts, end, presorted=True)
        before = np.concatenate(([0.0], np.cumsum(e - s)[:-1]))
        out.append(DeviceBusy(int(d), s, e, before, mine, ts, end))
    return out
