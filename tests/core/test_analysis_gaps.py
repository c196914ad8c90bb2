"""Idle gaps per stream on real traces: classes, host activity, histogram, window."""

from __future__ import annotations

import pytest
from shared_traces import load_shared_kineto

from tracetui.analysis.frames import gpu_events_frame
from tracetui.analysis.gaps import GAP_COLUMNS, gap_histogram, idle_gaps, idle_summary
from tracetui.analysis.gpu_breakdown import gpu_timeline


def test_single_stream_gaps_add_up_to_timeline_idle():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    gpu = gpu_events_frame(kt)
    gaps = idle_gaps(kt, gpu)
    assert tuple(gaps.columns) == GAP_COLUMNS
    # 61 GPU events on one stream, never back to back: 60 gaps, the GPU always waited on the host
    assert len(gaps) == 60
    assert set(gaps["idle_class"]) == {"host_wait"}
    assert gaps["dur"].sum() == pytest.approx(gpu_timeline(gpu)["idle"])
    big = gaps.loc[gaps["dur"].idxmax()]
    assert big["dur"] == pytest.approx(247.551)
    assert big["next_op_name"] == "aten::addmm"
    assert big["launch_ts"] > big["start"]
    # the host was running Python (inspect.get_annotations), outside any cpu_op
    assert big["host_event_name"] == "inspect.py(176): get_annotations"
    assert big["host_op"] == -1


def test_classes_on_llm_decode_trace():
    kt = load_shared_kineto("h100_qwen_chat_inference.json.gz")
    gpu = gpu_events_frame(kt)
    gaps = idle_gaps(kt, gpu)
    by = idle_summary(gaps).set_index("idle_class")
    assert by.loc["host_wait", "count"] == 25
    assert by.loc["kernel_to_kernel", "count"] == 1676
    assert by.loc["other", "count"] == 5
    assert by.loc["kernel_to_kernel", "max_us"] < 5.0
    assert by["percent"].sum() == pytest.approx(100.0)
    # HTA's 30 ns threshold: no gap is that short, the short ones become "other"
    hta = idle_summary(idle_gaps(kt, gpu, kernel_gap_us=0.03)).set_index("idle_class")
    assert hta.loc["kernel_to_kernel", "count"] == 0
    assert hta.loc["other", "count"] == 1681
    hist = gap_histogram(gaps)
    assert hist["count"].sum() == len(gaps)
    assert hist[["host_wait", "kernel_to_kernel", "other"]].to_numpy().sum() == len(gaps)
    assert hist.loc[hist["bin"] == "1 µs–2 µs", "count"].item() == 1255


def test_host_op_during_gap_on_multistream_trace():
    kt = load_shared_kineto("a100_cudagraph_nccl_rank0.json.gz")
    gaps = idle_gaps(kt)
    big = gaps.loc[gaps["dur"].idxmax()]
    assert big["stream"] == 25 and big["idle_class"] == "host_wait"
    assert big["dur"] == pytest.approx(212248.0)
    assert big["host_event_name"] == "cudaMemcpyAsync"
    assert big["host_op_name"] == "aten::copy_"
    assert set(gaps["stream"]) == {7, 25, 27, 84, 285, 363}


def test_window_clips_gaps():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    gpu = gpu_events_frame(kt)
    all_gaps = idle_gaps(kt, gpu)
    g0 = all_gaps.iloc[3]
    mid = (g0["start"] + g0["end"]) / 2
    clipped = idle_gaps(kt, gpu, window=(mid, g0["end"] + 1e-9))
    assert len(clipped) == 1
    assert clipped.iloc[0]["dur"] == pytest.approx(g0["end"] - mid)


def test_trace_without_gpu_has_no_gaps():
    kt = load_shared_kineto("cpu_only_small.json.gz")
    assert idle_gaps(kt).empty
    assert idle_summary(idle_gaps(kt))["count"].sum() == 0
