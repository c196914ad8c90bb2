"""The summaries inside the browser (``s``, or "Summaries" in the palette): the tables of
``tracetui summary`` as sortable tables, one tab each: top kernels, top ops (GPU direct and
subtree time), kernel categories, the roofline of ops with known FLOPs, idle gaps by class and
launch statistics.

Enter on a row closes the screen and selects the row's first occurrence in the op tree (a
kernel's launches, an op's calls, a category's kernels, the GPU event that ends each idle gap
of a class, the launch calls of a class); ``n``/``N`` then cycle through its occurrences as
through search matches.  ``s`` sorts the table by its next column (numbers largest first),
``S`` reverses; clicking a header sorts by it.  ``1``-``9`` pick a tab.  A driver-call
trace adds its answers (``view/driver_tables.py``).

Tables are computed in a worker thread before the screen opens (:func:`open_summaries`,
:func:`~tracetui.ui.view.summary_tables.summary_tables`: analysis/frames, tables, gaps, launches, roofline);
each keeps at most :data:`~tracetui.ui.view.summary_table.MAX_ROWS` rows (the largest by time).  Times are milliseconds
(``ms``) or microseconds (``µs``) as the header says.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, TabbedContent, TabPane
from textual.widgets.data_table import ColumnKey

from ... import units
from ...errors import one_line
from ..notify import show_note
from ..shown import only_while_shown, show_when_computed
from ..view.summary_table import SummaryTable
from ..view.summary_tables import summary_tables


def _cell(v: Any, numeric: bool, column: str, width: int | None = None) -> Text:
    """A table cell: numbers right-aligned with separators; text (trace data, never markup)
    cut to ``width`` cells with an ellipsis."""
    if v is None or (isinstance(v, float) and v != v):
        return Text("")
    if not numeric:
        text = Text(one_line(str(v)), no_wrap=True, overflow="ellipsis")
        if width is not None and text.cell_len > width:
            text.truncate(width, overflow="ellipsis")
        return text
    digits = 1 if column.split()[0] == units.PCT else 3  # percentages: one decimal
    return Text(units.number(v if isinstance(v, (int, np.integer)) else float(v), digits).rjust(width or 0))


def _num_width(t: SummaryTable, c: int) -> int:
    """Cells of numeric column ``c``: its widest value or its name."""
    name = t.columns[c][0]
    return max([len(name), *(_cell(r[c], True, name).cell_len for r in t.rows)])


def _sort_key(v: Any, numeric: bool) -> Any:
    if numeric:
        return -float(v) if isinstance(v, (int, float, np.integer, np.floating)) and v == v else float("inf")
    return str(v).lower()


class SummariesScreen(Screen[tuple[np.ndarray, str] | None]):
    """The summary tables under a ``title`` line (what they summarise, what Enter does);
    dismisses with (occurrence nodes, label) or None.  The diff browser shows its summary
    deltas here too (its nodes: rows of the merged tree)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="summaries.close"),
        Binding("s", "sort(1)", "Sort by next column", id="summaries.sort"),
        Binding("S", "sort(0)", "Reverse sort", id="summaries.reverse"),
        *(Binding(str(i + 1), f"tab({i})", f"Tab {i + 1}", show=False, id=f"summaries.tab{i + 1}") for i in range(9)),
    ]
    DEFAULT_CSS = """
    SummariesScreen #summaries-title { height: 1; }
    SummariesScreen TabbedContent { height: 1fr; }
    SummariesScreen TabPane { padding: 0; }
    SummariesScreen .note { color: $text-muted; height: 1; }
    SummariesScreen DataTable { height: 1fr; }
    """

    def __init__(self, title: Text, tables: list[SummaryTable]) -> None:
        super().__init__()
        self.title_text = title
        self.tables = tables
        self.sort_state: dict[str, tuple[int, bool]] = {}  # table key -> (column, reversed)

    def compose(self) -> ComposeResult:
        yield Label(self.title_text, id="summaries-title")
        # No ``initial=``: Textual's tabs validate it on mount and raise when the screen was
        # closed meanwhile (s then Esc at once on a busy machine); on_mount picks the tab.
        with TabbedContent(id="summaries-tabs"):
            for t in self.tables:
                with TabPane(f"{t.title} ({len(t.rows):,})", id=f"p-{t.key}"):
                    if t.note:
                        yield Label(Text(one_line(t.note)), classes="note")
                    yield DataTable(id=f"t-{t.key}", cursor_type="row", zebra_stripes=True)
        yield Footer()

    @only_while_shown  # closed before it was mounted: its widgets are going away
    def on_mount(self) -> None:
        for t in self.tables:
            table = self.query_one(f"#t-{t.key}", DataTable)
            for c in range(len(t.columns)):
                table.add_column(self._header(t, c), key=str(c))
            self._fill(t)
        self.call_after_refresh(self._open_first_table_with_rows)

    @only_while_shown
    def _open_first_table_with_rows(self) -> None:
        """The first tab whose table has rows is the one shown (an empty first table, e.g.
        kernels of a CPU-only trace, would greet the user with nothing)."""
        first = next((t for t in self.tables if t.rows), None)
        if first is not None and first is not self.tables[0]:
            self.query_one(TabbedContent).active = f"p-{first.key}"
        self._focus_table()

    def _table(self, key: str) -> SummaryTable:
        return next(t for t in self.tables if t.key == key)

    def _fill(self, t: SummaryTable) -> None:
        table = self.query_one(f"#t-{t.key}", DataTable)
        col, rev = self.sort_state.get(t.key, (-1, False))
        order = list(range(len(t.rows)))
        if col >= 0:
            numeric = t.columns[col][1]
            order.sort(key=lambda i: _sort_key(t.rows[i][col], numeric), reverse=rev)
        widths = self._text_widths(t)
        for c, (_name, num) in enumerate(t.columns):
            column = table.columns[ColumnKey(str(c))]  # the header shows the sort: ▼ as sorted, ▲ reversed
            header = self._header(t, c)
            column.content_width = max(column.content_width, header.cell_len, _num_width(t, c) if num else 0)
            if num:  # numbers and their header right-aligned to the column's width
                widths[c] = column.content_width
                header = Text(header.plain.rjust(widths[c]))
            column.label = header
        table.clear()
        for i in order:
            table.add_row(*(_cell(v, num, name, widths.get(c)) for c, (v, (name, num)) in
                            enumerate(zip(t.rows[i], t.columns))), key=str(i))

    def _header(self, t: SummaryTable, c: int) -> Text:
        """Column ``c``'s header: its name, with ▼ (sorted) or ▲ (reversed) when sorted by it."""
        col, rev = self.sort_state.get(t.key, (-1, False))
        name, num = t.columns[c]
        if c != col:
            return Text(name.rjust(_num_width(t, c)) if num else name)
        mark = "▲" if rev else "▼"
        return Text(f"{mark} {name}".rjust(_num_width(t, c)) if num else f"{name} {mark}")

    def _text_widths(self, t: SummaryTable) -> dict[int, int]:
        """Cells left to each text column (names, shapes) once the numbers have theirs, so the
        numbers stay on screen: text columns share what the screen width leaves, at least 16."""
        text_cols = [c for c, (_, num) in enumerate(t.columns) if not num]
        num_w = 0
        for c, (name, num) in enumerate(t.columns):
            if num:
                cells = [_cell(r[c], True, name).cell_len for r in t.rows]
                num_w += max([len(name), *cells]) + 2
        free = max(self.size.width - 4 - num_w - 2 * len(text_cols), 16 * len(text_cols))
        longest = {c: max([len(t.columns[c][0]), *(len(str(r[c])) for r in t.rows)]) for c in text_cols}
        # short columns (category, bound) keep their width; the long ones share the rest
        out: dict[int, int] = {}
        short = [c for c in text_cols if longest[c] <= 16]
        for c in short:
            out[c] = longest[c]
            free -= longest[c]
        long_cols = [c for c in text_cols if c not in short]
        for c in long_cols:
            out[c] = max(16, free // len(long_cols))
        return out

    def _active(self) -> SummaryTable | None:
        active = self.query_one(TabbedContent).active
        return self._table(active[2:]) if active and active.startswith("p-") and self.tables else None

    @only_while_shown
    def _focus_table(self) -> None:
        """Focus the active tab's table (runs after a refresh: the screen may be closed by then)."""
        t = self._active()
        if t is not None:
            for table in self.query(f"#t-{t.key}").results(DataTable):
                table.focus()

    @on(TabbedContent.TabActivated)
    def _on_tab(self, event: TabbedContent.TabActivated) -> None:
        self.call_after_refresh(self._focus_table)

    def action_tab(self, index: int) -> None:
        if index < len(self.tables):
            self.query_one(TabbedContent).active = f"p-{self.tables[index].key}"

    def action_sort(self, step: int) -> None:
        """``s``: sort by the next column (step 1); ``S``: reverse the current order (step 0)."""
        t = self._active()
        if t is None:
            return
        col, rev = self.sort_state.get(t.key, (-1, False))
        col, rev = ((col + 1) % len(t.columns), False) if step else (max(col, 0), not rev)
        self._sort(t, col, rev)

    def _sort(self, t: SummaryTable, col: int, rev: bool) -> None:
        self.sort_state[t.key] = (col, rev)
        self._fill(t)
        name = t.columns[col][0]
        show_note(self, f"{t.title}: sorted by {name}" + (" (reversed)" if rev else ""))

    @on(DataTable.HeaderSelected)
    def _on_header(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        t = self._active()
        if t is None:
            return
        col, rev = self.sort_state.get(t.key, (-1, False))
        self._sort(t, event.column_index, not rev if col == event.column_index else False)

    @on(DataTable.RowSelected)
    def _on_row(self, event: DataTable.RowSelected) -> None:
        event.stop()
        t = self._table(str(event.data_table.id)[2:])
        i = int(event.row_key.value)
        nodes = t.occurrences[i]
        if not nodes.size:
            show_note(self, f"{t.labels[i]}: no occurrence in the tree", severity="warning")
            return
        self.dismiss((nodes, t.labels[i]))

    def action_close(self) -> None:
        self.dismiss(None)


def open_summaries(screen: Any) -> None:
    """From the browser screen: compute the tables in a worker thread, then show them (not
    when the user has left the browser screen meanwhile)."""
    kt, categorizer = screen.linked.kineto, screen.detail_model.categorizer
    title = Text.assemble((one_line(kt.name_of_file), "bold"), " · Enter: its occurrences in the tree, n/N cycle them")
    show_when_computed(screen, lambda: summary_tables(kt, categorizer),
                       lambda tables: screen.app.push_screen(SummariesScreen(title, tables), screen.show_occurrences),
                       "summaries")
