"""The H200 samples (``sample_traces/h200/``, issue 36): what sample_traces/README.md says each file
holds, counted from the raw files by code of the test's own (gzip + orjson for the traces and the
driver capture, ``tests/snapshot_unpickle.py`` for the memory snapshots, never ``pickle.load``;
``tests/xplane_walk.py`` for the XPlane), and tracetui's numbers equal to those counts.  No GPU is
needed: the files were recorded on the GPU box (``scripts/gpu_box.sh``) and are read here.

The browser's ``>`` from an ``aten::mm`` to its GEMM, with the occupancy worked out by hand, is
``tests/ui/test_ui_sample_h200.py``."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import numpy as np
import orjson
import pytest
from shared_traces import SAMPLES
from snapshot_unpickle import load_plain, read_snapshot
from xplane_walk import read_xspace

from tracetui.cli import main
from tracetui.kineto.kinds import Kind
from tracetui.session import load_pair, open_traces

H200 = SAMPLES / "h200"
PAIRS = ["cuda_transformer", "cuda_transformer_mem", "cuda_transformer_driver"]
DRIVER = H200 / "cuda_transformer_driver.jsonl.gz"
DRIVER_KINETO = H200 / "cuda_transformer_driver_kineto.json.gz"


def _json(path):
    return orjson.loads(gzip.open(path).read())


def _events(name: str) -> list[dict]:
    return _json(H200 / f"{name}_kineto.json.gz")["traceEvents"]


def _et_rf_ids(name: str) -> list[int]:
    """The non-zero ``rf_id`` attrs of the ET's nodes (nested layout: ``attrs`` name/value)."""
    out = []
    for node in _json(H200 / f"{name}_et.json.gz")["nodes"]:
        rf = next((a["value"] for a in node.get("attrs", []) if a["name"] == "rf_id"), 0)
        if rf:
            out.append(rf)
    return out


# ----------------------------------------------------------------------------- the CUDA pairs


@pytest.mark.parametrize("name", PAIRS)
def test_kernels_and_streams_of_each_pair(name):
    """196 kernels, 14 memsets and 2 copies, all on stream 7 of device 0 (the model uses one
    stream); tracetui has the same GPU events, each linked to its launch."""
    ev = _events(name)
    cats = Counter(e.get("cat") for e in ev)
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert (len(ev), cats["kernel"], cats["gpu_memset"], cats["gpu_memcpy"]) == (2555, 196, 14, 2)
    assert {(e["pid"], e["tid"], e["args"]["stream"]) for e in gpu} == {(0, 7, 7)}
    assert (cats["cpu_op"], cats["cuda_runtime"], cats["cuda_driver"]) == (1366, 221, 14)
    kt = load_pair(H200 / f"{name}_et.json.gz", H200 / f"{name}_kineto.json.gz").kineto
    assert int((kt.kind == int(Kind.KERNEL)).sum()) == cats["kernel"]
    assert int((kt.kind == int(Kind.MEMSET)).sum()) == cats["gpu_memset"]
    assert int((kt.kind == int(Kind.MEMCPY)).sum()) == cats["gpu_memcpy"]
    assert kt.gpu_stats.gpu_events == len(gpu) == 212 and kt.gpu_stats.linked == 212
    assert [ln.label for ln in kt.lanes if ln.label.startswith("GPU")] == ["GPU 0 stream 7"]


@pytest.mark.parametrize("name", PAIRS)
def test_every_et_op_links_by_rf_id(name, capsys):
    """The ET's 1,378 non-zero rf_ids are the Kineto trace's 1,378 Record function ids (1,366
    cpu_ops + 12 annotations), one to one; ``tracetui info --json`` links every one by rf_id."""
    et_ids = _et_rf_ids(name)
    k_ids = [e["args"]["Record function id"] for e in _events(name)
             if e.get("ph") == "X" and (e.get("args") or {}).get("Record function id")]
    assert len(et_ids) == len(set(et_ids)) == len(k_ids) == len(set(k_ids)) == 1378
    assert set(et_ids) == set(k_ids)
    assert main(["info", str(H200 / f"{name}_kineto.json.gz"), "--et", str(H200 / f"{name}_et.json.gz"),
                 "--no-cache", "--json"]) == 0
    link = json.loads(capsys.readouterr().out)["et_link"]
    assert (link["method"], link["et_ops"], link["kineto_ops"]) == ("rf_id", 1378, 1378)
    assert (link["linked"], link["by_rf_id"], link["et_only"], link["kineto_only"]) == (1378, 1378, 0, 0)


