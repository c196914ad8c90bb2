"""A panel of plots: a line naming them (the one shown in bold), the plot
(:class:`~.plot_widget.PlotWidget`) and a line saying what is under its cursor.  The plots are
:class:`~tracetui.ui.view.plot_views.PlotView`\\ s (step time, GPU busy, a job's arrivals);
the summaries screen shows the panel as its Plots tab, the job screen in
:class:`~.plots_screen.PlotsScreen`.

Keys (ids ``plots.*``): ←/→ move the cursor (shift: ten at a time; Home/End the ends), ↑/↓ the
plot's variant (a rank), ``p``/``P`` the next/previous plot, ``^`` the marked position (the
slowest step, the busiest bin, the collective this rank was latest at), Enter posts
:class:`PlotPanel.Picked` with what is under the cursor (the screen decides where it goes).
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Label

from ...errors import one_line
from ..notify import show_note
from ..view.plot_views import PlotView
from .plot_widget import PlotWidget

#: positions a shift+arrow moves
BIG_STEP = 10


class PlotPanel(Vertical, can_focus=True):
    """Plots one at a time (module docstring)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "move(-1)", "Earlier", show=False, id="plots.left"),
        Binding("right", "move(1)", "Later", show=False, id="plots.right"),
        Binding("shift+left", f"move(-{BIG_STEP})", "Earlier x10", show=False, id="plots.left_far"),
        Binding("shift+right", f"move({BIG_STEP})", "Later x10", show=False, id="plots.right_far"),
        Binding("home", "move(-1000000000)", "First", show=False, id="plots.first"),
        Binding("end", "move(1000000000)", "Last", show=False, id="plots.last"),
        Binding("up", "variant(-1)", "Previous rank", show=False, id="plots.variant_up"),
        Binding("down", "variant(1)", "Next rank", show=False, id="plots.variant_down"),
        Binding("p", "plot(1)", "Next plot", id="plots.next"),
        Binding("P", "plot(-1)", "Previous plot", show=False, id="plots.prev"),
        Binding("circumflex_accent", "peak", "Marked", id="plots.peak", key_display="^",
                tooltip="the slowest step, the busiest bin, the collective this rank arrived latest at"),
        Binding("enter", "pick", "In the tree", id="plots.pick",
                tooltip="the step's annotation, the bin's GPU events, the rank's collective kernel"),
    ]
    DEFAULT_CSS = """
    PlotPanel { height: 1fr; }
    PlotPanel #plots-names { height: 1; color: $text-muted; }
    PlotPanel PlotWidget { height: 1fr; min-height: 6; }
    PlotPanel #plots-readout { width: 1fr; height: auto; max-height: 2; background: $panel; }
    PlotPanel:focus #plots-readout { background: $panel-lighten-1; }
    """

    class Picked(Message):
        """Enter: ``value`` is what the plot's ``events`` gave."""

        def __init__(self, panel: PlotPanel, value: Any) -> None:
            super().__init__()
            self.panel, self.value = panel, value

    def __init__(self, plots: list[PlotView], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.plots = plots
        self.index = 0

    def compose(self) -> ComposeResult:
        yield Label("", id="plots-names")
        yield PlotWidget(id="plots-plot")
        yield Label("", id="plots-readout")

    @property
    def plot(self) -> PlotView | None:
        return self.plots[self.index] if self.plots else None

    def set_plots(self, plots: list[PlotView]) -> None:
        self.plots = plots
        self.index = 0
        self.redraw()

    def on_mount(self) -> None:
        self.call_after_refresh(self.redraw)

    def on_resize(self) -> None:
        self.call_after_refresh(self.redraw)

    def chart_width(self) -> int:
        return max(self.query_one(PlotWidget).chart_width(), 1)

    def redraw(self) -> None:
        """The names line, the plot and the readout of the plot shown."""
        if not self.is_attached or not self.query("#plots-names"):
            return  # closed with its screen (a redraw queued after a refresh): its widgets are gone
        names = Text()
        for k, p in enumerate(self.plots):
            names.append(f" {k + 1}:" if len(self.plots) > 1 else " ", style="dim")
            names.append(one_line(p.title), style="bold reverse" if k == self.index else "")
        plot = self.plot
        legend = plot.legend if plot is not None else ""
        if legend and names.cell_len + len(legend) + 3 <= (self.size.width or 80):
            names.append(f"   {legend}", style="dim")
        self.query_one("#plots-names", Label).update(names if self.plots else Text("no plot for this trace"))
        widget = self.query_one(PlotWidget)
        if plot is None:
            widget.model = None
            self.query_one("#plots-readout", Label).update("")
            return
        width = self.chart_width()
        n = plot.positions(width)
        plot.cursor = max(0, min(plot.cursor, n - 1))
        widget.model = plot.model(width)
        self.query_one("#plots-readout", Label).update(plot.readout(width))

    # ------------------------------------------------------------------ keys
    def action_move(self, step: int) -> None:
        plot = self.plot
        if plot is not None:
            plot.cursor = max(0, min(plot.cursor + int(step), plot.positions(self.chart_width()) - 1))
            self.redraw()

    def action_variant(self, step: int) -> None:
        plot = self.plot
        if plot is not None and plot.variants:
            plot.variant = (plot.variant + step) % len(plot.variants)
            self.redraw()

    def action_plot(self, step: int) -> None:
        if self.plots:
            self.index = (self.index + step) % len(self.plots)
            self.redraw()

    def action_peak(self) -> None:
        plot = self.plot
        if plot is not None:
            plot.cursor = plot.peak(self.chart_width())
            self.redraw()

    def action_pick(self) -> None:
        plot = self.plot
        value = plot.events(self.chart_width()) if plot is not None else None
        if value is None:
            show_note(self, "nothing under the cursor", severity="warning")
            return
        self.post_message(self.Picked(self, value))
