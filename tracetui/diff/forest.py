"""The op forest of one trace, as the diff aligns it: ops only, with keys and subtree hashes.

**Ops** are the host events a user reads as steps of the program: cpu_ops and user
annotations (``record_function`` ranges, ``ProfilerStep#N``); in a driver-call trace
without cpu_ops, its pipeline phases and API calls.  Python functions, runtime calls and
GPU work are not ops: an op's parent is its nearest op ancestor (python frames between
them are skipped, so a moved line of Python changes nothing), and the GPU work an op
launched is counted in its numbers (:func:`tracetui.analysis.frames.gpu_totals`).

Ops are numbered compactly (``0 .. n-1``, by start time); ``ops[k]`` is the model's event
id.  Per op:

* ``name_hash``: a stable 64-bit hash of its name;
* ``key``: the hash of its name and input shapes (``Input Dims`` and ``Input type`` as
  :func:`tracetui.analysis.frames.cpu_ops_frame` reads them; ops without shapes have
  ``key == name_hash``);
* ``tree_hash``: the hash of its key and its children's tree hashes in order: two ops
  with equal tree hashes have the same names, shapes and structure all the way down
  (one numpy step per depth level, no Python per op);
* ``fwd``: for a backward op, the op index of its forward op (``KinetoTrace.fwd_of``: the
  same ``Sequence number`` on the forward thread, or a fwdbwd flow), -1 otherwise;
* ``et_id``: the id of the ET node linked to it by ``rf_id`` (-1 none; order-aligned links
  are not used, they come from names).

Computed once per loaded trace (:func:`op_forest`); nothing here depends on the other side.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..analysis.frames import cpu_ops_frame, per_trace
from ..kineto.kinds import Kind
from ..kineto.trace import KinetoTrace
from ..session import LinkedTrace
from ..tree.csr import csr_children
from ..tree.preorder import Preorder, tree_preorder
from ..tree.propagate import ancestor_counts, depth_levels, nearest_kept_ancestor

_OP_KINDS = (int(Kind.CPU_OP), int(Kind.ANNOTATION))
_DRIVER_OP_KINDS = (int(Kind.ANNOTATION), int(Kind.PHASE), int(Kind.TRACED_CALL))

_U = np.uint64
_M1, _M2 = _U(0xBF58476D1CE4E5B9), _U(0x94D049BB133111EB)
_POS_BASE = _U(0x9E3779B97F4A7C15)
_S30, _S27, _S31 = _U(30), _U(27), _U(31)


def mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser over a uint64 array (wrapping arithmetic)."""
    z = z.astype(np.uint64, copy=True)
    z ^= z >> _S30
    z *= _M1
    z ^= z >> _S27
    z *= _M2
    z ^= z >> _S31
    return z


def text_hashes(texts: list[str]) -> np.ndarray:
    """A stable 64-bit hash of each text (the same in every process and run)."""
    out = np.empty(len(texts), dtype=np.uint64)
    for k, t in enumerate(texts):
        out[k] = int.from_bytes(hashlib.blake2b(t.encode("utf-8", "surrogateescape"), digest_size=8).digest(),
                                "little")
    return out


@dataclass
class OpForest:
    """The ops of one trace as a forest (see the module docstring).  Compact indices."""

    trace: KinetoTrace
    ops: np.ndarray  #: int64 event id of each op
    compact: np.ndarray  #: int64 per model node: its op index, -1 when not an op
    parent: np.ndarray  #: int64 op index of the nearest op ancestor, -1 for a top-level op
    depth: np.ndarray  #: int64 depth in the op forest (top-level ops 0)
    child_start: np.ndarray  #: CSR children (by start time)
    child_index: np.ndarray
    order: Preorder  #: preorder over the forest (roots by lane, then start time)
    roots: np.ndarray  #: int64 top-level ops, by (lane, start time)
    root_lane: np.ndarray  #: int64 lane index of each root
    name_hash: np.ndarray  #: uint64
    key: np.ndarray  #: uint64 (name and shapes)
    has_shapes: np.ndarray  #: bool: the op records input shapes
    tree_hash: np.ndarray  #: uint64
    fwd: np.ndarray  #: int64 op index of the forward op of a backward op, -1
    et_id: np.ndarray  #: int64, -1 none
    op_of_node: np.ndarray  #: int64 per model node: the op index of its nearest op ancestor, -1

    @property
    def n(self) -> int:
        return int(self.ops.size)

    def children(self, k: int) -> np.ndarray:
        return self.child_index[self.child_start[k]:self.child_start[k + 1]].astype(np.int64)

    def subtree(self, k: int) -> np.ndarray:
        """Op indices under ``k`` (inclusive), preorder."""
        return self.order.subtree(k)

    def roots_in(self, lane: int, lo: float, hi: float) -> np.ndarray:
        """Top-level ops on ``lane`` starting in ``[lo, hi)``, by start time."""
        a, b = np.searchsorted(self.root_lane, [lane, lane + 1])
        r = self.roots[a:b]
        ts = self.trace.ts[self.ops[r]]
        i, j = np.searchsorted(ts, [lo, hi], side="left")
        return r[i:j]


def op_kinds(trace: KinetoTrace) -> tuple[int, ...]:
    """The kinds that are ops in ``trace`` (driver-call traces without cpu_ops: their phases and calls)."""
    if np.any(trace.kind == int(Kind.CPU_OP)):
        return _OP_KINDS
    return _DRIVER_OP_KINDS


