"""The export dialog (``e``): a format (a report, a Chrome trace, or folded stacks of CPU or
GPU time for flame-graph tools), an output path and whether python function frames are
listed, for the selected subtree.

Focus starts on the format; Tab goes format -> file path -> python frames -> Export -> Cancel;
Enter exports from any of them (Space ticks the box).  The default file name says what is
exported, as the user sees it: the op name and its External id (``aten_addmm-ext49.md``), or
the trace file's stem for the whole trace, in the folder of the last export (the current
folder the first time).  The line under the path shows the absolute path the export will be
written to, as it is typed.  Changing the format changes the file's extension.  A path that
names an existing file is not overwritten at once: the dialog says so and asks for Enter again
(a changed path asks again); a folder is refused.  Python function frames are left out of
the reports unless ticked (as ``tracetui export --python-frames``); a Chrome trace keeps every
event."""

from __future__ import annotations

import os
import re
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select

from ...errors import one_line
from ...names import head

EXPORT_FORMATS = (("Markdown report (md)", "md"), ("HTML report (html)", "html"), ("CSV tables (csv)", "csv"),
                  ("JSON (json)", "json"), ("Chrome trace (chrome)", "chrome"),
                  ("Folded stacks, CPU time (folded)", "folded"), ("Folded stacks, GPU time (folded)", "folded-gpu"))
#: File extension per format; a Chrome trace is ``.trace.json`` so that it never takes the
#: default name of the JSON export of the same op, GPU folded stacks ``.gpu.folded`` likewise.
EXPORT_EXTENSIONS = {"md": "md", "html": "html", "csv": "csv", "json": "json", "chrome": "trace.json",
                     "folded": "folded", "folded-gpu": "gpu.folded"}
#: a choice of the dialog that is not an export format of its own: (format, what the folded stacks count)
_FOLDED_BY = {"folded": ("folded", "cpu"), "folded-gpu": ("folded", "gpu")}


def export_format(choice: str) -> tuple[str, str]:
    """(export format, ``by``) of the dialog's choice, as ``tracetui export --format F --by B``
    takes them (``folded-gpu``: folded stacks of GPU time; ``by`` matters for folded only)."""
    return _FOLDED_BY.get(choice, (choice, "cpu"))


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_TRACE_SUFFIXES = (".gz", ".json", ".pt.trace", ".trace")


def safe_file_stem(label: str, max_len: int = 80) -> str:
    """``label`` as a file name stem that every file system accepts: each run of characters
    other than ASCII letters, digits, ``.``, ``_`` and ``-`` (``/``, ``:``, spaces, ...)
    becomes one ``_``; no leading dot or dash; at most ``max_len`` characters; never empty."""
    stem = _UNSAFE.sub("_", head(label)).strip("._-")[:max_len].rstrip("._-")
    return stem or "export"


def op_file_stem(name: str, external_id: int | None) -> str:
    """``<op name>-ext<External id>`` made safe (``aten::addmm``, 49 -> ``aten_addmm-ext49``);
    the name alone when the op has no External id (None or negative)."""
    stem = safe_file_stem(name)
    return f"{stem}-ext{external_id}" if external_id is not None and external_id >= 0 else stem


def trace_file_stem(path: str) -> str:
    """The trace file's name without its trace suffixes (``h100_bert.json.gz`` -> ``h100_bert``)."""
    stem = os.path.basename(str(path))
    changed = True
    while changed:
        changed = False
        for suffix in _TRACE_SUFFIXES:
            if stem.lower().endswith(suffix) and len(stem) > len(suffix):
                stem, changed = stem[: -len(suffix)], True
    return safe_file_stem(stem)


def with_format(path: str, fmt: str) -> str:
    """``path`` with the extension of ``fmt``: a known export extension is replaced
    (``a.trace.json`` -> ``a.md``), any other is kept and the new one appended
    (``run.v2`` -> ``run.v2.md``)."""
    root = path
    for ext in sorted(set(EXPORT_EXTENSIONS.values()), key=len, reverse=True):
        if path.lower().endswith("." + ext) and len(path) > len(ext) + 1:
            root = path[: -len(ext) - 1]
            break
    return f"{root}.{EXPORT_EXTENSIONS.get(fmt, fmt)}"


def default_export_path(stem: str, fmt: str, directory: str | None = None) -> str:
    """``<stem>.<ext>`` in ``directory``; relative (the bare file name, resolved against the
    working directory on export) when ``directory`` is None."""
    name = with_format(stem, fmt) if stem else f"export.{EXPORT_EXTENSIONS.get(fmt, fmt)}"
    return name if directory is None else os.path.join(directory, name)


