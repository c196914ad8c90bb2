"""How a table fits its width: the one rule every table screen follows (Textual-free).

A table gives the NAME the room it needs first.  :func:`fit_table` lays out columns of text
cells in a width:

1. A column whose every value is empty or zero (``""``, ``0``, ``0.000``) is left out, and so
   is a column whose every value equals an earlier column's (``GPU subtree`` when every op is a
   leaf, ``max`` when every count is 1); the sort column is kept.  Judged over every row of the
   table, not the rows on screen, so that scrolling never moves the columns.
2. Number columns keep their widest value whole (a number is never cut); the name column (the
   first text column unless one is marked :attr:`Column.name`) wants ``min(its longest value,
   max(NAME_WANT, 40 % of the width))`` cells, the other text columns ``min(their longest,
   TEXT_WANT)``.  Until they have them: number columns take their short titles (``direct ms``
   for ``GPU direct ms``), the other text columns give up cells down to :data:`TEXT_FLOOR`,
   then the columns marked :attr:`Column.drop` are left out, the lowest ``drop`` first.  Cells
   left over widen the other text columns, then bring back the full titles, then widen the name.
3. What is left out is said (:meth:`TableFit.note`: ``hidden: nested (empty); max µs (no room)``).

Text that does not fit its cells is abbreviated in the MIDDLE, keeping the distinguishing tail
(:func:`cut_name`: ``aten::…_convolution``; a C++ name's template arguments and parameters
first become ``<…>`` and ``(…)``, a ``void`` return type goes: ``at::native::…elementwise_kernel<…>(…)``), and two
different texts of a column are never cut to the same text (:func:`cut_names` shows more of
where they differ: ``…cudnn_conv…``).  This works on the text that reaches the table (a name
the loader already bounded, ``… (+10 MB)``, is cut like any other).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.cells import cell_len

#: the abbreviation mark
ELLIPSIS = "…"
#: cells between two columns
GAP = 2
#: cells before the first column
LEFT = 1
#: the least the name column wants before other columns give up room (or 40 % of the width)
NAME_WANT = 24
#: the narrowest an other text column is made while the name needs room
TEXT_FLOOR = 8
#: what an other text column wants before columns marked ``drop`` stop being left out
TEXT_WANT = 16
#: below this many cells a text is cut at its end (a head and a tail would both be too short)
SMALL = 12
#: the narrowest a name is drawn, whatever the width (the line is then cut at the screen's edge)
NAME_FLOOR = 6
#: header marks of the sorted column: largest first (or A-Z), reversed
SORT_MARKS = ("▼", "▲")

_ZERO = re.compile(r"[-+]?(?:0+(?:\.0*)?|\.0+)(?: ?%)?")
#: cells that say "nothing here"
_NOTHING = frozenset({"", "-", "–", "—"})
_SEPARATORS = ("::", " ", "_", ".", "/", ":", "-", ",", "<", "(")
_ANON = "(anonymous namespace)::"


@dataclass(frozen=True)
class Column:
    """A column of a table: its title, numbers or text, a shorter title for a narrow screen,
    ``drop`` (> 0: may be left out for the name's room, the lowest first; 0: always shown) and
    ``name`` (the column that gets the room first; default: the first text column)."""

    title: str
    numeric: bool = False
    short: str = ""
    drop: int = 0
    name: bool = False


def header_text(title: str, numeric: bool, mark: str = "") -> str:
    """A column's header with the sort mark (``▼ total ms``, ``name ▲``)."""
    if not mark:
        return title
    return f"{mark} {title}" if numeric else f"{title} {mark}"


# ---------------------------------------------------------------------- cutting text
def _head(s: str, cells: int) -> str:
    """The longest prefix of ``s`` at most ``cells`` wide."""
    if cells <= 0:
        return ""
    if s.isascii():
        return s[:cells]
    out, used = [], 0
    for ch in s:
        w = cell_len(ch)
        if used + w > cells:
            break
        out.append(ch)
        used += w
    return "".join(out)


def _tail(s: str, cells: int) -> str:
    """The longest suffix of ``s`` at most ``cells`` wide."""
    if cells <= 0:
        return ""
    if s.isascii():
        return s[-cells:]
    return _head(s[::-1], cells)[::-1]


def collapse_brackets(name: str, groups: str = "<(") -> str:
    """A C++ name with the insides of its outermost ``<…>`` and ``(…)`` groups dropped (only
    ``(…)``: ``groups="("``), ``(anonymous namespace)::`` and a ``void`` return type left out:
    ``at::native::vectorized_elementwise_kernel<…>(…)``.
    The name itself when its brackets do not pair up (``operator<``, ``DtoD (Device -> Device)``)
    or a group follows no name (``<built-in method …>``)."""
    s = name.replace(_ANON, "").removeprefix("void ")  # a kernel's return type says nothing
    out: list[str] = []
    closing: list[str] = []
    inside = 0  # characters inside the outermost group so far
    keep = False  # the outermost group is kept whole
    for ch in s:
        if ch in "<(":
            if not closing:
                if not out or not (out[-1][-1:].isalnum() or out[-1][-1:] in "_>)"):
                    return name  # a group that follows no name (``<built-in method …>``): not C++ brackets
                keep = ch not in groups
                out.append(ch)
                inside = 0
            else:
                inside += 1
                if keep:
                    out.append(ch)
            closing.append(">" if ch == "<" else ")")
        elif ch in ">)":
            if not closing or ch != closing[-1]:
                return name
            closing.pop()
            if closing:
                inside += 1
                if keep:
                    out.append(ch)
            else:
                out.append(ch if keep else (ELLIPSIS if inside else "") + ch)
        elif closing:
            inside += 1
            if keep:
                out.append(ch)
        else:
            out.append(ch)
    return name if closing else "".join(out)


def _split_at(s: str, cells: int) -> int:
    """Characters of the head kept by a middle cut: at most ``cells``, ending after a
    separator (``::``, space, ``_`` ...) when one ends in the second half of that room; none
    when the room is a few characters and no separator ends in it."""
    limit = min(len(s), cells)
    best = -1
    for sep in _SEPARATORS:
        i = s.rfind(sep, 0, limit - len(sep) + 1)
        if i >= 0:
            best = max(best, i + len(sep))
    if best >= (limit + 1) // 2:
        return best
    return 0 if limit < 5 else limit


def _middle(s: str, width: int) -> str:
    """``s`` cut in the middle to ``width`` cells: a head of up to 40 % of them (ending at a
    separator), ``…``, and the tail."""
    room = width - 1
    cells = room * 2 // 5
    head = s[:_split_at(s, cells)]
    if cell_len(head) > cells:  # wide characters: the head by cells
        head = _head(s, cells)
    return head + ELLIPSIS + _tail(s, room - cell_len(head))


def cut_name(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells: itself when it fits; else a C++ name's brackets
    collapsed (:func:`collapse_brackets`) when that fits and fills most of the width; else its
    parameters collapsed, cut in the middle, keeping the tail (``aten::…_convolution``,
    ``cutlass::…bf16_32x32_128x2_tn_align8>``: a template's arguments are all that tells
    ``cutlass::Kernel2<…>`` kernels apart)."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:max(width, 0)]
    short = collapse_brackets(text)
    if cell_len(short) <= width:
        if cell_len(short) * 3 >= width * 2:
            return short
        params = collapse_brackets(text, "(")
        if cell_len(params) <= width:
            return params
        if width >= SMALL:
            return _middle(params, width)
        return short
    if width < SMALL:  # too few cells for a head and a tail: the head
        return _head(short, width - 1) + ELLIPSIS
    return _middle(short, width)


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _differences(group: list[str]) -> dict[str, list[int]]:
    """Per text of ``group``: where it first differs from each other text (the set of common
    prefix lengths, ascending).  In sorted order the common prefix with a text further away
    is the least of the neighbours' between them, so this is O(n) per text."""
    order = sorted(group)
    adjacent = [_common_prefix(a, b) for a, b in zip(order, order[1:])]
    out: dict[str, list[int]] = {}
    for i, t in enumerate(order):
        found: set[int] = set()
        low = len(t)
        for a in reversed(adjacent[:i]):
            low = min(low, a)
            found.add(low)
        low = len(t)
        for a in adjacent[i:]:
            low = min(low, a)
            found.add(low)
        out[t] = sorted(found)
    return out


def _word_start(name: str, p: int) -> int:
    """The start of the word holding character ``p`` (at most 8 characters back)."""
    best = p
    for sep in _SEPARATORS:
        i = name.rfind(sep, max(0, p - 8), p)
        if i >= 0 and i + len(sep) <= p:
            best = i + len(sep) if best == p else max(best, i + len(sep))
    return best


def _render(name: str, head: int, spans: list[list[int]]) -> str:
    parts = [name[:head]]
    at = head
    for a, b in spans:
        if a > at:
            parts.append(ELLIPSIS)
        parts.append(name[a:b])
        at = b
    if at < len(name):
        parts.append(ELLIPSIS)
    return "".join(parts)


def _showing(name: str, positions: list[int], head: int, width: int) -> str:
    """``name`` in ``width`` cells showing each of ``positions`` (where it differs from
    another text): spans from the start of the word holding each, joined by ``…``, after the
    first ``head`` characters; spare cells lengthen the spans."""
    for tight in (False, True):
        spans: list[list[int]] = []
        for p in positions:
            a = p if tight else max(head, _word_start(name, p))
            b = min(len(name), p + 1)
            if b <= a:  # the text ends where the others go on: show its end
                a, b = (max(head, _word_start(name, p)) if not tight else max(head, p - 1)), len(name)
            if spans and a <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], b)
            else:
                spans.append([a, b])
        text = _render(name, head, spans)
        if cell_len(text) <= width:
            break
    else:
        return _head(text, width - 1) + ELLIPSIS
    grown = True
    while grown:  # spare cells: each span a character longer in turn, to the next span or the end
        grown = False
        k = 0
        while k < len(spans):
            span = spans[k]
            limit = spans[k + 1][0] if k + 1 < len(spans) else len(name)
            if span[1] < limit:
                trial = [list(x) for x in spans]
                trial[k][1] += 1
                if k + 1 < len(trial) and trial[k][1] >= trial[k + 1][0]:
                    trial[k][1] = trial[k + 1][1]
                    del trial[k + 1]
                candidate = _render(name, head, trial)
                if cell_len(candidate) <= width:
                    spans, text, grown = trial, candidate, True
            k += 1
    return text


