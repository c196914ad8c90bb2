"""The nodes ``n``/``N`` step through: a search's matches, or the occurrences of a summaries
row (Enter on a kernel, an op, a category, a gap ...), in one of three orders:

* ``tree``: tree order, from the cursor (a search: ``n`` is the next match below the cursor);
* ``longest``: longest first (a summaries row: Enter lands on the longest occurrence, ``n``
  the next longest);
* ``time``: start-time order, from the cursor's start time.

``o`` toggles longest first and time order (:meth:`MatchList.toggle_order`).  Durations and
starts are the Kineto events' own (µs); a row that is not a Kineto event (an ET op, a lane)
counts as 0 µs long and starts at its tree position's place in time order (last).
Textual-free: the browser screen holds one and asks it where to go.
"""

from __future__ import annotations

import numpy as np

from .jumps import match_index
from .trace_row_source import TraceRowSource

#: what each order is called on screen
ORDER_WORDS = {"tree": "tree order", "longest": "longest first", "time": "time order"}


class MatchList:
    """``nodes`` in tree order (with their tree ``positions``), a label (the search text or
    the summaries row), whether they are a fixed set (a summaries row's occurrences, a
    finding's evidence: not a query to run again) and what each is (``noun``), the order
    ``n``/``N`` follow and a span the timeline shows."""

    def __init__(self, source: TraceRowSource, nodes: np.ndarray, positions: np.ndarray, label: str, *,
                 order: str = "tree", fixed: bool = False, span: tuple[float, float] | None = None,
                 noun: str | None = None) -> None:
        self.source = source
        self.nodes = np.asarray(nodes, dtype=np.int64)
        self.positions = np.asarray(positions, dtype=np.float64)
        self.label = label
        self.fixed = fixed
        #: what each node is ("occurrence", "evidence event"); None: a search's match
        self.noun = noun
        self.order = order
        #: a time span (µs) the timeline shows with each match (an idle gap's), else None
        self.span = span
        #: index in :meth:`sequence` of the occurrence last visited (-1: none yet)
        self.index = -1
        self._seq: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def size(self) -> int:
        return int(self.nodes.size)

    def _kineto(self) -> tuple[np.ndarray, np.ndarray]:
        """(durations, starts) µs of the nodes (0 and +inf where a node is not a Kineto event)."""
        kt = self.source.kt
        k = np.fromiter((self.source.kineto_of(int(n)) for n in self.nodes.tolist()), dtype=np.int64,
                        count=self.nodes.size)
        ok = (k >= 0) & (k < (kt.n_events if kt is not None else 0))
        dur = np.zeros(self.nodes.size)
        start = np.full(self.nodes.size, np.inf)
        if ok.any():
            dur[ok] = kt.dur[k[ok]]
            start[ok] = kt.ts[k[ok]]
        return dur, start

    def sequence(self) -> tuple[np.ndarray, np.ndarray]:
        """(nodes, keys) in the current order: keys are tree positions (tree), starts (time)
        or durations (longest)."""
        if self.order == "tree":
            return self.nodes, self.positions
        got = self._seq.get(self.order)
        if got is None:
            dur, start = self._kineto()
            if self.order == "longest":
                o = np.lexsort((self.positions, -dur))
                got = (self.nodes[o], dur[o])
            else:
                o = np.lexsort((self.positions, start))
                got = (self.nodes[o], start[o])
            self._seq[self.order] = got
        return got

    def _on(self, node: int | None, target: int) -> bool:
        """Is the cursor (on ``node``) showing ``target`` (itself, or its visible ancestor)?"""
        return node is not None and self.source.visible_ancestor(target) == node

    def step(self, current: int | None, direction: int, *, inclusive: bool = False) -> int:
        """The index in :meth:`sequence` to go to from a cursor on ``current``: the first at
        or after it (``inclusive``), the next (``direction`` 1) or previous (-1), wrapping."""
        nodes, keys = self.sequence()
        n = nodes.size
        if self.order == "tree":
            pos = self.source.tree_position(current) if current is not None else -1.0
            i = match_index(keys, pos, direction, inclusive=inclusive)
        elif self.order == "time":
            i = self._time_index(current, nodes, keys, direction, inclusive)
        elif 0 <= self.index < n and self._on(current, int(nodes[self.index])):
            i = self.index if inclusive else (self.index + direction) % n
        else:  # the cursor is elsewhere: start from the longest (n) or the shortest (N)
            i = 0 if direction >= 0 or inclusive else n - 1
        self.index = i
        return i

    def _time_index(self, current: int | None, nodes: np.ndarray, starts: np.ndarray, direction: int,
                    inclusive: bool) -> int:
        n = nodes.size
        if 0 <= self.index < n and self._on(current, int(nodes[self.index])):
            return self.index if inclusive else (self.index + direction) % n
        kt = self.source.kt
        k = self.source.kineto_of(current) if current is not None else -1
        t = float(kt.ts[k]) if kt is not None and 0 <= k < kt.n_events else -np.inf
        finite = np.where(np.isfinite(starts), starts, np.finfo(np.float64).max)
        return match_index(finite, t, direction, inclusive=inclusive)

    def toggle_order(self) -> str:
        """Longest first <-> time order (a tree-order search goes to longest first); the new
        order's name.  The next ``n`` starts from the cursor again."""
        self.order = "time" if self.order == "longest" else "longest"
        self.index = -1
        return self.order

    def duration_of(self, i: int) -> float:
        """Duration µs of the ``i``-th node of :meth:`sequence` (0 for a non-event)."""
        nodes, _ = self.sequence()
        kt = self.source.kt
        k = self.source.kineto_of(int(nodes[i]))
        return float(kt.dur[k]) if kt is not None and 0 <= k < kt.n_events else 0.0
