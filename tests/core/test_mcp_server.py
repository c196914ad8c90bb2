"""``tracetui mcp`` driven as an agent drives it (issue 43): the server runs as a subprocess,
the official SDK's client (``mcp.client``) lists its tools and calls each on the shared traces;
every number is checked against the command line's ``--json`` of the same trace (run as a
subprocess), and every refusal (a path outside the roots, a link out of a root, a device, a
FIFO, a query that writes or reads a file, a 10M-row answer) is one line or a capped answer.

One server serves the module (started once: it answers its first request after 1.5-2.5 s); the
comparisons, which run the command line too (1-2 s each, a job's 5 s), are marked slow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import asynccontextmanager

import pytest
from shared_traces import REPO, SHARED, kineto_path

pytest.importorskip("mcp")

from anyio.from_thread import start_blocking_portal  # noqa: E402  (after the skip: anyio comes with mcp)

from tracetui.mcp_server import bounds  # noqa: E402

BERT = str(kineto_path("h100_bert_inference.json.gz").resolve())
MI300 = str(kineto_path("mi300_resnet_train_checkpointing.json.gz").resolve())
JOB = str((SHARED / "multirank" / "param_dlrm_8ranks").resolve())
PAIR = SHARED.resolve() / "et" / "param_dlrm_rank0_cuda_pair"
TOOLS = {"list_traces", "summary", "check", "critical_path", "memory", "diff", "query", "tree", "slice"}


def _env() -> dict[str, str]:
    """The test's cache and (empty) config folders for the server and the command lines."""
    keep = ("TRACETUI_CACHE_DIR", "XDG_CONFIG_HOME", "PATH", "HOME")
    return {k: os.environ[k] for k in keep if k in os.environ}


def cli_json(*args: str) -> dict:
    """What ``tracetui <args> --json`` prints, read back."""
    proc = subprocess.run([sys.executable, "-m", "tracetui", *args, "--json"], capture_output=True, text=True,
                          cwd=REPO, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


class Agent:
    """The SDK's client session, called from the test's thread (an anyio portal runs it)."""

    def __init__(self, portal, session, roots: list[str], out: str) -> None:
        self.portal, self.session, self.roots, self.out = portal, session, roots, out

    def call(self, tool: str, **args):
        return self.portal.call(lambda: self.session.call_tool(tool, args))

    def answer(self, tool: str, **args) -> dict:
        res = self.call(tool, **args)
        text = res.content[0].text
        assert not res.is_error, text
        assert len(text) <= bounds.MAX_CHARS
        return json.loads(text)

    def refusal(self, tool: str, **args) -> str:
        res = self.call(tool, **args)
        text = res.content[0].text
        assert res.is_error, text[:300]
        assert "\n" not in text and "Traceback" not in text, text
        return text

    def resource(self, uri: str) -> str:
        return self.portal.call(lambda: self.session.read_resource(uri)).contents[0].text


@asynccontextmanager
async def _connect(args: list[str], errlog):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "tracetui", "mcp", *args], env=_env(),
                                   cwd=str(REPO))
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    """The server on the shared traces and a folder of the test's (links, a FIFO), with its own
    folder for slices."""
    mine = tmp_path_factory.mktemp("mcp-root")
    out = tmp_path_factory.mktemp("mcp-out")
    (mine / "passwd.json.gz").symlink_to("/etc/passwd")
    (mine / "zero.json").symlink_to("/dev/zero")
    os.mkfifo(mine / "pipe.json")
    with open(tmp_path_factory.getbasetemp() / "mcp-server.log", "w") as log, start_blocking_portal() as portal:
        args = ["--root", str(SHARED), "--root", str(mine), "--out", str(out)]
        with portal.wrap_async_context_manager(_connect(args, log)) as session:
            yield Agent(portal, session, [str(p.resolve()) for p in (SHARED, mine, out)], str(out.resolve()))


