"""The diff browser's timeline: both runs' streams over the aligned step, free of Textual.

Each side's template step (the one the merged tree's events belong to) is drawn from its
own start: time 0 is each side's step start, so A's and B's tracks line up and a step that
got longer shows as a later end.  The events are the GPU events launched in that step (the
rule of the step's numbers, :mod:`tracetui.analysis.steps`), one track per stream, labelled
``A GPU0 s7`` / ``B GPU0 s7``; A's and B's streams alternate (the k-th of each side
together).  A side without GPU work shows
its ops' threads instead (``A T 19392``).  The selected row's GPU events (those under the op
on each side) are the highlights.  Times are microseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...diff.compare import SideData, TraceDiff
from ...diff.model import DiffTree
from ...kineto.kinds import Kind
from .track import Track, short_lane_label


@dataclass
class DiffTracks:
    """The tracks, and per track its side ("a"/"b") and its events (sorted by start)."""

    tracks: list[Track] = field(default_factory=list)
    sides: list[str] = field(default_factory=list)
    events: list[np.ndarray] = field(default_factory=list)
    #: each side's time zero: its template step's start (trace clock, µs)
    zero: dict[str, float] = field(default_factory=dict)
    #: each side's template step's length (µs)
    length: dict[str, float] = field(default_factory=dict)

    def highlights(self, tree: DiffTree, row: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(track, start, end) of the GPU events under ``row`` on each side that the tracks
        show (start and end relative to the side's step start); none for the step row."""
        tr: list[np.ndarray] = []
        st: list[np.ndarray] = []
        en: list[np.ndarray] = []
        for which in ("a", "b"):
            ev = tree.event(row, which)
            has = bool(tree.in_a[row] if which == "a" else tree.in_b[row])
            if ev < 0 or not has or row == 0:
                continue
            kt = tree.side(which).linked.kineto
            under = kt.gpu_events_of(ev)
            for k, (side, events) in enumerate(zip(self.sides, self.events)):
                if side != which:
                    continue
                sel = events[np.isin(events, under)]
                if sel.size:
                    tr.append(np.full(sel.size, k, dtype=np.int64))
                    st.append(kt.ts[sel] - self.zero[which])
                    en.append(kt.ts[sel] + kt.dur[sel] - self.zero[which])
        if not tr:
            return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
        return np.concatenate(tr), np.concatenate(st), np.concatenate(en)


def _side_tracks(out: DiffTracks, which: str, sd: SideData) -> None:
    side = sd.side
    kt = side.linked.kineto
    step = side.template_step
    pos = side.used.index(side.template)
    events = sd.gpu_events[sd.gpu_step == pos]
    if not events.size:  # no GPU work: the ops' threads
        host = sd.host_events[sd.host_step == pos]
        events = host[np.isin(kt.kind[host], (int(Kind.CPU_OP), int(Kind.ANNOTATION), int(Kind.TRACED_CALL)))]
    out.zero[which] = float(step.ts)
    out.length[which] = float(step.end - step.ts)
    if not events.size:
        return
    lane_of = kt.lane_of[events]
    events = events[lane_of >= 0]
    lane_of = lane_of[lane_of >= 0]
    order = np.lexsort((kt.ts[events], lane_of))
    events, lane_of = events[order], lane_of[order]
    cuts = np.flatnonzero(np.diff(lane_of)) + 1
    for chunk in np.split(events, cuts):
        lane = kt.lanes[int(kt.lane_of[chunk[0]])]
        ts = kt.ts[chunk] - step.ts
        out.tracks.append(Track(f"{which.upper()} {short_lane_label(lane)}", ts, ts + kt.dur[chunk]))
        out.sides.append(which)
        out.events.append(chunk)


def diff_tracks(d: TraceDiff) -> DiffTracks:
    """A's and B's tracks over each side's template step, interleaved: A's first stream, B's
    first stream, A's second ... (module docstring)."""
    a, b = DiffTracks(), DiffTracks()
    _side_tracks(a, "a", d.a)
    _side_tracks(b, "b", d.b)
    out = DiffTracks(zero={**a.zero, **b.zero}, length={**a.length, **b.length})
    for k in range(max(len(a.tracks), len(b.tracks))):
        for side in (a, b):
            if k < len(side.tracks):
                out.tracks.append(side.tracks[k])
                out.sides.append(side.sides[k])
                out.events.append(side.events[k])
    return out
