"""SQL over a loaded trace or a whole job, with DuckDB (embedded, in this process).

:class:`QuerySession` answers SQL over the tables of docs/query.md.  DuckDB is imported when
the first session is made, never on the load path, and each table is built only when a
query names it (then kept for the session's later queries).  A single trace's tables are
DataFrames of numpy columns that DuckDB scans in place (``query/columns.py``); a job's are
copied rank by rank into DuckDB tables with a ``rank`` column, so only one rank's model is
in memory at a time.

Every session is a sandbox (``query/sandbox.py``): no file, network or extension, the
settings locked, bounded memory, and a time limit (``timeout_s``); ``allow_files`` turns file
access on for one session (``tracetui query --allow-files``).  A bad or refused query raises
:class:`QueryError` with one line (DuckDB's message, or what the sandbox refused and the
option that allows it; the CLI prints it and exits 2).  The result of a query is a
:class:`QueryResult`: column names, DuckDB type names and rows; ``event_column`` names the
column holding model event ids (``event``, else the first ``*_event``), ``rank_column`` the
job's ``rank``.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from .. import units
from ..errors import TraceError, one_line
from ..session import LinkedTrace
from . import sandbox
from .columns import ARGS_VIEW

#: statements that change the session (a view for later queries) rather than return rows
CHANGING = frozenset({"create", "insert", "update", "delete", "drop", "alter", "set", "variable_set",
                      "transaction", "attach", "detach", "load", "copy"})


class QueryError(TraceError):
    """A query DuckDB could not run (syntax, unknown column ...): its message, one line."""


@dataclass
class QueryResult:
    """What a query returned: ``columns`` (names), ``types`` (DuckDB type names, e.g.
    ``BIGINT``, ``DOUBLE``, ``VARCHAR``), ``rows`` (tuples of Python values; None is NULL)
    and ``truncated`` (more rows existed than ``max_rows`` asked for)."""

    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    #: the last statement's kind, DuckDB's name in lower case (``select``, ``create``,
    #: ``insert`` ...); a statement that changes the session (:data:`CHANGING`) has no columns
    statement: str = "select"

    @property
    def event_column(self) -> str | None:
        """The column of model event ids: ``event``, else the first ending in ``_event``."""
        if "event" in self.columns:
            return "event"
        return next((c for c in self.columns if c.endswith("_event")), None)

    @property
    def rank_column(self) -> str | None:
        """``rank`` when the result has it (a job's tables), else None."""
        return "rank" if "rank" in self.columns else None

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts keyed by column name."""
        return [dict(zip(self.columns, r)) for r in self.rows]


class TableSource(Protocol):
    """Where a session's tables come from: a trace (:class:`TraceSource`) or a job."""

    def table_names(self) -> tuple[str, ...]: ...

    def register(self, con: Any, names: list[str]) -> list[str]:
        """Create the tables (or views) ``names`` on DuckDB connection ``con``; returns
        every table it created (some sources make related tables together)."""


class TraceSource:
    """The tables of one loaded trace (Kineto, with its ET link; a driver-call trace adds
    its own), each a DataFrame DuckDB scans in place."""

    def __init__(self, linked: LinkedTrace, categorizer: Any = None) -> None:
        from ..driver import DriverTrace
        from .driver_tables import DriverTables
        from .kineto_tables import TraceTables

        self.linked = linked
        self.builders: dict[str, Any] = {}
        kt = TraceTables(linked, categorizer)
        for name in kt.TABLES:
            self.builders[name] = kt
        if isinstance(linked.kineto, DriverTrace):
            drv = DriverTables(linked.kineto)
            for name in drv.TABLES:
                self.builders[name] = drv

    def table_names(self) -> tuple[str, ...]:
        return tuple(self.builders)

    def register(self, con: Any, names: list[str]) -> list[str]:
        for name in names:
            df = self.builders[name].build(name)
            if name == "args":
                con.register("_args_json", df)
                con.execute(ARGS_VIEW.format(rank="", raw="_args_json"))
            else:
                con.register(name, df)
        return names

    def arg(self, event: int | None, key: str | None) -> str | None:
        """``arg(event, key)`` in SQL: one arg of one event decoded on demand (text as is,
        numbers and lists as JSON text), NULL when absent."""
        kt = self.linked.kineto
        if event is None or key is None or kt is None or not 0 <= event < kt.n_events:
            return None
        v = kt.args(int(event)).get(key)
        if v is None or isinstance(v, str):
            return v
        from ..io import jsonout

        return jsonout.dumps(v).decode()


@dataclass
class QuerySession:
    """SQL over one source; tables are built on first reference and kept.

    ``allow_files``: let queries read and write files (``COPY ... TO``, ``read_csv``, ``ATTACH``);
    off by default.  ``timeout_s``: seconds a query may run (None or 0: no limit; the browser
    has none, Esc stops a query there).  See ``query/sandbox.py`` for the rest of the sandbox."""

    source: TableSource
    warnings: list[str] = field(default_factory=list)
    allow_files: bool = False
    timeout_s: float | None = sandbox.DEFAULT_TIMEOUT_S
    _con: Any = None
    _ready: set[str] = field(default_factory=set)
    _memory: int | None = None
    _cancel: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def for_trace(cls, linked: LinkedTrace, categorizer: Any = None, *, allow_files: bool = False,
                  timeout_s: float | None = sandbox.DEFAULT_TIMEOUT_S) -> QuerySession:
        """A session over one loaded trace (the browser's and the API's entry)."""
        return cls(TraceSource(linked, categorizer), allow_files=allow_files, timeout_s=timeout_s)

    @classmethod
    def for_job(cls, inputs: list[str], *, allow_files: bool = False,
                timeout_s: float | None = sandbox.DEFAULT_TIMEOUT_S, **options: Any) -> QuerySession:
        """A session over a whole job (``options``: ``use_cache``, ``workers``, ``scheduler``,
        ``rules``, ``follow_links``; see :class:`~tracetui.query.job_tables.JobSource`)."""
        from .job_tables import JobSource

        src = JobSource(inputs, **options)
        return cls(src, warnings=src.warnings, allow_files=allow_files, timeout_s=timeout_s)

    @property
    def con(self) -> Any:
        if self._con is None:
            from ..kineto.parallel import available_cpus

            self._memory = sandbox.memory_bytes()
            self._con = sandbox.connect(self.allow_files, self._memory, available_cpus())  # imports DuckDB
            arg = getattr(self.source, "arg", None)
            if arg is not None:
                self._con.create_function("arg", arg, ["BIGINT", "VARCHAR"], "VARCHAR", null_handling="special",
                                          side_effects=False)
        return self._con

    def table_names(self) -> tuple[str, ...]:
        return self.source.table_names()

    def _named(self, sql: str) -> list[str]:
        """The known tables ``sql`` names (DuckDB's parser; a word match when it cannot tell)."""
        import duckdb

        known = {n.lower(): n for n in self.table_names()}
        try:
            found = {t.split(".")[-1].strip('"').lower() for t in self.con.get_table_names(sql)}
        except duckdb.ParserException as exc:
            raise QueryError("query", _message(exc)) from None
        except duckdb.Error:
            found = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql)}
        return [known[k] for k in sorted(found) if k in known]

    def ensure(self, names: list[str]) -> None:
        """Build and register the tables ``names`` not built yet."""
        todo = [n for n in names if n not in self._ready]
        if todo:
            self._ready.update(self.source.register(self.con, todo))

    def run(self, sql: str, max_rows: int | None = None, cancel: threading.Event | None = None) -> QueryResult:
        """Run ``sql`` (one or more statements; the last one's rows are returned, at most
        ``max_rows`` of them when given).  The statements run in the sandbox, stopped after
        :attr:`timeout_s`, when ``cancel`` is set (default: the event :meth:`interrupt` sets)
        or on Ctrl+C (KeyboardInterrupt, raised again once DuckDB has stopped)."""
        import duckdb

        if not sql.strip():
            raise QueryError("query", "empty query")
        if cancel is None:
            cancel = self._cancel
            cancel.clear()
        names = self._named(sql)
        self._refuse(sql)
        self.ensure(names)
        if cancel.is_set():  # cancelled while the tables were built: they are kept
            raise QueryError("query", "cancelled")
        out = sandbox.call_with_limit(lambda: self._fetch(sql, max_rows), self.con.interrupt, self.timeout_s, cancel)
        if isinstance(out.error, duckdb.InterruptException) and (out.timed_out or out.cancelled):
            raise QueryError("query", f"stopped after {units.s_text(self.timeout_s or 0)} ({sandbox.TIMEOUT_OPTION})"
                             if out.timed_out else "cancelled")
        if isinstance(out.error, duckdb.Error):
            raise QueryError("query", sandbox.explain(type(out.error).__name__, _message(out.error), self.allow_files,
                                                      self._memory)) from None
        if out.error is not None:
            raise out.error
        desc, rows, more = out.value
        kind = self._statement(sql)
        if kind in CHANGING:  # DuckDB answers these with a "Count" column: not rows of a table
            return QueryResult([], [], [], False, kind)
        return QueryResult([d[0] for d in desc], [_type_name(d[1]) for d in desc], rows, more, kind)

    def _fetch(self, sql: str, max_rows: int | None) -> tuple[list[Any], list[tuple[Any, ...]], bool]:
        """Run ``sql`` and fetch its rows (on the helper thread of :func:`sandbox.call_with_limit`)."""
        cur = self.con.execute(sql)
        desc = cur.description or []
        if max_rows is None:
            return desc, (cur.fetchall() if desc else []), False
        rows = cur.fetchmany(max_rows + 1) if desc else []
        more = len(rows) > max_rows
        if more and hasattr(cur, "abort"):  # DuckDB 2: the rest of a result must end before the next query
            cur.abort()
        return desc, rows[:max_rows], more

    def _refuse(self, sql: str) -> None:
        """QueryError for a statement the sandbox refuses before DuckDB runs it (INSTALL, LOAD)."""
        import duckdb

        try:
            why = sandbox.refusal(self.con.extract_statements(sql))
        except duckdb.Error as exc:
            raise QueryError("query", _message(exc)) from None
        if why:
            raise QueryError("query", why)

    def _statement(self, sql: str) -> str:
        """The kind of the last statement of ``sql`` (already run: it parses)."""
        try:
            return self.con.extract_statements(sql)[-1].type.name.lower()
        except Exception:  # noqa: BLE001 -- only a label: the query itself ran
            return "select"

    def column_names(self) -> list[str]:
        """Names of the columns of the tables built so far (for completion), sorted."""
        if self._con is None or not self._ready:
            return []
        names = sorted(n for n in self._ready if not n.startswith("_"))
        marks = ", ".join("?" for _ in names)
        rows = self._con.execute("SELECT DISTINCT column_name FROM information_schema.columns "
                                 f"WHERE table_name IN ({marks}) ORDER BY 1", names).fetchall()
        return [r[0] for r in rows]

    def interrupt(self) -> None:
        """Stop the query running on another thread (its :meth:`run` raises :class:`QueryError`
        "cancelled"); a table being built is finished first, and kept."""
        self._cancel.set()

    def close(self) -> None:
        """Close the DuckDB connection (a query still running is stopped first)."""
        if self._con is not None:
            import duckdb

            self._cancel.set()
            try:
                self._con.close()
            except duckdb.Error:  # busy with a query on another thread: it ends with the process
                self._con.interrupt()
            self._con = None


def _type_name(t: Any) -> str:
    """DuckDB's type name; a name column's ``ENUM('a', 'b', ...)`` is just ``ENUM``."""
    name = str(t)
    return "ENUM" if name.startswith("ENUM(") else name


def _message(exc: Exception) -> str:
    """DuckDB's message on one line (the caret lines that point into the query left out)."""
    lines = []
    for ln in str(exc).splitlines():
        if ln.startswith("LINE ") or (ln.strip() and set(ln.strip()) <= {"^"}):
            break
        if ln.strip():
            lines.append(ln.strip())
    return one_line(" ".join(lines)) or type(exc).__name__
