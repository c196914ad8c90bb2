"""The row model behind :class:`~tracetui.ui.tree.virtual_tree.VirtualTree`, free of Textual.

A tree is read through :class:`~.row_source.RowSource` (integer node ids chosen by the source,
usually indices into the model's arrays).  :class:`VisibleRows` keeps only:

* ``expanded``: the set of expanded node ids;
* ``nodes``/``depths``: numpy arrays listing the visible rows in display order
  (row ``i`` shows node ``nodes[i]`` at depth ``depths[i]``; roots are depth 0);
* ``cursor``: the row index of the cursor.

Expanding a node inserts the visible rows of its subtree right below its row (one
``np.concatenate``); collapsing deletes the contiguous run of deeper rows below it.
A node with 100k children toggles in milliseconds; nothing is built per node.  It
also lays out a row as rich ``Text`` (guides, fold marker, label, metric columns).
The widget owns one ``VisibleRows`` and adds keys, scrolling, messages and strips.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

from ...errors import one_line
from ...io.terminal import safe_text
from .label_short import keep_cut_mark
from .row_source import RowSource

MIN_LABEL_CELLS = 24
"""The name column (guides + marker + label) keeps at least this many cells; metric
columns are dropped from the right before it gets narrower."""
MIN_TEXT_CELLS = 10
"""Indentation guides are compressed before the label text gets fewer cells than this."""
MAX_INDENT_FRACTION = 0.4
"""Indentation guides never take more than this fraction of the name column; deeper
rows show their depth as a ``31›`` tag followed by the innermost guides."""

NO_NODES = np.empty(0, dtype=np.int64)
NO_DEPTHS = np.empty(0, dtype=np.int32)


class RowStyles(NamedTuple):
    """Rich styles of one repaint: whole rows (``base``, ``cursor``, ``header``) and
    the parts drawn over them (``guides``, ``marker``)."""

    base: Style
    cursor: Style
    header: Style
    guides: Style
    marker: Style


class Glyphs(NamedTuple):
    """Strings drawn before a row's label (each two cells wide, ``depth_sep`` one)."""

    pipe: str
    tee: str
    last: str
    blank: str
    expanded: str
    collapsed: str
    leaf: str
    root_leaf: str
    depth_sep: str


UNICODE_GLYPHS = Glyphs("│ ", "├─", "└─", "  ", "▾ ", "▸ ", "─ ", "  ", "›")
ASCII_GLYPHS = Glyphs("| ", "|-", "`-", "  ", "- ", "+ ", "  ", "  ", ">")


