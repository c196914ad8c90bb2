"""recover_truncated_json: real trace files cut at many byte positions.

The ground truth is computed independently of the recovery code: Python's own JSON decoder
(``raw_decode``) walks the elements of the full document and records the byte where each
one ends, so "elements fully present before the cut" is simply ``ends <= cut``.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

import msgspec
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracetui.errors import TraceFormatError
from tracetui.io import jsonrecover
from tracetui.io.jsonrecover import recover_truncated_json

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"

CASES = [
    ("kineto/cpu_only_small.json.gz", "traceEvents"),
    ("kineto/a100_triton.json.gz", "traceEvents"),
    ("kineto/mi250_minitoy_train.json.gz", "traceEvents"),
    ("kineto/old_categories_inference.json.gz", "traceEvents"),  # distributedInfo after the array
    ("kineto/h100_bert_inference.json.gz", "traceEvents"),  # big metadata object before it
    ("kineto/large_integer_values.json.gz", "traceEvents"),  # > 64-bit integers
    ("et/hta_simple_add_cuda_pair/et.json.gz", "nodes"),
    ("et/et_only/chakra_test_schema_1.0.2.json.gz", "nodes"),  # escaped quotes in a string
    ("et/et_only/pt2_compiled_schema_1.1.1.json.gz", "nodes"),
    ("et/param_dlrm_rank0_cuda_pair/et.json.gz", "nodes"),  # flat layout, 845 kB
]

_WS = re.compile(r"[ \t\r\n]*")


class Truth:
    """Byte offsets of a document's structure, found by the stdlib JSON decoder."""

    def __init__(self, data: bytes, key: str):
        self.data = data
        text = data.decode("latin-1")  # one char per byte: offsets are byte offsets
        dec = json.JSONDecoder()
        self.full = msgspec.json.decode(data)
        # top-level pairs: (key, value end) in file order, and where the array starts
        self.pairs: list[tuple[str, int, bool]] = []
        i = _WS.match(text, text.index("{") + 1).end()
        self.array_start = -1
        while text[i] != "}":
            k, i = dec.raw_decode(text, i)
            i = _WS.match(text, i).end()
            assert text[i] == ":"
            i = _WS.match(text, i + 1).end()
            if k == key:
                self.array_start = i
            value_start = i
            _, i = dec.raw_decode(text, i)
            self.pairs.append((k, i, text[value_start] in "-0123456789tfn"))
            i = _WS.match(text, i).end()
            if text[i] == ",":
                i = _WS.match(text, i + 1).end()
        self.doc_end = i + 1
        # element ends inside the array
        self.ends: list[int] = []
        i = _WS.match(text, self.array_start + 1).end()
        while text[i] != "]":
            _, i = dec.raw_decode(text, i)
            self.ends.append(i)
            i = _WS.match(text, i).end()
            if text[i] == ",":
                i = _WS.match(text, i + 1).end()
        self.array_close = i
        self.key = key

    def expected(self, cut: int) -> tuple[dict, int, int]:
        """(expected document, elements kept, bytes lost) for the data cut at ``cut``."""
        content_end = len(self.data[:cut].rstrip())
        if cut <= self.array_close:
            kept = sum(1 for e in self.ends if e <= cut)
            last = self.ends[kept - 1] if kept else self.array_start + 1
            doc = {k: self.full[k] for k, end, _ in self.pairs if end <= self.array_start}
            doc[self.key] = self.full[self.key][:kept]
            return doc, kept, max(content_end - last, 0)
        doc = {}
        last = self.array_close + 1
        for k, end, is_scalar in self.pairs:
            # a number at the very end of the data may be cut short: not complete
            if end < cut or (end == cut and not is_scalar) or cut >= self.doc_end:
                doc[k] = self.full[k]
                if end > self.array_close:
                    last = end
        if cut >= self.doc_end:
            last = self.doc_end
        return doc, len(self.ends), max(content_end - last, 0)


def _load(path: str) -> bytes:
    return gzip.open(TRACES / path).read()


def _cut_positions(data: bytes, truth: Truth, rng: random.Random) -> list[int]:
    """Random cuts plus adversarial ones: in strings, numbers, after commas/braces, escapes."""
    n = len(data)
    each = 4 if n < 1_000_000 else 2  # fewer cuts on the big files keep the test fast
    lo = truth.array_start + 1
    picks = {lo, lo + 1, truth.array_close, truth.array_close + 1, n - 1, n}
    picks.update(rng.randrange(lo, n + 1) for _ in range(6 * each))
    patterns = [
        rb'"[a-zA-Z]',  # just inside a string
        rb"[0-9]{2}",  # inside a number
        rb",",  # right after a comma
        rb"\}",  # right after a closing brace
        rb"\]",  # right after a closing bracket
        rb'\\"',  # between a backslash and the quote it escapes
        rb'": \{',  # entering a nested object (args, attrs)
    ]
    for pat in patterns:
        hits = [m.start() + 1 for m in re.finditer(pat, data[lo:])]
        picks.update(lo + h for h in rng.sample(hits, min(each, len(hits))))
    # just before and after element ends
    for e in rng.sample(truth.ends, min(each, len(truth.ends))):
        picks.update((e - 1, e, e + 1, e + 2))
    return sorted(p for p in picks if lo <= p <= n)


def _parse(data: bytes):
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        # orjson rejects integers above 64 bits; the bytes must still be valid JSON
        return msgspec.json.decode(data)


