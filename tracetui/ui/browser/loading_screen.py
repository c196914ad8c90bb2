"""Loading a trace in the background: the loading screen, the messages the load worker posts
to the app, and the progress relay that also carries cancellation.

The worker (``TraceApp.load``, a thread) calls the loader with a :class:`ProgressRelay`;
each progress report becomes a :class:`LoadProgress` message (at most one per
:data:`PROGRESS_EVERY_S`, so a fast loader cannot flood the queue), and when the worker
has been cancelled (``Esc`` on the loading screen) the relay raises
:class:`~tracetui.errors.LoadCancelled` instead, which stops the loader at its next report.
The outcome comes back as :class:`LoadDone` or :class:`LoadFailed`.
"""

from __future__ import annotations

import os
import time
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Label, ProgressBar
from textual.worker import Worker

from ...errors import LoadCancelled, one_line

#: Exit status when the user cancels the initial load (as for an interrupt).
EXIT_LOAD_CANCELLED = 130
#: seconds between two progress messages (a report in between only updates the last one)
PROGRESS_EVERY_S = 0.05


class LoadProgress(Message):
    """The load reached ``message`` (a step's name), ``fraction`` (0..1) of the way."""

    def __init__(self, message: str, fraction: float) -> None:
        super().__init__()
        self.message = message
        self.fraction = fraction


class LoadFailed(Message):
    """The load failed; ``message`` is the one-line error (file and problem)."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class LoadDone(Message):
    """The load succeeded: the linked traces and what the browser needs to show them."""

    def __init__(self, linked: Any, source: Any, categorizer: Any) -> None:
        super().__init__()
        self.linked = linked
        self.source = source
        self.categorizer = categorizer


class ProgressRelay:
    """The loader's ``progress(message, fraction)`` callback, run on the worker thread:
    posts :class:`LoadProgress` to ``app`` (throttled) or raises
    :class:`~tracetui.errors.LoadCancelled` once ``worker`` is cancelled."""

    def __init__(self, app: Any, worker: Worker) -> None:
        self.app = app
        self.worker = worker
        self._last = 0.0

    def __call__(self, message: str, fraction: float) -> None:
        if self.worker.is_cancelled:
            raise LoadCancelled()
        now = time.monotonic()
        if now - self._last >= PROGRESS_EVERY_S or fraction >= 1.0:
            self._last = now
            self.app.post_message(LoadProgress(message, fraction))


class LoadingScreen(Screen):
    """Shown while the trace loads: file names, a progress bar and the current step."""

    DEFAULT_CSS = """
    LoadingScreen { align: center middle; }
    LoadingScreen > Vertical { width: 70; max-width: 100%; height: auto; border: round $primary; padding: 1 2; }
    LoadingScreen Label { width: 100%; }
    LoadingScreen ProgressBar { width: 100%; margin: 1 0; }
    LoadingScreen #loading-step { color: $text-muted; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.cancel_load", "Cancel", id="loading.cancel", tooltip="stop loading and quit"),
    ]

    def __init__(self, paths: list[str]) -> None:
        super().__init__()
        self.paths = paths

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(one_line("Opening " + " + ".join(os.path.basename(p) for p in self.paths)), style="bold"))
            yield ProgressBar(total=1.0, show_eta=False, id="loading-bar")
            yield Label("starting", id="loading-step")
            yield Label(Text("Esc cancels", style="dim"), id="loading-hint")

    def set_progress(self, message: str, fraction: float) -> None:
        self.query_one(ProgressBar).update(progress=max(0.0, min(1.0, fraction)))
        self.query_one("#loading-step", Label).update(Text(one_line(message)))
