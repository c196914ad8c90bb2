"""The merged tree of two traces as columns: one row per aligned op, thread and step.

Rows are in preorder (a row's subtree is the rows ``r .. r + size[r] - 1``).  Per row:

* ``parent`` (row, -1 for the step row), ``depth`` (0 for the step row), ``kind``
  (:class:`~tracetui.diff.align.RowKind`), ``method`` (:class:`Match`: how the row was
  matched), ``shapes_changed`` (paired ops whose recorded input shapes differ);
* ``ev_a`` / ``ev_b``: the row's node in each side's :class:`~tracetui.kineto.trace.KinetoTrace`
  (an event for op and step rows, the lane's root node for thread rows; -1 where the side
  has none, and for the step row of a side without steps); ``in_a`` / ``in_b`` say whether
  the side has the row at all (``removed`` = A only, ``added`` = B only);
* per side, **per-step means** over the compared steps: ``host_a/b`` (host duration, µs),
  ``gpu_a/b`` (GPU time, µs: summed durations of the kernels, memcpys and memsets the op and
  everything under it launched: :func:`tracetui.analysis.frames.gpu_totals`),
  ``gpu_n_a/b`` (how many such GPU events).  The step row holds the step's own numbers
  (host duration; GPU events launched in the step from any thread, as
  ``launches.step_table`` counts them); a thread row the sums of its ops;
* derived: ``d_host``, ``d_gpu`` (B - A, µs), ``d_host_pct``, ``d_gpu_pct`` (of A; NaN
  when A is 0), ``self_gpu_a/b`` (a row's GPU time minus its children's: the GPU work its
  own runtime calls launched), ``self_host_a/b`` (host time minus the children's).

With several steps per side, each side's steps are aligned to its *template* step (the
one of median host duration); an op's number is the sum over the steps of its matched
ops, divided by the number of steps (an op missing from a step adds 0).  Ops of the other
steps that match nothing in the template are counted in :attr:`DiffSide.unmatched_ops`.
The events a row points at (``ev_a``/``ev_b``) are those of the template steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from ..analysis.frames import gpu_totals
from ..analysis.steps import Step, Steps
from ..session import LinkedTrace
from ..tree.propagate import ancestor_counts, sum_up
from .align import Merged, RowKind, StepAligner
from .forest import OpForest


class Match(IntEnum):
    """How a row was matched (a uint8 column); see docs/diff.md."""

    STEP = 0  #: the two compared steps
    THREAD = 1  #: threads paired by name, else by the order of their first op
    ET = 2  #: same name, ET node ids (rf_id links) at the same offset from the step's first
    SEQ = 3  #: backward ops whose forward ops (by Sequence number) are paired with each other
    SHAPES = 4  #: path of names, order among siblings, and equal recorded input shapes
    NAME = 5  #: path of names and order among siblings (shapes not recorded, or different)
    ADDED = 6  #: only in B
    REMOVED = 7  #: only in A


MATCH_WORDS = {m: m.name.lower() for m in Match}


@dataclass
class DiffSide:
    """One side of a diff: the loaded trace, its op forest, its steps and which were compared.

    ``used``: indices into ``steps.steps`` of the compared steps; ``template``: the one the
    others were aligned to; ``step_host_us``/``step_gpu_us``/``step_gpu_n``: per compared
    step, its host duration and the GPU events launched in it (time µs, count);
    ``unmatched_ops``/``unmatched_gpu_us``: ops of the non-template steps that match no op of
    the template (count, and the GPU time of those subtrees, summed over the steps)."""

    label: str
    linked: LinkedTrace
    forest: OpForest
    steps: Steps
    used: tuple[int, ...]
    template: int
    step_host_us: np.ndarray
    step_gpu_us: np.ndarray
    step_gpu_n: np.ndarray
    unmatched_ops: int = 0
    unmatched_gpu_us: float = 0.0

    @property
    def n_steps(self) -> int:
        return len(self.used)

    @property
    def template_step(self) -> Step:
        return self.steps.steps[self.template]

    @property
    def used_steps(self) -> list[Step]:
        return [self.steps.steps[k] for k in self.used]


@dataclass
class DiffTree:
    """The merged tree (columns described in the module docstring) and its two sides."""

    a: DiffSide
    b: DiffSide
    parent: np.ndarray
    depth: np.ndarray
    kind: np.ndarray
    method: np.ndarray
    shapes_changed: np.ndarray
    ev_a: np.ndarray
    ev_b: np.ndarray
    in_a: np.ndarray
    in_b: np.ndarray
    op_a: np.ndarray  #: op index in A's forest (op rows), -1 otherwise
    op_b: np.ndarray
    host_a: np.ndarray
    host_b: np.ndarray
    gpu_a: np.ndarray
    gpu_b: np.ndarray
    gpu_n_a: np.ndarray
    gpu_n_b: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_rows(self) -> int:
        return int(self.parent.size)

    @property
    def added(self) -> np.ndarray:
        return self.in_b & ~self.in_a

    @property
    def removed(self) -> np.ndarray:
        return self.in_a & ~self.in_b

    @property
    def d_host(self) -> np.ndarray:
        return self.host_b - self.host_a

    @property
    def d_gpu(self) -> np.ndarray:
        return self.gpu_b - self.gpu_a

    @property
    def d_gpu_pct(self) -> np.ndarray:
        return _pct(self.gpu_b, self.gpu_a)

    @property
    def d_host_pct(self) -> np.ndarray:
        return _pct(self.host_b, self.host_a)

    @property
    def size(self) -> np.ndarray:
        """Rows in each row's subtree, itself included."""
        if "size" not in self._cache:
            size = np.ones(self.n_rows, dtype=np.int64)
            sum_up(self.parent, self.depth, size)
            self._cache["size"] = size
        return self._cache["size"]

    def own(self, what: str, side: str) -> np.ndarray:
        """``what`` ("gpu" or "host") of each op row on ``side`` ("a"/"b") minus its children's:
        the GPU work its own runtime calls launched, the host time not in an op below it
        (0 for step and thread rows); computed once."""
        key = f"self_{what}_{side}"
        if key not in self._cache:
            v = getattr(self, f"{what}_{side}")
            out = v.copy()
            kids = np.flatnonzero(self.parent >= 0)
            np.add.at(out, self.parent[kids], -v[kids])
            out[self.kind != int(RowKind.OP)] = 0.0
            self._cache[key] = np.maximum(out, 0.0)
        return self._cache[key]

    self_gpu_a = property(lambda self: self.own("gpu", "a"))
    self_gpu_b = property(lambda self: self.own("gpu", "b"))
    self_host_a = property(lambda self: self.own("host", "a"))
    self_host_b = property(lambda self: self.own("host", "b"))

    def children(self, row: int) -> np.ndarray:
        """The rows whose parent is ``row``, in order."""
        if "csr" not in self._cache:
            kids = np.flatnonzero(self.parent >= 0)
            counts = np.bincount(self.parent[kids], minlength=self.n_rows)
            start = np.zeros(self.n_rows + 1, dtype=np.int64)
            np.cumsum(counts, out=start[1:])
            self._cache["csr"] = (start, kids[np.argsort(self.parent[kids], kind="stable")])
        start, index = self._cache["csr"]
        return index[start[row]:start[row + 1]]

    def side(self, which: str) -> DiffSide:
        return self.a if which == "a" else self.b

    def event(self, row: int, which: str) -> int:
        """The row's node in side ``which`` ("a" or "b"): an event id (op or step rows), a
        lane root node (thread rows), or -1."""
        return int((self.ev_a if which == "a" else self.ev_b)[row])

    def name(self, row: int) -> str:
        """The row's label: the op's name, the thread's label, the step's name(s)."""
        kind = RowKind(int(self.kind[row]))
        sides = [(s, int(ev)) for s, ev, has in ((self.a, self.ev_a[row], self.in_a[row]),
                                                 (self.b, self.ev_b[row], self.in_b[row])) if has]
        if kind == RowKind.STEP:
            words = []
            for s in (self.a, self.b):
                st = s.template_step
                words.append(st.name if s.n_steps == 1 else f"{s.n_steps} steps ({s.steps.how})")
            return words[0] if words[0] == words[1] else f"{words[0]} ↔ {words[1]}"
        labels = []
        for s, ev in sides:
            kt = s.linked.kineto
            labels.append(kt.name(ev) if ev >= 0 else "")
        if kind == RowKind.THREAD and len(labels) == 2 and labels[0] != labels[1]:
            return f"{labels[0]} ↔ {labels[1]}"
        return labels[0] if labels else ""

    def path(self, row: int) -> list[int]:
        """Rows from the step row down to ``row``."""
        out = [row]
        while self.parent[out[-1]] >= 0:
            out.append(int(self.parent[out[-1]]))
        return out[::-1]


