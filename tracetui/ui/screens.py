"""Screens and small widgets around the browser: loading, help (built from the live key
bindings), error dialog, warnings list, export dialog, search bar."""

from __future__ import annotations

import os
from typing import ClassVar, Iterable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.dom import DOMNode
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input, Label, ProgressBar, Select, Static

#: Friendly names of the binding owners shown in help (class name -> title).
HELP_GROUPS = {
    "VirtualTree": "Op tree",
    "TraceTree": "Op tree",
    "TraceTimeline": "Timeline",
    "DetailPane": "Detail pane",
    "MainScreen": "Browser",
    "TraceApp": "Application",
    "SearchBar": "Search input",
}


#: Help lists the browser's own keys first, the application's last.
HELP_ORDER = ("Browser", "Op tree", "Timeline", "Detail pane", "Search input", "Application")


def _owner_title(node: DOMNode) -> str:
    for cls in type(node).__mro__:
        if cls.__name__ in HELP_GROUPS:
            return HELP_GROUPS[cls.__name__]
    return type(node).__name__


def live_bindings(screen: Screen) -> list[tuple[str, str, str]]:
    """(owner, keys, description) for every binding active on ``screen`` right now: the
    focused widget, its ancestors, the screen and the app (``Screen.active_bindings``),
    keys of one action joined (``down / j``), in binding order."""
    app = screen.app
    grouped: dict[tuple[int, str, str], list[str]] = {}
    owners: dict[tuple[int, str, str], str] = {}
    tips: dict[tuple[int, str, str], str] = {}
    for key, active in screen.active_bindings.items():
        binding = active.binding
        desc = binding.description or binding.action
        ident = (id(active.node), binding.action, desc)
        display = app.get_key_display(binding)
        keys = grouped.setdefault(ident, [])
        if display not in keys:
            keys.append(display)
        owners[ident] = _owner_title(active.node)
        tips[ident] = binding.tooltip or active.tooltip
    rows = [(owners[i], " / ".join(keys), _describe(i[2], tips.get(i, ""))) for i, keys in grouped.items()]
    order = {title: n for n, title in enumerate(HELP_ORDER)}
    return sorted(rows, key=lambda r: order.get(r[0], len(order)))


def widget_bindings(node: DOMNode) -> list[tuple[str, str, str]]:
    """(owner, keys, description) for the bindings a widget defines itself (used for the
    panes that are not focused: they are live once focused)."""
    app = node.app
    out: dict[tuple[str, str], list[str]] = {}
    for key, bindings in node._bindings.key_to_bindings.items():
        for binding in bindings:
            desc = _describe(binding.description or binding.action, binding.tooltip)
            display = app.get_key_display(binding)
            keys = out.setdefault((binding.action, desc), [])
            if display not in keys:
                keys.append(display)
    return [(_owner_title(node), " / ".join(keys), desc) for (action, desc), keys in out.items()]


def _describe(description: str, tooltip: str) -> str:
    return f"{description}: {tooltip}" if tooltip and tooltip != description else description


def trace_summary(linked) -> Text:
    """The fixed part of the status line: files, devices, event counts, GPU launch links,
    ET link statistics and the warning count (``w`` lists them)."""
    kt = linked.kineto
    text = Text(no_wrap=False)
    text.append(linked.title, style="bold")
    if kt is not None:
        devices = sorted({str(d.get("name")) for d in kt.device_properties if isinstance(d, dict) and d.get("name")})
        if devices:
            text.append(" · " + ", ".join(devices))
        counts = kt.kind_counts()
        text.append(f" · {kt.n_events:,} events, {counts.get('kernel', 0):,} kernels")
        g = kt.gpu_stats
        if g.gpu_events:
            text.append(f" · GPU→launch {g.linked:,}/{g.gpu_events:,}")
    if linked.link is not None:
        s = linked.link.stats
        text.append(f" · ET link {s.method}: {s.linked:,}/{s.et_ops:,}")
        if s.heuristic:
            text.append(f" ({s.heuristic:,} heuristic)", style="yellow")
        text.append(f", ET-only {s.et_only:,}")
        if s.suspect_mismatch:
            text.append(" · ET and Kineto look like different runs", style="bold red")
    n_warn = len(linked.all_warnings())
    if n_warn:
        text.append(f" · ⚠ {n_warn} warning{'s' if n_warn != 1 else ''} (w)", style="bold yellow")
    return text


