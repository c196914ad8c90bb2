"""SQL over a loaded trace or a whole job (DuckDB, imported on first use); docs/query.md.

``QuerySession.for_trace(linked).run("SELECT ...")`` -> :class:`QueryResult`;
``open_query(paths)`` opens a trace or a job by its paths.
"""

from .engine import QueryError, QueryResult, QuerySession, TraceSource

__all__ = ["QueryError", "QueryResult", "QuerySession", "TraceSource"]
