"""The summaries inside the browser (``s``, or "Summaries" in the palette): the tables of
``tracetui summary`` as sortable tables, one tab each: top kernels, top ops (GPU direct and
subtree time), kernel categories, the roofline of ops with known FLOPs, the idle gaps
themselves and launch statistics.

Enter on a row closes the screen and selects the row's longest occurrence in the op tree (a
kernel's launches, an op's calls, a category's kernels, the launch calls of a class); ``n``/``N``
then cycle through its occurrences longest first, ``o`` switches to time order.  Enter on an
idle gap selects the GPU event before it and the timeline shows the gap.  ``s`` sorts the
table by its next column (numbers largest first), ``S`` reverses; clicking a header sorts by
it; the header marks the column the rows are sorted by (▼, ▲ reversed).  ``1``-``9`` pick a
tab.  A driver-call trace adds its answers (``view/driver_tables.py``).  The last tab, Plots,
draws step time per step and GPU busy % over time per device
(:class:`~tracetui.ui.plot.plot_panel.PlotPanel`; Enter goes to the step or the bin's GPU
events, as a row's Enter does).

The tables are computed once per trace (:func:`~tracetui.ui.view.summary_tables.summary_tables`
in a worker thread: in the background once the tree is shown, or when ``s`` is first
pressed) and kept (:class:`~tracetui.ui.view.once.Once`); each keeps at most
:data:`~tracetui.ui.view.summary_table.MAX_ROWS` rows (the largest by time).  Opening the
screen fills the tab shown; the others are filled when first shown.  Times are milliseconds
(``ms``) or microseconds (``µs``) as the header says.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

import numpy as np
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Label, Tab, Tabs

from ...errors import one_line
from ..key_bar import KeyBar
from ..notify import show_note
from ..plot.plot_panel import PlotPanel
from ..row_table import RowTable
from ..shown import is_shown, only_while_shown, show_when_computed
from ..view.plot_views import PlotView, trace_plots
from ..view.summary_table import SummaryTable
from ..view.summary_tables import summary_tables

#: the Plots tab's id
PLOTS_TAB = "p-plots"


class SummariesScreen(Screen[tuple[np.ndarray, str, Any] | None]):
    """The summary tables; dismisses with (occurrence nodes, label, span to show or None) or None.

    One :class:`~tracetui.ui.row_table.RowTable` shows the active tab's table (a tab switch
    gives it another table's cells: nothing is built per tab)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="summaries.close"),
        Binding("s", "sort(1)", "Sort by next column", id="summaries.sort"),
        Binding("S", "sort(0)", "Reverse sort", id="summaries.reverse"),
        Binding("tab", "next_tab(1)", "Next tab", id="summaries.next_tab"),
        Binding("shift+tab", "next_tab(-1)", "Previous tab", show=False, id="summaries.prev_tab"),
        *(Binding(str(i + 1), f"tab({i})", f"Tab {i + 1}", show=False, id=f"summaries.tab{i + 1}") for i in range(9)),
    ]
    DEFAULT_CSS = """
    SummariesScreen #summaries-title { height: 1; }
    SummariesScreen #summaries-note { color: $text-muted; height: 1; }
    SummariesScreen RowTable { height: 1fr; }
    SummariesScreen PlotPanel { display: none; }
    SummariesScreen.-plots PlotPanel { display: block; }
    SummariesScreen.-plots RowTable { display: none; }
    """

    def __init__(self, title: Text, tables: list[SummaryTable], plots: list[PlotView] | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.tables = tables
        self.plots = plots or []
        #: table key -> (column, reversed); a table starts sorted by its own column (its header says so)
        self.sort_state: dict[str, tuple[int, bool]] = {t.key: (t.sorted_by, False) for t in tables}
        self._cursor: dict[str, int] = {}  # table key -> cursor row when the tab was left
        self._shown: SummaryTable | None = None

    def compose(self) -> ComposeResult:
        yield Label(self.title_text, id="summaries-title")
        tabs = [Tab(Text(one_line(f"{t.title} ({len(t.rows):,})")), id=f"p-{t.key}") for t in self.tables]
        if self.plots:
            tabs.append(Tab("Plots", id=PLOTS_TAB))
        yield Tabs(*tabs, id="summaries-tabs")
        yield Label("", id="summaries-note")
        yield RowTable(id="summaries-table")
        yield PlotPanel(self.plots, id="summaries-plots")
        yield KeyBar()

    @only_while_shown  # closed before it was mounted: its widgets are going away
    def on_mount(self) -> None:
        # The first tab whose table has rows is the one shown (an empty first table, e.g.
        # kernels of a CPU-only trace, would greet the user with nothing).
        first = next((t for t in self.tables if t.rows), self.tables[0] if self.tables else None)
        if first is None:
            return
        self._show(first)
        self._select_tab(f"p-{first.key}")
        self.table_widget.focus()

    def _select_tab(self, tab_id: str) -> None:
        """Mark ``tab_id`` active.  Its Tab is looked up first: while the screen's widgets are
        being removed (the app ending just after ``s``) the lookup raises ``NoMatches``, which
        :func:`~tracetui.ui.shown.only_while_shown` handles, where setting ``Tabs.active``
        raised ``ValueError('No Tab with id ...')``."""
        tabs = self.query_one(Tabs)
        tabs.query_one(f"#tabs-list > #{tab_id}", Tab)
        tabs.active = tab_id

    @property
    def table_widget(self) -> RowTable:
        return self.query_one("#summaries-table", RowTable)

    def _table(self, key: str) -> SummaryTable:
        return next(t for t in self.tables if t.key == key)

    def _active(self) -> SummaryTable | None:
        return None if self.has_class("-plots") else self._shown

    @property
    def plots_shown(self) -> bool:
        return self.has_class("-plots")

    def _show(self, t: SummaryTable, *, keep_cursor: bool = True) -> None:
        """Give the row table ``t``'s cells, in its sort order, under headers that mark it; the
        table lays the columns out (:mod:`~tracetui.ui.view.table_fit`) and says what it left out."""
        widget = self.table_widget
        if self._shown is not None and self._shown is not t:
            self._cursor[self._shown.key] = widget.cursor
        self._shown = t
        col, rev = self.sort_state.get(t.key, (-1, False))
        cells = [[one_line(v) if not num else v for v, (_, num) in zip(row, t.columns)] for row in t.cells]
        widget.set_rows(t.fit_columns(), cells, t.order(col, rev),
                        cursor=self._cursor.get(t.key, 0) if keep_cursor else 0, sort=(col, rev) if col >= 0 else None)
        self._show_note()

    def _show_note(self) -> None:
        """The table's note, after the columns the table left out (``hidden: nested (empty)``)."""
        t = self._shown
        if t is None:
            return
        hidden = self.table_widget.fit().note(self.table_widget.columns) if self.table_widget.size.width else ""
        line = Text(one_line(hidden + ("; " if hidden and t.note else "")), style="bold") if hidden else Text()
        line.append(one_line(t.note))
        self.query_one("#summaries-note", Label).update(line)

    @on(RowTable.Fitted)
    def _on_fitted(self, event: RowTable.Fitted) -> None:
        event.stop()
        self._show_note()

    @on(Tabs.TabActivated)
    def _on_tab(self, event: Tabs.TabActivated) -> None:
        event.stop()
        tab_id = event.tab.id if event.tab is not None else None
        if tab_id == PLOTS_TAB and is_shown(self):
            self.add_class("-plots")
            self.query_one("#summaries-note", Label).update(
                Text("←/→ move, p: next plot, ^: the marked one, Enter: its events in the tree"))
            panel = self.query_one(PlotPanel)
            panel.focus()
            panel.call_after_refresh(panel.redraw)
            return
        if tab_id and tab_id.startswith("p-") and is_shown(self):
            self.remove_class("-plots")
            t = self._table(tab_id[2:])
            if t is not self._shown:
                self._show(t)
            self.table_widget.focus()

    def action_tab(self, index: int) -> None:
        if index < len(self.tables):
            self.query_one(Tabs).active = f"p-{self.tables[index].key}"
        elif index == len(self.tables) and self.plots:
            self.query_one(Tabs).active = PLOTS_TAB

    def action_next_tab(self, step: int) -> None:
        if self._shown is not None and self.tables:
            n = len(self.tables) + (1 if self.plots else 0)
            i = len(self.tables) if self.plots_shown else self.tables.index(self._shown)
            self.action_tab((i + step) % n)

    def action_sort(self, step: int) -> None:
        """``s``: sort by the next column shown (step 1); ``S``: reverse the current order (step 0)."""
        t = self._active()
        if t is None:
            if self.plots_shown:
                show_note(self, "plots do not sort: p shows the next plot")
            return
        col, rev = self.sort_state.get(t.key, (-1, False))
        if step:
            shown = self.table_widget.shown_columns()
            col, rev = next((c for c in shown if c > col), shown[0] if shown else 0), False
        else:
            col, rev = max(col, 0), not rev
        self._sort(t, col, rev)

    def _sort(self, t: SummaryTable, col: int, rev: bool) -> None:
        self.sort_state[t.key] = (col, rev)
        self._show(t, keep_cursor=False)
        name = t.columns[col][0]
        show_note(self, f"{t.title}: sorted by {name}" + (" (reversed)" if rev else ""))

    @on(RowTable.Picked)
    def _on_pick(self, event: RowTable.Picked) -> None:
        """A click on a header sorts by its column (again: reversed); Enter on a row goes to
        its occurrences."""
        event.stop()
        t = self._active()
        if t is None:
            return
        if event.column is not None:
            col, rev = self.sort_state.get(t.key, (-1, False))
            self._sort(t, event.column, not rev if col == event.column else False)
            return
        i = event.row
        nodes = t.occurrences[i]
        if not nodes.size:
            show_note(self, f"{t.labels[i]}: no occurrence in the tree", severity="warning")
            return
        self.dismiss((nodes, t.labels[i], t.spans[i]))

    @on(PlotPanel.Picked)
    def _on_plot_pick(self, event: PlotPanel.Picked) -> None:
        """Enter on a plot: the step's annotation or the bin's GPU events, as a row's occurrences."""
        event.stop()
        self.dismiss(event.value)

    def action_close(self) -> None:
        self.dismiss(None)


def open_summaries(screen: Any) -> None:
    """From the browser screen: show the tables, computed once per trace (in the background
    after the tree was shown, or now in a worker thread; not shown when the user has left the
    browser screen meanwhile).  Enter there selects a row's longest occurrence
    (``MainScreen.show_occurrences``)."""
    kt, categorizer = screen.linked.kineto, screen.detail_model.categorizer
    title = Text.assemble((one_line(kt.name_of_file), "bold"),
                          " · Enter: the longest occurrence in the tree (a gap: the event before it), "
                          "n/N the next longest, o time order")
    once = screen.once

    def compute() -> tuple[list[SummaryTable], list[PlotView]]:
        return (once.future(SUMMARIES, lambda: summary_tables(kt, categorizer)).result(),
                once.future(PLOTS, lambda: trace_plots(kt)).result())

    def show(value: tuple[list[SummaryTable], list[PlotView]]) -> None:
        screen.app.push_screen(SummariesScreen(title, *value), partial(screen.show_occurrences, longest_first=True))

    tables, plots = once.ready(SUMMARIES), once.ready(PLOTS)
    if tables is not None and plots is not None:
        show((tables, plots))
        return
    show_when_computed(screen, compute, show, "summaries")


#: the names of the summaries' tables and plots in the browser screen's :class:`~tracetui.ui.view.once.Once`
SUMMARIES = "summaries"
PLOTS = "plots"


def precompute_summaries(screen: Any, app: Any) -> None:
    """Compute the tables and the plots now (a background worker thread of the browser screen)."""
    kt, categorizer = screen.linked.kineto, screen.detail_model.categorizer
    if kt is not None:
        screen.once.future(SUMMARIES, lambda: summary_tables(kt, categorizer))
        screen.once.future(PLOTS, lambda: trace_plots(kt))
