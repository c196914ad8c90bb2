"""Driver-call traces in the browser, driven by real key presses (Pilot): a bpftrace file
written by the test (tests/driver_ui_files.py), walked, searched and read in the detail pane;
its warnings and exports; and a Kineto trace linked to the driver calls of the same run
(h100_bert_inference + tracetui/driver/synthetic.py), where ``>`` goes from a runtime
call to its driver call, then to the kernel, and ``<`` back to the runtime call."""

from __future__ import annotations

import json

import numpy as np
import pytest
from driver_ui_files import FACTS, ODD_PROBE, write_bpftrace, write_linked
from pilot import open_app, press, screen_text, search, toasts
from textual.widgets import Input, Select

from tracetui.kineto.kinds import Kind
from tracetui.ui.app import TraceApp
from tracetui.ui.browser.export_dialog import EXPORT_EXTENSIONS, ExportDialog
from tracetui.ui.browser.warnings_screen import WarningsScreen
from tracetui.ui.detail.detail_pane import DetailPane
from tracetui.ui.view.jumps import NO_GPU_IN_DRIVER_TRACE, NO_OPS_IN_DRIVER_TRACE
from tracetui.ui.view.status_parts import fit_status


def detail(screen) -> str:
    return screen.query_one(DetailPane).text()


def flat(text: str) -> str:
    """The detail text with its wrapping undone (one space per run of blanks)."""
    return " ".join(text.split())


def styled_segments(screen, needle: str) -> list:
    """The styles of the detail pane's painted segments whose text holds ``needle``."""
    pane = screen.query_one(DetailPane)
    return [seg.style for strip in pane._lines for seg in strip if needle in seg.text]


async def select_named(pilot, screen, name: str, nth: int = 1) -> int:
    """Search ``name`` from the top and go to its ``nth`` match (tree order); returns the node."""
    screen.op_tree.focus()
    await press(pilot, "home")
    await search(pilot, name)
    for _ in range(nth - 1):
        await press(pilot, "n")
    assert screen.source.kt.name(screen.current) == name
    return screen.current


@pytest.fixture
def bpftrace(tmp_path):
    return write_bpftrace(tmp_path / "trace_cuda.jsonl")


# ------------------------------------------------------------------ a driver-call trace alone
@pytest.mark.slow
async def test_tree_search_and_the_detail_of_a_call(bpftrace):
    app = TraceApp(use_cache=False, paths=[str(bpftrace)])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        text = screen_text(app)
        assert "thread 4242" in text and "phase: warm-up" in text  # the lane, its phases
        await search(pilot, "cuLaunchKernel")
        assert screen.matches.size == FACTS["launches"]
        first = screen.current
        assert screen.source.kt.name(first) == "cuLaunchKernel"
        assert "search 'cuLaunchKernel': 4 matches" in screen_text(app).splitlines()[0]
        await press(pilot, "n")
        second = screen.current
        assert second != first and screen.source.kt.name(second) == "cuLaunchKernel"
        assert screen.source.tree_position(second) > screen.source.tree_position(first)
        d = flat(detail(screen))
        for needle in ("cuLaunchKernel", "driver API call", "thread 4242", "bpftrace", "Duration 4.00µs",
                       "Return value 0 (CUDA_SUCCESS)", "Lines ", "(begin) → ", "(end) of trace_cuda.jsonl",
                       "Phase warm-up",
                       "Inside this call", "1 ioctl", "0xc020462a NV_ESC_RM_CONTROL",
                       "kernel launch grid 56 × 2 × 1 · block 384 × 1 × 1 · 43,008 threads"):
            assert needle in d, needle
        assert "Probeuprobe:/usr/lib/x86_64-linux-gnu/libcuda.so.1:cuLaunchKernel" in d.replace(" ", "")  # folds
        # the call without an end line says so, in words
        await select_named(pilot, screen, "cuLaunchKernel", nth=4)  # the launch whose end line is missing
        d = flat(detail(screen))
        assert "no end line in the file: the end is inferred (its next sibling or last child)" in d
        assert "none in the file (no end line)" in d


