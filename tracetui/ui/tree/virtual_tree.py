"""VirtualTree: a tree view over flat arrays that renders only the rows on screen.

Textual's ``Tree`` builds one Python object per node; with 200k children that froze
for seconds.  ``VirtualTree`` reads the tree through :class:`RowSource` and keeps its
visible rows in a :class:`~tracetui.ui.view.visible_rows.VisibleRows` (numpy arrays of node
ids and depths plus the expanded set; see that module): a node with 100k children
toggles in milliseconds and nothing is built per node.  This module adds the widget:
keys, scrolling, ``NodeHighlighted`` messages and drawing with the Line API
(``render_line(y)`` draws one row on demand).

Screen line 0 is a sticky header with the column titles; screen line ``y >= 1`` shows
row ``scroll_y + y - 1`` (the virtual height is ``rows + 1``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..bindings import RowCursorKeys, row_cursor_bindings
from ..notify import show_note
from ..row_table import list_css
from ..view.row_source import RowSource
from ..view.visible_rows import (
    ASCII_GLYPHS,
    MAX_INDENT_FRACTION,
    MIN_LABEL_CELLS,
    MIN_TEXT_CELLS,
    UNICODE_GLYPHS,
    RowStyles,
    VisibleRows,
)

__all__ = ["MAX_INDENT_FRACTION", "MIN_LABEL_CELLS", "MIN_TEXT_CELLS", "RowSource", "VirtualTree",
           "VisibleRows"]


SIBLING_NOTE_S = 2.0
"""How long (seconds) the "first sibling" / "last sibling" toast of K / J stays up."""


class VirtualTree(RowCursorKeys, ScrollView, can_focus=True):
    """A keyboard-driven tree with metric columns over a :class:`RowSource`."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "vtree--cursor",
        "vtree--guides",
        "vtree--header",
        "vtree--marker",
    }

    DEFAULT_CSS = list_css("VirtualTree", "vtree", "& > .vtree--guides { color: $text-muted; }\n"
                                                   "        & > .vtree--marker { color: $accent; }")

    BINDINGS: ClassVar[list[BindingType]] = [
        *row_cursor_bindings("vtree"),
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
        source: RowSource | None = None,
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
        self._rows = VisibleRows(glyphs=ASCII_GLYPHS if ascii_guides else UNICODE_GLYPHS)
        self._pending_scroll: tuple[int, bool] | None = None
        self._frame: tuple[RowStyles, int] | None = None
        if source is not None:
            self.set_source(source)

    # ----------------------------------------------------------------- state
    @property
    def source(self) -> RowSource | None:
        return self._rows.source

    @property
    def rows(self) -> VisibleRows:
        """The row model (visible nodes and depths, expanded set, cursor row).  Change
        it through the widget's methods so the screen and messages follow."""
        return self._rows

    @property
    def row_count(self) -> int:
        """Number of visible rows (header excluded)."""
        return len(self._rows)

    @property
    def visible_nodes(self) -> np.ndarray:
        """Node ids of the visible rows in display order (read-only view)."""
        view = self._rows.nodes.view()
        view.flags.writeable = False
        return view

    @property
    def visible_depths(self) -> np.ndarray:
        """Depth of each visible row (roots are 0; read-only view)."""
        view = self._rows.depths.view()
        view.flags.writeable = False
        return view

    @property
    def cursor_row(self) -> int:
        return self._rows.cursor

    @property
    def cursor_node(self) -> int | None:
        """The node under the cursor, or None when the tree is empty."""
        return self._rows.cursor_node

    def is_expanded(self, node: int) -> bool:
        return node in self._rows.expanded

    def has_children(self, node: int) -> bool:
        return self._rows.has_children(node)

    def row_of(self, node: int) -> int:
        """The visible row showing ``node``, or -1 when it is not visible."""
        return self._rows.find_row(node)

    # ------------------------------------------------------------ public API
    def set_source(self, source: RowSource) -> None:
        """Show ``source``: only its roots visible, everything collapsed, cursor on top."""
        rows = self._rows
        rows.reset(source)
        self._rows_changed()
        self.scroll_to(y=0, animate=False, force=True)
        if len(rows):
            self.post_message(self.NodeHighlighted(self, int(rows.nodes[0])))

    def refresh_rows(self) -> None:
        """Re-read the source (labels, columns, children) keeping expansion and cursor node.

        Call after the source changed what it returns (units, filtering).  Costs
        O(visible rows).
        """
        if self._rows.source is None:
            return
        previous = self.cursor_node
        self._rows.rebuild()
        self._rows_changed()
        self._notify_if_moved(previous)
        self._scroll_to_row(self._rows.cursor)

    def expand(self, node: int) -> bool:
        """Expand ``node`` (a node that is not visible is only marked expanded).

        Returns True if the node was collapsed and has children.
        """
        rows = self._rows
        if rows.source is None or node in rows.expanded or not rows.has_children(node):
            return False
        row = rows.find_row(node)
        if row >= 0:
            self._expand_at(row)
        else:
            rows.mark_expanded(node)
        return True

    def collapse(self, node: int) -> bool:
        """Collapse ``node``; the cursor moves to it if it was inside.  True if it was expanded."""
        rows = self._rows
        if node not in rows.expanded:
            return False
        row = rows.find_row(node)
        if row >= 0:
            self._collapse_at(row)
        else:
            rows.unmark_expanded(node)
        return True

    def toggle(self, node: int) -> bool:
        """Collapse ``node`` if expanded, else expand it.  True if anything changed."""
        return self.collapse(node) if node in self._rows.expanded else self.expand(node)

    def expand_subtree(self, node: int, max_nodes: int = 100_000) -> int:
        """Expand ``node`` itself, then its descendants breadth-first while the rows
        this adds stay within ``max_nodes``.  Returns the number of nodes newly expanded."""
        rows = self._rows
        if rows.source is None:
            return 0
        row = rows.find_row(node)
        fast = getattr(rows.source, "subtree_rows", None)
        got = fast(node) if fast is not None and row >= 0 else None
        if got is not None and len(got[0]):  # at once, from one slice of the source's preorder
            before = len(rows.expanded)
            previous = self.cursor_node
            if rows.expand_all_at(row, *got, max_nodes):
                self._rows_changed()
            if previous is not None and rows.cursor_node != previous:  # the cursor stays on its node
                rows.cursor = max(row, rows.find_row(previous, row, rows.subtree_end(row)))
            self._notify_if_moved(previous)
            self._scroll_to_row(rows.cursor)
            return len(rows.expanded) - before
        new = [n for n in rows.subtree_plan(node, max_nodes) if n not in rows.expanded]
        if not new:
            return 0
        previous = self.cursor_node
        if row >= 0 and node in rows.expanded:
            self._collapse_at(row, scroll=False)
        rows.mark_expanded(*new)
        if row >= 0:
            rows.unmark_expanded(node)
            self._expand_at(row, scroll=False)
            if previous is not None and previous != self.cursor_node:
                rows.cursor = max(row, rows.find_row(previous, row, rows.subtree_end(row)))
                self._notify_if_moved(node)
            self._scroll_to_row(rows.cursor)
        return len(new)

    def collapse_all(self) -> None:
        """Collapse every node; the cursor moves to the root of the node it was on."""
        if self._rows.source is None:
            return
        previous = self.cursor_node
        self._rows.collapse_all()
        self._rows_changed()
        self._notify_if_moved(previous)
        self._scroll_to_row(self._rows.cursor, center_if_far=True)

    def select_node(self, node: int, *, expand_ancestors: bool = True) -> bool:
        """Put the cursor on ``node`` and scroll it into view (centred when far away).

        With ``expand_ancestors`` the chain of ancestors (via ``parent_of``) is
        expanded first.  Returns False if the node cannot be shown.
        """
        rows = self._rows
        if rows.source is None:
            return False
        lo, hi = 0, len(rows)
        if expand_ancestors:
            for ancestor in reversed(rows.ancestors(node)):
                row = rows.find_row(ancestor, lo, hi)
                if row < 0:
                    return False
                if ancestor not in rows.expanded:
                    self._expand_at(row, scroll=False)
                lo, hi = row + 1, rows.subtree_end(row)
        row = rows.find_row(node, lo, hi)
        if row < 0:
            return False
        self._set_cursor(row, center_if_far=True)
        return True

    # ------------------------------------------------------------ internals
    def _expand_at(self, row: int, *, scroll: bool = True) -> None:
        previous = self.cursor_node
        self._after_edit(previous, self._rows.expand_at(row), scroll)

    def _collapse_at(self, row: int, *, scroll: bool = True) -> None:
        previous = self.cursor_node
        self._after_edit(previous, self._rows.collapse_at(row), scroll)

    def _after_edit(self, previous: int | None, changed: bool, scroll: bool) -> None:
        """Repaint after the rows changed, tell the app if the cursor's node changed and
        (``scroll``) keep the cursor on screen."""
        if changed:
            self._rows_changed()
        self._notify_if_moved(previous)
        if scroll:
            self._scroll_to_row(self._rows.cursor)

    def _rows_changed(self) -> None:
        self.virtual_size = Size(0, len(self._rows) + 1)
        self.refresh()

    def _notify_if_moved(self, previous: int | None) -> None:
        current = self.cursor_node
        if current is not None and current != previous:
            self.post_message(self.NodeHighlighted(self, current))

    def _view_rows(self) -> int:
        """How many tree rows fit below the header."""
        return self.scrollable_content_region.height - 1

    def _set_cursor(self, row: int, *, center_if_far: bool = False) -> None:
        rows = self._rows
        if not len(rows):
            return
        row = max(0, min(row, len(rows) - 1))
        previous = self.cursor_node
        if row != rows.cursor:
            self.refresh_line(rows.cursor + 1)
            rows.cursor = row
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
        self.call_after_refresh(self._scroll_after_resize)

    def _scroll_after_resize(self) -> None:
        """Keep the cursor row on screen once the new size is known (a scroll requested
        before the widget had a size is applied here)."""
        pending, self._pending_scroll = self._pending_scroll, None
        if pending is not None and pending[0] == self._rows.cursor:
            self._scroll_to_row(self._rows.cursor, center_if_far=pending[1])
        else:
            self._scroll_to_row(self._rows.cursor)

    # ------------------------------------------------------------- rendering
    def render_lines(self, crop: Region) -> list[Strip]:
        # Resolve styles and width once per repaint instead of once per line.
        self._frame = (self._compute_styles(), self.scrollable_content_region.width)
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def _compute_styles(self) -> RowStyles:
        base = self.rich_style
        return RowStyles(
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
        if self._rows.source is None or not 0 <= row < len(self._rows.nodes):
            return Strip.blank(width, styles.base)
        return self._render_row(row, width, styles)

    def _to_strip(self, text: Text, width: int) -> Strip:
        strip = Strip(list(text.render(self.app.console)), text.cell_len)
        return strip.crop_extend(0, width, text.style if isinstance(text.style, Style) else None)

    def _render_header(self, width: int, styles: RowStyles) -> Strip:
        return self._to_strip(self._rows.header_text(self.label_header, width, styles.header), width)

    def _render_row(self, row: int, width: int, styles: RowStyles) -> Strip:
        return self._to_strip(self._rows.row_text(row, width, styles), width)

    # --------------------------------------------------------------- mouse
    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        row = self.scroll_offset.y + offset.y - 1
        if 0 <= row < len(self._rows.nodes):
            self._set_cursor(row)
            if event.chain >= 2:
                self.toggle(int(self._rows.nodes[row]))

    # -------------------------------------------------------------- actions
    # row_cursor_bindings' actions (RowCursorKeys) move the cursor through these
    @property
    def row_cursor(self) -> int:
        return self._rows.cursor

    @property
    def row_total(self) -> int:
        return len(self._rows.nodes)

    def move_row_cursor(self, row: int) -> None:
        self._set_cursor(row)

    def action_toggle(self) -> None:
        if (node := self.cursor_node) is not None:
            self.toggle(node)

    def action_expand_or_child(self) -> None:
        node = self.cursor_node
        if node is None or not self.has_children(node):
            return
        if node in self._rows.expanded:
            self._set_cursor(self._rows.cursor + 1)
        else:
            self.expand(node)

    def action_collapse_or_parent(self) -> None:
        node = self.cursor_node
        if node is not None and node in self._rows.expanded:
            self.collapse(node)
        else:
            self.action_parent()

    def action_parent(self) -> None:
        row = self._rows.parent_row(self._rows.cursor)
        if row >= 0:
            self._set_cursor(row)

    def action_next_sibling(self) -> None:
        self._move_to_sibling(1)

    def action_prev_sibling(self) -> None:
        self._move_to_sibling(-1)

    def _move_to_sibling(self, direction: int) -> None:
        """J/K: move to the next (``direction`` > 0) or previous sibling; at the end of the
        sibling list say so in a short toast, so the key is never silently ignored."""
        if not len(self._rows):
            return
        row = self._rows.sibling_row(self._rows.cursor, direction)
        if row >= 0:
            self._set_cursor(row)
        else:
            show_note(self, "last sibling" if direction > 0 else "first sibling", timeout=SIBLING_NOTE_S)

    def action_longest_child(self) -> None:
        """Expand the cursor node and move to its child with the largest weight."""
        rows = self._rows
        node = self.cursor_node
        if node is None or rows.source is None:
            return
        child = rows.longest_child(node)
        if child is None:
            return
        row = rows.cursor
        if node not in rows.expanded:
            self._expand_at(row)
        target = rows.find_row(child, row + 1, rows.subtree_end(row))
        if target >= 0:
            self._set_cursor(target, center_if_far=True)

    def action_expand_subtree(self) -> None:
        if (node := self.cursor_node) is not None:
            self.expand_subtree(node)

    def action_collapse_all(self) -> None:
        self.collapse_all()