def assert_cut_of(answer, full, path: str = "") -> None:
    """``answer`` is ``full`` as the bounds cut it: the same keys and values, each list a
    leading run of the full list (notes apart)."""
    if isinstance(full, dict):
        keys = set(answer) - ({bounds.NOTE} if path == "" else set())
        assert keys == set(full), (path, keys ^ set(full))
        for k, v in full.items():
            assert_cut_of(answer[k], v, f"{path}.{k}")
    elif isinstance(full, list):
        assert isinstance(answer, list) and len(answer) <= len(full), path
        for i, x in enumerate(answer):
            assert_cut_of(x, full[i], f"{path}.{i}")
    else:
        assert answer == full, (path, answer, full)


def assert_notes_count(answer: dict, full: dict) -> None:
    """Each note's ``of`` is the length of the list it names in the full document, and every
    list the answer holds shorter than the document's has a note."""
    notes = {n["what"]: n for n in answer.get(bounds.NOTE, [])}
    for what, n in notes.items():
        assert n["of"] == len(bounds.pick(full, what)), n
        assert n["kept"] == len(bounds.pick({k: v for k, v in answer.items() if k != bounds.NOTE}, what))

    def walk(a, f, path):
        if isinstance(f, dict):
            for k in f:
                walk(a[k], f[k], [*path, k])
        elif isinstance(f, list):
            if len(a) < len(f):
                assert ".".join(map(str, path)) in notes, path
            for i, x in enumerate(a):
                walk(x, f[i], [*path, i])

    walk({k: v for k, v in answer.items() if k != bounds.NOTE}, full, [])


# ---------------------------------------------------------------------------- the tools
def test_every_tool_is_listed_with_a_schema_and_a_description(agent):
    tools = {t.name: t for t in agent.portal.call(agent.session.list_tools).tools}
    assert set(tools) == TOOLS
    for t in tools.values():
        assert t.input_schema["type"] == "object" and t.input_schema["properties"], t.name
        assert len(t.description) > 150, t.name
        for name, prop in t.input_schema["properties"].items():
            assert prop.get("description"), (t.name, name)
    assert set(tools["query"].input_schema["required"]) == {"trace", "sql"}
    assert tools["summary"].input_schema["properties"]["rows"]["anyOf"][0]["maximum"] == bounds.MAX_ROWS


@pytest.mark.slow
def test_check_answers_the_clis_findings(agent):
    got = agent.answer("check", trace=BERT)
    full = cli_json("check", BERT)
    assert_cut_of(got, full)
    assert_notes_count(got, full)
    assert got["findings"][0]["rule"] == full["findings"][0]["rule"]
    assert got["counts"] == full["counts"] and len(got["findings"]) == len(full["findings"])


@pytest.mark.slow
def test_summary_memory_and_tree_answer_the_clis(agent):
    full = cli_json("summary", BERT)
    got = agent.answer("summary", trace=BERT)
    assert_cut_of(got, full)
    assert_notes_count(got, full)
    assert got["gpu_timeline"] == full["gpu_timeline"]
    # the list cut to fit, asked for alone: its items from the note's offset
    note = next(n for n in got[bounds.NOTE] if n["what"] == "kernels")
    page = agent.answer("summary", trace=BERT, part="kernels", offset=note["kept"])
    assert page["value"] == full["kernels"][note["kept"]:]
    full = cli_json("memory", BERT)
    got = agent.answer("memory", trace=BERT)
    assert_cut_of(got, full)
    assert got["devices"][0]["peak_allocated_bytes"] == full["devices"][0]["peak_allocated_bytes"]
    proc = subprocess.run([sys.executable, "-m", "tracetui", "tree", BERT, "--depth", "20"], capture_output=True,
                          text=True, cwd=REPO, env=_env(), timeout=300)
    lines = proc.stdout.splitlines()
    got = agent.answer("tree", trace=BERT, depth=20)
    (note,) = got[bounds.NOTE]
    assert got["lines"] == lines[:note["kept"]] and note["of"] == len(lines) > bounds.TREE_LINES
    page = agent.answer("tree", trace=BERT, depth=20, part="lines", offset=note["kept"])
    assert page["value"] == lines[note["kept"]:note["kept"] + bounds.TREE_LINES]


