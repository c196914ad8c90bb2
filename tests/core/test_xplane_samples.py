"""JAX/XLA XPlane profiles (issue 38) on the two real files: the shared MI300 sample (8 GPUs,
ROCm, launches on lines of their own) and the H200 sample recorded on the GPU box (one CUDA
graph per step).  Every number tracetui gives is compared with the same number counted from the
raw file by ``tests/xplane_walk.py`` (a wire-format walker of the test's own, never the reader):
kernels and their time per device and stream, the launch of each kernel (same correlation id),
the XLA op above each kernel (its ``hlo_op``), the launch configuration in ``kernel_details``,
the steps; then every command on both files (info, summary, query, check, critical-path,
export md/chrome, slice, diff against a copy with scaled kernels written by
``tests/xplane_write.py``)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from functools import lru_cache

import numpy as np
import pytest
from shared_traces import SAMPLES, SHARED
from xplane_walk import read_xspace
from xplane_write import rewrite

from tracetui import formats
from tracetui.analysis.steps import find_steps
from tracetui.cli import main
from tracetui.io.formats import Recognition, read_head
from tracetui.kineto.kinds import Kind
from tracetui.kineto.launch_facts import launch_config
from tracetui.xplane import load_xplane
from tracetui.xplane.sniff import recognise

MI300 = SHARED / "xplane" / "mi300_jax_conv_tw003.xplane.pb"
H200 = SAMPLES / "h200" / "jax_gpu_step.xplane.pb"
#: recorded on the GPU box for issue 38 (scripts/gpu_box/jax_xplane_ops.py): no command buffers,
#: one launch per kernel, copies both ways, 20 steps
OPS = SAMPLES / "h200" / "jax_gpu_ops.xplane.pb"
FILES = [pytest.param(MI300, id="mi300"), pytest.param(H200, id="h200"), pytest.param(OPS, id="h200-ops")]
GPU_PLANE = re.compile(r"^/device:GPU:(\d+)$")


@lru_cache(maxsize=None)
def _trace(path):
    return load_xplane(path)


@lru_cache(maxsize=None)
def _raw(path):
    """What the walker counts: (kernels, host events, API calls by correlation id)."""
    space = read_xspace(path)
    kernels, host, calls = [], [], {}
    for p in space.planes:
        m = GPU_PLANE.match(p.name)
        for ln in p.lines:
            for e in ln.events:
                start = ln.timestamp_ns * 1000 + e.offset_ps
                row = {"name": p.event_name(e), "start": start, "dur": e.duration_ps, "line": ln.name,
                       "stats": {p.stat_names.get(mid): v for mid, v in e.stats}}
                if m:
                    kernels.append({**row, "device": int(m.group(1)), "stream": ln.id})
                elif p.name.startswith("/host:"):
                    host.append(row)
                    if "correlation_id" in row["stats"]:
                        calls[row["stats"]["correlation_id"]] = row
    return kernels, host, calls


def _abs_ps(kt, ev: int) -> int:
    return round((kt.origin_us + float(kt.ts[ev])) * 1e6)


def _kernels(kt) -> np.ndarray:
    return np.flatnonzero(np.isin(kt.kind, [int(Kind.KERNEL), int(Kind.MEMCPY), int(Kind.MEMSET)]))


@pytest.mark.parametrize("path", FILES)
def test_recognised_by_content(path):
    """The first plane's name says it is an XSpace: YES, whatever the file is called."""
    head = read_head(path)
    assert recognise(head) == Recognition.YES
    assert formats.detect(path) == formats.FileKind.XPLANE


@pytest.mark.parametrize("path", FILES)
def test_every_event_is_read_with_its_time(path):
    """Every event of the GPU and host planes is in the model, each kernel on its device and
    stream at the walker's start and duration (to the picosecond)."""
    kernels, host, _ = _raw(path)
    kt = _trace(path)
    assert kt.source_format == "xplane"
    assert kt.n_events == len(kernels) + len(host)
    gpu = _kernels(kt)
    mine = sorted((int(kt.device[g]), int(kt.stream[g]), _abs_ps(kt, g), round(float(kt.dur[g]) * 1e6)) for g in gpu)
    theirs = sorted((k["device"], k["stream"], k["start"], k["dur"]) for k in kernels)
    assert mine == theirs
    assert (len(kernels), len(host)) == {MI300: (235, 3415), H200: (75, 283), OPS: (524, 5621)}[path]


