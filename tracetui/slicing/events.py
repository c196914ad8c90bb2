"""Which events a slice keeps (model event indices of a :class:`~tracetui.kineto.trace.KinetoTrace`).

- **step N** (:func:`step_events`): the events of step N (``ProfilerStep#N``, else the
  N-th repeated top-level annotation) as :mod:`tracetui.analysis.steps` defines them (host
  events with a duration starting in its span on any thread, the GPU work their launch
  calls launched), the GPU annotations inside the kept GPU work's span, and the ancestors
  of every kept host event (the frames around the step, kept whole so the tree keeps its
  shape);
- **window [START, END)** (:func:`window_events`, µs relative to the trace origin, as the
  browser shows times): every event that overlaps it (an instant: that lies in it), the GPU
  work of every kept launch call and the launch call of every kept GPU event (a link is
  never cut), and the ancestors of every kept host event;
- **a subtree** (:func:`subtree_events`): what ``tracetui export --format chrome`` writes
  for it (the subtree, its GPU work, its parent chain, its thread's instants in its span).
"""

from __future__ import annotations

import numpy as np

from .. import units
from ..analysis.steps import find_steps, step_of_events
from ..errors import TraceError
from ..export.chrome import select_events
from ..kineto.kinds import GPU_KINDS, GPU_WORK_KINDS, Kind
from ..kineto.trace import KinetoTrace

_GPU = [int(k) for k in GPU_KINDS]
_WORK = [int(k) for k in GPU_WORK_KINDS]


def with_ancestors(kt: KinetoTrace, keep: np.ndarray) -> np.ndarray:
    """``keep`` (bool per event) plus every event above a kept one (lane roots excluded)."""
    n = kt.n_events
    keep = keep.copy()
    parent = kt.parent[:n].astype(np.int64)
    frontier = np.flatnonzero(keep)
    while frontier.size:
        p = parent[frontier]
        p = p[(p >= 0) & (p < n)]
        p = p[~keep[p]]
        p = np.unique(p)
        keep[p] = True
        frontier = p
    return keep


def _link_closure(kt: KinetoTrace, keep: np.ndarray) -> np.ndarray:
    """``keep`` plus the GPU work of kept launch calls and the launch calls of kept GPU work."""
    work = np.flatnonzero(np.isin(kt.kind, _WORK))
    launch = kt.launch_of[work].astype(np.int64)
    has = launch >= 0
    work, launch = work[has], launch[has]
    keep = keep.copy()
    keep[launch[keep[work]]] = True
    keep[work[keep[launch]]] = True
    return keep


def _gpu_annotations_over(kt: KinetoTrace, keep: np.ndarray) -> np.ndarray:
    """GPU annotations that start inside the span of the kept GPU work (bool per event)."""
    work = np.flatnonzero(keep & np.isin(kt.kind, _WORK))
    out = np.zeros(kt.n_events, dtype=bool)
    if work.size:
        lo, hi = float(kt.ts[work].min()), float((kt.ts[work] + kt.dur[work]).max())
        out = (kt.kind == int(Kind.GPU_ANNOTATION)) & (kt.ts >= lo) & (kt.ts < hi)
    return out


def step_events(kt: KinetoTrace, number: int) -> np.ndarray:
    """Events of a slice to step ``number`` (``ProfilerStep#<number>``, or the number-th
    repeated top-level annotation: ``analysis.steps.find_steps``) (sorted event indices)."""
    steps = find_steps(kt)
    numbers = [] if steps.whole_trace else [s.number for s in steps.steps]
    if number not in numbers:
        have = ", ".join(str(n) for n in numbers[:20]) or "none"
        raise TraceError(kt.path, f"no step {number} in this trace (steps: {have})")
    keep = step_of_events(kt, steps) == numbers.index(number)
    keep |= _gpu_annotations_over(kt, keep)
    return np.flatnonzero(with_ancestors(kt, keep))


def window_events(kt: KinetoTrace, start_us: float, end_us: float) -> np.ndarray:
    """Events of a slice to the window [start_us, end_us) (sorted event indices)."""
    if not end_us > start_us:
        raise TraceError(kt.path, f"window {start_us:g}:{end_us:g}: the end must be after the start")
    ts, end = kt.ts, kt.ts + kt.dur
    point = kt.dur <= 0
    keep = np.where(point, (ts >= start_us) & (ts < end_us), (ts < end_us) & (end > start_us))
    keep &= np.isfinite(ts)
    keep = _link_closure(kt, keep)
    return np.flatnonzero(with_ancestors(kt, keep))


def subtree_events(kt: KinetoTrace, root: int) -> np.ndarray:
    """Events of a slice to the subtree under node ``root`` (as the Chrome export)."""
    return select_events(kt, root, with_parents=True)


def parse_window(text: str) -> tuple[float, float]:
    """``"START:END"`` (µs, decimals allowed) -> (start, end)."""
    a, sep, b = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return float(a), float(b)
    except ValueError:
        raise TraceError(None, f"--window {text!r}: expected START:END in {units.US} after the trace start, "
                               "e.g. 1000:2500") from None
