"""The allocation model: every ``[memory]`` event of a Kineto trace as columns, allocations
paired with their frees, and per device the allocated and reserved bytes over time.

A trace recorded with ``profile_memory=True`` holds one instant event named ``[memory]`` per
allocation and per free of the caching allocator (and of the CPU allocator), with the args
``Addr``, ``Bytes`` (> 0 allocates, < 0 frees), ``Device Type``/``Device Id`` and the device's
running totals after the event, ``Total Allocated`` and ``Total Reserved`` (see docs/memory.md).

Rules (each defined here once):

- **device**: (``Device Type``, ``Device Id``), named as ``torch.device`` spells it: ``cuda:0``
  (ROCm builds also write type 1), ``xpu:1``, ``mtia:0``, ``cpu`` (id -1, no index); an unknown
  type is ``device_type_<N>``.  :data:`DEVICE_TYPE_NAMES` is the table.
- **order**: per device, events by time, then file order (the order the totals follow).
- **pairing**: per device and address, an allocation and the next event at its address when
  that is a free.  A free with no allocation before it at its address was allocated *before the
  trace* (counted apart, its bytes too); an allocation with no free after it is *never freed*
  in the trace (counted apart).  Irregular sequences are counted, never guessed: an allocation
  at an address still live (its free was not recorded: the earlier block counts as never
  freed), a second free at an address (``unmatched_frees``), a free whose size differs from
  its allocation's (paired, counted in ``size_mismatches``), events of 0 bytes (ignored).
- **who**: an event's ``host`` is the innermost host event open on its thread at its time
  (:func:`~tracetui.analysis.frames.host_event_at`), its ``op`` the innermost cpu_op at or
  above that (-1: none), its ``owner`` the op, else the host event when that is a python
  function or an annotation (code outside any op), else -1; its ``node`` the host event,
  else its thread's lane node (the node whose subtree counts it; -1 when its thread has no
  lane).  ``step``: the
  ``ProfilerStep#N`` annotation whose span holds the event's time (any thread; -1 none).
- **totals**: ``allocated``/``reserved`` are the trace's own ``Total Allocated``/``Total
  Reserved`` after each event; where a device's events lack ``Total Allocated`` the running
  sum of ``Bytes`` from 0 stands in (``totals_from`` says which).  ``baseline``: the bytes
  allocated on the device just before its first event (allocated before the trace).

Units: bytes (int64), times µs relative to the trace origin, like the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from ..kineto import schema
from ..kineto.kinds import Kind
from ..kineto.trace import KinetoTrace
from .frames import HOST_CHUNK, host_event_at, per_trace

#: c10::DeviceType value -> the device type's name in ``torch.device`` spelling
DEVICE_TYPE_NAMES = {
    0: "cpu", 1: "cuda", 2: "mkldnn", 3: "opengl", 4: "opencl", 5: "ideep", 6: "hip", 7: "fpga", 8: "maia",
    9: "xla", 10: "vulkan", 11: "metal", 12: "xpu", 13: "mps", 14: "meta", 15: "hpu", 16: "ve", 17: "lazy",
    18: "ipu", 19: "mtia", 20: "privateuseone",
}
_STEP_PREFIX = "ProfilerStep#"


def device_label(device_type: int, device_id: int) -> str:
    """``cuda:0``, ``cpu`` (a negative id has no index), ``device_type_42:0`` for unknown types."""
    base = DEVICE_TYPE_NAMES.get(device_type, f"device_type_{device_type}")
    return base if device_id < 0 else f"{base}:{device_id}"


class _MemArgs(msgspec.Struct, gc=False):
    addr: Any = msgspec.field(default=None, name=schema.MEM_ADDR)
    nbytes: Any = msgspec.field(default=None, name=schema.MEM_BYTES)
    device_type: Any = msgspec.field(default=None, name=schema.MEM_DEVICE_TYPE)
    device_id: Any = msgspec.field(default=None, name=schema.MEM_DEVICE_ID)
    total_allocated: Any = msgspec.field(default=None, name=schema.MEM_TOTAL_ALLOCATED)
    total_reserved: Any = msgspec.field(default=None, name=schema.MEM_TOTAL_RESERVED)


@dataclass(frozen=True)
class Device:
    """One device's slice of the :class:`MemoryModel` rows (``lo:hi``, in time order)."""

    index: int  #: position in ``MemoryModel.devices``
    name: str  #: ``cuda:0``, ``cpu`` (see :func:`device_label`)
    device_type: int  #: the ``Device Type`` arg (c10::DeviceType)
    device_id: int  #: the ``Device Id`` arg (-1 for the CPU)
    lo: int
    hi: int
    baseline: int  #: bytes allocated just before the device's first event (before the trace)
    totals_from: str  #: "trace" (Total Allocated) or "computed" (running sum of Bytes from 0)
    totals_mismatches: int  #: events whose Total Allocated is not the previous one + Bytes


