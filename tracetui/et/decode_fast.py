"""The typed fast path of the ET decode: clean files in one msgspec pass and C-level maps.

:mod:`tracetui.et.decode` reads every node field as any JSON value, then turns the values
into columns one Python object at a time (and repairs or counts what it cannot use).  Most
files need none of that: every id, parent and hot attr is a JSON integer, every name and
op_schema a string.  Here msgspec checks those types while it decodes (a typed struct per
node, the nested layout's attrs as typed ``{name, value}`` structs), and the columns are
built by ``map``/``attrgetter`` and numpy, with no per-node Python loop.

The result is exactly what the general path gives, or ``None``: anything the general path
would read differently -- a float, bool, null or string where an integer is expected, an
integer beyond int64, an attr repeated within a node, nodes with and without a
``ctrl_deps`` in one file -- declines, and the caller takes the general path
(``tests/core/test_et_decode_fast.py`` checks the two agree).  Each node's JSON text is
not cut out here: ``ETTrace`` keeps the document and cuts the texts (a second msgspec pass)
the first time a node's details are asked for.  ``load_et`` of ``param_dlrm``'s ET (flat
layout, 1,675 nodes, 845 KB of JSON) takes 3.6 ms of CPU instead of 4.8 before this
module; of ``torch_cpu``'s (nested layout, 3,202 nodes, 32k attrs) 15 ms instead of 25
(minimum of 40 runs, load ~3-5 on 2 CPUs).
"""

from __future__ import annotations

from itertools import chain, compress, repeat
from operator import attrgetter, is_not
from typing import Any

import msgspec
import numpy as np

from ..io.interning import intern
from .decode import HOT_ATTRS, DecodedNodes, ETTop, node_columns

__all__ = ["FastFile", "decode_fast"]


class _Attr(msgspec.Struct, gc=False):
    name: str
    value: Any = None


class _Node(msgspec.Struct, gc=False):
    """A node whose hot fields are typed; absent fields take the column defaults (the
    general path reads an absent field as None, then the default).  ``ctrl_deps`` and
    ``attrs`` default to None (absent), which a JSON ``null`` never decodes to here."""

    id: int
    name: str
    ctrl_deps: int = None  # type: ignore[assignment]
    parent: int = -1
    rf_id: int = HOT_ATTRS["rf_id"]
    fw_parent: int = HOT_ATTRS["fw_parent"]
    seq_id: int = HOT_ATTRS["seq_id"]
    scope: int = HOT_ATTRS["scope"]
    tid: int = HOT_ATTRS["tid"]
    fw_tid: int = HOT_ATTRS["fw_tid"]
    op_schema: str = ""
    attrs: list[_Attr] = None  # type: ignore[assignment]


class FastFile(ETTop, gc=False):
    """The top level, as :class:`tracetui.et.decode.ETFile` reads it, with typed nodes."""

    nodes: list[_Node] | None = None


_DECODER = msgspec.json.Decoder(FastFile, float_hook=float)
#: where each field sits in ``msgspec.structs.astuple(node)``
_AT = {name: i for i, name in enumerate(_Node.__struct_fields__)}
_NAME = attrgetter("name")
_VALUE = attrgetter("value")


class _Decline(Exception):
    """The general path must read this file."""


def decode_fast(data: bytes) -> tuple[FastFile, DecodedNodes | None] | None:
    """(top level, node columns) of a clean ET document, None when the general path must
    read it (not valid JSON, or a value the typed path does not take).  The columns are
    None when the document has no ``nodes`` list (the caller says what it is instead)."""
    try:
        top = _DECODER.decode(data)
    except msgspec.MsgspecError:
        return None
    if top.nodes is None:
        return top, None
    try:
        return top, _columns(top.nodes, data)
    except (_Decline, OverflowError):
        return None


def _int64(values: list[Any] | tuple[Any, ...]) -> np.ndarray:
    """int64 column of Python ints (OverflowError beyond int64: the caller declines)."""
    return np.fromiter(values, dtype=np.int64, count=len(values))


def _columns(nodes: list[_Node], doc: bytes) -> DecodedNodes:
    n = len(nodes)
    # one tuple per node, then one tuple per field: both in C (astuple, zip)
    fields = list(zip(*map(msgspec.structs.astuple, nodes))) or [()] * len(_AT)
    cols = {k: _int64(fields[_AT[k]]) for k in ("id", "parent", *HOT_ATTRS)}
    ctrl = fields[_AT["ctrl_deps"]]
    n_ctrl = n - ctrl.count(None)
    if n_ctrl == n:
        cols["parent"] = _int64(ctrl)
    elif n_ctrl:
        raise _Decline  # mixed layouts: the general path picks per node
    attrs = fields[_AT["attrs"]]
    has_attrs = np.fromiter(map(is_not, attrs, repeat(None)), dtype=bool, count=n)
    op_schema = list(fields[_AT["op_schema"]])
    with_attrs = int(has_attrs.sum())
    if with_attrs:
        op_schema = _from_attrs(cols, op_schema, attrs, has_attrs)
    # the general path's count: a node with ctrl_deps or attrs is in the nested layout
    n_nested = n if n_ctrl else with_attrs
    return node_columns(cols["id"], cols["parent"], {k: cols[k] for k in HOT_ATTRS}, fields[_AT["name"]], op_schema,
                        doc, n_nested)


def _from_attrs(cols: dict[str, np.ndarray], op_schema: list[Any], attrs: tuple[Any, ...],
                has_attrs: np.ndarray) -> list[Any]:
    """Hot columns (in place) and op_schema (returned) of the nodes with an ``attrs`` list,
    from it (a hot attr a node lacks takes the column default, as in the general path)."""
    owners = np.flatnonzero(has_attrs)
    lists = list(compress(attrs, has_attrs))
    counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    every = list(chain.from_iterable(lists))
    names = list(map(_NAME, every))
    values = list(map(_VALUE, every))
    schemas = list(op_schema)
    for i in owners.tolist():
        schemas[i] = ""
    for key, default in HOT_ATTRS.items():
        cols[key][owners] = default
    for key, (where, vals) in _attr_values(names, values, counts, owners).items():
        if key == "op_schema":
            for i, v in zip(where.tolist(), vals):
                schemas[i] = v if type(v) is str else ""
            continue
        if not set(map(type, vals)) <= {int}:
            raise _Decline  # the general path reads floats, bools, strings its own way
        cols[key][where] = _int64(vals)
    return schemas


def _attr_values(names: list[str], values: list[Any], counts: np.ndarray,
                 owners: np.ndarray) -> dict[str, tuple[np.ndarray, list[Any]]]:
    """Per hot attr (and op_schema) present: the nodes holding it and its values."""
    wanted = (*HOT_ATTRS, "op_schema")
    k = int(counts[0]) if counts.size else 0
    if counts.size and (counts == k).all() and k:
        # every node lists the same attrs in the same order (what PyTorch writes): one
        # slice per attr, no per-attr work in Python
        row = names[:k]
        if len(set(row)) == k and all(names[j::k].count(row[j]) == owners.size for j in range(k)):
            return {nm: (owners, values[j::k]) for j, nm in enumerate(row) if nm in wanted}
    codes, uniq = intern(names)
    node_of = np.repeat(owners, counts)
    out = {}
    for key in wanted:
        if key not in uniq:
            continue
        at = np.flatnonzero(codes == uniq.index(key))
        where = node_of[at]
        if where.size > 1 and not (where[1:] > where[:-1]).all():
            raise _Decline  # an attr repeated within a node: the general path keeps the last
        out[key] = (where, [values[i] for i in at.tolist()])
    return out
