"""The dependency graph of a window on one rank, as columns (no object per event).

**Nodes**: the start and the end of every event of the window (one node for an event of
zero duration) and a *source* at the window start.  Node ``k`` is the start of the k-th
selected event, ``m + k`` its end, ``2m`` the source.

**Edges** (``src -> dst``), each with the least time it takes (``minlat``, µs), a kind of
time (:class:`SegKind`), the event that time is attributed to, and whether its cause is
inferred (see docs/critical_path.md):

- host order and nesting: the nodes of each thread in time order (enter, exit); the time
  between two of them is host time of the innermost event open there (a thread's time
  outside any event is *other*); inside a blocking sync call it is *sync wait*, and it
  takes no least time (the call waits);
- GPU order: the nodes of each stream in time order: a GPU event's duration (*gpu*), the
  gap before the next one (*gpu gap*, least time 0);
- launch -> GPU work (*launch delay*, also every kernel of a CUDA/HIP graph launch);
- cross-stream waits (``cudaStreamWaitEvent``, from the CUPTI record: exact) and, without
  a record, an **inferred** wait where a GPU event started within
  :data:`STREAM_WAIT_TOL_US` after work on another stream ended and nothing else explains
  its start;
- blocking syncs -> the GPU event they waited for (:func:`~tracetui.analysis.syncs.host_sync_waits`);
- a backward op after its forward op (fwdbwd flows / sequence numbers);
- **inferred** fork and join across threads: a long gap of one thread during which another
  thread of the process was busy most of the time (the main thread in ``run_backward``
  while the autograd thread runs) waits for that thread: fork to its first event there,
  join from its last;
- the source to every node that has no other predecessor.

Each node's **binding** edge is the incoming edge that arrives last (``t(src) + minlat``);
its weight is the whole elapsed time ``t(dst) - t(src)``, every other edge keeps its least
time.  So the longest path to every node ends at its observed time, and the critical path
is the chain of binding edges back from the window's last event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from ..analysis.syncs import SyncKind, gpu_lanes, host_sync_waits, last_launched_before, stream_waits
from ..kineto.trace import KinetoTrace
from .window import Selection, Window, select_events

#: a host gap at least this long (µs) is checked for a fork/join with another thread
FORK_JOIN_MIN_GAP_US = 50.0
#: ... and is a wait when another thread of the process was busy this share of it
FORK_JOIN_BUSY_SHARE = 0.5
#: an unexplained GPU start at least this late (µs) after what explains it ...
STREAM_WAIT_MIN_DELAY_US = 50.0
#: ... that follows the end of work on another stream of the device this closely (µs) waited for it
STREAM_WAIT_TOL_US = 25.0


class SegKind(IntEnum):
    """What a stretch of time on the path is (the keys of ``by_kind_us``)."""

    HOST = 0
    GPU = 1
    LAUNCH_DELAY = 2
    GPU_GAP = 3
    STREAM_WAIT = 4
    SYNC_WAIT = 5
    OTHER = 6


KIND_NAMES = tuple(k.name.lower() for k in SegKind)


class Family(IntEnum):
    """Why an edge exists (its value is also its priority when two edges arrive at once)."""

    SOURCE = 0
    FWDBWD = 1
    FORK = 2
    STREAM_WAIT_INFERRED = 3
    JOIN = 4
    GPU_ORDER = 5
    LAUNCH = 6  #: a launch that began when its stream was free explains its GPU event's start
    STREAM_WAIT = 7
    SYNC = 8
    HOST_ORDER = 9


@dataclass
class Graph:
    """The graph of one window (see the module docstring); arrays indexed by node or edge."""

    trace: KinetoTrace
    window: Window
    sel: Selection
    node_t: np.ndarray  #: float64 µs (relative to the trace origin)
    node_end: np.ndarray  #: bool: an end node
    node_valid: np.ndarray  #: bool: a node (the end slot of a zero-duration event is not)
    node_pos: np.ndarray  #: int64 topological position (time order, ties: ends, then deeper starts later)
    src: np.ndarray
    dst: np.ndarray
    minlat: np.ndarray  #: float64 least time of the edge (µs)
    weight: np.ndarray  #: float64: elapsed for binding edges, minlat for the others
    family: np.ndarray  #: uint8 :class:`Family`
    kind: np.ndarray  #: uint8 :class:`SegKind`
    attr: np.ndarray  #: int64 event the edge's time is attributed to (-1: none)
    inferred: np.ndarray  #: bool
    bind: np.ndarray  #: int64 per node: its binding edge (-1: the source, invalid nodes)
    sink: int  #: the window's last event's end node
    own_ends: np.ndarray  #: int64 end nodes that may be the window's last event (its own events)
    stats: dict = field(default_factory=dict)

    @property
    def m(self) -> int:
        return len(self.sel)

    @property
    def source(self) -> int:
        return 2 * self.m

    def event_of_node(self, node: int) -> int:
        """The trace event of a node (-1 for the source)."""
        return -1 if node == self.source else int(self.sel.events[node % self.m])

    def end_node(self, local: np.ndarray) -> np.ndarray:
        """End node ids of selected events (their start node when of zero duration)."""
        local = np.asarray(local, dtype=np.int64)
        return np.where(self.node_valid[self.m + local], self.m + local, local)


class _Edges:
    """Edge columns collected family by family."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, ...]] = []

    def add(self, src, dst, minlat, family: Family, kind, attr, inferred=False) -> None:
        src = np.asarray(src, dtype=np.int64)
        n = src.size
        if not n:
            return
        self.parts.append((src, np.asarray(dst, dtype=np.int64), np.broadcast_to(np.asarray(minlat, np.float64), n),
                           np.full(n, int(family), np.uint8), np.broadcast_to(np.asarray(kind, np.uint8), n),
                           np.broadcast_to(np.asarray(attr, np.int64), n), np.broadcast_to(np.asarray(inferred), n)))

    def columns(self) -> tuple[np.ndarray, ...]:
        if not self.parts:
            return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.uint8),
                    np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, bool))
        return tuple(np.concatenate([p[i] for p in self.parts]) for i in range(7))


