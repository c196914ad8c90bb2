"""Rich tables that fit a given width without dropping a column or cutting a number.

Rich, given a table wider than the console, shrinks wrappable columns and then, as a last
resort, every column evenly: numbers lose digits and the rightmost columns vanish.  Here the
column widths (in terminal cells) are worked out before Rich sees the table:

* a number column is exactly as wide as its widest number, or its header when that fits;
  a header too long for the width wraps between its words and after hyphens
  (``kernel-to-`` / ``kernel``), a number never wraps;
* the name columns share what is left (at least their header's longest word, or only
  :data:`MIN_NAME` cells when the numbers leave no more room, the header then folding too)
  and fold names that do not fit onto further lines;
* a name longer than :data:`MAX_NAME_LINES` lines of its column is shortened in the middle
  (``head…tail``) so one templated kernel name cannot fill the screen;
* a table too wide even then (a very narrow terminal) keeps its width, to be printed with
  ``crop=False``: the terminal wraps its lines, no digit is lost;
* ``width=None`` (piped output) gives every column its natural width, name columns at most
  ``max_name`` cells, and every name in full (folded, never shortened; up to the bound
  below): the table is as wide as its content, no wider.

Rows are given as strings (numbers) or :class:`rich.text.Text` (names from the trace, never
parsed as markup).  A cell longer than :data:`tracetui.names.NAME_WORK_CHARS` characters is
cut there first and says so (``… (+10 MB)``, :func:`bounded`): a 10 MB name costs what 4 KB
cost (it was minutes of Rich wrapping).  Lines carry no trailing padding (titles are not
justified).  Every cell
and the title are made safe for a terminal first (control characters escaped visibly,
:func:`tracetui.errors.one_line`), so a name from a file is measured as it is printed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import one_line
from ..io.terminal import safe_text
from ..names import NAME_WORK_CHARS, cut_mark, is_cut, shown

#: fewest cells a name column is narrowed to (its content's width when that is less)
MIN_NAME = 8
#: cells between two columns: padding, rule, padding (``show_edge=False, pad_edge=False``)
GAP = 3
#: lines a name may fold onto in a table fitted to a width
MAX_NAME_LINES = 8

Cell = str | Text


@dataclass(frozen=True)
class Col:
    """One column: ``header`` and whether it holds numbers (right-justified, never wrapped)."""

    header: str
    numeric: bool = True


def _len(c: Cell) -> int:
    return cell_len(c.plain if isinstance(c, Text) else c)


def _longest_word(s: str) -> int:
    return max((cell_len(w) for w in s.split()), default=0)


def _pieces(header: str) -> list[tuple[str, str]]:
    """``header`` as (glue, piece): pieces end at spaces and after hyphens; glue is what joins
    a piece to the one before it on the same line."""
    out = []
    for word in header.split():
        for k, piece in enumerate(p for p in re.split(r"(?<=-)", word) if p):
            out.append(("" if k else " ", piece))
    return out


def _longest_piece(header: str) -> int:
    return max((cell_len(p) for _, p in _pieces(header)), default=0)


def _header_lines(header: str, width: int) -> int:
    return wrap_header(header, width).count("\n") + 1


def wrap_header(header: str, width: int) -> str:
    """``header`` broken into lines of at most ``width`` cells at spaces and after hyphens
    (a piece wider than ``width`` gets a line of its own)."""
    lines: list[str] = []
    cur = ""
    for glue, piece in _pieces(header):
        if cur and cell_len(cur + glue + piece) > width:
            lines.append(cur)
            cur = piece
        else:
            cur = cur + glue + piece if cur else piece
    lines.append(cur)
    return "\n".join(lines)


def _share(want: list[int], floor: list[int], room: int) -> list[int]:
    """Split ``room`` cells among columns wanting ``want`` (at least ``floor`` each): the
    narrow ones get all they want, the rest split what remains evenly."""
    out = list(floor)
    left = room - sum(out)
    open_ = [i for i in range(len(want)) if want[i] > out[i]]
    while left > 0 and open_:
        each = max(left // len(open_), 1)
        for i in list(open_):
            add = min(each, want[i] - out[i], left)
            out[i] += add
            left -= add
            if out[i] >= want[i]:
                open_.remove(i)
            if left <= 0:
                break
    return out


def column_widths(cols: Sequence[Col], rows: Sequence[Sequence[Cell]], width: int | None,
                  max_name: int | None = None) -> list[int]:
    """Content width (cells, padding excluded) of each column so the table fits ``width``
    cells (None: no limit, name columns at most ``max_name``).  Number columns keep their
    widest number even when that overflows ``width``; only name columns and number headers
    give way."""
    natural = [max([cell_len(c.header)] + [_len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    if width is None:
        return [w if c.numeric or max_name is None else min(w, max(max_name, cell_len(c.header)))
                for c, w in zip(cols, natural)]
    room = width - GAP * (len(cols) - 1)
    numbers = [max([_longest_piece(c.header)] + [_len(r[i]) for r in rows]) if c.numeric else 0
               for i, c in enumerate(cols)]
    names = [i for i, c in enumerate(cols) if not c.numeric]
    name_floor = [min(natural[i], max(MIN_NAME, _longest_word(cols[i].header))) for i in names]
    if sum(numbers) + sum(name_floor) > room:  # the name headers fold too
        name_floor = [min(natural[i], MIN_NAME) for i in names]
    name_room = room - sum(natural[i] for i, c in enumerate(cols) if c.numeric)
    if name_room < sum(name_floor):
        # number headers wrap to make room; spare cells go where they save a header line
        # most cheaply
        widths = list(numbers)
        slack = room - sum(numbers) - sum(name_floor)
        while slack > 0:
            offers = []
            for i, c in enumerate(cols):
                if c.numeric and widths[i] < natural[i]:
                    lines = _header_lines(c.header, widths[i])
                    w = next(w for w in range(widths[i] + 1, natural[i] + 1) if _header_lines(c.header, w) < lines)
                    offers.append((w - widths[i], i))
            cost, i = min(offers, default=(slack + 1, -1))
            if cost > slack:
                break
            widths[i] += cost
            slack -= cost
        name_room = room - sum(widths)
    else:
        widths = [natural[i] if c.numeric else 0 for i, c in enumerate(cols)]
    for i, w in zip(names, _share([natural[i] for i in names], name_floor, max(name_room, sum(name_floor)))):
        widths[i] = w
    return widths


def shorten(cell: Cell, limit: int) -> Cell:
    """``cell`` cut to ``limit`` characters by replacing its middle with "…" (two thirds of
    what is kept come from the start); unchanged when it fits."""
    n = len(cell.plain if isinstance(cell, Text) else cell)
    if n <= limit or limit < 3:
        return cell
    text = cell.copy() if isinstance(cell, Text) else Text(cell)
    head = (limit - 1) * 2 // 3
    tail = limit - 1 - head
    out = text[:head]
    out.append("…")
    out.append_text(text[n - tail:])
    return out


def bounded(cell: Cell) -> Cell:
    """``cell`` cut at :data:`~tracetui.names.NAME_WORK_CHARS` characters with its
    :func:`~tracetui.names.cut_mark` (styles of the kept part kept); unchanged when shorter."""
    plain = cell.plain if isinstance(cell, Text) else cell
    if not is_cut(plain):
        return cell
    if not isinstance(cell, Text):
        return shown(cell)
    out = cell[:NAME_WORK_CHARS]
    out.append(cut_mark(plain))
    return out


def fitted_table(title: str, cols: Sequence[Col], rows: Sequence[Sequence[Cell]], width: int | None,
                 max_name: int | None = None) -> Table:
    """A Rich table of ``rows`` under ``title`` whose columns fit ``width`` cells (see the
    module docstring); ``width=None`` sizes it to its content (names at most ``max_name``)."""
    rows = [[safe_text(v) if isinstance(v, Text) else one_line(v) for v in map(bounded, r)] for r in rows]
    title = one_line(title)
    widths = column_widths(cols, rows, width, max_name)
    if width is not None:
        rows = [[shorten(v, MAX_NAME_LINES * w) if not c.numeric and _len(v) > w else v
                 for v, c, w in zip(r, cols, widths)] for r in rows]
    needed = sum(widths) + GAP * (len(cols) - 1)
    # too narrow even for the numbers: the table keeps its width (print it with crop=False)
    # rather than let Rich cut digits
    t = Table(title=Text(title, style="italic"), title_justify="default", show_edge=False, pad_edge=False,
              width=needed if width is not None and needed > width else None)
    for c, w in zip(cols, widths):
        if c.numeric:
            header = c.header if cell_len(c.header) <= w else wrap_header(c.header, w)
            t.add_column(Text(header), justify="right", width=w, overflow="fold")
        else:
            t.add_column(Text(c.header), width=w, overflow="fold")
    for r in rows:
        t.add_row(*r)
    return t


#: the console width of piped output: as wide as the content, so no line (a path, a name with
#: its escapes) is ever folded in the middle of a word where a pipe or a file reads it
UNLIMITED = 1_000_000


class StdoutConsole(Console):
    """A console on the command's output whose reader went away (``| head`` read what it wanted)
    ends the command quietly, with the error boundary's status for it (0, ``cli/entry.py``):
    rich's own answer sends the rest to /dev/null and exits with 1, which ``set -o pipefail``
    reads as the command failing."""

    def on_broken_pipe(self) -> None:
        try:
            super().on_broken_pipe()  # stdout to /dev/null: nothing more is written, no error at exit
        except SystemExit:
            raise BrokenPipeError from None


def stdout_console() -> tuple[Console, int | None]:
    """A console on stdout and the width tables must fit: ``None`` when piped or redirected (as
    wide as the content, no line folded); a set ``$COLUMNS`` counts as a terminal of that width."""
    import os
    import sys

    if not sys.stdout.isatty() and not os.environ.get("COLUMNS"):
        return StdoutConsole(width=UNLIMITED), None
    con = StdoutConsole()
    return con, con.width

