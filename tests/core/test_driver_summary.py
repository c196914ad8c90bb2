"""The rules of analysis/driver.py one by one (allocation timeline, idle after sync,
iterations per process, compute vs transfer), its restriction to the driver events of a
merged trace, its speed, and the text rendering next to Kineto tables."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import orjson
import pytest
from driver_files import Bpf, bpftrace_file
from rich.console import Console
from shared_traces import kineto_path

from tracetui.analysis.driver import TIMELINE_POINTS, driver_summary
from tracetui.cli import main
from tracetui.cli.summary_render import print_summary
from tracetui.driver import load_driver


def load(f: Bpf, tmp_path, name: str = "t.jsonl"):
    return load_driver(f.write(tmp_path / name))


def test_allocation_timeline_from_totals_and_sizes(tmp_path):
    f = Bpf()
    f.ev(ts=1.0, tid=1, type="memory", op="alloc", size=100, total_allocated=1000)  # the total counts earlier ones
    f.ev(ts=2.0, tid=1, type="memory", op="alloc", size=50)  # no total: 1000 + 50
    f.ev(ts=3.0, tid=1, type="memory", op="alloc", size=10, total_allocated=400)  # the tracer saw frees
    f.ev(ts=4.0, tid=1, type="memory", op="alloc", size=5)
    al = driver_summary(load(f, tmp_path))["allocations"]
    assert (al["count"], al["bytes"], al["peak_bytes"]) == (4, 165, 1050)
    # times in µs from the trace's first event (1 ms on the tracer's clock)
    assert al["timeline"] == [[0.0, 1000], [1000.0, 1050], [2000.0, 400], [3000.0, 405]]


def test_allocation_timeline_is_decimated_and_keeps_the_peak(tmp_path):
    f = Bpf()
    for k in range(1000):
        total = (k + 1) * 10 if k != 613 else 10**9  # one spike, not on the even grid
        f.ev(ts=1.0 + k * 0.01, tid=1, type="memory", op="alloc", size=10, total_allocated=total)
    al = driver_summary(load(f, tmp_path))["allocations"]
    assert al["count"] == 1000 and al["peak_bytes"] == 10**9
    tl = al["timeline"]
    assert len(tl) <= TIMELINE_POINTS
    assert [10**9 in p for p in tl].count(True) == 1
    assert tl[0] == [0.0, 10] and tl[-1][1] == 10000
    assert all(a[0] < b[0] for a, b in zip(tl, tl[1:]))


def _sync_launch_file() -> Bpf:
    """Two syncs in a row before a launch (one gap, from the later return), a launch on
    another thread while a sync waits (no gap), a sync followed by no launch (no gap)."""
    f = Bpf()
    f.call(0.0, 0.01, "cuLaunchKernel")
    f.call(1.0, 2.0, "cuStreamSynchronize")  # returns at 2.0
    f.call(2.1, 2.5, "cuStreamSynchronize")  # returns at 2.5: the gap starts here
    f.call(3.0, 3.01, "cuLaunchKernel")  # gap 500 µs
    f.call(4.0, 5.0, "cuCtxSynchronize")
    f.call(4.5, 4.51, "cuLaunchKernel", tid=2)  # launched while the sync waits: no gap
    f.call(5.2, 5.21, "cuLaunchKernel")  # gap 200 µs after the sync's return
    f.call(6.0, 6.3, "cuEventSynchronize")  # nothing after it: no gap
    return f


def test_idle_after_sync_rules(tmp_path):
    d = driver_summary(load(_sync_launch_file(), tmp_path))
    ia = d["idle_after_sync"]
    assert (ia["count"], ia["total_us"], ia["max_us"], ia["mean_us"]) == (2, 700.0, 500.0, 350.0)
    it = d["iterations"]  # launches closed by syncs: [1], [1], [2]; the second sync of a row closes nothing
    assert (it["count"], it["min"], it["max"], it["launches_per_iteration"]) == (3, 1, 2, 1.0)
    cv = d["compute_vs_transfer"]  # waits of the closing syncs (1000 + 1000 + 300) + 4 launches of 10 µs
    assert (cv["sync_wait_us"], cv["launch_call_us"], cv["compute_us"]) == (2300.0, 40.0, 2340.0)
    assert cv["transfer_us"] == 0.0 and cv["ratio"] is None
    assert d["sync"]["count"] == 4 and d["sync"]["total_us"] == pytest.approx(2700.0)


def test_only_the_driver_events_of_a_merged_trace_count(tmp_path):
    t = load_driver(bpftrace_file().write(tmp_path / "b.jsonl"))
    alone = driver_summary(t)
    n = 37  # Kineto events in front, as a merged trace has them (name 0, lane 0, long, at time 0)
    merged = dataclasses.replace(
        t, first=n, ts=np.concatenate((np.zeros(n), t.ts)), dur=np.concatenate((np.full(n, 1e6), t.dur)),
        name_id=np.concatenate((np.zeros(n, t.name_id.dtype), t.name_id)),
        lane_of=np.concatenate((np.zeros(n, t.lane_of.dtype), t.lane_of)),
        kind=np.concatenate((np.zeros(n, t.kind.dtype), t.kind)),
        parent=np.concatenate((np.full(n, -1, t.parent.dtype), np.where(t.parent >= 0, t.parent + n, -1))))
    both = driver_summary(merged)
    assert both.pop("kineto_events") == n and alone.pop("kineto_events") == 0
    assert both == alone


def _big_file(n_iter: int) -> Bpf:
    f = Bpf()
    f.call(0.0, 1.0, "cuInit")
    t = 2.0
    for _ in range(n_iter):
        for _ in range(10):
            f.launch(t, 4)
            t += 0.02
        f.call(t, t + 0.5, "cuStreamSynchronize")
        t += 0.6
    return f


@pytest.mark.slow
def test_answers_on_100k_lines(tmp_path):
    """Counts on a big file (its speed is measured by bench/bench_driver.py, not here)."""
    f = _big_file(2000)  # about 100,000 lines
    t = load(f, tmp_path)
    assert f.n_json > 95_000
    d = driver_summary(t)
    assert d["iterations"]["count"] == 2000 and d["iterations"]["launches_per_iteration"] == 10.0
    assert d["kernel_launches"] == 20_000 and d["ioctls"][0]["count"] == 20_000


def test_kineto_summary_has_no_driver_key(capsys):
    assert main(["summary", str(kineto_path("h100_bert_inference.json.gz")), "--json", "--no-cache"]) == 0
    assert "driver" not in orjson.loads(capsys.readouterr().out)


def test_driver_tables_follow_kineto_tables_in_a_merged_summary(tmp_path, capsys):
    assert main(["summary", str(kineto_path("h100_bert_inference.json.gz")), "--json", "--no-cache"]) == 0
    s = orjson.loads(capsys.readouterr().out)
    assert main(["summary", str(bpftrace_file().write(tmp_path / "b.jsonl")), "--json", "--no-cache"]) == 0
    s["driver"] = orjson.loads(capsys.readouterr().out)["driver"]
    s["driver"]["kineto_events"] = s["trace"]["events"]
    buf = io.StringIO()
    print_summary(s, Console(file=buf, width=80, color_system=None))
    out = buf.getvalue()
    assert out.index("GPU timeline") < out.index("Launch calls") < out.index("API calls by count")
    assert "No GPU work in a driver-call trace" not in out
    assert max(len(ln) for ln in out.splitlines()) <= 80


@pytest.mark.parametrize("width", [80, 100, 120])
def test_driver_text_fits_the_width(tmp_path, capsys, width):
    assert main(["summary", str(bpftrace_file().write(tmp_path / "b.jsonl")), "--json", "--no-cache"]) == 0
    s = orjson.loads(capsys.readouterr().out)
    buf = io.StringIO()
    print_summary(s, Console(file=buf, width=width, color_system=None))
    lines = buf.getvalue().splitlines()
    assert max(len(ln) for ln in lines) <= width
    assert "1,048,576" in buf.getvalue() and "0xc0104629" in buf.getvalue()
