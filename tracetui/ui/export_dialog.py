"""The export dialog (``e``): a format and an output path for the selected subtree."""

from __future__ import annotations

import os
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select

EXPORT_FORMATS = (("Markdown report (md)", "md"), ("HTML report (html)", "html"), ("CSV tables (csv)", "csv"),
                  ("JSON (json)", "json"), ("Chrome trace (chrome)", "chrome"))
EXPORT_EXTENSIONS = {"md": "md", "html": "html", "csv": "csv", "json": "json", "chrome": "json"}


def default_export_path(root_label: str, fmt: str, directory: str | None = None) -> str:
    """``tracetui-export-<node>.<ext>`` in ``directory`` (default: the working directory)."""
    name = f"tracetui-export-{root_label}.{EXPORT_EXTENSIONS.get(fmt, fmt)}"
    return os.path.join(directory if directory is not None else os.getcwd(), name)


class ExportDialog(ModalScreen[tuple[str, str] | None]):
    """Pick a format and an output path; dismisses with ``(fmt, path)`` or None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="export.cancel")]
    DEFAULT_CSS = """
    ExportDialog { align: center middle; }
    ExportDialog > Vertical { width: 76; max-width: 100%; height: auto; border: round $primary;
                              background: $surface; padding: 1 2; }
    ExportDialog Horizontal { height: auto; margin-top: 1; }
    ExportDialog Button { margin-right: 2; }
    """

    def __init__(self, what: str, root_label: str, directory: str | None = None) -> None:
        super().__init__()
        self.what = what
        self.root_label = root_label
        self.directory = directory

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text("Export " + self.what, style="bold"))
            yield Select(EXPORT_FORMATS, value="md", allow_blank=False, id="export-format")
            yield Input(default_export_path(self.root_label, "md", self.directory), id="export-path")
            with Horizontal():
                yield Button("Export", id="export-go", variant="primary")
                yield Button("Cancel", id="export-cancel")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        path = self.query_one(Input)
        fmt = str(event.value)
        root, _ext = os.path.splitext(path.value)
        path.value = f"{root}.{EXPORT_EXTENSIONS.get(fmt, fmt)}"

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._go()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "export-go":
            self._go()
        else:
            self.dismiss(None)

    def _go(self) -> None:
        path = self.query_one(Input).value.strip()
        if path:
            self.dismiss((str(self.query_one(Select).value), path))

    def action_cancel(self) -> None:
        self.dismiss(None)
