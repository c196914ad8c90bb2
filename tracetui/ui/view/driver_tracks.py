"""Timeline rows of a driver-call trace (alone or linked to its Kineto trace): one row of
pipeline phases per thread (:class:`PhaseTrack`: each phase's span carries its name,
``┃weight loading───┃warm-up──┃inference──``) and a counter track of the bytes the process
has allocated (:func:`allocation_tracks`, from the allocation records: the file's
``total_allocated``, else the running sum of their sizes, held until the next record).

Rows are built with numpy per lane; drawing a phase row costs a Python step per phase in
the window (a handful per thread).  Times are µs in the trace's clock, like every lane.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...driver.facts import PHASE_PREFIX, allocation_series, driver_of
from ...errors import one_line
from ...kineto.kinds import Kind
from .counter_track import CounterTrack
from .track import Track

PHASE_MARK = "┃"
PHASE_FILL = "─"
ALLOC_LABEL = "bytes alloc"
LABEL_CELLS = 12  #: the timeline's label column (TraceTimeline: label_width)


@dataclass(frozen=True, eq=False)
class PhaseTrack(Track):
    """A lane of phase spans (sorted by start) whose cells show the phases' names."""

    names: tuple[str, ...] = field(default_factory=tuple)
    #: idle time between two phases of a thread is not marked (the names stay readable)
    marks_gaps = False

    def cell_text(self, edges: np.ndarray) -> np.ndarray:
        """One character per cell ``[edges[c], edges[c+1])`` ("" where no phase is): each
        phase's cells read ``┃name───`` (cut to its width; no mark when it began before the
        window), a later phase overwriting the cell where two meet."""
        cells = edges.size - 1
        out = np.full(max(cells, 0), "", dtype="<U1")
        if cells <= 0 or not self.starts.size:
            return out
        first = np.clip(np.searchsorted(edges, self.starts, side="right") - 1, 0, cells - 1)
        last = np.clip(np.searchsorted(edges, self.ends, side="left") - 1, 0, cells - 1)
        inside = np.flatnonzero((self.ends >= edges[0]) & (self.starts < edges[-1]))
        for i in inside.tolist():
            a, b = int(first[i]), max(int(last[i]), int(first[i]))
            n = b - a + 1
            head = (PHASE_MARK if self.starts[i] >= edges[0] else "") + self.names[i]
            out[a:b + 1] = list((head + PHASE_FILL * n)[:n])
        return out


def phase_tracks(kt) -> list[PhaseTrack]:
    """One :class:`PhaseTrack` per thread that has phase spans, in lane order."""
    drv = driver_of(kt)
    if drv is None:
        return []
    ph = np.flatnonzero(drv.kind == int(Kind.PHASE))
    ph = ph[drv.lane_of[ph] >= 0]
    if not ph.size:
        return []
    ph = ph[np.lexsort((drv.ts[ph], drv.lane_of[ph]))]
    out = []
    for chunk in np.split(ph, np.flatnonzero(np.diff(drv.lane_of[ph])) + 1):
        lane = drv.lanes[int(drv.lane_of[chunk[0]])]
        # one character per cell: control characters escaped first (trace data)
        names = tuple(one_line(n[len(PHASE_PREFIX):] if n.startswith(PHASE_PREFIX) else n)
                      for n in map(drv.name, chunk.tolist()))
        label = f"phases {lane.tid}" if len(f"phases {lane.tid}") < LABEL_CELLS else f"ph {lane.tid}"
        out.append(PhaseTrack(label, drv.ts[chunk], drv.ts[chunk] + drv.dur[chunk], names=names))
    return out


def allocation_tracks(kt) -> list[CounterTrack]:
    """The bytes allocated by each process over time (a counter track per process)."""
    drv = driver_of(kt)
    series = allocation_series(kt)
    if drv is None or not series:
        return []
    ev = drv.driver_events()
    end = float(np.max(drv.ts[ev] + drv.dur[ev]))
    out = []
    for s in series:
        if not s.events.size:
            continue
        ends = np.append(s.ts[1:], max(end, float(s.ts[-1])))
        label = ALLOC_LABEL if len(series) == 1 else f"alloc {s.pid}"
        out.append(CounterTrack(label, s.ts, ends, values=s.total, series="bytes allocated"))
    return out
