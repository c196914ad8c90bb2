"""Open an Nsight Systems SQLite export safely and read its columns into numpy in C.

**Safety.**  The file is opened read-only *and* immutable (``mode=ro&immutable=1``: no lock,
no journal, no WAL file is read or created; the path is percent-encoded into the URI),
only when it is a regular file.  ``trusted_schema`` is off (no function with side effects
runs from the file's schema), extension loading stays off, ``ATTACH`` is limited to none,
and an authorizer allows only reading tables, the ``SELECT`` statements this module builds,
the SQL functions in :data:`ALLOWED_FUNCTIONS` and the read-only pragmas in
:data:`ALLOWED_PRAGMAS`: nothing is ever written.  Every ``sqlite3`` error (not a database,
a corrupt page, a value the queries cannot read) becomes one
:class:`~tracetui.errors.TraceFormatError` line naming the file.

**Speed.**  No Python object is made per row: each column of a block of rows comes out of
SQLite as one string (``group_concat``) that numpy parses in C
(``np.fromstring(..., sep=",")``), and the args of each event are written as JSON by
SQLite's ``printf`` into one byte string per block, separated by newlines
(bench/bench_nsys.py measures it against ``fetchall``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TraceFormatError
from ..io.containers import compression_of
from ..io.files import open_regular, trace_path
from . import schema
from .sniff import REPORT_SUFFIXES, SQLITE_MAGIC

#: rows per query: bounds the strings SQLite builds (an args string is ~300 B per row)
CHUNK_ROWS = 1 << 18
#: the SQL functions the queries use (the authorizer allows no other)
ALLOWED_FUNCTIONS = frozenset({"group_concat", "count", "min", "max", "coalesce", "length", "printf", "char"})
#: the pragmas the reader asks (read-only ones)
ALLOWED_PRAGMAS = frozenset({"table_info", "table_xinfo", "encoding"})
#: what one event's args end with in a block's args string
ARGS_END = b"\n"

#: the rowid range of one block, in every query (the table is ``t``)
ROWS = "t.rowid >= ? AND t.rowid < ?"

_ALLOW_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ}


def _authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
    if action in _ALLOW_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in ALLOWED_FUNCTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in ALLOWED_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def _decode_text(raw: bytes) -> str:
    """Text values (names) as UTF-8, an invalid byte replaced (never a decode error)."""
    return raw.decode("utf-8", "replace")


def export_hint() -> str:
    return "export the report with: nsys export --type sqlite REPORT.nsys-rep"


def connect(path: str) -> sqlite3.Connection:
    """A read-only, immutable connection to ``path`` with the safety settings above.  Raises
    :class:`~tracetui.errors.TraceFileError` for a path that is no regular file, and
    :class:`~tracetui.errors.TraceFormatError` for a report or a file that is no SQLite
    database."""
    p = trace_path(path)
    with open_regular(p) as fh:  # a regular file only (not a FIFO or a device)
        magic = fh.read(len(SQLITE_MAGIC))
    if magic != SQLITE_MAGIC:
        low = os.path.basename(p).lower()
        if low.endswith(REPORT_SUFFIXES):
            raise TraceFormatError(p, f"an Nsight Systems report, not its SQLite export: {export_hint()}")
        if compression_of(magic) is not None:
            raise TraceFormatError(p, "a compressed file: an SQLite export is read uncompressed (decompress it first)")
        raise TraceFormatError(p, "not an SQLite database (no 'SQLite format 3' header)")
    uri = "file:" + urllib.parse.quote(os.path.abspath(p)) + "?mode=ro&immutable=1"
    try:
        con = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise sqlite_error(p, exc) from None
    try:
        con.execute("PRAGMA trusted_schema=OFF")
        if hasattr(con, "enable_load_extension"):  # pragma: no cover - builds without extension support lack it
            con.enable_load_extension(False)
        con.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        con.text_factory = _decode_text
        con.set_authorizer(_authorizer)
    except sqlite3.Error as exc:
        con.close()
        raise sqlite_error(p, exc) from None
    return con


def sqlite_error(path: str, exc: BaseException) -> TraceFormatError:
    """One line for an ``sqlite3`` error while reading ``path``."""
    msg = str(exc) or type(exc).__name__
    low = msg.lower()
    if "not a database" in low:
        return TraceFormatError(path, f"not an SQLite database ({msg})")
    if "malformed" in low or "corrupt" in low:
        return TraceFormatError(path, f"the SQLite database is corrupt ({msg})")
    if "not authorized" in low:
        return TraceFormatError(path, f"the export asks for more than reading its tables ({msg}); refused")
    return TraceFormatError(path, f"cannot read the SQLite export ({msg})")


@contextlib.contextmanager
def reading(path: str) -> Iterator[None]:
    """Turn any ``sqlite3`` error inside the block into one :class:`TraceFormatError` line."""
    try:
        yield
    except sqlite3.Error as exc:
        raise sqlite_error(path, exc) from None


def quote_name(name: str) -> str:
    """An SQL identifier (a table or column name of this module, never one read from the file)."""
    return '"' + name.replace('"', '""') + '"'


@dataclass
class Export:
    """An open export: its connection, its tables (name -> column names) and its metadata."""

    path: str
    con: sqlite3.Connection
    tables: dict[str, frozenset[str]]
    meta: dict[str, str] = field(default_factory=dict)
    version: str = ""

    def has(self, table: str, *columns: str) -> bool:
        cols = self.tables.get(table)
        return cols is not None and all(c in cols for c in columns)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """A small query's rows (enum tables, names, metadata: never one per event)."""
        with reading(self.path):
            return self.con.execute(sql, params).fetchall()

    def rowid_range(self, table: str) -> tuple[int, int] | None:
        got = self.rows(f"SELECT min(rowid), max(rowid) FROM {quote_name(table)}")
        lo, hi = got[0]
        return None if lo is None else (int(lo), int(hi))

    def enum(self, table: str) -> dict[int, tuple[str, str]]:
        """An ``ENUM_*`` table (id -> (name, label)), the schema's defaults when absent."""
        if not self.has(table, *schema.OTHER_COLUMNS[table]):
            return dict(schema.DEFAULT_ENUMS[table])
        out = dict(schema.DEFAULT_ENUMS.get(table, {}))
        for i, name, label in self.rows(f"SELECT id, name, label FROM {quote_name(table)}"):
            if isinstance(i, int):
                out[i] = (str(name or ""), str(label or name or i))
        return out

    def close(self) -> None:
        self.con.close()


