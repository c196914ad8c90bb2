"""The Kineto loader on every shared trace: counts, links and metadata verified by reading the files."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal

import numpy as np
import pytest
from shared_traces import ET_DIR, KINETO, load_shared_kineto

from tracetui.kineto import Kind, load_kineto
from tracetui.kineto.kinds import GPU_WORK_KINDS

# file -> (category counts of X/i events as in the file, GPU events, linked, launch missing,
#          graph launches, GPU events owned by graph launches)
FACTS = {
    "h100_bert_inference.json.gz": ({"cpu_op": 479, "python_function": 1385, "cuda_runtime": 110, "kernel": 60,
                                     "cuda_driver": 22, "gpu_memcpy": 1, "cpu_instant_event": 236}, 61, 61, 0, 0, 0),
    "h100_qwen_chat_inference.json.gz": ({"cpu_op": 4186, "kernel": 1465, "gpu_memset": 241}, 1707, 1198, 509, 0, 0),
    "b200x8_eager.json.gz": ({"cpu_op": 4809, "cuda_driver": 221, "overhead": 9, "kernel": 768}, 929, 929, 0, 0, 0),
    "mi300_resnet_train_checkpointing.json.gz": ({"cpu_op": 8004, "kernel": 2995, "gpu_memset": 108},
                                                 3653, 2685, 968, 0, 0),
    "mi210_gpu_only.json.gz": ({"cuda_runtime": 631, "kernel": 562}, 562, 562, 0, 0, 0),
    "amd_vllm_hipgraph.json.gz": ({"python_function": 17038, "kernel": 413, "gpu_memcpy": 10}, 423, 423, 0, 25, 361),
    "v100x2_nccl_216k.json.gz": ({"cpu_op": 56680, "kernel": 19370, "cpu_instant_event": 28010}, 22290, 22290, 0, 0, 0),
    "a100_cudagraph_nccl_rank0.json.gz": ({"cpu_op": 25185, "kernel": 6080, "cuda_runtime": 33924},
                                          7747, 6875, 872, 70, 345),
    "v100_ns_timestamps_fwdbwd.json.gz": ({"cpu_op": 23910, "kernel": 4350}, 6095, 6095, 0, 0, 0),
    "v100_old_flow_format_cudagraph.json.gz": ({"cpu_op": 31236, "kernel": 9876}, 15632, 15018, 614, 12, 5046),
    "mi250_minitoy_train.json.gz": ({"cpu_op": 70, "kernel": 14, "gpu_memcpy": 2}, 16, 16, 0, 0, 0),
    "a100_triton.json.gz": ({"cpu_op": 3, "kernel": 1, "cuda_driver": 1}, 1, 1, 0, 0, 0),
    "a100_event_sync_multistream.json.gz": ({"cuda_sync": 5, "kernel": 3, "gpu_memset": 3}, 6, 6, 0, 0, 0),
    "cpu_only_small.json.gz": ({"user_annotation": 11, "cpu_op": 4}, 0, 0, 0, 0, 0),
    "old_categories_inference.json.gz": ({"Kernel": 4, "Runtime": 8}, 4, 4, 0, 0, 0),
}


@pytest.mark.parametrize("name", sorted(FACTS))
def test_category_counts_and_gpu_links(name):
    cats, gpu, linked, missing, graphs, graph_kernels = FACTS[name]
    kt = load_shared_kineto(name)
    counts = kt.category_counts()
    for c, v in cats.items():
        assert counts.get(c) == v, (c, counts.get(c))
    s = kt.gpu_stats
    assert (s.gpu_events, s.linked, s.launch_missing) == (gpu, linked, missing)
    assert (s.graph_launches, s.graph_kernels) == (graphs, graph_kernels)
    # every GPU event whose launch is in the file is attached to it (the check is by raw correlation)
    assert s.no_correlation == 0
    # every X event is in the tree; every node reachable from a lane root
    xs = np.flatnonzero(kt.ph == ord("X"))
    assert (kt.parent[xs] >= 0).all()
    reached = np.zeros(kt.n_nodes, dtype=bool)
    for r in kt.roots():
        reached[kt.subtree(r)] = True
    assert reached[xs].all()
    if s.linked:
        # flows confirm every correlation link in these files
        assert s.confirmed_by_flow == s.linked


def test_every_event_of_the_file_is_in_the_model():
    raw = json.loads(gzip.open(KINETO / "h100_bert_inference.json.gz").read())
    evs = raw["traceEvents"]
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    n_meta = sum(1 for e in evs if e.get("ph") == "M")
    n_flow = sum(1 for e in evs if e.get("ph") in ("s", "f"))
    assert kt.n_events + n_meta + len(kt.flows.cat) == len(evs) == 2551
    assert len(kt.flows.cat) == n_flow == 193


def test_bert_kernel_link_and_args():
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    k = int(np.flatnonzero((kt.kind == Kind.KERNEL) & (kt.correlation == 8218))[0])
    assert kt.name(k).startswith("void at::native::(anonymous namespace)::indexSelectLargeIndex")
    assert kt.name(int(kt.launch_of[k])) == "cudaLaunchKernel"
    op = int(kt.cpu_op_of[k])
    assert kt.name(op) == "aten::index_select" and kt.external_id[op] == 9
    args = kt.args(k)
    assert args["grid"] == [564, 1, 1] and args["block"] == [128, 1, 1]
    assert args["registers per thread"] == 32
    assert kt.device_properties[0]["name"] == "NVIDIA H100 80GB HBM3"
    assert kt.base_time_ns == 1751410836000000000


def test_old_traces_external_id_equals_correlation_makes_no_false_links():
    kt = load_shared_kineto("old_categories_inference.json.gz")
    gpu = np.flatnonzero(kt.kind == Kind.KERNEL)
    for g in gpu.tolist():
        launch = int(kt.launch_of[g])
        assert kt.correlation[launch] == kt.correlation[g]
        assert kt.name(launch) == "cudaLaunchKernel"


def test_graph_launch_owns_all_kernels_with_its_correlation():
    kt = load_shared_kineto("amd_vllm_hipgraph.json.gz")
    graphs = [i for i in range(kt.n_events) if kt.name(i) == "hipGraphLaunch"]
    assert len(graphs) == 25
    for g in graphs:
        kids = kt.children(g)
        same = np.flatnonzero(np.isin(kt.kind,
                                      [int(k) for k in GPU_WORK_KINDS]) & (kt.correlation == kt.correlation[g]))
        assert set(kids.tolist()) == set(same.tolist())
    assert max(len(kt.children(g)) for g in graphs) > 10


def test_unlinked_gpu_events_stay_reachable_under_their_stream():
    kt = load_shared_kineto("h100_qwen_chat_inference.json.gz")
    gpu = np.flatnonzero(np.isin(kt.kind, [int(k) for k in GPU_WORK_KINDS]))
    unlinked = gpu[kt.launch_of[gpu] < 0]
    assert unlinked.size == 509
    for u in unlinked[:50].tolist():
        lane = kt.lanes[int(kt.parent[u]) - kt.n_events]
        assert lane.is_gpu and lane.tid == kt.tids[u]


def test_exact_nanosecond_timestamps():
    raw = json.loads(gzip.open(KINETO / "v100_ns_timestamps_fwdbwd.json.gz").read(), parse_float=Decimal)
    kernels = [e for e in raw["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"][:20]
    kt = load_shared_kineto("v100_ns_timestamps_fwdbwd.json.gz")
    kidx = np.flatnonzero(kt.kind == Kind.KERNEL)
    order = kidx[np.argsort(kt.ts[kidx], kind="stable")]
    by_ts = {round(float(kt.ts[i]), 4): i for i in order.tolist()}
    for e in kernels:
        rel = e["ts"] - kt.origin_us  # exact decimal arithmetic
        assert round(float(rel), 4) in by_ts
        # an absolute float64 would be off by up to 0.25 µs here; relative times keep the ns digits
        assert abs(float(rel) - float(Decimal(str(kt.ts[by_ts[round(float(rel), 4)]])))) < 1e-6


def test_fwd_bwd_links():
    kt = load_shared_kineto("v100_ns_timestamps_fwdbwd.json.gz")
    bwd = np.flatnonzero(kt.fwd_of >= 0)
    assert bwd.size == 1810  # one per fwdbwd flow pair
    for b in bwd[:100].tolist():
        f = int(kt.fwd_of[b])
        assert kt.seq[f] == kt.seq[b]
        assert kt.fwd_tid[b] > 0
    kt = load_shared_kineto("mi300_resnet_train_checkpointing.json.gz")
    assert int((kt.fwd_of >= 0).sum()) == 426
    b = int(np.flatnonzero(kt.fwd_of >= 0)[0])
    assert "Backward" in kt.name(b) and kt.tids[b] == 639 and kt.tids[int(kt.fwd_of[b])] == 542


def test_children_ending_after_parent_are_kept():
    # a synthetic file: the child ends 0.5 µs after its parent (as real traces do)
    import orjson

    evs = [
        {"ph": "X", "cat": "cpu_op", "name": "parent", "pid": 1, "tid": 1, "ts": 100.0, "dur": 10.0},
        {"ph": "X", "cat": "cpu_op", "name": "child", "pid": 1, "tid": 1, "ts": 105.0, "dur": 5.5},
        {"ph": "X", "cat": "cpu_op", "name": "zero", "pid": 1, "tid": 1, "ts": 105.0, "dur": 0.0},
        {"ph": "X", "cat": "cpu_op", "name": "next", "pid": 1, "tid": 1, "ts": 110.2, "dur": 1.0},
    ]
    from tracetui.kineto.build import build_trace
    from tracetui.kineto.decode import decode_events

    kt = build_trace("mem", decode_events("mem", orjson.dumps({"traceEvents": evs})))
    names = {kt.name(i): i for i in range(kt.n_events)}
    assert kt.parent[names["child"]] == names["parent"]
    assert kt.parent[names["zero"]] == names["child"]  # same start, shorter: nested, deterministic
    # starts after the parent ended, before the overrunning child ends: a sibling of the parent
    assert kt.parent[names["next"]] == kt.lanes[0].node
    assert kt.parent[names["parent"]] == kt.lanes[0].node


def test_bare_array_form_and_plain_json(tmp_path):
    raw = json.loads(gzip.open(KINETO / "mi250_minitoy_train.json.gz").read())
    p = tmp_path / "array.trace"
    p.write_text(json.dumps(raw["traceEvents"]))
    kt = load_kineto(p)
    ref = load_shared_kineto("mi250_minitoy_train.json.gz")
    assert kt.n_events == ref.n_events and kt.gpu_stats.linked == 16
    assert kt.metadata == {}


def test_large_integers_do_not_crash():
    kt = load_shared_kineto("large_integer_values.json.gz")
    i = [i for i in range(kt.n_events) if kt.name(i) == "record_param_comms"][0]
    assert kt.args(i)["Comms Id"] == 10159970886766084423


def test_pair_kineto_files_load():
    for folder in ("hta_simple_add_cuda_pair", "param_dlrm_rank0_cuda_pair", "param_linear_cuda_pair"):
        kt = load_kineto(ET_DIR / folder / "kineto.json.gz")
        assert kt.gpu_stats.gpu_events > 0 and kt.gpu_stats.unlinked == 0


def test_annotation_starting_inside_its_python_enter_call_is_not_nested_there():
    # ProfilerStep#6 (4.4 ms) starts inside `_record_function_enter_new` (107 µs); it must own the step's ops
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    step = next(i for i in range(kt.n_events) if kt.name(i) == "ProfilerStep#6" and kt.kind[i] == Kind.ANNOTATION)
    assert not kt.name(int(kt.parent[step])).startswith("<built-in method _record_function_enter")
    ops = kt.subtree(step)
    assert (kt.kind[ops[ops < kt.n_events]] == Kind.CPU_OP).sum() > 400
    assert len(kt.gpu_events_of(step)) == 61
