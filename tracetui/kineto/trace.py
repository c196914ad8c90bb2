"""KinetoTrace: one loaded Kineto trace as columns, its op tree and its links.

Node ids: ``0 .. n_events-1`` are events (file order, metadata and flow events
excluded); ``n_events + k`` is the synthetic root node of lane ``k`` (a thread or a
GPU stream).  All times are float64 **microseconds relative to** ``origin_us``.

Links kept here:
- host nesting: ``parent`` / ``children(node)`` (python_function > user_annotation >
  cpu_op > runtime/driver, by ts/dur on one pid/tid);
- launch -> GPU work: a runtime/driver event's children are the kernels, memcpys and
  memsets with its ``correlation``; ``launch_of[gpu_event]`` is the launch (-1: none);
- ``cpu_op_of[node]``: the innermost cpu_op at or above a node (for a GPU event: above
  its launch), -1 when none;
- forward/backward: ``fwd_of[bwd_op]`` is the forward cpu_op (-1: none).

``subtree`` and ``gpu_events_of`` slice a preorder numbering of the tree (``order.py``),
computed once on first use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from ..errors import LoadWarning
from ..tree.csr import csr_children
from ..tree.preorder import Preorder, tree_preorder
from . import schema
from .columns import lenient_decode
from .kinds import GPU_KINDS, GPU_WORK_KINDS, Kind, device_word_of
from .lanes import Lane
from .sniff import FORMAT_NAME

#: events per msgspec call in :meth:`KinetoTrace.args_batch` (bounds the joined document's size)
_ARGS_CHUNK = 65536


@dataclass
class GpuLinkStats:
    """How GPU events were attached to their launches (counts of events)."""

    gpu_events: int = 0  #: kernels + memcpy + memset
    linked: int = 0  #: attached to a launch by correlation (or by flow when correlation is missing)
    linked_by_flow_only: int = 0
    confirmed_by_flow: int = 0  #: linked and an ac2g flow says the same
    launch_missing: int = 0  #: the correlation's launch event is not in the trace
    no_correlation: int = 0  #: no correlation and no flow
    graph_launches: int = 0
    graph_kernels: int = 0  #: GPU events owned by a cuda/hipGraphLaunch

    @property
    def unlinked(self) -> int:
        return self.gpu_events - self.linked


@dataclass
class FlowTable:
    """Flow events (ph s/f/t): launch (ac2g) and forward->backward (fwdbwd) arrows."""

    ph: np.ndarray  #: uint8 code: ord('s'), ord('f'), ord('t')
    cat: list[str]
    flow_id: list[Any]
    pid: list[Any]
    tid: list[Any]
    ts: np.ndarray  #: µs relative to origin


@dataclass
class KinetoTrace:
    path: str
    origin_us: int  #: absolute µs of relative time 0
    metadata: dict[str, Any]  #: top-level keys except traceEvents
    # --- event columns (length n) ---
    ts: np.ndarray  #: float64 µs relative to origin
    dur: np.ndarray  #: float64 µs
    kind: np.ndarray  #: uint8 Kind
    ph: np.ndarray  #: uint8 ord(ph)
    name_id: np.ndarray  #: int32 into names
    names: list[str]
    cat_id: np.ndarray  #: int16 into cats
    cats: list[str]
    pids: list[Any]  #: per event pid (as in the file)
    tids: list[Any]
    correlation: np.ndarray  #: int64, -1 none
    external_id: np.ndarray  #: int64, -1 none
    rf_id: np.ndarray  #: int64 "Record function id", 0 none
    seq: np.ndarray  #: int64 "Sequence number", -1 none
    fwd_tid: np.ndarray  #: int64 "Fwd thread id", -1 none
    device: np.ndarray  #: int64 (GPU events), -1 none
    stream: np.ndarray  #: int64 (GPU events), -1 none
    args_blob: bytes
    args_offsets: np.ndarray
    lane_of: np.ndarray  #: int32 lane index per event (-1: not on a lane)
    # --- tree (length n + n_lanes) ---
    parent: np.ndarray  #: int32, -1 for lane roots and events outside the tree
    child_start: np.ndarray  #: int64 CSR offsets (len nodes+1)
    child_index: np.ndarray  #: int32 children, each node's children in ts order
    depth: np.ndarray  #: int32; lane roots are 0 (exact at any depth)
    lanes: list[Lane]
    # --- links ---
    launch_of: np.ndarray  #: int32 per event: launching runtime/driver event for GPU work, -1
    cpu_op_of: np.ndarray  #: int32 per node: innermost cpu_op at/above (GPU: above its launch)
    fwd_of: np.ndarray  #: int32 per event: forward op of a backward op, -1
    gpu_stats: GpuLinkStats
    flows: FlowTable
    process_names: dict[Any, str] = field(default_factory=dict)
    thread_names: dict[tuple[Any, Any], str] = field(default_factory=dict)
    process_labels: dict[Any, str] = field(default_factory=dict)
    warnings: list[LoadWarning] = field(default_factory=list)
    #: reason -> elements of traceEvents that are not separate events in the model (not a JSON
    #: object, an E event merged into its B event, ...); metadata and flow events are not counted
    rejected: dict[str, int] = field(default_factory=dict)
    bytes_lost: int = 0  #: bytes after a truncation point
    nopy_parent: np.ndarray | None = None  #: parent skipping python_function nodes
    #: the format the events were read from (``tracetui.formats``: ``kineto``, ``nsys`` ...)
    source_format: str = FORMAT_NAME
    _nopy_csr: tuple[np.ndarray, np.ndarray] | None = None
    _ext_index: dict | None = None
    _preorder: Preorder | None = None
    #: id(list) -> (int32 codes, distinct values) for pids, tids and the flow lists, as the
    #: build interned them: the cache writer stores these instead of re-interning the lists
    _list_codes: dict[int, tuple[np.ndarray, list[Any]]] | None = None

    def __getattr__(self, name: str) -> Any:
        """A field of a trace reopened from a big cache entry, read (and checked) on first use
        (:mod:`tracetui.kineto.persist`: ``DEFERRED``; reached only for an attribute missing
        from the instance)."""
        deferred = self.__dict__.get("_deferred")
        if deferred is not None and name in deferred:
            value = deferred[name].value()
            self.__dict__[name] = value
            deferred.pop(name, None)
            return value
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self) -> dict[str, Any]:
        """Every field, deferred ones read (a copy holds no open entry)."""
        for name in list(self.__dict__.get("_deferred") or ()):
            getattr(self, name)
        return {k: v for k, v in self.__dict__.items() if k != "_deferred"}

    # ------------------------------------------------------------------ basics
    @property
    def n_events(self) -> int:
        return int(self.ts.shape[0])

    @property
    def n_nodes(self) -> int:
        return int(self.parent.shape[0])

    @property
    def name_of_file(self) -> str:
        return os.path.basename(self.path)

    def is_lane_node(self, node: int) -> bool:
        return node >= self.n_events

    def lane_of_node(self, node: int) -> Lane | None:
        if node >= self.n_events:
            return self.lanes[node - self.n_events]
        li = int(self.lane_of[node])
        return self.lanes[li] if li >= 0 else None

    def name(self, node: int) -> str:
        if node >= self.n_events:
            return self.lanes[node - self.n_events].label
        return self.names[self.name_id[node]]

    def category(self, event: int) -> str:
        return self.cats[self.cat_id[event]]

    def kind_of(self, node: int) -> Kind | None:
        return None if node >= self.n_events else Kind(int(self.kind[node]))

    def node_span(self, node: int) -> tuple[float, float]:
        """(start, end) in µs of an event, or of everything under a lane node."""
        if node < self.n_events:
            return float(self.ts[node]), float(self.ts[node] + self.dur[node])
        kids = self.children(node)
        if len(kids) == 0:
            return 0.0, 0.0
        kids = kids[kids < self.n_events]
        ends = self.ts[kids] + self.dur[kids]
        return float(np.nanmin(self.ts[kids])), float(np.nanmax(ends))

    def abs_ts_us(self, event: int) -> float:
        """Absolute timestamp (µs since the profiler's clock origin); may lose sub-µs digits."""
        return self.origin_us + float(self.ts[event])

    def args(self, event: int) -> dict[str, Any]:
        """All args of an event, decoded on demand (big integers kept exact, numbers beyond
        the float range shown as +-inf)."""
        if event >= self.n_events:
            return {}
        a, b = int(self.args_offsets[event]), int(self.args_offsets[event + 1])
        if a == b:
            return {}
        try:
            obj = lenient_decode(self.args_blob[a:b])
        except (msgspec.DecodeError, UnicodeDecodeError):
            return {"<undecodable args>": self.args_blob[a:b].decode("utf-8", "replace")}
        return obj if isinstance(obj, dict) else {"<args>": obj}

    def args_batch(self, events: np.ndarray, struct: type) -> list[Any]:
        """The args of many events decoded into ``struct`` instances, one msgspec call per
        64k events (C-level slicing, no Python step per event).

        Events without args give a default instance; if a batch cannot be decoded as a
        whole (a field of an unexpected shape), its events are decoded one by one and those
        that still fail give the default.
        """
        events = np.asarray(events, dtype=np.int64)
        out: list[Any] = []
        for s in range(0, events.size, _ARGS_CHUNK):
            out.extend(self._args_chunk(events[s:s + _ARGS_CHUNK], struct))
        return out

    def _args_chunk(self, events: np.ndarray, struct: type) -> list[Any]:
        blob, offs = self.args_blob, self.args_offsets
        parts = list(map(blob.__getitem__, map(slice, offs[events].tolist(), offs[events + 1].tolist())))
        parts = [p or b"{}" for p in parts]
        try:
            return msgspec.json.decode(b"[" + b",".join(parts) + b"]", type=list[struct])
        except (msgspec.DecodeError, msgspec.ValidationError):
            out = []
            for p in parts:
                try:
                    out.append(msgspec.json.decode(p, type=struct))
                except (msgspec.DecodeError, msgspec.ValidationError):
                    out.append(struct())
            return out

    # ------------------------------------------------------------------ tree
    def children(self, node: int) -> np.ndarray:
        return self.child_index[self.child_start[node]:self.child_start[node + 1]]

    def roots(self) -> list[int]:
        return [lane.node for lane in self.lanes]

    def ancestors(self, node: int) -> list[int]:
        """Parent chain from the node's parent up to its lane root (nearest first)."""
        out = []
        p = int(self.parent[node])
        while p >= 0:
            out.append(p)
            p = int(self.parent[p])
        return out

    @property
    def order(self) -> Preorder:
        """Preorder numbering of the tree (computed on first use, then cached)."""
        if self._preorder is None:
            self._preorder = tree_preorder(self.parent, self.depth, self.child_start, self.child_index,
                                           np.asarray(self.roots(), dtype=np.int64))
        return self._preorder

    def subtree(self, node: int) -> np.ndarray:
        """All nodes under ``node`` (inclusive), preorder (children by start time), as int64."""
        sub = self.order.subtree(node)
        if sub.size:
            return sub.copy()
        return self._walk(node)  # an event outside the tree

    def _walk(self, node: int) -> np.ndarray:
        out = []
        stack = [node]
        while stack:
            x = stack.pop()
            out.append(x)
            kids = self.children(x)
            if len(kids):
                stack.extend(kids[::-1].tolist())
        return np.asarray(out, dtype=np.int64)

    def nopy_children(self, node: int) -> np.ndarray:
        """Children in the view that hides python_function rows (their children move up)."""
        if self._nopy_csr is None:
            keep = self.nopy_parent.copy()
            keep[: self.n_events][self.kind == int(Kind.PYTHON)] = -1
            nodes = np.arange(self.n_nodes)
            self._nopy_csr = csr_children(keep, self._node_ts(), nodes)
        start, index = self._nopy_csr
        return index[start[node]:start[node + 1]]

    def _node_ts(self) -> np.ndarray:
        out = np.zeros(self.n_nodes, dtype=np.float64)
        out[: self.n_events] = self.ts
        return out

    # ------------------------------------------------------------------ links
    def gpu_events_of(self, node: int) -> np.ndarray:
        """Every GPU event (kernel/memcpy/memset) under ``node``, in start-time order."""
        sub = self.order.subtree(node)
        if not sub.size:
            sub = self._walk(node)
        sub = sub[sub < self.n_events]
        k = self.kind[sub]
        gpu = sub[np.isin(k, [int(x) for x in GPU_WORK_KINDS])]
        return gpu[np.argsort(self.ts[gpu], kind="stable")]

    def is_gpu_event(self, node: int) -> bool:
        return node < self.n_events and Kind(int(self.kind[node])) in GPU_KINDS

    def is_gpu_work(self, node: int) -> bool:
        return node < self.n_events and Kind(int(self.kind[node])) in GPU_WORK_KINDS

    def find_by_external_id(self, external_id: int, pid: Any = None, tid: Any = None,
                            kinds: tuple[Kind, ...] = (Kind.CPU_OP, Kind.ANNOTATION)) -> list[int]:
        """Events with this External id (optionally on one pid/tid), cpu_ops first."""
        if self._ext_index is None:
            idx: dict[int, list[int]] = {}
            mask = np.isin(self.kind, [int(k) for k in (Kind.CPU_OP, Kind.ANNOTATION, Kind.PYTHON,
                                                          Kind.RUNTIME, Kind.DRIVER)])
            for i in np.flatnonzero(mask & (self.external_id >= 0)).tolist():
                idx.setdefault(int(self.external_id[i]), []).append(i)
            self._ext_index = idx
        out = []
        for i in self._ext_index.get(int(external_id), []):
            if kinds and Kind(int(self.kind[i])) not in kinds:
                continue
            if pid is not None and self.pids[i] != pid:
                continue
            if tid is not None and self.tids[i] != tid:
                continue
            out.append(i)
        return out

    # ------------------------------------------------------------------ metadata
    @property
    def device_properties(self) -> list[dict[str, Any]]:
        dp = self.metadata.get(schema.DEVICE_PROPERTIES)
        return dp if isinstance(dp, list) else []

    @property
    def distributed_info(self) -> dict[str, Any]:
        di = self.metadata.get("distributedInfo")
        return di if isinstance(di, dict) else {}

    @property
    def base_time_ns(self) -> int | None:
        v = self.metadata.get("baseTimeNanoseconds")
        return v if isinstance(v, int) else None

    def device_props(self, device: Any) -> dict[str, Any] | None:
        """The deviceProperties entry of GPU ``device`` (its ``id``), None when absent."""
        for d in self.device_properties:
            if isinstance(d, dict) and d.get(schema.DEV_ID) == device:
                return d
        return None

    def device_name(self, device: int) -> str | None:
        d = self.device_props(device)
        return d.get(schema.DEV_NAME) if d is not None else None

    def kind_counts(self) -> dict[str, int]:
        vals, counts = np.unique(self.kind, return_counts=True)
        return {Kind(int(v)).name.lower(): int(c) for v, c in zip(vals, counts)}

    def device_word(self) -> str:
        """What labels call this trace's device work: ``"GPU"`` (kernels, memcpys and memsets
        on GPU streams: CUDA, ROCm, XPU ...) or ``"device"`` (MTIA's CCP events, Gaudi's ops:
        :data:`~tracetui.kineto.kinds.NON_GPU_DEVICE_CATEGORIES`; not kernels)."""
        return device_word_of(self.cats)

    def device_work_counts(self) -> dict[str, Any]:
        """What a label counts: ``called`` ("GPU events" or "device events"), ``events`` (all
        device work: kernels + memcpys + memsets), and of them ``kernels`` (None on a "device"
        trace: its compute events are not kernels), ``memcpy``, ``memset``."""
        kinds = self.kind_counts()
        word = self.device_word()
        n = sum(kinds.get(Kind(k).name.lower(), 0) for k in GPU_WORK_KINDS)
        return {"called": f"{word} events", "events": n,
                "kernels": kinds.get("kernel", 0) if word == "GPU" else None,
                "memcpy": kinds.get("memcpy", 0), "memset": kinds.get("memset", 0)}

    def category_counts(self) -> dict[str, int]:
        vals, counts = np.unique(self.cat_id, return_counts=True)
        return {self.cats[int(v)]: int(c) for v, c in zip(vals, counts)}
