"""Everything tracetui reads from an Nsight Systems SQLite export, named once: the tables and
their columns, the export schema versions it knows, the enum values it falls back on when an
export lacks its ``ENUM_*`` tables, the rules that turn the export's values into Kineto's
names, and the args an export adds to Kineto's (docs/formats.md, "Nsight Systems SQLite
export").  Light: no numpy, no sqlite3.
"""

from __future__ import annotations

import re

from ..kineto import schema as ks
from ..kineto.kinds import (
    CATEGORY_KIND,
    CUPTI_CONTEXT_SYNC,
    CUPTI_EVENT_SYNC,
    CUPTI_STREAM_SYNC,
    CUPTI_STREAM_WAIT,
    Kind,
)

# ---- tables ------------------------------------------------------------------------------
STRING_IDS = "StringIds"
META_EXPORT = "META_DATA_EXPORT"
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX = "NVTX_EVENTS"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
CUDA_EVENT = "CUPTI_ACTIVITY_KIND_CUDA_EVENT"
GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
PROCESSES = "PROCESSES"
THREAD_NAMES = "ThreadNames"
GPU_INFO = "TARGET_INFO_GPU"
CONTEXT_INFO = "TARGET_INFO_CUDA_CONTEXT_INFO"
SESSION_START = "TARGET_INFO_SESSION_START_TIME"
ENUM_MEMCPY_OPER = "ENUM_CUDA_MEMCPY_OPER"
ENUM_MEM_KIND = "ENUM_CUDA_MEM_KIND"
ENUM_SYNC_TYPE = "ENUM_CUPTI_SYNC_TYPE"
ENUM_EVENT_CLASS = "ENUM_NSYS_EVENT_CLASS"

#: tables looked at with the columns they have (GPU properties; graphs traced whole, only counted)
OTHER_TABLES = (GPU_INFO, GRAPH_TRACE)
#: tables every export has: without them a file is no export
REQUIRED_TABLES = (STRING_IDS, META_EXPORT)
#: the event tables, each read when present (an export writes a table only when it captured
#: something of its kind), with the columns each must have
EVENT_COLUMNS: dict[str, tuple[str, ...]] = {
    KERNEL: ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "demangledName",
             "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
             "dynamicSharedMemory"),
    RUNTIME: ("start", "end", "globalTid", "correlationId", "nameId"),
    NVTX: ("start", "end", "eventType", "globalTid"),
    MEMCPY: ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "bytes", "copyKind"),
    MEMSET: ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "bytes"),
    SYNC: ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "syncType"),
}
#: columns of the event tables read when an export has them (older schemas lack some)
OPTIONAL_COLUMNS: dict[str, tuple[str, ...]] = {
    KERNEL: ("localMemoryPerThread", "graphId", "graphNodeId"), RUNTIME: ("eventClass", "returnValue"),
    NVTX: ("text", "textId", "domainId"), MEMCPY: ("srcKind", "dstKind"), MEMSET: ("memKind", "value"),
    SYNC: ("eventId", "eventSyncId"),
}
#: columns of the other tables read (a table that lacks one is not read)
OTHER_COLUMNS: dict[str, tuple[str, ...]] = {
    STRING_IDS: ("id", "value"),
    META_EXPORT: ("name", "value"),
    PROCESSES: ("globalPid", "pid", "name"),
    THREAD_NAMES: ("nameId", "globalTid"),
    CUDA_EVENT: ("streamId", "correlationId", "globalPid", "eventSyncId"),
    CONTEXT_INFO: ("processId", "deviceId", "contextId"),
    ENUM_MEMCPY_OPER: ("id", "name", "label"),
    ENUM_MEM_KIND: ("id", "name", "label"),
    ENUM_SYNC_TYPE: ("id", "name", "label"),
    ENUM_EVENT_CLASS: ("id", "name", "label"),
}

# ---- META_DATA_EXPORT ----------------------------------------------------------------------
SCHEMA_VERSION = "EXPORT_SCHEMA_VERSION"  #: "3.25.0"
PRODUCT_VERSION = "EXPORT_PRODUCT_VERSION"  #: "2026.2.1.210"
#: the major export schema versions this reader knows (the layout of the tables above)
KNOWN_MAJOR_VERSIONS = frozenset({3})

# ---- ids ---------------------------------------------------------------------------------
#: ``globalTid``/``globalPid`` pack the process id in bits 24-47 and the thread id in bits 0-23
ID_BITS = 24
ID_MASK = (1 << ID_BITS) - 1
#: the linking key of a CUDA correlation id: ``pid * CORRELATION_KEY_BASE + correlationId``
#: (the id is unique within a process only; CUPTI ids are 32-bit, so the file's id stays
#: readable in the key's last ten digits)
CORRELATION_KEY_BASE = 10**10
#: CUPTI writes ``(uint32) -1`` where a stream or an id is unknown
UNKNOWN_ID = 2**32 - 1

