"""The window of a critical path: a profiler step, an annotation instance, one event, or the
whole trace, and the events of one rank that belong to it.

A window is a time range on one trace (µs relative to the trace origin).  Its events:

- **host events** (python_function, user_annotation, cpu_op, runtime/driver calls and
  other spans on a thread) that *start* inside the window, on every thread;
- **GPU work** (kernels, memcpys, memsets) launched by those host events, and GPU work
  without a launch in the trace that starts inside the window;
- **carried-in GPU work**: GPU work launched before the window that still runs after its
  start (the previous step's queue), and GPU work without a launch in the trace that runs
  on a stream before the first GPU work the window launched there (a stream runs its work
  in submission order, so it was submitted earlier: before the window, or before the
  profiler started); it can delay the window's GPU work but is not the window's own work
  (never its last event).  Its start is clamped to the window start.

The path ends at the window's *last event*: the latest end among its own events (GPU work
launched in a step can end after the step's host span).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.steps import PROFILER_STEP_RE as _STEP
from ..analysis.steps import find_steps as _find_steps
from ..errors import TraceError
from ..kineto.kinds import GPU_WORK_KINDS, HOST_KINDS, Kind
from ..kineto.trace import KinetoTrace

#: host kinds that are nodes of the graph: the profiler's own span and the CUPTI sync
#: records (on pseudo threads) are not work of any thread
GRAPH_HOST_KINDS = frozenset(HOST_KINDS - {Kind.TRACE_SPAN, Kind.SYNC})


@dataclass(frozen=True)
class Window:
    """A time range of one trace and what it is (``kind``: step, annotation, event, trace)."""

    kind: str
    name: str
    start_us: float
    end_us: float
    event: int = -1  #: the event that defines it (-1 for the whole trace)

    def to_json(self) -> dict:
        return {"kind": self.kind, "name": self.name, "start_us": self.start_us, "end_us": self.end_us,
                "event": self.event}


@dataclass(frozen=True)
class Selection:
    """The window's events: ``events`` (int64 event ids), ``carried`` (bool per event: GPU work
    launched before the window) and ``node_start`` (float64 µs: the start, clamped to the window)."""

    events: np.ndarray
    carried: np.ndarray
    node_start: np.ndarray

    def __len__(self) -> int:
        return int(self.events.shape[0])


def profiler_steps(trace: KinetoTrace) -> list[tuple[int, int]]:
    """``(N, event)`` of every step, in time order: ``ProfilerStep#N``, else the repeated
    top-level annotation numbered from 1 (an NVTX range of an Nsight Systems export, a
    ``record_function`` step): which events are steps is
    :func:`tracetui.analysis.steps.find_steps`'s rule, defined once there."""
    found = _find_steps(trace)
    return [] if found.whole_trace else [(s.number, s.event) for s in found.steps]


def event_window(trace: KinetoTrace, event: int, kind: str = "event") -> Window:
    """The span of one event (an op under the cursor, an annotation)."""
    if not 0 <= event < trace.n_events:
        raise TraceError(trace.path, f"no event {event} in this trace")
    s = float(trace.ts[event])
    return Window(kind, trace.name(event), s, s + float(trace.dur[event]), int(event))


def step_window(trace: KinetoTrace, step: int) -> Window:
    """Step ``step`` (``ProfilerStep#<step>``, else the repeated top-level annotation's
    ``step``-th instance); a TraceError names the steps there are."""
    steps = profiler_steps(trace)
    for n, ev in steps:
        if n == step:
            return event_window(trace, ev, "step")
    have = ", ".join(str(n) for n, _ in steps[:12]) + (" ..." if len(steps) > 12 else "")
    what = f"ProfilerStep#{step}" if not steps or _STEP.match(trace.name(steps[0][1])) else f"step {step}"
    raise TraceError(trace.path, f"no {what} in this trace"
                     + (f" (steps: {have})" if steps else " (it has no ProfilerStep annotations and no repeated "
                        "top-level annotation)"))


def annotation_window(trace: KinetoTrace, name: str, instance: int = 1) -> Window:
    """The ``instance``-th (from 1, in time order) host annotation named ``name`` (exactly,
    else every annotation whose name starts with it: ``ProfilerStep`` matches each step)."""
    ann = np.flatnonzero((trace.kind == int(Kind.ANNOTATION)) & (trace.lane_of >= 0))
    names = np.asarray(trace.names, dtype=object)[trace.name_id[ann]]
    hit = ann[names == name]
    if not hit.size:
        hit = ann[np.array([str(x).startswith(name) for x in names], dtype=bool)] if ann.size else ann
    if not hit.size:
        raise TraceError(trace.path, f"no annotation named {name!r} in this trace")
    hit = hit[np.lexsort((hit, trace.ts[hit]))]
    if not 1 <= instance <= hit.size:
        raise TraceError(trace.path, f"annotation {name!r} has {hit.size} instances; --instance {instance} "
                         f"is not one of 1..{hit.size}")
    return event_window(trace, int(hit[instance - 1]), "annotation")


def trace_window(trace: KinetoTrace) -> Window:
    """Everything: from the first host or GPU event to the last end."""
    ev = _candidates(trace)
    if not ev.size:
        raise TraceError(trace.path, "no host or GPU events to follow")
    return Window("trace", trace.name_of_file, float(trace.ts[ev].min()), float((trace.ts[ev] + trace.dur[ev]).max()))