class FormatSelect(Select[str], inherit_bindings=False):
    """The format list: Space, Up or Down open it; Enter is left to the dialog (export with
    what is shown), so ``e`` then Enter exports at once."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("down,space,up", "show_overlay", "Choose format", show=False)]


class FramesCheckbox(Checkbox, inherit_bindings=False):
    """The python-frames box: Space ticks it; Enter is left to the dialog (export)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("space", "toggle_button", "Tick", show=False)]
    DEFAULT_CSS = """
    FramesCheckbox { border: none; padding: 0 1; height: 1; margin-top: 1; background: $surface; }
    FramesCheckbox:focus { border: none; }
    FramesCheckbox:focus > .toggle--label { text-style: reverse; }
    """


class ExportDialog(ModalScreen[tuple[str, str, bool] | None]):
    """Pick a format, an output path and python frames; dismisses with ``(fmt, absolute path,
    python frames)`` or None.

    ``stem`` is the default file name without extension (:func:`op_file_stem`,
    :func:`trace_file_stem`); a relative path is resolved against ``directory`` (None: the
    working directory); ``python_frames``: the box starts ticked."""

    #: Focus starts on the format (a selector: no error when a dialog pushed while the app
    #: quits is never composed).
    AUTO_FOCUS = "#export-format"

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="export.cancel"),
                                             Binding("enter", "export", "Export", id="export.go")]
    DEFAULT_CSS = """
    ExportDialog { align: center middle; }
    ExportDialog > Vertical { width: 76; max-width: 100%; height: auto; border: round $primary;
                              background: $surface; padding: 1 2; }
    ExportDialog Horizontal { height: auto; margin-top: 1; }
    ExportDialog Button { margin-right: 2; }
    """

    def __init__(self, what: str, stem: str, directory: str | None = None, python_frames: bool = False) -> None:
        super().__init__()
        self.what = what
        self.stem = stem
        self.directory = directory
        self.python_frames = python_frames
        #: the existing file the user was asked about: Enter again on it overwrites it
        self.confirmed: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(one_line("Export " + self.what), style="bold"))
            yield FormatSelect(EXPORT_FORMATS, value="md", allow_blank=False, id="export-format")
            yield Input(default_export_path(self.stem, "md"), id="export-path")
            yield Label(self._target_text(default_export_path(self.stem, "md")), id="export-target")
            yield FramesCheckbox("python function frames (md, html, csv, json; folded CPU stacks)",
                                 value=self.python_frames, id="export-python")
            yield Label(Text(""), id="export-exists")
            with Horizontal():
                yield Button("Export", id="export-go", variant="primary")
                yield Button("Cancel", id="export-cancel")
            yield Label(Text("Enter: export   Space/↓: choose format   Tab: next field   Esc: cancel", style="dim"))

    def full_path(self, path: str) -> str:
        """``path`` as it will be written: absolute, ``~`` expanded, relative to the dialog's folder."""
        return os.path.abspath(os.path.join(self.directory or os.getcwd(), os.path.expanduser(path.strip())))

    def _target_text(self, path: str) -> Text:
        #: the absolute path shown under the field ("" when the field is empty)
        self.target = self.full_path(path) if path.strip() else ""
        return Text(one_line("writes " + self.target) if self.target else "", style="dim")

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        path = self.query_one(Input)
        path.value = with_format(path.value, str(event.value))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._ask("")
        for target in self.query("#export-target").results(Label):
            target.update(self._target_text(event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._go()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "export-go":
            self._go()
        else:
            self.dismiss(None)

    def _ask(self, question: str) -> None:
        if not question:
            self.confirmed = None
        self.query_one("#export-exists", Label).update(Text(one_line(question), style="bold yellow"))

    def _go(self) -> None:
        path = self.query_one(Input).value.strip()
        if not path:
            return
        full = self.full_path(path)
        if os.path.isdir(full):
            self._ask(f"{os.path.basename(full) or full} is a folder: give a file name")
            return
        if os.path.lexists(full) and self.confirmed != full:
            self._ask(f"{os.path.basename(full)} exists: Enter again to replace it, or change the name")
            self.confirmed = full
            return
        self.dismiss((str(self.query_one(Select).value), full, self.query_one(FramesCheckbox).value))

    def action_export(self) -> None:
        self._go()

    def action_cancel(self) -> None:
        self.dismiss(None)
