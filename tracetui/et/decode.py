"""Decode Execution Trace JSON bytes into columns (hot fields) and raw byte blobs (the rest).

Every node's JSON text is kept, undecoded, in one blob with an offset array
(:class:`RawColumn`), so a node's arguments are decoded only when ``ETTrace.node`` asks for
them; the hot fields become numpy columns.  A clean file (every hot field an integer, every
name a string) takes the typed fast path of :mod:`tracetui.et.decode_fast`; anything else
takes the general path here, which reads every field as any JSON value and repairs or
counts what it cannot use: this module is the reference, the fast path gives the same
columns or declines.

Both node layouts are read by the same struct, and each node by its own keys: ``ctrl_deps``
and ``attrs`` (nested, schema 1.0.2+) or ``parent`` and ``input_shapes`` (flat, 1.0.1).
Integers of any size decode (msgspec keeps > 64-bit values as Python ints); a value that
does not fit an int64 column is replaced by the column's default and counted.  Numbers beyond
the float range decode as +-inf.  Invalid UTF-8 is replaced byte for byte by ``?`` before
decoding (:func:`repair_utf8`).  Malformed ``attrs`` (not a list, an element that is not an
object or has no string ``name``) are skipped element by element and counted, never fatal.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from ..io.interning import intern

__all__ = ["ETTop", "ETFile", "node_columns", "RawColumn", "DecodedNodes", "NodeFields", "node_texts", "decode_file",
           "decode_nodes", "decode_attr_list", "decode_node_raws", "decode_node_fields", "decode_value", "repair_utf8",
           "HOT_ATTRS"]

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
#: nodes whose attrs are decoded together (bounds the temporary Python objects)
_ATTR_BATCH = 50_000
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class _Node(msgspec.Struct, gc=False):
    """Union of the flat and nested node layouts; unknown keys are skipped."""

    id: Any
    name: Any
    ctrl_deps: Any = None
    parent: Any = None
    rf_id: Any = None
    fw_parent: Any = None
    seq_id: Any = None
    scope: Any = None
    tid: Any = None
    fw_tid: Any = None
    op_schema: Any = None
    attrs: msgspec.Raw = _EMPTY


class NodeFields(msgspec.Struct, gc=False):
    """The bulky fields of one node, undecoded (empty: absent), read from its kept JSON text."""

    inputs: msgspec.Raw = _EMPTY
    outputs: msgspec.Raw = _EMPTY
    attrs: msgspec.Raw = _EMPTY
    input_shapes: msgspec.Raw = _EMPTY
    input_types: msgspec.Raw = _EMPTY
    output_shapes: msgspec.Raw = _EMPTY
    output_types: msgspec.Raw = _EMPTY


class _NodeTexts(msgspec.Struct, gc=False):
    """The top level of an ET with each node's JSON text."""

    nodes: list[msgspec.Raw] | None = None


class ETTop(msgspec.Struct, gc=False):
    """Top level of an ET file besides its nodes (``traceEvents`` is read only to
    recognise a Kineto trace)."""

    schema: Any = None
    pid: Any = None
    time: Any = None
    start_ts: Any = None
    finish_ts: Any = None
    traceEvents: msgspec.Raw = _EMPTY  # noqa: N815 - the Kineto key


class ETFile(ETTop, gc=False):
    """Top level of an ET file, every node field read as any JSON value."""

    nodes: list[_Node] | None = None


class _Attr(msgspec.Struct, gc=False):
    name: str
    value: Any = None


# float_hook: numbers beyond the float range become +-inf instead of failing the decode
_FILE_DECODER = msgspec.json.Decoder(ETFile, float_hook=float)
_ATTRS_DECODER = msgspec.json.Decoder(list[list[_Attr]], float_hook=float)
_ANY_DECODER = msgspec.json.Decoder(float_hook=float)
_TEXTS_DECODER = msgspec.json.Decoder(_NodeTexts)
_FIELDS_DECODER = msgspec.json.Decoder(NodeFields)
_NO_FIELDS = NodeFields()


def decode_file(data: bytes) -> ETFile:
    """Decode the whole document; raises msgspec.DecodeError/ValidationError.

    ``data`` must be valid UTF-8 (see :func:`repair_utf8`)."""
    return _FILE_DECODER.decode(data)


