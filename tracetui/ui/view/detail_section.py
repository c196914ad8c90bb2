"""What the detail pane shows: a list of :class:`DetailSection` s, from any model.

The pane (:class:`~tracetui.ui.detail.detail_pane.DetailPane`) draws the sections of a
:class:`DetailModel` for the selected node: the first one usually has no heading (the node's
name, what it is and a key/value grid), each further one a heading over its body.  A trace's
rows are :class:`~.trace_detail.TraceDetail`'s (Kineto and ET nodes, with
:class:`~.driver_detail.DriverDetail` for driver-call events); a diff, a critical path or a
findings list hands the pane sections of its own, built with the blocks here: a key/value
:func:`grid`, a :func:`cell`, a :func:`heading` (numbers with their units: :mod:`tracetui.units`).

Trace strings always become ``Text`` (as :class:`~.keep_text.KeepText`, which keeps a
number with its unit when wrapping), never markup.  Durations are microseconds.  A model
shows a name cut (:func:`tracetui.names.shown`); whatever text still holds more than
:data:`tracetui.names.TEXT_WORK_CHARS` characters is cut there by :func:`render_sections`
(:func:`bounded`), with the mark of what was left out, so no model can make the pane wrap
and measure megabytes (a 10 MB name took minutes per selection).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ...names import TEXT_WORK_CHARS, cut_mark
from .keep_text import KeepText


@dataclass
class DetailSection:
    """One block of the detail pane: a ``heading`` (None for the head block) over ``body``,
    renderables drawn in order (a grid, a table, lines).  A table marked ``keep_whole`` is
    drawn at least at its minimum width (the pane scrolls sideways instead of cutting it)."""

    heading: str | None = None
    body: list[RenderableType] = field(default_factory=list)

    @classmethod
    def of_rows(cls, heading: str | None, rows: Iterable[tuple[str, Any]]) -> DetailSection:
        """A section whose body is one key/value :func:`grid`."""
        return cls(heading, [grid(rows)])

    def renderables(self) -> list[RenderableType]:
        """The body, after a blank line and the heading when there is one."""
        if self.heading is None:
            return list(self.body)
        return [KeepText(""), heading(self.heading), *self.body]


class DetailModel(Protocol):
    """What the detail pane needs from a model: the sections of one of its nodes."""

    def sections(self, node: int | None, width: int) -> list[DetailSection]:
        """The sections of ``node`` (None: nothing selected) for a pane ``width`` cells wide
        (a model may lay out differently below :data:`~.keep_text.WIDE` cells)."""


def render_sections(sections: Iterable[DetailSection], note: Text | None = None) -> Group:
    """The pane's content: an optional one-line ``note`` (how the node was reached), then
    every section's renderables."""
    parts: list[RenderableType] = [note] if note is not None else []
    for section in sections:
        parts += section.renderables()
    return Group(*(bounded(part) for part in parts))


def bounded(renderable: Any) -> Any:
    """``renderable`` with every ``Text`` (in a Group, a Table's cells, headers and title, a
    Padding) longer than :data:`~tracetui.names.TEXT_WORK_CHARS` characters (a few names,
    each cut already) cut there, in place (its class and the styles of the kept part kept),
    with the mark of what was left out (``… (+10 MB)``)."""
    if isinstance(renderable, Text):
        plain = renderable.plain
        if len(plain) > TEXT_WORK_CHARS:
            renderable.plain = plain[:TEXT_WORK_CHARS]
            renderable.append(cut_mark(plain, TEXT_WORK_CHARS))
    elif isinstance(renderable, Group):
        for part in renderable.renderables:
            bounded(part)
    elif isinstance(renderable, Table):
        for part in (renderable.title, renderable.caption):
            bounded(part)
        for column in renderable.columns:
            bounded(column.header)
            for part in column._cells:
                bounded(part)
    elif isinstance(renderable, Padding):
        bounded(renderable.renderable)
    return renderable


def cell(value: Any, style: str = "") -> Text:
    """``value`` as text (None: empty), never parsed as markup."""
    return KeepText("" if value is None else str(value), style=style)


def grid(rows: Iterable[tuple[str, Any]]) -> Table:
    """Bold keys left, values right; rows whose value is None or "" (a ``Text`` too) are left out."""
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        if value is None or value == "" or (isinstance(value, Text) and not value.plain):
            continue
        table.add_row(KeepText(key), value if isinstance(value, Text) else cell(value))
    return table


def heading(text: str) -> Text:
    return KeepText(text, style="bold underline")
