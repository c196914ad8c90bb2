"""The answer: a critical path as data for the command line, the JSON document and the
browser's path screen (segments in time order with their events, the on-path events, the
breakdown by kind, next/previous segment, slack).

Times are µs relative to ``origin_us`` (a trace's own origin; for a job, the earliest
origin of its ranks).  A segment's ``rank`` is -1 for a trace without a rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .graph import KIND_NAMES, Family, Graph, SegKind
from .window import Window


@dataclass
class Segments:
    """Columns, one row per stretch of the path, in time order (consecutive edges of one
    kind attributed to one event are merged)."""

    kind: np.ndarray  #: uint8 :class:`~tracetui.critical.graph.SegKind`
    name: list[str]  #: what the time is attributed to (an event's name, or what "other" time was)
    event: np.ndarray  #: int64 event id on its rank's trace (-1: none)
    start_us: np.ndarray  #: float64
    dur_us: np.ndarray  #: float64
    rank: np.ndarray  #: int64 (-1: the trace has no rank)
    from_event: np.ndarray  #: int64 the event the stretch begins at (what was waited on), -1
    to_event: np.ndarray  #: int64 the event it leads to, -1
    inferred: np.ndarray  #: bool: it rests on an inferred edge
    where: list[str]  #: the thread or stream it runs on
    carried: np.ndarray  #: bool: work launched before the window (the previous step's queue)

    def __len__(self) -> int:
        return int(self.kind.shape[0])

    def row(self, i: int) -> dict[str, Any]:
        """Segment ``i`` as the JSON document writes it."""
        return {"kind": KIND_NAMES[int(self.kind[i])], "name": self.name[i], "start_us": float(self.start_us[i]),
                "dur_us": float(self.dur_us[i]), "rank": None if self.rank[i] < 0 else int(self.rank[i]),
                "event": int(self.event[i]), "from_event": int(self.from_event[i]),
                "to_event": int(self.to_event[i]), "inferred": bool(self.inferred[i]), "where": self.where[i],
                "carried": bool(self.carried[i])}

    @staticmethod
    def concat(parts: list[Segments]) -> Segments:
        parts = [p for p in parts if len(p)]
        if not parts:
            return _empty_segments()
        cat = np.concatenate
        return Segments(cat([p.kind for p in parts]), [x for p in parts for x in p.name], cat([p.event for p in parts]),
                        cat([p.start_us for p in parts]), cat([p.dur_us for p in parts]),
                        cat([p.rank for p in parts]), cat([p.from_event for p in parts]),
                        cat([p.to_event for p in parts]), cat([p.inferred for p in parts]),
                        [x for p in parts for x in p.where], cat([p.carried for p in parts]))


def _empty_segments() -> Segments:
    z = np.zeros(0, np.int64)
    return Segments(np.zeros(0, np.uint8), [], z, np.zeros(0), np.zeros(0), z, z, z, np.zeros(0, bool), [],
                    np.zeros(0, bool))


@dataclass
class Slack:
    """Per op (cpu_op, annotation, runtime call ...) and per GPU event of the window:
    how much longer it could take without making the path longer (µs; 0 on the path)."""

    event: np.ndarray  #: int64
    name: list[str]
    what: list[str]  #: "cpu_op", "kernel", "memcpy", ... (the event's kind)
    start_us: np.ndarray
    dur_us: np.ndarray
    slack_us: np.ndarray
    rank: np.ndarray  #: int64 per row (-1: the trace has no rank)

    def rows(self) -> list[dict[str, Any]]:
        return [{"event": int(e), "name": n, "what": w, "start_us": float(s), "dur_us": float(d),
                 "slack_us": float(x), "rank": None if r < 0 else int(r)}
                for e, n, w, s, d, x, r in zip(self.event.tolist(), self.name, self.what, self.start_us.tolist(),
                                               self.dur_us.tolist(), self.slack_us.tolist(), self.rank.tolist())]

    @staticmethod
    def from_rows(rows: list[dict[str, Any]], start_key: str = "start_us", offset: float = 0.0) -> Slack:
        """From :meth:`rows` (``start_key``: which field holds the start; ``offset`` is subtracted)."""
        return Slack(np.array([r["event"] for r in rows], dtype=np.int64), [r["name"] for r in rows],
                     [r["what"] for r in rows], np.array([r[start_key] - offset for r in rows], dtype=np.float64),
                     np.array([r["dur_us"] for r in rows], dtype=np.float64),
                     np.array([r["slack_us"] for r in rows], dtype=np.float64),
                     np.array([-1 if r["rank"] is None else r["rank"] for r in rows], dtype=np.int64))


@dataclass
class CriticalPath:
    """The critical path of one window (see the module docstring).

    ``total_us`` is the path's length: from the window start to the end of its last
    event; ``by_kind_us`` (keys :data:`~tracetui.critical.graph.KIND_NAMES`) sums to it.
    With ``method`` ``"hta"`` (:mod:`tracetui.critical.hta_method`) it is the weight of
    HTA's heaviest path instead, which runs over ``span_us`` (µs from the trace origin, its
    first and last node) and counts only the time HTA weighs."""

    window: Window
    origin_us: float
    total_us: float
    segments: Segments
    slack: Slack | None
    path_events: dict[int, np.ndarray]  #: rank (-1: no rank) -> event ids on the path (sorted)
    stats: dict = field(default_factory=dict)
    crossings: list[dict[str, Any]] = field(default_factory=list)
    what_if: dict[str, Any] | None = None
    trace_path: str = ""
    #: µs from the window start until the path leaves work launched before the window (the
    #: previous step's GPU queue still running): part of ``total_us``
    carried_in_us: float = 0.0
    #: "elapsed" (tracetui's answer) or "hta" (HTA's definition, for comparison)
    method: str = "elapsed"
    #: with method "hta": (first node, last node) of the path, µs from the trace origin
    span_us: tuple[float, float] | None = None

    @property
    def by_kind_us(self) -> dict[str, float]:
        out = dict.fromkeys(KIND_NAMES, 0.0)
        sums = np.bincount(self.segments.kind.astype(np.int64), weights=self.segments.dur_us,
                           minlength=len(KIND_NAMES))
        for k, v in zip(KIND_NAMES, sums.tolist()):
            out[k] = float(v)
        return out

    @property
    def start_us(self) -> float:
        return self.window.start_us

    @property
    def end_us(self) -> float:
        """Where the path ends (µs from the origin)."""
        if self.span_us is not None:
            return self.span_us[1]
        return self.window.start_us + self.total_us

    # ---------------------------------------------------------------- navigation
    def on_path_mask(self, n_events: int, rank: int | None = None) -> np.ndarray:
        """bool per event of ``rank``'s trace: on the path (a node of it, or time attributed to
        it).  ``rank`` None: the one rank of a single trace's path."""
        out = np.zeros(n_events, dtype=bool)
        if rank is None:
            rank = next(iter(self.path_events), -1) if len(self.path_events) == 1 else -1
        ev = self.path_events.get(rank, np.zeros(0, np.int64))
        out[ev[ev < n_events]] = True
        return out

    def segment_at(self, t_us: float) -> int:
        """The segment running at time ``t_us`` (the last one starting at or before it), -1 before the path."""
        return int(np.searchsorted(self.segments.start_us, t_us, side="right")) - 1

    def next_segment(self, i: int, step: int = 1) -> int:
        """Index ``step`` segments on from ``i`` (negative: back), clamped to the path."""
        if not len(self.segments):
            return -1
        return int(min(max(i + step, 0), len(self.segments) - 1))

    def segments_of_event(self, event: int, rank: int | None = None) -> np.ndarray:
        """Indices of the segments attributed to ``event`` (of ``rank``; None: any rank, for a
        single trace), in time order."""
        s = self.segments
        hit = s.event == event
        return np.flatnonzero(hit if rank is None else hit & (s.rank == rank))

    def slack_of_event(self, event: int, rank: int | None = None) -> float | None:
        """The slack (µs) of ``event`` (of ``rank``; None: any rank); None when it is not an
        op or GPU event of the window (carried-in work has none)."""
        t = self.slack
        if t is None:
            return None
        hit = t.event == event
        if rank is not None:
            hit &= t.rank == rank
        idx = np.flatnonzero(hit)
        return float(t.slack_us[idx[0]]) if idx.size else None

    def breakdown(self) -> list[tuple[str, float, float]]:
        """(kind, µs, share of the path) for every kind with time, largest first."""
        tot = self.total_us or 1.0
        rows = [(k, v, v / tot) for k, v in self.by_kind_us.items() if v > 0]
        return sorted(rows, key=lambda r: -r[1])

    def to_json(self) -> dict[str, Any]:
        s = self.segments
        doc: dict[str, Any] = {
            "trace": self.trace_path, "window": self.window.to_json(), "origin_us": self.origin_us,
            "method": self.method, "total_us": self.total_us, "carried_in_us": self.carried_in_us,
            "by_kind_us": self.by_kind_us,
            "segments": [s.row(i) for i in range(len(s))],
            "slack": self.slack.rows() if self.slack is not None else [],
            "crossings": self.crossings, "graph": self.stats,
        }
        if self.span_us is not None:
            doc["span_us"] = list(self.span_us)
        if self.what_if is not None:
            doc["what_if"] = self.what_if
        return doc


