"""The README's first command opens the bundled GPU sample (sample_traces/README.md): read the
command from the Quick start block (as CI does), load its files the way the browser does
(``store.traces.load_cached``, the loading screen's call), and check what a new user should
see against facts read from the raw file with gzip + json: kernels, and an op whose first GPU
event (where ``>`` goes) is a kernel whose launching op (where ``<`` goes) is that op.

The browser's own ``>``/``<`` keys on this sample are driven by a Pilot test in tests/ui."""

from __future__ import annotations

import gzip
import json
import shlex

import numpy as np
from shared_traces import REPO, SAMPLES

from tracetui.kineto.kinds import Kind
from tracetui.store.traces import load_cached

SAMPLE = SAMPLES / "h100_bert_inference.json.gz"
GEMM = "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"


def quick_start() -> list[str]:
    """The command lines of the first fenced block under "## Quick start" (as .ci/run reads them)."""
    lines = (REPO / "README.md").read_text().splitlines()
    start = lines.index("## Quick start")
    fence = next(i for i in range(start, len(lines)) if lines[i].startswith("```"))
    end = next(i for i in range(fence + 1, len(lines)) if lines[i].startswith("```"))
    return [ln for ln in lines[fence + 1:end] if ln.strip()]


def first_command_paths() -> list[str]:
    """The files the first Quick start command opens: the arguments of its ``tracetui`` call."""
    cmds = quick_start()
    assert len(cmds) == 2, cmds
    last = cmds[0].split("&&")[-1]
    argv = shlex.split(last)
    assert argv[0] == "tracetui", last
    return [a for a in argv[1:] if not a.startswith("-")]


def test_first_command_opens_the_bundled_gpu_sample():
    paths = first_command_paths()
    assert paths == ["sample_traces/h100_bert_inference.json.gz"]
    assert (REPO / paths[0]).is_file()  # in the clone itself: no ../shared path
    assert "../shared" not in quick_start()[0]


def _raw():
    return json.load(gzip.open(SAMPLE))


def test_sample_raw_facts():
    """The counts sample_traces/README.md states."""
    d = _raw()
    ev = d["traceEvents"]
    cats = {}
    for e in ev:
        cats[e.get("cat")] = cats.get(e.get("cat"), 0) + 1
    assert len(ev) == 2551
    assert (cats["kernel"], cats["gpu_memcpy"], cats["cpu_op"], cats["python_function"]) == (60, 1, 479, 1385)
    assert "gpu_memset" not in cats
    assert d["deviceProperties"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert all("Input Dims" in e["args"] for e in ev if e.get("cat") == "cpu_op")


def test_sample_loads_as_the_browser_loads_it():
    d = _raw()
    raw_kernels = [e for e in d["traceEvents"] if e.get("cat") == "kernel"]
    linked = load_cached([str(REPO / p) for p in first_command_paths()], use_cache=False)
    kt = linked.kineto
    assert linked.et is None
    kernels = np.flatnonzero(kt.kind == int(Kind.KERNEL))
    assert kernels.size == len(raw_kernels) == 60
    assert kt.gpu_stats.gpu_events == 61 and kt.gpu_stats.linked == 61  # + the memcpy; each linked to its launch
    # the first aten::linear (External id 43) -> its first GPU event is the GEMM kernel of its aten::addmm
    raw_k = next(e for e in raw_kernels if e["args"]["correlation"] == 8368)
    assert raw_k["name"].startswith(GEMM) and raw_k["args"]["External id"] == 49
    linear = next(n for n in kt.find_by_external_id(43) if kt.name(n) == "aten::linear")
    first = int(kt.gpu_events_of(linear)[0])  # where `>` goes
    assert Kind(int(kt.kind[first])) == Kind.KERNEL
    assert kt.name(first) == raw_k["name"] and int(kt.correlation[first]) == 8368
    assert float(kt.dur[first]) == raw_k["dur"] == 5.824
    launcher = int(kt.cpu_op_of[first])  # where `<` goes: the innermost cpu_op above the launch
    assert kt.name(launcher) == "aten::addmm" and int(kt.external_id[launcher]) == 49
    assert kt.args(first)["grid"] == raw_k["args"]["grid"] == [40, 2, 1]
