"""Counters-only traces and Execution Traces alone get answers (issue 23, item 4): ``summary``
of a CUPTI range-profiler trace lists its ranges and counters (totals, top ranges per counter);
``info``, ``tree``, ``summary`` and ``export`` work on an ET alone.  Every expected number is
read from the raw file here (gzip + json)."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections import Counter, defaultdict

import pytest
from shared_traces import ET_DIR, kineto_path

from tracetui.cli import main

COUNTERS = "a100_cupti_counters.json.gz"
ET_ALONE = ET_DIR / "et_only"


def _run(capsys, *argv: str) -> tuple[int, str]:
    rc = main(list(argv))
    return rc, capsys.readouterr().out


def _raw_ranges() -> list[dict]:
    with gzip.open(kineto_path(COUNTERS)) as fh:
        return [e for e in json.load(fh)["traceEvents"] if e.get("cat") == "cuda_profiler_range"]


def test_summary_of_a_counters_trace_lists_ranges_and_counters(capsys):
    ranges = _raw_ranges()
    totals: dict[str, float] = defaultdict(float)
    by_name: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for e in ranges:
        for k, v in e["args"].items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                totals[k] += v
                by_name[k][e["name"]] += v
    ffma = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
    assert (len(ranges), len(totals), totals[ffma]) == (77, 9, 39_142_369_720)
    top_name, top_sum = max(by_name[ffma].items(), key=lambda kv: kv[1])
    assert top_name == "ampere_sgemm_32x32_sliced1x4_tn"

    rc, out = _run(capsys, "summary", str(kineto_path(COUNTERS)), "--no-cache", "--json")
    assert rc == 0
    c = json.loads(out)["counters"]
    assert (c["ranges"], len(c["series"]), c["range_names"]) == (77, 9, len({e["name"] for e in ranges}))
    row = next(r for r in c["series"] if r["series"] == ffma)
    assert row["sum"] == totals[ffma]
    assert row["top_ranges"][0]["name"] == top_name and row["top_ranges"][0]["sum"] == top_sum
    assert row["top_ranges"][0]["share"] == pytest.approx(100 * top_sum / totals[ffma], abs=1e-3)
    names = Counter(e["name"] for e in ranges)
    first = c["ranges_by_name"][0]
    assert first["ranges"] == names[first["name"]]

    rc, text = _run(capsys, "summary", str(kineto_path(COUNTERS)), "--no-cache")
    assert rc == 0
    text = " ".join(text.split())  # the prose wraps at the terminal's width (80 under xdist)
    assert "it holds 77 profiler ranges" in text
    assert "Counters (totals over the trace)" in text and "39,142,369,720" in text
    assert "Top ranges per counter" in text and "ampere_sgemm_32x32_sliced1x4_tn" in text


def _raw_et(name: str) -> list[dict]:
    with gzip.open(ET_ALONE / name) as fh:
        return json.load(fh)["nodes"]


def _attr(node: dict, key: str):
    if key in node:
        return node[key]
    return next((a["value"] for a in node.get("attrs", []) if a.get("name") == key), None)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hf_gpt2_schema_1.1.0.json.gz", "resnet_1gpu_schema_1.0.3.json.gz"])
def test_info_tree_and_summary_of_an_et_alone(capsys, name):
    nodes = _raw_et(name)
    ops = [n for n in nodes if not n["name"].startswith("[pytorch|profiler|execution_")]
    tids = Counter(_attr(n, "tid") for n in ops)
    top = Counter(n["name"] for n in ops).most_common(1)[0]
    path = str(ET_ALONE / name)

    rc, out = _run(capsys, "info", path, "--json")
    e = json.loads(out)["et"]
    assert rc == 0 and (e["nodes"], e["ops"]) == (len(nodes), len(ops))
    assert {t["tid"]: t["ops"] for t in e["threads"]} == dict(tids)

    rc, out = _run(capsys, "tree", path)
    lines = out.splitlines()
    assert rc == 0 and len(lines) == len(nodes)  # every node once
    assert lines[0].startswith("[et] [pytorch|profiler|execution_trace|process] id=1 ")

    rc, out = _run(capsys, "summary", path, "--no-cache", "--json")
    s = json.loads(out)["et"]
    assert rc == 0 and (s["ops_by_name"][0]["name"], s["ops_by_name"][0]["count"]) == top
    assert s["op_names"] == len({n["name"] for n in ops})
    rc, text = _run(capsys, "summary", path, "--no-cache")
    assert rc == 0 and "Ops by name" in text and "Ops by input shapes" in text and f"{top[1]:,}" in text


def test_ops_by_shape_of_an_et_alone_counts_the_raw_signatures():
    """chakra_test (nested layout): shapes and types live in the node's inputs object."""
    from tracetui.analysis.et_summary import ops_by_shape
    from tracetui.session import load_trace

    nodes = _raw_et("chakra_test_schema_1.0.2.json.gz")
    sig = Counter((n["name"], json.dumps(n["inputs"]["shapes"], separators=(",", ":")),
                   json.dumps(n["inputs"]["types"], separators=(",", ":")))
                  for n in nodes if not n["name"].startswith("[pytorch|profiler|execution_"))
    got = ops_by_shape(load_trace(ET_ALONE / "chakra_test_schema_1.0.2.json.gz"))
    assert {(r["name"], r["input_shapes"], r["input_types"]): r["count"] for r in got} == dict(sig)


def test_export_of_an_et_alone(capsys, tmp_path):
    name = "chakra_test_schema_1.0.2.json.gz"
    nodes = _raw_et(name)
    path = str(ET_ALONE / name)
    rc, out = _run(capsys, "export", path, "-f", "csv", "-o", "-")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rc == 0 and len(rows) == len(nodes)
    assert sorted(int(r["id"]) for r in rows) == sorted(n["id"] for n in nodes)
    rc, out = _run(capsys, "export", path, "-f", "md", "-o", "-")
    assert rc == 0 and "## Ops by name" in out and "## Nodes (tree order)" in out
    assert f"Nodes: {len(nodes):,}, of them ops: {len(nodes) - 2:,}" in out
    rc, out = _run(capsys, "export", path, "-f", "json", "-o", "-", "--select", "name:nccl:all_gather#2")
    doc = json.loads(out)
    raw_hits = [n for n in sorted(nodes, key=lambda n: n["id"]) if n["name"] == "nccl:all_gather"]
    assert rc == 0 and doc["root"] == raw_hits[1]["id"]
    assert doc["tree_nodes"][0]["name"] == "nccl:all_gather"
    rc = main(["export", path, "-f", "chrome", "-o", str(tmp_path / "x.json")])
    assert rc == 2 and "records no times" in capsys.readouterr().err
    rc = main(["export", path, "-f", "html", "-o", str(tmp_path / "et.html")])
    assert rc == 0 and "<h2>Ops by input shapes</h2>" in (tmp_path / "et.html").read_text()
