"""Questions asked of the allocation model (:mod:`tracetui.analysis.memory`): the peak of a
device and the blocks that make it up, the ops that allocate most, and what one op (with
everything under it) allocated and freed.

- **peak**: the first row where a device's allocated (or reserved) bytes are highest.  The
  bytes allocated there are the blocks *live at the peak* that were allocated inside the
  trace (allocated at or before the peak row, freed after it or never) plus the part
  allocated *before the trace* (the device's baseline minus the frees of such blocks up to
  the peak).  Both parts are computed apart, so their sum is a check of the trace's own
  ``Total Allocated`` (docs/memory.md).
- **owners**: live blocks grouped by their allocating event's name
  (``MemoryModel.owner``: the innermost cpu_op, else the python function or annotation,
  else ``(outside any op)``), largest first, with their shapes (the
  op's ``Input Dims``, or the linked ET node's input shapes) and callers (the event just
  above the allocating op: a cpu_op, python function or annotation).
- **per node**: the allocations counted by a node's subtree (their ``node`` is in it),
  the frees counted by it, ``net`` = allocated - freed bytes, and ``transient``: blocks both
  allocated and freed inside the subtree (bytes a caller never sees).

Bytes are int; times µs relative to the trace origin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..kineto.kinds import Kind
from ..kineto.trace import KinetoTrace
from ..session import LinkedTrace
from .frames import input_dims_texts, per_trace
from .memory import Device, MemoryModel, index_dtype, memory_model

#: owner label of blocks allocated outside any op, python function or annotation
OUTSIDE = "(outside any op)"


@dataclass
class Peak:
    """A device's peak of allocated (``what`` "allocated") or reserved bytes."""

    device: Device
    what: str
    row: int  #: model row where the peak is first reached
    ts: float  #: µs relative to the trace origin
    event: int  #: the ``[memory]`` event of that row
    value: int  #: the peak (bytes allocated or reserved)
    allocated: int  #: bytes allocated at that row (== value for the allocated peak)
    live: np.ndarray  #: allocation rows live there (allocated inside the trace), largest first
    live_bytes: int
    before_trace_bytes: int  #: live bytes allocated before the trace began


def peak(m: MemoryModel, device: Device, what: str = "allocated") -> Peak | None:
    """The device's peak of ``what`` ("allocated" or "reserved"); None without rows, and for
    reserved when no ``Total Reserved`` is above 0 (the CPU allocator reserves nothing)."""
    s = m.rows_of(device)
    vals = m.allocated[s] if what == "allocated" else m.reserved[s]
    if not vals.size or (what == "reserved" and (vals <= 0).all()):
        return None
    row = device.lo + int(np.argmax(vals))
    live = live_rows(m, device, row)
    return Peak(device, what, row, float(m.ts[row]), int(m.event[row]), int(vals.max()), int(m.allocated[row]),
                live, int(m.nbytes[live].sum()), before_trace_bytes(m, device, row))


def live_rows(m: MemoryModel, device: Device, row: int) -> np.ndarray:
    """Allocation rows of ``device`` live just after ``row``: allocated at or before it, freed
    after it or never; largest first (then in time order)."""
    rows = np.arange(device.lo, row + 1)
    rows = rows[m.nbytes[rows] > 0]
    rows = rows[(m.pair[rows] < 0) | (m.pair[rows] > row)]
    return rows[np.lexsort((rows, -m.nbytes[rows]))]


def before_trace_bytes(m: MemoryModel, device: Device, row: int) -> int:
    """Bytes allocated before the trace still allocated just after ``row``."""
    s = slice(device.lo, row + 1)
    return device.baseline + int(m.nbytes[s][m.before_trace[s]].sum())


@dataclass
class Owner:
    """Blocks grouped by the name of the event that allocated them."""

    op: str
    bytes: int
    count: int
    rows: np.ndarray  #: allocation rows, largest first
    shapes: list[tuple[str, int, int]] = field(default_factory=list)  #: (shapes text, bytes, count)
    callers: list[tuple[str, int, int]] = field(default_factory=list)  #: (caller name, bytes, count)
    op_events: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  #: allocating event per row (-1)


def _names(trace: KinetoTrace, events: np.ndarray, none: str) -> np.ndarray:
    names = np.asarray(trace.names, dtype=object)
    out = np.full(events.shape, none, dtype=object)
    ok = events >= 0
    out[ok] = names[trace.name_id[events[ok]]]
    return out


