"""Driver-call traces that are not tidy: layouts mixed in one file, gzip, a cut last line,
absurd values, files with no event at all (exit 2, one line), and records without calls."""

from __future__ import annotations

import gzip

import orjson
import pytest
from driver_files import Bpf, bpftrace_file, preload_file

from tracetui.cli import main
from tracetui.driver import What, load_driver
from tracetui.driver.lines import BAD_JSON, CUT_LAST, NOT_JSON
from tracetui.errors import TraceFormatError
from tracetui.session import load_trace


def summary_json(path, capsys) -> dict:
    assert main(["summary", str(path), "--json", "--no-cache"]) == 0
    return orjson.loads(capsys.readouterr().out)["driver"]


def call_counts(d: dict) -> dict[str, int]:
    return {r["name"]: r["count"] for r in d["calls"]}


def test_mixed_layouts_warn_and_drop_nothing(tmp_path, capsys):
    bpf, pre = bpftrace_file(), preload_file()
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(bpf.lines + pre.lines) + "\n")
    d = summary_json(path, capsys)
    assert d["layouts"] == {"bpftrace": 84, "preload": 25}
    assert d["lines"]["json"] == 109 and d["lines"]["total"] == bpf.n_total + pre.n_total
    mixed = [w for w in d["warnings"] if w["kind"] == "mixed_layouts"]
    assert len(mixed) == 1 and "not comparable" in mixed[0]["message"]
    counts = call_counts(d)
    assert counts["cuLaunchKernel"] == 9 + 4 and counts["cuMemAlloc_v2"] == 2 + 2 and counts["cuInit"] == 2
    assert sum(counts.values()) == 24 + 13  # every call of both files
    non_phase = {k: v for k, v in d["events_by_what"].items() if k != "phase"}
    assert non_phase == {"call": 37, "ioctl": 10, "launch": 9, "alloc": 2, "transfer": 2, "kernel_memory": 1,
                         "scheduler": 1, "syscall": 2}


def test_gzip_is_the_same_trace(tmp_path, capsys):
    data = bpftrace_file().data()
    plain = tmp_path / "trace.jsonl"
    plain.write_bytes(data)
    packed = tmp_path / "trace.jsonl.gz"
    packed.write_bytes(gzip.compress(data))
    assert summary_json(packed, capsys) == summary_json(plain, capsys)