def open_export(path: str) -> Export:
    """Connect and check that ``path`` is an export tracetui reads: its required tables, a
    known major export schema version, the columns of each event table it has."""
    p = trace_path(path)
    con = connect(p)
    try:
        with reading(p):
            found = con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
            tables: dict[str, frozenset[str]] = {}
            for name, sql in found:
                create = " ".join(str(sql or "").upper().split())
                if create.startswith("CREATE VIRTUAL"):  # a module's code behind a table's name: not read
                    continue
                if name in schema.EVENT_COLUMNS and "WITHOUT ROWID" in create:
                    raise TraceFormatError(p, f"table {name} has no rowid: not an export tracetui reads")
                if name in schema.EVENT_COLUMNS or name in schema.OTHER_COLUMNS or name in schema.OTHER_TABLES:
                    cols = con.execute(f"PRAGMA table_info({quote_name(name)})").fetchall()
                    tables[name] = frozenset(str(c[1]) for c in cols)
        ex = Export(p, con, tables)
        _check(ex)
        return ex
    except BaseException:
        con.close()
        raise


def _check(ex: Export) -> None:
    p = ex.path
    missing = [t for t in schema.REQUIRED_TABLES if t not in ex.tables]
    if missing:
        raise TraceFormatError(p, f"an SQLite database but not an Nsight Systems export: no {' or '.join(missing)} "
                                  "table")
    (encoding,), = ex.rows("PRAGMA encoding")
    if str(encoding).upper() != "UTF-8":
        raise TraceFormatError(p, f"the database's text is {encoding}, not UTF-8: not an export tracetui reads")
    for t in schema.REQUIRED_TABLES:
        need = [c for c in schema.OTHER_COLUMNS[t] if c not in ex.tables[t]]
        if need:
            raise TraceFormatError(p, f"table {t} lacks column {', '.join(need)}: not an export tracetui reads")
    # names are looked up by id once per event: only the rowid (INTEGER PRIMARY KEY) makes that cheap
    pk = [(str(c[1]), str(c[2]).upper()) for c in ex.rows(f"PRAGMA table_info({quote_name(schema.STRING_IDS)})")
          if c[5] == 1]
    if pk != [("id", "INTEGER")]:
        raise TraceFormatError(p, f"{schema.STRING_IDS}.id is not the table's INTEGER PRIMARY KEY: not an export "
                                  "tracetui reads")
    ex.meta = {str(k): str(v) for k, v in ex.rows(f"SELECT name, value FROM {quote_name(schema.META_EXPORT)}")
               if k is not None and v is not None}
    ex.version = ex.meta.get(schema.SCHEMA_VERSION, "")
    major = ex.version.split(".", 1)[0]
    if not major.isdigit():
        raise TraceFormatError(p, f"{schema.META_EXPORT} has no {schema.SCHEMA_VERSION}: not an export tracetui reads")
    if int(major) not in schema.KNOWN_MAJOR_VERSIONS:
        known = ", ".join(f"{v}.x" for v in sorted(schema.KNOWN_MAJOR_VERSIONS))
        raise TraceFormatError(p, f"export schema version {ex.version}: tracetui reads schema {known} "
                                  "(export the report with an Nsight Systems release that writes it)")
    present = [t for t in schema.EVENT_COLUMNS if t in ex.tables]
    if not present:
        raise TraceFormatError(p, "the export holds no CUDA or NVTX events (none of the tables "
                                  f"{', '.join(schema.EVENT_COLUMNS)})")
    for t in present:
        need = [c for c in schema.EVENT_COLUMNS[t] if c not in ex.tables[t]]
        if need:
            raise TraceFormatError(p, f"table {t} lacks column {', '.join(need)}: not an export tracetui reads")


