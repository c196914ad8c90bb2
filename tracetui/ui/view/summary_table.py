"""One tab of the summaries screen: a table of plain values and, per row, where Enter goes.

The table's cells are formatted once, where the table is built (a worker thread, before the
screen opens): the screen only lays them out and sorts rows by their plain values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ... import units
from ...names import head, shown
from .table_fit import Column

#: rows kept per table (the largest by time)
MAX_ROWS = 200


def cell_text(v: Any, numeric: bool, column: str) -> str:
    """A cell as shown: numbers with separators (percentages with one decimal, others with
    three; integers without), "" for None and NaN; other values as text (a name over
    :data:`~tracetui.names.NAME_WORK_CHARS` characters cut there: ``… (+10 MB)``)."""
    if v is None or (isinstance(v, float) and v != v):
        return ""
    if not numeric:
        return shown(str(v))  # a name: cut at the bound, with what was left out
    digits = 1 if column.split()[0] == units.PCT else 3
    return units.number(v if isinstance(v, (int, np.integer)) else float(v), digits)


def sort_key(v: Any, numeric: bool) -> Any:
    """Numbers largest first (missing ones last); text alphabetically, case folded (by its
    first :data:`~tracetui.names.NAME_WORK_CHARS` characters)."""
    if numeric:
        return -float(v) if isinstance(v, (int, float, np.integer, np.floating)) and v == v else float("inf")
    return head(str(v)).lower()


@dataclass
class SummaryTable:
    """One tab: column headers (and which are numeric), rows of plain values, and per row
    the label and the tree nodes (event ids) Enter goes to; ``spans``: per row, the time span
    (µs, trace clock) the timeline shows after Enter (an idle gap), else None.  The rows come
    ordered by ``sorted_by`` (largest first; -1: an order of their own, said in the note).

    How the table gives way on a narrow screen (:mod:`.table_fit`): ``short``, shorter titles
    of columns (``GPU direct ms`` -> ``direct ms``); ``drop``, the columns that may be left out
    for the name's room, the first named first."""

    key: str
    title: str
    columns: list[tuple[str, bool]]
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    occurrences: list[np.ndarray] = field(default_factory=list)
    note: str = ""
    sorted_by: int = -1
    spans: list[tuple[float, float] | None] = field(default_factory=list)
    short: dict[str, str] = field(default_factory=dict)
    drop: tuple[str, ...] = ()
    _cells: list[list[str]] | None = field(default=None, repr=False)

    def add(self, row: tuple[Any, ...], label: str, nodes: Any, span: tuple[float, float] | None = None) -> None:
        self.rows.append(row)
        self.labels.append(label if len(label) <= 60 else label[:59] + "…")
        self.occurrences.append(np.asarray(nodes, dtype=np.int64))
        self.spans.append(span)
        self._cells = None

    @property
    def cells(self) -> list[list[str]]:
        """Every row's cells as text (formatted once)."""
        if self._cells is None:
            names = [(name, num) for name, num in self.columns]
            self._cells = [[cell_text(v, num, name) for v, (name, num) in zip(row, names)] for row in self.rows]
        return self._cells

    def fit_columns(self) -> list[Column]:
        """The columns as the table layout takes them (:class:`~.table_fit.Column`)."""
        return [Column(name, num, self.short.get(name, ""), self.drop.index(name) + 1 if name in self.drop else 0)
                for name, num in self.columns]

    def order(self, col: int, reverse: bool) -> list[int]:
        """Row indices sorted by column ``col`` (numbers largest first, text A-Z; ``reverse``
        turns it round); the rows' own order when ``col`` is -1."""
        order = list(range(len(self.rows)))
        if col >= 0:
            numeric = self.columns[col][1]
            order.sort(key=lambda i: sort_key(self.rows[i][col], numeric), reverse=reverse)
        elif reverse:
            order.reverse()
        return order
