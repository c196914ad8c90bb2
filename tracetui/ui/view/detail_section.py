"""What the detail pane shows: a list of :class:`DetailSection` s, from any model.

The pane (:class:`~tracetui.ui.detail.detail_pane.DetailPane`) draws the sections of a
:class:`DetailModel` for the selected node: the first one usually has no heading (the node's
name, what it is and a key/value grid), each further one a heading over its body.  A trace's
rows are :class:`~.trace_detail.TraceDetail`'s (Kineto and ET nodes, with
:class:`~.driver_detail.DriverDetail` for driver-call events); a diff, a critical path or a
findings list hands the pane sections of its own, built with the blocks here: a key/value
:func:`grid`, a :func:`cell`, a :func:`heading` (numbers with their units: :mod:`tracetui.units`).

Trace strings always become ``Text`` (as :class:`~.keep_text.KeepText`, which keeps a
number with its unit when wrapping), never markup.  Durations are microseconds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

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
    return Group(*parts)


def cell(value: Any, style: str = "") -> Text:
    """``value`` as text (None: empty), never parsed as markup."""
    return KeepText("" if value is None else str(value), style=style)


def grid(rows: Iterable[tuple[str, Any]]) -> Table:
    """Bold keys left, values right; rows whose value is None or "" are left out."""
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        if value is None or value == "":
            continue
        table.add_row(KeepText(key), value if isinstance(value, Text) else cell(value))
    return table


def heading(text: str) -> Text:
    return KeepText(text, style="bold underline")
