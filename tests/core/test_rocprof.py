"""AMD rocprofv3 JSON (``tracetui/rocprof/``, issue 38): the shared sample
(``../shared/traces/rocprof/908_results.json.gz``: 8 gfx950 agents, 43,915 kernel dispatches, no
HIP API records) and a small document written record by record (``tests/rocprof_files.py``) with
the HIP, roctx, RCCL, copy and allocation records the sample lacks.  Every number is counted
from the raw file by the test's own code (gzip + json), then compared with tracetui's."""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict

import numpy as np
import pytest
from rocprof_files import SAMPLE, TOOL, document, raw_sample, write
from rocprof_files import write_csv as write_csv_files

from tracetui import formats
from tracetui.cli import main
from tracetui.kineto import schema as ks
from tracetui.kineto.kinds import Kind
from tracetui.rocprof import schema as rs

pytestmark = pytest.mark.usefixtures("_cache_dir")


@pytest.fixture
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))


_TRACE = {}


def sample_trace():
    """The sample, loaded once per session (read-only use)."""
    if "kt" not in _TRACE:
        _TRACE["kt"] = formats.load(SAMPLE)
    return _TRACE["kt"]


def _raw():
    """(the process record, GPU index by agent handle, kernel name by kernel id) of the raw sample."""
    proc = raw_sample()[TOOL][0]
    gpu = {a["id"]["handle"]: a["gpu_index"] for a in proc["agents"] if a["type"] == 2}
    names = {k["kernel_id"]: k["formatted_kernel_name"] for k in proc["kernel_symbols"]}
    return proc, gpu, names


def _raw_per_lane() -> dict[tuple[int, int], tuple[int, int]]:
    """(GPU index, queue) -> (dispatches, summed ns) of the raw sample."""
    proc, gpu, _ = _raw()
    out: dict = defaultdict(lambda: [0, 0])
    for d in proc["buffer_records"]["kernel_dispatch"]:
        info = d["dispatch_info"]
        key = (gpu[info["agent_id"]["handle"]], info["queue_id"]["handle"])
        out[key][0] += 1
        out[key][1] += d["end_timestamp"] - d["start_timestamp"]
    return {k: tuple(v) for k, v in out.items()}


# ------------------------------------------------------------------------------ the shared sample

def test_sample_is_recognised_and_read_as_rocprof():
    assert formats.detect(SAMPLE) == formats.FileKind.ROCPROF
    kt = sample_trace()
    assert kt.source_format == "rocprof" and formats.other_format(kt) == formats.FileKind.ROCPROF


