"""The row-source protocol: what the tree widget needs to know about any tree.

:class:`~tracetui.ui.tree.virtual_tree.VirtualTree` draws whatever implements
:class:`RowSource`: a trace's host tree today
(:class:`~tracetui.ui.view.trace_row_source.TraceRowSource`), a diff's merged tree, a critical
path or a findings list next.  Node ids are non-negative ints chosen by the source (usually
indices into its numpy arrays); the widget keeps only the ids of the visible rows
(:class:`~tracetui.ui.view.visible_rows.VisibleRows`), so a source with millions of nodes
costs nothing per node until a row is drawn.  ``tests/ui/test_ui_row_source.py`` shows a
second, small source (a findings list).

Required: :meth:`~RowSource.root_nodes`, :meth:`~RowSource.child_nodes`,
:meth:`~RowSource.parent_of`, :meth:`~RowSource.row_label`, :meth:`~RowSource.row_columns`,
:meth:`~RowSource.column_headers`, :meth:`~RowSource.column_widths`,
:meth:`~RowSource.node_weight`.  Optional shortcuts, used when present: ``short_label``
(abbreviate a label that does not fit), ``child_weights`` (vectorised weights for ``L``) and
``subtree_rows(node) -> (nodes, depths below it)`` (every row under a node in display order, so
``*`` expands a subtree at once: ``VisibleRows.expand_all_at``; None to expand node by node).
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from rich.text import Text


@runtime_checkable
class RowSource(Protocol):
    """What VirtualTree needs to know about a tree.  Node ids are non-negative ints."""

    def root_nodes(self) -> Sequence[int]:
        """Top-level nodes in display order (a numpy int array is fine)."""

    def child_nodes(self, node: int) -> Sequence[int]:
        """Children of ``node`` in display order (a numpy int array is fine)."""

    def parent_of(self, node: int) -> int:
        """Parent of ``node``, or -1 for a root."""

    def row_label(self, node: int) -> Text:
        """The name column, already styled.  Trace data: never parsed as markup.

        A source may also offer ``short_label(label: Text, cells: int) -> Text``: called
        with the cleaned label when it is wider than its ``cells``, it returns the text to
        draw instead (e.g. with long known prefixes abbreviated); it is then cut at the end."""

    def row_columns(self, node: int) -> Sequence[str]:
        """Right-aligned metric cells, one per entry of ``column_headers()``."""

    def column_headers(self) -> Sequence[str]:
        """Titles of the metric columns."""

    def column_widths(self) -> Sequence[int]:
        """Widths in cells of the metric columns."""

    def node_weight(self, node: int) -> float:
        """Size used by "longest child" (e.g. inclusive duration in µs).  A source may
        also offer ``child_weights(node) -> np.ndarray`` as a vectorised shortcut."""
