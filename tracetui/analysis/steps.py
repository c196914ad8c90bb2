"""Training or inference steps of a trace, and which events belong to which step.

A **step** is, in this order of preference:

1. a ``ProfilerStep#N`` user annotation (host side; what ``torch.profiler`` writes around
   each ``prof.step()``); its number is ``N``;
2. else the repeated top-level annotation: the user annotation that is not nested in
   any cpu_op or annotation, occurs at least twice on one thread and occurs most often
   there (ties: the larger summed duration); its number is its occurrence, from 1;
3. else the whole trace, as one step (number 0) spanning every event.

Which events are in a step (the rules HolisticTraceAnalysis uses to give events an
iteration, so tables built on them compare with HTA's ``TraceDiff``):

* a host event (one with a duration: instant events are markers) is in the step when its
  start lies in ``[step start, step end)``, on any thread;
* a GPU event (kernel, memcpy, memset) is in the step when the start of the runtime call
  that launched it does; GPU events whose launch is not in the trace are in no step
  (``-1``), except in the whole-trace step, which holds every event.

``launches.step_table`` counts the launches and GPU events per step with the same rule.
Times are µs relative to the trace origin, as in the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..kineto.kinds import GPU_KINDS, GPU_WORK_KINDS, Kind
from ..kineto.trace import KinetoTrace

PROFILER_STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")

#: how a trace's steps were found (:attr:`Steps.how`)
PROFILER_STEP, ANNOTATION, WHOLE_TRACE = "ProfilerStep", "annotation", "whole trace"

_GPU_KIND_CODES = np.array(sorted(int(k) for k in GPU_KINDS), dtype=np.uint8)
_GPU_WORK_CODES = np.array(sorted(int(k) for k in GPU_WORK_KINDS), dtype=np.uint8)


@dataclass(frozen=True)
class Step:
    """One step: ``event`` (its annotation, -1 for the whole trace), ``name``, ``number``,
    ``ts``/``end`` (µs) and ``lane`` (the annotation's lane index, -1 for the whole trace)."""

    event: int
    name: str
    number: int
    ts: float
    end: float
    lane: int

    @property
    def dur(self) -> float:
        return self.end - self.ts


@dataclass(frozen=True)
class Steps:
    """The steps of a trace in time order, and ``how`` they were found (``ProfilerStep``,
    ``annotation`` (with the name in ``annotation``), ``whole trace``)."""

    steps: tuple[Step, ...]
    how: str
    annotation: str = ""

    @property
    def whole_trace(self) -> bool:
        return self.how == WHOLE_TRACE


def profiler_steps(trace: KinetoTrace) -> np.ndarray:
    """Event ids of the ``ProfilerStep#N`` annotations, by start time (int64)."""
    ann = np.flatnonzero(trace.kind == int(Kind.ANNOTATION))
    names = trace.names
    ok = np.array([PROFILER_STEP_RE.match(names[i]) is not None for i in range(len(names))], dtype=bool)
    steps = ann[ok[trace.name_id[ann]]] if ann.size else ann
    return steps[np.argsort(trace.ts[steps], kind="stable")].astype(np.int64)


def _repeated_annotation(trace: KinetoTrace) -> np.ndarray:
    """Event ids of the repeated top-level annotation (rule 2 of the module docstring)."""
    ann = np.flatnonzero((trace.kind == int(Kind.ANNOTATION)) & (trace.lane_of >= 0))
    if not ann.size:
        return ann.astype(np.int64)
    n = trace.n_events
    par = trace.parent[ann].astype(np.int64)
    ok = par >= 0
    top = ann[ok & (trace.cpu_op_of[np.maximum(par, 0)] < 0)]
    # nested in another annotation? walk up (annotations are few)
    keep = []
    for e in top.tolist():
        p = int(trace.parent[e])
        while 0 <= p < n and trace.kind[p] != int(Kind.ANNOTATION):
            p = int(trace.parent[p])
        if not 0 <= p < n:
            keep.append(e)
    top = np.asarray(keep, dtype=np.int64)
    if not top.size:
        return top
    key = trace.lane_of[top].astype(np.int64) * (len(trace.names) + 1) + trace.name_id[top]
    uniq, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    if counts.max() < 2:
        return np.zeros(0, dtype=np.int64)
    total = np.bincount(inv, weights=trace.dur[top])
    best = max(range(uniq.size), key=lambda k: (counts[k], total[k], -k))
    chosen = top[inv == best]
    return chosen[np.argsort(trace.ts[chosen], kind="stable")]


def find_steps(trace: KinetoTrace) -> Steps:
    """The steps of ``trace`` (see the module docstring)."""
    ev = profiler_steps(trace)
    how, label = PROFILER_STEP, ""
    if not ev.size:
        ev = _repeated_annotation(trace)
        how = ANNOTATION
        if ev.size:
            label = trace.names[trace.name_id[ev[0]]]
    if not ev.size:
        return Steps((whole_trace_step(trace),), WHOLE_TRACE)
    out = []
    for k, e in enumerate(ev.tolist(), 1):
        name = trace.names[trace.name_id[e]]
        m = PROFILER_STEP_RE.match(name)
        number = int(m.group(1)) if how == PROFILER_STEP and m else k
        ts = float(trace.ts[e])
        out.append(Step(int(e), name, number, ts, ts + float(trace.dur[e]), int(trace.lane_of[e])))
    return Steps(tuple(out), how, label)


def whole_trace_step(trace: KinetoTrace) -> Step:
    """The whole trace as one step: from the first start to the last end of any event."""
    if trace.n_events:
        ts, end = float(np.nanmin(trace.ts)), float(np.nanmax(trace.ts + trace.dur))
    else:
        ts = end = 0.0
    return Step(-1, "whole trace", 0, ts, end, -1)


def host_events(trace: KinetoTrace) -> np.ndarray:
    """Every host event with a duration (not GPU work, not a GPU annotation, not an instant
    event such as ``[memory]``: HTA drops events without ``dur`` too): event ids, file order."""
    return np.flatnonzero(~np.isin(trace.kind, _GPU_KIND_CODES) & (trace.kind != int(Kind.INSTANT)))


def step_index(ts: np.ndarray, steps: tuple[Step, ...] | list[Step]) -> np.ndarray:
    """For each time in ``ts``, the index into ``steps`` of the step whose ``[ts, end)`` holds
    it (the latest-starting such step when steps overlap), -1 for none."""
    ts = np.asarray(ts, dtype=np.float64)
    if not steps:
        return np.full(ts.shape, -1, dtype=np.int64)
    starts = np.array([s.ts for s in steps], dtype=np.float64)
    ends = np.array([s.end for s in steps], dtype=np.float64)
    order = np.argsort(starts, kind="stable")
    pos = np.searchsorted(starts[order], ts, side="right") - 1
    cand = order[np.maximum(pos, 0)]
    hit = (pos >= 0) & (ts < ends[cand])
    return np.where(hit, cand, -1).astype(np.int64)


def host_events_by_step(trace: KinetoTrace, steps: Steps) -> tuple[np.ndarray, np.ndarray]:
    """(host event ids, the step index of each) for the host events in a step."""
    ev = host_events(trace)
    if steps.whole_trace:
        return ev, np.zeros(ev.size, dtype=np.int64)
    k = step_index(trace.ts[ev], steps.steps)
    return ev[k >= 0], k[k >= 0]


def gpu_events_by_step(trace: KinetoTrace, steps: Steps) -> tuple[np.ndarray, np.ndarray]:
    """(GPU work event ids, the step index of each) for the GPU events whose launch is in a step."""
    ev = np.flatnonzero(np.isin(trace.kind, _GPU_WORK_CODES))
    if steps.whole_trace:
        return ev, np.zeros(ev.size, dtype=np.int64)
    launch = trace.launch_of[ev].astype(np.int64)
    has = launch >= 0
    ev, launch = ev[has], launch[has]
    k = step_index(trace.ts[launch], steps.steps)
    return ev[k >= 0], k[k >= 0]


def step_of_events(trace: KinetoTrace, steps: Steps | None = None) -> np.ndarray:
    """Per event, the index into ``steps.steps`` (default :func:`find_steps`) of the step it
    is in by the rules above (host events by their start, GPU events by their launch's
    start; the whole-trace step holds every event), -1 for none (an instant event, GPU work
    whose launch is not in the trace, a GPU annotation).  For ``tracetui query``'s ``step``
    columns and ``tracetui slice --step``."""
    steps = find_steps(trace) if steps is None else steps
    out = np.full(trace.n_events, -1, dtype=np.int64)
    for ev, k in (host_events_by_step(trace, steps), gpu_events_by_step(trace, steps)):
        out[ev] = k
    return out
