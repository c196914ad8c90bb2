"""The terminal trace browser: ``run_app(paths)`` loads a trace in a worker behind a
progress screen, then shows the op tree, the detail pane and the stream timeline;
``run_job_app`` does it for a whole job, ``run_diff_app`` for two runs compared (the diff
browser, :mod:`tracetui.ui.diff.diff_screen`).

The first frame comes first: this module imports only what the loading screen needs
(Textual's app, a label and a progress bar; no numpy, no pandas, no trace model).  The
browser's screens, the loader and the trace model are imported by the load worker once the
loading screen is painted (``tests/ui/test_ui_first_minutes.py`` holds it;
``bench/bench_ui.py`` times it).

Two-way jumps: ``>`` on an op (or runtime call) goes to its first GPU event and, pressed
again, cycles through that op's GPU events in start order; ``<`` on a kernel, memcpy or
memset goes back to the innermost cpu_op that launched it (with an ET loaded, the linked
ET op is named too).  Both work from the tree and from the focused timeline.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from functools import partial
from typing import TYPE_CHECKING, ClassVar, Iterable

from textual import events, work
from textual.app import App, SystemCommand
from textual.binding import BindingType
from textual.screen import Screen
from textual.worker import get_current_worker

from ..config import Settings, load_settings
from ..crash import EXIT_INTERNAL_ERROR, CrashReport
from ..crash import report as report_crash
from ..errors import LoadCancelled, TraceError, one_line
from ..lazy import lazy_names
from .bindings import APP_BINDINGS
from .browser.loading_screen import (
    EXIT_LOAD_CANCELLED,
    LoadDone,
    LoadFailed,
    LoadingScreen,
    LoadProgress,
    ProgressRelay,
)
from .follow.follow_hooks import FollowHooks
from .key_order import KeyRouter
from .notify import show_note
from .shown import top_screen
from .textual_guards import install_guards

if TYPE_CHECKING:
    from ..diff.runs import DiffRequest
    from ..follow.follower import FollowRequest
    from ..session import LinkedTrace
    from .browser.main_screen import MainScreen
    from .diff.diff_screen import DiffScreen
    from .tree.trace_tree import TraceTree
    from .view.diff_session import DiffSession
    from .view.trace_row_source import TraceRowSource

install_guards()

#: Exit status of ``run_app`` when the initial load failed and the user quit.
EXIT_LOAD_FAILED = 2

__all__ = ["EXIT_LOAD_FAILED", "DiffScreen", "MainScreen", "TraceApp", "TraceTree", "run_app", "run_diff_app",
           "run_follow_app", "run_job_app"]

#: names this module offers but imports only when asked for (the first frame does not need them)
_LAZY = {"MainScreen": ".browser.main_screen", "TraceTree": ".tree.trace_tree", "DiffScreen": ".diff.diff_screen"}


__getattr__ = lazy_names(__name__, _LAZY, __package__)


def _main_screen_class() -> type:
    from .browser.main_screen import MainScreen

    return MainScreen


class TraceApp(FollowHooks, App[int]):
    """tracetui's Textual application over one trace (optionally with its ET)."""

    CSS_PATH = "app.tcss"
    TITLE = "tracetui"
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (110, "-wide")]
    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-short"), (34, "-tall")]
    BINDINGS: ClassVar[list[BindingType]] = APP_BINDINGS

    def __init__(self, paths: list[str], *, use_cache: bool = True, categorizer=None,
                 job_inputs: list[str] | None = None, workers: int | None = None,
                 scheduler: str | None = None, settings: Settings | None = None,
                 diff: DiffRequest | None = None, follow_links: bool = False,
                 follow: FollowRequest | None = None, live: float | None = None) -> None:
        super().__init__()
        #: theme and keymap (config.toml: tracetui/config.py); a bad file raised TraceError already
        self.settings = settings if settings is not None else load_settings()
        self._keys = KeyRouter(self, self._route_key)
        self.exiting = False  #: set by exit(): keys typed after it are dropped
        self.paths = list(paths)
        #: a whole job (docs/jobs.md): its inputs, the opened Job, the rank on screen
        self.job_inputs = list(job_inputs) if job_inputs else None
        self.job_options = {"workers": workers, "scheduler": scheduler, "follow_links": follow_links}
        self.job = None
        #: the job's cross-rank tables, computed once (ui/view/once.py); set when the job opens
        self.job_once = None
        self.rank: int | None = None
        #: the export dialog offers the folder and the python-frames choice of the last export
        self.export_folder: str | None = None
        self.export_python_frames = False
        #: the findings of the trace or job on screen (ui/findings/findings_run.py), computed once
        self.findings_run = None
        #: the critical path shown (``P``: ui/view/path_marks.PathState); kept across a job's ranks
        self.critical = None
        #: two runs compared (``tracetui diff A B``, docs/diff.md): the request, then what the diff browser shows
        self.diff_request = diff
        self.diff_session: DiffSession | None = None
        self._pending_select: tuple[int, object] | None = None
        self.use_cache = use_cache
        self.categorizer = categorizer
        self.linked: LinkedTrace | None = None
        self.load_failed = False
        self.crash: CrashReport | None = None
        self.load_cancelled = False
        #: set once the browser is painted; the load worker then writes the cache entry
        self._browser_shown = threading.Event()
        #: SQL over what is shown (ui/query): the DuckDB session and this session's queries
        self.query_state = None
        #: a run followed (``tracetui follow DIR``), a growing file (``--follow``): ui/follow/follow_hooks.py
        self.init_follow(follow, live)

    # ------------------------------------------------------------------ settings
    def _apply_settings(self) -> None:
        """The theme and the keymap of ``config.toml``; an unknown theme or binding id is said
        in a toast once the browser is on screen (never silently ignored), the rest applies."""
        theme, keymap = self.settings.theme, self.settings.keymap
        if theme:
            if theme in self.available_themes:
                self.theme = theme
            else:
                self._config_notes.append(f"config: unknown theme {theme!r} "
                                          f"(known: {', '.join(sorted(self.available_themes))})")
        if keymap:
            unknown = sorted(set(keymap) - binding_ids())
            if unknown:
                self._config_notes.append(f"config: no binding has the id {', '.join(map(repr, unknown))} "
                                          "(? lists the ids)")
            self.set_keymap({k: v for k, v in keymap.items() if k not in unknown})

    def _show_config_notes(self) -> None:
        for note in self._config_notes:
            show_note(self, note, severity="warning", timeout=10)
        self._config_notes.clear()

    def handle_bindings_clash(self, clashed_bindings: set, node) -> None:
        """Two bindings given one key by the keymap: say so once per clash."""
        clash = tuple(sorted(f"{b.id or b.action} ({b.key})" for b in clashed_bindings))
        if clash in self._clashes:
            return
        self._clashes.add(clash)
        show_note(self, "config: keymap gives one key to " + " and ".join(clash), severity="warning", timeout=10)

    # ------------------------------------------------------------------ loading
    def on_mount(self) -> None:
        self._clashes: set[tuple[str, ...]] = set()
        self._config_notes: list[str] = []
        self._apply_settings()
        if self.start_following():
            return
        if self.job_inputs:
            self.push_screen(LoadingScreen(self.job_inputs))
            self.call_after_refresh(self.load_job, self.job_inputs)
            return
        if self.diff_request is not None:
            req = self.diff_request
            self.push_screen(LoadingScreen([*req.paths_a, *req.paths_b]))
            self.call_after_refresh(self.load_diff, req)
            return
        self.push_screen(LoadingScreen(self.paths))
        # start the worker once the loading screen is painted: the first frame comes first
        self.call_after_refresh(self.load, self.paths)

    @work(thread=True, exclusive=True, group="job")
    def load_job(self, inputs: list[str]) -> None:
        """Open a whole job (every rank summarised in worker processes), then show its first
        loaded rank; :class:`LoadFailed` when no rank could be loaded."""
        from ..job import open_job

        relay = ProgressRelay(self, get_current_worker())
        try:
            job = open_job(inputs, use_cache=self.use_cache, progress=relay, **self.job_options)
        except LoadCancelled:
            return
        except TraceError as exc:
            self.post_message(LoadFailed(str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 -- a bug must still end in the dialog, not a traceback
            self.post_message(LoadFailed(f"{inputs[0]}: internal error while opening the job: "
                                         f"{type(exc).__name__}: {exc}"))
            return
        ok = [r for r in job.ranks if job.results[r].ok]
        if not ok:
            self.post_message(LoadFailed(f"{inputs[0]}: no rank of the job could be loaded"
                                         + (f" ({job.warnings[0]})" if job.warnings else "")))
            return
        self.call_from_thread(self._job_opened, job, ok[0])

    def _job_opened(self, job, rank: int) -> None:
        from .view.once import Once

        self.job = job
        self.job_once = Once()
        self.show_rank(rank)

    def show_rank(self, rank: int, select: tuple[int, object] | None = None) -> None:
        """Show ``rank`` of the job (loaded from the cache the job's workers filled), then
        select ``select`` = (Kineto node, note) there.  The rank shown before is dropped."""
        gc.unfreeze()  # the rank shown before can be collected again (see _freeze_objects)
        res = self.job.results[rank]
        self.rank = rank
        self._pending_select = select
        self.paths = [res.kineto] + ([res.et] if res.et else [])
        screen = self.screen
        if isinstance(screen, LoadingScreen):
            screen.set_progress(f"rank {rank}", 0.0)
        else:
            self.switch_screen(LoadingScreen(self.paths))
        self.call_after_refresh(self.load, self.paths)

    @work(thread=True, exclusive=True, group="load")
    def load(self, paths: list[str]) -> None:
        """Load, link and index the traces (worker thread); posts :class:`LoadProgress`
        while it runs, then :class:`LoadDone` or :class:`LoadFailed`; stops quietly when
        cancelled (:meth:`action_cancel_load`)."""
        relay = ProgressRelay(self, get_current_worker())
        pending: list = []  # the cache write, run once the browser has what it shows
        try:
            from ..store.traces import load_cached  # the loader and the model: imported here, after the first frame

            linked = load_cached(paths, use_cache=self.use_cache, progress=relay, deferred_writes=pending)
            relay("indexing the op tree", 0.995)
            from .browser import main_screen  # noqa: F401 -- the browser's screen, ready when the load is done
            from .view.trace_row_source import TraceRowSource

            source = TraceRowSource(linked)
            if linked.kineto is not None:
                # the timeline's memory tracks and the detail pane's memory rows read the memory
                # model and its node index as the browser mounts: built here, not on the UI
                # thread (a 1 GB snapshot's 13.6M history entries: ~8 s of CPU for both, the
                # tracks ~0.15 s more)
                from ..analysis.memory import memory_model
                from ..analysis.memory_peak import node_index
                from .view.memory_track import memory_tracks

                relay("the memory model", 0.997)
                if memory_model(linked.kineto).n_rows:
                    node_index(linked.kineto)
                    memory_tracks(linked.kineto)
            categorizer = self.categorizer
            if categorizer is None:
                categorizer = _default_categorizer()
            relay("showing the browser", 1.0)
        except LoadCancelled:
            return
        except Exception as exc:  # a bug must still end in the dialog, not a traceback
            self._post_load_error(exc, paths[0])
            return
        shown = self._browser_shown = threading.Event()
        self.post_message(LoadDone(linked, source, categorizer))
        # the cache entry is written once the browser is painted: its encode and write
        # (0.1-0.25 s for a 216k-event trace) are off the path to the first navigable screen
        worker = get_current_worker()
        while pending and not shown.wait(0.05):
            if worker.is_cancelled:  # the app is closing (Textual cancels its workers)
                return
        for write in pending:
            write()

    def _post_load_error(self, exc: Exception, path: str) -> None:
        """The :class:`LoadFailed` of a load that raised ``exc``: bad input's one line, too
        little memory, or a bug (still the dialog, never a traceback)."""
        if isinstance(exc, TraceError):
            message = str(exc)
        elif isinstance(exc, MemoryError):
            message = f"{path}: not enough memory to load this trace"
        else:
            message = f"{path}: internal error while loading: {type(exc).__name__}: {exc}"
        self.post_message(LoadFailed(message))

    @work(thread=True, exclusive=True, group="load")
    def load_diff(self, request: DiffRequest) -> None:
        """Load both runs, diff them and build the diff browser's views (worker thread;
        :mod:`tracetui.ui.view.diff_session`), then show the diff browser."""
        relay = ProgressRelay(self, get_current_worker())
        try:
            from .diff import diff_screen  # noqa: F401 -- the diff browser, ready when the load is done
            from .view.diff_session import load_diff_session

            session = load_diff_session(request, relay)
            relay("showing the diff", 1.0)
        except LoadCancelled:
            return
        except Exception as exc:  # noqa: BLE001 -- the dialog, never a traceback
            self._post_load_error(exc, request.paths_a[0])
            return
        self.call_from_thread(self._diff_loaded, session)

    def _diff_loaded(self, session: DiffSession) -> None:
        from .diff.diff_screen import DiffScreen

        if self.load_cancelled or not self.follow_loading():
            return
        self.diff_session = session
        self.linked = session.sides["a"][0]
        self.load_failed = False
        self.sub_title = "diff"
        self.switch_screen((self.diff_class or DiffScreen)(session))
        self.call_after_refresh(self._browser_shown.set)
        self.call_after_refresh(self._show_config_notes)

    def on_load_progress(self, message: LoadProgress) -> None:
        screen = top_screen(self)
        if isinstance(screen, LoadingScreen):
            screen.set_progress(message.message, message.fraction)

    def on_load_failed(self, message: LoadFailed) -> None:
        if not self.load_cancelled:
            self._load_failed(message.message)

    def on_load_done(self, message: LoadDone) -> None:
        if not self.load_cancelled:
            self._loaded(message.linked, message.source, message.categorizer)

    def action_cancel_load(self) -> None:
        """``Esc`` on the loading screen: stop the load (at its next progress report) and quit
        (following a run: back to the cycles)."""
        if not isinstance(top_screen(self), LoadingScreen):
            return
        if self.follow_cancel_load():
            return
        self.load_cancelled = True
        self.workers.cancel_group(self, "load")
        self.workers.cancel_group(self, "job")
        self.exit(return_code=EXIT_LOAD_CANCELLED)

    def on_unmount(self) -> None:
        self.stop_following()
        if self.query_state is not None:
            self.query_state.close()
        gc.unfreeze()  # the app is done: what it froze (_freeze_objects) can be collected

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

    def exit(self, *args, **kwargs) -> None:
        self.exiting = True  # keys typed after the quit are dropped (on_event)
        super().exit(*args, **kwargs)

    def _keys_dropped(self) -> bool:
        """Keys typed ahead of a quit arrive while the screens are torn down (their widgets
        removed) or after the last screen is gone; Textual would look up the missing screen or
        widget for them (ScreenStackError, NoMatches).  So once the app exits, keys are dropped:
        those routed now, those held by the key router, and those a screen forwards back up."""
        return self.exiting or not self.screen_stack

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            if self._keys_dropped():
                return
            if not event.is_forwarded:
                await self._keys.key(event)  # in order: each after the keys before it (key_order.py)
                return
        await super().on_event(event)

    async def _route_key(self, event: events.Key) -> None:
        if self._keys_dropped():
            return
        await super().on_event(event)

    def _loaded(self, linked: LinkedTrace, source: TraceRowSource, categorizer) -> None:
        from .browser.main_screen import MainScreen
        from .view.trace_detail import TraceDetail

        if not self.follow_loading():
            return
        self.linked = linked
        self.load_failed = False
        if self.job is None:  # another file opened: its own path, if any, comes from P
            self.critical = None
        if self.job is not None:  # the job's warnings (missing ranks ...) show with the rank's own (w)
            from ..errors import LoadWarning

            linked.warnings += [LoadWarning("job", w) for w in self.job.warnings]
        self.sub_title = one_line(linked.title)
        job_rank = (self.rank, self.job.world_size) if self.job is not None and self.rank is not None else None
        select, self._pending_select = self._pending_select, None
        self.switch_screen((self.browser_class or MainScreen)(linked, source, TraceDetail(source, categorizer),
                                                              job_rank=job_rank, initial_select=select))
        self.call_after_refresh(self._browser_shown.set)
        self.call_after_refresh(self._show_config_notes)
        self.call_after_refresh(_freeze_objects)
        self.follow_loaded()

    def _load_failed(self, message: str) -> None:
        from .browser.error_dialog import ErrorDialog

        if self.follow_load_failed(message):
            return
        self.load_failed = True
        if self.diff_request is not None:
            self.push_screen(ErrorDialog(message, "Could not compare the runs", can_open=False), self._error_choice)
            return
        self.push_screen(ErrorDialog(message), self._error_choice)

    def _error_choice(self, choice: tuple[str, str] | None) -> None:
        action, path = choice or ("quit", "")
        if action == "open" and path:
            gc.unfreeze()
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
        from .browser.help_screen import live_bindings, status_help, widget_bindings

        screen = self.screen
        sections = [("Active now (focused pane, browser, application)", live_bindings(screen))]
        whole = status_help(screen)
        if whole is not None:  # the status line's every part (the line on screen leaves some out when narrow)
            sections.insert(0, whole)
        if isinstance(screen, _main_screen_class()):
            focused = self.focused
            for widget, title in ((screen.op_tree, "Op tree (focus: t / tab)"),
                                  (screen.timeline, "Timeline (focus: t)")):
                if widget is not focused and widget.display:
                    sections.append((title, widget_bindings(widget)))
        return sections

    def action_help(self) -> None:
        from .browser.help_screen import HelpScreen

        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.help_sections()))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help: keys", "Show every key binding", self.action_help)
        # the diff screen's module only when a diff is shown: importing it here (the diff, job
        # and multiprocessing packages) cost the first ctrl+p of a single trace ~30 ms
        diff_module = sys.modules.get(f"{__package__}.diff.diff_screen")
        browsers: tuple[type, ...] = (diff_module.DiffScreen,) if diff_module is not None else ()

        MainScreen = _main_screen_class()  # noqa: N806 -- the class, imported once the browser is shown
        if self.job is not None and isinstance(screen, MainScreen):
            for r in self.job.ranks:
                if self.job.results[r].ok and r != self.rank:
                    yield SystemCommand(f"Rank {r}", f"show rank {r} of the job", partial(self.show_rank, r))
        if isinstance(screen, (MainScreen, *browsers)):
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
        if screen.is_attached and top_screen(self) is screen:
            await screen.run_action(action)


