"""Critical path on traces written by the test, each with a path known by construction
(tests/critical_traces.py): the exact segments, the breakdown by kind, slack and what-if."""

from __future__ import annotations

import numpy as np
import pytest
from critical_traces import (
    TraceWriter,
    by_kind,
    cross_stream,
    cuda_graph,
    fork_join,
    gpu_bound,
    host_sync,
    launch_bound,
)
from shared_traces import kineto_path

from tracetui.analysis.syncs import SyncKind, host_sync_waits, stream_waits
from tracetui.critical import KIND_NAMES, Shrink, build_graph, critical_path, earliest_times, step_window, window_at
from tracetui.critical.model import kind_name
from tracetui.critical.window import annotation_instance
from tracetui.kineto import load_kineto
from tracetui.kineto.kinds import Kind


def _path(p):
    kt = load_kineto(p)
    return kt, critical_path(kt, step_window(kt, 1))


def _segments(kt, cp):
    s = cp.segments
    return [(kind_name(k), None if e < 0 else kt.name(int(e)), pytest.approx(d))
            for k, e, d in zip(s.kind.tolist(), s.event.tolist(), s.dur_us.tolist())]


def _check(tmp_path, builder, **kw):
    p, want = builder(tmp_path, **kw)
    kt, cp = _path(p)
    assert _segments(kt, cp) == [(k, n, pytest.approx(d)) for k, n, d in want["segments"]]
    assert cp.total_us == pytest.approx(want["total_us"])
    expect = dict.fromkeys(KIND_NAMES, 0.0) | by_kind(want["segments"])
    assert cp.by_kind_us == pytest.approx(expect)
    assert sum(cp.by_kind_us.values()) == pytest.approx(cp.total_us)
    # segments are contiguous in time, from the window start to the last event's end
    s = cp.segments
    assert s.start_us[0] == pytest.approx(cp.window.start_us)
    assert np.allclose(s.start_us[1:], (s.start_us + s.dur_us)[:-1])
    assert s.start_us[-1] + s.dur_us[-1] == pytest.approx(cp.end_us)
    return kt, cp


def test_gpu_bound_step(tmp_path):
    kt, cp = _check(tmp_path, gpu_bound)
    # the kernels are on the path: no slack; the last host op could run much longer
    sl = dict(zip([kt.name(int(e)) for e in cp.slack.event], cp.slack.slack_us.tolist()))
    assert sl["gemm_a"] == sl["gemm_b"] == sl["relu_c"] == 0.0
    assert sl["aten::op3"] == pytest.approx(625 - 100)  # the step ends 25 µs after it, 525 µs before relu_c
    assert not cp.segments.inferred.any()


def test_launch_bound_step(tmp_path):
    _check(tmp_path, launch_bound)


def test_step_blocked_on_a_host_sync(tmp_path):
    kt, cp = _check(tmp_path, host_sync)
    sw = host_sync_waits(kt)
    assert len(sw) == 1
    assert kt.name(int(sw.call[0])) == "cudaStreamSynchronize" and sw.kind[0] == SyncKind.STREAM
    assert kt.name(int(sw.waited[0])) == "Memcpy DtoH (Device -> Pinned)"
    assert sw.wait_us[0] == pytest.approx(436 - 62)
    assert not sw.inferred[0]  # the CUPTI "Stream Sync" record names the stream
    assert kt.name(int(sw.op[0])) == "aten::_local_scalar_dense"


def test_host_sync_without_a_cupti_record_is_inferred(tmp_path):
    kt, cp = _check(tmp_path, host_sync, record=False)
    assert host_sync_waits(kt).inferred.tolist() == [True]
    wait = [i for i in range(len(cp.segments)) if kind_name(cp.segments.kind[i]) == "sync_wait"]
    assert cp.segments.inferred[wait].all()


def test_two_streams_with_a_cross_stream_wait(tmp_path):
    kt, cp = _check(tmp_path, cross_stream)
    st = stream_waits(kt)
    assert [(kt.name(int(a)), kt.name(int(b))) for a, b in zip(st.recorded, st.waiting)] == [("gemm", "add_kernel")]
    i = int(np.flatnonzero(cp.segments.kind == KIND_NAMES.index("stream_wait"))[0])
    assert kt.name(int(cp.segments.from_event[i])) == "gemm" and not cp.segments.inferred[i]


def test_cross_stream_wait_without_a_record_is_inferred(tmp_path):
    kt, cp = _check(tmp_path, cross_stream, record=False)
    assert stream_waits(kt).unresolved == 1
    i = int(np.flatnonzero(cp.segments.kind == KIND_NAMES.index("stream_wait"))[0])
    assert cp.segments.inferred[i] and kt.name(int(cp.segments.from_event[i])) == "gemm"


def test_cuda_graph_kernels_follow_their_graph_launch(tmp_path):
    kt, cp = _check(tmp_path, cuda_graph)
    g = build_graph(kt, step_window(kt, 1))
    assert g.stats["launch_edges"] == 3