@pytest.mark.slow
async def test_records_and_ioctls_in_the_detail_pane(bpftrace):
    app = TraceApp(use_cache=False, paths=[str(bpftrace)])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        # a kernel launch record: grid and block on screen
        await select_named(pilot, screen, "kernel launch")
        text = screen_text(app)
        assert "Grid" in text and "56 × 2 × 1" in text and "Block" in text and "384 × 1 × 1" in text
        d = flat(detail(screen))
        assert "Blocks 112" in d and "Threads/block 384" in d and "Threads 43,008 (grid × block)" in d
        assert "Call cuLaunchKernel" in d and "the file says" not in d  # 56*2*1 * 384 = 43,008, as the file
        # an allocation: size and the running total the file gives
        await select_named(pilot, screen, "memory alloc", nth=2)
        d = flat(detail(screen))
        assert "Size 4,194,304 B (4.2 MB)" in d and "Running total 5,242,880 B (5.2 MB)" in d  # SI
        assert "Call cuMemAlloc_v2" in d and "4,194,304 B (4.2 MB)" in screen_text(app)
        # a transfer: direction, bytes, duration, bandwidth from bytes/duration and the file's
        await select_named(pilot, screen, "transfer H2D")
        d = flat(detail(screen))
        gbps = FACTS["h2d_bytes"] / (FACTS["h2d_ms"] * 1e-3) / 1e9  # 8.39 GB/s
        assert "Direction H2D (host to device)" in d and "Bytes 4,194,304 B (4.2 MB)" in d
        assert "Duration 500µs" in d and f"{gbps:,.2f} GB/s (bytes ÷ duration)" in d
        assert "the file says 8.39 GB/s" in d
        # an ioctl: the command in hex, decoded by the _IOC layout, NVIDIA's escape name
        await select_named(pilot, screen, "nvidia_ioctl")
        text = screen_text(app)
        assert "0xc020462a" in text
        d = flat(detail(screen))
        assert "_IOC(read/write, 'F' (0x46), nr 0x2a, 32 B)" in d and "NV_ESC_RM_CONTROL" in d
        assert "Return value 0 (success)" in d and "Call cuInit" in d
        # the ioctl that failed (-22): an error, in red
        await select_named(pilot, screen, "nvidia_ioctl", nth=6)
        assert "-22 (EINVAL" in flat(detail(screen))
        assert any(s.color is not None and s.color.name == "red" for s in styled_segments(screen, "EINVAL"))
        # a syscall record: fd and cmd
        await select_named(pilot, screen, "ioctl syscall")
        d = flat(detail(screen))
        assert "fd 7" in d and "Command 0xc020462a" in d
        # a phase: what its rule is
        await select_named(pilot, screen, "phase: weight loading")
        d = flat(detail(screen))
        assert "Rule from the first allocation to the first kernel launch" in d and "cuMemAlloc_v2 ×2" in d


async def test_a_call_that_returned_an_error_is_shown_in_red(bpftrace):
    app = TraceApp(use_cache=False, paths=[str(bpftrace)])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await select_named(pilot, screen, FACTS["error_call"])
        text = screen_text(app)
        assert f"{FACTS['error_call']}  ✗ 200" in text  # the tree row says so too
        assert "200 (CUDA_ERROR_INVALID_IMAGE): the call failed" in flat(detail(screen))
        styles = styled_segments(screen, "CUDA_ERROR_INVALID_IMAGE")
        assert styles and all(s.color is not None and s.color.name == "red" and s.bold for s in styles)


