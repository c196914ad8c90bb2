"""The status line widget: the parts of :mod:`tracetui.ui.view.status_parts`, fitted to one line."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from ..view.status_parts import Part, fit_status


class StatusLine(Widget):
    """One line: :func:`fit_status` of its parts at the widget's content width, re-fitted
    whenever the widget is resized or :meth:`set_parts` gives new parts."""

    DEFAULT_CSS = "StatusLine { height: 1; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._parts: list[Part] = []

    def set_parts(self, parts: list[Part]) -> None:
        self._parts = list(parts)
        self.refresh()

    def fitted(self) -> Text:
        """The line as it is drawn now (fitted to the content width)."""
        return fit_status(self._parts, self.content_size.width)

    def render(self) -> Text:
        return self.fitted()

    def on_resize(self) -> None:
        self.refresh()
