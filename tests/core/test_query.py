"""`tracetui query`: SQL over a trace or a job, checked against figures read from the raw JSON
(not from tracetui's own model): kernels per stream, GPU time per category, kernels per
launching op, links per method, a job's kernels per rank, and a bad query's message."""

from __future__ import annotations

import collections
import gzip
import json
import os
import subprocess
import sys

import orjson
import pytest
from shared_traces import ET_DIR, SHARED, kineto_path

from tracetui.cli import main
from tracetui.query import QueryError, QuerySession
from tracetui.session import load_pair, load_trace, open_traces

BERT = "h100_bert_inference.json.gz"
MI300 = "mi300_resnet_train_checkpointing.json.gz"
JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def raw_events(path) -> list[dict]:
    with gzip.open(path) as fh:
        return [e for e in orjson.loads(fh.read())["traceEvents"] if isinstance(e, dict)]


@pytest.fixture(scope="module")
def mi300():
    s = QuerySession.for_trace(open_traces([str(kineto_path(MI300))]))
    yield s
    s.close()


@pytest.fixture(scope="module")
def bert():
    s = QuerySession.for_trace(open_traces([str(kineto_path(BERT))]))
    yield s
    s.close()


def test_kernels_per_stream_equal_the_raw_count(mi300):
    raw = collections.Counter((e["pid"], e["tid"]) for e in raw_events(kineto_path(MI300)) if e.get("cat") == "kernel")
    res = mi300.run("SELECT device, stream, count(*) AS n FROM kernels WHERE kind = 'kernel' GROUP BY ALL")
    assert {(d, s): n for d, s, n in res.rows} == dict(raw)
    assert raw == {(2, 0): 2978, (2, 4): 17}  # two streams, as the manifest says


@pytest.mark.slow
def test_gpu_time_per_category_against_the_raw_durations(mi300):
    ev = raw_events(kineto_path(MI300))
    total = sum(e["dur"] for e in ev if e.get("cat") in GPU_CATS)
    nccl = sum(e["dur"] for e in ev if e.get("cat") == "kernel" and "nccl" in e["name"].lower())
    res = dict(mi300.run("SELECT category, sum(dur_us) FROM gpu_events GROUP BY category").rows)
    assert sum(res.values()) == pytest.approx(total, rel=1e-12)
    assert res["communication"] == pytest.approx(nccl, rel=1e-12) and nccl > 0
    # the same numbers as `tracetui summary`'s kernel categories (one definition)
    from tracetui.analysis.summary import build_summary

    cats = {c["category"]: c["total_ms"] for c in build_summary(mi300.source.linked)["kernel_categories"]}
    assert {k: v / 1e3 for k, v in res.items()} == pytest.approx(cats)


def test_kernels_per_launching_op_equal_the_raw_external_ids(bert):
    ev = raw_events(kineto_path(BERT))
    op_of_ext = {e["args"]["External id"]: e["name"] for e in ev if e.get("cat") == "cpu_op"}
    launch = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    raw = collections.Counter(op_of_ext[launch[e["args"]["correlation"]]["args"]["External id"]]
                              for e in ev if e.get("cat") == "kernel")
    res = bert.run("SELECT op_name, count(*) FROM kernels WHERE kind = 'kernel' GROUP BY op_name")
    assert dict(res.rows) == dict(raw) and raw["aten::addmm"] == 26
    # and the ops table's direct GPU events of aten::addmm say the same
    assert bert.run("SELECT sum(gpu_events_direct) FROM ops WHERE name = 'aten::addmm'").rows == [(26,)]


def test_launch_links_per_method_equal_the_raw_correlations(mi300):
    ev = raw_events(kineto_path(MI300))
    corr = {e["args"]["correlation"] for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
            and "correlation" in e.get("args", {})}
    linked = sum(1 for e in ev if e.get("cat") in GPU_CATS and e["args"].get("correlation") in corr)
    res = mi300.run("SELECT kind, method, count(*) FROM links GROUP BY ALL ORDER BY ALL")
    by = {(k, m): n for k, m, n in res.rows}
    assert by[("launch", "correlation")] == linked
    assert ("launch", "flow") not in by  # every link of this trace is by correlation
    assert by[("fwd_bwd", "sequence number")] > 0  # training trace: backward ops with a forward op


