"""Facts about the events of a driver-call trace, alone or linked to a Kineto trace: pure
functions over a :class:`~tracetui.driver.trace.DriverTrace` (numpy and the standard library),
used by the browser (detail pane, jumps, timeline, status line) and open to the CLI, the API
and the exports alike.

* the call an ioctl or record belongs to (:func:`owning_call`), the phase an event falls in
  (:func:`enclosing_phase`);
* the link: the Kineto runtime call of a driver event (:func:`linked_kineto`), the driver
  call of a Kineto call (:func:`linked_driver`), the GPU events a driver node reaches
  through the link (:func:`linked_gpu_events`);
* return values (``CUresult`` names for driver API calls, errno names for ioctls), the
  ioctl command decoded by the Linux ``_IOC`` layout (and NVIDIA's escape codes), the
  pairing flags said in words;
* what a call holds (:func:`call_contents`), the running allocation total
  (:func:`allocation_series`).

Times are µs; sizes bytes.  Names from the trace stay data (the callers make ``Text``).
"""

from __future__ import annotations

import errno
import os
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .. import units
from ..kineto.kinds import GPU_WORK_KINDS
from .pairing import Flag
from .pipeline import PHASE_NAMES
from .schema import LAYOUT_TITLES, What, api_of
from .trace import CALL_WHATS, DriverTrace

#: what a driver event is, in a few words (the detail pane's subtitle)
WHAT_TITLES = {
    What.CALL: "driver API call", What.ENTRY: "driver API call (entry only)", What.IOCTL: "kernel-space ioctl",
    What.LAUNCH: "kernel launch record", What.ALLOC: "memory allocation record",
    What.TRANSFER: "memory transfer record", What.KERNEL_MEMORY: "kernel-space allocation record",
    What.SCHEDULER: "kernel-space work item record", What.SYSCALL: "ioctl system call record",
    What.OTHER: "record of a type tracetui does not know", What.PHASE: "pipeline phase (derived by tracetui)",
}
RECORD_WHATS = (What.LAUNCH, What.ALLOC, What.TRANSFER, What.KERNEL_MEMORY, What.SCHEDULER, What.SYSCALL,
                What.OTHER)
DIRECTION_WORDS = {"H2D": "host to device", "D2H": "device to host", "D2D": "device to device"}
#: the rule of each phase (driver/pipeline.py), as the detail pane states it
PHASE_RULES = {
    "initialisation": "from the process's first call to its first allocation",
    "weight loading": "from the first allocation to the first kernel launch",
    "warm-up": "the first iteration (the launches up to the first synchronize), when there are two or more",
    "inference": "the iterations after the warm-up (all of them when there is only one), up to the end of the "
                 "synchronize that closes the last one",
    "output": "what follows the last iteration, up to the first free or destroy call after the last launch",
    "clean-up": "from the first free or destroy call after the last launch to the end",
}
assert set(PHASE_RULES) == set(PHASE_NAMES)
PHASE_PREFIX = "phase: "


def driver_of(kt) -> DriverTrace | None:
    """``kt`` when it holds driver events (alone or merged with a Kineto trace), else None."""
    return kt if isinstance(kt, DriverTrace) and kt.n_driver else None


def is_driver_event(kt, node: int) -> bool:
    return isinstance(kt, DriverTrace) and kt.is_driver_event(int(node))


def is_standalone(kt) -> bool:
    """A driver-call trace opened alone (no Kineto trace, so no GPU events and no ops)."""
    return driver_of(kt) is not None and kt.link is None


def what_of(kt: DriverTrace, ev: int) -> What:
    return What(int(kt.what[ev - kt.first]))


def owning_call(kt: DriverTrace, ev: int) -> int:
    """The call ``ev`` is (a call or entry), or belongs to (an ioctl, a record: its nearest
    enclosing call); -1 for a phase, a lane, or a record of no call."""
    node = int(ev)
    while node >= 0 and kt.is_driver_event(node):
        if what_of(kt, node) in CALL_WHATS:
            return node
        if what_of(kt, node) == What.PHASE:
            return -1
        node = int(kt.parent[node])
    return -1


def enclosing_phase(kt: DriverTrace, ev: int) -> str | None:
    """The name of the phase span holding ``ev`` (``warm-up``), None outside any."""
    node = int(kt.parent[ev])
    while node >= 0 and kt.is_driver_event(node):
        if what_of(kt, node) == What.PHASE:
            name = kt.name(node)
            return name[len(PHASE_PREFIX):] if name.startswith(PHASE_PREFIX) else name
        node = int(kt.parent[node])
    return None


