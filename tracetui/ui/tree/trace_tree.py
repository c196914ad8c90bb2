"""The op tree of the main screen: a :class:`~.virtual_tree.VirtualTree` over a trace's rows
(:class:`~tracetui.ui.view.trace_row_source.TraceRowSource`); its own class so that CSS and tests can
tell it from other trees."""

from __future__ import annotations

from .virtual_tree import VirtualTree


class TraceTree(VirtualTree):
    """The op tree (a VirtualTree over :class:`~tracetui.ui.view.trace_row_source.TraceRowSource`)."""
