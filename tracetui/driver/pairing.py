"""Begin and end lines -> calls; records -> the call they belong to.

The rules, as the tracers write their lines (``../shared/FORMATS.md``); every step is a
numpy operation over all rows, with a Python step only per thread that has a begin
without an end:

* An end line closes a begin of the same thread: the begin with the same ``op_id``
  (LD_PRELOAD), else the innermost open begin of the same function (bpftrace's
  ``uprobe:...:cuInit`` and ``uretprobe:...:cuInit`` are both ``cuInit``; BCC's calls are
  unnamed and match as one function).  Begins and ends of one function nest like
  parentheses, so a begin whose end line is missing does not steal a later call's end.
* A begin without an end is kept, flagged ``UNFINISHED``, and ends where the next begin
  at its depth or shallower on its thread begins (its next sibling; tracers give the call
  depth), else at the end of its last child (its own start when it has none).  An ioctl
  begin without an end ends at the next line of its thread.
* An end without a begin is kept, flagged ``NO_BEGIN``: it starts ``duration_us`` before
  its end when the line says so, else it has no length.
* A record belongs to the innermost call open on its thread at its time.  One printed as
  a call returns (an allocation, a transfer) belongs to the call that has just returned
  when that call is of the kind the record names (``RECORD_CALL_PREFIX``) and returned
  within :data:`~tracetui.driver.schema.RECORD_SLACK_US`; one that finds no open call
  belongs to the call that returned within that slack before it, else to the call that
  begins within it after.  BCC prints a launch record just before its call's begin line
  and an allocation or copy record just before its call's end line: those belong to that
  call, which is named from them (``cuLaunchKernel``, ``cuMemAlloc``, ``cuMemcpy``; BCC
  lines carry no function name), flagged ``NAME_INFERRED``.

Times are µs.  Nothing is dropped: every begin and end line ends up in exactly one call.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, IntFlag

import numpy as np

from .schema import RECORD_SLACK_US


class Role(IntEnum):
    """What a row does (a uint8 column)."""

    NONE = 0  #: an entry alone (sidecar): an event of its own, not paired
    BEGIN = 1
    END = 2
    RECORD = 3
    RECORD_BEFORE_BEGIN = 4  #: BCC: printed just before its call's begin line (launch)
    RECORD_BEFORE_END = 5  #: BCC: printed just before its call's end line (allocation, copy)


class Flag(IntFlag):
    """What is unusual about a call (a uint8 column)."""

    NONE = 0
    UNFINISHED = 1  #: no end line: the end is inferred
    NO_BEGIN = 2  #: no begin line: the start comes from the end line's duration
    NAME_INFERRED = 4  #: BCC: the name comes from the record it holds


@dataclass
class Calls:
    """Calls (user-space API calls and kernel-space ioctls), sorted by (thread, start)."""

    begin_row: np.ndarray  #: int64, -1 when the call had no begin line
    end_row: np.ndarray  #: int64, -1 when the call had no end line
    start: np.ndarray  #: float64 µs
    end: np.ndarray  #: float64 µs
    flags: np.ndarray  #: uint8 Flag
    thread: np.ndarray  #: int64 thread code

    @property
    def size(self) -> int:
        return int(self.start.size)


def _consecutive_pairs(rows: np.ndarray, role: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions i where ``rows[i]`` is a begin and ``rows[i+1]`` an end of the same group."""
    if rows.size < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    r = role[rows]
    hit = (r[:-1] == Role.BEGIN) & (r[1:] == Role.END) & (group[:-1] == group[1:])
    i = np.flatnonzero(hit)
    return rows[i], rows[i + 1]


def _group_codes(*keys: np.ndarray) -> np.ndarray:
    """One int64 code per distinct tuple of the (already sorted-by) keys, in order."""
    if not keys[0].size:
        return np.zeros(0, np.int64)
    change = np.zeros(keys[0].size, dtype=bool)
    change[0] = True
    for k in keys:
        change[1:] |= k[1:] != k[:-1]
    return np.cumsum(change) - 1


