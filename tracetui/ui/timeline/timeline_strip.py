"""TimelineStrip: how busy each track (a GPU stream, a CPU thread, a counter series: see
:mod:`tracetui.ui.view.track`) is across a time window.

One screen row per track plus a sticky ruler row on top (Line API: ``render_line``).
Each cell covers ``(t1 - t0) / cells`` microseconds and shows the busy fraction of
that span with a block character (`` ▁▂▃▄▅▆▇█``; any busy time shows at least ``▁``).

All times are **microseconds** in the tracks' own clock (Kineto ``ts``).  Ruler labels
are relative to ``origin`` (by default the earliest interval start of all tracks).

On :meth:`TimelineStrip.set_tracks` each track's intervals are merged into sorted,
disjoint busy runs with a prefix sum of their lengths, so rendering a row costs
``O(cells * log(runs))`` whatever the number of intervals; idle gaps are found by
searching only the runs inside the window.  Highlighted ranges get the same treatment
(merged once per track in :meth:`TimelineStrip.set_highlights`, drawn by binary search), and
so do marked ranges (:meth:`TimelineStrip.set_marks`: a critical path), drawn under the
highlights: busy cells in the mark colour, idle ones as :data:`MARK_IDLE`.
"""

from __future__ import annotations

from typing import ClassVar, Iterable, Sequence

import numpy as np
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...analysis.intervals import union_intervals
from ...units import choose_unit, format_duration_us, format_time_us
from ..view.label_short import keep_cut_mark, name_text
from ..view.timescale import nice_ticks
from ..view.track import BusyRuns, Track, runs_mask

BLOCKS = " ▁▂▃▄▅▆▇█"
"""Busy-fraction glyphs: index ``ceil``-ish of ``fraction * 8``; nonzero busy is at least ``▁``."""
GAP_FILL = "·"
MARK_IDLE = "─"
"""A marked range (a critical path) where the track is idle: the path waits there."""
FOCUS_MARK = "▶"
"""Drawn before the label of :attr:`TimelineStrip.focus_track` while the strip has focus."""
MIN_SPAN_US = 0.01
"""Narrowest window: 10 ns."""

# Cell classes used to pick a style; CURSOR is a flag added on top.
_BUSY, _GAP, _GAP_LABEL, _HIGHLIGHT, _CURSOR, _MARK = 0, 1, 2, 3, 4, 8


