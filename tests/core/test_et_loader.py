"""load_et on every real Execution Trace in ../shared/traces/et.

The facts asserted here were read from the files themselves (decompressed and inspected
node by node), not from the loader's output.
"""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import numpy as np
import orjson
import pytest

from tracetui.et import ETTensor, ETTrace, is_execution_trace, load_et
from tracetui.io.files import read_trace_bytes

ET = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "et"

# file -> (nodes, layout, schema, thread roots)
FILES = {
    "torch_cpu_pair/et.json.gz": (3202, "nested", "1.1.1-chakra.0.0.4", 1),
    "torch_cpu_pair_threads/et.json.gz": (3700, "nested", "1.1.1-chakra.0.0.4", 4),
    "param_linear_cuda_pair/et.json.gz": (931, "flat", "1.0.1", 2),
    "param_dlrm_rank0_cuda_pair/et.json.gz": (1675, "flat", "1.0.1", 2),
    "hta_simple_add_cuda_pair/et.json.gz": (38, "flat", "1.0.1", 1),
    "et_only/hf_gpt2_schema_1.1.0.json.gz": (27156, "nested", "1.1.0-chakra.0.0.4", 2),
    "et_only/resnet_1gpu_schema_1.0.3.json.gz": (14391, "nested", "1.0.3-chakra.0.0.4", 2),
    "et_only/chakra_test_schema_1.0.2.json.gz": (263, "nested", "1.0.2-chakra.0.0.4", 1),
    "et_only/pt2_compiled_schema_1.1.1.json.gz": (20, "nested", "1.1.1-chakra.0.0.4", 1),
}

_cache: dict[str, ETTrace] = {}


def et(name: str) -> ETTrace:
    if name not in _cache:
        _cache[name] = load_et(ET / name)
    return _cache[name]


@pytest.mark.parametrize("name", list(FILES))
def test_every_file_loads_with_its_facts(name: str) -> None:
    nodes, layout, schema, threads = FILES[name]
    tr = et(name)
    assert len(tr) == nodes
    assert tr.layout == layout
    assert tr.schema == schema
    assert tr.warnings == []
    # sorted by id; node id 1 is the process root, its own parent in the file
    assert np.all(np.diff(tr.ids) > 0)
    assert list(tr.roots()) == [0] and tr.ids[0] == 1
    assert tr.name(0).startswith("[pytorch|profiler|") and tr.name(0).endswith("|process]")
    assert tr.parent_ids[0] == 1 and tr.parent[0] == -1
    # every thread root hangs off the process root and has rf_id 0
    thread_roots = tr.thread_roots()
    assert len(thread_roots) == threads
    assert np.all(tr.parent[thread_roots] == 0) and np.all(tr.rf_id[thread_roots] == 0)
    assert np.all(tr.depth[thread_roots] == 1)
    # every node is in the tree exactly once: children lists cover all non-roots
    assert tr.child_index.size == len(tr) - 1
    assert np.all(tr.depth[tr.child_index] == tr.depth[tr.parent[tr.child_index]] + 1)
    assert tr.ids.dtype == np.int64 and tr.parent.dtype == np.int32 and tr.name_ids.dtype == np.int32


def test_top_level_fields() -> None:
    tr = et("et_only/hf_gpt2_schema_1.1.0.json.gz")
    assert (tr.pid, tr.time) == (512643, "2024-05-24 12:00:25")
    assert (tr.start_ts, tr.finish_ts) == (6216101515, 6216123246)
    flat = et("hta_simple_add_cuda_pair/et.json.gz")
    assert (flat.pid, flat.start_ts, flat.finish_ts) == (563677, 6278907328, 6278928026)


def test_flat_layout_nodes_hta() -> None:
    tr = et("hta_simple_add_cuda_pair/et.json.gz")
    # first nodes by id: process, thread, [param|cuda], aten::rand, aten::empty, aten::uniform_
    assert [tr.name(p) for p in range(6)] == [
        "[pytorch|profiler|execution_trace|process]",
        "[pytorch|profiler|execution_trace|thread]",
        "[param|cuda]",
        "aten::rand",
        "aten::empty",
        "aten::uniform_",
    ]
    assert list(tr.ids[:6]) == [1, 2, 3, 4, 5, 8]
    assert list(tr.rf_id[:6]) == [0, 0, 1, 2, 3, 4]
    assert list(tr.parent_ids[:6]) == [1, 1, 2, 3, 4, 4]
    rand = tr.pos_of_id(4)
    assert [int(tr.ids[c]) for c in tr.children(rand)] == [5, 8]
    assert tr.depth[rand] == 3


