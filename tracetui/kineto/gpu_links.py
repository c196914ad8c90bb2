"""Stage of :func:`~tracetui.kineto.build.build_trace` that links GPU work to its launch:
kernels, copies and sets to the runtime/driver event with the same correlation id
(flows confirm it, and link GPU events that carry no correlation), graph launches
counted, and every GPU event attached in the tree under its launch, else under its stream's
lane.  Columnar except two dictionary walks over flow ends and correlation-less events."""

from __future__ import annotations

import numpy as np

from ..errors import LoadWarning
from .event_columns import EventColumns, take_list
from .kinds import (
    GPU_WORK_KINDS,
    LAUNCH_FLOW_CATEGORIES,
    LAUNCH_KINDS,
    LaunchClass,
    device_word_of,
    launch_class_of_name,
)
from .placement import Nesting, Placement
from .trace import FlowTable, GpuLinkStats

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def link_gpu_work(e: EventColumns, pl: Placement, tree: Nesting, flows: FlowTable,
                  warnings: list[LoadWarning]) -> tuple[np.ndarray, GpuLinkStats]:
    """Stage: GPU links.  Takes the events, their lanes and the host tree (launches must be
    nested already: a launch outside the tree owns nothing) and gives ``launch_of`` (int32
    per event: the launch of each GPU work event, -1: none) and the link counts.  Fills the
    GPU events' ``parent``/``nopy_parent``/``depth`` in ``tree``.  Warns about launches
    that reuse a correlation id, then about GPU work without a launch."""
    n, kind, no_ts = e.n, e.kind, e.no_ts
    launch_of = np.full(n, -1, dtype=np.int32)
    stats = GpuLinkStats()
    gpu_work = np.flatnonzero(np.isin(kind, [int(k) for k in GPU_WORK_KINDS]) & ~no_ts)
    stats.gpu_events = int(gpu_work.size)
    corr = e.key_args["correlation"]
    launches = np.flatnonzero(np.isin(kind, [int(k) for k in LAUNCH_KINDS]) & (corr >= 0) & ~no_ts
                              & (tree.parent[:n] >= 0))
    dup_corr = _link_by_correlation(corr, launches, gpu_work, launch_of)
    stats.no_correlation = int((corr[gpu_work] < 0).sum()) if gpu_work.size else 0
    if gpu_work.size:
        _link_by_flows(e, corr, launches, gpu_work, flows, launch_of, stats)
    if dup_corr:
        warnings.append(LoadWarning("duplicate_correlation", f"{dup_corr} launch events reuse a correlation id; "
                                    "their GPU work is attached to the first", dup_corr))
    _count_graph_launches(e, launches, gpu_work, launch_of, stats)
    _attach_under_launch(np.flatnonzero(pl.is_gpu & ~no_ts), launch_of, pl.lane_of, n, tree)
    if stats.unlinked:
        warnings.append(LoadWarning(
            "gpu_unlinked", f"{stats.unlinked} of {stats.gpu_events} {device_word_of(e.cats)} events have no launch "
            "event in the trace; they are listed under their stream", stats.unlinked))
    return launch_of, stats


def _link_by_correlation(corr: np.ndarray, launches: np.ndarray, gpu_work: np.ndarray, launch_of: np.ndarray) -> int:
    """Set ``launch_of`` of the GPU work events (``gpu_work``) whose correlation id (int64,
    -1: none) is a launch's (``launches``); a reused id links to the launch first in file
    order.  Returns how many launches reuse an id."""
    if not (launches.size and gpu_work.size):
        return 0
    lc = corr[launches]
    o = np.argsort(lc, kind="stable")
    lc_sorted, l_sorted = lc[o], launches[o]
    dup_corr = int((np.diff(lc_sorted) == 0).sum())
    gc = corr[gpu_work]
    pos = np.searchsorted(lc_sorted, gc)
    pos_c = np.minimum(pos, lc_sorted.size - 1)
    hit = (gc >= 0) & (lc_sorted[pos_c] == gc)
    launch_of[gpu_work[hit]] = l_sorted[pos_c[hit]]
    return dup_corr