def build_graph(trace: KinetoTrace, window: Window) -> Graph:
    """The dependency graph of ``window`` with every node's binding edge."""
    sel = select_events(trace, window)
    b = _Builder(trace, window, sel)
    return b.build()


class _Builder:
    def __init__(self, trace: KinetoTrace, window: Window, sel: Selection) -> None:
        self.trace, self.window, self.sel = trace, window, sel
        m = len(sel)
        self.m = m
        ev = sel.events
        self.ev = ev
        t_end = trace.ts[ev] + trace.dur[ev]
        zero = t_end <= sel.node_start
        self.node_t = np.concatenate((sel.node_start, np.maximum(t_end, sel.node_start), [window.start_us]))
        self.node_end = np.concatenate((np.zeros(m, bool), np.ones(m, bool), [False]))
        self.valid = np.concatenate((np.ones(m, bool), ~zero, [True]))
        self.zero = zero
        self.local = np.full(trace.n_events, -1, dtype=np.int64)
        self.local[ev] = np.arange(m)
        lane = trace.lane_of[ev].astype(np.int64)
        self.lane_node = np.concatenate((lane, lane, [-1]))
        gpu_lane = np.array([ln.is_gpu for ln in trace.lanes] or [False], dtype=bool)
        self.node_gpu = np.concatenate((gpu_lane[lane], gpu_lane[lane], [False])) if m else np.zeros(1, bool)
        self.end_id = np.where(zero, np.arange(m), m + np.arange(m))
        self.blocking = np.zeros(trace.n_events, dtype=bool)
        self.sync = host_sync_waits(trace)
        self.blocking[self.sync.call] = True
        self.edges = _Edges()
        self.stats: dict = {}
        self._order()

    # ------------------------------------------------------------------ nodes
    def _order(self) -> None:
        m, trace = self.m, self.trace
        depth = trace.depth[self.ev].astype(np.int64)
        cls = np.concatenate((np.where(self.zero, 1, 2), np.zeros(m, np.int64), [-1]))
        dkey = np.concatenate((np.where(self.zero, 0, depth), -depth, [0]))
        tie = np.concatenate((self.ev, self.ev, [-1]))
        nodes = np.flatnonzero(self.valid)
        o = nodes[np.lexsort((tie[nodes], dkey[nodes], cls[nodes], self.node_t[nodes]))]
        self.pos = np.full(2 * m + 1, -1, dtype=np.int64)
        self.pos[o] = np.arange(o.size)
        self.topo = o

    def _host_open(self, v: np.ndarray) -> np.ndarray:
        """Innermost event open on ``v``'s thread just before node ``v`` (-1: none)."""
        k = v % self.m if self.m else v
        e = self.ev[k]
        par = self.trace.parent[e].astype(np.int64)
        par = np.where((par >= 0) & (par < self.trace.n_events), par, -1)
        return np.where(self.node_end[v] & self.valid[v] & ~self.zero[k], e, par)

    def _host_kind(self, attr: np.ndarray) -> np.ndarray:
        kind = np.where(attr < 0, int(SegKind.OTHER), int(SegKind.HOST))
        return np.where((attr >= 0) & self.blocking[np.maximum(attr, 0)], int(SegKind.SYNC_WAIT), kind).astype(np.uint8)

    def _add_host_landing(self, src, dst, family: Family, inferred=False) -> None:
        """Edges that land on host nodes: their time belongs to what was open on that thread."""
        dst = np.asarray(dst, dtype=np.int64)
        attr = self._host_open(dst)
        self.edges.add(src, dst, 0.0, family, self._host_kind(attr), attr, inferred)

    # ------------------------------------------------------------------ edges
    def build(self) -> Graph:
        if self.m:
            self._chains()
            self._launches()
            self._syncs()
            self._stream_waits()
            self._fwdbwd()
            self._inferred_stream_waits()
        return self._finish()

    def _chains(self) -> None:
        nodes = self.topo[self.topo != 2 * self.m]
        o = nodes[np.argsort(self.lane_node[nodes], kind="stable")]
        u, v = o[:-1], o[1:]
        same = self.lane_node[u] == self.lane_node[v]
        u, v = u[same], v[same]
        gpu = self.node_gpu[v]
        self._host_chain(u[~gpu], v[~gpu])
        self._gpu_chain(o, u[gpu], v[gpu])

    def _host_chain(self, u: np.ndarray, v: np.ndarray) -> None:
        t = self.node_t
        attr = self._host_open(v)
        kind = self._host_kind(attr)
        elapsed = t[v] - t[u]
        minlat = np.where(kind == int(SegKind.SYNC_WAIT), 0.0, elapsed)
        minlat = self._fork_join(u, v, kind, minlat)
        self.edges.add(u, v, minlat, Family.HOST_ORDER, kind, attr)

    def _gpu_chain(self, chain: np.ndarray, u: np.ndarray, v: np.ndarray) -> None:
        m, t = self.m, self.node_t
        k_v, k_u = v % m, u % m
        ev_v, ev_u = self.ev[k_v], self.ev[k_u]
        is_end_v = self.node_end[v]
        start_u = ~self.node_end[u] & ~self.zero[k_u]
        # events open on the stream right after u (a kernel can start before the previous ends)
        g = chain[self.node_gpu[chain]]
        delta = np.where(self.node_end[g], -1, np.where(self.zero[g % m], 0, 1))
        lane = self.lane_node[g]
        cum = np.cumsum(delta)
        first = np.concatenate(([True], lane[1:] != lane[:-1]))
        base = np.maximum.accumulate(np.where(first, np.arange(g.size), 0))
        cum = cum - np.concatenate(([0], cum))[base]
        open_after = np.zeros(2 * m + 1, dtype=np.int64)
        open_after[g] = cum
        busy = open_after[u] > 0
        attr = np.where(is_end_v, ev_v, np.where(busy, np.where(start_u, ev_u, -1), ev_v))
        for i in np.flatnonzero(attr < 0).tolist():  # rare: after an end while another event still runs
            attr[i] = self._open_on_stream(g, u[i])
        kind = np.where(is_end_v | busy, int(SegKind.GPU), int(SegKind.GPU_GAP)).astype(np.uint8)
        minlat = np.where(is_end_v | busy, t[v] - t[u], 0.0)
        self.edges.add(u, v, minlat, Family.GPU_ORDER, kind, attr)

    def _open_on_stream(self, gpu_chain: np.ndarray, u: int) -> int:
        """The event whose end comes next after node ``u`` on its stream (one still running)."""
        i = int(np.flatnonzero(gpu_chain == u)[0])
        for node in gpu_chain[i + 1:].tolist():
            if self.lane_node[node] != self.lane_node[u]:
                break
            if self.node_end[node]:
                return int(self.ev[node % self.m])
        return int(self.ev[u % self.m])

    def _launches(self) -> None:
        m = self.m
        k = np.flatnonzero(self.node_gpu[:m] & ~self.sel.carried)
        lo = self.trace.launch_of[self.ev[k]].astype(np.int64)
        ok = lo >= 0
        k, lk = k[ok], self.local[lo[ok]]
        ok = lk >= 0
        k, lk = k[ok], lk[ok]
        self.edges.add(lk, k, 0.0, Family.LAUNCH, int(SegKind.LAUNCH_DELAY), self.ev[k])
        self.stats["launch_edges"] = int(k.size)

    def _syncs(self) -> None:
        sw = self.sync
        ls, lw = self.local[sw.call], np.where(sw.waited >= 0, self.local[np.maximum(sw.waited, 0)], -1)
        ok = (ls >= 0) & (lw >= 0)
        self._add_host_landing(self.end_id[lw[ok]], self.end_id[ls[ok]], Family.SYNC, sw.inferred[ok])
        n = int(ok.sum())
        # a device synchronize waits for every stream, not only the one that finished last
        dev = np.flatnonzero((ls >= 0) & (sw.kind == int(SyncKind.DEVICE)))
        if dev.size:
            last = last_launched_before(gpu_lanes(self.trace), self.trace.ts[sw.call[dev]])
            calls = np.repeat(ls[dev], last.shape[1])
            lw = np.where(last.ravel() >= 0, self.local[np.maximum(last.ravel(), 0)], -1)
            keep = (lw >= 0) & (lw != np.repeat(np.where(sw.waited[dev] >= 0, self.local[np.maximum(sw.waited[dev], 0)],
                                                         -1), last.shape[1]))
            self._add_host_landing(self.end_id[lw[keep]], self.end_id[calls[keep]], Family.SYNC)
            n += int(keep.sum())
        self.stats["sync_edges"] = n

    def _stream_waits(self) -> None:
        st = stream_waits(self.trace)
        lr, lw = self.local[st.recorded], self.local[st.waiting]
        ok = (lr >= 0) & (lw >= 0)
        self.edges.add(self.end_id[lr[ok]], lw[ok], 0.0, Family.STREAM_WAIT, int(SegKind.STREAM_WAIT),
                       self.ev[lw[ok]])
        self.stats["stream_wait_edges"] = int(ok.sum())
        self.stats["stream_waits_unresolved"] = st.unresolved

    def _fwdbwd(self) -> None:
        m = self.m
        k = np.flatnonzero(~self.node_gpu[:m])
        f = self.trace.fwd_of[self.ev[k]].astype(np.int64)
        ok = f >= 0
        k, lf = k[ok], self.local[f[ok]]
        ok = lf >= 0
        self._add_host_landing(self.end_id[lf[ok]], k[ok], Family.FWDBWD)

    def _fork_join(self, u: np.ndarray, v: np.ndarray, kind: np.ndarray, minlat: np.ndarray) -> np.ndarray:
        """Long host gaps during which another thread of the process was busy: fork/join edges
        (inferred) to that thread, and the gap becomes a wait (least time 0)."""
        t = self.node_t
        gap = np.flatnonzero((t[v] - t[u] >= FORK_JOIN_MIN_GAP_US) & (kind != int(SegKind.SYNC_WAIT)))
        if not gap.size:
            return minlat
        lanes = self._top_level_intervals()
        if len(lanes) < 2:
            return minlat
        trace = self.trace
        minlat = minlat.copy()
        forks, joins = [], []
        for i in gap.tolist():
            a, b = float(t[u[i]]), float(t[v[i]])
            my_lane = int(self.lane_node[u[i]])
            pid = trace.lanes[my_lane].pid
            best = None
            for ln, (starts, ends, cum, locs) in lanes.items():
                if ln == my_lane or trace.lanes[ln].pid != pid:
                    continue
                lo = int(np.searchsorted(starts, a, side="right"))
                hi = int(np.searchsorted(ends, b, side="left"))  # intervals ending before b
                if hi <= lo:
                    continue
                busy = float(cum[hi] - cum[lo])
                if busy >= FORK_JOIN_BUSY_SHARE * (b - a) and (best is None or busy > best[0]):
                    best = (busy, locs[lo], locs[hi - 1])
            if best is not None:
                minlat[i] = 0.0
                forks.append((u[i], best[1]))
                joins.append((self.end_id[best[2]], v[i]))
        if forks:
            fu, fv = np.array(forks, dtype=np.int64).T
            ju, jv = np.array(joins, dtype=np.int64).T
            self._add_host_landing(fu, fv, Family.FORK, True)
            self._add_host_landing(ju, jv, Family.JOIN, True)
        self.stats["fork_join_gaps"] = len(forks)
        return minlat

    def _top_level_intervals(self) -> dict:
        """Per host lane: its outermost window events as sorted intervals (starts, ends,
        cumulative busy time, local ids)."""
        m, trace = self.m, self.trace
        host = np.flatnonzero(~self.node_gpu[:m])
        par = trace.parent[self.ev[host]].astype(np.int64)
        inside = (par >= 0) & (par < trace.n_events)
        inside[inside] = self.local[par[inside]] >= 0
        top = host[~inside]
        out = {}
        lanes = self.lane_node[top]
        for ln in np.unique(lanes).tolist():
            k = top[lanes == ln]
            k = k[np.argsort(self.node_t[k], kind="stable")]
            s, e = self.node_t[k], self.node_t[self.end_id[k]]
            e = np.maximum.accumulate(e)
            out[ln] = (s, e, np.concatenate(([0.0], np.cumsum(e - s))), k)
        return out

    def _inferred_stream_waits(self) -> None:
        """A GPU start that nothing explains within STREAM_WAIT_MIN_DELAY_US, right after work
        on another stream of the device ended, waited for that work (inferred).  The work
        waited for must have been launched no later than the waiting work (a stream wait is
        enqueued between the two launches)."""
        m, t = self.m, self.node_t
        src, dst, minlat = (np.concatenate([p[i] for p in self.edges.parts]) for i in (0, 1, 2))
        starts = np.flatnonzero(self.node_gpu[:m] & ~self.zero)
        if not starts.size:
            return
        explained = np.full(2 * m + 1, -np.inf)
        np.maximum.at(explained, dst, t[src] + minlat)
        late = starts[t[starts] - explained[starts] >= STREAM_WAIT_MIN_DELAY_US]
        if not late.size:
            return
        trace = self.trace
        dev_of_lane = np.array([hash(ln.pid) for ln in trace.lanes], dtype=np.int64)
        gk = np.flatnonzero(self.node_gpu[:m])
        ends = self.end_id[gk]
        dev = dev_of_lane[self.lane_node[gk]]
        o = np.lexsort((t[ends], dev))
        gk, ends, dev = gk[o], ends[o], dev[o]
        lo_all = trace.launch_of[self.ev].astype(np.int64)
        launched_at = np.where(lo_all >= 0, trace.ts[np.maximum(lo_all, 0)],
                               np.where(self.sel.carried, -np.inf, trace.ts[self.ev]))
        src_l, dst_l = [], []
        for v in late.tolist():
            d = dev_of_lane[self.lane_node[v]]
            lo, hi = np.searchsorted(dev, d, "left"), np.searchsorted(dev, d, "right")
            p = int(np.searchsorted(t[ends[lo:hi]], t[v], side="right")) - 1 + lo
            if p < lo:
                continue
            w = int(ends[p])
            if (self.lane_node[w] != self.lane_node[v] and t[w] > explained[v]
                    and t[v] - t[w] <= STREAM_WAIT_TOL_US and launched_at[w % m] <= launched_at[v % m]):
                src_l.append(w)
                dst_l.append(v)
        dst_a = np.array(dst_l, dtype=np.int64)
        self.edges.add(np.array(src_l, dtype=np.int64), dst_a, 0.0, Family.STREAM_WAIT_INFERRED,
                       int(SegKind.STREAM_WAIT), self.ev[dst_a % max(m, 1)] if dst_a.size else dst_a, True)
        self.stats["inferred_stream_waits"] = len(dst_l)

    def _own_ends(self) -> np.ndarray:
        """End nodes that can be the window's last event: its GPU work, and host events that
        end inside the window (a host call that starts in a step and ends after it, the
        profiler's own ``step()``, belongs to the next one)."""
        m = self.m
        k = np.flatnonzero(~self.sel.carried)
        ends = self.end_id[k]
        ok = self.node_gpu[k] | (self.node_t[ends] <= self.window.end_us) | (self.ev[k] == self.window.event)
        return ends[ok] if m else ends

    # ------------------------------------------------------------------ binding
    def _finish(self) -> Graph:
        m, t, pos = self.m, self.node_t, self.pos
        src, dst, minlat, fam, kind, attr, inf = self.edges.columns()
        ok = (t[src] <= t[dst]) & (pos[src] < pos[dst])
        self.stats["edges_against_time"] = int((~ok).sum())
        src, dst, minlat, fam, kind, attr, inf = (x[ok] for x in (src, dst, minlat, fam, kind, attr, inf))
        has_in = np.zeros(2 * m + 1, dtype=bool)
        has_in[dst] = True
        orphan = np.flatnonzero(self.valid & ~has_in)
        orphan = orphan[orphan != 2 * m]
        if orphan.size:
            host = orphan[~self.node_gpu[orphan]]
            gpu = orphan[self.node_gpu[orphan]]
            b = _Edges()
            b.add(np.full(gpu.size, 2 * m), gpu, 0.0, Family.SOURCE, int(SegKind.OTHER), self.ev[gpu % max(m, 1)])
            self.edges = b
            self._add_host_landing(np.full(host.size, 2 * m), host, Family.SOURCE)
            extra = self.edges.columns()
            src, dst, minlat, fam, kind, attr, inf = (np.concatenate((a, x)) for a, x in
                                                       zip((src, dst, minlat, fam, kind, attr, inf), extra))
        minlat = np.minimum(minlat, t[dst] - t[src])
        arrive = np.round(t[src] + minlat, 6)
        o = np.lexsort((fam, arrive, dst))
        last = np.concatenate((dst[o][1:] != dst[o][:-1], [True])) if o.size else np.zeros(0, bool)
        bind = np.full(2 * m + 1, -1, dtype=np.int64)
        bind[dst[o][last]] = o[last]
        weight = minlat.copy()
        be = bind[bind >= 0]
        weight[be] = t[dst[be]] - t[src[be]]
        own = self._own_ends()
        if own.size:
            sink = int(own[np.lexsort((pos[own], t[own]))[-1]])
        else:
            sink = 2 * m
        self.stats.update(nodes=int(self.valid.sum()), edges=int(src.size), inferred_edges=int(inf.sum()),
                          events=m, carried_in=int(self.sel.carried.sum()))
        return Graph(self.trace, self.window, self.sel, t, self.node_end, self.valid, pos, src, dst, minlat, weight,
                     fam, kind.astype(np.uint8), attr, inf.astype(bool), bind, sink, own, self.stats)
