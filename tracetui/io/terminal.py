"""Styled text from files made safe for a terminal: :func:`tracetui.errors.one_line` applied
to ``rich`` objects.

The browser and the command line build :class:`rich.text.Text` (never markup) from trace
data; Rich drops BEL, BS, VT, FF and CR from it but keeps ESC and the C1 controls, so a
name holding ``ESC ] 52 ; c ; ... ESC \\`` would write to the user's clipboard and
``ESC [ 6 n`` would make the terminal type a reply into the app.  :func:`safe_text`
escapes every such character visibly (``\\x1b``) and moves the styles with the
characters; :func:`safe_renderable` does it for every ``Text`` inside a Group, Table,
Padding or Panel, so a widget can clean what it is about to draw in one call.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from rich.console import Group
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Span, Text

from ..errors import escapes, printable_lines

__all__ = ["safe_renderable", "safe_text"]


def safe_text(text: Text, *, keep_lines: bool = False) -> Text:
    """``text`` with every control character escaped as :func:`~tracetui.errors.one_line`
    does (newline and tab kept with ``keep_lines``: Rich breaks lines there itself), its
    spans moved with the characters.  Changed in place (the same object is returned, so
    subclasses and their wrapping rules are kept); a clean text is untouched."""
    plain = text.plain
    found = escapes(plain, keep_lines=keep_lines)
    if not found:
        return text
    starts = [pos for pos, _ in found]
    grown = []  # characters added by the escapes before and at each one
    total = 0
    parts = []
    last = 0
    for pos, esc in found:
        parts.append(plain[last:pos])
        parts.append(esc)
        last = pos + 1
        total += len(esc) - 1
        grown.append(total)
    parts.append(plain[last:])

    def moved(i: int) -> int:
        k = bisect_left(starts, i)  # escapes strictly before position i
        return i + (grown[k - 1] if k else 0)

    spans = [Span(moved(s.start), moved(s.end), s.style) for s in text.spans]
    text.spans = []
    text.plain = "".join(parts)
    text.spans = spans
    return text


def safe_renderable(renderable: Any) -> Any:
    """``renderable`` with :func:`safe_text` (newlines kept) applied to every ``Text`` and
    ``str`` inside it (Group, Table cells, headers and titles, Padding, Panel); returned
    (containers are changed in place, a ``str`` is replaced)."""
    if isinstance(renderable, Text):
        return safe_text(renderable, keep_lines=True)
    if isinstance(renderable, str):
        return printable_lines(renderable)
    if isinstance(renderable, Group):
        renderable._renderables = [safe_renderable(r) for r in renderable.renderables]
    elif isinstance(renderable, Table):
        renderable.title = safe_renderable(renderable.title) if renderable.title is not None else None
        renderable.caption = safe_renderable(renderable.caption) if renderable.caption is not None else None
        for column in renderable.columns:
            column.header = safe_renderable(column.header)
            column.footer = safe_renderable(column.footer)
            column._cells = [safe_renderable(c) for c in column._cells]
    elif isinstance(renderable, (Padding, Panel)):
        renderable.renderable = safe_renderable(renderable.renderable)
        if isinstance(renderable, Panel):
            renderable.title = safe_renderable(renderable.title) if renderable.title is not None else None
            renderable.subtitle = safe_renderable(renderable.subtitle) if renderable.subtitle is not None else None
    return renderable
