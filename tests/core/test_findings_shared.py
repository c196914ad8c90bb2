"""Findings on the shared traces: each rule's counts and times against an oracle that reads
the raw file with gzip + json (tests/core/raw_kineto.py), never tracetui's own numbers."""

from __future__ import annotations

import collections
import re
from statistics import median

import pytest
from raw_kineto import (
    Threads,
    busy_runs,
    calls,
    complete_events,
    corr,
    covered,
    drain_gap,
    end,
    gpu_work,
    launched_devices,
    length,
    sync_calls,
    synced_scalar_ops,
    union,
)
from shared_traces import ET_DIR, kineto_path, load_shared_kineto, load_shared_pair

from tracetui.findings.engine import check_findings
from tracetui.findings.spec import default_specs, parse_overrides
from tracetui.session import LinkedTrace

DLRM = ET_DIR / "param_dlrm_rank0_cuda_pair" / "kineto.json.gz"


def findings(trace, rule: str, **overrides):
    """The findings of ``rule`` on ``trace`` (a shared file name or a loaded trace)."""
    kt = load_shared_kineto(trace) if isinstance(trace, str) else trace
    cfg = parse_overrides({rule: overrides} if overrides else {}, "test", default_specs())
    return check_findings(LinkedTrace(kt), cfg, only=[rule])


def one(trace, rule: str, **overrides):
    got = findings(trace, rule, **overrides)
    assert len(got) == 1, got
    return got[0]


@pytest.fixture(scope="module")
def dlrm():
    from tracetui.kineto import load_kineto

    return load_kineto(DLRM)


def _evidence_facts(kt, f) -> collections.Counter:
    return collections.Counter((kt.name(int(e)), round(float(kt.dur[e]), 3)) for e in f.evidence)


def _raw_facts(events) -> collections.Counter:
    return collections.Counter((e["name"], round(float(e["dur"]), 3)) for e in events)


# ---- pageable_copy -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, by_direction", [
    ("a100_cudagraph_nccl_rank0.json.gz", {"HtoD": 45, "DtoH": 30}),
    pytest.param("v100_old_flow_format_cudagraph.json.gz", {"DtoH": 60}, marks=pytest.mark.slow),
    ("b200x8_eager.json.gz", {"HtoD": 2}),
])
def test_pageable_copies_by_direction(name, by_direction):
    raw = [g for g in gpu_work(kineto_path(name)) if g["cat"] == "gpu_memcpy" and "Pageable" in g["name"]]
    raw_dirs = collections.Counter(re.search(r"(HtoD|DtoH)", g["name"]).group(1) for g in raw)
    assert raw_dirs == by_direction  # the fact, read from the file
    f = one(name, "pageable_copy", min_time_us=0.0)
    got_dirs = collections.Counter()
    for row in f.details:
        got_dirs[row["direction"]] += row["count"]
    assert got_dirs == raw_dirs
    assert f.count == len(raw)
    assert f.value == pytest.approx(sum(g["args"]["bytes"] for g in raw))
    assert f.time_at_stake_us == pytest.approx(sum(g["dur"] for g in raw))
    kt = load_shared_kineto(name)
    assert _evidence_facts(kt, f) == _raw_facts(raw)


def _issuing_op(path, copy: dict) -> str:
    """The outermost cpu_op around the copy's launch call (the innermost one under an
    autograd engine wrapper), by containment on the launching thread."""
    launch = next(c for c in calls(path) if corr(c) == corr(copy))
    ops = [o for o in complete_events(path) if o.get("cat") == "cpu_op" and (o["pid"], o["tid"]) ==
           (launch["pid"], launch["tid"]) and o["ts"] <= launch["ts"] and end(launch) <= end(o)]
    ops.sort(key=lambda o: (float(o["ts"]), -float(o["dur"])))
    if ops[0]["name"].startswith("autograd::engine::evaluate_function"):
        return ops[-1]["name"]
    return ops[0]["name"]


def test_pageable_copy_threshold_ops_and_et_shapes():
    # b200's two copies take 3.8 µs of GPU time: under the default 10 µs, no finding
    assert findings("b200x8_eager.json.gz", "pageable_copy") == []
    linked = load_shared_pair("param_dlrm_rank0_cuda_pair")
    cfg = parse_overrides({"pageable_copy": {"min_time_us": 0.0}}, "test", default_specs())
    f, = check_findings(linked, cfg, only=["pageable_copy"])
    raw = [g for g in gpu_work(DLRM) if "Pageable" in g["name"]]
    assert f.count == len(raw) == 10
    want = collections.Counter((re.search(r"HtoD|DtoH", g["name"]).group(0), _issuing_op(DLRM, g)) for g in raw)
    assert {(r["direction"], r["op"]): r["count"] for r in f.details} == dict(want)
    # shapes from the ET node linked to the op (aten::index of a [16, 27, 27] tensor)
    assert {r["op"]: r["example_shape"] for r in f.details}["aten::index"] == "[16, 27, 27]"


