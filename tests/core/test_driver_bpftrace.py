"""A bpftrace driver-call trace written from the documented fields (tests/driver_files.py):
every answer of ``tracetui summary --json`` exactly, the tree it builds, and the other
commands (info, tree, export) on it."""

from __future__ import annotations

import orjson
import pytest
from driver_files import IOCTL_A, IOCTL_B, bpftrace_file

from tracetui.cli import main
from tracetui.driver import DriverTrace, What, load_driver
from tracetui.driver.pairing import Flag
from tracetui.kineto.kinds import Kind
from tracetui.session import load_trace

MIB = 1 << 20


@pytest.fixture(scope="module")
def bpf_path(tmp_path_factory):
    return bpftrace_file().write(tmp_path_factory.mktemp("bpf") / "trace_cuda.jsonl")


def summary_json(path, capsys, *extra) -> dict:
    assert main(["summary", str(path), "--json", "--no-cache", *extra]) == 0
    return orjson.loads(capsys.readouterr().out)


def test_summary_json_answers(bpf_path, capsys):
    f = bpftrace_file()
    doc = summary_json(bpf_path, capsys)
    # the Kineto parts are there, empty
    assert doc["trace"]["gpu_events"] == 0 and doc["kernels"] == [] and doc["ops"] == []
    d = doc["driver"]
    assert d["kineto_events"] == 0
    assert d["lines"] == {"total": f.n_total, "json": f.n_json, "skipped": f.n_text,
                          "skipped_by_reason": {"text lines (banners, heartbeats, summaries, map dumps)": f.n_text}}
    assert (f.n_total, f.n_json, f.n_text) == (91, 84, 7)  # 2 banners, 2 heartbeats, 3 END lines
    assert d["layouts"] == {"bpftrace": 84}
    calls = {r["name"]: (r["count"], r["errors"]) for r in d["calls"]}
    assert calls == {
        "cuInit": (1, 0), "cuCtxGetCurrent": (1, 0), "cuDeviceGet": (1, 0), "cuCtxCreate_v2": (1, 0),
        "cuGetProcAddress_v2": (1, 0), "cuModuleLoadData": (1, 0), "cuMemAlloc_v2": (2, 0),
        "cuMemcpyHtoD_v2": (1, 0), "cuLaunchKernel": (9, 1), "cuStreamSynchronize": (2, 0),
        "cuCtxSynchronize": (1, 0), "cuMemcpyDtoH_v2": (1, 0), "cuMemFree_v2": (1, 0), "cuCtxDestroy_v2": (1, 0)}
    by = {r["name"]: r for r in d["calls"]}
    assert by["cuLaunchKernel"]["total_us"] == pytest.approx(90.0)
    assert by["cuLaunchKernel"]["mean_us"] == pytest.approx(10.0)
    assert by["cuStreamSynchronize"]["total_us"] == pytest.approx(1200.0)
    assert by["cuGetProcAddress_v2"]["total_us"] == pytest.approx(50.0)  # no end line: to its next sibling
    assert by["cuLaunchKernel"]["class"] == "launch" and by["cuLaunchKernel"]["api"] == "driver"
    assert d["calls"][0]["name"] == "cuLaunchKernel"  # most frequent first
    fam = {r["family"]: r for r in d["call_families"]}
    assert fam["cuMemAlloc"]["names"] == ["cuMemAlloc_v2"] and fam["cuMemAlloc"]["count"] == 2
    assert fam["cuCtxCreate"]["names"] == ["cuCtxCreate_v2"]
    assert d["kernel_launches"] == 9 and d["kernel_launches_from"] == "launch records"
    assert d["launch_calls"] == 9 and d["launch_records"] == 9 and d["graph_launch_calls"] == 0
    assert d["launch_configs"] == [{"grid": [4, 1, 1], "block": [128, 1, 1], "threads": 512, "count": 6},
                                   {"grid": [2, 1, 1], "block": [128, 1, 1], "threads": 256, "count": 3}]
    al = d["allocations"]
    assert (al["from"], al["count"], al["bytes"], al["peak_bytes"]) == ("alloc records", 2, 3 * MIB, 3 * MIB)
    assert al["timeline"] == [[pytest.approx(2105.0), MIB], [pytest.approx(2301.0), 3 * MIB]]
    assert (al["alloc_calls"], al["free_calls"]) == (2, 1)
    assert al["kernel_memory"] == {"count": 1, "bytes": 65536}
    assert d["transfers_from"] == "transfer records"
    tx = d["transfers"]
    assert (tx["H2D"]["count"], tx["H2D"]["bytes"], tx["H2D"]["total_us"]) == (1, MIB, pytest.approx(80.0))
    assert (tx["D2H"]["count"], tx["D2H"]["bytes"], tx["D2H"]["total_us"]) == (1, 4096, pytest.approx(50.0))
    assert (tx["D2D"]["count"], tx["D2D"]["bytes"]) == (0, 0)
    assert set(tx) == {"H2D", "D2H", "D2D"}
    sy = d["sync"]
    assert (sy["count"], sy["total_us"], sy["max_us"]) == (3, pytest.approx(1700.0), pytest.approx(1000.0))
    assert [(r["name"], r["count"], r["total_us"]) for r in sy["by_name"]] == [
        ("cuStreamSynchronize", 2, pytest.approx(1200.0)), ("cuCtxSynchronize", 1, pytest.approx(500.0))]
    assert [(r["cmd"], r["count"], r["errors"]) for r in d["ioctls"]] == [
        (f"0x{IOCTL_A:08x}", 9, 0), (f"0x{IOCTL_B:08x}", 1, 1)]
    assert d["ioctls"][0]["cmd"] == "0xc020462a"
    assert d["ioctls"][0]["total_us"] == pytest.approx(18.0) and d["ioctls"][1]["total_us"] == pytest.approx(40.0)
    assert d["syscall_ioctls"] == [{"cmd": "0xc020462a", "count": 2}]
    it = d["iterations"]
    assert (it["count"], it["launches_per_iteration"], it["min"], it["max"], it["mean"]) == (3, 3.0, 2, 4, 3.0)
    ia = d["idle_after_sync"]
    assert (ia["count"], ia["total_us"], ia["max_us"]) == (2, pytest.approx(300.0), pytest.approx(200.0))
    cv = d["compute_vs_transfer"]
    assert cv["sync_wait_us"] == pytest.approx(1700.0) and cv["launch_call_us"] == pytest.approx(90.0)
    assert cv["compute_us"] == pytest.approx(1790.0) and cv["transfer_us"] == pytest.approx(130.0)
    assert cv["ratio"] == pytest.approx(1790.0 / 130.0, abs=1e-3)
    assert [(p["name"], p["calls"], p["launches"], p["syncs"], p["allocations"], p["transfers_bytes"], p["ioctls"])
            for p in d["phases"]] == [
        ("initialisation", 6, 0, 0, 0, 0, 0),  # cuInit, cuCtxGetCurrent (tid 200), ..., cuModuleLoadData
        ("weight loading", 3, 0, 0, 2, MIB, 1),
        ("warm-up", 4, 3, 1, 0, 0, 3),
        ("inference", 8, 6, 2, 0, 0, 6),
        ("output", 1, 0, 0, 0, 4096, 0),
        ("clean-up", 2, 0, 0, 0, 0, 0)]
    assert [(p["start_us"], p["end_us"]) for p in d["phases"]] == [
        (0.0, 1900.0), (2000.0, 2600.0), (3000.0, 4300.0), (4500.0, 5900.0), (6000.0, 6100.0), (6500.0, 6800.0)]
    assert all(p["pid"] is None for p in d["phases"])  # bpftrace lines carry no pid: one process
    assert (d["unfinished_calls"], d["calls_without_begin"]) == (1, 0)
    assert {w["kind"]: w["count"] for w in d["warnings"]} == {"skipped_lines": 7, "no_end_line": 1}
    assert d["events_by_what"] == {"call": 24, "ioctl": 10, "launch": 9, "alloc": 2, "transfer": 2,
                                   "kernel_memory": 1, "scheduler": 1, "syscall": 2, "phase": 7}
    assert (d["processes"], d["threads"], d["span_us"]) == (1, 2, pytest.approx(6800.0))


