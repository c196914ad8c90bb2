"""The blocks of one owner (live at the memory screen's cursor) and the stack of the one under
the cursor: every frame the snapshot recorded for its allocation, innermost first, the user's
code bold.  ``t`` (or Enter) goes to the op open in the trace beside the snapshot when the block
was allocated.  Dismisses with ("op", model row) or None (Esc)."""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from ...analysis.memsnap import SnapOwner
from ...errors import one_line
from ..key_bar import KeyBar
from ..notify import show_note
from ..row_table import RowTable
from ..shown import only_while_shown
from ..view.memsnap_view import SnapshotView
from ..view.table_fit import Column

#: an owner's blocks: the table lays them out in its width (:mod:`~tracetui.ui.view.table_fit`)
BLOCK_COLUMNS = [Column("bytes", True), Column("allocated at", True), Column("freed at", True), Column("address")]


class BlockStackScreen(ModalScreen[tuple[str, int] | None]):
    """An owner's blocks and a block's stack (module docstring)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Back", id="blockstack.close"),
        Binding("t", "trace_op", "Op in the trace", id="blockstack.trace_op",
                tooltip="with the PyTorch profiler trace of the same run: the op open when this block was allocated"),
    ]
    DEFAULT_CSS = """
    BlockStackScreen { background: $background 60%; }
    BlockStackScreen > #blockstack-box { width: 1fr; height: 1fr; margin: 1 2; background: $surface;
                                         border: round $accent; }
    BlockStackScreen #blockstack-title { height: 1; }
    BlockStackScreen RowTable { height: auto; max-height: 40%; }
    BlockStackScreen #blockstack-frames { height: 1fr; overflow-y: auto; }
    """

    def __init__(self, view: SnapshotView, owner: SnapOwner) -> None:
        super().__init__()
        self.view, self.owner = view, owner

    def compose(self) -> ComposeResult:
        from textual.containers import Vertical

        with Vertical(id="blockstack-box"):
            yield Label(Text.assemble((one_line(self.owner.label), "bold"),
                                      f": {self.owner.count:,} blocks live at the cursor"), id="blockstack-title")
            yield RowTable(id="blockstack-blocks")
            yield Static(id="blockstack-frames")
        yield KeyBar()

    @only_while_shown
    def on_mount(self) -> None:
        table = self.query_one(RowTable)
        cells = self.view.block_rows(self.owner)
        table.set_rows(BLOCK_COLUMNS, cells, list(range(len(cells))))
        table.focus()
        self._show_stack()

    def _row(self) -> int | None:
        pos = self.query_one(RowTable).cursor_row
        return None if pos is None else int(self.owner.rows[pos])

    def _show_stack(self) -> None:
        row = self._row()
        if row is None:
            return
        lines = [Text("Stack of the allocation (innermost first; the user's code in bold)", style="bold")]
        lines += self.view.stack_lines(row)
        node = self.view.op_node(row)
        if node >= 0:
            lines.append(Text.assemble(("op open then in the trace: ", "dim"), (one_line(self.view.trace.name(node)),
                                                                                 "cyan"), (" (t)", "dim")))
        self.query_one("#blockstack-frames", Static).update(Group(*lines))

    def on_key(self, event) -> None:
        if event.key in ("up", "down", "k", "j", "pageup", "pagedown", "home", "end", "g", "G"):
            self.call_after_refresh(self._show_stack)

    @on(RowTable.Picked)
    def _picked(self, event: RowTable.Picked) -> None:
        event.stop()
        if event.row is not None:
            self.action_trace_op()

    def action_trace_op(self) -> None:
        row = self._row()
        if row is None:
            return
        why = self.view.op_note(row)
        if why:
            show_note(self, why, severity="warning")
            return
        self.dismiss(("op", row))

    def action_close(self) -> None:
        self.dismiss(None)
