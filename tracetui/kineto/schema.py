"""Every Kineto ``args`` key tracetui reads, declared once (as HTA's
``configs/default_event_args.py`` does), and the typed structs msgspec decodes events into.

Any module that reads an arg uses these names; ``tests/test_architecture.py`` checks that
no other module spells one of them.  Units are the profiler's: durations and times in
microseconds, sizes in bytes.
"""

from __future__ import annotations

from typing import Union

import msgspec

# ---- linking ids (decoded for every event in one batch, see KeyArgs) -------------------
#: CUPTI correlation id: a runtime/driver launch call and the GPU work it launched share it
CORRELATION = "correlation"
#: id of the cpu_op (and its launches and GPU work) in the profiler's own numbering
EXTERNAL_ID = "External id"
#: older spelling of EXTERNAL_ID
EXTERNAL_ID_OLD = "external id"
#: GPU stream of a kernel/memcpy/memset
STREAM = "stream"
#: GPU device index of a kernel/memcpy/memset
DEVICE = "device"
#: CUDA context of a kernel/memcpy/memset/cuda_sync event
CONTEXT = "context"
#: RECORD_FUNCTION id of a cpu_op: equals the ET node's ``rf_id`` attribute (the ET link)
RECORD_FUNCTION_ID = "Record function id"
#: autograd sequence number: a backward op shares it with its forward op
SEQUENCE_NUMBER = "Sequence number"
#: thread of the forward op, on backward ops
FWD_THREAD_ID = "Fwd thread id"

# ---- kernel launch configuration (kernel events) ---------------------------------------
GRID = "grid"  #: [x, y, z] blocks (work-items for hipExtModuleLaunchKernel)
BLOCK = "block"  #: [x, y, z] threads per block
REGISTERS_PER_THREAD = "registers per thread"
SHARED_MEMORY = "shared memory"  #: bytes per block
BLOCKS_PER_SM = "blocks per SM"
WARPS_PER_SM = "warps per SM"
EST_OCCUPANCY = "est. achieved occupancy %"  #: Kineto's estimate, percent

# ---- memcpy / memset --------------------------------------------------------------------
BYTES = "bytes"
MEMORY_BANDWIDTH = "memory bandwidth (GB/s)"

# ---- runtime / driver calls -------------------------------------------------------------
CBID = "cbid"  #: CUPTI callback id of the API call

# ---- cuda_sync events (CUPTI synchronisation records, same correlation as their API call) ----
#: the stream whose cudaEventRecord a wait or an event sync waits on (-1: unknown)
WAIT_ON_STREAM = "wait_on_stream"
#: the correlation id of that cudaEventRecord call (-1: unknown)
WAIT_ON_EVENT_RECORD_CORR = "wait_on_cuda_event_record_corr_id"

# ---- cpu_op shapes (record_shapes=True) -------------------------------------------------
INPUT_DIMS = "Input Dims"
INPUT_TYPE = "Input type"
INPUT_STRIDES = "Input Strides"
CONCRETE_INPUTS = "Concrete Inputs"

# ---- collectives (record_param_comms cpu_ops and, in newer traces, NCCL kernels) ----------
COLLECTIVE_NAME = "Collective name"  #: "allreduce", "_allgather_base", "all_to_allv", ...
PG_NAME = "Process Group Name"  #: the same on every rank of the group ("0", "3", ...)
PG_DESC = "Process Group Description"
PG_RANKS = "Process Group Ranks"  #: "[0, 1, 2, 3]" (a string)
GROUP_SIZE = "Group size"
IN_MSG_NELEMS = "In msg nelems"  #: elements of this rank's input
OUT_MSG_NELEMS = "Out msg nelems"
COMM_DTYPE = "dtype"  #: "Float", "BFloat16", ...
COMM_SEQ = "Seq"  #: the process group's sequence number of the collective
COMMS_ID = "Comms Id"

# ---- [memory] instant events (profile_memory=True) --------------------------------------
#: the name of the instant event (ph "i") the profiler writes per allocation and free
MEMORY_EVENT_NAME = "[memory]"
MEM_ADDR = "Addr"  #: address of the block (an allocation and its free share it)
MEM_BYTES = "Bytes"  #: bytes allocated (negative: freed)
MEM_DEVICE_TYPE = "Device Type"  #: c10::DeviceType: 0 CPU, 1 CUDA (also ROCm), 12 XPU, 19 MTIA ...
MEM_DEVICE_ID = "Device Id"  #: device index; -1 for the CPU
MEM_TOTAL_ALLOCATED = "Total Allocated"  #: bytes allocated on the device after this event
MEM_TOTAL_RESERVED = "Total Reserved"  #: bytes the caching allocator holds on the device after it

