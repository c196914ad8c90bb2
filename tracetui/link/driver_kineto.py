"""A driver-call trace linked to the Kineto trace of the same run (``tracetui KINETO
--driver FILE.jsonl``).

What is linked: the Kineto runtime/driver calls that launch kernels, copy, set memory,
synchronize, allocate or free (``cudaLaunchKernel``, ``cudaMemcpyAsync`` ...) and the
driver calls that do the same (``cuLaunchKernel``, ``cuMemcpyHtoDAsync_v2`` ...), per thread,
in time order.  The two traces have different clocks (a tracer writes milliseconds since it
started, or CLOCK_MONOTONIC seconds), so times alone cannot pair them; the order can:

1. Each call becomes a code: what it does (``driver/pipeline.call_class``) and, for a kernel
   launch, the grid and block of its kernel (Kineto: the kernel it launched; driver trace:
   its launch record) when both traces have them.
2. Threads are paired: same thread id first, else the driver thread whose calls align best.
3. Per thread pair, the shift between the two sequences (the profiler usually records a
   window of the run the tracer saw whole) is found by voting: runs of four codes that
   occur in both sequences propose shifts; the shift with the most equal codes wins, ties
   going to the one whose time differences are the most constant.  Threads are linked
   largest first; for each thread after the first, the shift that puts each of its calls
   beside the driver call nearest in time, at the clock offset of the pairs linked so far
   (one clock per run), is a candidate too: a thread whose calls are all alike (an autograd
   thread that only launches kernels, in a capture without grid and block) proposes every
   shift equally, and voting alone picks one at random.
4. Calls with equal codes at that shift are linked.  The clock offset is the median of their
   start-time differences (driver clock -> Kineto clock, µs); its uncertainty the robust
   spread (1.4826 x the median absolute deviation).  A pair whose difference lies further
   than ``max(10 x spread, 200 µs)`` from the median is not linked (counted).

Links are heuristic and flagged as such.  The driver call starts a few µs after its
runtime call (the runtime's own work), which biases the offset by that much.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
import numpy as np

from .. import units
from ..driver.pipeline import CallClass, call_class
from ..driver.schema import What
from ..driver.trace import DriverTrace
from ..errors import LoadWarning
from ..kineto import schema
from ..kineto.kinds import Kind
from ..kineto.trace import KinetoTrace

#: what a call does -> its code (calls of other classes are not linked)
_LINKED = {CallClass.LAUNCH: 1, CallClass.GRAPH_LAUNCH: 2, CallClass.COPY: 3, CallClass.MEMSET: 4,
           CallClass.SYNC: 5, CallClass.ALLOC: 6, CallClass.FREE: 7}
_GRAM = 4  #: codes per run used to vote for a shift
_SAMPLES = 256  #: positions of the Kineto sequence that vote
_CANDIDATES = 6  #: shifts checked in full
_OUTLIER_MIN_US = 200.0


class _Dims(msgspec.Struct, gc=False):
    grid: list[int] | None = msgspec.field(default=None, name=schema.GRID)
    block: list[int] | None = msgspec.field(default=None, name=schema.BLOCK)


@dataclass
class ThreadLink:
    """How one Kineto thread's calls were paired with one driver thread's."""

    kineto_thread: tuple  #: (pid, tid) in the Kineto trace
    driver_thread: tuple  #: (pid, tid) in the driver trace (pid None when it has none)
    kineto_calls: int
    driver_calls: int
    linked: int  #: before pairs with an outlying time difference are dropped
    confirmed: int  #: linked launches whose grid and block agree
    shift: int  #: driver index - Kineto index of linked calls


@dataclass
class DriverLink:
    """The link of a merged trace: Kineto event <-> driver event (merged ids)."""

    offset_us: float  #: add to a driver-file time (µs, its own clock) to get the Kineto clock (µs)
    uncertainty_us: float  #: 1.4826 x the median absolute deviation of the pairs' offsets
    linked: int
    confirmed: int  #: linked launches whose grid and block agree in both traces
    kineto_calls: int  #: Kineto calls that could be linked (launch, copy, memset, sync, alloc, free)
    driver_calls: int  #: driver calls that could be linked
    rejected_by_time: int  #: pairs of equal codes whose time difference was an outlier
    threads: list[ThreadLink]
    kineto_to_driver: np.ndarray  #: per Kineto event: the linked driver event (merged id), -1
    driver_to_kineto: np.ndarray  #: per driver event (index - first): the linked Kineto event, -1
    by_grid_block: bool  #: launches were compared by grid and block too
    heuristic: bool = True
    warnings: list[LoadWarning] = field(default_factory=list)

    @property
    def method(self) -> str:
        return ("order of launch/copy/sync calls per thread" + (", grid and block" if self.by_grid_block else "")
                + "; clock offset from the linked pairs")

    def as_dict(self) -> dict:
        """The link's statistics (``info --json``'s ``driver_link``; times in µs)."""
        return {"method": self.method, "heuristic": self.heuristic, "linked": self.linked,
                "confirmed": self.confirmed, "kineto_calls": self.kineto_calls, "driver_calls": self.driver_calls,
                "rejected_by_time": self.rejected_by_time, "offset_us": self.offset_us,
                "uncertainty_us": self.uncertainty_us,
                "threads": [{"kineto_thread": list(t.kineto_thread), "driver_thread": list(t.driver_thread),
                             "kineto_calls": t.kineto_calls, "driver_calls": t.driver_calls, "linked": t.linked,
                             "confirmed": t.confirmed, "shift": t.shift} for t in self.threads]}


@dataclass
class _Side:
    events: np.ndarray  #: event ids, by thread then time
    thread: np.ndarray  #: thread code per event
    threads: list[tuple]  #: code -> (pid, tid)
    code: np.ndarray  #: int64 class code (grid/block folded in later)
    t: np.ndarray  #: start, µs on the side's own absolute clock
    dims: np.ndarray  #: int64 (n, 6) grid + block of launches, -1 unknown


def _kineto_side(kt: KinetoTrace) -> _Side:
    calls = np.flatnonzero(np.isin(kt.kind, [int(Kind.RUNTIME), int(Kind.DRIVER)]))
    cls_of_name = np.array([_LINKED.get(call_class(nm), 0) for nm in kt.names] or [0], dtype=np.int64)
    calls = calls[cls_of_name[kt.name_id[calls]] > 0]
    dims = np.full((calls.size, 6), -1, dtype=np.int64)
    launches = np.flatnonzero(cls_of_name[kt.name_id[calls]] == _LINKED[CallClass.LAUNCH])
    if launches.size:
        gpu = np.flatnonzero(kt.launch_of >= 0)
        gpu = gpu[np.lexsort((kt.ts[gpu], kt.launch_of[gpu]))]
        first = np.concatenate(([True], kt.launch_of[gpu][1:] != kt.launch_of[gpu][:-1])) if gpu.size else gpu
        kernel_of = dict(zip(kt.launch_of[gpu[first]].tolist(), gpu[first].tolist())) if gpu.size else {}
        want = [(k, kernel_of.get(int(calls[k]), -1)) for k in launches.tolist()]
        have = [(k, g) for k, g in want if g >= 0]
        if have:
            args = kt.args_batch(np.array([g for _, g in have], dtype=np.int64), _Dims)
            for (k, _), a in zip(have, args):
                dims[k] = _dims6(a.grid, a.block)
    return _sided(calls, kt.pids, kt.tids, cls_of_name[kt.name_id[calls]], kt.origin_us + kt.ts[calls], dims)


def _driver_side(drv: DriverTrace) -> _Side:
    ev = drv.driver_events()
    is_call = drv.what == What.CALL
    cls_of_name = np.array([_LINKED.get(call_class(nm), 0) for nm in drv.names] or [0], dtype=np.int64)
    calls = ev[is_call & (cls_of_name[drv.name_id[ev]] > 0)]
    dims = np.full((calls.size, 6), -1, dtype=np.int64)
    rec = ev[drv.what == What.LAUNCH]
    rec = rec[drv.parent[rec] >= 0]
    if rec.size:
        at = {int(p): i for i, p in enumerate(drv.parent[rec].tolist())}
        loc = rec - drv.first
        for k, c in enumerate(calls.tolist()):
            i = at.get(c)
            if i is not None:
                dims[k, :3] = drv.grid[loc[i]]
                dims[k, 3:] = drv.block[loc[i]]
    return _sided(calls, drv.pids, drv.tids, cls_of_name[drv.name_id[calls]], drv.origin_us + drv.ts[calls], dims)


def _sided(calls: np.ndarray, pids: list, tids: list, code: np.ndarray, t: np.ndarray, dims: np.ndarray) -> _Side:
    keys = [(pids[i], tids[i]) for i in calls.tolist()]
    table: dict[tuple, int] = {}
    thread = np.fromiter((table.setdefault(k, len(table)) for k in keys), np.int64, len(keys))
    o = np.lexsort((t, thread))
    return _Side(calls[o], thread[o], list(table), code[o], t[o], dims[o])


def _dims6(grid, block) -> tuple:
    def xyz(v):
        if not isinstance(v, list) or not all(isinstance(x, int) for x in v[:3]):
            return [-1, -1, -1]
        return (list(v[:3]) + [1, 1, 1])[:3]
    return tuple(xyz(grid) + xyz(block))


def _grams(code: np.ndarray) -> np.ndarray:
    """A hash of each run of ``_GRAM`` codes starting at each position (shorter at the end)."""
    g = np.zeros(code.size, dtype=np.int64)
    for k in range(_GRAM):
        shifted = np.full(code.size, 7919, dtype=np.int64)
        if k < code.size:
            shifted[: code.size - k] = code[k:]
        g = g * np.int64(1_000_003) + shifted
    return g


def _shift_by_time(a_t: np.ndarray, b_t: np.ndarray, offset: float) -> int:
    """The shift (b index - a index) that puts the most calls of a beside the call of b nearest
    in time, b's times moved to a's clock by ``offset`` (both sorted)."""
    bt = b_t + offset
    j = np.searchsorted(bt, a_t)  # the first call of b at or after each call of a
    lo, hi = np.clip(j - 1, 0, bt.size - 1), np.clip(j, 0, bt.size - 1)
    near = np.where(np.abs(bt[lo] - a_t) <= np.abs(bt[hi] - a_t), lo, hi)
    shifts, counts = np.unique(near - np.arange(a_t.size), return_counts=True)
    return int(shifts[np.argmax(counts)])


def _align(a_code: np.ndarray, a_t: np.ndarray, b_code: np.ndarray, b_t: np.ndarray,
           offset: float | None = None) -> tuple[int, np.ndarray, float]:
    """(shift, linked positions of a, spread µs) of the best alignment of b against a; with a
    clock ``offset`` (b -> a) known from other threads, the shift it gives is a candidate too."""
    none = (0, np.zeros(0, np.int64), np.inf)
    if not a_code.size or not b_code.size:
        return none
    ga, gb = _grams(a_code), _grams(b_code)
    order = np.argsort(gb, kind="stable")
    gb_sorted = gb[order]
    sample = np.unique(np.linspace(0, a_code.size - 1, min(_SAMPLES, a_code.size)).astype(np.int64))
    lo = np.searchsorted(gb_sorted, ga[sample], side="left")
    hi = np.searchsorted(gb_sorted, ga[sample], side="right")
    votes: list[np.ndarray] = []
    for i, a, b in zip(sample.tolist(), lo.tolist(), hi.tolist()):
        if b > a:
            votes.append(order[a:min(b, a + 64)] - i)
    candidates: list[int] = []
    if votes:
        shifts, counts = np.unique(np.concatenate(votes), return_counts=True)
        candidates = shifts[np.argsort(-counts, kind="stable")][:_CANDIDATES].tolist()
    if offset is not None:
        candidates.append(_shift_by_time(a_t, b_t, offset))
    best = none
    best_key = (-1, -np.inf)
    for s in candidates:
        i0, i1 = max(0, -s), min(a_code.size, b_code.size - s)
        if i1 <= i0:
            continue
        i = np.arange(i0, i1)
        eq = i[a_code[i] == b_code[i + s]]
        if not eq.size:
            continue
        d = a_t[eq] - b_t[eq + s]
        spread = float(np.median(np.abs(d - np.median(d))))
        key = (int(eq.size), -spread)
        if key > best_key:
            best_key, best = key, (int(s), eq, spread)
    return best


def compute_link(kt: KinetoTrace, drv: DriverTrace) -> DriverLink:
    """The :class:`DriverLink` of the two traces (driver ids are ``kt.n_events + local``)."""
    a, b = _kineto_side(kt), _driver_side(drv)
    # compare launches by grid and block only when both traces give them for most launches
    la, lb = a.code == _LINKED[CallClass.LAUNCH], b.code == _LINKED[CallClass.LAUNCH]
    by_dims = bool(la.any() and lb.any() and (a.dims[la, 0] >= 0).mean() > 0.5 and (b.dims[lb, 0] >= 0).mean() > 0.5)
    table: dict[tuple, int] = {}
    if by_dims:
        def fold(side: _Side) -> np.ndarray:
            keys = [(int(c),) + (tuple(d) if c == _LINKED[CallClass.LAUNCH] else ()) for c, d in
                    zip(side.code.tolist(), side.dims.tolist())]
            return np.fromiter((table.setdefault(k, len(table) + 1) for k in keys), np.int64, len(keys))
        a_code, b_code = fold(a), fold(b)
    else:
        a_code, b_code = a.code, b.code
    pairs_a: list[np.ndarray] = []
    pairs_b: list[np.ndarray] = []
    threads: list[ThreadLink] = []
    free_b = set(range(len(b.threads)))
    a_bounds = _bounds(a.thread, len(a.threads))
    b_bounds = _bounds(b.thread, len(b.threads))
    for ta in sorted(range(len(a.threads)), key=lambda k: -(a_bounds[k][1] - a_bounds[k][0])):
        s0, s1 = a_bounds[ta]
        tid_a = a.threads[ta][1]
        same = [tb for tb in free_b if b.threads[tb][1] == tid_a]
        cands = same or sorted(free_b)
        best = None
        # the clock offset of the pairs linked so far (the threads of one run share one clock)
        so_far = np.concatenate([a.t[p] - b.t[q] for p, q in zip(pairs_a, pairs_b)]) if pairs_a else np.zeros(0)
        offset = float(np.median(so_far)) if so_far.size else None
        for tb in cands:
            u0, u1 = b_bounds[tb]
            shift, pos, spread = _align(a_code[s0:s1], a.t[s0:s1], b_code[u0:u1], b.t[u0:u1], offset)
            if pos.size and (best is None or (pos.size, -spread) > (best[2].size, -best[3])):
                best = (tb, shift, pos, spread)
        if best is None:
            continue
        tb, shift, pos, _ = best
        free_b.discard(tb)
        u0, u1 = b_bounds[tb]
        ia, ib = s0 + pos, u0 + pos + shift
        pairs_a.append(ia)
        pairs_b.append(ib)
        conf = int(((a.code[ia] == _LINKED[CallClass.LAUNCH]) & (a.dims[ia, 0] >= 0)
                    & (a.dims[ia] == b.dims[ib]).all(axis=1)).sum())
        threads.append(ThreadLink(a.threads[ta], b.threads[tb], s1 - s0, u1 - u0, int(pos.size), conf, shift))
    ia = np.concatenate(pairs_a) if pairs_a else np.zeros(0, np.int64)
    ib = np.concatenate(pairs_b) if pairs_b else np.zeros(0, np.int64)
    d = a.t[ia] - b.t[ib]
    offset = float(np.median(d)) if d.size else 0.0
    spread = float(1.4826 * np.median(np.abs(d - offset))) if d.size else float("inf")
    ok = np.abs(d - offset) <= max(10 * spread, _OUTLIER_MIN_US)
    rejected = int((~ok).sum())
    ia, ib = ia[ok], ib[ok]
    k2d = np.full(kt.n_events, -1, dtype=np.int64)
    d2k = np.full(drv.n_driver, -1, dtype=np.int64)
    k2d[a.events[ia]] = kt.n_events + (b.events[ib] - drv.first)
    d2k[b.events[ib] - drv.first] = a.events[ia]
    confirmed = int(((a.code[ia] == _LINKED[CallClass.LAUNCH]) & (a.dims[ia, 0] >= 0)
                     & (a.dims[ia] == b.dims[ib]).all(axis=1)).sum())
    link = DriverLink(offset_us=offset, uncertainty_us=spread, linked=int(ia.size), confirmed=confirmed,
                      kineto_calls=int(a.events.size), driver_calls=int(b.events.size), rejected_by_time=rejected,
                      threads=threads, kineto_to_driver=k2d, driver_to_kineto=d2k, by_grid_block=by_dims)
    name = drv.name_of_file
    if not ia.size:
        link.warnings.append(LoadWarning("driver_unlinked", f"{name}: no driver call could be linked to a Kineto call "
                                         "(no common order of launches, copies and synchronizations)", 0))
    else:
        link.warnings.append(LoadWarning(
            "driver_link", f"{name}: {ia.size:,} of {a.events.size:,} Kineto launch/copy/sync calls linked to driver "
            f"calls by order (heuristic); clock offset {offset:+,.1f} {units.US} ± {spread:,.1f} {units.US}",
            int(ia.size)))
    if rejected:
        link.warnings.append(LoadWarning("driver_link_outliers", f"{name}: {rejected:,} pairs of calls that match by "
                                         "order are not linked: their time difference is far from the others'",
                                         rejected))
    return link


def _bounds(thread: np.ndarray, n: int) -> list[tuple[int, int]]:
    """[start, end) of each thread code in an array sorted by thread."""
    starts = np.searchsorted(thread, np.arange(n), side="left")
    ends = np.searchsorted(thread, np.arange(n), side="right")
    return list(zip(starts.tolist(), ends.tolist()))
