"""``tracetui memory`` (text and JSON), ``summary``, ``info`` and ``diff`` on CUDA memory
snapshots of known content (``memsnap_gen``): every number equal to the count the test makes
from the snapshot's own dict (``memsnap_count``), for every pickle protocol a snapshot may have."""

from __future__ import annotations

import orjson
import pytest
from memsnap_count import count, origin, owner_label
from memsnap_gen import BASE, MIB, SnapshotBuilder, basic, ring, two_devices, with_oom, write

from tracetui.cli import main

OTHER = 0x7F20_0000_0000


def _memory(capsys, path, *more) -> dict:
    assert main(["memory", str(path), "--json", "--no-cache", *more]) == 0
    return orjson.loads(capsys.readouterr().out)


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_every_number_equals_the_count(tmp_path, capsys, protocol):
    snap = with_oom().snapshot()
    c = count(snap)
    doc = _memory(capsys, write(snap, tmp_path / f"p{protocol}.pickle", protocol))
    assert (doc["protocol"], doc["format"], doc["entries"], doc["origin_us"]) == (protocol, "memsnap", c["entries"],
                                                                                   origin(snap))
    d = doc["devices"][0]
    assert (d["device"], d["device_type"], d["device_id"]) == ("cuda:0", 1, 0)
    assert (d["allocations"], d["frees"], d["free_requested"]) == (c["allocations"], c["frees"], c["free_requested"])
    assert d["peak_allocated_bytes"] == c["peak"] == 4 * MIB + MIB + 3 * MIB + 5 * MIB + 512
    assert d["peak_ts_us"] == c["peak_ts_us"] and d["peak_entry"] == c["peak_index"]
    assert (d["live_at_peak_bytes"], d["live_at_peak_blocks"], d["before_trace_bytes"]) == (
        c["live_bytes"], c["live_blocks"], c["before_trace_bytes"])
    assert {o["owner"]: o["bytes"] for o in d["owners_at_peak"]} == c["owners"]
    assert [o["owner"] for o in d["owners_at_peak"]] == ["backward (train.py:20)", "forward (train.py:10)",
                                                         "(no frames)", "load (data.py:5)"]
    assert d["peak_reserved_bytes"] == c["peak_reserved"] == 22 * MIB
    assert (d["start_allocated_bytes"], d["end_allocated_bytes"]) == (c["start_allocated"], c["end_allocated"])
    assert (d["start_reserved_bytes"], d["end_reserved_bytes"]) == (c["start_reserved"], c["end_reserved"])
    seg = d["segments"]
    assert (seg["count"], seg["reserved_bytes"], seg["allocated_bytes"], seg["free_bytes"],
            seg["largest_free_block_bytes"]) == (c["segments"], c["reserved"], c["allocated_in_segments"], c["free"],
                                                 c["largest_free"])
    assert seg["fragmentation"] == pytest.approx(1 - c["largest_free"] / c["free"])
    assert set(seg["by_pool"]) == {"large", "small"}
    (oom,) = d["ooms"]
    (want,) = c["ooms"]
    assert (oom["requested_bytes"], oom["device_free_bytes"], oom["allocated_bytes"], oom["reserved_bytes"],
            oom["ts_us"], oom["entry"]) == (100 << 30, 10 << 30, want["allocated"], want["reserved"], want["ts_us"],
                                            want["index"])
    assert oom["live_bytes"] == want["allocated"] and [f["name"] for f in oom["frames"]] == ["forward", "step"]
    assert sum(o["bytes"] for o in oom["owners"]) == want["allocated"]


def test_the_largest_block_of_an_owner_carries_its_whole_stack(tmp_path, capsys):
    doc = _memory(capsys, write(basic().snapshot(), tmp_path / "b.pickle"))
    fwd = next(o for o in doc["devices"][0]["owners_at_peak"] if o["owner"] == "forward (train.py:10)")
    assert fwd["frame"] == {"filename": "/home/me/train.py", "line": 10, "name": "forward"}
    big = fwd["largest"][0]
    assert (big["bytes"], big["addr"], fwd["count"]) == (4 * MIB, BASE, 1)
    assert [(f["name"], f["user"]) for f in big["frames"]] == [("forward", False), ("forward", True), ("step", True)]


def test_grouped_by_file_stack_and_annotation(tmp_path, capsys):
    path = write(basic().snapshot(), tmp_path / "b.pickle")
    by_file = {o["owner"]: o["bytes"] for o in _memory(capsys, path, "--by", "file")["devices"][0]["owners_at_peak"]}
    assert by_file == {"/home/me/train.py": 12 * MIB, "(no frames)": MIB, "/home/me/data.py": 512}
    by_stack = _memory(capsys, path, "--by", "stack")["devices"][0]["owners_at_peak"]
    assert [o["owner"] for o in by_stack][:2] == ["backward (train.py:20) < step (train.py:40)",
                                                  "forward (train.py:10) < step (train.py:40)"]
    by_ann = _memory(capsys, path, "--by", "annotation")["devices"][0]["owners_at_peak"]
    by_ann = {o["owner"]: o["bytes"] for o in by_ann}
    assert by_ann == {"backward": 8 * MIB, "forward": 5 * MIB + 512}  # the 2 MiB forward block was freed


