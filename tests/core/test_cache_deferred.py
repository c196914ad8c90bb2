"""A reopened trace reads its big columns on first use (issue 41): the open reads the
entry's header and small fields only; each deferred column is read into private memory and
its checksum checked when first used; a column found damaged then is read again from the
trace file (never a value from damaged bytes), or, when the file changed too, one line says so."""

from __future__ import annotations

import copy
import os
import shutil

import pytest
from cache_helpers import assert_same_trace, cache_home  # noqa: F401 - the autouse fixture: a cache folder per test
from shared_traces import kineto_path

import tracetui.io.colfile as colfile
import tracetui.store.traces as cache
from tracetui.errors import TraceFileError
from tracetui.kineto.persist import DEFERRED, read_header


@pytest.fixture
def bert(tmp_path, monkeypatch):
    """A copy of a shared trace (it may be edited), its fresh load, every column deferred."""
    p = str(tmp_path / "bert.json.gz")
    shutil.copy(kineto_path("h100_bert_inference.json.gz"), p)
    fresh = cache.load_cached([p]).kineto
    monkeypatch.setattr(colfile, "DEFER_BYTES", 1)
    return p, fresh


def _entry_fds(p: str) -> int:
    entry = os.path.realpath(cache.entry_path(p))
    fds = "/proc/self/fd"
    return sum(1 for fd in os.listdir(fds) if os.path.realpath(os.path.join(fds, fd)) == entry)


def _flip(p: str, field: str) -> None:
    """Flip a byte of ``field``'s first section, in place (the open file sees it)."""
    entry = cache.entry_path(p)
    enc = read_header(entry)["fields"][field]
    sec = read_header(entry)["sections"][colfile._sections_of(enc, [])[0]]
    with open(entry, "r+b") as fh:
        fh.seek(sec["off"] + sec["nbytes"] // 2)
        b = fh.read(1)
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([b[0] ^ 0x40]))


def test_the_open_reads_no_column_and_each_is_read_once_on_use(bert):
    p, fresh = bert
    kt = cache.read_cached(p)
    deferred = set(kt.__dict__["_deferred"])
    assert {"ts", "dur", "parent", "args_blob", "pids", "flows"} <= deferred <= DEFERRED
    assert _entry_fds(p) == 1
    assert kt.n_events == fresh.n_events and "ts" not in kt.__dict__["_deferred"]
    assert_same_trace(fresh, kt)
    assert not kt.__dict__["_deferred"] and _entry_fds(p) == 0  # every field read: the entry is closed
    kt2 = cache.read_cached(p)
    del kt2
    assert _entry_fds(p) == 0  # a trace dropped before reading everything closes its entry too


def test_a_column_damaged_after_the_open_comes_from_the_file(bert):
    p, fresh = bert
    kt = cache.read_cached(p)
    _flip(p, "dur")
    assert_same_trace(fresh, kt)
    notes = [w.message for w in kt.warnings if w.kind == "cache"]
    assert len(notes) == 1 and "checksum" in notes[0] and "read again from the file" in notes[0]
    again = cache.read_cached(p)  # the entry was written again from the file
    assert again is not None and not [w for w in again.warnings if w.kind == "cache"]
    assert_same_trace(fresh, again)


def test_a_damaged_column_of_a_changed_file_is_one_line(bert):
    p, _ = bert
    kt = cache.read_cached(p)
    _flip(p, "args_blob")
    os.utime(p, ns=(0, 0))  # the trace file is not the one the entry was made from any more
    with pytest.raises(TraceFileError, match="changed since it was opened"):
        kt.args(0)


def test_a_copy_of_a_reopened_trace_reads_every_column(bert):
    p, fresh = bert
    kt = copy.copy(cache.read_cached(p))
    assert "_deferred" not in kt.__dict__
    assert_same_trace(fresh, kt)
