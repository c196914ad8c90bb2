"""Memory tracks: per device of a trace recorded with ``profile_memory=True``, one timeline
row of the bytes allocated and one of the bytes reserved (:mod:`tracetui.analysis.memory`).

A :class:`MemoryTrack` is a :class:`~.track.Track` of one interval, the span of the row (a
level lasts from the trace's first event, or the device's first ``[memory]`` event, to the
last end): the strip's extent and busy run come from it as for any lane, while the levels are
the steps of the device's running total, ``ts``/``values`` (each value holds from its
``[memory]`` event to the next; before the first event the bytes allocated before the trace,
see docs/memory.md).  Its steps are not intervals: a snapshot has tens of millions, and as
intervals they cost two float copies and their merge.  Each cell shows the **highest** total reached inside it
(:func:`~tracetui.analysis.memory.cell_max`), so the peak is never lost when zoomed out.
The glyph scale of a row runs from its lowest value in the trace (``▁``) to its highest
(``█``), whatever the window, so a level means the same bytes at every zoom; the values are
in the memory screen (``M``) and the detail pane.  Times are µs in the trace's clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...analysis.frames import per_trace
from ...analysis.memory import cell_max, memory_model, timeline
from ...kineto.trace import KinetoTrace
from .track import Track

#: what each row of a device shows, as its label says it (the label column holds 11 cells)
ALLOCATED_LABEL, RESERVED_LABEL = "alc", "rsv"


@dataclass(frozen=True, eq=False)
class MemoryTrack(Track):
    """A device's allocated (or reserved) bytes as a step function: ``ts`` (sorted µs) and
    ``values`` after each event, ``before`` held before ``ts[0]``."""

    ts: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: bytes (the model's int64 column, a view: a snapshot's history has tens of millions of rows)
    values: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    before: float = 0.0
    #: the row's lowest value (``before`` included) and highest: the glyph scale, found once
    low: float = 0.0
    high: float = 0.0
    device: str = ""
    what: str = "allocated"  #: "allocated" or "reserved"
    #: a level lasts across idle time: no gap is marked
    marks_gaps = False

    def cell_levels(self, edges: np.ndarray) -> np.ndarray:
        """Glyph level 0..8 per cell ``[edges[c], edges[c+1])``: 0 outside the trace, else
        1..8 for the highest value in the cell between the row's lowest and highest value."""
        cells = edges.size - 1
        out = np.zeros(max(cells, 0), dtype=np.int8)
        if cells <= 0 or not self.ts.size:
            return out
        top = cell_max(self.ts, self.values, self.before, edges)
        lo, hi = self.low, self.high
        scaled = np.full(cells, 8.0) if hi <= lo else 1.0 + 7.0 * (top - lo) / (hi - lo)
        inside = (edges[1:] > self.starts[0]) & (edges[:-1] < self.ends[-1])
        out[inside] = np.clip(np.rint(scaled[inside]), 1, 8).astype(np.int8)
        return out


def memory_tracks(kt: KinetoTrace) -> list[MemoryTrack]:
    """Per device with ``[memory]`` events (GPUs first, the CPU last): its allocated row, then
    its reserved row when the trace records reserved bytes above 0 (the CPU has none).
    Rows span the trace, from its first event to its last end.  Built once per trace (the
    browser's load worker builds them, off the UI thread: ~0.15 s on a 1 GB snapshot)."""
    return list(per_trace(kt, "memory_tracks", _build_memory_tracks))


def _build_memory_tracks(kt: KinetoTrace) -> list[MemoryTrack]:
    m = memory_model(kt)
    if not m.n_rows:
        return []
    first, last = float(np.min(kt.ts)), float(np.max(kt.ts + kt.dur))
    out = []
    for d in m.devices:
        ts, allocated, reserved = timeline(m, d)
        begin, end = min(first, float(ts[0])), max(last, float(ts[-1]))
        starts, ends = np.array([begin]), np.array([end])  # the row's span: one interval
        rows = [(ALLOCATED_LABEL, "allocated", allocated, float(d.baseline))]
        top = int(reserved.max())
        if top > 0:
            # -1 (no Total Reserved recorded) shows as 0; before the first event the reserve
            # is not known: its first value stands in.  A copy only where a -1 is.
            low = int(reserved.min())
            shown = reserved if low >= 0 else np.maximum(reserved, 0)
            rows.append((RESERVED_LABEL, "reserved", shown, float(max(int(reserved[0]), 0))))
        for short, what, values, before in rows:
            low, high = min(before, float(values.min())), float(values.max())
            out.append(MemoryTrack(f"{d.name} {short}", starts, ends, ts=ts, values=values, before=before,
                                   device=d.name, what=what, low=low, high=high))
    return out