def default_window(trace: KinetoTrace) -> Window:
    """The longest profiler step (the one a user asks about first), else the whole trace."""
    steps = profiler_steps(trace)
    if not steps:
        return trace_window(trace)
    best = max(steps, key=lambda s: (float(trace.dur[s[1]]), -s[0]))
    return event_window(trace, best[1], "step")


def _candidates(trace: KinetoTrace) -> np.ndarray:
    """Host events on host lanes (complete events) and GPU work on stream lanes."""
    on_lane = trace.lane_of >= 0
    gpu_lane = np.array([ln.is_gpu for ln in trace.lanes] or [False], dtype=bool)
    is_gpu_lane = gpu_lane[np.maximum(trace.lane_of, 0)] & on_lane
    host = (np.isin(trace.kind, [int(k) for k in GRAPH_HOST_KINDS]) & on_lane & ~is_gpu_lane
            & (trace.ph == ord("X")))
    gpu = np.isin(trace.kind, [int(k) for k in GPU_WORK_KINDS]) & is_gpu_lane
    return np.flatnonzero(host | gpu)


def select_events(trace: KinetoTrace, window: Window) -> Selection:
    """The window's events (see the module docstring), host events first, then GPU work."""
    w0, w1 = window.start_us, window.end_us
    cand = _candidates(trace)
    is_gpu = np.isin(trace.kind[cand], [int(k) for k in GPU_WORK_KINDS])
    host = cand[~is_gpu]
    ts_h = trace.ts[host]
    inside = (ts_h >= w0) & ((ts_h < w1) | (host == window.event))
    host = host[inside]
    in_host = np.zeros(trace.n_events, dtype=bool)
    in_host[host] = True
    gpu = cand[is_gpu]
    lo = trace.launch_of[gpu]
    launched = np.where(lo >= 0, in_host[np.maximum(lo, 0)], False)
    ts_g = trace.ts[gpu]
    end_g = ts_g + trace.dur[gpu]
    unlinked = lo < 0
    # a stream runs its work in submission order: unlinked work that runs before the first
    # work the window launched on that stream was submitted before it (before the window,
    # or before the profiler started): carried in, like work launched before the window
    lane = trace.lane_of[gpu]
    first_own = np.full(len(trace.lanes) + 1, np.inf)
    np.minimum.at(first_own, lane[launched], ts_g[launched])
    early = unlinked & (ts_g < first_own[lane]) & np.isfinite(first_own[lane])
    own = launched | (unlinked & ~early & (ts_g >= w0) & (ts_g < w1)) | (gpu == window.event)
    launch_ts = np.where(lo >= 0, trace.ts[np.maximum(lo, 0)], np.where(early, -np.inf, ts_g))
    carried = ~own & (launch_ts < w0) & (end_g > w0)
    events = np.concatenate((host, gpu[own], gpu[carried])).astype(np.int64)
    carry = np.zeros(events.size, dtype=bool)
    carry[host.size + int(own.sum()):] = True
    return Selection(events, carry, np.maximum(trace.ts[events], w0))


def window_at(trace: KinetoTrace, event: int) -> Window:
    """The window a browser user means with the cursor on ``event`` ("why was this step
    slow"): the event itself when it is a profiler step or a user annotation; else the
    profiler step that holds it (its host ancestors; GPU work through its launch, else by
    time), else the innermost annotation that holds it, else the event itself.  Not an event
    (-1, a lane row): :func:`default_window`."""
    if not 0 <= event < trace.n_events:
        return default_window(trace)
    kind = int(trace.kind[event])
    if kind == int(Kind.ANNOTATION) and trace.lane_of[event] >= 0:
        return event_window(trace, event, "step" if _STEP.match(trace.name(event)) else "annotation")
    host = event
    if kind in {int(k) for k in GPU_WORK_KINDS} | {int(Kind.GPU_ANNOTATION)}:
        host = int(trace.launch_of[event])
    annotation = -1
    node = host
    while 0 <= node < trace.n_events:
        if int(trace.kind[node]) == int(Kind.ANNOTATION):
            if _STEP.match(trace.name(node)):
                return event_window(trace, node, "step")
            if annotation < 0:
                annotation = node
        node = int(trace.parent[node])
    if host < 0:  # GPU work without a launch in the trace: the step running when it started
        step = _step_holding(trace, float(trace.ts[event]), trace.name(event))
        if step >= 0:
            return event_window(trace, step, "step")
    if annotation >= 0:
        return event_window(trace, annotation, "annotation")
    return event_window(trace, event)


def _step_holding(trace: KinetoTrace, t_us: float, name: str) -> int:
    """The profiler step named ``name`` (a GPU copy of a step annotation), else the last one
    that starts at or before ``t_us`` and has not ended; -1 when none."""
    best = -1
    for _n, ev in profiler_steps(trace):
        if trace.name(ev) == name:
            return ev
        if float(trace.ts[ev]) <= t_us < float(trace.ts[ev] + trace.dur[ev]):
            best = ev
    return best


def annotation_instance(trace: KinetoTrace, event: int) -> int:
    """Which instance (from 1, in time order) of its name the host annotation ``event`` is,
    as :func:`annotation_window` counts them."""
    ann = np.flatnonzero((trace.kind == int(Kind.ANNOTATION)) & (trace.lane_of >= 0)
                         & (trace.name_id == trace.name_id[event]))
    ann = ann[np.lexsort((ann, trace.ts[ann]))]
    return int(np.flatnonzero(ann == event)[0]) + 1