def test_et_links_per_method_equal_the_raw_rf_ids():
    pair = ET_DIR / "torch_cpu_pair"
    linked = load_pair(pair / "et.json.gz", pair / "kineto.json.gz")
    with gzip.open(pair / "et.json.gz") as fh:
        nodes = json.load(fh)["nodes"]
    k_rf = {e["args"]["Record function id"] for e in raw_events(pair / "kineto.json.gz")
            if e.get("cat") in ("cpu_op", "user_annotation") and e.get("args", {}).get("Record function id")}
    et_rf = [a["value"] for n in nodes for a in n.get("attrs", []) if a["name"] == "rf_id" and a["value"]]
    expected = sum(1 for r in et_rf if r in k_rf)
    s = QuerySession.for_trace(linked)
    rows = s.run("SELECT method, heuristic, count(*) FROM links WHERE kind = 'et' GROUP BY ALL").rows
    assert rows == [("rf_id", False, expected)] and expected == 3200
    # the ET node id of a link is the node whose rf_id matches the Kineto op's Record function id
    one = s.run("SELECT l.et_node, e.rf_id FROM links l JOIN events e ON e.event = l.dst_event "
                "WHERE l.kind = 'et' ORDER BY l.et_node LIMIT 1").rows[0]
    node = next(n for n in nodes if n["id"] == one[0])
    assert [a["value"] for a in node["attrs"] if a["name"] == "rf_id"] == [one[1]]


def _et_seq(node: dict) -> int | None:
    """A raw ET node's seq_id (flat schema: a key; attrs schema: an attr)."""
    return node.get("seq_id", next((a["value"] for a in node.get("attrs", []) if a["name"] == "seq_id"), None))


@pytest.mark.parametrize(("pair", "by_sequence", "by_order"),
                         [pytest.param("param_linear_cuda_pair", 159, 769, marks=pytest.mark.slow),
                          ("hta_simple_add_cuda_pair", 6, 30)])
def test_et_links_per_method_without_rf_ids(pair, by_sequence, by_order):
    """No Record function ids: the links found by a sequence number are exactly the (name,
    sequence number) pairs that occur once in the raw ET and once in the raw Kineto file;
    the rest are found by order; all are heuristic; the counts are the link's own."""
    d = ET_DIR / pair
    with gzip.open(d / "et.json.gz") as fh:
        nodes = json.load(fh)["nodes"]
    et_pairs = collections.Counter((n["name"], _et_seq(n)) for n in nodes if _et_seq(n) not in (None, -1))
    k_pairs = collections.Counter((e["name"], e["args"]["Sequence number"]) for e in raw_events(d / "kineto.json.gz")
                                  if e.get("cat") in ("cpu_op", "user_annotation")
                                  and "Sequence number" in e.get("args", {}))
    unique_in_both = {p for p, c in et_pairs.items() if c == 1 and k_pairs.get(p) == 1}
    linked = load_pair(d / "et.json.gz", d / "kineto.json.gz")
    s = QuerySession.for_trace(linked)
    rows = s.run("SELECT method, heuristic, count(*) FROM links WHERE kind = 'et' GROUP BY ALL").rows
    assert sorted(rows) == [("order", True, by_order), ("sequence number", True, by_sequence)]
    st = linked.link.stats
    assert (st.by_rf_id, st.by_sequence, st.by_order) == (0, by_sequence, by_order)
    by_node = {n["id"]: n for n in nodes}
    seq_links = s.run("SELECT l.et_node, e.name, e.seq FROM links l JOIN events e ON e.event = l.dst_event "
                      "WHERE l.kind = 'et' AND l.method = 'sequence number'").rows
    assert {(name, seq) for _, name, seq in seq_links} == unique_in_both and len(unique_in_both) == by_sequence
    assert all((by_node[n]["name"], _et_seq(by_node[n])) == (name, seq) for n, name, seq in seq_links)


@pytest.mark.slow
def test_job_query_has_a_rank_column_with_each_ranks_raw_kernel_count():
    raw = {}
    for r in range(8):
        ev = raw_events(os.path.join(JOB, f"rank{r}_kineto.json.gz"))
        raw[r] = sum(1 for e in ev if e.get("cat") == "kernel")
    s = QuerySession.for_job([JOB])
    res = s.run("SELECT rank, count(*) FROM kernels WHERE kind = 'kernel' GROUP BY rank ORDER BY rank")
    assert res.rank_column == "rank" and dict(res.rows) == raw
    colls = s.run("SELECT count(*), min(ranks) FROM collectives").rows[0]
    assert colls[0] > 0 and colls[1] == 8
    s.close()


def test_a_bad_query_gets_duckdbs_message_on_one_line_and_exit_2(bert, capsys):
    with pytest.raises(QueryError) as err:
        bert.run("SELECT no_such_column FROM kernels")
    msg = str(err.value)
    assert msg.startswith('query: Binder Error: Referenced column "no_such_column" not found') and "\n" not in msg
    rc = main(["query", str(kineto_path(BERT)), "SELEC 1"])
    out = capsys.readouterr()
    assert rc == 2 and out.out == ""
    assert out.err == 'tracetui: query: Parser Error: syntax error at or near "SELEC"\n'


