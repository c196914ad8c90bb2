"""The ``:`` query bar of the browser: a line for SQL above a line that says what is going on.

The input offers completions as you type (greyed; ``→`` at the end or ``Tab`` takes them):
an earlier query of this session that starts with what is typed, else the table name (then
the column name of a table already built) that completes the last word.  ``↑``/``↓`` walk
this session's queries.  Enter runs the query; while it runs the message line counts the
seconds and ``Esc`` stops it; a query DuckDB refuses leaves the bar open with DuckDB's
message on the message line (one line of text, never a crash).  ``Esc`` closes the bar.
"""

from __future__ import annotations

import threading
import time
from functools import partial
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.suggester import Suggester
from textual.timer import Timer
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from ... import units
from ...errors import TraceError, one_line
from ..view.query_state import QueryState

if TYPE_CHECKING:
    from ...query import QueryResult

#: how often the message line counts the seconds of a running query
TICK_S = 0.25


class QuerySuggester(Suggester):
    """The bar's completions, from :meth:`QueryState.suggestion` (history, table and column names)."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.state: QueryState | None = None

    async def get_suggestion(self, value: str) -> str | None:
        return self.state.suggestion(value) if self.state is not None else None


class QueryInput(Input):
    """The SQL line: Enter runs, Esc stops a running query or closes the bar, ↑/↓ history, Tab completes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Stop / close", id="query.cancel",
                tooltip="stop the running query; with none running, close the bar"),
        Binding("up", "history(-1)", "Earlier query", show=False, id="query.history_back"),
        Binding("down", "history(1)", "Later query", show=False, id="query.history_forward"),
        Binding("tab", "complete", "Complete", show=False, id="query.complete",
                tooltip="take the greyed completion (a table or column name, or an earlier query)"),
    ]

    class Cancelled(Message):
        """Esc pressed in the query bar."""

    def __init__(self, **kwargs) -> None:
        self.completions = QuerySuggester()
        super().__init__(suggester=self.completions, **kwargs)
        self._history_at: int | None = None  # position in the history while walking it
        self._typed = ""  # what was typed before walking the history

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())

    def action_complete(self) -> None:
        if self._suggestion:
            self.value = self._suggestion
            self.cursor_position = len(self.value)

    def action_history(self, step: int) -> None:
        """Walk this session's queries (``step`` -1: older, 1: newer; past the newest: what was typed)."""
        history = self.completions.state.history if self.completions.state is not None else []
        if not history:
            return
        if self._history_at is None:
            if step > 0:
                return
            self._typed, self._history_at = self.value, len(history)
        at = max(0, self._history_at + int(step))
        if at >= len(history):
            self._history_at, value = None, self._typed
        else:
            self._history_at, value = at, history[at]
        self.value = value
        self.cursor_position = len(value)

    def reset_history(self) -> None:
        self._history_at = None


