"""Every field of the driver-call trace layouts tracetui reads, declared once.

Driver-call traces are JSON Lines written by tracers below PyTorch: uprobes on ``libcuda``
and kprobes on ``nvidia.ko`` (bpftrace or BCC), an LD_PRELOAD hook, or a Kubernetes sidecar
(``../shared/FORMATS.md``, "Driver-call traces").  Only lines that are JSON objects are
events; banners, heartbeats, summaries and map dumps are skipped and counted.  The four
layouts are told apart by their keys, line by line (``driver/rows.py``):

=========  ==========================================  ============  ======================
layout     keys                                        ``ts`` unit   begin/end pairing
=========  ==========================================  ============  ======================
bpftrace   ``event_id``, ``type`` a string, ``tid``      milliseconds  thread, name, depth
preload    ``op_id``, ``phase`` B/E, bare ``name``       seconds       ``op_id``
bcc        ``event_id``, ``type`` an integer 1-7         seconds       thread, depth
sidecar    ``func`` (probe string), ``phase`` "entry"    milliseconds  entries only
=========  ==========================================  ============  ======================

All times in the model are microseconds; sizes are bytes.
"""

from __future__ import annotations

from enum import IntEnum

import msgspec

from .. import units

# ---- layouts ------------------------------------------------------------------------------
BPFTRACE = "bpftrace"
PRELOAD = "preload"
BCC = "bcc"
SIDECAR = "sidecar"
LAYOUTS = (BPFTRACE, PRELOAD, BCC, SIDECAR)
#: microseconds per unit of ``ts`` in each layout
US_PER_TS = {BPFTRACE: 1e3, PRELOAD: 1e6, BCC: 1e6, SIDECAR: 1e3}
#: what each layout is, for messages
LAYOUT_TITLES = {
    BPFTRACE: f"bpftrace ({units.MS} since the tracer started)",
    PRELOAD: "LD_PRELOAD hook (s, CLOCK_MONOTONIC)",
    BCC: "BCC tracer (s)",
    SIDECAR: f"Kubernetes sidecar ({units.MS}, entries only)",
}

# ---- field names ---------------------------------------------------------------------------
TS = "ts"
EVENT_ID = "event_id"
OP_ID = "op_id"
PID = "pid"
TID = "tid"
DEPTH = "depth"
PHASE = "phase"  #: "B"/"E" (bpftrace, preload), "entry" (sidecar)
TYPE = "type"  #: a string (bpftrace, sidecar) or an integer 1-7 (BCC)
NAME = "name"  #: the whole probe string (bpftrace) or a bare function name (preload)
FUNC = "func"  #: the probe string (sidecar)
OP = "op"  #: "alloc", "launch", "schedule_work" (bpftrace records)
SIZE = "size"  #: bytes allocated or transferred
TOTAL_ALLOCATED = "total_allocated"  #: bytes allocated so far by the process (bpftrace)
DIRECTION = "direction"  #: "H2D", "D2H", "D2D"
DURATION_MS = "duration_ms"  #: transfer records
DURATION_US = "duration_us"  #: end lines of calls and ioctls
BANDWIDTH_GBPS = "bandwidth_gbps"
GRID = "grid"  #: [x, y, z] blocks of a kernel launch
BLOCK = "block"  #: [x, y, z] threads per block
THREADS = "threads"  #: total threads of a kernel launch
IOCTL_CMD = "ioctl_cmd"  #: the ioctl command (begin line of a kernel-space ioctl)
RETVAL = "retval"  #: return value on end lines (bpftrace): CUresult, 0 = success
RESULT_CODE = "result_code"  #: return value on end lines (preload)
RESULT_PTR = "result_ptr"  #: returned pointer on end lines (preload)
FD = "fd"  #: syscall records
CMD = "cmd"  #: syscall records: the ioctl command

# ---- values ---------------------------------------------------------------------------------
BEGIN = "B"
END = "E"
ENTRY = "entry"
#: bpftrace ``type`` values
T_USERSPACE = "userspace"  #: an API call (begin/end)
T_KERNEL = "kernel"  #: a kernel launch record when ``op`` is "launch", else a kernel-space ioctl
T_MEMORY = "memory"
T_TRANSFER = "transfer"
T_KERNEL_MEMORY = "kernel_memory"
T_SCHEDULER = "scheduler"
T_SYSCALL = "syscall"
OP_LAUNCH = "launch"
#: sidecar ``type`` values: driver API or runtime API entries
T_CUDA_API = "cuda_api"
T_CUDA_RUNTIME = "cuda_runtime"
#: BCC's integer ``type`` values
BCC_CALL_ENTER, BCC_CALL_EXIT, BCC_LAUNCH, BCC_ALLOC, BCC_COPY, BCC_IOCTL_ENTER, BCC_IOCTL_EXIT = range(1, 8)
DIRECTIONS = ("H2D", "D2H", "D2D")
#: BCC and the bpftrace script number directions 1-3 in this order
DIRECTION_CODES = {1: "H2D", 2: "D2H", 3: "D2D"}

