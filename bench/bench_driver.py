"""Load a 1-million-line driver-call trace (issue 13): time and peak memory, against the
decode floor, each in a fresh child process.

    python bench/bench_driver.py [--lines 1000000] [--runs 3] [--json FILE]

The trace is synthetic (no real capture of this size exists here) but has the layout and
the mix of a bpftrace capture of an inference run (``write_pipeline``): banner and
heartbeat lines, initialisation calls, weight loading (allocations with memory records,
host-to-device copies with transfer records), iterations of kernel launches (each with a
launch record and an nvidia_ioctl) closed by cuStreamSynchronize, output copies and clean-up,
on two threads, with one end line in 500 missing.

Rows (seconds, MB = 2^20 bytes, peak = the child's VmHWM):

* ``floor``: read the file, find the JSON object lines and decode every one into the
  loader's struct (``driver.schema.Line``), nothing else;
* ``load``: ``tracetui.driver.load_driver`` (lines, pairing, records, phases, tree);
* ``open``: ``tracetui.session.load_trace`` (what ``tracetui FILE`` does before painting);
* ``summary``: ``tracetui summary FILE --json --no-cache`` as a command (process start to exit).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

# bench/rss.py: this folder is on the path when run as a script
from rss import peak_rss_mb

PROBE = "uprobe:/usr/lib/x86_64-linux-gnu/libcuda.so.1:"
RET = "uretprobe:/usr/lib/x86_64-linux-gnu/libcuda.so.1:"


def write_pipeline(path: str, lines: int, seed: int = 1) -> int:
    """Write a bpftrace-layout trace of about ``lines`` lines; returns the lines written."""
    rnd = random.Random(seed)
    out: list[str] = ["=== CUDA Full-Stack Tracer (eBPF) ===", "Tracing userspace + kernel space",
                      "Time: 2026-11-25 08:00:00", "Press Ctrl-C to stop and show summary", ""]
    eid = 0
    t = 0.0  # ms since the tracer started
    total = 0

    def emit(obj: dict) -> None:
        nonlocal eid
        obj["event_id"] = eid
        eid += 1
        out.append(json.dumps(obj, separators=(",", ":")))

    def call(tid: int, name: str, dur_us: float, inner=None, drop_end: bool = False) -> None:
        nonlocal t
        emit({"ts": round(t, 6), "tid": tid, "phase": "B", "type": "userspace", "name": PROBE + name, "depth": 1})
        if inner:
            inner(tid)
        t += dur_us / 1000.0
        if not drop_end:
            emit({"ts": round(t, 6), "tid": tid, "phase": "E", "type": "userspace", "name": RET + name, "depth": 1,
                  "duration_us": dur_us, "retval": 0})
        t += rnd.uniform(0.001, 0.004)

    def ioctl(tid: int, cmd: int) -> None:
        nonlocal t
        emit({"ts": round(t + 0.0003, 6), "tid": tid, "phase": "B", "type": "kernel", "name": "kprobe:nvidia_ioctl",
              "ioctl_cmd": cmd})
        emit({"ts": round(t + 0.0012, 6), "tid": tid, "phase": "E", "type": "kernel", "name": "kretprobe:nvidia_ioctl",
              "duration_us": 0.9, "retval": 0})

    def launch(tid: int) -> None:
        g = rnd.choice(([56, 2, 1], [132, 1, 1], [1024, 1, 1], [8, 8, 1]))
        b = rnd.choice(([384, 1, 1], [256, 1, 1], [128, 1, 1]))
        emit({"ts": round(t + 0.0001, 6), "tid": tid, "type": "kernel", "op": "launch", "grid": g, "block": b,
              "threads": g[0] * g[1] * g[2] * b[0] * b[1] * b[2]})
        ioctl(tid, 0xC020462A)

    for name in ("cuInit", "cuDriverGetVersion", "cuDeviceGet", "cuDeviceGetAttribute", "cuCtxCreate_v2",
                 "cuModuleLoadData", "cuModuleGetFunction"):
        call(1001, name, 50.0, lambda tid: ioctl(tid, 0xC0104629))
    while len(out) < lines * 0.05:  # weight loading: allocations and host-to-device copies
        size = rnd.choice((1 << 20, 4 << 20, 16 << 20))
        total += size

        def alloc(tid: int, size=size, total=total) -> None:
            ioctl(tid, 0xC0384657)
        call(1001, "cuMemAlloc_v2", 30.0, alloc)
        emit({"ts": round(t, 6), "tid": 1001, "type": "memory", "op": "alloc", "size": size, "total_allocated": total})
        dur_ms = size / 12e6

        call(1001, "cuMemcpyHtoD_v2", dur_ms * 1000.0, lambda tid: ioctl(tid, 0xC020462A))
        emit({"ts": round(t, 6), "tid": 1001, "type": "transfer", "direction": "H2D", "size": size,
              "duration_ms": round(dur_ms, 3), "bandwidth_gbps": 12.0})
    it = 0
    while len(out) < lines * 0.97:  # iterations: launches closed by a synchronize, on two threads
        tid = 1001 if it % 4 else 1002
        for _ in range(rnd.randint(20, 60)):
            call(tid, rnd.choice(("cuLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx")), 4.0, launch,
                 drop_end=(eid % 500 == 7))
            if len(out) % 5000 < 8:
                out.append(f"# Heartbeat: {eid} events captured")
        call(tid, "cuStreamSynchronize", rnd.uniform(200.0, 2000.0), lambda tid: ioctl(tid, 0xC0104629))
        t += rnd.uniform(0.01, 0.2)
        it += 1
    for _ in range(4):  # output
        call(1001, "cuMemcpyDtoH_v2", 80.0, lambda tid: ioctl(tid, 0xC020462A))
        emit({"ts": round(t, 6), "tid": 1001, "type": "transfer", "direction": "D2H", "size": 1 << 20,
              "duration_ms": 0.08, "bandwidth_gbps": 13.1})
    while len(out) < lines - 12:  # clean-up
        call(1001, "cuMemFree_v2", 20.0, lambda tid: ioctl(tid, 0xC0104629))
    call(1001, "cuCtxDestroy_v2", 400.0)
    out += ["", "=== TRACE SUMMARY ===", "", f"Total trace duration: {t / 1000:.3f} seconds"]
    with open(path, "w") as fh:
        fh.write("\n".join(out) + "\n")
    return len(out)


# ------------------------------------------------------------------ children
def _child(what: str, path: str) -> None:
    t0 = time.perf_counter()
    if what == "floor":
        import gc

        import msgspec
        import numpy as np

        from tracetui.driver.schema import Line
        with open(path, "rb") as fh:
            data = fh.read()
        arr = np.frombuffer(data, dtype=np.uint8)
        nl = np.flatnonzero(arr == 10)
        starts = np.concatenate(([0], nl + 1))
        ends = np.concatenate((nl, [arr.size]))
        obj = np.flatnonzero((ends > starts) & (arr[np.minimum(starts, arr.size - 1)] == ord("{")))
        dec = msgspec.json.Decoder(list[Line])
        gc.disable()
        n = 0
        for c in range(0, obj.size, 1 << 17):
            sel = obj[c:c + (1 << 17)]
            rows = dec.decode(b"[" + b",".join(map(data.__getitem__, map(slice, starts[sel].tolist(),
                                                                             ends[sel].tolist()))) + b"]")
            n += len(rows)
            del rows
        result = {"rows": n}
    elif what == "load":
        from tracetui.driver import load_driver
        d = load_driver(path)
        result = {"events": d.n_events}
    else:
        from tracetui.session import load_trace
        d = load_trace(path)
        result = {"events": d.n_events}
    result.update(seconds=time.perf_counter() - t0, peak_mb=peak_rss_mb())
    print(json.dumps(result))


def _run_child(what: str, path: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", what, path], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _run_summary(path: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tracetui", "summary", path, "--json", "--no-cache"], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--keep", default=None, help="write the trace here and keep it")
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    path = args.keep or os.path.join(tempfile.mkdtemp(prefix="tracetui-drv-"), "trace_pipeline.jsonl")
    n = write_pipeline(path, args.lines)
    size_mb = os.path.getsize(path) / 2**20
    rows: dict[str, list[dict]] = {"floor": [], "load": [], "open": []}
    summaries: list[float] = []
    for _ in range(args.runs):  # interleaved, so machine noise hits every row alike
        for what in rows:
            rows[what].append(_run_child(what, path))
        summaries.append(_run_summary(path))
    med = {k: sorted(r["seconds"] for r in v)[len(v) // 2] for k, v in rows.items()}
    peak = {k: max(r["peak_mb"] for r in v) for k, v in rows.items()}
    print(f"driver-call trace: {n:,} lines, {size_mb:.0f} MB, {rows['load'][0]['events']:,} events; "
          f"{os.cpu_count()} CPUs; median of {args.runs} fresh processes")
    print("| row | seconds (median) | runs | / floor | peak MB |")
    print("|---|---|---|---|---|")
    for k in rows:
        runs = ", ".join(f"{r['seconds']:.2f}" for r in rows[k])
        print(f"| {k} | {med[k]:.2f} | {runs} | {med[k] / med['floor']:.2f} | {peak[k]:.0f} |")
    s_med = sorted(summaries)[len(summaries) // 2]
    print(f"| summary (command) | {s_med:.2f} | {', '.join(f'{s:.2f}' for s in summaries)} | "
          f"{s_med / med['floor']:.2f} | |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"lines": n, "rows": rows, "summary": summaries}, fh, indent=1)


if __name__ == "__main__":
    main()
