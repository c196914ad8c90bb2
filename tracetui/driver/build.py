"""Build a :class:`~tracetui.driver.trace.DriverTrace` from the decoded lines of a
driver-call trace, as a sequence of named stages (:func:`build_driver_trace` runs them).

Events, in this order: the calls and ioctls (begin/end lines paired by
:mod:`~tracetui.driver.pairing`), the sidecar's entries, the records, and the pipeline
phases (:mod:`~tracetui.driver.pipeline`, one span per phase and thread).  Tree: one lane
per (pid, tid); calls, ioctls, entries and phases nest by time as Kineto host events do;
a record's parent is the call it belongs to, else the phase (or lane) it falls in.
Times are µs from the first event of the file, on the file's own clock.

Stages: calls, entries and records (:func:`_calls_entries_records`), event columns
(:func:`_event_columns`), phases (:func:`_add_phases`), lanes (:func:`_thread_lanes`), tree
(:func:`_tree`), numbers per event (:func:`_numbers_per_event`), args (:func:`_args_blob`),
warnings (:func:`_warn`, :func:`_warn_layouts`).  The event name table grows in that order
(inferred call names, record names, phase names), so name ids do not depend on anything else.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field

import numpy as np

from .. import units
from ..errors import LoadWarning
from ..kineto.build import nest_host_events
from ..kineto.kinds import Kind
from ..kineto.lanes import Lane
from ..kineto.trace import FlowTable, GpuLinkStats
from ..tree.csr import csr_children
from .lines import BAD_FIELDS, DecodedLines
from .pairing import Calls, Flag, Role, attach_records, bcc_record_calls, pair_calls
from .pipeline import call_class, phases
from .rows import UNNAMED_CALL, Rows, row_columns
from .schema import (
    CAT_CALL,
    CAT_IOCTL,
    CAT_PHASE,
    CAT_RECORD,
    DIRECTION_CODES,
    LAYOUT_TITLES,
    LAYOUTS,
    RECORD_CALL_PREFIX,
    RECORD_NAMES,
    RECORD_SLACK_US,
    What,
)
from .trace import NO_VALUE, DriverTrace

_CATS = [CAT_CALL, CAT_IOCTL, CAT_RECORD, CAT_PHASE]
#: the name a BCC call gets from the record it holds
_INFERRED = {What.LAUNCH: "cuLaunchKernel", What.ALLOC: "cuMemAlloc", What.TRANSFER: "cuMemcpy"}


class _Names:
    """The event name table, grown as records and phases are named."""

    def __init__(self, names: list[str]) -> None:
        self.names = list(names)
        self.at = {nm: k for k, nm in enumerate(self.names)}

    def __call__(self, nm: str) -> int:
        k = self.at.get(nm)
        if k is None:
            k = self.at[nm] = len(self.names)
            self.names.append(nm)
        return k


@dataclass
class _Parts:
    """The lines that become events, as rows of :class:`~tracetui.driver.rows.Rows`.

    ``calls``: the paired calls and ioctls; ``first``: int64 row of each call's first line
    (its begin line, else its end line); ``call_name``: int32 name id per call (never -1).
    ``entries``: the sidecar's entry rows; ``recs``: the record rows, ``rec_what`` their
    :class:`What`, ``rec_call``: int64 per record, the call it belongs to (-1: none found
    yet; the tree stage attaches the rest)."""

    calls: Calls
    first: np.ndarray
    call_name: np.ndarray
    entries: np.ndarray
    recs: np.ndarray
    rec_what: np.ndarray
    rec_call: np.ndarray


@dataclass
class _Events:
    """The event columns, length ``n``: calls, then entries, records (from ``base``), phase
    spans (from ``n_ev``).  ``ts``/``dur``: float64 µs from the file's first event;
    ``what``: uint8 :class:`What`; ``thread``: int64 code into ``Rows.threads``;
    ``name_id``: int32; ``kind``: uint8 Kind; ``cat``: int16 into the categories.  ``src``
    (length ``n_ev``): int64 row of each event's first line; ``end_src``: a call's end
    line's row (-1: none).  ``phase_args``: the phase spans' args, JSON bytes."""

    ts: np.ndarray
    dur: np.ndarray
    what: np.ndarray
    thread: np.ndarray
    name_id: np.ndarray
    kind: np.ndarray
    cat: np.ndarray
    src: np.ndarray
    end_src: np.ndarray
    n_calls: int
    base: int
    n_ev: int
    phase_args: list[bytes] = field(default_factory=list)

    @property
    def n(self) -> int:
        return int(self.ts.size)


@dataclass
class _Tree:
    """The tree over the nodes (events, then one root per lane, length n_nodes): int32
    ``parent`` (-1: a lane root), ``nopy_parent`` (the same: no python events here),
    ``depth``; CSR children (int64 ``child_start``, int32 ``child_index``, in start
    order); ``loose``: records that belong to no call."""

    parent: np.ndarray
    nopy_parent: np.ndarray
    depth: np.ndarray
    child_start: np.ndarray
    child_index: np.ndarray
    loose: int


def build_driver_trace(path: str, dec: DecodedLines, warnings: list[LoadWarning] | None = None) -> DriverTrace:
    """The model of one decoded driver-call file (``dec``).  ``warnings`` (the loader's:
    truncation) come first; the build's follow, in the order of :func:`_warn`, then the
    layouts warning.  Times are shifted by the fraction of the file's first event's µs, so
    ``origin_us`` is a whole µs."""
    warnings = list(warnings or [])
    rows = row_columns(dec)
    name_index = _Names(rows.names)
    parts = _calls_entries_records(rows, name_index)
    ev = _event_columns(rows, parts, name_index)
    _add_phases(rows, ev, name_index)
    lanes, lane_of = _thread_lanes(rows, ev.thread, ev.n)
    tree = _tree(rows, parts, ev, lanes, lane_of, name_index)
    numbers = _numbers_per_event(dec, rows, parts, ev)
    blob, offsets = _args_blob(dec, rows, parts.calls, ev.src, ev.phase_args)
    _warn(warnings, dec, rows, parts.calls.flags, tree.loose)
    per_layout = _warn_layouts(rows, warnings)
    n, n_nodes = ev.n, ev.n + len(lanes)
    origin = int(np.floor(rows.origin_us))
    shift = rows.origin_us - origin
    threads = rows.threads
    pids = [threads[c][0] for c in ev.thread.tolist()]
    tids = [threads[c][1] for c in ev.thread.tolist()]
    return DriverTrace(
        path=path, origin_us=origin, metadata={}, ts=ev.ts + shift, dur=ev.dur, kind=ev.kind,
        ph=np.full(n, ord("X"), np.uint8), name_id=ev.name_id, names=name_index.names, cat_id=ev.cat,
        cats=list(_CATS), pids=pids, tids=tids, correlation=np.full(n, -1, np.int64),
        external_id=np.full(n, -1, np.int64), rf_id=np.zeros(n, np.int64), seq=np.full(n, -1, np.int64),
        fwd_tid=np.full(n, -1, np.int64), device=np.full(n, -1, np.int64), stream=np.full(n, -1, np.int64),
        args_blob=blob, args_offsets=offsets, lane_of=lane_of, parent=tree.parent, child_start=tree.child_start,
        child_index=tree.child_index, depth=tree.depth, lanes=lanes, launch_of=np.full(n, -1, np.int32),
        cpu_op_of=np.full(n_nodes, -1, np.int32), fwd_of=np.full(n, -1, np.int32), gpu_stats=GpuLinkStats(),
        flows=FlowTable(np.zeros(0, np.uint8), [], [], [], [], np.zeros(0)), warnings=warnings,
        nopy_parent=tree.nopy_parent, first=0, what=ev.what, **numbers, lines=dec.stats, layouts=per_layout,
        driver_path=path)


# ---- stage: calls, entries and records -------------------------------------------------------

def _calls_entries_records(rows: Rows, name_index: _Names) -> _Parts:
    """Stage: calls, entries and records.  Pairs the begin/end lines into calls
    (:func:`~tracetui.driver.pairing.pair_calls`); finds the entries and the records; a BCC
    record names the unnamed call it precedes (:func:`_name_bcc_calls`); a call still
    without a name is named :data:`~tracetui.driver.rows.UNNAMED_CALL`."""
    calls = pair_calls(rows.thread, rows.ts, rows.role, rows.depth, rows.name_id, rows.op_id, rows.duration_us)
    first = np.where(calls.begin_row >= 0, calls.begin_row, calls.end_row)
    call_name = rows.name_id[first].copy()
    entries = np.flatnonzero(rows.what == What.ENTRY)
    recs = np.flatnonzero(np.isin(rows.role, [Role.RECORD, Role.RECORD_BEFORE_BEGIN, Role.RECORD_BEFORE_END]))
    rec_call = bcc_record_calls(recs, rows.role[recs], rows.thread, rows.ts, rows.role, calls)
    _name_bcc_calls(rows, calls, call_name, recs, rec_call, name_index)
    if (call_name < 0).any():
        call_name[call_name < 0] = name_index(UNNAMED_CALL)
    return _Parts(calls=calls, first=first, call_name=call_name, entries=entries, recs=recs,
                  rec_what=rows.what[recs], rec_call=rec_call)


def _name_bcc_calls(rows: Rows, calls: Calls, call_name: np.ndarray, recs: np.ndarray, rec_call: np.ndarray,
                    name_index: _Names) -> None:
    """BCC lines carry no function name: an unnamed call holding a launch, allocation or
    copy record is named after it (:data:`_INFERRED`) and flagged ``NAME_INFERRED`` (in
    place in ``call_name`` and ``calls.flags``)."""
    named_by = np.flatnonzero(rec_call >= 0)
    named_by = named_by[call_name[rec_call[named_by]] < 0]
    for w, nm in _INFERRED.items():
        sel = named_by[rows.what[recs[named_by]] == w]
        if sel.size:
            call_name[rec_call[sel]] = name_index(nm)
            calls.flags[rec_call[sel]] |= np.uint8(Flag.NAME_INFERRED)


# ---- stage: event columns --------------------------------------------------------------------

def _event_columns(rows: Rows, parts: _Parts, name_index: _Names) -> _Events:
    """Stage: event columns of the calls, entries and records (phases come next): times in
    µs (a call from its begin to its end; entries and records are points, except a transfer
    record that gives its length), names (:func:`_name_records`), kinds and categories."""
    calls, entries, recs = parts.calls, parts.entries, parts.recs
    n_calls, n_entries, n_rec = calls.size, int(entries.size), int(recs.size)
    base = n_calls + n_entries
    n_ev = base + n_rec
    ts = np.concatenate((calls.start, rows.ts[entries], rows.ts[recs]))
    dur = np.concatenate((calls.end - calls.start, np.zeros(n_entries + n_rec)))
    src = np.concatenate((parts.first, entries, recs))  # the row of each event's first line
    end_src = np.concatenate((calls.end_row, np.full(n_entries + n_rec, -1, np.int64)))
    what = rows.what[src]
    thread = np.concatenate((calls.thread, rows.thread[entries], rows.thread[recs]))
    name_id = np.concatenate((parts.call_name, rows.name_id[entries], np.zeros(n_rec, np.int32))).astype(np.int32)
    _name_records(rows, recs, parts.rec_what, name_id[base:], ts[base:], dur[base:], name_index)
    kind = np.full(n_ev, int(Kind.RECORD), dtype=np.uint8)
    cat = np.full(n_ev, _CATS.index(CAT_RECORD), dtype=np.int16)
    is_api = (what == What.CALL) | (what == What.ENTRY)
    kind[is_api] = int(Kind.TRACED_CALL)
    cat[is_api] = _CATS.index(CAT_CALL)
    kind[what == What.IOCTL] = int(Kind.IOCTL)
    cat[what == What.IOCTL] = _CATS.index(CAT_IOCTL)
    return _Events(ts=ts, dur=dur, what=what, thread=thread, name_id=name_id, kind=kind, cat=cat, src=src,
                   end_src=end_src, n_calls=n_calls, base=base, n_ev=n_ev)


def _name_records(rows: Rows, recs: np.ndarray, rec_what: np.ndarray, name_id: np.ndarray, ts: np.ndarray,
                  dur: np.ndarray, name_index: _Names) -> None:
    """Name the records (``name_id``, in place: the records' part of the column) by their
    kind (:data:`~tracetui.driver.schema.RECORD_NAMES`), a transfer by its direction; a
    transfer record is printed when the transfer ends, with its length: it gets that
    duration (ms in the line, µs in ``dur``) and starts that much earlier (``ts``)."""
    for w in np.unique(rec_what).tolist():
        nm = RECORD_NAMES.get(What(w), f"record ({What(w).name.lower()})")
        name_id[rec_what == w] = name_index(nm)
    rec_dir = rows.direction[recs]
    for d in range(4):  # transfers are named by their direction
        sel = (rec_what == What.TRANSFER) & (rec_dir == d)
        if sel.any():
            name_id[sel] = name_index(f"transfer {DIRECTION_CODES[d]}" if d else "transfer")
    dms = rows.duration_ms[recs]
    has_len = (rec_what == What.TRANSFER) & (np.nan_to_num(dms, nan=-1.0) >= 0)
    dur[has_len] = dms[has_len] * 1e3
    ts[has_len] -= dur[has_len]


# ---- stage: phases ---------------------------------------------------------------------------

def _add_phases(rows: Rows, ev: _Events, name_index: _Names) -> None:
    """Stage: phases.  Appends to ``ev``'s columns one span per phase and thread, from the
    calls of each process (:func:`_phase_spans`; the call classes are those of the names
    known before the phases are named), and keeps their args in ``ev.phase_args``."""
    cls_of_name = np.array([int(call_class(nm)) for nm in name_index.names], dtype=np.uint8)
    ph = _phase_spans(rows, ev.ts, ev.dur, ev.what, ev.thread, ev.name_id, cls_of_name, name_index)
    n_ph = ph[0].size
    ev.ts = np.concatenate((ev.ts, ph[0]))
    ev.dur = np.concatenate((ev.dur, ph[1]))
    ev.thread = np.concatenate((ev.thread, ph[2]))
    ev.name_id = np.concatenate((ev.name_id, ph[3]))
    ev.what = np.concatenate((ev.what, np.full(n_ph, int(What.PHASE), np.uint8)))
    ev.kind = np.concatenate((ev.kind, np.full(n_ph, int(Kind.PHASE), np.uint8)))
    ev.cat = np.concatenate((ev.cat, np.full(n_ph, _CATS.index(CAT_PHASE), np.int16)))
    ev.phase_args = ph[4]


def _phase_spans(rows: Rows, ts, dur, what, thread, name_id, cls_of_name, name_index: _Names):
    """(ts, dur, thread, name_id, args) of the phase spans: per process, per phase, per
    thread, from the first call of the thread in that phase to the end of its last."""
    out_ts: list[float] = []
    out_end: list[float] = []
    out_th: list[int] = []
    out_nm: list[int] = []
    out_args: list[bytes] = []
    api = np.flatnonzero((what == What.CALL) | (what == What.ENTRY))
    if api.size:
        proc = np.array([hash(p) for p, _ in rows.threads], dtype=np.int64)[thread[api]]
        for p in np.unique(proc).tolist():
            sel = api[proc == p]
            plist = phases(ts[sel], ts[sel] + dur[sel], cls_of_name[name_id[sel]])
            which = np.searchsorted(np.array([x.start for x in plist]), ts[sel], side="right") - 1
            for k, phase in enumerate(plist):
                in_ph = sel[which == k]
                for t in np.unique(thread[in_ph]).tolist():
                    ev = in_ph[thread[in_ph] == t]
                    out_ts.append(float(ts[ev].min()))
                    # a hair past the last call's end, so a call of no length at the end nests inside
                    out_end.append(float(np.nextafter((ts[ev] + dur[ev]).max(), np.inf)))
                    out_th.append(t)
                    out_nm.append(name_index(f"phase: {phase.name}"))
                    out_args.append(b'{"phase":"%s","calls on this thread":%d,"rule":"docs/driver.md#phases"}'
                                    % (phase.name.encode(), ev.size))
    return (np.asarray(out_ts, np.float64), np.asarray(out_end, np.float64) - np.asarray(out_ts, np.float64),
            np.asarray(out_th, np.int64), np.asarray(out_nm, np.int32), out_args)


def _phase_at(t: np.ndarray, lane: np.ndarray, ph_ts: np.ndarray, ph_dur: np.ndarray,
              ph_lane: np.ndarray) -> np.ndarray:
    """Index of the phase span of the same lane holding each time, -1 for none."""
    out = np.full(t.size, -1, dtype=np.int64)
    for i, (tt, ln) in enumerate(zip(t.tolist(), lane.tolist())):
        hit = np.flatnonzero((ph_lane == ln) & (ph_ts <= tt) & (ph_ts + ph_dur >= tt))
        if hit.size:
            out[i] = hit[0]
    return out


# ---- stage: lanes ----------------------------------------------------------------------------

def _thread_lanes(rows: Rows, thread: np.ndarray, n: int) -> tuple[list[Lane], np.ndarray]:
    """Stage: lanes.  One host lane per thread that has events, by pid then tid (ints before
    other values), lane ``k`` being node ``n + k``; and each event's lane (int32)."""
    threads = rows.threads
    used = np.unique(thread).tolist()
    used.sort(key=lambda c: (_num(threads[c][0]), _num(threads[c][1])))
    lane_of_thread = np.full(max(len(threads), 1), -1, dtype=np.int32)
    lanes: list[Lane] = []
    for li, c in enumerate(used):
        pid, tid = threads[c]
        lane_of_thread[c] = li
        if tid is None or tid == pid:
            label = f"process {pid}" if pid is not None else "traced process"
        else:
            label = f"thread {tid}" + (f" (pid {pid})" if pid is not None else "")
        lanes.append(Lane(li, n + li, False, pid, tid, label, (0, _num(pid), _num(tid)), f"T {tid}"))
    lane_of = lane_of_thread[thread] if n else np.zeros(0, np.int32)
    return lanes, lane_of


def _num(v: object) -> tuple[int, object]:
    return (0, v) if isinstance(v, int) else (1, str(v))


# ---- stage: tree -----------------------------------------------------------------------------

def _tree(rows: Rows, parts: _Parts, ev: _Events, lanes: list[Lane], lane_of: np.ndarray,
          name_index: _Names) -> _Tree:
    """Stage: tree.  Calls, entries and phases nest by time on their lane
    (:func:`~tracetui.kineto.build.nest_host_events`); records go under their call
    (:func:`_records_under_calls`), else in the phase they fall in, else on their lane.
    Gives the parent columns and the CSR children (children in start order)."""
    n, n_ev, n_calls = ev.n, ev.n_ev, ev.n_calls
    n_nodes = n + len(lanes)
    parent = np.full(n_nodes, -1, dtype=np.int32)
    nopy_parent = np.full(n_nodes, -1, dtype=np.int32)
    depth = np.zeros(n_nodes, dtype=np.int32)
    nested = np.concatenate((np.arange(ev.base), np.arange(n_ev, n))).astype(np.int64)
    nest_host_events(nested, lane_of, ev.ts, ev.dur, ev.kind, n, parent, nopy_parent, depth)
    call_parent = parent[:n_calls].astype(np.int64)
    call_parent = np.where(call_parent < n_calls, call_parent, -1)
    on_call = _records_under_calls(rows, parts, call_parent, name_index)
    rec_call = parts.rec_call
    rec_ev = ev.base + np.arange(parts.recs.size)
    parent[rec_ev[on_call]] = rec_call[on_call]
    depth[rec_ev[on_call]] = depth[rec_call[on_call]] + 1
    loose = rec_ev[~on_call]
    if loose.size:  # records of no call: in the phase they fall in, else on their lane
        ts, dur = ev.ts, ev.dur
        where = _phase_at(ts[loose], lane_of[loose], ts[n_ev:], dur[n_ev:], lane_of[n_ev:])
        parent[loose] = np.where(where >= 0, n_ev + where, n + lane_of[loose])
        depth[loose] = np.where(where >= 0, 2, 1)
    nopy_parent[:] = parent
    node_ts = np.zeros(n_nodes)
    node_ts[:n] = ev.ts
    child_start, child_index = csr_children(parent, node_ts, np.arange(n_nodes))
    return _Tree(parent=parent, nopy_parent=nopy_parent, depth=depth, child_start=child_start,
                 child_index=child_index, loose=int((~on_call).sum()))


def _records_under_calls(rows: Rows, parts: _Parts, call_parent: np.ndarray, name_index: _Names) -> np.ndarray:
    """Find the call of each plain record not yet attached: the call of its thread open
    around it (within :data:`~tracetui.driver.schema.RECORD_SLACK_US`) whose name takes
    that kind of record (:data:`~tracetui.driver.schema.RECORD_CALL_PREFIX`;
    :func:`~tracetui.driver.pairing.attach_records`).  Fills ``parts.rec_call`` in place;
    gives the records that have a call (bool per record)."""
    takes = np.zeros(len(name_index.names), dtype=np.uint8)
    for w, prefixes in RECORD_CALL_PREFIX.items():
        for k, nm in enumerate(name_index.names):
            if nm.startswith(prefixes):
                takes[k] = int(w)
    wants = np.array([int(w) if What(w) in RECORD_CALL_PREFIX else 0 for w in range(len(What))],
                     np.uint8)[parts.rec_what]
    rec_call, recs = parts.rec_call, parts.recs
    rest = np.flatnonzero(rec_call < 0)
    rest = rest[(rows.role[recs[rest]] == Role.RECORD)]
    rec_call[rest] = attach_records(recs[rest], wants[rest], rows.thread, rows.ts, parts.calls,
                                    takes[parts.call_name], call_parent)
    return rec_call >= 0


# ---- stage: numbers per event ----------------------------------------------------------------

def _numbers_per_event(dec: DecodedLines, rows: Rows, parts: _Parts, ev: _Events) -> dict[str, np.ndarray]:
    """Stage: numbers per event, the :class:`~tracetui.driver.trace.DriverTrace` columns read
    from each event's line (phases have none): return value (of the end line), 1-based line
    numbers of the first and the end line (-1: none), pairing flags, bytes, direction,
    grid and block (n x 3), ioctl command, layout; -1 (0 for codes) where there is none."""
    n = ev.n
    retval = np.full(n, NO_VALUE, dtype=np.int64)
    ended = np.flatnonzero(ev.end_src >= 0)
    retval[ended] = rows.retval[ev.end_src[ended]]
    src_all = np.concatenate((ev.src, np.full(n - ev.n_ev, -1, np.int64)))
    has_src = src_all >= 0

    def per_event(col: np.ndarray, missing) -> np.ndarray:
        out = np.full((n,) + col.shape[1:], missing, dtype=col.dtype)
        out[has_src] = col[src_all[has_src]]
        return out

    line_no = np.full(n, -1, dtype=np.int64)
    line_no[has_src] = dec.line_no[rows.line[src_all[has_src]]]
    end_line_no = np.full(n, -1, dtype=np.int64)
    end_line_no[ended] = dec.line_no[rows.line[ev.end_src[ended]]]
    flags = np.zeros(n, dtype=np.uint8)
    flags[:ev.n_calls] = parts.calls.flags
    return dict(
        flags=flags, line_no=line_no, end_line_no=end_line_no, retval=retval, size=per_event(rows.size, -1),
        total_allocated=per_event(rows.total_allocated, -1), direction=per_event(rows.direction, 0),
        grid=per_event(rows.grid, -1), block=per_event(rows.block, -1), ioctl_cmd=per_event(rows.cmd, -1),
        layout=per_event(rows.layout, 0))


# ---- stage: args -----------------------------------------------------------------------------

_BOTH = b'{"begin":%b,"end":%b}'
_CHUNK = 1 << 16


def _args_blob(dec: DecodedLines, rows: Rows, calls, src: np.ndarray, phase_args: list[bytes]):
    """Each event's args, as JSON bytes: ``{"begin": <line>, "end": <line>}`` for a call
    (either part alone when a line is missing), the line itself for an entry or a record,
    then the phases' own.  Written chunk by chunk into one anonymous map that is kept as
    the blob (its slices are bytes), so the pieces of a million events never coexist."""
    line = rows.line
    nc = calls.size
    has_b, has_e = calls.begin_row >= 0, calls.end_row >= 0
    lb = np.where(has_b, line[np.maximum(calls.begin_row, 0)], 0)
    le = np.where(has_e, line[np.maximum(calls.end_row, 0)], 0)
    nb = np.where(has_b, dec.end[lb] - dec.start[lb], 0)
    ne = np.where(has_e, dec.end[le] - dec.start[le], 0)
    call_len = np.where(has_b & has_e, len(_BOTH) - 4, np.where(has_b, len(b'{"begin":}'), len(b'{"end":}'))) + nb + ne
    lr = line[src[nc:]]
    lens = np.concatenate((call_len, dec.end[lr] - dec.start[lr],
                           np.fromiter(map(len, phase_args), np.int64, len(phase_args))))
    offsets = np.zeros(lens.size + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    blob = mmap.mmap(-1, max(int(offsets[-1]), 1))
    for c0 in range(0, nc, _CHUNK):
        c1 = min(c0 + _CHUNK, nc)
        pieces = list(map(_BOTH.__mod__, zip(dec.raw_many(lb[c0:c1]), dec.raw_many(le[c0:c1]))))
        for k in np.flatnonzero(~(has_b[c0:c1] & has_e[c0:c1])).tolist():  # a line is missing: rare
            i = c0 + k
            pieces[k] = b'{"begin":%b}' % dec.raw(lb[i]) if has_b[i] else b'{"end":%b}' % dec.raw(le[i])
        blob[int(offsets[c0]):int(offsets[c1])] = b"".join(pieces)
    for c0 in range(0, lr.size, _CHUNK * 4):
        c1 = min(c0 + _CHUNK * 4, lr.size)
        blob[int(offsets[nc + c0]):int(offsets[nc + c1])] = b"".join(dec.raw_many(lr[c0:c1]))
    at = nc + lr.size
    blob[int(offsets[at]):int(offsets[-1])] = b"".join(phase_args)
    return blob, offsets


# ---- stage: warnings -------------------------------------------------------------------------

def _warn(warnings: list[LoadWarning], dec: DecodedLines, rows: Rows, call_flags: np.ndarray, loose: int) -> None:
    """Everything that was not read as documented is named, with its count."""
    st = dec.stats
    if st.skipped_total:
        reasons = "; ".join(f"{c:,} {r} (first: line {st.first_skipped[r]})" for r, c in st.skipped.most_common())
        warnings.append(LoadWarning("skipped_lines", f"{st.skipped_total:,} of {st.total:,} lines are not events: "
                                    f"{reasons}", st.skipped_total))
    for reason, c in rows.dropped.most_common():
        warnings.append(LoadWarning("unread_lines", f"{c:,} {reason}: not in the model", c))
    if st.bad_fields:
        warnings.append(LoadWarning("bad_fields", f"{st.bad_fields:,} lines have {BAD_FIELDS}", st.bad_fields))
    for (lay, what), c in rows.unknown_types.most_common():
        warnings.append(LoadWarning("unknown_type", f"{c:,} {lay} lines of {what} are not understood: kept as "
                                    "records on their thread", c))
    for flag, kind, text in (
            (Flag.UNFINISHED, "no_end_line", "have a begin line but no end line: kept, ending where the next call "
                                             "at their depth begins, else at the end of their last child"),
            (Flag.NO_BEGIN, "no_begin_line", "have an end line but no begin line: kept, starting 'duration_us' "
                                             "before their end"),
            (Flag.NAME_INFERRED, "name_inferred", "are BCC calls named from the launch, allocation or copy record "
                                                  "they hold (BCC lines carry no function name)")):
        c = int(((call_flags & flag) != 0).sum())
        if c:
            warnings.append(LoadWarning(kind, f"{c:,} calls {text}", c))
    if rows.negative:
        warnings.append(LoadWarning("negative_duration", f"{rows.negative:,} lines give a negative duration (kept; "
                                    "the event has no length)", rows.negative))
    if loose:
        within = units.us_text(RECORD_SLACK_US, "g")
        warnings.append(LoadWarning("unattached_records", f"{loose:,} records belong to no call of their thread "
                                    f"(none open within {within}): kept in their phase by time", loose))


def _warn_layouts(rows: Rows, warnings: list[LoadWarning]) -> dict[str, int]:
    """Events read per tracer layout (name -> count); lines of several layouts in one file
    are warned about (each keeps its own clock)."""
    per_layout = {LAYOUTS[int(v)]: int(c) for v, c in zip(*np.unique(rows.layout, return_counts=True))}
    if len(per_layout) > 1:
        warnings.append(LoadWarning("mixed_layouts", "lines of several tracer layouts in one file ("
                                    + ", ".join(f"{c:,} {LAYOUT_TITLES[x]}" for x, c in per_layout.items())
                                    + "): each is kept on its own clock, so times are not comparable across them",
                                    len(per_layout)))
    return per_layout
