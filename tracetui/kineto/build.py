"""Build a :class:`KinetoTrace` from decoded columns: lanes, host nesting, GPU links,
forward/backward links.  Everything is columnar; the only per-event Python loop is the
nesting stack walk over host events."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from operator import itemgetter
from typing import Any

import numpy as np

from .. import units
from ..errors import LoadWarning
from ..io.interning import compact
from ..tree.csr import csr_children
from ..tree.propagate import ancestor_counts, fill_down, nearest_kept_ancestor
from . import schema
from .columns import cut_args, lenient_decode
from .decode import DecodedTrace
from .kinds import (
    CATEGORY_KIND,
    DEVICE_NAME_KINDS,
    FWDBWD_FLOW_CATEGORIES,
    GPU_KINDS,
    GPU_WORK_KINDS,
    HOST_KINDS,
    KNOWN_OTHER_CATEGORIES,
    KNOWN_PHASES,
    LAUNCH_FLOW_CATEGORIES,
    LAUNCH_KINDS,
    Kind,
    LaunchClass,
    device_word_of,
    launch_class_of_name,
)
from .lanes import Lane, lane_labels, lane_sort_key
from .trace import FlowTable, GpuLinkStats, KinetoTrace

Progress = Callable[[str, float], None]

_FLOW_PH = {"s", "f", "t"}
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_E_MERGED = "end events (ph E) merged into their begin event"
_E_ORPHAN = "end events (ph E) without a begin event"
#: the longest duration taken as real (µs; 31 years): longer ones are kept with zero duration
#: and named in the warnings, so sums over durations never overflow
MAX_DURATION_US = 1e15
#: tie-break for events with the same start and duration: outer kinds first
_KIND_RANK = np.zeros(32, dtype=np.int8)
for _k, _r in ((Kind.TRACE_SPAN, 0), (Kind.PYTHON, 1), (Kind.ANNOTATION, 2), (Kind.CPU_OP, 3),
               (Kind.OTHER, 4), (Kind.OVERHEAD, 4), (Kind.RUNTIME, 5), (Kind.DRIVER, 6), (Kind.SYNC, 7),
               (Kind.PHASE, 2), (Kind.TRACED_CALL, 6), (Kind.IOCTL, 7), (Kind.RECORD, 8)):
    _KIND_RANK[int(_k)] = _r


def _metadata_events(dec: DecodedTrace, idx: np.ndarray, warnings: list[LoadWarning]):
    ev = dec.events
    import msgspec

    process_names: dict = {}
    thread_names: dict = {}
    process_sort: dict = {}
    thread_sort: dict = {}
    process_labels: dict = {}
    for i in idx.tolist():
        a, b = int(ev.args_offsets[i]), int(ev.args_offsets[i + 1])
        try:
            args = lenient_decode(ev.args_blob[a:b]) if b > a else {}
        except msgspec.DecodeError:
            args = {}
        if not isinstance(args, dict):
            continue
        nm = ev.name[i]
        pid, tid = ev.pid[i], ev.tid[i]
        if nm == "process_name":
            process_names[pid] = str(args.get(schema.META_NAME, ""))
        elif nm == "thread_name":
            thread_names[(pid, tid)] = str(args.get(schema.META_NAME, ""))
        elif nm == "process_sort_index":
            process_sort[pid] = args.get(schema.SORT_INDEX, 0)
        elif nm == "thread_sort_index":
            thread_sort[(pid, tid)] = args.get(schema.SORT_INDEX, 0)
        elif nm == "process_labels":
            process_labels[pid] = str(args.get(schema.LABELS, ""))
    return process_names, thread_names, process_sort, thread_sort, process_labels


def _merge_begin_end(ph: np.ndarray, thread: np.ndarray, ts: np.ndarray, dur: np.ndarray,
                     idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Turn Chrome 'B'/'E' pairs into complete events (dur set on B, in µs).

    ``thread`` holds one int64 code per row for its (pid, tid).
    Returns (E rows merged into their B, E rows without an open B, B rows left open).
    An open B keeps zero duration.  Rows are taken in timestamp order per (pid, tid).
    """
    stacks: dict = {}
    merged: list[int] = []
    orphan: list[int] = []
    order = idx[np.argsort(ts[idx], kind="stable")]
    keys = thread[order].tolist()
    for i, key in zip(order.tolist(), keys):
        if ph[i] == ord("B"):
            stacks.setdefault(key, []).append(i)
        else:
            st = stacks.get(key)
            if st:
                b = st.pop()
                dur[b] = ts[i] - ts[b]
                merged.append(i)
            else:
                orphan.append(i)
    unmatched = 0
    for st in stacks.values():
        unmatched += len(st)
        for b in st:
            dur[b] = 0.0
    return np.asarray(merged, dtype=np.int64), np.asarray(orphan, dtype=np.int64), unmatched


