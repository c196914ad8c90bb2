"""Findings on traces written by the test (tests/core/findings_traces.py): the rules no shared
trace exercises, and exact numbers known by construction."""

from __future__ import annotations

import numpy as np
import pytest
from driver_files import Bpf
from findings_traces import KTrace

from tracetui.findings.engine import check_findings, run_checks
from tracetui.findings.spec import Severity, default_specs, parse_overrides
from tracetui.session import open_traces


def run(path, rule: str, **overrides):
    cfg = parse_overrides({rule: overrides} if overrides else {}, "test", default_specs())
    return check_findings(open_traces([str(path)]), cfg, only=[rule])


def _launch_bound_trace(queued_ahead: bool) -> KTrace:
    """3 repetitions of a 10-kernel sequence (2 µs kernels, 10 µs apart), each after a 500 µs
    kernel; each launch starts 5 µs after the previous kernel ended (host wait), or long before
    (``queued_ahead``: no host wait)."""
    t = KTrace()
    now = 0.0
    for _ in range(3):
        t.gpu("long_gemm", now, 500.0, launch_ts=now - 10.0)
        prev_end = now + 500.0
        for i in range(10):
            start = prev_end + 10.0
            t.gpu(f"tiny_{i}", start, 2.0, launch_ts=(now - 9.0 + i * 0.1) if queued_ahead else prev_end + 5.0)
            prev_end = start + 2.0
        now = prev_end + 100.0
    return t


def test_launch_bound_runs_and_the_repeating_sequence(tmp_path):
    f, = run(_launch_bound_trace(False).write(tmp_path / "lb.json"), "launch_bound")
    assert f.count == 30  # short kernels in launch-bound runs
    assert len(f.evidence) == 3  # one per run: its first kernel
    assert f.time_at_stake_us == pytest.approx(3 * 9 * 10.0)  # 9 host-wait gaps of 10 µs per run
    assert list(f.evidence_us) == pytest.approx([90.0] * 3)
    row = f.details[0]
    assert (row["kernels"], row["runs"]) == (10, 3) and row["sequence"].startswith("tiny_0 > tiny_1")
    assert "a 10-kernel sequence repeats 3 times" in f.verdict
    # the same kernels with their launches queued ahead: the GPU never waits for the host
    assert run(_launch_bound_trace(True).write(tmp_path / "q.json"), "launch_bound") == []
    # thresholds: a run needs min_kernels kernels
    assert run(tmp_path / "lb.json", "launch_bound", min_kernels=11) == []


def test_low_occupancy_names_the_limiter(tmp_path):
    t = KTrace()
    for i in range(10):  # 255 registers x 64 threads: 4 blocks of 2 warps per SM = 12.5%
        t.gpu("heavy_kernel", i * 300.0, 100.0, launch_ts=i * 300.0 - 5, block=[64, 1, 1], grid=[1000, 1, 1],
              **{"registers per thread": 255, "shared memory": 0})
        t.gpu("fine_kernel", i * 300.0 + 150, 100.0, launch_ts=i * 300.0 + 140, block=[256, 1, 1],
              grid=[1000, 1, 1], **{"registers per thread": 32, "shared memory": 0})
    f, = run(t.write(tmp_path / "occ.json"), "low_occupancy")
    assert [r["kernel"] for r in f.details] == ["heavy_kernel"]
    row = f.details[0]
    assert (row["occupancy_pct"], row["limiter"], row["count"], row["share_pct"]) == (12.5, "registers", 10, 50.0)
    assert f.time_at_stake_us is None and f.stake_label == "not estimated"
    assert f.count == 10 and f.severity == Severity.INFO


def test_blocking_sync_idle_after_each_call(tmp_path):
    t = KTrace()
    t.gpu("k1", 0.0, 1000.0, launch_ts=-5.0)
    t.host("cudaStreamSynchronize", 10.0, 993.0, cat="cuda_runtime")  # the GPU drains at 1000, in the call
    t.gpu("k2", 1210.0, 40.0, launch_ts=1200.0)  # idle after the first sync: 1000 -> 1210
    t.host("cudaDeviceSynchronize", 1260.0, 5.0, cat="cuda_runtime")  # drained at 1250: within 20 µs before
    t.gpu("k3", 2000.0, 100.0, launch_ts=1990.0)  # idle after the second: 1250 -> 2000
    t.host("cudaStreamSynchronize", 3000.0, 10.0, cat="cuda_runtime")  # GPU idle since 2100: no drain
    t.gpu("k4", 3500.0, 10.0, launch_ts=3490.0)
    f, = run(t.write(tmp_path / "sync.json"), "blocking_sync")
    assert f.count == 3
    assert list(f.evidence_us) == pytest.approx([210.0, 750.0, 0.0])
    assert f.time_at_stake_us == pytest.approx(960.0)
    assert f.value == pytest.approx(993.0 + 5.0 + 10.0)  # host time in the calls
    assert run(tmp_path / "sync.json", "blocking_sync", min_idle_us=1000.0) == []