@pytest.mark.parametrize("path", FILES)
def test_each_kernel_hangs_under_the_call_with_its_correlation_id(path):
    """A kernel's launch is the host call with its correlation id (the walker's pairing): the same
    call by name and start; the calls are cuda_runtime (hip*) or cuda_driver (cu*) events."""
    kernels, host, calls = _raw(path)
    kt = _trace(path)
    by_start = {(k["device"], k["stream"], k["start"]): k for k in kernels}
    linked = 0
    for g in _kernels(kt).tolist():
        k = by_start[(int(kt.device[g]), int(kt.stream[g]), _abs_ps(kt, g))]
        call = calls.get(k["stats"]["correlation_id"])
        launch = int(kt.launch_of[g])
        assert (launch >= 0) == (call is not None)
        if call is not None:
            linked += 1
            assert kt.name(launch) == call["name"] and _abs_ps(kt, launch) == call["start"]
            assert kt.category(launch) == ("cuda_driver" if call["name"].startswith("cu") else "cuda_runtime")
    assert linked == kt.gpu_stats.linked == len(kernels)
    api = [h for h in host if "correlation_id" in h["stats"]]
    assert sum(kt.category(i) in ("cuda_runtime", "cuda_driver") for i in range(kt.n_events)) == len(api)
    assert kt.gpu_stats.graph_launches == {MI300: 0, H200: 5, OPS: 0}[path]


@pytest.mark.parametrize("path", FILES)
def test_a_kernels_op_is_its_hlo_op(path):
    """The op above each kernel (cpu_op_of, through its launch) is the XLA op named by its
    ``hlo_op`` stat; kernels without one (the MI300's buffer copies) have no op."""
    kernels, _, _ = _raw(path)
    kt = _trace(path)
    by_start = {(k["device"], k["stream"], k["start"]): k for k in kernels}
    ops = Counter()
    for g in _kernels(kt).tolist():
        want = by_start[(int(kt.device[g]), int(kt.stream[g]), _abs_ps(kt, g))]["stats"].get("hlo_op")
        op = int(kt.cpu_op_of[g])
        assert (kt.name(op) if op >= 0 else None) == want
        ops[want] += 1
    # the ops of the third file: 25 per step, 20 steps; its 24 copies have none
    assert ops == {MI300: Counter({"cudnn-conv.1": 79, "loop_transpose_fusion": 40, "input_transpose_fusion": 40,
                                   "input_transpose_fusion.1": 39, None: 37}),
                   H200: Counter({"command_buffer_1": 75}),
                   OPS: Counter({**{op: 20 for op in ops if op is not None}, None: 24})}[path]
    assert len(ops) == {MI300: 5, H200: 1, OPS: 26}[path]


@pytest.mark.parametrize("path", FILES)
def test_launch_configuration_from_kernel_details(path):
    """grid, block, registers per thread and shared memory (static + dynamic, or AMD's group
    memory) read from each kernel's ``kernel_details`` text, parsed here by the test's own regex.
    XLA's tracers write the grid in blocks; a kernel launched by ``hipExtModuleLaunchKernel`` gets
    Kineto's grid of that call, in work-items (blocks x block), and the detail facts say blocks."""
    kernels, _, calls = _raw(path)
    kt = _trace(path)
    by_start = {(k["device"], k["stream"], k["start"]): k for k in kernels}
    work_items = 0
    for g in _kernels(kt).tolist():
        k = by_start[(int(kt.device[g]), int(kt.stream[g]), _abs_ps(kt, g))]
        if "kernel_details" not in k["stats"]:  # a copy
            assert k["name"].startswith("Memcpy") and kt.category(g) == "gpu_memcpy"
            continue
        text = k["stats"]["kernel_details"]
        words = dict(re.findall(r"(\w+):(\S+)", text))
        a = kt.args(g)
        grid, block = ([int(x) for x in words[w].split(",")] for w in ("grid", "block"))
        if calls[k["stats"]["correlation_id"]]["name"] == "hipExtModuleLaunchKernel":
            work_items += 1
            assert a["grid"] == [x * y for x, y in zip(grid, block)]
            assert launch_config(a, kt.name(int(kt.launch_of[g]))).blocks == grid
        else:
            assert a["grid"] == grid
        assert a["block"] == block
        assert a.get("registers per thread") == (int(words["regs"]) if "regs" in words else None)
        shared = sum(int(words[w]) for w in ("static_shared", "dynamic_shared", "group_mem") if w in words)
        assert a["shared memory"] == shared
        assert a["kernel_details"] == text and a["device"] == int(kt.device[g])
    assert work_items == {MI300: 79, H200: 0, OPS: 0}[path]