# ------------------------------------------------------------------------------ columns
@dataclass
class Block:
    """Rows of one query: integer columns (by name), each row's args JSON, row count."""

    n: int
    cols: dict[str, np.ndarray]
    args: bytes  #: every row's JSON object followed by :data:`ARGS_END` (a query with args)
    text: bytes = b""  #: every row's text, back to back (a query with text)


def int_expr(expr: str, default: int = -1) -> str:
    """``expr`` as a non-NULL integer (``group_concat`` skips NULLs; text or a real becomes
    its integer prefix, so a hostile value can never shift a column)."""
    return f"coalesce(CAST(({expr}) AS INTEGER), {default})"


@dataclass(frozen=True)
class Query:
    """What :func:`fetch_blocks` reads from one table.

    ``columns``: integer columns (name -> SQL expression); ``args``: each row's args as an SQL
    expression of JSON text (or None); ``where``: which rows (an expression of this module, no
    parameter); ``group``: expressions whose distinct values each get a block of their own;
    ``params``: the parameters of ``columns``, ``args`` and ``group`` in the order they appear
    in the SQL (group, columns, args)."""

    table: str
    columns: dict[str, str]
    args: str | None
    where: str = "1"
    group: tuple[str, ...] = ()
    params: tuple[Any, ...] = ()
    #: a join after ``FROM <table> AS t`` (``LEFT JOIN (...) AS x ON ...``; the table is ``t``)
    join: str = ""
    #: the whole FROM clause instead (a subquery of the table), holding :data:`ROWS` once
    source: str = ""
    #: text of each row, joined with nothing between (its byte lengths: a column of its own)
    text: str | None = None

    def sql(self) -> str:
        aggs = [f"CAST(group_concat({int_expr(e)}) AS BLOB)" for e in self.columns.values()]
        aggs.append(f"CAST(group_concat({self.args}, char(10)) AS BLOB)" if self.args else "NULL")
        aggs.append(f"CAST(group_concat({self.text}, '') AS BLOB)" if self.text else "NULL")
        keys = "".join(f"{g}, " for g in self.group)
        if self.source:
            if self.source.count("?") != 2 or ROWS not in self.source:  # pragma: no cover - a bug of this package
                raise AssertionError("a query's source must hold the rowid range and no other parameter")
            sql = f"SELECT {keys}count(*), {', '.join(aggs)} FROM {self.source}"
        else:
            table = f"{quote_name(self.table)} AS t {self.join}".rstrip()
            sql = f"SELECT {keys}count(*), {', '.join(aggs)} FROM {table} WHERE {ROWS} AND ({self.where})"
        if self.group:
            # by position: a key's parameters are not bound twice
            sql += " GROUP BY " + ", ".join(str(i + 1) for i in range(len(self.group)))
        return sql


