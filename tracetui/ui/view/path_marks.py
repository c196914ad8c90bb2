"""A computed critical path on the browser's main screen (``P``): which rows of one rank's
trace are on it, how much of the path lies under each row, where it runs in the timeline,
an event's slack for the detail pane, and the walk along it with ``n``/``N``.

:class:`PathState` is the path the app keeps while the user browses (it outlives a rank
switch in a job); :class:`PathMarks` is that path seen from the trace on screen.  Times of a
path are µs relative to ``cp.origin_us`` (a job: the earliest origin of its ranks); a trace's
own clock is ``kt.ts`` (µs relative to ``kt.origin_us``), so a segment starts at
``start_us + cp.origin_us - kt.origin_us`` on it.  No Textual here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Hashable

import numpy as np
from rich.text import Text

from ... import units
from ...critical import KIND_NAMES, CriticalPath
from ...critical.model import row_event
from ...critical.numbers import duration, share
from ...names import shown
from ...tree.propagate import sum_up
from .detail_section import DetailSection
from .keep_text import KeepText

#: how each kind of path time is drawn (labels in the path screen, the detail pane)
KIND_STYLES = {"host": "cyan", "gpu": "green", "launch_delay": "yellow", "gpu_gap": "grey62",
               "stream_wait": "magenta", "sync_wait": "red", "other": "grey50"}
#: the kinds in a narrow column
KIND_SHORT = {"host": "host", "gpu": "gpu", "launch_delay": "launch", "gpu_gap": "gpu gap",
              "stream_wait": "stream", "sync_wait": "sync", "other": "other"}
#: before the time in the tree's Path column: the row itself is on the path
ON_PATH = "●"
PATH_HEADER = "Path"
PATH_WIDTH = 7


@dataclass
class PathState:
    """The path the browser shows: ``cp`` (one trace's, or a job's across ranks: ``job``),
    and ``index``, the segment ``n``/``N`` walked to last (-1: none yet)."""

    cp: CriticalPath
    job: bool = False
    index: int = -1

    @property
    def title(self) -> str:
        w = self.cp.window
        return f"{shown(w.name)} ({w.kind})"

    def rank_key(self, rank: int | None) -> int:
        """The rank a segment of the trace on screen carries: the job's rank shown, else the
        one rank of a single trace's path (-1 when the trace has none)."""
        if self.job and rank is not None:
            return rank
        return next(iter(self.cp.path_events), -1)

    def step(self, direction: int, here: tuple[int, int, float], row: Callable[[int, int], Hashable]) -> int | None:
        """The segment one step ``direction`` (+1 later, -1 earlier) along the path from
        ``here`` = (rank, event, time µs on the path's clock) of the tree cursor: from the
        segment walked to last while the cursor is still on its row, else from the cursor's
        time.  Segments whose row (``row(rank, event)``: how the tree shows an event) is the
        cursor's, and untraced time with no event, are passed over, so each step moves.
        None at the path's end."""
        s = self.cp.segments
        n = len(s)
        if not n:
            return None
        rank, event, t = here
        cur = row(rank, event) if event >= 0 else None
        i = self.index
        if not (0 <= i < n and cur is not None and self._row(i, row) == cur):
            i = self.cp.segment_at(t)
            if direction < 0:
                i += 1
        i += direction
        while 0 <= i < n:
            key = self._row(i, row)
            if key is not None and key != cur:
                self.index = i
                return i
            i += direction
        return None

    def _row(self, i: int, row: Callable[[int, int], Hashable]) -> Hashable | None:
        e = row_event(self.cp.segments, i)
        return None if e < 0 else row(int(self.cp.segments.rank[i]), e)