def pair_calls(thread: np.ndarray, ts: np.ndarray, role: np.ndarray, depth: np.ndarray, name_id: np.ndarray,
               op_id: np.ndarray, duration_us: np.ndarray) -> Calls:
    """Pair begin and end rows into calls (see the module docstring)."""
    be = np.flatnonzero((role == Role.BEGIN) | (role == Role.END))
    pairs_b: list[np.ndarray] = []
    pairs_e: list[np.ndarray] = []
    # ---- by op_id (LD_PRELOAD): begin then end of the same id
    with_op = be[op_id[be] >= 0]
    if with_op.size:
        s = with_op[np.lexsort((with_op, ts[with_op], op_id[with_op]))]
        b, e = _consecutive_pairs(s, role, op_id[s])
        pairs_b.append(b)
        pairs_e.append(e)
    # ---- by function, per thread, nesting like parentheses
    rest = be[op_id[be] < 0]
    if rest.size:
        s = rest[np.lexsort((rest, ts[rest], name_id[rest], thread[rest]))]
        g = _group_codes(thread[s], name_id[s])
        delta = np.where(role[s] == Role.BEGIN, 1, -1)
        cs = np.cumsum(delta)
        first = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
        base = (cs[first] - delta[first])[g]
        level = cs - base + (role[s] == Role.END)  # the level a begin opens / an end closes
        o = np.lexsort((np.arange(s.size), level, g))
        s2 = s[o]
        b, e = _consecutive_pairs(s2, role, _group_codes(g[o], level[o]))
        pairs_b.append(b)
        pairs_e.append(e)
    pb = np.concatenate(pairs_b) if pairs_b else np.zeros(0, np.int64)
    pe = np.concatenate(pairs_e) if pairs_e else np.zeros(0, np.int64)
    paired = np.zeros(role.size, dtype=bool)
    paired[pb] = True
    paired[pe] = True
    lone_b = be[(role[be] == Role.BEGIN) & ~paired[be]]
    lone_e = be[(role[be] == Role.END) & ~paired[be]]

    begin_row = np.concatenate((pb, lone_b, np.full(lone_e.size, -1, np.int64)))
    end_row = np.concatenate((pe, np.full(lone_b.size, -1, np.int64), lone_e))
    start = np.concatenate((ts[pb], ts[lone_b], ts[lone_e] - np.where(np.nan_to_num(duration_us[lone_e], nan=-1.0) >= 0,
                                                                   duration_us[lone_e], 0.0)))
    end = np.concatenate((np.maximum(ts[pe], ts[pb]), ts[lone_b], ts[lone_e]))
    flags = np.concatenate((np.zeros(pb.size, np.uint8), np.full(lone_b.size, int(Flag.UNFINISHED), np.uint8),
                            np.full(lone_e.size, int(Flag.NO_BEGIN), np.uint8)))
    th = thread[np.where(begin_row >= 0, begin_row, end_row)]
    o = np.lexsort((-end, start, th))
    calls = Calls(begin_row[o], end_row[o], start[o], end[o], flags[o], th[o])
    if lone_b.size:
        _end_unfinished(calls, thread, ts, role, depth)
    return calls


