"""The parts of ``tracetui mcp`` that need no MCP SDK (issue 43): the caps of an answer and how a
document is cut (:mod:`tracetui.mcp_server.bounds`), the path policy (:mod:`.roots`), the
traces kept loaded (:mod:`.loaded`), the tools called directly (:mod:`.tools`), and the command
without the SDK.  The server itself, driven by the SDK's client: ``test_mcp_server.py``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from shared_traces import REPO, SHARED, kineto_path

from tracetui.errors import TraceError
from tracetui.mcp_server import bounds
from tracetui.mcp_server.bounds import BadRequest, bound
from tracetui.mcp_server.loaded import LoadedTraces
from tracetui.mcp_server.roots import Refused, Roots
from tracetui.mcp_server.tools import Tools

TRITON = kineto_path("a100_triton.json.gz")
BERT = kineto_path("h100_bert_inference.json.gz")


# ---------------------------------------------------------------------------- bounds
def test_lists_keep_rows_items_and_a_note_says_how_to_ask_for_the_rest():
    doc = {"a": list(range(100)), "b": {"c": [{"d": list(range(30))}]}, "e": 1}
    out = bound(doc, tool="summary")
    assert out["a"] == list(range(bounds.LIST_ROWS)) and out["b"]["c"][0]["d"] == list(range(25)) and out["e"] == 1
    notes = {n["what"]: n for n in out[bounds.NOTE]}
    assert notes["a"] == {"what": "a", "kept": 25, "from": 0, "of": 100,
                          "ask": f'call summary again with part="a" offset=25 (rows= up to {bounds.MAX_ROWS} items a '
                                 f'call)'}
    assert notes["b.c.0.d"]["of"] == 30
    page = bound(doc, tool="summary", part="a", offset=90, rows=5)
    assert page["value"] == [90, 91, 92, 93, 94] and page["part"] == "a"
    assert page[bounds.NOTE][0]["ask"].startswith('call summary again with part="a" offset=95 (rows=')
    last = bound(doc, tool="summary", part="b.c.0.d", offset=20)
    assert last["value"] == list(range(20, 30)) and last[bounds.NOTE][0]["ask"] == "the rest is before offset 20"
    assert bound({"x": [1, 2]}, tool="t") == {"x": [1, 2]}  # nothing cut: no note


def test_bad_parts_offsets_and_rows_are_one_line():
    doc = {"a": [1, 2], "k.with.dots": {"v": 3}, "n": 5}
    assert bound(doc, tool="t", part="k.with.dots.v")["value"] == 3  # a key holding dots is matched whole
    for kwargs, message in [({"part": "zzz"}, "part='zzz': no 'zzz' in the answer (keys: a, k.with.dots, n)"),
                            ({"part": "a.7"}, "part='a.7': a is a list of 2 items: give an index from 0 to 1"),
                            ({"part": "n.x"}, "part='n.x': n is a single value, it has no parts"),
                            ({"offset": 2}, "offset=2: give part too"),
                            ({"part": "n", "offset": 1}, "offset=1: part='n' is not a list"),
                            ({"rows": 0}, f"rows=0: give 1 to {bounds.MAX_ROWS}"),
                            ({"offset": -1}, "offset=-1: give 0 or more")]:
        with pytest.raises(BadRequest) as err:
            bound(doc, tool="t", **kwargs)
        assert message in str(err.value) and "\n" not in str(err.value)


def test_the_character_cap_cuts_the_biggest_list_then_long_strings():
    doc = {"small": list(range(10)), "big": ["x" * 500] * 100}
    out = bound(doc, tool="t", rows=200)
    assert len(bounds.text(out)) <= bounds.MAX_CHARS
    assert out["small"] == list(range(10))  # the biggest list pays
    (note,) = out[bounds.NOTE]
    assert note["what"] == "big" and note["of"] == 100 and note["kept"] == len(out["big"]) < 100
    assert "to stay under 20,000 characters" in note["ask"]
    out = bound({"s": "y" * 50_000}, tool="t")
    assert out["s"] == "y" * bounds.STRING_CHARS + "…"
    assert out[bounds.NOTE] == [{"what": "s", "cut": "string", "kept": bounds.STRING_CHARS, "of": 50_000}]
    many = {f"k{i}": "z" * 1500 for i in range(40)}  # no list, each string short: only parts can be asked
    out = bound(many, tool="t")
    assert len(bounds.text(out)) <= bounds.MAX_CHARS and len(out["parts"]) == 40
    assert "call t again with part=<one of parts>" in out[bounds.NOTE][0]["ask"]


# ---------------------------------------------------------------------------- roots
def test_only_regular_files_under_the_roots_are_read(tmp_path):
    root, other = tmp_path / "root", tmp_path / "other"
    root.mkdir()
    other.mkdir()
    (root / "sub").mkdir()
    (root / "sub" / "t.json").write_text("{}")
    (other / "secret.json").write_text("{}")
    (root / "out.json").symlink_to(other / "secret.json")
    (root / "in.json").symlink_to(root / "sub" / "t.json")
    (root / "shared").symlink_to(SHARED)  # a link to a folder that is itself a root: allowed
    os.mkfifo(root / "fifo.json")
    roots = Roots.of([str(root), str(SHARED)])
    real = str((root / "sub" / "t.json").resolve())
    assert roots.resolve("sub/t.json") == real == roots.resolve(str(root / "sub" / "t.json"))
    assert roots.resolve("in.json") == real
    assert roots.resolve("shared/kineto/a100_triton.json.gz") == str(TRITON.resolve())
    assert roots.resolve("kineto/a100_triton.json.gz") == str(TRITON.resolve())  # relative to the second root
    assert roots.resolve("sub", folder=True) == str((root / "sub").resolve())
    cases = {"out.json": f"is a link to {(other / 'secret.json').resolve()}, outside the roots",
             str(other / "secret.json"): "is outside the roots",
             "../other/secret.json": "is outside the roots",
             "/dev/zero": "is outside the roots",
             "fifo.json": "is a named pipe (FIFO), not a trace file: only regular files are read",
             "sub": "is a folder: give a trace file",
             "nope.json": "does not exist under the roots",
             "a\0b": "is not a trace path"}
    for path, why in cases.items():
        with pytest.raises(Refused) as err:
            roots.resolve(path)
        assert why in str(err.value) and str(err.value).startswith("refused: "), (path, str(err.value))
    with pytest.raises(TraceError, match="--root: not a folder"):
        Roots.of([str(root / "sub" / "t.json")])


# ---------------------------------------------------------------------------- loaded traces
def test_loaded_traces_are_reused_reloaded_when_edited_and_evicted_by_memory(tmp_path):
    a, b = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    a.write_bytes(TRITON.read_bytes())
    b.write_bytes(TRITON.read_bytes())
    kept = LoadedTraces(budget=1 << 40)
    first = kept.get([str(a)])
    assert kept.get([str(a)]) is first and (kept.loads, kept.reuses) == (1, 1)
    os.utime(a, ns=(1, 1))  # the file changed: loaded again, the old load dropped
    assert kept.get([str(a)]) is not first and kept.loads == 2 and len(kept.items) == 1
    kept.budget = first.nbytes + 1  # room for one: the least recently used goes
    kept.get([str(b)])
    assert [k[0][0] for k in kept.items] == [str(b)] and kept.used() <= kept.budget
    assert kept.state()["loads"] == 3 and kept.state()["loaded"][0]["files"] == [str(b)]


# ---------------------------------------------------------------------------- the tools, directly
@pytest.fixture
def tools(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    t = Tools(Roots.of([str(SHARED), str(out)]), str(out), 1 << 30, 30.0)
    yield t
    t.close()


def test_slices_go_to_the_servers_folder_under_new_names(tools):
    one = tools.slice(str(BERT), step=6)["files"][0]["path"]
    two = tools.slice(str(BERT), step=6)["files"][0]["path"]
    assert os.path.dirname(one) == os.path.dirname(two) == tools.out_dir
    assert os.path.basename(one) == "slice-1-h100_bert_inference.json.gz" != os.path.basename(two)
    assert tools.summary(one)["trace"]["events"] < tools.summary(str(BERT))["trace"]["events"]
    with pytest.raises(BadRequest, match="say what to keep"):
        tools.slice(str(BERT))
    with pytest.raises(TraceError, match="no ProfilerStep#99|no step 99"):
        tools.slice(str(BERT), step=99)


def test_a_query_is_capped_and_never_touches_files(tools, tmp_path):
    got = tools.query(str(BERT), "SELECT x FROM range(1000) t(x)", rows=10)
    assert [r["x"] for r in got["rows"]] == list(range(10)) and got["more"] is True
    with pytest.raises(TraceError) as err:
        tools.query(str(BERT), f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}'")
    assert "(this server's queries never read or write files)" in str(err.value) and "--allow-files" not in str(
        err.value)
    assert not (tmp_path / "x.csv").exists()
    wide = tools.query(str(BERT), "SELECT x, repeat('a', 500) AS pad FROM range(1000) t(x)")
    (note,) = wide[bounds.NOTE]  # cut by characters, and more rows than a query answers: one note
    assert note["what"] == "rows" and note["kept"] == len(wide["rows"]) < bounds.QUERY_ROWS
    assert note["of"] == f"more than {bounds.QUERY_ROWS}" and f"OFFSET {note['kept']}" in note["ask"]
    assert tools.query(str(BERT), "CREATE VIEW k AS SELECT * FROM kernels")["statement"] == "create"
    assert tools.query(str(BERT), "SELECT count(*) AS n FROM k")["rows"] == [{"n": 60}]  # the session keeps it


def test_list_traces_names_the_files_and_job_folders_by_content(tools, monkeypatch):
    got = tools.list_traces(str(SHARED / "multirank"), rows=100)
    assert {f["format"] for f in got["files"]} == {"kineto", "et"} and len(got["files"]) == 16
    assert got["folders"] == [{"path": str(SHARED.resolve() / "multirank" / "param_dlrm_8ranks"), "trace_files": 16}]
    assert "incomplete" not in got
    monkeypatch.setattr("tracetui.mcp_server.tools.LIST_FILES", 3)  # a root as big as a disk stays cheap
    got = tools.list_traces(str(SHARED / "multirank"))
    assert len(got["files"]) == 3 and got["incomplete"].startswith("stopped after looking at 3 files")


# ---------------------------------------------------------------------------- the command
def test_the_command_without_the_sdk_is_one_line_and_the_parser_imports_none_of_it(tmp_path):
    code = ("import sys; sys.modules['mcp'] = None\n"
            "from tracetui.cli.entry import build_parser, main\n"
            "build_parser()\n"
            "assert 'tracetui.mcp_server' not in sys.modules and 'pydantic' not in sys.modules\n"
            f"sys.exit(main(['mcp', '--root', {str(tmp_path)!r}]))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TRACETUI_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("tracetui: mcp: needs the MCP SDK (pip install 'tracetui[mcp]')")
    assert proc.stderr.count("\n") == 1
