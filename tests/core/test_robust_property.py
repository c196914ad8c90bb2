"""Property tests (issue 7, item 5): random damage to real traces never crashes the loader.

Damage: truncation at any byte (plain and gzip), byte flips (plain and in the gzip stream),
dropped / duplicated / reordered events, deleted fields, fields replaced by values of the wrong
type (bare NaN/Infinity included), events replaced by non-objects.

Invariants, checked on every example:
* the only exception is the tracetui error family (TraceError);
* every complete element of traceEvents is in the model or counted in ``trace.rejected``
  (the expected counts come from the stdlib oracle in ``test_robust_oracle``);
* links never point at missing events, or at events of the wrong kind; the tree is a forest;
* loading is deterministic (same bytes, identical columns).

CI runs ``TRACETUI_FUZZ_EXAMPLES`` examples per test (default 25); ``bench/fuzz_long.py`` runs
thousands.  The Execution Trace half covers truncation and node-level damage.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import tempfile
import zlib
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_traces import ET_DIR, KINETO
from test_robust_oracle import (
    assert_accounted,
    assert_links_valid,
    assert_same_columns,
    elements_of,
)

from tracetui.errors import TraceError, TraceFormatError
from tracetui.kineto import load_kineto

EXAMPLES = int(os.environ.get("TRACETUI_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 100,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

KINETO_FILES = ["mi250_minitoy_train.json.gz", "a100_event_sync_multistream.json.gz",
                "h100_bert_inference.json.gz", "old_categories_inference.json.gz"]
ET_FILES = [ET_DIR / "hta_simple_add_cuda_pair" / "et.json.gz",
            ET_DIR / "et_only" / "chakra_test_schema_1.0.2.json.gz"]

_TMP = Path(tempfile.mkdtemp(prefix="tracetui-fuzz-"))

#: values of the wrong type (or odd values of the right one) for any field
ODD_VALUES = [None, True, 0, -1, 1.5, 2**64 - 1, 2**70, -(2**70), 10**400 // 10**300, "", "x", "NaN", "Infinity",
              "-Infinity", "1e400", "0x1f", "12.5", [], [1, "a"], {}, {"a": {"b": [None]}}, float("nan"),
              float("inf"), "é∂🚀", "[/tmp] [bold]x[/bold]", "a" * 2000]
EVENT_KEYS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "bp", "args", "s"]
ARG_KEYS = ["correlation", "External id", "external id", "stream", "device", "Record function id",
            "Sequence number", "Fwd thread id", "Input Dims"]


@lru_cache(maxsize=None)
def plain(name: str) -> bytes:
    return gzip.open(KINETO / name).read()


@lru_cache(maxsize=None)
def events(name: str) -> tuple:
    return tuple(json.loads(plain(name))["traceEvents"])


def _write(data: bytes, gz: bool) -> Path:
    p = _TMP / ("t.json.gz" if gz else "t.json")
    p.write_bytes(gzip.compress(data, compresslevel=1) if gz else data)
    return p


def _load(p: Path):
    """load_kineto; a TraceError is a legal answer (returned), anything else fails the test."""
    try:
        return load_kineto(p)
    except TraceError as exc:
        msg = str(exc)
        assert msg.startswith(str(p)) and "\n" not in msg
        return exc


def _check_loaded(kt, values) -> None:
    assert_accounted(kt, values)
    assert_links_valid(kt)


# ---------------------------------------------------------------- Kineto: truncation

@FUZZ
@given(st.sampled_from(KINETO_FILES), st.floats(0, 1), st.booleans(), st.sampled_from([b"", b"\x00" * 64, b"\n"]))
def test_truncated_at_any_byte(name, frac, gz, pad):
    data = plain(name)
    cut = int(frac * len(data))
    el = elements_of(data)
    kt = _load(_write(data[:cut] + pad, gz))
    if isinstance(kt, TraceError):
        assert el.complete_before(cut) == 0, str(kt)  # only a cut before the first complete event may fail
        return
    _check_loaded(kt, el.values[:el.complete_before(cut)])
    if cut < len(data.rstrip()):
        assert any(w.kind == "truncated" for w in kt.warnings)


@pytest.mark.slow
@FUZZ
@given(st.sampled_from(KINETO_FILES), st.floats(0, 1))
def test_truncated_gzip_stream(name, frac):
    comp = gzip.compress(plain(name), compresslevel=6)
    ccut = int(frac * len(comp))
    p = _TMP / "c.json.gz"
    p.write_bytes(comp[:ccut])
    prefix = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(comp[:ccut])
    el = elements_of(plain(name))
    kt = _load(p)
    if isinstance(kt, TraceError):
        assert el.complete_before(len(prefix)) == 0, str(kt)  # no complete event: "no events"
        return
    _check_loaded(kt, el.values[:el.complete_before(len(prefix))])


# ---------------------------------------------------------------- Kineto: byte flips

@FUZZ
@given(st.sampled_from(KINETO_FILES), st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), min_size=1,
                                                max_size=4), st.booleans())
def test_byte_flips(name, flips, in_gzip):
    data = bytearray(plain(name))
    if in_gzip:
        comp = bytearray(gzip.compress(bytes(data), compresslevel=6))
        for frac, val in flips:
            comp[min(int(frac * len(comp)), len(comp) - 1)] = val
        p = _TMP / "f.json.gz"
        p.write_bytes(bytes(comp))
        kt = _load(p)
        if not isinstance(kt, TraceError):
            assert_links_valid(kt)
        return
    for frac, val in flips:
        data[min(int(frac * len(data)), len(data) - 1)] = val
    data = bytes(data)
    kt = _load(_write(data, False))
    if isinstance(kt, TraceError):
        return
    el = elements_of(data)
    if not any(w.kind == "truncated" for w in kt.warnings):
        assert el.closed
    _check_loaded(kt, el.values)


# ---------------------------------------------------------------- Kineto: structural damage

def _mutate(evs: list, draw) -> list:
    n_ops = draw(st.integers(1, 6))
    for _ in range(n_ops):
        if not evs:
            break
        op = draw(st.sampled_from(["drop", "dup", "reorder", "delete", "retype", "argtype", "scalar"]))
        i = draw(st.integers(0, len(evs) - 1))
        if op == "drop":
            del evs[i:i + draw(st.integers(1, 20))]
        elif op == "dup":
            evs[i:i] = copy.deepcopy(evs[i:i + draw(st.integers(1, 20))])
        elif op == "reorder":
            j = draw(st.integers(0, len(evs) - 1))
            evs[i], evs[j] = evs[j], evs[i]
            if draw(st.booleans()):
                evs.reverse()
        elif op == "delete" and isinstance(evs[i], dict) and evs[i]:
            evs[i] = dict(evs[i])
            evs[i].pop(draw(st.sampled_from(sorted(evs[i]))))
        elif op == "retype" and isinstance(evs[i], dict):
            evs[i] = dict(evs[i], **{draw(st.sampled_from(EVENT_KEYS)): draw(st.sampled_from(ODD_VALUES))})
        elif op == "argtype" and isinstance(evs[i], dict):
            args = evs[i].get("args")
            args = dict(args) if isinstance(args, dict) else {}
            args[draw(st.sampled_from(ARG_KEYS))] = draw(st.sampled_from(ODD_VALUES))
            evs[i] = dict(evs[i], args=args)
        elif op == "scalar":
            evs[i] = draw(st.sampled_from([5, "event", None, [1, 2], True]))
    return evs


@pytest.mark.slow
@FUZZ
@given(st.sampled_from(KINETO_FILES), st.data())
def test_structural_damage(name, data):
    evs = _mutate(list(events(name)), data.draw)
    raw = json.dumps({"traceEvents": evs, "schemaVersion": 1}).encode()
    gz = data.draw(st.booleans())
    kt = _load(_write(raw, gz))
    values = elements_of(raw).values
    if isinstance(kt, TraceError):
        # a valid document fails only when nothing in it is an event
        assert all(not isinstance(v, dict) for v in values) and values, str(kt)
        return
    _check_loaded(kt, values)


@settings(max_examples=max(EXAMPLES // 3, 5), deadline=None, derandomize=EXAMPLES <= 100,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(KINETO_FILES), st.data())
def test_loading_is_deterministic(name, data):
    evs = _mutate(list(events(name)), data.draw)
    raw = json.dumps({"traceEvents": evs}).encode()
    cut = data.draw(st.integers(len(raw) // 2, len(raw)))
    p = _write(raw[:cut], False)
    a, b = _load(p), _load(p)
    if isinstance(a, TraceError):
        assert isinstance(b, TraceError) and str(a) == str(b)
    else:
        assert_same_columns(a, b)


# ---------------------------------------------------------------- Execution Traces

@lru_cache(maxsize=None)
def et_plain(path: Path) -> bytes:
    return gzip.open(path).read()


def _load_et(p: Path):
    from tracetui.et import load_et

    try:
        et = load_et(p)
    except TraceError as exc:
        assert str(exc).startswith(str(p)) and "\n" not in str(exc)
        return exc
    n = len(et)
    assert et.parent.shape == (n,) and ((et.parent >= -1) & (et.parent < n)).all()
    has = et.parent >= 0
    assert (et.depth[has] == et.depth[et.parent[has]] + 1).all()
    for pos in range(0, n, max(n // 20, 1)):
        et.node(pos)  # args decode lazily: must not fail either
    return et


@FUZZ
@given(st.sampled_from(ET_FILES), st.floats(0, 1), st.booleans())
def test_et_truncated_at_any_byte(path, frac, gz):
    data = et_plain(path)
    cut = int(frac * len(data))
    el = elements_of(data, "nodes")
    p = _TMP / ("e.json.gz" if gz else "e.json")
    p.write_bytes(gzip.compress(data[:cut], compresslevel=1) if gz else data[:cut])
    et = _load_et(p)
    if isinstance(et, TraceError):
        assert cut <= el.array_start, str(et)
        return
    assert len(et) == el.complete_before(cut)


@FUZZ
@given(st.sampled_from(ET_FILES), st.data())
def test_et_node_damage(path, data):
    doc = json.loads(et_plain(path))
    nodes = doc["nodes"]
    for _ in range(data.draw(st.integers(1, 5))):
        i = data.draw(st.integers(0, len(nodes) - 1))
        op = data.draw(st.sampled_from(["drop", "dup", "swap", "delete", "retype"]))
        if op == "drop" and len(nodes) > 1:
            del nodes[i]
        elif op == "dup":
            nodes.insert(i, copy.deepcopy(nodes[i]))
        elif op == "swap":
            j = data.draw(st.integers(0, len(nodes) - 1))
            nodes[i], nodes[j] = nodes[j], nodes[i]
        elif op == "delete" and nodes[i]:
            nodes[i].pop(data.draw(st.sampled_from(sorted(k for k in nodes[i] if k not in ("id", "name")) or ["x"])),
                         None)
        elif op == "retype":
            key = data.draw(st.sampled_from(["id", "ctrl_deps", "parent", "rf_id", "tid", "inputs", "outputs",
                                             "attrs", "name"]))
            nodes[i][key] = data.draw(st.sampled_from([v for v in ODD_VALUES if not isinstance(v, float)]))
    p = _TMP / "d.json"
    p.write_bytes(json.dumps(doc).encode())
    et = _load_et(p)
    if not isinstance(et, TraceError):
        assert len(et) == len(nodes)


@FUZZ
@given(st.sampled_from(ET_FILES), st.lists(st.tuples(st.floats(0, 1), st.sampled_from([0x00, 0x22, 0x2c, 0x2d, 0x5b,
                                                                                      0x5d, 0x7b, 0x7d, 0x80, 0xff])),
                                           min_size=1, max_size=4))
def test_et_byte_flips(path, flips):
    """A flipped byte (a quote, a bracket, a comma, a minus sign, invalid UTF-8 ...) anywhere in
    an ET: only TraceError escapes, and a loaded trace has a consistent tree (``_load_et``)."""
    data = bytearray(et_plain(path))
    for frac, val in flips:
        data[min(int(frac * len(data)), len(data) - 1)] = val
    p = _TMP / "flip.json"
    p.write_bytes(bytes(data))
    _load_et(p)


_ROOT = ('{"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 1, "inputs": {"values": [], '
         '"shapes": [], "types": []}, "outputs": {"values": [], "shapes": [], "types": []}, "attrs": []}')
_NODE = ('{"id": 2, "name": "NAME", "ctrl_deps": 1, "inputs": {"values": INPUTS, "shapes": [], "types": []}, '
         '"outputs": {"values": [], "shapes": [], "types": []}, "attrs": [{"name": "rf_id", "type": "uint64", '
         '"value": 5}EXTRA]}')


def _et_doc(name: str = "aten::add", inputs: str = "[]", extra: str = "") -> bytes:
    node = _NODE.replace("NAME", name).replace("INPUTS", inputs).replace("EXTRA", extra)
    return ('{"schema": "1.1.0", "pid": 1, "time": "x", "start_ts": 1, "finish_ts": 2, "nodes": [%s, %s]}'
            % (node, _ROOT)).encode("latin-1")


#: inputs that once crashed the ET loader (found by fuzzing) -> the warning each now gives
KNOWN_ET_CRASHES = {
    "invalid utf-8 in a node name": _et_doc(name="aten::\xff"),
    "invalid utf-8 in an attr value": _et_doc(extra=', {"name": "op_schema", "type": "string", "value": "\xff"}'),
    "invalid utf-8 in input values": _et_doc(inputs='["\xff"]'),
    "an attr without a name": _et_doc(extra=', {"type": "string", "value": "x"}'),
    "an attr that is not an object": _et_doc(extra=", 5"),
}
_UTF8_WARNING = "1 bytes of invalid UTF-8 replaced by '?' (first at byte {})"
_ATTR_WARNING = "1 attrs entries of 1 nodes are not name/value objects (or attrs is not a list); skipped"


@pytest.mark.parametrize("case", sorted(KNOWN_ET_CRASHES))
def test_known_et_loader_crashes(case, tmp_path):
    p = tmp_path / "et.json"
    data = KNOWN_ET_CRASHES[case]
    p.write_bytes(data)
    et = _load_et(p)
    assert not isinstance(et, TraceError), str(et)
    assert len(et) == 2
    node = et.node(int(et.pos_of_id(2)))
    warnings = [w.message for w in et.warnings]
    if "utf-8" in case:
        assert warnings == [f"{p}: " + _UTF8_WARNING.format(data.index(b"\xff"))]
        assert {"a node name": node.name == "aten::?",
                "an attr value": node.attrs.get("op_schema") == "?" and node.op_schema == "?",
                "input values": [a.value for a in node.inputs] == ["?"]}[case.split(" in ")[1]]
    else:
        assert warnings == [f"{p}: " + _ATTR_WARNING]
        assert node.attrs == {"rf_id": 5} and node.rf_id == 5 and node.name == "aten::add"


@pytest.mark.parametrize("extra, attrs", [(', {"name": 7, "value": 1}', {"rf_id": 5}),
                                          (', {"name": "big", "value": 1e400}', {"rf_id": 5, "big": float("inf")}),
                                          (', {"name": "seq_id", "value": 1e400}', {"rf_id": 5,
                                                                                    "seq_id": float("inf")})])
def test_et_odd_attrs_are_kept_or_skipped(extra, attrs, tmp_path):
    p = tmp_path / "et.json"
    p.write_bytes(_et_doc(extra=extra))
    et = _load_et(p)
    node = et.node(int(et.pos_of_id(2)))
    assert node.attrs == attrs and node.rf_id == 5
    if "seq_id" in extra:  # not an int64: the column keeps its default and says so
        assert node.seq_id == -1 and any("seq_id that is not a 64-bit integer" in w.message for w in et.warnings)


def test_et_attrs_not_a_list_and_names_not_strings(tmp_path):
    doc = json.loads(_et_doc())
    doc["nodes"][0]["attrs"] = {"name": "rf_id", "value": 5}
    doc["nodes"].append(dict(doc["nodes"][0], id=3, name=12, attrs=None))
    p = tmp_path / "et.json"
    p.write_bytes(json.dumps(doc).encode())
    et = _load_et(p)
    assert [et.name(i) for i in range(3)] == ["[pytorch|profiler|execution_trace|process]", "aten::add", "12"]
    assert et.node(1).attrs == {} and int(et.rf_id[1]) == 0
    assert [w.message for w in et.warnings] == [
        f"{p}: 1 nodes have a name that is not a string; shown as its JSON text",
        f"{p}: 2 attrs entries of 2 nodes are not name/value objects (or attrs is not a list); skipped"]


@pytest.mark.parametrize("tail", [b"-", b"-\n\x00\x00", b"1.", b"1e", b"1e-"])
def test_known_et_truncation_gaps(tail, tmp_path):
    """A cut right after a minus sign (found at byte 205,882 of chakra_test_schema_1.0.2) or
    inside a number makes msgspec say "invalid number/character", not "truncated"."""
    from tracetui.et import load_et

    p = tmp_path / "et.json"
    data = b'{"schema": "1.0.1", "nodes": [{"id": 2, "name": "a", "parent": 1}, {"id": 3, "seq_id": ' + tail
    p.write_bytes(data)
    et = load_et(p)
    assert len(et) == 1 and et.name(0) == "a"
    cut = len(data.rstrip(b"\n\x00"))
    lost = cut - data.index(b', {"id": 3')
    assert [w.message for w in et.warnings] == [
        f"{p}: the JSON is cut off at byte {cut}; kept the 1 complete nodes before the cut and dropped "
        f"{lost} bytes after them", f"{p}: 1 nodes name a parent id that is not in the file; they are shown as "
        "top-level nodes"]


def test_a_bad_number_inside_the_file_is_still_an_error(tmp_path):
    from tracetui.et import load_et

    p = tmp_path / "et.json"
    p.write_bytes(b'{"schema": "1.0.1", "nodes": [{"id": 2, "name": "a", "parent": -}, {"id": 3}]}')
    with pytest.raises(TraceFormatError, match=r" at byte 64: is not valid JSON: invalid character$"):
        load_et(p)


def test_known_et_truncation_gap_in_attrs(tmp_path):
    from tracetui.et import load_et

    p = tmp_path / "et.json"
    doc = ('{"schema": "1.1.0", "nodes": [%s, %s' % (_ROOT, _NODE.replace("EXTRA", "").replace("INPUTS", "[]")))
    p.write_bytes(doc.encode().replace(b'"value": 5}]}', b'"value": -'))
    assert len(load_et(p)) == 1