#: a record is attached to a call of its thread that is open within this many µs of the
#: record's time: tracers print records from the same probe as the call's begin or end
#: line (a kernel launch at entry, an allocation or transfer at return), a few µs apart
RECORD_SLACK_US = 100.0


class What(IntEnum):
    """What one event of a driver-call trace is (a uint8 column)."""

    CALL = 0  #: a user-space API call (cuLaunchKernel ...), begin/end paired
    ENTRY = 1  #: a call's entry alone (sidecar): no duration
    IOCTL = 2  #: a kernel-space ioctl (nvidia_ioctl), begin/end paired
    LAUNCH = 3  #: kernel launch record: grid, block, threads
    ALLOC = 4  #: memory allocation record: size, running total
    TRANSFER = 5  #: memory transfer record: direction, size, duration, bandwidth
    KERNEL_MEMORY = 6  #: a kernel-space allocation (nv_mem_alloc)
    SCHEDULER = 7  #: a kernel-space work item (nv_schedule_work)
    SYSCALL = 8  #: an ioctl system call record: fd, cmd
    OTHER = 9  #: a record of a type tracetui does not know (named in the warnings)
    PHASE = 10  #: a pipeline phase span derived by tracetui (driver/phases.py)


#: event names of records, and the record each preferably belongs to (a call-name prefix)
RECORD_NAMES = {
    What.LAUNCH: "kernel launch",
    What.ALLOC: "memory alloc",
    What.KERNEL_MEMORY: "kernel memory alloc",
    What.SCHEDULER: "schedule_work",
    What.SYSCALL: "ioctl syscall",
}
RECORD_CALL_PREFIX = {What.LAUNCH: ("cuLaunch",), What.ALLOC: ("cuMemAlloc",), What.TRANSFER: ("cuMemcpy",)}

# ---- Kineto-style categories of the model's events (kineto/kinds.py maps them to kinds) --------
CAT_CALL = "driver_call"
CAT_IOCTL = "kernel_ioctl"
CAT_RECORD = "driver_record"
CAT_PHASE = "driver_phase"


#: ``retval``/``result_code`` when the line gives none (any int64 return value is possible)
NO_RETVAL = -(2**63)


class Line(msgspec.Struct, gc=False):
    """One JSON line of any layout: every field tracetui reads (others stay in the raw line).

    A field the line lacks takes its default, chosen so that each field reads into a numpy
    column without a Python step per line: -1 for ids, sizes and depths (never negative in
    a valid line), NaN for times, "" for strings, ``NO_RETVAL`` for return values."""

    ts: float = float("nan")
    event_id: int = -1
    op_id: int = -1
    pid: int = -1
    tid: int = -1
    depth: int = -1
    phase: str = ""
    type: int | str = ""
    name: str = ""
    func: str = ""
    op: str = ""
    size: int = -1
    total_allocated: int = -1
    direction: str | int = ""
    duration_ms: float = float("nan")
    duration_us: float = float("nan")
    bandwidth_gbps: float = float("nan")
    grid: list[int] | None = None
    block: list[int] | None = None
    threads: int = -1
    ioctl_cmd: int = -1
    retval: int = NO_RETVAL
    result_code: int = NO_RETVAL
    result_ptr: str = ""
    fd: int = -1
    cmd: int = -1


def function_name(probe: str) -> str:
    """``uprobe:/usr/lib/x86_64-linux-gnu/libcuda.so.1:cuLaunchKernel`` -> ``cuLaunchKernel``;
    ``kretprobe:nvidia_ioctl`` -> ``nvidia_ioctl``; a bare name is returned as it is."""
    return probe.rsplit(":", 1)[-1] if ":" in probe else probe


def call_family(name: str) -> str:
    """The API family of a versioned name: ``cuMemAlloc_v2`` -> ``cuMemAlloc`` (``_ptsz`` and
    ``_ptds``, the per-thread default-stream variants, are folded too)."""
    base = name
    for suffix in ("_ptsz", "_ptds"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    head, sep, tail = base.rpartition("_v")
    if sep and head and tail.isdigit():
        base = head
    return base


def api_of(name: str) -> str:
    """"runtime" (``cuda*``: libcudart), "driver" (``cu*``: libcuda) or "other"."""
    if name.startswith("cuda"):
        return "runtime"
    return "driver" if name.startswith("cu") else "other"
