"""The table of the follow screen: a :class:`~tracetui.ui.row_table.RowTable` that says when its
cursor moves (the screen shows the cycle under it below the table)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message

from ..row_table import RowTable


class CycleTable(RowTable):
    """The cycles read so far, one row each; posts :class:`Moved` when the cursor moves."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select", "Open", id="follow.open",
                tooltip="the cycle under the cursor in the browser (Esc comes back)"),
    ]

    class Moved(Message):
        """The cursor is on row ``row`` (an index into the cells), None: no rows."""

        def __init__(self, row: int | None) -> None:
            super().__init__()
            self.row = row

    def move_to(self, position: int) -> None:
        before = self.cursor
        super().move_to(position)
        if self.cursor != before:
            self.post_message(self.Moved(self.cursor_row))