def _take_list(values: list, rows) -> list:
    """``[values[i] for i in rows]`` in one C call (``itemgetter``)."""
    rows = rows.tolist() if isinstance(rows, np.ndarray) else rows
    if len(rows) < 2:
        return [values[i] for i in rows]
    return list(itemgetter(*rows)(values))


def _int64_values(ids: set) -> np.ndarray:
    """The int64 array of the values of ``ids`` that are ints within int64's range (flow ids
    may be strings, or beyond 64 bits)."""
    if set(map(type, ids)) <= {int}:
        try:
            return np.fromiter(ids, dtype=np.int64, count=len(ids))
        except OverflowError:
            pass
    return np.fromiter((x for x in ids if isinstance(x, int) and _I64_MIN <= x <= _I64_MAX), dtype=np.int64)


def _first_rows(dec: DecodedTrace, rows: np.ndarray) -> str:
    """``"traceEvents[i]"`` of the first decoded row in ``rows``."""
    return f"traceEvents[{dec.events.source_index(int(rows[0]))}]" if rows.size else "?"


def build_trace(path: str, dec: DecodedTrace, progress: Progress | None = None,
                extra_warnings: list[LoadWarning] | None = None, bytes_lost: int = 0) -> KinetoTrace:
    from .timestamps import choose_origin, relative_times

    report = progress or (lambda msg, frac: None)
    ev = dec.events
    warnings = list(dec.warnings) + list(extra_warnings or [])
    n_all = len(ev.name)
    ph_first = np.array([ord(p[0]) if p else 0 for p in ev.ph.values] or [0], dtype=np.uint32)
    # a phase whose first character is beyond one byte is no known phase: code 0
    ph_all = np.where(ph_first < 256, ph_first, 0).astype(np.uint8)[ev.ph.codes]
    is_meta = ph_all == ord("M")
    origin, ts_outlier = choose_origin(ev.ts_int, ev.ts_frac, is_meta)
    ts_all, origin = relative_times(ev.ts_int, ev.ts_frac, origin)
    if ts_outlier.any():  # placeholders (ts 0.0 beside epoch µs): no usable time, say so
        ts_all[ts_outlier] = np.nan
        n_out = int(ts_outlier.sum())
        warnings.append(LoadWarning("outlier_timestamp", f"{n_out:,} events have a timestamp more than 24 h before "
                                    "the trace's median (e.g. ts 0.0 beside epoch microseconds); they do not set "
                                    "the trace origin (docs/origin.md)", n_out))
    dur_all = ev.dur.copy()
    is_flow = np.isin(ph_all, [ord(c) for c in _FLOW_PH])
    rejected = Counter(ev.rejected)
    rejected_first = dict(ev.rejected_first)
    be = np.flatnonzero((ph_all == ord("B")) | (ph_all == ord("E")))
    drop_e = np.zeros(n_all, dtype=bool)
    if be.size:
        thread = ev.pid.codes.astype(np.int64) * (len(ev.tid.values) + 1) + ev.tid.codes
        merged_e, orphan_e, unmatched = _merge_begin_end(ph_all, thread, ts_all, dur_all, be)
        for rows, reason in ((merged_e, _E_MERGED), (orphan_e, _E_ORPHAN)):
            if rows.size:
                drop_e[rows] = True
                rejected[reason] += int(rows.size)
                rejected_first.setdefault(reason, ev.source_index(int(rows.min())))
        ph_all[be] = ord("X")
        merged = int(merged_e.size)
        if merged:
            warnings.append(LoadWarning("begin_end", f"{merged} B/E event pairs merged into complete events", merged))
        if unmatched:
            warnings.append(LoadWarning("begin_end", f"{unmatched} B events without an E kept with zero duration",
                                        unmatched))
    keep = ~is_meta & ~is_flow & ~drop_e
    ev_idx = np.flatnonzero(keep)
    report("metadata", 0.55)
    pnames, tnames, psort, tsort, plabels = _metadata_events(dec, np.flatnonzero(is_meta), warnings)

    # ---- flows
    fidx = np.flatnonzero(is_flow)
    flows = FlowTable(
        ph=ph_all[fidx], cat=ev.cat.take(fidx), flow_id=_take_list(ev.flow_id, fidx),
        pid=ev.pid.take(fidx), tid=ev.tid.take(fidx), ts=ts_all[fidx])

    # ---- event columns
    n = ev_idx.size
    name_id, names = compact(ev.name.codes[ev_idx], ev.name.values)
    cat_id, cats = compact(ev.cat.codes[ev_idx], ev.cat.values)
    ph = ph_all[ev_idx]
    cat_kind = np.array([int(CATEGORY_KIND.get(c, Kind.OTHER)) for c in cats] or [0], dtype=np.uint8)
    kind = cat_kind[cat_id] if n else np.zeros(0, np.uint8)
    _refine_device_kinds(kind, cat_id, name_id, cats, names)
    _warn_not_understood(cats, cat_id, ph_all, warnings)
    kind = np.where(np.isin(ph, [ord("i"), ord("I"), ord("n")]), np.uint8(Kind.INSTANT), kind).astype(np.uint8)
    ts = ts_all[ev_idx]
    dur = dur_all[ev_idx]
    bad_dur = ~np.isfinite(dur)
    if bad_dur.any():
        nb = int(bad_dur.sum())
        warnings.append(LoadWarning("bad_duration", f"{nb:,} events have a duration that is not a finite number "
                                    f"(kept with zero duration; first: {_first_rows(dec, ev_idx[bad_dur])})", nb))
        dur = np.where(bad_dur, 0.0, dur)
    huge = np.abs(dur) > MAX_DURATION_US
    if huge.any():  # 1e308 µs: every sum over it overflows; no profile lasts that long
        nh = int(huge.sum())
        over, longest = units.us_text(MAX_DURATION_US, ".0e"), units.us_text(float(np.abs(dur[huge]).max()), ".3g")
        warnings.append(LoadWarning("bad_duration", f"{nh:,} events have a duration over {over} "
                                    f"(31 years; the longest {longest}), not a real one "
                                    f"(kept with zero duration; first: {_first_rows(dec, ev_idx[huge])})", nh))
        dur = np.where(huge, 0.0, dur)
    neg = dur < 0
    if neg.any():
        warnings.append(LoadWarning("negative_duration", f"{int(neg.sum())} events with a negative duration "
                                    "(kept, treated as zero length)", int(neg.sum())))
        dur = np.where(neg, 0.0, dur)
    pids = ev.pid.take(ev_idx)
    tids = ev.tid.take(ev_idx)
    ka = {k: v[ev_idx] for k, v in ev.key_args.items()}
    ext = np.where(ka["external_id"] >= 0, ka["external_id"], ka["external_id_old"])
    lens = ev.args_offsets[1:] - ev.args_offsets[:-1]
    sel_lens = lens[ev_idx]
    args_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sel_lens, out=args_offsets[1:])
    if n == n_all:
        args_blob = ev.args_blob
    else:  # cut out the args of dropped rows (most dropped rows, flows, have none)
        cut = np.flatnonzero(~keep & (lens > 0))
        args_blob = cut_args(ev, cut) if cut.size else ev.args_blob
    report("lanes", 0.6)

    # ---- lanes
    no_ts = np.isnan(ts)
    if no_ts.any():
        nt = int(no_ts.sum())
        warnings.append(LoadWarning("no_timestamp", f"{nt:,} events have no usable timestamp (kept at time 0, "
                                    f"outside the tree; first: {_first_rows(dec, ev_idx[no_ts])})", nt))
    is_gpu = np.isin(kind, [int(k) for k in GPU_KINDS])
    is_host = np.isin(kind, [int(k) for k in HOST_KINDS]) & (ph == ord("X"))
    is_inst = kind == int(Kind.INSTANT)
    pid_code, pid_vals = compact(ev.pid.codes[ev_idx], ev.pid.values)
    tid_code, tid_vals = compact(ev.tid.codes[ev_idx], ev.tid.values)
    pair = pid_code.astype(np.int64) * (len(tid_vals) + 1) + tid_code
    on_stream = _sync_on_streams(kind, is_gpu & ~no_ts, is_host & ~no_ts, pair, pid_code, tid_code, tid_vals)
    is_host_lane = is_host & ~on_stream
    lane_of = np.full(n, -1, dtype=np.int32)
    lane_keys: dict[tuple[bool, int], int] = {}
    lanes_tmp: list[tuple[bool, Any, Any, int]] = []
    # device lanes take their pid/tid from device work first (not from a sync event's pseudo tid)
    for flag, sel in ((False, np.flatnonzero(is_host_lane & ~no_ts)),
                      (True, np.concatenate((np.flatnonzero(is_gpu & ~no_ts), np.flatnonzero(on_stream))))):
        if not sel.size:
            continue
        uniq, first_at, inv = np.unique(pair[sel], return_index=True, return_inverse=True)
        ids = []
        for u, first in zip(uniq.tolist(), sel[first_at].tolist()):
            lane_keys[(flag, u)] = len(lanes_tmp)
            ids.append(len(lanes_tmp))
            lanes_tmp.append((flag, pids[first], tids[first], u))
        lane_of[sel] = np.asarray(ids, dtype=np.int32)[inv]
    # instants sit on a host lane when their thread has one
    inst = np.flatnonzero(is_inst)
    host_keys = sorted((u, li) for (flag, u), li in lane_keys.items() if not flag)
    if inst.size and host_keys:
        hk = np.array([u for u, _ in host_keys], dtype=np.int64)
        hl = np.array([li for _, li in host_keys], dtype=np.int32)
        pos = np.minimum(np.searchsorted(hk, pair[inst]), hk.size - 1)
        on = hk[pos] == pair[inst]
        lane_of[inst[on]] = hl[pos[on]]
    order_l = sorted(range(len(lanes_tmp)), key=lambda k: lane_sort_key(
        lanes_tmp[k][0], lanes_tmp[k][1], lanes_tmp[k][2], psort, tsort))
    remap = np.empty(max(len(lanes_tmp), 1), dtype=np.int32)
    lanes: list[Lane] = []
    for new, old in enumerate(order_l):
        flag, p, t, _ = lanes_tmp[old]
        remap[old] = new
        label, short = lane_labels(flag, p, t, pnames, tnames)
        lanes.append(Lane(new, n + new, flag, p, t, label, lane_sort_key(flag, p, t, psort, tsort), short))
    lane_of = np.where(lane_of >= 0, remap[np.maximum(lane_of, 0)], -1).astype(np.int32)
    n_nodes = n + len(lanes)
    report("nesting", 0.65)

    # ---- host nesting (stack walk per lane, sorted by ts, longer first, outer kinds first)
    parent = np.full(n_nodes, -1, dtype=np.int32)
    nopy_parent = np.full(n_nodes, -1, dtype=np.int32)
    depth = np.zeros(n_nodes, dtype=np.int32)
    nest_host_events(np.flatnonzero(is_host & ~no_ts), lane_of, ts, dur, kind, n, parent, nopy_parent, depth)
    report("gpu links", 0.8)

    # ---- GPU links
    launch_of = np.full(n, -1, dtype=np.int32)
    stats = GpuLinkStats()
    gpu_work = np.flatnonzero(np.isin(kind, [int(k) for k in GPU_WORK_KINDS]) & ~no_ts)
    stats.gpu_events = int(gpu_work.size)
    corr = ka["correlation"]
    launches = np.flatnonzero(np.isin(kind, [int(k) for k in LAUNCH_KINDS]) & (corr >= 0) & ~no_ts
                              & (parent[:n] >= 0))
    dup_corr = 0
    if launches.size and gpu_work.size:
        lc = corr[launches]
        o = np.argsort(lc, kind="stable")
        lc_sorted, l_sorted = lc[o], launches[o]
        dup_corr = int((np.diff(lc_sorted) == 0).sum())
        gc = corr[gpu_work]
        pos = np.searchsorted(lc_sorted, gc)
        pos_c = np.minimum(pos, lc_sorted.size - 1)
        hit = (gc >= 0) & (lc_sorted[pos_c] == gc)
        launch_of[gpu_work[hit]] = l_sorted[pos_c[hit]]
    stats.no_correlation = int((corr[gpu_work] < 0).sum()) if gpu_work.size else 0
    # flows: confirmation, and the link for GPU events that carry no correlation
    n_flows = len(flows.cat)
    launch_cat = np.fromiter(map(LAUNCH_FLOW_CATEGORIES.__contains__, flows.cat), dtype=bool, count=n_flows)
    launch_ends = np.flatnonzero(launch_cat & (flows.ph == ord("f"))).tolist()  # flow rows, file order
    if gpu_work.size:
        linked_mask = launch_of[gpu_work] >= 0
        if launch_ends:
            # integer flow ids of launch flow ends (a GPU event's correlation confirms its link)
            ids = set(_take_list(flows.flow_id, launch_ends))
            int_ids = _int64_values(ids)
            conf = np.isin(corr[gpu_work], int_ids)
            stats.confirmed_by_flow = int((conf & linked_mask).sum())
        missing = gpu_work[(corr[gpu_work] < 0)]
        if missing.size and launch_ends:
            # the flow end sits on the GPU event (same pid, tid, ts); later flows win
            f_end_by_pos = {(flows.pid[j], flows.tid[j], float(flows.ts[j])): flows.flow_id[j] for j in launch_ends}
            corr_to_launch = {int(corr[c]): int(c) for c in launches.tolist()}
            for g in missing.tolist():
                fid = f_end_by_pos.get((pids[g], tids[g], float(ts[g])))
                if fid is not None and isinstance(fid, int) and fid in corr_to_launch:
                    launch_of[g] = corr_to_launch[fid]
                    stats.linked_by_flow_only += 1
            stats.no_correlation -= stats.linked_by_flow_only
        stats.linked = int((launch_of[gpu_work] >= 0).sum())
        stats.launch_missing = stats.gpu_events - stats.linked - stats.no_correlation
    if dup_corr:
        warnings.append(LoadWarning("duplicate_correlation", f"{dup_corr} launch events reuse a correlation id; "
                                    "their GPU work is attached to the first", dup_corr))
    # graph launches
    if launches.size:
        graph_names = {i for i, nm in enumerate(names) if launch_class_of_name(nm) == LaunchClass.GRAPH_LAUNCH}
        if graph_names:
            is_graph = np.isin(name_id[launches], list(graph_names))
            stats.graph_launches = int(is_graph.sum())
            if gpu_work.size:
                lo = launch_of[gpu_work]
                owned = lo >= 0
                stats.graph_kernels = int(np.isin(lo[owned], launches[is_graph]).sum())
    # attach GPU work under its launch; the rest (and GPU annotations) under its stream lane
    gpu_all = np.flatnonzero(is_gpu & ~no_ts)
    lo_all = launch_of[gpu_all]
    parent[gpu_all] = np.where(lo_all >= 0, lo_all, n + lane_of[gpu_all])
    nopy_parent[gpu_all] = parent[gpu_all]
    depth[gpu_all] = np.where(lo_all >= 0, depth[np.maximum(lo_all, 0)] + 1, 1)
    if stats.unlinked:
        warnings.append(LoadWarning(
            "gpu_unlinked", f"{stats.unlinked} of {stats.gpu_events} {device_word_of(cats)} events have no launch "
            "event in the trace; they are listed under their stream", stats.unlinked))
    report("tree", 0.9)

    # ---- CSR children, innermost cpu_op per node
    node_ts = np.zeros(n_nodes, dtype=np.float64)
    node_ts[:n] = np.where(no_ts, 0.0, ts)
    nodes = np.arange(n_nodes)
    child_start, child_index = csr_children(parent, node_ts, nodes)
    own_op = np.full(n_nodes, -1, dtype=np.int64)
    own_op[:n] = np.where(kind == int(Kind.CPU_OP), nodes[:n], -1)
    cpu_op_of = fill_down(parent, depth, own_op, outermost=False).astype(np.int32)  # the innermost cpu_op

    # ---- forward/backward
    fwd_of = _link_fwd_bwd(kind, ka["seq"], ka["fwd_tid"], pids, tids, ts, flows, n)
    report("done", 1.0)
    _warn_unplaced(dec, ev_idx, ph, lane_of, kind, no_ts, warnings)
    if rejected:
        total = sum(rejected.values())
        reasons = "; ".join(f"{c:,} {r} (first: traceEvents[{rejected_first[r]}])" for r, c in rejected.most_common())
        warnings.append(LoadWarning("rejected", f"{total:,} elements of traceEvents are not separate events "
                                    f"in the model: {reasons}", total))
    return KinetoTrace(
        path=path, origin_us=origin, metadata=dec.metadata, ts=np.where(no_ts, 0.0, ts), dur=dur, kind=kind,
        ph=ph, name_id=name_id, names=[str(x) for x in names],
        cat_id=cat_id.astype(np.int16 if len(cats) < 2**15 else np.int32),
        cats=[str(x) for x in cats], pids=pids, tids=tids, correlation=corr, external_id=ext,
        rf_id=ka["rf_id"], seq=ka["seq"], fwd_tid=ka["fwd_tid"], device=ka["device"], stream=ka["stream"],
        args_blob=args_blob, args_offsets=args_offsets, lane_of=lane_of, parent=parent,
        child_start=child_start, child_index=child_index, depth=depth, lanes=lanes, launch_of=launch_of,
        cpu_op_of=cpu_op_of, fwd_of=fwd_of, gpu_stats=stats, flows=flows, process_names=pnames,
        thread_names=tnames, process_labels=plabels, warnings=warnings, rejected=dict(rejected),
        bytes_lost=bytes_lost, nopy_parent=nopy_parent,
        _list_codes={id(pids): (pid_code, pid_vals), id(tids): (tid_code, tid_vals),
                     **{id(getattr(flows, f)): compact(getattr(ev, f).codes[fidx], getattr(ev, f).values)
                        for f in ("cat", "pid", "tid")}})


