"""The load and link warnings (``w``), one per line."""

from __future__ import annotations

from typing import ClassVar, Iterable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...errors import one_line


class WarningsScreen(ModalScreen[None]):
    """The load and link warnings, one per line."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,w", "close", "Close", id="warnings.close")]
    DEFAULT_CSS = """
    WarningsScreen { align: center middle; }
    WarningsScreen > VerticalScroll { width: 90; max-width: 100%; height: auto; max-height: 90%;
                                      border: round $warning; background: $surface; padding: 0 1; }
    """

    def __init__(self, warnings: Iterable[object]) -> None:
        super().__init__()
        self.warnings = [one_line(str(w)) for w in warnings]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(f"{len(self.warnings)} warning(s)  (Esc closes)", style="bold"))
            if not self.warnings:
                yield Static(Text("No warnings: the files loaded and linked cleanly."))
            for w in self.warnings:
                yield Static(Text("• " + w))

    def action_close(self) -> None:
        self.dismiss(None)
