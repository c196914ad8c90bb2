"""The allocation model, the peaks and their owners (docs/memory.md), checked against facts
read from the raw ``[memory]`` events with gzip + json, independently of tracetui."""

from __future__ import annotations

import gzip
import json

import orjson
import pytest
from shared_traces import ET_DIR, kineto_path, load_shared_kineto

from tracetui.analysis.memory import memory_model
from tracetui.analysis.memory_doc import memory_document
from tracetui.analysis.memory_peak import node_memory
from tracetui.cli import main
from tracetui.session import LinkedTrace, load_pair

MEMORY_TRACES = ("h100_bert_inference.json.gz", "h100_qwen_chat_inference.json.gz", "v100x2_nccl_216k.json.gz")
#: (Device Type, Device Id) -> the name tracetui gives the device (docs/memory.md)
NAMES = {(1, 0): "cuda:0", (1, 1): "cuda:1", (0, -1): "cpu"}


def _raw_facts(events: list[dict]) -> dict[tuple[int, int], dict]:
    """Per (Device Type, Device Id), from the raw [memory] events alone: counts, the peak of
    Total Allocated (first event reaching it, events by time then file order), and at that
    event the bytes of blocks allocated in the trace and still live (address walk) and the
    bytes allocated before the trace still live (first Total Allocated - its Bytes, minus
    the frees of blocks never allocated in the trace)."""
    per: dict[tuple[int, int], list] = {}
    for i, e in enumerate(events):
        if e.get("name") == "[memory]":
            a = e["args"]
            per.setdefault((a["Device Type"], a["Device Id"]), []).append((float(e["ts"]), i, a))
    out = {}
    for dev, rows in per.items():
        rows.sort(key=lambda r: (r[0], r[1]))
        totals = [r[2]["Total Allocated"] for r in rows]
        peak = max(totals)
        k = totals.index(peak)
        baseline = rows[0][2]["Total Allocated"] - rows[0][2]["Bytes"]
        live: dict[int, int] = {}
        before_freed = 0
        for _ts, _, a in rows[: k + 1]:
            if a["Bytes"] > 0:
                live[a["Addr"]] = a["Bytes"]
            elif a["Addr"] in live:
                del live[a["Addr"]]
            else:
                before_freed += -a["Bytes"]
        out[dev] = {"allocations": sum(r[2]["Bytes"] > 0 for r in rows), "frees": sum(r[2]["Bytes"] < 0 for r in rows),
                    "peak": peak, "peak_ts": rows[k][0], "live": sum(live.values()),
                    "before": baseline - before_freed, "reserved": max(r[2]["Total Reserved"] for r in rows)}
    return out


def _raw_events(path) -> list[dict]:
    return json.loads(gzip.open(path).read())["traceEvents"]


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n.startswith("v100x2") else n
                                  for n in MEMORY_TRACES])
def test_peaks_match_the_raw_events(name):
    raw = _raw_facts(_raw_events(kineto_path(name)))
    kt = load_shared_kineto(name)
    doc = memory_document(LinkedTrace(kt))
    got = {d["device"]: d for d in doc["devices"]}
    assert set(got) == {NAMES[k] for k in raw}
    for key, facts in raw.items():
        d = got[NAMES[key]]
        assert (d["device_type"], d["device_id"]) == key
        assert d["allocations"] == facts["allocations"] and d["frees"] == facts["frees"]
        assert d["peak_allocated_bytes"] == facts["peak"]
        assert doc["origin_us"] + d["peak_ts_us"] == pytest.approx(facts["peak_ts"], abs=1e-3)
        assert d["live_at_peak_bytes"] == facts["live"]
        assert d["before_trace_bytes"] == facts["before"]
        # the two parts, computed apart, add up to the trace's own Total Allocated at the peak
        assert d["live_at_peak_bytes"] + d["before_trace_bytes"] == facts["peak"]
        assert d["peak_reserved_bytes"] == (facts["reserved"] or None)
        assert sum(o["bytes"] for o in d["owners_at_peak"]) <= d["live_at_peak_bytes"]


