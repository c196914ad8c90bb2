"""Critical path on shared real traces: the breakdown adds up to the path, the path is a
chain of dependencies in time order, and its ends and waits agree with the raw files."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from shared_traces import kineto_path, load_shared_kineto

from tracetui.critical import path_graph, step_window, trace_window
from tracetui.critical.model import kind_name
from tracetui.critical.solve import path_edges


def _raw(name: str) -> list[dict]:
    return json.loads(gzip.decompress(kineto_path(name).read_bytes()))["traceEvents"]


def _assert_chain(cp, g):
    """Each path edge is an edge of the graph, starts where the previous one ended, and goes
    forward in time; the first leaves the window start, the last reaches the window's last event."""
    e = path_edges(g)
    assert e.size and g.src[e[0]] == g.source and g.dst[e[-1]] == g.sink
    assert (g.dst[e[:-1]] == g.src[e[1:]]).all()
    assert (g.node_t[g.dst[e]] >= g.node_t[g.src[e]]).all()
    assert sum(cp.by_kind_us.values()) == pytest.approx(cp.total_us, abs=1e-6)
    s = cp.segments
    assert np.allclose(s.start_us[1:], (s.start_us + s.dur_us)[:-1])
    assert float(s.dur_us.sum()) == pytest.approx(cp.total_us, abs=1e-6)


def test_event_sync_multistream_whole_trace():
    name = "a100_event_sync_multistream.json.gz"
    kt = load_shared_kineto(name)
    cp, g = path_graph(kt, trace_window(kt))
    _assert_chain(cp, g)
    raw = [e for e in _raw(name) if e.get("ph") == "X" and e.get("cat") not in ("Trace", "cuda_sync")]
    first = min(e["ts"] for e in raw)
    last = max(e["ts"] + e["dur"] for e in raw)
    assert cp.total_us == pytest.approx(last - first)  # 19,930 µs
    # the trace ends in cudaDeviceSynchronize, waiting for the sgemm of correlation 1413 (stream 24)
    s = cp.segments
    assert kind_name(s.kind[-1]) == "sync_wait" and s.name[-1] == "cudaDeviceSynchronize"
    assert int(kt.correlation[s.from_event[-1]]) == 1413 and kt.name(int(s.from_event[-1])) == "ampere_sgemm_128x64_nn"
    assert s.dur_us[-1] == pytest.approx(13.0)  # sgemm ends at +...173, the call returns at +...186
    # the CUPTI "Stream Wait Event": stream 24 waits for the sgemm of correlation 27 on stream 20
    assert g.stats["stream_wait_edges"] == 1 and g.stats["sync_edges"] >= 1
    # 18.7 ms of the path is the main thread between two top-level ops, outside any traced event
    assert cp.by_kind_us["other"] == pytest.approx(18723.0)


@pytest.mark.slow
def test_resnet_training_step_across_threads_and_streams():
    name = "mi300_resnet_train_checkpointing.json.gz"
    kt = load_shared_kineto(name)
    cp, g = path_graph(kt, step_window(kt, 16))
    _assert_chain(cp, g)
    # the last event: the latest end of GPU work launched by a call that starts inside ProfilerStep#16
    raw = _raw(name)
    step = next(e for e in raw if e.get("name") == "ProfilerStep#16" and e.get("cat") == "user_annotation")
    t0, t1 = step["ts"], step["ts"] + step["dur"]
    launched = {e["args"]["correlation"] for e in raw if e.get("cat") == "cuda_runtime" and t0 <= e["ts"] < t1
                and "correlation" in e.get("args", {})}
    ends = [e["ts"] + e["dur"] for e in raw if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
            and e.get("args", {}).get("correlation") in launched]
    assert cp.window.start_us + cp.total_us == pytest.approx(max(ends) - kt.origin_us, abs=1e-3)
    # the GPU is the bottleneck: two RCCL all_reduce kernels run carried in from the previous
    # step, and the compute stream waits for them (inferred: the trace has no CUPTI sync records)
    assert cp.by_kind_us["gpu"] > 0.7 * cp.total_us
    waits = np.flatnonzero(cp.segments.kind == 4)
    assert waits.size and cp.segments.inferred[waits].all()
    assert any(kt.name(int(cp.segments.from_event[i])).startswith("ncclDevKernel") for i in waits)
    assert 0 < cp.carried_in_us < cp.total_us