# ---- scalar_sync, blocking_sync ----------------------------------------------------------------

@pytest.mark.parametrize("name, items, copies, blocking", [
    pytest.param("v100_old_flow_format_cudagraph.json.gz", 24, 36, 1, marks=pytest.mark.slow),
    ("a100_cudagraph_nccl_rank0.json.gz", 0, 30, 46),
    ("h100_bert_inference.json.gz", 0, 0, 2),
])
def test_scalar_and_blocking_syncs_match_the_raw_file(name, items, copies, blocking):
    path = kineto_path(name)
    raw_ops = synced_scalar_ops(path)
    names = collections.Counter(o["name"] for o in raw_ops)
    assert names["aten::item"] == items and names["aten::to"] == copies
    kt = load_shared_kineto(name)
    got = findings(name, "scalar_sync", min_idle_us=0.0)
    assert collections.Counter(kt.name(int(e)) for e in (got[0].evidence if got else [])) == names
    # every aten::item of a100 reads a CPU tensor: none synchronised
    if name.startswith("a100"):
        assert sum(1 for e in complete_events(path) if e.get("name") == "aten::item") == 945
    outside = [s for s in sync_calls(path)
               if not any((o["pid"], o["tid"]) == (s["pid"], s["tid"]) and o["ts"] <= s["ts"] and end(s) <= end(o)
                          for o in raw_ops)]
    assert len(outside) == blocking
    b = one(name, "blocking_sync", min_idle_us=0.0)
    assert b.count == blocking
    assert _evidence_facts(kt, b) == _raw_facts(outside)
    assert b.value == pytest.approx(sum(s["dur"] for s in outside))


def test_gpu_idle_after_each_sync_is_the_drain_gap():
    name = "h100_bert_inference.json.gz"  # one GPU: every thread's GPU is device 0
    path = kineto_path(name)
    runs = busy_runs(path, {g["pid"] for g in gpu_work(path)})
    kt = load_shared_kineto(name)
    for rule, raw in (("blocking_sync", sync_calls(path)), ("scalar_sync", synced_scalar_ops(path))):
        f = one(name, rule, min_idle_us=0.0)
        gaps = {round(float(e["ts"]), 3): drain_gap(runs, e) for e in raw}
        got = {round(kt.origin_us + float(kt.ts[e]), 3): float(v) for e, v in zip(f.evidence, f.evidence_us)}
        assert got == pytest.approx({k: (gaps[k][1] - gaps[k][0]) if gaps[k] else 0.0 for k in got})
        assert f.time_at_stake_us == pytest.approx(length(union(g for k, g in gaps.items() if g and k in got)))
    assert one(name, "scalar_sync").time_at_stake_us > 100  # the is_nonzero: 154 µs of GPU idle


# ---- input_stall ------------------------------------------------------------------------------

@pytest.mark.parametrize("trace, spans", [("v100_old_flow_format_cudagraph.json.gz", 6), (DLRM, 1)])
def test_gpu_idle_inside_dataloader_spans(trace, spans, dlrm):
    path = trace if not isinstance(trace, str) else kineto_path(trace)
    raw = [e for e in complete_events(path) if e.get("cat") in ("user_annotation", "python_function")
           and re.search(r"DataLoader|torch/utils/data/dataloader\.py", e["name"])]
    assert len(raw) == spans
    by_dev: dict[frozenset, list] = {}
    for s in raw:
        by_dev.setdefault(frozenset(launched_devices(path, s) or {g["pid"] for g in gpu_work(path)}), []).append(s)
    idle = 0.0
    for devs, ss in by_dev.items():
        runs = busy_runs(path, set(devs))
        idle += sum((b - a) - covered(runs, a, b) for a, b in union((float(s["ts"]), end(s)) for s in ss))
    f = one(dlrm if trace == DLRM else trace, "input_stall", min_idle_us=0.0)
    assert f.count == spans
    assert f.value == pytest.approx(idle) and f.time_at_stake_us == pytest.approx(idle)
    assert idle > 100.0


# ---- recompute --------------------------------------------------------------------------------

