"""rocprofv3 files for the tests: the shared sample's path, and a small JSON document written
record by record in the layout ``rocprofv3 --output-format json`` writes (rocprofiler-sdk's
``generateJSON.cpp``, its cereal ``save`` functions), with the HIP API, roctx, RCCL, copy and
allocation records the shared sample lacks.  Its operation-name tables are the shared
sample's own ``strings.buffer_records`` (a record's ``kind`` and ``operation`` index them), so
the names are rocprofv3's.  The comments say what each record adds to the answers.
"""

from __future__ import annotations

import copy
import gzip
import json
from functools import lru_cache
from pathlib import Path

from shared_traces import SHARED

ROCPROF = SHARED / "rocprof"
SAMPLE = ROCPROF / "908_results.json.gz"
TOOL = "rocprofiler-sdk-tool"
MS = 1_000_000  #: ns


@lru_cache(maxsize=1)
def raw_sample() -> dict:
    """The shared sample, decoded by the standard library (never by tracetui)."""
    with gzip.open(SAMPLE, "rb") as fh:
        return json.loads(fh.read())


def op_ids() -> dict[str, tuple[int, int]]:
    """Operation name -> (kind, operation) in the sample's ``strings.buffer_records``."""
    out: dict[str, tuple[int, int]] = {}
    for kind, entry in enumerate(raw_sample()[TOOL][0]["strings"]["buffer_records"]):
        for op, name in enumerate(entry["operations"]):
            out.setdefault(f"{entry['kind']}:{name}", (kind, op))
    return out


def _op(domain: str, name: str) -> tuple[int, int]:
    return op_ids()[f"{domain}:{name}"]


CPU, GPU0, GPU1 = 10, 20, 21  #: agent handles
PID = 4242
MAIN, WORKER = 4242, 4300  #: thread ids


def _agent(handle: int, gpu_index: int | None) -> dict:
    if gpu_index is None:
        return {"size": 312, "id": {"handle": handle}, "type": 1, "cu_count": 64, "wave_front_size": 0,
                "name": "AMD EPYC 9654 96-Core Processor", "product_name": "AMD EPYC 9654 96-Core Processor",
                "node_id": 0, "logical_node_id": 0, "logical_node_type_id": 0, "gpu_index": -1, "mem_banks": []}
    return {"size": 312, "id": {"handle": handle}, "type": 2, "cu_count": 304, "wave_front_size": 64,
            "lds_size_in_kb": 64, "max_waves_per_cu": 32, "workgroup_max_size": 1024, "gfx_target_version": 90402,
            "name": "gfx942", "vendor_name": "AMD", "product_name": "AMD Instinct MI300X", "node_id": gpu_index + 1,
            "logical_node_id": gpu_index + 1, "logical_node_type_id": gpu_index, "gpu_index": gpu_index,
            "mem_banks": [{"heap_type": 1, "size_in_bytes": 206141652992}]}


def _corr(internal: int, external: int = 0) -> dict:
    return {"internal": internal, "external": external}


def _api(domain: str, name: str, corr: int, start: int, end: int, tid: int = MAIN) -> dict:
    kind, op = _op(domain, name)
    return {"size": 48, "kind": kind, "operation": op, "correlation_id": _corr(corr), "start_timestamp": start,
            "end_timestamp": end, "thread_id": tid}


def _kernel(kid: int, corr: int, start: int, end: int, queue: int, agent: int = GPU0, grid=(1024, 1, 1),
            wg=(256, 1, 1), lds: int = 0, scratch: int = 0, tid: int = MAIN) -> dict:
    kind, op = _op("KERNEL_DISPATCH", "KERNEL_DISPATCH_COMPLETE")
    return {"size": 184, "kind": kind, "operation": op, "thread_id": tid, "correlation_id": _corr(corr),
            "start_timestamp": start, "end_timestamp": end,
            "dispatch_info": {"size": 72, "agent_id": {"handle": agent}, "queue_id": {"handle": queue},
                              "kernel_id": kid, "dispatch_id": corr, "private_segment_size": scratch,
                              "group_segment_size": lds, "workgroup_size": dict(zip("xyz", wg)),
                              "grid_size": dict(zip("xyz", grid))},
            "stream_id": {"handle": 0}}


def _symbol(kid: int, name: str, sgpr: int, vgpr: int, agpr: int) -> dict:
    return {"size": 88, "kernel_id": kid, "code_object_id": 1, "kernel_name": f"_Z{len(name)}{name}v.kd",
            "kernel_object": 1000 + kid, "kernarg_segment_size": 8, "kernarg_segment_alignment": 16,
            "group_segment_size": 0, "private_segment_size": 0, "sgpr_count": sgpr, "arch_vgpr_count": vgpr,
            "accum_vgpr_count": agpr, "kernel_code_entry_byte_offset": 0, "kernel_address": {"handle": 0},
            "formatted_kernel_name": f"{name}()", "demangled_kernel_name": f"{name}() [clone .kd]",
            "truncated_kernel_name": name}


