"""Timeline focus on real multi-stream traces: the focused lane is marked while the timeline
has focus, ←/→ step along that lane in start-time order, ↑/↓ move to the event of the
neighbouring lane nearest in time (so ↑ then → never goes back in time), even when the keys
come faster than the tree follows; the footer shows the timeline's keys while it has focus.

Facts read from the trace files (``ph`` X events of cat kernel/gpu_memcpy/gpu_memset per
``(pid, tid)``):

* a100_cudagraph_nccl_rank0: streams 7, 25, 27, 84, 285, 363 with 7262, 35, 370, 36, 22, 22;
* a100_event_sync_multistream: streams 20, 24, 28 with 2 each, a ``Memset (Device)`` then
  an ``ampere_sgemm_128x64_nn`` 16 µs later; stream 24 starts ~19 ms after the others
  (raw ts 1712867402368034 vs 348667 and 349081 on streams 20 and 28);
* mi300_resnet_train_checkpointing: streams 0 and 4 of pid 2 with 3636 and 17; 34405
  python_function events.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from pilot import open_app, press, screen_text
from shared_traces import kineto_path
from textual import events

from tracetui.ui.timeline.timeline_strip import FOCUS_MARK

CUDAGRAPH = "a100_cudagraph_nccl_rank0.json.gz"
MULTISTREAM = "a100_event_sync_multistream.json.gz"
MI300 = "mi300_resnet_train_checkpointing.json.gz"


def _app(name: str):
    from tracetui.ui.app import TraceApp

    return TraceApp(paths=[str(kineto_path(name))], use_cache=False)


def _where(screen) -> tuple[int, float]:
    """(timeline row, start µs) of the event the timeline's keys act on now."""
    row, t, i = screen.timeline.position()
    assert i >= 0, "the position is an event of a row"
    return row, t


def _stream_order(screen, event: int) -> np.ndarray:
    """The GPU events on ``event``'s stream in start order (from the trace, not the timeline)."""
    kt, src = screen.source.kt, screen.source
    gpu = np.flatnonzero(src.gpu_work[: kt.n_events])
    same = gpu[kt.lane_of[gpu] == kt.lane_of[event]]
    return same[np.argsort(kt.ts[same], kind="stable")]


def _timeline_lines(app) -> list[str]:
    return [line for line in screen_text(app).splitlines() if "GPU0 s" in line or line.startswith(FOCUS_MARK)]


# ------------------------------------------------------------------ marker
@pytest.mark.slow
async def test_focused_lane_is_marked_only_while_the_timeline_has_focus():
    app = _app(CUDAGRAPH)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        tl = screen.timeline
        assert [tl.tracks[r].label for r in range(len(tl.tracks))] == [
            "GPU0 s7", "GPU0 s25", "GPU0 s27", "GPU0 s84", "GPU0 s285", "GPU0 s363"]
        assert [e.size for e in tl.lane_events] == [7262, 35, 370, 36, 22, 22]
        assert not any(FOCUS_MARK in line for line in _timeline_lines(app))  # the tree has focus

        await press(pilot, "t")
        assert screen.focused is tl
        assert any(line.startswith(FOCUS_MARK + "GPU0 s7 ") for line in _timeline_lines(app))
        await press(pilot, "right", "down", "down")
        lines = _timeline_lines(app)
        assert [line[:10] for line in lines if FOCUS_MARK in line] == [FOCUS_MARK + "GPU0 s27 "]
        assert tl.focus_track == 2
        label = list(tl.render_line(1 + 2 - tl.scroll_offset.y))  # ruler is line 0
        assert label[0].text.startswith(FOCUS_MARK + "GPU0 s27")
        assert label[0].style.reverse and label[0].style.bold

        await press(pilot, "t")  # back to the tree: no marker, plain label
        assert screen.focused is screen.op_tree
        assert not any(FOCUS_MARK in line for line in _timeline_lines(app))
        label = list(tl.render_line(1 + 2 - tl.scroll_offset.y))
        assert label[0].text.startswith("GPU0 s27") and not label[0].style.reverse


@pytest.mark.slow
async def test_focused_lane_scrolls_into_view_among_cpu_threads():
    app = _app(CUDAGRAPH)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        tl = screen.timeline
        await press(pilot, "c", "t", "right")
        assert len(tl.lane_events) > 8  # 6 streams + CPU threads: more rows than fit
        for _ in range(len(tl.lane_events) - 1):
            await press(pilot, "down")
        last = len(tl.lane_events) - 1
        assert tl.focus_track == last
        assert tl.scroll_offset.y > 0
        marked = [line for line in screen_text(app).splitlines() if line.startswith(FOCUS_MARK)]
        assert len(marked) == 1  # the last row is on screen, marked


