"""The widget that draws an :class:`~tracetui.ui.view.icicle_view.IcicleView`, one line per
level of the call tree (the focus on top), line by line.

A cell is its name on a colour picked by the name (the same name, the same colour, so a
kernel or an op is recognised across the picture), cut with ``…``, with one blank column at
its right end when it is three columns or wider so that neighbours stay apart; the cursor's
cell is drawn in the cursor's colours, cells whose name matches the search in the match
colours.  The screen holding it handles the keys (:mod:`.icicle_screen`).
"""

from __future__ import annotations

import zlib
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

from ..view.icicle_view import IcicleView, cell_label

#: colours of the cells (by name)
PALETTE = 6


class IcicleWidget(Widget, can_focus=True):
    """Draws :attr:`view` over its whole size."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {*(f"icicle--c{i}" for i in range(PALETTE)), "icicle--cursor",
                                             "icicle--match"}
    DEFAULT_CSS = """
    IcicleWidget { height: 1fr; width: 1fr; background: $surface; }
    IcicleWidget > .icicle--c0 { background: $primary 55%; color: $text; }
    IcicleWidget > .icicle--c1 { background: $secondary 55%; color: $text; }
    IcicleWidget > .icicle--c2 { background: $accent 45%; color: $text; }
    IcicleWidget > .icicle--c3 { background: $success 45%; color: $text; }
    IcicleWidget > .icicle--c4 { background: $warning 40%; color: $text; }
    IcicleWidget > .icicle--c5 { background: $panel-lighten-2; color: $text; }
    IcicleWidget > .icicle--match { background: $error 70%; color: $text; text-style: bold; }
    IcicleWidget > .icicle--cursor { background: $block-cursor-background; color: $block-cursor-foreground;
                                     text-style: bold; }
    IcicleWidget:ansi:nocolor > .icicle--cursor { text-style: reverse; }
    """

    def __init__(self, view: IcicleView, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view = view

    @property
    def view(self) -> IcicleView:
        return self._view

    @view.setter
    def view(self, view: IcicleView) -> None:
        self._view = view
        self.refresh()

    def colour(self, node: int) -> str:
        """The component class of a node's cell: by its name (a stable hash), the cursor or a match."""
        v = self._view
        if node == v.cursor:
            return "icicle--cursor"
        if v.match_mask[node]:
            return "icicle--match"
        name = v.tree.name(node)
        return f"icicle--c{zlib.crc32(name.encode('utf-8', 'surrogatepass')) % PALETTE}"

    def render_line(self, y: int) -> Strip:
        width, height = self.size.width, self.size.height
        base = self.rich_style
        rows = self._view.layout(width, height)
        if y >= len(rows) or width <= 0:
            return Strip.blank(width, base)
        segs: list[Segment] = []
        x = 0
        styles: dict[str, Style] = {}
        for cell in rows[y]:
            if cell.x0 > x:
                segs.append(Segment(" " * (cell.x0 - x), base))
            w = cell.x1 - cell.x0
            cls = self.colour(cell.node)
            style = styles.get(cls)
            if style is None:
                style = styles[cls] = base + self.get_component_rich_style(cls)
            inner = w - 1 if w >= 3 else w
            text = cell_label(self._view.tree.name(cell.node), inner)
            segs.append(Segment(text.ljust(inner)[:inner], style))
            if inner < w:
                segs.append(Segment(" ", base))
            x = cell.x1
        return Strip(segs).crop_extend(0, width, base)