#: Kineto writes stream synchronisation events (cuda_sync) of stream N on a pseudo thread
#: ``tid`` = N + STREAM_SYNC_TID_OFFSET named "stream N (sync)" (since 2026)
STREAM_SYNC_TID_OFFSET = 1_000_000


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


def _warn_not_understood(cats, cat_id: np.ndarray, ph_all: np.ndarray, warnings: list[LoadWarning]) -> None:
    """Name every category and phase the loader has no rule for, with its event count."""
    unknown = [i for i, c in enumerate(cats) if str(c) not in CATEGORY_KIND and str(c) not in KNOWN_OTHER_CATEGORIES]
    if unknown:
        counts = np.bincount(cat_id, minlength=len(cats))
        for i in sorted(unknown, key=lambda i: (-int(counts[i]), str(cats[i]))):
            c = int(counts[i])
            warnings.append(LoadWarning("unknown_category", f"{c:,} events of category {str(cats[i])!r} are not "
                                        "understood: kept as plain spans on their thread (not device work, no "
                                        "launch link)", c))
    codes, counts = np.unique(ph_all, return_counts=True)
    for code, c in zip(codes.tolist(), counts.tolist()):
        if code and chr(code) in KNOWN_PHASES:
            continue
        what = repr(chr(code)) if code else "missing or not one byte"
        warnings.append(LoadWarning("unknown_phase", f"{c:,} events of phase (ph) {what} are not understood: "
                                    "kept, on no timeline lane", c))