def test_flat_tensor_and_generic_list() -> None:
    tr = et("hta_simple_add_cuda_pair/et.json.gz")
    node = tr.node(tr.pos_of_id(5))
    assert node.name == "aten::empty" and node.rf_id == 3 and node.parent_id == 4
    assert node.op_schema.startswith("aten::empty.memory_format(SymInt[] size")
    assert node.attrs["rf_id"] == 3 and node.attrs["scope"] == 0
    # inputs: [[256,256],6,"<None>","cuda",false,"<None>"]
    size = node.inputs[0]
    assert size.type == "GenericList[Int,Int]"
    assert [a.value for a in size.value] == [256, 256] and [a.type for a in size.value] == ["Int", "Int"]
    assert [a.value for a in node.inputs[1:]] == [6, None, "cuda", False, None]
    out = node.outputs[0]
    assert out.type == "Tensor(float)"
    assert out.value == ETTensor(6, 7, 0, 65536, 4, "cuda:0", (256, 256), None, "float")
    assert out.value.nbytes == 262144


def test_nested_tensor_with_strides() -> None:
    tr = et("torch_cpu_pair/et.json.gz")
    node = tr.node(tr.pos_of_id(26))
    assert node.name == "aten::linear" and node.parent_id == 3 and node.ctrl_deps == 3
    assert (node.rf_id, node.seq_id, node.tid) == (10, 1, 1)
    assert tr.name(tr.parent[tr.pos_of_id(26)]) == "train_step_0"
    weight = node.inputs[1].value
    assert weight == ETTensor(27, 28, 0, 12288, 4, "cpu", (192, 64), (64, 1), "float")
    assert weight.nbytes == 49152
    out = node.outputs[0].value
    assert (out.tensor_id, out.shape, out.stride) == (47, (8, 16, 192), (3072, 192, 1))


def test_nested_generic_list_of_tensors() -> None:
    tr = et("torch_cpu_pair/et.json.gz")
    cat = tr.node(tr.pos_of_id(764))
    assert cat.name == "aten::cat"
    tensors = cat.inputs[0]
    assert tensors.type == "GenericList[Tensor(float),Tensor(float),Tensor(float)]"
    assert [t.value.tensor_id for t in tensors.value] == [761, 745, 735]
    assert tensors.value[1].value.stride == (1024, 1, 16)  # the one transposed input
    assert tensors.shape == ((8, 16, 64), (8, 16, 64), (8, 16, 64))
    assert cat.inputs[1].value == 2 and cat.inputs[1].type == "Int"


def test_doubly_nested_generic_list_chakra() -> None:
    tr = et("et_only/chakra_test_schema_1.0.2.json.gz")
    node = tr.node(tr.pos_of_id(30))
    assert node.name == "record_param_comms" and node.parent_id == 24
    assert tr.name(tr.pos_of_id(24)) == "c10d::allgather_"
    outer = node.outputs[0]
    assert outer.type == "GenericList[GenericList[Tensor(float),Tensor(float)]]"
    (inner,) = outer.value
    assert inner.type == "GenericList[Tensor(float),Tensor(float)]"
    assert [(a.value.tensor_id, a.value.storage_id, a.value.shape) for a in inner.value] == [
        (19, 20, (1,)),
        (5, 23, (1,)),
    ]
    # record_param_comms arguments: collective name, process group, ...
    assert [a.value for a in node.inputs[1:]][:4] == [12, 82149104, 0, "all_gather"]
    # a String input holding JSON with escaped quotes decodes intact
    init = tr.node(tr.pos_of_id(3))
    assert init.name == "## process_group:init ##"
    assert init.inputs[0].value.startswith('[{"pg_name": "0", "backend_id": 82149104')


def test_record_param_comms_in_resnet_uses_tuples() -> None:
    tr = et("et_only/resnet_1gpu_schema_1.0.3.json.gz")
    rpc = [p for p in range(len(tr)) if tr.name(p) == "record_param_comms"]
    assert len(rpc) == 27
    node = tr.node(tr.pos_of_id(436))
    assert tr.name(tr.parent[node.pos]) == "c10d::broadcast_"
    pg = node.inputs[2]
    assert pg.type == "Tuple[String,String]" and [a.value for a in pg.value] == ["0", "default_pg"]
    assert node.inputs[4].value == "broadcast"
    assert node.inputs[0].value[0].value.numel == 53120


def test_hf_gpt2_autograd_thread() -> None:
    tr = et("et_only/hf_gpt2_schema_1.1.0.json.gz")
    assert [int(tr.ids[p]) for p in tr.thread_roots()] == [2, 9346]
    assert list(tr.tid[tr.thread_roots()]) == [1, 2]
    bwd = tr.node(tr.pos_of_id(9348))
    assert bwd.name == "NllLossBackward0"
    assert (bwd.rf_id, bwd.seq_id, bwd.fw_parent, bwd.tid, bwd.fw_tid, bwd.scope) == (4714, 1922, 3, 2, 1, 1)
    scalar_grad = bwd.inputs[0].value
    assert scalar_grad.shape == () and scalar_grad.device == "cuda:0" and scalar_grad.numel == 1
    assert set(bwd.attrs) == {
        "rf_id", "fw_parent", "seq_id", "scope", "tid", "fw_tid", "op_schema", "kernel_backend", "kernel_file"
    }
    # hf_gpt2 records no record_param_comms node (single process); MANIFEST says otherwise
    assert "record_param_comms" not in tr.names
    # the two ProfilerSteps under the main thread
    main = tr.thread_roots()[0]
    assert [tr.name(c) for c in tr.children(main)] == ["ProfilerStep#0", "ProfilerStep#1"]


