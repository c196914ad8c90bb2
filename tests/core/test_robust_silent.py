"""Nothing silent, nothing slow, nothing deep (issue 24): every element, node, line or file
that is not used is counted with its reason; recovery after long padding is linear; JSON
nested past what the decoders read is a one-line bad-input error, never a crash.

Facts are checked against the raw files the tests write from shared traces (the number of
events the file holds, the index of the element that was altered), never against
tracetui's own output.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import zlib

import pytest
from shared_traces import ET_DIR, SHARED, kineto_path
from test_robust_oracle import elements_of

from tracetui.errors import TraceFormatError
from tracetui.et import load_et
from tracetui.io.jsonrecover import content_end, content_start
from tracetui.job import open_job
from tracetui.kineto import load_kineto
from tracetui.session import load_trace

SYNC = "a100_event_sync_multistream.json.gz"


def _doc(name: str = SYNC) -> dict:
    return json.loads(gzip.open(kineto_path(name)).read())


def _write(path, doc) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


def _run(*args: str, tmp_path) -> subprocess.CompletedProcess:
    env = dict(os.environ, TRACETUI_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "tracetui", *args], capture_output=True, text=True, timeout=300,
                          env=env)


# ------------------------------------------------------------------ padding: linear time
def test_content_bounds_equal_strip_on_any_mix_of_padding():
    rng = random.Random(24)
    for _ in range(3000):
        data = bytes(rng.choice(b" \t\r\n\x00xy{") for _ in range(rng.randint(0, 200)))
        assert content_end(data) == len(data.rstrip(b" \t\r\n\x00"))
        assert content_start(data) == len(data) - len(data.lstrip(b" \t\r\n\x00"))
    big = b"  {" + b"\x00" * (3 << 20) + b"\n" * (1 << 20) + b" " * 1000
    assert content_end(big) == 3 and content_start(b" " * (5 << 20) + b"[") == 5 << 20


@pytest.mark.slow
@pytest.mark.parametrize("pad", [b" ", b"\x00"])
def test_a_cut_trace_behind_256_mib_of_padding_is_recovered(pad, tmp_path):
    """A 256 KiB gzip file: the trace cut inside an event, then 256 MiB of spaces or NULs
    (a preallocated file).  The byte-at-a-time scan this replaces took minutes on it
    (bench/bench_padding.py has the numbers); the complete events before the cut are kept."""
    raw = gzip.decompress(kineto_path(SYNC).read_bytes())
    cut = raw.index(b'"name"', len(raw) // 2) + 3  # inside an event
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    body = [comp.compress(raw[:cut])] + [comp.compress(pad * (1 << 20)) for _ in range(256)] + [comp.flush()]
    p = tmp_path / "padded.json.gz"
    p.write_bytes(b"".join(body))
    kt = load_kineto(p)
    alone = tmp_path / "cut.json.gz"  # the same cut without the padding (tests/core/test_robust_truncation.py)
    alone.write_bytes(gzip.compress(raw[:cut]))
    want = load_kineto(alone)
    assert kt.n_events == want.n_events and 0 < kt.n_events < load_kineto(kineto_path(SYNC)).n_events
    warn = next(w.message for w in kt.warnings if w.kind == "truncated")
    assert warn == next(w.message for w in want.warnings if w.kind == "truncated")
    complete = elements_of(raw).complete_before(cut)  # the stdlib oracle's count
    assert warn.startswith(f"file is cut short at byte {cut:,} (decompressed): kept the {complete:,} complete events")


# ------------------------------------------------------------------ nesting depth
def _deep(depth: int) -> bytes:
    return (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1, "args": {"x": '
            + b"[" * depth + b"]" * depth + b"}}]}")


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deep_nesting_is_a_trace_error_from_the_api_and_exit_2_from_the_cli(depth, tmp_path):
    p = tmp_path / "deep.json"
    p.write_bytes(_deep(depth))
    where = _deep(depth).index(b"[" * depth) + depth - 1  # the innermost bracket
    with pytest.raises(TraceFormatError) as err:
        load_trace(p)
    assert str(err.value) == (f"{p} at byte {where}: JSON nested {depth + 4:,} levels deep: too deep to read "
                              "(at most about 900 levels are read)")
    gz = tmp_path / "deep.json.gz"
    gz.write_bytes(gzip.compress(_deep(depth)))
    out = _run("info", str(gz), tmp_path=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == f"tracetui: {gz} at byte {where} (decompressed): JSON nested {depth + 4:,} levels deep: " \
                         "too deep to read (at most about 900 levels are read)\n"


def test_deep_nesting_in_an_execution_trace_and_in_a_driver_line(tmp_path):
    et = tmp_path / "et.json"
    et.write_bytes(b'{"schema": "1.0.1", "pid": 1, "nodes": [{"id": 1, "name": "x", "attrs": '
                   + b"[" * 5000 + b"]" * 5000 + b"}]}")
    with pytest.raises(TraceFormatError, match=r"JSON nested 5,00\d levels deep: too deep to read"):
        load_et(et)
    lines = tmp_path / "calls.jsonl"
    ok = {"event_id": 1, "ts": 0.5, "tid": 7, "phase": "B", "type": "userspace", "name": "uprobe:/l.so:cuInit"}
    lines.write_text(json.dumps(ok) + "\n" + '{"event_id": 2, "deep": ' + "[" * 5000 + "]" * 5000 + "}\n")
    drv = load_trace(lines)
    assert drv.lines.skipped.get("lines nested too deeply to read (JSON deeper than the decoder's recursion "
                                 "limit)") == 1


# ------------------------------------------------------------------ elements not used are counted
def test_a_phase_that_is_not_a_string_is_a_rejected_element(tmp_path):
    doc = _doc()
    events = doc["traceEvents"]
    hit = [i for i, e in enumerate(events) if e.get("ph") == "X"][:5]
    for i in hit:
        events[i]["ph"] = True
    kt = load_trace(_write(tmp_path / "ph.json", doc))
    assert kt.rejected == {"'ph' is not a string": 5}
    msg = next(w.message for w in kt.warnings if "'ph' is not a string" in w.message)
    assert f"5 'ph' is not a string (first: traceEvents[{hit[0]}])" in msg
    assert "coerced" not in " ".join(w.message for w in kt.warnings)  # not "kept": they are not events


def test_a_duration_of_1e308_is_a_warning_of_the_loader_not_a_numpy_message(tmp_path):
    doc = _doc()
    long = [i for i, e in enumerate(doc["traceEvents"]) if e.get("ph") == "X"
            and e.get("cat") in ("kernel", "cpu_op", "cuda_runtime")]
    for i in long:
        doc["traceEvents"][i]["dur"] = 1e308
    p = _write(tmp_path / "long.json", doc)
    kt = load_trace(p)
    msg = next(w.message for w in kt.warnings if "31 years" in w.message)
    assert msg.startswith(f"{len(long):,} events have a duration over 1e+15 µs (31 years; the longest 1e+308 µs)")
    assert msg.endswith(f"(kept with zero duration; first: traceEvents[{long[0]}])")
    for command in ("summary", "tree", "info"):
        out = _run(command, p, "--no-cache", tmp_path=tmp_path)
        assert out.returncode == 0 and out.stderr == "", out.stderr  # no RuntimeWarning: overflow


def test_an_et_node_that_is_its_own_parent_is_counted(tmp_path):
    doc = json.loads(gzip.open(ET_DIR / "hta_simple_add_cuda_pair" / "et.json.gz").read())
    node = next(n for n in doc["nodes"] if n["name"] == "aten::uniform_")
    node["ctrl_deps"] = node["id"]
    et = load_trace(_write(tmp_path / "et.json", doc))
    msg = next(w.message for w in et.warnings if w.kind == "self_parent")
    assert msg.endswith(f"1 nodes name themselves as their parent (only the process root may); read as top-level "
                        f"nodes (first: node id {node['id']})")
    assert len(et.ids) == len(doc["nodes"])  # kept


def test_files_of_a_job_folder_that_cannot_be_read_are_named(tmp_path):
    """Two ranks linked from the shared job (links, not copies: read with ``follow_links``), a
    symlink loop, a link to nothing and a FIFO named like traces: the job opens its two ranks
    and its warnings name the three others."""
    job = SHARED / "multirank" / "param_dlrm_8ranks"
    for r in (0, 1):
        (tmp_path / f"rank{r}_kineto.json.gz").symlink_to(job / f"rank{r}_kineto.json.gz")
    (tmp_path / "loop_a.json").symlink_to(tmp_path / "loop_b.json")
    (tmp_path / "loop_b.json").symlink_to(tmp_path / "loop_a.json")
    (tmp_path / "gone.json.gz").symlink_to(tmp_path / "never-written.json.gz")
    os.mkfifo(tmp_path / "rank2_kineto.json")
    opened = open_job([str(tmp_path)], workers=1, use_cache=False, follow_links=True)
    assert sorted(opened.results) == [0, 1]
    said = "\n".join(opened.warnings)
    for name, why in (("loop_a.json", "is a symbolic link loop"), ("loop_b.json", "is a symbolic link loop"),
                      ("gone.json.gz", "is a symbolic link to a file that does not exist"),
                      ("rank2_kineto.json", "is a named pipe (FIFO)")):
        assert f"{tmp_path / name}: {why}; skipped" in said


def test_a_utf8_byte_order_mark_is_read_as_whitespace(tmp_path):
    raw = gzip.decompress(kineto_path(SYNC).read_bytes())
    p = tmp_path / "bom.json"
    p.write_bytes(b"\xef\xbb\xbf" + raw)
    assert load_trace(p).n_events == load_trace(kineto_path(SYNC)).n_events
    # byte offsets in messages are still the file's
    bad = bytearray(b"\xef\xbb\xbf" + raw)
    at = 3 + raw.index(b'"ts"', len(raw) // 2)  # the opening quote of a key, in the file with its mark
    bad[at] = ord("@")
    p.write_bytes(bytes(bad))
    with pytest.raises(TraceFormatError, match=rf" at byte {at}: not valid JSON"):
        load_trace(p)
    et_doc = json.loads(gzip.decompress((ET_DIR / "hta_simple_add_cuda_pair" / "et.json.gz").read_bytes()))
    (tmp_path / "et.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(et_doc).encode())
    assert len(load_trace(tmp_path / "et.json").ids) == len(et_doc["nodes"])


def test_a_lone_surrogate_escape_is_read_as_the_replacement_character(tmp_path):
    raw = gzip.decompress(kineto_path(SYNC).read_bytes())
    at = raw.index(b'"name": "') + len(b'"name": "')
    p = tmp_path / "lone.json"
    p.write_bytes(raw[:at] + rb"\ud800" + raw[at:])
    kt = load_trace(p)
    msg = next(w.message for w in kt.warnings if w.kind == "lone_surrogate")
    assert msg == (f"1 lone UTF-16 surrogate escapes (such as \\ud800, half of a pair) read as U+FFFD "
                   f"(first at byte {at})")
    assert kt.n_events == load_trace(kineto_path(SYNC)).n_events
    pair = raw[:at] + rb"\ud83d\ude00" + raw[at:]  # a valid pair stays the character it is
    p.write_bytes(pair)
    assert not [w for w in load_trace(p).warnings if w.kind == "lone_surrogate"]
    et_doc = gzip.decompress((ET_DIR / "hta_simple_add_cuda_pair" / "et.json.gz").read_bytes())
    j = et_doc.index(b'"name": "aten::') + len(b'"name": "')
    (tmp_path / "et.json").write_bytes(et_doc[:j] + rb"\udc00" + et_doc[j:])
    et = load_trace(tmp_path / "et.json")
    assert any(w.kind == "lone_surrogate" for w in et.warnings)
    assert any(n.startswith("\ufffdaten::") for n in et.names)