class PathMarks:
    """:class:`PathState` seen from ``kt``, the trace of ``rank`` on screen (None: a single
    trace): the tree's Path column, the timeline's path ranges, the detail pane's section."""

    def __init__(self, state: PathState, kt: Any, rank: int | None = None) -> None:
        self.state = state
        self.cp = cp = state.cp
        self.kt = kt
        self.rank = state.rank_key(rank)
        self.offset = float(cp.origin_us) - float(kt.origin_us)
        s = cp.segments
        self.mine = np.flatnonzero(s.rank == self.rank)
        n, m = kt.n_events, kt.n_nodes
        self.on_path = np.zeros(m, dtype=bool)
        self.on_path[:n] = cp.on_path_mask(n, self.rank)
        ev, dur = s.event[self.mine], s.dur_us[self.mine]
        ok = (ev >= 0) & (ev < n)
        self.own_us = np.zeros(m, dtype=np.float64)
        np.add.at(self.own_us, ev[ok], dur[ok])
        self.subtree_us = self.own_us.copy()
        sum_up(kt.parent, kt.depth, self.subtree_us)
        # a stream's row holds no GPU event in its subtree (they sit under their launches): its
        # events' own path time, by lane
        on_lane = np.bincount(np.maximum(kt.lane_of[:n], 0), weights=self.own_us[:n] * (kt.lane_of[:n] >= 0),
                              minlength=len(kt.lanes))
        for lane in kt.lanes:
            if lane.is_gpu:
                self.subtree_us[n + lane.index] = on_lane[lane.index]

    # ------------------------------------------------------------------ tree
    def column(self, node: int) -> str:
        """The Path cell of a Kineto node: the path's time under it (itself and its subtree),
        after :data:`ON_PATH` when the row itself is on the path; "" when none."""
        if not 0 <= node < self.on_path.size:
            return ""
        t = float(self.subtree_us[node])
        mark = ON_PATH if self.on_path[node] else ""
        return mark + units.format_duration_us(t) if t > 0 else mark

    # ------------------------------------------------------------------ timeline
    def ranges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lane index, start, end) of every segment on this trace, in its clock (µs): a
        segment lies on the lane of the event it leads to (a GPU gap or launch delay on the
        stream that waited, a sync wait on the waiting thread), else of its own event."""
        s, kt = self.cp.segments, self.kt
        i = self.mine
        ev = np.where(s.to_event[i] >= 0, s.to_event[i], s.event[i])
        ok = (ev >= 0) & (ev < kt.n_events)
        i, ev = i[ok], ev[ok]
        lanes = kt.lane_of[ev].astype(np.int64)
        keep = lanes >= 0
        starts = s.start_us[i][keep] + self.offset
        return lanes[keep], starts, starts + s.dur_us[i][keep]

    # ------------------------------------------------------------------ detail pane
    def sections(self, ev: int) -> list[DetailSection]:
        """The detail pane's "Critical path" section for event ``ev`` of this trace."""
        cp = self.cp
        rows: list[tuple[str, Any]] = [("window", Text(f"{self.state.title}: path {duration(cp.total_us)}"))]
        segs = cp.segments_of_event(ev, self.rank)
        if segs.size:
            t = float(cp.segments.dur_us[segs].sum())
            kinds: dict[str, float] = {}
            for k, d in zip(cp.segments.kind[segs].tolist(), cp.segments.dur_us[segs].tolist()):
                kinds[KIND_NAMES[k]] = kinds.get(KIND_NAMES[k], 0.0) + d
            line = KeepText(f"{units.plural(int(segs.size), 'segment')}, {duration(t)} "
                            f"({share(t / cp.total_us).strip() if cp.total_us else '-'} of the path): ")
            line.append(", ".join(f"{k} {duration(v)}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])))
            rows.append(("on the path", line))
        elif self.on_path[ev]:
            rows.append(("on the path", KeepText("yes: a node of the path (no time attributed to it)")))
        below = float(self.subtree_us[ev] - self.own_us[ev])
        if below > 0:
            rows.append(("below it", KeepText(f"{duration(below)} of the path in its subtree")))
        if segs.size and cp.segments.carried[segs].any():
            rows.append(("carried in", KeepText("queued before the window (the previous step's GPU work)")))
        slack = cp.slack_of_event(ev, self.rank)
        if segs.size or (slack is not None and slack <= 0):
            rows.append(("slack", KeepText("0: on the path, any longer makes the path longer")))
        elif slack is None:
            rows.append(("slack", KeepText("none: not an op or GPU event of this window", style="dim")))
        else:
            rows.append(("slack", KeepText(f"{duration(slack)}: it could take that much longer (or end that much "
                                           f"later) without making the path longer")))
        rows.append(("keys", KeepText("n/N walk the path, P its screen", style="dim")))
        return [DetailSection.of_rows("Critical path", rows)]

    # ------------------------------------------------------------------ status
    def status_forms(self) -> tuple[str, str]:
        """The status line's part: long and short forms."""
        total = units.format_duration_us(self.cp.total_us)
        return f"path {self.state.title}: {total} (n/N walk)", f"path {total}"