# ------------------------------------------------------------------ stepping
@pytest.mark.slow
async def test_up_then_right_goes_forward_on_the_new_lane_cudagraph():
    app = _app(CUDAGRAPH)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        kt = screen.source.kt
        await press(pilot, "t", "right", "right", "right", "down", "right", "right")
        row, t = _where(screen)
        assert row == 1  # stream 25
        await press(pilot, "up")
        up = screen.source.kineto_of(screen.current)
        assert _where(screen)[0] == 0 and kt.lanes[int(kt.lane_of[up])].tid == 7
        on7 = _stream_order(screen, up)
        # nearest in time: no stream-7 event starts between it and where ↑ started
        between = kt.ts[on7][(kt.ts[on7] > min(t, kt.ts[up])) & (kt.ts[on7] < max(t, kt.ts[up]))]
        assert between.size == 0
        await press(pilot, "right")
        new_row, new_t = _where(screen)
        assert new_row == 0 and new_t >= t
        # the tree follows: its selection is the next stream-7 event in start order
        k = screen.source.kineto_of(screen.current)
        assert k == int(on7[int(np.flatnonzero(on7 == up)[0]) + 1]) and float(kt.ts[k]) == new_t


async def test_lane_change_picks_the_nearest_event_multistream():
    # stream 20: Memset 348667, sgemm 348700 (raw ts); 24: 368034, 368050; 28: 349081, 349097
    app = _app(MULTISTREAM)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        kt = screen.source.kt

        def current() -> tuple[int, str]:
            k = screen.source.kineto_of(screen.current)
            return kt.lanes[int(kt.lane_of[k])].tid, kt.name(k)

        await press(pilot, "t", "right", "right")
        assert current() == (20, "ampere_sgemm_128x64_nn")
        t20 = _where(screen)[1]
        await press(pilot, "right")  # the lane's last event: stays
        assert current() == (20, "ampere_sgemm_128x64_nn")
        await press(pilot, "down")  # stream 24 has only later events: its first
        assert current() == (24, "Memset (Device)")
        assert _where(screen)[1] - t20 == 368034 - 348700
        await press(pilot, "down")  # from 368034, stream 28's nearest is its last (349097)
        assert current() == (28, "ampere_sgemm_128x64_nn")
        await press(pilot, "left")
        assert current() == (28, "Memset (Device)")
        assert _where(screen)[1] - t20 == 349081 - 348700
        await press(pilot, "up", "right")  # back on 24: its first, then its second
        assert current() == (24, "ampere_sgemm_128x64_nn")
        assert _where(screen)[1] - t20 == 368050 - 348700


@pytest.mark.slow
@pytest.mark.parametrize("name", [CUDAGRAPH, MULTISTREAM, MI300])
async def test_right_walk_is_monotonic_and_lane_changes_never_go_back(name):
    """A seeded random walk of ←→↑↓ (CPU threads shown too, so hidden python rows are on
    the lanes): → never goes back in time nor leaves its row (it stays only on the row's
    last event), ← likewise, and → after ↑/↓ lands at or after where the lane change
    started."""
    app = _app(name)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        tl = screen.timeline
        await press(pilot, "c", "t", "right")
        rng = random.Random(11)
        changed_from: float | None = None  # time where the last ↑/↓ started
        steps_after_change = 0
        for _ in range(40):
            key = rng.choice(["right", "right", "right", "left", "up", "down"])
            row, t, i = tl.position()
            await press(pilot, key)
            new_row, new_t, new_i = tl.position()
            assert new_i >= 0
            if key in ("right", "left"):
                assert new_row == row
                if key == "right":
                    assert new_t >= t and new_i == min(i + 1, tl.lane_events[row].size - 1)
                    if changed_from is not None and new_i != i:
                        assert new_t >= changed_from
                        steps_after_change += 1
                else:
                    assert new_t <= t and new_i == max(i - 1, 0)
                changed_from = None
            else:
                want = row + (1 if key == "down" else -1)
                assert new_row == (want if 0 <= want < len(tl.lane_events) else row)
                if new_row != row:
                    changed_from = t
        assert steps_after_change >= 2  # the walk did test → right after a lane change


