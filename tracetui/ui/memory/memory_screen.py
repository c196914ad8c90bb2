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
from textual.widgets import DataTable, Label, Static, TabbedContent, TabPane

from ...errors import one_line
from ...names import shown
from ..key_bar import KeyBar
from ..notify import show_note
from ..plot.plots_screen import PlotsScreen
from ..shown import only_while_shown
from ..view.memory_view import DeviceMemoryView
from ..view.summary_table import SummaryTable

#: narrowest a name column gets when the screen is narrow
MIN_TEXT_CELLS = 12


def text_widths(t: SummaryTable, width: int) -> list[int | None]:
    """Per column: cells for a text column (the numbers keep their width, the names share what
    the screen leaves, each at least :data:`MIN_TEXT_CELLS`, none wider than its longest
    value); None for a number column."""
    longest = [max([len(name), *(len(one_line(shown(str(r[c])))) for r in t.rows)])
               for c, (name, _) in enumerate(t.columns)]
    texts = [c for c, (_, num) in enumerate(t.columns) if not num]
    used = sum(longest[c] + 2 for c, (_, num) in enumerate(t.columns) if num) + 2 * len(texts) + 4
    out: list[int | None] = [None] * len(t.columns)
    left, waiting = width - used, sorted(texts, key=lambda c: longest[c])
    while waiting:  # the shortest first: what it does not need goes to the longer ones
        c = waiting.pop(0)
        out[c] = max(MIN_TEXT_CELLS, min(longest[c], left // (len(waiting) + 1)))
        left -= out[c]
    return out


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
    MemoryScreen DataTable.owners { height: auto; max-height: 30%; }
    MemoryScreen DataTable.top { height: 1fr; min-height: 4; }
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
                        yield Label(Text.assemble((f"{t.title} ({len(t.rows):,})", "bold"), ": ", t.note),
                                    classes="table-title")
                        yield DataTable(id=f"t-{i}-{t.key}", classes=t.key, cursor_type="row", zebra_stripes=True)
        yield KeyBar()

    @only_while_shown  # closed before it was mounted: its widgets are going away
    def on_mount(self) -> None:
        for i, v in enumerate(self.views):
            for t in (v.owners, v.top_ops):
                self._fill(self.query_one(f"#t-{i}-{t.key}", DataTable), t)
        self.call_after_refresh(self._focus_table)

    def _fill(self, table: DataTable, t: SummaryTable) -> None:
        widths = text_widths(t, self.size.width or 80)
        for c, (name, num) in enumerate(t.columns):
            if num:  # numbers (and their header) right-aligned to the column's width
                widths[c] = max([len(name), *(len(_number(r[c])) for r in t.rows)])
            table.add_column(Text(name.rjust(widths[c] or 0) if num else name), key=str(c))
        for i, row in enumerate(t.rows):
            table.add_row(*(self._cell(v, num, w) for v, (_, num), w in zip(row, t.columns, widths)), key=str(i))

    @staticmethod
    def _cell(v: Any, numeric: bool, width: int | None) -> Text:
        if numeric:
            return Text(_number(v).rjust(width or 0))
        text = Text(one_line(shown(str(v))), no_wrap=True, overflow="ellipsis")  # trace data: never markup
        if width is not None and text.cell_len > width:
            text.truncate(width, overflow="ellipsis")
        return text

    def _active(self) -> int | None:
        active = self.query_one(TabbedContent).active
        return int(active[2:]) if active and active.startswith("d-") else None

    @only_while_shown
    def _focus_table(self) -> None:
        i = self._active()
        if i is not None:
            for table in self.query(f"#t-{i}-owners").results(DataTable):
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

    @on(DataTable.RowSelected)
    def _on_row(self, event: DataTable.RowSelected) -> None:
        event.stop()
        _, i, key = str(event.data_table.id).split("-")
        v = self.views[int(i)]
        t = v.owners if key == "owners" else v.top_ops
        r = int(event.row_key.value)
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