@pytest.mark.parametrize("path", FILES)
def test_steps_are_the_step_annotations(path):
    """The H200's steps are its 5 ``train`` step annotations (``step_num`` 0-4); the MI300's, the
    5 outer calls of the jitted function (``PjitFunction(forward_3d_conv)``) on the Python thread."""
    _, host, _ = _raw(path)
    kt = _trace(path)
    steps = find_steps(kt)
    if path != MI300:
        want = [(h["start"], h["dur"]) for h in host if "step_num" in h["stats"]]
        assert [h["stats"]["step_num"] for h in host if "step_num" in h["stats"]] == list(range(len(want)))
    else:
        calls = sorted((h["start"], h["start"] + h["dur"]) for h in host if h["name"].startswith("PjitFunction("))
        want = [(s, e - s) for s, e in calls if not any(a <= s and e <= b and (a, b) != (s, e) for a, b in calls)]
    assert len(steps.steps) == {MI300: 5, H200: 5, OPS: 20}[path] and steps.how == "annotation"
    assert [(round((kt.origin_us + s.ts) * 1e6), round(s.dur * 1e6)) for s in steps.steps] == want


def test_the_rocm_launch_lines_join_the_lines_of_their_ops():
    """On the MI300 each 'Host Threads/N' line of launches joins the py_xla_execute line whose op
    events (named as each launch's hlo_op) hold every one of its launches -- checked here by time
    containment on the raw lines: exactly one such line for each."""
    space = read_xspace(MI300)
    cpu = space.plane("/host:CPU")
    kt = _trace(MI300)

    def spans(ln):
        return [(cpu.event_name(e), ln.timestamp_ns * 1000 + e.offset_ps, e.duration_ps, e) for e in ln.events]

    joined = {}
    for ln in cpu.lines:
        calls = [s for s in spans(ln) if cpu.stat(s[3], "hlo_op")]
        if not calls:
            continue
        owners = [x.name for x in cpu.lines if x is not ln and all(
            any(n == cpu.stat(c[3], "hlo_op") and t <= c[1] and c[1] + c[2] <= t + d for n, t, d, _ in spans(x))
            for c in calls)]
        assert len(owners) == 1
        joined[ln.name] = owners[0]
    assert len(joined) == 8
    labels = {lane.label.split(" (")[0] for lane in kt.lanes if not lane.is_gpu}
    for line, owner in joined.items():
        assert f"{owner} + {line}" in labels
    moved = [i for i in range(kt.n_events) if "xplane line" in kt.args(i)]
    assert len(moved) == sum(len(cpu.line(n).events) for n in joined) == 198


# ------------------------------------------------------------------------------- the commands


def _cli(capsys, *argv) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def _per_stream(path) -> dict:
    kernels, _, _ = _raw(path)
    out = defaultdict(lambda: [0, 0])
    for k in kernels:
        out[(k["device"], k["stream"])][0] += 1
        out[(k["device"], k["stream"])][1] += k["dur"]
    return dict(out)


@pytest.mark.parametrize("path", FILES)
def test_info_summary_and_query_count_what_the_walker_counts(path, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path))
    raw = _per_stream(path)
    assert "JAX/XLA XPlane profile" in _cli(capsys, "info", str(path))
    summary = json.loads(_cli(capsys, "summary", str(path), "--json"))
    assert {(s["device"], s["stream"]): [s["count"], round(s["gpu_us"] * 1e6)] for s in summary["streams"]} == raw
    rows = json.loads(_cli(capsys, "query", str(path), "SELECT device, stream, count(*) AS n, sum(dur_us) AS us "
                                                       "FROM gpu_events GROUP BY ALL ORDER BY ALL", "--json"))
    assert {(r["device"], r["stream"]): [r["n"], round(r["us"] * 1e6)] for r in rows} == raw
    # a second run reads the cache entry: the same numbers
    again = json.loads(_cli(capsys, "summary", str(path), "--json"))
    assert again["streams"] == summary["streams"]


