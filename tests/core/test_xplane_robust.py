"""XPlane files that are damaged, hostile or merely unusual (issue 38): bad bytes end in one line
naming the file and the byte (``TraceFormatError``, exit 2), never a traceback; what is read but
not shown is counted in the warnings; the rules of docs/formats.md ("JAX/XLA XPlane") on small
XSpaces written here with ``tests/xplane_write.py`` (the wire format by hand)."""

from __future__ import annotations

import gzip
import json
import math
import random
import time

import numpy as np
import pytest
from shared_traces import SHARED, kineto_path
from xplane_walk import FIXED64, LEN, VARINT
from xplane_write import encode, key, varint

from tracetui import formats
from tracetui.cli import main
from tracetui.errors import TraceError, TraceFormatError
from tracetui.io.formats import Recognition, read_head
from tracetui.kineto.kinds import Kind
from tracetui.xplane import load_xplane
from tracetui.xplane.sniff import recognise
from tracetui.xplane.wire import chain_run, walk

MI300 = SHARED / "xplane" / "mi300_jax_conv_tw003.xplane.pb"


# ------------------------------------------------------------------ XSpaces written by hand


def stat(mid: int, value, kind: str = "") -> bytes:
    """An XStat: int (int64, or uint64 with kind 'u'), float, str, bytes, or a ref ('ref')."""
    if kind == "ref":
        return encode([(1, VARINT, mid), (7, VARINT, value)])
    if isinstance(value, float):
        return encode([(1, VARINT, mid), (2, FIXED64, np.float64(value).tobytes())])
    if isinstance(value, int):
        return encode([(1, VARINT, mid), (3 if kind == "u" else 4, VARINT, value)])
    return encode([(1, VARINT, mid), (5 if isinstance(value, str) else 6, LEN,
                                      value.encode() if isinstance(value, str) else value)])


def event(mid: int, off_ps: int, dur_ps: int, stats=(), occurrences: int = 0) -> bytes:
    fields = [(1, VARINT, mid)]
    fields += [(5, VARINT, occurrences)] if occurrences else [(2, VARINT, off_ps)]
    return encode(fields + [(3, VARINT, dur_ps)] + [(4, LEN, s) for s in stats])


def line(lid: int, name: str, events, ts_ns: int = 1000) -> bytes:
    return encode([(1, VARINT, lid), (2, LEN, name.encode()), (3, VARINT, ts_ns)] + [(4, LEN, e) for e in events])


def _meta(entries: dict[int, str]) -> list[bytes]:
    """Map entries (key: the id; value: a metadata message with its id and name, field 2)."""
    return [encode([(1, VARINT, i), (2, LEN, encode([(1, VARINT, i), (2, LEN, n.encode())]))])
            for i, n in entries.items()]


def plane(name: str, lines=(), events: dict[int, str] | None = None, stats: dict[int, str] | None = None,
          own=(), pid: int = 0) -> bytes:
    fields = [(1, VARINT, pid), (2, LEN, name.encode())] + [(3, LEN, ln) for ln in lines]
    fields += [(4, LEN, v) for v in _meta(events or {})] + [(5, LEN, v) for v in _meta(stats or {})]
    return encode(fields + [(6, LEN, s) for s in own])


def space(*planes_, hostnames=("box",)) -> bytes:
    return encode([(1, LEN, p) for p in planes_] + [(4, LEN, h.encode()) for h in hostnames])


