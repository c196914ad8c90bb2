"""The findings list of the findings screen: a :class:`~tracetui.ui.tree.virtual_tree.VirtualTree`
over a :class:`~tracetui.ui.view.findings_row_source.FindingsRowSource` (a finding, its
evidence events as children) whose Enter goes to the evidence instead of folding (space
still folds).  The list is as tall as its rows, at most half the screen."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message

from ..tree.virtual_tree import VirtualTree


class FindingsTree(VirtualTree):
    """The findings and their evidence; Enter posts :class:`FindingsTree.Go` for the row."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "go", "Go to evidence", id="findings.go",
                tooltip="a finding: its first evidence event in the tree (then n/N cycle them); an evidence "
                        "row: that event; in a job, switching to the evidence's rank"),
    ]

    class Go(Message):
        """Enter on ``node`` (a finding or an evidence row)."""

        def __init__(self, node: int) -> None:
            self.node = node
            super().__init__()

    def _rows_changed(self) -> None:
        # as tall as its rows (and the header), at most the CSS max-height: a short list
        # leaves the screen to the detail pane
        super()._rows_changed()
        self.styles.height = len(self.rows) + 1

    def action_go(self) -> None:
        node = self.cursor_node
        if node is not None:
            self.post_message(self.Go(node))
