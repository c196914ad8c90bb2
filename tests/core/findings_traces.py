"""Kineto traces written by the findings tests, for the rules no shared trace exercises (and
for exact numbers known by construction).  Times are µs; the host is pid 100, GPU 0 is pid 0."""

from __future__ import annotations

import json
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

    def write(self, path: Path) -> Path:
        doc = {"schemaVersion": 1, "deviceProperties": self.props,
               "traceEvents": [{"ph": "M", "name": "process_name", "pid": HOST, "args": {"name": "python"}},
                               *self.events]}
        path.write_text(json.dumps(doc))
        return path
