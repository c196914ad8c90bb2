"""The driver-call trace the UI tests, snapshots and screenshots open (one file with every
kind of line, so each detail view has something to show), written from the fields FORMATS.md
documents ("Driver-call traces"), and a linked pair from a real Kineto trace.  The files the
core tests assert every answer on are ``driver_files.py``'s.

:func:`write_bpftrace` writes a bpftrace-layout file with every kind of line a tracer of
libcuda and nvidia.ko prints: API calls with begin and end lines (one without its end
line, one returning an error), kernel-space ioctls, kernel launch, memory, transfer,
syscall, kernel_memory and scheduler records, banners, a heartbeat, a line that is not
valid JSON and an end-of-run summary.  :data:`FACTS` holds what the file says, for the
assertions; nothing is computed from tracetui's own model.
"""

from __future__ import annotations

from pathlib import Path

from driver_files import LIBCUDA, Bpf

#: a library path holding markup-like characters (shown verbatim in the detail pane)
ODD_LIB = "/opt/[bold]cuda[/bold]/libcuda.so.1"
ODD_PROBE = f"uprobe:{ODD_LIB}:"
MAIN, SIDE = 4242, 4343

#: what the file written by write_bpftrace holds
FACTS = {
    "launches": 4,  # cuLaunchKernel calls (the last one has no end line)
    "launch_grid": [56, 2, 1],
    "launch_block": [384, 1, 1],
    "launch_threads": 43008,
    "ioctl_cmd": 0xC020462A,  # _IOC(read/write, 'F', 0x2a = NV_ESC_RM_CONTROL, 32 bytes)
    "alloc_cmd": 0xC030462B,  # NV_ESC_RM_ALLOC, 48 bytes
    "alloc_sizes": [1048576, 4194304],
    "alloc_totals": [1048576, 5242880],
    "h2d_bytes": 4194304,
    "h2d_ms": 0.5,
    "h2d_gbps": 8.39,
    "error_call": "cuModuleLoadData",
    "error_value": 200,  # CUDA_ERROR_INVALID_IMAGE
    "einval_ioctl": -22,
    "syscall_fd": 7,
    # lines: 3 banner lines (one blank), the heartbeat, a bad JSON line and the summary
    "text_lines": 4,
    "bad_json_lines": 1,
    "skipped_lines": 5,
    "nonblank_lines": 59,  # 54 JSON object lines + the 5 skipped
}


def write_bpftrace(path: Path) -> Path:
    """Write the file (see the module docstring) with driver_files.Bpf's line writer;
    returns ``path``."""
    b = Bpf()
    b.text("=== CUDA Full-Stack Tracer (eBPF) ===")
    b.text("Attaching 42 probes...")
    b.blank()

    def call(t: float, name: str, dur_us: float, *, tid: int = MAIN, ret: int = 0, inner=(), end: bool = True,
             lib: str = LIBCUDA) -> None:
        """A call at ``t`` ms lasting ``dur_us``; ``inner`` write the lines printed during it."""
        b.begin(t, name, tid, depth=1, lib=lib)
        for f in inner:
            f()
        if end:
            b.end(round(t + dur_us / 1000, 6), name, dur_us, tid, depth=1, retval=ret, lib=lib)

    def ioctl(t: float, cmd: int, dur_us: float = 1.0, tid: int = MAIN, ret: int = 0) -> None:
        b.ioctl(t, round(t + dur_us / 1000, 6), cmd, retval=ret, tid=tid)

    record = b.obj  # records carry no event_id in some tracer versions

    call(0.001, "cuInit", 50.0, inner=[lambda: ioctl(0.005, FACTS["ioctl_cmd"], 2.0)])
    call(0.100, "cuDevicePrimaryCtxRetain", 30.0)
    call(0.200, "cuMemAlloc_v2", 20.0, inner=[lambda: ioctl(0.205, FACTS["alloc_cmd"], 3.0)])
    record(ts=0.2201, tid=MAIN, type="memory", op="alloc", size=1048576, total_allocated=1048576)
    call(0.300, "cuMemAlloc_v2", 20.0)
    record(ts=0.3201, tid=MAIN, type="memory", op="alloc", size=4194304, total_allocated=5242880)
    call(0.400, "cuMemcpyHtoD_v2", 510.0)
    record(ts=0.9101, tid=MAIN, type="transfer", direction="H2D", size=4194304, duration_ms=0.5, bandwidth_gbps=8.39)
    b.text("# Heartbeat: 12 events captured")
    for i in range(3):
        t = 1.0 + i * 0.1
        call(t, "cuLaunchKernel", 4.0, inner=[
            lambda t=t: b.ev(ts=round(t + 0.0005, 6), tid=MAIN, type="kernel", op="launch", grid=[56, 2, 1],
                             block=[384, 1, 1], threads=43008),
            lambda t=t: ioctl(round(t + 0.001, 6), FACTS["ioctl_cmd"], 1.0)])
    call(1.5, "cuStreamSynchronize", 200.0,
         inner=[lambda: b.ev(ts=1.51, tid=MAIN, type="syscall", name="ioctl", fd=7, cmd=FACTS["ioctl_cmd"])])
    call(1.8, "cuModuleLoadData", 10.0, ret=200)
    call(2.0, "cuLaunchKernel", 4.0, end=False,
         inner=[lambda: b.ev(ts=2.0005, tid=MAIN, type="kernel", op="launch", grid=[1, 1, 1], block=[32, 1, 1],
                             threads=32)])
    call(2.1, "cuStreamSynchronize", 20.0)
    call(2.3, "cuMemcpyDtoH_v2", 30.0)
    record(ts=2.3301, tid=MAIN, type="transfer", direction="D2H", size=1024, duration_ms=0.01)
    call(2.5, "cuMemFree_v2", 5.0)
    b.ev(ts=2.52, tid=MAIN, type="kernel_memory", op="alloc", size=65536)
    b.ev(ts=2.53, tid=MAIN, type="scheduler", op="schedule_work")
    call(2.6, "cuCtxDestroy_v2", 50.0)
    call(0.5, "cuGetProcAddress_v2", 3.0, tid=SIDE, lib=ODD_LIB,
         inner=[lambda: ioctl(0.501, 0x4008AE8A, 0.5, tid=SIDE, ret=-22)])
    b.text('{"event_id": 999, "ts": 3.0, "tid": 4242, "phase": "B"')  # cut mid-write: not JSON
    b.text("Tracing done: 52 events")
    return b.write(path)


def write_linked(tmp_path: Path, kineto_name: str = "h100_bert_inference.json.gz") -> tuple[Path, Path]:
    """(the shared Kineto trace, a bpftrace file of the same run written next to the test)
    (tracetui/driver/synthetic.py: every launch/copy/sync call of the trace as the
    driver call the runtime makes)."""
    from shared_traces import kineto_path

    from tracetui.driver.synthetic import write_driver_trace
    from tracetui.kineto import load_kineto

    kineto = kineto_path(kineto_name)
    out = tmp_path / "drv.jsonl"  # short: the status line names both files
    write_driver_trace(load_kineto(kineto), out)
    return kineto, out