def enclosing_call(kt: DriverTrace, ev: int) -> int:
    """The call that ``ev`` (a call) is nested in, -1 for none."""
    p = int(kt.parent[ev])
    return owning_call(kt, p) if p >= 0 and kt.is_driver_event(p) else -1


# ---------------------------------------------------------------------------- the link
def linked_kineto(kt, ev: int) -> int:
    """The Kineto call the driver event ``ev`` (or the call an ioctl/record belongs to) is
    linked to; -1 when none (or no link)."""
    if not is_driver_event(kt, ev) or kt.link is None:
        return -1
    call = owning_call(kt, ev)
    return int(kt.link.driver_to_kineto[call - kt.first]) if call >= 0 else -1


def linked_driver(kt, k: int) -> int:
    """The driver call linked to Kineto event ``k``; -1 when none."""
    link = getattr(kt, "link", None) if isinstance(kt, DriverTrace) else None
    if link is None or not 0 <= k < kt.first:
        return -1
    return int(link.kineto_to_driver[k])


def linked_gpu_events(kt, node: int, subtree: np.ndarray) -> np.ndarray:
    """GPU events reached from a driver node through the link, by start time: those of the
    Kineto call linked to the node's call (an ioctl or record: its call's); for a phase or
    a lane (``subtree``: its nodes), those of every linked call under it."""
    if kt.link is None:
        return np.empty(0, dtype=np.int64)
    if is_driver_event(kt, node) and what_of(kt, node) != What.PHASE:
        calls = np.array([linked_kineto(kt, node)], dtype=np.int64)
    else:
        sub = subtree[(subtree >= kt.first) & (subtree < kt.first + kt.n_driver)]
        calls = kt.link.driver_to_kineto[sub - kt.first]
    calls = calls[calls >= 0]
    if not calls.size:
        return np.empty(0, dtype=np.int64)
    gpu = np.flatnonzero(np.isin(kt.launch_of, calls))
    gpu = gpu[np.isin(kt.kind[gpu], [int(k) for k in GPU_WORK_KINDS])]
    return gpu[np.argsort(kt.ts[gpu], kind="stable")]


def link_quality(kt) -> str:
    """``heuristic link, clock offset ±0.0 µs`` (the offset's uncertainty)."""
    return f"heuristic link, clock offset ±{kt.link.uncertainty_us:,.1f} {units.US}"


# ---------------------------------------------------------------------------- words
#: CUresult values (cuda.h, enum cudaError_enum) a driver API call may return
CURESULT = {
    0: "CUDA_SUCCESS", 1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY",
    3: "CUDA_ERROR_NOT_INITIALIZED", 4: "CUDA_ERROR_DEINITIALIZED", 5: "CUDA_ERROR_PROFILER_DISABLED",
    34: "CUDA_ERROR_STUB_LIBRARY", 46: "CUDA_ERROR_DEVICE_UNAVAILABLE", 100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE", 102: "CUDA_ERROR_DEVICE_NOT_LICENSED", 200: "CUDA_ERROR_INVALID_IMAGE",
    201: "CUDA_ERROR_INVALID_CONTEXT", 205: "CUDA_ERROR_MAP_FAILED", 206: "CUDA_ERROR_UNMAP_FAILED",
    209: "CUDA_ERROR_NO_BINARY_FOR_GPU", 214: "CUDA_ERROR_ECC_UNCORRECTABLE", 218: "CUDA_ERROR_INVALID_PTX",
    222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", 300: "CUDA_ERROR_INVALID_SOURCE", 301: "CUDA_ERROR_FILE_NOT_FOUND",
    302: "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", 303: "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
    304: "CUDA_ERROR_OPERATING_SYSTEM", 400: "CUDA_ERROR_INVALID_HANDLE", 401: "CUDA_ERROR_ILLEGAL_STATE",
    500: "CUDA_ERROR_NOT_FOUND", 600: "CUDA_ERROR_NOT_READY", 700: "CUDA_ERROR_ILLEGAL_ADDRESS",
    701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", 702: "CUDA_ERROR_LAUNCH_TIMEOUT", 709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    710: "CUDA_ERROR_ASSERT", 715: "CUDA_ERROR_ILLEGAL_INSTRUCTION", 716: "CUDA_ERROR_MISALIGNED_ADDRESS",
    719: "CUDA_ERROR_LAUNCH_FAILED", 720: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", 800: "CUDA_ERROR_NOT_PERMITTED",
    801: "CUDA_ERROR_NOT_SUPPORTED", 802: "CUDA_ERROR_SYSTEM_NOT_READY", 803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    999: "CUDA_ERROR_UNKNOWN",
}