class TimelineStrip(ScrollView, can_focus=False):
    """Busy blocks per track over a zoomable, pannable time window (keys belong to the app)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "timeline--busy",
        "timeline--gap",
        "timeline--gap-label",
        "timeline--highlight",
        "timeline--mark",
        "timeline--cursor",
        "timeline--ruler",
        "timeline--label",
        "timeline--focus-label",
    }

    DEFAULT_CSS = """
    TimelineStrip {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 12;
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
        & > .timeline--busy { color: $primary; }
        & > .timeline--gap { color: $text-muted; }
        & > .timeline--gap-label { color: $warning; }
        & > .timeline--highlight { color: $warning; background: $warning 30%; }
        & > .timeline--mark { color: $error; text-style: bold; }
        & > .timeline--cursor { background: $accent 35%; }
        & > .timeline--ruler { color: $text-muted; background: $panel; }
        & > .timeline--label { color: $text; }
        & > .timeline--focus-label { text-style: reverse bold; }
    }
    """

    class WindowChanged(Message):
        """The visible time window changed (microseconds, track clock)."""

        def __init__(self, timeline: TimelineStrip, t0: float, t1: float) -> None:
            self.timeline = timeline
            self.t0 = t0
            self.t1 = t1
            super().__init__()

        @property
        def control(self) -> TimelineStrip:
            return self.timeline

    def __init__(
        self,
        tracks: Sequence[Track] = (),
        *,
        label_width: int = 12,
        min_gap_us: float = 0.0,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self.label_width = label_width
        self._min_gap_us = float(min_gap_us)
        self._tracks: list[Track] = []
        self._runs: list[BusyRuns] = []
        self._origin = 0.0
        self._extent = (0.0, 1.0)
        self._window = (0.0, 1.0)
        # track index -> (run starts, run ends) of its highlighted ranges, relative to origin.
        self._highlights: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._marks: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # the same for the marked ranges
        self._cursor_range: tuple[float, float] | None = None
        self._focus_track: int | None = None
        self._strip_cache: dict[int, Strip] = {}
        self._strip_cache_key: tuple | None = None
        self.set_tracks(tracks)

    # ----------------------------------------------------------------- data
    def set_tracks(self, tracks: Sequence[Track], origin_us: float | None = None) -> None:
        """Show ``tracks`` and fit the window to all their intervals.

        ``origin_us`` is time zero of the ruler (default: the earliest start).
        """
        tracks = list(tracks)
        firsts = [float(np.min(track.starts)) for track in tracks if len(track.starts)]
        lasts = [float(np.max(track.ends)) for track in tracks if len(track.ends)]
        self._origin = float(origin_us) if origin_us is not None else (min(firsts) if firsts else 0.0)
        self._tracks = tracks
        self._runs = [BusyRuns(track, self._origin) for track in tracks]
        if firsts:
            self._extent = (min(firsts), max(max(lasts), min(firsts) + MIN_SPAN_US))
        else:
            self._extent = (self._origin, self._origin + 1.0)
        self._highlights = {}
        self._marks = {}
        self._invalidate()
        self.virtual_size = Size(0, len(tracks) + 1)
        self.fit_all()

    @property
    def tracks(self) -> list[Track]:
        return list(self._tracks)

    @property
    def origin(self) -> float:
        """Ruler time zero, microseconds."""
        return self._origin

    @property
    def extent(self) -> tuple[float, float]:
        """(earliest start, latest end) over all tracks, microseconds."""
        return self._extent

    @property
    def min_gap_us(self) -> float:
        """Idle gaps are marked when longer than max(2 cells, this many µs)."""
        return self._min_gap_us

    @min_gap_us.setter
    def min_gap_us(self, value: float) -> None:
        self._min_gap_us = max(0.0, float(value))
        self._invalidate()

    def set_highlights(
        self,
        highlights: Iterable[tuple[int, float, float]] | None = None,
        *,
        tracks: np.ndarray | None = None,
        starts: np.ndarray | None = None,
        ends: np.ndarray | None = None,
    ) -> None:
        """Mark time ranges on tracks (e.g. the selected op's kernels); replaces the previous marks.

        Give either ``(track_index, start_us, end_us)`` tuples, or three equal-length
        arrays ``tracks`` (track index), ``starts`` and ``ends`` (microseconds, track clock).
        Each track's ranges are sorted and merged into runs here, once, so drawing costs
        ``O(cells * log(runs))`` per track whatever their number (a million is fine).
        Ranges on tracks that do not exist are never drawn.
        """
        if tracks is None:
            if starts is not None or ends is not None:
                raise ValueError("set_highlights: starts/ends given without tracks")
            table = np.asarray(list(() if highlights is None else highlights), dtype=np.float64).reshape(-1, 3)
            track_of, s, e = table[:, 0].astype(np.int64), table[:, 1], table[:, 2]
        else:
            if highlights is not None:
                raise ValueError("set_highlights: give tuples or arrays, not both")
            track_of = np.asarray(tracks, dtype=np.int64).ravel()
            s = np.asarray(starts, dtype=np.float64).ravel()
            e = np.asarray(ends, dtype=np.float64).ravel()
            if not track_of.size == s.size == e.size:
                raise ValueError(
                    f"set_highlights: {track_of.size} tracks, {s.size} starts, {e.size} ends")
        self._highlights = self._merged(track_of, s, e)
        self._invalidate()

    def set_marks(self, tracks: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        """Mark time ranges on tracks (a critical path's segments), under the highlights;
        replaces the previous marks (empty arrays clear them).  Arrays as for
        :meth:`set_highlights`, merged per track once."""
        track_of = np.asarray(tracks, dtype=np.int64).ravel()
        s = np.asarray(starts, dtype=np.float64).ravel()
        e = np.asarray(ends, dtype=np.float64).ravel()
        if not track_of.size == s.size == e.size:
            raise ValueError(f"set_marks: {track_of.size} tracks, {s.size} starts, {e.size} ends")
        self._marks = self._merged(track_of, s, e)
        self._invalidate()

    def _merged(self, track_of: np.ndarray, s: np.ndarray, e: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Per track, its ranges ``[s, e]`` (µs, track clock) sorted and merged, relative to the origin."""
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if not track_of.size:
            return out
        if np.any(track_of[1:] < track_of[:-1]):
            small = -(2**15) <= track_of.min() and track_of.max() < 2**15
            order = np.argsort(track_of.astype(np.int16) if small else track_of, kind="stable")
            track_of, s, e = track_of[order], s[order], e[order]
        s = s - self._origin
        e = e - self._origin
        bounds = [0, *(np.flatnonzero(np.diff(track_of)) + 1).tolist(), track_of.size]
        for a, b in zip(bounds, bounds[1:]):
            ls, le = s[a:b], e[a:b]
            if np.any(ls[1:] < ls[:-1]):
                order = np.argsort(ls, kind="stable")
                ls, le = ls[order], le[order]
            out[int(track_of[a])] = union_intervals(ls, le, presorted=True, join_touching=False)
        return out

    def set_cursor_range(self, t0: float | None, t1: float | None = None) -> None:
        """Tint ``[t0, t1]`` (microseconds) on every track, e.g. the selected op; None clears."""
        self._cursor_range = None if t0 is None else (float(t0), float(t0 if t1 is None else t1))
        self._invalidate()

    @property
    def focus_track(self) -> int | None:
        """The track the keys act on: its label is drawn reversed after :data:`FOCUS_MARK`
        while the strip has focus (never when it has not)."""
        return self._focus_track

    @focus_track.setter
    def focus_track(self, track: int | None) -> None:
        if track != self._focus_track:
            self._focus_track = track
            self._invalidate()
        if track is not None:
            self.scroll_to_track(track)

    def scroll_to_track(self, track: int) -> None:
        """Scroll (vertically, as little as needed) so ``track`` is on screen below the ruler."""
        rows = self.scrollable_content_region.height - 1  # the ruler takes the first row
        if rows <= 0 or not 0 <= track < len(self._tracks):
            return
        y = self.scroll_offset.y
        if track < y:
            self.scroll_to(y=track, animate=False)
        elif track >= y + rows:
            self.scroll_to(y=track - rows + 1, animate=False)

    def on_focus(self) -> None:
        self._invalidate()  # the focus track's marker appears
        if self._focus_track is not None:
            self.scroll_to_track(self._focus_track)

    def on_blur(self) -> None:
        self._invalidate()

    # --------------------------------------------------------------- window
    @property
    def window(self) -> tuple[float, float]:
        """The visible time range (t0, t1), microseconds."""
        return self._window

    def set_window(self, t0: float, t1: float) -> None:
        """Show ``[t0, t1]`` (microseconds).  The span is clamped to
        [MIN_SPAN_US, 2 x extent] and the window's centre to the data extent."""
        if t1 < t0:
            t0, t1 = t1, t0
        e0, e1 = self._extent
        span = min(max(t1 - t0, MIN_SPAN_US), max(2.0 * (e1 - e0), MIN_SPAN_US))
        center = (t0 + t1) / 2.0
        center = min(max(center, e0), e1)
        t0 = center - span / 2.0
        window = (t0, t0 + span)
        if window != self._window:
            self._window = window
            self._invalidate()
            self.post_message(self.WindowChanged(self, *window))

    def zoom(self, factor: float, center: float | None = None) -> None:
        """Zoom in by ``factor`` (2 halves the span; 0.5 doubles it) keeping ``center``
        (default: the middle of the window) at the same place on screen."""
        t0, t1 = self._window
        span = t1 - t0
        if center is None:
            center = (t0 + t1) / 2.0
        new_span = span / factor
        left = (center - t0) / span if span > 0 else 0.5
        start = center - left * new_span
        self.set_window(start, start + new_span)

    def pan(self, fraction: float) -> None:
        """Move the window by ``fraction`` of its span (positive: later)."""
        t0, t1 = self._window
        shift = (t1 - t0) * fraction
        self.set_window(t0 + shift, t1 + shift)

    def zoom_to(self, t0: float, t1: float, margin: float = 0.1) -> None:
        """Show ``[t0, t1]`` with ``margin`` x its span of room on each side."""
        span = max(t1 - t0, MIN_SPAN_US)
        self.set_window(t0 - margin * span, t1 + margin * span)

    def follow(self, t0: float, t1: float) -> None:
        """Pan (or zoom out, if it does not fit) as little as needed to show ``[t0, t1]``."""
        w0, w1 = self._window
        span = w1 - w0
        if t0 >= w0 and t1 <= w1:
            return
        pad = 0.05 * span
        if t1 - t0 > span - 2 * pad:
            self.zoom_to(t0, t1)
        elif t0 < w0:
            self.set_window(t0 - pad, t0 - pad + span)
        else:
            self.set_window(t1 + pad - span, t1 + pad)

    def fit_all(self) -> None:
        """Show every interval of every track."""
        self.set_window(*self._extent)

    # ------------------------------------------------------------ rendering
    def _invalidate(self) -> None:
        self._strip_cache.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        self._strip_cache.clear()
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        key = (width, self._window, self.scroll_offset.y, self.has_focus, self._focus_track)
        if key != self._strip_cache_key:
            self._strip_cache.clear()
            self._strip_cache_key = key
        if y in self._strip_cache:
            return self._strip_cache[y]
        if y == 0:
            strip = self._render_ruler(width)
        else:
            track = self.scroll_offset.y + y - 1
            if 0 <= track < len(self._tracks):
                strip = self._render_track(track, width)
            else:
                strip = Strip.blank(width, self.rich_style)
        self._strip_cache[y] = strip
        return strip

    def _label(self, text: str, width: int, style: Style) -> Segment:
        label = keep_cut_mark(name_text(text), max(0, width - 1))  # trace data (thread, process names)
        label.truncate(max(0, width - 1), overflow="ellipsis", pad=True)
        return Segment(label.plain + " " if width else "", style)

    def _cells(self, width: int) -> tuple[int, float, float, float]:
        """(number of time cells, rel t0, rel t1, microseconds per cell)."""
        cells = max(0, width - min(self.label_width, width))
        t0, t1 = self._window
        t0 -= self._origin
        t1 -= self._origin
        return cells, t0, t1, (t1 - t0) / cells if cells else 0.0

    def track_cells(self, track: int, width: int) -> tuple[str, np.ndarray]:
        """The time cells of ``track`` at ``width`` cells of widget width: (glyphs, class
        per cell: 0 busy, 1 gap fill, 2 gap label, 3 highlight, 8 mark, +4 inside cursor range)."""
        cells, t0, t1, dt = self._cells(width)
        if cells == 0:
            return "", np.zeros(0, dtype=np.int8)
        runs = self._runs[track]
        edges = t0 + dt * np.arange(cells + 1)
        busy = np.diff(runs.covered(edges)) / dt
        level = np.where(busy > 1e-9, np.clip(np.rint(busy * 8), 1, 8), 0).astype(np.int8)
        row = self._tracks[track]
        own = row.cell_levels(edges + self._origin)  # a counter track: its values' levels
        if own is not None:
            level = own
        glyphs = np.array(list(BLOCKS))[level]
        text = row.cell_text(edges + self._origin)  # a phase track: the phases' names
        if text is not None:
            glyphs = np.where(text != "", text, glyphs)
        kind = np.zeros(cells, dtype=np.int8)
        gap_starts, gap_ends = runs.long_gaps(t0, t1, max(2.0 * dt, self._min_gap_us))
        if not row.marks_gaps:  # a phase track: its names, not its gaps
            gap_starts = gap_ends = np.empty(0)
        for g0, g1 in zip(gap_starts.tolist(), gap_ends.tolist()):
            first = max(0, int(np.ceil((g0 - t0) / dt - 1e-9)))
            stop = min(cells, int(np.floor((g1 - t0) / dt + 1e-9)))
            if stop <= first:
                continue
            glyphs[first:stop] = GAP_FILL
            kind[first:stop] = _GAP
            text = format_duration_us(g1 - g0)
            if stop - first >= len(text) + 2:
                at = first + (stop - first - len(text)) // 2
                glyphs[at : at + len(text)] = list(text)
                kind[at : at + len(text)] = _GAP_LABEL
        if track in self._marks:
            mask = runs_mask(*self._marks[track], edges)
            glyphs[mask & (level == 0) & (kind != _GAP_LABEL)] = MARK_IDLE
            kind[mask] = _MARK
        if track in self._highlights:
            mask = runs_mask(*self._highlights[track], edges)
            kind[mask] = _HIGHLIGHT
            glyphs[mask & (level == 0)] = BLOCKS[1]
        if self._cursor_range is not None:
            kind[self._cursor_mask(t0, dt, cells)] += _CURSOR
        return "".join(glyphs.tolist()), kind

    def _cursor_mask(self, t0: float, dt: float, cells: int) -> np.ndarray:
        """Cells overlapping the cursor range (``t0``: window start relative to origin)."""
        assert self._cursor_range is not None
        c0, c1 = self._cursor_range
        edges = t0 + dt * np.arange(cells + 1)
        return runs_mask(np.array([c0 - self._origin]), np.array([max(c0, c1) - self._origin]), edges)

    def _render_track(self, track: int, width: int) -> Strip:
        base = self.rich_style
        label_style = base + self.get_component_rich_style("timeline--label")
        label = self._tracks[track].label
        if track == self._focus_track and self.has_focus:
            label = FOCUS_MARK + label
            label_style += self.get_component_rich_style("timeline--focus-label")
        segments = [self._label(label, min(self.label_width, width), label_style)]
        glyphs, kind = self.track_cells(track, width)
        styles = self._cell_styles()
        if glyphs:
            cuts = np.flatnonzero(np.diff(kind)) + 1
            bounds = [0, *cuts.tolist(), len(glyphs)]
            for a, b in zip(bounds, bounds[1:]):
                segments.append(Segment(glyphs[a:b], styles[int(kind[a])]))
        return Strip(segments, width).crop_extend(0, width, base)

    def _cell_styles(self) -> list[Style]:
        base = self.rich_style
        cursor = self.get_component_rich_style("timeline--cursor")
        plain = [
            base + self.get_component_rich_style("timeline--busy"),
            base + self.get_component_rich_style("timeline--gap"),
            base + self.get_component_rich_style("timeline--gap-label"),
            base + self.get_component_rich_style("timeline--highlight"),
        ]
        mark = base + self.get_component_rich_style("timeline--mark")
        # indexed by cell class: 0-3 plain, +4 under the cursor range, 8 a mark (12 under the cursor)
        return plain + [style + cursor for style in plain] + [mark] * 4 + [mark + cursor]

    def ruler_text(self, width: int) -> str:
        """The ruler row as plain text: window span in the label column, then tick marks
        (``╵``) each followed by its time relative to ``origin`` when it fits."""
        label_width = min(self.label_width, width)
        t0w, t1w = self._window
        span_text = f"span {format_duration_us(t1w - t0w)}"
        head = Text(span_text)
        head.truncate(max(0, label_width - 1), overflow="ellipsis", pad=True)
        cells, t0, t1, dt = self._cells(width)
        row = [" "] * cells
        ticks = nice_ticks(t0, t1, max(1, cells // 12)) if cells else []
        if ticks:
            step = ticks[1] - ticks[0] if len(ticks) > 1 else (t1 - t0)
            unit = choose_unit(max(abs(ticks[0]), abs(ticks[-1]), step))
            free_from = 0
            for tick in ticks:
                col = min(cells - 1, int((tick - t0) / dt))
                if col < free_from:
                    continue
                row[col] = "╵"
                text = format_time_us(tick, resolution_us=step, unit=unit)
                if col + 1 + len(text) <= cells:
                    row[col + 1 : col + 1 + len(text)] = list(text)
                    free_from = col + 2 + len(text)
                else:
                    free_from = col + 1
        return (head.plain + " " if label_width else "") + "".join(row)

    def _render_ruler(self, width: int) -> Strip:
        style = self.rich_style + self.get_component_rich_style("timeline--ruler")
        segments = [Segment(self.ruler_text(width), style)]
        if self._cursor_range is not None:
            cells, t0, _t1, dt = self._cells(width)
            if cells:
                mask = self._cursor_mask(t0, dt, cells)
                text = segments[0].text
                offset = len(text) - cells
                tinted = style + self.get_component_rich_style("timeline--cursor")
                segments = [Segment(text[:offset], style)]
                cuts = np.flatnonzero(np.diff(mask.astype(np.int8))) + 1
                bounds = [0, *cuts.tolist(), cells]
                for a, b in zip(bounds, bounds[1:]):
                    segments.append(Segment(text[offset + a : offset + b], tinted if mask[a] else style))
        return Strip(segments).crop_extend(0, width, style)
