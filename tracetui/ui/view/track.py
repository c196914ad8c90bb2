"""Tracks: the rows of the timeline, free of Textual.

A :class:`Track` is a label and a set of time intervals (float64 microseconds in the trace's
clock).  :class:`~tracetui.ui.timeline.timeline_strip.TimelineStrip` draws any list of them:
per cell the busy fraction of the span it covers (overlaps count once), idle gaps dotted and
labelled with their length.  A track can draw itself differently by overriding two hooks:

* :meth:`Track.cell_levels`: a glyph level 0..8 per cell instead of the busy fraction (a
  counter series, :class:`~.counter_track.CounterTrack`, shows its values);
* :meth:`Track.cell_text`: one character per cell drawn over the glyphs (the names of a
  driver-call trace's phases, :class:`~.driver_tracks.PhaseTrack`), and :attr:`Track.marks_gaps`
  False to leave its idle gaps unmarked.

A trace's lanes (GPU streams, CPU threads) become tracks in
:class:`~tracetui.ui.timeline.trace_timeline.TraceTimeline`; a diff or a critical path can hand
the strip tracks of its own.  :class:`BusyRuns` merges a track's intervals once, so drawing a
row costs ``O(cells * log(runs))`` whatever the number of intervals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...analysis.intervals import union_intervals


@dataclass(frozen=True, eq=False)
class Track:
    """One row of the timeline.

    ``starts``/``ends`` are float64 microseconds, one entry per interval (a kernel,
    an op), sorted by start; intervals may overlap (overlap counts once as busy).
    """

    label: str
    starts: np.ndarray
    ends: np.ndarray

    #: whether idle gaps longer than two cells are dotted and labelled with their length
    marks_gaps = True

    def cell_levels(self, edges: np.ndarray) -> np.ndarray | None:
        """Glyph level 0..8 per cell ``[edges[c], edges[c+1])`` (``edges`` in the track's
        clock), or None to draw the busy fraction (the default)."""
        return None

    def cell_text(self, edges: np.ndarray) -> np.ndarray | None:
        """One character per cell drawn over the glyphs ("" where none), or None (the default)."""
        return None


def short_lane_label(lane) -> str:
    """The lane's own timeline label (the start of its tree label: ``Stream 108``), else
    ``GPU0 s7`` for a stream, ``T 19392`` for a thread (the strip's label column is narrow)."""
    if getattr(lane, "short", ""):
        return lane.short
    if lane.is_gpu:
        return f"GPU{lane.pid} s{lane.tid}"
    return f"T {lane.tid}"


def runs_mask(run_starts: np.ndarray, run_ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Cells ``[edges[c], edges[c + 1])`` that any run ``[start, end]`` overlaps (a
    zero-length run marks the cell holding it).  Runs as from :func:`~tracetui.analysis.intervals.union_intervals`;
    costs ``O(cells * log(runs))``."""
    if not run_starts.size:
        return np.zeros(edges.size - 1, dtype=bool)
    # The last run starting before a cell's right edge decides: run ends and starts are
    # non-decreasing, so if any earlier run reached into the cell this one does too.
    j = np.searchsorted(run_starts, edges[1:], side="left") - 1
    jc = np.maximum(j, 0)
    left = edges[:-1]
    return (j >= 0) & ((run_ends[jc] > left) | (run_starts[jc] >= left))


class BusyRuns:
    """A track's intervals merged into disjoint busy runs, times relative to ``origin``."""

    def __init__(self, track: Track, origin: float) -> None:
        starts = np.asarray(track.starts, dtype=np.float64) - origin
        ends = np.asarray(track.ends, dtype=np.float64) - origin
        if starts.shape != ends.shape:
            raise ValueError(f"track {track.label!r}: {starts.size} starts but {ends.size} ends")
        if starts.size and np.any(starts[1:] < starts[:-1]):
            order = np.argsort(starts, kind="stable")
            starts, ends = starts[order], ends[order]
        self.starts, self.ends = union_intervals(starts, ends, presorted=True)
        self.prefix = np.concatenate(([0.0], np.cumsum(self.ends - self.starts)))
        self.gaps = self.starts[1:] - self.ends[:-1]

    def covered(self, edges: np.ndarray) -> np.ndarray:
        """Busy microseconds in ``(-inf, edge]`` for each edge."""
        if not self.starts.size:
            return np.zeros(edges.size)
        j = np.searchsorted(self.starts, edges, side="right") - 1
        jc = np.maximum(j, 0)
        partial = np.clip(np.minimum(edges, self.ends[jc]) - self.starts[jc], 0.0, None)
        return np.where(j >= 0, self.prefix[jc] + partial, 0.0)

    def long_gaps(self, t0: float, t1: float, threshold: float) -> tuple[np.ndarray, np.ndarray]:
        """(gap starts, gap ends) of idle gaps longer than ``threshold`` overlapping ``[t0, t1]``."""
        if self.starts.size < 2:
            return np.empty(0), np.empty(0)
        lo = max(0, int(np.searchsorted(self.ends, t0, side="left")) - 1)
        hi = min(self.gaps.size, int(np.searchsorted(self.starts, t1, side="left")))
        if hi <= lo:
            return np.empty(0), np.empty(0)
        index = lo + np.flatnonzero(self.gaps[lo:hi] > threshold)
        return self.ends[index], self.starts[index + 1]


