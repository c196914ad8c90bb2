"""Small Kineto traces written by the critical-path tests, each with a path known by construction.

Times are µs from 1,000,000 (the writer adds the offset); one host thread (pid 1, tid 1)
unless told, GPU 0 with streams 7 and 8.  Each builder returns ``(path, expected)`` where
``expected`` is the path's ``total_us``, ``by_kind_us`` and segments ``(kind, name, dur)``.
"""

from __future__ import annotations

import json
from pathlib import Path

T0 = 1_000_000


class TraceWriter:
    def __init__(self) -> None:
        self.events: list[dict] = []

    def _x(self, cat: str, name: str, ts: float, dur: float, pid=1, tid=1, **args) -> None:
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": T0 + ts, "dur": dur,
                            "args": args})

    def step(self, n: int, ts: float, dur: float) -> None:
        self._x("user_annotation", f"ProfilerStep#{n}", ts, dur)

    def op(self, name: str, ts: float, dur: float, tid=1, cat="cpu_op") -> None:
        self._x(cat, name, ts, dur, tid=tid)

    def call(self, name: str, ts: float, dur: float, corr: int, tid=1) -> None:
        self._x("cuda_runtime", name, ts, dur, tid=tid, correlation=corr)

    def kernel(self, name: str, ts: float, dur: float, corr: int, stream: int = 7, cat="kernel") -> None:
        self._x(cat, name, ts, dur, pid=0, tid=stream, correlation=corr, stream=stream, device=0)

    def cupti(self, name: str, ts: float, dur: float, corr: int, stream: int, **args) -> None:
        self._x("cuda_sync", name, ts, dur, pid=0, tid=stream, correlation=corr, stream=stream, **args)

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [], "traceEvents": self.events}))
        return path


def gpu_bound(tmp: Path):
    """Three kernels queue back to back: the GPU decides the step."""
    w = TraceWriter()
    w.step(1, 0, 100)
    for i, (t, name) in enumerate(((5, "aten::op1"), (30, "aten::op2"), (55, "aten::op3")), 1):
        w.op(name, t, 20)
        w.call("cudaLaunchKernel", t + 5, 5, corr=i)
    w.kernel("gemm_a", 20, 200, corr=1)
    w.kernel("gemm_b", 222, 300, corr=2)
    w.kernel("relu_c", 525, 100, corr=3)
    segs = [("host", "ProfilerStep#1", 5), ("host", "aten::op1", 5), ("launch_delay", "gemm_a", 10),
            ("gpu", "gemm_a", 200), ("gpu_gap", "gemm_b", 2), ("gpu", "gemm_b", 300), ("gpu_gap", "relu_c", 3),
            ("gpu", "relu_c", 100)]
    return w.write(tmp / "gpu_bound.json"), {"total_us": 625.0, "segments": segs}


def launch_bound(tmp: Path):
    """Tiny kernels behind slow host ops: the host and the last launch decide the step."""
    w = TraceWriter()
    w.step(1, 0, 180)
    for i, t in enumerate((10, 70, 130), 1):
        w.op(f"aten::op{i}", t, 50 if i < 3 else 49)
        w.call("cudaLaunchKernel", t + 40, 8, corr=i)
        w.kernel(f"k{i}", t + 52, 2 if i < 3 else 4, corr=i)
    segs = [("host", "ProfilerStep#1", 10), ("host", "aten::op1", 40), ("host", "cudaLaunchKernel", 8),
            ("host", "aten::op1", 2), ("host", "ProfilerStep#1", 10), ("host", "aten::op2", 40),
            ("host", "cudaLaunchKernel", 8), ("host", "aten::op2", 2), ("host", "ProfilerStep#1", 10),
            ("host", "aten::op3", 40), ("launch_delay", "k3", 12), ("gpu", "k3", 4)]
    return w.write(tmp / "launch_bound.json"), {"total_us": 186.0, "segments": segs}


