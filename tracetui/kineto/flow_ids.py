"""The ``id`` of every decoded event (flow events link by it; most events have none), kept
compact while the columns fill and made the list of :attr:`~.columns.DecodedEvents.flow_id`
once at the end.

A list of Python objects costs 8 bytes a row plus ~32 bytes an integer id.  On the 11x
tiling of v100x2_nccl_216k (2.38M events, 17 % of them with an id) that was ~16 MB in each
decode process at the cold open's peak (the end of the parallel decode, every process alive),
and a worker's list was pickled to the parent while the worker still held its own.  Here a
run of rows keeps the rows that have an id (int32, from the run's first row) and the ids
(int64): ~2 MB a process.  A run whose ids are not all integers of 64 bits (strings, in
Chrome traces) keeps its Python list as it is.
"""

from __future__ import annotations

import operator
from collections import deque
from functools import partial
from typing import Any

import numpy as np

#: ``id is not None``, a C-level call per row
_HAS = partial(operator.is_not, None)


class FlowIds:
    """The ids of ``rows`` consecutive rows, appended run by run (:meth:`extend`)."""

    def __init__(self) -> None:
        self.rows = 0
        #: per run: (its first row, the rows with an id counted from it or None, the ids as
        #: int64, or the run's whole list of ids when the rows are None)
        self.runs: list[tuple[int, np.ndarray | None, Any]] = []

    def __len__(self) -> int:
        return self.rows

    def extend(self, ids: list[Any]) -> None:
        """Append the ids of the next ``len(ids)`` rows (None: the row has none); ``ids`` is
        kept (not copied) when they are not all integers."""
        n = len(ids)
        has = np.flatnonzero(np.fromiter(map(_HAS, ids), dtype=bool, count=n))
        vals = [ids[i] for i in has.tolist()]
        compact: np.ndarray | None = None
        if set(map(type, vals)) <= {int}:  # exactly int: no bool, no str, no float
            try:
                compact = np.fromiter(vals, dtype=np.int64, count=len(vals))
            except OverflowError:  # beyond 64 bits: kept as Python ints
                compact = None
        if compact is not None:
            self.runs.append((self.rows, has.astype(np.int32), compact))
        else:
            self.runs.append((self.rows, None, ids))
        self.rows += n

    def absorb(self, other: FlowIds) -> None:
        """Append the rows of ``other`` (a decode worker's, :mod:`.parallel`)."""
        self.runs.extend((self.rows + first, has, vals) for first, has, vals in other.runs)
        self.rows += other.rows

    def to_list(self) -> list[Any]:
        """The id of every row (None where it has none), as the decoded struct held it."""
        out: list[Any] = [None] * self.rows
        for first, has, vals in self.runs:
            if has is None:
                out[first:first + len(vals)] = vals
            else:
                deque(map(out.__setitem__, (has.astype(np.int64) + first).tolist(), vals.tolist()), maxlen=0)
        return out