def _distinct(group: list[str], width: int) -> dict[str, str]:
    """The texts of ``group`` (whose plain cuts are equal) cut so that each shows where it
    differs from every other: a common head (``aten::``, when there is room), then the words
    where it differs (``aten::…cudnn_convolution``, ``…elementwise_kernel<…BinaryFunctor<…``)."""
    diffs = _differences(group)
    first = min(min(p) if p else 0 for p in diffs.values())
    head = first if 3 <= first <= (width - 1) * 2 // 5 else 0  # the common head when short: ``aten::``
    return {t: _showing(t, diffs[t], head, width) for t in group}


def cut_names(texts: Sequence[str], width: int) -> list[str]:
    """Each text in at most ``width`` cells (:func:`cut_name`), two different texts never cut
    to the same where the width allows: texts whose cuts meet are cut again together, showing
    where they differ (:func:`_distinct`)."""
    memo: dict[str, str] = {}
    for t in texts:
        if t not in memo:
            memo[t] = cut_name(t, width)
    if width > 2:
        joined: dict[str, set[str]] = {}  # text -> the texts it was cut together with
        for _ in range(4):  # a cut that meets another group's: the two groups are cut again as one
            groups: dict[str, list[str]] = {}
            for t, c in memo.items():
                groups.setdefault(c, []).append(t)
            clashes = [g for g in groups.values() if len(g) > 1]
            if not clashes:
                break
            for group in clashes:
                whole = [t for t in group if memo[t] == t]  # a text shown whole stays whole
                members = set().union(*(joined.get(t, {t}) for t in group)) - set(whole)
                if len(members) < 2 and not whole:
                    continue
                together = sorted(members | set(whole))
                for t, c in _distinct(together, width).items():
                    if t in members:
                        memo[t] = c
                        joined[t] = set(together)
    return [memo[t] for t in texts]


