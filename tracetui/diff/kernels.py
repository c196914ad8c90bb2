"""Which kernels replaced which under an aligned op.

An op's **own** GPU events are the kernels, memcpys and memsets its runtime calls launched
(nearest op above the launch: :attr:`tracetui.diff.forest.OpForest.op_of_node`), in start
order.  The two lists of a paired op are aligned by name (``difflib``): equal names are
``same``, a block of different names pairs in order as ``replaced`` (a ``cutlass_…`` GEMM by
an ``nvjet_…`` one), what is left is ``removed`` (A only) or ``added`` (B only).  Each side
keeps its grid, block, registers per thread and duration (from
:func:`tracetui.analysis.frames.gpu_events_frame`).  With several compared steps, the lists
are those of the template steps (:mod:`tracetui.diff.model`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.frames import gpu_events_frame, gpu_work_events, per_trace
from .align import RowKind
from .forest import OpForest, mix64, text_hashes
from .model import DiffTree

SAME, REPLACED, REMOVED, ADDED = "same", "replaced", "removed", "added"


@dataclass(frozen=True)
class KernelSide:
    """One side of a kernel change: event id, name, grid and block ("x,y,z"), registers per
    thread, duration (µs)."""

    event: int
    name: str
    grid: str | None
    block: str | None
    registers: float | None
    dur_us: float


@dataclass(frozen=True)
class KernelChange:
    """``status`` (same, replaced, removed, added) and each side (None where absent)."""

    status: str
    a: KernelSide | None
    b: KernelSide | None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status}
        for key, s in (("a", self.a), ("b", self.b)):
            for f in ("event", "name", "grid", "block", "registers", "dur_us"):
                out[f"{f}_{key}"] = getattr(s, f) if s is not None else None
        return out


def own_gpu(f: OpForest) -> tuple[np.ndarray, np.ndarray]:
    """CSR over ops: ``index[start[k]:start[k+1]]`` are op ``k``'s own GPU events by start time."""
    def build(kt) -> tuple[np.ndarray, np.ndarray]:
        g = gpu_work_events(kt)
        op = f.op_of_node[g]
        g, op = g[op >= 0], op[op >= 0]
        order = np.lexsort((kt.ts[g], op))
        start = np.zeros(f.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(op, minlength=f.n), out=start[1:])
        return start, g[order].astype(np.int64)

    return per_trace(f.trace, f"diff.own_gpu.{id(f)}", build)


def _signature(f: OpForest) -> np.ndarray:
    """Per op, an order-free hash of its own GPU events' names (equal lists of names, equal hash)."""
    def build(kt) -> np.ndarray:
        start, index = own_gpu(f)
        uniq, inv = np.unique(kt.name_id[index], return_inverse=True)
        h = text_hashes([kt.names[int(u)] for u in uniq])[inv] if index.size else np.zeros(0, np.uint64)
        owner = np.repeat(np.arange(f.n), np.diff(start))
        sig = np.zeros(f.n, dtype=np.uint64)
        np.add.at(sig, owner, mix64(h))
        return sig

    return per_trace(f.trace, f"diff.kernel_signature.{id(f)}", build)


def rows_with_kernel_changes(tree: DiffTree) -> np.ndarray:
    """Paired op rows whose own GPU events differ in names (or in number)."""
    rows = np.flatnonzero((tree.kind == int(RowKind.OP)) & (tree.op_a >= 0) & (tree.op_b >= 0))
    fa, fb = tree.a.forest, tree.b.forest
    sa, sb = own_gpu(fa)[0], own_gpu(fb)[0]
    a, b = tree.op_a[rows], tree.op_b[rows]
    differ = (_signature(fa)[a] != _signature(fb)[b]) | ((sa[a + 1] - sa[a]) != (sb[b + 1] - sb[b]))
    return rows[differ]


def _sides(f: OpForest, events: np.ndarray) -> list[KernelSide]:
    kt = f.trace
    if not events.size:
        return []
    fr = gpu_events_frame(kt, events=events).set_index("event")
    out = []
    for e in events.tolist():
        r = fr.loc[e]
        reg = r["registers"]
        out.append(KernelSide(int(e), str(r["name"]), r["grid"], r["block"],
                              None if reg != reg else float(reg), float(r["dur"])))
    return out


def kernel_changes(tree: DiffTree, row: int) -> list[KernelChange]:
    """The own GPU events of a paired op row, A against B (module docstring); [] for other rows."""
    a, b = int(tree.op_a[row]), int(tree.op_b[row])
    if a < 0 and b < 0:
        return []
    fa, fb = tree.a.forest, tree.b.forest
    ea = own_gpu(fa)[1][own_gpu(fa)[0][a]:own_gpu(fa)[0][a + 1]] if a >= 0 else np.zeros(0, np.int64)
    eb = own_gpu(fb)[1][own_gpu(fb)[0][b]:own_gpu(fb)[0][b + 1]] if b >= 0 else np.zeros(0, np.int64)
    ka, kb = _sides(fa, ea), _sides(fb, eb)
    out: list[KernelChange] = []
    sm = difflib.SequenceMatcher(None, [k.name for k in ka], [k.name for k in kb], autojunk=False)
    for tag, i0, i1, j0, j1 in sm.get_opcodes():
        if tag == "equal":
            out += [KernelChange(SAME, ka[i0 + x], kb[j0 + x]) for x in range(i1 - i0)]
            continue
        n = min(i1 - i0, j1 - j0) if tag == "replace" else 0
        out += [KernelChange(REPLACED, ka[i0 + x], kb[j0 + x]) for x in range(n)]
        out += [KernelChange(REMOVED, k, None) for k in ka[i0 + n:i1]]
        out += [KernelChange(ADDED, None, k) for k in kb[j0 + n:j1]]
    return out
