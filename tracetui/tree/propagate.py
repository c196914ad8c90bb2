"""Values carried along a forest one depth level at a time (one numpy step per level, no
Python step per node): down from parents to children, or summed up from children to
parents.  ``parent[i]`` is the parent of node ``i`` (-1 for a root); ``depth[child]`` is
``depth[parent] + 1``."""

from __future__ import annotations

import numpy as np

__all__ = ["depth_levels", "fill_down", "sum_up"]


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
