"""The memory screen (``M``, or "Memory" in the palette) of a trace recorded with
``profile_memory=True``: one tab per device with its allocated peak (value, time, the bytes
live there that were allocated inside the trace and those allocated before it), its reserved
peak, the owners at the peak (op, bytes, blocks, largest block, shapes, caller) and the top
allocating ops of the whole trace.  The numbers are ``tracetui memory``'s
(:mod:`~tracetui.ui.view.memory_view`; rules in docs/memory.md).

Enter on a row closes the screen and selects the op that allocated the row's largest block
in the tree; ``n``/``N`` then walk the ops of its other blocks.  ``p`` goes to the device's
allocated peak, ``r`` to its reserved peak; ``1``-``9`` pick a device; Tab moves between the
two tables.  ``o`` plots each device's bytes allocated (bars) and reserved (a line) over the
trace (:class:`~tracetui.ui.view.plot_views.MemoryPlot` in a
:class:`~tracetui.ui.plot.plots_screen.PlotsScreen`, the tab's device first): ``^`` its peak,
Enter the ops that allocated in the cursor's column.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Label, Static, TabbedContent, TabPane

from ...errors import one_line
from ...names import shown
from ..key_bar import KeyBar
from ..notify import show_note
from ..plot.plots_screen import PlotsScreen
from ..row_table import RowTable
from ..shown import only_while_shown
from ..view.memory_view import DeviceMemoryView
from ..view.summary_table import SummaryTable


def _number(v: Any) -> str:
    """A count with separators; a byte count is already text (``8.6 MB``)."""
    return f"{v:,}" if isinstance(v, int) else str(v)


class MemoryScreen(Screen[tuple[str, Any] | None]):
    """Per device: peaks, owners at the peak, top allocating ops.  Dismisses with ("ops",
    (nodes, label)), ("peak", PeakTarget) or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,M", "close", "Close", id="memory.close"),
        Binding("p", "peak('allocated')", "Go to the peak", id="memory.peak",
                tooltip="select the op open when this device's allocated bytes were highest"),
        Binding("r", "peak('reserved')", "Reserved peak", id="memory.reserved_peak",
                tooltip="select the op open when this device's reserved bytes were highest"),
        Binding("o", "plot", "Over time", id="memory.plot",
                tooltip="bytes allocated (bars) and reserved (a line) over the trace, a plot per device; "
                        "^ the peak, Enter the ops that allocated in the cursor's column"),
        *(Binding(str(i + 1), f"device({i})", f"Device {i + 1}", show=False, id=f"memory.device{i + 1}")
          for i in range(9)),
    ]
    DEFAULT_CSS = """
    MemoryScreen #memory-title { height: 1; }
    MemoryScreen TabbedContent { height: 1fr; }
    MemoryScreen ContentSwitcher { height: 1fr; }
    MemoryScreen TabPane { padding: 0; height: 1fr; }
    MemoryScreen .head { height: auto; width: 1fr; }
    MemoryScreen .table-title { height: auto; width: 1fr; margin-top: 1; }
    MemoryScreen RowTable.owners { height: auto; max-height: 30%; }
    MemoryScreen RowTable.top { height: 1fr; min-height: 4; }
    """

    def __init__(self, title: str, views: list[DeviceMemoryView]) -> None:
        super().__init__()
        self.title_text = title
        self.views = views

    def compose(self) -> ComposeResult:
        yield Label(Text.assemble((one_line(self.title_text), "bold"),
                                  " · Enter: the op in the tree · p: the peak"),
                    id="memory-title")
        # No ``initial=`` (Textual validates it on mount, which fails once the screen is
        # closed): the first device's tab is the first one anyway.
        with TabbedContent(id="memory-tabs"):
            for i, v in enumerate(self.views):
                with TabPane(v.device, id=f"d-{i}"):
                    # a Rich group, not Text: Textual keeps it a Rich renderable, so the lines wrap
                    # as KeepText does (a number stays with its unit)
                    yield Static(Group(*v.head), classes="head")
                    for t in (v.owners, v.top_ops):
                        yield Label(self._title(t), classes="table-title", id=f"title-{i}-{t.key}")
                        yield RowTable(id=f"t-{i}-{t.key}", classes=t.key)
        yield KeyBar()

    @only_while_shown  # closed before it was mounted: its widgets are going away
    def on_mount(self) -> None:
        for i, v in enumerate(self.views):
            for t in (v.owners, v.top_ops):
                cells = [[one_line(shown(_number(x))) for x in row] for row in t.rows]  # cut names, never markup
                self.query_one(f"#t-{i}-{t.key}", RowTable).set_rows(t.fit_columns(), cells, list(range(len(cells))))
        self.call_after_refresh(self._focus_table)

    @staticmethod
    def _title(t: SummaryTable, hidden: str = "") -> Text:
        title = Text.assemble((f"{t.title} ({len(t.rows):,})", "bold"), ": ", t.note)
        if hidden:
            title.append(f" · {hidden}", style="dim")
        return title

    def _table_of(self, table: RowTable) -> tuple[int, SummaryTable]:
        _, i, key = str(table.id).split("-")
        v = self.views[int(i)]
        return int(i), v.owners if key == "owners" else v.top_ops

    @on(RowTable.Fitted)
    def _on_fitted(self, event: RowTable.Fitted) -> None:
        """A table's title says which of its columns it left out."""
        event.stop()
        i, t = self._table_of(event.table)
        self.query_one(f"#title-{i}-{t.key}", Label).update(self._title(t, event.note))

    def _active(self) -> int | None:
        active = self.query_one(TabbedContent).active
        return int(active[2:]) if active and active.startswith("d-") else None

    @only_while_shown
    def _focus_table(self) -> None:
        i = self._active()
        if i is not None:
            for table in self.query(f"#t-{i}-owners").results(RowTable):
                table.focus()

    @on(TabbedContent.TabActivated)
    def _on_tab(self, event: TabbedContent.TabActivated) -> None:
        self.call_after_refresh(self._focus_table)

    def action_device(self, index: int) -> None:
        if index < len(self.views):
            self.query_one(TabbedContent).active = f"d-{index}"

    def action_peak(self, what: str) -> None:
        i = self._active()
        if i is None:
            return
        v = self.views[i]
        target = v.peak if what == "allocated" else v.reserved_peak
        if target is None:
            show_note(self, f"{v.device}: no {what} bytes in the trace", severity="warning")
            return
        self.dismiss(("peak", target))

    @on(RowTable.Picked)
    def _on_row(self, event: RowTable.Picked) -> None:
        event.stop()
        if event.row is None:  # a header click: these tables keep their order
            return
        i, t = self._table_of(event.table)
        v = self.views[i]
        key, r = t.key, event.row
        nodes = t.occurrences[r]
        if not nodes.size:
            show_note(self, f"{t.labels[r]}: allocated outside any op (no row in the tree)", severity="warning")
            return
        where = "live at the peak of" if key == "owners" else "allocations on"
        self.dismiss(("ops", (nodes, f"{t.labels[r]} ({where} {v.device})")))

    def action_plot(self) -> None:
        plots = [v.plot for v in self.views if v.plot is not None]
        if not plots:
            return
        i = self._active() or 0
        title = Text.assemble((one_line(self.title_text), "bold"), " over time")
        first = next((k for k, p in enumerate(plots) if p is self.views[i].plot), 0)
        self.app.push_screen(PlotsScreen(title, plots, first), self._plot_picked)

    def _plot_picked(self, value: Any) -> None:
        if value is not None and self.is_attached:
            nodes, label, _ = value
            self.dismiss(("ops", (nodes, label)))

    def action_close(self) -> None:
        self.dismiss(None)