def test_live_at_any_time(tmp_path, capsys):
    snap = basic().snapshot()
    entries = snap["device_traces"][0]
    t = entries[5]["time_us"] - origin(snap)  # just after the block without frames
    doc = _memory(capsys, write(snap, tmp_path / "b.pickle"), "--at", str(t / 1e3))
    at = doc["devices"][0]["at"]
    live = {}
    for e in entries[:6]:
        if e["action"] == "alloc":
            live[e["addr"]] = e
    assert (at["live_blocks"], at["live_bytes"]) == (len(live), sum(e["size"] for e in live.values()))
    assert {o["owner"]: o["bytes"] for o in at["owners"]} == {
        owner_label(e["frames"]): e["size"] for e in live.values()} | {"forward (train.py:10)": 6 * MIB}


def test_a_history_that_began_late(tmp_path, capsys):
    snap = ring().snapshot()
    c = count(snap)
    d = _memory(capsys, write(snap, tmp_path / "r.pickle"))["devices"][0]
    assert c["start_allocated"] == 3 * MIB and d["start_allocated_bytes"] == 3 * MIB
    assert d["frees_before_trace"] == {"count": 1, "bytes": MIB}
    assert (d["peak_allocated_bytes"], d["live_at_peak_bytes"], d["before_trace_bytes"]) == (
        c["peak"], c["live_bytes"], c["before_trace_bytes"]) == (8 * MIB, 6 * MIB, 2 * MIB)
    assert d["start_reserved_bytes"] == 16 * MIB == d["peak_reserved_bytes"]


def test_two_devices(tmp_path, capsys):
    snap = two_devices().snapshot()
    doc = _memory(capsys, write(snap, tmp_path / "two.pickle"))
    assert [d["device"] for d in doc["devices"]] == ["cuda:0", "cuda:1"]
    for dev, d in enumerate(doc["devices"]):
        c = count(snap, dev)
        assert (d["entries"], d["peak_allocated_bytes"], d["live_at_peak_bytes"], d["segments"]["count"]) == (
            c["entries"], c["peak"], c["live_bytes"], c["segments"])
    assert doc["devices"][1]["peak_allocated_bytes"] == 6 * MIB


def test_memory_text(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["memory", str(write(with_oom().snapshot(), tmp_path / "o.pickle")), "--no-cache"]) == 0
    raw = capsys.readouterr().out
    assert max(map(len, raw.splitlines())) <= 80
    out = " ".join(raw.split())
    assert "cuda:0: peak 13,632,000 B (13.6 MB) allocated at" in out
    assert "backward (train.py:20)" in out and "OUT OF MEMORY" in out
    assert "asked for 107,374,182,400 B (107.4 GB), free on the device 10,737,418,240 B (10.7 GB)" in out
    assert "2 segments hold 23,068,672 B (23.1 MB) reserved" in out


def test_summary_and_info_of_a_snapshot(tmp_path, capsys):
    path = write(with_oom().snapshot(), tmp_path / "o.pickle")
    assert main(["summary", str(path), "--json", "--no-cache"]) == 0
    mem = orjson.loads(capsys.readouterr().out)["memory"]
    d = mem["devices"][0]
    assert (mem["format"], d["peak_allocated_bytes"], d["ooms"], d["segments"]["count"]) == (
        "memsnap", 13_632_000, 1, 2)
    assert main(["info", str(path), "--json", "--no-cache"]) == 0
    info = orjson.loads(capsys.readouterr().out)
    assert info["format"]["name"] == "memsnap" and info["memory_snapshot"]["entries"] == count(
        with_oom().snapshot())["entries"]
    assert main(["summary", str(path), "--no-cache"]) == 0
    assert "owners at the peak: backward (train.py:20)" in capsys.readouterr().out


def test_diff_of_two_snapshots(tmp_path, capsys):
    a = write(basic().snapshot(), tmp_path / "a.pickle")
    b_ = SnapshotBuilder()  # B: A's run after a 2 MiB prefetch buffer that stays live
    b_.segment(0, OTHER, 2 * MIB)
    b_.alloc(0, OTHER, 2 * MIB, b_.stack(("/home/me/data.py", 9, "prefetch")))
    b = write(basic(b_).snapshot(), tmp_path / "b.pickle")
    assert main(["diff", str(a), str(b), "--json", "--no-cache"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    (d,) = doc["devices"]
    ca, cb = count(basic().snapshot()), count(b_.snapshot())
    assert (d["a_peak_allocated_bytes"], d["b_peak_allocated_bytes"]) == (ca["peak"], cb["peak"])
    assert d["delta_peak_bytes"] == 2 * MIB and d["owners"][0]["owner"] == "prefetch (data.py:9)"
    rows = {r["owner"]: (r["a_bytes"], r["b_bytes"], r["delta_bytes"]) for r in d["owners"]}
    for owner in set(ca["owners"]) | set(cb["owners"]):
        a_b, b_b = ca["owners"].get(owner, 0), cb["owners"].get(owner, 0)
        assert rows[owner] == (a_b, b_b, b_b - a_b)
    assert main(["diff", str(a), str(b), "--text", "--no-cache"]) == 0
    assert "prefetch (data.py:9)" in capsys.readouterr().out


def test_an_empty_history(tmp_path, capsys):
    """Segments only (history off): the end state, no peak."""
    b = SnapshotBuilder()
    b.segment(0, BASE, 2 * MIB)
    b.traces = [[]]
    d = _memory(capsys, write(b.snapshot(), tmp_path / "e.pickle"))
    assert d["devices"] == [] or d["devices"][0]["peak_allocated_bytes"] is None
