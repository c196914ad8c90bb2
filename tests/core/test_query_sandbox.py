"""The query sandbox (issue 40; docs/query.md "The sandbox", docs/security.md promise 7).

SQL may come from someone else (a shared ``--file q.sql``, a program passing SQL on), so
every query session has no file, network or extension, its settings locked and a time limit.
Each refusal is checked through the Python API (``QuerySession``) and through the command
line (the query as an argument and from ``--file``; stdout not a terminal, and in child
processes with stdout a pipe): one line naming what was refused and, where it would allow
it, ``--allow-files``; exit 2; nothing written.  The trace's own tables still answer (their
counts read from the raw file)."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import threading

import orjson
import pandas as pd
import pytest
from shared_traces import REPO, kineto_path

from tracetui.cli import main
from tracetui.query import QueryError, QuerySession
from tracetui.query import sandbox as sb
from tracetui.session import open_traces

BERT = str(kineto_path("h100_bert_inference.json.gz"))
FILES = "(tracetui query --allow-files allows it)"
EXT = "queries may not install or load DuckDB extensions (they could reach the network)"
LOCKED = "is locked: queries may not change DuckDB's settings"
#: a query that runs for hours unless stopped (range(1e12) is not bound by DuckDB 2: a DOUBLE)
RUNAWAY = "SELECT count(*) FROM range(1000000000000) t(x) WHERE x % 7 = 3"


def raw_kernel_names() -> list[str]:
    with gzip.open(BERT) as fh:
        events = orjson.loads(fh.read())["traceEvents"]
    return [e["name"] for e in events if isinstance(e, dict) and e.get("cat") == "kernel"]


def refusals(tmp) -> list[tuple[str, str]]:
    """(SQL, the message after ``query: ``) for each thing the sandbox refuses."""
    out, db, folder = tmp / "out.csv", tmp / "x.db", tmp / "export"
    files = "queries may not read or write files " + FILES
    return [
        (f"COPY (SELECT name FROM kernels) TO '{out}'", f'{files}: "{out}"'),
        (f"ATTACH '{db}' AS x", f'{files}: "{db}"'),
        (f"EXPORT DATABASE '{folder}'", f'{files}: "{folder}"'),
        ("SELECT * FROM read_csv('/etc/passwd')", f'{files}: "/etc/passwd"'),
        ("SELECT * FROM read_text('/etc/passwd')", f'{files}: "/etc/passwd"'),
        ("SELECT * FROM glob('/etc/*')", f'{files}: "/etc/*"'),
        ("INSTALL httpfs", f"INSTALL httpfs: {EXT}"),
        ("FORCE INSTALL httpfs FROM 'http://example.com'", f"FORCE INSTALL httpfs: {EXT}"),
        ("LOAD httpfs", f"LOAD httpfs: {EXT}"),
        ("SELECT 1; UPDATE EXTENSIONS", f"UPDATE EXTENSIONS: {EXT}"),
        ("SELECT * FROM read_csv('https://example.com/x.csv')",
         'queries may not reach the network (no DuckDB extension is loaded): "https://example.com/x.csv"'),
        ("SET threads = 1", f'the setting "threads" {LOCKED}'),
        ("PRAGMA memory_limit = '1TB'", f'the setting "memory_limit" {LOCKED}'),
        ("RESET temp_directory", f'the setting "temp_directory" {LOCKED}'),
        ("SET enable_external_access = true", f'the setting "enable_external_access" {LOCKED} {FILES}'),
    ]


@pytest.fixture(scope="module")
def bert():
    s = QuerySession.for_trace(open_traces([BERT]))
    yield s
    s.close()


def test_each_refusal_through_the_api(bert, tmp_path):
    for sql, said in refusals(tmp_path):
        with pytest.raises(QueryError) as err:
            bert.run(sql)
        assert str(err.value) == f"query: {said}", sql
    assert os.listdir(tmp_path) == []  # nothing written
    assert bert.run("SELECT count(*) FROM kernels WHERE kind = 'kernel'").rows == [(len(raw_kernel_names()),)]


def test_the_tables_are_registered_with_external_access_off(bert):
    """The trace's frames are DuckDB views made after the sandbox is locked; DuckDB reads no
    Python variable by its name (a DataFrame in the calling function is not a table)."""
    settings = dict(bert.run("SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access', "
                             "'lock_configuration', 'temp_directory', 'python_enable_replacements', "
                             "'autoinstall_known_extensions', 'autoload_known_extensions', "
                             "'allow_community_extensions')").rows)
    assert settings == {"enable_external_access": "false", "lock_configuration": "true", "temp_directory": "",
                        "python_enable_replacements": "false", "autoinstall_known_extensions": "false",
                        "autoload_known_extensions": "false", "allow_community_extensions": "false"}
    names = raw_kernel_names()
    assert bert.run("SELECT count(DISTINCT name) FROM kernels WHERE kind = 'kernel'").rows == [(len(set(names)),)]
    secret = pd.DataFrame({"x": [1]})  # noqa: F841 -- the variable a replacement scan would find
    with pytest.raises(QueryError, match="Table with name secret does not exist"):
        bert.run("SELECT * FROM secret")


def test_memory_is_a_share_of_what_is_available(monkeypatch):
    monkeypatch.setenv("TRACETUI_MEMORY_LIMIT_MB", f"{(2 << 30) / 1e6}")  # 2 GiB, in MB
    s = QuerySession.for_trace(open_traces([BERT]))
    try:
        assert sb.MEMORY_SHARE == 0.5  # so DuckDB may use 1 GiB
        assert s.run("SELECT current_setting('memory_limit')").rows == [("1.0 GiB",)]
    finally:
        s.close()


def test_a_runaway_query_stops_at_the_time_limit():
    s = QuerySession.for_trace(open_traces([BERT]), timeout_s=0.5)
    try:
        with pytest.raises(QueryError) as err:
            s.run(RUNAWAY)
        assert str(err.value) == "query: stopped after 0.5 s (--timeout)"
        with pytest.raises(QueryError, match=r"^query: Binder Error: No function matches .*'range\(DOUBLE\)'"):
            s.run("SELECT count(*) FROM range(1e12)")  # DuckDB 2 does not take a DOUBLE there
        assert s.run("SELECT 42").rows == [(42,)]  # the session goes on
    finally:
        s.close()


def test_a_cancel_stops_the_query_before_or_while_it_runs(monkeypatch):
    s = QuerySession.for_trace(open_traces([BERT]), timeout_s=None)
    cancel = threading.Event()
    cancel.set()  # Esc while the tables were built: they are kept, the statement never runs
    with pytest.raises(QueryError, match="^query: cancelled$"):
        s.run("SELECT count(*) FROM ops", cancel=cancel)
    assert "ops" in s._ready
    fetch = QuerySession._fetch

    def cancelled_as_it_starts(self, sql, max_rows):
        self.interrupt()  # from the statement's own thread: the waiting thread interrupts DuckDB
        return fetch(self, sql, max_rows)

    monkeypatch.setattr(QuerySession, "_fetch", cancelled_as_it_starts)
    with pytest.raises(QueryError, match="^query: cancelled$"):
        s.run(RUNAWAY)
    monkeypatch.setattr(QuerySession, "_fetch", fetch)
    assert s.run("SELECT count(*) FROM ops WHERE name = 'aten::addmm'").rows[0][0] > 0
    s.close()


def test_allow_files_writes_and_reads_files_and_nothing_more(tmp_path):
    s = QuerySession.for_trace(open_traces([BERT]), allow_files=True)
    out = tmp_path / "kernels.csv"
    try:
        res = s.run(f"COPY (SELECT name FROM kernels WHERE kind = 'kernel' ORDER BY ts_us) TO '{out}'")
        assert res.statement == "copy" and res.columns == []
        assert s.run(f"SELECT count(*) FROM read_csv('{out}')").rows == [(len(raw_kernel_names()),)]
        for sql, said in [("INSTALL httpfs", f"INSTALL httpfs: {EXT}"),
                          ("SELECT * FROM read_csv('https://example.com/x.csv')",
                           'queries may not reach the network (no DuckDB extension is loaded): '
                           '"https://example.com/x.csv"'),
                          ("SET threads = 1", f'the setting "threads" {LOCKED}')]:
            with pytest.raises(QueryError) as err:
                s.run(sql)
            assert str(err.value) == f"query: {said}"
    finally:
        s.close()
    with open(out, encoding="utf-8") as fh:
        assert fh.readline() == "name\n" and len(fh.readlines()) == len(raw_kernel_names())


@pytest.mark.slow
def test_each_refusal_through_the_cli_as_an_argument_and_from_a_file(tmp_path, capsys):
    for k, (sql, said) in enumerate(refusals(tmp_path)):
        q = tmp_path.parent / f"{tmp_path.name}-q{k}.sql"
        q.write_text(sql + "\n")
        for how in ([sql], ["--file", str(q)]):
            assert main(["query", BERT, *how, "--csv"]) == 2, (sql, how)
            got = capsys.readouterr()
            assert got.out == "" and got.err == f"tracetui: query: {said}\n", (sql, how)
    assert os.listdir(tmp_path) == []


def test_the_cli_refuses_a_copy_and_a_bad_timeout(tmp_path, capsys):
    out = tmp_path / "out.csv"
    assert main(["query", BERT, f"COPY kernels TO '{out}'"]) == 2
    assert capsys.readouterr().err == (f'tracetui: query: queries may not read or write files {FILES}: "{out}"\n')
    q = tmp_path / "q.sql"
    q.write_text("INSTALL httpfs;\n")
    assert main(["query", BERT, "--file", str(q)]) == 2
    assert capsys.readouterr().err == f"tracetui: query: INSTALL httpfs: {EXT}\n"
    assert main(["query", BERT, "SELECT count(*) FROM range(1e12)"]) == 2  # DuckDB 2: range takes no DOUBLE
    err = capsys.readouterr().err
    assert err.startswith("tracetui: query: Binder Error: No function matches") and err.count("\n") == 1
    assert main(["query", BERT, "SELECT 1", "--timeout", "-1"]) == 2
    assert capsys.readouterr().err == "tracetui: query: --timeout -1: give the seconds a query may run (0: no limit)\n"
    assert sorted(os.listdir(tmp_path)) == ["q.sql"]


def _child(args: list[str], tmp_path, script: str | None = None) -> subprocess.CompletedProcess:
    """``tracetui`` in a child process, stdout and stderr pipes (SIGINT as a shell gives it)."""
    cmd = [sys.executable, "-c", script or "import sys; from tracetui.cli import main; sys.exit(main())", *args]
    env = dict(os.environ, TRACETUI_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.mark.slow
def test_through_a_pipe_refusals_the_time_limit_and_allow_files(tmp_path):
    q = tmp_path / "q.sql"
    q.write_text("SELECT count(*) FROM kernels;\nSELECT * FROM read_text('/etc/passwd');\n")
    p = _child(["query", BERT, "--file", str(q)], tmp_path)
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == f'tracetui: query: queries may not read or write files {FILES}: "/etc/passwd"\n'
    p = _child(["query", BERT, RUNAWAY, "--timeout", "1"], tmp_path)
    assert (p.returncode, p.stdout, p.stderr) == (2, "", "tracetui: query: stopped after 1 s (--timeout)\n")
    out = tmp_path / "names.csv"
    p = _child(["query", BERT, f"COPY (SELECT name FROM kernels WHERE kind = 'kernel') TO '{out}'", "--allow-files"],
               tmp_path)
    assert (p.returncode, p.stderr) == (0, "") and p.stdout == "0 rows\n"
    assert out.read_text().count("\n") == 1 + len(raw_kernel_names())


#: the CLI in a child that sends itself SIGINT (Ctrl+C) as the statement starts
_CTRL_C = """
import os, signal, sys
from tracetui.query.engine import QuerySession
fetch = QuerySession._fetch
def ctrl_c(self, sql, max_rows):
    os.kill(os.getpid(), signal.SIGINT)
    return fetch(self, sql, max_rows)
QuerySession._fetch = ctrl_c
from tracetui.cli import main
sys.exit(main())
"""


@pytest.mark.slow
def test_ctrl_c_interrupts_the_query_and_exits_130(tmp_path):
    p = _child(["query", BERT, RUNAWAY, "--timeout", "0"], tmp_path, _CTRL_C)
    assert (p.returncode, p.stdout, p.stderr) == (130, "", "")
