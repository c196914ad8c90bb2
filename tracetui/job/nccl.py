"""What a collective's names say, and NCCL's bus-bandwidth definitions.

Kernel names: ``ncclKernel_AllReduce_RING_LL_Sum_float(...)`` (NCCL < 2.19) and
``ncclDevKernel_AllGather_RING_LL(...)`` (newer; RCCL spells them the same) give the
collective, the algorithm (RING, TREE, COLLNET..., NVLS) and the protocol (LL, LL128,
SIMPLE).  ``collective_kind`` folds the names the profiler uses for one collective
(``allreduce``, ``nccl:all_reduce``, ``AllReduce``; ``all_to_allv``, ``SendRecv`` of an
all-to-all) into one canonical kind, so the same collective gets the same kind on
every rank whichever event named it.

Bus bandwidth (NCCL's ``nccl-tests`` ``doc/PERFORMANCE.md``): ``algbw = S / t`` where S
is the operation's size in bytes and t its time; ``busbw = algbw * factor(n)`` with n
ranks, so that busbw is comparable to the hardware's link bandwidth whatever n is:

==============  ===================================  ================
collective      S                                    factor
==============  ===================================  ================
all_reduce      the buffer (each rank's input)       2 (n - 1) / n
reduce_scatter  the whole input (n x each output)    (n - 1) / n
all_gather      the whole output (n x each input)    (n - 1) / n
all_to_all      each rank's send buffer              (n - 1) / n
broadcast       the buffer                           1
reduce          the buffer                           1
send_recv       the buffer                           1
==============  ===================================  ================
"""

from __future__ import annotations

import re

#: canonical collective kinds and the spellings that mean them (lower case, ``_``/``:`` removed)
_KINDS = {
    "allreduce": "all_reduce", "allreducecoalesced": "all_reduce",
    "allgather": "all_gather", "allgatherbase": "all_gather", "allgatherintotensorcoalesced": "all_gather",
    "allgathercoalesced": "all_gather",
    "reducescatter": "reduce_scatter", "reducescatterbase": "reduce_scatter",
    "reducescattertensorcoalesced": "reduce_scatter",
    "alltoall": "all_to_all", "alltoallv": "all_to_all", "alltoallbase": "all_to_all",
    "broadcast": "broadcast", "reduce": "reduce",
    "send": "send_recv", "recv": "send_recv", "sendrecv": "send_recv",
    "gather": "gather", "scatter": "scatter", "barrier": "barrier",
}

_KERNEL = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)")
_ALGOS = ("COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "NVLS", "RING", "TREE", "PAT", "COLLNET")
_PROTOCOLS = ("LL128", "LL", "SIMPLE")

#: bytes per element of the dtype spellings the profiler writes (record_param_comms
#: ``dtype``, cpu_op ``Input type``, ET tensor types)
DTYPE_BYTES = {
    "float": 4, "float32": 4, "float64": 8, "double": 8, "half": 2, "c10::half": 2, "float16": 2,
    "bfloat16": 2, "c10::bfloat16": 2, "long int": 8, "long": 8, "int64": 8, "int": 4, "int32": 4,
    "short int": 2, "short": 2, "int16": 2, "signed char": 1, "char": 1, "int8": 1, "unsigned char": 1,
    "uint8": 1, "bool": 1, "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1, "float8_e4m3fn": 1,
    "float8_e5m2": 1, "c10::complex<float>": 8, "c10::complex<double>": 16,
}

_BUS_FACTOR = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}


def is_comm_kernel_name(name: str) -> bool:
    """A NCCL or RCCL kernel (by its name)."""
    low = name[:16].lower()
    return low.startswith(("nccl", "rccl"))


def parse_kernel_name(name: str) -> tuple[str, str, str]:
    """(collective kind, algorithm, protocol) from a NCCL/RCCL kernel name; "" where unknown."""
    m = _KERNEL.match(name)
    if not m:
        return "", "", ""
    rest = "_" + name[m.end():].split("(", 1)[0] + "_"
    algo = next((a for a in _ALGOS if f"_{a}_" in rest), "")
    proto = next((p for p in _PROTOCOLS if f"_{p}_" in rest), "")
    return collective_kind(m.group(1)), algo, proto


def collective_kind(name: str) -> str:
    """Canonical kind of a collective named ``name`` (``"allreduce"``, ``"nccl:all_to_all"``,
    ``"_allgather_base"``, ``"c10d::allreduce_"``, ``"AllReduce"``); "" when unknown."""
    key = name.rsplit(":", 1)[-1].lower().replace("_", "")
    if key in _KINDS:
        return _KINDS[key]
    for suffix in ("base", "coalesced"):
        if key.endswith(suffix) and key[: -len(suffix)] in _KINDS:
            return _KINDS[key[: -len(suffix)]]
    return ""


def dtype_bytes(dtype: str | None) -> int | None:
    """Bytes per element of a dtype spelling, None when unknown."""
    if not dtype:
        return None
    return DTYPE_BYTES.get(dtype.strip().lower())


def bus_factor(kind: str, n: int) -> float | None:
    """NCCL's busbw / algbw factor for ``n`` ranks (None for kinds without a definition)."""
    f = _BUS_FACTOR.get(kind)
    return None if f is None or n < 1 else f(n)


def algo_bytes(kind: str, in_bytes: int | None, out_bytes: int | None, n: int) -> int | None:
    """S of NCCL's algbw = S / t from one rank's input and output sizes (see the table above)."""
    if kind == "all_gather":
        return out_bytes if out_bytes else (in_bytes * n if in_bytes else None)
    if kind == "reduce_scatter":
        return in_bytes if in_bytes else (out_bytes * n if out_bytes else None)
    return in_bytes if in_bytes else out_bytes


def bus_bandwidth_gbps(kind: str, size_bytes: int | None, dur_us: float | None, n: int) -> float | None:
    """busbw in GB/s (10^9 bytes per second) of a collective of ``size_bytes`` (S) taking ``dur_us``."""
    f = bus_factor(kind, n)
    if f is None or not size_bytes or not dur_us or dur_us <= 0:
        return None
    return size_bytes / (dur_us * 1e-6) / 1e9 * f
