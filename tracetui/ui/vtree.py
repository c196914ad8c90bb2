"""VirtualTree: a tree view over flat arrays that renders only the rows on screen.

Textual's ``Tree`` builds one Python object per node; with 200k children that froze
for seconds.  ``VirtualTree`` instead reads the tree through :class:`TreeSource`
(integer node ids chosen by the source, usually indices into the model's arrays) and
keeps only:

* ``_expanded``: the set of expanded node ids;
* ``_nodes``/``_depths``: numpy arrays listing the visible rows in display order
  (row ``i`` shows node ``_nodes[i]`` at depth ``_depths[i]``).

Expanding a node inserts the visible rows of its subtree right below its row (one
``np.concatenate``); collapsing deletes the contiguous run of deeper rows below it.
A node with 100k children toggles in milliseconds; nothing is built per node.
Rendering uses the Line API: ``render_line(y)`` draws one row on demand.

Screen line 0 is a sticky header with the column titles; screen line ``y >= 1`` shows
row ``scroll_y + y - 1`` (the virtual height is ``rows + 1``).
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple, Protocol, Sequence

import numpy as np
from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

MIN_LABEL_CELLS = 24
"""The name column (guides + marker + label) keeps at least this many cells; metric
columns are dropped from the right before it gets narrower."""
MIN_TEXT_CELLS = 10
"""Indentation guides are compressed before the label text gets fewer cells than this."""
MAX_INDENT_FRACTION = 0.4
"""Indentation guides never take more than this fraction of the name column; deeper
rows show their depth as a ``31›`` tag followed by the innermost guides."""

_NO_NODES = np.empty(0, dtype=np.int64)
_NO_DEPTHS = np.empty(0, dtype=np.int32)
# C0 controls (newline and tab included) and DEL become spaces, one for one, so the
# label's style spans stay aligned and a label can never break the row.
_CONTROL_TO_SPACE = {code: " " for code in [*range(32), 127]}


class TreeSource(Protocol):
    """What VirtualTree needs to know about a tree.  Node ids are non-negative ints."""

    def root_nodes(self) -> Sequence[int]:
        """Top-level nodes in display order (a numpy int array is fine)."""

    def child_nodes(self, node: int) -> Sequence[int]:
        """Children of ``node`` in display order (a numpy int array is fine)."""

    def parent_of(self, node: int) -> int:
        """Parent of ``node``, or -1 for a root."""

    def row_label(self, node: int) -> Text:
        """The name column, already styled.  Trace data: never parsed as markup."""

    def row_columns(self, node: int) -> Sequence[str]:
        """Right-aligned metric cells, one per entry of ``column_headers()``."""

    def column_headers(self) -> Sequence[str]:
        """Titles of the metric columns."""

    def column_widths(self) -> Sequence[int]:
        """Widths in cells of the metric columns."""

    def node_weight(self, node: int) -> float:
        """Size used by "longest child" (e.g. inclusive duration in µs).  A source may
        also offer ``child_weights(node) -> np.ndarray`` as a vectorised shortcut."""


class _RowStyles(NamedTuple):
    base: Style
    cursor: Style
    header: Style
    guides: Style
    marker: Style


class _Glyphs(NamedTuple):
    pipe: str
    tee: str
    last: str
    blank: str
    expanded: str
    collapsed: str
    leaf: str
    root_leaf: str
    depth_sep: str


_UNICODE = _Glyphs("│ ", "├─", "└─", "  ", "▾ ", "▸ ", "─ ", "  ", "›")
_ASCII = _Glyphs("| ", "|-", "`-", "  ", "- ", "+ ", "  ", "  ", ">")


def _scan_down(depths: np.ndarray, start: int, max_depth: int) -> int:
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


def _scan_up(depths: np.ndarray, start: int, max_depth: int) -> int:
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


class VirtualTree(ScrollView, can_focus=True):
    """A keyboard-driven tree with metric columns over a :class:`TreeSource`."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "vtree--cursor",
        "vtree--guides",
        "vtree--header",
        "vtree--marker",
    }

    DEFAULT_CSS = """
    VirtualTree {
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
        height: 1fr;
        & > .vtree--header { background: $panel; text-style: bold; }
        & > .vtree--guides { color: $text-muted; }
        & > .vtree--marker { color: $accent; }
        & > .vtree--cursor {
            background: $block-cursor-blurred-background;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .vtree--cursor {
            color: $block-cursor-foreground;
            background: $block-cursor-background;
            text-style: $block-cursor-text-style;
        }
    }
    VirtualTree:ansi:nocolor > .vtree--cursor { text-style: reverse; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down,j", "cursor_down", "Down", show=False, id="vtree.down"),
        Binding("up,k", "cursor_up", "Up", show=False, id="vtree.up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="vtree.page_down"),
        Binding("pageup", "page_up", "Page up", show=False, id="vtree.page_up"),
        Binding("ctrl+d", "half_page_down", "Half page down", show=False, id="vtree.half_down"),
        Binding("ctrl+u", "half_page_up", "Half page up", show=False, id="vtree.half_up"),
        Binding("home,g", "cursor_top", "Top", show=False, id="vtree.top"),
        Binding("end,G", "cursor_bottom", "Bottom", show=False, id="vtree.bottom"),
        Binding("enter,space", "toggle", "Fold", id="vtree.toggle"),
        Binding("right,l", "expand_or_child", "Expand / first child", show=False, id="vtree.expand"),
        Binding("left,h", "collapse_or_parent", "Collapse / parent", show=False, id="vtree.collapse"),
        Binding("p", "parent", "Parent", show=False, id="vtree.parent"),
        Binding("J", "next_sibling", "Next sibling", show=False, id="vtree.next_sibling"),
        Binding("K", "prev_sibling", "Previous sibling", show=False, id="vtree.prev_sibling"),
        Binding("L", "longest_child", "Longest child", id="vtree.longest_child"),
        Binding("asterisk", "expand_subtree", "Expand all below", show=False, id="vtree.expand_subtree"),
        Binding("minus", "collapse_all", "Collapse all", show=False, id="vtree.collapse_all"),
    ]

    class NodeHighlighted(Message):
        """The cursor moved to another node (``node`` is the source's node id)."""

        def __init__(self, tree: VirtualTree, node: int) -> None:
            self.tree = tree
            self.node = node
            super().__init__()

        @property
        def control(self) -> VirtualTree:
            return self.tree

    def __init__(
        self,
        source: TreeSource | None = None,
        *,
        label_header: str = "Name",
        ascii_guides: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self.label_header = label_header
        self._glyphs = _ASCII if ascii_guides else _UNICODE
        self._source: TreeSource | None = None
        self._expanded: set[int] = set()
        self._expanded_sorted: np.ndarray | None = None
        self._row_nodes = _NO_NODES
        self._row_depths = _NO_DEPTHS
        self._cursor = 0
        self._last_child_of: dict[int, int] = {}
        self._column_layout: tuple[int, int, list[tuple[int, int]]] | None = None
        self._pending_scroll: tuple[int, bool] | None = None
        self._frame: tuple[_RowStyles, int] | None = None
        if source is not None:
            self.set_source(source)

    # ----------------------------------------------------------------- state
    @property
    def source(self) -> TreeSource | None:
        return self._source

    @property
    def row_count(self) -> int:
        """Number of visible rows (header excluded)."""
        return len(self._row_nodes)

    @property
    def visible_nodes(self) -> np.ndarray:
        """Node ids of the visible rows in display order (read-only view)."""
        view = self._row_nodes.view()
        view.flags.writeable = False
        return view

    @property
    def visible_depths(self) -> np.ndarray:
        """Depth of each visible row (roots are 0; read-only view)."""
        view = self._row_depths.view()
        view.flags.writeable = False
        return view

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @property
    def cursor_node(self) -> int | None:
        """The node under the cursor, or None when the tree is empty."""
        if not len(self._row_nodes):
            return None
        return int(self._row_nodes[self._cursor])

    def is_expanded(self, node: int) -> bool:
        return node in self._expanded

    def has_children(self, node: int) -> bool:
        return self._source is not None and len(self._source.child_nodes(node)) > 0

    def row_of(self, node: int) -> int:
        """The visible row showing ``node``, or -1 when it is not visible."""
        return self._find_row(node)

    # ------------------------------------------------------------ public API
    def set_source(self, source: TreeSource) -> None:
        """Show ``source``: only its roots visible, everything collapsed, cursor on top."""
        self._source = source
        self._expanded.clear()
        self._expanded_sorted = None
        self._last_child_of.clear()
        self._column_layout = None
        self._row_nodes = np.asarray(source.root_nodes(), dtype=np.int64).copy()
        self._row_depths = np.zeros(len(self._row_nodes), dtype=np.int32)
        self._cursor = 0
        self._rows_changed()
        self.scroll_to(y=0, animate=False, force=True)
        if len(self._row_nodes):
            self.post_message(self.NodeHighlighted(self, int(self._row_nodes[0])))

    def refresh_rows(self) -> None:
        """Re-read the source (labels, columns, children) keeping expansion and cursor node.

        Call after the source changed what it returns (units, filtering).  Costs
        O(visible rows).
        """
        if self._source is None:
            return
        previous = self.cursor_node
        self._last_child_of.clear()
        self._column_layout = None
        roots = np.asarray(self._source.root_nodes(), dtype=np.int64)
        self._row_nodes, self._row_depths = self._build_block(roots, 0)
        row = self._find_row(previous) if previous is not None else -1
        self._cursor = row if row >= 0 else min(self._cursor, max(0, len(self._row_nodes) - 1))
        self._rows_changed()
        self._notify_if_moved(previous)
        self._scroll_to_row(self._cursor)

    def expand(self, node: int) -> bool:
        """Expand ``node`` (a node that is not visible is only marked expanded).

        Returns True if the node was collapsed and has children.
        """
        if self._source is None or node in self._expanded or not self.has_children(node):
            return False
        row = self._find_row(node)
        if row >= 0:
            self._expand_at(row)
        else:
            self._mark_expanded(node)
        return True

    def collapse(self, node: int) -> bool:
        """Collapse ``node``; the cursor moves to it if it was inside.  True if it was expanded."""
        if node not in self._expanded:
            return False
        row = self._find_row(node)
        if row >= 0:
            self._collapse_at(row)
        else:
            self._expanded.discard(node)
            self._expanded_sorted = None
        return True

    def toggle(self, node: int) -> bool:
        """Collapse ``node`` if expanded, else expand it.  True if anything changed."""
        return self.collapse(node) if node in self._expanded else self.expand(node)

    def expand_subtree(self, node: int, max_nodes: int = 100_000) -> int:
        """Expand ``node`` itself, then its descendants breadth-first while the rows
        this adds stay within ``max_nodes``.  Returns the number of nodes newly expanded."""
        if self._source is None:
            return 0
        child_nodes = self._source.child_nodes
        first = child_nodes(node)
        if not len(first):
            return 0
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
        new = [n for n in to_expand if n not in self._expanded]
        if not new:
            return 0
        row = self._find_row(node)
        previous = self.cursor_node
        if row >= 0 and node in self._expanded:
            self._collapse_at(row, scroll=False)
        self._expanded.update(new)
        self._expanded_sorted = None
        if row >= 0:
            self._expanded.discard(node)
            self._expand_at(row, scroll=False)
            if previous is not None and previous != self.cursor_node:
                end = _scan_down(self._row_depths, row + 1, int(self._row_depths[row]))
                self._cursor = max(row, self._find_row(previous, row, end))
                self._notify_if_moved(node)
            self._scroll_to_row(self._cursor)
        return len(new)

    def collapse_all(self) -> None:
        """Collapse every node; the cursor moves to the root of the node it was on."""
        if self._source is None:
            return
        previous = self.cursor_node
        root = previous
        if root is not None:
            while (parent := self._source.parent_of(root)) >= 0:
                root = parent
        self._expanded.clear()
        self._expanded_sorted = None
        self._row_nodes = np.asarray(self._source.root_nodes(), dtype=np.int64).copy()
        self._row_depths = np.zeros(len(self._row_nodes), dtype=np.int32)
        row = self._find_row(root) if root is not None else -1
        self._cursor = max(0, row)
        self._rows_changed()
        self._notify_if_moved(previous)
        self._scroll_to_row(self._cursor, center_if_far=True)

    def select_node(self, node: int, *, expand_ancestors: bool = True) -> bool:
        """Put the cursor on ``node`` and scroll it into view (centred when far away).

        With ``expand_ancestors`` the chain of ancestors (via ``parent_of``) is
        expanded first.  Returns False if the node cannot be shown.
        """
        if self._source is None:
            return False
        lo, hi = 0, len(self._row_nodes)
        if expand_ancestors:
            chain = []
            parent = self._source.parent_of(node)
            while parent >= 0:
                chain.append(parent)
                parent = self._source.parent_of(parent)
            for ancestor in reversed(chain):
                row = self._find_row(ancestor, lo, hi)
                if row < 0:
                    return False
                if ancestor not in self._expanded:
                    self._expand_at(row, scroll=False)
                lo = row + 1
                hi = _scan_down(self._row_depths, row + 1, int(self._row_depths[row]))
        row = self._find_row(node, lo, hi)
        if row < 0:
            return False
        self._set_cursor(row, center_if_far=True)
        return True

    # ------------------------------------------------------------ internals
    def _children(self, node: int) -> np.ndarray:
        assert self._source is not None
        return np.asarray(self._source.child_nodes(node), dtype=np.int64)

    def _find_row(self, node: int, lo: int = 0, hi: int | None = None) -> int:
        if len(self._row_nodes) and lo <= self._cursor < (hi if hi is not None else len(self._row_nodes)):
            if self._row_nodes[self._cursor] == node:
                return self._cursor
        hits = np.flatnonzero(self._row_nodes[lo:hi] == node)
        return lo + int(hits[0]) if hits.size else -1

    def _mark_expanded(self, node: int) -> None:
        self._expanded.add(node)
        self._expanded_sorted = None

    def _expanded_positions(self, kids: np.ndarray) -> list[int]:
        """Positions in ``kids`` of nodes that are expanded."""
        expanded = self._expanded
        if kids.size <= 64:
            return [i for i, kid in enumerate(kids.tolist()) if kid in expanded]
        if self._expanded_sorted is None:
            self._expanded_sorted = np.fromiter(expanded, dtype=np.int64, count=len(expanded))
        return np.flatnonzero(np.isin(kids, self._expanded_sorted)).tolist()

    def _build_block(self, kids: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """Visible rows for the sibling list ``kids`` at ``depth``, descending into
        expanded nodes (depth-first, display order).

        Works in runs of consecutive siblings: one slice per run, so the cost is
        per *expanded* node, not per row.
        """
        if not self._expanded or not kids.size:
            return kids.copy(), np.full(kids.size, depth, dtype=np.int32)
        assert self._source is not None
        child_nodes = self._source.child_nodes
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

    def _expand_at(self, row: int, *, scroll: bool = True) -> None:
        node = int(self._row_nodes[row])
        self._mark_expanded(node)
        nodes, depths = self._build_block(self._children(node), int(self._row_depths[row]) + 1)
        self._splice(row + 1, row + 1, nodes, depths, scroll=scroll)

    def _collapse_at(self, row: int, *, scroll: bool = True) -> None:
        self._expanded.discard(int(self._row_nodes[row]))
        self._expanded_sorted = None
        end = _scan_down(self._row_depths, row + 1, int(self._row_depths[row]))
        self._splice(row + 1, end, _NO_NODES, _NO_DEPTHS, scroll=scroll)

    def _splice(
        self, start: int, stop: int, nodes: np.ndarray, depths: np.ndarray, *, scroll: bool = True
    ) -> None:
        """Replace rows ``[start, stop)`` by ``nodes``/``depths``, keeping the cursor on its node
        (or on the row above the removed run if its node was removed)."""
        previous = self.cursor_node
        if start != stop or nodes.size:
            self._row_nodes = np.concatenate((self._row_nodes[:start], nodes, self._row_nodes[stop:]))
            self._row_depths = np.concatenate((self._row_depths[:start], depths, self._row_depths[stop:]))
            if self._cursor >= stop:
                self._cursor += nodes.size - (stop - start)
            elif self._cursor >= start:
                self._cursor = max(0, start - 1)
            self._rows_changed()
        self._notify_if_moved(previous)
        if scroll:
            self._scroll_to_row(self._cursor)

    def _rows_changed(self) -> None:
        self.virtual_size = Size(0, len(self._row_nodes) + 1)
        self.refresh()

    def _notify_if_moved(self, previous: int | None) -> None:
        current = self.cursor_node
        if current is not None and current != previous:
            self.post_message(self.NodeHighlighted(self, current))

    def _view_rows(self) -> int:
        """How many tree rows fit below the header."""
        return self.scrollable_content_region.height - 1

    def _set_cursor(self, row: int, *, center_if_far: bool = False) -> None:
        if not len(self._row_nodes):
            return
        row = max(0, min(row, len(self._row_nodes) - 1))
        previous = self.cursor_node
        if row != self._cursor:
            self.refresh_line(self._cursor + 1)
            self._cursor = row
            self.refresh_line(row + 1)
        self._scroll_to_row(row, center_if_far=center_if_far)
        self._notify_if_moved(previous)

    def _scroll_to_row(self, row: int, *, center_if_far: bool = False) -> None:
        view = self._view_rows()
        if view <= 0:
            self._pending_scroll = (row, center_if_far)
            return
        self._pending_scroll = None
        top = self.scroll_offset.y
        if top <= row < top + view:
            return
        far = row < top - view or row >= top + 2 * view
        if center_if_far and far:
            target = row - view // 2
        elif row < top:
            target = row
        else:
            target = row - view + 1
        self.scroll_to(y=max(0, target), animate=False, force=True)

    def on_resize(self, event: events.Resize) -> None:
        self._column_layout = None
        self.call_after_refresh(self._scroll_after_resize)

    def _scroll_after_resize(self) -> None:
        """Keep the cursor row on screen once the new size is known (a scroll requested
        before the widget had a size is applied here)."""
        pending, self._pending_scroll = self._pending_scroll, None
        if pending is not None and pending[0] == self._cursor:
            self._scroll_to_row(self._cursor, center_if_far=pending[1])
        else:
            self._scroll_to_row(self._cursor)

    # ------------------------------------------------------------- rendering
    def _layout(self, width: int) -> tuple[int, list[tuple[int, int]]]:
        """(name column width, [(column index, width)]) for a line ``width`` cells wide;
        columns are dropped from the right until the name column has MIN_LABEL_CELLS."""
        if self._column_layout is not None and self._column_layout[0] == width:
            return self._column_layout[1], self._column_layout[2]
        widths = [max(1, int(w)) for w in self._source.column_widths()] if self._source else []
        columns = list(enumerate(widths))
        while columns and width - sum(w + 1 for _, w in columns) < MIN_LABEL_CELLS:
            columns.pop()
        label_width = max(1, width - sum(w + 1 for _, w in columns))
        self._column_layout = (width, label_width, columns)
        return label_width, columns

    def render_lines(self, crop: Region) -> list[Strip]:
        # Resolve styles and width once per repaint instead of once per line.
        self._frame = (self._compute_styles(), self.scrollable_content_region.width)
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def _compute_styles(self) -> _RowStyles:
        base = self.rich_style
        return _RowStyles(
            base,
            base + self.get_component_rich_style("vtree--cursor"),
            base + self.get_component_rich_style("vtree--header"),
            self.get_component_rich_style("vtree--guides", partial=True),
            self.get_component_rich_style("vtree--marker", partial=True),
        )

    def render_line(self, y: int) -> Strip:
        styles, width = self._frame or (self._compute_styles(), self.scrollable_content_region.width)
        if width <= 0:
            return Strip.blank(0)
        if y == 0:
            return self._render_header(width, styles)
        row = self.scroll_offset.y + y - 1
        if self._source is None or not 0 <= row < len(self._row_nodes):
            return Strip.blank(width, styles.base)
        return self._render_row(row, width, styles)

    def _to_strip(self, text: Text, width: int) -> Strip:
        strip = Strip(list(text.render(self.app.console)), text.cell_len)
        return strip.crop_extend(0, width, text.style if isinstance(text.style, Style) else None)

    def _render_header(self, width: int, styles: _RowStyles) -> Strip:
        label_width, columns = self._layout(width)
        text = Text(style=styles.header, no_wrap=True, end="")
        head = Text(self.label_header)
        head.truncate(label_width, overflow="ellipsis", pad=True)
        text.append_text(head)
        titles = list(self._source.column_headers()) if self._source else []
        for index, col_width in columns:
            title = titles[index] if index < len(titles) else ""
            text.append(" " + _fit_right(str(title), col_width))
        return self._to_strip(text, width)

    def _render_row(self, row: int, width: int, styles: _RowStyles) -> Strip:
        source = self._source
        assert source is not None
        node = int(self._row_nodes[row])
        depth = int(self._row_depths[row])
        label_width, columns = self._layout(width)
        glyphs = self._glyphs
        text = Text(style=styles.cursor if row == self._cursor else styles.base, no_wrap=True, end="")
        text.append(self._guides(node, depth, label_width), styles.guides)
        if node in self._expanded:
            text.append(glyphs.expanded, styles.marker)
        elif self.has_children(node):
            text.append(glyphs.collapsed, styles.marker)
        else:
            text.append(glyphs.leaf if depth else glyphs.root_leaf, styles.guides)
        label = _clean_label(source.row_label(node))
        label.truncate(max(0, label_width - text.cell_len), overflow="ellipsis", pad=True)
        text.append_text(label)
        if columns:
            values = source.row_columns(node)
            for index, col_width in columns:
                value = values[index] if index < len(values) else ""
                text.append(" " + _fit_right(str(value), col_width))
        return self._to_strip(text, width)

    def _guides(self, node: int, depth: int, label_width: int) -> str:
        """Indentation guides for a row at ``depth``; when they would take more than
        MAX_INDENT_FRACTION of the name column (or leave the label fewer than
        MIN_TEXT_CELLS cells), the outer levels collapse into a ``12›`` tag."""
        if depth == 0:
            return ""
        glyphs = self._glyphs
        room = min(label_width - MIN_TEXT_CELLS - 2, int(label_width * MAX_INDENT_FRACTION))
        shown, tag = depth, ""
        if 2 * depth > room:
            tag = f"{depth}{glyphs.depth_sep}"
            shown = max(0, (room - len(tag)) // 2)
        parts: list[str] = []
        current = node
        for level in range(shown):
            parent = self._source.parent_of(current) if self._source else -1
            last = self._is_last_child(current, parent)
            if level == 0:
                parts.append(glyphs.last if last else glyphs.tee)
            else:
                parts.append(glyphs.blank if last else glyphs.pipe)
            current = parent
        return tag + "".join(reversed(parts))

    def _is_last_child(self, node: int, parent: int) -> bool:
        last = self._last_child_of.get(parent)
        if last is None:
            assert self._source is not None
            kids = self._source.child_nodes(parent) if parent >= 0 else self._source.root_nodes()
            last = int(kids[-1]) if len(kids) else -1
            self._last_child_of[parent] = last
        return node == last

    # --------------------------------------------------------------- mouse
    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        row = self.scroll_offset.y + offset.y - 1
        if 0 <= row < len(self._row_nodes):
            self._set_cursor(row)
            if event.chain >= 2:
                self.toggle(int(self._row_nodes[row]))

    # -------------------------------------------------------------- actions
    def action_cursor_down(self) -> None:
        self._set_cursor(self._cursor + 1)

    def action_cursor_up(self) -> None:
        self._set_cursor(self._cursor - 1)

    def _page(self, rows: int) -> None:
        self.scroll_to(y=self.scroll_offset.y + rows, animate=False, force=True)
        self._set_cursor(self._cursor + rows)

    def action_page_down(self) -> None:
        self._page(max(1, self._view_rows()))

    def action_page_up(self) -> None:
        self._page(-max(1, self._view_rows()))

    def action_half_page_down(self) -> None:
        self._page(max(1, self._view_rows() // 2))

    def action_half_page_up(self) -> None:
        self._page(-max(1, self._view_rows() // 2))

    def action_cursor_top(self) -> None:
        self._set_cursor(0)

    def action_cursor_bottom(self) -> None:
        self._set_cursor(len(self._row_nodes) - 1)

    def action_toggle(self) -> None:
        if (node := self.cursor_node) is not None:
            self.toggle(node)

    def action_expand_or_child(self) -> None:
        node = self.cursor_node
        if node is None or not self.has_children(node):
            return
        if node in self._expanded:
            self._set_cursor(self._cursor + 1)
        else:
            self.expand(node)

    def action_collapse_or_parent(self) -> None:
        node = self.cursor_node
        if node is not None and node in self._expanded:
            self.collapse(node)
        else:
            self.action_parent()

    def action_parent(self) -> None:
        depth = int(self._row_depths[self._cursor]) if len(self._row_nodes) else 0
        if depth > 0:
            self._set_cursor(_scan_up(self._row_depths, self._cursor - 1, depth - 1))

    def action_next_sibling(self) -> None:
        if not len(self._row_nodes):
            return
        depth = int(self._row_depths[self._cursor])
        row = _scan_down(self._row_depths, self._cursor + 1, depth)
        if row < len(self._row_nodes) and self._row_depths[row] == depth:
            self._set_cursor(row)

    def action_prev_sibling(self) -> None:
        if not len(self._row_nodes):
            return
        depth = int(self._row_depths[self._cursor])
        row = _scan_up(self._row_depths, self._cursor - 1, depth)
        if row >= 0 and self._row_depths[row] == depth:
            self._set_cursor(row)

    def action_longest_child(self) -> None:
        """Expand the cursor node and move to its child with the largest weight."""
        node = self.cursor_node
        if node is None or self._source is None:
            return
        kids = self._children(node)
        if not kids.size:
            return
        fast = getattr(self._source, "child_weights", None)
        if fast is not None:
            weights = np.asarray(fast(node), dtype=np.float64)
        else:
            weights = np.fromiter((self._source.node_weight(int(k)) for k in kids), np.float64, kids.size)
        child = int(kids[int(np.argmax(weights))])
        row = self._cursor
        if node not in self._expanded:
            self._expand_at(row)
        end = _scan_down(self._row_depths, row + 1, int(self._row_depths[row]))
        target = self._find_row(child, row + 1, end)
        if target >= 0:
            self._set_cursor(target, center_if_far=True)

    def action_expand_subtree(self) -> None:
        if (node := self.cursor_node) is not None:
            self.expand_subtree(node)

    def action_collapse_all(self) -> None:
        self.collapse_all()


def _clean_label(label: Text | str) -> Text:
    """A private copy of ``label`` with control characters replaced by spaces.

    A plain ``str`` becomes ``Text(label)``: labels are trace data, never markup.
    """
    if isinstance(label, str):
        return Text(label.translate(_CONTROL_TO_SPACE))
    plain = label.plain
    if plain.isprintable():
        return label.copy()
    clean = Text(plain.translate(_CONTROL_TO_SPACE), style=label.style)
    clean.spans = list(label.spans)
    return clean


def _fit_right(value: str, width: int) -> str:
    """``value`` right-aligned in ``width`` cells, cut with an ellipsis if longer."""
    length = cell_len(value)
    if length <= width:
        return " " * (width - length) + value
    cut = Text(value)
    cut.truncate(width, overflow="ellipsis")
    return cut.plain
