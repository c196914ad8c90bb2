"""The bottom-up table of a :class:`~tracetui.analysis.stacks.CallTree`, without Textual: the
levels of :mod:`tracetui.analysis.bottom_up` as a :class:`~tracetui.ui.row_table.RowTable`'s
cells, the path descended, the search.

The first level lists every name by self time; Enter on a row descends into its callers
(the row's name stays in the path line above the table), Backspace climbs back to the level
above with its cursor where it was.  ``/`` searches the names of the level shown (``n``/``N``
the next/previous row that matches).  Columns: the name, self time and its share of the
tree's total, total time (outermost calls: a call inside a same-name call counts once),
calls.  Times as :func:`~tracetui.ui.view.icicle_view.value_text` writes them.
"""

from __future__ import annotations

import numpy as np

from ... import units
from ...analysis.bottom_up import BottomUpRow, caller_rows, row_events, top_rows
from ...analysis.search import compile_query
from ...analysis.stacks import CallTree
from ...errors import one_line
from ...names import shown
from .icicle_view import value_text
from .table_fit import Column

#: the columns (the table lays them out in its width, the name first: :mod:`.table_fit`)
COLUMNS = [Column("name"), Column("self", True), Column("self %", True), Column("total", True), Column("calls", True)]


class BottomUpView:
    """The levels descended so far (module docstring)."""

    def __init__(self, tree: CallTree) -> None:
        self.tree = tree
        #: (rows, cursor when descended from it) per level; the last is shown
        self.levels: list[tuple[list[BottomUpRow], int]] = [(top_rows(tree), 0)]
        self.names: list[str] = []  #: the name descended into at each level

    @property
    def rows(self) -> list[BottomUpRow]:
        return self.levels[-1][0]

    @property
    def depth(self) -> int:
        return len(self.levels) - 1

    def cells(self) -> list[list[str]]:
        root = float(self.tree.total[0]) or 1.0
        return [[one_line(shown(self.tree.label_text(r.label))), value_text(r.self_ns),
                 units.pct_text(100.0 * r.self_ns / root), value_text(r.total_ns), f"{r.calls:,}"] for r in self.rows]

    def descend(self, i: int) -> bool:
        """Enter on row ``i``: its callers (False when it has none: a root)."""
        row = self.rows[i]
        callers = caller_rows(self.tree, row)
        if not callers:
            return False
        self.levels[-1] = (self.rows, i)
        self.levels.append((callers, 0))
        self.names.append(self.tree.label_text(row.label))
        return True

    def climb(self) -> int | None:
        """Backspace: back to the level above; its cursor row (None at the top)."""
        if len(self.levels) == 1:
            return None
        self.levels.pop()
        self.names.pop()
        return self.levels[-1][1]

    def path_text(self, width: int) -> str:
        """What the level shows: the names descended, callee first (``a ‹ b ‹ c``)."""
        if not self.names:
            return "every name by self time (Enter: its callers)"
        text = "callers of " + " ‹ ".join(one_line(shown(n)) for n in self.names)
        return text if len(text) <= width else text[: width - 1] + "…"

    def events(self, i: int) -> tuple[np.ndarray, str]:
        """The trace nodes of row ``i`` and a label naming them."""
        row = self.rows[i]
        name = shown(self.tree.label_text(row.label))
        cut = [shown(n) for n in self.names]
        label = name if not cut else f"{cut[0]} via {' ‹ '.join([*cut[1:], name])}"
        return row_events(self.tree, row), one_line(label)

    def find(self, query: str, after: int, step: int = 1) -> int | None:
        """The next row (from ``after``, ``step`` 1 or -1, wrapping) whose name matches ``query``."""
        pred = compile_query(query)
        n = len(self.rows)
        for k in range(1, n + 1):
            i = (after + step * k) % n
            if pred(self.tree.label_text(self.rows[i].label)):
                return i
        return None
