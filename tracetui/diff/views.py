"""Orders and filters of a :class:`~tracetui.diff.model.DiffTree`: what a row source shows.

All take and return numpy arrays of row indices or boolean masks; nothing is built per row.
"""

from __future__ import annotations

import numpy as np

from ..tree.csr import csr_children
from ..tree.preorder import tree_preorder
from .model import DiffTree
from .numbers import REGRESSION_MIN_PCT, REGRESSION_MIN_US

__all__ = ["REGRESSION_MIN_PCT", "REGRESSION_MIN_US", "by_abs_gpu_delta", "regression_mask", "sorted_preorder",
           "with_ancestors"]



def by_abs_gpu_delta(tree: DiffTree, rows: np.ndarray | None = None) -> np.ndarray:
    """``rows`` (default all) by |Δ GPU time| (subtree), largest first; ties keep tree order."""
    rows = np.arange(tree.n_rows) if rows is None else np.asarray(rows, dtype=np.int64)
    return rows[np.argsort(-np.abs(tree.d_gpu[rows]), kind="stable")]


def sorted_preorder(tree: DiffTree, key: np.ndarray | None = None) -> np.ndarray:
    """Every row in tree order with each row's children by ``key`` descending (default
    |Δ GPU time|): the merged tree sorted level by level, parents before their children."""
    key = np.abs(tree.d_gpu) if key is None else np.asarray(key, dtype=np.float64)
    n = tree.n_rows
    if not n:
        return np.zeros(0, dtype=np.int64)
    # csr_children orders siblings by its ``ts`` argument ascending: give it -key, ties by row
    start, index = csr_children(tree.parent.astype(np.int64), -key, np.arange(n))
    roots = np.flatnonzero(tree.parent < 0)
    pre = tree_preorder(tree.parent, tree.depth, start, index, roots[np.argsort(-key[roots], kind="stable")])
    return pre.by_pre


def regression_mask(tree: DiffTree, *, min_us: float = 0.0, min_pct: float = 0.0) -> np.ndarray:
    """Rows whose GPU time grew by more than ``min_us`` µs and by more than ``min_pct`` % of A
    (a row with no GPU time in A passes the percentage whenever it grew)."""
    d = tree.d_gpu
    pct = tree.d_gpu_pct
    grew = d > min_us
    return grew & (np.isnan(pct) | (pct > min_pct))


def with_ancestors(tree: DiffTree, mask: np.ndarray) -> np.ndarray:
    """``mask`` plus every ancestor of a row in it (a filtered tree keeps the path to each hit)."""
    out = np.asarray(mask, dtype=bool).copy()
    frontier = tree.parent[out]
    frontier = np.unique(frontier[frontier >= 0])
    while frontier.size:
        frontier = frontier[~out[frontier]]
        out[frontier] = True
        frontier = tree.parent[frontier]
        frontier = np.unique(frontier[frontier >= 0])
    return out