def document(hip: bool = True) -> dict:
    """A one-process rocprofv3 document on 2 MI300X GPUs (``hip=False``: no HIP/RCCL records).

    Thread MAIN: roctx range ``step`` (0-10 ms) holds ``forward`` (1-6 ms) holding
    hipLaunchKernel (corr 10) -> ``gemm`` on GPU 0 queue 1; hipMemcpyAsync (corr 11) -> an H2D
    copy to GPU 0; hipExtModuleLaunchKernel (corr 12) -> ``softmax`` (grid 1000 work-items,
    workgroup 256); ncclAllReduce (RCCL, 7-9 ms) holding hipExtLaunchKernel (corr 14) ->
    ``ncclDevKernel`` on GPU 1 queue 3; a roctxMarkA ``checkpoint``.  Thread WORKER:
    hipLaunchKernel (corr 15) -> ``gemm`` on GPU 0 queue 2.  A kernel with correlation 99 has
    no launch record."""
    base = 100 * MS
    t = lambda ms: base + int(ms * MS)  # noqa: E731
    sample = raw_sample()[TOOL][0]
    gemm, softmax, nccl = 1, 2, 3
    kd = [
        _kernel(gemm, 10, t(2.5), t(3.5), queue=1, grid=(4096, 1, 1), wg=(256, 1, 1), lds=16384),
        _kernel(softmax, 12, t(5.2), t(5.4), queue=1, grid=(1000, 1, 1), wg=(256, 1, 1)),
        _kernel(nccl, 14, t(7.5), t(8.5), queue=3, agent=GPU1, grid=(512, 1, 1), wg=(512, 1, 1), lds=37664,
                scratch=520),
        _kernel(gemm, 15, t(4.0), t(4.6), queue=2, grid=(2048, 2, 1), wg=(256, 1, 1), lds=16384, tid=WORKER),
        _kernel(softmax, 99, t(9.2), t(9.3), queue=1),  # no launch record: listed under its queue
    ]
    hip_api = [
        _api("HIP_RUNTIME_API", "hipLaunchKernel", 10, t(2.0), t(2.1)),
        _api("HIP_RUNTIME_API", "hipMemcpyAsync", 11, t(3.0), t(3.05)),
        _api("HIP_RUNTIME_API", "hipExtModuleLaunchKernel", 12, t(5.0), t(5.1)),
        _api("HIP_RUNTIME_API", "hipExtLaunchKernel", 14, t(7.2), t(7.3)),
        _api("HIP_RUNTIME_API", "hipLaunchKernel", 15, t(3.9), t(3.95), tid=WORKER),
    ]
    rccl = [_api("RCCL_API", "ncclAllReduce", 13, t(7.0), t(9.0))]
    markers = [_api("MARKER_CORE_API", "roctxRangePushA", 1, t(0.0), t(10.0)),
               _api("MARKER_CORE_API", "roctxRangePushA", 2, t(1.0), t(6.0)),
               _api("MARKER_CORE_API", "roctxMarkA", 3, t(9.5), t(9.5))]
    kind, op = _op("MEMORY_COPY", "MEMORY_COPY_HOST_TO_DEVICE")
    copies = [{"size": 64, "kind": kind, "operation": op, "thread_id": MAIN, "correlation_id": _corr(11),
               "start_timestamp": t(3.2), "end_timestamp": t(3.3), "dst_agent_id": {"handle": GPU0},
               "src_agent_id": {"handle": CPU}, "bytes": 1 << 20}]
    kind, op = _op("MEMORY_ALLOCATION", "MEMORY_ALLOCATION_ALLOCATE")
    allocs = [{"size": 64, "kind": kind, "operation": op, "thread_id": MAIN, "correlation_id": _corr(0),
               "start_timestamp": t(0.5), "end_timestamp": t(0.6), "agent_id": {"handle": GPU0},
               "address": "0x00007f0000000000", "allocation_size": 1 << 20}]
    strings = copy.deepcopy(sample["strings"])
    strings["marker_api"] = [{"key": 1, "value": "step"}, {"key": 2, "value": "forward"},
                             {"key": 3, "value": "checkpoint"}]
    proc = {
        "metadata": {"pid": PID, "init_time": base, "fini_time": t(20), "config": {"json_output": True},
                     "command": ["/usr/bin/python3", "train.py"], "node": {"hostname": "box"}},
        "agents": [_agent(CPU, None), _agent(GPU0, 0), _agent(GPU1, 1)],
        "counters": [], "strings": strings, "code_objects": [],
        "kernel_symbols": [_symbol(0, "", 0, 0, 0), _symbol(gemm, "gemm", 96, 128, 64),
                           _symbol(softmax, "softmax", 24, 32, 0), _symbol(nccl, "ncclDevKernel", 112, 92, 0)],
        "host_functions": [], "summary": [], "callback_records": {"counter_collection": []},
        "buffer_records": {"kernel_dispatch": kd, "hip_api": hip_api if hip else [], "hsa_api": [],
                           "marker_api": markers, "rccl_api": rccl if hip else [], "memory_copy": copies,
                           "memory_allocation": allocs, "scratch_memory": [], "rocdecode_api": [],
                           "rocjpeg_api": [], "pc_sample_host_trap": [{"size": 1}, {"size": 1}]},
    }
    return {TOOL: [proc]}