def host_sync(tmp: Path, record: bool = True):
    """``aten::item`` waits in cudaStreamSynchronize for a copy queued behind a long kernel."""
    w = TraceWriter()
    w.step(1, 0, 500)
    w.op("aten::mm", 10, 30)
    w.call("cudaLaunchKernel", 20, 5, corr=1)
    w.kernel("gemm", 30, 400, corr=1)
    w.op("aten::item", 50, 400)
    w.op("aten::_local_scalar_dense", 52, 396)
    w.call("cudaMemcpyAsync", 55, 5, corr=2)
    w.kernel("Memcpy DtoH (Device -> Pinned)", 432, 4, corr=2, cat="gpu_memcpy")
    w.call("cudaStreamSynchronize", 62, 378, corr=3)
    if record:
        w.cupti("Stream Sync", 62, 378, corr=3, stream=7)
    w.op("aten::add", 460, 20)
    segs = [("host", "ProfilerStep#1", 10), ("host", "aten::mm", 10), ("launch_delay", "gemm", 10),
            ("gpu", "gemm", 400), ("gpu_gap", "Memcpy DtoH (Device -> Pinned)", 2),
            ("gpu", "Memcpy DtoH (Device -> Pinned)", 4), ("sync_wait", "cudaStreamSynchronize", 4),
            ("host", "aten::_local_scalar_dense", 8), ("host", "aten::item", 2), ("host", "ProfilerStep#1", 10),
            ("host", "aten::add", 20), ("host", "ProfilerStep#1", 20)]
    return w.write(tmp / f"host_sync_{int(record)}.json"), {"total_us": 500.0, "segments": segs}


def cross_stream(tmp: Path, record: bool = True):
    """A kernel on stream 8 waits (cudaStreamWaitEvent) for a kernel on stream 7."""
    w = TraceWriter()
    w.step(1, 0, 100)
    w.op("aten::mm", 10, 20)
    w.call("cudaLaunchKernel", 15, 5, corr=1)
    w.kernel("gemm", 25, 200, corr=1, stream=7)
    w.call("cudaEventRecord", 32, 2, corr=2)
    w.call("cudaStreamWaitEvent", 36, 2, corr=3)
    if record:
        w.cupti("Stream Wait Event", 37, 1, corr=3, stream=8, wait_on_stream=7, wait_on_cuda_event_record_corr_id=2)
    w.op("aten::add", 40, 20)
    w.call("cudaLaunchKernel", 45, 5, corr=4)
    w.kernel("add_kernel", 230, 50, corr=4, stream=8)
    segs = [("host", "ProfilerStep#1", 10), ("host", "aten::mm", 5), ("launch_delay", "gemm", 10),
            ("gpu", "gemm", 200), ("stream_wait", "add_kernel", 5), ("gpu", "add_kernel", 50)]
    return w.write(tmp / f"cross_stream_{int(record)}.json"), {"total_us": 280.0, "segments": segs}


def cuda_graph(tmp: Path):
    """One cudaGraphLaunch owns three kernels (same correlation)."""
    w = TraceWriter()
    w.step(1, 0, 50)
    w.op("aten::graph_replay", 5, 35)
    w.call("cudaGraphLaunch", 10, 10, corr=1)
    w.kernel("ga", 30, 100, corr=1)
    w.kernel("gb", 132, 50, corr=1)
    w.kernel("gc", 185, 100, corr=1)
    segs = [("host", "ProfilerStep#1", 5), ("host", "aten::graph_replay", 5), ("launch_delay", "ga", 20),
            ("gpu", "ga", 100), ("gpu_gap", "gb", 2), ("gpu", "gb", 50), ("gpu_gap", "gc", 3), ("gpu", "gc", 100)]
    return w.write(tmp / "cuda_graph.json"), {"total_us": 285.0, "segments": segs}


def fork_join(tmp: Path):
    """The main thread waits in run_backward while the autograd thread (tid 2) works."""
    w = TraceWriter()
    w.step(1, 0, 300)
    w.op("run_backward", 10, 280, cat="python_function")
    w.op("AddmmBackward0", 20, 120, tid=2)
    w.op("MmBackward0", 150, 130, tid=2)
    segs = [("host", "ProfilerStep#1", 10), ("other", None, 10), ("host", "AddmmBackward0", 120), ("other", None, 10),
            ("host", "MmBackward0", 130), ("host", "run_backward", 10), ("host", "ProfilerStep#1", 10)]
    return w.write(tmp / "fork_join.json"), {"total_us": 300.0, "segments": segs}


def by_kind(segments) -> dict[str, float]:
    out: dict[str, float] = {}
    for kind, _name, dur in segments:
        out[kind] = out.get(kind, 0.0) + dur
    return out
