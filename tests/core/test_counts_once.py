"""Every total counts a time once (issue 23, item 2): a call nested in a call of the same
name (``aten::sum`` inside ``aten::sum``) adds nothing to its name's host or subtree GPU
time, in any table; a driver-call trace's records belong to the phase of the call they
were printed in.

The expected numbers are read from the raw files here (gzip + json): GPU events are joined to
their runtime call by ``correlation`` and to the ops whose span holds that call on its
thread, counted once per op name.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from functools import lru_cache

import numpy as np
import pytest
from driver_files import Bpf
from shared_traces import kineto_path, load_shared_kineto

from tracetui.analysis.driver import driver_summary
from tracetui.analysis.frames import cpu_ops_frame, gpu_work_events
from tracetui.analysis.roofline import roofline_table
from tracetui.analysis.summary import build_summary
from tracetui.analysis.tables import op_table
from tracetui.driver import load_driver
from tracetui.export.report import build_report
from tracetui.kineto import Kind
from tracetui.session import LinkedTrace

#: traces whose ops nest in same-name ops that hold GPU work (found by a scan of every shared trace)
NESTED = ["v100_old_flow_format_cudagraph.json.gz", "a100_cudagraph_nccl_rank0.json.gz"]
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


@lru_cache(maxsize=None)
def _raw_op_facts(name: str, op: str) -> tuple[float, int, int, float]:
    """From the raw file: (µs of the GPU events launched inside some ``op`` call, counted once;
    calls of ``op``; of those, calls inside another ``op`` call; summed host µs of the outer calls)."""
    with gzip.open(kineto_path(name)) as fh:
        events = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    runtime = {e["args"]["correlation"]: e for e in events
               if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    spans = defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op" and e["name"] == op:
            spans[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    gpu_us = 0.0
    for e in events:
        r = runtime.get(e.get("args", {}).get("correlation")) if e.get("cat") in GPU_CATS else None
        if r is not None and any(a <= r["ts"] and r["ts"] + r["dur"] <= b for a, b in spans[(r["pid"], r["tid"])]):
            gpu_us += e["dur"]
    calls = nested = 0
    outer_us = 0.0
    for lst in spans.values():
        open_until: list[float] = []
        for a, b in sorted(lst, key=lambda s: (s[0], -s[1])):
            while open_until and open_until[-1] <= a:
                open_until.pop()
            calls += 1
            if open_until:
                nested += 1
            else:
                outer_us += b - a
            open_until.append(b)
    return gpu_us, calls, nested, outer_us


@pytest.mark.slow
@pytest.mark.parametrize("name,op,gpu_us,calls,nested", [
    ("v100_old_flow_format_cudagraph.json.gz", "aten::sum", 6452.0, 474, 204),
    ("a100_cudagraph_nccl_rank0.json.gz", "aten::div", 192.0, 90, 45),
])
def test_ops_table_counts_a_nested_call_once(name, op, gpu_us, calls, nested):
    raw_gpu, raw_calls, raw_nested, raw_host = _raw_op_facts(name, op)
    assert (raw_gpu, raw_calls, raw_nested) == (gpu_us, calls, nested)
    kt = load_shared_kineto(name)
    row = op_table(cpu_ops_frame(kt)).set_index("name").loc[op]
    assert (row["count"], row["nested_calls"]) == (calls, nested)
    assert row["subtree_gpu_us"] == pytest.approx(gpu_us)  # before: 11,527 µs for aten::sum (5,075 twice)
    assert row["host_us"] == pytest.approx(raw_host)


def _once_per_name(kt) -> tuple[dict[str, float], dict[str, float]]:
    """Per op name: µs of the GPU events under its calls, each event once; and the union of
    its calls' host spans per thread (tracetui's tree, walked here event by event)."""
    gpu = gpu_work_events(kt)
    per_name: dict[str, float] = defaultdict(float)
    for g in gpu.tolist():
        node = int(kt.launch_of[g]) if kt.launch_of[g] >= 0 else int(kt.parent[g])
        seen = set()
        while 0 <= node < kt.n_events:
            if kt.kind[node] == int(Kind.CPU_OP):
                seen.add(kt.name(node))
            node = int(kt.parent[node])
        for nm in seen:
            per_name[nm] += float(kt.dur[g])
    host: dict[str, float] = defaultdict(float)
    ops = cpu_ops_frame(kt)
    for (nm, _lane), sub in ops.groupby(["name", "lane"]):
        end = -np.inf
        for a, b in sorted(zip(sub["ts"], sub["end"])):
            host[nm] += max(0.0, b - max(a, end))
            end = max(end, b)
    return per_name, host


@pytest.mark.slow
@pytest.mark.parametrize("name", NESTED)
def test_no_table_adds_a_same_name_ancestors_time_to_its_descendants(name):
    kt = load_shared_kineto(name)
    gpu_once, host_once = _once_per_name(kt)
    ops = cpu_ops_frame(kt)
    summary = build_summary(LinkedTrace(kt), top=10_000)
    report = build_report(LinkedTrace(kt), None)
    tables = {
        "op_table": op_table(ops),
        "op_table by shapes": op_table(ops, by_shapes=True),
        "op_table by shapes, GPU ops": op_table(ops, by_shapes=True, only_gpu=True),
        "summary ops": _frame(summary["ops"]),
        "summary ops_by_shape": _frame(summary["ops_by_shape"]),
        "export ops by name": report.op_summary,
    }
    for label, t in tables.items():
        per = t.groupby("name")[["subtree_gpu_us", "host_us"]].sum()
        for nm, r in per.iterrows():
            assert r["subtree_gpu_us"] <= gpu_once.get(nm, 0.0) + 1e-6, (label, nm)
            assert r["host_us"] <= host_once[nm] + 1e-6, (label, nm)
    by_name = op_table(ops).set_index("name")
    for nm, us in gpu_once.items():  # the by-name table holds exactly the once-counted time
        assert by_name.loc[nm, "subtree_gpu_us"] == pytest.approx(us), nm
    roof = roofline_table(kt)
    for nm, ms in roof.groupby("name")["gpu_ms"].sum().items():
        assert ms * 1e3 <= gpu_once.get(nm, 0.0) + 1e-6, ("roofline", nm)


def _frame(records):
    import pandas as pd

    return pd.DataFrame(records)


def test_driver_records_belong_to_the_phase_of_their_call(tmp_path):
    """Two host-to-device copies during weight loading; the first one's transfer record says
    it lasted 0.8 ms, so its start (printed time minus length, 1.89 ms) lies before the first
    allocation (2.0 ms).  Both belong to weight loading, where their calls are."""
    f = Bpf()
    f.call(0.0, 1.0, "cuInit")
    f.call(1.2, 1.7, "cuCtxCreate_v2")
    f.call(2.0, 2.1, "cuMemAlloc_v2")  # weight loading starts here
    f.ev(ts=2.101, tid=100, type="memory", op="alloc", size=8 << 20, total_allocated=8 << 20)
    f.call(2.15, 2.7, "cuMemcpyHtoD_v2", inside=lambda: f.ev(ts=2.69, tid=100, type="transfer", direction="H2D",
                                                            size=5_898_240, duration_ms=0.8, bandwidth_gbps=7.4))
    f.call(2.8, 3.0, "cuMemcpyHtoD_v2", inside=lambda: f.ev(ts=2.99, tid=100, type="transfer", direction="H2D",
                                                           size=5_898_240, duration_ms=0.19, bandwidth_gbps=31.0))
    f.launch(3.5, 2)
    f.call(3.6, 3.9, "cuStreamSynchronize")
    kt = load_driver(str(f.write(tmp_path / "trace_weights.jsonl")))
    phases = {p["name"]: p for p in driver_summary(kt)["phases"]}
    assert phases["initialisation"]["transfers"] == 0  # before: 1 (5,898,240 B)
    assert (phases["weight loading"]["transfers"], phases["weight loading"]["transfers_bytes"]) == (2, 11_796_480)
    assert phases["weight loading"]["allocations"] == 1