def write(path: Path, doc: dict | None = None, gz: bool = False) -> Path:
    data = json.dumps(doc if doc is not None else document(), indent=1).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


# ---- the CSV layout (rocprofiler-sdk's generateCSV.cpp: strings quoted, numbers not) ----------

KERNEL_COLUMNS = ["Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name",
                  "Correlation_Id", "Start_Timestamp", "End_Timestamp", "LDS_Block_Size", "Scratch_Size", "VGPR_Count",
                  "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z",
                  "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"]
API_COLUMNS = ["Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"]
COPY_COLUMNS = ["Kind", "Direction", "Stream_Id", "Source_Agent_Id", "Destination_Agent_Id", "Correlation_Id",
                "Start_Timestamp", "End_Timestamp"]
AGENT_COLUMNS = ["Node_Id", "Logical_Node_Id", "Agent_Type", "Cu_Count", "Wave_Front_Size", "Lds_Size_In_Kb",
                 "Max_Waves_Per_Cu", "Workgroup_Max_Size", "Gfx_Target_Version", "Name", "Vendor_Name", "Product_Name"]


def _csv(path: Path, columns: list[str], rows: list[list]) -> None:
    import csv

    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        w.writerow(columns)
        w.writerows(rows)


def write_csv(folder: Path, doc: dict | None = None, prefix: str = "4242_") -> Path:
    """The document's records as rocprofv3's CSV files in ``folder`` (agents named ``Agent <logical
    node id>``, its default); gives the kernel trace's path."""
    doc = doc if doc is not None else document()
    proc = doc[TOOL][0]
    ops = proc["strings"]["buffer_records"]
    agent = {a["id"]["handle"]: f"Agent {a['logical_node_id']}" for a in proc["agents"]}
    sym = {k["kernel_id"]: k for k in proc["kernel_symbols"]}
    br = proc["buffer_records"]
    pid = proc["metadata"]["pid"]
    lds_block = 512  # LDS_Block_Size: the symbol's group segment rounded up to the allocation block
    rows = []
    for d in br["kernel_dispatch"]:
        info, k = d["dispatch_info"], sym[d["dispatch_info"]["kernel_id"]]
        rows.append([ops[d["kind"]]["kind"], agent[info["agent_id"]["handle"]], info["queue_id"]["handle"], 0,
                     d["thread_id"], info["dispatch_id"], info["kernel_id"], k["formatted_kernel_name"],
                     d["correlation_id"]["internal"], d["start_timestamp"], d["end_timestamp"],
                     -(-k["group_segment_size"] // lds_block) * lds_block, info["private_segment_size"],
                     k["arch_vgpr_count"], k["accum_vgpr_count"], k["sgpr_count"],
                     *[info["workgroup_size"][c] for c in "xyz"], *[info["grid_size"][c] for c in "xyz"]])
    _csv(folder / f"{prefix}kernel_trace.csv", KERNEL_COLUMNS, rows)
    messages = {kv["key"]: kv["value"] for kv in proc["strings"]["marker_api"]}
    for what, name in (("hip_api", "hip_api_trace.csv"), ("rccl_api", "rccl_api_trace.csv"),
                       ("marker_api", "marker_api_trace.csv")):
        if br[what]:
            _csv(folder / f"{prefix}{name}", API_COLUMNS, [
                [ops[r["kind"]]["kind"], messages.get(r["correlation_id"]["internal"], "") if what == "marker_api"
                 else ops[r["kind"]]["operations"][r["operation"]], pid, r["thread_id"],
                 r["correlation_id"]["internal"], r["start_timestamp"], r["end_timestamp"]] for r in br[what]])
    _csv(folder / f"{prefix}memory_copy_trace.csv", COPY_COLUMNS, [
        [ops[r["kind"]]["kind"], ops[r["kind"]]["operations"][r["operation"]], 0, agent[r["src_agent_id"]["handle"]],
         agent[r["dst_agent_id"]["handle"]], r["correlation_id"]["internal"], r["start_timestamp"],
         r["end_timestamp"]] for r in br["memory_copy"]])
    _csv(folder / f"{prefix}agent_info.csv", AGENT_COLUMNS, [
        [a["node_id"], a["logical_node_id"], "GPU" if a["type"] == 2 else "CPU", a["cu_count"], a["wave_front_size"],
         a.get("lds_size_in_kb", 0), a.get("max_waves_per_cu", 0), a.get("workgroup_max_size", 0),
         a.get("gfx_target_version", 0), a["name"], "AMD" if a["type"] == 2 else "CPU", a["product_name"]]
        for a in proc["agents"]])
    _csv(folder / f"{prefix}memory_allocation_trace.csv", ["Kind", "Operation"], [])  # a kind not read: named
    return folder / f"{prefix}kernel_trace.csv"