def _write(tmp_path, data: bytes, name: str = "t.xplane.pb"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


#: a GPU with one kernel and a host thread with its launch: the smallest linked profile
STATS = {1: "correlation_id", 2: "kernel_details", 3: "hlo_op", 4: "device", 5: "note", 6: "memcpy_details"}


def small(extra_gpu_lines=(), host_events=(), gpu_events=()) -> bytes:
    gpu = plane("/device:GPU:0", [line(7, "Stream #7(Compute)", [
        event(1, 5_000_000, 2_000_000, [stat(1, 42, "u"), stat(2, "regs:32 static_shared:0 dynamic_shared:1024 "
                                                                  "grid:2,1,1 block:64,1,1"), stat(3, "fusion.1")]),
        *gpu_events]), *extra_gpu_lines], {1: "fusion_kernel", 2: "MemcpyH2D", 3: "Memset"}, STATS)
    host = plane("/host:CPU", [line(99, "python3", [
        event(1, 1_000_000, 10_000_000, [stat(4, 3)]),  # the op, with a host 'device' stat
        event(2, 2_000_000, 1_000_000, [stat(1, 42, "u")]), *host_events])],
        {1: "fusion.1", 2: "cuLaunchKernel", 3: "other"}, STATS)
    return space(gpu, host)


# ------------------------------------------------------------------------------ bad bytes


def _one_line(capsys, path, needle: str) -> str:
    capsys.readouterr()
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and needle in err, err
    return err


@pytest.mark.parametrize("name, data, needle", [
    ("beyond", b"\x0a\xff\xff\xff\x0f\x12\x05/host", "at byte 0: not a valid XPlane: field 1 of an XSpace declares "
                                                     "33,554,431 bytes, more than the 7 left in the file (the file is "
                                                     "cut short?)"),
    ("varint", b"\x0a" + b"\xff" * 11 + b"\x01", "at byte 1: not a valid XPlane: a length of field 1 of an XSpace is "
                                                  "longer than 10 bytes (corrupt)"),
    ("group", b"\x0a\x04\x0b\x01\x02\x03", "at byte 2: not a valid XPlane: wire type 3 (group start) in field 1 of an "
                                           "XPlane: not used by XPlane (corrupt)"),
    ("wire 7", b"\x0a\x02\x17\x00", "wire type 7 (unknown (7)) in field 2 of an XPlane"),
    ("wrong wire", b"\x0a\x03\x10\x01\x02", "at byte 2: not a valid XPlane: field 2 (name) of an XPlane has wire type "
                                            "0 (varint), not 2 (length-delimited)"),
    ("field 0", b"\x00" * 64, "at byte 0: not a valid XPlane: field number 0 in an XSpace (corrupt)"),
    ("empty", b"", ": file is empty"),
    ("no plane", encode([(4, LEN, b"host")]), "not a JAX/XLA profile: the XSpace holds no plane"),
])
def test_bad_bytes_are_one_line_with_the_byte(tmp_path, capsys, name, data, needle):
    p = _write(tmp_path, data)
    _one_line(capsys, p, needle)
    with pytest.raises(TraceFormatError):
        load_xplane(p)


def test_a_message_nested_ten_thousand_deep_is_one_line_at_once(tmp_path, capsys):
    """Field 1 nested 10,000 times: the reader descends a fixed number of levels, so the second
    level (an XPlane's id must be a varint) says so; no recursion, no stack."""
    data = b""
    for _ in range(10_000):
        data = b"\x0a" + varint(len(data)) + data
    p = _write(tmp_path, data)
    t = time.process_time()
    err = _one_line(capsys, p, "field 1 (id) of an XPlane has wire type 2 (length-delimited), not 0 (varint)")
    assert "at byte 4:" in err and time.process_time() - t < 5


def test_a_stat_nested_deep_inside_an_event_is_read_as_bytes(tmp_path):
    """A bytes stat holding a message nested 10,000 deep is opaque data (hex in the args)."""
    bomb = b""
    for _ in range(10_000):
        bomb = b"\x0a" + varint(len(bomb)) + bomb
    kt = load_xplane(_write(tmp_path, small(host_events=[event(3, 0, 1, [stat(5, bomb)])])))
    other = int(np.flatnonzero(kt.name_id == kt.names.index("other"))[0])
    assert kt.args(other)["note"] == bomb.hex()


def test_a_file_cut_anywhere_is_read_or_refused_in_one_line(tmp_path):
    """Cuts at 60 places of the MI300 sample: a cut between two planes leaves a shorter, valid
    XSpace (protobuf cannot tell); every other cut is one TraceFormatError with its byte."""
    data = MI300.read_bytes()
    cuts = sorted(random.Random(38).sample(range(1, len(data)), 60))
    refused = 0
    for cut in cuts:
        p = _write(tmp_path, data[:cut])
        try:
            load_xplane(p)
        except TraceFormatError as exc:
            refused += 1
            assert exc.position.startswith("byte ") and "\n" not in str(exc)
    assert refused >= 55


@pytest.mark.slow  # 150 loads: ~6 s
def test_flipped_bytes_are_read_or_refused_never_a_crash(tmp_path):
    """150 single-byte corruptions of the MI300 sample (seeded): each loads (a changed value) or
    raises a TraceError; nothing else escapes."""
    data = bytearray(MI300.read_bytes())
    rnd = random.Random(3838)
    for _ in range(150):
        bad = bytearray(data)
        bad[rnd.randrange(len(bad))] ^= 1 << rnd.randrange(8)
        p = _write(tmp_path, bytes(bad))
        try:
            kt = load_xplane(p)
        except TraceError:
            continue
        assert kt.n_events > 0


def test_flipped_bytes_quick(tmp_path):
    data = bytearray(MI300.read_bytes())
    rnd = random.Random(38)
    for _ in range(12):
        bad = bytearray(data)
        bad[rnd.randrange(len(bad))] ^= 0xFF
        try:
            load_xplane(_write(tmp_path, bytes(bad)))
        except TraceError:
            pass


# --------------------------------------------------------------------------- recognition


def test_recognition_by_content_name_and_not_json(tmp_path):
    assert recognise(read_head(_write(tmp_path, small(), "profile.bin"))) == Recognition.YES
    assert recognise(read_head(_write(tmp_path, b"junk" * 10, "x.xplane.pb"))) == Recognition.MAYBE
    assert recognise(read_head(_write(tmp_path, b"junk" * 10, "x.bin"))) == Recognition.NO
    # Kineto writes a newline (0x0a, an XSpace's first byte) before its JSON: still Kineto
    js = _write(tmp_path, b'\n{"traceEvents": [], "schemaVersion": 1}', "k.json")
    assert recognise(read_head(js)) == Recognition.NO
    assert formats.detect(kineto_path("h100_bert_inference.json.gz")) == formats.FileKind.KINETO
    assert formats.detect(_write(tmp_path, small(), "profile.bin")) == formats.FileKind.XPLANE


def test_a_gzipped_xplane_named_so_loads(tmp_path):
    p = tmp_path / "t.xplane.pb.gz"
    p.write_bytes(gzip.compress(small()))
    assert formats.detect(p) == formats.FileKind.XPLANE
    assert load_xplane(p).gpu_stats.linked == 1


# ------------------------------------------------------------------------------- the rules


def test_the_smallest_profile_links_its_kernel_under_its_op(tmp_path):
    kt = load_xplane(_write(tmp_path, small()))
    k = int(np.flatnonzero(kt.kind == int(Kind.KERNEL))[0])
    assert kt.name(k) == "fusion_kernel" and kt.name(int(kt.launch_of[k])) == "cuLaunchKernel"
    assert kt.category(int(kt.launch_of[k])) == "cuda_driver" and kt.name(int(kt.cpu_op_of[k])) == "fusion.1"
    a = kt.args(k)
    assert (a["grid"], a["block"], a["registers per thread"], a["shared memory"]) == ([2, 1, 1], [64, 1, 1], 32, 1024)
    assert (float(kt.ts[k]) + kt.origin_us, float(kt.dur[k])) == (1 + 5, 2.0)  # line at 1 µs, offsets in ps
    op = int(kt.cpu_op_of[k])
    # a host stat named as an arg the model reads is kept renamed, never read as a device
    assert kt.args(op) == {"xplane device": 3} and int(kt.device[op]) == -1
    assert kt.device_properties == [{"id": 0}]


def test_copies_and_sets_by_name_and_details(tmp_path):
    """Device events named ``Memcpy*`` / ``Memset*`` (CUPTI's names) are copies and sets; a copy
    named by CUPTI's kind is named as Kineto names copies (XLA's name kept), and its
    ``memcpy_details`` size is Kineto's ``bytes``."""
    data = small(gpu_events=[event(2, 9_000_000, 1_000_000, [stat(6, "kind_src:pinned kind_dst:device size:4096")]),
                             event(3, 11_000_000, 1_000_000)])
    kt = load_xplane(_write(tmp_path, data))
    kinds = {kt.name(i): Kind(int(kt.kind[i])) for i in range(kt.n_events) if kt.lane_of_node(i).is_gpu}
    assert kinds == {"fusion_kernel": Kind.KERNEL, "Memcpy HtoD (Pinned -> Device)": Kind.MEMCPY,
                     "Memset": Kind.MEMSET}
    copy = int(np.flatnonzero(kt.kind == int(Kind.MEMCPY))[0])
    a = kt.args(copy)
    assert (a["bytes"], a["xplane name"]) == (4096, "MemcpyH2D") and a["memcpy_details"].endswith("size:4096")


def test_what_is_not_read_is_counted(tmp_path):
    derived = line(0xDEADBEEF, "XLA Ops", [event(1, 0, 5), event(1, 10, 5)])
    tpu = plane("/device:TPU:0", [line(1, "XLA Ops", [event(1, 0, 1)])], {1: "op"})
    agg = event(3, 0, 0, occurrences=7)
    gpu_lines = [derived]
    data = small(extra_gpu_lines=gpu_lines, host_events=[agg, event(77, 0, 1)])
    data = data + encode([(1, LEN, tpu)])  # a repeated field may come again later
    kt = load_xplane(_write(tmp_path, data))
    msgs = {w.kind: w.message for w in kt.warnings}
    assert msgs["xplane_derived_lines"].startswith("2 events on lines derived from the streams' (XLA Ops)")
    assert msgs["xplane_other_planes"].startswith("1 events on planes that are neither a GPU")
    assert "/device:TPU:0" in msgs["xplane_other_planes"]
    assert msgs["xplane_aggregated"].startswith("1 aggregated events")
    assert msgs["xplane_metadata"].startswith("1 events or stats name a metadata id")
    assert kt.names.count("(no event metadata)") == 1


def test_stat_values_of_every_kind_are_kept_exactly(tmp_path):
    notes = [stat(5, "naïve \"quoted\" \x1b[31m tab\t"), stat(5, -(2**63)), stat(5, 2**64 - 1, "u"),
             stat(5, math.nan), stat(5, -1.5e300), stat(5, b"\x00\xff"), stat(5, 3, "ref"), stat(5, b"\xe9t\xe9")]
    kt = load_xplane(_write(tmp_path, small(host_events=[event(3, 0, 1, [n]) for n in notes])))
    other = np.flatnonzero(kt.name_id == kt.names.index("other"))
    got = [kt.args(int(i))["note"] for i in other]
    assert got[:3] == ["naïve \"quoted\" \x1b[31m tab\t", -(2**63), 2**64 - 1]
    assert got[3] == "nan" and got[4] == -1.5e300 and got[5] == "00ff" and got[6] == "hlo_op"
    assert got[7] == "e974e9"  # a bytes value: hex, whatever it holds


def test_a_string_stat_that_is_not_utf8_is_replaced_and_counted(tmp_path):
    bad = encode([(1, VARINT, 5), (5, LEN, b"caf\xe9")])
    kt = load_xplane(_write(tmp_path, small(host_events=[event(3, 0, 1, [bad])])))
    other = int(np.flatnonzero(kt.name_id == kt.names.index("other"))[0])
    assert kt.args(other)["note"] == "caf\ufffd"
    assert any(w.kind == "invalid_utf8" and w.count == 1 for w in kt.warnings)


def test_an_event_with_many_stats_keeps_them_in_order(tmp_path):
    """100 stats on one event among events with one: the reader's rounds switch to walking the
    few messages still open; the args keep the file's order."""
    many = event(3, 0, 1, [stat(5, k) for k in range(100)])
    data = small(host_events=[many] + [event(3, 10 + k, 1, [stat(5, -k)]) for k in range(50)])
    kt = load_xplane(_write(tmp_path, data))
    other = np.flatnonzero(kt.name_id == kt.names.index("other"))
    raw = kt.args_blob[int(kt.args_offsets[other[0]]):int(kt.args_offsets[other[0] + 1])]
    assert json.loads(b"[" + raw.replace(b'{"note":', b"").replace(b',"note":', b",").rstrip(b"}") + b"]") == \
        list(range(100))
    assert sorted(kt.args(int(i))["note"] for i in other[1:]) == sorted(-k for k in range(50))


def test_a_long_line_found_in_numpy_equals_the_walk(tmp_path):
    """A line of 3,000 events (with another field between two runs): the events found by pointer
    doubling (chain_run) are the ones a field-by-field walk finds."""
    evs = [event(1 + k % 3, 1000 * k, 7, [stat(5, k)] * (k % 4)) for k in range(3000)]
    ln = encode([(1, VARINT, 5), (2, LEN, b"t")] + [(4, LEN, e) for e in evs[:1700]] + [(11, LEN, b"display")]
                + [(4, LEN, e) for e in evs[1700:]])
    u8 = np.frombuffer(ln, dtype=np.uint8)
    fast = walk(ln, 0, len(ln), "XLine", 4, u8)
    slow = walk(ln, 0, len(ln), "XLine")
    for f in ("num", "wire", "value", "pos"):
        assert np.array_equal(getattr(fast, f), getattr(slow, f))
    run, resume = chain_run(u8, int(slow.pos[2]) - 2, len(ln), key(4, LEN)[0])
    assert run.num.size == 1700 and ln[resume] == key(11, LEN)[0]
    data = space(plane("/host:CPU", [ln], {1: "a", 2: "b", 3: "c"}, STATS))
    kt = load_xplane(_write(tmp_path, data))
    assert kt.n_events == 3000
    assert sum(len(kt.args(i)) for i in range(kt.n_events)) == sum(k % 4 > 0 for k in range(3000))


def test_the_cli_opens_a_profile_named_anything(tmp_path, capsys):
    p = _write(tmp_path, small(), "run.pb")
    capsys.readouterr()
    assert main(["summary", str(p), "--json", "--no-cache"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["streams"][0]["count"] == 1 and out["streams"][0]["gpu_us"] == 2.0
