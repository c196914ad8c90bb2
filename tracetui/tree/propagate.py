"""Values carried along a forest one depth level at a time (one numpy step per level, no
Python step per node): down from parents to children, or summed up from children to
parents.  ``parent[i]`` is the parent of node ``i`` (-1 for a root); ``depth[child]`` is
``depth[parent] + 1``."""

from __future__ import annotations

import numpy as np

__all__ = ["ancestor_counts", "ancestors_mask", "depth_levels", "fill_down", "nearest_kept_ancestor", "sum_up"]


def depth_levels(depth: np.ndarray, nodes: np.ndarray | None = None) -> list[np.ndarray]:
    """``nodes`` (default: all) grouped by depth, shallowest level first (stable order)."""
    nodes = np.arange(depth.size) if nodes is None else np.asarray(nodes)
    if not nodes.size:
        return []
    d = depth[nodes]
    order = np.argsort(d, kind="stable")
    ordered = nodes[order]
    return np.split(ordered, np.flatnonzero(np.diff(d[order])) + 1)


def fill_down(parent: np.ndarray, depth: np.ndarray, own: np.ndarray, *, outermost: bool) -> np.ndarray:
    """Per node, the nearest (``outermost=False``) or the farthest (``outermost=True``)
    value >= 0 of ``own`` on its path from the root, itself included; -1 where none.

    E.g. ``own`` = the node's id where it is a cpu_op, else -1: the innermost or the
    outermost enclosing cpu_op of every node."""
    out = np.asarray(own).astype(np.int64, copy=True)
    parent = parent.astype(np.int64, copy=False)
    for grp in depth_levels(depth):
        p = parent[grp]
        has_p = p >= 0
        inherited = np.where(has_p, out[np.maximum(p, 0)], -1)
        if outermost:
            out[grp] = np.where(inherited >= 0, inherited, out[grp])
        else:
            out[grp] = np.where(out[grp] >= 0, out[grp], inherited)
    return out


def sum_up(parent: np.ndarray, depth: np.ndarray, *values: np.ndarray) -> None:
    """Add every node's value to its parent's, deepest level first, in place: afterwards
    each node holds the sum over its subtree.  Only nodes with a parent pass values on."""
    in_tree = np.flatnonzero(parent >= 0)
    for grp in reversed(depth_levels(depth, in_tree)):
        par = parent[grp]
        for v in values:
            np.add.at(v, par, v[grp])


def ancestor_counts(parent: np.ndarray) -> np.ndarray:
    """Per node, how many ancestors it has (``parent``: int64, -1 at a root), by pointer
    doubling: one numpy pass per power of two of the depth, no per-node Python step."""
    jump = parent.copy()
    steps = (jump >= 0).astype(np.int64)  # steps from each node up to jump[i]
    live = np.flatnonzero(jump >= 0)
    while live.size:
        j = jump[live]
        steps[live] += steps[j]
        nj = jump[j]
        jump[live] = nj
        live = live[nj >= 0]
    return steps


def nearest_kept_ancestor(parent: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """Per node, its nearest ancestor (the parent first) that is not ``skip``-ped, -1 when
    none (``parent``: int64, -1 at a root); pointer doubling, as :func:`ancestor_counts`."""
    # at[i]: i itself when kept, else on its way up to its nearest kept ancestor
    at = np.where(skip, parent, np.arange(parent.size, dtype=np.int64))
    pending = np.flatnonzero(at >= 0)
    pending = pending[skip[at[pending]]]
    while pending.size:
        nxt = at[at[pending]]
        at[pending] = nxt
        pending = pending[nxt >= 0]
        pending = pending[skip[at[pending]]]
    return np.where(parent >= 0, at[np.maximum(parent, 0)], -1)


def ancestors_mask(parent: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """Bool per node: a proper ancestor of any of ``seeds`` (one numpy step per level)."""
    out = np.zeros(parent.size, dtype=bool)
    frontier = parent[np.asarray(seeds, dtype=np.int64)]
    frontier = np.unique(frontier[frontier >= 0])
    while frontier.size:
        frontier = frontier[~out[frontier]]
        out[frontier] = True
        frontier = parent[frontier]
        frontier = np.unique(frontier[frontier >= 0])
    return out