class QueryBar(Vertical):
    """The query bar: the message line and the SQL input; runs the query in a worker (see
    the module docstring) and posts :class:`Answered` with the rows, :class:`Closed` on Esc."""

    DEFAULT_CSS = """
    QueryBar { display: none; height: auto; background: $boost; }
    QueryBar #query-message { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    QueryBar #query-message.-error { color: $text-error; }
    QueryBar #query-input { height: 1; border: none; padding: 0 1; background: $boost; }
    """

    class Answered(Message):
        """A query returned rows: ``sql``, ``result`` (QueryResult), ``seconds`` (wall)."""

        def __init__(self, sql: str, result: QueryResult, seconds: float) -> None:
            self.sql, self.result, self.seconds = sql, result, seconds
            super().__init__()

    class Closed(Message):
        """Esc closed the bar (no query running)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.state: QueryState | None = None
        self._started: float | None = None
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="query-message")
        yield QueryInput(placeholder="SQL, e.g. SELECT name, count(*) FROM kernels GROUP BY name ORDER BY 2 DESC",
                         id="query-input")

    @property
    def input(self) -> QueryInput:
        return self.query_one("#query-input", QueryInput)

    @property
    def running(self) -> bool:
        return self._started is not None

    def open(self, state: QueryState, sql: str = "") -> None:
        """Show the bar for ``state`` with ``sql`` in it, focused."""
        self.state = state
        inp = self.input
        inp.completions.state = state
        inp.reset_history()
        inp.value = sql
        inp.cursor_position = len(sql)
        if not self.running:
            self.say(self.help_line(state))
        self.display = True
        inp.focus()

    @staticmethod
    def help_line(state: QueryState) -> Text:
        started = "" if state.started else " (the first query starts DuckDB: about a second)"
        return Text.assemble(("tables: ", "bold"), " ".join(state.table_names),
                             f"   ↑↓ history, Tab completes, Enter runs{started}, Esc closes")

    def say(self, message: str | Text, *, error: bool = False) -> None:
        """Show ``message`` (one line of text; it wraps on a narrow screen) on the message line."""
        text = message if isinstance(message, Text) else Text(one_line(message))
        line = self.query_one("#query-message", Static)
        line.set_class(error, "-error")
        line.update(text)

    def close(self) -> None:
        self.display = False

    # ------------------------------------------------------------------ running
    @on(Input.Submitted, "#query-input")
    def _on_submit(self, event: Input.Submitted) -> None:
        event.stop()
        sql, state = event.value, self.state
        if state is None or not sql.strip() or self.running:
            return
        state.remember(sql)
        cancel = state.begin()
        self.input.reset_history()
        self._started = time.perf_counter()
        self._tick()
        self._timer = self.set_interval(TICK_S, self._tick)
        self.run_worker(partial(self._run, state, sql, cancel), thread=True, exclusive=True, group="query",
                        name="query")

    def _tick(self) -> None:
        if self._started is not None:
            secs = time.perf_counter() - self._started
            self.say(Text.assemble(("running ", "bold"), units.s_text(secs, ".1f"), "   Esc stops it"))

    def _stop_ticking(self) -> float:
        secs = time.perf_counter() - (self._started or time.perf_counter())
        self._started = None
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        return secs

    @on(QueryInput.Cancelled)
    def _on_cancel(self, event: QueryInput.Cancelled) -> None:
        """Esc: stop the running query (the bar stays, saying so), else close the bar."""
        event.stop()
        if self.running:
            if self.state is not None:
                self.state.interrupt()
            self.workers.cancel_group(self, "query")
            secs = self._stop_ticking()
            self.say(f"query cancelled: stopped after {units.s_text(secs, '.1f')} (Esc); "
                     "a table being built is finished in the background and kept", error=True)
            return
        self.close()
        self.post_message(self.Closed())

    def _run(self, state: QueryState, sql: str, cancel: threading.Event) -> None:
        """Worker thread: run ``sql`` (stopped when ``cancel`` is set: Esc); hand the rows or
        the message to the UI thread."""
        worker = get_current_worker()
        try:
            result, secs = state.run(sql, cancel=cancel)
            done = partial(self._answered, sql, result, secs)
        except TraceError as exc:  # QueryError: DuckDB's message, one line
            done = partial(self._failed, str(exc))
        except MemoryError:
            done = partial(self._failed, "query: not enough memory for this result (add LIMIT)")
        if worker.is_cancelled:
            return
        try:
            self.app.call_from_thread(done)
        except RuntimeError:  # the app stopped meanwhile
            pass

    def _failed(self, message: str) -> None:
        if self.is_attached and self.running:
            self._stop_ticking()
            self.say(message, error=True)

    def _answered(self, sql: str, result: QueryResult, secs: float) -> None:
        if not self.is_attached or not self.running:
            return
        self._stop_ticking()
        if not result.columns:  # CREATE VIEW ...: nothing to show; the bar stays for the next query
            self.say(f"{result.statement.upper()} done in {units.s_text(secs, '.2f')} (the statement returns no rows)")
            self.input.value = ""
            return
        self.close()
        self.post_message(self.Answered(sql, result, secs))
