"""Name search runs headless (tracetui/analysis/search.py): the query language of ``/`` and the
vectorised match over a trace's names, checked against a scan of the raw file."""

from __future__ import annotations

import gzip
import json

import pytest
from shared_traces import ET_DIR, kineto_path, load_shared_kineto

from tracetui.analysis.search import compile_query, et_name_matches, kineto_name_matches
from tracetui.et import load_et


def test_query_language():
    assert compile_query("addmm")("aten::ADDMM")  # lower case: case ignored
    assert not compile_query("Addmm")("aten::addmm")  # an upper-case letter: case counts
    assert compile_query("/^aten::(mm|bmm)$/")("aten::bmm") and not compile_query("/^aten::mm$/")("aten::mmx")
    with pytest.raises(ValueError, match="bad regular expression"):
        compile_query("/(unclosed/")
    with pytest.raises(ValueError, match="empty search"):
        compile_query("   ")


def test_kineto_matches_equal_a_scan_of_the_raw_file():
    path = kineto_path("h100_bert_inference.json.gz")
    raw = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    want = sum(1 for e in raw if e.get("ph") == "X" and e.get("name") == "aten::addmm")
    assert want == 26
    kt = load_shared_kineto("h100_bert_inference.json.gz")
    got = kineto_name_matches(kt, compile_query("/^aten::addmm$/"))
    assert got.size == want and all(kt.name(int(n)) == "aten::addmm" for n in got)
    lanes = kineto_name_matches(kt, compile_query("stream"))  # lane labels match too (GPU 0 stream 7)
    assert any(int(n) >= kt.n_events for n in lanes)


def test_et_matches_equal_a_scan_of_the_raw_file():
    path = ET_DIR / "torch_cpu_pair" / "et.json.gz"
    raw = json.loads(gzip.decompress(path.read_bytes()))["nodes"]
    want = sum(1 for n in raw if n.get("name") == "aten::linear")
    et = load_et(path)
    got = et_name_matches(et, compile_query("/^aten::linear$/"))
    assert want > 0 and got.size == want