def breadth_first(root: int, nodes: np.ndarray, below: np.ndarray, max_rows: int,
                  marked: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``root`` expanded, then its descendants breadth first (level by level, each level in
    display order) while the rows this adds stay within ``max_rows``, as
    :meth:`VisibleRows.subtree_plan` does node by node; nodes already expanded (``marked``)
    stay expanded.  From every row under ``root`` in display order (``nodes`` and their depth
    ``below`` it, 1 for its children): the rows shown, their depths, and the nodes newly
    expanded.  Vectorised, one numpy step per depth level: a row's parent is the last row
    above it one level up; the new nodes are a prefix of the breadth-first order, cut where
    the summed child counts pass ``max_rows``; a row shows when its parent is expanded and shown."""
    n = nodes.size
    depth = below.astype(np.int16) if n and int(below.max()) < 2 ** 15 else below
    order = np.argsort(depth, kind="stable")  # breadth first (a radix sort of small ints)
    levels = np.split(order, np.flatnonzero(np.diff(depth[order])) + 1) if n else []
    up = np.full(n, -1, dtype=np.int64)  # the row of each row's parent (-1: root)
    for above, level in zip(levels, levels[1:]):
        up[level] = above[np.searchsorted(above, level) - 1]
    n_kids = np.bincount(up + 1, minlength=n + 1)  # [0]: root's
    bfs = np.concatenate(([-1], order))
    bfs = bfs[n_kids[bfs + 1] > 0]
    cut = max(1, int(np.searchsorted(np.cumsum(n_kids[bfs + 1]), max_rows, side="right")))  # root always
    new = bfs[:cut]
    new_nodes = np.concatenate(([root], nodes[new[1:]]))
    if cut == bfs.size and not marked.size:  # everything below is expanded: every row shows
        return nodes, below, new_nodes
    opened = np.zeros(n + 1, dtype=bool)
    opened[new + 1] = True
    if marked.size:
        opened[1:] |= np.isin(nodes, marked)
    shown = np.ones(n + 1, dtype=bool)  # [0]: root
    for level in levels:
        parent = up[level] + 1
        shown[level + 1] = opened[parent] & shown[parent]
    return nodes[shown[1:]], below[shown[1:]], new_nodes


def scan_down(depths: np.ndarray, start: int, max_depth: int) -> int:
    """First row ``>= start`` whose depth is ``<= max_depth`` (``len(depths)`` if none).

    Searches in growing chunks so that a small subtree costs little even when
    millions of rows follow it.
    """
    n = len(depths)
    pos, chunk = start, 256
    while pos < n:
        stop = min(n, pos + chunk)
        hits = depths[pos:stop] <= max_depth
        i = int(hits.argmax())
        if hits[i]:
            return pos + i
        pos, chunk = stop, chunk * 4
    return n


def scan_up(depths: np.ndarray, start: int, max_depth: int) -> int:
    """Last row ``<= start`` whose depth is ``<= max_depth`` (-1 if none)."""
    pos, chunk = start + 1, 256
    while pos > 0:
        lo = max(0, pos - chunk)
        hits = depths[lo:pos][::-1] <= max_depth
        i = int(hits.argmax())
        if hits[i]:
            return pos - 1 - i
        pos, chunk = lo, chunk * 4
    return -1


class VisibleRows:
    """The visible rows of a :class:`RowSource`, which nodes are expanded, and the cursor row.

    Methods that change rows keep the cursor on its node, or on the row above a removed
    run that held it; they never post messages or scroll (the widget does that).
    ``nodes`` and ``depths`` are replaced, never modified in place, on every change.
    """

    def __init__(self, source: RowSource | None = None, *, glyphs: Glyphs = UNICODE_GLYPHS) -> None:
        self.glyphs = glyphs
        self.source: RowSource | None = None
        self.expanded: set[int] = set()
        self._expanded_sorted: np.ndarray | None = None
        self.nodes = NO_NODES
        self.depths = NO_DEPTHS
        self.cursor = 0
        self._last_child_of: dict[int, int] = {}
        self._layout: tuple[int, int, list[tuple[int, int]]] | None = None
        if source is not None:
            self.reset(source)

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def cursor_node(self) -> int | None:
        """The node on the cursor row, or None when there are no rows."""
        if not len(self.nodes):
            return None
        return int(self.nodes[self.cursor])

    # ------------------------------------------------------------ whole rebuilds
    def reset(self, source: RowSource) -> None:
        """Show ``source``: only its roots, nothing expanded, cursor on row 0."""
        self.source = source
        self.expanded.clear()
        self._expanded_sorted = None
        self._last_child_of.clear()
        self._layout = None
        self._show_roots_only()
        self.cursor = 0

    def rebuild(self) -> None:
        """Re-read the source keeping the expanded set and the cursor's node (or row,
        clamped, when that node is gone).  Costs O(visible rows)."""
        if self.source is None:
            return
        previous = self.cursor_node
        self._last_child_of.clear()
        self._layout = None
        roots = np.asarray(self.source.root_nodes(), dtype=np.int64)
        self.nodes, self.depths = self.build_block(roots, 0)
        row = self.find_row(previous) if previous is not None else -1
        self.cursor = row if row >= 0 else min(self.cursor, max(0, len(self.nodes) - 1))

    def collapse_all(self) -> None:
        """Collapse every node; the cursor moves to the root of the node it was on."""
        if self.source is None:
            return
        root = self.cursor_node
        if root is not None:
            while (parent := self.source.parent_of(root)) >= 0:
                root = parent
        self.expanded.clear()
        self._expanded_sorted = None
        self._show_roots_only()
        row = self.find_row(root) if root is not None else -1
        self.cursor = max(0, row)

    def _show_roots_only(self) -> None:
        assert self.source is not None
        self.nodes = np.asarray(self.source.root_nodes(), dtype=np.int64).copy()
        self.depths = np.zeros(len(self.nodes), dtype=np.int32)

    # ------------------------------------------------------------------ queries
    def children(self, node: int) -> np.ndarray:
        assert self.source is not None
        return np.asarray(self.source.child_nodes(node), dtype=np.int64)

    def has_children(self, node: int) -> bool:
        return self.source is not None and len(self.source.child_nodes(node)) > 0

    def ancestors(self, node: int) -> list[int]:
        """Parents of ``node`` via ``parent_of``, nearest first (empty for a root)."""
        chain: list[int] = []
        if self.source is None:
            return chain
        parent = self.source.parent_of(node)
        while parent >= 0:
            chain.append(parent)
            parent = self.source.parent_of(parent)
        return chain

    def find_row(self, node: int, lo: int = 0, hi: int | None = None) -> int:
        """The row in ``[lo, hi)`` showing ``node``, or -1 (the cursor row is tried first)."""
        if len(self.nodes) and lo <= self.cursor < (hi if hi is not None else len(self.nodes)):
            if self.nodes[self.cursor] == node:
                return self.cursor
        hits = np.flatnonzero(self.nodes[lo:hi] == node)
        return lo + int(hits[0]) if hits.size else -1

    def subtree_end(self, row: int) -> int:
        """One past the last row of the visible subtree under ``row``."""
        return scan_down(self.depths, row + 1, int(self.depths[row]))

    def parent_row(self, row: int) -> int:
        """The row of ``row``'s parent, or -1 for a root (or no rows)."""
        if not len(self.nodes) or self.depths[row] == 0:
            return -1
        return scan_up(self.depths, row - 1, int(self.depths[row]) - 1)

    def sibling_row(self, row: int, direction: int) -> int:
        """The row of the next (``direction`` > 0) or previous visible sibling, or -1."""
        if not len(self.nodes):
            return -1
        depth = int(self.depths[row])
        if direction > 0:
            found = scan_down(self.depths, row + 1, depth)
            return found if found < len(self.nodes) and self.depths[found] == depth else -1
        found = scan_up(self.depths, row - 1, depth)
        return found if found >= 0 and self.depths[found] == depth else -1

    def longest_child(self, node: int) -> int | None:
        """The child of ``node`` with the largest weight (first on ties), or None."""
        assert self.source is not None
        kids = self.children(node)
        if not kids.size:
            return None
        fast = getattr(self.source, "child_weights", None)
        if fast is not None:
            weights = np.asarray(fast(node), dtype=np.float64)
        else:
            weights = np.fromiter((self.source.node_weight(int(k)) for k in kids), np.float64, kids.size)
        return int(kids[int(np.argmax(weights))])

    def subtree_plan(self, node: int, max_nodes: int) -> list[int]:
        """``node`` then its descendants breadth-first, as long as the rows expanding them
        adds stay within ``max_nodes`` (empty if ``node`` has no children)."""
        assert self.source is not None
        child_nodes = self.source.child_nodes
        first = child_nodes(node)
        if not len(first):
            return []
        to_expand: list[int] = [node]
        total = len(first)
        frontier = first.tolist() if isinstance(first, np.ndarray) else list(map(int, first))
        while frontier and total < max_nodes:
            next_frontier: list[int] = []
            for parent in frontier:
                kids = child_nodes(parent)
                count = len(kids)
                if not count:
                    continue
                if total + count > max_nodes:
                    frontier = []
                    break
                total += count
                to_expand.append(parent)
                next_frontier.extend(kids.tolist() if isinstance(kids, np.ndarray) else map(int, kids))
            else:
                frontier = next_frontier
        return to_expand

    # ------------------------------------------------------------------ edits
    def mark_expanded(self, *nodes: int) -> None:
        """Record ``nodes`` as expanded without touching the rows (e.g. not visible)."""
        self.expanded.update(nodes)
        self._expanded_sorted = None

    def unmark_expanded(self, node: int) -> None:
        """Record ``node`` as collapsed without touching the rows."""
        self.expanded.discard(node)
        self._expanded_sorted = None

    def expand_at(self, row: int) -> bool:
        """Expand the node on ``row``, inserting its visible subtree.  True if rows changed."""
        node = int(self.nodes[row])
        self.mark_expanded(node)
        nodes, depths = self.build_block(self.children(node), int(self.depths[row]) + 1)
        return self.splice(row + 1, row + 1, nodes, depths)

    def expand_all_at(self, row: int, nodes: np.ndarray, below: np.ndarray, max_rows: int) -> bool:
        """Expand the node on ``row`` and its descendants breadth first within ``max_rows``
        rows (:func:`breadth_first`) at once, from every row under it as the source's
        ``subtree_rows`` gives them (nodes expanded before stay expanded).  True if rows changed."""
        marked = np.fromiter(self.expanded, dtype=np.int64, count=len(self.expanded))
        shown, depth, expanded = breadth_first(int(self.nodes[row]), np.asarray(nodes, dtype=np.int64),
                                               np.asarray(below, dtype=np.int32), max_rows, marked)
        self.mark_expanded(*expanded.tolist())
        return self.splice(row + 1, self.subtree_end(row), shown, depth + self.depths[row])

    def collapse_at(self, row: int) -> bool:
        """Collapse the node on ``row``, removing its subtree rows.  True if rows changed."""
        self.unmark_expanded(int(self.nodes[row]))
        return self.splice(row + 1, self.subtree_end(row), NO_NODES, NO_DEPTHS)

    def splice(self, start: int, stop: int, nodes: np.ndarray, depths: np.ndarray) -> bool:
        """Replace rows ``[start, stop)`` by ``nodes``/``depths``, keeping the cursor on its
        node (or on the row above the removed run if its node was removed).  True if
        anything changed."""
        if start == stop and not nodes.size:
            return False
        self.nodes = np.concatenate((self.nodes[:start], nodes, self.nodes[stop:]))
        self.depths = np.concatenate((self.depths[:start], depths, self.depths[stop:]))
        if self.cursor >= stop:
            self.cursor += nodes.size - (stop - start)
        elif self.cursor >= start:
            self.cursor = max(0, start - 1)
        return True

    def _expanded_positions(self, kids: np.ndarray) -> list[int]:
        """Positions in ``kids`` of nodes that are expanded."""
        expanded = self.expanded
        if kids.size <= 64:
            return [i for i, kid in enumerate(kids.tolist()) if kid in expanded]
        if self._expanded_sorted is None:
            self._expanded_sorted = np.fromiter(expanded, dtype=np.int64, count=len(expanded))
        return np.flatnonzero(np.isin(kids, self._expanded_sorted)).tolist()

    def build_block(self, kids: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """Visible rows (nodes, depths) for the sibling list ``kids`` at ``depth``,
        descending into expanded nodes (depth-first, display order).

        Works in runs of consecutive siblings: one slice per run, so the cost is
        per *expanded* node, not per row.
        """
        if not self.expanded or not kids.size:
            return kids.copy(), np.full(kids.size, depth, dtype=np.int32)
        assert self.source is not None
        child_nodes = self.source.child_nodes
        positions_of = self._expanded_positions
        pieces: list[np.ndarray] = []
        piece_depths: list[int] = []
        add, add_depth = pieces.append, piece_depths.append
        stack = [(kids, depth, positions_of(kids), 0, 0)]
        pop, push = stack.pop, stack.append
        while stack:
            level, d, positions, index, pos = pop()
            if index < len(positions):
                stop = positions[index] + 1
                add(level[pos:stop])
                add_depth(d)
                push((level, d, positions, index + 1, stop))
                sub = np.asarray(child_nodes(int(level[stop - 1])), dtype=np.int64)
                if sub.size:
                    push((sub, d + 1, positions_of(sub), 0, 0))
            elif pos < level.size:
                add(level[pos:])
                add_depth(d)
        lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        return np.concatenate(pieces), np.repeat(np.asarray(piece_depths, dtype=np.int32), lengths)

    # ------------------------------------------------------------------ drawing
    def layout(self, width: int) -> tuple[int, list[tuple[int, int]]]:
        """(name column width, [(column index, width)]) for a line ``width`` cells wide;
        columns are dropped from the right until the name column has MIN_LABEL_CELLS."""
        if self._layout is not None and self._layout[0] == width:
            return self._layout[1], self._layout[2]
        widths = [max(1, int(w)) for w in self.source.column_widths()] if self.source else []
        columns = list(enumerate(widths))
        while columns and width - sum(w + 1 for _, w in columns) < MIN_LABEL_CELLS:
            columns.pop()
        label_width = max(1, width - sum(w + 1 for _, w in columns))
        self._layout = (width, label_width, columns)
        return label_width, columns

    def header_text(self, title: str, width: int, style: Style) -> Text:
        """The header line ``width`` cells wide: ``title`` over the name column, then the
        source's column titles right-aligned."""
        label_width, columns = self.layout(width)
        text = Text(style=style, no_wrap=True, end="")
        head = Text(title)
        head.truncate(label_width, overflow="ellipsis", pad=True)
        text.append_text(head)
        titles = list(self.source.column_headers()) if self.source else []
        for index, col_width in columns:
            name = titles[index] if index < len(titles) else ""
            text.append(" " + fit_right(str(name), col_width))
        return text

    def row_text(self, row: int, width: int, styles: RowStyles) -> Text:
        """The line for ``row`` (``width`` cells): guides, fold marker, cleaned label,
        metric columns; the cursor row in ``styles.cursor``."""
        source = self.source
        assert source is not None
        node = int(self.nodes[row])
        depth = int(self.depths[row])
        label_width, columns = self.layout(width)
        glyphs = self.glyphs
        text = Text(style=styles.cursor if row == self.cursor else styles.base, no_wrap=True, end="")
        text.append(self.guides(node, depth, label_width), styles.guides)
        if node in self.expanded:
            text.append(glyphs.expanded, styles.marker)
        elif self.has_children(node):
            text.append(glyphs.collapsed, styles.marker)
        else:
            text.append(glyphs.leaf if depth else glyphs.root_leaf, styles.guides)
        label = clean_label(source.row_label(node))
        room = max(0, label_width - text.cell_len)
        shorten = getattr(source, "short_label", None)
        if shorten is not None and label.cell_len > room:
            label = shorten(label, room)
        label = keep_cut_mark(label, room)
        label.truncate(room, overflow="ellipsis", pad=True)
        text.append_text(label)
        if columns:
            values = source.row_columns(node)
            for index, col_width in columns:
                value = values[index] if index < len(values) else ""
                text.append(" " + fit_right(str(value), col_width))
        return text

    def guides(self, node: int, depth: int, label_width: int) -> str:
        """Indentation guides for ``node`` at ``depth`` in a name column ``label_width``
        cells wide; when they would take more than MAX_INDENT_FRACTION of it (or leave
        the label fewer than MIN_TEXT_CELLS cells), the outer levels collapse into a
        ``12›`` tag."""
        if depth == 0:
            return ""
        glyphs = self.glyphs
        room = min(label_width - MIN_TEXT_CELLS - 2, int(label_width * MAX_INDENT_FRACTION))
        shown, tag = depth, ""
        if 2 * depth > room:
            tag = f"{depth}{glyphs.depth_sep}"
            shown = max(0, (room - len(tag)) // 2)
        parts: list[str] = []
        current = node
        for level in range(shown):
            parent = self.source.parent_of(current) if self.source else -1
            last = self.is_last_child(current, parent)
            if level == 0:
                parts.append(glyphs.last if last else glyphs.tee)
            else:
                parts.append(glyphs.blank if last else glyphs.pipe)
            current = parent
        return tag + "".join(reversed(parts))

    def is_last_child(self, node: int, parent: int) -> bool:
        """Whether ``node`` is the last child of ``parent`` (-1: the last root); cached
        per parent until the next :meth:`reset`/:meth:`rebuild`."""
        last = self._last_child_of.get(parent)
        if last is None:
            assert self.source is not None
            kids = self.source.child_nodes(parent) if parent >= 0 else self.source.root_nodes()
            last = int(kids[-1]) if len(kids) else -1
            self._last_child_of[parent] = last
        return node == last


def clean_label(label: Text | str) -> Text:
    """A private copy of ``label`` with control characters escaped visibly (``\\x1b``,
    ``\\n``; :func:`tracetui.errors.one_line`, its styles moved with the characters), so a
    label can never break the row or reach the terminal as a control sequence.

    A plain ``str`` becomes ``Text(label)``: labels are trace data, never markup.
    """
    if isinstance(label, str):
        return Text(one_line(label))
    return safe_text(label.copy())


def fit_right(value: str, width: int) -> str:
    """``value`` right-aligned in ``width`` cells, cut with an ellipsis if longer."""
    length = cell_len(value)
    if length <= width:
        return " " * (width - length) + value
    cut = Text(value)
    cut.truncate(width, overflow="ellipsis")
    return cut.plain