# ---------------------------------------------------------------------- fitting columns
def is_empty_value(text: str) -> bool:
    """Is a cell empty, ``-``, or a written zero (``0``, ``0.000``, ``0.0 %``)?"""
    text = text.strip()
    return text in _NOTHING or bool(_ZERO.fullmatch(text))


@dataclass
class TableFit:
    """Where the columns of a table go in one width: the columns ``shown`` (indices), their
    ``widths`` and ``titles`` (the short one where it was needed), the columns ``hidden``
    with why (``empty``, ``= <title>``, ``no room``), and the text columns' cells as drawn."""

    shown: list[int]
    widths: list[int]
    titles: list[str]
    hidden: list[tuple[int, str]] = field(default_factory=list)
    drawn: dict[int, list[str]] = field(default_factory=dict)

    def note(self, columns: Sequence[Column]) -> str:
        """``hidden: nested (empty); GPU subtree ms (= GPU direct ms); max µs, mean µs (no room)``;
        "" when none."""
        if not self.hidden:
            return ""
        by_why: dict[str, list[str]] = {}
        for c, why in self.hidden:
            by_why.setdefault(why, []).append(columns[c].title)
        return "hidden: " + "; ".join(f"{', '.join(titles)} ({why})" for why, titles in by_why.items())

    def cell(self, row: int, column: int, text: str) -> str:
        """The text drawn for ``row``'s cell of ``column`` (a text column's cut text)."""
        drawn = self.drawn.get(column)
        return drawn[row] if drawn is not None else text


