"""Intact gzip files are inflated by ISA-L (io/files._gunzip_whole); cut or corrupt ones fall
back to the zlib path, which keeps what precedes the damage.  Both give the same bytes."""

from __future__ import annotations

import gzip

from shared_traces import kineto_path

from tracetui.io import files


def test_isal_and_zlib_paths_give_the_same_bytes_on_a_real_trace():
    raw = kineto_path("v100x2_nccl_216k.json.gz").read_bytes()
    fast = files._gunzip_whole("t", raw, None)
    slow = files._gunzip("t", raw, None)
    assert fast is not None and fast.data == slow.data
    assert len(fast.data) == 53_733_385
    assert (fast.used, fast.trailing, fast.truncated) == (slow.used, slow.trailing, False)


def test_members_and_zero_padding_are_read_by_the_fast_path():
    raw = gzip.compress(b'{"traceEvents": [') + gzip.compress(b"]}") + b"\0" * 16
    got = files._gunzip_whole("t", raw, None)
    assert got is not None and got.data == b'{"traceEvents": []}' and got.trailing == 0


def test_a_cut_or_corrupt_file_goes_to_the_zlib_path(tmp_path):
    raw = gzip.compress(b'{"traceEvents": [' + b'{"ph": "X", "name": "a"},' * 5000 + b"]}")
    cut = raw[: len(raw) // 2]
    assert files._gunzip_whole("t", cut, None) is None
    path = tmp_path / "cut.json.gz"
    path.write_bytes(cut)
    fb = files.read_trace_bytes(path)
    assert fb.gzip_truncated and fb.data.startswith(b'{"traceEvents": [{"ph": "X"')
    bad = bytearray(raw)
    bad[len(raw) // 2] ^= 0xFF
    assert files._gunzip_whole("t", bytes(bad), None) is None