class LoadingScreen(Screen):
    """Shown while the trace loads: file names, a progress bar and the current step."""

    DEFAULT_CSS = """
    LoadingScreen { align: center middle; }
    LoadingScreen > Vertical { width: 70; max-width: 100%; height: auto; border: round $primary; padding: 1 2; }
    LoadingScreen Label { width: 100%; }
    LoadingScreen ProgressBar { width: 100%; margin: 1 0; }
    LoadingScreen #loading-step { color: $text-muted; }
    """

    def __init__(self, paths: list[str]) -> None:
        super().__init__()
        self.paths = paths

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text("Opening " + " + ".join(os.path.basename(p) for p in self.paths), style="bold"))
            yield ProgressBar(total=1.0, show_eta=False, id="loading-bar")
            yield Label("starting", id="loading-step")

    def set_progress(self, message: str, fraction: float) -> None:
        self.query_one(ProgressBar).update(progress=max(0.0, min(1.0, fraction)))
        self.query_one("#loading-step", Label).update(Text(message))


class HelpScreen(ModalScreen[None]):
    """Every key binding, from the live bindings at the moment help was opened."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "close", "Close help", id="help.close"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90; max-width: 100%; height: 90%; border: round $primary;
                                  background: $surface; padding: 0 1; }
    """

    def __init__(self, sections: list[tuple[str, list[tuple[str, str, str]]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text("Keys  (Esc closes; ctrl+p opens the command palette)", style="bold"))
            for title, rows in self.sections:
                table = Table(box=None, padding=(0, 1), show_header=False, expand=True, title=Text(title, style="bold"),
                              title_justify="left")
                table.add_column("where", style="dim", no_wrap=True, width=12)
                table.add_column("keys", style="bold", no_wrap=True)
                table.add_column("does", ratio=1)
                for owner, keys, desc in rows:
                    table.add_row(Text(owner), Text(keys), Text(desc))
                yield Static(table)

    def action_close(self) -> None:
        self.dismiss(None)

    def plain_text(self) -> str:
        return "\n".join(f"{o} {k} {d}" for _, rows in self.sections for o, k, d in rows)


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
        self.warnings = [str(w) for w in warnings]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(f"{len(self.warnings)} warning(s)  (Esc closes)", style="bold"))
            if not self.warnings:
                yield Static(Text("No warnings: the files loaded and linked cleanly."))
            for w in self.warnings:
                yield Static(Text("• " + w))

    def action_close(self) -> None:
        self.dismiss(None)


class ErrorDialog(ModalScreen[tuple[str, str]]):
    """A file could not be opened: its one-line message; quit, or open another path.

    Dismisses with ``("open", path)`` or ``("quit", "")``.
    """

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

    def __init__(self, message: str, title: str = "Could not open the trace") -> None:
        super().__init__()
        self.message = message
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.title_text), id="error-title")
            yield Static(Text(self.message), id="error-message")
            yield Label("Open another file (Enter), or quit (Esc):")
            yield Input(placeholder="path to a Kineto trace or Execution Trace", id="error-path")
            with Horizontal():
                yield Button("Open", id="error-open", variant="primary")
                yield Button("Quit", id="error-quit", variant="error")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

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


class SearchBar(Input):
    """The ``/`` search input: text is a substring, ``/text/`` a regular expression."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel search", id="search.cancel")]

    class Cancelled(Message):
        """Escape pressed in the search bar."""

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())