@dataclass
class MemoryModel:
    """Every ``[memory]`` event as one row, rows grouped by device, each device's rows in time
    order (see the module docstring for every rule).  Row arrays have one entry per row."""

    event: np.ndarray  #: int64 model event (the ``[memory]`` instant; -1: a row with no event, ``entry`` says)
    ts: np.ndarray  #: float64 µs relative to the trace origin
    dev: np.ndarray  #: int32 index into ``devices``
    addr: np.ndarray  #: int64 block address
    nbytes: np.ndarray  #: int64 signed: > 0 allocation, < 0 free, 0 ignored
    allocated: np.ndarray  #: int64 bytes allocated on the device after the row
    reserved: np.ndarray  #: int64 bytes reserved on the device after the row (-1: not in the trace)
    pair: np.ndarray  #: row of the free of an allocation / the allocation of a free; -1 none (:func:`index_dtype`)
    before_trace: np.ndarray  #: bool: a free of a block allocated before the trace
    host: np.ndarray  #: innermost host event open at the row's time on its thread (-1) (:func:`index_dtype`)
    op: np.ndarray  #: innermost cpu_op at or above ``host`` (-1) (:func:`index_dtype`)
    node: np.ndarray  #: tree node counting the row: ``host``, else its lane node (-1) (:func:`index_dtype`)
    owner: np.ndarray  #: event the row is attributed to: ``op``, else a python/annotation ``host`` (-1)
    #: (:func:`index_dtype`)
    step: np.ndarray  #: int32 index into ``steps`` (-1: outside every profiler step)
    devices: list[Device]
    steps: list[int]  #: ProfilerStep#N annotation events, by start time
    unreadable: int  #: [memory] events without a usable address, size or device (left out)
    reallocated_live: int  #: allocations at an address whose earlier block was never seen freed
    unmatched_frees: int  #: frees at an address whose last event was already a free
    size_mismatches: int  #: frees paired with an allocation of another size
    #: int64 per row: its index in the source's own list (a CUDA memory snapshot's history
    #: entry; ``event`` is -1 there); None for the ``[memory]`` events of a Kineto trace
    entry: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return int(self.event.shape[0])

    @property
    def is_alloc(self) -> np.ndarray:
        return self.nbytes > 0

    @property
    def is_free(self) -> np.ndarray:
        return self.nbytes < 0

    def device(self, name: str) -> Device:
        for d in self.devices:
            if d.name == name:
                return d
        raise KeyError(name)

    def rows_of(self, device: Device) -> slice:
        return slice(device.lo, device.hi)

    def never_freed(self) -> np.ndarray:
        """Allocations with no free in the trace (bool per row)."""
        return self.is_alloc & (self.pair < 0)

    def lifetime_us(self) -> np.ndarray:
        """Per allocation row: free time - allocation time (µs); NaN for other rows and never freed."""
        out = np.full(self.n_rows, np.nan)
        a = np.flatnonzero(self.is_alloc & (self.pair >= 0))
        out[a] = self.ts[self.pair[a]] - self.ts[a]
        return out


def index_dtype(trace: KinetoTrace, rows: int) -> type:
    """The integer type of the model's row and node indices (``pair``, ``host``, ``op``,
    ``node``, ``owner``): int32 when every row and tree node fits (any trace of fewer than 2**31
    nodes: half the bytes, and a snapshot's history has tens of millions of rows), else int64."""
    return np.int32 if max(rows, trace.n_nodes + len(trace.lanes)) < 2**31 - 1 else np.int64


def memory_events(trace: KinetoTrace) -> np.ndarray:
    """Model events named ``[memory]`` (instant events), file order."""
    try:
        nid = trace.names.index(schema.MEMORY_EVENT_NAME)
    except ValueError:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero((trace.name_id == nid) & (trace.kind == int(Kind.INSTANT)))


def memory_model(trace: KinetoTrace) -> MemoryModel:
    """The trace's :class:`MemoryModel` (built on first use, kept with the trace)."""
    return per_trace(trace, "memory_model", build_memory_model)


