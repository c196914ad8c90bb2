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
from tracetui.io.files import read_trace_bytes
from tracetui.io.jsonrecover import content_end, content_start
from tracetui.io.padding import PADDING_KEPT
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
@pytest.mark.parametrize("compressed", [True, False])
def test_a_cut_trace_behind_long_padding_is_recovered(pad, compressed, tmp_path):
    """The trace cut inside an event, then spaces or NULs (a preallocated file): 128 MiB of
    them gzipped (a 128 KiB file, under the 256 MB where the expansion check starts), 256 MiB
    plain.  The byte-at-a-time scan this replaces took minutes on it (bench/bench_untrusted.py);
    the complete events before the cut are kept, and the padding past the 1 MiB kept
    (``PADDING_KEPT``) is counted, never held: a plain file's is not even read."""
    raw = gzip.decompress(kineto_path(SYNC).read_bytes())
    cut = raw.index(b'"name"', len(raw) // 2) + 3  # inside an event
    mib = 128 if compressed else 256
    if compressed:
        comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        body = [comp.compress(raw[:cut])] + [comp.compress(pad * (1 << 20)) for _ in range(mib)] + [comp.flush()]
        p = tmp_path / "padded.json.gz"
        p.write_bytes(b"".join(body))
    else:
        p = tmp_path / "padded.json"
        with open(p, "wb") as fh:
            fh.write(raw[:cut])
            for _ in range(mib):
                fh.write(pad * (1 << 20))
    fb = read_trace_bytes(p)
    assert fb.data == raw[:cut] + pad * PADDING_KEPT and fb.padding == (mib << 20) - PADDING_KEPT
    kt = load_kineto(p)
    alone = tmp_path / "cut.json.gz"  # the same cut without the padding (tests/core/test_robust_truncation.py)
    alone.write_bytes(gzip.compress(raw[:cut]))
    want = load_kineto(alone)
    assert kt.n_events == want.n_events and 0 < kt.n_events < load_kineto(kineto_path(SYNC)).n_events
    warn = next(w.message for w in kt.warnings if w.kind == "truncated")
    complete = elements_of(raw).complete_before(cut)  # the stdlib oracle's count
    assert warn.startswith(f"file is cut short at byte {cut:,}{' (decompressed)' if compressed else ''}: kept the "
                           f"{complete:,} complete events")
    assert warn.replace(" (decompressed)", "") == next(w.message for w in want.warnings
                                                       if w.kind == "truncated").replace(" (decompressed)", "")
    assert [w.message for w in kt.warnings if w.kind == "padding"] == [
        f"{fb.padding:,} bytes of padding (whitespace or NUL) after byte {cut + PADDING_KEPT:,}"
        f"{' (decompressed)' if compressed else ''} were skipped"]


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


# ------------------------------------------------------------------ numbers as strings, keys written twice
def _raw_events(name: str = SYNC) -> tuple[bytes, list[int]]:
    """The file's JSON and the byte offset of each event's opening brace (from the stdlib
    oracle, independent of the loader)."""
    raw = gzip.decompress(kineto_path(name).read_bytes())
    el = elements_of(raw)
    starts = [raw.index(b"{", (el.ends[i - 1] if i else el.array_start) + 1) for i in range(len(el.values))]
    return raw, starts


def test_a_number_written_as_a_string_is_read_and_counted(tmp_path):
    """``"dur": "10"`` and ``"ts": "5"``: read as the numbers they hold (the same columns as the
    numbers give), each counted as a repair with the first traceEvents index: not silent."""
    doc = _doc()
    events = doc["traceEvents"]
    durs = [i for i, e in enumerate(events) if isinstance(e.get("dur"), (int, float))][3:9]
    tss = [i for i, e in enumerate(events) if isinstance(e.get("ts"), int)][10:14]
    as_numbers = load_trace(_write(tmp_path / "numbers.json", doc))
    for i in durs:
        events[i]["dur"] = str(events[i]["dur"])
    for i in tss:
        events[i]["ts"] = str(events[i]["ts"])
    p = _write(tmp_path / "strings.json", doc)
    kt = load_trace(p)
    assert (kt.ts == as_numbers.ts).all() and (kt.dur == as_numbers.dur).all() and kt.n_events == as_numbers.n_events
    msg = next(w.message for w in kt.warnings if w.kind == "repaired")
    assert msg == (f"{len(durs) + len(tss)} fields of an unexpected type were coerced (events kept): "
                   f"{len(durs)} 'dur' a string (read as the number it holds) (first: traceEvents[{durs[0]}]); "
                   f"{len(tss)} 'ts' a string (read as the number it holds) (first: traceEvents[{tss[0]}])")
    for i in durs:  # the typed fast path takes a string ts: counted there too
        events[i]["dur"] = float(events[i]["dur"])
    only_ts = load_trace(_write(tmp_path / "ts.json", doc))
    assert [w.message for w in only_ts.warnings if w.kind == "repaired"] == [
        f"{len(tss)} fields of an unexpected type were coerced (events kept): {len(tss)} 'ts' a string (read as the "
        f"number it holds) (first: traceEvents[{tss[0]}])"]
    out = _run("info", "--json", "--no-cache", p, tmp_path=tmp_path)  # stdout a pipe
    assert out.returncode == 0 and out.stderr == "" and msg in json.loads(out.stdout)["warnings"]


@pytest.mark.parametrize("key", ["name", "dur", "ph", "ts", "pid"])
def test_a_key_written_twice_is_counted(key, tmp_path):
    """``{"name": "dup", "name": "aten::mm", ...}``: the decoders keep the last value without a
    word; tracetui counts the events and names the first."""
    raw, starts = _raw_events()
    doc = _doc()
    hit = [i for i, e in enumerate(doc["traceEvents"]) if key in e][5:12]
    first_value = {"name": b'"dup"', "dur": b"123456", "ph": b'"i"', "ts": b"1", "pid": b"99"}[key]
    out = bytearray(raw)
    for i in reversed(hit):  # the duplicate first: the file's own value is the last, and is kept
        at = starts[i] + 1
        out[at:at] = b'"' + key.encode() + b'": ' + first_value + b", "
    p = tmp_path / "dup.json"
    p.write_bytes(bytes(out))
    kt, want = load_trace(p), load_trace(kineto_path(SYNC))
    assert kt.n_events == want.n_events and kt.names == want.names and (kt.dur == want.dur).all()
    msg = next(w.message for w in kt.warnings if w.kind == "duplicate_keys")
    assert msg == (f"{len(hit)} events hold a key twice (the last value is used): {len(hit)} '{key}' "
                   f"(first: traceEvents[{hit[0]}])")
    cli = _run("info", "--json", "--no-cache", str(p), tmp_path=tmp_path)
    assert cli.returncode == 0 and msg in json.loads(cli.stdout)["warnings"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["v100x2_nccl_216k.json.gz", "mtia_inference_rank0.json.gz",
                                  "a100_cudagraph_nccl_rank0.json.gz"])
def test_real_traces_pass_the_cheap_duplicate_check(name, monkeypatch):
    """The count of key tokens alone clears a real trace: the exact (slow) read never runs."""
    import tracetui.kineto.duplicates as duplicates

    def never(*a):
        raise AssertionError("the exact read ran on a real trace")

    monkeypatch.setattr(duplicates, "_exact", never)
    assert not [w for w in load_kineto(kineto_path(name)).warnings if w.kind == "duplicate_keys"]