def op_forest(linked: LinkedTrace) -> OpForest:
    """The op forest of the linked trace's Kineto part, computed once per trace."""
    kt = linked.kineto
    et_ids = _et_ids(linked)
    key = "diff.op_forest" if et_ids is None else f"diff.op_forest.et{id(linked.et)}"
    return per_trace(kt, key, lambda t: _build(t, et_ids))


def _et_ids(linked: LinkedTrace) -> np.ndarray | None:
    """Per Kineto event, the id of its ET node when linked by rf_id (-1 otherwise); None without an ET."""
    link, et, kt = linked.link, linked.et, linked.kineto
    if link is None or et is None or kt is None:
        return None
    pos = np.asarray(link.kineto_to_et, dtype=np.int64)[: kt.n_events]
    ok = pos >= 0
    ok[ok] &= ~np.asarray(link.heuristic, dtype=bool)[pos[ok]]
    out = np.full(kt.n_events, -1, dtype=np.int64)
    out[ok] = et.ids[pos[ok]]
    return out


def _shape_keys(trace: KinetoTrace, ops: np.ndarray, name_hash: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(key, has_shapes) per op: name hash mixed with the hash of its shapes text."""
    key = name_hash.copy()
    has = np.zeros(ops.size, dtype=bool)
    is_cpu = trace.kind[ops] == int(Kind.CPU_OP)
    if not is_cpu.any():
        return key, has
    frame = per_trace(trace, "cpu_ops_frame", cpu_ops_frame)
    dims, dims_u = pd.factorize(frame["input_dims"], use_na_sentinel=False)
    types, types_u = pd.factorize(frame["input_types"], use_na_sentinel=False)
    pair = dims.astype(np.int64) * max(len(types_u), 1) + types
    uniq, inv = np.unique(pair, return_inverse=True)
    texts = [f"{dims_u[u // max(len(types_u), 1)]}\x1f{types_u[u % max(len(types_u), 1)]}" for u in uniq.tolist()]
    h = text_hashes(texts)[inv]
    present = ((frame["input_dims"] != "") | (frame["input_types"] != "")).to_numpy()
    by_event = np.zeros(trace.n_events, dtype=np.uint64)
    shaped = np.zeros(trace.n_events, dtype=bool)
    ev = frame["event"].to_numpy(dtype=np.int64)
    by_event[ev] = h
    shaped[ev] = present
    has = shaped[ops]
    key[has] = mix64(name_hash[has] ^ mix64(by_event[ops][has] + _POS_BASE))
    return key, has


def _tree_hash(parent: np.ndarray, depth: np.ndarray, child_start: np.ndarray, child_index: np.ndarray,
               key: np.ndarray) -> np.ndarray:
    """Hash of each op's key and its children's hashes (order-sensitive), deepest level first."""
    n = key.size
    pos = np.zeros(n, dtype=np.int64)
    if child_index.size:
        ci = child_index.astype(np.int64)
        pos[ci] = np.arange(ci.size) - child_start[parent[ci]]
    weight = mix64(pos.astype(np.uint64) + _POS_BASE) | _U(1)  # odd: the sum stays order-sensitive
    acc = np.zeros(n, dtype=np.uint64)
    out = np.zeros(n, dtype=np.uint64)
    for level in reversed(depth_levels(depth)):
        out[level] = mix64(key[level] ^ mix64(acc[level] + _POS_BASE))
        p = parent[level]
        ok = p >= 0
        np.add.at(acc, p[ok], out[level][ok] * weight[level][ok])
    return out


def _build(kt: KinetoTrace, et_ids: np.ndarray | None) -> OpForest:
    n_nodes, n = kt.n_nodes, kt.n_events
    is_op_node = np.zeros(n_nodes, dtype=bool)
    is_op_node[:n] = np.isin(kt.kind, op_kinds(kt)) & (kt.lane_of >= 0)
    ops = np.flatnonzero(is_op_node)
    ops = ops[np.argsort(kt.ts[ops], kind="stable")].astype(np.int64)
    compact = np.full(n_nodes, -1, dtype=np.int64)
    compact[ops] = np.arange(ops.size)
    anc = nearest_kept_ancestor(kt.parent.astype(np.int64), ~is_op_node)  # per node: nearest op ancestor (event)
    parent = np.where(anc[ops] >= 0, compact[np.maximum(anc[ops], 0)], -1)
    op_of_node = np.where(is_op_node, compact, np.where(anc >= 0, compact[np.maximum(anc, 0)], -1))
    depth = ancestor_counts(parent)
    idx = np.arange(ops.size)
    child_start, child_index = csr_children(parent, kt.ts[ops], idx)
    top = idx[parent < 0]
    lane = kt.lane_of[ops[top]].astype(np.int64)
    order = np.lexsort((top, kt.ts[ops[top]], lane))
    roots, root_lane = top[order], lane[order]
    pre = tree_preorder(parent, depth, child_start, child_index, roots)
    uniq, inv = np.unique(kt.name_id[ops], return_inverse=True)
    name_hash = text_hashes([kt.names[int(u)] for u in uniq])[inv] if ops.size else np.zeros(0, np.uint64)
    key, has_shapes = _shape_keys(kt, ops, name_hash)
    tree_hash = _tree_hash(parent, depth, child_start, child_index, key)
    fwd_ev = kt.fwd_of[ops].astype(np.int64)
    fwd = np.where(fwd_ev >= 0, compact[np.maximum(fwd_ev, 0)], -1)
    et = et_ids[ops] if et_ids is not None else np.full(ops.size, -1, dtype=np.int64)
    return OpForest(kt, ops, compact, parent, depth, child_start, child_index, pre, roots, root_lane, name_hash, key,
                    has_shapes, tree_hash, fwd, et, op_of_node)