def _refine_device_kinds(kind: np.ndarray, cat_id: np.ndarray, name_id: np.ndarray, cats, names) -> None:
    """Apply :data:`~tracetui.kineto.kinds.DEVICE_NAME_KINDS` (one mask per rule present)."""
    cat_at = {str(c): i for i, c in enumerate(cats)}
    name_at = None
    for (c, nm), k in DEVICE_NAME_KINDS.items():
        ci = cat_at.get(c)
        if ci is None:
            continue
        if name_at is None:
            name_at = {str(x): i for i, x in enumerate(names)}
        ni = name_at.get(nm)
        if ni is not None:
            kind[(cat_id == ci) & (name_id == ni)] = int(k)


def _warn_unplaced(dec: DecodedTrace, ev_idx: np.ndarray, ph: np.ndarray, lane_of: np.ndarray,
                   kind: np.ndarray, no_ts: np.ndarray, warnings: list[LoadWarning]) -> None:
    """Events kept in the columns but on no lane (counters, async spans, other phases): say so.

    Instant events are markers (the profiler writes global ones with no thread); they are
    not reported here.  Counter samples (ph C) are counted here too, although the timeline
    shows them as counter tracks (``kineto/counters.py``)."""
    off = (lane_of < 0) & ~no_ts & (kind != int(Kind.INSTANT))
    if not off.any():
        return
    vals, counts = np.unique(ph[off], return_counts=True)
    phases = ", ".join(f"{chr(v) if v else '(none)'}: {c:,}" for v, c in zip(vals.tolist(), counts.tolist()))
    total = int(off.sum())
    warnings.append(LoadWarning("unplaced", f"{total:,} events are kept but not on any timeline lane "
                                f"(by ph {phases}; first: {_first_rows(dec, ev_idx[off])})", total))


