"""The critical-path screen (``P`` on the browser screen): why the step took as long as it did.

On top, what the path is and its breakdown by kind of time (with its share of the path);
below, the path in one of three views (``v`` cycles them): its segments in time order with
what each was (host op, GPU work, launch delay, GPU gap, stream wait, sync wait, other) and
what it is attributed to; the breakdown by kind, then by name, then the segments; the ops
and GPU events off the path, least slack first.  The detail pane says everything about the
row (when, where, what it waited on, whether it rests on an inferred dependency); the
timeline has one row per kind of time, the selected segment tinted.

``Enter`` goes to the row's event in the op tree (in a job, on its rank), ``n``/``N`` move to
the next/previous segment in time order in any view, ``Esc`` closes.  The models are in
:mod:`tracetui.ui.view.path_rows` and :mod:`tracetui.ui.view.path_detail` (no Textual).
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container
from textual.screen import Screen
from textual.widgets import Static

from ..detail.detail_pane import DetailPane
from ..key_bar import KeyBar
from ..notify import show_note
from ..shown import only_while_shown
from ..timeline.timeline_strip import TimelineStrip
from ..tree.virtual_tree import VirtualTree
from ..view.path_detail import EventNamer
from ..view.path_marks import PathState
from ..view.path_rows import VIEWS, KindRows, header_lines, path_tracks


class CriticalPathScreen(Screen[tuple[int, int, int] | None]):
    """The path's segments, breakdown and slack; dismisses with (rank, event, segment index
    or -1 for a slack row) for Enter, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="critical.close"),
        Binding("enter", "go", "Go to event", id="critical.go", priority=True,
                tooltip="the row's event in the op tree (in a job, on its rank); on a kind or name row: fold"),
        Binding("n", "walk(1)", "Next segment", id="critical.next"),
        Binding("N", "walk(-1)", "Previous segment", show=False, id="critical.prev"),
        Binding("v", "view", "Next view", id="critical.view",
                tooltip="segments in time order / by kind and name / nearly critical (least slack)"),
    ]
    DEFAULT_CSS = """
    CriticalPathScreen { layout: vertical; }
    CriticalPathScreen #cp-head { height: auto; max-height: 4; padding: 0 1; background: $panel; }
    CriticalPathScreen .cp-line { text-wrap: nowrap; text-overflow: ellipsis; }
    CriticalPathScreen #cp-body { height: 1fr; layout: horizontal; }
    CriticalPathScreen #cp-rows { width: 3fr; height: 1fr; }
    CriticalPathScreen #cp-detail { width: 2fr; height: 1fr; border-left: vkey $primary 40%; }
    CriticalPathScreen.-narrow #cp-body { layout: vertical; }
    CriticalPathScreen.-narrow #cp-rows { width: 1fr; height: 3fr; }
    CriticalPathScreen.-narrow #cp-detail { width: 1fr; height: 2fr; border-left: none;
                                            border-top: hkey $primary 40%; }
    CriticalPathScreen #cp-timeline { height: auto; max-height: 8; border-top: hkey $primary 40%; }
    CriticalPathScreen.-short #cp-timeline { max-height: 4; }
    CriticalPathScreen.-short #cp-head { max-height: 3; }
    """

    def __init__(self, state: PathState, namer: EventNamer) -> None:
        super().__init__()
        self.state = state
        self.cp = state.cp
        self.namer = namer
        self.view = 0
        self.rows = VIEWS[0](self.cp, namer, state.job)
        self._shown: int | None = None  #: the row the detail pane shows (or is about to)

    def compose(self) -> ComposeResult:
        with Container(id="cp-head"):
            for line in header_lines(self.cp, self.state.job):
                yield Static(line, classes="cp-line")
        with Container(id="cp-body"):
            yield VirtualTree(self.rows, label_header=self._label_header(), id="cp-rows")
            yield DetailPane(self.rows, id="cp-detail")
        yield TimelineStrip(path_tracks(self.cp), label_width=12, id="cp-timeline")
        yield KeyBar()

    def _label_header(self) -> str:
        return f"Critical path: {self.rows.title} (v: next view)"

    @property
    def tree(self) -> VirtualTree:
        return self.query_one("#cp-rows", VirtualTree)

    @only_while_shown  # keys typed ahead may have closed it already
    def on_mount(self) -> None:
        tree = self.tree
        tree.focus()
        i = self.state.index
        if 0 <= i < len(self.cp.segments):
            self.call_after_refresh(self._select_segment, i)

    @on(VirtualTree.NodeHighlighted)
    def _on_highlight(self, event: VirtualTree.NodeHighlighted) -> None:
        event.stop()
        node = event.node
        self._shown = node
        # the detail follows once the screen is laid out (its first rows come before the
        # narrow/wide layout is applied) and once per burst of keys, for the row they stop on
        self.call_after_refresh(self._show_detail)
        timeline = self.query_one("#cp-timeline", TimelineStrip)
        i = self.rows.segment_of(node)
        if i >= 0:
            s = self.cp.segments
            t0, t1 = float(s.start_us[i]), float(s.start_us[i] + s.dur_us[i])
            timeline.set_cursor_range(t0, t1)
            timeline.follow(t0, t1)
        else:
            timeline.set_cursor_range(None)

    @only_while_shown
    def _show_detail(self) -> None:
        self.query_one("#cp-detail", DetailPane).show(self._shown)

    @only_while_shown
    def _select_segment(self, i: int) -> None:
        self.tree.select_node(i)

    # ------------------------------------------------------------------ keys
    def action_go(self) -> None:
        """Enter: the row's event in the op tree; a kind or name row folds instead."""
        tree = self.tree
        node = tree.cursor_node
        if node is None:
            return
        if tree.has_children(node):
            tree.toggle(node)
            return
        target = self.rows.target(node)
        if target is None:
            show_note(self, "untraced time: no event to go to (n/N to the next segment)", severity="warning")
            return
        self.dismiss((*target, self.rows.segment_of(node)))

    def action_walk(self, direction: int) -> None:
        """n/N: the next/previous segment in time order (from the row's segment, or the one
        walked to last)."""
        n = len(self.cp.segments)
        if not n:
            return
        node = self.tree.cursor_node
        i = self.rows.segment_of(node) if node is not None else -1
        if i < 0:
            i = self.state.index
        j = self.cp.next_segment(i, direction) if i >= 0 else (0 if direction > 0 else n - 1)
        if j == i:
            show_note(self, f"{'last' if direction > 0 else 'first'} segment of the path")
            return
        if self.rows.segment_of(j) != j:  # the slack view has no segment rows: time order
            self._set_view(0)
        self.state.index = j
        self.tree.select_node(j)

    def action_view(self) -> None:
        self._set_view((self.view + 1) % len(VIEWS))

    def _set_view(self, view: int) -> None:
        node = self.tree.cursor_node
        seg = self.rows.segment_of(node) if node is not None else -1
        self.view = view
        self.rows = VIEWS[view](self.cp, self.namer, self.state.job)
        tree = self.tree
        tree.label_header = self._label_header()
        self.query_one("#cp-detail", DetailPane).model = self.rows
        tree.set_source(self.rows)
        if seg >= 0 and not isinstance(self.rows, KindRows) and self.rows.segment_of(seg) == seg:
            tree.select_node(seg)  # the by-kind view opens on its kinds (the breakdown), folded

    def action_close(self) -> None:
        self.dismiss(None)