def test_recomputed_ops_are_the_ops_under_recompute_fn():
    name = "mi300_resnet_train_checkpointing.json.gz"
    path = kineto_path(name)
    evs = complete_events(path)
    host = Threads([e for e in evs if e.get("cat") in ("cpu_op", "cuda_runtime", "cuda_driver")])
    frames = [e for e in evs if e.get("cat") == "python_function" and e["name"].endswith(": recompute_fn")]
    assert len(frames) == 12
    ops = [o for fr in frames for o in host.inside(fr) if o.get("cat") == "cpu_op"]
    op_threads = Threads(ops)
    nested = {id(i) for o in ops for i in op_threads.inside(o)}
    outer = [o for o in ops if id(o) not in nested]
    assert len(outer) == 267
    f = one(name, "recompute")
    kt = load_shared_kineto(name)
    assert f.count == 267
    assert collections.Counter(kt.name(int(e)) for e in f.evidence) == collections.Counter(o["name"] for o in outer)
    # their GPU cost: the GPU work launched by the calls inside them (by correlation)
    mine = {corr(c) for o in outer for c in host.inside(o) if c.get("cat") != "cpu_op"}
    gpu_us = sum(g["dur"] for g in gpu_work(path) if corr(g) in mine)
    assert f.value == pytest.approx(gpu_us)
    for other in ("v100_ns_timestamps_fwdbwd.json.gz", "a100_cudagraph_nccl_rank0.json.gz",
                  "mi250_minitoy_train.json.gz"):
        assert findings(other, "recompute", min_gpu_us=0.0) == []  # training without checkpointing


# ---- exposed_comm -----------------------------------------------------------------------------

def test_exposed_communication_per_collective(dlrm):
    gpu = gpu_work(DLRM)
    comm = [g for g in gpu if g["name"].startswith("nccl")]
    comp = union((float(g["ts"]), end(g)) for g in gpu if not g["name"].startswith("nccl") and g["cat"] != "gpu_memcpy")
    want = {}
    for label, word in (("all_reduce", "AllReduce"), ("send_recv", "SendRecv")):
        mine = union((float(g["ts"]), end(g)) for g in comm if f"_{word}_" in g["name"])
        want[label] = length(union(mine + comp)) - length(comp)
    got = {f.check: f for f in findings(dlrm, "exposed_comm")}
    assert set(got) == set(want)
    for label, us in want.items():
        assert got[label].time_at_stake_us == pytest.approx(us)
        assert got[label].count == sum(1 for g in comm if label.replace("_", "").lower() in g["name"].lower())


# ---- slow_step --------------------------------------------------------------------------------

@pytest.mark.slow
def test_slow_steps_against_the_median():
    name = "v100_old_flow_format_cudagraph.json.gz"
    steps = [e for e in complete_events(kineto_path(name)) if e.get("cat") == "user_annotation"
             and re.match(r"ProfilerStep#\d+$", e["name"])]
    assert len(steps) == 6
    med = median(float(s["dur"]) for s in steps)
    slow = [s for s in steps if s["dur"] > 1.3 * med and s["dur"] - med >= 1000.0]
    f = one(name, "slow_step")
    kt = load_shared_kineto(name)
    assert sorted(kt.name(int(e)) for e in f.evidence) == sorted(s["name"] for s in slow)
    assert f.time_at_stake_us == pytest.approx(sum(s["dur"] - med for s in slow))
    assert f.details[0]["what_differs"]


# ---- trace_health -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, overlaps", [
    ("b200x8_eager.json.gz", 72), ("v100_old_flow_format_cudagraph.json.gz", 31),
    ("a100_cudagraph_nccl_rank0.json.gz", 1),
])
def test_gpu_events_overlapping_on_one_stream(name, overlaps):
    n = 0
    by_stream: dict[tuple, list] = {}
    for g in gpu_work(kineto_path(name)):
        by_stream.setdefault((g["pid"], g["tid"]), []).append(g)
    for evs in by_stream.values():
        evs.sort(key=lambda g: float(g["ts"]))
        last = None
        for g in evs:
            if last is not None and last - float(g["ts"]) > 0.5:
                n += 1
            last = end(g) if last is None else max(last, end(g))
    assert n == overlaps
    got = {f.check: f for f in findings(name, "trace_health")}
    assert got["stream_overlap"].count == overlaps


@pytest.mark.parametrize("name, unlinked", [("h100_qwen_chat_inference.json.gz", 509),
                                            ("a100_cudagraph_nccl_rank0.json.gz", 872)])
def test_gpu_work_without_launch(name, unlinked):
    path = kineto_path(name)
    launched = {corr(c) for c in calls(path)}
    raw = [g for g in gpu_work(path) if corr(g) not in launched]
    assert len(raw) == unlinked
    f = {f.check: f for f in findings(name, "trace_health")}["unlinked_gpu"]
    assert f.count == unlinked
    assert _evidence_facts(load_shared_kineto(name), f) == _raw_facts(raw)
