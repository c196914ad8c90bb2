"""The typed fast path of the ET decode (``et/decode_fast.py``) gives exactly the general
path's columns, or declines: on every shared ET, and on variants of a flat-layout and a
nested-layout ET with every odd value the general path repairs or counts."""

from __future__ import annotations

import copy
import gzip
import json

import numpy as np
import pytest
from shared_traces import ET_DIR

from tracetui.et.decode import decode_file, decode_nodes, node_texts
from tracetui.et.decode_fast import decode_fast

#: the shared ETs; those over ~120 KB gzipped take over ~1.5 s here (two parsers, every node compared)
SHARED = [pytest.param(p, marks=pytest.mark.slow) if p.stat().st_size > 120_000 else p
          for p in sorted(ET_DIR.glob("*/et.json.gz")) + sorted((ET_DIR / "et_only").glob("*.json.gz"))]
FLAT = ET_DIR / "hta_simple_add_cuda_pair" / "et.json.gz"  # schema 1.0.1: fields at the node's top level
NESTED = ET_DIR / "et_only" / "chakra_test_schema_1.0.2.json.gz"  # attrs lists


def _general(data: bytes):
    top = decode_file(data)
    return decode_nodes(top.nodes, data)


def _same(a, b) -> None:
    for name in ("ids", "parent_ids", "name_ids", "op_schema_ids"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert a.hot.keys() == b.hot.keys()
    for k in a.hot:
        assert a.hot[k].dtype == b.hot[k].dtype and np.array_equal(a.hot[k], b.hot[k]), k
    assert a.names == b.names and a.op_schemas == b.op_schemas
    ta, tb = node_texts(a.doc, len(a.ids)), node_texts(b.doc, len(b.ids))
    assert ta.blob == tb.blob and np.array_equal(ta.offsets, tb.offsets)
    assert (a.nested, a.flat, a.bad_values, a.bad_attrs, a.bad_attr_nodes, a.bad_names) == (
        b.nested, b.flat, b.bad_values, b.bad_attrs, b.bad_attr_nodes, b.bad_names)


def _attr(node: dict, name: str):
    for a in node.get("attrs", []):
        if a["name"] == name:
            return a["value"]
    return node.get(name)


@pytest.mark.parametrize("path", SHARED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shared_ets_take_the_fast_path_and_agree(path):
    data = gzip.decompress(path.read_bytes())
    got = decode_fast(data)
    assert got is not None and got[1] is not None  # clean files: no fallback
    fast = got[1]
    _same(fast, _general(data))
    # against the raw JSON read by another parser
    nodes = json.loads(data)["nodes"]
    assert fast.ids.tolist() == [n["id"] for n in nodes]
    assert fast.parent_ids.tolist() == [n.get("ctrl_deps", n.get("parent", -1)) for n in nodes]
    seq = [_attr(n, "seq_id") for n in nodes]
    assert fast.hot["seq_id"].tolist() == [-1 if s is None else s for s in seq]
    rf = [_attr(n, "rf_id") for n in nodes]
    assert fast.hot["rf_id"].tolist() == [0 if r is None else r for r in rf]
    assert [fast.names[i] for i in fast.name_ids.tolist()] == [n["name"] for n in nodes]
    kept = node_texts(fast.doc, len(nodes))
    texts = [json.loads(bytes(kept.get(i))) for i in range(len(nodes))]
    assert texts == nodes  # each node's kept JSON text is that node


def test_torch_cpu_et_rf_ids_read_by_the_fast_path():
    # FORMATS.md: 3,202 nodes, 3,200 of them ops with rf_id != 0 (the two roots have none)
    data = gzip.decompress((ET_DIR / "torch_cpu_pair" / "et.json.gz").read_bytes())
    fast = decode_fast(data)[1]
    assert len(fast.ids) == 3202 and int((fast.hot["rf_id"] != 0).sum()) == 3200
    assert fast.nested == 3202 and fast.flat == 0


def _set_hot(node: dict, key: str, value) -> None:
    attrs = node.get("attrs")
    if isinstance(attrs, list):
        for a in attrs:
            if isinstance(a, dict) and a.get("name") == key:
                a["value"] = value
                return
    node[key] = value


MUTATIONS = {
    "float": lambda n: _set_hot(n, "rf_id", 3.0),
    "bool": lambda n: _set_hot(n, "seq_id", True),
    "null": lambda n: _set_hot(n, "tid", None),
    "string": lambda n: _set_hot(n, "scope", "7"),
    "uint64": lambda n: _set_hot(n, "fw_tid", 2**64 - 1),
    "beyond 64 bits": lambda n: _set_hot(n, "fw_parent", 2**70),
    "int64 min": lambda n: _set_hot(n, "rf_id", -(2**63)),
    "number name": lambda n: n.__setitem__("name", 12),
    "null op_schema": lambda n: _set_hot(n, "op_schema", None),
    "int op_schema": lambda n: _set_hot(n, "op_schema", 5),
    "no parent": lambda n: (n.pop("ctrl_deps", None), n.pop("parent", None)),
    "null parent": lambda n: n.__setitem__("ctrl_deps" if "ctrl_deps" in n else "parent", None),
    "float parent": lambda n: n.__setitem__("ctrl_deps" if "ctrl_deps" in n else "parent", 1.0),
    "both parents": lambda n: (n.__setitem__("ctrl_deps", 1), n.__setitem__("parent", 2)),
    "big id": lambda n: n.__setitem__("id", 2**63 + 5),
    "null attrs": lambda n: n.__setitem__("attrs", None),
    "empty attrs": lambda n: n.__setitem__("attrs", []),
    "attrs object": lambda n: n.__setitem__("attrs", {"rf_id": 1}),
    "attr without name": lambda n: n.setdefault("attrs", []).append({"value": 1}),
    "attr not an object": lambda n: n.setdefault("attrs", []).append(5),
    "attr twice": lambda n: n.setdefault("attrs", []).extend([{"name": "rf_id", "value": 11},
                                                               {"name": "rf_id", "value": 12}]),
    "other attr": lambda n: n.setdefault("attrs", []).append({"name": "kernel_x", "value": {"a": [1, 2.5]}}),
    "hot field beside attrs": lambda n: n.__setitem__("seq_id", 77),
    "null inputs": lambda n: n.__setitem__("inputs", None),
}


@pytest.mark.parametrize("base", [FLAT, NESTED], ids=["flat", "nested"])
@pytest.mark.parametrize("every", [True, False], ids=["every node", "some nodes"])
@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_odd_values_agree_or_decline(base, every, mutation):
    doc = json.loads(gzip.decompress(base.read_bytes()))
    doc = copy.deepcopy(doc)
    for i, node in enumerate(doc["nodes"]):
        if every or i % 3 == 1:
            MUTATIONS[mutation](node)
    data = json.dumps(doc).encode()
    got = decode_fast(data)
    try:
        general = _general(data)
    except Exception:
        assert got is None  # the general path reports the file: the fast path never takes it
        return
    if got is not None:
        _same(got[1], general)


@pytest.mark.parametrize("mutation", ["float", "bool", "null", "string", "beyond 64 bits", "number name",
                                      "null attrs", "attr twice"])
def test_values_the_general_path_repairs_are_left_to_it(mutation):
    doc = json.loads(gzip.decompress(NESTED.read_bytes()))
    MUTATIONS[mutation](doc["nodes"][3])
    assert decode_fast(json.dumps(doc).encode()) is None
