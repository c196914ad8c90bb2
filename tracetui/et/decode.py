"""Decode Execution Trace JSON bytes into columns (hot fields) and raw byte blobs (the rest).

One msgspec pass decodes every node into a small struct whose bulky parts (inputs, outputs,
attrs, the flat layout's shape/type lists) stay undecoded ``msgspec.Raw`` slices.  The hot
fields become numpy columns; the raw slices are copied into one blob per field with an offset
array, so a node's arguments are decoded only when ``ETTrace.node`` asks for them.

Both node layouts are read by the same struct, and each node by its own keys: ``ctrl_deps``
and ``attrs`` (nested, schema 1.0.2+) or ``parent`` and ``input_shapes`` (flat, 1.0.1).
Integers of any size decode (msgspec keeps > 64-bit values as Python ints); a value that
does not fit an int64 column is replaced by the column's default and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

__all__ = ["ETFile", "RawColumn", "DecodedNodes", "decode_file", "decode_nodes", "HOT_ATTRS"]

_EMPTY = msgspec.Raw()

#: attrs that become int64 columns, with the value used when a node lacks them
HOT_ATTRS: dict[str, int] = {
    "rf_id": 0,
    "fw_parent": 0,
    "seq_id": -1,
    "scope": 0,
    "tid": 0,
    "fw_tid": 0,
}
#: raw fields kept per node for on-demand decoding
RAW_FIELDS = (
    "inputs",
    "outputs",
    "attrs",
    "input_shapes",
    "input_types",
    "output_shapes",
    "output_types",
)
#: nodes whose attrs are decoded together (bounds the temporary Python objects)
_ATTR_BATCH = 50_000
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class _Node(msgspec.Struct, gc=False):
    """Union of the flat and nested node layouts; unknown keys are skipped."""

    id: Any
    name: str
    ctrl_deps: Any = None
    parent: Any = None
    rf_id: Any = None
    fw_parent: Any = None
    seq_id: Any = None
    scope: Any = None
    tid: Any = None
    fw_tid: Any = None
    op_schema: Any = None
    inputs: msgspec.Raw = _EMPTY
    outputs: msgspec.Raw = _EMPTY
    attrs: msgspec.Raw = _EMPTY
    input_shapes: msgspec.Raw = _EMPTY
    input_types: msgspec.Raw = _EMPTY
    output_shapes: msgspec.Raw = _EMPTY
    output_types: msgspec.Raw = _EMPTY


class ETFile(msgspec.Struct, gc=False):
    """Top level of an ET file (``traceEvents`` is read only to recognise a Kineto trace)."""

    schema: Any = None
    pid: Any = None
    time: Any = None
    start_ts: Any = None
    finish_ts: Any = None
    nodes: list[_Node] | None = None
    traceEvents: msgspec.Raw = _EMPTY  # noqa: N815 - the Kineto key


class _Attr(msgspec.Struct, gc=False):
    name: str
    value: Any = None


_FILE_DECODER = msgspec.json.Decoder(ETFile)
_ATTRS_DECODER = msgspec.json.Decoder(list[list[_Attr]])
_ATTR_LIST_DECODER = msgspec.json.Decoder(list[_Attr])


def decode_file(data: bytes) -> ETFile:
    """Decode the whole document; raises msgspec.DecodeError/ValidationError."""
    return _FILE_DECODER.decode(data)


def decode_attr_list(raw: bytes | memoryview) -> dict[str, Any]:
    """All attrs of one nested-layout node, by name."""
    return {a.name: a.value for a in _ATTR_LIST_DECODER.decode(raw)}


@dataclass
class RawColumn:
    """One undecoded JSON field per node: ``blob[offsets[i]:offsets[i + 1]]`` (empty = absent)."""

    blob: bytes
    offsets: np.ndarray

    @classmethod
    def build(cls, raws: list[msgspec.Raw]) -> RawColumn:
        lengths = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
        offsets = np.zeros(len(raws) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(b"".join(raws) if offsets[-1] else b"", offsets)

    def get(self, i: int) -> memoryview:
        return memoryview(self.blob)[int(self.offsets[i]) : int(self.offsets[i + 1])]


@dataclass
class DecodedNodes:
    """Node columns in *file* order (the trace sorts them by id)."""

    ids: np.ndarray
    parent_ids: np.ndarray
    hot: dict[str, np.ndarray]
    name_ids: np.ndarray
    names: list[str]
    op_schema_ids: np.ndarray
    op_schemas: list[str]
    raw: dict[str, RawColumn]
    nested: int
    flat: int
    #: per column, how many values did not fit an int64 (replaced by the default)
    bad_values: dict[str, int] = field(default_factory=dict)


def int_column(values: list[Any], default: int) -> tuple[np.ndarray, int]:
    """int64 column from Python values; None -> default; unusable values -> default, counted."""
    try:
        return np.array(values, dtype=np.int64), 0
    except (TypeError, ValueError, OverflowError):
        pass
    out = np.empty(len(values), dtype=np.int64)
    bad = 0
    for i, v in enumerate(values):
        if type(v) is int and _INT64_MIN <= v <= _INT64_MAX:
            out[i] = v
        elif isinstance(v, (bool, float)) and v == v and abs(v) < 2**63:
            out[i] = int(v)
        else:
            out[i] = default
            bad += v is not None
    return out, bad


def _intern(values: list[str]) -> tuple[np.ndarray, list[str]]:
    table: dict[str, int] = {}
    ids = [table.setdefault(v, len(table)) for v in values]
    return np.array(ids, dtype=np.int32), list(table)


def _hot_from_attrs(nodes: list[_Node], attrs: RawColumn) -> tuple[dict[str, list[Any]], list[Any]]:
    """Hot attr values (None where absent) and op_schema per node, decoding attrs in batches."""
    n = len(nodes)
    cols: dict[str, list[Any]] = {k: [None] * n for k in HOT_ATTRS}
    op_schema: list[Any] = [None] * n
    offsets = attrs.offsets
    for lo in range(0, n, _ATTR_BATCH):
        pieces = [nd.attrs if len(nd.attrs) else b"[]" for nd in nodes[lo : lo + _ATTR_BATCH]]
        decoded = _ATTRS_DECODER.decode(b"[" + b",".join(pieces) + b"]")
        for i, attr_list in enumerate(decoded, start=lo):
            for attr in attr_list:
                name = attr.name
                col = cols.get(name)
                if col is not None:
                    col[i] = attr.value
                elif name == "op_schema":
                    op_schema[i] = attr.value
    # nodes in the flat layout carry the same fields at the top level
    for i in np.flatnonzero(offsets[1:] == offsets[:-1]).tolist():
        node = nodes[i]
        for key in HOT_ATTRS:
            cols[key][i] = getattr(node, key)
        op_schema[i] = node.op_schema
    return cols, op_schema


def decode_nodes(nodes: list[_Node]) -> DecodedNodes:
    """Turn decoded node structs into columns and raw blobs (file order)."""
    raw = {name: RawColumn.build([getattr(nd, name) for nd in nodes]) for name in RAW_FIELDS}
    nested = sum(1 for nd in nodes if nd.ctrl_deps is not None or len(nd.attrs))
    flat = len(nodes) - nested
    bad: dict[str, int] = {}

    ids, bad["id"] = int_column([nd.id for nd in nodes], -1)
    parents = [nd.ctrl_deps if nd.ctrl_deps is not None else nd.parent for nd in nodes]
    parent_ids, bad["parent"] = int_column(parents, -1)
    if nested:
        hot_values, op_schema = _hot_from_attrs(nodes, raw["attrs"])
    else:
        hot_values = {k: [getattr(nd, k) for nd in nodes] for k in HOT_ATTRS}
        op_schema = [nd.op_schema for nd in nodes]
    hot = {}
    for key, default in HOT_ATTRS.items():
        hot[key], bad[key] = int_column(hot_values[key], default)
    name_ids, names = _intern([nd.name for nd in nodes])
    op_schema_ids, op_schemas = _intern([s if isinstance(s, str) else "" for s in op_schema])
    return DecodedNodes(
        ids=ids,
        parent_ids=parent_ids,
        hot=hot,
        name_ids=name_ids,
        names=names,
        op_schema_ids=op_schema_ids,
        op_schemas=op_schemas,
        raw=raw,
        nested=nested,
        flat=flat,
        bad_values={k: v for k, v in bad.items() if v},
    )