# ---- NVTX ----------------------------------------------------------------------------------
NVTX_MARK = 34  #: NvtxMark: an instant
NVTX_PUSH_POP = 59  #: NvtxPushPopRange
NVTX_START_END = 60  #: NvtxStartEndRange
NVTX_DOMAIN_CREATE = 75  #: NvtxDomainCreate: ``text`` names ``domainId``
#: the event types read as ranges (on the thread that opened them)
NVTX_RANGES = (NVTX_PUSH_POP, NVTX_START_END)
#: what ``torch.autograd.profiler.emit_nvtx`` appends to an op's name, in this order
#: (``torch/csrc/profiler/util.cpp``, ``getNvtxStr``):
#: ``<op>[, seq = N][, op_id = N][, sizes = [[2, 3], []]][, input_op_ids = [(1,0), ...]]``
EMIT_NVTX_SEQ = ", seq = "
EMIT_NVTX_OP_ID = ", op_id = "
EMIT_NVTX_SIZES = ", sizes = "
EMIT_NVTX_INPUT_OP_IDS = ", input_op_ids = "
EMIT_NVTX_PARTS = (EMIT_NVTX_SEQ, EMIT_NVTX_OP_ID, EMIT_NVTX_SIZES, EMIT_NVTX_INPUT_OP_IDS)

# ---- names ---------------------------------------------------------------------------------
#: the version suffix of a CUDA API name in an export (``cudaLaunchKernel_v7000``); Kineto and
#: every rule of tracetui name the call without it
API_VERSION_SUFFIX = re.compile(r"_v\d+$")
#: ``ENUM_NSYS_EVENT_CLASS`` name of driver API calls (every other class is the runtime's)
DRIVER_CLASS = "TRACE_PROCESS_EVENT_CUDA_DRIVER"
#: ``ENUM_CUDA_MEMCPY_OPER`` names start with this; the rest is ``HTOD``, ``DTOD``, ``UVM_HTOD`` ...
MEMCPY_KIND_PREFIX = "CUDA_MEMCPY_KIND_"
#: ``ENUM_CUPTI_SYNC_TYPE`` name -> the name Kineto gives a CUPTI synchronisation record
SYNC_NAMES = {
    "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE": CUPTI_EVENT_SYNC,
    "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT": CUPTI_STREAM_WAIT,
    "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE": CUPTI_STREAM_SYNC,
    "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE": CUPTI_CONTEXT_SYNC,
}

