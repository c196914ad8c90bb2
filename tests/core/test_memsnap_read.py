"""Reading a CUDA memory snapshot safely (docs/security.md): a pickle that would run code is
refused in one line and nothing in it runs; protocols 2-5; a truncated file, a file that is
no snapshot, deep nesting, odd content and memory caps each get one line or a counted warning.
Recognition by content (the formats wing)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest
from memsnap_gen import MIB, basic, write

from tracetui import formats
from tracetui.cli import main
from tracetui.errors import TraceFormatError, TraceTooLargeError
from tracetui.io.formats import FileRole, Recognition, read_head
from tracetui.memsnap import sniff
from tracetui.session import load_trace


class _WritesAFile:
    """What ``pickle.load`` would call: ``open(path, "w")`` (it creates the file)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


class _RunsAShell:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def _malicious(tmp_path, payload_cls, protocol: int):
    target = tmp_path / f"written-{payload_cls.__name__}-{protocol}"
    snap = basic().snapshot()
    snap["device_traces"][0][3]["frames"] = [payload_cls(str(target))]  # deep inside, after plain data
    path = tmp_path / f"evil-{payload_cls.__name__}-{protocol}.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=protocol))
    return path, target


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize("payload", [_WritesAFile, _RunsAShell])
def test_a_pickle_that_would_run_code_is_refused_and_nothing_runs(tmp_path, capsys, payload, protocol):
    path, target = _malicious(tmp_path, payload, protocol)
    assert formats.detect(path) == formats.FileKind.MEMSNAP  # recognised as a snapshot: its head is one
    with pytest.raises(TraceFormatError, match="refused: a snapshot holds plain data only") as err:
        load_trace(path)
    named = f"{open.__module__}.open" if payload is _WritesAFile else f"{os.system.__module__}.system"
    assert f"the pickle asks for {named}: refused" in str(err.value)
    assert not target.exists()
    for cmd in (["memory"], ["info"], ["summary"]):
        assert main([*cmd, str(path), "--no-cache"]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and "refused: a snapshot holds plain data only" in lines[0]
    assert not target.exists()


def test_the_real_pickle_load_would_have_written_the_file(tmp_path):
    """The payload is real: ``pickle.load`` (in a child process) creates the file."""
    path, target = _malicious(tmp_path, _WritesAFile, 4)
    subprocess.run([sys.executable, "-c", f"import pickle; pickle.load(open({str(path)!r}, 'rb'))"], check=True)
    assert target.exists()


def test_persistent_ids_and_extension_codes_are_refused(tmp_path):
    class P(pickle.Pickler):
        def persistent_id(self, obj):
            return "ext" if obj == "secret" else None

    import io

    buf = io.BytesIO()
    P(buf, protocol=4).dump({"segments": ["secret"], "device_traces": []})
    path = tmp_path / "pid.pickle"
    path.write_bytes(buf.getvalue())
    with pytest.raises(TraceFormatError, match="a persistent id: refused"):
        load_trace(path)
    ext = tmp_path / "ext.pickle"  # EXT1 code 1: looked up through find_class, refused there
    ext.write_bytes(b"\x80\x02}q\x00(X\x08\x00\x00\x00segmentsq\x01]q\x02\x82\x01au.")
    with pytest.raises(TraceFormatError):
        load_trace(ext)


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_every_protocol_reads_the_same(tmp_path, protocol):
    snap = basic().snapshot()
    kt = load_trace(write(snap, tmp_path / f"p{protocol}.pickle", protocol))
    h = kt.snapshot.history
    assert kt.snapshot.protocol == protocol
    assert h.n == len(snap["device_traces"][0])
    assert h.size.tolist() == [e["size"] for e in snap["device_traces"][0]]
    assert kt.snapshot.blocks.n == sum(len(s["blocks"]) for s in snap["segments"])
    assert kt.warnings == []


def test_recognised_by_content_and_by_name(tmp_path):
    snap = write(basic().snapshot(), tmp_path / "no_suffix.bin")
    assert sniff.recognise(read_head(snap)) == Recognition.YES
    assert formats.detect(snap).role == FileRole.MEMORY
    other = tmp_path / "list.pickle"
    other.write_bytes(pickle.dumps([1, 2, 3], protocol=4))
    assert sniff.recognise(read_head(other)) == Recognition.MAYBE
    with pytest.raises(TraceFormatError, match="a pickle of plain data, but a list, not a CUDA memory snapshot"):
        load_trace(other)
    keys = tmp_path / "dict.pkl"
    keys.write_bytes(pickle.dumps({"a": 1}, protocol=5))
    with pytest.raises(TraceFormatError, match="no 'segments' or 'device_traces' key"):
        load_trace(keys)
    old = tmp_path / "p0.pickle"
    old.write_bytes(pickle.dumps({"segments": []}, protocol=0))
    with pytest.raises(TraceFormatError, match="not a pickle|protocol"):
        load_trace(old)
    json_file = tmp_path / "x.json"
    json_file.write_text('{"traceEvents": []}')
    assert sniff.recognise(read_head(json_file)) == Recognition.NO


def test_a_truncated_snapshot_says_where_the_file_ends(tmp_path, capsys):
    data = write(basic().snapshot(), tmp_path / "whole.pickle").read_bytes()
    for cut in (3, 40, len(data) // 2, len(data) - 1):
        path = tmp_path / f"cut{cut}.pickle"
        path.write_bytes(data[:cut])
        with pytest.raises(TraceFormatError, match=rf"file ends at byte {cut:,}.*\(truncated snapshot\)"):
            load_trace(path)
    assert main(["memory", str(path), "--no-cache"]) == 2
    assert "(truncated snapshot)" in capsys.readouterr().err


@pytest.mark.slow
def test_a_cut_at_every_byte_is_one_line(tmp_path):
    data = write(basic().snapshot(), tmp_path / "whole.pickle").read_bytes()
    path = tmp_path / "cut.pickle"
    for cut in range(len(data)):
        path.write_bytes(data[:cut])
        with pytest.raises(TraceFormatError):
            load_trace(path)


def _nested(depth: int) -> object:
    v: object = []
    for _ in range(depth):
        v = [v]
    return v


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deep_nesting_is_plain_data_read_without_recursion(tmp_path, depth):
    """100 and 100,000 nested lists where segments, entries and frames are: the C unpickler
    builds them without recursion, the reader counts them as what they are not, and the list
    is freed without a crash.  (Written without pickle.dump, which recurses.)"""
    body = b"]" * (depth + 1) + b"a" * depth  # EMPTY_LIST x (depth + 1), then APPEND x depth

    def text(s: bytes) -> bytes:
        return b"X" + len(s).to_bytes(4, "little") + s

    def data(frames: bytes) -> bytes:
        entry = b"}(" + text(b"action") + text(b"alloc") + text(b"size") + b"K\x01" + text(b"frames") + frames + b"u"
        return (b"\x80\x02}(" + text(b"segments") + body + text(b"device_traces") + b"]](" + entry + b"]ea" + b"u.")

    path = tmp_path / f"deep{depth}.pickle"
    path.write_bytes(data(b"]"))
    kt = load_trace(path)
    assert "1 segments that are not dicts" in " ".join(w.message for w in kt.warnings)
    assert kt.snapshot.history.n == 1  # the entry; the empty list after it is not a dict: counted
    assert "1 history entries that are not dicts" in " ".join(w.message for w in kt.warnings)
    frames = tmp_path / f"deep_frames{depth}.pickle"
    frames.write_bytes(data(body))
    kt = load_trace(frames)
    assert "1 frames that are not dicts" in " ".join(w.message for w in kt.warnings)


def test_odd_content_is_counted_not_guessed(tmp_path):
    snap = basic().snapshot()
    tr = snap["device_traces"][0]
    tr[1]["action"] = "defragment"  # unknown action
    tr[2]["size"] = "big"  # not an int
    tr[3]["frames"] = "here"  # not a list
    tr.insert(4, 42)  # not a dict
    tr[6]["time_us"] = tr[0]["time_us"] - 5  # before the entry before it
    snap["segments"][0]["blocks"][0]["state"] = "mystery"
    snap["surprise"] = {"x": 1}
    kt = load_trace(write(snap, tmp_path / "odd.pickle"))
    text = " ".join(w.message for w in kt.warnings)
    for words in ("1 history entries with an action tracetui does not know", "1 history entries without an "
                  "integer size", "1 frames values that are not lists", "1 history entries that are not dicts",
                  "1 blocks with a state tracetui does not know", "a time before the entry before them"):
        assert words in text, (words, text)
    assert kt.snapshot.other_keys == ["surprise"]
    assert kt.snapshot.history.n == len(tr) - 1


def test_long_names_are_kept_cut_with_the_mark_and_counted(tmp_path):
    """A frame name, a file name, an annotation and a setting past 4,096 characters are kept as
    their head and the cut mark every screen draws (tracetui.names.shown), not read whole;
    each distinct one is counted once, however many frames or entries repeat it."""
    from memsnap_gen import STEP, SnapshotBuilder

    long_name = "fwd_" + "x" * 9_996  # 10,000 characters: 5,904 bytes left out
    huge_file = "/h/" + "é" * 1_500_000  # 3,000,003 bytes of UTF-8
    b = basic(SnapshotBuilder())
    odd = b.stack((huge_file, 7, long_name), STEP)
    b.alloc(0, 1 << 40, 512, odd)
    b.alloc(0, (1 << 40) + 512, 512, b.stack((huge_file, 7, long_name), STEP))  # the same texts again
    b.annotate(0, "a" * 5_000, "START")
    snap = b.snapshot()
    snap["allocator_settings"]["PYTORCH_CUDA_ALLOC_CONF"] = "v" * 4_097
    kt = load_trace(write(snap, tmp_path / "long.pickle"))
    frames = kt.snapshot.frames
    texts = [frames.text(f) for f in range(frames.n)]
    # (file, line, name); the file's head is 8,189 bytes of UTF-8: 2,991,814 bytes left out
    assert (huge_file[:4096] + "… (+2.99 MB)", 7, long_name[:4096] + "… (+5.9 kB)") in texts
    assert all(len(file) < 4_200 and len(name) < 4_200 for file, _, name in texts)  # nothing kept whole
    assert kt.snapshot.allocator_settings["PYTORCH_CUDA_ALLOC_CONF"] == "v" * 4096 + "… (+1 B)"
    warned = " ".join(w.message for w in kt.warnings)
    # the frame name, the file name, the annotation, the setting: 4 (the second stack repeats two)
    assert "4 names and setting values longer than 4,096 characters (kept cut, the rest not read)" in warned


def test_bytes_after_the_pickle_are_counted(tmp_path):
    path = write(basic().snapshot(), tmp_path / "t.pickle")
    path.write_bytes(path.read_bytes() + b"junk" * 10)
    assert "40 bytes after the pickle's end were not read" in " ".join(w.message for w in load_trace(path).warnings)


def test_memory_caps(tmp_path, monkeypatch):
    path = write(basic().snapshot(), tmp_path / "b.pickle")
    monkeypatch.setenv("TRACETUI_MEMORY_LIMIT_MB", "0.001")
    with pytest.raises(TraceTooLargeError, match="needs about .* of memory to load but only"):
        load_trace(path)
    # a small file that builds much more than itself: 6 MB of EMPTY_DICT opcodes (a dict each)
    bomb = tmp_path / "bomb.pickle"
    bomb.write_bytes(b"\x80\x04" + b"}" * (6 * MIB) + b".")
    monkeypatch.setenv("TRACETUI_MEMORY_LIMIT_MB", "120")
    with pytest.raises(TraceTooLargeError, match="builds .* of objects from its first .* bytes.*stopped there"):
        load_trace(bomb)


def test_a_snapshot_beside_an_execution_trace_alone_is_refused(tmp_path):
    from shared_traces import ET_DIR

    from tracetui.errors import WrongTraceKindError
    from tracetui.session import open_traces

    snap = write(basic().snapshot(), tmp_path / "s.pickle")
    with pytest.raises(WrongTraceKindError, match="links to a PyTorch profiler trace"):
        open_traces([str(ET_DIR / "param_linear_cuda_pair" / "et.json.gz"), str(snap)])
    with pytest.raises(WrongTraceKindError, match="both files are CUDA memory snapshots"):
        open_traces([str(snap), str(snap)])


def _columns(snap) -> dict:
    h, b = snap.history, snap.blocks
    return {"history": [getattr(h, k).tolist() for k in ("device", "action", "addr", "size", "stream", "time_us",
                                                         "stack", "device_free", "lo")],
            "blocks": b.stack.tolist(), "segments": snap.segments.stack.tolist(),
            "frames": [snap.frames.text(f) for f in range(snap.frames.n)], "stacks": snap.stacks.frames.tolist()}


@pytest.mark.parametrize("protocol", [4, 5])
def test_the_history_read_while_unpickling_equals_the_whole_read(tmp_path, protocol):
    """Protocols 4-5 stream the first device with a history (tracetui/memsnap/stream.py): the
    columns equal those of the file read whole, for generated snapshots (two devices: the second
    is read whole) and the two H200 files; a block in ``segments`` and its ``alloc`` entry share
    one frames list in torch's files, emptied by the stream and still known."""
    from memsnap_gen import two_devices, write_scaled
    from shared_traces import SAMPLES

    from tracetui.memsnap.reader import SnapshotReader, read_snapshot
    from tracetui.memsnap.unpickle import load_plain

    paths = [write(basic().snapshot(), tmp_path / "b.pickle", protocol),
             write(two_devices().snapshot(), tmp_path / "two.pickle", protocol),
             SAMPLES / "h200" / "cuda_transformer_mem_snapshot.pickle", SAMPLES / "h200" / "cuda_oom_snapshot.pickle",
             SAMPLES / "h200" / "cuda_allstacks_p5.pickle"]
    write_scaled(tmp_path / "scaled.pickle", 5000)
    paths.append(tmp_path / "scaled.pickle")
    for path in paths:
        reader = SnapshotReader()
        plain = load_plain(path, stream=reader)
        assert plain.streamed_device == 0, path
        streamed = reader.read(str(path), plain)
        whole = read_snapshot(str(path), load_plain(path))
        assert _columns(streamed) == _columns(whole), path
        assert streamed.warnings == whole.warnings == []


def test_a_layout_that_does_not_stream_is_read_whole(tmp_path, monkeypatch):
    """Protocol 2-3 (no frames), a second ``device_traces`` string (as a frame's name), and a
    change the unpickler does not take: each read whole, the same columns."""
    from tracetui.memsnap import stream as st
    from tracetui.memsnap.reader import SnapshotReader, read_snapshot
    from tracetui.memsnap.unpickle import load_plain

    snap = basic().snapshot()
    snap["segments"][0]["blocks"][0]["frames"] = [{"filename": "device_traces", "line": 1, "name": "device_traces"}]
    for path in (write(basic().snapshot(), tmp_path / "p3.pickle", 3), write(snap, tmp_path / "twice.pickle", 4)):
        reader = SnapshotReader()
        plain = load_plain(path, stream=reader)
        assert plain.streamed_device is None
    assert _columns(reader.read(str(path), plain)) == _columns(read_snapshot(str(path), load_plain(path)))
    path = write(basic().snapshot(), tmp_path / "b.pickle", 4)
    data = path.read_bytes()
    real = st.find_point(open(path, "rb"), len(data))
    inside = data.index(b"/home/me/train.py") + 3  # a point inside a string's bytes: the change breaks the read
    wrong = st.Point(inside, real.frame, real.frame_len, 0) if real.frame < inside < real.frame + 9 + real.frame_len \
        else None
    assert wrong is not None  # the test's snapshot is one frame
    from tracetui.memsnap import unpickle

    monkeypatch.setattr(unpickle, "find_point", lambda fh, size: wrong)
    reader = SnapshotReader()
    plain = load_plain(path, stream=reader)
    assert plain.streamed_device is None
    assert _columns(reader.read(str(path), plain)) == _columns(read_snapshot(str(path), load_plain(path)))
