"""The dialog shown when a file could not be opened: its one-line message; quit or open another."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from ...errors import one_line, printable_lines


class ErrorDialog(ModalScreen[tuple[str, str]]):
    """A file could not be opened: its one-line message; quit, or open another path.

    Dismisses with ``("open", path)`` or ``("quit", "")``.
    """

    #: Focus the path field when shown (a selector: no error when a dialog pushed while the
    #: app quits is never composed).
    AUTO_FOCUS = "#error-path"

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "quit", "Quit", id="error.quit")]
    DEFAULT_CSS = """
    ErrorDialog { align: center middle; }
    ErrorDialog > Vertical { width: 76; max-width: 100%; height: auto; border: thick $error;
                             background: $surface; padding: 1 2; }
    ErrorDialog #error-title { text-style: bold; color: $error; }
    ErrorDialog #error-message { margin: 1 0; }
    ErrorDialog Horizontal { height: auto; margin-top: 1; }
    ErrorDialog Button { margin-right: 2; }
    """

    def __init__(self, message: str, title: str = "Could not open the trace", *, can_open: bool = True) -> None:
        super().__init__()
        self.message = message
        self.title_text = title
        #: offer to open another file (not after a diff: it needs two)
        self.can_open = can_open

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(one_line(self.title_text)), id="error-title")
            yield Static(Text(printable_lines(self.message)), id="error-message")
            if self.can_open:
                yield Label("Open another file (Enter), or quit (Esc):")
                yield Input(placeholder="path to a Kineto trace or Execution Trace", id="error-path")
            else:
                yield Label("Quit (Esc):")
            with Horizontal():
                if self.can_open:
                    yield Button("Open", id="error-open", variant="primary")
                yield Button("Quit", id="error-quit", variant="error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._open()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "error-open":
            self._open()
        else:
            self.dismiss(("quit", ""))

    def _open(self) -> None:
        path = self.query_one(Input).value.strip()
        if path:
            self.dismiss(("open", path))

    def action_quit(self) -> None:
        self.dismiss(("quit", ""))
