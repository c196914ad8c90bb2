"""When a file a profiler is writing may be read (tracetui/follow/complete.py, watch.py, growth.py):
the content rules on real traces cut everywhere, and the stat rule on a clock the test moves."""

from __future__ import annotations

import gzip
import os
import zlib

import pytest
from shared_traces import kineto_path
from trace_writer import cuts_after_braces, handler_name

from tracetui.errors import TraceFileError
from tracetui.follow.complete import lines_complete, trace_complete
from tracetui.follow.cycle import pct_change, series_of
from tracetui.follow.growth import Growth
from tracetui.follow.watch import Watcher

BERT_GZ = kineto_path("h100_bert_inference.json.gz").read_bytes()
BERT = gzip.decompress(BERT_GZ)


def _put(folder, name: str, data: bytes) -> str:
    path = os.path.join(folder, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def test_a_gzip_trace_is_complete_only_with_its_whole_stream_and_trailer(tmp_path):
    assert trace_complete(_put(tmp_path, "a.json.gz", BERT_GZ)) is None
    # every cut of the compressed file, the trailer's 8 bytes included, is incomplete
    cuts = list(range(0, len(BERT_GZ), 499)) + list(range(len(BERT_GZ) - 9, len(BERT_GZ)))
    passed = [n for n in cuts if trace_complete(_put(tmp_path, "c.json.gz", BERT_GZ[:n])) is None]
    assert passed == []
    # a trailer whose CRC does not match the data
    bad = bytearray(BERT_GZ)
    bad[-6] ^= 0x01
    assert "does not check" in trace_complete(_put(tmp_path, "crc.json.gz", bytes(bad)))
    # ISIZE (the last 4 bytes) not the length of the data
    bad = bytearray(BERT_GZ)
    bad[-1] ^= 0x01
    assert trace_complete(_put(tmp_path, "isize.json.gz", bytes(bad))) is not None
    # two members, and zero padding after the last one, are whole files
    assert trace_complete(_put(tmp_path, "two.json.gz", BERT_GZ + BERT_GZ)) is None
    assert trace_complete(_put(tmp_path, "pad.json.gz", BERT_GZ + b"\0" * 7)) is None
    # the second member cut short
    assert trace_complete(_put(tmp_path, "two-cut.json.gz", BERT_GZ + BERT_GZ[:100])) is not None


def test_a_json_trace_is_complete_only_when_the_whole_document_parses(tmp_path):
    assert trace_complete(_put(tmp_path, "a.json", BERT)) is None
    assert trace_complete(_put(tmp_path, "nl.json", BERT + b"\n\n")) is None
    # cut right after a '}': the last byte closes an event, not the document
    cuts = cuts_after_braces(BERT, 60)
    assert len(cuts) > 50 and all(BERT[n - 1:n] == b"}" for n in cuts)
    passed = [n for n in cuts if trace_complete(_put(tmp_path, "c.json", BERT[:n])) is None]
    assert passed == []
    assert "not closed" in trace_complete(_put(tmp_path, "open.json", BERT[:len(BERT) // 2]))
    assert trace_complete(_put(tmp_path, "empty.json", b"")) == "empty"
    # an array document, a byte order mark
    assert trace_complete(_put(tmp_path, "arr.json", b'[{"ph": "X"}, {"ph": "X", "args": [1, 2]}]')) is None
    assert trace_complete(_put(tmp_path, "bom.json", b"\xef\xbb\xbf" + BERT)) is None


def test_a_missing_or_special_file_is_said_not_opened(tmp_path):
    with pytest.raises(TraceFileError):
        trace_complete(str(tmp_path / "gone.json"))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(TraceFileError, match="FIFO"):
        trace_complete(str(fifo))  # never blocks waiting for a writer


def test_json_lines_are_complete_at_a_newline(tmp_path):
    assert lines_complete(_put(tmp_path, "d.jsonl", b'{"a": 1}\n{"b": 2}\n')) is None
    assert lines_complete(_put(tmp_path, "d.jsonl", b'{"a": 1}\n{"b": ')) is not None
    assert lines_complete(_put(tmp_path, "d.jsonl.gz", gzip.compress(b'{"a": 1}\n'))) is None


def test_the_handler_names_give_the_series_and_the_time():
    name = handler_name(3)
    assert series_of(name) == ("gpu-box_4242", 1_700_000_003_000_000_000)
    assert series_of("gpu-box_4242.1700000000000000000.pt.trace.json") == ("gpu-box_4242", 1_700_000_000_000_000_000)
    assert series_of("rank0_kineto.json.gz") == ("", None)
    assert series_of("a.b.12.pt.trace.json") == ("", None)  # too short to be time_ns
    assert pct_change(4.0, 6.0) == 50.0 and pct_change(0.0, 1.0) is None and pct_change(None, 1.0) is None


class _Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _watcher(folder, clock) -> Watcher:
    # wall time far before the files' mtimes: no file counts as settled on first sight
    return Watcher(str(folder), suffixes=(".json", ".json.gz"), complete=trace_complete, interval=1.0,
                   stuck_s=60.0, clock=clock, wall=lambda: 0.0)


def test_a_file_is_read_once_its_stat_held_still_over_two_looks_and_it_is_complete(tmp_path):
    clock = _Clock()
    w = _watcher(tmp_path, clock)
    name = handler_name(0)
    half = _put(tmp_path, name, BERT_GZ[: len(BERT_GZ) // 2])
    _put(tmp_path, ".hidden.json.gz", BERT_GZ)  # a writer's temporary file: never read
    _put(tmp_path, "notes.txt", b"x")
    assert w.scan() == ([], [])  # first look: moving
    assert w.moving() == [name]
    ready, notes = w.scan()  # held still, but incomplete: not read, checked once
    assert ready == [] and notes == [] and w.incomplete()[0][0] == name
    with open(half, "ab") as f:
        f.write(BERT_GZ[len(BERT_GZ) // 2:])
    assert w.scan() == ([], [])  # grew: moving again
    ready, _ = w.scan()
    assert [r.name for r in ready] == [name] and ready[0].stat[0] == len(BERT_GZ)
    assert w.after_read(ready[0]) is None
    assert w.scan() == ([], []) and w.moving() == [] and w.incomplete() == []  # read once only


def test_a_folder_of_finished_traces_is_read_at_the_first_look(tmp_path):
    _put(tmp_path, handler_name(0), BERT_GZ)
    _put(tmp_path, handler_name(1), BERT_GZ)
    w = Watcher(str(tmp_path), suffixes=(".json.gz",), complete=trace_complete)  # the real clocks
    old = os.stat(tmp_path / handler_name(0)).st_mtime - 60
    for k in range(2):
        os.utime(tmp_path / handler_name(k), (old, old))
    ready, notes = w.scan()
    assert sorted(r.name for r in ready) == [handler_name(0), handler_name(1)] and notes == []


def test_deleted_stuck_and_changed_while_read_files_are_said_once(tmp_path):
    clock = _Clock()
    w = _watcher(tmp_path, clock)
    a, b, c = handler_name(0), handler_name(1), handler_name(2)
    _put(tmp_path, a, BERT_GZ[:1000])
    _put(tmp_path, b, BERT_GZ[:2000])
    _put(tmp_path, c, BERT_GZ)
    w.scan()
    ready, _ = w.scan()
    assert [r.name for r in ready] == [c]
    os.remove(tmp_path / a)
    _put(tmp_path, c, BERT_GZ + b"\0")  # rewritten while being read
    assert "changed while being read" in w.after_read(ready[0])
    ready, notes = w.scan()  # the stat after the read was the first look: this is the second
    assert notes == [(a, "deleted before it was complete: not read")]
    assert [r.name for r in ready] == [c]  # read again once it held still
    assert w.after_read(ready[0]) is None
    clock.t += 61.0
    _, notes = w.scan()
    assert len(notes) == 1 and notes[0][0] == b and "incomplete" in notes[0][1]
    assert w.scan()[1] == []  # said once
    os.remove(tmp_path / c)
    assert "deleted while being read" in w.after_read(ready[0])


def test_a_growing_file_is_read_again_once_it_grew_and_held_still(tmp_path):
    path = _put(tmp_path, "calls.jsonl", b'{"a": 1}\n')
    g = Growth(path)
    g.read_at(None)
    assert g.poll() == (None, None)  # unchanged since read
    with open(path, "ab") as f:
        f.write(b'{"b": 2}\n{"c": ')
    assert g.poll() == (None, None)  # changed: wait for it to hold still
    assert g.poll() == (None, None)  # still, but the last line is not finished
    with open(path, "ab") as f:
        f.write(b'3}\n')
    assert g.poll() == (None, None)
    st, note = g.poll()
    assert st is not None and note is None and g.grew(st) == len(b'{"b": 2}\n{"c": 3}\n')
    g.read_at(st)
    assert g.poll() == (None, None)
    os.remove(path)
    assert g.poll() == (None, "is gone: the trace shown is its last read")
    assert g.poll() == (None, None)  # said once


def test_zlib_and_the_rule_agree_on_the_stream_end():
    """The rule's inflater (ISA-L) ends a member where zlib does (the loader's fallback)."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    assert d.decompress(BERT_GZ) == BERT and d.eof and d.unused_data == b""


def test_a_json_file_too_large_for_the_memory_left_is_not_read_by_the_check(tmp_path, monkeypatch):
    """The loader refuses it in one line before reading it; the check does not read it either."""
    import tracetui.follow.complete as complete

    path = _put(tmp_path, "big.json", BERT[: len(BERT) // 2] + b"}")  # cut, but ends with '}'
    assert trace_complete(path) is not None
    monkeypatch.setattr(complete, "available_memory_bytes", lambda: len(BERT))
    assert trace_complete(path) is None
