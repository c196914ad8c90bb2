"""The ``/`` search input of the main screen."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input


class SearchBar(Input):
    """The ``/`` search input: text is a substring, ``/text/`` a regular expression."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel search", id="search.cancel")]

    class Cancelled(Message):
        """Escape pressed in the search bar."""

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())