@pytest.mark.parametrize("path", FILES)
def test_check_and_critical_path_run(path, capsys, tmp_path, monkeypatch):
    """``check`` runs its rules; ``critical-path --whole-trace --json``: a graph of every event with
    one launch edge per kernel, over the window from the first event to the end of the last (the
    walker's); without it, the window is the longest step (find_steps' rule)."""
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path))
    kernels, host, _ = _raw(path)
    assert "tracetui check" in _cli(capsys, "check", str(path))
    cp = json.loads(_cli(capsys, "critical-path", str(path), "--whole-trace", "--json"))
    kt = _trace(path)
    steps = find_steps(kt)
    longest = max(steps.steps, key=lambda s: (s.dur, -s.number))
    by_default = json.loads(_cli(capsys, "critical-path", str(path), "--json"))["window"]
    assert (by_default["kind"], by_default["start_us"], by_default["end_us"]) == ("step", longest.ts,
                                                                                  longest.end)
    assert (cp["graph"]["events"], cp["graph"]["launch_edges"]) == (len(kernels) + len(host), len(kernels))
    last = max(e["start"] + e["dur"] for e in kernels + host)
    first = min(e["start"] for e in kernels + host)
    assert round((kt.origin_us + cp["window"]["end_us"]) * 1e6) == last
    assert round((kt.origin_us + cp["window"]["start_us"]) * 1e6) == first
    assert cp["total_us"] == pytest.approx((last - first) / 1e6, abs=1e-3)


@pytest.mark.parametrize("path", FILES)
def test_exports_and_the_chrome_trace_reads_back_with_the_same_links(path, capsys, tmp_path, monkeypatch):
    """``export -f md`` and ``-f chrome``: the Chrome trace opens as a Kineto trace with the same
    kernels per stream and every kernel linked to its launch again (by the correlation arg)."""
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path))
    md, chrome = tmp_path / "x.md", tmp_path / "x.json"
    _cli(capsys, "export", str(path), "-f", "md", "-o", str(md))
    assert "tracetui report" in md.read_text()
    _cli(capsys, "export", str(path), "-f", "chrome", "-o", str(chrome))
    rows = json.loads(_cli(capsys, "query", str(chrome), "SELECT device, stream, count(*) AS n, sum(dur_us) AS us, "
                                                         "count(launch_event) AS linked FROM gpu_events GROUP BY ALL",
                           "--json"))
    raw = _per_stream(path)
    assert {(r["device"], r["stream"]): [r["n"], round(r["us"] * 1e6)] for r in rows} == raw
    assert sum(r["linked"] for r in rows) == sum(n for n, _ in raw.values())


@pytest.mark.parametrize("path", FILES)
def test_slice_of_step_1_holds_the_kernels_launched_in_it(path, capsys, tmp_path, monkeypatch):
    """``slice --step 1``: the kernels whose launch starts inside the first step (the walker's
    count: the step's window from the raw file, the launches by correlation id)."""
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path))
    kernels, _, calls = _raw(path)
    kt = _trace(path)
    step = find_steps(kt).steps[0]
    lo, hi = round((kt.origin_us + step.ts) * 1e6), round((kt.origin_us + step.end) * 1e6)
    want = [k for k in kernels if lo <= calls[k["stats"]["correlation_id"]]["start"] < hi]
    out = tmp_path / "step1.json"
    _cli(capsys, "slice", str(path), "--step", "1", "-o", str(out))
    rows = json.loads(_cli(capsys, "query", str(out), "SELECT count(*) AS n, sum(dur_us) AS us FROM gpu_events",
                           "--json"))
    assert (rows[0]["n"], round(rows[0]["us"] * 1e6)) == (len(want), sum(k["dur"] for k in want))
    assert len(want) == {MI300: 47, H200: 15, OPS: 26}[path]


