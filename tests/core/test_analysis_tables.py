"""Per-kernel, per-op and per-category tables against the TraceLens oracle and real traces."""

from __future__ import annotations

import csv
from collections import defaultdict

import pytest
from shared_traces import SHARED, load_shared_kineto

from tracetui.analysis.frames import (
    GPU_COLUMNS,
    cpu_ops_frame,
    gpu_events_frame,
    top_cpu_op,
)
from tracetui.analysis.gpu_breakdown import gpu_timeline
from tracetui.analysis.tables import (
    category_table,
    kernel_table,
    op_table,
    stream_table,
)

ORACLE = SHARED / "oracles" / "h100_bert_inference_tracelens"


def _oracle_kernels() -> dict[str, tuple[int, float]]:
    out: dict[str, list] = defaultdict(lambda: [0, 0.0])
    with open(ORACLE / "kernel_summary.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            acc = out[row["Kernel name"]]
            acc[0] += int(row["Kernel duration (µs)_count"])
            acc[1] += float(row["Kernel duration (µs)_sum"])
    return {k: (v[0], v[1]) for k, v in out.items()}


def test_kernel_table_matches_oracle_per_kernel_name():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    gpu = gpu_events_frame(kt)
    table = kernel_table(gpu[gpu["kind"] == "kernel"], span_us=gpu_timeline(gpu)["total"])
    oracle = _oracle_kernels()
    assert len(oracle) == 11 and sum(c for c, _ in oracle.values()) == 60
    ours = {r.name: (r.count, r.total_us) for r in table.itertuples()}
    assert set(ours) == set(oracle)
    for name, (count, total) in oracle.items():
        assert ours[name][0] == count, name
        assert ours[name][1] == pytest.approx(total, rel=1e-6), name
    # the vectorized add kernel runs under aten::add (9) and aten::add_ (1): one row of 10 here
    add = table[table["name"].str.contains("CUDAFunctor_add")]
    assert add["count"].tolist() == [10]
    top = table.iloc[0]
    assert top["kernel_category"] == "gemm" and top["count"] == 17
    assert top["percent_of_span"] == pytest.approx(2.5261622829445454, rel=1e-4)  # oracle "Percent of total time"


def test_op_table_direct_time_matches_oracle():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    ops = op_table(cpu_ops_frame(kt), only_gpu=True)
    with open(ORACLE / "ops_summary.csv", newline="") as fh:
        oracle = {r["name"]: (int(r["Count"]), float(r["total_direct_kernel_time_sum"])) for r in csv.DictReader(fh)}
    ours = {r.name: (r.count, r.direct_gpu_us) for r in ops.itertuples()}
    assert set(ours) == set(oracle)
    for name, (count, direct) in oracle.items():
        assert ours[name][0] == count, name
        assert ours[name][1] == pytest.approx(direct, abs=1e-3), name
    assert ops["percent"].sum() == pytest.approx(100.0)


def test_subtree_time_rolls_up_to_outer_ops():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    table = op_table(cpu_ops_frame(kt)).set_index("name")
    # aten::linear launches nothing itself; its aten::addmm children launch every GEMM
    assert table.loc["aten::linear", "direct_gpu_us"] == 0
    assert table.loc["aten::linear", "subtree_gpu_us"] == pytest.approx(table.loc["aten::addmm", "direct_gpu_us"])
    assert table.loc["aten::linear", "count"] == 26


def test_ops_by_shape_split_one_name():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    by_shape = op_table(cpu_ops_frame(kt), by_shapes=True, only_gpu=True)
    addmm = by_shape[by_shape["name"] == "aten::addmm"]
    assert addmm["count"].sum() == 26
    assert len(addmm) > 1
    assert "[[512], [141, 512], [512, 512], [], []]" in addmm["input_dims"].tolist()


def test_gpu_frame_columns_and_launch_config():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    gpu = gpu_events_frame(kt)
    assert tuple(gpu.columns) == GPU_COLUMNS
    assert len(gpu) == 61 and (gpu["kind"] == "memcpy").sum() == 1
    first = gpu.iloc[0]
    assert first["op_name"] == "aten::index_select" and first["top_op_name"] == "aten::embedding"
    assert first["grid"] == "564,1,1" and first["block"] == "128,1,1"
    assert first["registers"] == 32 and first["shared_mem"] == 0 and first["occupancy"] == 27
    assert first["launch_name"] == "cudaLaunchKernel"
    mc = gpu[gpu["kind"] == "memcpy"].iloc[0]
    assert mc["bytes"] == 1 and mc["kernel_category"] == "memory" and mc["op_name"] == "aten::_local_scalar_dense"
    top = top_cpu_op(kt)
    assert (top[gpu["event"].to_numpy()] >= 0).all()


def test_category_table_whole_trace_and_cuda_graph_subtree():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    cats = category_table(gpu_events_frame(kt)).set_index("category")
    assert cats.loc["gemm", "count"] == 26
    assert cats.loc["attention_fwd", "count"] == 4
    assert cats.loc["normalization", "count"] == 10
    assert cats["percent"].sum() == pytest.approx(100.0)
    # a100_cudagraph_nccl_rank0: 70 cudaGraphLaunch; the 9th (backward) replays 20 kernels
    kt = load_shared_kineto("a100_cudagraph_nccl_rank0.json.gz")
    launches = [i for i in range(kt.n_events) if kt.name(i) == "cudaGraphLaunch"]
    assert len(launches) == 70
    assert sum(len(kt.gpu_events_of(i)) for i in launches) == 345
    launches.sort(key=lambda i: kt.ts[i])
    sub = gpu_events_frame(kt, events=kt.gpu_events_of(launches[8]))
    counts = dict(zip(*[category_table(sub)[c].tolist() for c in ("category", "count")]))
    assert counts == {"memory": 18, "triton": 1, "gemm": 1}
    assert kt.name(kt.cpu_op_of[launches[8]]) == "CompiledFunctionBackward"
    sub = gpu_events_frame(kt, events=kt.gpu_events_of(launches[13]))
    counts = dict(zip(*[category_table(sub)[c].tolist() for c in ("category", "count")]))
    assert counts == {"memory": 12, "gemm": 7, "triton": 1}


@pytest.mark.slow
def test_stream_table_two_streams():
    kt = load_shared_kineto("v100x2_nccl_216k.json.gz")
    table = stream_table(gpu_events_frame(kt))
    assert table[["device", "stream", "count"]].values.tolist() == [[1, 7, 20270], [1, 14, 2020]]