def test_the_model_runs_backward_on_its_own_thread():
    """Two host threads: the main thread and the autograd thread (``pt_autograd_0``), as on any
    CUDA recording (the CPU pair has one); the ET names them as two thread roots."""
    ev = _events("cuda_transformer")
    threads = {e["args"]["name"]: e["tid"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    host = Counter(e["tid"] for e in ev if e.get("cat") in ("cpu_op", "cuda_runtime", "cuda_driver", "user_annotation"))
    assert host == {639: 697, 664: 916} and threads["thread 664 (pt_autograd_0)"] == 664
    nodes = _json(H200 / "cuda_transformer_et.json.gz")["nodes"]
    assert Counter(n["name"] for n in nodes if n["name"].startswith("[pytorch|profiler|execution_trace|")) == {
        "[pytorch|profiler|execution_trace|thread]": 2, "[pytorch|profiler|execution_trace|process]": 1}


# ------------------------------------------------------------------- the driver-call capture

#: what each call does (the test's own table: launch, copy, memset, synchronize, allocate, free)
CALL_CLASS = {"cudaLaunchKernel": "launch", "cudaLaunchKernelExC": "launch", "cuLaunchKernel": "launch",
              "cuLaunchKernelEx": "launch", "cudaMemcpyAsync": "copy", "cuMemcpyHtoDAsync_v2": "copy",
              "cudaMemsetAsync": "memset", "cuMemsetD8Async": "memset", "cudaDeviceSynchronize": "sync",
              "cudaStreamSynchronize": "sync", "cuStreamSynchronize": "sync", "cuCtxSynchronize_v2": "sync",
              "cuMemAlloc_v2": "alloc", "cuMemFree_v2": "free"}


def _driver_lines() -> tuple[list[dict], list[bytes]]:
    """The capture's JSON object lines, and its other lines (the shim's banner and footer)."""
    objs, other = [], []
    for line in gzip.open(DRIVER).read().splitlines():
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        (objs.append(obj) if isinstance(obj, dict) else other.append(line))
    return objs, other


def test_driver_capture_calls_by_name(capsys):
    """1,859 libcuda calls (a B and an E line each, paired by op_id) on 2 threads; tracetui
    summary counts the same calls by name."""
    objs, other = _driver_lines()
    assert len(objs) == 3718 and len(other) == 2 and all(ln.startswith(b"# cuda_shim") for ln in other)
    begins = [o for o in objs if o["phase"] == "B"]
    ends = {o["op_id"]: o for o in objs if o["phase"] == "E"}
    assert len(begins) == len(ends) == 1859 and all(b["op_id"] in ends for b in begins)
    assert all(e.get("result_code", 0) == 0 for e in ends.values())
    by_name = Counter(b["name"] for b in begins)
    assert by_name == {"cuGetProcAddress_v2": 1323, "cuLaunchKernel": 354, "cuLaunchKernelEx": 80,
                       "cuMemsetD8Async": 28, "cuMemcpyHtoDAsync_v2": 25, "cuStreamSynchronize": 25,
                       "cuMemAlloc_v2": 9, "cuInit": 5, "cuCtxSynchronize_v2": 5, "cuDevicePrimaryCtxRetain": 3,
                       "cuMemFree_v2": 2}
    assert Counter(b["tid"] for b in begins) == {1068: 1642, 1089: 217}
    assert main(["summary", str(DRIVER), "--no-cache", "--json"]) == 0
    drv = json.loads(capsys.readouterr().out)["driver"]
    assert {c["name"]: c["count"] for c in drv["calls"]} == by_name
    assert (drv["events"], drv["threads"], drv["lines"]["json"], drv["lines"]["skipped"]) == (1859, 2, 3718, 2)


def _linkable(calls: list[tuple[float, str]]) -> tuple[np.ndarray, np.ndarray]:
    calls = sorted(c for c in calls if c[1] in CALL_CLASS)
    kinds = sorted(set(CALL_CLASS.values()))
    return (np.array([t for t, _ in calls]), np.array([kinds.index(CALL_CLASS[n]) for _, n in calls]))


def _brute_force(a_t, a_c, b_t, b_c) -> tuple[int, int, float]:
    """(equal calls, shift, clock offset) of the shift that pairs the most calls of the same
    class, ties going to the most constant time differences: every shift tried."""
    best = None
    for s in range(-a_c.size + 1, b_c.size):
        i = np.arange(max(0, -s), min(a_c.size, b_c.size - s))
        eq = i[a_c[i] == b_c[i + s]]
        if not eq.size:
            continue
        d = a_t[eq] - b_t[eq + s]
        key = (eq.size, -float(np.median(np.abs(d - np.median(d)))))
        if best is None or key > best[0]:
            best = (key, s, float(np.median(d)))
    return best[0][0], best[1], best[2]


def test_driver_capture_links_to_the_kineto_trace_of_its_run(capsys):
    """The Kineto trace recorded under the shim has 217 launch/copy/memset/sync calls (111 on the
    main thread, 106 on the autograd thread, all launches); the capture has 528 such calls (the
    whole run: start-up, the skipped and warm-up steps, then the 2 recorded ones).  Tried at every
    shift, each thread pairs all its calls, at one clock offset (within 0.1 µs): 217 of 217.
    ``tracetui info --driver`` links the same 217 (it linked 111 until its linker took the clock
    offset of the main thread as a candidate for the autograd thread, whose calls all look alike)."""
    kineto = [e for e in _json(DRIVER_KINETO)["traceEvents"]
              if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")]
    begins = [o for o in _driver_lines()[0] if o["phase"] == "B"]
    per_thread = {}
    for tid in (1068, 1089):
        a_t, a_c = _linkable([(e["ts"], e["name"]) for e in kineto if e["tid"] == tid])
        b_t, b_c = _linkable([(o["ts"] * 1e6, o["name"]) for o in begins if o["tid"] == tid])  # s -> µs
        per_thread[tid] = (a_c.size, b_c.size, *_brute_force(a_t, a_c, b_t, b_c))
    assert {t: v[:4] for t, v in per_thread.items()} == {1068: (111, 311, 111, 200), 1089: (106, 217, 106, 111)}
    offsets = [v[4] for v in per_thread.values()]
    assert abs(offsets[0] - offsets[1]) < 0.1  # one clock: the pairs of both threads agree

    assert main(["info", str(DRIVER_KINETO), "--driver", str(DRIVER), "--no-cache", "--json"]) == 0
    link = json.loads(capsys.readouterr().out)["driver_link"]
    assert (link["kineto_calls"], link["driver_calls"]) == (111 + 106, 311 + 217)
    assert (link["linked"], link["rejected_by_time"], link["confirmed"], link["heuristic"]) == (217, 0, 0, True)
    assert {t["kineto_thread"][1]: (t["linked"], t["shift"]) for t in link["threads"]} == {1068: (111, 200),
                                                                                         1089: (106, 111)}
    assert link["offset_us"] == pytest.approx(np.median(offsets), abs=0.1)


def test_every_linked_driver_call_is_the_one_its_kineto_call_made():
    """Pair by pair, the linked driver call does what its Kineto call does (the runtime call and
    the libcuda call it made), on the same thread."""
    m = open_traces([str(DRIVER_KINETO), str(DRIVER)]).kineto
    link = m.link
    ks = np.flatnonzero(link.kineto_to_driver >= 0)
    assert ks.size == 217
    for k in ks.tolist():
        d = int(link.kineto_to_driver[k])
        assert CALL_CLASS[m.name(k)] == CALL_CLASS[m.name(d)], (m.name(k), m.name(d))
        assert m.tids[k] == m.tids[d]


# -------------------------------------------------------------------------- memory snapshots


def _replay(snap: dict) -> tuple[int, int]:
    """(peak, final) bytes allocated, replaying the history: ``alloc`` adds, ``free_completed``
    subtracts (the history starts before the first allocation: it never goes below 0)."""
    now = peak = 0
    for e in snap["device_traces"][0]:
        now += {"alloc": e["size"], "free_completed": -e["size"]}.get(e["action"], 0)
        assert now >= 0
        peak = max(peak, now)
    return peak, now


def _live(snap: dict) -> list[dict]:
    return sorted((b for seg in snap["segments"] for b in seg["blocks"] if b["state"] == "active_allocated"),
                  key=lambda b: -b["size"])


def test_memory_snapshot_of_the_recorded_run():
    """cuda_transformer_mem_snapshot.pickle: 3 segments (69,206,016 B reserved), 5 blocks, 3 of
    them live (68,157,440 B, the size of the closing ``snapshot`` entry); 1,348 history entries;
    peak 68,519,460 B allocated; the largest live blocks are two of 32 MiB (one from
    ``nn.Linear.forward`` called at record.py line 115, one allocated on the autograd thread,
    where no Python frame exists)."""
    snap = read_snapshot(H200 / "cuda_transformer_mem_snapshot.pickle")
    segs = snap["segments"]
    assert (len(segs), sum(len(s["blocks"]) for s in segs), sum(s["total_size"] for s in segs)) == (3, 5, 69_206_016)
    trace = snap["device_traces"][0]
    assert Counter(e["action"] for e in trace) == {"alloc": 450, "free_requested": 447, "free_completed": 447,
                                                   "segment_alloc": 3, "snapshot": 1}
    peak, final = _replay(snap)
    live = _live(snap)
    assert peak == 68_519_460 and final == sum(b["size"] for b in live) == 68_157_440
    assert trace[-1]["action"] == "snapshot" and trace[-1]["size"] == final
    assert [b["size"] for b in live] == [33_554_432, 33_554_432, 1_048_576]
    top = [(f["name"], f["filename"].rsplit("/", 1)[-1], f["line"]) for f in live[0]["frames"][:4]]
    assert top[0] == ("forward", "linear.py", 134) and top[3] == ("forward", "record.py", 115)
    assert live[1]["frames"] == []
    assert snap["allocator_settings"]["expandable_segments"] is False


def test_out_of_memory_snapshot():
    """cuda_oom_snapshot.pickle: 17 segments, 39 blocks (35 live, 303,136,768 B), peak
    307,331,080 B allocated; one ``oom`` entry: 157,600,055,296 B asked for with 149,010,120,704 B
    free on the device (the script asked for the free bytes plus 8 GiB)."""
    snap = read_snapshot(H200 / "cuda_oom_snapshot.pickle")
    segs = snap["segments"]
    assert (len(segs), sum(len(s["blocks"]) for s in segs), sum(s["total_size"] for s in segs)) == (17, 39, 312_475_648)
    trace = snap["device_traces"][0]
    assert Counter(e["action"] for e in trace) == {"alloc": 56, "free_requested": 21, "free_completed": 21,
                                                   "segment_alloc": 17, "oom": 1}
    oom = next(e for e in trace if e["action"] == "oom")
    assert (oom["size"], oom["device_free"]) == (157_600_055_296, 149_010_120_704)
    assert oom["size"] - oom["device_free"] == 8 << 30
    peak, final = _replay(snap)
    live = _live(snap)
    assert (peak, final, len(live), sum(b["size"] for b in live)) == (307_331_080, 303_136_768, 35, 303_136_768)
    assert [b["size"] for b in live[:3]] == [33_554_432, 33_554_432, 16_777_216]
    assert live[0]["frames"][3]["name"] == "step" and live[0]["frames"][3]["filename"].endswith("oom_snapshot.py")


def test_the_unpickler_refuses_every_global():
    """The test's reader builds plain data only: a pickle naming a global (here a class) is refused."""
    import pickle
    from collections import OrderedDict

    assert load_plain(pickle.dumps({"a": [1, 2.5, None, True, "x", (3, 4)]}, protocol=5)) == {
        "a": [1, 2.5, None, True, "x", (3, 4)]}
    for proto in (2, 4, 5):
        with pytest.raises(ValueError, match="GLOBAL"):
            load_plain(pickle.dumps(OrderedDict(a=1), protocol=proto))


# ---------------------------------------------------------------------------------- the XPlane


def test_xplane_planes_and_kernels_per_device_plane():
    """jax_gpu_step.xplane.pb: 5 planes; the one device plane, /device:GPU:0 (NVIDIA H200, 132
    SMs), has one line, ``Stream #14(Compute)``, with 75 kernels: 15 names (the jitted step, run
    as one CUDA graph, ``command_buffer_1``) x 5 steps, every one of module ``jit_train_step``
    with its ``kernel_details``.  The trace JSON the profiler wrote beside it shows the same 75."""
    space = read_xspace(H200 / "jax_gpu_step.xplane.pb")
    assert [p.name for p in space.planes] == ["/host:metadata", "/host:__ScopeRangeCallStack__", "/device:GPU:0",
                                              "/host:CPU", "Task Environment"]
    assert space.hostnames == ["vm"]
    meta = space.plane("/host:metadata")
    assert (meta.stat(None, "jax_version"), meta.stat(None, "cuda_version")) == ("0.11.2", "13000")
    devices = [p for p in space.planes if p.name.startswith("/device:")]
    kernels = {p.name: sum(len(ln.events) for ln in p.lines) for p in devices}
    assert kernels == {"/device:GPU:0": 75}
    gpu = devices[0]
    assert (gpu.stat(None, "gpu_device_name"), gpu.stat(None, "core_count")) == ("NVIDIA H200", 132)
    (line,) = gpu.lines
    assert line.name == "Stream #14(Compute)"
    names = Counter(gpu.event_name(e) for e in line.events)
    assert len(names) == 15 and set(names.values()) == {5}
    assert {gpu.stat(e, "hlo_module") for e in line.events} == {"jit_train_step"}
    assert {gpu.stat(e, "hlo_op") for e in line.events} == {"command_buffer_1"}
    assert all(str(gpu.stat(e, "kernel_details")).startswith("regs:") for e in line.events)
    assert sum(e.duration_ps for e in line.events) == 186_975_000
    cpu = space.plane("/host:CPU")
    assert [(ln.name, len(ln.events)) for ln in cpu.lines] == [("Host Threads/757", 1), ("python3", 282)]
    assert Counter(cpu.event_name(e) for e in cpu.lines[1].events)["cuGraphLaunch (CudaGraph:2)"] == 5

    trace = _json(H200 / "jax_gpu_step.trace.json.gz")["traceEvents"]
    gpu_pid = next(e["pid"] for e in trace if e.get("ph") == "M" and e.get("name") == "process_name"
                   and e["args"]["name"] == "/device:GPU:0")
    assert Counter(e["name"] for e in trace if e.get("ph") == "X" and e["pid"] == gpu_pid) == names


# ------------------------------------------------------------------------------- provenance


def test_every_file_has_its_row_in_the_readme():
    """sample_traces/README.md names every file of h200/ with its size in bytes."""
    text = (SAMPLES / "README.md").read_text()
    files = sorted(p for p in H200.iterdir() if p.is_file())
    assert len(files) == 13
    for p in files:
        assert f"`{p.name}`" in text, p.name
        assert f"{p.stat().st_size:,} B" in text, (p.name, p.stat().st_size)
