"""The browser's SQL (Textual-free): one :class:`~tracetui.query.QuerySession` per trace or
job, the queries of this session (history), completions for the query bar, timing.

The session is made when the first query runs (in the query worker: DuckDB's import and the
first tables take about a second on a large trace) and kept for the next ones, so a table
is built once.  Runs are serialised by a lock (a query typed while one still runs waits
for it, in its own worker).  :meth:`QueryState.begin` (the UI thread, as a query is sent)
gives each query its own cancel flag, which :meth:`QueryState.interrupt` (Esc) sets and the
session reads once its tables are built and watches while its statement runs: Esc stops the
query at once, or before it starts (and a query sent right after it does not clear it).
The browser's sessions are the CLI's sandbox (``query/sandbox.py``: no files, network or
extensions, settings locked) with no time limit (Esc stops a query) and at most
:data:`BROWSER_ROWS` rows fetched.  In a job the session covers every rank (tables with a
``rank`` column, ``collectives``) and lives as long as the job: switching ranks keeps it.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...query import QueryResult, QuerySession


#: rows a query brings into the browser at most (the table draws only those on screen)
BROWSER_ROWS = 100_000
#: queries kept in the history (newest last)
HISTORY_MAX = 200

_LAST_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


class QueryState:
    """SQL over what the browser shows; see the module docstring."""

    def __init__(self, make_session: Callable[[], QuerySession], table_names: Sequence[str], serves: Any) -> None:
        self._make = make_session
        self._session: QuerySession | None = None
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self.table_names = tuple(table_names)
        #: column names of the tables built so far (offered for completion after them)
        self.column_names: tuple[str, ...] = ()
        self.history: list[str] = []
        #: what this state answers for: the LinkedTrace, or the Job
        self.serves = serves

    @classmethod
    def for_trace(cls, linked: Any, categorizer: Any = None) -> QueryState:
        """Over one loaded trace (raises TraceError for an Execution Trace alone)."""
        from ...query import QuerySession

        session = QuerySession.for_trace(linked, categorizer, timeout_s=None)
        return cls(lambda: session, session.table_names(), linked)

    @classmethod
    def for_job(cls, job: Any, *, use_cache: bool = True, rules: str | None = None) -> QueryState:
        """Over every rank of an opened job (its layout and collectives reused)."""
        from ...query import QuerySession
        from ...query.job_tables import JOB_TABLES

        return cls(lambda: QuerySession.for_job(job.inputs, job=job, use_cache=use_cache, rules=rules, timeout_s=None),
                   JOB_TABLES, job)

    @property
    def started(self) -> bool:
        """Has a query run (DuckDB imported, a session made)?"""
        return self._session is not None

    # ------------------------------------------------------------------ running
    def begin(self) -> threading.Event:
        """A query is being sent (UI thread): its cancel flag, for :meth:`run`."""
        self._cancel = threading.Event()
        return self._cancel

    def run(self, sql: str, max_rows: int = BROWSER_ROWS,
            cancel: threading.Event | None = None) -> tuple[QueryResult, float]:
        """Run ``sql`` (worker thread) with the flag :meth:`begin` gave (default: the last
        one); returns the result and the wall seconds it took (tables built on the way
        included).  Raises QueryError / TraceError; QueryError "cancelled" after :meth:`interrupt`."""
        cancel = cancel or self._cancel
        with self._lock:
            t0 = time.perf_counter()
            if self._session is None:
                self._session = self._make()
            result = self._session.run(sql, max_rows=max_rows, cancel=cancel)
            elapsed = time.perf_counter() - t0
            self.column_names = tuple(self._session.column_names())
        return result, elapsed

    def interrupt(self) -> None:
        """Stop the query sent last (its worker then gets QueryError "cancelled"): at once
        when it runs, before it starts when its tables are still being built."""
        self._cancel.set()

    def warnings(self) -> list[str]:
        return list(self._session.warnings) if self._session is not None else []

    def close(self) -> None:
        """Stop the running query and close the session (not waiting for a table being
        built: the app is closing, its worker ends with it)."""
        if self._session is None:
            return
        self.interrupt()
        if self._lock.acquire(timeout=0.5):
            try:
                self._session.close()
            finally:
                self._lock.release()

    # ------------------------------------------------------------------ the bar
    def remember(self, sql: str) -> None:
        """Add ``sql`` to the history (newest last; an older copy moves up)."""
        sql = sql.strip()
        if not sql:
            return
        if sql in self.history:
            self.history.remove(sql)
        self.history.append(sql)
        del self.history[:-HISTORY_MAX]

    def suggestion(self, value: str) -> str | None:
        """What the bar offers after ``value``: an earlier query starting with it (newest
        first), else the table (then column) name that completes its last word."""
        if not value.strip():
            return None
        for old in reversed(self.history):
            if old.startswith(value) and old != value:
                return old
        m = _LAST_WORD.search(value)
        if m is None:
            return None
        word = m.group().lower()
        for name in (*self.table_names, *self.column_names):
            if name.lower().startswith(word) and name.lower() != word:
                return value + name[len(word):]
        return None
