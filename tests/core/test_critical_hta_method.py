"""``--method hta``: HolisticTraceAnalysis 0.5.0's definition of the critical path, computed
on tracetui's graph (tracetui/critical/hta_method.py).

Two independent truths: on the traces of tests/critical_traces.py, the heaviest path worked
out by hand from HTA's rules (written beside each case); on shared traces, the totals HTA
0.5.0 itself printed for the same windows (bench/bench_critical.py, nanosecond rounding off,
docs/critical_path.md lists the run)."""

from __future__ import annotations

import numpy as np
import pytest
from critical_traces import cross_stream, cuda_graph, fork_join, gpu_bound, host_sync, launch_bound
from shared_traces import kineto_path

from tracetui.cli.entry import main
from tracetui.critical import KIND_NAMES, Shrink, critical_path, step_window, trace_window
from tracetui.critical.hta_method import hta_launch_rule
from tracetui.critical.model import kind_name
from tracetui.kineto import load_kineto


def _hta(p, window=None):
    kt = load_kineto(p)
    return kt, critical_path(kt, window or step_window(kt, 1), method="hta")


def _check(kt, cp, total, segments, span):
    s = cp.segments
    got = [(kind_name(k), kt.name(int(e)), pytest.approx(d)) for k, e, d in
           zip(s.kind.tolist(), s.event.tolist(), s.dur_us.tolist())]
    assert got == [(k, n, pytest.approx(d)) for k, n, d in segments]
    assert cp.total_us == pytest.approx(total)
    assert sum(cp.by_kind_us.values()) == pytest.approx(total)
    assert set(cp.by_kind_us) == set(KIND_NAMES)
    assert cp.span_us == pytest.approx(span)
    # a chain in time order: each stretch starts no earlier than the previous one ends
    assert np.all(s.start_us[1:] >= (s.start_us + s.dur_us)[:-1] - 1e-6)
    assert cp.method == "hta" and cp.slack is None and cp.carried_in_us == 0.0


def test_gpu_bound_step(tmp_path):
    # op1's 5 µs before its launch call, the launch delay of gemm_a (10), the kernels and the gaps;
    # the step annotation's 5 µs before op1 weighs nothing (not an op).  gemm_b and relu_c were
    # launched while earlier work was queued: HTA's queue rule gives them the gap edge, not the launch
    kt, cp = _hta(gpu_bound(tmp_path)[0])
    _check(kt, cp, 620.0, [("host", "aten::op1", 5), ("launch_delay", "gemm_a", 10), ("gpu", "gemm_a", 200),
                           ("gpu_gap", "gemm_b", 2), ("gpu", "gemm_b", 300), ("gpu_gap", "relu_c", 3),
                           ("gpu", "relu_c", 100)], (5.0, 625.0))
    rule = hta_launch_rule(kt)
    assert [bool(rule[kt.name_id == kt.names.index(n)][0]) for n in ("gemm_a", "gemm_b", "relu_c")] == [
        True, False, False]


def test_launch_bound_step(tmp_path):
    # the three ops chained through zero-weight edges (the step's 10 µs between them weigh
    # nothing), then op3 up to its launch, the launch delay of k3 and k3
    kt, cp = _hta(launch_bound(tmp_path)[0])
    _check(kt, cp, 156.0, [("host", "aten::op1", 40), ("host", "cudaLaunchKernel", 8), ("host", "aten::op1", 2),
                           ("host", "aten::op2", 40), ("host", "cudaLaunchKernel", 8), ("host", "aten::op2", 2),
                           ("host", "aten::op3", 40), ("launch_delay", "k3", 12), ("gpu", "k3", 4)], (10.0, 186.0))


def test_host_sync_weighs_nothing_and_joins_on_the_record(tmp_path):
    # the GPU chain, then the recorded Stream Sync edge (weight 0) into the call's end; the call's
    # own 378 µs weigh nothing (cudaStreamSynchronize is on HTA's list), then the ops after it
    kt, cp = _hta(host_sync(tmp_path)[0])
    _check(kt, cp, 456.0, [("host", "aten::mm", 10), ("launch_delay", "gemm", 10), ("gpu", "gemm", 400),
                           ("gpu_gap", "Memcpy DtoH (Device -> Pinned)", 2),
                           ("gpu", "Memcpy DtoH (Device -> Pinned)", 4), ("host", "aten::_local_scalar_dense", 8),
                           ("host", "aten::item", 2), ("host", "aten::add", 20)], (10.0, 480.0))


def test_host_sync_without_a_record_has_no_edge_in_hta(tmp_path):
    # HTA adds a GPU -> host sync edge only from the CUPTI record: the path ends on the GPU
    kt, cp = _hta(host_sync(tmp_path, record=False)[0])
    _check(kt, cp, 426.0, [("host", "aten::mm", 10), ("launch_delay", "gemm", 10), ("gpu", "gemm", 400),
                           ("gpu_gap", "Memcpy DtoH (Device -> Pinned)", 2),
                           ("gpu", "Memcpy DtoH (Device -> Pinned)", 4)], (10.0, 436.0))


