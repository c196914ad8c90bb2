"""The terminal trace browser: ``run_app(paths)`` loads a trace in a worker behind a
progress screen, then shows the op tree, the detail pane and the stream timeline.

Two-way jumps: ``>`` on an op (or runtime call) goes to its first GPU event and, pressed
again, cycles through that op's GPU events in start order; ``<`` on a kernel, memcpy or
memset goes back to the innermost cpu_op that launched it (with an ET loaded, the linked
ET op is named too).  Both work from the tree and from the focused timeline.
"""

from __future__ import annotations

import os
import sys
from functools import partial
from typing import ClassVar, Iterable

import numpy as np
from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Container
from textual.screen import Screen
from textual.widgets import Footer, Input
from textual.worker import get_current_worker

from ..crash import EXIT_INTERNAL_ERROR, CrashReport
from ..crash import report as report_crash
from ..errors import LoadCancelled, TraceError
from ..model import LinkedTrace
from .detail import DetailBuilder, DetailPane
from .export_dialog import ExportDialog, op_file_stem, trace_file_stem
from .help import HelpScreen, live_bindings, widget_bindings
from .keys import APP_BINDINGS, MAIN_BINDINGS, JumpCycle, JumpError, gpu_jump, launching_op, match_index
from .loading import EXIT_LOAD_CANCELLED, LoadDone, LoadFailed, LoadingScreen, LoadProgress, ProgressRelay
from .notify import show_note
from .screens import ErrorDialog, SearchBar, WarningsScreen
from .source import TraceTreeSource
from .status import StatusLine, state_parts, trace_parts
from .textual_guards import install_guards
from .timeline_view import TraceTimeline
from .vtree import VirtualTree

install_guards()

#: Exit status of ``run_app`` when the initial load failed and the user quit.
EXIT_LOAD_FAILED = 2


class TraceTree(VirtualTree):
    """The op tree (a VirtualTree over :class:`TraceTreeSource`)."""


