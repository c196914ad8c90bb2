"""Bottom-up: self time by name, then who called it (a :class:`~tracetui.analysis.stacks.CallTree`
read from its leaves up).

The first level has a row per name: its **self** time (summed over every node of the tree
with that name: the time in it and in none of its children), its **total** time (the
inclusive time of its outermost calls: a call inside a call of the same name is counted once,
in the outer one) and its **calls** (events).  Descending into a row gives its callers: a row
per name of the frame right above, with the part of the row's self time, total and calls that
came through that caller; descending again gives the callers' callers, and so on.  So the
self times of a level add up to the row above's (a frame at the root has no caller: its part
is in no caller row).

A :class:`BottomUpRow` holds the tree nodes it sums (``leaves``: nodes named as the first
level's row) and, per leaf, the ancestor reached (``at``); its events are the leaves' events:
the calls of the first level's name made through that chain of callers.  All numpy, one
grouping per level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .stacks import CallTree


@dataclass(frozen=True)
class BottomUpRow:
    """One row: ``label`` (a name of the tree), ``self_ns``, ``total_ns``, ``calls`` and the
    tree nodes it sums (``leaves``) with the ancestor reached per leaf (``at``)."""

    label: int
    self_ns: int
    total_ns: int
    calls: int
    leaves: np.ndarray
    at: np.ndarray


def _rows(tree: CallTree, leaves: np.ndarray, at: np.ndarray, group: np.ndarray) -> list[BottomUpRow]:
    """Rows grouping ``(leaves, at)`` by the label ``group``, most self time first (then total,
    then name)."""
    if not leaves.size:
        return []
    order = np.argsort(group, kind="stable")
    g, lv, a = group[order], leaves[order], at[order]
    cuts = np.flatnonzero(np.diff(g)) + 1
    starts = np.concatenate(([0], cuts))
    self_ns = np.add.reduceat(tree.self_ns[lv], starts)
    total = np.add.reduceat(np.where(tree.outermost[lv], tree.total[lv], 0), starts)
    calls = np.add.reduceat(tree.calls[lv], starts)
    ends = np.append(cuts, lv.size)
    rows = [BottomUpRow(int(g[s]), int(self_ns[k]), int(total[k]), int(calls[k]), lv[s:e], a[s:e])
            for k, (s, e) in enumerate(zip(starts.tolist(), ends.tolist()))]
    rows.sort(key=lambda r: (-r.self_ns, -r.total_ns, tree.label_text(r.label)))
    return rows


def top_rows(tree: CallTree) -> list[BottomUpRow]:
    """A row per name of the tree (the whole trace's root and the lanes left out: they are
    not functions)."""
    nodes = np.arange(tree.n, dtype=np.int64)
    nodes = nodes[tree.label[nodes] < len(tree.names)]
    return _rows(tree, nodes, nodes, tree.label[nodes])


def caller_rows(tree: CallTree, row: BottomUpRow) -> list[BottomUpRow]:
    """The callers of ``row``: a row per name of the frame above each of its ``at`` nodes."""
    up = tree.parent[row.at]
    has = up >= 0
    return _rows(tree, row.leaves[has], up[has], tree.label[up[has]])


def row_events(tree: CallTree, row: BottomUpRow) -> np.ndarray:
    """The trace nodes of ``row`` (its leaves' events), in tree order."""
    parts = [tree.events(int(c)) for c in np.unique(row.leaves).tolist()]
    return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