def test_cli_csv_json_and_file(tmp_path, capsys):
    path = str(kineto_path(BERT))
    assert main(["query", path, "SELECT stream, count(*) AS n FROM kernels GROUP BY stream", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"stream": 7, "n": 60}]  # 60 kernels (+1 memcpy: gpu_events)
    q = tmp_path / "q.sql"
    q.write_text("SELECT step, gpu_events FROM steps")
    assert main(["query", path, "--file", str(q), "--csv"]) == 0
    assert capsys.readouterr().out == "step,gpu_events\n6,61\n"
    assert main(["query", path, "SELECT name FROM kernels ORDER BY ts_us LIMIT 1"]) == 0
    out = capsys.readouterr().out
    assert "indexSelectLargeIndex" in out and "1 row" in out


def test_event_ids_args_and_the_result_api(bert):
    res = bert.run("SELECT event, name, arg(event, 'grid') AS grid FROM kernels ORDER BY ts_us LIMIT 2")
    assert res.columns == ["event", "name", "grid"] and res.types == ["BIGINT", "ENUM", "VARCHAR"]
    assert res.event_column == "event" and res.rank_column is None
    kt = bert.source.linked.kineto
    ev = res.rows[0][0]
    assert kt.name(ev) == res.rows[0][1] and json.loads(res.rows[0][2]) == kt.args(ev)["grid"]
    keys = dict(bert.run(f"SELECT key, value FROM args WHERE event = {ev}").rows)
    assert keys["grid"] == "[564,1,1]" and keys["device"] == "0"
    assert bert.run("SELECT next_event FROM gaps LIMIT 1").event_column == "next_event"


def test_driver_trace_tables(tmp_path):
    """The bpftrace file of tests/driver_files.py: its numbers are known by construction."""
    from driver_files import IOCTL_A, IOCTL_B, bpftrace_file

    path = bpftrace_file().write(tmp_path / "b.jsonl")
    s = QuerySession.for_trace(open_traces([str(path)]))
    calls = dict(s.run("SELECT name, count(*) FROM calls GROUP BY name").rows)
    assert calls["cuLaunchKernel"] == 9 and calls["cuMemAlloc_v2"] == 2 and calls["cuStreamSynchronize"] == 2
    assert s.run("SELECT name, retval FROM calls WHERE failed").rows == [("cuLaunchKernel", 1)]
    io = s.run("SELECT cmd, count(*), min(retval) FROM ioctls GROUP BY cmd ORDER BY cmd").rows
    assert io == sorted([(IOCTL_A, 9, 0), (IOCTL_B, 1, -22)])
    assert s.run("SELECT max(total_allocated_bytes) FROM records WHERE record = 'alloc'").rows == [(3 << 20,)]
    assert s.run("SELECT direction, size_bytes FROM records WHERE record = 'transfer' ORDER BY ts_us").rows == [
        ("H2D", 1 << 20), ("D2H", 4096)]
    phases = [r[0] for r in s.run("SELECT DISTINCT name, min(ts_us) FROM phases GROUP BY name ORDER BY 2").rows]
    assert phases[:2] == ["phase: initialisation", "phase: weight loading"] and "phase: inference" in phases


def test_a_result_cut_at_max_rows_leaves_the_session_usable(bert):
    """The browser's session (and tracetui mcp's) runs the next query after one that had more
    rows than it fetched (DuckDB 2 refused it: "connection has an unfinished result")."""
    res = bert.run("SELECT x FROM range(10000000) t(x)", max_rows=5)
    assert [r[0] for r in res.rows] == [0, 1, 2, 3, 4] and res.truncated
    assert bert.run("SELECT count(*) FROM kernels").rows == [(60,)]


def test_no_duckdb_on_the_load_path():
    code = ("import sys; from tracetui.store.traces import load_cached; import tracetui.query; "
            f"load_cached([{str(kineto_path(BERT))!r}], use_cache=False); print('duckdb' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_trace_without_gpu_work_has_empty_tables():
    s = QuerySession.for_trace(open_traces([str(kineto_path("cpu_only_small.json.gz"))]))
    assert s.run("SELECT count(*) FROM kernels").rows == [(0,)]
    assert s.run("SELECT count(*) FROM gaps").rows == [(0,)]
    assert load_trace(kineto_path("cpu_only_small.json.gz")).n_events == s.run("SELECT count(*) FROM events").rows[0][0]
