"""One trace from a Kineto trace and the driver-call trace linked to it.

The merged :class:`~tracetui.driver.trace.DriverTrace` holds the Kineto events first
(ids unchanged), then the driver events (``first`` = the Kineto event count), then the
Kineto lanes, then the driver lanes ("driver calls: thread T").  Driver times are moved
onto the Kineto clock by the link's offset.  Every Kineto column keeps its values, so the
Kineto analyses give the same numbers with or without the driver trace (its events have
kinds of their own); the driver columns keep theirs, so the driver answers do too.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..driver.trace import DriverTrace
from ..kineto.lanes import Lane
from ..kineto.trace import KinetoTrace
from ..tree.csr import csr_children
from .driver_kineto import DriverLink, compute_link

DRIVER_LANE_PREFIX = "driver calls: "


def _remap_names(base: list[str], extra: list[str], ids: np.ndarray) -> tuple[list[str], np.ndarray]:
    """(base + the strings of ``extra`` not in it, ``ids`` into ``extra`` as ids into that list)."""
    out = list(base)
    at = {s: i for i, s in enumerate(out)}
    to = np.empty(max(len(extra), 1), dtype=np.int64)
    for i, s in enumerate(extra):
        if s not in at:
            at[s] = len(out)
            out.append(s)
        to[i] = at[s]
    return out, to[ids] if ids.size else ids.astype(np.int64)


def link_driver(kt: KinetoTrace, drv: DriverTrace) -> DriverTrace:
    """Link ``drv`` to ``kt`` (link/driver_kineto.py) and return the merged trace."""
    return merge_driver(kt, drv, compute_link(kt, drv))


def merge_driver(kt: KinetoTrace, drv: DriverTrace, link: DriverLink) -> DriverTrace:
    nk, nd = kt.n_events, drv.n_driver
    lk, ld = len(kt.lanes), len(drv.lanes)
    n = nk + nd
    n_nodes = n + lk + ld
    # driver times: own clock -> Kineto clock, relative to the Kineto origin
    shift = drv.origin_us + link.offset_us - kt.origin_us
    ts = np.concatenate((kt.ts, drv.ts + shift))
    names, name_id_d = _remap_names(kt.names, drv.names, drv.name_id)
    cats, cat_id_d = _remap_names(kt.cats, drv.cats, drv.cat_id.astype(np.int64))
    name_id = np.concatenate((kt.name_id.astype(np.int64), name_id_d)).astype(np.int32)
    cat_id = np.concatenate((kt.cat_id.astype(np.int64), cat_id_d)).astype(np.int16 if len(cats) < 2**15 else np.int32)

    def parents(kp: np.ndarray, dp: np.ndarray) -> np.ndarray:
        # Kineto: events keep their ids, lane nodes move up by nd; driver: events up by nk,
        # lane nodes after the Kineto lanes
        kp = kp.astype(np.int64)
        dp = dp.astype(np.int64)
        k = np.where(kp >= nk, kp + nd, kp)
        d = np.where(dp >= nd, dp - nd + n + lk, dp + nk)
        out = np.concatenate((k[:nk], d[:nd], k[nk:], d[nd:]))
        out[np.concatenate((kp[:nk], dp[:nd], kp[nk:], dp[nd:])) < 0] = -1
        return out.astype(np.int32)

    parent = parents(kt.parent, drv.parent)
    nopy = parents(kt.nopy_parent if kt.nopy_parent is not None else kt.parent, drv.nopy_parent)
    depth = np.concatenate((kt.depth[:nk], drv.depth[:nd], kt.depth[nk:], drv.depth[nd:]))
    node_ts = np.zeros(n_nodes)
    node_ts[:n] = ts
    child_start, child_index = csr_children(parent, node_ts, np.arange(n_nodes))
    lanes = list(kt.lanes)
    for ln in drv.lanes:
        lanes.append(Lane(lk + ln.index, n + lk + ln.index, False, ln.pid, ln.tid, DRIVER_LANE_PREFIX + ln.label,
                          (2,) + tuple(ln.sort_key), "drv " + ln.short))
    lanes = [dataclasses.replace(ln, node=n + ln.index) if ln.index < lk else ln for ln in lanes]
    # the cpu_op of a linked driver call (and of its ioctls and records) is its runtime call's
    cpu_op = np.full(n_nodes, -1, dtype=np.int64)
    cpu_op[:nk] = kt.cpu_op_of[:nk]
    d_ops = _linked_cpu_ops(kt, drv, link)
    cpu_op[nk:n] = d_ops
    blob = bytes(kt.args_blob) + bytes(drv.args_blob)
    offsets = np.concatenate((kt.args_offsets[:nk], drv.args_offsets + int(kt.args_offsets[nk])))

    def cat(a, b):
        return np.concatenate((a, b))

    nfill = np.full(nd, -1, dtype=np.int64)
    return DriverTrace(
        path=kt.path, origin_us=kt.origin_us, metadata=kt.metadata, ts=ts, dur=cat(kt.dur, drv.dur),
        kind=cat(kt.kind, drv.kind), ph=cat(kt.ph, drv.ph), name_id=name_id, names=names, cat_id=cat_id, cats=cats,
        pids=list(kt.pids) + list(drv.pids), tids=list(kt.tids) + list(drv.tids),
        correlation=cat(kt.correlation, nfill), external_id=cat(kt.external_id, nfill),
        rf_id=cat(kt.rf_id, np.zeros(nd, np.int64)), seq=cat(kt.seq, nfill), fwd_tid=cat(kt.fwd_tid, nfill),
        device=cat(kt.device, nfill), stream=cat(kt.stream, nfill), args_blob=blob, args_offsets=offsets,
        lane_of=cat(kt.lane_of, np.where(drv.lane_of >= 0, drv.lane_of + lk, -1).astype(np.int32)),
        parent=parent, child_start=child_start, child_index=child_index, depth=depth, lanes=lanes,
        launch_of=cat(kt.launch_of, np.full(nd, -1, np.int32)), cpu_op_of=cpu_op.astype(np.int32),
        fwd_of=cat(kt.fwd_of, np.full(nd, -1, np.int32)), gpu_stats=kt.gpu_stats, flows=kt.flows,
        process_names=kt.process_names, thread_names=kt.thread_names, process_labels=kt.process_labels,
        warnings=list(kt.warnings) + [dataclasses.replace(w, message=f"{drv.name_of_file}: {w.message}")
                                      for w in drv.warnings] + list(link.warnings),
        rejected=kt.rejected, bytes_lost=kt.bytes_lost, nopy_parent=nopy,
        first=nk, what=drv.what, flags=drv.flags, line_no=drv.line_no, end_line_no=drv.end_line_no,
        retval=drv.retval, size=drv.size, total_allocated=drv.total_allocated, direction=drv.direction,
        grid=drv.grid, block=drv.block, ioctl_cmd=drv.ioctl_cmd, layout=drv.layout, lines=drv.lines,
        layouts=drv.layouts, driver_path=drv.path, link=link, clock_shift_us=shift)


def _linked_cpu_ops(kt: KinetoTrace, drv: DriverTrace, link: DriverLink) -> np.ndarray:
    """Per driver event: the cpu_op of the Kineto call its top linked call is linked to."""
    nd = drv.n_driver
    own = np.where(link.driver_to_kineto >= 0, kt.cpu_op_of[np.maximum(link.driver_to_kineto, 0)], -1)
    out = own.astype(np.int64)
    # children of a linked call (ioctls, records) take its op: one step per depth level
    par = drv.parent[:nd].astype(np.int64)
    for _ in range(int(drv.depth[:nd].max()) + 1 if nd else 0):
        p = np.where((par >= 0) & (par < nd), par, -1)
        take = (out < 0) & (p >= 0)
        if not take.any():
            break
        out[take] = out[p[take]]
    return out
