"""Text for the detail pane that never splits a number from its unit when wrapping.

Rich wraps a :class:`~rich.text.Text` at any space, so ``19,267,584 B`` could end one line
with the number and start the next with ``B``, and ``ext 420`` could lose its id to the
next line.  :class:`KeepText` wraps like ``Text`` but treats these spaces as part of the
word: the space between a number and a unit (any symbol of :mod:`tracetui.units`: ``B``,
``kB`` … ``TB``, ``ns``, ``µs``, ``ms``, ``s``, ``%``, ``GB/s`` ...) and the space between an
id keyword (``ext``, ``node``, ``rf_id``, ``tensor``, ``storage``, ``id``) and its number.  Its measured minimum width
is the widest such joined token, so a table column holding it is never narrower.
The characters shown are unchanged (a plain space): only the break points differ.
"""

from __future__ import annotations

import re
from typing import Any

from rich._wrap import divide_line
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.containers import Lines
from rich.measure import Measurement
from rich.text import Text

from ... import units
from ...names import NAME_WORK_CHARS, is_cut, length_text

WIDE = 72
"""Pane width (cells) from which argument lists are shown as full tables."""

#: A space that must not break: number + unit, or id keyword + number.
_UNIT = "|".join(re.escape(symbol) for symbol in sorted(units.SYMBOLS, key=len, reverse=True))
_JOINED = re.compile(
    rf"(?<=\d) (?=(?:{_UNIT})(?![\w/]))"
    r"|(?<=\bext) (?=\d)|(?<=\bnode) (?=\d)|(?<=\brf_id) (?=\d)|(?<=\btensor) (?=\d)"
    r"|(?<=\bstorage) (?=\d)|(?<=\bid) (?=\d)"
)


def guarded(plain: str) -> str:
    """``plain`` with each non-breaking space replaced by ``_`` (same cell width), used
    only to find break points."""
    return _JOINED.sub("_", plain)


class KeepText(Text):
    """A ``Text`` whose wrapping keeps numbers with their units and ids with their keyword."""

    def wrap(self, console: Console, width: int, *, justify=None, overflow=None, tab_size: int = 8,
             no_wrap: bool | None = None) -> Lines:
        wrap_justify = justify or self.justify or "default"
        wrap_overflow = overflow or self.overflow or "fold"
        if (no_wrap if no_wrap is not None else bool(self.no_wrap)) or overflow == "ignore":
            return super().wrap(console, width, justify=justify, overflow=overflow, tab_size=tab_size,
                                no_wrap=no_wrap)
        lines = Lines()
        for line in self.split(allow_blank=True):
            if "\t" in line:
                line.expand_tabs(tab_size)
            offsets = divide_line(guarded(line.plain), width, fold=wrap_overflow == "fold")
            new_lines = line.divide(offsets)
            for piece in new_lines:
                piece.rstrip_end(width)
            if wrap_justify:
                new_lines.justify(console, width, justify=wrap_justify, overflow=wrap_overflow)
            for piece in new_lines:
                piece.truncate(width, overflow=wrap_overflow)
            lines.extend(new_lines)
        return lines

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        text = self.plain
        lines = text.splitlines()
        max_width = max(cell_len(line) for line in lines) if lines else 0
        words = guarded(text).split()
        min_width = max(cell_len(word) for word in words) if words else max_width
        return Measurement(min_width, max_width)


def name_length(name: str) -> list[KeepText]:
    """The line above a name drawn cut (:func:`tracetui.names.shown`): its full length and
    where it is whole; [] for a name drawn whole."""
    if not is_cut(name):
        return []
    return [KeepText(f"a name of {length_text(name)}, shown to {NAME_WORK_CHARS:,}: "
                     "the whole of it is copied with a, then c on its name", style="dim")]


def fit_table(console: Console, options: ConsoleOptions, table: Any, width: int) -> int:
    """Set the column widths of ``table`` (a padded, edgeless argument table) for ``width``
    cells, never narrower than a column's widest unbreakable token; returns the width the
    table then takes (more than ``width`` when even the minimums do not fit: the caller
    scrolls sideways).  Wrapping columns give up their slack (max - min) proportionally;
    Rich's own collapse would cut them below that minimum."""
    cols = table.columns
    pad = sum(table.padding[1] + table.padding[3] for _ in cols)
    mins, maxs = [], []
    for col in cols:
        col.width = None
        cells = [col.header, *col.cells]
        ms = [Measurement.get(console, options.update_width(10_000), c) for c in cells if c is not None]
        mins.append(max((m.minimum for m in ms), default=1))
        maxs.append(max((m.maximum for m in ms), default=1))
    if sum(maxs) + pad <= width:
        return sum(maxs) + pad
    widths = list(mins)
    spare = width - pad - sum(mins)
    slack = [mx - mn if not col.no_wrap else 0 for mx, mn, col in zip(maxs, mins, cols)]
    total = sum(slack)
    if spare > 0 and total > 0:
        for i, s in enumerate(slack):
            widths[i] += spare * s // total
    for col, w in zip(cols, widths):
        col.width = w
    return sum(widths) + pad
