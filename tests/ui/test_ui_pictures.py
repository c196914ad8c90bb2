"""Issue 44 in the browser: the icicle (``i``) and bottom-up (``b``) screens of a subtree, the
summaries' Plots tab (step time, GPU busy), the memory screen's plot (``M`` then ``o``) and the
job's arrivals plot (``X`` then ``p``), on
shared traces; every number compared with the raw file (gzip + json) or the table that prints
the same fact; SVG snapshots at 80x24 and 120x40 (update with --snapshot-update and look at
them)."""

from __future__ import annotations

import gzip
import json
import os
from functools import lru_cache

import numpy as np
import pytest
from pilot import BERT, SIZES, loaded, open_app, open_summaries, press, screen_text
from shared_traces import SHARED, kineto_path

from tracetui.ui.app import TraceApp
from tracetui.ui.browser.main_screen import MainScreen
from tracetui.ui.stacks.bottom_up_screen import BottomUpScreen
from tracetui.ui.stacks.icicle_screen import IcicleScreen

STEP = "ProfilerStep#6"  # (nn.Module: ... rows are python frames, hidden in the tree by default)
#: the top kernel of h100_bert_inference (17 launches, 98.718 µs), read from the file
TOP_KERNEL = ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"
              "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)")
MINITOY = str(kineto_path("mi250_minitoy_train.json.gz"))
JOB = os.path.join(SHARED, "multirank", "param_dlrm_8ranks")


