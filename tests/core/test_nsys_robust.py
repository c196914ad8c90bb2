"""Bad input of the Nsight Systems format (tests/README.md, docs/security.md): a report not yet
exported, an SQLite file that is no export, an unknown export schema, missing tables and
columns, corrupt pages; each is one line naming the file (exit 2), never a traceback.  Absent
optional tables are fine; the file is never written.  Every odd file is made in tmp_path
from the shared export with sqlite3 and byte edits."""

from __future__ import annotations

import gzip
import os
import random
import sqlite3

import pytest
from nsys_export import KERNEL, MEMCPY, MEMSET, NVTX, RUNTIME, SYNC, copy_with, query
from shared_traces import nsys_path

from tracetui.cli import main
from tracetui.errors import TraceError, TraceFormatError
from tracetui.kineto.kinds import Kind
from tracetui.nsys import load_nsys

EXPORT = "nsys export --type sqlite"


def _other_sqlite(tmp_path, *statements: str, name: str = "other.sqlite", encoding: str | None = None):
    p = tmp_path / name
    con = sqlite3.connect(p)
    if encoding:
        con.execute(f"PRAGMA encoding = '{encoding}'")
    for s in statements:
        con.execute(s)
    con.commit()
    con.close()
    return p


def _page_of(path, table: str) -> int:
    (root,), = query(path, "SELECT rootpage FROM sqlite_master WHERE name = ?", (table,))
    size = int.from_bytes(path.read_bytes()[16:18], "big")
    return (root - 1) * size


def _corrupt_kernel_page(tmp_path):
    p = copy_with(tmp_path, name="corrupt.sqlite")
    at = _page_of(p, KERNEL)
    data = bytearray(p.read_bytes())
    data[at:at + 12] = b"\xff" * 12  # the b-tree page header: no valid page type
    p.write_bytes(bytes(data))
    return p


#: case -> (how to make the file, words the one line says)
CASES = {
    "report": (lambda t: _write(t / "run.nsys-rep", b"\x00NSYS report\x01" * 50), EXPORT),
    "qdstrm": (lambda t: _write(t / "run.qdstrm", os.urandom(4096)), EXPORT),
    "not an export": (lambda t: _other_sqlite(t, "CREATE TABLE results (a INTEGER, b TEXT)"),
                      "an SQLite database but not an Nsight Systems export: no StringIds or META_DATA_EXPORT table"),
    "a view for a table": (lambda t: _other_sqlite(t, "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)",
                                                   "CREATE VIEW StringIds AS SELECT 1 AS id, 'x' AS value"),
                           "not an Nsight Systems export: no StringIds table"),
    "a virtual table for a table": (lambda t: _other_sqlite(t, "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)",
                                                            "CREATE VIRTUAL TABLE StringIds USING fts5(id, value)"),
                                    "not an Nsight Systems export: no StringIds table"),
    "a table without rowid": (lambda t: copy_with(t, f"DROP TABLE {MEMSET}", f"CREATE TABLE {MEMSET} (start INTEGER "
                                                     'PRIMARY KEY, "end" INTEGER, deviceId, contextId, streamId, '
                                                     "correlationId, globalPid, bytes) WITHOUT ROWID"),
                              f"table {MEMSET} has no rowid"),
    "unknown major version": (lambda t: copy_with(t, "UPDATE META_DATA_EXPORT SET value = '4.0.1' WHERE name = "
                                                     "'EXPORT_SCHEMA_VERSION'"),
                              "export schema version 4.0.1: tracetui reads schema 3.x"),
    "no schema version": (lambda t: copy_with(t, "DELETE FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'"),
                          "META_DATA_EXPORT has no EXPORT_SCHEMA_VERSION"),
    "no StringIds": (lambda t: copy_with(t, "DROP TABLE StringIds"), "no StringIds table"),
    "a column missing": (lambda t: copy_with(t, f"ALTER TABLE {KERNEL} DROP COLUMN gridX"),
                         f"table {KERNEL} lacks column gridX"),
    "no event table": (lambda t: copy_with(t, *(f"DROP TABLE {x}" for x in (KERNEL, RUNTIME, NVTX, MEMCPY, MEMSET,
                                                                             SYNC))),
                       "the export holds no CUDA or NVTX events"),
    "string ids without a key": (lambda t: _other_sqlite(t, "CREATE TABLE StringIds (id INTEGER, value TEXT)",
                                                         "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)"),
                                 "StringIds.id is not the table's INTEGER PRIMARY KEY"),
    "utf-16": (lambda t: _other_sqlite(t, "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)",
                                       "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)", encoding="UTF-16le"),
               "the database's text is UTF-16le, not UTF-8"),
    "corrupt page": (_corrupt_kernel_page, "the SQLite database is corrupt (database disk image is malformed)"),
    "cut in half": (lambda t: _write(t / "half.sqlite", nsys_path().read_bytes()[:1 << 20]),
                    "the SQLite database is corrupt"),
    "gzip": (lambda t: _write(t / "x.sqlite.gz", gzip.compress(nsys_path().read_bytes()[:1 << 16])),
             "a compressed file: an SQLite export is read uncompressed"),
}


def _write(p, data: bytes):
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_naming_the_file(case, tmp_path):
    make, words = CASES[case]
    p = make(tmp_path)
    with pytest.raises(TraceFormatError) as err:
        load_nsys(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}: ") and "\n" not in msg, msg
    assert words in msg, msg


