"""Build a :class:`KinetoTrace` from decoded columns, as a sequence of named stages.

:func:`build_trace` runs them in order; each takes the columns of the stages before it
(small dataclasses: :class:`~tracetui.kineto.event_columns.AllRows`,
:class:`~tracetui.kineto.event_columns.EventColumns`,
:class:`~tracetui.kineto.placement.Placement`, :class:`~tracetui.kineto.placement.Nesting`)
and appends what it could not read as documented to one warnings list, so the warnings keep
one order.  Everything is columnar but for a few Python walks: the nesting stack walk over
host events, the B/E pairing, the metadata rows and the dictionaries of flow ends.

Stages and where they are: phases and times (origin, B/E merge: here), metadata (here),
flows and event columns (kinds, durations checked: ``event_columns.py``), lanes
(``placement.py``), host nesting (here), GPU links (correlation, flows, graph launches,
attach under launch: ``gpu_links.py``), tree (CSR children, innermost cpu_op: here),
forward/backward (here), the last warnings (here)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from ..errors import LoadWarning
from ..io.interning import compact
from ..tree.csr import csr_children
from ..tree.propagate import ancestor_counts, fill_down, nearest_kept_ancestor
from . import schema
from .columns import DecodedEvents, lenient_decode
from .decode import DecodedTrace
from .event_columns import AllRows, EventColumns, event_columns, first_rows, flow_table
from .gpu_links import link_gpu_work
from .kinds import FWDBWD_FLOW_CATEGORIES, Kind
from .placement import Nesting, Placement, place_on_lanes
from .trace import FlowTable, KinetoTrace

Progress = Callable[[str, float], None]

_FLOW_PH = {"s", "f", "t"}
_E_MERGED = "end events (ph E) merged into their begin event"
_E_ORPHAN = "end events (ph E) without a begin event"
#: tie-break for events with the same start and duration: outer kinds first
_KIND_RANK = np.zeros(32, dtype=np.int8)
for _k, _r in ((Kind.TRACE_SPAN, 0), (Kind.PYTHON, 1), (Kind.ANNOTATION, 2), (Kind.CPU_OP, 3),
               (Kind.OTHER, 4), (Kind.OVERHEAD, 4), (Kind.RUNTIME, 5), (Kind.DRIVER, 6), (Kind.SYNC, 7),
               (Kind.PHASE, 2), (Kind.TRACED_CALL, 6), (Kind.IOCTL, 7), (Kind.RECORD, 8)):
    _KIND_RANK[int(_k)] = _r


def build_trace(path: str, dec: DecodedTrace, progress: Progress | None = None,
                extra_warnings: list[LoadWarning] | None = None, bytes_lost: int = 0,
                plain_categories: frozenset[str] = frozenset()) -> KinetoTrace:
    """The model of one decoded Kineto document (``dec``, consumed: its args blob may be cut in
    place).  ``progress(step, fraction)`` hears the build's steps (fractions 0.55 to 1.0 of
    the whole load); ``extra_warnings`` (the loader's: truncation ...) follow the decode's
    and precede the build's; ``bytes_lost`` is kept on the trace.  ``plain_categories``: the
    categories another format's reader gives events that are plain spans by design (not
    warned about as categories not understood)."""
    report = progress or (lambda msg, frac: None)
    ev = dec.events
    warnings = list(dec.warnings) + list(extra_warnings or [])
    rows = _phases_and_times(ev, warnings)
    report("metadata", 0.55)
    pnames, tnames, psort, tsort, plabels = _metadata_events(dec, np.flatnonzero(rows.is_meta), warnings)
    flows, fidx = flow_table(ev, rows)
    e = event_columns(dec, rows, warnings, plain_categories)
    report("lanes", 0.6)
    pl = place_on_lanes(ev, e, pnames, tnames, psort, tsort)
    report("nesting", 0.65)
    tree = _nest_host(e, pl)
    report("gpu links", 0.8)
    launch_of, stats = link_gpu_work(e, pl, tree, flows, warnings)
    report("tree", 0.9)
    child_start, child_index, cpu_op_of = _children_and_cpu_ops(e, pl, tree)
    ka = e.key_args
    fwd_of = _link_fwd_bwd(e.kind, ka["seq"], ka["fwd_tid"], e.pids, e.tids, e.ts, flows, e.n)
    report("done", 1.0)
    _warn_unplaced(dec, e.rows, e.ph, pl.lane_of, e.kind, e.no_ts, warnings)
    _warn_rejected(rows, warnings)
    cats = e.cats
    return KinetoTrace(
        path=path, origin_us=rows.origin, metadata=dec.metadata, ts=np.where(e.no_ts, 0.0, e.ts), dur=e.dur,
        kind=e.kind, ph=e.ph, name_id=e.name_id, names=[str(x) for x in e.names],
        cat_id=e.cat_id.astype(np.int16 if len(cats) < 2**15 else np.int32),
        cats=[str(x) for x in cats], pids=e.pids, tids=e.tids, correlation=ka["correlation"],
        external_id=e.external_id, rf_id=ka["rf_id"], seq=ka["seq"], fwd_tid=ka["fwd_tid"], device=ka["device"],
        stream=ka["stream"], args_blob=e.args_blob, args_offsets=e.args_offsets, lane_of=pl.lane_of,
        parent=tree.parent, child_start=child_start, child_index=child_index, depth=tree.depth, lanes=pl.lanes,
        launch_of=launch_of, cpu_op_of=cpu_op_of, fwd_of=fwd_of, gpu_stats=stats, flows=flows, process_names=pnames,
        thread_names=tnames, process_labels=plabels, warnings=warnings, rejected=dict(rows.rejected),
        bytes_lost=bytes_lost, nopy_parent=tree.nopy_parent,
        _list_codes={id(e.pids): (pl.pid_code, pl.pid_vals), id(e.tids): (pl.tid_code, pl.tid_vals),
                     **{id(getattr(flows, f)): compact(getattr(ev, f).codes[fidx], getattr(ev, f).values)
                        for f in ("cat", "pid", "tid")}})


# ---- stage: phases and times -----------------------------------------------------------------

def _phases_and_times(ev: DecodedEvents, warnings: list[LoadWarning]) -> AllRows:
    """Stage: phases and times of every decoded row.  The phase codes; the trace origin and
    each row's time in µs from it (``timestamps.py``; outliers have none and are warned
    about); B/E pairs merged into complete events (:func:`_merge_b_e`); which rows become
    events, and the rejected counts (the decode's plus the E rows)."""
    ph_all = _phase_codes(ev)
    is_meta = ph_all == ord("M")
    ts_all, origin = _times_from_origin(ev, is_meta, warnings)
    dur_all = ev.dur.copy()
    is_flow = np.isin(ph_all, [ord(c) for c in _FLOW_PH])
    rejected = Counter(ev.rejected)
    rejected_first = dict(ev.rejected_first)
    drop_e = _merge_b_e(ev, ph_all, ts_all, dur_all, rejected, rejected_first, warnings)
    keep = ~is_meta & ~is_flow & ~drop_e
    return AllRows(ph=ph_all, ts=ts_all, dur=dur_all, origin=origin, is_meta=is_meta, is_flow=is_flow, keep=keep,
                   rejected=rejected, rejected_first=rejected_first)


def _phase_codes(ev: DecodedEvents) -> np.ndarray:
    """uint8 per row: the first character of its phase; 0 for a missing phase, and for one
    whose first character is beyond one byte (no known phase)."""
    ph_first = np.array([ord(p[0]) if p else 0 for p in ev.ph.values] or [0], dtype=np.uint32)
    return np.where(ph_first < 256, ph_first, 0).astype(np.uint8)[ev.ph.codes]


def _times_from_origin(ev: DecodedEvents, is_meta: np.ndarray, warnings: list[LoadWarning]) -> tuple[np.ndarray, int]:
    """(float64 µs of each row from the origin, the origin in absolute integer µs).  The
    origin comes from the non-metadata rows (docs/origin.md); outliers (placeholders such as
    ts 0.0 beside epoch µs) get NaN: no usable time, said in one warning."""
    from .timestamps import choose_origin, relative_times

    origin, ts_outlier = choose_origin(ev.ts_int, ev.ts_frac, is_meta)
    ts_all, origin = relative_times(ev.ts_int, ev.ts_frac, origin)
    if ts_outlier.any():  # placeholders (ts 0.0 beside epoch µs): no usable time, say so
        ts_all[ts_outlier] = np.nan
        n_out = int(ts_outlier.sum())
        warnings.append(LoadWarning("outlier_timestamp", f"{n_out:,} events have a timestamp more than 24 h before "
                                    "the trace's median (e.g. ts 0.0 beside epoch microseconds); they do not set "
                                    "the trace origin (docs/origin.md)", n_out))
    return ts_all, origin


def _merge_b_e(ev: DecodedEvents, ph_all: np.ndarray, ts_all: np.ndarray, dur_all: np.ndarray, rejected: Counter,
               rejected_first: dict, warnings: list[LoadWarning]) -> np.ndarray:
    """Merge the B/E rows (:func:`_merge_begin_end`, per (pid, tid)): a B gets its duration
    in ``dur_all`` (µs) and all B/E rows become ``X`` in ``ph_all`` (both in place).  Gives
    the E rows to drop (bool per row), counted in ``rejected`` (merged, or without a B);
    warns about merged pairs and B rows left open."""
    be = np.flatnonzero((ph_all == ord("B")) | (ph_all == ord("E")))
    drop_e = np.zeros(len(ev.name), dtype=bool)
    if not be.size:
        return drop_e
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
    return drop_e


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


# ---- stage: metadata -------------------------------------------------------------------------

def _metadata_events(dec: DecodedTrace, idx: np.ndarray, warnings: list[LoadWarning]):
    """Stage: metadata.  The names and sort indexes of processes and threads from the metadata
    rows ``idx`` (ph M): (process names by pid, thread names by (pid, tid), process sort
    index by pid, thread sort index by (pid, tid), process labels by pid).  Unreadable args
    are skipped."""
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


# ---- stage: host nesting ---------------------------------------------------------------------

def _nest_host(e: EventColumns, pl: Placement) -> Nesting:
    """Stage: host nesting.  The tree columns over events and lane roots, with the host
    events that have a time nested by time on their lane (:func:`nest_host_events`); the
    GPU events are attached later (``gpu_links.py``)."""
    tree = Nesting.empty(pl.n_nodes)
    nest_host_events(np.flatnonzero(pl.is_host & ~e.no_ts), pl.lane_of, e.ts, e.dur, e.kind, e.n, tree.parent,
                     tree.nopy_parent, tree.depth)
    return tree


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


# ---- stage: tree -----------------------------------------------------------------------------

def _children_and_cpu_ops(e: EventColumns, pl: Placement, tree: Nesting) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stage: tree.  The children of every node in CSR form, each node's in start order
    (events without a time at 0): (int64 offsets, int32 children); and the innermost cpu_op
    at or above each node (int32, -1: none; for GPU work, above its launch)."""
    n, n_nodes = e.n, pl.n_nodes
    node_ts = np.zeros(n_nodes, dtype=np.float64)
    node_ts[:n] = np.where(e.no_ts, 0.0, e.ts)
    nodes = np.arange(n_nodes)
    child_start, child_index = csr_children(tree.parent, node_ts, nodes)
    own_op = np.full(n_nodes, -1, dtype=np.int64)
    own_op[:n] = np.where(e.kind == int(Kind.CPU_OP), nodes[:n], -1)
    cpu_op_of = fill_down(tree.parent, tree.depth, own_op, outermost=False).astype(np.int32)  # the innermost cpu_op
    return child_start, child_index, cpu_op_of


# ---- stage: forward/backward -----------------------------------------------------------------

def _link_fwd_bwd(kind: np.ndarray, seq: np.ndarray, fwd_tid: np.ndarray, pids: list, tids: list,
                  ts: np.ndarray, flows: FlowTable, n: int) -> np.ndarray:
    """Stage: forward/backward.  Backward op -> forward op, int32 per event (-1: none), over
    the cpu_ops with a Sequence number (``seq`` >= 0; a backward op has a ``fwd_tid`` > 0):
    fwdbwd flows first (``s`` on the forward op, ``f`` on the backward op: same pid, tid and
    ts in µs), then, for the rest, the earliest (outermost) forward op with the same
    Sequence number."""
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


# ---- stage: the last warnings ----------------------------------------------------------------

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
                                f"(by ph {phases}; first: {first_rows(dec, ev_idx[off])})", total))


def _warn_rejected(rows: AllRows, warnings: list[LoadWarning]) -> None:
    """One warning for the elements of traceEvents that are not separate events in the model
    (the decode's rejects, merged and orphan E rows), by reason, most first, each with the
    traceEvents index of its first."""
    rejected, rejected_first = rows.rejected, rows.rejected_first
    if rejected:
        total = sum(rejected.values())
        reasons = "; ".join(f"{c:,} {r} (first: traceEvents[{rejected_first[r]}])" for r, c in rejected.most_common())
        warnings.append(LoadWarning("rejected", f"{total:,} elements of traceEvents are not separate events "
                                    f"in the model: {reasons}", total))