def test_known_numbers_of_the_shared_traces():
    """Spot values (read once from the raw files with the walk above) so a regression in the
    walk itself cannot hide: qwen's GPU peak and the 216k trace's device 1."""
    qwen = {d["device"]: d for d in memory_document(LinkedTrace(load_shared_kineto(MEMORY_TRACES[1])))["devices"]}
    assert qwen["cuda:0"]["peak_allocated_bytes"] == 2_088_508_416
    assert qwen["cuda:0"]["before_trace_bytes"] == 984_742_400
    assert qwen["cuda:0"]["allocations"] == 1_125 and qwen["cpu"]["allocations"] == 100
    nccl = {d["device"]: d for d in memory_document(LinkedTrace(load_shared_kineto(MEMORY_TRACES[2])))["devices"]}
    assert nccl["cuda:1"]["peak_allocated_bytes"] == 6_629_508_096
    assert nccl["cuda:1"]["before_trace_bytes"] == 4_096_614_400
    assert nccl["cuda:1"]["allocations"] == 13_385 and nccl["cuda:1"]["frees"] == 13_385
    assert nccl["cuda:1"]["peak_reserved_bytes"] == 12_782_141_440


def test_owner_of_the_bert_peak():
    """BERT's GPU peak: the largest live block is the 8,607,232-byte output of an aten::addmm
    called by aten::linear with Input Dims [[30522], [141, 512], [512, 30522], [], []]."""
    kt = load_shared_kineto(MEMORY_TRACES[0])
    d = memory_document(LinkedTrace(kt))["devices"][0]
    top = d["owners_at_peak"][0]
    assert (top["op"], top["bytes"], top["count"]) == ("aten::addmm", 8_607_232, 1)
    assert top["callers"][0]["op"] == "aten::linear"
    assert top["shapes"][0]["shapes"] == "[[30522], [141, 512], [512, 30522], [], []]"
    op = top["largest"][0]["op_event"]
    assert kt.name(op) == "aten::addmm"
    lo, hi = kt.node_span(op)
    assert lo <= top["largest"][0]["ts_us"] <= hi


# ---------------------------------------------------------------- a hand-made trace
def _ev(name, ts, dur, cat="cpu_op", tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": {}}


def _mem(ts, addr, nbytes, total, reserved=4096, dtype=1, did=0, tid=1):
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": tid, "ts": ts,
            "args": {"Addr": addr, "Bytes": nbytes, "Device Type": dtype, "Device Id": did,
                     "Total Allocated": total, "Total Reserved": reserved}}


def _small_trace(tmp_path, extra=()):
    """1000 bytes allocated before the trace (one 100-byte block of it freed at 5 µs);
    aten::linear (10-50 µs) holds aten::empty (12-14) and aten::mm (20-30)."""
    ev = [_ev("ProfilerStep#1", 1000.0, 100.0, cat="user_annotation"), _ev("aten::linear", 1010.0, 40.0),
          _ev("aten::empty", 1012.0, 2.0), _ev("aten::mm", 1020.0, 10.0), _ev("aten::add", 1060.0, 10.0),
          _mem(1005.0, 0xA00, -100, 900),       # a block from before the trace freed
          _mem(1013.0, 0xB00, 200, 1100),       # in aten::empty, freed in aten::linear
          _mem(1025.0, 0xC00, 300, 1400),       # in aten::mm: the peak, never freed
          _mem(1022.0, 0xE00, 8, 8, 0, 0, -1),  # CPU, in aten::mm, freed outside any op
          _mem(1040.0, 0xB00, -200, 1200),
          _mem(1065.0, 0xD00, 50, 1250),        # in aten::add, never freed
          _mem(1090.0, 0xE00, -8, 0, 0, 0, -1), *extra]
    p = tmp_path / "memory.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return p


