"""`tracetui slice`: a step, a window, a subtree or some ranks of a job as a smaller valid trace.

The events a slice must hold are counted from the raw JSON of the source (not from
tracetui's model), and the slice's summary must equal the summary of the same step computed
on the full trace."""

from __future__ import annotations

import collections
import gzip
import os
import subprocess
import sys

import numpy as np
import orjson
import pytest
from shared_traces import ET_DIR, SHARED, kineto_path

from tracetui.analysis.frames import cpu_ops_frame, gpu_events_frame
from tracetui.analysis.gpu_breakdown import gpu_timeline, timeline_ms
from tracetui.analysis.steps import find_steps, step_of_events
from tracetui.analysis.summary import _records, build_summary
from tracetui.analysis.tables import category_table, kernel_table, op_table
from tracetui.cli import main
from tracetui.session import open_traces

MI300 = "mi300_resnet_train_checkpointing.json.gz"
GPU_WORK = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH = ("cuda_runtime", "cuda_driver")
JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")


def raw(path) -> list[dict]:
    with gzip.open(path) if str(path).endswith(".gz") else open(path, "rb") as fh:
        return [e for e in orjson.loads(fh.read())["traceEvents"] if isinstance(e, dict)]


def is_event(e: dict) -> bool:
    return e.get("ph") not in ("M", "s", "f", "t") and "ts" in e


def raw_step_events(events: list[dict], number: int) -> collections.Counter:
    """Categories of the events a slice to ProfilerStep#<number> holds, read from the raw file:
    host events with a duration (not instants) starting in the step, GPU work launched by
    their launch calls, GPU annotations over that GPU work, the enclosing frames."""
    step = next(e for e in events if e.get("cat") == "user_annotation" and e["name"] == f"ProfilerStep#{number}")
    a, b = step["ts"], step["ts"] + step["dur"]
    ev = [e for e in events if is_event(e)]
    gpu_cats = GPU_WORK + ("gpu_user_annotation",)
    host = [e for e in ev if e.get("cat") not in gpu_cats and e.get("ph") not in ("i", "I") and a <= e["ts"] < b]
    corr = {e["args"]["correlation"] for e in host if e.get("cat") in LAUNCH and "correlation" in e.get("args", {})}
    work = [e for e in ev if e.get("cat") in GPU_WORK and e["args"].get("correlation") in corr]
    lo, hi = min(e["ts"] for e in work), max(e["ts"] + e["dur"] for e in work)
    ann = [e for e in ev if e.get("cat") == "gpu_user_annotation" and lo <= e["ts"] < hi]
    # frames that started before the step and enclose one of its events on their thread (every
    # such event starts after the frame does: the frame encloses one iff it ends no earlier than
    # the earliest end among them)
    first_end: dict[tuple, float] = {}
    for e in host:
        key, end = (e["pid"], e["tid"]), e["ts"] + e.get("dur", 0)
        first_end[key] = min(first_end.get(key, end), end)
    frames = [e for e in ev if e.get("cat") not in gpu_cats and e.get("ph") == "X" and e["ts"] < a
              and (e["pid"], e["tid"]) in first_end and first_end[(e["pid"], e["tid"])] <= e["ts"] + e["dur"]]
    return collections.Counter(e.get("cat") for e in host + work + ann + frames)


@pytest.fixture(scope="module")
def step16(tmp_path_factory):
    out = tmp_path_factory.mktemp("slice") / "step16.json.gz"
    assert main(["slice", str(kineto_path(MI300)), "--step", "16", "-o", str(out), "--no-cache"]) == 0
    return out


def test_a_step_slice_holds_exactly_the_steps_events_counted_from_the_raw_file(step16):
    expected = raw_step_events(raw(kineto_path(MI300)), 16)
    got = collections.Counter(e.get("cat") for e in raw(step16) if is_event(e))
    assert got == expected
    sliced = open_traces([str(step16)]).kineto
    assert sliced.n_events == sum(expected.values())
    assert sliced.gpu_stats.gpu_events == sum(expected[c] for c in GPU_WORK)


