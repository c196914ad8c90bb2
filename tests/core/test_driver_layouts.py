"""The LD_PRELOAD, BCC and sidecar layouts (tests/driver_files.py), each written from its
documented fields: ``summary --json`` answers exactly, and what is particular to each
layout (op_id pairing and seconds; integer types and names from records; entries only,
ms, and two API levels)."""

from __future__ import annotations

import orjson
import pytest
from driver_files import bcc_file, preload_file, sidecar_file

from tracetui.cli import main
from tracetui.driver import What, load_driver
from tracetui.driver.pairing import Flag
from tracetui.kineto.kinds import Kind


def summary_json(path, capsys) -> dict:
    assert main(["summary", str(path), "--json", "--no-cache"]) == 0
    return orjson.loads(capsys.readouterr().out)["driver"]


def counts(d: dict) -> dict[str, tuple[int, int]]:
    return {r["name"]: (r["count"], r["errors"]) for r in d["calls"]}


def phases(d: dict) -> list[tuple]:
    return [(p["pid"], p["name"], p["calls"], p["launches"], p["syncs"]) for p in d["phases"]]


# ---- LD_PRELOAD ------------------------------------------------------------------------------

def test_preload(tmp_path, capsys):
    f = preload_file()
    path = f.write(tmp_path / "cuda_trace.jsonl")
    d = summary_json(path, capsys)
    assert d["lines"] == {"total": 25, "json": 25, "skipped": 0, "skipped_by_reason": {}} and f.n_json == 25
    assert d["layouts"] == {"preload": 25}
    assert counts(d) == {"cuInit": (1, 0), "cuDevicePrimaryCtxRetain": (1, 0), "cuMemAlloc_v2": (2, 0),
                         "cuModuleLoadData": (1, 0), "cuModuleGetFunction": (1, 0), "cuLaunchKernel": (4, 1),
                         "cuStreamSynchronize": (2, 0), "cuMemcpyDtoH_v2": (1, 0)}
    by = {r["name"]: r for r in d["calls"]}
    # seconds -> µs; the two overlapping launches on threads 7 and 8 are paired by op_id: 30 + 19 + 10 + 10
    assert by["cuLaunchKernel"]["total_us"] == pytest.approx(69.0)
    assert by["cuInit"]["total_us"] == pytest.approx(2000.0)
    assert by["cuModuleLoadData"]["total_us"] == pytest.approx(500.0)
    assert d["kernel_launches"] == 4 and d["kernel_launches_from"] == "launch calls"
    assert d["launch_calls_by_api"] == {"driver": 4, "runtime": 0}
    # no allocation records: the count of the calls, no sizes
    assert d["allocations"] == {"from": "alloc calls", "count": 2, "bytes": None, "peak_bytes": None, "timeline": [],
                                "alloc_calls": 2, "free_calls": 0, "kernel_memory": {"count": 0, "bytes": 0}}
    # no transfer records: the copy calls whose name gives the direction
    assert d["transfers_from"] == "copy calls"
    assert d["transfers"]["D2H"] == {"count": 1, "bytes": None, "total_us": pytest.approx(100.0), "gb_per_s": None}
    assert d["transfers"]["H2D"]["count"] == 0
    assert (d["sync"]["count"], d["sync"]["total_us"]) == (2, pytest.approx(300.0))
    it = d["iterations"]  # 3 launches then the 300 µs sync; 1 launch then the orphan end line
    assert (it["count"], it["launches_per_iteration"], it["min"], it["max"]) == (2, 2.0, 1, 3)
    ia = d["idle_after_sync"]
    assert (ia["count"], ia["total_us"], ia["max_us"]) == (1, pytest.approx(200.0), pytest.approx(200.0))
    assert phases(d) == [(None, "initialisation", 2, 0, 0), (None, "weight loading", 4, 0, 0),
                         (None, "warm-up", 4, 3, 1), (None, "inference", 2, 1, 1), (None, "output", 1, 0, 0)]
    assert (d["unfinished_calls"], d["calls_without_begin"]) == (0, 1)
    assert [w["kind"] for w in d["warnings"]] == ["no_begin_line"]

    t = load_driver(path)
    ev = [int(e) for e in t.driver_events()]
    launches = sorted((e for e in ev if t.name(e) == "cuLaunchKernel"), key=lambda e: t.ts[e])
    assert [round(float(t.dur[e]), 3) for e in launches] == [30.0, 19.0, 10.0, 10.0]
    assert [t.tids[e] for e in launches] == [7, 8, 7, 7]
    assert t.value(t.retval, launches[2]) == 700
    alloc = next(e for e in ev if t.name(e) == "cuMemAlloc_v2")
    assert t.value(t.retval, alloc) is None  # result_ptr: no return code
    assert t.args(alloc)["end"]["result_ptr"] == "0x7f3a40000000"
    orphan = next(e for e in ev if t.flags[e - t.first] & Flag.NO_BEGIN)
    assert t.name(orphan) == "cuStreamSynchronize" and t.dur[orphan] == 0 and t.line_no[orphan] == 23
    nested = next(e for e in ev if t.name(e) == "cuModuleGetFunction")
    assert t.name(int(t.parent[nested])) == "cuModuleLoadData"


# ---- BCC -------------------------------------------------------------------------------------