#: the enum tables of export schema 3.25, used when an export lacks one: id -> (name, label)
DEFAULT_ENUMS: dict[str, dict[int, tuple[str, str]]] = {
    ENUM_MEMCPY_OPER: {0: ("CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"), 1: ("CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
                       2: ("CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"), 3: ("CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"),
                       4: ("CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"), 5: ("CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"),
                       6: ("CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"), 7: ("CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"),
                       8: ("CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"), 9: ("CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"),
                       10: ("CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"),
                       11: ("CUDA_MEMCPY_KIND_UVM_HTOD", "Unified Host-to-Device"),
                       12: ("CUDA_MEMCPY_KIND_UVM_DTOH", "Unified Device-to-Host"),
                       13: ("CUDA_MEMCPY_KIND_UVM_DTOD", "Unified Device-to-Device")},
    ENUM_MEM_KIND: {0: ("CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"),
                    1: ("CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"),
                    2: ("CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"), 3: ("CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array"),
                    4: ("CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed"),
                    5: ("CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static"),
                    6: ("CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", "Managed Static"),
                    7: ("CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown")},
    ENUM_SYNC_TYPE: {0: ("CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN", "Unknown"),
                     1: ("CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync"),
                     2: ("CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", "Stream wait sync"),
                     3: ("CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"),
                     4: ("CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync")},
    ENUM_EVENT_CLASS: {0: ("TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"),
                       1: ("TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver")},
}

# ---- args an export adds to Kineto's (Kineto's own names are in kineto/schema.py) -----------
#: the file's ``correlationId`` (Kineto's ``correlation`` holds the per-process linking key)
FILE_CORRELATION = "correlationId"
STATIC_SHARED_MEMORY = "static shared memory"  #: bytes per block; ``shared memory`` is static + dynamic
DYNAMIC_SHARED_MEMORY = "dynamic shared memory"
LOCAL_MEMORY_PER_THREAD = "local memory per thread"
GRAPH_ID = "graph id"  #: the CUDA graph a kernel ran in (its launch is the cudaGraphLaunch with its correlation)
GRAPH_NODE_ID = "graph node id"
API_NAME = "api name"  #: the call's name as the export writes it (with its version suffix)
RETURN_VALUE = "return value"
NVTX_DOMAIN = "domain"  #: the NVTX domain of a range (the default domain: absent)
OP_ID = "op_id"  #: emit_nvtx's op id (also the op's External id)
INPUT_OP_IDS = "input_op_ids"  #: emit_nvtx's producers of the op's inputs, as written
COPY_KIND = "copy kind"  #: ENUM_CUDA_MEMCPY_OPER's label
SRC_KIND = "src kind"  #: ENUM_CUDA_MEM_KIND's labels
DST_KIND = "dst kind"
MEMORY_KIND = "memory kind"
MEMSET_VALUE = "value"
SYNC_EVENT_ID = "event id"
#: the keys of the trace's ``metadata`` an export fills (besides Kineto's ``deviceProperties``)
META_NSYS = "nsys"  #: {product version, schema version, session start (UTC ns)}


def category_of(kind: Kind) -> str:
    """The category Kineto writes for events of ``kind`` (the first that
    :data:`~tracetui.kineto.kinds.CATEGORY_KIND` maps to it: ``kernel``, ``cuda_runtime``,
    ``gpu_memcpy`` ...)."""
    return next(c for c, k in CATEGORY_KIND.items() if k == kind)


def api_name(name: str) -> str:
    """A CUDA API name without the export's version suffix: ``cudaLaunchKernel_v7000`` ->
    ``cudaLaunchKernel``."""
    return API_VERSION_SUFFIX.sub("", name)


def memcpy_word(enum_name: str, label: str) -> str:
    """Kineto's word for a copy kind from its ``ENUM_CUDA_MEMCPY_OPER`` name:
    ``CUDA_MEMCPY_KIND_HTOD`` -> ``HtoD``, ``..._UVM_DTOH`` -> ``Unified DtoH``,
    ``..._UNKNOWN`` -> ``Unknown``; the label when the name has another form."""
    rest = enum_name[len(MEMCPY_KIND_PREFIX):] if enum_name.startswith(MEMCPY_KIND_PREFIX) else ""
    unified = rest.startswith("UVM_")
    rest = rest[4:] if unified else rest
    if rest == "UNKNOWN":
        return "Unknown"
    m = re.fullmatch(r"([A-Z])TO([A-Z])", rest)
    if not m:
        return label
    return ("Unified " if unified else "") + f"{m.group(1)}to{m.group(2)}"


def memcpy_name(word: str, src: str, dst: str) -> str:
    """Kineto's name of a copy: ``Memcpy HtoD (Pageable -> Device)``."""
    return f"Memcpy {word} ({src} -> {dst})"


def memset_name(memory: str) -> str:
    """Kineto's name of a memset: ``Memset (Device)``."""
    return f"Memset ({memory})"


def sync_name(enum_name: str, label: str) -> str:
    """Kineto's name of a CUPTI synchronisation record (:data:`SYNC_NAMES`); the export's label
    for a type Kineto does not name."""
    return SYNC_NAMES.get(enum_name, label)


#: ``TARGET_INFO_GPU`` column -> Kineto's ``deviceProperties`` key (the columns an export has
#: are read; ``maxThreadsPerMultiprocessor`` is ``maxWarpsPerSm * threadsPerWarp``)
GPU_PROPERTIES = {
    "id": ks.DEV_ID, "name": ks.DEV_NAME, "totalMemory": ks.DEV_TOTAL_MEMORY, "computeMajor": ks.DEV_CC_MAJOR,
    "computeMinor": ks.DEV_CC_MINOR, "maxThreadsPerBlock": ks.DEV_MAX_THREADS_PER_BLOCK,
    "maxRegistersPerBlock": ks.DEV_REGS_PER_BLOCK, "maxRegistersPerSm": ks.DEV_REGS_PER_SM,
    "threadsPerWarp": ks.DEV_WARP_SIZE, "maxShmemPerBlock": ks.DEV_SMEM_PER_BLOCK,
    "maxShmemPerBlockOptin": ks.DEV_SMEM_PER_BLOCK_OPTIN, "maxShmemPerSm": ks.DEV_SMEM_PER_SM,
    "smCount": ks.DEV_NUM_SMS,
}
GPU_WARPS_PER_SM = "maxWarpsPerSm"
