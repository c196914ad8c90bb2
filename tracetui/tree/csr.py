"""Compressed (CSR) children lists of a forest given as a parent array."""

from __future__ import annotations

import numpy as np

__all__ = ["csr_children"]


def csr_children(parent: np.ndarray, ts: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR child lists from a parent array; children ordered by (ts, node id)."""
    n = parent.shape[0]
    has = parent >= 0
    kids = nodes[has]
    order = np.lexsort((kids, ts[kids], parent[kids]))
    child_index = kids[order].astype(np.int32)
    counts = np.bincount(parent[has], minlength=n)
    child_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=child_start[1:])
    return child_start, child_index
