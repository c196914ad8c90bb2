"""Decode a rocprofv3 JSON document into columns: one numpy column per field of each record
kind, never an object per record kept.

The document is split with ``msgspec.Raw`` (no decoding of what is not read); each record list
is typed-decoded in chunks of :data:`CHUNK` records (bounded memory), each chunk's structs turned
into columns and dropped.  Field names are rocprofiler-sdk's (its cereal ``save`` functions);
a record without a field gets its default (a version that does not write it), a field of
another type is a one-line :class:`~tracetui.errors.TraceFormatError` naming where it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Union

import msgspec
import numpy as np

from ..errors import TraceFormatError
from . import schema as s

#: records typed-decoded per msgspec call
CHUNK = 1 << 16


class Handle(msgspec.Struct, gc=False):
    handle: int = 0


class Corr(msgspec.Struct, gc=False):
    internal: int = -1
    external: int = 0


class Dim3(msgspec.Struct, gc=False):
    x: int = 0
    y: int = 0
    z: int = 0


class DispatchInfo(msgspec.Struct, gc=False):
    agent_id: Handle = msgspec.field(default_factory=Handle)
    queue_id: Handle = msgspec.field(default_factory=Handle)
    kernel_id: int = -1
    dispatch_id: int = -1
    private_segment_size: int = 0
    group_segment_size: int = 0
    workgroup_size: Dim3 = msgspec.field(default_factory=Dim3)
    grid_size: Dim3 = msgspec.field(default_factory=Dim3)


class KernelDispatch(msgspec.Struct, gc=False):
    thread_id: int = 0
    correlation_id: Corr = msgspec.field(default_factory=Corr)
    start_timestamp: int = 0
    end_timestamp: int = 0
    dispatch_info: DispatchInfo = msgspec.field(default_factory=DispatchInfo)


class ApiRecord(msgspec.Struct, gc=False):
    """A hip_api, hsa_api, marker_api or rccl_api record (and what the others share)."""

    kind: int = -1
    operation: int = -1
    thread_id: int = 0
    correlation_id: Corr = msgspec.field(default_factory=Corr)
    start_timestamp: int = 0
    end_timestamp: int = 0


class MemoryCopy(ApiRecord, gc=False):
    dst_agent_id: Handle = msgspec.field(default_factory=Handle)
    src_agent_id: Handle = msgspec.field(default_factory=Handle)
    bytes: int = 0


class MemoryAllocation(ApiRecord, gc=False):
    agent_id: Handle = msgspec.field(default_factory=Handle)
    address: Union[str, int] = ""
    allocation_size: int = 0


class ScratchMemory(ApiRecord, gc=False):
    agent_id: Handle = msgspec.field(default_factory=Handle)
    queue_id: Handle = msgspec.field(default_factory=Handle)


class Agent(msgspec.Struct, gc=False):
    id: Handle = msgspec.field(default_factory=Handle)
    type: int = 0
    name: str = ""
    product_name: str = ""
    cu_count: int = 0
    wave_front_size: int = 0
    lds_size_in_kb: int = 0
    max_waves_per_cu: int = 0
    workgroup_max_size: int = 0
    gfx_target_version: int = 0
    node_id: int = -1
    logical_node_type_id: int = -1
    gpu_index: Union[int, None] = None
    mem_banks: list[dict[str, Any]] = msgspec.field(default_factory=list)


class KernelSymbol(msgspec.Struct, gc=False):
    kernel_id: int = -1
    kernel_name: str = ""
    formatted_kernel_name: str = ""
    demangled_kernel_name: str = ""
    sgpr_count: int = 0
    arch_vgpr_count: int = 0
    accum_vgpr_count: int = 0


class OpNames(msgspec.Struct, gc=False):
    kind: str = ""
    operations: list[str] = msgspec.field(default_factory=list)


class KeyValue(msgspec.Struct, gc=False):
    key: int = -1
    value: str = ""


class Strings(msgspec.Struct, gc=False):
    buffer_records: list[OpNames] = msgspec.field(default_factory=list)
    marker_api: list[KeyValue] = msgspec.field(default_factory=list)


class Metadata(msgspec.Struct, gc=False):
    pid: int = 0
    init_time: int = 0
    fini_time: int = 0
    command: list[str] = msgspec.field(default_factory=list)
    node: dict[str, Any] = msgspec.field(default_factory=dict)


#: the struct each buffer_records list decodes into
RECORD_TYPES: dict[str, type] = {
    s.KERNEL_DISPATCH: KernelDispatch, s.HIP_API: ApiRecord, s.HSA_API: ApiRecord, s.MARKER_API: ApiRecord,
    s.RCCL_API: ApiRecord, s.MEMORY_COPY: MemoryCopy, s.MEMORY_ALLOCATION: MemoryAllocation,
    s.SCRATCH_MEMORY: ScratchMemory,
}


@dataclass
class RecordColumns:
    """One record list as columns (every array of length ``n``; absent fields hold their default)."""

    what: str
    n: int
    cols: dict[str, np.ndarray] = field(default_factory=dict)
    texts: dict[str, list[Any]] = field(default_factory=dict)


#: per record kind: column name -> the attribute path of the struct (ints)
_INT_FIELDS: dict[type, dict[str, str]] = {
    ApiRecord: {"kind": "kind", "op": "operation", "tid": "thread_id", "corr": "correlation_id.internal",
                "ext": "correlation_id.external", "start": "start_timestamp", "end": "end_timestamp"},
}
_INT_FIELDS[KernelDispatch] = {
    "tid": "thread_id", "corr": "correlation_id.internal", "ext": "correlation_id.external",
    "start": "start_timestamp", "end": "end_timestamp", "agent": "dispatch_info.agent_id.handle",
    "queue": "dispatch_info.queue_id.handle", "kernel": "dispatch_info.kernel_id",
    "dispatch": "dispatch_info.dispatch_id", "scratch": "dispatch_info.private_segment_size",
    "lds": "dispatch_info.group_segment_size", "wx": "dispatch_info.workgroup_size.x",
    "wy": "dispatch_info.workgroup_size.y", "wz": "dispatch_info.workgroup_size.z",
    "gx": "dispatch_info.grid_size.x", "gy": "dispatch_info.grid_size.y", "gz": "dispatch_info.grid_size.z"}
_INT_FIELDS[MemoryCopy] = {**_INT_FIELDS[ApiRecord], "dst": "dst_agent_id.handle", "src": "src_agent_id.handle",
                           "bytes": "bytes"}
_INT_FIELDS[MemoryAllocation] = {**_INT_FIELDS[ApiRecord], "agent": "agent_id.handle", "size": "allocation_size"}
_INT_FIELDS[ScratchMemory] = {**_INT_FIELDS[ApiRecord], "agent": "agent_id.handle", "queue": "queue_id.handle"}
#: text fields kept as Python lists (few distinct values: addresses are the exception, and rare)
_TEXT_FIELDS: dict[type, dict[str, str]] = {MemoryAllocation: {"address": "address"}}


def where(path: str, exc: Exception) -> str:
    """msgspec's ``... - at `$[3].x` `` as ``rocprofiler-sdk-tool...`` text, one line."""
    msg = str(exc)
    if " - at `$" in msg:
        head, at = msg.rsplit(" - at `$", 1)
        return f"{head} (at {path}{at.rstrip('`')})"
    return f"{msg} (in {path})"


