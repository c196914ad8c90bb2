"""The critical path in the browser: the main screen's ``P`` and its walk along the path.

:class:`PathActions` gives the browser screen ``P`` (also "Critical path" in the command
palette): the path of the step under the cursor (the profiler step or annotation holding the
selection, else the op under the cursor as the window: :func:`tracetui.critical.window_at`),
computed in a worker thread (Esc cancels it), then shown on the
:class:`~.critical_path_screen.CriticalPathScreen`.  Once a path is computed the tree has a
Path column (the path's time under each row, ``●`` on rows on the path), the timeline marks
the path's segments, the detail pane gives each op's and kernel's slack, and ``n``/``N`` walk
along the path (until a search takes them back).  In a job the path is followed across the
ranks (:func:`tracetui.job.critical.job_critical_paths` on the job's worker processes), and a
step onto another rank's segment shows that rank.

The app keeps the path (``app.critical``: a :class:`~tracetui.ui.view.path_marks.PathState`),
so it survives a rank switch; each browser screen draws it through a
:class:`~tracetui.ui.view.path_marks.PathMarks` of its own trace.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.worker import get_current_worker

from ... import units
from ...critical import KIND_NAMES, critical_path, window_at
from ...errors import LoadCancelled, TraceError
from ...names import shown
from ..notify import show_note
from ..shown import top_screen
from ..view.path_marks import PathMarks, PathState
from .critical_path_screen import CriticalPathScreen


class PathActions:
    """Mixin for the browser screen (see the module docstring)."""

    #: what ``n``/``N`` walk: "search" (the matches) or "path" (the critical path's segments)
    walk = "search"
    _path_pending: str | None = None

    # ------------------------------------------------------------------ state
    def path_state(self) -> PathState | None:
        """The path shown: the app's (kept across a job's ranks)."""
        return getattr(self.app, "critical", None)

    def store_path(self, state: PathState | None) -> None:
        """Keep ``state`` as the path shown (:meth:`path_state` reads it back)."""
        self.app.critical = state

    def _rank(self) -> int | None:
        return getattr(self.app, "rank", None) if getattr(self.app, "job", None) is not None else None

    def apply_path(self) -> None:
        """Draw the app's path (or none) on this screen's tree, timeline and detail pane."""
        state, kt = self.path_state(), self.source.kt
        marks = PathMarks(state, kt, self._rank()) if state is not None and kt is not None else None
        self.source.path = marks
        self.op_tree.refresh_rows()
        self.timeline.set_path(marks.ranges() if marks is not None else None)
        if self.current is not None:
            self.detail.show(self.current)
        self.update_status()

    def path_status(self) -> tuple[str, str] | None:
        """The status line's path part: a path being computed, else the one shown."""
        if self._path_pending is not None:
            return (f"computing the critical path of {shown(self._path_pending)} … (Esc cancels)",
                    "computing path … (Esc)")
        marks = self.source.path
        return marks.status_forms() if marks is not None else None

    def clear_path(self) -> bool:
        """Esc: stop a path being computed, else drop the marks of the one shown; False when neither."""
        if self._path_pending is not None:
            self.workers.cancel_group(self, "critical")
            show_note(self, f"critical path of {shown(self._path_pending)}: cancelled")
            self._path_pending = None
            self.update_status()
            return True
        if self.path_state() is None:
            return False
        self.store_path(None)
        self.walk = "search"
        self.apply_path()
        show_note(self, "critical path marks cleared (P computes one again)")
        return True

    # ------------------------------------------------------------------ P
    def action_critical_path(self) -> None:
        """``P``: the critical path of the step under the cursor (computed once; ``P`` again on
        the same step reopens its screen)."""
        kt = self.source.kt
        if kt is None:
            show_note(self, "the critical path needs a Kineto trace (GPU trace)", severity="warning")
            return
        node = self.current
        k = self.source.kineto_of(node) if node is not None else -1
        try:
            window = window_at(kt, k)
        except TraceError as exc:
            show_note(self, str(exc), severity="warning")
            return
        state = self.path_state()
        if state is not None and self._same_window(state, window):
            self.open_path_screen()
            return
        self._path_pending = window.name  # said on the status line until it is ready
        self.update_status()
        if getattr(self.app, "job", None) is not None:
            spec = self._job_spec(kt, window)
            self.run_worker(lambda: self._job_worker(window.name, spec), thread=True, exclusive=True, group="critical",
                            name="critical path")
        else:
            self.run_worker(lambda: self._trace_worker(kt, window), thread=True, exclusive=True, group="critical",
                            name="critical path")

    def _same_window(self, state: PathState, window: Any) -> bool:
        w = state.cp.window
        if state.job:  # a job's window is named by its step or annotation on every rank
            return (w.kind, w.name) == (window.kind, window.name) or window.kind not in ("step", "annotation")
        return (w.start_us, w.end_us, w.event) == (window.start_us, window.end_us, window.event)

    def _trace_worker(self, kt: Any, window: Any) -> None:
        try:
            cp = critical_path(kt, window)
        except TraceError as exc:
            self._from_worker(self._path_failed, str(exc))
            return
        if not get_current_worker().is_cancelled:
            self._from_worker(self._path_ready, window.name, PathState(cp), [])

    def _job_spec(self, kt: Any, window: Any) -> dict[str, Any]:
        """The job's window from this rank's: a step by number, an annotation by name and
        instance; anything else (one op, the whole trace): the slowest step of the job."""
        if window.kind == "step":
            return {"step": int(window.name.rsplit("#", 1)[1])}
        if window.kind == "annotation":
            from ...critical.window import annotation_instance

            return {"annotation": window.name, "instance": annotation_instance(kt, window.event)}
        return {}

    def _job_worker(self, name: str, spec: dict[str, Any]) -> None:
        from ...job.critical import job_critical_paths

        app, worker = self.app, get_current_worker()

        def progress(_message: str, _fraction: float) -> None:
            if worker.is_cancelled:
                raise LoadCancelled("critical path cancelled")

        try:
            res = job_critical_paths(app.job_inputs, use_cache=app.use_cache, progress=progress,
                                     **app.job_options, **spec)
        except LoadCancelled:
            return
        except TraceError as exc:
            self._from_worker(self._path_failed, str(exc))
            return
        if not worker.is_cancelled:
            self._from_worker(self._path_ready, name, PathState(res.chosen, job=True), res.warnings)

    def _from_worker(self, step: Any, *args: Any) -> None:
        try:
            self.app.call_from_thread(step, *args)
        except RuntimeError:  # the app stopped meanwhile
            pass

    def _path_failed(self, message: str) -> None:
        self._path_pending = None
        self.update_status()
        show_note(self, f"critical path: {message}", severity="error")

    def _path_ready(self, name: str, state: PathState, warnings: list[str]) -> None:
        if self._path_pending != name or not self.is_attached:  # cancelled (Esc) or asked for another
            return
        self._path_pending = None
        self.store_path(state)
        self.walk = "path"
        self.apply_path()
        for w in warnings[:3]:
            show_note(self, w, severity="warning")
        if top_screen(self.app) is self:
            self.open_path_screen()

    def open_path_screen(self) -> None:
        state = self.path_state()
        if state is None:
            return
        self.app.push_screen(CriticalPathScreen(state, self._name_of), self._path_choice)

    def _name_of(self, rank: int, event: int) -> str | None:
        """An event's name, when it is of the trace on screen."""
        kt, state = self.source.kt, self.path_state()
        if kt is None or state is None or rank != state.rank_key(self._rank()) or not 0 <= event < kt.n_events:
            return None
        return kt.name(event)

    def _path_choice(self, choice: tuple[int, int, int] | None) -> None:
        """Back from the path screen: Enter on a segment (or slack row) goes to its event."""
        state = self.path_state()
        if choice is None or state is None or not self.is_attached:
            return
        rank, event, index = choice
        self.walk = "path"
        if index >= 0:
            state.index = index
            note = self._segment_note(state, index)
        else:
            slack = state.cp.slack_of_event(event, rank)
            note = Text(f"P nearly critical: slack {units.format_duration_us(slack or 0.0)}", style="bold")
        self._go_to(state, rank, event, note)

    # ------------------------------------------------------------------ n / N
    def walk_path(self, direction: int) -> None:
        """``n``/``N`` once a path is computed: the next/previous segment's event (another
        rank's: that rank is shown)."""
        state = self.path_state()
        marks = self.source.path
        if state is None or marks is None:
            return
        kt = self.source.kt
        # the tree's own cursor: moved at once by the previous n, before its highlight message
        # reaches this screen (keys typed in a burst)
        node = self.op_tree.cursor_node
        k = self.source.kineto_of(node) if node is not None else -1
        t = float(kt.ts[k]) - marks.offset if 0 <= k < kt.n_events else state.cp.window.start_us
        mine = marks.rank

        def row(rank: int, event: int) -> Any:
            return ("row", self.source.visible_ancestor(event)) if rank == mine else (rank, event)

        i = state.step(direction, (mine, k, t), row)
        if i is None:
            show_note(self, f"{'last' if direction > 0 else 'first'} segment of the critical path "
                            f"(P shows them all)")
            return
        from ...critical.model import row_event

        self._go_to(state, int(state.cp.segments.rank[i]), row_event(state.cp.segments, i),
                    self._segment_note(state, i))

    def _segment_note(self, state: PathState, i: int) -> Text:
        s = state.cp.segments
        kind = KIND_NAMES[int(s.kind[i])]
        note = Text(f"path segment {i + 1:,} of {len(s):,}: {kind} {units.format_duration_us(float(s.dur_us[i]))}",
                    style="bold")
        if s.event[i] < 0:
            note.append(f" ({s.name[i]})", style="dim")
        note.append("   (n next, N previous, P the path)", style="dim")
        return note

    def _go_to(self, state: PathState, rank: int, event: int, note: Text) -> None:
        if state.job and rank >= 0 and rank != self.app.rank:
            show_note(self, f"the path crosses to rank {rank}", title="P")
            self.app.show_rank(rank, select=(event, note))
            return
        self.select(event, note)