def test_cut_gzip_stream_keeps_the_complete_lines(tmp_path, capsys):
    data = bpftrace_file().data()
    packed = gzip.compress(data)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(packed[: len(packed) * 2 // 3])
    t = load_driver(path)
    kinds = [w.kind for w in t.warnings]
    assert "truncated" in kinds
    assert 0 < t.lines.json < 84


def test_cut_last_line_is_counted_not_fatal(tmp_path, capsys):
    f = bpftrace_file()
    lines = f.lines[:-4]  # without the END block: the last line is cuCtxDestroy_v2's end line
    data = "\n".join(lines).encode()
    path = tmp_path / "cut.jsonl"
    path.write_bytes(data[:-20])  # the tracer was stopped while writing it
    d = summary_json(path, capsys)
    assert d["lines"]["total"] == len(lines) == 88
    assert d["lines"]["json"] == 83
    assert d["lines"]["skipped_by_reason"] == {NOT_JSON: 4, CUT_LAST: 1}
    assert d["unfinished_calls"] == 2  # cuGetProcAddress_v2, and cuCtxDestroy_v2 whose end line was cut
    assert call_counts(d)["cuCtxDestroy_v2"] == 1
    skipped = next(w for w in d["warnings"] if w["kind"] == "skipped_lines")
    assert "cut short" in skipped["message"] and "line 88" in skipped["message"]


def test_absurd_values_are_counted_in_the_warnings(tmp_path, capsys):
    f = Bpf()
    f.call(0.0, 1.0, "cuInit")
    f.ev(ts=1.5, tid=100, phase="B", type="userspace", name="uprobe:libcuda.so:cuMemAlloc_v2", depth=0)
    f.ev(ts=1.6, tid=100, phase="E", type="userspace", name="uretprobe:libcuda.so:cuMemAlloc_v2", depth=0,
         duration_us=-100.0, retval=0)  # a negative duration
    f.ev(ts=1.7, tid=100, type="transfer", direction="H2D", size=10, duration_ms=-1.0)  # and another
    f.ev(ts=1.8, tid=100, type="gpu_magic", op="x")  # a type no layout has
    f.ev(ts=1.9, tid=100, type="transfer", direction="X2Y", size=10, duration_ms=0.001)  # a direction no one has
    f.ev(ts="soon", tid=100, type="memory", op="alloc", size=5)  # ts not a number: the line is no event
    f.obj(hello=1)  # no layout's keys
    f.text('{"ts": 1, "type": "memory", "size": 3')  # starts like JSON, is not
    f.obj(ts=2.0, tid="abc", type="memory", op="alloc", size=7)  # tid not a number: left out, the record kept
    path = f.write(tmp_path / "absurd.jsonl")
    d = summary_json(path, capsys)
    assert d["lines"] == {"total": 11, "json": 10, "skipped": 1, "skipped_by_reason": {BAD_JSON: 1}}
    w = {x["kind"]: x["count"] for x in d["warnings"]}
    assert w["negative_duration"] == 2
    assert w["unknown_type"] == 1
    assert w["bad_fields"] == 2
    unread = sorted(x["message"] for x in d["warnings"] if x["kind"] == "unread_lines")
    assert unread == ["1 JSON lines of no known layout (no op_id, func or type key): not in the model",
                      "1 lines without a numeric 'ts': not in the model"]
    assert d["events_by_what"] == {"call": 2, "alloc": 1, "transfer": 2, "other": 1, "phase": 2}
    assert d["transfers"]["H2D"] == {"count": 1, "bytes": 10, "total_us": 0.0, "gb_per_s": None}
    assert d["transfers"]["unknown"]["count"] == 1  # X2Y
    assert call_counts(d) == {"cuInit": 1, "cuMemAlloc_v2": 1}
    t = load_driver(path)
    other = [int(e) for e in t.driver_events() if t.what_of(int(e)) == What.OTHER]
    assert len(other) == 1 and t.args(other[0])["type"] == "gpu_magic"


@pytest.mark.parametrize("content", [
    b"Attaching 12 probes...\n# Heartbeat: 0 events captured\n@calls: 0\n",
    b"",
    b"{}\n{\"a\": 1}\n",  # JSON objects, none an event
    b"{\"ts\": \"x\", \"type\": \"memory\"}\n",
])
@pytest.mark.parametrize("command", ["summary", "info"])
def test_no_event_is_one_line_and_exit_2(tmp_path, capsys, content, command):
    path = tmp_path / "trace_cuda.jsonl"
    path.write_bytes(content)
    assert main([command, str(path), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"tracetui: {path}: not a driver-call trace: ")
    with pytest.raises(TraceFormatError):
        load_driver(path)


def test_records_without_calls(tmp_path, capsys):
    f = Bpf()
    f.ev(ts=1.0, tid=5, type="memory", op="alloc", size=10, total_allocated=10)
    f.ev(ts=2.0, tid=5, type="transfer", direction="D2H", size=64, duration_ms=0.5)
    d = summary_json(f.write(tmp_path / "records.jsonl"), capsys)
    assert d["calls"] == [] and d["phases"] == [] and d["allocations"]["count"] == 1
    assert d["transfers"]["D2H"]["bytes"] == 64
    assert any(w["kind"] == "unattached_records" and w["count"] == 2 for w in d["warnings"])
    assert main(["tree", str(tmp_path / "records.jsonl"), "--no-cache"]) == 0
    assert "[record] memory alloc" in capsys.readouterr().out


def test_lines_that_are_not_utf8_are_bad_json_not_a_crash(tmp_path, capsys):
    good = b'{"ts": 1.0, "tid": 1, "type": "memory", "op": "alloc", "size": 5}\n'
    lines = [
        good,
        # a known field
        b'{"ts": 2.0, "tid": 1, "type": "userspace", "phase": "B", "name": "cu\x80Init", "depth": 0}\n',
        b'{"ts": 3.0, "tid": 1, "type": "memory", "op": "alloc", "size": 6, "\xff": 1}\n',  # an unknown key
        b'{"ts": 4.0, "tid": 1, "type": "userspace", "phase": "B", "name": "cu\xc3\xa9", "depth": 0}\n',  # UTF-8: fine
        b'{"ts": 5.0, "tid": 1, "type": "userspace", "phase": "B", "name": "cu\xc3',  # cut inside a character
    ]
    path = tmp_path / "bytes.jsonl"
    path.write_bytes(b"".join(lines))
    d = summary_json(path, capsys)
    assert d["lines"] == {"total": 5, "json": 2, "skipped": 3,
                          "skipped_by_reason": {BAD_JSON: 2, CUT_LAST: 1}}
    assert [r["name"] for r in d["calls"]] == ["cu\u00e9"] and d["allocations"]["bytes"] == 5


def test_a_first_line_that_is_not_utf8_does_not_hide_the_layout(tmp_path):
    path = tmp_path / "capture.log"  # no .jsonl name: detected by content
    path.write_bytes(b'{"ts": 1.0, "tid": 1, "type": "memory", "op": "alloc", "size": 5, "\xff": 1}\n'
                     b'{"ts": 2.0, "tid": 1, "type": "memory", "op": "alloc", "size": 6}\n')
    t = load_trace(path)
    assert t.lines.json == 1 and t.lines.skipped == {BAD_JSON: 1}
