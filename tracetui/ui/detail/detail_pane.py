"""The detail pane widget: the sections (:class:`~tracetui.ui.view.detail_section.DetailSection`) of the
selected node, from any :class:`~tracetui.ui.view.detail_section.DetailModel` (a trace's is
:class:`~tracetui.ui.view.trace_detail.TraceDetail`).

Cells are terminal columns; the pane renders its content to lines once per selection and
per size, never on scroll.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...io.terminal import safe_renderable
from ..view.detail_section import DetailModel, render_sections
from ..view.keep_text import WIDE, KeepText, fit_table


class DetailPane(ScrollView, can_focus=True):
    """Scrollable pane showing the sections of ``model`` for the selected node.

    A Line-API widget: the renderable is rendered to lines once per selection (at the
    pane's width) and :meth:`render_line` hands out the visible ones.  Changing the
    selection only sets the virtual size and repaints the pane; it never re-lays out the
    screen (a ``Static`` with auto height did, re-rendering the content to measure it:
    ~35 ms per cursor move on a 200x50 terminal).

    Width: the lines are rendered at the width left beside the vertical scrollbar when
    they are taller than the pane (a line rendered at the full width lost its last cells
    under the scrollbar), and at least at the minimum width of any argument table (then
    the pane scrolls sideways instead of cutting a number).
    """

    DEFAULT_CSS = """
    DetailPane { padding: 0 1; }
    """

    def __init__(self, model: DetailModel | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model
        self._built_width = 0  #: the width the model last laid out for
        self.node: int | None = None
        self._renderable: RenderableType = KeepText("")
        self._note: Text | None = None
        self._lines: list[Strip] = []
        self._fitted: tuple[int, int] = (0, 0)  #: (width, height) of the content region the lines fit
        self._scrolled = True  #: the last lines were taller than the pane (rendered beside the scrollbar)

    def show(self, node: int | None, note: Text | None = None) -> None:
        """Show ``node`` (and an optional one-line ``note`` above it, e.g. how it was reached)."""
        self.node = node
        if self.model is None:
            return
        self._note = note
        self._fit()
        self.scroll_home(animate=False)

    @property
    def note(self) -> Text | None:
        """The note shown above the node (how it was reached), if any."""
        return self._note

    def rebuild(self) -> None:
        """Build the current node again, its note and scroll position kept: the model has
        more to say about it (the findings became known)."""
        if self.model is not None:
            y = self.scroll_offset.y
            self._fit()
            self.scroll_to(y=y, animate=False)

    def clear_note(self) -> None:
        """Show the current node again without its note (``esc``: a search note is stale)."""
        if self._note is not None:
            self.show(self.node)

    def _region(self) -> tuple[int, int]:
        """(width, height) inside the padding, scrollbars included; 80x24 before layout."""
        region = self.content_region
        return (region.width, region.height) if region.width > 0 else (80, 24)

    def _fit(self) -> None:
        """Build and render for the current size: beside the vertical scrollbar when the
        lines are taller than the pane, else at the full width.  The width that fitted the
        previous selection is tried first, so walking rows of one kind renders once each."""
        width, height = self._region()
        self._fitted = (width, height)
        hbar = self.styles.scrollbar_size_horizontal
        narrow = max(1, width - self.styles.scrollbar_size_vertical)

        def render(usable: int, first: bool) -> tuple[list, int, bool]:
            # the first pass builds for the (possibly new) node; the second only when the
            # argument layout (table or lines, WIDE) differs at the other width
            if self.model is not None and (first or (self._built_width >= WIDE) != (usable >= WIDE)):
                # trace text is data: nothing a terminal acts on reaches the screen
                self._renderable = safe_renderable(render_sections(self.model.sections(self.node, usable), self._note))
                self._built_width = usable
            lines, rendered = self._render_at(usable)
            return lines, rendered, len(lines) <= height - (hbar if rendered > usable else 0)

        if self._scrolled or narrow == width:
            lines, rendered, fits = render(narrow, True)
            if fits and narrow < width:  # short: use the full width (wider never wraps into more lines)
                lines, rendered, _ = render(width, False)
        else:
            lines, rendered, fits = render(width, True)
            if not fits:
                lines, rendered, fits = render(narrow, False)
        self._scrolled = not fits
        self._lines = [Strip(line, rendered) for line in lines]
        self.virtual_size = Size(rendered, len(self._lines))
        self.refresh()

    def _render_at(self, width: int) -> tuple[list, int]:
        """The renderable as lines at ``width``; an argument table narrower than its minimum
        width is rendered at that minimum instead (the pane scrolls sideways).  Returns the
        lines and the widest line's width."""
        console = self.app.console
        options = console.options.update(width=width, min_width=width, max_width=width, height=None)
        parts = getattr(self._renderable, "renderables", None)
        if parts is None:
            return console.render_lines(self._renderable, options, style=self.rich_style, pad=True), width
        lines: list = []
        widest = width
        for part in parts:
            at = options
            if getattr(part, "keep_whole", False):
                need = fit_table(console, options, part, width)
                if need > width:
                    at = options.update(width=need, min_width=need, max_width=need)
                    widest = max(widest, need)
            lines += console.render_lines(part, at, style=self.rich_style, pad=True)
        return lines, widest

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        row = self.scroll_offset.y + y
        if 0 <= row < len(self._lines):
            x = self.scroll_offset.x
            return self._lines[row].crop_extend(x, x + width, self.rich_style)
        return Strip.blank(width, self.rich_style)

    def on_resize(self) -> None:
        if self.model is None or self._region() == self._fitted:
            return
        self._fit()

    def text(self) -> str:
        """The pane's content as plain text (for tests)."""
        from rich.console import Console

        console = Console(width=max(20, self.size.width or 80), record=True, file=_Null(), color_system=None)
        console.print(self._renderable)
        return console.export_text()


class _Null:
    def write(self, s: str) -> int:
        return len(s)

    def flush(self) -> None:
        pass
