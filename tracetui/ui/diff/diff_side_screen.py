"""One side of a diff in the single-trace browser (``A`` / ``B`` in the diff browser): the
main screen over that side's trace, opened on the op the diff had selected (a critical path
found there with ``P`` is that side's, kept while the diff is open), with three more
keys (:data:`~tracetui.ui.bindings.DIFF_SIDE_BINDINGS`): ``D`` back to the diff on the row of
the op selected here (a kernel or a runtime call: the op above it), ``A`` / ``B`` the same op
in the other side's browser."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.binding import BindingType

from ...errors import one_line
from ...session import LinkedTrace
from ..bindings import DIFF_SIDE_BINDINGS
from ..browser.main_screen import MainScreen
from ..notify import show_note
from ..view.status_parts import Part
from ..view.trace_detail import TraceDetail
from ..view.trace_row_source import TraceRowSource


class DiffSideScreen(MainScreen):
    """The single-trace browser of side ``which`` ("a"/"b") of ``diff_screen``'s diff (the
    :class:`~.diff_screen.DiffScreen` that opened it, which imports this module)."""

    BINDINGS: ClassVar[list[BindingType]] = DIFF_SIDE_BINDINGS

    def __init__(self, diff_screen: Any, which: str, linked: LinkedTrace, source: TraceRowSource,
                 detail_model: TraceDetail, *, initial_select: tuple[int, Text | None] | None = None) -> None:
        super().__init__(linked, source, detail_model, initial_select=initial_select)
        self.diff_screen = diff_screen
        self.which = which

    def path_state(self) -> Any:
        """A critical path (``P``) belongs to this side's trace: kept by the diff per side, never
        the app's (whose events are another trace's)."""
        return self.diff_screen.side_paths.get(self.which)

    def store_path(self, state: Any) -> None:
        self.diff_screen.side_paths[self.which] = state

    def status_parts(self) -> list:
        """The main screen's parts after ``A of the diff (D: back)``."""
        label = self.diff_screen.tree_model.side(self.which).label
        key = self.which.upper()
        side = Part("rank", (Text(one_line(f"{key}{f' ({label})' if label != key else ''} of the diff (D: back)"),
                                  style="bold cyan"), Text(f"{key} of diff", style="bold cyan")))
        return [side, *super().status_parts()]

    def diff_row(self) -> int:
        """The merged tree's row of the op selected here (or of the nearest op above it; the
        step row when there is none)."""
        node = self.current
        k = self.source.kineto_of(node) if node is not None else -1
        row = self.diff_screen.source.rows_of_event(self.which, k) if k >= 0 else -1
        return max(row, 0)

    def action_back_to_diff(self) -> None:
        """``D``: back to the diff browser, on the row of the op selected here."""
        row = self.diff_row()
        diff = self.diff_screen
        self.app.pop_screen()
        note = Text(f"< from {self.which.upper()}'s browser", style="bold")
        diff.call_after_refresh(diff.select, row, note)

    def action_other_side(self, which: str) -> None:
        """``A`` / ``B``: the op selected here in the other side's browser."""
        if which == self.which:
            show_note(self, f"this is {which.upper()}'s browser already (D: back to the diff)")
            return
        self.diff_screen.action_open_side(which, self.diff_row(), replace=True)