def decode_node_raws(data: bytes) -> list[msgspec.Raw]:
    """The JSON text of every node of a document that :func:`decode_file` (or the fast
    path) read without error, in file order (see :func:`node_texts`)."""
    return _TEXTS_DECODER.decode(data).nodes or []


def decode_node_fields(raw: bytes | memoryview) -> NodeFields:
    """The bulky fields of one node from its JSON text (all empty for an empty text)."""
    return _FIELDS_DECODER.decode(raw) if len(raw) else _NO_FIELDS


def decode_value(raw: bytes | memoryview) -> Any:
    """Any JSON value of a (UTF-8-repaired) document; numbers beyond the float range -> +-inf."""
    return _ANY_DECODER.decode(raw)


def attr_pairs(value: Any) -> tuple[dict[str, Any], int]:
    """``{name: value}`` of an attrs list decoded as plain JSON, and how many elements were
    unusable (not an object, no string ``name``; an ``attrs`` that is not a list counts 1)."""
    if not isinstance(value, list):
        return {}, 1
    out: dict[str, Any] = {}
    bad = 0
    for a in value:
        if isinstance(a, dict) and isinstance(a.get("name"), str):
            out[a["name"]] = a.get("value")
        else:
            bad += 1
    return out, bad


def decode_attr_list(raw: bytes | memoryview) -> dict[str, Any]:
    """All usable attrs of one nested-layout node, by name (malformed elements skipped)."""
    return attr_pairs(decode_value(raw))[0]


def _qmark(exc: UnicodeDecodeError) -> tuple[str, int]:
    return "?" * (exc.end - exc.start), exc.end


codecs.register_error("tracetui.et_qmark", _qmark)


def _valid_utf8(data: bytes) -> bool:
    """True when ``data`` is UTF-8, ignoring an incomplete sequence at the very end (a file
    cut inside a character: the cut drops that node anyway)."""
    if data.isascii():
        return True
    dec = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    step = 1 << 24
    try:
        for s in range(0, len(data), step):
            dec.decode(view[s : s + step])
    except UnicodeDecodeError:
        return False
    return True


def repair_utf8(data: bytes) -> tuple[bytes, int, int]:
    """``data`` with every byte of invalid UTF-8 replaced by ``?`` (same length, so byte
    positions stay valid); returns (data, bytes replaced, offset of the first, -1 if none)."""
    if _valid_utf8(data):
        return data, 0, -1
    fixed = data.decode("utf-8", "tracetui.et_qmark").encode("utf-8")
    diff = np.flatnonzero(np.frombuffer(fixed, dtype=np.uint8) != np.frombuffer(data, dtype=np.uint8))
    return fixed, int(diff.size), int(diff[0]) if diff.size else -1


@dataclass
class RawColumn:
    """One undecoded JSON text per node: ``blob[offsets[i]:offsets[i + 1]]`` (empty = absent)."""

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
    #: the document the nodes were decoded from: each node's JSON text is cut from it
    #: (:func:`node_texts`) when first needed, not while the trace opens
    doc: bytes
    nested: int
    flat: int
    #: per column, how many values did not fit an int64 (replaced by the default)
    bad_values: dict[str, int] = field(default_factory=dict)
    #: attrs elements skipped (not an object, no string name; an attrs that is not a list: 1)
    bad_attrs: int = 0
    #: nodes whose attrs held a skipped element (or were not a list)
    bad_attr_nodes: int = 0
    #: names that were not strings (shown as their JSON text)
    bad_names: int = 0


def node_texts(doc: bytes, n: int) -> RawColumn:
    """The JSON text of each of the ``n`` nodes of ``doc`` (a document that decoded
    without error), in file order.  The typed and raw decoders read the same document
    the same way, so the counts agree; were they to differ, every text is empty (the
    nodes keep their columns, their details show nothing)."""
    try:
        texts = decode_node_raws(doc) if doc else []
    except (msgspec.MsgspecError, RecursionError):  # pragma: no cover - the document decoded before
        texts = []
    return RawColumn.build(texts if len(texts) == n else [b""] * n)


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