class MainScreen(Screen):
    """Tree left, detail right (below it when narrow), timeline at the bottom."""

    BINDINGS: ClassVar[list[BindingType]] = MAIN_BINDINGS

    def __init__(self, linked: LinkedTrace, source: TraceTreeSource, builder: DetailBuilder) -> None:
        super().__init__()
        self.linked = linked
        self.source = source
        self.builder = builder
        self.current: int | None = None
        self.cycle: JumpCycle | None = None
        self.query_text: str | None = None
        self.matches = np.empty(0, dtype=np.int64)
        self.match_ranks = np.empty(0)
        self._notes: dict[int, Text] = {}
        self._status_fixed: list | None = None  # the trace parts of the status line (they never change)
        self.last_export: str | None = None  # absolute path of the last file written by e
        self._sync_pending = False

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Container(id="body"):
            yield TraceTree(self.source, id="tree")
            yield DetailPane(self.builder, id="detail")
        yield SearchBar(placeholder="search names: text, or /regex/   Enter: go   Esc: cancel", id="search")
        yield TraceTimeline(self.source, id="timeline")
        yield Footer()

    @property
    def op_tree(self) -> TraceTree:
        return self.query_one("#tree", TraceTree)

    @property
    def detail(self) -> DetailPane:
        return self.query_one("#detail", DetailPane)

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
        self.update_status()

    # ------------------------------------------------------------------ status
    def status_parts(self) -> list:
        """The status line's parts (:mod:`.status`): the trace's, then the browser state's."""
        if self._status_fixed is None:
            self._status_fixed = trace_parts(self.linked)
        return self._status_fixed + state_parts(
            python_hidden=self.source.hide_python if self.source.kt is not None else None,
            query=self.query_text, n_matches=int(self.matches.size), filtered=self.source.filtered,
            exported=self.last_export)

    def status_text(self) -> Text:
        """The status line as drawn: fitted to one line of the status widget's width."""
        return self.query_one("#status", StatusLine).fitted()

    def update_status(self) -> None:
        """Give the status line the current parts; it fits them (again on every resize)."""
        self.query_one("#status", StatusLine).set_parts(self.status_parts())

    # ------------------------------------------------------------------ selection
    @on(VirtualTree.NodeHighlighted)
    def _on_highlight(self, event: VirtualTree.NodeHighlighted) -> None:
        event.stop()
        node = event.node
        self.current = node
        if self.cycle is not None and not (self.cycle.origin == node or
                                           int(self.cycle.events[self.cycle.index]) == node):
            self.cycle = None
        # Detail and timeline follow once the queued input is handled: holding a key
        # down renders the panes for the row the cursor stops on, not for every row.
        if not self._sync_pending:
            self._sync_pending = True
            self.call_later(self._sync_panes)

    def _sync_panes(self) -> None:
        self._sync_pending = False
        node = self.current
        note = self._notes.pop(node, None) if node is not None else None
        self._notes.clear()
        self.detail.show(node, note)
        self.timeline.show_selection(node)

    @on(TraceTimeline.EventSelected)
    def _on_timeline_pick(self, event: TraceTimeline.EventSelected) -> None:
        event.stop()
        self.select(event.node)

    def select(self, node: int, note: Text | None = None) -> bool:
        """Move the tree cursor to ``node`` (expanding its ancestors; clearing the filter if
        it hides the node).  False when the node cannot be shown."""
        tree = self.op_tree
        target = self.source.visible_ancestor(node)
        if note is not None:
            self._notes[target] = note
        if tree.cursor_node == target:
            self._notes.pop(target, None)
            self.current = target
            self.detail.show(target, note)
            self.timeline.show_selection(target)
            return True
        ok = tree.select_node(target)
        if not ok and self.source.filtered:
            self._set_filter(False)
            ok = tree.select_node(target)
        if not ok:
            self._notes.pop(target, None)
            show_note(self, f"cannot show node {node} in the tree", severity="warning")
        return ok

    # ------------------------------------------------------------------ jumps
    def action_jump_gpu(self) -> None:
        """``>``: first GPU event of the selected op; again: the op's next GPU event."""
        if self.current is None:
            return
        try:
            cyc = gpu_jump(self.source, self.current, self.cycle)
        except JumpError as exc:
            show_note(self, str(exc), severity="warning")
            return
        self.cycle = cyc
        note = Text(f"> GPU event {cyc.index + 1} of {cyc.events.size} under ", style="bold")
        note.append(self._label_of(cyc.origin), style="cyan")
        note.append("   (> next, < back)", style="dim")
        self.select(cyc.target, note)

    def action_jump_op(self) -> None:
        """``<``: from a kernel/memcpy/memset (or runtime call) to the op that launched it;
        with an ET loaded the linked ET op is named in the detail pane and a notification."""
        src, kt = self.source, self.source.kt
        try:
            op, k, via = launching_op(src, self.current if self.current is not None else -1)
        except JumpError as exc:
            show_note(self, str(exc), severity="warning")
            return
        note = Text("< launched ", style="bold")
        name = self._label_of(k)
        note.append(name if len(name) <= 60 else name[:59] + "…", style="green")
        if via >= 0:
            note.append(" via ")
            note.append(kt.name(via), style="yellow")
        message = Text(f"launching op: {kt.name(op)}")
        if src.et is not None:
            pos = src.et_pos(op)
            if pos >= 0:
                ref = self.builder.et_ref(pos)
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
            return src.kt.name(node)
        return src.row_label(node).plain

    # ------------------------------------------------------------------ search
    def action_search(self) -> None:
        bar = self.query_one(SearchBar)
        bar.value = ""
        bar.display = True
        bar.focus()

    @on(Input.Submitted, "#search")
    def _on_search(self, event: Input.Submitted) -> None:
        event.stop()
        bar = self.query_one(SearchBar)
        query = event.value
        bar.display = False
        self.op_tree.focus()
        if not query.strip():
            return
        self.run_search(query)

    @on(SearchBar.Cancelled)
    def _on_search_cancel(self, event: SearchBar.Cancelled) -> None:
        event.stop()
        bar = self.query_one(SearchBar)
        bar.display = False
        self.op_tree.focus()

    def run_search(self, query: str, *, select: bool = True) -> None:
        try:
            nodes, ranks = self.source.find(query)
        except ValueError as exc:
            show_note(self, str(exc), severity="error")
            return
        self.query_text = query
        self.matches, self.match_ranks = nodes, ranks
        if self.source.filtered:
            self._set_filter(True)
        self.update_status()
        if not nodes.size:
            show_note(self, f"no match for {query!r}", severity="warning")
            return
        if select:
            self._goto_match(0, inclusive=True)

    def _cursor_rank(self) -> float:
        node = self.current
        return self.source.rank(node) if node is not None else -1.0

    def _goto_match(self, direction: int, *, inclusive: bool = False) -> None:
        if self.query_text is None:
            show_note(self, "no search yet: press / to search", severity="warning")
            return
        n = self.matches.size
        if not n:
            show_note(self, f"no match for {self.query_text!r}", severity="warning")
            return
        i = match_index(self.match_ranks, self._cursor_rank(), direction, inclusive=inclusive)
        note = Text(f"/ match {i + 1} of {n:,} for {self.query_text!r}   (n next, N previous)", style="bold")
        self.select(int(self.matches[i]), note)

    def action_next_match(self) -> None:
        self._goto_match(1)

    def action_prev_match(self) -> None:
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
        if self.source.filtered:
            self._set_filter(False)
        elif self.query_text is not None:
            self.query_text = None
            self.matches = np.empty(0, dtype=np.int64)
            self.match_ranks = np.empty(0)
            self.update_status()
        self.detail.clear_note()  # a "/ match N of M" (or jump) note is stale once cleared

    # ------------------------------------------------------------------ view toggles
    def action_toggle_python(self) -> None:
        src = self.source
        if src.kt is None:
            return
        current = self.current
        src.set_hide_python(not src.hide_python)
        if self.query_text is not None:
            self.matches, self.match_ranks = src.find(self.query_text)
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

    def action_toggle_detail(self) -> None:
        detail = self.detail
        detail.display = not detail.display

    def action_maximize(self) -> None:
        if self.maximized is not None:
            self.minimize()
        elif self.focused is not None:
            self.maximize(self.focused, container=False)

    def action_toggle_cpu_lanes(self) -> None:
        timeline = self.timeline
        timeline.set_show_cpu(not timeline.show_cpu)
        timeline.display = bool(timeline.lane_ids)

    def action_zoom(self, factor: float) -> None:
        self.timeline.zoom_keep_selection(float(factor))

    def action_pan(self, fraction: float) -> None:
        self.timeline.pan(float(fraction))

    def action_zoom_selection(self) -> None:
        if not self.timeline.zoom_to_selection():
            show_note(self, "the selection has no time span", severity="warning")

    def action_fit_all(self) -> None:
        self.timeline.fit_all()

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
        self.app.push_screen(ExportDialog(what, stem), partial(self._export_chosen, root))

    def _export_chosen(self, root: int | None, choice: tuple[str, str] | None) -> None:
        if choice is None:
            return
        fmt, path = choice
        self._run_export(root, fmt, path)

    @work(thread=True, group="export")
    def _run_export(self, root: int | None, fmt: str, path: str) -> None:
        from ..export import write_export

        try:
            write_export(self.linked, root, fmt, path, self.builder.categorizer)
        except (TraceError, OSError, ValueError) as exc:
            self.app.call_from_thread(show_note, self, f"export failed: {exc}", severity="error")
            return
        self.app.call_from_thread(self._exported, fmt, os.path.abspath(path))

    def _exported(self, fmt: str, path: str) -> None:
        """Say where the export went: a toast, and (lasting past the toast) the status line
        and a note in the detail pane, both with the absolute ``path``."""
        self.last_export = path
        self.update_status()
        if self.current is not None:
            self.detail.show(self.current, Text.assemble(("exported ", "bold"), fmt, " to ", (path, "green")))
        show_note(self, f"exported {fmt} to {path}", title="export")


