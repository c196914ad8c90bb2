"""Independent oracles for the robustness tests (and self-tests of those oracles).

The oracles do not use tracetui's decoder: they walk the JSON with the standard library
(``json.JSONDecoder.raw_decode`` over a latin-1 view of the bytes, so character offsets are
byte offsets) to find where each element of ``traceEvents`` (or ``nodes``) ends.  From that
they say which events are complete before any cut, and check the loaded model against it:

* every complete element is accounted for: ``n_events`` + metadata events + flow events +
  ``sum(trace.rejected.values())`` == elements in the file;
* every link points at an existing node of the right kind;
* the tree is a forest: depth[child] == depth[parent] + 1, CSR children == parent array.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tracetui.kineto.kinds import GPU_WORK_KINDS, LAUNCH_KINDS, Kind
from tracetui.kineto.trace import KinetoTrace

_WS = " \t\r\n"
_DEC = json.JSONDecoder(strict=False)


@dataclass
class Elements:
    """The elements of a JSON document's event array, as the standard library reads them."""

    ends: list[int] = field(default_factory=list)  #: exclusive byte offset of each element's end
    values: list[Any] = field(default_factory=list)
    array_start: int = -1  #: byte offset of the array's ``[`` (-1: not found)
    closed: bool = False  #: the array's ``]`` was reached

    def complete_before(self, cut: int) -> int:
        """How many elements end at or before byte ``cut``."""
        return int(np.searchsorted(np.asarray(self.ends, dtype=np.int64), cut, side="right"))


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def elements_of(data: bytes, key: str = "traceEvents") -> Elements:
    """Walk the top-level object (or bare array) up to and through the ``key`` array."""
    text = data.decode("latin-1")
    out = Elements()
    pos = _skip_ws(text, 0)
    if pos < len(text) and text[pos] == "{":
        pos += 1
        while True:
            pos = _skip_ws(text, pos)
            if pos >= len(text) or text[pos] == "}":
                return out
            if text[pos] == ",":
                pos += 1
                continue
            try:
                k, pos = _DEC.raw_decode(text, pos)
            except ValueError:
                return out
            pos = _skip_ws(text, pos)
            if pos >= len(text) or text[pos] != ":":
                return out
            pos = _skip_ws(text, pos + 1)
            if k == key and pos < len(text) and text[pos] == "[":
                break
            try:
                _, pos = _DEC.raw_decode(text, pos)
            except ValueError:
                return out
    elif not (pos < len(text) and text[pos] == "["):
        return out
    out.array_start = pos
    pos += 1
    while True:
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            return out
        if text[pos] == "]":
            out.closed = True
            return out
        if text[pos] == ",":
            pos += 1
            continue
        try:
            v, end = _DEC.raw_decode(text, pos)
        except ValueError:
            return out
        if not isinstance(v, (dict, list)) and end >= len(text):
            return out  # a scalar at the very end may be cut (``12`` of ``123``)
        out.values.append(v)
        out.ends.append(end)
        pos = end


def _phase_char(v: Any) -> str:
    ph = v.get("ph", "")
    if not isinstance(ph, str):
        ph = json.dumps(ph)
    return ph[:1]


def expected_accounting(values: list[Any]) -> Counter:
    """Counts of element classes: "meta" (ph M), "flow" (s/f/t), "not_object", "event" (the rest)."""
    c: Counter = Counter()
    for v in values:
        if not isinstance(v, dict):
            c["not_object"] += 1
        elif _phase_char(v) == "M":
            c["meta"] += 1
        elif _phase_char(v) in ("s", "f", "t"):
            c["flow"] += 1
        else:
            c["event"] += 1
    return c


def assert_accounted(kt: KinetoTrace, values: list[Any]) -> None:
    """Every element is in the model (event, metadata, flow) or counted as rejected."""
    exp = expected_accounting(values)
    rejected = sum(kt.rejected.values())
    assert len(kt.flows.cat) == exp["flow"], (len(kt.flows.cat), exp)
    assert kt.n_events + exp["meta"] + len(kt.flows.cat) + rejected == len(values), (
        kt.n_events, exp, dict(kt.rejected))
    assert kt.rejected.get("not a JSON object", 0) == exp["not_object"]
    # B/E pairs: every E that is not a separate event is counted with a reason
    n_e = sum(1 for v in values if isinstance(v, dict) and _phase_char(v) == "E")
    e_reasons = sum(c for r, c in kt.rejected.items() if "(ph E)" in r)
    assert kt.n_events == exp["event"] - n_e
    assert e_reasons == n_e