def _pct(b: np.ndarray, a: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a > 0, (b - a) * 100.0 / np.where(a > 0, a, 1.0), np.nan)


def template_of(steps: Steps, used: tuple[int, ...]) -> int:
    """The compared step of median host duration (the earlier of two middles)."""
    durs = sorted((steps.steps[k].dur, k) for k in used)
    return durs[(len(durs) - 1) // 2][1]


def _per_step_sums(side: DiffSide) -> np.ndarray:
    """(3, n_ops): per op of the template step, the summed host µs, GPU µs and GPU event
    count of its matched ops over the compared steps; sets the side's unmatched counts."""
    f = side.forest
    kt = f.trace
    gpu_us, gpu_n = gpu_totals(kt)
    vals = np.stack([kt.dur[f.ops], gpu_us[f.ops], gpu_n[f.ops].astype(np.float64)])
    acc = np.zeros_like(vals)
    t = side.template
    st = side.steps.steps
    unmatched, unmatched_gpu = 0, 0.0
    for k in side.used:
        m = StepAligner(f, f).align(st[t], t, st[k], k)
        op = m.kind == int(RowKind.OP)
        both = op & (m.a >= 0) & (m.b >= 0)
        np.add.at(acc, (slice(None), m.a[both]), vals[:, m.b[both]])
        extra = op & (m.a < 0)
        if extra.any():
            unmatched += int(extra.sum())
            par = m.parent[extra]
            roots = np.flatnonzero(extra)[(m.kind[par] != int(RowKind.OP)) | (m.a[par] >= 0)]
            unmatched_gpu += float(vals[1, m.b[roots]].sum())
    side.unmatched_ops, side.unmatched_gpu_us = unmatched, unmatched_gpu
    return acc


def build_tree(a: DiffSide, b: DiffSide) -> DiffTree:
    """Align the template steps of ``a`` and ``b`` and fill the per-step means."""
    aligner = StepAligner(a.forest, b.forest)
    m: Merged = aligner.align(a.template_step, a.template, b.template_step, b.template)
    kind = m.kind
    is_op, is_thread, is_step = (kind == int(RowKind.OP)), (kind == int(RowKind.THREAD)), (kind == int(RowKind.STEP))
    in_a, in_b = (m.a >= 0), (m.b >= 0)
    cols = {}
    for name, side, idx, has in (("a", a, m.a, in_a), ("b", b, m.b, in_b)):
        f = side.forest
        ev = np.full(m.n, -1, dtype=np.int64)
        ok = is_op & has
        ev[ok] = f.ops[idx[ok]]
        th = is_thread & has
        ev[th] = np.array([f.trace.lanes[int(x)].node for x in idx[th]], dtype=np.int64)
        ev[is_step] = side.template_step.event
        sums = _per_step_sums(side) / max(side.n_steps, 1)
        v = np.zeros((3, m.n), dtype=np.float64)
        v[:, ok] = sums[:, idx[ok]]
        kids = np.flatnonzero(is_op & (m.parent >= 0))
        thread_kids = kids[is_thread[m.parent[kids]]]
        np.add.at(v, (slice(None), m.parent[thread_kids]), v[:, thread_kids])
        v[0, is_step] = side.step_host_us.mean() if side.step_host_us.size else 0.0
        v[1, is_step] = side.step_gpu_us.mean() if side.step_gpu_us.size else 0.0
        v[2, is_step] = side.step_gpu_n.mean() if side.step_gpu_n.size else 0.0
        op_idx = np.where(ok, idx, -1)
        cols[name] = (ev, v, op_idx)
    method, shapes_changed = match_methods(a.forest, b.forest, m, aligner.et_refs)
    (ev_a, va, op_a), (ev_b, vb, op_b) = cols["a"], cols["b"]
    return DiffTree(a, b, m.parent, ancestor_counts(m.parent), kind, method, shapes_changed, ev_a, ev_b,
                    in_a | is_step, in_b | is_step, op_a, op_b, va[0], vb[0], va[1], vb[1], va[2], vb[2])


def match_methods(fa: OpForest, fb: OpForest, m: Merged, et_refs: tuple[int | None, int | None]
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(method, shapes_changed) per merged row, from the evidence each pair has (strongest first:
    ET ids, then the autograd link, then shapes, then names)."""
    method = np.full(m.n, int(Match.NAME), dtype=np.uint8)
    method[m.kind == int(RowKind.STEP)] = int(Match.STEP)
    method[m.kind == int(RowKind.THREAD)] = int(Match.THREAD)
    method[(m.a < 0) & (m.b >= 0)] = int(Match.ADDED)
    method[(m.a >= 0) & (m.b < 0)] = int(Match.REMOVED)
    op = np.flatnonzero((m.a >= 0) & (m.b >= 0) & (m.kind == int(RowKind.OP)))
    a, b = m.a[op], m.b[op]
    shapes = fa.has_shapes[a] & fb.has_shapes[b]
    same_key = fa.key[a] == fb.key[b]
    out = np.where(shapes & same_key, int(Match.SHAPES), int(Match.NAME))
    pair_b = np.full(fa.n, -1, dtype=np.int64)
    pair_b[a] = b
    fwd_a, fwd_b = fa.fwd[a], fb.fwd[b]
    seq_ok = (fwd_a >= 0) & (fwd_b >= 0) & (pair_b[np.maximum(fwd_a, 0)] == fwd_b)
    out = np.where(seq_ok, int(Match.SEQ), out)
    if et_refs[0] is not None and et_refs[1] is not None:
        x, y = fa.et_id[a], fb.et_id[b]
        out = np.where((x >= 0) & (y >= 0) & ((x - et_refs[0]) == (y - et_refs[1])), int(Match.ET), out)
    method[op] = out
    changed = np.zeros(m.n, dtype=bool)
    changed[op] = shapes & ~same_key
    return method, changed