#: what each kind of time on the path is (the keys of ``by_kind_us``; docs/critical_path.md)
KIND_MEANINGS = {
    "host": "a thread inside a traced event (the innermost one open)",
    "gpu": "a kernel, memcpy or memset running",
    "launch_delay": "from a launch call's start to its GPU work's start, the stream free",
    "gpu_gap": "a stream idle between two of its events, the later one's launch long done",
    "stream_wait": "GPU work waiting for work on another stream",
    "sync_wait": "a host thread inside a blocking sync call (waiting for the GPU)",
    "other": "a thread outside any traced event (untraced code, idle), a hand-off between threads",
}


def row_event(s: Segments, i: int) -> int:
    """The event that stands for segment ``i`` in a tree: the one its time is attributed to,
    else (untraced time) the event it leads to, else the one it starts at; -1 none."""
    for e in (int(s.event[i]), int(s.to_event[i]), int(s.from_event[i])):
        if e >= 0:
            return e
    return -1


# ---------------------------------------------------------------------- from a graph
_OTHER_NAMES = {
    int(Family.SOURCE): "before the first event of {where} in the window",
    int(Family.HOST_ORDER): "untraced time on {where}",
    int(Family.FORK): "hand-off to {where}",
    int(Family.JOIN): "hand-off back to {where}",
    int(Family.FWDBWD): "backward after its forward op on {where}",
}


