"""The clock of a CUDA memory snapshot beside a Kineto trace of the same run: where a snapshot
time falls on the trace's timeline.

A snapshot's ``time_us`` is the allocator's clock (µs since the epoch); a Kineto trace's
``ts`` is its profiler's (often relative to ``baseTimeNanoseconds``).  Neither file says how
they relate, so the offset is *measured*: the profiler writes its ranges (``ProfilerStep#N``,
``forward``, ``record_function`` names) into both, as the snapshot's ``external_annotations``
(START/END marks) and as the trace's ``user_annotation`` spans.  Every pair of a START (END)
and a span start (end) of the same name gives a candidate offset; the densest
:data:`WINDOW_US` of candidates wins, the offset is their median, and the link says how many
pairs agree and how far the farthest is (``spread_us``).  Without two agreeing pairs there is
no link (``None``): nothing is assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kineto.kinds import Kind
from ..kineto.trace import KinetoTrace
from ..memsnap.model import MemorySnapshot

#: candidates within this many µs of each other count as one offset
WINDOW_US = 1000.0
#: occurrences of one name taken from each side (the first ones)
MAX_PER_NAME = 64
#: pairs needed to trust an offset
MIN_PAIRS = 2


@dataclass(frozen=True)
class ClockLink:
    """``trace ts`` (µs from the trace's origin) = snapshot ``time_us`` - ``offset_us`` -
    ``trace_origin_us``: ``offset_us`` is how far the snapshot's clock is ahead of the trace's."""

    offset_us: float
    pairs: int  #: (name, start or end) pairs that agree
    names: int  #: distinct annotation names among them
    spread_us: float  #: the farthest agreeing pair from the offset
    candidates: int  #: pairs looked at
    base_us: float | None  #: the trace's ``baseTimeNanoseconds`` / 1000, when it has one
    trace_origin_us: int = 0  #: the trace's ``origin_us``

    def to_trace(self, snapshot_us: np.ndarray | float) -> np.ndarray | float:
        """Snapshot ``time_us`` -> µs from the trace's origin."""
        return snapshot_us - self.offset_us - self.trace_origin_us

    @property
    def clock_difference_us(self) -> float | None:
        """How far the measured offset is from the trace's own epoch (``baseTimeNanoseconds``)."""
        return None if self.base_us is None else self.offset_us - self.base_us


def _marks(snap: MemorySnapshot) -> dict[tuple[str, bool], np.ndarray]:
    a = snap.annotations
    out: dict[tuple[str, bool], list[int]] = {}
    for i in np.argsort(a.time_us, kind="stable").tolist():
        out.setdefault((a.names[a.name[i]], bool(a.start[i])), []).append(int(a.time_us[i]))
    return {k: np.asarray(v[:MAX_PER_NAME], dtype=np.float64) for k, v in out.items()}


def _spans(kt: KinetoTrace) -> dict[tuple[str, bool], np.ndarray]:
    ann = np.flatnonzero((kt.kind == int(Kind.ANNOTATION)) & (kt.lane_of >= 0))
    ann = ann[np.argsort(kt.ts[ann], kind="stable")]
    out: dict[tuple[str, bool], list[float]] = {}
    for e in ann.tolist():
        name = kt.names[kt.name_id[e]]
        out.setdefault((name, True), []).append(float(kt.ts[e]))
        out.setdefault((name, False), []).append(float(kt.ts[e] + kt.dur[e]))
    return {k: np.asarray(v[:MAX_PER_NAME], dtype=np.float64) for k, v in out.items()}


def link_clocks(kt: KinetoTrace, snap: MemorySnapshot) -> ClockLink | None:
    """The measured :class:`ClockLink` (module docstring); None when the files share fewer
    than :data:`MIN_PAIRS` agreeing annotation marks."""
    marks, spans = _marks(snap), _spans(kt)
    diffs, keys = [], []
    for key, snap_t in marks.items():
        trace_t = spans.get(key)
        if trace_t is None:
            continue
        d = (snap_t[:, None] - (kt.origin_us + trace_t[None, :])).ravel()
        diffs.append(d)
        keys += [key[0]] * d.size
    if not diffs:
        return None
    d = np.concatenate(diffs)
    order = np.argsort(d, kind="stable")
    ds = d[order]
    hi = np.searchsorted(ds, ds + WINDOW_US, side="right")
    best = int(np.argmax(hi - np.arange(ds.size)))
    inside = order[best:hi[best]]
    if inside.size < MIN_PAIRS:
        return None
    offset = float(np.median(d[inside]))
    base = kt.metadata.get("baseTimeNanoseconds") if isinstance(kt.metadata, dict) else None
    base_us = float(base) / 1000.0 if isinstance(base, (int, float)) and not isinstance(base, bool) else None
    return ClockLink(offset, int(inside.size), len({keys[i] for i in inside.tolist()}),
                     float(np.abs(d[inside] - offset).max()), int(d.size), base_us, int(kt.origin_us))