def test_blocking_sync_of_a_driver_call_trace_without_gpu_events(tmp_path):
    f = Bpf()  # ms since the tracer started
    f.call(0.0, 0.01, "cuLaunchKernel")
    f.call(1.0, 2.0, "cuStreamSynchronize")
    f.call(2.1, 2.5, "cuStreamSynchronize")  # the later return opens the gap: 500 µs to the launch
    f.call(3.0, 3.01, "cuLaunchKernel")
    f.call(4.0, 5.0, "cuCtxSynchronize")
    f.call(5.2, 5.21, "cuLaunchKernel")  # 200 µs after the return
    f.call(6.0, 6.3, "cuEventSynchronize")  # nothing after it
    path = tmp_path / "trace_1.jsonl"
    f.write(path)
    got, = run(path, "blocking_sync")
    assert got.count == 4
    assert sorted(got.evidence_us.tolist()) == pytest.approx([0.0, 0.0, 200.0, 500.0])
    assert got.time_at_stake_us == pytest.approx(700.0)
    assert "seen from the host" not in got.verdict and "GPU idle (from the host) after" in got.verdict


def test_input_stall_counts_nested_spans_once(tmp_path):
    t = KTrace()
    t.host("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0.0, 500.0, cat="user_annotation")
    t.host("torch/utils/data/dataloader.py(700): __next__", 10.0, 400.0, cat="python_function")
    t.gpu("copy_kernel", 100.0, 100.0, launch_ts=90.0)
    t.gpu("train_kernel", 600.0, 100.0, launch_ts=590.0)
    f, = run(t.write(tmp_path / "dl.json"), "input_stall")
    assert f.count == 1 and f.value == pytest.approx(400.0) and f.time_at_stake_us == pytest.approx(400.0)
    assert run(tmp_path / "dl.json", "input_stall", pattern="NoSuchLoader") == []


def test_recompute_found_without_python_frames(tmp_path):
    t = KTrace()
    t.host("aten::conv2d", 0.0, 50.0, **{"Sequence number": 7, "Fwd thread id": 0})  # the forward, main thread
    t.host("autograd::engine::evaluate_function: ReluBackward0", 1000.0, 1000.0, tid=2)
    t.host("ReluBackward0", 1010.0, 900.0, tid=2, **{"Sequence number": 5, "Fwd thread id": 1})
    t.host("aten::conv2d", 1020.0, 300.0, tid=2, **{"Sequence number": 9, "Fwd thread id": 0})  # recomputed
    t.host("aten::convolution", 1025.0, 290.0, tid=2, **{"Sequence number": 9, "Fwd thread id": 0})
    t.gpu("conv_kernel", 1100.0, 200.0, launch_ts=1030.0, tid=2)
    t.host("aten::threshold_backward", 1400.0, 100.0, tid=2)
    t.gpu("relu_bwd_kernel", 1500.0, 50.0, launch_ts=1410.0, tid=2)
    f, = run(t.write(tmp_path / "rc.json"), "recompute")
    assert f.count == 1 and f.value == pytest.approx(200.0) and f.details[0]["op"] == "aten::conv2d"


def test_slow_step_says_what_differs(tmp_path):
    t = KTrace()
    now = 0.0
    for i, dur in enumerate([10000.0, 10000.0, 10000.0, 10000.0, 40000.0]):
        t.host(f"ProfilerStep#{i}", now, dur, cat="user_annotation")
        t.gpu("step_kernel", now + 100.0, 9000.0, launch_ts=now + 50.0)
        now += dur
    f, = run(t.write(tmp_path / "steps.json"), "slow_step")
    assert f.count == 1 and f.time_at_stake_us == pytest.approx(30000.0)
    assert f.value == pytest.approx(4.0)  # x the median step
    row = f.details[0]
    assert row["step"] == "ProfilerStep#4" and row["gpu_idle_us"] - row["median_gpu_idle_us"] == pytest.approx(30000)
    assert row["what_differs"].startswith("GPU idle +30 ms")
    assert run(tmp_path / "steps.json", "slow_step", min_steps=6) == []


def test_trace_health_checks(tmp_path):
    t = KTrace()
    t.host("aten::outer", 0.0, 100.0)
    t.host("aten::inner", 50.0, 51.5)  # ends 1.5 µs after its parent
    t.gpu("early_kernel", 200.0, 10.0, launch_ts=205.0)  # starts 5 µs before its launch call
    t.gpu("endless_kernel", 300.0, 7.0e7, launch_ts=290.0)
    t.gpu("orphan_kernel", 400.0, 10.0, launch_ts=None, stream=8)
    t.host("aten::negative", 500.0, -5.0)
    got = {f.check: f for f in run(t.write(tmp_path / "h.json"), "trace_health")}
    assert set(got) >= {"thread_overlap", "clock_skew", "absurd_duration", "unlinked_gpu", "bad_times"}
    assert got["thread_overlap"].count == 1 and got["thread_overlap"].evidence_us[0] == pytest.approx(1.5)
    assert got["clock_skew"].evidence_us[0] == pytest.approx(5.0)
    assert got["absurd_duration"].count == 1 and got["unlinked_gpu"].count == 1
    assert got["bad_times"].count == 1 and not got["bad_times"].evidence.size
    assert all(f.time_at_stake_us is None for f in got.values())
    # a truncated copy of the same trace: the load's warning becomes a damaged_file finding
    data = (tmp_path / "h.json").read_bytes()
    (tmp_path / "cut.json").write_bytes(data[: len(data) - 40])
    assert "damaged_file" in {f.check for f in run(tmp_path / "cut.json", "trace_health")}


def test_report_sorting_severity_override_and_evidence_lookup(tmp_path):
    path = _launch_bound_trace(False).write(tmp_path / "lb.json")
    linked = open_traces([str(path)])
    cfg = parse_overrides({"launch_bound": {"severity": "error"}, "trace_health": {"enabled": False}}, "t",
                          default_specs())
    rep = run_checks(linked, cfg)
    assert [f.rule for f in rep.findings] == ["launch_bound"]
    assert rep.worst() == Severity.ERROR and rep.by_severity() == {"error": 1, "warning": 0, "info": 0}
    first = int(rep.findings[0].evidence[0])
    assert rep.evidence_of(first) == [rep.findings[0]]
    assert rep.evidence_of(first, rank=0) == [] and rep.evidence_of(0) == []
    assert {r["id"]: r["enabled"] for r in rep.rules}["trace_health"] is False
    stakes = [f.time_at_stake_us for f in run_checks(linked).findings]
    known = [s for s in stakes if s is not None]
    assert known == sorted(known, reverse=True) and stakes[: len(known)] == known
    assert np.asarray(rep.findings[0].as_json()["evidence"]).dtype.kind == "i"


def test_a_kineto_trace_with_its_driver_call_trace(tmp_path):
    """The driver's cuStreamSynchronize calls repeat the Kineto runtime's: the syncs are
    counted once, from the Kineto calls, with the same findings as the Kineto trace alone."""
    from shared_traces import kineto_path

    from tracetui.driver.synthetic import write_driver_trace

    kineto = str(kineto_path("h100_bert_inference.json.gz"))
    drv = tmp_path / "trace_1.jsonl"
    write_driver_trace(open_traces([kineto]).kineto, drv)
    cfg = parse_overrides({"blocking_sync": {"min_idle_us": 0.0}}, "t", default_specs())
    alone = run_checks(open_traces([kineto]), cfg)
    both = open_traces([kineto, str(drv)])
    linked = run_checks(both, cfg)
    assert [(f.rule, f.check, f.count) for f in linked.findings] == [(f.rule, f.check, f.count) for f in alone.findings]
    b = next(f for f in linked.findings if f.rule == "blocking_sync")
    assert b.count == 2 and {both.kineto.name(int(e)) for e in b.evidence} == {"cudaDeviceSynchronize"}