def _columns_of(structs: list[Any], kind: type) -> dict[str, np.ndarray]:
    out = {}
    n = len(structs)
    for col, attr in _INT_FIELDS[kind].items():
        try:
            out[col] = np.fromiter(map(attrgetter(attr), structs), dtype=np.int64, count=n)
        except OverflowError:  # beyond int64 (a handle): kept as unsigned bits
            out[col] = np.array([int(x) & (2**64 - 1) for x in map(attrgetter(attr), structs)],
                                dtype=np.uint64).view(np.int64)
    return out


def decode_records(path: str, raw: msgspec.Raw, what: str, where_path: str) -> RecordColumns:
    """The records of one ``buffer_records`` list (``raw``: its JSON array) as columns."""
    kind = RECORD_TYPES[what]
    try:
        items = msgspec.json.decode(raw, type=list[msgspec.Raw])
    except msgspec.ValidationError as exc:
        raise TraceFormatError(path, f"'{what}' is not a list of records ({where(where_path, exc)})") from None
    n = len(items)
    parts: list[dict[str, np.ndarray]] = []
    texts: dict[str, list[Any]] = {c: [] for c in _TEXT_FIELDS.get(kind, {})}
    for lo in range(0, n, CHUNK):
        chunk = items[lo:lo + CHUNK]
        try:
            structs = msgspec.json.decode(b"[" + b",".join(chunk) + b"]", type=list[kind])
        except msgspec.ValidationError as exc:
            msg = str(exc)
            if " - at `$[" in msg:  # the index within the chunk -> within the list
                head, at = msg.rsplit(" - at `$[", 1)
                idx, rest = at.split("]", 1)
                msg = f"{head} - at `$[{int(idx) + lo}]{rest}"
            raise TraceFormatError(path, f"a '{what}' record is not as rocprofv3 writes it "
                                         f"({where(where_path, type(exc)(msg))})") from None
        parts.append(_columns_of(structs, kind))
        for col, attr in _TEXT_FIELDS.get(kind, {}).items():
            texts[col].extend(map(attrgetter(attr), structs))
        del structs
    del items
    if not parts:
        parts = [{c: np.zeros(0, np.int64) for c in _INT_FIELDS[kind]}]
    cols = {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}
    return RecordColumns(what, n, cols, texts)


