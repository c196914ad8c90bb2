"""Driver-call trace files written from the documented fields (``../shared/FORMATS.md``,
"Driver-call traces", and ``tracetui/driver/schema.py``), for ``tests/core/test_driver_*.py``.

Each writer builds its file line by line with the numbers the tests expect known by
construction: the comments next to each line say what it adds to the answers.
"""

from __future__ import annotations

import json
from pathlib import Path

LIBCUDA = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
LIBCUDART = "/usr/local/cuda/lib64/libcudart.so.12"
IOCTL_A = 0xC020462A  #: the command of every launch's ioctl
IOCTL_B = 0xC0104629  #: one ioctl during weight loading (fails with -22)


class Lines:
    """A file being written: JSON object lines (compact, one per line) and text lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.n_json = 0
        self.n_text = 0

    def obj(self, **fields) -> None:
        self.lines.append(json.dumps(fields, separators=(", ", ": ")))
        self.n_json += 1

    def text(self, line: str) -> None:
        self.lines.append(line)
        self.n_text += 1

    def blank(self) -> None:
        """A blank line: not counted at all."""
        self.lines.append("")

    @property
    def n_total(self) -> int:
        return self.n_json + self.n_text

    def data(self) -> bytes:
        return ("\n".join(self.lines) + "\n").encode()

    def write(self, path: Path) -> Path:
        path.write_bytes(self.data())
        return path


# ---- bpftrace: ms since the tracer started, probe strings, tid only ---------------------------

class Bpf(Lines):
    def __init__(self) -> None:
        super().__init__()
        self.event_id = 0

    def ev(self, **fields) -> None:
        self.event_id += 1
        self.obj(event_id=self.event_id, **fields)

    def begin(self, ts: float, name: str, tid: int = 100, depth: int = 0, lib: str = LIBCUDA) -> None:
        self.ev(ts=ts, tid=tid, phase="B", type="userspace", name=f"uprobe:{lib}:{name}", depth=depth)

    def end(self, ts: float, name: str, dur_us: float, tid: int = 100, depth: int = 0, retval: int = 0,
            lib: str = LIBCUDA) -> None:
        self.ev(ts=ts, tid=tid, phase="E", type="userspace", name=f"uretprobe:{lib}:{name}", depth=depth,
                duration_us=dur_us, retval=retval)

    def call(self, t0: float, t1: float, name: str, tid: int = 100, depth: int = 0, retval: int = 0,
             inside=None) -> None:
        """A call from ``t0`` to ``t1`` ms; ``inside()`` writes the lines printed during it."""
        self.begin(t0, name, tid, depth)
        if inside is not None:
            inside()
        self.end(t1, name, round((t1 - t0) * 1e3, 3), tid, depth, retval)

    def ioctl(self, t0: float, t1: float, cmd: int, probe: str = "nvidia_ioctl", retval: int = 0,
              tid: int = 100) -> None:
        self.ev(ts=t0, tid=tid, phase="B", type="kernel", name=f"kprobe:{probe}", ioctl_cmd=cmd)
        self.ev(ts=t1, tid=tid, phase="E", type="kernel", name=f"kretprobe:{probe}",
                duration_us=round((t1 - t0) * 1e3, 3), retval=retval)

    def launch(self, t0: float, grid: int, retval: int = 0, syscall: bool = False) -> None:
        """cuLaunchKernel at ``t0`` ms lasting 10 µs, holding its launch record (type "kernel",
        op "launch") and an nvidia_ioctl of 2 µs (type "kernel", no op)."""

        def inside() -> None:
            if syscall:
                self.ev(ts=t0 + 0.0005, tid=100, type="syscall", name="ioctl", fd=7, cmd=IOCTL_A)
            self.ev(ts=t0 + 0.001, tid=100, type="kernel", op="launch", grid=[grid, 1, 1], block=[128, 1, 1],
                    threads=grid * 128)
            self.ioctl(t0 + 0.002, t0 + 0.004, IOCTL_A)

        self.call(t0, t0 + 0.010, "cuLaunchKernel", retval=retval, inside=inside)


def bpftrace_file() -> Bpf:
    """One inference process seen by bpftrace (tid 100, and tid 200 for one call).

    Expected (by construction): calls cuInit 1, cuDeviceGet 1, cuCtxCreate_v2 1,
    cuGetProcAddress_v2 1 (no end line: ends at its next sibling, 50 µs), cuModuleLoadData 1,
    cuCtxGetCurrent 1 (tid 200), cuMemAlloc_v2 2, cuMemcpyHtoD_v2 1, cuLaunchKernel 9 (one
    returns 1), cuStreamSynchronize 2, cuCtxSynchronize 1, cuMemcpyDtoH_v2 1, cuMemFree_v2 1,
    cuCtxDestroy_v2 1.  Iterations 3 (3, 2, 4 launches); syncs 1000 + 500 + 200 µs; idle
    after sync 200 and 100 µs; ioctls 9 x IOCTL_A (2 µs each) and 1 x IOCTL_B (40 µs,
    retval -22); syscall ioctl records 2 x IOCTL_A; allocations 1 MiB + 2 MiB (totals
    1 MiB, 3 MiB); transfers H2D 1 MiB in 80 µs, D2H 4 KiB in 50 µs; one kernel_memory
    record of 64 KiB, one scheduler record.
    """
    f = Bpf()
    f.text("Attaching 44 probes...")
    f.text("Tracing CUDA driver API and nvidia.ko... Hit Ctrl-C to end.")
    # ---- initialisation: 0 .. 2 ms
    f.call(0.0, 1.0, "cuInit")
    f.ev(ts=0.5, tid=200, phase="B", type="userspace", name=f"uprobe:{LIBCUDA}:cuCtxGetCurrent", depth=0)
    f.ev(ts=0.51, tid=200, phase="E", type="userspace", name=f"uretprobe:{LIBCUDA}:cuCtxGetCurrent", depth=0,
         duration_us=10.0, retval=0)
    f.call(1.1, 1.15, "cuDeviceGet")
    f.call(1.2, 1.7, "cuCtxCreate_v2")
    f.begin(1.75, "cuGetProcAddress_v2")  # its end line is missing: ends at 1.8, its next sibling's begin
    f.call(1.8, 1.9, "cuModuleLoadData")
    f.text("# Heartbeat: 14 events captured")
    # ---- weight loading: 2 .. 3 ms
    f.call(2.0, 2.1, "cuMemAlloc_v2",
           inside=lambda: f.ev(ts=2.05, tid=100, type="kernel_memory", op="alloc", size=65536))
    # printed 5 µs after cuMemAlloc_v2 returned: still its record
    f.ev(ts=2.105, tid=100, type="memory", op="alloc", size=1 << 20, total_allocated=1 << 20)
    f.call(2.2, 2.3, "cuMemAlloc_v2", inside=lambda: f.ioctl(2.22, 2.26, IOCTL_B, probe="nv_ioctl", retval=-22))
    f.ev(ts=2.301, tid=100, type="memory", op="alloc", size=2 << 20, total_allocated=3 << 20)
    f.call(2.5, 2.6, "cuMemcpyHtoD_v2",
           inside=lambda: f.ev(ts=2.59, tid=100, type="transfer", direction="H2D", size=1 << 20, duration_ms=0.08,
                               bandwidth_gbps=13.1))
    # ---- warm-up: the first iteration, 3 launches, then cuStreamSynchronize (1000 µs)
    f.launch(3.0, 2, syscall=True)
    f.ev(ts=3.05, tid=100, type="scheduler", op="schedule_work")
    f.launch(3.1, 2, syscall=True)
    f.launch(3.2, 2)
    f.call(3.3, 4.3, "cuStreamSynchronize")
    f.text("# Heartbeat: 60 events captured")
    # ---- inference: 2 launches + cuCtxSynchronize (500 µs), 4 launches + cuStreamSynchronize (200 µs)
    f.launch(4.5, 4)  # 200 µs after the first synchronize returned
    f.launch(4.6, 4)
    f.call(4.7, 5.2, "cuCtxSynchronize")
    f.launch(5.3, 4)  # 100 µs after the second
    f.launch(5.4, 4, retval=1)  # CUDA_ERROR_INVALID_VALUE
    f.launch(5.5, 4)
    f.launch(5.6, 4)
    f.call(5.7, 5.9, "cuStreamSynchronize")
    # ---- output: the result back to the host
    f.call(6.0, 6.1, "cuMemcpyDtoH_v2",
           inside=lambda: f.ev(ts=6.09, tid=100, type="transfer", direction="D2H", size=4096, duration_ms=0.05,
                               bandwidth_gbps=0.08))
    # ---- clean-up
    f.call(6.5, 6.6, "cuMemFree_v2")
    f.call(6.7, 6.8, "cuCtxDestroy_v2")
    # ---- the END block of the script
    f.blank()
    f.text("=== CUDA trace summary ===")
    f.text("@calls[cuLaunchKernel]: 9")
    f.text("@bytes_allocated: 3145728")
    return f


# ---- LD_PRELOAD hook: seconds (CLOCK_MONOTONIC), op_id, bare names ---------------------------

class Preload(Lines):
    def __init__(self) -> None:
        super().__init__()
        self.op = 0

    def b(self, ts: float, name: str, tid: int, depth: int = 0, op: int | None = None) -> int:
        if op is None:
            self.op += 1
            op = self.op
        self.obj(ts=ts, op_id=op, tid=tid, depth=depth, phase="B", name=name)
        return op

    def e(self, ts: float, name: str, tid: int, op: int, depth: int = 0, **result) -> None:
        self.obj(ts=ts, op_id=op, tid=tid, depth=depth, phase="E", name=name, **result)

    def call(self, t0: float, t1: float, name: str, tid: int = 7, depth: int = 0, **result) -> None:
        op = self.b(t0, name, tid, depth)
        self.e(t1, name, tid, op, depth, **(result or {"result_code": 0}))


T0 = 86400.25  #: seconds on CLOCK_MONOTONIC when the hook started


def preload_file() -> Preload:
    """One process, two threads (tid 7 and 8), as the LD_PRELOAD hook writes it.

    Expected: cuInit 1, cuDevicePrimaryCtxRetain 1, cuMemAlloc_v2 2 (result_ptr),
    cuModuleLoadData 1 (with a nested cuModuleGetFunction at depth 1), cuLaunchKernel 4
    (two of them overlap on threads 7 and 8, paired by op_id; one returns 700),
    cuStreamSynchronize 2 (300 µs, and an orphan end line: no begin, no length),
    cuMemcpyDtoH_v2 1.  Iterations 2 (3 launches, then 1 closed by the orphan end).
    """
    f = Preload()
    f.call(T0, T0 + 0.002, "cuInit")  # 2000 µs
    f.call(T0 + 0.0021, T0 + 0.0022, "cuDevicePrimaryCtxRetain")
    f.call(T0 + 0.003, T0 + 0.0031, "cuMemAlloc_v2", result_ptr="0x7f3a40000000")
    f.call(T0 + 0.0032, T0 + 0.0033, "cuMemAlloc_v2", result_ptr="0x7f3a40100000")
    outer = f.b(T0 + 0.004, "cuModuleLoadData", 7)
    f.call(T0 + 0.0041, T0 + 0.0042, "cuModuleGetFunction", depth=1)
    f.e(T0 + 0.0045, "cuModuleLoadData", 7, outer, result_code=0)
    # two threads launch at once: their begin and end lines interleave
    a = f.b(T0 + 0.005, "cuLaunchKernel", 7)
    b = f.b(T0 + 0.005001, "cuLaunchKernel", 8)
    f.e(T0 + 0.00502, "cuLaunchKernel", 8, b, result_code=0)  # thread 8's: 19 µs
    f.e(T0 + 0.00503, "cuLaunchKernel", 7, a, result_code=0)  # thread 7's: 30 µs
    f.call(T0 + 0.0051, T0 + 0.00511, "cuLaunchKernel", result_code=700)  # CUDA_ERROR_ILLEGAL_ADDRESS
    f.call(T0 + 0.006, T0 + 0.0063, "cuStreamSynchronize")  # 300 µs, closes 3 launches
    f.call(T0 + 0.0065, T0 + 0.00651, "cuLaunchKernel")
    f.e(T0 + 0.007, "cuStreamSynchronize", 7, 999, result_code=0)  # an orphan end line (op 999)
    f.call(T0 + 0.0071, T0 + 0.0072, "cuMemcpyDtoH_v2")
    return f


# ---- BCC: integer types 1-7, pid and tid, no names ------------------------------------------

class Bcc(Lines):
    def __init__(self) -> None:
        super().__init__()
        self.event_id = 0

    def ev(self, ts: float, pid: int, tid: int, typ: int, depth: int = 0, **fields) -> None:
        self.event_id += 1
        self.obj(ts=ts, event_id=self.event_id, pid=pid, tid=tid, type=typ, depth=depth, **fields)


def bcc_file() -> Bcc:
    """Two processes (pid 10: tid 11; pid 20: tid 21), seconds.

    Expected: pid 10 makes a cuMemAlloc (alloc record of 4096 B just before its exit line),
    two cuLaunchKernel (launch record just before the enter line; the second holds an ioctl
    6/7 at depth 1), a cuMemcpy (copy record, H2D 100 B) and one call no record names
    ("(unnamed call)"); pid 20 makes one cuMemAlloc (8192 B) and one cuLaunchKernel.
    """
    f = Bcc()
    p, t = 10, 11
    f.ev(5.0, p, t, 1)  # call enter
    f.ev(5.001, p, t, 4, size=4096)  # alloc record, just before the exit line
    f.ev(5.002, p, t, 2)  # call exit: a cuMemAlloc of 2000 µs
    f.ev(5.003, p, t, 3, grid=[2, 1, 1], block=[64, 1, 1])  # launch record, just before the enter line
    f.ev(5.003, p, t, 1)
    f.ev(5.0035, p, t, 2)  # a cuLaunchKernel of 500 µs
    f.ev(5.004, p, t, 3, grid=[2, 1, 1], block=[64, 1, 1])
    f.ev(5.004, p, t, 1)
    f.ev(5.0041, p, t, 6, depth=1)  # ioctl enter
    f.ev(5.0042, p, t, 7, depth=1)  # ioctl exit: 100 µs
    f.ev(5.0045, p, t, 2)  # a cuLaunchKernel of 500 µs
    f.ev(5.005, p, t, 1)
    f.ev(5.006, p, t, 5, size=100, direction=1)  # copy record: H2D
    f.ev(5.007, p, t, 2)  # a cuMemcpy of 2000 µs
    f.ev(5.008, p, t, 1)
    f.ev(5.0081, p, t, 2)  # a call no record names
    p, t = 20, 21
    f.ev(5.0, p, t, 1)
    f.ev(5.0005, p, t, 4, size=8192)
    f.ev(5.001, p, t, 2)  # cuMemAlloc, 1000 µs
    f.ev(5.002, p, t, 3, grid=[8, 1, 1], block=[256, 1, 1])
    f.ev(5.002, p, t, 1)
    f.ev(5.0022, p, t, 2)  # cuLaunchKernel, 200 µs
    return f


# ---- Kubernetes sidecar: entries only, ms, probe strings -------------------------------------

class Sidecar(Lines):
    def entry(self, ts: float, pid: int, name: str, runtime: bool = False) -> None:
        lib = LIBCUDART if runtime else LIBCUDA
        self.obj(ts=ts, pid=pid, type="cuda_runtime" if runtime else "cuda_api", func=f"uprobe:{lib}:{name}",
                 phase="entry")


def sidecar_file() -> Sidecar:
    """Two pods' processes (pid 300, 400), entries only (ms).

    Expected: pid 300: cuInit, cudaMalloc (runtime) + cuMemAlloc_v2, then 2 iterations
    (cudaLaunchKernel + cuLaunchKernel, cuStreamSynchronize; cuLaunchKernel x3,
    cuStreamSynchronize), cuMemFree_v2; pid 400: cuInit, cuLaunchKernel, cuCtxSynchronize.
    Idle after sync (pid 300): 3 ms (entries have no length: from the sync's entry).
    """
    f = Sidecar()
    f.text("sidecar: attached to 2 pods")
    f.entry(1000.0, 300, "cuInit")
    f.entry(1001.0, 300, "cudaMalloc", runtime=True)
    f.entry(1001.5, 300, "cuMemAlloc_v2")
    f.entry(1002.0, 300, "cudaLaunchKernel", runtime=True)
    f.entry(1002.1, 300, "cuLaunchKernel")
    f.entry(1003.0, 300, "cuStreamSynchronize")
    f.entry(1006.0, 300, "cuLaunchKernel")
    f.entry(1006.1, 300, "cuLaunchKernel")
    f.entry(1006.2, 300, "cuLaunchKernel")
    f.entry(1007.0, 300, "cuStreamSynchronize")
    f.entry(1008.0, 300, "cuMemFree_v2")
    f.entry(1000.5, 400, "cuInit")
    f.entry(1004.0, 400, "cuLaunchKernel")
    f.entry(1004.5, 400, "cuCtxSynchronize")
    return f
