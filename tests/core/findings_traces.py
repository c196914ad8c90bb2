"""Kineto traces written by the findings tests, for the rules no shared trace exercises (and
for exact numbers known by construction).  Times are µs; the host is pid 100, GPU 0 is pid 0."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

#: an A100 as Kineto writes its deviceProperties (the occupancy calculator's inputs)
A100 = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0, "numSms": 108,
        "warpSize": 32, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
        "regsPerMultiprocessor": 65536, "sharedMemPerBlock": 49152, "sharedMemPerBlockOptin": 166912,
        "sharedMemPerMultiprocessor": 167936}
HOST = 100


class KTrace:
    def __init__(self, device_properties: list | None = None) -> None:
        self.events: list[dict] = []
        self.corr = 0
        self.props = device_properties if device_properties is not None else [A100]

    def host(self, name: str, ts: float, dur: float, cat: str = "cpu_op", tid: int = 1, **args) -> dict:
        e = {"ph": "X", "cat": cat, "name": name, "pid": HOST, "tid": tid, "ts": ts, "dur": dur, "args": args}
        self.events.append(e)
        return e

    def gpu(self, name: str, ts: float, dur: float, *, launch_ts: float | None, launch_dur: float = 3.0,
            launch: str = "cudaLaunchKernel", cat: str = "kernel", tid: int = 1, stream: int = 7, device: int = 0,
            **args) -> dict:
        """A GPU event on ``stream`` and, when ``launch_ts`` is given, its launch call."""
        self.corr += 1
        if launch_ts is not None:
            self.host(launch, launch_ts, launch_dur, cat="cuda_runtime", tid=tid, correlation=self.corr)
        e = {"ph": "X", "cat": cat, "name": name, "pid": device, "tid": stream, "ts": ts, "dur": dur,
             "args": {"correlation": self.corr, "device": device, "stream": stream, **args}}
        self.events.append(e)
        return e

    def write(self, path: Path, **top) -> Path:
        """The trace as a Kineto JSON file; ``top``: more top-level keys (``distributedInfo``)."""
        doc = {"schemaVersion": 1, "deviceProperties": self.props, **top,
               "traceEvents": [{"ph": "M", "name": "process_name", "pid": HOST, "args": {"name": "python"}},
                               *self.events]}
        path.write_text(json.dumps(doc))
        return path


# ---- a job: one rank last at every barrier (the straggler rule) -------------------------------

NCCL_ALLREDUCE = "ncclKernel_AllReduce_RING_LL_Sum_uint8_t(ncclDevComm*, unsigned long, ncclWork*)"
STEPS = 6
SLOW = 2  #: the rank that logs for 2 ms before every barrier


def write_barrier_job(folder: Path, ranks: int = 4, slow_at: Callable[[int], int] = lambda step: SLOW,
                      noise_rank: int | None = 0, slow_name: str = "slow_logging") -> Path:
    """``ranks`` ranks, ``STEPS`` profiler steps of 10 ms; in each a matmul, then a barrier
    (record_param_comms "barrier" launching an NCCL all-reduce kernel); the rank
    ``slow_at(step)`` runs a 2 ms ``slow_name`` annotation before it and arrives 2000 µs
    after its step's barrier time, the others r µs after it.  In steps 0 and 1 an all-reduce
    follows where ``noise_rank`` arrives 300 µs late."""
    folder.mkdir()
    for r in range(ranks):
        t = KTrace()
        for s in range(STEPS):
            base = 10_000.0 * s + 1_000.0
            t.host(f"ProfilerStep#{s}", base - 500, 9_000, cat="user_annotation")
            t.host("aten::mm", base, 100)
            t.gpu("gemm_kernel", base + 150, 500, launch_ts=base + 10)
            late = r == slow_at(s)
            if late:
                t.host(slow_name, base + 200, 2_000, cat="user_annotation")
            hb = base + (2_300 if late else 300 + r)
            t.host("record_param_comms", hb, 60, **{"Collective name": "barrier"})
            t.gpu(NCCL_ALLREDUCE, hb + 20, 30, launch_ts=hb + 5, stream=20)
            if s < 2 and noise_rank is not None:
                ha = base + 5_000 + (300 if r == noise_rank else r)
                t.host("record_param_comms", ha, 60, **{"Collective name": "allreduce"})
                t.gpu(NCCL_ALLREDUCE, ha + 20, 30, launch_ts=ha + 5, stream=20)
        t.write(folder / f"rank{r}.json", distributedInfo={"backend": "nccl", "rank": r, "world_size": ranks})
    return folder
