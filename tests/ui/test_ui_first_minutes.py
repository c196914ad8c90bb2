"""The first five minutes (issue 26): the README's first command on the bundled GPU sample
shows kernels and ``>`` from an op lands on one; the first frame is painted before pandas,
numpy or the browser's screens are imported; one Esc clears the search and the filter; the
key bar shows only keys that work on the trace shown; the status line counts a driver-call
trace's events as ``summary`` does.

Facts are read from the raw files with gzip + json, not from tracetui."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

from pilot import open_app, press, screen_text, search
from shared_traces import REPO, SAMPLES

from tracetui.ui.app import TraceApp

SAMPLE = str(SAMPLES / "h100_bert_inference.json.gz")
CPU_PAIR_KINETO = str(SAMPLES / "cpu_transformer_kineto.json.gz")


def _raw(path: str) -> list[dict]:
    return json.load(gzip.open(path))["traceEvents"]


def _key_bar(app) -> str:
    return screen_text(app).splitlines()[-1]


async def test_readme_first_command_shows_gpu_kernels_and_jumps_from_an_op_to_one():
    """``tracetui sample_traces/h100_bert_inference.json.gz``, then ``/linear``, Enter, ``>``:
    the first aten::linear (External id 43) launched, through aten::addmm (External id 49),
    the cutlass GEMM; ``<`` goes back to aten::addmm."""
    raw = _raw(SAMPLE)
    kernels = [e for e in raw if e.get("cat") == "kernel"]
    assert len(kernels) == 60
    gemm = next(e for e in kernels if e["args"].get("External id") == 49)
    assert gemm["name"].startswith("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm")
    app = TraceApp([SAMPLE], use_cache=False)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:  # room for the device's name
        screen = await open_app(app, pilot)
        status = screen.status_text().plain
        assert "NVIDIA H100 80GB HBM3" in status and "61 GPU events (60 kernels)" in status
        assert "GPU0 s7" in screen_text(app)  # the stream's row in the timeline
        await search(pilot, "linear")
        kt = screen.source.kt
        assert kt.name(screen.current) == "aten::linear" and int(kt.external_id[screen.current]) == 43
        await press(pilot, ">")
        assert kt.name(screen.current) == gemm["name"]
        assert kt.abs_ts_us(screen.current) == gemm["ts"] and float(kt.dur[screen.current]) == gemm["dur"]
        await press(pilot, "<")
        assert kt.name(screen.current) == "aten::addmm" and int(kt.external_id[screen.current]) == 49


def test_the_first_frame_imports_no_pandas_numpy_or_browser_screen(tmp_path):
    """In a fresh interpreter: what ``tracetui TRACE`` imports up to the painted loading screen
    (the command line, the job test, the app and its loading screen; the load worker held
    back) holds no pandas, no numpy, no trace model and none of the browser's screens."""
    code = f"""
import asyncio, sys
from tracetui.cli.entry import build_parser
from tracetui.job import looks_like_job
build_parser().parse_args(["open", {SAMPLE!r}])
assert not looks_like_job([{SAMPLE!r}])
from tracetui.ui.app import TraceApp
TraceApp.load = lambda self, paths: None  # the first frame only: the loader's imports come after it
painted = []

async def main():
    app = TraceApp([{SAMPLE!r}])
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(500):
            if type(app.screen).__name__ == "LoadingScreen":
                break
            await asyncio.sleep(0.01)
        await pilot.pause()
        painted.append("Opening h100_bert_inference.json.gz" in "".join(
            seg.text for strip in app.screen._compositor.render_strips() for seg in strip))
        # the job test recognises the file (the formats' light content tests: no numpy, no model;
        # the generic Chrome format's test reads the table of Kineto's category names)
        recognition = ("tracetui.kineto", "tracetui.kineto.format", "tracetui.kineto.sniff", "tracetui.kineto.kinds")
        painted.append(sorted(m for m in sys.modules if m in ("pandas", "numpy") or m.startswith(
            ("tracetui.session", "tracetui.kineto", "tracetui.store", "tracetui.ui.browser.main_screen",
             "tracetui.ui.summaries", "tracetui.ui.job", "tracetui.export", "tracetui.analysis"))
            and m not in recognition))

asyncio.run(main())
assert painted[0], "the loading screen names the file"
assert painted[1] == [], painted[1]
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=180,
                          env={"TRACETUI_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin",
                               "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")})
    assert proc.returncode == 0, proc.stdout + proc.stderr


async def test_one_escape_clears_the_search_and_the_filter():
    app = TraceApp([SAMPLE], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await search(pilot, "linear")
        await press(pilot, "f")
        assert screen.source.filtered and screen.matches.size == 26  # 26 aten::linear in the file
        assert "FILTERED" in screen.status_text().plain
        await press(pilot, "escape")
        assert not screen.source.filtered and screen.query_text is None and not screen.matches.size
        status = screen.status_text().plain
        assert "FILTERED" not in status and "linear" not in status
        await press(pilot, "n")  # nothing left to step through
        assert screen.match_list is None


async def test_the_key_bar_shows_only_keys_that_work_on_the_trace():
    app = TraceApp([SAMPLE], use_cache=False)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await open_app(app, pilot)
        bar = _key_bar(app)
        for key in ("> GPU event", "< Launching op", ". Python rows", "t Timeline", "/ Search"):
            assert key in bar, bar
        assert "o Longest" not in bar  # no matches yet
        await search(pilot, "linear")
        assert "o Longest / time order" in _key_bar(app)
    assert not any(e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "python_function")
                   for e in _raw(CPU_PAIR_KINETO))  # a CPU trace without python frames
    app = TraceApp([CPU_PAIR_KINETO], use_cache=False)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        bar = _key_bar(app)
        assert "/ Search" in bar and "t Timeline" in bar  # its CPU threads are in the timeline
        assert ">" not in bar and "<" not in bar and ". Python rows" not in bar, bar
        await press(pilot, ">")  # still bound: it says why it does nothing
        assert screen.current is not None


async def test_status_line_counts_a_driver_call_trace_as_summary_does(tmp_path, capsys):
    from tracetui.cli import main as cli_main
    from tracetui.driver.synthetic import main as synthetic_main

    path = tmp_path / "bert_driver.jsonl"
    assert synthetic_main([SAMPLE, str(path)]) == 0
    capsys.readouterr()
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.startswith("{")]
    calls = sum(1 for x in lines if x.get("phase") == "B")  # a call: its begin and end lines
    records = sum(1 for x in lines if "phase" not in x)
    assert (calls, records) == (120, 65)
    assert cli_main(["summary", str(path), "--json", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["driver"]["events"] == calls + records
    app = TraceApp([str(path)], use_cache=False)
    async with app.run_test(size=(200, 30), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        status = screen.status_text().plain
        assert f"{calls + records:,} events: {calls} calls, 0 ioctls, {records} records" in status, status
        assert ". Python rows" not in _key_bar(app) and "> GPU event" not in _key_bar(app)