@pytest.mark.slow
def test_a_step_slice_summarises_as_that_step_of_the_full_trace(step16):
    full = open_traces([str(kineto_path(MI300))]).kineto
    steps = find_steps(full)
    idx = [s.number for s in steps.steps].index(16)
    mine = np.flatnonzero(step_of_events(full, steps) == idx)
    gpu = gpu_events_frame(full, events=mine)
    ops = cpu_ops_frame(full, events=mine)
    s = build_summary(open_traces([str(step16)]))
    assert s["kernel_categories"] == _records(category_table(gpu)[["category", "count", "total_ms", "percent"]])
    span = gpu_timeline(gpu)["total"]
    assert s["kernels"] == _records(kernel_table(gpu, span_us=span).head(15))
    assert s["gpu_timeline"] == timeline_ms(gpu_timeline(gpu))
    assert s["ops"] == _records(op_table(ops).head(15))
    full_steps = build_summary(open_traces([str(kineto_path(MI300))]))["launches"]["steps"]
    row = next(r for r in full_steps if r["step"] == "ProfilerStep#16")
    assert [{k: v for k, v in r.items() if k != "ts"} for r in s["launches"]["steps"]] == [
        pytest.approx({k: v for k, v in row.items() if k not in ("ts", "step")} | {"step": row["step"]}, rel=1e-12)]


@pytest.mark.slow
def test_a_window_slice_keeps_every_overlapping_event_and_never_cuts_a_launch_link(tmp_path):
    src = kineto_path("v100_ns_timestamps_fwdbwd.json.gz")
    full = open_traces([str(src)]).kineto
    kernel = int(np.flatnonzero(full.launch_of >= 0)[1000])  # a window around a kernel's launch
    lo = float(full.ts[full.launch_of[kernel]]) - 500.0
    hi = lo + 1000.0
    out = tmp_path / "w.json"
    assert main(["slice", str(src), "--window", f"{lo}:{hi}", "-o", str(out), "--no-cache"]) == 0
    t0 = full.origin_us  # times on the command line are µs after the origin, as the browser shows
    overlapping = [e for e in raw(src) if is_event(e)  # 1 µs inside the window: no rounding at its edges
                   and e["ts"] < t0 + hi - 1 and e["ts"] + e.get("dur", 0) > t0 + lo + 1]
    assert len(overlapping) > 100
    kept = raw(out)
    keys = {(e["pid"], e["tid"], e["name"], e["ts"]) for e in kept if is_event(e)}
    assert all((e["pid"], e["tid"], e["name"], e["ts"]) in keys for e in overlapping)
    sliced = open_traces([str(out)]).kineto
    st = sliced.gpu_stats
    assert st.gpu_events > 0 and st.launch_missing == 0 and st.linked == st.gpu_events - st.no_correlation


def test_an_et_is_sliced_to_the_same_ops(tmp_path):
    pair = ET_DIR / "param_dlrm_rank0_cuda_pair"
    out = tmp_path / "s.json"
    assert main(["slice", str(pair / "kineto.json.gz"), "--et", str(pair / "et.json.gz"), "--step", "10",
                 "-o", str(out), "--no-cache"]) == 0
    linked = open_traces([str(out), str(tmp_path / "s_et.json")])
    full = open_traces([str(pair / "kineto.json.gz"), str(pair / "et.json.gz")])
    from tracetui.slicing.events import step_events

    kept = step_events(full.kineto, 10)
    pos = full.link.kineto_to_et[kept]
    linked_ids = {int(full.et.ids[p]) for p in pos[pos >= 0].tolist()}
    sliced_ids = set(linked.et.ids.tolist())
    assert len(linked_ids) > 100 and linked_ids <= sliced_ids <= {int(i) for i in full.et.ids.tolist()}
    # each kept node is the source's node byte for byte: same names, same parents
    assert all(linked.et.name(linked.et.pos_of_id(i)) == full.et.name(full.et.pos_of_id(i)) for i in linked_ids)
    assert linked.link.stats.linked >= 0.9 * len(linked_ids)