@pytest.mark.parametrize("case", ["report", "not an export", "unknown major version", "corrupt page", "gzip"])
def test_the_cli_says_it_on_one_line_and_exits_2(case, tmp_path, capsys):
    p = CASES[case][0](tmp_path)
    assert main(["info", str(p)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "Traceback" not in out.err
    assert CASES[case][1] in out.err and str(p) in out.err


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_damage_anywhere_is_an_error_line_or_a_trace(tmp_path, seed):
    """512 random bytes written at one of 8 places across the file (each seed its own bytes):
    each load gives a trace or one line, in bounded time (a rowid turned huge by the damage
    once made the reader step through 2**62 empty rowid ranges)."""
    src = nsys_path().read_bytes()
    rnd = random.Random(seed)
    seen = set()
    for i, at in enumerate(range(4096, len(src) - 4096, len(src) // 9)):
        p = tmp_path / f"damaged{i}.sqlite"
        p.write_bytes(src[:at] + rnd.randbytes(512) + src[at + 512:])
        try:
            tr = load_nsys(p)
            seen.add("trace")
            assert tr.n_events > 0
        except TraceError as exc:
            seen.add("error")
            assert "\n" not in str(exc) and str(exc).startswith(str(p))
    assert seen  # every case was one of the two


def test_rowids_far_apart_are_read_row_by_row_not_range_by_range(tmp_path):
    """Kernels whose rowids are 10**15 apart: 3,442 queries at worst, not 10**15 / 2**18 of them."""
    p = copy_with(tmp_path, f"UPDATE {KERNEL} SET rowid = rowid * 1000000000000000")
    assert query(p, f"SELECT max(rowid) FROM {KERNEL}")[0][0] == 3442 * 10**15
    tr = load_nsys(p)
    assert tr.kind_counts()["kernel"] == 3442 and tr.gpu_stats.linked == 2092


def test_absent_optional_tables_are_fine(tmp_path):
    p = copy_with(tmp_path, *(f"DROP TABLE {x}" for x in (RUNTIME, NVTX, MEMCPY, MEMSET, SYNC)))
    tr = load_nsys(p)
    assert tr.kind_counts() == {"kernel": 3442}
    assert tr.gpu_stats.linked == 0 and [w.kind for w in tr.warnings] == ["gpu_unlinked"]


def test_odd_values_are_read_without_error(tmp_path):
    """Text where a number belongs, names with quotes, backslashes, control characters and
    non-ASCII letters, an NVTX domain named with a quote: names verbatim, args valid JSON."""
    odd = 'q"uote \\ back\x1b[31m red \u00e9t\u00e9'
    p = copy_with(tmp_path, f"UPDATE {KERNEL} SET gridX = 'abc' WHERE rowid = 1",
                  f"UPDATE {NVTX} SET text = '{odd}' WHERE rowid = 1",
                  f"INSERT INTO {NVTX} (start, \"end\", eventType, globalTid, text, domainId) "
                  "VALUES (0, NULL, 75, 0, 'dom\"ain', 7)",
                  f"UPDATE {NVTX} SET domainId = 7 WHERE rowid = 2")
    tr = load_nsys(p)
    ops = [e for e in range(tr.n_events) if tr.kind[e] in (int(Kind.ANNOTATION), int(Kind.CPU_OP))]
    names = {tr.name(e) for e in ops}
    assert odd in names
    assert any(tr.args(e).get("domain") == 'dom"ain' for e in ops)
    kernels = [e for e in range(tr.n_events) if tr.kind[e] == int(Kind.KERNEL)]
    assert all("<undecodable args>" not in tr.args(e) for e in kernels)
    assert sum(tr.args(e)["grid"][0] == 0 for e in kernels) == 1  # 'abc' reads as 0


def test_the_file_is_never_written(tmp_path):
    folder = tmp_path / "odd %3F? #name"
    folder.mkdir()
    p = copy_with(folder, name="run 100% ?.sqlite")
    os.chmod(p, 0o444)
    before = (p.read_bytes(), os.stat(p).st_mtime_ns)
    tr = load_nsys(p)
    assert tr.kind_counts()["kernel"] == 3442
    assert (p.read_bytes(), os.stat(p).st_mtime_ns) == before
    assert sorted(os.listdir(folder)) == [p.name]  # no journal, WAL or shm file beside it


def test_what_is_not_read_or_shared_is_said(tmp_path):
    """Ranges with no end, graphs traced whole and a stream two processes use: each a warning."""
    (g112,), = query(nsys_path(), "SELECT globalPid FROM PROCESSES WHERE pid = 112")
    p = copy_with(tmp_path, f'UPDATE {NVTX} SET "end" = NULL WHERE rowid IN (5, 6, 7)',
                  "CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER, \"end\" INTEGER, deviceId INTEGER, "
                  "streamId INTEGER, correlationId INTEGER, globalPid INTEGER, graphId INTEGER)",
                  "INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (1, 2, 0, 7, 1, 1, 1), (3, 4, 0, 7, 2, 1, 1)",
                  f"UPDATE {KERNEL} SET deviceId = 0, streamId = 7 WHERE globalPid = {g112} AND rowid % 2 = 0")
    tr = load_nsys(p)
    said = {w.kind: w for w in tr.warnings}
    assert said["nsys_open_range"].count == 3 and "no end" in said["nsys_open_range"].message
    assert said["nsys_not_read"].count == 2 and "--cuda-graph-trace=node" in said["nsys_not_read"].message
    assert said["nsys_shared_stream"].count == 1 and "GPU 0 stream 7" in said["nsys_shared_stream"].message
    assert "nsys_shared_stream" not in {w.kind for w in load_nsys(nsys_path()).warnings}
