"""A query result as the browser's result table shows it (Textual-free).

:class:`QueryRows` keeps a :class:`~tracetui.query.QueryResult` as it came (rows of Python
values) and a display order over it (``sort``); it writes only the rows asked for
(``row_text``), so a result of 100,000 rows costs nothing per row until a row is on screen.
Values are written by :func:`tracetui.units.value_text` (the CLI's table writes them the
same way) and made safe for a terminal (:func:`tracetui.errors.one_line`).

Columns: numbers right-aligned, text left-aligned; a number column is as wide as its widest
value (never cut), a text column as its longest value up to :data:`MAX_TEXT_CELLS`; when
the columns do not fit, text columns give up width down to :data:`MIN_TEXT_CELLS`, then the
view scrolls by whole columns (``first_col``).  A text longer than its column is cut in the
middle, two different texts of a column never to the same (:func:`~.table_fit.cut_names`,
the rule of every table; over blocks of :data:`CUT_BLOCK` rows).  Every column the query asked
for is shown, empty or not.  Event ids: a column named ``event`` or
ending in ``_event`` holds model event ids (``QueryResult.event_column``: the one Enter uses
unless the cursor is on another event column); in a job the ``rank`` column says whose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from rich.style import Style
from rich.text import Text

from ...errors import one_line
from ...names import shown
from ...query.cells import is_numeric
from ...units import value_text
from .table_fit import GAP, SORT_MARKS, cut_names

if TYPE_CHECKING:
    from ...query import QueryResult

#: the widest a text column is drawn (longer values are cut with "…"; the cell line below
#: the table shows the cursor's value whole)
MAX_TEXT_CELLS = 60
#: the narrowest a text column is squeezed to before the view scrolls sideways
MIN_TEXT_CELLS = 12
#: rows measured for a text column's width (the first ones, in the result's order)
MEASURED_ROWS = 2000
#: rows whose texts are cut together (two of them never to the same text)
CUT_BLOCK = 1000


def is_event_column(name: str) -> bool:
    """Does a column of this name hold model event ids (docs/query.md)?"""
    return name == "event" or name.endswith("_event")


class QueryRows:
    """Display order, column widths and row text of a query result."""

    def __init__(self, result: QueryResult) -> None:
        self.result = result
        self.columns = list(result.columns)
        self.numeric = [is_numeric(t) for t in result.types]
        self.rows = result.rows
        self.order = np.arange(len(self.rows), dtype=np.int64)
        self.sort_column: int | None = None
        self.sort_descending = False
        self.event_index = self.columns.index(result.event_column) if result.event_column else None
        self.rank_index = self.columns.index(result.rank_column) if result.rank_column else None
        #: each column's width before fitting: (drawn width, longest value): text columns are
        #: drawn at most MAX_TEXT_CELLS wide unless the screen has cells to spare
        measured = [self._measure(c) for c in range(len(self.columns))]
        self.natural = [w for w, _ in measured]
        self.longest = [n for _, n in measured]
        self._layouts: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self._cuts: dict[tuple[int, int, int], list[str]] = {}  # (block, column, cells) -> the block's texts

    def __len__(self) -> int:
        return len(self.rows)

    # ------------------------------------------------------------------ values
    def value(self, display_row: int, col: int) -> Any:
        return self.rows[int(self.order[display_row])][col]

    def cell(self, display_row: int, col: int) -> str:
        """The text of one cell (one line, nothing a terminal acts on)."""
        return one_line(shown(value_text(self.value(display_row, col))))

    def _measure(self, c: int) -> tuple[int, int]:
        header = len(self.columns[c]) + 2  # room for the sort mark
        values = [r[c] for r in self.rows]
        if self.numeric[c]:
            nums = [v for v in values if v is not None]
            if not nums:
                return header, header
            # the longest text of a number column is its least or its greatest value, or a
            # tiny float written with an exponent (value_text: "-1.23e-05")
            ends = [len(value_text(min(nums))), len(value_text(max(nums)))]
            if any(isinstance(v, float) and v != 0 and abs(v) < 1e-3 for v in nums):
                ends.append(9)
            w = max(header, *ends)
            return w, w
        longest = max(header, max((len(value_text(v)) for v in values[:MEASURED_ROWS]), default=0))
        return min(longest, max(header, MAX_TEXT_CELLS)), longest

    # ------------------------------------------------------------------ sorting
    def sort(self, col: int, descending: bool) -> None:
        """Order the rows by column ``col`` (NULLs last either way); a stable sort."""
        keyed = [(i, r[col]) for i, r in enumerate(self.rows)]
        present = [(i, v) for i, v in keyed if v is not None]
        nulls = [i for i, v in keyed if v is None]
        if self.numeric[col]:
            present.sort(key=lambda iv: iv[1], reverse=descending)
        else:
            present.sort(key=lambda iv: str(iv[1]).lower(), reverse=descending)
        self.order = np.array([i for i, _ in present] + nulls, dtype=np.int64)
        self.sort_column, self.sort_descending = col, descending

    def default_descending(self, col: int) -> bool:
        """How a first press sorts ``col``: numbers largest first, text A to Z."""
        return self.numeric[col]

    # ------------------------------------------------------------------ layout
    def widths(self, width: int) -> list[int]:
        """Each column's width when the table is ``width`` cells wide: text columns give
        up cells (widest first, down to :data:`MIN_TEXT_CELLS`) when that makes the table
        fit; a table too wide even then keeps its widths and scrolls sideways."""
        out = list(self.natural)
        excess = sum(out) + GAP * (len(out) - 1) - width
        for c in range(len(out)):  # cells to spare: long text columns take them
            if excess < 0 and not self.numeric[c]:
                more = min(-excess, self.longest[c] - out[c])
                out[c] += more
                excess += more
        text = sorted((c for c in range(len(out)) if not self.numeric[c]), key=lambda c: -out[c])
        while excess > 0 and text:
            c = text[0]
            floor = min(self.natural[c], MIN_TEXT_CELLS)
            give = min(excess, out[c] - floor)
            if give <= 0:
                text.pop(0)
                continue
            # give down to the next widest text column, so the widest shrink together
            nxt = out[text[1]] if len(text) > 1 else floor
            step = min(give, max(1, out[c] - max(nxt, floor)))
            out[c] -= step
            excess -= step
            text.sort(key=lambda k: -out[k])
        return out if excess <= 0 else list(self.natural)

    def shown_columns(self, first_col: int, width: int) -> list[tuple[int, int]]:
        """(column, cells) drawn from ``first_col`` on in ``width`` cells: whole columns,
        then a last text column cut to what is left (at least 4 cells); never a cut number."""
        key = (first_col, width)
        if key not in self._layouts:
            self._layouts[key] = self._layout(first_col, width)
        return self._layouts[key]

    def _layout(self, first_col: int, width: int) -> list[tuple[int, int]]:
        widths = self.widths(width)
        out: list[tuple[int, int]] = []
        used = 0
        for c in range(first_col, len(self.columns)):
            need = widths[c] + (GAP if out else 0)
            if used + need <= width:
                out.append((c, widths[c]))
                used += need
                continue
            left = width - used - (GAP if out else 0)
            if not self.numeric[c] and left >= 4:
                out.append((c, left))
            break
        if not out and first_col < len(self.columns):
            out.append((first_col, width))  # one column wider than the screen: cut it
        return out

    def first_col_showing(self, col: int, first_col: int, width: int) -> int:
        """The ``first_col`` that shows ``col`` whole (as whole as the width allows), moving
        the view as little as possible."""
        if col <= first_col:
            return col
        widths = self.widths(width)
        first = first_col
        while first < col and (col, widths[col]) not in self.shown_columns(first, width):
            first += 1
        return first

    # ------------------------------------------------------------------ drawing
    def header_text(self, first_col: int, width: int, cursor_col: int, style: Style, cursor: Style) -> Text:
        """The header line: column names (the sorted one marked), the cursor's column in ``cursor``."""
        out = Text(style=style, no_wrap=True, end="")
        for k, (c, w) in enumerate(self.shown_columns(first_col, width)):
            name = self.columns[c]
            if c == self.sort_column:
                mark = SORT_MARKS[0 if self.sort_descending else 1]
                name = f"{mark} {name}" if self.numeric[c] else f"{name} {mark}"
            self._append(out, one_line(name), w, self.numeric[c], k > 0, cursor if c == cursor_col else None)
        return out

    def row_text(self, display_row: int, first_col: int, width: int, cursor_col: int | None,
                 style: Style, cell_style: Style | None = None) -> Text:
        """One row: its cells in their columns (NULL is an empty cell, as in the CLI); the
        cell under the cursor in ``cell_style`` (``cursor_col`` None: no cursor cell)."""
        out = Text(style=style, no_wrap=True, end="")
        for k, (c, w) in enumerate(self.shown_columns(first_col, width)):
            text = self.cell(display_row, c)
            if not self.numeric[c] and len(text) > w // 2:  # may not fit (wide characters count twice): cut
                text = self.cut_cell(display_row, c, w)
            self._append(out, text, w, self.numeric[c], k > 0, cell_style if c == cursor_col else None)
        return out

    def cut_cell(self, display_row: int, col: int, cells: int) -> str:
        """The text of a cell in ``cells`` cells: cut in the middle, never to the text of another
        row of its block of :data:`CUT_BLOCK` rows (a block is cut once per width)."""
        i = int(self.order[display_row])
        block = i // CUT_BLOCK
        key = (block, col, cells)
        texts = self._cuts.get(key)
        if texts is None:
            rows = self.rows[block * CUT_BLOCK:(block + 1) * CUT_BLOCK]
            texts = self._cuts[key] = cut_names([one_line(value_text(r[col])) for r in rows], cells)
        return texts[i - block * CUT_BLOCK]

    @staticmethod
    def _append(out: Text, text: str, width: int, numeric: bool, gap: bool, style: Style | None) -> None:
        if gap:
            out.append(" " * GAP)
        piece = Text(text, no_wrap=True, end="")
        if piece.cell_len > width:
            piece.truncate(width, overflow="ellipsis")
        pad = " " * (width - piece.cell_len)
        piece = Text(pad) + piece if numeric else piece + Text(pad)
        if style is not None:
            piece.stylize(style)
        out.append_text(piece)

    # ------------------------------------------------------------------ events
    def event_at(self, display_row: int, col: int | None = None) -> tuple[int | None, int] | None:
        """(rank or None, event id) of a row: the event column ``col`` when it is one, else the
        result's event column; None when the row has no event there."""
        c = col if col is not None and is_event_column(self.columns[col]) else self.event_index
        if c is None:
            return None
        ev = self.value(display_row, c)
        if ev is None or isinstance(ev, bool) or not isinstance(ev, (int, np.integer)):
            return None
        rank = self.value(display_row, self.rank_index) if self.rank_index is not None else None
        return (int(rank) if rank is not None else None), int(ev)

    def events(self, rank: int | None = None) -> np.ndarray:
        """The distinct event ids of the result's event column (in a job: of ``rank``'s rows)."""
        if self.event_index is None:
            return np.empty(0, dtype=np.int64)
        e, r = self.event_index, self.rank_index
        ids = [row[e] for row in self.rows if isinstance(row[e], (int, np.integer)) and not isinstance(row[e], bool)
               and (r is None or rank is None or row[r] == rank)]
        return np.unique(np.asarray(ids, dtype=np.int64))
