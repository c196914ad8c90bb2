"""A **synthetic** driver-call trace written from a real Kineto trace: what a bpftrace tracer
of libcuda would have printed for the same launches, copies and synchronizations.  Not a
capture: for trying the driver-call views and ``summary`` without a tracer, and for tests.

    python -m tracetui.driver.synthetic sample_traces/h100_bert_inference.json.gz bert_driver.jsonl

Each Kineto runtime call of a linked class becomes the driver call the runtime makes
(``cudaLaunchKernel`` -> ``cuLaunchKernel`` with a launch record carrying its kernel's grid
and block, ``cudaMemcpyAsync`` -> ``cuMemcpyAsync``, ``cudaStreamSynchronize`` ->
``cuStreamSynchronize`` ...), ``DELAY_US`` after the runtime call starts, on the same thread
id, on a clock that starts ``CLOCK_GAP_US`` before the trace (the tracer's "ms since I
started").  ``lead`` extra launches before the profiler's window and unrelated driver calls
(``cuCtxGetCurrent``) between the linked ones make the alignment find the shift.  The file's
first line says it is synthetic (a banner line: the reader skips it as text).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from ..kineto import schema
from ..kineto.kinds import Kind
from ..kineto.trace import KinetoTrace
from .pipeline import CallClass, call_class

#: the file's first line: a banner as a tracer prints one, saying the file is synthetic
BANNER = "=== CUDA Full-Stack Tracer (eBPF) === synthetic: written from a Kineto trace by tracetui.driver.synthetic"
DELAY_US = 1.5
CLOCK_GAP_US = 5_000_000.0
PROBE = "uprobe:/usr/lib/x86_64-linux-gnu/libcuda.so.1:"
RET = "uretprobe:/usr/lib/x86_64-linux-gnu/libcuda.so.1:"
_DRIVER_NAME = {CallClass.LAUNCH: "cuLaunchKernel", CallClass.GRAPH_LAUNCH: "cuGraphLaunch",
                CallClass.COPY: "cuMemcpyAsync", CallClass.MEMSET: "cuMemsetD32Async",
                CallClass.SYNC: "cuStreamSynchronize", CallClass.ALLOC: "cuMemAlloc_v2",
                CallClass.FREE: "cuMemFree_v2"}


def linked_calls(kt: KinetoTrace) -> list[int]:
    """The Kineto calls a driver trace can link to, in time order."""
    out = [i for i in range(kt.n_events) if kt.kind[i] in (Kind.RUNTIME, Kind.DRIVER)
           and call_class(kt.name(i)) in _DRIVER_NAME]
    return sorted(out, key=lambda i: kt.ts[i])


def write_driver_trace(kt: KinetoTrace, path, *, lead: int = 5, noise_every: int = 3,
                       layout: str = "bpftrace") -> dict[int, str]:
    """Write the file; returns {Kineto event: driver call name} of the calls written.

    ``layout`` "preload" writes LD_PRELOAD hook lines instead (seconds on CLOCK_MONOTONIC,
    op_id pairing, bare names, no launch records: the link then has no grid or block)."""
    lines = [BANNER, "Tracing userspace + kernel space", ""]
    eid = 0

    def emit(obj):
        nonlocal eid
        obj = {"event_id": eid, **obj}
        eid += 1
        lines.append(json.dumps(obj, separators=(",", ":")))

    op = 0

    def call(t_us, tid, name, dur_us, launch=None):
        nonlocal op
        if layout == "preload":
            t = (t_us + CLOCK_GAP_US) / 1e6
            lines.append(json.dumps({"ts": round(t, 9), "op_id": op, "tid": tid, "depth": 0, "phase": "B",
                                     "name": name}, separators=(",", ":")))
            lines.append(json.dumps({"ts": round(t + dur_us / 1e6, 9), "op_id": op, "tid": tid, "depth": 0,
                                     "phase": "E", "name": name, "result_code": 0}, separators=(",", ":")))
            op += 1
            return
        t = (t_us + CLOCK_GAP_US) / 1000.0
        emit({"ts": round(t, 6), "tid": tid, "phase": "B", "type": "userspace", "name": PROBE + name, "depth": 1})
        if launch is not None:
            grid, block = launch
            emit({"ts": round(t + 0.0002, 6), "tid": tid, "type": "kernel", "op": "launch", "grid": grid,
                  "block": block, "threads": grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]})
        emit({"ts": round(t + dur_us / 1000.0, 6), "tid": tid, "phase": "E", "type": "userspace", "name": RET + name,
              "depth": 1, "duration_us": dur_us, "retval": 0})

    calls = linked_calls(kt)
    kernel_of: dict[int, int] = {}
    for g in range(kt.n_events):
        lo = int(kt.launch_of[g])
        if lo >= 0 and (lo not in kernel_of or kt.ts[g] < kt.ts[kernel_of[lo]]):
            kernel_of[lo] = g
    written: dict[int, str] = {}
    first = float(kt.ts[calls[0]]) if calls else 0.0
    tid0 = kt.tids[calls[0]] if calls else 1
    for k in range(lead):  # launches the tracer saw before the profiler started
        call(first - 1000.0 * (lead - k), tid0, "cuLaunchKernel", 3.0, ([1, 1, 1], [32, 1, 1]))
    for n, i in enumerate(calls):
        cls = call_class(kt.name(i))
        name = _DRIVER_NAME[cls]
        launch = None
        if cls == CallClass.LAUNCH and i in kernel_of:
            a = kt.args(kernel_of[i])
            launch = (a.get(schema.GRID, [1, 1, 1]), a.get(schema.BLOCK, [1, 1, 1]))
        t = float(kt.ts[i]) + DELAY_US
        dur = max(float(kt.dur[i]) - 2 * DELAY_US, 0.5)
        if noise_every and n % noise_every == 0:
            call(t - DELAY_US / 2, kt.tids[i], "cuCtxGetCurrent", 0.1)
        call(t, kt.tids[i], name, dur, launch)
        written[i] = name
    lines.append("# Heartbeat: %d events captured" % eid)
    data = ("\n".join(lines) + "\n").encode()
    path = Path(path)
    path.write_bytes(gzip.compress(data, mtime=0) if path.name.endswith(".gz") else data)
    return written


def main(argv: list[str] | None = None) -> int:
    """``python -m tracetui.driver.synthetic KINETO OUT [--layout preload]``: write OUT
    (gzip when it ends in ``.gz``); prints one line saying what was written."""
    from ..errors import TraceError, one_line
    from ..kineto import load_kineto

    ap = argparse.ArgumentParser(prog="python -m tracetui.driver.synthetic", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kineto", help="a Kineto trace (.json or .json.gz) with runtime calls")
    ap.add_argument("out", help="the driver-call file to write (.jsonl, or .jsonl.gz)")
    ap.add_argument("--layout", choices=("bpftrace", "preload"), default="bpftrace",
                    help="bpftrace (default: begin/end lines with launch records) or preload (LD_PRELOAD hook lines)")
    args = ap.parse_args(argv)
    try:
        written = write_driver_trace(load_kineto(args.kineto), args.out, layout=args.layout)
    except TraceError as exc:
        print(f"tracetui: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"tracetui: {one_line(args.out)}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 2
    # the calls in the file as every command counts them (trace.event_counts: summary, info, the
    # status line): those standing for the Kineto trace's calls, plus the launches before its window
    # and the unrelated calls between them that the file holds too
    from .loader import load_driver
    from .trace import event_counts

    calls = event_counts(load_driver(args.out)).calls
    print(one_line(f"wrote {args.out}: a synthetic {args.layout} driver-call trace of {calls:,} calls, "
                   f"{len(written):,} of them standing for calls of {args.kineto} (the others: launches before "
                   "its window and unrelated cuCtxGetCurrent calls, so the link has something to find)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