@pytest.mark.slow
@pytest.mark.parametrize("path,key", CASES, ids=[c[0].split("/")[-1] for c in CASES])
def test_real_files_cut_everywhere(path: str, key: str) -> None:
    data = _load(path)
    truth = Truth(data, key)
    rng = random.Random(path)
    for cut in _cut_positions(data, truth, rng):
        rec = recover_truncated_json(data[:cut], key, path)
        doc, kept, lost = truth.expected(cut)
        got = _parse(rec.data)
        assert rec.elements_kept == kept, (cut, rec.elements_kept, kept)
        assert len(got[key]) == kept
        assert got == doc, cut
        assert rec.bytes_lost == lost, (cut, rec.bytes_lost, lost)


def test_orjson_parses_result_of_real_et_cut() -> None:
    data = _load("et/hta_simple_add_cuda_pair/et.json.gz")
    rec = recover_truncated_json(data[: len(data) // 2], "nodes", "et.json")
    doc = orjson.loads(rec.data)
    assert doc["schema"] == "1.0.1" and doc["pid"] == 563677
    assert len(doc["nodes"]) == rec.elements_kept > 0
    assert "finish_ts" not in doc


@pytest.mark.parametrize("chunk", [7, 64, 1000])
def test_chunk_boundaries_do_not_matter(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """The numpy scan carries string/depth state across chunks: tiny chunks, same result."""
    data = _load("et/et_only/chakra_test_schema_1.0.2.json.gz")
    truth = Truth(data, "nodes")
    # the escaped quotes sit in node 3, within the first few kB
    escaped = data.index(b'\\"')
    assert escaped < 3000
    rng = random.Random(chunk)
    cuts = sorted({escaped, escaped + 1, escaped + 2, *(rng.randrange(truth.array_start + 1, 6000) for _ in range(12))})
    expected = [recover_truncated_json(data[:c], "nodes", "x") for c in cuts]
    monkeypatch.setattr(jsonrecover, "CHUNK_BYTES", chunk)
    for c, want in zip(cuts, expected):
        assert recover_truncated_json(data[:c], "nodes", "x") == want


def test_cut_before_array_raises() -> None:
    data = _load("kineto/cpu_only_small.json.gz")
    start = data.index(b'"traceEvents"')
    for cut in (0, 1, 10, start, start + 5):
        with pytest.raises(TraceFormatError, match=f"file ends at byte {cut} before the traceEvents array"):
            recover_truncated_json(data[:cut], "traceEvents", "cpu_only_small.json")


def test_missing_key_and_not_json() -> None:
    with pytest.raises(TraceFormatError, match="has no nodes array"):
        recover_truncated_json(b'{"traceEvents": [1, 2]}', "nodes", "k.json")
    with pytest.raises(TraceFormatError, match="not JSON"):
        recover_truncated_json(b"hello", "nodes", "k.json")
    with pytest.raises(TraceFormatError, match="object, not an array"):
        recover_truncated_json(b'{"a": 1}', None, "k.json")


@pytest.mark.parametrize(
    "cut_doc,key,expected,kept",
    [
        (b'[1, 2, 3', None, [1, 2], 2),  # 3 may be the start of 30
        (b'[1, 2, 3 ', None, [1, 2, 3], 3),
        (b'[true, fals', None, [True], 1),
        (b'["a\\\\", "b', None, ["a\\"], 1),  # escaped backslash, then a real quote
        (b'["x\\"],[", "y', "k", ['x"],['], 1),  # bare array even though a key is given
        (b'{"k": [{"s": "}],{\\"]"}, {"t', "k", {"k": [{"s": '}],{"]'}]}, 1),
        (b'{"a": {"b": [1]}, "k": [[1, [2]], [3', "k", {"a": {"b": [1]}, "k": [[1, [2]]]}, 1),
        (b'{"k": [], "z": 5', "k", {"k": []}, 0),
        (b'{"k": [{}], "z": "s", "y": {"q"', "k", {"k": [{}], "z": "s"}, 1),
    ],
)
def test_small_documents(cut_doc: bytes, key: str | None, expected, kept: int) -> None:
    rec = recover_truncated_json(cut_doc, key, "small.json")
    assert orjson.loads(rec.data) == expected
    assert rec.elements_kept == kept


# -- property test: any JSON array of objects, any formatting, any cut ----------------------

_text = st.text(alphabet=st.sampled_from(list('ab"\\{}[],: \n\u00e9')), max_size=8)
_scalar = st.one_of(st.integers(-(10**20), 10**20), st.booleans(), st.none(), _text, st.floats(allow_nan=False,
                                                                                               allow_infinity=False))
_value = st.recursive(_scalar, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                     st.dictionaries(_text, kids, max_size=3)), max_leaves=8)
_element = st.dictionaries(_text, _value, max_size=4)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    elements=st.lists(_element, max_size=6),
    indent=st.sampled_from([None, 1, 4]),
    cut_frac=st.floats(0, 1),
)
def test_property_any_cut(elements: list, indent: int | None, cut_frac: float) -> None:
    doc = {"schema": "x", "nodes": elements, "finish_ts": 7}
    data = json.dumps(doc, indent=indent).encode()
    truth = Truth(data, "nodes")
    cut = truth.array_start + 1 + int(cut_frac * (len(data) - truth.array_start - 1))
    rec = recover_truncated_json(data[:cut], "nodes", "p.json")
    want, kept, _ = truth.expected(cut)
    assert rec.elements_kept == kept
    assert json.loads(rec.data) == want
