"""The trace's timeline strip: one lane per GPU stream (optionally one per CPU thread too),
the selected op's GPU events highlighted, the window following the selection.

Built on :class:`~tracetui.ui.timeline.TimelineStrip`; times are Kineto microseconds
(relative to the trace origin).  Per lane it keeps one sorted numpy array of event ids;
nothing is built per event.  When focused, the arrow keys walk GPU events: left/right
along a stream, up/down to the nearest event on the neighbouring lane; each step posts
:class:`TraceTimeline.EventSelected` so the tree follows.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from textual.binding import Binding, BindingType
from textual.message import Message

from ..kineto.kinds import Kind
from .source import TraceTreeSource
from .timeline import Lane, TimelineStrip


def short_lane_label(lane) -> str:
    """``GPU0 s7`` for a stream, ``T 19392`` for a thread (the strip's label column is narrow)."""
    if lane.is_gpu:
        return f"GPU{lane.pid} s{lane.tid}"
    return f"T {lane.tid}"


class TraceTimeline(TimelineStrip, can_focus=True):
    """Timeline of a :class:`TraceTreeSource`'s Kineto trace."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right,l", "step(1)", "Next GPU event", show=False, id="timeline.next"),
        Binding("left,h", "step(-1)", "Previous GPU event", show=False, id="timeline.prev"),
        Binding("down,j", "lane(1)", "Lane below", show=False, id="timeline.lane_down"),
        Binding("up,k", "lane(-1)", "Lane above", show=False, id="timeline.lane_up"),
    ]

    DEFAULT_CSS = """
    TraceTimeline:focus { background-tint: $foreground 5%; }
    """

    class EventSelected(Message):
        """The user picked a GPU event in the timeline (``node``: Kineto event id)."""

        def __init__(self, node: int) -> None:
            self.node = node
            super().__init__()

    def __init__(self, source: TraceTreeSource, *, show_cpu: bool = False, id: str | None = None) -> None:
        super().__init__(label_width=12, id=id)
        self.source = source
        self.show_cpu = show_cpu
        self.lane_ids: list[int] = []  #: Kineto lane index of each timeline row
        self.lane_events: list[np.ndarray] = []  #: event ids per row, by start time
        self._row_of_lane: dict[int, int] = {}
        self._row_table = np.full(1, -1, dtype=np.int64)  # Kineto lane index -> row; [-1] is -1
        self._selected: int | None = None
        self.build()

    # ------------------------------------------------------------------ lanes
    def build(self) -> None:
        """(Re)build the rows: GPU streams, then (``show_cpu``) CPU threads."""
        kt = self.source.kt
        self.lane_ids, self.lane_events, lanes = [], [], []
        if kt is None:
            self.set_lanes([])
            return
        n = kt.n_events
        gpu = np.flatnonzero(self.source.gpu_work[:n])
        host = np.flatnonzero((kt.kind != int(Kind.INSTANT)) & ~self.source.gpu_work[:n]
                              & (kt.kind != int(Kind.GPU_ANNOTATION)) & (kt.lane_of >= 0))
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
                lanes.append(Lane(short_lane_label(lane), kt.ts[chunk], kt.ts[chunk] + kt.dur[chunk]))
        self._row_of_lane = {lane: row for row, lane in enumerate(self.lane_ids)}
        self._row_table = np.full(len(kt.lanes) + 1, -1, dtype=np.int64)
        self._row_table[self.lane_ids] = np.arange(len(self.lane_ids))
        self.set_lanes(lanes, origin_us=0.0)

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
        """Highlight ``node``'s GPU events, tint its span and pan the window to them."""
        self._selected = node
        src, kt = self.source, self.source.kt
        if kt is None or node is None:
            self.set_highlights([])
            self.set_cursor_range(None)
            return
        events = src.gpu_events(node)
        rows = self._row_table[kt.lane_of[events]]  # lane_of -1 (no lane) maps to -1 too
        shown = events[rows >= 0]
        self.set_highlights(lanes=rows[rows >= 0], starts=kt.ts[shown],
                            ends=kt.ts[shown] + kt.dur[shown])
        k = src.kineto_of(node)
        if 0 <= k < kt.n_events:
            self.set_cursor_range(float(kt.ts[k]), float(kt.ts[k] + kt.dur[k]))
        else:
            self.set_cursor_range(None)
        if follow:
            span = self.selection_span(node)
            if span is not None:
                self.follow(*span)

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
    def _reference(self) -> tuple[int, float, int]:
        """(row, time µs, event) the arrow keys step from: the selected GPU event, else the
        selected node's start on the first row holding its GPU events (or row 0)."""
        src, kt = self.source, self.source.kt
        node = self._selected
        k = src.kineto_of(node) if node is not None else -1
        if 0 <= k < kt.n_events and src.gpu_work[k]:
            row = self._row_of_lane.get(int(kt.lane_of[k]), 0)
            return row, float(kt.ts[k]), k
        row = 0
        events = src.gpu_events(node) if node is not None else np.empty(0, np.int64)
        if events.size:
            row = self._row_of_lane.get(int(kt.lane_of[events[0]]), 0)
        if 0 <= k < kt.n_events:
            t = float(kt.ts[k])
        else:
            t = self.window[0]
        return row, t, -1

    def step_target(self, direction: int) -> int | None:
        """The GPU event one step ``direction`` (+1 later, -1 earlier) along the current row."""
        if not self.lane_events:
            return None
        row, t, ev = self._reference()
        events = self.lane_events[row]
        starts = self.source.kt.ts[events]
        if ev >= 0:
            i = int(np.searchsorted(starts, t, side="left"))
            while i < events.size and int(events[i]) != ev:
                i += 1
            j = i + direction
        elif direction > 0:
            j = int(np.searchsorted(starts, t, side="left"))
        else:
            j = int(np.searchsorted(starts, t, side="left")) - 1
        return int(events[j]) if 0 <= j < events.size else None

    def lane_target(self, direction: int) -> int | None:
        """The GPU event nearest in time on the next non-empty row above/below."""
        if not self.lane_events:
            return None
        row, t, _ = self._reference()
        target = row + direction
        if not 0 <= target < len(self.lane_events):
            return None
        events = self.lane_events[target]
        starts = self.source.kt.ts[events]
        i = int(np.searchsorted(starts, t))
        best = [j for j in (i - 1, i) if 0 <= j < events.size]
        j = min(best, key=lambda j: abs(float(starts[j]) - t))
        return int(events[j])

    def action_step(self, direction: int) -> None:
        target = self.step_target(direction)
        if target is not None:
            self.post_message(self.EventSelected(target))

    def action_lane(self, direction: int) -> None:
        target = self.lane_target(direction)
        if target is not None:
            self.post_message(self.EventSelected(target))
