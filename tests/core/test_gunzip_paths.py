"""Intact gzip files are inflated by ISA-L (io/inflate._gunzip_whole); cut or corrupt ones fall
back to the zlib path, which keeps what precedes the damage.  Both give the same bytes."""

from __future__ import annotations

import gzip

from shared_traces import kineto_path

from tracetui.io import files, inflate
from tracetui.io.limits import Budget


def _budget(raw) -> Budget:
    return Budget("t", len(raw), None)


def test_isal_and_zlib_paths_give_the_same_bytes_on_a_real_trace():
    raw = kineto_path("v100x2_nccl_216k.json.gz").read_bytes()
    fast = inflate._gunzip_whole("t", raw, _budget(raw))
    slow = inflate._gunzip("t", raw, _budget(raw))
    assert fast is not None
    assert fast[0].written + fast[0].pending_len == 53_733_385  # every inflated byte
    assert fast[0].finish() == slow[0].finish()
    assert (fast[1].used, fast[1].trailing, fast[1].truncated) == (slow[1].used, slow[1].trailing, False)


def test_members_and_zero_padding_are_read_by_the_fast_path():
    raw = gzip.compress(b'{"traceEvents": [') + gzip.compress(b"]}") + b"\0" * 16
    got = inflate._gunzip_whole("t", raw, _budget(raw))
    assert got is not None and got[0].finish() == (b'{"traceEvents": []}', 0) and got[1].trailing == 0


def test_a_cut_or_corrupt_file_goes_to_the_zlib_path(tmp_path):
    raw = gzip.compress(b'{"traceEvents": [' + b'{"ph": "X", "name": "a"},' * 5000 + b"]}")
    cut = raw[: len(raw) // 2]
    assert inflate._gunzip_whole("t", cut, _budget(cut)) is None
    path = tmp_path / "cut.json.gz"
    path.write_bytes(cut)
    fb = files.read_trace_bytes(path)
    assert fb.gzip_truncated and fb.data.startswith(b'{"traceEvents": [{"ph": "X"')
    bad = bytearray(raw)
    bad[len(raw) // 2] ^= 0xFF
    assert inflate._gunzip_whole("t", bytes(bad), _budget(bad)) is None
