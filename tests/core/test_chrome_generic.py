"""Chrome trace JSON that is not a PyTorch profiler trace (``tracetui/chrome/``, issue 38): which
files are recognised as such (every shared PyTorch trace stays one), and JAX's ``trace.json.gz``
(``sample_traces/h200``), a TensorFlow profiler trace, Triton proton's trace and a Perfetto JSON
export opened as generic traces.  The three small files are written here with what such files
hold (proton's ``TraceWriter.cpp``: string pids and tids, the kernel name as category; the
TensorFlow/JAX trace viewer's ``/device:GPU:0`` processes and ``Stream #N`` threads; Perfetto's
``export_json.cc``: ``__metadata`` events, flows, ``systemTraceEvents`` and ``metadata`` keys).
Every number is counted from the raw file by the test's own code (gzip + json)."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from shared_traces import ET_DIR, KINETO, SAMPLES, SHARED

from tracetui import formats
from tracetui.chrome.sniff import recognise
from tracetui.cli import main
from tracetui.io.formats import Recognition, read_head
from tracetui.kineto.kinds import Kind

JAX = SAMPLES / "h200" / "jax_gpu_step.trace.json.gz"

pytestmark = pytest.mark.usefixtures("_cache_dir")


@pytest.fixture
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))


def _raw(path: Path) -> dict:
    op = gzip.open if path.name.endswith(".gz") else open
    with op(path, "rb") as fh:
        return json.loads(fh.read())


def _device_work(doc: dict) -> list[tuple[int, int, dict]]:
    """(device, stream, event) of the complete events on ``/device:GPU:N`` ``Stream #S`` threads."""
    ev = doc["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    out = []
    for e in ev:
        if e.get("ph") != "X":
            continue
        p = re.match(r"/device:GPU:(\d+)", procs.get(e["pid"], ""))
        t = re.match(r"Stream #(\d+)", threads.get((e["pid"], e["tid"]), ""))
        if p and t:
            out.append((int(p.group(1)), int(t.group(1)), e))
    return out


# ------------------------------------------------------------------------------ recognition

def _shared_json_files() -> list[Path]:
    out = []
    for folder in (KINETO, ET_DIR, SHARED / "multirank", SAMPLES):
        out += sorted(p for p in folder.rglob("*.json*") if not p.name.endswith(".jsonl.gz"))
    return out


def test_every_shared_pytorch_trace_stays_a_pytorch_trace():
    """Every shared Kineto trace, ET and sample keeps its format; the generic format says NO to
    each (they carry schemaVersion or distributedInfo, and PyTorch categories); JAX's trace.json
    is the one generic Chrome trace."""
    files = _shared_json_files()
    assert len(files) >= 60
    kinds = {}
    for p in files:
        kinds[p] = formats.detect(p)
        if p != JAX:
            assert recognise(read_head(p)) == Recognition.NO, p
    assert [p for p, k in kinds.items() if k == formats.FileKind.CHROME] == [JAX]
    for p, k in kinds.items():
        doc = _raw(p)
        if isinstance(doc, dict) and "nodes" in doc:
            assert k == formats.FileKind.ET, p
        elif p != JAX:
            assert k == formats.FileKind.KINETO, p


@pytest.mark.parametrize("doc, kind", [
    ({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}, "chrome"),
    ([{"ph": "X", "name": "a", "cat": "my,cats", "pid": 1, "tid": 1, "ts": 1, "dur": 1}], "chrome"),
    ({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}, "kineto"),
    ({"traceEvents": [{"ph": "X", "cat": "gpu,kernel", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]},
     "kineto"),
    ({"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}, "kineto"),
    ({"traceEvents": []}, "kineto"),  # no event to tell by: the Kineto loader opens it, as before
])
def test_what_tells_a_pytorch_trace_from_another_chrome_trace(tmp_path, doc, kind):
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    assert formats.detect(p).spec.name == kind


# ------------------------------------------------------------------------------ JAX's trace.json

def test_jax_trace_json_is_a_generic_trace_with_its_gpu_kernels(capsys):
    """75 kernels on /device:GPU:0 Stream #14 (15 kernels x 5 steps), the rest host spans with
    their own (empty) category; no 'category not understood' warning; the status words."""
    raw = _raw(JAX)
    gpu = _device_work(raw)
    assert len(gpu) == 75 and {(d, s) for d, s, _ in gpu} == {(0, 14)}
    kt = formats.load(JAX)
    assert kt.source_format == "chrome" and formats.other_format(kt).title == "Chrome trace JSON"
    k = np.flatnonzero(kt.kind == int(Kind.KERNEL))
    assert k.size == 75
    assert set(zip(kt.device[k].tolist(), kt.stream[k].tolist())) == {(0, 14)}
    assert float(kt.dur[k].sum()) == pytest.approx(sum(e["dur"] for *_, e in gpu), rel=1e-12)
    assert Counter(kt.name(i) for i in k.tolist()) == Counter(e["name"] for *_, e in gpu)
    host_x = [e for e in raw["traceEvents"] if e.get("ph") == "X" and e not in [g for *_, g in gpu]]
    assert int((kt.kind == int(Kind.OTHER)).sum()) == len(host_x) + 1  # + the element without ph
    assert not [w for w in kt.warnings if w.kind == "unknown_category"]
    assert main(["info", str(JAX), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == {"name": "chrome", "title": "Chrome trace JSON"}
    assert info["kineto"]["no_launch_records"] is True


@pytest.mark.slow
def test_every_command_runs_on_the_jax_trace(tmp_path, capsys):
    raw = _raw(JAX)
    gpu = _device_work(raw)
    j = str(JAX)
    assert main(["summary", j, "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    by_name = Counter(e["name"] for *_, e in gpu)
    assert {k["name"]: k["count"] for k in s["kernels"]} == dict(by_name)
    assert main(["query", j, "SELECT device, stream, count(*) AS n, sum(dur_us) AS us FROM kernels GROUP BY ALL",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["device"], r["stream"], r["n"]) for r in rows] == [(0, 14, 75)]
    assert rows[0]["us"] == pytest.approx(sum(e["dur"] for *_, e in gpu), rel=1e-12)
    assert main(["check", j]) in (0, 1)
    assert main(["critical-path", j]) == 0
    md = tmp_path / "r.md"
    assert main(["export", j, "-f", "md", "-o", str(md)]) == 0
    assert "GPU events: 75 (75 kernels" in md.read_text()
    capsys.readouterr()
    out = tmp_path / "s.json"
    assert main(["slice", j, "--window", "0:100000", "-o", str(out)]) == 0
    assert sum(1 for e in _raw(out)["traceEvents"] if e.get("cat") == "kernel") == 75
    # diff: B is the file with every gemm_fusion_dot_2 twice as long
    doc = json.loads(json.dumps(raw))
    added = 0.0
    for e in doc["traceEvents"]:
        if e.get("name") == "gemm_fusion_dot_2":
            added += e["dur"]
            e["dur"] *= 2
    b = tmp_path / "b.trace.json"
    b.write_text(json.dumps(doc))
    assert formats.detect(b) == formats.FileKind.CHROME
    capsys.readouterr()
    assert main(["diff", j, str(b), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    changed = {k["name"]: k["delta_us"] for k in d["kernels"] if abs(k["delta_us"]) > 1e-9}
    assert list(changed) == ["gemm_fusion_dot_2"] and changed["gemm_fusion_dot_2"] == pytest.approx(added)


# ------------------------------------------------------------------------------ other writers

def tensorflow_doc() -> dict:
    """A TensorFlow profiler trace viewer JSON: /device:GPU:0 with a compute stream, a copy
    stream and the derived "XLA Ops" line; /host:CPU with an executor thread."""
    meta = [("process_name", 1, None, "/device:GPU:0 (NVIDIA A100)"), ("thread_name", 1, 7, "Stream #7(Compute)"),
            ("thread_name", 1, 8, "Stream #8(MemcpyH2D)"), ("thread_name", 1, 2, "XLA Ops"),
            ("process_name", 9, None, "/host:CPU"), ("thread_name", 9, 301, "tf_Compute/301")]
    ev = [{"ph": "M", "name": n, "pid": p, **({"tid": t} if t is not None else {}), "args": {"name": v}}
          for n, p, t, v in meta]
    ev += [
        {"ph": "X", "pid": 9, "tid": 301, "ts": 100.0, "dur": 900.0, "name": "ExecutorState::Process"},
        {"ph": "X", "pid": 9, "tid": 301, "ts": 120.0, "dur": 30.0, "name": "cuLaunchKernel"},
        {"ph": "X", "pid": 1, "tid": 8, "ts": 130.0, "dur": 40.0, "name": "MemcpyH2D",
         "args": {"memcpy_details": "kind_src:pageable size:4096"}},
        {"ph": "X", "pid": 1, "tid": 7, "ts": 200.0, "dur": 50.0, "name": "volta_sgemm_128x64_nn",
         "args": {"correlation_id": "12", "kernel_details": "regs:64 grid:80,1,1 block:256,1,1"}},
        {"ph": "X", "pid": 1, "tid": 7, "ts": 260.0, "dur": 10.0, "name": "Memset"},
        {"ph": "X", "pid": 1, "tid": 7, "ts": 280.0, "dur": 20.0, "name": "relu_kernel"},
        {"ph": "X", "pid": 1, "tid": 2, "ts": 200.0, "dur": 100.0, "name": "dense/MatMul"},  # derived: not GPU work
    ]
    return {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True}, "traceEvents": ev}


def test_a_tensorflow_trace_reads_its_streams_as_gpu_work(tmp_path):
    doc = tensorflow_doc()
    p = tmp_path / "tf.trace.json.gz"
    p.write_bytes(gzip.compress(json.dumps(doc).encode()))
    gpu = _device_work(doc)
    assert formats.detect(p) == formats.FileKind.CHROME
    kt = formats.load(p)
    want = Counter("memcpy" if e["name"].startswith("Memcpy") else "memset" if e["name"].startswith("Memset")
                   else "kernel" for *_, e in gpu)
    got = Counter(Kind(int(k)).name.lower() for k in kt.kind if Kind(int(k)) in (Kind.KERNEL, Kind.MEMCPY,
                                                                                   Kind.MEMSET))
    assert got == want == Counter({"kernel": 2, "memcpy": 1, "memset": 1})
    lanes = {kt.name(i): kt.lane_of_node(i).label for i in range(kt.n_events)}
    assert lanes["dense/MatMul"] == "XLA Ops (/device:GPU:0 (NVIDIA A100), pid 1)"
    assert kt.lane_of_node(int(np.flatnonzero(kt.kind == int(Kind.KERNEL))[0])).is_gpu
    assert kt.name(int(kt.parent[[kt.name(i) for i in range(kt.n_events)].index("cuLaunchKernel")])) == \
        "ExecutorState::Process"
    assert kt.args([kt.name(i) for i in range(kt.n_events)].index("volta_sgemm_128x64_nn"))["kernel_details"] == \
        "regs:64 grid:80,1,1 block:256,1,1"


def proton_doc() -> dict:
    """Triton proton's intra-kernel trace (``TraceWriter.cpp``): string pids per kernel, core
    and CTA, string tids per warp and line, the kernel name as every event's category."""
    ev = []
    for cta in (0, 1):
        pid = f"matmul_kernel Core{cta} CTA{cta}"
        for warp in (0, 1):
            tid = f"warp {warp} (line 0)"
            base = 1000.0 * cta + 10.0 * warp
            ev.append({"cname": "cq_build_passed", "name": "loop", "cat": "matmul_kernel", "ph": "X", "pid": pid,
                       "tid": tid, "ts": base, "dur": 50.0, "args": {"Frequency (MHz)": 1000.0, "call_stack": []}})
            ev.append({"cname": "thread_state_iowait", "name": "load", "cat": "matmul_kernel", "ph": "X", "pid": pid,
                       "tid": tid, "ts": base + 5.0, "dur": 20.0, "args": {"Frequency (MHz)": 1000.0}})
    return {"displayTimeUnit": "ns", "traceEvents": ev}


def test_a_proton_trace_opens_with_lanes_by_process_and_thread_and_nesting_by_time(tmp_path):
    doc = proton_doc()
    p = tmp_path / "proton.chrome_trace"
    p.write_text(json.dumps(doc))
    assert formats.detect(p) == formats.FileKind.CHROME
    kt = formats.load(p)
    raw = doc["traceEvents"]
    assert kt.n_events == len(raw) == 8
    lanes = {(e["pid"], e["tid"]) for e in raw}
    assert {(ln.pid, ln.tid) for ln in kt.lanes} == lanes and not any(ln.is_gpu for ln in kt.lanes)
    for i in range(kt.n_events):  # each "load" inside its warp's "loop"
        if kt.name(i) == "load":
            assert kt.name(int(kt.parent[i])) == "loop" and kt.pids[int(kt.parent[i])] == kt.pids[i]
    assert kt.category_counts() == {"matmul_kernel": 8}
    assert not kt.warnings


def perfetto_doc() -> dict:
    """A Perfetto JSON export (``export_json.cc``): ``__metadata`` events, slices, a B/E pair, a
    flow (s/f with an id, bound to the enclosing slice), a counter, an async pair, and the
    ``systemTraceEvents`` and ``metadata`` keys."""
    ev = [
        {"ph": "M", "cat": "__metadata", "ts": 0, "name": "process_name", "pid": 10, "tid": 10,
         "args": {"name": "renderer"}},
        {"ph": "M", "cat": "__metadata", "ts": 0, "name": "thread_name", "pid": 10, "tid": 11,
         "args": {"name": "CrRendererMain"}},
        {"ph": "X", "cat": "toplevel", "name": "RunTask", "pid": 10, "tid": 11, "ts": 1000, "dur": 500,
         "args": {"src_file": "a.cc"}},
        {"ph": "X", "cat": "blink", "name": "Layout", "pid": 10, "tid": 11, "ts": 1100, "dur": 100},
        {"ph": "B", "cat": "v8", "name": "V8.Execute", "pid": 10, "tid": 12, "ts": 2000},
        {"ph": "E", "cat": "v8", "name": "V8.Execute", "pid": 10, "tid": 12, "ts": 2300},
        {"ph": "s", "cat": "toplevel.flow", "name": "post", "id": "0x1", "pid": 10, "tid": 11, "ts": 1150},
        {"ph": "f", "cat": "toplevel.flow", "name": "post", "id": "0x1", "bp": "e", "pid": 10, "tid": 12, "ts": 2100},
        {"ph": "C", "cat": "memory", "name": "heap", "pid": 10, "ts": 1500, "args": {"bytes": 4096}},
        {"ph": "b", "cat": "loading", "name": "Load", "id2": {"local": "0x5"}, "pid": 10, "tid": 11, "ts": 900},
        {"ph": "e", "cat": "loading", "name": "Load", "id2": {"local": "0x5"}, "pid": 10, "tid": 11, "ts": 3000},
    ]
    return {"traceEvents": ev, "systemTraceEvents": "", "metadata": {"trace_processor_stats": {"json_parser": 0}}}


def test_a_perfetto_export_keeps_its_categories_flows_and_args(tmp_path):
    doc = perfetto_doc()
    p = tmp_path / "perfetto.json"
    p.write_text(json.dumps(doc))
    assert formats.detect(p) == formats.FileKind.CHROME
    kt = formats.load(p)
    raw = doc["traceEvents"]
    names = [kt.name(i) for i in range(kt.n_events)]
    assert kt.name(int(kt.parent[names.index("Layout")])) == "RunTask"
    v8 = names.index("V8.Execute")
    assert float(kt.dur[v8]) == 300.0  # the B/E pair merged
    assert kt.args(names.index("RunTask")) == {"src_file": "a.cc"}
    flows = [e for e in raw if e["ph"] in "sf"]
    assert len(kt.flows.ph) == len(flows) == 2 and set(kt.flows.cat) == {"toplevel.flow"}
    assert not [w for w in kt.warnings if w.kind == "unknown_category"]
    assert set(kt.category_counts()) == {e["cat"] for e in raw if e["ph"] in "XBbeCi"}
    assert kt.metadata["metadata"] == doc["metadata"]


# ------------------------------------------------------------------------------ bad input

@pytest.mark.parametrize("case", ["corrupt byte", "not a list"])
def test_a_corrupt_chrome_trace_is_one_line_and_exit_2(tmp_path, capsys, case):
    good = json.dumps(tensorflow_doc()).encode()
    if case == "corrupt byte":
        at = good.index(b'"volta_sgemm')
        data, says = good[:at] + b"#" + good[at + 1:], " at byte "
    else:
        data, says = b'{"displayTimeUnit": "ns", "traceEvents": {"ph": "X"}}', "'traceEvents' is an object"
    p = tmp_path / "bad.trace.json"
    p.write_bytes(data)
    assert main(["info", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and err.startswith(f"tracetui: {p}") and says in err


def test_a_chrome_trace_cut_short_opens_with_what_was_complete(tmp_path):
    good = json.dumps(tensorflow_doc()).encode()
    cut = good[:good.index(b'"relu_kernel"')]
    p = tmp_path / "cut.trace.json"
    p.write_bytes(cut)
    assert formats.detect(p) == formats.FileKind.CHROME
    kt = formats.load(p)
    assert any(w.kind == "truncated" for w in kt.warnings)
    assert int((kt.kind == int(Kind.KERNEL)).sum()) == 1


def test_the_jax_trace_json_and_its_xplane_give_the_same_kernels():
    """The profiler's trace.json and the XPlane it was made from (same run): the same kernels,
    by name, device and stream, with the same total time (the XPlane's ps, the JSON's µs)."""
    xp = formats.load(SAMPLES / "h200" / "jax_gpu_step.xplane.pb")
    js = formats.load(JAX)
    assert xp.source_format == "xplane" and js.source_format == "chrome"

    def kernels(kt):
        k = np.flatnonzero(kt.kind == int(Kind.KERNEL)).tolist()
        return Counter((kt.name(i), int(kt.device[i]), int(kt.stream[i])) for i in k), float(kt.dur[k].sum())

    (xk, xt), (jk, jt) = kernels(xp), kernels(js)
    assert xk == jk and sum(jk.values()) == 75
    assert jt == pytest.approx(xt, abs=1e-3)
