"""The summary and export commands through tracetui.cli.main."""

from __future__ import annotations

import csv
import gzip

import orjson
import pytest
from rich.console import Console
from shared_traces import ET_DIR, kineto_path

from tracetui.cli import main
from tracetui.cli.summary_render import print_summary
from tracetui.kineto import load_kineto

BERT = str(kineto_path("h100_bert_inference.json.gz"))


def test_summary_json_keys_and_values(capsys):
    assert main(["summary", BERT, "--json", "--no-cache", "--top", "5"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    for key in ("gpu_timeline", "kernel_categories", "kernels", "ops", "streams", "launches"):
        assert key in doc
    tl = doc["gpu_timeline"]
    assert set(tl) >= {"total_ms", "computation_ms", "exposed_comm_ms", "exposed_memcpy_ms", "busy_ms", "idle_ms"}
    assert tl["total_ms"] == pytest.approx(3.907825)
    assert {"category", "count", "total_ms", "percent"} <= set(doc["kernel_categories"][0])
    assert doc["kernel_categories"][0]["category"] == "gemm" and doc["kernel_categories"][0]["count"] == 26
    assert len(doc["kernels"]) == 5 and len(doc["ops"]) == 5
    assert doc["ops"][0]["name"] == "aten::addmm"
    assert doc["streams"][0]["stream"] == 7 and doc["streams"][0]["count"] == 61
    assert doc["launches"]["steps"][0]["kernel_launches"] == 60


def test_summary_rules_file_changes_categories(tmp_path, capsys):
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\ncategory = "my_gemm"\npattern = "cutlass"\n')
    assert main(["summary", BERT, "--json", "--rules", str(rules)]) == 0
    cats = {c["category"]: c["count"] for c in orjson.loads(capsys.readouterr().out)["kernel_categories"]}
    # 22 cutlass::Kernel2 GEMMs, and the 4 flash-attention kernels whose names mention cutlass::bfloat16_t
    assert cats["my_gemm"] == 22 + 4
    assert cats["gemm"] == 4  # the sm90_xmma GEMMs keep the default rule


def test_summary_tables(capsys):
    assert main(["summary", BERT, "--top", "3"]) == 0
    out = capsys.readouterr().out
    for title in ("GPU timeline", "Kernel categories", "Top kernels", "Top ops", "Streams", "Idle gaps by class",
                  "Launch calls", "Profiler steps"):
        assert title in out
    assert "3.908" in out and "aten::addmm" in out
    assert "Memory ([memory] events" in out  # titles are not parsed as markup either


def test_summary_prints_names_literally():
    con = Console(record=True, width=200)
    summary = {
        "source": "[bold]file[/bold].json", "trace": {"events": 1, "gpu_events": 1, "gpu_events_unlinked": 0,
                                                     "cpu_ops": 1, "devices": []},
        "gpu_timeline": {k: 1.0 for k in ("total_ms", "computation_ms", "exposed_comm_ms", "exposed_memcpy_ms",
                                          "busy_ms", "idle_ms", "total_comm_ms", "total_memcpy_ms")},
        "gpu_timeline_by_device": [], "kernel_categories": [],
        "kernels": [{"name": "[red]kern[/red]", "kernel_category": "other", "count": 1, "total_us": 1.0,
                     "mean_us": 1.0, "percent": 100.0}],
        "ops": [{"name": "[link=x]op", "count": 1, "host_us": 1.0, "direct_gpu_us": 1.0, "subtree_gpu_us": 1.0,
                 "percent": 100.0}],
        "streams": [], "idle": {"by_class": []},
        "launches": {"launch_delay": {}, "call_duration": {}, "copies": [], "steps": [],
                     "sync": {"blocking_calls": 0, "blocking_us": 0.0, "cuda_sync_events": 0, "by_name": {}},
                     "allocations": {"by_device": {}, "malloc_calls": 0, "malloc_us": 0.0},
                     "compute_memcpy_ratio": None},
        "warnings": [],
    }
    print_summary(summary, con)
    text = con.export_text()
    assert "[bold]file[/bold].json" in text and "[red]kern[/red]" in text and "[link=x]op" in text


def test_export_writes_each_format(tmp_path, capsys):
    for fmt, name in (("md", "r.md"), ("html", "r.html"), ("csv", "r.csv"), ("json", "r.json"),
                      ("chrome", "r.json.gz")):
        out = tmp_path / name
        assert main(["export", BERT, "--select", "ext:9", "-f", fmt, "-o", str(out)]) == 0
        assert out.stat().st_size > 0
    assert (tmp_path / "r.md").read_text().startswith("# tracetui report: aten::index_select")
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert [r["kind"] for r in rows].count("kernel") == 1
    assert orjson.loads((tmp_path / "r.json").read_bytes())["root_name"] == "aten::index_select"
    with gzip.open(tmp_path / "r.json.gz") as fh:
        assert fh.read(1) == b"{"
    back = load_kineto(tmp_path / "r.json.gz")
    assert "aten::index_select" in back.names
    assert capsys.readouterr().err == ""


def test_export_to_stdout_and_whole_trace(capsys):
    assert main(["export", BERT, "-f", "md", "-o", "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# tracetui report: whole trace h100_bert_inference.json.gz")
    assert "## Largest idle gaps" in out


def test_export_with_et_pair(tmp_path):
    pair = ET_DIR / "hta_simple_add_cuda_pair"
    out = tmp_path / "add.md"
    assert main(["export", str(pair / "kineto.json.gz"), "--et", str(pair / "et.json.gz"), "--select", "et:36",
                 "-f", "md", "-o", str(out)]) == 0
    text = out.read_text()
    assert "## ET node inputs" in text and "ET node 36: aten::add (heuristic link, found by sequence number)" in text
    assert "| 0 | Tensor(float) | [256, 256] |" in text


@pytest.mark.parametrize("args,msg", [
    (["--select", "name:aten::linear#99"], "occurs 26 time(s); #99 is out of range"),
    (["--select", "bogus"], "expected ext:<External id>"),
    (["--select", "et:3"], "no Execution Trace is loaded"),
])
def test_bad_selector_exits_2_with_one_line(tmp_path, capsys, args, msg):
    out = tmp_path / "x.md"
    assert main(["export", BERT, *args, "-f", "md", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tracetui: ") and msg in err
    assert not out.exists()


def test_unwritable_output_exits_2(tmp_path, capsys):
    assert main(["export", BERT, "-f", "md", "-o", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["export", BERT, "-f", "md", "-o", str(tmp_path / "no" / "such" / "dir.md")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write the export" in err