def test_tree_shape(bpf_path):
    t = load_driver(bpf_path)
    assert isinstance(t, DriverTrace) and t.first == 0
    ev = t.driver_events()

    def named(name: str) -> list[int]:
        return [int(e) for e in ev if t.name(int(e)) == name]

    launches = named("cuLaunchKernel")
    assert len(launches) == 9
    for c in launches:  # its launch record and its ioctl are its children
        kids = [t.name(int(k)) for k in t.children(c)]
        assert "kernel launch" in kids and "nvidia_ioctl" in kids
    for r in named("kernel launch"):
        assert t.what_of(r) == What.LAUNCH and t.kind_of(r) == Kind.RECORD
        assert t.name(int(t.parent[r])) == "cuLaunchKernel"
        assert t.grid[r - t.first].tolist() in ([2, 1, 1], [4, 1, 1]) and t.block[r - t.first].tolist() == [128, 1, 1]
    for i in named("nvidia_ioctl"):
        assert t.kind_of(i) == Kind.IOCTL and t.what_of(i) == What.IOCTL
        assert t.name(int(t.parent[i])) == "cuLaunchKernel" and t.value(t.ioctl_cmd, i) == IOCTL_A
    nv = named("nv_ioctl")
    assert len(nv) == 1 and t.value(t.retval, nv[0]) == -22 and t.name(int(t.parent[nv[0]])) == "cuMemAlloc_v2"
    allocs = named("cuMemAlloc_v2")
    # the allocation record printed 5 µs after the first cuMemAlloc_v2 returned is its child
    first_alloc = min(allocs, key=lambda e: t.ts[e])
    recs = [int(k) for k in t.children(first_alloc)]
    assert sorted(t.name(k) for k in recs) == ["kernel memory alloc", "memory alloc"]
    mem = next(k for k in recs if t.name(k) == "memory alloc")
    assert t.ts[mem] > t.ts[first_alloc] + t.dur[first_alloc]  # after the call returned
    assert (t.value(t.size, mem), t.value(t.total_allocated, mem)) == (MIB, MIB)
    # the begin without an end: flagged, ending where its next sibling begins
    gpa = named("cuGetProcAddress_v2")[0]
    assert t.flags[gpa - t.first] & Flag.UNFINISHED and t.end_line_no[gpa - t.first] == -1
    nxt = named("cuModuleLoadData")[0]
    assert t.ts[gpa] + t.dur[gpa] == pytest.approx(t.ts[nxt])
    assert t.parent[gpa] == t.parent[nxt]  # siblings, under the same phase span
    assert t.name(int(t.parent[gpa])) == "phase: initialisation"
    # transfers: a record printed as the transfer ends, with its length
    h2d = named("transfer H2D")[0]
    assert t.dur[h2d] == pytest.approx(80.0) and t.direction_name(h2d) == "H2D"
    assert t.name(int(t.parent[h2d])) == "cuMemcpyHtoD_v2"
    # the error: its end line's retval, and line numbers of both lines
    bad = [c for c in launches if t.value(t.retval, c) == 1]
    assert len(bad) == 1 and 0 < t.line_no[bad[0] - t.first] < t.end_line_no[bad[0] - t.first]
    args = t.args(bad[0])
    assert args["begin"]["phase"] == "B" and args["end"]["retval"] == 1
    # kernel_memory, scheduler and syscall records keep their kind
    assert {t.what_of(int(e)) for e in ev} >= {What.KERNEL_MEMORY, What.SCHEDULER, What.SYSCALL}
    # lanes: one per thread
    assert [ln.label for ln in t.lanes] == ["thread 100", "thread 200"]