@lru_cache(maxsize=None)
def _raw(path: str) -> tuple[dict, ...]:
    doc = json.load(gzip.open(path))
    return tuple(e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X")


def _node(main: MainScreen, name: str) -> int:
    kt = main.source.kt
    return next(i for i in range(kt.n_events) if kt.name(i) == name)


async def _select(main: MainScreen, pilot, name: str) -> int:
    node = _node(main, name)
    main.select(node)
    await pilot.pause()
    return node


async def _wait(app, pilot, screen_type):
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()
    assert isinstance(app.screen, screen_type), screen_text(app)
    return app.screen


@pytest.mark.slow
async def test_icicle_of_a_step_by_cpu_and_gpu_time_and_g_to_a_kernels_launches():
    raw_step = next(e for e in _raw(BERT) if e["name"] == STEP)
    raw_gpu_ns = sum(round(e["dur"] * 1000) for e in _raw(BERT) if e.get("cat") in ("kernel", "gpu_memcpy"))
    raw_kernels = sorted((e for e in _raw(BERT) if e.get("cat") == "kernel" and e["name"] == TOP_KERNEL),
                         key=lambda e: -e["dur"])
    assert len(raw_kernels) == 17
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:  # no toasts over the cell's line
        main = await open_app(app, pilot)
        await _select(main, pilot, STEP)
        await press(pilot, "i")
        ic = await _wait(app, pilot, IcicleScreen)
        tree = ic.view.tree
        assert int(tree.total[0]) == round(raw_step["dur"] * 1000) == 4_426_114  # ns, the step's dur
        text = screen_text(app)
        assert f"Icicle of {STEP}" in text and "CPU time" in text
        rows = ic.view.layout(*ic._grid())
        assert rows[0][0].node == 0 and rows[0][0].x1 - rows[0][0].x0 == ic.widget.size.width  # the root: all
        # below: cells as wide as their share, left to right largest first
        kids = [c for c in rows[1]]
        assert [tree.total[c.node] for c in kids] == sorted((tree.total[c.node] for c in kids), reverse=True)
        await press(pilot, "v")  # GPU time: the subtree's GPU events (raw: summed kernel/memcpy durations)
        await pilot.pause()
        assert ic.mode == "gpu" and int(ic.view.tree.total[0]) == raw_gpu_ns == 309_437
        await press(pilot, "slash", *"wmma_tensorop", "enter")
        c = ic.view.cursor
        assert ic.view.tree.name(c) == TOP_KERNEL and int(ic.view.tree.calls[c]) == 17
        assert "17 calls" in screen_text(app)
        await press(pilot, "g")  # the cell's events as the matches, longest first
        assert isinstance(app.screen, MainScreen)
        await pilot.pause()
        kt = main.source.kt
        assert main.matches.size == 17 and {kt.name(int(n)) for n in main.matches} == {TOP_KERNEL}
        assert float(kt.dur[main.current]) == pytest.approx(raw_kernels[0]["dur"])


async def test_icicle_enter_descends_and_backspace_climbs_above_the_subtree():
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        main = await open_app(app, pilot)
        kt = main.source.kt
        linear = await _select(main, pilot, "aten::linear")
        await press(pilot, "i")
        ic = await _wait(app, pilot, IcicleScreen)
        assert ic.root == linear and ic.view.tree.name(0) == "aten::linear"
        await press(pilot, "down")  # the largest callee: aten::addmm (the raw file nests it in aten::linear)
        assert ic.view.tree.name(ic.view.cursor) == "aten::addmm"
        await press(pilot, "enter")
        assert ic.view.focus == ic.view.cursor and "in aten::linear" in screen_text(app)
        await press(pilot, "backspace")
        assert ic.view.focus == 0
        await press(pilot, "backspace")  # above the subtree: its parent, the cursor still on aten::linear
        await pilot.pause()
        assert ic.root == int(kt.parent[linear]) and ic.view.tree.name(ic.view.cursor) == "aten::linear"
        await press(pilot, "q")
        assert isinstance(app.screen, MainScreen) and main.current == linear  # q: back as it was


async def test_bottom_up_names_by_self_time_then_callers_and_g_to_the_calls():
    raw_addmm = [e for e in _raw(BERT) if e["name"] == "aten::addmm"]
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        main = await open_app(app, pilot)
        await _select(main, pilot, STEP)
        await press(pilot, "b")
        bu = await _wait(app, pilot, BottomUpScreen)
        rows = bu.view.rows
        selfs = [r.self_ns for r in rows]
        assert selfs == sorted(selfs, reverse=True) and sum(selfs) == int(bu.view.tree.total[0])
        names = [bu.view.tree.label_text(r.label) for r in rows]
        i = names.index("aten::addmm")
        addmm = rows[i]
        assert addmm.calls == len(raw_addmm) == 26
        # its total is the summaries' Top ops host time of aten::addmm (no addmm inside an addmm)
        assert addmm.total_ns == pytest.approx(sum(e["dur"] for e in raw_addmm) * 1000, abs=26)
        bu.table.move_row_cursor(i)
        await press(pilot, "enter")  # its callers: every aten::addmm here is called by aten::linear
        assert [bu.view.tree.label_text(r.label) for r in bu.view.rows] == ["aten::linear"]
        assert bu.view.rows[0].self_ns == addmm.self_ns and "callers of aten::addmm" in screen_text(app)
        await press(pilot, "backspace")
        assert bu.view.depth == 0 and bu.table.cursor_row == i
        await press(pilot, "g")
        assert isinstance(app.screen, MainScreen)
        await pilot.pause()
        kt = main.source.kt
        assert main.matches.size == 26 and {kt.name(int(n)) for n in main.matches} == {"aten::addmm"}


async def test_plots_tab_step_time_is_the_steps_table():
    steps = sorted((e for e in _raw(MINITOY) if e["name"].startswith("ProfilerStep#")
                    and e.get("cat") == "user_annotation"), key=lambda e: e["ts"])
    assert [e["name"] for e in steps] == ["ProfilerStep#1", "ProfilerStep#2"]
    app = TraceApp([MINITOY], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        summ = await open_summaries(app, pilot)
        await press(pilot, str(len(summ.tables) + 1))
        await pilot.pause()
        assert summ.plots_shown
        panel = summ.query_one("PlotPanel")
        plot = panel.plot
        assert plot.title == "step time"
        model = panel.query_one("PlotWidget").model
        # the bars are each step's host duration in ms: the raw file's dur, the summary's steps table
        from tracetui.analysis.frames import gpu_events_frame
        from tracetui.analysis.launches import launch_frame, step_table

        kt = app.screen_stack[1].source.kt
        table = step_table(kt, launch_frame(kt, gpu_events_frame(kt)))
        assert model.series[0].y.tolist() == pytest.approx([e["dur"] / 1e3 for e in steps])
        assert model.series[0].y.tolist() == pytest.approx((table["dur"] / 1e3).tolist())
        assert model.series[1].y.tolist() == pytest.approx((table["gpu_us"] / 1e3).tolist())
        slowest = max(range(2), key=lambda k: steps[k]["dur"])
        assert plot.cursor == slowest and "the slowest" in screen_text(app)
        assert model.marks == [(slowest + 0.5, "^")]
        await press(pilot, "enter")  # the step's annotation in the tree
        main = app.screen
        assert isinstance(main, MainScreen)
        await pilot.pause()
        assert main.source.kt.name(main.current) == steps[slowest]["name"]


@pytest.mark.slow
async def test_plots_tab_gpu_busy_adds_up_to_the_gpu_timeline():
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        summ = await open_summaries(app, pilot)
        await press(pilot, "7")
        panel = summ.query_one("PlotPanel")
        assert [p.title for p in panel.plots] == ["GPU0 busy"]  # one step: no step plot; one device
        plot = panel.plot
        width = panel.chart_width()
        model = panel.query_one("PlotWidget").model
        edges = plot.edges(width)
        busy_us = float((model.series[0].y * np.diff(edges) / 100.0).sum())
        from tracetui.analysis.frames import gpu_events_frame
        from tracetui.analysis.gpu_breakdown import gpu_timeline

        kt = app.screen_stack[1].source.kt
        assert busy_us == pytest.approx(gpu_timeline(gpu_events_frame(kt))["busy"], rel=1e-9)  # 309.437 µs
        assert busy_us == pytest.approx(309.437, abs=1e-3)
        await press(pilot, "circumflex_accent")  # the busiest column
        assert plot.cursor == int(np.argmax(model.series[0].y))
        await press(pilot, "right", "left")
        assert "GPU0 busy" in screen_text(app)
        events = plot.events(width)
        await press(pilot, "enter")  # the column's GPU events as the matches
        main = app.screen
        assert isinstance(main, MainScreen)
        await pilot.pause()
        assert sorted(main.matches.tolist()) == sorted(events[0].tolist())


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(JOB), reason="shared 8-rank job not available")
async def test_job_arrivals_plot_shows_the_straggler_and_enter_goes_to_its_kernel():
    from tracetui.ui.plot.plots_screen import PlotsScreen

    app = TraceApp([], job_inputs=[JOB], workers=1)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await open_app(app, pilot)
        await press(pilot, "X")
        js = app.screen
        await press(pilot, "p")
        ps = await _wait(app, pilot, PlotsScreen)
        plot = ps.plots[0]
        doc = js.doc
        verdict = doc["straggler"]
        assert plot.rank == verdict["rank"] == 7  # the straggler first
        model = ps.query_one("PlotWidget").model
        # the line is each collective's start skew, as the collectives table prints it
        assert model.series[1].y.tolist() == pytest.approx([c["start_skew_us"] for c in doc["collectives"]])
        assert len(model.marks) == verdict["times_last"] == 5  # ^ where it arrived last
        assert "rank 7 at #1" in screen_text(app)
        await press(pilot, "enter")  # rank 7's kernel of the first collective
        await app.workers.wait_for_complete()
        await pilot.pause()
        main = app.screen
        assert isinstance(main, MainScreen) and app.rank == 7
        assert main.current == app.job.collectives[0]["members"][7]["kernel"]


async def test_memory_plot_is_the_raw_totals_and_the_memory_screens_peak():
    from tracetui.ui.memory.memory_screen import MemoryScreen
    from tracetui.ui.plot.plots_screen import PlotsScreen

    doc = json.load(gzip.open(BERT))["traceEvents"]
    origin = int(min(e["ts"] for e in doc if e.get("ph") != "M" and "ts" in e))  # the model's origin
    mem = [e for e in doc if e.get("name") == "[memory]" and e["args"]["Device Type"] == 1]
    mem.sort(key=lambda e: e["ts"])  # stable: file order within a time
    ts = [e["ts"] - origin for e in mem]
    alloc = [e["args"]["Total Allocated"] for e in mem]
    peak = max(range(len(mem)), key=lambda k: (alloc[k], -k))
    assert alloc[peak] == 101_305_344 and max(e["args"]["Total Reserved"] for e in mem) == 121_634_816
    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await open_app(app, pilot)
        await press(pilot, "M")
        ms = await _wait(app, pilot, MemoryScreen)
        assert "101,305,344 B" in screen_text(app)  # the memory screen's peak line
        await press(pilot, "o")
        ps = await _wait(app, pilot, PlotsScreen)
        panel = ps.query_one("PlotPanel")
        plot, width = panel.plot, panel.chart_width()
        assert plot.title == "cuda:0 memory" and (plot.top.value, plot.top.ts) == (alloc[peak], pytest.approx(ts[peak]))
        assert ms.views[0].peak.ts == plot.top.ts
        model = ps.query_one("PlotWidget").model
        edges = plot.edges(width)
        # each column: the highest Total Allocated held in it, counted here from the raw events
        want = []
        for a, b in zip(edges[:-1], edges[1:]):
            held = [alloc[k] for k in range(len(mem)) if ts[k] <= a]
            inside = [alloc[k] for k in range(len(mem)) if a < ts[k] < b]
            want.append(max(held[-1:] + inside) if held or inside else alloc[0] - mem[0]["args"]["Bytes"])
        assert model.series[0].cell_max(edges).tolist() == want
        assert max(want) == alloc[peak]
        assert model.series[1].top == 121_634_816  # reserved: the line
        await press(pilot, "circumflex_accent")
        c = plot.cursor
        assert edges[c] <= ts[peak] < edges[c + 1] and "^ the peak" in screen_text(app)
        assert "101.3 MB allocated" in screen_text(app)
        await press(pilot, "enter")  # the ops that allocated in the peak's column, in the tree
        await pilot.pause()
        main = app.screen
        assert isinstance(main, MainScreen)
        kt = main.source.kt
        a, b = edges[c], edges[c + 1]
        allocs = [e for e in doc if e.get("name") == "[memory]" and e["args"]["Device Type"] == 1
                  and e["args"]["Bytes"] > 0 and a <= e["ts"] - origin < b]
        assert allocs and main.matches.size >= 1
        largest = max(allocs, key=lambda e: e["args"]["Bytes"])
        at = largest["ts"] - origin  # the op open at the largest allocation is selected first
        start = float(kt.ts[main.current])
        assert start <= at + 1e-6 and at <= start + float(kt.dur[main.current]) + 1e-6


@pytest.mark.slow
async def test_help_lists_the_keys_of_the_icicle_the_plots_and_the_memory_plot():
    """Help (``?``) is built from the live bindings: each screen's new keys are in it."""
    from tracetui.ui.browser.help_screen import HelpScreen
    from tracetui.ui.memory.memory_screen import MemoryScreen
    from tracetui.ui.plot.plots_screen import PlotsScreen

    async def help_text() -> str:
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = " ".join(app.screen.plain_text().split())
        await press(pilot, "escape")
        return text

    app = TraceApp([BERT], use_cache=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        main = await open_app(app, pilot)
        text = await help_text()
        assert "i Icicle" in text and "b Bottom-up" in text
        await _select(main, pilot, STEP)
        await press(pilot, "i")
        await _wait(app, pilot, IcicleScreen)
        text = await help_text()
        for words in ("Descend", "Climb", "/ Search", "v CPU / GPU / Python", "g In the tree", "b Bottom-up"):
            assert words in text, words
        await press(pilot, "q")
        await press(pilot, "M")
        await _wait(app, pilot, MemoryScreen)
        assert "o Over time" in await help_text()
        await press(pilot, "o")
        await _wait(app, pilot, PlotsScreen)
        text = await help_text()
        for words in ("p Next plot", "^ Marked", "In the tree", "Earlier", "Later"):
            assert words in text, words


# ---------------------------------------------------------------- snapshots
def _then(name: str | None, *keys: str):
    async def run(pilot) -> None:
        await loaded(pilot)
        app = pilot.app
        if name is not None:
            main = app.screen
            main.select(_node(main, name))
            await pilot.pause()
        for k in keys:
            await press(pilot, k)
            await app.workers.wait_for_complete()
            await pilot.pause()
        await pilot.pause()
    return run


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_icicle_snapshot(snap_compare, size):
    assert snap_compare(TraceApp([BERT], use_cache=False), terminal_size=size,
                        run_before=_then(STEP, "i", "down", "down", "down"))


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_icicle_gpu_snapshot(snap_compare, size):
    assert snap_compare(TraceApp([BERT], use_cache=False), terminal_size=size,
                        run_before=_then(STEP, "i", "v", "down", "down", "down"))


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_bottom_up_snapshot(snap_compare, size):
    assert snap_compare(TraceApp([BERT], use_cache=False), terminal_size=size,
                        run_before=_then(STEP, "b", "down", "down", "enter"))


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
def test_plots_tab_snapshot(snap_compare, size):
    two_gpus = str(kineto_path("v100_old_flow_format_cudagraph.json.gz"))
    assert snap_compare(TraceApp([two_gpus], use_cache=False), terminal_size=size,
                        run_before=_then(None, "s", "7"))


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(JOB), reason="shared 8-rank job not available")
@pytest.mark.parametrize("size", SIZES)
def test_arrivals_snapshot(snap_compare, size):
    assert snap_compare(TraceApp([], job_inputs=[JOB], workers=1), terminal_size=size,
                        run_before=_then(None, "X", "p"))