def assert_links_valid(kt: KinetoTrace) -> None:
    """Links never point at missing events, and point at the right kind of event."""
    n, nn = kt.n_events, kt.n_nodes
    kind = kt.kind
    for col in (kt.ts, kt.dur, kt.kind, kt.ph, kt.name_id, kt.cat_id, kt.correlation, kt.external_id, kt.rf_id,
                kt.launch_of, kt.fwd_of, kt.lane_of):
        assert col.shape == (n,)
    assert len(kt.pids) == len(kt.tids) == n
    assert np.isfinite(kt.ts).all() and np.isfinite(kt.dur).all() and (kt.dur >= 0).all()
    assert kt.name_id.min(initial=0) >= 0 and kt.name_id.max(initial=-1) < len(kt.names)
    assert kt.cat_id.min(initial=0) >= 0 and kt.cat_id.max(initial=-1) < len(kt.cats)
    assert kt.args_offsets.shape == (n + 1,) and kt.args_offsets[-1] == len(kt.args_blob)
    # launch_of: GPU work -> a runtime/driver event
    lo = kt.launch_of
    has = np.flatnonzero(lo >= 0)
    assert (lo >= -1).all() and (lo < n).all()
    assert np.isin(kind[has], [int(k) for k in GPU_WORK_KINDS]).all()
    assert np.isin(kind[lo[has]], [int(k) for k in LAUNCH_KINDS]).all()
    assert (kt.correlation[has] == kt.correlation[lo[has]]).all() or kt.gpu_stats.linked_by_flow_only
    # cpu_op_of: a cpu_op event
    co = kt.cpu_op_of
    assert co.shape == (nn,) and (co >= -1).all() and (co < n).all()
    assert (kind[co[co >= 0]] == int(Kind.CPU_OP)).all()
    # fwd_of: backward cpu_op -> forward cpu_op
    fw = kt.fwd_of
    assert (fw >= -1).all() and (fw < n).all()
    b = np.flatnonzero(fw >= 0)
    assert (kind[b] == int(Kind.CPU_OP)).all() and (kind[fw[b]] == int(Kind.CPU_OP)).all()
    # lanes and tree
    assert len(kt.lanes) == nn - n
    assert (kt.lane_of >= -1).all() and (kt.lane_of < len(kt.lanes)).all()
    par = kt.parent
    assert par.shape == (nn,) and (par >= -1).all() and (par < nn).all()
    assert (par[n:] == -1).all()  # lane roots
    c = np.flatnonzero(par >= 0)
    assert (par[c] != c).all()
    assert (kt.depth[c] == kt.depth[par[c]] + 1).all()  # so no cycles
    assert (kt.depth[n:] == 0).all()
    assert kt.child_start.shape == (nn + 1,) and kt.child_start[-1] == c.size
    owner = np.repeat(np.arange(nn), np.diff(kt.child_start))
    assert (par[kt.child_index] == owner).all()
    # a GPU event sits under its launch when it has one
    assert (par[has] == lo[has]).all()


def assert_same_columns(a: KinetoTrace, b: KinetoTrace) -> None:
    """Two loads of the same bytes are identical, column by column."""
    for f in ("ts", "dur", "kind", "ph", "name_id", "cat_id", "correlation", "external_id", "rf_id", "seq",
              "fwd_tid", "device", "stream", "args_offsets", "lane_of", "parent", "child_start", "child_index",
              "depth", "launch_of", "cpu_op_of", "fwd_of"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f
    assert a.origin_us == b.origin_us and a.args_blob == b.args_blob
    assert a.names == b.names and a.cats == b.cats and a.pids == b.pids and a.tids == b.tids
    assert [(x.pid, x.tid, x.label) for x in a.lanes] == [(x.pid, x.tid, x.label) for x in b.lanes]
    assert a.rejected == b.rejected and [w.message for w in a.warnings] == [w.message for w in b.warnings]


# ---------------------------------------------------------------- self-tests of the oracle

def test_oracle_counts_elements_and_ends():
    data = b'{"a": [1, {"x": "]"}], "traceEvents": [{"ph": "X"}, {"ph": "M", "s": "\\"}"}, 3]}'
    el = elements_of(data)
    assert len(el.values) == 3 and el.closed
    assert [data[e - 1:e] for e in el.ends] == [b"}", b"}", b"3"]
    assert el.complete_before(el.ends[1]) == 2 and el.complete_before(el.ends[1] - 1) == 1
    assert expected_accounting(el.values) == Counter(event=1, meta=1, not_object=1)


def test_oracle_on_a_cut_document_and_utf8():
    full = '{"traceEvents": [{"name": "é€"}, {"name": "b"}]}'.encode()
    el = elements_of(full[:-8])
    assert len(el.values) == 1 and not el.closed
    assert el.ends[0] == full.index(b"}") + 1


def test_oracle_agrees_with_json_on_a_real_trace():
    from shared_traces import KINETO

    data = gzip.open(KINETO / "mi250_minitoy_train.json.gz").read()
    el = elements_of(data)
    assert el.closed and len(el.values) == len(json.loads(data)["traceEvents"]) == 220
