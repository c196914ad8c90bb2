"""The CPU-side parts of the GPU-box run (issue 36, ``scripts/gpu_box.sh``), tested without a GPU.

The LD_PRELOAD recorder ``scripts/gpu_box/cuda_shim.c`` is built with the C compiler here and
preloaded into ``shim_demo.c``, which calls a fake ``libcuda.so.1`` (``stub_libcuda.c``) the three
ways a real program reaches the driver: linked symbols, ``dlsym`` on a ``dlopen`` handle, and
entry points handed out by ``cuGetProcAddress_v2`` (the CUDA runtime's way).  The lines must be
the LD_PRELOAD layout of ``../shared/FORMATS.md`` ("Driver-call traces"), every call must still
reach the stub, and ``tracetui summary`` must read the file.  Skipped where no C compiler is.
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

pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (gcc or cc) on PATH")

#: the documented keys of the layout (pid added: several processes may share a file)
BEGIN_KEYS = {"ts", "op_id", "pid", "tid", "depth", "phase", "name"}
#: what shim_demo.c calls through the shim, by the name the lines give (the stub counts the same)
EXPECTED = {"cuInit": 1, "cuCtxSynchronize": 2, "cuGetProcAddress_v2": 9, "cuLaunchKernel": 203,
            "cuLaunchKernel_ptsz": 1, "cuMemAlloc_v2": 2, "cuMemFree_v2": 1, "cuMemcpyHtoDAsync_v2_ptsz": 1,
            "cuStreamSynchronize_ptsz": 1, "cuEventSynchronize": 1}


def _cc(*args: str | Path) -> None:
    subprocess.run([CC, *map(str, args)], check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The stub libcuda, the demo linked to it and the shim, built in one folder."""
    d = tmp_path_factory.mktemp("gpu_box_shim")
    _cc("-fPIC", "-shared", "-Wl,-soname,libcuda.so.1", "-o", d / "libcuda.so.1", BOX / "stub_libcuda.c", "-ldl")
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


def test_every_call_is_recorded_and_reaches_the_real_function(capture):
    path, stub = capture
    objs, _ = lines_of(path)
    recorded = Counter(o["name"] for o in objs if o["phase"] == "B")
    assert recorded == EXPECTED
    assert {k: stub[k] for k in EXPECTED} == EXPECTED  # the wrappers forwarded every call
    assert stub["unknown_is_null"] is True


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


def test_tracetui_summary_reads_the_capture(capture, capsys):
    path, _ = capture
    assert main(["summary", str(path), "--json", "--no-cache"]) == 0
    d = orjson.loads(capsys.readouterr().out)["driver"]
    assert d["layouts"] == {"preload": 2 * sum(EXPECTED.values())}
    assert {r["name"]: r["count"] for r in d["calls"]} == EXPECTED
    assert {r["name"]: r["errors"] for r in d["calls"] if r["errors"]} == {"cuLaunchKernel": 1,
                                                                           "cuGetProcAddress_v2": 1}


def test_the_cap_stops_the_lines_not_the_calls(built, tmp_path):
    out = tmp_path / "capped.jsonl"
    stub = run_demo(built, out, CUDA_SHIM_MAX_MB="0.004")  # 4,194 bytes of call lines
    objs, text = lines_of(out)
    call_bytes = sum(len(line) + 1 for line in out.read_text().splitlines() if line.startswith("{"))
    assert 0 < call_bytes <= int(0.004 * 2**20) and len(objs) < 2 * sum(EXPECTED.values())
    assert any("cap of 4194 bytes reached" in t for t in text)
    dropped = int(text[-1].split(" lines dropped")[0].rsplit(" ", 1)[1])
    assert dropped == 2 * sum(EXPECTED.values()) - len(objs)
    assert {k: stub[k] for k in EXPECTED} == EXPECTED


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


def test_the_shim_builds_without_cuda_h(tmp_path):
    _cc("-Wall", "-Werror", "-fPIC", "-shared", "-DCUDA_SHIM_NO_CUDA_H", "-o", tmp_path / "shim.so",
        BOX / "cuda_shim.c", "-ldl", "-lpthread")
    assert (tmp_path / "shim.so").stat().st_size > 0
