"""Launch and pipeline figures on real traces (numbers read from the files)."""

from __future__ import annotations

import pytest
from shared_traces import load_shared_kineto

from tracetui.analysis.frames import gpu_events_frame
from tracetui.analysis.gpu_breakdown import gpu_timeline
from tracetui.analysis.launches import (
    copy_table,
    launch_frame,
    launch_summary,
    step_table,
)


def test_bert_launch_figures():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    gpu = gpu_events_frame(kt)
    lf = launch_frame(kt, gpu)
    assert len(lf) == 61
    first = lf.sort_values("ts").iloc[0]
    # cudaLaunchKernel at 917.540 µs, its indexSelect kernel starts at 930.849 µs
    assert first["delay_us"] == pytest.approx(930.849 - 917.54)
    assert first["dur"] == pytest.approx(12.25)
    s = launch_summary(kt, gpu, gpu_timeline(gpu))
    assert s["launch_delay"]["kernel_launch"]["count"] == 60
    assert s["launch_delay"]["memcpy"]["count"] == 1
    assert s["sync"]["by_name"] == {"cudaDeviceSynchronize": {"count": 2, "total_us": pytest.approx(11.91)},
                                    "cudaStreamSynchronize": {"count": 1, "total_us": pytest.approx(7.64)}}
    assert s["sync"]["blocking_calls"] == 3
    alloc = s["allocations"]["by_device"]["gpu 0"]
    assert alloc["allocs"] == 109 and alloc["frees"] == 109 and alloc["alloc_bytes"] == 47460864
    assert s["copies"] == [{"direction": "DtoH", "count": 1, "bytes": 1, "total_us": pytest.approx(2.24),
                            "gb_per_s": pytest.approx(1 / 2240)}]
    assert s["steps"] == [{"step": "ProfilerStep#6", "ts": pytest.approx(472.313), "dur": pytest.approx(4426.114),
                           "kernel_launches": 60, "graph_launches": 0, "gpu_events": 61,
                           "gpu_us": pytest.approx(309.437)}]
    assert s["compute_memcpy_ratio"] == pytest.approx(0.307197 / 0.00224, rel=1e-4)


def test_cuda_sync_events_and_malloc_calls():
    kt = load_shared_kineto("a100_event_sync_multistream.json.gz")
    s = launch_summary(kt, gpu_events_frame(kt))
    assert s["sync"]["cuda_sync_events"] == 5
    assert s["sync"]["by_name"]["cudaStreamWaitEvent"]["count"] == 1
    assert s["allocations"]["malloc_calls"] == 3
    assert s["compute_memcpy_ratio"] is None and s["kernel_memcpy_ratio"] is None


def test_graph_launches_per_step_and_copy_directions():
    kt = load_shared_kineto("a100_cudagraph_nccl_rank0.json.gz")
    gpu = gpu_events_frame(kt)
    lf = launch_frame(kt, gpu)
    steps = step_table(kt, lf)
    assert len(steps) == 5
    assert steps["graph_launches"].tolist() == [14] * 5  # 70 cudaGraphLaunch over 5 steps
    assert steps["kernel_launches"].iloc[0] == 1048
    graphs = lf[lf["launch_class"] == "graph_launch"]
    assert len(graphs) == 70 and graphs["n_gpu"].sum() == 345
    copies = copy_table(gpu).set_index("direction")
    assert copies.loc["DtoD", "count"] == 1280
    assert copies.loc["HtoD", "count"] == 80 and copies.loc["DtoH", "count"] == 30
    assert copies.loc["memset", "count"] == 277


def test_amd_hip_names():
    kt = load_shared_kineto("mi300_resnet_train_checkpointing.json.gz")
    s = launch_summary(kt, gpu_events_frame(kt))
    assert s["sync"]["by_name"]["hipDeviceSynchronize"]["count"] == 1
    assert s["sync"]["by_name"]["hipStreamWaitEvent"]["count"] == 24
    assert s["launch_delay"]["kernel_launch"]["count"] == 2238
    assert [r["step"] for r in s["steps"]] == ["ProfilerStep#15", "ProfilerStep#16", "ProfilerStep#17"]
