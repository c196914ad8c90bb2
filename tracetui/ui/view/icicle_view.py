"""The icicle of a :class:`~tracetui.analysis.stacks.CallTree`, without Textual: what
:class:`~tracetui.ui.stacks.icicle_widget.IcicleWidget` draws and the keys move.

The **focus** node fills the top row; each row below holds the children of the row above,
each as wide as its share of its parent's total (largest first, from the left), so a column
of cells reads as a call stack and a wide cell is where the time went.  Positions are
rounded at both ends, so cells never overlap and a cell narrower than one column is not
drawn (nor its children): what is drawn is what matters at this zoom.  Rows below the
screen's last are not drawn; moving the cursor below it zooms in (the cursor's ancestor
becomes the focus) so the cursor stays on screen.

Keys (the screen maps them): ``←``/``→`` the previous/next cell of the cursor's row, ``↑``
the parent, ``↓`` the largest child drawn, Enter zooms into the cursor (it becomes the
focus), Backspace zooms out one level, ``/`` searches names (matches tinted; ``n``/``N`` go to
the next/previous match by total, zooming out when one is outside the focus).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rich.text import Text

from ... import units
from ...analysis.search import compile_query, matching_name_ids
from ...analysis.stacks import CallTree
from ...errors import one_line
from ...follow.cycle import kernel_short


@dataclass(frozen=True)
class Cell:
    """A drawn cell: columns ``x0`` (inclusive) to ``x1`` (exclusive) of a row, tree ``node``."""

    x0: int
    x1: int
    node: int


def value_text(ns: float) -> str:
    """A value of the tree (ns) as the screens write it (:func:`tracetui.units.duration_text`)."""
    return units.duration_text(float(ns) / 1e3)


def cell_label(name: str, width: int) -> str:
    """A cell's text for ``width`` columns: the name made one line, a kernel's without its
    ``void`` and parameter list when it does not fit, cut with ``…``; '' below 2 columns."""
    if width < 2:
        return ""
    text = one_line(name)
    if len(text) > width:
        text = one_line(kernel_short(name))
    return text if len(text) <= width else text[: width - 1] + "…"


class IcicleView:
    """Focus, cursor and search over ``tree`` (module docstring)."""

    def __init__(self, tree: CallTree) -> None:
        self.tree = tree
        self.focus = 0
        self.cursor = 0
        self.query: str | None = None
        self.matches = np.zeros(0, dtype=np.int64)  #: matching nodes, largest total first
        self.match_mask = np.zeros(tree.n, dtype=bool)
        self._layout: list[list[Cell]] = []
        self._layout_for: tuple[int, int, int] | None = None

    # ------------------------------------------------------------------ layout
    def layout(self, width: int, height: int) -> list[list[Cell]]:
        """The cells of each of ``height`` rows (the focus on row 0) over ``width`` columns."""
        key = (width, height, self.focus)
        if self._layout_for == key:
            return self._layout
        t = self.tree
        rows: list[list[Cell]] = []
        level = [(self.focus, 0.0, float(width))] if width > 0 else []
        for _ in range(height):
            cells = []
            nxt: list[tuple[int, float, float]] = []
            for c, a, b in level:
                x0, x1 = int(round(a)), int(round(b))
                if x1 <= x0:
                    continue
                cells.append(Cell(x0, x1, c))
                kids = t.children(c)
                tot = float(t.total[c])
                if not kids.size or tot <= 0:
                    continue
                edges = a + np.concatenate(([0.0], np.cumsum(t.total[kids], dtype=np.float64))) * ((b - a) / tot)
                r = np.rint(edges)
                for k in np.flatnonzero(r[1:] > r[:-1]).tolist():
                    nxt.append((int(kids[k]), float(edges[k]), float(edges[k + 1])))
            rows.append(cells)
            level = nxt
        self._layout, self._layout_for = rows, key
        return rows

    def position(self, width: int, height: int, node: int | None = None) -> tuple[int, int] | None:
        """(row, index in the row) of ``node`` (default the cursor) in the layout, None when not drawn."""
        node = self.cursor if node is None else node
        r = int(self.tree.depth[node] - self.tree.depth[self.focus])
        rows = self.layout(width, height)
        if not 0 <= r < len(rows):
            return None
        for i, cell in enumerate(rows[r]):
            if cell.node == node:
                return r, i
        return None

    # ------------------------------------------------------------------ moves
    def set_cursor(self, node: int, width: int, height: int) -> None:
        """Put the cursor on ``node``, zooming out (to the root) when it is not under the
        focus and in when it is below the last row or too narrow to be drawn."""
        t = self.tree
        if not t.is_under(node, self.focus):
            self.focus = 0
        self.cursor = int(node)
        if self.position(width, height) is None:
            path = t.path(node)
            # the deepest ancestor from which the node is drawn
            for a in path:
                if t.depth[a] < t.depth[self.focus]:
                    continue
                self.focus = a
                if self.position(width, height) is not None:
                    break

    def move(self, step: int, width: int, height: int) -> None:
        """``←``/``→``: the cell ``step`` cells along the cursor's row."""
        pos = self.position(width, height)
        if pos is None:
            self.set_cursor(self.cursor, width, height)
            pos = self.position(width, height)
            if pos is None:
                return
        r, i = pos
        row = self.layout(width, height)[r]
        self.cursor = row[max(0, min(len(row) - 1, i + step))].node

    def up(self, width: int, height: int) -> None:
        p = int(self.tree.parent[self.cursor])
        if p >= 0:
            self.set_cursor(p, width, height)

    def down(self, width: int, height: int) -> None:
        """The cursor's largest child that is drawn at some zoom (a child of total 0 is not)."""
        kids = self.tree.children(self.cursor)
        kids = kids[self.tree.total[kids] > 0] if kids.size else kids
        if kids.size:
            self.set_cursor(int(kids[0]), width, height)

    def zoom_in(self) -> None:
        self.focus = self.cursor

    def zoom_out(self) -> bool:
        """Backspace: the focus's parent becomes the focus (False at the root)."""
        p = int(self.tree.parent[self.focus])
        if p < 0:
            return False
        self.focus = p
        return True

    # ------------------------------------------------------------------ search
    def search(self, query: str) -> int:
        """Match node names against ``query`` (the browser's query language); the matches,
        largest total first.  Raises ValueError for a bad query."""
        pred = compile_query(query)
        t = self.tree
        labels = np.unique(t.label)
        ok = np.zeros(labels.size, dtype=bool)
        hit = matching_name_ids([t.label_text(int(x)) for x in labels.tolist()], pred)
        ok[hit] = True
        self.match_mask = np.isin(t.label, labels[ok])
        nodes = np.flatnonzero(self.match_mask)
        self.matches = nodes[np.argsort(-t.total[nodes], kind="stable")]
        self.query = query
        return int(self.matches.size)

    def clear_search(self) -> None:
        self.query = None
        self.matches = np.zeros(0, dtype=np.int64)
        self.match_mask = np.zeros(self.tree.n, dtype=bool)

    def next_match(self, step: int, width: int, height: int) -> int | None:
        """Move to the next (``step`` 1) or previous (-1) match after the cursor's; its index."""
        if not self.matches.size:
            return None
        at = np.flatnonzero(self.matches == self.cursor)
        i = (int(at[0]) + step) % self.matches.size if at.size else (0 if step > 0 else self.matches.size - 1)
        self.set_cursor(int(self.matches[i]), width, height)
        return i

    # ------------------------------------------------------------------ words
    def breadcrumb(self, width: int) -> str:
        """What is above the focus (its callers from the root, cut from the left to ``width``
        cells), or at the root what the keys do."""
        path = self.tree.path(self.focus)[:-1]
        if not path:
            return "Enter: descend into the cursor's cell   Backspace: climb   ↑↓←→: move"
        text = "in " + " › ".join(one_line(self.tree.name(c)) for c in path)
        return text if len(text) <= width else "…" + text[len(text) - width + 1:]

    def describe(self, node: int | None = None) -> Text:
        """The cursor's line: its time and share of all (and of the zoom), self time and calls
        first (they fit at 80 columns), then its name."""
        t = self.tree
        c = self.cursor if node is None else node
        root = float(t.total[0]) or 1.0
        focus = float(t.total[self.focus]) or 1.0
        out = Text()
        out.append(value_text(t.total[c]), style="bold")
        out.append(f" {units.pct_text(100.0 * float(t.total[c]) / root)} of all", style="dim")
        if self.focus != 0:
            out.append(f", {units.pct_text(100.0 * float(t.total[c]) / focus)} of the zoom", style="dim")
        out.append(f"  self {value_text(t.self_ns[c])}  {units.plural(int(t.calls[c]), 'call')}  ")
        out.append(one_line(t.name(c)), style="bold")
        return out
