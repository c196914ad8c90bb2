"""The browser screen: op tree left, detail right (below it when narrow), timeline at the
bottom, status line on top; the jumps (``>``/``<``), search, filter, view toggles and
export act on it.  :class:`~tracetui.ui.app.TraceApp` shows it once a trace is loaded."""

from __future__ import annotations

import os
from functools import partial
from typing import Any, ClassVar

import numpy as np
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Container
from textual.worker import get_current_worker

from ... import units
from ...config import background_work
from ...driver.facts import is_standalone
from ...errors import TraceError
from ...names import shown
from ...session import LinkedTrace
from ..bindings import MAIN_BINDINGS
from ..critical.path_actions import PathActions
from ..detail.detail_pane import DetailPane
from ..detail.raw_args_screen import RawArgsScreen
from ..findings.findings_actions import FindingsActions
from ..job.job_actions import JobActions, precompute_job_summary
from ..key_bar import KeyBar
from ..memory.memory_actions import MemoryActions
from ..notify import show_note
from ..query.query_actions import QueryActions
from ..query.query_bar import QueryBar
from ..stacks.stack_actions import StackActions
from ..summaries.summaries_screen import open_summaries, precompute_summaries
from ..timeline.trace_timeline import TraceTimeline
from ..tree.trace_tree import TraceTree
from ..view.driver_notes import back_texts, driver_link_note, hop_texts
from ..view.jumps import JumpCycle, JumpError, driver_back, driver_hop, gpu_jump, launching_op
from ..view.match_list import ORDER_WORDS
from ..view.once import Once
from ..view.raw_args import event_sections
from ..view.status_parts import rank_part, state_parts, trace_parts
from ..view.trace_detail import TraceDetail
from ..view.trace_row_source import TraceRowSource
from .export_dialog import ExportDialog, export_format, op_file_stem, trace_file_stem
from .panes_screen import PanesScreen
from .search_bar import SearchBar
from .status_line import StatusLine
from .warnings_screen import WarningsScreen


