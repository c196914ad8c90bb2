"""`tracetui diff` on the command line: text, --json, --fail-above, jobs, --ranks, bad input."""

from __future__ import annotations

import json

import pytest
from diff_files import BERT, JOB, raw_step, write_modified_bert
from shared_traces import SHARED, kineto_path

from tracetui.cli.entry import main


@pytest.fixture(scope="module")
def modified_bert(tmp_path_factory):
    return write_modified_bert(tmp_path_factory.mktemp("diff") / "bert_modified.json.gz")


def run(capsys, *args) -> tuple[int, str, str]:
    rc = main(["diff", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_document_has_the_hta_tables_and_the_deltas(capsys, modified_bert):
    rc, out, _ = run(capsys, kineto_path(BERT), modified_bert, "--json")
    assert rc == 0
    doc = json.loads(out)
    for key in ("a", "b", "alignment", "step_time", "gpu_time_per_step", "gpu_timeline", "kernel_categories",
                "kernels", "top_ops", "launches", "idle", "tree", "changed_subtrees", "kernel_changes", "ops"):
        assert key in doc, key
    assert set(doc["by_name"]) == {"cpu", "gpu"}
    assert set(doc["by_name"]["gpu"][0]) == {"name", "count_a", "count_b", "dur_us_a", "dur_us_b", "delta_us"}
    assert {"name", "count_a", "count_b", "direct_gpu_us_a", "direct_gpu_us_b", "subtree_gpu_us_a",
            "subtree_gpu_us_b"} <= set(doc["ops"][0])
    assert doc["a"]["steps_compared"] == ["ProfilerStep#6"] and doc["a"]["steps_found"]["how"] == "ProfilerStep"


def test_fail_above_exits_1_with_the_top_regressions(capsys, modified_bert):
    rc, out, _ = run(capsys, kineto_path(BERT), modified_bert, "--text", "--fail-above", "5%")
    assert rc == 1
    assert "FAIL: regressed by more than 5%" in out
    assert "GPU time per step regressed by +23.4%" in out  # (3 - 1) x 41.28 µs - 10.08 µs of 309.437 µs
    assert "aten::addmm: 41.3 µs -> 123.8 µs (+200.0%)" in out
    rc, out, _ = run(capsys, kineto_path(BERT), modified_bert, "--fail-above", "30")
    assert rc == 0 and "FAIL" not in out
    # with --json the verdict goes to stderr, the JSON stays parseable
    rc, out, err = run(capsys, kineto_path(BERT), modified_bert, "--json", "--fail-above", "5")
    assert rc == 1 and json.loads(out)["gpu_time_per_step"]["delta_pct"] > 5 and "FAIL" in err


def test_text_report_sections(capsys, modified_bert):
    rc, out, _ = run(capsys, kineto_path(BERT), modified_bert)
    assert rc == 0
    for line in ("A: h100_bert_inference.json.gz: ProfilerStep#6 (ProfilerStep)", "Step (per step)",
                 "GPU timeline of the step's GPU events", "Kernel categories", "Launches", "Idle gaps",
                 "Merged tree: ops whose own GPU time changed most",
                 "Kernels that changed under … > aten::_flash_attention_forward"):
        assert line in out, line
    assert "Aligned 479 ops" in out and "0 ops only in B, 0 only in A" in out


@pytest.mark.slow
def test_two_ranks_of_one_job(capsys):
    rc, out, _ = run(capsys, JOB, "--ranks", "0,1", "--json")
    assert rc == 0
    doc = json.loads(out)
    assert (doc["a"]["label"], doc["b"]["label"]) == ("rank 0", "rank 1")
    assert doc["a"]["source"] == "rank0_kineto.json.gz + rank0_et.json.gz"
    assert doc["step_time"]["a_us"] == pytest.approx(raw_step(str(JOB / "rank0_kineto.json.gz"), "ProfilerStep#10")[1])
    assert doc["step_time"]["b_us"] == pytest.approx(raw_step(str(JOB / "rank1_kineto.json.gz"), "ProfilerStep#10")[1])


@pytest.mark.slow
def test_two_jobs_rank_by_rank_in_worker_processes(capsys):
    rc, out, _ = run(capsys, JOB, JOB, "--json", "--workers", "2")
    assert rc == 0
    doc = json.loads(out)
    assert doc["kind"] == "jobs" and [r["rank"] for r in doc["ranks"]] == list(range(8))
    assert all(r["error"] is None and r["step_time"]["delta_us"] == 0 and r["gpu_time_per_step"]["delta_us"] == 0
               for r in doc["ranks"])
    assert all(r["alignment"]["added_ops"] == r["alignment"]["removed_ops"] == 0 for r in doc["ranks"])
    rc, out, _ = run(capsys, JOB, JOB, "--text", "--workers", "1")
    assert rc == 0 and "Per rank (per-step means)" in out


def test_a_stored_document_answers_without_loading(capsys, modified_bert, monkeypatch):
    rc, first, _ = run(capsys, kineto_path(BERT), modified_bert, "--json")
    assert rc == 0
    import tracetui.store.traces as traces

    def no_load(*a, **k):
        raise AssertionError("loaded a trace")

    monkeypatch.setattr(traces, "load_cached", no_load)
    rc, again, _ = run(capsys, kineto_path(BERT), modified_bert, "--json")
    assert rc == 0 and again == first


@pytest.mark.parametrize("args, message", [
    (("{bert}",), "give the run to compare with"),
    (("{bert}", "{bert}", "--step-a", "7"), "has no step 7 (its steps: 6)"),
    (("{job}",), "a job alone needs two ranks to compare: --ranks R,S"),
    (("{job}", "--ranks", "0,9"), "has no rank 9 (ranks found: 0, 1, 2, 3, 4, 5, 6, 7)"),
    (("{job}", "{bert}"), "A is a job: give a job as B too"),
    (("{bert}", "{bert}", "--fail-above", "lots"), "--fail-above: not a percentage: 'lots'"),
    (("{bert}", "{bert}", "--ranks", "0,1"), "--ranks picks ranks of a job folder"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    paths = {"bert": str(kineto_path(BERT)), "job": str(JOB)}
    rc, out, err = run(capsys, *(a.format(**paths) for a in args))
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("tracetui: ") and message in err


def test_an_execution_trace_alone_is_bad_input(capsys):
    et = SHARED / "et" / "torch_cpu_pair" / "et.json.gz"
    rc, _, err = run(capsys, et, et)
    assert rc == 2 and "`diff` needs a Kineto or driver-call trace" in err


def test_driver_call_traces_compare_as_whole_traces(capsys, tmp_path):
    from driver_files import bpftrace_file, preload_file

    a = bpftrace_file().write(tmp_path / "a.jsonl")
    b = preload_file().write(tmp_path / "b.jsonl")
    assert b"cuCtxCreate_v2" in a.read_bytes() and b"cuCtxCreate_v2" not in b.read_bytes()
    rc, out, _ = run(capsys, a, a, "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["a"]["steps_found"]["how"] == "whole trace"
    assert doc["alignment"]["added_ops"] == doc["alignment"]["removed_ops"] == 0 and doc["tree_host"] == []
    rc, out, _ = run(capsys, a, b)
    assert rc == 0 and "No GPU work launched in the compared steps of either trace" in out
    assert "Merged tree: ops whose own host time changed most" in out
    rc, out, _ = run(capsys, a, b, "--json")
    removed = [r["path"][-1] for r in json.loads(out)["changed_subtrees"]["removed"]]
    assert "cuCtxCreate_v2" in removed


def test_the_parser_does_not_load_pandas():
    """`tracetui summary` answers a stored summary without pandas; the diff subcommand's parser
    and number formatting must not pull it in."""
    import subprocess
    import sys

    code = ("import sys; from tracetui.cli.entry import build_parser; build_parser(); "
            "import tracetui.diff.numbers; assert 'pandas' not in sys.modules, 'pandas loaded'")
    subprocess.run([sys.executable, "-c", code], check=True)