def test_cross_stream_wait_weighs_zero_and_replaces_the_launch(tmp_path):
    # add_kernel waited for gemm (recorded): HTA gives it the zero-weight sync edge and no launch
    # edge (gemm ended after the launch), so its 185 µs from launch to start are not counted
    kt, cp = _hta(cross_stream(tmp_path)[0])
    _check(kt, cp, 265.0, [("host", "aten::mm", 5), ("launch_delay", "gemm", 10), ("gpu", "gemm", 200),
                           ("gpu", "add_kernel", 50)], (10.0, 280.0))


def test_cross_stream_wait_without_a_record_is_a_launch_delay_in_hta(tmp_path):
    # without the record HTA knows of no wait: add_kernel's launch edge weighs 230 - 45 µs, after
    # the host's ops and calls up to its launch (joined by zero-weight edges: 5 + 5 + 10 + 2 + 2 + 5)
    kt, cp = _hta(cross_stream(tmp_path, record=False)[0])
    _check(kt, cp, 264.0, [("host", "aten::mm", 5), ("host", "cudaLaunchKernel", 5), ("host", "aten::mm", 10),
                           ("host", "cudaEventRecord", 2), ("host", "cudaStreamWaitEvent", 2), ("host", "aten::add", 5),
                           ("launch_delay", "add_kernel", 185), ("gpu", "add_kernel", 50)], (10.0, 280.0))


def test_cuda_graph_kernels_have_no_launch_edge_in_hta(tmp_path):
    # HTA 0.5.0 has no launch edge for a graph launch (its issue #290): the path starts at ga
    kt, cp = _hta(cuda_graph(tmp_path)[0])
    _check(kt, cp, 255.0, [("gpu", "ga", 100), ("gpu_gap", "gb", 2), ("gpu", "gb", 50), ("gpu_gap", "gc", 3),
                           ("gpu", "gc", 100)], (30.0, 285.0))


def test_no_edge_between_threads_in_hta(tmp_path):
    # run_backward is a python function (weighs nothing) and HTA has no edge to the autograd
    # thread: the path is that thread's two ops, joined by a zero-weight edge
    kt, cp = _hta(fork_join(tmp_path)[0])
    _check(kt, cp, 250.0, [("host", "AddmmBackward0", 120), ("host", "MmBackward0", 130)], (20.0, 280.0))


def test_shrink_and_unknown_methods_are_refused(tmp_path):
    kt = load_kineto(gpu_bound(tmp_path)[0])
    with pytest.raises(ValueError, match="does not combine"):
        critical_path(kt, step_window(kt, 1), method="hta", shrink=[Shrink.parse("gemm=10")])
    with pytest.raises(ValueError, match="expected one of elapsed, hta"):
        critical_path(kt, step_window(kt, 1), method="longest")


# totals HTA 0.5.0 printed for these windows (HTA_DISABLE_NS_ROUNDING=1, bench/bench_critical.py);
# the step windows were matched to HTA's annotation instances by their start and end
HTA_TOTALS = [
    ("h100_bert_inference", 6, 2132.170),
    ("a100_event_sync_multistream", None, 1178.0),
    ("amd_vllm_hipgraph", None, 156466.416),
    ("mi250_minitoy_train", 1, 7452.353),
    ("a100_triton", 1, 1388.555),
    ("mi210_gpu_only", None, 3559.455),
]


@pytest.mark.parametrize(("name", "step", "hta_total"), HTA_TOTALS, ids=[r[0] for r in HTA_TOTALS])
def test_total_agrees_with_hta_on_shared_traces(name, step, hta_total):
    kt = load_kineto(kineto_path(f"{name}.json.gz"))
    w = trace_window(kt) if step is None else step_window(kt, step)
    cp = critical_path(kt, w, method="hta")
    assert cp.total_us == pytest.approx(hta_total, rel=1e-4)
    assert sum(cp.by_kind_us.values()) == pytest.approx(cp.total_us)


def test_cli_method_hta(tmp_path, capsys):
    p = gpu_bound(tmp_path)[0]
    assert main(["critical-path", str(p), "--method", "hta", "--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["method"] == "hta" and doc["total_us"] == pytest.approx(620.0)
    assert doc["span_us"] == pytest.approx([5.0, 625.0]) and doc["slack"] == []
    assert main(["critical-path", str(p), "--method", "hta"]) == 0
    text = capsys.readouterr().out
    assert "path 620.0 µs by HTA's definition" in text
    assert max(len(ln) for ln in text.splitlines()) <= 80
    assert main(["critical-path", str(p), "--method", "hta", "--shrink", "gemm=10"]) == 2
    assert "does not combine with --method hta" in capsys.readouterr().err