@pytest.mark.slow
def test_an_et_pair_answers_the_clis_summary(agent):
    kineto, et = str(PAIR / "kineto.json.gz"), str(PAIR / "et.json.gz")
    full = cli_json("summary", kineto, "--et", et)
    got = agent.answer("summary", trace=kineto, et=et)
    assert_cut_of(got, full)
    assert_notes_count(got, full)
    assert got["trace"] == full["trace"] and got["source"] == full["source"]


@pytest.mark.slow
def test_critical_path_answers_the_clis_and_pages_its_segments(agent):
    full = cli_json("critical-path", MI300)
    got = agent.answer("critical_path", trace=MI300)
    assert_cut_of(got, full)
    assert_notes_count(got, full)
    assert got["total_us"] == full["total_us"] and got["by_kind_us"] == full["by_kind_us"]
    assert len(full["segments"]) > bounds.LIST_ROWS
    page = agent.answer("critical_path", trace=MI300, part="segments", offset=25, rows=40)
    assert page["value"] == full["segments"][25:65]
    (note,) = page[bounds.NOTE]
    assert note["from"] == 25 and note["kept"] == 40 and note["of"] == len(full["segments"])
    assert "offset=65" in note["ask"]


@pytest.mark.slow
def test_query_and_diff_answer_the_clis(agent):
    sql = "SELECT name, count(*) AS n, sum(dur_us) AS us FROM kernels GROUP BY name ORDER BY us DESC, name"
    full = cli_json("query", BERT, sql)
    got = agent.answer("query", trace=BERT, sql=sql)
    assert got["rows"] == full and got["more"] is False
    assert got["types"] == {"name": "ENUM", "n": "BIGINT", "us": "DOUBLE"}
    a, b = f"{JOB}/rank0_kineto.json.gz", f"{JOB}/rank1_kineto.json.gz"
    full = cli_json("diff", a, b)
    got = agent.answer("diff", a=a, b=b)
    assert_cut_of(got, full)
    assert_notes_count(got, full)
    assert got["step_time"] == full["step_time"]


@pytest.mark.slow
def test_a_job_folder_answers_the_clis_summary_and_check(agent):
    for tool in ("summary", "check"):
        full = cli_json(tool, JOB)
        got = agent.answer(tool, trace=JOB)
        assert_cut_of(got, full)
        assert_notes_count(got, full)
    assert got["ranks"] == full["ranks"] == list(range(8))  # check's ranks


@pytest.mark.slow
def test_slice_writes_into_the_servers_folder_and_opens_again(agent, tmp_path):
    got = agent.answer("slice", trace=BERT, step=6)
    (written,) = got["files"]
    assert os.path.dirname(written["path"]) == agent.out
    proc = subprocess.run([sys.executable, "-m", "tracetui", "slice", BERT, "--step", "6", "-o",
                           str(tmp_path / "s.json.gz")], capture_output=True, text=True, cwd=REPO, env=_env())
    assert proc.stdout.strip().endswith(written["what"])  # "N of M events", as the command says
    again = agent.answer("summary", trace=written["path"])
    theirs = cli_json("summary", str(tmp_path / "s.json.gz"))
    assert again["trace"] == theirs["trace"] and again["gpu_timeline"] == theirs["gpu_timeline"]


