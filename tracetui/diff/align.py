"""Align the op trees of two steps: which op of A is which op of B, as one merged forest.

One step pair gives one merged forest, in preorder: the **step** row (the two steps), its
children the ops of the thread that holds the step annotation (the children of
``ProfilerStep#N`` on both sides), then one **thread** row per pair of other threads with
ops that start in the step, holding those ops.  Threads pair by thread name where the
trace names them, else by the order of their first op in the step.  When a side has no
step annotation (the whole trace is its step), every thread is a thread row.

Two lists of sibling ops are aligned in order, so an op inserted in B shows as one added
subtree, not as a shift of every op after it:

1. the common prefix and suffix of ops with equal tree hashes (same names, shapes and
   structure below; :mod:`tracetui.diff.forest`) pair as whole subtrees;
2. in what remains, **anchors**: ops of the same name whose ET node ids (linked by
   ``rf_id``) are at the same offset from their step's first one, and backward ops whose
   forward ops (``Sequence number``) are already paired (the main thread is aligned before
   the autograd thread); kept in order by a longest increasing subsequence;
3. between anchors, a longest-matching-blocks alignment (``difflib``, no junk heuristic)
   of the keys (name and input shapes); inside the blocks that differ, ops of the same name
   pair in order (the k-th of a name with the k-th), still in order;
4. the rest are removed (A only) or added (B only) subtrees.

Lists too long for step 3 (more than :data:`DIFFLIB_LIMIT` pairs to compare) pair the k-th
op of a key with the k-th, then the k-th of a name, kept in order.  Paired ops whose tree
hashes differ are aligned again one level down.  How each pair was made is decided after
the alignment, from the evidence (:func:`tracetui.diff.model.match_methods`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from ..analysis.steps import Step
from ..link.align import longest_increasing
from .forest import OpForest

#: above this product of the two lengths a list pair is aligned by order of keys, not difflib
DIFFLIB_LIMIT = 250_000


class RowKind(IntEnum):
    """What a merged row is (a uint8 column)."""

    STEP = 0
    THREAD = 1
    OP = 2


@dataclass
class Merged:
    """A merged forest in preorder: per row its ``kind``, ``a``/``b`` (op indices of each
    side's :class:`OpForest` for op rows, lane indices for thread rows, step indices for step
    rows; -1 where the side has none) and ``parent`` (row index, -1 for the step row)."""

    kind: np.ndarray
    a: np.ndarray
    b: np.ndarray
    parent: np.ndarray

    @property
    def n(self) -> int:
        return int(self.kind.size)


class _Writer:
    """Rows appended in preorder: single rows, or whole subtrees as array blocks."""

    def __init__(self) -> None:
        self.blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.small: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])
        self.n = 0

    def row(self, kind: RowKind, a: int, b: int, parent: int) -> int:
        for col, v in zip(self.small, (int(kind), a, b, parent)):
            col.append(v)
        self.n += 1
        return self.n - 1

    def _flush(self) -> None:
        if self.small[0]:
            self.blocks.append(tuple(np.asarray(c, dtype=np.int64) for c in self.small))  # type: ignore[arg-type]
            self.small = ([], [], [], [])

    def block(self, a: np.ndarray, b: np.ndarray, parent: np.ndarray) -> None:
        self._flush()
        self.blocks.append((np.full(a.size, int(RowKind.OP), dtype=np.int64), a, b, parent))
        self.n += int(a.size)

    def finish(self) -> Merged:
        self._flush()
        if not self.blocks:
            z = np.zeros(0, dtype=np.int64)
            return Merged(z.astype(np.uint8), z, z, z)
        cols = [np.concatenate([blk[i] for blk in self.blocks]) for i in range(4)]
        return Merged(cols[0].astype(np.uint8), cols[1], cols[2], cols[3])


def _lis(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of ``pairs`` (sorted by first item) increasing in both items."""
    pairs = sorted(pairs)
    keep = longest_increasing(np.fromiter((j for _, j in pairs), dtype=np.int64, count=len(pairs)))
    return [pairs[k] for k in keep.tolist()]


def _ordinal_pairs(ka: list[int], kb: list[int]) -> list[tuple[int, int]]:
    """The k-th occurrence of each key in ``ka`` with the k-th in ``kb``, kept in order."""
    where: dict[int, list[int]] = {}
    for j, k in enumerate(kb):
        where.setdefault(k, []).append(j)
    seen: dict[int, int] = {}
    pairs = []
    for i, k in enumerate(ka):
        js = where.get(k)
        if js is None:
            continue
        c = seen.get(k, 0)
        if c < len(js):
            pairs.append((i, js[c]))
            seen[k] = c + 1
    return _lis(pairs)