def _where(g: Graph, node: int) -> str:
    ev = g.event_of_node(node)
    if ev < 0:
        return "window start"
    li = int(g.trace.lane_of[ev])
    return g.trace.lanes[li].label if li >= 0 else "?"


def segments_of(g: Graph, edges: np.ndarray, rank: int = -1, weight: np.ndarray | None = None) -> Segments:
    """The path's edges as merged segments (zero-length ones dropped).  ``weight`` (per edge of
    ``g``): what each edge counts instead of its elapsed time (HTA's definition,
    :mod:`tracetui.critical.hta_method`); a segment then lasts the sum of its weights."""
    if not edges.size:
        return _empty_segments()
    t = g.node_t
    kind, attr = g.kind[edges].astype(np.int64), g.attr[edges]
    src, dst = g.src[edges], g.dst[edges]
    start, end = t[src], t[dst]
    fam = g.family[edges]
    # consecutive edges of one kind and event (and, for other time, one family) merge
    key_change = np.ones(edges.size, dtype=bool)
    key_change[1:] = ((kind[1:] != kind[:-1]) | (attr[1:] != attr[:-1])
                      | ((attr[1:] < 0) & (fam[1:] != fam[:-1])))
    grp = np.cumsum(key_change) - 1
    first = np.flatnonzero(key_change)
    last = np.concatenate((first[1:] - 1, [edges.size - 1]))
    dur = np.bincount(grp, weights=end - start if weight is None else weight[edges])
    keep = dur > 0
    first, last, dur = first[keep], last[keep], dur[keep]
    inferred = np.logical_or.reduceat(g.inferred[edges], np.flatnonzero(key_change))[keep]
    names, where = [], []
    trace = g.trace
    for f, lst in zip(first.tolist(), last.tolist()):
        w = _where(g, int(dst[lst]))
        a = int(attr[f])
        where.append(w)
        names.append(trace.name(a) if a >= 0 else _OTHER_NAMES.get(int(fam[f]), "other on {where}").format(where=w))
    ev_of = np.vectorize(g.event_of_node, otypes=[np.int64])
    n = first.size
    return Segments(kind[first].astype(np.uint8), names, attr[first].astype(np.int64), start[first].astype(np.float64),
                    dur.astype(np.float64), np.full(n, rank, dtype=np.int64), ev_of(src[first]) if n else attr[:0],
                    ev_of(dst[last]) if n else attr[:0], inferred.astype(bool), where,
                    g.sel.carried[dst[last] % max(g.m, 1)] & (dst[last] != g.source))


def carried_in_time(g: Graph, edges: np.ndarray) -> float:
    """µs from the window start to the last node of carried-in work on the path (0: none)."""
    if not edges.size or not g.sel.carried.any():
        return 0.0
    dst = g.dst[edges]
    car = g.sel.carried[dst % max(g.m, 1)] & (dst != g.source)
    hit = np.flatnonzero(car)
    return float(g.node_t[dst[hit[-1]]] - g.node_t[g.source]) if hit.size else 0.0


def path_event_ids(g: Graph, edges: np.ndarray) -> np.ndarray:
    """Events on the path: those of its nodes and those its time is attributed to."""
    nodes = np.concatenate((g.src[edges], g.dst[edges]))
    nodes = nodes[nodes != g.source]
    ev = g.sel.events[nodes % max(g.m, 1)] if nodes.size else nodes
    ev = np.concatenate((ev, g.attr[edges][g.attr[edges] >= 0]))
    return np.unique(ev.astype(np.int64))


def slack_of(g: Graph, slack: np.ndarray, rank: int = -1) -> Slack:
    """The :class:`Slack` table of a window (carried-in GPU work left out)."""
    from ..kineto.kinds import Kind

    keep = np.flatnonzero(~g.sel.carried)
    ev = g.sel.events[keep]
    trace = g.trace
    order = np.lexsort((ev, trace.ts[ev]))
    keep, ev = keep[order], ev[order]
    kinds = [Kind(int(k)).name.lower() for k in trace.kind[ev].tolist()]
    return Slack(ev.astype(np.int64), [trace.name(int(e)) for e in ev.tolist()], kinds,
                 trace.ts[ev].astype(np.float64), trace.dur[ev].astype(np.float64), slack[keep],
                 np.full(ev.size, rank, dtype=np.int64))


def kind_name(kind: int) -> str:
    return KIND_NAMES[int(kind)]


__all__ = [
    "KIND_MEANINGS", "CriticalPath", "SegKind", "Segments", "Slack", "carried_in_time", "kind_name",
    "path_event_ids", "row_event", "segments_of", "slack_of",
]
