"""The two real CUDA memory snapshots recorded on an NVIDIA H200 (sample_traces/h200, torch
2.11): tracetui's numbers equal those counted by the test's own code from the files read with
``tests/snapshot_unpickle.py`` (a pickletools walk that builds plain data only), and beside the
Kineto trace of the same run the clocks are linked by the profiler's annotations, measured here
from the raw JSON (gzip + json), and each allocation leads to the op open then."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import numpy as np
import orjson
import pytest
from memsnap_count import count, origin
from shared_traces import SAMPLES
from snapshot_unpickle import read_snapshot

from tracetui.analysis.memsnap import op_at
from tracetui.cli import main
from tracetui.link.memsnap_kineto import link_clocks
from tracetui.session import open_traces

H200 = SAMPLES / "h200"
MEM = H200 / "cuda_transformer_mem_snapshot.pickle"
OOM = H200 / "cuda_oom_snapshot.pickle"
#: C++ and Python frames (stacks="all"), written with protocol 5 (scripts/gpu_box/memsnap_all_stacks.py)
ALLSTACKS = H200 / "cuda_allstacks_p5.pickle"
KINETO = H200 / "cuda_transformer_mem_kineto.json.gz"


def _doc(capsys, *paths) -> dict:
    assert main(["memory", *map(str, paths), "--json", "--no-cache"]) == 0
    return orjson.loads(capsys.readouterr().out)


@pytest.mark.parametrize("path", [MEM, OOM, ALLSTACKS], ids=["transformer", "oom", "allstacks_p5"])
def test_numbers_equal_the_tests_own_count(capsys, path):
    snap = read_snapshot(path)
    c = count(snap)
    doc = _doc(capsys, path)
    assert (doc["protocol"], doc["entries"], doc["origin_us"]) == (path.read_bytes()[1], c["entries"], origin(snap))
    assert doc["actions"] == dict(Counter(e["action"] for e in snap["device_traces"][0]))
    (d,) = doc["devices"]
    assert (d["allocations"], d["frees"], d["free_requested"]) == (c["allocations"], c["frees"], c["free_requested"])
    assert (d["peak_allocated_bytes"], d["peak_ts_us"], d["peak_entry"]) == (c["peak"], c["peak_ts_us"],
                                                                           c["peak_index"])
    assert (d["live_at_peak_bytes"], d["live_at_peak_blocks"], d["before_trace_bytes"]) == (
        c["live_bytes"], c["live_blocks"], c["before_trace_bytes"])
    assert {o["owner"]: o["bytes"] for o in d["owners_at_peak"]} == dict(
        sorted(c["owners"].items(), key=lambda kv: -kv[1])[:10])
    assert (d["start_allocated_bytes"], d["end_allocated_bytes"], d["peak_reserved_bytes"]) == (
        c["start_allocated"], c["end_allocated"], c["peak_reserved"])
    seg = d["segments"]
    assert (seg["count"], seg["reserved_bytes"], seg["allocated_bytes"], seg["free_bytes"],
            seg["largest_free_block_bytes"]) == (c["segments"], c["reserved"], c["allocated_in_segments"], c["free"],
                                                 c["largest_free"])
    assert len(d["ooms"]) == len(c["ooms"])
    for got, want in zip(d["ooms"], c["ooms"]):
        assert (got["requested_bytes"], got["device_free_bytes"], got["allocated_bytes"], got["reserved_bytes"],
                got["ts_us"]) == (want["requested"], want["device_free"], want["allocated"], want["reserved"],
                                  want["ts_us"])


def test_the_recorded_run(capsys):
    """The numbers sample_traces/README.md states for the snapshot of the transformer's run."""
    (d,) = _doc(capsys, MEM)["devices"]
    assert (d["peak_allocated_bytes"], d["end_allocated_bytes"], d["snapshot_entry_bytes"]) == (
        68_519_460, 68_157_440, 68_157_440)
    assert (d["segments"]["count"], d["segments"]["reserved_bytes"]) == (3, 69_206_016)
    owners = {o["owner"]: o for o in d["owners_at_peak"]}
    fwd = owners["forward (record.py:115)"]
    assert fwd["largest"][0]["bytes"] == 33_554_432
    assert [f["name"] for f in fwd["largest"][0]["frames"][:4]] == ["forward", "_call_impl", "_wrapped_call_impl",
                                                                    "forward"]
    assert owners["(no frames)"]["largest"][0]["bytes"] == 33_554_432  # the autograd thread's


def test_a_protocol_5_snapshot_with_cpp_frames(capsys):
    """cuda_allstacks_p5.pickle: protocol 5 (Python 3.14's), read while unpickled like protocol 4;
    C++ frames are never an owner: the allocations of the autograd thread (C++ frames only) are
    "(no Python frame)", the others their innermost user frame, above 30 C++ frames."""
    from tracetui.memsnap.reader import SnapshotReader
    from tracetui.memsnap.unpickle import load_plain

    reader = SnapshotReader()
    assert load_plain(ALLSTACKS, stream=reader).streamed_device == 0
    (d,) = _doc(capsys, ALLSTACKS)["devices"]
    assert d["peak_allocated_bytes"] == 113_283_080
    owners = {o["owner"]: o for o in d["owners_at_peak"]}
    assert owners["(no Python frame)"]["bytes"] == 56_643_584
    frames = owners["train_step (ms_all.py:9)"]["largest"][0]["frames"]
    assert frames[0]["name"] == "torch::unwind::unwind()" and not frames[0]["user"]
    assert [f["name"] for f in frames if f["user"]][:1] == ["train_step"]