def test_fork_and_join_across_threads(tmp_path):
    kt, cp = _check(tmp_path, fork_join)
    other = [cp.segments.name[i] for i in range(len(cp.segments)) if kind_name(cp.segments.kind[i]) == "other"]
    assert other[0].startswith("hand-off to thread 2") and other[1].startswith("untraced time on thread 2")
    assert cp.segments.inferred.any()


@pytest.mark.parametrize("builder", [gpu_bound, launch_bound, host_sync, cross_stream, cuda_graph, fork_join])
def test_forward_pass_gives_back_the_observed_times(tmp_path, builder):
    """The binding edges carry the elapsed times: the longest path to every node is its time."""
    p, _ = builder(tmp_path)
    kt = load_kineto(p)
    g = build_graph(kt, step_window(kt, 1))
    dist = earliest_times(g)
    assert np.allclose(dist[g.node_valid], g.node_t[g.node_valid])


def test_what_if_shrinks_kernels_and_host_ops(tmp_path):
    p, _ = gpu_bound(tmp_path)
    kt = load_kineto(p)
    cp = critical_path(kt, step_window(kt, 1), shrink=[Shrink.parse("gemm_b=50")])
    assert cp.what_if["projected_total_us"] == pytest.approx(625 - 150)
    assert cp.what_if["shrink"][0]["matched_gpu"] == 1
    # the host is not on the path: making it faster changes little (only the first launch is earlier)
    cp = critical_path(kt, step_window(kt, 1), shrink=[Shrink.parse("aten::op*=100")])
    assert cp.what_if["projected_total_us"] == pytest.approx(625 - 5)
    p, _ = launch_bound(tmp_path)
    kt = load_kineto(p)
    cp = critical_path(kt, step_window(kt, 1), shrink=[Shrink.parse("aten::op=50")])
    # the host decides: op1 and op2 (50 µs with their launch calls) take 25, op3 reaches its last
    # launch after 20 instead of 40; the step's own time, the launch delay and the kernel stay
    assert cp.what_if["projected_total_us"] == pytest.approx(186 - 25 - 25 - 20)


def test_shrink_parse_rejects_bad_values():
    for bad in ("gemm", "gemm=abc", "=10", "gemm=150"):
        with pytest.raises(ValueError):
            Shrink.parse(bad)
    assert Shrink.parse("a=b=5") == Shrink("a=b", 5.0)


def test_navigation_model_for_the_path_screen(tmp_path):
    p, _ = host_sync(tmp_path)
    kt, cp = _path(p)
    s = cp.segments
    # marks: the kernel, the copy, the sync call and the ops whose time is on the path
    on = cp.on_path_mask(kt.n_events)
    names = {kt.name(int(e)) for e in np.flatnonzero(on)}
    assert {"gemm", "Memcpy DtoH (Device -> Pinned)", "cudaStreamSynchronize", "aten::item"} <= names
    assert "cudaLaunchKernel" in names  # the gemm's launch: the path leaves the host there
    assert "cudaMemcpyAsync" not in names  # the copy waited for the gemm, not for its launch
    # next/previous segment, clamped; the segment under a time; the segments of an event
    assert cp.next_segment(0, -1) == 0 and cp.next_segment(len(s) - 1) == len(s) - 1
    i = cp.segment_at(100.0)
    assert kind_name(s.kind[i]) == "gpu" and s.name[i] == "gemm"
    step = int(np.flatnonzero([n == "ProfilerStep#1" for n in kt.names])[0])
    ev = int(np.flatnonzero(kt.name_id == step)[0])
    assert cp.segments_of_event(ev).tolist() == [0, 9, 11]
    assert [k for k, _, _ in cp.breakdown()][:2] == ["gpu", "host"]


def test_the_window_under_the_cursor(tmp_path):
    kt = load_kineto(kineto_path("h100_bert_inference.json.gz"))
    step = int(np.flatnonzero(np.array([kt.name(i) == "ProfilerStep#6" for i in range(kt.n_events)]))[0])
    kernel = int(np.flatnonzero(kt.kind == int(Kind.KERNEL))[0])
    for ev in (step, kernel, int(kt.children(step)[3]), -1):
        w = window_at(kt, ev)
        assert (w.kind, w.name, w.event) == ("step", "ProfilerStep#6", step)
    # no step: an annotation holds the op; outside it the op itself is the window
    t = TraceWriter()
    t._x("user_annotation", "fwd", 0, 100)
    t.op("aten::mm", 10, 30)
    t._x("user_annotation", "fwd", 200, 50)
    t.op("aten::add", 300, 20)
    kt2 = load_kineto(t.write(tmp_path / "no_step.json"))
    names = [kt2.name(i) for i in range(kt2.n_events)]
    w = window_at(kt2, names.index("aten::mm"))
    assert (w.kind, w.name, w.start_us, w.end_us) == ("annotation", "fwd", 0.0, 100.0)
    w = window_at(kt2, names.index("aten::add"))
    assert (w.kind, w.name, w.start_us, w.end_us) == ("event", "aten::add", 300.0, 320.0)
    second = [i for i, n in enumerate(names) if n == "fwd"][1]
    assert annotation_instance(kt2, second) == 2
