"""Theoretical occupancy of a kernel launch, by the CUDA occupancy calculator's rules.

Inputs: one ``deviceProperties`` entry of the trace (compute capability, warp size, threads,
registers and shared memory per SM and per block) and the kernel's launch configuration
(threads per block = product of ``block``, ``registers per thread``, ``shared memory`` =
static + dynamic bytes per block, as Kineto reports it).  Output: the resident blocks per
SM each resource allows, the smallest of them, the occupancy in percent of the SM's warp
slots and the limiting factor(s).  The grid size is not an input: a launch with fewer
blocks than SMs still has the theoretical occupancy of its configuration (Kineto's own
``est. achieved occupancy %`` is capped by ``grid / numSms`` and is 0 when its calculator
rejects the launch, e.g. for opt-in shared memory above 48 KiB).

The rules follow ``cuda_occupancy.h`` (CUDA 12.6, ``cudaOccMaxActiveBlocksPerMultiprocessor``
with the default carveout and partitioned global caching off) and the constants per
compute capability come from the CUDA C++ Programming Guide's table of technical
specifications; docs/occupancy.md states each with its source.  AMD GPUs: the trace has
neither the kernel's VGPR/SGPR counts nor its LDS use, so the result is "not computable"
with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..kineto import schema
from ..rocprof.schema import ARG_VGPRS

#: limiting factors, in the order they are reported when several give the same block count
REGISTERS = "registers"
SHARED_MEMORY = "shared memory per SM"
WARPS = "warps"  #: the block's threads (rounded up to warps) fill the SM's warp slots
BLOCKS = "max blocks per SM"  #: the SM's block slots (by compute capability)
FACTORS = (REGISTERS, SHARED_MEMORY, WARPS, BLOCKS)

REG_ALLOC_UNIT = 256  #: registers are allocated per warp in units of 256 (cc 3.x - 9.x)
SUB_PARTITIONS = 4  #: register file split in 4 SM sub-partitions (cc 7.x - 9.x; 2 on cc 6.0)


@dataclass(frozen=True)
class ArchLimits:
    """Per compute capability: what deviceProperties does not say."""

    max_blocks_per_sm: int
    max_warps_per_sm: int  #: used only when deviceProperties lacks maxThreadsPerMultiprocessor
    smem_alloc_unit: int  #: bytes: a block's shared memory is rounded up to this
    smem_reserved_per_block: int  #: bytes the system reserves per block (1 KiB from cc 8.0)
    max_regs_per_thread: int = 255
    sub_partitions: int = SUB_PARTITIONS


def arch_limits(major: int, minor: int) -> ArchLimits | None:
    """The constants of compute capability ``major.minor`` (None: not in the table)."""
    if major in (5, 6):
        return ArchLimits(32, 64, 256, 0, sub_partitions=2 if (major, minor) == (6, 0) else 4)
    if major == 7:
        return ArchLimits(16, 32, 256, 0) if minor == 5 else ArchLimits(32, 64, 256, 0)
    if major == 8:
        if minor == 0:
            return ArchLimits(32, 64, 128, 1024)
        return ArchLimits(24 if minor == 9 else 16, 48, 128, 1024)
    if major in (9, 10):
        return ArchLimits(32, 64, 128, 1024)
    if major == 12:
        return ArchLimits(32, 48, 128, 1024)
    return None


@dataclass(frozen=True)
class Occupancy:
    """Theoretical occupancy of one launch configuration on one device.

    ``pct`` is None when not computable (``reason`` says why).  ``limits`` maps each
    factor to the blocks per SM it allows (None: no limit from it, e.g. no shared memory)."""

    pct: float | None
    limiter: str | None = None  #: the factor(s) giving the fewest blocks, joined by " + "
    active_blocks: int | None = None  #: resident blocks per SM
    active_warps: int | None = None  #: resident warps per SM
    max_warps: int | None = None  #: warp slots per SM
    limits: dict[str, int | None] = field(default_factory=dict)
    reason: str | None = None

    @property
    def computable(self) -> bool:
        return self.pct is not None


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def is_amd(props: dict[str, Any]) -> bool:
    """ROCm traces: warp (wavefront) size 64, an AMD name, or the ROCm spelling of LDS per CU."""
    return (_int(props.get(schema.DEV_WARP_SIZE)) == 64 or "AMD" in str(props.get(schema.DEV_NAME) or "")
            or schema.DEV_SMEM_PER_SM_AMD in props)


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def theoretical_occupancy(props: dict[str, Any] | None, threads_per_block: Any, registers: Any,
                          shared_mem: Any) -> Occupancy:
    """Occupancy of a block of ``threads_per_block`` threads using ``registers`` registers per
    thread and ``shared_mem`` bytes of shared memory on the device ``props`` (a
    deviceProperties entry)."""
    if not props:
        return Occupancy(None, reason="the trace has no deviceProperties for this device")
    if is_amd(props):
        return Occupancy(None, reason="AMD GPU: occupancy depends on the kernel's VGPRs, SGPRs and LDS per "
                                      "wavefront, which the trace does not record")
    major, minor = _int(props.get(schema.DEV_CC_MAJOR)), _int(props.get(schema.DEV_CC_MINOR))
    if major is None or minor is None:
        return Occupancy(None, reason="deviceProperties has no compute capability")
    arch = arch_limits(major, minor)
    if arch is None:
        return Occupancy(None, reason=f"compute capability {major}.{minor} is not in the occupancy table")
    threads, regs = _int(threads_per_block), _int(registers)
    smem = _int(shared_mem)
    if threads is None or threads <= 0:
        return Occupancy(None, reason="the kernel has no block size")
    if regs is None or smem is None:
        return Occupancy(None, reason="the kernel has no registers per thread or shared memory in its args")
    if regs < 0 or smem < 0:
        return Occupancy(None, reason="negative registers or shared memory in the kernel's args")
    warp = _int(props.get(schema.DEV_WARP_SIZE)) or 32
    max_threads_sm = _int(props.get(schema.DEV_MAX_THREADS_PER_SM))
    max_warps = max_threads_sm // warp if max_threads_sm else arch.max_warps_per_sm
    regs_sm = _int(props.get(schema.DEV_REGS_PER_SM)) or 65536
    regs_block = _int(props.get(schema.DEV_REGS_PER_BLOCK)) or regs_sm
    max_tpb = _int(props.get(schema.DEV_MAX_THREADS_PER_BLOCK)) or 1024
    smem_sm = _int(props.get(schema.DEV_SMEM_PER_SM))
    smem_block_max = _int(props.get(schema.DEV_SMEM_PER_BLOCK_OPTIN)) or _int(props.get(schema.DEV_SMEM_PER_BLOCK))
    warps_per_block = -(-threads // warp)
    limits: dict[str, int | None] = {}
    # warps: the block's warps in the SM's warp slots
    limits[WARPS] = 0 if threads > max_tpb else max_warps // warps_per_block
    # registers: per warp, rounded up to 256; allocated per sub-partition
    if regs > 0:
        per_warp = _round_up(regs * warp, REG_ALLOC_UNIT)
        assumed_block = per_warp * _round_up(warps_per_block, arch.sub_partitions)
        if regs > arch.max_regs_per_thread or per_warp * warps_per_block > regs_block or assumed_block > regs_block:
            limits[REGISTERS] = 0
        else:
            per_sub = (regs_sm // arch.sub_partitions) // per_warp
            limits[REGISTERS] = per_sub * arch.sub_partitions // warps_per_block
    else:
        limits[REGISTERS] = None
    # shared memory: static + dynamic + the per-block reserve, rounded up to the allocation unit
    smem_alloc = _round_up(smem + arch.smem_reserved_per_block, arch.smem_alloc_unit)
    if smem_sm is None:
        return Occupancy(None, reason="deviceProperties has no shared memory per multiprocessor")
    if smem_alloc == 0:
        limits[SHARED_MEMORY] = None
    elif smem_block_max is not None and smem_alloc > smem_block_max + arch.smem_reserved_per_block:
        limits[SHARED_MEMORY] = 0
    else:
        limits[SHARED_MEMORY] = smem_sm // smem_alloc
    limits[BLOCKS] = arch.max_blocks_per_sm
    given = {f: v for f, v in limits.items() if v is not None}
    blocks = min(given.values())
    limiter = " + ".join(f for f in FACTORS if given.get(f) == blocks)
    warps = blocks * warps_per_block
    return Occupancy(pct=100.0 * warps / max_warps, limiter=limiter, active_blocks=blocks, active_warps=warps,
                     max_warps=max_warps, limits={f: limits[f] for f in FACTORS})


def device_props(trace: Any, device: Any) -> dict[str, Any] | None:
    """The deviceProperties entry of GPU ``device`` (its ``id``), None when absent."""
    return trace.device_props(device)


def threads_of(block: Any) -> int | None:
    """Threads per block from a ``block`` arg ([x, y, z]) or its "x,y,z" text."""
    if isinstance(block, str):
        try:
            block = [int(x) for x in block.split(",")]
        except ValueError:
            return None
    if isinstance(block, (list, tuple)) and block and all(_int(x) is not None for x in block):
        n = 1
        for x in block:
            n *= int(x)
        return n
    return None


def kernel_occupancy(trace: Any, event: int) -> Occupancy:
    """Theoretical occupancy of kernel ``event`` of a loaded Kineto trace."""
    a = trace.args(event)
    dev = int(trace.device[event]) if int(trace.device[event]) >= 0 else trace.pids[event]
    props = device_props(trace, dev)
    if props and is_amd(props) and ARG_VGPRS in a:  # rocprofv3: the counts are there, the rules are not
        return Occupancy(None, reason="AMD GPU: occupancy depends on the kernel's VGPRs, SGPRs and LDS per "
                                      "wavefront (its args below); tracetui computes it by NVIDIA's rules only")
    return theoretical_occupancy(props, threads_of(a.get(schema.BLOCK)), a.get(schema.REGISTERS_PER_THREAD),
                                 a.get(schema.SHARED_MEMORY))


def occupancy_of_rows(trace: Any, devices: list[Any], blocks: list[Any], registers: list[Any],
                      shared_mem: list[Any]) -> list[Occupancy]:
    """:func:`theoretical_occupancy` for many kernels (e.g. the columns ``device``, ``block``
    ("x,y,z"), ``registers``, ``shared_mem`` of the GPU events frame), once per distinct
    configuration."""
    memo: dict[tuple, Occupancy] = {}
    out = []
    for key in zip(devices, blocks, registers, shared_mem):
        key = tuple(None if isinstance(v, float) and v != v else v for v in key)  # NaN -> None
        occ = memo.get(key)
        if occ is None:
            dev, block, regs, smem = key
            occ = memo[key] = theoretical_occupancy(device_props(trace, dev), threads_of(block), regs, smem)
        out.append(occ)
    return out


def occupancy_columns(trace: Any, kernels: Any) -> tuple[list[float | None], list[str | None]]:
    """(theoretical occupancy in percent, limiting factor) per row of a GPU events frame
    (:func:`~tracetui.analysis.frames.gpu_events_frame`); None for memcpy/memset rows and
    where not computable."""
    if len(kernels) == 0:
        return [], []
    occ = occupancy_of_rows(trace, list(kernels["device"]), list(kernels["block"]), list(kernels["registers"]),
                            list(kernels["shared_mem"]))
    is_kernel = (kernels["kind"].astype(str) == "kernel").tolist()
    pct = [o.pct if k else None for o, k in zip(occ, is_kernel)]
    lim = [o.limiter if k else None for o, k in zip(occ, is_kernel)]
    return pct, lim