def test_load_trace_detects_it_by_content(bpf_path, tmp_path):
    plain = tmp_path / "capture.log"  # no .jsonl name: the content says what it is
    plain.write_bytes(bpf_path.read_bytes())
    t = load_trace(plain)
    assert isinstance(t, DriverTrace) and t.layouts == {"bpftrace": 84}


def test_summary_text(bpf_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["summary", str(bpf_path), "--no-cache"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "No GPU work in a driver-call trace" in out
    assert max(len(ln) for ln in lines) <= 80
    for title in ("API calls by count", "Pipeline phases", "Kernel launches: 9", "Iterations", "Synchronize calls",
                  "GPU idle after synchronize", "Compute vs transfer", "Transfers", "Kernel-space ioctls by command",
                  "ioctl system calls", "Allocations: 2"):
        assert title in out, title
    for empty in ("GPU timeline", "Kernel categories", "Top kernels", "Top ops", "Streams", "Idle gaps by class",
                  "Launch calls (", "Profiler steps"):
        assert empty not in out, empty
    assert "0xc020462a" in out and "weight loading" in out


def test_summary_from_the_stored_result_is_the_same(bpf_path, capsys):
    fresh = summary_json(bpf_path, capsys)
    assert main(["summary", str(bpf_path), "--json"]) == 0
    first = orjson.loads(capsys.readouterr().out)
    assert main(["summary", str(bpf_path), "--json"]) == 0  # answered from the stored summary
    assert orjson.loads(capsys.readouterr().out) == first == fresh


def test_info_tree_export(bpf_path, capsys, tmp_path):
    assert main(["info", str(bpf_path), "--json", "--no-cache"]) == 0
    info = orjson.loads(capsys.readouterr().out)
    assert info["kineto"]["categories"] == {"driver_call": 24, "kernel_ioctl": 10, "driver_record": 17,
                                            "driver_phase": 7}
    assert main(["info", str(bpf_path), "--no-cache"]) == 0
    assert "driver_call" in capsys.readouterr().out
    assert main(["tree", str(bpf_path), "--no-cache", "--depth", "2"]) == 0
    tree = capsys.readouterr().out
    assert "[lane] thread 100" in tree and "[phase] phase: warm-up" in tree and "[traced_call] cuLaunchKernel" in tree
    assert main(["tree", str(bpf_path), "--no-cache", "--select", "name:cuLaunchKernel#2"]) == 0
    sub = capsys.readouterr().out.splitlines()
    assert sub[0].startswith("[traced_call] cuLaunchKernel")
    assert any("[record] kernel launch" in ln for ln in sub) and any("[ioctl] nvidia_ioctl" in ln for ln in sub)
    out_json = tmp_path / "t.json"
    assert main(["export", str(bpf_path), "--no-cache", "--format", "json", "-o", str(out_json)]) == 0
    rep = orjson.loads(out_json.read_bytes())
    assert len(rep["ops"]) == 58 and rep["kernels"] == []  # every driver event is a host node
    assert sum(1 for r in rep["ops"] if r["name"] == "cuLaunchKernel") == 9
    out_md = tmp_path / "t.md"
    assert main(["export", str(bpf_path), "--no-cache", "--format", "md", "-o", str(out_md),
                 "--select", "name:cuMemAlloc_v2#1"]) == 0
    md = out_md.read_text()
    assert md.startswith("# tracetui report: cuMemAlloc_v2") and "memory alloc" in md