def _freeze_objects() -> None:
    """Once the browser is painted: leave the objects alive now (the trace's, the browser's
    widgets) out of the garbage collector's full passes (``gc.freeze``).  A full pass over them
    took 50-70 ms of CPU at random moments, often while a screen opened (216k-event trace, a
    2-core machine).  Unfrozen when another trace or rank replaces them, and at exit."""
    gc.collect()
    gc.freeze()


def binding_ids() -> set[str]:
    """The id of every binding of the browser (the app's, its screens' and widgets'): the names
    a keymap may use."""
    from textual.dom import DOMNode

    from .follow import follow_screen  # noqa: F401 -- imported only when following: its bindings count
    from .job import job_summary_screen  # noqa: F401 -- imported lazily by the job keys: its bindings count

    out: set[str] = set()
    stack = [DOMNode]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("tracetui.ui"):
            out.update(b.id for b in cls.__dict__.get("BINDINGS", ()) if getattr(b, "id", None))
    return out


def _default_categorizer():
    from ..analysis.categories import get_categorizer

    try:
        return get_categorizer()
    except (TraceError, ValueError, OSError):
        return None


def run_job_app(inputs: list[str], use_cache: bool = True, workers: int | None = None,
                scheduler: str | None = None, follow_links: bool = False) -> int:
    """Open the browser on a whole job (a folder, a glob, several rank files): every rank
    is summarised first, then one rank at a time is shown (``r`` switches).  Exit status as
    :func:`run_app`."""
    from ..job.executor import start_pool_helpers

    start_pool_helpers()  # before Textual replaces sys.stderr (the helpers' start needs its descriptor)
    return _run(TraceApp([], use_cache=use_cache, job_inputs=inputs, workers=workers, scheduler=scheduler,
                         follow_links=follow_links))