def _end_unfinished(calls: Calls, thread: np.ndarray, ts: np.ndarray, role: np.ndarray, depth: np.ndarray) -> None:
    """Ends of begins without an end line, in place (see the module docstring)."""
    walked = np.flatnonzero((role == Role.BEGIN) | (role == Role.END))
    walked = walked[np.lexsort((walked, ts[walked], thread[walked]))]
    begins = walked[role[walked] == Role.BEGIN]  # by thread, then time
    open_calls = np.flatnonzero((calls.flags & Flag.UNFINISHED) != 0)
    rows = calls.begin_row[open_calls]
    th, t0, d = thread[rows], calls.start[open_calls], depth[rows]
    end = t0.copy()
    # an ioctl (no depth) ends at the next line of its thread
    nodepth = d < 0
    if nodepth.any():
        j = _searchsorted2(np.stack((thread[walked], ts[walked])), th[nodepth], t0[nodepth], side="right")
        jc = np.minimum(j, walked.size - 1)
        ok = (j < walked.size) & (thread[walked[jc]] == th[nodepth])
        end[nodepth] = np.where(ok, ts[walked[jc]], t0[nodepth])
    # a call ends where the next begin at its depth or shallower on its thread begins: per depth
    # value d, the begins at depth <= d, searched once for every open call at depth d
    found = np.zeros(open_calls.size, dtype=bool)
    for dv in np.unique(d[~nodepth]).tolist():
        mine = np.flatnonzero(~nodepth & (d == dv))
        cand = begins[(depth[begins] <= dv) & (depth[begins] >= 0)]
        if not cand.size:
            continue
        j = _searchsorted2(np.stack((thread[cand], ts[cand])), th[mine], t0[mine], side="right")
        # skip the open call itself and begins at the same instant
        jc = np.minimum(j, cand.size - 1)
        ok = (j < cand.size) & (thread[cand[jc]] == th[mine])
        end[mine[ok]] = ts[cand[jc[ok]]]
        found[mine[ok]] = True
    # no later sibling: its last child's end (the latest end of the calls after its start)
    rest = np.flatnonzero(~nodepth & ~found)
    if rest.size:
        by_thread = np.lexsort((calls.start, calls.thread))
        s_th, s_start = calls.thread[by_thread], calls.start[by_thread]
        suffix = np.empty(calls.size)
        for u0, u1 in _bounds_of(s_th):  # the latest end from each position to the thread's last call
            suffix[u0:u1] = np.maximum.accumulate(calls.end[by_thread][u0:u1][::-1])[::-1]
        j = _searchsorted2(np.stack((s_th, s_start)), th[rest], t0[rest], side="right")
        jc = np.minimum(j, calls.size - 1)
        ok = (j < calls.size) & (s_th[jc] == th[rest])
        end[rest] = np.where(ok, np.maximum(suffix[jc], t0[rest]), t0[rest])
    calls.end[open_calls] = np.maximum(end, t0)