def test_pt2_kernel_backend_and_short_strides() -> None:
    tr = et("et_only/pt2_compiled_schema_1.1.1.json.gz")
    node = tr.node(tr.pos_of_id(16))
    assert node.name == "triton_poi_fused_add_cos_neg_sin_0"
    assert node.attrs["kernel_backend"] == "triton"
    assert node.attrs["kernel_file"] == "cm742fnyrs4e65orusgacb3ex55efiixw4flktezbgqlge5nvorn.py"
    assert node.attrs["tensor_range"] == ""
    assert tr.name(tr.parent[node.pos]) == "CompiledFunction"
    # 6 inputs but only 5 strides recorded: the last one has none
    assert len(node.inputs) == 6
    assert node.inputs[4].stride == () and node.inputs[5].stride is None
    assert node.inputs[5].value == 140382148398488
    assert node.inputs[0].value.stride == (4, 1)


def test_threads_file_keeps_et_only_threads() -> None:
    tr = et("torch_cpu_pair_threads/et.json.gz")
    roots = tr.thread_roots()
    assert [int(tr.ids[p]) for p in roots] == [2, 4, 2067, 3805]
    assert list(tr.tid[roots]) == [2, 1, 3, 4]

    def subtree_size(pos: int) -> int:
        stack, n = [pos], 0
        while stack:
            p = stack.pop()
            n += 1
            stack.extend(tr.children(p).tolist())
        return n

    sizes = [subtree_size(p) for p in roots]
    assert sizes == [166, 3201, 166, 166]
    # 3 side threads x 165 ops = the 495 ET-only ops of the MANIFEST
    assert sum(s - 1 for s, t in zip(sizes, tr.tid[roots]) if t != 1) == 495
    assert [tr.name(c) for c in tr.children(roots[1])] == ["train_step_0", "train_step_1", "train_step_2"]


def test_param_dlrm_execution_graph_names_and_big_int_input() -> None:
    tr = et("param_dlrm_rank0_cuda_pair/et.json.gz")
    assert tr.name(0) == "[pytorch|profiler|execution_graph|process]"
    assert [int(tr.ids[p]) for p in tr.thread_roots()] == [2, 1113]
    node = tr.node(tr.pos_of_id(727))
    assert node.name == "record_param_comms" and node.rf_id == 513
    assert node.inputs[2].value == 94594108284448 and node.inputs[4].value == "all_to_allv"
    assert [a.value for a in node.inputs[5].value] == [768] * 8
    assert node.inputs[0].value.dtype == "float"


def test_rf_ids_match_the_file_for_every_node() -> None:
    """Column values equal a plain orjson read of the file (independent decode)."""
    name = "torch_cpu_pair/et.json.gz"
    tr = et(name)
    raw = orjson.loads(gzip.open(ET / name).read())
    by_id = {n["id"]: {a["name"]: a["value"] for a in n["attrs"]} for n in raw["nodes"]}
    ids = sorted(by_id)
    assert list(tr.ids) == ids
    assert list(tr.rf_id) == [by_id[i]["rf_id"] for i in ids]
    assert list(tr.seq_id) == [by_id[i]["seq_id"] for i in ids]
    assert int(np.count_nonzero(tr.rf_id)) == 3200  # every op but the process/thread roots


def test_is_execution_trace_by_content() -> None:
    obj = orjson.loads(gzip.open(ET / "hta_simple_add_cuda_pair/et.json.gz").read())
    assert is_execution_trace(obj)
    kineto = orjson.loads(gzip.open(ET / "hta_simple_add_cuda_pair/kineto.json.gz").read())
    assert not is_execution_trace(kineto)
    assert not is_execution_trace({"nodes": obj["nodes"]})  # no schema
    assert not is_execution_trace({"schema": "9.9", "nodes": [{"id": 1}]})  # no name
    assert is_execution_trace({"schema": "weird", "nodes": [{"id": 1, "name": "x"}]})
    assert not is_execution_trace(obj["nodes"])


def test_pos_of_id_and_positions() -> None:
    tr = et("hta_simple_add_cuda_pair/et.json.gz")
    assert tr.pos_of_id(8) == 5
    with pytest.raises(KeyError):
        tr.pos_of_id(6)  # ids 6 and 7 are not nodes in this file
    assert list(tr.positions_of_ids(np.array([1, 6, 8, 10**6]))) == [0, -1, 5, -1]


def test_file_bytes_argument_and_load_time() -> None:
    path = ET / "et_only/hf_gpt2_schema_1.1.0.json.gz"
    fb = read_trace_bytes(path)
    t0 = time.process_time()
    tr = load_et(path, file_bytes=fb)
    elapsed = time.process_time() - t0
    assert len(tr) == 27156
    assert elapsed < 5.0  # CPU s (other work on a shared machine does not count); ~0.2 s measured