def test_sample_kernels_per_device_and_queue_equal_the_raw_file(capsys):
    """43,915 dispatches on GPU 0's queues 16-20, per queue the raw count and time; ``query``
    gives the same numbers."""
    raw = _raw_per_lane()
    assert sum(n for n, _ in raw.values()) == 43915
    assert sorted(raw) == [(0, 16), (0, 17), (0, 18), (0, 19), (0, 20)]
    kt = sample_trace()
    k = kt.kind == int(Kind.KERNEL)
    assert int(k.sum()) == 43915 and kt.n_events == 43915
    got = Counter(zip(kt.device[k].tolist(), kt.stream[k].tolist()))
    assert dict(got) == {key: n for key, (n, _) in raw.items()}
    assert [ln.label for ln in kt.lanes] == [f"GPU 0 queue {q}" for q in range(16, 21)]
    assert main(["query", str(SAMPLE),
                 "SELECT device, stream, count(*) AS n, sum(dur_us) AS us FROM kernels GROUP BY ALL", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {(r["device"], r["stream"]): r["n"] for r in rows} == {key: n for key, (n, _) in raw.items()}
    for r in rows:
        assert r["us"] == pytest.approx(raw[(r["device"], r["stream"])][1] / 1000, rel=1e-9)


def test_sample_kernel_names_and_the_top_kernel(capsys):
    """80 kernel names (each dispatch's symbol's formatted name); ncclDevKernel_Generic_1:
    1,310 dispatches, the most time; ``summary --json`` says the same."""
    proc, _, names = _raw()
    kd = proc["buffer_records"]["kernel_dispatch"]
    count = Counter(names[d["dispatch_info"]["kernel_id"]] for d in kd)
    ns: Counter = Counter()
    for d in kd:
        ns[names[d["dispatch_info"]["kernel_id"]]] += d["end_timestamp"] - d["start_timestamp"]
    top, top_ns = ns.most_common(1)[0]
    assert len(count) == 80 and top.startswith("ncclDevKernel_Generic_1(") and count[top] == 1310
    kt = sample_trace()
    assert Counter(kt.name(i) for i in range(kt.n_events)) == count
    assert main(["summary", str(SAMPLE), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    first = s["kernels"][0]
    assert (first["name"], first["count"]) == (top, 1310)
    assert first["total_us"] == pytest.approx(top_ns / 1000, rel=1e-9)
    assert s["trace"]["gpu_events"] == s["trace"]["gpu_events_unlinked"] == 43915


def test_sample_kernel_args_are_the_dispatch_and_symbol_facts():
    """Each kernel's grid (workgroups: the work-item grid / workgroup, rounded up), block (the
    workgroup), VGPRs/AGPRs/SGPRs (its symbol), LDS and scratch (the dispatch) as in the file."""
    proc, gpu, _ = _raw()
    sym = {k["kernel_id"]: k for k in proc["kernel_symbols"]}
    kd = proc["buffer_records"]["kernel_dispatch"]
    kt = sample_trace()
    by_corr = {int(c): i for i, c in enumerate(kt.correlation.tolist())}
    seen = set()
    for d in kd:
        info = d["dispatch_info"]
        if info["kernel_id"] in seen:
            continue
        seen.add(info["kernel_id"])
        a = kt.args(by_corr[d["correlation_id"]["internal"]])
        wg = [info["workgroup_size"][c] for c in "xyz"]
        grid = [info["grid_size"][c] for c in "xyz"]
        k = sym[info["kernel_id"]]
        assert a[ks.BLOCK] == wg and a[rs.ARG_GRID_SIZE] == grid
        assert a[ks.GRID] == [-(-g // w) for g, w in zip(grid, wg)]
        assert (a[rs.ARG_VGPRS], a[rs.ARG_AGPRS], a[rs.ARG_SGPRS]) == (k["arch_vgpr_count"], k["accum_vgpr_count"],
                                                                       k["sgpr_count"])
        assert (a[rs.ARG_LDS], a[rs.ARG_SCRATCH]) == (info["group_segment_size"], info["private_segment_size"])
        assert a[ks.DEVICE] == gpu[info["agent_id"]["handle"]] and a[ks.STREAM] == info["queue_id"]["handle"]
    assert len(seen) == 80


def test_sample_devices_are_the_gpu_agents():
    proc, _, _ = _raw()
    gpus = [a for a in proc["agents"] if a["type"] == 2]
    props = sample_trace().device_properties
    assert len(gpus) == len(props) == 8
    for a, p in zip(sorted(gpus, key=lambda a: a["gpu_index"]), props):
        assert (p["id"], p["name"], p["numSms"], p["warpSize"]) == (a["gpu_index"], a["product_name"], a["cu_count"],
                                                                    a["wave_front_size"])
        assert p["computeMajor"] * 10000 + p["computeMinor"] * 100 == a["gfx_target_version"] // 100 * 100


def test_sample_without_hip_records_says_no_launch_records(capsys):
    """No hip_api record in the file: no kernel is linked, info says "no launch records"."""
    proc, _, _ = _raw()
    assert not proc["buffer_records"]["hip_api"] and not proc["buffer_records"]["hsa_api"]
    assert main(["info", str(SAMPLE), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == {"name": "rocprof", "title": "AMD rocprofv3 trace"}
    assert info["kineto"]["no_launch_records"] is True
    assert info["kineto"]["gpu_links"]["linked"] == 0 and info["kineto"]["gpu_links"]["unlinked"] == 43915
    assert any(w.startswith("no launch records: the file has no HIP or HSA API records") for w in info["warnings"])
    assert main(["info", str(SAMPLE)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "AMD rocprofv3 trace" in out and "No launch records:" in out


@pytest.mark.slow
def test_every_command_runs_on_the_sample(tmp_path, capsys):
    """check, critical-path, export md/chrome and slice: exit 0, numbers equal to the raw file's."""
    s = str(SAMPLE)
    assert main(["check", s]) in (0, 1)
    assert "ncclDevKernel_Generic_1" in capsys.readouterr().out
    assert main(["critical-path", s, "--json"]) == 0
    cp = json.loads(capsys.readouterr().out)
    assert cp and "Traceback" not in json.dumps(cp)[:0]
    md = tmp_path / "r.md"
    assert main(["export", s, "-f", "md", "-o", str(md)]) == 0
    assert "GPU events: 43,915 (43,915 kernels" in md.read_text()
    chrome = tmp_path / "r.json"
    assert main(["export", s, "-f", "chrome", "-o", str(chrome)]) == 0
    ev = json.loads(chrome.read_text())["traceEvents"]
    assert sum(1 for e in ev if e.get("cat") == "kernel") == 43915
    # a window: the kernels that start inside it, counted in the raw file
    proc, _, _ = _raw()
    kd = proc["buffer_records"]["kernel_dispatch"]
    t0 = min(d["start_timestamp"] for d in kd)
    lo, hi = 5_000_000, 5_500_000  # µs after the first kernel: every kernel that overlaps [lo, hi)
    inside = sum(1 for d in kd if d["start_timestamp"] - t0 < hi * 1000 and d["end_timestamp"] - t0 > lo * 1000)
    out = tmp_path / "slice.json.gz"
    assert main(["slice", s, "--window", f"{lo}:{hi}", "-o", str(out)]) == 0
    sl = json.loads(gzip.open(out).read())["traceEvents"]
    assert sum(1 for e in sl if e.get("cat") == "kernel") == inside > 0


@pytest.mark.slow
def test_diff_of_two_rocprof_files(tmp_path, capsys):
    """B: the sample with every dispatch of one GEMM twice as long (made here from the raw
    file); ``diff --json`` gives that kernel's change and no other."""
    doc = json.loads(json.dumps(raw_sample()))
    proc = doc[TOOL][0]
    names = {k["kernel_id"]: k["formatted_kernel_name"] for k in proc["kernel_symbols"]}
    used = Counter(names[d["dispatch_info"]["kernel_id"]] for d in proc["buffer_records"]["kernel_dispatch"])
    target = next(n for n in used if n.startswith("Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256"))
    added = 0
    for d in proc["buffer_records"]["kernel_dispatch"]:
        if names[d["dispatch_info"]["kernel_id"]] == target:
            dur = d["end_timestamp"] - d["start_timestamp"]
            d["end_timestamp"] += dur
            added += dur
    b = tmp_path / "b.json.gz"
    b.write_bytes(gzip.compress(json.dumps(doc).encode()))
    assert formats.detect(b) == formats.FileKind.ROCPROF
    assert main(["diff", str(SAMPLE), str(b), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    changed = {k["name"]: k["delta_us"] for k in d["kernels"] if k["delta_us"]}
    assert list(changed) == [target]
    assert changed[target] == pytest.approx(added / 1000, rel=1e-9)


# ------------------------------------------------------------------------------ the small document

def _load(tmp_path, doc=None):
    return formats.load(write(tmp_path / "small_results.json", doc))


def _api_names(doc) -> dict[int, str]:
    """correlation id -> the HIP call's name, from the raw records and string tables."""
    proc = doc[TOOL][0]
    ops = proc["strings"]["buffer_records"]
    return {r["correlation_id"]["internal"]: ops[r["kind"]]["operations"][r["operation"]]
            for r in proc["buffer_records"]["hip_api"]}


def test_small_document_links_kernels_and_copies_to_their_hip_call(tmp_path):
    """Every kernel and copy whose correlation id a hip_api record has is linked to that call;
    the one without (correlation 99) is listed under its queue."""
    doc = document()
    calls = _api_names(doc)
    kt = _load(tmp_path, doc)
    gpu = np.flatnonzero(np.isin(kt.kind, [int(Kind.KERNEL), int(Kind.MEMCPY)]))
    proc = doc[TOOL][0]
    raw_gpu = proc["buffer_records"]["kernel_dispatch"] + proc["buffer_records"]["memory_copy"]
    assert gpu.size == len(raw_gpu) == 6
    for i in gpu.tolist():
        corr = int(kt.correlation[i])
        launch = int(kt.launch_of[i])
        if corr in calls:
            assert kt.name(launch) == calls[corr] and int(kt.correlation[launch]) == corr
            assert int(kt.parent[i]) == launch
        else:
            assert launch == -1 and corr == 99
    assert kt.gpu_stats.linked == sum(1 for r in raw_gpu if r["correlation_id"]["internal"] in calls) == 5
    assert not any(w.kind == "no_launch_records" for w in kt.warnings)


def test_small_document_nests_hip_calls_in_roctx_ranges_on_their_threads(tmp_path):
    kt = _load(tmp_path)
    parent = {kt.name(i): kt.name(int(kt.parent[i])) for i in range(kt.n_events)
              if kt.kind[i] != int(Kind.KERNEL) and 0 <= int(kt.parent[i]) < kt.n_events}
    assert parent["forward"] == "step" and parent["hipMemcpyAsync"] == "forward"
    assert parent["ncclAllReduce"] == "step" and parent["hipExtLaunchKernel"] == "ncclAllReduce"
    assert parent["MEMORY_ALLOCATION_ALLOCATE"] == "step"
    lanes = {kt.lane_of_node(i).label for i in range(kt.n_events) if kt.name(i) == "hipLaunchKernel"}
    assert lanes == {"thread 4242 (pid 4242, python3)", "thread 4300 (pid 4242, python3)"}
    cats = Counter(kt.category(i) for i in range(kt.n_events))
    assert cats == {"kernel": 5, "cuda_runtime": 6, "user_annotation": 3, "gpu_memcpy": 1, "memory_allocation": 1}
    mark = [i for i in range(kt.n_events) if kt.name(i) == "checkpoint"]
    assert len(mark) == 1 and kt.kind[mark[0]] == int(Kind.INSTANT)
    assert not any(w.kind == "unknown_category" for w in kt.warnings)


def test_small_document_grid_units_copies_and_lanes(tmp_path):
    """A kernel launched by hipExtModuleLaunchKernel keeps its work-item grid (Kineto's unit for
    that call, read back as blocks by launch_facts); a copy's bytes and GPU; one lane per GPU
    and queue, and a copy lane."""
    from tracetui.kineto.launch_facts import kernel_launch_config

    kt = _load(tmp_path)
    by_name = {kt.name(i): i for i in range(kt.n_events)}
    cfg = kernel_launch_config(kt, int(np.flatnonzero(kt.correlation == 12)[0]))
    assert cfg.counts_work_items and cfg.grid == [1000, 1, 1] and cfg.blocks == [4, 1, 1]
    cfg = kernel_launch_config(kt, int(np.flatnonzero(kt.correlation == 10)[0]))
    assert not cfg.counts_work_items and cfg.blocks == [16, 1, 1]
    copy = by_name["MEMORY_COPY_HOST_TO_DEVICE"]
    assert kt.args(copy)[ks.BYTES] == 1 << 20 and int(kt.device[copy]) == 0
    assert [ln.label for ln in kt.lanes if ln.is_gpu] == ["GPU 0 memory copies", "GPU 0 queue 1", "GPU 0 queue 2",
                                                          "GPU 1 queue 3"]


def test_small_document_without_hip_records_says_no_launch_records(tmp_path):
    kt = _load(tmp_path, document(hip=False))
    assert kt.gpu_stats.linked == 0 and kt.gpu_stats.gpu_events == 6
    assert [w.count for w in kt.warnings if w.kind == "no_launch_records"] == [6]
    skipped = [w for w in kt.warnings if w.kind == "rocprof_not_read"]
    assert len(skipped) == 1 and "pc_sample_host_trap 2" in skipped[0].message


def test_cached_trace_keeps_its_format(tmp_path, capsys):
    p = write(tmp_path / "small_results.json")
    for _ in range(2):  # the second run reads the cache entry the first wrote
        assert main(["info", str(p), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["format"]["name"] == "rocprof"


# ------------------------------------------------------------------------------ bad input

def _bad_files(tmp_path) -> dict[str, tuple[bytes, str]]:
    good = json.dumps(document()).encode()
    wrong = document()
    wrong[TOOL][0]["buffer_records"]["kernel_dispatch"][3]["start_timestamp"] = "soon"
    cut = gzip.compress(good)[:len(gzip.compress(good)) // 2]
    mid = good.index(b'"kernel_dispatch"') + 40
    return {
        "corrupt byte": (good[:mid] + b"#" + good[mid + 1:], " at byte "),
        "gzip cut": (cut, "the gzip stream ends early"),
        "wrong type": (json.dumps(wrong).encode(),
                       "a 'kernel_dispatch' record is not as rocprofv3 writes it (Expected `int`, got `str` (at "
                       "rocprofiler-sdk-tool[0].buffer_records.kernel_dispatch[3].start_timestamp))"),
        "not a list": (b'{"rocprofiler-sdk-tool": {"metadata": {}}}',
                       "'rocprofiler-sdk-tool' is not a list of process records"),
    }


@pytest.mark.parametrize("case", ["corrupt byte", "gzip cut", "wrong type", "not a list"])
def test_a_corrupt_file_is_one_line_and_exit_2(tmp_path, capsys, case):
    data, says = _bad_files(tmp_path)[case]
    p = tmp_path / "bad_results.json"
    p.write_bytes(data)
    assert main(["info", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and err.startswith(f"tracetui: {p}")
    assert says in err


# ------------------------------------------------------------------------------ the CSV layout

def test_the_csv_files_of_the_small_document_give_the_same_trace(tmp_path):
    """The kernel trace named, its sibling files read with it: the same kernels per device and
    queue, links and nesting as the JSON document; LDS is the CSV's LDS_Block_Size; a copy has
    no byte count in the CSV layout."""
    import csv as csv_module

    doc = document()
    kernel_csv = write_csv_files(tmp_path, doc)
    assert formats.detect(kernel_csv) == formats.FileKind.ROCPROF
    kt = formats.load(kernel_csv)
    js = _load(tmp_path, doc)
    lane = lambda t: Counter((int(t.device[i]), int(t.stream[i]), t.name(i))  # noqa: E731
                             for i in np.flatnonzero(np.isin(t.kind, [int(Kind.KERNEL), int(Kind.MEMCPY)])).tolist())
    assert lane(kt) == lane(js)
    assert [ln.label for ln in kt.lanes if ln.is_gpu] == [ln.label for ln in js.lanes if ln.is_gpu]
    assert kt.gpu_stats.linked == js.gpu_stats.linked == 5
    assert {kt.name(i): kt.name(int(kt.parent[i])) for i in range(kt.n_events) if kt.name(i) == "hipMemcpyAsync"} == \
        {"hipMemcpyAsync": "forward"}
    rows = list(csv_module.DictReader(open(kernel_csv)))
    first = int(np.flatnonzero(kt.correlation == int(rows[0]["Correlation_Id"]))[0])
    a = kt.args(first)
    assert (a[rs.ARG_LDS], a[rs.ARG_VGPRS], a[rs.ARG_SGPRS]) == (int(rows[0]["LDS_Block_Size"]),
                                                                 int(rows[0]["VGPR_Count"]), int(rows[0]["SGPR_Count"]))
    copy = int(np.flatnonzero(kt.kind == int(Kind.MEMCPY))[0])
    assert ks.BYTES not in kt.args(copy)
    assert [w.message for w in kt.warnings if w.kind == "rocprof_not_read"] == [
        "1 CSV files beside the kernel trace are not read (4242_memory_allocation_trace.csv)"]
    assert kt.device_properties[0]["name"] == "AMD Instinct MI300X"


def test_a_csv_kernel_trace_with_a_bad_number_is_one_line_and_exit_2(tmp_path, capsys):
    p = write_csv_files(tmp_path)
    p.write_text(p.read_text().replace(",10,", ",ten,", 1))
    assert main(["info", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"tracetui: {p} at line ") and "is not an integer: 'ten'" in err


def test_hostile_names_in_a_rocprof_file_are_shown_escaped(tmp_path, capsys):
    """A kernel name and a roctx message holding terminal controls and a bidi override (data
    from the file) print escaped in every text output, and exact in JSON."""
    doc = document()
    proc = doc[TOOL][0]
    evil = "gemm\x1b]52;c;ZXZpbA==\x07\u202e"
    proc["kernel_symbols"][1]["formatted_kernel_name"] = evil
    proc["strings"]["marker_api"][1]["value"] = "fwd\x1b[6n"
    p = write(tmp_path / "evil_results.json", doc)
    for cmd in (["summary"], ["info"], ["tree", "--depth", "4"]):
        assert main([cmd[0], str(p), *cmd[1:]]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, cmd
    assert main(["summary", str(p)]) == 0
    assert "gemm\\x1b]52;c;ZXZpbA==" in capsys.readouterr().out  # escaped (a narrow table cuts the rest)
    assert main(["summary", str(p), "--json"]) == 0
    assert evil in {k["name"] for k in json.loads(capsys.readouterr().out)["kernels"]}
