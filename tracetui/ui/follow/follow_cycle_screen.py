"""One cycle of a followed run in the browser (Enter on the follow screen): the main screen over
that cycle's trace, its status line starting with the cycle, and Esc back to the cycles once
there is no search, filter or critical path left to clear."""

from __future__ import annotations

import gc
from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType

from ...errors import one_line
from ..browser.main_screen import MainScreen
from ..view.status_parts import Part


class FollowCycleScreen(MainScreen):
    """The single-trace browser of cycle ``cycle_label`` of the followed run."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear", "Back to the cycles", id="follow_cycle.back",
                tooltip="clears a search, a filter or a critical path first; then back to the follow screen"),
    ]

    def __init__(self, *args: Any, followed: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: the :class:`~tracetui.follow.cycle.Cycle` shown (``cycle`` is the main screen's jump cycle)
        self.followed = followed

    @classmethod
    def for_cycle(cls, cycle: Any) -> Any:
        """What the app's load path builds this screen with (the main screen's arguments)."""
        return partial(cls, followed=cycle)

    def status_parts(self) -> list:
        c = self.followed
        forms = [f"cycle {c.number}" + (f" of {c.series}" if c.series else "") + " (Esc: back)",
                 f"cycle {c.number} (Esc: back)", f"cycle {c.number}"]
        return [Part("rank", tuple(Text(one_line(f), style="bold cyan") for f in forms)), *super().status_parts()]

    def action_clear(self) -> None:
        """Esc: the search and the filter, else a critical path, else back to the cycles."""
        if self.source.filtered or self.query_text is not None:
            super().action_clear()
        elif not self.clear_path():
            back_to_cycles(self)


def back_to_cycles(screen: Any) -> None:
    """Close ``screen`` (a cycle or a diff of cycles): the follow screen under it shows again;
    what the closed screen held can be collected (the app froze it once painted)."""
    app = screen.app
    app.critical = None
    app.pop_screen()
    gc.unfreeze()
