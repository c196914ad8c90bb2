"""TimelineStrip (busy blocks, gaps, highlights, window math) and the timescale helpers."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from textual.app import App, ComposeResult

from tracetui.ui.timeline.timeline_strip import (
    BLOCKS,
    GAP_FILL,
    MIN_SPAN_US,
    TimelineStrip,
)
from tracetui.ui.view.timescale import nice_step, nice_ticks
from tracetui.ui.view.track import Track
from tracetui.units import choose_unit, format_duration_us, format_time_us

# ------------------------------------------------------------------ timescale


@pytest.mark.parametrize(
    ("us", "text"),
    [
        (0, "0"),
        (0.812, "812ns"),
        (0.0004, "0ns"),
        (0.9996, "1.00µs"),
        (3.14159, "3.14µs"),
        (31.4, "31.4µs"),
        (314.2, "314µs"),
        (999.6, "1.00ms"),
        (12_345, "12.3ms"),
        (1_520_000, "1.52s"),
        (123_456_789, "123s"),
        (5e9, "5000s"),
        (-2.5, "-2.50µs"),
        (math.nan, "?"),
        (math.inf, "?"),
    ],
)
def test_format_duration_us(us, text):
    assert format_duration_us(us) == text


def test_format_time_us_uses_resolution_and_forced_unit():
    assert format_time_us(0) == "0"
    assert format_time_us(1500, resolution_us=100) == "1.5ms"
    assert format_time_us(1500, resolution_us=1) == "1.500ms"
    assert format_time_us(2e6, resolution_us=1e6) == "2s"
    assert format_time_us(500, resolution_us=500, unit="ms") == "0.5ms"
    assert format_time_us(0.5, resolution_us=0.1) == "500ns"
    assert format_time_us(1234.5) == "1.23ms"
    assert choose_unit(0.5) == "ns" and choose_unit(999.9) == "ms" and choose_unit(5e7) == "s"


def test_nice_ticks():
    assert nice_ticks(0, 1000, 5) == [0, 200, 400, 600, 800, 1000]
    assert nice_ticks(0.1, 0.7, 6) == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    assert nice_ticks(123_456.7, 123_999, 4) == [123_600, 123_800]
    assert nice_ticks(5, 5, 4) == [] and nice_ticks(0, 10, 0) == []
    assert nice_step(1, 3) == 0.5
    for t0, t1, n in [(0, 7.3, 3), (-50, 1e6, 9), (1.7e9, 1.7e9 + 3, 5)]:
        ticks = nice_ticks(t0, t1, n)
        assert 1 <= len(ticks) <= n + 1
        assert all(t0 <= t <= t1 for t in ticks)


# ------------------------------------------------------------------- timeline


class TimelineApp(App):
    def __init__(self, lanes):
        super().__init__()
        self.lanes = lanes
        self.windows: list[tuple[float, float]] = []

    def compose(self) -> ComposeResult:
        yield TimelineStrip(self.lanes, label_width=12)

    def on_timeline_strip_window_changed(self, message: TimelineStrip.WindowChanged) -> None:
        self.windows.append((message.t0, message.t1))


def screen_lines(app: App) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def periodic(t0, t1, period, busy):
    starts = np.arange(t0, t1, period, dtype=np.float64)
    return starts, starts + busy


def demo_lanes() -> list[Track]:
    """Window 0..10_000 µs over 68 cells at 80 columns (label 12)."""
    s_full, e_full = periodic(0, 1000, 10, 10)  # fully busy 0..1 ms
    s_half, e_half = periodic(6000, 10_000, 20, 10)  # 50% busy 6..10 ms
    stream7 = Track("stream 7", np.concatenate((s_full, s_half)), np.concatenate((e_full, e_half)))
    stream13 = Track("[b]s13[/b] stream", np.array([0.0, 9_000]), np.array([500.0, 10_000]))
    return [stream7, stream13]


async def test_busy_blocks_gap_label_and_ruler_at_80_columns():
    app = TimelineApp(demo_lanes())
    async with app.run_test(size=(80, 24)):
        tl = app.query_one(TimelineStrip)
        assert tl.window == (0.0, 10_000.0)
        lines = screen_lines(app)
        ruler, lane7, lane13 = lines[:3]
        assert ruler.startswith("span 10.0ms ╵0")
        assert "╵2ms" in ruler and "╵8ms" in ruler
        assert lane7.startswith("stream 7    ")
        cells7 = lane7[12:]
        assert len(cells7) == 68
        dt = 10_000 / 68
        # 0..1 ms fully busy: whole cells are full blocks.
        assert set(cells7[: int(1000 // dt)]) == {"█"}
        # The 5 ms idle gap (1..6 ms) is dotted and labelled with its length.
        assert "·5.00ms·" in cells7
        gap_cells = cells7[math.ceil(1000 / dt) : math.floor(6000 / dt)]
        assert set(gap_cells) <= set(GAP_FILL + "5.00ms")
        # 50% duty cycle far finer than a cell: half blocks.
        assert set(cells7[math.ceil(6000 / dt) :]) == {"▄"}
        # Labels are data, shown verbatim (cropped to the label column).
        assert lane13.startswith("[b]s13[/b]… ")
        cells13 = lane13[12:]
        assert "8.50ms" in cells13  # 0.5 .. 9 ms idle
        assert cells13[-1] == "█"


async def test_gap_threshold_and_short_gaps():
    starts = np.array([0.0, 1000, 1030])
    ends = np.array([990.0, 1020, 2000])  # gaps of 10 µs: below 2 cells (~29 µs)
    app = TimelineApp([Track("s", starts, ends)])
    async with app.run_test(size=(80, 24)) as pilot:
        tl = app.query_one(TimelineStrip)
        glyphs, kinds = tl.track_cells(0, 80)
        assert GAP_FILL not in glyphs and not (kinds == 1).any()
        assert set(glyphs) <= set(BLOCKS[1:])
        tl.zoom_to(980, 1040, margin=0)  # now a 10 µs gap spans ~11 cells
        await pilot.pause()
        glyphs, _ = tl.track_cells(0, 80)
        assert GAP_FILL in glyphs
        tl.min_gap_us = 50  # user threshold above the gaps: not marked any more
        glyphs, _ = tl.track_cells(0, 80)
        assert GAP_FILL not in glyphs


async def test_overlapping_and_unsorted_intervals_count_once():
    # A parent op covering 0..100 with nested children, given out of order.
    starts = np.array([10.0, 0.0, 50.0, 20.0])
    ends = np.array([30.0, 100.0, 60.0, 25.0])
    app = TimelineApp([Track("cpu", starts, ends), Track("empty", np.empty(0), np.empty(0))])
    async with app.run_test(size=(80, 24)):
        tl = app.query_one(TimelineStrip)
        assert tl.window == (0.0, 100.0)
        glyphs, _ = tl.track_cells(0, 80)
        assert set(glyphs) == {"█"}
        glyphs, _ = tl.track_cells(1, 80)
        assert set(glyphs) == {" "}


async def test_highlights_and_cursor_range_are_styled():
    app = TimelineApp(demo_lanes())
    async with app.run_test(size=(80, 24)) as pilot:
        tl = app.query_one(TimelineStrip)
        dt = 10_000 / 68
        tl.set_highlights([(0, 6000, 6010), (0, 9990, 10_000), (1, -500, -100)])
        tl.set_cursor_range(2000, 3000)
        await pilot.pause()
        glyphs, kinds = tl.track_cells(0, 80)
        highlighted = np.flatnonzero(kinds % 4 == 3)
        assert highlighted.tolist() == [int(6000 // dt), 67]
        cursor = np.flatnonzero(kinds >= 4)
        assert cursor.tolist() == list(range(int(2000 // dt), math.ceil(3000 / dt)))
        # The highlighted cells are drawn with the highlight style on screen.
        strip = tl.render_line(1)
        highlight_style = tl.rich_style + tl.get_component_rich_style("timeline--highlight")
        x = 0
        styled = []
        for segment in strip:
            if segment.style == highlight_style:
                styled.extend(range(x, x + len(segment.text)))
            x += len(segment.text)
        assert styled == [12 + int(6000 // dt), 12 + 67]
        # Lane 1's highlight is outside the window: nothing marked.
        _, kinds13 = tl.track_cells(1, 80)
        assert not (kinds13 % 4 == 3).any()
        tl.set_highlights([])
        tl.set_cursor_range(None)
        _, kinds = tl.track_cells(0, 80)
        assert set(kinds.tolist()) <= {0, 1, 2}


def per_range_cells(starts, ends, t0, dt, cells) -> np.ndarray:
    """Reference rule, one range at a time: ``[start, end]`` marks cells floor((start - t0)
    / dt) to ceil((end - t0) / dt) - 1, and at least the cell holding its start."""
    mask = np.zeros(cells, dtype=bool)
    for start, end in zip(starts.tolist(), ends.tolist()):
        first = math.floor((start - t0) / dt)
        last = max(first, math.ceil((end - t0) / dt) - 1)
        if last >= 0 and first < cells:
            mask[max(0, first) : min(cells - 1, last) + 1] = True
    return mask


async def test_highlight_arrays_match_tuples_and_the_per_range_rule():
    # Random ranges (some zero-length, some touching, some reversed) on 3 lanes, in
    # random order: the array form, the tuple form and the per-range cell rule
    # (cells from floor(start) to ceil(end) - 1, at least the start's cell) agree.
    rng = np.random.default_rng(7)
    n = 150
    lanes = rng.integers(0, 3, n)
    starts = rng.uniform(-200, 10_200, n)
    ends = starts + np.where(rng.random(n) < 0.2, 0.0, rng.uniform(-5, 200, n))
    ends[::10] = starts[1::10][: ends[::10].size]  # some ends touch another start
    app = TimelineApp(demo_lanes() + [Track("c", np.array([0.0]), np.array([1.0]))])
    async with app.run_test(size=(80, 24)) as pilot:
        tl = app.query_one(TimelineStrip)
        tl.set_window(0, 10_000)
        cells, t0, _t1, dt = tl._cells(80)
        tl.set_highlights(tracks=lanes, starts=starts, ends=ends)
        await pilot.pause()
        by_arrays = [tl.track_cells(lane, 80)[1] % 4 == 3 for lane in range(3)]
        tl.set_highlights(zip(lanes.tolist(), starts.tolist(), ends.tolist()))
        by_tuples = [tl.track_cells(lane, 80)[1] % 4 == 3 for lane in range(3)]
        for lane in range(3):
            pick = lanes == lane
            rule = per_range_cells(starts[pick] - tl.origin, ends[pick] - tl.origin, t0, dt, cells)
            assert by_arrays[lane].tolist() == rule.tolist() == by_tuples[lane].tolist()
            assert 0 < rule.sum() < cells
        # Lanes that do not exist are ignored; mismatched arrays are refused.
        tl.set_highlights(tracks=np.array([9, -1]), starts=np.array([1.0, 2.0]), ends=np.array([5.0, 6.0]))
        assert not any((tl.track_cells(lane, 80)[1] % 4 == 3).any() for lane in range(3))
        with pytest.raises(ValueError, match="2 tracks, 1 starts"):
            tl.set_highlights(tracks=np.array([0, 1]), starts=np.array([1.0]), ends=np.array([2.0]))


async def test_a_million_highlights_draw_without_a_cap():
    # 1M kernels on 2 lanes in the first 40% of the trace (a whole-thread selection).
    n = 1_000_000
    starts = np.linspace(0.0, 4000.0, n)
    app = TimelineApp(demo_lanes())
    async with app.run_test(size=(80, 24)) as pilot:
        tl = app.query_one(TimelineStrip)
        tl.set_window(0, 10_000)
        started = time.process_time()
        tl.set_highlights(tracks=np.arange(n) % 2, starts=starts, ends=starts + 0.001)
        marked = tl.track_cells(1, 80)[1] % 4 == 3
        elapsed = time.process_time() - started
        await pilot.pause()
        cells, _t0, _t1, dt = tl._cells(80)
        assert np.flatnonzero(marked).tolist() == list(range(int(4000.001 // dt) + 1))
        assert elapsed < 2.0, f"1M highlights took {elapsed:.2f} s"


class TraceTimelineApp(App):
    def __init__(self, source):
        super().__init__()
        self.source = source

    def compose(self) -> ComposeResult:
        from tracetui.ui.timeline.trace_timeline import TraceTimeline

        yield TraceTimeline(self.source, id="timeline")


@pytest.mark.slow
async def test_thread_selection_highlights_every_gpu_event_of_a_real_trace():
    # a100_cudagraph_nccl_rank0: thread 4515 runs the cudaGraphLaunch steps; its subtree
    # holds 4,100 GPU events on 6 streams (3,650 on stream 7).  Each stream row marks
    # exactly the cells of its own events.
    from shared_traces import load_shared_kineto

    from tracetui.session import LinkedTrace
    from tracetui.ui.view.trace_row_source import TraceRowSource

    src = TraceRowSource(LinkedTrace(load_shared_kineto("a100_cudagraph_nccl_rank0.json.gz")))
    kt = src.kt
    root = next(int(r) for r in src.root_nodes() if src.row_label(int(r)).plain.startswith("thread 4515 "))
    events = src.gpu_events(root)
    streams, counts = np.unique(kt.lane_of[events], return_counts=True)
    assert events.size == 4100
    assert sorted(zip((kt.lanes[s].tid for s in streams), counts.tolist())) == [
        (7, 3650), (25, 35), (27, 370), (84, 25), (285, 10), (363, 10)]
    app = TraceTimelineApp(src)
    async with app.run_test(size=(100, 24)) as pilot:
        tl = app.query_one("#timeline")
        tl.show_selection(root)
        await pilot.pause()
        cells, t0, _t1, dt = tl._cells(100)
        marked = 0
        for row, lane in enumerate(tl.lane_ids):
            mine = events[kt.lane_of[events] == lane]
            rule = per_range_cells(kt.ts[mine] - tl.origin, kt.ts[mine] + kt.dur[mine] - tl.origin,
                                             t0, dt, cells)
            got = tl.track_cells(row, 100)[1] % 4 == 3
            assert got.tolist() == rule.tolist()
            marked += int(got.any())
        assert marked == 6


async def test_window_zoom_pan_follow_math_and_messages():
    app = TimelineApp(demo_lanes())
    async with app.run_test(size=(80, 24)) as pilot:
        tl = app.query_one(TimelineStrip)
        tl.zoom(2)
        assert tl.window == (2500.0, 7500.0)
        tl.zoom(2, center=3000)  # 3000 stays at 10% of the window
        assert tl.window == pytest.approx((2750.0, 5250.0))
        tl.pan(0.5)
        assert tl.window == pytest.approx((4000.0, 6500.0))
        tl.pan(-1)
        assert tl.window == pytest.approx((1500.0, 4000.0))
        tl.follow(2000, 3000)  # already visible: unchanged
        assert tl.window == pytest.approx((1500.0, 4000.0))
        tl.follow(4100, 4200)  # just past the right edge: minimal pan, 5% pad
        assert tl.window == pytest.approx((4200 + 125 - 2500, 4200 + 125))
        tl.follow(0, 9000)  # wider than the window: zoom out
        assert tl.window == pytest.approx((-900.0, 9900.0))
        tl.zoom_to(100, 200, margin=0.1)
        assert tl.window == pytest.approx((90.0, 210.0))
        tl.zoom(1e9)
        assert tl.window[1] - tl.window[0] == pytest.approx(MIN_SPAN_US)
        tl.zoom(1e-9)  # out: at most twice the extent
        assert tl.window[1] - tl.window[0] == pytest.approx(20_000)
        tl.pan(100)  # centre stays on the data
        assert (tl.window[0] + tl.window[1]) / 2 == pytest.approx(10_000)
        tl.fit_all()
        assert tl.window == (0.0, 10_000.0)
        await pilot.pause()
        assert app.windows[0] == (0.0, 10_000.0)  # the initial fit
        assert app.windows[1] == (2500.0, 7500.0)
        assert app.windows[-1] == (0.0, 10_000.0)
        assert len(app.windows) == 12  # one per change; follow() of a visible range is silent


async def test_many_lanes_scroll_under_a_sticky_ruler():
    lanes = [Track(f"thread {k}", np.array([k * 10.0]), np.array([k * 10.0 + 5])) for k in range(30)]
    app = TimelineApp(lanes)
    async with app.run_test(size=(80, 24)):
        tl = app.query_one(TimelineStrip)
        assert tl.size.height == 12  # max-height; 31 rows of content
        assert tl.virtual_size.height == 31
        tl.scroll_to(y=10, animate=False)
        lines = screen_lines(app)
        assert lines[0].startswith("span ")
        assert lines[1].startswith("thread 10 ")


def test_one_million_intervals_per_lane_render_fast():
    rng = np.random.default_rng(0)
    lanes = []
    for k in range(4):
        starts = np.cumsum(rng.uniform(1, 20, 1_000_000))
        lanes.append(Track(f"stream {k}", starts, starts + rng.uniform(0.5, 10, starts.size)))
    tl = TimelineStrip(lanes)
    started = time.process_time()
    for lane in range(4):
        glyphs, _ = tl.track_cells(lane, 212)
        assert len(glyphs) == 200
    elapsed = time.process_time() - started
    assert elapsed < 1.0
    t0, t1 = tl.window
    tl.zoom_to(t0 + (t1 - t0) / 2, t0 + (t1 - t0) / 2 + 1000)
    glyphs, _ = tl.track_cells(0, 212)
    assert len(glyphs) == 200 and glyphs.strip()
