"""Passes over a window's graph: the critical path (the chain of binding edges back from
the last event), the slack of every event (one backward pass), and the what-if of
``--shrink`` (one forward pass with shorter durations).

The passes visit the edges in topological order (the nodes' time order): one Python step
per edge, on plain lists (about 0.2 µs an edge); the path walk takes one step per edge of
the path only.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

import numpy as np

from ..kineto.kinds import GPU_WORK_KINDS
from ..names import head
from ..tree.propagate import fill_down
from .graph import Family, Graph, SegKind


def path_edges(g: Graph, start: int | None = None) -> np.ndarray:
    """The binding edges from the source to node ``start`` (default: the window's last
    event), in time order."""
    out: list[int] = []
    bind, src = g.bind.tolist(), g.src.tolist()
    v, source = (g.sink if start is None else int(start)), g.source
    while v != source:
        e = bind[v]
        if e < 0:  # pragma: no cover - every node but the source has a binding edge
            break
        out.append(e)
        v = src[e]
    out.reverse()
    return np.asarray(out, dtype=np.int64)


def marked_on_chains(g: Graph, marks: np.ndarray, starts: list[int]) -> dict[int, list[int]]:
    """For each node in ``starts``: the nodes of ``marks`` on its binding chain back to the
    source (itself included when marked), in time order.  Each node is walked once for all
    starts (chains share their beginnings)."""
    bind, src = g.bind.tolist(), g.src.tolist()
    marked = set(np.asarray(marks, dtype=np.int64).tolist())
    last: dict[int, int] = {g.source: -1}  # node -> the latest marked node at or before it on its chain
    prev: dict[int, int] = {}  # marked node -> the marked node before it
    out = {}
    for start in starts:
        walk, v = [], int(start)
        while v not in last:
            walk.append(v)
            e = bind[v]
            v = src[e] if e >= 0 else g.source
        found = last[v]
        for node in reversed(walk):
            if node in marked:
                prev[node] = found
                found = node
            last[node] = found
        chain, k = [], last[int(start)]
        while k >= 0:
            chain.append(k)
            k = prev[k]
        out[int(start)] = chain[::-1]
    return out


def latest_times(g: Graph) -> np.ndarray:
    """Per node, the latest time (µs) it could happen without moving the path's end
    (backward pass over the weighted edges; nodes with no successor: the path's end)."""
    end = float(g.node_t[g.sink])
    lat = [end] * g.node_t.size
    order = np.argsort(-g.node_pos[g.src], kind="stable")
    for u, v, w in zip(g.src[order].tolist(), g.dst[order].tolist(), g.weight[order].tolist()):
        x = lat[v] - w
        if x < lat[u]:
            lat[u] = x
    return np.asarray(lat)


def earliest_times(g: Graph, weight: np.ndarray | None = None) -> np.ndarray:
    """Per node, the earliest time (µs) it can happen from the window start with these edge
    weights (forward pass).  With the graph's own weights this gives back every node's
    observed time (the binding edges carry the elapsed times)."""
    w = g.weight if weight is None else weight
    dist = [-np.inf] * g.node_t.size
    dist[g.source] = float(g.node_t[g.source])
    order = np.argsort(g.node_pos[g.dst], kind="stable")
    for u, v, x in zip(g.src[order].tolist(), g.dst[order].tolist(), w[order].tolist()):
        y = dist[u] + x
        if y > dist[v]:
            dist[v] = y
    return np.asarray(dist)


def event_slack(g: Graph, latest: np.ndarray) -> np.ndarray:
    """Per selected event: how much later it could end (so: how much longer it could take)
    without making the path longer (µs, 0 on the path); NaN for carried-in GPU work."""
    m = g.m
    k = np.arange(m)
    end = g.end_node(k)
    slack = latest[end] - g.node_t[end]
    slack = np.where(np.abs(slack) < 1e-6, 0.0, slack)
    return np.where(g.sel.carried, np.nan, slack)


@dataclass(frozen=True)
class Shrink:
    """``--shrink NAME=PCT``: events whose name contains ``pattern`` (a shell pattern when it
    holds ``*``, ``?`` or ``[``) run ``pct`` percent faster."""

    pattern: str
    pct: float

    @classmethod
    def parse(cls, text: str) -> Shrink:
        name, sep, pct = text.rpartition("=")
        try:
            value = float(pct)
        except ValueError:
            value = float("nan")
        if not sep or not name or not 0.0 <= value <= 100.0:
            raise ValueError(f"--shrink {text!r}: expected NAME=PCT with PCT from 0 to 100")
        return cls(name, value)

    def matches(self, name: str) -> bool:
        """Whether ``name``'s head (:func:`tracetui.names.head`) matches the pattern."""
        name = head(name)
        if any(c in self.pattern for c in "*?["):
            return fnmatch.fnmatchcase(name, self.pattern)
        return self.pattern in name


def what_if(g: Graph, shrinks: list[Shrink]) -> dict:
    """The projected path length when matching events run faster (module docstring of
    :mod:`tracetui.critical`): host events scale their own time and that of everything
    nested in them, GPU work its duration; waits and gaps keep their observed length.

    Returns ``projected_total_us``, ``saved_us`` and per shrink ``matched_host`` /
    ``matched_gpu`` (events of the window whose name matched)."""
    trace = g.trace
    n = trace.n_events
    w = g.weight.copy()
    factor = np.ones(n, dtype=np.float64)  # per event: its own scale
    rows = []
    ev = g.sel.events
    is_gpu = np.isin(trace.kind[ev], [int(k) for k in GPU_WORK_KINDS])
    names = np.asarray(trace.names, dtype=object)
    for s in shrinks:
        hit_name = np.array([s.matches(str(x)) for x in trace.names] or [False], dtype=bool)
        hit = hit_name[trace.name_id[ev]]  # carried-in work too: it runs faster as well
        rows.append({"pattern": s.pattern, "pct": s.pct, "matched_host": int((hit & ~is_gpu).sum()),
                     "matched_gpu": int((hit & is_gpu).sum()),
                     "names": sorted({str(x) for x in names[trace.name_id[ev[hit]]]})[:20]})
        f = 1.0 - s.pct / 100.0
        host_hit = np.full(trace.n_nodes, -1, dtype=np.int64)
        h = ev[hit & ~is_gpu]
        host_hit[h] = h
        inside = fill_down(trace.parent, trace.depth, host_hit, outermost=True)[:n] >= 0
        gpu_hit = np.zeros(n, dtype=bool)
        gpu_hit[ev[hit & is_gpu]] = True
        scaled = np.where(inside & ~np.isin(trace.kind, [int(k) for k in GPU_WORK_KINDS]), f, 1.0)
        scaled = np.where(gpu_hit, f, scaled)
        factor = np.minimum(factor, scaled)
    a = g.attr
    durable = (((g.family == int(Family.HOST_ORDER)) & (g.kind == int(SegKind.HOST)))
               | ((g.family == int(Family.GPU_ORDER)) & (g.kind == int(SegKind.GPU))))
    ok = durable & (a >= 0)
    w[ok] = w[ok] * factor[a[ok]]
    dist = earliest_times(g, w)
    own = _own_end_nodes(g)
    start = float(g.node_t[g.source])
    projected = float(dist[own].max() - start) if own.size else 0.0
    total = float(g.node_t[g.sink] - start)
    return {"shrink": rows, "total_us": total, "projected_total_us": projected, "saved_us": total - projected}


def _own_end_nodes(g: Graph) -> np.ndarray:
    """The end nodes that may be the window's last event (as :func:`~tracetui.critical.graph.build_graph` chose)."""
    return g.own_ends
