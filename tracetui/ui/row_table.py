"""A table drawn line by line: a header and rows of text cells, a cursor row, Enter and header
clicks as messages.  Only the rows on screen are drawn, and a row costs nothing until it is:
Textual's ``DataTable`` measures and renders every cell as rows are added (200 rows of 7
columns: 140-250 ms of CPU on a 2-core machine), this table 1-2 ms.

The cells are plain strings, already formatted (trace data is made safe by the caller with
:func:`~tracetui.errors.one_line`); numeric columns are right-aligned.  The columns are laid out
in the table's width by the one rule of :mod:`~tracetui.ui.view.table_fit` (the name gets the
room first; empty, repeated and low-value columns are left out, said by :class:`RowTable.Fitted`;
a text that does not fit is cut in the middle, two different texts never to the same), again on
every resize.  ``order`` lists the rows in display order (indices into ``cells``), so sorting
is a new order, never a rebuild.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..names import mark_start
from .bindings import RowCursorKeys, row_cursor_bindings
from .view.table_fit import GAP, SORT_MARKS, Column, TableFit, TableLayout, header_text


def list_css(widget: str, prefix: str, extra: str = "") -> str:
    """The CSS of a list-like widget drawn line by line (the op tree, a row table): the
    surface, a vertical scrollbar, a bold header line (``<prefix>--header``) and a cursor line
    (``<prefix>--cursor``, brighter while the widget has focus); ``extra``: its own rules."""
    return f"""
    {widget} {{
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
        height: 1fr;
        & > .{prefix}--header {{ background: $panel; text-style: bold; }}
        {extra}
        & > .{prefix}--cursor {{
            background: $block-cursor-blurred-background;
            text-style: $block-cursor-blurred-text-style;
        }}
        &:focus > .{prefix}--cursor {{
            color: $block-cursor-foreground;
            background: $block-cursor-background;
            text-style: $block-cursor-text-style;
        }}
    }}
    {widget}:ansi:nocolor > .{prefix}--cursor {{ text-style: reverse; }}
    """


class RowTable(RowCursorKeys, ScrollView, can_focus=True):
    """Header + rows of text cells with a cursor; posts :class:`Picked` (Enter or a double
    click on a row, a click on a column's title)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"row-table--header", "row-table--cursor", "row-table--even"}
    DEFAULT_CSS = list_css("RowTable", "row-table", "& > .row-table--even { background: $surface-lighten-1 20%; }")

    BINDINGS: ClassVar[list[BindingType]] = [
        *row_cursor_bindings("row_table"),
        Binding("enter", "select", "Go to", id="row_table.select"),
    ]

    class Picked(Message):
        """Enter or a double click on a row (``row``: its index in the cells), or a click on
        a column's title (``column``: its index); the other is None."""

        def __init__(self, table: RowTable, *, row: int | None = None, column: int | None = None) -> None:
            super().__init__()
            self.table, self.row, self.column = table, row, column

        @property
        def control(self) -> RowTable:
            return self.table

    class Fitted(Message):
        """The columns left out changed (``note``: ``hidden: nested (empty), …``; "" when none)."""

        def __init__(self, table: RowTable, note: str) -> None:
            super().__init__()
            self.table, self.note = table, note

        @property
        def control(self) -> RowTable:
            return self.table

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.columns: list[Column] = []
        self.cells: list[list[str]] = []
        self.order: list[int] = []
        self.sort: tuple[int, bool] | None = None  #: (column, reversed) the header marks
        self.cursor = 0  #: position in ``order``
        self._layout = TableLayout([], [])
        self._note: str | None = None

    # ------------------------------------------------------------------ content
    def set_rows(self, columns: list[Column], cells: list[list[str]], order: list[int], *, cursor: int = 0,
                 sort: tuple[int, bool] | None = None) -> None:
        """Show ``cells`` (one list of strings per row) in the order ``order``, under
        ``columns``; the cursor on display row ``cursor``; ``sort``: (column, reversed) marked
        in its header (the titles of a sortable table keep room for the mark)."""
        self.columns, self.cells, self.order, self.sort = columns, cells, order, sort
        self._layout = TableLayout(columns, cells, sort_column=sort[0] if sort else None, sortable=sort is not None)
        self.cursor = max(0, min(cursor, len(order) - 1))
        self.virtual_size = Size(0, len(order) + 1)
        self.scroll_to(y=0, animate=False, force=True)
        self.refresh(layout=True)  # a table of auto height grows with its rows
        self.call_after_refresh(self._keep_cursor_visible)
        self._fitted()

    @property
    def headers(self) -> list[str]:
        """Every column's full title, the sorted one marked (▼, ▲ reversed)."""
        return [self._header(c, col.title) for c, col in enumerate(self.columns)]

    def _header(self, c: int, title: str) -> str:
        if self.sort is None or self.sort[0] != c:
            return title
        return header_text(title, self.columns[c].numeric, SORT_MARKS[1 if self.sort[1] else 0])

    def fit(self, width: int | None = None) -> TableFit:
        """The layout of the columns in ``width`` cells (default: the table's width)."""
        return self._layout.fit(self.scrollable_content_region.width if width is None else width)

    @property
    def name_column(self) -> int | None:
        """The column that gets the room first (:mod:`~.view.table_fit`), None without text columns."""
        return self._layout.name

    def shown_columns(self) -> list[int]:
        """The columns drawn now (the others are empty, repeat another or had no room)."""
        return self.fit().shown if self.scrollable_content_region.width > 0 else list(range(len(self.columns)))

    def _fitted(self) -> None:
        """Say (:class:`Fitted`) when the columns left out changed."""
        if self.scrollable_content_region.width <= 0:
            return
        note = self.fit().note(self.columns)
        if note != self._note:
            self._note = note
            self.post_message(self.Fitted(self, note))

    def on_resize(self) -> None:
        self._fitted()

    @property
    def row_count(self) -> int:
        return len(self.order)

    @property
    def cursor_row(self) -> int | None:
        """The index in the cells of the row under the cursor (None: no rows)."""
        return self.order[self.cursor] if self.order else None

    def row_text(self, position: int) -> list[str]:
        """The cells of display row ``position`` as given (tests read the table through it)."""
        return self.cells[self.order[position]]

    def drawn_text(self, position: int, width: int | None = None) -> list[str]:
        """The cells of display row ``position`` as drawn: the columns shown, texts cut."""
        fit = self.fit(width)
        row = self.order[position]
        return [fit.cell(row, c, self.cells[row][c]) for c in fit.shown]

    def line_text(self, row: int | None, width: int) -> str:
        """One line, ``width`` cells: the header (``row`` None) or the row of index ``row`` in
        the cells, each shown cell fitted to its column (numbers right-aligned; widths in
        terminal cells, so wide characters count twice; a name drawn cut keeps its mark
        ``… (+10 MB)`` when the column has room for it)."""
        fit = self.fit(width)
        parts = []
        for c, w, title in zip(fit.shown, fit.widths, fit.titles):
            text = self._header(c, title) if row is None else fit.cell(row, c, self.cells[row][c])
            n = cell_len(text)
            if n > w:
                start = mark_start(text)
                mark = cell_len(text[start:]) if start >= 0 else w
                if mark < w:
                    text, n = set_cell_size(text[:start], w - mark) + text[start:], w
                else:
                    text, n = (set_cell_size(text, w - 1) + "…", w) if w > 0 else ("", 0)
            parts.append(" " * (w - n) + text if self.columns[c].numeric else text + " " * (w - n))
        return set_cell_size(" " + (" " * GAP).join(parts), width)

    # ------------------------------------------------------------------ drawing
    def _view_rows(self) -> int:
        return max(self.scrollable_content_region.height - 1, 0)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        if width <= 0:
            return Strip.blank(0)
        if y == 0:
            style = base + self.get_component_rich_style("row-table--header")
            return Strip([Segment(self.line_text(None, width), style)], width)
        pos = self.scroll_offset.y + y - 1
        if not 0 <= pos < len(self.order):
            return Strip.blank(width, base)
        if pos == self.cursor:
            style = base + self.get_component_rich_style("row-table--cursor")
        elif pos % 2:
            style = base + self.get_component_rich_style("row-table--even")
        else:
            style = base
        return Strip([Segment(self.line_text(self.order[pos], width), style)], width)

    # ------------------------------------------------------------------ cursor
    def move_to(self, position: int) -> None:
        if not self.order:
            return
        position = max(0, min(position, len(self.order) - 1))
        if position != self.cursor:
            self.refresh_line(self.cursor - self.scroll_offset.y + 1)
            self.cursor = position
            self.refresh_line(position - self.scroll_offset.y + 1)
        self._keep_cursor_visible()

    def _keep_cursor_visible(self) -> None:
        view = self._view_rows()
        if view <= 0:
            return
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, force=True)
        elif self.cursor >= top + view:
            self.scroll_to(y=self.cursor - view + 1, animate=False, force=True)
        self.refresh()

    # row_cursor_bindings' actions (RowCursorKeys) move the cursor through these
    @property
    def row_cursor(self) -> int:
        return self.cursor

    @property
    def row_total(self) -> int:
        return len(self.order)

    def move_row_cursor(self, row: int) -> None:
        self.move_to(row)

    def action_select(self) -> None:
        if self.cursor_row is not None:
            self.post_message(self.Picked(self, row=self.cursor_row))

    # ------------------------------------------------------------------ mouse
    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            column = self.column_at(offset.x)
            if column is not None:
                self.post_message(self.Picked(self, column=column))
            return
        pos = self.scroll_offset.y + offset.y - 1
        if 0 <= pos < len(self.order):
            self.move_to(pos)
            if event.chain >= 2:
                self.action_select()

    def column_at(self, x: int) -> int | None:
        """The column drawn at cell ``x`` of a line (None: between or after the columns)."""
        start = 1
        fit = self.fit()
        for c, w in zip(fit.shown, fit.widths):
            if start <= x < start + w:
                return c
            start += w + GAP
        return None