class MainScreen(FindingsActions, PathActions, JobActions, MemoryActions, QueryActions, StackActions, PanesScreen):
    """Tree left, detail right (below it when narrow), timeline at the bottom.

    In a whole job (``job_rank`` = (rank, world size)) the status line starts with
    ``rank R/N`` and the job keys work (:class:`~tracetui.ui.job.job_actions.JobActions`);
    ``initial_select`` = (node, note) is selected once the screen is shown.  ``P`` and the
    critical path's marks and walk: :class:`~tracetui.ui.critical.path_actions.PathActions`;
    ``M`` and ``^``: :class:`~tracetui.ui.memory.memory_actions.MemoryActions`; ``i`` and ``b``
    (the icicle and bottom-up of the selected subtree):
    :class:`~tracetui.ui.stacks.stack_actions.StackActions`.  The findings
    (``F``, :class:`~tracetui.ui.findings.findings_actions.FindingsActions`) are computed in a
    worker once the screen is painted; the status line then counts them."""

    BINDINGS: ClassVar[list[BindingType]] = MAIN_BINDINGS

    def __init__(self, linked: LinkedTrace, source: TraceRowSource, detail_model: TraceDetail, *,
                 job_rank: tuple[int, int] | None = None, initial_select: tuple[int,
                                                                                Text | None] | None = None) -> None:
        super().__init__()
        self.job_rank = job_rank
        self.initial_select = initial_select
        self.linked = linked
        self.source = source
        self.detail_model = detail_model
        self.cycle: JumpCycle | None = None
        self.matches_fixed = False  # matches set by another screen (occurrences, evidence), not by a query
        self._status_fixed: list | None = None  # the trace parts of the status line (they never change)
        self.last_export: str | None = None  # absolute path of the last file written by e
        self._spans: dict[int, tuple[float, float]] = {}  # node -> span the timeline shows once it is selected
        #: what the screens need, computed once per trace (view/once.py); filled in the background
        self.once = Once()

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Container(id="body"):
            yield TraceTree(self.source, id="tree")
            yield DetailPane(self.findings_pane_model(), id="detail")
        yield SearchBar(placeholder="search names: text, or /regex/   Enter: go   Esc: cancel", id="search")
        yield QueryBar(id="query")
        yield TraceTimeline(self.source, id="timeline")
        yield KeyBar()

    @property
    def op_tree(self) -> TraceTree:
        return self.query_one("#tree", TraceTree)

    @property
    def timeline(self) -> TraceTimeline:
        return self.query_one("#timeline", TraceTimeline)

    def on_mount(self) -> None:
        tree = self.op_tree
        tree.focus()
        roots = self.source.root_nodes()
        if len(roots):
            tree.expand(int(roots[0]))
        timeline = self.timeline
        if self.source.kt is not None and not timeline.lane_ids:
            timeline.set_show_cpu(True)  # no GPU streams: show the CPU threads instead
        if self.source.kt is None or not timeline.lane_ids:
            timeline.display = False
        if self.path_state() is not None:  # a job's path, computed on another rank's screen
            self.walk = "path"
            self.apply_path()
        self.update_status()
        if self.initial_select is not None:
            self.call_after_refresh(self.select, *self.initial_select)
        self.refresh_bindings()  # the key bar: the keys that apply to this trace (key_applies)
        self.call_after_refresh(self._start_background)
        self.call_after_refresh(self.start_findings)  # after the first paint: never delays it
        self.call_after_refresh(self.open_snapshot_at_start)  # a CUDA memory snapshot alone: its memory screen

    def _start_background(self) -> None:
        """Once the tree is painted: compute what the screens show (the summaries' tables; in a
        job, the cross-rank tables) in a worker thread, once per trace, so that ``s`` and ``X``
        open at once (off with ``TRACETUI_BACKGROUND=0``: each is then computed when first
        opened).  Cancelled with the screen (a rank switch) or the app."""
        if background_work() and self.is_attached:
            self.run_worker(partial(self._background, self.app), thread=True, group="background",
                            name="background")

    def _background(self, app) -> None:
        worker = get_current_worker()
        for step in (precompute_summaries, precompute_job_summary, preload_palette):
            if worker.is_cancelled:
                return
            step(self, app)

    def key_applies(self, action: str) -> bool:
        """Does the key of ``action`` do something on the trace shown?  The key bar and help leave
        out those that do not (``>``/``<`` without GPU events or a driver link, ``.`` without
        python rows, ``t`` without a timeline, ``o`` and ``f`` without matches, ``n``/``N``
        without matches or a critical path, ``w`` without warnings, the rank keys outside a job,
        ``M``/``^`` without memory events, what needs a Kineto trace on an ET alone); pressed
        anyway, they say why."""
        src = self.source
        if action in ("jump_gpu", "jump_op"):
            return src.has_jumps
        if action == "toggle_python":
            return src.has_python
        if action == "focus_timeline":
            return bool(self.timeline.display)
        if action == "match_order":
            return bool(self.matches.size)
        if action == "filter":
            return src.filtered or (self.query_text is not None and bool(self.matches.size))
        if action in ("next_match", "prev_match") and self.walk == "path" and src.path is not None:
            return True
        if action == "warnings":
            return bool(self.linked.all_warnings())
        if action in ("summaries", "export", "raw_args", "toggle_cpu_lanes", "critical_path", "findings"):
            return self.linked.kineto is not None
        if action in self.JOB_ACTIONS:
            return self.job_key_applies()
        if action in self.MEMORY_ACTIONS:
            return self.memory_key_applies()
        return super().key_applies(action)

    # ------------------------------------------------------------------ status
    def status_parts(self) -> list:
        """The status line's parts (:mod:`~tracetui.ui.view.status_parts`): the trace's, then the browser state's."""
        if self._status_fixed is None:
            self._status_fixed = trace_parts(self.linked)
            if self.job_rank is not None:
                self._status_fixed.insert(0, rank_part(*self.job_rank))
        return self._status_fixed + state_parts(
            python_hidden=self.source.hide_python if self.source.kt is not None and not is_standalone(self.source.kt)
            else None,
            query=self.query_text, n_matches=int(self.matches.size), filtered=self.source.filtered,
            exported=self.last_export, noun=self.match_noun, path=self.path_status(),
            order=ORDER_WORDS[self.match_order] if self.matches.size > 1 and self.match_order != "tree" else None,
        ) + self.findings_parts()

    # ------------------------------------------------------------------ selection
    def moved_to(self, node: int) -> None:
        if self.cycle is not None and not (self.cycle.origin == node or
                                           int(self.cycle.events[self.cycle.index]) == node):
            self.cycle = None

    def sync_panes(self, node: int | None, note: Text | None) -> None:
        span = self._spans.pop(node, None) if node is not None else None
        self._spans.clear()
        self.detail.show(node, note)
        self.timeline.show_selection(node)
        if span is not None:
            self.timeline.show_span(*span)

    @on(TraceTimeline.EventSelected)
    def _on_timeline_pick(self, event: TraceTimeline.EventSelected) -> None:
        event.stop()
        self.select(event.node)

    def select(self, node: int, note: Text | None = None, span: tuple[float, float] | None = None) -> bool:
        """Move the tree cursor to ``node`` (expanding its ancestors; clearing the filter if
        it hides the node); ``span`` (µs): a time span the timeline then shows (an idle gap).
        False when the node cannot be shown."""
        tree = self.op_tree
        target = self.source.visible_ancestor(node)
        if note is not None:
            self._notes[target] = note
        if span is not None:
            self._spans[target] = span
        if tree.cursor_node == target:
            self._notes.pop(target, None)
            self._spans.pop(target, None)
            self.current = target
            self.detail.show(target, note)
            self.timeline.show_selection(target)
            if span is not None:
                self.timeline.show_span(*span)
            return True
        ok = tree.select_node(target)
        if not ok and self.source.filtered:
            self._set_filter(False)
            ok = tree.select_node(target)
        if not ok:
            self._notes.pop(target, None)
            self._spans.pop(target, None)
            show_note(self, f"cannot show node {node} in the tree", severity="warning")
        return ok

    # ------------------------------------------------------------------ jumps
    def action_jump_gpu(self) -> None:
        """``>``: first GPU event of the selected op; again: the op's next GPU event.  From a
        runtime call with a linked driver call (``--driver``): that driver call first."""
        if self.current is None:
            return
        try:
            hop = driver_hop(self.source, self.current, self.cycle)
            if hop is not None:
                self._to_driver_call(self.source.kineto_of(self.current), hop)
                return
            cyc = gpu_jump(self.source, self.current, self.cycle)
        except JumpError as exc:
            show_note(self, str(exc), severity="warning")
            return
        self.cycle = cyc
        note = Text(f"> GPU event {cyc.index + 1} of {cyc.events.size} under ", style="bold")
        note.append(self._label_of(cyc.origin), style="cyan")
        via = driver_link_note(self.source.kt, cyc.origin)
        if via is not None:
            note.append_text(via)
        note.append("   (> next, < back)", style="dim")
        self.select(cyc.target, note)

    def _to_driver_call(self, runtime: int, call: int) -> None:
        """``>`` from ``runtime`` to the driver call linked to it; the toast names it and says
        where ``>`` goes next."""
        kt = self.source.kt
        note, message = hop_texts(kt, runtime, call, self.source.gpu_events(runtime))
        self.cycle = None
        if self.select(call, note):
            self.op_tree.expand(call)  # its ioctls and records show under it
            show_note(self, message, title=">")

    def _to_runtime_call(self, runtime: int, call: int) -> None:
        """``<`` from a driver call (or its ioctl/record) to the runtime call linked to it;
        the toast names the call's op."""
        note, message = back_texts(self.source.kt, runtime, call)
        if self.select(runtime, note):
            show_note(self, message, title="<")

    def action_jump_op(self) -> None:
        """``<``: from a kernel/memcpy/memset (or runtime call) to the op that launched it;
        with an ET loaded the linked ET op is named in the detail pane and a notification."""
        src, kt = self.source, self.source.kt
        try:
            back = driver_back(src, self.current if self.current is not None else -1)
            if back is not None:
                self._to_runtime_call(*back)
                return
            op, k, via = launching_op(src, self.current if self.current is not None else -1)
        except JumpError as exc:
            show_note(self, str(exc), severity="warning")
            return
        note = Text("< launched ", style="bold")
        name = self._label_of(k)
        note.append(name if len(name) <= 60 else name[:59] + "…", style="green")
        if via >= 0:
            note.append(" via ")
            note.append(shown(kt.name(via)), style="yellow")
        message = Text(f"launching op: {shown(kt.name(op))}")
        if src.et is not None:
            pos = src.et_pos(op)
            if pos >= 0:
                ref = self.detail_model.et_ref(pos)
                note.append("\n  ET op: ", style="bold")
                note.append_text(ref)
                message.append("  |  ")
                message.append_text(ref)
            else:
                note.append("\n  ET op: none linked", style="dim")
                message.append("  |  no linked ET op")
        if self.select(op, note) and src.et is not None:
            show_note(self, message, title="<")

    def _label_of(self, node: int) -> str:
        src = self.source
        if src.is_kineto(node):
            return shown(src.kt.name(node))
        return src.row_label(node).plain

    # ------------------------------------------------------------------ search
    def run_search(self, query: str, *, select: bool = True) -> None:
        try:
            nodes, positions = self.source.find(query)
        except ValueError as exc:
            show_note(self, str(exc), severity="error")
            return
        self.set_matches(nodes, positions, query)
        self.matches_fixed = False
        self.walk = "search"
        if self.source.filtered:
            self._set_filter(True)
        self.update_status()
        if not nodes.size:
            show_note(self, f"no match for {query!r}", severity="warning")
            return
        if select:
            self._goto_match(0, inclusive=True)

    def show_matches(self, nodes: np.ndarray, label: str, noun: str, first: int | None = None, *,
                     order: str = "tree", span: tuple[float, float] | None = None, filter_tree: bool = False) -> None:
        """Make ``nodes`` the match list, as a search would (the status line and ``n``/``N``
        use it: a summary or memory row's occurrences, a finding's evidence, a query's result)
        and select ``first`` (default: the first in ``order``).  ``label`` names them, ``noun``
        says what each is; ``order`` ``longest``: Enter lands on the longest and ``n``/``N`` go
        down by duration (``o`` switches to time order); ``span`` (µs): what the timeline shows
        with them (an idle gap); ``filter_tree``: and show only the subtrees holding them, as
        ``f`` does (a query's result)."""
        src = self.source
        positions = np.array([src.tree_position(int(n)) for n in nodes.tolist()], dtype=np.float64)
        keep = positions >= 0
        nodes, positions = nodes[keep], positions[keep]
        if not nodes.size:
            show_note(self, f"{label}: no {noun} in the tree", severity="warning")
            return
        o = np.argsort(positions, kind="stable")
        self.set_matches(nodes[o], positions[o], label, order=order, fixed=True, span=span, noun=noun)
        self.matches_fixed = True
        self.walk = "search"  # n/N cycle these (not a critical path's segments)
        if src.filtered or filter_tree:
            self._set_filter(True)
        self.update_status()
        self.op_tree.focus()
        # after the browser screen is back on and laid out, so the tree can scroll to the row
        if first is None and order != "tree":
            self.call_after_refresh(self.goto_first_match)
            return
        at = np.flatnonzero(self.matches == first) if first is not None else np.zeros(0, np.int64)
        i = int(at[0]) if at.size else 0
        self.call_after_refresh(self.select, int(self.matches[i]), self.match_note(i, int(self.matches.size)))

    def show_occurrences(self, result: tuple | None, *, first_given: bool = False, longest_first: bool = False) -> None:
        """:meth:`show_matches` of ``result`` = (nodes, label[, span]), a summary row's or a
        memory row's occurrences: the first one in tree order, or (``first_given``) the first
        one given (the memory screen's Enter), or (``longest_first``) the longest, ``n``/``N``
        going down by duration (the summaries' Enter).  ``span`` (µs): an idle gap's."""
        if result is None or not self.is_attached:
            return
        nodes, label, *rest = result
        self.show_matches(nodes, label, "occurrence", first=int(nodes[0]) if first_given and nodes.size else None,
                          order="longest" if longest_first else "tree", span=rest[0] if rest else None)

    def match_note(self, i: int, n: int) -> Text:
        """The detail pane's note for the ``i``-th of ``n`` matches in the current order."""
        ml = self.match_list
        if ml is not None and ml.fixed and ml.span is not None:  # an idle gap: the event before it is selected
            return Text(f"{ml.label}: after this GPU event (tinted in the timeline)", style="bold")
        if ml is not None and ml.fixed and ml.order != "tree":
            what = f"{ml.label}: {ml.noun or 'match'} {i + 1} of {n:,}"
            if ml.order == "longest":
                what += f" ({units.duration_short_us(ml.duration_of(i))}), longest first"
            other = "time order" if ml.order == "longest" else "longest first"
            return Text(f"{what}   (n next, N previous, o {other})", style="bold")
        return super().match_note(i, n)

    def action_match_order(self) -> None:
        """``o``: n/N step through the matches longest first, or in time order."""
        if not self.matches.size:
            show_note(self, "no matches to order: search (/) or Enter on a summaries row (s)", severity="warning")
            return
        order = self.current_matches().toggle_order()
        self.update_status()
        show_note(self, f"n/N: {ORDER_WORDS[order]}")

    def action_next_match(self) -> None:
        """``n``: the next search match, or (after ``P``, until the next search) the next segment of the path."""
        if self.walk == "path" and self.source.path is not None:
            self.walk_path(1)
        else:
            self._goto_match(1)

    def action_prev_match(self) -> None:
        if self.walk == "path" and self.source.path is not None:
            self.walk_path(-1)
        else:
            self._goto_match(-1)

    def action_filter(self) -> None:
        if not self.source.filtered and (self.query_text is None or not self.matches.size):
            show_note(self, "filter shows the subtrees holding search matches: search first (/)", severity="warning")
            return
        self._set_filter(not self.source.filtered)

    def _set_filter(self, on_: bool) -> None:
        current = self.current
        self.source.set_filter(self.matches if on_ else None)
        tree = self.op_tree
        tree.refresh_rows()
        if current is not None and tree.cursor_node != current:
            if not tree.select_node(current) and on_ and self.matches.size:
                self._goto_match(0, inclusive=True)
        self.update_status()

    def action_clear(self) -> None:
        """Esc: the search and the filter together, else a critical path (being computed, or its marks)."""
        if self.source.filtered or self.query_text is not None:
            if self.source.filtered:
                self._set_filter(False)
            self.clear_matches()
            if self.path_state() is not None:
                self.walk = "path"
            self.update_status()
            self.refresh_bindings()
        else:
            self.clear_path()
        self.detail.clear_note()  # a "/ match N of M" (or jump) note is stale once cleared

    # ------------------------------------------------------------------ view toggles
    def action_toggle_python(self) -> None:
        src = self.source
        if src.kt is None:
            return
        if is_standalone(src.kt):
            show_note(self, "a driver-call trace has no python_function rows")
            return
        current = self.current
        src.set_hide_python(not src.hide_python)
        if self.query_text is not None and not self.matches_fixed:
            self.set_matches(*src.find(self.query_text), self.query_text, order=self.match_order)
            if src.filtered:
                src.set_filter(self.matches)
        self.op_tree.refresh_rows()
        if current is not None:
            self.op_tree.select_node(src.visible_ancestor(current))
        self.update_status()
        show_note(self, "python_function rows " + ("hidden" if src.hide_python else "shown"))

    def action_focus_timeline(self) -> None:
        timeline = self.timeline
        if timeline.has_focus or not timeline.display:
            self.op_tree.focus()
        else:
            timeline.focus()

    def action_toggle_cpu_lanes(self) -> None:
        timeline = self.timeline
        timeline.set_show_cpu(not timeline.show_cpu)
        timeline.display = bool(timeline.lane_ids)
        self.refresh_bindings()  # t applies only while the timeline shows

    def action_zoom(self, factor: float) -> None:
        self.timeline.zoom_keep_selection(float(factor))

    def action_zoom_selection(self) -> None:
        if not self.timeline.zoom_to_selection():
            show_note(self, "the selection has no time span", severity="warning")

    def action_summaries(self) -> None:
        """``s``: the summary tables (:mod:`~tracetui.ui.summaries.summaries_screen`); Enter there
        selects a row's occurrences."""
        if self.linked.kineto is None:
            show_note(self, "the summaries need a Kineto trace", severity="warning")
            return
        open_summaries(self)

    def action_raw_args(self) -> None:
        """``a``: every arg of the selected event (:mod:`~tracetui.ui.detail.raw_args_screen`)."""
        node = self.current
        k = self.source.kineto_of(node) if node is not None else -1
        if k < 0 or self.linked.kineto is None:
            show_note(self, "no Kineto event on this row (an ET op without a linked event)", severity="warning")
            return
        kt = self.linked.kineto
        self.app.push_screen(RawArgsScreen(f"Every arg of {self._label_of(k)}", event_sections(kt, k)))

    def action_warnings(self) -> None:
        self.app.push_screen(WarningsScreen(self.linked.all_warnings()))

    # ------------------------------------------------------------------ export
    def action_export(self) -> None:
        """``e``: export the selected subtree (the whole trace from a lane or ET row)."""
        if self.linked.kineto is None:
            show_note(self, "export needs a Kineto trace", severity="warning")
            return
        node = self.current
        k = self.source.kineto_of(node) if node is not None else -1
        root = k if k >= 0 else None
        kt = self.linked.kineto
        if root is None:
            what, stem = "the whole trace", trace_file_stem(kt.path)
        else:  # named as the tree shows it: op (or lane) name and the op's External id
            what = f"the subtree of {self._label_of(root)}"
            stem = op_file_stem(kt.name(root), int(kt.external_id[root]) if root < kt.n_events else None)
        app = self.app  # the folder and the python-frames choice of the last export (any trace, any rank)
        app.push_screen(ExportDialog(what, stem, app.export_folder, app.export_python_frames),
                        partial(self._export_chosen, root))

    def _export_chosen(self, root: int | None, choice: tuple[str, str, bool] | None) -> None:
        if choice is None:
            return
        fmt, path, python_frames = choice
        self.app.export_folder = os.path.dirname(path)
        self.app.export_python_frames = python_frames
        self._run_export(root, fmt, path, python_frames)

    @work(thread=True, group="export")
    def _run_export(self, root: int | None, fmt: str, path: str, python_frames: bool = False) -> None:
        from ...export import empty_note, write_export

        export_fmt, by = export_format(fmt)
        try:
            written = write_export(self.linked, root, export_fmt, path, self.detail_model.categorizer,
                                   python_frames=python_frames, by=by)
        except (TraceError, OSError, ValueError) as exc:
            self.app.call_from_thread(show_note, self, f"export failed: {exc}", severity="error")
            return
        note = "" if written else empty_note(export_fmt, by)
        self.app.call_from_thread(self._exported, fmt, os.path.abspath(path), note)

    def _exported(self, fmt: str, path: str, empty: str = "") -> None:
        """Say where the export went: a toast, and (lasting past the toast) the status line
        and a note in the detail pane, both with the absolute ``path``; ``empty``: why the file
        holds nothing (folded stacks of a row without such time), said in both and the toast a warning."""
        self.last_export = path
        self.update_status()
        said = f" ({empty})" if empty else ""
        if self.current is not None:
            self.detail.show(self.current, Text.assemble(("exported ", "bold"), fmt, " to ", (path, "green"), said))
        show_note(self, f"exported {fmt} to {path}{said}", title="export",
                  severity="warning" if empty else "information")


def preload_palette(_screen: Any, _app: Any) -> None:
    """Import Textual's command palette (about 50 ms of imports) in the background worker, so
    the first ``ctrl+p`` only builds its screen (bench/bench_ui.py: 154 ms wall on its first
    open before)."""
    import textual.command  # noqa: F401
