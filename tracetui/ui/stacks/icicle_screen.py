"""The icicle screen (``i`` on the browser screen): where the time of the selected subtree
goes, as a picture.

The selected node fills the top line; below it its callees, each as wide as its share of the
time, merged by name path (17 calls of ``aten::linear`` under one parent are one cell); down
the screen the stacks deepen.  ``v`` switches what the widths measure: CPU time (python frames
hidden), GPU time (each kernel, memcpy and memset under the op that launched it) or CPU time
with the python frames (:mod:`tracetui.analysis.stacks`).  The arrows move the cursor (←/→
along a line, ↑ the caller, ↓ the largest callee), Enter descends (the cursor's cell fills the
top line), Backspace climbs (at the top: to the parent of the subtree, then its thread, then
the whole trace), ``/`` searches names (``n``/``N`` the matches, largest first), ``b`` shows the
same stacks bottom-up.  ``g`` or Esc go back to the tree with the cursor cell's events as the
matches, longest first (``n``/``N`` walk them); ``q`` goes back without them.  The line under
the picture says the cursor cell's name, time, share, self time and calls.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Label

from ... import units
from ...analysis.stacks import MODE_WORDS, MODES, CallTree
from ...errors import one_line
from ..key_bar import KeyBar
from ..notify import show_note
from ..shown import only_while_shown, show_when_computed
from ..view.icicle_view import IcicleView
from ..view.stack_source import StackSource
from .icicle_widget import IcicleWidget
from .stack_search import StackSearch


def cct_of_event(tree: CallTree, event: int) -> int:
    """The node of ``tree`` holding the trace node ``event`` (0 when none: hidden in this mode)."""
    at = np.flatnonzero(tree.event_index == event)
    if not at.size:
        return 0
    return int(np.searchsorted(tree.event_start, at[0], side="right") - 1)


def stack_bindings(feature: str) -> list[BindingType]:
    """The keys the icicle and the bottom-up screens share (ids ``<feature>.<action>``); ``g``
    has priority (a table's ``g`` would go to its top row)."""
    return [
        Binding("backspace", "climb", "Climb", id=f"{feature}.climb",
                tooltip="back up one level (the icicle's top line: to the subtree's parent, its thread, the "
                        "whole trace)"),
        Binding("slash", "search", "Search", id=f"{feature}.search", key_display="/",
                tooltip="names: text, or /regex/"),
        Binding("n", "next_match(1)", "Next match", show=False, id=f"{feature}.next_match"),
        Binding("N", "next_match(-1)", "Previous match", show=False, id=f"{feature}.prev_match"),
        Binding("v", "mode", "CPU / GPU / Python", id=f"{feature}.mode",
                tooltip="what the time is: CPU time (python frames hidden), GPU time (each GPU event under the "
                        "op that launched it), CPU time with python frames"),
        Binding("g", "events", "In the tree", id=f"{feature}.events", priority=True,
                tooltip="back to the tree with this cell's events as the matches, longest first (n/N)"),
        Binding("escape", "events", "Back", show=False, id=f"{feature}.back",
                tooltip="back to the tree with this cell's events as the matches (as g)"),
        Binding("q", "close", "Close", show=False, id=f"{feature}.close", tooltip="back to the tree as it was"),
    ]


class StackScreen(Screen[tuple | None]):
    """What both stack screens do: the trees per mode, climbing above the root, the search bar,
    the result (``("events", nodes, label)``, ``("switch", screen, root, mode)`` or None)."""

    def __init__(self, source: StackSource, root: int | None, mode: str) -> None:
        super().__init__()
        self.source = source
        self.root = root
        self.mode = mode

    @property
    def tree(self) -> CallTree:
        return self.source.tree(self.root, self.mode)

    def title_text(self) -> Text:
        t = Text()
        t.append(self.screen_word, style="bold")
        t.append(f" of {self.source.root_name(self.root)}")  # root_name: one_line
        t.append(f" · {MODE_WORDS[self.mode]}", style="bold")
        t.append(f" · {units.plural(self.tree.n, 'stack')}", style="dim")
        return t

    def with_tree(self, root: int | None, mode: str, then: Any) -> None:
        """Call ``then(tree)`` with the tree of (``root``, ``mode``): at once when it is kept,
        else once a worker has computed it (while this screen is still shown)."""
        ready = self.source.ready(root, mode)
        if ready is not None:
            then(ready)
            return
        source = self.source
        show_when_computed(self, lambda: source.tree(root, mode), then, "stacks")

    def action_mode(self) -> None:
        mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]

        def shown(tree: CallTree) -> None:
            self.mode = mode
            self.tree_changed(tree, None)
            show_note(self, MODE_WORDS[mode])

        self.with_tree(self.root, mode, shown)

    def climb_root(self) -> None:
        """Backspace at the top: the root's parent (its thread, the whole trace) becomes the root."""
        ok, above = self.source.above(self.root)
        if not ok:
            show_note(self, "the whole trace: nothing above it")
            return
        old = self.root

        def shown(tree: CallTree) -> None:
            self.root = above
            self.tree_changed(tree, cct_of_event(tree, old) if old is not None else None)

        self.with_tree(above, self.mode, shown)

    def tree_changed(self, tree: CallTree, cursor: int | None) -> None:
        """Show ``tree`` (a new mode or root), the cursor on ``cursor`` (None: the top)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ search
    def action_search(self) -> None:
        bar = self.query_one(StackSearch)
        bar.display = True
        bar.value = ""
        bar.focus()

    @on(StackSearch.Submitted)
    def _on_search(self, event: StackSearch.Submitted) -> None:
        event.stop()
        self._close_search()
        if event.value.strip():
            self.run_search(event.value)

    @on(StackSearch.Cancelled)
    def _on_search_cancel(self, event: StackSearch.Cancelled) -> None:
        event.stop()
        self._close_search()

    def _close_search(self) -> None:
        bar = self.query_one(StackSearch)
        bar.display = False
        self.focus_main()

    def run_search(self, query: str) -> None:
        raise NotImplementedError

    def focus_main(self) -> None:
        raise NotImplementedError

    def action_close(self) -> None:
        self.dismiss(None)


class IcicleScreen(StackScreen):
    """The icicle of a subtree (module docstring)."""

    screen_word = "Icicle"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left,h", "move(-1)", "Previous cell", show=False, id="icicle.left"),
        Binding("right,l", "move(1)", "Next cell", show=False, id="icicle.right"),
        Binding("up,k", "up", "Caller", show=False, id="icicle.up"),
        Binding("down,j", "down", "Largest callee", show=False, id="icicle.down"),
        Binding("enter", "descend", "Descend", id="icicle.descend", tooltip="the cursor's cell fills the top line"),
        *stack_bindings("icicle"),
        Binding("b", "bottom_up", "Bottom-up", id="icicle.bottom_up",
                tooltip="the same stacks bottom-up: self time by name, then the callers"),
    ]
    DEFAULT_CSS = """
    IcicleScreen #icicle-title, IcicleScreen #icicle-crumb, IcicleScreen #icicle-cell { height: 1; }
    IcicleScreen #icicle-crumb { color: $text-muted; }
    IcicleScreen #icicle-cell { background: $panel; }
    IcicleScreen StackSearch { display: none; }
    """

    def __init__(self, source: StackSource, root: int | None, mode: str, tree: CallTree) -> None:
        super().__init__(source, root, mode)
        self.view = IcicleView(tree)

    def compose(self) -> ComposeResult:
        yield Label(self.title_text(), id="icicle-title")
        yield Label("", id="icicle-crumb")
        yield IcicleWidget(self.view, id="icicle")
        yield Label("", id="icicle-cell")
        yield StackSearch(placeholder="search names: text, or /regex/   Enter: go   Esc: cancel")
        yield KeyBar()

    @property
    def widget(self) -> IcicleWidget:
        return self.query_one(IcicleWidget)

    def _grid(self) -> tuple[int, int]:
        w = self.widget
        return max(w.size.width, 1), max(w.size.height, 1)

    @only_while_shown
    def on_mount(self) -> None:
        self.widget.focus()
        self.call_after_refresh(self.refresh_view)

    @only_while_shown
    def refresh_view(self) -> None:
        """Redraw the picture and the lines around it."""
        width = self.size.width or 80
        self.query_one("#icicle-title", Label).update(self.title_text())
        self.query_one("#icicle-crumb", Label).update(Text(self.view.breadcrumb(width)))
        self.query_one("#icicle-cell", Label).update(self.view.describe())
        self.widget.refresh()

    def focus_main(self) -> None:
        self.widget.focus()

    def on_resize(self) -> None:
        self.call_after_refresh(self.refresh_view)

    # ------------------------------------------------------------------ keys
    def action_move(self, step: int) -> None:
        self.view.move(step, *self._grid())
        self.refresh_view()

    def action_up(self) -> None:
        self.view.up(*self._grid())
        self.refresh_view()

    def action_down(self) -> None:
        self.view.down(*self._grid())
        self.refresh_view()

    def action_descend(self) -> None:
        if self.view.cursor == self.view.focus:
            if not self.view.tree.children(self.view.cursor).size:
                show_note(self, "no callee below this cell")
                return
            self.view.down(*self._grid())
        self.view.zoom_in()
        self.refresh_view()

    def action_climb(self) -> None:
        if self.view.zoom_out():
            self.refresh_view()
            return
        self.climb_root()

    def tree_changed(self, tree: CallTree, cursor: int | None) -> None:
        query = self.view.query
        self.view = IcicleView(tree)
        self.widget.view = self.view
        if query is not None:
            self.view.search(query)
        if cursor:
            self.view.set_cursor(cursor, *self._grid())
        self.refresh_view()

    def run_search(self, query: str) -> None:
        try:
            n = self.view.search(query)
        except ValueError as exc:
            show_note(self, str(exc), severity="error")
            return
        if not n:
            show_note(self, f"no name matches {query!r}", severity="warning")
            self.refresh_view()
            return
        self.view.set_cursor(int(self.view.matches[0]), *self._grid())
        show_note(self, f"{n:,} cells match {query!r}: n/N the next/previous (largest first)")
        self.refresh_view()

    def action_next_match(self, step: int) -> None:
        i = self.view.next_match(step, *self._grid())
        if i is None:
            show_note(self, "no matches: search first (/)", severity="warning")
            return
        show_note(self, f"match {i + 1} of {self.view.matches.size:,}")
        self.refresh_view()

    def action_events(self) -> None:
        t, c = self.view.tree, self.view.cursor
        events = t.events(c)
        if c == 0 or not events.size:
            self.dismiss(None)
            return
        self.dismiss(("events", events, f"{MODE_WORDS[self.mode]}: {one_line(t.name(c))}"))

    def action_bottom_up(self) -> None:
        self.dismiss(("switch", "bottom_up", self.root, self.mode))
