"""``tracetui query TRACE_OR_JOB "SQL"``: SQL over a trace or a whole job (docs/query.md).

Prints a table fitted to the terminal (as ``summary`` does: names fold, numbers never
cut), or ``--csv`` (a header line, then one line per row), or ``--json`` (a list of row
objects).  ``--file q.sql`` reads the query from a file.  A bad query prints DuckDB's
message on one line and exits 2 (a :class:`~tracetui.query.QueryError`).  A table shows at
most :data:`TABLE_ROWS` rows (and says how many more there were); CSV and JSON give all.

The query runs in the sandbox of ``query/sandbox.py``: no file, network or extension, the
settings locked; a refusal is one line naming the option that allows it, exit 2.
``--timeout SECONDS`` (default :data:`~tracetui.query.sandbox.DEFAULT_TIMEOUT_S`; 0: none)
stops a query with ``query: stopped after N s (--timeout)``, exit 2; Ctrl+C stops it too (exit
130).  ``--allow-files`` lets the queries of this run read and write files (``COPY ... TO``).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from rich.text import Text

from .. import units
from ..errors import TraceError, one_line
from ..query.cells import is_numeric, json_value
from ..query.sandbox import DEFAULT_TIMEOUT_S, FILES_OPTION, TIMEOUT_OPTION
from .common import add_job_options, paths
from .fit_table import Col

if TYPE_CHECKING:
    from ..query import QueryResult

NAME = "query"
#: rows a table prints at most (CSV and JSON print every row)
TABLE_ROWS = 1000


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(NAME, help="SQL over a trace or a whole job (tables: docs/query.md)")
    p.add_argument("trace", help="a Kineto trace (or a driver-call trace), or a job: a folder, a glob, rank files")
    p.add_argument("sql", nargs="?", default=None, help="the query (or --file)")
    p.add_argument("--file", default=None, metavar="Q.SQL", help="read the query from this file")
    p.add_argument("--et", dest="et", default=None, metavar="ET_TRACE", help="the Execution Trace of the same run")
    p.add_argument("--driver", dest="driver", default=None, metavar="DRIVER_TRACE",
                   help="a driver-call trace of the same run (adds the calls, records, ioctls, phases tables)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="print CSV (a header line, then every row)")
    fmt.add_argument("--json", action="store_true", help="print a JSON list of row objects")
    p.add_argument("--rules", default=None, metavar="FILE", help="kernel category rules (TOML)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache of parsed traces")
    p.add_argument(TIMEOUT_OPTION, type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"stop a query after this many seconds (default {DEFAULT_TIMEOUT_S:g}; 0: no limit)")
    p.add_argument(FILES_OPTION, action="store_true",
                   help="let the queries read and write files (COPY ... TO, read_csv, ATTACH); "
                        "off by default: no file, network or extension (docs/query.md)")
    add_job_options(p)


def run(args: argparse.Namespace) -> int:
    from ..job import looks_like_job

    sql = read_query(args.sql, args.file)
    if not args.timeout >= 0:  # also NaN
        raise TraceError("query", f"{TIMEOUT_OPTION} {args.timeout:g}: give the seconds a query may run (0: no limit)")
    fmt = "csv" if args.csv else "json" if args.json else "table"
    files = paths(args)
    job = looks_like_job(files)
    return query_command(files, sql, fmt=fmt, use_cache=not args.no_cache, job=job, rules=args.rules,
                         allow_files=args.allow_files, timeout_s=args.timeout or None,
                         **({"workers": args.workers, "scheduler": args.scheduler, "follow_links": args.follow_links}
                            if job else {}))


def read_query(sql: str | None, file: str | None) -> str:
    """The query text: ``sql``, or the content of ``file`` (one of them)."""
    if (sql is None) == (file is None):
        raise TraceError(None, "give the query as an argument or with --file (one of them)")
    if file is None:
        return sql or ""
    try:
        with open(file, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(file, f"cannot read the query: {exc.strerror or exc}") from None


def print_result(res: QueryResult, fmt: str) -> None:
    """Print ``res`` as ``table``, ``csv`` or ``json`` on stdout."""
    if fmt == "json":
        from ..io import jsonout

        rows = [{c: json_value(v) for c, v in zip(res.columns, r)} for r in res.rows]
        sys.stdout.write(jsonout.dumps(rows).decode() + "\n")
        return
    if fmt == "csv":
        from ..export.csv_json import csv_text

        sys.stdout.write(csv_text(res.columns, res.rows, units.value_text))  # (every cell: one_line)
        return
    from .summary_render import console_out

    out = console_out()
    cols = [Col(one_line(c), is_numeric(t)) for c, t in zip(res.columns, res.types)]
    rows = [[units.value_text(v) if col.numeric else Text(units.value_text(v)) for v, col in zip(r, cols)]
            for r in res.rows]
    if rows:
        out.table("", cols, rows)
    n = len(res.rows)
    more = " (more not shown: add LIMIT, or use --csv or --json for every row)" if res.truncated else ""
    out.con.print(Text(f"{n:,} row{'s' if n != 1 else ''}{more}", style="dim"))


def query_command(inputs: list[str], sql: str, *, fmt: str, use_cache: bool, job: bool, allow_files: bool = False,
                  timeout_s: float | None = DEFAULT_TIMEOUT_S, **job_options: Any) -> int:
    """Run one query on a trace (with its ET / driver trace) or a job and print the result
    (the sandbox: ``allow_files``, ``timeout_s``; see the module docstring)."""
    from ..query import QuerySession

    sandbox = {"allow_files": allow_files, "timeout_s": timeout_s}
    if job:
        session = QuerySession.for_job(inputs, use_cache=use_cache, **sandbox, **job_options)
    else:
        from ..analysis.categories import get_categorizer
        from ..store.traces import load_cached

        linked = load_cached(inputs, use_cache=use_cache)
        session = QuerySession.for_trace(linked, get_categorizer(job_options.get("rules")), **sandbox)
    try:
        res = session.run(sql, max_rows=TABLE_ROWS if fmt == "table" else None)
    finally:
        session.close()
    for w in session.warnings:
        print(f"tracetui: warning: {one_line(str(w))}", file=sys.stderr)
    print_result(res, fmt)
    return 0