@pytest.mark.parametrize("path", FILES)
def test_diff_against_a_copy_with_slower_kernels(path, capsys, tmp_path, monkeypatch):
    """B: a copy of A written by the test with every kernel of one name 3x as long.  ``diff
    --json``: GPU time per step grows by the walker's sum of the added time over the steps."""
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path))
    kernels, _, calls = _raw(path)
    target = {MI300: "Im3d2Col.kd", H200: "gemm_fusion_dot_2", OPS: "loop_add_fusion"}[path]

    def slower(plane, line, fields, stat_names):
        if not plane.startswith("/device:GPU:"):
            return fields
        name_id = next(v for n, _, v in fields if n == 1)
        names = slower.names[plane]
        return [(n, w, v * 3 if n == 3 and names.get(name_id) == target else v) for n, w, v in fields]

    slower.names = {p.name: p.event_names for p in read_xspace(path).planes}
    b = tmp_path / "b.xplane.pb"
    b.write_bytes(rewrite(path.read_bytes(), slower))
    kt = _trace(path)
    steps = find_steps(kt).steps
    added = 0
    for k in kernels:
        start = calls[k["stats"]["correlation_id"]]["start"]
        in_step = any(round((kt.origin_us + s.ts) * 1e6) <= start < round((kt.origin_us + s.end) * 1e6)
                      for s in steps)
        if k["name"] == target and in_step:
            added += 2 * k["dur"]
    d = json.loads(_cli(capsys, "diff", str(path), str(b), "--json"))
    assert d["a"]["steps_found"]["count"] == d["b"]["steps_found"]["count"] == len(steps)
    assert round(d["gpu_time_per_step"]["delta_us"] * 1e6 * len(steps)) == pytest.approx(added, abs=len(steps))
    assert d["kernels"][0]["name"] == target


@pytest.mark.parametrize("path", FILES)
def test_host_events_by_rule(path):
    """docs/formats.md's counts, by the rules applied here to the walker's events: calls (a
    correlation_id), ops (named as some hlo_op), annotations (a module span, a jitted call, a
    step_num), Python ($-named), the rest plain spans."""
    kernels, host, _ = _raw(path)
    ops = {e["stats"]["hlo_op"] for e in kernels + host if "hlo_op" in e["stats"]}

    def rule(h):
        if "correlation_id" in h["stats"]:
            return "cuda_driver" if re.match(r"cu[A-Z]", h["name"]) else "cuda_runtime"
        if h["name"] in ops:
            return "cpu_op"
        if h["name"].endswith(":XLA GPU module") or h["name"].startswith("PjitFunction(") or "step_num" in h["stats"]:
            return "user_annotation"
        return "python_function" if h["name"].startswith("$") else ""

    want = Counter(map(rule, host))
    kt = _trace(path)
    got = Counter(kt.category(i) for i in range(kt.n_events) if not kt.lane_of_node(i).is_gpu)
    assert got == want == {MI300: Counter({"": 1618, "python_function": 1353, "cuda_runtime": 234, "cpu_op": 160,
                                           "user_annotation": 50}),
                           H200: Counter({"": 241, "user_annotation": 20, "python_function": 12, "cpu_op": 5,
                                          "cuda_driver": 5}),
                           OPS: Counter({"python_function": 3001, "": 1516, "cuda_runtime": 524, "cpu_op": 500,
                                         "user_annotation": 80})}[path]


def test_copies_are_named_as_kineto_names_them():
    """The third file's 24 copies (``MemcpyH2D`` x 20, ``MemcpyD2H`` x 4 on the device): named as
    Kineto names copies, from XLA's name and the ``memcpy_details`` memory kinds, with the bytes of
    its ``size:``; XLA's name kept in the args.  ``summary`` then counts them by direction."""
    kernels, _, _ = _raw(OPS)
    kt = _trace(OPS)
    by_start = {(k["device"], k["stream"], k["start"]): k for k in kernels}
    words = {"MemcpyH2D": "HtoD", "MemcpyD2H": "DtoH"}
    seen = Counter()
    for g in np.flatnonzero(kt.kind == int(Kind.MEMCPY)).tolist():
        k = by_start[(int(kt.device[g]), int(kt.stream[g]), _abs_ps(kt, g))]
        d = dict(re.findall(r"(\w+):(\S+)", k["stats"]["memcpy_details"]))
        want = f"Memcpy {words[k['name']]} ({d['kind_src'].capitalize()} -> {d['kind_dst'].capitalize()})"
        assert kt.name(g) == want and kt.args(g)["xplane name"] == k["name"]
        assert kt.args(g)["bytes"] == int(d["size"])
        seen[want] += 1
    assert seen == {"Memcpy HtoD (Pinned -> Device)": 20, "Memcpy DtoH (Device -> Pinned)": 4}
