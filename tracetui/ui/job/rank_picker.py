"""The rank picker: a list of ranks (every rank of a job, or the ranks of one collective with
their arrival offsets) that returns the chosen rank (:class:`~.job_actions.JobActions` opens it)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from ...errors import one_line
from ...io.terminal import safe_text
from ..shown import only_while_shown


class RankPicker(ModalScreen[int | None]):
    """Choose a rank: ``rows`` are (rank, label, enabled); Enter picks, Esc cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="ranks.cancel"),
    ]
    DEFAULT_CSS = """
    RankPicker { align: center middle; }
    RankPicker > Vertical { width: 90%; height: 80%; border: round $accent; background: $surface; }
    RankPicker OptionList { height: 1fr; }
    """

    def __init__(self, title: str, rows: list[tuple[int, Text, bool]], highlight: int | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.rows = rows
        self.highlight = highlight

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(one_line(self.title_text), style="bold"))
            yield OptionList(*(Option(safe_text(label), id=str(rank), disabled=not ok) for rank, label,
                               ok in self.rows),
                             id="ranks")

    @only_while_shown  # keys typed ahead may have closed it already
    def on_mount(self) -> None:
        ol = self.query_one(OptionList)
        ol.focus()
        ranks = [r for r, _, ok in self.rows]
        if self.highlight in ranks:
            ol.highlighted = ranks.index(self.highlight)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(int(event.option.id))

    def action_cancel(self) -> None:
        self.dismiss(None)
