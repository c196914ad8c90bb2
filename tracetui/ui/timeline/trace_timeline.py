"""The trace's timeline strip: one lane per GPU stream (optionally one per CPU thread too),
the selected op's GPU events highlighted, the window following the selection.

Built on :class:`~tracetui.ui.timeline.timeline_strip.TimelineStrip`; times are Kineto microseconds
(relative to the trace origin).  Per lane it keeps one sorted numpy array of event ids;
nothing is built per event.  When focused, the arrow keys walk the events of the rows:
left/right to the previous/next event of the same row in start-time order, up/down to the
event of the neighbouring row nearest in time to the current one.  Each step posts
:class:`TraceTimeline.EventSelected` so the tree follows.

The event the keys step from is the timeline's own cursor (the last event it stepped to),
kept while the tree shows that event or its visible ancestor (a hidden python row selects
its parent); any other selection in the tree moves the cursor to that selection.  So a step
never depends on how the tree displays the event, nor on the tree having caught up with
keys pressed in a quick row.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from textual.binding import Binding, BindingType
from textual.message import Message

from ...kineto.kinds import Kind
from ..view.counter_track import counter_tracks
from ..view.driver_tracks import allocation_tracks, phase_tracks
from ..view.memory_track import memory_tracks
from ..view.trace_row_source import TraceRowSource
from ..view.track import Track, short_lane_label
from .timeline_strip import TimelineStrip


class TraceTimeline(TimelineStrip, can_focus=True):
    """Timeline of a :class:`TraceRowSource`'s Kineto trace."""

    # Shown in the footer while the timeline has focus: short descriptions, details in tooltips.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left,h", "step(-1)", "Earlier", id="timeline.prev",
                tooltip="previous event on this lane (start-time order)"),
        Binding("right,l", "step(1)", "Later", id="timeline.next",
                tooltip="next event on this lane (start-time order)"),
        Binding("up,k", "lane(-1)", "Lane up", id="timeline.lane_up",
                tooltip="the event of the lane above nearest in time"),
        Binding("down,j", "lane(1)", "Lane down", id="timeline.lane_down",
                tooltip="the event of the lane below nearest in time"),
    ]

    DEFAULT_CSS = """
    TraceTimeline:focus { background-tint: $foreground 5%; }
    """

    class EventSelected(Message):
        """The user picked a GPU event in the timeline (``node``: Kineto event id)."""

        def __init__(self, node: int) -> None:
            self.node = node
            super().__init__()

    def __init__(self, source: TraceRowSource, *, show_cpu: bool = False, id: str | None = None) -> None:
        super().__init__(label_width=12, id=id)
        self.source = source
        self.show_cpu = show_cpu
        self.lane_ids: list[int] = []  #: Kineto lane index of each timeline row
        self.lane_events: list[np.ndarray] = []  #: event ids per row, by start time
        self.lane_starts: list[np.ndarray] = []  #: their start times, µs (sorted)
        self._row_of_lane: dict[int, int] = {}
        self._row_table = np.full(1, -1, dtype=np.int64)  # Kineto lane index -> row; [-1] is -1
        self._selected: int | None = None
        self._cursor: int | None = None  # Kineto event the keys step from (see module doc)
        self._pending: list[int] = []  # events posted as EventSelected, oldest first
        #: a critical path's ranges (Kineto lane index, start, end µs), marked on their rows
        self._path: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.build()

    # ------------------------------------------------------------------ lanes
    def build(self) -> None:
        """(Re)build the rows: GPU streams, then (``show_cpu``) CPU threads."""
        kt = self.source.kt
        self.lane_ids, self.lane_events, self.lane_starts, lanes = [], [], [], []
        if kt is None:
            self.set_tracks([])
            return
        n = kt.n_events
        gpu = np.flatnonzero(self.source.gpu_work[:n])
        host = np.flatnonzero((kt.kind != int(Kind.INSTANT)) & ~self.source.gpu_work[:n]
                              & (kt.kind != int(Kind.GPU_ANNOTATION)) & (kt.kind != int(Kind.PHASE))
                              & (kt.lane_of >= 0))
        for events, want_gpu in ((gpu, True), (host, False)):
            if not want_gpu and not self.show_cpu:
                continue
            lane_of = kt.lane_of[events]
            o = np.lexsort((kt.ts[events], lane_of))
            events, lane_of = events[o], lane_of[o]
            cuts = np.flatnonzero(np.diff(lane_of)) + 1
            for chunk in np.split(events, cuts) if events.size else []:
                lane = kt.lanes[int(kt.lane_of[chunk[0]])]
                if lane.is_gpu != want_gpu:
                    continue
                self.lane_ids.append(lane.index)
                self.lane_events.append(chunk)
                self.lane_starts.append(kt.ts[chunk])
                lanes.append(Track(short_lane_label(lane), kt.ts[chunk], kt.ts[chunk] + kt.dur[chunk]))
        self._row_of_lane = {lane: row for row, lane in enumerate(self.lane_ids)}
        self._row_table = np.full(len(kt.lanes) + 1, -1, dtype=np.int64)
        self._row_table[self.lane_ids] = np.arange(len(self.lane_ids))
        if self.show_cpu:  # a driver-call trace's pipeline phases, one row per thread (not stepped through)
            lanes += phase_tracks(kt)
        # counter tracks below the lanes (not stepped through): the trace's counters, the
        # bytes allocated of a driver-call trace, and per device the bytes allocated and
        # reserved of a trace recorded with profile_memory=True
        lanes += counter_tracks(kt) + allocation_tracks(kt) + memory_tracks(kt) if lanes else []
        self.set_tracks(lanes, origin_us=0.0)
        self._mark_path()
        self._update_focus_track()

    def set_path(self, ranges: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> None:
        """Mark a critical path: (Kineto lane index, start, end) per segment (µs, this
        trace's clock), on the rows of those lanes (a thread's only while CPU threads are
        shown); None clears the marks."""
        self._path = ranges
        self._mark_path()

    def _mark_path(self) -> None:
        if self._path is None:
            self.set_marks(np.empty(0, np.int64), np.empty(0), np.empty(0))
            return
        lanes, starts, ends = self._path
        rows = self._row_table[np.where(lanes >= 0, lanes, -1)]
        keep = rows >= 0
        self.set_marks(rows[keep], starts[keep], ends[keep])

    def set_show_cpu(self, show: bool) -> None:
        window = self.window
        self.show_cpu = show
        self.build()
        self.set_window(*window)
        if self._selected is not None:
            self.show_selection(self._selected, follow=False)

    # ------------------------------------------------------------------ selection
    def selection_span(self, node: int) -> tuple[float, float] | None:
        """(start, end) µs of the node's GPU events, else of the node itself; None if unknown."""
        src = self.source
        events = src.gpu_events(node)
        kt = src.kt
        if events.size:
            return float(kt.ts[events].min()), float((kt.ts[events] + kt.dur[events]).max())
        k = src.kineto_of(node)
        if k < 0:
            return None
        if k >= kt.n_events:
            row = self._row_of_lane.get(k - kt.n_events)
            if row is None:
                return None
            ev = self.lane_events[row]
            return float(kt.ts[ev].min()), float((kt.ts[ev] + kt.dur[ev]).max())
        return float(kt.ts[k]), float(kt.ts[k] + kt.dur[k])

    def show_selection(self, node: int | None, *, follow: bool = True) -> None:
        """Highlight ``node``'s GPU events, tint its span and pan the window to them.

        When ``node`` is how the tree shows an event this timeline stepped to (the event
        or its visible ancestor), the cursor stays on that event: it is tinted and followed
        instead of the node.  Any other node moves the cursor to the node."""
        self._selected = node
        src, kt = self.source, self.source.kt
        if kt is None or node is None:
            self._cursor = None
            self._pending.clear()
            self.set_highlights([])
            self.set_cursor_range(None)
            self._update_focus_track()
            return
        if not self._confirm_pick(node):
            self._cursor = None
            self._pending.clear()
        events = src.gpu_events(node)
        rows = self._row_table[kt.lane_of[events]]  # lane_of -1 (no lane) maps to -1 too
        shown = events[rows >= 0]
        self.set_highlights(tracks=rows[rows >= 0], starts=kt.ts[shown],
                            ends=kt.ts[shown] + kt.dur[shown])
        k = src.kineto_of(node) if self._cursor is None else self._cursor
        span = None
        if 0 <= k < kt.n_events:
            span = float(kt.ts[k]), float(kt.ts[k] + kt.dur[k])
            self.set_cursor_range(*span)
        else:
            self.set_cursor_range(None)
        if self._cursor is None:
            span = self.selection_span(node)
        if follow and span is not None:
            self.follow(*span)
        self._update_focus_track()

    def _confirm_pick(self, node: int) -> bool:
        """True when ``node`` is how the tree shows one of the events posted by the keys
        (older posts are then forgotten: the tree has moved past them)."""
        for i, event in enumerate(self._pending):
            if self.source.visible_ancestor(event) == node:
                del self._pending[:i]
                return True
        return False

    def show_span(self, t0: float, t1: float) -> None:
        """Show the span ``t0``..``t1`` (µs, trace clock; an idle gap): the window fits it with
        half its length again on each side (the events around it in view), and it is tinted
        as the selection is."""
        self.zoom_to(t0, t1, margin=0.5)
        self.set_cursor_range(t0, t1)

    def zoom_keep_selection(self, factor: float) -> None:
        """Zoom by ``factor`` around the selection when it is in the window, else the middle."""
        center = None
        span = self.selection_span(self._selected) if self._selected is not None else None
        if span is not None:
            mid = (span[0] + span[1]) / 2.0
            w0, w1 = self.window
            if w0 <= mid <= w1:
                center = mid
        self.zoom(factor, center)

    def zoom_to_selection(self) -> bool:
        if self._selected is None:
            return False
        span = self.selection_span(self._selected)
        if span is None:
            return False
        self.zoom_to(*span)
        return True

    # ------------------------------------------------------------------ stepping
    def locate(self, event: int) -> tuple[int, int] | None:
        """(row, index in ``lane_events[row]``) of Kineto event ``event``; None when no row
        holds it (CPU work while only streams are shown, an instant, a lane node)."""
        kt = self.source.kt
        if kt is None or not 0 <= event < kt.n_events:
            return None
        row = int(self._row_table[kt.lane_of[event]])  # lane_of -1 maps to -1 too
        if row < 0:
            return None
        starts, t = self.lane_starts[row], kt.ts[event]
        lo = int(np.searchsorted(starts, t, side="left"))
        hi = int(np.searchsorted(starts, t, side="right"))
        hit = np.flatnonzero(self.lane_events[row][lo:hi] == event)
        return (row, lo + int(hit[0])) if hit.size else None

    def position(self) -> tuple[int, float, int] | None:
        """Where the keys step from: (row, time µs, index of the current event in
        ``lane_events[row]``, or -1 when the selection is no event of a row); None
        without rows.

        The cursor event when there is one; else the selected node's event; else the row of
        the selected node's lane (or of its first GPU event, or row 0) at its start time
        (the window's start for a lane)."""
        if not self.lane_events:
            return None
        src, kt = self.source, self.source.kt
        if self._cursor is not None:
            where = self.locate(self._cursor)
            if where is not None:
                return where[0], float(kt.ts[self._cursor]), where[1]
        node = self._selected
        k = src.kineto_of(node) if node is not None else -1
        where = self.locate(k)
        if where is not None:
            return where[0], float(kt.ts[k]), where[1]
        row = -1
        if 0 <= k < kt.n_events:
            row = int(self._row_table[kt.lane_of[k]])
        elif k >= kt.n_events:
            row = self._row_of_lane.get(k - kt.n_events, -1)
        if row < 0 and node is not None:
            events = src.gpu_events(node)
            if events.size:
                row = int(self._row_table[kt.lane_of[events[0]]])
        t = float(kt.ts[k]) if 0 <= k < kt.n_events else self.window[0]
        return max(row, 0), t, -1

    def step_target(self, direction: int) -> int | None:
        """The event one step ``direction`` (+1 later, -1 earlier) along the current row in
        start-time order; None at the row's end."""
        pos = self.position()
        if pos is None:
            return None
        row, t, i = pos
        if i >= 0:
            j = i + direction
        else:
            j = int(np.searchsorted(self.lane_starts[row], t, side="left")) - (direction < 0)
        events = self.lane_events[row]
        return int(events[j]) if 0 <= j < events.size else None

    def lane_target(self, direction: int) -> int | None:
        """The event of the row ``direction`` below (+1) or above (-1) nearest in time to the
        current one: the last one starting at or before it when that one is still running
        then, else the nearer by start of the last before and the first after it."""
        pos = self.position()
        if pos is None:
            return None
        row, t, _ = pos
        target = row + direction
        if not 0 <= target < len(self.lane_events):
            return None
        kt, events, starts = self.source.kt, self.lane_events[target], self.lane_starts[target]
        i = int(np.searchsorted(starts, t, side="right"))  # starts[:i] <= t < starts[i:]
        if i > 0 and float(starts[i - 1] + kt.dur[events[i - 1]]) >= t:
            return int(events[i - 1])
        best = [j for j in (i - 1, i) if 0 <= j < events.size]
        return int(events[min(best, key=lambda j: abs(float(starts[j]) - t))])

    def _update_focus_track(self) -> None:
        pos = self.position()
        self.focus_track = None if pos is None else pos[0]

    def _go(self, event: int | None) -> None:
        """Make ``event`` the cursor and tell the tree (it answers with show_selection)."""
        if event is None:
            return
        self._cursor = event
        self._pending = self._pending[-63:] + [event]
        self._update_focus_track()
        kt = self.source.kt
        span = float(kt.ts[event]), float(kt.ts[event] + kt.dur[event])
        self.set_cursor_range(*span)
        self.follow(*span)
        self.post_message(self.EventSelected(event))

    def action_step(self, direction: int) -> None:
        self._go(self.step_target(direction))

    def action_lane(self, direction: int) -> None:
        self._go(self.lane_target(direction))
