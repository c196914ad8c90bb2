"""ResultTable: a query result drawn a line at a time (only the rows on screen are written).

Line 0 is a sticky header with the column names; line ``y >= 1`` shows display row
``scroll_y + y - 1`` of a :class:`~tracetui.ui.view.query_rows.QueryRows`.  A row cursor and
a column cursor: the op tree's keys move the row (up/down, j/k, pages, ctrl+d/ctrl+u,
home/end, g/G), left/right (h/l) the column
(the view scrolls sideways by whole columns when the table is wider than the screen).  ``s``
sorts by the cursor's column (numbers largest first, text A to Z; again: the other way);
clicking a header does the same.
"""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..bindings import RowCursorKeys, row_cursor_bindings
from ..view.query_rows import QueryRows
from ..view.table_fit import GAP


class ResultTable(RowCursorKeys, ScrollView, can_focus=True):
    """A keyboard-driven table over :class:`QueryRows` (see the module docstring)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"rtable--header", "rtable--cursor", "rtable--cell"}

    DEFAULT_CSS = """
    ResultTable {
        height: 1fr;
        background: $surface;
        color: $foreground;
        overflow: hidden auto;  /* sideways by whole columns (first_col), not by cells */
        scrollbar-size-vertical: 1;
        & > .rtable--header { background: $panel; text-style: bold; }
        & > .rtable--cursor { background: $block-cursor-blurred-background; }
        & > .rtable--cell { text-style: bold reverse; }
        &:focus > .rtable--cursor {
            color: $block-cursor-foreground;
            background: $block-cursor-background;
        }
    }
    ResultTable:ansi:nocolor > .rtable--cursor { text-style: reverse; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        *row_cursor_bindings("result_table"),
        Binding("right,l", "column(1)", "Next column", show=False, id="result_table.next_column"),
        Binding("left,h", "column(-1)", "Previous column", show=False, id="result_table.prev_column"),
        Binding("s", "sort", "Sort by column", id="result_table.sort",
                tooltip="sort by the cursor's column (numbers largest first, text A to Z); again: reversed"),
    ]

    class CellHighlighted(Message):
        """The row or column cursor moved (``row``: display row, ``col``: column index)."""

        def __init__(self, table: ResultTable, row: int, col: int) -> None:
            self.table, self.row, self.col = table, row, col
            super().__init__()

        @property
        def control(self) -> ResultTable:
            return self.table

    class Sorted(Message):
        """The rows were sorted (by ``col``, ``descending``)."""

        def __init__(self, table: ResultTable, col: int, descending: bool) -> None:
            self.table, self.col, self.descending = table, col, descending
            super().__init__()

    def __init__(self, rows: QueryRows, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = rows
        self.cursor_row = 0
        self.cursor_col = 0
        self.first_col = 0
        self.virtual_size = Size(0, len(rows) + 1)
        self._styles: tuple[Style, Style, Style, Style] | None = None

    # ------------------------------------------------------------------ state
    def _width(self) -> int:
        return self.scrollable_content_region.width

    def _view_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def set_cursor(self, row: int | None = None, col: int | None = None) -> None:
        """Move the cursor (clamped), scroll it into view, say so (``CellHighlighted``)."""
        n = len(self.model)
        if row is not None and n:
            row = max(0, min(row, n - 1))
            top = self.scroll_offset.y
            if row < top:
                self.scroll_to(y=row, animate=False, force=True)
            elif row >= top + self._view_rows():
                self.scroll_to(y=row - self._view_rows() + 1, animate=False, force=True)
            self.cursor_row = row
        if col is not None and self.model.columns:
            self.cursor_col = max(0, min(col, len(self.model.columns) - 1))
            self.first_col = self.model.first_col_showing(self.cursor_col, self.first_col, max(1, self._width()))
        self.refresh()
        self.post_message(self.CellHighlighted(self, self.cursor_row, self.cursor_col))

    def sort_by(self, col: int) -> None:
        """Sort by ``col``: first press the column's natural direction, then alternate; the
        cursor goes to the first row (the largest, or the first name)."""
        m = self.model
        if not len(m):
            return
        descending = (not m.sort_descending) if m.sort_column == col else m.default_descending(col)
        m.sort(col, descending)
        self.set_cursor(0, col)
        self.post_message(self.Sorted(self, col, descending))

    # ------------------------------------------------------------------ drawing
    def render_lines(self, crop: Region) -> list[Strip]:
        base = self.rich_style
        self._styles = (base, base + self.get_component_rich_style("rtable--header"),
                        base + self.get_component_rich_style("rtable--cursor"),
                        self.get_component_rich_style("rtable--cell", partial=True))
        try:
            return super().render_lines(crop)
        finally:
            self._styles = None

    def render_line(self, y: int) -> Strip:
        width = self._width()
        if width <= 0:
            return Strip.blank(0)
        base, header, cursor, cell = self._styles or (self.rich_style,) * 4
        m = self.model
        if y == 0:
            text = m.header_text(self.first_col, width, self.cursor_col, header, cell)
            return self._strip(text, width, header)
        row = self.scroll_offset.y + y - 1
        if not 0 <= row < len(m):
            return Strip.blank(width, base)
        on_cursor = row == self.cursor_row
        text = m.row_text(row, self.first_col, width, self.cursor_col if on_cursor else None,
                          cursor if on_cursor else base, cell)
        return self._strip(text, width, cursor if on_cursor else base)

    def _strip(self, text: Text, width: int, style: Style) -> Strip:
        # Text.render leaves the text's own style out when it has no spans: applied here
        strip = Strip(list(text.render(self.app.console)), text.cell_len).apply_style(style)
        return strip.crop_extend(0, width, style)

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.set_cursor, self.cursor_row, self.cursor_col)

    # ------------------------------------------------------------------ mouse
    def _column_at(self, x: int) -> int | None:
        left = 0
        for c, w in self.model.shown_columns(self.first_col, max(1, self._width())):
            if left <= x < left + w + GAP:
                return c
            left += w + GAP
        return None

    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        col = self._column_at(offset.x)
        if offset.y == 0:
            if col is not None:
                self.sort_by(col)
            return
        self.set_cursor(self.scroll_offset.y + offset.y - 1, col)

    # ------------------------------------------------------------------ keys
    # row_cursor_bindings' actions (RowCursorKeys) move the cursor through these
    @property
    def row_cursor(self) -> int:
        return self.cursor_row

    @property
    def row_total(self) -> int:
        return len(self.model)

    def move_row_cursor(self, row: int) -> None:
        self.set_cursor(row)

    def action_column(self, step: int) -> None:
        self.set_cursor(col=self.cursor_col + int(step))

    def action_sort(self) -> None:
        self.sort_by(self.cursor_col)
