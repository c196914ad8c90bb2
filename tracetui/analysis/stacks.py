"""Call stacks merged by name: what a flame graph, an icicle and a bottom-up table show.

A :class:`CallTree` (a *calling-context tree*) merges the events of a subtree (or of the whole
trace) that have the same **path of names** from the root: the 17 ``aten::linear`` calls
under ``BertLayer`` > ``BertAttention`` become one node holding 17 events.  Each node has
an inclusive value (``total``), the part of it that is not in a child (``self_ns``), the
number of events merged (``calls``) and those events (``events(c)``: the tree's nodes, to
select them in the browser).  Values are **integer nanoseconds**.

What is a frame and what is counted depends on ``mode``:

``cpu``
    frames: every host event with a duration (annotations, cpu_ops, runtime and driver
    calls, ...) but python_function frames, nested as the trace nests them (an op under a
    python frame hangs under the frame's nearest non-python ancestor).  A frame's value is
    its host time: its span clipped to its parent's, rounded to whole ns at both ends, so
    the children of a frame never hold more than it does and **the self times of a subtree
    add up to its root's duration** exactly (its ``dur`` in ns); siblings that overlap (bad
    nesting) have their overlap counted once, in the later sibling's favour (``self_ns`` is
    never below 0).
``python``
    the same with python_function frames kept.
``gpu``
    frames: annotations and cpu_ops (no python frames, no runtime calls), and each GPU
    event (kernel, memcpy, memset) as a leaf under the **innermost op above its launch**
    (the launch call itself is not a frame).  A GPU event's value is its duration, a host
    frame's self value 0: a node's total is the GPU time of the GPU events under it, the
    tree's ``GPU`` column (summed durations, not a union), and the leaves add up to the
    subtree's GPU time.

The root is the chosen node (kept whatever its kind); the whole trace's root is a frame
``whole trace`` whose children are the lanes (threads; in ``gpu`` mode the GPU streams too,
holding GPU events whose launch is not in the trace).  Everything is computed with numpy
per level of the tree (no Python step per event); a node's children are ordered by total,
largest first.

The folded-stack text (:func:`folded_lines`: ``frame;frame;frame value``, what flamegraph.pl,
inferno and speedscope read) has one line per node with a self value above 0; a ``;`` inside
a name is written ``,`` and control characters are escaped visibly (``one_line``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..errors import one_line
from ..kineto.kinds import GPU_WORK_KINDS, HOST_KINDS, Kind
from ..kineto.trace import KinetoTrace
from ..tree.propagate import ancestors_mask, depth_levels, nearest_kept_ancestor

CPU, GPU, PYTHON = "cpu", "gpu", "python"
#: the modes, in the order the icicle's ``v`` steps through them
MODES = (CPU, GPU, PYTHON)
#: what each mode's values are (a label for screens and reports)
MODE_WORDS = {CPU: "CPU time", GPU: "GPU time", PYTHON: "CPU time with python frames"}
#: the root frame of the whole trace
WHOLE_TRACE = "whole trace"

_HOST = np.array(sorted(int(k) for k in HOST_KINDS), dtype=np.uint8)
_GPU_WORK = np.array(sorted(int(k) for k in GPU_WORK_KINDS), dtype=np.uint8)
#: host kinds that are not frames of the gpu mode (a launch is not "the op that launched it")
_NOT_GPU_FRAMES = np.array(sorted(int(k) for k in (Kind.PYTHON, Kind.RUNTIME, Kind.DRIVER, Kind.SYNC,
                                                   Kind.TRACED_CALL, Kind.IOCTL, Kind.RECORD)), dtype=np.uint8)


@dataclass
class CallTree:
    """Nodes ``0 .. n-1`` (0: the root), in levels (a node's children are contiguous ids);
    per node: ``label`` (into :meth:`label_text`), ``parent`` (-1 at the root), ``depth``,
    ``total``/``self_ns`` (int64 ns), ``calls``; CSR ``child_start``/``child_index`` (by
    total, largest first) and ``event_start``/``event_index`` (the trace's nodes merged into
    each, in tree order)."""

    mode: str
    root: int | None  #: the trace node at the root; None: the whole trace
    names: list[str]  #: the trace's names (labels below ``len(names)``)
    extra: list[str]  #: labels from ``len(names)`` on: lanes, the whole trace
    label: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    total: np.ndarray
    self_ns: np.ndarray
    calls: np.ndarray
    child_start: np.ndarray
    child_index: np.ndarray
    event_start: np.ndarray
    event_index: np.ndarray
    #: per node: no ancestor has its label (its total is then counted once in a name's total)
    outermost: np.ndarray

    @property
    def n(self) -> int:
        return int(self.label.size)

    def label_text(self, lab: int) -> str:
        lab = int(lab)
        return self.names[lab] if lab < len(self.names) else self.extra[lab - len(self.names)]

    def name(self, c: int) -> str:
        return self.label_text(self.label[c])

    def children(self, c: int) -> np.ndarray:
        return self.child_index[self.child_start[c]:self.child_start[c + 1]]

    def events(self, c: int) -> np.ndarray:
        """The trace nodes merged into ``c`` (tree order)."""
        return self.event_index[self.event_start[c]:self.event_start[c + 1]]

    def path(self, c: int) -> list[int]:
        """``c``'s ancestors and itself, the root first."""
        out = []
        while c >= 0:
            out.append(int(c))
            c = int(self.parent[c])
        return out[::-1]

    def is_under(self, c: int, a: int) -> bool:
        """``c`` is ``a`` or under it."""
        while c >= 0 and self.depth[c] > self.depth[a]:
            c = int(self.parent[c])
        return c == a

    def preorder(self) -> np.ndarray:
        """Every node in depth-first order, children by total (largest first)."""
        out = np.empty(self.n, dtype=np.int64)
        stack = [0]
        k = 0
        cs, ci = self.child_start, self.child_index
        while stack:
            c = stack.pop()
            out[k] = c
            k += 1
            stack.extend(ci[cs[c]:cs[c + 1]][::-1].tolist())
        return out[:k]


def call_tree(kt: KinetoTrace, root: int | None, mode: str = CPU) -> CallTree:
    """The :class:`CallTree` of ``root``'s subtree (None: the whole trace) in ``mode``
    (module docstring)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (expected {', '.join(MODES)})")
    n_ev = kt.n_events
    extra: list[str] = []
    if root is None:
        lanes = [ln for ln in kt.lanes if mode == GPU or not ln.is_gpu]
        parts = [kt.subtree(ln.node) for ln in lanes]
        sub = np.concatenate([np.full(1, -1, dtype=np.int64), *parts]) if parts else np.full(1, -1, dtype=np.int64)
        extra.append(WHOLE_TRACE)
    else:
        sub = kt.subtree(int(root))
    m = sub.size
    # local parents: positions in sub (-1: the root; the whole trace's lanes hang under it)
    pos = np.full(kt.n_nodes + 1, -1, dtype=np.int64)
    pos[sub[sub >= 0]] = np.flatnonzero(sub >= 0)
    node = np.maximum(sub, 0)
    lpar = np.where(sub >= 0, pos[np.where(sub >= 0, kt.parent[node], -1)], -1)
    lpar[0] = -1
    if root is None:
        lpar[(sub >= n_ev)] = 0  # lanes under the whole trace
    is_ev = (sub >= 0) & (sub < n_ev)
    kind = np.where(is_ev, kt.kind[np.minimum(node, max(n_ev - 1, 0))] if n_ev else 0, 255).astype(np.int64)
    keep = _kept(kind, is_ev, mode)
    keep[0] = True
    keep[~is_ev] = True  # lanes and the whole trace
    if mode == GPU:  # only the frames above GPU work
        work = np.flatnonzero(keep & is_ev & np.isin(kind, _GPU_WORK))
        keep &= ancestors_mask(lpar, work) | (is_ev & np.isin(kind, _GPU_WORK))
        keep[0] = True
    ep = nearest_kept_ancestor(lpar, ~keep)
    ep[0] = -1
    kept = np.flatnonzero(keep)
    # labels: the trace's names; lanes and the whole trace after them
    names = kt.names
    label = np.zeros(m, dtype=np.int64)
    label[is_ev] = kt.name_id[sub[is_ev]]
    lane_pos = np.flatnonzero(sub >= n_ev)
    for p in lane_pos.tolist():
        label[p] = len(names) + len(extra)
        extra.append(kt.lanes[int(sub[p]) - n_ev].label)
    if sub[0] < 0:
        label[0] = len(names)
    # kept depth (the merged tree's depth), one numpy step per level of the trace's tree
    tdepth = np.zeros(m, dtype=np.int64)
    tdepth[sub >= 0] = kt.depth[sub[sub >= 0]]
    if root is None:
        tdepth[sub >= 0] += 1
    kdepth = np.zeros(m, dtype=np.int64)
    levels = depth_levels(tdepth, kept)
    for grp in levels:
        grp = grp[ep[grp] >= 0]
        kdepth[grp] = kdepth[ep[grp]] + 1
    values = _values(kt, sub, is_ev, kind, keep, ep, levels, mode)
    return _merge(mode, root, names, extra, kept, ep, kdepth, label, sub, values)


def _kept(kind: np.ndarray, is_ev: np.ndarray, mode: str) -> np.ndarray:
    host = np.isin(kind, _HOST) & is_ev
    if mode == CPU:
        return host & (kind != int(Kind.PYTHON))
    if mode == PYTHON:
        return host
    return (host & ~np.isin(kind, _NOT_GPU_FRAMES)) | (np.isin(kind, _GPU_WORK) & is_ev)


def _values(kt: KinetoTrace, sub: np.ndarray, is_ev: np.ndarray, kind: np.ndarray, keep: np.ndarray,
            ep: np.ndarray, levels: list[np.ndarray], mode: str) -> np.ndarray:
    """Self values (int64 ns) per position of ``sub`` (0 where not kept)."""
    m = sub.size
    out = np.zeros(m, dtype=np.int64)
    ev = np.flatnonzero(is_ev & keep)
    if mode == GPU:
        gpu = ev[np.isin(kind[ev], _GPU_WORK)]
        out[gpu] = np.rint(kt.dur[sub[gpu]] * 1000.0).astype(np.int64)
        return out
    # spans clipped to the nearest kept ancestor's clipped span, level by level
    lo = np.full(m, -np.inf)
    hi = np.full(m, np.inf)
    lo[ev] = kt.ts[sub[ev]]
    hi[ev] = kt.ts[sub[ev]] + np.maximum(kt.dur[sub[ev]], 0.0)
    for grp in levels:
        grp = grp[(ep[grp] >= 0) & is_ev[grp]]
        p = ep[grp]
        lo[grp] = np.maximum(lo[grp], lo[p])
        hi[grp] = np.minimum(hi[grp], hi[p])
        hi[grp] = np.maximum(hi[grp], lo[grp])
    incl = np.zeros(m, dtype=np.int64)
    incl[ev] = np.rint(hi[ev] * 1000.0).astype(np.int64) - np.rint(lo[ev] * 1000.0).astype(np.int64)
    kids = np.flatnonzero(keep & (ep >= 0))
    below = np.zeros(m, dtype=np.int64)
    np.add.at(below, ep[kids], incl[kids])
    out[ev] = np.maximum(incl[ev] - below[ev], 0)
    return out


def _merge(mode: str, root: int | None, names: list[str], extra: list[str], kept: np.ndarray, ep: np.ndarray,
           kdepth: np.ndarray, label: np.ndarray, sub: np.ndarray, values: np.ndarray) -> CallTree:
    """Merge the kept positions with the same (merged parent, label), one kept depth at a time."""
    m = sub.size
    cct = np.full(m, -1, dtype=np.int64)
    cct[0] = 0
    labels, parents, depths = [label[:1]], [np.full(1, -1, dtype=np.int64)], [np.zeros(1, dtype=np.int64)]
    next_id = 1
    for grp in depth_levels(kdepth, kept)[1:]:
        pc = cct[ep[grp]]
        key = pc * (len(names) + len(extra) + 1) + label[grp]
        uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
        cct[grp] = next_id + inv
        labels.append(label[grp[first]])
        parents.append(pc[first])
        depths.append(np.full(uniq.size, int(kdepth[grp[0]]), dtype=np.int64))
        next_id += uniq.size
    lab = np.concatenate(labels)
    par = np.concatenate(parents)
    dep = np.concatenate(depths)
    n = lab.size
    self_ns = np.bincount(cct[kept], weights=values[kept], minlength=n).round().astype(np.int64)
    total = self_ns.copy()
    for grp in reversed(depth_levels(dep, np.arange(1, n))):
        np.add.at(total, par[grp], total[grp])
    # children: contiguous ids per parent (np.unique sorted the keys by parent), by total
    order = np.lexsort((-total[1:], par[1:])) + 1 if n > 1 else np.zeros(0, dtype=np.int64)
    child_start = np.zeros(n + 1, dtype=np.int64)
    np.add.at(child_start, par[1:] + 1, 1)
    child_start = np.cumsum(child_start)
    held = kept[sub[kept] >= 0]  # the whole trace's root holds no event
    calls = np.bincount(cct[held], minlength=n).astype(np.int64)
    event_start = np.zeros(n + 1, dtype=np.int64)
    event_start[1:] = np.cumsum(calls)
    events = sub[held[np.argsort(cct[held], kind="stable")]]
    return CallTree(mode, root, names, extra, lab, par, dep, total, self_ns, calls, child_start, order,
                    event_start, events, _outermost(lab, par, dep))


def _outermost(lab: np.ndarray, par: np.ndarray, dep: np.ndarray) -> np.ndarray:
    """Per node: no ancestor has its label (one numpy step per level of depth)."""
    out = np.ones(lab.size, dtype=bool)
    anc = par.copy()
    live = np.flatnonzero(anc >= 0)
    while live.size:
        same = lab[anc[live]] == lab[live]
        out[live[same]] = False
        live = live[~same]
        anc[live] = par[anc[live]]
        live = live[anc[live] >= 0]
    return out


def frame_text(name: str) -> str:
    """A frame of the folded text: one line, ``;`` written ``,``."""
    return one_line(name).replace(";", ",")


def folded_lines(tree: CallTree) -> Iterator[str]:
    """``frame;frame;frame value`` per node with a self value above 0 (value: integer ns),
    depth first, children largest first (module docstring); the whole trace's stacks start
    at their lane (thread or stream), its root frame is not written."""
    texts: dict[int, str] = {}
    path: dict[int, str] = {}
    for c in tree.preorder().tolist():
        lab = int(tree.label[c])
        t = texts.get(lab)
        if t is None:
            t = texts[lab] = frame_text(tree.label_text(lab))
        p = int(tree.parent[c])
        if p < 0:
            s = path[c] = "" if tree.root is None else t  # the whole trace: stacks start at their lane
        else:
            s = path[c] = t if not path[p] else path[p] + ";" + t
        v = int(tree.self_ns[c])
        if v > 0:
            yield f"{s} {v}"
