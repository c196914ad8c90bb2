"""Unions of time intervals (microseconds), the one implementation behind the GPU time
breakdown, the stream tables, the detail pane's busy/idle and the timeline's lane strips."""

from __future__ import annotations

import numpy as np

__all__ = ["union_intervals", "union_length"]


def union_intervals(starts: np.ndarray, ends: np.ndarray, *, presorted: bool = False,
                    join_touching: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The union of ``[starts[i], ends[i]]`` as disjoint sorted runs: (run starts, run ends).

    An end before its start counts as a zero-length interval at the start.  With
    ``join_touching`` an interval starting exactly where the union so far ends extends that
    run; without it, it opens a new run (a zero-length interval at a run's end stays
    visible as its own run).  ``presorted``: ``starts`` is already sorted (no sort).  Empty
    input gives empty arrays.  O(n log n) for the sort, then one cumulative-max pass.
    """
    s = np.asarray(starts, dtype=np.float64)
    e = np.asarray(ends, dtype=np.float64)
    if s.size == 0:
        empty = np.empty(0, dtype=np.float64)
        return empty, empty
    e = np.maximum(e, s)
    if not presorted:
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    first = np.empty(s.size, dtype=bool)
    first[0] = True
    if join_touching:
        first[1:] = s[1:] > run_end[:-1]
    else:
        first[1:] = s[1:] >= run_end[:-1]
    heads = np.flatnonzero(first)
    return s[heads], run_end[np.append(heads[1:] - 1, s.size - 1)]


def union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    """Total length (µs) of the union of intervals."""
    us, ue = union_intervals(starts, ends)
    return float((ue - us).sum())
