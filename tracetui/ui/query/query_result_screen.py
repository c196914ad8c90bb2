"""The result of a query from the ``:`` bar, as a table (:class:`~.result_table.ResultTable`).

The title says the query, how many rows came back (at most
:data:`~tracetui.ui.view.query_state.BROWSER_ROWS`) and how long it took; the line under the
table shows the cursor's cell whole (a long kernel name cut in its column).  When the result
has an event id column (``event`` or ``*_event``, docs/query.md):

- Enter closes the screen and selects the row's event in the op tree (the event of the
  cursor's column when it is an event column); in a job, a row of another rank switches to
  that rank first (the ``rank`` column);
- ``f`` closes it and filters the tree to the result's events (as ``f`` does for a search;
  ``n``/``N`` then walk them, Esc clears); in a job, the events of the rank shown.

Without an event column the key bar and help leave Enter and ``f`` out (pressed, they say
why).  ``:`` closes it and opens the bar again with the query, to edit it; Esc closes.  The screen
dismisses with ``("go", rank, event, note)``, ``("filter", nodes, label)``, ``("edit", sql)``
or None; the main screen acts on it (:mod:`.query_actions`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static

from ... import units
from ...errors import one_line
from ..key_bar import KeyBar
from ..notify import show_note
from ..shown import only_while_shown
from ..view.query_rows import QueryRows, is_event_column
from .result_table import ResultTable

if TYPE_CHECKING:
    from ...query import QueryResult

#: characters of the query shown in the title (the bar keeps it whole)
TITLE_SQL = 200


class QueryResultScreen(Screen):
    """A query's rows; see the module docstring."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="query_result.close"),
        Binding("enter", "go", "Go to event", id="query_result.go",
                tooltip="select the row's event in the op tree (in a job: on the row's rank)"),
        Binding("f", "filter", "Filter tree", id="query_result.filter",
                tooltip="show only the subtrees holding the result's events (n/N walk them, Esc clears)"),
        Binding("colon", "edit", "Edit query", id="query_result.edit", key_display=":"),
    ]
    DEFAULT_CSS = """
    QueryResultScreen #result-title { height: auto; max-height: 2; background: $panel; padding: 0 1; }
    QueryResultScreen #result-cell { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, sql: str, result: QueryResult, seconds: float, *, rank: int | None = None) -> None:
        super().__init__()
        self.sql = sql
        self.result = result
        self.seconds = seconds
        self.rank = rank  # the rank shown by the browser (a job), else None
        self.rows = QueryRows(result)

    def compose(self) -> ComposeResult:
        yield Static(self.title_text(), id="result-title")
        yield ResultTable(self.rows, id="result-table")
        yield Static(id="result-cell")
        yield KeyBar()

    def title_text(self) -> Text:
        n = len(self.result.rows)
        more = f" (the first {n:,}: add LIMIT or ORDER BY)" if self.result.truncated else ""
        sql = one_line(" ".join(self.sql.split()))
        if len(sql) > TITLE_SQL:
            sql = sql[:TITLE_SQL - 1] + "…"
        t = Text(sql, style="bold")
        t.append(f"   {n:,} row{'s' if n != 1 else ''}{more} in {units.s_text(self.seconds, '.2f')}")
        if self.rows.event_index is not None and n:
            keys = "Enter: go to its event, f: filter the tree to them"
            if self.rank is not None:
                keys += f" (rank {self.rank} shown)"
            t.append(f"   · {keys}", style="dim")
        return t

    def key_applies(self, action: str) -> bool:
        """Enter and ``f`` only when the result has an event column (and rows); ``s`` only with
        rows: the key bar and help leave out the others (pressed, they say why)."""
        if action in ("go", "filter"):
            return self.rows.event_index is not None and len(self.rows) > 0
        if action == "sort":
            return len(self.rows) > 0
        return True

    @only_while_shown
    def on_mount(self) -> None:
        table = self.query_one(ResultTable)
        table.focus()
        self._show_cell(0, 0)

    @on(ResultTable.CellHighlighted)
    def _on_cell(self, event: ResultTable.CellHighlighted) -> None:
        event.stop()
        self._show_cell(event.row, event.col)

    @on(ResultTable.Sorted)
    def _on_sorted(self, event: ResultTable.Sorted) -> None:
        event.stop()
        if self.rows.numeric[event.col]:
            how = "largest first" if event.descending else "smallest first"
        else:
            how = "Z to A" if event.descending else "A to Z"
        show_note(self, f"sorted by {self.rows.columns[event.col]}, {how}")

    @only_while_shown
    def _show_cell(self, row: int, col: int) -> None:
        """The cursor's cell whole, under the table: ``column = value``."""
        line = self.query_one("#result-cell", Static)
        if not len(self.rows) or not self.rows.columns:
            line.update(Text("no rows" if self.rows.columns else "no columns (a statement without a result)"))
            return
        t = Text(f"row {row + 1:,} · {one_line(self.rows.columns[col])} = ", style="bold")
        if self.rows.value(row, col) is None:  # an empty cell in the table: say which empty it is
            t.append("NULL", style="dim italic")
        else:
            t.append(self.rows.cell(row, col))
        line.update(t)

    # ------------------------------------------------------------------ keys
    @only_while_shown
    def action_close(self) -> None:
        self.dismiss(None)

    @only_while_shown
    def action_edit(self) -> None:
        self.dismiss(("edit", self.sql))

    @only_while_shown
    def action_go(self) -> None:
        table = self.query_one(ResultTable)
        if not len(self.rows):
            return
        at = self.rows.event_at(table.cursor_row, table.cursor_col)
        if at is None:
            show_note(self, "this row has no event id: name a column event (or ending in _event), "
                            "e.g. SELECT event, name FROM kernels", severity="warning")
            return
        rank, event = at
        col = table.cursor_col if is_event_column(self.rows.columns[table.cursor_col]) else self.rows.event_index
        note = Text(f": row {table.cursor_row + 1:,} of {len(self.rows):,}, {self.rows.columns[col]} {event}",
                    style="bold")
        if rank is not None:
            note.append(f" on rank {rank}")
        note.append("   (: then ↑: the query again)", style="dim")
        self.dismiss(("go", rank, event, note))

    @only_while_shown
    def action_filter(self) -> None:
        if self.rows.event_index is None:
            show_note(self, "the result has no event column to filter the tree by (event or *_event)",
                      severity="warning")
            return
        nodes = self.rows.events(self.rank)
        if not nodes.size:
            where = f" on rank {self.rank} (shown)" if self.rank is not None else ""
            show_note(self, f"no event of the result{where}", severity="warning")
            return
        if self.rank is not None and self.rows.rank_index is not None:  # a job: the tree shows one rank
            r = self.rows.rank_index
            elsewhere = sum(1 for row in self.rows.rows if row[r] != self.rank)
            if elsewhere:
                show_note(self, f"filtered to rank {self.rank}'s rows; {elsewhere:,} of {len(self.rows):,} rows are "
                                "on other ranks (Enter on one switches to its rank)")
        # the match list's name in the status line and the n/N notes: "SQL", "SQL next_event"
        column = self.rows.columns[self.rows.event_index]
        self.dismiss(("filter", nodes, "SQL" if column == "event" else f"SQL {one_line(column)}"))