def _attr_batch(pieces: list[bytes]) -> tuple[list[list[tuple[str, Any]]], int, int]:
    """Decode the attrs of a batch of nodes: per node its (name, value) pairs, plus the
    number of skipped elements and of nodes that had any (fast typed path, then per node)."""
    try:
        decoded = _ATTRS_DECODER.decode(b"[" + b",".join(pieces) + b"]")
        return [[(a.name, a.value) for a in attr_list] for attr_list in decoded], 0, 0
    except msgspec.ValidationError:
        pass
    out = []
    bad = bad_nodes = 0
    for piece in pieces:
        pairs, b = attr_pairs(decode_value(piece))
        out.append(list(pairs.items()))
        bad += b
        bad_nodes += b > 0
    return out, bad, bad_nodes


def _hot_from_attrs(nodes: list[_Node]) -> tuple[dict[str, list[Any]], list[Any], int, int]:
    """Hot attr values (None where absent) and op_schema per node, decoding attrs in batches;
    also the counts of skipped attrs elements and of the nodes holding them."""
    n = len(nodes)
    cols: dict[str, list[Any]] = {k: [None] * n for k in HOT_ATTRS}
    op_schema: list[Any] = [None] * n
    bad = bad_nodes = 0
    for lo in range(0, n, _ATTR_BATCH):
        pieces = [nd.attrs if len(nd.attrs) else b"[]" for nd in nodes[lo : lo + _ATTR_BATCH]]
        decoded, b, bn = _attr_batch(pieces)
        bad += b
        bad_nodes += bn
        for i, attr_list in enumerate(decoded, start=lo):
            for name, value in attr_list:
                col = cols.get(name)
                if col is not None:
                    col[i] = value
                elif name == "op_schema":
                    op_schema[i] = value
    # nodes in the flat layout carry the same fields at the top level
    for i in [i for i, nd in enumerate(nodes) if not len(nd.attrs)]:
        node = nodes[i]
        for key in HOT_ATTRS:
            cols[key][i] = getattr(node, key)
        op_schema[i] = node.op_schema
    return cols, op_schema, bad, bad_nodes


def decode_nodes(nodes: list[_Node], doc: bytes) -> DecodedNodes:
    """Turn decoded node structs into columns (file order); ``doc``: the document they
    were decoded from."""
    nested = sum(1 for nd in nodes if nd.ctrl_deps is not None or len(nd.attrs))
    bad: dict[str, int] = {}

    ids, bad["id"] = int_column([nd.id for nd in nodes], -1)
    parents = [nd.ctrl_deps if nd.ctrl_deps is not None else nd.parent for nd in nodes]
    parent_ids, bad["parent"] = int_column(parents, -1)
    bad_attrs = bad_attr_nodes = 0
    if nested:
        hot_values, op_schema, bad_attrs, bad_attr_nodes = _hot_from_attrs(nodes)
    else:
        hot_values = {k: [getattr(nd, k) for nd in nodes] for k in HOT_ATTRS}
        op_schema = [nd.op_schema for nd in nodes]
    hot = {}
    for key, default in HOT_ATTRS.items():
        hot[key], bad[key] = int_column(hot_values[key], default)
    node_names = [nd.name for nd in nodes]
    bad_names = sum(1 for v in node_names if type(v) is not str)
    if bad_names:
        node_names = [v if type(v) is str else msgspec.json.encode(v).decode() for v in node_names]
    return node_columns(ids, parent_ids, hot, node_names, [s if isinstance(s, str) else "" for s in op_schema], doc,
                        nested, bad_values={k: v for k, v in bad.items() if v}, bad_attrs=bad_attrs,
                        bad_attr_nodes=bad_attr_nodes, bad_names=bad_names)


def node_columns(ids: np.ndarray, parent_ids: np.ndarray, hot: dict[str, np.ndarray], names: Any, op_schemas: Any,
                 doc: bytes, nested: int, **problems: Any) -> DecodedNodes:
    """:class:`DecodedNodes` from the columns and each node's name and op_schema string
    (interned here); ``problems``: the counts of what was repaired."""
    name_ids, uniq_names = intern(names)
    op_schema_ids, uniq_op_schemas = intern(op_schemas)
    return DecodedNodes(ids=ids, parent_ids=parent_ids, hot=hot, name_ids=name_ids, names=uniq_names,
                        op_schema_ids=op_schema_ids, op_schemas=uniq_op_schemas, doc=doc, nested=nested,
                        flat=len(ids) - nested, **problems)