def fetch_blocks(ex: Export, q: Query, chunk: int = CHUNK_ROWS) -> Iterator[tuple[tuple, Block]]:
    """The rows of ``q.table`` in rowid ranges of ``chunk`` rows, each range as a
    :class:`Block` (or, with ``q.group``, one block per distinct group key in each range),
    yielded with its group key (``()`` without ``q.group``).

    A range that holds no row is skipped to the next rowid there is (an index seek): rowids
    spread wide apart (a damaged or hostile file: 1 and 2**62) cost one query per row at
    worst, never one per empty range."""
    span = ex.rowid_range(q.table)
    if span is None:
        return
    sql = q.sql()
    names = list(q.columns)
    k = len(q.group)
    a, hi = span
    nxt = f"SELECT min(rowid) FROM {quote_name(q.table)} WHERE rowid >= ?"
    with reading(ex.path):
        while a is not None and a <= hi:
            b = min(a + chunk, hi + 1)
            for row in ex.con.execute(sql, (*q.params, a, b)):
                n = int(row[k])
                if not n:
                    continue
                cols = {c: _ints(ex.path, q.table, c, row[k + 1 + i], n) for i, c in enumerate(names)}
                args = bytes(row[k + 1 + len(names)] or b"") + ARGS_END if q.args else b""
                yield tuple(row[:k]), Block(n, cols, args, bytes(row[k + 2 + len(names)] or b""))
            a = ex.con.execute(nxt, (b,)).fetchone()[0] if b <= hi else None


def _ints(path: str, table: str, column: str, text: bytes | None, n: int) -> np.ndarray:
    arr = np.fromstring(text or b"", dtype=np.int64, sep=",") if n else np.zeros(0, np.int64)
    if arr.shape[0] != n:  # pragma: no cover - every value is an integer by int_expr
        raise TraceFormatError(path, f"table {table}: {n:,} rows but {arr.shape[0]:,} values of {column}")
    return arr


def split_args(blob: bytes, n: int, path: str, what: str) -> tuple[bytes, np.ndarray]:
    """(the args of ``n`` rows joined, their lengths) from a block's args string: each row's
    JSON ends with :data:`ARGS_END` (the args are numbers written by ``printf``: no newline in them)."""
    buf = np.frombuffer(blob, dtype=np.uint8)
    ends = np.flatnonzero(buf == ARGS_END[0])
    if ends.shape[0] != n:  # pragma: no cover - one newline per row by construction
        raise TraceFormatError(path, f"{what}: {n:,} rows but {ends.shape[0]:,} args")
    starts = np.concatenate(([0], ends[:-1] + 1))
    lens = (ends - starts).astype(np.int64)
    return blob.replace(ARGS_END, b""), lens  # one C pass (a numpy mask and compress: 5x the time)
