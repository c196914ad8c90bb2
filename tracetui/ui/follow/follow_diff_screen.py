"""Two cycles of a followed run in the diff browser (``d`` twice on the follow screen): the diff
browser, and Esc back to the cycles once there is no search left to clear."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType

from ..diff.diff_screen import DiffScreen
from .follow_cycle_screen import back_to_cycles


class FollowDiffScreen(DiffScreen):
    """The diff browser over two cycles of the followed run."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear", "Back to the cycles", id="follow_diff.back",
                tooltip="clears a search first; then back to the follow screen"),
    ]

    def action_clear(self) -> None:
        if self.query_text is not None:
            super().action_clear()
            return
        back_to_cycles(self)