# ---- deviceProperties entries (top-level list, one dict per GPU) -------------------------
#: the top-level key of the list
DEVICE_PROPERTIES = "deviceProperties"
DEV_ID = "id"
DEV_NAME = "name"
DEV_TOTAL_MEMORY = "totalGlobalMem"  #: bytes
DEV_NUM_SMS = "numSms"
DEV_CC_MAJOR = "computeMajor"
DEV_CC_MINOR = "computeMinor"
DEV_WARP_SIZE = "warpSize"  #: 32 (NVIDIA), 64 (AMD CDNA)
DEV_MAX_THREADS_PER_BLOCK = "maxThreadsPerBlock"
DEV_MAX_THREADS_PER_SM = "maxThreadsPerMultiprocessor"
DEV_REGS_PER_BLOCK = "regsPerBlock"
DEV_REGS_PER_SM = "regsPerMultiprocessor"
DEV_SMEM_PER_BLOCK = "sharedMemPerBlock"  #: bytes, without opt-in
DEV_SMEM_PER_BLOCK_OPTIN = "sharedMemPerBlockOptin"  #: bytes, the opt-in maximum
DEV_SMEM_PER_SM = "sharedMemPerMultiprocessor"  #: bytes (NVIDIA)
DEV_SMEM_PER_SM_AMD = "maxSharedMemoryPerMultiProcessor"  #: bytes (ROCm traces' spelling)

# ---- metadata events (ph "M") -----------------------------------------------------------
SORT_INDEX = "sort_index"
LABELS = "labels"
META_NAME = "name"

#: arg names distinctive enough that a literal elsewhere can only be a second spelling
#: (generic ones such as "device" or "bytes" are also column names of our own outputs)
DISTINCTIVE_ARG_NAMES = frozenset({
    EXTERNAL_ID, EXTERNAL_ID_OLD, RECORD_FUNCTION_ID, SEQUENCE_NUMBER, FWD_THREAD_ID, REGISTERS_PER_THREAD,
    SHARED_MEMORY, BLOCKS_PER_SM, WARPS_PER_SM, EST_OCCUPANCY, MEMORY_BANDWIDTH, INPUT_DIMS, INPUT_TYPE,
    INPUT_STRIDES, CONCRETE_INPUTS, MEM_DEVICE_TYPE, MEM_DEVICE_ID, MEM_TOTAL_ALLOCATED, MEM_TOTAL_RESERVED,
    COLLECTIVE_NAME, PG_NAME, PG_DESC, PG_RANKS, GROUP_SIZE, IN_MSG_NELEMS, OUT_MSG_NELEMS, COMMS_ID,
    WAIT_ON_STREAM, WAIT_ON_EVENT_RECORD_CORR,
})

#: an absent ``ts``/``args`` in :class:`Event`
EMPTY_RAW = msgspec.Raw(b"")


class Event(msgspec.Struct, gc=False):
    """One traceEvents element; ``ts`` and ``args`` stay raw JSON (decoded later)."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: Union[int, str] = 0
    tid: Union[int, str] = 0
    ts: msgspec.Raw = EMPTY_RAW
    dur: float = 0.0
    id: Union[int, str, None] = None
    bp: Union[str, None] = None
    args: msgspec.Raw = EMPTY_RAW


class KeyArgs(msgspec.Struct, gc=False):
    """The args fields that linking needs; every other field stays raw."""

    correlation: int = msgspec.field(default=-1, name=CORRELATION)
    external_id: int = msgspec.field(default=-1, name=EXTERNAL_ID)
    external_id_old: int = msgspec.field(default=-1, name=EXTERNAL_ID_OLD)
    stream: int = -1
    device: int = -1
    rf_id: int = msgspec.field(default=0, name=RECORD_FUNCTION_ID)
    seq: int = msgspec.field(default=-1, name=SEQUENCE_NUMBER)
    fwd_tid: int = msgspec.field(default=-1, name=FWD_THREAD_ID)


#: KeyArgs fields in column order (each becomes an int64 column of the decoded trace)
KEY_FIELDS = tuple(f.name for f in msgspec.structs.fields(KeyArgs))
#: field -> value when the arg is absent
KEY_DEFAULTS = {f.name: f.default for f in msgspec.structs.fields(KeyArgs)}
#: field -> the arg's name in the JSON
KEY_JSON = {f.name: f.encode_name for f in msgspec.structs.fields(KeyArgs)}