def _fill(pairs: list[tuple[int, int]], na: int, nb: int, match) -> list[tuple[int, int]]:
    """``pairs`` plus ``match(i0, i1, j0, j1)``'s pairs in each gap between them (all sorted)."""
    out: list[tuple[int, int]] = []
    i0 = j0 = 0
    for i, j in pairs + [(na, nb)]:
        if i > i0 and j > j0:
            out += [(i0 + x, j0 + y) for x, y in match(i0, i, j0, j)]
        if i < na:
            out.append((i, j))
        i0, j0 = i + 1, j + 1
    return out


class StepAligner:
    """Aligns one step of ``fa`` with one step of ``fb`` (see the module docstring)."""

    def __init__(self, fa: OpForest, fb: OpForest) -> None:
        self.fa, self.fb = fa, fb
        self.w = _Writer()
        #: first ET node id among each side's ops in the step (None: no rf_id-linked ET)
        self.et_refs: tuple[int | None, int | None] = (None, None)
        #: op of B paired with each op of A so far (-1: none yet)
        self.pair_b = np.full(fa.n, -1, dtype=np.int64)

    # ------------------------------------------------------------------ lists
    def _anchor_pairs(self, A: np.ndarray, B: np.ndarray) -> list[tuple[int, int]]:
        """Pairs sure before any name is compared: same name and ET node ids at the same
        offset from the step's first; backward ops whose forward ops are already paired."""
        fa, fb = self.fa, self.fb
        pairs: list[tuple[int, int]] = []
        used_a: set[int] = set()
        used_b: set[int] = set()

        def take(keys_a: list, keys_b: list) -> None:
            index: dict = {}
            for j, k in enumerate(keys_b):
                if k is not None:
                    index[k] = -1 if k in index else j
            for i, k in enumerate(keys_a):
                j = index.get(k, -1) if k is not None else -1
                if j >= 0 and i not in used_a and j not in used_b:
                    pairs.append((i, j))
                    used_a.add(i)
                    used_b.add(j)

        ref_a, ref_b = self.et_refs
        if ref_a is not None and ref_b is not None:
            xa, xb = fa.et_id[A], fb.et_id[B]
            take([(h, x - ref_a) if x >= 0 else None for h, x in zip(fa.name_hash[A].tolist(), xa.tolist())],
                 [(h, x - ref_b) if x >= 0 else None for h, x in zip(fb.name_hash[B].tolist(), xb.tolist())])
        fwd_a, fwd_b = fa.fwd[A], fb.fwd[B]
        if (fwd_a >= 0).any() and (fwd_b >= 0).any():
            partner = np.where(fwd_a >= 0, self.pair_b[np.maximum(fwd_a, 0)], -1)
            take([int(x) if x >= 0 else None for x in partner.tolist()],
                 [int(x) if x >= 0 else None for x in fwd_b.tolist()])
        return _lis(pairs)

    def _segment(self, A: np.ndarray, B: np.ndarray):
        """The matcher of the gaps between anchors: ``match(i0, i1, j0, j1)`` -> local pairs."""
        ka = self.fa.key[A].tolist()
        kb = self.fb.key[B].tolist()
        na_ = self.fa.name_hash[A].tolist()
        nb_ = self.fb.name_hash[B].tolist()

        def by_name(i0: int, i1: int, j0: int, j1: int) -> list[tuple[int, int]]:
            return _ordinal_pairs(na_[i0:i1], nb_[j0:j1])

        def match(i0: int, i1: int, j0: int, j1: int) -> list[tuple[int, int]]:
            sa, sb = ka[i0:i1], kb[j0:j1]
            if len(sa) * len(sb) > DIFFLIB_LIMIT:
                first = _ordinal_pairs(sa, sb)
                return _fill(first, len(sa), len(sb), lambda a0, a1, b0, b1: by_name(i0 + a0, i0 + a1, j0 + b0,
                                                                                        j0 + b1))
            out: list[tuple[int, int]] = []
            sm = difflib.SequenceMatcher(None, sa, sb, autojunk=False)
            for tag, a0, a1, b0, b1 in sm.get_opcodes():
                if tag == "equal":
                    out += [(a0 + x, b0 + x) for x in range(a1 - a0)]
                elif tag == "replace":
                    out += [(a0 + x, b0 + y) for x, y in by_name(i0 + a0, i0 + a1, j0 + b0, j0 + b1)]
            return out

        return match

    def _match(self, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The paired positions (i, j) of the two lists, in order on both sides."""
        ha, hb = self.fa.tree_hash[A], self.fb.tree_hash[B]
        n = min(A.size, B.size)
        diff = np.flatnonzero(ha[:n] != hb[:n])
        p = int(diff[0]) if diff.size else n
        m = n - p
        diff = np.flatnonzero(ha[A.size - m:][::-1] != hb[B.size - m:][::-1]) if m else diff[:0]
        q = int(diff[0]) if diff.size else m
        ma, mb = A[p:A.size - q], B[p:B.size - q]
        mid: list[tuple[int, int]] = []
        if ma.size and mb.size:
            mid = _fill(self._anchor_pairs(ma, mb), ma.size, mb.size, self._segment(ma, mb))
        mi = np.array([i for i, _ in mid], dtype=np.int64)
        mj = np.array([j for _, j in mid], dtype=np.int64)
        return (np.concatenate((np.arange(p), p + mi, np.arange(A.size - q, A.size))),
                np.concatenate((np.arange(p), p + mj, np.arange(B.size - q, B.size))))

    # ------------------------------------------------------------------ emit
    @staticmethod
    def _preorder_of(f: OpForest, roots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ops, block offset of each op's parent, is a root) of the subtrees of ``roots``, concatenated."""
        pre, size = f.order.pre[roots], f.order.size[roots]
        offs = np.concatenate(([0], np.cumsum(size)[:-1]))
        which = np.repeat(np.arange(roots.size), size)
        idx = np.repeat(pre - offs, size) + np.arange(int(size.sum()))
        ops = f.order.by_pre[idx]
        local = f.order.pre[np.maximum(f.parent[ops], 0)] - pre[which] + offs[which]
        return ops, local, idx == pre[which]

    def _subtree_blocks(self, roots_a: np.ndarray, roots_b: np.ndarray, parent_row: int) -> None:
        """Whole subtrees as rows: pairs of identical subtrees, or subtrees of one side only."""
        one_side = roots_a[0] < 0 or roots_b[0] < 0
        f, roots = (self.fa, roots_a) if roots_a[0] >= 0 else (self.fb, roots_b)
        ops, local, is_root = self._preorder_of(f, roots)
        par = self.w.n + local
        par[is_root] = parent_row
        none = np.full(ops.size, -1, dtype=np.int64)
        if not one_side:
            other = self._preorder_of(self.fb, roots_b)[0]
            self.pair_b[ops] = other
            self.w.block(ops, other, par)
        elif roots_a[0] >= 0:
            self.w.block(ops, none, par)
        else:
            self.w.block(none, ops, par)

    def _items(self, A: np.ndarray, B: np.ndarray, parent_row: int) -> list[tuple]:
        """The tasks of two aligned sibling lists, in merged order: runs of whole subtrees
        (identical pairs, A only, B only) and the pairs to align one level down."""
        pi, pj = self._match(A, B)
        only_a = np.setdiff1d(np.arange(A.size), pi)
        only_b = np.setdiff1d(np.arange(B.size), pj)
        a, b = A[pi], B[pj]
        same = (self.fa.tree_hash[a] == self.fb.tree_hash[b]) & (self.fa.order.size[a] == self.fb.order.size[b])
        # kind: 0 A only, 1 B only, 2 identical pair, 3 pair to align; each goes before pair k
        kind = np.concatenate((np.zeros(only_a.size), np.ones(only_b.size), np.where(same, 2, 3))).astype(np.int64)
        slot = np.concatenate((np.searchsorted(pi, only_a), np.searchsorted(pj, only_b), np.arange(pi.size)))
        ra = np.concatenate((A[only_a], np.full(only_b.size, -1), a))
        rb = np.concatenate((np.full(only_a.size, -1), B[only_b], b))
        order = np.lexsort((np.minimum(kind, 2), slot))
        kind, ra, rb = kind[order], ra[order], rb[order]
        items: list[tuple] = []
        cuts = np.flatnonzero((kind[1:] != kind[:-1]) | (kind[1:] == 3)) + 1
        for lo, hi in zip(np.concatenate(([0], cuts)).tolist(), np.concatenate((cuts, [kind.size])).tolist()):
            if kind[lo] == 3:
                items.append(("pair", int(ra[lo]), int(rb[lo]), parent_row))
            else:
                items.append(("subs", ra[lo:hi], rb[lo:hi], parent_row))
        return items

    def _run(self, stack: list[tuple]) -> None:
        fa, fb, w = self.fa, self.fb, self.w
        while stack:
            task = stack.pop()
            op = task[0]
            if op == "lists":
                _, A, B, parent_row = task
                if A.size or B.size:
                    stack.extend(reversed(self._items(A, B, parent_row)))
            elif op == "subs":
                self._subtree_blocks(task[1], task[2], task[3])
            elif op == "pair":
                _, a, b, parent_row = task
                row = w.row(RowKind.OP, a, b, parent_row)
                self.pair_b[a] = b
                stack.append(("lists", fa.children(a), fb.children(b), row))
            else:  # "thread"
                _, la, lb, A, B, parent_row = task
                row = w.row(RowKind.THREAD, la, lb, parent_row)
                stack.append(("lists", A, B, row))

    def align(self, sa: Step, ia: int, sb: Step, ib: int) -> Merged:
        """The merged forest of step ``sa`` (index ``ia``) of A and ``sb`` (``ib``) of B."""
        fa, fb = self.fa, self.fb
        main_a = fa.children(int(fa.compact[sa.event])) if sa.event >= 0 and fa.compact[sa.event] >= 0 else None
        main_b = fb.children(int(fb.compact[sb.event])) if sb.event >= 0 and fb.compact[sb.event] >= 0 else None
        both_main = main_a is not None and main_b is not None
        lanes_a = _lane_lists(fa, sa, main_a, keep_main=not both_main)
        lanes_b = _lane_lists(fb, sb, main_b, keep_main=not both_main)
        self.et_refs = (_first_et(fa, lanes_a, main_a), _first_et(fb, lanes_b, main_b))
        root = self.w.row(RowKind.STEP, ia, ib, -1)
        empty = np.zeros(0, dtype=np.int64)
        tasks: list[tuple] = []
        if both_main:
            tasks.append(("lists", main_a, main_b, root))
        for la, lb in pair_lanes(fa, lanes_a, fb, lanes_b):
            tasks.append(("thread", la, lb, lanes_a.get(la, empty), lanes_b.get(lb, empty), root))
        self._run(list(reversed(tasks)))
        return self.w.finish()


def _lane_lists(f: OpForest, step: Step, main: np.ndarray | None, keep_main: bool) -> dict[int, np.ndarray]:
    """Lane index -> the top-level ops of that thread in the step (the step annotation's
    children for its own lane, only when ``keep_main``)."""
    out: dict[int, np.ndarray] = {}
    lanes = np.unique(f.root_lane).tolist()
    for lane in lanes:
        if lane == step.lane and main is not None:
            if keep_main and main.size:
                out[lane] = main
            continue
        r = f.roots_in(lane, step.ts, step.end) if step.event >= 0 else f.roots[f.root_lane == lane]
        if r.size:
            out[lane] = r
    return out


def _first_et(f: OpForest, lanes: dict[int, np.ndarray], main: np.ndarray | None) -> int | None:
    """The smallest ET node id among the step's ops; None when none is linked by rf_id."""
    roots = list(lanes.values()) + ([main] if main is not None else [])
    tops = np.concatenate(roots) if roots else np.zeros(0, dtype=np.int64)
    if not tops.size or not (f.et_id >= 0).any():
        return None
    pre, size = f.order.pre[tops], f.order.size[tops]
    idx = np.repeat(pre - np.cumsum(np.concatenate(([0], size[:-1]))), size) + np.arange(int(size.sum()))
    v = f.et_id[f.order.by_pre[idx]]
    v = v[v >= 0]
    return int(v.min()) if v.size else None


def _thread_name(f: OpForest, lane: int) -> str | None:
    ln = f.trace.lanes[lane]
    return None if ln.short == f"T {ln.tid}" else ln.short


def pair_lanes(fa: OpForest, lanes_a: dict[int, np.ndarray], fb: OpForest, lanes_b: dict[int, np.ndarray]
               ) -> list[tuple[int, int]]:
    """Pairs of lanes (-1: none on that side): by thread name, then by the order of their
    first op; in the order of A's first ops, then B's threads that A lacks."""
    def first(f: OpForest, lanes: dict[int, np.ndarray]) -> list[tuple[float, int]]:
        return sorted((float(f.trace.ts[f.ops[v[0]]]), lane) for lane, v in lanes.items())

    fa_l, fb_l = first(fa, lanes_a), first(fb, lanes_b)
    pairs: list[tuple[int, int]] = []
    by_name: dict[str, list[int]] = {}
    for _, lane in fb_l:
        nm = _thread_name(fb, lane)
        if nm is not None:
            by_name.setdefault(nm, []).append(lane)
    used_b: set[int] = set()
    rest_a = []
    for _, lane in fa_l:
        nm = _thread_name(fa, lane)
        cands = [x for x in by_name.get(nm, []) if x not in used_b] if nm is not None else []
        if cands:
            pairs.append((lane, cands[0]))
            used_b.add(cands[0])
        else:
            rest_a.append(lane)
    rest_b = [lane for _, lane in fb_l if lane not in used_b]
    for k in range(max(len(rest_a), len(rest_b))):
        pairs.append((rest_a[k] if k < len(rest_a) else -1, rest_b[k] if k < len(rest_b) else -1))
    ts_a, ts_b = dict((lane, t) for t, lane in fa_l), dict((lane, t) for t, lane in fb_l)
    # the two traces have their own clocks: A's order, then B's threads that A lacks in B's order
    return (sorted((p for p in pairs if p[0] >= 0), key=lambda p: ts_a[p[0]])
            + sorted((p for p in pairs if p[0] < 0), key=lambda p: ts_b[p[1]]))