def test_bcc(tmp_path, capsys):
    f = bcc_file()
    path = f.write(tmp_path / "bcc_trace.jsonl")
    d = summary_json(path, capsys)
    assert d["lines"]["total"] == d["lines"]["json"] == f.n_json == 22 and d["layouts"] == {"bcc": 22}
    # unnamed calls take their names from the records they hold
    assert counts(d) == {"cuMemAlloc": (2, 0), "cuLaunchKernel": (3, 0), "cuMemcpy": (1, 0), "(unnamed call)": (1, 0)}
    by = {r["name"]: r for r in d["calls"]}
    assert by["cuMemAlloc"]["total_us"] == pytest.approx(3000.0)  # 2000 + 1000 µs (seconds -> µs)
    assert by["cuLaunchKernel"]["total_us"] == pytest.approx(1200.0)
    assert d["names_inferred"] == 6
    assert d["kernel_launches"] == 3 and d["kernel_launches_from"] == "launch records"
    assert d["launch_configs"] == [{"grid": [2, 1, 1], "block": [64, 1, 1], "threads": 128, "count": 2},
                                   {"grid": [8, 1, 1], "block": [256, 1, 1], "threads": 2048, "count": 1}]
    al = d["allocations"]
    assert (al["count"], al["bytes"], al["peak_bytes"]) == (2, 12288, 12288)
    # no running totals in BCC records: the sum of sizes, added up over the two processes
    assert al["timeline"] == [[pytest.approx(500.0), 8192], [pytest.approx(1000.0), 12288]]
    assert d["transfers"]["H2D"] == {"count": 1, "bytes": 100, "total_us": 0.0, "gb_per_s": None}
    assert d["ioctls"] == [{"cmd": None, "count": 1, "total_us": pytest.approx(100.0),
                            "mean_us": pytest.approx(100.0), "errors": 0}]
    assert d["sync"]["count"] == 0 and d["iterations"]["count"] == 0 and d["iterations"]["min"] is None
    assert d["processes"] == 2
    assert phases(d) == [(10, "weight loading", 1, 0, 0), (10, "inference", 2, 2, 0), (10, "output", 2, 0, 0),
                         (20, "weight loading", 1, 0, 0), (20, "inference", 1, 1, 0)]
    assert [w["kind"] for w in d["warnings"]] == ["name_inferred"]

    t = load_driver(path)
    ev = [int(e) for e in t.driver_events()]
    for e in ev:
        if t.name(e) in ("cuMemAlloc", "cuLaunchKernel", "cuMemcpy"):
            assert t.flags[e - t.first] & Flag.NAME_INFERRED
    # a launch record printed just before its call's enter line, an alloc just before its exit line
    for r in (e for e in ev if t.what_of(e) in (What.LAUNCH, What.ALLOC, What.TRANSFER)):
        assert t.kind_of(int(t.parent[r])) == Kind.TRACED_CALL
    ioctl = next(e for e in ev if t.what_of(e) == What.IOCTL)
    assert t.name(ioctl) == "ioctl" and t.name(int(t.parent[ioctl])) == "cuLaunchKernel"
    assert sorted(ln.label for ln in t.lanes) == ["thread 11 (pid 10)", "thread 21 (pid 20)"]


# ---- sidecar ---------------------------------------------------------------------------------

def test_sidecar(tmp_path, capsys, monkeypatch):
    f = sidecar_file()
    path = f.write(tmp_path / "sidecar.jsonl")
    d = summary_json(path, capsys)
    assert d["lines"] == {"total": 15, "json": 14, "skipped": 1,
                          "skipped_by_reason": {"text lines (banners, heartbeats, summaries, map dumps)": 1}}
    assert d["layouts"] == {"sidecar": 14} and d["events_by_what"] == {"entry": 14, "phase": 7}
    assert counts(d) == {"cuInit": (2, 0), "cudaMalloc": (1, 0), "cuMemAlloc_v2": (1, 0), "cudaLaunchKernel": (1, 0),
                         "cuLaunchKernel": (5, 0), "cuStreamSynchronize": (2, 0), "cuCtxSynchronize": (1, 0),
                         "cuMemFree_v2": (1, 0)}
    assert all(r["total_us"] == 0.0 for r in d["calls"])  # entries only: no durations
    api = {r["name"]: r["api"] for r in d["calls"]}
    assert api["cudaLaunchKernel"] == "runtime" and api["cuLaunchKernel"] == "driver"
    assert d["kernel_launches"] == 6 and d["launch_calls_by_api"] == {"driver": 5, "runtime": 1}
    assert d["sync"]["count"] == 3 and d["sync"]["total_us"] == 0.0
    it = d["iterations"]
    assert (it["count"], it["launches_per_iteration"], it["min"], it["max"]) == (3, 2.0, 1, 3)
    assert [(p["pid"], p["count"], p["launches_per_iteration"]) for p in it["by_process"]] == [(300, 2, 2.5),
                                                                                              (400, 1, 1.0)]
    ia = d["idle_after_sync"]  # pid 300: the sync entry at 1003 ms, the next launch at 1006 ms
    assert (ia["count"], ia["total_us"]) == (1, pytest.approx(3000.0))
    assert phases(d) == [(300, "initialisation", 1, 0, 0), (300, "weight loading", 2, 0, 0), (300, "warm-up", 3, 2, 1),
                         (300, "inference", 4, 3, 1), (300, "clean-up", 1, 0, 0),
                         (400, "initialisation", 1, 0, 0), (400, "inference", 2, 1, 1)]
    t = load_driver(path)
    assert {t.kind_of(int(e)) for e in t.driver_events()} == {Kind.TRACED_CALL, Kind.PHASE}
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["summary", str(path), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "pid 300" in out and "pid 400" in out and "runtime API (cuda*)" in out
    assert max(len(ln) for ln in out.splitlines()) <= 80