def _bounds_of(sorted_codes: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of equal values in a sorted array."""
    if not sorted_codes.size:
        return []
    cut = np.flatnonzero(sorted_codes[1:] != sorted_codes[:-1]) + 1
    lo = np.concatenate(([0], cut))
    hi = np.concatenate((cut, [sorted_codes.size]))
    return list(zip(lo.tolist(), hi.tolist()))


def bcc_record_calls(rec_rows: np.ndarray, rec_role: np.ndarray, thread: np.ndarray, ts: np.ndarray,
                     role: np.ndarray, calls: Calls) -> np.ndarray:
    """BCC records printed just before their call's begin (launch) or end (allocation,
    copy) line: the call (index into ``calls``) each belongs to, -1 for none and for
    records of other roles."""
    out = np.full(rec_rows.size, -1, dtype=np.int64)
    row_call_b = np.full(role.size, -1, np.int64)
    row_call_e = np.full(role.size, -1, np.int64)
    cb, ce = calls.begin_row >= 0, calls.end_row >= 0
    row_call_b[calls.begin_row[cb]] = np.flatnonzero(cb)
    row_call_e[calls.end_row[ce]] = np.flatnonzero(ce)
    for rl, row_call, want in ((Role.RECORD_BEFORE_BEGIN, row_call_b, Role.BEGIN),
                               (Role.RECORD_BEFORE_END, row_call_e, Role.END)):
        sel = np.flatnonzero(rec_role == rl)
        cand = np.flatnonzero(role == want)
        if not sel.size or not cand.size:
            continue
        cand = cand[np.lexsort((cand, ts[cand], thread[cand]))]
        r = rec_rows[sel]
        # the first such line of the same thread at or after the record's time
        pos = _searchsorted2(np.stack((thread[cand], ts[cand])), thread[r], ts[r])
        pos_c = np.minimum(pos, cand.size - 1)
        ok = (pos < cand.size) & (thread[cand[pos_c]] == thread[r])
        out[sel[ok]] = row_call[cand[pos_c[ok]]]
    return out


def attach_records(rec_rows: np.ndarray, rec_wants: np.ndarray, thread: np.ndarray, ts: np.ndarray, calls: Calls,
                   call_takes: np.ndarray, call_parent: np.ndarray) -> np.ndarray:
    """The call (index into ``calls``) each record row belongs to, -1 for none (see the
    module docstring; BCC's records are placed by :func:`bcc_record_calls`).

    ``rec_wants[i]``: the kind of call record ``i`` names (a What code, 0 for none);
    ``call_takes[c]``: the record kind call ``c`` is named for (``cuLaunchKernel`` takes
    launch records ...; 0 for none); ``call_parent[c]``: the call enclosing call ``c`` in the
    time nesting (-1: none).  ``ts`` is µs from the file's first line.
    """
    out = np.full(rec_rows.size, -1, dtype=np.int64)
    if not rec_rows.size or not calls.size:
        return out
    todo = np.arange(rec_rows.size)
    r = rec_rows[todo]
    t = ts[r]
    th = thread[r]
    pos = _searchsorted2(np.stack((calls.thread, calls.start)), th, t, side="right") - 1
    pos_c = np.maximum(pos, 0)
    same = (pos >= 0) & (calls.thread[pos_c] == th)
    cand = np.where(same, pos_c, -1)
    # climb to the enclosing call while the candidate ended before the record (a sibling)
    for _ in range(64):
        closed = (cand >= 0) & (calls.end[np.maximum(cand, 0)] < t)
        if not closed.any():
            break
        cand = np.where(closed, call_parent[np.maximum(cand, 0)], cand)
    # the call that returned last before the record, on its thread
    by_end = np.lexsort((calls.end, calls.thread))
    pe = _searchsorted2(np.stack((calls.thread[by_end], calls.end[by_end])), th, t, side="right") - 1
    pe_c = np.maximum(pe, 0)
    last = np.where((pe >= 0) & (calls.thread[by_end[pe_c]] == th), by_end[pe_c], -1)
    last_ok = (last >= 0) & (t - calls.end[np.maximum(last, 0)] <= RECORD_SLACK_US)
    want = rec_wants[todo]
    pref = want > 0
    comp_last = last_ok & (call_takes[np.maximum(last, 0)] == want)
    comp_cand = (cand >= 0) & (call_takes[np.maximum(cand, 0)] == want)
    choice = np.where(pref & ~comp_cand & comp_last, last, cand)
    choice = np.where((choice < 0) & last_ok & (~pref | comp_last), last, choice)
    # still nothing: the call that begins within the slack after the record
    nxt = _searchsorted2(np.stack((calls.thread, calls.start)), th, t, side="left")
    nxt_c = np.minimum(nxt, calls.size - 1)
    nxt_ok = (nxt < calls.size) & (calls.thread[nxt_c] == th) & (calls.start[nxt_c] - t <= RECORD_SLACK_US)
    choice = np.where((choice < 0) & nxt_ok, nxt_c, choice)
    out[todo] = choice
    return out


def _searchsorted2(keys: np.ndarray, k0: np.ndarray, k1: np.ndarray, side: str = "left") -> np.ndarray:
    """searchsorted over rows sorted by (key0, key1), key0 a small non-negative integer code
    and key1 a time in µs from the file's first line: one combined float64 key per row
    (exact to well under a ns for traces of days and thousands of threads)."""
    a0, a1 = keys[0], keys[1].astype(np.float64)
    if not a0.size:
        return np.zeros(k0.size, np.int64)
    span = float(max(np.nanmax(a1), np.nanmax(k1) if k1.size else 0.0)) + 1.0
    return np.searchsorted(a0 * span + a1, k0 * span + k1.astype(np.float64), side=side)