def _group(labels: np.ndarray, rows: np.ndarray, nbytes: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """(label, rows) groups, most bytes first (ties: name), rows keep their order."""
    if not rows.size:
        return []
    uniq, inv = np.unique(labels.astype(str), return_inverse=True)
    tot = np.bincount(inv, weights=nbytes.astype(np.float64), minlength=uniq.size)
    order = sorted(range(uniq.size), key=lambda k: (-tot[k], uniq[k]))
    return [(str(uniq[k]), rows[inv == k]) for k in order]


def _ranked(labels: np.ndarray, nbytes: np.ndarray, top: int) -> list[tuple[str, int, int]]:
    """(label, bytes, count) of the ``top`` labels with most bytes; "" (none known) left out."""
    groups = [(lab, r) for lab, r in _group(labels, np.arange(labels.size), nbytes) if lab]
    return [(lab, int(nbytes[r].sum()), int(r.size)) for lab, r in groups[:top]]


def _lists(v: Any) -> Any:
    """Tuples (as the ET model holds shapes) as lists, so shapes read like ``Input Dims``."""
    return [_lists(x) for x in v] if isinstance(v, (list, tuple)) else v


def op_shapes(trace: KinetoTrace, ops: np.ndarray, linked: LinkedTrace | None = None) -> np.ndarray:
    """Per op event (-1 allowed): its ``Input Dims`` text, else its linked ET node's input
    shapes, else ""."""
    out = np.full(ops.shape, "", dtype=object)
    uniq = np.unique(ops[ops >= 0])
    if not uniq.size:
        return out
    cpu = uniq[trace.kind[uniq] == int(Kind.CPU_OP)]
    text = dict(zip(cpu.tolist(), input_dims_texts(trace, cpu)))
    link = linked.link if linked is not None else None
    if link is not None and linked.et is not None:
        for op in cpu.tolist():
            if not text.get(op) and op < link.kineto_to_et.size and link.kineto_to_et[op] >= 0:
                node = linked.et.node(int(link.kineto_to_et[op]))
                text[op] = str([_lists(a.shape) for a in node.inputs])
    out[:] = [text.get(op, "") for op in ops.tolist()]
    return out


def owners(trace: KinetoTrace, m: MemoryModel, rows: np.ndarray, linked: LinkedTrace | None = None,
           detail: int = 3) -> list[Owner]:
    """Allocation ``rows`` grouped by owner (module docstring), most bytes first; each with
    its ``detail`` largest shapes and callers."""
    own = m.owner[rows]
    labels = _names(trace, own, OUTSIDE)
    out = []
    for label, idx in _group(labels, np.arange(rows.size), m.nbytes[rows]):
        r = rows[idx]
        ops = own[idx]
        callers = np.where(ops >= 0, trace.parent[np.maximum(ops, 0)], -1).astype(np.int64)
        callers = np.where(callers < trace.n_events, callers, -1)  # a lane root is no caller
        sizes = m.nbytes[r]
        out.append(Owner(label, int(sizes.sum()), int(r.size), r,
                         _ranked(op_shapes(trace, ops, linked), sizes, detail),
                         _ranked(_names(trace, callers, ""), sizes, detail), ops))
    return out


def by_owner(trace: KinetoTrace, m: MemoryModel, rows: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Allocation ``rows`` grouped by owner name (:data:`OUTSIDE` for none): (name, its rows
    in the given order), most bytes first (ties: name)."""
    labels = _names(trace, m.owner[rows], OUTSIDE)
    return [(label, rows[idx]) for label, idx in _group(labels, np.arange(rows.size), m.nbytes[rows])]


def allocating_ops(trace: KinetoTrace, m: MemoryModel, rows: np.ndarray) -> list[dict[str, Any]]:
    """Allocation ``rows`` by owner name, most bytes first: ``op``, ``allocations``,
    ``bytes``, ``largest_bytes``, ``never_freed`` (blocks without a free in the trace)."""
    out = []
    for label, r in by_owner(trace, m, rows):
        out.append({"op": label, "allocations": int(r.size), "bytes": int(m.nbytes[r].sum()),
                    "largest_bytes": int(m.nbytes[r].max()), "never_freed": int((m.pair[r] < 0).sum())})
    return out


def step_rows(trace: KinetoTrace, m: MemoryModel, device: Device, top: int = 3) -> list[dict[str, Any]]:
    """Per profiler step with rows on ``device``: ``step`` (name), ``allocations``, ``bytes``,
    ``peak_allocated_bytes`` (highest allocated in the step), ``top_ops`` (``top`` rows of
    :func:`allocating_ops`)."""
    s = m.rows_of(device)
    out = []
    for k, ev in enumerate(m.steps):
        rows = np.flatnonzero(m.step[s] == k) + device.lo
        if not rows.size:
            continue
        allocs = rows[m.nbytes[rows] > 0]
        out.append({"step": trace.name(ev), "allocations": int(allocs.size), "bytes": int(m.nbytes[allocs].sum()),
                    "peak_allocated_bytes": int(m.allocated[rows].max()),
                    "top_ops": allocating_ops(trace, m, allocs)[:top]})
    return out


# ---------------------------------------------------------------- per node (subtree)
@dataclass(frozen=True)
class NodeMemory:
    """What one node's subtree allocated and freed on one device (bytes; counts of blocks)."""

    device: str
    allocations: int
    allocated_bytes: int
    frees: int
    freed_bytes: int
    transient: int  #: blocks allocated and freed inside the subtree
    transient_bytes: int

    @property
    def net_bytes(self) -> int:
        """Allocated - freed inside the subtree: what it leaves allocated (< 0: it freed more)."""
        return self.allocated_bytes - self.freed_bytes


@dataclass
class _Keyed:
    """Rows sorted by (device, preorder position of a node) with running byte sums."""

    dev: np.ndarray
    key: np.ndarray
    rows: np.ndarray
    cum: np.ndarray  #: cum[i] = bytes of rows[:i]

    @classmethod
    def of(cls, m: MemoryModel, rows: np.ndarray, key: np.ndarray, sizes: np.ndarray) -> "_Keyed":
        """``rows`` and ``key`` in the model's index type (int32 for any trace of fewer than
        2**31 nodes and rows); the device in the smallest type that holds its ranks: a 1 GB
        snapshot's three of these held 6.8M rows each, 570 MB as int64."""
        ok = key >= 0
        rows, key, sizes = rows[ok], key[ok], sizes[ok]
        dev = m.dev[rows].astype(np.min_scalar_type(max(len(m.devices) - 1, 0)))
        o = np.lexsort((key, dev))
        return cls(dev[o], key[o], rows[o], np.concatenate(([0], np.cumsum(sizes[o]))))

    def span(self, dev: int, lo: int, hi: int) -> tuple[int, int]:
        a, b = np.searchsorted(self.dev, dev, "left"), np.searchsorted(self.dev, dev, "right")
        return a + int(np.searchsorted(self.key[a:b], lo, "left")), a + int(np.searchsorted(self.key[a:b], hi, "left"))

    def total(self, dev: int, lo: int, hi: int) -> tuple[int, int]:
        i, j = self.span(dev, lo, hi)
        return j - i, int(self.cum[j] - self.cum[i])


def _lca(parent: np.ndarray, depth: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Lowest common ancestor of node pairs (one numpy step per level); -1 when none."""
    a, b = a.copy(), b.copy()  # in the model's index type (int32 for any trace under 2**31 nodes)
    ok = (a >= 0) & (b >= 0)
    while True:
        da, db = depth[np.maximum(a, 0)], depth[np.maximum(b, 0)]
        up_a, up_b = ok & (da > db), ok & (db > da)
        if not (up_a.any() or up_b.any()):
            break
        a[up_a], b[up_b] = parent[a[up_a]], parent[b[up_b]]
        ok &= (a >= 0) & (b >= 0)
    while True:
        up = ok & (a != b)
        if not up.any():
            break
        a[up], b[up] = parent[a[up]], parent[b[up]]
        ok &= (a >= 0) & (b >= 0)
    return np.where(ok, a, -1)


class NodeIndex:
    """Answers :func:`node_memory` for any node in O(log rows) (built once per trace)."""

    def __init__(self, trace: KinetoTrace, m: MemoryModel) -> None:
        pre = trace.order.pre
        self.pre, self.size = pre, trace.order.size
        idx = index_dtype(trace, m.n_rows)
        node_pre = np.where(m.node >= 0, pre[np.maximum(m.node, 0)], -1).astype(idx)
        rows = np.arange(m.n_rows, dtype=idx)
        alloc, free = m.nbytes > 0, m.nbytes < 0
        self.allocs = _Keyed.of(m, rows[alloc], node_pre[alloc], m.nbytes[alloc])
        self.frees = _Keyed.of(m, rows[free], node_pre[free], -m.nbytes[free])
        paired = rows[alloc & (m.pair >= 0)]
        lca = _lca(trace.parent.astype(np.int64), trace.depth, m.node[paired], m.node[m.pair[paired]])
        lca_pre = np.where(lca >= 0, pre[np.maximum(lca, 0)], -1).astype(idx)
        self.transient = _Keyed.of(m, paired, lca_pre, m.nbytes[paired])
        self.devices = m.devices

    def _range(self, node: int) -> tuple[int, int] | None:
        p = int(self.pre[node])
        return None if p < 0 else (p, p + int(self.size[node]))

    def query(self, node: int) -> list[NodeMemory]:
        rng = self._range(node)
        if rng is None:
            return []
        out = []
        for d in self.devices:
            a, ab = self.allocs.total(d.index, *rng)
            f, fb = self.frees.total(d.index, *rng)
            t, tb = self.transient.total(d.index, *rng)
            if a or f:
                out.append(NodeMemory(d.name, int(a), ab, int(f), fb, int(t), tb))
        return out

    def rows_under(self, node: int) -> np.ndarray:
        """Rows (allocations and frees) counted by the node's subtree, in row order."""
        rng = self._range(node)
        if rng is None:
            return np.zeros(0, dtype=np.int64)
        parts = []
        for d in self.devices:
            for k in (self.allocs, self.frees):
                i, j = k.span(d.index, *rng)
                parts.append(k.rows[i:j])
        return np.sort(np.concatenate(parts)).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def node_index(trace: KinetoTrace) -> NodeIndex:
    """The trace's :class:`NodeIndex` (built on first use, kept with the trace)."""
    return per_trace(trace, "memory_node_index", lambda t: NodeIndex(t, memory_model(t)))


def node_memory(trace: KinetoTrace, node: int) -> list[NodeMemory]:
    """Per device, what the subtree of ``node`` allocated, freed, left allocated (net) and
    allocated and freed again (transient); devices it did not touch are left out."""
    return node_index(trace).query(node)
