"""Numbers about one node of the op tree, as the detail pane shows them (times in µs).

* :func:`gpu_work_summary`: the GPU events launched under an op — their summed time, the
  span from the first start to the last end, the kernel count and the top names by time;
* :func:`lane_activity`: one lane (a CPU thread or a GPU stream) — its events by kind and,
  over its busy events, the span and the busy time with overlaps merged
  (:func:`~tracetui.analysis.intervals.union_length`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kineto.kinds import Kind
from ..kineto.trace import KinetoTrace
from .intervals import union_length


@dataclass(frozen=True)
class GpuWorkSummary:
    """GPU events under an op.  ``top`` holds (name id, count, summed µs), largest first."""

    n_events: int
    n_kernels: int
    total_us: float
    span_us: float
    top: list[tuple[int, int, float]]


def gpu_work_summary(kt: KinetoTrace, events: np.ndarray, top: int) -> GpuWorkSummary | None:
    """Summary of the GPU ``events`` (indices into ``kt``); None when there are none."""
    if not events.size:
        return None
    dur = kt.dur[events]
    names, inv = np.unique(kt.name_id[events], return_inverse=True)
    per = np.bincount(inv, weights=dur)
    counts = np.bincount(inv)
    order = np.argsort(-per, kind="stable")[:top]
    ends = kt.ts[events] + dur
    return GpuWorkSummary(
        n_events=int(events.size),
        n_kernels=int((kt.kind[events] == int(Kind.KERNEL)).sum()),
        total_us=float(dur.sum()),
        span_us=float(ends.max() - kt.ts[events].min()),
        top=[(int(names[i]), int(counts[i]), float(per[i])) for i in order.tolist()])


@dataclass(frozen=True)
class LaneActivity:
    """One lane: ``kind_counts`` (kind -> events), and over its busy events the first start
    (``start_us``), ``span_us`` and ``busy_us`` (overlaps merged); busy numbers are None
    when the lane has no busy event."""

    kind_counts: dict[Kind, int]
    start_us: float | None
    span_us: float | None
    busy_us: float | None

    @property
    def idle_us(self) -> float | None:
        if self.span_us is None or self.busy_us is None or self.span_us <= 0:
            return None
        return max(0.0, self.span_us - self.busy_us)


def lane_activity(kt: KinetoTrace, lane_index: int, busy_mask: np.ndarray) -> LaneActivity:
    """Activity of lane ``lane_index``; ``busy_mask`` (per event) says which events count as
    busy time (GPU work on a stream, every non-instant event on a thread)."""
    on = np.flatnonzero(kt.lane_of == lane_index)
    kinds = np.bincount(kt.kind[on], minlength=len(Kind)) if on.size else np.zeros(len(Kind), dtype=np.int64)
    kind_counts = {Kind(i): int(c) for i, c in enumerate(kinds.tolist()) if c}
    work = on[busy_mask[on]]
    if not work.size:
        return LaneActivity(kind_counts, None, None, None)
    s, e = kt.ts[work], kt.ts[work] + kt.dur[work]
    return LaneActivity(kind_counts, float(s.min()), float(e.max() - s.min()), union_length(s, e))
