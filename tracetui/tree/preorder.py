"""Vectorised preorder numbering of a forest held as parent / depth / CSR-children arrays.

:func:`tree_preorder` numbers the nodes in the order a depth-first walk visits them (roots
in the given order, each node's children in their CSR order), without a Python loop per
node: subtree sizes are summed bottom-up and offsets assigned top-down, one numpy step per
depth level.  The subtree of ``x`` is then the slice ``by_pre[pre[x] : pre[x] + size[x]]``.
Used for the Kineto tree (``KinetoTrace.order``) and the Execution Trace's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Preorder", "tree_preorder"]

#: above this many depth levels (and more than one level per 10 nodes) walk in Python instead
_WALK_LEVELS = 1_000


@dataclass(frozen=True)
class Preorder:
    """``pre[node]``: preorder index (-1: not under any root, e.g. an instant event outside
    the tree); ``size[node]``: nodes in its subtree, itself included; ``by_pre[i]``: the
    node with preorder index ``i`` (int64 arrays)."""

    pre: np.ndarray
    size: np.ndarray
    by_pre: np.ndarray

    def subtree(self, node: int) -> np.ndarray:
        """Nodes under ``node`` (inclusive) in preorder; empty when ``node`` is not in the tree."""
        p = int(self.pre[node])
        if p < 0:
            return np.empty(0, dtype=np.int64)
        return self.by_pre[p : p + int(self.size[node])]

    def in_subtrees(self, seeds: np.ndarray) -> np.ndarray:
        """Bool per node: inside the subtree of any of ``seeds`` (seeds included)."""
        n = self.pre.size
        seeds = np.asarray(seeds, dtype=np.int64)
        seeds = seeds[self.pre[seeds] >= 0]
        diff = np.zeros(self.by_pre.size + 1, dtype=np.int64)
        np.add.at(diff, self.pre[seeds], 1)
        np.add.at(diff, self.pre[seeds] + self.size[seeds], -1)
        inside_pre = np.cumsum(diff[:-1]) > 0
        out = np.zeros(n, dtype=bool)
        out[self.by_pre[inside_pre]] = True
        return out


def tree_preorder(parent: np.ndarray, depth: np.ndarray, child_start: np.ndarray, child_index: np.ndarray,
                  roots: np.ndarray) -> Preorder:
    """Preorder of the forest under ``roots`` (in the given order).  ``depth[child]`` must be
    ``depth[parent] + 1``; nodes whose chain of parents reaches no root get ``pre == -1``
    (``size`` is meaningful only where ``pre >= 0``)."""
    n = parent.size
    parent = parent.astype(np.int64, copy=False)
    roots = np.asarray(roots, dtype=np.int64)
    in_tree = parent >= 0
    in_tree[roots] = True
    nodes = np.flatnonzero(in_tree)
    d = depth[nodes].astype(np.int64)
    o = np.argsort(d, kind="stable")
    ordered, ds = nodes[o], d[o]
    level_starts = np.flatnonzero(np.diff(ds)) + 1
    if level_starts.size > _WALK_LEVELS and level_starts.size * 10 > n:
        # a deep, thin tree (a 50,000-deep chain): one numpy step per level would cost more
        # than one Python step per node
        return _walk_preorder(parent, child_start, child_index, roots)
    groups = np.split(ordered, level_starts) if ordered.size else []
    size = np.zeros(n, dtype=np.int64)
    size[nodes] = 1
    for grp in reversed(groups):  # deepest level first: each adds its sizes to its parents
        p = parent[grp]
        m = p >= 0
        if m.any():
            np.add.at(size, p[m], size[grp[m]])
    # offset of each child within its parent's subtree: sizes of the earlier siblings
    ci = child_index.astype(np.int64, copy=False)
    sz = size[ci]
    excl = np.cumsum(sz) - sz
    seg_parent = np.repeat(np.arange(n, dtype=np.int64), np.diff(child_start))
    off = np.zeros(n, dtype=np.int64)
    if ci.size:
        off[ci] = excl - excl[child_start[:-1][seg_parent]]
    pre = np.full(n, -1, dtype=np.int64)
    if roots.size:
        rs = size[roots]
        pre[roots] = np.cumsum(rs) - rs
    for grp in groups:  # top level first: a child follows its parent and earlier siblings
        g = grp[parent[grp] >= 0]
        pp = pre[parent[g]]
        pre[g] = np.where(pp >= 0, pp + 1 + off[g], -1)
    total = int(size[roots].sum()) if roots.size else 0
    by_pre = np.empty(total, dtype=np.int64)
    ok = pre >= 0
    by_pre[pre[ok]] = np.flatnonzero(ok)
    return Preorder(pre, size, by_pre)


def _walk_preorder(parent: np.ndarray, child_start: np.ndarray, child_index: np.ndarray,
                   roots: np.ndarray) -> Preorder:
    """The same numbering by an explicit-stack walk (linear in the nodes, no recursion)."""
    n = parent.size
    cs, ci = child_start.tolist(), child_index.tolist()
    order: list[int] = []
    stack = roots[::-1].tolist()
    while stack:
        x = stack.pop()
        order.append(x)
        a, b = cs[x], cs[x + 1]
        if a < b:
            stack.extend(ci[b - 1 : a - 1 if a else None : -1])
    by_pre = np.asarray(order, dtype=np.int64)
    pre = np.full(n, -1, dtype=np.int64)
    pre[by_pre] = np.arange(by_pre.size, dtype=np.int64)
    sizes = [0] * n
    par = parent.tolist()
    for x in reversed(order):  # children come after their parent: sum sizes from the end
        sizes[x] += 1
        p = par[x]
        if p >= 0:
            sizes[p] += sizes[x]
    return Preorder(pre, np.asarray(sizes, dtype=np.int64), by_pre)
