"""SQL over a loaded trace or a whole job (DuckDB, imported on first use); docs/query.md.

``QuerySession.for_trace(linked).run("SELECT ...")`` -> :class:`QueryResult`;
``open_query(paths)`` opens a trace or a job by its paths.
"""

from __future__ import annotations

from ..lazy import lazy_names

__all__ = ["QueryError", "QueryResult", "QuerySession", "TraceSource"]

#: the engine (its tables import pandas) loads on first use, so the browser's screen, which
#: names these types, imports it only when a query runs
__getattr__ = lazy_names(__name__, {name: ".engine" for name in __all__})
