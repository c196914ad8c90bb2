"""The CPU-side parts of the GPU-box run (issue 36, ``scripts/gpu_box.sh``), tested without a GPU.

The LD_PRELOAD recorder ``scripts/gpu_box/cuda_shim.c`` is built with the C compiler here and
preloaded into ``shim_demo.c``, which calls a fake ``libcuda.so.1`` (``stub_libcuda.c``) the three
ways a real program reaches the driver: linked symbols, ``dlsym`` on a ``dlopen`` handle, and
entry points handed out by ``cuGetProcAddress_v2`` (the CUDA runtime's way).  The lines must be
the LD_PRELOAD layout of ``../shared/FORMATS.md`` ("Driver-call traces"), every call must still
reach the stub, and ``tracetui summary`` must read the file (skipped where no C compiler is).
Then the packing of the outputs into what the device tool brings back, the script's plan
(``--dry-run``), and the pure parts of the Python helpers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import orjson
import pytest

from tracetui.cli import main

REPO = Path(__file__).resolve().parents[2]
BOX = REPO / "scripts" / "gpu_box"
CC = shutil.which("gcc") or shutil.which("cc")
#: where cuda.h may be: with it the shim's wrappers are checked against the real declarations
CUDA_INCLUDES = [p for p in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda") if p and Path(p, "include",
                                                                                               "cuda.h").is_file()]

needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (gcc or cc) on PATH")

#: the documented keys of the layout (pid added: several processes may share a file)
BEGIN_KEYS = {"ts", "op_id", "pid", "tid", "depth", "phase", "name"}
#: what shim_demo.c calls through the shim, by the name the lines give (the stub counts the same)
EXPECTED = {"cuInit": 1, "cuCtxSynchronize": 2, "cuCtxSynchronize_v2": 1, "cuGetProcAddress_v2": 11,
            "cuLaunchKernel": 203, "cuLaunchKernel_ptsz": 1, "cuMemAlloc_v2": 2, "cuMemFree_v2": 1,
            "cuMemcpyHtoDAsync_v2_ptsz": 1, "cuStreamSynchronize_ptsz": 1, "cuEventSynchronize": 1}
#: calls that reach the stub without the shim seeing them: cuEventSynchronize handed out for a
#: version newer than the shim's table (by name alone it is not wrapped: its ABI could differ)
UNSEEN = {"cuEventSynchronize": 1}


def _cc(*args: str | Path) -> None:
    subprocess.run([CC, *map(str, args)], check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The stub libcuda, the demo linked to it and the shim, built in one folder."""
    d = tmp_path_factory.mktemp("gpu_box_shim")
    _cc("-fPIC", "-shared", "-Wl,-soname,libcuda.so.1", "-Wl,-Bsymbolic", "-o", d / "libcuda.so.1",
        BOX / "stub_libcuda.c", "-ldl")
    (d / "libcuda.so").symlink_to("libcuda.so.1")
    _cc("-o", d / "shim_demo", BOX / "shim_demo.c", f"-L{d}", "-lcuda", "-ldl", "-lpthread", "-Wl,-rpath,$ORIGIN")
    includes = [f"-I{p}/include" for p in CUDA_INCLUDES[:1]]
    _cc("-O2", "-Wall", "-Werror", "-fPIC", "-shared", "-o", d / "libcuda_shim.so", BOX / "cuda_shim.c", *includes,
        "-ldl", "-lpthread")
    return d


def run_demo(built: Path, out: Path, *args: str, **env: str) -> dict:
    """Run the demo with the shim preloaded, writing ``out``; returns the stub's call counts."""
    full = dict(os.environ, LD_PRELOAD=str(built / "libcuda_shim.so"), CUDA_SHIM_OUT=str(out), **env)
    proc = subprocess.run([str(built / "shim_demo"), *args], env=full, capture_output=True, text=True, timeout=60,
                          check=True)
    return json.loads(proc.stdout)


def lines_of(path: Path) -> tuple[list[dict], list[str]]:
    """(JSON objects, text lines) of the file, in order."""
    objs, text = [], []
    for line in path.read_text().splitlines():
        if line.startswith("{"):
            objs.append(json.loads(line))
        elif line:
            text.append(line)
    return objs, text


