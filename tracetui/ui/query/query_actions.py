"""SQL in the browser: the main screen's ``:`` key (also "Query (SQL)" in the palette).

:class:`QueryActions` gives the browser screen the query bar (:class:`~.query_bar.QueryBar`,
which runs each query in a worker thread: the UI never waits), shows the rows it answers
with (:class:`~.query_result_screen.QueryResultScreen`) and acts on what the user chose
there: go to an event (in a job, on its rank), filter the tree to the result's events, or
edit the query.  The app keeps one :class:`~tracetui.ui.view.query_state.QueryState`
(``app.query_state``): the DuckDB session and the history outlive the screen, and in a job
they cover every rank.
"""

from __future__ import annotations

from ..notify import show_note
from ..shown import is_shown
from ..view.query_state import QueryState
from .query_bar import QueryBar
from .query_result_screen import QueryResultScreen


class QueryActions:
    """Mixin for the browser screen: the query keys (see the module docstring).  Its
    handlers go by name (``on_query_bar_answered``): a mixin's ``@on`` is not seen."""

    @property
    def query_bar(self) -> QueryBar | None:
        """The bar; None while the screen is being taken down (keys typed ahead of a quit)."""
        bars = list(self.query(QueryBar))
        return bars[0] if bars else None

    def query_state(self) -> QueryState | None:
        """The app's query state for what is shown (made on first use; a toast when the
        trace cannot be queried: an Execution Trace alone)."""
        app = self.app
        job = getattr(app, "job", None)
        serves = job if job is not None else self.linked
        state = getattr(app, "query_state", None)
        if state is not None and state.serves is serves:
            return state
        if job is None and self.linked.kineto is None:
            show_note(self, "SQL needs a Kineto or driver-call trace (an Execution Trace alone has no times)",
                      severity="warning")
            return None
        state = QueryState.for_job(job, use_cache=app.use_cache) if job is not None else \
            QueryState.for_trace(self.linked, self.detail_model.categorizer)
        app.query_state = state
        return state

    def action_query(self, sql: str = "") -> None:
        """``:``: open the query bar (with ``sql`` in it); a maximised pane is restored first,
        so the bar is seen."""
        bar = self.query_bar
        if bar is None:
            return
        state = self.query_state()
        if state is None:
            return
        if self.maximized is not None:
            self.minimize()
        bar.open(state, sql)

    def _shown_rank(self) -> int | None:
        job_rank = getattr(self, "job_rank", None)
        return job_rank[0] if job_rank else None

    def on_query_bar_closed(self, event: QueryBar.Closed) -> None:
        event.stop()
        if is_shown(self):
            self.op_tree.focus()

    def on_query_bar_answered(self, event: QueryBar.Answered) -> None:
        event.stop()
        if is_shown(self):
            self.op_tree.focus()
            self.app.push_screen(QueryResultScreen(event.sql, event.result, event.seconds, rank=self._shown_rank()),
                                 self._query_choice)

    def _query_choice(self, choice: tuple | None) -> None:
        """Act on what the result screen was closed with (see QueryResultScreen)."""
        if choice is None or not self.is_attached:
            return
        what = choice[0]
        if what == "edit":
            self.action_query(choice[1])
        elif what == "filter":
            self.show_matches(choice[1], choice[2], "result event", filter_tree=True)
        elif what == "go":
            _, rank, event, note = choice
            shown = self._shown_rank()
            if rank is not None and shown is not None and rank != shown:
                job = self.app.job
                if rank not in job.results or not job.results[rank].ok:
                    show_note(self, f"rank {rank} is not loaded in this job", severity="warning")
                    return
                self.app.show_rank(rank, select=(event, note))
                return
            kt = self.source.kt
            if kt is None or not 0 <= event < kt.n_events:
                show_note(self, f"no event {event} in this trace (event ids are the tree's node ids)",
                          severity="warning")
                return
            self.call_after_refresh(self.select, event, note)