def return_words(what: What, name: str, value: int) -> tuple[str, bool]:
    """(the value said in words, whether it is an error): ``0 (CUDA_SUCCESS)``,
    ``200 (CUDA_ERROR_INVALID_IMAGE)``; an ioctl's ``-22 (EINVAL: Invalid argument)``."""
    if what == What.IOCTL:
        if value == 0:
            return "0 (success)", False
        if value < 0 and -value in errno.errorcode:
            return f"{value} ({errno.errorcode[-value]}: {os.strerror(-value)})", True
        return f"{value}", value < 0
    if api_of(name) == "driver" and value in CURESULT:
        return f"{value} ({CURESULT[value]})", value != 0
    return (f"{value}" + (" (success)" if value == 0 else "")), value != 0


FLAG_WORDS = {
    Flag.UNFINISHED: "no end line in the file: the end is inferred (its next sibling or last child)",
    Flag.NO_BEGIN: "no begin line in the file: it starts 'duration_us' before its end line",
    Flag.NAME_INFERRED: "the name is inferred from the record it holds (BCC lines name no function)",
}
_NO_BEGIN_NO_LENGTH = "no begin line in the file, and its end line gives no duration: it has no length"
_IOCTL_UNFINISHED = "no end line in the file: the end is inferred (the next line of its thread)"


def flag_words(kt: DriverTrace, ev: int) -> list[str]:
    """What is unusual about a call or ioctl, one sentence per flag."""
    flags = Flag(int(kt.flags[ev - kt.first]))
    out = []
    for flag, words in FLAG_WORDS.items():
        if not flags & flag:
            continue
        if flag == Flag.UNFINISHED and what_of(kt, ev) == What.IOCTL:
            words = _IOCTL_UNFINISHED
        elif flag == Flag.NO_BEGIN and float(kt.dur[ev]) <= 0.0:
            words = _NO_BEGIN_NO_LENGTH
        out.append(words)
    return out


def layout_title(kt: DriverTrace, ev: int) -> str:
    return LAYOUT_TITLES.get(kt.layout_name(ev), kt.layout_name(ev))


# ---------------------------------------------------------------------------- ioctl numbers
#: NVIDIA's escape codes (the ``nr`` of ioctls of type 'F' on /dev/nvidia*): nv_escape.h
#: (RM) and nv-ioctl-numbers.h (NV_IOCTL_BASE 200 + n)
NV_ESCAPES = {
    0x27: "NV_ESC_RM_ALLOC_MEMORY", 0x29: "NV_ESC_RM_FREE", 0x2A: "NV_ESC_RM_CONTROL", 0x2B: "NV_ESC_RM_ALLOC",
    0x34: "NV_ESC_RM_DUP_OBJECT", 0x35: "NV_ESC_RM_SHARE", 0x4E: "NV_ESC_RM_MAP_MEMORY",
    0x4F: "NV_ESC_RM_UNMAP_MEMORY", 0x52: "NV_ESC_RM_GET_EVENT_DATA", 0x57: "NV_ESC_RM_MAP_MEMORY_DMA",
    0x58: "NV_ESC_RM_UNMAP_MEMORY_DMA", 200: "NV_ESC_CARD_INFO", 201: "NV_ESC_REGISTER_FD",
    206: "NV_ESC_ALLOC_OS_EVENT", 207: "NV_ESC_FREE_OS_EVENT", 210: "NV_ESC_CHECK_VERSION_STR",
}
NV_IOCTL_MAGIC = ord("F")
#: _IOC direction bits (asm-generic/ioctl.h): _IOC_WRITE 1 (user -> kernel), _IOC_READ 2
IOC_DIRECTIONS = {0: "none", 1: "write", 2: "read", 3: "read/write"}


@dataclass(frozen=True)
class IoctlNumber:
    """An ioctl request number split by the Linux ``_IOC`` layout (asm-generic/ioctl.h: nr
    bits 0-7, type 8-15, size 16-29, direction 30-31)."""

    value: int
    direction: str
    type: int
    nr: int
    size: int

    @property
    def hex(self) -> str:
        return f"0x{self.value:08x}"

    @property
    def type_text(self) -> str:
        c = chr(self.type)
        if c.isprintable() and c != " " and self.type < 127:
            return f"'{c}' (0x{self.type:02x})"
        return f"0x{self.type:02x}"

    @property
    def nvidia(self) -> str | None:
        """NVIDIA's name for it (type 'F' and a known escape), else None."""
        return NV_ESCAPES.get(self.nr) if self.type == NV_IOCTL_MAGIC else None

    def words(self) -> str:
        """``_IOC(read/write, 'F' (0x46), nr 0x2a, 32 B)``."""
        return f"_IOC({self.direction}, {self.type_text}, nr 0x{self.nr:02x}, {self.size:,} {units.B})"