# ---------------------------------------------------------------------------- refusals
def test_paths_outside_the_roots_links_out_and_devices_are_refused(agent):
    roots = ", ".join(f"--root {r}" for r in agent.roots)
    why = agent.refusal("summary", trace="/etc/passwd")
    assert why.endswith(f"refused: /etc/passwd is outside the roots ({roots})")
    assert "is outside the roots" in agent.refusal("check", trace="../../../../etc/passwd")
    assert "is outside the roots" in agent.refusal("summary", trace="/dev/zero")
    assert "is a link to /etc/passwd, outside the roots" in agent.refusal("summary", trace="passwd.json.gz")
    assert "is a link to /dev/zero, outside the roots" in agent.refusal("memory", trace="zero.json")
    assert "is a named pipe (FIFO), not a trace file" in agent.refusal("tree", trace="pipe.json")
    assert "is outside the roots" in agent.refusal("summary", trace=BERT, et="/etc/passwd")
    assert "does not exist under the roots" in agent.refusal("summary", trace="no/such.json")
    assert "is a folder" in agent.refusal("memory", trace=JOB)
    # slices go to the server's folder only: there is no argument naming an output
    assert "output" not in json.dumps([t.input_schema for t in agent.portal.call(agent.session.list_tools).tools])


def test_queries_cannot_write_or_read_files(agent, tmp_path):
    target = tmp_path / "x.csv"
    why = agent.refusal("query", trace=BERT, sql=f"COPY (SELECT 1) TO '{target}'")
    assert "queries may not read or write files (this server's queries never read or write files)" in why
    assert not target.exists()
    why = agent.refusal("query", trace=BERT, sql="SELECT * FROM read_csv('/etc/passwd')")
    assert 'queries may not read or write files' in why and why.endswith(': "/etc/passwd"')
    assert "INSTALL httpfs" in agent.refusal("query", trace=BERT, sql="INSTALL httpfs")


def test_a_ten_million_row_answer_is_capped(agent):
    got = agent.answer("query", trace=BERT, sql="SELECT * FROM range(10000000) t(x)")
    assert [r["x"] for r in got["rows"]] == list(range(bounds.QUERY_ROWS))
    assert got["more"] is True
    (note,) = got[bounds.NOTE]
    assert note["of"] == f"more than {bounds.QUERY_ROWS}" and "OFFSET" in note["ask"]
    # wide rows: the character cap cuts the rows further, and says so
    got = agent.answer("query", trace=BERT, sql="SELECT x, repeat('a', 1000) AS pad FROM range(100) t(x)")
    (note,) = got[bounds.NOTE]
    assert note["kept"] == len(got["rows"]) < 100 and note["of"] == 100


def test_bad_arguments_and_bad_parts_are_one_line(agent):
    assert agent.refusal("summary", trace=BERT, rows="abc") == (
        "summary: bad arguments: rows: Input should be a valid integer, unable to parse string as an integer "
        "(got 'abc')")
    assert agent.refusal("summary").endswith("trace: Field required")
    assert "no 'nope' in the answer" in agent.refusal("check", trace=BERT, part="nope")
    assert "give part too" in agent.refusal("check", trace=BERT, offset=3)
    assert "Parser Error" in agent.refusal("query", trace=BERT, sql="SELEC 1")


# ---------------------------------------------------------------------------- the session
def test_a_trace_opened_once_is_served_from_the_session(agent):
    trace = str(kineto_path("a100_triton.json.gz").resolve())

    def count() -> tuple[int, int]:
        state = json.loads(agent.resource("tracetui://session"))
        return state["loads"], state["reuses"]

    loads, reuses = count()
    agent.answer("summary", trace=trace)
    agent.answer("check", trace=trace)
    agent.answer("query", trace=trace, sql="SELECT count(*) AS n FROM kernels")
    assert count() == (loads + 1, reuses + 2)


def test_the_resources_are_the_glossary_the_tables_and_the_rules(agent):
    uris = {str(r.uri) for r in agent.portal.call(agent.session.list_resources).resources}
    assert uris == {"tracetui://glossary", "tracetui://query-tables", "tracetui://findings-rules",
                    "tracetui://session"}
    assert agent.resource("tracetui://glossary").startswith("# Glossary")
    tables = agent.resource("tracetui://query-tables")
    assert "**kernels**" in tables and "## Tables of a Kineto trace" in tables and "## In the browser" not in tables
    assert "[pageable_copy]" in agent.resource("tracetui://findings-rules")
