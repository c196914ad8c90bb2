"""Truncated traces (issue 7, item 2): a Kineto file cut at any byte, plain or gzip, opens
with every complete event before the cut and says how much was lost.

The expected counts come from ``test_robust_oracle.elements_of`` (the standard library's
JSON decoder), never from tracetui itself.  ``bench/fuzz_long.py --mode every-byte`` runs the
same check at every single byte of a trace.
"""

from __future__ import annotations

import gzip
import zlib
from collections import Counter

import pytest
from shared_traces import KINETO
from test_robust_oracle import (
    assert_accounted,
    assert_links_valid,
    elements_of,
    expected_accounting,
)

from tracetui.errors import TraceError, TraceFileError, TraceFormatError
from tracetui.kineto import load_kineto

NAME = "mi250_minitoy_train.json.gz"


@pytest.fixture(scope="module")
def original():
    data = gzip.open(KINETO / NAME).read()
    return data, elements_of(data)


def _event_names(values) -> Counter:
    c: Counter = Counter()
    for v in values:
        if isinstance(v, dict) and v.get("ph") not in ("M", "s", "f", "t", "E"):
            c[v.get("name", "")] += 1
    return c


def check_cut(tmp_path, data: bytes, el, cut: int, suffix: bytes = b"", gz: bool = False):
    """Load ``data[:cut] + suffix`` and check it against the oracle; return the trace or the error."""
    cut_data = data[:cut]
    p = tmp_path / ("cut.json.gz" if gz else "cut.json")
    p.write_bytes(gzip.compress(cut_data + suffix, compresslevel=1) if gz else cut_data + suffix)
    k = el.complete_before(cut)
    try:
        kt = load_kineto(p)
    except TraceError as exc:
        # only a cut before the first complete event may fail, and it says so: before the
        # traceEvents array even starts, or inside its first event ("no events")
        assert k == 0, (cut, str(exc))
        assert isinstance(exc, TraceFormatError), str(exc)
        before_array = "before the traceEvents array" in str(exc) or "file is empty" in str(exc) and cut == 0
        assert before_array if cut <= el.array_start else (
            f"no events: the file is cut short at byte {len(cut_data.rstrip()):,}"
            f"{' (decompressed)' if gz else ''}, before its first complete event" in str(exc)), str(exc)
        assert str(exc).startswith(str(p)) and "\n" not in str(exc)
        return exc
    kept = el.values[:k]
    assert_accounted(kt, kept)
    assert_links_valid(kt)
    assert Counter(kt.names[i] for i in kt.name_id.tolist()) == _event_names(kept)
    whole = cut >= len(data.rstrip())
    trunc = [w for w in kt.warnings if w.kind == "truncated"]
    if whole:
        assert trunc == [] and kt.bytes_lost == 0
    else:
        assert len(trunc) == 1, [w.message for w in kt.warnings]
        msg = trunc[0].message
        if k == len(el.values):  # cut in the keys after the array: all events kept
            assert f"kept the {k:,} complete events" in msg
        else:
            where = f"{len(cut_data.rstrip()):,}" + (" (decompressed)" if gz else "")
            lost = f", dropped the last {kt.bytes_lost:,} bytes (an incomplete event)" if kt.bytes_lost else ""
            assert msg == f"file is cut short at byte {where}: kept the {k:,} complete events before the cut{lost}"
            assert 0 <= kt.bytes_lost <= cut - (el.ends[k - 1] if k else el.array_start)
    return kt


@pytest.mark.slow
def test_cuts_across_the_whole_file(tmp_path, original):
    data, el = original
    assert len(el.values) == 220 and el.closed
    cuts = list(range(0, len(data) + 1, 211)) + [len(data) - 1, len(data)]
    failed = 0
    for cut in cuts:
        if isinstance(check_cut(tmp_path, data, el, cut), TraceError):
            failed += 1
    # failures only before the first complete event (the header is ~1.4 kB of deviceProperties)
    before_array = [c for c in cuts if c <= el.array_start]
    assert failed == len([c for c in cuts if el.complete_before(c) == 0]) > len(before_array) > 0


@pytest.mark.slow
def test_every_byte_around_two_events(tmp_path, original):
    """Each cut inside, at the edges of, and between events (strings, numbers, escapes)."""
    data, el = original
    lo, hi = el.ends[100] - 3, el.ends[101] + 3
    for cut in range(lo, hi):
        kt = check_cut(tmp_path, data, el, cut)
        assert kt.n_events + len(kt.flows.cat) + expected_accounting(el.values[:el.complete_before(cut)])["meta"] \
            == el.complete_before(cut)


