"""ETTrace: a loaded PyTorch Execution Trace held as columns.

Every node of the file is kept (ET-only threads included).  Nodes are addressed by
*position*, their index after sorting by node id: ids are assigned when an op starts, so
position order is start order (the file is written in post-order, process root last).
Hot fields are numpy columns indexed by position; a node's arguments and attributes stay
raw JSON bytes until :meth:`ETTrace.node` decodes them.

ETs carry no per-node timestamps; ``start_ts``/``finish_ts`` are the recording's start and
end as written by the observer (a clock in microseconds), ``time`` its wall-clock date.
Linking to Kineto: ``rf_id`` equals the Kineto cpu_op arg "Record function id" (0 = none).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import LoadWarning
from .decode import (
    HOT_ATTRS,
    DecodedNodes,
    NodeFields,
    RawColumn,
    decode_attr_list,
    decode_node_fields,
    decode_value,
    node_texts,
)
from .model import ETArg, ETNode, build_args
from .sniff import FORMAT_NAME
from .tree import build_tree

__all__ = ["ETTrace", "is_thread_root_name", "STATE"]

#: the attributes that make up a loaded ETTrace besides its ``path``: what a cache entry
#: stores (:mod:`tracetui.et.persist`) and :meth:`ETTrace.from_state` sets back
STATE = ("schema", "pid", "time", "start_ts", "finish_ts", "layout", "warnings", "_file_index", "ids", "parent_ids",
         "rf_id", "seq_id", "fw_parent", "tid", "fw_tid", "scope", "name_ids", "names", "op_schema_ids", "op_schemas",
         "_raw", "parent", "child_start", "child_index", "depth")


#: names of the ET's structural nodes, its process and per-thread roots
#: (``[pytorch|profiler|execution_trace|process]``, ``...|thread]``; older files say
#: ``execution_graph``): structure, not ops, so never linked, counted or listed as ops
STRUCTURAL_PREFIX = "[pytorch|profiler|execution_"


def is_structural_name(name: str) -> bool:
    """True for the names of the ET's process and thread root nodes."""
    return name.startswith(STRUCTURAL_PREFIX)


def is_thread_root_name(name: str) -> bool:
    """True for the per-thread root nodes (``[pytorch|profiler|execution_trace|thread]``)."""
    return is_structural_name(name) and name.endswith("|thread]")


def _decode(raw: Any) -> Any:
    return decode_value(raw) if len(raw) else None