class TraceApp(App[int]):
    """tracetui's Textual application over one trace (optionally with its ET)."""

    CSS_PATH = "app.tcss"
    TITLE = "tracetui"
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (110, "-wide")]
    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-short"), (34, "-tall")]
    BINDINGS: ClassVar[list[BindingType]] = APP_BINDINGS

    def __init__(self, paths: list[str], *, use_cache: bool = True, categorizer=None) -> None:
        super().__init__()
        self.paths = list(paths)
        self.use_cache = use_cache
        self.categorizer = categorizer
        self.linked: LinkedTrace | None = None
        self.load_failed = False
        self.crash: CrashReport | None = None
        self.load_cancelled = False

    # ------------------------------------------------------------------ loading
    def on_mount(self) -> None:
        self.push_screen(LoadingScreen(self.paths))
        # start the worker once the loading screen is painted: the first frame comes first
        self.call_after_refresh(self.load, self.paths)

    @work(thread=True, exclusive=True, group="load")
    def load(self, paths: list[str]) -> None:
        """Load, link and index the traces (worker thread); posts :class:`LoadProgress`
        while it runs, then :class:`LoadDone` or :class:`LoadFailed`; stops quietly when
        cancelled (:meth:`action_cancel_load`)."""
        from ..cache import load_cached

        relay = ProgressRelay(self, get_current_worker())
        try:
            linked = load_cached(paths, use_cache=self.use_cache, progress=relay)
            relay("indexing the op tree", 0.995)
            source = TraceTreeSource(linked)
            categorizer = self.categorizer
            if categorizer is None:
                categorizer = _default_categorizer()
            relay("showing the browser", 1.0)
        except LoadCancelled:
            return
        except TraceError as exc:
            self.post_message(LoadFailed(str(exc)))
            return
        except MemoryError:
            self.post_message(LoadFailed(f"{paths[0]}: not enough memory to load this trace"))
            return
        except Exception as exc:  # a bug must still end in the dialog, not a traceback
            self.post_message(LoadFailed(f"{paths[0]}: internal error while loading: {type(exc).__name__}: {exc}"))
            return
        self.post_message(LoadDone(linked, source, categorizer))

    def on_load_progress(self, message: LoadProgress) -> None:
        screen = self.screen
        if isinstance(screen, LoadingScreen):
            screen.set_progress(message.message, message.fraction)

    def on_load_failed(self, message: LoadFailed) -> None:
        if not self.load_cancelled:
            self._load_failed(message.message)

    def on_load_done(self, message: LoadDone) -> None:
        if not self.load_cancelled:
            self._loaded(message.linked, message.source, message.categorizer)

    def action_cancel_load(self) -> None:
        """``Esc`` on the loading screen: stop the load (at its next progress report) and quit."""
        if not isinstance(self.screen, LoadingScreen):
            return
        self.load_cancelled = True
        self.workers.cancel_group(self, "load")
        self.exit(return_code=EXIT_LOAD_CANCELLED)

    def _handle_exception(self, error: Exception) -> None:
        """The browser's error boundary: Textual calls this for any exception that a handler,
        a worker or a render did not catch.  The traceback goes to a file
        (:mod:`tracetui.crash`) instead of the screen; :func:`run_app` prints the one-line
        report and returns :data:`~tracetui.crash.EXIT_INTERNAL_ERROR`.  (Tests still see the
        exception: Textual keeps it for ``run_test`` to re-raise.)"""
        if self.crash is None:
            try:
                where = type(self.screen).__name__
            except Exception:  # no screen yet, or the stack is being torn down
                where = "the browser"
            self.crash = report_crash(error, f"browsing ({where})", self.paths)
        super()._handle_exception(error)
        self._exit_renderables.clear()  # saved to the crash file; never dumped on the terminal
        self._return_code = EXIT_INTERNAL_ERROR

    async def on_event(self, event: events.Event) -> None:
        # Keys typed ahead of a quit arrive after the last screen is gone; Textual would look
        # up the (missing) screen for them and raise ScreenStackError while exiting.
        if isinstance(event, events.Key) and not self.screen_stack:
            return
        await super().on_event(event)

    def _loaded(self, linked: LinkedTrace, source: TraceTreeSource, categorizer) -> None:
        self.linked = linked
        self.load_failed = False
        self.sub_title = linked.title
        self.switch_screen(MainScreen(linked, source, DetailBuilder(source, categorizer)))

    def _load_failed(self, message: str) -> None:
        self.load_failed = True
        self.push_screen(ErrorDialog(message), self._error_choice)

    def _error_choice(self, choice: tuple[str, str] | None) -> None:
        action, path = choice or ("quit", "")
        if action == "open" and path:
            self.paths = [os.path.expanduser(path)]
            screen = self.screen
            if isinstance(screen, LoadingScreen):
                screen.paths = self.paths
            if isinstance(screen, LoadingScreen):
                screen.set_progress("starting", 0.0)
            self.load(self.paths)
        else:
            self.action_quit_app()

    def action_quit_app(self) -> None:
        self.exit(EXIT_LOAD_FAILED if self.load_failed and self.linked is None else 0,
                  return_code=EXIT_LOAD_FAILED if self.load_failed and self.linked is None else 0)

    async def action_quit(self) -> None:
        self.action_quit_app()

    # ------------------------------------------------------------------ help
    def help_sections(self) -> list[tuple[str, list[tuple[str, str, str]]]]:
        """Help content from the live bindings of the focused widget chain, the screen and
        the app; then the keys of the panes that are not focused."""
        screen = self.screen
        sections = [("Active now (focused pane, browser, application)", live_bindings(screen))]
        if isinstance(screen, MainScreen):
            focused = self.focused
            for widget, title in ((screen.op_tree, "Op tree (focus: t / tab)"),
                                  (screen.timeline, "Timeline (focus: t)")):
                if widget is not focused and widget.display:
                    sections.append((title, widget_bindings(widget)))
        return sections

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.help_sections()))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help: keys", "Show every key binding", self.action_help)
        if isinstance(screen, MainScreen):
            seen = set()
            for binding in screen._bindings.key_to_bindings.values():
                for b in binding:
                    if b.action in seen:
                        continue
                    seen.add(b.action)
                    yield SystemCommand(b.description, f"key {self.get_key_display(b)}",
                                        partial(self._run_browser_action, screen, b.action))

    async def _run_browser_action(self, screen: Screen, action: str) -> None:
        """A palette command runs after the palette closes: by then the browser screen may be
        gone (the app is quitting), and its widgets with it."""
        if screen.is_attached and self.screen is screen:
            await screen.run_action(action)


def _default_categorizer():
    from ..analysis.categories import get_categorizer

    try:
        return get_categorizer()
    except (TraceError, ValueError, OSError):
        return None


def run_app(paths: list[str], use_cache: bool = True) -> int:
    """Open the browser on ``paths`` (one Kineto trace, an ET, or both in any order).

    Returns the exit status: 0, :data:`EXIT_LOAD_FAILED` when the initial load failed
    and the user quit from the error dialog, or :data:`~tracetui.crash.EXIT_INTERNAL_ERROR`
    after a bug (its one-line report is printed on stderr, the traceback saved to a file).
    """
    app = TraceApp(paths, use_cache=use_cache)
    app.run()
    if app.crash is not None:
        print(app.crash.line(), file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    if app.load_cancelled:
        return EXIT_LOAD_CANCELLED
    return int(app.return_code or 0)