def test_cut_then_nul_padding_is_the_same_as_the_cut(tmp_path, original):
    data, el = original
    for cut in (el.ends[50] + 17, el.ends[150] - 3):
        a = check_cut(tmp_path, data, el, cut)
        b = check_cut(tmp_path, data, el, cut, suffix=b"\x00" * 4096)
        assert a.n_events == b.n_events and a.bytes_lost == b.bytes_lost


def test_cut_inside_a_gzip_stream(tmp_path, original):
    data, el = original
    comp = gzip.compress(data)
    for ccut in list(range(40, len(comp), 251)) + [len(comp) - 1, len(comp) - 4]:
        p = tmp_path / "c.json.gz"
        p.write_bytes(comp[:ccut])
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        prefix = d.decompress(comp[:ccut])  # what any decoder can get back
        try:
            kt = load_kineto(p)
        except (TraceFormatError, TraceFileError) as exc:
            assert len(prefix) <= el.array_start, (ccut, str(exc))
            continue
        k = el.complete_before(len(prefix))
        assert_accounted(kt, el.values[:k])
        msgs = [w.message for w in kt.warnings if w.kind == "truncated"]
        assert msgs[0].startswith(f"gzip stream ends early (the file was cut off after {ccut:,} compressed bytes)")
        if k < len(el.values):
            assert f"kept the {k:,} complete events before the cut" in msgs[1]


def test_gzip_cut_inside_its_header_is_a_clear_error(tmp_path, original):
    p = tmp_path / "h.json.gz"
    p.write_bytes(gzip.compress(original[0])[:8])
    with pytest.raises(TraceFileError, match=r"gzip stream ends after 8 bytes, before any data could be "
                                             r"decompressed$"):
        load_kineto(p)


def test_corrupt_gzip_data_keeps_what_decompressed_and_says_so(tmp_path, original):
    data, el = original
    comp = bytearray(gzip.compress(data))
    comp[len(comp) // 2] ^= 0x55
    p = tmp_path / "bad.json.gz"
    p.write_bytes(bytes(comp))
    kt = load_kineto(p)
    gz, cut = [w.message for w in kt.warnings if w.kind == "truncated"]
    assert gz.startswith("gzip data is corrupt near compressed byte ") and "the rest of the file is lost" in gz
    assert cut.startswith("file is damaged at byte ") and "(decompressed): kept the " in cut
    assert 0 < kt.n_events < el.complete_before(len(data))
    assert_links_valid(kt)


def test_complete_document_followed_by_other_bytes(tmp_path, original):
    data, el = original
    for tail, what in ((data, "a second copy"), (b"garbage\n", "garbage")):
        p = tmp_path / "t.json"
        p.write_bytes(data + tail)
        kt = load_kineto(p)
        assert_accounted(kt, el.values)
        (w,) = [w for w in kt.warnings if w.kind == "truncated"]
        assert w.message == (f"{len(tail.rstrip()):,} bytes after the end of the JSON document were ignored "
                             f"(from byte {len(data):,}); kept all 220 events"), what


def test_corrupt_byte_in_the_middle_is_an_error_not_a_silent_prefix(tmp_path, original):
    data, _ = original
    pos = data.index(b'"ph"', 30000)
    bad = data[:pos] + b"}" + data[pos + 1:]
    p = tmp_path / "mid.json"
    p.write_bytes(bad)
    with pytest.raises(TraceFormatError) as ei:
        load_kineto(p)
    at = int(ei.value.position.split()[1])
    assert pos <= at <= pos + 1 and str(ei.value).startswith(f"{p} at byte {at}: not valid JSON (JSON is malformed")
    p = tmp_path / "mid.json.gz"
    p.write_bytes(gzip.compress(bad))
    with pytest.raises(TraceFormatError, match=rf"at byte {at} \(decompressed\): not valid JSON"):
        load_kineto(p)


def test_bare_array_form_cut(tmp_path, original):
    import json

    evs = json.loads(original[0])["traceEvents"]
    data = json.dumps(evs).encode()
    el = elements_of(data)
    for cut in (1, el.ends[10] + 3, el.ends[200] - 2, len(data) - 1):
        check_cut(tmp_path, data, el, cut)


def test_gzip_members_padding_and_trailing_bytes(tmp_path, original):
    data, el = original
    half = len(data) // 2
    two = gzip.compress(data[:half]) + gzip.compress(data[half:])
    cases = {"members": (two, []), "padding": (gzip.compress(data) + b"\x00" * 1000, []),
             "junk": (gzip.compress(data) + b"not gzip", ["8 bytes after the end of the gzip stream are not gzip "
                                                         "data and were ignored"])}
    for name, (raw, expected) in cases.items():
        p = tmp_path / f"{name}.json.gz"
        p.write_bytes(raw)
        kt = load_kineto(p)
        assert_accounted(kt, el.values)
        assert [w.message for w in kt.warnings] == expected, name