def test_the_out_of_memory_snapshot(capsys):
    (d,) = _doc(capsys, OOM)["devices"]
    (o,) = d["ooms"]
    assert (o["requested_bytes"], o["device_free_bytes"]) == (157_600_055_296, 149_010_120_704)
    assert (o["allocated_bytes"], o["live_blocks"]) == (303_136_768, 35)
    assert [f["name"] for f in o["frames"]] == ["main", "<module>"]
    held = {x["owner"]: x["bytes"] for x in o["owners"]}
    assert held["make_layers (oom_snapshot.py:22)"] == 100_712_448 and sum(held.values()) == 303_136_768


def _kineto_raw() -> tuple[float, list[dict]]:
    doc = json.loads(gzip.open(KINETO).read())
    return doc["baseTimeNanoseconds"] / 1000.0, doc["traceEvents"]


def _own_offset(snap: dict) -> tuple[float, int]:
    """(median of snapshot mark - trace mark over marks of the same name and stage within 1 ms of
    each other on the epoch clock, pairs): the test's own measurement."""
    base, events = _kineto_raw()
    marks = [(a["name"], a["stage"] == "START", a["time_us"]) for a in snap["external_annotations"]]
    diffs = []
    for e in events:
        if e.get("cat") != "user_annotation":
            continue
        for start, t in ((True, base + e["ts"]), (False, base + e["ts"] + e["dur"])):
            near = [m[2] - t for m in marks if m[0] == e["name"] and m[1] == start and abs(m[2] - t) < 1000]
            diffs += near
    return float(np.median(diffs)), len(diffs)


def test_the_clocks_of_the_snapshot_and_its_trace():
    """Measured, not assumed: every one of the trace's 12 annotation spans (24 starts and ends)
    has its snapshot mark, 2.5 µs earlier on the epoch clock (the median; the farthest, a
    ProfilerStep start, 70.8 µs)."""
    snap = read_snapshot(MEM)
    own, pairs = _own_offset(snap)
    linked = open_traces([str(KINETO), str(MEM)])
    c = link_clocks(linked.kineto, linked.memory.snapshot)
    base, _ = _kineto_raw()
    assert (c.pairs, pairs) == (24, 24)
    assert c.offset_us - base == pytest.approx(own, abs=0.5) and own == pytest.approx(-2.5, abs=0.5)
    assert c.spread_us == pytest.approx(70.75, abs=0.5)


def test_every_allocation_in_the_traces_window_lands_in_an_op():
    """Each ``alloc`` entry inside the Kineto trace's time span, put on its clock, falls inside a
    cpu_op; the innermost (latest started) one, found here in the raw JSON, is the op tracetui
    names.  192 of 192, and most are the allocating ops themselves (aten::empty ...)."""
    snap = read_snapshot(MEM)
    own, _ = _own_offset(snap)
    base, events = _kineto_raw()
    ops = [(base + e["ts"], base + e["ts"] + e["dur"], e["name"]) for e in events if e.get("cat") == "cpu_op"]
    lo, hi = min(o[0] for o in ops), max(o[1] for o in ops)
    linked = open_traces([str(KINETO), str(MEM)])
    c = link_clocks(linked.kineto, linked.memory.snapshot)
    names = Counter()
    n = 0
    for e in snap["device_traces"][0]:
        t = e["time_us"] - own  # the allocation on the trace's epoch clock
        if e["action"] != "alloc" or not lo <= t <= hi:
            continue
        n += 1
        inside = [o for o in ops if o[0] <= t <= o[1]]
        assert inside, e
        want = max(inside, key=lambda o: o[0])[2]
        ev = op_at(linked.kineto, float(c.to_trace(float(e["time_us"]))))
        assert linked.kineto.name(ev) == want
        names[want] += 1
    assert n == 192 and names["aten::empty"] + names["aten::empty_strided"] == 92


def test_beside_the_trace_the_memory_answers_name_the_op(capsys):
    doc = _doc(capsys, KINETO, MEM, "--at", "3945")
    assert doc["beside"]["linked"] and doc["beside"]["pairs"] == 24
    at = doc["devices"][0]["at"]
    ops = [b["op"]["name"] for o in at["owners"] for b in o["largest"] if b.get("op")]
    assert ops and all(name.startswith(("aten::", "autograd::", "Optimizer", "ProfilerStep", "forward", "backward"))
                       for name in ops)
    assert main(["info", str(KINETO), str(MEM), "--json", "--no-cache"]) == 0
    info = orjson.loads(capsys.readouterr().out)
    assert info["memory_link"]["pairs"] == 24 and info["files"][-1] == str(MEM)
