"""The ``/`` input of the stack screens (the browser's search bar sits in a layer above them)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input


class StackSearch(Input):
    """Names to search: text is a substring, ``/text/`` a regular expression; Esc cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel search", id="stack_search.cancel")]

    class Cancelled(Message):
        """Escape pressed in the input."""

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())
