"""A screen of plots (a title, a :class:`~.plot_panel.PlotPanel`, the key bar): the job
screen's arrivals (``p`` there), the memory screen's bytes over time per device (``o`` there).
Dismisses with what Enter picked on a plot, or None (Esc)."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Label

from ..key_bar import KeyBar
from ..shown import only_while_shown
from ..view.plot_views import PlotView
from .plot_panel import PlotPanel


class PlotsScreen(Screen[Any]):
    """``plots`` under ``title`` (module docstring)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="plots_screen.close"),
    ]
    DEFAULT_CSS = """
    PlotsScreen #plots-title { height: 1; }
    """

    def __init__(self, title: Text, plots: list[PlotView], first: int = 0) -> None:
        super().__init__()
        self.title_text = title
        self.plots = plots
        self.first = first  #: the plot shown first

    def compose(self) -> ComposeResult:
        yield Label(self.title_text, id="plots-title")
        panel = PlotPanel(self.plots, id="plots-panel")
        panel.index = max(0, min(self.first, len(self.plots) - 1))
        yield panel
        yield KeyBar()

    def key_applies(self, action: str) -> bool:
        """The key bar leaves out ``p`` (next plot) with one plot."""
        return action != "plot" or len(self.plots) > 1

    @only_while_shown
    def on_mount(self) -> None:
        self.query_one(PlotPanel).focus()

    @on(PlotPanel.Picked)
    def _on_pick(self, event: PlotPanel.Picked) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_close(self) -> None:
        self.dismiss(None)