def nest_host_events(host: np.ndarray, lane_of: np.ndarray, ts: np.ndarray, dur: np.ndarray, kind: np.ndarray,
                     n: int, parent: np.ndarray, nopy_parent: np.ndarray, depth: np.ndarray) -> None:
    """Host nesting of the events ``host`` (ids < ``n``; lane roots are ``n + lane``): per lane,
    by start time, longer first, outer kinds first (see :func:`nest_by_time`).  Fills
    ``parent``, ``nopy_parent`` and ``depth`` of those events in place."""
    if not host.size:
        return
    order = np.lexsort((host, _KIND_RANK[kind[host]], -dur[host], ts[host], lane_of[host]))
    nest_by_time(host[order], lane_of, ts, ts + dur, kind, n, parent, nopy_parent, depth)


def nest_by_time(host_sorted: np.ndarray, lane_of: np.ndarray, ts: np.ndarray, end: np.ndarray, kind: np.ndarray,
          n: int, parent: np.ndarray, nopy_parent: np.ndarray, depth: np.ndarray) -> None:
    """Stack walk: each host event's parent is the nearest earlier event still open at its start.

    A child that ends a little after its parent stays the parent's child (TraceLens drops
    those), but for nesting what follows its end is clamped to the parent's end, so an
    event starting after the parent ended never lands inside the overrunning child.
    Events that start exactly when the open event ends are siblings.

    The walk (one Python step per event, lane by lane) finds only the parent, as a
    position in ``host_sorted``; depth and the nearest non-python ancestor follow from
    the parents in a few numpy passes (``tree/propagate.py``).
    """
    m = host_sorted.size
    lanes_s = lane_of[host_sorted]
    ts_l = ts[host_sorted].tolist()
    end_l = end[host_sorted].tolist()
    par: list[int] = []  # position of the parent in host_sorted, -1: the lane is the parent
    append = par.append
    cuts = [0, *(np.flatnonzero(lanes_s[1:] != lanes_s[:-1]) + 1).tolist(), m]
    for a, b in zip(cuts[:-1], cuts[1:]):
        # open events, innermost last: (nesting end, position, duration in µs)
        stack: list[tuple[float, int, float]] = []
        push, pop = stack.append, stack.pop
        for pos, t, e_raw in zip(range(a, b), ts_l[a:b], end_l[a:b]):
            while stack and t >= stack[-1][0]:
                pop()
            e = e_raw if e_raw >= t else t
            # An event longer than the open event it starts in, and ending after it, is not its
            # child: record_function annotations start inside their short Python enter call
            # (`_record_function_enter_new`, `__enter__`).  Close such entries for nesting.
            while stack and e > stack[-1][0] and e - t > stack[-1][2]:
                pop()
            if stack:
                top = stack[-1]
                append(top[1])
                if e > top[0]:
                    # an overrunning child stays a child, but cannot capture events after its parent's end
                    e = top[0]
            else:
                append(-1)
            push((e, pos, e_raw - t))
    par_pos = np.asarray(par, dtype=np.int64)
    has = par_pos >= 0
    root = n + lanes_s.astype(np.int64)
    parent[host_sorted] = np.where(has, host_sorted[np.maximum(par_pos, 0)], root)
    # depth: 1 + the number of host ancestors
    depth[host_sorted] = 1 + ancestor_counts(par_pos)
    # nearest non-python event at or above the parent (the lane when there is none)
    py = kind[host_sorted] == int(Kind.PYTHON)
    up = nearest_kept_ancestor(par_pos, py)
    nopy_parent[host_sorted] = np.where(up >= 0, host_sorted[np.maximum(up, 0)], root)