@pytest.mark.slow
async def test_right_walk_along_stream_27_follows_start_order():
    app = _app(CUDAGRAPH)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        kt = screen.source.kt
        await press(pilot, "t", "right", "down", "down")
        first = screen.source.kineto_of(screen.current)
        assert kt.lanes[int(kt.lane_of[first])].tid == 27
        on27 = _stream_order(screen, first)
        assert on27.size == 370
        at = int(np.flatnonzero(on27 == first)[0])
        seen = []
        for _ in range(25):
            await press(pilot, "right")
            seen.append(screen.source.kineto_of(screen.current))
        assert seen == on27[at + 1 : at + 26].tolist()
        assert np.all(np.diff(kt.ts[seen]) >= 0)


@pytest.mark.slow
async def test_keys_faster_than_the_tree_follows():
    """Keys typed in a row reach the timeline before the tree has shown the previous step;
    each step still starts from the event the timeline went to (this failed before: → after
    a quick ↑ stepped from the old lane's event, back on the old lane)."""
    app = _app(CUDAGRAPH)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        kt, tl = screen.source.kt, screen.timeline
        await press(pilot, "t", "right", "right", "down", "right", "right")
        row, t = _where(screen)
        assert row == 1
        for key in ("up", "right"):
            app.post_message(events.Key(key, None))
        await pilot.pause()
        await pilot.pause()
        new_row, new_t = _where(screen)
        assert new_row == 0 and new_t >= t
        assert screen.source.kineto_of(screen.current) == tl._cursor  # the tree caught up
        before = new_t
        for _ in range(5):
            app.post_message(events.Key("right", None))
        await pilot.pause()
        await pilot.pause()
        row5, t5 = _where(screen)
        assert row5 == 0 and t5 >= before
        on7 = _stream_order(screen, tl._cursor)
        assert kt.lanes[int(kt.lane_of[tl._cursor])].tid == 7
        first = int(np.flatnonzero(on7 == int(on7[np.searchsorted(kt.ts[on7], before)]))[0])
        assert screen.source.kineto_of(screen.current) == int(on7[first + 5])  # five steps, none lost


async def test_hidden_python_event_keeps_the_timeline_on_it_mi300():
    """With CPU threads shown a step can land on a python_function event, which the tree
    hides (it selects the nearest shown ancestor); the timeline stays on the event."""
    app = _app(MI300)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = await open_app(app, pilot)
        src, kt, tl = screen.source, screen.source.kt, screen.timeline
        assert [e.size for e in tl.lane_events] == [3636, 17]
        assert src.hide_python
        await press(pilot, "c")
        cpu_rows = [r for r, lane in enumerate(tl.lane_ids) if not kt.lanes[lane].is_gpu]
        row = next(r for r in cpu_rows if src.is_python[tl.lane_events[r]].any())
        await press(pilot, "t", "right")
        while _where(screen)[0] < row:
            await press(pilot, "down")
        assert _where(screen)[0] == row
        # walk right until the timeline is on a python event
        for _ in range(200):
            if src.is_python[tl._cursor]:
                break
            await press(pilot, "right")
        py = tl._cursor
        assert src.is_python[py]
        assert screen.current == src.visible_ancestor(py) != py
        r, t = _where(screen)
        assert r == row and t == float(kt.ts[py])
        await press(pilot, "right")
        assert _where(screen)[0] == row and _where(screen)[1] >= t


# ------------------------------------------------------------------ footer
@pytest.mark.slow
async def test_footer_shows_the_timeline_keys_while_it_has_focus():
    app = _app(CUDAGRAPH)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await open_app(app, pilot)
        from tracetui.ui.timeline.trace_timeline import TraceTimeline

        descriptions = [b.description for b in TraceTimeline.BINDINGS]
        assert descriptions == ["Earlier", "Later", "Lane up", "Lane down"]
        footer = screen_text(app).splitlines()[-1]
        assert not any(d in footer for d in descriptions)
        await press(pilot, "t")
        footer = screen_text(app).splitlines()[-1]
        for key, desc in (("←", "Earlier"), ("→", "Later"), ("↑", "Lane up"), ("↓", "Lane down")):
            assert f"{key} {desc}" in footer, footer
        await press(pilot, "t")
        assert "Earlier" not in screen_text(app).splitlines()[-1]