class TableLayout:
    """A table's columns and cells, measured once; :meth:`fit` lays them out in a width
    (module docstring).  ``sort_column``: never hidden; ``sortable``: titles keep room
    for a sort mark (the column does not move when the sort does)."""

    def __init__(self, columns: Sequence[Column], cells: Sequence[Sequence[str]], *,
                 sort_column: int | None = None, sortable: bool = False) -> None:
        self.columns = list(columns)
        self.cells = cells
        self.sort_column = sort_column
        self.mark = 2 if sortable else 0
        n = len(self.columns)
        values = [[row[c] if c < len(row) else "" for row in cells] for c in range(n)]
        self.longest = [max((cell_len(v) for v in vals), default=0) for vals in values]
        names = [c for c in range(n) if self.columns[c].name]
        texts = [c for c in range(n) if not self.columns[c].numeric]
        self.name = names[0] if names else (texts[0] if texts else None)
        self.hidden: list[tuple[int, str]] = []
        if cells:
            self._hide_uninformative(values)
        self._fits: dict[int, TableFit] = {}

    def _hide_uninformative(self, values: list[list[str]]) -> None:
        keep = {self.sort_column, self.name}
        seen: dict[tuple[str, ...], int] = {}
        for c, vals in enumerate(values):
            if c in keep:
                seen.setdefault(tuple(vals), c)
                continue
            if all(is_empty_value(v) for v in vals):
                self.hidden.append((c, "empty"))
                continue
            twin = seen.get(tuple(vals))
            if twin is not None and self.columns[twin].numeric == self.columns[c].numeric:
                self.hidden.append((c, f"= {self.columns[twin].title}"))
                continue
            seen[tuple(vals)] = c

    def _title(self, c: int, short: bool) -> str:
        col = self.columns[c]
        return col.short if short and col.short else col.title

    def _natural(self, c: int, short: bool) -> int:
        return max(cell_len(self._title(c, short)) + self.mark, self.longest[c])

    def fit(self, width: int) -> TableFit:
        """The layout in ``width`` cells (cached per width)."""
        got = self._fits.get(width)
        if got is None:
            got = self._fits[width] = self._fit(width)
        return got

    def _fit(self, width: int) -> TableFit:
        hidden = list(self.hidden)
        shown = [c for c in range(len(self.columns)) if c not in {h for h, _ in hidden}]
        name = self.name
        others = [c for c in shown if c != name and not self.columns[c].numeric]
        short: set[int] = set()
        narrow = False
        want = 0 if name is None else min(self._natural(name, False), max(NAME_WANT, width * 2 // 5))

        def widths() -> dict[int, int]:
            w = {c: self._natural(c, c in short) for c in shown if self.columns[c].numeric}
            for c in others:
                if c in shown:
                    w[c] = min(self._natural(c, False), TEXT_FLOOR) if narrow else self._natural(c, False)
            if name is not None:
                w[name] = width - LEFT - GAP * (len(shown) - 1) - sum(w.values())
            return w

        w = widths()
        if name is not None:
            droppable = sorted((c for c in shown if self.columns[c].drop and c not in (name, self.sort_column)),
                               key=lambda c: (self.columns[c].drop, c))
            steps = ["short", "narrow", *droppable]

            def enough() -> bool:  # the name has its cells, and the other texts theirs (once given back)
                owed = sum(max(0, min(self._natural(c, False), TEXT_WANT) - w[c]) for c in others if c in shown)
                return w[name] - owed >= want

            for step in steps:
                if enough():
                    break
                if step == "short":
                    short = {c for c in shown if self.columns[c].numeric and self.columns[c].short}
                elif step == "narrow":
                    narrow = True
                else:
                    shown.remove(step)  # type: ignore[arg-type]
                    hidden.append((step, "no room"))  # type: ignore[arg-type]
                w = widths()
            spare = w[name] - want
            if spare > 0:  # the other text columns back to their width, then the full titles
                waiting = sorted((c for c in others if c in shown), key=lambda c: self._natural(c, False))
                for i, c in enumerate(waiting):  # narrowest first: what one does not need goes to the next
                    more = max(0, min(spare // (len(waiting) - i), self._natural(c, False) - w[c]))
                    w[c] += more
                    spare -= more
                for c in sorted(c for c in short if c in shown):
                    more = self._natural(c, False) - w[c]
                    if more <= spare:
                        short.discard(c)
                        w[c] += more
                        spare -= more
                w[name] = want + spare
            w[name] = max(min(w[name], self._natural(name, False)), min(NAME_FLOOR, self._natural(name, False)))
        fit = TableFit(shown, [w[c] for c in shown], [self._title(c, c in short) for c in shown], hidden)
        for c, cw in zip(fit.shown, fit.widths):
            if not self.columns[c].numeric and self.longest[c] > cw:
                fit.drawn[c] = cut_names([row[c] if c < len(row) else "" for row in self.cells], cw)
        return fit


def fit_table(columns: Sequence[Column], cells: Sequence[Sequence[str]], width: int, *,
              sort_column: int | None = None, sortable: bool = False) -> TableFit:
    """The layout of ``cells`` under ``columns`` in ``width`` cells (:class:`TableLayout`)."""
    return TableLayout(columns, cells, sort_column=sort_column, sortable=sortable).fit(width)