def test_a_job_slice_is_a_smaller_job_folder(tmp_path):
    out = tmp_path / "job"
    assert main(["slice", JOB, "--ranks", "0,3", "--step", "10", "-o", str(out), "--no-cache"]) == 0
    names = sorted(os.listdir(out))
    assert names == ["rank0_et.json.gz", "rank0_kineto.json.gz", "rank3_et.json.gz", "rank3_kineto.json.gz"]
    from tracetui.job.job import open_job

    job = open_job([str(out)], use_cache=False, workers=1)
    assert job.ranks == [0, 3] and all(r.ok for r in job.results.values())
    # the GPU work launched in step 10, counted from the raw file (work whose launch is not in
    # the trace is in no step: analysis.steps)
    expected = raw_step_events(raw(os.path.join(JOB, "rank3_kineto.json.gz")), 10)
    assert job.results[3].summary["trace"]["gpu_events"] == sum(expected[c] for c in GPU_WORK) == 273


def test_bad_slice_requests_say_what_is_wrong(tmp_path, capsys):
    src = str(kineto_path(MI300))
    assert main(["slice", src, "--step", "99", "-o", str(tmp_path / "x.json")]) == 2
    assert "no step 99 in this trace (steps: 15, 16, 17)" in capsys.readouterr().err
    assert main(["slice", src, "-o", str(tmp_path / "x.json")]) == 2
    assert "say what to keep" in capsys.readouterr().err
    assert main(["slice", src, "--window", "5:1", "-o", str(tmp_path / "x.json")]) == 2
    assert "the end must be after the start" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x.json")


def _slice_cli(*args: str, cwd) -> subprocess.CompletedProcess:
    """``tracetui slice ARGS`` in a child in ``cwd``, stdout a pipe."""
    env = dict(os.environ, TRACETUI_CACHE_DIR=str(cwd / "cache"))
    return subprocess.run([sys.executable, "-m", "tracetui", "slice", *args], capture_output=True, cwd=cwd, env=env,
                          timeout=300, stdin=subprocess.DEVNULL)


def test_a_slice_to_dash_is_written_to_stdout_as_plain_json(tmp_path):
    """``-o -`` writes the slice's JSON to stdout (it made a file named ``-``): the same bytes
    as ``-o FILE.json``, plain JSON even where the file would be ``.gz``."""
    src = str(kineto_path("mi250_minitoy_train.json.gz"))
    piped = _slice_cli(src, "--step", "2", "-o", "-", "--no-cache", cwd=tmp_path)
    assert piped.returncode == 0 and piped.stderr == b"", piped.stderr
    assert not (tmp_path / "-").exists()
    assert main(["slice", src, "--step", "2", "-o", str(tmp_path / "s.json"), "--no-cache"]) == 0
    assert piped.stdout == (tmp_path / "s.json").read_bytes()
    doc = orjson.loads(piped.stdout)
    assert doc["tracetui_slice"]["step"] == 2 and doc["traceEvents"]


@pytest.mark.parametrize("case", ["job", "et"])
def test_a_slice_to_dash_that_needs_files_is_refused_in_one_line(case, tmp_path):
    pair = ET_DIR / "hta_simple_add_cuda_pair"
    args = [JOB, "--step", "10"] if case == "job" else [str(pair / "kineto.json.gz"), "--et", str(pair / "et.json.gz"),
                                                         "--step", "1"]
    out = _slice_cli(*args, "-o", "-", "--no-cache", cwd=tmp_path)
    said = {"job": f"{JOB}: a job's slice is a folder of files: give -o a folder, not - (stdout)",
            "et": f"{pair / 'et.json.gz'}: the ET's slice is written beside OUT: give -o a file name, not - (stdout)"}
    assert (out.returncode, out.stdout) == (2, b"") and out.stderr.decode() == f"tracetui: {said[case]}\n"
    assert not (tmp_path / "-").exists()
