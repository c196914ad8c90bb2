"""The follow screen: a row per profiling cycle as its trace is completed (docs/follow.md).

A worker thread runs the headless :class:`~tracetui.follow.follower.Follower`: a look at the
folder every ``interval`` seconds, each complete trace read, measured and compared with the cycle
before; it posts :class:`CycleRead` and :class:`FollowNote` messages and stops when the screen
goes (or the app quits; a trace being read stops at its next progress report).  A plain daemon
thread, not a Textual worker: it runs as long as the screen, and Textual's "wait for the workers"
(what tests and the app's shutdown wait on) means the loads and computations that end.  Enter opens the
cycle under the cursor in the browser (the app's load path, :class:`FollowCycleScreen`: Esc
comes back); ``d`` marks it, ``d`` on another opens the two in the diff browser (the app's diff
path, :class:`FollowDiffScreen`; A the one marked first).  The cycles go on being read meanwhile;
a cycle read while another screen is shown is said in a toast.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Label, Static

from ... import units
from ...errors import LoadCancelled, one_line
from ...follow.cycle import Cycle
from ...follow.follower import Follower, FollowRequest, Note
from ..browser.loading_screen import LoadingScreen
from ..key_bar import KeyBar
from ..notify import show_note
from ..shown import is_shown
from ..view.follow_rows import cycle_detail, cycle_table, follow_title
from .cycle_table import CycleTable
from .follow_cycle_screen import FollowCycleScreen
from .follow_diff_screen import FollowDiffScreen

FOLLOW_BINDINGS: list[BindingType] = [
    Binding("d", "mark_diff", "Diff two", id="follow.diff",
            tooltip="mark the cycle under the cursor as A; d on another cycle opens the diff browser on the two"),
    Binding("escape", "unmark", "Unmark", show=False, id="follow.unmark", tooltip="forget the cycle marked with d"),
]


class CycleRead(Message):
    """The worker read a cycle."""

    def __init__(self, cycle: Cycle) -> None:
        super().__init__()
        self.cycle = cycle


class FollowNote(Message):
    """The worker has something to say about a file (one line); ``waiting``: files being written."""

    def __init__(self, note: Note | None, waiting: int) -> None:
        super().__init__()
        self.note = note
        self.waiting = waiting


class FollowScreen(Screen[None]):
    """The cycles of the run in ``request.folder`` (module docstring)."""

    BINDINGS: ClassVar[list[BindingType]] = FOLLOW_BINDINGS
    DEFAULT_CSS = """
    FollowScreen #follow-title { height: 1; width: 1fr; background: $panel; text-style: bold; }
    FollowScreen #follow-detail { height: auto; max-height: 8; width: 1fr; padding: 0 1; background: $panel; }
    """

    def __init__(self, request: FollowRequest) -> None:
        super().__init__()
        self.request = request
        self.cycles: list[Cycle] = []
        self.marked: Cycle | None = None
        self.waiting = 0
        #: the notes said so far (one line each; also shown as toasts)
        self.notes: list[str] = []
        #: the lines under the table (the cycle under the cursor)
        self.detail_lines: list[str] = []
        self._stop = threading.Event()

    def compose(self) -> ComposeResult:
        yield Label(id="follow-title")
        yield CycleTable(id="cycles")
        yield Static(id="follow-detail")
        yield KeyBar()

    @property
    def table(self) -> CycleTable:
        return self.query_one("#cycles", CycleTable)

    def on_mount(self) -> None:
        self.table.focus()
        self._show()
        threading.Thread(target=self._follow, name="tracetui-follow", daemon=True).start()

    def on_unmount(self) -> None:
        self._stop.set()

    def on_resize(self) -> None:
        self._show()

    # ------------------------------------------------------------------ the worker
    def _follow(self) -> None:
        """The worker thread (module docstring)."""
        stopped = self._stop.is_set
        follower = Follower(self.request, cancelled=stopped)
        while not stopped():
            try:
                events = follower.poll()
            except LoadCancelled:
                return
            waiting = len(follower.watcher.moving())
            for event in events:
                self.post_message(CycleRead(event) if isinstance(event, Cycle) else FollowNote(event, waiting))
            if waiting != self.waiting:
                self.post_message(FollowNote(None, waiting))
            self._stop.wait(self.request.interval)

    def on_cycle_read(self, message: CycleRead) -> None:
        c = message.cycle
        self.cycles.append(c)
        self._show()
        if not is_shown(self):
            change = c.vs("previous")
            more = f": step time {units.pct_text(change, '+.1f')} vs previous" if change is not None else ""
            show_note(self, f"follow: cycle {c.number} read ({c.name}){more}")

    def on_follow_note(self, message: FollowNote) -> None:
        self.waiting = message.waiting
        if message.note is not None:
            line = message.note.line()
            self.notes.append(line)
            show_note(self, line, severity="warning", timeout=8)
        self._show_title()

    # ------------------------------------------------------------------ drawing
    def _show(self) -> None:
        table = self.table
        columns, cells = cycle_table(self.cycles)
        table.set_rows(columns, cells, list(range(len(cells))), cursor=table.cursor)
        self._show_title()
        self._show_detail()

    def _show_title(self) -> None:
        self.query_one("#follow-title", Label).update(
            Text(follow_title(self.request.folder, self.request.interval, len(self.cycles), self.waiting)))

    def _show_detail(self) -> None:
        row = self.table.cursor_row
        self.detail_lines = cycle_detail(self.cycles[row] if row is not None else None, self.marked)
        self.query_one("#follow-detail", Static).update(Text("\n".join(self.detail_lines)))

    @on(CycleTable.Moved)
    def _moved(self, event: CycleTable.Moved) -> None:
        event.stop()
        self._show_detail()

    # ------------------------------------------------------------------ keys
    def current(self) -> Cycle | None:
        row = self.table.cursor_row
        return self.cycles[row] if row is not None else None

    @on(CycleTable.Picked)
    def _picked(self, event: CycleTable.Picked) -> None:
        event.stop()
        if event.row is not None:
            self.open_cycle(self.cycles[event.row])

    def open_cycle(self, c: Cycle) -> None:
        """``c`` in the browser, through the app's load path (Esc comes back)."""
        app: Any = self.app
        app.browser_class = FollowCycleScreen.for_cycle(c)
        app.paths = [c.path]
        app.push_screen(LoadingScreen([c.path]))
        app.call_after_refresh(app.load, [c.path])

    def action_mark_diff(self) -> None:
        c = self.current()
        if c is None:
            show_note(self, "no cycle read yet")
            return
        if self.marked is None or self.marked is c:
            self.marked = None if self.marked is c else c
            self._show_detail()
            if self.marked is not None:
                show_note(self, f"cycle {c.number} marked as A: d on another cycle opens the diff")
            return
        a, self.marked = self.marked, None
        self._show_detail()
        self.open_diff(a, c)

    def open_diff(self, a: Cycle, b: Cycle) -> None:
        """``a`` and ``b`` in the diff browser, through the app's diff path (Esc comes back)."""
        from ...diff.runs import DiffRequest

        app: Any = self.app
        several = len({c.series for c in self.cycles}) > 1
        labels = tuple(one_line(f"{c.series}#{c.number}" if several and c.series else f"#{c.number}")
                       for c in (a, b))
        request = DiffRequest((a.path,), (b.path,), (labels[0], labels[1]), rules=self.request.rules,
                              use_cache=self.request.use_cache)
        app.diff_class = FollowDiffScreen
        app.diff_request = request
        app.push_screen(LoadingScreen([a.path, b.path]))
        app.call_after_refresh(app.load_diff, request)

    def action_unmark(self) -> None:
        if self.marked is not None:
            self.marked = None
            self._show_detail()