@dataclass
class ProcessRecord:
    """One process's record: its tables, and its record lists as columns."""

    index: int
    metadata: Metadata
    agents: list[Agent]
    symbols: dict[int, KernelSymbol]
    op_names: list[OpNames]
    markers: dict[int, str]
    records: dict[str, RecordColumns]
    #: buffer_records lists that hold records but are not read: name -> count
    not_read: dict[str, int]


#: the sections of a process record read besides its record lists, with their types
_SECTIONS: dict[str, Any] = {s.METADATA: Metadata, s.AGENTS: list[Agent], s.STRINGS: Strings,
                             s.KERNEL_SYMBOLS: list[KernelSymbol]}


def decode_process(path: str, raw: msgspec.Raw, index: int) -> ProcessRecord:
    """One element of the :data:`~.schema.TOOL_KEY` list."""
    at = f"{s.TOOL_KEY}[{index}]"
    try:
        top = msgspec.json.decode(raw, type=dict[str, msgspec.Raw])
    except msgspec.ValidationError:
        raise TraceFormatError(path, f"{at} is not a JSON object (a process record)") from None
    sec: dict[str, Any] = {}
    for name, kind in _SECTIONS.items():
        if name not in top:
            continue
        try:
            sec[name] = msgspec.json.decode(top[name], type=kind)
        except msgspec.ValidationError as exc:
            raise TraceFormatError(path, f"'{name}' is not as rocprofv3 writes it ({where(f'{at}.{name}', exc)})"
                                   ) from None
    strings = sec.get(s.STRINGS, Strings())
    records: dict[str, RecordColumns] = {}
    not_read: dict[str, int] = {}
    buffers = top.get(s.BUFFER_RECORDS)
    if buffers is not None:
        try:
            lists = msgspec.json.decode(buffers, type=dict[str, msgspec.Raw])
        except msgspec.ValidationError:
            raise TraceFormatError(path, f"{at}.{s.BUFFER_RECORDS} is not a JSON object") from None
        for name, body in lists.items():
            if name in RECORD_TYPES:
                records[name] = decode_records(path, body, name, f"{at}.{s.BUFFER_RECORDS}.{name}")
            else:
                count = _count(body)
                if count:
                    not_read[name] = count
    symbols = {k.kernel_id: k for k in sec.get(s.KERNEL_SYMBOLS, [])}
    markers = {kv.key: kv.value for kv in strings.marker_api}
    return ProcessRecord(index, sec.get(s.METADATA, Metadata()), sec.get(s.AGENTS, []), symbols,
                         strings.buffer_records, markers, records, not_read)


def _count(body: msgspec.Raw) -> int:
    try:
        items = msgspec.json.decode(body, type=list[msgspec.Raw])
    except msgspec.ValidationError:
        return 0
    return len(items)


def decode_document(path: str, data: bytes) -> list[ProcessRecord]:
    """Every process record of a rocprofv3 JSON document; TraceFormatError when it is none."""
    try:
        top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    except msgspec.ValidationError:
        raise TraceFormatError(path, "not a rocprofv3 JSON file: the document is not a JSON object") from None
    except msgspec.DecodeError as exc:
        from ..kineto.decode import as_format_error

        raise as_format_error(path, exc) from None
    body = top.get(s.TOOL_KEY)
    if body is None:
        keys = ", ".join(sorted(top)[:6]) or "none"
        raise TraceFormatError(path, f"not a rocprofv3 JSON file: no '{s.TOOL_KEY}' key (keys: {keys})")
    try:
        procs = msgspec.json.decode(body, type=list[msgspec.Raw])
    except msgspec.ValidationError:
        raise TraceFormatError(path, f"'{s.TOOL_KEY}' is not a list of process records") from None
    return [decode_process(path, raw, i) for i, raw in enumerate(procs)]