def _link_fwd_bwd(kind: np.ndarray, seq: np.ndarray, fwd_tid: np.ndarray, pids: list, tids: list,
                  ts: np.ndarray, flows: FlowTable, n: int) -> np.ndarray:
    """Backward op -> forward op: fwdbwd flows first, then the Sequence number."""
    fwd_of = np.full(n, -1, dtype=np.int32)
    ops = np.flatnonzero((kind == int(Kind.CPU_OP)) & (seq >= 0))
    if not ops.size:
        return fwd_of
    bwd = ops[fwd_tid[ops] > 0]
    fwd = ops[fwd_tid[ops] <= 0]
    if not bwd.size or not fwd.size:
        return fwd_of
    # flows: s at the forward op, f at the backward op (same pid/tid/ts)
    pos_to_op: dict = {}
    for i in ops.tolist():
        pos_to_op.setdefault((pids[i], tids[i], float(ts[i])), i)
    starts: dict = {}
    ends: dict = {}
    fwdbwd = np.fromiter(map(FWDBWD_FLOW_CATEGORIES.__contains__, flows.cat), dtype=bool, count=len(flows.cat))
    for j in np.flatnonzero(fwdbwd).tolist():
        key = (flows.pid[j], flows.tid[j], float(flows.ts[j]))
        op = pos_to_op.get(key)
        if op is None:
            continue
        (starts if flows.ph[j] == ord("s") else ends)[flows.flow_id[j]] = op
    for fid, b in ends.items():
        f = starts.get(fid)
        if f is not None:
            fwd_of[b] = f
    # Sequence number: the earliest (outermost) forward op with the same number
    fo = fwd[np.lexsort((ts[fwd], seq[fwd]))]
    fs = seq[fo]
    first = np.concatenate(([True], fs[1:] != fs[:-1]))
    fs_u, fo_u = fs[first], fo[first]
    todo = bwd[fwd_of[bwd] < 0]
    if todo.size:
        p = np.searchsorted(fs_u, seq[todo])
        pc = np.minimum(p, fs_u.size - 1)
        hit = fs_u[pc] == seq[todo]
        fwd_of[todo[hit]] = fo_u[pc[hit]]
    return fwd_of
