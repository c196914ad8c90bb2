"""Stages of :func:`~tracetui.kineto.build.build_trace` that place the events: the lane (a host
thread or a GPU stream) each event sits on and the lanes in display order with their labels
(:class:`Placement`); and the tree columns that host nesting and the GPU links then fill in
(:class:`Nesting`).  Node ids: events ``0 .. n-1``, then lane ``k``'s root ``n + k``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..io.interning import compact
from .columns import DecodedEvents
from .event_columns import EventColumns
from .kinds import GPU_KINDS, HOST_KINDS, Kind
from .lanes import Lane, lane_labels, lane_sort_key

#: Kineto writes stream synchronisation events (cuda_sync) of stream N on a pseudo thread
#: ``tid`` = N + STREAM_SYNC_TID_OFFSET named "stream N (sync)" (since 2026)
STREAM_SYNC_TID_OFFSET = 1_000_000


@dataclass
class Placement:
    """Where the events sit; per event (length n) unless said.

    ``is_gpu``: a GPU kind (kernels, copies, GPU annotations); ``is_host``: a host kind with
    ph X (these nest by time).  ``lane_of``: int32 index into ``lanes`` (-1: on no lane:
    no usable time, counters, async spans, instants of a thread without a host lane).
    ``lanes``: in display order, lane ``k`` is tree node ``n + k``.  ``pid_code``/``pid_vals``
    and ``tid_code``/``tid_vals``: the events' pids and tids interned (int32 codes, the
    distinct values), kept for the cache writer."""

    is_gpu: np.ndarray
    is_host: np.ndarray
    lane_of: np.ndarray
    lanes: list[Lane]
    pid_code: np.ndarray
    pid_vals: list
    tid_code: np.ndarray
    tid_vals: list

    @property
    def n_nodes(self) -> int:
        """Events plus lane roots."""
        return int(self.lane_of.size) + len(self.lanes)


@dataclass
class Nesting:
    """The tree over the nodes (events, then lane roots; int32, length n_nodes): ``parent``
    (-1: a lane root, or an event outside the tree), ``nopy_parent`` (the parent skipping
    python_function events) and ``depth`` (lane roots 0).  Host nesting fills the host
    events', the GPU links the GPU events'."""

    parent: np.ndarray
    nopy_parent: np.ndarray
    depth: np.ndarray

    @classmethod
    def empty(cls, n_nodes: int) -> Nesting:
        """Every node a root at depth 0."""
        return cls(np.full(n_nodes, -1, dtype=np.int32), np.full(n_nodes, -1, dtype=np.int32),
                   np.zeros(n_nodes, dtype=np.int32))


def place_on_lanes(ev: DecodedEvents, e: EventColumns, pnames: dict, tnames: dict, psort: dict,
                   tsort: dict) -> Placement:
    """Stage: lanes.  One host lane per (pid, tid) with host spans, one device lane per (pid,
    tid) with GPU work (device, stream); sync events of a stream join that stream's lane
    (:func:`_sync_on_streams`); instants sit on their thread's host lane when it has one.
    Events without a usable time are on no lane.  Lanes are ordered by
    :func:`~tracetui.kineto.lanes.lane_sort_key` (metadata sort indexes ``psort``/``tsort``)
    and labelled from the process and thread names (``pnames``/``tnames``)."""
    kind, no_ts = e.kind, e.no_ts
    is_gpu = np.isin(kind, [int(k) for k in GPU_KINDS])
    is_host = np.isin(kind, [int(k) for k in HOST_KINDS]) & (e.ph == ord("X"))
    pid_code, pid_vals = compact(ev.pid.codes[e.rows], ev.pid.values)
    tid_code, tid_vals = compact(ev.tid.codes[e.rows], ev.tid.values)
    pair = pid_code.astype(np.int64) * (len(tid_vals) + 1) + tid_code
    on_stream = _sync_on_streams(kind, is_gpu & ~no_ts, is_host & ~no_ts, pair, pid_code, tid_code, tid_vals)
    is_host_lane = is_host & ~on_stream
    # device lanes take their pid/tid from device work first (not from a sync event's pseudo tid)
    lane_of, lane_keys, lanes_tmp = _lanes_first_seen(
        np.flatnonzero(is_host_lane & ~no_ts),
        np.concatenate((np.flatnonzero(is_gpu & ~no_ts), np.flatnonzero(on_stream))), pair, e.pids, e.tids)
    _instants_on_host_lanes(lane_of, np.flatnonzero(kind == int(Kind.INSTANT)), lane_keys, pair)
    lanes, lane_of = _ordered_lanes(lanes_tmp, lane_of, e.n, pnames, tnames, psort, tsort)
    return Placement(is_gpu=is_gpu, is_host=is_host, lane_of=lane_of, lanes=lanes, pid_code=pid_code,
                     pid_vals=pid_vals, tid_code=tid_code, tid_vals=tid_vals)


def _sync_on_streams(kind: np.ndarray, gpu: np.ndarray, host: np.ndarray, pair: np.ndarray, pid_code: np.ndarray,
                     tid_code: np.ndarray, tid_vals) -> np.ndarray:
    """Sync events (Kind.SYNC) that belong on a device stream's lane, not a lane of their own.

    A sync event on a device's pid whose tid is a stream with GPU work, or that stream +
    :data:`STREAM_SYNC_TID_OFFSET` (the "stream N (sync)" pseudo thread), joins that
    stream's lane: ``pair`` is rewritten in place to the stream's (pid, tid) code.  They
    stay sync events (host nesting among themselves, no GPU time)."""
    out = np.zeros(kind.shape[0], dtype=bool)
    sync = np.flatnonzero(host & (kind == int(Kind.SYNC)))
    if not sync.size or not gpu.any():
        return out
    # per distinct tid value: the code of tid - offset (or of tid itself), -1 when none
    code_of = {v: i for i, v in enumerate(tid_vals) if isinstance(v, int)}
    base = np.array([code_of.get(v - STREAM_SYNC_TID_OFFSET, i) if isinstance(v, int) and v >= STREAM_SYNC_TID_OFFSET
                     else i for i, v in enumerate(tid_vals)] or [0], dtype=np.int64)
    cand = pid_code[sync].astype(np.int64) * (len(tid_vals) + 1) + base[tid_code[sync]]
    hit = np.isin(cand, np.unique(pair[gpu]))
    pair[sync[hit]] = cand[hit]
    out[sync[hit]] = True
    return out


def _lanes_first_seen(host: np.ndarray, device: np.ndarray, pair: np.ndarray, pids: list,
                      tids: list) -> tuple[np.ndarray, dict[tuple[bool, int], int], list[tuple[bool, Any, Any, int]]]:
    """Lanes in order of first appearance: host lanes (events ``host``), then device lanes
    (events ``device``), one per distinct ``pair`` code (int64, a (pid, tid)).  Gives each
    event's provisional lane (int32, -1: none), (is device, pair) -> lane, and per lane
    (is device, pid, tid, pair) from its first event."""
    lane_of = np.full(pair.size, -1, dtype=np.int32)
    lane_keys: dict[tuple[bool, int], int] = {}
    lanes_tmp: list[tuple[bool, Any, Any, int]] = []
    for flag, sel in ((False, host), (True, device)):
        if not sel.size:
            continue
        uniq, first_at, inv = np.unique(pair[sel], return_index=True, return_inverse=True)
        ids = []
        for u, first in zip(uniq.tolist(), sel[first_at].tolist()):
            lane_keys[(flag, u)] = len(lanes_tmp)
            ids.append(len(lanes_tmp))
            lanes_tmp.append((flag, pids[first], tids[first], u))
        lane_of[sel] = np.asarray(ids, dtype=np.int32)[inv]
    return lane_of, lane_keys, lanes_tmp


def _instants_on_host_lanes(lane_of: np.ndarray, inst: np.ndarray, lane_keys: dict[tuple[bool, int], int],
                            pair: np.ndarray) -> None:
    """Put the instants ``inst`` on their thread's host lane, where it has one (in place)."""
    host_keys = sorted((u, li) for (flag, u), li in lane_keys.items() if not flag)
    if inst.size and host_keys:
        hk = np.array([u for u, _ in host_keys], dtype=np.int64)
        hl = np.array([li for _, li in host_keys], dtype=np.int32)
        pos = np.minimum(np.searchsorted(hk, pair[inst]), hk.size - 1)
        on = hk[pos] == pair[inst]
        lane_of[inst[on]] = hl[pos[on]]


def _ordered_lanes(lanes_tmp: list[tuple[bool, Any, Any, int]], lane_of: np.ndarray, n: int, pnames: dict,
                   tnames: dict, psort: dict, tsort: dict) -> tuple[list[Lane], np.ndarray]:
    """The lanes sorted for display (:func:`~tracetui.kineto.lanes.lane_sort_key`), labelled,
    lane ``k`` being node ``n + k``; and ``lane_of`` renumbered to that order (int32)."""
    order_l = sorted(range(len(lanes_tmp)), key=lambda k: lane_sort_key(
        lanes_tmp[k][0], lanes_tmp[k][1], lanes_tmp[k][2], psort, tsort))
    remap = np.empty(max(len(lanes_tmp), 1), dtype=np.int32)
    lanes: list[Lane] = []
    for new, old in enumerate(order_l):
        flag, p, t, _ = lanes_tmp[old]
        remap[old] = new
        label, short = lane_labels(flag, p, t, pnames, tnames)
        lanes.append(Lane(new, n + new, flag, p, t, label, lane_sort_key(flag, p, t, psort, tsort), short))
    return lanes, np.where(lane_of >= 0, remap[np.maximum(lane_of, 0)], -1).astype(np.int32)