class ETTrace:
    """A loaded Execution Trace.

    Attributes: ``path``, ``schema`` (the file's schema string, never interpreted),
    ``pid`` (OS process id), ``time`` (recording date string), ``start_ts``/``finish_ts``
    (None when missing, e.g. cut off in a truncated file), ``layout`` ("flat" or "nested",
    the layout of most nodes), ``warnings``.

    Columns (numpy, indexed by position): ``ids`` (int64), ``parent`` (int32 parent position,
    -1 for top-level nodes), ``parent_ids`` (int64, the parent id as written), ``rf_id``
    (int64, 0 = none), ``seq_id`` (int64, -1 = none), ``fw_parent``, ``tid`` (small
    RecordFunction thread number), ``fw_tid``, ``scope``, ``name_ids`` (int32 into
    ``names``), ``op_schema_ids`` (int32 into ``op_schemas``), ``depth`` (int32, 0 at the
    top), ``child_start``/``child_index`` (CSR children, each list in id order).
    """

    #: the format it was read from (``tracetui.formats``)
    source_format = FORMAT_NAME

    def __init__(
        self,
        *,
        path: str,
        schema: Any,
        pid: Any,
        time: Any,
        start_ts: Any,
        finish_ts: Any,
        decoded: DecodedNodes,
        warnings: list[LoadWarning] | None = None,
    ) -> None:
        self.path = path
        self.schema = schema if isinstance(schema, str) else ("" if schema is None else str(schema))
        self.pid = pid
        self.time = time
        self.start_ts = start_ts
        self.finish_ts = finish_ts
        self.layout = "flat" if decoded.flat > decoded.nested else "nested"
        self.warnings: list[LoadWarning] = list(warnings or [])

        order = np.argsort(decoded.ids, kind="stable")
        #: file index of the node at each position (raw columns are in file order)
        self._file_index = order
        self.ids: np.ndarray = decoded.ids[order]
        self.parent_ids: np.ndarray = decoded.parent_ids[order]
        self.rf_id: np.ndarray = decoded.hot["rf_id"][order]
        self.seq_id: np.ndarray = decoded.hot["seq_id"][order]
        self.fw_parent: np.ndarray = decoded.hot["fw_parent"][order]
        self.tid: np.ndarray = decoded.hot["tid"][order]
        self.fw_tid: np.ndarray = decoded.hot["fw_tid"][order]
        self.scope: np.ndarray = decoded.hot["scope"][order]
        self.name_ids: np.ndarray = decoded.name_ids[order]
        self.names: list[str] = decoded.names
        self.op_schema_ids: np.ndarray = decoded.op_schema_ids[order]
        self.op_schemas: list[str] = decoded.op_schemas
        self._doc: bytes | None = decoded.doc  # until the node texts are cut from it
        self._raw_col: RawColumn | None = None

        tree = build_tree(self.ids, self.parent_ids)
        self.parent: np.ndarray = tree.parent
        self.child_start: np.ndarray = tree.child_start
        self.child_index: np.ndarray = tree.child_index
        self.depth: np.ndarray = tree.depth
        self._note_problems(decoded, tree.orphans, tree.cycles_broken)
        self._note_self_parents(tree.self_parents)

    def _note_self_parents(self, positions: np.ndarray) -> None:
        """Only the process root may name itself as its parent: other such nodes (a damaged
        file) are read as top-level nodes, and counted."""
        odd = [int(p) for p in positions.tolist() if not is_structural_name(self.names[int(self.name_ids[p])])]
        if odd:
            self.warnings.append(LoadWarning(
                "self_parent", f"{self.path}: {len(odd):,} nodes name themselves as their parent (only the process "
                               f"root may); read as top-level nodes (first: node id {int(self.ids[odd[0]])})",
                len(odd)))

    def _note_problems(self, decoded: DecodedNodes, orphans: int, cycles: int) -> None:
        dups = int(np.count_nonzero(self.ids[1:] == self.ids[:-1])) if self.ids.size else 0
        if dups:
            self.warnings.append(
                LoadWarning("duplicate_ids", f"{self.path}: {dups} nodes repeat another node's id", dups)
            )
        if orphans:
            self.warnings.append(
                LoadWarning(
                    "orphans",
                    f"{self.path}: {orphans} nodes name a parent id that is not in the file; "
                    "they are shown as top-level nodes",
                    orphans,
                )
            )
        if cycles:
            self.warnings.append(
                LoadWarning("cycles", f"{self.path}: {cycles} parent links formed a cycle and were dropped", cycles)
            )
        if decoded.bad_names:
            self.warnings.append(
                LoadWarning(
                    "bad_names",
                    f"{self.path}: {decoded.bad_names} nodes have a name that is not a string; "
                    "shown as its JSON text",
                    decoded.bad_names,
                )
            )
        if decoded.bad_attrs:
            self.warnings.append(
                LoadWarning(
                    "bad_attrs",
                    f"{self.path}: {decoded.bad_attrs} attrs entries of {decoded.bad_attr_nodes} nodes are not "
                    "name/value objects (or attrs is not a list); skipped",
                    decoded.bad_attrs,
                )
            )
        for column, count in decoded.bad_values.items():
            self.warnings.append(
                LoadWarning(
                    "bad_values",
                    f"{self.path}: {count} nodes have a {column} that is not a 64-bit integer; "
                    f"shown as {HOT_ATTRS.get(column, -1)}",
                    count,
                )
            )

    @property
    def _raw(self) -> RawColumn:
        """Each node's JSON text, in file order (cut from the document on first use:
        opening a trace does not pay for it)."""
        if self._raw_col is None:
            self._raw_col = node_texts(self._doc or b"", len(self))
            self._doc = None
        return self._raw_col

    @_raw.setter
    def _raw(self, value: RawColumn) -> None:
        self._raw_col = value
        self._doc = None

    @classmethod
    def from_state(cls, path: str, state: dict[str, Any]) -> ETTrace:
        """An ETTrace from the attributes of :data:`STATE` (a cache entry), built as it was
        loaded: no sorting, no tree building."""
        missing = [k for k in STATE if k not in state]
        if missing:
            raise KeyError(f"missing {', '.join(missing)}")
        et = cls.__new__(cls)
        et.path = path
        for k in STATE:
            setattr(et, k, state[k])
        return et

    def state(self) -> dict[str, Any]:
        """The attributes of :data:`STATE`, by name."""
        return {k: getattr(self, k) for k in STATE}

    # ------------------------------------------------------------------ structure
    def __len__(self) -> int:
        return int(self.ids.size)

    def name(self, pos: int) -> str:
        """Name of the node at ``pos``."""
        return self.names[self.name_ids[pos]]

    def children(self, pos: int) -> np.ndarray:
        """Positions of the children of ``pos``, in id (= start) order."""
        return self.child_index[self.child_start[pos] : self.child_start[pos + 1]]

    def roots(self) -> np.ndarray:
        """Positions of the top-level nodes: the process root (id 1) in a complete file; in
        a truncated one, the nodes whose parent was never written."""
        return np.flatnonzero(self.parent < 0)

    def structural_mask(self) -> np.ndarray:
        """Bool per node position: a structural node (:func:`is_structural_name`), not an op."""
        by_name = np.array([is_structural_name(nm) for nm in self.names] or [False], dtype=bool)
        return by_name[self.name_ids] if self.name_ids.size else np.zeros(0, dtype=bool)

    def thread_roots(self) -> np.ndarray:
        """Positions of the per-thread root nodes (``[pytorch|profiler|...|thread]``)."""
        wanted = [i for i, nm in enumerate(self.names) if is_thread_root_name(nm)]
        return np.flatnonzero(np.isin(self.name_ids, wanted))

    def pos_of_id(self, node_id: int) -> int:
        """Position of the node with id ``node_id``; KeyError when absent."""
        i = int(np.searchsorted(self.ids, node_id))
        if i < self.ids.size and self.ids[i] == node_id:
            return i
        raise KeyError(node_id)

    def positions_of_ids(self, node_ids: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`pos_of_id`: int64 positions, -1 where an id is absent."""
        node_ids = np.asarray(node_ids, dtype=np.int64)
        if self.ids.size == 0:
            return np.full(node_ids.shape, -1, dtype=np.int64)
        idx = np.minimum(np.searchsorted(self.ids, node_ids), self.ids.size - 1)
        return np.where(self.ids[idx] == node_ids, idx, -1)

    # ------------------------------------------------------------------ per node
    def _fields(self, pos: int) -> NodeFields:
        """The undecoded bulky fields of the node at ``pos``."""
        return decode_node_fields(self._raw.get(int(self._file_index[pos])))

    def attrs(self, pos: int, fields: NodeFields | None = None) -> dict[str, Any]:
        """Every attribute of the node at ``pos`` by name (exact values, any int size)."""
        raw = (fields or self._fields(pos)).attrs
        if len(raw):
            return decode_attr_list(raw)
        return {
            "rf_id": int(self.rf_id[pos]),
            "fw_parent": int(self.fw_parent[pos]),
            "seq_id": int(self.seq_id[pos]),
            "scope": int(self.scope[pos]),
            "tid": int(self.tid[pos]),
            "fw_tid": int(self.fw_tid[pos]),
            "op_schema": self.op_schemas[self.op_schema_ids[pos]],
        }

    @staticmethod
    def _args(f: NodeFields, side: str) -> list[ETArg]:
        """Inputs ("input") or outputs ("output") of a node, from its fields."""
        types = _decode(getattr(f, f"{side}_types"))
        if types is not None:  # flat layout: parallel lists at the node's top level
            values = _decode(getattr(f, f"{side}s"))
            return build_args(values, _decode(getattr(f, f"{side}_shapes")), types, None)
        obj = _decode(getattr(f, f"{side}s"))
        if isinstance(obj, dict):
            return build_args(obj.get("values"), obj.get("shapes"), obj.get("types"), obj.get("strides"))
        return []

    def input_shapes_types(self, pos: int) -> tuple[Any, Any]:
        """(shapes, types) of the inputs of the node at ``pos`` as written (lists; None when
        absent), without decoding the values."""
        f = self._fields(pos)
        types = _decode(f.input_types)
        if types is not None:  # flat layout
            return _decode(f.input_shapes), types
        obj = _decode(f.inputs)
        if isinstance(obj, dict):
            return obj.get("shapes"), obj.get("types")
        return None, None

    def node(self, pos: int) -> ETNode:
        """Decode everything recorded for the node at ``pos``."""
        f = self._fields(pos)
        parent_id = int(self.parent_ids[pos])
        return ETNode(
            pos=int(pos),
            id=int(self.ids[pos]),
            name=self.name(pos),
            rf_id=int(self.rf_id[pos]),
            parent_id=parent_id,
            ctrl_deps=parent_id,
            op_schema=self.op_schemas[self.op_schema_ids[pos]],
            tid=int(self.tid[pos]),
            fw_tid=int(self.fw_tid[pos]),
            seq_id=int(self.seq_id[pos]),
            fw_parent=int(self.fw_parent[pos]),
            scope=int(self.scope[pos]),
            attrs=self.attrs(pos, f),
            inputs=self._args(f, "input"),
            outputs=self._args(f, "output"),
        )

    def __repr__(self) -> str:
        return f"ETTrace({self.path!r}, schema={self.schema!r}, nodes={len(self)}, layout={self.layout})"
