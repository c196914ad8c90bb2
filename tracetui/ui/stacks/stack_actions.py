"""Call stacks in the browser: the stack keys of the main screen.

:class:`StackActions` gives the browser screen ``i`` (the icicle of the selected subtree,
:class:`~.icicle_screen.IcicleScreen`) and ``b`` (its bottom-up table,
:class:`~.bottom_up_screen.BottomUpScreen`); on a lane row they show the thread's (or
stream's) stacks, on an ET row without a Kineto event the whole trace's.  Each starts by CPU
time (``v`` switches).  The call trees are computed in a worker thread and kept per trace
(:class:`~tracetui.ui.view.stack_source.StackSource`, the last few); what the screens give
back (a cell's events) becomes the match list, longest first.
"""

from __future__ import annotations

from typing import Any

from ...analysis.stacks import CPU
from ..notify import show_note
from ..shown import show_when_computed
from ..view.stack_source import StackSource
from .bottom_up_screen import BottomUpScreen
from .icicle_screen import IcicleScreen

#: the screen of each name a stack screen can switch to
SCREENS = {"icicle": IcicleScreen, "bottom_up": BottomUpScreen}


class StackActions:
    """Mixin for the browser screen: the stack keys (see the module docstring)."""

    _stacks: StackSource | None = None

    def stack_source(self) -> StackSource | None:
        kt = self.linked.kineto
        if kt is None:
            show_note(self, "call stacks need a Kineto trace", severity="warning")
            return None
        if self._stacks is None or self._stacks.kt is not kt:
            self._stacks = StackSource(kt)
        return self._stacks

    def _stack_root(self) -> int | None:
        node = self.current
        k = self.source.kineto_of(node) if node is not None else -1
        return k if k >= 0 else None

    def action_icicle(self) -> None:
        """``i``: the icicle of the selected subtree."""
        self.open_stacks("icicle", self._stack_root(), CPU)

    def action_bottom_up(self) -> None:
        """``b``: the bottom-up table of the selected subtree."""
        self.open_stacks("bottom_up", self._stack_root(), CPU)

    def open_stacks(self, which: str, root: int | None, mode: str) -> None:
        source = self.stack_source()
        if source is None:
            return
        screen = SCREENS[which]
        show_when_computed(self, lambda: source.tree(root, mode),
                           lambda tree: self.app.push_screen(screen(source, root, mode, tree), self._stacks_done),
                           "stacks")

    def _stacks_done(self, result: tuple[Any, ...] | None) -> None:
        if result is None or not self.is_attached:
            return
        if result[0] == "events":
            _, nodes, label = result
            self.show_occurrences((nodes, label), longest_first=True)
        elif result[0] == "switch":
            _, which, root, mode = result
            self.open_stacks(which, root, mode)
