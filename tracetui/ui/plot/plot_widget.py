"""The widget that draws a :class:`~tracetui.ui.view.plot.PlotModel` (step series as bars and
lines, a cursor, marks, labelled axes) line by line; the screen that holds it sets the model
and handles the keys.  Its height is the chart's rows plus two (the axis and its labels).

Colours: the first series ``plot--s0``, the next ones ``plot--s1`` ... (``plot--s3`` at most,
then again), the cursor ``plot--cursor``, the axes and labels ``plot--axis``, marks
``plot--mark``; a series' line over a bar tints the bar's cell with the line's colour.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

from ..view.plot import PlotModel

_SERIES = 4


class PlotWidget(Widget):
    """Draws :attr:`model` (None: an empty box)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {*(f"plot--s{i}" for i in range(_SERIES)), "plot--cursor", "plot--axis",
                                             "plot--mark"}
    DEFAULT_CSS = """
    PlotWidget { height: 10; width: 1fr; background: $surface; }
    PlotWidget > .plot--s0 { color: $accent; }
    PlotWidget > .plot--s1 { color: $warning; }
    PlotWidget > .plot--s2 { color: $success; }
    PlotWidget > .plot--s3 { color: $error; }
    PlotWidget > .plot--cursor { color: $text; text-style: bold; }
    PlotWidget > .plot--axis { color: $text-muted; }
    PlotWidget > .plot--mark { color: $error; text-style: bold; }
    """

    def __init__(self, model: PlotModel | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._model = model
        self._drawn: list[list[tuple[str, str]]] | None = None
        self._drawn_for = (0, 0)
        #: style name -> Style, for the rows drawn (the CSS cascade once per name, not per cell)
        self._styles: dict[str, Style] = {}

    @property
    def model(self) -> PlotModel | None:
        return self._model

    @model.setter
    def model(self, model: PlotModel | None) -> None:
        self._model = model
        self._drawn = None
        self.refresh()

    def chart_width(self) -> int:
        """Cells of the chart itself (the y labels left of it excluded)."""
        from ..view.plot import Y_LABEL

        return max(self.size.width - Y_LABEL, 0)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = {}

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self._compute_style(name)
        return style

    def _compute_style(self, name: str) -> Style:
        base = self.rich_style
        if not name:
            return base
        words = name.split()
        out = base
        for w in words:
            if w.startswith("on-s"):
                color = self.get_component_rich_style(f"plot--s{int(w[4:]) % _SERIES}").color
                out += Style(bgcolor=color)
            elif w.startswith("s") and w[1:].isdigit():
                out += self.get_component_rich_style(f"plot--s{int(w[1:]) % _SERIES}")
            elif w == "cursor":
                out += self.get_component_rich_style("plot--cursor") + (Style(reverse=True) if len(words) > 1 else
                                                                        Style())
            elif w in ("axis", "label"):
                out += self.get_component_rich_style("plot--axis")
            elif w == "mark":
                out += self.get_component_rich_style("plot--mark")
        return out

    def render_line(self, y: int) -> Strip:
        width, height = self.size.width, self.size.height
        if self._model is None or width <= 0:
            return Strip.blank(width, self.rich_style)
        if self._drawn is None or self._drawn_for != (width, height):
            self._drawn = self._model.lines(width, max(height - 2, 1))
            self._drawn_for = (width, height)
            self._styles = {}
        if y >= len(self._drawn):
            return Strip.blank(width, self.rich_style)
        segs = [Segment(text, self._style(style)) for text, style in self._drawn[y]]
        return Strip(segs).crop_extend(0, width, self.rich_style)