def _link_by_flows(e: EventColumns, corr: np.ndarray, launches: np.ndarray, gpu_work: np.ndarray, flows: FlowTable,
                   launch_of: np.ndarray, stats: GpuLinkStats) -> None:
    """Launch flows (ac2g ``f`` ends): count the correlation links a flow confirms, and link
    the GPU events without a correlation whose flow end sits on them (same pid, tid and ts;
    later flows win) to the launch with that flow id.  Then the final counts: linked, and
    launch missing (a correlation whose launch is not in the trace)."""
    n_flows = len(flows.cat)
    launch_cat = np.fromiter(map(LAUNCH_FLOW_CATEGORIES.__contains__, flows.cat), dtype=bool, count=n_flows)
    launch_ends = np.flatnonzero(launch_cat & (flows.ph == ord("f"))).tolist()  # flow rows, file order
    linked_mask = launch_of[gpu_work] >= 0
    if launch_ends:
        # integer flow ids of launch flow ends (a GPU event's correlation confirms its link)
        ids = set(take_list(flows.flow_id, launch_ends))
        int_ids = _int64_values(ids)
        conf = np.isin(corr[gpu_work], int_ids)
        stats.confirmed_by_flow = int((conf & linked_mask).sum())
    missing = gpu_work[(corr[gpu_work] < 0)]
    if missing.size and launch_ends:
        f_end_by_pos = {(flows.pid[j], flows.tid[j], float(flows.ts[j])): flows.flow_id[j] for j in launch_ends}
        corr_to_launch = {int(corr[c]): int(c) for c in launches.tolist()}
        pids, tids, ts = e.pids, e.tids, e.ts
        for g in missing.tolist():
            fid = f_end_by_pos.get((pids[g], tids[g], float(ts[g])))
            if fid is not None and isinstance(fid, int) and fid in corr_to_launch:
                launch_of[g] = corr_to_launch[fid]
                stats.linked_by_flow_only += 1
        stats.no_correlation -= stats.linked_by_flow_only
    stats.linked = int((launch_of[gpu_work] >= 0).sum())
    stats.launch_missing = stats.gpu_events - stats.linked - stats.no_correlation


def _int64_values(ids: set) -> np.ndarray:
    """The int64 array of the values of ``ids`` that are ints within int64's range (flow ids
    may be strings, or beyond 64 bits)."""
    if set(map(type, ids)) <= {int}:
        try:
            return np.fromiter(ids, dtype=np.int64, count=len(ids))
        except OverflowError:
            pass
    return np.fromiter((x for x in ids if isinstance(x, int) and _I64_MIN <= x <= _I64_MAX), dtype=np.int64)


def _count_graph_launches(e: EventColumns, launches: np.ndarray, gpu_work: np.ndarray, launch_of: np.ndarray,
                          stats: GpuLinkStats) -> None:
    """Count the graph launches (cuda/hipGraphLaunch by name) and the GPU work they own."""
    if not launches.size:
        return
    graph_names = {i for i, nm in enumerate(e.names) if launch_class_of_name(nm) == LaunchClass.GRAPH_LAUNCH}
    if graph_names:
        is_graph = np.isin(e.name_id[launches], list(graph_names))
        stats.graph_launches = int(is_graph.sum())
        if gpu_work.size:
            lo = launch_of[gpu_work]
            owned = lo >= 0
            stats.graph_kernels = int(np.isin(lo[owned], launches[is_graph]).sum())


def _attach_under_launch(gpu_all: np.ndarray, launch_of: np.ndarray, lane_of: np.ndarray, n: int,
                         tree: Nesting) -> None:
    """Put the GPU events ``gpu_all`` (work and GPU annotations) in the tree: under their
    launch (one deeper), else under their stream's lane root (``n + lane``, depth 1)."""
    lo_all = launch_of[gpu_all]
    parent, depth = tree.parent, tree.depth
    parent[gpu_all] = np.where(lo_all >= 0, lo_all, n + lane_of[gpu_all])
    tree.nopy_parent[gpu_all] = parent[gpu_all]
    depth[gpu_all] = np.where(lo_all >= 0, depth[np.maximum(lo_all, 0)] + 1, 1)