def test_hand_made_trace_counts_apart_and_owners(tmp_path, capsys):
    assert main(["memory", str(_small_trace(tmp_path)), "--json", "--no-cache"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    gpu, cpu = doc["devices"]
    assert (gpu["device"], cpu["device"]) == ("cuda:0", "cpu")
    assert gpu["peak_allocated_bytes"] == 1400 and doc["origin_us"] + gpu["peak_ts_us"] == 1025.0
    assert gpu["live_at_peak_bytes"] == 500 and gpu["before_trace_bytes"] == 900
    assert gpu["frees_before_trace"] == {"count": 1, "bytes": 100}
    assert gpu["never_freed"] == {"count": 2, "bytes": 350}
    assert (gpu["start_allocated_bytes"], gpu["end_allocated_bytes"]) == (1000, 1250)
    assert [(o["op"], o["bytes"], o["count"]) for o in gpu["owners_at_peak"]] == [("aten::mm", 300, 1),
                                                                                   ("aten::empty", 200, 1)]
    assert gpu["owners_at_peak"][1]["callers"] == [{"op": "aten::linear", "bytes": 200, "count": 1}]
    assert gpu["by_step"][0]["step"] == "ProfilerStep#1" and gpu["by_step"][0]["allocations"] == 3
    assert cpu["peak_reserved_bytes"] is None  # the CPU allocator reserves nothing
    assert doc["irregular"] == {"reallocated_live": 0, "unmatched_frees": 0, "size_mismatches": 0}


def test_node_memory_net_and_transient(tmp_path):
    from tracetui.kineto import load_kineto

    kt = load_kineto(_small_trace(tmp_path))
    linear = next(i for i in range(kt.n_events) if kt.name(i) == "aten::linear")
    (gpu, cpu) = node_memory(kt, linear)
    assert (gpu.device, gpu.allocations, gpu.allocated_bytes, gpu.frees, gpu.freed_bytes) == ("cuda:0", 2, 500, 1, 200)
    assert gpu.net_bytes == 300 and (gpu.transient, gpu.transient_bytes) == (1, 200)
    assert (cpu.allocations, cpu.frees, cpu.transient) == (1, 0, 0)  # freed at 90 µs, outside aten::linear
    empty = next(i for i in range(kt.n_events) if kt.name(i) == "aten::empty")
    assert [(n.allocated_bytes, n.freed_bytes, n.transient) for n in node_memory(kt, empty)] == [(200, 0, 0)]


def test_irregular_sequences_are_counted(tmp_path):
    from tracetui.kineto import load_kineto

    extra = (_mem(1080.0, 0xD00, 50, 1300),    # D allocated again while live: its free was not recorded
             _mem(1085.0, 0xA00, -100, 1200),  # A freed a second time
             _mem(1086.0, 0xF00, 0, 1200))     # 0 bytes: ignored
    m = memory_model(load_kineto(_small_trace(tmp_path, extra)))
    assert (m.reallocated_live, m.unmatched_frees, m.size_mismatches) == (1, 1, 0)
    assert int(m.before_trace.sum()) == 1


def test_memory_text_fits_80_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["memory", str(kineto_path(MEMORY_TRACES[1])), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    flat = " ".join(out.split())  # the sentences wrap at 80 columns
    assert "cuda:0: peak 2,088,508,416 B (2.1 GB) allocated at 46.588 ms" in flat
    assert "+ 984,742,400 B (984.7 MB) allocated before it" in flat
    assert "Owners at the peak (cuda:0)" in out and "aten::addmm" in out


def test_summary_has_the_memory_table(capsys):
    assert main(["summary", str(kineto_path(MEMORY_TRACES[0])), "--json", "--no-cache"]) == 0
    mem = orjson.loads(capsys.readouterr().out)["memory"]
    gpu = mem["devices"][0]
    assert gpu["device"] == "cuda:0" and gpu["peak_allocated_bytes"] == 101_305_344
    assert gpu["owners_at_peak"][0]["op"] == "aten::addmm"
    assert main(["summary", str(kineto_path(MEMORY_TRACES[0])), "--no-cache"]) == 0
    assert "Memory ([memory] events" in capsys.readouterr().out


def test_summary_without_memory_events_has_no_memory_key(capsys):
    assert main(["summary", str(kineto_path("a100_triton.json.gz")), "--json", "--no-cache"]) == 0
    assert "memory" not in orjson.loads(capsys.readouterr().out)


def test_subtree_export_lists_its_allocations(tmp_path):
    from tracetui.export import export_bytes
    from tracetui.kineto import load_kineto

    kt = load_kineto(_small_trace(tmp_path))
    linear = next(i for i in range(kt.n_events) if kt.name(i) == "aten::linear")
    doc = orjson.loads(export_bytes(LinkedTrace(kt), linear, "json"))
    mem = doc["memory"]
    assert [(a["op"], a["bytes"], a["freed_by"]) for a in mem["allocations"]] == [
        ("aten::empty", 200, "aten::linear"), ("aten::mm", 8, "ProfilerStep#1"), ("aten::mm", 300, None)]
    assert mem["devices"][0]["net_bytes"] == 300 and mem["outside_frees"] == []
    md = export_bytes(LinkedTrace(kt), linear, "md").decode()
    assert "## Memory: allocations" in md and "net 300 B" in md


def test_et_node_and_shapes_of_an_owner(tmp_path):
    """torch_cpu_pair has no [memory] events: one 1 MiB block is added inside its aten::view
    with Record function id 8 (Input Dims removed), and the owner names the ET node with
    rf_id 8 (read from the raw ET) and that node's input shapes."""
    folder = ET_DIR / "torch_cpu_pair"
    doc = json.loads(gzip.open(folder / "kineto.json.gz").read())
    ev = doc["traceEvents"]
    op = next(e for e in ev if e.get("cat") == "cpu_op" and e["args"].get("Record function id") == 8)
    assert op["name"] == "aten::view"
    del op["args"]["Input Dims"]
    mid = op["ts"] + op["dur"] / 2
    assert not [e for e in ev if e is not op and e.get("tid") == op["tid"] and e.get("ph") == "X"
                and op["ts"] < e["ts"] <= mid]  # no event nested in it before the block
    ev.append(_mem(mid, 0x100, 1 << 20, 1 << 20, tid=op["tid"]) | {"pid": op["pid"]})
    p = tmp_path / "kineto_mem.json"
    p.write_text(json.dumps(doc))
    et = json.loads(gzip.open(folder / "et.json.gz").read())
    node = next(n for n in et["nodes"] if any(a["name"] == "rf_id" and a["value"] == 8 for a in n.get("attrs", [])))
    got = memory_document(load_pair(folder / "et.json.gz", p))["devices"][0]["owners_at_peak"][0]
    assert got["op"] == "aten::view" and got["largest"][0]["et_node"] == node["id"]
    assert got["shapes"][0]["shapes"] == str(node["inputs"]["shapes"])


def test_timeline_helpers_for_the_track(tmp_path):
    """What a memory track draws: the step function of allocated bytes and its maximum per bin
    (the hand-made trace starts at 1000 µs; the value held before its first event is 1000 B)."""
    from tracetui.analysis.memory import allocated_at, binned_max, timeline
    from tracetui.kineto import load_kineto

    kt = load_kineto(_small_trace(tmp_path))
    m = memory_model(kt)
    gpu = m.device("cuda:0")
    ts, alloc, reserved = timeline(m, gpu)
    assert ts.tolist() == [5.0, 13.0, 25.0, 40.0, 65.0] and alloc.tolist() == [900, 1100, 1400, 1200, 1250]
    assert (reserved == 4096).all()
    assert [allocated_at(m, gpu, t) for t in (0.0, 5.0, 24.9, 25.0, 99.0)] == [1000, 900, 1100, 1400, 1250]
    assert binned_max(ts, alloc, gpu.baseline, 0.0, 100.0, 4).tolist() == [1100, 1400, 1250, 1250]


def test_memory_of_an_execution_trace_alone_is_one_line(capsys):
    et = str(ET_DIR / "torch_cpu_pair" / "et.json.gz")
    assert main(["memory", et, "--no-cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"tracetui: {et}: `memory` needs a Kineto trace (this is an Execution Trace only)"


def test_a_trace_without_memory_events_says_how_to_record_them(capsys):
    assert main(["memory", str(kineto_path("a100_triton.json.gz")), "--no-cache"]) == 0
    assert "profile_memory=True" in capsys.readouterr().out
    assert main(["memory", str(kineto_path("a100_triton.json.gz")), "--json", "--no-cache"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc["devices"] == [] and doc["memory_events"] == 0
