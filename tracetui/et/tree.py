"""Parent/children/depth arrays of an Execution Trace's node tree, built with numpy only.

Nodes are addressed by *position*: their index once sorted by node id (ids are handed out
when an op starts, so id order is start order; the file itself is written in post-order).
Nothing here recurses, so a pathologically deep tree cannot hit Python's recursion limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Tree", "build_tree"]


@dataclass
class Tree:
    """Tree arrays indexed by node position.

    ``parent``: parent position, -1 for a top-level node (the process root, whose parent
    is itself in the file, and any node whose parent id is not in the file).
    ``child_start``/``child_index``: CSR children lists, each in position (= id) order.
    ``depth``: 0 for top-level nodes.  ``orphans``: nodes whose parent id is absent.
    ``cycles_broken``: parent links dropped because they formed a cycle (malformed file).
    """

    parent: np.ndarray
    child_start: np.ndarray
    child_index: np.ndarray
    depth: np.ndarray
    orphans: int
    cycles_broken: int
    #: positions of the nodes that name themselves as their parent (read as top-level nodes)
    self_parents: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def _pointer_jump_depth(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Depth of every node by pointer jumping (O(n log depth)).

    Returns (depth, stuck) where ``stuck`` marks nodes whose ancestor chain never reaches a
    top-level node (a cycle, or below one).
    """
    n = parent.size
    dist = (parent >= 0).astype(np.int64)
    jump = parent.astype(np.int64)
    for _ in range(max(n, 1).bit_length() + 2):
        active = np.flatnonzero(jump >= 0)
        if active.size == 0:
            break
        hop = jump[active]
        dist[active] += dist[hop]
        jump[active] = jump[hop]
    return dist, jump >= 0


def build_tree(sorted_ids: np.ndarray, parent_ids: np.ndarray) -> Tree:
    """Build the tree from node ids (ascending) and each node's parent id (same order)."""
    n = sorted_ids.size
    own = np.arange(n, dtype=np.int64)
    if n:
        idx = np.minimum(np.searchsorted(sorted_ids, parent_ids), n - 1)
        found = sorted_ids[idx] == parent_ids
    else:
        idx = own
        found = np.zeros(0, dtype=bool)
    parent = np.where(found, idx, -1)
    orphans = int(np.count_nonzero(~found))
    self_parents = np.flatnonzero(parent == own)
    parent[self_parents] = -1  # the process root names itself as its parent (others are counted)

    depth, stuck = _pointer_jump_depth(parent)
    cycles_broken = 0
    if stuck.any():
        # every cycle has a link to a parent at the same or a later position: cut those
        cut = stuck & (parent >= own)
        cycles_broken = int(np.count_nonzero(cut))
        parent[cut] = -1
        depth, _ = _pointer_jump_depth(parent)

    kids = np.flatnonzero(parent >= 0)
    kid_parents = parent[kids]
    child_index = kids[np.argsort(kid_parents, kind="stable")].astype(np.int32)
    child_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(kid_parents, minlength=n), out=child_start[1:])
    return Tree(
        parent=parent.astype(np.int32),
        child_start=child_start,
        child_index=child_index,
        depth=depth.astype(np.int32),
        orphans=orphans,
        cycles_broken=cycles_broken,
        self_parents=self_parents,
    )