@pytest.mark.slow
async def test_a_probe_string_with_markup_characters_is_shown_verbatim(bpftrace):
    app = TraceApp(use_cache=False, paths=[str(bpftrace)])
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await select_named(pilot, screen, "cuGetProcAddress_v2")
        assert ODD_PROBE + "cuGetProcAddress_v2" in flat(detail(screen)).replace(" ", "")  # folded at '/'


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_status_warnings_and_jumps_say_what_a_driver_trace_is(bpftrace, size):
    app = TraceApp(use_cache=False, paths=[str(bpftrace)])
    async with app.run_test(size=size, notifications=True) as pilot:
        screen = await open_app(app, pilot)
        row = screen_text(app).splitlines()[0]
        status = screen.status_text()
        assert status.cell_len <= size[0] and "\n" not in status.plain
        assert row.strip().startswith("trace_cuda.jsonl") and "bpftrace" in row and "⚠ 2 warnings (w)" in row
        assert "python" not in row  # a driver-call trace has no python_function rows
        if size[0] >= 120:
            # at 120 columns the findings part takes the room of "of 59" (PRIORITY); wider, all of it shows
            assert f"{FACTS['skipped_lines']} lines skipped" in row or f"{FACTS['skipped_lines']} of" in row
            assert "33 events: 16 calls, 6 ioctls, 11 records" in row
            wide = fit_status(screen.status_parts(), 200).plain
            assert f"{FACTS['skipped_lines']} of {FACTS['nonblank_lines']} lines skipped" in wide, wide
        await press(pilot, "greater_than_sign")
        assert any(NO_GPU_IN_DRIVER_TRACE[:60] in t for t in toasts(app)), toasts(app)
        await select_named(pilot, screen, "cuLaunchKernel")
        await press(pilot, "less_than_sign")
        assert any(NO_OPS_IN_DRIVER_TRACE[:60] in t for t in toasts(app)), toasts(app)
        app.clear_notifications()
        await press(pilot, "w")
        assert isinstance(app.screen, WarningsScreen)
        said = " ".join(app.screen.warnings)
        assert f"{FACTS['skipped_lines']} of {FACTS['nonblank_lines']} lines are not events" in said
        assert "4 text lines" in said and "1 lines that start like a JSON object but are not valid JSON" in said
        await pilot.pause()
        assert "lines are not events" in " ".join(screen_text(app).split())
        await press(pilot, "escape")
        assert app.screen is screen


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["md", "json"])
async def test_export_through_the_dialog_writes_the_file(bpftrace, tmp_path, monkeypatch, fmt):
    monkeypatch.chdir(tmp_path)
    app = TraceApp(use_cache=False, paths=[str(bpftrace)])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        await select_named(pilot, screen, "phase: warm-up")
        await press(pilot, "e")
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        dialog.query_one(Select).value = fmt
        await pilot.pause()
        field = dialog.query_one("#export-path", Input)
        out = tmp_path / f"warmup.{EXPORT_EXTENSIONS[fmt]}"
        field.value = str(out)
        field.focus()
        await press(pilot, "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen is screen
        assert out.exists(), sorted(p.name for p in tmp_path.iterdir())
        body = out.read_text()
        if fmt == "json":
            body = json.dumps(json.loads(body))
        assert "cuLaunchKernel" in body and "cuStreamSynchronize" in body
        assert any(f"exported {fmt} to {out}" in t for t in toasts(app)), toasts(app)


async def test_timeline_shows_the_threads_phases_and_bytes_allocated(bpftrace):
    app = TraceApp(use_cache=False, paths=[str(bpftrace)])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        timeline = screen.timeline
        assert timeline.display and timeline.show_cpu  # no GPU streams: the host threads, by default
        rows = {ln.split("  ")[0].strip(): ln for ln in screen_text(app).splitlines()
                if ln.startswith(("T 4242", "T 4343", "phases 4242", "bytes alloc"))}
        assert set(rows) == {"T 4242", "T 4343", "phases 4242", "bytes alloc"}, rows
        assert "┃warm-up" in rows["phases 4242"] and "┃weight loading" in rows["phases 4242"]
        assert "█" in rows["bytes alloc"]


# ------------------------------------------------------------------ linked to its Kineto trace
@pytest.mark.slow
async def test_jumps_across_the_link_runtime_driver_kernel_and_back(tmp_path):
    kineto, drv = write_linked(tmp_path)
    app = TraceApp(use_cache=False, paths=[str(kineto), str(drv)])
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        kt = screen.source.kt
        link = kt.link
        assert (link.linked, link.kineto_calls) == (86, 86)
        row = screen_text(app).splitlines()[0]
        assert "driver link 86/86, offset ±0.0 µs" in row
        await search(pilot, "cudaLaunchKernel")
        runtime = screen.current
        assert kt.name(runtime) == "cudaLaunchKernel" and kt.kind[runtime] == int(Kind.RUNTIME)
        call = int(link.kineto_to_driver[runtime])
        assert call >= kt.first and kt.name(call) == "cuLaunchKernel"
        op = int(kt.cpu_op_of[runtime])
        d = flat(detail(screen))
        assert "Driver call cuLaunchKernel (kernel launch," in d and "heuristic link, clock offset ±0.0 µs" in d
        # > : the driver call, its records and ioctls as its children in the tree
        await press(pilot, "greater_than_sign")
        assert screen.current == call
        assert any("driver call cuLaunchKernel" in t and "> again: the kernel" in t for t in toasts(app)), toasts(app)
        visible = set(screen.op_tree.visible_nodes.tolist())
        assert set(kt.children(call).tolist()) <= visible
        d = flat(detail(screen))
        assert f"Runtime call cudaLaunchKernel (op {kt.name(op)})" in d
        # > again: the kernel its runtime call launched
        await press(pilot, "greater_than_sign")
        kernel = int(kt.gpu_events_of(runtime)[0])
        assert screen.current == kernel and kt.kind[kernel] == int(Kind.KERNEL)
        # < from the driver call (and from its launch record) goes to the runtime call; the op is named
        for start in (call, int(kt.children(call)[0])):
            screen.select(start)
            await pilot.pause()
            await press(pilot, "less_than_sign")
            assert screen.current == runtime
            assert any(f"runtime call cudaLaunchKernel (op {kt.name(op)})" in t and "heuristic link" in t
                       for t in toasts(app)), toasts(app)
        # < again: the op, as before
        await press(pilot, "less_than_sign")
        assert screen.current == op


@pytest.mark.slow
async def test_linked_launch_record_confirms_the_kernel_and_unlinked_calls_say_so(tmp_path):
    kineto, drv = write_linked(tmp_path)
    app = TraceApp(use_cache=False, paths=[str(kineto), str(drv)])
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        kt = screen.source.kt
        await search(pilot, "cudaLaunchKernel")
        await press(pilot, "greater_than_sign")
        record = int(kt.children(screen.current)[0])
        assert kt.name(record) == "kernel launch"
        screen.select(record)
        await pilot.pause()
        d = flat(detail(screen))
        assert "Kineto kernel" in d and "same grid and block: the link is confirmed" in d
        # a driver call the link left out (the tracer's own cuCtxGetCurrent): the keys say why
        noise = next(int(e) for e in kt.driver_events() if kt.name(int(e)) == "cuCtxGetCurrent")
        assert kt.link.driver_to_kineto[noise - kt.first] == -1
        screen.select(noise)
        await pilot.pause()
        assert "not linked to a Kineto call" in flat(detail(screen))
        for key in ("greater_than_sign", "less_than_sign"):
            await press(pilot, key)
            assert screen.current == noise
            assert any("cuCtxGetCurrent is not linked to a Kineto" in t for t in toasts(app)), toasts(app)


# ------------------------------------------------------------------ the jumps without a terminal
def _linked_source(tmp_path):
    from tracetui.session import open_traces
    from tracetui.ui.view.trace_row_source import TraceRowSource

    kineto, drv = write_linked(tmp_path)
    return TraceRowSource(open_traces([str(drv), str(kineto)]))  # either order


def test_driver_hop_back_and_gpu_jump_helpers(tmp_path):
    from tracetui.ui.view.jumps import JumpError, driver_back, driver_hop, gpu_jump, launching_op

    src = _linked_source(tmp_path)
    kt = src.kt
    link = kt.link
    linked = np.flatnonzero(link.kineto_to_driver >= 0)
    for k in linked.tolist():
        d = int(link.kineto_to_driver[k])
        assert driver_hop(src, k, None) == d
        assert driver_back(src, d) == (k, d)
        kids = kt.children(d)
        for child in kids.tolist():  # its ioctls and records go back to the same runtime call
            assert driver_back(src, child) == (k, d)
        gpu = kt.gpu_events_of(k)
        if gpu.size:
            cyc = gpu_jump(src, d, None)
            assert cyc.events.tolist() == gpu.tolist() and cyc.target == int(gpu[0])
            again = gpu_jump(src, cyc.target, cyc)  # cycles as > does
            assert again.index == (1 % gpu.size)
        else:
            with pytest.raises(JumpError, match="launched no GPU work"):
                gpu_jump(src, d, None)
    # a kernel: < and > work as without the driver trace
    kernel = int(kt.gpu_events_of(int(linked[0]))[0]) if kt.gpu_events_of(int(linked[0])).size else None
    if kernel is not None:
        assert driver_back(src, kernel) is None and driver_hop(src, kernel, None) is None
        assert launching_op(src, kernel)[0] == int(kt.cpu_op_of[kernel])
    # a cpu_op: > goes to its GPU events as before (no hop)
    op = int(kt.cpu_op_of[int(linked[0])])
    assert driver_hop(src, op, None) is None
    # the driver lane: every GPU event of the linked calls under it, by time
    lane = next(ln.node for ln in kt.lanes if ln.label.startswith("driver calls: "))
    expected = np.sort(np.concatenate([kt.gpu_events_of(int(k)) for k in linked]))
    assert sorted(src.gpu_events(lane).tolist()) == expected.tolist()
    # the calls the link left out (5 launches before the profiler started, cuCtxGetCurrent)
    unlinked = [int(e) for e in kt.driver_events() if kt.name(int(e)) == "cuLaunchKernel"
                and link.driver_to_kineto[int(e) - kt.first] < 0]
    assert len(unlinked) == 5
    with pytest.raises(JumpError, match="not linked"):
        driver_back(src, unlinked[0])
    with pytest.raises(JumpError, match="not linked"):
        gpu_jump(src, unlinked[0], None)


def test_a_driver_trace_alone_has_no_gpu_events_and_no_ops(tmp_path):
    from tracetui.session import open_traces
    from tracetui.ui.view.jumps import JumpError, driver_back, driver_hop, gpu_jump
    from tracetui.ui.view.trace_row_source import TraceRowSource

    src = TraceRowSource(open_traces([str(write_bpftrace(tmp_path / "t.jsonl"))]))
    for node in [*src.kt.driver_events().tolist(), *(ln.node for ln in src.kt.lanes)]:
        assert driver_hop(src, node, None) is None
        with pytest.raises(JumpError, match="has no GPU events"):
            gpu_jump(src, node, None)
        with pytest.raises(JumpError, match="no runtime calls or ops"):
            driver_back(src, node)
