"""The bottom-up screen (``b`` on the browser screen, or from the icicle): the selected
subtree's time by name, most self time first, then who called each name.

A :class:`~tracetui.ui.row_table.RowTable` of the names (self time, its share, total time
with a call inside a same-name call counted once, calls; :mod:`tracetui.analysis.bottom_up`);
Enter descends into the row's callers (the line above the table says whose), Backspace climbs
back (at the top: to the subtree's parent, then its thread, then the whole trace), ``/``
searches the names of the level shown (``n``/``N`` the next/previous match), ``v`` switches CPU
/ GPU / Python time, ``i`` shows the same stacks as an icicle.  ``g`` or Esc go back to the tree
with the row's events (the calls of the name first descended into, through the callers shown)
as the matches, longest first; ``q`` goes back without them.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Label

from ...analysis.stacks import MODE_WORDS, CallTree
from ..key_bar import KeyBar
from ..notify import show_note
from ..row_table import RowTable
from ..shown import only_while_shown
from ..view.bottom_up_view import COLUMNS, BottomUpView
from ..view.stack_source import StackSource
from .icicle_screen import StackScreen, stack_bindings
from .stack_search import StackSearch


class BottomUpScreen(StackScreen):
    """The bottom-up table of a subtree (module docstring)."""

    screen_word = "Bottom-up"
    BINDINGS: ClassVar[list[BindingType]] = [
        *stack_bindings("bottom_up"),
        Binding("i", "icicle", "Icicle", id="bottom_up.icicle", tooltip="the same stacks as an icicle"),
    ]
    DEFAULT_CSS = """
    BottomUpScreen #bu-title, BottomUpScreen #bu-path { height: 1; }
    BottomUpScreen #bu-path { color: $text-muted; }
    BottomUpScreen RowTable { height: 1fr; }
    BottomUpScreen StackSearch { display: none; }
    """

    def __init__(self, source: StackSource, root: int | None, mode: str, tree: CallTree) -> None:
        super().__init__(source, root, mode)
        self.view = BottomUpView(tree)
        self.query_text: str | None = None

    def compose(self) -> ComposeResult:
        yield Label(self.title_text(), id="bu-title")
        yield Label("", id="bu-path")
        yield RowTable(id="bu-table")
        yield StackSearch(placeholder="search names: text, or /regex/   Enter: go   Esc: cancel")
        yield KeyBar()

    _hidden = ""  #: the columns the table left out (``hidden: total (= self)``), said in the title

    def title_text(self) -> Text:
        t = super().title_text()
        if self._hidden:
            t.append(f" · {self._hidden}", style="dim")
        return t

    @on(RowTable.Fitted)
    def _on_fitted(self, event: RowTable.Fitted) -> None:
        event.stop()
        self._hidden = event.note
        self.query_one("#bu-title", Label).update(self.title_text())

    @property
    def table(self) -> RowTable:
        return self.query_one(RowTable)

    @only_while_shown
    def on_mount(self) -> None:
        self.table.focus()
        self.fill(0)

    def on_resize(self) -> None:
        if self.is_attached:
            self.fill(self.table.cursor)

    def fill(self, cursor: int) -> None:
        """The level shown, its cursor on display row ``cursor``."""
        width = self.size.width or 80
        v = self.view
        self.query_one("#bu-title", Label).update(self.title_text())
        self.query_one("#bu-path", Label).update(Text(v.path_text(width)))
        self.table.set_rows(COLUMNS, v.cells(), list(range(len(v.rows))), cursor=cursor)

    def focus_main(self) -> None:
        self.table.focus()

    @on(RowTable.Picked)
    def _on_pick(self, event: RowTable.Picked) -> None:
        event.stop()
        if event.row is None:
            return
        if not self.view.descend(event.row):
            show_note(self, "no caller: a root of the tree")
            return
        self.fill(0)

    def action_climb(self) -> None:
        back = self.view.climb()
        if back is None:
            self.climb_root()
            return
        self.fill(back)

    def tree_changed(self, tree: CallTree, cursor: int | None) -> None:
        self.view = BottomUpView(tree)
        self.fill(0)

    def run_search(self, query: str) -> None:
        self.query_text = query
        self.action_next_match(1, first=True)

    def action_next_match(self, step: int, first: bool = False) -> None:
        if self.query_text is None:
            show_note(self, "no search: search first (/)", severity="warning")
            return
        rows = self.view.rows
        if not rows:
            return
        at = self.table.cursor_row or 0
        try:
            i = self.view.find(self.query_text, at - 1 if first else at, step)
        except ValueError as exc:
            show_note(self, str(exc), severity="error")
            return
        if i is None:
            show_note(self, f"no name matches {self.query_text!r} here", severity="warning")
            return
        self.table.move_row_cursor(i)

    def action_events(self) -> None:
        i = self.table.cursor_row
        if i is None:
            self.dismiss(None)
            return
        nodes, label = self.view.events(i)
        if not nodes.size:
            self.dismiss(None)
            return
        self.dismiss(("events", nodes, f"{MODE_WORDS[self.mode]}: {label}"))

    def action_icicle(self) -> None:
        self.dismiss(("switch", "icicle", self.root, self.mode))
