"""``tracetui critical-path`` on one trace: text at 80 columns, the JSON document, windows,
what-if, bad input (one line, exit 2)."""

from __future__ import annotations

import json

import pytest
from critical_traces import gpu_bound, host_sync
from shared_traces import kineto_path

from tracetui.cli.entry import main

KINDS = {"host", "gpu", "launch_delay", "gpu_gap", "stream_wait", "sync_wait", "other"}


def _json(capsys, *argv) -> dict:
    assert main(["critical-path", *map(str, argv), "--json", "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_document(tmp_path, capsys):
    p, want = host_sync(tmp_path)
    doc = _json(capsys, p, "--step", "1")
    assert doc["total_us"] == pytest.approx(want["total_us"])
    assert set(doc["by_kind_us"]) == KINDS
    assert sum(doc["by_kind_us"].values()) == pytest.approx(doc["total_us"])
    seg = doc["segments"]
    assert [(s["kind"], s["name"]) for s in seg] == [(k, n) for k, n, _ in want["segments"]]
    assert set(seg[0]) >= {"kind", "name", "start_us", "dur_us", "rank", "event"}
    assert seg[0]["rank"] is None  # the trace has no distributedInfo
    sl = {s["name"]: s["slack_us"] for s in doc["slack"]}
    assert sl["gemm"] == 0.0 and sl["aten::add"] == 0.0
    assert doc["window"] == {"kind": "step", "name": "ProfilerStep#1", "start_us": 0.0, "end_us": 500.0, "event": 0}


def test_text_fits_80_columns(tmp_path, capsys):
    p, _ = gpu_bound(tmp_path)
    assert main(["critical-path", str(p), "--shrink", "gemm=50", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert max(len(ln) for ln in out.splitlines()) <= 80
    assert "path 625.0 µs" in out and "projected path 375.0 µs" in out  # gemm_a and gemm_b: 500 µs -> 250


def test_text_on_a_real_trace_fits_80_columns(capsys):
    assert main(["critical-path", str(kineto_path("mi300_resnet_train_checkpointing.json.gz")), "--step", "16"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert max(len(ln) for ln in out) <= 80
    assert out[0].startswith("Critical path of ProfilerStep#16 (step)")


def test_windows_by_annotation_and_selector(tmp_path, capsys):
    p, _ = gpu_bound(tmp_path)
    doc = _json(capsys, p, "--annotation", "ProfilerStep")  # every name that starts with it; instance 1
    assert doc["window"]["name"] == "ProfilerStep#1"
    doc = _json(capsys, p, "--select", "name:aten::op2")
    assert doc["window"]["kind"] == "event" and doc["window"]["name"] == "aten::op2"
    # the op launches gemm_b: its path runs to the end of that kernel
    assert doc["segments"][-1]["name"] == "gemm_b"


@pytest.mark.parametrize("argv,message", [
    (["--step", "7"], "no ProfilerStep#7 in this trace (steps: 1)"),
    (["--annotation", "nope"], "no annotation named 'nope'"),
    (["--annotation", "ProfilerStep", "--instance", "3"], "has 1 instances"),
    (["--shrink", "gemm"], "expected NAME=PCT"),
])
def test_bad_windows_say_one_line(tmp_path, capsys, argv, message):
    p, _ = gpu_bound(tmp_path)
    assert main(["critical-path", str(p), *argv, "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