@pytest.fixture(scope="module")
def capture(built, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("gpu_box_capture") / "cuda_trace.jsonl"
    return out, run_demo(built, out)


@needs_cc
def test_the_lines_are_the_preload_layout(capture):
    path, _ = capture
    objs, text = lines_of(path)
    begins = [o for o in objs if o["phase"] == "B"]
    ends = [o for o in objs if o["phase"] == "E"]
    assert {frozenset(o) for o in begins} == {frozenset(BEGIN_KEYS)}
    for o in ends:
        assert BEGIN_KEYS | {"result_code"} <= set(o) <= BEGIN_KEYS | {"result_code", "result_ptr"}
    assert all(isinstance(o["ts"], float) and isinstance(o["op_id"], int) for o in objs)
    # B and E pair by op_id: one of each, same name, thread and depth, the end not before the begin
    by_op = defaultdict(list)
    for o in objs:
        by_op[o["op_id"]].append(o)
    assert len(by_op) == len(begins) == len(ends) == sum(EXPECTED.values())
    for pair in by_op.values():
        b, e = pair
        assert (b["phase"], e["phase"]) == ("B", "E")
        assert (b["name"], b["tid"], b["depth"]) == (e["name"], e["tid"], e["depth"]) and e["ts"] >= b["ts"]
    # a banner first and a footer with the counts last: text lines, which readers skip
    assert text[0].startswith("# cuda_shim ") and "cuLaunchKernel=203" in text[-1]


@needs_cc
def test_every_call_is_recorded_and_reaches_the_real_function(capture):
    path, stub = capture
    objs, _ = lines_of(path)
    recorded = Counter(o["name"] for o in objs if o["phase"] == "B")
    assert recorded == EXPECTED
    # the wrappers forwarded every call, the v2 ABI with its argument
    assert {k: stub[k] for k in EXPECTED} == {k: v + UNSEEN.get(k, 0) for k, v in EXPECTED.items()}
    assert stub["unknown_is_null"] is True and stub["last_ctx"] == 0x1234


@needs_cc
def test_results_pointers_depth_and_threads(capture):
    path, _ = capture
    objs, _ = lines_of(path)
    ends = [o for o in objs if o["phase"] == "E"]
    errors = Counter((o["name"], o["result_code"]) for o in ends if o["result_code"] != 0)
    assert errors == {("cuLaunchKernel", 1): 1, ("cuGetProcAddress_v2", 500): 1}
    assert [o["result_ptr"] for o in ends if "result_ptr" in o] == ["0x7f0000000000", "0x7f0000100000"]
    # the stub's cuStreamSynchronize_ptsz calls cuCtxSynchronize inside: depth 1, within its span
    nested = [o for o in objs if o["depth"] == 1]
    outer = {o["phase"]: o["ts"] for o in objs if o["name"] == "cuStreamSynchronize_ptsz"}
    assert {o["name"] for o in nested} == {"cuCtxSynchronize"} and len(nested) == 2
    assert all(outer["B"] <= o["ts"] <= outer["E"] for o in nested)
    # the main thread and 4 launcher threads of 50 launches each; times rise within a thread
    per_tid = Counter(o["tid"] for o in objs if o["phase"] == "B" and o["name"] == "cuLaunchKernel")
    assert len({o["tid"] for o in objs}) == 5 and sorted(per_tid.values()) == [3, 50, 50, 50, 50]
    for tid in per_tid:
        ts = [o["ts"] for o in objs if o["tid"] == tid]
        assert ts == sorted(ts)


@needs_cc
def test_tracetui_summary_reads_the_capture(capture, capsys):
    path, _ = capture
    assert main(["summary", str(path), "--json", "--no-cache"]) == 0
    d = orjson.loads(capsys.readouterr().out)["driver"]
    assert d["layouts"] == {"preload": 2 * sum(EXPECTED.values())}
    assert {r["name"]: r["count"] for r in d["calls"]} == EXPECTED
    assert {r["name"]: r["errors"] for r in d["calls"] if r["errors"]} == {"cuLaunchKernel": 1,
                                                                           "cuGetProcAddress_v2": 1}


@needs_cc
def test_the_cap_stops_the_lines_not_the_calls(built, tmp_path):
    out = tmp_path / "capped.jsonl"
    stub = run_demo(built, out, CUDA_SHIM_MAX_MB="0.004")  # 4,194 bytes of call lines
    objs, text = lines_of(out)
    call_bytes = sum(len(line) + 1 for line in out.read_text().splitlines() if line.startswith("{"))
    assert 0 < call_bytes <= int(0.004 * 2**20) and len(objs) < 2 * sum(EXPECTED.values())
    assert any("cap of 4194 bytes reached" in t for t in text)
    dropped = int(text[-1].split(" lines dropped")[0].rsplit(" ", 1)[1])
    assert dropped == 2 * sum(EXPECTED.values()) - len(objs)
    assert {k: stub[k] for k in EXPECTED} == {k: v + UNSEEN.get(k, 0) for k, v in EXPECTED.items()}


@needs_cc
def test_a_forked_child_writes_its_own_pid_and_op_ids(built, tmp_path):
    out = tmp_path / "forked.jsonl"
    run_demo(built, out, "fork")
    objs, text = lines_of(out)
    pids = Counter(o["pid"] for o in objs if o["phase"] == "B")
    assert sorted(pids.values()) == [1, sum(EXPECTED.values())]
    assert len({o["op_id"] for o in objs}) == len(objs) // 2  # unique across both processes
    child = min(pids, key=pids.get)
    assert all(o["op_id"] // 10**9 == o["pid"] for o in objs)
    assert sum(t.startswith("# cuda_shim 1: pid ") for t in text) == 2 and f"pid {child}:" in "".join(text)


#: a CUDA toolkit with the runtime's header and shared library (cudart_probe.c links it)
CUDART = next((p for p in CUDA_INCLUDES if list(Path(p, "lib64").glob("libcudart.so*"))
               and Path(p, "include", "cuda_runtime.h").is_file()), None)


@needs_cc
@pytest.mark.skipif(CUDART is None, reason="no CUDA toolkit (include/cuda_runtime.h, lib64/libcudart.so)")
def test_the_cuda_runtime_gets_its_entry_points_through_the_shim(built, tmp_path):
    """The real libcudart over the stub: it asks the stub (found as libcuda.so.1) for
    cuGetProcAddress_v2 with dlsym on its handle, gets the shim's wrapper, and asks it for every
    entry point; each answer the stub could give came back wrapped."""
    _cc("-o", tmp_path / "probe", BOX / "cudart_probe.c", f"-I{CUDART}/include", f"-L{CUDART}/lib64", "-lcudart",
        f"-Wl,-rpath,{CUDART}/lib64")
    out = tmp_path / "cudart.jsonl"
    env = dict(os.environ, LD_LIBRARY_PATH=str(built), LD_PRELOAD=str(built / "libcuda_shim.so"),
               CUDA_SHIM_OUT=str(out))
    proc = subprocess.run([str(tmp_path / "probe")], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "cudaGetDeviceCount: " in proc.stdout
    objs, text = lines_of(out)
    queries = [o for o in objs if o["phase"] == "E"]
    assert {o["name"] for o in objs} == {"cuGetProcAddress_v2"} and len(queries) > 100
    footer = text[-1]
    answers = int(footer.split("cuGetProcAddress answers ")[1].split(",")[0])
    wrapped = int(footer.split(", wrapped ")[1].split(";")[0])
    assert answers == sum(o["result_code"] == 0 for o in queries) and answers >= 10 and wrapped == answers
    assert "dlsym answers wrapped 1;" in footer


@needs_cc
def test_the_shim_builds_without_cuda_h(tmp_path):
    _cc("-Wall", "-Werror", "-fPIC", "-shared", "-DCUDA_SHIM_NO_CUDA_H", "-o", tmp_path / "shim.so",
        BOX / "cuda_shim.c", "-ldl", "-lpthread")
    assert (tmp_path / "shim.so").stat().st_size > 0


# ---- the rest of the script's CPU side: packing, the plan, the helpers' pure parts -----------

def _module(name: str):
    """A helper of scripts/gpu_box/ imported by path (the folder is no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"gpu_box_{name}", BOX / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_pack_out_keeps_every_tar_under_the_limit(tmp_path):
    import gzip
    import random
    import tarfile

    pack = _module("pack_out")
    rnd = random.Random(36)
    stage, out = tmp_path / "stage", tmp_path / "out"
    (stage / "logs").mkdir(parents=True)
    files = {"a.json.gz": rnd.randbytes(40_000), "b.pb": rnd.randbytes(30_000), "c.txt": rnd.randbytes(20_000),
             "logs/d.log": rnd.randbytes(5_000), "big.jsonl": b'{"ts":1.0}\n' * 30_000,  # 330 kB, gzips small
             "huge.gz": rnd.randbytes(300_000)}  # too big for a tar even so: left out
    for name, data in files.items():
        (stage / name).write_bytes(data)
    limit = 64 * 1024
    assert pack.main([str(stage), str(out), "--max-files", "2", "--max-bytes", str(limit)]) == 1
    tars = sorted(out.glob("gpu_box_*.tar"))
    assert [t.name for t in tars] == ["gpu_box_1.tar", "gpu_box_2.tar"]
    got = {}
    for t in tars:
        assert t.stat().st_size <= limit
        with tarfile.open(t) as tar:
            members = tar.getmembers()
            assert t.stat().st_size == pack.tar_bytes([pack.member_bytes(m.size, m.name) for m in members])
            got.update({m.name: tar.extractfile(m).read() for m in members})
    assert set(got) == {"a.json.gz", "b.pb", "c.txt", "logs/d.log", "big.jsonl.gz"}
    assert gzip.decompress(got.pop("big.jsonl.gz")) == files["big.jsonl"]
    assert all(got[k] == files[k] for k in got)


def test_the_plan_names_every_step_and_runs_nothing(tmp_path):
    env = dict(os.environ, GPU_BOX_WORK=str(tmp_path / "work"), OUT=str(tmp_path / "out"))
    run = lambda *a: subprocess.run(["bash", str(REPO / "scripts" / "gpu_box.sh"), *a], env=env,  # noqa: E731
                                    capture_output=True, text=True, timeout=60)
    plan = run("--dry-run", "--only", "driver,jax")
    assert plan.returncode == 0, plan.stderr
    lines = plan.stdout.splitlines()
    steps = [ln.split()[0].rstrip(":") for ln in lines if ln.startswith("  ")]
    assert steps == ["env", "deps", "record", "snapshot", "jax", "driver", "bench_open", "bench_startup",
                     "bench_job", "pack"]
    assert [ln.split()[0] for ln in lines if ln.startswith("  ") and "not run" not in ln] == ["jax", "driver", "pack"]
    assert any(ln.startswith("sizes: working tree ") for ln in lines)
    assert not (tmp_path / "out").exists() and not (tmp_path / "work").exists()
    bad = run("--dry-run", "--only", "drivers")
    assert bad.returncode == 2 and "no step 'drivers'" in bad.stderr


def test_the_snapshot_and_xplane_helpers_read_plain_data():
    snap = _module("memory_snapshot")
    d = {"segments": [{"blocks": [{}, {}]}, {"blocks": [{}]}],
         "device_traces": [[{"action": "alloc", "frames": [{}, {}]}, {"action": "free_requested", "frames": [{}]},
                            {"action": "alloc", "frames": []}]]}
    assert snap.snapshot_counts(d) == ("2 segments, 3 blocks, 3 trace entries (alloc 2, free_requested 1), "
                                       "3 stack frames in the entries")
    jax_profile = _module("jax_profile")
    xplane = (REPO.parent / "shared" / "traces" / "xplane" / "mi300_jax_conv_tw003.xplane.pb").read_bytes()
    assert jax_profile.plane_names(xplane) == ["/host:metadata", *[f"/device:GPU:{i}" for i in range(8)],
                                               "/host:CPU"]