def run_diff_app(request: DiffRequest) -> int:
    """Open the diff browser on two runs (``tracetui diff A B``, docs/diff.md): both load in a
    worker behind the loading screen, then the merged tree.  Exit status as :func:`run_app`."""
    return _run(TraceApp([*request.paths_a, *request.paths_b], use_cache=request.use_cache, diff=request))


def run_follow_app(request: FollowRequest) -> int:
    """Open the follow screen on ``request.folder`` (``tracetui follow DIR``, docs/follow.md).
    Exit status as :func:`run_app`."""
    return _run(TraceApp([request.folder], use_cache=request.use_cache, follow=request))


def run_app(paths: list[str], use_cache: bool = True, live: float | None = None) -> int:
    """Open the browser on ``paths`` (one Kineto trace, an ET, or both in any order).

    Returns the exit status: 0, :data:`EXIT_LOAD_FAILED` when the initial load failed
    and the user quit from the error dialog, or :data:`~tracetui.crash.EXIT_INTERNAL_ERROR`
    after a bug (its one-line report is printed on stderr, the traceback saved to a file).
    ``live``: read the (driver-call) trace again as it grows, looking every ``live`` seconds.
    """
    return _run(TraceApp(paths, use_cache=use_cache, live=live))


def _run(app: TraceApp) -> int:
    app.run()
    if app.crash is not None:
        print(app.crash.line(), file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    if app.load_cancelled:
        return EXIT_LOAD_CANCELLED
    return int(app.return_code or 0)
