"""Profiler steps: the ``ProfilerStep#N`` annotations and which step each event belongs to.

One definition, used by the launch figures per step (:func:`tracetui.analysis.launches.step_table`),
the ``steps`` and ``events.step`` of ``tracetui query`` and ``tracetui slice --step``:

- a step is a host ``user_annotation`` named ``ProfilerStep#N`` (N its number); its span is
  ``[ts, ts + dur)`` in µs relative to the trace origin, host time;
- a host event belongs to the step whose span holds its *start* (any thread: the autograd
  and data-loader threads' work during step N is step N's);
- a GPU event (kernel, memcpy, memset) belongs to the step of the call that launched it,
  wherever it ran (a kernel launched at the end of step N that runs during step N+1 is
  step N's); a GPU event whose launch is not in the trace belongs to the step whose span
  holds its start (its own GPU time);
- GPU annotations and events outside every span belong to no step (-1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..kineto.kinds import GPU_KINDS, GPU_WORK_KINDS, Kind
from ..kineto.trace import KinetoTrace
from .frames import per_trace

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")


@dataclass(frozen=True)
class Steps:
    """The trace's profiler steps in start order."""

    events: np.ndarray  #: int64 model event of each ``ProfilerStep#N`` annotation
    numbers: np.ndarray  #: int64 N
    ts: np.ndarray  #: float64 µs, span start
    end: np.ndarray  #: float64 µs, span end (exclusive)

    def __len__(self) -> int:
        return int(self.events.size)

    def index_of(self, number: int) -> int | None:
        """Position of step ``number`` (the first when a number repeats), None when absent."""
        hits = np.flatnonzero(self.numbers == number)
        return int(hits[0]) if hits.size else None


def profiler_steps(trace: KinetoTrace) -> Steps:
    """The ``ProfilerStep#N`` annotations of the trace (cached per trace)."""
    return per_trace(trace, "profiler_steps", _profiler_steps)


def _profiler_steps(trace: KinetoTrace) -> Steps:
    ann = np.flatnonzero(trace.kind == int(Kind.ANNOTATION))
    names = trace.names
    match = {int(i): m for i in np.unique(trace.name_id[ann]).tolist() if (m := STEP_RE.match(names[i]))}
    ev = np.array([i for i in ann.tolist() if int(trace.name_id[i]) in match], dtype=np.int64)
    ev = ev[np.argsort(trace.ts[ev], kind="stable")] if ev.size else ev
    numbers = np.array([int(match[int(trace.name_id[i])].group(1)) for i in ev.tolist()], dtype=np.int64)
    ts = trace.ts[ev].astype(np.float64)
    return Steps(ev, numbers, ts, ts + trace.dur[ev])


def step_index_at(steps: Steps, t: np.ndarray) -> np.ndarray:
    """Position in ``steps`` of the span holding each time ``t`` (µs), -1 outside every span."""
    t = np.asarray(t, dtype=np.float64)
    if not len(steps):
        return np.full(t.shape, -1, dtype=np.int64)
    pos = np.searchsorted(steps.ts, t, side="right") - 1
    ok = (pos >= 0) & (t < steps.end[np.maximum(pos, 0)])
    return np.where(ok, pos, -1).astype(np.int64)


def step_of_events(trace: KinetoTrace) -> np.ndarray:
    """Per event: the position in :func:`profiler_steps` of its step (see the module
    docstring), -1 for none.  Cached per trace."""
    return per_trace(trace, "step_of_events", _step_of_events)


def _step_of_events(trace: KinetoTrace) -> np.ndarray:
    steps = profiler_steps(trace)
    n = trace.n_events
    out = np.full(n, -1, dtype=np.int64)
    if not len(steps) or not n:
        return out
    gpu = np.isin(trace.kind, [int(k) for k in GPU_KINDS])
    host = np.flatnonzero(~gpu)
    out[host] = step_index_at(steps, trace.ts[host])
    work = np.flatnonzero(np.isin(trace.kind, [int(k) for k in GPU_WORK_KINDS]))
    launch = trace.launch_of[work].astype(np.int64)
    out[work] = np.where(launch >= 0, out[np.maximum(launch, 0)], step_index_at(steps, trace.ts[work]))
    return out