def _ints(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values, bool ok): integers (and integral floats) kept, anything else not ok."""
    out = np.zeros(len(values), dtype=np.int64)
    ok = np.zeros(len(values), dtype=bool)
    try:
        arr = np.array(values, dtype=np.int64)
        return arr, np.ones(len(values), dtype=bool)
    except (TypeError, ValueError, OverflowError):
        pass
    for i, v in enumerate(values):
        if isinstance(v, bool):
            continue
        if isinstance(v, int) and -2**63 <= v < 2**63:
            out[i], ok[i] = v, True
        elif isinstance(v, float) and v.is_integer() and abs(v) < 2**63:
            out[i], ok[i] = int(v), True
    return out, ok


def build_memory_model(trace: KinetoTrace) -> MemoryModel:
    """Decode, order, pair and attribute every ``[memory]`` event (see the module docstring).
    A trace whose memory rows are columns already (``memory_columns()``: a CUDA memory
    snapshot's history, :class:`~tracetui.memsnap.trace.SnapshotTrace`) gives them directly."""
    given = getattr(trace, "memory_columns", None)
    if given is not None:
        c = given()
        n = int(c["entry"].size)
        yes = np.ones(n, dtype=bool)
        none = np.broadcast_to(np.int64(-1), (n,))  # no model event: one read-only -1 for every row
        return _model(trace, none, c["entry"], c["lane"], c["ts"], c["addr"], c["nbytes"],
                      c["device_type"], c["device_id"], c["allocated"], yes, c["reserved"], yes, 0, c["entry"])
    ev = memory_events(trace)
    args = trace.args_batch(ev, _MemArgs)
    addr, ok_a = _ints(list(map(attrgetter("addr"), args)))
    nbytes, ok_b = _ints(list(map(attrgetter("nbytes"), args)))
    dtype_, ok_t = _ints(list(map(attrgetter("device_type"), args)))
    did, ok_d = _ints(list(map(attrgetter("device_id"), args)))
    tot_a, ok_ta = _ints(list(map(attrgetter("total_allocated"), args)))
    tot_r, ok_tr = _ints(list(map(attrgetter("total_reserved"), args)))
    ok = ok_a & ok_b & ok_t
    did = np.where(ok_d, did, -1)
    keep = np.flatnonzero(ok)
    ev = ev[keep]
    return _model(trace, ev, ev, trace.lane_of[ev].astype(np.int64), trace.ts[ev], addr[keep], nbytes[keep],
                  dtype_[keep], did[keep], tot_a[keep], ok_ta[keep], tot_r[keep], ok_tr[keep], int((~ok).sum()), None)


#: most device ids + 1 counted in a table (a device id past it takes the general, sorting path)
_FEW_IDS = 1 << 16
#: rows compared at a time by :func:`_in_order` (bounds its temporaries)
_ORDER_CHUNK = 1 << 20


def _in_order(dev: np.ndarray, ts: np.ndarray, tie: np.ndarray) -> bool:
    """Whether the rows are in (``dev``, ``ts``, ``tie``) order already, so that ``np.lexsort``
    (stable) would return them as they are: every row's key at most the next one's.  A NaN time
    compares as out of order (the sort then decides).  No index array is made."""
    n = dev.size
    for lo in range(0, n - 1, _ORDER_CHUNK):
        hi = min(lo + _ORDER_CHUNK, n - 1)
        d0, d1, t0, t1 = dev[lo:hi], dev[lo + 1:hi + 1], ts[lo:hi], ts[lo + 1:hi + 1]
        same_t = t0 == t1
        ok = (d0 < d1) | ((d0 == d1) & ((t0 < t1) | (same_t & (tie[lo:hi] <= tie[lo + 1:hi + 1]))))
        if not ok.all():
            return False
    return True


def _model(trace: KinetoTrace, ev: np.ndarray, tie: np.ndarray, lanes: np.ndarray, ts: np.ndarray, addr: np.ndarray,
           nbytes: np.ndarray, dtype_: np.ndarray, did: np.ndarray, tot_a: np.ndarray, ok_ta: np.ndarray,
           tot_r: np.ndarray, ok_tr: np.ndarray, unreadable: int, entry: np.ndarray | None) -> MemoryModel:
    """The model of readable rows (``tie``: the order of rows at the same time on a device)."""
    # devices, named and ordered: GPUs by type and id, the CPU last
    one_type = bool(ev.size) and 0 <= int(dtype_[0]) < 2**20 and bool((dtype_ == dtype_[0]).all())
    if one_type and -1 <= did.min() and did.max() < _FEW_IDS:
        # one device type (a snapshot's rows): the devices are its ids, ascending (as the key's sort orders them)
        present = np.flatnonzero(np.bincount(did + 1))  # the ids + 1 there are, ascending
        pairs = [(int(dtype_[0]), int(i) - 1) for i in present.tolist()]
        rank = np.zeros(int(present[-1]) + 1, dtype=np.int32)
        rank[present] = np.arange(present.size, dtype=np.int32)
        dev = rank[did + 1]
    else:
        if ev.size and 0 <= dtype_.min() and dtype_.max() < 2**20 and -1 <= did.min() and did.max() < 2**30:
            key = (dtype_ == 0).astype(np.int64) << 52 | dtype_ << 31 | (did + 1)  # one sortable int64
            uniq, inv = np.unique(key, return_inverse=True)
            pairs = [(int(k >> 31 & (2**20 - 1)), int((k & (2**31 - 1)) - 1)) for k in uniq.tolist()]
        else:  # odd values (negative types, huge ids): compare the triples themselves
            uniq, inv = np.unique(np.stack((dtype_ == 0, dtype_, did), axis=1), axis=0, return_inverse=True)
            pairs = [(int(t), int(d)) for _, t, d in uniq.tolist()]
        dev = inv.reshape(-1).astype(np.int32)
        del inv
    order = None if _in_order(dev, ts, tie) else np.lexsort((tie, ts, dev))
    if order is not None:  # rows given in order (a snapshot's history) are kept as they are, not copied
        ev, ts, dev, addr, nbytes, lanes = ev[order], ts[order], dev[order], addr[order], nbytes[order], lanes[order]
        tot_a, ok_ta, tot_r, ok_tr = tot_a[order], ok_ta[order], tot_r[order], ok_tr[order]
        entry = entry[order] if entry is not None else None
    del order
    n = int(ev.size)
    bounds = np.searchsorted(dev, np.arange(len(pairs) + 1))
    every_total = bool(ok_ta.all())  # the totals given are the column (no copy: a large snapshot's rows)
    allocated = tot_a if every_total else np.zeros(n, dtype=np.int64)
    reserved = tot_r if ok_tr.all() else np.where(ok_tr, tot_r, -1)
    devices = []
    for i, (t, d) in enumerate(pairs):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        b = nbytes[lo:hi]
        run = np.cumsum(b)
        if ok_ta[lo:hi].all():
            if not every_total:
                allocated[lo:hi] = tot_a[lo:hi]
            baseline = int(tot_a[lo] - b[0])
            mism = int((baseline + run != tot_a[lo:hi]).sum())
            src = "trace"
        else:
            allocated[lo:hi] = run
            baseline, mism, src = 0, 0, "computed"
        devices.append(Device(i, device_label(t, d), t, d, lo, hi, baseline, src, mism))
    none = np.full(n, -1, dtype=index_dtype(trace, n))
    # ``host`` is replaced by _attribute's answer (no copy of its own: rows can be tens of millions)
    m = MemoryModel(event=ev, ts=ts, dev=dev, addr=addr, nbytes=nbytes, allocated=allocated, reserved=reserved,
                    pair=none.copy(), before_trace=np.zeros(n, dtype=bool), host=none, op=none.copy(),
                    node=none.copy(), owner=none.copy(), step=np.full(n, -1, np.int32), devices=devices, steps=[],
                    unreadable=unreadable, reallocated_live=0, unmatched_frees=0, size_mismatches=0,
                    entry=entry)
    del none
    _pair(m)
    _attribute(trace, m, lanes)
    return m


def _pair(m: MemoryModel) -> None:
    """Fill ``pair``, ``before_trace`` and the irregularity counts (rules in the module docstring)."""
    # rows by (device, address, time order), 0-byte rows left out: each block's events in a run
    # (the sort is stable: rows of one block stay in time order)
    g = np.flatnonzero(m.nbytes != 0)
    if not g.size:
        return
    g = g[np.lexsort((m.addr[g], m.dev[g]))]
    starts = np.ones(g.size, dtype=bool)  # first event of its block in the trace
    starts[1:] = (m.dev[g[1:]] != m.dev[g[:-1]]) | (m.addr[g[1:]] != m.addr[g[:-1]])
    cur_alloc, cur_free = m.nbytes[g] > 0, m.nbytes[g] < 0
    prev_alloc = np.concatenate(([False], cur_alloc[:-1])) & ~starts
    prev_free = np.concatenate(([False], cur_free[:-1])) & ~starts
    paired = np.flatnonzero(cur_free & prev_alloc)
    a_rows, f_rows = g[paired - 1], g[paired]
    m.pair[a_rows] = f_rows
    m.pair[f_rows] = a_rows
    m.before_trace[g[cur_free & starts]] = True
    m.reallocated_live = int((cur_alloc & prev_alloc).sum())
    m.unmatched_frees = int((cur_free & prev_free).sum())
    m.size_mismatches = int((m.nbytes[a_rows] != -m.nbytes[f_rows]).sum())


def _attribute(trace: KinetoTrace, m: MemoryModel, lanes: np.ndarray) -> None:
    """Fill ``host``, ``op``, ``node`` and ``step`` (rules in the module docstring; ``lanes``:
    the lane of each row)."""
    if not m.n_rows:
        return
    m.host = host_event_at(trace, lanes, m.ts, m.op.dtype)
    python_or_annotation = [int(Kind.PYTHON), int(Kind.ANNOTATION)]
    for lo in range(0, m.n_rows, HOST_CHUNK):  # a chunk at a time: rows can be tens of millions
        part = slice(lo, lo + HOST_CHUNK)
        host, ln, op, node, owner = m.host[part], lanes[part], m.op[part], m.node[part], m.owner[part]
        has = host >= 0
        hosts = host[has]
        op[has] = trace.cpu_op_of[hosts]
        # node: the host, else its lane's node, else -1
        np.add(ln, trace.n_events, out=node, dtype=node.dtype)
        node[ln < 0] = -1
        node[has] = hosts
        # owner: the op, else a python function or annotation host, else -1
        code = np.zeros(host.size, dtype=bool)
        code[has] = np.isin(trace.kind[hosts], python_or_annotation)
        owner[code] = host[code]
        with_op = op >= 0
        owner[with_op] = op[with_op]
    ann = np.flatnonzero(trace.kind == int(Kind.ANNOTATION))
    steps = [int(i) for i in ann.tolist() if trace.names[trace.name_id[i]].startswith(_STEP_PREFIX)]
    steps.sort(key=lambda i: (trace.ts[i], i))
    m.steps = steps
    if steps:
        st = np.asarray(steps, dtype=np.int64)
        start, end = trace.ts[st], trace.ts[st] + trace.dur[st]
        for lo in range(0, m.n_rows, HOST_CHUNK):
            t = m.ts[lo:lo + HOST_CHUNK]
            k = np.searchsorted(start, t, side="right") - 1
            inside = (k >= 0) & (t <= end[np.maximum(k, 0)])
            m.step[lo:lo + HOST_CHUNK] = np.where(inside, k, -1)


def allocated_at(m: MemoryModel, device: Device, t: float) -> int:
    """Bytes allocated on ``device`` at time ``t`` (after every event at or before it)."""
    k = int(np.searchsorted(m.ts[device.lo:device.hi], t, side="right"))
    return device.baseline if k == 0 else int(m.allocated[device.lo + k - 1])


def timeline(m: MemoryModel, device: Device) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ts, allocated, reserved) of ``device``: step functions, each value holding from its
    time to the next (views; ``reserved`` -1 where the trace has no Total Reserved)."""
    s = m.rows_of(device)
    return m.ts[s], m.allocated[s], m.reserved[s]


def binned_max(ts: np.ndarray, values: np.ndarray, start: float, lo: float, hi: float, bins: int) -> np.ndarray:
    """The highest value of a step function in each of ``bins`` equal bins over [lo, hi)
    (:func:`cell_max` over evenly spaced edges)."""
    return cell_max(ts, values, start, np.linspace(lo, hi, bins + 1))


def cell_max(ts: np.ndarray, values: np.ndarray, start: float, edges: np.ndarray) -> np.ndarray:
    """The highest value of a step function in each cell ``[edges[c], edges[c + 1])``: the
    value held at a cell's start counts too (``start``: the value before ``ts[0]``), so a
    level that lasts across cells shows in each.  ``ts`` sorted; ``O(cells + events in the
    cells)``.  For drawing a track at any zoom: a peak is never lost between two cells."""
    k0 = np.searchsorted(ts, edges[:-1], side="right")  # events at or before each cell start
    held = np.where(k0 > 0, values[np.maximum(k0 - 1, 0)], start).astype(np.float64)
    k1 = np.searchsorted(ts, edges[1:], side="left")  # events inside each cell: k0 .. k1
    inside = np.flatnonzero(k1 > k0)
    if inside.size:
        idx = np.empty(2 * inside.size, dtype=np.int64)
        idx[0::2], idx[1::2] = k0[inside], k1[inside]
        if idx[-1] >= values.size:
            idx = idx[:-1]
        held[inside] = np.maximum(held[inside], np.maximum.reduceat(values, idx)[0::2])
    return held
