"""The memory screen of a CUDA memory snapshot (``M``; opened at once for a snapshot alone):
per device the bytes allocated (bars) and reserved (a line) over time with a time cursor, and
the blocks live at the cursor grouped by owner (the innermost user frame, its file, the whole
stack, or the profiler annotation: ``b``).  Numbers: :mod:`~tracetui.ui.view.memsnap_view`
(``tracetui memory SNAPSHOT``'s; docs/memory.md).

Keys: ←/→ move the cursor a column (shift: ten; ctrl: the history's start and end), ``[``/``]``
to the previous/next allocation or free, ``+``/``-`` zoom around the cursor (``=``: the whole
history), ``^``/``p`` the peak, ``r`` the reserved peak, ``o`` the next out-of-memory entry,
``1``-``9`` a device, Enter on an owner: its blocks and their stacks
(:class:`~.block_stack_screen.BlockStackScreen`), ``t``: the op open in the trace beside the
snapshot when the owner's largest block was allocated.
Dismisses with ("op", node) or None.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.console import Group
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Label, Static

from ... import units
from ...errors import one_line
from ..key_bar import KeyBar
from ..notify import show_note
from ..plot.plot_widget import PlotWidget
from ..row_table import RowTable
from ..shown import only_while_shown
from ..view.memsnap_view import LiveTable, SnapshotView, groupings
from .block_stack_screen import BlockStackScreen

#: columns a shift+arrow moves the cursor
BIG_STEP = 10
#: how much ``+`` narrows the window
ZOOM = 4.0


class MemorySnapshotScreen(Screen[tuple[str, Any] | None]):
    """A snapshot's memory over time and the blocks live at the cursor (module docstring)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,M", "close", "Close", id="memsnap.close"),
        Binding("left", "move(-1)", "Earlier", id="memsnap.left", key_display="←", priority=True),
        Binding("right", "move(1)", "Later", id="memsnap.right", key_display="→", priority=True),
        Binding("shift+left", f"move(-{BIG_STEP})", "Earlier x10", show=False, id="memsnap.left10"),
        Binding("shift+right", f"move({BIG_STEP})", "Later x10", show=False, id="memsnap.right10"),
        Binding("ctrl+left", "edge(0)", "History start", show=False, id="memsnap.start", priority=True),
        Binding("ctrl+right", "edge(1)", "History end", show=False, id="memsnap.end", priority=True),
        Binding("left_square_bracket", "entry(0)", "Previous alloc/free", show=False, id="memsnap.prev_entry",
                key_display="["),
        Binding("right_square_bracket", "entry(1)", "Next alloc/free", show=False, id="memsnap.next_entry",
                key_display="]"),
        Binding("circumflex_accent,p", "peak('allocated')", "Peak", id="memsnap.peak", key_display="^",
                tooltip="the cursor to the time this device's allocated bytes were highest"),
        Binding("r", "peak('reserved')", "Reserved peak", show=False, id="memsnap.reserved_peak"),
        Binding("o", "oom", "Out of memory", id="memsnap.oom",
                tooltip="the cursor to the next out-of-memory entry: what was asked, what held the memory"),
        Binding("b", "group", "Group by", id="memsnap.group",
                tooltip="owners by innermost user frame, file, whole stack, or profiler annotation"),
        Binding("plus", "zoom(1)", "Zoom in", show=False, id="memsnap.zoom_in", key_display="+"),
        Binding("minus", "zoom(-1)", "Zoom out", show=False, id="memsnap.zoom_out", key_display="-"),
        Binding("equals_sign", "zoom(0)", "Whole history", show=False, id="memsnap.zoom_all", key_display="="),
        Binding("t", "trace_op", "Op in the trace", show=False, id="memsnap.trace_op",
                tooltip="with the PyTorch profiler trace of the same run: the op open when the owner's largest "
                        "block was allocated"),
        *(Binding(str(i + 1), f"device({i})", f"Device {i + 1}", show=False, id=f"memsnap.device{i + 1}")
          for i in range(9)),
    ]
    DEFAULT_CSS = """
    MemorySnapshotScreen #memsnap-title { height: 1; }
    MemorySnapshotScreen #memsnap-head { height: auto; }
    MemorySnapshotScreen #memsnap-table-title { height: 1; }
    MemorySnapshotScreen PlotWidget { height: 1fr; min-height: 8; max-height: 20; }
    MemorySnapshotScreen RowTable { height: 1fr; }
    """

    def __init__(self, view: SnapshotView, device: int = 0) -> None:
        super().__init__()
        self.view = view
        self.device = min(device, max(len(view.devices) - 1, 0))
        self.by = groupings()[0]
        self.cursor = 0.0
        self.window: tuple[float, float] | None = None
        self.table: LiveTable | None = None
        if view.devices:
            v = view.devices[self.device]
            self.cursor = v.peak.ts if v.peak is not None else v.lo

    def compose(self) -> ComposeResult:
        yield Label(self._title(), id="memsnap-title")
        yield Static(id="memsnap-head")
        yield PlotWidget(id="memsnap-plot")
        yield Label("", id="memsnap-table-title")
        yield RowTable(id="memsnap-live")
        yield KeyBar()

    def _title(self) -> str:
        names = ", ".join(f"{i + 1}: {v.device.name}" for i, v in enumerate(self.view.devices))
        return one_line(f"{self.view.title}: memory · {names or 'no history'}")

    @only_while_shown
    def on_mount(self) -> None:
        self.query_one(RowTable).focus()
        self._show()

    # ------------------------------------------------------------------ drawing
    def _plot_width(self) -> int:
        return max(self.query_one(PlotWidget).chart_width(), 1)

    def _bounds(self) -> tuple[float, float]:
        v = self.view.devices[self.device]
        return self.window if self.window is not None else (v.lo, v.hi)

    def _show(self) -> None:
        if not self.view.devices:
            self.query_one("#memsnap-head", Static).update("This snapshot has no allocator history (it was "
                                                           "recorded with the history off): its segments only.")
            return
        lo, hi = self._bounds()
        self.query_one(PlotWidget).model = self.view.plot(self.device, self.cursor, lo, hi)
        self.query_one("#memsnap-head", Static).update(Group(*self.view.head(self.device, self.cursor, self.by)))
        t = self.table = self.view.live_table(self.device, self.cursor, self.by)
        self.query_one("#memsnap-table-title", Label).update(
            f"Live at the cursor: {t.live_blocks:,} blocks by {self.by} ({len(t.owners):,}); Enter: their stacks")
        table = self.query_one(RowTable)
        keep = table.cursor
        table.set_rows(t.columns(), t.cells, list(range(len(t.cells))), cursor=keep)

    # ------------------------------------------------------------------ keys
    def action_move(self, columns: int) -> None:
        if not self.view.devices:
            return
        lo, hi = self._bounds()
        step = (hi - lo) / self._plot_width()
        v = self.view.devices[self.device]
        self.cursor = min(max(self.cursor + columns * step, v.lo), v.hi)
        self._follow()
        self._show()

    def action_edge(self, end: int) -> None:
        if self.view.devices:
            v = self.view.devices[self.device]
            self.cursor = v.hi if end else v.lo
            self._follow()
            self._show()

    def action_entry(self, forward: int) -> None:
        if self.view.devices:
            self.cursor = self.view.entry_step(self.device, self.cursor, bool(forward))
            self._follow()
            self._show()

    def _follow(self) -> None:
        """Keep the cursor inside the zoomed window (the window slides)."""
        if self.window is None:
            return
        lo, hi = self.window
        if not lo <= self.cursor <= hi:
            half = (hi - lo) / 2
            self.window = (self.cursor - half, self.cursor + half)

    def action_zoom(self, how: int) -> None:
        if not self.view.devices:
            return
        v = self.view.devices[self.device]
        lo, hi = self._bounds()
        if how == 0:
            self.window = None
        else:
            half = (hi - lo) / 2 / (ZOOM if how > 0 else 1 / ZOOM)
            lo, hi = max(self.cursor - half, v.lo), min(self.cursor + half, v.hi)
            self.window = None if (lo, hi) == (v.lo, v.hi) or hi - lo <= 0 else (lo, hi)
        self._show()

    def action_peak(self, what: str) -> None:
        if not self.view.devices:
            return
        v = self.view.devices[self.device]
        p = v.peak if what == "allocated" else v.reserved_peak
        if p is None:
            show_note(self, f"{v.device.name}: no {what} bytes in the history", severity="warning")
            return
        self.cursor = p.ts
        self._follow()
        self._show()

    def action_oom(self) -> None:
        v = self.view.devices[self.device] if self.view.devices else None
        if v is None or not v.ooms:
            show_note(self, "no out-of-memory entry in this device's history")
            return
        later = [o for o in v.ooms if o.ts > self.cursor]
        o = (later or v.ooms)[0]
        self.cursor = o.ts
        self._follow()
        self._show()
        free = "not recorded" if o.device_free < 0 else units.bytes_text(o.device_free)
        show_note(self, f"out of memory: {units.bytes_text(o.requested)} asked, {free} free on the device")

    def action_group(self) -> None:
        order = groupings()
        self.by = order[(order.index(self.by) + 1) % len(order)]
        self._show()

    def action_device(self, index: int) -> None:
        if index < len(self.view.devices) and index != self.device:
            self.device, self.window = index, None
            v = self.view.devices[index]
            self.cursor = v.peak.ts if v.peak is not None else v.lo
            self._show()

    def _owner(self) -> Any:
        table = self.query_one(RowTable)
        row = table.cursor_row
        if self.table is None or row is None or row >= len(self.table.owners):
            return None
        return self.table.owners[row]

    def action_trace_op(self) -> None:
        o = self._owner()
        if o is None:
            return
        self._go_to_op(int(o.rows[0]))

    def _go_to_op(self, row: int) -> None:
        why = self.view.op_note(row)
        if why:
            show_note(self, why, severity="warning")
            return
        self.dismiss(("op", self.view.op_node(row)))

    @on(RowTable.Picked)
    def _picked(self, event: RowTable.Picked) -> None:
        event.stop()
        o = self._owner() if event.row is not None else None
        if o is None:
            return
        self.app.push_screen(BlockStackScreen(self.view, o), self._stack_choice)

    def _stack_choice(self, choice: tuple[str, int] | None) -> None:
        if choice is not None and self.is_attached:
            self._go_to_op(choice[1])

    def action_close(self) -> None:
        self.dismiss(None)