def ioctl_number(cmd: int) -> IoctlNumber | None:
    """The fields of ``cmd``; None when it is not a 32-bit request number."""
    if not 0 <= cmd < 2**32:
        return None
    return IoctlNumber(cmd, IOC_DIRECTIONS[(cmd >> 30) & 3], (cmd >> 8) & 0xFF, cmd & 0xFF, (cmd >> 16) & 0x3FFF)


def ioctl_short(cmd: int) -> str:
    """``0xc020462a NV_ESC_RM_CONTROL`` (just the hex when NVIDIA has no name for it)."""
    num = ioctl_number(cmd)
    if num is None:
        return str(cmd)
    return num.hex + (f" {num.nvidia}" if num.nvidia else "")


# ---------------------------------------------------------------------------- contents
@dataclass
class CallContents:
    """What a call holds directly: ioctls (count, summed µs, commands), calls nested in it,
    and its records by name with their events."""

    ioctls: int = 0
    ioctl_us: float = 0.0
    commands: Counter = field(default_factory=Counter)
    calls: int = 0
    records: dict[str, list[int]] = field(default_factory=dict)

    def short(self) -> str:
        """``2 ioctls, 1 kernel launch`` ("" when empty)."""
        parts = []
        if self.ioctls:
            parts.append(f"{self.ioctls:,} ioctl{'s' if self.ioctls != 1 else ''}")
        for name, evs in self.records.items():
            parts.append(f"{len(evs):,} {name}" if len(evs) > 1 else name)
        if self.calls:
            parts.append(f"{self.calls:,} nested call{'s' if self.calls != 1 else ''}")
        return ", ".join(parts)


def call_contents(kt: DriverTrace, call: int) -> CallContents:
    out = CallContents()
    for c in kt.children(call).tolist():
        if not kt.is_driver_event(c):
            continue
        w = what_of(kt, c)
        if w == What.IOCTL:
            out.ioctls += 1
            out.ioctl_us += float(kt.dur[c])
            cmd = kt.value(kt.ioctl_cmd, c)
            if cmd is not None:
                out.commands[cmd] += 1
        elif w in CALL_WHATS:
            out.calls += 1
        else:
            out.records.setdefault(kt.name(c), []).append(c)
    return out


# ---------------------------------------------------------------------------- allocations
@dataclass
class AllocationSeries:
    """Bytes allocated over time by one process: ``events`` (allocation records by time),
    ``total`` after each; ``from_file`` when the file gives the totals (bpftrace's
    ``total_allocated``), else they are the running sum of the sizes."""

    pid: object
    events: np.ndarray
    ts: np.ndarray
    total: np.ndarray
    from_file: bool


def allocation_series(kt) -> list[AllocationSeries]:
    """One series per process that has allocation records (memory records; kernel-space
    allocations are not the process's)."""
    drv = driver_of(kt)
    if drv is None:
        return []
    cached = drv.__dict__.get("_alloc_series")
    if cached is not None:
        return cached
    ev = drv.driver_events()[drv.what == What.ALLOC]
    out: list[AllocationSeries] = []
    pids = [drv.pids[e] for e in ev.tolist()]
    for pid in dict.fromkeys(pids):
        mine = ev[np.array([p == pid for p in pids], dtype=bool)]
        mine = mine[np.argsort(drv.ts[mine], kind="stable")]
        total = drv.total_allocated[mine - drv.first]
        from_file = bool(mine.size) and bool((total >= 0).all())
        if not from_file:
            total = np.cumsum(np.maximum(drv.size[mine - drv.first], 0))
        out.append(AllocationSeries(pid, mine, drv.ts[mine], total.astype(np.float64), from_file))
    drv.__dict__["_alloc_series"] = out
    return out


def allocation_total(kt, ev: int) -> tuple[float, bool] | None:
    """(bytes allocated by the process after allocation record ``ev``, from the file)."""
    for s in allocation_series(kt):
        hit = np.flatnonzero(s.events == ev)
        if hit.size:
            return float(s.total[int(hit[0])]), s.from_file
    return None
